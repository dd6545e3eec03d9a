"""What the buttons (and the command line) do, on a Blender armature object.

Each job reads the armature through :mod:`.armature`, runs the numpy solver core and
writes back only what it solves. Every expected failure is an
:class:`~.errors.AdapterError`, :class:`~..solvers.kinematics.SolverInputError` or
:class:`~..solvers.leg_detection.LegDetectionError` raised *before* anything is written, so a
failed job changes nothing.
"""

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

import bpy
import numpy as np

from ..solvers import loops
from ..solvers.foot_lock import label_foot_contacts, remove_foot_sliding
from ..solvers.leg_detection import detect_legs
from ..solvers.rig import Leg, Rig
from . import action_compat as compat
from . import armature, control_rig, cycles, evaluated, followers, results, sources
from .errors import AdapterError
from .properties import contact_settings, solver_settings, unit_scale

UP = (0.0, 0.0, 1.0)  # Blender's world is Z-up
FOOTLOCK_SUFFIX = sources.RESULT_SUFFIX


@dataclass
class Clip:
    """An armature's action read into arrays, with its legs as joints."""

    skeleton: object
    motion: object
    joint_map: object
    rig: Rig
    contact_bones: list  # per leg: the bone carrying its foot_contact curve
    frames: np.ndarray  # scene frame numbers
    controls: control_rig.ControlRig | None = None  # a control rig: keyed through these
    deform: control_rig.DeformClip | None = None  # ... from this evaluated deformation skeleton
    legs_only: bool = False  # the joints are the legs and their ancestors (see read_clip)


# --- legs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LegBoneNames:
    """One detected leg by bone names; ``toe`` is "" where the rig has no toe bone."""

    side: str
    thigh: str
    shin: str
    foot: str
    toe: str = ""


@dataclass(frozen=True)
class DetectedLegs:
    pelvis: str
    legs: tuple[LegBoneNames, ...]


def detect_leg_bones(obj):
    """The pelvis and legs of the armature, by bone name."""
    bones = obj.data.bones
    if not len(bones):
        raise AdapterError(f"armature {obj.name!r} has no bones")
    count = len(bones)
    points = np.empty((2 * count, 3))  # heads, then tails: into the world in one product
    bones.foreach_get("head_local", points[:count].reshape(-1))
    bones.foreach_get("tail_local", points[count:].reshape(-1))
    _, names, parents = armature.bone_hierarchy(obj.data)
    world = np.array(obj.matrix_world, dtype=float)
    return _legs_of_rest_rig(tuple(names), tuple(parents), points.tobytes(), world.tobytes())


@lru_cache(maxsize=16)
def _legs_of_rest_rig(names, parents, points, world):
    """:func:`detect_leg_bones` of bones ``names`` with ``parents``, rest heads then tails
    ``points`` in the armature's space (bytes of float64 (2 * bones, 3)) and the object's
    world matrix ``world`` (bytes of float64 (4, 4)). Remembered: a pipeline fixes thousands
    of clips of one rig, each imported afresh, and the guess takes longer than reading the
    rig (0.5 ms of a 12 ms click on a 31-bone CMU rig); the points are put into the world in
    here too, once a rig (a click's first matrix product, cold: 60 us)."""
    world = np.frombuffer(world).reshape(4, 4)
    points = np.frombuffer(points).reshape(-1, 3) @ world[:3, :3].T
    points += world[:3, 3]
    heads, tails = points.reshape(2, len(names), 3)
    guess = detect_legs(names, parents, heads, tails, up=UP)
    legs = tuple(
        LegBoneNames(
            leg.side, names[leg.thigh], names[leg.shin], names[leg.foot], "" if leg.toe is None else names[leg.toe]
        )
        for leg in guess.legs
    )
    return DetectedLegs(names[guess.pelvis], legs)


def store_legs(settings, detected):
    settings.pelvis = detected.pelvis
    settings.legs.clear()
    for leg in detected.legs:
        item = settings.legs.add()
        item.name, item.thigh, item.shin, item.foot, item.toe = leg.side, leg.thigh, leg.shin, leg.foot, leg.toe


@contextmanager
def detected_legs_dropped_on_failure(obj):
    """Legs a job detects and stores on its way (:func:`ensure_legs`) are dropped again
    when it fails: a refused job changes nothing, its settings included."""
    settings = obj.foot_lock
    pelvis, had_legs = settings.pelvis, bool(settings.legs)
    try:
        yield
    except Exception:
        if not had_legs:
            settings.legs.clear()
            settings.pelvis = pelvis
        raise


def ensure_legs(obj):
    """The object's legs, detected and stored first if none are set up."""
    settings = obj.foot_lock
    if not settings.legs:
        store_legs(settings, detect_leg_bones(obj))
    _check_leg_bones(obj, settings)
    return settings


LEG_ROLES = ("thigh", "shin", "foot", "toe")  # down the leg, each bone below the one before
_WAY_OUT = "pick them in the Legs panel or run Detect Legs"


