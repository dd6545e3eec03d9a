"""The ground under the characters: downward rays against BVH trees of the ground meshes.

:class:`Ground` is the ground the runtime foot lock (:mod:`..solvers.runtime_pose`) plays
over: ``Ground.at(frame)`` (:class:`GroundAt`) is the ``ground(origins, distance)`` it asks
for on that frame. It casts against BVH trees
(``mathutils.bvhtree.BVHTree``) of the ground meshes as the depsgraph shows them
(modifiers applied; in Edit Mode, the edit-mesh), instead of casting against the whole scene.

Ground is every visible mesh and collection instance of the scene, or of the ground
collection, except characters: a mesh deformed by an armature, or parented (at any depth)
to one, is never ground -- a character does not stand on itself, nor on another character.
A collection instance (an empty showing a collection, as a linked set is placed) is one
ground object: the meshes it shows, in its space; so are the instances a mesh's
geometry-nodes modifier shows (a scatter), beside its own mesh.

Ground may move. A mesh whose transform or shape could change over time (animation data,
drivers or constraints on it or a parent, modifiers, shape keys) is sampled over the
clip's frame range once, by stepping the scene (:func:`ground_over`). One that turns out
not to change joins the still meshes in one world-space tree. One whose transform changes
keeps one tree in its own space and casts each frame's rays through that frame's matrix
(cheap: no tree is rebuilt). One whose shape changes (a deforming modifier) gets a tree per
frame its shape changes on -- a mesh evaluated and a tree built per frame, the one costly
case. The ground a ray hit tells which moving object it is (its *carrier*), and
:meth:`GroundAt.carry` moves what is held on it as it moved since the frame before: a foot
locked on a moving platform moves with it, one on a mesh that rises rises with it.
"""

import contextlib

import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

from ..solvers.matrices import affine_inverse
from .scene_time import show_frame

STILL = 1e-6  # a matrix entry or vertex coordinate changing less than this over the range is still

_stepping = []  # non-empty while the scene is stepped through frames (to sample the ground, or a carried armature)


def is_character_mesh(obj):
    """Whether ``obj`` moves with an armature: deformed by one, or parented below one."""
    if any(mod.type == "ARMATURE" and mod.object is not None for mod in obj.modifiers):
        return True
    parent = obj.parent
    while parent is not None:
        if parent.type == "ARMATURE":
            return True
        parent = parent.parent
    return False


def is_instancer(obj):
    """Whether ``obj`` shows a collection's objects where it stands (a collection instance,
    as a linked set is usually placed)."""
    return obj.instance_type == "COLLECTION" and obj.instance_collection is not None


def shows_meshes(obj):
    """Whether ``obj`` is of a kind that may be ground: a mesh, or a collection instance."""
    return obj.type == "MESH" or is_instancer(obj)


def ground_objects(scene, collection=None):
    """The objects that are ground, by name: the collection's (or the scene's) visible meshes
    and collection instances that are not characters."""
    objects = scene.objects if collection is None else collection.all_objects
    return sorted(obj.name for obj in objects if shows_meshes(obj) and obj.visible_get() and not is_character_mesh(obj))


def is_stepping():
    """Whether the scene is being stepped through frames (:func:`stepped`): frame-change
    handlers have nothing to show meanwhile."""
    return bool(_stepping)


def may_change(obj):
    """Whether anything could move or reshape ``obj`` over time: animation data (keys,
    drivers, NLA) or constraints on it or any parent, or what may reshape it."""
    item = obj
    while item is not None:
        if _animated(item) or len(item.constraints):
            return True
        item = item.parent
    return may_deform(obj)


def may_deform(obj):
    """Whether anything could reshape ``obj``'s mesh over time: modifiers, shape keys, animated
    mesh data; for a collection instance, anything that could move or reshape what it shows."""
    if is_instancer(obj):
        return any(may_change(member) for member in obj.instance_collection.all_objects if shows_meshes(member))
    return bool(len(obj.modifiers)) or _animated(obj.data) or obj.data.shape_keys is not None


