"""Preview kept live, in real Blender: whatever frame is shown, however it was reached, after
any edit of what the preview depends on, and once baked, the pose is the runtime lock
simulated from the first frame on the scene as it is now.

The scene is the CMU walk with its root 1.25x too fast (its feet slide), without contact
curves, over 12 cm stairs built along its path (or on a keyed moving platform). What is
shown is every pose bone's world matrix as Blender evaluated it (``foreach_get`` on the
evaluated armature), so a channel the preview forgot to write, or wrote from another
frame, shows.
"""

import numpy as np
import pytest
from blender_scenes import import_clip, leg_bones, world_joints, write_sliding_bvh
from test_preview_blender import CLIP, frames_of, walk_terrain
from test_preview_ground_blender import platform

pytestmark = pytest.mark.blender

SAME = 1e-6  # m (and unitless, for the rotation part): what playing from the start shows


def sliding_walk(bpy, clips_dir, folder, kind="stairs"):
    """The walk with its root 1.25x too fast, its legs found (no contact curves), over
    ``kind`` terrain: (armature, terrain, terrain object or None)."""
    source = clips_dir / f"{CLIP}.bvh"
    obj = import_clip(bpy, write_sliding_bvh(source, folder / source.name, 1.25))
    assert bpy.ops.foot_lock.detect_legs() == {"FINISHED"}
    terrain = walk_terrain(obj, "flat" if kind == "none" else kind)
    return obj, terrain, None if kind == "none" else terrain.build(bpy)


def shown_matrices(bpy, obj):
    """(B, 4, 4) world matrices of every pose bone, as Blender evaluated them for the frame shown."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    bones = evaluated.pose.bones
    flat = np.empty(16 * len(bones))
    bones.foreach_get("matrix", flat)
    return np.array(evaluated.matrix_world) @ flat.reshape(-1, 4, 4).transpose(0, 2, 1)  # (column-major)


def play_matrices(bpy, obj, frames):
    """(F, B, 4, 4) :func:`shown_matrices` on each of ``frames``, visited in that order."""
    shown = []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        shown.append(shown_matrices(bpy, obj))
    return np.array(shown)


def bone_indices(obj, names):
    index = {bone.name: k for k, bone in enumerate(obj.pose.bones)}
    return [index[name] for name in names]


def feet_of(obj):
    """Indices into the pose bones of every leg's foot and toe."""
    return bone_indices(obj, leg_bones(obj, "foot") + leg_bones(obj, "toe"))


# --- scrubbing and jumping ------------------------------------------------------------------


@pytest.mark.parametrize("shared", [False, True], ids=["own-action", "shared-action"])
def test_any_frame_reached_in_any_order_shows_what_playing_from_the_start_shows(addon, clips_dir, tmp_path, shared):
    """Frames visited in a random order, backward, and by jumps out of the clip's range and
    back: each shows exactly what a sequential play from the first frame showed; outside the
    range, the nearest end of it, as the animation holds its ends (it showed the clip's end
    unlocked, and Bake Preview's action held the preview's). An
    armature whose action is its own is posed before evaluation (its curves muted); one
    sharing its action after the animation, writing only the bones the preview moves."""
    from foot_lock.adapters import preview

    obj, _, _ = sliding_walk(addon, clips_dir, tmp_path)
    if shared:
        other = obj.copy()
        addon.context.scene.collection.objects.link(other)
        other.location.x = 3.0
    frames = frames_of(obj)
    outside = np.array([frames[0] - 5, frames[-1] + 7])
    authored = play_matrices(addon, obj, np.concatenate((frames, outside)))
    pose_bone = obj.pose.bones[leg_bones(obj, "toe")[0]]
    assert np.allclose(authored[-1, bone_indices(obj, [pose_bone.name])[0]],
                       np.array(obj.matrix_world @ pose_bone.matrix), atol=1e-6)  # the flat buffer read right
    obj.foot_lock.preview = True
    from_start = play_matrices(addon, obj, frames)
    assert preview._previews[obj.name].drives is not shared
    assert np.isfinite(from_start).all()
    assert np.abs(from_start - authored[: len(frames)])[:, feet_of(obj)].max() > 0.05  # the preview moves the feet
    rng = np.random.default_rng(11)
    visits = np.concatenate((rng.permutation(frames), frames[::-1], rng.choice(frames, 40)))
    for at in rng.choice(len(visits), 6, replace=False):  # jumps out of the range and back
        visits = np.insert(visits, at, rng.choice(outside))
    shown = play_matrices(addon, obj, visits)
    inside = (visits >= frames[0]) & (visits <= frames[-1])
    assert np.abs(shown[inside] - from_start[visits[inside] - frames[0]]).max() <= SAME
    ends = np.clip(visits[~inside] - frames[0], 0, len(frames) - 1)
    assert np.abs(shown[~inside] - from_start[ends]).max() <= SAME
    assert np.abs(authored[len(frames) + 1] - authored[len(frames) - 1]).max() <= SAME  # the clip holds its end
    assert obj.foot_lock.preview_error == ""


