"""Preview: the runtime foot lock on the scene's terrain, live, while the timeline plays.

With ``Object.foot_lock.preview`` on, the legs and pelvis of the armature are posed each
frame as a game engine would at runtime (see :mod:`..solvers.runtime_pose`): feet locked
during contacts and planted on the meshes under them (or on the clip's own floor where
there are none), the character carried up and down by the ground. Nothing is keyed until
:func:`bake_preview`.

The runtime lock is simulated over the action's whole frame range once, when Preview
starts and again when something it depends on changes (the action, the legs, the
settings, the armature's placement, a ground mesh, its transform or keys, which meshes
are ground); the pose of every frame is kept, as pose-channel values. An armature that
travels by its own transform keys is simulated in the world they move it through; one
carried from frame to frame by anything else (a path, a parent) is refused before it is
simulated or baked (:func:`_refuse_carried`). On a frame change the handler only writes the
kept values of the current frame into the bones the preview changes there (or changed
on the frame shown before), so playing costs a few property writes a frame, and
scrubbing or jumping shows exactly what playing from the start shows. What each preview
was simulated from is compared after every depsgraph update (a stale one is simulated
again a moment later, without waiting for a frame change: :func:`_on_depsgraph_update`),
else for one preview per frame in turn (:func:`_step_previews`). A ground update that left
still ground's surface as it was (entering or leaving Edit Mode) is not simulated again:
its triangles are compared (:func:`.terrain.still_signature`). The contacts are
the ``foot_contact`` curves where a leg has one, else the labels the bake would compute
(:func:`~..solvers.foot_lock.label_contacts`, once per clip); the runtime lock's
hysteresis and inertialization run on top. The ground is BVH trees of the ground
meshes (:mod:`.terrain`), built once per simulation; ground that moves over the range
is sampled on every frame of it, and a foot planted on it moves with it.

Per armature only arrays and names are kept -- undo and file loads free bpy data at any
time. The handlers are registered only while some armature previews. Nothing raised
inside them reaches Blender's handler loop: an error turns that armature's Preview off
and is printed and shown in the panel.
"""

import contextlib
import traceback
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.app.handlers import persistent
from bpy.props import BoolProperty

from ..solvers import rotations as channels
from ..solvers.foot_lock import label_contacts
from ..solvers.kinematics import Motion
from ..solvers.runtime_pose import TerrainFootLock, play_clip, preview_joints, runtime_clip
from . import action_compat as compat
from . import armature, jobs, overlay, sources, terrain
from .errors import EXPECTED_ERRORS, AdapterError
from .properties import FOOT_LOCK_PG_settings, contact_settings, runtime_settings, solver_settings
from .scene_time import playback_rate, shown_frame

PREVIEW_SUFFIX = ".preview"
TRAIL_SECONDS = 1.0  # how much toe path the overlay shows
MARKER_SIZE = 0.03  # contact markers, as a share of the leg length
UNCHANGED = 1e-7  # a solved joint this close to the clip is left to the animation
REFRESH_DELAY = 0.2  # s after an edit of what the preview depends on, it is simulated again

_previews = {}  # object name -> _Preview
_previewing = []  # names of the armatures with Preview on, sorted
_edits = {"action": 0, "ground": 0}  # bumped when any action / ground mesh changes
# Whether the depsgraph reported an update since the frame handler last compared every
# preview's inputs (``_key``), and which preview it compares on a frame without one.
_inputs = {"updated": True, "turn": 0}
_draw_handle = None


@dataclass
class _Channels:
    """Pose-channel values over every frame, as ``setattr`` takes them: one rotation
    channel per preview joint, then the pelvis' location."""

    joints: list  # per channel, the index into the preview's joints it poses
    bones: list  # per channel, the bone name
    props: list  # per channel: "rotation_quaternion", "rotation_euler", ..., "location"
    values: list  # per channel, per frame: the channel's value (a list)


