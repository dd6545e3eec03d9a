"""BVH files in and out of the solver core, including rigs whose root, not the pelvis,
carries the translation."""

import re

import numpy as np
import pytest
from clip_scenarios import CMU_TO_METRES, reference_labels, toe_positions
from foot_lock.solvers import bvh, metrics
from foot_lock.solvers.foot_lock import remove_foot_sliding
from foot_lock.solvers.kinematics import SolverInputError, forward_kinematics


def with_ground_root(text):
    """The same BVH with a new root joint carrying only the translation and the pelvis
    (``Hips``) only rotating: the column order, and so the motion data, stay the same."""
    head = "ROOT Hips\n{\n\tOFFSET 0.00000 0.00000 0.00000\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation \n"
    assert text.startswith("HIERARCHY\n" + head)
    new_head = (
        "ROOT Ground\n{\n\tOFFSET 0 0 0\n\tCHANNELS 3 Xposition Yposition Zposition\n"
        "JOINT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 3 Zrotation Yrotation Xrotation\n"
    )
    hierarchy, motion = text.split("MOTION", 1)
    hierarchy = "HIERARCHY\n" + new_head + hierarchy[len("HIERARCHY\n" + head):] + "}\n"
    return hierarchy + "MOTION" + motion


def test_a_pelvis_without_position_channels_moves_through_the_root(clips_dir, tmp_path):
    source = tmp_path / "ground_root.bvh"
    source.write_text(with_ground_root((clips_dir / "cmu_07_01.bvh").read_text()))
    sliding = bvh.write_sliding_copy(source, tmp_path / "sliding.bvh", 1.25)
    skeleton, motion, rig = bvh.load(sliding, CMU_TO_METRES)
    assert skeleton.names[rig.pelvis] == "Ground"
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    assert result.after["pelvis_deviation_cm"] > 0.1  # the solve did move the body
    fixed = tmp_path / "fixed.bvh"
    bvh.write(fixed, bvh.read(sliding), result.motion, CMU_TO_METRES, result.rotation_joints, result.location_joints)

    original = bvh.load(source, CMU_TO_METRES)
    reference = reference_labels(*original)
    skeleton, written, rig = bvh.load(fixed, CMU_TO_METRES)
    toes = toe_positions(skeleton, written, rig)
    assert 100.0 * metrics.toe_slide(toes, reference, bvh.UP, written.fps) < 1.0
    assert np.allclose(toes, toe_positions(skeleton, result.motion, rig), atol=1e-4)


def with_legs_beside_the_spine(path):
    """The CMU file with its hips laid out as Character Creator and Daz lay them out: the
    legs hang from a joint of their own (``Pelvis``, with position channels as MotionBuilder
    writes every joint, all zero) beside the spine, both under ``Hips``."""
    parsed = bvh.read(path)
    hierarchy = parsed.header[: parsed.header.index("MOTION")]
    legs, spine = hierarchy.index("JOINT LHipJoint"), hierarchy.index("JOINT LowerBack")
    pelvis = "JOINT Pelvis\n{\nOFFSET 0 0 0\nCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation\n"
    hierarchy = hierarchy[:legs] + pelvis + hierarchy[legs:spine] + "}\n" + hierarchy[spine:]
    values = np.hstack([parsed.values[:, :6], np.zeros((len(parsed.values), 6)), parsed.values[:, 6:]])
    rows = "\n".join(" ".join(f"{v:.6f}" for v in row) for row in values)
    return f"{hierarchy}MOTION\nFrames: {len(values)}\nFrame Time: {parsed.frame_time}\n{rows}\n"


