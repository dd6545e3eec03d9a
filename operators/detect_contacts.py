import bpy

from ..adapters import jobs
from .checks import ArmatureOperator


class FOOT_LOCK_OT_detect_contacts(ArmatureOperator, bpy.types.Operator):
    """Label foot contacts and key them as 'foot_contact' curves (0..1) on the toe bones and \
'heel_contact' curves on the foot bones, to inspect and edit in the Graph Editor"""

    bl_idname = "foot_lock.detect_contacts"
    bl_label = "Detect Contacts"

    def run(self, context, obj):
        outcome = jobs.detect_contacts(obj, overwrite=obj.foot_lock.overwrite_contacts)
        message = f"contact curves keyed on {', '.join(outcome.written) or 'no bone'} in {outcome.action.name!r}"
        if outcome.baked:
            message += " (the NLA strips baked into it, their tracks muted and kept; Remove Foot Sliding fixes it)"
        if outcome.kept:
            message += f"; kept existing curves on {', '.join(outcome.kept)} (enable Overwrite Contacts to replace them)"
        return message
