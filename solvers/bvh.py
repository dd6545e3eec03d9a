"""BVH motion files as :class:`~.kinematics.Skeleton` / :class:`~.kinematics.Motion`.

Kept in the numpy-only core so that tests, benchmarks and the command line can read
real mocap without Blender, and so that a cleaned clip can be written back with the
input's hierarchy, joint order and channel layout untouched: only motion values change.
"""

import re
from dataclasses import dataclass, field, replace

import numpy as np

from . import quaternion as quat
from .atomic_files import atomic_output
from .kinematics import Motion, Skeleton, SolverInputError, forward_kinematics, scale_root_motion
from .leg_detection import LegDetectionError, detect_legs
from .rig import Leg, Rig, nearest_axis, standing_direction, stands_along
from .rotations import quat_to_euler

AXES = {"X": 0, "Y": 1, "Z": 2}
UP = (0.0, 1.0, 0.0)  # BVH is Y-up ...
Z_UP = (0.0, 0.0, 1.0)  # ... but some exporters write a Z-up world (see standing_up)
CMU_UNIT = 0.056444  # metres per unit of the CMU motion-capture database's BVH files


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
    newline: str = "\n"  # the rows' line ending, kept on rewrite

    @property
    def fps(self):
        return 1.0 / self.frame_time


# Frame rates a clip can have: outside them the Frame Time is corrupt, and the solver's
# windows (seconds times the rate, in frames) would cost time and memory without bound.
FRAME_RATE_LIMITS = (1.0, 1000.0)
CHANNEL = re.compile(r"^[XYZ](position|rotation)$", re.IGNORECASE)
# Names, comments and line endings are kept exactly: undecodable bytes round-trip.
ENCODING = {"encoding": "utf-8", "errors": "surrogateescape", "newline": ""}


def read(path):
    with open(path, **ENCODING) as handle:
        return parse(handle.read())


def parse(text):
    motion_at = text.find("MOTION")
    if not text.lstrip().startswith("HIERARCHY") or motion_at < 0:
        raise SolverInputError("not a BVH file: missing HIERARCHY or MOTION section")
    joints = _parse_hierarchy(text[:motion_at])
    # Any case and any spaces or tabs between the words, as Blender's importer reads them.
    frames_match = re.search(r"Frames:[ \t]*(\d+)", text[motion_at:], re.IGNORECASE)
    time_match = re.search(r"Frame[ \t]+Time:[ \t]*(\S+)[^\n]*\n", text[motion_at:], re.IGNORECASE)
    if not frames_match or not time_match:
        raise SolverInputError("BVH MOTION section lacks 'Frames:' or 'Frame Time:'")
    frame_time = _frame_time(time_match.group(1))
    body_at = motion_at + time_match.end()
    channel_count = sum(len(j.channels) for j in joints)
    if channel_count == 0:
        raise SolverInputError("BVH hierarchy has no channels: there is no motion")
    tokens = _motion_rows(text[body_at:], int(frames_match.group(1)), channel_count)
    try:
        values = tokens.astype(float)
    except ValueError as error:
        raise SolverInputError(f"BVH MOTION holds a value that is not a number: {error}") from None
    if not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
        raise SolverInputError(f"BVH MOTION frame {row + 1} holds a value that is not a finite number")
    first_row = text[body_at:].split("\n", 1)[0]
    return BvhFile(joints, frame_time, values, text[:body_at], tokens, "\r\n" if first_row.endswith("\r") else "\n")


def _frame_time(text):
    try:
        frame_time = float(text)
    except ValueError:
        raise SolverInputError(f"BVH Frame Time {text!r} is not a number") from None
    low, high = FRAME_RATE_LIMITS
    if not 1.0 / high <= frame_time <= 1.0 / low:
        raise SolverInputError(
            f"BVH Frame Time {text} s is not a clip's: the frame rate must be {low:g} to {high:g} frames per second"
        )
    return frame_time


def check_frame_rate(fps, where="the clip"):
    """Refuse a frame rate outside :data:`FRAME_RATE_LIMITS` (a corrupt file's)."""
    low, high = FRAME_RATE_LIMITS
    if not low <= fps <= high:
        raise SolverInputError(f"{where} runs at {fps:g} frames per second: it must be {low:g} to {high:g}")


def _motion_rows(body, frames, channel_count):
    """The values' text, (frames, channels); the rows must be what ``Frames:`` says."""
    rows = [line.split() for line in body.splitlines() if line.strip()]
    if len(rows) != frames:
        raise SolverInputError(f"BVH 'Frames: {frames}' but the MOTION section holds {len(rows)} rows")
    short = next((i for i, row in enumerate(rows) if len(row) != channel_count), None)
    if short is not None:
        raise SolverInputError(
            f"BVH MOTION frame {short + 1} holds {len(rows[short])} values, the hierarchy has {channel_count} channels"
        )
    if frames == 0:
        raise SolverInputError("BVH MOTION holds no frames")
    return np.array(rows)


