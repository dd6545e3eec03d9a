"""Root Motion from Feet on a Blender armature: key the travel that plants an in-place
clip's feet onto the translation bone, or onto the object.

Like Remove Foot Sliding, the result goes to a new action (``<action>.rootmotion``; the
original is kept) unless In Place is on, nothing is written before the travel is found,
and only the channels that carry the travel change. A looping action (Cycles modifiers)
gets Cycles modifiers that repeat the travel with its offset, so it goes on walking.
"""

import time
from dataclasses import dataclass

import numpy as np

from ..solvers import loops, matrices
from ..solvers.root_motion import plant_feet, travel_before_and_after, travel_summary
from . import action_compat as compat
from . import armature, cycles, jobs
from .errors import AdapterError
from .properties import contact_settings, unit_scale

ROOT_MOTION_SUFFIX = ".rootmotion"
OBJECT_GROUP = "Object Transforms"  # where Blender itself groups an object's own curves


@dataclass
class RootMotionOutcome:
    action: object
    carrier: str  # the bone (or the object) now carrying the travel
    travel_before: float  # metres the root travels, first to last frame, before
    travel_after: float  # ... and after
    frames: int
    seconds: float
    warnings: list  # of the write (F-curve modifiers baked into the new action)


def root_motion_from_feet(obj, scene, onto_object=False):
    """Find the travel that plants the feet of ``obj``'s action and key it; see the module."""
    start_time = time.perf_counter()
    settings = jobs.ensure_legs(obj)
    action = jobs.editable_action(obj)
    clip = jobs.read_clip(obj, action)
    looped = cycles.is_marked_cyclic(obj, action) or loops.is_closed_loop(
        clip.skeleton, clip.motion, clip.rig, jobs.UP)
    moved, travel, _ = plant_feet(clip.skeleton, clip.motion, clip.rig, jobs.UP, contact_settings(settings),
                                  looped)
    name = None if settings.in_place else compat.suffixed_name(action.name, ROOT_MOTION_SUFFIX)
    warnings = []
    if onto_object:
        target, carrier = _key_object_travel(obj, action, clip.frames, travel, name), obj.name
    else:
        carrier = clip.joint_map.joint_bone[clip.rig.pelvis]  # the translation bone
        target = armature.write_motion(obj, action, clip.joint_map, moved, int(clip.frames[0]),
                                       rotation_bones=[], location_bones=[carrier], new_action_name=name,
                                       warnings=warnings)
        if looped:
            cycles.keep_looping(obj, target, [carrier])
    before, after = travel_before_and_after(clip.skeleton, clip.motion, clip.rig.pelvis, travel, jobs.UP)
    metres = unit_scale(scene)
    return RootMotionOutcome(target, carrier, before * metres, after * metres, len(clip.frames),
                             time.perf_counter() - start_time, warnings)


def _key_object_travel(obj, action, frames, travel, new_action_name):
    """Key the object's location as it is plus ``travel`` (world) on ``frames``."""
    if any(fcurve.data_path == "location" for fcurve in compat.iter_fcurves(obj, action)):
        raise AdapterError(f"object {obj.name!r} already has keyed location: add the travel to the bone instead")
    local = travel @ matrices.inverse(armature.parent_space(obj)[:3, :3]).T  # world steps into the object's parent space
    values = np.array(obj.location, dtype=float)[None] + local
    target = compat.copy_action(obj, action, new_action_name) if new_action_name else action
    bag = compat.channel_bag(obj, target, create=True)
    repeat = cycles.has_cycles_modifiers(obj, target)
    for axis in range(3):
        fcurve = compat.new_fcurve(bag, "location", axis, group=OBJECT_GROUP)
        compat.write_keys(fcurve, frames, values[:, axis], "LINEAR")
        if repeat:
            modifier = fcurve.modifiers.new("CYCLES")
            modifier.mode_before = modifier.mode_after = "REPEAT_OFFSET"
    return target


def summary(outcome):
    return (f"{travel_summary(outcome.travel_before, outcome.travel_after, outcome.frames)}, keyed onto "
            f"{outcome.carrier!r} in {outcome.action.name!r}")
