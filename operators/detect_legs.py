import bpy

from ..adapters import jobs
from .checks import ArmatureOperator


class FOOT_LOCK_OT_detect_legs(ArmatureOperator, bpy.types.Operator):
    """Find the pelvis and each leg's thigh, shin, foot and toe bones of the active armature"""

    bl_idname = "foot_lock.detect_legs"
    bl_label = "Detect Legs"

    def run(self, context, obj):
        detected = jobs.detect_leg_bones(obj)
        jobs.store_legs(obj.foot_lock, detected)
        sides = ", ".join(leg.side for leg in detected.legs)
        return f"found {len(detected.legs)} legs below {detected.pelvis!r}: {sides}"
