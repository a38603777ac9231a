"""Rigid poses and keyframed motion.

A :class:`Pose` maps points from a body frame into its parent frame,
``p_parent = R p_body + t``, and may hold one pose or a stack of ``n`` poses (one per time).
A :class:`Track` interpolates keyframes: linear in position and spherical-linear (slerp) in
rotation, held constant before the first and after the last keyframe.

Rotations follow CONTRACTS: ``rpy_deg`` are rotations about the parent's x, y, z axes applied
in that order, i.e. ``scipy.spatial.transform.Rotation.from_euler("xyz", rpy, degrees=True)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation, Slerp


def rotation_from_rpy_deg(rpy_deg) -> Rotation:
    """Rotation from roll, pitch, yaw [deg] about the parent's x, y, z axes (extrinsic xyz)."""
    return Rotation.from_euler("xyz", np.asarray(rpy_deg, dtype=float), degrees=True)


@dataclass(frozen=True)
class Pose:
    """Rigid transform body -> parent: ``p_parent = rotation.apply(p_body) + translation``.

    Attributes
    ----------
    rotation : scipy.spatial.transform.Rotation
        Single or stacked rotation (n).
    translation : ndarray, shape (3,) or (n, 3)
        Origin of the body frame in the parent frame [m].
    """

    rotation: Rotation
    translation: np.ndarray

    @classmethod
    def identity(cls) -> "Pose":
        return cls(Rotation.identity(), np.zeros(3))

    @classmethod
    def from_position_rpy(cls, position_m, rpy_deg) -> "Pose":
        return cls(rotation_from_rpy_deg(rpy_deg), np.asarray(position_m, dtype=float))

    def __len__(self) -> int:
        return 1 if self.translation.ndim == 1 else self.translation.shape[0]

    @property
    def single(self) -> bool:
        return self.translation.ndim == 1

    def compose(self, child: "Pose") -> "Pose":
        """Pose of ``child`` (given in this pose's body frame) in this pose's parent frame."""
        return Pose(self.rotation * child.rotation,
                    self.translation + self.rotation.apply(child.translation))

    def apply(self, points_body: np.ndarray) -> np.ndarray:
        """Transform points (..., 3) from the body frame into the parent frame [m]."""
        return self.rotation.apply(points_body) + self.translation

    def apply_vectors(self, vectors_body: np.ndarray) -> np.ndarray:
        """Rotate direction vectors (..., 3) from the body frame into the parent frame."""
        return self.rotation.apply(vectors_body)

    def inverse_apply(self, points_parent: np.ndarray) -> np.ndarray:
        """Transform points (..., 3) from the parent frame into the body frame [m]."""
        return self.rotation.apply(points_parent - self.translation, inverse=True)

    def inverse_apply_vectors(self, vectors_parent: np.ndarray) -> np.ndarray:
        """Rotate direction vectors from the parent frame into the body frame."""
        return self.rotation.apply(vectors_parent, inverse=True)

    def matrix(self) -> np.ndarray:
        """Homogeneous 4 x 4 matrix (or (n, 4, 4) for a stack)."""
        rot = self.rotation.as_matrix()
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
        quat = np.broadcast_to(self.rotation.as_quat(), (n, 4))
        return Pose(Rotation.from_quat(quat), np.broadcast_to(self.translation, (n, 3)).copy())


class Track:
    """Keyframed rigid motion: linear in position, slerp in rotation.

    Parameters
    ----------
    times_s : (k,) float
        Strictly increasing keyframe times [s].
    positions_m : (k, 3) float
        Positions at the keyframes [m].
    rpy_deg : (k, 3) float
        Roll, pitch, yaw at the keyframes [deg] (CONTRACTS convention).

    Notes
    -----
    Outside ``[times_s[0], times_s[-1]]`` the pose is held at the nearest keyframe. Slerp takes
    the shorter arc between consecutive keyframe orientations (scipy ``Slerp``).
    """

    def __init__(self, times_s, positions_m, rpy_deg):
        self.times_s = np.asarray(times_s, dtype=float)
        self.positions_m = np.asarray(positions_m, dtype=float).reshape(-1, 3)
        self.rotations = rotation_from_rpy_deg(np.asarray(rpy_deg, dtype=float).reshape(-1, 3))
        if self.times_s.ndim != 1 or len(self.times_s) != len(self.positions_m):
            raise ValueError("times_s and positions_m must have the same length")
        if len(self.times_s) > 1 and np.any(np.diff(self.times_s) <= 0):
            raise ValueError(f"keyframe times must increase strictly, got {self.times_s.tolist()}")
        self._slerp = Slerp(self.times_s, self.rotations) if len(self.times_s) > 1 else None

    def at(self, t_s) -> Pose:
        """Pose at time(s) ``t_s`` [s]; a scalar gives a single pose, an array a stack."""
        t = np.asarray(t_s, dtype=float)
        scalar = t.ndim == 0
        t1 = np.atleast_1d(t)
        if self._slerp is None:
            pose = Pose(self.rotations[0], self.positions_m[0].copy())
            return pose if scalar else pose.broadcast(len(t1))
        tc = np.clip(t1, self.times_s[0], self.times_s[-1])
        pos = np.column_stack([np.interp(tc, self.times_s, self.positions_m[:, i]) for i in range(3)])
        rot = self._slerp(tc)
        if scalar:
            return Pose(rot[0], pos[0])
        return Pose(rot, pos)