def test_legs_hung_beside_the_spine_move_with_it(clips_dir, tmp_path):
    """The pelvis correction goes on the joint that carries legs and spine alike: put on the
    legs' own parent, it would pull the legs away from the body."""
    source = tmp_path / "beside.bvh"
    source.write_text(with_legs_beside_the_spine(clips_dir / "cmu_07_01.bvh"))
    skeleton, motion, rig = bvh.load(bvh.write_sliding_copy(source, tmp_path / "sliding.bvh", 1.25), CMU_TO_METRES)
    assert skeleton.names[rig.pelvis] == "Hips"
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    assert result.after["pelvis_deviation_cm"] > 0.1  # the solve did move the body
    spine, pelvis = skeleton.index("LowerBack"), skeleton.index("Pelvis")

    def spine_on_the_pelvis(state):
        _, gpos = forward_kinematics(skeleton, state.rot, state.pos)
        return gpos[:, spine] - gpos[:, pelvis]

    assert np.abs(spine_on_the_pelvis(result.motion) - spine_on_the_pelvis(motion)).max() < 1e-6


def test_legs_hung_beside_the_spine_move_with_it_in_blender(addon, clips_dir, tmp_path):
    """The same in Blender: Detect Legs picks the bone above both, and Remove Foot Sliding
    keys its location."""
    from blender_scenes import import_clip, world_joints

    source = tmp_path / "beside.bvh"
    source.write_text(with_legs_beside_the_spine(clips_dir / "cmu_07_01.bvh"))
    obj = import_clip(addon, bvh.write_sliding_copy(source, tmp_path / "sliding.bvh", 1.25))
    bones = ["LowerBack", "Pelvis"]
    before = world_joints(obj, bones)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert obj.foot_lock.pelvis == "Hips"
    after = world_joints(obj, bones)
    assert np.abs(after - before).max() > 0.01  # metres: the solve did move the body
    assert np.abs((after[:, 0] - after[:, 1]) - (before[:, 0] - before[:, 1])).max() < 1e-5


def test_writing_a_position_to_a_joint_without_position_channels_is_refused(clips_dir, tmp_path):
    parsed = bvh.read(clips_dir / "cmu_07_01.bvh")
    skeleton, motion = bvh.to_motion(parsed)
    knee = skeleton.index("LeftLeg")
    with pytest.raises(SolverInputError, match="no position channels"):
        bvh.write(tmp_path / "out.bvh", parsed, motion, 1.0, location_joints=[knee])


def test_unchanged_motion_is_written_back_verbatim(clips_dir, tmp_path):
    source = clips_dir / "cmu_131_01.bvh"
    parsed = bvh.read(source)
    _, motion = bvh.to_motion(parsed)
    bvh.write(tmp_path / "same.bvh", parsed, motion, 1.0)
    assert bvh.read(tmp_path / "same.bvh").tokens.tolist() == parsed.tokens.tolist()
    assert (tmp_path / "same.bvh").read_bytes().startswith(source.read_bytes()[: len(parsed.header)])


def test_a_motion_header_in_another_case_or_spaced_by_tabs_reads_as_blender_reads_it(clips_dir, tmp_path):
    source = clips_dir / "cmu_131_01.bvh"
    text = source.read_text()
    odd = text.replace("Frames:", "FRAMES:\t", 1).replace("Frame Time:", "frame\ttime:", 1)
    assert odd != text
    (tmp_path / "odd.bvh").write_text(odd)
    parsed, original = bvh.read(tmp_path / "odd.bvh"), bvh.read(source)
    assert parsed.frame_time == original.frame_time
    assert parsed.tokens.tolist() == original.tokens.tolist()


# --- position channels on every joint (MotionBuilder-style) -----------------------------


