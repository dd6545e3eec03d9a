"""Armature + action <-> the solver's Skeleton + Motion, and the foot-contact curves.

Blender poses a bone as ``parent_pose @ inv(parent.matrix_local) @ bone.matrix_local @
matrix_basis`` (rest matrices in armature space, ``matrix_basis`` from the location /
rotation / scale channels), and the armature object puts the whole pose into the world
with ``matrix_world``. The solver's :class:`~..solvers.kinematics.Motion` wants each joint
relative to its parent joint, in world space and world units. Here that conversion is
done for every frame at once from the action's F-curves, in numpy, without stepping the
scene through the frames.

Scale: the object's uniform scale and the bones' uniform pose scale are folded into the
joints' translations (a joint's ``pos`` is in world units). Non-uniform scale, which the
solver's rotation + translation joints cannot express, is refused with
:class:`~.errors.AdapterError`.
"""

import operator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

import bpy
import numpy as np

from ..solvers import matrices
from ..solvers import quaternion as quat
from ..solvers import rotations as channels
from ..solvers.kinematics import Motion, Skeleton
from . import action_compat as compat
from .errors import AdapterError
from .scene_time import playback_rate

CONTACT_PROPERTY = "foot_contact"
HEEL_CONTACT_PROPERTY = "heel_contact"  # on the foot bone: its head, the ankle, is the heel pivot
CONTACT_PATHS = tuple(f'["{prop}"]' for prop in (CONTACT_PROPERTY, HEEL_CONTACT_PROPERTY))  # their curves' path ends
_CONTACT_DESCRIPTIONS = {
    CONTACT_PROPERTY: "Foot contact: 1 where the ball of the foot (the toe bone's head) is planted and locked, "
    "0 where it moves freely",
    HEEL_CONTACT_PROPERTY: "Heel contact: 1 where the heel (the foot bone's head) is planted and locked, "
    "0 where it moves freely",
}
TAIL_SUFFIX = ".tail"

_ROTATION_CHANNEL = {"QUATERNION": ("rotation_quaternion", 4), "AXIS_ANGLE": ("rotation_axis_angle", 4)}
_EULER_CHANNEL = ("rotation_euler", 3)
# Every transform channel a pose bone can be keyed on, with its width (its rotation in any mode).
BONE_CHANNELS = (("location", 3), _EULER_CHANNEL, *_ROTATION_CHANNEL.values(), ("scale", 3))
# An object's own transform channels, in a fixed order (the preview lists their values).
OBJECT_TRANSFORMS = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                     "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale")
_OBJECT_PATHS = frozenset(OBJECT_TRANSFORMS)  # looked up by hash: a click asks of 96 curves' paths
_OBJECT_GROUP = "Object Transforms"  # Blender's own group for an object's channels
_SCALE_TOLERANCE = 1e-4  # relative: float32 keys and Rigify helpers carry noise below this


@dataclass
class JointMap:
    """Which joint is which bone, and what :func:`write_motion` needs to go back.

    Rest transforms are each joint's frame in its parent joint's frame at rest, in
    armature units (for a root bone: in armature space; for a ``.tail`` joint: the tail in
    its bone's frame). ``world_rot`` / ``world_pos`` / ``world_scale`` are the object's
    ``matrix_world`` per frame (constant unless the object travels). ``parent_scale`` is,
    per frame and joint, the world length of one armature unit in the parent joint's frame
    (object scale times the ancestors' pose scale; for a root: the object scale).
    """

    object_name: str
    joint_names: list
    joint_bone: list  # bone name per joint (a tail joint: its bone)
    is_tail: np.ndarray  # (n,) bool
    parents: np.ndarray  # (n,) int, -1 for roots
    rotation_modes: dict  # bone name -> rotation_mode
    connected: dict  # bone name -> use_connect (location channels have no effect)
    rest_rot: np.ndarray  # (n, 4)
    rest_pos: np.ndarray  # (n, 3)
    world_rot: np.ndarray  # (F, 4) rotation of matrix_world
    world_pos: np.ndarray  # (F, 3) translation of matrix_world
    world_scale: np.ndarray  # (F,) uniform scale of matrix_world
    parent_scale: np.ndarray  # (F, n)
    frame_start: int
    unsupported: dict = field(default_factory=dict)  # bone -> why its pose is not plain FK
    constrained: tuple = ()  # bones with constraints: Blender's evaluated pose may differ
    unturned: bool = False  # the object neither turns nor scales on any frame (``world_rot`` all identity)

    @property
    def object_pos(self):
        """Where the object is on the first frame."""
        return self.world_pos[0]

    @property
    def frames(self):
        return self.parent_scale.shape[0]

    @property
    def frame_end(self):
        return self.frame_start + self.frames - 1

    def joint(self, bone_name):
        """Joint index of a bone (not of a ``.tail`` joint)."""
        try:
            index = self.joint_names.index(bone_name)
        except ValueError:
            raise AdapterError(f"bone {bone_name!r} is not in armature {self.object_name!r}") from None
        if self.is_tail[index]:
            raise AdapterError(f"{bone_name!r} is a tail point, not a bone")
        return index

    def ancestors(self, bone_name):
        """The bone and all its ancestors, as bone names."""
        joint = self.joint(bone_name)
        chain = []
        while joint >= 0:
            chain.append(self.joint_bone[joint])
            joint = self.parents[joint]
        return chain

    def require_exact(self, bone_names):
        """Raise :class:`AdapterError` when the pose of one of ``bone_names`` does not follow
        from the channels by plain forward kinematics (see ``unsupported``)."""
        if not self.unsupported:  # the usual rig: only the bones' names to check
            for bone in bone_names:
                self.joint(bone)
            return
        for bone in bone_names:
            for name in self.ancestors(bone):
                if name in self.unsupported:
                    raise AdapterError(
                        f"bone {name!r} {self.unsupported[name]}, which Foot Lock does not support "
                        f"(it moves {bone!r}); change that setting in its Bone properties (re-keying what that changes) "
                        "or pick other bones in the Legs panel"
                    )


def bone_data_path(bone_name):
    return f'pose.bones["{bpy.utils.escape_identifier(bone_name)}"]'


def contact_data_path(bone_name, prop=CONTACT_PROPERTY):
    return f'{bone_data_path(bone_name)}["{prop}"]'


def rotation_channel(mode):
    """The rotation property a bone in rotation ``mode`` is keyed on, and its width:
    ``("rotation_quaternion", 4)``, ``("rotation_axis_angle", 4)`` or ``("rotation_euler", 3)``."""
    return _ROTATION_CHANNEL.get(mode, _EULER_CHANNEL)


# --- reading ----------------------------------------------------------------------------


def with_ancestors(bones, names):
    """The bones ``names`` and their ancestors, parents first (``bones``: an armature's). Each
    bone's depth is counted on the walk up the parent indices of :func:`bone_hierarchy` (read
    once a job) that finds it, not asked of Blender again (its ``parent_recursive``, a new
    list of bones each, or its ``parent``, a new struct each)."""
    _, every, parents = bone_hierarchy(bones.id_data)
    index_of = {name: index for index, name in enumerate(every)}
    depth = {}  # bone name -> how many ancestors it has
    for name in names:
        chain = []  # the bones walked up from ``name``, not met before
        bone = index_of[name]
        while bone >= 0 and (bone_name := every[bone]) not in depth:
            chain.append(bone_name)
            bone = parents[bone]
        above = -1 if bone < 0 else depth[bone_name]  # the depth of the bone the walk stopped at
        for below, walked in enumerate(reversed(chain), start=1):
            depth[walked] = above + below
    return sorted(depth, key=lambda name: (depth[name], name))


# Within ``remembered_bones()``: {armature session_uid: its bone_hierarchy}, else None.
_hierarchies = None


@contextmanager
def remembered_bones():
    """Each armature's :func:`bone_hierarchy` is read once in here (one job: its bones are
    not edited while it runs; a click read it for the legs, the followers and the read).
    Usable as a decorator."""
    global _hierarchies
    outer = _hierarchies
    if _hierarchies is None:
        _hierarchies = {}
    try:
        yield
    finally:
        _hierarchies = outer


