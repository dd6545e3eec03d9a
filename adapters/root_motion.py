"""Root Motion from Feet on a Blender armature: key the travel that plants an in-place
clip's feet onto the translation bone, or onto the object.

Like Remove Foot Sliding, the result goes to a new action (``<action>.rootmotion``; the
original is kept) unless In Place is on, nothing is written before the travel is found,
and only the channels that carry the travel change. Run again, from the action or on its
result, the travel is found again from the action, and the result made again in the place
of the earlier one while that is untouched (see :mod:`.results`). A looping action (Cycles
modifiers) gets Cycles modifiers that repeat the travel with its offset, so it goes on
walking.
"""

import time
from dataclasses import dataclass

import numpy as np

from ..solvers import loops, matrices
from ..solvers.root_motion import plant_feet, travel_before_and_after, travel_rewritten, travel_summary
from . import action_compat as compat
from . import armature, control_rig, cycles, jobs, results, sources
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
    source = _source(obj, settings.in_place)
    controls = control_rig.find_controls(obj, settings, source.action, source.frames)
    # The keys, or on a control rig the deformation skeleton as the controls move it.
    clip = jobs.read_clip(obj, source.action) if controls is None else jobs.control_clip(obj, scene, source, controls)
    skeleton, motion, rig = clip.skeleton, clip.motion, clip.rig
    looped = cycles.is_marked_cyclic(obj, source.action) or loops.is_closed_loop(skeleton, motion, rig, jobs.UP)
    moved, travel, _ = plant_feet(skeleton, motion, rig, jobs.UP, contact_settings(settings), looped)
    carrier = _checked_carrier(obj, source.action, clip, moved, onto_object)
    target, kept = (source.action, None) if settings.in_place else jobs.fresh_result(obj, source, None, clip)
    warnings = _key_travel(obj, source.action, target, clip, moved, travel, carrier, onto_object)
    warnings += jobs.edited_result_kept(kept, target)
    if looped and not onto_object:
        cycles.keep_looping(obj, target, [carrier])
    if not settings.in_place:
        results.stamp(obj, target)
    before, after = travel_before_and_after(skeleton, motion, rig.pelvis, travel, jobs.UP)
    metres = unit_scale(scene)
    warnings += travel_rewritten(skeleton, motion, rig, before, after, metres)
    return RootMotionOutcome(target, carrier, before * metres, after * metres, len(clip.frames),
                             time.perf_counter() - start_time, warnings)


def _source(obj, in_place):
    """The action to find the travel from, as a :class:`~.sources.MotionSource`: the one
    played, or where that is a result of this tool, the action it was made from; with the
    result to make again (that one, or the untouched ``<action>.rootmotion`` of an earlier
    run), unless In Place keys into the action played."""
    action = jobs.editable_action(obj)
    source = sources.action_source(obj, action, jobs.motion_frames, ROOT_MOTION_SUFFIX, follow_results=not in_place)
    if not in_place:
        jobs.adopt_earlier_result(obj, source)
    return source


def _checked_carrier(obj, action, clip, moved, onto_object):
    """What the travel of ``action`` is keyed on (the object, the control carrying the leg
    and body controls, the root bone above the translation bone, or that bone), once it is
    known that it can be: nothing is written before."""
    if onto_object:
        if any(fcurve.data_path == "location" for fcurve in compat.iter_fcurves(obj, action)):
            raise AdapterError(f"object {obj.name!r} already has keyed location: add the travel to the bone instead")
        return obj.name
    if clip.controls is not None:
        return _carrying_control(obj, clip.controls)
    bone = clip.joint_map.joint_bone[clip.rig.pelvis]  # the translation bone
    root = _root_bone_above(obj, bone)
    if root is not None:
        return root
    armature.check_writable(clip.joint_map, moved, int(clip.frames[0]), [], [bone])
    return bone


