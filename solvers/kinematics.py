"""Skeletons and motion as arrays, with forward and inverse kinematics batched over frames.

The solver core works in *world space*: root translations already carry the
armature object's transform and every length is in world units. A joint's local
transform is relative to its parent joint's frame and already includes the rest
offset (Blender: ``inv(parent.matrix_local) @ bone.matrix_local @ matrix_basis``,
BVH: ``OFFSET`` plus channel values), so the skeleton itself is only names and
parents.
"""

from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

import numpy as np

from . import quaternion as quat


class SolverInputError(ValueError):
    """Input the solvers cannot work with: the message says what and where."""


@dataclass
class Skeleton:
    names: list[str]
    parents: np.ndarray  # (n,) int, -1 for a root; every parent precedes its children

    def __post_init__(self):
        self.parents = np.asarray(self.parents, dtype=int)
        if len(self.names) != len(self.parents):
            raise SolverInputError("skeleton names and parents differ in length")
        bad = [i for i, p in enumerate(self.parents.tolist()) if p >= i]  # (Python ints: see chain)
        if bad:
            raise SolverInputError(f"joint {self.names[bad[0]]!r} is listed before its parent")

    def __len__(self):
        return len(self.parents)

    def index(self, name):
        return self.names.index(name)

    def closure(self, joints):
        """``joints`` and all their ancestors, parents first."""
        return _closure(self.parents, joints)

    def chain(self, ancestor, joint):
        """Joint indices from ``ancestor`` down to ``joint`` (both included)."""
        parents = self.parents.tolist()  # Python ints: numpy's scalars cost several times as much per step
        path = [joint]
        while path[-1] != ancestor:
            parent = parents[path[-1]]
            if parent < 0:
                raise SolverInputError(f"{self.names[ancestor]!r} is not an ancestor of {self.names[joint]!r}")
            path.append(parent)
        return path[::-1]


@dataclass
class Motion:
    rot: np.ndarray  # (F, n, 4) local rotations, (w, x, y, z)
    pos: np.ndarray  # (F, n, 3) local translations in world units
    fps: float = 30.0
    meta: dict = field(default_factory=dict)

    @property
    def frames(self):
        return self.rot.shape[0]

    def copy(self):
        return Motion(self.rot.copy(), self.pos.copy(), self.fps, dict(self.meta))


def forward_kinematics(skeleton, rot, pos, joints=None, by_component=False, positions_only=()):
    """Global rotations and positions (F, n, 4) / (F, n, 3) from local ones.

    With ``joints`` only those joints and their ancestors are computed (the rest of
    the arrays is left unset): the solvers need the legs and the pelvis, not the
    fingers. Of ``positions_only`` (joints none of the others hangs from: the toe tips,
    whose rotations nothing reads) only the positions are computed where a whole level is
    among them, their rotations left unset.

    Joints none of which is another's ancestor (both legs' thighs, both knees ...) are
    computed together, as rows of one array: on a short clip the cost is per numpy call,
    not per joint. The locals are gathered once, in that order, a joint's component at a
    time, and the globals computed into an array laid out the same, scattered into place
    once: each level's rows are a slice of them, read and written without a copy; where the
    parents of a level are the level above, in order (chains, as the legs are), their
    globals are its rows.

    With ``by_component`` the globals are stored a joint's component at a time (each joint's x
    of every frame contiguous, then its y ...), as the levels compute them: each is written
    as whole rows of frames, and the solve's readers (the legs' measures, the leg solver's
    rows, the pelvis's shift) read them that way too, a joint's component over every frame
    in one contiguous pass where the default layout steps three or four values at a time.
    """
    order, roots, steps = _plan(tuple(skeleton.parents.tolist()), None if joints is None else tuple(joints),
                                tuple(positions_only))
    # (k, joints, F): a joint's frames after another's, a component at a time (see :func:`_level_rows`).
    local_rot, local_pos = (values.transpose(2, 1, 0).take(order, axis=1) for values in (rot, pos))
    global_rot, global_pos = np.empty_like(local_rot), np.empty_like(local_pos)
    global_rot[:, :roots], global_pos[:, :roots] = local_rot[:, :roots], local_pos[:, :roots]
    # The same, a component's row of every joint's frames (k, joints F): a level's rows are a slice.
    frames = rot.shape[0]
    local_rot_rows, local_pos_rows, global_rot_rows, global_pos_rows = (
        values.reshape(values.shape[0], -1) for values in (local_rot, local_pos, global_rot, global_pos))
    for start, stop, parent_rows, rotations in steps:
        here = slice(start * frames, stop * frames)
        if isinstance(parent_rows, range):
            parents_here = slice(parent_rows.start * frames, parent_rows.stop * frames)
            parent_rot, parent_pos = global_rot_rows[:, parents_here].T, global_pos_rows[:, parents_here].T
        else:
            parent_rot, parent_pos = (_level_rows(values.take(parent_rows, axis=1))
                                      for values in (global_rot, global_pos))
        if rotations:
            quat.multiply_and_rotate(parent_rot, local_rot_rows[:, here].T, local_pos_rows[:, here].T,
                                     global_rot_rows[:, here].T, global_pos_rows[:, here].T, parent_pos)
        else:
            np.add(quat.rotate(parent_rot, local_pos_rows[:, here].T), parent_pos, out=global_pos_rows[:, here].T)
    grot, gpos = (_globals_like(values, by_component) for values in (rot, pos))
    grot.T[:, order], gpos.T[:, order] = global_rot, global_pos
    return grot, gpos


