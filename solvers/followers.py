"""Joints that follow a foot: held at one offset from a foot joint on every frame of a clip
(a game rig's foot IK targets, UE's ``ik_foot_l``, sit on the feet for the engine's foot
IK), found in the input and moved with the fixed foot in the result.

A joint only follows a foot that moves: one that keeps its offset from the world (it
stands still) or from the pelvis as well is not a follower, whatever the foot does.
"""

import numpy as np

from . import quaternion as quat
from .kinematics import forward_kinematics, local_position, local_rotation
from .rig import leg_length

# How far a follower's offset from its foot may vary over the clip: its position by this
# share of the leg length, its rotation by this many radians (a point a leg length away
# then moves by the same share). Keys written as float32 vary by a thousandth of that.
FOLLOW_TOLERANCE = 0.01


def followed_feet(skeleton, motion, rig, candidates):
    """``{joint: foot joint}`` for each of the ``candidates`` (joint indices) that keeps one
    offset, position and rotation, from a foot joint (a leg's ankle or toe bone) on every
    frame of ``motion``. A follower's descendants follow with it: they are left out."""
    candidates = sorted(candidates)  # parents first: a follower is found before its children
    feet = [joint for leg in rig.legs for joint in (leg.ankle, leg.toe) if joint != leg.toe or leg.has_toe_bone]
    references = [rig.pelvis, *feet]
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, candidates + references)
    world_rot, world_pos = _with_world(grot[:, references], gpos[:, references])
    steady = _steady_offsets(world_rot, world_pos, grot[:, candidates], gpos[:, candidates],
                             FOLLOW_TOLERANCE * leg_length(gpos, rig))  # (candidates, world + references)
    moving = ~steady[:, :2].any(axis=1)  # neither still nor carried with the pelvis
    followers = {}
    for row, joint in enumerate(candidates):
        below_one = not followers.keys().isdisjoint(skeleton.closure([skeleton.parents[joint]]))
        if moving[row] and steady[row, 2:].any() and not below_one:
            followers[joint] = feet[int(np.argmax(steady[row, 2:]))]
    return followers


def _with_world(rot, pos):
    """Reference frames (F, R, 4) / (F, R, 3) with the world (the identity) before them."""
    frames = len(rot)
    world_rot = np.concatenate((np.broadcast_to(quat.IDENTITY, (frames, 1, 4)), rot), axis=1)
    return world_rot, np.concatenate((np.zeros((frames, 1, 3)), pos), axis=1)


def _steady_offsets(reference_rot, reference_pos, rot, pos, reach):
    """(C, R) whether each joint (rotations (F, C, 4), positions (F, C, 3)) keeps its offset
    from each reference frame (F, R, ...) on every frame within ``reach`` (its position)
    and :data:`FOLLOW_TOLERANCE` radians (its rotation) of the first frame's."""
    offset_rot = local_rotation(reference_rot[:, None], rot[:, :, None])  # (F, C, R, 4)
    offset_pos = local_position(reference_rot[:, None], reference_pos[:, None], pos[:, :, None])
    drift = np.linalg.norm(offset_pos - offset_pos[:1], axis=-1).max(axis=0)
    alignment = np.abs(np.sum(offset_rot * offset_rot[:1], axis=-1)).min(axis=0)  # cos of half the turn
    return (drift <= reach) & (alignment >= np.cos(FOLLOW_TOLERANCE / 2.0))


def follow(skeleton, before, after, followers):
    """``after`` (a solved :class:`~.kinematics.Motion` of ``before``) with each follower of
    ``followers`` (:func:`followed_feet`) keeping to its foot as it does in ``before``: on
    every frame its world transform is the solved foot's times the offset it had there."""
    joints, feet = list(followers), list(followers.values())
    grot, gpos = forward_kinematics(skeleton, before.rot, before.pos, joints + feet)
    offset_rot = local_rotation(grot[:, feet], grot[:, joints])
    offset_pos = local_position(grot[:, feet], gpos[:, feet], gpos[:, joints])
    parents = skeleton.parents[joints]
    solved_rot, solved_pos = forward_kinematics(skeleton, after.rot, after.pos, feet + [p for p in parents if p >= 0])
    world_rot = quat.multiply(solved_rot[:, feet], offset_rot)
    world_pos = solved_pos[:, feet] + quat.rotate(solved_rot[:, feet], offset_pos)
    moved = after.copy()
    for k, (joint, parent) in enumerate(zip(joints, parents)):
        if parent < 0:  # a root's local transform is its world one
            moved.rot[:, joint], moved.pos[:, joint] = world_rot[:, k], world_pos[:, k]
        else:
            moved.rot[:, joint] = local_rotation(solved_rot[:, parent], world_rot[:, k])
            moved.pos[:, joint] = local_position(solved_rot[:, parent], solved_pos[:, parent], world_pos[:, k])
    return moved
