"""The adapter layer against real Blender (bpy wheel): reading, writing, contact curves.

The reference for every pose is Blender's own evaluation (``scene.frame_set`` then
``matrix_world @ pose_bone.matrix``), never our own math.
"""

import ctypes
import hashlib
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from foot_lock.adapters import action_compat as compat  # noqa: E402
from foot_lock.adapters import armature  # noqa: E402
from foot_lock.adapters.errors import AdapterError  # noqa: E402
from foot_lock.solvers import bvh  # noqa: E402
from foot_lock.solvers import quaternion as quat  # noqa: E402
from foot_lock.solvers import rotations as channels  # noqa: E402
from foot_lock.solvers.kinematics import forward_kinematics  # noqa: E402
from mathutils import Euler, Matrix, Quaternion  # noqa: E402  (needs bpy first)

pytestmark = pytest.mark.blender

BVH_SCALE = bvh.CMU_UNIT


# --- helpers ----------------------------------------------------------------------------


def _reset():
    bpy.ops.wm.read_factory_settings(use_empty=True)


def _import_bvh(clips_dir, name):
    bpy.ops.import_anim.bvh(filepath=str(clips_dir / name), global_scale=BVH_SCALE)
    obj = bpy.context.active_object
    action = obj.animation_data.action
    return obj, action, int(action.frame_range[0]), int(action.frame_range[1])


def _transform_object(obj):
    """Scale 0.01, rotate 90 degrees about X, move: a typical FBX-imported armature."""
    obj.scale = (0.01, 0.01, 0.01)
    obj.rotation_euler = (math.pi / 2, 0.0, 0.0)
    obj.location = (0.5, -2.0, 0.25)
    bpy.context.view_layer.update()


def _blender_pose(obj, skeleton, frame):
    """World head positions and rotation matrices of every joint, as Blender evaluates them."""
    bpy.context.scene.frame_set(frame)
    world = obj.matrix_world
    positions, rotations = [], []
    for name in skeleton.names:
        if name.endswith(armature.TAIL_SUFFIX):
            pose_bone = obj.pose.bones[name[: -len(armature.TAIL_SUFFIX)]]
            positions.append(tuple(world @ pose_bone.tail))
            rotations.append(None)
            continue
        matrix = world @ obj.pose.bones[name].matrix
        positions.append(tuple(matrix.translation))
        rotations.append(np.array(matrix.to_3x3().normalized()))
    return np.array(positions), rotations


def _assert_fk_matches_blender(obj, skeleton, motion, frame_start, frames, rtol=1e-5):
    grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    size = np.abs(gpos - gpos[:, :1]).max()  # the skeleton's extent in world units
    for frame in frames:
        positions, rotations = _blender_pose(obj, skeleton, frame)
        row = frame - frame_start
        error = np.abs(positions - gpos[row]).max()
        assert error <= rtol * max(size, np.abs(positions).max()), f"frame {frame}: head error {error}"
        for j, rotation in enumerate(rotations):
            if rotation is not None:
                error = np.abs(rotation - quat.to_matrix(grot[row, j])).max()
                assert error <= 10 * rtol, f"frame {frame}, {skeleton.names[j]}: rotation error {error}"


def _curve_values(obj, action, frames):
    """{(data_path, index): values at frames} of every F-curve, by Blender's evaluate()."""
    return {
        (fcurve.data_path, fcurve.array_index): np.array([fcurve.evaluate(f) for f in frames])
        for fcurve in compat.iter_fcurves(obj, action)
    }


def _euler_rotation_matrices(values, order):
    return np.array([np.array(Euler(tuple(v), order).to_matrix()) for v in values])


def _stacked(before, after, path, width):
    """A rotation channel's values (frames, width) before and after, all indices at once."""
    return (np.stack([curves[(path, i)] for i in range(width)], -1) for curves in (before, after))


def _assert_curves_equal(obj, before, after, frames, skip=(), tol=1e-5):
    """Same curves; Euler triples compared as rotations, everything else by value."""
    assert set(after) >= set(before)
    for key, old in before.items():
        if key in skip:
            continue
        path, index = key
        if path.endswith(".rotation_euler"):
            if index:
                continue
            bone = path.split('"')[1]
            order = obj.pose.bones[bone].rotation_mode
            old3, new3 = _stacked(before, after, path, 3)
            error = np.abs(
                _euler_rotation_matrices(old3, order) - _euler_rotation_matrices(new3, order)
            ).max()
            assert error < tol, f"{path}: rotation differs by {error}"
        elif path.endswith(".rotation_quaternion"):
            # Interpolated keys are not unit length; Blender normalises them, and so do we.
            if index:
                continue
            old4, new4 = _stacked(before, after, path, 4)
            error = np.abs(old4 / np.linalg.norm(old4, axis=-1, keepdims=True) - new4).max()
            assert error < tol, f"{path}: normalised quaternion differs by {error}"
        elif path.endswith(".rotation_axis_angle"):
            # Interpolated axes are not unit length: compare as rotations.
            if index:
                continue
            old4, new4 = _stacked(before, after, path, 4)
            old_m, new_m = ([np.array(Quaternion(v[1:], v[0]).to_matrix()) for v in a] for a in (old4, new4))
            error = np.abs(np.array(old_m) - np.array(new_m)).max()
            assert error < tol, f"{path}: rotation differs by {error}"
            assert np.allclose(np.linalg.norm(new4[:, 1:], axis=-1), 1.0)
        else:
            error = np.abs(after[key] - old).max()
            assert error < tol * max(1.0, np.abs(old).max()), f"{path}[{index}] differs by {error}"


