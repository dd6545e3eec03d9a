"""Which bones of an armature are the pelvis and the legs, guessed from names and rest pose.

Names decide first: where a rig follows a known convention (Rigify, Mixamo, Unreal, CMU and
LAFAN BVH, 3ds Max Biped, Character Creator, VRoid) they are unambiguous, and exact name
matching tells twist, IK and helper bones apart from the chain. Where names say nothing, the
hierarchy and the rest positions decide: legs are chains of three or more bones that branch
from one bone and reach down to the lowest points of the rig.

Heights are measured along the caller's ``up`` and every threshold is relative to the rig's
own size, so any unit scale and orientation works as long as heads and tails are given in
world space (the armature object's transform applied).
"""

import math
import re
import statistics
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from .quaternion import cross


class LegDetectionError(ValueError):
    """No usable legs (or unusable input): the message says what was looked for."""


@dataclass
class LegBones:
    """One leg as bone indices; ``toe`` is None where the rig has no toe bone."""

    side: str
    thigh: int
    shin: int
    foot: int
    toe: int | None = None


@dataclass
class LegGuess:
    pelvis: int
    legs: list[LegBones]  # front to back, left before right


class BoneName(NamedTuple):
    """What a bone name says once prefix, namespace, side and segment number are removed
    (a named tuple: every bone's name is parsed, and a frozen dataclass is slow to make)."""

    core: str  # lower case, separators removed: "upleg" for "mixamorig:LeftUpLeg"
    side: str | None  # "left", "right" or None
    segment: int  # 1 for "DEF-thigh.L.001", the twist segment of "DEF-thigh.L"
    family: int  # parallel hierarchies, preferred first: DEF- 0, plain 1, ORG- 2, MCH- 3
    row: str | None = None  # a quadruped's "front", "middle" or "back" pair, beside the side


# Bones shorter than this fraction of the rig's height are joints, not limbs (zero-length hip
# joints, nudged BVH stubs).
_TINY = 0.01
# Leaves whose lowest end lies within this fraction of the rig's height from its lowest
# point can be feet: hands of a biped in A-pose stay well above it.
_GROUND_BAND = 0.1
# A leg starts at least this fraction of the rig's height above the ground: a foot's toes
# branch too, but close to the ground.
_MIN_LEG_HEIGHT = 0.25
# Thigh and shin take at least this share of the drop from the branch to the ground...
_MIN_THIGH_SHIN_DROP = 0.5
# ... and are the first pair of bones within this share of the largest pair drop, so a short
# hip joint before the thigh is skipped but a long digitigrade foot does not become the shin.
_PAIR_DROP_SHARE = 0.75
# A toe's head lies within this fraction of the hip height from the ground...
_TOE_BAND = 0.15
# ... and the toe points within about 45 degrees of horizontal (|cos| to up).
_TOE_FLAT = 0.7
# Bones at and above the legs' common ancestor that may carry the pelvis name: 3ds Max Biped
# hangs the thighs on "Bip01 Spine", a child of "Bip01 Pelvis".
_PELVIS_NAME_REACH = 3
# A bone the legs hang from may share the body with the spine through a parent this high at
# least (a share of the legs' own parent's height): a root bone on the floor carries neither.
_BODY_ROOT_HEIGHT = 0.5

_NO_LEGS = (
    "no leg chains found: expected bones named like thigh/upleg/upperleg/hip, "
    "shin/calf/leg/knee, foot/ankle with a side (.L/_l/Left/L_), "
    "or two or more chains of at least three bones branching from the pelvis and ending "
    "near the lowest point of the rig"
)

_NO_FEET = (
    "no leg chains found: {bones} look like legs, but each leg is only {count} bone{plural} long, with no "
    "foot below it, so there is no foot to lock; Foot Lock needs a thigh, a shin and a foot bone per leg "
    "(use a rig with feet, or set the legs up by hand in the Legs panel)"
)
_NAMESPACE = re.compile(r"^.*:")  # "mixamorig:", "Character1:"
_PREFIX = re.compile(
    r"^(?:(?P<family>DEF|ORG|MCH)[-_.]|Bip\d+[ _]|CC_Base_|J_Bip_(?:C_)?|mixamorig\d*_)?", re.I
)
_FAMILY_RANK = {"def": 0, "": 1, "org": 2, "mch": 3}
# Words of a name: "LHipJoint" -> L, Hip, Joint; "thigh_twist_01_l" -> thigh, twist, 01, l.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SIDES = {"l": "left", "left": "left", "r": "right", "right": "right"}
# Words naming a pair of legs, next to the side word: "LeftFrontUpLeg", "thigh_hind.L".
# ("Fore" is left out: it is the first half of every "ForeArm".)
_ROWS = {
    "front": "front",
    "middle": "middle",
    "mid": "middle",
    "back": "back",
    "hind": "back",
    "rear": "back",
}

