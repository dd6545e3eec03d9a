"""Remove foot sliding from a whole clip: contacts, offline lock, leg solver, metrics.

This is the one entry point every front end uses (the add-on's operators, the
command line, the benchmark): arrays in, arrays out, no Blender.
"""

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import metrics
from . import quaternion as quat
from .contacts import ContactSettings, detect_contacts, ease_edges
from .kinematics import SolverInputError, check_motion, forward_kinematics, local_position, update_chain
from .leg_ik import measure_leg, solve_leg
from .offline_lock import OfflineProblem, OfflineWeights, solve_offline_lock


@dataclass
class FootLockSettings:
    contacts: ContactSettings = field(default_factory=ContactSettings)
    weights: OfflineWeights = field(default_factory=OfflineWeights)
    softening_ratio: float = 0.02  # soft-clamp width as a share of the leg's length
    height_clamp: bool = True
    heel_look_at: bool = True
    toe_look_at: bool = True


@dataclass
class FootLockResult:
    motion: object  # the solved Motion
    contacts: np.ndarray  # (L, F) weights that were locked
    rotation_joints: list  # joints whose local rotation changed
    location_joints: list  # joints whose local translation changed
    before: dict
    after: dict
    slip: float  # root speed mismatch found while labelling contacts
    lock_residual: float
    reach_violation: float
    warnings: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)  # seconds per stage


@contextmanager
def _timed(timings, stage):
    start = time.perf_counter()
    yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def leg_length(gpos, rig):
    """Mean thigh-plus-shin length: the character's size for scale-free thresholds."""
    lengths = [
        np.median(np.linalg.norm(gpos[:, leg.knee] - gpos[:, leg.hip], axis=-1)
                  + np.linalg.norm(gpos[:, leg.ankle] - gpos[:, leg.knee], axis=-1))
        for leg in rig.legs
    ]
    return float(np.mean(lengths))


def travel(skeleton, gpos, rig, up):
    """Positions (F, 3) of the joint that carries the character across the ground.

    The topmost ancestor of the pelvis that travels at least half as far as the pelvis
    does (a root bone at the feet that carries the root motion), else the pelvis. A
    runtime that makes feet slide scales that joint's motion, so contact labels
    compensate for exactly its velocity, not the pelvis's sway on top of it.
    """
    def distance(joint):
        return np.linalg.norm(quat.horizontal(np.diff(gpos[:, joint], axis=0), up), axis=-1).sum()

    pelvis_travel = distance(rig.pelvis)
    for joint in skeleton.closure([rig.pelvis]):
        if distance(joint) >= 0.5 * pelvis_travel:
            return gpos[:, joint]
    return gpos[:, rig.pelvis]


def label_contacts(skeleton, motion, rig, up, settings=None):
    """Contact weights (L, F) and the slip factor, for a clip as it is."""
    check_motion(skeleton, motion)
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, _solved_joints(rig))
    toes = np.stack([gpos[:, leg.toe] for leg in rig.legs])
    return detect_contacts(toes, travel(skeleton, gpos, rig, up), up, motion.fps, leg_length(gpos, rig), settings)


