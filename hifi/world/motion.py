"""Rigid poses and keyframed motion.

A :class:`Pose` maps points from a body frame into its parent frame,
``p_parent = R p_body + t``, and may hold one pose or a stack of ``n`` poses (one per time).
A :class:`Track` interpolates keyframes, held constant before the first and after the last one:
``interpolation = "linear"`` (the default) is linear in position and spherical-linear (slerp) in
rotation; ``"spline"`` is a C2 cubic spline in position and a C2 rotation spline, so velocity,
acceleration, angular rate and angular acceleration exist everywhere between the keyframes (what
an inertial sensor needs). :class:`Kinematics` holds a pose with those derivatives and
:func:`compose_kinematics` carries them up a parent chain.

Rotations (the scenario format's): ``rpy_deg`` are rotations about the parent's x, y, z axes applied
in that order, i.e. ``scipy.spatial.transform.Rotation.from_euler("xyz", rpy, degrees=True)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation, RotationSpline

from . import quaternion

#: Keyframe interpolations a :class:`Track` offers.
INTERPOLATIONS = ("linear", "spline")


def rotation_from_rpy_deg(rpy_deg) -> Rotation:
    """Rotation from roll, pitch, yaw [deg] about the parent's x, y, z axes (extrinsic xyz)."""
    return Rotation.from_euler("xyz", np.asarray(rpy_deg, dtype=float), degrees=True)