def _armature_in_edit_mode(name):
    """A new armature object, linked, active and in Edit mode (its bones to be made)."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    return obj, data


def _hand_built_rig():
    """Bones with rolls, connected and free, in quaternion / axis-angle / Euler modes, keyed
    sparsely (Bezier) on some channels and left at a posed value on others."""
    obj, data = _armature_in_edit_mode("Rig")
    spec = [
        # name, parent, head, tail, roll, connected
        ("root", None, (0.0, 0.1, 0.9), (0.0, 0.1, 1.1), 0.3, False),
        ("thigh", "root", (0.1, 0.1, 0.9), (0.12, 0.05, 0.5), 0.7, False),
        ("shin", "thigh", (0.12, 0.05, 0.5), (0.11, 0.1, 0.1), -1.2, True),
        ("foot", "shin", (0.11, 0.1, 0.1), (0.11, -0.05, 0.02), 2.5, True),
        ("toe", "foot", (0.11, -0.05, 0.02), (0.11, -0.12, 0.0), 0.0, True),
        ("prop", "root", (-0.3, 0.0, 1.0), (-0.3, 0.2, 1.3), -0.4, False),
    ]
    for name, parent, head, tail, roll, connected in spec:
        bone = data.edit_bones.new(name)
        bone.head, bone.tail, bone.roll = head, tail, roll
        if parent:
            bone.parent = data.edit_bones[parent]
            bone.use_connect = connected
    bpy.ops.object.mode_set(mode="OBJECT")
    modes = {"root": "QUATERNION", "thigh": "AXIS_ANGLE", "shin": "XZY", "foot": "QUATERNION", "toe": "YZX"}
    modes["prop"] = "ZXY"
    bones = obj.pose.bones
    for name, mode in modes.items():
        bones[name].rotation_mode = mode
    rng = np.random.default_rng(7)

    def unit_quaternion(previous):
        q = Quaternion(rng.normal(0.0, 1.0, 4)).normalized()
        return -q if q.dot(previous) < 0.0 else q  # keys in one hemisphere, as animators key

    for frame in (1, 9, 20, 33, 40):
        bones["root"].location = rng.normal(0.0, 0.2, 3)
        bones["root"].rotation_quaternion = unit_quaternion(bones["root"].rotation_quaternion)
        axis = rng.normal(0.0, 1.0, 3)
        bones["thigh"].rotation_axis_angle = (rng.uniform(0.2, 2.5), *(axis / np.linalg.norm(axis)))
        bones["shin"].rotation_euler = rng.uniform(-1.0, 1.0, 3)
        bones["foot"].rotation_quaternion = unit_quaternion(bones["foot"].rotation_quaternion)
        bones["toe"].rotation_euler = rng.uniform(-0.5, 0.5, 3)
        bones["prop"].location = rng.normal(0.0, 0.1, 3)
        for name, path in (
            ("root", "location"),
            ("root", "rotation_quaternion"),
            ("thigh", "rotation_axis_angle"),
            ("shin", "rotation_euler"),
            ("foot", "rotation_quaternion"),
            ("toe", "rotation_euler"),
            ("prop", "location"),
        ):
            bones[name].keyframe_insert(path, frame=frame)
    # Not keyed: these poses hold on every frame.
    bones["prop"].rotation_euler = (0.4, -0.3, 1.9)
    bones["prop"].scale = (1.5, 1.5, 1.5)
    bones["foot"].location = (0.01, 0.02, -0.03)  # connected: Blender ignores it
    return obj, obj.animation_data.action, 1, 40


# --- reading ----------------------------------------------------------------------------


@pytest.mark.parametrize("clip", ["cmu_07_01.bvh", "cmu_131_01.bvh"])
@pytest.mark.parametrize("transformed", [False, True], ids=["identity", "scaled_rotated"])
def test_bvh_fk_matches_blender(clips_dir, clip, transformed):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, clip)
    if transformed:
        _transform_object(obj)
    toe = "LeftToeBase" if "LeftToeBase" in obj.pose.bones else "LeftToe"
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last, extra_tails=[toe])
    assert motion.rot.shape == (last - first + 1, len(obj.pose.bones) + 1, 4)
    assert skeleton.names[-1] == toe + ".tail" and skeleton.parents[-1] == skeleton.index(toe)
    assert {obj.pose.bones[n].rotation_mode for n in skeleton.names[:-1]} <= set(channels.EULER_ORDERS)
    scene = bpy.context.scene
    assert motion.fps == pytest.approx(scene.render.fps / scene.render.fps_base)
    assert not joint_map.unsupported
    _assert_fk_matches_blender(obj, skeleton, motion, first, [first, first + 1, (first + last) // 2, last])


def test_hand_built_rig_fk_matches_blender():
    _reset()
    obj, action, first, last = _hand_built_rig()
    _transform_object(obj)
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last, extra_tails=["toe", "foot"])
    assert skeleton.names[-2:] == ["toe.tail", "foot.tail"]
    assert joint_map.rotation_modes["thigh"] == "AXIS_ANGLE"
    _assert_fk_matches_blender(obj, skeleton, motion, first, [1, 5, 9, 14, 27, 40])


def test_bones_made_before_their_parents_are_read_parents_first():
    """Children made first and parented later (and a bone moved to another parent) are
    still read after their parents, and the pose is Blender's."""
    _reset()
    obj, data = _armature_in_edit_mode("Late parents")
    bones = data.edit_bones
    for name, head, tail in (("toe", (0.1, -0.05, 0.02), (0.1, -0.12, 0.0)), ("foot", (0.1, 0.1, 0.1), (0.1, -0.05, 0.02)),
                             ("shin", (0.1, 0.05, 0.5), (0.1, 0.1, 0.1)), ("arm", (0.3, 0.0, 1.3), (0.6, 0.0, 1.3)),
                             ("root", (0.0, 0.1, 0.9), (0.0, 0.1, 1.1))):
        bone = bones.new(name)
        bone.head, bone.tail = head, tail
    for child, parent in (("toe", "foot"), ("foot", "shin"), ("shin", "root"), ("arm", "foot"), ("arm", "root")):
        bones[child].parent = bones[parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    for frame, angle in ((1, 0.0), (10, 0.8)):
        for name in ("root", "shin", "foot", "arm"):
            obj.pose.bones[name].rotation_quaternion = Quaternion((1.0, 0.0, 0.0), angle)
            obj.pose.bones[name].keyframe_insert("rotation_quaternion", frame=frame)
    action = obj.animation_data.action
    skeleton, motion, _ = armature.read_motion(obj, action, 1, 10, extra_tails=["toe"])
    assert all(parent < joint for joint, parent in enumerate(skeleton.parents))
    assert [skeleton.names[p] if p >= 0 else None for p in skeleton.parents[:5]] == [
        None, "root", "shin", "foot", "root"] and skeleton.names[:5] == ["root", "shin", "foot", "toe", "arm"]
    _assert_fk_matches_blender(obj, skeleton, motion, 1, [1, 4, 10])


def test_read_refuses_non_uniform_object_scale(clips_dir):
    """Refused with advice that keeps the motion (applying the scale does not), naming the
    object whatever its name holds (braces crashed the message's template)."""
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    obj.name = "rig {0} {}"
    obj.scale = (1.0, 2.0, 1.0)
    bpy.context.view_layer.update()
    with pytest.raises(AdapterError, match=r"'rig \{0\} \{\}' is scaled non-uniformly .* at frame 1, .*"
                                           r"do not apply the scale"):
        armature.read_motion(obj, action, first, last)


def _mirror(obj, carrier):
    """Mirror ``obj`` in X by ``carrier``: itself, or a new empty of that name it is parented to."""
    if carrier != obj.name:
        parent = bpy.data.objects.new(carrier, None)
        bpy.context.scene.collection.objects.link(parent)
        obj.parent = parent
        obj = parent
    obj.scale = (-1.0, 1.0, 1.0)
    bpy.context.view_layer.update()


@pytest.mark.parametrize("by", ["itself", "parent"])
def test_a_mirrored_armature_is_refused_naming_the_mirror_and_advice_that_keeps_the_motion(clips_dir, by):
    """The refusal names the object whose scale is negative (the armature, or the parent
    empty that mirrors it) and never says to apply the scale: that moves the bones and
    breaks the animation."""
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    carrier = obj.name if by == "itself" else "Mirror"
    _mirror(obj, carrier)
    with pytest.raises(AdapterError) as refusal:
        armature.read_motion(obj, action, first, last)
    message = str(refusal.value)
    by_words = "its negative scale" if by == "itself" else "the negative scale of 'Mirror'"
    assert message.startswith(f"object {obj.name!r} is mirrored by {by_words} at frame {first}, "), message
    scale_words = "set its scale positive" if by == "itself" else "set the scale of 'Mirror' positive"
    assert f"{scale_words}, run Foot Lock, then make it negative again" in message
    assert "do not apply the scale" in message and "apply the scale first" not in message


@pytest.mark.parametrize("by", ["itself", "parent"])
def test_the_mirror_advice_works_fixed_unmirrored_then_mirrored_back_the_feet_stay_planted(addon, sliding, by):
    """What the refusal advises, done on the sliding walk: scale positive, Remove Foot
    Sliding, scale negative again. A mirror that stands still maps each planted toe to one
    point, so the toes planted in the fix stay still in the world (they slid before: 7.9
    cm/s, the 120 fps walk imported frame for frame plays five times slower in the 24 fps
    scene; labelled at a walk's pace, its contacts ran into the swings, which slid 35)."""
    from blender_scenes import slide_cm_s
    from control_rig_scenes import world_heads

    obj, original, first, last = _import_bvh(sliding.parent, sliding.name)
    carrier = obj.name if by == "itself" else "Mirror"
    _mirror(obj, carrier)
    addon.data.objects[carrier].scale = (1.0, 1.0, 1.0)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    addon.data.objects[carrier].scale = (-1.0, 1.0, 1.0)
    fixed = obj.animation_data.action
    toes = ["LeftToeBase", "RightToeBase"]
    frames = np.arange(first, last + 1)
    contacts = np.array([_contact_values(obj, fixed, toe, frames) for toe in toes]) >= 0.5
    fps = addon.context.scene.render.fps

    assert contacts.sum() > 100 and slide_cm_s(world_heads(addon, obj, toes, frames), contacts, fps) < 0.5
    obj.animation_data.action = original
    assert slide_cm_s(world_heads(addon, obj, toes, frames), contacts, fps) > 5.0


def _contact_values(obj, action, bone, frames):
    fcurve = compat.find_fcurve(compat.channel_bag(obj, action), armature.contact_data_path(bone), 0)
    return compat.read_values(fcurve, frames)


def test_an_object_that_neither_turns_nor_scales_reads_as_any_other(monkeypatch):
    """The short cut for world matrices without rotation or scale gives the general
    path's rotations, translations and scales bit for bit, and still refuses a non-number."""
    _reset()
    rig = bpy.data.objects.new("rig", None)
    frames = np.arange(3)
    world = np.tile(np.eye(4), (3, 1, 1))
    world[:, :3, 3] = [[0.0, 0.0, 0.0], [2.5, -1e-3, 7.0], [-0.0, 1e300, 3.0]]
    short = armature._object_transforms(rig, world, frames)
    monkeypatch.setattr(armature, "_unturned", lambda world: False)
    general = armature._object_transforms(rig, world, frames)
    monkeypatch.undo()
    for got, expected in zip(short, general):
        assert got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()
    world[1, 0, 3] = np.nan
    with pytest.raises(AdapterError, match="not a number\\) at frame 1"):
        armature._object_transforms(rig, world, frames)


def test_read_names_bone_channel_and_frame_of_nan(clips_dir):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    path = armature.bone_data_path("LeftFoot") + ".rotation_euler"
    fcurve = compat.find_fcurve(compat.channel_bag(obj, action), path, 1)
    fcurve.keyframe_points[41].co.y = float("nan")  # the key of frame 42
    with pytest.raises(AdapterError, match=r"'LeftFoot'.*rotation_euler\[1\].*frame 42"):
        armature.read_motion(obj, action, first, last)


def test_a_read_of_some_bones_has_their_chains_values_bit_for_bit(clips_dir):
    """``only`` converts those bones and their ancestors, each joint exactly as the whole
    read has it; ``read_poses`` gives the whole read's rows of its frames."""
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    _transform_object(obj)
    whole_skeleton, whole, whole_map = armature.read_motion(obj, action, first, last, extra_tails=["LeftToeBase"])
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last, extra_tails=["LeftToeBase"],
                                                       only=["LeftFoot"])
    assert skeleton.names == ["Hips", "LHipJoint", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase",
                              "LeftToeBase.tail"]
    joints = [whole_skeleton.index(name) for name in skeleton.names]
    assert [skeleton.names[p] for p in skeleton.parents[1:]] == [
        whole_skeleton.names[whole_skeleton.parents[j]] for j in joints[1:]]
    assert np.array_equal(motion.rot, whole.rot[:, joints]) and np.array_equal(motion.pos, whole.pos[:, joints])
    assert np.array_equal(joint_map.parent_scale, whole_map.parent_scale[:, joints])
    ends = [first, last]
    _, poses, _ = armature.read_poses(obj, action, ends, extra_tails=["LeftToeBase"])
    assert np.array_equal(poses.rot, whole.rot[[0, -1]]) and np.array_equal(poses.pos, whole.pos[[0, -1]])


