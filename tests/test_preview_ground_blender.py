"""Preview on ground that moves -- a platform keyed to translate under the walk, a floor
whose modifier raises it over time, ground keyed but still -- and a hop over stairs.

A foot planted on moving ground holds relative to that ground (measured in the
platform's own space); ground that does not move gives what still ground gives.
"""

import math

import numpy as np
import pytest
from blender_scenes import import_clip, leg_bones, reference_labels_by_leg, world_joints, write_sliding_bvh
from clip_scenarios import settled
from foot_lock.solvers.runtime_lock import RuntimeSettings
from test_preview_blender import CLIP, START, frames_of, play, scene_fps, walk_terrain

pytestmark = pytest.mark.blender

PLATFORM = 2.0  # m, the platform's length along the walk (and its width across it)


def keyed_linearly(obj, owner, path, values, frames):
    """Key ``owner``'s ``path`` (``owner``: ``obj`` or a part of it, such as a modifier) to
    ``values`` at ``frames``, linear in between (constant speed)."""
    from foot_lock.adapters import action_compat

    for value, frame in zip(values, frames):
        setattr(owner, path, value)
        owner.keyframe_insert(path, frame=int(frame))
    for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action):
        for point in fcurve.keyframe_points:
            point.interpolation = "LINEAR"


