"""Preview: the runtime foot lock on the scene's terrain, live, while the timeline plays.

With ``Object.foot_lock.preview`` on, a frame-change handler poses the legs and pelvis of
the armature each frame as a game engine would at runtime (see
:mod:`..solvers.runtime_pose`): feet locked during contacts and planted on the meshes
under them, the character carried up and down by the ground. The pose bones' channels
are set after Blender has evaluated the animation for the frame; nothing is keyed until
:func:`bake_preview`.

Per armature the action is read once (:func:`~.jobs.read_clip`) and kept with the
runtime state, as arrays and names only -- undo and file loads free bpy data at any
time. Each frame then costs one solver step for one frame, a handful of raycasts and a
few pose-bone writes, of the bones whose pose the preview changes (or changed last).

The handlers are registered only while some armature previews. Nothing raised inside
them reaches Blender's handler loop: an error turns that armature's Preview off and is
printed and shown in the panel.
"""

import contextlib
import traceback
from collections import deque
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..solvers.kinematics import Motion
from ..solvers.runtime_pose import TerrainFootLock, play_clip, preview_joints, runtime_clip
from . import armature, jobs, overlay, terrain
from .properties import runtime_settings, solver_settings

PREVIEW_SUFFIX = ".preview"
TRAIL_SECONDS = 1.0  # how much toe path the overlay shows
MARKER_SIZE = 0.03  # contact markers, as a share of the leg length
UNCHANGED = 1e-7  # a solved joint this close to the clip is left to the animation

_previews = {}  # object name -> _Preview
_previewing = set()  # names of the armatures with Preview on
_action_edits = 0  # bumped when any action changes: read clips are stale then
_draw_handle = None


@dataclass
class _Preview:
    """What one armature's preview keeps from frame to frame."""

    key: tuple  # what the clip was read from; another key means read again
    clip: object  # jobs.Clip
    runtime: object  # the clip as the runtime lock reads it
    own: frozenset  # names of the character's own objects, never ground
    joints: np.ndarray  # joints the preview may pose
    options: tuple = ()  # settings the runtime lock was made with
    lock: TerrainFootLock | None = None
    frame: int | None = None  # scene frame shown last
    result: object = None  # its FrameResult
    written: frozenset = frozenset()  # joints posed differently from the clip there
    trail: deque = field(default_factory=deque)  # (toe inputs, toes) of the recent frames


# --- settings ---------------------------------------------------------------------------


_OPTIONS = ("lock_distance", "unlock_distance", "blend_time", "max_correction", "max_tilt", "pelvis_smoothing",
            "root_follow", "softening", "height_clamp", "heel_look_at", "toe_look_at")


def _options(settings):
    """The settings the runtime lock is built from, cheap to compare from frame to frame."""
    collection = settings.ground_collection
    return tuple(getattr(settings, name) for name in _OPTIONS) + (collection.name if collection else None,)


def _clip_key(obj, action, scene):
    settings = obj.foot_lock
    legs = tuple((leg.name, leg.thigh, leg.shin, leg.foot, leg.toe) for leg in settings.legs)
    placement = tuple(value for row in obj.matrix_world for value in row)
    fps = scene.render.fps / scene.render.fps_base
    return (action.name, jobs.frame_range(action), settings.pelvis, legs, placement, fps, _action_edits)


# --- the clip and the runtime lock ------------------------------------------------------


def _read(obj, action, scene, key):
    """Read ``action`` into a new :class:`_Preview`."""
    jobs.ensure_legs(obj)
    clip = jobs.read_clip(obj, action)
    contacts = jobs.stored_contacts(obj, action, clip)
    joint_map = clip.joint_map
    joints = np.array([j for j in preview_joints(clip.skeleton, clip.rig) if not joint_map.is_tail[j]])
    joint_map.require_exact(joint_map.joint_bone[j] for j in joints)
    runtime = runtime_clip(
        clip.skeleton, clip.motion, clip.rig, floor=joint_map.object_pos @ jobs.UP,
        contacts=None if np.isnan(contacts).any() else contacts,  # a leg without a curve: by speed
        up=jobs.UP, softening_ratio=obj.foot_lock.softening,
    )
    return _Preview(key, clip, runtime, terrain.own_objects(obj, scene), joints)


