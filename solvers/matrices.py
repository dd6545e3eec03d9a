"""Inverses of stacks of small matrices, computed whole-array.

Not ``np.linalg.inv`` or ``np.linalg.solve``: they call LAPACK once per matrix, and the
OpenBLAS that numpy (and Blender's numpy) ships runs even a 4x4 inverse's triangular solves
on its thread pool. The woken threads then spin for a while after every call, taking a
second core from the click (its CPU time was twice its wall time) and, on a loaded
machine, slowing the click itself. Cofactors are exact enough for the well-conditioned
transforms of a rig: rest matrices, poses, object matrices.
"""

import numpy as np

from .quaternion import cross


def cofactors(matrices):
    """The transposed cofactor matrices (..., 3, 3) and determinants (...) of 3x3
    ``matrices``: the inverse is the one over the other."""
    r0, r1, r2 = matrices[..., 0, :], matrices[..., 1, :], matrices[..., 2, :]
    out = np.empty(matrices.shape)  # filled column by column: np.stack on the last axis is slower
    for column, (u, v) in enumerate(((r1, r2), (r2, r0), (r0, r1))):
        out[..., column] = cross(u, v)
    first = out[..., 0]  # the determinant summed term by term: a reduce over 3 items costs more
    return out, r0[..., 0] * first[..., 0] + r0[..., 1] * first[..., 1] + r0[..., 2] * first[..., 2]


def inverse(matrices):
    """Inverses of invertible 3x3 ``matrices`` (..., 3, 3)."""
    adjugate, determinant = cofactors(np.asarray(matrices, dtype=float))
    return adjugate / determinant[..., None, None]


def affine_inverse(matrices):
    """Inverses of affine 4x4 ``matrices`` (..., 4, 4) (last row 0, 0, 0, 1)."""
    matrices = np.asarray(matrices, dtype=float)
    linear = inverse(matrices[..., :3, :3])
    out = np.zeros(matrices.shape)
    out[..., :3, :3] = linear
    out[..., :3, 3] = -(linear @ matrices[..., :3, 3, None])[..., 0]
    out[..., 3, 3] = 1.0
    return out
