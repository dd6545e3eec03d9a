"""The adapter layer's one exception type (no bpy needed to import it)."""


class AdapterError(Exception):
    """The scene cannot be turned into arrays (or back): the message says what and where."""