def bone_hierarchy(armature):
    """The armature's bones with every parent before its children (as Blender lists them,
    depth first: its bone iterator walks each bone's children, in order, right after the
    bone), their names and each one's parent index (-1 for a root). The parents are found
    by the bones themselves (Blender's structs hash and compare by address), not by reading
    each parent's name. Not to be changed: within :func:`remembered_bones` every caller
    shares them."""
    if _hierarchies is None:
        return _bone_hierarchy(armature)
    uid = armature.session_uid
    known = _hierarchies.get(uid)
    if known is None:
        known = _hierarchies[uid] = _bone_hierarchy(armature)
    return known


def _bone_hierarchy(armature):
    bones = list(armature.bones)
    index_of = {bone: i for i, bone in enumerate(bones)}
    return bones, armature.bones.keys(), [index_of.get(bone.parent, -1) for bone in bones]


def _object_transforms(obj, world, frames, unturned=None):
    """Rotations (F, 4) wxyz, translations (F, 3) and uniform scales (F,) of the object's
    world matrices (F, 4, 4), refusing the frames the solver cannot express; ``unturned``,
    :func:`_unturned` of them where the caller has it."""
    if _unturned(world) if unturned is None else unturned:  # most armatures: the numbers below, without their cost
        rotation = np.empty((len(world), 4))
        rotation[:] = quat.IDENTITY
        return rotation, world[:, :3, 3].copy(), np.ones(len(world))
    linear = world[:, :3, :3]
    scales = _column_lengths(linear)
    scale = scales.mean(axis=1)
    degenerate = ~np.isfinite(world).all(axis=(1, 2)) | (scale <= 1e-12)
    _refuse_first(degenerate, frames, lambda frame: f"object {obj.name!r} is scaled to zero (or not a number) at "
                  f"frame {frame}: Foot Lock needs the armature visible on every frame")
    uneven = np.ptp(scales, axis=1) > _SCALE_TOLERANCE * scale
    # As with a mirror, applying the scale would scale the rest but not the keyed translations.
    _refuse_first(uneven, frames, lambda frame: f"object {obj.name!r} is scaled non-uniformly (its own scale or a "
                  f"parent's) at frame {frame}, which Foot Lock cannot solve: give that scale the same value on all "
                  "three axes, run Foot Lock, then set it back (planted feet stay planted if it does not move); "
                  "do not apply the scale: that breaks the animation")
    rotation = linear / scale[:, None, None]
    mirrored = matrices.cofactors(rotation)[1] < 0.0
    if mirrored.any():
        raise AdapterError(_mirror_refusal(obj, int(frames[np.argmax(mirrored)])))
    sheared = np.abs(rotation.transpose(0, 2, 1) @ rotation - np.eye(3)).max(axis=(1, 2)) > 1e-4
    _refuse_first(sheared, frames, lambda frame: f"object {obj.name!r} is sheared (a parent's non-uniform scale "
                  f"turned under it) at frame {frame}, which Foot Lock cannot solve: give that parent's scale the same "
                  "value on all three axes, run Foot Lock, then set it back")
    return quat.from_matrix(rotation), world[:, :3, 3].copy(), scale


def _mirror_refusal(obj, frame):
    """Why ``obj``, mirrored on ``frame``, is refused: it names the objects whose own
    negative scale mirrors it and gives advice that keeps the motion. Applying the scale
    does not: it mirrors the bones' rest but not their keyed rotations, and the body flies
    apart (bones move up to 1.8 m on the CMU walk)."""
    carriers = _negative_scales(obj)
    if carriers == [obj.name]:
        by, fix, mirror = "its negative scale", "set its scale positive", repr(obj.name)
    elif carriers:
        names = ", ".join(repr(name) for name in carriers)
        by, fix, mirror = f"the negative scale of {names}", f"set the scale of {names} positive", names
    else:  # not mirrored as things stand now: a scale keyed negative on some frames, or a parent inverse
        by, fix, mirror = "a negative scale, its own or a parent's", "set that scale positive", "the mirror"
    # Mirrored back, a planted foot stays planted only if the mirror itself stands still:
    # a mirror that travels reflects the travel too, and the feet slide by twice its part
    # along the mirrored axis.
    return (f"object {obj.name!r} is mirrored by {by} at frame {frame}, which Foot Lock cannot solve: {fix}, "
            f"run Foot Lock, then make it negative again (planted feet stay planted if {mirror} does not move); "
            "do not apply the scale: that breaks the animation")


def _negative_scales(obj):
    """Names of ``obj`` and its parents whose own transform, as it is now, has a negative
    scale (an odd number of them mirrors ``obj``)."""
    return [item.name for item in object_ancestors(obj) if item.matrix_basis.is_negative]


def object_ancestors(obj):
    """``obj`` and its parents up to the top."""
    while obj is not None:
        yield obj
        obj = obj.parent


def _unturned(world):
    """Whether world matrices (F, 4, 4) neither turn nor scale the object, their
    translations all numbers."""
    return bool((world[:, :3, :3] == np.eye(3)).all() and np.isfinite(world[:, :3, 3]).all())


def _column_lengths(linear):
    """Lengths (..., 3) of the columns of matrices (..., 3, 3): ``np.linalg.norm(linear,
    axis=-2)`` term by term, the same sums (same bits) in half the time."""
    rows = [linear[..., i, :] for i in range(3)]
    return np.sqrt(rows[0] * rows[0] + rows[1] * rows[1] + rows[2] * rows[2])


def _refuse_first(bad, frames, message):
    """Refuse with ``message(frame)`` at the first of the ``frames`` that is ``bad``. A
    function, not a template: an object's name may hold braces."""
    if bad.any():
        raise AdapterError(message(int(frames[np.argmax(bad)])))


def _channel_values(obj, layout, order, modes, table, frames):
    """Location (3, J, F), rotation (4, J, F; Euler rows 0-2) and scale (3, J, F) channel
    values of the joint bones on ``frames``: keyed values where an unmuted F-curve is (all
    read together, :func:`~.action_compat.read_curve_rows`), the pose bone's current value
    elsewhere. Laid out (component, bone, frame): each F-curve fills one contiguous row.
    Every bone's keys are read (and refused where they are not numbers), not only the joints'.
    ``order``: each bone's index in the pose bones (see :func:`_pose_bones`)."""
    every = layout.every
    current = _current_channels(obj, layout.connected, order, modes)  # (10, B): rows as below
    rows, columns, curves = _keyed_channels(layout.names, layout.connected, modes, table)
    joint_of = np.full(len(every), -1)
    joint_of[layout.members] = np.arange(len(layout.bones))
    joints = joint_of[columns]
    kept = joints >= 0
    keyed, finite = compat.read_curve_rows(curves, frames, np.flatnonzero(kept))  # only the joints' made float64
    if not (finite and np.isfinite(current).all()):  # rare: say where
        _check_channels_finite(_laid_out(current, rows, columns, compat.read_curves(curves, frames)), every, modes, frames)
    values = _laid_out(current[:, joint_of >= 0], np.asarray(rows, dtype=int)[kept], joints[kept], keyed)
    return values[:3], values[3:7], values[7:]


def _laid_out(current, rows, columns, keyed):
    """(10, B, F) channel values, rows location 0-2, rotation 3-6, scale 7-9: the keyed rows
    (K, F) at their ``rows`` and ``columns`` (bones), the current values (10, B) elsewhere."""
    values = np.empty((10, current.shape[1], keyed.shape[1]))
    values[:] = current[:, :, None]
    values[rows, columns] = keyed
    return values


def _keyed_channels(names, connected, modes, table):
    """Row (see :func:`_laid_out`), bone index and F-curve of each unmuted F-curve of the
    channels in ``table`` of the bones named ``names``: each bone's rotation in its mode, its
    scale, and its location unless ``connected`` (Blender ignores a connected bone's location)."""
    channels_of = _channel_slots(tuple(names), tuple(modes), tuple(connected.tolist()))
    rows, columns, curves = [], [], []
    for (path, index), fcurve in table.items():  # fewer curves than channels: most bones only turn
        channel = channels_of.get(path)
        if channel is not None and index < channel[2] and not fcurve.mute:
            rows.append(channel[1] + index)
            columns.append(channel[0])
            curves.append(fcurve)
    return rows, np.asarray(columns, dtype=int), curves


