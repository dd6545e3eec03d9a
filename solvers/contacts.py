"""Automatic foot-contact labels, robust to the sliding they fix.

The seed is "Contact Times" in the article "Inverse Kinematics and Foot Locking: From
Two-Bone IK to Offline Slide Removal" (the team's ``seeds/ik-and-foot-locking.txt``).

The seed thresholds the toe's speed and height. Sliding breaks the speed cue: when a
runtime plays the root faster or slower than the feet step, a planted foot travels with
part of the root's velocity. So the speed that is thresholded is measured against a
*moving ground*: a share ``a(t)`` of the root's horizontal velocity, estimated locally
(over about a second) so that the slower foot -- the planted one in locomotion -- stands
as still as possible; airborne frames are capped so they cannot pull the estimate. Being
local, it follows a root-speed factor that drifts over the clip; being a share of the
root's velocity, it follows turns, starts, stops and reversals. On top of it comes the
drift of the *vertically planted* points -- at their local ground and vertically still for
a tenth of a second, a cue no horizontal sliding touches: a treadmill's belt, a game's
in-place cycle (root still, planted feet moving backward together), a stance foot drifting
on its own, a runtime turning a straight walk (its planted feet swing about the root, ahead
of it one way and behind it the other: the ground turns, as far as the root's path does).
The height cue is also left untouched by sliding: a contact must be near the foot's *local*
ground (the lowest it goes within a quarter second), so stairs, boxes and raised blocks
work. Where most vertically planted frames move faster than the stance
threshold against the root's share alone, the motion skates and its planted frames are
contacts however they slide; where a foot skates as a whole (heel and ball together), its
other frames are judged against the ground it stands on -- the skate its planted frames
show, fitted over a quarter second and carried to the stance's edges, where a toe rolling
off or a heel settling is slow but not still. A gait quicker than a brisk walk (a run, a
dash: stances of a few frames) is labelled in its own time: its speeds and times scaled by
its tempo, which the feet's alternation in height gives (:func:`gait_tempo`).

Every threshold is in seconds or scales with the character's leg length (a reference
adult's values below), so any unit and any frame rate give the same labels in time.
Labels work on any point set (L, F, 3): toes, heels, ball-of-foot markers.
"""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .jitter import jitter, steadied, steadying_kernel, steadying_kernel_for
from .quaternion import cross, dot, dots, horizontal, lengths, median

REFERENCE_LEG_LENGTH = 0.85  # hip-to-ankle bone length of a reference adult, metres
# s from one foot's lift to the other's at a brisk walk (120 steps a minute): the thresholds
# below are a walk's; a quicker gait (a run, a dash) is labelled in its own time.
REFERENCE_STEP_TIME = 0.5
# s a step takes at 100 steps a minute, the slow end of a normal walk's cadence: a gait that
# steps slower still (a cautious, sneaking or elderly walk) is labelled in its own time too.
SLOW_STEP_TIME = 0.6
MAX_TEMPO = 3.0  # a sprinter's step (0.17 s) is the quickest a human gait takes
MIN_TEMPO = 1.0 / 3.0  # a step of 1.8 s, a walk slowed to a crawl
MIN_STEPS = 4  # two strides make a gait; a single quick side-step does not
HEEL_LIFT = 0.005  # m for an adult: a heel higher than this above its contact's lowest is not planted


@dataclass
class ContactSettings:
    speed_threshold: float = 0.25  # m/s for the reference human, against the moving ground
    height_threshold: float = 0.10  # m above the foot's local ground
    ground_window: float = 0.25  # s either side for the local ground (a step, a box)
    vote_window: float = 0.04  # s; majority vote over about 5 frames at 120 fps
    min_gap: float = 0.05  # s; shorter breaks inside a point's stance are filled
    min_swing: float = 0.1  # s; a whole foot off the ground for less did not swing
    widen: float = 0.01  # s; a stance's edges move out by at most this much (a frame at 120 fps)
    smoothing: float = 0.0  # s; > 0 turns labels into a 0..1 ramp of that width
    compensate_slip: bool = True
    velocity_span: float = 1.0 / 60.0  # s either side over which speeds are measured
    max_slip: float = 1.0  # largest root speed mismatch considered, as a fraction
    slip_window: float = 1.0  # s either side over which the root's share is estimated
    # A point surely stands when this close to its local ground and this still vertically for
    # this long; what such points share horizontally is the ground's own drift.
    planted_height: float = 0.03  # m
    planted_vertical_speed: float = 0.1  # m/s
    min_planted: float = 0.1  # s
    drift_window: float = 0.15  # s either side
    # Where most planted frames slide, planted frames count as contacts up to this speed (m/s):
    skate_speed: float = 1.5
    # ... and there a point stands that is this still vertically (m/s; see :func:`label_points`).
    skate_vertical_speed: float = 0.15
    skate_window: float = 0.5  # s either side
    # There each foot's own ground is fitted through its planted frames over this (see
    # :func:`foot_grounds`): wide enough to carry a skate past a stance's edge, short enough
    # to follow one that turns about within a second.
    foot_ground_window: float = 0.25  # s either side
    # Foot-level edges (heel strike, toe-off): a stance found with the thresholds above grows
    # while the point stays this slow and this close to its local ground (hysteresis).
    edge_speed: float = 0.5  # m/s for the reference human: twice the stance threshold
    edge_height: float = 0.04  # m above the point's local ground
    # Capture jitter may read as at most this speed (m/s, std) once the points are smoothed: a
    # third of the planted points' vertical stillness, so noise alone does not lift them.
    jitter_speed: float = 0.1 / 3.0
    max_steadying: float = 0.04  # s, the widest smoothing (Gaussian std) jitter gets


def heights_along(points, up, own=False):
    """The heights of points (..., 3) along the unit ``up``: :func:`~.quaternion.dot`'s numbers
    (but the sign of a zero). Where ``up`` is a world axis (Y- or Z-up: every rig and file) they
    are its coordinate, read as it is (a view: not to be written to) instead of three products;
    with ``own``, copied by a ufunc (a fifth of :func:`~.quaternion.dot`'s cost) into an array
    of its own, frame after frame, as the labeller's many later passes over them read fastest."""
    axis = world_axis(up)
    if axis is None:
        return dot(points, np.asarray(up, dtype=float))
    return np.add(points[..., axis], 0.0) if own else points[..., axis]


def across(vectors, up, height=None):
    """The part of vectors (..., 3) across the unit ``up``: :func:`~.quaternion.horizontal`'s
    numbers (but the sign of a zero); ``height`` their :func:`heights_along`, where known. Along
    a world axis, the vectors with that coordinate zeroed (a copy by a ufunc: ``np.copy``'s
    costs twice as much)."""
    axis = world_axis(up)
    if axis is None:
        return horizontal(vectors, up, height)
    out = np.add(vectors, 0.0)
    out[..., axis] = 0.0
    return out


def world_axis(up):
    """Which world axis (0, 1 or 2) the unit ``up`` is, or None where it is tilted."""
    values = np.asarray(up, dtype=float).tolist()
    return values.index(1.0) if sorted(values) == [0.0, 0.0, 1.0] else None


def up_cross(before, after, up):
    """``up . (before x after)`` of vectors (..., 3). Where ``up`` is a world axis (every rig
    and file), the one component of the cross products along it, as :func:`.quaternion.cross`
    makes it, instead of all three and their dot products with ``up``: the same numbers but
    the sign of a zero (a turn of exactly none or a half turn across: 0 or pi either way)."""
    axis = world_axis(up)
    if axis is None:
        return dots(cross(before, after), up)
    right, left = (axis + 1) % 3, (axis + 2) % 3  # the axes across, in the cross product's order
    return before[..., right] * after[..., left] - before[..., left] * after[..., right]


def up_crossed(up, vectors):
    """``up x vectors`` (..., 3): :func:`.quaternion.cross`'s numbers. Where ``up`` is a world
    axis (every rig and file), its products by the axis's ones and zeros as that makes them,
    each a component or zero times one (a zero of its sign: NaN where it is not finite), the
    zeros from one product of the vectors by 0: three subtractions of components, where the
    cross product gathered its six rows of factors and multiplied them (a third of the cost)."""
    axis = world_axis(up)
    if axis is None:
        return cross(up, vectors)
    right, left = (axis + 1) % 3, (axis + 2) % 3  # the axes across, in the cross product's order
    zeros = np.multiply(vectors, 0.0)
    out = np.empty(vectors.shape)
    np.subtract(zeros[..., axis], vectors[..., left], out=out[..., right])
    np.subtract(vectors[..., right], zeros[..., axis], out=out[..., left])
    np.subtract(zeros[..., left], zeros[..., right], out=out[..., axis])
    return out


def velocity(positions, fps, axis=-2):
    """Central-difference velocity per second along the frame axis."""
    return np.gradient(positions, axis=axis) * fps


def span_velocity(positions, fps, span, axis=-2):
    """Velocity per second as the difference across ``span`` seconds either side (at least a
    frame): the same stretch of motion at any frame rate, so 120 fps mocap jitter does not
    read as speed where 30 fps would smooth it. Ends use the frames there are."""
    positions = positions.swapaxes(axis, 0)  # (swapaxes: a tenth of moveaxis's cost)
    frames = len(positions)
    half = span_frames(fps, span)
    if frames <= 2 * half:  # a clip shorter than the span: every frame is an end
        ahead, behind, steps = span_ends(frames, half)
        steps = steps.reshape((-1,) + (1,) * (positions.ndim - 1))
        return ((positions[ahead] - positions[behind]) * fps / steps).swapaxes(0, axis)
    # In C order of the points' own axes (written through the same swapped view): the points come
    # so, and the differences, made in their layout, are copied in a pass through memory; the
    # labeller's later passes read each point's frames one after another.
    out = np.empty(positions.swapaxes(0, axis).shape)
    along = out.swapaxes(axis, 0)
    along[half:-half] = (positions[2 * half :] - positions[: -2 * half]) * fps / (2 * half)
    # The first and last ``half`` frames reach back (or ahead) only to the clip's ends.
    steps = np.arange(half, 2 * half).reshape((-1,) + (1,) * (positions.ndim - 1))
    along[:half] = (positions[half : 2 * half] - positions[0]) * fps / steps
    along[-half:] = (positions[-1] - positions[-2 * half : -half]) * fps / steps[::-1]
    return out


def span_frames(fps, span):
    """Frames either side :func:`span_velocity` differences across: ``span`` seconds, at least one."""
    return max(1, round(span * fps))


def span_ends(frames, half):
    """For each of ``frames`` frames, the frames :func:`span_velocity` differences: ``half``
    ahead and behind, reaching only to the clip's ends, and the frames between them (at least one)."""
    index = np.arange(frames)
    ahead, behind = np.minimum(index + half, frames - 1), np.maximum(index - half, 0)
    return ahead, behind, np.maximum(ahead - behind, 1)


