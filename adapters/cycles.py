"""Cyclic actions: how Blender says an action loops, and keeping the result looping.

An action loops when its bone curves carry Cycles F-modifiers (the usual way to loop a
walk in the Graph Editor), or when its manual frame range is marked cyclic
(``use_frame_range`` + ``use_cyclic``): either way its frame range is one cycle whose
last frame is the first again. The fixed curves are keyed over that cycle; a curve the
fix creates gets the Cycles modifier its neighbours have, so the whole result loops.
"""

from . import action_compat as compat
from .armature import bone_data_path

_TRANSFORMS = {"location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle"}


def _cycles_modifier(fcurve):
    return next((m for m in fcurve.modifiers if m.type == "CYCLES" and not m.mute), None)


def _bone_curves(obj, action, fcurves=None):
    """The F-curves of ``action`` (or of ``fcurves``) that animate ``obj``'s pose bones."""
    bones = {bone_data_path(bone.name) for bone in obj.pose.bones}
    fcurves = compat.iter_fcurves(obj, action) if fcurves is None else fcurves
    return [fcurve for fcurve in fcurves if fcurve.data_path.rpartition(".")[0] in bones]


def has_cycles_modifiers(obj, action):
    # The modifiers first (counted: cheaper than looked through): most curves have none,
    # and then no curve's path is read.
    cycled = [fcurve for fcurve in compat.iter_fcurves(obj, action)
              if len(fcurve.modifiers) and _cycles_modifier(fcurve) is not None]
    return bool(cycled) and bool(_bone_curves(obj, action, cycled))


def is_marked_cyclic(obj, action):
    """Whether Blender loops ``action`` on ``obj``: Cycles modifiers or a cyclic manual range."""
    return (action.use_frame_range and action.use_cyclic) or has_cycles_modifiers(obj, action)


def keep_looping(obj, action, bone_names):
    """Give each transform curve of ``bone_names`` without one a Cycles modifier:
    rotations repeat, locations repeat with offset (a travelling root goes on travelling,
    a still one stays)."""
    if not has_cycles_modifiers(obj, action):
        return  # looped by its frame range (or by its poses): nothing to add
    paths = {bone_data_path(name) for name in bone_names}
    for fcurve in _bone_curves(obj, action):
        path, _, prop = fcurve.data_path.rpartition(".")
        if path in paths and prop in _TRANSFORMS and _cycles_modifier(fcurve) is None:
            modifier = fcurve.modifiers.new("CYCLES")
            if prop == "location":
                modifier.mode_before = modifier.mode_after = "REPEAT_OFFSET"
