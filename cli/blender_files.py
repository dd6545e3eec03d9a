"""One file through Blender: .blend, .fbx, .glb/.gltf (and BVH going to one of those).

The file is opened, or imported into an empty session with Blender's bundled importer;
each chosen armature and action is fixed by the add-on's own job
(:func:`~..adapters.jobs.remove_sliding`, exactly what the sidebar button does); then
the session is saved or exported with Blender's bundled exporter.

- ``.blend`` out: like the button, each fix goes to a new ``<action>.footlock`` action
  and the original is kept (unless ``--in-place``).
- ``.fbx`` / ``.glb`` / ``.gltf`` out: fixed in place, so the exported animations keep
  their names; every animation of the input is exported, fixed or not.

A ``.blend`` is opened with its scripts disabled (``use_scripts=False``): nothing from a
file of unknown origin runs. Outputs are written atomically (:func:`~..solvers.atomic_files.atomic_output`)
after checking that every key is a number.
"""

import ctypes
import os
import sys
from contextlib import contextmanager, redirect_stdout, suppress

import bpy
import numpy as np

from .. import register, unregister
from ..adapters import action_compat, armature, jobs, sources
from ..adapters.errors import AdapterError
from ..adapters.properties import unit_scale
from ..adapters.scene_time import playback_rate
from ..solvers.atomic_files import ProtectedFileError, atomic_output
from ..solvers.bvh import check_frame_rate
from .blend_header import newer_than_this
from .bvh_files import file_unit_scale
from .errors import ClipError
from .fbx_files import fbx_axes
from .gltf_files import gltf_document, input_files
from .report import clip_entry, warning_notes
from .settings_flags import apply_to

NLA_PLAYBACK = "(NLA)"  # the report's action name for what an armature's NLA strips play


def fix_in_blender(source, target, args):
    """Fix ``source`` into ``target``; returns the report's clip entries."""
    return _job_in_blender(source, target, args,
                           lambda: fix_scene(args, keep_originals=target.suffix.lower() == ".blend"))


def root_motion_in_blender(source, target, args):
    """Root Motion from Feet on each chosen armature of ``source``, saved to ``target``;
    returns a line per armature."""
    from ..adapters import root_motion

    def job():
        lines = []
        for obj, _ in chosen_clips(args):
            obj.foot_lock.in_place = target.suffix.lower() != ".blend"  # exported takes keep their names
            outcome = root_motion.root_motion_from_feet(obj, bpy.context.scene, args.onto_object)
            lines.append(f"{obj.name}: {root_motion.summary(outcome)}{warning_notes(outcome.warnings)}")
        return lines

    return _job_in_blender(source, target, args, job)


def _job_in_blender(source, target, args, job):
    """Load ``source``, run ``job()`` with the add-on registered, save ``target`` (every key
    checked first); returns what ``job`` returns. Both commands share every check."""
    try:
        with chatter_to_stderr():
            load(source, args)
            check_frame_rate(scene_fps(), f"{source.name} (as Blender reads it)")
            with addon_registered():
                result = job()
                refuse_non_finite_keys()
                save(target, input_files(source), fbx_axes(source) if source.suffix.lower() == ".fbx" else {})
    except (AdapterError, RuntimeError) as error:  # RuntimeError: a bpy.ops call that failed
        raise ClipError(str(error).strip()) from None
    return result


@contextmanager
def chatter_to_stderr():
    """What Blender and its importers print while inside ("Read blend: ...", the FBX
    importer's progress) goes to stderr: stdout is for the command's own lines, which
    pipelines read. Blender prints from C, past ``sys.stdout``: the file descriptor itself
    is pointed at stderr, its C buffers flushed on the way in and out."""
    sys.stdout.flush()
    _flush_c_streams()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to keep clean
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        _flush_c_streams()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _flush_c_streams():
    """``fflush(NULL)``: what C code buffered for stdout written where stdout points now."""
    with suppress(OSError, AttributeError, TypeError):  # Windows: no C library of that name, nothing flushed
        ctypes.CDLL(None).fflush(None)


