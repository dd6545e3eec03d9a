"""Remove Foot Sliding on control rigs in real Blender: Rigify's generated Human rig and a
hand-made two-bone IK rig, walking the CMU walk through their controls with the planted
feet drifting about 25 cm/s."""

import json

import numpy as np
import pytest

pytest.importorskip("bpy")

from blender_scenes import reference_labels_by_leg, slide_cm_s
from control_rig_scenes import (
    HAND_MADE_WALK,
    RIGIFY_WALK,
    hand_made_rig,
    key_fk_like_ik,
    key_walk,
    open_rigify_rig,
    save_rigify_rig,
    world_heads,
)

pytestmark = pytest.mark.blender

DRIFT = 1.12  # root motion scale: the planted feet drift about 25 cm/s
LEGS = ("left", "right")


@pytest.fixture(scope="session")
def rigify_file(tmp_path_factory):
    """Rigify's Human rig, generated once per session and saved (generating takes seconds)."""
    return save_rigify_rig(tmp_path_factory.mktemp("rigify") / "rigify_human.blend")


@pytest.fixture
def clip(clips_dir):
    return clips_dir / "cmu_07_01.bvh"


@pytest.fixture
def rigify_walk(addon, rigify_file, clip):
    """The Rigify rig walking on its IK controls, the active object."""
    rig = open_rigify_rig(addon, rigify_file)
    key_walk(addon, rig, RIGIFY_WALK, clip, DRIFT)
    return rig


def planted(clip):
    """(2, F) frames where the original clip's toes are planted (the clips README's labels)."""
    labels = reference_labels_by_leg(clip)
    return np.array([labels[leg] for leg in LEGS], dtype=bool)


def toe_slide(bpy, rig, walk, contacts):
    toes = world_heads(bpy, rig, [walk.toes[leg] for leg in LEGS], np.arange(1, contacts.shape[1] + 1))
    return slide_cm_s(toes, contacts, bpy.context.scene.render.fps)


def key_contacts(rig, feet, contacts):
    """The animator's foot_contact curves on the foot controls ``feet`` (leg -> bone)."""
    from foot_lock.adapters import armature

    frames = np.arange(1, contacts.shape[1] + 1)
    for leg, row in zip(LEGS, contacts):
        armature.write_contact_curve(rig, rig.animation_data.action, feet[leg], frames, row.astype(float), stamp=False)


def keyed_curves(rig, action):
    """{(data path, index): (keys (n, 2))} of an action on the rig."""
    from foot_lock.adapters import action_compat as compat

    curves = {}
    for fcurve in compat.iter_fcurves(rig, action):
        keys = np.empty(2 * len(fcurve.keyframe_points))
        fcurve.keyframe_points.foreach_get("co", keys)
        curves[(fcurve.data_path, fcurve.array_index)] = keys.reshape(-1, 2)
    return curves


def keyed_bones(curves):
    return {path.split('"')[1] for path, _ in curves if path.startswith("pose.bones")}


def changed_bones(before, after):
    """Bones with a curve added, removed or changed between two actions' curves."""
    changed = {key for key in before if key not in after or not np.array_equal(before[key], after[key])}
    return keyed_bones(changed | (after.keys() - before.keys()))


# --- Rigify ---------------------------------------------------------------------------------


def test_rigify_walk_is_fixed_on_its_controls_in_one_click(addon, rigify_walk, clip):
    rig, contacts = rigify_walk, planted(clip)
    source = rig.animation_data.action
    original = keyed_curves(rig, source)
    before = toe_slide(addon, rig, RIGIFY_WALK, contacts)
    assert 20.0 < before < 30.0

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}

    fixed = rig.animation_data.action
    assert fixed.name == "walk.footlock"
    kept = keyed_curves(rig, source)  # the original gains only the contact curves it locked
    assert all(path.endswith('["foot_contact"]') for path, _ in kept.keys() - original.keys())
    assert all(np.array_equal(kept[key], keys) for key, keys in original.items())
    curves = keyed_curves(rig, fixed)
    changed = changed_bones(original, curves)
    assert changed == {"foot_ik.L", "foot_ik.R", "toe_ik.L", "toe_ik.R", "torso"}
    assert not any(bone.startswith(("DEF-", "ORG-", "MCH-")) for bone in keyed_bones(curves))
    assert {f'pose.bones["foot_ik.{side}"]["foot_contact"]' for side in "LR"} <= {path for path, _ in curves}
    report = rig.foot_lock.report
    assert report.controls == "Rigify" and 0.0 <= report.control_residual <= 2.0
    assert report.source == "evaluated scene"  # the deformation bones as the rig moves them, not the keys
    assert toe_slide(addon, rig, RIGIFY_WALK, contacts) <= 1.0  # over the original clip's planted frames


