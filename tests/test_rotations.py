"""Rotation channels <-> quaternions (solvers/rotations.py), without Blender: every Euler
order against rotation matrices built axis by axis, gimbal lock, continuity, round trips."""

import numpy as np
import pytest
from foot_lock.solvers import quaternion as quat
from foot_lock.solvers import rotations

ORDERS = rotations.EULER_ORDERS


def axis_matrix(axis, angle):
    """Rotation matrices (F, 3, 3) about coordinate axis 0, 1 or 2."""
    c, s = np.cos(angle), np.sin(angle)
    m = np.zeros(angle.shape + (3, 3))
    i, j = (axis + 1) % 3, (axis + 2) % 3  # cyclic, so Y's matrix has +sin at (X, Z)
    m[..., axis, axis] = 1.0
    m[..., i, i], m[..., j, j] = c, c
    m[..., j, i], m[..., i, j] = s, -s
    return m


def euler_matrix(euler, order):
    """Blender's convention: 'XYZ' applies X first, so the matrix is Rz @ Ry @ Rx."""
    m = np.broadcast_to(np.eye(3), euler.shape[1:] + (3, 3))
    for letter in order:
        axis = "XYZ".index(letter)
        m = axis_matrix(axis, euler[axis]) @ m
    return m


def matrices(q):
    """Rotation matrices (F, 3, 3) of quaternions given component axis first (4, F)."""
    return quat.to_matrix(np.moveaxis(q, 0, -1))


def random_quats(rng, frames):
    return rotations.normalize(rng.normal(size=(4, frames)))


def same_rotation(q1, q2, atol=1e-9):
    return np.allclose(np.abs(np.sum(q1 * q2, axis=0)), 1.0, atol=atol)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_to_quat_matches_the_matrices_axis_by_axis(order):
    euler = np.random.default_rng(1).uniform(-4.0, 4.0, (3, 500))
    q = rotations.euler_to_quat(euler, order)
    assert np.allclose(matrices(q), euler_matrix(euler, order), atol=1e-12)


def axis_quat(axis, angle):
    """Quaternions (4, F) of turns by ``angle`` about coordinate axis 0, 1 or 2, from the
    half angle's sin and cos."""
    q = np.zeros((4,) + angle.shape)
    q[0], q[1 + axis] = np.cos(0.5 * angle), np.sin(0.5 * angle)
    return q


# Whole and half turns (where a quarter angle's tangent is 0 or near its pole), large
# unwrapped angles and random ones.
SPECIAL_ANGLES = np.array([0.0, np.pi, -np.pi, 2 * np.pi, -2 * np.pi, 3 * np.pi, 4 * np.pi, 1e-300, 1e3, -7.5e2])


@pytest.mark.parametrize("order", ORDERS)
def test_euler_to_quat_is_the_product_of_the_axis_quaternions(order):
    """The same quaternion, sign included, as q_c * q_b * q_a from each half angle's sin
    and cos, for special angles on every axis and random ones up to many turns."""
    rng = np.random.default_rng(5)
    grid = np.stack(np.meshgrid(SPECIAL_ANGLES, SPECIAL_ANGLES, SPECIAL_ANGLES)).reshape(3, -1)
    euler = np.concatenate((grid, rng.uniform(-40.0, 40.0, (3, 2000))), axis=1)
    expected = np.array([1.0, 0.0, 0.0, 0.0])[:, None]
    for letter in order:
        axis = "XYZ".index(letter)
        expected = rotations.multiply(axis_quat(axis, euler[axis]), expected)
    np.testing.assert_allclose(rotations.euler_to_quat(euler, order), expected, rtol=0, atol=1e-14)


def test_axis_angle_to_quat_uses_the_half_angle():
    angles = np.concatenate((SPECIAL_ANGLES, np.random.default_rng(6).uniform(-40.0, 40.0, 500)))
    axis = rotations.normalize(np.random.default_rng(7).normal(size=(3, len(angles))))
    got = rotations.axis_angle_to_quat(np.concatenate((angles[None], 2.5 * axis)))
    expected = np.concatenate((np.cos(0.5 * angles)[None], np.sin(0.5 * angles) * axis))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    # One value alone (an object's or a single bone's channel), as a list or an array.
    np.testing.assert_allclose(rotations.axis_angle_to_quat([1.0, 0.0, 0.0, 2.0]), [np.cos(0.5), 0, 0, np.sin(0.5)])
    np.testing.assert_allclose(rotations.euler_to_quat([0.0, 0.0, 1.0], "XYZ"), [np.cos(0.5), 0, 0, np.sin(0.5)])


@pytest.mark.parametrize("order", ORDERS)
def test_random_rotations_round_trip_through_euler(order):
    q = random_quats(np.random.default_rng(2), 2000)
    euler = rotations.quat_to_euler(q, order)
    assert same_rotation(rotations.euler_to_quat(euler, order), q)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("middle", [np.pi / 2, -np.pi / 2])