def _parse_hierarchy(text):
    tokens = _hierarchy_words(text)[1:]  # after HIERARCHY
    joints, stack, opened, i = [], [], None, 0

    def arguments(count, what):
        if i + count >= len(tokens):
            raise SolverInputError(f"BVH hierarchy ends inside {what}")
        return tokens[i + 1 : i + 1 + count]

    while i < len(tokens):
        token = tokens[i]
        if token in ("ROOT", "JOINT"):
            if (token == "ROOT") != (not stack):
                raise SolverInputError(f"BVH {token} {arguments(1, token)[0]!r} is misplaced: "
                                       "ROOT starts the hierarchy, JOINT goes inside a joint")
            joints.append(BvhJoint(arguments(1, token)[0], stack[-1] if stack else -1, np.zeros(3)))
            opened, i = len(joints) - 1, i + 2
        elif token == "End":
            if not stack or arguments(1, "End Site")[0].lower() != "site":
                raise SolverInputError("BVH 'End Site' outside a joint")
            joints.append(BvhJoint(joints[stack[-1]].name + ".end", stack[-1], np.zeros(3), end_site=True))
            opened, i = len(joints) - 1, i + 2
        elif token == "{":
            if opened is None:
                raise SolverInputError("BVH hierarchy has a '{' that opens no joint")
            stack.append(opened)
            opened, i = None, i + 1
        elif token == "}":
            if not stack:
                raise SolverInputError("BVH hierarchy has a '}' that closes nothing")
            stack.pop()
            i += 1
        elif token == "OFFSET" and stack:
            joints[stack[-1]].offset = _numbers(arguments(3, "OFFSET"), f"OFFSET of {joints[stack[-1]].name!r}")
            i += 4
        elif token == "CHANNELS" and stack and not joints[stack[-1]].end_site:
            joints[stack[-1]].channels = _channels(tokens, i, joints[stack[-1]].name)
            i += 2 + len(joints[stack[-1]].channels)
        else:
            raise SolverInputError(f"BVH hierarchy has an unexpected {token!r}")
    if stack or opened is not None or not joints:
        raise SolverInputError("BVH hierarchy is not closed: a '{' lacks its '}'" if joints
                               else "BVH hierarchy has no joints")
    joints = _with_tips(joints)
    names = [joint.name for joint in joints]
    twice = {name for name in names if names.count(name) > 1}
    if twice:
        raise SolverInputError(f"BVH hierarchy names two joints {sorted(twice)[0]!r}")
    return joints


def _hierarchy_words(text):
    """The hierarchy's words, each joint's name one word: Blender's importer joins the words
    of a name with "_" (3ds Max writes "Bip01 L Thigh", Blender reads Bip01_L_Thigh)."""
    words = []
    for line in text.splitlines():
        line_words = line.split()
        if len(line_words) > 2 and line_words[0] in ("ROOT", "JOINT"):
            opens = line_words[-1] == "{"  # "JOINT Bip01 L Thigh {": the brace is no part of the name
            name = "_".join(line_words[1 : len(line_words) - opens])
            line_words = [line_words[0], name] + ["{"] * opens
        words += line_words
    return words


# Where Blender's importer draws the tip of a joint that has none of its own (no End Site,
# no child) or one on its head: 0.1 file units along the file's Y. A toe joint without an
# End Site is still a toe bone, its head the ball, and its heel is pinned as in Blender.
TIP_OFFSET = (0.0, 0.1, 0.0)
TIP_SHORTEST = 0.001  # file units: an End Site this close to its joint's head is on it


def _with_tips(joints):
    """``joints`` with an End Site below every joint that has no child, and every End
    Site on its joint's head moved to ``TIP_OFFSET``, as Blender's importer draws their
    bones (a tip only: the file is written back as it was read)."""
    parents = {joint.parent for joint in joints}
    for joint in joints:
        if joint.end_site and np.linalg.norm(joint.offset) <= TIP_SHORTEST:
            joint.offset = np.array(TIP_OFFSET)
    tips = [BvhJoint(joint.name + ".end", index, np.array(TIP_OFFSET), end_site=True)
            for index, joint in enumerate(joints) if index not in parents and not joint.end_site]
    return joints + tips


def _numbers(texts, what):
    try:
        values = np.array(texts, dtype=float)
    except ValueError:
        raise SolverInputError(f"BVH {what} is not three numbers: {' '.join(texts)}") from None
    if not np.isfinite(values).all():
        raise SolverInputError(f"BVH {what} is not finite: {' '.join(texts)}")
    return values


def _channels(tokens, i, joint):
    count_text = tokens[i + 1] if i + 1 < len(tokens) else ""
    if not count_text.isdigit() or not 0 <= int(count_text) <= 6:
        raise SolverInputError(f"BVH CHANNELS of {joint!r} must give a count of 0 to 6, not {count_text!r}")
    names = tokens[i + 2 : i + 2 + int(count_text)]
    bad = [name for name in names if not CHANNEL.match(name)]
    if bad or len(names) < int(count_text):
        raise SolverInputError(
            f"BVH CHANNELS {count_text} of {joint!r}: {bad[0] if bad else 'too few names'!r} is not a channel "
            "(Xposition ... Zrotation)"
        )
    if len({name[0].upper() + name[1:].lower() for name in names}) < len(names):
        raise SolverInputError(f"BVH CHANNELS of {joint!r} names a channel twice")
    return names


