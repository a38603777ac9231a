"""The rotating Earth under the scene: WGS 84 normal gravity and the Earth's rate in ENU axes.

The scene frame is a local east-north-up frame fixed to the Earth at the scenario origin, so it
turns with the Earth and its bodies feel normal gravity. Models that sense or integrate inertial
motion (the ``imu`` sensor, the ``ins`` filter) take both from here, so they agree on the same
Earth. Plain functions over arrays; the constants are in :mod:`hifi.constants` with their source.
"""

from __future__ import annotations

import numpy as np

from ..constants import (
    WGS84_A_M,
    WGS84_E2,
    WGS84_F,
    WGS84_GAMMA_EQUATOR_M_S2,
    WGS84_M,
    WGS84_OMEGA_RAD_S,
    WGS84_SOMIGLIANA_K,
)

__all__ = ["normal_gravity", "earth_rate_enu"]


def normal_gravity(latitude_rad, height_m=0.0):
    """Magnitude of WGS 84 normal gravity [m/s^2] at geodetic latitude and ellipsoidal height.

    Parameters
    ----------
    latitude_rad : array_like
        Geodetic latitude [rad].
    height_m : array_like
        Height above the ellipsoid [m].

    Returns
    -------
    ndarray
        gamma_h [m/s^2], broadcast shape of the inputs.

    Notes
    -----
    Somigliana's closed formula on the ellipsoid (NIMA TR8350.2, 3rd ed., eq. 4-1)

        gamma = gamma_e (1 + k sin^2 phi) / sqrt(1 - e^2 sin^2 phi)

    and the free-air correction above it to second order in h (eq. 4-3)

        gamma_h = gamma [1 - 2/a (1 + f + m - 2 f sin^2 phi) h + 3 h^2 / a^2].

    Normal gravity is the gradient of the normal potential, gravitation plus the centrifugal
    potential of the Earth's rotation, so the centrifugal acceleration is included. Valid for
    heights of a few tens of kilometres (TR8350.2 recommends the ellipsoidal-harmonic form
    above that).
    """
    phi = np.asarray(latitude_rad, dtype=float)
    h = np.asarray(height_m, dtype=float)
    s2 = np.sin(phi) ** 2
    gamma = WGS84_GAMMA_EQUATOR_M_S2 * (1.0 + WGS84_SOMIGLIANA_K * s2) / np.sqrt(1.0 - WGS84_E2 * s2)
    return gamma * (1.0 - 2.0 / WGS84_A_M * (1.0 + WGS84_F + WGS84_M - 2.0 * WGS84_F * s2) * h
                    + 3.0 * h * h / (WGS84_A_M * WGS84_A_M))


def earth_rate_enu(latitude_rad, *, omega_rad_s: float = WGS84_OMEGA_RAD_S) -> np.ndarray:
    """The Earth's angular velocity in a local east-north-up frame [rad/s], shape (..., 3).

    ``omega_ie = omega (0, cos phi, sin phi)`` (Groves, Principles of GNSS, Inertial, and
    Multisensor Integrated Navigation Systems, 2nd ed., 2013, eq. 2.123, in ENU order), with the
    WGS 84 rate (NIMA TR8350.2 Table 3.1).
    """
    phi = np.asarray(latitude_rad, dtype=float)
    return omega_rad_s * np.stack([np.zeros_like(phi), np.cos(phi), np.sin(phi)], axis=-1)
