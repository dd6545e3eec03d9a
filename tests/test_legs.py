"""Leg detection on synthetic skeletons of each naming convention and on real CMU BVH files.

Synthetic rigs are in metres, Blender's convention: Z up, the character faces -Y, its left
side is at +X. Pure numpy: no bpy.
"""

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from foot_lock.solvers.leg_detection import LegDetectionError, detect_legs, parse_bone_name
from foot_lock.solvers.quaternion import to_matrix

ASSETS = Path(__file__).parent / "data" / "assets"

LEFT, RIGHT = 1, -1


class Rig:
    """A skeleton built bone by bone, parents by name."""

    def __init__(self):
        self.names, self.parents, self.heads, self.tails = [], [], [], []

    def add(self, name, parent, head, tail):
        self.names.append(name)
        self.parents.append(-1 if parent is None else self.names.index(parent))
        self.heads.append(head)
        self.tails.append(tail)
        return name

    def chain(self, parent, names, points):
        """Bones ``names`` connected head to tail through ``points`` (one more than names)."""
        for name, head, tail in zip(names, points, points[1:]):
            parent = self.add(name, parent, head, tail)
        return parent

    def arrays(self):
        return self.names, self.parents, np.array(self.heads, float), np.array(self.tails, float)

    def detect(self, **kwargs):
        return detect_legs(*self.arrays(), **kwargs)


def leg_points(side):
    """Hip, knee, ankle, ball, toe tip and a toe-end stub beyond it."""
    x = 0.1 * side
    return [
        (x, 0.0, 0.95),
        (x, -0.03, 0.52),
        (1.1 * x, 0.02, 0.09),
        (1.2 * x, -0.1, 0.02),
        (1.2 * x, -0.17, 0.02),
        (1.2 * x, -0.2, 0.02),
    ]


def add_leg(rig, parent, side, names):
    """A leg from the hip down; ``names`` are thigh, shin, foot, then optional toe and toe end."""
    return rig.chain(parent, names, leg_points(side)[: len(names) + 1])


def add_spine_and_arms(rig, pelvis, spine, arm_names):
    """Spine straight up from the pelvis; arms hang down in A-pose, hands well above the knees."""
    chest = rig.chain(pelvis, spine, [(0, 0, 1.1 + 0.15 * k) for k in range(len(spine) + 1)])
    for side in (LEFT, RIGHT):
        names = [name.format(side="Left" if side == LEFT else "Right") for name in arm_names]
        points = [
            (0.02 * side, 0, 1.45),
            (0.18 * side, 0, 1.45),
            (0.3 * side, 0, 1.2),
            (0.38 * side, -0.05, 0.95),
        ]
        rig.chain(chest, names, points + [(0.42 * side, -0.05, 0.8)])


def biped(pelvis, thigh, shin, foot, toe=None, toe_end=None, spine=("Spine", "Chest", "Neck")):
    """A biped whose leg names are templates with ``{side}`` = Left/Right."""
    rig = Rig()
    rig.add(pelvis, None, (0, 0, 1.0), (0, 0, 1.1))
    add_spine_and_arms(rig, pelvis, spine, ["{side}Shoulder", "{side}Arm", "{side}ForeArm", "{side}Hand"])
    for side, word in ((LEFT, "Left"), (RIGHT, "Right")):
        names = [name.format(side=word) for name in (thigh, shin, foot, toe, toe_end) if name]
        add_leg(rig, pelvis, side, names)
    return rig


def legs_by_side(guess, names):
    return {
        leg.side: tuple(
            None if bone is None else names[bone] for bone in (leg.thigh, leg.shin, leg.foot, leg.toe)
        )
        for leg in guess.legs
    }


def both_sides(template):
    return {
        side: tuple(None if n is None else n.format(side=word) for n in template)
        for side, word in (("left", "Left"), ("right", "Right"))
    }


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, core, side, segment",
    [
        ("mixamorig:LeftUpLeg", "upleg", "left", 0),
        ("DEF-thigh.L.001", "thigh", "left", 1),
        ("thigh_twist_01_l", "thightwist", "left", 1),
        ("Bip01 R Toe0", "toe", "right", 0),
        ("Bip01 L Toe0Nub", "toe0nub", "left", 0),
        ("LHipJoint", "hipjoint", "left", 0),
        ("LeftHip", "hip", "left", 0),
        ("Hips", "hips", None, 0),
        ("CC_Base_R_Calf", "calf", "right", 0),
        ("LeftToe_End", "toeend", "left", 0),
        ("lThighBend", "thighbend", "left", 0),
        ("J_Bip_C_Hips", "hips", None, 0),
        ("upperleg02.L", "upperleg", "left", 2),
    ],
)
def test_parse_bone_name(name, core, side, segment):
    parsed = parse_bone_name(name)
    assert (parsed.core, parsed.side, parsed.segment) == (core, side, segment)


