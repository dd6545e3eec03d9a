"""Property tests of the leg solver on random legs with arbitrary bone rolls."""

import numpy as np
import pytest
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers.kinematics import Pose, Skeleton, SolverInputError, forward_kinematics
from foot_lock.solvers.leg_ik import LegOptions, measure_legs, soft_clamp_length, solve_leg, solve_legs
from foot_lock.solvers.rig import Leg

UP = np.array([0.0, 0.0, 1.0])
UP_Y = np.array([0.0, 1.0, 0.0])  # the CMU clips' up
NAMES = ["pelvis", "hip_joint", "thigh", "shin", "foot", "toe", "toe_end"]
LEG = Leg("left", hip=2, knee=3, ankle=4, toe=5, toe_end=6)


def random_rotations(rng, shape):
    return quat.normalize(rng.normal(size=shape + (4,)))


def leg_poses(rng, frames, bend_degrees=(15.0, 80.0), thigh=0.45, shin=0.42):
    """Global joint positions of bent legs facing -Y, with random knee swivel."""
    bend = np.radians(rng.uniform(*bend_degrees, frames))
    swing = np.radians(rng.uniform(-30, 30, frames))
    pelvis = np.column_stack([rng.uniform(-1, 1, frames), rng.uniform(-1, 1, frames), np.full(frames, 1.0)])
    hip = pelvis + [0.1, 0.0, -0.08]
    thigh_dir = np.column_stack([np.zeros(frames), -np.sin(swing + bend / 2), -np.cos(swing + bend / 2)])
    shin_dir = np.column_stack([np.zeros(frames), -np.sin(swing - bend / 2), -np.cos(swing - bend / 2)])
    knee = hip + thigh * thigh_dir
    ankle = knee + shin * shin_dir
    toe = ankle + [0.0, -0.14, -0.06]
    toe_end = toe + [0.0, -0.06, 0.0]
    return np.stack([pelvis, hip, hip, knee, ankle, toe, toe_end], axis=1)


def skeleton_and_pose(rng, gpos):
    """Local transforms reproducing ``gpos`` under random joint orientations (bone rolls)."""
    skeleton = Skeleton(NAMES, [-1, 0, 1, 2, 3, 4, 5])
    frames, n = gpos.shape[:2]
    grot = random_rotations(rng, (1, n)).repeat(frames, axis=0)  # fixed arbitrary rolls
    rot = np.empty((frames, n, 4))
    pos = np.empty((frames, n, 3))
    rot[:, 0], pos[:, 0] = grot[:, 0], gpos[:, 0]
    for j in range(1, n):
        p = skeleton.parents[j]
        rot[:, j] = quat.multiply(quat.conjugate(grot[:, p]), grot[:, j])
        pos[:, j] = quat.rotate(quat.conjugate(grot[:, p]), gpos[:, j] - gpos[:, p])
    return skeleton, rot, pos


def solve(skeleton, rot, pos, target, limits=None, heel_target=None, **options):
    grot, gpos = forward_kinematics(skeleton, rot, pos)
    limits = limits or measure_legs(grot, gpos, [LEG], UP)[0]
    pose = Pose(skeleton, rot.copy(), pos, grot, gpos)
    solve_leg(pose, LEG, limits, target, UP, LegOptions(**options), heel_target=heel_target)
    return pose.rot, gpos, limits


@pytest.fixture(params=[0, 1, 2])
def leg(request):
    rng = np.random.default_rng(request.param)
    return skeleton_and_pose(rng, leg_poses(rng, 200)) + (rng,)


def test_forward_kinematics_reproduces_the_built_pose():
    rng = np.random.default_rng(11)
    pose = leg_poses(rng, 20)
    skeleton, rot, pos = skeleton_and_pose(rng, pose)
    _, gpos = forward_kinematics(skeleton, rot, pos)
    assert np.allclose(gpos, pose, atol=1e-12)


def test_target_at_current_toe_leaves_pose_unchanged(leg):
    skeleton, rot, pos, _ = leg
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    solved, gpos, _ = solve(skeleton, rot, pos, gpos0[:, LEG.toe].copy())
    assert np.allclose(np.abs(np.sum(solved * rot, axis=-1)), 1.0, atol=1e-9)
    assert np.allclose(gpos, gpos0, atol=1e-9)


def test_reachable_targets_are_reached_within_a_tenth_of_a_millimetre(leg):
    skeleton, rot, pos, rng = leg
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    target = gpos0[:, LEG.toe] + rng.uniform(-0.15, 0.15, (len(rot), 3))
    _, gpos, limits = solve(skeleton, rot, pos, target, height_clamp=False)
    heel_target = target + gpos0[:, LEG.ankle] - gpos0[:, LEG.toe]
    reach = np.linalg.norm(heel_target - gpos0[:, LEG.hip], axis=-1)
    reachable = (reach < limits.max_extension - limits.softening) & (reach > 0.2)
    assert reachable.sum() > 50
    error = np.linalg.norm(gpos[:, LEG.toe] - target, axis=-1)
    assert error[reachable].max() < 1e-4


