"""Detect Legs on glTF characters imported by Blender's own importer."""

from pathlib import Path

import pytest

pytest.importorskip("bpy")

from test_legs import FOX_LEGS

pytestmark = pytest.mark.blender

ASSETS = Path(__file__).parent / "data" / "assets"


def import_gltf(bpy, name):
    bpy.ops.import_scene.gltf(filepath=str(ASSETS / name))
    armature = next(obj for obj in bpy.context.scene.objects if obj.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature
    return armature


def test_detect_legs_finds_the_four_legs_of_the_fox(addon):
    obj = import_gltf(addon, "fox.glb")
    assert addon.ops.foot_lock.detect_legs() == {"FINISHED"}
    settings = obj.foot_lock
    assert settings.pelvis == "b_Hip_01"
    found = {leg.name: (leg.thigh, leg.shin, leg.foot, leg.toe or None) for leg in settings.legs}
    assert found == FOX_LEGS


def test_detect_legs_on_a_rig_without_feet_says_so(addon):
    obj = import_gltf(addon, "kenney_mini_character-male-a.glb")
    from foot_lock.adapters import jobs
    from foot_lock.solvers.leg_detection import LegDetectionError

    with pytest.raises(LegDetectionError, match=r"'leg-left', 'leg-right' look like legs.*no foot to lock"):
        jobs.detect_leg_bones(obj)
    with pytest.raises(RuntimeError, match="no foot to lock"):  # the operator's error report
        addon.ops.foot_lock.detect_legs()
    assert len(obj.foot_lock.legs) == 0
