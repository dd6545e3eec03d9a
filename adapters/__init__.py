"""Blender adapter layer: turns armatures and actions into numpy arrays and back.

Owns the add-on's PropertyGroups, so it is registered first and unregistered last.
"""

import bpy

from . import preview
from .properties import classes as property_classes
from .properties import register_properties, unregister_properties

classes = property_classes


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    register_properties()
    preview.register()


def unregister():
    preview.unregister()
    unregister_properties()
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
