"""The solve's behaviour on the shared clips, saved and compared: the guard for a change meant
to make the solve faster without changing what it does (not a test: a tool for the notes).

    python benchmarks/solve_fingerprint.py dump OUT.npz [--clips DIR]
    python benchmarks/solve_fingerprint.py compare BEFORE.npz AFTER.npz

``dump`` solves every clip of ``clip_scenarios.ALL_CLIPS`` at 120 and 30 fps, with the root
speed x1.0 / x0.75 / x1.25 and drifting (``clip_scenarios.root_scenarios``), and saves what a
click keeps: the heel and toe labels, the solved joint rotations and locations, the world
positions they give, the report's figures, the slip factor, the lock residual and the warnings.
``compare`` prints how many arrays are bit-identical and the largest difference of each kind,
then OK when the change is round-off only: labels and warnings identical, every figure the
same at the report's 2 decimals; else the arrays that differ (exit status 1).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from benchmark import import_foot_lock  # noqa: E402

import_foot_lock()

import clip_scenarios as cs  # noqa: E402
from foot_lock.solvers import bvh  # noqa: E402
from foot_lock.solvers.foot_lock import remove_foot_sliding  # noqa: E402
from foot_lock.solvers.kinematics import forward_kinematics  # noqa: E402

RATES = (120, 30)
LABELS = ("contacts", "heels")  # kinds that must stay bit-identical
FIGURES = ("before", "after")  # kinds compared at the report's 2 decimals


def _solve_arrays(skeleton, motion, rig):
    """Name (kind or kind/figure) -> array of one solve."""
    result = remove_foot_sliding(skeleton, motion, rig, bvh.UP, unit_scale=1.0)
    arrays = {
        "contacts": result.contacts, "heels": result.heel_contacts,
        "rot": result.motion.rot, "pos": result.motion.pos,
        "gpos": forward_kinematics(skeleton, result.motion.rot, result.motion.pos)[1],
        "slip": np.asarray(result.slip), "residual": np.asarray(result.lock_residual),
        "warnings": np.asarray("|".join(result.warnings)),
    }
    for side in FIGURES:
        for figure, value in getattr(result, side).items():
            arrays[f"{side}/{figure}"] = np.asarray(value, dtype=float)
    return arrays


def fingerprint(clips_dir, clips=cs.ALL_CLIPS, rates=RATES):
    """Name ``clip/fps/scenario/kind[/figure]`` -> array, for every solve of the dump."""
    arrays = {}
    for name in clips:
        skeleton, motion, rig = cs.load(name, clips_dir=clips_dir)
        for fps in rates:
            for scenario, scaled in cs.root_scenarios(skeleton, cs.decimate(motion, fps)).items():
                for kind, array in _solve_arrays(skeleton, scaled, rig).items():
                    arrays[f"{name}/{fps}/{scenario}/{kind}"] = array
    return arrays


def _kind(name):
    return name.split("/")[3]


def _difference(before, after):
    """Why two arrays of one name differ beyond round-off ("" if they do not), and their
    largest absolute difference (0 for text; NaN where both have one counts as equal)."""
    if before.dtype.kind in "US" or after.dtype.kind in "US":
        return ("" if before.tolist() == after.tolist() else f"{before} != {after}"), 0.0
    if before.shape != after.shape:
        return f"shape {before.shape} != {after.shape}", 0.0
    missing = np.isnan(before)
    if not np.array_equal(missing, np.isnan(after)):
        return "not numbers in other places", 0.0
    numbers = ~missing
    return "", float(np.max(np.abs(before[numbers] - after[numbers]), initial=0.0))


def _problem(name, before, after):
    """:func:`_difference` of one name, with the rules of its kind: labels bit-identical,
    figures equal at the report's 2 decimals."""
    problem, largest = _difference(before, after)
    kind = _kind(name)
    if not problem and kind in LABELS and largest:
        problem = f"labels differ by up to {largest}"
    if not problem and kind in FIGURES and not np.array_equal(np.round(before, 2), np.round(after, 2), equal_nan=True):
        problem = f"figure {before} != {after} at 2 decimals"
    return problem, largest


def compare(before, after):
    """The comparison's lines and whether the change is round-off only; ``before`` and
    ``after`` name -> array, as :func:`fingerprint` gives them."""
    problems = [f"{name}: missing in one" for name in sorted(set(before) ^ set(after))]
    worst, identical = {}, 0
    for name in sorted(set(before) & set(after)):
        problem, largest = _problem(name, np.asarray(before[name]), np.asarray(after[name]))
        if problem:
            problems.append(f"{name}: {problem}")
        identical += not problem and largest == 0.0
        worst[_kind(name)] = max(worst.get(_kind(name), 0.0), largest)
    lines = [f"{len(after)} arrays, {identical} equal exactly"]
    lines += [f"  {kind:10s} max |diff| {largest:.3g}" for kind, largest in sorted(worst.items())]
    if problems:
        return [*lines, "PROBLEMS:", *(f"  {problem}" for problem in problems)], False
    return [*lines, "OK: labels and warnings identical, figures equal at 2 decimals"], True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dump = commands.add_parser("dump", help="solve the clips and save what the solves give")
    dump.add_argument("output", type=Path)
    dump.add_argument("--clips", type=Path, default=cs.CLIPS_DIR)
    check = commands.add_parser("compare", help="compare two dumps")
    check.add_argument("before", type=Path)
    check.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        arrays = fingerprint(args.clips)
        np.savez_compressed(args.output, **arrays)
        print(f"{len(arrays)} arrays saved to {args.output}")
        return 0
    with np.load(args.before) as before, np.load(args.after) as after:
        lines, same = compare(dict(before), dict(after))
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