@dataclass
class _Preview:
    """One armature's simulated preview, and what its bones show now."""

    key: tuple  # what it was simulated from; another key means simulate again
    clip: jobs.Clip
    joints: np.ndarray  # joints the preview may pose
    played: object  # runtime_pose.PlayedClip: every frame as shown
    leg_length: float
    moved: np.ndarray  # (F, len(joints)) where the shown pose differs from the clip
    shown: _Channels  # the channels of ``joints`` as shown
    authored: _Channels  # ... and as the clip has them
    keys: int = 0  # _keys_signature of the action it was simulated from
    ground: tuple = ()  # names of the meshes that were ground
    surface: int | None = None  # their terrain.still_signature (None: ground that may move)
    drives: bool | None = None  # whether it muted its channels' F-curves and poses them before evaluation
    # The curves it muted, unmuted from these whatever the object plays by then, or with the
    # object gone: (action session_uid, slot identifier, ((data path, index), ...)).
    muted: tuple = (None, "", ())
    # What the frame handler reads, as plain lists (no numpy on every frame):
    moved_rows: list = field(init=False)  # ``moved`` per frame, per joint
    unmoved: list = field(init=False)  # per joint, False
    written: list = field(init=False)  # per joint, whether it is posed differently from the clip now
    channels: list = field(init=False)  # per channel: (joint, bone, property, shown values, authored values)

    def __post_init__(self):
        self.moved_rows = self.moved.tolist()
        self.unmoved = self.written = [False] * len(self.joints)
        self.channels = list(zip(self.shown.joints, self.shown.bones, self.shown.props, self.shown.values,
                                 self.authored.values))


# --- what the preview depends on --------------------------------------------------------


_OPTIONS = ("lock_distance", "unlock_distance", "blend_time", "max_correction", "max_tilt", "pelvis_smoothing",
            "root_follow", "softening", "height_clamp", "heel_look_at", "toe_look_at", "speed_threshold",
            "height_threshold", "vote_window", "min_gap", "smoothing", "compensate_slip", "pelvis")


def _key(obj, scene):
    """Everything the simulation reads, cheap to compare from frame to frame."""
    settings = obj.foot_lock
    action = _played_action(obj)
    collection = settings.ground_collection
    legs = tuple((leg.name, leg.thigh, leg.shin, leg.foot, leg.toe) for leg in settings.legs)
    fps = playback_rate(scene)
    options = tuple(getattr(settings, name) for name in _OPTIONS)
    return (action.name, jobs.frame_range(action), legs, _placement(obj, action), fps, options,
            collection.name if collection else None, _edits["action"], _edits["ground"])


def _played_action(obj):
    """The active action, which the preview plays; an armature playing NLA strips without
    one is refused saying what to do (the NLA's mix of strips has no keys to lock)."""
    anim = obj.animation_data
    if anim is not None and anim.action is None and sources.playing_tracks(anim):
        raise AdapterError(
            f"{obj.name!r} plays NLA strips and no action, which the Preview does not follow (it plays the "
            "active action); Remove Foot Sliding bakes the strips into a new action that the Preview then plays"
        )
    return jobs.active_action(obj)


_keyed_channels = {}  # object name -> ((action name, action edits), {(path, index) its action keys})


def _placement(obj, action):
    """What puts the object where the simulation has it: its world matrix; for one that
    travels by its own transform keys (whose world matrix changes every frame), what
    those keys start from: its parent space and the channels they leave as they are."""
    keyed = _object_keys(obj, action)
    if not keyed:
        return _flat(obj.matrix_world)
    parent = obj.parent
    unkeyed = tuple(value for path in armature.OBJECT_TRANSFORMS for index, value in enumerate(getattr(obj, path))
                    if (path, index) not in keyed)
    return (parent.name if parent else None, obj.parent_type, obj.parent_bone,
            _flat(parent.matrix_world) if parent else None, _flat(obj.matrix_parent_inverse), unkeyed)


