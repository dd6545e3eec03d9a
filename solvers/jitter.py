"""Measurement jitter in point trajectories, and smoothing just strong enough for contact cues.

The labeller's cues are speeds over a few hundredths of a second and heights within
centimetres. Video-based and markerless capture, and noisy optical solves, jitter the feet
by millimetres from frame to frame; differenced at 120 fps that is tenths of a metre per
second, more than a planted foot's whole tolerance, and the stances dissolve. Clean capture
stays exactly as it is: points are smoothed only where their jitter would read as speed,
and then by the narrowest Gaussian that brings it under the limit.
"""

import math

import numpy as np

LOWER_QUARTILE_OF_NORMAL = 0.3186  # of |z| for a standard normal z
# White noise of unit std: its third differences d have variance 20 and each is correlated
# with the next by -15 (-3/4), so the sums of two in a row, d[t] + d[t + 1], have variance
# 10 and their differences (fourth differences) 70; the two variances differ by 60.
PAIR_SUM_VARIANCE, PAIR_DIFFERENCE_VARIANCE = 10.0, 70.0
NOISE_VARIANCE_GAP = PAIR_DIFFERENCE_VARIANCE - PAIR_SUM_VARIANCE  # per unit of the noise's variance
WIDTH_STEP = 0.25  # frames between the Gaussian widths tried


def jitter(points):
    """Robust std, per coordinate, of frame-to-frame noise in points (..., F, 3).

    Third differences are blind to a constant velocity and a constant acceleration (a foot
    sliding with the root, a foot landing). What motion leaves in them changes smoothly from
    one to the next, where white noise's alternate (each is correlated with the next by
    -3/4): the differences of two in a row then carry noise seven times as strongly as their
    sums, and motion slower than a quarter of the frame rate no more strongly than the sums.
    The difference of the two variances is noise's alone. A run at 30 fps, whose feet turn
    sharply every few frames, keeps its third differences large on most frames: read from
    them alone, clean runs took about 2.3 mm of jitter and were smoothed over their 3-5-frame
    stances; now they read as clean.

    Each variance is read robustly, from its lower quartile over every coordinate and frame
    (:func:`_noise_of`), so held frames (a keyed hold) count as the noiseless frames
    they are and hand-keyed animation reads as clean."""
    first, second = _third_difference_pairs(points)
    return _noise_of(_pair_sums(first, second), _pair_differences(first, second))


def _third_difference_pairs(points):
    """Each two third differences in a row of points (..., F, 3) along frames: the first and
    the second of every pair (empty below five frames)."""
    third = points
    for _ in range(3):
        third = third[..., 1:, :] - third[..., :-1, :]
    return third[..., :-1, :], third[..., 1:, :]


def _pair_sums(first, second):
    """The magnitudes of the sums of :func:`_third_difference_pairs`, flat (in place of the
    sums: one array, not two)."""
    sums = first + second
    return np.abs(sums, out=sums).ravel()


def _pair_differences(first, second):
    """The magnitudes of the differences (fourth differences) of :func:`_third_difference_pairs`, flat
    (in place of the differences: one array, not two)."""
    differences = second - first
    return np.abs(differences, out=differences).ravel()


def _noise_of(sums, differences):
    """:func:`jitter` from the points' :func:`_pair_sums` and :func:`_pair_differences`: each
    one's variance from its lower quartile, as a normal variable's would be."""
    variance = _robust_std(differences) ** 2 - _robust_std(sums) ** 2
    return math.sqrt(max(variance, 0.0) / NOISE_VARIANCE_GAP)  # (np.sqrt's number of a float)


def _quartile(values):
    """Which of the ascending ``values`` is their lower quartile."""
    return (values.size - 1) // 4


def _robust_std(magnitudes):
    """The std of a normal variable whose lower quartile of magnitudes is theirs (0 for none).
    ``magnitudes`` (flat, the caller's own) are partitioned in place: np.partition's copy cost
    as much as the partition."""
    if magnitudes.size == 0:
        return 0.0
    quartile = _quartile(magnitudes)  # a partition, not np.quantile's sort-and-interpolate: 3x cheaper
    magnitudes.partition(quartile)
    return float(magnitudes[quartile]) / LOWER_QUARTILE_OF_NORMAL


