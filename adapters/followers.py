"""Bones that follow a fixed foot: a game rig's foot IK targets (UE's ``ik_foot_l`` /
``ik_foot_r``) are keyed onto the feet on every frame, and the engine's foot IK pulls the
feet back to them. Found in the input (:func:`~..solvers.followers.followed_feet`), they
are keyed to follow the fixed feet in the result.
"""

from ..solvers.followers import follow, followed_feet
from . import sources
from .armature import bone_hierarchy, with_ancestors


def candidate_bones(obj, body):
    """Bones of ``obj`` that may follow a foot: neither a bone of the ``body`` (the pelvis
    and the legs' bones, the solve's) nor one it hangs from, nor one hung from it (the fix
    carries those along: a foot's children follow it by themselves); posed by their own
    keys (no drivers on them, no constraints on them or above them: a key would not place
    them) from a head of their own (not connected: a follower's location is keyed too).
    Game rigs hang their foot IK targets beside the body, off the root; a plain mocap
    skeleton (a BVH: one tree below its hips) has none, and costs a pass over its bones."""
    body = set(body)
    bones, names, parents = bone_hierarchy(obj.data)
    carrying = set(with_ancestors(obj.data.bones, body))
    pose_bones = obj.pose.bones
    left_out = [False] * len(bones)  # the bone and every bone below it
    for index, name in enumerate(names):  # parents first
        parent = parents[index]
        constrained = any(map(sources.active_constraint, pose_bones[name].constraints))
        left_out[index] = (parent >= 0 and left_out[parent]) or name in body or constrained
    found = [name for bone, name, out in zip(bones, names, left_out)
             if not (out or name in carrying or bone.use_connect)]
    driven = set(sources.driven_bones(obj, found))
    return [name for name in found if name not in driven]


def keep_following(clip, result, candidates):
    """Find the ``candidates`` (bone names, read into ``clip``) that follow a foot in the
    clip and make them follow the fixed feet in ``result.motion``; returns ``{follower:
    foot}`` by bone name. Bones whose pose is not plain forward kinematics of their keys
    (see :meth:`~.armature.JointMap.require_exact`) are left as they are."""
    joint_map = clip.joint_map
    joints = [joint_map.joint(name) for name in candidates
              if not any(bone in joint_map.unsupported for bone in joint_map.ancestors(name))]
    if not joints:  # a rig without bones beside its body: nothing to measure
        return {}
    found = followed_feet(clip.skeleton, clip.motion, clip.rig, joints)
    if found:
        result.motion = follow(clip.skeleton, clip.motion, result.motion, found)
    return {joint_map.joint_bone[joint]: joint_map.joint_bone[foot] for joint, foot in found.items()}


def followed_note(followers):
    """The report's line naming the bones keyed to follow the fixed feet, and which."""
    feet = ", ".join(dict.fromkeys(followers.values()))
    return (f"{', '.join(followers)} keyed to follow the fixed feet (in the input they kept to {feet} on every "
            "frame, as foot IK targets do)")