def in_place_copy(clip, folder):
    """The walk made to walk in place (its smoothed root travel taken away), as a BVH."""
    from clip_scenarios import CMU_TO_METRES, in_place
    from foot_lock.solvers import bvh

    parsed = bvh.read(clip)
    _, motion = bvh.to_motion(parsed, CMU_TO_METRES)
    still = folder / "walk_in_place.bvh"
    bvh.write(still, parsed, in_place(motion), CMU_TO_METRES, location_joints=[0])
    return still


@pytest.mark.parametrize("onto_object", [False, True])
def test_rigify_walking_in_place_gets_root_motion_on_its_root_or_its_object(addon, rigify_file, clip, tmp_path,
                                                                            onto_object):
    """The walk in place keyed on Rigify's controls (its feet gliding back): Root Motion from
    Feet, which Remove Foot Sliding recommends there, keys the travel on the rig's ``root``
    control (the parents of its torso and IK controls follow it), or on the object; the feet
    then stand where the original walk planted them. It refused every control rig, naming a
    deform bone. Run again on its result, it made '.rootmotion.rootmotion' (onto the object,
    it refused: the result's object already travels)."""
    rig = open_rigify_rig(addon, rigify_file)
    source = key_walk(addon, rig, RIGIFY_WALK, in_place_copy(clip, tmp_path))
    contacts = planted(clip)
    original = keyed_curves(rig, source)
    assert toe_slide(addon, rig, RIGIFY_WALK, contacts) > 50.0

    for _ in range(2):  # run again on its result, it is made again from the walk, sampled as that plays
        assert addon.ops.foot_lock.root_motion_from_feet(onto_object=onto_object) == {"FINISHED"}
        result = rig.animation_data.action
        assert result.name == "walk.rootmotion" and changed_bones(original, keyed_curves(rig, source)) == set()
    curves = keyed_curves(rig, result)
    if onto_object:
        assert changed_bones(original, curves) == set() and ("location", 0) in curves
    else:
        assert changed_bones(original, curves) == {"root"} and ("location", 0) not in curves
    assert toe_slide(addon, rig, RIGIFY_WALK, contacts) <= 2.0


def test_a_hand_made_rig_walking_in_place_gets_root_motion_on_the_bone_carrying_its_controls(addon, clip, tmp_path):
    """Its body and foot controls hang from one root bone: the travel is keyed there."""
    rig = hand_made_walk(addon, in_place_copy(clip, tmp_path), stretch=0.1)
    original = keyed_curves(rig, rig.animation_data.action)
    contacts = planted(clip)
    assert toe_slide(addon, rig, HAND_MADE_WALK, contacts) > 50.0
    assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
    assert changed_bones(original, keyed_curves(rig, rig.animation_data.action)) == {"root"}
    assert toe_slide(addon, rig, HAND_MADE_WALK, contacts) <= 2.0


def test_rigify_obeys_contact_curves_on_the_foot_controls(addon, rigify_walk, clip):
    rig, contacts = rigify_walk, planted(clip)
    key_contacts(rig, RIGIFY_WALK.feet, contacts)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert toe_slide(addon, rig, RIGIFY_WALK, contacts) <= 1.0
    assert rig.foot_lock.report.control_residual <= 2.0