def still_signature(scene, depsgraph, names):
    """A hash of the ground ``names`` (world-space triangles) as the depsgraph shows it now,
    when none of it may change over time, so that now stands for every frame; else None.
    An equal signature after a ground update means the same ground: entering or leaving
    Edit Mode (of the ground, or of a mesh that is not ground) updates a mesh without
    changing any ground's surface."""
    objects = [scene.objects[name] for name in names]
    if any(may_change(obj) for obj in objects):
        return None
    return hash(tuple((points.tobytes(), tris.tobytes()) for points, tris in _world_shapes(objects, depsgraph)))


def _animated(data):
    anim = data.animation_data
    return anim is not None and (anim.action is not None or len(anim.drivers) or len(anim.nla_tracks))


def ground_over(scene, depsgraph, names, frames, up=(0.0, 0.0, 1.0)):
    """The :class:`Ground` of the objects ``names`` over animation ``frames`` (F,): still ones in
    one world-space tree, moving ones sampled on every frame (the scene's frame is restored)."""
    objects = [scene.objects[name] for name in names]
    changing = [obj for obj in objects if may_change(obj)]
    sampled = _sample_over_frames(scene, depsgraph, changing, frames) if changing else {}
    still = _world_shapes([obj for obj in objects if obj.name not in sampled], depsgraph)
    still += [_in_world(shapes[0], matrices[0]) for matrices, shapes, same in sampled.values()
              if _is_still(matrices, same)]
    moving = [_moving(*sample) for sample in sampled.values() if not _is_still(sample[0], sample[2])]
    return Ground(_tree(still), up, moving)


def _sample_over_frames(scene, depsgraph, objects, frames):
    """Per object name: (matrices (F, 4, 4), local shapes per frame [(vertices, triangles)],
    whether each frame's shape is the one before's (F,) bool), the scene stepped through
    ``frames``. Only a mesh that may deform is evaluated again on every frame."""
    matrices = {obj.name: np.empty((len(frames), 4, 4)) for obj in objects}
    shapes = {obj.name: [] for obj in objects}
    deforming = [obj for obj in objects if may_deform(obj)]
    with stepped(scene):
        for row, frame in enumerate(frames):
            show_frame(scene, frame)
            for obj in objects:
                matrices[obj.name][row] = np.array(obj.evaluated_get(depsgraph).matrix_world)
            for name, shape in _local_shapes(deforming if row else objects, depsgraph).items():
                shapes[name].append(_kept_shape(shape, shapes[name]))
    deforming = {obj.name for obj in deforming}
    out = {}
    for name, shape in shapes.items():
        if name not in deforming:
            shape = shape * len(frames)
        out[name] = (matrices[name], shape, _same_as_before(shape))
    return out


@contextlib.contextmanager
def stepped(scene):
    """The scene stepped by the caller, frame-change handlers told so, its frame restored after."""
    frame, subframe = scene.frame_current, scene.frame_subframe
    _stepping.append(True)
    try:
        yield
    finally:
        scene.frame_set(frame, subframe=subframe)
        _stepping.pop()


def _same_as_before(shapes):
    """(F,) whether each frame's local shape is the previous frame's (the first: False)."""
    return np.array([False] + [shape is before for shape, before in zip(shapes[1:], shapes[:-1])])


def _kept_shape(shape, before):
    """The shape to keep for a frame: the previous frame's own arrays where it is the same
    (a mesh still for a stretch is kept once)."""
    if before and _same_shape(shape, before[-1]):
        return before[-1]
    return shape


def _same_shape(shape, other):
    (points, tris), (other_points, other_tris) = shape, other
    if shape is other:
        return True
    return (points.shape == other_points.shape and np.array_equal(tris, other_tris)
            and np.abs(points - other_points).max(initial=0.0) <= STILL)


def _is_still(matrices, same):
    """Whether an object sampled over the range neither moved nor changed shape."""
    return same[1:].all() and stands_still(matrices)


def stands_still(matrices):
    """Whether an object's world matrices (F, 4, 4), sampled over frames, are its first's."""
    return np.abs(matrices - matrices[0]).max() <= STILL


def _moving(matrices, shapes, same):
    """A moving ground object: its local tree per frame (one tree while its shape holds)."""
    trees = []
    for (points, tris), kept in zip(shapes, same):
        trees.append(trees[-1] if kept else _tree([(points, tris)]))
    return _MovingObject(trees, matrices)


