"""Forward kinematics and its inverse; the reported quality figures on known motion."""

import numpy as np
import pytest
from foot_lock.solvers import metrics
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers.kinematics import Skeleton, forward_kinematics, inverse_kinematics_locals
from foot_lock.solvers.rig import Leg, Rig, leg_length, leg_length_from_locals

UP = np.array([0.0, 0.0, 1.0])


def random_motion(seed, frames):
    """A six-joint skeleton with a branch and a second root, and random local motion."""
    rng = np.random.default_rng(seed)
    skeleton = Skeleton(list("abcdef"), [-1, 0, 1, 1, 3, -1])
    return skeleton, quat.normalize(rng.normal(size=(frames, 6, 4))), rng.normal(size=(frames, 6, 3))


def test_inverse_of_forward_kinematics_gives_back_the_locals():
    skeleton, rot, pos = random_motion(0, 50)
    grot, gpos = forward_kinematics(skeleton, rot, pos)
    back_rot, back_pos = inverse_kinematics_locals(skeleton, grot, gpos)
    assert np.allclose(np.abs(np.sum(back_rot * rot, axis=-1)), 1.0)
    assert np.allclose(back_pos, pos)


def test_forward_kinematics_of_selected_joints_matches_the_full_pass():
    skeleton, rot, pos = random_motion(1, 5)
    _, full = forward_kinematics(skeleton, rot, pos)
    _, some = forward_kinematics(skeleton, rot, pos, joints=[4])
    assert np.allclose(some[:, [0, 1, 3, 4]], full[:, [0, 1, 3, 4]])


def test_forward_kinematics_positions_only_leaves_out_the_tips_rotations_alone():
    """Joints asked for ``positions_only`` keep their positions; every other joint's globals
    are the full pass's, to the bit."""
    skeleton, rot, pos = random_motion(2, 5)
    full_rot, full_pos = forward_kinematics(skeleton, rot, pos)
    some_rot, some_pos = forward_kinematics(skeleton, rot, pos, joints=[2, 4], positions_only=[2, 4])
    assert np.array_equal(some_pos[:, :5], full_pos[:, :5])
    assert np.array_equal(some_rot[:, [0, 1, 3]], full_rot[:, [0, 1, 3]])


def test_leg_length_from_the_legs_locals_is_the_posed_bodys():
    """``leg_length_from_locals`` measures each thigh in its hip's frame and each shin in its
    knee's: what ``leg_length`` measures on the whole posed body, also with a twist joint
    between hip and knee and a root that turns and travels above the hips."""
    rng = np.random.default_rng(7)
    frames = 60
    #          root pelvis hipL twist kneeL ankleL toeL hipR kneeR ankleR toeR
    parents = [-1, 0, 1, 2, 3, 4, 5, 1, 7, 8, 9]
    rot = quat.normalize(rng.normal(size=(frames, len(parents), 4)))
    pos = rng.normal(size=(frames, len(parents), 3)) * rng.uniform(0.5, 2.0, size=len(parents))[:, None]
    skeleton = Skeleton([f"j{i}" for i in range(len(parents))], parents)
    rig = Rig(1, [Leg("left", 2, 4, 5, 6), Leg("right", 7, 8, 9, 10)])
    _, gpos = forward_kinematics(skeleton, rot, pos)
    assert leg_length_from_locals(skeleton, rot, pos, rig) == pytest.approx(leg_length(gpos, rig), rel=1e-12)
    above = rot.copy(), pos.copy()
    above[0][:, :3] = quat.normalize(rng.normal(size=(frames, 3, 4)))  # root, pelvis, left hip turn ...
    above[1][:, :3] += rng.normal(size=(frames, 3, 3))  # ... and travel: no segment below changes length
    assert leg_length_from_locals(skeleton, *above, rig) == leg_length_from_locals(skeleton, rot, pos, rig)


def walking_toe(fps=100, seconds=2.0, slide=0.0):
    """A toe planted for the first half second of each second, else swinging forward at 2 m/s;
    ``slide`` m/s of drift while planted."""
    t = np.arange(int(fps * seconds)) / fps
    planted = (t % 1.0) < 0.5
    velocity = np.where(planted, slide, 2.0)
    x = np.concatenate([[0.0], np.cumsum(velocity[1:] / fps)])
    z = np.where(planted, 0.0, 0.1)
    return np.stack([x, np.zeros_like(x), z], axis=-1)[None], planted[None]


