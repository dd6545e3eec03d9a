"""Foot Lock panels."""

import bpy

from .panels import classes

__all__ = ("classes", "register", "unregister")


register, unregister = bpy.utils.register_classes_factory(classes)
