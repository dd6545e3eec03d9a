"""Offline foot locking, solved directly, with a heel and a toe pinned per foot.

"Offline Foot Locking" in the article "Inverse Kinematics and Foot Locking: From Two-Bone
IK to Offline Slide Removal" (the team's ``seeds/ik-and-foot-locking.txt``; "the seed")
relaxes springs between pelvis and toe "particles" for 25,000 iterations.
The same constraints are quadratic in the particles' corrections, so we minimise
them in one least-squares solve: per frame the unknowns are the pelvis correction
``e`` and each foot's correction ``d``, every term couples a frame only with its
neighbour, and in a basis about ``up`` every term but the reach acts on one axis of one
of them alone: the normal equations are independent tridiagonal systems, one per axis of
the pelvis and of each foot (see :mod:`.banded`). Where a leg would overstretch, reach
terms couple the pelvis with that foot on those frames: each round adds them to the
solution without them as a low-rank update, at a cost that follows those frames rather
than the clip's length.

Each foot has two points that can be pinned, as Cascadeur's fulcrum points: the heel
(the ankle joint) and the toe (the ball). The correction ``d`` moves the whole foot, so
the foot keeps the source's rotation about whichever point is pinned: at heel strike the
heel stays and the foot rotates down about it, at push-off the ball stays and the heel
rises. Where the toe is pinned ``d`` follows the ball; where both are pinned and the
source foot still turns, the heel holds by turning the foot about the ball (its own
correction from a causal pass, :func:`_hold`, in :func:`_targets`), and a ball landing
under a planted heel holds where the foot turned about that heel puts it.

Terms, all weighted per second of animation so any frame rate gives the same result:

* pinned points stay put: between two contact frames a point's step is scaled by
  ``1 - contact`` (a hand-keyed soft curve eases the lock in and out);
* everything else keeps its source velocity (foot steps, pelvis steps), a foot near its
  ground far more strongly than one in the air (horizontally): what a lock built up is
  paid back in the swing's air time, not by the foot rushing along the ground after
  toe-off (:func:`_ground_stiffening`); a freed foot even eases into its swing, its first
  steps slower than the source's (:func:`_swing_ease`);
* a free foot's height correction fades within ``height_release_time``: the swing keeps
  the source's clearance instead of skimming the ground lower;
* a weak pull toward the input, so a stance is locked at its middle, where it
  stands -- on a step or a box, not on the clip's lowest floor;
* reach: where a leg would have to stretch past the longest extension the clip
  shows, the pelvis follows (an active set, re-linearised a few times).
"""

from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise

import numpy as np

from .banded import ChainInverse, solve_low_rank_update, solve_mostly_separable, solve_tridiagonal
from .contacts import (
    REFERENCE_LEG_LENGTH,
    box_half_width,
    ease_out,
    eased_after,
    flat_run_edges,
    rolling_max,
    rolling_min,
    smooth,
)
from .quaternion import cross, dot, length


@dataclass
class OfflineWeights:
    lock: float = 1e4  # locked toe steps: effectively a hard constraint
    velocity: float = 1.0  # source velocity of toes in swing
    # ... times this while the foot is on its ground but not pinned (toe-off, a skim):
    # a correction changes there at about a thirtieth of its rate in the air.
    grounded_velocity: float = 30.0
    # Clearance (m, for an adult; scaled to the leg) above where it stood from which a
    # point counts as fully in the air.
    air_clearance: float = 0.05
    stance_anchor: float = 100.0  # a stance locks where the input stands, at its middle
    toe_anchor: float = 1e-3  # keeps a toe that never touches down near the input
    pelvis_velocity: float = 0.06  # source velocity of the pelvis ...
    pelvis_anchor: float = 1.0  # ... against its position: corrections fade in ~0.25 s
    reach: float = 1e4  # a leg never stretches past its reach: hard (per frame, as the lock)
    reach_iterations: int = 8
    # Stretch left to the leg solver's soft clamp, as a share of the reach (0.2 mm on an
    # adult's leg): it costs the toe a few hundredths of a millimetre of its target. Reach
    # terms go on the most stretched frames first (_most_stretched), a round at a time,
    # until no frame stretches more.
    reach_tolerance: float = 2.5e-4
    # A pinned leg straight in the input is held at a smooth length (_straightened), the
    # pelvis following and the foot yielding as for a reach term, but soft: 1 and less left
    # cmu_03_01's knees (120 fps, root x1.25) 1.4-1.9x the input's p99 acceleration, 5 as
    # the input's, with the pelvis's peak acceleration unchanged.
    straight_hold: float = 5.0
    # Seconds over which a point's own correction (see _hold) fades once it is released.
    release_time: float = 0.2
    # Seconds over which a released foot eases into its swing along the ground (_swing_ease).
    swing_ease: float = 0.1
    # Seconds (a time constant) over which a released foot's height correction fades.
    height_release_time: float = 0.05


@dataclass
class OfflineProblem:
    """Everything the offline solve reads; positions are world space, (F, 3) or (L, F, 3)."""

    pelvis: np.ndarray
    hips: np.ndarray
    toes: np.ndarray
    ankles: np.ndarray  # the heels: ankle positions of the input, also for the reach each target needs
    contacts: np.ndarray  # (L, F) in 0..1: the toe (ball) pinned
    reach: np.ndarray  # (L, F) longest hip-to-ankle distance allowed
    fps: float
    heel_contacts: np.ndarray | None = None  # (L, F) in 0..1: the heel pinned; None: never
    up: tuple = (0.0, 0.0, 1.0)  # the world's up, for the feet's heights
    cuts: tuple = ()  # frames where the clip jumps (an NLA repeat starting again): a new piece starts
    lengths: np.ndarray | None = None  # (L,) each leg's bones, thigh + shin; None: no leg is held straight


@dataclass
class OfflineSolution:
    pelvis: np.ndarray  # (F, 3)
    toes: np.ndarray  # (L, F, 3) toe (ball) targets
    heels: np.ndarray  # (L, F, 3) heel (ankle) targets
    lock_residual: float  # largest step of a pinned point between two fully pinned frames
    reach_violation: float  # largest hip-to-ankle distance past ``reach``


