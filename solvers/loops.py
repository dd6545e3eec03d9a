"""Cyclic clips solved as loops.

A loop's frames ``0..P`` hold one cycle whose last frame is its first again (plus, for a
travelling loop, the distance one cycle covers: Blender's "Repeat with Offset"). Solved
as an ordinary clip, its contacts would end at the seam and every lock near the ends
would be solved without the other side, so the result would no longer loop. Here the
cycle is tiled (enough cycles either side of one, each translated by one cycle's offset), solved once,
and the middle copy is kept: its contacts and locks see the cycles before and after it,
as a player looping the clip does. What little mismatch is left between its first and
last frame is spread over the cycle, so the result loops exactly.
"""

import numpy as np

from . import quaternion as quat
from .foot_lock import remove_foot_sliding
from .kinematics import forward_kinematics
from .rig import leg_length

# Cycles solved on either side of the kept one, at least this long: the pelvis correction
# of an end, where the tiled clip stops, fades by about 20x per second into the clip.
CONTEXT_SECONDS = 2.0
ROTATION_TOLERANCE = np.radians(0.2)  # first and last pose "equal": within this angle ...
POSITION_TOLERANCE = 1e-3  # ... and this share of the leg length


def cycle_offset(motion):
    """(n, 3) translation one cycle adds to each joint's local position (frame P minus 0)."""
    return motion.pos[-1] - motion.pos[0]


def is_closed_loop(skeleton, motion, rig, up):
    """Whether the clip's last pose is its first: every rotation within a fraction of a
    degree, every translation within a millimetre per metre of leg length, the roots
    allowed to have travelled across the ground (a loop repeated with offset)."""
    return motion.frames >= 3 and ends_meet(skeleton, motion, rig, up)


def ends_meet(skeleton, motion, rig, up):
    """The pose comparison of :func:`is_closed_loop` between the first and the last frame
    of ``motion``, whatever its length (e.g. a clip's two ends read alone)."""
    turn = 2.0 * np.arccos(np.clip(np.abs(np.sum(motion.rot[0] * motion.rot[-1], axis=-1)), 0.0, 1.0))
    if not turn.max() <= ROTATION_TOLERANCE:
        return False  # most clips: told without the leg length
    legs = [leg.ankle for leg in rig.legs]  # the leg length reads hips, knees and ankles only
    size = leg_length(forward_kinematics(skeleton, motion.rot[:1], motion.pos[:1], legs)[1], rig)
    offset = cycle_offset(motion)
    roots = skeleton.parents < 0
    offset[roots] = offset[roots] @ np.asarray(up, dtype=float)[:, None] * np.asarray(up, dtype=float)
    return bool(np.linalg.norm(offset, axis=-1).max() <= POSITION_TOLERANCE * size)


def tile(motion, copies, frame_values=()):
    """``copies`` cycles of a loop, each translated by one more cycle's offset, plus the
    closing frame; ``frame_values`` (arrays with frames on their last axis, e.g. contact
    rows) are repeated alongside. Returns (motion, [tiled values])."""
    period = motion.frames - 1
    count = copies * period + 1
    index = np.arange(count) % period
    index[-1] = period
    shift = (np.arange(count) // period)[:, None, None] * cycle_offset(motion)[None]
    shift[-1] = (copies - 1) * cycle_offset(motion)
    tiled = type(motion)(motion.rot[index], motion.pos[index] + shift, motion.fps, dict(motion.meta))
    return tiled, [np.asarray(values)[..., index] for values in frame_values]


def close_seam(motion, offset):
    """A copy of one cycle whose last frame is exactly its first (plus ``offset``), the
    mismatch spread linearly over the cycle (positions) and as a growing fraction of the
    rotation between them (rotations), so no frame jumps. Returns (motion, mismatch):
    the largest position mismatch before closing, in world units."""
    period = motion.frames - 1
    fraction = np.arange(motion.frames) / period
    pos_error = motion.pos[-1] - motion.pos[0] - offset
    closed = motion.copy()
    closed.pos -= fraction[:, None, None] * pos_error[None]
    # The rotation that takes the last frame's rotation back onto the first's, in part.
    correction = quat.multiply(motion.rot[0], quat.conjugate(motion.rot[-1]))
    correction *= np.where(correction[..., :1] < 0.0, -1.0, 1.0)
    angle = 2.0 * np.arccos(np.clip(correction[..., 0], -1.0, 1.0))
    axis = quat.normalize(correction[..., 1:])
    partial = quat.from_axis_angle(axis[None], fraction[:, None] * angle[None])
    closed.rot = quat.normalize(quat.multiply(partial, motion.rot))
    closed.rot[-1] = motion.rot[0]
    closed.pos[-1] = motion.pos[0] + offset
    return closed, float(np.linalg.norm(pos_error, axis=-1).max())


def copies_needed(period, fps):
    """Odd number of cycles to tile: the middle one with CONTEXT_SECONDS on either side."""
    return 1 + 2 * int(np.ceil(CONTEXT_SECONDS * fps / period))


def solve_loop(skeleton, motion, rig, up=(0.0, 0.0, 1.0), contacts=None, settings=None, unit_scale=1.0,
               heel_contacts=None, keyed=None, first_frame=0):
    """:func:`~.foot_lock.remove_foot_sliding` for a loop (frames ``0..P``, frame P the
    first again): contacts wrap around the seam, the result loops, and the figures are
    those of the kept cycle (``after["loop_seam_cm"]``: how far its ends were apart
    before the seam was closed). ``keyed``: the frames of a cycle holding its keys, as
    :func:`~.foot_lock.remove_foot_sliding` takes them, as ``first_frame``."""
    period = motion.frames - 1
    copies = copies_needed(period, motion.fps)
    unlabelled = np.full((len(rig.legs), motion.frames), np.nan)
    rows = [unlabelled if labels is None else labels for labels in (contacts, heel_contacts)]
    tiled, (tiled_contacts, tiled_heels) = tile(motion, copies, rows)
    if keyed is not None:  # every copy keyed as the cycle is
        keyed = np.unique(np.add.outer(np.arange(copies) * period, keyed))
    middle = slice(period * (copies // 2), period * (copies // 2 + 1) + 1)
    result = remove_foot_sliding(skeleton, tiled, rig, up, contacts=tiled_contacts, settings=settings,
                                 unit_scale=unit_scale, heel_contacts=tiled_heels, measured=middle,
                                 cuts=(), keyed=keyed, first_frame=first_frame)  # the copies join seamlessly
    shift = (copies // 2) * cycle_offset(motion)
    kept = type(motion)(result.motion.rot[middle], result.motion.pos[middle] - shift, motion.fps,
                        dict(motion.meta))
    result.motion, seam = close_seam(kept, cycle_offset(motion))
    result.contacts, result.heel_contacts = result.contacts[:, middle], result.heel_contacts[:, middle]
    result.after["loop_seam_cm"] = 100.0 * seam * unit_scale
    return result