def _check_leg_bones(obj, settings):
    """Refuse legs set up so that no solve could use them, naming the leg, the slots and
    the way out: a bone not in the armature, one bone in two legs or two slots, a chain not
    going down the leg, a pelvis the legs do not hang from."""
    bones = obj.data.bones
    if settings.pelvis not in bones:
        raise AdapterError(f"pelvis bone {settings.pelvis!r} is not in {obj.name!r}: pick it in the Legs panel")
    used = {settings.pelvis: "the pelvis"}  # bone -> the slot it fills
    # Who hangs from whom by the bones' parent indices (one reading a job, see
    # armature.bone_hierarchy), not by each bone's parent_recursive (a list of RNA structs).
    _, names, parents = armature.bone_hierarchy(obj.data)
    index_of = {name: index for index, name in enumerate(names)}
    for leg in settings.legs:
        chain = [(role, bone) for role, bone in zip(LEG_ROLES, [getattr(leg, role) for role in LEG_ROLES])
                 if bone or role != "toe"]
        for role, bone in chain:  # a leg may have no toe bone
            if bone not in index_of:
                raise AdapterError(f"leg {leg.name!r}: {role} bone {bone!r} is not in {obj.name!r}; "
                                   "pick it in the Legs panel or run Detect Legs")
            slot = f"the {role} of leg {leg.name!r}"
            if bone in used:
                raise AdapterError(f"bone {bone!r} is {used[bone]} and {slot}: each leg needs bones of its own, "
                                   f"below the pelvis; {_WAY_OUT}")
            used[bone] = slot
        for (upper_role, upper), (role, bone) in pairwise([("pelvis", settings.pelvis), *chain]):
            if not _hangs_below(index_of[bone], index_of[upper], parents):
                raise AdapterError(f"leg {leg.name!r}: its {role} {bone!r} does not hang below its {upper_role} "
                                   f"{upper!r} (pelvis, thigh, shin, foot and toe go down the leg, each below the "
                                   f"one before); {_WAY_OUT}")


def _hangs_below(bone, upper, parents):
    """Whether the bone at ``bone`` hangs (at any depth) from the one at ``upper``
    (indices into the bones of :func:`~.armature.bone_hierarchy`, with their ``parents``)."""
    bone = parents[bone]
    while bone >= 0:
        if bone == upper:
            return True
        bone = parents[bone]
    return False


def translation_bone(obj, pelvis):
    """The bone whose location moves the body: the pelvis, or (when the pelvis is
    connected to its parent, so its location is ignored) its nearest free ancestor."""
    bone = obj.data.bones[pelvis]
    while bone.use_connect and bone.parent is not None:
        bone = bone.parent
    return bone.name


def contact_bone(leg):
    """The bone that carries a leg's ``foot_contact`` curve: the toe, or the foot."""
    return leg.toe or leg.foot


def heel_bone(leg):
    """The bone that carries a leg's ``heel_contact`` curve: the foot, whose head is the
    heel pivot; None on a leg without a toe bone (its one point is the foot's tail)."""
    return leg.foot if leg.toe else None


# --- reading ----------------------------------------------------------------------------


def active_action(obj):
    anim = obj.animation_data
    action = anim.action if anim is not None else None
    if action is None:
        raise AdapterError(f"armature {obj.name!r} has no action: assign the animation to clean up first")
    return action


def editable_action(obj):
    action = active_action(obj)
    if action.library is not None:
        raise AdapterError(
            f"action {action.name!r} is linked from {action.library.filepath!r} and cannot be changed: "
            "make it local first (Object > Relations > Make Local)"
        )
    return action


def frame_range(action):
    start, end = action.frame_range
    return round(start), round(end)


def read_clip(obj, action, legs_only=False, object_keys=False, also=()):
    """The action over its frame range, read from its F-curves, with the object's legs as
    solver joints; with ``legs_only`` no other joints than the legs' bones and their
    ancestors (all a solve reads and writes: the other bones are keyed as they are), and
    the bones named in ``also`` and theirs; with ``object_keys`` the object travels by its
    own transform keys, if the action has any (see :func:`~.armature.read_motion`)."""
    start, end = motion_frames(action)[[0, -1]]
    settings = obj.foot_lock
    only = _leg_bones(settings) + list(also) if legs_only else None
    clip = _clip(obj, *armature.read_motion(obj, action, start, end, extra_tails=_tail_bones(settings), only=only,
                                            object_keys=object_keys))
    clip.legs_only = legs_only
    return clip


