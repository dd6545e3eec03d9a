import bpy

from ..adapters import root_motion
from .checks import ArmatureOperator


class FOOT_LOCK_OT_root_motion_from_feet(ArmatureOperator, bpy.types.Operator):
    """Make an in-place clip travel: key the motion that keeps its planted feet still onto \
the translation bone (or the object), in a new action ('<action>.rootmotion'; the original is kept; run again, it makes that again from '<action>')"""

    bl_idname = "foot_lock.root_motion_from_feet"
    bl_label = "Root Motion from Feet"

    onto_object: bpy.props.BoolProperty(
        name="Onto Object",
        description="Key the travel on the armature object's location instead of the translation bone",
        default=False,
    )

    def run(self, context, obj):
        outcome = root_motion.root_motion_from_feet(obj, context.scene, self.onto_object)
        self.report_warnings(outcome.warnings)
        return root_motion.summary(outcome)
