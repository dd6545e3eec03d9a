"""Scenes for the add-on tests: the clips imported into real Blender, read back as arrays.

Every Blender test module imports this first, so without the bpy wheel the module is
skipped as a whole (the numpy-only lane) instead of failing to collect.
"""

import numpy as np
import pytest

pytest.importorskip("bpy")

from clip_scenarios import CMU_TO_METRES, reference_labels
from foot_lock.adapters import armature
from foot_lock.adapters.jobs import active_action, frame_range
from foot_lock.solvers import bvh
from foot_lock.solvers.kinematics import forward_kinematics


def write_sliding_bvh(source, target, root_scale):
    """A copy of a BVH file with the root's horizontal motion scaled (the README's scenario)."""
    return bvh.write_sliding_copy(source, target, root_scale)


def import_clip(bpy, path):
    """Import a CMU BVH in metres at its own frame rate; returns the armature object."""
    bpy.ops.import_anim.bvh(
        filepath=str(path), global_scale=CMU_TO_METRES, update_scene_fps=True, update_scene_duration=True
    )
    return bpy.context.active_object


def world_joints(obj, bone_names, action=None, tails=False):
    """World positions (F, len(bone_names), 3) of bone heads (or ``tails``) over the action's range."""
    action = action or active_action(obj)
    start, end = frame_range(action)
    skeleton, motion, joint_map = armature.read_motion(obj, action, start, end, bone_names if tails else ())
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    suffix = armature.TAIL_SUFFIX if tails else ""
    return gpos[:, [joint_map.joint_names.index(name + suffix) for name in bone_names]]


def leg_bones(obj, role):
    return [getattr(leg, role) for leg in obj.foot_lock.legs]


def horizontal_speed(points, fps):
    """(L, F-1) horizontal speed in m/s of (F, L, 3) world points, Z-up."""
    step = np.diff(points, axis=0)[..., :2]
    return np.linalg.norm(step, axis=-1).T * fps


def slide_cm_s(points, contacts, fps):
    """The clips README's slide: mean horizontal toe speed over steps between contact frames."""
    both = contacts[:, 1:] & contacts[:, :-1]
    return 100.0 * horizontal_speed(points, fps)[both].mean()


def reference_labels_by_leg(path):
    """The original clip's reference contacts (``clip_scenarios.reference_labels``) of a BVH
    file, by leg name, in the order the add-on stores legs."""
    skeleton, motion, rig = bvh.load(path, CMU_TO_METRES)
    return dict(zip((leg.name for leg in rig.legs), reference_labels(skeleton, motion, rig)))