def test_rigify_switched_to_fk_keys_the_fk_controls(addon, rigify_walk, clip):
    rig, contacts = rigify_walk, planted(clip)
    key_fk_like_ik(addon, rig)
    key_contacts(rig, {"left": "foot_fk.L", "right": "foot_fk.R"}, contacts)  # the FK foot shows them
    original = keyed_curves(rig, rig.animation_data.action)
    assert toe_slide(addon, rig, RIGIFY_WALK, contacts) > 20.0  # FK plays the same drifting walk

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}

    changed = changed_bones(original, keyed_curves(rig, rig.animation_data.action))
    fk = {f"{name}_fk.{side}" for name in ("thigh", "shin", "foot", "toe") for side in "LR"}
    assert {"thigh_fk.L", "shin_fk.L", "foot_fk.L", "thigh_fk.R", "shin_fk.R", "foot_fk.R"} <= changed
    assert changed <= fk | {"torso"}
    assert toe_slide(addon, rig, RIGIFY_WALK, contacts) <= 1.0
    assert rig.foot_lock.report.control_residual <= 2.0


def test_rigify_switched_to_fk_by_a_script_is_read_as_it_stands_not_as_last_shown(addon, rigify_walk):
    """A script's ``pose_bone["IK_FK"] = 1.0`` tags nothing: stepping the frames, the depsgraph
    showed the IK leg its drivers last made while the fix keyed the FK controls, which then
    missed the pose solved by 18 cm (and the left foot slid three times as fast as before).
    Read afresh, the FK leg is what the controls are keyed to, and they reproduce it."""
    rig = rigify_walk
    addon.context.view_layer.update()  # the IK walk shown
    rig.pose.bones["thigh_parent.L"]["IK_FK"] = 1.0  # no update, as a script writes it

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert rig.foot_lock.report.control_residual <= 2.0


def test_rigify_switches_to_fk_and_back_after_the_fix(addon, rigify_walk, clip):
    rig = rigify_walk
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    frames = np.arange(40, 60)
    toes = [RIGIFY_WALK.toes[leg] for leg in LEGS]
    fixed = world_heads(addon, rig, toes, frames)
    switch = rig.pose.bones["thigh_parent.L"]
    switch["IK_FK"] = 1.0
    rig.update_tag()
    in_fk = world_heads(addon, rig, toes, frames)
    switch["IK_FK"] = 0.0
    rig.update_tag()
    assert np.abs(in_fk[:, 0] - fixed[:, 0]).max() > 0.05  # FK really took over the left leg
    np.testing.assert_allclose(world_heads(addon, rig, toes, frames), fixed, atol=1e-6)


def test_rigify_leg_blended_between_ik_and_fk_is_refused_before_anything_is_written(addon, rigify_walk):
    rig = rigify_walk
    rig.pose.bones["thigh_parent.R"]["IK_FK"] = 0.5
    actions = len(addon.data.actions)
    with pytest.raises(RuntimeError, match=r"leg 'right' is not fully in IK or FK .*thigh_parent\.R.* is 0\.5, "):
        addon.ops.foot_lock.remove_sliding()
    assert len(addon.data.actions) == actions and rig.animation_data.action.name == "walk"


def test_rigify_leg_switching_within_the_clip_is_refused_at_the_frame_it_switches(addon, rigify_walk):
    """FK (1) up to frame 44, IK (0) from 45: no frame is between the two, and the refusal
    names frame 45, where the switch happens, not the clip's first."""
    switch = rigify_walk.pose.bones["thigh_parent.L"]
    for frame, value in ((44, 1.0), (45, 0.0)):
        switch["IK_FK"] = value
        switch.keyframe_insert('["IK_FK"]', frame=frame)
    with pytest.raises(RuntimeError, match=r"leg 'left' .*thigh_parent\.L.* changes from 1 to 0 at frame 45\)"):
        addon.ops.foot_lock.remove_sliding()


# --- a rig of one's own, set up in the Legs panel ---------------------------------------------


def hand_made_walk(bpy, clip, stretch):
    rig = hand_made_rig(bpy)
    for bone in ("thigh", "shin"):
        for side in "LR":
            rig.pose.bones[f"{bone}.{side}"].ik_stretch = stretch
    key_walk(bpy, rig, HAND_MADE_WALK, clip, DRIFT)
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.foot_lock.detect_legs() == {"FINISHED"}
    for leg in rig.foot_lock.legs:  # the Legs panel: IK control per leg and the body control
        leg.ik_control = HAND_MADE_WALK.feet[leg.name]
    rig.foot_lock.body_control = HAND_MADE_WALK.body
    return rig


