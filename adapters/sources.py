"""Where an armature's motion comes from, decided by the data: the keys, or the scene.

Three cases, checked in this order:

- ``NLA``: unmuted NLA strips play (with or without an active action on top). The motion
  is what the NLA evaluates; the result is baked into a new action with every channel.
- ``EVALUATED``: an active action, but something besides its F-curves moves the
  character in the world: constraints on the object or an ancestor, an animated parent at
  any depth, drivers, an action blended at less than full influence. The motion is
  sampled from the evaluated scene; the fix is keyed into the action.
- ``KEYS``: only the action's F-curves move it: its bones', and the object's own
  transform keys if it travels by them. They are read directly (exact, and several times
  faster than stepping the scene).
"""

from dataclasses import dataclass

import bpy
import numpy as np

from . import action_compat as compat
from .armature import bone_data_path, object_ancestors
from .errors import AdapterError

KEYS, EVALUATED, NLA = "keys", "evaluated scene", "NLA"
RESULT_SUFFIX = ".footlock"
# On a result: the action it was made from (from the NLA: the one on top), a reference that
# follows a rename (results of earlier versions hold its name: see :func:`recorded_source`).
SOURCE_PROPERTY = "foot_lock_source"
# On a result: the suffix of the tool that made it (``.rootmotion``: Root Motion from Feet); a
# result without one is Remove Foot Sliding's (``.footlock``), as those of earlier versions.
MADE_BY_PROPERTY = "foot_lock_made_by"
TRACKS_PROPERTY = "foot_lock_tracks"  # on a result baked from the NLA: the tracks it muted
_TRANSFORM_PATHS = ("location", "rotation_", "scale", "delta_")


@dataclass
class MotionSource:
    kind: str  # KEYS, EVALUATED or NLA
    action: object  # the action that plays (None for the NLA without one)
    frames: np.ndarray  # scene frames to read and write
    tracks: list  # NLA tracks that play (muted, kept, once the result is baked)
    result: object = None  # an earlier Foot Lock result to make again from this source
    suffix: str = RESULT_SUFFIX  # the tool's: its results are <action><suffix> (Root Motion's .rootmotion)

    @property
    def sampled(self):
        return self.kind != KEYS


def motion_source(obj, action_frames, follow_results=True):
    """The :class:`MotionSource` of ``obj``; ``action_frames(action)`` gives an action's
    frames (its frame range). With ``follow_results``, an active action that Foot Lock
    made is traced back to what it was made from (its action, or the NLA tracks it
    muted). Refuses NLA tweak mode and broken inputs before anything is read."""
    anim = obj.animation_data
    if anim is not None and anim.use_tweak_mode:
        raise AdapterError(
            f"{obj.name!r} is in NLA tweak mode: leave tweak mode first (Tab in the NLA editor); nothing was changed"
        )
    action = anim.action if anim is not None else None
    tracks = playing_tracks(anim)
    if tracks:
        return MotionSource(NLA, action, _nla_frames(tracks, action, action_frames), tracks)
    if action is None:
        raise AdapterError(f"armature {obj.name!r} has no action: assign the animation to clean up first")
    if follow_results:
        muted = [anim.nla_tracks[name] for name in action.get(TRACKS_PROPERTY, ()) if name in anim.nla_tracks]
        if muted:
            on_top = recorded_source(action)  # played above the tracks, or None
            on_top = on_top if on_top != action else None
            return MotionSource(NLA, on_top, _nla_frames(muted, on_top, action_frames), muted, result=action)
    return action_source(obj, action, action_frames, follow_results=follow_results)


def action_source(obj, action, action_frames, suffix=RESULT_SUFFIX, follow_results=True):
    """The :class:`MotionSource` of ``action`` for the tool whose results are
    ``<action><suffix>``; with ``follow_results``, where ``action`` is one of them, the
    action it was made from, ``action`` the result to make again."""
    origin = result_origin(action, suffix) if follow_results else None
    if origin is None:
        return _action_source(obj, action, action_frames, suffix)
    return _action_source(obj, origin, action_frames, suffix, result=action)


