"""Rotation channels (Euler in any order, axis-angle, quaternion) <-> quaternions, batched.

A pose bone stores its rotation in one of three forms, chosen by ``rotation_mode``:
``rotation_quaternion`` (w, x, y, z), ``rotation_axis_angle`` (angle, x, y, z) or
``rotation_euler`` (x, y, z) with an order such as ``'XYZ'``. Blender's order names the
axes in the order they are applied: ``'XYZ'`` is ``Rz @ Ry @ Rx``.

Layout: unlike the solver core, arrays here put the *component axis first*: Euler angles
are (3, F, ...), quaternions (4, F, ...), frames on axis 1. Each component is then one
contiguous array, which makes the arithmetic several times faster for 10,000-frame clips
than (..., 4) rows (this is the hot path of reading and writing whole actions).

Going back from a quaternion to channel values has to pick one of several equivalent
values per frame. The functions here pick the one that continues the previous frame, so
curves do not jump (by 2*pi for Euler angles, sign flips for quaternions and axes), and
start next to a reference value (normally the value the curve had before).
"""

import numpy as np

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
TWO_PI = 2.0 * np.pi
_GIMBAL_EPS = 1e-7


def _order_axes(order):
    """Axis indices in application order, and +1 for a cyclic (even) order, -1 otherwise."""
    if order not in EULER_ORDERS:
        raise ValueError(f"unknown Euler order {order!r}")
    i, j, k = ("XYZ".index(letter) for letter in order)
    parity = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    return i, j, k, parity


# --- quaternions, component axis first --------------------------------------------------


