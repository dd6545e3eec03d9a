"""Print the throughput of a folder batch: the local pool vs a local Dask cluster (not a test).

    python benchmarks/batch_engines.py [--clips 200] [--workers 2] [--walk CLIP.bvh]

Both fix the same folder of short sliding walks (60 frames of the CMU walk each) with the
same number of workers, ``--jobs N`` vs ``--scheduler local:N``, each through the command
line as a user runs it; the figures say what the Dask engine costs on top (it should be
within 20% of the pool: the work is the same worker processes). Needs ``dask[distributed]``.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark import ROOT, import_foot_lock

SCRIPT = ROOT / "cli" / "blender_script.py"


def engine_figures(walk, clips, workers, folder):
    import_foot_lock()
    sys.path.insert(0, str(ROOT / "tests"))
    from batch_folders import differences, read_report, short_walks, without_timings

    source = folder / "in"
    short_walks(walk, source, [f"clip_{i:04d}.bvh" for i in range(clips)])
    engines = {"local pool": ["--jobs", str(workers)], "Dask local": ["--scheduler", f"local:{workers}"]}
    seconds, reports = {name: [] for name in engines}, {}
    # Pool, Dask, Dask, pool: on a shared machine the load drifts; this order cancels a steady drift.
    for run, name in enumerate(["local pool", "Dask local", "Dask local", "local pool"]):
        out = folder / f"out_{run}"
        command = [sys.executable, str(SCRIPT), "--", "remove-sliding", str(source), "-o", str(out),
                   "--report", str(out / "report.json"), *engines[name]]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        seconds[name].append(time.perf_counter() - start)
        report = read_report(out / "report.json")
        reports[name] = without_timings({Path(entry["input"]).name: entry["clips"] for entry in report["files"]})
    print(f"{clips} clips of 60 frames, {workers} workers, each engine run twice (pool, Dask, Dask, pool)")
    for name, runs in seconds.items():
        mean = sum(runs) / len(runs)
        print(f"  {name:12} {mean:7.1f} s  {clips / mean:6.2f} clips/s  (runs: {', '.join(f'{r:.1f}' for r in runs)})")
    pool, dask = (sum(seconds[name]) for name in engines)
    print(f"  Dask / pool  {dask / pool:7.2f}  (target: within 0.8 .. 1.2)")
    same = not differences(reports["local pool"], reports["Dask local"])
    print(f"  same figures for every clip: {'yes' if same else 'NO'}")
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--walk", type=Path, default=ROOT / "cli" / "data" / "cmu_07_01.bvh")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="foot_lock_engines_") as folder:
        engine_figures(args.walk, args.clips, args.workers, Path(folder))


if __name__ == "__main__":
    main()