def _root_bone_above(obj, bone):
    """The bone at the top of ``bone``'s parents (a game rig's ``root``, MotionBuilder's
    ``Reference``), where it has one free to key: game engines take a clip's root motion
    from that bone, so the travel goes there, not into the pelvis. None where ``bone`` has
    no parent, or the top one is constrained (what it plays is not its keys)."""
    parents = obj.data.bones[bone].parent_recursive
    if not parents or obj.pose.bones[parents[-1].name].constraints:
        return None
    return parents[-1].name


def _key_travel(obj, action, target, clip, moved, travel, carrier, onto_object):
    """Key the travel onto ``carrier`` (see :func:`_checked_carrier`) in ``target``, the new
    result of ``action`` or (In Place) ``action`` itself; returns the warnings."""
    if onto_object:
        _key_object_travel(obj, target, clip.frames, travel)
        return []
    if clip.controls is not None or carrier != clip.joint_map.joint_bone[clip.rig.pelvis]:  # a control, a root bone
        _key_top_bone_travel(obj, target, carrier, clip.frames, travel)
        return []
    warnings = armature.ready_to_key(obj, action, target, armature.keyed_channels(obj, [], [carrier]))
    armature.key_motion(obj, target, clip.joint_map, moved, int(clip.frames[0]), [], [carrier])
    return warnings


# Rigify's master control: the parent switches of its torso and IK controls follow it (by
# Armature constraints, not as its children).
RIGIFY_ROOT = "root"


def _carrying_control(obj, controls):
    """The bone that carries every control of the legs and the body (Rigify's ``root``, else
    their common parent): the travel keyed on it moves them all, as the translation bone
    carries a plain rig."""
    if controls.kind == control_rig.RIGIFY and RIGIFY_ROOT in obj.pose.bones:
        return RIGIFY_ROOT
    chains = [obj.data.bones[follower.control].parent_recursive for follower in controls.followers()]
    common = [bone for bone in chains[0] if all(bone in chain for chain in chains[1:])]
    carrier = common[0] if common else None
    if carrier is None or carrier.parent is not None or obj.pose.bones[carrier.name].constraints:
        raise AdapterError(
            f"no bone of {obj.name!r} carries all its leg and body controls (a root control without a parent or "
            "constraints) to key the travel on: turn on Onto Object to key it on the armature object")
    return carrier.name


def _key_top_bone_travel(obj, target, control, frames, travel):
    """Key ``control`` (a bone without a parent: a control rig's carrying control, a root
    bone) in ``target`` where it is on ``frames`` plus ``travel`` (world): its location
    moves it along its rest axes, in the armature's space."""
    rest = np.array(obj.data.bones[control].matrix_local)[:3, :3]
    local = travel @ matrices.inverse(np.array(obj.matrix_world)[:3, :3] @ rest).T
    path = armature.bone_data_path(control) + ".location"
    bag = compat.channel_bag(obj, target, create=True)
    table = compat.fcurve_table(bag)
    current = obj.pose.bones[control].location
    values = np.array([compat.read_values(table[path, axis], frames) if (path, axis) in table
                       else np.full(len(frames), current[axis]) for axis in range(3)])
    armature.key_channel(bag, table, control, "location", frames, values + local.T)


def _key_object_travel(obj, target, frames, travel):
    """Key the object's location in ``target`` as it is plus ``travel`` (world) on ``frames``."""
    local = travel @ matrices.inverse(armature.parent_space(obj)[:3, :3]).T  # world steps into the object's parent space
    values = np.array(obj.location, dtype=float)[None] + local
    bag = compat.channel_bag(obj, target, create=True)
    repeat = cycles.has_cycles_modifiers(obj, target)
    for axis in range(3):
        fcurve = compat.new_fcurve(bag, "location", axis, group=OBJECT_GROUP)
        compat.write_keys(fcurve, frames, values[:, axis], "LINEAR")
        if repeat:
            modifier = fcurve.modifiers.new("CYCLES")
            modifier.mode_before = modifier.mode_after = "REPEAT_OFFSET"


def summary(outcome):
    return (f"{travel_summary(outcome.travel_before, outcome.travel_after, outcome.frames)}, keyed onto "
            f"{outcome.carrier!r} in {outcome.action.name!r}")