_LEG_ROLES = ("thigh", "shin", "foot", "toe")
# Exact cores only, listed by preference. BVH skeletons (CMU 131) name a bone after the joint
# at its head: LeftHip is the thigh, LeftKnee the shin, LeftAnkle the foot. Mixamo and CMU
# call the shin LeftLeg; Unreal calls the toe ball_l; Unity and VRM say UpperLeg/LowerLeg/Toes.
_ALIASES = {
    "thigh": ("thigh", "upleg", "upperleg", "thighbend", "hip"),
    "shin": ("shin", "calf", "leg", "lowerleg", "knee"),
    "foot": ("foot", "ankle"),
    "toe": ("toe", "toebase", "toes", "ball"),
}
# The roles each of those cores can name (_ALIASES inverted).
_ROLES_OF = {core: [role for role, cores in _ALIASES.items() if core in cores] for cores in _ALIASES.values() for core in cores}
_PELVIS_NAMES = ("pelvis", "hips", "hip")
_ROW_PREFIXES = {1: ("",), 2: ("front_", "back_"), 3: ("front_", "middle_", "back_")}


def detect_legs(names, parents, heads, tails, up=(0, 0, 1)):
    """Guess the pelvis and the legs of a skeleton from its names and rest pose.

    ``parents`` holds each bone's parent index (-1 for a root); ``heads`` and ``tails`` are
    (n, 3) rest positions in world space; ``up`` is the world's up direction. Raises
    :class:`LegDetectionError` when no legs are found.
    """
    rig = _RestRig(names, parents, heads, tails, up)
    legs = _with_topology_legs(rig, _named_legs(rig), _topology_legs(rig))
    if not legs:
        raise LegDetectionError(_no_legs_message(rig))
    pelvis = _pelvis(rig, legs)
    return LegGuess(pelvis, _labelled(rig, pelvis, legs))


def parse_bone_name(name):
    """Split a bone name into core, side and segment number (see :class:`BoneName`)."""
    if ":" in name:  # most names have no namespace: no substitution to run
        name = _NAMESPACE.sub("", name)
    prefix = _PREFIX.match(name)  # always matches, possibly nothing
    family = _FAMILY_RANK[(prefix.group("family") or "").lower()]
    # Split by case first (the words depend on it), then lower-cased in one call, not word by word.
    words = " ".join(_WORD.findall(name[prefix.end() :])).lower().split()
    segment = _pop_number(words)
    side, row = _pop_side_and_row(words)
    segment = segment or _pop_number(words)  # the number may come before the side: "upperleg02.L"
    return BoneName("".join(words), side, segment, family, row)


def _pop_side_and_row(words):
    """The side word at either end of ``words`` ("thigh.L", "LeftUpLeg") and a row word
    just inside or outside it ("LeftFrontUpLeg", "FrontLeftUpLeg", "thigh_hind.L")."""
    for end, inward in ((-1, -2), (0, 1)):
        if len(words) >= 2 and words[end] in _ROWS and words[inward] in _SIDES:
            row = _ROWS[words.pop(end)]
            return _SIDES[words.pop(end)], row
        if words and words[end] in _SIDES:
            side = _SIDES[words.pop(end)]
            row = _ROWS.get(words[end]) if len(words) >= 2 else None  # keep a lone "Back" a spine bone
            if row is not None:
                words.pop(end)
            return side, row
    return None, None


def _pop_number(words):
    return int(words.pop()) if words and words[-1].isdigit() else 0