def solve_offline_lock(problem, weights=None):
    """The pelvis and foot targets that lock the feet of ``problem``; a clip with cuts is
    solved piece by piece, as the pieces are: nothing a lock builds up on one side of a
    jump (a held correction, a foot easing into its swing, the pelvis's own) carries
    over to the other."""
    weights = weights or OfflineWeights()
    if not len(problem.cuts):
        return _solve_piece(problem, weights)
    return _joined([_solve_piece(_piece(problem, piece), weights)
                    for piece in pieces(problem.pelvis.shape[0], problem.cuts)])


def pieces(frames, cuts):
    """Slices of the pieces of a clip of ``frames`` frames between its ``cuts`` (the frames
    where a new piece starts), in order."""
    return [slice(start, end) for start, end in pairwise([0, *cuts, frames]) if end > start]


def _piece(problem, frames):
    """``problem`` on the ``frames`` (a slice) of one piece alone."""
    rows = (slice(None), frames)  # the (L, F ...) arrays' frames
    heel_contacts = None if problem.heel_contacts is None else problem.heel_contacts[rows]
    return replace(problem, pelvis=problem.pelvis[frames], hips=problem.hips[rows], toes=problem.toes[rows],
                   ankles=problem.ankles[rows], contacts=problem.contacts[rows], reach=problem.reach[rows],
                   heel_contacts=heel_contacts, cuts=())


def _joined(solutions):
    """One solution of the pieces' ``solutions``, in order."""
    return OfflineSolution(
        pelvis=np.concatenate([solution.pelvis for solution in solutions]),
        toes=np.concatenate([solution.toes for solution in solutions], axis=1),
        heels=np.concatenate([solution.heels for solution in solutions], axis=1),
        lock_residual=max(solution.lock_residual for solution in solutions),
        reach_violation=max(solution.reach_violation for solution in solutions),
    )


def _solve_piece(problem, weights):
    """:func:`solve_offline_lock` of a clip without cuts."""
    frames = problem.pelvis.shape[0]
    if frames < 2:  # a lone frame between two jumps: nothing moves to lock
        return OfflineSolution(problem.pelvis.copy(), problem.toes.copy(), problem.ankles.copy(), 0.0, 0.0)
    legs = problem.toes.shape[0]
    dt = 1.0 / problem.fps
    up = np.asarray(problem.up, dtype=float)
    up = up / length(up)
    heel_contacts = _heel_contacts(problem)
    terms = _GroupTerms(1 + legs, frames, up)  # group 0 the pelvis, 1 + leg each foot

    # The pelvis keeps its source steps: its correction's step is zero.
    terms.step(0, weights.pelvis_velocity / dt)
    terms.anchor(0, weights.pelvis_anchor * dt)

    # Arrays of the same shape joined by np.array, not np.stack: its Python layers cost
    # more than the copy.
    pairs = _pairs(np.array((problem.contacts, heel_contacts)))  # (2, L, F-1): the toes', the heels'
    toe_pair, heel_pair = pairs
    points = np.array((problem.toes, problem.ankles))  # (2, L, F, 3): toes, heels
    # The points a component at a time too (2, 3, L, F): the per-frame weights (L, F) then
    # scale whole rows of frames (the steps' goals, each round's targets and legs in the
    # reach rounds), where on (L, F, 3) points they would scale three values at a time.
    by_component = points.transpose(0, 3, 1, 2).copy()
    toe_step, heel_step = by_component[..., 1:] - by_component[..., :-1]  # (3, L, F-1) each
    standing = np.maximum(problem.contacts, heel_contacts)
    # The foot moves as one: on its ground while either point is.
    # By dot (one einsum), not ``@ up``: OpenBLAS runs a matrix-vector product of a long
    # clip's rows on several threads (see quaternion.horizontal).
    heights = dot(points, up)  # (2, L, F): toes, heels
    clearance = _clearance(heights, standing, problem, weights).min(axis=0)
    easing = _swing_ease(standing, problem.fps, weights.swing_ease)
    feet = slice(1, None)  # every foot's group: the legs are rows of one array
    # correction step + contact * source step = 0  <=>  point step = (1 - contact) * source step
    terms.step(feet, _step_weight(toe_pair, weights) / dt, -toe_pair * toe_step)
    # A free foot on its ground keeps its source velocity far more strongly than in
    # the air (toe-off, a skim, the last frames before a landing): what the lock built
    # up is paid back in the air, not by the foot rushing along the ground.
    # Horizontally only: a height correction left by the lock is no slide, and kept it
    # would have the whole swing skim the ground lower than the source.
    # Right after a release the foot eases into its swing along the ground: its first
    # steps keep only part of the source's (from 3/4), the rest paid back in the air.
    free = 1.0 - np.maximum(toe_pair, heel_pair)
    terms.step(feet, free * weights.velocity * _ground_stiffening(clearance, weights) / dt,
               -easing * toe_step, horizontal_only=True)
    # The free foot's height rejoins the source's within ``height_release_time``.
    terms.anchor(feet, (1.0 - standing) * weights.velocity / weights.height_release_time**2 * dt, vertical_only=True)
    # Where the toe is pinned too, the foot follows the toe: the heel holds by turning
    # the foot (_targets), not by pulling the ball along.
    heel_only = heel_pair * (1.0 - toe_pair)
    terms.step(feet, heel_only * weights.lock / dt, -heel_pair * heel_step)
    terms.anchor(feet, (weights.toe_anchor + standing * weights.stance_anchor) * dt)
    pins = _pins(problem, pairs, heel_contacts, weights)
    corrections, targets, stretch = _solve_with_reach(problem, weights, by_component, pins, terms)
    toes, heels = targets.transpose(0, 2, 3, 1)  # (L, F, 3) at the end alone
    return OfflineSolution(
        pelvis=problem.pelvis + corrections[0].T,
        toes=toes,
        heels=heels,
        lock_residual=_lock_residual(targets, pairs),
        reach_violation=float(max(stretch.max(), 0.0)),
    )


def _heel_contacts(problem):
    if problem.heel_contacts is None:
        return np.zeros_like(problem.contacts)
    return problem.heel_contacts


