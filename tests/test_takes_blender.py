"""FBX takes through the command line: a Mixamo-style file (cm bones, the armature object
rotated 90 degrees and scaled 0.01, a skinned mesh) with a sliding walk, an idle and a
one-frame T-pose. By default every take with motion is fixed, the T-pose is kept as it is,
and every take keeps its name and its exact frame count."""

import math
import re

import numpy as np
import pytest
from blender_scenes import reference_labels_by_leg, slide_cm_s, world_joints
from clip_scenarios import CMU_TO_METRES
from foot_lock.solvers import bvh

pytestmark = pytest.mark.blender
TOES = ["LeftToeBase", "RightToeBase"]


def bvh_with_values(clip, values, target):
    """``clip``'s hierarchy with these MOTION values (frames, channels) instead of its own."""
    parsed = bvh.read(clip)
    parsed.values, parsed.tokens = values, np.char.mod("%.6f", values)
    parsed.header = re.sub(r"Frames:\s*\d+", f"Frames: {len(values)}", parsed.header)
    bvh.write(target, parsed, bvh.to_motion(parsed)[1], 1.0)
    return target


def write_takes(clip, folder):
    """BVH files of the three takes: the walk with its root motion x1.25, an idle (the
    first pose held for 90 frames, the hips bobbing) and a one-frame T-pose (the rest pose)."""
    values = bvh.read(clip).values
    idle = np.repeat(values[:1], 90, axis=0)
    idle[:, 1] += 0.2 * np.sin(np.linspace(0.0, 2.0 * np.pi, 90))  # Hips Yposition, CMU units
    tpose = np.zeros((1, values.shape[1]))
    tpose[0, :3] = values[0, :3]
    return {
        "walk": bvh.write_sliding_copy(clip, folder / "walk.bvh", 1.25),
        "idle": bvh_with_values(clip, idle, folder / "idle.bvh"),
        "tpose": bvh_with_values(clip, tpose, folder / "tpose.bvh"),
    }


def build_mixamo_style_fbx(bpy, clip, folder):
    """The three takes on one armature as Mixamo exports it, written as FBX."""
    def imported(path):
        # Y-up data left Y-up (the object's rotation turns it Z-up), in centimetres.
        bpy.ops.import_anim.bvh(filepath=str(path), global_scale=100.0 * CMU_TO_METRES, axis_forward="Y",
                                axis_up="Z", update_scene_fps=True)
        return bpy.context.active_object

    bpy.ops.wm.read_factory_settings(use_empty=True)
    paths = write_takes(clip, folder)
    from foot_lock.adapters.action_compat import assign_action
    from foot_lock.cli.blender_files import name_slots_after

    rig = imported(paths["walk"])
    walk = rig.animation_data.action
    for name in ("idle", "tpose"):
        other = imported(paths[name])
        action = other.animation_data.action
        bpy.data.objects.remove(other)
        action.use_fake_user = True
        assign_action(rig, action)  # its slot now animates the rig, as the exporter's takes need
    assign_action(rig, walk)
    rig.name = "Armature"
    name_slots_after(rig, bpy.data.actions)  # as Blender names a slot made for the rig
    spine = rig.data.bones["Spine"].head_local - rig.data.bones["Hips"].head_local
    assert spine.y > 10.0 * max(abs(spine.x), abs(spine.z))  # Y-up bones, in centimetres
    rig.rotation_euler = (math.pi / 2.0, 0.0, 0.0)
    rig.scale = (0.01, 0.01, 0.01)
    # The skin: a small triangle at each bone's head, weighted to that bone.
    bones = list(rig.data.bones)
    corners = [tuple(np.add(bone.head_local, offset)) for bone in bones for offset in ((0, 0, 0), (2, 0, 0), (0, 0, 2))]
    mesh = bpy.data.meshes.new("Body")
    mesh.from_pydata(corners, [], [(3 * i, 3 * i + 1, 3 * i + 2) for i in range(len(bones))])
    body = bpy.data.objects.new("Body", mesh)
    bpy.context.scene.collection.objects.link(body)
    body.parent = rig
    for index, bone in enumerate(bones):
        body.vertex_groups.new(name=bone.name).add([3 * index, 3 * index + 1, 3 * index + 2], 1.0, "REPLACE")
    body.modifiers.new("Armature", "ARMATURE").object = rig
    path = folder / "mixamo.fbx"
    bpy.ops.export_scene.fbx(filepath=str(path), bake_anim_use_all_actions=True, add_leaf_bones=False)
    return path


