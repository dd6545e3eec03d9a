"""The ground under a character: downward rays against the scene's evaluated meshes.

:class:`Ground` is the ``ground(origins, distance)`` function the runtime foot lock
(:mod:`..solvers.runtime_pose`) asks every frame. The character never stands on itself:
hits on its own meshes (its children and everything its armature deforms) are passed
through. With a ground collection only that collection's objects count as ground.
"""

import numpy as np
from mathutils import Vector

# Past a hit on a skipped object the ray goes on from this far beyond it, through at most
# this many such surfaces.
PASS_THROUGH_GAP = 1e-5
MAX_PASS_THROUGH = 16


def own_objects(armature, scene):
    """Names of the objects that belong to the character: children of the armature
    (at any depth) and the scene's objects it deforms through an Armature modifier."""
    owned = {child.name for child in armature.children_recursive}
    for obj in scene.objects:
        if any(mod.type == "ARMATURE" and mod.object == armature for mod in obj.modifiers):
            owned.add(obj.name)
    return frozenset(owned)


class Ground:
    """Rays cast along ``-up`` against what the depsgraph shows at this moment."""

    def __init__(self, scene, depsgraph, skip=frozenset(), collection=None, up=(0.0, 0.0, 1.0)):
        self.scene = scene
        self.depsgraph = depsgraph
        self.skip = skip
        self.up = Vector(up).normalized()
        self.down = -self.up
        self.targets = None if collection is None else [
            obj.evaluated_get(depsgraph) for obj in collection.all_objects
            if obj.type == "MESH" and obj.name not in skip and obj.visible_get()
        ]

    def __call__(self, origins, distance):
        """Heights along ``up`` (k,), unit normals (k, 3) and hits (k,) of rays from each of
        ``origins`` (k, 3), each at most ``distance`` long."""
        count = len(origins)
        heights, normals, hits = np.zeros(count), np.zeros((count, 3)), np.zeros(count, dtype=bool)
        cast = self._cast_scene if self.targets is None else self._cast_targets
        for i, origin in enumerate(origins):
            hit = cast(Vector(origin), float(distance))
            if hit is not None:
                heights[i] = hit[0].dot(self.up)
                normals[i] = hit[1]
                hits[i] = True
        return heights, normals, hits

    def _cast_scene(self, origin, distance):
        """Nearest hit on any object the character does not own, as (location, normal)."""
        for _ in range(MAX_PASS_THROUGH):
            found, location, normal, _, obj, _ = self.scene.ray_cast(self.depsgraph, origin, self.down,
                                                                     distance=distance)
            if not found:
                return None
            if obj.name not in self.skip:
                return location, normal
            travelled = (location - origin).length + PASS_THROUGH_GAP
            origin, distance = origin + self.down * travelled, distance - travelled
            if distance <= 0.0:
                return None
        return None

    def _cast_targets(self, origin, distance):
        """Nearest hit on the ground collection's meshes, as (location, normal)."""
        best = None
        for obj in self.targets:
            hit = _cast_object(obj, origin, self.down, distance)
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        return None if best is None else best[1:]


def _cast_object(obj, origin, direction, distance):
    """(distance, location, normal) of a world-space ray on one evaluated object, or None.

    ``Object.ray_cast`` works in the object's own space: the ray goes there and back.
    """
    to_local = obj.matrix_world.inverted_safe()
    local_direction = to_local.to_3x3() @ direction
    stretch = local_direction.length
    if stretch == 0.0:
        return None
    found, location, normal, _ = obj.ray_cast(to_local @ origin, local_direction / stretch,
                                              distance=distance * stretch)
    if not found:
        return None
    world = obj.matrix_world @ location
    world_normal = (to_local.to_3x3().transposed() @ normal).normalized()
    return (world - origin).length, world, world_normal