def _pairs(contacts):
    """How strongly each step between two frames is pinned: the weaker of its two frames."""
    return np.minimum(contacts[..., 1:], contacts[..., :-1])


def _step_weight(pair, weights):
    """Per-second weight of a point's step: its source velocity where free, the lock where pinned."""
    return weights.velocity + pair * (weights.lock - weights.velocity)


def _clearance(heights, standing, problem, weights):
    """How high each point (..., L, F) is above the height it stood at in its foot's last
    or next contact (the lower: a step down or up), in ``air_clearance`` (scaled to the
    leg) and clipped to 0..1; 1 throughout on a leg that never stands. ``heights`` (..., L,
    F), ``standing`` (L, F) the feet's contact weights."""
    # The reaches' mean as ndarray.mean makes it (their sum, then divided by their count),
    # without the Python layers of numpy's _methods._mean.
    size = float(np.add.reduce(problem.reach, axis=None)) / problem.reach.size / REFERENCE_LEG_LENGTH
    legs, frames = standing.shape
    on = standing > 0
    # Each frame's last and next contact frame (where none, the leg's first or last frame,
    # which then is no contact: inf), as indices into the flat (L F) rows, both sides
    # gathered at once by np.take (a fancy index behind an ellipsis costs several times as much).
    flat_index = np.arange(legs * frames).reshape(legs, frames)
    rows = flat_index[:, :1]
    sides = np.empty((2, legs, frames), dtype=flat_index.dtype)
    np.maximum.accumulate(np.where(on, flat_index, rows), axis=-1, out=sides[0])
    np.minimum.accumulate(np.where(on, flat_index, rows + (frames - 1))[:, ::-1], axis=-1, out=sides[1, :, ::-1])
    heights_there = np.where(on.ravel().take(sides), heights.reshape(heights.shape[:-2] + (-1,)).take(sides, axis=-1),
                             np.inf)
    stood = np.minimum(heights_there[..., 0, :, :], heights_there[..., 1, :, :])
    clearance = np.minimum(np.maximum((heights - stood) / (weights.air_clearance * size), 0.0), 1.0)
    return np.where(np.isfinite(stood), clearance, 1.0)


EASE_PEAK = 0.25  # the share of its step a foot gives up as it leaves the ground: it starts at 3/4 speed


def _swing_ease(standing, fps, seconds):
    """Per step (L, F-1), the share of the source's step a freed foot gives up as it eases
    into its swing: ``EASE_PEAK`` of it at the instant the foot leaves the ground, none
    ``seconds`` later (smoothstep) or from halfway through a shorter swing on, averaged over
    the step so every frame rate eases alike. A goal for the free foot's velocity, not a pin:
    nothing is held or anchored."""
    if seconds <= 0:
        return np.zeros(standing[..., 1:].shape)
    on = standing > 0
    index = np.arange(standing.shape[-1])
    since = index - np.maximum.accumulate(np.where(on, index, -(10**9)), axis=-1)
    until = np.minimum.accumulate(np.where(on, index, 10**9)[..., ::-1], axis=-1)[..., ::-1] - index
    x = np.where(since <= until, np.minimum(since / (seconds * fps), 1.0), 1.0)  # since >= 0: no np.clip
    ramp = EASE_PEAK * (1.0 - x * x * (3.0 - 2.0 * x))
    return 0.5 * (ramp[..., 1:] + ramp[..., :-1])


def _airborne(clearance):
    """0 on the ground to 1 in the air, smoothly, from a clearance in 0..1."""
    return clearance * clearance * (3.0 - 2.0 * clearance)


def _ground_stiffening(clearance, weights, samples=8):
    """The weight (L, F-1), in units of ``velocity``, a free step adds to keeping its
    source velocity: ``grounded_velocity - 1`` on the ground (the step keeps it that many
    times more strongly than in the air), falling smoothly to 0 in the air.

    Steps in a row yield like springs in series, so a step's weight is the harmonic mean
    of the weight along it, its clearance interpolated between its frames: a toe that
    leaves the ground within one frame at 30 fps yields as it does over two at 60."""
    t = ((np.arange(samples) + 0.5) / samples)[:, None, None]
    start = clearance[..., :-1]
    along = start + (clearance[..., 1:] - start) * t  # (samples, L, F-1): the samples lead, each a whole row
    weight = 1.0 + (weights.grounded_velocity - 1.0) * (1.0 - _airborne(along))
    return samples / np.add.reduce(1.0 / weight, axis=0) - 1.0


def _lock_residual(points, pair):
    """The largest step of a point between two fully pinned frames: ``points`` (P, 3, L, F),
    a component at a time, ``pair`` (P, L, F-1) how strongly each step is pinned (:func:`_pairs`)."""
    locked = pair >= 1.0
    if not np.count_nonzero(locked):  # not locked.any(): see _pins
        return 0.0
    # Every step's squared length, masked, then one root: no boolean gathers of the points.
    steps = points[..., 1:] - points[..., :-1]
    return float(np.sqrt(np.where(locked, _squared_lengths(steps.swapaxes(0, 1)), 0.0).max()))