def _action_source(obj, action, action_frames, suffix, result=None):
    kind = KEYS if keys_are_exact(obj, action) else EVALUATED
    return MotionSource(kind, action, action_frames(action), [], result, suffix)


def result_origin(action, suffix=RESULT_SUFFIX):
    """The action ``action`` was made from, where it is a result of the tool whose results are
    ``<action><suffix>`` (Remove Foot Sliding's by default), or None when it is not one (or
    its source is gone)."""
    if SOURCE_PROPERTY in action:
        origin = recorded_source(action) if made_by(action) == suffix else None
    elif action.name.endswith(suffix):
        origin = bpy.data.actions.get(action.name[: -len(suffix)])
    else:
        origin = None
    return origin if origin is not None and origin != action else None


def recorded_source(result):
    """The action ``result`` records it was made from (:data:`SOURCE_PROPERTY`), or None: the
    action itself, however it was renamed since, or for a result of an earlier version, the
    action of the name it holds."""
    recorded = result.get(SOURCE_PROPERTY)
    if isinstance(recorded, bpy.types.Action):
        return recorded
    return bpy.data.actions.get(recorded) if isinstance(recorded, str) else None


def record_source(result, action, suffix=RESULT_SUFFIX):
    """Record on ``result`` that the tool whose results are ``<action><suffix>`` made it from
    ``action`` (see :func:`recorded_source`). A result is a copy of ``action``, and of its
    marks where that was a result too: the NLA tracks a bake replaced are not this one's."""
    result[SOURCE_PROPERTY] = action
    result[MADE_BY_PROPERTY] = suffix
    result.pop(TRACKS_PROPERTY, None)


def made_by(result):
    """The suffix of the tool that made ``result`` (see :data:`MADE_BY_PROPERTY`)."""
    return result.get(MADE_BY_PROPERTY, RESULT_SUFFIX)


def playing_tracks(anim):
    """NLA tracks with unmuted strips that Blender evaluates (solo respected)."""
    if anim is None or not anim.use_nla:
        return []
    tracks = [track for track in anim.nla_tracks if not track.mute]
    solo = [track for track in tracks if track.is_solo]
    return [track for track in (solo or tracks) if any(not strip.mute for strip in track.strips)]


def _nla_frames(tracks, action, action_frames):
    starts, ends = [], []
    for track in tracks:
        for strip in track.strips:
            if strip.mute:
                continue
            if strip.frame_end - strip.frame_start < 1.0:
                raise AdapterError(
                    f"NLA strip {strip.name!r} on track {track.name!r} has zero length "
                    f"({strip.frame_start:g}..{strip.frame_end:g}): delete or lengthen it"
                )
            starts.append(strip.frame_start)
            ends.append(strip.frame_end)
    if action is not None:
        frames = action_frames(action)
        starts.append(frames[0])
        ends.append(frames[-1])
    return np.arange(int(np.floor(min(starts))), int(np.ceil(max(ends))) + 1)


def keys_are_exact(obj, action):
    """Whether the action's F-curves alone (the bones', the object's own transform) determine
    the armature's world motion."""
    return moved_by(obj) is None


# The object's own transform: what a driver must drive to carry the object itself.
_PLACEMENT_PATHS = frozenset(f"{prefix}{channel}" for prefix in ("", "delta_") for channel in (
    "location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale"))


def moved_by(obj, placement_only=False):
    """What besides its action's F-curves may move the armature ``obj`` (words for a
    message), or None: its keys alone determine its world motion. With ``placement_only``,
    only what may carry the object itself: drivers of its bones pose it, they do not."""
    anim = obj.animation_data
    if anim is not None and any(not placement_only or driver.data_path in _PLACEMENT_PATHS
                                for driver in anim.drivers):
        return "drivers"
    if anim is not None and (anim.action_influence < 1.0 or anim.action_blend_type != "REPLACE"):
        return "its action's influence or blending"
    if _constrained(obj):
        return f"its constraint {next(c.name for c in obj.constraints if active_constraint(c))!r}"
    moving = next((ancestor for ancestor in object_ancestors(obj.parent) if _moves_itself(ancestor)), None)
    return None if moving is None else f"its parent {moving.name!r}"


