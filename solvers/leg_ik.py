"""The leg solver, vectorized over frames.

It follows "Solving a Leg Chain" in the article "Inverse Kinematics and Foot Locking: From Two-Bone IK to
Offline Slide Removal" (the team's ``seeds/ik-and-foot-locking.txt``; "the seed" below).

Given a posed skeleton and a toe target per frame it changes only the local
rotations of the hip, knee, ankle and toe so that the toe arrives at its target,
keeping as much of the input pose as possible: a target at the current toe gives
back the input pose exactly. Real rigs are the normal case: bone rolls and local
axes are arbitrary, and joints the seed does not know about (a zero-length hip
joint, twist bones) may sit anywhere in the chain -- every rotation is applied to
a joint in world space, so whatever hangs below it follows rigidly.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import quaternion as quat
from .kinematics import Pose, Skeleton, SolverInputError, joint_runs
from .rig import Leg, offset_below

# Below this sine of the thigh-to-leg-axis angle (about 1 degree) the knee's own
# bend direction is too weak to trust and the calibrated forward takes over.
STRAIGHT_KNEE_SINE = 0.02


@dataclass
class LegOptions:
    """Which of the seed's optional stages the leg solver runs."""

    height_clamp: bool = True  # keep toe, heel and toe tip above their lowest height in the clip
    heel_look_at: bool = True  # turn the foot so the toe reaches its target
    toe_look_at: bool = True  # turn the toe to keep its tip above the ground


@dataclass
class LegLimits:
    """Per-leg constants the solver needs; :func:`measure_legs` derives them from a clip."""

    max_extension: np.ndarray  # (F,) hip-to-ankle distance the soft clamp approaches
    softening: np.ndarray  # (F,) width of the soft clamp's exponential approach
    knee_forward_local: np.ndarray  # knee bend direction in the hip joint's frame
    toe_min_height: float
    heel_min_height: float
    toe_end_min_height: float


def leg_chain(skeleton, leg):
    """Joints whose globals the solver reads or writes, parents first."""
    return skeleton.chain(leg.hip, leg.tip)


def measure_legs(grot, gpos, legs, up, softening_ratio=0.02, comfortable_reach=0.985):
    """Limits of each of ``legs`` from its own motion: reach, knee direction, lowest
    heights (:func:`measure_legs_and_lengths` without the lengths)."""
    return measure_legs_and_lengths(grot, gpos, legs, up, softening_ratio, comfortable_reach)[0]