def platform(bpy, terrain, frames, velocity, lift=0.0):
    """A square platform ``PLATFORM`` wide whose near edge is at the terrain's ``START`` on
    the first frame, translating at ``velocity`` (3,) m/s, its top ``lift`` above the floor."""
    half = 0.5 * PLATFORM
    corners = [(-half, -half, 0.0), (half, -half, 0.0), (half, half, 0.0), (-half, half, 0.0)]
    mesh = bpy.data.meshes.new("Platform")
    mesh.from_pydata(corners, [], [(0, 1, 2, 3)])
    obj = bpy.data.objects.new("Platform", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.rotation_euler.z = math.atan2(terrain.axis[1], terrain.axis[0])
    start = terrain.origin + (START + half) * terrain.axis + (0.0, 0.0, lift)
    duration = (frames[-1] - frames[0]) / scene_fps(bpy)
    keyed_linearly(obj, obj, "location", [tuple(start), tuple(start + duration * np.asarray(velocity))],
                   [frames[0], frames[-1]])
    return obj


def play_with_ground(bpy, obj, ground, frames, bones):
    """World heads (F, B, 3) of ``bones`` as shown and ``ground``'s world matrices (F, 4, 4), frame by frame."""
    shown, matrices = [], []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        shown.append([tuple(obj.matrix_world @ obj.pose.bones[bone].head) for bone in bones])
        matrices.append(np.array(ground.matrix_world))
    return np.array(shown), np.array(matrices)


def in_space_of(matrices, points):
    """(F, L, 3) world points (F, L, 3) in the space of per-frame matrices (F, 4, 4)."""
    inverse = np.linalg.inv(matrices)
    return np.einsum("fij,flj->fli", inverse[:, :3, :3], points) + inverse[:, None, :3, 3]


def stance(obj, source, blend_time):
    reference = reference_labels_by_leg(source)
    contacts = np.array([reference[leg.name] for leg in obj.foot_lock.legs]) > 0.5
    return settled(contacts, blend_time).T  # (F, L)


def walk_on_platform(addon, clips_dir, along, across):
    """The walk previewed onto a platform moving ``along`` and ``across`` its direction (m/s),
    no other ground: planted-toe speeds (cm/s) over frames planted on the platform, measured
    in the platform's space and in the world."""
    source = clips_dir / f"{CLIP}.bvh"
    obj = import_clip(addon, source)
    addon.ops.foot_lock.detect_legs()
    frames = frames_of(obj)
    terrain = walk_terrain(obj, "flat")
    ground = platform(addon, terrain, frames, along * terrain.axis + across * terrain.side)
    toes = leg_bones(obj, "toe")
    obj.foot_lock.preview = True
    shown, matrices = play_with_ground(addon, obj, ground, frames, toes)
    assert obj.foot_lock.preview_error == "" and np.isfinite(shown).all()
    local = in_space_of(matrices, shown)
    fps = scene_fps(addon)
    planted = stance(obj, source, math.ceil(obj.foot_lock.blend_time * fps))
    on = (np.abs(local[..., :2]) < 0.5 * PLATFORM - 0.05).all(axis=-1) & planted
    both = on[1:] & on[:-1]

    def speed(points):
        return 100.0 * np.linalg.norm(np.diff(points[..., :2], axis=0), axis=-1)[both] * fps

    return speed(local), speed(shown)


@pytest.mark.parametrize("along, across", [(0.3, 0.0), (0.0, 0.2), (-0.15, 0.15)])
def test_a_foot_planted_on_a_moving_platform_moves_with_it(addon, clips_dir, along, across):
    """Planted on a platform translating at constant speed, a toe holds on the platform
    (it moves in the world at the platform's speed)."""
    on_platform, in_world = walk_on_platform(addon, clips_dir, along, across)
    assert len(on_platform) > 50
    assert on_platform.mean() <= 1.0  # cm/s, relative to the platform
    assert abs(np.median(in_world) - 100.0 * math.hypot(along, across)) <= 1.0


RAISE = 0.1  # m, how far the modifier raises the floor over the clip


def test_a_floor_a_modifier_raises_over_time_carries_the_walk_up(addon, clips_dir):
    """A Displace modifier keyed to raise the floor steadily: the ground is evaluated per
    frame, the planted toes stay on it and the body rises with it (as it moves on the same
    floor kept still, plus the eased climb's lag)."""
    source = clips_dir / f"{CLIP}.bvh"
    obj = import_clip(addon, source)
    addon.ops.foot_lock.detect_legs()
    frames = frames_of(obj)
    floor = walk_terrain(obj, "flat").build(addon)
    bones = leg_bones(obj, "toe") + ["Hips"]
    authored = world_joints(obj, bones)
    obj.foot_lock.preview = True
    still = play(addon, obj, frames, bones)[:, -1, 2] - authored[:, -1, 2]
    obj.foot_lock.preview = False
    displace = floor.modifiers.new("Raise", "DISPLACE")  # no texture: strength * (1 - mid level) along the normal
    keyed_linearly(floor, displace, "strength", [0.0, 2.0 * RAISE], [frames[0], frames[-1]])
    obj.foot_lock.preview = True
    shown = play(addon, obj, frames, bones)
    assert obj.foot_lock.preview_error == ""
    raised = RAISE * (frames - frames[0]) / (frames[-1] - frames[0])
    planted = stance(obj, source, math.ceil(obj.foot_lock.blend_time * scene_fps(addon)))
    above = shown[:, :-1, 2] - raised[:, None] - authored[:, :-1, 2]
    assert np.abs(above)[planted].max() < 0.002  # each planted toe at its authored height above the floor
    lift = shown[:, -1, 2] - authored[:, -1, 2] - raised
    # The climb's lag: the rise rate times the root's 0.15 s time constant, 6 mm.
    lag = RAISE / ((frames[-1] - frames[0]) / scene_fps(addon)) * RuntimeSettings().root_follow_smoothing
    assert np.abs(lift - still).max() < lag + 0.002

def test_ground_keyed_but_still_is_still_ground(addon, clips_dir):
    """A floor with keys that do not move it is sampled once, found still, and previews
    exactly as the same floor without keys."""
    from foot_lock.adapters import terrain as ground_module

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_legs()
    frames = frames_of(obj)
    floor = walk_terrain(obj, "ramp").build(addon)
    bones = [bone.name for bone in obj.data.bones]
    obj.foot_lock.preview = True
    unkeyed = play(addon, obj, frames, bones)
    obj.foot_lock.preview = False
    keyed_linearly(floor, floor, "location", [(0.0, 0.0, 0.0)] * 2, [frames[0], frames[-1]])
    scene = addon.context.scene
    ground = ground_module.ground_over(scene, addon.context.evaluated_depsgraph_get(), [floor.name], frames)
    assert ground_module.may_change(floor) and ground.moving == [] and ground.tree is not None
    obj.foot_lock.preview = True
    assert np.abs(play(addon, obj, frames, bones) - unkeyed).max() < 1e-6


def test_bake_preview_keys_what_the_viewport_shows_on_a_moving_platform(addon, clips_dir):
    """Also after a setting changed while previewing (simulated again from inside a frame
    change, the scene stepped through the range there): the baked action plays exactly
    what the viewport showed."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_legs()
    frames = frames_of(obj)
    terrain = walk_terrain(obj, "flat")
    ground = platform(addon, terrain, frames, 0.2 * terrain.side, lift=0.05)
    bones = leg_bones(obj, "toe") + leg_bones(obj, "foot") + ["Hips"]
    obj.foot_lock.preview = True
    first = play(addon, obj, frames, bones)
    obj.foot_lock.blend_time = 0.1
    shown, matrices = play_with_ground(addon, obj, ground, frames, bones)
    assert obj.foot_lock.preview_error == "" and np.abs(shown - first).max() > 1e-3
    assert np.abs(matrices[-1, :3, 3] - matrices[0, :3, 3]).max() > 0.2  # the platform moved
    assert addon.ops.foot_lock.bake_preview() == {"FINISHED"}
    assert obj.animation_data.action.name == f"{CLIP}.preview" and not obj.foot_lock.preview
    assert np.abs(world_joints(obj, bones) - shown).max() < 1e-4


@pytest.mark.parametrize("root_scale", [1.0, 1.25])
def test_a_hop_over_stairs_plants_its_feet_on_the_steps(addon, clips_dir, tmp_path, root_scale):
    """The bundled hop (start, hop, stop and turn) over 12 cm stairs along its path, without
    contact curves: planted toes keep their authored height above the step under them
    (3.7 and 4.5 cm before feet were set down clear of step edges) and do not slide."""
    source = clips_dir / "cmu_131_03.bvh"
    path = write_sliding_bvh(source, tmp_path / source.name, root_scale) if root_scale != 1.0 else source
    obj = import_clip(addon, path)
    addon.ops.foot_lock.detect_legs()
    terrain = walk_terrain(obj, "stairs")
    terrain.build(addon)
    toes = leg_bones(obj, "toe")
    authored = world_joints(obj, toes)
    obj.foot_lock.preview = True
    shown = play(addon, obj, frames_of(obj), toes)
    assert obj.foot_lock.preview_error == "" and np.isfinite(shown).all()
    fps = scene_fps(addon)
    planted = stance(obj, source, math.ceil(obj.foot_lock.blend_time * fps))
    above = shown[..., 2] - terrain.height(shown)
    assert planted.sum() > 500
    assert np.abs(above - authored[..., 2])[planted].max() <= 0.01
    both = planted[1:] & planted[:-1]
    assert 100.0 * np.linalg.norm(np.diff(shown[..., :2], axis=0), axis=-1)[both].mean() * fps <= 1.0  # cm/s


def _box_stairs(bpy, origin, axis, rise, run, steps, width=3.0):
    """Solid stairs (a box a step, from half a metre below the floor to its tread) along the
    walk's ``axis`` from ``START`` on, beyond a floor box; each tread ``rise`` above the last."""
    side = np.cross((0.0, 0.0, 1.0), axis)
    vertices, faces = [], []
    treads = [(-3.0, START, 0.0)] + [(START + k * run, START + (k + 1) * run, rise * (k + 1)) for k in range(steps)]
    for s0, s1, top in treads:
        base = len(vertices)
        for s, w, z in ((s0, -1, -0.5), (s1, -1, -0.5), (s1, 1, -0.5), (s0, 1, -0.5),
                        (s0, -1, top), (s1, -1, top), (s1, 1, top), (s0, 1, top)):
            vertices.append(tuple(origin + s * axis + 0.5 * w * width * side + (0.0, 0.0, z)))
        faces += [tuple(base + i for i in face) for face in
                  ((0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7))]
    mesh = bpy.data.meshes.new("Stairs")
    mesh.from_pydata(vertices, [], faces)
    bpy.context.scene.collection.objects.link(bpy.data.objects.new("Stairs", mesh))

    def height(points):
        s = (np.asarray(points)[..., :2] - origin[:2]) @ axis[:2] - START
        return rise * np.clip(np.floor(s / run) + 1.0, 0.0, steps)
    return height


def test_a_walk_up_solid_stairs_climbing_a_step_and_more_a_stride_lands_on_each_tread(addon, clips_dir):
    """Boxes of 20 cm risers and 40 cm treads: the walk's strides climb 40 cm, and a landing
    tread can lie further above the body (held down by the foot planted below) than the
    ground the feet may find (0.5 m) reached: measured from there, the ray started inside the
    step, the foot was let down short of its tread and popped up 10.6 cm in a frame. The
    ground a foot may find is measured from the highest foot planted too."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_legs()
    terrain = walk_terrain(obj, "stairs")
    height = _box_stairs(addon, terrain.origin, terrain.axis, 0.2, 0.4, 12)
    toes = leg_bones(obj, "toe")
    authored = world_joints(obj, toes)
    obj.foot_lock.preview = True
    shown = play(addon, obj, frames_of(obj), toes)
    assert obj.foot_lock.preview_error == "" and np.isfinite(shown).all()
    shown_steps, authored_steps = (np.linalg.norm(np.diff(points, axis=0), axis=-1) for points in (shown, authored))
    assert (shown_steps - authored_steps).max() <= 0.03  # no toe pops past the clip's own steps
    planted = stance(obj, clips_dir / f"{CLIP}.bvh", math.ceil(obj.foot_lock.blend_time * scene_fps(addon)))
    assert np.abs(shown[..., 2] - height(shown) - authored[..., 2])[planted].max() <= 0.01
