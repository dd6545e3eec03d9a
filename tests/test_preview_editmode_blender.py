"""Preview while the ground is edited in Edit Mode, on ground shaped by modifiers, on
linked duplicates (objects sharing one mesh), on collection instances (a linked set) and
on what geometry nodes instance, in real Blender.

What the viewport shows is the truth: in Edit Mode the evaluated mesh is the edit-mesh
(with the modifiers shown in Edit Mode), and the feet land on it. Each check compares
what the viewport shows with a Preview started afresh on the scene as it is then
(:func:`~test_preview_live_blender.assert_matches_a_fresh_start`), on the sliding walk over
12 cm stairs of ``test_preview_live_blender``. A grab in Edit Mode is a burst of edit-mesh
updates, each seen by the depsgraph (the viewport's redraw): one simulation follows the
burst, and entering or leaving Edit Mode, which changes no surface, simulates nothing.
"""

import numpy as np
import pytest
from test_preview_blender import CLIP, frames_of
from test_preview_ground_blender import keyed_linearly
from test_preview_live_blender import (
    BAKED,
    SAME,
    assert_matches_a_fresh_start,
    assert_shows_a_fresh_preview,
    feet_of,
    play_matrices,
    previewed,
    settled,
    sliding_walk,
)

pytestmark = pytest.mark.blender

FRAME = 150  # the frame left shown after each play (``previewed``'s)


@pytest.fixture
def simulations(monkeypatch):
    """The names of the armatures simulated (one entry a simulation), from here on."""
    from foot_lock.adapters import preview

    names, simulate = [], preview._simulate

    def counted(obj, *args):
        names.append(obj.name)
        return simulate(obj, *args)

    monkeypatch.setattr(preview, "_simulate", counted)
    return names


def tab_into(bpy, obj):
    """Edit Mode on ``obj``, as Tab with it active: the depsgraph sees the mode change."""
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.object.mode_set(mode="EDIT") == {"FINISHED"}
    bpy.context.view_layer.update()


def tab_out(bpy):
    assert bpy.ops.object.mode_set(mode="OBJECT") == {"FINISHED"}
    bpy.context.view_layer.update()


def grab_up(bpy, mesh, scale):
    """One step of a grab in Edit Mode: every vertex of the edit-mesh ``scale`` times as
    high, the edit-mesh updated and the depsgraph updated, as the viewport redraws."""
    import bmesh

    edit = bmesh.from_edit_mesh(mesh)
    for vertex in edit.verts:
        vertex.co.z *= scale
    bmesh.update_edit_mesh(mesh)
    bpy.context.view_layer.update()


def shown_everywhere(bpy, obj):
    """Every frame played, then ``FRAME`` shown again: what was shown (F, B, 4, 4)."""
    shown = play_matrices(bpy, obj, frames_of(obj))
    bpy.context.scene.frame_set(FRAME)
    return shown


def test_a_grab_in_edit_mode_moves_the_feet_once_and_leaving_edit_mode_keeps_them(addon, clips_dir, tmp_path,
                                                                                  simulations):
    """Tab into the stairs, grab them 1.46 times as high in four updates, play in Edit Mode,
    Tab out: the feet land on the edited steps while in Edit Mode, one simulation after the
    grab, none for playing or for entering and leaving Edit Mode."""
    from foot_lock.adapters import preview

    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    before = previewed(addon, obj)
    simulations.clear()
    tab_into(addon, stairs)
    settled(addon)
    assert np.abs(shown_everywhere(addon, obj) - before).max() <= SAME
    assert simulations == [], "entering Edit Mode changed no surface"
    for _ in range(4):
        grab_up(addon, stairs.data, 1.1)
    assert addon.app.timers.is_registered(preview._refresh), "the grab is not simulated again until a frame change"
    settled(addon)
    assert simulations == [obj.name], "one simulation for the burst of edits"
    edited = shown_everywhere(addon, obj)
    assert simulations == [obj.name], "playing in Edit Mode only shows what was simulated"
    assert_matches_a_fresh_start(addon, obj, before)
    simulations.clear()
    tab_out(addon)
    settled(addon)
    assert simulations == [], "leaving Edit Mode changed no surface"
    assert np.abs(shown_everywhere(addon, obj) - edited).max() <= SAME
    assert_matches_a_fresh_start(addon, obj, before)  # the mesh out of Edit Mode: the same feet