def measure_legs_and_lengths(grot, gpos, legs, up, softening_ratio=0.02, comfortable_reach=0.985):
    """:func:`measure_legs`' limits, and each leg's :func:`~.rig.leg_bone_lengths` (L,),
    which they are measured from. The legs are measured as rows of one array, gathered at
    once (on a short clip the cost is per numpy call, not per frame)."""
    # The ends of the thigh, the shin and the hip-to-ankle axis, then the points whose lowest
    # heights are kept: each (L, F, 3), the three vectors made and measured in one call each.
    roles = ("hip", "knee", "hip", "knee", "ankle", "ankle", "toe", "tip")
    joints = gpos[:, [getattr(leg, role) for role in roles for leg in legs]].swapaxes(0, 1)
    joints = joints.reshape(len(roles), len(legs), *joints.shape[1:])
    vectors = joints[3:6] - joints[:3]
    # Lengths by quat.lengths: rows with their components side by side, as here, give the
    # numbers of quat.length (and of leg_bone_lengths) at half its cost.
    thigh_vector, _, axis_vector = vectors
    thigh, shin, extension = quat.lengths(vectors)
    thigh_and_shin = thigh + shin
    longest = thigh_and_shin.max(axis=1)
    # "not >" also refuses legs whose bones are all zero long (0 < 0 is false) and NaN.
    for leg, shortest_thigh, shortest_shin, most in zip(legs, thigh.min(axis=1), shin.min(axis=1), longest):
        if not (shortest_thigh > 1e-6 * most and shortest_shin > 1e-6 * most):
            raise SolverInputError(f"leg {leg.name!r}: thigh or shin has zero length")
    lengths = quat.median(thigh_and_shin, axis=1)  # as leg_bone_lengths measures them
    bones = lengths[:, None]
    # Per frame, a leg may reach as far as it does in the input or, where it is
    # bent, up to a comfortable share of its bones -- but never further than the
    # clip ever stretches it, and never to a straight leg it did not have ("avoid
    # the dinosaur"). The soft clamp starts there and ends half way to the bones'
    # full reach.
    reach = np.maximum(extension, np.minimum(comfortable_reach * bones, extension.max(axis=1, keepdims=True)))
    softening = np.maximum(np.minimum(softening_ratio * bones, 0.5 * (bones - reach)), 1e-9 * bones)
    up = np.asarray(up, dtype=float)
    lowest = quat.dot(joints[5:], up).min(axis=2).T  # (L, 3): heel (ankle), toe, tip
    forwards = _knee_forwards_local(grot, gpos, legs, up, thigh_vector, quat.divided(axis_vector, extension), thigh)
    limits = [
        LegLimits(
            max_extension=leg_reach + leg_softening,
            softening=leg_softening,
            knee_forward_local=forward,
            toe_min_height=toe,
            heel_min_height=heel,
            toe_end_min_height=tip,
        )
        for leg_reach, leg_softening, forward, (heel, toe, tip) in zip(reach, softening, forwards, lowest.tolist())
    ]
    return limits, lengths


def _knee_forwards_local(grot, gpos, legs, up, thigh_vector, leg_axis, thigh):
    """Average direction each leg's knee bends toward, in its hip joint's own frame (L, 3);
    ``thigh_vector`` the hip-to-knee vectors and ``leg_axis`` the unit hip-to-ankle ones
    (L, F, 3), ``thigh`` the thighs' lengths (L, F), as :func:`measure_legs_and_lengths`
    has them."""
    hip_rot = quat.conjugate(grot[:, [leg.hip for leg in legs]].swapaxes(0, 1))
    # The dot products by quat.dots: the numbers of quat.dot on rows laid out as these are.
    offset = _perpendicular(thigh_vector, leg_axis, quat.dots(thigh_vector, leg_axis))  # grows with the bend
    total = quat.rotate(hip_rot, offset).sum(axis=1)
    bends = quat.length(total)
    forwards = quat.divided(total, bends)  # (quat.normalize's numbers, the lengths measured once)
    mean_thigh = thigh.sum(axis=1) / thigh.shape[1]  # (thigh.mean's numbers, without its Python layers)
    for row, (leg, bend, size) in enumerate(zip(legs, bends, mean_thigh)):
        if not bend > 1e-3 * size:
            # A leg that never bends: bow the knee toward where the foot points.
            forward = quat.horizontal(gpos[:, leg.toe] - gpos[:, leg.ankle], up)
            forwards[row] = quat.normalize(quat.rotate(hip_rot[row], forward).mean(axis=0))
    return forwards


def _perpendicular(v, unit, along=None):
    """Component of ``v`` perpendicular to the unit vectors ``unit`` (both (..., 3)), all
    components in two calls on rows (see :func:`.quaternion.component_rows`); ``along``
    their dot products (...), where already known."""
    along = quat.dot(v, unit) if along is None else along
    out = quat.empty_as(v)
    np.subtract(quat.component_rows(v), along * quat.component_rows(unit), out=quat.component_rows(out))
    return out


def _raise_to(points, min_height, up):
    """Lift points along ``up`` so none is below ``min_height``."""
    up = np.asarray(up, dtype=float)
    lift = np.maximum(min_height - quat.dot(points, up), 0.0)
    return _along_up(points, lift, up)