def _object_keys(obj, action):
    """The (path, index) of the object's own transform channels that ``action`` keys
    (unmuted), found again only after an action was edited."""
    version = (action.name, _edits["action"])
    known = _keyed_channels.get(obj.name)
    if known is None or known[0] != version:
        keyed = {(fcurve.data_path, fcurve.array_index) for fcurve in compat.iter_fcurves(obj, action)
                 if fcurve.data_path in armature.OBJECT_TRANSFORMS and not fcurve.mute}
        known = _keyed_channels[obj.name] = (version, keyed)
    return known[1]


def _flat(matrix):
    return tuple(value for row in matrix for value in row)


# --- simulating the whole clip ----------------------------------------------------------


def _contacts(obj, action, clip):
    """(L, F) contacts: each leg's curve where it has one, else the bake's labels."""
    contacts = jobs.stored_contacts(obj, action, clip)
    missing = np.isnan(contacts).all(axis=1)
    if missing.any():
        labels, _ = label_contacts(clip.skeleton, clip.motion, clip.rig, jobs.UP, contact_settings(obj.foot_lock),
                                   jobs.keyed_frames(obj, action, clip))
        contacts[missing] = labels[missing]
    return contacts


def _simulate(obj, scene, depsgraph, key, names, surface):
    """Read the action, run the runtime lock over all of it on the ground ``names`` (whose
    still signature is ``surface``): a new :class:`_Preview`."""
    settings = jobs.ensure_legs(obj)
    action = jobs.active_action(obj)
    clip = jobs.read_clip(obj, action, object_keys=True)  # what it refuses (a control rig ...) it refuses fast
    _refuse_carried(obj, scene, depsgraph, action)
    joint_map = clip.joint_map
    joints = np.array([j for j in preview_joints(clip.skeleton, clip.rig) if not joint_map.is_tail[j]])
    joint_map.require_exact(joint_map.joint_bone[j] for j in joints)
    runtime = runtime_clip(clip.skeleton, clip.motion, clip.rig, floor=joint_map.object_pos @ jobs.UP,
                           contacts=_contacts(obj, action, clip), up=jobs.UP, softening_ratio=settings.softening)
    lock = TerrainFootLock(runtime, runtime_settings(settings), solver_settings(settings), settings.root_follow,
                           jobs.UP)
    played = play_clip(lock, terrain.ground_over(scene, depsgraph, names, clip.frames, jobs.UP))
    motion = clip.motion
    moved = np.maximum(np.abs(played.rot[:, joints] - motion.rot[:, joints]).max(axis=-1),
                       np.abs(played.pos[:, joints] - motion.pos[:, joints]).max(axis=-1)) > UNCHANGED
    return _Preview(key, clip, joints, played, runtime.leg_length, moved,
                    _pose_channels(obj, clip, joints, played.rot, played.pos),
                    _pose_channels(obj, clip, joints, motion.rot, motion.pos), _keys_signature(obj), names, surface)


_ROTATION_CHANNELS = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}  # else Euler


def _pose_channels(obj, clip, joints, rot, pos):
    """The channel values (in each bone's rotation mode) that pose ``joints`` as ``rot``
    / ``pos`` (F, n, ...) on every frame: rotations, and the pelvis' location."""
    joint_map, pelvis = clip.joint_map, clip.rig.pelvis
    names = [joint_map.joint_bone[j] for j in joints]
    basis = armature.basis_rotations(joint_map, rot, names)
    modes = [obj.pose.bones[name].rotation_mode for name in names]
    out = _Channels(list(range(len(names))), names, [_ROTATION_CHANNELS.get(mode, "rotation_euler") for mode in modes],
                    [np.asarray(channels.quat_to_channel(mode, basis[:, :, k])).T.tolist()
                     for k, mode in enumerate(modes)])
    if pelvis in joints:
        name = joint_map.joint_bone[pelvis]
        out.joints.append(int(np.flatnonzero(joints == pelvis)[0]))
        out.bones.append(name)
        out.props.append("location")
        out.values.append(armature.basis_locations(joint_map, pos, [name], joint_map.frame_start)[:, 0].tolist())
    return out


