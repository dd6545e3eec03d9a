"""Root Motion from Feet in real Blender: an in-place walk made to travel, onto the bone or
the object; Remove Foot Sliding says an in-place walk is in place."""

import numpy as np
import pytest
from blender_scenes import import_clip, leg_bones, slide_cm_s, world_joints
from clip_scenarios import CMU_TO_METRES, in_place
from foot_lock.solvers import bvh
from foot_lock.solvers.contacts import reference_contacts
from foot_lock.solvers.kinematics import forward_kinematics

pytestmark = pytest.mark.blender


@pytest.fixture
def in_place_walk(addon, clips_dir, tmp_path):
    """The CMU walk made to walk in place (its smoothed root travel taken away), imported;
    and the original walk's contacts per leg (left, right), the criterion the tests score on."""
    parsed = bvh.read(clips_dir / "cmu_07_01.bvh")
    skeleton, motion = bvh.to_motion(parsed, CMU_TO_METRES)
    rig = bvh.detect_rig(parsed)
    bvh.write(tmp_path / "in_place.bvh", parsed, in_place(motion), CMU_TO_METRES, location_joints=[0])
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    labels = np.stack([reference_contacts(gpos[:, leg.toe], motion.fps) for leg in rig.legs])
    obj = import_clip(addon, tmp_path / "in_place.bvh")
    assert addon.ops.foot_lock.detect_legs() == {"FINISHED"}
    assert [leg.name for leg in obj.foot_lock.legs] == ["left", "right"]
    return obj, labels


def toe_slide(obj, labels, addon):
    toes = world_joints(obj, leg_bones(obj, "toe"))
    return slide_cm_s(toes, labels, addon.context.scene.render.fps / addon.context.scene.render.fps_base)


def test_root_motion_from_feet_makes_an_in_place_walk_travel(addon, in_place_walk):
    obj, labels = in_place_walk
    source = obj.animation_data.action
    before = toe_slide(obj, labels, addon)
    assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
    fixed = obj.animation_data.action
    assert fixed.name == source.name + ".rootmotion"
    after = toe_slide(obj, labels, addon)
    assert before > 50.0
    assert after <= 1.0
    hips = world_joints(obj, ["Hips"], fixed)[:, 0]
    assert np.linalg.norm(hips[-1, :2] - hips[0, :2]) > 3.0  # metres: the walk goes somewhere now
    from foot_lock.adapters import action_compat

    changed = {fc.data_path for fc in action_compat.iter_fcurves(obj, fixed)
               if any(a.co[1] != b.co[1] for a, b in zip(fc.keyframe_points,
                                                        action_compat.find_fcurve(action_compat.channel_bag(
                                                            obj, source), fc.data_path, fc.array_index)
                                                        .keyframe_points))}
    assert changed == {'pose.bones["Hips"].location'}


def test_root_motion_bakes_a_modifier_on_the_travelling_bone_into_its_keys(addon, in_place_walk):
    """A Noise modifier on the Hips' location: the travel is taken from what it plays and
    keyed into the new action without it (kept, it would shake the travel twice) and the
    report says so; In Place (keys into the source) refuses, naming it."""
    from foot_lock.adapters import action_compat, root_motion
    from foot_lock.adapters.errors import AdapterError

    obj, labels = in_place_walk
    source = obj.animation_data.action
    fcurve = action_compat.find_fcurve(action_compat.channel_bag(obj, source), 'pose.bones["Hips"].location', 1)
    fcurve.modifiers.new("NOISE").strength = 0.02
    obj.foot_lock.in_place = True
    with pytest.raises(AdapterError, match=r"In Place would key curves .*location\[1\]' \(Noise\)"):
        root_motion.root_motion_from_feet(obj, addon.context.scene)
    assert obj.animation_data.action == source and len(addon.data.actions) == 1
    obj.foot_lock.in_place = False
    outcome = root_motion.root_motion_from_feet(obj, addon.context.scene)
    (warning,) = outcome.warnings
    assert "location[1]' (Noise) are baked into the keys of 'in_place.rootmotion'" in warning
    assert [m.type for m in fcurve.modifiers] == ["NOISE"]
    fixed = action_compat.find_fcurve(action_compat.channel_bag(obj, outcome.action), 'pose.bones["Hips"].location', 1)
    assert not len(fixed.modifiers)
    assert toe_slide(obj, labels, addon) <= 1.0


