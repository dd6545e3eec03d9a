"""The evaluated-pose sampler against Blender's own per-bone evaluation (real bpy)."""

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_scenes import import_clip  # noqa: E402
from foot_lock.adapters.evaluated import sample_pose  # noqa: E402

pytestmark = pytest.mark.blender


def _animated_parent(obj):
    """An Empty that carries the armature along X and turns it (keys on frames 1 and 40)."""
    empty = bpy.data.objects.new("Carrier", None)
    bpy.context.scene.collection.objects.link(empty)
    obj.parent = empty
    for frame, x, turn in ((1, 0.0, 0.0), (40, 3.0, 0.6)):
        empty.location = (x, 0.0, 0.0)
        empty.rotation_euler = (0.0, 0.0, turn)
        empty.keyframe_insert("location", frame=frame)
        empty.keyframe_insert("rotation_euler", frame=frame)
    return empty


def _per_bone_reference(obj, frame):
    """World matrices of every bone at ``frame``, one ``pose_bone.matrix`` at a time."""
    bpy.context.scene.frame_set(frame)
    world = obj.matrix_world
    return np.array([np.array(world @ pose_bone.matrix) for pose_bone in obj.pose.bones])


def test_sampled_pose_matches_blender_bone_by_bone(clips_dir):
    obj = import_clip(bpy, clips_dir / "cmu_07_01.bvh")
    _animated_parent(obj)
    head = obj.pose.bones["Head"]
    constraint = head.constraints.new("DAMPED_TRACK")  # a constrained bone outside the legs
    constraint.target = bpy.data.objects["Carrier"]
    scene = bpy.context.scene
    scene.frame_set(7)
    frames = [3, 20, 40]

    sampled = sample_pose(obj, scene, frames)

    assert scene.frame_current == 7
    assert sampled.pose.shape == (3, len(obj.pose.bones), 4, 4)
    world_pose = sampled.world_pose()
    for i, frame in enumerate(frames):
        np.testing.assert_allclose(world_pose[i], _per_bone_reference(obj, frame), atol=1e-5)
        basis = np.array([np.array(pose_bone.matrix_basis) for pose_bone in obj.pose.bones])
        np.testing.assert_allclose(sampled.basis[i], basis, atol=1e-6)
    # The carrier moves the armature: the sampled object matrices are not all the same.
    assert np.ptp(sampled.world[:, 0, 3]) > 1.0


def test_sampling_restores_the_skinned_mesh_and_the_frame(clips_dir):
    obj = import_clip(bpy, clips_dir / "cmu_07_01.bvh")
    mesh = bpy.data.objects.new("Body", bpy.data.meshes.new("Body"))
    bpy.context.scene.collection.objects.link(mesh)
    mesh.modifiers.new("Armature", "ARMATURE").object = obj
    scene = bpy.context.scene
    scene.frame_set(5)

    sample_pose(obj, scene, [1, 2, 3])

    assert not mesh.hide_viewport
    assert scene.frame_current == 5


def _moved_into(obj, *names):
    """``obj`` moved out of the scene's collection into nested new collections ``names``
    (outermost first); returns them."""
    scene = bpy.context.scene
    parent, collections = scene.collection, []
    for name in names:
        collection = bpy.data.collections.new(name)
        parent.children.link(collection)
        collections.append(collection)
        parent = collection
    for collection in obj.users_collection:
        collection.objects.unlink(obj)
    parent.objects.link(obj)
    return collections


def _disable_object(obj):
    obj.hide_viewport = True
    return [obj]


def _disable_collection(obj):
    (characters,) = _moved_into(obj, "Characters")
    characters.hide_viewport = True
    return [characters]


def _disable_outer_collection(obj):
    outer, _ = _moved_into(obj, "Shot", "Characters")
    outer.hide_viewport = True
    return [outer]


def _disable_carrier_collection(obj):
    carrier = _animated_parent(obj)
    (props,) = _moved_into(carrier, "Props")
    props.hide_viewport = True
    return [props]