@pytest.mark.parametrize(
    "name, core, side, row",
    [
        ("LeftFrontUpLeg", "upleg", "left", "front"),
        ("FrontRightLeg", "leg", "right", "front"),
        ("thigh_hind.L", "thigh", "left", "back"),
        ("LeftUpLeg", "upleg", "left", None),
        ("LeftForeArm", "forearm", "left", None),
        ("Back", "back", None, None),
    ],
)
def test_parse_bone_name_reads_the_row_of_a_pair_of_legs(name, core, side, row):
    parsed = parse_bone_name(name)
    assert (parsed.core, parsed.side, parsed.row) == (core, side, row)


def test_parse_bone_name_ranks_rigify_families():
    families = [parse_bone_name(name).family for name in ("DEF-shin.L", "shin.L", "ORG-shin.L", "MCH-shin.L")]
    assert families == sorted(families) and len(set(families)) == 4


def test_mixamo():
    rig = biped(
        "mixamorig:Hips",
        "mixamorig:{side}UpLeg",
        "mixamorig:{side}Leg",
        "mixamorig:{side}Foot",
        "mixamorig:{side}ToeBase",
        "mixamorig:{side}Toe_End",
    )
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "mixamorig:Hips"
    assert legs_by_side(guess, rig.names) == both_sides(
        ("mixamorig:{side}UpLeg", "mixamorig:{side}Leg", "mixamorig:{side}Foot", "mixamorig:{side}ToeBase")
    )


def test_lafan():
    rig = biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot", "{side}Toe")
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "Hips"
    assert legs_by_side(guess, rig.names) == both_sides(
        ("{side}UpLeg", "{side}Leg", "{side}Foot", "{side}Toe")
    )


def cmu_rig(thigh, shin, foot, toe):
    """As Blender imports a CMU BVH: a hip-joint bone from the pelvis centre to each hip."""
    rig = Rig()
    rig.add("Hips", None, (0, 0, 1.0), (0, 0, 1.0056))  # zero offsets, nudged by the importer
    add_spine_and_arms(
        rig,
        "Hips",
        ["LowerBack", "Spine", "Neck"],
        ["{side}Shoulder", "{side}Arm", "{side}ForeArm", "{side}Hand"],
    )
    for side, letter, word in ((LEFT, "L", "Left"), (RIGHT, "R", "Right")):
        joint = rig.add(f"{letter}HipJoint", "Hips", (0, 0, 1.0), leg_points(side)[0])
        add_leg(rig, joint, side, [name.format(side=word) for name in (thigh, shin, foot, toe)])
    return rig


@pytest.mark.parametrize(
    "names",
    [
        ("{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase"),
        ("{side}Hip", "{side}Knee", "{side}Ankle", "{side}Toe"),
    ],
    ids=["cmu", "cmu_131"],
)
def test_cmu_skips_the_hip_joint(names):
    rig = cmu_rig(*names)
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "Hips"
    assert legs_by_side(guess, rig.names) == both_sides(names)


def test_rigify_deform_bones_with_twist_segments():
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, 0.4, 0))
    rig.add("DEF-spine", "root", (0, 0.02, 1.0), (0, 0, 1.1))
    add_spine_and_arms(
        rig,
        "DEF-spine",
        ["DEF-spine.001", "DEF-spine.002", "DEF-spine.003"],
        ["DEF-shoulder.{side}", "DEF-upper_arm.{side}", "DEF-forearm.{side}", "DEF-hand.{side}"],
    )
    for side, letter in ((LEFT, "L"), (RIGHT, "R")):
        hip, knee, ankle, ball, tip, _ = leg_points(side)
        pelvis_side = rig.add(f"DEF-pelvis.{letter}", "DEF-spine", (0, 0.02, 1.0), (0.1 * side, -0.1, 1.05))
        half_thigh, half_shin = np.add(hip, knee) / 2, np.add(knee, ankle) / 2
        bones = ("thigh", "thigh.{}.001", "shin", "shin.{}.001", "foot", "toe")
        rig.chain(
            pelvis_side,
            ["DEF-" + (bone.format(letter) if "{" in bone else f"{bone}.{letter}") for bone in bones],
            [hip, half_thigh, knee, half_shin, ankle, ball, tip],
        )
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "DEF-spine"
    assert legs_by_side(guess, rig.names) == {
        side: (f"DEF-thigh.{letter}", f"DEF-shin.{letter}", f"DEF-foot.{letter}", f"DEF-toe.{letter}")
        for side, letter in (("left", "L"), ("right", "R"))
    }


