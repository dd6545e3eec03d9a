"""Preview of an armature that does not stand still: carried by its own transform keys
(the preview follows it and plants the feet in the world), by a path or a parent (it is
refused as it is switched on, and so is Bake Preview, saying why, in one line), or held in
place by a constraint (it previews as usual)."""

import math

import numpy as np
import pytest
from blender_scenes import import_clip, leg_bones, reference_labels_by_leg, slide_cm_s, world_joints
from clip_scenarios import in_place, settled, smoothed_travel
from foot_lock.solvers import bvh
from foot_lock.solvers.kinematics import Motion
from test_preview_blender import CLIP, frames_of, play, scene_fps

pytestmark = pytest.mark.blender

TRAVEL = 2.0  # m a path carries the armature over the clip
FACTOR = 1.25  # the object travels this much faster than the walk: its feet slide


def _walk(bpy, path):
    obj = import_clip(bpy, path)
    bpy.ops.foot_lock.detect_legs()
    return obj


def _in_place_copy(source, target):
    """The BVH walking in place: its root's smoothed travel taken away (a game clip whose
    travel is root motion)."""
    parsed = bvh.read(source)
    skeleton, motion = bvh.to_motion(parsed)
    bvh.write(target, parsed, in_place(motion), 1.0, location_joints=np.flatnonzero(skeleton.parents < 0))
    return target


def _carried_walk(bpy, clips_dir, folder):
    """The walk in place, its object keyed to travel as the walk did, ``FACTOR`` times as far."""
    pelvis = world_joints(_walk(bpy, clips_dir / f"{CLIP}.bvh"), ["Hips"])  # (F, 1, 3)
    travel = smoothed_travel(Motion(np.zeros((len(pelvis), 1, 4)), pelvis, scene_fps(bpy)), up=(0.0, 0.0, 1.0))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    obj = _walk(bpy, _in_place_copy(clips_dir / f"{CLIP}.bvh", folder / "in_place.bvh"))
    for frame, offset in zip(frames_of(obj), FACTOR * (travel - travel[0])):
        obj.location = offset
        obj.keyframe_insert("location", frame=int(frame))
    return obj


def _toe_slide(bpy, obj, clips_dir, shown):
    """cm/s the ``shown`` toes (F, L, 3) slide over the clip's reference contacts, after
    each contact's inertialized catch-up."""
    reference = reference_labels_by_leg(clips_dir / f"{CLIP}.bvh")
    contacts = np.array([reference[leg.name] for leg in obj.foot_lock.legs]) > 0.5
    stance = settled(contacts, math.ceil(obj.foot_lock.blend_time * scene_fps(bpy)))
    return slide_cm_s(shown, stance, scene_fps(bpy))


def test_an_armature_travelling_by_its_own_keys_has_its_feet_planted_in_the_world(addon, clips_dir, tmp_path):
    """As planted as where the bones carry the same sliding walk (the preview's own test),
    and baked as shown."""
    from foot_lock.adapters import preview

    obj = _carried_walk(addon, clips_dir, tmp_path)
    frames, toes = frames_of(obj), leg_bones(obj, "toe")
    sliding = _toe_slide(addon, obj, clips_dir, play(addon, obj, frames, toes))
    obj.foot_lock.preview = True
    simulated = preview._previews[obj.name]
    shown = play(addon, obj, frames, toes)
    assert obj.foot_lock.preview and obj.foot_lock.preview_error == ""
    assert preview._previews[obj.name] is simulated  # simulated once, not again on every frame
    assert sliding > 10.0
    assert _toe_slide(addon, obj, clips_dir, shown) <= 1.0
    assert addon.ops.foot_lock.bake_preview() == {"FINISHED"}
    assert np.abs(play(addon, obj, frames, toes) - shown).max() < 1e-4


def test_an_armature_carried_by_a_path_stops_its_preview_saying_why_in_one_line(addon, clips_dir, capsys):
    """An expected refusal prints its message, no traceback."""
    obj = _walk(addon, clips_dir / f"{CLIP}.bvh")
    curve = addon.data.curves.new("Path", "CURVE")
    curve.splines.new("POLY").points.add(1)
    curve.splines[0].points[1].co = (TRAVEL, 0.0, 0.0, 1.0)
    path = addon.data.objects.new("Path", curve)
    addon.context.scene.collection.objects.link(path)
    obj.constraints.new("FOLLOW_PATH").target = path
    curve.use_path = True
    frames = frames_of(obj)
    curve.path_duration = len(frames)
    curve.eval_time = 0.0
    curve.keyframe_insert("eval_time", frame=int(frames[0]))
    curve.eval_time = float(len(frames))
    curve.keyframe_insert("eval_time", frame=int(frames[-1]))
    obj.foot_lock.preview = True
    play(addon, obj, frames[:5], [])
    assert not obj.foot_lock.preview
    assert "constraint 'Follow Path'" in obj.foot_lock.preview_error
    assert "Remove Foot Sliding" in obj.foot_lock.preview_error
    printed = capsys.readouterr()
    assert f"Preview of {obj.name!r} stopped: {obj.foot_lock.preview_error}" in printed.out
    assert "Traceback" not in printed.out + printed.err


