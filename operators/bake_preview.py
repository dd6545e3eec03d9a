import bpy

from ..adapters import preview
from .checks import ArmatureOperator


class FOOT_LOCK_OT_bake_preview(ArmatureOperator, bpy.types.Operator):
    """Key the Preview of every frame of the action, exactly as the viewport shows it, into a new \
action ('<action>.preview'; the original is kept). Preview is turned off: the new action holds it"""

    bl_idname = "foot_lock.bake_preview"
    bl_label = "Bake Preview"

    def run(self, context, obj):
        action, frames, warnings = preview.bake_preview(obj, context.scene, context.evaluated_depsgraph_get())
        self.report_warnings(warnings)
        return f"{frames} previewed frames baked to {action.name!r}; Preview is off (the new action holds it)"
