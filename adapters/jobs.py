"""What the buttons (and the command line) do, on a Blender armature object.

Each job reads the armature through :mod:`.armature`, runs the numpy solver core and
writes back only what it solves. Every expected failure is an
:class:`~.errors.AdapterError`, :class:`~..solvers.kinematics.SolverInputError` or
:class:`~..solvers.leg_detection.LegDetectionError` raised *before* anything is written, so a
failed job changes nothing.
"""

import time
from dataclasses import dataclass

import numpy as np

from ..solvers.foot_lock import label_contacts, remove_foot_sliding
from ..solvers.leg_detection import detect_legs
from ..solvers.rig import Leg, Rig
from . import armature, control_rig
from .errors import AdapterError
from .properties import contact_settings, solver_settings

UP = (0.0, 0.0, 1.0)  # Blender's world is Z-up
FOOTLOCK_SUFFIX = ".footlock"


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


# --- legs -------------------------------------------------------------------------------


@dataclass
class LegBoneNames:
    """One detected leg by bone names; ``toe`` is "" where the rig has no toe bone."""

    side: str
    thigh: str
    shin: str
    foot: str
    toe: str = ""


@dataclass
class DetectedLegs:
    pelvis: str
    legs: list[LegBoneNames]


def detect_leg_bones(obj):
    """The pelvis and legs of the armature, by bone name."""
    bones = list(obj.data.bones)
    if not bones:
        raise AdapterError(f"armature {obj.name!r} has no bones")
    world = np.array(obj.matrix_world, dtype=float)
    heads = np.array([bone.head_local for bone in bones], dtype=float) @ world[:3, :3].T + world[:3, 3]
    tails = np.array([bone.tail_local for bone in bones], dtype=float) @ world[:3, :3].T + world[:3, 3]
    index = {bone.name: i for i, bone in enumerate(bones)}
    parents = [index[bone.parent.name] if bone.parent else -1 for bone in bones]
    guess = detect_legs([bone.name for bone in bones], parents, heads, tails, up=UP)
    names = [bone.name for bone in bones]
    legs = [
        LegBoneNames(
            leg.side, names[leg.thigh], names[leg.shin], names[leg.foot], "" if leg.toe is None else names[leg.toe]
        )
        for leg in guess.legs
    ]
    return DetectedLegs(names[guess.pelvis], legs)


def store_legs(settings, detected):
    settings.pelvis = detected.pelvis
    settings.legs.clear()
    for leg in detected.legs:
        item = settings.legs.add()
        item.name, item.thigh, item.shin, item.foot, item.toe = leg.side, leg.thigh, leg.shin, leg.foot, leg.toe


def ensure_legs(obj):
    """The object's legs, detected and stored first if none are set up."""
    settings = obj.foot_lock
    if not settings.legs:
        store_legs(settings, detect_leg_bones(obj))
    _check_leg_bones(obj, settings)
    return settings


def _check_leg_bones(obj, settings):
    bones = obj.data.bones
    if settings.pelvis not in bones:
        raise AdapterError(f"pelvis bone {settings.pelvis!r} is not in {obj.name!r}: pick it in the Legs panel")
    for leg in settings.legs:
        for role in ("thigh", "shin", "foot"):
            if getattr(leg, role) not in bones:
                raise AdapterError(
                    f"leg {leg.name!r}: {role} bone {getattr(leg, role)!r} is not in {obj.name!r}; "
                    "pick it in the Legs panel or run Detect Legs"
                )
        if leg.toe and leg.toe not in bones:
            raise AdapterError(f"leg {leg.name!r}: toe bone {leg.toe!r} is not in {obj.name!r}")


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


