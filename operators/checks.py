"""What every Foot Lock operator shares: small named ``poll()`` checks and one way of
turning expected failures into clear error reports."""

from ..adapters import jobs, preview
from ..adapters.errors import EXPECTED_ERRORS


def active_armature(context):
    obj = context.active_object
    return obj if obj is not None and obj.type == "ARMATURE" else None


def poll_armature(operator_class, context):
    """True for an active armature in Object or Pose mode; else says why in the tooltip."""
    obj = active_armature(context)
    if obj is None:
        operator_class.poll_message_set("Select an armature (make it the active object)")
        return False
    if obj.mode not in {"OBJECT", "POSE"}:
        operator_class.poll_message_set("Switch to Object or Pose mode")
        return False
    return True


class ArmatureOperator:
    """Mix-in for operators on the active armature: ``run(context, obj)`` does the work
    and returns the status-bar message; expected failures become an error report and
    ``{'CANCELLED'}``, with nothing changed. A job that warned ends on a warning: the status
    bar shows the last report, and a summary shown as plain information there would hide
    the warnings reported before it."""

    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return poll_armature(cls, context)

    def execute(self, context):
        obj = active_armature(context)
        self.warned = 0
        try:
            # The job reads the action without the preview's muted curves.
            with preview.paused(obj), jobs.detected_legs_dropped_on_failure(obj):
                message = self.run(context, obj)
        except EXPECTED_ERRORS as error:
            self.report({"ERROR"}, f"Foot Lock: {error}")
            return {"CANCELLED"}
        if self.warned:
            self.report({"WARNING"}, f"Foot Lock: {message}; {warning_count(self.warned)}, listed in the Info editor")
        else:
            self.report({"INFO"}, f"Foot Lock: {message}")
        return {"FINISHED"}

    def report_warnings(self, warnings):
        """Each of a job's ``warnings`` as a warning report (counted in the last report)."""
        for warning in warnings:
            self.report({"WARNING"}, f"Foot Lock: {warning}")
        self.warned += len(warnings)


def warning_count(count):
    return f"{count} warning{'' if count == 1 else 's'}"
