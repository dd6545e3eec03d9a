"""One file through Blender: .blend, .fbx, .glb/.gltf (and BVH going to one of those).

The file is opened, or imported into an empty session with Blender's bundled importer;
each chosen armature and action is fixed by the add-on's own job
(:func:`~..adapters.jobs.remove_sliding`, exactly what the sidebar button does); then
the session is saved or exported with Blender's bundled exporter.

- ``.blend`` out: like the button, each fix goes to a new ``<action>.footlock`` action
  and the original is kept (unless ``--in-place``).
- ``.fbx`` / ``.glb`` / ``.gltf`` out: fixed in place, so the exported animations keep
  their names; every animation of the input is exported, fixed or not.
"""

import json
import sys
from contextlib import contextmanager, redirect_stdout

import bpy

from .. import register, unregister
from ..adapters import action_compat, armature, jobs
from ..adapters.errors import AdapterError
from .bvh_files import file_unit_scale
from .errors import ClipError
from .report import clip_entry
from .settings_flags import apply_to


def fix_in_blender(source, target, args):
    """Fix ``source`` into ``target``; returns the report's clip entries."""
    try:
        with redirect_stdout(sys.stderr):  # the importers' chatter: stdout is for our own lines
            load(source, args)
        with addon_registered():
            clips = fix_scene(args, keep_originals=target.suffix.lower() == ".blend")
            with redirect_stdout(sys.stderr):
                save(target)
    except (AdapterError, RuntimeError) as error:  # RuntimeError: a bpy.ops call that failed
        raise ClipError(str(error).strip()) from None
    return clips


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
        bpy.ops.wm.open_mainfile(filepath=str(source), load_ui=False)
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
    document = _gltf_json(path)
    rates = []
    for animation in document.get("animations", []):
        for sampler in animation.get("samplers", []):
            times = document["accessors"][sampler["input"]]
            span = times["max"][0] - times["min"][0]
            if times["count"] > 1 and span > 0:
                rates.append((times["count"] - 1) / span)
    return round(max(rates)) if rates else None


def _gltf_json(path):
    data = path.read_bytes()
    if data[:4] == b"glTF":  # binary: a 12-byte header, then the JSON chunk's length, type and text
        length = int.from_bytes(data[12:16], "little")
        return json.loads(data[20 : 20 + length])
    return json.loads(data)


# --- fix --------------------------------------------------------------------------------


def fix_scene(args, keep_originals):
    clips = []
    for obj, actions in chosen_clips(args):
        current = current_action(obj)
        fixed = {}
        for action in actions:
            try:
                outcome = fix_clip(obj, action, args, keep_originals)
            except (AdapterError, ValueError) as error:  # ValueError: the solvers' input errors
                raise ClipError(f"armature {obj.name!r}, action {action.name!r}: {error}") from None
            fixed[action.name] = outcome.action
            clips.append(_entry(obj, action.name, outcome))
        if current is not None:  # the armature ends up playing what it played, fixed
            action_compat.assign_action(obj, fixed.get(current.name, current))
    return clips


def chosen_clips(args):
    """``[(armature, [actions])]`` to fix, per ``--armature``, ``--action``, ``--all-actions``."""
    armatures = [obj for obj in bpy.context.scene.objects if obj.type == "ARMATURE"]
    if args.armature:
        armatures = [obj for obj in armatures if obj.name == args.armature]
        if not armatures:
            raise ClipError(f"no armature named {args.armature!r} in the scene")
    if args.all_actions:
        chosen = [(obj, actions_of(obj)) for obj in armatures]
    elif args.action:
        action = bpy.data.actions.get(args.action)
        if action is None:
            raise ClipError(f"no action named {args.action!r} (actions: {', '.join(bpy.data.actions.keys())})")
        chosen = [(obj, [action]) for obj in armatures if animates(action, obj)]
    else:
        chosen = [(obj, [current_action(obj)]) for obj in armatures if current_action(obj) is not None]
    chosen = [(obj, actions) for obj, actions in chosen if actions]
    if not chosen:
        raise ClipError("nothing to fix: no armature with an action to clean up in the scene")
    return chosen


def current_action(obj):
    anim = obj.animation_data
    return anim.action if anim is not None else None


def actions_of(obj):
    """Every action that animates the armature's bones, except earlier Foot Lock results."""
    return [action for action in bpy.data.actions
            if not action.name.endswith(jobs.FOOTLOCK_SUFFIX) and animates(action, obj)]


def animates(action, obj):
    bones = {armature.bone_data_path(bone.name) for bone in obj.pose.bones}
    return any(fcurve.data_path.rpartition(".")[0] in bones for fcurve in action_compat.iter_fcurves(obj, action))


def fix_clip(obj, action, args, keep_original):
    action_compat.assign_action(obj, action)
    settings = obj.foot_lock
    apply_to(settings, args)
    if not keep_original:
        settings.in_place = True  # an exported file holds the fixed motion under the input's names
    outcome = jobs.remove_sliding(obj, bpy.context.scene)
    outcome.action.use_fake_user = True  # saved with the .blend even once another action is assigned
    return outcome


def _entry(obj, action_name, outcome):
    scene = bpy.context.scene
    return clip_entry(
        outcome.result, [leg.name for leg in obj.foot_lock.legs], jobs.frame_range(outcome.action)[0],
        scene.render.fps / scene.render.fps_base, jobs.unit_scale(scene), outcome.seconds,
        armature=obj.name, action=action_name, output_action=outcome.action.name, unit_source="scene units",
    )


# --- out --------------------------------------------------------------------------------


def save(target):
    suffix = target.suffix.lower()
    if suffix == ".blend":
        bpy.ops.wm.save_as_mainfile(filepath=str(target), check_existing=False)
    elif suffix == ".fbx":
        name_actions_for_fbx_takes()
        bpy.ops.export_scene.fbx(
            filepath=str(target), check_existing=False, bake_anim=True,
            bake_anim_use_all_actions=True, bake_anim_use_nla_strips=False,
            bake_anim_simplify_factor=0.0,  # every frame as solved: simplifying would let feet slide again
            add_leaf_bones=False,  # no extra "_end" bones: the hierarchy stays the input's
        )
    else:
        bpy.ops.export_scene.gltf(
            filepath=str(target), check_existing=False, export_animations=True,
            export_format="GLB" if suffix == ".glb" else "GLTF_SEPARATE", export_animation_mode="ACTIONS",
        )


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