def _solve_with_reach(problem, weights, points, pins, terms):
    """Solve the terms' normal equations, then again with reach terms on the legs'
    most stretched frames while a leg stretches too far (:func:`_most_stretched`), and
    once more holding pinned legs straight in the input at smooth lengths (:func:`_straightened`);
    ``points`` (2, 3, L, F) the input toes and heels, a component at a time.

    Returns the corrections (1 + L, 3, F) (:meth:`_GroupTerms.to_world`), the (toe, heel)
    targets (2, 3, L, F), a component at a time, and how far each leg stretches past its
    reach to them (L, F)."""
    dt = 1.0 / problem.fps
    hips = problem.hips.transpose(2, 0, 1).copy()  # (3, L, F): every round's legs start there
    tolerance = weights.reach_tolerance * problem.reach  # (L, F): every round's stretch left to the clamp
    diag, lower, rhs = terms.normal_equations()
    # Solved with the chains' first and last unit vectors too: a reach round needs those
    # columns of their inverse (ChainInverse), and two more right-hand sides here cost a
    # fraction of a solve of their own.
    unreached, ends = terms.solve(diag, lower, rhs)
    inverse = ChainInverse.of_ends(ends)  # None on a clip too long for it
    corrections = terms.to_world(unreached)
    targets = _targets(points, corrections, pins)

    def solved_toward(corrections, offset, distance, weight, length_wanted):
        """The corrections with terms ``weight`` (L, F) holding each leg's hip-to-heel distance
        at ``length_wanted`` (L, F), linearized about ``corrections`` and the ``offset`` (3,
        L, F) and ``distance`` they give."""
        # Linearized on the terms' frames (k,) alone: a round's reach terms are on a few.
        frames = (weight > 0).any(axis=0).nonzero()[0]
        offset, distance, weight, length_wanted, corrections = (
            values.take(frames, axis=-1) for values in (offset, distance, weight, length_wanted, corrections))
        direction = offset / np.maximum(distance, 1e-12)  # zero stays zero
        # |H - A| ~ distance + n.((e - e_k) - (d - d_k)) = length: the pelvis follows the
        # leg and the foot yields, as stiff as their other terms make them; a heel's own
        # correction (_hold) is kept as it is.
        along = np.multiply(direction, corrections[0, :, None] - corrections[1:].swapaxes(0, 1))  # (3, L, k)
        along[0] += along[1]  # x + y, then z: as numpy's einsum adds them on these layouts (quaternion.dot's numbers)
        goal = length_wanted - distance + np.add(along[0], along[2], out=along[0])
        held = (terms.in_basis(direction), weight / dt, goal)
        if inverse is not None:
            return terms.to_world(_with_reach_terms(unreached, inverse, frames, *held))
        return terms.to_world(solve_mostly_separable(diag, lower, rhs, frames, *_reach_terms(*held, len(diag))).T)

    def reach_rounds(corrections, targets, active, held, length_wanted):
        """Reach terms on the most stretched frames, a round at a time, while a leg stretches
        too far, solved with the terms ``held`` (L, F) holding legs at ``length_wanted``
        (L, F; their reach where none): the corrections, targets, the frames with a reach
        term and the last solve's :func:`_reach_state`."""
        for _ in range(weights.reach_iterations):
            state = _reach_state(hips, problem.reach, corrections, targets[1])
            over = (state[0] > tolerance) & ~active
            if not np.count_nonzero(over):  # not over.any(): see _pins
                break  # within tolerance, or every frame stretched past it is already constrained
            active = active | _not_outweighed(_most_stretched(over, state[0]), state[0], problem.fps)
            corrections = solved_toward(corrections, *state[1:], np.where(active, weights.reach, held), length_wanted)
            targets = _targets(points, corrections, pins)
        else:  # the last solve's state is not measured yet
            state = _reach_state(hips, problem.reach, corrections, targets[1])
        return corrections, targets, active, state

    corrections, targets, active, (stretch, offset, distance) = reach_rounds(
        corrections, targets, np.zeros(problem.contacts.shape, dtype=bool), 0.0, problem.reach)
    held = _straight_legs(problem) * weights.straight_hold
    if held.any():
        length_wanted = np.where(held > 0, _straightened(distance, problem.reach, problem.fps), problem.reach)
        corrections = solved_toward(corrections, offset, distance, np.where(active, weights.reach, held), length_wanted)
        targets = _targets(points, corrections, pins)
        corrections, targets, _, (stretch, _, _) = reach_rounds(corrections, targets, active, held, length_wanted)
    return corrections, targets, stretch


# A leg whose hip-to-ankle distance is within this share of its bones of straight (about 10
# degrees of knee) counts as straight: there a millimetre of length is degrees of knee.
STRAIGHT_SHARE = 0.004
STRAIGHT_SMOOTHING = 0.1  # s: the window a straight leg's length is smoothed over, and its hold eased


def _straight_legs(problem):
    """How much (L, F, 0..1) each leg is pinned and straight in the input, eased over
    ``STRAIGHT_SMOOTHING``: a hold switched on at one frame would jolt the pelvis."""
    if problem.lengths is None:
        return np.zeros(problem.contacts.shape)
    bones = np.asarray(problem.lengths, dtype=float)[:, None]
    extension = length(problem.hips - problem.ankles)
    closeness = np.minimum(np.maximum((extension - (1.0 - STRAIGHT_SHARE) * bones) / (STRAIGHT_SHARE * bones), 0.0),
                           1.0)  # np.clip's numbers, without its Python layers
    straight = closeness * closeness * (3.0 - 2.0 * closeness) * np.maximum(problem.contacts, _heel_contacts(problem))
    # Eroded by the box's half width first, the eased hold stays within the stance: a foot
    # free to swing yields to it, and the time-compressed walks' short stances slid.
    window = STRAIGHT_SMOOTHING * problem.fps
    return smooth(rolling_min(straight, box_half_width(window)), window)


def _straightened(distance, reach, fps):
    """Smooth hip-to-heel lengths (L, F) along the top of the solved ``distance`` (L, F), no
    longer than ``reach``. Near straight a millimetre is degrees of knee: where the input
    leg is straight, the solve's lengths wander by millimetres frame to frame (the input
    pelvis's capture noise, which the input's ankle followed and the locked foot does not;
    a reach term holding one frame of a run at its reach), and the knee popped straight
    for single frames between bent ones. Along the top (the greatest within a frame more
    either side than the box smooths over), not the middle: the leg stays as straight as
    its straightest frames, and the pelvis is lifted toward the input's, not pulled
    further down."""
    window = STRAIGHT_SMOOTHING * fps
    return np.minimum(smooth(rolling_max(distance, box_half_width(window) + 1), window), reach)


# A reach term waits a round while another leg stretches this many times as far within
# OUTWEIGHED_TIME of it: the pelvis's fix for that leg may well shorten this one.
OUTWEIGHED_SHARE = 4.0
OUTWEIGHED_TIME = 0.1  # s


