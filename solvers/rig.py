"""Which joints make the pelvis and the legs of a skeleton, and how long the legs are."""

import math
import sys
from dataclasses import dataclass

import numpy as np

from . import quaternion as quat


@dataclass
class Leg:
    """One leg as joint indices of a :class:`~.kinematics.Skeleton`.

    ``toe`` is the point that gets locked (the ball of the foot: head of the toe
    bone, or the foot's tail where a rig has no toe bone). ``toe_end`` is the toe
    tip (the toe bone's tail) or ``None`` where there is no toe bone.
    """

    name: str
    hip: int
    knee: int
    ankle: int
    toe: int
    toe_end: int | None = None

    @property
    def tip(self) -> int:
        """The last joint of the leg: the toe tip, or the ball where there is no toe bone."""
        return self.toe_end if self.toe_end is not None else self.toe

    @property
    def has_toe_bone(self) -> bool:
        return self.toe_end is not None


@dataclass
class Rig:
    """The joints the foot lock moves.

    ``pelvis`` is the joint whose translation moves the body (the hips bone of a
    humanoid, BVH's ``Hips``): the solve translates it and rotates nothing above
    the legs. ``legs`` are locked and solved one by one, in this order.
    """

    pelvis: int
    legs: list[Leg]


def leg_bone_lengths(gpos, legs):
    """Thigh plus shin of each of ``legs`` (L,) over a clip (F, n, 3): the median over
    frames, so a glitchy frame of stretchy mocap does not set it. The one definition of a
    leg's length, for its reach and for every threshold scaled to the character. The legs
    are measured as rows of one array."""
    joints = gpos[:, [getattr(leg, role) for role in ("hip", "knee", "ankle") for leg in legs]]  # one gather
    hip, knee, ankle = (joints[:, i * len(legs) : (i + 1) * len(legs)] for i in range(3))  # (F, L, 3)
    return _median_length(knee - hip, ankle - knee, axis=0)


def _median_length(thigh, shin, axis=None):
    """The median over frames of the thigh's plus the shin's length, from their vectors
    (F, 3), or (F, L, 3) with ``axis`` 0 for one per leg."""
    return quat.median(quat.length(thigh) + quat.length(shin), axis=axis)


def leg_length(gpos, rig):
    """Mean leg length of the rig: the character's size for scale-free thresholds."""
    return mean_leg_length(leg_bone_lengths(gpos, rig.legs))


def mean_leg_length(bone_lengths):
    """The mean of the legs' lengths (L,): ``np.mean``'s number without its overhead (its
    sum, then a division by the count)."""
    bone_lengths = np.asarray(bone_lengths)
    return float(np.add.reduce(bone_lengths) / len(bone_lengths))


def leg_length_from_locals(skeleton, rot, pos, rig):
    """:func:`leg_length` from local transforms (F, n, 4) / (F, n, 3) alone, without
    posing the body: a segment's length does not depend on the frame it is measured in,
    so each thigh is measured in its hip's frame and each shin in its knee's, which turns
    nothing above the knee (cheaper than forward kinematics of the whole chain from the
    root, for a check that runs before the solve poses the body itself). The legs' thighs
    and shins are rows of one array (2, L, F, 3), measured at once."""
    segments = np.empty((2, len(rig.legs)) + pos.shape[:1] + (3,))
    for i, leg in enumerate(rig.legs):
        segments[0, i] = offset_below(skeleton, rot, pos, leg.hip, leg.knee)
        segments[1, i] = offset_below(skeleton, rot, pos, leg.knee, leg.ankle)
    return mean_leg_length(_median_length(*segments, axis=-1))


def offset_below(skeleton, rot, pos, top, joint):
    """Where ``joint`` lies in ``top``'s frame on every frame (F, 3): the local transforms
    of the joints between them (usually none) composed from the bottom up."""
    chain = skeleton.chain(top, joint)[1:]
    offset = pos[:, chain[-1]]
    for above in reversed(chain[:-1]):
        offset = pos[:, above] + quat.rotate(rot[:, above], offset)
    return offset


def standing_direction(hips, ankles):
    """Unit vector from the ankles up to the hips ((L, F, 3) each), summed over the legs and
    frames: the way the clip stands (its up, unless it lies on its side or stands on its hands)."""
    # (By einsum: the sum's numbers, where numpy's sum over the frames adds a vector of
    # three at a time, at more than twice the cost.)
    along = np.einsum("lfi->i", hips - ankles)
    # (np.linalg.norm's number, the square root of the vector's dot product with itself, and
    # the smallest normal float, without their Python layers: 3 us a solve.)
    return along / max(math.sqrt(along.dot(along)), sys.float_info.min)


STANDING_COSINE = 0.5  # legs further than 60 degrees from up do not stand on the ground


def stands_along(hips, ankles, up):
    """Whether the legs (hips, ankles (L, F, 3)) stand along ``up``, within 60 degrees over
    the clip (:func:`standing_direction`)."""
    return float(standing_direction(hips, ankles) @ np.asarray(up, dtype=float)) >= STANDING_COSINE


def nearest_axis(direction):
    """The world axis (a unit vector along X, Y or Z, either way) nearest to ``direction``,
    and its name (``"+Y"``, ``"-Z"`` ...)."""
    axis = int(np.argmax(np.abs(direction)))
    sign = 1.0 if direction[axis] > 0 else -1.0
    return tuple(sign if i == axis else 0.0 for i in range(3)), ("+" if sign > 0 else "-") + "XYZ"[axis]

