import bpy

from ..adapters import jobs
from .checks import ArmatureOperator


class FOOT_LOCK_OT_remove_sliding(ArmatureOperator, bpy.types.Operator):
    """Lock the feet during contacts and bake the result to a new action \
('<action>.footlock'; the original is kept)"""

    bl_idname = "foot_lock.remove_sliding"
    bl_label = "Remove Foot Sliding"

    def run(self, context, obj):
        window_manager = context.window_manager
        window_manager.progress_begin(0, 100)
        try:
            outcome = jobs.remove_sliding(obj, context.scene, lambda f: window_manager.progress_update(int(100 * f)))
        finally:
            window_manager.progress_end()
        self.report_warnings(outcome.result.warnings)
        return jobs.summary(outcome)