class _RestRig:
    """The armature's hierarchy and rest geometry, heights measured from its lowest point."""

    def __init__(self, names, parents, heads, tails, up):
        self.names = list(names)
        self.heads = np.asarray(heads, dtype=float)
        self.tails = np.asarray(tails, dtype=float)
        self.up = np.asarray(up, dtype=float)
        parents = np.asarray(parents, dtype=int)
        self._check(parents)
        # Python lists from here on: the walks through the hierarchy read them bone by bone.
        self.parents = parents.tolist()
        self.up = self.up / _length(self.up)
        count = len(self.names)
        self.children = [[] for _ in range(count)]
        for bone, parent in enumerate(self.parents):
            if parent >= 0:
                self.children[parent].append(bone)
        self.depth = _depths(self.parents)
        # Children before parents: the walks up from the leaves (sorted once, used twice).
        self.deepest_first = sorted(range(count), key=lambda bone: -self.depth[bone])
        # Python floats from here on too (the same numbers): the tests below compare them one at a time.
        self.lengths = _lengths(self.tails - self.heads).tolist()
        points = np.concatenate([self.heads, self.tails])
        heights = points @ self.up
        self.ground = float(heights.min())
        self.extent = float(heights.max()) - self.ground
        # Heights above the lowest point and parsed names, per bone, once for every test below.
        levels = (heights - self.ground).tolist()
        self.head_level, self.tail_level = levels[:count], levels[count:]
        self.parsed = [parse_bone_name(name) for name in self.names]
        # The rig's height sets the scale (far-off props beside it do not); bone lengths
        # stand in for a rig lying flat.
        self.size = max(self.extent, statistics.median(self.lengths))  # np.median's number, without its wrappers
        self.leaves_under = self._leaves_under()

    def _check(self, parents):
        count = len(self.names)
        if count == 0:
            raise LegDetectionError("the armature has no bones")
        if parents.shape != (count,) or self.heads.shape != (count, 3) or self.tails.shape != (count, 3):
            raise LegDetectionError(
                f"expected {count} parents and ({count}, 3) heads and tails for {count} bone names, got "
                f"{parents.shape}, {self.heads.shape} and {self.tails.shape}"
            )
        listed = parents.tolist()  # a rig's few ints: Python's min and max cost less than numpy's comparisons
        if min(listed) < -1 or max(listed) >= count:
            raise LegDetectionError("a parent index is out of range (use -1 for a root bone)")
        if not (np.isfinite(self.heads).all() and np.isfinite(self.tails).all()):
            raise LegDetectionError("bone heads or tails contain values that are not numbers")
        if self.up.shape != (3,) or not np.isfinite(self.up).all() or not _length(self.up) > 0:
            raise LegDetectionError(f"up must be a non-zero 3D vector, got {self.up!r}")

    def _leaves_under(self):
        leaves = [set() for _ in self.names]
        for bone in self.deepest_first:
            if not self.children[bone]:
                leaves[bone].add(bone)
            parent = self.parents[bone]
            if parent >= 0:
                leaves[parent] |= leaves[bone]
        return leaves

    def horizontal(self, vector):
        return vector - (vector @ self.up) * self.up

    def ancestors(self, bone):
        found = []
        while self.parents[bone] >= 0:
            bone = self.parents[bone]
            found.append(bone)
        return found

    def is_below(self, bone, ancestor):
        return ancestor in self.ancestors(bone)

    def path(self, top, bone):
        """Bones from ``top`` down to ``bone``, both included."""
        if bone == top:
            return [bone]
        above = self.ancestors(bone)
        return [*reversed(above[: above.index(top) + 1]), bone]

    def common_ancestor(self, bones):
        """The deepest bone that is or is above every one of ``bones``; -1 if none."""
        shared = set.intersection(*({bone, *self.ancestors(bone)} for bone in bones))
        return max(shared, key=lambda bone: self.depth[bone], default=-1)

    def low_leaves(self):
        band = _GROUND_BAND * self.extent
        return {
            bone
            for bone in range(len(self.names))
            if not self.children[bone]
            and min(self.head_level[bone], self.tail_level[bone]) <= band
        }


def _depths(parents):
    depth = [-1] * len(parents)
    for bone in range(len(parents)):
        climb = []
        while bone >= 0 and depth[bone] < 0:
            climb.append(bone)
            bone = parents[bone]
            if len(climb) > len(parents):
                raise LegDetectionError("the bone parents form a cycle")
        above = depth[bone] if bone >= 0 else -1
        for offset, below in enumerate(reversed(climb), start=1):
            depth[below] = above + offset
    return depth