def takes_of(bpy, path):
    """What the importer makes of ``path``: the armature and ``{take: (first, last) frame}``."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.fbx(filepath=str(path))
    (obj,) = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    return obj, {action.name: tuple(round(f) for f in action.frame_range) for action in bpy.data.actions}


def take(bpy, name):
    return next(action for action in bpy.data.actions if action.name.endswith("|" + name))


def test_every_take_with_motion_is_fixed_and_keeps_its_name_and_frames(blender, clips_dir, tmp_path, capsys):
    from foot_lock.cli import main

    bpy = blender
    clip = clips_dir / "cmu_07_01.bvh"
    source = build_mixamo_style_fbx(bpy, clip, tmp_path)
    obj, before = takes_of(bpy, source)
    assert sorted(before.values()) == [(1, 1), (1, 90), (1, 317)]
    labels = reference_labels_by_leg(clip)
    labels = np.stack([labels["left"], labels["right"]])
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    slide_before = slide_cm_s(world_joints(obj, TOES, take(bpy, "walk")), labels, fps)
    tpose_before = world_joints(obj, TOES + ["Hips"], take(bpy, "tpose"))

    target = tmp_path / "out" / "mixamo.fbx"
    assert main(["remove-sliding", str(source), "-o", str(target)]) == 0
    line = capsys.readouterr().out
    assert "tpose: one frame (1): a pose, kept unchanged" in line
    assert line.count("contact frames") == 2  # the walk and the idle were fixed

    obj, after = takes_of(bpy, target)
    assert after == before  # every take: its name, its first and its last frame
    assert slide_before > 10.0
    assert slide_cm_s(world_joints(obj, TOES, take(bpy, "walk")), labels, fps) <= 1.0
    np.testing.assert_allclose(world_joints(obj, TOES + ["Hips"], take(bpy, "tpose")), tpose_before, atol=1e-5)


def test_a_take_can_be_picked_and_a_one_frame_take_never_fails_the_file(blender, clips_dir, tmp_path, capsys):
    from foot_lock.cli import main

    source = build_mixamo_style_fbx(blender, clips_dir / "cmu_07_01.bvh", tmp_path)
    _, before = takes_of(blender, source)
    for options in (["--all-actions"], ["--action", "Armature|Armature|tpose"]):
        assert main(["remove-sliding", str(source), "-o", str(tmp_path / "out.fbx"), *options]) == 0
        assert "kept unchanged" in capsys.readouterr().out
    assert main(["remove-sliding", str(source), "-o", str(tmp_path / "out.fbx"), "--action",
                 "Armature|Armature|idle"]) == 0
    line = capsys.readouterr().out
    assert line.count("contact frames") == 1 and "kept" not in line
    assert takes_of(blender, tmp_path / "out.fbx")[1] == before  # the untouched takes keep every frame


def test_gltf_takes_are_all_fixed_and_keep_their_names_and_frames(blender, clips_dir, tmp_path):
    """The same three takes as a GLB. Exported and fixed in subprocesses: the bpy 4.2 wheel
    crashes at exit once its glTF exporter has run."""
    from cli_helpers import package_parent, run_python

    clip = clips_dir / "cmu_07_01.bvh"
    fbx = build_mixamo_style_fbx(blender, clip, tmp_path)
    source, target = tmp_path / "mixamo.glb", tmp_path / "out" / "mixamo.glb"
    script = f"""
import os, sys, bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.fbx(filepath={str(fbx)!r})
bpy.context.scene.render.fps = 120
rig = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
for action in bpy.data.actions:  # whole frames: the FBX takes end a hair before theirs
    action.use_frame_range = True
    action.frame_start, action.frame_end = (round(f) for f in action.frame_range)
    # One NLA track per take, as a glTF file's animations come in (Blender 4.2 exports those).
    rig.animation_data.nla_tracks.new().strips.new(action.name, 1, action)
bpy.ops.export_scene.gltf(filepath={str(source)!r}, export_format="GLB", export_animation_mode="ACTIONS")
sys.stdout.flush()
os._exit(0)
"""
    assert run_python(["-c", script], cwd=tmp_path).returncode == 0
    result = run_python(["-m", "foot_lock", "remove-sliding", source, "-o", target], cwd=tmp_path,
                        pythonpath=package_parent(tmp_path / "pythonpath"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kept unchanged" in result.stdout
    assert result.stdout.count("contact frames") == 2

    def takes(path):
        from foot_lock.cli.blender_files import load

        load(path, None)
        (obj,) = [o for o in blender.context.scene.objects if o.type == "ARMATURE"]
        return obj, {a.name: tuple(round(f) for f in a.frame_range) for a in blender.data.actions}

    obj, before = takes(source)
    labels = reference_labels_by_leg(clip)
    labels = np.stack([labels["left"], labels["right"]])
    fps = blender.context.scene.render.fps / blender.context.scene.render.fps_base
    walk = next(a for a in blender.data.actions if "walk" in a.name)
    assert slide_cm_s(world_joints(obj, TOES, walk), labels, fps) > 10.0
    obj, after = takes(target)
    assert after == before
    assert sorted(frames[1] - frames[0] + 1 for frames in after.values()) == [1, 90, 317]
    walk = next(a for a in blender.data.actions if "walk" in a.name)
    assert slide_cm_s(world_joints(obj, TOES, walk), labels, fps) <= 1.0