class Pose:
    """Rigid transform body -> parent: ``p_parent = rotation.apply(p_body) + translation``.

    Attributes
    ----------
    rotation : scipy.spatial.transform.Rotation
        Single or stacked rotation (n).
    translation : ndarray, shape (3,) or (n, 3)
        Origin of the body frame in the parent frame [m].

    Notes
    -----
    A pose holds its rotation as quaternion rows (:attr:`quat`) and makes the scipy
    ``Rotation`` only when :attr:`rotation` is read: composing, applying and broadcasting go
    through :mod:`hifi.world.quaternion`, scipy's arithmetic in scipy's order (the same bits)
    without scipy's cost per call (most of a closed-loop run's Python time before). A pose is
    made from a scipy ``Rotation`` (``Pose(rotation, translation)``) or from quaternions
    (:meth:`from_quat`); it is not changed after.
    """

    __slots__ = ("_rotation", "_q", "_m", "_rsingle", "translation")

    def __init__(self, rotation: Rotation, translation: np.ndarray):
        self._rotation = rotation
        self._q = self._m = None
        self._rsingle = rotation.single
        self.translation = translation

    @classmethod
    def from_quat(cls, quat: np.ndarray, translation: np.ndarray, single: bool | None = None) -> "Pose":
        """Pose from quaternion rows ``quat`` ((n, 4) float64, x y z w, taken as they are: not
        normalised, not copied) and ``translation`` [m]. ``single``: one rotation (``quat`` one
        row); None: when ``translation`` is one (3,) vector."""
        pose = cls.__new__(cls)
        pose._rotation = pose._m = None
        pose._q = quat
        pose._rsingle = np.ndim(translation) == 1 if single is None else single
        pose.translation = translation
        return pose

    @property
    def rotation(self) -> Rotation:
        """The rotation(s) as a scipy ``Rotation`` (made on first use, the same quaternions)."""
        if self._rotation is None:
            q = self._q[0] if self._rsingle else self._q
            # scipy's Cython needs a writable buffer: a read-only (kept) pose lends a copy
            self._rotation = Rotation(q, normalize=False, copy=not q.flags.writeable)
        return self._rotation

    @property
    def quat(self) -> np.ndarray:
        """Quaternion rows (n, 4), x y z w (one row for a single rotation); read, not changed."""
        if self._q is None:
            self._q = np.asarray(self._rotation.as_quat(), dtype=float).reshape(-1, 4)
        return self._q

    def __repr__(self) -> str:
        return f"Pose(quat={self.quat!r}, translation={self.translation!r})"

    @classmethod
    def identity(cls) -> "Pose":
        return cls.from_quat(np.array([[0.0, 0.0, 0.0, 1.0]]), np.zeros(3))

    @classmethod
    def from_position_rpy(cls, position_m, rpy_deg) -> "Pose":
        rpy = np.deg2rad(np.asarray(rpy_deg, dtype=float))
        if rpy.ndim not in (1, 2) or rpy.shape[-1] != 3:   # scipy raises its message for a bad shape
            return cls(rotation_from_rpy_deg(rpy_deg), np.asarray(position_m, dtype=float))
        return cls.from_quat(quaternion.from_euler("xyz", rpy), np.asarray(position_m, dtype=float),
                             single=rpy.ndim == 1)

    def __len__(self) -> int:
        return 1 if self.translation.ndim == 1 else self.translation.shape[0]

    @property
    def single(self) -> bool:
        return self.translation.ndim == 1

    def _rotate(self, vectors, inverse=False) -> np.ndarray:
        """``rotation.apply(vectors, inverse)``, with scipy's shapes."""
        v = np.asarray(vectors, dtype=float)
        if v.ndim > 2:                     # scipy's array-API path for (..., 3): scipy itself
            return self.rotation.apply(v, inverse=inverse)
        out = quaternion.apply(self.quat, v, inverse, self._matrices())
        return out[0] if self._rsingle and v.ndim == 1 else out

    def compose(self, child: "Pose") -> "Pose":
        """Pose of ``child`` (given in this pose's body frame) in this pose's parent frame."""
        return Pose.from_quat(quaternion.multiply(self.quat, child.quat),
                              self.translation + self._rotate(child.translation),
                              single=self._rsingle and child._rsingle)

    def apply(self, points_body: np.ndarray) -> np.ndarray:
        """Transform points (..., 3) from the body frame into the parent frame [m]."""
        return self._rotate(points_body) + self.translation

    def apply_vectors(self, vectors_body: np.ndarray) -> np.ndarray:
        """Rotate direction vectors (..., 3) from the body frame into the parent frame."""
        return self._rotate(vectors_body)

    def inverse_apply(self, points_parent: np.ndarray) -> np.ndarray:
        """Transform points (..., 3) from the parent frame into the body frame [m]."""
        return self._rotate(points_parent - self.translation, inverse=True)

    def inverse_apply_vectors(self, vectors_parent: np.ndarray) -> np.ndarray:
        """Rotate direction vectors from the parent frame into the body frame."""
        return self._rotate(vectors_parent, inverse=True)

    def _matrices(self) -> np.ndarray:
        """``as_matrix`` of the quaternion rows (n, 3, 3), made once (a kept pose is composed
        with many children), read-only."""
        if self._m is None:
            m = quaternion.as_matrix(self.quat)
            m.flags.writeable = False
            self._m = m
        return self._m

    def rotation_matrix(self) -> np.ndarray:
        """The 3 x 3 rotation matrix (or (n, 3, 3)), ``rotation.as_matrix()`` (a new array)."""
        rot = self._matrices().copy()
        return rot[0] if self._rsingle else rot

    def matrix(self) -> np.ndarray:
        """Homogeneous 4 x 4 matrix (or (n, 4, 4) for a stack)."""
        rot = self.rotation_matrix()
        if self.single:
            m = np.eye(4)
            m[:3, :3] = rot
            m[:3, 3] = self.translation
            return m
        m = np.tile(np.eye(4), (len(self), 1, 1))
        m[:, :3, :3] = rot
        m[:, :3, 3] = self.translation
        return m

    def broadcast(self, n: int) -> "Pose":
        """Stack of ``n`` copies of a single pose (no-op for a stack of length n)."""
        if not self.single:
            if len(self) != n:
                raise ValueError(f"cannot broadcast a stack of {len(self)} poses to {n}")
            return self
        # Rotation.from_quat(broadcast quaternions) normalises each copy: the same row n times
        return Pose.from_quat(np.repeat(quaternion.normalize(self.quat[:1]), n, axis=0),
                              np.broadcast_to(self.translation, (n, 3)).copy(), single=False)