def to_motion(bvh, scale=1.0):
    """Skeleton and motion (Y-up, lengths times ``scale``) of a parsed BVH file.

    A joint with position channels is where they put it: they replace its OFFSET (an
    axis without a channel is 0), as Blender's importer reads them, so a file whose
    every joint carries positions (MotionBuilder-style) poses as it does in Blender.
    """
    skeleton = Skeleton([j.name for j in bvh.joints], [j.parent for j in bvh.joints])
    frames, n = len(bvh.values), len(bvh.joints)
    rot = np.tile(quat.IDENTITY, (frames, n, 1))
    pos = np.tile(np.zeros(3), (frames, n, 1))
    column = 0
    for j, joint in enumerate(bvh.joints):
        pos[:, j] = 0.0 if _has_position(joint) else joint.offset
        for channel in joint.channels:
            axis = AXES[channel[0].upper()]
            value = bvh.values[:, column]
            column += 1
            if channel[1:].lower() == "position":
                pos[:, j, axis] = value
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
                tokens[:, c] = _format(motion.pos[:, j, axis] / scale)
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
    with open(path, "w", **ENCODING) as handle:
        handle.write(bvh.header)
        handle.write(bvh.newline.join(" ".join(row) for row in tokens))
        handle.write(bvh.newline)


def write_sliding_copy(source, target, factor):
    """``source`` with its root's horizontal motion scaled by ``factor`` (a sliding clip),
    written atomically: an interrupted write leaves a previous ``target`` as it was, and
    ``target`` may be ``source``."""
    parsed = read(source)
    skeleton, motion = to_motion(parsed)
    roots = np.flatnonzero(skeleton.parents < 0)
    with atomic_output(target) as temp:
        write(temp, parsed, scale_root_motion(skeleton, motion, factor, UP), 1.0, location_joints=roots)
    return target


def _format(values):
    """The text of new channel values; a value that is not a finite number is refused
    (nothing is written), whatever produced it."""
    if not np.isfinite(values).all():
        raise SolverInputError("the fixed motion holds values that are not numbers: nothing was written")
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
    guess = _standing_legs([j.name for j in bvh.joints], parents, heads, tails, _played_legs(bvh))
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


def _standing_legs(names, parents, heads, tails, played):
    """:func:`~.leg_detection.detect_legs` of a rest pose read along BVH's Y, else along Z:
    the legs found along the axis the clip stands along as it plays (``played(guess)``: the
    legs' hips and ankles (L, F, 3) over some of its frames), else along the axis its rest
    pose stands along. Joints without telling names are found by their shape, and a Z-up
    rest pose read along Y can show chains that end lowest along Y, a knee taken for the
    thigh and the toe for the foot. A rest pose is only what the OFFSETs draw: where every
    joint has position channels they replace the OFFSETs, which may lie any way (Bandai
    Namco's files draw the legs along Z and their motion stands along Y); read along Z, the
    highest joint is a still root above the hips, taken for the pelvis. Where the legs stand
    along neither axis, the first legs found are kept (a clip sitting or lying)."""
    found, failure = [], None
    for up in (UP, Z_UP):
        try:
            found.append((up, detect_legs(names, parents, heads, tails, up=up)))
        except LegDetectionError as error:
            failure = failure or error
    if not found:
        raise failure

    def at_rest(guess):
        return (heads[[getattr(leg, role) for leg in guess.legs]][:, None] for role in ("thigh", "foot"))

    for points in (played, at_rest):
        for up, guess in found:
            if stands_along(*points(guess), up):
                return guess
    return found[0][1]


PLAYED_FRAMES = 64  # frames of a clip, evenly spread, that show how it stands


def _played_legs(bvh):
    """A function of a leg guess giving its hips and ankles (L, F, 3) as the clip plays them,
    over at most ``PLAYED_FRAMES`` frames (:func:`to_motion`: position channels in place
    of the OFFSETs)."""
    rows = np.linspace(0, len(bvh.values) - 1, min(len(bvh.values), PLAYED_FRAMES)).round().astype(int)
    skeleton, motion = to_motion(replace(bvh, values=bvh.values[rows]))

    def played(guess):
        hips, ankles = ([getattr(leg, role) for leg in guess.legs] for role in ("thigh", "foot"))
        _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, hips + ankles)
        return gpos[:, hips].swapaxes(0, 1), gpos[:, ankles].swapaxes(0, 1)
    return played


def standing_up(skeleton, motion, rig):
    """The world axis the clip stands along (:func:`~.rig.nearest_axis` of its legs'
    :func:`~.rig.standing_direction`) and its name. BVH is Y-up by convention, but some
    exporters write a Z-up world, and a solve along the wrong axis reads heights as travel."""
    joints = [joint for leg in rig.legs for joint in (leg.hip, leg.ankle)]
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, joints)
    hips, ankles = (gpos[:, [getattr(leg, role) for leg in rig.legs]].swapaxes(0, 1) for role in ("hip", "ankle"))
    return nearest_axis(standing_direction(hips, ankles))


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
