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
