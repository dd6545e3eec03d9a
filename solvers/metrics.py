"""The quality figures Foot Lock reports, before and after a solve.

Speeds and distances come out in metres (per second) given ``unit_scale``, the
length of one world unit in metres, so figures read the same whatever the scene's
units. Frame-based filters use the clip's own frame rate.

Sums, maxima and tests of any are the ufuncs' reductions (np.add.reduce ...): the numbers
of ndarray.sum, max and any, which call them, without their Python layers (a dozen a solve,
a third to half of each one's cost on a clip's few hundred frames).
"""

import math
from functools import lru_cache

import numpy as np

from .contacts import (
    REFERENCE_LEG_LENGTH,
    across,
    frame_columns,
    heights_along,
    local_ground,
    long_runs,
    lowest_row,
    read_only,
    rolling_max,
    span_ends,
    span_frames,
)
from .jitter import jitter, steadied, steadying_kernel
from .quaternion import dot, lengths
from .rig import mean_leg_length

# The skate ratios' thresholds, for a reference adult (scaled by leg length, as every
# threshold is: the same walk reads the same in metres, centimetres or a giant's units).
SKATE_HEIGHT = 0.05  # m: a foot this close to the ground should not move fast ...
SKATE_SPEED = 0.5  # m/s: ... faster than this is a skate
SKATE_WINDOW = 5  # frames of the averaged variant
FULL_EXTENSION = 0.995  # hip-to-ankle distance over thigh plus shin counted as straight
# A foot is "on the ground" when its lowest point is this close to its local ground (the
# lowest it goes within GROUND_WINDOW either side) and this slow vertically for at least
# GROUND_TIME, for a reference adult (scaled by leg length). Neither cue is touched by horizontal sliding,
# nor chosen by the solve: its contacts are labels, this is a look at the feet themselves.
GROUND_HEIGHT = 0.03  # m
GROUND_VERTICAL_SPEED = 0.1  # m/s
GROUND_WINDOW = 0.5  # s
GROUND_TIME = 0.1  # s; shorter spells near the ground are a swing toe skimming the floor
GROUND_SPAN = 1.0 / 30.0  # s either side over which the feet's speeds are measured, at every frame rate
# A foot "on the ground" faster than this is a pop of the data (a capture's first frame, a
# cut), not a slide: left out of the mean rather than letting one frame swamp it.
POP_SPEED = 5.0  # m/s
# Capture jitter may read as at most this vertical speed (m/s, std) in the ground figures: a
# third of their stillness, as the labeller allows (contacts.ContactSettings.jitter_speed).
GROUND_JITTER_SPEED = GROUND_VERTICAL_SPEED / 3.0
GROUND_STEADYING = 0.04  # s, the widest smoothing (Gaussian std) the ground figures give jitter
IMPLAUSIBLE_SHARE = 1.0 / 3.0  # a walking foot has contacts on more of its frames than this


def toe_speeds(toes, up, fps, unit_scale=1.0):
    """Horizontal toe speed (m/s) of each step between frames: (..., F-1) of toes (..., F, 3),
    e.g. (L, F-1) of one state's legs."""
    steps = toes[..., 1:, :] - toes[..., :-1, :]  # (np.diff's numbers, without its overhead)
    speeds = lengths(across(steps, up))
    # Scaled in place: the products of ``* fps * unit_scale`` in their order, without a new
    # array each.
    speeds *= fps
    speeds *= unit_scale
    return speeds


def toe_slide(toes, contacts, up, fps, unit_scale=1.0, speeds=None):
    """Mean horizontal toe speed (m/s) over steps between two consecutive contact frames
    (``speeds``: the :func:`toe_speeds` of ``toes``, if already known)."""
    steps = toe_speeds(toes, up, fps, unit_scale) if speeds is None else speeds
    return float(_toe_slides(steps[None], contacts)[0])


def _toe_slides(speeds, contacts):
    """:func:`toe_slide` of S states at once from their toe speeds (S, L, F-1)."""
    contacts = np.asarray(contacts) > 0.5
    both = contacts[:, 1:] & contacts[:, :-1]
    if not np.count_nonzero(both):
        return np.zeros(len(speeds))
    # Each state's steps in a row, summed as one state's are: compress picks a boolean index's
    # elements into a C-ordered array at a third of the index's cost (which laid the states
    # last, to be copied again).
    steps = speeds.reshape(len(speeds), -1).compress(both.reshape(-1), axis=1)
    return np.add.reduce(steps, axis=-1) / steps.shape[-1]  # (a mean's numbers)