def nla_moves_object(obj, source):
    """Whether the strips of an NLA ``source`` (a :class:`MotionSource`), or its action on
    top of them, animate the object's own transform (the result that replaces them keys it
    too, or the object would stop)."""
    actions = {strip.action for track in source.tracks for strip in track.strips if strip.action and not strip.mute}
    actions.add(source.action)
    return any(_animates_transform(obj, fcurve) for action in actions for fcurve in compat.iter_fcurves(obj, action))


def _constrained(obj):
    return any(active_constraint(c) for c in obj.constraints)


def active_constraint(constraint):
    """Whether ``constraint`` acts: not muted, some influence."""
    return not constraint.mute and constraint.influence > 0.0


def _animates_transform(obj, fcurve):
    """An unmuted F-curve that changes one of the object's own transform channels."""
    if not fcurve.data_path.startswith(_TRANSFORM_PATHS) or fcurve.mute:  # most curves are the bones': no mute read
        return False
    first, last = fcurve.range()
    values = compat.read_values(fcurve, np.arange(int(first), int(last) + 1))
    return np.ptp(values) > 1e-7 or bool(len(fcurve.modifiers))


def _moves_itself(obj):
    """Whether something may move ``obj`` (a parent of the armature) over time: constraints,
    drivers, an action or NLA strips."""
    anim = obj.animation_data
    if _constrained(obj):
        return True
    return anim is not None and bool(anim.drivers or anim.action is not None or playing_tracks(anim))


def check_evaluated(obj):
    """After sampling: refuse object constraints without a valid target and drivers that
    failed, on the armature (its bones included) and its ancestors (Blender evaluated them
    as if absent)."""
    for item in object_ancestors(obj):
        for constraint in item.constraints:
            if active_constraint(constraint) and not _valid(constraint):
                raise AdapterError(
                    f"constraint {constraint.name!r} on {item.name!r} is not valid (its target was deleted?): "
                    "fix or remove it first; nothing was changed"
                )
        anim = item.animation_data
        for fcurve in anim.drivers if anim is not None else ():
            if not fcurve.mute and _failed(fcurve.driver):
                raise AdapterError(
                    f"the driver of {item.name!r} {fcurve.data_path}[{fcurve.array_index}] fails to evaluate: "
                    "fix its expression or variables first; nothing was changed"
                )


def _failed(driver):
    """A driver that could run and failed. A Python expression in a file whose scripts may
    not run (untrusted) does not run at all: the scene shows, and Foot Lock reads, the
    motion without it."""
    return not driver.is_valid and (driver.is_simple_expression or not bpy.app.autoexec_fail)


def _valid(constraint):
    """Blender flags most broken constraints; one whose target object was deleted keeps
    its flag until the relations are rebuilt, so look at the target too."""
    return constraint.is_valid and getattr(constraint, "target", True) is not None


def driven_bones(obj, bone_names):
    """Names among ``bone_names`` whose transform channels a driver sets (a key there would
    be overridden)."""
    anim = obj.animation_data
    paths = [fcurve.data_path for fcurve in anim.drivers] if anim is not None else []
    return [
        name for name in bone_names
        if any(path.startswith(bone_data_path(name) + ".") and not path.endswith("]") for path in paths)
    ]


def mute_tracks(tracks, result):
    """The result replaces these: muted, kept for the animator to compare or go back, and
    named on the result (a rerun bakes them again)."""
    for track in tracks:
        track.mute = True
    result[TRACKS_PROPERTY] = [track.name for track in tracks]
