"""Batched quaternion and vector helpers.

Quaternions are stored as ``(..., 4)`` arrays in Blender's ``(w, x, y, z)`` order so
that values cross the bpy boundary without reordering. Every function broadcasts over
leading axes, which is how the solvers stay vectorized over frames.

Where a vector's components each take one value of a row (normalizing, removing the
height), the functions go a component at a time: the same numbers as broadcasting the
row's value over a short last axis, which numpy does in inner loops of 3 or 4 values, one
per row, at twice the cost or more. Products of quaternions and vectors, whose components
mix, gather their factors as rows (:func:`component_rows`), so that one numpy call makes a
product for every component.

Results are laid out as the rows they are computed from (:func:`empty_as`; a rotation's as
its vectors): rows stored a component at a time, as the leg solver stores its rows, give
results stored that way too, so every component is read and written contiguously (numpy
runs a strided component a value at a time, several times slower); any other layout gives
a C array.

Throughout the solvers an array's own methods (``a.take``, ``a.cumsum``, ``a.swapaxes``,
``a.nonzero()``) stand for numpy's functions of the same name, which reach them through
Python wrappers costing about as much as the work on a clip's rows (a click's solve: 100 us).
"""

import numpy as np

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
_CONJUGATE_SIGNS = np.array([1.0, -1.0, -1.0, -1.0])
# Rows of the sixteen terms of a Hamilton product a * b (see :func:`multiply`): the components
# of ``a`` (w x y z, then negated -w -x -y -z) and of ``b`` each term of the components w, x, y,
# z takes, for a's w, then its x, y and z.
_PRODUCT_A = np.array([0, 0, 0, 0, 5, 1, 5, 1, 6, 2, 2, 6, 7, 7, 3, 3])
_PRODUCT_B = np.array([0, 1, 2, 3, 1, 0, 3, 2, 2, 3, 0, 1, 3, 2, 1, 0])
_CONJUGATE_PRODUCT_A = np.array([0, 0, 0, 0, 1, 5, 1, 5, 2, 6, 6, 2, 3, 3, 7, 7])  # a's x, y, z negated
# The rows of the factors of cross products u x v (see :func:`_cross`), and of a quaternion
# for :func:`rotate`: its vector part's as ``_CROSS_LEFT``, then its w three times.
_CROSS_LEFT = np.array([1, 2, 0, 2, 0, 1])
_CROSS_RIGHT = np.array([2, 0, 1, 1, 2, 0])
_ROTATE_FACTORS = np.array([2, 3, 1, 3, 1, 2, 0, 0, 0])
# Both gathers at once, for :func:`multiply_and_rotate` (rotate's rows are a's unsigned ones).
_PRODUCT_AND_ROTATE_A = np.concatenate((_PRODUCT_A, _ROTATE_FACTORS))


def empty_as(like, shape=None):
    """An uninitialized float array of ``shape`` (``like``'s where None) laid out as
    ``like``: a component at a time (the last axis outermost in memory) where ``like`` is
    stored that way and has the same leading shape, else in C order."""
    # Attributes, not np.shape / getattr: on the solvers' short arrays their Python
    # wrappers cost several times the allocation (as np.moveaxis's checks would).
    like_shape = like.shape
    shape = like_shape if shape is None else tuple(shape)
    if _by_component(like) and like_shape[:-1] == shape[:-1]:
        out = np.empty(shape[-1:] + shape[:-1])
        return out.T if len(shape) == 2 else out.transpose(*range(1, len(shape)), 0)
    return np.empty(shape)


def _by_component(values):
    """Whether ``values`` (..., k) is stored a component at a time (the last axis outermost)."""
    strides = values.strides
    return len(strides) >= 2 and strides[-1] > abs(strides[-2])


def component_rows(v, ndim=None):
    """``v`` (..., k) as rows (k, ...): its components first, a view; with ``ndim``, its leading
    axes padded with ones to ``ndim`` - 1, to broadcast as they would with the components last.
    Stored a component at a time, as the solvers' rows are, each row is contiguous: one numpy
    call runs through all components as fast as through one."""
    rows = v.T if v.ndim == 2 else v.transpose(v.ndim - 1, *range(v.ndim - 1))
    if ndim is None or v.ndim == ndim:
        return rows
    return rows.reshape(rows.shape[:1] + (1,) * (ndim - v.ndim) + rows.shape[1:])


def as_component_rows(values):
    """``values`` (..., k) copied into rows (N, k), the leading axes flattened in order, stored a
    component at a time (:func:`component_rows` of the result: each row contiguous), as the
    solvers lay out the rows they run the quaternion helpers on."""
    out = np.empty((values.shape[-1],) + values.shape[:-1])
    out[...] = component_rows(values)
    return out.reshape(values.shape[-1], -1).T