def test_rigify_prefers_deform_bones_over_org_and_controls():
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, 0.4, 0))
    for family in ("ORG-", "", "DEF-"):  # controls ("thigh_fk.L") and ORG listed before DEF
        rig.add(f"{family}spine", "root", (0, 0.02, 1.0), (0, 0, 1.1))
        for side, letter in ((LEFT, "L"), (RIGHT, "R")):
            words = (
                ("thigh_fk", "shin_fk", "foot_fk", "toe_fk")
                if not family
                else ("thigh", "shin", "foot", "toe")
            )
            add_leg(rig, f"{family}spine", side, [f"{family}{word}.{letter}" for word in words])
    rig.add("foot_ik.L", "root", leg_points(LEFT)[2], leg_points(LEFT)[3])
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "DEF-spine"
    assert legs_by_side(guess, rig.names)["left"] == ("DEF-thigh.L", "DEF-shin.L", "DEF-foot.L", "DEF-toe.L")


def test_rigify_metarig_finds_the_toe_and_ignores_the_heel():
    rig = Rig()
    rig.add("spine", None, (0, 0.02, 1.0), (0, 0, 1.1))
    for side, letter in ((LEFT, "L"), (RIGHT, "R")):
        add_leg(rig, "spine", side, [f"thigh.{letter}", f"shin.{letter}", f"foot.{letter}", f"toe.{letter}"])
        rig.add(f"heel.02.{letter}", f"foot.{letter}", (0.08 * side, 0.05, 0.0), (0.14 * side, 0.05, 0.0))
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "spine"
    assert legs_by_side(guess, rig.names)["right"] == ("thigh.R", "shin.R", "foot.R", "toe.R")


def test_unreal_mannequin_ignores_twist_and_ik_bones():
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, 0.3, 0))
    rig.add("pelvis", "root", (0, 0, 1.0), (0, 0, 1.1))
    add_spine_and_arms(
        rig,
        "pelvis",
        ["spine_01", "spine_02", "neck_01"],
        ["clavicle_{side}", "upperarm_{side}", "lowerarm_{side}", "hand_{side}"],
    )
    rig.add("ik_foot_root", "root", (0, 0, 0), (0, 0, 0.1))
    for side, letter in ((LEFT, "l"), (RIGHT, "r")):
        hip, knee, ankle, ball, tip, _ = leg_points(side)
        rig.add(f"thigh_{letter}", "pelvis", hip, knee)
        rig.add(f"thigh_twist_01_{letter}", f"thigh_{letter}", hip, np.add(hip, knee) / 2)
        rig.chain(
            f"thigh_{letter}",
            [f"calf_{letter}", f"foot_{letter}", f"ball_{letter}"],
            [knee, ankle, ball, tip],
        )
        rig.add(f"calf_twist_01_{letter}", f"calf_{letter}", np.add(knee, ankle) / 2, ankle)
        rig.add(f"ik_foot_{letter}", "ik_foot_root", ankle, ball)
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "pelvis"
    assert legs_by_side(guess, rig.names) == {
        side: (f"thigh_{letter}", f"calf_{letter}", f"foot_{letter}", f"ball_{letter}")
        for side, letter in (("left", "l"), ("right", "r"))
    }


def test_3ds_max_biped_pelvis_above_the_thighs_parent():
    rig = Rig()
    rig.add("Bip01", None, (0, 0, 1.0), (0, -0.05, 1.0))
    rig.add("Bip01 Pelvis", "Bip01", (0, 0, 1.0), (0, 0, 1.05))
    add_spine_and_arms(
        rig,
        "Bip01 Pelvis",
        ["Bip01 Spine", "Bip01 Spine1", "Bip01 Neck"],
        ["Bip01 {side} Clavicle", "Bip01 {side} UpperArm", "Bip01 {side} Forearm", "Bip01 {side} Hand"],
    )
    for side, letter in ((LEFT, "L"), (RIGHT, "R")):
        words = ("Thigh", "Calf", "Foot", "Toe0", "Toe0Nub")
        add_leg(rig, "Bip01 Spine", side, [f"Bip01 {letter} {word}" for word in words])
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "Bip01 Pelvis"
    assert legs_by_side(guess, rig.names)["left"] == (
        "Bip01 L Thigh",
        "Bip01 L Calf",
        "Bip01 L Foot",
        "Bip01 L Toe0",
    )


def test_character_creator_skips_twist_bones_and_moves_the_hip_that_carries_the_waist():
    """Character Creator hangs the legs on CC_Base_Pelvis and the spine on its sibling
    CC_Base_Waist, both under CC_Base_Hip: the pelvis correction goes on the hip, or it
    would move the legs away from the waist."""
    rig = Rig()
    rig.add("CC_Base_BoneRoot", None, (0, 0, 0), (0, 0, 0.1))
    rig.add("CC_Base_Hip", "CC_Base_BoneRoot", (0, 0, 1.0), (0, 0, 1.05))
    rig.add("CC_Base_Pelvis", "CC_Base_Hip", (0, 0, 1.0), (0, 0, 0.95))
    add_spine_and_arms(rig, "CC_Base_Hip", ["CC_Base_Waist", "CC_Base_Spine01", "CC_Base_Spine02"],
                       ["CC_Base_{side}_Clavicle", "CC_Base_{side}_Upperarm", "CC_Base_{side}_Forearm",
                        "CC_Base_{side}_Hand"])
    for side, letter in ((LEFT, "L"), (RIGHT, "R")):
        hip, knee = leg_points(side)[:2]
        rig.add(f"CC_Base_{letter}_ThighTwist01", "CC_Base_Pelvis", hip, np.add(hip, knee) / 2)
        add_leg(
            rig,
            "CC_Base_Pelvis",
            side,
            [f"CC_Base_{letter}_{w}" for w in ("Thigh", "Calf", "Foot", "ToeBase")],
        )
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "CC_Base_Hip"
    assert legs_by_side(guess, rig.names)["left"] == (
        "CC_Base_L_Thigh",
        "CC_Base_L_Calf",
        "CC_Base_L_Foot",
        "CC_Base_L_ToeBase",
    )