def gaussian(width):
    """A normalised Gaussian kernel of std ``width`` frames, three stds either side."""
    half = int(np.ceil(3.0 * width))
    taps = np.exp(-0.5 * (np.arange(-half, half + 1) / width) ** 2)
    return taps / taps.sum()


def speed_noise_gain(kernel, half, fps):
    """Std of the speed (per second) measured across ``half`` frames either side (see
    :func:`contacts.span_velocity`) of unit white noise smoothed by ``kernel``."""
    combined = np.zeros(len(kernel) + 2 * half)
    combined[2 * half :] += kernel
    combined[: len(kernel)] -= kernel
    return float(np.linalg.norm(combined)) * fps / (2 * half)


def raw_speed_noise_gain(half, fps):
    """:func:`speed_noise_gain` of points not smoothed (``half`` >= 1): the difference of two
    independent samples has sqrt(2) times their std (the same number, without the arrays)."""
    return float(np.sqrt(2.0)) * fps / (2 * half)


def steadying_kernel(noise, fps, half, limit, longest):
    """The narrowest Gaussian (its taps) under which noise of std ``noise`` reads as a speed
    of at most ``limit`` across ``half`` frames either side; None where the raw points already
    do. Never wider than ``longest`` frames (std): a run's stance lasts a few frames, and the
    labels may not blur past it."""
    if noise * raw_speed_noise_gain(half, fps) <= limit:
        return None
    widths = np.arange(WIDTH_STEP, max(longest, WIDTH_STEP) + 1e-9, WIDTH_STEP)
    for width in widths:
        kernel = gaussian(width)
        if noise * speed_noise_gain(kernel, half, fps) <= limit:
            return kernel
    return gaussian(widths[-1])


def steadied(points, kernel, axis=-2):
    """Points smoothed along frames (``axis``) by ``kernel`` (odd length). Beyond the ends the
    motion continues point-mirrored (2 x0 - x), so an end keeps its velocity instead of
    stopping, and a clip shorter than the kernel is smoothed by the frames it has."""
    if kernel is None:
        return points
    points = np.moveaxis(np.asarray(points, dtype=float), axis, -1)
    frames, half = points.shape[-1], len(kernel) // 2
    reach = min(half, frames - 1)
    if reach < 1:
        return np.moveaxis(points.copy(), -1, axis)
    before = 2.0 * points[..., :1] - points[..., reach:0:-1]
    after = 2.0 * points[..., -1:] - points[..., -2 : -reach - 2 : -1]
    padded = np.concatenate([before, points, after], axis=-1)
    taps = kernel[half - reach : half + reach + 1]
    taps = taps / taps.sum()
    # Shifted copies summed, not a product with the taps: OpenBLAS would run that
    # matrix-vector product on its thread pool (see quaternion.horizontal).
    smoothed = taps[0] * padded[..., :frames]
    for shift, tap in enumerate(taps[1:], start=1):
        smoothed += tap * padded[..., shift : shift + frames]
    return np.moveaxis(smoothed, -1, axis)


def steadying_kernel_for(points, fps, half, limit, longest):
    """:func:`steadying_kernel` of the :func:`jitter` of ``points`` (..., F, 3), whose quartiles
    are only found where it could need smoothing: clean capture (the usual case) needs none.
    The jitter is at most the fourth differences' part (:func:`jitter`), and counting those
    within the largest quartile the limit allows tells so at a fraction of a partition's cost."""
    first, second = _third_difference_pairs(points)
    differences = _pair_differences(first, second)
    gain = raw_speed_noise_gain(half, fps)
    # The largest quartile of the differences whose noise reads as at most ``limit``, with a
    # margin for the rounding of the way back: a quartile within it reads, as :func:`jitter`
    # computes it, as at most the bound does (rounding is monotonic).
    bound = limit / gain * np.sqrt(NOISE_VARIANCE_GAP) * LOWER_QUARTILE_OF_NORMAL * (1.0 - 1e-9)
    if np.count_nonzero(differences <= bound) > _quartile(differences):
        return None
    return steadying_kernel(_noise_of(_pair_sums(first, second), differences), fps, half, limit, longest)