@lru_cache(maxsize=16)
def _plan(parents, joints, positions_only):
    """How :func:`forward_kinematics` computes ``joints`` (all where None) of a skeleton of
    ``parents``: the joints in the order of their levels, how many roots lead them, and each
    further level's rows (first, stop), its parents' (a range where they are the level above, in
    order, else their rows) and whether its rotations are computed. Made once per rig, to be
    read only: every solve of it asks for the same, and working it out took 15 of the 205 us
    of a click's kinematics."""
    levels = _levels(parents, range(len(parents)) if joints is None else _closure(parents, joints))
    order = [j for level in levels for j in level]
    row_of = {j: row for row, j in enumerate(order)}
    roots = len(levels[0]) if levels else 0  # (every ancestor of a joint is among them)
    start, skipped, steps = roots, set(positions_only), []
    for above, level in pairwise(levels):
        stop = start + len(level)
        parent_rows = [row_of[parents[j]] for j in level]
        if parent_rows == list(range(start - len(above), start)):
            parent_rows = range(start - len(above), start)
        steps.append((start, stop, parent_rows, not skipped.issuperset(level)))
        start = stop
    return order, roots, steps


def _level_rows(values):
    """``values`` (k, joints, F) as rows (joints F, k), stored a component at a time (as the
    quaternion helpers lay out their results): a view."""
    return values.reshape(values.shape[0], -1).T


def _globals_like(values, by_component):
    """An uninitialized array shaped as ``values`` (F, n, k); with ``by_component`` stored a
    joint's component at a time (each joint's x of every frame contiguous, then its y ...)."""
    if not by_component:
        return np.empty_like(values)
    frames, count, size = values.shape
    return np.empty((count, size, frames)).transpose(2, 0, 1)


@dataclass
class Pose:
    """A skeleton's local and global transforms over frames, which the leg solver
    changes in place: it writes local rotations (and the pelvis's translation) and
    keeps the globals of the joints it reads up to date."""

    skeleton: Skeleton
    rot: np.ndarray  # (F, n, 4) local rotations
    pos: np.ndarray  # (F, n, 3) local translations
    grot: np.ndarray  # (F, n, 4) global rotations
    gpos: np.ndarray  # (F, n, 3) global positions

    def update(self, joints):
        """Recompute the globals of ``joints`` (parents first) from their parents' globals."""
        parents = self.skeleton.parents
        for j in joints:
            p = parents[j]
            if p < 0:
                self.grot[:, j] = self.rot[:, j]
                self.gpos[:, j] = self.pos[:, j]
            else:
                quat.multiply_and_rotate(self.grot[:, p], self.rot[:, j], self.pos[:, j], self.grot[:, j],
                                         self.gpos[:, j], self.gpos[:, p])

    def turn(self, joint, world_rotation):
        """Turn ``joint`` by ``world_rotation`` (F, 4) about itself, writing its local and
        global rotation (its position stays); the joints below it are updated by
        :meth:`update`."""
        new_global = quat.multiply(world_rotation, self.grot[:, joint], out=self.grot[:, joint])
        parent = self.skeleton.parents[joint]
        if parent >= 0:
            local_rotation(self.grot[:, parent], new_global, out=self.rot[:, joint])
        else:
            self.rot[:, joint] = new_global

    def place(self, joint, world_positions):
        """Translate ``joint`` so it sits at ``world_positions`` (F, 3), writing its
        local translation; update the joints below with :meth:`update`."""
        parent = self.skeleton.parents[joint]
        if parent < 0:
            self.pos[:, joint] = world_positions
        else:
            self.pos[:, joint] = local_position(self.grot[:, parent], self.gpos[:, parent], world_positions)