def _preview_of(obj, scene):
    """The object's preview, read again when the action, legs or placement changed and
    with a fresh runtime lock when the settings did."""
    settings = obj.foot_lock
    if not settings.legs:
        jobs.ensure_legs(obj)  # before the key, which names the legs
    action = jobs.active_action(obj)
    key = _clip_key(obj, action, scene)
    preview = _previews.get(obj.name)
    if preview is None or preview.key != key:
        stale = preview
        preview = _previews[obj.name] = _read(obj, action, scene, key)
        if stale is not None:  # what it posed goes back to the clip as read now
            preview.written = stale.written
    options = _options(settings)
    if preview.options != options:
        preview.lock = TerrainFootLock(preview.runtime, runtime_settings(settings), solver_settings(settings),
                                       settings.root_follow, jobs.UP)
        preview.options, preview.frame = options, None
    return preview


def _ground(obj, preview, scene, depsgraph):
    return terrain.Ground(scene, depsgraph, preview.own, obj.foot_lock.ground_collection, jobs.UP)


# --- one frame --------------------------------------------------------------------------


def step(obj, scene, depsgraph):
    """Pose ``obj`` for the scene's current frame (the handler's work for one armature)."""
    preview = _preview_of(obj, scene)
    joint_map = preview.clip.joint_map
    frame = scene.frame_current
    if not joint_map.frame_start <= frame <= joint_map.frame_end:
        _show(obj, preview, None, frame)  # outside the action the animation is left alone
        preview.frame, preview.result = None, None
        return
    if frame != preview.frame or preview.result is None:
        dt = 0.0 if preview.frame is None else (frame - preview.frame) / preview.clip.motion.fps
        if not 0.0 < dt <= preview.lock.settings.max_step:
            preview.trail.clear()  # a jump: the runtime lock starts over too
        ground = _ground(obj, preview, scene, depsgraph)
        preview.result = preview.lock.step(frame - joint_map.frame_start, dt, ground)
        preview.frame = frame
        _remember_trail(preview)
    _show(obj, preview, preview.result, frame)


def _remember_trail(preview):
    result = preview.result
    length = max(2, round(TRAIL_SECONDS * preview.clip.motion.fps))
    if preview.trail.maxlen != length:
        preview.trail = deque(preview.trail, maxlen=length)
    preview.trail.append((result.toe_inputs, result.toes))


def _show(obj, preview, result, frame):
    """Pose the bones the preview changes at scene ``frame`` as ``result`` has them (None:
    as the clip has them). A bone the animation already shows right is not written,
    unless the preview changed it before: a channel without keys keeps what was set."""
    joint_map = preview.clip.joint_map
    row = int(np.clip(frame - joint_map.frame_start, 0, joint_map.frames - 1))
    clip_rot, clip_pos = preview.clip.motion.rot[row], preview.clip.motion.pos[row]
    rot, pos = (clip_rot, clip_pos) if result is None else (result.rot, result.pos)
    joints = preview.joints
    moved = np.maximum(np.abs(rot[joints] - clip_rot[joints]).max(axis=1),
                       np.abs(pos[joints] - clip_pos[joints]).max(axis=1)) > UNCHANGED
    changed = frozenset(joints[moved].tolist())
    writing = sorted(changed | preview.written)
    if writing:
        pelvis, bones = preview.clip.rig.pelvis, joint_map.joint_bone
        armature.set_pose(obj, joint_map, rot, pos, joint_map.frame_start + row,
                          [bones[j] for j in writing if j != pelvis],
                          [bones[pelvis]] if pelvis in writing else [])
    preview.written = changed


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


def _step_safely(obj, scene, depsgraph):
    try:
        step(obj, scene, depsgraph)
    except Exception as error:  # a handler must never raise into Blender's handler loop
        _stop(obj, error)


def _stop(obj, error):
    """Turn the object's Preview off because of ``error``, saying why."""
    message = str(error) or type(error).__name__
    print(f"Foot Lock: Preview of {obj.name!r} stopped: {message}")
    traceback.print_exc()
    obj.foot_lock.preview_error = message
    obj.foot_lock.preview = False  # its update gives the clip's pose back


def _release(name):
    """Drop an armature's preview, giving its bones back the clip's pose at the current frame."""
    preview = _previews.pop(name, None)
    obj = bpy.data.objects.get(name)
    scene = bpy.context.scene
    if preview is None or obj is None or obj.type != "ARMATURE" or scene is None:
        return
    with contextlib.suppress(KeyError):  # a bone renamed or deleted meanwhile: nothing to give back
        _show(obj, preview, None, scene.frame_current)