def _tree(parts):
    """One BVH tree (or None: nothing) of the triangles of ``parts`` [(vertices (V, 3), triangles (T, 3))]."""
    points, tris = _joined(parts)
    if not len(tris):
        return None
    return BVHTree.FromPolygons(points.tolist(), tris.tolist(), all_triangles=True)


def _joined(parts):
    """One shape (vertices (V, 3), triangles (T, 3)) of the shapes ``parts``."""
    offsets = np.cumsum([0] + [len(points) for points, _ in parts])
    return (np.concatenate([np.zeros((0, 3))] + [points for points, _ in parts]),
            np.concatenate([np.zeros((0, 3), dtype=np.int64)]
                           + [tris + offset for (_, tris), offset in zip(parts, offsets)]))


def _local_shapes(objects, depsgraph):
    """Per name of ground ``objects``, (vertices (V, 3) in the object's space, triangles
    (T, 3)) as the depsgraph shows it: its own mesh and the meshes it instances (a
    collection instance's, a geometry-nodes scatter's). The depsgraph's instances are read
    in one pass, each instanced mesh once however often it is shown."""
    placed = {obj.name: [] for obj in objects}  # per object: (instanced mesh, world matrix) of what it instances
    local = {}  # per instanced mesh (its evaluated data's address): its triangles
    for instance in depsgraph.object_instances if any(_may_instance(obj) for obj in objects) else ():
        instancer = instance.parent.original.name if instance.is_instance else None  # (valid only in the loop)
        shown = instance.object
        if instancer in placed and shown.type == "MESH" and not is_character_mesh(shown.original):
            mesh = shown.data.as_pointer()
            if mesh not in local:
                local[mesh] = _local_triangles(shown)
            placed[instancer].append((mesh, np.array(instance.matrix_world)))
    shapes = {}
    for obj in objects:
        own = [] if is_instancer(obj) else [_local_triangles(obj.evaluated_get(depsgraph))]
        if placed[obj.name]:
            inverse = affine_inverse(np.array(obj.evaluated_get(depsgraph).matrix_world))
            own += [_in_world(local[mesh], inverse @ matrix) for mesh, matrix in placed[obj.name]]
        shapes[obj.name] = _joined(own)
    return shapes


def _may_instance(obj):
    """Whether ``obj`` may show instances: a collection instance, or a mesh with a geometry-nodes modifier."""
    return is_instancer(obj) or any(modifier.type == "NODES" for modifier in obj.modifiers)