def test_in_edit_mode_the_feet_land_on_the_ground_without_the_modifiers_it_hides(addon, clips_dir, tmp_path):
    """Stairs raised 5 cm by a Displace modifier not shown in Edit Mode: Tab into them and
    the viewport shows them 5 cm lower, the feet with them; a grab in Edit Mode moves them;
    Tab out and they stand on the displaced, edited stairs."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    displace = stairs.modifiers.new("Raise", "DISPLACE")  # no texture: strength * (1 - mid level) along the normal
    displace.strength, displace.show_in_editmode = 0.1, False
    displaced = previewed(addon, obj)
    tab_into(addon, stairs)
    assert_shows_a_fresh_preview(addon, obj, displaced)
    entered = shown_everywhere(addon, obj)
    grab_up(addon, stairs.data, 1.5)
    assert_shows_a_fresh_preview(addon, obj, entered)
    edited = shown_everywhere(addon, obj)
    tab_out(addon)
    assert_shows_a_fresh_preview(addon, obj, edited)
    assert np.abs(shown_everywhere(addon, obj) - displaced).max() > 0.01  # the edit stayed


MODIFIERS = {  # kind: (its settings on the stairs, a change of them)
    "DISPLACE": ({"strength": 0.1}, {"strength": 0.2}),  # 5 cm higher, then 10
    "ARRAY": ({"use_relative_offset": False, "use_constant_offset": True, "constant_offset_displace": (0, 0, 0.05),
               "count": 2}, {"count": 3}),  # copies 5 cm above each other: the top one is hit
    "SUBSURF": ({"levels": 2}, {"boundary_smooth": "PRESERVE_CORNERS"}),  # each step's corners rounded, then kept
}


@pytest.mark.parametrize("kind", MODIFIERS)
def test_the_feet_land_on_the_surface_a_modifier_makes_and_follow_its_changes(addon, clips_dir, tmp_path, kind):
    """A modifier added to the stairs while previewing, then changed: each time the feet
    move, as a fresh Preview shows them; they stand where they stand on a copy of the
    stairs with the modifier applied."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    before = previewed(addon, obj)
    settings, change = MODIFIERS[kind]
    modifier = stairs.modifiers.new(kind, kind)
    for name, value in settings.items():
        setattr(modifier, name, value)
    assert_shows_a_fresh_preview(addon, obj, before)
    added = shown_everywhere(addon, obj)
    for name, value in change.items():
        setattr(modifier, name, value)
    assert_shows_a_fresh_preview(addon, obj, added)
    changed = shown_everywhere(addon, obj)
    applied = addon.data.objects.new("Applied", addon.data.meshes.new_from_object(
        stairs.evaluated_get(addon.context.evaluated_depsgraph_get())))
    applied.matrix_world = stairs.matrix_world
    addon.context.scene.collection.objects.link(applied)
    stairs.hide_viewport = True
    settled(addon)
    assert np.abs(shown_everywhere(addon, obj) - changed).max() <= SAME
    assert obj.foot_lock.preview_error == ""


def test_a_grab_in_edit_mode_of_a_linked_duplicate_moves_the_feet_on_the_ground_sharing_its_mesh(addon, clips_dir,
                                                                                                  tmp_path):
    """A linked duplicate of the stairs 10 m aside from the walk, grabbed in Edit Mode:
    the stairs under the walk share its mesh, and the feet follow them."""
    obj, terrain, stairs = sliding_walk(addon, clips_dir, tmp_path)
    twin = stairs.copy()
    addon.context.scene.collection.objects.link(twin)
    twin.location = 10.0 * terrain.side
    assert twin.data == stairs.data
    before = previewed(addon, obj)
    tab_into(addon, twin)
    grab_up(addon, twin.data, 1.5)
    assert stairs.mode == "OBJECT"
    assert_shows_a_fresh_preview(addon, obj, before)
    edited = shown_everywhere(addon, obj)
    tab_out(addon)
    settled(addon)
    assert np.abs(shown_everywhere(addon, obj) - edited).max() <= SAME