def test_root_motion_onto_the_object(addon, in_place_walk):
    obj, labels = in_place_walk
    assert addon.ops.foot_lock.root_motion_from_feet(onto_object=True) == {"FINISHED"}
    scene = addon.context.scene
    start, end = (round(f) for f in obj.animation_data.action.frame_range)
    toes = []
    for frame in range(start, end + 1):  # the object's motion: what Blender shows, frame by frame
        scene.frame_set(frame)
        toes.append([np.array(obj.matrix_world @ obj.pose.bones[name].head) for name in leg_bones(obj, "toe")])
    assert slide_cm_s(np.array(toes), labels, scene.render.fps / scene.render.fps_base) <= 1.0


def test_remove_sliding_reports_an_in_place_walk_as_in_place(addon, in_place_walk):
    obj, _ = in_place_walk
    from foot_lock.adapters import jobs

    outcome = jobs.remove_sliding(obj, addon.context.scene)
    assert len(outcome.result.warnings) == 1
    assert "in place" in outcome.result.warnings[0]
    assert "no foot contacts" not in outcome.result.warnings[0]


def test_a_clip_whose_feet_are_seldom_found_planted_gets_no_travel(addon):
    """The glTF fox's Run (a gallop in place, 28 frames at 24 fps): its feet are found
    planted on 12% of its frames on average, and the travel taken from those few frames sent
    the fox backwards (each rerun further), or, one foot found on 21% of them, forwards an
    eighth of the way its feet slide back. It is refused, saying why, and nothing is made;
    its Walk, whose feet are found planted, travels the way it faces."""
    from pathlib import Path

    from foot_lock.adapters import action_compat

    addon.ops.import_scene.gltf(filepath=str(Path(__file__).parent / "data" / "assets" / "fox.glb"))
    fox = addon.data.objects["root"]
    addon.context.view_layer.objects.active = fox
    run, walk = (next(a for a in addon.data.actions if a.name.startswith(name)) for name in ("Run", "Walk"))
    action_compat.assign_action(fox, run)
    before = sorted(addon.data.actions.keys())
    with pytest.raises(RuntimeError, match="the feet are found planted on 12% of the frames on average"):
        addon.ops.foot_lock.root_motion_from_feet()
    assert sorted(addon.data.actions.keys()) == before and fox.animation_data.action == run
    action_compat.assign_action(fox, walk)
    assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
    head = fox.pose.bones["b_Head_05"].head - fox.pose.bones["b_Spine01_02"].head  # the way the fox faces
    frames = [round(frame) for frame in fox.animation_data.action.frame_range]
    hips = []
    for frame in frames:
        addon.context.scene.frame_set(frame)
        hips.append(np.array(fox.matrix_world @ fox.pose.bones[fox.foot_lock.pelvis].head))
    travel = hips[1] - hips[0]
    assert np.dot(travel[:2], np.array(fox.matrix_world.to_3x3() @ head)[:2]) > 0.0


def test_remove_sliding_on_the_root_motion_of_its_own_result_fixes_the_travelling_clip(addon, in_place_walk):
    """The path Remove Foot Sliding recommends for an in-place walk: fixed first (it says the
    clip walks in place), Root Motion from Feet on that result, then fixed again. The root
    motion result, a copy of the '.footlock' one, carried its record of being made from the
    in-place walk: the last fix went back there, and the travel was lost."""
    obj, _ = in_place_walk
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
    assert obj.animation_data.action.name == "in_place.footlock.rootmotion"
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    fixed = obj.animation_data.action
    assert fixed.name == "in_place.footlock.rootmotion.footlock"
    hips = world_joints(obj, ["Hips"], fixed)[:, 0]
    assert np.linalg.norm(hips[-1, :2] - hips[0, :2]) > 3.0  # metres: it still goes somewhere


def hips_keys(obj, action):
    from foot_lock.adapters import action_compat

    bag = action_compat.channel_bag(obj, action)
    return np.array([[tuple(key.co) for key in action_compat.find_fcurve(bag, 'pose.bones["Hips"].location', axis)
                      .keyframe_points] for axis in range(3)])