def _local_triangles(obj):
    """(vertices (V, 3) in the object's space, triangles (T, 3)) of an evaluated mesh object."""
    mesh = obj.to_mesh()
    try:
        mesh.calc_loop_triangles()
        points = np.empty(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", points)
        tris = np.empty(3 * len(mesh.loop_triangles), dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", tris)
    finally:
        obj.to_mesh_clear()
    return points.reshape(-1, 3), tris.reshape(-1, 3)


def _world_shapes(objects, depsgraph):
    """Per ground object, (vertices (V, 3) in world space, triangles (T, 3)) as the depsgraph shows it."""
    shapes = _local_shapes(objects, depsgraph)
    return [_in_world(shapes[obj.name], np.array(obj.evaluated_get(depsgraph).matrix_world)) for obj in objects]


def _in_world(shape, matrix):
    """A local shape (vertices, triangles) with its vertices moved to world space by ``matrix``."""
    points, tris = shape
    return points @ matrix[:3, :3].T + matrix[:3, 3], tris


class _MovingObject:
    """A ground object that moves or deforms over the frame range: per frame its tree in its
    own space and its world matrix."""

    def __init__(self, trees, matrices):
        self.trees = trees
        self.matrices = matrices
        self.inverses = affine_inverse(matrices)


class Ground:
    """The ground over a frame range: still meshes in ``tree`` (world space, or None), and
    ``moving`` objects sampled per frame. Rays go along ``-up``."""

    def __init__(self, tree, up=(0.0, 0.0, 1.0), moving=()):
        self.tree = tree
        self.up = Vector(up).normalized()
        self.moving = list(moving)

    def at(self, row):
        """The ground as it is on frame ``row`` of the range (:class:`GroundAt`)."""
        return GroundAt(self, row)


class GroundAt:
    """The ground on one frame: ``ground(origins, distance)`` for the runtime lock."""

    def __init__(self, ground, row):
        self.ground, self.row = ground, row

    def __call__(self, origins, distance):
        """Heights along ``up`` (k,), unit normals (k, 3), hits (k,) and carriers (k,) of rays
        from each of ``origins`` (k, 3), each at most ``distance`` long. A ray's carrier is the
        index of the moving object it hit, -1 for still ground (or none)."""
        count = len(origins)
        heights, normals = np.full(count, -np.inf), np.zeros((count, 3))
        carriers = np.full(count, -1)
        ground, distance = self.ground, float(distance)
        if ground.tree is not None:
            cast, down = ground.tree.ray_cast, -ground.up
            for i, origin in enumerate(origins.tolist()):
                location, normal, _, _ = cast(origin, down, distance)
                if location is not None:
                    heights[i], normals[i] = location.dot(ground.up), normal
        for index, moving in enumerate(ground.moving):
            self._cast_moving(moving, index, np.asarray(origins, dtype=float), distance, np.array(ground.up),
                              (heights, normals, carriers))
        hits = np.isfinite(heights)
        return np.where(hits, heights, 0.0), normals, hits, carriers

    def _cast_moving(self, moving, index, origins, distance, up, out):
        """Rays against one moving object on this frame, through its matrix: where it is hit
        above what was hit so far, its hit replaces it."""
        tree = moving.trees[self.row]
        if tree is None:
            return
        heights, normals, carriers = out
        matrix, inverse = moving.matrices[self.row], moving.inverses[self.row]
        direction = inverse[:3, :3] @ -up
        stretch = np.linalg.norm(direction)  # local units per world unit along the ray
        local_origins = origins @ inverse[:3, :3].T + inverse[:3, 3]
        cast, local_down = tree.ray_cast, Vector(direction / stretch)
        hit_rays, locations, hit_normals = [], [], []
        for i, origin in enumerate(local_origins.tolist()):
            location, normal, _, _ = cast(origin, local_down, distance * stretch)
            if location is not None:
                hit_rays.append(i)
                locations.append(location)
                hit_normals.append(normal)
        if not hit_rays:
            return
        rays = np.array(hit_rays)
        found = (np.array(locations) @ matrix[:3, :3].T + matrix[:3, 3]) @ up
        higher = found > heights[rays]
        rays, found = rays[higher], found[higher]
        turned = np.array(hit_normals)[higher] @ inverse[:3, :3]  # normals go by the inverse transpose
        heights[rays], carriers[rays] = found, index
        normals[rays] = turned / np.linalg.norm(turned, axis=-1, keepdims=True)

    def carry(self, carriers, points):
        """``points`` (k, 3) held on the moving objects ``carriers`` (k,) names, moved as
        each moved from the frame before to this one: by its matrix, and where it changed
        shape, up or down with its surface."""
        out = np.array(points, dtype=float)
        before = max(self.row - 1, 0)
        up = np.array(self.ground.up)
        for index in np.unique(carriers).tolist():
            held = np.asarray(carriers) == index
            moving = self.ground.moving[index]
            motion = moving.matrices[self.row] @ moving.inverses[before]
            moved = out[held] @ motion[:3, :3].T + motion[:3, 3]
            if moving.trees[self.row] is not moving.trees[before]:
                rise = _surface_heights(moving, self.row, moved, up) - _surface_heights(moving, before, out[held], up)
                moved += rise[:, None] * up
            out[held] = moved
        return out


def _surface_heights(moving, row, points, up):
    """Heights along ``up`` (k,) of the nearest points of a moving object's surface on frame
    ``row`` to world ``points`` (k, 3); 0 where it has no surface."""
    tree, matrix, inverse = moving.trees[row], moving.matrices[row], moving.inverses[row]
    heights = np.zeros(len(points))
    if tree is None:
        return heights
    for i, point in enumerate((points @ inverse[:3, :3].T + inverse[:3, 3]).tolist()):
        nearest = tree.find_nearest(point)[0]
        if nearest is not None:
            heights[i] = (matrix[:3, :3] @ np.array(nearest) + matrix[:3, 3]) @ up
    return heights