# --- bake -------------------------------------------------------------------------------


def bake_preview(obj, scene, depsgraph):
    """Play the preview from the action's first frame to its last and key it into a new
    action ``<action>.preview`` (the original is kept). Preview is turned off: the new
    action already holds it. Returns (the new action, frames)."""
    if obj.foot_lock.preview:
        obj.foot_lock.preview = False
    preview = _preview_of(obj, scene)
    _previews.pop(obj.name, None)
    rot, pos = play_clip(preview.lock, _ground(obj, preview, scene, depsgraph))
    clip = preview.clip
    changed = [j for j in preview.joints
               if np.abs(rot[:, j] - clip.motion.rot[:, j]).max() > UNCHANGED
               or np.abs(pos[:, j] - clip.motion.pos[:, j]).max() > UNCHANGED]
    bones, pelvis = clip.joint_map.joint_bone, clip.rig.pelvis
    source = jobs.active_action(obj)
    action = armature.write_motion(
        obj, source, clip.joint_map, Motion(rot, pos, clip.motion.fps), int(clip.frames[0]),
        rotation_bones=[bones[j] for j in changed if j != pelvis],
        location_bones=[bones[pelvis]] if pelvis in changed else [],
        new_action_name=source.name + PREVIEW_SUFFIX,
    )
    return action, len(clip.frames)


# --- handlers ---------------------------------------------------------------------------


@persistent
def _on_frame_change(scene, depsgraph):
    if any(bpy.data.objects.get(name) is None for name in _previewing):
        sync_handlers()  # an armature was renamed or deleted: find the previewing ones again
    for name in sorted(_previewing):
        obj = scene.objects.get(name)
        if obj is not None and obj.foot_lock.preview:
            _step_safely(obj, scene, depsgraph)


@persistent
def _on_depsgraph_update(scene, depsgraph):
    global _action_edits
    if depsgraph.id_type_updated("ACTION"):
        _action_edits += 1


@persistent
def _on_data_replaced(*_args):
    """A file was loaded, or undo or redo put other data in place: what was read may be stale."""
    _previews.clear()
    sync_handlers()


_DATA_HANDLERS = (bpy.app.handlers.load_post, bpy.app.handlers.undo_post, bpy.app.handlers.redo_post)
_PREVIEW_HANDLERS = (
    (bpy.app.handlers.frame_change_post, _on_frame_change),
    (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update),
)


def overlays():
    """Overlay geometry of every previewing armature that shows it (the draw callback's)."""
    out = []
    for name, preview in _previews.items():
        obj = bpy.data.objects.get(name)
        if obj is None or not obj.foot_lock.show_overlay or preview.result is None:
            continue
        legs = len(preview.clip.rig.legs)
        inputs = np.reshape([t[0] for t in preview.trail], (-1, legs, 3))
        toes = np.reshape([t[1] for t in preview.trail], (-1, legs, 3))
        size = MARKER_SIZE * preview.runtime.leg_length
        out.append(overlay.overlay_geometry(inputs, toes, preview.result.contacts, size))
    return out


def sync_handlers():
    """Register the frame handler and the overlay while some armature previews, and only then."""
    _previewing.clear()
    _previewing.update(obj.name for obj in bpy.data.objects if obj.type == "ARMATURE" and obj.foot_lock.preview)
    for name in set(_previews) - _previewing:
        _release(name)
    _register_handlers(bool(_previewing))


def _register_handlers(wanted):
    global _draw_handle
    for handlers, function in _PREVIEW_HANDLERS:
        if wanted and function not in handlers:
            handlers.append(function)
        elif not wanted and function in handlers:
            handlers.remove(function)
    if wanted and _draw_handle is None:
        _draw_handle = bpy.types.SpaceView3D.draw_handler_add(overlay.draw, (overlays,), "WINDOW", "POST_VIEW")
    elif not wanted and _draw_handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_draw_handle, "WINDOW")
        _draw_handle = None


def register():
    for handlers in _DATA_HANDLERS:
        handlers.append(_on_data_replaced)


def unregister():
    for name in list(_previews):
        _release(name)
    _previewing.clear()
    _register_handlers(False)
    for handlers in _DATA_HANDLERS:
        if _on_data_replaced in handlers:
            handlers.remove(_on_data_replaced)