def test_root_motion_run_again_makes_its_own_result_again(addon, in_place_walk):
    """Run again from the in-place walk, Root Motion from Feet refreshes its untouched
    'in_place.rootmotion' (it piled up '.rootmotion.001' copies); run on that result, it
    finds the travel again from the walk (it made 'in_place.rootmotion.rootmotion' from the
    clip already travelling). A result an animator changed is kept, and said so."""
    obj, _ = in_place_walk
    source = obj.animation_data.action
    assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
    travel = hips_keys(obj, obj.animation_data.action)
    for played in (obj.animation_data.action, source):
        obj.animation_data.action = played
        assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
        result = obj.animation_data.action
        assert result.name == "in_place.rootmotion"
        assert sorted(addon.data.actions.keys()) == ["in_place", "in_place.rootmotion"]
        np.testing.assert_allclose(hips_keys(obj, result), travel, atol=1e-5)
    from foot_lock.adapters import action_compat, root_motion

    action_compat.find_fcurve(action_compat.channel_bag(obj, result), 'pose.bones["Hips"].location', 2) \
        .keyframe_points[5].co[1] += 0.01  # the animator's polish
    outcome = root_motion.root_motion_from_feet(obj, addon.context.scene)
    assert outcome.action.name == "in_place.rootmotion.001" and result.use_fake_user
    assert outcome.warnings == ["'in_place.rootmotion' was changed since Foot Lock made it: kept as it is, the new "
                                "fix is 'in_place.rootmotion.001'"]


@pytest.mark.parametrize("size", [1.0, 0.1])  # an adult; a figurine whose whole walk goes 36 cm
def test_root_motion_on_a_clip_that_travels_already_says_its_travel_was_found_again(addon, in_place_walk, clips_dir,
                                                                                    size):
    """The CMU walk travels by itself: Root Motion from Feet finds its travel again from its
    planted feet (3.58 m became 3.44 m, without a word). It says so, by how far the root
    went in the character's leg lengths, whatever its size; an in-place walk (its root
    sways a third of a metre, first frame to last) gets no such warning."""
    from foot_lock.adapters import root_motion

    obj, _ = in_place_walk
    assert root_motion.root_motion_from_feet(obj, addon.context.scene).warnings == []
    addon.ops.import_anim.bvh(filepath=str(clips_dir / "cmu_07_01.bvh"), global_scale=CMU_TO_METRES * size,
                              update_scene_fps=True)
    outcome = root_motion.root_motion_from_feet(addon.context.active_object, addon.context.scene)
    assert outcome.travel_before == pytest.approx(3.58 * size, abs=0.01)
    (warning,) = outcome.warnings
    assert warning.startswith(f"the clip already travelled {outcome.travel_before:.2f} m")
    assert f"now travels {outcome.travel_after:.2f} m" in warning


def test_root_motion_goes_onto_the_root_bone_a_game_rig_has_above_its_pelvis(addon, in_place_walk):
    """A game rig (Unreal's mannequin, MotionBuilder's Reference) carries its skeleton on a
    root bone at the origin, and engines take the clip's root motion from that bone: the
    travel is keyed there (along its own rest axes, here turned to stand up), the pelvis and
    every other channel as they were."""
    from foot_lock.adapters import action_compat, root_motion

    obj, labels = in_place_walk
    addon.ops.object.mode_set(mode="EDIT")
    root = obj.data.edit_bones.new("root")
    root.head, root.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 0.2)  # its Y axis up: rest axes not the armature's
    obj.data.edit_bones["Hips"].parent = root
    addon.ops.object.mode_set(mode="POSE")
    source = obj.animation_data.action
    before = toe_slide(obj, labels, addon)

    outcome = root_motion.root_motion_from_feet(obj, addon.context.scene)  # what the operator runs
    assert "keyed onto 'root'" in root_motion.summary(outcome)
    fixed = obj.animation_data.action
    assert fixed == outcome.action and fixed.name == source.name + ".rootmotion"
    assert before > 50.0 and toe_slide(obj, labels, addon) <= 1.0
    travelled = world_joints(obj, ["root"], fixed)[:, 0]
    assert np.linalg.norm(travelled[-1, :2] - travelled[0, :2]) > 3.0  # metres
    assert abs(travelled[:, 2]).max() < 0.05  # along the ground: its location keyed in its own axes
    kept = action_compat.fcurve_table(action_compat.channel_bag(obj, source))
    curves = action_compat.fcurve_table(action_compat.channel_bag(obj, fixed))
    assert set(curves) - set(kept) == {('pose.bones["root"].location', axis) for axis in range(3)}
    for channel, fcurve in kept.items():
        assert [tuple(key.co) for key in curves[channel].keyframe_points] == [tuple(key.co) for key in fcurve.keyframe_points]
