"""Block-tridiagonal linear systems, solved by cyclic reduction.

numpy has no banded solver and Blender ships no scipy. The offline foot lock's
normal equations couple each frame only with its neighbours, so they form a
symmetric block-tridiagonal system; cyclic reduction eliminates every other frame
per level with batched dense solves, so the work is vectorized over frames and
needs only log2(frames) Python-level steps.
"""

import numpy as np


def solve_block_tridiagonal(diag, lower, rhs):
    """Solve ``A x = rhs`` for a block-tridiagonal ``A``.

    ``diag``  (n, m, m): blocks ``A[i, i]``;
    ``lower`` (n, m, m): blocks ``A[i, i - 1]`` (``lower[0]`` is ignored);
    the upper blocks are ``A[i, i + 1] = lower[i + 1].T`` (``A`` is symmetric).
    ``rhs``   (n, m), or (n, m, r) for ``r`` right-hand sides at once.
    """
    lower = lower.copy()
    lower[0] = 0.0
    upper = np.zeros_like(lower)
    upper[:-1] = np.swapaxes(lower[1:], -1, -2)
    rhs = np.asarray(rhs, dtype=float)
    if rhs.ndim == 2:
        return _reduce(diag, lower, upper, rhs[..., None])[..., 0]
    return _reduce(diag, lower, upper, rhs)


def _reduce(diag, lower, upper, rhs):
    n, m = rhs.shape[:2]
    if n <= 2:
        return _solve_dense(diag, lower, upper, rhs)
    if n % 2 == 0:  # pad with a decoupled identity block so both ends are kept rows
        diag = np.concatenate((diag, np.eye(m)[None]))
        lower = np.concatenate((lower, np.zeros((1, m, m))))
        upper = np.concatenate((upper, np.zeros((1, m, m))))
        rhs = np.concatenate((rhs, np.zeros((1,) + rhs.shape[1:])))
    kept, dropped = slice(0, None, 2), slice(1, None, 2)

    # Dropped rows give x_odd = D^-1 (b - L x_prev - U x_next). A batched inverse
    # and products beat a batched solve with many right-hand sides for small blocks.
    # Every other block is a strided view; numpy multiplies stacks of small matrices
    # about twice as fast once they are copied contiguous.
    inverse = spd_inverse(diag[dropped])
    inv_lower = inverse @ np.ascontiguousarray(lower[dropped])
    inv_upper = inverse @ np.ascontiguousarray(upper[dropped])
    inv_rhs = inverse @ np.ascontiguousarray(rhs[dropped])

    # Substitute them into the kept rows: row 2k sees dropped rows 2k-1 and 2k+1.
    new_diag = diag[kept].copy()
    new_rhs = rhs[kept].copy()
    new_lower = np.zeros_like(new_diag)
    new_upper = np.zeros_like(new_diag)
    left = np.ascontiguousarray(lower[2::2])  # coupling of kept row k>=1 to dropped row 2k-1
    new_diag[1:] -= left @ inv_upper
    new_lower[1:] = -left @ inv_lower
    new_rhs[1:] -= left @ inv_rhs
    right = np.ascontiguousarray(upper[:-1:2])  # coupling of kept row k<last to dropped row 2k+1
    new_diag[:-1] -= right @ inv_lower
    new_upper[:-1] = -right @ inv_upper
    new_rhs[:-1] -= right @ inv_rhs

    x_kept = _reduce(new_diag, new_lower, new_upper, new_rhs)
    x = np.empty_like(rhs)
    x[kept] = x_kept
    x[dropped] = inv_rhs - inv_lower @ x_kept[:-1] - inv_upper @ x_kept[1:]
    return x[:n]


def spd_inverse(blocks):
    """Inverses of a batch of small symmetric positive definite matrices (n, m, m).

    Cholesky, then the triangle inverted row by row with batched products: several
    times faster than ``np.linalg.inv`` on many small matrices, whose per-matrix
    LAPACK calls (and OpenBLAS threading, in Blender's numpy) dominate. Blocks of
    the normal equations stay SPD through cyclic reduction (Schur complements).
    """
    low = np.linalg.cholesky(blocks)
    m = blocks.shape[-1]
    inv_low = np.zeros_like(low)
    reciprocal = 1.0 / np.diagonal(low, axis1=-2, axis2=-1)
    inv_low[:, np.arange(m), np.arange(m)] = reciprocal
    for i in range(1, m):
        inv_low[:, i, :i] = -reciprocal[:, i, None] * (low[:, i : i + 1, :i] @ inv_low[:, :i, :i])[:, 0]
    return np.swapaxes(inv_low, -1, -2) @ inv_low


def _solve_dense(diag, lower, upper, rhs):
    """One or two blocks: the second (if any) eliminated into the first, with the same
    Cholesky inverses as the reduction. Not LAPACK's general solver: OpenBLAS runs that
    LU in parallel, and on matrices this small waking its threads costs more than the
    whole reduction when other work keeps the CPUs busy."""
    if len(diag) == 1:
        return spd_inverse(diag) @ rhs
    inverse = spd_inverse(diag[1:])[0]
    inv_lower, inv_rhs = inverse @ lower[1], inverse @ rhs[1]
    schur = diag[0] - upper[0] @ inv_lower
    first = spd_inverse(schur[None])[0] @ (rhs[0] - upper[0] @ inv_rhs)
    return np.stack((first, inv_rhs - inv_lower @ first))
