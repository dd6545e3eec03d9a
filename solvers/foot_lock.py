"""Remove foot sliding from a whole clip: contacts, offline lock, leg solver, metrics.

This is the one entry point every front end uses (the add-on's operators, the
command line, the benchmark): arrays in, arrays out, no Blender.
"""

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import accumulate

import numpy as np

from . import metrics
from . import quaternion as quat
from .contacts import (
    REFERENCE_LEG_LENGTH,
    ContactSettings,
    detect_foot_contacts,
    from_first,
    gait_tempo,
    heel_down,
    heights_along,
    long_runs,
    run_starts,
)
from .kinematics import Motion, Pose, SolverInputError, check_motion, forward_kinematics, joint_runs
from .leg_ik import LegOptions, measure_legs_and_lengths, solve_legs
from .offline_lock import OfflineProblem, OfflineWeights, pieces, solve_offline_lock
from .rig import (
    leg_length,
    leg_length_from_locals,
    mean_leg_length,
    nearest_axis,
    standing_direction,
    stands_along,
)
from .root_motion import is_in_place
from .swivels import released_by_swivels

IN_PLACE = ("the clip walks in place (its root stays put while the planted feet glide back): "
            "nothing locked; Root Motion from Feet makes it travel")

@dataclass
class FootLockSettings:
    contacts: ContactSettings = field(default_factory=ContactSettings)
    weights: OfflineWeights = field(default_factory=OfflineWeights)
    softening_ratio: float = 0.02  # soft-clamp width as a share of the leg's length
    leg_options: LegOptions = field(default_factory=LegOptions)


@dataclass
class FootLockResult:
    motion: Motion  # the solved motion
    contacts: np.ndarray  # (L, F) toe (ball) weights that were locked
    heel_contacts: np.ndarray  # (L, F) heel weights that were locked; 0 on legs without a toe bone
    rotation_joints: list[int]  # joints whose local rotation changed
    location_joints: list[int]  # joints whose local translation changed
    before: dict[str, float]  # figures of the input (metrics.motion_metrics)
    after: dict[str, float]  # the same figures of the result
    slip: float  # root speed mismatch found while labelling contacts
    lock_residual: float
    reach_violation: float
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    foot_jitter_mm: float = 0.0  # the input feet's capture noise (metrics.foot_jitter)

    @property
    def foot_contacts(self):
        """(L, F) how firmly each foot is held on the ground: by its heel or its toe, from
        heel strike to toe-off (the heel alone at a heel strike is a contact too)."""
        return np.maximum(self.contacts, self.heel_contacts)


@contextmanager
def _timed(timings, stage):
    start = time.perf_counter()
    yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def travel(skeleton, gpos, rig, up):
    """Positions (F, 3) of the joint that carries the character across the ground.

    The topmost ancestor of the pelvis that travels at least half as far as the pelvis
    does (a root bone at the feet that carries the root motion), else the pelvis. A
    runtime that makes feet slide scales that joint's motion, so contact labels
    compensate for exactly its velocity, not the pelvis's sway on top of it. A copy in C
    order: the labeller reads it frame after frame, where the solve's globals (forward_kinematics'
    ``by_component``) hold each component's frames together.
    """
    def distance(joint):
        return np.linalg.norm(quat.horizontal(np.diff(gpos[:, joint], axis=0), up), axis=-1).sum()

    ancestors = skeleton.closure([rig.pelvis])[:-1]  # topmost first
    if ancestors:  # (a BVH's pelvis is its root: nothing to compare)
        pelvis_travel = distance(rig.pelvis)
        for joint in ancestors:
            if distance(joint) >= 0.5 * pelvis_travel:
                return np.ascontiguousarray(gpos[:, joint])
    return np.ascontiguousarray(gpos[:, rig.pelvis])


def label_contacts(skeleton, motion, rig, up, settings=None, keyed=None):
    """Toe contact weights (L, F) and the slip factor, for a clip as it is (as its ``keyed``
    frames pose it: see :func:`remove_foot_sliding`)."""
    _, toes, slip = label_foot_contacts(skeleton, motion, rig, up, settings, keyed=keyed)
    return toes, slip


def label_foot_contacts(skeleton, motion, rig, up, settings=None, cuts=None, keyed=None):
    """Heel and toe contact weights, (L, F) each, and the slip factor, for a clip as it is:
    piece by piece between its ``cuts`` (:func:`cut_frames`, found where None; see
    :func:`_label_across_cuts`), as its ``keyed`` frames pose it (see
    :func:`remove_foot_sliding`).

    A leg without a toe bone has one point to pin (see :func:`remove_foot_sliding`): its
    heel row is 0."""
    check_motion(skeleton, motion)
    cuts = cut_frames(skeleton, motion, rig) if cuts is None else cuts
    _, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, _solved_joints(rig))
    heels, toes = _points(gpos, rig, "ankle", "toe")
    root = travel(skeleton, gpos, rig, up)
    keyed = showing_stances(keyed, motion.fps)
    if keyed is not None:
        heels, toes, root = (as_keyed(points, keyed) for points in (heels, toes, root))
    length = leg_length(gpos, rig)
    return _label_animated_legs(animated_legs(skeleton, motion, rig, length), heels, toes, rig, root, length, up,
                                motion.fps, settings, cuts, as_keyed_poses=keyed is not None)