def multiply(a, b):
    """Hamilton product ``a * b`` of quaternions (4, ...) that broadcast."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    out = np.empty((4,) + np.broadcast_shapes(np.shape(aw), np.shape(bw)))  # filled row by row: no stack copy
    out[0] = aw * bw - ax * bx - ay * by - az * bz
    out[1] = aw * bx + ax * bw + ay * bz - az * by
    out[2] = aw * by - ax * bz + ay * bw + az * bx
    out[3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def conjugate(q):
    return np.stack((q[0], -q[1], -q[2], -q[3]))


def rotate(q, v):
    """Vectors (3, ...) rotated by unit quaternions (4, ...)."""
    w, ux, uy, uz = q
    vx, vy, vz = v
    tx = 2.0 * (uy * vz - uz * vy)
    ty = 2.0 * (uz * vx - ux * vz)
    tz = 2.0 * (ux * vy - uy * vx)
    out = np.empty((3,) + np.broadcast_shapes(np.shape(w), np.shape(vx)))
    out[0] = vx + w * tx + (uy * tz - uz * ty)
    out[1] = vy + w * ty + (uz * tx - ux * tz)
    out[2] = vz + w * tz + (ux * ty - uy * tx)
    return out


def normalize(q):
    """Unit quaternions (4, ...); a zero quaternion becomes the identity."""
    q = np.asarray(q, dtype=float)
    length = np.sqrt(np.sum(q * q, axis=0))
    zero = length == 0.0
    q = q / np.where(zero, 1.0, length)
    if np.any(zero):
        q[0] = np.where(zero, 1.0, q[0])
    return q


# --- channels -> quaternions ------------------------------------------------------------


def _half_angle_cos_sin(angles):
    """cos and sin of half of ``angles``, through the tangent of a quarter of them: numpy
    computes one ``tan`` several times faster than a ``sin`` and a ``cos`` (SIMD), and the
    half-angle formulas lose nothing (within a few ulps, whole turns included)."""
    t = np.tan(0.25 * np.asarray(angles, dtype=float))
    t_squared = t * t
    scale = 1.0 / (1.0 + t_squared)
    return (1.0 - t_squared) * scale, (2.0 * scale) * t


def euler_to_quat(euler, order):
    """Quaternions (4, ...) from Euler angles (3, ...) given per axis (x, y, z)."""
    i, j, k, parity = _order_axes(order)
    cos, sin = _half_angle_cos_sin(euler)
    ca, sa, cb, sb, cc, sc = cos[i], sin[i], cos[j], sin[j], cos[k], sin[k]
    # q_c * q_b * q_a written out for the three axes; the parity only flips signs, so it
    # swaps adds and subtracts (exactly the same values as multiplying by -1). Each row is
    # written by its last operation (out=, a view even for 0-d input): no temporary copied in.
    add, subtract = (np.add, np.subtract) if parity > 0 else (np.subtract, np.add)
    w = cb * ca
    vi = cb * sa
    vj = sb * ca
    sb_sa = sb * sa
    out = np.empty((4,) + w.shape)
    add(cc * w, sc * sb_sa, out=out[0, ...])
    subtract(cc * vi, sc * vj, out=out[1 + i, ...])
    add(cc * vj, sc * vi, out=out[1 + j, ...])
    subtract(sc * w, cc * sb_sa, out=out[1 + k, ...])
    return out


def axis_angle_to_quat(axis_angle):
    """Quaternions (4, ...) from (angle, x, y, z) (4, ...); a zero axis gives no rotation,
    as in Blender."""
    axis_angle = np.asarray(axis_angle, dtype=float)
    axis = axis_angle[1:]
    length = np.sqrt(np.sum(axis * axis, axis=0))
    valid = length > 0.0
    cos, sin = _half_angle_cos_sin(np.where(valid, axis_angle[0], 0.0))
    return np.concatenate((cos[None], axis * (sin / np.where(valid, length, 1.0))))


def channel_quat(mode, values):
    """Quaternions (4, ...) from a bone's rotation channel values for ``rotation_mode``
    ``mode``: (4, ...) for 'QUATERNION' (normalised, as Blender does) and 'AXIS_ANGLE',
    (3, ...) for an Euler order."""
    if mode == "QUATERNION":
        return normalize(values)
    if mode == "AXIS_ANGLE":
        return axis_angle_to_quat(values)
    return euler_to_quat(values, mode)


# --- quaternions -> channels ------------------------------------------------------------


def _wrap(angle):
    """Angles mapped to [-pi, pi] (rint: several times faster than a float modulo)."""
    return angle - TWO_PI * np.rint(angle / TWO_PI)


def _matrix_elements(q, elements):
    """The elements ``(row, col)`` of the rotation matrices of unit quaternions (4, ...),
    each from the products of two components, every product computed once."""
    scaled = np.sqrt(2.0) * np.asarray(q)  # products of these are twice the components'
    w, v = scaled[0], scaled[1:]
    products = {}

    def product(a, b):  # 2 * v[a] * v[b] (a, b in 0..2), 2 * w * v[b] for a None
        key = (a, b) if a is None or a <= b else (b, a)
        if key not in products:
            products[key] = (w if a is None else v[key[0]]) * v[key[1]]
        return products[key]

    out = []
    for row, col in elements:
        if row == col:
            a, b = (n for n in range(3) if n != row)
            out.append(1.0 - (product(a, a) + product(b, b)))
        elif (row, col) in ((1, 0), (2, 1), (0, 2)):
            out.append(product(row, col) + product(None, 3 - row - col))
        else:
            out.append(product(row, col) - product(None, 3 - row - col))
    return out


def _principal_euler(q, order):
    """The first Euler solution (3, ...) of unit quaternions (4, ...) for ``order``, and
    where it is gimbal locked (booleans (...)).

    The first angle ``a`` and the middle one ``b`` come from the matrix's last row; the
    last angle ``c`` is then solved for *given* ``a`` (from ``M @ R_a(-a) = R_c(c) @
    R_b(b)``), so the three always rebuild the rotation to rounding error, even next to
    gimbal lock where ``a`` and ``c`` on their own are ill-conditioned. At gimbal lock
    ``a`` is set to zero and ``c`` takes the whole turn.

    ``a`` and ``c`` come from sines and cosines scaled by ``cos b`` (arctan2 does not mind
    a positive scale).
    """
    i, j, k, parity = _order_axes(order)
    m_kj, m_kk, m_ki, m_ik, m_ij, m_jj, m_jk = _matrix_elements(q, ((k, j), (k, k), (k, i), (i, k), (i, j),
                                                                    (j, j), (j, k)))
    first = np.empty((3,) + np.shape(m_kk))  # each angle's arctan2 writes its own row
    cos_b = np.sqrt(m_kj * m_kj + m_kk * m_kk)
    locked = cos_b < _GIMBAL_EPS
    if locked.any():  # a = 0: its sine and cosine times cos b are 0 and cos b
        m_kj, m_kk = np.where(locked, 0.0, m_kj), np.where(locked, 1.0, m_kk)
    np.arctan2(m_kj * parity, m_kk, out=first[i, ...])
    np.arctan2(m_ki * -parity, cos_b, out=first[j, ...])
    np.arctan2((m_kj * m_ik - m_kk * m_ij) * parity, m_kk * m_jj - m_kj * m_jk, out=first[k, ...])
    return first, locked


def _second_solution(first, locked, order):
    """The other Euler solution ``(a + pi, pi - b, c + pi)``, wrapped, of principal ones
    (3, ...) (the same where ``locked``): one rule for all three angles."""
    turned = first + np.pi
    middle = "XYZ".index(order[1])
    np.subtract(np.pi, first[middle, ...], out=turned[middle, ...])
    second = _wrap(turned)
    if locked.any():
        second[:, locked] = first[:, locked]
    return second


def quat_to_euler_pair(q, order):
    """Both Euler solutions (3, ...) of unit quaternions (4, ...) for ``order`` (see
    :func:`_principal_euler` and :func:`_second_solution`); at gimbal lock both are the same."""
    first, locked = _principal_euler(q, order)
    return first, _second_solution(first, locked, order)


def _branch_distance(u, v):
    """Sum over the three axes of the shortest angular distance, ignoring whole turns;
    ``u`` may stack several candidates before the axes of ``v`` ((3, ...))."""
    return np.abs(_wrap(u - v)).sum(axis=-v.ndim)


# A map m: {0, 1} -> {0, 1} is stored as the code m(0) + 2 * m(1).
def _apply(code, state):
    return (code >> state) & 1


_IDENTITY_MAP = 2
_COMPOSE = np.array(  # _COMPOSE[g, f]: the code of "f, then g"
    [[_apply(g, _apply(f, 0)) + 2 * _apply(g, _apply(f, 1)) for f in range(4)] for g in range(4)],
    dtype=np.int8,
)


def _whole_turns(angles):
    """The whole turns (3, F - 1, ...) in each step between frames of angles (3, F, ...), and
    the steps' lengths summed over the axes with those turns taken out (F - 1, ...)."""
    steps = angles[:, 1:] - angles[:, :-1]  # np.diff's numbers, without its wrapper
    turns = np.rint(steps / TWO_PI)
    steps -= TWO_PI * turns
    np.abs(steps, out=steps)
    lengths = steps[0] + steps[1]  # two adds: a sum over axis 0 copies its first row first
    lengths += steps[2]
    return turns, lengths


