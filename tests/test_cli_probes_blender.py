"""Probes of the command line through Blender (issue 14): untrusted .blend files stay
inert, a hung driver is stopped by --timeout, glTF textures never collide, nothing that
is not a number is saved, every corrupt scene is one line, Blender 4.2 exits 0.
Every hostile file is built here.
"""

import json
import os
import re
import signal

import pytest
from blender_scenes import import_clip
from cli_helpers import run_python

pytestmark = pytest.mark.blender


def cli_run(argv, cwd, pythonpath):
    """``python -m foot_lock ARGV`` as a user runs it."""
    return run_python(["-m", "foot_lock", *argv], cwd=cwd, pythonpath=pythonpath)


def blend_with_driver(bpy, walk, path, expression):
    """A .blend of the walk beside an empty whose Python driver runs ``expression``.

    Blender evaluates a driver as soon as it is set, so a stand-in of the same length is
    saved and its bytes replaced in the uncompressed file: the expression never runs here.
    """
    import_clip(bpy, walk)
    prop = bpy.data.objects.new("prop", None)  # an empty beside the character: its drivers run with the scene's
    bpy.context.scene.collection.objects.link(prop)
    driver = prop.driver_add("location", 0).driver
    driver.type = "SCRIPTED"
    stand_in = "1" * len(expression)
    driver.expression = stand_in
    path.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(path), compress=False)
    data = path.read_bytes()
    assert data.count(stand_in.encode()) == 1
    path.write_bytes(data.replace(stand_in.encode(), expression.encode()))
    return path


def add_text_module(bpy, code):
    text = bpy.data.texts.new("startup_module.py")
    text.write(code)
    text.use_module = True  # registered when the file loads, if scripts may run


# --- untrusted files stay inert; Blender 4.2 exits 0 -------------------------------------


def test_an_untrusted_blend_runs_none_of_its_code_single_or_batch_and_exits_0(blender, tmp_path, walk, pythonpath):
    bpy = blender
    driver_marker, text_marker = tmp_path / "driver_ran", tmp_path / "text_ran"
    add_text_module(bpy, f"import pathlib\npathlib.Path({str(text_marker)!r}).mkdir()\n")
    source = blend_with_driver(bpy, walk, tmp_path / "in" / "untrusted.blend",
                               f"__import__('os').mkdir({str(driver_marker)!r}) or 0")
    (tmp_path / "in" / "walk.bvh").write_bytes(walk.read_bytes())

    single = cli_run(["remove-sliding", source, "-o", tmp_path / "out.blend"], tmp_path, pythonpath)
    assert single.returncode == 0, single.stdout + single.stderr  # 0 on 4.2 too, not 139
    batch = cli_run(["remove-sliding", tmp_path / "in", "-o", tmp_path / "out", "--jobs", "2"], tmp_path, pythonpath)
    assert batch.returncode == 0, batch.stdout + batch.stderr
    assert (tmp_path / "out" / "untrusted.blend").is_file() and (tmp_path / "out.blend").is_file()
    assert not driver_marker.exists() and not text_marker.exists()

    # The probe is live: the same file opened with scripts allowed does run its driver.
    bpy.ops.wm.open_mainfile(filepath=str(source), use_scripts=True)
    bpy.context.scene.frame_set(5)
    assert driver_marker.exists()


