"""BVH in, BVH out through the numpy core: no Blender needed.

The output is the input file with only the solved joints' channel values rewritten
(:func:`~..solvers.bvh.write`): hierarchy, joint order, channel order, axes (Y-up),
units, frame rate and every other value stay as they were, so the file drops back into
the same pipeline. It is written atomically (:func:`~..solvers.atomic_files.atomic_output`).
"""

import time

import numpy as np

from ..solvers import bvh
from ..solvers.atomic_files import atomic_output
from ..solvers.contacts import REFERENCE_LEG_LENGTH
from ..solvers.foot_lock import remove_foot_sliding
from .errors import ClipError
from .report import clip_entry

# Metres per file unit of the units BVH files come in. CMU's files use their own unit.
COMMON_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "inch": 0.0254, "CMU unit": bvh.CMU_UNIT}
# m, thigh plus shin: a toddler's to a tall adult's. Nearest an adult's alone, a child's 51
# cm read as inches (1.3 m) and every figure of its report came out 2.54 times too large.
PERSON_LEGS = (0.3, 1.1)


def unit_scale(parsed, rig, override=None):
    """Metres per file unit and where that figure comes from.

    Without ``override`` it is guessed: of the common units that make the legs' rest length
    (thigh plus shin) a person's (:data:`PERSON_LEGS`), the one closest to an adult's, 0.85 m
    (of all of them, where none does). A CMU file (legs ~14.3 units) gets 0.056444 m per unit;
    a child's legs of 51 units are centimetres (in inches they would be 1.3 m long); a
    character far from a person's size may need ``--bvh-unit-scale``.
    """
    if override:
        return override, "--bvh-unit-scale"
    legs = float(np.mean([np.linalg.norm(parsed.joints[leg.knee].offset) + np.linalg.norm(parsed.joints[leg.ankle].offset)
                          for leg in rig.legs]))
    if not legs > 0:
        raise ClipError("the legs have no length (their knees' and ankles' OFFSETs are zero): nothing to solve")
    exact = REFERENCE_LEG_LENGTH / legs
    person = [unit for unit, metres in COMMON_UNITS.items() if PERSON_LEGS[0] <= metres * legs <= PERSON_LEGS[1]]
    name = min(person or COMMON_UNITS, key=lambda unit: abs(np.log(COMMON_UNITS[unit] / exact)))
    return COMMON_UNITS[name], f"guessed from leg length: {name}"


def _why_kept(parsed):
    """Why a BVH is written as it is (a pose, not a motion), or None."""
    frames = len(parsed.values)
    if frames < 2:
        return "one frame (1): a pose, kept unchanged"
    if not np.ptp(parsed.values, axis=0).any():
        return f"no motion over frames 1-{frames}: kept unchanged"
    return None


def file_unit_scale(path, override=None):
    """:func:`unit_scale` of a BVH file (for Blender's importer)."""
    parsed = bvh.read(path)
    return unit_scale(parsed, bvh.detect_rig(parsed), override)


def fix_bvh(source, target, settings, unit_override=None):
    """Fix ``source`` into ``target``; returns the one clip entry of the report. A pose (one
    frame, or frames that never change) is written as it is, and said so, as a .blend's is."""
    start = time.perf_counter()
    parsed = bvh.read(source)
    kept = _why_kept(parsed)
    if kept:
        with atomic_output(target) as temp:
            temp.write_bytes(source.read_bytes())
        return [{"armature": None, "action": None, "output_action": None, "frames": len(parsed.values),
                 "frame_start": 1, "kept": kept}]
    rig = bvh.detect_rig(parsed)
    scale, unit_source = unit_scale(parsed, rig, unit_override)
    # Solved in metres, the regime the solver is tuned and tested in; written back in file units.
    skeleton, motion = bvh.to_motion(parsed, scale)
    up, axis = bvh.standing_up(skeleton, motion, rig)
    # Takes joined in one file (the pelvis jumps between them) are labelled and locked take by take.
    result = remove_foot_sliding(skeleton, motion, rig, up, settings=settings, first_frame=1)  # as Blender numbers them
    if up != bvh.UP:
        result.warnings.append(f"the clip stands along {axis}, not BVH's +Y: solved with {axis} up")
    with atomic_output(target) as temp:
        bvh.write(temp, parsed, result.motion, scale, result.rotation_joints, result.location_joints)
    return [clip_entry(
        result, [leg.name for leg in rig.legs], frame_start=1, fps=motion.fps, unit_scale=scale,
        seconds=time.perf_counter() - start, armature=None, action=None, output_action=None,
        unit_source=unit_source,
    )]
