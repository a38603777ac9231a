"""Keplerian broadcast ephemerides to satellite position, velocity and clock: GPS (IS-GPS-200,
Table 20-IV), Galileo (OS SIS ICD 5.1.1, the same equations with its constants) and BeiDou
(BDS-SIS-ICD-B1I 3.0, 5.2.4.12, with the GEO satellites' own rotation).

Kernels on plain arrays; :func:`gnss.orbit.sv_state_at` applies them to the records of a
navigation Dataset. GLONASS broadcasts a state vector instead of elements:
:mod:`gnss.orbit_glonass`.

References
----------
.. [1] IS-GPS-200N, "Navstar GPS Space Segment/Navigation User Segment Interfaces", 2022,
   20.3.3.3.3 (SV clock, relativity, TGD) and 20.3.3.4.3 (Table 20-IV, position and velocity).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .constants import (BEIDOU_GEO_INCLINATION_RAD, BEIDOU_GEO_PRNS, F_RELATIVITY, F_RELATIVITY_BEIDOU,
                        F_RELATIVITY_GALILEO, KEPLER_MAX_ITERATIONS, KEPLER_TOLERANCE_RAD, MU_BEIDOU, MU_GALILEO,
                        MU_GPS, OMEGA_E_DOT, OMEGA_E_DOT_BEIDOU, OMEGA_E_DOT_GALILEO)
from .rinex import SYSTEM_KEY_OFFSET


def solve_kepler(mean_anomaly, eccentricity, *, tolerance_rad=KEPLER_TOLERANCE_RAD,
                 max_iterations=KEPLER_MAX_ITERATIONS) -> np.ndarray:
    """Eccentric anomaly E from Kepler's equation M = E - e sin E by Newton's method.

    Parameters
    ----------
    mean_anomaly : array_like
        Mean anomaly M [rad].
    eccentricity : array_like
        Eccentricity e, 0 <= e < 1 [1]; broadcast with ``mean_anomaly``.
    tolerance_rad : float, keyword-only
        Stop when every Newton step is below this [rad] (default 1e-13).
    max_iterations : int, keyword-only
        Fixed bound on Newton steps.

    Returns
    -------
    numpy.ndarray
        Eccentric anomaly E [rad], same shape as the broadcast inputs.

    Notes
    -----
    Newton step ``E <- E - (E - e sin E - M) / (1 - e cos E)`` from ``E0 = M`` (IS-GPS-200 Table
    20-IV leaves the method open).  For GPS eccentricities (< 0.03) it converges quadratically in
    4-5 steps.
    """
    m = np.asarray(mean_anomaly, dtype=float)
    e = np.asarray(eccentricity, dtype=float)
    m, e = np.broadcast_arrays(m, e)
    ecc = m.copy()
    for _ in range(max_iterations):
        step = (ecc - e * np.sin(ecc) - m) / (1.0 - e * np.cos(ecc))
        ecc = ecc - step
        if not np.any(np.abs(step) > tolerance_rad):
            break
    return ecc


class OrbitState(NamedTuple):
    """Satellite state from broadcast elements.

    Attributes
    ----------
    position_ecef : numpy.ndarray, shape (..., 3)
        Antenna phase centre position in WGS 84 ECEF at the evaluation time [m].
    velocity_ecef : numpy.ndarray, shape (..., 3)
        Velocity in the rotating ECEF frame [m/s].
    eccentric_anomaly : numpy.ndarray
        E [rad] (for the relativistic clock term).
    """

    position_ecef: np.ndarray
    velocity_ecef: np.ndarray
    eccentric_anomaly: np.ndarray


def broadcast_orbit(tk, *, sqrt_a, e, delta_n, m0, omega, cuc, cus, crc, crs, cic, cis, i0, idot,
                    omega0, omega_dot, toe_sow, mu=MU_GPS, omega_e_dot=OMEGA_E_DOT) -> OrbitState:
    """ECEF position and velocity of a GPS satellite from its broadcast ephemeris.

    Parameters
    ----------
    tk : array_like
        Time from ephemeris reference epoch, t - toe [s] (formed from week and seconds of week,
        so no half-week correction is needed).
    sqrt_a, e, delta_n, m0, omega, cuc, cus, crc, crs, cic, cis, i0, idot, omega0, omega_dot, toe_sow : array_like
        Broadcast elements in RINEX units (radians, metres, seconds), broadcast with ``tk``.
    mu, omega_e_dot : float, keyword-only
        Gravitational constant [m^3/s^2] and Earth rotation rate [rad/s], IS-GPS-200 values.

    Returns
    -------
    OrbitState
        Position and velocity (..., 3) [m, m/s] and eccentric anomaly [rad].

    Notes
    -----
    IS-GPS-200 Table 20-IV, with A = sqrt_a^2, n = sqrt(mu/A^3) + delta_n, M = M0 + n tk,
    Kepler's equation solved by :func:`solve_kepler`, true anomaly
    nu = atan2(sqrt(1-e^2) sin E, cos E - e), argument of latitude Phi = nu + omega with the
    second-harmonic corrections du, dr, di, and
    Omega = Omega0 + (Omega_dot - OmegaE_dot) tk - OmegaE_dot toe.  The velocity is the analytic
    time derivative of the same equations (IS-GPS-200 Table 20-IV, velocity part), which
    includes the Earth-rotation term through Omega_dot - OmegaE_dot.
    """
    tk = np.asarray(tk, dtype=float)
    a = np.asarray(sqrt_a, dtype=float) ** 2
    n = np.sqrt(mu / a ** 3) + delta_n
    mk = m0 + n * tk
    ek = solve_kepler(mk, e)
    sin_e, cos_e = np.sin(ek), np.cos(ek)
    one_m_ecos = 1.0 - e * cos_e
    sq = np.sqrt(1.0 - e * e)
    nu = np.arctan2(sq * sin_e, cos_e - e)
    phi = nu + omega
    s2, c2 = np.sin(2.0 * phi), np.cos(2.0 * phi)
    du = cus * s2 + cuc * c2
    dr = crs * s2 + crc * c2
    di = cis * s2 + cic * c2
    u = phi + du
    r = a * one_m_ecos + dr
    inc = i0 + di + idot * tk
    xp, yp = r * np.cos(u), r * np.sin(u)
    omega_k_dot = omega_dot - omega_e_dot
    om = omega0 + omega_k_dot * tk - omega_e_dot * toe_sow
    so, co, si, ci = np.sin(om), np.cos(om), np.sin(inc), np.cos(inc)
    x = xp * co - yp * ci * so
    y = xp * so + yp * ci * co
    z = yp * si
    # time derivatives
    e_dot = n / one_m_ecos
    nu_dot = e_dot * sq / one_m_ecos
    di_dt = idot + 2.0 * nu_dot * (cis * c2 - cic * s2)
    u_dot = nu_dot * (1.0 + 2.0 * (cus * c2 - cuc * s2))
    r_dot = e * a * e_dot * sin_e + 2.0 * nu_dot * (crs * c2 - crc * s2)
    xp_dot = r_dot * np.cos(u) - r * u_dot * np.sin(u)
    yp_dot = r_dot * np.sin(u) + r * u_dot * np.cos(u)
    vx = -xp * omega_k_dot * so + xp_dot * co - yp_dot * so * ci - yp * (omega_k_dot * co * ci - di_dt * so * si)
    vy = xp * omega_k_dot * co + xp_dot * so + yp_dot * co * ci - yp * (omega_k_dot * so * ci + di_dt * co * si)
    vz = yp_dot * si + yp * di_dt * ci
    return OrbitState(np.stack([x, y, z], axis=-1), np.stack([vx, vy, vz], axis=-1), ek)


def sv_clock_offset(dt_toc, *, af0, af1, af2, e, sqrt_a, eccentric_anomaly, f_relativity=F_RELATIVITY):
    """SV clock offset Delta t_sv including the relativistic term (IS-GPS-200 20.3.3.3.3.1).

    Parameters
    ----------
    dt_toc : array_like
        t - toc [s].
    af0, af1, af2 : array_like
        Clock polynomial [s, s/s, s/s^2].
    e, sqrt_a : array_like
        Eccentricity [1] and square root of the semi-major axis [m^0.5].
    eccentric_anomaly : array_like
        E at the same time [rad].

    Returns
    -------
    numpy.ndarray
        Delta t_sv = af0 + af1 dt + af2 dt^2 + F e sqrt(A) sin E [s].  This refers to the
        ionosphere-free L1/L2 P(Y) combination; an L1 C/A user subtracts TGD (20.3.3.3.3.2).
    """
    dt = np.asarray(dt_toc, dtype=float)
    return af0 + dt * (af1 + dt * af2) + f_relativity * e * sqrt_a * np.sin(eccentric_anomaly)


def system_constants(sat: np.ndarray):
    """(mu, Earth rotation rate, relativistic F, BeiDou-GEO mask) per satellite key."""
    is_e = (sat >= SYSTEM_KEY_OFFSET["E"]) & (sat < SYSTEM_KEY_OFFSET["C"])
    is_c = sat >= SYSTEM_KEY_OFFSET["C"]
    mu = np.where(is_e, MU_GALILEO, np.where(is_c, MU_BEIDOU, MU_GPS))
    we = np.where(is_e, OMEGA_E_DOT_GALILEO, np.where(is_c, OMEGA_E_DOT_BEIDOU, OMEGA_E_DOT))
    f = np.where(is_e, F_RELATIVITY_GALILEO, np.where(is_c, F_RELATIVITY_BEIDOU, F_RELATIVITY))
    geo = is_c & np.isin(sat - SYSTEM_KEY_OFFSET["C"], sorted(BEIDOU_GEO_PRNS))
    return mu, we, f, geo


def beidou_geo(tk, el, mu, we) -> OrbitState:
    """BeiDou GEO orbit (BDS-SIS-ICD-B1I 3.0, 5.2.4.12, Table 5-11).

    The ascending node is computed in an inertial-like frame, Omega_k = Omega0 + Omega_dot tk -
    OmegaE_dot toe (no Earth rotation over tk), and the position there is turned into CGCS2000
    by ``R_Z(OmegaE_dot tk) R_X(-5 deg)``, both passive rotations
    (R_X(p) = [[1, 0, 0], [0, cos p, sin p], [0, -sin p, cos p]], R_Z(p) = [[cos p, sin p, 0],
    [-sin p, cos p, 0], [0, 0, 1]]). The velocity is that rotation of the inertial-like velocity
    plus the derivative of R_Z(OmegaE_dot tk) applied to the position.
    """
    kw = {k: el[k] for k in ORBIT_KEYS}
    kw["omega0"] = el["omega0"] - we * el["toe_sow"]
    kw["toe_sow"] = np.zeros_like(el["toe_sow"])
    g = broadcast_orbit(tk, **kw, mu=mu, omega_e_dot=0.0)
    cx, sx = np.cos(BEIDOU_GEO_INCLINATION_RAD), np.sin(BEIDOU_GEO_INCLINATION_RAD)
    x, y, z = g.position_ecef[..., 0], g.position_ecef[..., 1], g.position_ecef[..., 2]
    vx, vy, vz = g.velocity_ecef[..., 0], g.velocity_ecef[..., 1], g.velocity_ecef[..., 2]
    # R_X(-5 deg)
    y1, z1 = cx * y + sx * z, -sx * y + cx * z
    vy1, vz1 = cx * vy + sx * vz, -sx * vy + cx * vz
    p = we * tk
    cz, sz = np.cos(p), np.sin(p)
    px, py = cz * x + sz * y1, -sz * x + cz * y1
    vpx = cz * vx + sz * vy1 + we * (-sz * x + cz * y1)
    vpy = -sz * vx + cz * vy1 + we * (-cz * x - sz * y1)
    return OrbitState(np.stack([px, py, z1], axis=-1), np.stack([vpx, vpy, vz1], axis=-1), g.eccentric_anomaly)


ORBIT_KEYS = ("sqrt_a", "e", "delta_n", "m0", "omega", "cuc", "cus", "crc", "crs", "cic", "cis", "i0",
               "idot", "omega0", "omega_dot", "toe_sow")
