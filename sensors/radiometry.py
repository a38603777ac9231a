"""Received-signal models for range sensors."""

from __future__ import annotations

import numpy as np


def lambertian_return(reflectivity, cos_incidence, distance_m, mirror=0.0, *, reference_distance_m=1.0):
    """Relative received power of a pencil beam from a Lambertian surface.

    Parameters
    ----------
    reflectivity : array_like
        Diffuse reflectance of the surface, 0..1.
    cos_incidence : array_like
        Cosine of the angle between the beam and the surface normal, 0..1.
    distance_m : array_like
        Path length from the sensor to the surface [m].
    mirror : array_like
        Specular fraction of the surface, 0..1; only ``1 - mirror`` of the light is scattered
        diffusely back toward the sensor.
    reference_distance_m : float
        Distance at which a normal-incidence white Lambertian target gives 1 [m].

    Returns
    -------
    ndarray
        ``(1 - mirror) * reflectivity * cos_incidence * (reference_distance_m / distance_m)**2``;
        NaN where the distance is NaN.

    Notes
    -----
    The lidar (radar) equation for an extended Lambertian target that fills the beam:
    P_r = P_t * rho * cos(theta) * A_r / (pi R^2) * eta (e.g. Jelalian, *Laser Radar Systems*,
    1992, Eq. 2.6; Höfle & Pfeifer 2007, Eq. 4). All factors independent of the target
    (P_t, A_r, eta, 1/pi) are folded into the reference distance, so the value is 1 for a white
    (rho = 1) target at normal incidence at ``reference_distance_m``. Atmospheric attenuation
    is neglected (< 2 % at 100 m in clear air at 905 nm).
    """
    rho = np.asarray(reflectivity, dtype=float)
    cos_i = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    r = np.asarray(distance_m, dtype=float)
    return (1.0 - np.asarray(mirror, dtype=float)) * rho * cos_i * (reference_distance_m / r) ** 2
