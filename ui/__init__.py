"""Foot Lock panels."""

import bpy

from .panels import classes

__all__ = ("classes", "register", "unregister")


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
