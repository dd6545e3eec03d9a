"""Automatic foot-contact labels (seed "Contact Times").

Velocity and height heuristics with a majority vote, made robust to the very
sliding they exist to fix: when the root travels faster or slower than the feet
(the usual cause of sliding), a planted toe moves with a fraction of the root's
horizontal velocity. We estimate that fraction for the clip -- the slip factor --
and remove it before thresholding, so the labels match those of the unslipped
motion. Thresholds are for a reference human and scale with the character's leg
length, so metres, centimetres or CMU units give identical labels.
"""

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .quaternion import horizontal

REFERENCE_LEG_LENGTH = 0.85  # hip-to-ankle bone length of a reference adult, metres


@dataclass
class ContactSettings:
    speed_threshold: float = 0.25  # m/s for the reference human
    height_threshold: float = 0.10  # m above the foot's local ground
    ground_window: float = 0.25  # s either side for the local ground (a step, a box)
    vote_window: float = 0.04  # s; majority vote over about 5 frames at 120 fps
    min_gap: float = 0.1  # s; shorter breaks inside a stance are filled (no swing is that short)
    widen: float = 0.01  # s; a stance's edges move out by this much (a frame at 120 fps)
    smoothing: float = 0.0  # s; > 0 turns labels into a 0..1 ramp of that width
    compensate_slip: bool = True
    max_slip: float = 1.0  # largest root speed mismatch considered, as a fraction


def velocity(positions, fps, axis=-2):
    """Central-difference velocity per second along the frame axis."""
    return np.gradient(positions, axis=axis) * fps


def majority_vote(labels, window):
    """Each frame takes the majority label of the ``window`` frames around it."""
    window = max(1, int(window) | 1)  # odd, so there is always a majority
    if window == 1:
        return labels.copy()
    half = window // 2
    padded = np.pad(labels.astype(float), [(0, 0)] * (labels.ndim - 1) + [(half, half)], mode="edge")
    return sliding_window_view(padded, window, axis=-1).sum(-1) > half


def rolling_min(values, half_width):
    if half_width < 1:
        return values.copy()
    padded = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(half_width, half_width)], mode="edge")
    return sliding_window_view(padded, 2 * half_width + 1, axis=-1).min(-1)


def estimate_slip(toe_velocity, root_velocity, speed_scale, max_slip=1.0):
    """Fraction of the root's horizontal velocity that planted toes share.

    Chooses ``a`` minimising, over frames, the slower foot's speed after removing
    ``a * root velocity`` (the slower foot is the planted one in locomotion);
    speeds are capped so airborne phases do not pull the estimate.
    """
    cap = 2.0 * speed_scale
    # One factor for the whole clip: a few thousand evenly spread frames pin it down.
    stride = max(1, toe_velocity.shape[1] // 4000)
    toe_velocity, root_velocity = toe_velocity[:, ::stride], root_velocity[::stride]

    def cost(candidates):
        residual = toe_velocity[None] - candidates[:, None, None, None] * root_velocity[None, None]
        slowest = np.linalg.norm(residual, axis=-1).min(axis=1)
        return np.minimum(slowest, cap).sum(axis=-1)

    coarse = np.linspace(-max_slip, max_slip, 41)
    best = coarse[np.argmin(cost(coarse))]
    step = coarse[1] - coarse[0]
    fine = np.linspace(best - step, best + step, 41)
    return float(fine[np.argmin(cost(fine))])


def detect_contacts(toes, root, up, fps, leg_length, settings=None):
    """Contact weights (L, F) in 0..1 from toe positions (L, F, 3) and root positions (F, 3)."""
    settings = settings or ContactSettings()
    scale = leg_length / REFERENCE_LEG_LENGTH
    toe_velocity = horizontal(velocity(toes, fps), up)
    vertical_speed = np.abs(velocity(toes, fps) @ np.asarray(up, dtype=float))
    slip = 0.0
    if settings.compensate_slip and toes.shape[1] > 2:
        root_velocity = horizontal(velocity(root, fps, axis=0), up)
        slip = estimate_slip(toe_velocity, root_velocity, settings.speed_threshold * scale, settings.max_slip)
        toe_velocity = toe_velocity - slip * root_velocity[None]
    speed = np.sqrt(np.sum(toe_velocity**2, axis=-1) + vertical_speed**2)
    heights = toes @ np.asarray(up, dtype=float)
    local_ground = rolling_min(heights, round(settings.ground_window * fps))
    labels = (speed < settings.speed_threshold * scale) & (
        heights - local_ground < settings.height_threshold * scale
    )
    labels = majority_vote(labels, round(settings.vote_window * fps))
    labels = fill_gaps(labels, round(settings.min_gap * fps))
    labels = widen(labels, round(settings.widen * fps))
    weights = labels.astype(float)
    if settings.smoothing > 0:
        weights = smooth(weights, settings.smoothing * fps)
    return weights, slip


def fill_gaps(labels, max_gap):
    """Close breaks of at most ``max_gap`` frames between two contacts.

    A break inside a stance would unlock the toe for a frame or two and lock it
    again somewhere else: a visible pop. Real swing phases are far longer.
    """
    out = labels.copy()
    for row in out.reshape(-1, out.shape[-1]):
        edges = np.flatnonzero(np.diff(row.astype(np.int8)))
        starts, ends = edges[row[edges]] + 1, edges[~row[edges]] + 1  # gap starts / contact restarts
        for start in starts:
            following = ends[ends > start]
            if len(following) and following[0] - start <= max_gap:
                row[start : following[0]] = True
    return out


def widen(labels, frames):
    """Grow every contact by ``frames`` on both sides."""
    if frames < 1:
        return labels.copy()
    padded = np.pad(labels, [(0, 0)] * (labels.ndim - 1) + [(frames, frames)], mode="edge")
    return sliding_window_view(padded, 2 * frames + 1, axis=-1).any(-1)


def smooth(weights, width):
    """Box-filter a 0/1 signal into a 0..1 ramp ``width`` frames wide."""
    window = max(1, round(width) | 1)
    half = window // 2
    padded = np.pad(weights, [(0, 0)] * (weights.ndim - 1) + [(half, half)], mode="edge")
    return sliding_window_view(padded, window, axis=-1).mean(-1)


def reference_contacts(toes, fps, unit_scale=1.0, threshold=0.25, window=5):
    """The clips README's reference labels: world toe speed below 0.25 m/s, 5-frame vote."""
    speed = np.linalg.norm(velocity(toes, fps), axis=-1) * unit_scale
    return majority_vote(speed < threshold, window)
