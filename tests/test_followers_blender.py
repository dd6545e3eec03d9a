"""Bones keyed onto the feet (a game rig's foot IK targets, as UE's ``ik_foot_l`` /
``ik_foot_r``) follow the fixed feet: Remove Foot Sliding keys them where the feet are now,
and leaves every other bone beside the body as it was, in real Blender."""

import numpy as np
import pytest
from blender_scenes import import_clip, write_sliding_bvh

pytestmark = pytest.mark.blender

FOLLOWING = {"ik_foot_l": "LeftFoot", "ik_foot_r": "RightFoot"}  # keyed onto the feet
CARRIED = {"ik_hips": "Hips"}  # keyed onto the pelvis: it follows the body, not a foot
MOLTEN = 0.001  # metres: a follower on its foot to within float32 keys


def game_rig(bpy, path):
    """The clip at ``path`` under a ``root`` bone, with UE's ``ik_foot_root`` (left at rest)
    holding IK bones keyed onto the feet on every frame, and one keyed onto the pelvis."""
    obj = import_clip(bpy, path)
    bpy.ops.object.mode_set(mode="EDIT")
    bones = obj.data.edit_bones
    root = _new_bone(bones, "root", None, (0.0, 0.0, 0.0), (0.0, 0.2, 0.0))
    bones["Hips"].parent = root
    _new_bone(bones, "ik_foot_root", root, (0.0, 0.0, 0.0), (0.0, 0.1, 0.0))
    for copy, bone in {**FOLLOWING, **CARRIED}.items():
        parent = bones["ik_foot_root"] if copy in FOLLOWING else root
        _new_bone(bones, copy, parent, bones[bone].head, bones[bone].tail).roll = bones[bone].roll
    bpy.ops.object.mode_set(mode="OBJECT")
    _key_onto(obj, {**FOLLOWING, **CARRIED})
    return obj


def _new_bone(bones, name, parent, head, tail):
    bone = bones.new(name)
    bone.head, bone.tail, bone.parent = head, tail, parent
    return bone


def _key_onto(obj, copies):
    """Key each bone of ``copies`` (its rest the same as its bone's, its parents at rest) to
    the pose of its bone on every frame of the action."""
    from foot_lock.adapters import action_compat, armature
    from foot_lock.solvers import quaternion

    action = obj.animation_data.action
    frames = np.arange(round(action.frame_range[0]), round(action.frame_range[1]) + 1)
    pose = _poses(obj, frames)
    bag = action_compat.channel_bag(obj, action)
    table = action_compat.fcurve_table(bag)
    for copy, bone in copies.items():
        obj.pose.bones[copy].rotation_mode = "QUATERNION"
        basis = np.linalg.inv(np.array(obj.data.bones[copy].matrix_local)) @ pose[bone]
        armature.key_channel(bag, table, copy, "location", frames, basis[:, :3, 3].T)
        armature.key_channel(bag, table, copy, "rotation_quaternion", frames, quaternion.from_matrix(basis[:, :3, :3]).T)


def _poses(obj, frames):
    """Armature-space pose matrices (F, 4, 4) of every bone on ``frames``, as Blender evaluates them."""
    import bpy
    from foot_lock.adapters import evaluated

    sampled = evaluated.sample_pose(obj, bpy.context.scene, frames, with_basis=False)
    return {name: sampled.pose[:, sampled.bone(name)] for name in sampled.bone_names}


def _keys(obj, action):
    """Every F-curve's keys (frame, value pairs) by (data path, index)."""
    from foot_lock.adapters import action_compat

    keys = {}
    for fcurve in action_compat.iter_fcurves(obj, action):
        co = np.empty(2 * len(fcurve.keyframe_points))
        fcurve.keyframe_points.foreach_get("co", co)
        keys[fcurve.data_path, fcurve.array_index] = co
    return keys


def _bone_of(data_path):
    return data_path.split('"')[1]


@pytest.fixture
def sliding_walk(tmp_path, clips_dir):
    return write_sliding_bvh(clips_dir / "cmu_07_01.bvh", tmp_path / "walk_sliding.bvh", 1.25)


@pytest.mark.parametrize("travels_by_parent", [False, True], ids=["read from the keys", "sampled"])
def test_foot_ik_bones_follow_the_fixed_feet(addon, sliding_walk, travels_by_parent):
    bpy = addon
    obj = game_rig(bpy, sliding_walk)
    if travels_by_parent:  # an animated parent: the motion is sampled from the evaluated scene
        mover = bpy.data.objects.new("Mover", None)
        bpy.context.scene.collection.objects.link(mover)
        mover.keyframe_insert("location", frame=1)
        obj.parent = mover
    source = obj.animation_data.action
    frames = np.arange(round(source.frame_range[0]), round(source.frame_range[1]) + 1)
    before = _poses(obj, frames)
    bpy.context.view_layer.objects.active = obj

    assert bpy.ops.foot_lock.remove_sliding() == {"FINISHED"}

    report = obj.foot_lock.report
    assert report.source == ("evaluated scene" if travels_by_parent else "keys")
    assert "ik_foot_l, ik_foot_r keyed to follow the fixed feet" in report.warnings
    assert "ik_hips" not in report.warnings and "ik_foot_root" not in report.warnings
    after = _poses(obj, frames)
    for copy, foot in FOLLOWING.items():
        assert np.linalg.norm(after[foot][:, :3, 3] - before[foot][:, :3, 3], axis=-1).max() > 0.05  # the foot moved
        assert np.linalg.norm(after[copy][:, :3, 3] - after[foot][:, :3, 3], axis=-1).max() < MOLTEN
        assert np.abs(after[copy][:, :3, :3] - after[foot][:, :3, :3]).max() < 1e-3
    solved = {leg_bone for leg in obj.foot_lock.legs for leg_bone in (leg.thigh, leg.shin, leg.foot, leg.toe)}
    rekeyed = solved | {"Hips"} | set(FOLLOWING)
    kept, result = _keys(obj, source), _keys(obj, obj.animation_data.action)
    for channel, keys in kept.items():
        if _bone_of(channel[0]) not in rekeyed:
            assert np.array_equal(result[channel], keys), channel
    assert {_bone_of(path) for path, _ in set(result) - set(kept)} <= solved  # only contact curves are new
