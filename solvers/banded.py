"""Tridiagonal and block-tridiagonal linear systems, solved by cyclic reduction.

numpy has no banded solver and Blender ships no scipy. The offline foot lock's
normal equations couple each frame only with its neighbours: without reach terms they
are independent scalar chains (:func:`solve_tridiagonal`, a batch of them at once); with
them, the frames where the reach couples the pelvis with a foot have dense blocks. Those
are a few terms added to the chains: :func:`solve_low_rank_update` adds them to the
chains' solution through the chains' inverse, known in closed form from two of its
columns (:class:`ChainInverse`); where that form runs out of floating-point range (clips
of more than about a minute), :func:`solve_mostly_separable` eliminates the chains
between those frames before it solves a symmetric block-tridiagonal system on them alone
(:func:`solve_block_tridiagonal`).

Cyclic reduction eliminates every other frame per level, so the work is vectorized over
frames and needs only log2(frames) Python-level steps; on symmetric positive definite systems it is as stable as Cholesky (it is
Cholesky of the rows reordered odd after even).

On the clips of a click the cost is numpy's per-call and per-row overhead, not
arithmetic, so each level does as few calls as it can, on arrays laid out so that
the elementwise ones run along whole blocks: a row's couplings to its neighbours and
its right-hand sides travel transposed, as one array ``[lower^T ; upper^T ; rhs^T]``
(n, 2m + r, m), and one product ``rows @ D^-1`` eliminates all three through a
dropped row (``D`` is symmetric).
"""

from functools import lru_cache

import numpy as np


