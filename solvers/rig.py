"""Which joints make the pelvis and the legs of a skeleton."""

from dataclasses import dataclass


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


@dataclass
class Rig:
    pelvis: int
    legs: list