def read_clip(obj, action):
    """The action over its frame range, with the object's legs as solver joints."""
    settings = obj.foot_lock
    start, end = frame_range(action)
    if end <= start:
        raise AdapterError(f"action {action.name!r} has a single frame ({start}): there is no motion to fix")
    tails = [leg.toe or leg.foot for leg in settings.legs]
    skeleton, motion, joint_map = armature.read_motion(obj, action, start, end, extra_tails=tails)
    solved = [leg.toe or leg.foot for leg in settings.legs] + [settings.pelvis]
    _refuse_constrained_legs(obj, joint_map, solved)
    joint_map.require_exact(solved)  # before anything is written: a failed job changes nothing
    legs = []
    for leg in settings.legs:
        joint = joint_map.joint
        tail = joint_map.joint_names.index((leg.toe or leg.foot) + armature.TAIL_SUFFIX)
        if leg.toe:
            legs.append(Leg(leg.name, joint(leg.thigh), joint(leg.shin), joint(leg.foot), joint(leg.toe), tail))
        else:
            legs.append(Leg(leg.name, joint(leg.thigh), joint(leg.shin), joint(leg.foot), tail, None))
    rig = Rig(joint_map.joint(translation_bone(obj, settings.pelvis)), legs)
    frames = np.arange(start, end + 1)
    return Clip(skeleton, motion, joint_map, rig, [contact_bone(leg) for leg in settings.legs], frames)


def read_solve_input(obj, scene, action):
    """The clip to solve: the legs' own keys, or on a control rig (Rigify, or controls picked
    in the Legs panel) the deformation skeleton as the rig evaluates it."""
    start, end = frame_range(action)
    frames = np.arange(start, end + 1)
    controls = control_rig.find_controls(obj, obj.foot_lock, action, frames)
    if controls is None:
        return read_clip(obj, action)
    if end <= start:
        raise AdapterError(f"action {action.name!r} has a single frame ({start}): there is no motion to fix")
    deform = control_rig.read_deform_clip(obj, scene, obj.foot_lock, frames)
    contact_bones = [leg.contact_bone for leg in controls.legs]
    return Clip(deform.skeleton, deform.motion, None, deform.rig, contact_bones, frames, controls, deform)


def _refuse_constrained_legs(obj, joint_map, bones):
    """The pose comes from the keys; bones that constraints move (a Rigify deform rig, an
    IK setup) would be solved from a pose Blender does not show. Say so instead."""
    for bone in bones:
        for name in joint_map.ancestors(bone):
            active = [c.name for c in obj.pose.bones[name].constraints if not c.mute and c.influence > 0.0]
            if active:
                raise AdapterError(
                    f"bone {name!r} is moved by constraints ({', '.join(active)}); Foot Lock works on keyed "
                    "motion: on a control rig, pick each leg's IK control and the body control in the Legs panel "
                    "(Rigify's are found by themselves), or pick unconstrained bones there"
                )


def unit_scale(scene):
    """Metres per Blender unit, for the reported figures."""
    return scene.unit_settings.scale_length if scene.unit_settings.system != "NONE" else 1.0


# --- contacts ---------------------------------------------------------------------------


def stored_contacts(obj, action, clip):
    """(L, F) contact curves as keyed, NaN rows where a leg has none."""
    rows = []
    for bone in clip.contact_bones:
        values = armature.read_contact_curve(obj, action, bone, clip.frames)
        rows.append(np.full(len(clip.frames), np.nan) if values is None else values)
    return np.array(rows)


def detect_contacts(obj, overwrite=False, scene=None):
    """Label contacts and key them as ``foot_contact`` curves; returns (written, kept) bone names."""
    settings = ensure_legs(obj)
    action = editable_action(obj)
    clip = read_solve_input(obj, scene or obj.users_scene[0], action)
    labels, _ = label_contacts(clip.skeleton, clip.motion, clip.rig, UP, contact_settings(settings))
    written, kept = [], []
    for bone, values in zip(clip.contact_bones, labels):
        if armature.has_contact_curve(obj, action, bone) and not overwrite:
            kept.append(bone)
            continue
        armature.write_contact_curve(obj, action, bone, clip.frames, values)
        written.append(bone)
    return written, kept


