"""Whole-array inverses of small matrices (numpy only)."""

import numpy as np
from foot_lock.solvers.matrices import affine_inverse, inverse


def _transforms(count, rng):
    """Affine 4x4 matrices: rotation, uneven scale, shear and translation (well conditioned)."""
    linear = np.eye(3) + 0.4 * rng.standard_normal((count, 3, 3))
    out = np.zeros((count, 4, 4))
    out[:, :3, :3] = linear
    out[:, :3, 3] = 10.0 * rng.standard_normal((count, 3))
    out[:, 3, 3] = 1.0
    return out


def test_inverse_of_3x3_matrices_is_numpys():
    matrices = _transforms(500, np.random.default_rng(3))[:, :3, :3]
    assert np.abs(inverse(matrices) - np.linalg.inv(matrices)).max() < 1e-9
    assert np.abs(inverse(matrices) @ matrices - np.eye(3)).max() < 1e-12


def test_affine_inverse_undoes_the_transform_for_any_stack_shape():
    matrices = _transforms(60, np.random.default_rng(4)).reshape(3, 20, 4, 4)
    inverted = affine_inverse(matrices)
    assert inverted.shape == matrices.shape
    assert np.abs(inverted @ matrices - np.eye(4)).max() < 1e-12
    assert np.abs(inverted - np.linalg.inv(matrices)).max() < 1e-9
    assert np.abs(affine_inverse(matrices[0, 0]) - inverted[0, 0]).max() == 0.0  # one matrix alone: the same bits