def test_toe_slide_is_the_mean_horizontal_speed_within_contacts():
    toes, planted = walking_toe(slide=0.1)
    assert abs(metrics.toe_slide(toes, planted, UP, 100) - 0.1) < 1e-9


def test_skate_ratio_counts_fast_feet_near_the_ground():
    toes, _ = walking_toe(slide=0.0)
    assert metrics.skate_ratio(toes, UP, 100, ground=0.0) == 0.0  # fast only when lifted 10 cm
    sliding, _ = walking_toe(slide=0.8)
    ratio = metrics.skate_ratio(sliding, UP, 100, ground=0.0)
    assert 0.45 < ratio < 0.5  # the planted half skates
    assert metrics.skate_ratio(sliding, UP, 100, ground=0.0, window=5) > 0.4


def test_penetration_pelvis_extension_and_acceleration():
    toes, _ = walking_toe()
    assert metrics.penetration(toes, UP, [0.0]) == 0.0
    assert abs(metrics.penetration(toes - [0.0, 0.0, 0.02], UP, [0.0]) - 0.02) < 1e-12
    pelvis = np.zeros((10, 3))
    assert abs(metrics.pelvis_deviation(pelvis + [0.03, 0.04, 0.0], pelvis) - 0.05) < 1e-12
    hips = np.zeros((1, 4, 3))
    ankles = np.array([[[0, 0, -0.9], [0, 0, -0.999], [0, 0, -0.5], [0, 0, -1.0]]], dtype=float)
    assert metrics.full_extension_share(hips, ankles, [1.0]) == 0.5
    still = np.zeros((1, 10, 3))
    assert metrics.ankle_accelerations(still[None], 30) == [(0.0, 0.0)]
    jolt = still.copy()
    jolt[0, 5, 0] = 0.01
    [(p99, peak)] = metrics.ankle_accelerations(jolt[None], 100)
    assert abs(peak - 2 * 0.01 * 100 * 100) < 1e-9 and p99 <= peak


def test_ground_slide_reads_feet_on_their_local_ground_whatever_was_locked():
    toes, planted = walking_toe(slide=0.1)
    ankles = toes + [0.0, 0.0, 0.08]  # the ankle above the toe: the toe is the lowest point
    feet = metrics.foot_points(ankles, toes)
    slide, share = metrics.ground_slide(feet, UP, 100, size=1.0)
    assert abs(slide - 0.1) < 0.02  # the planted half, edges aside
    assert abs(share[0] - planted.mean()) < 0.05
    raised = metrics.foot_points(ankles + [0.0, 0.0, 0.3], toes + [0.0, 0.0, 0.3])
    assert metrics.ground_slide(raised, UP, 100, size=1.0)[0] == slide  # a box is local ground too
    tiny, _ = metrics.ground_slide(feet * 0.01, UP, 100, size=0.01, unit_scale=100.0)
    assert abs(tiny - slide) < 1e-9  # a 0.01-scaled character gives the same figure


def test_labels_on_a_third_of_a_walking_foot_s_frames_are_flagged():
    toes, planted = walking_toe()
    grounded = metrics.ground_slide(metrics.foot_points(toes + [0.0, 0.0, 0.08], toes), UP, 100, size=1.0)[1]
    assert metrics.implausible_contacts(planted, grounded, ["left"]) == []
    few = planted & (np.arange(planted.shape[1]) % 5 == 0)
    warnings = metrics.implausible_contacts(few, grounded, ["left"])
    assert len(warnings) == 1 and "left" in warnings[0]


def test_a_toe_skimming_the_floor_and_a_pop_are_not_slides():
    toes, planted = walking_toe(slide=0.0)
    skim = ~planted[0] & (np.arange(planted.shape[1]) % 100 >= 70) & (np.arange(planted.shape[1]) % 100 < 73)
    toes[0, skim, 2] = 0.005  # mid-swing, 3 frames at 2 m/s just above the floor
    feet = metrics.foot_points(toes + [0.0, 0.0, 0.08], toes)
    assert metrics.ground_slide(feet, UP, 100, size=1.0)[0] < 0.01
    popped = toes.copy()
    popped[0, 20:, 0] += 0.3  # a cut in mid-stance: one 30 m/s step
    feet = metrics.foot_points(popped + [0.0, 0.0, 0.08], popped)
    assert metrics.ground_slide(feet, UP, 100, size=1.0)[0] < 0.01