def _along_up(points, distance, up):
    """``points`` (..., 3) moved ``distance`` (...) along ``up``, all components in one call
    on rows (see :func:`.quaternion.component_rows`)."""
    out = quat.empty_as(points)
    np.add(quat.component_rows(points), np.multiply.outer(up, distance), out=quat.component_rows(out))
    return out


def _lift_tip(origin, tip, min_height, up):
    """Swing ``tip`` about ``origin`` (same distance, same heading) up to ``min_height``.

    Aiming at a point merely raised to the floor would leave a tip that cannot
    reach it below the floor; on the sphere it can reach, it ends exactly there.
    """
    up = np.asarray(up, dtype=float)
    offset = tip - origin
    length = quat.length(offset)
    rise = _clipped(min_height - quat.dot(origin, up), -length, length)
    height = quat.dot(offset, up)
    lifted_rise = np.maximum(height, rise)
    # The offset less its height along ``up``: quat.horizontal's numbers (a difference is the sum of
    # the negated term, to the bit), all components in one call.
    heading = quat.normalize(_along_up(offset, -height, up))
    flat_length = np.sqrt(np.maximum(length**2 - lifted_rise**2, 0.0))
    out = quat.empty_as(tip)
    rows = quat.component_rows(out)  # all components summed in their places at once
    np.multiply(quat.component_rows(heading), flat_length, out=rows)
    rows += quat.component_rows(origin)
    rows += np.multiply.outer(up, lifted_rise)
    return out


def _clipped(values, low, high):
    """``np.clip(values, low, high)``'s numbers (a NaN stays NaN) in two ufunc passes, without
    its Python wrappers, which on the solve's rows cost more than the passes."""
    out = np.maximum(values, low)
    return np.minimum(out, high, out=out)


def soft_clamp_length(length, max_extension, softening):
    """The seed's soft extension clamp: lengths approach ``max_extension`` exponentially."""
    start = max_extension - softening
    # The excess past the start enters negated (min(start - length, 0) is -max(length - start,
    # 0) to the bit). Past the start the clamp is below the length (1 - exp(-x) < x), before it
    # the start, above: the lesser of the two is the clamp past the start and the length before.
    clamped = start + softening * (1.0 - np.exp(np.minimum(start - length, 0.0) / softening))
    return np.minimum(clamped, length)


def solve_two_bone(pose, leg, limits, heel_target, chain):
    """Rotate hip and knee so the ankle reaches ``heel_target`` (soft-clamped).

    As in the seed: the knee turns about its hinge (the normal of the leg's bend plane)
    to give the hip-to-ankle distance, the hip turns about the same hinge so the ankle
    stays on its ray, and one shortest swing at the hip brings that ray onto the target.
    The knee never twists; the thigh keeps its roll. The globals are updated down to the
    ankle; the joints below it are the caller's to update (:func:`solve_leg` turns the
    foot first).
    """
    gpos = pose.gpos
    a, b, c = gpos[:, leg.hip], gpos[:, leg.knee], gpos[:, leg.ankle]
    to_target = heel_target - a
    clamped = soft_clamp_length(quat.length(to_target), limits.max_extension, limits.softening)
    thigh_vector, shin_vector, axis_vector = b - a, c - b, c - a
    thigh = quat.length(thigh_vector)
    shin = quat.length(shin_vector)
    extension = quat.length(axis_vector)
    leg_axis = quat.divided(axis_vector, extension)
    # The thigh along the leg's axis and across it: the hip's angle (the angle between thigh
    # and axis, atan2 of the two as of the cross and dot products, accurate near 0 and pi)
    # and the knee's bend direction.
    along = quat.dot(thigh_vector, leg_axis)
    across = _perpendicular(thigh_vector, leg_axis, along)
    across_size = quat.length(across)
    bend_direction = _knee_bend_direction(pose.grot[:, leg.hip], across, across_size, limits, thigh)
    bend = quat.normalize(_perpendicular(bend_direction, leg_axis))
    hinge = quat.normalize(quat.cross(bend, leg_axis))  # thigh x shin for a bent leg

    # The knee's angle between thigh and shin: |thigh x shin| is |thigh x axis| (the axis is
    # thigh + shin), the extension times the thigh across the axis.
    knee_now = np.arctan2(extension * across_size, -quat.dot(thigh_vector, shin_vector))
    thigh_squared, shin_squared, clamped_squared = thigh**2, shin**2, clamped**2
    twice_thigh = 2.0 * thigh
    knee_wanted = np.arccos(_clipped((thigh_squared + shin_squared - clamped_squared) / (twice_thigh * shin), -1.0, 1.0))
    hip_now = np.arctan2(across_size, along)
    hip_wanted = np.arccos(_clipped(
        (thigh_squared + clamped_squared - shin_squared) / (twice_thigh * np.maximum(clamped, 1e-12)), -1.0, 1.0
    ))
    knee_turn = quat.from_axis_angle(hinge, knee_now - knee_wanted)
    pose.turn(leg.knee, knee_turn)
    # The ankle swings about the knee with it: where it goes is all the hip's aim reads (its
    # globals, and those between, are recomputed once the hip has turned too).
    ankle = b + quat.rotate(knee_turn, shin_vector)
    hip_bend = quat.from_axis_angle(hinge, hip_now - hip_wanted)
    ankle_ray = quat.rotate(hip_bend, ankle - a)
    pose.turn(leg.hip, quat.multiply(quat.between(ankle_ray, to_target), hip_bend))
    pose.update(chain[1 : chain.index(leg.ankle) + 1])