def test_daz_genesis_moves_the_hip_above_its_pelvis_and_abdomen():
    """Genesis 8: hip -> pelvis -> thighs (a bend and a twist bone each), hip -> abdomen."""
    rig = Rig()
    rig.add("hip", None, (0, 0, 1.0), (0, 0, 0.95))
    rig.add("pelvis", "hip", (0, 0, 1.0), (0, 0, 0.9))
    add_spine_and_arms(rig, "hip", ["abdomenLower", "abdomenUpper", "chestLower", "neckLower", "head"],
                       ["{side}Collar", "{side}ShldrBend", "{side}ForearmBend", "{side}Hand"])
    for side, letter in ((LEFT, "l"), (RIGHT, "r")):
        hip, knee, ankle, ball, tip, _ = leg_points(side)
        middle = np.add(hip, knee) / 2
        rig.chain("pelvis", [f"{letter}ThighBend", f"{letter}ThighTwist", f"{letter}Shin", f"{letter}Foot"],
                  [hip, middle, knee, ankle, np.add(ankle, ball) / 2])
        rig.chain(f"{letter}Foot", [f"{letter}Metatarsals", f"{letter}Toe"], [np.add(ankle, ball) / 2, ball, tip])
    guess = rig.detect()
    assert rig.names[guess.pelvis] == "hip"
    assert legs_by_side(guess, rig.names)["right"] == ("rThighBend", "rShin", "rFoot", "rToe")


def test_a_root_on_the_floor_with_a_prop_above_the_head_is_not_the_pelvis():
    """The topmost point may hang from a root bone on the floor (a prop, an IK target
    parented to the root): the body is still carried by the hips, not by the root."""
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, 0.2, 0))
    rig.add("Hips", "root", (0, 0, 1.0), (0, 0, 1.1))
    add_spine_and_arms(rig, "Hips", ["Spine", "Chest", "Neck"], ["{side}Shoulder", "{side}Arm", "{side}ForeArm",
                                                               "{side}Hand"])
    for side, word in ((LEFT, "Left"), (RIGHT, "Right")):
        add_leg(rig, "Hips", side, [f"{word}UpLeg", f"{word}Leg", f"{word}Foot", f"{word}ToeBase"])
    rig.add("prop", "root", (0.3, 0, 2.2), (0.3, 0, 2.4))
    assert rig.names[rig.detect().pelvis] == "Hips"


def test_named_foot_without_toe_bone():
    rig = biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot")
    guess = rig.detect()
    assert legs_by_side(guess, rig.names)["left"] == ("LeftUpLeg", "LeftLeg", "LeftFoot", None)


def test_named_foot_with_an_unnamed_toe_takes_it_by_shape_not_the_heel():
    rig = biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot")
    for side, word in ((LEFT, "Left"), (RIGHT, "Right")):
        ankle, ball, tip = leg_points(side)[2:5]
        rig.add(f"{word}Heel", f"{word}Foot", ankle, np.add(ankle, (0, 0.08, 0)))  # flat, pointing back
        rig.add(f"{word}Digits", f"{word}Foot", ball, tip)
    guess = rig.detect()
    assert legs_by_side(guess, rig.names)["right"] == ("RightUpLeg", "RightLeg", "RightFoot", "RightDigits")


def test_one_misnamed_side_falls_back_to_topology():
    rig = biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase")
    rig.names = [name.replace("RightUpLeg", "Thing").replace("RightLeg", "Other") for name in rig.names]
    guess = rig.detect()
    assert legs_by_side(guess, rig.names) == {
        "left": ("LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase"),
        "right": ("Thing", "Other", "RightFoot", "RightToeBase"),
    }


# --- hierarchy and rest pose ---------------------------------------------------------------


def unnamed(rig):
    """The same rig with every bone called "Bone", "Bone.001", ...: only topology is left."""
    renamed = Rig()
    renamed.names = ["Bone"] + [f"Bone.{k:03d}" for k in range(1, len(rig.names))]
    renamed.parents, renamed.heads, renamed.tails = rig.parents, rig.heads, rig.tails
    return renamed, dict(zip(rig.names, renamed.names))


