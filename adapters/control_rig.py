"""Remove Foot Sliding on a control rig: the fix keyed onto the controls animators use.

On Rigify, or on a rig of one's own with IK foot controls, constraints move the
deformation bones: their own channels say nothing. Here the deformation skeleton's
*evaluated* motion (sampled by :mod:`.evaluated`, the rig's constraints applied) is what
the solver reads, and the solved poses are keyed onto the controls that drive the legs:
a second writer beside :func:`.armature.write_motion`, which keys a plain rig's own bones.

Each keyed control follows one deformation bone: a foot IK control its foot, an FK control
its leg bone, the body control (Rigify's ``torso``) the pelvis. Its target is the solved
pose of that bone times the offset between control and bone, ``C* = D* @ inv(D) @ C`` (the
rest-pose offset wherever the rig holds it rigidly), turned into the control's own space
and rotation mode. After keying, the rig is evaluated again and the deformation toes'
distance from their solved positions is the residual reported; frames where a control
cannot take its leg there (stretch limits, a constraint switched off, an IK chain that
clamps) become a warning naming the control and the frames.
"""

import re
from dataclasses import dataclass, field

import numpy as np

from ..solvers import matrices
from ..solvers import quaternion as quat
from ..solvers import rotations as channels
from ..solvers.foot_lock import leg_length
from ..solvers.kinematics import Motion, Skeleton, forward_kinematics, inverse_kinematics_locals
from ..solvers.rig import Leg, Rig
from . import action_compat as compat
from .armature import bone_data_path, channel_values_at, key_channel, rotation_channel, with_ancestors
from .errors import AdapterError
from .evaluated import sample_pose
from .scene_time import playback_rate

RIGIFY, PANEL = "Rigify", "Legs panel"
IK, FK = "IK", "FK"
TIP_SUFFIX = ".tip"
# Rigify keeps each limb's switches on its "<thigh>_parent" bone: IK_FK 0 is IK, 1 is FK.
_IK_FK = "IK_FK"
# A deformation toe further than this share of the leg length from its solved position
# (about 1 cm on an adult) did not get where the fix needs it.
_UNREACHED = 0.012
# Controls evaluated further than this share of the leg length from their targets (0.1 mm
# on an adult) get their keys corrected, at most this many times.
_CONTROL_TOLERANCE = 1e-4
_CORRECTIONS = 2
_RIGIFY_NAME = re.compile(r"^(?:DEF|ORG)-(?P<base>.+?)(?P<side>[._-](?:L|R|Left|Right|l|r))?(?P<number>\.\d+)?$")


@dataclass
class Follower:
    """A control keyed to follow a deformation bone's solved pose."""

    control: str
    deform: str


@dataclass
class LegControls:
    leg: str
    mode: str  # IK or FK
    followers: list[Follower]
    contact_bone: str  # the foot control: carries the leg's foot_contact curve


@dataclass
class ControlRig:
    kind: str  # RIGIFY or PANEL
    legs: list[LegControls]
    body: Follower | None  # None: the pelvis keeps its keyed motion

    def followers(self):
        found = [follower for leg in self.legs for follower in leg.followers]
        return found + ([self.body] if self.body else [])


@dataclass
class DeformClip:
    """The deformation skeleton as evaluated, as solver joints; what keying needs later."""

    skeleton: Skeleton
    motion: Motion
    rig: Rig
    sample: object  # EvaluatedPose of the whole armature
    joint_of: dict  # deformation bone -> joint
    tips: list  # per leg: the joint of its locked point (toe head or foot tail)


@dataclass
class ControlKeys:
    """What keying the controls did, measured on the rig evaluated again."""

    action: object
    kind: str  # which control rig: RIGIFY or PANEL
    residual_mm: float  # mean distance of the deformation toes from their solved positions
    warnings: list = field(default_factory=list)


# --- which controls drive the legs ----------------------------------------------------------