def _chosen_branches(first, locked, order, start, step_lengths):
    """Per frame (axis 1 of the (3, F, ...) principal solutions), which of the two
    solutions continues the previous choice best, or None where that is ``start`` (the
    choice on the first frame) throughout.

    The greedy rule "take the candidate nearest to the one chosen on the previous frame"
    is a chain of maps {0, 1} -> {0, 1}; their running composition is a prefix scan, done
    with log2(F) vectorised doubling steps instead of a Python loop over frames.

    The two solutions of one frame are at least 2*pi apart (summed over the axes), so a
    step shorter than pi within a solution (``step_lengths``, from :func:`_whole_turns`)
    keeps to it: the full comparison, and the second solutions it needs, are only made
    where a step is long (near gimbal lock) or a frame is locked.
    """
    frames = first.shape[1]
    if frames < 2:
        return None
    unsure = (step_lengths > 0.9 * np.pi) | locked[1:] | locked[:-1]
    if not unsure.any():  # the usual case: no solution switch anywhere
        return None
    where = np.nonzero(unsure)
    now = (slice(None), where[0] + 1) + where[1:]
    before = (slice(None), where[0]) + where[1:]
    first_now, first_before = first[now], first[before]
    second_now = _second_solution(first_now, locked[now[1:]], order)
    to_second = [
        _branch_distance(second_now, previous) < _branch_distance(first_now, previous)
        for previous in (first_before, _second_solution(first_before, locked[before[1:]], order))
    ]
    code = np.full(first.shape[1:], _IDENTITY_MAP, dtype=np.int8)
    code[now[1:]] = to_second[0] + 2 * to_second[1]
    if np.all(code == _IDENTITY_MAP):
        return None
    shift = 1
    while shift < frames:
        code[shift:] = _COMPOSE[code[shift:], code[:-shift]]
        shift *= 2
    return _apply(code, np.asarray(start, dtype=np.int8))


def _unwrap(angles, turns):
    """Angles (3, F, ...), changed in place, with whole turns added so no step between
    frames exceeds pi; ``turns`` are the steps' whole turns (:func:`_whole_turns`), or None
    to count them here."""
    if turns is None:
        turns = np.rint(np.diff(angles, axis=1) / TWO_PI)
    # Most curves never cross a half turn: no (slow, strided) running sum. (turns.any()
    # would cast the floats to bools through a buffer, a compare does not.)
    if (turns != 0.0).any():
        angles[:, 1:] -= TWO_PI * np.cumsum(turns, axis=1)
    return angles


