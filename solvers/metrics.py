"""The quality figures Foot Lock reports, before and after a solve.

Speeds and distances come out in metres (per second) given ``unit_scale``, the
length of one world unit in metres, so figures read the same whatever the scene's
units. Frame-based filters use the clip's own frame rate.
"""

import numpy as np

from .quaternion import horizontal

SKATE_HEIGHT = 0.05  # m: a foot this close to the ground should not move fast ...
SKATE_SPEED = 0.5  # m/s: ... faster than this is a skate
SKATE_WINDOW = 5  # frames of the averaged variant
FULL_EXTENSION = 0.995  # hip-to-ankle distance over thigh plus shin counted as straight


def toe_slide(toes, contacts, up, fps, unit_scale=1.0):
    """Mean horizontal toe speed (m/s) over steps between two consecutive contact frames."""
    contacts = np.asarray(contacts) > 0.5
    both = contacts[:, 1:] & contacts[:, :-1]
    if not both.any():
        return 0.0
    steps = np.linalg.norm(horizontal(np.diff(toes, axis=1), up), axis=-1) * fps * unit_scale
    return float(steps[both].mean())


def skate_ratio(toes, up, fps, ground, unit_scale=1.0, window=1):
    """Share of frames in which a foot near the ground moves horizontally too fast.

    ``window`` > 1 averages the speed over that many frames first (the 5-frame
    variant of the motion-synthesis literature).
    """
    speed = np.linalg.norm(horizontal(np.diff(toes, axis=1), up), axis=-1) * fps * unit_scale
    if window > 1 and speed.shape[1] >= window:
        kernel = np.ones(window) / window
        speed = np.stack([np.convolve(s, kernel, mode="same") for s in speed])
    height = ((toes[:, 1:] @ np.asarray(up, dtype=float)) - ground) * unit_scale
    skating = (height < SKATE_HEIGHT) & (speed > SKATE_SPEED)
    return float(skating.any(axis=0).mean())


def penetration(points, up, floor_heights, unit_scale=1.0):
    """Deepest point (m) below its floor height; points (L, F, 3), floors (L,)."""
    depth = np.asarray(floor_heights)[:, None] - points @ np.asarray(up, dtype=float)
    return float(max(depth.max(), 0.0) * unit_scale)


def pelvis_deviation(pelvis, reference, unit_scale=1.0):
    """Mean distance (m) of the pelvis from the input pelvis."""
    return float(np.linalg.norm(pelvis - reference, axis=-1).mean() * unit_scale)


def full_extension_share(hips, ankles, bone_lengths):
    """Share of leg-frames with the leg (nearly) straight."""
    extension = np.linalg.norm(ankles - hips, axis=-1) / np.asarray(bone_lengths)[:, None]
    return float((extension >= FULL_EXTENSION).mean())


def ankle_acceleration(ankles, fps, unit_scale=1.0, percentile=99.0):
    """Percentile and peak of ankle acceleration magnitude (m/s^2)."""
    if ankles.shape[1] < 3:
        return 0.0, 0.0
    accel = np.linalg.norm(np.diff(ankles, n=2, axis=1), axis=-1) * fps * fps * unit_scale
    return float(np.percentile(accel, percentile)), float(accel.max())


def motion_metrics(toes, hips, ankles, pelvis, contacts, up, fps, floors, bone_lengths,
                   reference_pelvis, unit_scale=1.0):
    """All reported figures for one state of the motion (arrays in world units)."""
    ground = float(np.min(floors))
    accel_p99, accel_max = ankle_acceleration(ankles, fps, unit_scale)
    return {
        "toe_slide_cm_s": 100.0 * toe_slide(toes, contacts, up, fps, unit_scale),
        "skate_ratio": skate_ratio(toes, up, fps, ground, unit_scale),
        "skate_ratio_5f": skate_ratio(toes, up, fps, ground, unit_scale, SKATE_WINDOW),
        "toe_penetration_cm": 100.0 * penetration(toes, up, floors, unit_scale),
        "pelvis_deviation_cm": 100.0 * pelvis_deviation(pelvis, reference_pelvis, unit_scale),
        "full_extension_share": full_extension_share(hips, ankles, bone_lengths),
        "ankle_accel_p99": accel_p99,
        "ankle_accel_max": accel_max,
    }