def six_channel_text(path):
    """The CMU file with every joint given six channels, positions first, whose values are
    the joint's OFFSET (MotionBuilder-style): the same motion in another layout."""
    parsed = bvh.read(path)
    hierarchy = parsed.header[: parsed.header.index("MOTION")]
    assert hierarchy.count("CHANNELS 3 Zrotation") == len([j for j in parsed.joints if not j.end_site]) - 1
    hierarchy = hierarchy.replace("CHANNELS 3 ", "CHANNELS 6 Xposition Yposition Zposition ")
    columns, at = [], 0
    for joint in parsed.joints:
        block = parsed.values[:, at : at + len(joint.channels)]
        at += len(joint.channels)
        if len(joint.channels) == 3:
            columns.append(np.tile(joint.offset, (len(block), 1)))
        columns.append(block)
    values = np.hstack(columns)
    rows = "\n".join(" ".join(f"{v:.6f}" for v in row) for row in values)
    return f"{hierarchy}MOTION\nFrames: {len(values)}\nFrame Time: {parsed.frame_time}\n{rows}\n"


def with_rest_lying_under_a_still_root(text, start=(0.0, 0.0, -80.0)):
    """A BVH whose every joint has position channels (:func:`six_channel_text`) laid out as
    Bandai Namco's motion dataset lays it out: the joints' OFFSETs (which the positions
    replace) turned to draw the rest pose lying along Z, and the hips hung from a root that
    never moves, their OFFSET the capture's ``start``. The same motion, standing along Y."""
    lines = text.replace("\r\n", "\n").split("\n")  # (the CMU files end some lines with CR LF)
    for at, line in enumerate(lines):
        words, indent = line.split(), line[: len(line) - len(line.lstrip())]
        if words == ["ROOT", "Hips"]:
            lines[at], lines[at + 2] = "JOINT Hips", indent + "OFFSET {} {} {}".format(*start)
        elif words[:1] == ["OFFSET"] and lines[at + 1].split()[:1] == ["CHANNELS"] and "Hips" not in lines[at - 2]:
            x, y, z = map(float, words[1:])
            lines[at] = f"{indent}OFFSET {x} {-z} {y}"
    hierarchy, motion = "\n".join(lines).split("MOTION\n", 1)
    hierarchy = hierarchy.replace("HIERARCHY\n", "HIERARCHY\nROOT joint_Root\n{\nOFFSET 0 0 0\n"
                                  "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n", 1)
    frames, frame_time, rows = motion.split("\n", 2)
    rows = "\n".join("0 0 0 0 0 0 " + row for row in rows.split("\n") if row)
    return f"{hierarchy}}}\nMOTION\n{frames}\n{frame_time}\n{rows}\n"


@pytest.fixture(scope="module")
def lying_rest(clips_dir, tmp_path_factory):
    """A sliding copy (root x1.25) of cmu_07_01 in :func:`with_rest_lying_under_a_still_root`'s
    layout, and the original clip's reference labels."""
    folder = tmp_path_factory.mktemp("lying")
    sliding = bvh.write_sliding_copy(clips_dir / "cmu_07_01.bvh", folder / "sliding.bvh", 1.25)
    source = folder / "lying_rest.bvh"
    source.write_text(with_rest_lying_under_a_still_root(six_channel_text(sliding)))
    return source, reference_labels(*bvh.load(clips_dir / "cmu_07_01.bvh", CMU_TO_METRES))


def test_a_clip_is_read_standing_as_it_plays_not_as_its_rest_pose_lies(lying_rest):
    """A rest pose is only what the OFFSETs draw. Read along the Z its rest pose stands
    along, the clip's still root was taken for the pelvis: it does not travel, so the walk
    read as one in place and nothing was locked ("ok", the feet sliding 31 cm/s)."""
    source, reference = lying_rest
    skeleton, motion, rig = bvh.load(source, CMU_TO_METRES)
    heads = bvh.rest_heads(bvh.read(source))
    assert np.ptp(heads[:, 2]) > 2.0 * np.ptp(heads[:, 1])  # the rest pose does lie along Z
    assert skeleton.names[rig.pelvis] == "Hips"
    assert [skeleton.names[leg.ankle] for leg in rig.legs] == ["LeftFoot", "RightFoot"]
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    assert result.warnings == []
    toes = toe_positions(skeleton, result.motion, rig)
    assert 100.0 * metrics.toe_slide(toes, reference, bvh.UP, motion.fps) < 1.0