def test_unreachable_targets_never_stretch_past_max_extension(leg):
    skeleton, rot, pos, rng = leg
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    away = quat.normalize(rng.normal(size=(len(rot), 3)))
    away[:, 2] = -np.abs(away[:, 2])
    target = gpos0[:, LEG.hip] + 3.0 * away
    _, gpos, limits = solve(skeleton, rot, pos, target, height_clamp=False)
    extension = np.linalg.norm(gpos[:, LEG.ankle] - gpos[:, LEG.hip], axis=-1)
    assert np.all(extension <= limits.max_extension + 1e-9)
    assert np.all(np.isfinite(gpos))


def test_soft_clamp_is_continuous_and_bounded():
    lengths = np.linspace(0.0, 3.0, 3001)
    clamped = soft_clamp_length(lengths, 1.0, 0.05)
    assert np.all(clamped <= 1.0) and np.all(np.diff(clamped) >= 0)
    assert np.allclose(clamped[lengths <= 0.95], lengths[lengths <= 0.95])
    assert np.max(np.abs(np.diff(clamped))) <= np.max(np.diff(lengths)) + 1e-12


def knee_side(gpos):
    """Which way the knee points off the hip-ankle line (unit vectors)."""
    hip, knee, ankle = gpos[:, LEG.hip], gpos[:, LEG.knee], gpos[:, LEG.ankle]
    axis = quat.normalize(ankle - hip)
    offset = knee - hip
    return quat.normalize(offset - np.sum(offset * axis, -1, keepdims=True) * axis)


@pytest.mark.parametrize("seed", [3, 4])
def test_knee_never_flips_along_a_smooth_target_path(seed):
    rng = np.random.default_rng(seed)
    frames = 400
    pose = leg_poses(rng, 1, bend_degrees=(3.0, 3.0))  # nearly straight: the hard case
    skeleton, rot, pos = skeleton_and_pose(rng, pose.repeat(frames, axis=0))
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    t = np.linspace(0.0, 1.0, frames)[:, None]
    path = gpos0[:, LEG.toe] + np.column_stack(
        [0.1 * np.sin(6 * t[:, 0]), 0.25 * np.sin(3 * t[:, 0]), 0.35 * t[:, 0] * (1 - t[:, 0]) * 4]
    )
    _, gpos, _ = solve(skeleton, rot, pos, path, height_clamp=False)
    side = knee_side(gpos)
    forward = np.array([0.0, -1.0, 0.0])
    assert np.all(side @ forward > 0.0)  # always bends forward, like the input
    assert np.min(np.sum(side[1:] * side[:-1], axis=-1)) > np.cos(np.radians(10))


def test_straight_leg_bends_toward_the_feet_direction():
    rng = np.random.default_rng(7)
    pose = leg_poses(rng, 50, bend_degrees=(0.0, 0.0))
    skeleton, rot, pos = skeleton_and_pose(rng, pose)
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    _, gpos, _ = solve(skeleton, rot, pos, gpos0[:, LEG.toe] + [0.0, 0.0, 0.2], height_clamp=False)
    assert np.all(knee_side(gpos) @ np.array([0.0, -1.0, 0.0]) > 0.5)  # forward, never backward


def test_ground_clamp_keeps_toe_heel_and_tip_above_their_lowest_input_height(leg):
    skeleton, rot, pos, _ = leg
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    target = gpos0[:, LEG.toe] - [0.0, 0.0, 0.5]
    _, gpos, limits = solve(skeleton, rot, pos, target)
    heights = gpos @ UP
    assert heights[:, LEG.toe].min() >= limits.toe_min_height - 1e-9
    assert heights[:, LEG.toe_end].min() >= limits.toe_end_min_height - 1e-6


def test_zero_length_shin_is_rejected():
    rng = np.random.default_rng(5)
    pose = leg_poses(rng, 10)
    pose[:, LEG.ankle] = pose[:, LEG.knee]
    skeleton, rot, pos = skeleton_and_pose(rng, pose)
    grot, gpos = forward_kinematics(skeleton, rot, pos)
    with pytest.raises(SolverInputError, match="zero length"):
        measure_legs(grot, gpos, [LEG], UP)