def find_controls(obj, settings, action, frames):
    """The :class:`ControlRig` that drives ``obj``'s legs, or None for a rig whose legs are
    keyed directly. Controls set up in the Legs panel win; Rigify is recognised by itself."""
    if settings.body_control or any(leg.ik_control for leg in settings.legs):
        return _panel_controls(obj, settings)
    if obj.data.get("rig_id") is not None:
        return _rigify_controls(obj, settings, action, frames)
    return None


def _panel_controls(obj, settings):
    legs = []
    for leg in settings.legs:
        if not leg.ik_control:
            raise AdapterError(
                f"leg {leg.name!r} has no IK control: pick one in the Legs panel (or clear the others' "
                "to key the leg bones directly)"
            )
        _require_bone(obj, leg.ik_control, f"IK control of leg {leg.name!r}")
        legs.append(LegControls(leg.name, IK, [Follower(leg.ik_control, leg.foot)], leg.ik_control))
    body = None
    if settings.body_control:
        _require_bone(obj, settings.body_control, "body control")
        body = Follower(settings.body_control, settings.pelvis)
    return ControlRig(PANEL, legs, body)


def _require_bone(obj, name, role):
    if name not in obj.pose.bones:
        raise AdapterError(f"the {role}, {name!r}, is not a bone of {obj.name!r}: pick it in the Legs panel")


def _rigify_controls(obj, settings, action, frames):
    """Rigify's names: ``DEF-thigh.L`` is driven by ``foot_ik.L`` (IK) or ``thigh_fk.L``,
    ``shin_fk.L``, ``foot_fk.L`` (FK), switched by ``thigh_parent.L["IK_FK"]``; ``torso``
    carries the body. None where the legs are not a Rigify limb's."""
    bones = obj.pose.bones
    legs = []
    for leg in settings.legs:
        names = {role: _rigify_parts(getattr(leg, role)) for role in ("thigh", "shin", "foot", "toe")}
        if names["thigh"] is None or names["shin"] is None or names["foot"] is None:
            return None
        side = names["thigh"][1]
        prop_bone = f"{names['thigh'][0]}_parent{side}"
        if prop_bone not in bones or _IK_FK not in bones[prop_bone]:
            return None
        mode = _ik_fk_mode(obj, action, prop_bone, frames, leg.name)
        roles = ("thigh", "shin", "foot", "toe") if mode == FK else ("foot", "toe")
        suffix = "_fk" if mode == FK else "_ik"
        followers = [
            Follower(f"{names[role][0]}{suffix}{side}", getattr(leg, role))
            for role in roles
            if names[role] is not None and f"{names[role][0]}{suffix}{side}" in bones
        ]
        foot = f"{names['foot'][0]}{suffix}{side}"
        if foot not in bones:
            return None
        legs.append(LegControls(leg.name, mode, followers, foot))
    body = Follower("torso", settings.pelvis) if "torso" in bones else None
    return ControlRig(RIGIFY, legs, body)


def _rigify_parts(name):
    """(base, side) of a Rigify deformation or ORG bone name: ("thigh", ".L")."""
    match = _RIGIFY_NAME.match(name or "")
    return None if match is None else (match["base"], match["side"] or "")


def _ik_fk_mode(obj, action, prop_bone, frames, leg):
    """IK or FK from the limb's switch over the clip; a blend or a switch within the clip is
    refused (the controls to key would change from frame to frame)."""
    path = f'{bone_data_path(prop_bone)}["{_IK_FK}"]'
    fcurve = compat.find_fcurve(compat.channel_bag(obj, action), path, 0)
    values = np.atleast_1d(
        float(obj.pose.bones[prop_bone][_IK_FK]) if fcurve is None else compat.read_values(fcurve, frames)
    )
    if np.all(values <= 1e-3):
        return IK
    if np.all(values >= 1.0 - 1e-3):
        return FK
    raise AdapterError(
        f"leg {leg!r} is not fully in IK or FK ({prop_bone}[\"{_IK_FK}\"] {_first_mixed_frame(values, frames)}): "
        "set the switch to 0 (IK) or 1 (FK) for the whole clip"
    )


