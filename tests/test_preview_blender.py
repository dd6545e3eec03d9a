"""Preview on terrain in real Blender: a walk authored on flat ground, played over a ramp
and up stairs built along its path, as the runtime foot lock poses it frame by frame.

The terrain is built here as a mesh along the walk. Heights are measured against the
same terrain as a function, so every figure is independent of the raycasts under test.
Contacts are the clip's ``foot_contact`` curves (Detect Contacts); a contact's first
``blend_time`` is the inertialized catch-up into the lock, not part of the stance.
"""

import math

import numpy as np
import pytest
from blender_scenes import import_clip, leg_bones, reference_labels_by_leg, world_joints, write_sliding_bvh
from clip_scenarios import settled
from test_addon_blender import snapshot

pytestmark = pytest.mark.blender

CLIP = "cmu_07_01"
FLOOR = 0.0  # the clip's floor: the armature's origin, at the world origin
RISE, RUN = 0.12, 0.5  # stairs
SLOPE = math.radians(5.0)  # ramp
START = 0.6  # metres along the walk from its first frame to where the terrain rises


# --- scenes -----------------------------------------------------------------------------


class Terrain:
    """Ground rising along a walk's horizontal direction ``axis`` from ``origin``: flat up
    to ``START``, then a 5 degree ramp or 12/50 cm stairs."""

    def __init__(self, kind, origin, axis):
        self.kind, self.origin, self.axis = kind, origin, axis
        self.side = np.cross((0.0, 0.0, 1.0), axis)

    def along(self, points):
        return (np.asarray(points)[..., :2] - self.origin[:2]) @ self.axis[:2]

    def height(self, points):
        """Height of the terrain under world points (..., 3)."""
        s = self.along(points) - START
        if self.kind == "flat":
            return np.zeros(s.shape)
        if self.kind == "ramp":
            return np.maximum(s, 0.0) * math.tan(SLOPE)
        return RISE * np.maximum(np.floor(s / RUN) + 1.0, 0.0)

    def strips(self, length):
        """(s0, s1, h0, h1) of each strip of the surface, from behind the start on."""
        if self.kind == "flat":
            return [(-2.0, length, 0.0, 0.0)]
        if self.kind == "ramp":
            return [(-2.0, START, 0.0, 0.0), (START, length, 0.0, (length - START) * math.tan(SLOPE))]
        steps = math.ceil((length - START) / RUN)
        return [(-2.0, START, 0.0, 0.0)] + [
            (START + k * RUN, START + (k + 1) * RUN, RISE * (k + 1), RISE * (k + 1)) for k in range(steps)
        ]

    def build(self, bpy, length=6.0, width=2.0, name="Terrain", lift=0.0, collection=None):
        """The surface, raised by ``lift``, as a mesh object (one quad per strip) in
        ``collection`` (default: the scene's)."""
        vertices, faces = [], []
        for s0, s1, h0, h1 in self.strips(length):
            base = len(vertices)
            for s, h, w in ((s0, h0, -width), (s1, h1, -width), (s1, h1, width), (s0, h0, width)):
                vertices.append(tuple(self.origin + s * self.axis + w * self.side + (0.0, 0.0, h + lift)))
            faces.append((base, base + 1, base + 2, base + 3))
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata(vertices, [], faces)
        obj = bpy.data.objects.new(name, mesh)
        (collection or bpy.context.scene.collection).objects.link(obj)
        return obj


def walk_terrain(obj, kind):
    """The terrain along the armature's walk, from the pelvis' first to last position."""
    pelvis = world_joints(obj, ["Hips"])[:, 0]
    axis = pelvis[-1] - pelvis[0]
    axis[2] = 0.0
    origin = pelvis[0].copy()
    origin[2] = FLOOR
    return Terrain(kind, origin, axis / np.linalg.norm(axis))


def frames_of(obj):
    from foot_lock.adapters.jobs import active_action, frame_range

    start, end = frame_range(active_action(obj))
    return np.arange(start, end + 1)


def play(bpy, obj, frames, bones):
    """World heads (F, len(bones), 3) of ``bones`` as shown, stepping the scene through ``frames``."""
    shown = []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        shown.append([tuple(obj.matrix_world @ obj.pose.bones[bone].head) for bone in bones])
    return np.array(shown)


def scene_fps(bpy):
    return bpy.context.scene.render.fps / bpy.context.scene.render.fps_base


