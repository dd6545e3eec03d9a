"""What the viewport shows gets fixed: an in-place walk whose object travels (keys, Follow
Path, Child Of, an animated parent two levels up, a driver), in real Blender."""

import numpy as np
import pytest
from blender_scenes import reference_labels_by_leg, slide_cm_s
from viewport_scenes import TRAVELLERS, WALK, in_place_walk, world_heads

pytestmark = pytest.mark.blender


@pytest.fixture(scope="module", params=sorted(TRAVELLERS))
def travelling(request, clips_dir):
    """Each travelling in-place walk before and after one click of Remove Foot Sliding."""
    import bpy
    import foot_lock
    from foot_lock.adapters import action_compat

    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    try:
        obj, start, end = in_place_walk(bpy, clips_dir, request.param)
        frames = np.arange(start, end + 1)
        source = obj.animation_data.action
        source_keys = {(fc.data_path, fc.array_index): len(fc.keyframe_points)
                       for fc in action_compat.iter_fcurves(obj, source)}
        bpy.ops.foot_lock.detect_legs()
        toes = [leg.toe for leg in obj.foot_lock.legs]
        before = world_heads(bpy, obj, toes, frames)
        result = bpy.ops.foot_lock.remove_sliding()
        after = world_heads(bpy, obj, toes, frames)
        report = obj.foot_lock.report
        return {
            "how": request.param,
            "result": result,
            "before": before,
            "after": after,
            "contacts": np.array([reference_labels_by_leg(clips_dir / WALK)[leg.name] for leg in obj.foot_lock.legs]),
            "fps": bpy.context.scene.render.fps / bpy.context.scene.render.fps_base,
            "action": obj.animation_data.action.name,
            "source_unchanged": source_keys == {(fc.data_path, fc.array_index): len(fc.keyframe_points)
                                                for fc in action_compat.iter_fcurves(obj, source)},
            "contact_frames": report.contact_frames,
            "source": report.source,
            "constraints": [c.type for c in obj.constraints],
            "drivers": len(obj.animation_data.drivers),
            "parent": obj.parent.name if obj.parent else None,
        }
    finally:
        foot_lock.unregister()


def test_world_toe_slide_over_planted_frames_after_one_click(travelling):
    t = travelling
    assert t["result"] == {"FINISHED"}
    assert slide_cm_s(t["before"], t["contacts"], t["fps"]) > 10.0  # the feet slide in the viewport
    assert slide_cm_s(t["after"], t["contacts"], t["fps"]) <= 1.0
    assert t["contact_frames"] > 0.5 * t["contacts"].sum()


def test_the_object_motion_is_left_driving_the_character(travelling):
    t = travelling
    assert t["action"] == "cmu_07_01.footlock" and t["source_unchanged"]
    # The object's own keys are read as the bones' are; a path, a parent, a constraint or
    # a driver only the evaluated scene shows.
    assert t["source"] == ("keys" if t["how"] == "keys" else "evaluated scene")
    assert t["constraints"] == {"path": ["FOLLOW_PATH"], "child_of": ["CHILD_OF"]}.get(t["how"], [])
    assert (t["drivers"] == 2) == (t["how"] == "driver")
    assert (t["parent"] == "Offset") == (t["how"] == "parent")
    # The body still travels: the toes cover (nearly) the stride distance over the clip.
    travel = np.linalg.norm(t["after"][-1, :, :2] - t["after"][0, :, :2], axis=-1)
    assert np.all(travel > 0.5 * np.linalg.norm(t["before"][-1, :, :2] - t["before"][0, :, :2], axis=-1))


def test_hand_keyed_contacts_on_a_travelling_in_place_walk_plant_the_feet_in_the_world(blender, clips_dir):
    import foot_lock
    from foot_lock.adapters import armature

    bpy = blender
    foot_lock.register()
    try:
        obj, start, end = in_place_walk(bpy, clips_dir, "keys")
        frames = np.arange(start, end + 1)
        bpy.ops.foot_lock.detect_legs()
        legs = obj.foot_lock.legs
        contacts = np.array([reference_labels_by_leg(clips_dir / WALK)[leg.name] for leg in legs])
        for leg, row in zip(legs, contacts):  # keyed by hand, as the animator sees the steps
            armature.write_contact_curve(obj, obj.animation_data.action, leg.toe, frames, row, stamp=False)
        assert bpy.ops.foot_lock.remove_sliding() == {"FINISHED"}
        after = world_heads(bpy, obj, [leg.toe for leg in legs], frames)
        fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
        assert slide_cm_s(after, contacts, fps) <= 1.0
        assert obj.foot_lock.report.pelvis_shift <= 4.0  # cm: the body keeps its path
    finally:
        foot_lock.unregister()


