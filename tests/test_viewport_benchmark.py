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


def test_the_length_table_cuts_the_clip_and_fits_both_costs(clips_dir, capsys):
    import viewport_benchmark

    viewport_benchmark.length_figures(clips_dir, lengths=(40, 80), repeats=1)
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip().split(" ")[0] in {"40", "80"}]
    assert [row[0] for row in rows] == ["40", "80"]
    bake_40, bake_80 = (float(row[1].rstrip("s")) for row in rows)
    assert bake_80 > bake_40  # Bake Action keys every frame: twice the frames cost more
    fitted = next(line for line in out.splitlines() if line.startswith("fitted: Bake Action "))
    assert "ms a frame" in fitted and "1/10" in fitted