def read_source_clip(obj, scene, source, also=()):
    """The clip of a :class:`~.sources.MotionSource`: as :func:`read_clip` where the keys
    say how it moves (the legs, and the bones named in ``also``), else as the evaluated
    scene shows it (every bone); then also the :class:`~.evaluated.EvaluatedPose` it was
    read from."""
    controls = _controls(obj, source)
    if controls is not None:
        return control_clip(obj, scene, source, controls), None
    if not source.sampled:
        return read_clip(obj, source.action, legs_only=True, object_keys=True, also=also), None
    _refuse_driven_legs(obj)
    with _playing(obj, source):
        # Only a result baked from the NLA keys every channel from the sampled basis.
        sampled = evaluated.sample_pose(obj, scene, source.frames, with_basis=source.kind == sources.NLA)
        sources.check_evaluated(obj)
    return _clip(obj, *armature.read_evaluated_motion(obj, sampled, _tail_bones(obj.foot_lock))), sampled


def _controls(obj, source):
    """The control rig driving the legs (Rigify, or controls picked in the Legs panel), or None."""
    if source.action is None:
        return None
    controls = control_rig.find_controls(obj, obj.foot_lock, source.action, source.frames)
    if controls is not None and source.kind == sources.NLA:
        raise AdapterError(
            f"{obj.name!r} plays NLA strips on a control rig: Foot Lock keys the controls of the active action; "
            "bake the strips into one action first"
        )
    return controls


def control_clip(obj, scene, source, controls):
    """The deformation skeleton as the control rig evaluates it, its legs' contact curves
    on the foot controls."""
    with _playing(obj, source):
        deform = control_rig.read_deform_clip(obj, scene, obj.foot_lock, source.frames)
        sources.check_evaluated(obj)
    contact_bones = [leg.contact_bone for leg in controls.legs]
    return Clip(deform.skeleton, deform.motion, None, deform.rig, contact_bones, source.frames, controls, deform)


@contextmanager
def _playing(obj, source):
    """The scene playing ``source`` while it is sampled (a rerun samples what a result was
    made from: its action, or the NLA tracks it muted and the action that played on top of
    them); the object's own action, slot and tracks restored after."""
    anim = obj.animation_data
    current = anim.action if anim is not None else None
    if source.result is None or current != source.result:  # what plays is the source itself
        yield
        return
    slot = compat.action_slot(obj, current)
    for track in source.tracks:
        track.mute = False
    if source.action is None:
        anim.action = None
    else:
        compat.assign_action(obj, source.action)
    try:
        yield
    finally:
        for track in source.tracks:
            track.mute = True
        compat.assign_action(obj, current, slot.identifier if slot is not None else "")


def _tail_bones(settings):
    return [leg.toe or leg.foot for leg in settings.legs]


def _solved_bones(settings):
    return _tail_bones(settings) + [settings.pelvis]


def _leg_bones(settings):
    """The pelvis and every bone of the legs."""
    return [settings.pelvis] + [bone for leg in settings.legs for bone in (leg.thigh, leg.shin, leg.foot, leg.toe) if bone]


def _clip(obj, skeleton, motion, joint_map):
    settings = obj.foot_lock
    solved = _solved_bones(settings)
    _refuse_constrained_legs(obj, joint_map, solved)
    joint_map.require_exact(solved)  # before anything is written: a failed job changes nothing
    frames = np.arange(joint_map.frame_start, joint_map.frame_end + 1)
    return Clip(skeleton, motion, joint_map, _rig(obj, joint_map), [contact_bone(leg) for leg in settings.legs], frames)


def _rig(obj, joint_map):
    """The object's pelvis and legs as joints of ``joint_map``."""
    settings = obj.foot_lock
    legs = []
    for leg in settings.legs:
        joint = joint_map.joint
        tail = joint_map.joint_names.index((leg.toe or leg.foot) + armature.TAIL_SUFFIX)
        if leg.toe:
            legs.append(Leg(leg.name, joint(leg.thigh), joint(leg.shin), joint(leg.foot), joint(leg.toe), tail))
        else:
            legs.append(Leg(leg.name, joint(leg.thigh), joint(leg.shin), joint(leg.foot), tail, None))
    return Rig(joint_map.joint(translation_bone(obj, settings.pelvis)), legs)


def motion_frames(action):
    start, end = frame_range(action)
    if end <= start:
        raise AdapterError(f"action {action.name!r} has a single frame ({start}): there is no motion to fix")
    return np.arange(start, end + 1)


def _refuse_driven_legs(obj):
    """A key on a driven channel would be overridden by the driver: say so instead. Only
    the bones the fix keys count (drivers above them are read through the evaluated scene)."""
    settings = obj.foot_lock
    keyed = [translation_bone(obj, settings.pelvis)] + _leg_bones(settings)[1:]
    driven = sources.driven_bones(obj, keyed)
    if driven:
        raise AdapterError(
            f"bone {driven[0]!r} is moved by a driver; Foot Lock keys the legs and the pelvis: remove the "
            "driver or pick undriven bones in the Legs panel"
        )