def _preview_of(obj, scene, depsgraph):
    """The object's preview, simulated again when what it depends on changed. ``depsgraph``
    None: the context's, evaluated only when a simulation needs it (the ground's meshes)."""
    if not obj.foot_lock.legs:
        jobs.ensure_legs(obj)  # before the key, which names the legs
    key = _key(obj, scene)
    preview = _previews.get(obj.name)
    if preview is None or preview.key != key:
        depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
        names = tuple(terrain.ground_objects(scene, obj.foot_lock.ground_collection))
        surface = terrain.still_signature(scene, depsgraph, names)
        if preview is not None and _only_ground_updated(preview, key, names, surface):
            preview.key = key  # (Edit Mode entered or left: the same surface, nothing to simulate)
            return preview
        if preview is not None:
            _give_back(obj, preview)  # its curves unmuted: the action is read as it is
        preview = _previews[obj.name] = _simulate(obj, scene, depsgraph, key, names, surface)
    return preview


def _refuse_carried(obj, scene, depsgraph, action):
    """Refuse an object that something besides its keys (a path, a parent) moves: one with
    transform keys as well (its keys alone do not say where it goes), or one whose world
    matrix changes anywhere over the clip or the scene's frame range. The preview simulates
    it where it stands now: every other frame would show it as if it stood still there.
    Refused before anything is simulated or baked, not once a frame change shows it moved."""
    carrier = sources.moved_by(obj, placement_only=True)  # bone drivers pose it: no reason to step the scene
    if carrier is not None and (_object_keys(obj, action) or _moves_over(obj, scene, depsgraph, action)):
        raise _carried(obj, carrier)


def _moves_over(obj, scene, depsgraph, action):
    """Whether the object's world matrix changes over the clip's and the scene's frames (and
    any between). The scene is stepped through them, an evaluation per frame: paid only by
    an armature that something besides its keys may move."""
    start, end = jobs.frame_range(action)
    matrices = []
    with terrain.stepped(scene):
        for frame in range(min(start, scene.frame_start), max(end, scene.frame_end) + 1):
            scene.frame_set(frame)
            matrices.append(np.array(obj.evaluated_get(depsgraph).matrix_world))
    return not terrain.stands_still(np.array(matrices))


def _carried(obj, carrier):
    return AdapterError(
        f"{obj.name!r} is carried from frame to frame by {carrier}, which the Preview does not follow "
        "(it simulates an armature standing still or travelling by its own keys); "
        "Remove Foot Sliding reads the motion as the viewport shows it"
    )


def _only_ground_updated(preview, key, names, surface):
    """Whether ``key`` differs from the preview's only by ground updates (its last entry)
    after which the same meshes show the same still surface."""
    return (key[:-1] == preview.key[:-1] and names == preview.ground and surface is not None
            and surface == preview.surface)


def _keys_signature(obj):
    """A hash of the keys of the object's action (not of the curves' mute flags, which
    the preview itself sets): it changes when the animation is edited."""
    parts = []
    for fcurve in compat.iter_fcurves(obj, jobs.active_action(obj)):
        points = fcurve.keyframe_points
        values = np.empty((3, 2 * len(points)))
        for row, prop in zip(values, ("co", "handle_left", "handle_right")):
            points.foreach_get(prop, row)
        parts.append((fcurve.data_path, fcurve.array_index, values.tobytes()))
    return hash(tuple(parts))


# --- one frame --------------------------------------------------------------------------


def step(obj, scene, depsgraph, before_evaluation=None, compare=True):
    """Pose ``obj`` for the scene's current frame (the handlers' work for one armature).

    An armature whose action is its own is posed before Blender evaluates a new frame
    (``before_evaluation`` True), its preview channels' F-curves muted: the frame is
    evaluated, and a mesh the armature deforms deformed, once. One sharing its action
    with other objects (muting would stop them) is posed after the animation (False),
    which makes Blender evaluate it again. None: pose it now, either way. ``compare``
    False: what was simulated is shown without comparing what it was simulated from."""
    preview = _previews.get(obj.name)
    if compare or preview is None:
        preview = _preview_of(obj, scene, depsgraph)
    if preview.drives is None:
        preview.drives = _take_over(obj, preview)
    if before_evaluation is None or preview.drives == before_evaluation:
        _show(obj, preview, _shown_row_frame(scene))