def test_a_rig_whose_rest_changed_is_read_as_it_is_now(clips_dir):
    """The bones' rest offsets are remembered per rig (a pipeline reads one rig thousands of
    times), but a rest pose edited since is read anew: as a read that remembered nothing."""
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    before = armature.read_motion(obj, action, first, last)[2].rest_rot.copy()
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["LeftLeg"].roll += 0.5
    bpy.ops.object.mode_set(mode="OBJECT")
    _, remembered, joint_map = armature.read_motion(obj, action, first, last)
    armature._rest_offsets_of.cache_clear()
    _, fresh, fresh_map = armature.read_motion(obj, action, first, last)
    leg = armature.read_motion(obj, action, first, last)[0].index("LeftLeg")
    assert not np.allclose(joint_map.rest_rot[leg], before[leg])
    assert np.array_equal(joint_map.rest_rot, fresh_map.rest_rot)
    assert np.array_equal(remembered.rot, fresh.rot) and np.array_equal(remembered.pos, fresh.pos)


def test_a_read_of_some_bones_still_refuses_nan_keys_on_the_others(clips_dir):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    fcurve = compat.find_fcurve(compat.channel_bag(obj, action), armature.bone_data_path("LeftArm") + ".rotation_euler", 2)
    fcurve.keyframe_points[9].co.y = float("nan")  # the key of frame 10
    with pytest.raises(AdapterError, match=r"'LeftArm'.*rotation_euler\[2\].*frame 10"):
        armature.read_motion(obj, action, first, last, only=["LeftFoot"])