def _refuse_constrained_legs(obj, joint_map, bones):
    """The pose comes from the keys; bones that constraints move (a Rigify deform rig, an
    IK setup) would be solved from a pose Blender does not show. Say so instead."""
    for bone in bones:
        for name in joint_map.ancestors(bone):
            if name not in joint_map.constrained:  # the usual bone: no constraints to look through
                continue
            active = [c.name for c in obj.pose.bones[name].constraints if not c.mute and c.influence > 0.0]
            if active:
                raise AdapterError(
                    f"bone {name!r} is moved by constraints ({', '.join(active)}); Foot Lock works on keyed "
                    "motion: mute them where the keys alone pose the bone; on a control rig, pick each leg's IK "
                    "control and the body control in the Legs panel (Rigify's are found by themselves), or pick "
                    "unconstrained bones there"
                )


# --- contacts ---------------------------------------------------------------------------


def stored_contacts(obj, action, clip, bones=None, prop=armature.CONTACT_PROPERTY):
    """(L, F) contact curves as keyed, NaN rows where a leg has none; ``bones`` and
    ``prop`` name other curves (default: each leg's ``foot_contact``)."""
    rows = []
    for bone in clip.contact_bones if bones is None else bones:
        values = None if bone is None else armature.read_contact_curve(obj, action, bone, clip.frames, prop)
        rows.append(np.full(len(clip.frames), np.nan) if values is None else values)
    return np.array(rows)


def stored_heel_contacts(obj, action, clip):
    """(L, F) ``heel_contact`` curves as keyed, NaN rows where a leg has none."""
    return stored_contacts(obj, action, clip, _heel_bones(obj, clip), armature.HEEL_CONTACT_PROPERTY)


def _heel_bones(obj, clip):
    """Per leg the bone of its ``heel_contact`` curve: on a control rig the foot control."""
    if clip.controls is not None:
        return [bone if leg.toe else None for bone, leg in zip(clip.contact_bones, obj.foot_lock.legs)]
    return [heel_bone(leg) for leg in obj.foot_lock.legs]


def _curves(obj, clip):
    """(bone or None, property) of every contact curve: per leg the toe's, then the heel's."""
    return [(bone, armature.CONTACT_PROPERTY) for bone in clip.contact_bones] + [
        (bone, armature.HEEL_CONTACT_PROPERTY) for bone in _heel_bones(obj, clip)
    ]


def _curve_names(settings, rows):
    """What an animator calls the contact curves at ``rows`` (mask, :func:`_curves` order):
    "<leg> toe", then "<leg> heel"."""
    names = [f"{leg.name} {point}" for point in ("toe", "heel") for leg in settings.legs]
    return [name for name, chosen in zip(names, rows) if chosen]


def _animator_contacts(obj, actions, clip, overwrite):
    """(2L, F) contact curves an animator keyed or edited, in :func:`_curves` order (the
    toes', then the heels'), each from the first of ``actions`` that has it; NaN rows
    elsewhere (labelled again with the current settings), all NaN with ``overwrite``."""
    curves = _curves(obj, clip)
    rows = np.full((len(curves), len(clip.frames)), np.nan)
    if overwrite:
        return rows
    owners = [None] * len(curves)
    for action in actions:
        if action is not None:  # asked of the curves no action before it has
            unowned = [row for row, owner in enumerate(owners) if owner is None]
            edited = armature.animator_contact_curves(obj, action, [curves[row] for row in unowned])
            for row, mine in zip(unowned, edited):
                if mine:
                    owners[row] = action
    for row, ((bone, prop), owner) in enumerate(zip(curves, owners)):
        if owner is not None:
            rows[row] = armature.read_contact_curve(obj, owner, bone, clip.frames, prop)
    return rows


def label_clip(clip, settings, keyed=None):
    """(2L, F) contact labels of the clip, the toes' then the heels', piece by piece
    between :func:`~..solvers.foot_lock.cut_frames` (no contact on a cut's first frame);
    ``keyed``: see :func:`keyed_frames`."""
    heels, toes, _ = label_foot_contacts(clip.skeleton, clip.motion, clip.rig, UP, settings, keyed=keyed)
    return np.concatenate([toes, heels])


def keyed_frames(obj, action, clip):
    """The frames of ``clip`` (indices) where ``action`` keys the legs (on a control rig their
    controls), where those keys are sparse (hand-keyed animation): the solve labels the feet
    as the keys pose them (see :func:`~.armature.keyed_frames`). The body's keys do not
    count: a root keyed on every frame (baked from a path) under legs keyed by hand still
    swings the feet about between the legs' keys. None where the legs are keyed on every
    frame, or ``action`` is None."""
    if action is None:
        return None
    return armature.keyed_frames(obj, action, _keyed_legs(obj, clip), clip.frames)


def _keyed_legs(obj, clip):
    """The bones whose keys pose the legs: the leg bones, or on a control rig their controls."""
    if clip.controls is not None:
        return [follower.control for leg in clip.controls.legs for follower in leg.followers]
    return _leg_bones(obj.foot_lock)[1:]


