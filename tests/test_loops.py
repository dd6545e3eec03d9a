"""Cyclic clips solved as loops (numpy only): seamless, no drift, contacts across the seam."""

import numpy as np
import pytest
from clip_scenarios import load, reference_labels, scale_root_motion, walk_cycle
from foot_lock.solvers import bvh, loops
from foot_lock.solvers.kinematics import forward_kinematics
from foot_lock.solvers.metrics import toe_slide


@pytest.fixture(scope="module")
def cycle(clips_dir):
    skeleton, motion, rig = load("cmu_07_01", clips_dir=clips_dir)
    return skeleton, walk_cycle(motion), rig


def played(skeleton, motion, cycles):
    """World joint positions of a loop played ``cycles`` times (Repeat with Offset)."""
    tiled, _ = loops.tile(motion, cycles)
    return forward_kinematics(skeleton, tiled.rot, tiled.pos)[1]


def test_a_cycle_is_recognised_and_a_whole_clip_is_not(clips_dir, cycle):
    skeleton, motion, rig = load("cmu_07_01", clips_dir=clips_dir)
    assert loops.is_closed_loop(*cycle, bvh.UP)
    assert not loops.is_closed_loop(skeleton, motion, rig, bvh.UP)


def test_the_ends_alone_decide_as_the_whole_clip_does(clips_dir, cycle):
    """``ends_meet`` on a clip's first and last frames is ``is_closed_loop`` of the clip."""
    for skeleton, motion, rig in (cycle, load("cmu_07_01", clips_dir=clips_dir)):
        ends = type(motion)(motion.rot[[0, -1]], motion.pos[[0, -1]], motion.fps)
        assert loops.ends_meet(skeleton, ends, rig, bvh.UP) == loops.is_closed_loop(skeleton, motion, rig, bvh.UP)
    assert loops.ends_meet(*cycle, bvh.UP)


def test_a_sliding_loop_is_fixed_and_still_loops_over_four_cycles(cycle):
    skeleton, motion, rig = cycle
    sliding = scale_root_motion(skeleton, motion, 1.25)
    result = loops.solve_loop(skeleton, sliding, rig, bvh.UP, unit_scale=1.0)
    assert result.motion.frames == motion.frames
    assert result.before["toe_slide_cm_s"] > 20.0
    gpos = played(skeleton, result.motion, 4)
    labels = np.tile(reference_labels(skeleton, motion, rig)[:, :-1], 4)  # of the unscaled cycle
    labels = np.concatenate([labels, labels[:, :1]], axis=1)
    toes = np.stack([gpos[:, leg.toe] for leg in rig.legs])
    assert 100.0 * toe_slide(toes, labels, bvh.UP, motion.fps) <= 1.0
    # Seamless: the last pose is the first one, moved by the cycle's travel.
    one = played(skeleton, result.motion, 1)
    travel = one[-1, 0] - one[0, 0]
    assert np.abs(one[-1] - one[0] - travel).max() * 1000.0 <= 1.0
    # The seam was already nearly closed by the cycles around the kept one.
    assert result.after["loop_seam_cm"] < 0.1


def test_contacts_wrap_around_the_seam(cycle):
    """A stance that spans the seam is one stance: locked on both sides of it."""
    skeleton, motion, rig = cycle
    sliding = scale_root_motion(skeleton, motion, 1.25)
    result = loops.solve_loop(skeleton, sliding, rig, bvh.UP)
    np.testing.assert_array_equal(result.contacts[:, 0], result.contacts[:, -1])
    gpos = played(skeleton, result.motion, 2)
    period = motion.frames - 1
    spanning = [i for i, row in enumerate(result.contacts) if row[0] > 0.5 and row[-2] > 0.5]
    assert spanning, "the cycle should start inside a stance of one foot"
    locked = np.tile(result.contacts[:, :-1] > 0.5, 2)
    locked = np.concatenate([locked, locked[:, :1]], axis=1)
    for leg in spanning:
        speed = np.linalg.norm(np.diff(gpos[:, rig.legs[leg].toe], axis=0)[:, [0, 2]], axis=-1) * motion.fps
        both = locked[leg, 1:] & locked[leg, :-1]
        seam = speed[period - 3 : period + 3][both[period - 3 : period + 3]]
        assert seam.max() <= speed[both].max()  # no worse across the seam than inside the cycle
        assert seam.max() < 0.05  # m/s: the stance goes on across the seam


def test_the_tiled_loop_repeats_with_offset(cycle):
    motion = cycle[1]
    tiled, (frames,) = loops.tile(motion, 3, [np.arange(motion.frames)])
    period = motion.frames - 1
    assert tiled.frames == 3 * period + 1
    np.testing.assert_array_equal(frames[period : 2 * period], np.arange(period))
    np.testing.assert_allclose(tiled.pos[2 * period] - tiled.pos[period], loops.cycle_offset(motion))