@pytest.mark.parametrize("disable", [_disable_object, _disable_collection, _disable_outer_collection,
                                     _disable_carrier_collection])
def test_a_disabled_armature_is_sampled_as_if_enabled_and_stays_disabled(clips_dir, disable):
    """Disabled in viewports (the object, a collection holding it, one around that, or the
    collection of the parent that carries it): the depsgraph skips it, so a plain frame_set
    reads a stale pose (a fix of the NLA baked one frozen pose over the whole clip)."""
    obj = import_clip(bpy, clips_dir / "cmu_07_01.bvh")
    scene = bpy.context.scene
    frames = [1, 50, 100]
    disabled_items = disable(obj)
    bpy.context.view_layer.update()
    for item in disabled_items:
        item.hide_viewport = False
    shown = sample_pose(obj, scene, frames)
    for item in disabled_items:
        item.hide_viewport = True

    disabled = sample_pose(obj, scene, frames)

    np.testing.assert_allclose(disabled.pose, shown.pose, atol=1e-6)
    np.testing.assert_allclose(disabled.world, shown.world, atol=1e-6)
    assert np.ptp(shown.pose[:, 0, :3, 3], axis=0).max() > 0.1  # the walk moves
    assert all(item.hide_viewport for item in disabled_items)


def test_evaluated_read_matches_the_direct_read_of_a_plain_clip(clips_dir):
    from foot_lock.adapters import armature

    obj = import_clip(bpy, clips_dir / "cmu_07_01.bvh")
    obj.scale = (0.5, 0.5, 0.5)
    obj.rotation_euler = (0.0, 0.0, 1.0)
    bpy.context.view_layer.update()
    action = obj.animation_data.action
    frames = np.arange(1, 60)
    direct = armature.read_motion(obj, action, 1, 59, extra_tails=["LeftToeBase"])
    sampled = armature.read_evaluated_motion(obj, sample_pose(obj, bpy.context.scene, frames), ["LeftToeBase"])
    assert direct[0].names == sampled[0].names
    np.testing.assert_allclose(sampled[1].pos, direct[1].pos, atol=1e-5)
    dot = np.abs(np.sum(sampled[1].rot * direct[1].rot, axis=-1))  # q and -q are one rotation
    np.testing.assert_allclose(dot, 1.0, atol=1e-5)
    np.testing.assert_allclose(sampled[2].parent_scale, direct[2].parent_scale, rtol=1e-5)


def test_evaluated_read_of_pose_scaled_parents_matches_the_direct_read(clips_dir):
    """Each bone is read relative to a parent that is scaled (uniformly, as the solver
    needs) and turned: the evaluated read inverts the parents' matrices itself."""
    from foot_lock.adapters import armature

    obj = import_clip(bpy, clips_dir / "cmu_07_01.bvh")
    for name, factor in (("LowerBack", 1.5), ("LeftUpLeg", 0.8)):
        obj.pose.bones[name].scale = (factor, factor, factor)
    bpy.context.view_layer.update()
    action = obj.animation_data.action
    direct = armature.read_motion(obj, action, 1, 40, extra_tails=["LeftToeBase"])
    sampled = armature.read_evaluated_motion(obj, sample_pose(obj, bpy.context.scene, np.arange(1, 41)), ["LeftToeBase"])
    assert 1.4 < direct[2].parent_scale[0, direct[2].joint("Spine")] < 1.6  # the scale is really there
    np.testing.assert_allclose(sampled[1].pos, direct[1].pos, atol=1e-5)
    dot = np.abs(np.sum(sampled[1].rot * direct[1].rot, axis=-1))  # q and -q are one rotation
    np.testing.assert_allclose(dot, 1.0, atol=1e-5)
    np.testing.assert_allclose(sampled[2].parent_scale, direct[2].parent_scale, rtol=1e-5)
