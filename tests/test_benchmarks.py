"""The benchmark scripts still run (on tiny sizes: their figures are for the notes, not tests)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import benchmark


def test_core_benchmark_prints_its_table(clips_dir, capsys):
    benchmark.core_figures(clips_dir, sizes=(200,))
    out = capsys.readouterr().out
    assert "solve+IK" in out and "\n    200 " in out


def test_looped_sliding_copy_for_the_blender_benchmark(clips_dir, tmp_path):
    import blender_benchmark
    from foot_lock.solvers import bvh

    path = blender_benchmark.sliding_copy(clips_dir / "cmu_07_01.bvh", tmp_path, 1.25, frames=500)
    _, motion = bvh.to_motion(bvh.read(path))
    assert motion.frames == 500 and np.isfinite(motion.pos).all()
