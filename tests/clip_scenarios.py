"""Shared-clip scenarios of the clips README: the sliding input and its reference labels."""

from pathlib import Path

import numpy as np
from foot_lock.solvers import bvh, kinematics
from foot_lock.solvers.contacts import reference_contacts
from foot_lock.solvers.kinematics import forward_kinematics

CMU_TO_METRES = 0.056444
CLIPS_DIR = Path(__file__).resolve().parents[2] / "shared" / "clips"
ALL_CLIPS = ["cmu_131_01", "cmu_131_02", "cmu_131_03", "cmu_01_01", "cmu_03_01", "cmu_07_01", "cmu_03_02"]


def load(name, scale=CMU_TO_METRES, clips_dir=CLIPS_DIR):
    return bvh.load(Path(clips_dir) / f"{name}.bvh", scale)


def scale_root_motion(skeleton, motion, factor, up=bvh.UP):
    """The README's sliding scenario: the root's horizontal translation scaled about frame 0."""
    return kinematics.scale_root_motion(skeleton, motion, factor, up)


def toe_positions(skeleton, motion, rig):
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos)
    return np.stack([gpos[:, leg.toe] for leg in rig.legs])


def reference_labels(skeleton, motion, rig, unit_scale=1.0):
    """Reference contacts of the (unscaled) clip, per the clips README."""
    return reference_contacts(toe_positions(skeleton, motion, rig), motion.fps, unit_scale)


def f1_score(found, reference):
    found, reference = np.asarray(found) > 0.5, np.asarray(reference) > 0.5
    true_positive = np.sum(found & reference)
    return 2.0 * true_positive / max(found.sum() + reference.sum(), 1)
