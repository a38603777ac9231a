"""Rotation arithmetic on unit quaternions ``(x, y, z, w)``, in scipy's own order of operations.

Every pose of a run used to be a :class:`scipy.spatial.transform.Rotation`; since scipy 1.15 each
of its calls passes an array-API dispatch layer that costs 20 to 170 us per call, whatever the
size, and a closed-loop run asks for tens of thousands of poses (a vehicle's pose is looked up
at every cast, the pose tree is composed at every lookup). These functions do the same
arithmetic on plain ``(n, 4)`` arrays, element by element in the order of scipy 1.17's Cython
backend (``scipy/spatial/transform/_rotation_cy.pyx``: ``_compose_quat_single``,
``_normalize4``, ``_make_elementary_quat``, ``as_matrix``, ``from_rotvec``, ``apply``), so
every result has the same bits as scipy's: ``+ - * /`` and ``sqrt`` are correctly rounded in
numpy as in C, and numpy's float64 ``sin`` and ``cos`` agree with the C library's that the
Cython calls (``tests/hifi/world/test_quaternion.py`` compares every function bit for bit with
scipy on random rotations). numpy's ``arctan2`` does not (it differs by an ulp on some inputs),
so ``as_rotvec`` is not here: its callers ask scipy once, when a track is made. ``apply``
calls the very ``numpy.matmul`` / ``numpy.einsum`` scipy calls (BLAS may fuse their sums, so
they are not rewritten).

Quaternions here are ``(n, 4)`` float64, scalar last, as :meth:`Rotation.as_quat` gives them;
a single rotation is a ``(1, 4)`` row (``single`` is the caller's to keep, as in scipy).
"""

from __future__ import annotations

import math

import numpy as np

#: Below this angle [rad] scipy's rotation-vector conversions use their Taylor series.
_SMALL_ANGLE_RAD = 1e-3


