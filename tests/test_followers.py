"""Joints that follow a foot (foot IK targets) are found in a clip and kept on the solved foot;
joints that stand still, ride on the pelvis or hang below a follower are not followers."""

import numpy as np
from clip_scenarios import load
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers.followers import follow, followed_feet
from foot_lock.solvers.kinematics import Motion, Skeleton, forward_kinematics

OFFSET_ROT = quat.normalize(np.array([0.9, 0.1, -0.2, 0.3]))
OFFSET_POS = np.array([0.02, -0.01, 0.03])


def with_extra_joints(skeleton, motion, rig):
    """The walk with four joints added after its own: a root keyed onto the left ankle at an
    offset (float32 keys), a child of it, a root standing still and a root keyed onto the pelvis."""
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    ankle, pelvis = rig.legs[0].ankle, rig.pelvis
    n = len(skeleton)
    names = [*skeleton.names, "ik_foot", "ik_child", "still", "on_pelvis"]
    parents = [*skeleton.parents, -1, n, -1, -1]
    rot = np.concatenate((motion.rot, np.empty((motion.frames, 4, 4))), axis=1)
    pos = np.concatenate((motion.pos, np.empty((motion.frames, 4, 3))), axis=1)
    rot[:, n] = quat.multiply(grot[:, ankle], OFFSET_ROT).astype(np.float32)
    pos[:, n] = (gpos[:, ankle] + quat.rotate(grot[:, ankle], OFFSET_POS)).astype(np.float32)
    rot[:, n + 1], pos[:, n + 1] = quat.IDENTITY, (0.0, 0.1, 0.0)
    rot[:, n + 2], pos[:, n + 2] = quat.IDENTITY, (1.0, 2.0, 0.0)
    rot[:, n + 3], pos[:, n + 3] = grot[:, pelvis], gpos[:, pelvis]
    return Skeleton(names, parents), Motion(rot, pos, motion.fps), n


def test_a_joint_keyed_onto_a_foot_follows_it_and_nothing_else_does():
    skeleton, motion, rig = load("cmu_07_01")
    skeleton, motion, first = with_extra_joints(skeleton, motion, rig)
    assert followed_feet(skeleton, motion, rig, range(first, first + 4)) == {first: rig.legs[0].ankle}


def test_a_follower_keeps_to_its_foot_as_the_solve_moves_it():
    skeleton, motion, rig = load("cmu_07_01")
    skeleton, motion, first = with_extra_joints(skeleton, motion, rig)
    solved = motion.copy()
    leg = rig.legs[0]
    solved.rot[:, leg.knee] = quat.multiply(solved.rot[:, leg.knee], quat.normalize(np.array([0.98, 0.2, 0.0, 0.0])))
    solved.pos[:, rig.pelvis] += (0.05, 0.0, -0.02)

    moved = follow(skeleton, motion, solved, {first: leg.ankle})

    grot, gpos = forward_kinematics(skeleton, moved.rot, moved.pos)
    assert np.linalg.norm(gpos[:, first] - gpos[:, leg.ankle] - quat.rotate(grot[:, leg.ankle], OFFSET_POS),
                          axis=-1).max() < 1e-5
    turn = np.abs(np.sum(grot[:, first] * quat.multiply(grot[:, leg.ankle], OFFSET_ROT), axis=-1))
    assert turn.min() > 1.0 - 1e-6
    others = np.ones(len(skeleton), dtype=bool)
    others[first] = False
    assert np.array_equal(moved.rot[:, others], solved.rot[:, others])
    assert np.array_equal(moved.pos[:, others], solved.pos[:, others])


def test_nothing_follows_the_feet_of_a_body_standing_still_or_gliding_whole():
    """Keyed onto a foot that stands still, or that the pelvis carries rigidly, a joint stands
    still or rides on the pelvis: no follower."""
    skeleton, motion, rig = load("cmu_07_01")
    still = Motion(*(np.repeat(values[:1], motion.frames, axis=0) for values in (motion.rot, motion.pos)), motion.fps)
    gliding = still.copy()
    gliding.pos[:, rig.pelvis, 0] += np.linspace(0.0, 2.0, motion.frames)  # the pelvis is the clip's root
    for body in (still, gliding):
        extended, moving, first = with_extra_joints(skeleton, body, rig)
        assert followed_feet(extended, moving, rig, range(first, first + 4)) == {}