def _first_mixed_frame(values, frames):
    """Where a switch's ``values`` on ``frames`` (one value: the same on every frame) first
    stop being one mode, in words: the first frame between IK and FK, or, where every frame
    is one of the two, the first that differs from the clip's first."""
    blended = (values > 1e-3) & (values < 1.0 - 1e-3)
    if blended.any():
        first = np.argmax(blended)
        return f"is {values[first]:.3g}, between 0 and 1, at frame {int(frames[first])}"
    first = np.argmax(np.abs(values - values[0]) > 0.5)
    return f"changes from {round(values[0])} to {round(values[first])} at frame {int(frames[first])}"


# --- reading the evaluated deformation skeleton ---------------------------------------------


def read_deform_clip(obj, scene, settings, frames):
    """Sample the rig on ``frames`` and express its legs and pelvis as solver joints."""
    sample = sample_pose(obj, scene, frames)
    world = sample.world_pose()
    bones = obj.data.bones
    tips = [leg.toe or leg.foot for leg in settings.legs]
    chain = with_ancestors(bones, [*tips, settings.pelvis])
    joint_of = {name: j for j, name in enumerate(chain)}
    parents = [joint_of[bones[name].parent.name] if bones[name].parent else -1 for name in chain]
    columns = [sample.bone(name) for name in chain]
    matrices = world[:, columns]
    linear = matrices[..., :3, :3]
    grot = quat.from_matrix(linear / np.linalg.norm(linear, axis=-2, keepdims=True))
    gpos = matrices[..., :3, 3]
    # A joint at the tail of each leg's last bone: the toe tip, or on a rig without toe
    # bones the point that is locked.
    tip_points = np.stack(
        [(world[:, sample.bone(tip)] @ np.array([0.0, bones[tip].length, 0.0, 1.0]))[:, :3] for tip in tips], axis=1
    )
    names = chain + [tip + TIP_SUFFIX for tip in tips]
    parents += [joint_of[tip] for tip in tips]
    grot = np.concatenate([grot, grot[:, [joint_of[tip] for tip in tips]]], axis=1)
    gpos = np.concatenate([gpos, tip_points], axis=1)
    skeleton = Skeleton(names, parents)
    rot, pos = inverse_kinematics_locals(skeleton, grot, gpos)
    motion = Motion(rot, pos, playback_rate(scene))
    legs = []
    for k, leg in enumerate(settings.legs):
        tail = len(chain) + k
        hip, knee, ankle = joint_of[leg.thigh], joint_of[leg.shin], joint_of[leg.foot]
        legs.append(Leg(leg.name, hip, knee, ankle, *((joint_of[leg.toe], tail) if leg.toe else (tail, None))))
    tip_joints = [leg.toe for leg in legs]
    return DeformClip(skeleton, motion, Rig(joint_of[settings.pelvis], legs), sample, joint_of, tip_joints)


# --- keying the controls --------------------------------------------------------------------


def key_controls(obj, scene, settings, action, controls, clip, solved, unit_scale=1.0):
    """Key each control of ``controls`` to follow the solved motion ``solved`` of
    ``clip`` (location and rotation, every frame, in bulk) into ``action`` (the object's
    action: the fix's new ``<action>.footlock``, or the original In Place), then evaluate
    the rig again and measure (``unit_scale``: metres per Blender unit). Every other
    channel stays exactly as keyed.

    Where the rig evaluates a control elsewhere than keyed for (a mechanism bone between
    it and the control above it that does not follow rigidly), its keys are corrected by
    what was missed and the rig evaluated again, at most ``_CORRECTIONS`` times."""
    followers = _parents_first(obj, controls.followers())
    frames = clip.sample.frames
    _, solved_points = forward_kinematics(clip.skeleton, solved.rot, solved.pos)
    tolerance = _CONTROL_TOLERANCE * leg_length(solved_points, clip.rig)
    targets = _control_targets(obj, followers, clip, solved)
    keys = {follower.control: _basis_channels(obj, follower.control, targets, clip.sample) for follower in followers}
    bag = compat.channel_bag(obj, action, create=True)
    table = compat.fcurve_table(bag)
    _key_channels(obj, bag, table, keys, frames)
    again = read_deform_clip(obj, scene, settings, frames)
    for _ in range(_CORRECTIONS):
        if _control_error(targets, again.sample) <= tolerance:
            break
        keys = {control: _corrected(obj, control, targets[control], again.sample) for control in keys}
        _key_channels(obj, bag, table, keys, frames)
        again = read_deform_clip(obj, scene, settings, frames)
    return _measured(action, controls, clip, again, solved_points, unit_scale)


