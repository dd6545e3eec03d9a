"""The walk played by the NLA (repeat 2, scale 1.2, from frame 101, no active action) is
baked into a new action with every channel, the strip's track muted and kept."""

import numpy as np
import pytest
from blender_scenes import reference_labels_by_leg, slide_cm_s
from viewport_scenes import WALK, nla_walk, world_heads

pytestmark = pytest.mark.blender

def strip_contacts(reference, strip, frames):
    """The clip's planted frames where the strip plays them; the jump back at the start of
    each repeat is no contact."""
    length = reference.shape[1] - 1  # action frames 1..N span N-1 frames
    local = (frames - strip.frame_start) / strip.scale
    cycle = np.floor(local / length)
    action_frame = np.rint(local - cycle * length).astype(int)
    contacts = reference[:, np.clip(action_frame, 0, length)].copy()
    contacts[:, np.flatnonzero(np.diff(cycle)) + 1] = False
    contacts[:, (local < 0) | (cycle >= strip.repeat)] = False
    return contacts


@pytest.fixture(scope="module")
def baked_nla(clips_dir):
    import bpy
    import foot_lock

    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    try:
        obj, action, strip = nla_walk(bpy, clips_dir)
        frames = np.arange(int(strip.frame_start), int(np.ceil(strip.frame_end)) + 1)
        bpy.ops.foot_lock.detect_legs()
        toes = [leg.toe for leg in obj.foot_lock.legs]
        reference = np.array([reference_labels_by_leg(clips_dir / WALK)[leg.name] for leg in obj.foot_lock.legs])
        contacts = strip_contacts(reference, strip, frames)
        from foot_lock.adapters.action_compat import iter_fcurves

        def key_count():
            return sum(len(fc.keyframe_points) for fc in iter_fcurves(obj, action))

        source_keys = key_count()
        before = world_heads(bpy, obj, toes, frames)
        result = bpy.ops.foot_lock.remove_sliding()
        after = world_heads(bpy, obj, toes, frames)
        anim = obj.animation_data
        rerun = bpy.ops.foot_lock.remove_sliding()  # bakes the muted tracks again, into the same result
        return {
            "rerun": (rerun, anim.action.name, sorted(a.name for a in bpy.data.actions),
                      [track.mute for track in anim.nla_tracks], world_heads(bpy, obj, toes, frames)),
            "result": result, "before": before, "after": after, "contacts": contacts,
            "fps": bpy.context.scene.render.fps / bpy.context.scene.render.fps_base,
            "action": anim.action.name if anim.action else None,
            "tracks": [(track.name, track.mute, len(track.strips)) for track in anim.nla_tracks],
            "source_keys": (source_keys, key_count()),
            "frames": frames,
            "source": obj.foot_lock.report.source,
            "baked_range": tuple(anim.action.frame_range) if anim.action else None,
        }
    finally:
        foot_lock.unregister()


def test_nla_walk_is_fixed_over_both_repeats(baked_nla):
    b = baked_nla
    assert b["result"] == {"FINISHED"}
    assert slide_cm_s(b["before"], b["contacts"], b["fps"]) > 3.0
    assert slide_cm_s(b["after"], b["contacts"], b["fps"]) <= 1.5
    half = len(b["frames"]) // 2  # each repeat on its own
    for part in (slice(0, half), slice(half, None)):
        assert slide_cm_s(b["after"][part], b["contacts"][:, part], b["fps"]) <= 1.5


def test_nla_result_is_a_new_active_action_over_the_evaluated_range_with_the_track_muted(baked_nla):
    b = baked_nla
    assert b["action"] == "cmu_07_01.footlock" and b["source"] == "NLA"
    assert b["tracks"] == [("Walk", True, 1)]
    assert b["baked_range"] == (b["frames"][0], b["frames"][-1])
    assert b["source_keys"][0] == b["source_keys"][1] > 0  # the strip's action is not touched


def test_rerun_on_the_nla_result_bakes_the_tracks_again_into_it(baked_nla):
    result, action, actions, muted, after = baked_nla["rerun"]
    assert result == {"FINISHED"}
    assert action == "cmu_07_01.footlock" and actions == ["cmu_07_01", "cmu_07_01.footlock"]
    assert muted == [True]
    assert np.abs(after - baked_nla["after"]).max() < 1e-3  # the same settings: the same result


