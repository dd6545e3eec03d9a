"""A walk keyed by hand in real Blender, as an animator keys one: a small FK rig (hips and
two legs), a pose keyed every few frames from a plan of where each foot stands, Bezier in
between (Blender's default). On its keys each planted foot is where the plan puts it;
between them the legs' rotations interpolate and it swings about."""

import math
from itertools import pairwise

import numpy as np
from control_rig_scenes import armature_in_edit_mode
from mathutils import Matrix, Vector

FPS = 24
SECONDS = 4.0
SPEED = 1.4  # m/s along -Y
CYCLE = 1.0  # s a stride takes
STANCE = 0.62  # share of the cycle a foot stands
STRIKE, ROLL = 0.15, 0.65  # shares of a stance: the heel strike ends, the heel lifts
STRIKE_PITCH, OFF_PITCH = math.radians(15), math.radians(-35)  # the foot's pitch at strike and at toe-off
HIP_HEIGHT = 0.86
SIDES = {"L": 1.0, "R": -1.0}


def build_rig(bpy):
    """Hips and two legs (thigh, shin, foot, toe), Z up, facing -Y, quaternion rotations."""
    obj, bones = armature_in_edit_mode(bpy, "Hand")

    def bone(name, head, tail, parent=None):
        edit = bones.new(name)
        edit.head, edit.tail = head, tail
        if parent:
            edit.parent, edit.use_connect = bones[parent], parent != "hips"

    bone("hips", (0, 0, 1.0), (0, 0, 1.12))
    for side, x in SIDES.items():
        x *= 0.1
        bone(f"thigh.{side}", (x, 0, 1.0), (x, -0.01, 0.55), "hips")
        bone(f"shin.{side}", (x, -0.01, 0.55), (x, 0.0, 0.1), f"thigh.{side}")
        bone(f"foot.{side}", (x, 0.0, 0.1), (x, -0.13, 0.025), f"shin.{side}")
        bone(f"toe.{side}", (x, -0.13, 0.025), (x, -0.2, 0.025), f"foot.{side}")
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in obj.pose.bones:
        pose_bone.rotation_mode = "QUATERNION"
    return obj


def plants(side):
    """(start, end) times of the side's stances over the clip."""
    offset = 0.0 if side == "L" else 0.5
    return [((k + offset) * CYCLE, (k + offset + STANCE) * CYCLE) for k in range(-1, int(SECONDS / CYCLE) + 2)]


def planted_foot(side, start, pitch, about_heel):
    """The heel (ankle) and ball of a foot standing at the stance starting at ``start``, its
    pitch ``pitch`` about the heel or the ball."""
    ankle = Vector((0.1 * SIDES[side], -SPEED * (start + 0.3 * CYCLE), 0.1))
    ball = ankle + Vector((0.0, -0.13, -0.075))
    turn = Matrix.Rotation(-pitch, 3, "X")  # positive: toes up
    if about_heel:
        return ankle, ankle + turn @ (ball - ankle)
    return ball + turn @ (ankle - ball), ball


def foot(side, t):
    """The heel and ball of ``side`` at time ``t``, and whether each is down by the plan."""
    stances = plants(side)
    for (start, end), (next_start, _) in pairwise(stances):
        if start <= t <= end:
            u = (t - start) / (end - start)
            if u < STRIKE:
                return planted_foot(side, start, STRIKE_PITCH * (1 - u / STRIKE), True), (True, False)
            if u < ROLL:
                return planted_foot(side, start, 0.0, True), (True, True)
            return planted_foot(side, start, OFF_PITCH * (u - ROLL) / (1 - ROLL), False), (False, True)
        if end < t < next_start:
            v = (t - end) / (next_start - end)
            off, strike = planted_foot(side, start, OFF_PITCH, False), planted_foot(side, next_start, STRIKE_PITCH, True)
            blend, lift = v * v * (3 - 2 * v), Vector((0, 0, 0.12 * math.sin(math.pi * v)))
            return tuple(a.lerp(b, blend) + lift for a, b in zip(off, strike)), (False, False)
    raise ValueError(t)


def _leg_pose(bpy, obj, side, ankle, ball):
    """Thigh, shin, foot and toe posed (armature space) so the ankle and ball are there."""
    bones = obj.pose.bones
    hip = bones[f"thigh.{side}"].head.copy()
    thigh, shin = (obj.data.bones[f"{name}.{side}"].length for name in ("thigh", "shin"))
    reach = ankle - hip
    distance = min(reach.length, 0.9999 * (thigh + shin))
    along = (thigh * thigh - shin * shin + distance * distance) / (2 * distance)
    forward = Vector((0, -1, 0))
    bend = (forward - reach.normalized() * forward.dot(reach.normalized())).normalized()
    knee = hip + reach.normalized() * along + bend * math.sqrt(max(thigh * thigh - along * along, 0.0))
    tip = ball + Vector((0, -0.07, 0))
    for name, head, tail in zip(("thigh", "shin", "foot", "toe"), (hip, knee, ankle, ball), (knee, ankle, ball, tip)):
        y = (tail - head).normalized()
        x = (Vector((1, 0, 0)) - y * y.x).normalized()
        matrix = Matrix((x, y, x.cross(y))).transposed().to_4x4()
        matrix.translation = head
        bones[f"{name}.{side}"].matrix = matrix
        bpy.context.view_layer.update()  # (the next bone's parent as posed)


def key_walk(bpy, obj, every):
    """Key the walk every ``every`` frames (and on the last); returns the keyed frames and,
    per frame (F,), side and point (heel, ball), the planned positions (2, 2, F, 3) and
    whether the plan has them down (2, 2, F)."""
    scene = bpy.context.scene
    scene.render.fps = FPS
    count = round(SECONDS * FPS) + 1
    scene.frame_start, scene.frame_end = 1, count
    keyed = sorted({*range(0, count, every), count - 1})
    planned, down = np.zeros((2, 2, count, 3)), np.zeros((2, 2, count), dtype=bool)
    for frame in range(count):
        t = frame / FPS
        for row, side in enumerate(SIDES):
            points, planted = foot(side, t)
            planned[row, :, frame], down[row, :, frame] = points, planted
        if frame in keyed:
            hips = Matrix.Translation((0, -SPEED * t, HIP_HEIGHT + 0.015 * math.cos(4 * math.pi * t / CYCLE)))
            obj.pose.bones["hips"].matrix = hips
            bpy.context.view_layer.update()
            for row, side in enumerate(SIDES):
                _leg_pose(bpy, obj, side, Vector(planned[row, 0, frame]), Vector(planned[row, 1, frame]))
            obj.pose.bones["hips"].keyframe_insert("location", frame=frame + 1)
            for pose_bone in obj.pose.bones:
                pose_bone.keyframe_insert("rotation_quaternion", frame=frame + 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    return np.array(keyed), planned, down
