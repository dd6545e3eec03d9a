"""The command line's one exception type (no bpy needed to import it)."""


class ClipError(Exception):
    """A file cannot be fixed: the message says why; the other files go on."""