def _take_over(obj, preview):
    """Mute the F-curves of the channels the preview writes, when the action is the
    object's alone; returns whether it did."""
    action = jobs.active_action(obj)
    if any(other != obj and other.animation_data is not None and other.animation_data.action == action
           for other in bpy.data.objects):
        return False
    shown = preview.shown
    written = tuple((f"{armature.bone_data_path(bone)}.{prop}", index)
                    for bone, prop, values in zip(shown.bones, shown.props, shown.values)
                    for index in range(len(values[0])))
    preview.muted = (action.session_uid, compat.slot_identifier(obj, action), written)
    _mute(preview, True)
    return True


def _mute(preview, mute):
    """Mute (or unmute) the F-curves the preview took over (see :func:`_take_over`): in the
    action it muted them in, even where the object plays another one now or is gone."""
    uid, slot, written = preview.muted
    action = next((action for action in bpy.data.actions if action.session_uid == uid), None)
    bag = None if action is None else compat.bag_of_slot(action, slot)
    table = compat.fcurve_table(bag)
    for channel in written:
        fcurve = table.get(channel)
        if fcurve is not None and fcurve.mute != mute:
            fcurve.mute = mute


def _shown_row_frame(scene):
    """The clip's frame nearest to the one the scene shows (Time Stretching may show one
    between two)."""
    return round(shown_frame(scene))


def _show(obj, preview, frame, shown=True):
    """Pose the bones at the clip's ``frame`` as the preview shows them (``shown`` False: as
    the clip has them). Outside the clip both hold its ends, as the animation does (and the
    action Bake Preview keys: a scene a frame longer than the clip showed its last frame
    unlocked). Driving (its F-curves muted), it writes every channel. Else a bone the
    animation already shows right is not written, unless the preview changed it before: a
    channel without keys keeps what was set. (Run for every armature on every frame: plain
    lists, no numpy.)"""
    frames = len(preview.moved_rows)
    row = min(max(frame - preview.clip.joint_map.frame_start, 0), frames - 1)
    moved = preview.moved_rows[row] if shown else preview.unmoved
    drives, written, bones = preview.drives, preview.written, obj.pose.bones
    for joint, bone, prop, shown_values, authored_values in preview.channels:
        if moved[joint] or drives or written[joint]:
            setattr(bones[bone], prop, (shown_values if moved[joint] else authored_values)[row])
    preview.written = moved


def _give_back(obj, preview):
    """Unmute what the preview muted and give the bones it posed (``obj``; None where it is
    gone) the clip's pose at the current frame."""
    if preview.drives:
        _mute(preview, False)
    scene = bpy.context.scene
    if scene is None or obj is None or obj.type != "ARMATURE":
        return
    with contextlib.suppress(KeyError, AdapterError):  # bones gone meanwhile: nothing to give back
        _show(obj, preview, _shown_row_frame(scene), shown=False)


# --- turning Preview on and off ---------------------------------------------------------


def preview_toggled(obj, context):
    """``foot_lock.preview`` changed: show the preview now, or give the clip's pose back."""
    if obj.foot_lock.preview:
        obj.foot_lock.preview_error = ""
        sync_handlers()
        _step_safely(obj, context.scene, context.evaluated_depsgraph_get())
    else:
        _release(obj.name)
        sync_handlers()


def _step_safely(obj, scene, depsgraph, before_evaluation=None, compare=True):
    try:
        step(obj, scene, depsgraph, before_evaluation, compare)
    except Exception as error:  # a handler must never raise into Blender's handler loop
        _stop(obj, error)


def _stop(obj, error):
    """Turn the object's Preview off because of ``error``, saying why: an expected refusal in
    its one line, anything else (a bug) with its traceback too."""
    message = str(error) or type(error).__name__
    print(f"Foot Lock: Preview of {obj.name!r} stopped: {message}")
    if not isinstance(error, EXPECTED_ERRORS):
        traceback.print_exc()
    obj.foot_lock.preview_error = message
    obj.foot_lock.preview = False  # its update gives the clip's pose back