def _source_keys(obj, source, clip):
    """:func:`keyed_frames` of what ``source`` plays: its action, or its NLA strips' keys
    where they play them (:func:`_strip_keys`), and the action on top of them."""
    if source.kind != sources.NLA:
        return keyed_frames(obj, source.action, clip)
    legs = _keyed_legs(obj, clip)
    played = [_strip_keys(obj, strip, legs) for track in source.tracks for strip in track.strips if not strip.mute]
    if source.action is not None:
        played.append(armature.key_frames(obj, source.action, legs))
    if any(keys is None for keys in played):
        return None
    return armature.frames_keyed(np.concatenate(played), clip.frames)


def _strip_keys(obj, strip, bones):
    """The scene frames (whole) at which an NLA ``strip`` plays its action's keys of
    ``bones``: its range, reversed or not, scaled, repeated, from its start. None where it
    plays no action of keys (a transition, a meta strip, see :func:`~.armature.key_frames`),
    or plays it in a time of its own (Animated Strip Time)."""
    if strip.type != "CLIP" or strip.action is None or strip.use_animated_time:
        return None
    keys = armature.key_frames(obj, strip.action, bones)
    if keys is None:
        return None
    start, end = strip.action_frame_start, strip.action_frame_end
    keys = keys[(keys >= start) & (keys <= end)]
    local = end - keys if strip.use_reverse else keys - start
    cycles = np.add.outer(np.arange(math.ceil(strip.repeat)) * (end - start), local).ravel()
    times = strip.frame_start + cycles * strip.scale
    return np.rint(times[times <= strip.frame_end + 1e-3])


@dataclass
class ContactsOutcome:
    action: object  # the action keyed
    written: list  # bones whose curves were keyed
    kept: list  # bones whose animator's curves were kept
    baked: bool  # the NLA strips were baked into ``action`` first


def detect_contacts(obj, scene=None, overwrite=False):
    """Label contacts (on the motion the viewport shows) and key them as ``foot_contact``
    and ``heel_contact`` curves on the active action; returns a :class:`ContactsOutcome`.
    Curves Foot Lock wrote itself are labelled again; an animator's are kept unless
    ``overwrite``.

    Strips played without an active action have no action whose frames are the scene's
    to key: they are baked first into the new action Remove Foot Sliding would make
    (``<strip action>.footlock``, every channel, the tracks muted and kept), the motion
    unchanged, so the curves are where Remove Foot Sliding reads, keeps and refreshes them."""
    settings = ensure_legs(obj)
    source = sources.motion_source(obj, motion_frames, follow_results=False)
    baking = source.kind == sources.NLA and source.action is None
    if baking:
        adopt_earlier_result(obj, source)
    else:
        editable_action(obj)
    clip, sampled = read_source_clip(obj, scene or bpy.context.scene, source)
    labels = label_clip(clip, contact_settings(settings), _source_keys(obj, source, clip))
    if baking:
        action = _new_result(obj, source, sampled, clip, replace=True)  # adopted: untouched, this object's alone
        sources.mute_tracks(source.tracks, action)
        results.stamp(obj, action)
    else:
        action = source.action
    curves, rows, kept = [], [], []
    every = _curves(obj, clip)
    for (bone, prop), values, edited in zip(every, labels, armature.animator_contact_curves(obj, action, every)):
        if bone is None:
            continue
        if edited and not overwrite:
            kept.append(bone)
            continue
        curves.append((bone, prop))
        rows.append(values)
    armature.write_contact_curves(obj, action, curves, clip.frames, rows)
    return ContactsOutcome(action, [bone for bone, _ in curves], kept, baking)


# --- remove foot sliding ----------------------------------------------------------------


@dataclass
class BakeOutcome:
    action: object
    result: object  # FootLockResult
    frames: int
    contact_frames: int  # leg-frames locked to the ground (the report's and the summary's)
    seconds: float
    contacts_written: list
    source: str = sources.KEYS  # how the motion was read: sources.KEYS, EVALUATED or NLA
    controls: control_rig.ControlKeys | None = None  # on a control rig: what keying its controls did
    name_note: str = ""  # which action kept the name the result was to have, and why (see _name_note)
    contacts_obeyed: list = field(default_factory=list)  # "<leg> toe" / "<leg> heel": curves taken as keyed


