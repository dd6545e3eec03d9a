"""Hand-keyed animation in real Blender: a pose keyed every few frames, Bezier in between
(Blender's default), as an animator keys a walk. Between the keys the legs' rotations
interpolate and a planted foot swings about: the slide to fix, where the keys hold it."""

import numpy as np
import pytest
from blender_scenes import import_clip, reference_labels_by_leg, slide_cm_s, world_joints, write_sliding_bvh
from test_loops_blender import CYCLES, loop_with_cycles_modifiers, played, write_cycle_bvh

pytestmark = pytest.mark.blender
EVERY = 8  # frames between keys at 120 fps: 15 poses a second


def keep_every(obj, every, but=()):
    """Every F-curve of ``obj``'s action (``but`` those of the bones named) keeps a key every
    ``every``-th frame and its last, Bezier with automatic clamped handles (what a new key
    gets)."""
    from foot_lock.adapters import action_compat

    for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action):
        if any(fcurve.data_path.startswith(f'pose.bones["{bone}"]') for bone in but):
            continue
        points = fcurve.keyframe_points
        keys = np.empty((len(points), 2), dtype=np.float32)
        points.foreach_get("co", keys.reshape(-1))
        kept = np.r_[keys[:-1:every], keys[-1:]]
        points.clear()
        points.add(len(kept))
        points.foreach_set("co", kept.reshape(-1))
        for point in points:
            point.interpolation = "BEZIER"
            point.handle_left_type = point.handle_right_type = "AUTO_CLAMPED"
        fcurve.update()


def toe_labels(obj, action, legs, frames):
    from foot_lock.adapters import armature

    return np.array([armature.read_contact_curve(obj, action, leg.toe, frames) for leg in legs]) > 0.5


@pytest.fixture(params=[(), ("Hips",)], ids=["every bone", "legs only"])
def hand_keyed(request, addon, clips_dir, tmp_path):
    """cmu_07_01, its root sped up x1.25, keyed every ``EVERY`` frames (every bone, or all
    but the hips, as a root baked from a path under legs keyed by hand); and the original
    clip's reference contacts by leg."""
    clip = clips_dir / "cmu_07_01.bvh"
    obj = import_clip(addon, write_sliding_bvh(clip, tmp_path / "sliding.bvh", 1.25))
    keep_every(obj, EVERY, but=request.param)
    return obj, reference_labels_by_leg(clip)


def test_a_walk_keyed_every_few_frames_is_labelled_and_fixed_as_its_keys_pose_it(addon, hand_keyed):
    """Labelled as it plays, its stances were cut to pieces (toe F1 0.80 against the
    reference) and 17 cm/s of slide was left over the reference contacts. The hips' keys do
    not count: keyed on every frame under legs keyed sparsely, the feet swing about all the
    same."""
    obj, reference = hand_keyed
    assert addon.ops.foot_lock.detect_legs() == {"FINISHED"}
    legs = obj.foot_lock.legs
    toes = [leg.toe for leg in legs]
    contacts = np.array([reference[leg.name] for leg in legs]) > 0.5
    fps = addon.context.scene.render.fps / addon.context.scene.render.fps_base
    before = world_joints(obj, toes)
    assert slide_cm_s(before, contacts, fps) > 40.0  # the sped-up root and the swinging feet
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    result = obj.animation_data.action
    after = world_joints(obj, toes, action=result)
    labels = toe_labels(obj, result, legs, np.arange(len(before)) + int(result.frame_range[0]))
    assert 2 * (labels & contacts).sum() / (labels.sum() + contacts.sum()) >= 0.93
    assert slide_cm_s(after, contacts, fps) <= 4.0
    report = obj.foot_lock.report
    assert report.ground_slide_before > 30.0 and report.ground_slide_after < 3.0