# --- by name ---------------------------------------------------------------------------


def _named_legs(rig):
    parsed = rig.parsed
    # Every row the names mention: a quadruped's "LeftFront" legs beside its "Left" ones.
    rows = sorted({name.row for name in parsed if name.side}, key=lambda row: (row is not None, row or ""))
    named = _leg_named_bones(parsed)
    legs = []
    for row in rows:
        for side in ("left", "right"):
            ranked = {role: _ranked_candidates(parsed, named.get((side, row, role), []), role) for role in _LEG_ROLES}
            chain = _first_connected_chain(rig, parsed, ranked)
            if chain is not None:
                legs.append(LegBones(side, *chain))
    return legs


def _leg_named_bones(parsed):
    """The bones whose core names a leg bone, by side, row and role (in bone order): one
    pass over the names instead of one per side and role."""
    named = {}
    for bone, name in enumerate(parsed):
        for role in _ROLES_OF.get(name.core, ()):
            named.setdefault((name.side, name.row, role), []).append(bone)
    return named


def _ranked_candidates(parsed, found, role):
    """The bones ``found`` for ``role``, best first."""
    aliases = _ALIASES[role]
    return sorted(
        found, key=lambda bone: (parsed[bone].family, aliases.index(parsed[bone].core), parsed[bone].segment)
    )


def _first_connected_chain(rig, parsed, ranked):
    """The best-ranked thigh, shin, foot and toe where each one descends from the one before."""
    for thigh in ranked["thigh"]:
        shin = _first_below(rig, thigh, ranked["shin"])
        foot = None if shin is None else _first_below(rig, shin, ranked["foot"])
        if foot is not None:
            ankle = _ankle_above(rig, parsed, ranked["foot"], shin, foot)
            if ankle is not None:
                return thigh, shin, ankle, foot
            toe = _first_below(rig, foot, ranked["toe"])
            if toe is None:
                toe = next(
                    (child for child in rig.children[foot] if _looks_like_toe(rig, thigh, foot, child)), None
                )
            return thigh, shin, foot, toe
    return None


def _ankle_above(rig, parsed, candidates, shin, foot):
    """An ankle-named bone between the shin and a foot-named one (SMPL and Xsens-style
    ``left_ankle`` -> ``left_foot``): the ankle is the foot, the foot-named joint its ball."""
    if parsed[foot].core != "foot":
        return None
    return next(
        (
            bone
            for bone in candidates
            if parsed[bone].core == "ankle"
            and parsed[bone].family == parsed[foot].family
            and rig.is_below(foot, bone)
            and rig.is_below(bone, shin)
        ),
        None,
    )


def _first_below(rig, ancestor, candidates):
    return next((bone for bone in candidates if rig.is_below(bone, ancestor)), None)


# --- by hierarchy and rest pose -----------------------------------------------------------


def _topology_legs(rig):
    """Chains that branch, two or more from one bone, and run down to leaves on the ground,
    as ``{branch bone: legs}``."""
    unclaimed = rig.low_leaves()
    groups = {}
    # Deepest branch points first: a quadruped's chest claims the front legs before the
    # pelvis, whose spine branch then no longer counts as a leg.
    for bone in rig.deepest_first:
        children = rig.children[bone]
        if len(children) < 2:  # most bones: no branch, so no legs to look for below them
            continue
        found = [(child, leg) for child in children if (leg := _leg_below(rig, child, unclaimed))]
        if len(found) >= 2:
            groups[bone] = [leg for _, leg in found]
            for child, _ in found:
                unclaimed -= rig.leaves_under[child]
    return groups