@contextmanager
def addon_registered():
    """The add-on's classes registered for the job, unless this Blender has it enabled.

    Unregistered again at the end: Blender 4.2 crashes at exit with classes left registered.
    """
    if hasattr(bpy.types.Object, "foot_lock"):
        yield
        return
    register()
    try:
        yield
    finally:
        unregister()


# --- in ---------------------------------------------------------------------------------


def load(source, args):
    suffix = source.suffix.lower()
    if suffix == ".blend":
        # A file from elsewhere runs none of its code (Text blocks registered as modules,
        # Python drivers), whatever the user's "Auto Run Python Scripts" preference says.
        try:
            bpy.ops.wm.open_mainfile(filepath=str(source), load_ui=False, use_scripts=False)
        except RuntimeError:
            newer = newer_than_this(source, bpy.app.version)
            if newer:  # Blender's own message would call it "not a blend file"
                raise ClipError(newer) from None
            raise
        return
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if suffix == ".fbx":
        bpy.ops.import_scene.fbx(filepath=str(source))  # sets the scene's frame rate from the file
    elif suffix == ".bvh":
        scale, _ = file_unit_scale(source, args.bvh_unit_scale)  # imported in metres
        bpy.ops.import_anim.bvh(
            filepath=str(source), global_scale=scale, update_scene_fps=True, update_scene_duration=True
        )
    else:
        # glTF keys are in seconds and the importer turns them into frames at the scene's
        # rate: set it to the file's own, or 120 Hz mocap would be resampled at 24 fps.
        rate = gltf_frame_rate(source)
        if rate:
            bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = rate, 1.0
        bpy.ops.import_scene.gltf(filepath=str(source))


def gltf_frame_rate(path):
    """Keys per second of the file's most densely keyed animation channel, or None.

    Read from the accessors' ``min``/``max``, which glTF requires for animation times.
    """
    document = gltf_document(path)
    rates = []
    try:
        for animation in document.get("animations", []):
            for sampler in animation.get("samplers", []):
                times = document["accessors"][sampler["input"]]
                span = float(times["max"][0]) - float(times["min"][0])
                if times["count"] > 1 and span > 0:
                    rates.append((times["count"] - 1) / span)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise ClipError(f"{path.name}: a glTF animation's time accessor is broken (no count, min or max)") from None
    if rates:
        check_frame_rate(max(rates), f"{path.name}'s animation")
    return round(max(rates)) if rates else None


def scene_fps():
    return playback_rate(bpy.context.scene)


# --- fix --------------------------------------------------------------------------------


def fix_scene(args, keep_originals):
    clips = []
    everyone, armatures = _armatures(args)
    for obj, actions in chosen_clips(args):
        # By name: a fix run again refreshes Foot Lock's earlier result, and the action that
        # was it is removed (its name goes to the fresh one).
        current = _name_key(current_action(obj))
        fixed, covered = {}, []
        for key in map(_name_key, actions):
            action = None if key is None else bpy.data.actions[key]
            if action is not None and action in covered:  # a result fixed again, or its source: done
                continue
            name = NLA_PLAYBACK if action is None else action.name
            reason = None if action is None else why_kept(obj, action) or _shared(action, everyone, armatures)
            if reason:  # a pose, not a motion: it never fails the file
                clips.append(_kept_entry(obj, action, reason))
                continue
            try:
                outcome = fix_clip(obj, action, args, keep_originals)
            except (AdapterError, ValueError) as error:  # ValueError: the solvers' input errors
                raise ClipError(f"armature {obj.name!r}, action {name!r}: {error}") from None
            fixed[key] = outcome.action
            covered += [outcome.action, sources.recorded_source(outcome.action)]
            clips.append(_entry(obj, name, outcome))
        if current is not None:  # the armature ends up playing what it played, fixed
            action_compat.assign_action(obj, fixed.get(current) or bpy.data.actions[current])
    if not keep_originals:
        whole_frame_ranges()
        for obj in bpy.context.scene.objects:
            if obj.type == "ARMATURE":
                name_slots_after(obj, actions_of(obj))
    return clips