@compat.remembered_keys()  # the result's digest reads none of the keys read or written before it
@armature.remembered_bones()
def remove_sliding(obj, scene, progress=lambda fraction: None):
    """Lock the feet of the motion ``obj`` shows and bake it (see the operator for the
    behaviour). Everything that can fail is checked before the first write."""
    start_time = time.perf_counter()
    settings = ensure_legs(obj)
    source = sources.motion_source(obj, motion_frames, follow_results=not settings.in_place)
    if settings.in_place:
        if source.kind == sources.NLA:
            raise AdapterError(f"{obj.name!r} plays NLA strips: turn In Place off to bake them into a new action")
        editable_action(obj)
    else:
        adopt_earlier_result(obj, source)
    progress(0.05)
    candidates = followers.candidate_bones(obj, _leg_bones(settings))  # bones that may follow a foot
    clip, sampled = read_source_clip(obj, scene, source, also=candidates)
    progress(0.3)
    rows = _animator_contacts(obj, [source.result, source.action], clip, settings.overwrite_contacts)
    missing = np.isnan(rows).all(axis=1)  # labelled by the solve, with the current settings
    legs = len(rows) // 2  # the toes' rows, then the heels' (np.split's views, without its Python layers)
    contacts, heel_contacts = rows[:legs], rows[legs:]
    progress(0.4)
    # The solve finds where the clip jumps back and labels each take on its own; a loop,
    # whose last pose is its first (_is_loop), does not jump.
    looped = _is_loop(obj, source, clip)
    solve = loops.solve_loop if looped else remove_foot_sliding
    result = solve(
        clip.skeleton, clip.motion, clip.rig, UP, contacts=contacts,
        settings=solver_settings(settings), unit_scale=unit_scale(scene), heel_contacts=heel_contacts,
        keyed=_source_keys(obj, source, clip), first_frame=int(clip.frames[0]),
    )
    progress(0.7)
    joint_map = clip.joint_map
    if clip.controls is None:
        following = followers.keep_following(clip, result, candidates)
        if following:
            result.warnings.append(followers.followed_note(following))
        rotation_bones = [joint_map.joint_bone[j] for j in result.rotation_joints] + list(following)
        location_bones = [joint_map.joint_bone[j] for j in result.location_joints] + list(following)
        armature.check_writable(joint_map, result.motion, int(clip.frames[0]), rotation_bones, location_bones)
    else:
        rotation_bones = location_bones = [follower.control for follower in clip.controls.followers()]

    target, kept = (source.action, None) if settings.in_place else fresh_result(obj, source, sampled, clip)
    keyed_channels = armature.keyed_channels(obj, rotation_bones, location_bones)
    result.warnings += (_keys_left_outside(source) + _keys_between_frames(obj, source, clip, keyed_channels)
                        + _shown_at_rest(obj) + armature.ready_to_key(obj, source.action, target, keyed_channels)
                        + edited_result_kept(kept, target))
    keyed = None
    if clip.controls is None:
        armature.key_motion(obj, target, joint_map, result.motion, int(clip.frames[0]), rotation_bones, location_bones)
    else:
        keyed = control_rig.key_controls(
            obj, scene, settings, target, clip.controls, clip.deform, result.motion, unit_scale(scene)
        )
        result.warnings.extend(keyed.warnings)
        result.after["control_residual_mm"] = keyed.residual_mm  # in the command line's report too
    # Digested now, while the result's curves are as listed (the contact curves written next
    # are left out of the digest; they would have the curves listed again).
    digest = None if settings.in_place else results.motion_digest(obj, target)
    # The animator sees (and can edit) what was locked, on the result.
    curves = _curves(obj, clip)
    new = [row for row, (bone, _) in enumerate(curves) if missing[row] and bone is not None]
    locked = np.concatenate([result.contacts, result.heel_contacts])[new]
    armature.write_contact_curves(obj, target, [curves[row] for row in new], clip.frames, locked)
    written = [curves[row][0] for row in new]
    if looped:  # curves the fix created loop like the rest
        cycles.keep_looping(obj, target, list(dict.fromkeys(rotation_bones + location_bones)))
    if source.tracks:
        sources.mute_tracks(source.tracks, target)
    if not settings.in_place:
        results.stamp(obj, target, digest)
    progress(1.0)
    outcome = BakeOutcome(
        target, result, len(clip.frames), int(np.count_nonzero(result.foot_contacts > 0.5)),
        time.perf_counter() - start_time, written, _read_from(source, clip), keyed,
        "" if settings.in_place else _name_note(obj, source, target, kept), _curve_names(settings, ~missing),
    )
    _store_report(settings.report, outcome)
    return outcome


def _read_from(source, clip):
    """Where the motion solved was read (a :data:`~.sources.KEYS`-like kind): a control rig's
    deformation skeleton is always sampled from the evaluated scene, whatever moves it."""
    return source.kind if clip.controls is None else sources.EVALUATED


def _is_loop(obj, source, clip):
    """A cycle is solved as a loop: an action marked cyclic, or whose last pose is its first.
    What the NLA plays over a range of strips is not one cycle."""
    if source.kind == sources.NLA:
        return False
    if cycles.is_marked_cyclic(obj, source.action):
        return True
    if not loops.is_closed_loop(clip.skeleton, clip.motion, clip.rig, UP):
        return False
    return not clip.legs_only or _every_bone_closes(obj, source.action, clip)


def _every_bone_closes(obj, action, clip):
    """Whether the last pose of every bone is its first, not only the legs' (a clip read
    :func:`read_clip` ``legs_only`` that loops there): its first and last frames read whole."""
    skeleton, motion, joint_map = armature.read_poses(obj, action, clip.frames[[0, -1]], _tail_bones(obj.foot_lock),
                                                      object_keys=True)
    return loops.ends_meet(skeleton, motion, _rig(obj, joint_map), UP)