def solve_tridiagonal(diag, lower, rhs):
    """Solve a batch of symmetric positive definite tridiagonal systems, one per row:
    ``diag`` (c, n) their diagonals, ``lower`` (c, n) ``A[i, i - 1]`` (``lower[:, 0]`` is
    ignored; ``A[i - 1, i]`` is the same), ``rhs`` (c, n), or (s, c, n) for s right-hand
    sides of each system. Returns x, shaped as ``rhs``.

    The rows are padded to a few rows (at most ``SHORT_CHAIN``) times a power of two with
    rows that couple to nothing (their x is 0, and every term they add to a real row is an
    exact zero) and laid end to end as one chain, each system once per right-hand side:
    every level then keeps the even rows of every system at once, through 1-D slices, which
    numpy runs several times faster than the same slices of 2-D rows. The levels' cost
    follows the padded rows (317 rows: 320, where the next power of two would be 512), and
    the last few rows of every system are solved one after the other
    (:func:`_solve_short_chains`)."""
    n = diag.shape[-1]
    levels = max(-(-n // SHORT_CHAIN) - 1, 0).bit_length()  # halvings to at most SHORT_CHAIN rows
    short = -(-n >> levels)
    size = short << levels
    # Only the padding is set before the systems are copied in: zeroing the whole array
    # costs a pass over it.
    padded = np.empty((3,) + rhs.shape[:-1] + (size,))
    padded[..., n:] = 0.0
    padded[0, ..., n:] = 1.0
    padded[0, ..., :n] = diag
    padded[1, ..., 0] = 0.0  # no coupling between one system and the next
    padded[1, ..., 1:n] = lower[:, 1:]
    padded[2, ..., :n] = rhs
    x = _reduce_chains(*padded.reshape(3, -1), size, short)
    return x.reshape(padded.shape[1:])[..., :n]


# :func:`solve_tridiagonal` halves its systems down to this many rows or fewer, then solves
# them row by row: up to five rows cost fewer numpy calls than two more levels (on the
# click's chains, 9 x 317 rows: 1.65M -> 1.31M instructions).
SHORT_CHAIN = 5


def _reduce_chains(diag, lower, rhs, length, short):
    """:func:`solve_tridiagonal` of systems ``length`` rows long (``short`` times a power of
    two) laid end to end in ``diag``, ``lower`` and ``rhs`` (1-D), each one's first ``lower``
    zero: their solution (1-D)."""
    if length == short:
        x = np.empty_like(rhs)
        _solve_short_chains(*(values.reshape(-1, short) for values in (diag, lower, rhs, x)))
        return x
    # The couplings and right-hand sides of the kept (even) rows and of the dropped (odd) ones,
    # each copied into a contiguous row: numpy runs the level's products and sums, which read
    # each several times, along contiguous rows several times faster than along every other
    # value (one value at a time, where contiguous ones go four at a time).
    (kept_lower, to_previous), (kept_rhs, dropped_rhs) = (values.reshape(-1, 2).T.copy() for values in (lower, rhs))
    # The dropped rows' pivots, negated: every product below then has the sign it is
    # added with, and no level spends a call negating one.
    inverse = -1.0 / diag[1::2]
    to_next = kept_lower[1:]  # the dropped rows' couplings to the next row; the last has no next
    # Kept row k between dropped rows p = k - 1 and q = k + 1: its diagonal loses
    # A[k, p]^2 / A[p, p] and A[k, q]^2 / A[q, q], it couples to k - 2 through
    # -A[k, p] A[p, k - 2] / A[p, p], and its right-hand side loses A[k, p] b_p / A[p, p] ...
    before = to_next * inverse[:-1]  # kept rows 1..: -A[k, p] / A[p, p]
    after = to_previous * inverse  # -A[k, q] / A[q, q]
    kept_diag = diag[0::2] + after * to_previous
    kept_diag[1:] += before * to_next
    reduced_lower = np.empty_like(kept_diag)
    reduced_lower[0] = 0.0
    np.multiply(before, to_previous[:-1], out=reduced_lower[1:])
    kept_rhs += after * dropped_rhs
    kept_rhs[1:] += before * dropped_rhs[:-1]
    kept = _reduce_chains(kept_diag, reduced_lower, kept_rhs, length // 2, short)
    pull = to_previous * kept
    pull[:-1] += to_next * kept[1:]
    x = np.empty((len(kept), 2))  # each kept row's solution, then the dropped row's after it
    x[:, 0] = kept
    np.multiply(pull - dropped_rhs, inverse, out=x[:, 1])
    return x.ravel()


def _solve_short_chains(diag, lower, rhs, x):
    """Solve the tridiagonal systems left when :func:`_reduce_chains` has halved them to a
    few rows, ``diag``, ``lower``, ``rhs`` and ``x`` (c, rows), a row of every system at a
    time (LU without pivoting, stable on SPD systems). Overwrites ``diag`` and ``rhs``."""
    rows = diag.shape[-1]
    for i in range(1, rows):  # elimination: row i loses w times row i - 1
        w = lower[:, i] / diag[:, i - 1]
        diag[:, i] -= w * lower[:, i]
        rhs[:, i] -= w * rhs[:, i - 1]
    np.divide(rhs[:, -1], diag[:, -1], out=x[:, -1])
    for i in range(rows - 2, -1, -1):  # back substitution
        np.divide(rhs[:, i] - lower[:, i + 1] * x[:, i + 1], diag[:, i], out=x[:, i])


def solve_block_tridiagonal(diag, lower, rhs):
    """Solve ``A x = rhs`` for a block-tridiagonal ``A``.

    ``diag``  (n, m, m): blocks ``A[i, i]``;
    ``lower`` (n, m, m): blocks ``A[i, i - 1]`` (``lower[0]`` is ignored), or (n, m): the
    diagonals of diagonal blocks, whose first level of reduction is elementwise;
    the upper blocks are ``A[i, i + 1] = lower[i + 1].T`` (``A`` is symmetric).
    ``rhs``   (n, m), or (n, m, r) for ``r`` right-hand sides at once.
    """
    rhs = np.asarray(rhs, dtype=float)
    columns = (rhs[..., None] if rhs.ndim == 2 else rhs).swapaxes(-1, -2)
    n, m = diag.shape[:2]
    if lower.ndim == 2 and n > 2:
        frames_last = (1, 2, 0)
        x = _reduce_diagonal_coupling(diag[0::2].transpose(frames_last).copy(),
                                      spd_inverse(diag[1::2]).transpose(frames_last), lower.T,
                                      columns.transpose(frames_last))
    else:
        if lower.ndim == 2:
            lower = lower[:, :, None] * np.eye(m)
        rows = np.empty((n, 2 * m + columns.shape[1], m))
        rows[0, :m] = rows[-1, m : 2 * m] = 0.0  # the ends have no neighbour there
        rows[1:, :m] = lower[1:].swapaxes(-1, -2)  # A[i, i - 1]^T
        rows[:-1, m : 2 * m] = lower[1:]  # A[i, i + 1]^T
        rows[:, 2 * m :] = columns
        x = _reduce(diag, rows)
    x = x.swapaxes(-1, -2)
    return x[..., 0] if rhs.ndim == 2 else x


def solve_mostly_separable(diag, lower, rhs, frames, vectors, weights, pulls):
    """Solve a symmetric positive definite block-tridiagonal system whose blocks are
    diagonal but at a few ``frames``: independent scalar chains (``diag``, ``lower``,
    ``rhs`` (m, n), as :func:`solve_tridiagonal` takes them, one row per chain) plus dense
    terms of rank r added to the diagonal blocks of the sorted ``frames`` (k,), the sum of
    ``weights`` (r, k) times ``v v^T`` of their ``vectors`` (r, m, k), and ``pulls`` (m, k)
    added to their right-hand sides. Returns x (n, m).

    Exact, at a cost that follows the dense frames rather than the chains' length: the
    frames between them (``outside``) are eliminated first. Outside, the system is the
    chains cut at every dense frame, solved for the right-hand side and for a unit pull from
    the dense frame on each side of each stretch (one :func:`solve_tridiagonal` of three
    right-hand sides); what is left is a block-tridiagonal system on the dense frames alone,
    coupled through diagonal blocks (:func:`solve_block_tridiagonal`)."""
    m, n = diag.shape
    # Whether each frame is outside, with a frame that is not on either side of the clip:
    # a frame's neighbours are then read by np.take without clipping or masking the ends.
    is_outside = np.zeros(n + 2, dtype=bool)
    is_outside[1:-1] = True
    is_outside[frames + 1] = False
    outside = np.flatnonzero(is_outside) - 1
    x = np.empty((n, m))  # frame by frame, as returned: the rows of each set are contiguous
    # Per dense frame, whether its neighbour is outside: it then passes back through the
    # chain between the two.
    left_out, right_out = is_outside.take(frames), is_outside.take(frames + 2)
    reduced_diag, reduced_rhs = diag.take(frames, axis=1), rhs.take(frames, axis=1)
    reduced_lower = lower.take(frames, axis=1)
    if len(outside):
        # The chains cut at the dense frames: a frame outside whose previous frame is dense
        # (or before the clip) starts a stretch and couples to nothing before it.
        # (Columns gathered by take: a fancy index behind a slice costs several times as much.)
        outside_lower = lower.take(outside, axis=1)
        cut_lower = np.where(is_outside.take(outside), outside_lower, 0.0)
        # A stretch's first frame is pulled by the dense frame before it (A[o, o - 1]), its
        # last by the dense frame after it (A[o + 1, o]); 0 where there is none.
        dense_before = ~is_outside.take(outside) & (outside > 0)
        from_before = np.where(dense_before, outside_lower, 0.0)
        dense_after = ~is_outside.take(outside + 2) & (outside < n - 1)
        from_after = np.where(dense_after, lower.take(outside + 1, axis=1, mode="clip"), 0.0)
        # A_oo^-1 of each: x outside = free - by_before x_b - by_after x_a
        free, by_before, by_after = solve_tridiagonal(
            diag.take(outside, axis=1), cut_lower, np.stack((rhs.take(outside, axis=1), from_before, from_after)))
        place = is_outside[1:-1].cumsum() - 1  # each frame outside: its column in ``free``
        # The dense frames' system: each loses what its neighbours outside pass back to it.
        _pass_back(reduced_diag, reduced_rhs, right_out, lower.take(frames + 1, axis=1, mode="clip"),
                   place.take(frames + 1, mode="clip"), by_before, free)
        before_columns = place.take(frames - 1, mode="clip")
        _pass_back(reduced_diag, reduced_rhs, left_out, reduced_lower, before_columns, by_after, free)
        # Two dense frames in a row couple as before; with a stretch between them, through
        # it (the first dense frame's coupling is not read).
        reduced_lower = np.where(left_out, -reduced_lower * by_before.take(before_columns, axis=1), reduced_lower)
    reduced_rhs += pulls
    at_dense = _solve_low_rank_blocks(reduced_diag, vectors, weights, reduced_lower, reduced_rhs)
    x[frames] = at_dense
    if len(outside):
        # Each frame outside: the last dense frame before it and the next after it (clipped
        # where there is none: by_before or by_after is 0 there).
        last = (~is_outside[1:-1]).cumsum().take(outside) - 1
        x[outside] = (free - by_before * at_dense.take(last, axis=0, mode="clip").T
                      - by_after * at_dense.take(last + 1, axis=0, mode="clip").T).T
    return x


class ChainInverse:
    """The inverses of a batch of symmetric positive definite tridiagonal systems whose
    couplings are all negative, as the offline lock's chains are, held as their first and
    last columns, frame by frame (n, c): every gather at a few frames and every product
    along them then runs along contiguous rows of the chains' values.

    The inverse of a tridiagonal matrix is ``G[i, j] = u[i] v[j]`` for ``i <= j`` (a
    Green's function), so those two columns give every entry:
    ``G[i, j] = G[i, n-1] G[0, j] / G[0, n-1]``. With negative couplings every entry is
    positive and no step of the solve subtracts, so the smallest entries keep their
    relative precision; only an entry below the floating-point range is lost: so
    :meth:`of_ends` keeps to chains whose corner ``G[0, n-1]`` (the smallest entry: a
    chain's response decays along it) stays within ``PRODUCT_FORM_RANGE`` of the
    diagonal. On the offline lock's chains it falls about 2.7 decades a second of clip:
    clips of up to about a minute."""

    def __init__(self, first, last):
        self.first = first  # G[:, 0], (n, c)
        self.last = last  # G[:, n-1] / G[0, n-1], (n, c): G[i, j] = last[i] first[j] for i <= j
        self.frames = np.arange(len(first))  # every frame, for :meth:`solve_sparse`'s searches

    @classmethod
    def of_ends(cls, ends):
        """The inverse of chains whose ``ends`` (2, c, n) are ``G[:, 0]`` and ``G[:, n-1]``;
        None where a corner is out of range."""
        first, last = ends
        corner = last[:, :1]
        if not (corner[:, 0] > PRODUCT_FORM_RANGE * np.sqrt(first[:, 0] * last[:, -1])).all():
            return None
        return cls(first.T.copy(), (last / corner).T.copy())

    def ends_at(self, frames):
        """The two columns :meth:`coupling` and :meth:`solve_sparse` read, at the sorted
        ``frames`` (T,): ``first`` and ``last`` (T, c) each, gathered once for both."""
        return self.first.take(frames, axis=0), self.last.take(frames, axis=0)

    @staticmethod
    def coupling(ends_at, spread):
        """``sum_c u_s[c] u_t[c] G_c[f_s, f_t]`` (T, T) of the vectors ``u_t`` (the rows of
        ``spread`` (T, c)), each at one of the sorted frames ``f_t`` whose columns are
        ``ends_at`` (:meth:`ends_at`). For ``f_s <= f_t`` that is ``sum_c (u_s[c] last_c[f_s])
        (u_t[c] first_c[f_t])``: the upper triangle is one product of two (T, c) matrices and
        the rest its mirror, where gathering ``G`` for every pair of terms and chain (T, c, T)
        cost ten times as much. The mirror by one ``np.where`` on the terms' order (np.triu's
        Python layers: 2 calls, 3 x the cost)."""
        first, last = ends_at
        upper = (spread * last) @ (spread * first).T
        return np.where(_upper_triangle(len(spread)), upper, upper.T)

    def solve_sparse(self, frames, ends_at, rhs):
        """``x = A^-1 b`` of every chain, frame by frame (n, c), ``b`` nonzero only at the
        sorted ``frames`` (T,), whose columns are ``ends_at`` (:meth:`ends_at`), where it is
        ``rhs`` (T, c): ``x[i]`` sums ``G[i, j] b[j]`` over the frames from i on and before i,
        two running sums over the T frames alone."""
        first, last = ends_at
        # From each term frame on, the sum of G[0, j] b[j]; before it, of G[j, n-1] b[j] / G[0, n-1]:
        # one array, zero past the last term frame and up to the first, gathered at every frame
        # at once. The running sums by np.add.accumulate, cumsum's loop without its layers.
        sums = np.zeros((2, len(frames) + 1, rhs.shape[1]))
        np.add.accumulate((rhs * first)[::-1], axis=0, out=sums[0, -2::-1])
        np.add.accumulate(rhs * last, axis=0, out=sums[1, 1:])
        # Each frame's first term frame from it on.
        after, before = sums.take(frames.searchsorted(self.frames), axis=1)
        return self.last * after + self.first * before


# The smallest corner, against the diagonal, :class:`ChainInverse` trusts its product form
# with: every product of two of its columns then stays well above the floating-point range.
PRODUCT_FORM_RANGE = 1e-150


def _upper_triangle(count):
    """Where ``s <= t`` in (count, count), for :meth:`ChainInverse.coupling`: a corner of one
    mask built once (the comparison of two broadcast index rows cost as much as the mirror
    it selects, on each reach round), or a mask of its own for more terms than a reach
    round of a few seconds' clip makes."""
    if count > len(_UPPER_TRIANGLE):
        return np.triu(np.ones((count, count), dtype=bool))
    return _UPPER_TRIANGLE[:count, :count]


_UPPER_TRIANGLE = np.triu(np.ones((256, 256), dtype=bool))
_UPPER_TRIANGLE.flags.writeable = False


def solve_low_rank_update(inverse, x, frames, rows, vectors, weights, goals):
    """Solve ``(A + sum_t weights[t] u_t u_t^T) y = A x + sum_t weights[t] goals[t] u_t``
    for y, given ``x`` (c, n) and ``A``'s :class:`ChainInverse`: each term
    ``t`` couples the chains ``rows[t]`` (T, m) at one frame, ``frames`` (T,) sorted, its
    vector ``u_t`` having ``vectors[t]`` (T, m) there. By the Woodbury identity: a dense
    system of one row per term, then :meth:`ChainInverse.solve_sparse`, where
    :func:`solve_mostly_separable` would reduce the chains at those frames again."""
    count = len(frames)
    # Each term's vector on every chain (T, c): zero on the chains it does not couple.
    spread = np.zeros((count, len(x)))
    spread[np.arange(count)[:, None], rows] = vectors
    ends_at = inverse.ends_at(frames)
    coupling = inverse.coupling(ends_at, spread)
    coupling.ravel()[:: count + 1] += 1.0 / weights
    residual = goals - np.add.reduce(vectors * x.take(rows * x.shape[1] + frames[:, None]), axis=1)
    # LAPACK's LU in one call: on one system it costs less than spd_inverse's bordered
    # factorisation and product (13 rows: 9.5 against 22 us in Blender's numpy, 80: 64 against 531).
    shares = np.linalg.solve(coupling, residual)
    return x + inverse.solve_sparse(frames, ends_at, spread * shares[:, None]).T


def _solve_low_rank_blocks(diagonals, vectors, weights, lower, rhs):
    """:func:`solve_block_tridiagonal` of one right-hand side ``rhs`` (m, k), the diagonal
    blocks ``diag(diagonals) + sum weights v v^T`` (:func:`solve_mostly_separable`), the
    couplings diagonal (``lower`` (m, k)), all with the frames last. The dropped rows of
    the first level are inverted by Sherman-Morrison (:func:`_low_rank_inverse`),
    elementwise over all of them at once: no per-block LAPACK calls there. Returns (k, m)."""
    if diagonals.shape[1] <= 2:
        blocks = _low_rank_blocks(diagonals, vectors, weights).transpose(2, 0, 1)
        return solve_block_tridiagonal(blocks, lower.T, rhs.T)
    kept_diag = _low_rank_blocks(diagonals[:, 0::2], vectors[..., 0::2], weights[:, 0::2])
    inverse = _low_rank_inverse(diagonals[:, 1::2], vectors[..., 1::2], weights[:, 1::2])
    return _reduce_diagonal_coupling(kept_diag, inverse, lower, rhs[None])[:, 0, :]


def _low_rank_blocks(diagonals, vectors, weights):
    """The blocks ``diag(diagonals) + sum weights v v^T``, frames last (m, m, k)
    (:func:`_solve_low_rank_blocks`): every product runs along whole rows of frames."""
    m, k = diagonals.shape
    blocks = np.add.reduce((weights[:, None] * vectors)[:, :, None] * vectors[:, None])
    blocks.reshape(m * m, k)[:: m + 1] += diagonals
    return blocks


def _low_rank_inverse(diagonals, vectors, weights):
    """Inverses (m, m, k) of the blocks of :func:`_low_rank_blocks`, one rank-one term at a
    time (Sherman-Morrison): with ``S`` the inverse so far and ``q = S v``, adding ``w v v^T``
    subtracts ``g q q^T``, ``g = w / (1 + w v.q)``. ``S`` stays ``diag(1 / diagonals)``
    minus the terms before, so each ``q`` is elementwise too; the blocks are SPD (the
    weights >= 0), so no ``g`` divides by zero."""
    m, k = diagonals.shape
    reciprocal = 1.0 / diagonals
    shares = np.empty_like(vectors)  # each term's q
    gains = np.empty_like(weights)  # ... and g
    for term, (vector, weight) in enumerate(zip(vectors, weights)):
        q = vector * reciprocal
        for before, gain in zip(shares[:term], gains[:term]):
            q -= before * (gain * np.add.reduce(before * vector))
        shares[term] = q
        gains[term] = weight / (1.0 + weight * np.add.reduce(vector * q))
    inverse = np.add.reduce((gains[:, None] * shares)[:, :, None] * shares[:, None])
    np.negative(inverse, out=inverse)
    inverse.reshape(m * m, k)[:: m + 1] += reciprocal
    return inverse


def _pass_back(diag, rhs, where, coupling, columns, response, free):
    """Subtract from the dense frames' ``diag`` and ``rhs`` (m, k), ``where`` they have a
    neighbour outside, what that neighbour passes back through their ``coupling`` (m, k):
    its ``response`` to a unit pull from them and its ``free`` solution, at its column
    ``columns`` (:func:`solve_mostly_separable`). Elsewhere the coupling is masked to 0."""
    coupling = coupling * where
    diag -= coupling * response.take(columns, axis=1)
    rhs -= coupling * free.take(columns, axis=1)


def _reduce_diagonal_coupling(kept_diag, inverse, lower, rhs):
    """The first level of :func:`_reduce` where each row couples to its neighbours through
    diagonal blocks (``lower`` (m, n) their diagonals, ``rhs`` (r, m, n) transposed): every
    product with a coupling is a scaling. Takes the even rows' diagonal blocks (m, m, kept;
    modified in place) and the odd rows' inverses ``S`` (m, m, dropped), all with the
    frames last, so every product runs along whole rows of frames. Returns (n, r, m), as
    :func:`_reduce`."""
    m, n = lower.shape
    kept, dropped = n - n // 2, n // 2
    to_previous = lower[:, 1::2]  # l_d: A[d, d - 1] = diag(l_d)
    to_next = lower[:, 2::2]  # l_(d+1): A[d, d + 1]; the last dropped row of an even n has none
    inner = to_next.shape[1]  # kept rows 1.. (each with a dropped row before it)
    solved = np.add.reduce(rhs[:, :, None, 1::2] * inverse, axis=1)  # b_d^T S

    # Kept row k between dropped rows p (before) and q (after): its diagonal loses
    # A[k, p] S_p A[p, k] and A[k, q] S_q A[q, k], it couples to k - 2 through
    # -A[k, p] S_p A[p, k - 2] and to k + 2 through -A[k, q] S_q A[q, k + 2] (stored
    # transposed, as _reduce's rows), and its right-hand side loses A[k, p] S_p b_p ...
    by_previous = to_previous[:, None] * inverse  # A[k, p] S_p, shared by both of p's kept rows
    kept_diag[..., 1:] -= to_next[:, None] * inverse[..., :inner] * to_next
    kept_diag[..., :dropped] -= by_previous * to_previous
    rows = np.empty((kept, 2 * m + rhs.shape[0], m))
    rows[0, :m] = rows[inner:, m : 2 * m] = 0.0  # the ends have no neighbour there
    # -A[k + 2, k] of kept row k (its factor negated: the numbers of the product negated),
    # made straight into the lower block of row k + 2, then its transpose is row k's upper.
    np.multiply(by_previous[..., :inner], -to_next, out=rows[1:, :m].transpose(1, 2, 0))
    rows[:inner, m : 2 * m] = rows[1:, :m].swapaxes(-1, -2)
    kept_rhs = rhs[..., 0::2].copy()
    kept_rhs[..., 1:] -= solved[..., :inner] * to_next
    kept_rhs[..., :dropped] -= solved * to_previous
    rows[:, 2 * m :] = kept_rhs.transpose(2, 0, 1)

    x_kept = _reduce(kept_diag.transpose(2, 0, 1), rows)
    # x_d^T = (b_d^T - x_(d-1)^T diag(l_d) - x_(d+1)^T diag(l_(d+1))) S
    neighbours = x_kept.transpose(1, 2, 0)  # (r, m, kept)
    pull = neighbours[..., :dropped] * to_previous
    pull[..., :inner] += neighbours[..., 1:] * to_next
    x = np.empty((n,) + x_kept.shape[1:])
    x[0::2] = x_kept
    x[1::2] = (solved - np.add.reduce(pull[:, :, None] * inverse, axis=1)).transpose(2, 0, 1)
    return x


def _reduce(diag, rows):
    """Solve the system whose rows are ``diag`` (n, m, m) and ``rows`` (n, 2m + r, m)
    (``[lower^T ; upper^T ; rhs^T]``, ``lower[0]`` and ``upper[-1]`` zero); returns the
    solution transposed, (n, r, m)."""
    n, m = diag.shape[:2]
    if n <= 2 or n * m <= DENSE_SIZE:
        return _solve_dense(diag, rows)
    kept = rows[0::2]
    # Dropped rows give x_odd = D^-1 (b - L x_prev - U x_next): ``solved`` holds
    # [L | U | b]^T D^-1 of each dropped row.
    solved = rows[1::2] @ spd_inverse(diag[1::2])
    dropped = len(solved)  # every dropped row has a kept row after it but the last of an even n

    # Substitute them into the kept rows: row 2k sees dropped rows 2k-1 (through its
    # lower block) and 2k+1 (through its upper block); transposed, (D^-1 L)^T L_k^T ...
    before = solved[: len(kept) - 1] @ kept[1:, :m]  # kept rows 1.. with the dropped row before them
    after = solved @ kept[:dropped, m : 2 * m]  # kept rows with the dropped row after them
    new_diag = diag[0::2].copy()
    new_diag[1:] -= before[:, m : 2 * m]
    new_diag[:dropped] -= after[:, :m]
    new = np.empty_like(kept)
    new[0, :m] = new[dropped:, m : 2 * m] = 0.0  # the ends have no neighbour there
    np.negative(before[:, :m], out=new[1:, :m])
    np.negative(after[:, m : 2 * m], out=new[:dropped, m : 2 * m])
    new[:, 2 * m :] = kept[:, 2 * m :]
    new[1:, 2 * m :] -= before[:, 2 * m :]
    new[:dropped, 2 * m :] -= after[:, 2 * m :]

    x_kept = _reduce(new_diag, new)
    # The last dropped row of an even n has no upper block: any x_next does.
    following = x_kept[1:] if len(x_kept) > dropped else np.concatenate((x_kept[1:], x_kept[-1:]))
    neighbours = np.concatenate((x_kept[:dropped], following), axis=-1)  # (k, r, 2m): x_prev^T | x_next^T
    x = np.empty((n,) + x_kept.shape[1:])
    x[0::2] = x_kept
    x[1::2] = solved[:, 2 * m :] - neighbours @ solved[:, : 2 * m]
    return x


# Up to this many blocks :func:`spd_inverse` factors each block bordered by the identity
# (one LAPACK call for the lot); beyond, that factorisation's per-block cost (a matrix twice
# as wide) outweighs the fixed cost of inverting the triangle row by row (9 x 9 blocks,
# bordered against row by row: 35 blocks 0.72M instructions and 40 us against 0.75M and
# 49 us; 50 blocks 1.01M, 54 us against 0.95M, 60 us).
BORDERED_BLOCKS = 40
# Up to this many unknowns (or two rows of blocks) :func:`_reduce` solves what is left as
# one dense system: three rows of the offline lock's 9 x 9 blocks. Kept small, as the
# bordered factorisation is twice as wide and OpenBLAS factors large matrices in parallel.
DENSE_SIZE = 27
# The bordered matrix's lower-right diagonal: it only has to keep the matrix positive
# definite (above 1 / the block's least eigenvalue); the factor's block it sets is not read.
BORDER = 1e150


def spd_inverse(blocks):
    """Inverses of a batch of small symmetric positive definite matrices (n, m, m).

    Cholesky, then the triangle inverted (see :func:`_bordered_inverse` for a few blocks;
    row by row with batched products for many): several times faster than
    ``np.linalg.inv`` on many small matrices, whose per-matrix LAPACK calls (and OpenBLAS
    threading, in Blender's numpy) dominate. Blocks of the normal equations stay SPD
    through cyclic reduction (Schur complements).
    """
    if len(blocks) <= BORDERED_BLOCKS:
        return _bordered_inverse(blocks)
    low = np.linalg.cholesky(blocks)
    m = blocks.shape[-1]
    inv_low = np.zeros_like(low)
    reciprocal = 1.0 / low.diagonal(axis1=-2, axis2=-1)
    inv_low[:, np.arange(m), np.arange(m)] = reciprocal
    # Row i of L^-1 left of the diagonal: -(L[i, :i] / L[i, i]) @ L^-1[:i, :i].
    scaled = low * -reciprocal[:, :, None]
    for i in range(1, m):
        np.matmul(scaled[:, i : i + 1, :i], inv_low[:, :i, :i], out=inv_low[:, i : i + 1, :i])
    return inv_low.swapaxes(-1, -2) @ inv_low


def _bordered_inverse(blocks):
    """:func:`spd_inverse` by one Cholesky factorisation of each block ``D`` bordered as
    ``[[D, I], [I, BORDER I]]``: the factor's lower-left block ``X`` solves ``X L^T = I``
    (``L`` the factor of ``D``), so ``D^-1 = X X^T``. On a few blocks the Python-level
    calls of inverting ``L`` row by row cost more than the bigger factorisation."""
    n, m = blocks.shape[:2]
    # The factorisation reads the lower triangle alone: the upper-right block is left unset
    # (zeroing the whole array would cost a pass over it).
    bordered = np.empty((n, 2 * m, 2 * m))
    bordered[:, :m, :m] = blocks
    bordered[:, m:] = _border(m)
    inverse_transposed = np.linalg.cholesky(bordered)[:, m:, :m]  # L^-T
    return inverse_transposed @ inverse_transposed.swapaxes(-1, -2)


@lru_cache(maxsize=4)
def _border(m):
    """The lower rows ``[I, BORDER I]`` (m, 2m) of :func:`_bordered_inverse`'s matrices
    (read-only: shared by every call on blocks of ``m``)."""
    border = np.zeros((m, 2 * m))
    border[:, :m] = np.eye(m)
    border[:, m:] = BORDER * np.eye(m)
    border.flags.writeable = False
    return border


def _solve_dense(diag, rows):
    """The last few rows as one dense system, inverted by one :func:`spd_inverse`: a level
    of reduction on rows this few costs more in numpy calls than the dense arithmetic. Not
    LAPACK's general solver: OpenBLAS runs that LU in parallel, and on matrices this small
    waking its threads costs more than the whole reduction when other work keeps the CPUs
    busy. Transposed, as :func:`_reduce`."""
    n, m = diag.shape[:2]
    size = n * m
    dense = np.zeros((n, m, n, m))
    index = np.arange(n)
    dense[index, :, index] = diag
    dense[index[1:], :, index[:-1]] = rows[1:, :m].swapaxes(-1, -2)  # A[i, i - 1]; rows hold its transpose
    dense[index[:-1], :, index[1:]] = rows[:-1, m : 2 * m].swapaxes(-1, -2)  # A[i, i + 1]
    columns = rows[:, 2 * m :].swapaxes(0, 1).reshape(-1, size)  # (r, n m): b^T
    x = columns @ spd_inverse(dense.reshape(1, size, size))[0]  # b^T A^-1 = x^T (A is symmetric)
    return x.reshape(-1, n, m).swapaxes(0, 1)
