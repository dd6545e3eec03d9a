"""Foot Lock operators, one module per operator (Add and Remove Leg share one)."""

import bpy

from .bake_preview import FOOT_LOCK_OT_bake_preview
from .detect_contacts import FOOT_LOCK_OT_detect_contacts
from .detect_legs import FOOT_LOCK_OT_detect_legs
from .edit_legs import FOOT_LOCK_OT_add_leg, FOOT_LOCK_OT_remove_leg
from .remove_sliding import FOOT_LOCK_OT_remove_sliding
from .root_motion import FOOT_LOCK_OT_root_motion_from_feet

classes = (
    FOOT_LOCK_OT_detect_legs,
    FOOT_LOCK_OT_add_leg,
    FOOT_LOCK_OT_remove_leg,
    FOOT_LOCK_OT_detect_contacts,
    FOOT_LOCK_OT_remove_sliding,
    FOOT_LOCK_OT_root_motion_from_feet,
    FOOT_LOCK_OT_bake_preview,
)

register, unregister = bpy.utils.register_classes_factory(classes)
