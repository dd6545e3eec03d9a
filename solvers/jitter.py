"""Measurement jitter in point trajectories, and smoothing just strong enough for contact cues.

The labeller's cues are speeds over a few hundredths of a second and heights within
centimetres. Video-based and markerless capture, and noisy optical solves, jitter the feet
by millimetres from frame to frame; differenced at 120 fps that is tenths of a metre per
second, more than a planted foot's whole tolerance, and the stances dissolve. Clean capture
stays exactly as it is: points are smoothed only where their jitter would read as speed,
and then by the narrowest Gaussian that brings it under the limit.
"""

import numpy as np

LOWER_QUARTILE_OF_NORMAL = 0.3186  # of |z| for a standard normal z
THIRD_DIFFERENCE_GAIN = np.sqrt(20.0)  # std of white noise's third difference, per unit of its std
QUARTILE_PER_STD = LOWER_QUARTILE_OF_NORMAL * THIRD_DIFFERENCE_GAIN  # of |third difference|, for white noise
WIDTH_STEP = 0.25  # frames between the Gaussian widths tried


def jitter(points):
    """Robust std, per coordinate, of frame-to-frame noise in points (..., F, 3).

    Third differences are blind to a constant velocity and a constant acceleration (a foot
    sliding with the root, a foot landing), so on clean motion they are near zero wherever the
    foot is not turning sharply; their lower quartile, over every coordinate and frame, is
    then noise's, scaled as white noise's would be. Held frames (a keyed hold) count as the
    noiseless frames they are, so hand-keyed animation reads as clean."""
    return _jitter_of(_third_differences(points))


def _third_differences(points):
    """The magnitudes of the third differences of points (..., F, 3) along frames, flat:
    np.diff's numbers (a difference of differences), without its overhead."""
    for _ in range(3):
        points = points[..., 1:, :] - points[..., :-1, :]
    return np.abs(points, out=points).ravel()


def _quartile(third):
    """Which of the ascending ``third`` differences is their lower quartile."""
    return (third.size - 1) // 4


def _jitter_of(third):
    """:func:`jitter` from the points' :func:`_third_differences`."""
    if third.size == 0:
        return 0.0
    quartile = _quartile(third)  # a partition, not np.quantile's sort-and-interpolate: 3x cheaper
    return float(np.partition(third, quartile)[quartile]) / QUARTILE_PER_STD


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
    """:func:`steadying_kernel` of the :func:`jitter` of ``points`` (..., F, 3), whose quartile
    is only found where it could need smoothing: clean capture (the usual case) needs none, and
    counting the third differences within the largest quartile the limit allows tells so at a
    fraction of a partition's cost."""
    third = _third_differences(points)
    gain = raw_speed_noise_gain(half, fps)
    bound = limit / gain * QUARTILE_PER_STD * (1.0 - 1e-9)  # a margin for the rounding of the way back
    # Rounding is monotonic: a quartile within the bound reads, as :func:`jitter` computes it, as
    # at most the bound does.
    if bound / QUARTILE_PER_STD * gain <= limit and np.count_nonzero(third <= bound) > _quartile(third):
        return None
    return steadying_kernel(_jitter_of(third), fps, half, limit, longest)