def frame_columns(values, size=3):
    """``values`` (F,), one per frame, as floats repeated across ``size`` columns (F, size): a
    factor per frame that vectors (..., F, size) are scaled by in one pass. Broadcast as a
    column (``values[:, None]``), it had numpy run an inner loop of ``size`` values per
    vector, at twice the cost."""
    return values.astype(float).repeat(size).reshape(-1, size)


def read_only(*arrays):
    """``arrays`` (a tuple), made read-only: the tables a clip's calls share, worked out once
    (``lru_cache``), must not be changed by one of them."""
    for array in arrays:
        array.flags.writeable = False
    return arrays


def majority_vote(labels, window):
    """Each frame takes the majority label of the ``window`` frames around it (the clip's
    first and last labels repeated beyond its ends)."""
    window = max(1, int(window) | 1)  # odd, so there is always a majority
    if window == 1:
        return labels.copy()
    return edge_padded_count(labels, window // 2) > window // 2


def edge_padded_count(mask, half_width):
    """How many of the ``2 * half_width + 1`` frames around each frame of ``mask`` (..., F)
    are True, its first and last frames repeated beyond the ends: one cumulative sum."""
    return edge_padded_sum(mask, half_width, np.int32)


def edge_padded_sum(values, half_width, dtype):
    """Sums (in ``dtype``) over the ``2 * half_width + 1`` frames around each frame of
    ``values`` (..., F), the first and last frames repeated beyond the ends: the differences
    of one running sum."""
    padded = edge_padded(values, half_width + 1, half_width)
    padded[..., 0] = 0  # the running sum starts at zero
    total = padded.cumsum(axis=-1, dtype=dtype)
    return total[..., 2 * half_width + 1 :] - total[..., : -2 * half_width - 1]


def edge_padded(values, before, after):
    """``values`` (..., F) with the first frame repeated ``before`` times before it and the
    last ``after`` times after it: ``np.pad``'s mode "edge", without its Python overhead (as
    much as the labeller's work on a short clip)."""
    frames = values.shape[-1]
    out = np.empty(values.shape[:-1] + (before + frames + after,), dtype=values.dtype)
    out[..., :before] = values[..., :1]
    out[..., before : before + frames] = values
    out[..., before + frames :] = values[..., -1:]
    return out


def rolling_min(values, half_width):
    """The least of the ``2 * half_width + 1`` values around each frame of ``values`` (..., F),
    the first and last repeated beyond the ends. By doubling: the least of every 2, then 4, 8
    ... values in a row, each from two of the last, then each window's from the two runs of
    the longest that cover it: one vector pass a doubling. Running minima within blocks (van
    Herk / Gil-Werman: three passes whatever the width) run chains of comparisons, each
    waiting on the last: 1.3-1.7 times slower on a 317-frame clip's windows, 3 on 3000."""
    return _rolling(np.minimum, values, half_width)


def rolling_max(values, half_width):
    """The greatest of the ``2 * half_width + 1`` values around each frame (see :func:`rolling_min`)."""
    return _rolling(np.maximum, values, half_width)


def _rolling(pick, values, half_width):
    """:func:`rolling_min`'s doubling, with ``pick`` (np.minimum or np.maximum) of two values."""
    width, frames = 2 * half_width + 1, values.shape[-1]
    runs = edge_padded(values, half_width, half_width)
    # Two arrays in turn, not a fresh one a doubling: those moved the labeller's later arrays
    # about the heap, and :func:`local_slip` ran 8% slower.
    spare = np.empty_like(runs)
    span, count = 1, runs.shape[-1]  # runs[..., i]: the pick of ``span`` padded values from i on
    while 2 * span <= width:
        count -= span
        pick(runs[..., :count], runs[..., span : span + count], out=spare[..., :count])
        runs, spare, span = spare, runs, 2 * span
    return pick(runs[..., :frames], runs[..., width - span : width - span + frames])


DIP_TIME = 0.02  # s: a point dipping below its neighbours for at most twice this is a glitch, not ground


def local_ground(heights, half_width, fps):
    """The local ground under points at ``heights`` (..., F): the lowest they stay within
    ``half_width`` frames either side (of their :func:`without_dips`)."""
    return rolling_min(without_dips(heights, fps), half_width)


def without_dips(heights, fps):
    """``heights`` (..., F) with each dip of a frame or two (a capture's bad first frame, a
    marker dropout: no foot stands for 40 ms) filled (a rolling maximum over ``DIP_TIME``
    either side): taken as the ground, it would hold every frame near it above the ground."""
    return rolling_max(heights, max(1, round(DIP_TIME * fps)))


def stance_ground(levels, lowest):
    """The ground under points whose :func:`local_ground` is ``lowest`` (..., F), ``levels`` the
    lowest their heights (their :func:`without_dips`) stay within that window while slow (a
    stance and its edges; infinite where no such frame is that near: a long swing, a skate; see
    :func:`point_cues`): that level, else ``lowest``. A swing passes low, but fast: walking up a
    ramp, a heel's own swing passes 4 cm below where it lands (at 15 deg, 0.27 m back), and
    taken for the ground it held the landed heel over ``planted_height`` and ``edge_height``:
    its strikes came 35-40 ms late. On level ground a stance is as low as the swing passing
    it, and the ground the same."""
    return np.where(np.isinf(levels), lowest, levels)


def resting(vertical_speed, fps, scale, settings):
    """Frames (..., F) where points moving vertically at ``vertical_speed`` (..., F) rest: still
    (under ``planted_vertical_speed``) for ``min_planted`` or longer."""
    still = np.abs(vertical_speed) < settings.planted_vertical_speed * scale
    return long_runs(still.reshape(-1, still.shape[-1]), round(settings.min_planted * fps)).reshape(still.shape)


def resting_ground(heights, levels, lowest, scale, settings):
    """The ground under points at ``heights`` (..., F) whose :func:`local_ground` is
    ``lowest``, ``levels`` the lowest they stay within ``ground_window`` where they rest
    (:func:`resting`; infinite where they do not; see :func:`point_cues`): where they rest on a
    level a step above it (half ``height_threshold``) and stand on it (within
    ``planted_height``) or above, that level. A foot landing a stair or two above where it
    took off (or taking off for a lower one) stands on its own step: the swing's heights
    within the window, passed through on the way, are no ground (with 17 cm steps, a
    stance's first and last tenths of a second were lost to them). Elsewhere (a level floor,
    a foot settling a few millimetres) the ground is the lowest it stays."""
    band = settings.planted_height * scale
    step = 0.5 * settings.height_threshold * scale
    stepped = (levels > lowest + step) & (heights > levels - band)  # (an infinite level: no rest within the window)
    return np.where(stepped & np.isfinite(levels), levels, lowest)


def window_sum(values, half_width, axis=-1, dtype=float):
    """Sum (in ``dtype``) over ``2 * half_width + 1`` frames around each frame (fewer at the
    clip's ends). A mask's frames are counted as exactly in integers, whose running sum costs a
    third of a float one (numpy adds floats down a row one at a time, each waiting on the last)."""
    values = values.swapaxes(axis, 0)
    total = values.cumsum(axis=0, dtype=dtype)
    return window_sums_of(total, half_width, np.empty_like(total)).swapaxes(0, axis)


def window_sums_of(total, half_width, out):
    """:func:`window_sum`'s sums, into ``out``, from the running ``total`` (frames first) of
    the values summed."""
    frames = len(total)
    # Each window's sum is the running total at its last frame (the clip's last, past the end)
    # less the total before its first, where it starts inside the clip: the numbers of
    # subtracting a zero before the clip, without padding the running total at either end.
    inside = max(frames - half_width, 0)  # windows that end inside the clip
    out[:inside] = total[half_width:]
    out[inside:] = total[-1]
    later = min(half_width + 1, frames)  # the first window that starts after the clip's first frame
    out[later:] -= total[: frames - later]
    return out


def running_sums(pairs):
    """``pairs`` (F, 2 n) of floats replaced by its running sums down the frames (``np.cumsum``'s
    numbers), the columns two at a time as complex numbers, whose parts add as the floats do:
    numpy's running sum is a chain of adds per column, each waiting on the last, and a complex
    add takes two columns' chains a step at once (half the time on :func:`local_slip`'s)."""
    as_complex = pairs.view(complex)
    as_complex.cumsum(axis=0, out=as_complex)
    return pairs


def local_slip(point_velocity, root_velocity, cap, half_width, max_slip=1.0, standing=None):
    """Per-frame share ``a(t)`` (F,) of the root's horizontal velocity the planted points share.

    For each candidate share, the slower point's speed left after removing it (capped, so
    airborne frames do not pull) is summed over a window; each frame takes the best
    candidate of its window, refined between grid points by a parabola; near the clip's ends,
    where the window is cut, moved along the drift to the frame (:func:`_ends_unlagged`).

    Only the frames where a point may stand (``standing`` (P, F), by default all) tell the
    share: feet in the air move with the body, as a ground carrying them along at the root's
    speed would (a jump's flight read as a share of 1: the feet taking off from a box were
    held 60-100 ms into the air). And a share is believed only as far as the frames show it
    (:data:`SHARE_PRIOR`): where nothing tells it (the character standing, the root still,
    or in flight), it is no mismatch at all.
    """
    candidates, twice, squares = _slip_candidates(max_slip)
    # |v - a r|^2 = |v|^2 - 2 a v.r + a^2 |r|^2, so no (points, frames, candidates, 3) array
    # is built, only (frames, candidates) values, point by point. The last term is the same
    # for every point, and rounding is monotonic: it is added once, after the minimum, with
    # the values of adding it to each point first.
    vv, vr, rr = dots(point_velocity, point_velocity), dots(point_velocity, root_velocity), dots(root_velocity, root_velocity)
    if standing is None:
        standing = np.ones(vv.shape, dtype=bool)
    vv[~standing] = np.inf  # as far from every share as the cap below makes any point
    # Two (frames, candidates) arrays, candidates last (the window sums then run down
    # contiguous rows of them), reused for every step: each fresh array of this size is
    # memory the system maps anew, page by page.
    slowest, other = np.empty((2, len(rr), len(twice)))
    # The slower point: where one stands, that one (the others' infinite squares lose every
    # minimum), so each frame's first standing point (a flat index: one take) is worked out
    # over every frame, and another only where it stands too (a stance's hand-over).
    frames = len(rr)
    first = lowest_row(~standing)
    at = first * frames + np.arange(frames)
    _speed_squared(vv.take(at), vr.take(at), twice, slowest)
    # (P - 1, F): standing, not first; never the first point (where it stands, it is first).
    seconds = standing[1:] & (np.arange(1, len(vv))[:, None] != first)
    for point, second in enumerate(seconds, 1):
        also = np.flatnonzero(second)
        if len(also):
            rows = _speed_squared(vv[point, also], vr[point, also], twice, other[: len(also)])
            slowest[also] = np.minimum(slowest[also], rows, out=rows)
    slowest += np.einsum("f,c->fc", rr, squares, out=other)
    # The speeds, at least 0 (a bound as a row, not a number: numpy compares with a number
    # element by element, with a row in vector steps) and at most the cap. Most values are over
    # it (a point against the shares far from its own; cmu_07_01's click: three quarters), and
    # their square roots are the cap's: only the rest (under it, or NaN, as np.minimum keeps
    # it) take their own, and the cap's is copied over the others, where bounding every value
    # and taking every root cost a quarter more. (A point's squared speed is a quadratic in the
    # share: its values under the cap are one span of shares, and a frame's a span or two, the
    # few runs numpy's masked loops take at a time.)
    capped = cap * cap
    over = slowest >= capped
    np.maximum(slowest, np.zeros(len(twice)), out=slowest)
    np.sqrt(slowest, out=slowest, where=~over)
    np.copyto(slowest, np.sqrt(capped), where=over)
    slowest += (SHARE_PRIOR * cap) * squares
    cost = window_sums_of(running_sums(slowest), half_width, other)  # (F, C + 1): see _slip_candidates
    # Each frame's best candidate, kept off the grid's ends, with its two neighbours.
    best = np.minimum(np.maximum(cost.argmin(axis=1), 1), len(candidates) - 2)
    # (By flat index: one take, cheaper than indexing by frame and candidate.)
    left, middle, right = cost.take((best + np.arange(0, cost.size, cost.shape[1]))[:, None] + _NEIGHBOURS).T
    curvature = left - 2.0 * middle + right
    curved = curvature > 0
    shift = np.where(curved, 0.5 * (left - right) / np.where(curved, curvature, 1.0), 0.0)
    share = candidates[best] + np.minimum(np.maximum(shift, -1.0), 1.0) * (candidates[1] - candidates[0])
    return _ends_unlagged(share, half_width, max_slip)


def _speed_squared(vv, vr, twice, out):
    """A point's squared speed (F, C) against each share: ``vv - vr * twice`` into ``out``, its
    ``vv`` (F,) and ``vr`` (F,) as in :func:`local_slip` (outer products by einsum, cheaper
    than a ufunc's broadcast: the same numbers but the sign of a zero product, which ``vv``
    >= 0 less it does not keep). ``vv`` as columns (:func:`frame_columns`): broadcast as a
    column, numpy ran its loop a row of C values at a time, at two and a half times the cost."""
    np.einsum("f,c->fc", vr, twice, out=out)
    return np.subtract(frame_columns(vv, len(twice)), out, out=out)


def _ends_unlagged(share, half_width, max_slip):
    """``share`` (F,), each frame's best over its window (see :func:`local_slip`), without the lag
    at the clip's ends. A window cut by an end is centred inside the clip: where the share
    drifts (a runtime speeding a walk up), a frame there took the share of its window's centre,
    up to half a window late (a run of 1.5 s, drifting 0.8 -> 1.2: 0.1, a third of a metre per
    second at its speed). Near each end the shares are fitted by a line of their windows'
    centres, and each frame whose window the end cuts moves along it to itself."""
    fitted = share.copy()
    for near, cut, spread, spread_squared, offsets in _end_fits(len(share), half_width):
        slope = float(spread @ share[near]) / spread_squared
        fitted[cut] = share[cut] + slope * offsets
    return np.minimum(np.maximum(fitted, -max_slip), max_slip)


@lru_cache(maxsize=4)
def _end_fits(frames, half_width):
    """What :func:`_ends_unlagged` fits at each end of a clip of ``frames`` frames, its windows
    ``half_width`` either side: the frames the fit reads and those it moves (slices), the
    windows' centres there about their mean, its squared norm, and the moved frames' offsets
    from their windows' centres. An end whose windows all have one centre (each is the whole
    clip: no drift to tell) is left out. The same for every call on a clip: worked out once
    (a dozen numpy calls on a few hundred frames), read-only."""
    index = np.arange(frames)
    ahead, behind, _ = span_ends(frames, half_width)  # each frame's window
    centre = 0.5 * (behind + ahead)
    zone = min(2 * half_width + 1, frames)  # the frames an end's fit reads
    fits = []
    # (Slices, not masks; a mean as its sum over the count, without np.mean's Python layer.)
    for near, cut in ((slice(0, zone), slice(0, min(half_width, frames))),
                      (slice(frames - zone, frames), slice(max(frames - half_width, 0), frames))):
        spread = centre[near] - centre[near].sum() / zone
        spread_squared = float(spread @ spread)
        if spread_squared > 0.0:
            spread, offsets = read_only(spread, index[cut] - centre[cut])
            fits.append((near, cut, spread, spread_squared, offsets))
    return tuple(fits)


_NEIGHBOURS = np.array([-1, 0, 1])
# What a share costs each frame, at a share of 1, as a fraction of the cap on a point's speed:
# a share that only a few frames tell (a stance's edge as the feet take off together) yields
# to no mismatch; a real one outweighs it on every stance frame (a root scaled x1.25 at
# 1.3 m/s: share 0 leaves a stance foot 0.26 m/s, share 0.2 costs 0.002).
SHARE_PRIOR = 0.05


@lru_cache(maxsize=4)
def _slip_candidates(max_slip):
    """The shares :func:`local_slip` tries, and twice them and their squares with the first
    share's again after the last: :func:`running_sums` takes their columns in pairs, and that
    extra column's values are the first's, which ``argmin`` (the first of equal values) picks
    before it. Read-only: shared by every call with the same ``max_slip``."""
    candidates = np.linspace(-max_slip, max_slip, 81)
    paired = np.append(candidates, candidates[0])
    return read_only(candidates, 2.0 * paired, paired**2)


@dataclass
class PointCues:
    """What the labeller reads of points (L, F, 3), measured once and shared by its stages
    (the moving ground, the labels, the gap bridging). Every cue is per point, so the heels,
    toes and toe tips of a clip are measured and labelled together, as rows of one array."""

    points: np.ndarray  # (L, F, 3)
    up: np.ndarray  # (3,) unit
    heights: np.ndarray  # (L, F) along ``up``
    # (L, F) above the local ground (:func:`local_ground`): the lowest they stay within
    # ``ground_window`` (a step, a box, a stair is ground too; a glitched frame is not; which
    # frames count, see :func:`point_cues`)
    clearance: np.ndarray
    vertical_speed: np.ndarray  # (L, F), signed, per second (see :func:`span_velocity`)
    horizontal_velocity: np.ndarray  # (L, F, 3), per second
    planted: np.ndarray  # (L, F) surely standing (see :func:`vertically_planted`)

    def rows(self, selection):
        """The cues of the points ``selection`` (a slice of the rows)."""
        return PointCues(self.points[selection], self.up, self.heights[selection], self.clearance[selection],
                         self.vertical_speed[selection], self.horizontal_velocity[selection],
                         self.planted[selection])


def point_cues(points, up, fps, scale, settings, stepping_from=None, point_velocity=None):
    """The :class:`PointCues` of points (L, F, 3) at ``fps`` (the gait's own, see
    :func:`gait_tempo`); the rows from ``stepping_from`` on (the toes, by default none) stand
    on the level they rest at (:func:`resting_ground`), the rows before it (the heels: a heel
    rests raised on tiptoe) on the lowest they stay at while slower than a stance's edge
    (:func:`stance_ground`). ``point_velocity``: their :func:`span_velocity`, if already measured."""
    up = np.asarray(up, dtype=float)
    heights = heights_along(points, up, own=True)  # (not ``@``: see quaternion.horizontal)
    if point_velocity is None:
        point_velocity = span_velocity(points, fps, settings.velocity_span)
    vertical_speed = heights_along(point_velocity, up, own=True)
    horizontal_velocity = across(point_velocity, up, vertical_speed)
    half_width = round(settings.ground_window * fps)
    stepping_from = len(heights) if stepping_from is None else stepping_from
    heels, stepping = slice(stepping_from), slice(stepping_from, None)
    toes = heights[stepping].size > 0
    # The heights whose lowest within the window are the grounds: all (filled: the local ground),
    # then the heels' while slower than a stance's edge (a heel settling, or rolling off) and the
    # toes' where they rest (infinite elsewhere); every row's lowest in one rolling minimum (each
    # row's its own: a call costs about as much on four times the rows).
    lows = np.full((2,) + heights.shape, np.inf)
    filled = without_dips(heights, fps)
    lows[0] = filled
    if stepping_from:
        slow = lengths(horizontal_velocity[heels]) < settings.edge_speed * scale
        np.copyto(lows[1, heels], filled[heels], where=slow)
    if toes:
        np.copyto(lows[1, stepping], heights[stepping], where=resting(vertical_speed[stepping], fps, scale, settings))
    ground, levels = rolling_min(lows, half_width)
    if stepping_from:
        ground[heels] = stance_ground(levels[heels], ground[heels])
    if toes:
        ground[stepping] = resting_ground(heights[stepping], levels[stepping], ground[stepping], scale, settings)
    clearance = heights - ground
    planted = vertically_planted(clearance, vertical_speed, fps, scale, settings)
    return PointCues(points, up, heights, clearance, vertical_speed, horizontal_velocity, planted)


def cues_and_travel(point_sets, root, up, fps, scale, settings, stepping_from=None):
    """The :class:`PointCues` of the points of ``point_sets`` ((L, F, 3) each, rows of one
    array in turn; see :func:`point_cues`) and the horizontal velocity (F, 3) of the ``root``
    (F, 3) carrying the character, measured with the points' in one :func:`span_velocity`
    (a row more: a call of its own cost as much in Python as on a clip's points)."""
    rows = np.concatenate(point_sets + [root[None]])
    velocity = span_velocity(rows, fps, settings.velocity_span)
    return point_cues(rows[:-1], up, fps, scale, settings, stepping_from, velocity[:-1]), across(velocity[-1], up)


def moving_ground(cues, root, root_velocity, fps, scale, settings, fit=slice(None)):
    """Horizontal velocities (2, L, F, 3) of the ground under each point of ``cues`` (its
    :class:`PointCues`) -- with the planted points' own drift, and the root's share alone
    (see :func:`skating_motion`) -- and the mean root-speed share ``a`` (the clip's slip, for
    the report); estimated from the rows ``fit`` of the points (a slice). ``root`` (F, 3) and
    its horizontal velocity ``root_velocity`` (see :func:`cues_and_travel`): the joint carrying
    the character.

    The drift is a rigid motion of the ground: a velocity and a turn about the up axis
    through the root. A runtime that turns a walk turns its planted feet about the root: a
    foot ahead of the root and one behind it move in opposite directions, which no shared
    velocity follows."""
    points, frames = cues.points.shape[:2]
    if not settings.compensate_slip or frames < 3:
        return np.zeros((2, points, frames, 3)), 0.0
    fitted = cues.rows(fit)
    half_width = max(1, round(settings.slip_window * fps))
    cap = 2.0 * settings.speed_threshold * scale
    # A point may stand where it is near its ground and still vertically, as a stance's are.
    standing = ((fitted.clearance < settings.height_threshold * scale)
                & (np.abs(fitted.vertical_speed) < settings.speed_threshold * scale))
    share = local_slip(fitted.horizontal_velocity, root_velocity, cap, half_width, settings.max_slip, standing)
    grounds = np.empty((2, points, frames, 3))  # the drifting ground, then the root's share alone
    ground = np.multiply(share[:, None], root_velocity, out=grounds[1, 0])
    grounds[1, 1:] = ground
    # Each point's lever about the root: the ground turning at w moves it at w (up x lever).
    # (up x the whole offset: its part along up crosses to nothing. Its horizontal part,
    # taken first, cost as much again for the same numbers where up is a world axis.)
    levers = up_crossed(cues.up, cues.points - root[None])
    # The ground turns with the path the root travels, never further: feet skating to and
    # fro on their own, one ahead and one behind, look like a turn of a straight walk's ground.
    path = path_turn(root_velocity, cues.up, max(1, round(PATH_WINDOW * fps)), fps, PATH_SPEED * scale)
    velocity, turn = planted_drift(fitted.horizontal_velocity - ground[None], fitted.planted, levers[fit],
                                   max(1, round(settings.drift_window * fps)), (TURN_LEVER * scale) ** 2,
                                   max(1, round(TURN_WINDOW * fps)), path)
    # A drift well inside the speed threshold is left alone (a planted toe's own jitter and
    # roll); a larger one is removed down to that margin.
    drift = velocity[None] + frame_columns(turn) * levers
    np.add(ground[None], shrink(drift, 0.5 * settings.speed_threshold * scale), out=grounds[0])
    return grounds, float(median(share))


# m for an adult: a turn of the ground is told from its drift only where the planted points'
# levers about the root spread at least about this far within the turn's window ...
TURN_LEVER = 0.03
# ... of this many seconds either side: a runtime turns a walk slowly, and over half a second
# a planted foot's lever swings from ahead of the root to behind it.
TURN_WINDOW = 0.5
# s: the root's path turns from its mean travel over this long before each frame to that
# after it (half a stride each: the sway averages out); slower than PATH_SPEED (m/s for an
# adult) it has no direction to turn.
PATH_WINDOW = 0.5
PATH_SPEED = 0.1


def path_turn(velocity, up, span, fps, slowest):
    """The rate (F,) in radians per second at which the direction of travel turns about ``up``
    (signed as a turn of the ground, see :func:`planted_drift`): from the mean of ``velocity``
    (F, 3; horizontal) over the ``span`` frames up to each frame to that over the ``span``
    from it on; 0 where either is slower than ``slowest`` (standing, stepping in place: no
    direction to turn)."""
    frames = len(velocity)
    travelled = np.zeros((frames + 1, 3))
    velocity.cumsum(axis=0, out=travelled[1:])
    # The travel at each mean's first frame and after its last, by slices (a gather by index
    # costs several times more), and the frames each mean spans, as floats (not cast at the division).
    start, end = np.empty((2, frames, 3))
    cut = min(span, frames)  # frames whose mean before reaches back to the clip's first
    start[:cut], start[cut:] = travelled[0], travelled[: frames - cut]
    ahead = max(frames - span, 0)  # frames whose mean after ends inside the clip
    end[:ahead], end[ahead:] = travelled[span + 1 :], travelled[-1]
    spanned_before, spanned_after, middles = _path_spans(frames, span)
    before = np.subtract(travelled[1:], start, out=start)
    before /= spanned_before
    after = np.subtract(end, travelled[:-1], out=end)
    after /= spanned_after
    angle = np.arctan2(up_cross(before, after, up), dots(before, after))
    moving = (lengths(before) > slowest) & (lengths(after) > slowest)
    return np.where(moving, 2.0 * angle * fps / middles, 0.0)


@lru_cache(maxsize=4)
def _path_spans(frames, span):
    """What :func:`path_turn` divides by in a clip of ``frames`` frames, its means over ``span``
    frames: the frames the means before and after each frame span, as columns (F, 3) (see
    :func:`frame_columns`), and the frames between their middles (F,). The same for every call
    on a clip: worked out once (a dozen numpy calls), read-only."""
    index = np.arange(1.0, frames + 1.0)
    spanned_before, spanned_after = np.minimum(index, span + 1.0), np.minimum(index[::-1], span + 1.0)
    return read_only(frame_columns(spanned_before), frame_columns(spanned_after),
                     np.maximum(spanned_before + spanned_after - 2.0, 1.0))


def vertically_planted(clearance, vertical_speed, fps, scale, settings, stillness=None):
    """Frames (L, F) where a point surely stands: at its local ground (``clearance`` (L, F))
    and vertically still (``vertical_speed`` (L, F), slower than ``stillness`` m/s for the
    reference adult, by default ``planted_vertical_speed``) for a while. Blind to every
    horizontal motion, so it finds a stance however the foot slides."""
    still = np.abs(vertical_speed) < (stillness or settings.planted_vertical_speed) * scale
    return long_runs((clearance < settings.planted_height * scale) & still, round(settings.min_planted * fps))


def planted_drift(residual, planted, levers, half_width, prior, turn_half_width, turn_limit):
    """Horizontal velocity (F, 3) and turn rate (F,) about the up axis through the root of
    the ground the surely planted points stand on, beyond the root's share: a treadmill's
    belt, a game's in-place cycle, a foot skating on its own, a runtime turning the walk.
    ``residual`` (L, F, 3) the points' horizontal velocities less the root's share, ``levers``
    (L, F, 3) what a unit turn moves each point at (up x its offset from the root). The turn
    is fitted over ``turn_half_width`` frames either side (``prior`` (m^2) damps a turn the
    levers barely tell from a drift; none where no point is planted), the velocity over the
    shorter ``half_width`` (frames with no planted point nearby take the value of the nearest
    ones). The turn lies between 0 and ``turn_limit`` (F,) (see :func:`moving_ground`). Of two
    planted points the slower counts: a swing toe skimming the floor is low and level too."""
    speed = np.where(planted, lengths(residual), np.inf)
    frames = speed.shape[1]
    # The slowest point's residual and lever at each frame, taken by flat index (a gather by
    # point and frame costs several times more).
    slowest = lowest_row(speed) * frames + np.arange(frames)
    # One window sum for every moment of the fit, as columns: the planted frames, their
    # residuals u and levers s, s.u and s.s (zeroed where none is planted by a product: a
    # masked copy costs twice as much). Stored a column at a time, as their sums (see
    # :mod:`.quaternion`): numpy ran each vector's three components of a row in a loop of its own.
    columns, totals, sums = (rows.T for rows in np.empty((3, 9, frames)))
    columns[:, 0] = np.logical_or.reduce(planted, axis=0)
    u = np.multiply(residual.reshape(-1, 3).T.take(slowest, axis=1).T, columns[:, :1], out=columns[:, 1:4])
    s = np.multiply(levers.reshape(-1, 3).T.take(slowest, axis=1).T, columns[:, :1], out=columns[:, 4:7])
    columns[:, 7], columns[:, 8] = dots(s, u), dots(s, s)
    columns.cumsum(axis=0, out=totals)
    turn = _ground_turn(window_sums_of(totals, turn_half_width, sums), prior)
    turn = np.minimum(np.maximum(turn, np.minimum(turn_limit, 0.0)), np.maximum(turn_limit, 0.0))
    u -= turn[:, None] * s  # what the turn leaves of each residual: the drift's
    sums = window_sums_of(columns[:, :4].cumsum(axis=0, out=totals[:, :4]), half_width, sums[:, :4])
    weight, total = sums[:, 0], sums[:, 1:]
    known = weight > 0
    # (The usual case: every frame has a planted one nearby, nothing to interpolate. Masks are
    # told by np.count_nonzero, one C call, where ndarray.any and all run numpy's Python layers.)
    if np.count_nonzero(known) == frames:
        return total / weight[:, None], turn
    if not known.any():
        return np.zeros_like(total), turn
    drift = total[known] / weight[known, None]
    at, known_at = np.arange(frames), np.flatnonzero(known)
    out = np.empty(total.shape)
    for axis in range(drift.shape[1]):  # (into columns: np.stack costs as much as the interpolations)
        out[:, axis] = np.interp(at, known_at, drift[:, axis])
    return out, turn


def _ground_turn(sums, prior):
    """The turn rate w (F,) of the least squares of u = v + w s over each window, from the
    window sums (F, 9) of :func:`planted_drift`'s columns: the moments about their means."""
    weight, total, spread, moment, square = sums[:, 0], sums[:, 1:4], sums[:, 4:7], sums[:, 7], sums[:, 8]
    safe = np.maximum(weight, 1.0)
    centred = square - dots(spread, spread) / safe
    return (moment - dots(total, spread) / safe) / (centred + prior * safe)


def lowest_row(values):
    """``np.argmin(values, axis=0)``'s indices of rows of ``values`` (R, ...); of two (an ankle
    and a toe, two feet) by comparison, NaN counting as the lowest as there: numpy's argmin
    along a leading axis copies the array to put it last, at several times the cost."""
    if len(values) != 2:
        return np.argmin(values, axis=0)
    first, second = values
    # The second where the first is a number (argmin's first NaN) the second is not at least:
    # less, or NaN.
    return np.greater(first == first, second >= first).astype(np.intp)


def shrink(vectors, margin):
    """Vectors (..., 3) shortened by ``margin``; those shorter become zero."""
    sizes = lengths(vectors)[..., None]
    return vectors * np.maximum(0.0, 1.0 - margin / np.maximum(sizes, 1e-12))


def run_ids(mask):
    """A number per frame of ``mask`` (..., F), the same along each run of True frames and
    different between runs (and rows); frames outside runs carry their last run's number."""
    flat = mask.reshape(-1, mask.shape[-1])
    starts = run_starts(flat)
    ids = starts.cumsum(axis=1) + (flat.shape[1] + 1) * np.arange(len(flat))[:, None]
    return ids.reshape(mask.shape)


def run_starts(mask):
    """The frames of ``mask`` (..., F) where a run of True frames starts."""
    starts = mask.copy()
    starts[..., 1:] &= ~mask[..., :-1]
    return starts


def long_runs(mask, min_length):
    """``mask`` (L, F) keeping only runs of at least ``min_length`` frames: the runs of every
    row from one flat search (:func:`flat_run_edges`), the long ones marked again (half the
    cost of counting each run's frames by its number)."""
    if min_length <= 1:
        return mask.copy()
    edges, width = flat_run_edges(mask, 1)
    starts, ends = edges[::2], edges[1::2]
    long = ends - starts >= min_length
    return flat_spans(starts[long], ends[long], mask.shape, width)


def label_points(cues, grounds, root_velocity, fps, scale, settings, grow_edges=0, feet=None):
    """Boolean contacts (L, F) of points (their :class:`PointCues`) standing on a ground
    moving at ``grounds[0]`` (F, 3) (``grounds[1]``: the root's share alone, see
    :func:`moving_ground`), none of a foot dragged ahead of the root (``root_velocity`` (F, 3),
    see :func:`dragged`).

    ``grow_edges`` -1 / +1 extends each contact's start / end to the foot-level edge (see
    :func:`grown_to_edges`; with +1 its start too where the rest of its foot is not down, see
    :func:`rest_of_foot`, and its end on through the point's descent, see :func:`bottomed_out`),
    one value for all points, one per point (L,) or per point and frame (L, F). ``feet``: how
    many feet the rows are points of, the rows being that many feet's points in turn (heels,
    then toes: two feet's rows are heel, heel, toe, toe); by default each point is a foot of
    its own. Returns the labels and the frames (L, F) where the
    motion skates.
    """
    vertical_speed, clearance, planted = cues.vertical_speed, cues.clearance, cues.planted
    feet = len(vertical_speed) if feet is None else feet
    grow_edges = np.asarray(grow_edges)
    # (A click's labels grow none: the edges' masks are not made. Masks are told by
    # np.count_nonzero, one C call, where ndarray.any runs numpy's Python layers.)
    growing = bool(np.count_nonzero(grow_edges))
    if growing:
        grow_edges = np.broadcast_to(grow_edges.reshape(grow_edges.shape + (1,) * (2 - grow_edges.ndim)),
                                     vertical_speed.shape)
    horizontal_speed, share_speed = lengths(cues.horizontal_velocity[None] - grounds)
    speed = np.sqrt(horizontal_speed**2 + vertical_speed**2)
    threshold = settings.speed_threshold * scale
    low = clearance < settings.height_threshold * scale
    labels = (speed < threshold) & low
    skating = skating_motion(planted, share_speed**2 + vertical_speed**2 >= threshold**2,
                             round(settings.skate_window * fps))
    # A planted frame faster than a skate is a swing toe skimming the floor.
    under_skate = horizontal_speed < settings.skate_speed * scale
    standing = planted & under_skate
    # A foot skates where all its points do: a heel rolling off its standing ball, or a ball
    # pivoting under its heel, is the foot's own motion.
    foot_skating = whole_foot(skating, feet)
    if np.count_nonzero(foot_skating):
        # A foot skates on its own where its planted frames slide even against the drifting
        # ground (no belt, no in-place cycle under both feet explains them): there its stance
        # edges show its skate, and a point a little less still vertically stands however it
        # slides -- a skate turning about within a stance (3 Hz) outruns the foot's fitted
        # ground, and a brief touch (a turn's step) has no standing frame to fit it through.
        alone = skating_motion(planted, speed >= threshold, round(settings.skate_window * fps))
        alone = foot_skating & whole_foot(alone, feet)
        labels = np.where(foot_skating, skated_labels(cues, grounds[0], standing, labels, low, fps, scale, settings,
                                                      feet, alone), labels)
        touching = vertically_planted(clearance, vertical_speed, fps, scale, settings, settings.skate_vertical_speed)
        labels |= touching & alone & under_skate
    labels |= standing & skating
    # Where a heel's contact starts the foot's (its strike), a heel still descending has not
    # touched yet, however slow the moving ground makes it look (another foot's drift taken
    # for the ground's). Not a toe's: landing first (walking backward) it sinks on for a few
    # millimetres as the forefoot takes the weight, and held to it its contacts started 50-85
    # ms late (the heels are the first ``feet`` rows).
    if growing:
        striking = (grow_edges < 0) & (np.arange(len(grow_edges)) < feet)[:, None]
        landed = (vertical_speed > -settings.planted_vertical_speed * scale) | ~striking
        labels &= landed
    labels = majority_vote(labels, round(settings.vote_window * fps))
    if growing:
        near = (speed < settings.edge_speed * scale) & landed & (clearance < settings.edge_height * scale)
        to_start, to_end = grown_to_edges(labels, (near & (grow_edges != 0)) | labels)
        # The point that leaves last grows back to its own touch-down too where it lands first,
        # the rest of its foot not yet down: a toe-walker's or a forefoot striker's toe, its
        # heel lowered later if at all (held to the toe's stillness, the force-plate trials
        # walked so started their contacts a frame or two late: onsets 23 ms, run 9; now 13, 4).
        lands_first = to_start & ~rest_of_foot(to_start, feet)
        labels = np.where(grow_edges < 0, to_start, to_end | lands_first)
        # The point that leaves last (the front of the foot at push-off) is down while the foot
        # pitching over it still presses it lower, however fast the roll carries it along the
        # floor: it leaves where that descent ends, as a heel strikes where its own does. At the
        # edge speed alone walk.c3d's toe-offs came 10-20 ms early, an error of the gait's own
        # time that a walk slowed x0.35 stretched to 50-80 ms. Grown on from the speed edge's
        # end, not with it: joined, the descent bridged a stance to a slow rise after it (a
        # limp's slowed push-off, 25 ms late).
        bottomed = bottomed_out(cues, fps, settings)
        sinking = (grow_edges > 0) & ~bottomed & (clearance < settings.edge_height * scale)
        labels = grown_to_edges(labels, sinking | labels)[1]
        if striking.any():
            # And it strikes where its descent ends, a cue no horizontal motion touches: against
            # the moving ground a landing heel's speed is the other stance foot's drift as much
            # as its own (walk.c3d, the stance feet drifting: heel strikes 35 ms early).
            labels = from_first(labels, bottomed | ~striking)
    # Whole frames only, never more than the time asked: at 30 or 60 fps a frame is already more.
    labels = widen(labels, int(np.floor(settings.widen * fps + 1e-6)))
    gap = int(np.floor(settings.min_gap * fps + 1e-6))
    labels = fill_gaps(labels, gap)  # the breaks left once the edges moved out
    drags = dragged(labels, skating, cues.horizontal_velocity, (horizontal_speed, share_speed), root_velocity, feet,
                    scale, settings)
    if np.count_nonzero(drags):  # (the holes are only looked for where something drags)
        labels &= ~(drags & ~holes(labels & ~drags, gap))  # a stance's edges, not a few frames inside it
    return labels, skating


def holes(labels, max_gap, within=None):
    """The breaks of at most ``max_gap`` frames inside ``labels`` (L, F), those wholly inside
    ``within`` (L, F) where given: the frames a cut made there would unlock a stance for a
    moment and lock it again (see :func:`fill_gaps`)."""
    starts, ends, width = _short_breaks(labels, max_gap)
    if within is not None and len(starts):
        # The frames outside ``within`` counted along the rows laid out as the breaks are: a
        # break is wholly inside where the count at its end is the count at its start.
        rows, frames = labels.shape
        outside = np.zeros(rows * width + 1, dtype=np.intp)  # (a count before the first frame)
        outside[1:].reshape(rows, width)[:, :frames] = ~within
        counted = outside.cumsum()
        inside = counted.take(ends) == counted.take(starts)
        starts, ends = starts[inside], ends[inside]
    return flat_spans(starts, ends, labels.shape, width)


def dragged(labels, skating, velocity, speeds, root_velocity, feet, scale, settings):
    """The frames of ``labels`` (L, F; the rows ``feet`` feet's points in turn, see
    :func:`label_points`) of a foot dragged along the floor while another foot stands: the
    point (its horizontal ``velocity`` (L, F, 3)) moves faster than a stance's edge against the
    moving ground (``speeds[0]`` (L, F), see :func:`label_points`: a contact only a skate
    explains), runs ahead of the root (``root_velocity`` (F, 3)) along its travel by more than
    the stance speed, and some point of another foot is labelled and still against the root's
    share of the ground (``speeds[1]``), where the motion does not skate (``skating`` (L, F),
    see :func:`skating_motion`).

    The body passes over a standing foot, however its stance slides or skates: such a foot
    falls behind it. A foot running ahead of the body beside one that stands still swings,
    however low and level it skims the floor (a tired walk shuffling its feet, planted
    vertically and as fast as a skate); where both feet move (a skated clip), the standing
    one is still only for a moment of its skate, and nothing is taken for a drag."""
    fast = labels & (speeds[0] > settings.edge_speed * scale)
    if not np.count_nonzero(fast):  # (a clean clip's contacts: none is that fast, and nothing else need be measured)
        return fast
    threshold = settings.speed_threshold * scale
    speed = lengths(root_velocity)
    slowest = PATH_SPEED * scale
    direction = root_velocity * ((speed > slowest) / np.maximum(speed, slowest))[:, None]
    ahead = dots(velocity - root_velocity, direction) > threshold
    still = labels & ~skating & (speeds[1] < threshold)
    foot_still = still.reshape(-1, feet, still.shape[-1]).sum(axis=0)  # (feet, F): its points standing still
    beside_still = foot_still.sum(axis=0) > foot_still  # per foot: another foot stands still
    return fast & ahead & np.concatenate([beside_still] * (len(labels) // feet))


def skated_labels(cues, ground, standing, labels, low, fps, scale, settings, feet, skating):
    """Contacts (L, F) of points where the motion skates, moving slower than the stance
    threshold (``low``: near their local ground) against the ground their own foot stands on
    -- what its ``standing`` frames (L, F) and their stance edges show, see
    :func:`foot_grounds` and :func:`stance_edges` -- wherever such a frame of the foot is near
    enough to tell; elsewhere ``labels``. The rows are ``feet`` feet's points in turn (see
    :func:`label_points`); ``skating`` (L, F): where the foot skates on its own.

    A foot skating to and fro on its own, nothing shared with the other foot to follow:
    against the moving ground its stance edges (a toe rolling off, a heel settling, slow but
    not still) move as fast as the skate. Its standing frames show its skate; extrapolated
    from them alone, the fit missed the edges a tenth of a second away by 0.5 m/s at a 1 m/s
    skate. So it is fitted again, through the edge frames too that move with the first fit
    (within ``edge_speed``: a swing foot skimming the floor does not)."""
    residual = cues.horizontal_velocity - ground
    half_width = max(1, round(settings.foot_ground_window * fps))
    threshold = settings.speed_threshold * scale
    own, _ = foot_grounds(residual, standing, feet, half_width)
    along = skating & (lengths(residual - own) < settings.edge_speed * scale)
    edges = stance_edges(cues, standing & skating, along, threshold, settings.planted_vertical_speed * scale,
                         settings.edge_height * scale)
    own, known = foot_grounds(residual, standing | edges, feet, half_width)
    sliding = lengths(residual - own)
    still = (sliding**2 + cues.vertical_speed**2 < threshold**2) & low
    return np.where(known, still, labels)


def stance_edges(cues, standing, allowed, rising, descending, height):
    """``standing`` frames (L, F) with the ``allowed`` frames around them where the points
    stay within ``height`` of their local ground, rising slower than ``rising`` and
    descending slower than ``descending`` (a point still descending has not landed): a toe
    rolling off, a heel settling, which no horizontal motion touches."""
    vertical_speed = cues.vertical_speed
    still = (vertical_speed < rising) & (vertical_speed > -descending) & (cues.clearance < height) & allowed
    return grow_into(standing, still | standing)


def rest_of_foot(mask, feet):
    """Rows (L, F) True where the rest of the row's foot is in ``mask``: for a heel any of its
    toe points, for a toe point its heel (the rows ``feet`` feet's points in turn, heels
    first, see :func:`label_points`); never where each point is a foot of its own."""
    points = mask.reshape(-1, feet, mask.shape[-1])
    heel, toe = points[0], np.logical_or.reduce(points[1:], axis=0)
    return np.concatenate([toe] + [heel] * (len(points) - 1))


def whole_foot(mask, feet):
    """Rows (L, F) of ``mask`` True where it is True for every point of the row's foot (the
    rows ``feet`` feet's points in turn, see :func:`label_points`); ``mask`` itself where
    each point is a foot of its own."""
    if feet == len(mask):
        return mask
    return np.concatenate([mask.reshape(-1, feet, mask.shape[-1]).all(axis=0)] * (len(mask) // feet))  # np.tile's, cheaper


def foot_grounds(velocities, planted, feet, half_width):
    """Per point, the horizontal velocity (L, F, 3) its foot's planted frames show around each
    frame, and whether the foot has a planted frame within ``half_width`` frames (L, F). The
    rows are ``feet`` feet's points in turn (see :func:`label_points`); a foot's planted points
    are pooled (its heel and ball slide together), then fitted by :func:`local_quadratic`."""
    frames = planted.shape[1]
    count = planted.reshape(-1, feet, frames).sum(axis=0)
    total = (velocities * planted[..., None]).reshape(-1, feet, frames, velocities.shape[-1]).sum(axis=0)
    fitted, known = local_quadratic(total / np.maximum(count, 1)[..., None], count > 0, half_width)
    rows = len(planted) // feet
    return np.concatenate([fitted] * rows), np.concatenate([known] * rows)


# A weak pull of the fit toward zero (no skate of the foot's own), as a share of the window's
# full weight: where a standing frame or two stand far to one side, a quadratic through them
# alone would be anything.
FIT_PRIOR = 1e-3


def local_quadratic(values, weights, half_width):
    """``values`` (N, F, C) fitted around each frame by a quadratic in time over the
    ``weights`` (N, F) frames within ``half_width`` either side, near frames weighing most (a
    triangle), and evaluated there; and whether any weighted frame is that near (N, F). A
    quadratic follows a skate turning about, where a line through a stance's frames would
    carry its speed on past the turn."""
    offsets = np.arange(-half_width, half_width + 1) / half_width  # -1..1: well-scaled sums
    kernel = 1.0 - np.abs(offsets) * half_width / (half_width + 1)
    kernels = kernel * offsets ** np.arange(5)[:, None]  # (5, width): the triangle times 1, t .. t^4
    weights = weights.astype(float)
    m0, m1, m2, m3, m4 = np.moveaxis(kernel_sums(weights, kernels), -2, 0)  # (N, F) each
    sums = kernel_sums(np.moveaxis(values * weights[..., None], -1, -2), kernels[:3])  # (N, C, 3, F)
    b0, b1, b2 = np.moveaxis(sums, (-2, -1), (0, -2))  # (N, F, C) each
    # The normal equations' matrix is [[m0, m1, m2], [m1, m2, m3], [m2, m3, m4]] plus the prior
    # on its diagonal; the fit's value at the frame is the first row of its inverse (its
    # cofactors: it is symmetric) times the right-hand side.
    prior = FIT_PRIOR * kernel.sum()
    d0, d1, d2 = m0 + prior, m2 + prior, m4 + prior
    c0, c1, c2 = d1 * d2 - m3 * m3, m2 * m3 - m1 * d2, m1 * m3 - d1 * m2
    value = (c0[..., None] * b0 + c1[..., None] * b1 + c2[..., None] * b2) / (d0 * c0 + m1 * c1 + m2 * c2)[..., None]
    return value, m0 > 0


def kernel_sums(rows, kernels):
    """Per row of ``rows`` (..., F) and kernel of ``kernels`` (K, 2 h + 1), the sums of the
    row's frames around each frame weighted by the kernel (frames beyond the ends count
    zero): (..., K, F). A convolution each, the few rows and kernels one by one."""
    frames, half_width = rows.shape[-1], kernels.shape[-1] // 2
    flat = rows.reshape(-1, frames)
    sums = np.array([[np.convolve(row, kernel[::-1])[half_width : half_width + frames] for kernel in kernels]
                     for row in flat])
    return sums.reshape(rows.shape[:-1] + (len(kernels), frames))


def bottomed_out(cues, fps, settings):
    """Frames (L, F) where points go no lower over the next ``velocity_span``: a landing
    point has reached the ground it lands on; before them, a leaving one is still pressed
    down."""
    heights = cues.heights
    ahead = max(1, round(settings.velocity_span * fps))
    later = np.concatenate([heights[:, ahead:], np.repeat(heights[:, -1:], min(ahead, heights.shape[1]), axis=1)],
                           axis=1)
    return later >= heights


def from_first(labels, allowed):
    """Each run of ``labels`` (L, F) from its first ``allowed`` frame on; a run without one
    stays whole."""
    ids = run_ids(labels)
    index = np.broadcast_to(np.arange(labels.shape[-1]), labels.shape)
    first = np.full(ids.max() + 1, labels.shape[-1])
    np.minimum.at(first, ids[labels & allowed], index[labels & allowed])
    starts = first[ids]
    return labels & ((index >= starts) | (starts == labels.shape[-1]))


def skating_motion(planted, moving, half_width):
    """Frames (L, F) where the motion skates: within ``half_width`` frames most vertically
    planted frames are ``moving`` against the root's share alone, faster than the speed
    threshold (a foot sliding to and fro, which the planted points' drift follows only in
    part). There planted frames are contacts although they move (up to ``skate_speed``: a
    swing toe skimming the floor stays out); elsewhere the planted-but-moving frames are a
    clip's own small slides at stance edges, not contacts."""
    counted = np.empty((2,) + planted.shape, dtype=bool)  # (np.stack's rows, without its overhead)
    counted[0] = planted
    np.logical_and(planted, moving, out=counted[1])
    planted_frames, sliding_frames = window_sum(counted, half_width, dtype=np.int32)
    return 2 * sliding_frames > np.maximum(planted_frames, 1)  # (more than half, in integers)


def to_weights(labels, fps, settings):
    weights = labels.astype(float)
    if settings.smoothing > 0:
        weights = smooth(weights, settings.smoothing * fps)
    return weights


def detect_contacts(points, root, up, fps, leg_length, settings=None):
    """Contact weights (L, F) in 0..1 of toe-level points (L, F, 3) -- toes, toe tips,
    forefoot markers: each stands on the level it rests at (see :func:`point_cues`) -- and
    the clip's slip (mean share of the root's velocity the planted points showed).

    ``root`` (F, 3) is the joint that carries the character across the ground. Gaps in the
    points (NaN frames, a marker unseen) are bridged (see :func:`gaps_bridged`).
    """
    settings = settings or ContactSettings()
    scale = leg_length / REFERENCE_LEG_LENGTH
    up = unit_up(up)
    points, root = gaps_bridged(points, "points"), gaps_bridged(root, "root")
    gait_fps = fps / gait_tempo(points, up, fps, scale, settings)
    points, root = steadied_points([points, root], points, gait_fps, scale, settings)
    cues, root_velocity = cues_and_travel([points], root, up, gait_fps, scale, settings, stepping_from=0)
    grounds, slip = moving_ground(cues, root, root_velocity, gait_fps, scale, settings)
    labels, _ = label_points(cues, grounds, root_velocity, gait_fps, scale, settings)
    return to_weights(labels, fps, settings), slip


def unit_up(up):
    """``up`` (3,) as a unit vector: heights and speeds along it are in the points' units."""
    up = np.asarray(up, dtype=float)
    # (np.linalg.norm's numbers, the root of the vector's dot product with itself, without its
    # Python layers: half unit_up's cost)
    length = math.sqrt(up.dot(up)) if up.shape == (3,) else 0.0
    if not (np.isfinite(length) and length > 0.0):
        raise ValueError(f"up must be a non-zero 3D vector, got {up!r}")
    return up / length


def gaps_bridged(points, name):
    """``points`` (..., F, 3) with the frames where a point is not a number (a marker unseen:
    NaN in a gait lab's trajectories) filled along a straight line between the frames either
    side that see it (held before its first and after its last). A NaN frame taken as it is
    spread over every window around it: one toe marker missing for 5 frames mid-stance moved
    both feet's labels (F1 0.20). Raises ValueError for a point never seen."""
    points = np.asarray(points, dtype=float)
    finite = np.isfinite(points)
    # (The usual case, told without reducing each point's three coordinates, a slow short axis,
    # and by np.count_nonzero: ndarray.all's Python layers cost three times as much.)
    if np.count_nonzero(finite) == finite.size:
        return points
    seen = finite.all(axis=-1)
    rows, seen = points.reshape(-1, *points.shape[-2:]), seen.reshape(-1, points.shape[-2])
    if not seen.any(axis=1).all():
        raise ValueError(f"{name}: a point has no frame with a position (every frame is NaN or infinite)")
    bridged = rows.copy()
    frames = np.arange(rows.shape[1])
    for row, row_seen in zip(bridged, seen):
        if not row_seen.all():
            for axis in range(3):
                row[:, axis] = np.interp(frames, frames[row_seen], row[row_seen, axis])
    return bridged.reshape(points.shape)


# Heel-to-toe length over leg length beyond which the two are in different units: an adult's
# is about 0.15-0.2 (ankle to ball, heel marker to toe marker), a bird's foot nearer 1; metres
# against millimetres or centimetres are 100-1000 times off.
FOOT_TO_LEG = (0.02, 5.0)
ADULT_FOOT_TO_LEG = 0.17  # the share an error names


def check_leg_length(leg_length, heels, toes):
    """Raise ValueError where ``leg_length`` cannot be in the units of the points ``heels`` and
    ``toes`` (L, F, 3): every threshold is a share of it, and a leg a thousand times too long
    (points in millimetres, the leg in metres) saw every foot standing still, silently."""
    # Each foot's mean length as ndarray.mean makes it (its sum over the count), without its
    # Python layers; a foot given as one point twice (no toe) tells nothing.
    feet = sorted(foot for foot in (np.add.reduce(lengths(heels - toes), axis=-1) / heels.shape[-2]).tolist()
                  if foot > 0.0)
    if not feet:
        return
    # Their median as :func:`~.quaternion.median` takes it (the middle one, or the lower middle
    # plus the upper over 2), of a few Python floats sorted: its numpy calls cost several times more.
    middle = len(feet) // 2
    foot = feet[middle] if len(feet) % 2 else (feet[middle - 1] + feet[middle]) / 2
    low, high = FOOT_TO_LEG
    if not low * leg_length <= foot <= high * leg_length:
        raise ValueError(f"leg_length {leg_length:g} is not in the points' units: their heels and toes are {foot:g} "
                         f"apart, where a leg of {leg_length:g} has feet of about {ADULT_FOOT_TO_LEG * leg_length:g}")


def steadied_points(point_sets, measured, fps, scale, settings, noise=None):
    """Each of ``point_sets`` ((..., F, 3) each) smoothed alike, as far as the jitter of
    ``measured`` (L, F, 3) needs for the labeller's cues at ``fps`` (see :mod:`jitter`);
    unchanged where it needs none. The sets share one kernel: the root and the feet keep
    their timing against each other. ``noise``: that jitter, if already measured (then
    ``measured`` is not read)."""
    steadying = (fps, max(1, round(settings.velocity_span * fps)), settings.jitter_speed * scale,
                 settings.max_steadying * fps)
    kernel = steadying_kernel_for(measured, *steadying) if noise is None else steadying_kernel(noise, *steadying)
    return [None if points is None else steadied(points, kernel) for points in point_sets]


def gait_tempo(points, up, fps, scale, settings):
    """How many times quicker than a walk the clip steps (1/3 to 3): 1 for the median time a
    point stays above, then below, the lowest of the others (by at least ``planted_height``;
    in a gait each foot is in turn the higher) within a walk's cadence, ``REFERENCE_STEP_TIME``
    to ``SLOW_STEP_TIME``; beyond it, the nearer of the two over that time.

    A point standing on its own ground (within ``planted_height`` of :func:`local_ground`)
    is not above, however high it stands: on stairs or uneven ground a foot planted a step
    above the other is not stepping. Counted as the higher, a walk down stairs whose feet
    land a step or two apart changed side each time the lower one swung past the other
    and read as a run (cmu_07_01 with each stance on its own 8 cm step: 3.0, now 1.3).

    A run's stance lasts a few frames and its foot rolls over them several times faster
    than a walk's: its speeds and times are a walk's, scaled by this tempo. A slow walk's
    foot lifts and lands as slowly: at a walk's speeds its contacts ran into the swing (a
    walk slowed x3: toe labels' F1 0.84-0.87, contacts pinned through swings). Jumps, hops
    and standing (the feet rising together or not at all, fewer than ``MIN_STEPS`` steps)
    keep 1.
    """
    heights = heights_along(points, up, own=True)
    if len(heights) < 2:
        return 1.0
    band = settings.planted_height * scale
    above = heights - lowest_of_the_others(heights)
    lifted = heights - local_ground(heights, round(settings.ground_window * fps), fps) > band
    side = np.subtract((above > band) & lifted, above < -band, dtype=np.intp)  # 1 above, -1 below, 0 between
    # Hysteresis: between the bands a point keeps the side it was last on (taken by flat index).
    frames = side.shape[1]
    last = np.maximum.accumulate(np.where(side != 0, np.arange(frames), 0), axis=1)
    side = side.take(last + frames * np.arange(len(side))[:, None])
    # A step ends where a point changes side; the steps are the frames between such changes.
    changes = (side[:, 1:] != side[:, :-1]) & (side[:, 1:] != 0) & (side[:, :-1] != 0)
    row, frame = changes.nonzero()
    steps = (frame[1:] - frame[:-1])[row[1:] == row[:-1]]
    if len(steps) < MIN_STEPS:
        return 1.0
    # Slow only where even the quicker steps are: a step the sides missed (feet passing
    # within the band) reads as two, and a stair between them skips changes too.
    quicker = np.partition(steps, len(steps) // 4)[len(steps) // 4]
    if quicker > SLOW_STEP_TIME * fps:
        return float(max(SLOW_STEP_TIME * fps / quicker, MIN_TEMPO))
    return float(min(max(REFERENCE_STEP_TIME * fps / median(steps), 1.0), MAX_TEMPO))


def lowest_of_the_others(heights):
    """Per row of ``heights`` (L, F), L >= 2, the lowest of the other rows' at each frame."""
    if len(heights) == 2:  # (two feet: each one's other)
        return heights[::-1]
    lowest, second = np.sort(heights, axis=0)[:2]
    return np.where(np.arange(len(heights))[:, None] == np.argmin(heights, axis=0), second, lowest)


def detect_foot_contacts(heels, toes, root, up, fps, leg_length, settings=None, toe_tips=None,
                         foot_edges=True, noise=None, tempo=None):
    """Separate heel and toe contact weights, each (L, F), of L feet, and the slip.

    ``heels``: (L, F, 3) heel points (the ankle joint or the foot bone's head on a rig, the
    heel marker in a gait lab); ``toes``: (L, F, 3) toe points (the toe joint or ball of the
    foot, a metatarsal-head marker); ``toe_tips`` optional (L, F, 3), counted as toe too (the
    toe is planted when either toe point is). ``root`` (F, 3): the joint carrying the
    character across the ground. The moving ground is estimated once, from the toes (they
    stand longest: a walk's toes see the ground best), so heel and toe labels agree on what
    "still" means and the toe labels are :func:`detect_contacts`'s.

    The foot is in contact from heel strike to toe-off: ``np.maximum(heel, toe)``. With
    ``foot_edges`` the heel's contacts start, and the toe's end, where the foot's do (the
    heel settling, the toe rolling off: near the ground, under twice the stance speed, or
    still pressed lower by the foot pitching over it; see :func:`label_points`), as force
    plates measure them, and a toe landing while its heel is not down (a toe-walker, a
    forefoot striker) starts its own contact at its touch-down; without, each point is
    labelled as still or not, the clips README's criterion (pins that must not drag), and a
    heel is not pinned alone where it outpaces its ball (:func:`without_heel_sweeps`). Returns
    ``(heel_weights, toe_weights, slip)``: 0/1 (ramps with ``settings.smoothing``), to key
    as curves and to pin each point while its weight is 1. A foot off the ground for less
    than ``settings.min_swing`` between two contacts did not leave it (:func:`fill_foot_gaps`).
    Times and speeds are the gait's own (:func:`gait_tempo`, from the heels: they lift highest).
    ``noise``: the :func:`~.jitter.jitter` of the heels and toes together, and ``tempo`` the
    heels' :func:`gait_tempo`, if already measured. Gaps in the points (NaN frames, a marker
    unseen) are bridged (see :func:`gaps_bridged`).
    """
    settings = settings or ContactSettings()
    scale = leg_length / REFERENCE_LEG_LENGTH
    up = unit_up(up)
    heels, toes, root = gaps_bridged(heels, "heels"), gaps_bridged(toes, "toes"), gaps_bridged(root, "root")
    check_leg_length(leg_length, heels, toes)
    toe_tips = None if toe_tips is None else gaps_bridged(toe_tips, "toe_tips")
    if tempo is None:
        tempo = gait_tempo(heels, up, fps, scale, settings)  # the heels lift highest
    gait_fps = fps / tempo
    if noise is None:
        noise = jitter(np.concatenate([heels, toes]))
    heels, toes, toe_tips, root = steadied_points([heels, toes, toe_tips, root], None, gait_fps, scale, settings, noise)
    feet = len(heels)
    toe_points = toes if toe_tips is None else np.concatenate([toes, toe_tips])
    # Rows: the heels, the toes, the toe tips; the moving ground is the toe points' alone.
    cues, root_velocity = cues_and_travel([heels, toe_points], root, up, gait_fps, scale, settings, stepping_from=feet)
    grounds, slip = moving_ground(cues, root, root_velocity, gait_fps, scale, settings, fit=slice(feet, None))
    # Walking forward the heel strikes first and the toe leaves last; walking backward the toe
    # lands first and the heel leaves last: each point grows at the edge its foot has it for
    # (and the one that leaves last at its start too, where it lands before the other).
    # Without ``foot_edges`` none grows: which way a foot steps is not asked (a click's
    # labels: 50 us).
    grow_edges = 0
    if foot_edges:
        heel_edges = np.where(stepping_backward(cues, grounds[0], feet, gait_fps), 1, -1)
        grow_edges = np.concatenate([heel_edges] + [-heel_edges] * (len(toe_points) // feet))
    labels, skating = label_points(cues, grounds, root_velocity, gait_fps, scale, settings, grow_edges, feet)
    heel, toe, heel_skating, toe_skating = labels[:feet], labels[feet:], skating[:feet], skating[feet:]
    if toe_tips is not None:
        toe, toe_skating = (rows[:feet] | rows[feet:] for rows in (toe, toe_skating))

    def tracks():
        track = ground_track(cues.rows(slice(2 * feet)), grounds[0, : 2 * feet], np.concatenate([heel_skating, toe_skating]),
                             gait_fps, scale, settings)
        return [tuple(part[rows] for part in track) for rows in (slice(feet), slice(feet, 2 * feet))]

    heel, toe = fill_foot_gaps(heel, toe, int(np.floor(settings.min_swing * gait_fps + 1e-6)), tracks)
    if not foot_edges:
        speeds = lengths(cues.horizontal_velocity[: 2 * feet])
        heel = without_heel_sweeps(heel, toe, speeds[:feet], speeds[feet:], settings.speed_threshold * scale)
    return to_weights(heel, fps, settings), to_weights(toe, fps, settings), slip


# s either side: how far around a frame the swings tell which way a foot steps (about a stride).
STEPPING_WINDOW = 0.5


def stepping_backward(cues, ground, feet, fps):
    """Frames (feet, F) where each foot steps backward: over ``STEPPING_WINDOW`` around the
    frame its ball moves, against the ``ground`` (L, F, 3) it stands on, mostly toward its
    heel (more than three quarters of its motion along the foot). The rows of ``cues`` are
    the ``feet`` heels, then their toes. A walk's swings, the fastest a foot moves, carry it
    toward its toes; a walk backward lands on the toes and leaves from the heel (labelled as
    a forward walk, force-plate trials played backward: F1 0.90-0.97, each contact 20-50 ms
    late and 40-65 ms early); a side step, neither way mostly, is labelled as forward."""
    heels, toes = cues.points[:feet], cues.points[feet : 2 * feet]
    facing = horizontal(toes - heels, cues.up)
    along = dots(cues.horizontal_velocity[feet : 2 * feet] - ground[feet : 2 * feet], facing) / np.maximum(
        lengths(facing), 1e-12)
    half_width = max(1, round(STEPPING_WINDOW * fps))
    return window_sum(along, half_width) < -0.75 * window_sum(np.abs(along), half_width)


def without_heel_sweeps(heel, toe, heel_speed, toe_speed, margin):
    """Heel labels (L, F) without the runs where the heel is labelled alone and moves faster
    than its ball by more than ``margin`` on average (speeds (L, F)). A heel pinned alone is
    the pivot the foot turns about; a source foot whose heel outpaces its ball turns about
    the ball (a hop pivoting on the forefoot), and pinning the heel there would sweep the
    ball along the ground faster than the source moves it. Where none sweeps, ``heel`` itself."""
    alone = heel & ~toe
    ids = run_starts(alone)[alone].cumsum() - 1  # each run's number, counted over the runs of every row
    frames = np.maximum(np.bincount(ids), 1)
    heel_mean, toe_mean = (np.bincount(ids, weights=speed[alone]) / frames for speed in (heel_speed, toe_speed))
    swept = heel_mean > toe_mean + margin
    if not np.count_nonzero(swept):  # (the usual case, a click's: no run to take off, no mask to make)
        return heel
    sweeps = np.zeros_like(heel)
    sweeps[alone] = swept[ids]
    return heel & ~sweeps


def heel_down(heel_labels, heels, up, leg_length, fps, settings=None):
    """Heel labels (L, F) kept only where the heel (its points (L, F, 3)) is down: within
    ``HEEL_LIFT`` (for an adult, scaled to the leg) of its lowest point in that contact. A
    heel still settling or already rising (the foot rolling onto the ball) is not planted;
    pinned there it would hold the foot flat against the roll and stretch the leg. Weights
    (ramps) keep their values where kept. Jittery heels are smoothed first, as the labeller
    smooths them (:func:`steadied_points`): millimetres of noise would otherwise lift them."""
    on = heel_labels > 0
    out = heel_labels.copy()
    if not on.any():
        return out
    scale = leg_length / REFERENCE_LEG_LENGTH
    (heels,) = steadied_points([heels], heels, fps, scale, settings or ContactSettings())
    heights = heights_along(heels, up)[on]  # (the labelled frames copied by the mask alone)
    lift = HEEL_LIFT * scale
    # The labelled frames row by row: each run's frames follow one another, so each run's
    # lowest is one reduction from its first frame.
    first = run_starts(on)[on]
    lowest = np.minimum.reduceat(heights, np.flatnonzero(first))[np.cumsum(first) - 1]
    out[on] = np.where(heights <= lowest + lift, out[on], 0.0)
    # A heel lifted for a moment inside its contact (a capture's wobble, a step's tread) is
    # held through it: the contact's edges are trimmed, no break is made within.
    held = holes(out > 0, int(np.floor((settings or ContactSettings()).min_gap * fps + 1e-6)), on)
    out[held] = heel_labels[held]
    return out


def ground_track(cues, ground, skating, fps, scale, settings):
    """Where points (their :class:`PointCues`) are on the ground moving at ``ground`` (F, 3):
    their horizontal positions with the ground's travel since the first frame removed;
    whether they are within the contact band above their local ground (L, F); and how far a
    planted point may move in each frame (L, F) -- at the stance speed, or the skate speed
    where the motion ``skating`` (L, F) skates (:func:`skating_motion`)."""
    low = cues.clearance < settings.height_threshold * scale
    speed = np.where(skating, settings.skate_speed, settings.speed_threshold) * scale
    return horizontal(cues.points, cues.up, cues.heights) - np.cumsum(ground, axis=-2) / fps, low, speed / fps


def stays_down(track, row, start, end):
    """Whether a point stayed down over the frames ``start:end`` of a gap: within the contact
    band throughout, and no further from where it was on the moving ground just before the
    gap to where it is just after than a planted point moves in that time (see
    :func:`ground_track`). A foot shuffling across the floor travels faster, and is a swing."""
    positions, low, steps = track
    travel = np.linalg.norm(positions[row, end] - positions[row, start - 1])
    return bool(low[row, start:end].all()) and travel <= steps[row, start : end + 1].sum()


def fill_foot_gaps(heel, toe, max_gap, measure_tracks=None):
    """Heel and toe labels (L, F) with each break of the whole foot (neither point on) of at
    most ``max_gap`` frames closed, on the point that is in contact on both sides of it, else
    on both: a foot that lifts and lands within a flicker did not swing, and pinning it
    again a little elsewhere after an instant free would make it jump.

    With ``measure_tracks`` (a function giving the heel's and the toe's :func:`ground_track`,
    called only where there is a break to close: a clean clip's feet have none) a break is
    closed only where each point it is closed on stays down across it (:func:`stays_down`).
    Where there is no such break (a clean clip's feet), ``heel`` and ``toe`` themselves."""
    gaps = short_gaps(heel | toe, max_gap)
    if not len(gaps[0]):
        return heel, toe
    heel, toe = heel.copy(), toe.copy()
    tracks = measure_tracks() if measure_tracks is not None else None
    for row, start, end in zip(*gaps):  # the few flickers of a clip
        by_heel, by_toe = heel[row, start - 1] and heel[row, end], toe[row, start - 1] and toe[row, end]
        on_heel, on_toe = by_heel or not by_toe, by_toe or not by_heel
        if tracks is not None and not all(stays_down(track, row, start, end)
                                          for track, on in zip(tracks, (on_heel, on_toe)) if on):
            continue
        heel[row, start:end] |= on_heel
        toe[row, start:end] |= on_toe
    return heel, toe


def short_gaps(labels, max_gap):
    """Rows, starts and ends (exclusive) of the breaks of at most ``max_gap`` frames between
    two contacts of ``labels`` (L, F)."""
    starts, ends, width = _short_breaks(labels, max_gap)
    if not len(starts):  # (none, a clean clip's feet: no rows and frames to work out)
        return starts, starts, ends
    row, start = np.divmod(starts, width)
    return row, start, ends - row * width


def _short_breaks(labels, max_gap):
    """:func:`short_gaps`' breaks as flat indices into rows of ``width`` frames (the clip's
    and more after it), and that width: one flat search for the frames where a row changes."""
    # No contact within ``max_gap`` frames after the clip: a break counted across two rows,
    # from the last contact's end in one to the first's start in the next, is longer than
    # ``max_gap`` and is left out with the long breaks.
    changes, width = flat_run_edges(labels, max_gap + 1)
    starts, ends = changes[1:-1:2], changes[2::2]  # a break: from one contact's end to the next's start
    short = ends - starts <= max_gap
    return starts[short], ends[short], width


def flat_run_edges(mask, after):
    """Where the runs of ``mask`` (L, F) start and end (exclusive), alternating, as flat
    indices into its rows laid end to end, each followed by ``after`` (>= 1) frames outside
    any run; and that width, F + ``after``. No run goes on into the next row: the runs of
    every row are found by one flat search."""
    rows, frames = mask.shape
    width = frames + after
    padded = np.zeros(rows * width + 1, dtype=bool)  # a frame outside any run before the first row
    padded[1:].reshape(rows, width)[:, :frames] = mask
    return (padded[1:] != padded[:-1]).nonzero()[0], width


def flat_spans(starts, ends, shape, width):
    """A mask ``shape`` (L, F) True over the spans from ``starts`` to ``ends`` (exclusive; none
    ends where another starts), flat indices into its rows laid end to end ``width`` (> F)
    apart, as :func:`flat_run_edges` gives them: +1 where a span starts, -1 where it ends (in
    the same row), and the running sum marks its frames."""
    rows, frames = shape
    marks = np.zeros(rows * width, dtype=np.int8)
    marks[starts], marks[ends] = 1, -1
    return marks.cumsum(dtype=np.int8).reshape(rows, width)[:, :frames] > 0


def grow_into(labels, allowed):
    """Each run of ``allowed`` frames that holds a label becomes a contact as a whole."""
    ids = run_ids(allowed)
    held = np.zeros(ids.max() + 1, dtype=bool)
    held[ids[labels & allowed]] = True
    return (held[ids] & allowed) | labels


def grown_to_edges(labels, allowed):
    """``labels`` (..., F) grown within each run of ``allowed`` frames that holds a label: to
    its frames up to the run's last label (contacts start earlier), and apart, to those from
    its first label on (contacts end later).

    A heel still settling onto the ground, a toe rolling off it: near the ground and slowing
    (or speeding up) but not yet (or no longer) still. The hardware measures contact there.
    """
    ids = run_ids(allowed)
    held = labels & allowed
    index = np.broadcast_to(np.arange(labels.shape[-1]), labels.shape)
    # A run without a label has no first (after every frame) nor last (before every frame).
    first, last = np.full(ids.max() + 1, labels.shape[-1]), np.full(ids.max() + 1, -1)
    np.minimum.at(first, ids[held], index[held])
    np.maximum.at(last, ids[held], index[held])
    return (allowed & (index <= last[ids])) | labels, (allowed & (index >= first[ids])) | labels


def fill_gaps(labels, max_gap):
    """Close breaks of at most ``max_gap`` frames between two contacts.

    A break inside a stance would unlock the toe for a frame or two and lock it
    again somewhere else: a visible pop. Real swing phases are far longer.
    """
    rows = labels.reshape(-1, labels.shape[-1])
    starts, ends, width = _short_breaks(rows, max_gap)
    return (rows | flat_spans(starts, ends, rows.shape, width)).reshape(labels.shape)


def widen(labels, frames):
    """Grow every contact of ``labels`` (..., F) by ``frames`` on both sides: each frame shifted
    onto its neighbours, a frame at a time (``frames`` is a frame or two, a window count's
    padding and running sum cost more)."""
    grown = labels.copy()
    for shift in range(1, frames + 1):
        grown[..., shift:] |= labels[..., :-shift]
        grown[..., :-shift] |= labels[..., shift:]
    return grown


def smooth(weights, width):
    """Box-filter a 0/1 signal into a 0..1 ramp ``width`` frames wide. By one running sum (a
    window of sliding_window_view and its mean cost two Python layers): a running sum of
    values >= 0 only grows, so no window comes out below 0, and one of zeros is exactly 0."""
    half = box_half_width(width)
    return edge_padded_sum(weights, half, float) / (2 * half + 1)


def box_half_width(width):
    """Frames either side of :func:`smooth`'s box over ``width`` frames (an odd count, at least one)."""
    return max(1, round(width) | 1) // 2


def eased_after(weights, ease):
    """Weights (L, F) that, after each frame > 0, ease from its value out to 0 as ``ease``
    (F,) falls frame by frame since (see :func:`ease_out`) instead of dropping: a released
    pin's weight (:func:`.offline_lock._pins`), a swivel's let-go label easing back in
    (:mod:`.swivels`)."""
    legs, frames = weights.shape
    index = np.arange(frames)
    last = np.maximum.accumulate(np.where(weights > 0, index, -1), axis=-1)
    rows = (np.arange(legs) * frames)[:, None]  # the frames as indices into (L F) rows
    held = weights.take(rows + np.maximum(last, 0)) * (last >= 0)
    return np.maximum(weights, held * ease.take(index - last, mode="clip"))  # (clipped to the ease's frames)


def ease_out(x):
    """1 at 0 falling smoothly to 0 at 1 and after (the complement of smoothstep), (n, 1)."""
    x = np.minimum(np.maximum(x, 0.0), 1.0)[:, None]  # np.clip's Python layers cost more than the two
    return 1.0 - x * x * (3.0 - 2.0 * x)


def reference_contacts(toes, fps, unit_scale=1.0, threshold=0.25, window=5):
    """The clips README's reference labels: world toe speed below 0.25 m/s, 5-frame vote."""
    speed = np.linalg.norm(velocity(toes, fps), axis=-1) * unit_scale
    return majority_vote(speed < threshold, window)