class Kinematics(NamedTuple):
    """A pose with its first and second time derivatives, in one reference frame.

    For a body's own motion the reference frame is its parent's; for
    :meth:`hifi.world.scene.Scene.kinematics_at` it is the scene frame. Arrays are ``(3,)`` for one
    time and ``(n, 3)`` for n times.

    Attributes
    ----------
    pose : Pose
        Body -> reference frame.
    velocity : ndarray
        Velocity of the body origin relative to the reference frame, reference axes [m/s].
    acceleration : ndarray
        Its time derivative, reference axes [m/s^2].
    angular_rate : ndarray
        Angular velocity of the body relative to the reference frame, reference axes [rad/s].
    angular_acceleration : ndarray
        Its time derivative, reference axes [rad/s^2].
    """

    pose: Pose
    velocity: np.ndarray
    acceleration: np.ndarray
    angular_rate: np.ndarray
    angular_acceleration: np.ndarray

    def angular_rate_body(self) -> np.ndarray:
        """Angular velocity in the body's own axes [rad/s] (what a strapdown gyro senses)."""
        return self.pose.inverse_apply_vectors(self.angular_rate)

    @classmethod
    def at_rest(cls, pose: Pose) -> "Kinematics":
        """A fixed pose: every derivative zero (shapes follow the pose)."""
        z = np.zeros_like(np.asarray(pose.translation, dtype=float))
        return cls(pose, z, z.copy(), z.copy(), z.copy())