def test_a_clip_is_read_standing_as_it_plays_in_blender(addon, lying_rest):
    """The same file imported into Blender: Detect Legs finds the hips as the pelvis, and
    Remove Foot Sliding locks the walk."""
    from blender_scenes import import_clip, world_joints

    source, reference = lying_rest
    obj = import_clip(addon, source)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert obj.foot_lock.pelvis == "Hips"
    toes = world_joints(obj, ["LeftToeBase", "RightToeBase"]).swapaxes(0, 1)
    assert 100.0 * metrics.toe_slide(toes, reference, (0.0, 0.0, 1.0), addon.context.scene.render.fps) < 1.0


def world_positions(path, scale=CMU_TO_METRES):
    skeleton, motion, _ = bvh.load(path, scale)
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    return skeleton, gpos


@pytest.fixture(scope="module")
def six_channels(clips_dir, tmp_path_factory):
    source = clips_dir / "cmu_07_01.bvh"
    path = tmp_path_factory.mktemp("six") / "six_channels.bvh"
    path.write_text(six_channel_text(source))
    return source, path


def test_position_channels_on_every_joint_replace_its_offset(six_channels):
    source, six = six_channels
    parsed = bvh.read(six)
    assert all(len(j.channels) == 6 for j in parsed.joints if not j.end_site)
    names, original = world_positions(source)
    same_names, moved = world_positions(six)
    assert same_names.names == names.names
    assert np.abs(moved - original).max() < 1e-4  # metres: the same pose, not OFFSET + position


def test_six_channels_per_joint_pose_as_blender_imports_them(blender, six_channels):
    """The BVH path and Blender's importer agree on the world position of every joint."""
    from blender_scenes import import_clip

    _, six = six_channels
    skeleton, ours = world_positions(six)
    obj = import_clip(blender, six)
    # Blender's importer turns BVH's Y-up into Z-up: (x, y, z) -> (x, -z, y).
    to_blender = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    scene = blender.context.scene
    names = [bone.name for bone in obj.pose.bones]
    for frame in range(0, len(ours), 25):
        scene.frame_set(scene.frame_start + frame)
        theirs = np.array([obj.matrix_world @ obj.pose.bones[name].head for name in names])
        expected = ours[frame, [skeleton.index(name) for name in names]] @ to_blender.T
        assert np.abs(theirs - expected).max() < 1e-4, frame


# --- files as other exporters write them ------------------------------------------------


def without_end_sites(text):
    """The BVH with no End Site blocks (some exporters write none): the toes end the legs."""
    return re.sub(r"\n\s*End Site\s*\{[^}]*\}", "", text)


@pytest.fixture(scope="module")
def no_end_sites(clips_dir, tmp_path_factory):
    """cmu_07_01 with its root sped up x1.25, with and without End Sites."""
    folder = tmp_path_factory.mktemp("ends")
    source = folder / "no_end_sites.bvh"
    source.write_text(without_end_sites((clips_dir / "cmu_07_01.bvh").read_text()))
    return [bvh.write_sliding_copy(path, folder / f"sliding_{path.stem}.bvh", 1.25)
            for path in (clips_dir / "cmu_07_01.bvh", source)]