@lru_cache(maxsize=16)
def _channel_slots(names, modes, connected):
    """``{data path: (bone index, first row, width)}`` of the channels :func:`_keyed_channels`
    reads of the bones ``names`` in rotation ``modes``, ``connected`` or not (tuples), to be
    read only. Remembered, as a rig's rest offsets are: a click reads every bone's, and
    building the 93 data paths of a CMU rig's 31 bones was a third of finding its curves."""
    channels_of = {}
    for b, (name, mode) in enumerate(zip(names, modes)):
        path = bone_data_path(name)
        prop, width = rotation_channel(mode)
        channels_of[f"{path}.{prop}"] = (b, 3, width)
        channels_of[f"{path}.scale"] = (b, 7, 3)
        if not connected[b]:
            channels_of[f"{path}.location"] = (b, 0, 3)
    return channels_of


def _check_channels_finite(values, bones, modes, frames):
    """Raise naming bone, channel and frame of the first non-number in (10, B, F) channel
    values: the locations first, then the rotations, then the scales."""
    _check_finite(values[:3], bones, lambda b: "location", frames)
    _check_finite(values[3:7], bones, lambda b: rotation_channel(modes[b])[0], frames)
    _check_finite(values[7:], bones, lambda b: "scale", frames)


def _current_channels(obj, connected, order, modes):
    """(10, B) the current location, rotation (in their rotation mode; Euler rows 0-2) and
    scale of the pose bones at ``order``, as :func:`_channel_values` lays them out, read in
    bulk; the location 0 where ``connected`` (B,) bool (Blender ignores it)."""
    collection = obj.pose.bones
    current = np.zeros((10, len(order)))
    for prop, rows in (("location", slice(0, 3)), ("scale", slice(7, 10))):
        current[rows] = _pose_bone_values(collection, prop, 3)[order].T
    current[:3, connected] = 0.0
    for mode in set(modes):
        prop, width = rotation_channel(mode)
        members = [b for b, m in enumerate(modes) if m == mode]
        current[3 : 3 + width, members] = _pose_bone_values(collection, prop, width)[order[members]].T
    return current


def _pose_bones(obj, names):
    """The pose bones of the bones named ``names`` and their indices (B,) in
    ``obj.pose.bones``, from one pass over the pose bones, not a lookup by name per bone."""
    listed = list(obj.pose.bones)
    index_of = {name: i for i, name in enumerate(obj.pose.bones.keys())}  # one call, not a name read per bone
    order = [index_of[name] for name in names]
    return [listed[i] for i in order], np.array(order, dtype=int)


def _pose_bone_values(collection, prop, width):
    """(n, width) values of the pose bones' vector property ``prop``, in the collection's order."""
    values = np.empty(width * len(collection))
    collection.foreach_get(prop, values)
    return values.reshape(-1, width)


def _rows(values, members, axis=1):
    """``values`` taken at ``members`` along ``axis``, C-contiguous: numpy's trigonometry
    and arithmetic run two to three times slower on strided arrays (what fancy indexing
    and ``moveaxis`` give). No copy of a contiguous array whose every index is a member."""
    if list(members) != list(range(values.shape[axis])):
        values = np.take(values, members, axis=axis)
    return np.ascontiguousarray(values)


def _check_finite(values, bones, prop_of_bone, frames):
    """Raise naming bone, channel and frame of the first non-number in (k, n, F) values."""
    bad = ~np.isfinite(values)
    if bad.any():
        index, bone, frame = np.argwhere(bad)[0]
        raise AdapterError(
            f"bone {bones[bone].name!r}: {prop_of_bone(bone)}[{index}] is not a number at frame {int(frames[frame])}"
        )


def _moving_object_channel(table, frames):
    """The (data path, index) of the first unmuted F-curve in ``table`` that changes the
    object's own transform over ``frames``, or None."""
    for (path, index), fcurve in table.items():
        if path in _OBJECT_PATHS and not fcurve.mute and np.ptp(compat.read_values(fcurve, frames)) > 1e-7:
            return path, index
    return None


def keyed_world(obj, table, frames):
    """The object's world matrices (F, 4, 4) on ``frames`` as its own transform keys in
    ``table`` (:func:`~.action_compat.fcurve_table`) put it, nothing else moving it: its
    parent space (as now) times the ``matrix_basis`` of its channels, keyed where an
    unmuted F-curve is and as they are elsewhere. Blender builds that matrix from
    location + delta_location, the delta rotation times the rotation (in the object's
    rotation mode; an axis-angle object has no delta rotation in Python's reach) and
    scale times delta_scale."""
    def channel(path):
        values = np.repeat(np.array(getattr(obj, path), dtype=float)[:, None], len(frames), axis=1)
        for index in range(len(values)):
            fcurve = table.get((path, index))
            if fcurve is not None and not fcurve.mute:
                values[index] = compat.read_values(fcurve, frames)
        return values

    mode = obj.rotation_mode
    rotation = channels.channel_quat(mode, channel(rotation_channel(mode)[0]))
    if mode != "AXIS_ANGLE":
        delta = "delta_rotation_quaternion" if mode == "QUATERNION" else "delta_rotation_euler"
        rotation = channels.multiply(channels.channel_quat(mode, channel(delta)), rotation)
    basis = np.zeros((len(frames), 4, 4))
    basis[:, :3, :3] = quat.to_matrix(rotation.T) * (channel("scale") * channel("delta_scale")).T[:, None, :]
    basis[:, :3, 3] = (channel("location") + channel("delta_location")).T
    basis[:, 3, 3] = 1.0
    return parent_space(obj) @ basis


def parent_space(obj):
    """The object's parent space (4, 4), as now: what its ``matrix_basis`` is multiplied
    by to put it in the world (its parent, the parent inverse, a bone or vertex parent)."""
    return np.array(obj.matrix_world, dtype=float) @ matrices.affine_inverse(np.array(obj.matrix_basis, dtype=float))


def _uniform_scale(scale, frames):
    """(n, F) uniform scale from (3, n, F) scales, and ``{bone index: why}`` for bones scaled
    non-uniformly or to zero (the solver's joints cannot express them: refused only where
    the solve reads or writes them, see :meth:`JointMap.require_exact`)."""
    mean = scale.mean(axis=0)
    bad = (np.ptp(scale, axis=0) > _SCALE_TOLERANCE * np.abs(mean)) | (mean <= 0.0)
    reasons = {}
    for bone in np.flatnonzero(bad.any(axis=1)):
        frame = int(np.argmax(bad[bone]))
        reasons[int(bone)] = (
            f"is scaled non-uniformly or to zero at frame {int(frames[frame])} "
            f"({', '.join(f'{s:g}' for s in scale[:, bone, frame])})"
        )
    return np.where(bad, 1.0, mean), reasons


def _unsupported_reason(bone, parent_pose_scale):
    if not bone.use_inherit_rotation:
        return "does not inherit rotation"
    if not bone.use_local_location:
        return "has 'Local Location' off"
    if bone.inherit_scale != "FULL" and np.abs(parent_pose_scale - 1.0).max() > _SCALE_TOLERANCE:
        return f"inherits scale as {bone.inherit_scale!r} from a scaled parent"
    return None


def _rest_offsets(armature, members, parents):
    """Each bone's rest frame in its parent's rest frame (roots: armature space), for the
    bones at ``members`` of the armature's bones, all at once (``parents`` index into
    ``members``): rotations (J, 4) and translations (J, 3), read-only."""
    flat = np.empty(len(armature.bones) * 16, dtype=np.float32)  # Blender stores them as floats
    armature.bones.foreach_get("matrix_local", flat)
    return _rest_offsets_of(flat.tobytes(), tuple(members), tuple(parents.tolist()))


