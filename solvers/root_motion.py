"""Root motion from the feet: the travel that makes an in-place clip's planted feet stand still.

A game-style in-place walk keeps its root where it is while the planted feet glide
backward together under the body: the engine adds the travel at run time. Here that
travel is found from the feet. Each frame's step of the travel is minus the planted toes'
step (so a planted toe, carried by it, does not move); which toes are planted is found by
labelling the contacts of the clip as it would look travelling, starting from the lower
foot and refining twice. Frames where no foot is planted (a run's flight) keep the speed
of the stances around them.

A looping clip is solved tiled (the cycles around it give its seam the context it has when
played) so the travel's speed loops and the travel repeats with its per-cycle offset.
"""

from functools import lru_cache

import numpy as np

from .contacts import (
    REFERENCE_LEG_LENGTH,
    across,
    detect_contacts,
    frame_columns,
    heights_along,
    lowest_row,
    read_only,
    span_ends,
    window_sum,
)
from .kinematics import SolverInputError, forward_kinematics, local_position
from .quaternion import dots, gradient, horizontal, lengths
from .rig import leg_length, leg_length_from_locals

# In place: over a second, the lower foot glides at least this fast (m/s for the reference
# adult) while the root covers less than this share of the glide; for this share of the clip.
GLIDING_FOOT_SPEED = 0.3
STILL_ROOT_SHARE = 0.25
GLIDING_SHARE = 0.25
# ... and the higher foot, swinging, travels against the glide (against the root) by at least
# this share of it: a walk in place steps forward what it glides back.
STEPPING_SHARE = 0.25
WINDOW = 1.0  # s
MAX_SPEED = 10.0  # m/s: faster is a glitch in the capture (a popping frame), not a glide
REFINEMENTS = 2
# A root that goes farther than this, in leg lengths, from the first frame to the last travels
# by itself (an in-place clip's sways less than a step): finding its travel again from its
# feet rewrites it, which is legitimate (a root whose speed does not match its steps) but said.
TRAVELLING_LEGS = 1.0
# Every gait plants each foot a fifth of its cycle or more (a sprint, a gallop): with the feet
# found planted for less than this share of the frames on average, the labels are not of a
# gait the travel can come from (a flip, or a clip the labeller cannot read: the glTF fox's
# Run, a gallop at 24 fps whose stances last 1-3 frames, went backwards from one foot's few
# frames, or forwards an eighth of the way its feet slide back from another's).
MIN_PLANTED_SHARE = 0.15


def lower_foot_velocity(toes, up, fps):
    """(F, 3) horizontal velocity of whichever toe is nearer its own lowest height."""
    return _of_lowest(_horizontal_velocities(toes, up, fps), _above_lowest(toes, up))


def _horizontal_velocities(points, up, fps):
    """Horizontal velocities (L, F, 3) of points (L, F, 3), by central differences."""
    return across(gradient(points, axis=1) * fps, up)


def _above_lowest(toes, up):
    """How far each of the toes (L, F, 3) is above its own lowest height, (L, F)."""
    heights = heights_along(toes, up)
    return heights - heights.min(axis=1, keepdims=True)


def _of_lowest(velocity, above):
    """Of the toes' horizontal velocities (L, F, 3), those (F, 3) of the toe nearest its own
    lowest height at each frame, ``above`` (L, F) their :func:`_above_lowest`; with ``above``
    negated, of the one farthest above it (a swinging foot: ``np.argmax``'s ties and NaN alike)."""
    # Each frame's toe taken by flat index (indexing by toe and frame costs several times more).
    frames = above.shape[1]
    return velocity.reshape(-1, velocity.shape[-1]).take(lowest_row(above) * frames + np.arange(frames), axis=0)