def _knee_bend_direction(hip_rot, current, size, limits, thigh):
    """The knee's current bend direction, or the calibrated forward where the leg is straight;
    ``hip_rot`` the hip joint's global rotations, ``current`` the thighs' components across
    the hip-to-ankle axis (which grow with the bend) and ``size`` their lengths."""
    weight = _clipped(size / thigh / STRAIGHT_KNEE_SINE, 0.0, 1.0)
    weight = weight * weight * (3.0 - 2.0 * weight)
    reference = quat.rotate(hip_rot, limits.knee_forward_local)
    # The blend of the unit current direction and the reference, all components at once.
    current_weight, reference_weight = weight / np.maximum(size, 1e-12), 1.0 - weight
    out = quat.empty_as(current)
    rows = np.multiply(current_weight, quat.component_rows(current), out=quat.component_rows(out))
    rows += reference_weight * quat.component_rows(reference)
    return out


def look_at(pose, joint, child, target, chain, child_at=None):
    """Turn ``joint`` so that ``child`` (at ``child_at``, if its globals are not up to date)
    points at ``target``; update the chain below."""
    gpos = pose.gpos
    child_at = gpos[:, child] if child_at is None else child_at
    pose.turn(joint, quat.between(child_at - gpos[:, joint], target - gpos[:, joint]))
    pose.update(chain[chain.index(joint) + 1 :])