def _not_outweighed(candidates, stretch, fps):
    """The ``candidates`` (L, F bool, modified in place: a round's most stretched frames) at
    which no other leg stretches ``OUTWEIGHED_SHARE`` times as far (``stretch`` (L, F))
    within ``OUTWEIGHED_TIME``. Two legs held at exactly their reach a frame apart squeeze the
    pelvis between them; where one stretches far and the other a little (a clip starting
    with one foot swinging in at a root slower than the steps, the other just planted: 48 mm
    and 2 mm), the pelvis's fix for the first shortens the second, whose own term would hold
    it long for nothing: the pelvis dropped 5 cm within a frame at 24 fps. Deferred, the
    term is added in a later round where the leg is still too long.

    Judged at the candidates alone, each leg's farthest stretch over the frames around each
    (the window clipped at the clip's ends), where a rolling maximum over every frame cost
    several times as much."""
    legs, frames = candidates.nonzero()
    half = max(1, round(OUTWEIGHED_TIME * fps))
    around = np.minimum(np.maximum(frames[:, None] + np.arange(-half, half + 1), 0), stretch.shape[1] - 1)
    nearby = np.maximum(stretch, 0.0).take(around, axis=1).max(axis=-1)  # (L, k): each leg's, around each candidate
    nearby[legs, np.arange(len(legs))] = 0.0  # the others' alone (each at least 0: the greatest is theirs)
    outweighed = OUTWEIGHED_SHARE * stretch[legs, frames] < nearby.max(axis=0)
    candidates[legs[outweighed], frames[outweighed]] = False
    return candidates


def _most_stretched(over, stretch):
    """Per leg, the most stretched frame (L, F bool) of each run of frames ``over`` (L, F)
    its tolerance, ``stretch`` (L, F) how far each leg stretches past its reach.

    A reach term holds its leg at exactly its reach: an equality, where the leg may only
    not be longer. Where the rest of the solve would leave the leg shorter, the term pulls
    the pelvis for nothing, and where both planted legs have one the pelvis is squeezed
    between them: on every frame of a run stretched a few millimetres, two such squeezes a
    frame apart threw the pelvis 9 cm (a walk starting from standing, both feet planted).
    The most stretched frame alone holds the leg; the pelvis's smoothness carries its fix
    to the frames around, and those still stretched past the tolerance get their own
    term in the next round.

    Frames laid out as rows of F + 1, the last never over, so no run goes on into the next
    leg's row and its frames are one flat slice: each run's greatest stretch is one
    ``reduceat``, and its first frame that stretched the one at or after its start (a sort
    by run and stretch cost twice as much)."""
    legs, frames = over.shape
    changes, width = flat_run_edges(over, 1)  # a run's first frame, then the frame after its last
    values = np.zeros((legs, width))
    values[:, :frames] = stretch
    values = values.ravel()
    greatest = np.maximum.reduceat(values, changes)  # per run, then per gap after it
    spans = np.empty(len(changes), dtype=np.intp)
    spans[:-1] = changes[1:] - changes[:-1]
    spans[-1] = len(values) - changes[-1]
    # A gap's frames that equal its own greatest come after the run before it has had its
    # own: the first at or after a run's start is in the run.
    reached = (values[changes[0] :] == greatest.repeat(spans)).nonzero()[0] + changes[0]
    most = np.zeros((legs, width), dtype=bool)
    most.ravel()[reached.take(reached.searchsorted(changes[::2]))] = True
    return most[:, :frames]


@dataclass
class _Pins:
    """What :func:`_targets` reads of the labels and the input feet."""

    toe_runs: "_Runs"  # the runs of pinned toe steps
    heel_runs: "_Runs"  # ... of pinned heel steps
    foot: np.ndarray  # (L, F) heel-to-ball length of the input
    turned: np.ndarray  # (L, F) the heel weights, eased out after a release (contacts.eased_after)
    heel_only: np.ndarray  # (L, F) where the heel alone is pinned


def _pins(problem, pairs, heel_contacts, weights):
    """The :class:`_Pins` of a problem, or None where no heel is pinned (every foot then
    moves as a whole)."""
    # np.count_nonzero, not ndarray.any: on a mask the count is one C call, where any() runs
    # numpy's _methods._any and a logical_or reduction, three to four times the cost.
    if not np.count_nonzero(pairs[1] > 0):
        return None
    dt = 1.0 / problem.fps
    ease = ease_out(np.arange(problem.contacts.shape[-1]) * dt / weights.release_time)[:, 0]
    return _Pins(
        **dict(zip(("toe_runs", "heel_runs"), _runs(pairs, ease))),
        foot=length(problem.ankles - problem.toes),
        turned=eased_after(heel_contacts, ease),
        heel_only=heel_contacts * (1.0 - problem.contacts),
    )


@dataclass
class _Runs:
    """The runs of pinned steps of one point of every foot, as :func:`_hold` reads them.

    A run of pinned steps ``start..end-1`` holds its point from frame ``start`` to ``end``;
    the runs of all legs are listed together, leg by leg."""

    pair: np.ndarray  # (L, F-1) how strongly each step is pinned (_pairs)
    flat_starts: np.ndarray  # (R,) each run's first frame, as an index into (L F) rows
    flat_ends: np.ndarray  # (R,) its last frame, as an index into (L F) rows
    # :func:`_doubling` of the share of the leg's previous correction left at each run's start
    # (0: none before), for :func:`_doubled_scan`
    doubling: list
    last: np.ndarray  # (L, F) per frame, the last run started before it (0 where none: see ``kept``)
    last_start: np.ndarray  # (L, F) that run's first frame, as an index into (L F) rows
    # (L, F) the share of that run's correction a frame keeps: all of it on the frames a
    # pinned step of the run reaches, what is left of it after (0 before any run)
    kept: np.ndarray
    # (3, L, F) where :func:`_hold` sums the pinned steps, its first frame's 0: made once, as the
    # holds of a solve take turns with it, not an empty array and its first frame set on each
    # of a solve's 15 holds
    built: np.ndarray


