"""BVH motion files as :class:`~.kinematics.Skeleton` / :class:`~.kinematics.Motion`.

Kept in the numpy-only core so that tests, benchmarks and the command line can read
real mocap without Blender, and so that a cleaned clip can be written back with the
input's hierarchy, joint order and channel layout untouched: only motion values change.
"""

import re
from dataclasses import dataclass, field

import numpy as np

from . import quaternion as quat
from .kinematics import Motion, Skeleton, SolverInputError, scale_root_motion
from .leg_detection import detect_legs
from .rig import Leg, Rig
from .rotations import quat_to_euler

AXES = {"X": 0, "Y": 1, "Z": 2}
UP = (0.0, 1.0, 0.0)  # BVH is Y-up


@dataclass
class BvhJoint:
    name: str
    parent: int
    offset: np.ndarray
    channels: list = field(default_factory=list)  # e.g. ["Xposition", "Zrotation", ...]
    end_site: bool = False


@dataclass
class BvhFile:
    joints: list
    frame_time: float
    values: np.ndarray  # (frames, channels) as in the file
    header: str  # everything up to and including the "Frame Time:" line
    tokens: np.ndarray  # (frames, channels) the values' original text, kept for a faithful rewrite

    @property
    def fps(self):
        return 1.0 / self.frame_time


def read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse(handle.read())


def parse(text):
    motion_at = text.find("MOTION")
    if not text.lstrip().startswith("HIERARCHY") or motion_at < 0:
        raise SolverInputError("not a BVH file: missing HIERARCHY or MOTION section")
    joints = _parse_hierarchy(text[:motion_at])
    frames_match = re.search(r"Frames:\s*(\d+)", text[motion_at:])
    time_match = re.search(r"Frame Time:\s*([-+0-9.eE]+)[^\n]*\n", text[motion_at:])
    if not frames_match or not time_match:
        raise SolverInputError("BVH MOTION section lacks 'Frames:' or 'Frame Time:'")
    frame_time = float(time_match.group(1))
    if not frame_time > 0:
        raise SolverInputError(f"BVH frame time must be positive, got {frame_time}")
    body_at = motion_at + time_match.end()
    channel_count = sum(len(j.channels) for j in joints)
    frames = int(frames_match.group(1))
    tokens = np.array(text[body_at:].split()[: frames * channel_count])
    if channel_count == 0 or len(tokens) < frames * channel_count:
        raise SolverInputError(
            f"BVH MOTION holds {len(tokens)} numbers, expected {frames} frames x {channel_count} channels"
        )
    tokens = tokens.reshape(frames, channel_count)
    try:
        values = tokens.astype(float)
    except ValueError as error:
        raise SolverInputError(f"BVH MOTION holds a value that is not a number: {error}") from None
    return BvhFile(joints, frame_time, values, text[:body_at], tokens)


def _parse_hierarchy(text):
    tokens = text.split()
    joints, stack, i = [], [], 0
    while i < len(tokens):
        token = tokens[i]
        if token in ("ROOT", "JOINT"):
            joints.append(BvhJoint(tokens[i + 1], stack[-1] if stack else -1, np.zeros(3)))
            i += 2
        elif token == "End":
            parent = stack[-1]
            joints.append(BvhJoint(joints[parent].name + ".end", parent, np.zeros(3), end_site=True))
            i += 2
        elif token == "{":
            stack.append(len(joints) - 1)
            i += 1
        elif token == "}":
            stack.pop()
            i += 1
        elif token == "OFFSET":
            joints[stack[-1]].offset = np.array(tokens[i + 1 : i + 4], dtype=float)
            i += 4
        elif token == "CHANNELS":
            count = int(tokens[i + 1])
            joints[stack[-1]].channels = tokens[i + 2 : i + 2 + count]
            i += 2 + count
        else:
            i += 1
    if not joints:
        raise SolverInputError("BVH hierarchy has no joints")
    return joints


def to_motion(bvh, scale=1.0):
    """Skeleton and motion (Y-up, lengths times ``scale``) of a parsed BVH file."""
    skeleton = Skeleton([j.name for j in bvh.joints], [j.parent for j in bvh.joints])
    frames, n = len(bvh.values), len(bvh.joints)
    rot = np.tile(quat.IDENTITY, (frames, n, 1))
    pos = np.tile(np.zeros(3), (frames, n, 1))
    column = 0
    for j, joint in enumerate(bvh.joints):
        pos[:, j] = joint.offset
        for channel in joint.channels:
            axis = AXES[channel[0].upper()]
            value = bvh.values[:, column]
            column += 1
            if channel[1:].lower() == "position":
                pos[:, j, axis] += value
            else:
                unit = np.zeros(3)
                unit[axis] = 1.0
                rot[:, j] = quat.multiply(rot[:, j], quat.from_axis_angle(unit, np.radians(value)))
    return skeleton, Motion(rot, pos * scale, bvh.fps)


