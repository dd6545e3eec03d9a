"""The viewport benchmark script still runs (one clip, one repeat: its figures are for the
notes, not a test)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

pytestmark = pytest.mark.blender


def test_viewport_benchmark_prints_every_path_against_the_target(clips_dir, capsys):
    import viewport_benchmark

    viewport_benchmark.viewport_figures(clips_dir, clips=("cmu_07_01",), repeats=1)
    out = capsys.readouterr().out
    assert "Bake Action" in out and "target <= 0.10" in out
    for path in ("keys", "object keys", "evaluated"):
        row = next(line for line in out.splitlines() if line.startswith(f"   cmu_07_01     318 {path:>12} "))
        assert row.endswith("1/10") and (" meets " in row or " misses " in row)


def test_the_length_table_cuts_the_clip_and_fits_both_costs(clips_dir, capsys, tmp_path):
    import viewport_benchmark
    from foot_lock.solvers import bvh

    viewport_benchmark.length_figures(clips_dir, lengths=(40, 80), repeats=1)
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip().split(" ")[0] in {"40", "80"}]
    assert [row[0] for row in rows] == ["40", "80"]
    # Seconds, not compared with each other: one run each on a busy machine can take either longer.
    assert all(float(seconds.rstrip("s")) > 0.0 for row in rows for seconds in row[1:3])
    cut = viewport_benchmark.sliding_copy(clips_dir / "cmu_01_01.bvh", tmp_path, 1.0, 40)
    assert bvh.to_motion(bvh.read(cut))[1].frames == 40  # the clip's first 40 frames, as the row says
    fitted = next(line for line in out.splitlines() if line.startswith("fitted: Bake Action "))
    assert "ms a frame" in fitted and "1/10" in fitted
