"""The sub-rays of a divergent beam: how many a pulse needs, their pattern and weights over the
Gaussian beam profile, and their directions (circular and elliptical footprints).

VANE's scanning-LADAR model (C. Goodin, R. Kala, A. Carrillo, L. Y. Liu, "Sensor modeling for
the Virtual Autonomous Navigation Environment", IEEE Sensors 2009, sec. 4) samples the diverging
beam with N sub-rays; the waveform they return is :mod:`sensors.beam`'s.
"""

from __future__ import annotations

import numpy as np


from ..noise import orthonormal_basis

#: Largest number of sub-rays per pulse (VANE Eq. 1 is clamped to 1..10,000).
MAX_SUBRAYS = 10_000

#: Golden angle [rad] of the sunflower (Vogel) pattern.
_GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))


def subray_count(aperture_radius_m, max_range_m, divergence_rad, target_scale_m):
    """Number of sub-rays per pulse, VANE Eq. (1): ``N = 2 (r + R_max tan(Theta/2)) / x``.

    Parameters
    ----------
    aperture_radius_m : float
        Radius of the beam at the exit aperture, r [m].
    max_range_m : float
        Maximum range R_max [m].
    divergence_rad : float
        Full divergence angle Theta [rad].
    target_scale_m : float
        Scale of spatial variation to resolve, x [m].

    Returns
    -------
    int
        ``ceil(N)`` clamped to 1..10,000: the spot diameter at maximum range over the scale.
    """
    n = 2.0 * (aperture_radius_m + max_range_m * np.tan(divergence_rad / 2.0)) / target_scale_m
    return int(np.clip(np.ceil(n), 1, MAX_SUBRAYS))


def subray_pattern(n: int):
    """Deterministic sub-ray positions over the unit disc and their Gaussian-beam weights.

    Parameters
    ----------
    n : int
        Number of sub-rays, >= 1.

    Returns
    -------
    uv : ndarray, shape (n, 2)
        Positions in units of the beam radius (``|uv| <= 1``); sub-ray 0 is the beam axis.
    weights : ndarray, shape (n,)
        Share of the pulse energy carried by each sub-ray; they sum to 1.

    Notes
    -----
    A sunflower (Vogel) spiral, ``rho_k = sqrt((k + 0.5) / n)``, ``phi_k = k * golden angle``,
    for k >= 1 with sub-ray 0 on the axis, spreads the sub-rays with nearly uniform areal
    density, so each represents about ``pi / n`` of the disc. The beam is a TEM00 Gaussian whose
    1/e^2 intensity radius is the beam radius (the divergence is quoted to the 1/e^2 points):
    ``I(rho) = exp(-2 rho^2)``; a sub-ray's weight is its intensity times its area share,
    normalised so the weights sum to 1. The pattern depends on n only, never on the
    partitioning of a run.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n_subrays = {n!r}: expected an integer >= 1")
    k = np.arange(n, dtype=float)
    rho = np.where(k == 0, 0.0, np.sqrt((k + 0.5) / n))
    phi = k * _GOLDEN_ANGLE
    uv = np.column_stack([rho * np.cos(phi), rho * np.sin(phi)])
    w = np.exp(-2.0 * rho**2)
    return uv, w / w.sum()


def subray_directions(axis, uv, divergence_rad, aperture_radius_m):
    """Origins (offsets) and unit directions of the sub-rays of beams along ``axis``.

    Parameters
    ----------
    axis : (p, 3) float
        Unit beam axes (sensor frame).
    uv : (n, 2) float
        Sub-ray positions in beam radii (:func:`subray_pattern`).
    divergence_rad : float
        Full divergence angle [rad].
    aperture_radius_m : float
        Beam radius at the aperture [m].

    Returns
    -------
    offsets, directions : ndarray, shape (p, n, 3)
        Sub-ray origin offsets from the sensor origin [m] and unit directions: the sub-ray at
        ``uv`` leaves the aperture at ``r uv`` and reaches ``(r + R tan(Theta/2)) uv`` off the
        axis at range R, so the sub-rays span the spot at every range.
    """
    a = np.asarray(axis, dtype=float)
    e1, e2 = orthonormal_basis(a)
    across = uv[None, :, 0:1] * e1[:, None, :] + uv[None, :, 1:2] * e2[:, None, :]
    d = a[:, None, :] + np.tan(divergence_rad / 2.0) * across
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    return aperture_radius_m * across, d


def footprint_directions(axis, uv, divergence_h_rad, divergence_v_rad, aperture_radius_m):
    """Sub-rays of an elliptical beam whose axes are horizontal and vertical.

    Parameters
    ----------
    axis : (p, 3) float
        Unit beam axes (sensor frame, z up).
    uv : (n, 2) float
        Sub-ray positions in beam radii (:func:`subray_pattern`): u across the beam
        horizontally (to its left), v up, perpendicular to the beam.
    divergence_h_rad, divergence_v_rad : float
        Full divergence in the horizontal and the vertical plane of the beam [rad] (data
        sheets quote the two separately, e.g. 3.0 and 1.5 mrad for Velodyne's VLP-16).
    aperture_radius_m : float
        Beam radius at the aperture [m] (the same in both directions).

    Returns
    -------
    offsets, directions : ndarray, shape (p, n, 3)
        As :func:`subray_directions`, with ``e_h`` the horizontal normal to the beam and
        ``e_v = axis x e_h`` (up, perpendicular to the beam); a vertical beam takes the basis of
        :func:`sensors.noise.orthonormal_basis`. Equal divergences give a circular beam.

    Notes
    -----
    The basis of each beam here (``e_h = (-a_y, a_x, 0) / |.|``, ``e_v = np.cross(a, e_h)``),
    the sub-rays in the compiled kernel :func:`sensors._lidar_kernel.footprint`:
    ``across = u e_h + v e_v``, ``d = (a + tan(Theta_h / 2) u e_h) + tan(Theta_v / 2) v e_v``
    divided by its norm.
    """
    a = np.ascontiguousarray(axis, dtype=float)
    uv = np.asarray(uv, dtype=float)
    p, n = a.shape[0], uv.shape[0]
    e_h = np.stack([-a[:, 1], a[:, 0], np.zeros(p)], axis=-1)
    norm = np.linalg.norm(e_h, axis=-1, keepdims=True)
    vertical = norm[:, 0] < 1e-9
    e_h = e_h / np.where(vertical[:, None], 1.0, norm)
    if np.any(vertical):
        e_h[vertical] = orthonormal_basis(a[vertical])[0]
    e_v = np.cross(a, e_h)
    off, d = np.empty((p, n, 3)), np.empty((p, n, 3))
    if p == 0:
        return off, d
    from .._lidar_kernel import footprint            # numba: loaded by the first lidar step

    u, v = np.ascontiguousarray(uv[:, 0]), np.ascontiguousarray(uv[:, 1])
    # the products (tan u) and (tan v) first, as the expression in the Notes forms them
    footprint(a, np.ascontiguousarray(e_h), np.ascontiguousarray(e_v), u, v, np.tan(divergence_h_rad / 2.0) * u,
              np.tan(divergence_v_rad / 2.0) * v, float(aperture_radius_m), off, d)
    return off, d
