"""Contact labels on real mocap: robust to root-speed sliding and to units."""

import numpy as np
import pytest
from clip_scenarios import ALL_CLIPS, f1_score, load, reference_labels, scale_root_motion, with_ground_root
from foot_lock.solvers import bvh
from foot_lock.solvers.contacts import ContactSettings, fill_gaps, majority_vote
from foot_lock.solvers.foot_lock import label_contacts


@pytest.mark.parametrize("clip", ALL_CLIPS)
@pytest.mark.parametrize("root_scale", [1.25, 0.75])
def test_labels_on_sliding_clip_match_original_contacts(clip, root_scale):
    skeleton, motion, rig = load(clip)
    reference = reference_labels(skeleton, motion, rig)
    sliding = scale_root_motion(skeleton, motion, root_scale)
    labels, slip = label_contacts(skeleton, sliding, rig, bvh.UP)
    assert f1_score(labels, reference) >= 0.9
    assert slip == pytest.approx(root_scale - 1.0, abs=0.1)


@pytest.mark.parametrize("clip", ["cmu_07_01", "cmu_131_01"])
def test_root_motion_on_a_ground_root_above_the_pelvis(clip):
    """Game rigs carry root motion on a root bone at the feet; scaling that slides the feet."""
    skeleton, motion, rig = with_ground_root(*load(clip))
    assert skeleton.names[rig.pelvis] != skeleton.names[0]
    reference = reference_labels(skeleton, motion, rig)
    labels, slip = label_contacts(skeleton, scale_root_motion(skeleton, motion, 1.25), rig, bvh.UP)
    assert f1_score(labels, reference) >= 0.95
    assert slip == pytest.approx(0.25, abs=0.05)


def test_plain_velocity_threshold_fails_where_ours_holds():
    """The scenario is a real test: without slip compensation the labels break down."""
    skeleton, motion, rig = load("cmu_07_01")
    reference = reference_labels(skeleton, motion, rig)
    sliding = scale_root_motion(skeleton, motion, 1.25)
    plain, _ = label_contacts(skeleton, sliding, rig, bvh.UP, ContactSettings(compensate_slip=False))
    assert f1_score(plain, reference) < 0.5


@pytest.mark.parametrize("unit_scale", [1.0, 100.0, 0.01, 1.0 / 0.056444])
def test_same_clip_in_any_unit_gives_identical_labels(unit_scale):
    skeleton, motion, rig = load("cmu_131_01")
    expected, _ = label_contacts(skeleton, motion, rig, bvh.UP)
    scaled = motion.copy()
    scaled.pos *= unit_scale
    labels, _ = label_contacts(skeleton, scaled, rig, bvh.UP)
    assert np.array_equal(labels, expected)


def test_majority_vote_removes_single_frame_flicker():
    labels = np.array([[0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1]], dtype=bool)
    assert majority_vote(labels, 3).astype(int).tolist() == [[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]]


def test_short_breaks_inside_a_stance_are_closed():
    labels = np.array([[1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1]], dtype=bool)
    assert fill_gaps(labels, 2).astype(int).tolist() == [[1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1]]


def test_smoothing_gives_a_ramp_between_zero_and_one():
    skeleton, motion, rig = load("cmu_07_01")
    weights, _ = label_contacts(skeleton, motion, rig, bvh.UP, ContactSettings(smoothing=0.1))
    assert weights.min() == 0.0 and weights.max() == 1.0
    assert np.any((weights > 0.0) & (weights < 1.0))
