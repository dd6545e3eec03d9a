"""Instructions one Remove Foot Sliding click takes on cmu_07_01, counted by valgrind's
callgrind, so the machine's load does not count (not a test: figures for the notes; needs
``valgrind`` and the ``bpy`` wheel):

    python benchmarks/instruction_counts.py [solve] [click]

- **solve**: the numpy solve inside the click, on the inputs the click hands it (captured
  from one click, then solved alone): the instructions of 12 solves less those of 2, over 10,
  so the start of the process does not count;
- **click**: the whole click, the operator and the view-layer updates ``bpy.ops`` runs
  around it, only those collected (``--toggle-collect``, scene setup left out): 4 clicks less
  2, over 2. Clicks 3 and 4 run in a scene of 3 and 4 armatures, so this is more than a
  click in a scene of one; it repeats to about 0.02M.

Compare two trees by running each tree's own copy of this script.
"""

import argparse
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchmark import CMU_TO_METRES, ROOT, import_foot_lock  # noqa: E402

CLIP = ROOT / "tests" / "data" / "cmu_07_01.bvh"
SOLVES = (2, 12)  # runs counted: the difference is 10 solves
CLICKS = (2, 4)  # the difference is 2 clicks
# Collected while Blender runs an operator called from Python and bpy.ops' view-layer updates.
CLICK_FUNCTIONS = ("pyop_call*", "ViewLayer_update_call*")


def _import_clip(bpy):
    """cmu_07_01 imported as the viewport benchmark does, without an operator (so none but
    the click's own is collected); its armature."""
    from bpy_extras.io_utils import axis_conversion
    from io_anim_bvh import import_bvh

    import_bvh.load(bpy.context, str(CLIP), global_scale=CMU_TO_METRES, update_scene_fps=True,
                    update_scene_duration=True,
                    global_matrix=axis_conversion(from_forward="-Z", from_up="Y").to_4x4())
    return bpy.context.view_layer.objects.active


def _click(bpy, obj, armatures):
    """Remove Foot Sliding on ``obj``, the one selected and active of ``armatures``."""
    bpy.context.view_layer.objects.active = obj
    for other in armatures:
        other.select_set(other == obj)
    bpy.context.evaluated_depsgraph_get().update()  # the selection's update, not the click's
    bpy.ops.foot_lock.remove_sliding()


def run_clicks(count):
    """``count`` armatures imported, then a click on each (what callgrind counts in ``click``)."""
    import bpy

    foot_lock = import_foot_lock()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    try:
        armatures = [_import_clip(bpy) for _ in range(count)]
        for obj in armatures:
            _click(bpy, obj, armatures)
    finally:
        foot_lock.unregister()


def capture_solve(path):
    """The arguments the click hands the numpy solve, pickled to ``path`` (this run's own
    file, read back only by :func:`run_solves`)."""
    import bpy

    foot_lock = import_foot_lock()
    from foot_lock.adapters import jobs

    solve = jobs.remove_foot_sliding
    captured = []

    def capturing(*args, **kwargs):
        captured.append((args, kwargs))
        return solve(*args, **kwargs)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    foot_lock.register()
    jobs.remove_foot_sliding = capturing
    try:
        obj = _import_clip(bpy)
        _click(bpy, obj, [obj])
    finally:
        jobs.remove_foot_sliding = solve
        foot_lock.unregister()
    Path(path).write_bytes(pickle.dumps(captured[0]))


def run_solves(path, count):
    """``count`` solves of the arguments :func:`capture_solve` saved to ``path``."""
    import_foot_lock()
    from foot_lock.solvers.foot_lock import remove_foot_sliding

    args, kwargs = pickle.loads(Path(path).read_bytes())
    for _ in range(count):
        remove_foot_sliding(*args, **kwargs)


def collected(callgrind_output):
    """The instruction count of callgrind's "Collected : N" line."""
    return int(re.search(r"Collected : (\d+)", callgrind_output).group(1))


def _callgrind(arguments, scratch, options=()):
    """Instructions callgrind counts running this script with ``arguments`` (one core, no
    address randomisation, a fixed hash seed: the count then repeats)."""
    command = ["taskset", "-c", "0", "setarch", "-R", "valgrind", "--tool=callgrind", *options,
               f"--callgrind-out-file={scratch}/callgrind.%p", sys.executable, __file__, *arguments]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
                         check=True)
    return collected(run.stderr)


def solve_instructions(scratch):
    capture = str(Path(scratch) / "solve_args.pickle")
    subprocess.run([sys.executable, __file__, "--capture-solve", capture], check=True, capture_output=True)
    fewer, more = (_callgrind(["--solves", capture, str(count)], scratch) for count in SOLVES)
    return (more - fewer) / (SOLVES[1] - SOLVES[0])


def click_instructions(scratch):
    options = ["--collect-atstart=no", *(f"--toggle-collect={name}" for name in CLICK_FUNCTIONS)]
    fewer, more = (_callgrind(["--clicks", str(count)], scratch, options) for count in CLICKS)
    return (more - fewer) / (CLICKS[1] - CLICKS[0])


MEASURES = {"solve": solve_instructions, "click": click_instructions}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measures", nargs="*", metavar="{solve,click}", help="what to count (default: both)")
    # What callgrind runs (this script again):
    parser.add_argument("--clicks", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--capture-solve", help=argparse.SUPPRESS)
    parser.add_argument("--solves", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = set(args.measures) - set(MEASURES)
    if unknown:
        parser.error(f"unknown measures {sorted(unknown)}: choose from {list(MEASURES)}")
    if args.clicks:
        run_clicks(args.clicks)
    elif args.capture_solve:
        capture_solve(args.capture_solve)
    elif args.solves:
        run_solves(args.solves[0], int(args.solves[1]))
    else:
        with tempfile.TemporaryDirectory(prefix="foot_lock_callgrind_") as scratch:
            for name in args.measures or MEASURES:
                print(f"{name}: {MEASURES[name](scratch) / 1e6:.2f}M instructions", flush=True)


if __name__ == "__main__":
    main()