def quat_to_euler(q, order, reference=None):
    """Continuous Euler angles (3, F, ...) for unit quaternions (4, F, ...).

    Per frame both Euler solutions are computed; the sequence keeps to the solution that
    continues the previous frame (as ``Matrix.to_euler(order, previous)`` does, frame by
    frame) and every angle is unwrapped so it never jumps by 2*pi. The first frame takes
    the solution, and the whole turns, nearest to ``reference`` ((3, ...) angles, e.g. the
    curve's previous value there), or else the principal one. The second solutions are
    only computed where they are compared or chosen.
    """
    q = np.asarray(q, dtype=float)
    if q.ndim < 2 or q.shape[1] == 0:
        raise ValueError("quat_to_euler expects (4, frames, ...) with at least one frame")
    first, locked = _principal_euler(q, order)
    if reference is None:
        start = np.zeros(first.shape[2:], dtype=bool)  # an array, as the reference's test gives
    else:
        reference = np.asarray(reference, dtype=float)
        candidates = np.stack((first[:, 0], _second_solution(first[:, 0], locked[0], order)))
        distance = _branch_distance(candidates, reference)  # both at once: (2, ...)
        start = distance[1] < distance[0]
    turns, step_lengths = _whole_turns(first)
    branch = _chosen_branches(first, locked, order, start, step_lengths)
    if branch is not None or start.any():  # (in a click, np.any's wrapper cost 8 us more)
        if branch is None:
            branch = np.broadcast_to(start, first.shape[1:])
        first = np.where(branch == 0, first, _second_solution(first, locked, order))
        turns = None  # the steps of the chosen solutions are not those of the first
    euler = _unwrap(first, turns)  # first is this function's own array
    if reference is not None:
        euler += TWO_PI * np.rint((reference - euler[:, 0]) / TWO_PI)[:, None]
    return euler


def continuous_quat(q, reference=None):
    """Unit quaternions (4, F, ...) with signs flipped to stay in one hemisphere from
    frame to frame, the first frame on the side of ``reference`` (4, ...)."""
    q = normalize(q)
    if q.shape[1] > 1:
        dots = np.sum(q[:, 1:] * q[:, :-1], axis=0)
        q[:, 1:] *= np.cumprod(np.where(dots < 0.0, -1.0, 1.0), axis=0)
    if reference is not None:
        q = np.where(np.sum(q[:, 0] * np.asarray(reference, dtype=float), axis=0) < 0.0, -q, q)
    return q


def quat_to_axis_angle(q, reference=None):
    """Continuous (angle, x, y, z) values (4, F) for quaternions (4, F).

    The axis is a unit vector; where the rotation is (nearly) none the axis of the
    previous frame is kept (the reference's, or +Y, at the start). Axis and angle flip sign
    together where that keeps the axis continuous.
    """
    reference = None if reference is None else np.asarray(reference, dtype=float)
    q = continuous_quat(q, None if reference is None else axis_angle_to_quat(reference))
    length = np.sqrt(np.sum(q[1:] * q[1:], axis=0))
    angle = 2.0 * np.arctan2(length, q[0])
    valid = length > 1e-9
    axis = q[1:] / np.where(valid, length, 1.0)
    if not valid[0]:
        start = np.array([0.0, 1.0, 0.0])
        if reference is not None and np.linalg.norm(reference[1:]) > 0.0:
            start = reference[1:] / np.linalg.norm(reference[1:])
        axis[:, 0] = start
        valid = valid.copy()
        valid[0] = True
    # Undefined axes take the last defined one.
    axis = axis[:, np.maximum.accumulate(np.where(valid, np.arange(len(valid)), 0))]
    signs = np.ones(len(valid))
    if len(valid) > 1:
        signs[1:] = np.cumprod(np.where(np.sum(axis[:, 1:] * axis[:, :-1], axis=0) < 0.0, -1.0, 1.0))
    if reference is not None and np.dot(axis[:, 0], reference[1:]) < 0.0:
        signs = -signs
    return np.concatenate(((angle * signs)[None], axis * signs))


def quat_to_channel(mode, q, reference=None):
    """Channel values (width, F, ...) for ``rotation_mode`` ``mode`` from unit quaternions
    (4, F, ...), continuous over frames and starting next to ``reference`` (the channels'
    current values, (width, ...))."""
    if mode == "QUATERNION":
        return continuous_quat(q, reference)
    if mode == "AXIS_ANGLE":
        q = np.asarray(q, dtype=float)
        if q.ndim == 2:
            return quat_to_axis_angle(q, reference)
        flat = q.reshape(4, q.shape[1], -1)
        refs = None if reference is None else np.asarray(reference, dtype=float).reshape(4, -1)
        out = [
            quat_to_axis_angle(flat[:, :, b], None if refs is None else refs[:, b])
            for b in range(flat.shape[2])
        ]
        return np.stack(out, axis=-1).reshape(q.shape)
    return quat_to_euler(q, mode, reference)