def test_gimbal_locked_frames_rebuild_their_rotation(order, middle):
    rng = np.random.default_rng(3)
    euler = rng.uniform(-np.pi, np.pi, (3, 200))
    euler["XYZ".index(order[1])] = middle + rng.choice([0.0, 1e-9, -1e-9, 1e-6], 200)
    q = rotations.euler_to_quat(euler, order)
    first, second = rotations.quat_to_euler_pair(q, order)
    for solution in (first, second):
        assert same_rotation(rotations.euler_to_quat(solution, order), q)
    assert same_rotation(rotations.euler_to_quat(rotations.quat_to_euler(q, order), order), q)


@pytest.mark.parametrize("order", ORDERS)
def test_a_path_through_gimbal_lock_stays_continuous(order):
    """Pitching the middle axis through +-90 degrees while the others turn slowly: the
    curves may not jump (except at the locked frame itself, where the outer two angles
    trade off), and every frame rebuilds its rotation."""
    frames = 721
    t = np.linspace(0.0, 1.0, frames)
    euler = np.zeros((3, frames))
    euler["XYZ".index(order[0])] = 0.3 * t
    euler["XYZ".index(order[1])] = np.linspace(0.0, np.pi, frames)  # passes pi/2 exactly
    euler["XYZ".index(order[2])] = -0.2 * t
    q = rotations.euler_to_quat(euler, order)
    got = rotations.quat_to_euler(q, order)
    assert same_rotation(rotations.euler_to_quat(got, order), q)
    steps = np.abs(np.diff(got, axis=1)).max(axis=0)
    assert np.sort(steps)[-3] < 0.05  # only the steps next to the locked frame may be long


@pytest.mark.parametrize("order", ORDERS)
def test_spinning_turns_unwrap_instead_of_jumping(order):
    frames = 600
    euler = np.zeros((3, frames))
    spin = "XYZ".index(order[2])
    euler[spin] = np.linspace(0.0, 6.0 * np.pi, frames)  # three whole turns
    euler["XYZ".index(order[0])] = 0.2
    got = rotations.quat_to_euler(rotations.euler_to_quat(euler, order), order)
    assert np.abs(np.diff(got, axis=1)).max() < 0.05
    assert np.allclose(got[spin, -1] - got[spin, 0], 6.0 * np.pi, atol=1e-9)


@pytest.mark.parametrize("order", ORDERS)
def test_first_frame_starts_next_to_the_reference(order):
    euler = np.array([[0.4], [0.3], [-0.2]]) + np.array([[2 * np.pi], [-2 * np.pi], [4 * np.pi]])
    q = rotations.euler_to_quat(euler, order)
    assert np.allclose(rotations.quat_to_euler(q, order, reference=euler[:, 0]), euler, atol=1e-9)
    second = rotations.quat_to_euler_pair(q, order)[1]
    reference = second[:, 0] + 1e-3  # the curve was on the other solution
    assert np.allclose(rotations.quat_to_euler(q, order, reference=reference), second, atol=1e-9)


def test_batched_bones_round_trip_per_column():
    rng = np.random.default_rng(4)
    q = rotations.normalize(rng.normal(size=(4, 50, 7)))
    for mode in ("QUATERNION", "AXIS_ANGLE") + ORDERS:
        values = rotations.quat_to_channel(mode, q)
        assert values.shape[1:] == (50, 7)
        assert same_rotation(rotations.channel_quat(mode, values), q)


def test_axis_angle_keeps_its_axis_through_no_rotation():
    angle = np.linspace(-1.0, 1.0, 101)  # through zero: the axis is undefined there
    axis = quat.normalize(np.array([1.0, 2.0, -0.5]))
    q = np.concatenate((np.cos(angle / 2)[None], np.sin(angle / 2)[None] * axis[:, None]))
    values = rotations.quat_to_axis_angle(q)
    assert np.allclose(np.abs(values[1:].T @ axis), 1.0)
    assert np.abs(np.diff(values, axis=1)).max() < 0.05  # axis and angle flip together, smoothly
    assert same_rotation(rotations.axis_angle_to_quat(values), q)
    assert np.allclose(rotations.axis_angle_to_quat(np.zeros((4, 3))), [[1.0], [0.0], [0.0], [0.0]])


def test_quaternion_channels_stay_in_one_hemisphere():
    q = random_quats(np.random.default_rng(5), 300)
    path = rotations.normalize(np.cumsum(0.02 * q, axis=1) + [[1.0], [0.0], [0.0], [0.0]])
    flipped = path * np.where(np.arange(300) % 3 == 0, -1.0, 1.0)
    reference = -path[:, 0]
    got = rotations.continuous_quat(flipped, reference)
    assert np.allclose(got, -path)


def test_unknown_order_is_rejected():
    with pytest.raises(ValueError, match="unknown Euler order"):
        rotations.euler_to_quat(np.zeros((3, 1)), "XXY")