def _keys_left_outside(source):
    """A warning for an action whose manual frame range (the clip it plays) is narrower than
    its keys: only the range is fixed, and the fix meets the keys outside it abruptly."""
    action = source.action
    if source.kind == sources.NLA or not action.use_frame_range or action.use_cyclic:  # a loop plays its range alone
        return []
    start, end = frame_range(action)
    first, last = (round(frame) for frame in action.curve_frame_range)
    edges = [str(start)] * (first < start) + [str(end)] * (last > end)
    if not edges:
        return []
    return [f"{action.name!r} plays its manual frame range {start}-{end} of keys {first}-{last}: only the range is "
            f"fixed and the keys outside it are left as they were, so the motion jumps at frame {' and '.join(edges)} "
            "if the scene plays past it"]


# Frames a key may lie off a whole frame and still be on it: Blender's importers key a 120 fps
# file on frames 0.0013 off (its rate held as 120 / 1.000004), which moves nothing between frames.
ON_FRAME = 0.01


def _keys_between_frames(obj, source, clip, keyed):
    """A warning where bones that carry the feet keep keys between frames the fix leaves as
    they are (a clip retimed to the scene's rate, as the BVH importer's Scale FPS does): the
    fix is solved and keyed on whole frames, where the feet hold; between them (motion blur,
    slow-motion playback) those bones follow their own keys and the feet move with them.
    ``keyed``: the channels the fix keys (see :func:`~.armature.keyed_channels`)."""
    if source.action is None or clip.controls is not None:
        return []
    keyed_channels = {(bone, prop) for bone, prop, _ in keyed}
    carrying = armature.with_ancestors(obj.data.bones, _leg_bones(obj.foot_lock))  # every bone a foot hangs from
    left = [(bone, prop, width) for bone in carrying for prop, width in armature.BONE_CHANNELS
            if (bone, prop) not in keyed_channels]
    curves = armature.channel_fcurves(obj, source.action, left)
    rows = compat.key_frame_rows(curves)
    frames = np.concatenate(rows or [np.empty(0)])  # one test for all: the keys rarely lie between frames
    start, end = int(clip.frames[0]), int(clip.frames[-1])
    between = (np.abs(frames - np.round(frames)) > ON_FRAME) & (frames > start) & (frames < end)
    if not between.any():
        return []
    bone_of = {armature.bone_data_path(bone): bone for bone in carrying}
    curve_of_key = np.repeat(np.arange(len(rows)), [len(row) for row in rows])
    bones = dict.fromkeys(bone_of[curves[curve].data_path.rpartition(".")[0]] for curve in curve_of_key[between])
    return [f"{', '.join(map(repr, bones))} keep keys between frames (a clip retimed to the scene's frame rate?): "
            "the fix holds the feet on every frame, but between frames (motion blur, slow-motion playback) those "
            "bones follow their own keys and the feet move with them; bake the action on whole frames first "
            "(Bake Action) to fix it there too"]


def _shown_at_rest(obj):
    """A warning for an armature set to show its Rest Position: the fix is made from its
    animation all the same, but the viewport shows none of it."""
    if obj.data.pose_position != "REST":
        return []
    return [f"{obj.data.name!r} shows its Rest Position: the fix is baked from its animation, but the viewport shows "
            "the rest pose until Pose Position is set again (Armature properties > Skeleton)"]


def fresh_result(obj, source, sampled, clip):
    """The new action for the fix (:func:`_new_result`), and the earlier result it left as
    it is because an animator changed it beyond its contact curves (a polished key, a
    channel added), else None. One another object plays, or one that holds another
    object's fix (the slot it fixed in an action both play, as a glTF with two armatures
    imports), is left to that object, as it is: nothing to tell. Nothing plays the one left
    once the fix is assigned, so it gets a fake user: it is still saved."""
    earlier = source.result
    alone = earlier is not None and results.played_only_by(obj, earlier)
    own = alone and results.made_for(obj, earlier)
    untouched = own and results.untouched(obj, earlier)
    fresh = _new_result(obj, source, sampled, clip, replace=untouched)
    if alone and not untouched:
        earlier.use_fake_user = True
        return fresh, earlier if own else None
    return fresh, None


def edited_result_kept(kept, fresh):
    """The warning (a list) that :func:`fresh_result` kept the earlier result ``kept`` (or
    None) an animator changed, beside ``fresh``."""
    if kept is None:
        return []
    return [f"{kept.name!r} was changed since Foot Lock made it: kept as it is, the new fix is {fresh.name!r}"]


