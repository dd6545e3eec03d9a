"""Capture jitter: measured, smoothed only where it would read as speed, and labelled through."""

import numpy as np
import pytest
from clip_scenarios import (
    CMU_TO_METRES,
    decimate,
    f1_score,
    jittered,
    load,
    load_run_at_30_fps,
    reference_labels,
    scale_root_motion,
    toe_positions,
)
from foot_lock.solvers import bvh, metrics
from foot_lock.solvers.contacts import ContactSettings, heel_down, steadied_points
from foot_lock.solvers.foot_lock import label_contacts, remove_foot_sliding
from foot_lock.solvers.jitter import gaussian, jitter, speed_noise_gain, steadied, steadying_kernel


def _stepping_foot(fps, seconds=4.0):
    """A foot (1, F, 3) in metres that slides along x at 0.3 m/s (a sliding stance), lifts
    and lands on a smooth arc each second, and turns nothing sharply."""
    t = np.arange(round(seconds * fps)) / fps
    lift = np.clip(np.sin(2 * np.pi * t), 0.0, None) ** 2
    return np.stack([0.3 * t + 0.4 * lift, 0.1 * t, 0.12 * lift], axis=-1)[None]


@pytest.mark.parametrize("fps", [30, 60, 120])
@pytest.mark.parametrize("noise", [0.001, 0.004])
def test_jitter_measures_white_noise_on_moving_feet(fps, noise):
    """Within 25% of the noise's std at 30, 60 and 120 fps, whatever the foot's own sliding,
    lifting and landing."""
    foot = _stepping_foot(fps)
    noisy = foot + np.random.default_rng(3).normal(0.0, noise, foot.shape)
    assert jitter(noisy) == pytest.approx(noise, rel=0.25)


def test_clean_motion_has_next_to_no_jitter():
    assert jitter(_stepping_foot(120)) < 1e-4
    assert jitter(np.zeros((2, 4, 3))) == 0.0  # too short for two third differences in a row


def test_held_frames_read_as_clean():
    """A foot held still for 60% of the clip (a keyed hold) and jittering by 3 mm for the rest
    is no jittery capture: hand-keyed animation is labelled as it is."""
    foot = np.zeros((1, 500, 3))
    foot[0, 300:] = np.random.default_rng(2).normal(0.0, 0.003, (200, 3))
    assert jitter(foot) == 0.0


def test_the_kernel_is_the_narrowest_that_brings_jitter_under_the_limit():
    fps, half, limit = 120, 2, 0.03
    assert steadying_kernel(1e-4, fps, half, limit, longest=5.0) is None  # clean capture: left alone
    kernel = steadying_kernel(0.003, fps, half, limit, longest=5.0)
    width = next(w for w in np.arange(0.25, 5.01, 0.25) if np.array_equal(gaussian(w), kernel))
    assert 0.003 * speed_noise_gain(kernel, half, fps) <= limit
    assert 0.003 * speed_noise_gain(gaussian(width - 0.25), half, fps) > limit
    assert len(steadying_kernel(1.0, fps, half, limit, longest=2.0)) == len(gaussian(2.0))  # never wider


def test_speed_noise_gain_of_raw_points_is_the_span_difference_s():
    """Unit white noise differenced across 2 frames either side at 120 fps: sqrt(2) / (4 / 120)."""
    assert speed_noise_gain(np.ones(1), 2, 120) == pytest.approx(np.sqrt(2) * 30)


def test_steadying_keeps_steady_motion_and_its_ends():
    """A point moving at constant velocity is its own smoothing, ends included (the motion
    continues point-mirrored past them); without a kernel the points are returned as given."""
    t = np.arange(20, dtype=float)
    line = np.stack([0.5 * t, -0.2 * t + 3, np.full_like(t, 1.0)], axis=-1)[None]
    np.testing.assert_allclose(steadied(line, gaussian(2.0)), line, atol=1e-12)
    np.testing.assert_allclose(steadied(line[:, :3], gaussian(2.0)), line[:, :3], atol=1e-12)  # shorter than it
    assert steadied(line, None) is line


def test_root_and_feet_are_smoothed_alike():
    rng = np.random.default_rng(5)
    feet = _stepping_foot(120) + rng.normal(0.0, 0.004, (1, 480, 3))
    root = feet[0] + 1.0
    steady_feet, steady_root = steadied_points([feet, root], feet, 120, 1.0, ContactSettings())
    np.testing.assert_allclose(steady_root, steady_feet[0] + 1.0)
    assert jitter(steady_feet) < 0.3 * jitter(feet)


