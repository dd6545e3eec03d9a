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
WIDTH_STEP = 0.25  # frames between the Gaussian widths tried


def jitter(points):
    """Robust std, per coordinate, of frame-to-frame noise in points (..., F, 3).

    Third differences are blind to a constant velocity and a constant acceleration (a foot
    sliding with the root, a foot landing), so on clean motion they are near zero wherever the
    foot is not turning sharply; their lower quartile, over every coordinate and frame, is
    then noise's, scaled as white noise's would be. Held frames (a keyed hold) count as the
    noiseless frames they are, so hand-keyed animation reads as clean."""
    third = np.abs(np.diff(points, n=3, axis=-2)).ravel()
    if third.size == 0:
        return 0.0
    quartile = (third.size - 1) // 4  # a partition, not np.quantile's sort-and-interpolate: 3x cheaper
    return float(np.partition(third, quartile)[quartile]) / (LOWER_QUARTILE_OF_NORMAL * THIRD_DIFFERENCE_GAIN)


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


def steadying_kernel(noise, fps, half, limit, longest):
    """The narrowest Gaussian (its taps) under which noise of std ``noise`` reads as a speed
    of at most ``limit`` across ``half`` frames either side; None where the raw points already
    do. Never wider than ``longest`` frames (std): a run's stance lasts a few frames, and the
    labels may not blur past it."""
    if noise * speed_noise_gain(np.ones(1), half, fps) <= limit:
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