def _name_key(action):
    """What finds ``action`` in ``bpy.data.actions`` once it may have been replaced by a
    fresh one of its name: its name and library (None for what NLA strips play)."""
    if action is None:
        return None
    return action.name, action.library.filepath if action.library else None


def chosen_clips(args):
    """``[(armature, [actions])]`` to fix, per ``--armature``, ``--action``, ``--all-actions``.

    By default each armature's current action in a ``.blend`` (``None`` for an armature that
    plays NLA strips and no action: what the strips play is fixed); in an imported file
    (FBX, glTF: no ``.blend`` behind the session) every take of each armature.
    """
    everyone, armatures = _armatures(args)
    if args.all_actions or not (args.action or bpy.data.filepath):
        chosen = [(obj, actions_of(obj, everyone, armatures)) for obj in armatures]
    elif args.action:
        action = bpy.data.actions.get(args.action)
        if action is None:
            raise ClipError(f"no action named {args.action!r} (actions: {', '.join(bpy.data.actions.keys())})")
        if args.armature:  # the pair asked for, whoever else plays the action
            chosen = [(obj, [action]) for obj in armatures if animates(action, obj)]
        else:
            shared = _shared(action, everyone, armatures)
            if shared:
                raise ClipError(f"action {action.name!r} {shared}")
            chosen = [(obj, [action]) for obj in _owners(action, everyone, armatures)]
    else:  # what each armature plays: its action, or without one the NLA strips it plays (None)
        chosen = [(obj, [current_action(obj)]) for obj in armatures
                  if current_action(obj) is not None or sources.playing_tracks(obj.animation_data)]
    chosen = [(obj, actions) for obj, actions in chosen if actions]
    if not chosen:
        raise ClipError("nothing to fix: no armature with an action to clean up in the scene")
    return chosen


def why_kept(obj, action):
    """Why ``action`` is kept as it is (a one-frame pose, or keys that never change), or None."""
    start, end = jobs.frame_range(action)
    if end <= start:
        return f"one frame ({start}): a pose, kept unchanged"
    frames = np.arange(start, end + 1)
    bones = {armature.bone_data_path(bone.name) for bone in obj.pose.bones}
    for fcurve in action_compat.iter_fcurves(obj, action):
        if fcurve.data_path.rpartition(".")[0] in bones and np.ptp(action_compat.read_values(fcurve, frames)) > 0:
            return None
    return f"no motion over frames {start}-{end}: kept unchanged"


def name_slots_after(obj, actions):
    """Name the slot each of ``actions`` animates ``obj`` with after ``obj`` (4.4+).

    The exporters assign each take to the object in turn, and Blender 4.4/4.5 then picks
    the slot by the object's last slot name: a take whose slot has another name (an FBX
    take's slot is named after its take) would be exported without motion.
    """
    for action in actions:
        slot = action_compat.action_slot(obj, action)
        if slot is not None and slot.name_display != obj.name:
            slot.name_display = obj.name


def whole_frame_ranges():
    """Give every action with a fractional key range (an FBX take's last key lands a hair
    before its frame) its whole-frame range, so the exporter bakes that last frame too."""
    for action in bpy.data.actions:
        start, end = action.frame_range
        if (round(start), round(end)) != (start, end):
            action.use_frame_range = True
            action.frame_start, action.frame_end = round(start), round(end)


def current_action(obj):
    anim = obj.animation_data
    return anim.action if anim is not None else None


def _armatures(args):
    """The scene's armatures, and those ``--armature`` chooses (all without it)."""
    everyone = [obj for obj in bpy.context.scene.objects if obj.type == "ARMATURE"]
    if not args.armature:
        return everyone, everyone
    chosen = [obj for obj in everyone if obj.name == args.armature]
    if not chosen:
        raise ClipError(f"no armature named {args.armature!r} in the scene")
    return everyone, chosen


def actions_of(obj, everyone=None, chosen=None):
    """Every action of the armature (:func:`_owners`; ``everyone``: the scene's armatures,
    ``chosen``: those to fix, by default ``obj`` alone), except earlier Foot Lock results."""
    everyone, chosen = everyone or [obj], chosen or [obj]
    return [action for action in bpy.data.actions
            if not action.name.endswith(jobs.FOOTLOCK_SUFFIX) and obj in _owners(action, everyone, chosen)]