def test_a_jittery_heel_still_counts_as_down():
    """5 mm of heel lift is the test; 3 mm of noise must not fail a planted heel: unsmoothed an
    eighth of a two-second stance stays a pin, smoothed four fifths."""
    frames = 240
    heels = np.random.default_rng(1).normal(0.0, 0.003, (1, frames, 3))
    labels = np.ones((1, frames))
    assert heel_down(labels, heels, (0.0, 0.0, 1.0), 0.85, fps=120.0, settings=ContactSettings(jitter_speed=np.inf)).mean() < 0.5
    assert heel_down(labels, heels, (0.0, 0.0, 1.0), 0.85, fps=120.0).mean() > 0.75


@pytest.mark.parametrize("clip", ["cmu_131_02", "cmu_03_01"])
@pytest.mark.parametrize("fps", [30, 60, 120])
def test_labels_hold_through_capture_jitter(clip, fps):
    """Every joint jittered by 0.5 degrees a frame (feet moving by about a centimetre), the root
    played x1.25: F1 0.92-0.94. Before the labeller smoothed jitter, 0.53-0.89; the stances
    dissolved at 60 and 120 fps, where a frame's noise reads as the most speed."""
    skeleton, original, rig = load(clip)
    reference = reference_labels(skeleton, original, rig)[:, :: round(original.fps / fps)]
    noisy = scale_root_motion(skeleton, jittered(decimate(original, fps), 0.5, seed=fps), 1.25)
    labels, _ = label_contacts(skeleton, noisy, rig, bvh.UP)
    assert f1_score(labels, reference) >= 0.92


def test_clean_capture_is_labelled_as_before():
    """Smoothing only where jitter needs it: a clean clip's labels are the raw points' own."""
    skeleton, motion, rig = load("cmu_07_01")
    labels, _ = label_contacts(skeleton, motion, rig, bvh.UP)
    unsmoothed, _ = label_contacts(skeleton, motion, rig, bvh.UP,
                                   ContactSettings(jitter_speed=np.inf))
    np.testing.assert_array_equal(labels, unsmoothed)


def test_a_clean_run_at_30_fps_is_labelled_unsmoothed():
    """A run's feet turn sharply every few frames: at 30 fps their third differences stay
    large on most frames. Read from those alone, this clean CMU run had 2.2 mm of jitter and
    was smoothed by a 5-tap Gaussian over its 3-4-frame stances, whose edges blurred: on
    another studio's run the lock lost each touchdown frame, 5.5 cm/s of slide at x1.25.
    Noise alternates from frame to frame; a run's motion does not."""
    skeleton, motion, rig = load_run_at_30_fps()
    assert motion.fps == pytest.approx(30.0, rel=1e-4)
    labels, _ = label_contacts(skeleton, motion, rig, bvh.UP)
    unsmoothed, _ = label_contacts(skeleton, motion, rig, bvh.UP, ContactSettings(jitter_speed=np.inf))
    np.testing.assert_array_equal(labels, unsmoothed)
    assert labels.any()


def test_a_jittery_walk_is_locked_where_it_stands():
    """The fix on the jittered x1.25 walk at 120 fps: before, most stances went unlabelled and
    82 cm/s of slide stayed over the reference frames; now under 10 cm/s (what remains is
    largely the jitter itself on the frames left free)."""
    skeleton, motion, rig = load("cmu_131_02")
    reference = reference_labels(skeleton, motion, rig)
    noisy = scale_root_motion(skeleton, jittered(motion, 0.5, seed=120), 1.25)
    result = remove_foot_sliding(skeleton, noisy, rig, bvh.UP)
    slide = metrics.toe_slide(toe_positions(skeleton, result.motion, rig), reference, bvh.UP, motion.fps)
    assert slide < 0.10


def test_the_report_gives_the_input_feet_s_jitter():
    """``foot_jitter_mm`` of the input: millimetres of noise on the jittered walk, a tenth of
    that on the clean capture, in any unit. The ground figures look through it: the jittered
    walk's feet are on the ground as often as the clean walk's (without the smoothing, on 2%
    of the frames instead of 46%), and its ground slide is not its jitter."""
    skeleton, motion, rig = load("cmu_131_02")
    sliding = scale_root_motion(skeleton, motion, 1.25)
    clean = remove_foot_sliding(skeleton, sliding, rig, bvh.UP)
    noisy = remove_foot_sliding(skeleton, jittered(sliding, 0.5, seed=1), rig, bvh.UP)
    assert clean.foot_jitter_mm < 0.3 < 2.0 < noisy.foot_jitter_mm < 10.0
    assert noisy.before["grounded_share"] == pytest.approx(clean.before["grounded_share"], abs=0.05)
    assert noisy.before["ground_slide_cm_s"] < 2.0 * clean.before["ground_slide_cm_s"]
    skeleton_cmu, motion_cmu, rig_cmu = load("cmu_131_02", scale=1.0)  # CMU units
    in_cmu = remove_foot_sliding(skeleton_cmu, motion_cmu, rig_cmu, bvh.UP, unit_scale=CMU_TO_METRES)
    in_metres = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    assert in_cmu.foot_jitter_mm == pytest.approx(in_metres.foot_jitter_mm, rel=1e-6)