@lru_cache(maxsize=16)
def _rest_offsets_of(matrices_local, members, parents):
    """:func:`_rest_offsets` of the bones' rest matrices ``matrices_local`` (bytes of float32
    (bones, 16), column-major each). Remembered, as the legs found on a rest rig are: a
    pipeline fixes many clips of one rig, and the inverses and conversions cost more than
    reading the matrices (0.15 of 1.6 ms of a click's read on a 31-bone CMU rig)."""
    local = np.frombuffer(matrices_local, dtype=np.float32).astype(float).reshape(-1, 4, 4).transpose(0, 2, 1)
    local = local[list(members)]  # row-major, in ``members`` order
    rest = local.copy()
    parents = np.array(parents, dtype=np.intp)
    child = np.flatnonzero(parents >= 0)
    if child.size:
        rest[child] = matrices.affine_inverse(local[parents[child]]) @ local[child]
    offsets = quat.from_matrix(rest[:, :3, :3]), rest[:, :3, 3].copy()
    for offset in offsets:
        offset.flags.writeable = False  # shared by every read of the rig
    return offsets


@dataclass
class _Bones:
    """The bones that are joints (parents first), with the extra tail joints' parents, and
    every bone of the armature (parents first) with its name and ``use_connect``, each read
    from Blender once for every reader of the armature."""

    bones: list
    parents: np.ndarray  # (bones + tails,)
    tails: list  # bone names that get a ".tail" joint
    every: list
    members: list  # index in ``every`` (the armature's bone order) of each joint bone
    names: list  # of ``every``
    connected: np.ndarray  # (len(every),) bool: ``use_connect`` of ``every``

    @classmethod
    def of(cls, obj, extra_tails, only=None):
        """Every bone a joint, or with ``only`` (bone names) those and their ancestors."""
        armature_bones = obj.data.bones
        every, names, parent_of = bone_hierarchy(obj.data)
        index_of = {name: i for i, name in enumerate(names)}
        tails = list(dict.fromkeys(extra_tails))
        missing = [name for name in [*tails, *(only or ())] if name not in index_of]
        if missing:
            raise AdapterError(f"armature {obj.name!r} has no bone {missing[0]!r}")
        members = list(range(len(every)))
        if only is not None:
            kept = set()  # holds the ancestors of every bone in it: a chain stops at the first kept bone
            for name in [*tails, *only]:
                bone = index_of[name]
                while bone >= 0 and bone not in kept:
                    kept.add(bone)
                    bone = parent_of[bone]
            members = sorted(kept)  # still parents first
        joint_of = {bone: joint for joint, bone in enumerate(members)}
        parents = np.array(
            [joint_of.get(parent_of[bone], -1) for bone in members] + [joint_of[index_of[t]] for t in tails]
        )
        connected = np.empty(len(every), dtype=bool)
        armature_bones.foreach_get("use_connect", connected)
        return cls([every[i] for i in members], parents, tails, every, members, names, connected)


def _check_armature(obj, frame_start, frame_end):
    if obj is None or obj.type != "ARMATURE":
        raise AdapterError("the active object must be an armature")
    if obj.pose is None:
        raise AdapterError(f"armature {obj.name!r} has no pose yet: link it to the scene first")
    frame_start, frame_end = int(frame_start), int(frame_end)
    if frame_end < frame_start:
        raise AdapterError(f"the frame range {frame_start}..{frame_end} is empty")
    return np.arange(frame_start, frame_end + 1)


def read_motion(obj, action, frame_start, frame_end, extra_tails=(), only=None, object_keys=False):
    """Skeleton, Motion and JointMap of ``obj`` posed by ``action`` over
    ``frame_start..frame_end`` (integers, both included), read from the F-curves alone
    (exact when nothing else moves the object or the bones: see :mod:`.evaluated`).

    With ``object_keys`` the action may key the object's own transform too, and the
    object travels by those keys (:func:`keyed_world`; the caller knows nothing else moves
    it: :func:`.sources.keys_are_exact`); without, such keys are refused.

    Every pose bone is a joint (parents first), or with ``only`` (bone names) those bones
    and their ancestors: the other bones' keys are still read and refused where they are
    not numbers, but not converted (a solve of the legs needs none of the arms). Each name
    in ``extra_tails`` adds a leaf joint ``"<bone>.tail"`` at the tail of that bone.
    Channels without an F-curve keep the pose bone's current value. Motion.fps is the
    scene's frame rate.
    """
    return _read_keys(obj, action, _check_armature(obj, frame_start, frame_end), extra_tails, only, object_keys)


def read_poses(obj, action, frames, extra_tails=(), object_keys=False):
    """Skeleton, Motion and JointMap of every bone of ``obj`` posed by ``action`` on
    ``frames`` alone (integers, e.g. a clip's first and last): the joints and values
    :func:`read_motion` gives on those frames (the JointMap's frame numbers do not apply)."""
    frames = np.asarray(frames, dtype=int)
    _check_armature(obj, frames.min(), frames.max())
    return _read_keys(obj, action, frames, extra_tails, object_keys=object_keys)


def _read_keys(obj, action, frames, extra_tails=(), only=None, object_keys=False):
    """:func:`read_motion` on the integer ``frames``."""
    if action is None:
        raise AdapterError(f"armature {obj.name!r} has no action to read")
    count = len(frames)
    table = compat.fcurve_table(compat.channel_bag(obj, action))
    moving = _moving_object_channel(table, frames)
    if moving is None:
        world = np.array(obj.matrix_world, dtype=float)[None]  # one for every frame
    elif object_keys:
        world = keyed_world(obj, table, frames)
    else:
        raise AdapterError(
            f"the action animates the object {obj.name!r} itself ({moving[0]}[{moving[1]}]); "
            "Foot Lock needs the motion on the bones: bake the object motion into the root bone"
        )
    layout = _Bones.of(obj, extra_tails, only)
    every = layout.every
    pose_bones, order = _pose_bones(obj, layout.names)
    modes = [pose_bone.rotation_mode for pose_bone in pose_bones]

    location, rotation, scale = _channel_values(obj, layout, order, modes, table, frames)
    bones = layout.bones
    nb = len(bones)
    if nb < len(every):  # only the joints' channels are converted
        modes = [modes[i] for i in layout.members]
        pose_bones = [pose_bones[i] for i in layout.members]

    # matrix_basis as rotation + translation + uniform scale, all bones and frames at once.
    basis = _basis_quats(rotation, modes)
    if np.all(scale == 1.0):
        bone_scale, uneven = np.ones((nb, count)), {}
    else:
        bone_scale, uneven = _uniform_scale(scale, frames)
    rest = _rest_offsets(obj.data, layout.members, layout.parents[:nb])
    # (4, bones, F): numpy runs the product's 28 operations faster on equal shapes than
    # broadcasting one rest rotation along each bone's frames.
    rest_q = np.repeat(rest[0].T[:, :, None], count, axis=2)
    rot_c = channels.multiply(rest_q, basis)
    pos_c = np.empty((3, nb, count))
    pos_c[:] = rest[1].T[:, :, None]
    moving = (location != 0.0).any(axis=(0, 2)).nonzero()[0]  # most bones never translate
    if moving.size:
        pos_c[:, moving] += channels.rotate(rest_q[:, moving], location[:, moving])
    return _assemble(obj, layout, rest, rot_c, pos_c, bone_scale, uneven, world, frames, pose_bones)


def _basis_quats(rotation, modes):
    """Quaternions (4, B, F) of the bones' rotation channel values (4, B, F; Euler rows
    0-2) in their rotation ``modes``, the bones of each mode converted together."""
    if len(set(modes)) == 1:  # the usual rig: one mode, no bones to pick out and scatter back
        mode = modes[0]
        return channels.channel_quat(mode, np.ascontiguousarray(rotation[: rotation_channel(mode)[1]]))
    basis = np.empty(rotation.shape)
    for mode in set(modes):
        members = [b for b in range(len(modes)) if modes[b] == mode]
        width = rotation_channel(mode)[1]
        basis[:, members] = channels.channel_quat(mode, _rows(rotation[:width], members))
    return basis