def test_a_hung_driver_is_stopped_by_the_timeout_and_the_batch_goes_on(blender, tmp_path, walk, pythonpath):
    """``(9**9**9)*0`` is plain arithmetic, which Blender evaluates even with scripts off."""
    folder = tmp_path / "in"
    source = blend_with_driver(blender, walk, folder / "hung.blend", "(9**9**9)*0")
    (folder / "walk.bvh").write_bytes(walk.read_bytes())
    single = cli_run(["remove-sliding", source, "-o", tmp_path / "hung_fixed.blend", "--timeout", "15"],
                     tmp_path, pythonpath)
    assert single.returncode == 1
    assert single.stdout == f"FAILED {source}: timed out after 15 s (--timeout)\n"
    assert list(tmp_path.glob("hung_fixed*")) == [] and list(tmp_path.glob(".foot_lock-partial-*")) == []

    report = tmp_path / "report.json"
    batch = cli_run(["remove-sliding", folder, "-o", tmp_path / "out", "--timeout", "15", "--report", report],
                    tmp_path, pythonpath)
    assert batch.returncode == 1
    assert f"FAILED {source}: timed out after 15 s (--timeout)" in batch.stdout
    assert f"ok {folder / 'walk.bvh'}" in batch.stdout
    assert json.loads(report.read_text())["summary"]["failed"] == [str(source)]


# --- never touch an input: --in-place -----------------------------------------------------


def test_in_place_never_writes_the_input_and_reruns_keep_it(blender, tmp_path, walk, pythonpath):
    import_clip(blender, walk)
    source = tmp_path / "scene.blend"
    blender.ops.wm.save_as_mainfile(filepath=str(source))
    original = source.read_bytes()
    over = cli_run(["remove-sliding", source, "-o", source, "--in-place"], tmp_path, pythonpath)
    assert over.returncode == 1 and "is the input" in over.stdout
    for _ in range(2):
        rerun = cli_run(["remove-sliding", source, "-o", tmp_path / "fixed.blend", "--in-place"], tmp_path, pythonpath)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert source.read_bytes() == original  # the original is the backup, whatever the reruns
    assert sorted(path.name for path in tmp_path.iterdir() if path.is_file()) == ["fixed.blend", "scene.blend"]
    blender.ops.wm.open_mainfile(filepath=str(tmp_path / "fixed.blend"))
    assert blender.data.actions.keys() == ["cmu_07_01"]  # fixed in place, in the copy


# --- atomic outputs, assets that cannot collide ----------------------------------------


def textured_gltf_script(walk, path, colour):
    """A script writing a .gltf (separate files) of the walk with a textured plane whose
    image is ``skin.png`` filled with ``colour``."""
    return f"""
import os, sys, bpy
from pathlib import Path
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_anim.bvh(filepath={str(walk)!r}, global_scale=0.056444, update_scene_fps=True)
bpy.ops.mesh.primitive_plane_add()
image = bpy.data.images.new("skin", 4, 4)
image.pixels = {list(colour)!r} * 16
image.filepath_raw = str(Path({str(path)!r}).parent / "skin.png")
image.file_format = "PNG"
image.save()
material = bpy.data.materials.new("skin")
material.use_nodes = True
texture = material.node_tree.nodes.new("ShaderNodeTexImage")
texture.image = image
bsdf = material.node_tree.nodes["Principled BSDF"]
material.node_tree.links.new(texture.outputs["Color"], bsdf.inputs["Base Color"])
bpy.context.object.data.materials.append(material)
bpy.ops.export_scene.gltf(filepath={str(path)!r}, export_format="GLTF_SEPARATE")
sys.stdout.flush()
os._exit(0)  # the exit crash of bpy 4.2 after a glTF export
"""