def _owners(action, everyone, chosen):
    """The ``chosen`` armatures ``action`` is fixed on. Characters that share bone names (two
    Mixamo rigs in one file) are each animated by all their actions alike, and an action
    solved on each would end as the last one's fix: it goes to the armatures of ``everyone``
    that play it (:func:`_plays`), else to the first chosen one it animates (:func:`_shared`
    says when others too)."""
    players = [obj for obj in everyone if _plays(obj, action)]
    if players:
        return [obj for obj in players if obj in chosen]
    return [obj for obj in chosen if animates(action, obj)][:1]


def _shared(action, everyone, chosen):
    """Why ``action`` is left as it is, or None: it animates several of the ``chosen``
    armatures alike and none of ``everyone`` plays it, so whose take it is is unknown."""
    if any(_plays(obj, action) for obj in everyone):
        return None
    names = [obj.name for obj in chosen if animates(action, obj)]
    if len(names) < 2:
        return None
    return (f"animates {' and '.join(names)} alike and none of them plays it: kept unchanged; "
            "choose the armature with --armature")


def _plays(obj, action):
    """Whether ``obj`` plays ``action``: as its action, or its Foot Lock result (a file fixed
    before), in an NLA strip, through a slot it uses (4.4+), or named after it by the FBX
    importer (``<object>|<take>``)."""
    anim = obj.animation_data
    if anim is not None and (anim.action == action or any(
            strip.action == action for track in anim.nla_tracks for strip in track.strips)):
        return True
    if anim is not None and anim.action is not None and sources.result_origin(anim.action) == action:
        return True
    if any(obj in slot.users() for slot in getattr(action, "slots", ())):
        return True
    return action.name.startswith(f"{obj.name}|")


def animates(action, obj):
    bones = {armature.bone_data_path(bone.name) for bone in obj.pose.bones}
    return any(fcurve.data_path.rpartition(".")[0] in bones for fcurve in action_compat.iter_fcurves(obj, action))


def fix_clip(obj, action, args, keep_original):
    """Fix ``action`` on ``obj``, or with ``None`` what its NLA plays (baked to a new action)."""
    if action is not None:
        action_compat.assign_action(obj, action)
    settings = obj.foot_lock
    apply_to(settings, args)
    if not keep_original:
        settings.in_place = True  # an exported file holds the fixed motion under the input's names
    outcome = jobs.remove_sliding(obj, bpy.context.scene)
    outcome.action.use_fake_user = True  # saved with the .blend even once another action is assigned
    return outcome


def _kept_entry(obj, action, reason):
    start, end = jobs.frame_range(action)
    return {"armature": obj.name, "action": action.name, "output_action": action.name,
            "frames": end - start + 1, "frame_start": start, "kept": reason}


def _entry(obj, action_name, outcome):
    scene = bpy.context.scene
    entry = clip_entry(
        outcome.result, [leg.name for leg in obj.foot_lock.legs], jobs.frame_range(outcome.action)[0],
        playback_rate(scene), unit_scale(scene), outcome.seconds,
        armature=obj.name, action=action_name, output_action=outcome.action.name, unit_source="scene units",
        motion_source=outcome.source,  # which read ran: the action's keys, the evaluated scene or the NLA
    )
    if outcome.name_note:  # the output action is not <action>.footlock: why
        entry["note"] = outcome.name_note
    entry["contacts_obeyed"] = outcome.contacts_obeyed  # curves an animator keyed, locked as keyed
    return entry


# --- out --------------------------------------------------------------------------------


def refuse_non_finite_keys():
    """Refuse to save keys on an armature that are not numbers, whatever produced them."""
    armatures = [obj for obj in bpy.context.scene.objects if obj.type == "ARMATURE"]
    for obj, action in ((obj, action) for obj in armatures for action in bpy.data.actions):
        for fcurve in action_compat.iter_fcurves(obj, action):
            keys = np.empty(2 * len(fcurve.keyframe_points))
            fcurve.keyframe_points.foreach_get("co", keys)
            if not np.isfinite(keys).all():
                raise ClipError(f"action {action.name!r}, {fcurve.data_path}[{fcurve.array_index}] holds keys "
                                "that are not numbers: nothing was written")


