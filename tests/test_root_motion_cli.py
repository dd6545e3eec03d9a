"""The ``root-motion`` command: an in-place walk made to travel, BVH to BVH (numpy only)
and through Blender (.blend)."""

import re

import numpy as np
import pytest
from clip_scenarios import CMU_TO_METRES, in_place, reference_labels, toe_positions
from foot_lock.cli import main
from foot_lock.solvers import bvh
from foot_lock.solvers.metrics import toe_slide
from foot_lock.solvers.quaternion import horizontal


@pytest.fixture
def in_place_bvh(clips_dir, tmp_path):
    parsed = bvh.read(clips_dir / "cmu_07_01.bvh")
    skeleton, motion = bvh.to_motion(parsed, CMU_TO_METRES)
    path = tmp_path / "in_place.bvh"
    bvh.write(path, parsed, in_place(motion), CMU_TO_METRES, location_joints=[0])
    return path, reference_labels(skeleton, motion, bvh.detect_rig(parsed))


def _root_travel(path):
    """Metres the root of a BVH travels horizontally, first frame to last (it has no parent)."""
    _, motion, rig = bvh.load(path, CMU_TO_METRES)
    ends = motion.pos[[0, -1], rig.pelvis]
    return float(np.linalg.norm(horizontal(ends[1] - ends[0], bvh.UP)))


def test_root_motion_bvh_to_bvh_plants_the_feet_and_changes_only_the_root(in_place_bvh, clips_dir, tmp_path, capsys):
    source, labels = in_place_bvh
    target = tmp_path / "travelling.bvh"
    assert main(["root-motion", str(source), "-o", str(target)]) == 0
    out = capsys.readouterr().out
    # The figures are the root's travel before and after, not the travel added alone.
    after, before = (float(m) for m in re.search(r"the root travels ([\d.]+) m .* \(([\d.]+) m before\)", out).groups())
    assert before == pytest.approx(_root_travel(source), abs=0.01)
    assert after == pytest.approx(_root_travel(clips_dir / "cmu_07_01.bvh"), rel=0.1)  # the walk's own, found again
    skeleton, motion, rig = bvh.load(target, CMU_TO_METRES)
    assert 100.0 * toe_slide(toe_positions(skeleton, motion, rig), labels, bvh.UP, motion.fps) <= 1.0
    before, after = bvh.read(source), bvh.read(target)
    changed = np.flatnonzero((before.tokens != after.tokens).any(axis=0))
    assert set(changed) <= {0, 1, 2}  # the Hips' position columns only
    assert after.header == before.header


def test_root_motion_refuses_onto_object_for_a_bvh(in_place_bvh, tmp_path, capsys):
    source, _ = in_place_bvh
    assert main(["root-motion", str(source), "-o", str(tmp_path / "out.bvh"), "--onto-object"]) == 1
    assert "has no object" in capsys.readouterr().out
    assert not (tmp_path / "out.bvh").exists()


@pytest.mark.blender
def test_root_motion_through_blender_writes_a_travelling_action(in_place_bvh, tmp_path):
    bpy = pytest.importorskip("bpy")
    source, _ = in_place_bvh
    target = tmp_path / "travelling.blend"
    assert main(["root-motion", str(source), "-o", str(target)]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(target), load_ui=False)
    obj = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert obj.animation_data.action.name == "in_place.rootmotion"
    assert "in_place" in bpy.data.actions  # the original is kept
    start, end = (round(f) for f in obj.animation_data.action.frame_range)
    hips = []
    for frame in (start, end):
        bpy.context.scene.frame_set(frame)
        hips.append(np.array(obj.matrix_world @ obj.pose.bones["Hips"].head))
    assert np.linalg.norm(hips[1][:2] - hips[0][:2]) > 3.0
    # Its output run again: the result is made again from the original, in its place.
    again = tmp_path / "again.blend"
    assert main(["root-motion", str(target), "-o", str(again)]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(again), load_ui=False)
    assert sorted(bpy.data.actions.keys()) == ["in_place", "in_place.rootmotion"]


@pytest.mark.blender
def test_root_motion_from_a_blend_prints_its_own_line_alone(in_place_bvh, tmp_path, pythonpath):
    """A pipeline reads the command's stdout: Blender's "Read blend: ..." (printed from C,
    past ``sys.stdout``) and the importers' chatter go to stderr, for both commands."""
    from cli_helpers import run_python

    bpy = pytest.importorskip("bpy")
    source, _ = in_place_bvh
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=str(source), global_scale=CMU_TO_METRES, update_scene_fps=True)
    blend = tmp_path / "in_place.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    for command, output in (("root-motion", "travelling.blend"), ("root-motion", "travelling.fbx"),
                            ("remove-sliding", "fixed.blend")):
        result = run_python(["-m", "foot_lock", command, blend, "-o", tmp_path / output], tmp_path, pythonpath)
        assert result.returncode == 0, result.stderr
        (line,) = result.stdout.splitlines()
        assert line.startswith(f"ok {blend} -> {tmp_path / output}")
        assert command != "root-motion" or "Read blend" in result.stderr  # (remove-sliding's worker keeps its own)


def test_root_motion_of_a_clip_that_travels_already_says_so(clips_dir, in_place_bvh, tmp_path, capsys):
    """BVH to BVH as through Blender: the walk's own 3.58 m, found again from its feet, is
    said; the in-place walk's line has no warning."""
    assert main(["root-motion", str(clips_dir / "cmu_07_01.bvh"), "-o", str(tmp_path / "walk.bvh")]) == 0
    assert "[warning: the clip already travelled 3.58 m (Root Motion from Feet is for in-place clips): it now " \
           "travels 3.44 m" in capsys.readouterr().out
    source, _ = in_place_bvh
    assert main(["root-motion", str(source), "-o", str(tmp_path / "still.bvh")]) == 0
    assert "[warning" not in capsys.readouterr().out