def _with_topology_legs(rig, named, groups):
    """Named legs, joined by the legs the hierarchy shows at other branch points.

    One named leg may mean the other side is misnamed: then whichever finds more wins. A
    quadruped may name only one pair human-style: its other pair hangs from another bone (the
    chest), which is added. Chains beside the named legs at their own branch bone (skirts,
    tails) are not legs, nor are copies of the named legs in parallel hierarchies (Rigify's
    ORG- and FK chains).
    """
    if len(named) < 2:
        return max(named, [leg for legs in groups.values() for leg in legs], key=len)
    named_bones = {bone for leg in named for bone in _bones(leg)}
    named_feet = rig.heads[[leg.foot for leg in named]]

    def is_named(leg):
        beside = _lengths(named_feet - rig.heads[leg.foot]).min() <= _TINY * rig.size
        return beside or bool(named_bones & _bones(leg))

    named_branches = {rig.parents[leg.thigh] for leg in named} | {
        branch for branch, legs in groups.items() if any(map(is_named, legs))
    }
    extra = [
        leg
        for branch, legs in groups.items()
        if branch not in named_branches and not any(map(is_named, legs))
        for leg in legs
    ]
    return named + extra


def _bones(leg):
    return {leg.thigh, leg.shin, leg.foot} | ({leg.toe} if leg.toe is not None else set())


def _leg_below(rig, top, unclaimed):
    targets = rig.leaves_under[top] & unclaimed
    if not targets:
        return None
    # The longest way down, so a toe and its end bone win over a heel helper or a twist leaf.
    leaf = max(targets, key=lambda bone: (rig.depth[bone], -rig.tail_level[bone], -bone))
    return _leg_from_path(rig, rig.path(top, leaf))


def _leg_from_path(rig, path):
    """Thigh, shin, foot and toe on a path from just below a branch bone to a foot leaf.

    Hip joints or pelvis side bones may come before the thigh and toe-tip bones after the
    toe: the thigh and shin are the pair of consecutive bones that drops the most.
    """
    bones = [bone for bone in path if rig.lengths[bone] > _TINY * rig.size]
    top = rig.head_level[path[0]]
    if len(bones) < 3 or top < max(_MIN_LEG_HEIGHT * rig.extent, _TINY * rig.size):
        return None
    drops = [rig.head_level[bone] - rig.tail_level[bone] for bone in bones]
    pairs = [thigh + shin for thigh, shin in pairwise(drops[:-1])]  # with at least a foot after them
    largest = max(pairs)
    if largest < _MIN_THIGH_SHIN_DROP * top:
        return None
    first = next(k for k, pair in enumerate(pairs) if pair >= _PAIR_DROP_SHARE * largest)
    thigh, shin, foot = bones[first : first + 3]
    after = bones[first + 3 : first + 4]
    toe = after[0] if after and _looks_like_toe(rig, thigh, foot, after[0]) else None
    return LegBones("", thigh, shin, foot, toe)


def _looks_like_toe(rig, thigh, foot, toe):
    """Head near the ground, roughly horizontal, and pointing on from the foot (not a heel)."""
    direction = rig.tails[toe] - rig.heads[toe]
    near_ground = rig.head_level[toe] <= _TOE_BAND * rig.head_level[thigh]
    flat = abs(direction @ rig.up) <= _TOE_FLAT * rig.lengths[toe]
    ahead = rig.horizontal(direction) @ rig.horizontal(rig.heads[toe] - rig.heads[foot]) > 0
    return bool(near_ground and flat and ahead)


def _no_legs_message(rig):
    """Why no legs were found: a rig whose leg-named bones are too short a chain (one bone per
    leg, no foot) is told so by name; otherwise what was looked for."""
    parsed = rig.parsed
    leg_named = [
        bone
        for bone, name in enumerate(parsed)
        if name.side and any(name.core in aliases for aliases in _ALIASES.values())
    ]
    tops = [bone for bone in leg_named if not any(rig.is_below(bone, other) for other in leg_named)]
    if not tops:
        return _NO_LEGS
    count = max(max(rig.depth[leaf] for leaf in rig.leaves_under[top]) - rig.depth[top] + 1 for top in tops)
    if count >= 3:
        return f"{_NO_LEGS} (bones named like legs: {', '.join(repr(rig.names[bone]) for bone in tops)})"
    bones = ", ".join(repr(rig.names[bone]) for bone in tops)
    return _NO_FEET.format(bones=bones, count=count, plural="s" if count > 1 else "")


# --- pelvis and sides ---------------------------------------------------------------------