def dot(u, v):
    """Dot products along a short last axis (3 or 4) in one einsum: ``np.sum(u * v, -1)``'s
    numbers to round-off at a fraction of the cost (numpy reduces a short axis slowly, a
    product and a sum per component cost a call each, and the solvers take thousands of
    these on a click). Rows stored a component at a time are summed component by component."""
    return np.einsum("...i,...i->...", u, v)


def length(v):
    """Lengths along a short last axis: the same numbers as ``np.linalg.norm(v, axis=-1)``."""
    return np.sqrt(dot(v, v))


def dots(u, v):
    """Dot products of vectors (..., 3) of many frames: :func:`dot`'s numbers (its
    einsum adds the first and last products, then the middle one) at about half its cost on a
    clip's frames, where einsum's per-vector reduction of three costs several times a ufunc's
    pass per component."""
    return _summed(np.multiply(u, v))


def lengths(vectors):
    """Lengths of vectors (..., 3) of many frames: :func:`length`'s numbers, as
    :func:`dots` computes them."""
    total = _summed(np.square(vectors))
    return np.sqrt(total, out=total)


def _summed(products):
    """The three components of ``products`` (..., 3) added as :func:`dot` adds them."""
    total = np.add(products[..., 0], products[..., 2])
    total += products[..., 1]
    return total


def normalize(v, eps=1e-12):
    """Unit vectors (or quaternions) along the last axis; zero stays zero."""
    v = np.asarray(v, dtype=float)
    return divided(v, length(v), eps)


def divided(v, sizes, eps=1e-12):
    """``v`` (..., k) divided by its lengths ``sizes`` (...), at least ``eps``: :func:`normalize`
    where the lengths are known."""
    sizes = np.maximum(sizes, eps)
    out = empty_as(v)
    if _by_component(out):  # all components in one call, each row contiguous (see :func:`component_rows`)
        np.divide(component_rows(v, v.ndim), sizes, out=component_rows(out, v.ndim))
        return out
    for i in range(out.shape[-1]):  # a component at a time (see the module's docstring)
        np.divide(v[..., i], sizes, out=out[..., i])
    return out


def _common_shape(a, b):
    """Broadcast shape of two arrays; the common equal-shape case skips numpy's general
    (and, on the one-frame arrays of the live preview, comparatively slow) machinery."""
    a_shape, b_shape = a.shape, b.shape
    return a_shape if a_shape == b_shape else np.broadcast_shapes(a_shape, b_shape)


def multiply(a, b, out=None, conjugate_a=False):
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``), written to ``out`` where
    given (which may be one of the factors: every term is made before it is written); with
    ``conjugate_a``, ``conjugate(a) * b`` (``b`` relative to a unit ``a``), whose signs come
    from the same rows at no extra cost."""
    # Every component is four products, one per component of ``a`` (w, x, y, z, in that
    # order) and each with its sign: all sixteen made in one call from the components
    # gathered as rows (see :func:`component_rows`), ``a``'s signed, then added a component of each
    # term at a time, left to right. The numbers of the plain expressions (aw bw - ax bx -
    # ay by - az bz, ...: a difference is the sum of the negated term, to the bit) in 8
    # numpy calls instead of 28 (on the solvers' short arrays each call costs about as
    # much as its arithmetic).
    shape = _common_shape(a, b)
    terms = _signed(component_rows(a, len(shape))).take(_CONJUGATE_PRODUCT_A if conjugate_a else _PRODUCT_A, axis=0)
    out = empty_as(a, shape) if out is None else out
    _multiplied(terms, component_rows(b, len(shape)), shape, component_rows(out, len(shape)))
    return out


def multiply_and_rotate(a, b, v, out, out_v, offset):
    """``multiply(a, b, out=out)``, and ``offset + rotate(a, v)`` into ``out_v`` (which must
    not be ``v`` nor ``offset``), all of one leading shape: a joint's global rotation and
    position from its parent's (``a``, ``offset``) and its local ones (``b``, ``v``). The same
    numbers (the offset added last: a sum of two is the same either way round, to the bit)
    from one gather of ``a``'s rows for both, the rotation made in ``out_v``'s rows."""
    taken = _signed(component_rows(a)).take(_PRODUCT_AND_ROTATE_A, axis=0)
    _multiplied(taken[:16], component_rows(b), a.shape, component_rows(out))
    out_rows = component_rows(out_v)
    _rotated(taken[16:], component_rows(v), out_rows)
    out_rows += component_rows(offset)


def _signed(rows):
    """The rows (4, ...) of quaternions, then the same negated (8, ...)."""
    signed = np.empty((8,) + rows.shape[1:])
    signed[:4] = rows
    np.negative(rows, out=signed[4:])
    return signed


def _multiplied(terms, b_rows, shape, out_rows):
    """The Hamilton product of ``shape`` into its rows ``out_rows`` from the sixteen terms'
    factors of ``a`` (``_PRODUCT_A`` of its signed rows) and ``b``'s rows (see :func:`multiply`)."""
    in_place = terms.shape[1:] == shape[:-1]  # else broadcast to the product's shape
    terms = np.multiply(terms, b_rows.take(_PRODUCT_B, axis=0), out=terms if in_place else None)
    np.add(terms[:4], terms[4:8], out=out_rows)
    out_rows += terms[8:12]
    out_rows += terms[12:]