def test_gltf_textures_of_two_inputs_with_the_same_name_do_not_collide(blender, tmp_path, walk, pythonpath):
    """Two .gltf side by side whose textures are both called skin.png (kept in a folder each)."""
    folder, out = tmp_path / "in", tmp_path / "out"
    for name, colour in (("red", (1.0, 0.0, 0.0, 1.0)), ("blue", (0.0, 0.0, 1.0, 1.0))):
        made_in = tmp_path / "made" / name
        made_in.mkdir(parents=True)
        made = run_python(["-c", textured_gltf_script(walk, made_in / f"{name}.gltf", colour)], cwd=tmp_path)
        assert made.returncode == 0, made.stdout + made.stderr
        folder.mkdir(exist_ok=True)
        made_in.rename(folder / name)
        document = json.loads((folder / name / f"{name}.gltf").read_text())
        for entry in (*document["images"], *document["buffers"]):
            entry["uri"] = f"{name}/{entry['uri']}"
        (folder / name / f"{name}.gltf").unlink()
        (folder / f"{name}.gltf").write_text(json.dumps(document))
    assert sorted(path.name for path in folder.rglob("skin.png")) == ["skin.png", "skin.png"]

    result = cli_run(["remove-sliding", folder, "-o", out, "--jobs", "2"], tmp_path, pythonpath)
    assert result.returncode == 0, result.stdout + result.stderr
    textures = {}
    for name in ("red", "blue"):
        document = json.loads((out / f"{name}.gltf").read_text())
        (image,) = document["images"]
        assert (out / document["buffers"][0]["uri"]).is_file()
        textures[name] = (out / image["uri"]).read_bytes()
    assert textures["red"] != textures["blue"]  # each output keeps its own texture
    assert list(out.rglob(".foot_lock-partial-*")) == []


def test_a_failed_export_leaves_the_previous_output_and_nothing_not_a_number_is_saved(blender, tmp_path, walk,
                                                                                       pythonpath):
    obj = import_clip(blender, walk)
    obj.keyframe_insert("location", index=0, frame=1)  # a key of the armature itself, in its action
    name = obj.name
    source = tmp_path / "nan.blend"
    blender.ops.wm.save_as_mainfile(filepath=str(source))
    # NaN cannot be typed in Blender: write it into the saved file's key from outside.
    blender.ops.wm.open_mainfile(filepath=str(source))
    from foot_lock.adapters import action_compat

    obj = blender.data.objects[name]
    (fcurve,) = [f for f in action_compat.iter_fcurves(obj, obj.animation_data.action) if f.data_path == "location"]
    fcurve.keyframe_points[0].co.y = float("nan")
    blender.ops.wm.save_as_mainfile(filepath=str(source))
    for suffix in (".fbx", ".glb", ".blend"):
        target = tmp_path / f"out{suffix}"
        target.write_text("the previous good output")
        result = cli_run(["remove-sliding", source, "-o", target], tmp_path, pythonpath)
        assert result.returncode == 1 and result.stdout.startswith(f"FAILED {source}: "), result.stdout
        assert len(result.stdout.splitlines()) == 1 and re.search("not (a )?numbers?", result.stdout)
        assert target.read_text() == "the previous good output"
    assert list(tmp_path.glob(".foot_lock-partial-*")) == []