def solve_leg(pose, leg, limits, toe_target, up, options=None, heel_target=None):
    """SolveLegChain for every frame at once: ``pose`` (a :class:`~.kinematics.Pose`)
    is updated in place so the toe (the ball) reaches ``toe_target`` (F, 3).

    The ankle goes to ``heel_target`` (F, 3) and the foot turns so the ball reaches its
    target: where both points are pinned the foot takes whatever turn that needs. Without
    ``heel_target`` (the seed's "Find the Heel Target") the ankle keeps its offset from the
    ball, so the foot turns about the ball as in the pose.
    """
    options = options or LegOptions()
    chain = leg_chain(pose.skeleton, leg)
    gpos = pose.gpos
    toe_target = _raise_to(toe_target, limits.toe_min_height, up) if options.height_clamp else toe_target
    if heel_target is None:
        heel_target = toe_target + gpos[:, leg.ankle] - gpos[:, leg.toe]
        if options.height_clamp:
            heel_target = _raise_to(heel_target, limits.heel_min_height, up)
    elif options.height_clamp:  # the heel swings up about the ball, which stays on its target
        heel_target = _lift_tip(toe_target, heel_target, limits.heel_min_height, up)
    solve_two_bone(pose, leg, limits, heel_target, chain)
    turns_toe = options.toe_look_at and leg.has_toe_bone
    # Each joint turns before anything past its child is read: only the child is placed to aim it.
    above_tip = chain[: chain.index(leg.toe) + 1] if turns_toe else chain
    if options.heel_look_at:
        look_at(pose, leg.ankle, leg.toe, toe_target, above_tip, child_at=_placed(pose, leg.ankle, leg.toe))
    else:
        pose.update(above_tip[above_tip.index(leg.ankle) + 1 :])
    if turns_toe:
        tip = _placed(pose, leg.toe, leg.toe_end)
        toe_end_target = tip
        if options.height_clamp:
            toe_end_target = _lift_tip(gpos[:, leg.toe], tip, limits.toe_end_min_height, up)
        look_at(pose, leg.toe, leg.toe_end, toe_end_target, chain, child_at=tip)


def _placed(pose, top, joint):
    """Where ``joint`` is (F, 3) from ``top``'s globals, without updating those between."""
    offset = offset_below(pose.skeleton, pose.rot, pose.pos, top, joint)
    return pose.gpos[:, top] + quat.rotate(pose.grot[:, top], offset)


def solve_legs(pose, legs, limits, toe_targets, up, options=None, heel_targets=None):
    """:func:`solve_leg` for several legs, ``limits`` one per leg and the targets (L, F, 3).

    Legs of the same shape (the same chain from hip to toe tip) are solved as one: each
    leg's frames follow the other's as rows of a small skeleton running from the hip's
    parent to the toe tip, so the solve's numpy calls are made once for all of them
    (their cost on a short clip is per call, not per frame). Every row is solved exactly
    as alone."""
    shapes, chains = {}, [leg_chain(pose.skeleton, leg) for leg in legs]
    for index, (leg, chain) in enumerate(zip(legs, chains)):
        roles = tuple(None if j is None else chain.index(j) + 1 for j in (leg.hip, leg.knee, leg.ankle, leg.toe, leg.toe_end))
        shapes.setdefault(roles, []).append(index)
    parents = pose.skeleton.parents.tolist()
    for roles, members in shapes.items():
        # Legs all of one shape (the usual case): the targets whole, not copied by the index.
        chosen = members if len(shapes) > 1 else slice(None)
        heels = None if heel_targets is None else heel_targets[chosen]
        joints = tuple((parents[legs[i].hip], *chains[i]) for i in members)
        _solve_stacked(pose, joints, [limits[i] for i in members], toe_targets[chosen], heels, Leg("stacked", *roles),
                       up, options)