# Radians a leg's joints must turn, or leg lengths move, over the clip to count as animated.
STILL_LEG_TOLERANCE = 1e-4
# Frames spread over a clip on which its legs are looked at first (see :func:`animated_legs`).
SAMPLED_FRAMES = 32


def animated_legs(skeleton, motion, rig, size):
    """(L,) whether each leg moves of its own: some joint of it, from the hip to the toe,
    turns or moves against its parent over the clip (``size`` its leg length). A leg without
    keys hangs in its rest pose, carried by the pelvis: its foot glides with the body on
    every frame, which no contact holds, and read with the others it throws their labels off
    (a biped whose other leg walks lost half of each stance). All legs' joints at once, first
    over about ``SAMPLED_FRAMES`` frames spread over the clip: a joint that turns or moves on
    some frames does over the clip, and an animated leg shows it on most of its frames, so
    every frame is read only where a leg looks still on those (of a motion
    :func:`~.kinematics.check_motion` accepts: no frame's NaN hides the others' moves)."""
    chains = [skeleton.chain(rig.pelvis, leg.toe)[1:] for leg in rig.legs]
    # (The chains' starts summed in Python: np.cumsum of a short list made an array of it first.)
    joints, starts = np.concatenate(chains), list(accumulate([len(chain) for chain in chains[:-1]], initial=0))
    step = max(1, motion.frames // SAMPLED_FRAMES)
    animated = _moving_legs(motion.rot[::step], motion.pos[::step], joints, starts, size)
    if step > 1 and not np.logical_and.reduce(animated):  # (ndarray.all's reduction, without its layers)
        animated = _moving_legs(motion.rot, motion.pos, joints, starts, size)
    return animated


def _moving_legs(rot, pos, joints, starts, size):
    """:func:`animated_legs` over the frames of ``rot`` (F, J, 4) and ``pos`` (F, J, 3): whether
    the legs' ``joints`` (their chains one after another, each from its index in ``starts``)
    turn or move from the first of them on some other."""
    # Every joint measured over the frames, then the legs' picked: gathering them first costs
    # more than the other joints' arithmetic, as does quat.dot's einsum, reducing each joint's
    # four products in a short inner loop, against adding the products a component at a time.
    products = rot * rot[:1]
    cosines = (products[..., 0] + products[..., 2]) + (products[..., 1] + products[..., 3])  # (quat.dot's sums)
    # (ndarray.min's and max's reductions, without their Python layers.)
    turned = 1.0 - np.minimum.reduce(np.abs(cosines), axis=0) > 0.5 * (0.5 * STILL_LEG_TOLERANCE) ** 2  # 1 - cos(a/2)
    moved = np.maximum.reduce(np.maximum.reduce(np.abs(pos - pos[:1]), axis=0), axis=-1) > STILL_LEG_TOLERANCE * size
    return np.logical_or.reduceat(np.logical_or(turned, moved).take(joints), starts)


def _label_animated_legs(animated, heels, toes, rig, root, length, up, fps, settings, cuts, noise=None, tempo=None,
                         as_keyed_poses=False):
    """:func:`_label_across_cuts` of the legs that are ``animated`` (L,) (:func:`animated_legs`);
    the others are never labelled (their rows 0). ``as_keyed_poses``: the points are as a
    clip's keys pose them (:func:`as_keyed`), each toe contact from where its ball lands
    (:func:`_from_landing`)."""
    heel_labels, toe_labels = np.zeros((2,) + heels.shape[:2])
    slip = 0.0
    if np.count_nonzero(animated):  # (see remove_foot_sliding)
        # Every leg's rows as they are where all are animated (the usual case): no copies picked.
        rows, labelled = (slice(None), rig) if animated.all() else (animated, replace(
            rig, legs=[leg for leg, moving in zip(rig.legs, animated) if moving]))
        heel_labels[rows], toe_labels[rows], slip = _label_across_cuts(
            heels[rows], toes[rows], labelled, root, length, up, fps, settings, cuts, noise, tempo)
    if as_keyed_poses:
        toe_labels = _from_landing(toe_labels, toes, up, fps, length, settings)
    # A foot swivelled on the spot stands on one point: the one that sweeps lets go.
    toe_labels, heel_labels = released_by_swivels(toe_labels, heel_labels, toes, heels, up, animated, fps)
    return heel_labels, toe_labels, slip


def _label_across_cuts(heels, toes, rig, root, length, up, fps, settings, cuts, noise=None, tempo=None):
    """:func:`_label_feet` of the whole clip, or where it has ``cuts`` (takes joined, an NLA
    repeat starting again) of each piece between them on its own, its jitter and tempo its
    own: no contact spans a jump, none is on a cut's first frame, and the slip is the
    pieces' (a mean over their frames). ``noise`` and ``tempo``: the whole clip's, if
    already measured."""
    if not len(cuts):
        return _label_feet(heels, toes, rig, root, length, up, fps, settings, noise, tempo)
    heel_labels, toe_labels = np.zeros((2,) + heels.shape[:2])
    slip = frames = 0.0
    for piece in pieces(heels.shape[1], cuts):
        if piece.stop - piece.start < 2:
            continue
        heel_labels[:, piece], toe_labels[:, piece], piece_slip = _label_feet(
            heels[:, piece], toes[:, piece], rig, root[piece], length, up, fps, settings)
        slip, frames = slip + piece_slip * (piece.stop - piece.start), frames + piece.stop - piece.start
    heel_labels[:, cuts] = toe_labels[:, cuts] = 0.0
    return heel_labels, toe_labels, slip / max(frames, 1.0)


def _label_feet(heels, toes, rig, root, length, up, fps, settings, noise=None, tempo=None):
    """Heel and toe labels and the slip factor of the legs' heels and toes (L, F, 3); ``root``
    (F, 3) the joint that carries the character (:func:`travel`), ``length`` the leg length,
    ``noise`` the heels' and toes' :func:`metrics.foot_jitter` and ``tempo`` the heels'
    :func:`~.contacts.gait_tempo`, if already measured."""
    heel_labels, toe_labels, slip = detect_foot_contacts(heels, toes, root, up, fps, length, settings, foot_edges=False,
                                                         noise=noise, tempo=tempo)
    heel_labels = heel_down(heel_labels, heels, up, length, fps, settings)
    heel_labels[[not leg.has_toe_bone for leg in rig.legs]] = 0.0
    # A pin holds its point from one frame to the next: a heel's contact of one frame holds
    # no step, it only stops the heel for that frame (one brushing its ground mid-roll at 24
    # fps: 34 -> 1 -> 37 cm/s). A ball's is a short stance's whole contact (a run at 30 fps).
    return heel_labels * long_runs(heel_labels > 0, 2), toe_labels, slip


CUT_SPEED = 20.0  # leg lengths per second: a pelvis this fast jumped (a repeat, takes joined)
# s: a jump undone this soon is a capture pop (the body thrown off for a few frames and
# back), not a cut: the clip goes on, and the lock holds the feet through it.
POP_TIME = 0.1


def cut_frames(skeleton, motion, rig, size=None):
    """Indices of the frames where the pelvis jumps instead of moving (an NLA repeat starting
    again, takes joined in one file): no contact spans them (:func:`label_foot_contacts`) and
    the lock is solved piece by piece between them (:func:`remove_foot_sliding`). ``size``:
    the legs' length (:func:`~.rig.leg_length`), where already measured."""
    pelvis = rig.pelvis
    if skeleton.parents[pelvis] < 0:  # the usual rig: its position is its world position
        path = motion.pos[:, pelvis]
    else:
        path = forward_kinematics(skeleton, motion.rot, motion.pos, [pelvis])[1][:, pelvis]
    step = quat.lengths(path[1:] - path[:-1])
    size = leg_length_from_locals(skeleton, motion.rot, motion.pos, rig) if size is None else size
    jumps = np.flatnonzero(step * motion.fps > CUT_SPEED * size) + 1
    return np.array(_without_pops(path, jumps, motion.fps, CUT_SPEED * size), dtype=int)


def _without_pops(path, jumps, fps, speed):
    """The ``jumps`` (frames the pelvis ``path`` (F, 3) lands on, jumping faster than ``speed``)
    that are not capture pops: a jump with another within :data:`POP_TIME` after which the
    pelvis is back on its way (no faster than ``speed`` from before the first) is a pop, and
    neither is a cut. A cut joins takes: nothing brings the pelvis back."""
    within = max(1, round(POP_TIME * fps))
    cuts, index = [], 0
    while index < len(jumps):
        start = jumps[index]
        back = next((later for later in range(index + 1, len(jumps)) if jumps[later] - start <= within
                     and quat.length(path[jumps[later]] - path[start - 1]) * fps <= speed * (jumps[later] - start + 1)),
                    None)
        if back is None:  # nothing undoes it: a cut
            cuts.append(start)
            back = index
        index = back + 1  # past the jump back of a pop
    return cuts


def remove_foot_sliding(skeleton, motion, rig, up=(0.0, 0.0, 1.0), contacts=None, settings=None,
                        unit_scale=1.0, heel_contacts=None, measured=slice(None), cuts=None, keyed=None,
                        first_frame=0):
    """Lock the feet of ``motion`` during contacts; returns a :class:`FootLockResult`.

    Each foot has two points to pin: the toe (the ball, ``leg.toe``) while ``contacts``
    says so and the heel (the ankle) while ``heel_contacts`` does; the foot rolls about
    the pinned point as the source foot turns (heel strike: heel pinned, push-off: ball
    pinned; flat: both). A leg without a toe bone pins its one point, ``leg.toe``.
    ``contacts`` and ``heel_contacts`` (L, F) in 0..1 override automatic labelling
    (hand-edited curves); a leg whose row is all NaN (no curve) is labelled automatically,
    as are all without the array. ``unit_scale`` is metres per world unit, used only for
    the reported figures, which are those of the ``measured`` frames (a loop's solve
    keeps the middle of several cycles). A clip that walks in place is not locked.
    ``cuts``: the frames where the clip jumps (takes joined, an NLA repeat starting again;
    :func:`cut_frames`, found where None); the lock is solved, and missing labels labelled,
    piece by piece between them. ``keyed``: where the clip is interpolated between sparse
    keys (hand-keyed animation), the frames (ascending indices, the first and last among
    them) that hold its keys; None: every frame holds a pose (capture). The feet are
    labelled, and the input's judged on the ground, as the keys pose them, joined by
    straight lines (:func:`as_keyed`). ``first_frame``: the number an animator sees on the
    first of the ``measured`` frames, for the frames the warnings name.
    """
    settings = settings or FootLockSettings()
    up = np.asarray(up, dtype=float) / np.linalg.norm(up)
    check_motion(skeleton, motion)
    if not rig.legs:
        raise SolverInputError("the rig has no legs to lock")
    timings, slip, warnings = {}, 0.0, []
    with _timed(timings, "kinematics"):
        # The toe tips' rotations are not computed: the legs are measured from their hips' and the
        # leg solver, given heel targets, turns the toes and computes the tips' before it reads them.
        grot, gpos = forward_kinematics(skeleton, motion.rot, motion.pos, _solved_joints(rig), by_component=True,
                                        positions_only=[leg.tip for leg in rig.legs])
        limits, bone_lengths = measure_legs_and_lengths(grot, gpos, rig.legs, up, settings.softening_ratio)
    # The legs' length (leg_length's) as the legs were just measured: not measured again from the
    # locals (50 us), nor averaged again by each stage that reads it.
    length = mean_leg_length(bone_lengths)
    cuts = cut_frames(skeleton, motion, rig, length) if cuts is None else cuts
    contacts, missing = _checked_contacts(contacts, len(rig.legs), motion.frames)
    heel_contacts, heel_missing = _checked_contacts(heel_contacts, len(rig.legs), motion.frames)
    # The input's and the result's positions, as rows of one array (see :func:`_state`).
    states = np.empty((2, 1 + 3 * len(rig.legs), motion.frames, 3))
    before = _state(gpos, rig, states[0])
    keyed = showing_stances(keyed, motion.fps)
    posed = before if keyed is None else _parts(as_keyed(states[0], keyed), len(rig.legs))  # as keyed
    noise = None  # the input feet's jitter over the whole clip, once something reads it
    size = metrics.character_size(bone_lengths)
    animated = animated_legs(skeleton, motion, rig, length)
    warnings += _still_legs(rig, animated)
    # The gait's tempo, for the labels and the ground figures alike (both in the gait's own time).
    # (Whether any frame or leg is set asked by np.count_nonzero, one C call, where ndarray.any
    # runs numpy's _methods._any and a logical_or reduction: on every solve.)
    tempo = (gait_tempo(posed["ankles"][animated], up, motion.fps, size, settings.contacts)
             if np.count_nonzero(animated) else 1.0)
    if np.count_nonzero(missing) or np.count_nonzero(heel_missing):
        root = travel(skeleton, gpos, rig, up)
        root = root if keyed is None else as_keyed(root, keyed)
        noise = metrics.foot_jitter(posed["feet"])
        with _timed(timings, "contacts"):
            heel_labels, labels, slip = _label_animated_legs(animated, posed["ankles"], posed["toes"], rig, root,
                                                             length, up, motion.fps, settings.contacts, cuts, noise,
                                                             tempo, as_keyed_poses=keyed is not None)
        if np.count_nonzero(animated) and is_in_place(posed["toes"][animated], root, up, motion.fps, length):
            labels[:] = heel_labels[:] = 0.0  # its feet glide by design: locking them would tear the legs off
            warnings.append(IN_PLACE)
        contacts[missing] = labels[missing]
        heel_contacts[heel_missing] = heel_labels[heel_missing]
    heel_contacts[[not leg.has_toe_bone for leg in rig.legs]] = 0.0  # the one point is the toe
    if not np.count_nonzero(contacts > 0) and not np.count_nonzero(heel_contacts > 0) and IN_PLACE not in warnings:
        warnings.append("no foot contacts: nothing to lock")
    warnings += _changing_feet(before["ankles"], before["toes"], contacts, heel_contacts, rig)
    warnings += _lying(before["hips"], before["ankles"], up)
    warnings += _sized_off_units(length * unit_scale)

    toes, ankles = before["toes"], before["ankles"]
    if keyed is not None:  # held where the keys pose the feet, not where interpolation swings them
        pinned = (contacts > 0) | (heel_contacts > 0)
        toes, ankles = (_toward_keys(before[part], posed[part], pinned, motion.fps, settings.weights.release_time)
                        for part in ("toes", "ankles"))
    with _timed(timings, "offline_solve"):
        solution = solve_offline_lock(
            OfflineProblem(
                pelvis=before["pelvis"], hips=before["hips"], toes=toes, ankles=ankles,
                contacts=contacts, reach=np.array([lim.max_extension - lim.softening for lim in limits]),
                fps=motion.fps, heel_contacts=heel_contacts, up=up, cuts=cuts, lengths=bone_lengths,
            ),
            settings.weights,
        )

    with _timed(timings, "leg_ik"):
        pose = Pose(skeleton, motion.rot.copy(), motion.pos.copy(), grot, gpos)
        _move_pelvis(pose, rig, solution.pelvis)
        solve_legs(pose, rig.legs, limits, solution.toes, up, settings.leg_options, heel_targets=solution.heels)
    _state(gpos, rig, states[1])

    whole = range(motion.frames)[measured] == range(motion.frames)
    if noise is None or not whole:
        noise = metrics.foot_jitter(posed["feet"][:, measured])
    steadying = metrics.ground_steadying(noise, motion.fps, size)
    # Both states judged on the ground where the input's keys pose the feet so: alike.
    judged = None if keyed is None else metrics.foot_points(*(np.stack([posed[part]] * 2)[:, :, measured]
                                                              for part in ("ankles", "toes")))
    (before_figures, after_figures), (grounded, _) = _metrics(
        states[:, :, measured], len(rig.legs), contacts[:, measured], up, motion.fps, unit_scale,
        np.array([lim.toe_min_height for lim in limits]), bone_lengths, before["pelvis"][measured], steadying, tempo,
        judged,
    )
    pinned = np.array((heel_contacts[:, measured], contacts[:, measured])) > 0  # (np.stack's Python layers: 3 us)
    warnings += _held_too_far(_parts(states[:, :, measured], len(rig.legs)), pinned, rig,
                              length, motion.fps, unit_scale, np.array((heel_missing, missing)),
                              first_frame)
    if IN_PLACE not in warnings:  # an in-place walk is left unlocked on purpose: its labels are not the news
        if not whole:  # the input's figures are not of the whole clip
            grounded = metrics.ground_slide(metrics.foot_points(before["ankles"], before["toes"]), up, motion.fps,
                                            size, steadying=steadying, tempo=tempo,
                                            judged=None if keyed is None else metrics.foot_points(posed["ankles"],
                                                                                                  posed["toes"]))[1]
        warnings += metrics.implausible_contacts(contacts[animated], grounded[animated],
                                                 [leg.name for leg, moving in zip(rig.legs, animated) if moving])
    return FootLockResult(
        motion=type(motion)(pose.rot, pose.pos, motion.fps, dict(motion.meta)),
        contacts=contacts,
        heel_contacts=heel_contacts,
        rotation_joints=sorted({j for leg in rig.legs for j in _rotated_joints(leg)}),
        location_joints=[rig.pelvis],
        before=before_figures,
        after=after_figures,
        slip=slip,
        lock_residual=solution.lock_residual,
        reach_violation=solution.reach_violation,
        warnings=warnings,
        timings=timings,
        foot_jitter_mm=1000.0 * noise * unit_scale,
    )


def _still_legs(rig, animated):
    """A warning naming the legs that are not ``animated`` (:func:`animated_legs`)."""
    still = [leg.name for leg, moving in zip(rig.legs, animated) if not moving]
    if not still:
        return []
    one = len(still) == 1
    return [f"the {' and '.join(still)} leg{'' if one else 's'} {'does' if one else 'do'} not move of "
            f"{'its' if one else 'their'} own (one pose all clip, carried by the body: no keys?): not labelled, "
            f"nothing locked; remove {'it' if one else 'them'} in the Legs panel if not a leg"]


FOOT_LENGTH_CHANGE = 0.005  # a foot's heel-to-ball length varying by more within a stance is reported


def _changing_feet(heels, toes, contacts, heel_contacts, rig):
    """Warnings for feet whose heel-to-ball length (heels, toes (L, F, 3)) changes within a
    stance pinned at both points (animated scale): a foot that grows or shrinks there
    cannot hold both, and its ball slides by the change. Rigid feet (every rig without
    scale keys) are told apart from the whole clip's lengths alone."""
    lengths = quat.lengths(heels - toes)
    # (np.ptp's numbers below, for every leg at once: ndarray.max's and min's reductions,
    # without their Python layers.)
    longest = np.maximum.reduce(lengths, axis=1)
    rigid = (longest - np.minimum.reduce(lengths, axis=1) <= FOOT_LENGTH_CHANGE * longest).tolist()
    if all(rigid):  # (every rig without scale keys: where the feet are pinned is not looked at)
        return []
    both = (contacts > 0) & (heel_contacts > 0)
    warnings = []
    for leg, pinned, length, stays in zip(rig.legs, both, lengths, rigid):
        if stays or not pinned.any():
            continue
        stances = np.split(length[pinned], np.flatnonzero(run_starts(pinned)[pinned])[1:])
        change = max(np.ptp(held) / held.max() for held in stances)
        if change > FOOT_LENGTH_CHANGE:
            warnings.append(f"the {leg.name} foot changes length by up to {100 * change:.0f}% within a stance "
                            "(animated scale?): held at heel and ball it cannot keep both, so its ball slides")
    return warnings


def _lying(hips, ankles, up):
    """A warning where the legs (hips, ankles (L, F, 3)) do not stand along ``up`` over the
    clip: imported with the wrong axes (a Z-up file read as Y-up) it lies on its back, its
    heights read as travel and its contacts as slides."""
    if stands_along(hips, ankles, up):
        return []
    (_, axis), (_, up_axis) = nearest_axis(standing_direction(hips, ankles)), nearest_axis(up)
    return [f"the legs stand along {axis}, not up ({up_axis}): was the clip imported with the wrong axes? Contacts "
            f"are read along {up_axis}, so they are wrong unless the character lies down or stands on its hands"]


# Hip-to-ankle lengths (m) past which a character is more likely in the wrong units than
# that size: a mouse's legs, a ten-metre giant's. The lock reads lengths in leg lengths and
# never notices; the figures in cm/s are as far off as the units.
PLAUSIBLE_LEG_METRES = (0.05, 5.0)


def _sized_off_units(metres):
    """A warning where the legs measure ``metres`` outside :data:`PLAUSIBLE_LEG_METRES`: a
    centimetre rig, a CMU clip imported at scale 1 or a glTF authored in centimetres reads as
    a character a hundred times as large, and its figures (cm/s) a hundred times too high."""
    low, high = PLAUSIBLE_LEG_METRES
    if low <= metres <= high:
        return []
    return [f"the legs measure {metres:.3g} m hip to ankle (an adult's: {REFERENCE_LEG_LENGTH} m): unless the "
            f"character is that {'large' if metres > high else 'small'}, its units are not the metres the figures "
            "assume (Blender: Scene > Units > Unit Scale, metres per unit) and the figures in cm/s are off as far; "
            "the fix itself does not depend on units"]


HELD_TOO_FAR = 0.5  # leg lengths an animated foot may move while pinned: a stance slides a few tenths


def _held_too_far(parts, pinned, rig, leg_length, fps, unit_scale, labelled, first_frame=0):
    """Warnings for contacts over which the animated foot moves further than ``HELD_TOO_FAR``
    leg lengths (one keyed through a swing): held all the same, the foot is kept far from
    where the leg can reach, and the pelvis moves to reach it all along the clip, not only
    there. The advice follows the cause: travel faster than the steps (:func:`_carried`), a
    swing the labeller took for a stance, or an animator's curve held through a swing.
    ``parts``: the before and after positions (:func:`_parts` of (2, ...));
    ``pinned`` (2, L, F): where the heels, then the toes, are pinned; ``labelled`` (2, L): which
    of those rows the labeller made (the others are an animator's curves). Frames are named
    as an animator sees them, the first ``first_frame``, and where the pelvis moves most:
    not always within the held contact (the offset it builds rides into the next stance)."""
    frames = pinned.shape[-1]
    feet = parts["feet"][0].reshape(pinned.shape + (3,))  # the input's ankles, then toes, laid out as ``pinned``
    points = feet.reshape(-1, 3)
    index = np.arange(pinned.size)
    run_start = np.maximum.accumulate(np.where(run_starts(pinned).ravel(), index, 0))
    moved = np.where(pinned.ravel(), quat.lengths(points - points.take(run_start, axis=0)), 0.0).reshape(pinned.shape)
    warnings = []
    # Each leg's furthest moved frame of its heel's and toe's, as one index into its two rows
    # of frames (one argmax for every leg).
    furthest = moved.transpose(1, 0, 2).reshape(len(rig.legs), -1).argmax(axis=1).tolist()
    for number, (leg, at) in enumerate(zip(rig.legs, furthest)):
        point, frame = divmod(at, frames)
        if moved[point, number, frame] <= HELD_TOO_FAR * leg_length:
            continue
        if not warnings:  # the first: the pelvis's shift every warning names is measured (none, usually)
            pelvis_shift = quat.lengths(parts["pelvis"][1] - parts["pelvis"][0])
            most_shifted = int(pelvis_shift.argmax())
        start = run_start.reshape(pinned.shape)[point, number, frame] % frames
        curve = ("heel_contact", "foot_contact")[point]
        span = slice(start, frame + 1)
        if _carried(feet[point, number, span], parts["pelvis"][0, span], leg_length):
            advice = ("the body travels further than the foot steps there (its root, or the object carrying it, "
                      "faster than the walk?): slow that travel down to the steps' pace")
        elif labelled[point, number]:
            advice = (f"labelled planted there as it moves so slowly near its ground (a clip playing far slower than "
                      f"it was captured?): key its {curve} curve to 0 where it moves")
        else:
            advice = f"check its {curve} curve there (a contact through a swing?)"
        warnings.append(
            f"the {leg.name} foot is pinned over frames {first_frame + start}-{first_frame + frame} "
            f"({start / fps:.2f}-{frame / fps:.2f} s into the clip) while its animation moves "
            f"{100.0 * unit_scale * moved[point, number, frame]:.0f} cm: held all the same, the pelvis moves up to "
            f"{100.0 * unit_scale * pelvis_shift[most_shifted]:.0f} cm to reach it (most at frame "
            f"{first_frame + most_shifted}); {advice}"
        )
    return warnings


# Leg lengths a pinned foot may come forward again relative to the pelvis and still be in a
# stance: a stance only falls back (a couple of centimetres of sway at most), a swing comes
# forward by most of a step, even a shuffle's (a fifth of a leg or more).
SWING_AHEAD = 0.1


def _carried(foot, pelvis, leg_length):
    """Whether a foot held far while pinned (``foot``, ``pelvis`` (n, 3): the input's positions
    over the span) was planted and carried along, not swinging: the pelvis travels further
    than the foot, and the foot falls back from it all along, as in any stance, never coming
    forward again by ``SWING_AHEAD`` leg lengths. A root (or an object's path) faster than
    the steps carries planted feet with it, and the labels are right: what is wrong is the
    travel. A swing labelled planted (slow motion) or keyed so comes forward of the body."""
    travel = pelvis[-1] - pelvis[0]
    distance = float(quat.length(travel))
    if distance <= float(quat.length(foot[-1] - foot[0])):
        return False
    # The foot's place relative to the pelvis along the travel: a stance moves it back all
    # along; a swing brings it forward again from as far back as it had got.
    along = quat.dot(foot - pelvis, travel / distance)
    return bool((along - np.minimum.accumulate(along)).max() <= SWING_AHEAD * leg_length)


def _solved_joints(rig):
    """Every joint the solve reads: the pelvis and each leg down to its tip."""
    return [rig.pelvis] + [leg.tip for leg in rig.legs]


def _rotated_joints(leg):
    return [leg.hip, leg.knee, leg.ankle] + ([leg.toe] if leg.has_toe_bone else [])


def _checked_contacts(contacts, legs, frames):
    """Contact weights clipped to 0..1, and which legs (L,) are without labels: a row of NaN
    stays NaN, as does every row without ``contacts``."""
    if contacts is None:
        return np.full((legs, frames), np.nan), np.ones(legs, dtype=bool)
    contacts = np.array(contacts, dtype=float)
    if contacts.shape != (legs, frames):
        raise SolverInputError(f"contacts must be ({legs} legs, {frames} frames), got {contacts.shape}")
    # (ndarray.all's reductions, np.logical_and.reduce, without its Python layers: four a solve.)
    unlabelled = np.logical_and.reduce(np.isnan(contacts), axis=1)
    if not np.logical_and.reduce(np.isfinite(contacts[~unlabelled]), axis=None):
        raise SolverInputError("contact weights contain values that are not numbers")
    # np.clip's numbers (NaN stays NaN) in place, without its Python layers.
    return np.minimum(np.maximum(contacts, 0.0, out=contacts), 1.0, out=contacts), unlabelled


def _points(gpos, rig, *roles):
    """Positions (R, L, F, 3) of one joint of every leg for each of ``roles`` ("toe",
    "ankle" ...), copied from the globals in one gather."""
    rows = gpos.swapaxes(0, 1)[[getattr(leg, role) for role in roles for leg in rig.legs]]
    return rows.reshape(len(roles), len(rig.legs), *rows.shape[1:])


def _state(gpos, rig, out):
    """The positions the offline solve and the metrics read, copied from the globals into
    ``out`` (1 + 3 L, F, 3) in one gather: the pelvis, then every leg's hip, then ankle, then
    toe; returns them by name (see :func:`_parts`)."""
    joints = [rig.pelvis] + [getattr(leg, role) for role in ("hip", "ankle", "toe") for leg in rig.legs]
    # The solve's globals are stored a joint's component at a time (forward_kinematics'
    # ``by_component``): the joints' rows of frames are taken whole, then copied into ``out``
    # a component's row of frames at a time.
    out.transpose(0, 2, 1)[...] = gpos.transpose(1, 2, 0).take(joints, axis=0)
    return _parts(out, len(rig.legs))


def _parts(rows, legs):
    """The pelvis (..., F, 3), the hips, ankles and toes (..., L, F, 3) and the feet (the ankles,
    then the toes: (..., 2 L, F, 3)) of positions gathered by :func:`_state` (..., 1 + 3 L, F,
    3), as views of them."""
    return {"pelvis": rows[..., 0, :, :], "hips": rows[..., 1 : 1 + legs, :, :],
            "ankles": rows[..., 1 + legs : 1 + 2 * legs, :, :], "toes": rows[..., 1 + 2 * legs :, :, :],
            "feet": rows[..., 1 + legs :, :, :]}


def _metrics(states, legs, contacts, up, fps, unit_scale, floors, bone_lengths, reference_pelvis, steadying, tempo,
             judged=None):
    """The figures of each state (a before and an after: positions gathered by :func:`_state`,
    (S, 1 + 3 L, F, 3)), measured together, and the share of the frames each foot is on the
    ground (S, L); ``judged``: see :func:`~.metrics.motion_metrics`' ``judged_feet``."""
    parts = _parts(states, legs)
    return metrics.motion_metrics(
        parts["toes"], parts["hips"], parts["ankles"], parts["pelvis"], contacts, up, fps,
        floors, bone_lengths, reference_pelvis, unit_scale, steadying, tempo, judged,
    )


# s: keys further apart than this (fewer than two a step of a brisk walk) cannot show where
# a stance starts and ends; a clip keyed so sparsely is labelled as it plays.
KEY_SPACING = 0.25


def showing_stances(keyed, fps):
    """``keyed`` (frames, see :func:`remove_foot_sliding`) where its keys are close enough to
    show the stances (``KEY_SPACING`` apart or less, the middle of their spacings), else
    None: keyed every 8th frame at 24 fps (3 poses a stride), a stance has one key with the
    ball down, and its poses joined by straight lines show the foot never still (four
    one-frame contacts in 4 s)."""
    if keyed is None or np.median(np.diff(keyed)) > KEY_SPACING * fps:
        return None
    return keyed


def as_keyed(points, keyed):
    """``points`` (..., F, 3) as the ``keyed`` frames (ascending indices, the first and the last
    among them) pose them, joined by straight lines: a clip keyed sparsely without what
    interpolating its bones between the keys does. A hand-keyed walk keyed every fourth frame
    swings its planted foot about between its keys as the leg's rotations interpolate (2 cm
    into the floor, 0.7 m/s across at 24 fps): the slide to fix, where its keys hold the foot
    still; labelled as it plays, its stances were cut to pieces of a frame or two."""
    frames = np.arange(points.shape[-2])
    key = np.minimum(np.searchsorted(keyed, frames, side="right") - 1, len(keyed) - 2)  # the key at or before
    start, end = keyed[key], keyed[key + 1]
    share = ((frames - start) / (end - start))[:, None]
    return points[..., start, :] * (1.0 - share) + points[..., end, :] * share


def _from_landing(labels, toes, up, fps, length, settings):
    """Toe labels (L, F) of toes as their keys pose them (:func:`as_keyed`), each contact from
    where its ball stops coming down. Keyed a few frames apart, a ball keyed in the air at
    heel strike and down at the next key comes down slower than a landing looks (a fifth of
    a metre a second, keys every fourth frame at 24 fps): pinned from the heel strike on, it
    held the foot tilted, the heel 2-3 cm into the floor."""
    settings = settings or ContactSettings()
    heights = heights_along(toes, up)
    falling = np.zeros(labels.shape, dtype=bool)
    falling[:, :-1] = (heights[:, 1:] - heights[:, :-1]) * fps < (
        -settings.planted_vertical_speed * length / REFERENCE_LEG_LENGTH)
    return np.where(from_first(labels > 0, ~falling), labels, 0.0)


def _toward_keys(points, keyed, pinned, fps, ease_time):
    """``points`` (L, F, 3) where the legs are ``pinned`` (L, F) moved to where the keys pose
    them (``keyed``, see :func:`as_keyed`), eased in and out over ``ease_time`` seconds either
    side: a pin holds a hand-keyed foot where its keys plant it, not where interpolating
    between them swings it on the pin's first frame (2-3 cm into the floor at a key every
    fourth to sixth frame), and the swing keeps its own arcs."""
    frames = np.arange(pinned.shape[-1])
    far = 2 * len(frames) + 1
    before = np.maximum.accumulate(np.where(pinned, frames, -far), axis=-1)  # the last pinned frame up to here
    after = np.minimum.accumulate(np.where(pinned, frames, far)[:, ::-1], axis=-1)[:, ::-1]  # the next from here
    share = np.clip(1.0 - np.minimum(frames - before, after - frames) / max(ease_time * fps, 1.0), 0.0, 1.0)
    weight = share * share * (3.0 - 2.0 * share)  # (zero slope at both ends)
    return points + weight[..., None] * (keyed - points)


def _move_pelvis(pose, rig, pelvis_positions):
    """Translate the pelvis to ``pelvis_positions`` and the joints down to the ankles with
    it: no rotation changes, so they move rigidly, by the pelvis's shift (no need to
    recompute their globals). The leg solver, given a heel target, reads no joint below the
    ankle before it turns the hip and recomputes them all then."""
    below = sorted({j for leg in rig.legs for j in pose.skeleton.chain(rig.pelvis, leg.ankle)[1:]})
    shift = (pelvis_positions - pose.gpos[:, rig.pelvis]).T[:, None]  # (3, 1, F)
    # Each run of joints shifted as a slice of the components' rows (3, joints, F), along the
    # frames: the solve's globals are stored so (forward_kinematics' ``by_component``), where
    # a gather and scatter by the joints' list, three values at a time, cost several times more.
    for run in joint_runs(below):
        pose.gpos.T[:, run] += shift
    pose.place(rig.pelvis, pelvis_positions)
    pose.gpos[:, rig.pelvis] = pelvis_positions