def _closure(parents, joints):
    """``joints`` and all their ancestors in a skeleton of ``parents``, parents first."""
    needed = set()
    for joint in joints:
        while joint >= 0 and joint not in needed:
            needed.add(joint)
            joint = parents[joint]
    return sorted(needed)


def _levels(parents, joints):
    """``joints`` (parents first) by depth in the tree: groups whose parents are all in earlier
    groups or not among ``joints``, computed together (:func:`forward_kinematics`)."""
    depth = {}
    for j in joints:
        depth[j] = depth[parents[j]] + 1 if parents[j] in depth else 0
    levels = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for j, d in depth.items():
        levels[d].append(j)
    return levels


def joint_runs(joints):
    """Slices of the runs of consecutive joints in ``joints`` (indices, in order): a chain as
    BVH files and Blender's armatures list it is one or two runs (the toe tip is often listed
    last), which numpy reads and writes as slices several times faster than by the joints'
    indices."""
    runs, start = [], 0
    for end in range(1, len(joints) + 1):
        if end == len(joints) or joints[end] != joints[end - 1] + 1:
            runs.append(slice(joints[start], joints[end - 1] + 1))
            start = end
    return runs


def inverse_kinematics_locals(skeleton, grot, gpos):
    """Local rotations and translations (F, n, 4) / (F, n, 3) from global ones: the
    inverse of :func:`forward_kinematics` (a root's local transform is its global one)."""
    rot, pos = grot.copy(), gpos.copy()
    child = np.flatnonzero(skeleton.parents >= 0)
    parent = skeleton.parents[child]
    rot[:, child] = local_rotation(grot[:, parent], grot[:, child])
    pos[:, child] = local_position(grot[:, parent], gpos[:, parent], gpos[:, child])
    return rot, pos


def local_rotation(parent_global_rot, global_rot, out=None):
    """Local rotation that gives ``global_rot`` under a parent with ``parent_global_rot``,
    written to ``out`` where given."""
    return quat.multiply(parent_global_rot, global_rot, out=out, conjugate_a=True)


def local_position(parent_global_rot, parent_global_pos, global_pos):
    """Local translation that puts a joint at ``global_pos`` under the given parent."""
    return quat.rotate(quat.conjugate(parent_global_rot), global_pos - parent_global_pos)


def scale_root_motion(skeleton, motion, factor, up):
    """A copy of ``motion`` whose roots travel ``factor`` times as far horizontally,
    about the first frame: the classic way a runtime makes a clip slide (and the
    clips README's test scenario)."""
    scaled = motion.copy()
    for root in np.flatnonzero(skeleton.parents < 0):
        offset = scaled.pos[:, root] - scaled.pos[0, root]
        scaled.pos[:, root] = scaled.pos[0, root] + offset + (factor - 1.0) * quat.horizontal(offset, up)
    return scaled


def check_motion(skeleton, motion):
    """Raise :class:`SolverInputError` for motion the solvers must not touch."""
    n = len(skeleton)
    if motion.rot.ndim != 3 or motion.rot.shape[1:] != (n, 4) or motion.pos.shape != motion.rot.shape[:2] + (3,):
        raise SolverInputError(f"motion arrays must be (frames, {n}, 4) and (frames, {n}, 3)")
    if motion.frames < 2:
        raise SolverInputError(f"the clip has {motion.frames} frame(s); foot locking needs at least 2")
    if not (np.isfinite(motion.fps) and motion.fps > 0):
        raise SolverInputError(f"frame rate must be positive, got {motion.fps}")
    for label, array in (("rotation", motion.rot), ("position", motion.pos)):
        if np.isfinite(array).all():
            continue  # the usual case, checked in one pass; the details only for the message
        bad = ~np.isfinite(array).all(axis=-1)
        if bad.any():
            frame, joint = np.argwhere(bad)[0]
            raise SolverInputError(
                f"{label} of {skeleton.names[joint]!r} is not a number at frame index {frame} "
                f"({int(bad.sum())} bad values in all)"
            )