def _solve_stacked(pose, joints, limits, toe_targets, heel_targets, leg, up, options):
    """Solve legs of one shape (``leg``: the roles along the small skeleton) as rows (G F);
    ``joints`` each leg's along it (G, m): the hip's parent, then its :func:`leg_chain`."""
    skeleton, copied_in, copied_back = _stacked_layout(joints, leg.hip, leg.knee, leg.ankle, leg.toe,
                                                       heel_targets is not None)
    count, size = len(joints), len(skeleton)
    frames = pose.rot.shape[0]

    def cut(values, leg_runs):
        """(F, n, k) -> (G F, m, k), a run of consecutive joints per copy. Laid out by component
        (each joint's x of every row side by side, ...): the solve reads and writes positions
        and rotations a component at a time, which numpy then runs through contiguously
        (:func:`.quaternion.empty_as` keeps its results that way)."""
        rows = np.empty((size, values.shape[-1], count, frames)).transpose(2, 3, 0, 1)
        for each, copies in zip(rows, leg_runs):
            for ours, theirs in copies:
                each[:, theirs] = values[:, ours]
        return rows.reshape(count * frames, size, -1)

    rows = Pose(skeleton, *(cut(values, leg_runs) for values, leg_runs in zip((pose.rot, pose.pos, pose.grot, pose.gpos),
                                                                              copied_in)))

    def per_row(field):  # one value per leg, or per leg and frame -> (G F, ...)
        values = np.asarray([getattr(lim, field) for lim in limits], dtype=float)
        # The knee's direction is one vector per leg, never per frame (a 3-frame clip has
        # (G, 3) values of both kinds); it is laid out as the rows, a component at a time,
        # for the rotation that reads it.
        if field == "knee_forward_local":
            forwards = np.empty((3, count, frames))
            forwards[...] = values.T[:, :, None]
            return forwards.reshape(3, -1).T
        if values.ndim == 2:
            return values.reshape(-1)
        return values.repeat(frames)

    stacked = LegLimits(*(per_row(f) for f in ("max_extension", "softening", "knee_forward_local",
                                               "toe_min_height", "heel_min_height", "toe_end_min_height")))
    # The targets (G, F, 3) laid out as the rows, a component at a time: every vector the
    # solve derives from them is then too.
    solve_leg(rows, leg, stacked, quat.as_component_rows(toe_targets), up, options,
              heel_target=None if heel_targets is None else quat.as_component_rows(heel_targets))
    for ours, theirs, solved in zip((pose.rot, pose.grot, pose.gpos), (rows.rot, rows.grot, rows.gpos), copied_back):
        for leg_runs, leg_rows in zip(solved, theirs.reshape(count, frames, size, -1)):
            for in_pose, in_rows in leg_runs:
                ours[:, in_pose] = leg_rows[:, in_rows]


@lru_cache(maxsize=8)
def _stacked_layout(joints, hip, knee, ankle, toe, heels):
    """The small skeleton :func:`_solve_stacked` solves the legs ``joints`` (G, m) on (rows
    ``hip`` ... ``toe`` those joints), and each leg's :func:`_runs` of the rows it copies in
    (of the local rotations and translations, the global rotations and positions; ``heels``:
    given heel targets) and back (of the local and the global rotations, the positions).
    Made once per rig, to be read only: every solve of it asks for the same, and their
    Python loops cost as much as a copy of the rows."""
    size = len(joints[0])

    def runs(first, stop=None):
        """Each leg's joints from row ``first`` up to ``stop`` as runs of the whole pose's."""
        return [_runs(chain[first:stop], first) for chain in joints]

    # Only the rows the solve reads before it writes them are filled. It never updates the
    # hip's parent (row 0) or the hip, and turns the hip and the knee, writing their local
    # rotations, before it updates a joint: of the locals it reads those below the hip, the
    # knee's rotation aside; of the globals, the rotations from the hip's parent to the knee
    # (turning the knee reads its parent's) and the positions from the hip on. Given heel
    # targets it reads no position below the ankle before it recomputes it (solve_leg).
    # What it changes: the local rotations from the hip to the toe (the joints it turns, and
    # those between), the global rotations from the hip and the positions below it.
    skeleton = Skeleton([f"joint {k}" for k in range(size)], np.arange(-1, size - 1))
    below_hip = runs(hip + 1)
    rotations = [before + after for before, after in zip(runs(hip + 1, knee), runs(knee + 1))]
    copied_in = rotations, below_hip, runs(0, knee + 1), runs(hip, ankle + 1) if heels else runs(hip)
    return skeleton, copied_in, (runs(hip, toe + 1), runs(hip), below_hip)


def _runs(joints, first=0):
    """Slices (into the pose, into the rows) of each run of consecutive joints in ``joints``
    (:func:`.kinematics.joint_runs`), which sit in the rows from ``first`` on."""
    runs = []
    for run in joint_runs(joints):
        size = run.stop - run.start
        runs.append((run, slice(first, first + size)))
        first += size
    return runs
