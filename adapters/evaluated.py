"""The pose Blender shows: sampled from the evaluated scene, frame by frame, in bulk.

Where an action's F-curves alone do not say how the character moves (the object travels
by keys, a Follow Path or Child Of constraint, an animated parent or a driver; the NLA
mixes strips; constraints or drivers move bones), the truth is what the depsgraph
evaluates. :func:`sample_pose` steps the scene once per frame and reads every bone at
once with ``foreach_get`` (as glTF-Blender-IO's sampling cache and Blender's own Bake
Action do), plus the object's world matrix. Meshes are hidden while it samples so
Blender does not deform them for nothing; everything it touches is restored.
"""

from contextlib import contextmanager
from dataclasses import dataclass

import bpy
import numpy as np

from .errors import AdapterError
from .scene_time import show_frame


@dataclass
class EvaluatedPose:
    """What Blender evaluated for an armature on ``frames``.

    ``pose`` holds each pose bone's ``matrix`` (armature space, constraints and drivers
    applied), ``basis`` its ``matrix_basis`` (the channel values the action or the NLA
    gave it), ``world`` the object's ``matrix_world`` and ``object_basis`` its
    ``matrix_basis``; all row-major like ``mathutils``.
    """

    bone_names: list
    frames: np.ndarray  # (F,) scene frames
    pose: np.ndarray  # (F, B, 4, 4)
    basis: np.ndarray | None  # (F, B, 4, 4), or None where not sampled
    world: np.ndarray  # (F, 4, 4)
    object_basis: np.ndarray = None  # (F, 4, 4) the object's matrix_basis (its own channels)

    def bone(self, name):
        """Index of bone ``name`` in the arrays."""
        try:
            return self.bone_names.index(name)
        except ValueError:
            raise AdapterError(f"bone {name!r} was not sampled") from None

    def world_pose(self):
        """(F, B, 4, 4) world matrices of the bones: the object's matrix times the pose."""
        return self.world[:, None] @ self.pose


def _matrices(collection, prop, count):
    """(count, 4, 4) row-major matrices of ``prop`` over a bpy collection, in one call (the
    flat buffer is column-major)."""
    buffer = np.empty(count * 16, dtype=np.float32)
    collection.foreach_get(prop, buffer)
    return buffer.reshape(count, 4, 4).transpose(0, 2, 1)


@contextmanager
def _meshes_hidden(scene, armature_obj):
    """The armature's skinned meshes disabled in the viewport while sampling (nothing to
    deform), restored after. Other meshes may be constraint targets or parents: kept."""
    shown = [
        obj
        for obj in scene.objects
        if obj.type == "MESH" and not obj.hide_viewport and _deformed_by(obj, armature_obj)
    ]
    for obj in shown:
        obj.hide_viewport = True
    try:
        yield
    finally:
        for obj in shown:
            obj.hide_viewport = False


@contextmanager
def _posed(obj):
    """The armature in Pose Position while sampling: in Rest Position the depsgraph shows every
    bone at rest, whatever its animation (the keys a fix is made of). Restored after."""
    armature = obj.data
    at_rest = armature.pose_position == "REST"
    if at_rest:
        armature.pose_position = "POSE"
    try:
        yield
    finally:
        if at_rest:
            armature.pose_position = "REST"


@contextmanager
def _enabled(obj, scene):
    """The armature and its parents enabled in the viewport while sampling, with every
    collection of ``scene`` holding them (the depsgraph skips what is disabled, "Disable in
    Viewports": their pose would be stale), restored after."""
    disabled = [item for item in _carriers(obj, scene) if item.hide_viewport]
    for item in disabled:
        item.hide_viewport = False
    try:
        yield
    finally:
        for item in disabled:
            item.hide_viewport = True


def _carriers(obj, scene):
    """``obj``, its parents and every collection of ``scene`` that holds any of them,
    directly or through the collections inside it."""
    parent_of = {child: parent for parent in [scene.collection, *scene.collection.children_recursive]
                 for child in parent.children}
    carriers = []
    while obj is not None:
        carriers.append(obj)
        for collection in obj.users_collection:
            while collection is not None and collection not in carriers:
                carriers.append(collection)
                collection = parent_of.get(collection)
        obj = obj.parent
    return carriers


def _deformed_by(mesh, armature_obj):
    return any(mod.type == "ARMATURE" and mod.object == armature_obj for mod in mesh.modifiers)


@contextmanager
def _frame_kept(scene):
    frame, subframe = scene.frame_current, scene.frame_subframe
    try:
        yield
    finally:
        scene.frame_set(frame, subframe=subframe)


def sample_pose(obj, scene, frames, with_basis=True):
    """Evaluate ``scene`` at each of the animation's ``frames`` (integers; the scene stepped to
    where it shows each, :func:`~.scene_time.show_frame`) and read the pose of armature
    ``obj``: an :class:`EvaluatedPose`; without ``with_basis`` its ``basis`` and
    ``object_basis`` are None (only baking every channel needs them). The scene's current
    frame is restored."""
    if obj is None or obj.type != "ARMATURE" or obj.pose is None:
        raise AdapterError("sampling needs an armature with a pose in the scene")
    if obj.name not in scene.objects:
        raise AdapterError(f"armature {obj.name!r} is not in scene {scene.name!r}")
    if obj.name not in bpy.context.view_layer.objects:
        raise AdapterError(
            f"armature {obj.name!r} is in a collection excluded from the view layer: include it to fix its motion"
        )
    frames = np.asarray(frames, dtype=int)
    names = [bone.name for bone in obj.pose.bones]
    count = len(names)
    pose = np.empty((len(frames), count, 4, 4))
    world = np.empty((len(frames), 4, 4))
    basis = np.empty_like(pose) if with_basis else None
    object_basis = np.empty_like(world) if with_basis else None
    # Evaluated afresh from the data as it stands: a custom property a script wrote (Rigify's
    # IK/FK switch, pose_bone["IK_FK"] = 1.0) tags nothing, and stepping frames would show
    # the pose the drivers that read it last made (the IK leg, while the FK controls get keyed).
    obj.update_tag()
    with _frame_kept(scene), _enabled(obj, scene), _posed(obj), _meshes_hidden(scene, obj):
        for i, frame in enumerate(frames):
            show_frame(scene, frame)
            bones = obj.pose.bones  # the active depsgraph writes its result back to the original
            pose[i] = _matrices(bones, "matrix", count)
            world[i] = np.array(obj.matrix_world, dtype=float)
            if with_basis:
                basis[i] = _matrices(bones, "matrix_basis", count)
                object_basis[i] = np.array(obj.matrix_basis, dtype=float)
    return EvaluatedPose(names, frames, pose, basis, world, object_basis)