def test_strips_that_also_move_the_object_keep_it_moving(blender, clips_dir):
    """The in-place walk with its object keys, pushed down into a strip: the result keys
    the object's travel too, so muting the track does not stop the character."""
    import foot_lock
    from viewport_scenes import in_place_walk

    bpy = blender
    foot_lock.register()
    try:
        obj, start, end = in_place_walk(bpy, clips_dir, "keys")
        anim = obj.animation_data
        action = anim.action
        anim.action = None
        anim.nla_tracks.new().strips.new("walk", start, action)
        frames = np.arange(start, end + 1)
        bpy.ops.foot_lock.detect_legs()
        toes = [leg.toe for leg in obj.foot_lock.legs]
        contacts = np.array([reference_labels_by_leg(clips_dir / WALK)[leg.name] for leg in obj.foot_lock.legs])
        before = world_heads(bpy, obj, toes, frames)
        assert bpy.ops.foot_lock.remove_sliding() == {"FINISHED"}
        after = world_heads(bpy, obj, toes, frames)
        fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
        assert slide_cm_s(before, contacts, fps) > 10.0
        assert slide_cm_s(after, contacts, fps) <= 1.0
        travel = np.linalg.norm(after[-1, 0, :2] - after[0, 0, :2])
        assert travel > 0.5 * np.linalg.norm(before[-1, 0, :2] - before[0, 0, :2])
    finally:
        foot_lock.unregister()


def test_detect_contacts_on_strips_keys_the_bake_that_remove_sliding_then_refreshes(addon, clips_dir):
    """With no active action there is nothing in scene time to key: Detect Contacts bakes the
    strips (the motion unchanged) into the action Remove Foot Sliding makes; an animator's
    edit there is obeyed and kept, and the fix refreshes that action instead of adding one."""
    from foot_lock.adapters import action_compat, armature

    obj, action, strip = nla_walk(addon, clips_dir)
    frames = np.arange(int(strip.frame_start), int(np.ceil(strip.frame_end)) + 1)
    addon.ops.foot_lock.detect_legs()
    toes = [leg.toe for leg in obj.foot_lock.legs]
    before = world_heads(addon, obj, toes, frames)
    assert addon.ops.foot_lock.detect_contacts() == {"FINISHED"}

    anim = obj.animation_data
    baked = anim.action
    assert baked.name == "cmu_07_01.footlock" and [track.mute for track in anim.nla_tracks] == [True]
    assert np.abs(world_heads(addon, obj, toes, frames) - before).max() < 1e-4  # labelled, not fixed
    assert not armature.has_contact_curve(obj, action, toes[0])  # the strip's action is untouched
    reference = np.array([reference_labels_by_leg(clips_dir / WALK)[leg.name] for leg in obj.foot_lock.legs])
    expected = strip_contacts(reference, strip, frames)
    labels = np.array([armature.read_contact_curve(obj, baked, toe, frames) for toe in toes]) > 0.5
    assert (labels == expected).mean() > 0.9  # both repeats labelled, in scene frames

    edited = action_compat.find_fcurve(action_compat.channel_bag(obj, baked), armature.contact_data_path(toes[0]), 0)
    for key in edited.keyframe_points:  # the animator: this foot never plants
        key.co.y = 0.0
    edited.update()
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert anim.action.name == "cmu_07_01.footlock"
    assert sorted(a.name for a in addon.data.actions) == ["cmu_07_01", "cmu_07_01.footlock"]
    assert not armature.read_contact_curve(obj, anim.action, toes[0], frames).any()  # obeyed and kept
    assert armature.read_contact_curve(obj, anim.action, toes[1], frames).max() == 1.0
    assert obj.foot_lock.report.source == "NLA"


