import bpy

from ..adapters import jobs
from .checks import EXPECTED_ERRORS, active_armature, poll_armature


class FOOT_LOCK_OT_detect_legs(bpy.types.Operator):
    """Find the pelvis and each leg's thigh, shin, foot and toe bones of the active armature"""

    bl_idname = "foot_lock.detect_legs"
    bl_label = "Detect Legs"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return poll_armature(cls, context)

    def execute(self, context):
        obj = active_armature(context)
        try:
            pelvis, legs = jobs.detect_leg_bones(obj)
        except EXPECTED_ERRORS as error:
            self.report({"ERROR"}, f"Foot Lock: {error}")
            return {"CANCELLED"}
        jobs.store_legs(obj.foot_lock, pelvis, legs)
        self.report({"INFO"}, f"Foot Lock: found {len(legs)} legs below {pelvis!r}: {', '.join(leg[0] for leg in legs)}")
        return {"FINISHED"}
