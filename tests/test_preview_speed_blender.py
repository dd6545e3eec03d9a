"""Preview's frame handler in real Blender with several armatures and after edits: each
frame is evaluated once however many armatures preview, and an edit of the keys is
simulated again (the handler reads only the actions a depsgraph update names)."""

import numpy as np
import pytest
from blender_scenes import import_clip
from test_preview_blender import CLIP, evaluation_counter, frames_of, play, walk_terrain

pytestmark = pytest.mark.blender


def test_each_frame_is_evaluated_once_with_several_armatures_previewing(addon, clips_dir):
    """Three walkers previewing side by side: posing one never makes Blender evaluate
    another again, and each shows its own preview."""
    walkers = [import_clip(addon, clips_dir / f"{CLIP}.bvh") for _ in range(3)]
    for index, obj in enumerate(walkers):
        obj.location.x = 0.5 * index
    walk_terrain(walkers[0], "ramp").build(addon)
    frames = frames_of(walkers[0])[::40]
    authored = [play(addon, obj, frames, ["LeftToeBase"]) for obj in walkers]
    calls = evaluation_counter(addon, walkers[1], "LeftLeg")
    for obj in walkers:
        obj.foot_lock.preview = True
    addon.context.view_layer.update()
    counted = []
    for frame in frames:
        start = len(calls)
        addon.context.scene.frame_set(int(frame))
        counted.append(len(calls) - start)
    assert counted == [1] * len(frames)
    for obj, before in zip(walkers, authored):
        assert obj.foot_lock.preview_error == ""
        assert np.abs(play(addon, obj, frames, ["LeftToeBase"]) - before).max() > 0.01  # its preview is shown


def test_an_edit_of_the_keys_is_simulated_again(addon, clips_dir):
    """Moving the pelvis' keys while Preview is on: the next frame shows the preview of the
    edited keys, as switching Preview off and on again shows it."""
    from foot_lock.adapters import action_compat, preview

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    obj.foot_lock.preview = True
    frame = 150
    before = play(addon, obj, [frame], ["Hips"])[0, 0]
    simulated = preview._previews[obj.name]
    path = 'pose.bones["Hips"].location'
    for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action):
        if fcurve.data_path == path:
            for point in fcurve.keyframe_points:
                point.co_ui = (point.co.x, point.co.y + 0.05)
            fcurve.update()
    addon.context.view_layer.update()  # where depsgraph_update_post runs
    after = play(addon, obj, [frame], ["Hips"])[0, 0]
    assert preview._previews[obj.name] is not simulated
    obj.foot_lock.preview = False
    obj.foot_lock.preview = True
    fresh = play(addon, obj, [frame], ["Hips"])[0, 0]
    assert np.linalg.norm(after - before) > 0.05  # the edit shows (0.05 on each axis)
    assert np.abs(after - fresh).max() < 1e-6
    assert obj.foot_lock.preview_error == ""


def test_a_setting_a_script_changes_is_seen_within_as_many_frames_as_there_are_previews(addon, clips_dir):
    """The frame handler compares one preview's inputs per frame, in turn, when the depsgraph
    reported nothing (a script changed a setting without updating the view layer)."""
    walkers = [import_clip(addon, clips_dir / f"{CLIP}.bvh") for _ in range(2)]
    for obj in walkers:
        obj.foot_lock.preview = True
    scene = addon.context.scene
    for frame in (10, 11, 12):
        scene.frame_set(frame)
    walkers[1].foot_lock.pelvis = "NoSuchBone"  # the next comparison finds the rig broken
    for frame in (13, 14):
        scene.frame_set(frame)
    assert not walkers[1].foot_lock.preview and "NoSuchBone" in walkers[1].foot_lock.preview_error
    assert walkers[0].foot_lock.preview and walkers[0].foot_lock.preview_error == ""


def test_the_preview_benchmark_prints_its_figures(blender, clips_dir, capsys):
    """The benchmark's Preview table (its figures are for the notes; here: one round, two walkers)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import blender_benchmark

    blender_benchmark.preview_figures(blender, clips_dir, repeats=1, crowd=2, kinds=("ramp",))
    out = capsys.readouterr().out
    assert out.count("one previewing walker adds") == 3
    assert "2 previewing walkers add" in out and "what one walker alone adds" in out