def compose(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Raw Hamilton products ``p q`` (rows broadcast as scipy's: one row against n), not
    normalised: scipy's ``_compose_quat`` (``from_euler`` composes its elementary rotations so).

    Parameters
    ----------
    p, q : (n, 4) or (1, 4) float64
        Quaternions (x, y, z, w).
    """
    if len(p) == 1 and len(q) == 1:         # one product: Python floats, the same IEEE arithmetic
        (p0, p1, p2, p3), (q0, q1, q2, q3) = p[0].tolist(), q[0].tolist()
        return np.array([[p3 * q0 + q3 * p0 + (p1 * q2 - p2 * q1), p3 * q1 + q3 * p1 + (p2 * q0 - p0 * q2),
                          p3 * q2 + q3 * p2 + (p0 * q1 - p1 * q0), p3 * q3 - p0 * q0 - p1 * q1 - p2 * q2]])
    p0, p1, p2, p3 = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    q0, q1, q2, q3 = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    out = np.empty((max(len(p), len(q)), 4))
    out[:, 0] = p3 * q0 + q3 * p0 + (p1 * q2 - p2 * q1)
    out[:, 1] = p3 * q1 + q3 * p1 + (p2 * q0 - p0 * q2)
    out[:, 2] = p3 * q2 + q3 * p2 + (p0 * q1 - p1 * q0)
    out[:, 3] = p3 * q3 - p0 * q0 - p1 * q1 - p2 * q2
    return out


def normalize(q: np.ndarray) -> np.ndarray:
    """Rows divided by their norm, a new array (scipy's ``_normalize4``: the norm is
    ``sqrt(x x + y y + z z + w w)`` summed in that order, each component divided by it).

    Raises ValueError for a zero row, as ``Rotation.from_quat``.
    """
    if len(q) == 1:
        x, y, z, w = q[0].tolist()
        norm = math.sqrt(x * x + y * y + z * z + w * w)
        if norm == 0:
            raise ValueError("Found zero norm quaternions in `quat`.")
        return np.array([[x / norm, y / norm, z / norm, w / norm]])
    norm = np.sqrt(q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1] + q[:, 2] * q[:, 2] + q[:, 3] * q[:, 3])
    if np.any(norm == 0):
        raise ValueError("Found zero norm quaternions in `quat`.")
    return q / norm[:, None]


def multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``Rotation * Rotation``: the products, normalised (scipy's ``__mul__`` builds its result
    with ``normalize=True``)."""
    return normalize(compose(p, q))


def inverse(q: np.ndarray) -> np.ndarray:
    """Conjugates (scipy's ``inv``: x, y, z negated)."""
    out = q.copy()
    out[:, :3] *= -1
    return out


def from_euler(seq: str, angles_rad: np.ndarray) -> np.ndarray:
    """Quaternions (n, 4) from Euler angles (n, k) [rad], as ``Rotation.from_euler(seq, angles)``.

    ``seq``: up to three of ``xyz`` (extrinsic, about the parent's axes) or of ``XYZ``
    (intrinsic). Angles in degrees are converted by the caller with ``numpy.deg2rad``, as scipy
    does. Each elementary rotation is a full quaternion row (zeros included) composed in scipy's
    order: the next on the left for extrinsic axes, on the right for intrinsic ones.
    """
    angles = np.atleast_2d(np.asarray(angles_rad, dtype=float))
    intrinsic = seq.isupper()
    if len(angles) == 1:                      # one rotation: Python floats, the C library's sin, cos
        result = None
        for axis, angle in zip(seq.lower(), angles[0].tolist()):
            elem = [0.0, 0.0, 0.0, math.cos(angle / 2)]
            elem["xyz".index(axis)] = math.sin(angle / 2)
            elem = np.array([elem])
            result = elem if result is None else compose(result, elem) if intrinsic else compose(elem, result)
        return result
    result = None
    for i, axis in enumerate(seq.lower()):
        elem = np.zeros((len(angles), 4))
        half = angles[:, i] / 2
        elem[:, 3] = np.cos(half)
        elem[:, "xyz".index(axis)] = np.sin(half)
        if result is None:
            result = elem
        else:
            result = compose(result, elem) if intrinsic else compose(elem, result)
    return result


def as_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3), C-ordered, scipy's ``as_matrix`` term for term."""
    if len(q) == 1:
        x, y, z, w = q[0].tolist()
    else:
        x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    if len(q) == 1:
        return np.array([[[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
                          [2 * (xy + zw), - x2 + y2 - z2 + w2, 2 * (yz - xw)],
                          [2 * (xz - yw), 2 * (yz + xw), - x2 - y2 + z2 + w2]]])
    m = np.empty((len(q), 3, 3))
    m[:, 0, 0] = x2 - y2 - z2 + w2
    m[:, 1, 0] = 2 * (xy + zw)
    m[:, 2, 0] = 2 * (xz - yw)
    m[:, 0, 1] = 2 * (xy - zw)
    m[:, 1, 1] = - x2 + y2 - z2 + w2
    m[:, 2, 1] = 2 * (yz + xw)
    m[:, 0, 2] = 2 * (xz + yw)
    m[:, 1, 2] = 2 * (yz - xw)
    m[:, 2, 2] = - x2 - y2 + z2 + w2
    return m


def apply(q: np.ndarray, vectors: np.ndarray, inverse: bool = False, matrix: np.ndarray | None = None) -> np.ndarray:
    """Rotate vectors, as ``Rotation.apply`` for rotations held as the rows ``q``.

    Parameters
    ----------
    q : (n, 4) float64
        Quaternions; one row is one rotation applied to every vector.
    vectors : (3,) or (m, 3) array_like
        With n rows, m is 1 or n.
    inverse : bool
        Apply the inverse rotations.
    matrix : (n, 3, 3) float64, optional
        ``as_matrix(q)`` when the caller has it (a pose keeps it).

    Returns
    -------
    (m, 3) or (n, 3) float64; a ``(1, 3)`` row for one vector (the caller drops it for a single
    rotation, as scipy).

    Notes
    -----
    scipy's three cases with scipy's calls: one rotation and one vector ``matmul(R, v)``; one
    rotation and many vectors ``matmul`` with ``axes``; a stack ``einsum("ijk,ik->ij")``; the
    inverse is the transposed view.
    """
    v = np.asarray(vectors, dtype=float)
    if v.ndim == 1:
        v = v[None, :]
    n_vectors, n_rotations = len(v), len(q)
    if n_vectors != 1 and n_rotations != 1 and n_vectors != n_rotations:
        raise ValueError(f"Cannot broadcast {n_rotations} rotations to {n_vectors} vectors.")
    if matrix is None:
        matrix = as_matrix(q)
    if inverse:
        matrix = np.swapaxes(matrix, -1, -2)
    if n_vectors == 1 and n_rotations == 1:
        return np.matmul(matrix, v[0])
    if n_rotations == 1:
        return np.matmul(matrix, v, axes=[(-2, -1), (-1, -2), (-1, -2)])[0]
    return np.einsum("ijk,ik->ij", matrix, v)


def from_rotvec(rotvec: np.ndarray) -> np.ndarray:
    """Quaternions (n, 4) from rotation vectors (n, 3) [rad], as ``Rotation.from_rotvec``
    (Taylor series of ``sin(a / 2) / a`` at or below 1 mrad)."""
    rv = np.asarray(rotvec, dtype=float)
    angle = np.sqrt(rv[:, 0] * rv[:, 0] + rv[:, 1] * rv[:, 1] + rv[:, 2] * rv[:, 2])
    small = angle <= _SMALL_ANGLE_RAD
    angle2 = angle * angle
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(small, 0.5 - angle2 / 48 + angle2 * angle2 / 3840, np.sin(angle / 2) / angle)
    out = np.empty((len(rv), 4))
    out[:, :3] = scale[:, None] * rv
    out[:, 3] = np.cos(angle / 2)
    return out


class Slerp:
    """scipy's :class:`~scipy.spatial.transform.Slerp` on quaternion rows: the keyframes'
    rotation vectors are scipy's own (made once), each call ``R_k * from_rotvec(alpha r_k)``.

    Parameters
    ----------
    times_s : (k,) float
        Strictly increasing keyframe times [s] (k >= 2).
    quat : (k, 4) float64
        Keyframe quaternions.
    """

    def __init__(self, times_s, quat):
        from scipy.spatial.transform import Rotation, Slerp as _ScipySlerp
        ref = _ScipySlerp(np.asarray(times_s, dtype=float), Rotation(np.asarray(quat, float), normalize=False))
        self.times = np.asarray(ref.times)
        self.timedelta = np.asarray(ref.timedelta)
        self.quat = np.asarray(ref.rotations.as_quat()).reshape(-1, 4)
        self.rotvecs = np.asarray(ref.rotvecs).reshape(-1, 3)

    def __call__(self, t_s) -> np.ndarray:
        """Quaternions (n, 4) at times ``t_s`` (n,) [s], within the keyframes' span."""
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        ind = np.searchsorted(self.times, t) - 1
        ind[t == self.times[0]] = 0
        if np.any((ind < 0) | (ind > len(self.quat) - 1)):
            raise ValueError(f"Interpolation times must be within the range [{self.times[0]}, "
                             f"{self.times[-1]}], both inclusive.")
        alpha = (t - self.times[ind]) / self.timedelta[ind]
        return multiply(self.quat[ind], from_rotvec(self.rotvecs[ind] * alpha[:, None]))