def skate_ratio(toes, up, fps, ground, unit_scale=1.0, window=1, speeds=None, size=None):
    """Share of frames in which a foot near the ground moves horizontally too fast.

    ``window`` > 1 averages the speed over that many frames first (the 5-frame
    variant of the motion-synthesis literature); ``speeds`` as for :func:`toe_slide`;
    ``size`` the :func:`character_size` (None: an adult's, ``1 / unit_scale``).
    """
    speed = toe_speeds(toes, up, fps, unit_scale) if speeds is None else speeds
    heights = heights_along(toes, up)
    size = 1.0 / unit_scale if size is None else size
    return float(_skate_ratios(_near_ground(heights[None], ground, size), speed[None], size * unit_scale, window)[0])


def _near_ground(heights, ground, size):
    """Where toes at ``heights`` (S, L, F) are near the ground on the second frame of each
    step (S, L, F-1), for a character of ``size`` (see :func:`character_size`)."""
    return heights[:, :, 1:] - ground < SKATE_HEIGHT * size


def _skate_ratios(near, speeds, speed_scale, window=1):
    """:func:`skate_ratio` of S states at once, from where their toes are near the ground
    (:func:`_near_ground`) and their speeds (S, L, F-1) in m/s; ``speed_scale`` the
    character's size in metres per reference metre."""
    if window > 1 and speeds.shape[-1] >= window:
        speeds = _window_means(speeds, window)
    fast = speeds > SKATE_SPEED * speed_scale
    return np.add.reduce(np.logical_or.reduce(near & fast, axis=1), axis=-1) / near.shape[-1]  # (a mean's numbers)


