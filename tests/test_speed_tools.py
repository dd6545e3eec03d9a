"""The tools that guard speed work still run and still tell: the solve's fingerprint
(behaviour before and after a change) and the instruction counts' drivers (callgrind
itself is not run here: the counts are for the notes)."""

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def fingerprint(clips_dir):
    import solve_fingerprint

    return solve_fingerprint.fingerprint(clips_dir, clips=("cmu_07_01",), rates=(30,))


def _compare(before, after):
    import solve_fingerprint

    return solve_fingerprint.compare(before, after)


def test_a_fingerprint_holds_every_scenario_and_matches_itself(fingerprint):
    scenarios = {name.split("/")[2] for name in fingerprint}
    assert scenarios == {"x1.00", "x0.75", "x1.25", "drift"}
    assert {"cmu_07_01/30/drift/contacts", "cmu_07_01/30/x1.25/after/ground_slide_cm_s"} <= set(fingerprint)
    lines, same = _compare(fingerprint, dict(fingerprint))
    assert same and lines[0] == f"{len(fingerprint)} arrays, {len(fingerprint)} equal exactly"


def test_round_off_in_the_motion_passes_and_says_how_large(fingerprint):
    after = dict(fingerprint)
    after["cmu_07_01/30/x1.25/rot"] = fingerprint["cmu_07_01/30/x1.25/rot"] + 1e-12
    lines, same = _compare(fingerprint, after)
    assert same and any(line.split() == ["rot", "max", "|diff|", "1e-12"] for line in lines)


@pytest.mark.parametrize(("name", "change", "says"), [
    ("cmu_07_01/30/x0.75/contacts", lambda labels: np.where(np.arange(labels.size).reshape(labels.shape) == 7,
                                                            1.0 - labels, labels), "labels differ"),
    ("cmu_07_01/30/x1.00/after/toe_slide_cm_s", lambda figure: figure + 0.01, "at 2 decimals"),
    ("cmu_07_01/30/drift/warnings", lambda text: np.asarray(f"{text}|new warning"), "!="),
    ("cmu_07_01/30/drift/pos", lambda pos: pos[:-1], "shape"),
])
def test_a_change_of_behaviour_is_named(fingerprint, name, change, says):
    after = dict(fingerprint)
    after[name] = change(fingerprint[name])
    lines, same = _compare(fingerprint, after)
    named = [line for line in lines if name in line]
    assert not same and "PROBLEMS:" in lines and len(named) == 1 and says in named[0]


def test_callgrinds_total_is_read_from_its_report():
    import instruction_counts

    report = "==12== Events    : Ir\n==12== Collected : 128040211\n==12==\n==12== I   refs:      128,040,211\n"
    assert instruction_counts.collected(report) == 128040211


@pytest.mark.blender
def test_the_counted_solve_is_the_one_a_click_hands_the_solver(tmp_path):
    import instruction_counts

    path = tmp_path / "solve.pickle"
    instruction_counts.capture_solve(path)
    args, kwargs = pickle.loads(path.read_bytes())
    motion, rig = args[1:3]
    assert motion.frames == 317 and len(rig.legs) == 2 and kwargs["contacts"].shape == (2, 317)
    instruction_counts.run_solves(path, 1)


@pytest.mark.blender
def test_the_counted_clicks_bake_one_result_per_armature():
    import bpy
    import instruction_counts

    instruction_counts.run_clicks(2)
    results = [action for action in bpy.data.actions if action.name.endswith(".footlock")]
    assert len(results) == 2 and {action.users for action in results} == {1}