def _release(name):
    """Drop an armature's preview, giving its bones back the clip's pose."""
    preview = _previews.pop(name, None)
    _keyed_channels.pop(name, None)
    if preview is not None:
        _give_back(bpy.data.objects.get(name), preview)  # a deleted armature's action is unmuted too


@contextlib.contextmanager
def paused(obj):
    """While a job reads or writes the object's action: its F-curves as they are without
    the preview (none muted), and the preview simulated again after the job."""
    preview = _previews.pop(obj.name, None)
    if preview is not None:
        _give_back(obj, preview)
    try:
        yield
    finally:
        if preview is not None and obj.foot_lock.preview:
            _step_safely(obj, bpy.context.scene, bpy.context.evaluated_depsgraph_get())


# --- bake -------------------------------------------------------------------------------


def bake_preview(obj, scene, depsgraph):
    """Key the preview of every frame of the action, exactly as shown, into a new action
    ``<action>.preview`` (the original is kept). Preview is turned off: the new action
    already holds it. Returns (the new action, frames, the write's warnings)."""
    preview = _preview_of(obj, scene, depsgraph)
    if obj.foot_lock.preview:
        obj.foot_lock.preview = False
    _previews.pop(obj.name, None)
    clip, played = preview.clip, preview.played
    changed = preview.joints[preview.moved.any(axis=0)]
    bones, pelvis = clip.joint_map.joint_bone, clip.rig.pelvis
    source = jobs.active_action(obj)
    warnings = []
    action = armature.write_motion(
        obj, source, clip.joint_map, Motion(played.rot, played.pos, clip.motion.fps), int(clip.frames[0]),
        rotation_bones=[bones[j] for j in changed if j != pelvis],
        location_bones=[bones[pelvis]] if pelvis in changed else [],
        new_action_name=compat.suffixed_name(source.name, PREVIEW_SUFFIX), warnings=warnings,
    )
    return action, len(clip.frames), warnings


# --- handlers ---------------------------------------------------------------------------


def _step_previews(scene, depsgraph, before_evaluation):
    """Pose every previewing armature of ``scene`` for its frame: a few lookups and property
    writes each. What a preview was simulated from (reading it is most of a frame's work) is
    compared for all of them after the depsgraph reported an update -- any edit made in the
    interface -- and else for one of them per frame, in turn: a script that changes a
    setting without updating the view layer is seen within as many frames as there are
    previews, and ten previews cost a frame ten writes but one comparison."""
    if terrain.is_stepping():
        return  # a preview's ground is being sampled over its frame range: nothing to show
    objects = bpy.data.objects
    if any(objects.get(name) is None for name in _previewing):
        sync_handlers()  # an armature was renamed or deleted: find the previewing ones again
    names = tuple(_previewing)  # (a preview stopped by an error leaves the list)
    compared = _compared_now(names) if before_evaluation else set(names)  # (after it: the few not driving)
    in_scene = scene.objects.get
    for name in names:
        preview = _previews.get(name)
        if not before_evaluation and preview is not None and preview.drives:
            continue  # posed before evaluation already
        obj = objects.get(name)
        if obj is not None and obj.foot_lock.preview and in_scene(name) is not None:
            _step_safely(obj, scene, depsgraph, before_evaluation, name in compared)


def _compared_now(names):
    """The previews whose inputs this frame compares: all after an update, else the next in turn."""
    if _inputs["updated"]:
        _inputs["updated"] = False
        return set(names)
    _inputs["turn"] = (_inputs["turn"] + 1) % max(len(names), 1)
    return set(names[_inputs["turn"] : _inputs["turn"] + 1])


@persistent
def _on_frame_change_pre(scene, depsgraph=None):
    # No depsgraph is evaluated here unless a preview is simulated: evaluating it before the
    # frame (scrubbing tags the frame change first) would evaluate every frame twice.
    _step_previews(scene, depsgraph, True)