def test_knee_turns_only_about_its_hinge(leg):
    """The knee bends in the leg's plane: in the thigh's frame its change of rotation is
    about the plane's normal, so the shin never twists (it keeps its authored roll)."""
    skeleton, rot, pos, rng = leg
    grot0, gpos0 = forward_kinematics(skeleton, rot, pos)
    target = gpos0[:, LEG.toe] + rng.uniform(-0.1, 0.1, (len(rot), 3))
    solved, _, _ = solve(skeleton, rot, pos, target, height_clamp=False)
    change = quat.multiply(solved[:, LEG.knee], quat.conjugate(rot[:, LEG.knee]))  # in the thigh's frame
    normal = np.cross(gpos0[:, LEG.knee] - gpos0[:, LEG.hip], gpos0[:, LEG.ankle] - gpos0[:, LEG.knee])
    hinge = quat.normalize(quat.rotate(quat.conjugate(grot0[:, LEG.hip]), normal))  # in the thigh's frame
    turned = np.linalg.norm(change[:, 1:], axis=-1) > 1e-6
    assert turned.sum() > 100
    assert np.abs(np.sum(quat.normalize(change[turned, 1:]) * hinge[turned], axis=-1)).min() > 0.9999


def test_heel_and_toe_targets_are_both_reached_by_turning_the_foot(leg):
    """Both points pinned: the ankle goes to the heel target and the foot turns (away from
    its pose) so the ball reaches the toe target at the foot's length."""
    skeleton, rot, pos, rng = leg
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    heel_target = gpos0[:, LEG.ankle] + rng.uniform(-0.05, 0.05, (len(rot), 3))
    foot = gpos0[:, LEG.toe] - gpos0[:, LEG.ankle]
    tilt = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), rng.uniform(-0.4, 0.4, len(rot)))
    toe_target = heel_target + quat.rotate(tilt, foot)  # the foot turned about the heel
    _, gpos, limits = solve(skeleton, rot, pos, toe_target, heel_target=heel_target, height_clamp=False)
    reach = np.linalg.norm(heel_target - gpos0[:, LEG.hip], axis=-1)
    reachable = reach < limits.max_extension - limits.softening
    assert reachable.sum() > 100
    assert np.linalg.norm(gpos[:, LEG.ankle] - heel_target, axis=-1)[reachable].max() < 1e-6
    assert np.linalg.norm(gpos[:, LEG.toe] - toe_target, axis=-1)[reachable].max() < 1e-6
    assert np.allclose(np.linalg.norm(gpos[:, LEG.toe] - gpos[:, LEG.ankle], axis=-1),
                       np.linalg.norm(foot, axis=-1))  # the foot stays rigid


def test_without_a_heel_target_the_foot_turns_about_the_ball(leg):
    """Only the ball pinned: the ankle keeps its offset from the ball, so the foot keeps
    the pose's orientation and the heel follows the ball."""
    skeleton, rot, pos, rng = leg
    _, gpos0 = forward_kinematics(skeleton, rot, pos)
    target = gpos0[:, LEG.toe] + rng.uniform(-0.05, 0.05, (len(rot), 3))
    _, gpos, limits = solve(skeleton, rot, pos, target, height_clamp=False)
    derived = target + gpos0[:, LEG.ankle] - gpos0[:, LEG.toe]
    reachable = np.linalg.norm(derived - gpos0[:, LEG.hip], axis=-1) < limits.max_extension - limits.softening
    assert reachable.sum() > 100
    assert np.linalg.norm(gpos[:, LEG.ankle] - derived, axis=-1)[reachable].max() < 1e-6


def test_legs_solved_together_move_as_each_solved_alone():
    """solve_legs stacks legs of one shape into one solve: every leg ends as solve_leg
    leaves it, also where the legs differ in shape (one without a toe bone: a group alone)."""
    from clip_scenarios import decimate, load, with_front_legs

    skeleton, motion, rig = with_front_legs(*load("cmu_07_01"))
    motion = decimate(motion, 30)
    last = rig.legs[-1]
    legs = rig.legs[:-1] + [Leg(last.name, last.hip, last.knee, last.ankle, last.toe)]  # no toe bone
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    limits = measure_legs(grot, gpos, legs, UP_Y)
    rng = np.random.default_rng(5)
    toes = np.stack([gpos[:, leg.toe] for leg in legs]) + rng.normal(scale=0.05, size=(len(legs), motion.frames, 3))
    heels = np.stack([gpos[:, leg.ankle] for leg in legs]) + rng.normal(scale=0.05, size=toes.shape)
    alone = Pose(skeleton, motion.rot.copy(), motion.pos.copy(), grot.copy(), gpos.copy())
    for leg, lim, toe, heel in zip(legs, limits, toes, heels):
        solve_leg(alone, leg, lim, toe, UP_Y, heel_target=heel)
    together = Pose(skeleton, motion.rot.copy(), motion.pos.copy(), grot.copy(), gpos.copy())
    solve_legs(together, legs, limits, toes, UP_Y, heel_targets=heels)
    assert not np.allclose(together.rot, motion.rot)  # the legs did move
    for ours, theirs in ((together.rot, alone.rot), (together.grot, alone.grot), (together.gpos, alone.gpos)):
        assert np.abs(ours - theirs).max() < 1e-12