def _pelvis(rig, legs):
    """The legs' nearest common ancestor, or a bone named pelvis/hips just above it."""
    tops = [rig.parents[leg.thigh] for leg in legs]
    rootless = [leg.thigh for leg, top in zip(legs, tops) if top < 0]
    if rootless:
        raise LegDetectionError(f"thigh {rig.names[rootless[0]]!r} has no parent bone to serve as pelvis")
    base = rig.common_ancestor(tops)
    if base < 0:
        raise LegDetectionError(
            "the legs are in separate hierarchies: no common parent bone to serve as pelvis"
        )
    base = _carrying_the_upper_body(rig, base)
    for bone in [base, *rig.ancestors(base)][:_PELVIS_NAME_REACH]:
        name = rig.parsed[bone]
        if name.side is None and name.core in _PELVIS_NAMES:
            return bone
    return base


def _carrying_the_upper_body(rig, base):
    """``base`` (the legs' common parent), or the bone above it that carries the upper body
    too: Character Creator hangs the legs on ``CC_Base_Pelvis`` and the spine on its sibling
    ``CC_Base_Waist``, both under ``CC_Base_Hip``, as Daz Genesis does under ``hip``. The
    pelvis correction moves the whole body; put on the legs' own parent alone, it would tear
    the hips from the waist. The upper body is where the rig's topmost point hangs."""
    top = max(range(len(rig.names)), key=lambda bone: max(rig.head_level[bone], rig.tail_level[bone]))
    if top == base or rig.is_below(top, base):
        return base
    floor = _BODY_ROOT_HEIGHT * rig.head_level[base]
    for bone in rig.ancestors(base):
        if rig.head_level[bone] < floor:
            break
        if top == bone or rig.is_below(top, bone):
            return bone
    return base


def _labelled(rig, pelvis, legs):
    """Legs with their final side labels, front to back and left before right."""
    forward = _forward(rig, legs)
    left = cross(rig.up, forward)  # right-handed axes: Blender's -Y-facing character has its left at +X
    sides = [leg.side or _side_by_position(rig, pelvis, leg, left) for leg in legs]
    if len(legs) == 1 and sides[0]:
        return [replace(legs[0], side=sides[0])]
    front_to_back = sorted(range(len(legs)), key=lambda i: -(rig.heads[legs[i].thigh] @ forward))
    pairs = [
        sorted(front_to_back[k : k + 2], key=lambda i: sides[i] != "left") for k in range(0, len(legs), 2)
    ]
    if all([sides[i] for i in pair] == ["left", "right"] for pair in pairs):
        rows = _ROW_PREFIXES.get(len(pairs)) or [f"pair_{k + 1}_" for k in range(len(pairs))]
        return [replace(legs[i], side=row + sides[i]) for row, pair in zip(rows, pairs) for i in pair]
    return [replace(legs[i], side=f"leg_{k + 1}") for k, i in enumerate(front_to_back)]


def _forward(rig, legs):
    """Unit horizontal direction the character faces: where its feet point."""
    total = np.zeros(3)
    for leg in legs:
        ball = rig.heads[leg.toe] if leg.toe is not None else rig.tails[leg.foot]
        step = rig.horizontal(ball - rig.heads[leg.foot])
        length = _length(step)
        if length > _TINY * rig.size:
            total += step / length
    length = _length(total)
    if length > 0.5 * len(legs):
        return total / length
    # Feet pointing down or disagreeing: Blender characters face -Y; Y-up data faces +Z.
    guess = rig.horizontal(np.array([0.0, -1.0, 0.0]))
    if _length(guess) < 0.5:
        guess = rig.horizontal(np.array([0.0, 0.0, 1.0]))
    return guess / _length(guess)


def _length(vector):
    """``np.linalg.norm`` of one vector, the same number without its wrapper's cost."""
    return math.sqrt(vector.dot(vector))


def _lengths(vectors):
    """``np.linalg.norm(vectors, axis=1)`` of vectors (n, 3): the same numbers (its own sum
    of squares), without its wrapper's cost."""
    return np.sqrt(np.add.reduce(vectors * vectors, axis=1))


def _side_by_position(rig, pelvis, leg, left):
    offset = (rig.heads[leg.thigh] - rig.heads[pelvis]) @ left
    if abs(offset) <= 0.05 * rig.lengths[leg.thigh]:
        return None  # on the midline: no side to tell
    return "left" if offset > 0 else "right"