@persistent
def _on_frame_change(scene, depsgraph):
    _step_previews(scene, depsgraph, False)


def _edits_ground(update):
    """Whether a depsgraph update moved or reshaped a mesh or collection instance that may be ground."""
    data = update.id.original
    if isinstance(data, bpy.types.Mesh):
        return update.is_updated_geometry
    return (isinstance(data, bpy.types.Object) and terrain.shows_meshes(data)
            and (update.is_updated_transform or update.is_updated_geometry) and not terrain.is_character_mesh(data))


@persistent
def _on_depsgraph_update(scene, depsgraph):
    """An action or a ground mesh changed, or a setting (the interface tags the armature
    whose property it edits): what was simulated is stale. The stale previews are simulated
    again a moment later (also without a frame change), once per burst of edits. The next
    frame compares every preview's inputs too."""
    _inputs["updated"] = True
    if depsgraph.id_type_updated("ACTION") and _keys_edited(depsgraph):
        _edits["action"] += 1
    if any(_edits_ground(update) for update in depsgraph.updates) or (_ground_may_differ(depsgraph)
                                                                       and _other_ground(scene)):
        _edits["ground"] += 1
    if _any_stale(scene) and not bpy.app.timers.is_registered(_refresh):
        bpy.app.timers.register(_refresh, first_interval=REFRESH_DELAY)


def _ground_may_differ(depsgraph):
    """Whether an update may have changed which meshes are ground, so that listing them (a
    pass over the scene's objects) is worth it: hiding, showing or deleting an object and
    collection edits update the scene; a mesh object's own edits (a modifier, a parent) may
    make it a character's mesh or ground. Moving bones, empties or lights does neither."""
    return depsgraph.id_type_updated("SCENE") or any(
        isinstance(update.id, bpy.types.Object) and terrain.shows_meshes(update.id) for update in depsgraph.updates)


def _other_ground(scene):
    """Whether the meshes that are ground are not those some preview was simulated on any
    more: one hidden or shown, deleted, or added to or taken out of the ground collection."""
    found = {}  # ground collection (None: the scene) -> its ground meshes
    for obj in _previewing_in(scene):
        preview, collection = _previews.get(obj.name), obj.foot_lock.ground_collection
        if collection not in found:
            found[collection] = tuple(terrain.ground_objects(scene, collection))
        if preview is not None and preview.ground != found[collection]:
            return True
    return False


def _any_stale(scene):
    """Whether some preview of ``scene`` is missing or was simulated from other inputs than the scene's now."""
    return any(True for _ in _stale_previews(scene))


def _stale_previews(scene):
    """The previewing armatures of ``scene`` whose preview is missing or stale."""
    for obj in _previewing_in(scene):
        if _is_stale(obj, _previews.get(obj.name), scene):
            yield obj


def _previewing_in(scene):
    """The armatures of ``scene`` that preview."""
    for name in _previewing:
        obj = scene.objects.get(name) if scene is not None else None
        if obj is not None and obj.foot_lock.preview:
            yield obj


def _is_stale(obj, preview, scene):
    try:
        return preview is None or preview.key != _key(obj, scene)
    except AdapterError:
        return True  # e.g. its action is gone: showing it again says why


def _keys_edited(depsgraph):
    """Whether the keys of a previewing armature's action changed (its own mute flags do
    not count). Only the actions the update names are read: each is hashed in full."""
    actions = {update.id.original.name for update in depsgraph.updates if isinstance(update.id, bpy.types.Action)}
    for name, preview in _previews.items():
        obj = bpy.data.objects.get(name)
        with contextlib.suppress(AdapterError):  # no action any more: the next frame says so
            if obj is not None and preview.key[0] in actions and _keys_signature(obj) != preview.keys:
                return True
    return False


def _refresh():
    """Simulate and show again the previews whose inputs changed (a timer: returns None, once)."""
    scene, depsgraph = bpy.context.scene, bpy.context.evaluated_depsgraph_get()
    for obj in list(_stale_previews(scene)):  # (a preview stopped by an error leaves ``_previewing``)
        _step_safely(obj, scene, depsgraph)


