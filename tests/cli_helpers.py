"""Running Foot Lock's command line as a user does, and reading what it wrote."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from clip_scenarios import CMU_TO_METRES, reference_labels, toe_positions
from foot_lock.solvers import bvh, metrics

ROOT = Path(__file__).resolve().parent.parent


def package_parent(folder):
    """``folder`` holding a link ``foot_lock -> <this repository>``.

    With it on PYTHONPATH, ``python -m foot_lock`` runs this tree whatever the clone is
    called, ahead of any installed copy.
    """
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "foot_lock"
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)
    return folder


def run_python(args, cwd, pythonpath=None):
    """``python ARGS`` in a subprocess; PYTHONPATH is exactly ``pythonpath`` (or unset)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def column_owners(parsed):
    """The joint name of each MOTION column of a parsed BVH."""
    return [joint.name for joint in parsed.joints for _ in joint.channels]


def header_bytes(path):
    """Everything up to and including the ``Frame Time:`` line, as stored."""
    data = Path(path).read_bytes()
    at = data.index(b"Frame Time:")
    return data[: data.index(b"\n", at) + 1]


def toe_slide_on_reference(path, reference_clip):
    """Toe slide (cm/s) of a BVH over the contacts of the unscaled ``reference_clip``."""
    skeleton, motion, rig = bvh.load(path, CMU_TO_METRES)
    reference = reference_labels(*bvh.load(reference_clip, CMU_TO_METRES))
    toes = toe_positions(skeleton, motion, rig)
    return 100.0 * metrics.toe_slide(toes, reference, bvh.UP, motion.fps)


def contact_frames(ranges):
    return int(np.sum([last - first + 1 for first, last in ranges]))