# The scenarios: no ground mesh, a floor, a 5 degree ramp, 12 cm stairs; the walk
# as authored and with its root 1.25x too fast; no contact curves (one with curves).
SCENARIOS = [(kind, scale, False) for kind in ("none", "flat", "ramp", "stairs") for scale in (1.0, 1.25)]
SCENARIOS.append(("stairs", 1.25, True))
_previewed = {}  # scenario -> what it showed, computed once for the module


def scenario_id(scenario):
    kind, scale, curves = scenario
    return f"{kind}-x{scale}{'-curves' if curves else ''}"


def previewed(scenario, clips_dir, folder):
    """The walk previewed over the terrain: what is shown, what was authored, the
    reference contacts of the clips README (arrays only: the add-on is unregistered again
    before the tests run)."""
    if scenario not in _previewed:
        _previewed[scenario] = _preview_scenario(scenario, clips_dir, folder)
    return _previewed[scenario]


def _preview_scenario(scenario, clips_dir, folder):
    import bpy
    import foot_lock

    kind, scale, curves = scenario
    source = clips_dir / f"{CLIP}.bvh"
    path = write_sliding_bvh(source, folder / f"{CLIP}.bvh", scale) if scale != 1.0 else source
    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    try:
        obj = import_clip(bpy, path)
        bpy.ops.foot_lock.detect_legs()
        if curves:
            assert bpy.ops.foot_lock.detect_contacts() == {"FINISHED"}
        terrain = walk_terrain(obj, "flat" if kind == "none" else kind)
        if kind != "none":
            terrain.build(bpy)
        frames = frames_of(obj)
        toes = leg_bones(obj, "toe")
        bones = toes + leg_bones(obj, "foot") + ["Hips"]
        authored = world_joints(obj, bones)
        obj.foot_lock.preview = True
        shown = play(bpy, obj, frames, bones)
        legs = len(toes)
        reference = reference_labels_by_leg(source)
        return {
            "terrain": terrain,
            "shown": shown[:, :legs],
            "authored": authored[:, :legs],
            "ankles": shown[:, legs:-1],
            "authored_ankles": authored[:, legs:-1],
            "pelvis": shown[:, -1],
            "authored_pelvis": authored[:, -1],
            "contacts": np.array([reference[leg.name] for leg in obj.foot_lock.legs]).T > 0.5,  # (F, L)
            "fps": scene_fps(bpy),
            "blend_frames": math.ceil(obj.foot_lock.blend_time * scene_fps(bpy)),
            "error": obj.foot_lock.preview_error,
        }
    finally:
        foot_lock.unregister()


@pytest.fixture(scope="module", params=SCENARIOS, ids=scenario_id)
def walk_on_terrain(request, clips_dir, tmp_path_factory):
    return previewed(request.param, clips_dir, tmp_path_factory.mktemp("clips"))


@pytest.fixture(scope="module", params=[("ramp", 1.0, False), ("stairs", 1.0, False)], ids=scenario_id)
def climb(request, clips_dir, tmp_path_factory):
    """The clean walk up the ramp and the stairs (whose feet only the terrain turns)."""
    return previewed(request.param, clips_dir, tmp_path_factory.mktemp("clips"))


# --- the targets ------------------------------------------------------------------


def stance_of(s):
    """(F, L) contact frames after each contact's inertialized catch-up."""
    return settled(s["contacts"].T, s["blend_frames"]).T


def test_preview_runs_without_error(walk_on_terrain):
    s = walk_on_terrain
    assert s["error"] == ""
    assert np.isfinite(s["shown"]).all() and np.isfinite(s["pelvis"]).all()


def test_planted_toe_does_not_slide(walk_on_terrain):
    s = walk_on_terrain
    stance = stance_of(s)
    both = stance[1:] & stance[:-1]
    step = np.linalg.norm(np.diff(s["shown"][..., :2], axis=0), axis=-1)
    assert both.sum() > 100
    assert 100.0 * step[both].mean() * s["fps"] <= 1.0  # cm/s


def test_planted_toe_keeps_its_authored_height_above_the_terrain(walk_on_terrain):
    s = walk_on_terrain
    stance = stance_of(s)
    above = s["shown"][..., 2] - s["terrain"].height(s["shown"])
    authored = s["authored"][..., 2] - FLOOR
    assert np.abs(above - authored)[stance].max() <= 0.01