def _cross(a, b) -> np.ndarray:
    """``numpy.cross`` of 3-vectors (..., 3), broadcast, with its arithmetic (each component one
    difference of two rounded products) without its per-call overhead (axis bookkeeping)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def compose_kinematics(parent: Kinematics, child: Kinematics) -> Kinematics:
    """Kinematics of ``child`` (given relative to the parent body) relative to the parent's frame.

    Parameters
    ----------
    parent : Kinematics
        The parent body relative to its reference frame s (e.g. the scene).
    child : Kinematics
        The child relative to the parent body p (its pose maps child -> parent).

    Returns
    -------
    Kinematics
        The child relative to s.

    Notes
    -----
    With the child's offset in s axes ``r = R_p r_c``, its relative velocity ``u = R_p v_c`` and
    relative angular velocity ``w = R_p omega_c`` (the parent's rotation ``R_p``, angular
    velocity ``omega_p`` and acceleration ``alpha_p`` in s axes):

    - ``v = v_p + omega_p x r + u``
    - ``a = a_p + alpha_p x r + omega_p x (omega_p x r) + 2 omega_p x u + R_p a_c``
    - ``omega = omega_p + w``,  ``alpha = alpha_p + R_p alpha_c + omega_p x w``

    the rigid-body transport theorem applied twice (e.g. Goldstein, Poole & Safko, Classical
    Mechanics, 3rd ed., 2002, section 4.10).
    """
    rp = parent.pose.apply_vectors
    r = rp(child.pose.translation)
    u = rp(child.velocity)
    w = rp(child.angular_rate)
    wp = parent.angular_rate
    velocity = parent.velocity + _cross(wp, r) + u
    acceleration = (parent.acceleration + _cross(parent.angular_acceleration, r)
                    + _cross(wp, _cross(wp, r)) + 2.0 * _cross(wp, u) + rp(child.acceleration))
    angular_rate = wp + w
    angular_acceleration = parent.angular_acceleration + rp(child.angular_acceleration) + _cross(wp, w)
    return Kinematics(parent.pose.compose(child.pose), velocity, acceleration, angular_rate, angular_acceleration)


class Track:
    """Keyframed rigid motion, linear (default) or a C2 spline through the keyframes.

    Parameters
    ----------
    times_s : (k,) float
        Strictly increasing keyframe times [s].
    positions_m : (k, 3) float
        Positions at the keyframes [m].
    rpy_deg : (k, 3) float
        Roll, pitch, yaw at the keyframes [deg] (about the parent's x, y, z axes, in that order).
    interpolation : {"linear", "spline"}
        ``"linear"``: linear in position, slerp in rotation (continuous pose, velocity steps at
        every keyframe). ``"spline"``: twice differentiable between the first and the last
        keyframe (see Notes).

    Notes
    -----
    Outside ``[times_s[0], times_s[-1]]`` the pose is held at the nearest keyframe. Slerp takes
    the shorter arc between consecutive keyframe orientations (scipy ``Slerp``).

    ``"spline"``: positions follow a cubic spline through the keyframes with *clamped* ends
    (zero velocity at the first and last keyframe, scipy ``CubicSpline(bc_type="clamped")``),
    so the body leaves its held start pose and reaches its held end pose without a velocity
    step (its acceleration steps there, as a vehicle's does when it starts). Rotations follow
    scipy's ``RotationSpline``: rotation vectors between consecutive keyframes are cubic in
    time with continuous angular rate and acceleration, and zero angular acceleration at both
    ends (scipy's boundary condition, Zhao & van Wachem's "natural" spline); unlike the
    position, the angular rate at the first and last keyframe is not forced to zero, so it
    steps there from and to the held pose. A track meant to start from rest in rotation
    should begin with keyframes whose orientation is constant. With one keyframe the body is
    fixed. A spline can overshoot between keyframes; :meth:`hull_points` and
    :meth:`max_offset_m` bound it exactly (Bezier control points).
    """

    def __init__(self, times_s, positions_m, rpy_deg, interpolation: str = "linear"):
        self.times_s = np.asarray(times_s, dtype=float)
        self.positions_m = np.asarray(positions_m, dtype=float).reshape(-1, 3)
        self.rotations = rotation_from_rpy_deg(np.asarray(rpy_deg, dtype=float).reshape(-1, 3))
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")
        self.interpolation = interpolation
        if self.times_s.ndim != 1 or len(self.times_s) != len(self.positions_m):
            raise ValueError("times_s and positions_m must have the same length")
        if len(self.times_s) > 1 and np.any(np.diff(self.times_s) <= 0):
            raise ValueError(f"keyframe times must increase strictly, got {self.times_s.tolist()}")
        moving = len(self.times_s) > 1
        self._quats = np.asarray(self.rotations.as_quat(), dtype=float).reshape(-1, 4)
        self._slerp = quaternion.Slerp(self.times_s, self._quats) if moving and interpolation == "linear" else None
        self._position_spline = None
        self._rotation_spline = None
        if moving and interpolation == "spline":
            from scipy.interpolate import CubicSpline   # only spline tracks pay its import (0.5 s)
            self._position_spline = CubicSpline(self.times_s, self.positions_m, axis=0, bc_type="clamped")
            self._rotation_spline = RotationSpline(self.times_s, self.rotations)

    @property
    def twice_differentiable(self) -> bool:
        """Whether velocity and acceleration exist everywhere between the keyframes."""
        return self.interpolation == "spline" or len(self.times_s) < 2

    def at(self, t_s) -> Pose:
        """Pose at time(s) ``t_s`` [s]; a scalar gives a single pose, an array a stack."""
        t = np.asarray(t_s, dtype=float)
        scalar = t.ndim == 0
        t1 = np.atleast_1d(t)
        if len(self.times_s) < 2:
            pose = Pose.from_quat(self._quats[:1], self.positions_m[0].copy())
            return pose if scalar else pose.broadcast(len(t1))
        tc = np.clip(t1, self.times_s[0], self.times_s[-1])
        if self._position_spline is not None:
            pos = self._position_spline(tc)
            quat = np.asarray(self._rotation_spline(tc).as_quat(), dtype=float)
        else:
            pos = np.column_stack([np.interp(tc, self.times_s, self.positions_m[:, i]) for i in range(3)])
            quat = self._slerp(tc)
        if scalar:
            return Pose.from_quat(quat[:1], pos[0])
        return Pose.from_quat(quat, pos)

    def kinematics(self, t_s) -> Kinematics:
        """Pose, velocity, acceleration, angular rate and angular acceleration relative to the
        parent frame at time(s) ``t_s`` [s] (:class:`Kinematics`; parent axes).

        Spline tracks: the derivatives of the splines (Notes of :class:`Track`), zero outside
        the keyframe span. Linear tracks: each segment's constant velocity and slerp rate
        (taken from the segment that starts at a keyframe), zero acceleration; such a track is
        not differentiable at its keyframes, which :attr:`twice_differentiable` reports.
        """
        t = np.asarray(t_s, dtype=float)
        scalar = t.ndim == 0
        t1 = np.atleast_1d(t)
        pose = self.at(t1)
        n = len(t1)
        vel, acc, rate, ang_acc = (np.zeros((n, 3)) for _ in range(4))
        if len(self.times_s) >= 2:
            t0, t_end = self.times_s[0], self.times_s[-1]
            if self._position_spline is not None:
                inside = (t1 >= t0) & (t1 <= t_end)
                tc = t1[inside]
                vel[inside] = self._position_spline(tc, 1)
                acc[inside] = self._position_spline(tc, 2)
                if inside.any():
                    # RotationSpline's rates are in the body's own axes; d/dt (R w_b) = R dw_b/dt.
                    rot = pose.quat[inside]
                    rate[inside] = quaternion.apply(rot, self._rotation_spline(tc, 1))
                    ang_acc[inside] = quaternion.apply(rot, self._rotation_spline(tc, 2))
            else:
                inside = (t1 >= t0) & (t1 < t_end)
                seg = np.clip(np.searchsorted(self.times_s, t1, side="right") - 1, 0, len(self.times_s) - 2)
                h = np.diff(self.times_s)[seg]
                step = self.positions_m[seg + 1] - self.positions_m[seg]
                vel[inside] = (step / h[:, None])[inside]
                body_rate = self._slerp.rotvecs[seg] / h[:, None]
                if inside.any():
                    rate[inside] = quaternion.apply(pose.quat[inside], body_rate[inside])
        if scalar:
            return Kinematics(self.at(t), vel[0], acc[0], rate[0], ang_acc[0])
        return Kinematics(pose, vel, acc, rate, ang_acc)

    def hull_points(self, t_min: float, t_max: float) -> np.ndarray:
        """Points (m, 3) [m] whose convex hull holds the origin's path over ``[t_min, t_max]``.

        Linear: the positions at ``t_min``, ``t_max`` and at the keyframes between (the path is
        the polyline through them). Spline: per piece between those times, the four Bezier
        control points of the cubic, ``p(a), p(a) + h p'(a)/3, p(b) - h p'(b)/3, p(b)`` with
        ``h = b - a``; a cubic Bezier curve lies in the hull of its control points.
        """
        tk = self.times_s
        inner = tk[(tk > t_min) & (tk < t_max)]
        if self._position_spline is None:
            return self.at(np.concatenate([[t_min, t_max], inner])).translation
        knots = np.clip(np.concatenate([[t_min], inner, [t_max]]), tk[0], tk[-1])
        p = self._position_spline(knots)
        v = self._position_spline(knots, 1)
        h = np.diff(knots)[:, None]
        return np.concatenate([p, p[:-1] + h * v[:-1] / 3.0, p[1:] - h * v[1:] / 3.0])

    def max_offset_m(self) -> float:
        """Bound on the distance of the body origin from the parent origin [m], at any time."""
        if self._position_spline is None:
            pts = self.positions_m
        else:
            pts = self.hull_points(self.times_s[0], self.times_s[-1])
        return float(np.max(np.linalg.norm(pts, axis=1))) if len(pts) else 0.0

def interpolate_poses(times_s, positions_m, quaternions_xyzw, t_s) -> Pose:
    """Poses between samples: linear in position, slerp in rotation (as :class:`Track`).

    Parameters
    ----------
    times_s : (k,) array_like
        Increasing sample times [s] (``motion.nc`` ``time``).
    positions_m : (k, 3) array_like
        Sampled positions [m].
    quaternions_xyzw : (k, 4) array_like
        Sampled orientations, quaternions (x, y, z, w).
    t_s : float or (m,) array_like
        Instants to evaluate [s], within ``[times_s[0], times_s[-1]]``.

    Returns
    -------
    Pose
        A single pose for a scalar ``t_s``, a stack of m poses otherwise.

    Raises
    ------
    ValueError
        An instant lies outside the sampled span (no extrapolation), or the samples are not
        increasing.

    Notes
    -----
    Between samples k and k+1, with ``u = (t - t_k) / (t_{k+1} - t_k)``:
    ``p = p_k + u (p_{k+1} - p_k)`` and ``R = R_k exp(u log(R_k^T R_{k+1}))`` (the shorter arc).
    This reproduces a :class:`Track` exactly between samples that no keyframe separates. A body
    carried by a rotating parent moves on an arc between samples; the chord is within
    ``r (omega dt)^2 / 8`` of it (``r`` the lever arm, ``omega`` the parent's turn rate, ``dt``
    the sample interval: 25 um for 2 m, 0.5 rad/s and 20 ms).
    """
    ts = np.asarray(times_s, dtype=float)
    pos = np.asarray(positions_m, dtype=float).reshape(-1, 3)
    quat = np.asarray(quaternions_xyzw, dtype=float).reshape(-1, 4)
    t = np.asarray(t_s, dtype=float)
    t1 = np.atleast_1d(t).ravel()
    if ts.ndim != 1 or len(ts) != len(pos) or len(ts) != len(quat) or len(ts) == 0:
        raise ValueError(f"expected k sample times, (k, 3) positions and (k, 4) quaternions, got shapes "
                         f"{ts.shape}, {pos.shape}, {quat.shape}")
    if np.any(np.diff(ts) <= 0):
        raise ValueError("sample times must increase strictly")
    outside = (t1 < ts[0]) | (t1 > ts[-1]) | ~np.isfinite(t1)
    if np.any(outside):
        bad = t1[outside][0]
        raise ValueError(f"t_s = {float(bad)!r} s lies outside the sampled span [{float(ts[0])!r}, "
                         f"{float(ts[-1])!r}] s")
    if len(ts) == 1:
        pose = Pose(Rotation.from_quat(quat[0]), pos[0].copy())
        return pose if t.ndim == 0 else pose.broadcast(len(t1))
    k = np.clip(np.searchsorted(ts, t1, side="right") - 1, 0, len(ts) - 2)
    u = (t1 - ts[k]) / (ts[k + 1] - ts[k])
    p = pos[k] + u[:, None] * (pos[k + 1] - pos[k])
    r0 = Rotation.from_quat(quat[k])
    step = (r0.inv() * Rotation.from_quat(quat[k + 1])).as_rotvec()
    rot = r0 * Rotation.from_rotvec(u[:, None] * step)
    if t.ndim == 0:
        return Pose(rot[0], p[0])
    return Pose(rot, p)


def oriented_boxes(bounds_body, pose: Pose):
    """Gravity-aligned oriented boxes of bodies from their own bounds (KITTI / nuScenes boxes).

    Parameters
    ----------
    bounds_body : (n, 2, 3) array_like
        Per body, the lowest and highest corner of its mesh's axis-aligned bounds in its own
        body frame [m] (``trimesh.Trimesh.bounds``).
    pose : Pose
        Stack of n poses body -> scene (a single pose for n = 1).

    Returns
    -------
    center : (n, 3) numpy.ndarray
        Box centre, scene frame [m].
    size : (n, 3) numpy.ndarray
        Length (along the box's heading), width, height [m].
    yaw : (n,) numpy.ndarray
        Heading of the box about the scene z axis, from x toward y [rad], in (-pi, pi].

    Notes
    -----
    The heading is that of the body's x axis projected on the scene's xy plane,
    ``yaw = atan2(R[1, 0], R[0, 0])`` (the yaw of a z-y-x Euler decomposition). The box is the
    smallest box with that heading and vertical sides that holds the eight corners of the body
    frame bounds placed in the scene. For a body that only yaws (``roll = pitch = 0``, every
    vehicle on flat ground) this is the body-frame bounding box itself, moved and turned; a
    tilted body gets the box around its tilted bounds. A body whose x axis points straight up
    or down has no heading (``atan2(0, 0) = 0``); its box still holds it.
    """
    b = np.asarray(bounds_body, dtype=float).reshape(-1, 2, 3)
    n = b.shape[0]
    pose = pose.broadcast(n) if pose.single else pose
    rot = pose.rotation.as_matrix().reshape(n, 3, 3)
    yaw = np.arctan2(rot[:, 1, 0], rot[:, 0, 0])
    sel = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)])      # 8 corners
    corners = b[:, sel, [0, 1, 2]]                                                  # (n, 8, 3)
    offsets = np.einsum("nij,nkj->nki", rot, corners)                               # about the origin
    c, s = np.cos(yaw), np.sin(yaw)
    rz_t = np.stack([np.stack([c, s, np.zeros(n)], -1), np.stack([-s, c, np.zeros(n)], -1),
                     np.tile([0.0, 0.0, 1.0], (n, 1))], axis=1)                      # R_z(yaw)^T
    local = np.einsum("nij,nkj->nki", rz_t, offsets)
    lo, hi = local.min(axis=1), local.max(axis=1)
    mid = 0.5 * (lo + hi)
    center = np.asarray(pose.translation, dtype=float).reshape(n, 3) + np.einsum("nji,nj->ni", rz_t, mid)
    return center, hi - lo, yaw