def test_bake_preview_with_the_ground_in_edit_mode(addon, clips_dir, tmp_path):
    """The stairs grabbed in Edit Mode and left there: Bake Preview from the sidebar is not
    offered (the stairs are active, not the armature) and says why, writing nothing; run
    on the armature meanwhile (a script's context), it keys what the viewport shows."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    previewed(addon, obj)
    tab_into(addon, stairs)
    grab_up(addon, stairs.data, 1.5)
    settled(addon)
    shown = shown_everywhere(addon, obj)
    actions = set(addon.data.actions.keys())
    with pytest.raises(RuntimeError, match="Select an armature"):
        addon.ops.foot_lock.bake_preview()
    assert set(addon.data.actions.keys()) == actions and obj.foot_lock.preview
    with addon.context.temp_override(active_object=obj, object=obj, selected_objects=[obj]):
        assert addon.ops.foot_lock.bake_preview() == {"FINISHED"}
    assert stairs.mode == "EDIT"
    assert not obj.foot_lock.preview and obj.animation_data.action.name == f"{CLIP}.preview"
    assert np.abs(shown_everywhere(addon, obj) - shown).max() <= BAKED


def instanced_set(bpy, obj):
    """``obj`` moved out of the scene into a collection "Set", and an empty instancing it
    in the scene (as a linked set is placed): the empty."""
    asset = bpy.data.collections.new("Set")
    asset.objects.link(obj)
    bpy.context.scene.collection.objects.unlink(obj)
    instance = bpy.data.objects.new("Set instance", None)
    instance.instance_type, instance.instance_collection = "COLLECTION", asset
    bpy.context.scene.collection.objects.link(instance)
    return instance


@pytest.mark.parametrize("nested", [False, True], ids=["instance", "instance-of-an-instance"])
def test_a_collection_instance_of_the_stairs_is_ground_where_it_stands(addon, clips_dir, tmp_path, nested):
    """The stairs moved into a collection outside the scene, shown by an empty instancing it
    (as a linked set is placed; or that empty in a set instanced in turn): the feet stand
    on them as on the stairs themselves; moving the instance or editing the stairs' mesh
    moves the feet."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    on_stairs = previewed(addon, obj)
    obj.foot_lock.preview = False
    instance = instanced_set(addon, stairs)
    if nested:
        instance = instanced_set(addon, instance)
    stairs.location.x -= 1.0  # in the set, and the set placed where the stairs were
    instance.location.x += 1.0
    instanced = previewed(addon, obj)
    assert np.abs(instanced - on_stairs).max() <= BAKED
    instance.location.z += 0.05
    assert_shows_a_fresh_preview(addon, obj, instanced)
    raised = shown_everywhere(addon, obj)
    for vertex in stairs.data.vertices:
        vertex.co.z *= 1.5
    stairs.data.update()
    assert_shows_a_fresh_preview(addon, obj, raised)


@pytest.mark.parametrize("keyed", ["instance", "stairs in the set"])
def test_a_collection_instance_keyed_to_rise_carries_the_feet_as_the_stairs_keyed_so(addon, clips_dir, tmp_path,
                                                                                     keyed):
    """The stairs keyed to rise 10 cm over the clip; then instanced, the keys on the
    instance instead or kept on the stairs in the set (the ground sampled over the frames,
    as the instance moves or as what it shows moves): the same feet."""
    obj, _, stairs = sliding_walk(addon, clips_dir, tmp_path)
    frames = frames_of(obj)
    still = previewed(addon, obj)
    obj.foot_lock.preview = False
    rise = ([(0.0, 0.0, 0.0), (0.0, 0.0, 0.1)], [frames[0], frames[-1]])
    keyed_linearly(stairs, stairs, "location", *rise)
    on_stairs = previewed(addon, obj)
    assert np.abs(on_stairs - still)[:, feet_of(obj)].max() > 0.05  # the stairs carry the feet up
    obj.foot_lock.preview = False
    instance = instanced_set(addon, stairs)
    if keyed == "instance":
        stairs.animation_data_clear()
        stairs.location = (0.0, 0.0, 0.0)
        keyed_linearly(instance, instance, "location", *rise)
    assert np.abs(previewed(addon, obj) - on_stairs).max() <= BAKED


def scatter(bpy, obj):
    """A geometry-nodes object instancing ``obj``'s geometry at one point, its origin (an
    empty mesh with a Points > Instance on Points modifier): the object and its Points node."""
    tree = bpy.data.node_groups.new("Scatter", "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    points, on_points = tree.nodes.new("GeometryNodePoints"), tree.nodes.new("GeometryNodeInstanceOnPoints")
    info, output = tree.nodes.new("GeometryNodeObjectInfo"), tree.nodes.new("NodeGroupOutput")
    info.inputs["Object"].default_value = obj
    tree.links.new(points.outputs["Geometry"], on_points.inputs["Points"])
    tree.links.new(info.outputs["Geometry"], on_points.inputs["Instance"])
    tree.links.new(on_points.outputs["Instances"], output.inputs[0])
    scattered = bpy.data.objects.new("Scatter", bpy.data.meshes.new("Scatter"))
    scattered.modifiers.new("Scatter", "NODES").node_group = tree
    bpy.context.scene.collection.objects.link(scattered)
    return scattered, points


def test_the_feet_land_on_what_a_geometry_nodes_modifier_instances(addon, clips_dir, tmp_path):
    """The stairs moved 20 m aside and instanced back in place by geometry nodes (the
    instances' geometry is the object's evaluated mesh only with them realized): the feet
    stand on them as on the stairs themselves; moving the instanced point moves them."""
    obj, terrain, stairs = sliding_walk(addon, clips_dir, tmp_path)
    on_stairs = previewed(addon, obj)
    obj.foot_lock.preview = False
    _, points = scatter(addon, stairs)
    stairs.location = 20.0 * terrain.side
    scattered = previewed(addon, obj)
    assert np.abs(scattered - on_stairs).max() <= BAKED
    points.inputs["Position"].default_value = (0.0, 0.0, 0.05)
    assert_shows_a_fresh_preview(addon, obj, scattered)
