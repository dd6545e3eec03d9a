"""The command line through Blender: .blend, FBX and glTF in and out, a folder batch, the demo."""

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from blender_scenes import import_clip, reference_labels_by_leg, slide_cm_s, world_joints, write_sliding_bvh
from cli_helpers import run_python, toe_slide_on_reference
from clip_scenarios import CMU_TO_METRES
from foot_lock.solvers import bvh

pytestmark = pytest.mark.blender

TOES = ["LeftToeBase", "RightToeBase"]


@pytest.fixture(scope="module")
def reference(walk):
    """The unscaled walk's contacts, (legs, frames), left leg first."""
    labels = reference_labels_by_leg(walk)
    return np.array([labels["left"], labels["right"]])


def fps(bpy):
    return bpy.context.scene.render.fps / bpy.context.scene.render.fps_base


def cli(*argv):
    from foot_lock.cli import main

    return main([str(arg) for arg in argv])


def save_blend(bpy, path, *clips):
    """A .blend holding each clip imported as an armature; returns the path."""
    for clip in clips:
        import_clip(bpy, clip)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


# --- .blend -----------------------------------------------------------------------------


def test_blend_in_and_out_keeps_the_original_and_plays_the_fixed_action(blender, tmp_path, sliding, reference):
    bpy = blender
    source = save_blend(bpy, tmp_path / "walk.blend", sliding)
    fixed = tmp_path / "out" / "walk_fixed.blend"
    assert cli("remove-sliding", source, "-o", fixed, "--report", tmp_path / "report.json") == 0

    bpy.ops.wm.open_mainfile(filepath=str(fixed))
    obj = bpy.data.objects["walk_sliding"]
    assert obj.animation_data.action.name == "walk_sliding.footlock"
    original = bpy.data.actions["walk_sliding"]
    assert slide_cm_s(world_joints(obj, TOES, original), reference, fps(bpy)) > 3.0
    assert slide_cm_s(world_joints(obj, TOES), reference, fps(bpy)) <= 1.5
    (clip,) = json.loads((tmp_path / "report.json").read_text())["files"][0]["clips"]
    assert (clip["armature"], clip["action"], clip["output_action"]) == ("walk_sliding", "walk_sliding", "walk_sliding.footlock")
    assert clip["metres_per_unit"] == 1.0 and clip["after"]["toe_slide_cm_s"] < 1.0
    assert clip["motion_source"] == "keys"  # a plain keyed walk: read straight from its curves


def test_a_blend_fixed_before_is_fixed_again_from_its_original(blender, tmp_path, walk, sliding, reference):
    """The output fixed again (a batch run twice, or over its own outputs): each armature's
    result is refreshed from its original, as the button does, and the report has a clip per
    armature, not an error that the result it played had been removed. The two armatures
    share their bones' names, and neither plays its original any more: each original is
    still its armature's (it was kept, unfixed, as one "both animate alike")."""
    bpy = blender
    first = tmp_path / "first.blend"
    assert cli("remove-sliding", save_blend(bpy, tmp_path / "two.blend", walk, sliding), "-o", first) == 0
    for options in ((), ("--all-actions",)):
        again, report = tmp_path / "again.blend", tmp_path / "again.json"
        assert cli("remove-sliding", first, "-o", again, "--report", report, *options) == 0
        clips = json.loads(report.read_text())["files"][0]["clips"]
        assert sorted((clip["armature"], clip["output_action"]) for clip in clips) == [
            ("cmu_07_01", "cmu_07_01.footlock"), ("walk_sliding", "walk_sliding.footlock")]
        assert all("kept" not in clip and clip["after"]["toe_slide_cm_s"] < 1.0 for clip in clips)
        bpy.ops.wm.open_mainfile(filepath=str(again))
        assert sorted(bpy.data.actions.keys()) == [
            "cmu_07_01", "cmu_07_01.footlock", "walk_sliding", "walk_sliding.footlock"]
        obj = bpy.data.objects["walk_sliding"]
        assert obj.animation_data.action.name == "walk_sliding.footlock"
        assert slide_cm_s(world_joints(obj, TOES), reference, fps(bpy)) <= 1.5