def expect_unnamed(original, guess, renamed, pelvis, legs):
    """Compare a guess on the unnamed rig with bone names of the original rig."""
    back = {new: old for old, new in original.items()}
    assert back[renamed.names[guess.pelvis]] == pelvis
    found = {
        side: tuple(None if n is None else back[n] for n in bones)
        for side, bones in legs_by_side(guess, renamed.names).items()
    }
    assert found == legs


MIXAMO_LEGS = both_sides(("{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase"))


def test_unnamed_biped_with_arms_and_toe_end_bones():
    rig, names = unnamed(
        biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase", "{side}Toe_End")
    )
    guess = rig.detect()
    expect_unnamed(names, guess, rig, "Hips", MIXAMO_LEGS)


def test_unnamed_unreal_rig_ignores_twist_leaves():
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, 0.3, 0))
    rig.add("pelvis", "root", (0, 0, 1.0), (0, 0, 1.1))
    add_spine_and_arms(
        rig, "pelvis", ["spine_01", "spine_02", "neck_01"], ["c_{side}", "u_{side}", "l_{side}", "h_{side}"]
    )
    for side, word in ((LEFT, "Left"), (RIGHT, "Right")):
        hip, knee, ankle, ball, tip, _ = leg_points(side)
        rig.add(f"{word}Twist", "pelvis", hip, np.add(hip, knee) / 3)  # a helper leaf beside the thigh
        rig.add(f"{word}UpLeg", "pelvis", hip, knee)
        rig.add(f"{word}UpLegTwist", f"{word}UpLeg", hip, np.add(hip, knee) / 2)
        rig.chain(f"{word}UpLeg", [f"{word}Leg", f"{word}Foot", f"{word}ToeBase"], [knee, ankle, ball, tip])
        rig.add(f"{word}LegTwist", f"{word}Leg", np.add(knee, ankle) / 2, ankle)
    renamed, names = unnamed(rig)
    expect_unnamed(names, renamed.detect(), renamed, "pelvis", MIXAMO_LEGS)


def test_unnamed_hip_joints_of_zero_length_and_a_root_above_the_pelvis():
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, -0.3, 0))
    rig.add("Hips", "root", (0, 0, 1.0), (0, 0, 1.1))
    add_spine_and_arms(rig, "Hips", ["Spine", "Chest", "Neck"], ["c{side}", "u{side}", "f{side}", "h{side}"])
    for side, word in ((LEFT, "Left"), (RIGHT, "Right")):
        hip = leg_points(side)[0]
        joint = rig.add(f"{word}HipJoint", "Hips", hip, hip)
        add_leg(rig, joint, side, [f"{word}UpLeg", f"{word}Leg", f"{word}Foot", f"{word}ToeBase"])
    renamed, names = unnamed(rig)
    expect_unnamed(names, renamed.detect(), renamed, "Hips", MIXAMO_LEGS)


def turned(rig, matrix):
    moved = Rig()
    moved.names, moved.parents = rig.names, rig.parents
    moved.heads = list(np.array(rig.heads, float) @ matrix.T)
    moved.tails = list(np.array(rig.tails, float) @ matrix.T)
    return moved


Z_UP_TO_Y_UP = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], float)  # -90 deg about X: faces +Z like a BVH
FACE_PLUS_X = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]], float)  # +90 deg about Z


@pytest.mark.parametrize(
    "matrix, up",
    [
        (100 * Z_UP_TO_Y_UP, (0, 1, 0)),  # centimetres, Y up
        (0.01 * FACE_PLUS_X, (0, 0, 1)),  # tiny units, facing +X
        (Z_UP_TO_Y_UP @ FACE_PLUS_X, (0, 1, 0)),  # Y up and facing -X
    ],
    ids=["cm_y_up", "small_facing_x", "y_up_facing_x"],
)
def test_unnamed_biped_in_any_unit_and_orientation(matrix, up):
    rig, names = unnamed(
        biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase", "{side}Toe_End")
    )
    rig = turned(rig, matrix)
    expect_unnamed(names, rig.detect(up=up), rig, "Hips", MIXAMO_LEGS)


def test_names_still_win_in_centimetres_with_y_up():
    rig = turned(
        biped("mixamorig:Hips", "mixamorig:{side}UpLeg", "mixamorig:{side}Leg", "mixamorig:{side}Foot"),
        100 * Z_UP_TO_Y_UP,
    )
    guess = rig.detect(up=(0, 1, 0))
    assert legs_by_side(guess, rig.names)["right"][0] == "mixamorig:RightUpLeg"


