import bpy
from bpy.props import IntProperty

from ..adapters.errors import AdapterError
from .checks import ArmatureOperator


class FOOT_LOCK_OT_add_leg(ArmatureOperator, bpy.types.Operator):
    """Add a leg to set up by hand (for rigs whose legs Detect Legs cannot find)"""

    bl_idname = "foot_lock.add_leg"
    bl_label = "Add Leg"

    def run(self, context, obj):
        legs = obj.foot_lock.legs
        leg = legs.add()
        leg.name = f"leg_{len(legs)}"
        return f"added {leg.name!r}: pick its thigh, shin, foot and toe bones"


class FOOT_LOCK_OT_remove_leg(ArmatureOperator, bpy.types.Operator):
    """Remove this leg from Foot Lock's set-up (the bones stay)"""

    bl_idname = "foot_lock.remove_leg"
    bl_label = "Remove Leg"

    index: IntProperty(name="Leg", description="Which leg to remove", min=0)

    def run(self, context, obj):
        legs = obj.foot_lock.legs
        if self.index >= len(legs):
            raise AdapterError(f"there is no leg number {self.index + 1} (the armature has {len(legs)})")
        name = legs[self.index].name
        legs.remove(self.index)
        return f"removed leg {name!r}"