def read_evaluated_motion(obj, sampled, extra_tails=()):
    """Like :func:`read_motion`, from the pose Blender evaluated
    (:class:`~.evaluated.EvaluatedPose`): the object's own motion (keys, paths, parents,
    drivers), the NLA and constraints on other bones all included. Each joint's local
    transform is its pose matrix relative to its parent's; the object's world matrix is
    taken per frame."""
    frames = _check_armature(obj, sampled.frames[0], sampled.frames[-1])
    layout = _Bones.of(obj, extra_tails)
    bones = layout.bones
    nb = len(bones)
    order = [sampled.bone(bone.name) for bone in bones]
    pose = sampled.pose[:, order]
    _check_finite(pose.reshape(len(frames), nb, 16).transpose(2, 1, 0), bones, lambda b: "pose matrix", frames)
    parents = layout.parents[:nb]
    linear, pos_c = _relative_to_parents(pose, parents)
    scales = _column_lengths(linear)  # (F, B, 3)
    bone_scale, uneven = _uniform_scale(np.ascontiguousarray(scales.transpose(2, 1, 0)), frames)  # reduced 10x faster
    safe = np.where(scales > 0.0, scales, 1.0)
    rot_c = quat.from_matrix(linear / safe[..., None, :]).transpose(2, 1, 0)
    rest = _rest_offsets(obj.data, layout.members, layout.parents[:nb])
    return _assemble(obj, layout, rest, rot_c, pos_c, bone_scale, uneven, sampled.world, frames,
                     _pose_bones(obj, layout.names)[0])  # every bone is a joint