# --- remove foot sliding ----------------------------------------------------------------


@dataclass
class BakeOutcome:
    action: object
    result: object  # FootLockResult
    frames: int
    seconds: float
    contacts_written: list
    controls: control_rig.ControlKeys | None = None  # on a control rig: what keying its controls did


def remove_sliding(obj, scene, progress=lambda fraction: None):
    """Lock the feet of ``obj``'s action and bake it (see the operator for the behaviour)."""
    start_time = time.perf_counter()
    settings = ensure_legs(obj)
    action = editable_action(obj)
    progress(0.05)
    clip = read_solve_input(obj, scene, action)
    progress(0.3)
    contacts = stored_contacts(obj, action, clip)  # legs without a curve: NaN rows, labelled by the solve
    missing = np.isnan(contacts).all(axis=1)
    progress(0.4)
    result = remove_foot_sliding(
        clip.skeleton, clip.motion, clip.rig, UP, contacts=contacts,
        settings=solver_settings(settings), unit_scale=unit_scale(scene),
    )
    progress(0.7)
    joint_map = clip.joint_map
    written = [bone for bone, miss in zip(clip.contact_bones, missing) if miss]
    for bone in written:  # the animator sees (and can edit) what was locked
        armature.write_contact_curve(obj, action, bone, clip.frames, result.contacts[clip.contact_bones.index(bone)])
    new_action_name = None if settings.in_place else action.name + FOOTLOCK_SUFFIX
    keyed = None
    if clip.controls is None:
        target = armature.write_motion(
            obj, action, joint_map, result.motion, int(clip.frames[0]),
            rotation_bones=[joint_map.joint_bone[j] for j in result.rotation_joints],
            location_bones=[joint_map.joint_bone[j] for j in result.location_joints],
            new_action_name=new_action_name,
        )
    else:
        keyed = control_rig.key_controls(
            obj, scene, settings, action, clip.controls, clip.deform, result.motion, new_action_name, unit_scale(scene)
        )
        target = keyed.action
        result.warnings.extend(keyed.warnings)
        result.after["control_residual_mm"] = keyed.residual_mm  # in the command line's report too
    progress(1.0)
    outcome = BakeOutcome(target, result, len(clip.frames), time.perf_counter() - start_time, written, keyed)
    _store_report(settings.report, outcome)
    return outcome


def _store_report(report, outcome):
    result = outcome.result
    report.valid = True
    report.action = outcome.action.name
    report.frames = outcome.frames
    report.contact_frames = int(np.sum(result.contacts > 0.5))
    report.slide_before = result.before["toe_slide_cm_s"]
    report.slide_after = result.after["toe_slide_cm_s"]
    report.skate_before = result.before["skate_ratio"]
    report.skate_after = result.after["skate_ratio"]
    report.pelvis_shift = result.after["pelvis_deviation_cm"]
    report.seconds = outcome.seconds
    report.controls = "" if outcome.controls is None else outcome.controls.kind
    report.control_residual = 0.0 if outcome.controls is None else outcome.controls.residual_mm


def summary(outcome):
    """One line for the status bar."""
    before, after = outcome.result.before, outcome.result.after
    controls = outcome.controls
    keyed_on = "" if controls is None else f" (keyed on the {controls.kind} controls, residual {controls.residual_mm:.2f} mm)"
    return (
        f"{outcome.frames} frames baked to {outcome.action.name!r}{keyed_on}; "
        f"{int(np.sum(outcome.result.contacts > 0.5))} contact frames locked; "
        f"toe slide {before['toe_slide_cm_s']:.1f} -> {after['toe_slide_cm_s']:.2f} cm/s, "
        f"skating {100 * before['skate_ratio']:.1f}% -> {100 * after['skate_ratio']:.1f}%"
    )