@persistent
def _on_data_replaced(*_args):
    """A file was loaded, or undo or redo put other data in place: what was read may be stale."""
    _previews.clear()
    _keyed_channels.clear()
    sync_handlers()


def _mute_previews(muted):
    """Mute (or unmute) the F-curves of every preview that drives its armature."""
    for preview in _previews.values():
        if preview.drives:
            _mute(preview, muted)


@persistent
def _on_save_pre(*_args):
    """A file is saved: with its F-curves as they are without the preview (it resumes on load)."""
    _mute_previews(False)


@persistent
def _on_save_post(*_args):
    _mute_previews(True)


_DATA_HANDLERS = (
    (bpy.app.handlers.load_post, _on_data_replaced),
    (bpy.app.handlers.undo_post, _on_data_replaced),
    (bpy.app.handlers.redo_post, _on_data_replaced),
    (bpy.app.handlers.save_pre, _on_save_pre),
    (bpy.app.handlers.save_post, _on_save_post),
)
_PREVIEW_HANDLERS = (
    (bpy.app.handlers.frame_change_pre, _on_frame_change_pre),
    (bpy.app.handlers.frame_change_post, _on_frame_change),
    (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update),
)


def overlays():
    """Overlay geometry of every previewing armature that shows it (the draw callback's)."""
    out = []
    scene = bpy.context.scene
    for name, preview in _previews.items():
        obj = bpy.data.objects.get(name)
        row = _shown_row_frame(scene) - preview.clip.joint_map.frame_start
        if obj is None or not obj.foot_lock.show_overlay or not 0 <= row < len(preview.moved):
            continue
        played = preview.played
        first = max(0, row + 1 - max(2, round(TRAIL_SECONDS * preview.clip.motion.fps)))
        out.append(overlay.overlay_geometry(played.toe_inputs[first : row + 1], played.toes[first : row + 1],
                                            played.contacts[row], MARKER_SIZE * preview.leg_length))
    return out


def sync_handlers():
    """Register the frame handler and the overlay while some armature previews, and only then."""
    _previewing[:] = sorted(obj.name for obj in bpy.data.objects if obj.type == "ARMATURE" and obj.foot_lock.preview)
    for name in set(_previews) - set(_previewing):
        _release(name)
    _register_handlers(bool(_previewing))


def _register_handlers(wanted):
    global _draw_handle
    for handlers, function in _PREVIEW_HANDLERS:
        if wanted and function not in handlers:
            handlers.append(function)
        elif not wanted and function in handlers:
            handlers.remove(function)
    if not wanted and bpy.app.timers.is_registered(_refresh):
        bpy.app.timers.unregister(_refresh)
    if wanted and _draw_handle is None:
        _draw_handle = bpy.types.SpaceView3D.draw_handler_add(overlay.draw, (overlays,), "WINDOW", "POST_VIEW")
    elif not wanted and _draw_handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_draw_handle, "WINDOW")
        _draw_handle = None


def _preview_changed(settings, context):
    preview_toggled(settings.id_data, context)


def register():
    # The switch lives here, beside what it switches. A property with a Python callback
    # declared in a PropertyGroup's class body crashes Blender 4.2 at exit; added to the
    # registered class (and removed before it is unregistered) it does not.
    FOOT_LOCK_PG_settings.preview = BoolProperty(
        name="Preview",
        description="Lock and plant the feet on the scene's meshes while the timeline plays or is scrubbed, "
        "as a game engine would at runtime. Nothing is keyed until Bake Preview",
        default=False, update=_preview_changed,
    )
    for handlers, function in _DATA_HANDLERS:
        handlers.append(function)


def unregister():
    for name in list(_previews):
        _release(name)
    _previewing.clear()
    _register_handlers(False)
    for handlers, function in _DATA_HANDLERS:
        if function in handlers:
            handlers.remove(function)
    del FOOT_LOCK_PG_settings.preview