def write(path, bvh, motion, scale, rotation_joints=(), location_joints=()):
    """Write ``bvh`` back with new rotations of ``rotation_joints`` and new positions of
    ``location_joints`` taken from ``motion`` (lengths divided by ``scale``).

    Hierarchy, joint order, channel order, axes, units and frame rate are the input's;
    every other channel keeps its text verbatim, so only what the solver changed differs.
    """
    tokens = bvh.tokens.copy()
    column = np.cumsum([0] + [len(j.channels) for j in bvh.joints])
    for j in location_joints:
        joint = bvh.joints[j]
        if not _has_position(joint):
            raise SolverInputError(f"BVH joint {joint.name!r} has no position channels to write its motion to")
        for c, channel in enumerate(joint.channels, start=column[j]):
            if channel[1:].lower() == "position":
                axis = AXES[channel[0].upper()]
                tokens[:, c] = _format(motion.pos[:, j, axis] / scale - joint.offset[axis])
    for j in rotation_joints:
        columns = {ch: c for c, ch in enumerate(bvh.joints[j].channels, start=column[j])}
        rotations = [ch for ch in columns if ch[1:].lower() == "rotation"]
        if rotations:
            # BVH applies the listed rotations left to right (R = R1 R2 R3); Blender
            # order names apply the other way round, so the order string is reversed.
            order = "".join(ch[0].upper() for ch in reversed(rotations))
            reference = np.zeros(3)
            for ch in rotations:
                reference[AXES[ch[0].upper()]] = np.radians(bvh.values[0, columns[ch]])
            euler = np.degrees(quat_to_euler(motion.rot[:, j].T, order, reference)).T
            for ch in rotations:
                tokens[:, columns[ch]] = _format(euler[:, AXES[ch[0].upper()]])
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(bvh.header)
        handle.write("\n".join(" ".join(row) for row in tokens))
        handle.write("\n")


def write_sliding_copy(source, target, factor):
    """``source`` with its root's horizontal motion scaled by ``factor`` (a sliding clip)."""
    parsed = read(source)
    skeleton, motion = to_motion(parsed)
    roots = np.flatnonzero(skeleton.parents < 0)
    write(target, parsed, scale_root_motion(skeleton, motion, factor, UP), 1.0, location_joints=roots)
    return target


def _format(values):
    return np.char.mod("%.6f", values)


def rest_heads(bvh):
    """Rest positions of every joint (accumulated offsets), file units."""
    heads = np.zeros((len(bvh.joints), 3))
    for j, joint in enumerate(bvh.joints):
        heads[j] = joint.offset + (heads[joint.parent] if joint.parent >= 0 else 0.0)
    return heads


def detect_rig(bvh):
    """Pelvis and legs of a BVH skeleton, as a :class:`~.rig.Rig` of joint indices."""
    parents = [j.parent for j in bvh.joints]
    heads = rest_heads(bvh)
    first_child = {}
    for j, parent in enumerate(parents):
        first_child.setdefault(parent, j)
    tails = np.array([heads[first_child[j]] if j in first_child else heads[j] for j in range(len(heads))])
    guess = detect_legs([j.name for j in bvh.joints], parents, heads, tails, up=UP)
    legs = []
    for leg in guess.legs:
        if leg.toe is not None:
            toe, toe_end = leg.toe, first_child.get(leg.toe)
        else:
            toe, toe_end = first_child.get(leg.foot), None
        if toe is None:
            raise SolverInputError(f"BVH leg {leg.side!r} has no joint below its foot to lock")
        legs.append(Leg(leg.side, leg.thigh, leg.shin, leg.foot, toe, toe_end))
    return Rig(_translated_ancestor(bvh, guess.pelvis), legs)


def _translated_ancestor(bvh, joint):
    """The joint (or its nearest ancestor) that has position channels: where a pelvis
    correction can be written. A file whose root carries the translation and whose
    pelvis only rotates moves the whole body through that root."""
    while joint >= 0 and not _has_position(bvh.joints[joint]):
        joint = bvh.joints[joint].parent
    if joint < 0:
        raise SolverInputError("no joint of this BVH file has position channels: the body cannot be moved")
    return joint


def _has_position(joint):
    return any(channel[1:].lower() == "position" for channel in joint.channels)


def load(path, scale=1.0):
    """Skeleton, motion and rig of a BVH file in one call."""
    bvh = read(path)
    skeleton, motion = to_motion(bvh, scale)
    return skeleton, motion, detect_rig(bvh)