def _key_channels(obj, bag, table, keys, frames):
    """Write each control's location (F, 3) and rotation (F, 4) in its rotation mode."""
    for control, (location, quaternion) in keys.items():
        pose_bone = obj.pose.bones[control]
        prop, width = rotation_channel(pose_bone.rotation_mode)
        reference = channel_values_at(obj, table, control, prop, width, int(frames[0]))
        values = channels.quat_to_channel(pose_bone.rotation_mode, quaternion.T, reference)
        key_channel(bag, table, control, prop, frames, values)
        if not obj.data.bones[control].use_connect:  # Blender ignores a connected bone's location
            key_channel(bag, table, control, "location", frames, location.T)


def _control_error(targets, sample):
    """Largest distance of a control's evaluated head from its target (armature units)."""
    return max(
        float(np.linalg.norm(sample.pose[:, sample.bone(control), :3, 3] - target[:, :3, 3], axis=-1).max())
        for control, target in targets.items()
    )


def _corrected(obj, control, target, sample):
    """Channels that move ``control`` from where the rig evaluated it onto ``target``: the
    evaluated pose ``A = frame @ basis`` gives the frame the keys were missing."""
    bone, index = obj.data.bones[control], sample.bone(control)
    pose, basis = sample.pose[:, index], sample.basis[:, index]
    frame = pose[:, :3, :3] @ matrices.inverse(basis[:, :3, :3])
    along = frame if bone.use_local_location else frame @ matrices.inverse(np.array(bone.matrix_local)[:3, :3])
    location = basis[:, :3, 3] + (matrices.inverse(along) @ (target[:, :3, 3] - pose[:, :3, 3])[..., None])[..., 0]
    linear = matrices.inverse(frame) @ target[:, :3, :3]
    keyed_scale = np.linalg.norm(basis[:, :3, :3], axis=-2)
    return location, quat.from_matrix(linear / keyed_scale[:, None, :])


def _parents_first(obj, followers):
    return sorted(followers, key=lambda follower: len(obj.data.bones[follower.control].parent_recursive))


def _control_targets(obj, followers, clip, solved):
    """Armature-space target matrices (F, 4, 4) per control: its evaluated pose moved by
    the change the solve made to the deformation bone it follows."""
    grot, gpos = forward_kinematics(clip.skeleton, solved.rot, solved.pos)
    sample = clip.sample
    to_armature = matrices.affine_inverse(sample.world)
    targets = {}
    for follower in followers:
        joint = clip.joint_of[follower.deform]
        change = np.repeat(np.eye(4)[None], len(sample.frames), axis=0)
        solved_rot = quat.to_matrix(grot[:, joint])
        evaluated = sample.world @ sample.pose[:, sample.bone(follower.deform)]
        evaluated_rot = evaluated[:, :3, :3] / np.linalg.norm(evaluated[:, :3, :3], axis=-2, keepdims=True)
        change[:, :3, :3] = solved_rot @ evaluated_rot.transpose(0, 2, 1)
        change[:, :3, 3] = gpos[:, joint] - np.einsum("fij,fj->fi", change[:, :3, :3], evaluated[:, :3, 3])
        control_world = sample.world @ sample.pose[:, sample.bone(follower.control)]
        targets[follower.control] = to_armature @ change @ control_world
    return targets