def is_in_place(toes, root, up, fps, leg_length):
    """Whether the clip walks in place: for a good part of it, the lower foot glides
    steadily one way (averaged over a second) while the root stays put and the swinging foot
    steps the other way. A standing idle glides nowhere; a walk's planted feet stand still
    while its root travels; a foot shuffling about averages out; feet skating under a body
    that stands or walks slowly glide, but what swings does not step against it."""
    if toes.shape[1] < 3:
        return False
    scale = leg_length / REFERENCE_LEG_LENGTH
    half = max(1, round(0.5 * WINDOW * fps))
    cap = MAX_SPEED * scale
    # The toes' and the root's velocities as rows of one array.
    velocity = _horizontal_velocities(np.concatenate([toes, root[None]]), up, fps)
    above = _above_lowest(toes, up)
    glide_velocity = _windowed_mean(_capped(_of_lowest(velocity[:-1], above), cap), half)
    glide = lengths(glide_velocity)
    gliding = glide > GLIDING_FOOT_SPEED * scale
    # Where the lower foot glides that fast on too few frames (a walk's planted feet stand still:
    # the usual case), the clip glides too little whatever its root and its swing do, and neither
    # is measured (each velocity is capped and averaged on its own: the numbers of all at once).
    if np.count_nonzero(gliding) / gliding.size < GLIDING_SHARE:
        return False
    root_velocity, higher = velocity[-1], _of_lowest(velocity[:-1], np.negative(above))
    # The root's and the swing's velocities (F, 3) capped and averaged as the rows of one
    # (2, F, 3) array (joined by np.array, without np.stack's Python layers).
    root_mean, swing = _windowed_mean(_capped(np.array([root_velocity, higher - root_velocity]), cap), half)
    root_speed = lengths(root_mean)
    stepping = -dots(swing, glide_velocity) > STEPPING_SHARE * glide**2
    gliding &= (root_speed < STILL_ROOT_SHARE * glide) & stepping
    return np.count_nonzero(gliding) / gliding.size >= GLIDING_SHARE  # (a mean's number, without np.mean's Python layers)


def _capped(velocity, cap):
    speed = lengths(velocity)[..., None]
    return velocity * np.minimum(1.0, cap / np.maximum(speed, 1e-12))


def _windowed_mean(values, half):
    """Mean of (..., F, k) values over the frames within ``half`` of each (fewer at the ends)."""
    return window_sum(values, half, axis=-2) / _window_counts(values.shape[-2], half, values.shape[-1])


@lru_cache(maxsize=4)
def _window_counts(frames, half, size):
    """How many frames :func:`_windowed_mean` averages at each of a clip's ``frames``, as columns
    (F, ``size``) (see :func:`~.contacts.frame_columns`). The same for every call on a clip:
    worked out once (numpy calls on a few hundred frames), read-only."""
    ahead, behind, _ = span_ends(frames, half)  # the frames each window reaches to
    (counts,) = read_only(frame_columns(ahead + 1 - behind, size))
    return counts


def feet_travel(toes, up, fps, leg_length, settings=None, looped=False):
    """Travel (F, 3), horizontal, zero at the first frame, that makes the planted toes of
    ``toes`` (L, F, 3) stand still; and the contacts (L, F) it was found with.

    ``looped``: frames ``0..P`` are one cycle (frame P is frame 0 again).
    """
    frames = toes.shape[1]
    if looped:
        period = frames - 1
        copies = 3
        index = np.concatenate([np.tile(np.arange(period), copies), [period]])
        travel, contacts = feet_travel(toes[:, index], up, fps, leg_length, settings)
        middle = slice(period, 2 * period + 1)
        return travel[middle] - travel[period], contacts[:, middle]
    steps = horizontal(np.diff(toes, axis=1), up)  # (L, F-1)
    travel_steps = -lower_foot_velocity(toes, up, fps)[:-1] / fps
    contacts = None
    for _ in range(REFINEMENTS + 1):
        travel = np.concatenate([np.zeros((1, 3)), np.cumsum(travel_steps, axis=0)])
        contacts, _ = detect_contacts(toes + travel[None], travel, up, fps, leg_length, settings)
        travel_steps = _planted_steps(steps, contacts, travel_steps)
    travel = np.concatenate([np.zeros((1, 3)), np.cumsum(travel_steps, axis=0)])
    return travel, contacts


