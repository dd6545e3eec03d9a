import bpy

from ..adapters import jobs
from .checks import EXPECTED_ERRORS, active_armature, poll_armature


class FOOT_LOCK_OT_remove_sliding(bpy.types.Operator):
    """Lock the feet during contacts and bake the result to a new action \
('<action>.footlock'; the original is kept)"""

    bl_idname = "foot_lock.remove_sliding"
    bl_label = "Remove Foot Sliding"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return poll_armature(cls, context)

    def execute(self, context):
        obj = active_armature(context)
        window_manager = context.window_manager
        window_manager.progress_begin(0, 100)
        try:
            outcome = jobs.remove_sliding(obj, context.scene, lambda f: window_manager.progress_update(int(100 * f)))
        except EXPECTED_ERRORS as error:
            self.report({"ERROR"}, f"Foot Lock: {error}")
            return {"CANCELLED"}
        finally:
            window_manager.progress_end()
        for warning in outcome.result.warnings:
            self.report({"WARNING"}, f"Foot Lock: {warning}")
        self.report({"INFO"}, jobs.summary(outcome))
        return {"FINISHED"}