def _name_note(obj, source, fresh, kept):
    """Which action kept the name ``fresh`` was to have (``<action>.footlock``), and why; ""
    where ``fresh`` has it, or where the action that kept it is ``kept``, which a warning
    names already."""
    wanted = _result_name(obj, source)
    holder = bpy.data.actions.get(wanted)
    if fresh.name == wanted or holder is None or holder == kept:
        return ""
    reason = results.why_not_replaced(obj, source, holder)
    return f"{wanted!r} kept its name: {reason}" if reason else ""


def _new_result(obj, source, sampled, clip, replace):
    """A new action for the fix, assigned (the source stays as it was): a copy of the
    action, or, from the NLA, every channel baked. With ``replace``, it takes the place of
    the earlier result of the same source (its name and users); from either, it keeps the
    contact curves an animator edited."""
    if source.kind == sources.NLA:
        fresh = bpy.data.actions.new(_result_name(obj, source))
        compat.assign_action(obj, fresh)
        armature.bake_pose(obj, fresh, sampled, with_object=sources.nla_moves_object(obj, source))
    else:
        fresh = compat.copy_action(obj, source.action, _result_name(obj, source))
    if source.action is not None:  # a rerun plays it again (from the NLA: on top of the tracks)
        sources.record_source(fresh, source.action, source.suffix)
    if source.result is not None:
        _carry_edited_contacts(obj, source.result, fresh, clip)
        if replace:
            _replace(source.result, fresh)
    return fresh


def _result_name(obj, source):
    """``<action>.footlock`` (the suffix of the source's tool); from the NLA without an
    action, after the first strip's action."""
    base = source.action if source.action is not None else _first_strip_action(source.tracks)
    return compat.suffixed_name(base.name if base else obj.name, source.suffix)


def adopt_earlier_result(obj, source):
    """Run from a source rather than from its result, the fix still refreshes Foot Lock's
    untouched ``<source>.footlock`` (its edited contact curves obeyed and kept; Root Motion's
    ``.rootmotion`` alike) instead of adding a ``.footlock.001`` beside it; any other action
    of that name stays."""
    if source.result is None:
        source.result = results.earlier_result(obj, source, _result_name(obj, source))


def _first_strip_action(tracks):
    return next((strip.action for track in tracks for strip in track.strips if strip.action), None)


def _carry_edited_contacts(obj, result, fresh, clip):
    """The contact curves an animator edited on the earlier ``result``, copied to ``fresh``."""
    curves = _curves(obj, clip)
    edited = [curve for curve, mine in zip(curves, armature.animator_contact_curves(obj, result, curves)) if mine]
    rows = [armature.read_contact_curve(obj, result, bone, clip.frames, prop) for bone, prop in edited]
    armature.write_contact_curves(obj, fresh, edited, clip.frames, rows, stamp=False)


def _replace(result, fresh):
    """``fresh`` takes the place of the earlier ``result``: its name and its users."""
    name = result.name
    result.user_remap(fresh)
    bpy.data.actions.remove(result)
    fresh.name = name


def _store_report(report, outcome):
    result = outcome.result
    report.valid = True
    report.action = outcome.action.name
    report.frames = outcome.frames
    report.contact_frames = outcome.contact_frames
    report.slide_before = result.before["toe_slide_cm_s"]
    report.slide_after = result.after["toe_slide_cm_s"]
    report.skate_before = result.before["skate_ratio"]
    report.skate_after = result.after["skate_ratio"]
    report.pelvis_shift = result.after["pelvis_deviation_cm"]
    report.ground_slide_before = result.before["ground_slide_cm_s"]
    report.ground_slide_after = result.after["ground_slide_cm_s"]
    report.seconds = outcome.seconds
    report.source = outcome.source
    report.controls = "" if outcome.controls is None else outcome.controls.kind
    report.control_residual = 0.0 if outcome.controls is None else outcome.controls.residual_mm
    report.warnings = "\n".join(result.warnings)
    report.contacts_obeyed = ", ".join(outcome.contacts_obeyed)


def summary(outcome):
    """One line for the status bar."""
    before, after = outcome.result.before, outcome.result.after
    controls = outcome.controls
    keyed_on = "" if controls is None else f", keyed on the {controls.kind} controls (residual {controls.residual_mm:.2f} mm)"
    named = f" ({outcome.name_note})" if outcome.name_note else ""  # why not <action>.footlock
    obeyed = f" (your keys obeyed on {', '.join(outcome.contacts_obeyed)})" if outcome.contacts_obeyed else ""
    return (
        f"{outcome.frames} frames baked to {outcome.action.name!r}{named} (motion read from the {outcome.source}"
        f"{keyed_on}); "
        f"{outcome.contact_frames} contact frames locked{obeyed}; "
        f"toe slide {before['toe_slide_cm_s']:.1f} -> {after['toe_slide_cm_s']:.2f} cm/s "
        f"(feet on the ground {before['ground_slide_cm_s']:.1f} -> {after['ground_slide_cm_s']:.1f} cm/s), "
        f"skating {100 * before['skate_ratio']:.1f}% -> {100 * after['skate_ratio']:.1f}%"
    )