def _window_means(speeds, window):
    """``np.convolve(row, np.ones(window) / window, mode="same")`` of every row of ``speeds``
    (..., F) in one convolve, of the rows one after another with ``window // 2`` zeros either
    side: each mean is the same dot product of ``window`` terms where the window is inside
    its row, and at a row's ends the shorter one with zeros' products added before or after
    it (nothing added; checked bit for bit on random rows, windows of 2 to 11 frames, up to
    400 frames). A convolve a row and np.stack cost three times as much on a click's four rows."""
    half, frames = window // 2, speeds.shape[-1]
    padded = np.zeros((speeds.size // frames, frames + 2 * half))
    padded[:, half:-half] = speeds.reshape(-1, frames)
    means = np.convolve(padded.reshape(-1), np.ones(window) / window, mode="same").reshape(padded.shape)
    return means[:, half:-half].reshape(speeds.shape)


def penetration(points, up, floor_heights, unit_scale=1.0):
    """Deepest point (m) below its floor height; points (L, F, 3), floors (L,)."""
    return float(_penetrations(dot(points[None], np.asarray(up, dtype=float)), floor_heights, unit_scale)[0])


def _penetrations(heights, floor_heights, unit_scale):
    """:func:`penetration` of S states of points at ``heights`` (S, L, F) at once."""
    depth = np.asarray(floor_heights)[:, None] - heights
    return np.maximum(np.maximum.reduce(depth.reshape(len(heights), -1), axis=1), 0.0) * unit_scale


def pelvis_deviation(pelvis, reference, unit_scale=1.0):
    """Mean distance (m) of the pelvis from the input pelvis."""
    return float(_pelvis_deviations(pelvis[None], reference, unit_scale)[0])


def _pelvis_deviations(pelvis, reference, unit_scale):
    """:func:`pelvis_deviation` of S states of the pelvis (S, F, 3) at once."""
    distances = lengths(pelvis - reference)
    return np.add.reduce(distances, axis=-1) / distances.shape[-1] * unit_scale  # (a mean's numbers)


def full_extension_share(hips, ankles, bone_lengths):
    """Share of leg-frames with the leg (nearly) straight."""
    return float(_full_extension_shares(hips[None], ankles[None], bone_lengths)[0])


def _full_extension_shares(hips, ankles, bone_lengths):
    """:func:`full_extension_share` of S states of the legs (S, L, F, 3) at once."""
    extension = lengths(ankles - hips) / np.asarray(bone_lengths)[:, None]
    straight = (extension >= FULL_EXTENSION).reshape(len(hips), -1)
    return np.add.reduce(straight, axis=1) / straight.shape[1]  # (a mean's numbers)


def ankle_accelerations(ankles, fps, unit_scale=1.0, percentile=99.0):
    """Percentile and peak of ankle acceleration magnitude (m/s^2) of each of S states of
    the ankles (S, L, F, 3), measured at once: a (percentile, peak) pair per state."""
    if ankles.shape[2] < 3:
        return [(0.0, 0.0)] * len(ankles)
    step = ankles[:, :, 1:] - ankles[:, :, :-1]  # np.diff's second difference, without its overhead
    accel = lengths(step[:, :, 1:] - step[:, :, :-1]).reshape(len(ankles), -1)
    # Scaled in place: the products of ``* fps * fps * unit_scale`` in their order, without a
    # new array each.
    accel *= fps
    accel *= fps
    accel *= unit_scale
    peaks = np.maximum.reduce(accel, axis=1).tolist()
    return list(zip(_percentile(accel, percentile).tolist(), peaks))


def _percentile(values, percentile):
    """``np.percentile(values, percentile, axis=-1)``'s numbers (its linear interpolation, the
    same arithmetic) from one partition, of ``values`` in place: numpy's general version
    costs several times more in Python than the work on a clip's few hundred values, and
    np.partition's copy as much as the partition."""
    count = values.shape[-1]
    position = (count - 1) * (percentile / 100)
    below = math.floor(position)
    above = min(below + 1, count - 1)
    share = position - below
    values.partition((below, above), axis=-1)
    low, high = values[..., below], values[..., above]
    rise = high - low
    return high - rise * (1 - share) if share >= 0.5 else low + rise * share


def ground_steadying(noise, fps, size):
    """The smoothing (Gaussian taps, or None) the ground figures give feet whose capture
    jitters by ``noise`` (:func:`foot_jitter`, world units): the narrowest under which the
    jitter reads as at most ``GROUND_JITTER_SPEED``. Measured on the input and given to the
    result's figures too, so before and after are looked at alike; without it, a jittering
    planted foot is never still enough to count as on the ground, and its jitter would be
    reported as slide (``foot_jitter_mm`` reports the jitter)."""
    return steadying_kernel(noise, fps, 1, GROUND_JITTER_SPEED * size, GROUND_STEADYING * fps)


def grounded_feet(foot_points, up, fps, size, steadying=None, tempo=1.0, judged=None):
    """Which frames (L, F) each foot is on the ground, and its lowest point's horizontal
    velocity (L, F, 3) in world units per second.

    ``foot_points`` (P, L, F, 3): the points of each foot (ankle, toe, ...; see
    :func:`foot_points`); ``size``: the character's leg length over a reference adult's,
    for the adult-scaled thresholds; ``steadying``: the :func:`ground_steadying` of the
    input's feet; ``tempo``: the input's :func:`~.contacts.gait_tempo`. The criterion's
    times and vertical speed are the gait's own, as the labeller's are: a walk four times
    slower hangs its swing foot near the ground, vertically slow, four times as long, and
    read at a walk's pace half its swing counted as ground. ``judged``: where not the feet
    themselves, the points (as ``foot_points``) whose frames on the ground are judged, the
    velocity still the feet's (a hand-keyed clip's feet as its keys pose them, see
    :func:`~.foot_lock.remove_foot_sliding`).
    """
    gait_fps = fps / tempo
    up = np.asarray(up, dtype=float)
    foot_points = steadied(foot_points, steadying)
    judged = foot_points if judged is None else steadied(judged, steadying)
    heights = heights_along(judged, up)  # (P, L, F)
    lowest = lowest_row(heights)
    # The lowest point of each foot and frame as a row of the (P L F) points, taken by one
    # flat index (np.take_along_axis builds an index per axis, several times the cost).
    rows = lowest * lowest.size + np.arange(lowest.size).reshape(lowest.shape)
    # (per second of the gait: the clip's own speeds over the tempo)
    velocity = _lowest_velocity(foot_points, rows, gait_fps)
    judged_velocity = velocity if judged is foot_points else _lowest_velocity(judged, rows, gait_fps)
    height = heights.take(rows)
    clearance = height - local_ground(height, round(GROUND_WINDOW * gait_fps), fps)
    on_ground = (clearance < GROUND_HEIGHT * size) & (np.abs(heights_along(judged_velocity, up))
                                                      < GROUND_VERTICAL_SPEED * size)
    return long_runs(on_ground, round(GROUND_TIME * gait_fps)), across(velocity, up) * tempo


def _lowest_velocity(foot_points, rows, gait_fps):
    """The velocity (L, F, 3) of the points of ``foot_points`` (P, L, F, 3) at the flat
    ``rows`` of their (P L F) points (the lowest of each foot and frame), each across
    ``GROUND_SPAN`` either side of its own track: a switch from ankle to toe is no step.
    :func:`~.contacts.span_velocity`'s numbers (the same difference over the same frames, the
    ends reaching only to the clip's), from the points at those rows alone: of every point
    first, then taken, it cost several times as much."""
    ahead, behind, steps = _span_offsets(foot_points.shape[-2], span_frames(gait_fps, GROUND_SPAN))
    points = foot_points.reshape(-1, 3)
    velocity = points.take(rows + ahead, axis=0)
    velocity -= points.take(rows + behind, axis=0)
    velocity *= gait_fps
    velocity /= steps
    return velocity


@lru_cache(maxsize=4)
def _span_offsets(frames, half):
    """The frames :func:`_lowest_velocity` differences across ``half`` frames either side in a
    clip of ``frames`` frames (:func:`~.contacts.span_ends`), ahead and behind, as offsets
    from each frame, and the frames between them as columns (F, 3) (see
    :func:`~.contacts.frame_columns`). The same for every state and solve of a clip: worked
    out once (a dozen numpy calls), read-only."""
    ahead, behind, steps = span_ends(frames, half)
    frame = np.arange(frames)
    return read_only(ahead - frame, behind - frame, frame_columns(steps))


def ground_slide(foot_points, up, fps, size, unit_scale=1.0, steadying=None, tempo=1.0, judged=None):
    """Mean horizontal speed (m/s) of the feet's lowest points while on the ground, and the
    share of frames each foot (L,) is on the ground (``foot_points``, ``steadying``,
    ``tempo`` and ``judged``: see :func:`grounded_feet`)."""
    (slide,), (grounded_share,) = _ground_slides(foot_points[:, None], up, fps, size, unit_scale, steadying, tempo,
                                                 None if judged is None else judged[:, None])
    return slide, grounded_share


def _ground_slides(foot_points, up, fps, size, unit_scale, steadying, tempo, judged=None):
    """:func:`ground_slide` of S states of the feet at once, ``foot_points`` (P, S, L, F, 3)
    (``judged`` too, if given): their legs are rows of one array. Returns the S slides and
    the (S, L) shares.

    Every state's slide is measured over the same frames: those where a foot is on the
    ground in any of the states. Each over its own, a fix that held the feet of a turn on
    the ground for more frames read as sliding more (4.8 -> 6.4 cm/s on cmu_01_01's turn at
    20 fps, whose feet slid less after; the same frames read 10.4 -> 6.4: the frames the fix
    put on the ground were the input's quickest), and one that lifted a skating foot off the
    ground would read as having stopped it."""
    states = foot_points.shape[1]

    def rows(points):
        return None if points is None else points.reshape((len(points), -1) + points.shape[-2:])
    on_ground, velocity = grounded_feet(rows(foot_points), up, fps, size, steadying, tempo, rows(judged))
    on_ground = on_ground.reshape(states, -1, on_ground.shape[-1])
    speed = lengths(velocity).reshape(on_ground.shape) * unit_scale
    sliding = np.logical_or.reduce(on_ground, axis=0) & (speed < POP_SPEED * size * unit_scale)
    slides = [float(np.add.reduce(s[m]) / count) if count else 0.0  # (a mean's numbers)
              for s, m, count in zip(speed, sliding, np.add.reduce(sliding, axis=(1, 2)).tolist())]
    return slides, np.add.reduce(on_ground, axis=-1) / on_ground.shape[-1]


def implausible_contacts(contacts, grounded_share, leg_names):
    """Warnings for legs whose labels cover under a third of the frames while the foot is on
    the ground far more often (a walk labelled as mostly swing); ``grounded_share`` (L,) the
    share of the frames each foot is on the ground (:func:`ground_slide`)."""
    labelled = np.asarray(contacts) > 0.5
    share = np.add.reduce(labelled, axis=1) / labelled.shape[1]  # (a mean's numbers)
    return [
        f"contacts of {name} look implausible: labelled on {100 * s:.0f}% of the frames, "
        f"on the ground on {100 * g:.0f}%; check its contact curve"
        for name, s, g in zip(leg_names, share, grounded_share)
        if s < IMPLAUSIBLE_SHARE and g > 2 * s
    ]


def foot_points(ankles, toes):
    """(2, ..., L, F, 3): the points of each foot the ground figures look at, of the ankles
    and toes (..., L, F, 3) (of a state, or of S states: (S, L, F, 3)), each a row of points."""
    return np.array((ankles, toes))  # (np.stack's numbers, without its Python layers)


def foot_jitter(feet):
    """The input feet's frame-to-frame capture noise (world units, std per axis) of their ankles
    and toes, ``feet`` (2 L, F, 3) as rows of one array (the ankles, then the toes): markerless
    or noisy capture jitters by millimetres, and the labeller smooths what it measures where
    that would read as speed. A figure of the input alone: a fix holds its locked frames
    still, and over the free frames alone (a swing's sharp turns) the measure does not hold."""
    return jitter(feet)


def character_size(bone_lengths):
    """The character's leg length over a reference adult's, in world units (bone lengths in
    world units): the factor that puts the adult thresholds (metres) in the scene's units."""
    return mean_leg_length(bone_lengths) / REFERENCE_LEG_LENGTH


def resting_floor(heights, fps):
    """The skate ratios' ground: the lowest height any of the toes at ``heights`` (L, F)
    stays at or below for ``GROUND_TIME`` (the least of their highest over each such
    window). A toe's lowest frame alone would let one glitch (a capture's first frame a
    few cm down) sink the ground under every toe and hide every skate."""
    return float(np.minimum.reduce(rolling_max(heights, round(GROUND_TIME * float(fps) / 2.0)), axis=None))


def motion_metrics(toes, hips, ankles, pelvis, contacts, up, fps, floors, bone_lengths,
                   reference_pelvis, unit_scale=1.0, steadying=None, tempo=1.0, judged_feet=None):
    """All reported figures for each of S states of the motion (a before and an after), one
    dict per state, and the share of the frames each foot is on the ground (S, L); arrays
    in world units with a leading axis of states: ``toes``, ``hips``, ``ankles`` (S, L, F, 3),
    ``pelvis`` (S, F, 3). ``steadying`` the input's :func:`ground_steadying` and ``tempo`` its
    gait's, for the ground figures; ``judged_feet`` (2, S, L, F, 3), where given, the feet
    whose frames on the ground are judged (see :func:`grounded_feet`). The filters that run along frames take every state's legs
    as rows of one array: on a short clip their cost is per numpy call, not per frame."""
    speeds = toe_speeds(toes, up, fps, unit_scale)  # shared by the toe slide and both skate ratios
    toe_heights = heights_along(toes, up)  # shared by the skate ratios and the penetration
    ground = resting_floor(toe_heights[0], fps)  # the input's, for every state
    accelerations = ankle_accelerations(ankles, fps, unit_scale)
    size = character_size(bone_lengths)
    slides, grounded_shares = _ground_slides(foot_points(ankles, toes), up, fps, size, unit_scale, steadying, tempo,
                                             judged_feet)
    near = _near_ground(toe_heights, ground, size)
    # Each figure's states as a list of floats (tolist: every value a float at once, where
    # indexing the arrays made a numpy scalar of each and float() converted it), the states'
    # dicts zipped from them.
    columns = {
        "ground_slide_cm_s": [100.0 * slide for slide in slides],
        "grounded_share": (np.add.reduce(grounded_shares, axis=-1) / grounded_shares.shape[-1]).tolist(),  # (a mean)
        "toe_slide_cm_s": (100.0 * _toe_slides(speeds, contacts)).tolist(),
        "skate_ratio": _skate_ratios(near, speeds, size * unit_scale).tolist(),
        "skate_ratio_5f": _skate_ratios(near, speeds, size * unit_scale, SKATE_WINDOW).tolist(),
        "toe_penetration_cm": (100.0 * _penetrations(toe_heights, floors, unit_scale)).tolist(),
        "pelvis_deviation_cm": (100.0 * _pelvis_deviations(pelvis, reference_pelvis, unit_scale)).tolist(),
        "full_extension_share": _full_extension_shares(hips, ankles, bone_lengths).tolist(),
        "ankle_accel_p99": [p99 for p99, _ in accelerations],
        "ankle_accel_max": [peak for _, peak in accelerations],
    }
    figures = [dict(zip(columns, state)) for state in zip(*columns.values())]
    return figures, grounded_shares
