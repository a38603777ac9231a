"""GLONASS broadcast ephemerides: the state vector of a navigation record integrated to the query
time (GLONASS ICD, ed. 5.1, A.3.1.2), where GPS, Galileo and BeiDou broadcast Keplerian elements
(:mod:`gnss.orbit_kepler`).

A kernel on plain arrays; :func:`gnss.orbit.sv_state_at` applies it to the GLONASS records of a
navigation Dataset.
"""

from __future__ import annotations

import numpy as np

from .constants import A_E_GLONASS, GLONASS_INTEGRATION_STEP_S, J2_GLONASS, MU_GLONASS, OMEGA_E_DOT_GLONASS
from .orbit_kepler import OrbitState


def glonass_orbit(dt_s, position_m, velocity_m_s, acceleration_m_s2, *, mu=MU_GLONASS, a_e=A_E_GLONASS,
                  j2=J2_GLONASS, omega_e_dot=OMEGA_E_DOT_GLONASS,
                  max_step_s=GLONASS_INTEGRATION_STEP_S) -> OrbitState:
    """GLONASS satellite state ``dt_s`` after the broadcast state vector (ICD, A.3.1.2).

    Parameters
    ----------
    dt_s : array_like
        t - tb [s], broadcast against the state vectors' leading shape.
    position_m, velocity_m_s, acceleration_m_s2 : array_like, shape (..., 3)
        Broadcast state at tb in the rotating PZ-90 frame: position [m], velocity [m/s], and the
        lunisolar acceleration [m/s^2], held constant over the interval.
    mu, a_e, j2, omega_e_dot : float, keyword-only
        PZ-90 constants (GLONASS ICD, ed. 5.1, Table 3.2).
    max_step_s : float, keyword-only
        Largest integration step [s].

    Returns
    -------
    OrbitState
        Position [m] and velocity [m/s] in the rotating PZ-90 frame (PZ-90.11 agrees with
        ITRF2008 to a few centimetres, so it is used as WGS 84 ECEF here);
        ``eccentric_anomaly`` is NaN (GLONASS broadcast clocks include the relativistic term).

    Notes
    -----
    The ICD's equations of motion in the rotating frame, with r = ``|x|``:

    dv/dt = -mu x / r^3 - 3/2 J2 mu a_e^2 / r^5 (x, y, z) * (1 - 5 z^2/r^2, 1 - 5 z^2/r^2,
    3 - 5 z^2/r^2) + w^2 (x, y, 0) + 2 w (v_y, -v_x, 0) + a_lunisolar,

    integrated by the classical 4th-order Runge-Kutta method with n = ceil(max ``|dt|`` / max_step)
    equal steps dt / n for every query (vectorised; each query its own step length). A query
    with NaN dt or state gives NaN.
    """
    dt = np.asarray(dt_s, dtype=float)
    x0 = np.asarray(position_m, dtype=float)
    v0 = np.asarray(velocity_m_s, dtype=float)
    acc = np.asarray(acceleration_m_s2, dtype=float)
    shape = np.broadcast_shapes(dt.shape, x0.shape[:-1], v0.shape[:-1], acc.shape[:-1])
    dt = np.broadcast_to(dt, shape)
    x = np.broadcast_to(x0, shape + (3,)).copy()
    v = np.broadcast_to(v0, shape + (3,)).copy()
    acc = np.broadcast_to(acc, shape + (3,))
    finite = np.isfinite(dt)
    span = float(np.max(np.abs(dt[finite]))) if np.any(finite) else 0.0
    n = max(1, int(np.ceil(span / max_step_s)))
    h = (np.where(finite, dt, np.nan) / n)[..., None]
    w2 = omega_e_dot ** 2
    k_j2 = 1.5 * j2 * mu * a_e ** 2

    def rate(pos, vel):
        r2 = np.sum(pos * pos, axis=-1, keepdims=True)
        r = np.sqrt(r2)
        z2 = pos[..., 2:3] ** 2 / r2
        c = k_j2 / (r2 * r2 * r)
        a = -mu / (r2 * r) * pos - c * pos * np.concatenate([1.0 - 5.0 * z2, 1.0 - 5.0 * z2, 3.0 - 5.0 * z2],
                                                          axis=-1)
        a[..., 0] += w2 * pos[..., 0] + 2.0 * omega_e_dot * vel[..., 1]
        a[..., 1] += w2 * pos[..., 1] - 2.0 * omega_e_dot * vel[..., 0]
        return vel, a + acc

    for _ in range(n):
        k1x, k1v = rate(x, v)
        k2x, k2v = rate(x + 0.5 * h * k1x, v + 0.5 * h * k1v)
        k3x, k3v = rate(x + 0.5 * h * k2x, v + 0.5 * h * k2v)
        k4x, k4v = rate(x + h * k3x, v + h * k3v)
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        v = v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    return OrbitState(x, v, np.full(shape, np.nan))