def _basis_channels(obj, control, targets, sample):
    """Location (F, 3) and rotation (F, 4) channels that put ``control`` at its target,
    under its parent as the solve moves it (a keyed control above it moves it too).

    Blender poses a bone as ``frame @ basis`` with ``frame = parent_pose @
    inv(parent_rest) @ rest``; with 'Local Location' off (Rigify's controls) the location
    is taken along the parent's axes instead of the bone's own."""
    bone = obj.data.bones[control]
    if not bone.use_inherit_rotation:
        raise AdapterError(
            f"control {control!r} does not inherit rotation, which Foot Lock cannot key yet: switch "
            "'Inherit Rotation' on or key the leg bones directly"
        )
    rest = np.array(bone.matrix_local, dtype=float)
    parent_frame = np.broadcast_to(np.eye(4), targets[control].shape)
    if bone.parent is not None:
        parent = bone.parent
        moved_by = next((above.name for above in [parent, *parent.parent_recursive] if above.name in targets), None)
        parent_pose = sample.pose[:, sample.bone(parent.name)]
        if moved_by is not None:  # follows a keyed control: moves as that control is moved
            parent_pose = targets[moved_by] @ matrices.affine_inverse(sample.pose[:, sample.bone(moved_by)]) @ parent_pose
        parent_frame = parent_pose @ matrices.affine_inverse(np.array(parent.matrix_local, dtype=float))
    frame = parent_frame @ rest
    target = targets[control]
    linear = matrices.inverse(frame[:, :3, :3]) @ target[:, :3, :3]
    along = frame[:, :3, :3] if bone.use_local_location else parent_frame[:, :3, :3]
    location = (matrices.inverse(along) @ (target[:, :3, 3] - frame[:, :3, 3])[..., None])[..., 0]
    keyed_scale = np.linalg.norm(sample.basis[:, sample.bone(control), :3, :3], axis=-2)
    return location, quat.from_matrix(linear / keyed_scale[:, None, :])


# --- measuring what the controls did -------------------------------------------------------------


def _measured(action, controls, clip, again, solved_points, unit_scale):
    """The deformation toes as evaluated with the new keys (``again``) against their solved
    positions: the mean residual, and a warning per leg for the frames it misses."""
    _, reached = forward_kinematics(again.skeleton, again.motion.rot, again.motion.pos)
    distance = np.linalg.norm(reached[:, again.tips] - solved_points[:, clip.tips], axis=-1)  # (F, L)
    size = leg_length(solved_points, clip.rig)
    # Without a body control the pelvis keeps its keyed motion, and a leg may not reach where
    # the fix moved the pelvis to let it: that, not the leg's own settings, is then the likely cause.
    advice = ("no Body Control is picked, so the pelvis the fix moves is not keyed: pick the control that carries "
              "the hips in the Legs panel" if controls.body is None
              else "check its stretch limits, constraints and IK settings")
    warnings = []
    for k, leg in enumerate(controls.legs):
        off = distance[:, k] > _UNREACHED * size
        if off.any():
            warnings.append(
                f"control {leg.contact_bone!r} cannot take leg {leg.leg!r} where the fix needs it on frames "
                f"{_frame_ranges(clip.sample.frames, off)} (up to {100 * unit_scale * distance[off, k].max():.1f} "
                f"cm off): {advice}"
            )
    return ControlKeys(action, controls.kind, float(1000.0 * unit_scale * distance.mean()), warnings)


def _frame_ranges(frames, mask):
    """"12-30, 45" for the frames where ``mask`` holds."""
    inside = np.concatenate(([False], mask, [False])).astype(int)
    edges = np.flatnonzero(np.diff(inside))
    spans = [(frames[a], frames[b - 1]) for a, b in zip(edges[::2], edges[1::2])]
    return ", ".join(f"{first}" if first == last else f"{first}-{last}" for first, last in spans)