# --- edits of what the preview depends on -------------------------------------------------


def settled(bpy):
    """The depsgraph updated and a refresh the last edit asked for run, as Blender's event
    loop runs the timer (the bpy module has no event loop): the scene as the viewport shows it."""
    from foot_lock.adapters import preview

    bpy.context.view_layer.update()  # where depsgraph_update_post runs
    if bpy.app.timers.is_registered(preview._refresh):
        bpy.app.timers.unregister(preview._refresh)
        preview._refresh()


def assert_shows_a_fresh_preview(bpy, obj, before):
    """After an edit: once the depsgraph saw it, the refresh it asks for (without a frame
    change) shows on the current frame, and every frame then, what Preview started afresh
    on the edited scene shows; the feet differ from what was shown ``before`` (F, B, 4, 4)."""
    from foot_lock.adapters import preview

    bpy.context.view_layer.update()  # where depsgraph_update_post runs
    assert bpy.app.timers.is_registered(preview._refresh), "the edit is not simulated again until a frame change"
    settled(bpy)
    assert_matches_a_fresh_start(bpy, obj, before)


def assert_matches_a_fresh_start(bpy, obj, before):
    """The current frame, and every frame then, show what Preview started afresh on the
    scene as it is shows; the feet differ from what was shown ``before`` (F, B, 4, 4)."""
    frames, current = frames_of(obj), bpy.context.scene.frame_current
    now = shown_matrices(bpy, obj)
    shown = play_matrices(bpy, obj, frames)
    obj.foot_lock.preview = False
    obj.foot_lock.preview = True
    fresh = play_matrices(bpy, obj, frames)
    assert obj.foot_lock.preview_error == ""
    assert np.abs(now - fresh[current - frames[0]]).max() <= SAME
    assert np.abs(shown - fresh).max() <= SAME
    assert np.abs(shown - before)[:, feet_of(obj)].max() > 0.01  # the edit changed the feet


def previewed(bpy, obj, frame=150):
    """Preview on, every frame played, then left on ``frame``: what it showed (F, B, 4, 4)."""
    obj.foot_lock.preview = True
    settled(bpy)
    shown = play_matrices(bpy, obj, frames_of(obj))
    bpy.context.scene.frame_set(frame)
    settled(bpy)
    return shown


def keys_of(obj, data_path, index=0):
    from foot_lock.adapters import action_compat

    for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action):
        if fcurve.data_path == data_path and fcurve.array_index == index:
            return fcurve
    raise AssertionError(f"no curve {data_path}[{index}] on {obj.name}")


def test_moving_a_key_of_a_moving_platform_simulates_again(addon, clips_dir, tmp_path):
    """The walk on a platform keyed to slide across it: its last key moved further across."""
    obj, terrain, _ = sliding_walk(addon, clips_dir, tmp_path, "none")
    ground = platform(addon, terrain, frames_of(obj), 0.2 * terrain.side, lift=0.05)
    before = previewed(addon, obj)
    for index in range(2):
        fcurve = keys_of(ground, "location", index)
        last = fcurve.keyframe_points[-1]
        last.co_ui = (last.co.x, last.co.y + 0.4 * terrain.side[index])
        fcurve.update()
    assert_shows_a_fresh_preview(addon, obj, before)


def test_moving_the_ground_meshs_vertices_simulates_again(addon, clips_dir, tmp_path):
    """The stairs' vertices moved: each step 6 cm higher than it was."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    before = previewed(addon, obj)
    for vertex in stairs.data.vertices:
        vertex.co.z *= 1.5
    stairs.data.update()
    assert_shows_a_fresh_preview(addon, obj, before)


@pytest.mark.parametrize("edit", ["hide_viewport", "hide_set", "delete", "out of the ground collection"])
def test_hiding_or_deleting_the_ground_simulates_again(addon, clips_dir, tmp_path, edit):
    """The stairs hidden in the viewport or the view layer, deleted, or taken out of the
    ground collection: the feet lock on the clip's floor."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    if edit == "out of the ground collection":
        obj.foot_lock.ground_collection = ground_collection(addon, stairs)
    before = previewed(addon, obj)
    if edit == "hide_viewport":
        stairs.hide_viewport = True
    elif edit == "hide_set":
        stairs.hide_set(True)
    elif edit == "delete":
        addon.data.objects.remove(stairs)
    else:
        obj.foot_lock.ground_collection.objects.unlink(stairs)
    assert_shows_a_fresh_preview(addon, obj, before)