def quadruped():
    """A dog facing -Y: hind legs from the pelvis, front legs (with a scapula) from the chest."""
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, -0.2, 0))
    rig.add("pelvis", "root", (0, 0.5, 0.8), (0, 0.3, 0.8))
    rig.chain("pelvis", ["spine", "chest"], [(0, 0.3, 0.8), (0, -0.1, 0.82), (0, -0.5, 0.85)])
    rig.chain("chest", ["neck", "head"], [(0, -0.5, 0.85), (0, -0.7, 1.1), (0, -0.9, 1.1)])
    rig.chain(
        "pelvis",
        ["tail", "tail.001", "tail.002"],
        [(0, 0.5, 0.8), (0, 0.7, 0.75), (0, 0.9, 0.6), (0, 1.0, 0.45)],
    )
    for side, letter in ((LEFT, "L"), (RIGHT, "R")):
        x = 0.15 * side
        hind = [(x, 0.5, 0.75), (x, 0.4, 0.48), (x, 0.55, 0.22), (x, 0.52, 0.02), (x, 0.44, 0.01)]
        rig.chain("pelvis", [f"hind{k}.{letter}" for k in range(4)], hind)
        front = [
            (0.08 * side, -0.45, 0.9),
            (x, -0.5, 0.75),
            (x, -0.45, 0.45),
            (x, -0.5, 0.12),
            (x, -0.52, 0.02),
            (x, -0.6, 0.01),
        ]
        rig.chain("chest", [f"front{k}.{letter}" for k in range(5)], front)
    return rig


def test_unnamed_quadruped_front_and_back():
    rig, names = unnamed(quadruped())
    guess = rig.detect()
    sides = ("front_left", "front_right", "back_left", "back_right")
    assert [leg.side for leg in guess.legs] == list(sides)
    expect_unnamed(
        names,
        guess,
        rig,
        "pelvis",
        {
            "front_left": ("front1.L", "front2.L", "front3.L", "front4.L"),
            "front_right": ("front1.R", "front2.R", "front3.R", "front4.R"),
            "back_left": ("hind0.L", "hind1.L", "hind2.L", "hind3.L"),
            "back_right": ("hind0.R", "hind1.R", "hind2.R", "hind3.R"),
        },
    )


def named_quadruped(front, hind):
    """The dog with named legs: ``front`` and ``hind`` are templates for (scapula, thigh,
    shin, foot, toe) and (thigh, shin, foot, toe) with ``{side}`` = Left/Right."""
    rig = quadruped()
    for side, letter in (("Left", "L"), ("Right", "R")):
        names = {f"front{k}.{letter}": template.format(side=side) for k, template in enumerate(front)}
        names |= {f"hind{k}.{letter}": template.format(side=side) for k, template in enumerate(hind)}
        rig.names = [names.get(name, name) for name in rig.names]
    return rig


FRONT_ROW = (
    "{side}FrontShoulder",
    "{side}FrontUpLeg",
    "{side}FrontLeg",
    "{side}FrontFoot",
    "{side}FrontToeBase",
)
HUMAN_ROW = ("{side}HipJoint", "{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase")


@pytest.mark.parametrize(
    "front, hind",
    [
        (HUMAN_ROW, [name.replace("Front", "Back") for name in FRONT_ROW[1:]]),  # human names in front
        (FRONT_ROW, HUMAN_ROW[1:]),  # human names behind, "LeftFront" in front
    ],
)
def test_quadruped_with_human_names_beside_front_names_has_four_legs(front, hind):
    rig = named_quadruped(front, hind)
    guess = rig.detect()
    assert legs_by_side(guess, rig.names) == {
        "front_left": tuple(name.format(side="Left") for name in front[1:]),
        "front_right": tuple(name.format(side="Right") for name in front[1:]),
        "back_left": tuple(name.format(side="Left") for name in hind),
        "back_right": tuple(name.format(side="Right") for name in hind),
    }
    assert rig.names[guess.pelvis] == "pelvis"


def test_quadruped_naming_only_its_hind_legs_gets_the_front_pair_from_the_hierarchy():
    rig = named_quadruped(("a{side}", "b{side}", "c{side}", "d{side}", "e{side}"), HUMAN_ROW[1:])
    assert legs_by_side(rig.detect(), rig.names) == {
        "front_left": ("bLeft", "cLeft", "dLeft", "eLeft"),
        "front_right": ("bRight", "cRight", "dRight", "eRight"),
        "back_left": ("LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase"),
        "back_right": ("RightUpLeg", "RightLeg", "RightFoot", "RightToeBase"),
    }


def test_chains_beside_named_legs_at_their_own_branch_are_not_legs():
    """A floor-length skirt hangs from the pelvis beside the named legs: still two legs."""
    rig = biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase")
    for side, word in ((LEFT, "L"), (RIGHT, "R")):
        x = 0.15 * side
        rig.chain(
            "Hips",
            [f"skirt{k}.{word}" for k in range(3)],
            [(x, -0.1, 0.95), (x, -0.15, 0.6), (x, -0.2, 0.3), (x, -0.25, 0.02)],
        )
    assert sorted(legs_by_side(rig.detect(), rig.names)) == ["left", "right"]


