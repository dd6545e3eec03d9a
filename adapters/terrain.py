"""The ground under the characters: downward rays against a BVH tree of the ground meshes.

:class:`Ground` is the ``ground(origins, distance)`` function the runtime foot lock
(:mod:`..solvers.runtime_pose`) asks for every frame. It casts against one
``mathutils.bvhtree.BVHTree`` built from the ground meshes, in world space, as the
depsgraph shows them (modifiers applied), instead of casting against the whole scene.

Ground is every visible mesh of the scene, or of the ground collection, except characters:
a mesh deformed by an armature, or parented (at any depth) to one, is never ground -- a
character does not stand on itself, nor on another character.
"""

import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree


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


def ground_objects(scene, collection=None):
    """The meshes that are ground, by name: the collection's (or the scene's) visible meshes
    that are not characters."""
    objects = scene.objects if collection is None else collection.all_objects
    return sorted(obj.name for obj in objects
                  if obj.type == "MESH" and obj.visible_get() and not is_character_mesh(obj))


def ground_tree(scene, depsgraph, names):
    """One BVH tree (or None: no ground) of the evaluated triangles of the objects ``names``, in world space."""
    vertices, triangles = [], []
    count = 0
    for name in names:
        obj = scene.objects[name].evaluated_get(depsgraph)
        points, tris = _world_triangles(obj)
        vertices.append(points)
        triangles.append(tris + count)
        count += len(points)
    if not count:
        return None
    return BVHTree.FromPolygons(np.concatenate(vertices).tolist(), np.concatenate(triangles).tolist(),
                                all_triangles=True)


def _world_triangles(obj):
    """(vertices (V, 3) in world space, triangles (T, 3)) of an evaluated mesh object."""
    mesh = obj.to_mesh()
    try:
        mesh.calc_loop_triangles()
        points = np.empty(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", points)
        tris = np.empty(3 * len(mesh.loop_triangles), dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", tris)
    finally:
        obj.to_mesh_clear()
    matrix = np.array(obj.matrix_world)
    points = points.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
    return points, tris.reshape(-1, 3)


class Ground:
    """Rays cast along ``-up`` against ``tree`` (a BVH tree in world space, or None: no ground)."""

    def __init__(self, tree, up=(0.0, 0.0, 1.0)):
        self.tree = tree
        self.up = Vector(up).normalized()
        self.down = -self.up

    def __call__(self, origins, distance):
        """Heights along ``up`` (k,), unit normals (k, 3) and hits (k,) of rays from each of
        ``origins`` (k, 3), each at most ``distance`` long."""
        count = len(origins)
        heights, normals, hits = np.zeros(count), np.zeros((count, 3)), np.zeros(count, dtype=bool)
        if self.tree is None:
            return heights, normals, hits
        cast, down, distance = self.tree.ray_cast, self.down, float(distance)
        for i, origin in enumerate(origins.tolist()):
            location, normal, _, _ = cast(origin, down, distance)
            if location is not None:
                heights[i] = location.dot(self.up)
                normals[i] = normal
                hits[i] = True
        return heights, normals, hits