def test_swinging_toe_keeps_half_its_clearance(walk_on_terrain):
    """Over every step edge too: the terrain is measured right under the shown toe."""
    s = walk_on_terrain
    above = s["shown"][..., 2] - s["terrain"].height(s["shown"])
    authored = s["authored"][..., 2] - FLOOR
    swing = ~s["contacts"] & (authored > 0.01)
    assert swing.sum() > 100
    assert (above[swing] >= 0.5 * authored[swing] - 0.005).all()


def test_no_toe_jumps_beyond_the_animations_largest_step(walk_on_terrain):
    s = walk_on_terrain

    def steps(points):
        return np.linalg.norm(np.diff(points, axis=0), axis=-1)

    assert steps(s["shown"]).max() <= steps(s["authored"]).max() + 0.02


def test_planted_feet_follow_the_slope(climb):
    """On the ramp a planted foot pitches up by the slope; on stairs (flat treads) it stays
    as authored."""
    s = climb
    terrain = s["terrain"]

    def pitch(toes, ankles):
        foot = toes - ankles
        return np.degrees(np.arctan2(foot[..., 2], foot[..., :2] @ terrain.axis[:2]))

    stance = settled(s["contacts"].T, s["blend_frames"]).T & (terrain.along(s["shown"]) > START + 0.3)
    turned = (pitch(s["shown"], s["ankles"]) - pitch(s["authored"], s["authored_ankles"]))[stance]
    expected = math.degrees(SLOPE) if terrain.kind == "ramp" else 0.0
    assert stance.sum() > 50
    assert abs(np.median(turned) - expected) < 1.0


def test_the_walk_climbs_with_the_terrain(climb):
    """The body rises with the ground under it (the pelvis may dip a little for the feet),
    eased: no frame lifts it by more than a small part of a stair's rise."""
    s = climb
    lift = s["pelvis"][:, 2] - s["authored_pelvis"][:, 2]
    ground = s["terrain"].height(s["authored_pelvis"])
    assert ground[-1] > 0.2 or s["terrain"].kind == "flat"  # the walk ends well above its flat start
    assert -0.1 < lift[-1] - ground[-1] < 0.01
    assert np.abs(np.diff(lift)).max() < 0.25 * RISE


def test_unlock_is_smooth(climb):
    """After each release no toe moves further across the ground in a frame than the
    animation moves it, plus a little: the catch-up is eased, never a jump. (Up and down,
    a toe also follows the terrain: on stairs it rises for the next step.)"""
    s = climb

    def steps(points):
        return np.linalg.norm(np.diff(points[..., :2], axis=0), axis=-1)

    released = np.diff(s["contacts"].astype(int), axis=0) == -1
    window = np.zeros_like(released)
    for f, leg in np.argwhere(released):
        window[f : f + 2 * s["blend_frames"], leg] = True
    assert window.sum() > 40
    assert (steps(s["shown"])[window] <= steps(s["authored"])[window] + 0.005).all()


def test_the_viewport_shows_the_simulated_pose_in_every_rotation_mode(addon, clips_dir):
    """The preview's channel values against Blender's own evaluation of them: bones in
    quaternion, axis-angle and other Euler modes, on a turned and moved armature."""
    from foot_lock.adapters import preview
    from foot_lock.solvers.kinematics import forward_kinematics

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    obj.rotation_euler.z = math.radians(30.0)
    obj.location = (0.3, -0.2, 0.05)
    modes = {"LeftUpLeg": "QUATERNION", "LeftLeg": "AXIS_ANGLE", "LeftFoot": "XZY", "RightUpLeg": "YXZ"}
    for bone, mode in modes.items():
        obj.pose.bones[bone].rotation_mode = mode  # the keyed (ZYX) Euler curves no longer pose it
    walk_terrain(obj, "ramp").build(addon)
    obj.foot_lock.preview = True
    simulated = preview._previews[obj.name]
    _, gpos = forward_kinematics(simulated.clip.skeleton, simulated.played.rot, simulated.played.pos)
    names = simulated.clip.joint_map.joint_names
    bones = [bone.name for bone in obj.data.bones]
    frames = frames_of(obj)[::40]
    shown = play(addon, obj, frames, bones)
    expected = gpos[frames - frames_of(obj)[0]][:, [names.index(name) for name in bones]]
    assert simulated.moved[:, [list(simulated.shown.bones).index(b) for b in modes]].any()
    assert np.abs(shown - expected).max() < 1e-5


