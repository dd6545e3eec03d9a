"""Folders of short clips for the batch tests: pieces of the CMU walk, each sliding its own way."""

import json
import math
import os
from pathlib import Path

from foot_lock.solvers import bvh

# Figures that measure the run, not the clip: they differ between any two runs.
TIMINGS = ("seconds", "solver_seconds")


def short_walk(walk, target, first_frame, frames, root_scale):
    """``frames`` frames of the BVH ``walk`` from ``first_frame`` on, its root motion scaled."""
    text = Path(walk).read_text(encoding="utf-8")
    header, _, motion = text.partition("MOTION")
    lines = motion.strip().splitlines()
    frame_time = next(line for line in lines if line.startswith("Frame Time:"))
    rows = lines[lines.index(frame_time) + 1 :][first_frame : first_frame + frames]
    assert len(rows) == frames, f"{walk} has fewer than {first_frame + frames} frames"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{header}MOTION\nFrames: {frames}\n{frame_time}\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return bvh.write_sliding_copy(target, target, root_scale)


def short_walks(walk, folder, names, frames=60):
    """One short sliding walk per name (a path under ``folder``), each cut and scaled differently."""
    return [
        short_walk(walk, folder / name, first_frame=7 * i % 200, frames=frames, root_scale=1.1 + 0.03 * (i % 7))
        for i, name in enumerate(names)
    ]


def without_timings(value):
    """A report (or part of one) without the figures that time the run."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def differences(a, b, rel=1e-9, where=""):
    """Where two reports (or parts) differ: every path whose values are not equal, numbers
    compared to ``rel`` (another process may sum in another order: BLAS threads)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(a.keys() | b.keys(), key=str)
                for d in differences(a.get(key), b.get(key), rel, f"{where}/{key}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, rel, f"{where}[{i}]")]
    numbers = all(isinstance(v, float | int) and not isinstance(v, bool) for v in (a, b))
    if numbers and math.isclose(a, b, rel_tol=rel, abs_tol=rel):
        return []
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def read_report(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def relative_outputs(folder):
    """Every file under ``folder``, as paths relative to it."""
    return sorted(Path(root, name).relative_to(folder) for root, _, names in os.walk(folder) for name in names)