def _on_a_moving_parent(bpy, clips_dir, after_the_clip=False):
    """The walk parented to an empty keyed to travel ``TRAVEL`` over the clip, or only over
    as many frames after it that the scene's frame range goes on to."""
    obj = _walk(bpy, clips_dir / f"{CLIP}.bvh")
    vehicle = bpy.data.objects.new("Vehicle", None)
    scene = bpy.context.scene
    scene.collection.objects.link(vehicle)
    obj.parent = vehicle
    frames = frames_of(obj)
    if after_the_clip:
        frames = frames + len(frames)
        scene.frame_end = int(frames[-1])
    for frame, x in ((frames[0], 0.0), (frames[-1], TRAVEL)):
        vehicle.location = (x, 0.0, 0.0)
        vehicle.keyframe_insert("location", frame=int(frame))
    return obj


@pytest.mark.parametrize("after_the_clip", [False, True], ids=["over the clip", "after it, in the scene's range"])
def test_an_armature_its_parent_carries_is_refused_as_preview_is_switched_on(addon, clips_dir, after_the_clip):
    """Not only once a frame change shows the parent moved (the first one does not: the
    frame is changed before it is evaluated), wherever the timeline may show it moving."""
    obj = _on_a_moving_parent(addon, clips_dir, after_the_clip)
    obj.foot_lock.preview = True
    assert not obj.foot_lock.preview
    assert "carried from frame to frame by its parent 'Vehicle'" in obj.foot_lock.preview_error


def test_bake_preview_refuses_an_armature_its_parent_carries_saying_what_preview_says(addon, clips_dir):
    """Checked over the frames it bakes before anything is simulated or written, with
    Preview off, and with the message Preview stops with."""
    obj = _on_a_moving_parent(addon, clips_dir)
    source, actions = obj.animation_data.action, set(addon.data.actions)
    with pytest.raises(RuntimeError) as refused:
        addon.ops.foot_lock.bake_preview()
    assert obj.animation_data.action == source and set(addon.data.actions) == actions
    obj.foot_lock.preview = True
    assert obj.foot_lock.preview_error and obj.foot_lock.preview_error in str(refused.value)


def test_an_armature_held_in_place_by_a_constraint_previews_as_usual(addon, clips_dir):
    from foot_lock.adapters import preview

    obj = _walk(addon, clips_dir / f"{CLIP}.bvh")
    anchor = addon.data.objects.new("Anchor", None)
    anchor.location = (1.0, 0.5, 0.0)
    addon.context.scene.collection.objects.link(anchor)
    obj.constraints.new("CHILD_OF").target = anchor
    obj.foot_lock.preview = True
    simulated = preview._previews[obj.name]
    play(addon, obj, frames_of(obj)[:30], [])
    assert obj.foot_lock.preview and obj.foot_lock.preview_error == ""
    assert preview._previews[obj.name] is simulated


def test_an_armature_travelling_by_its_keys_and_a_constraint_is_refused_saying_why(addon, clips_dir, tmp_path):
    obj = _carried_walk(addon, clips_dir, tmp_path)
    anchor = addon.data.objects.new("Anchor", None)
    addon.context.scene.collection.objects.link(anchor)
    obj.constraints.new("CHILD_OF").target = anchor
    obj.foot_lock.preview = True
    assert not obj.foot_lock.preview
    assert "constraint 'Child Of'" in obj.foot_lock.preview_error


@pytest.mark.parametrize("driven, steps", [('pose.bones["Head"].scale', False), ("location", True)])
def test_only_what_may_carry_the_armature_makes_preview_step_the_scene(addon, clips_dir, monkeypatch, driven, steps):
    """A driver on a bone poses the armature, it does not carry it: Preview does not step
    the scene through every frame to check that the armature stands still (an evaluation a
    frame, seconds with a heavy mesh, on every simulation). A driver on its location may
    carry it: checked, and, holding it still, previewed as usual."""
    from foot_lock.adapters import preview

    obj = _walk(addon, clips_dir / f"{CLIP}.bvh")
    path, _, channel = driven.rpartition(".")
    owner = obj.path_resolve(path) if path else obj
    owner.driver_add(channel, 0).driver.expression = "1.0" if path else "0.0"
    stepped = []
    moves_over = preview._moves_over
    monkeypatch.setattr(preview, "_moves_over", lambda *args: stepped.append(args) or moves_over(*args))
    obj.foot_lock.preview = True
    assert obj.foot_lock.preview and obj.foot_lock.preview_error == ""
    assert bool(stepped) == steps