def save(target, protected=(), axes=None):
    """Write the session to ``target`` atomically (:func:`~..solvers.atomic_files.atomic_output`),
    replacing none of the ``protected`` files (:func:`input_files`); an FBX declaring ``axes``."""
    suffix = target.suffix.lower()
    try:
        with atomic_output(target, companions=suffix == ".gltf", protected=protected) as temp:
            _export(temp, target, axes or {})
    except ProtectedFileError as error:
        raise ClipError(str(error)) from None


def _export(temp, target, axes):
    """Write the session to the temporary path ``temp`` of ``target``, as its suffix says; an
    FBX with ``axes`` (:func:`~.fbx_files.fbx_axes`, the input FBX's), else Blender's defaults."""
    suffix = target.suffix.lower()
    if suffix == ".blend":
        # copy: the session keeps its own path; relative paths are remapped to the
        # output's folder, which the temporary file shares.
        bpy.ops.wm.save_as_mainfile(filepath=str(temp), check_existing=False, copy=True)
    elif suffix == ".fbx":
        name_actions_for_fbx_takes()
        drop_foot_lock_properties()
        bpy.ops.export_scene.fbx(
            filepath=str(temp), check_existing=False, bake_anim=True,
            bake_anim_use_all_actions=True, bake_anim_use_nla_strips=False,
            bake_anim_simplify_factor=0.0,  # every frame as solved: simplifying would let feet slide again
            add_leaf_bones=False,  # no extra "_end" bones: the hierarchy stays the input's
            use_custom_props=True,  # the objects' and bones' own properties, as the importer read them
            **axes,
        )
    else:
        drop_foot_lock_properties()
        bpy.ops.export_scene.gltf(
            filepath=str(temp), check_existing=False, export_animations=True,
            export_format="GLB" if suffix == ".glb" else "GLTF_SEPARATE", export_animation_mode="ACTIONS",
            export_extras=True,  # the custom properties, as the importer read them from the input's extras
            # Textures in a folder named after the output: two outputs side by side whose
            # images share a file name cannot overwrite each other's.
            export_texture_dir=f"{target.stem}_textures",
        )


def drop_foot_lock_properties():
    """Remove what the add-on keeps on the armatures for itself (its settings, the contact
    labels' custom properties and their curves) before an export that writes the custom
    properties: the output carries the input's own properties, not a static snapshot of
    Foot Lock's. The curves go first: an action with a curve whose property is gone is no
    take to the FBX exporter. The session is thrown away after the export."""
    for action in bpy.data.actions:
        if action.library is not None:  # linked: read-only, and no fix of this session wrote there
            continue
        for bag in action_compat.every_bag(action):
            for fcurve in [fcurve for fcurve in bag.fcurves if fcurve.data_path.endswith(armature.CONTACT_PATHS)]:
                bag.fcurves.remove(fcurve)
    for obj in bpy.data.objects:
        if obj.type != "ARMATURE":
            continue
        if "foot_lock" in obj:  # the settings, a custom property group before Blender 5.0
            del obj["foot_lock"]
        for bone in obj.pose.bones:
            for prop in (armature.CONTACT_PROPERTY, armature.HEEL_CONTACT_PROPERTY):
                if prop in bone:
                    del bone[prop]


def name_actions_for_fbx_takes():
    """Name the actions so that a take exported by Blender comes back under its own name.

    Blender's FBX importer names an action ``<object>|<take>``, its exporter writes the
    take ``<object>|<action>``; a take written by Blender is ``<object>|<action>`` itself.
    So ``<object>|<object>|<action>`` is renamed ``<action>`` (without this the name grows
    by one ``<object>|`` per round trip).
    """
    for obj in bpy.context.scene.objects:
        prefix = f"{obj.name}|{obj.name}|"
        for action in bpy.data.actions:
            if action.name.startswith(prefix):
                action.name = action.name[len(prefix) :]