def test_unsupported_bone_settings_are_flagged_and_refused_on_write():
    _reset()
    obj, action, first, last = _hand_built_rig()
    obj.data.bones["shin"].use_inherit_rotation = False
    obj.pose.bones["prop"].scale = (1.0, 2.0, 1.0)
    bpy.context.view_layer.update()
    _skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    assert joint_map.unsupported["shin"] == "does not inherit rotation"
    assert joint_map.unsupported["prop"].startswith("is scaled non-uniformly")
    with pytest.raises(AdapterError, match=r"'prop' is scaled non-uniformly"):
        joint_map.require_exact(["prop"])
    obj.pose.bones["prop"].scale = (1.0, 1.0, 1.0)
    _skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    assert joint_map.unsupported == {"shin": "does not inherit rotation"}
    joint_map.require_exact(["thigh", "prop"])  # not below the shin: fine
    with pytest.raises(AdapterError, match=r"'shin' does not inherit rotation.*'toe'"):
        armature.write_motion(obj, action, joint_map, motion, first, ["toe"], [])
    obj.data.bones["shin"].use_inherit_rotation = True
    _skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    with pytest.raises(AdapterError, match="'foot' is connected"):
        armature.write_motion(obj, action, joint_map, motion, first, [], ["foot"])


# --- writing ----------------------------------------------------------------------------