def test_a_blend_whose_armature_plays_only_nla_strips_gets_them_baked_and_fixed(blender, tmp_path, clips_dir):
    from viewport_scenes import nla_walk

    obj, _, _ = nla_walk(blender, clips_dir)
    name = obj.name
    source, fixed = tmp_path / "nla.blend", tmp_path / "nla_fixed.blend"
    blender.ops.wm.save_as_mainfile(filepath=str(source))
    assert cli("remove-sliding", source, "-o", fixed, "--report", tmp_path / "report.json") == 0
    (clip,) = json.loads((tmp_path / "report.json").read_text())["files"][0]["clips"]
    assert (clip["action"], clip["motion_source"]) == ("(NLA)", "NLA")
    assert clip["before"]["toe_slide_cm_s"] > 3.0 and clip["after"]["toe_slide_cm_s"] < 1.0
    blender.ops.wm.open_mainfile(filepath=str(fixed))
    anim = blender.data.objects[name].animation_data
    assert anim.action.name == clip["output_action"]  # the baked result plays ...
    assert [track.mute for track in anim.nla_tracks] == [True]  # ... and the strip it replaces is kept, muted


def test_all_actions_of_a_blend_whose_nla_was_baked_say_which_action_kept_the_name(blender, tmp_path, clips_dir,
                                                                                    capsys):
    """Fixed once, the NLA playback of the strip's action 'cmu_07_01' is baked to
    'cmu_07_01.footlock'. With --all-actions the action itself is fixed again, on its own
    frames: a fix of another clip than the bake, so the bake keeps the name and the fix is
    'cmu_07_01.footlock.001', which the line and the report said nothing about."""
    from viewport_scenes import nla_walk

    nla_walk(blender, clips_dir)
    source, fixed, again = tmp_path / "nla.blend", tmp_path / "nla_fixed.blend", tmp_path / "again.blend"
    blender.ops.wm.save_as_mainfile(filepath=str(source))
    assert cli("remove-sliding", source, "-o", fixed) == 0
    capsys.readouterr()
    assert cli("remove-sliding", fixed, "-o", again, "--all-actions", "--report", tmp_path / "report.json") == 0
    (clip,) = json.loads((tmp_path / "report.json").read_text())["files"][0]["clips"]
    assert (clip["action"], clip["output_action"]) == ("cmu_07_01", "cmu_07_01.footlock.001")
    note = "'cmu_07_01.footlock' kept its name: it is Foot Lock's bake of the NLA track 'Walk'"
    assert clip["note"] == note
    assert f"[note: {note}]" in capsys.readouterr().out


def test_settings_stored_in_a_blend_hold_unless_a_flag_overrides_them(blender, tmp_path, sliding):
    import foot_lock

    bpy = blender
    foot_lock.register()
    try:
        import_clip(bpy, sliding).foot_lock.in_place = True
        source = tmp_path / "in_place.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(source))
    finally:
        foot_lock.unregister()
    assert cli("remove-sliding", source, "-o", tmp_path / "a.blend") == 0
    assert cli("remove-sliding", source, "-o", tmp_path / "b.blend", "--no-in-place") == 0
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "a.blend"))
    assert bpy.data.actions.keys() == ["walk_sliding"]  # fixed in place, as stored
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "b.blend"))
    assert sorted(bpy.data.actions.keys()) == ["walk_sliding", "walk_sliding.footlock"]


