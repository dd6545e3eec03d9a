"""Which joints make the pelvis and the legs of a skeleton, and how long the legs are."""

from dataclasses import dataclass

import numpy as np


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


def leg_bone_length(gpos, leg):
    """Thigh plus shin of one leg over a clip (F, n, 3): the median over frames, so a
    glitchy frame of stretchy mocap does not set it. The one definition of a leg's
    length, for its reach and for every threshold scaled to the character."""
    thigh = np.linalg.norm(gpos[:, leg.knee] - gpos[:, leg.hip], axis=-1)
    shin = np.linalg.norm(gpos[:, leg.ankle] - gpos[:, leg.knee], axis=-1)
    return float(np.median(thigh + shin))


def leg_length(gpos, rig):
    """Mean leg length of the rig: the character's size for scale-free thresholds."""
    return float(np.mean([leg_bone_length(gpos, leg) for leg in rig.legs]))