def test_hand_made_ik_rig_set_up_in_the_legs_panel(addon, clip):
    rig, contacts = hand_made_walk(addon, clip, stretch=0.1), planted(clip)
    key_contacts(rig, HAND_MADE_WALK.feet, contacts)
    original = keyed_curves(rig, rig.animation_data.action)
    assert toe_slide(addon, rig, HAND_MADE_WALK, contacts) > 20.0

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}

    assert changed_bones(original, keyed_curves(rig, rig.animation_data.action)) <= {
        "foot_ctrl.L", "foot_ctrl.R", "body"
    }
    assert toe_slide(addon, rig, HAND_MADE_WALK, contacts) <= 1.0
    report = rig.foot_lock.report
    assert report.controls == "Legs panel" and report.control_residual <= 2.0


def test_a_control_that_cannot_reach_is_named_with_its_frames(addon, clip):
    """Without IK stretch the legs cannot reach as far as the fix's soft reach lets them."""
    rig = hand_made_walk(addon, clip, stretch=0.0)
    rig.foot_lock.softening = 0.1
    from foot_lock.adapters import jobs

    outcome = jobs.remove_sliding(rig, addon.context.scene)
    warnings = [w for w in outcome.result.warnings if "cannot take leg" in w]
    assert warnings and all(("'foot_ctrl.L'" in w or "'foot_ctrl.R'" in w) and "on frames " in w for w in warnings)
    assert all(w.endswith("check its stretch limits, constraints and IK settings") for w in warnings)
    assert outcome.controls.residual_mm > 0.0


def test_a_leg_short_for_want_of_a_body_control_says_so(addon, clip):
    """IK controls picked but no Body Control: the pelvis the fix moves is not keyed, and a
    leg falls short of where the fix needs it. The warning blamed the leg's own stretch
    limits and IK settings; it names the missing body control."""
    from foot_lock.adapters import jobs

    rig = hand_made_walk(addon, clip, stretch=0.0)
    rig.foot_lock.body_control = ""
    outcome = jobs.remove_sliding(rig, addon.context.scene)
    warnings = [w for w in outcome.result.warnings if "cannot take leg" in w]
    assert warnings and all(w.endswith("no Body Control is picked, so the pelvis the fix moves is not keyed: pick "
                                       "the control that carries the hips in the Legs panel") for w in warnings)


def test_panel_controls_that_are_not_bones_are_refused(addon, clip):
    rig = hand_made_walk(addon, clip, stretch=0.1)
    rig.foot_lock.legs[0].ik_control = "no such bone"
    with pytest.raises(RuntimeError, match="IK control of leg 'left', 'no such bone', is not a bone"):
        addon.ops.foot_lock.remove_sliding()
    assert rig.animation_data.action.name == "walk"


def test_the_command_line_keys_the_controls_set_up_in_a_blend(blender, clip, tmp_path):
    import foot_lock
    from foot_lock.cli import main

    contacts = planted(clip)
    foot_lock.register()
    try:
        rig = hand_made_walk(blender, clip, stretch=0.1)
        key_contacts(rig, HAND_MADE_WALK.feet, contacts)
        source = tmp_path / "hand_made.blend"
        blender.ops.wm.save_as_mainfile(filepath=str(source))
    finally:
        foot_lock.unregister()
    fixed = tmp_path / "fixed.blend"
    report = tmp_path / "report.json"
    assert main(["remove-sliding", str(source), "-o", str(fixed), "--report", str(report)]) == 0
    (entry,) = json.loads(report.read_text())["files"][0]["clips"]
    assert 0.0 <= entry["after"]["control_residual_mm"] <= 2.0 and entry["motion_source"] == "evaluated scene"
    blender.ops.wm.open_mainfile(filepath=str(fixed))
    rig = blender.data.objects["Hand-made"]
    assert rig.animation_data.action.name == "walk.footlock"
    assert toe_slide(blender, rig, HAND_MADE_WALK, contacts) <= 1.0