def _runs(pairs, ease):
    """The :class:`_Runs` of each point's ``pairs`` (P, L, F-1), found for all points in one
    pass over their (P L) rows; ``ease`` (F,) the share of a released correction left, frame
    by frame since the release (:func:`.contacts.ease_out`)."""
    points, legs_count = pairs.shape[:2]
    pinned = pairs.reshape(points * legs_count, -1) > 0
    frames = pinned.shape[-1] + 1
    # (P L, F): +1 where a run starts, -1 where one ends (no pinned step before or after the clip)
    edges = np.zeros((len(pinned), frames), dtype=np.int8)
    edges[:, :-1] = pinned
    edges[:, 1:] -= pinned
    is_start = edges == 1
    rows, starts = is_start.nonzero()
    ends = (edges == -1).nonzero()[1]  # row by row, as the starts
    after_own = np.zeros(len(rows), dtype=bool)  # the run follows an earlier run of its own row
    after_own[1:] = rows[1:] == rows[:-1]
    gaps = np.zeros(len(rows), dtype=np.intp)  # frames since the run before (of any row)
    gaps[1:] = starts[1:] - ends[:-1]
    resumed = np.where(after_own, ease.take(gaps, mode="clip"), 0.0)[:, None]  # (clipped: no gap below 0)
    # Runs of the row started at or before each frame, and each row's first index in the runs:
    # np.add.accumulate, the loop cumsum calls (counting in intp, as cumsum counts a mask), without its layers.
    started = np.add.accumulate(is_start, axis=-1, dtype=np.intp)
    first_run = np.add.accumulate(started[:, -1]) - started[:, -1]
    any_run = np.zeros(edges.shape, dtype=bool)
    any_run[:, 1:] = started[:, :-1] > 0
    inside = np.zeros(edges.shape, dtype=bool)
    inside[:, 1:] = pinned
    last = np.zeros(edges.shape, dtype=np.intp)
    last[:, 1:] = started[:, :-1] - 1 + first_run[:, None]
    since = np.arange(frames) - ends.take(np.where(any_run, last, 0)) if len(ends) else np.zeros(edges.shape, dtype=np.intp)
    kept = np.where(any_run & ~inside, ease.take(since, mode="clip"), inside)  # (clipped to the ease's frames)
    flat_starts, flat_ends = rows * frames + starts, rows * frames + ends
    # Each point's own runs: its rows, its runs (``first`` to ``stop``) and indices into them.
    bounds = rows.searchsorted(np.arange(points + 1) * legs_count)
    last_start = flat_starts.take(last) if len(ends) else last
    split = []
    for point, (first, stop) in enumerate(pairwise(bounds)):
        own_rows, own_runs = slice(point * legs_count, (point + 1) * legs_count), slice(first, stop)
        offset = point * legs_count * frames
        split.append(_Runs(
            pairs[point], flat_starts[own_runs] - offset, flat_ends[own_runs] - offset,
            _doubling(resumed[own_runs]), np.where(any_run[own_rows], last[own_rows] - first, 0),
            np.where(any_run[own_rows], last_start[own_rows] - offset, 0), kept[own_rows],
            np.zeros((3, legs_count, frames))))
    return split


def _targets(points, corrections, pins):
    """Toe and heel targets (2, 3, L, F) of the input toes and heels ``points`` (2, 3, L,
    F): each foot moved by its correction, then, where heel and toe are both pinned, the
    foot turned about the ball so the heel holds too (``pins``: :func:`_pins`).

    A component at a time: the per-frame weights (L, F) then scale whole rows of frames,
    where on (L, F, 3) points they would scale three values at a time."""
    moved = points + corrections[1:].swapaxes(0, 1)  # each foot's correction (3, L, F)
    if pins is None:  # no heel pinned: every foot moves as a whole
        return moved
    toes, heels = moved
    # Where only the heel is pinned the foot correction already holds it; where the toe is
    # pinned too the foot follows the ball and the heel needs its own correction to stay.
    heels = _hold(heels, pins.heel_runs)
    # While the heel is planted the ball goes where the foot turned about the held heel
    # puts it (the leg solver's aim lands it there), and holds from there when it lands:
    # a ball lifting and landing again under a planted heel does not pull the heel.
    # A released heel hands the ball back to the foot's own correction over ``release_time``,
    # as its held position eases out: not in one frame.
    about_heel = heels + _rescaled(toes - heels, pins.foot)
    toes = _hold(toes + pins.turned * (about_heel - toes), pins.toe_runs, out=moved[0])
    # Where the toe is pinned the heel keeps the foot's length from the ball: the foot
    # turns about the ball toward the held heel, and the ball lands on its target even
    # where the labels ask the rigid foot for more (the seed's "Lock the Toe, Not the
    # Heel"). A released heel rejoins the source foot over ``release_time``.
    about_ball = toes + _rescaled(heels - toes, pins.foot)
    heels = about_ball + pins.heel_only * (heels - about_ball)
    # A heel re-planted before its last hold has eased out sits a little off the ball's
    # sphere: held again, it stays put where the ball lifts before it instead of snapping.
    _hold(heels, pins.heel_runs, out=moved[1])
    return moved


def _hold(points, runs, out=None):
    """Points (3, L, F), a component at a time, plus their own corrections, so that each
    holds exactly where it was when it was pinned, even where its foot moved as a whole
    could not hold it (the source foot turning while heel and toe are planted). ``runs``:
    the :func:`_runs` of the point's pinned steps. Written into ``out`` where given.

    Causal: a correction builds up only over pinned steps (a pinned step is scaled by
    ``1 - contact``), so a point is never pulled ahead of its pin; once released it eases
    out to nothing over ``release_time`` (zero slope at both ends), so the next pin starts
    from the foot as the correction leaves it, even after a short swing."""
    # The correction the pinned steps build up from the first frame on: each pinned step undone,
    # summed by np.add.accumulate (cumsum's loop without its layers).
    steps = points[..., :-1] - points[..., 1:]
    steps *= runs.pair
    built = runs.built
    np.add.accumulate(steps, axis=-1, out=built[..., 1:])
    # Inside a run its point holds what the run started with plus what it built since:
    # ``built`` at the frame less ``counted_from``, per run. After the run no step builds:
    # ``built`` stays at the run's end, the same sum is what the run carried (to
    # round-off), of which the frame keeps what is left (``kept``).
    # Gathers along the flat (L F) frames by np.take: a fancy index behind a slice is several times slower.
    flat = built.reshape(len(built), -1)
    if runs.doubling:
        # Each run ends with what it started with (the eased rest of the leg's previous run)
        # plus what it built up: an affine recurrence over the runs, scanned in log2 steps.
        built_at_end = flat.take(runs.flat_ends, axis=1)
        carried = _doubled_scan(runs.doubling, (built_at_end - flat.take(runs.flat_starts, axis=1)).T).T
        counted_from = (built_at_end - carried).take(runs.last, axis=1)
    else:  # every run starts afresh: it holds what it built since its first frame
        counted_from = flat.take(runs.last_start, axis=1)
    own = np.subtract(built, counted_from, out=counted_from)
    own *= runs.kept
    return np.add(own, points, out=own if out is None else out)