def test_detect_contacts_labels_hand_keys_as_the_fix_does(addon, hand_keyed):
    """Detect Contacts keys the contacts Remove Foot Sliding then locks (it relabels its own)."""
    obj, _ = hand_keyed
    source = obj.animation_data.action
    assert addon.ops.foot_lock.detect_contacts() == {"FINISHED"}
    frames = np.arange(int(source.frame_range[0]), int(source.frame_range[1]) + 1)
    detected = toe_labels(obj, source, obj.foot_lock.legs, frames)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    np.testing.assert_array_equal(toe_labels(obj, obj.animation_data.action, obj.foot_lock.legs, frames), detected)


def test_a_hand_keyed_cycle_is_labelled_as_its_keys_pose_it(addon, clips_dir, tmp_path):
    """A walk cycle keyed every few frames, looped with Cycles modifiers: every copy of the
    cycle the loop's solve tiles is labelled as its keys pose it (labelled as it played,
    5.7 cm/s of slide was left over the reference contacts; now under half a cm/s)."""
    labels = write_cycle_bvh(clips_dir / "cmu_07_01.bvh", tmp_path / "cycle.bvh", 1.25)
    obj = import_clip(addon, tmp_path / "cycle.bvh")
    keep_every(obj, EVERY)
    loop_with_cycles_modifiers(obj)
    source = obj.animation_data.action
    period = labels.shape[1] - 1
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    joints = ["LeftToeBase", "RightToeBase"]
    before, after = (played(obj, action, joints, period) for action in (source, obj.animation_data.action))
    contacts = labels[:, np.arange(CYCLES * period + 1) % period]
    fps = addon.context.scene.render.fps / addon.context.scene.render.fps_base
    assert slide_cm_s(before, contacts, fps) > 30.0
    assert slide_cm_s(after, contacts, fps) <= 2.0


def test_preview_locks_the_contacts_the_fix_locks(addon, hand_keyed):
    """Preview labels a hand-keyed clip without contact curves as Remove Foot Sliding does."""
    from foot_lock.adapters import jobs, preview

    obj, _ = hand_keyed
    source = obj.animation_data.action
    jobs.ensure_legs(obj)
    previewed = preview._contacts(obj, source, jobs.read_clip(obj, source, object_keys=True)) > 0.5
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    frames = np.arange(int(source.frame_range[0]), int(source.frame_range[1]) + 1)
    np.testing.assert_array_equal(toe_labels(obj, obj.animation_data.action, obj.foot_lock.legs, frames), previewed)


def test_a_hand_keyed_foot_is_held_where_its_keys_plant_it(addon):
    """A walk keyed every fourth frame from a plan of where each foot stands: fixed, each
    foot stands where its keys plant it, heel and ball, on every frame the plan has it flat
    (pinned where interpolating swung it on the pin's first frame, the heel stood 1.9 cm
    into the floor, the foot tilted; its ball was pinned from the heel strike, still in the
    air)."""
    from hand_keyed_scenes import build_rig, key_walk

    obj = build_rig(addon)
    keyed, planned, down = key_walk(addon, obj, 4)
    flat = down.all(axis=1)  # (2, F): heel and ball both down
    names = [f"{bone}.{side}" for side in "LR" for bone in ("foot", "toe")]
    before = world_joints(obj, names).reshape(-1, 2, 2, 3).transpose(1, 2, 0, 3)  # (side, point, F, 3)
    flat_points = flat[:, None].repeat(2, axis=1)  # (side, point, F)
    on_keys = np.zeros_like(flat_points)
    on_keys[..., keyed] = True
    swing = np.linalg.norm(before - planned, axis=-1)
    assert swing[flat_points & on_keys].max() < 1e-4  # the keys plant the feet
    assert swing[flat_points].max() > 0.015  # between the keys they swing about
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    after = world_joints(obj, names, action=obj.animation_data.action).reshape(-1, 2, 2, 3).transpose(1, 2, 0, 3)
    # Between two keys that plant it (where the keys say it stands: they cannot say it lands
    # between them)
    frames = np.arange(flat.shape[-1])
    previous, following = (keyed[np.clip(np.searchsorted(keyed, frames, side) + shift, 0, len(keyed) - 1)]
                           for side, shift in (("right", -1), ("left", 0)))
    held = flat_points & flat_points[..., previous] & flat_points[..., following]
    assert held.sum() > 60  # 5 frames of each foot flat, heel and ball, on 8 steps
    assert np.linalg.norm(after - planned, axis=-1)[held].max() < 0.002  # metres