# --- flat ground, no ground, what counts as ground --------------------------------------


def test_flat_ground_changes_a_clean_clip_by_millimetres(addon, clips_dir):
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}  # a clean clip: its feet do not slide
    walk_terrain(obj, "flat").build(addon)
    bones = leg_bones(obj, "toe") + leg_bones(obj, "foot") + ["Hips"]
    authored = world_joints(obj, bones)
    obj.foot_lock.preview = True
    change = np.linalg.norm(play(addon, obj, frames_of(obj), bones) - authored, axis=-1)
    assert change.mean() < 0.003
    assert np.median(change) < 0.001
    assert change[:, -1].max() < 0.005  # the pelvis, also where a leg lifts off at full reach


def own_mesh(bpy, name, height):
    """A big plane at ``height`` under the whole walk (the test makes it the character's)."""
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([(-5, -5, height), (5, -5, height), (5, 5, height), (-5, 5, height)], [], [(0, 1, 2, 3)])
    plane = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(plane)
    return plane


def test_the_characters_own_meshes_are_never_ground(addon, clips_dir):
    """A child of the armature and a mesh its armature deforms, both right under its feet,
    are not ground: the preview is the one without them (on the clip's own floor)."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    bones = [bone.name for bone in obj.data.bones]
    frames = frames_of(obj)
    obj.foot_lock.preview = True
    alone = play(addon, obj, frames, bones)
    obj.foot_lock.preview = False
    child = own_mesh(addon, "Child", 0.2)
    child.parent = obj
    skin = own_mesh(addon, "Skin", 0.1)
    skin.modifiers.new("Armature", "ARMATURE").object = obj
    obj.foot_lock.preview = True
    assert np.abs(play(addon, obj, frames, bones) - alone).max() < 1e-6
    assert obj.foot_lock.preview and obj.foot_lock.preview_error == ""


def test_ground_can_be_limited_to_a_collection(addon, clips_dir):
    """A prop over the whole walk is ground until the ground is limited to a collection."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    terrain = walk_terrain(obj, "flat")
    ground = addon.data.collections.new("Ground")
    addon.context.scene.collection.children.link(ground)
    terrain.build(addon, name="Floor", lift=0.1, collection=ground)
    terrain.build(addon, name="Prop", lift=0.3)
    frames = frames_of(obj)
    authored = world_joints(obj, ["Hips"])[-1, 0, 2]

    def pelvis_lift():
        obj.foot_lock.preview = True
        lift = play(addon, obj, frames, ["Hips"])[-1, 0, 2] - authored
        obj.foot_lock.preview = False
        return lift

    assert pelvis_lift() == pytest.approx(0.3, abs=0.01)
    obj.foot_lock.ground_collection = ground
    assert pelvis_lift() == pytest.approx(0.1, abs=0.01)
    obj.foot_lock.root_follow = False  # the feet still find the ground; the body is not carried up
    assert abs(pelvis_lift()) < 0.01


# --- scrubbing ----------------------------------------------------------------------------


def test_contact_curves_win_where_they_exist(addon, clips_dir, tmp_path):
    """The sliding walk without ground: a leg whose curve says it never touches the ground
    is never locked (it slides as authored); the other, without a curve, is locked where
    the bake's labels plant it."""
    from foot_lock.adapters import armature

    obj = import_clip(addon, write_sliding_bvh(clips_dir / f"{CLIP}.bvh", tmp_path / f"{CLIP}.bvh", 1.25))
    addon.ops.foot_lock.detect_legs()
    frames, toes = frames_of(obj), leg_bones(obj, "toe")
    armature.write_contact_curve(obj, obj.animation_data.action, toes[0], frames, np.zeros(len(frames)))
    authored = world_joints(obj, toes)
    obj.foot_lock.preview = True
    shown = play(addon, obj, frames, toes)
    change = np.linalg.norm(shown - authored, axis=-1)
    assert change[:, 0].max() < 1e-4  # the curve's leg: as authored
    assert change[:, 1].max() > 0.05  # the labelled leg: held back where it slid