def _relative_to_parents(pose, parents):
    """Each bone's linear part (F, B, 3, 3) and translation (3, B, F) in its parent's pose
    frame, from the pose matrices (F, B, 4, 4) of bones whose ``parents`` index the same
    arrays (roots: as they are), the parents' linear parts inverted by :func:`~..solvers.matrices.inverse`."""
    linear, translation = pose[..., :3, :3], pose[..., :3, 3]
    roots = parents < 0
    parent = np.maximum(parents, 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # a parent scaled to zero: NaN, refused later
        inverse = matrices.inverse(linear[:, parent])
    inverse[:, roots] = np.eye(3)
    offset = translation - np.where(roots[:, None], 0.0, translation[:, parent])
    local_translation = (inverse @ offset[..., None])[..., 0]
    return inverse @ linear, local_translation.transpose(2, 1, 0).copy()


def _chain_scales(bones, parents, bone_scale, uneven, world_scale):
    """Down the chains, per bone and frame: the world length of an armature unit in its
    parent's frame and in its own (the object's scale times the pose scales above), and
    ``{bone name: why}`` for bones whose pose is not plain FK (see
    :meth:`JointMap.require_exact`)."""
    nb, count = bone_scale.shape
    if not uneven and np.all(bone_scale == 1.0):  # the usual rig: no pose scale anywhere
        parent_scale = own_scale = np.broadcast_to(world_scale, (nb, count))
        parent_poses = [np.ones(count)] * nb
    else:
        parent_scale = np.empty((nb, count))
        own_scale = np.empty((nb, count))
        pose_scale = np.empty((nb, count))  # product of pose scales from the root
        parent_poses = []
        for j in range(nb):
            p = parents[j]
            parent_poses.append(np.ones(count) if p < 0 else pose_scale[p])
            parent_scale[j] = world_scale if p < 0 else own_scale[p]
            own_scale[j] = parent_scale[j] * bone_scale[j]
            pose_scale[j] = parent_poses[j] * bone_scale[j]
    unsupported = {bones[b].name: reason for b, reason in uneven.items()}
    for bone, parent_pose in zip(bones, parent_poses):
        reason = _unsupported_reason(bone, parent_pose)
        if reason and bone.name not in unsupported:
            unsupported[bone.name] = reason
    return parent_scale, own_scale, unsupported


def _assemble(obj, layout, rest, rot_c, pos_c, bone_scale, uneven, world, frames, pose_bones):
    """Skeleton, Motion and JointMap from the bones' rest offsets ``rest`` (rotations,
    translations), each bone's transform in its parent's frame ``rot_c`` (4, B, F) /
    ``pos_c`` (3, B, F) (armature units, rest offset included), its uniform pose scale
    (B, F), the object's world matrices (F, 4, 4; or one (1, 4, 4) for every frame) and
    the bones' pose bones."""
    bones, parents, tails_of = layout.bones, layout.parents, layout.tails
    nb, count = len(bones), len(frames)
    rest_rot, rest_pos = rest
    world = np.asarray(world, dtype=float)
    unturned = _unturned(world)
    world_rot, world_pos, world_scale = (
        np.broadcast_to(values, (count, *values.shape[1:]))
        for values in _object_transforms(obj, world, frames, unturned)
    )

    parent_scale, own_scale, unsupported = _chain_scales(bones, parents, bone_scale, uneven, world_scale)
    pos_c = pos_c * parent_scale
    roots = np.flatnonzero(parents[:nb] < 0)
    if unturned:  # most armatures: the roots only moved, the same numbers as turning them by 1
        pos_c[:, roots] += world_pos.T[:, None, :]
    else:
        object_q = world_rot.T[:, None, :]  # (4, 1, F)
        rot_c[:, roots] = channels.multiply(object_q, rot_c[:, roots])
        pos_c[:, roots] = world_pos.T[:, None, :] + channels.rotate(object_q, pos_c[:, roots])
    n = nb + len(tails_of)
    rot = np.empty((count, n, 4))
    pos = np.empty((count, n, 3))
    rot[:, :nb] = rot_c.transpose(2, 1, 0)
    pos[:, :nb] = pos_c.transpose(2, 1, 0)

    # Tail joints: identity rotation, at (0, length, 0) in their bone's frame.
    tails = np.array([[0.0, obj.data.bones[name].length, 0.0] for name in tails_of]).reshape(-1, 3)
    tail_scale = own_scale[parents[nb:]].T
    rot[:, nb:] = quat.IDENTITY
    pos[:, nb:] = tail_scale[..., None] * tails

    scene = bpy.context.scene
    names = [layout.names[i] for i in layout.members]  # the joint bones' names, read once in _Bones.of
    joint_names = names + [name + TAIL_SUFFIX for name in tails_of]
    joint_map = JointMap(
        object_name=obj.name,
        joint_names=joint_names,
        joint_bone=names + tails_of,
        is_tail=np.arange(len(joint_names)) >= nb,
        parents=parents,
        rotation_modes={name: pose_bone.rotation_mode for name, pose_bone in zip(names, pose_bones)},
        connected={name: bool(layout.connected[i]) for name, i in zip(names, layout.members)},
        rest_rot=np.concatenate((rest_rot, np.broadcast_to(quat.IDENTITY, (len(tails), 4)))),
        rest_pos=np.concatenate((rest_pos, tails)),
        world_rot=world_rot,
        world_pos=world_pos,
        world_scale=world_scale,
        parent_scale=np.concatenate((parent_scale.T, tail_scale), axis=1),
        frame_start=int(frames[0]),
        unsupported=unsupported,
        constrained=tuple(name for name, pose_bone in zip(names, pose_bones) if len(pose_bone.constraints)),
        unturned=unturned,
    )
    motion = Motion(rot, pos, playback_rate(scene))
    return Skeleton(joint_names, parents), motion, joint_map


# --- writing ----------------------------------------------------------------------------


def channel_values_at(obj, table, bone_name, prop, width, frame):
    """The ``width`` values of a bone's channel ``prop`` at ``frame``: its F-curves in
    ``table`` (keyed by ``(data_path, index)``) where they exist, the pose value elsewhere;
    what a rotation written next continues from (Euler unwrapping, quaternion sign)."""
    path = f"{bone_data_path(bone_name)}.{prop}"
    fcurves = [table.get((path, index)) for index in range(width)]
    # The pose is read only for a channel without a curve: a clip's bones usually have curves
    # on every index, and the pose bone's lookup and its channel are two RNA reads a bone.
    current = getattr(obj.pose.bones[bone_name], prop) if None in fcurves else None
    return np.array([current[index] if fcurve is None else fcurve.evaluate(frame)
                     for index, fcurve in enumerate(fcurves)], dtype=float)


def keyed_channels(obj, rotation_bones, location_bones):
    """``(bone, property, width)`` of each channel a fix keys: each rotation bone's rotation in
    its mode, each location bone's location unless it is connected (Blender ignores it)."""
    pose_bones, bones = obj.pose.bones, obj.data.bones
    return ([(name, *rotation_channel(pose_bones[name].rotation_mode)) for name in rotation_bones]
            + [(name, "location", 3) for name in location_bones if not bones[name].use_connect])


def channel_fcurves(obj, action, channels):
    """The F-curves ``action`` has for ``channels`` (``(bone, property, width)``, distinct, see
    :func:`keyed_channels`), in their order. Picked in one pass over the action's curves, by
    data path, not looked up per channel and index (a click asks for 180 curves, finds 3)."""
    paths = {bone: bone_data_path(bone) for bone in {bone for bone, _, _ in channels}}  # (escaped once per bone)
    wanted = {f"{paths[bone]}.{prop}": (rank, width) for rank, (bone, prop, width) in enumerate(channels)}
    found = []
    for fcurve, (path, index) in compat.fcurve_channels(compat.channel_bag(obj, action)):
        rank, width = wanted.get(path, (0, 0))
        if index < width:
            found.append((rank, index, fcurve))
    found.sort(key=_RANK_AND_INDEX)
    return [fcurve for _, _, fcurve in found]


_RANK_AND_INDEX = operator.itemgetter(0, 1)  # a found curve's channel, then its index in it


def keyed_frames(obj, action, bones, frames):
    """The frames of ``frames`` (whole, ascending) that hold keys of ``bones``' transform
    channels in ``action``, as indices (see :func:`frames_keyed`): an animator's keys,
    interpolated between (see :func:`~..solvers.foot_lock.remove_foot_sliding`). None where
    one of those curves keys every frame (capture, a baked clip), or see :func:`key_frames`."""
    curves = _transform_curves(obj, action, bones)
    dense = next((fcurve for fcurve in curves if len(fcurve.keyframe_points) == len(frames)), None)
    if dense is not None and np.array_equal(np.rint(compat.key_frame_rows([dense])[0]), frames):
        return None  # the usual clip, told by one curve: a key on every frame
    return frames_keyed(_key_frames_of(curves), frames)


def key_frames(obj, action, bones):
    """The whole frames (ascending, in the action's time) that hold keys of ``bones``'
    transform channels in ``action``; None where none is keyed, or where a curve modifier
    other than Cycles shapes the motion between the keys."""
    return _key_frames_of(_transform_curves(obj, action, bones))


def frames_keyed(keys, frames):
    """The indices of the ``frames`` (whole, ascending) among the ``keys`` (whole frames) and
    of the first and the last frame; None where that is every frame or ``keys`` is None."""
    if keys is None:
        return None
    keys = np.union1d(keys, frames[[0, -1]])
    count = len(frames)
    index = np.searchsorted(frames, keys)
    index = index[(index < count) & (frames[np.minimum(index, count - 1)] == keys)]  # keys on the frames
    return None if len(index) == count else index


def _transform_curves(obj, action, bones):
    """The unmuted curves of ``bones``' transform channels in ``action``."""
    table = compat.fcurve_table(compat.channel_bag(obj, action))
    paths = {f"{bone_data_path(bone)}.{prop}" for bone in bones for prop, _ in BONE_CHANNELS}
    return [fcurve for (path, _), fcurve in table.items() if path in paths and not fcurve.mute]


def _key_frames_of(curves):
    if not curves or _value_modifiers(curves):
        return None
    return np.unique(np.rint(np.concatenate(compat.key_frame_rows(curves))))


def _value_modifiers(fcurves):
    """``(fcurve, modifier)`` of each F-curve modifier on ``fcurves`` that changes its curve's
    values within its keys: every unmuted one but Cycles (which repeats the keys outside
    them). Keys baked from what such a curve plays would have its modifier applied over
    them again."""
    return [(fcurve, modifier) for fcurve in fcurves for modifier in fcurve.modifiers
            if not modifier.mute and modifier.type != "CYCLES"]


def _describe_modifiers(found):
    """``'pose.bones["Hips"].location[0]' (Noise), ...`` of :func:`_value_modifiers`' list."""
    return ", ".join(f"{_describe_curve(fcurve)} ({modifier.name})" for fcurve, modifier in found)


def _describe_curve(fcurve):
    return f"'{fcurve.data_path}[{fcurve.array_index}]'"


def ready_to_key(obj, source_action, target, channels):
    """Make the curves of ``channels`` in ``target`` play the keys a fix bakes into them;
    returns the warnings. Two things would keep them from playing as keyed: F-curve
    modifiers (they would change the keys again; the fix was solved from what they play)
    and a muted curve (it plays nothing: the bone showed, and the fix was solved from, its
    own value). A new action loses both, with a warning naming them; the source keeps them.
    Keying into the source itself (In Place, ``target`` is ``source_action``) is refused
    before anything is written: removing them would change its motion outside the clip."""
    fcurves = channel_fcurves(obj, target, channels)
    modifiers = _value_modifiers(fcurves)
    muted = [fcurve for fcurve in fcurves if fcurve.mute]
    if target == source_action:
        if modifiers:
            raise AdapterError(
                f"In Place would key curves whose F-curve modifiers change the keys again: "
                f"{_describe_modifiers(modifiers)}; turn In Place off (a new action then gets what they play baked "
                "into its keys) or remove them"
            )
        if muted:
            raise AdapterError(
                f"In Place would key muted curves, which play nothing: {', '.join(map(_describe_curve, muted))}; "
                "turn In Place off (a new action then plays the fix on them) or unmute them"
            )
        return []
    warnings = []
    if modifiers:
        warnings.append(f"the F-curve modifiers on {_describe_modifiers(modifiers)} are baked into the keys of "
                        f"{target.name!r} and left out of it (the source keeps them)")
        for fcurve, modifier in modifiers:
            fcurve.modifiers.remove(modifier)
    if muted:
        for fcurve in muted:
            fcurve.mute = False
        warnings.append(f"the muted curves {', '.join(map(_describe_curve, muted))} play the fix in "
                        f"{target.name!r}: it was solved from what the bones showed, their own values there "
                        "(the source keeps them muted)")
    return warnings


def key_channel(bag, table, bone_name, prop, frames, values):
    """Key ``values`` (width, F) at ``frames`` on a bone's channel ``prop``, in bulk and
    linear, keeping keys outside ``frames``; F-curves missing from ``table`` are created in
    channelbag ``bag`` (grouped under the bone) and added to ``table``."""
    compat.write_curves(channel_curves(bag, table, bone_name, prop, len(values)), frames, values, keep_outside=True)


def channel_curves(bag, table, bone_name, prop, width):
    """The ``width`` F-curves of a bone's channel ``prop`` (see :func:`key_channel`)."""
    path = f"{bone_data_path(bone_name)}.{prop}"
    curves = []
    for index in range(width):
        fcurve = table.get((path, index))
        if fcurve is None:
            fcurve = compat.new_fcurve(bag, path, index, group=bone_name)
            table[(path, index)] = fcurve
        curves.append(fcurve)
    return curves


def _world_rows(joint_map, frame_start, count):
    """The object's world rotation (count, 4) and translation (count, 3) from ``frame_start`` on."""
    offset = int(frame_start) - joint_map.frame_start
    rows = slice(offset, offset + count)
    return joint_map.world_rot[rows], joint_map.world_pos[rows], offset


# The product conjugate(r) * q as a matrix times q: conjugate(r)'s left-multiplication matrix
# is r[..., _INVERSE_PRODUCT_ORDER] * _INVERSE_PRODUCT_SIGNS (rows: w, x, y, z of the product).
_INVERSE_PRODUCT_ORDER = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_INVERSE_PRODUCT_SIGNS = np.array([[1.0, 1.0, 1.0, 1.0], [-1.0, 1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0],
                                   [-1.0, 1.0, -1.0, 1.0]])


def _inverse_products(r):
    """Matrices (..., 4, 4) that multiply quaternions (4,) by the inverses of unit quaternions
    ``r`` (..., 4) from the left: one matrix product per bone (or frame) then replaces a Hamilton
    product's 28 array operations."""
    return r[..., _INVERSE_PRODUCT_ORDER] * _INVERSE_PRODUCT_SIGNS


def basis_rotations(joint_map, rot, bone_names, frame_start=None):
    """``matrix_basis`` rotations (4, F, bones) of ``bone_names`` from solved local rotations
    ``rot`` (F, n, 4) of the frames from ``frame_start`` (default: the first read) on: the
    inverse of each bone's rest frame (and, for a root, of the object on that frame) times
    the solved local rotation."""
    jm = joint_map
    joints = np.array([jm.joint(name) for name in bone_names], dtype=int)
    solved = rot.take(joints, axis=1)  # (F, bones, 4)
    roots = jm.parents[joints] < 0
    if roots.any():
        world_rot, _, _ = _world_rows(jm, jm.frame_start if frame_start is None else frame_start, len(rot))
        # (F, 4, 4) @ (F, 4, roots): each frame's object rotation undone.
        solved[:, roots] = np.matmul(_inverse_products(world_rot), solved[:, roots].transpose(0, 2, 1)).transpose(0, 2, 1)
    # (bones, 4, 4) @ (bones, 4, F): each bone's rest rotation undone, as (4, F, bones).
    return np.matmul(_inverse_products(jm.rest_rot[joints]), solved.transpose(1, 2, 0)).transpose(1, 2, 0)


def basis_locations(joint_map, pos, bone_names, frame_start):
    """``matrix_basis`` translations (F, bones, 3) of ``bone_names`` from solved local
    translations ``pos`` (F, n, 3) of the frames from ``frame_start`` on: the object
    transform of each frame (roots), the parents' scale and the rest offset undone."""
    jm = joint_map
    world_rot, world_pos, offset = _world_rows(jm, frame_start, len(pos))
    joints = np.array([jm.joint(name) for name in bone_names], dtype=int)
    local = pos[:, joints].copy()
    roots = jm.parents[joints] < 0
    if jm.unturned:  # most armatures: the roots only moved back, the numbers turning them back by 1 gives
        local[:, roots] -= world_pos[:, None]
    else:
        local[:, roots] = quat.rotate(quat.conjugate(world_rot[:, None]), local[:, roots] - world_pos[:, None])
    local /= jm.parent_scale[offset : offset + len(pos), joints, None]
    # (bones, 3, 3) @ (bones, 3, F): each bone's rest offset and rotation undone (the rest
    # rotation's matrix transposed), as (F, bones, 3).
    local -= jm.rest_pos[joints]
    return np.matmul(_undo_rest(jm.rest_rot[joints].tobytes()), local.transpose(1, 2, 0)).transpose(2, 0, 1)


@lru_cache(maxsize=16)
def _undo_rest(rest_rot):
    """The rest rotations' matrices transposed (bones, 3, 3), of rest rotations ``rest_rot``
    (bytes of float64 (bones, 4)), read-only. Remembered, as a rig's rest offsets are: a
    click keys the location of one bone, and the matrix of its one rotation cost 40 us of
    numpy calls on one element."""
    undo = np.swapaxes(quat.to_matrix(np.frombuffer(rest_rot).reshape(-1, 4)), -1, -2)
    undo.flags.writeable = False  # shared by every write of the rig
    return undo


def check_writable(joint_map, motion, frame_start, rotation_bones, location_bones):
    """Raise :class:`AdapterError` when :func:`write_motion` could not key ``motion`` as
    asked (call it before writing anything else, e.g. contact curves)."""
    jm = joint_map
    frame_start = int(frame_start)
    count = motion.frames
    offset = frame_start - jm.frame_start
    if offset < 0 or offset + count > jm.frames:
        raise AdapterError(
            f"frames {frame_start}..{frame_start + count - 1} lie outside the frames that were read "
            f"({jm.frame_start}..{jm.frame_end})"
        )
    if motion.rot.shape[1] != len(jm.joint_names):
        raise AdapterError("the motion does not belong to this joint map (joint count differs)")
    jm.require_exact(rotation_bones + location_bones)
    for bone in location_bones:
        if jm.connected[bone]:
            raise AdapterError(f"bone {bone!r} is connected to its parent: its location cannot be keyed")
    for names, label, array in (
        (rotation_bones, "rotation", motion.rot),
        (location_bones, "location", motion.pos),
    ):
        values = array.take([jm.joint(name) for name in names], axis=1)
        if np.isfinite(values).all():  # the usual solve: no mask of bad values to build
            continue
        bad = ~np.isfinite(values).all(axis=-1)
        if bad.any():
            frame, which = np.argwhere(bad)[0]
            raise AdapterError(
                f"solved {label} of {names[which]!r} is not a number at frame {frame_start + frame}"
            )


def write_motion(
    obj,
    source_action,
    joint_map,
    motion,
    frame_start,
    rotation_bones,
    location_bones,
    new_action_name=None,
    warnings=None,
):
    """Key ``motion`` (local transforms as read by :func:`read_motion`, e.g. after solving)
    on ``frame_start ..`` for exactly ``rotation_bones`` (rotation channels, in each bone's
    rotation mode) and ``location_bones`` (location channels).

    Writes into a copy of ``source_action`` named ``new_action_name`` that is assigned to
    ``obj`` (every other F-curve carried over untouched), or into ``source_action`` itself
    when ``new_action_name`` is None. Written curves get one linear key per frame; their
    keys outside the written frames stay. F-curve modifiers on them are left out of a copy,
    what they played baked into its keys, and muted ones play in it (in the source either
    refuses the write: see :func:`ready_to_key`), with a warning appended to ``warnings`` (a
    list), if given. Returns the action written to.
    """
    rotation_bones = list(dict.fromkeys(rotation_bones))
    location_bones = list(dict.fromkeys(location_bones))
    check_writable(joint_map, motion, frame_start, rotation_bones, location_bones)
    action = compat.copy_action(obj, source_action, new_action_name) if new_action_name else source_action
    baked = ready_to_key(obj, source_action, action, keyed_channels(obj, rotation_bones, location_bones))
    key_motion(obj, action, joint_map, motion, frame_start, rotation_bones, location_bones)
    if warnings is not None:
        warnings += baked
    return action


def key_motion(obj, action, joint_map, motion, frame_start, rotation_bones, location_bones):
    """The keying of :func:`write_motion` into ``action`` itself, for a caller that ran
    :func:`check_writable` on the same arguments already (before its other writes)."""
    jm = joint_map
    frame_start = int(frame_start)
    count = motion.frames
    bag = compat.channel_bag(obj, action, create=True)
    table = compat.fcurve_table(bag)
    frames = np.arange(frame_start, frame_start + count)

    curves, rows = [], []  # written together at the end (each curve is read, if at all, before)
    basis = basis_rotations(jm, motion.rot, rotation_bones, frame_start)
    modes = [jm.rotation_modes[name] for name in rotation_bones]
    for mode in dict.fromkeys(modes):
        members = [i for i, m in enumerate(modes) if m == mode]
        prop, width = rotation_channel(mode)
        reference = np.array(
            [channel_values_at(obj, table, rotation_bones[i], prop, width, frame_start) for i in members]
        )
        values = channels.quat_to_channel(mode, _rows(basis, members, axis=2), reference.T)
        for k, i in enumerate(members):
            curves += channel_curves(bag, table, rotation_bones[i], prop, width)
            rows.append(values[:, :, k])

    basis = basis_locations(jm, motion.pos, location_bones, frame_start)
    for k, name in enumerate(location_bones):
        curves += channel_curves(bag, table, name, "location", 3)
        rows.append(basis[:, k].T)
    if curves:
        compat.write_curves(curves, frames, np.concatenate(rows), keep_outside=True)


def _channels_of(basis):
    """Location (..., 3), rotation quaternion (..., 4) and scale (..., 3) of T @ R @ S
    matrices (..., 4, 4)."""
    linear = basis[..., :3, :3]
    scale = _column_lengths(linear)
    rotation = quat.from_matrix(linear / np.where(scale > 0.0, scale, 1.0)[..., None, :])
    return basis[..., :3, 3], rotation, scale


def bake_pose(obj, action, sampled, with_object=False):
    """Key every pose bone's channels (location, rotation in its own mode, scale) on every
    sampled frame from the evaluated ``matrix_basis`` (:class:`~.evaluated.EvaluatedPose`),
    as Blender's Bake Action does: one linear key per frame, for all bones; with
    ``with_object`` the object's own transform channels too."""
    bag = compat.channel_bag(obj, action, create=True)
    table = compat.fcurve_table(bag)
    frames = sampled.frames
    location, rotation, scale = _channels_of(sampled.basis)  # (F, B, ...)
    names = sampled.bone_names
    modes = [obj.pose.bones[name].rotation_mode for name in names]
    for mode in dict.fromkeys(modes):
        members = [b for b, m in enumerate(modes) if m == mode]
        prop, _ = rotation_channel(mode)
        reference = np.array([getattr(obj.pose.bones[names[b]], prop) for b in members], dtype=float)
        values = channels.quat_to_channel(mode, _rows(np.moveaxis(rotation, -1, 0), members, axis=2), reference.T)
        for k, b in enumerate(members):
            key_channel(bag, table, names[b], prop, frames, values[:, :, k])
    for b, name in enumerate(names):
        if not obj.data.bones[name].use_connect:
            key_channel(bag, table, name, "location", frames, location[:, b].T)
        key_channel(bag, table, name, "scale", frames, scale[:, b].T)
    if with_object:
        _bake_object(obj, bag, table, frames, sampled.object_basis)


def _bake_object(obj, bag, table, frames, basis):
    location, rotation, scale = _channels_of(basis)  # (F, ...)
    prop, _ = rotation_channel(obj.rotation_mode)
    reference = np.array(getattr(obj, prop), dtype=float)
    values = channels.quat_to_channel(obj.rotation_mode, rotation.T, reference)
    for path, rows in (("location", location.T), (prop, values), ("scale", scale.T)):
        for index, row in enumerate(rows):
            fcurve = table.get((path, index)) or compat.new_fcurve(bag, path, index, group=_OBJECT_GROUP)
            compat.write_keys(fcurve, frames, row, "LINEAR")


# --- foot-contact curves ----------------------------------------------------------------


# Which contact curves Foot Lock keyed itself: per curve, a digest of the keys it wrote,
# kept on the action. A curve whose keys still match was not edited since: a rerun
# labels it again with the current settings; any other curve is the animator's.
_WRITTEN_PROPERTY = "foot_lock_contacts"


def _stamp(action, curves, fcurves):
    """Mark ``fcurves``, the contact curves ``curves`` ((bone name, property) each), as
    Foot Lock's own as they stand now."""
    if _WRITTEN_PROPERTY not in action:
        action[_WRITTEN_PROPERTY] = {}
    stamps = action[_WRITTEN_PROPERTY]
    for (bone_name, prop), digest in zip(curves, compat.keys_digests(fcurves)):
        stamps[contact_data_path(bone_name, prop)] = digest


def _tool_written(action, fcurve, path):
    """Whether ``fcurve``, the contact curve of ``action`` at ``path``, is exactly what Foot
    Lock last keyed there."""
    stamps = action.get(_WRITTEN_PROPERTY)
    if stamps is None or path not in stamps:
        return False
    return stamps[path] == compat.keys_digest(fcurve)


def animator_contact_curves(obj, action, curves):
    """Whether ``action`` has a ``foot_contact`` (or other property) curve that an animator
    keyed or edited (not one Foot Lock wrote and nobody touched since) for each ``(bone name
    or None, property)`` of ``curves`` (False where None): the action's curves found once
    for all (a click asks of four)."""
    bag = compat.channel_bag(obj, action)
    found = []
    for bone_name, prop in curves:
        path = None if bone_name is None else contact_data_path(bone_name, prop)
        fcurve = None if path is None else compat.find_fcurve(bag, path, 0)
        found.append(fcurve is not None and not _tool_written(action, fcurve, path))
    return found


def _contact_fcurve(obj, action, bone_name, prop=CONTACT_PROPERTY):
    return compat.find_fcurve(compat.channel_bag(obj, action), contact_data_path(bone_name, prop), 0)


def has_contact_curve(obj, action, bone_name, prop=CONTACT_PROPERTY):
    """Whether ``action`` has a ``foot_contact`` (or ``prop``) curve for the pose bone."""
    return _contact_fcurve(obj, action, bone_name, prop) is not None


def read_contact_curve(obj, action, bone_name, frames, prop=CONTACT_PROPERTY):
    """The bone's ``foot_contact`` (or ``prop``) curve evaluated at ``frames``, or None without one."""
    fcurve = _contact_fcurve(obj, action, bone_name, prop)
    return None if fcurve is None else compat.read_values(fcurve, frames)


def write_contact_curve(obj, action, bone_name, frames, values01, prop=CONTACT_PROPERTY, stamp=True):
    """Key the pose bone's ``foot_contact`` property (or ``prop``, e.g. ``heel_contact``)
    (0..1) on ``frames``: a key where the value changes (and on the first frame), constant
    interpolation. Keys of the curve outside ``frames`` stay. Creates the property with
    its 0..1 limits when missing. With ``stamp`` the curve is marked as Foot Lock's own
    (see :func:`_tool_written`); without, it counts as the animator's.
    """
    return write_contact_curves(obj, action, [(bone_name, prop)], frames, [values01], stamp)[0]


def write_contact_curves(obj, action, curves, frames, rows, stamp=True):
    """:func:`write_contact_curve` of each ``(bone name, property)`` of ``curves`` with its
    row of ``rows`` (len(curves), F) on the same ``frames``, every one checked before the
    first is written; what does not depend on the curve is done once. Returns the F-curves."""
    if not curves:
        return []
    pose_bones = [obj.pose.bones.get(bone_name) for bone_name, _ in curves]
    missing = next((bone_name for (bone_name, _), pose_bone in zip(curves, pose_bones) if pose_bone is None), None)
    if missing is not None:
        raise AdapterError(f"armature {obj.name!r} has no bone {missing!r}")
    frames = np.asarray(frames)
    values = np.asarray(rows, dtype=float)
    if frames.ndim != 1 or not len(frames) or values.size != len(curves) * len(frames):
        raise AdapterError("contact frames and values must be non-empty and equally long")
    values = np.clip(values.reshape(len(curves), len(frames)), 0.0, 1.0)
    finite = np.isfinite(values).all(axis=1)
    if not finite.all():
        raise AdapterError(f"contact values of {curves[np.argmin(finite)][0]!r} contain NaN")
    bag = compat.channel_bag(obj, action, create=True)
    changes = np.ones(values.shape, dtype=bool)
    changes[:, 1:] = values[:, 1:] != values[:, :-1]
    span = (frames.min(), frames.max())  # every old key in here goes, even after the last change
    after = int(span[1]) + 1  # keeps its old value
    last = np.argmax(frames)
    fcurves = []
    made = False  # a contact property
    for (bone_name, prop), pose_bone, row, keyed in zip(curves, pose_bones, values, changes):
        made |= _ensure_contact_property(pose_bone, prop, row[0])
        path = contact_data_path(bone_name, prop)
        fcurve = compat.find_fcurve(bag, path, 0)
        key_frames, key_values, keyed_span = frames[keyed], row[keyed], span
        if fcurve is None:
            fcurve = compat.new_fcurve(bag, path, 0, group=bone_name)
        else:
            old = compat.read_values(fcurve, [after])[0]
            if old != row[last]:
                key_frames = np.append(key_frames, after)
                key_values = np.append(key_values, old)
                keyed_span = (span[0], after)
        compat.write_keys(fcurve, key_frames, key_values, "CONSTANT", keep_outside=True, span=keyed_span)
        fcurves.append(fcurve)
    if made:
        obj.update_tag()  # else the evaluated copy lacks the new properties and ignores their curves
    if stamp:
        _stamp(action, curves, fcurves)
    return fcurves


def _ensure_contact_property(pose_bone, prop, first):
    """The pose bone's contact property ``prop`` with its 0..1 limits, made with the value
    ``first`` when missing; whether it was made (the object is to be tagged for an update,
    once for all its new properties: a click makes four, at 3.5 us a tag)."""
    made = not isinstance(pose_bone.get(prop), float)
    if made:
        pose_bone[prop] = float(first)
    pose_bone.id_properties_ui(prop).update(
        min=0.0,
        max=1.0,
        soft_min=0.0,
        soft_max=1.0,
        description=_CONTACT_DESCRIPTIONS[prop],
    )
    return made