def test_the_feet_on_the_ground_read_alike_before_and_after_a_fix_that_locks_nothing(addon, hand_keyed):
    """Contacts keyed 0 by hand: nothing is locked, and the feet on the ground read the same
    before and after (judged on the input's keyed poses before and the result's played
    feet after, they read 19 -> 10 cm/s on a result equal to its input)."""
    from foot_lock.adapters import armature

    obj, _ = hand_keyed
    assert addon.ops.foot_lock.detect_legs() == {"FINISHED"}
    source = obj.animation_data.action
    frames = np.arange(int(source.frame_range[0]), int(source.frame_range[1]) + 1)
    for leg in obj.foot_lock.legs:
        for bone, prop in ((leg.toe, "foot_contact"), (leg.foot, "heel_contact")):
            armature.write_contact_curve(obj, source, bone, frames, np.zeros(len(frames)), prop=prop, stamp=False)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    report = obj.foot_lock.report
    assert report.ground_slide_before > 20.0
    assert report.ground_slide_after == pytest.approx(report.ground_slide_before, rel=1e-3)


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_a_hand_keyed_action_played_by_an_nla_strip_is_labelled_as_its_keys_pose_it(addon, clips_dir, tmp_path,
                                                                                     scale):
    """The strip plays the keys 10 frames later (and twice as slowly): they are where the
    strip puts them. Labelled as it played, its stances were cut to pieces as the active
    action's were (F1 0.80)."""
    clip = clips_dir / "cmu_07_01.bvh"
    obj = import_clip(addon, write_sliding_bvh(clip, tmp_path / "sliding.bvh", 1.25))
    keep_every(obj, EVERY)
    anim = obj.animation_data
    action, start = anim.action, int(anim.action.frame_range[0])
    anim.action = None
    strip = anim.nla_tracks.new().strips.new("walk", start + 10, action)
    strip.scale = scale
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    result = anim.action
    legs = obj.foot_lock.legs
    reference = reference_labels_by_leg(clip)
    played = start + 10 + np.arange(len(reference[legs[0].name])) * scale  # each frame of the clip, played
    labels = toe_labels(obj, result, legs, np.rint(played).astype(int))
    contacts = np.array([reference[leg.name] for leg in legs]) > 0.5
    assert 2 * (labels & contacts).sum() / (labels.sum() + contacts.sum()) >= 0.93


def test_keys_too_sparse_to_show_a_stance_are_labelled_as_they_play(addon):
    """Keyed every 8th frame at 24 fps (3 poses a stride), a stance has one key with the ball
    down: as its keys pose it, the foot was never still (the left leg labelled on 4% of its
    frames, one-frame contacts in the swing). Keys more than a quarter of a second apart are
    labelled as they play, as before hand-keyed clips were told apart."""
    from foot_lock.adapters import armature, jobs
    from foot_lock.adapters.properties import contact_settings
    from hand_keyed_scenes import build_rig, key_walk

    obj = build_rig(addon)
    key_walk(addon, obj, 8)
    source = obj.animation_data.action
    jobs.ensure_legs(obj)
    played = jobs.label_clip(jobs.read_clip(obj, source, object_keys=True), contact_settings(obj.foot_lock)) > 0.5
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    result, legs = obj.animation_data.action, obj.foot_lock.legs
    frames = np.arange(int(result.frame_range[0]), int(result.frame_range[1]) + 1)
    heels = np.array([armature.read_contact_curve(obj, result, leg.foot, frames, "heel_contact") for leg in legs])
    locked = np.concatenate([toe_labels(obj, result, legs, frames), heels > 0.5])
    assert (locked == played).mean() > 0.97  # (Detect Contacts' labels, a frame off here and there)
    assert locked[[0, 2]].any(axis=0).mean() > 0.25  # the left foot, heel or toe