def _scan(shares, steps):
    """``x[r] = shares[r] * x[r - 1] + steps[r]`` (``x[-1] = 0``) for every r at once, by
    recursive doubling: log2(R) vector steps instead of one per row. ``shares`` (R, 1) in
    0..1, ``steps`` (R, 3)."""
    return _doubled_scan(_doubling(shares), steps.copy())


def _doubling(shares):
    """The factors of :func:`_scan`'s doubling steps, (shift, factors (R - shift, 1)) each:
    they depend on the shares alone, so a point's runs compute them once for every scan.
    The steps end where their factors are all zero: such a step adds nothing, and every
    later step's factors are products of those. Where every swing outlasts ``release_time``
    no run resumes a correction, and a scan is no step at all (15 scans a click's solve,
    6 numpy calls each)."""
    levels = []
    shift = 1
    while shift < len(shares):
        factors = shares[shift:]
        if not np.count_nonzero(factors):  # not factors.any(): see _pins
            break
        levels.append((shift, factors))
        shares = np.concatenate((shares[:shift], factors * shares[:-shift]))
        shift *= 2
    return levels


def _doubled_scan(levels, steps):
    """:func:`_scan` of ``steps`` with the shares' :func:`_doubling`, in place (``steps``
    becomes the scan)."""
    for shift, factors in levels:
        steps[shift:] += factors * steps[:-shift]  # the product reads the steps before the sum writes them
    return steps


def _rescaled(v, lengths):
    """Vectors stored a component at a time (3, ...) scaled to ``lengths`` (...); zero stays
    zero. Row by row: each component's row and the lengths are contiguous, where a short
    last axis would have numpy step three values at a time."""
    total = _squared_lengths(v)
    np.sqrt(total, out=total)
    return v * np.divide(lengths, np.maximum(total, 1e-12, out=total), out=total)


def _squared_lengths(v):
    """Squared lengths of vectors stored a component at a time (3, ...), the squares added
    as :func:`.quaternion.dot` adds them on (..., 3) rows (the first and last, then the
    middle one): the numbers of :func:`.quaternion.length`, squared."""
    squared = np.square(v)
    total = squared[0] + squared[2]
    total += squared[1]
    return total


def _reach_state(hips, reach, corrections, heels):
    """How far each leg stretches past its ``reach`` (L, F), from the input ``hips`` moved by
    the pelvis correction in ``corrections`` to the heel targets, both (3, L, F) a component
    at a time; then the hip-to-heel offsets (3, L, F) and their lengths."""
    offset = hips + corrections[0, :, None]
    offset -= heels
    distance = np.sqrt(_squared_lengths(offset))
    return distance - reach, offset, distance


class _GroupTerms:
    """The terms that act on one group of three variables alone (the pelvis's correction,
    a foot's), summed per group and per axis kind (across ``up``, along it).

    The normal equations are written in a basis of two axes across ``up`` and ``up`` itself
    (:meth:`in_basis`; for an axis-aligned ``up`` a signed permutation, exact), where these
    terms act on each axis alone: one independent tridiagonal system per group and axis."""

    def __init__(self, groups, frames, up):
        self.basis = _basis_about(tuple(up.tolist()))
        # Per group, per axis of the basis (two across ``up``, then ``up``) and per step or frame.
        self.step_weights = np.zeros((groups, 3, frames - 1))
        self.pulled = np.zeros((groups, 3, frames - 1))  # the steps' weight * P goal, in the basis
        self.anchor_weights = np.zeros((groups, 3, frames))
        # Per group, whether a term acts on some of its axes alone and whether one has a goal
        # (see :meth:`solve`).
        self.by_axis = np.zeros(groups, dtype=bool)
        self.has_goals = np.zeros(groups, dtype=bool)

    def step(self, group, weight, goal=None, horizontal_only=False):
        """Terms ``weight * |P (x[i] - x[i-1] - goal[i-1])|^2`` on ``group``'s variables, ``P``
        all three axes or, ``horizontal_only``, those across ``up``; ``group`` an index or a
        slice of groups (the feet), whose weights are rows, and whose goals world vectors
        (3, L, n) stored a component at a time."""
        axes = ACROSS if horizontal_only else ALL_AXES
        self.step_weights[group, axes] += _per_axis(weight)
        self.by_axis[group] |= horizontal_only
        if goal is not None:
            self.has_goals[group] = True
            projected = self.in_basis(goal)
            if horizontal_only:
                projected[..., ALONG_UP, :] = 0.0
            projected *= _per_axis(weight)
            self.pulled[group] += projected

    def anchor(self, group, weight, vertical_only=False):
        """Terms ``weight * |P x|^2`` pulling ``group``'s variables toward zero, ``P`` all
        three axes or, ``vertical_only``, the one along ``up``."""
        self.anchor_weights[group, ALONG_UP if vertical_only else ALL_AXES] += _per_axis(weight)
        self.by_axis[group] |= vertical_only

    def in_basis(self, rows):
        """World vectors stored a component at a time (3, L, n) in the normal equations'
        basis, laid out as its groups' rows (L, 3, n): one 3 x 3 by 3 x (L n) product."""
        return (self.basis @ rows.reshape(3, -1)).reshape(rows.shape).swapaxes(0, 1)

    def to_world(self, x):
        """A solution (3G, F) in the normal equations' basis (a row per group and axis, as
        :meth:`normal_equations`), in world axes, a component at a time: (G, 3, F).

        One 3 x 3 by 3 x F product per group: a BLAS call each along whole rows of frames
        (single-threaded below ~29k frames, as :meth:`in_basis`), where an einsum over
        (F, G, 3) costs several times as much in its short inner loops."""
        return self.basis.T @ x.reshape(-1, 3, x.shape[-1])

    def normal_equations(self):
        """The diagonal, the couplings of each frame to the one before and the right-hand
        side, (3G, F) each, in :meth:`in_basis`: one row per group and axis, each an
        independent tridiagonal system (:func:`.banded.solve_tridiagonal`)."""
        step = self.step_weights
        own = self.anchor_weights.copy()
        own[..., 1:] += step
        own[..., :-1] += step
        groups, frames = own.shape[0], own.shape[-1]
        neighbour = np.empty_like(own)
        neighbour[..., 0] = 0.0
        np.negative(step, out=neighbour[..., 1:])
        pulled = self.pulled
        rhs = np.zeros((groups, 3, frames))
        rhs[..., 1:] += pulled
        rhs[..., :-1] -= pulled
        return own.reshape(-1, frames), neighbour.reshape(-1, frames), rhs.reshape(-1, frames)

    def solve(self, diag, lower, rhs):
        """The solution (3G, F) of :meth:`normal_equations` ``diag``, ``lower``, ``rhs``, and
        the first and last columns (2, 3G, F) of each chain's inverse (for
        :class:`.banded.ChainInverse`), by one :func:`.banded.solve_tridiagonal` of the
        distinct systems alone. The two axes across ``up`` take the same terms (``ACROSS`` is
        both), and so does a group's third where no term acts on some of its axes alone:
        their chains are one, and so are their inverses. A group without goals has no
        right-hand side: its solution is zero."""
        pulled = [3 * group + axis for group, goals in enumerate(self.has_goals.tolist()) if goals for axis in range(3)]
        distinct, alike = [], []  # the distinct chains' rows; each row's chain among them
        for group, by_axis in enumerate(self.by_axis.tolist()):
            first = len(distinct)
            if by_axis:  # the axes across ``up``, then the one along it
                distinct += [3 * group, 3 * group + 2]
                alike += [first, first, first + 1]
            else:
                distinct.append(3 * group)
                alike += [first] * 3
        systems, count, frames = pulled + distinct + distinct, len(pulled), diag.shape[-1]
        columns = np.zeros((len(systems), frames))
        columns[:count] = rhs.take(pulled, axis=0)
        columns[count : count + len(distinct), 0] = 1.0
        columns[count + len(distinct) :, -1] = 1.0
        x = solve_tridiagonal(diag.take(systems, axis=0), lower.take(systems, axis=0), columns)
        solution = np.zeros(diag.shape)
        solution[pulled] = x[:count]
        return solution, x[count:].reshape(2, len(distinct), frames).take(alike, axis=1)