def test_a_ground_edit_is_simulated_again(addon, clips_dir):
    """Terrain added, moved or reshaped while Preview is on counts from the next update on;
    a character's own mesh deforming does not make the preview simulate again."""
    from foot_lock.adapters import preview

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    skin = own_mesh(addon, "Skin", 0.1)
    skin.modifiers.new("Armature", "ARMATURE").object = obj
    frames = frames_of(obj)
    authored = world_joints(obj, ["Hips"])[-1, 0, 2]
    terrain = walk_terrain(obj, "flat")
    obj.foot_lock.preview = True

    def pelvis_lift():
        addon.context.view_layer.update()  # where depsgraph_update_post runs
        return play(addon, obj, frames[-1:], ["Hips"])[0, 0, 2] - authored

    assert abs(pelvis_lift()) < 0.01
    simulated = preview._previews[obj.name]
    play(addon, obj, frames[::20], ["Hips"])  # the skin deforms: nothing to simulate again
    assert preview._previews[obj.name] is simulated
    floor = terrain.build(addon, lift=0.1)
    assert pelvis_lift() == pytest.approx(0.1, abs=0.01)
    floor.location.z = 0.2
    assert pelvis_lift() == pytest.approx(0.3, abs=0.01)
    for vertex in floor.data.vertices:
        vertex.co.z -= 0.25
    floor.data.update()
    assert pelvis_lift() == pytest.approx(0.05, abs=0.01)
    assert obj.foot_lock.preview_error == ""