def test_a_toe_without_an_end_site_is_a_toe_bone_whose_heel_is_pinned(no_end_sites):
    """A toe joint with no End Site is still a toe bone (Blender draws its tip 0.1 units up):
    heel and ball are labelled and pinned as in the file with End Sites. It was taken for a
    rig without toe bones, and every heel contact was dropped (heel strikes slid up to 76
    cm/s)."""
    with_ends, without = (bvh.load(path, CMU_TO_METRES) for path in no_end_sites)
    assert "End Site" not in no_end_sites[1].read_text()
    skeleton, _, rig = without
    assert all(leg.has_toe_bone for leg in rig.legs)
    assert [skeleton.names[leg.toe_end] for leg in rig.legs] == ["LeftToeBase.end", "RightToeBase.end"]
    fixed, reference = (remove_foot_sliding(*clip, bvh.UP) for clip in (without, with_ends))
    assert fixed.heel_contacts.sum() > 50
    np.testing.assert_array_equal(fixed.heel_contacts, reference.heel_contacts)
    np.testing.assert_array_equal(fixed.contacts, reference.contacts)
    _, gpos = forward_kinematics(skeleton, fixed.motion.rot, fixed.motion.pos)
    heels = gpos[:, [leg.ankle for leg in rig.legs]].swapaxes(0, 1)
    assert 100.0 * metrics.toe_slide(heels, fixed.heel_contacts, bvh.UP, 120.0) < 0.05  # cm/s


def test_a_toe_without_an_end_site_is_fixed_as_blender_imports_it(addon, no_end_sites):
    """The BVH path and Blender's importer fix the file without End Sites alike (they were
    0.45 cm apart on average, 1.29 cm at most, as the BVH path pinned no heel)."""
    from blender_scenes import import_clip, world_joints

    skeleton, motion, rig = bvh.load(no_end_sites[1], CMU_TO_METRES)
    fixed = remove_foot_sliding(skeleton, motion, rig, bvh.UP)
    _, gpos = forward_kinematics(skeleton, fixed.motion.rot, fixed.motion.pos)
    names = [skeleton.names[getattr(leg, role)] for leg in rig.legs for role in ("ankle", "toe")]
    obj = import_clip(addon, no_end_sites[1])
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    theirs = world_joints(obj, names)
    # Blender's importer turns BVH's Y-up into Z-up: (x, y, z) -> (x, -z, y).
    ours = gpos[:, [skeleton.index(name) for name in names]][..., [0, 2, 1]] * [1.0, -1.0, 1.0]
    assert np.abs(theirs - ours).max() < 1e-4  # metres


def with_spaced_names(text):
    """The BVH with each joint named in words, as 3ds Max writes them ("Left Up Leg")."""
    return re.sub(r"^(\s*(?:ROOT|JOINT) )(\w+)", lambda m: m[1] + re.sub(r"(?<=[a-z])(?=[A-Z0-9])", " ", m[2]),
                  text, flags=re.MULTILINE)


def test_joint_names_in_words_read_as_blender_joins_them(clips_dir, tmp_path, blender):
    """A joint named in words ("JOINT Left Up Leg") is one joint, its words joined with "_"
    as Blender's importer names its bone; its legs are found and fixed as the same file's
    named in one word. The BVH path refused it ("unexpected 'Up'")."""
    from blender_scenes import import_clip

    spaced, joined = tmp_path / "spaced.bvh", tmp_path / "joined.bvh"
    text = with_spaced_names((clips_dir / "cmu_07_01.bvh").read_text())
    assert "JOINT Left Up Leg" in text
    spaced.write_text(text)
    joined.write_text(re.sub(r"^(\s*(?:ROOT|JOINT) )(.+)$", lambda m: m[1] + m[2].replace(" ", "_"), text,
                             flags=re.MULTILINE))
    (skeleton, motion, rig), same = (bvh.load(path, CMU_TO_METRES) for path in (spaced, joined))
    assert skeleton.names == same[0].names and "Left_Up_Leg" in skeleton.names
    assert skeleton.names[rig.legs[0].hip] == "Left_Up_Leg"
    fixed, reference = (remove_foot_sliding(*clip, bvh.UP) for clip in ((skeleton, motion, rig), same))
    np.testing.assert_array_equal(fixed.motion.rot, reference.motion.rot)
    obj = import_clip(blender, spaced)
    assert [bone.name for bone in obj.data.bones] == [name for name in skeleton.names if not name.endswith(".end")]
