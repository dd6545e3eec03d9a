"""The add-on in real Blender: operators on shared clips, quality targets, bad input."""

import itertools

import numpy as np
import pytest
from blender_scenes import (
    import_clip,
    leg_bones,
    reference_labels,
    slide_cm_s,
    world_joints,
    write_sliding_bvh,
)
from clip_scenarios import f1_score

pytestmark = pytest.mark.blender


@pytest.fixture
def addon(blender):
    import foot_lock

    foot_lock.register()
    yield blender
    foot_lock.unregister()


def contact_curve(obj, action, bone, frames):
    from foot_lock.adapters import armature

    return armature.read_contact_curve(obj, action, bone, frames)


def test_detect_legs_finds_both_cmu_legs(addon, clips_dir):
    obj = import_clip(addon, clips_dir / "cmu_131_01.bvh")
    assert addon.ops.foot_lock.detect_legs() == {"FINISHED"}
    settings = obj.foot_lock
    assert settings.pelvis == "Hips"
    legs = {leg.name: (leg.thigh, leg.shin, leg.foot, leg.toe) for leg in settings.legs}
    assert legs == {
        "left": ("LeftHip", "LeftKnee", "LeftAnkle", "LeftToe"),
        "right": ("RightHip", "RightKnee", "RightAnkle", "RightToe"),
    }


def test_detect_contacts_keys_readable_constant_curves_and_keeps_edits(addon, clips_dir):
    obj = import_clip(addon, clips_dir / "cmu_07_01.bvh")
    assert addon.ops.foot_lock.detect_contacts() == {"FINISHED"}
    action = obj.animation_data.action
    from foot_lock.adapters import action_compat

    curves = [fc for fc in action_compat.iter_fcurves(obj, action) if fc.data_path.endswith('["foot_contact"]')]
    assert len(curves) == 2
    for fcurve in curves:
        assert {key.interpolation for key in fcurve.keyframe_points} == {"CONSTANT"}
        values = [key.co[1] for key in fcurve.keyframe_points]
        assert all(a != b for a, b in itertools.pairwise(values))  # a key only where the label changes
        assert len(values) < 20

    toe = leg_bones(obj, "toe")[0]
    frames = np.arange(1, 318)
    edited = np.zeros(len(frames))
    from foot_lock.adapters import armature

    armature.write_contact_curve(obj, action, toe, frames, edited)
    addon.ops.foot_lock.detect_contacts()
    assert np.all(contact_curve(obj, action, toe, frames) == 0.0)  # the animator's edit is kept
    obj.foot_lock.overwrite_contacts = True
    addon.ops.foot_lock.detect_contacts()
    assert contact_curve(obj, action, toe, frames).max() == 1.0


@pytest.fixture(scope="module")
def baked_scenarios(tmp_path_factory, clips_dir):
    """cmu_07_01 as recorded and with root motion x0.75 / x1.25, each imported and baked."""
    import bpy
    import foot_lock

    source = clips_dir / "cmu_07_01.bvh"
    reference = reference_labels(source)
    scenarios = {}
    for scale in (1.0, 0.75, 1.25):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        foot_lock.register()
        try:
            path = write_sliding_bvh(source, tmp_path_factory.mktemp("clips") / f"walk_{scale}.bvh", scale)
            obj = import_clip(bpy, path)
            source_action = obj.animation_data.action
            assert bpy.ops.foot_lock.remove_sliding() == {"FINISHED"}
            legs = list(obj.foot_lock.legs)
            toes = [leg.toe for leg in legs]
            contacts = np.array([reference[leg.name] for leg in legs])
            frames = np.arange(1, contacts.shape[1] + 1)
            scenarios[scale] = {
                "fps": bpy.context.scene.render.fps / bpy.context.scene.render.fps_base,
                "reference": contacts,
                "found": np.array([contact_curve(obj, source_action, t, frames) for t in toes]),
                "toes_before": world_joints(obj, toes, source_action),
                "toes_after": world_joints(obj, toes),
                "pelvis_before": world_joints(obj, ["Hips"], source_action)[:, 0],
                "pelvis_after": world_joints(obj, ["Hips"])[:, 0],
                "ankles_before": world_joints(obj, leg_bones(obj, "foot"), source_action),
                "ankles_after": world_joints(obj, leg_bones(obj, "foot")),
                "hips_before": world_joints(obj, leg_bones(obj, "thigh"), source_action),
                "hips_after": world_joints(obj, leg_bones(obj, "thigh")),
                "knees": world_joints(obj, leg_bones(obj, "shin"), source_action),
                "action": obj.animation_data.action.name,
                "report": obj.foot_lock.report.slide_after,
            }
        finally:
            foot_lock.unregister()
    return scenarios


@pytest.mark.parametrize(("scale", "limit"), [(1.0, 0.5), (0.75, 1.0), (1.25, 1.5)])
def test_baked_toe_slide_meets_target(baked_scenarios, scale, limit):
    s = baked_scenarios[scale]
    assert s["action"] == f"walk_{scale}.footlock"
    assert slide_cm_s(s["toes_before"], s["reference"], s["fps"]) > 3.0
    assert slide_cm_s(s["toes_after"], s["reference"], s["fps"]) <= limit


@pytest.mark.parametrize(("scale", "limit"), [(1.0, 1.0), (0.75, 4.0), (1.25, 4.0)])
def test_pelvis_stays_close_to_the_input(baked_scenarios, scale, limit):
    s = baked_scenarios[scale]
    deviation = np.linalg.norm(s["pelvis_after"] - s["pelvis_before"], axis=-1).mean()
    assert 100.0 * deviation <= limit


@pytest.mark.parametrize("scale", [1.0, 0.75, 1.25])
def test_no_pops_no_extra_straight_legs_nothing_under_ground(baked_scenarios, scale):
    s = baked_scenarios[scale]
    fps = s["fps"]

    def accel_p99(points):
        return np.percentile(np.linalg.norm(np.diff(points, n=2, axis=0), axis=-1) * fps * fps, 99)

    assert accel_p99(s["ankles_after"]) <= 1.5 * accel_p99(s["ankles_before"])
    bones = (np.linalg.norm(s["knees"] - s["hips_before"], axis=-1)
             + np.linalg.norm(s["ankles_before"] - s["knees"], axis=-1)).min(axis=0)

    def straight(hips, ankles):
        return np.sum(np.linalg.norm(ankles - hips, axis=-1) >= 0.995 * bones)

    assert straight(s["hips_after"], s["ankles_after"]) <= straight(s["hips_before"], s["ankles_before"])
    assert s["toes_after"][..., 2].min() >= s["toes_before"][..., 2].min() - 1e-4


@pytest.mark.parametrize("scale", [0.75, 1.25])
def test_contact_curves_on_sliding_input_match_original_contacts(baked_scenarios, scale):
    s = baked_scenarios[scale]
    assert f1_score(s["found"], s["reference"]) >= 0.9