def conjugate(q):
    """Inverse of a unit quaternion."""
    return q * _CONJUGATE_SIGNS


def horizontal(v, up, height=None):
    """The part of vectors ``v`` (..., 3) across the unit ``up`` axis; ``height`` their
    :func:`dot` with it, where already known. The height by :func:`dot`, not ``v @ up``:
    OpenBLAS runs a matrix-vector product of a few thousand rows on several threads, whose
    spinning afterwards takes a core from the click."""
    v, up = np.asarray(v, dtype=float), np.asarray(up, dtype=float)
    if height is None:
        height = dot(v, up)
    out = empty_as(v)
    for i in range(3):  # a component at a time (see the module's docstring)
        np.subtract(v[..., i], height * up[i], out=out[..., i])
    return out


def gradient(values, axis=0):
    """``np.gradient(values, axis=axis)``'s numbers (unit spacing: central differences inside,
    one-sided at both ends) at under half its cost on the solvers' small arrays, where
    numpy's general version spends its time in Python. Needs two samples along ``axis``."""
    along = values.swapaxes(0, axis)
    out = np.empty_like(along)
    np.subtract(along[2:], along[:-2], out=out[1:-1])
    out[1:-1] /= 2.0
    np.subtract(along[1], along[0], out=out[0])
    np.subtract(along[-1], along[-2], out=out[-1])
    return out.swapaxes(0, axis)


def median(values, axis=None):
    """``np.median(values, axis)``'s numbers (the middle value, or the mean of the middle
    two) from one partition, at a fraction of its cost on the solvers' small arrays, where
    numpy's general version spends its time in Python."""
    values = np.asarray(values, dtype=float)
    if axis is None:
        values, axis = values.ravel(), 0
    middle = values.shape[axis] // 2
    odd = values.shape[axis] % 2
    part = np.partition(values, [middle] if odd else [middle - 1, middle], axis=axis)
    out = part.take(middle, axis=axis)  # (the method: np.take's wrapper costs as much on few values)
    if not odd:
        out = (part.take(middle - 1, axis=axis) + out) / 2
    # A NaN makes the median NaN; ``[()]`` gives a scalar where there is one median.
    return np.where(np.isnan(values).any(axis=axis), np.nan, out)[()]


def cross(u, v, out=None):
    """Cross products along the last axis; leaner than ``np.cross`` on small trailing axes.
    Written to ``out`` where given."""
    shape = _common_shape(u, v)
    out = empty_as(u, shape) if out is None else out
    ndim = len(shape)
    left = component_rows(u, ndim).take(_CROSS_LEFT, axis=0)
    _cross(left, component_rows(v, ndim), component_rows(out, ndim))
    return out


def _cross(left, right, out):
    """Cross products into the rows ``out`` (3, ...) of vectors given as rows (3, ...) on
    the right and, on the left, as the rows (y z x z x y) (``_CROSS_LEFT`` of them): the six
    products in one call, then (y vz - z vy, z vx - x vz, x vy - y vx) in one more."""
    products = np.multiply(left, right.take(_CROSS_RIGHT, axis=0))
    return np.subtract(products[:3], products[3:], out=out)


def rotate(q, v):
    """Rotate vectors ``v`` (..., 3) by unit quaternions ``q`` (..., 4): ``v + w t + u x t``
    with ``t = 2 u x v``, each product for all components in one call on rows (see
    :func:`component_rows`): the numbers of the component-wise expressions, summed in the
    same order, in 11 numpy calls instead of 31."""
    v = np.asarray(v, dtype=float)
    shape = _common_shape(q[..., 1:], v)
    factors = component_rows(q, len(shape)).take(_ROTATE_FACTORS, axis=0)
    out = empty_as(v, shape)
    _rotated(factors, component_rows(v, len(shape)), component_rows(out, len(shape)))
    return out


