import bpy

from ..adapters import jobs
from .checks import EXPECTED_ERRORS, active_armature, poll_armature


class FOOT_LOCK_OT_detect_contacts(bpy.types.Operator):
    """Label foot contacts and key them as 'foot_contact' curves (0..1) on the toe bones, \
to inspect and edit in the Graph Editor"""

    bl_idname = "foot_lock.detect_contacts"
    bl_label = "Detect Contacts"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return poll_armature(cls, context)

    def execute(self, context):
        obj = active_armature(context)
        try:
            written, kept = jobs.detect_contacts(obj, overwrite=obj.foot_lock.overwrite_contacts)
        except EXPECTED_ERRORS as error:
            self.report({"ERROR"}, f"Foot Lock: {error}")
            return {"CANCELLED"}
        message = f"Foot Lock: contact curves keyed on {', '.join(written) or 'no bone'}"
        if kept:
            message += f"; kept existing curves on {', '.join(kept)} (enable Overwrite Contacts to replace them)"
        self.report({"INFO"}, message)
        return {"FINISHED"}
