"""The adapter layer's one exception type.

This module itself uses no bpy, but it lives in ``adapters``, whose ``__init__`` imports
bpy: code that must run without Blender catches the solvers' own errors instead.
"""


class AdapterError(Exception):
    """The scene cannot be turned into arrays (or back): the message says what and where."""