def corrupt_scenes(bpy, walk, folder):
    """Scene files that are broken in the ways files from elsewhere are: name -> words expected."""
    folder.mkdir()
    import_clip(bpy, walk)
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = 5000, 1.0
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "fps_5000.blend"))
    good = (folder / "fps_5000.blend").read_bytes()
    (folder / "truncated.blend").write_bytes(good[: len(good) // 3])
    for name in ("empty.blend", "empty.fbx", "empty.glb"):
        (folder / name).write_bytes(b"")
    (folder / "text.fbx").write_text("; FBX 7.4.0 project file\nnot really\n")
    (folder / "garbage.glb").write_bytes(b"glTF" + bytes(range(256)) * 4)
    broken = {"asset": {"version": "2.0"}, "animations": [{"samplers": [{"input": 7, "output": 8}], "channels": []}],
              "accessors": []}
    (folder / "accessors.gltf").write_text(json.dumps(broken))
    (folder / "not_json.gltf").write_text("{ this is not json")
    return {"fps_5000.blend": "5000 frames per second", "accessors.gltf": "time accessor is broken",
            "not_json.gltf": "not a glTF file", "truncated.blend": "", "text.fbx": "",
            "garbage.glb": "", **dict.fromkeys(("empty.blend", "empty.fbx", "empty.glb"), "the file is empty (0 bytes)")}


def test_corrupt_scenes_are_one_line_each_in_a_single_run_and_a_batch(blender, tmp_path, walk, pythonpath):
    folder = tmp_path / "in"
    expected = corrupt_scenes(blender, walk, folder)
    batch = cli_run(["remove-sliding", folder, "-o", tmp_path / "out", "--jobs", "2"], tmp_path, pythonpath)
    assert batch.returncode == 1 and batch.stderr == "", batch.stderr
    lines = batch.stdout.splitlines()
    assert len(lines) == len(expected) + 1 and "Traceback" not in batch.stdout
    for name, words in expected.items():
        (line,) = [line for line in lines if f"FAILED {folder / name}: " in line]
        assert words in line, line
    for name in ("fps_5000.blend", "accessors.gltf", "truncated.blend", "empty.fbx"):
        single = cli_run(["remove-sliding", folder / name, "-o", tmp_path / "one.blend"], tmp_path, pythonpath)
        assert single.returncode == 1 and single.stderr == "", single.stderr
        (line,) = single.stdout.splitlines()
        assert line.startswith(f"FAILED {folder / name}: ") and expected[name] in line
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_keys_that_are_not_numbers_are_never_saved(blender, walk):
    """The last check before any save, whatever put the keys there."""
    from foot_lock.adapters import action_compat
    from foot_lock.cli.blender_files import refuse_non_finite_keys
    from foot_lock.cli.errors import ClipError

    obj = import_clip(blender, walk)
    refuse_non_finite_keys()  # a clean scene passes
    fcurve = next(iter(action_compat.iter_fcurves(obj, obj.animation_data.action)))
    fcurve.keyframe_points[10].co.y = float("nan")
    with pytest.raises(ClipError, match="not numbers: nothing was written"):
        refuse_non_finite_keys()


def test_ctrl_c_on_a_single_file_ends_its_worker_and_exits_130(blender, tmp_path, walk, pythonpath):
    from cli_probes import processes_mentioning, start_cli, wait_for

    source = blend_with_driver(blender, walk, tmp_path / "hung.blend", "(9**9**9)*0")
    process = start_cli(["remove-sliding", source, "-o", tmp_path / "out.blend"], tmp_path, pythonpath)
    # The worker itself: not a child caught between fork and exec (Blender's start runs
    # `xdg-user-dir` that way), which shows this run's own command line.
    wait_for(lambda: processes_mentioning(f"blender_script.py -- remove-sliding {source}"))
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and stdout == "Foot Lock: stopped by SIGINT\n" and "Traceback" not in stderr
    assert processes_mentioning(str(source)) == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hung.blend"]


# Imported first thing (sitecustomize): a Ctrl-C lands in the middle of `import bpy`, when
# Blender's start imports addon_utils (as Blender 4.2 to 5.0 do).
CTRL_C_WHILE_BLENDER_STARTS = """
import os, signal, sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "addon_utils":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)

sys.meta_path.insert(0, CtrlC())
"""


def test_ctrl_c_while_blender_starts_stops_the_run_with_130(blender, tmp_path, walk, pythonpath):
    """Caught in Blender's start, the interrupt was swallowed (the run went on) or left
    Blender half started, whose exit crashed (-11); now it waits until Blender is up."""
    from cli_probes import processes_mentioning, start_cli

    source = blend_with_driver(blender, walk, tmp_path / "hung.blend", "(9**9**9)*0")  # never ends by itself
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(CTRL_C_WHILE_BLENDER_STARTS)
    process = start_cli(["remove-sliding", source, "-o", tmp_path / "out.blend", "--timeout", "60"], tmp_path,
                        f"{pythonpath}{os.pathsep}{hook}")
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and stdout == "Foot Lock: stopped by SIGINT\n" and "Traceback" not in stderr
    assert processes_mentioning(str(source)) == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hook", "hung.blend"]