def _rotated(factors, vectors, out_rows):
    """The rotated ``vectors`` (3, ...) into ``out_rows`` (of their broadcast shape), the
    quaternions given as the rows y z x z x y (u for :func:`_cross`), w w w of them
    (``_ROTATE_FACTORS``; see :func:`rotate`)."""
    twice = _cross(factors[:6], vectors, np.empty(out_rows.shape))
    twice *= 2.0
    np.multiply(factors[6:], twice, out=out_rows)
    out_rows += vectors
    out_rows += _cross(factors[:6], twice, twice)


def between(p, q):
    """Shortest-arc unit quaternion rotating direction ``p`` onto direction ``q``.

    Antiparallel inputs get a half turn about an axis perpendicular to ``p`` (any
    such axis is a valid shortest arc; this one is at least well defined).
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p_squared = dot(p, p)
    out = empty_as(p, _common_shape(p, q)[:-1] + (4,))
    np.add(np.sqrt(p_squared * dot(q, q)), dot(p, q), out=out[..., 0])
    cross(p, q, out=out[..., 1:])
    size = length(out)
    degenerate = size < 1e-8 * np.maximum(p_squared, 1e-30)
    if np.count_nonzero(degenerate):  # one C call, where ndarray.any runs numpy's Python _methods._any
        axis = np.cross(p, [1.0, 0.0, 0.0])
        small = np.linalg.norm(axis, axis=-1) < 1e-6 * np.linalg.norm(p, axis=-1)
        axis = np.where(small[..., None], np.cross(p, [0.0, 1.0, 0.0]), axis)
        half_turn = np.concatenate((np.zeros(out.shape[:-1] + (1,)), normalize(axis)), axis=-1)
        return normalize(np.where(degenerate[..., None], half_turn, out))
    return divided(out, size)


def from_axis_angle(axis, angle):
    """Unit quaternions from unit axes (..., 3) and angles (...) in radians."""
    axis, half = np.asarray(axis, dtype=float), 0.5 * np.asarray(angle)
    out = empty_as(axis, _common_shape(axis[..., 0], half) + (4,))
    np.cos(half, out=out[..., 0])
    # The vector part's components in one call on rows (see :func:`component_rows`).
    np.multiply(np.sin(half), component_rows(axis, out.ndim), out=component_rows(out)[1:])
    return out


def to_matrix(q):
    """Rotation matrices (..., 3, 3) from unit quaternions."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    # Each element written in place: on a rig's few rest rotations np.stack's wrappers cost
    # more than the arithmetic.
    m = np.empty(np.shape(w) + (3, 3))
    m[..., 0, 0], m[..., 0, 1], m[..., 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    m[..., 1, 0], m[..., 1, 1], m[..., 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    m[..., 2, 0], m[..., 2, 1], m[..., 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    return m


def from_matrix(m):
    """Unit quaternions (w >= 0) from rotation matrices (..., 3, 3), all branches batched."""
    m = np.asarray(m, dtype=float)
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = ([m[..., row, col] for col in range(3)] for row in range(3))
    trace = m00 + m11 + m22
    # The four candidates (..., 4, 4), one per pivot, written in place: on a rig's few rest
    # matrices np.stack's and take_along_axis' wrappers cost more than the arithmetic.
    candidates = np.empty(m.shape[:-2] + (4, 4))
    candidates[..., 0, 0] = 1 + trace
    candidates[..., 1, 1] = 1 + m00 - m11 - m22
    candidates[..., 2, 2] = 1 - m00 + m11 - m22
    candidates[..., 3, 3] = 1 - m00 - m11 + m22
    candidates[..., 0, 1] = candidates[..., 1, 0] = m21 - m12
    candidates[..., 0, 2] = candidates[..., 2, 0] = m02 - m20
    candidates[..., 0, 3] = candidates[..., 3, 0] = m10 - m01
    candidates[..., 1, 2] = candidates[..., 2, 1] = m01 + m10
    candidates[..., 1, 3] = candidates[..., 3, 1] = m02 + m20
    candidates[..., 2, 3] = candidates[..., 3, 2] = m12 + m21
    # Pick the candidate with the largest pivot: numerically the best conditioned.
    pivots = np.empty(m.shape[:-2] + (4,))
    pivots[..., 0] = trace
    pivots[..., 1:] = np.diagonal(m, axis1=-2, axis2=-1)
    best = np.argmax(pivots, axis=-1).reshape(-1)
    flat = candidates.reshape(-1, 4, 4)
    q = normalize(flat[np.arange(len(flat)), best].reshape(m.shape[:-2] + (4,)))
    return np.where(q[..., :1] < 0, -q, q)