def ground_collection(bpy, obj):
    """A new collection in the scene, holding ``obj`` (which stays in the scene's own collection too)."""
    collection = bpy.data.collections.new("Ground")
    bpy.context.scene.collection.children.link(collection)
    collection.objects.link(obj)
    return collection


def test_only_updates_that_may_change_the_ground_list_the_scenes_meshes(addon, clips_dir, tmp_path, monkeypatch):
    """Listing the ground is a pass over the scene's objects: an update that moves an empty
    or a bone does not pay for it; hiding a mesh does (and so every preview stays right)."""
    from foot_lock.adapters import terrain

    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    addon.ops.object.empty_add()
    empty = addon.context.active_object
    previewed(addon, obj)
    listed = []
    monkeypatch.setattr(terrain, "ground_objects", lambda *args: listed.append(args) or [])
    for edit in (lambda: setattr(empty, "location", (1.0, 2.0, 3.0)),
                 lambda: setattr(obj.pose.bones[0], "location", (0.0, 0.1, 0.0))):
        edit()
        addon.context.view_layer.update()
    assert listed == []
    stairs.hide_set(True)
    addon.context.view_layer.update()
    assert listed, "hiding a mesh must have the ground listed again"
    monkeypatch.undo()
    settled(addon)  # the refresh the hiding asked for, on the real ground


def test_changing_a_preview_setting_simulates_again(addon, clips_dir, tmp_path):
    """A setting edited in the panel: the interface tags the armature (a script setting a
    property does not; the frame handler finds that on a frame change)."""
    obj, _, _ = sliding_walk(addon, clips_dir, tmp_path)
    before = previewed(addon, obj)
    obj.foot_lock.blend_time = 0.05
    obj.update_tag()  # what editing a property in the interface does
    assert_shows_a_fresh_preview(addon, obj, before)


def test_moving_a_contact_curve_key_simulates_again(addon, clips_dir, tmp_path):
    """With contact curves: the start of one stance of the left toe's curve moved 0.15 s later."""
    obj, _, _ = sliding_walk(addon, clips_dir, tmp_path)
    assert addon.ops.foot_lock.detect_contacts() == {"FINISHED"}
    before = previewed(addon, obj)
    fcurve = keys_of(obj, f'pose.bones["{leg_bones(obj, "toe")[0]}"]["foot_contact"]')
    points = fcurve.keyframe_points
    starts = [k for k in range(1, len(points) - 1) if points[k].co.y > 0.5 > points[k - 1].co.y]
    start = points[starts[len(starts) // 2]]
    start.co_ui = (start.co.x + round(0.15 * addon.context.scene.render.fps), start.co.y)
    fcurve.update()
    assert_shows_a_fresh_preview(addon, obj, before)


# --- bake ---------------------------------------------------------------------------------


BAKED = 1e-5  # m: the keys are single precision


def test_bake_preview_keys_what_the_viewport_shows_on_the_sliding_walk(addon, clips_dir, tmp_path):
    """The sliding walk over the stairs, without contact curves: the baked action, played
    (every pose bone evaluated) and read from its keys, is the pose the viewport showed,
    also on a frame past each end of the clip (the BVH importer's scene ends a frame after
    its last key)."""
    obj, _, _ = sliding_walk(addon, clips_dir, tmp_path)
    frames = frames_of(obj)
    frames = np.concatenate(([frames[0] - 1], frames, [frames[-1] + 1]))
    authored = play_matrices(addon, obj, frames)
    obj.foot_lock.preview = True
    shown = play_matrices(addon, obj, frames)
    assert np.abs(shown - authored)[:, feet_of(obj)].max() > 0.05
    assert addon.ops.foot_lock.bake_preview() == {"FINISHED"}
    assert not obj.foot_lock.preview and obj.animation_data.action.name == f"{CLIP}.preview"
    played = play_matrices(addon, obj, frames)
    assert np.abs(played - shown).max() <= BAKED
    keyed = world_joints(obj, [bone.name for bone in obj.pose.bones])
    assert np.abs(keyed - shown[1:-1, :, :3, 3]).max() <= BAKED