def test_ankle_named_joint_above_a_foot_named_one_is_the_foot():
    """SMPL / Xsens style: a bone per joint, ``left_ankle`` -> ``left_foot`` (the ball)."""
    rig = biped("pelvis", "{side}_hip", "{side}_knee", "{side}_ankle", "{side}_foot")
    rig.names = [name.replace("Left_", "left_").replace("Right_", "right_") for name in rig.names]
    assert legs_by_side(rig.detect(), rig.names) == {
        "left": ("left_hip", "left_knee", "left_ankle", "left_foot"),
        "right": ("right_hip", "right_knee", "right_ankle", "right_foot"),
    }


def test_legs_on_the_midline_are_numbered():
    rig = Rig()
    rig.add("body", None, (0, 0, 1.0), (0, 0, 1.2))
    for k, y in enumerate((-0.3, 0.3)):  # one leg in front of the other, both on the midline
        rig.chain(
            "body", [f"a{k}", f"b{k}", f"c{k}"], [(0, y, 0.95), (0, y, 0.5), (0, y, 0.08), (0, y - 0.1, 0.0)]
        )
    guess = rig.detect()
    assert [leg.side for leg in guess.legs] == ["leg_1", "leg_2"]
    assert rig.names[guess.legs[0].thigh] == "a0"  # front (-Y) first


# --- no legs -------------------------------------------------------------------------------


def snake():
    rig = Rig()
    points = [(0, -0.3 * k, 0.02) for k in range(11)]
    rig.chain(None, [f"spine.{k:03d}" for k in range(10)], points)
    return rig


def single_bone():
    rig = Rig()
    rig.add("Bone", None, (0, 0, 0), (0, 0, 1))
    return rig


def two_bone_stilts():
    """Two chains down to the ground from one bone, but of two bones each: no thigh-shin-foot."""
    rig = Rig()
    rig.add("Body", None, (0, 0, 1.0), (0, 0, 1.2))
    for side in (LEFT, RIGHT):
        rig.chain(
            "Body",
            [f"Stilt{side}", f"Pole{side}"],
            [(0.1 * side, 0, 1.0), (0.1 * side, 0, 0.5), (0.1 * side, 0, 0)],
        )
    return rig


@pytest.mark.parametrize("make", [snake, single_bone, two_bone_stilts])
def test_no_legs_raises_a_clear_error(make):
    with pytest.raises(LegDetectionError, match="no leg chains found: expected bones named like thigh"):
        make().detect()


def one_bone_legs():
    """Kenney's mini characters: a root, one bone per leg, a torso with arms and head."""
    rig = Rig()
    rig.add("root", None, (0, 0, 0), (0, 0, 0.18))
    for side, word in ((LEFT, "left"), (RIGHT, "right")):
        rig.add(f"leg-{word}", "root", (0.084 * side, 0.03, 0.18), (0.084 * side, 0.03, 0.36))
    rig.add("torso", "root", (0, 0.03, 0.18), (0, 0.03, 0.33))
    rig.add("head", "torso", (0, 0, 0.34), (0, 0, 0.49))
    return rig


def test_legs_without_a_foot_are_named_in_the_error():
    with pytest.raises(
        LegDetectionError,
        match=r"'leg-left', 'leg-right' look like legs, but each leg is only 1 bone long, with no foot",
    ):
        one_bone_legs().detect()


def test_kenney_rig_without_feet_is_told_so():
    names, parents, heads, tails = read_gltf_rest(ASSETS / "kenney_mini_character-male-a.glb")
    with pytest.raises(LegDetectionError, match="no foot below it"):
        detect_legs(names, parents, heads, tails, up=(0, 1, 0))


def test_bad_input_raises():
    rig = biped("Hips", "{side}UpLeg", "{side}Leg", "{side}Foot")
    names, parents, heads, tails = rig.arrays()
    with pytest.raises(LegDetectionError, match="expected"):
        detect_legs(names, parents[:-1], heads, tails)
    with pytest.raises(LegDetectionError, match="up must be"):
        detect_legs(names, parents, heads, tails, up=(0, 0, 0))


# --- real CMU BVH hierarchies ----------------------------------------------------------------


def read_bvh_rest(path):
    """Bones as Blender's BVH importer makes them: a bone per joint, head at the joint, tail at
    its End Site, its only child, or the mean of its children; zero-length bones nudged up."""
    names, parents, heads, ends, stack = [], [], [], {}, []
    for line in path.read_text().splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "MOTION":
            break
        if words[0] in ("ROOT", "JOINT"):
            parents.append(stack[-1] if stack else -1)
            names.append(" ".join(words[1:]))
            pending = len(names) - 1
        elif words[0] == "End":
            pending = "end"
        elif words[0] == "{":
            stack.append(pending)
        elif words[0] == "}":
            stack.pop()
        elif words[0] == "OFFSET":
            offset = np.array(words[1:4], float)
            if stack[-1] == "end":
                ends[stack[-2]] = heads[stack[-2]] + offset
            else:
                parent = parents[stack[-1]]
                heads.append(offset + (heads[parent] if parent >= 0 else 0))
    heads = np.array(heads)
    tails = heads.copy()
    for bone in range(len(names)):
        children = [c for c, p in enumerate(parents) if p == bone]
        tails[bone] = (
            ends[bone] if bone in ends else heads[children].mean(axis=0) if children else heads[bone]
        )
        if np.linalg.norm(tails[bone] - heads[bone]) <= 0.001:
            tails[bone] += (0, 0.1, 0)
    return names, parents, heads, tails


