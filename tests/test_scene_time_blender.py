"""Time Stretching (Output properties > Time Stretching) plays the animation at another
speed than the scene's frame rate: Foot Lock reads, times and shows the motion as the scene
plays it (real bpy). Mapped 100 -> 200, scene frame 2 k shows the animation's frame k, so
the clip plays as it does unmapped at half the frame rate: every figure and key is that one's."""

import numpy as np
import pytest
from blender_scenes import import_clip
from viewport_scenes import WALK, in_place_walk

pytestmark = pytest.mark.blender


def _played_at_half_speed(scene, stretched):
    """Time Stretching 100 -> 200, else the frame rate halved: the same playback."""
    if stretched:
        scene.render.frame_map_old, scene.render.frame_map_new = 100, 200
    else:
        scene.render.fps_base *= 2.0


def _fixed(bpy, clips_dir, how, stretched):
    """The outcome of Remove Foot Sliding on the walk as imported (``how`` "keys": read from
    its keys) or in place on a Follow Path ("path": read from the evaluated scene), and
    the result's channels on every frame."""
    from foot_lock.adapters import action_compat, jobs

    bpy.ops.wm.read_factory_settings(use_empty=True)
    obj = import_clip(bpy, clips_dir / WALK) if how == "keys" else in_place_walk(bpy, clips_dir, "path")[0]
    _played_at_half_speed(bpy.context.scene, stretched)
    outcome = jobs.remove_sliding(obj, bpy.context.scene)
    start, end = jobs.frame_range(outcome.action)
    table = action_compat.fcurve_table(action_compat.channel_bag(obj, outcome.action))
    return outcome, {channel: [fcurve.evaluate(frame) for frame in range(start, end + 1)]
                     for channel, fcurve in table.items()}


@pytest.mark.parametrize("how", ["keys", "path"])
def test_a_stretched_clip_is_fixed_as_the_scene_plays_it(blender, clips_dir, how):
    import foot_lock

    foot_lock.register()
    try:
        (stretched, stretched_keys), (slowed, slowed_keys) = (_fixed(blender, clips_dir, how, stretched)
                                                              for stretched in (True, False))
    finally:
        foot_lock.unregister()
    assert stretched.source == slowed.source == ("keys" if how == "keys" else "evaluated scene")
    assert stretched.contact_frames == slowed.contact_frames
    for figures, expected in ((stretched.result.before, slowed.result.before),
                              (stretched.result.after, slowed.result.after)):
        for name, value in expected.items():
            assert figures[name] == pytest.approx(value, rel=1e-6, abs=1e-9), name
    assert stretched_keys.keys() == slowed_keys.keys()
    for channel, values in slowed_keys.items():
        np.testing.assert_allclose(stretched_keys[channel], values, atol=1e-5, err_msg=str(channel))


def test_the_preview_shows_the_frame_the_scene_plays(addon, clips_dir):
    """Previewing a stretched clip, scene frame 2 k shows the clip's frame k as the preview
    of the same clip at half the frame rate does."""
    shown = {}
    for stretched in (False, True):
        addon.ops.wm.read_factory_settings(use_empty=True)
        obj = import_clip(addon, clips_dir / WALK)
        scene = addon.context.scene
        _played_at_half_speed(scene, stretched)
        obj.foot_lock.preview = True
        heads = []
        for frame in (10, 80, 150, 151, 300):
            scene.frame_set(2 * frame if stretched else frame)
            heads.append([tuple(obj.matrix_world @ bone.head) for bone in obj.pose.bones])
        assert obj.foot_lock.preview_error == ""
        obj.foot_lock.preview = False
        shown[stretched] = np.array(heads)
    np.testing.assert_allclose(shown[True], shown[False], atol=1e-5)


@pytest.mark.parametrize("scale_fps", [True, False])
def test_keys_between_frames_left_under_the_fix_are_warned_about(addon, clips_dir, scale_fps):
    """The 120 fps walk imported into a 24 fps scene with the importer's Scale FPS: its keys
    lie every fifth of a frame. The fix holds the feet on every frame but keys only whole
    ones, and the hips' rotation, which it leaves, keeps its keys between them: there (motion
    blur) the locked toes moved up to 2 cm, untold. Imported on whole frames, nothing to say."""
    from foot_lock.adapters import jobs

    scene = addon.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    addon.ops.import_anim.bvh(filepath=str(clips_dir / WALK), global_scale=0.056444, use_fps_scale=scale_fps,
                              update_scene_duration=True)
    obj = addon.context.active_object
    outcome = jobs.remove_sliding(obj, scene)
    between = [warning for warning in outcome.result.warnings if "between frames" in warning]
    if scale_fps:
        (warning,) = between
        assert warning.startswith("'Hips'") and "Bake Action" in warning
    else:
        assert between == []


@pytest.mark.parametrize("offset, warned", [(0.0013, False), (0.2, True)])
def test_keys_a_hair_off_whole_frames_are_on_them(addon, clips_dir, offset, warned):
    """Blender's FBX and glTF importers key a 120 fps clip 0.0013 frames off whole frames
    (the rate held as 120 / 1.000004): that moves nothing between frames, and every such
    file was told its keys lay between frames. A fifth of a frame off still is."""
    from foot_lock.adapters import action_compat, jobs

    obj = import_clip(addon, clips_dir / WALK)
    for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action):
        if fcurve.data_path == 'pose.bones["Hips"].rotation_euler':
            keys = np.empty(2 * len(fcurve.keyframe_points), dtype=np.float32)
            fcurve.keyframe_points.foreach_get("co", keys)
            keys[0::2] += offset
            fcurve.keyframe_points.foreach_set("co", keys)
            fcurve.update()
    warnings = jobs.remove_sliding(obj, addon.context.scene).result.warnings
    assert any("between frames" in warning for warning in warnings) == warned