def _planted_steps(steps, contacts, fallback):
    """Minus the planted toes' mean step per frame step; steps without a planted toe take
    the speed of the nearest stances (interpolated), or ``fallback`` without any stance."""
    weight = np.minimum(contacts[:, 1:], contacts[:, :-1])  # (L, F-1)
    total = weight.sum(axis=0)
    planted = total > 0
    if not planted.any():
        return fallback
    mean = -(weight[..., None] * steps).sum(axis=0) / np.where(planted, total, 1.0)[:, None]
    at = np.arange(len(total))
    return np.stack([np.interp(at, at[planted], mean[planted, axis]) for axis in range(3)], axis=-1)


def with_travel(skeleton, motion, joint, travel):
    """A copy of ``motion`` whose ``joint`` (and everything below it) is carried by
    ``travel`` (F, 3, world); its parent, if any, stays where it is."""
    moved = motion.copy()
    parent = skeleton.parents[joint]
    if parent < 0:
        moved.pos[:, joint] += travel
        return moved
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, [joint])
    moved.pos[:, joint] = local_position(grot[:, parent], gpos[:, parent], gpos[:, joint] + travel)
    return moved


def travel_before_and_after(skeleton, motion, pelvis, travel, up):
    """How far (world units) the pelvis travels horizontally from the first frame to the
    last in ``motion``, and with ``travel`` (F, 3) (:func:`plant_feet`'s) added: a clip that
    already travels keeps most of its own, so the added travel alone says little."""
    _, gpos = forward_kinematics(skeleton, motion.rot[[0, -1]], motion.pos[[0, -1]], [pelvis])
    before = horizontal(gpos[1, pelvis] - gpos[0, pelvis], up)
    return float(np.linalg.norm(before)), float(np.linalg.norm(before + horizontal(travel[-1] - travel[0], up)))


def travel_rewritten(skeleton, motion, rig, before, after, metres=1.0):
    """A warning (a list) where the root of ``motion`` already travelled ``before`` (world
    units, :func:`travel_before_and_after`) farther than :data:`TRAVELLING_LEGS` leg lengths:
    its travel found again from its feet is ``after``. ``metres``: metres per world unit."""
    if before <= TRAVELLING_LEGS * leg_length_from_locals(skeleton, motion.rot, motion.pos, rig):
        return []
    return [f"the clip already travelled {before * metres:.2f} m (Root Motion from Feet is for in-place clips): it "
            f"now travels {after * metres:.2f} m, the travel found again from its planted feet"]


def travel_summary(before, after, frames):
    """The figures of Root Motion from Feet for the status bar and the command line (metres)."""
    return f"the root travels {after:.2f} m over {frames} frames ({before:.2f} m before)"


def plant_feet(skeleton, motion, rig, up, settings=None, looped=False):
    """``motion`` carried by the travel of its feet (see :func:`feet_travel`) on the rig's
    translation joint (``rig.pelvis``); returns (motion, travel, contacts). Raises
    :class:`SolverInputError` where the feet are not found planted for long enough to take
    a travel from (:data:`MIN_PLANTED_SHARE`)."""
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, [leg.toe for leg in rig.legs])
    toes = np.stack([gpos[:, leg.toe] for leg in rig.legs])
    travel, contacts = feet_travel(toes, up, motion.fps, leg_length(gpos, rig), settings, looped)
    planted = float((contacts > 0.5).mean())
    if planted < MIN_PLANTED_SHARE:
        raise SolverInputError(
            f"the feet are found planted on {100 * planted:.0f}% of the frames on average (a gait plants each foot "
            f"{100 * MIN_PLANTED_SHARE:.0f}% of the time or more): a travel taken from them would be a guess, so "
            "none is keyed")
    return with_travel(skeleton, motion, rig.pelvis, travel), travel, contacts