def remove_foot_sliding(skeleton, motion, rig, up=(0.0, 0.0, 1.0), contacts=None, settings=None,
                        unit_scale=1.0):
    """Lock the feet of ``motion`` during contacts; returns a :class:`FootLockResult`.

    ``contacts`` (L, F) in 0..1 overrides automatic labelling (hand-edited curves); a leg
    whose row is all NaN (no curve) is labelled automatically, as are all without ``contacts``.
    ``unit_scale`` is metres per world unit, used only for the reported figures.
    """
    settings = settings or FootLockSettings()
    up = np.asarray(up, dtype=float) / np.linalg.norm(up)
    check_motion(skeleton, motion)
    if not rig.legs:
        raise SolverInputError("the rig has no legs to lock")
    timings, slip, warnings = {}, 0.0, []
    with _timed(timings, "kinematics"):
        grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, _solved_joints(rig))
        limits = [measure_leg(grot, gpos, leg, up, settings.softening_ratio) for leg in rig.legs]
    contacts = np.full((len(rig.legs), motion.frames), np.nan) if contacts is None else contacts
    contacts = _checked_contacts(contacts, len(rig.legs), motion.frames)
    missing = np.isnan(contacts).all(axis=1)
    if missing.any():
        with _timed(timings, "contacts"):
            toes = np.stack([gpos[:, leg.toe] for leg in rig.legs])
            labels, slip = detect_contacts(
                toes, travel(skeleton, gpos, rig, up), up, motion.fps, leg_length(gpos, rig), settings.contacts
            )
        contacts[missing] = labels[missing]
    if not (contacts > 0).any():
        warnings.append("no foot contacts: nothing to lock")

    before = _state(gpos, rig)
    with _timed(timings, "offline_solve"):
        solution = solve_offline_lock(
            OfflineProblem(
                pelvis=before["pelvis"], hips=before["hips"], toes=before["toes"], ankles=before["ankles"],
                contacts=ease_edges(contacts, motion.fps, settings.contacts.ease), reach=np.stack([lim.max_extension - lim.softening for lim in limits]),
                fps=motion.fps,
            ),
            settings.weights,
        )

    with _timed(timings, "leg_ik"):
        rot, pos = motion.rot.copy(), motion.pos.copy()
        _move_pelvis(skeleton, rot, pos, grot, gpos, rig, solution.pelvis)
        for leg, leg_limits, target in zip(rig.legs, limits, solution.toes):
            solve_leg(skeleton, rot, pos, grot, gpos, leg, leg_limits, target, up,
                      settings.height_clamp, settings.heel_look_at, settings.toe_look_at)
    after = _state(gpos, rig)

    figures = {
        "contacts": contacts, "up": up, "fps": motion.fps, "unit_scale": unit_scale,
        "floors": np.array([lim.toe_min_height for lim in limits]),
        "bone_lengths": np.array([_bone_length(gpos, leg) for leg in rig.legs]),
        "reference_pelvis": before["pelvis"],
    }
    before_figures = _metrics(before, **figures)
    warnings += metrics.implausible_contacts(
        contacts, metrics.foot_points(before["ankles"], before["toes"]), up, motion.fps,
        metrics.adult_size(figures["bone_lengths"], unit_scale), [leg.name for leg in rig.legs],
    )
    return FootLockResult(
        motion=type(motion)(rot, pos, motion.fps, dict(motion.meta)),
        contacts=contacts,
        rotation_joints=sorted({j for leg in rig.legs for j in _rotated_joints(leg)}),
        location_joints=[rig.pelvis],
        before=before_figures,
        after=_metrics(after, **figures),
        slip=slip,
        lock_residual=solution.lock_residual,
        reach_violation=solution.reach_violation,
        warnings=warnings,
        timings=timings,
    )


def _solved_joints(rig):
    """Every joint the solve reads: the pelvis and each leg down to its tip."""
    return [rig.pelvis] + [leg.toe_end if leg.toe_end is not None else leg.toe for leg in rig.legs]


def _rotated_joints(leg):
    return [leg.hip, leg.knee, leg.ankle] + ([leg.toe] if leg.toe_end is not None else [])


def _bone_length(gpos, leg):
    return float(np.min(np.linalg.norm(gpos[:, leg.knee] - gpos[:, leg.hip], axis=-1)
                        + np.linalg.norm(gpos[:, leg.ankle] - gpos[:, leg.knee], axis=-1)))


def _checked_contacts(contacts, legs, frames):
    """Contact weights clipped to 0..1; a row of NaN (a leg without labels) stays NaN."""
    contacts = np.array(contacts, dtype=float)
    if contacts.shape != (legs, frames):
        raise SolverInputError(f"contacts must be ({legs} legs, {frames} frames), got {contacts.shape}")
    unlabelled = np.isnan(contacts).all(axis=1)
    if not np.isfinite(contacts[~unlabelled]).all():
        raise SolverInputError("contact weights contain values that are not numbers")
    return np.clip(contacts, 0.0, 1.0)


def _state(gpos, rig):
    """The positions the metrics and the offline solve read, copied from the globals."""
    return {
        "pelvis": gpos[:, rig.pelvis].copy(),
        "hips": np.stack([gpos[:, leg.hip] for leg in rig.legs]),
        "knees": np.stack([gpos[:, leg.knee] for leg in rig.legs]),
        "ankles": np.stack([gpos[:, leg.ankle] for leg in rig.legs]),
        "toes": np.stack([gpos[:, leg.toe] for leg in rig.legs]),
    }


def _metrics(state, contacts, up, fps, unit_scale, floors, bone_lengths, reference_pelvis):
    return metrics.motion_metrics(
        state["toes"], state["hips"], state["ankles"], state["pelvis"], contacts, up, fps,
        floors, bone_lengths, reference_pelvis, unit_scale,
    )


def _move_pelvis(skeleton, rot, pos, grot, gpos, rig, pelvis_positions):
    """Translate the pelvis to ``pelvis_positions`` and update the joints down to the feet."""
    parent = skeleton.parents[rig.pelvis]
    if parent < 0:
        pos[:, rig.pelvis] = pelvis_positions
    else:
        pos[:, rig.pelvis] = local_position(grot[:, parent], gpos[:, parent], pelvis_positions)
    below = []
    for leg in rig.legs:
        tip = leg.toe_end if leg.toe_end is not None else leg.toe
        below += [j for j in skeleton.chain(rig.pelvis, tip) if j not in below]
    update_chain(skeleton, rot, pos, grot, gpos, sorted(below))