def test_an_armature_shown_at_rest_is_fixed_from_its_animation_and_told(blender, clips_dir):
    """Rest Position shows every bone at rest whatever its keys: a walk on a Follow Path read
    so (the evaluated scene) was baked as the rest pose gliding along the path, the walk gone
    from the fix. It is read in Pose Position, left at rest, and the report says the viewport
    shows none of the fix until Pose Position is set again."""
    import foot_lock
    from foot_lock.adapters import action_compat, jobs

    bpy = blender
    foot_lock.register()
    try:
        results = {}
        for position in ("POSE", "REST"):
            bpy.ops.wm.read_factory_settings(use_empty=True)
            obj, start, end = in_place_walk(bpy, clips_dir, "path")
            obj.data.pose_position = position
            outcome = jobs.remove_sliding(obj, bpy.context.scene)
            assert obj.data.pose_position == position
            fcurves = action_compat.fcurve_table(action_compat.channel_bag(obj, outcome.action))
            results[position] = {channel: [fcurve.evaluate(frame) for frame in range(start, end + 1)]
                                 for channel, fcurve in fcurves.items()}
            results[position, "told"] = any("shows its Rest Position" in w for w in outcome.result.warnings)
        assert results["REST"].keys() == results["POSE"].keys()
        for channel, values in results["POSE"].items():
            np.testing.assert_allclose(results["REST"][channel], values, atol=1e-5, err_msg=str(channel))
        assert results["REST", "told"] and not results["POSE", "told"]
    finally:
        foot_lock.unregister()


@pytest.mark.parametrize("rotation_mode", ["ZXY", "QUATERNION", "AXIS_ANGLE"])
def test_an_object_travelling_by_its_own_keys_is_read_from_them_as_blender_evaluates_it(blender, clips_dir,
                                                                                         rotation_mode):
    """Keyed location, rotation and scale on the armature object, delta transforms and a
    still, rotated parent: the direct read puts every joint where stepping the scene does."""
    from foot_lock.adapters import action_compat, armature, evaluated
    from foot_lock.solvers.kinematics import forward_kinematics

    bpy = blender
    obj, start, end = in_place_walk(bpy, clips_dir, "keys")
    parent = bpy.data.objects.new("Stand", None)
    bpy.context.scene.collection.objects.link(parent)
    parent.location, parent.rotation_euler, parent.scale = (0.5, -1.0, 0.2), (0.0, 0.0, 0.6), (2.0, 2.0, 2.0)
    bpy.context.view_layer.update()
    obj.parent = parent
    obj.matrix_parent_inverse = parent.matrix_world.inverted()
    obj.delta_location, obj.delta_scale = (0.1, 0.0, 0.05), (1.1, 1.1, 1.1)
    obj.rotation_mode = rotation_mode
    if rotation_mode == "QUATERNION":
        obj.delta_rotation_quaternion = (0.96, 0.0, 0.0, 0.28)
    elif rotation_mode != "AXIS_ANGLE":
        obj.delta_rotation_euler = (0.0, 0.0, 0.3)
    middle = (start + end) // 2
    for frame, turn, size in ((start, 0.0, 1.0), (middle, 0.8, 0.9), (end, 1.5, 1.0)):
        obj.rotation_euler, obj.rotation_axis_angle = (0.1, 0.0, turn), (turn, 0.0, 0.3, 1.0)
        obj.rotation_quaternion = (np.cos(turn / 2), 0.0, 0.0, np.sin(turn / 2))
        obj.scale = (size, size, size)
        obj.keyframe_insert(armature.rotation_channel(rotation_mode)[0], frame=frame)
        obj.keyframe_insert("scale", frame=frame)
    action = obj.animation_data.action
    assert any(fc.data_path == "scale" for fc in action_compat.iter_fcurves(obj, action))

    bpy.context.view_layer.update()  # as an operator call does: the matrices as now
    direct = armature.read_motion(obj, action, start, end, object_keys=True)
    sampled = armature.read_evaluated_motion(obj, evaluated.sample_pose(obj, bpy.context.scene,
                                                                        np.arange(start, end + 1)))
    (skeleton, a, _), (_, b, _) = direct, sampled
    assert np.abs(forward_kinematics(skeleton, a.rot, a.pos)[1] - forward_kinematics(skeleton, b.rot, b.pos)[1]).max() \
        < 1e-5