def test_rerun_on_strips_with_an_active_action_on_top_keeps_what_the_top_action_does(addon, clips_dir):
    """An active action on top of the strips (an arm raised, the left foot's contact keyed by
    hand to 0: never planted) plays in the result; fixed again from the result, the motion
    is still the tracks plus that action, its hand-keyed contact obeyed, no action stacked."""
    import math

    from foot_lock.adapters import action_compat, armature

    obj, _, strip = nla_walk(addon, clips_dir)
    frames = np.arange(int(strip.frame_start), int(np.ceil(strip.frame_end)) + 1)
    addon.ops.foot_lock.detect_legs()
    toes = [leg.toe for leg in obj.foot_lock.legs]
    top = addon.data.actions.new("raised_arm")
    action_compat.assign_action(obj, top)
    arm = obj.pose.bones["LeftArm"]
    arm.rotation_mode = "XYZ"
    arm.rotation_euler = (0.0, 0.0, math.radians(80.0))
    for frame in frames[[0, -1]]:
        arm.keyframe_insert("rotation_euler", frame=int(frame))
    armature.write_contact_curve(obj, top, toes[0], frames, np.zeros(len(frames)), stamp=False)  # the animator's
    bones = toes + ["LeftArm", "LeftHand"]

    def arm(heads):  # shoulder to hand: the fix moves the pelvis, not the arm
        return heads[:, 3] - heads[:, 2]

    shown = world_heads(addon, obj, bones, frames)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    anim = obj.animation_data
    assert anim.action.name == "raised_arm.footlock" and [track.mute for track in anim.nla_tracks] == [True]
    fixed = world_heads(addon, obj, bones, frames)
    assert np.abs(arm(fixed) - arm(shown)).max() < 1e-4  # the raised arm plays in the result
    locked = obj.foot_lock.report.contact_frames  # the right foot's only: the left one never plants

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}  # again, from the result
    assert anim.action.name == "raised_arm.footlock"
    assert sorted(a.name for a in addon.data.actions) == ["cmu_07_01", "raised_arm", "raised_arm.footlock"]
    assert obj.foot_lock.report.contact_frames == locked
    assert np.abs(world_heads(addon, obj, bones, frames) - fixed).max() < 1e-3  # the same result


def test_an_action_on_top_of_the_strips_that_moves_the_object_keeps_it_moving(addon, clips_dir):
    """The action on top carries the object across the room (its own location keys): the
    result, which replaces it, keys that travel too."""
    from foot_lock.adapters import action_compat

    obj, _, strip = nla_walk(addon, clips_dir)
    first, last = int(strip.frame_start), int(np.ceil(strip.frame_end))
    addon.ops.foot_lock.detect_legs()
    action_compat.assign_action(obj, addon.data.actions.new("carried"))
    for frame, x in ((first, 0.0), (last, 3.0)):
        obj.location.x = x
        obj.keyframe_insert("location", index=0, frame=frame)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert obj.animation_data.action.name == "carried.footlock"
    scene = addon.context.scene
    for frame, x in ((first, 0.0), ((first + last) // 2, 1.5), (last, 3.0)):
        scene.frame_set(frame)
        assert obj.matrix_world.translation.x == pytest.approx(x, abs=0.01)


def test_a_foot_planted_on_both_sides_of_a_repeat_s_jump_holds_after_it(addon, sliding):
    """The sliding walk repeated by its strip: its right foot stands on both sides of the
    jump back. The lock is solved piece by piece between jumps, so nothing it built up
    before the jump (the swing's ease, a held correction) pulls the planted foot after it
    (it slid up to 25 cm/s for 30 frames)."""
    from blender_scenes import import_clip
    from foot_lock.adapters import armature

    obj = import_clip(addon, sliding)
    anim = obj.animation_data
    strip = anim.nla_tracks.new().strips.new("walk", 11, anim.action)
    strip.repeat = 2.0
    anim.action = None
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    frames = np.arange(11, int(strip.frame_end) + 1)
    toes = [leg.toe for leg in obj.foot_lock.legs]
    planted = np.array([armature.read_contact_curve(obj, anim.action, toe, frames) > 0.5 for toe in toes])
    steps = np.linalg.norm(np.diff(world_heads(addon, obj, toes, frames)[..., :2], axis=0), axis=-1).T
    held = steps[planted[:, 1:] & planted[:, :-1]] * addon.context.scene.render.fps * 100.0  # cm/s
    assert planted[:, :len(frames) // 2].any(axis=1).all() and planted[:, len(frames) // 2:].any(axis=1).all()
    assert held.max() < 1.0