@pytest.mark.parametrize("clip", ["cmu_07_01.bvh", "cmu_131_01.bvh"])
def test_round_trip_into_a_copy_leaves_every_curve_unchanged(clips_dir, clip):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, clip)
    _transform_object(obj)
    frames = np.arange(first, last + 1)
    before = _curve_values(obj, action, frames)
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    bones = [name for name in skeleton.names if not joint_map.connected[name]]
    result = armature.write_motion(
        obj,
        action,
        joint_map,
        motion,
        first,
        rotation_bones=list(skeleton.names),
        location_bones=bones,
        new_action_name=action.name + ".footlock",
    )
    assert result != action and result.name == action.name + ".footlock"
    assert obj.animation_data.action == result
    if compat.LAYERED_ACTIONS:
        assert obj.animation_data.action_slot is not None
        assert obj.animation_data.action_slot.identifier == result.slots[0].identifier
    assert action.users >= 1  # the original survives saving
    after = _curve_values(obj, result, frames)
    _assert_curves_equal(obj, before, after, frames)
    # Stronger than equal rotations: the Euler values come back too (same solution, same turns).
    for key, old in before.items():
        assert np.abs(after[key] - old).max() < 1e-5 * max(1.0, np.abs(old).max()), key
    _assert_curves_equal(obj, before, _curve_values(obj, action, frames), frames, tol=1e-12)


def test_round_trip_hand_built_rig_all_rotation_modes():
    _reset()
    obj, action, first, last = _hand_built_rig()
    frames = np.arange(first, last + 1)
    before = _curve_values(obj, action, frames)
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    result = armature.write_motion(
        obj,
        action,
        joint_map,
        motion,
        first,
        rotation_bones=["root", "thigh", "shin", "foot", "toe"],
        location_bones=["root", "prop"],
        new_action_name="solved",
    )
    after = _curve_values(obj, result, frames)
    _assert_curves_equal(obj, before, after, frames)
    # Every frame is keyed now, linearly, grouped under its bone.
    fcurve = compat.find_fcurve(
        compat.channel_bag(obj, result), armature.bone_data_path("thigh") + ".rotation_axis_angle", 0
    )
    assert len(fcurve.keyframe_points) == len(frames)
    assert {point.interpolation for point in fcurve.keyframe_points} == {"LINEAR"}
    # Curves created for channels that had none before (prop's rotation was not keyed).
    armature.write_motion(obj, result, joint_map, motion, first, rotation_bones=["prop"], location_bones=[])
    created = compat.find_fcurve(
        compat.channel_bag(obj, result), armature.bone_data_path("prop") + ".rotation_euler", 2
    )
    assert created is not None and created.group is not None and created.group.name == "prop"
    assert np.allclose(
        [created.evaluate(f) for f in frames], obj.pose.bones["prop"].rotation_euler[2], atol=1e-6
    )
    _skeleton, motion_again, _map = armature.read_motion(obj, result, first, last)
    _assert_fk_matches_blender(obj, skeleton, motion_again, first, [1, 9, 23, 40])


def test_write_changes_only_the_listed_channels(clips_dir):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    _transform_object(obj)
    frames = np.arange(first, last + 1)
    before = _curve_values(obj, action, frames)
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    solved = motion.copy()
    foot, hips = skeleton.index("LeftFoot"), skeleton.index("Hips")
    twist = quat.from_axis_angle(np.array([0.0, 0.6, 0.8]), np.linspace(0.0, 0.5, len(frames)))
    solved.rot[:, foot] = quat.multiply(twist, solved.rot[:, foot])
    solved.pos[:, hips] += np.array([0.03, -0.02, 0.05])
    armature.write_motion(obj, action, joint_map, solved, first, ["LeftFoot"], ["Hips"])  # in place
    after = _curve_values(obj, action, frames)
    changed = {
        key
        for key in before
        if key[0].startswith(('pose.bones["LeftFoot"].rotation', 'pose.bones["Hips"].loc'))
    }
    assert len(changed) == 6
    _assert_curves_equal(obj, before, after, frames, skip=changed, tol=1e-12)
    for key in changed:
        assert np.abs(after[key] - before[key]).max() > 1e-3, key
    # Blender now poses the bones as solved.
    _assert_fk_matches_blender(obj, skeleton, solved, first, [first, 100, last])


def test_euler_curves_stay_continuous_through_full_turns(clips_dir):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_131_01.bvh")  # ZYX and ZXY bones
    skeleton, motion, joint_map = armature.read_motion(obj, action, first, last)
    solved = motion.copy()
    spin = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.linspace(0.0, 6 * np.pi, motion.frames))
    tumble = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.linspace(0.0, 3 * np.pi, motion.frames))
    bones = ["Hips", "LeftAnkle", "RightKnee"]
    for name in bones:
        j = skeleton.index(name)
        solved.rot[:, j] = quat.multiply(quat.multiply(spin, tumble), solved.rot[:, j])
    frames = np.arange(first, last + 1)
    original = _curve_values(obj, action, frames[:1])
    result = armature.write_motion(obj, action, joint_map, solved, first, bones, [], new_action_name="spun")
    written = _curve_values(obj, result, frames)
    for name in bones:
        path = armature.bone_data_path(name) + ".rotation_euler"
        order = obj.pose.bones[name].rotation_mode
        values = np.stack([written[(path, i)] for i in range(3)], -1)
        # Blender's own answer: Matrix.to_euler(order, previous) frame after frame, starting
        # next to the value the curve had.
        previous = Euler([original[(path, i)][0] for i in range(3)], order)
        expected = []
        for matrix in _euler_rotation_matrices(values, order):
            previous = Matrix(matrix).to_euler(order, previous)
            expected.append(tuple(previous))
        assert np.abs(values - np.array(expected)).max() < 1e-4, name
        assert np.abs(np.diff(values, axis=0)).max() < 1.0, name  # no 2*pi or branch jumps
    _assert_fk_matches_blender(obj, skeleton, solved, first, [first, 300, 700, last])


# --- contact curves ---------------------------------------------------------------------