def test_edited_contact_curves_are_obeyed_unless_overwrite_contacts(blender, tmp_path, sliding):
    import foot_lock
    from foot_lock.adapters import armature

    bpy = blender
    foot_lock.register()
    try:
        obj = import_clip(bpy, sliding)
        bpy.ops.foot_lock.detect_contacts()
        toe = next(leg.toe for leg in obj.foot_lock.legs if leg.name == "left")  # that foot never plants now
        armature.write_contact_curve(obj, obj.animation_data.action, toe, np.arange(1, 318), np.zeros(317), stamp=False)  # keyed by hand
        source = tmp_path / "edited.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(source))
    finally:
        foot_lock.unregister()

    def left_toe_contact_frames(*options):
        report = tmp_path / "report.json"
        assert cli("remove-sliding", source, "-o", tmp_path / "out.blend", "--report", report, *options) == 0
        clip = json.loads(report.read_text())["files"][0]["clips"][0]
        return sum(last - first + 1 for first, last in clip["contacts"]["left"]["toe_ranges"]), clip["contacts_obeyed"]

    assert left_toe_contact_frames() == (0, ["left toe"])
    frames, obeyed = left_toe_contact_frames("--overwrite-contacts")
    assert frames > 50 and obeyed == []


def test_armatures_and_actions_are_chosen_by_name_or_all(blender, tmp_path, sliding, walk, capsys):
    """The two armatures share their bones' names (as two Mixamo characters do), so every
    action animates both: each is fixed on the armature that plays it. Solved on both, the
    second fix replaced the first (an FBX or glTF fixed in place came out sliding more than
    it went in). An action neither plays is fixed on the armature named, else kept."""
    bpy = blender
    save_blend(bpy, tmp_path / "two.blend", walk, sliding)
    bpy.data.actions["walk_sliding"].copy().name = "take"
    bpy.data.actions["take"].use_fake_user = True
    source = tmp_path / "three_actions.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))

    def fixed_clips(*options):
        report = tmp_path / "report.json"
        assert cli("remove-sliding", source, "-o", tmp_path / "out.blend", "--report", report, *options) == 0
        return sorted((c["armature"], c["action"], "kept" in c) for c in json.loads(report.read_text())["files"][0]["clips"])

    assert fixed_clips() == [("cmu_07_01", "cmu_07_01", False), ("walk_sliding", "walk_sliding", False)]
    assert fixed_clips("--armature", "walk_sliding") == [("walk_sliding", "walk_sliding", False)]
    assert fixed_clips("--armature", "cmu_07_01", "--action", "walk_sliding") == [("cmu_07_01", "walk_sliding", False)]
    assert fixed_clips("--all-actions") == [
        ("cmu_07_01", "cmu_07_01", False), ("cmu_07_01", "take", True), ("walk_sliding", "walk_sliding", False),
    ]
    assert fixed_clips("--all-actions", "--armature", "walk_sliding") == [
        ("walk_sliding", "take", False), ("walk_sliding", "walk_sliding", False),
    ]
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "out.blend"))
    assert bpy.data.objects["walk_sliding"].animation_data.action.name == "walk_sliding.footlock"
    capsys.readouterr()
    assert cli("remove-sliding", source, "-o", tmp_path / "none.blend", "--action", "take") == 1
    assert "'take' animates cmu_07_01 and walk_sliding alike and none of them plays it" in capsys.readouterr().out
    assert cli("remove-sliding", source, "-o", tmp_path / "none.blend", "--armature", "Nobody") == 1
    assert "no armature named 'Nobody'" in capsys.readouterr().out


# --- FBX and glTF -----------------------------------------------------------------------


def imported(bpy, path):
    """What Blender's importer makes of ``path``: the armature and what to compare."""
    from foot_lock.adapters.jobs import active_action, frame_range
    from foot_lock.cli.blender_files import load

    load(path, SimpleNamespace(bvh_unit_scale=None))
    (obj,) = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    return SimpleNamespace(
        bones=[(bone.name, bone.parent.name if bone.parent else None) for bone in obj.data.bones],
        actions=sorted(bpy.data.actions.keys()), frames=frame_range(active_action(obj)), fps=fps(bpy),
        toes=world_joints(obj, TOES),
        properties=_custom_properties(obj),
    )


def _custom_properties(obj):
    """The armature's custom properties, and its bones' and pose bones' by bone name."""
    def own(item):
        return {key: value for key, value in item.items() if not hasattr(value, "to_dict")}

    return {"object": own(obj), "bones": {bone.name: own(bone) for bone in obj.data.bones if own(bone)},
            "pose bones": {bone.name: own(bone) for bone in obj.pose.bones if own(bone)}}


