"""Scenes the viewport tests build from the shared CMU walk: the set-ups animators have.

The reference for every figure is Blender's own evaluation, one frame and one bone at a
time (``scene.frame_set``, ``matrix_world @ pose_bone.head``), never the add-on's reader.
"""

import numpy as np
from blender_scenes import import_clip

WALK = "cmu_07_01.bvh"
ROOT = "Hips"
START, REPEAT, SCALE = 101, 2, 1.2  # the NLA strip: from frame 101, played twice, 1.2 times slower


def world_heads(bpy, obj, bones, frames):
    """(F, len(bones), 3) world positions of the bones' heads as the viewport shows them."""
    scene = bpy.context.scene
    current = scene.frame_current
    out = np.empty((len(frames), len(bones), 3))
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        world = obj.matrix_world
        out[i] = [tuple(world @ obj.pose.bones[name].head) for name in bones]
    scene.frame_set(current)
    return out


def nla_walk(bpy, clips_dir):
    """The walk moved into an NLA strip (from START, REPEAT times, SCALE slower), no active action."""
    obj = import_clip(bpy, clips_dir / WALK)
    anim = obj.animation_data
    action = anim.action
    anim.action = None
    track = anim.nla_tracks.new()
    track.name = "Walk"
    strip = track.strips.new("walk", START, action)
    strip.scale = SCALE
    strip.repeat = REPEAT
    return obj, action, strip


def _fcurves(obj, path):
    from foot_lock.adapters import action_compat

    return {fc.array_index: fc for fc in action_compat.iter_fcurves(obj, obj.animation_data.action)
            if fc.data_path == path}


def make_in_place(bpy, obj):
    """Remove the root's average horizontal travel from its keys (a game-style in-place
    walk); returns the travel velocity removed, world units per frame (3,)."""
    scene = bpy.context.scene
    curves = _fcurves(obj, f'pose.bones["{ROOT}"].location')
    start, end = (int(f) for f in obj.animation_data.action.frame_range)
    heads = []
    for frame in (start, end):
        scene.frame_set(frame)
        heads.append(np.array(obj.matrix_world @ obj.pose.bones[ROOT].head))
    velocity = (heads[1] - heads[0]) / (end - start)
    velocity[2] = 0.0
    rest = np.array(obj.data.bones[ROOT].matrix_local)[:3, :3]
    local_velocity = rest.T @ velocity  # armature space -> the bone's rest frame (object at identity)
    for index, fcurve in curves.items():
        co = np.empty(2 * len(fcurve.keyframe_points), dtype=np.float32)
        fcurve.keyframe_points.foreach_get("co", co)
        co = co.reshape(-1, 2)
        co[:, 1] -= local_velocity[index] * (co[:, 0] - start)
        fcurve.keyframe_points.foreach_set("co", co.ravel())
        fcurve.update()
    scene.frame_set(start)
    return velocity


def _key_linear(bpy, owner, path, frames_values):
    for frame, value in frames_values:
        setattr(owner, path, value)
        owner.keyframe_insert(path, frame=frame)
    anim = owner.animation_data
    from foot_lock.adapters import action_compat

    for fcurve in action_compat.iter_fcurves(owner, anim.action):
        for key in fcurve.keyframe_points:
            key.interpolation = "LINEAR"


def travel_by_keys(bpy, obj, velocity, start, end):
    _key_linear(bpy, obj, "location", [(start, (0.0, 0.0, 0.0)), (end, tuple(velocity * (end - start)))])


def travel_by_parent(bpy, obj, velocity, start, end):
    """An animated Empty two levels up (a still Empty between) carries the armature."""
    carrier = bpy.data.objects.new("Carrier", None)
    middle = bpy.data.objects.new("Offset", None)
    for empty in (carrier, middle):
        bpy.context.scene.collection.objects.link(empty)
    middle.parent = carrier
    obj.parent = middle
    _key_linear(bpy, carrier, "location", [(start, (0.0, 0.0, 0.0)), (end, tuple(velocity * (end - start)))])
    return carrier


def travel_by_path(bpy, obj, velocity, start, end):
    """A straight Follow Path: the curve's evaluation time keyed linearly over the clip."""
    data = bpy.data.curves.new("Path", "CURVE")
    data.dimensions = "3D"
    spline = data.splines.new("POLY")
    spline.points.add(1)
    spline.points[0].co = (0.0, 0.0, 0.0, 1.0)
    spline.points[1].co = (*(velocity * (end - start)), 1.0)
    data.use_path = True
    data.path_duration = end - start
    path = bpy.data.objects.new("Path", data)
    bpy.context.scene.collection.objects.link(path)
    _key_linear(bpy, data, "eval_time", [(start, 0.0), (end, float(end - start))])
    constraint = obj.constraints.new("FOLLOW_PATH")
    constraint.target = path
    return path


def travel_by_child_of(bpy, obj, velocity, start, end):
    """A Child Of constraint on an animated Empty (no parent: the constraint carries it)."""
    carrier = bpy.data.objects.new("Carrier", None)
    bpy.context.scene.collection.objects.link(carrier)
    _key_linear(bpy, carrier, "location", [(start, (0.0, 0.0, 0.0)), (end, tuple(velocity * (end - start)))])
    obj.constraints.new("CHILD_OF").target = carrier
    return carrier


def travel_by_driver(bpy, obj, velocity, start, end):
    for axis in (0, 1):
        driver = obj.driver_add("location", axis).driver
        driver.type = "SCRIPTED"
        driver.expression = f"(frame - {start}) * {velocity[axis]:.9f}"


TRAVELLERS = {
    "keys": travel_by_keys,
    "parent": travel_by_parent,
    "path": travel_by_path,
    "child_of": travel_by_child_of,
    "driver": travel_by_driver,
}


def in_place_walk(bpy, clips_dir, how, speed=0.8):
    """The CMU walk made in place, its object travelling at ``speed`` times the stride
    speed ``how`` (a key of :data:`TRAVELLERS`). Returns (armature, first, last frame)."""
    obj = import_clip(bpy, clips_dir / WALK)
    start, end = (int(f) for f in obj.animation_data.action.frame_range)
    velocity = make_in_place(bpy, obj)
    TRAVELLERS[how](bpy, obj, speed * velocity, start, end)
    bpy.context.view_layer.update()
    return obj, start, end