def test_contact_curve_keys_changes_only_constant(clips_dir):
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    frames = np.arange(first, last + 1)
    assert not armature.has_contact_curve(obj, action, "LeftFoot")
    assert armature.read_contact_curve(obj, action, "LeftFoot", frames) is None
    contact = ((frames // 30) % 2).astype(float)
    contact[100:105] = 0.5
    fcurve = armature.write_contact_curve(obj, action, "LeftFoot", frames, contact)
    assert armature.has_contact_curve(obj, action, "LeftFoot")
    assert not armature.has_contact_curve(obj, action, "RightFoot")
    changes = 1 + int(np.count_nonzero(np.diff(contact)))
    assert len(fcurve.keyframe_points) == changes
    assert {point.interpolation for point in fcurve.keyframe_points} == {"CONSTANT"}
    assert fcurve.group is not None and fcurve.group.name == "LeftFoot"
    assert np.array_equal(armature.read_contact_curve(obj, action, "LeftFoot", frames), contact)
    assert np.array_equal([fcurve.evaluate(f) for f in frames], contact)
    ui = obj.pose.bones["LeftFoot"].id_properties_ui(armature.CONTACT_PROPERTY).as_dict()
    assert (ui["min"], ui["max"], ui["soft_min"], ui["soft_max"]) == (0.0, 1.0, 0.0, 1.0)
    # Blender evaluates the property from the curve.
    bpy.context.scene.frame_set(35)
    assert obj.pose.bones["LeftFoot"][armature.CONTACT_PROPERTY] == pytest.approx(1.0)
    # Rewriting a sub-range keeps the keys outside it.
    armature.write_contact_curve(obj, action, "LeftFoot", frames[200:250], np.ones(50))
    expected = contact.copy()
    expected[200:250] = 1.0
    assert np.array_equal(armature.read_contact_curve(obj, action, "LeftFoot", frames), expected)


# --- the F-curve layer ------------------------------------------------------------------


def _empty_with_action():
    """A fresh empty in the scene playing a new action: the object, the action, its channel bag."""
    _reset()
    obj = bpy.data.objects.new("Empty", None)
    bpy.context.scene.collection.objects.link(obj)
    action = bpy.data.actions.new("Act")
    compat.assign_action(obj, action)
    return obj, action, compat.channel_bag(obj, action, create=True)


def test_bulk_keys_and_reading_paths():
    obj, action, bag = _empty_with_action()
    curve = compat.new_fcurve(bag, "location", 2, group="Object Transforms")
    assert curve.group.name == "Object Transforms"
    compat.write_keys(curve, [1, 5, 9], [0.0, 2.0, -1.0], "LINEAR")
    assert [p.interpolation for p in curve.keyframe_points] == ["LINEAR"] * 3
    frames = np.arange(-2, 13)
    expected = np.array([curve.evaluate(f) for f in frames])
    assert np.allclose(compat.read_values(curve, frames), expected)  # linear: interpolated in numpy
    compat.write_keys(curve, [1, 5, 9], [0.0, 2.0, -1.0], "BEZIER")
    expected = np.array([curve.evaluate(f) for f in frames])
    assert not np.allclose(expected[4:7], [1.0, 1.5, 2.0][::-1])
    assert np.allclose(compat.read_values(curve, frames), expected)  # Bezier: evaluate()
    compat.write_keys(curve, [3, 4], [7.0, 8.0], "CONSTANT", keep_outside=True)
    co = [tuple(p.co) for p in curve.keyframe_points]
    assert co == [(1.0, 0.0), (3.0, 7.0), (4.0, 8.0), (5.0, 2.0), (9.0, -1.0)]
    assert [p.interpolation for p in curve.keyframe_points] == [
        "BEZIER",
        "CONSTANT",
        "CONSTANT",
        "BEZIER",
        "BEZIER",
    ]
    assert compat.find_fcurve(bag, "location", 2) == curve
    assert list(compat.iter_fcurves(obj, action)) == [curve]
    if compat.LAYERED_ACTIONS:
        assert obj.animation_data.action_slot is not None


def test_curves_read_together_give_what_each_curve_gives():
    """``read_curves`` matches the curves keyed on exactly the frames in one pass; a curve
    with as many keys off the frames, one with a modifier and a sparse one are read as
    ``read_values`` reads them (and all as Blender evaluates them)."""
    *_, bag = _empty_with_action()
    frames = np.arange(1, 21)
    rng = np.random.default_rng(3)
    on_frames, off_frames, modified = (compat.new_fcurve(bag, "location", i) for i in range(3))
    sparse = compat.new_fcurve(bag, "scale", 0)
    compat.write_keys(on_frames, frames, rng.normal(size=20), "LINEAR")
    compat.write_keys(off_frames, frames + 0.5, rng.normal(size=20), "LINEAR")
    compat.write_keys(modified, frames, rng.normal(size=20), "LINEAR")
    modified.modifiers.new("NOISE")
    compat.write_keys(sparse, [1, 9, 20], [0.0, 2.0, -1.0], "BEZIER")
    curves = [on_frames, off_frames, modified, sparse]
    together = compat.read_curves(curves, frames)
    for curve, values in zip(curves, together):
        np.testing.assert_array_equal(values, compat.read_values(curve, frames))
        np.testing.assert_allclose(values, [curve.evaluate(f) for f in frames], atol=1e-6)
    assert compat.read_curves([], frames).shape == (0, 20)


def test_keys_read_where_blender_keeps_them_are_what_rna_reads(monkeypatch):
    """Keys are read from each curve's key array (``_read_points``) on every Blender the
    suite runs: frame, value and interpolation as RNA gives them, key by key, whatever
    else the keys carry (handles, easing, key types, values that are not numbers). Where
    the array's layout does not hold, the same keys come through RNA."""
    *_, bag = _empty_with_action()
    rng = np.random.default_rng(5)
    frames = np.arange(1, 41)
    curves = [compat.new_fcurve(bag, "location", i) for i in range(3)]
    for curve, mode in zip(curves, ("LINEAR", "BEZIER", "CONSTANT")):
        compat.write_keys(curve, frames, rng.normal(size=len(frames)), mode)
    keys = curves[1].keyframe_points
    keys[3].interpolation, keys[4].easing, keys[5].type = "ELASTIC", "EASE_IN", "BREAKDOWN"
    keys[6].handle_left, keys[6].handle_right = (5.5, 9.0), (7.5, -9.0)
    keys[7].co.y = float("nan")
    expected = [np.array([tuple(key.co) for key in curve.keyframe_points], dtype=np.float32) for curve in curves]
    codes = [[key.bl_rna.properties["interpolation"].enum_items[key.interpolation].value
              for key in curve.keyframe_points] for curve in curves]

    def read():
        with compat.remembered_keys():
            rows = compat.key_frame_rows(curves)  # the frames of each, read and remembered
            remembered = [compat._known(compat._curve_key(curve), len(frames)) for curve in curves]
        values = compat.read_curves(curves, frames)
        return rows, remembered, values

    def check(rows, remembered, values):
        for co, modes, row, (kept, kept_modes), value in zip(expected, codes, rows, remembered, values):
            np.testing.assert_array_equal(kept, co)
            np.testing.assert_array_equal(row, co[:, 0])
            np.testing.assert_array_equal(value, co[:, 1].astype(float))
            assert kept_modes.tolist() == modes

    check(*read())
    assert compat._key_array_layout is True  # the layout was checked and holds: keys are read there
    assert compat._fcurve_layout is True  # and the curves' key arrays and counts are found there
    with compat.remembered_keys():  # many curves at once, gathered from their key arrays
        np.testing.assert_array_equal(compat.read_curves(curves, frames), read()[2])
        check(*read())
    monkeypatch.setattr(compat, "_WINDOW_MAX", 0)  # key arrays too far apart for one gather: one by one
    check(*read())
    monkeypatch.setattr(compat, "_fcurve_layout", False)  # the curves' counts asked of RNA
    check(*read())
    monkeypatch.setattr(compat, "_key_array_layout", False)
    rows, remembered, values = read()
    for co, row, (kept, kept_modes), value in zip(expected, rows, remembered, values):
        np.testing.assert_array_equal(kept, co)
        np.testing.assert_array_equal(row, co[:, 0])
        np.testing.assert_array_equal(value, co[:, 1].astype(float))
        assert kept_modes is None  # RNA read the keys alone


def test_new_keys_set_in_the_key_array_are_the_bytes_rna_sets(monkeypatch):
    """New keys are set in each curve's key array (``_set_keys``) on every Blender the
    suite runs: every byte of every key (frame, value, handles, interpolation, handle types,
    selection, easing...) as RNA's ``co_ui`` and ``interpolation`` leave them, in one curve
    and in many, replacing keys (over as many edited ones too) or beside keys kept outside
    the frames written."""
    *_, bag = _empty_with_action()
    rng = np.random.default_rng(7)
    frames = np.arange(1, 41)
    values = rng.normal(size=(3, len(frames)))

    def written(path):
        curves = [compat.new_fcurve(bag, path, i) for i in range(3)]
        compat.write_curves(curves, frames, values)
        for key in list(curves[0].keyframe_points)[::7]:  # an animator's edits, every one replaced by as many keys
            key.handle_left_type, key.easing, key.type, key.select_control_point = "VECTOR", "EASE_IN", "BREAKDOWN", False
            key.handle_right = (0.5, 3.0)
        compat.write_curves(curves[:2], frames, values[1:] * 2.0, "BEZIER")
        compat.write_keys(curves[1], [2, 9, 20], [0.5, -1.0, 2.0], "CONSTANT")
        compat.write_keys(curves[2], frames[5:25], values[2, 5:25] + 1.0, keep_outside=True)
        compat.write_curves(curves[:1], [3, 4, 5], [[1.0, 2.0, 4.0]], "CONSTANT", keep_outside=True)
        return [ctypes.string_at(curve.keyframe_points[0].as_pointer(), 72 * len(curve.keyframe_points))
                for curve in curves]

    compat.key_frame_rows([_keyed(bag)])  # the layout checked on keys read (new keys, all zeros, cannot tell)
    assert compat._key_array_layout is True
    in_place = written("location")
    monkeypatch.setattr(compat, "_key_array_layout", False)  # RNA writes them
    assert in_place == written("rotation_euler")


def _keyed(bag):
    """A curve of ``bag`` keyed through RNA alone, key by key."""
    curve = compat.new_fcurve(bag, "delta_location", 0)
    for frame, value in ((1, 0.0), (2, 1.0), (3, 0.5)):
        curve.keyframe_points.insert(frame, value)
    return curve


def test_digests_of_many_curves_are_each_curves_own():
    """``keys_digests`` gives each curve the digest ``keys_digest`` gives it alone, the one
    stored in saved files (SHA-1 of the float32 frames and values, then the int32
    interpolation codes), whatever curves of other lengths and codes come before it."""
    *_, bag = _empty_with_action()
    curves = [compat.new_fcurve(bag, "location", i) for i in range(3)] + [compat.new_fcurve(bag, "scale", 0)]
    compat.write_keys(curves[0], [1, 2, 3], [0.0, 1.0, 0.5], "LINEAR")
    compat.write_keys(curves[1], [1, 2], [4.0, -1.0], "CONSTANT")
    compat.write_keys(curves[2], [1, 2, 3], [0.0, 1.0, 0.5], "BEZIER")
    compat.write_keys(curves[3], [1, 2, 3], [0.0, 1.0, 0.5], "LINEAR")
    curves[3].keyframe_points[1].interpolation = "CONSTANT"
    expected = []
    for curve in curves:
        keys = curve.keyframe_points
        co = np.array([tuple(key.co) for key in keys], dtype=np.float32)
        modes = np.array([key.bl_rna.properties["interpolation"].enum_items[key.interpolation].value
                          for key in keys], dtype=np.int32)
        expected.append(hashlib.sha1(co.tobytes() + modes.tobytes()).hexdigest()[:16])
    assert len(set(expected)) == len(curves)
    assert compat.keys_digests(curves) == [compat.keys_digest(curve) for curve in curves] == expected
    with compat.remembered_keys():
        assert compat.keys_digests(curves) == compat.keys_digests(curves) == expected


def _keys(fcurve, prop):
    return [tuple(getattr(point, prop)) for point in fcurve.keyframe_points]


def test_bulk_linear_keys_sit_on_their_handles_and_play_as_written():
    """Keys written without ``fcurve.update()`` (as Bake Action writes them): in order,
    linear, each handle on its key (not at frame 0, value 0), the curve evaluating between
    and beyond them as Blender's own update would make it."""
    _, _, bag = _empty_with_action()
    curve = compat.new_fcurve(bag, "location", 0)
    curve.extrapolation = "LINEAR"
    compat.write_keys(curve, [3, 4, 5, 6], [1.0, 3.0, 2.0, -4.0], "LINEAR")
    assert _keys(curve, "co") == [(3.0, 1.0), (4.0, 3.0), (5.0, 2.0), (6.0, -4.0)]
    assert _keys(curve, "handle_left") == _keys(curve, "handle_right") == _keys(curve, "co")
    samples = [1.0, 3.5, 4.25, 5.5, 8.0]
    written = [curve.evaluate(f) for f in samples]
    curve.update()  # what Blender's update changes (the automatic handles) does not change the motion
    assert written == pytest.approx([curve.evaluate(f) for f in samples]) == [-3.0, 2.0, 2.75, -1.0, -16.0]
    compat.write_keys(curve, [6, 4, 5], [0.0, 1.0, 2.0], "LINEAR")  # out of order: Blender sorts them
    assert _keys(curve, "co") == [(4.0, 1.0), (5.0, 2.0), (6.0, 0.0)]


def _digests(obj, action):
    return {(fc.data_path, fc.array_index): compat.keys_digest(fc) for fc in compat.iter_fcurves(obj, action)}


def test_keys_remembered_in_a_job_are_the_keys_blender_holds(clips_dir):
    """Within ``remembered_keys()`` curves read, written, copied or rewritten around kept
    keys digest and read as they do afresh outside it, and an edit made outside is seen."""
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_07_01.bvh")
    frames = np.arange(first, last + 1)
    with compat.remembered_keys():
        values = {key: compat.read_values(fc, frames) for key, fc in compat.fcurve_table(compat.channel_bag(obj, action)).items()}
        copy = compat.copy_action(obj, action, "copy")
        table = compat.fcurve_table(compat.channel_bag(obj, copy))
        (path, index), rewritten = next(iter(table.items()))
        compat.write_keys(rewritten, frames, np.sin(frames), "LINEAR")
        kept = table[(path, (index + 1) % 3)]
        compat.write_keys(kept, frames[10:20], np.zeros(10), "CONSTANT", keep_outside=True)
        inside = _digests(obj, copy)
        read_inside = compat.read_values(kept, frames)
    assert inside == _digests(obj, copy) and inside != _digests(obj, action)
    np.testing.assert_array_equal(read_inside, compat.read_values(kept, frames))
    assert all(np.array_equal(compat.read_values(fc, frames), values[key]) for key, fc in table.items()
               if fc not in (rewritten, kept))
    with compat.remembered_keys():
        before = compat.keys_digest(rewritten)
        rewritten.keyframe_points[5].co.y += 1.0  # what no job does: an edit between two jobs
    with compat.remembered_keys():
        assert compat.keys_digest(rewritten) != before


# --- speed ------------------------------------------------------------------------------


def _long_action(obj, action, first, last, frames):
    """Copy of ``action`` with every curve tiled out to ``frames`` keys (one per frame)."""
    long = compat.copy_action(obj, action, "long")
    bag = compat.channel_bag(obj, long)
    source = np.arange(first, last + 1)
    target = np.arange(1, frames + 1)
    for fcurve in bag.fcurves:
        values = np.resize(compat.read_values(fcurve, source), frames)
        compat.write_keys(fcurve, target, values)
    return long


@pytest.mark.parametrize("frames", [1_000, 10_000])
def test_long_actions_round_trip_through_bulk_read_and_write(clips_dir, frames):
    """Every bone of a long action written in bulk reads back as it was (the speed of the
    same read and write is printed by ``benchmarks/benchmark.py --blender``)."""
    _reset()
    obj, action, first, last = _import_bvh(clips_dir, "cmu_01_01.bvh")
    long = _long_action(obj, action, first, last, frames)
    every_bone = [bone.name for bone in obj.pose.bones]
    _skeleton, motion, joint_map = armature.read_motion(obj, long, 1, frames)
    written = armature.write_motion(obj, long, joint_map, motion, 1, every_bone, ["Hips"], "long.all")
    _skeleton, again, _ = armature.read_motion(obj, written, 1, frames)
    assert motion.frames == again.frames == frames
    np.testing.assert_allclose(np.abs(np.sum(again.rot * motion.rot, axis=-1)), 1.0, atol=1e-5)
    np.testing.assert_allclose(again.pos, motion.pos, atol=1e-5)