@pytest.fixture(scope="module")
def exported(tmp_path_factory, sliding):
    """The sliding walk written by Blender's exporters with their defaults, as another tool might.

    In a subprocess: the bpy 4.2 wheel crashes at exit once its glTF exporter has run.
    """
    folder = tmp_path_factory.mktemp("exported")
    script = f"""
import os, sys, bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_anim.bvh(filepath={str(sliding)!r}, global_scale={CMU_TO_METRES}, update_scene_fps=True)
rig = bpy.context.active_object  # a studio's own properties, which a fix must carry over
rig["game_tag"], rig.data.bones["Hips"]["socket"], rig.pose.bones["LeftFoot"]["ik_weight"] = "hero", 1.5, 2
bpy.ops.export_scene.fbx(filepath={str(folder / "walk.fbx")!r}, use_custom_props=True)  # leaf bones, simplified
bpy.ops.export_scene.fbx(filepath={str(folder / "walk_zup.fbx")!r}, axis_up="Z", axis_forward="Y")  # as 3ds Max
bpy.ops.export_scene.gltf(filepath={str(folder / "walk.glb")!r}, export_format="GLB", export_extras=True)
bpy.ops.export_scene.gltf(filepath={str(folder / "walk.gltf")!r}, export_format="GLTF_SEPARATE", export_extras=True)
sys.stdout.flush()
os._exit(0)  # the exit crash of bpy 4.2 after a glTF export
"""
    result = run_python(["-c", script], cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


@pytest.mark.parametrize("suffix", [".fbx", ".glb", ".gltf"])
def test_fbx_and_gltf_round_trip_keeps_the_rig_and_the_takes_and_fixes_the_feet(
    blender, tmp_path, pythonpath, exported, reference, suffix
):
    source, fixed = exported / f"walk{suffix}", tmp_path / "out" / f"walk{suffix}"
    result = run_python(
        ["-m", "foot_lock", "remove-sliding", source, "-o", fixed],
        cwd=tmp_path, pythonpath=pythonpath,
    )
    assert result.returncode == 0, result.stdout + result.stderr  # 0, not a crash at exit

    before, after = imported(blender, source), imported(blender, fixed)
    assert after.bones == before.bones
    # The input's own custom properties, and none of Foot Lock's (its settings, the labels).
    assert after.properties == before.properties
    assert before.properties["object"] == {"game_tag": "hero"} and before.properties["bones"]["Hips"] == {"socket": 1.5}
    assert after.actions == before.actions  # the takes keep their names: fixed in place
    assert after.frames == before.frames == (1, 317)
    assert after.fps == pytest.approx(before.fps) and before.fps == pytest.approx(120.0, rel=1e-4)
    assert slide_cm_s(before.toes, reference, before.fps) > 3.0
    assert slide_cm_s(after.toes, reference, after.fps) <= 1.5


def test_an_fbx_comes_back_with_the_axes_it_declared(blender, tmp_path, pythonpath, exported):
    """Blender's importer turns a Z-up FBX into its own world and its exporter writes Y-up by
    default: the output declares the input's axes again, its motion in the world the same."""
    from foot_lock.cli.fbx_files import fbx_axes

    outputs = {}
    for name in ("walk", "walk_zup"):
        outputs[name] = tmp_path / f"{name}.fbx"
        result = run_python(["-m", "foot_lock", "remove-sliding", exported / f"{name}.fbx", "-o", outputs[name]],
                            cwd=tmp_path, pythonpath=pythonpath)
        assert result.returncode == 0, result.stdout + result.stderr
        assert fbx_axes(outputs[name]) == fbx_axes(exported / f"{name}.fbx")
    assert fbx_axes(outputs["walk_zup"]) == {"axis_up": "Z", "axis_forward": "Y"}
    assert fbx_axes(outputs["walk"]) == {"axis_up": "Y", "axis_forward": "-Z"}
    np.testing.assert_allclose(imported(blender, outputs["walk_zup"]).toes, imported(blender, outputs["walk"]).toes,
                               atol=1e-3)


def test_a_gltf_output_never_replaces_a_file_of_its_input(blender, tmp_path, pythonpath, exported):
    """``take.gltf`` reads its keys from ``walk.bin``; written as ``walk.gltf`` beside it, the
    output's own buffer would be ``walk.bin`` too and replaced the input's (which then played
    other data). Refused, naming the file; nothing written, the input as it was."""
    import shutil

    shutil.copy(exported / "walk.bin", tmp_path / "walk.bin")
    shutil.copy(exported / "walk.gltf", tmp_path / "take.gltf")
    inputs = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    result = run_python(["-m", "foot_lock", "remove-sliding", "take.gltf", "-o", "walk.gltf"],
                        cwd=tmp_path, pythonpath=pythonpath)
    assert result.returncode == 1
    assert "writing walk.gltf would replace walk.bin, a file of the input" in result.stdout + result.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == inputs


# --- a folder ---------------------------------------------------------------------------


def test_folder_batch_fixes_the_good_files_and_reports_the_bad_one(blender, tmp_path, pythonpath, sliding):
    source, out = tmp_path / "in", tmp_path / "out"
    (source / "sub").mkdir(parents=True)
    (source / "a.bvh").write_bytes(sliding.read_bytes())
    save_blend(blender, source / "sub" / "b.blend", sliding)
    (source / "broken.fbx").write_text("not an FBX file")
    result = run_python(
        ["-m", "foot_lock", "remove-sliding", source, "-o", out, "--jobs", "2", "--report", out / "report.json"],
        cwd=tmp_path, pythonpath=pythonpath,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    progress = [line for line in lines if re.match(r"\[\d/3\] ", line)]
    assert len(progress) == 3
    assert [line for line in progress if " FAILED " in line] == [
        next(line for line in progress if f"FAILED {source / 'broken.fbx'}:" in line)
    ]
    assert lines[-1].startswith("Foot Lock: 3 files, 2 fixed, 1 failed")
    assert (out / "a.bvh").is_file() and (out / "sub" / "b.blend").is_file()
    assert not (out / "broken.fbx").exists()

    report = json.loads((out / "report.json").read_text())
    assert report["summary"] == {"files": 3, "fixed": 2, "failed": [str(source / "broken.fbx")]}
    records = {record["input"]: record for record in report["files"]}
    assert records[str(source / "broken.fbx")]["error"]
    assert records[str(source / "sub" / "b.blend")]["clips"][0]["output_action"] == "walk_sliding.footlock"
    assert records[str(source / "a.bvh")]["clips"][0]["after"]["toe_slide_cm_s"] < 1.0


# --- the demo ---------------------------------------------------------------------------


def test_demo_writes_a_blend_and_a_bvh_that_load(blender, tmp_path, pythonpath, walk):
    result = run_python(
        ["-m", "foot_lock", "demo", "--output-dir", tmp_path / "demo"],
        cwd=tmp_path, pythonpath=pythonpath,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "toe_slide_cm_s" in result.stdout and "mocap.cs.cmu.edu" in result.stdout
    demo = tmp_path / "demo"
    # The sliding copy is the clips README's scenario, as the tests make it.
    expected = write_sliding_bvh(walk, tmp_path / "expected.bvh", 1.25)
    assert (demo / "cmu_07_01_sliding.bvh").read_bytes() == expected.read_bytes()
    assert bvh.read(demo / "cmu_07_01_fixed.bvh").values.shape == bvh.read(walk).values.shape
    assert toe_slide_on_reference(demo / "cmu_07_01_fixed.bvh", walk) <= 1.5

    blender.ops.wm.open_mainfile(filepath=str(demo / "cmu_07_01_fixed.blend"))
    obj = blender.data.objects["cmu_07_01_sliding"]
    assert obj.animation_data.action.name == "cmu_07_01_sliding.footlock"
    assert "cmu_07_01_sliding" in blender.data.actions


def test_the_demo_on_a_one_frame_clip_tells_what_it_kept(blender, tmp_path, capsys, walk):
    """A pose, not a motion: the BVH and the .blend keep it as it is, each said in a line
    (the .blend's figures, which a kept pose has none of, were a traceback)."""
    from foot_lock.cli import main

    header, motion = walk.read_text().split("MOTION", 1)
    lines = motion.strip().splitlines()
    pose = tmp_path / "pose.bvh"
    pose.write_text(f"{header}MOTION\nFrames: 1\n{lines[1]}\n{lines[2]}\n")
    assert main(["demo", "--clip", str(pose), "--output-dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert out.count("one frame (1): a pose, kept unchanged") == 2 and "FAILED" not in out
    assert "Open " not in out  # nothing fixed to play


# --- exits ------------------------------------------------------------------------------

EXITS_SCRIPT = """
import atexit, sys
import bpy
atexit.register(lambda: print("the interpreter shut down", flush=True))
# After a glTF export the bpy 4.2 wheel's own exit crashes (status 139): Blender in a state
# where only skipping the interpreter's shutdown keeps the status.
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.export_scene.gltf(filepath=sys.argv[1], export_format="GLB")
from foot_lock.cli import run
run(sys.argv[2:])
"""


@pytest.mark.parametrize(("argv", "status", "says"), [
    (["remove-sliding", "walk.bvh", "-o", "out.bvh", "--speed-threshold", "fast"], 2,
     "argument --speed-threshold: invalid float value: 'fast'"),  # a flag that only exists with Blender loaded
    (["remove-sliding", "--help"], 0, "--speed-threshold"),
])
def test_argparse_exits_with_blender_loaded_end_with_their_own_status(blender, tmp_path, pythonpath, argv, status, says):
    """A bad argument and ``--help`` exit as argparse says (2, 0), through the same way out
    as a run: Blender's exit (which can crash, 139 on 4.2 here) and the interpreter's
    shutdown skipped."""
    result = run_python(["-c", EXITS_SCRIPT, tmp_path / "empty.glb", *argv], cwd=tmp_path, pythonpath=pythonpath)
    assert result.returncode == status, result.stdout + result.stderr
    assert says in result.stdout + result.stderr
    assert "the interpreter shut down" not in result.stdout


# --- a .blend Blender cannot read -------------------------------------------------------


def test_a_compressed_blend_says_which_blender_saved_it(blender, tmp_path):
    from foot_lock.cli.blend_header import saved_by

    path = tmp_path / "compressed.blend"
    blender.ops.wm.read_factory_settings(use_empty=True)
    blender.ops.wm.save_as_mainfile(filepath=str(path), compress=True)
    assert path.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # Zstandard, as Blender 5.0 saves every file
    assert saved_by(path) == tuple(blender.app.version[:2])


def test_a_blend_from_a_newer_blender_is_said_to_be_so_not_damaged(blender, tmp_path, capsys):
    """A 5.0 file opened by 4.2 fails with Blender's own "not a blend file"; the command line
    reads the header and says which Blender saved it (here a header claiming 9.0). A file
    that is no .blend at all keeps Blender's message. Neither writes anything."""
    newer, broken = tmp_path / "newer.blend", tmp_path / "broken.blend"
    newer.write_bytes(b"BLENDER17-01v0900REND" + bytes(256))
    broken.write_bytes(b"a text file named .blend")
    for source in (newer, broken):
        assert cli("remove-sliding", source, "-o", tmp_path / f"{source.stem}_fixed.blend") == 1
    said = capsys.readouterr()
    this = "{}.{}".format(*blender.app.version[:2])
    assert f"newer.blend was saved by Blender 9.0, newer than this Blender ({this})" in said.out + said.err
    assert "broken.blend was saved by" not in said.out + said.err
    assert "broken.blend" in said.out + said.err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["broken.blend", "newer.blend"]