CMU_CHAINS = {
    "cmu_131_01.bvh": ("{side}Hip", "{side}Knee", "{side}Ankle", "{side}Toe"),
    "cmu_07_01.bvh": ("{side}UpLeg", "{side}Leg", "{side}Foot", "{side}ToeBase"),
}


@pytest.mark.parametrize("clip", sorted(CMU_CHAINS))
def test_real_cmu_hierarchy_by_name(clips_dir, clip):
    names, parents, heads, tails = read_bvh_rest(clips_dir / clip)
    guess = detect_legs(names, parents, heads, tails, up=(0, 1, 0))
    assert names[guess.pelvis] == "Hips"
    assert legs_by_side(guess, names) == both_sides(CMU_CHAINS[clip])


@pytest.mark.parametrize("clip", sorted(CMU_CHAINS))
def test_real_cmu_hierarchy_by_topology(clips_dir, clip):
    rig = Rig()
    rig.names, rig.parents, rig.heads, rig.tails = read_bvh_rest(clips_dir / clip)
    renamed, names = unnamed(rig)
    expect_unnamed(names, renamed.detect(up=(0, 1, 0)), renamed, "Hips", both_sides(CMU_CHAINS[clip]))


# --- a real glTF quadruped, read without Blender --------------------------------------------


def read_gltf_rest(path):
    """Bones of a .glb's first skin as Blender's glTF exporter writes them (Y-up): a head at
    each joint, the tail along the joint's own +Y axis, as long as the way to its nearest
    child (a leaf: as long as its parent)."""
    data = path.read_bytes()
    json_length = struct.unpack_from("<I", data, 12)[0]
    gltf = json.loads(data[20 : 20 + json_length])
    nodes = gltf["nodes"]
    parent_node = {child: node for node, item in enumerate(nodes) for child in item.get("children", ())}
    joints = gltf["skins"][0]["joints"]
    world = {}

    def world_matrix(node):
        if node not in world:
            item, local = nodes[node], np.eye(4)
            local[:3, :3] = to_matrix(np.roll(item.get("rotation", (0, 0, 0, 1)), 1)) * item.get(
                "scale", (1, 1, 1)
            )
            local[:3, 3] = item.get("translation", (0, 0, 0))
            above = parent_node.get(node)
            world[node] = local if above is None else world_matrix(above) @ local
        return world[node]

    heads = np.array([world_matrix(joint)[:3, 3] for joint in joints])
    parents = [
        joints.index(parent_node[joint]) if parent_node.get(joint) in joints else -1 for joint in joints
    ]
    lengths = np.zeros(len(joints))
    for bone in np.argsort([len(_node_ancestors(parent_node, joint)) for joint in joints]):
        children = [child for child, above in enumerate(parents) if above == bone]
        if children:
            lengths[bone] = min(np.linalg.norm(heads[children] - heads[bone], axis=1))
        if not children or lengths[bone] <= 0:
            lengths[bone] = lengths[parents[bone]] if parents[bone] >= 0 else 1.0
    axes = np.array([world_matrix(joint)[:3, 1] for joint in joints])
    tails = heads + axes / np.linalg.norm(axes, axis=1, keepdims=True) * lengths[:, None]
    return [nodes[joint]["name"] for joint in joints], parents, heads, tails


def _node_ancestors(parent_node, node):
    found = []
    while node in parent_node:
        node = parent_node[node]
        found.append(node)
    return found


FOX_LEGS = {
    "front_left": ("b_LeftUpperArm_09", "b_LeftForeArm_010", "b_LeftHand_011", None),
    "front_right": ("b_RightUpperArm_06", "b_RightForeArm_07", "b_RightHand_08", None),
    "back_left": ("b_LeftLeg01_015", "b_LeftLeg02_016", "b_LeftFoot01_017", "b_LeftFoot02_018"),
    "back_right": ("b_RightLeg01_019", "b_RightLeg02_020", "b_RightFoot01_021", "b_RightFoot02_022"),
}


def test_fox_has_four_legs_found_by_its_hierarchy():
    """The glTF fox's bone names say nothing about legs: "UpperArm" and "Leg01"."""
    names, parents, heads, tails = read_gltf_rest(ASSETS / "fox.glb")
    guess = detect_legs(names, parents, heads, tails, up=(0, 1, 0))
    assert names[guess.pelvis] == "b_Hip_01"
    assert legs_by_side(guess, names) == FOX_LEGS