def test_scrubbing_and_jumping_show_what_playing_from_the_start_shows(addon, clips_dir):
    """Without contact curves, on the ramp: any frame, reached by a jump, backward or
    forward, is posed exactly as playing from the first frame poses it."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_legs()
    walk_terrain(obj, "ramp").build(addon)
    frames, bones = frames_of(obj), leg_bones(obj, "toe") + leg_bones(obj, "foot") + ["Hips"]
    authored = world_joints(obj, bones)
    obj.foot_lock.preview = True
    from_start = play(addon, obj, frames, bones)
    assert np.isfinite(from_start).all() and np.abs(from_start - authored).max() > 0.05
    for frame in (200, 150, 151, 152, 40, 300, 10, 9, 317, 1, 120, 90, 250):
        shown = play(addon, obj, [frame], bones)[0]
        assert np.abs(shown - from_start[frame - 1]).max() < 1e-5
    assert obj.foot_lock.preview_error == ""


# --- handlers, errors, bake, overlay ------------------------------------------------------


def test_handler_is_registered_only_while_some_armature_previews(blender, clips_dir):
    import foot_lock
    from foot_lock.adapters import preview

    frame_handlers = blender.app.handlers.frame_change_post
    foot_lock.register()
    try:
        first = import_clip(blender, clips_dir / f"{CLIP}.bvh")
        second = import_clip(blender, clips_dir / f"{CLIP}.bvh")
        assert preview._on_frame_change not in frame_handlers
        first.foot_lock.preview = True
        second.foot_lock.preview = True
        assert preview._on_frame_change in frame_handlers and preview._draw_handle is not None
        first.foot_lock.preview = False
        assert preview._on_frame_change in frame_handlers  # the second still previews
        second.foot_lock.preview = False
        assert preview._on_frame_change not in frame_handlers and preview._draw_handle is None
        first.foot_lock.preview = True
    finally:
        foot_lock.unregister()
    assert preview._on_frame_change not in frame_handlers
    assert preview._on_depsgraph_update not in blender.app.handlers.depsgraph_update_post
    assert preview._on_data_replaced not in blender.app.handlers.load_post
    assert preview._draw_handle is None


def muted_curves(obj):
    from foot_lock.adapters import action_compat

    return [fcurve.mute for fcurve in action_compat.iter_fcurves(obj, obj.animation_data.action)]


def evaluation_counter(bpy, obj, bone):
    """A driver on a mesh that reads ``bone``'s rotation, counting its evaluations: it is
    evaluated whenever Blender evaluates the pose again, as a mesh the armature deforms is."""
    calls = []
    bpy.app.driver_namespace["foot_lock_test_count"] = lambda value: calls.append(value) or value
    probe = own_mesh(bpy, "Probe", 0.0)
    probe["probe"] = 0.0
    driver = probe.driver_add('["probe"]').driver
    driver.type = "SCRIPTED"
    variable = driver.variables.new()
    variable.type = "TRANSFORMS"
    target = variable.targets[0]
    target.id, target.bone_target, target.transform_type = obj, bone, "ROT_X"
    target.transform_space = "LOCAL_SPACE"
    driver.expression = "foot_lock_test_count(var)"
    return calls


@pytest.mark.parametrize("shared", [False, True])
def test_each_frame_is_evaluated_once(addon, clips_dir, shared):
    """The preview poses the legs before Blender evaluates the frame (their curves muted):
    what the armature deforms is evaluated once a frame. An armature sharing its action
    with another is posed after the animation (the other one keeps its legs' animation),
    which costs Blender a second evaluation."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    other = obj.copy()
    addon.context.scene.collection.objects.link(other)
    if not shared:
        other.animation_data.action = obj.animation_data.action.copy()
    walk_terrain(obj, "ramp").build(addon)
    bones = ["LeftToeBase", "RightToeBase"]
    frames = frames_of(obj)
    before = play(addon, other, frames[::25], bones)
    calls = evaluation_counter(addon, obj, "LeftLeg")
    obj.foot_lock.preview = True
    addon.context.view_layer.update()  # the pose set on switching Preview on
    assert any(muted_curves(obj)) != shared
    counted = []
    for frame in frames[::25]:
        start = len(calls)
        addon.context.scene.frame_set(int(frame))
        counted.append(len(calls) - start)
    assert counted == [2 if shared else 1] * len(counted)
    assert np.abs(play(addon, other, frames[::25], bones) - before).max() < 1e-6  # the other plays as before
    assert obj.foot_lock.preview_error == ""


def test_a_job_while_previewing_reads_the_animation_without_the_preview(addon, clips_dir):
    """Detect Contacts with Preview on keys the contacts of the clip (not of the muted,
    frozen curves) and the preview goes on."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_contacts()
    action = obj.animation_data.action
    from foot_lock.adapters import armature

    toes, frames = leg_bones(obj, "toe"), frames_of(obj)
    first = [armature.read_contact_curve(obj, action, toe, frames) for toe in toes]
    obj.foot_lock.preview = True
    obj.foot_lock.overwrite_contacts = True
    assert addon.ops.foot_lock.detect_contacts() == {"FINISHED"}
    again = [armature.read_contact_curve(obj, action, toe, frames) for toe in toes]
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and first[0].sum() > 50
    assert obj.foot_lock.preview and obj.foot_lock.preview_error == "" and any(muted_curves(obj))


def muted_in(action):
    """How many F-curves of ``action`` are muted, in every slot (whatever object plays it, if any)."""
    from foot_lock.adapters import action_compat

    bags = ([bag for layer in action.layers for strip in layer.strips for bag in strip.channelbags]
            if action_compat.LAYERED_ACTIONS else [action])
    return sum(fcurve.mute for bag in bags for fcurve in bag.fcurves)


def test_an_action_switched_or_cleared_while_previewing_is_given_back_unmuted(addon, clips_dir):
    """The preview mutes the curves it drives in the action it plays: another action
    assigned meanwhile, or none, the first one gets them back unmuted all the same (it was
    left muted for good, playing frozen legs wherever it was used again)."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    first = obj.animation_data.action
    second = first.copy()
    obj.foot_lock.preview = True
    assert muted_in(first)
    obj.animation_data.action = second
    addon.context.scene.frame_set(100)  # the preview plays the new action
    assert muted_in(first) == 0 and muted_in(second) and obj.foot_lock.preview_error == ""
    obj.animation_data_clear()
    addon.context.scene.frame_set(101)  # no action to play: the preview stops
    assert not obj.foot_lock.preview and muted_in(second) == 0


def test_an_armature_deleted_while_previewing_leaves_its_action_unmuted(addon, clips_dir, tmp_path):
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    action = obj.animation_data.action
    action.use_fake_user = True
    obj.foot_lock.preview = True
    addon.context.scene.frame_set(100)
    assert muted_in(action)
    addon.data.objects.remove(obj)
    addon.context.scene.frame_set(101)  # the preview finds its armature gone
    assert muted_in(action) == 0
    path = str(tmp_path / "deleted.blend")
    name = action.name
    addon.ops.wm.save_as_mainfile(filepath=path)
    addon.ops.wm.open_mainfile(filepath=path)
    assert muted_in(addon.data.actions[name]) == 0


def test_preview_resumes_in_a_saved_file(addon, clips_dir, tmp_path):
    from foot_lock.adapters import preview

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_legs()
    walk_terrain(obj, "stairs").build(addon)
    toes = leg_bones(obj, "toe")
    authored = world_joints(obj, toes)
    obj.foot_lock.preview = True
    assert any(muted_curves(obj))  # the preview drives the legs
    path = str(tmp_path / "preview.blend")
    addon.ops.wm.save_as_mainfile(filepath=path)
    assert any(muted_curves(obj))  # ... and goes on after saving
    obj.foot_lock.preview = False
    assert not any(muted_curves(obj))
    assert preview._on_frame_change not in addon.app.handlers.frame_change_post
    addon.ops.wm.open_mainfile(filepath=path)
    assert preview._on_frame_change in addon.app.handlers.frame_change_post
    obj = addon.data.objects[CLIP]
    assert not any(muted_curves(obj))  # saved as the animation is without the preview
    shown = play(addon, obj, [200], toes)[0]
    assert obj.foot_lock.preview_error == ""
    assert shown[:, 2].min() > authored[199, :, 2].min() + 0.2  # up the stairs


def test_an_error_in_the_handler_turns_preview_off_without_raising(addon, clips_dir, monkeypatch):
    from foot_lock.adapters import preview

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    walk_terrain(obj, "ramp").build(addon)
    settings = obj.foot_lock
    settings.preview = True
    settings.pelvis = "NoSuchBone"  # the next frame finds the rig broken
    addon.context.scene.frame_set(10)
    assert not settings.preview and "NoSuchBone" in settings.preview_error
    assert preview._on_frame_change not in addon.app.handlers.frame_change_post

    settings.pelvis = "Hips"
    settings.preview = True
    assert settings.preview_error == ""

    def broken(*args):
        raise ZeroDivisionError("a bug in the preview")

    monkeypatch.setattr(preview, "step", broken)
    addon.context.scene.frame_set(11)
    assert not settings.preview and settings.preview_error == "a bug in the preview"


def test_an_armature_playing_only_nla_strips_is_refused_with_advice_that_works(addon, clips_dir):
    """The Preview plays the active action; for strips alone it says so, and what it
    advises (Remove Foot Sliding, which bakes them) gives it an action to play."""
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    anim = obj.animation_data
    action = anim.action
    anim.nla_tracks.new().strips.new("walk", int(action.frame_range[0]), action)
    anim.action = None
    settings = obj.foot_lock
    settings.preview = True
    assert not settings.preview
    assert "NLA strips and no action" in settings.preview_error
    assert "Remove Foot Sliding" in settings.preview_error

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    settings.preview = True
    assert settings.preview and settings.preview_error == ""
    settings.preview = False


def test_bake_preview_writes_a_new_action_and_keeps_the_original(addon, clips_dir):
    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_contacts()
    walk_terrain(obj, "stairs").build(addon)
    source = obj.animation_data.action
    before = snapshot(obj, source)
    bones = leg_bones(obj, "toe") + leg_bones(obj, "foot") + ["Hips"]
    obj.foot_lock.preview = True
    shown = play(addon, obj, frames_of(obj), bones)
    assert addon.ops.foot_lock.bake_preview() == {"FINISHED"}
    baked = obj.animation_data.action
    assert baked.name == f"{CLIP}.preview" and baked != source
    assert snapshot(obj, source) == before
    assert not obj.foot_lock.preview
    assert np.abs(world_joints(obj, bones) - shown).max() < 1e-4


def test_overlay_shows_the_locks_and_both_toe_paths(addon, clips_dir):
    from foot_lock.adapters import preview

    obj = import_clip(addon, clips_dir / f"{CLIP}.bvh")
    addon.ops.foot_lock.detect_contacts()
    terrain = walk_terrain(obj, "ramp")
    terrain.build(addon)
    toes = leg_bones(obj, "toe")
    obj.foot_lock.preview = True
    shown = play(addon, obj, frames_of(obj)[:150], toes)
    (geometry,) = preview.overlays()
    trail = round(preview.TRAIL_SECONDS * scene_fps(addon))
    assert geometry.before.shape == geometry.after.shape == (2 * (trail - 1) * len(toes), 3)
    assert np.allclose(geometry.after.reshape(trail - 1, len(toes), 2, 3)[-1, :, 1], shown[-1])
    assert np.isfinite(geometry.before).all()
    assert 1 <= len(geometry.contacts) <= len(toes) and geometry.markers.shape == (6 * len(geometry.contacts), 3)
    assert np.allclose(geometry.contacts[:, 2], terrain.height(geometry.contacts), atol=1e-3)  # on the ground
    obj.foot_lock.show_overlay = False
    assert preview.overlays() == []
