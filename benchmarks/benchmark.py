"""Print Foot Lock's speed and quality figures (not a test: figures for the notes).

    python benchmarks/benchmark.py [--clips DIR] [--blender | --preview]

Core figures need only numpy; ``--blender`` adds end-to-end timings inside Blender
(needs the ``bpy`` wheel), ``--preview`` only those of Preview.
"""

import argparse
import importlib.util
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def import_foot_lock():
    """The repository as package ``foot_lock``, whatever the clone's folder is called."""
    if "foot_lock" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "foot_lock", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["foot_lock"] = module
        spec.loader.exec_module(module)
    return sys.modules["foot_lock"]


def _cmu_unit():
    import_foot_lock()
    from foot_lock.solvers.bvh import CMU_UNIT

    return CMU_UNIT


CMU_TO_METRES = _cmu_unit()


def clip_of_length(skeleton, motion, frames, root_scale=1.25):
    """A ``frames``-long sliding clip: the source played forward and backward, root scaled."""
    from foot_lock.solvers.kinematics import Motion

    cycle = np.concatenate([np.arange(motion.frames), np.arange(motion.frames - 2, 0, -1)])
    order = np.resize(cycle, frames)
    rot, pos = motion.rot[order].copy(), motion.pos[order].copy()
    roots = np.flatnonzero(skeleton.parents < 0)
    offset = pos[:, roots] - pos[0, roots]
    offset[..., [0, 2]] *= root_scale  # Y-up: x and z are horizontal
    pos[:, roots] = pos[0, roots] + offset
    return Motion(rot, pos, motion.fps)


def core_figures(clips_dir, sizes=(1000, 10000)):
    from foot_lock.solvers import bvh
    from foot_lock.solvers.foot_lock import label_contacts, remove_foot_sliding

    skeleton, source, rig = bvh.load(Path(clips_dir) / "cmu_01_01.bvh", CMU_TO_METRES)
    print("Solver core (numpy), cmu_01_01 looped, root motion x1.25, 2 legs")
    print(f"{'frames':>7} {'contacts':>9} {'offline':>9} {'leg IK':>9} {'solve+IK':>9} {'lock res':>9} {'reach':>9}")
    for frames in sizes:
        motion = clip_of_length(skeleton, source, frames)
        remove_foot_sliding(skeleton, motion, rig, bvh.UP)  # warm-up
        best = None
        for _ in range(3):
            start = time.perf_counter()
            contacts, _ = label_contacts(skeleton, motion, rig, bvh.UP)
            label_time = time.perf_counter() - start
            result = remove_foot_sliding(skeleton, motion, rig, bvh.UP, contacts=contacts)
            t = result.timings
            row = (label_time, t["offline_solve"], t["leg_ik"], result)
            if best is None or row[1] + row[2] < best[1] + best[2]:
                best = row
        label_time, solve_time, ik_time, result = best
        print(
            f"{frames:>7} {label_time * 1e3:>7.1f}ms {solve_time * 1e3:>7.1f}ms {ik_time * 1e3:>7.1f}ms "
            f"{(solve_time + ik_time) * 1e3:>7.1f}ms {result.lock_residual * 1e3:>7.3f}mm "
            f"{result.reach_violation * 1e3:>7.3f}mm"
        )
    print(f"peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", default=ROOT / "tests" / "data", type=Path)
    parser.add_argument("--blender", action="store_true", help="also time the add-on inside Blender")
    parser.add_argument("--preview", action="store_true",
                        help="only time Preview inside Blender, on one core (steadier figures)")
    args = parser.parse_args(argv)
    import_foot_lock()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.preview:
        # One core for this process and the threads Blender starts: the CPU time measured is
        # the work done, without the spinning of idle evaluation threads on a shared machine.
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        import bpy
        from blender_benchmark import preview_figures

        preview_figures(bpy, args.clips)
        return
    core_figures(args.clips)
    if args.blender:
        from blender_benchmark import blender_figures

        blender_figures(args.clips)


if __name__ == "__main__":
    main()