ACROSS, ALONG_UP, ALL_AXES = slice(0, 2), slice(2, 3), slice(None)  # the basis's axes (_basis_about)


def _per_axis(weight):
    """A weight per frame (..., n), or one for all frames, broadcast over the axes of
    :class:`_GroupTerms`' (..., 3, n) rows."""
    weight = np.asarray(weight)
    return weight[..., None, :] if weight.ndim else weight


@lru_cache(maxsize=4)
def _basis_about(up):
    """Rows: two unit axes across the unit ``up`` (a tuple) and ``up``, a right-handed basis;
    built from the world axis least aligned with ``up``, so an axis-aligned ``up`` gives a
    signed permutation (exact). Made once per ``up`` (read-only, shared): every solve of a
    scene asks for the same, and its dozen numpy calls on one vector cost as much as a
    reach round's gathers."""
    up = np.array(up)
    axis = np.eye(3)[np.argmin(np.abs(up))]
    basis = np.empty((3, 3))
    cross(up, axis, out=basis[0])  # not np.cross: a few times slower on one vector
    # The second axis, up x across, is (up (up . axis) - axis) / |up x axis|: no second cross product.
    np.subtract(up * dot(up, axis), axis, out=basis[1])
    basis[:2] /= length(basis[0])
    basis[2] = up
    basis.flags.writeable = False
    return basis


def _with_reach_terms(unreached, inverse, frames, direction, weight, goal):
    """The solution (3G, F), in the normal equations' basis, with the reach terms
    ``weight * (n . (e - d) - goal)^2`` on the sorted ``frames`` (k,) (``direction`` n (L,
    3, k) in the basis, ``weight`` and ``goal`` (L, k), 0 weight where a leg has none)
    added to the equations whose solution is ``unreached``, by
    :func:`.banded.solve_low_rank_update`: each term couples the pelvis's three chains
    (rows 0-2) with its foot's at its frame."""
    columns, legs = weight.T.nonzero()  # by frame
    rows = _TERM_ROWS + legs[:, None] * _TERM_ROWS_PER_LEG  # the pelvis's, then rows 3 (1 + leg) on
    across = direction[legs, :, columns]  # (T, 3)
    vectors = np.concatenate((across, -across), axis=1)
    return solve_low_rank_update(inverse, unreached, frames.take(columns), rows, vectors, weight[legs, columns],
                                 goal[legs, columns])


# A reach term's rows of the normal equations (see :func:`_with_reach_terms`): the pelvis's
# three chains and the first foot's, then three rows further on for each leg after it.
_TERM_ROWS = np.arange(6)
_TERM_ROWS_PER_LEG = np.array([0, 0, 0, 3, 3, 3])


def _reach_terms(across, weight, goal, size):
    """The normal equations' dense terms ``weight * (n . (e - d) - goal)^2`` coupling the
    pelvis's correction ``e`` with each foot's ``d`` on the frames (k,) of their values, as
    :func:`.banded.solve_mostly_separable` takes them, the frames last: per leg, the
    vectors ``u`` (L, size, k) and weights (L, k) of the blocks' terms ``weight * u u^T``,
    and the right-hand sides (size, k) (``across`` n (L, 3, k), ``weight`` and ``goal``
    (L, k), in the equations' basis)."""
    legs, count = weight.shape
    # Each leg's term acts along u = (n on the pelvis, -n on its foot, 0 on the other feet).
    along = np.zeros((legs, size // 3, 3, count))
    along[:, 0] = across
    along[np.arange(legs), np.arange(legs) + 1] = -across
    along = along.reshape(legs, size, count)
    return along, weight, np.add.reduce((goal * weight)[:, None] * along)
