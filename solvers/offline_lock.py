"""Offline foot locking, solved directly.

"Offline Foot Locking" in the seed document ``/work/shared/seeds/ik-and-foot-locking.txt``
relaxes springs between pelvis and toe "particles" for 25,000 iterations.
The same constraints are quadratic in the particles' corrections, so we minimise
them in one least-squares solve: per frame the unknowns are the pelvis correction
``e`` and each toe's correction ``d``, every term couples a frame only with its
neighbour, and the normal equations are block-tridiagonal (see :mod:`.banded`).

Terms, all weighted per second of animation so any frame rate gives the same result:

* locked toes stay put: between two contact frames a toe's step is scaled by
  ``1 - contact`` (a hand-keyed soft curve eases the lock in and out);
* everything else keeps its source velocity (toe steps, pelvis steps);
* the hip-to-toe distance of each frame is preserved (linearised);
* a weak pull toward the input, so a stance is locked at its middle, where it
  stands -- on a step or a box, not on the clip's lowest floor;
* reach: where a leg would have to stretch past the longest extension the clip
  shows, the pelvis follows (an active set, re-linearised a few times).
"""

from dataclasses import dataclass

import numpy as np

from .banded import solve_block_tridiagonal


@dataclass
class OfflineWeights:
    lock: float = 1e4  # locked toe steps: effectively a hard constraint
    velocity: float = 1.0  # source velocity of toes in swing
    stance_anchor: float = 100.0  # a stance locks where the input stands, at its middle
    toe_anchor: float = 1e-3  # keeps a toe that never touches down near the input
    pelvis_velocity: float = 0.06  # source velocity of the pelvis ...
    pelvis_anchor: float = 1.0  # ... against its position: corrections fade in ~0.25 s
    distance: float = 0.01  # hip-to-toe distance of each frame
    reach: float = 1e4  # a leg never stretches past its reach: effectively hard
    reach_iterations: int = 8
    # Stretch left to the leg solver's soft clamp, as a share of the reach: a few
    # millimetres there cost the toe well under a millimetre of its target.
    reach_tolerance: float = 4e-3


@dataclass
class OfflineProblem:
    """Everything the offline solve reads; positions are world space, (F, 3) or (L, F, 3)."""

    pelvis: np.ndarray
    hips: np.ndarray
    toes: np.ndarray
    ankles: np.ndarray  # ankle positions of the input, to know the reach each toe target needs
    contacts: np.ndarray  # (L, F) in 0..1
    reach: np.ndarray  # (L, F) longest hip-to-ankle distance allowed
    fps: float


@dataclass
class OfflineSolution:
    pelvis: np.ndarray  # (F, 3)
    toes: np.ndarray  # (L, F, 3)
    lock_residual: float  # largest toe step between two fully locked frames
    reach_violation: float  # largest hip-to-ankle distance past ``reach``


def solve_offline_lock(problem, weights=None):
    weights = weights or OfflineWeights()
    frames = problem.pelvis.shape[0]
    legs = problem.toes.shape[0]
    size = 3 * (1 + legs)
    dt = 1.0 / problem.fps
    diag = np.zeros((frames, size, size))
    lower = np.zeros((frames, size, size))
    rhs = np.zeros((frames, size))

    # The pelvis keeps its source steps: its correction's step is zero.
    _add_step_terms(diag, lower, rhs, slice(0, 3), np.full(frames - 1, weights.pelvis_velocity / dt), 0.0)
    _add_anchor(diag, slice(0, 3), weights.pelvis_anchor * dt)

    pair = np.minimum(problem.contacts[:, 1:], problem.contacts[:, :-1])  # (L, F-1)
    toe_step = np.diff(problem.toes, axis=1)
    for leg in range(legs):
        block = slice(3 * (leg + 1), 3 * (leg + 2))
        step_weight = (weights.velocity + pair[leg] * (weights.lock - weights.velocity)) / dt
        # correction step + contact * source step = 0  <=>  toe step = (1 - contact) * source step
        _add_step_terms(diag, lower, rhs, block, step_weight, -pair[leg, :, None] * toe_step[leg])
        _add_anchor(diag, block, (weights.toe_anchor + problem.contacts[leg] * weights.stance_anchor) * dt)
        direction = _unit(problem.hips[leg] - problem.toes[leg])
        _add_difference_term(diag, rhs, block, direction, np.full(frames, weights.distance * dt), 0.0)

    base_diag, base_rhs = diag.copy(), rhs.copy()
    corrections = solve_block_tridiagonal(diag, lower, rhs)
    active = np.zeros((legs, frames), dtype=bool)
    for _ in range(weights.reach_iterations):
        stretch, direction, distance = _reach_state(problem, corrections)
        if not (stretch > weights.reach_tolerance * problem.reach).any() or not (stretch[~active] > 0).any():
            break  # within tolerance, or every stretched frame is already constrained
        active |= stretch > 0
        diag, rhs = base_diag.copy(), base_rhs.copy()
        for leg in range(legs):
            block = slice(3 * (leg + 1), 3 * (leg + 2))
            e, d = corrections[:, :3], corrections[:, block]
            # |H - A| ~ distance + n.((e - e_k) - (d - d_k)) = reach
            target = problem.reach[leg] - distance[leg] + np.sum(direction[leg] * (e - d), axis=-1)
            _add_difference_term(diag, rhs, block, direction[leg], active[leg] * weights.reach * dt, target)
        corrections = solve_block_tridiagonal(diag, lower, rhs)

    toes = problem.toes + np.stack([corrections[:, 3 * (i + 1) : 3 * (i + 2)] for i in range(legs)])
    stretch, _, _ = _reach_state(problem, corrections)
    locked = pair >= 1.0
    steps = np.linalg.norm(np.diff(toes, axis=1), axis=-1)
    return OfflineSolution(
        pelvis=problem.pelvis + corrections[:, :3],
        toes=toes,
        lock_residual=float(steps[locked].max()) if locked.any() else 0.0,
        reach_violation=float(max(stretch.max(), 0.0)),
    )


def _unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def _reach_state(problem, corrections):
    """How far each leg stretches past its reach with the current corrections."""
    legs = problem.toes.shape[0]
    e = corrections[:, :3]
    d = np.stack([corrections[:, 3 * (i + 1) : 3 * (i + 2)] for i in range(legs)])
    ankle_targets = problem.ankles + d
    offset = problem.hips + e[None] - ankle_targets
    distance = np.linalg.norm(offset, axis=-1)
    return distance - problem.reach, _unit(offset), distance


def _add_anchor(diag, block, weight):
    index = np.arange(block.start, block.stop)
    diag[:, index, index] += np.asarray(weight).reshape(-1, 1)


def _add_step_terms(diag, lower, rhs, block, weight, goal):
    """Terms ``weight * |x[i] - x[i-1] - goal[i-1]|^2`` on the variables in ``block``."""
    index = np.arange(block.start, block.stop)
    w = np.asarray(weight)[:, None]
    diag[1:, index, index] += w
    diag[:-1, index, index] += w
    lower[1:, index, index] -= w
    goal = np.broadcast_to(goal, (len(w), 3))
    rhs[1:, block] += w * goal
    rhs[:-1, block] -= w * goal


def _add_difference_term(diag, rhs, block, direction, weight, goal):
    """Terms ``weight * (n . (e - d) - goal)^2`` coupling the pelvis with one toe."""
    a = np.zeros(rhs.shape)
    a[:, :3] = direction
    a[:, block] = -direction
    w = np.asarray(weight)
    diag += w[:, None, None] * a[:, :, None] * a[:, None, :]
    rhs += (w * goal)[:, None] * a
