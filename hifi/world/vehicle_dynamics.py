"""A vehicle's dynamics, without the run: steady-state cornering, the actuator limits through
which a command reaches the body, and the kinematic and dynamic bicycle models.

:mod:`hifi.world.vehicle` integrates them into a :class:`~hifi.world.vehicle.VehicleTrack`
during a run (and re-exports every name here). Sources: R. Rajamani, *Vehicle Dynamics and
Control*, 2nd ed., Springer 2012, sec. 2.2 (kinematic bicycle), sec. 2.3 (dynamic bicycle,
eq. 2.31), sec. 3.2-3.3 (steady-state cornering); T. D. Gillespie, *Fundamentals of Vehicle
Dynamics*, SAE 1992, ch. 6 (understeer gradient, eq. 6-15).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Standard gravity [m/s^2] (CGPM 1901), for the understeer gradient in rad per g.
_G = 9.80665
#: Speed and acceleration differences below these are taken as reached [m/s, m/s^2] (a profile
#: recomputed from rounding residue would be a chain of sub-nanosecond phases).
SPEED_TOL_M_S = 1e-9
ACCEL_TOL_M_S2 = 1e-9


def understeer_gradient(mass_kg, wheelbase_m, cog_to_front_axle_m, cornering_stiffness_front_n_rad,
                        cornering_stiffness_rear_n_rad, *, g=_G):
    """Understeer gradient ``K_us = W_f / C_f - W_r / C_r`` [rad] (per g of lateral acceleration).

    Parameters
    ----------
    mass_kg : float
        Mass [kg].
    wheelbase_m, cog_to_front_axle_m : float
        Wheelbase L and the centre of gravity's distance l_f behind the front axle [m].
    cornering_stiffness_front_n_rad, cornering_stiffness_rear_n_rad : float
        Cornering stiffness of each axle (both its tyres) [N/rad].
    g : float
        Gravity [m/s^2].

    Returns
    -------
    float
        ``K_us`` [rad]; positive: understeer.

    Notes
    -----
    The axle loads are ``W_f = m g l_r / L`` and ``W_r = m g l_f / L`` (Gillespie 1992, eq. 6-15;
    Rajamani 2012, sec. 3.3, writes the same gradient per m/s^2, ``K_v = K_us / g``, with the
    stiffness per tyre, ``C_axle = 2 C_alpha``).
    """
    lf = cog_to_front_axle_m
    lr = wheelbase_m - lf
    return mass_kg * g * (lr / (wheelbase_m * cornering_stiffness_front_n_rad)
                          - lf / (wheelbase_m * cornering_stiffness_rear_n_rad))


def steady_state_yaw_rate_gain(speed_m_s, wheelbase_m, understeer_gradient_rad, *, g=_G):
    """Yaw rate per front-wheel steering angle in a steady turn, ``r / delta = v / (L + K_us v^2 / g)``.

    Parameters
    ----------
    speed_m_s : float or array
        Forward speed v [m/s].
    wheelbase_m : float
        Wheelbase L [m].
    understeer_gradient_rad : float
        ``K_us`` [rad] (:func:`understeer_gradient`); 0: the kinematic (neutral) gain v / L.
    g : float
        Gravity [m/s^2].

    Returns
    -------
    float or array
        ``r / delta`` [1/s].

    Notes
    -----
    The steady state of the linear bicycle (Rajamani 2012, sec. 3.3: ``delta = L / R + K_v a_y``
    with ``a_y = v^2 / R`` and ``r = v / R``; Gillespie 1992, eq. 6-21). Small angles.
    """
    v = np.asarray(speed_m_s, dtype=float)
    return v / (wheelbase_m + understeer_gradient_rad * v * v / g)


# ------------------------------------------------------------------------------------------------
# Actuator limits: how a command reaches the body
# ------------------------------------------------------------------------------------------------
class Profile(NamedTuple):
    """A piecewise-polynomial input over a step: phase ``i`` starts at ``start_s[i]`` [s] with value
    ``value[i]``, rate ``rate[i]`` and constant second derivative ``curvature[i]``; the last phase
    lasts for ever."""

    start_s: np.ndarray
    value: np.ndarray
    rate: np.ndarray
    curvature: np.ndarray

    def at(self, tau, phase=None):
        """Value and rate at times ``tau`` [s] since the step's start; ``phase``: the phase index
        to use (default: the one holding each time), so a phase's polynomial can be evaluated at
        its end (the left limit at a breakpoint)."""
        tau = np.asarray(tau, dtype=float)
        i = np.clip(np.searchsorted(self.start_s, tau, side="right") - 1, 0, len(self.start_s) - 1) \
            if phase is None else phase
        d = tau - self.start_s[i]
        return (self.value[i] + self.rate[i] * d + 0.5 * self.curvature[i] * d * d,
                self.rate[i] + self.curvature[i] * d)


def _profile(v0, phases) -> Profile:
    """A :class:`Profile` starting at ``v0`` from ``phases`` [(duration, rate, curvature)], then held."""
    start, value, rate, curv = [0.0], [float(v0)], [], []
    for duration, r, c in phases:
        rate.append(r)
        curv.append(c)
        value.append(value[-1] + r * duration + 0.5 * c * duration * duration)
        start.append(start[-1] + duration)
    rate.append(0.0)
    curv.append(0.0)
    return Profile(np.array(start), np.array(value), np.array(rate), np.array(curv))


def speed_profile(speed_m_s, accel_m_s2, speed_command_m_s, *, max_accel_m_s2, max_jerk_m_s3) -> Profile:
    """The speed from ``(v0, a0)`` to the command, as fast as the acceleration and jerk limits allow.

    Parameters
    ----------
    speed_m_s, accel_m_s2 : float
        Speed [m/s] and acceleration [m/s^2] now.
    speed_command_m_s : float
        Commanded speed [m/s], held.
    max_accel_m_s2 : float
        Acceleration limit A (both ways) [m/s^2].
    max_jerk_m_s3 : float
        Jerk limit J [m/s^3]; 0: none (the acceleration jumps to +-A and back to 0).

    Returns
    -------
    Profile
        Speed (value) and acceleration (rate) against the time since now; the acceleration is
        continuous when J > 0 and reaches 0 exactly as the speed reaches the command.

    Notes
    -----
    The time-optimal jerk-limited velocity change (a trapezoidal acceleration profile, e.g.
    Biagiotti & Melchiorri, Trajectory Planning for Automatic Machines and Robots, Springer 2008,
    sec. 3.4): if ramping the acceleration to 0 now would stop at ``v0 + a0 |a0| / (2 J)`` short
    of the command, the acceleration ramps at J up to ``a_p = min(A, sqrt(J (v* - v0) + a0^2 / 2))``,
    holds, and ramps down at J to 0 on arrival; past the command, mirrored. Without J the
    acceleration is A until the command is reached (the speed is still continuous).
    """
    v0, v1, big_a, j = float(speed_m_s), float(speed_command_m_s), float(max_accel_m_s2), float(max_jerk_m_s3)
    if j <= 0.0:
        dv = v1 - v0
        if abs(dv) <= SPEED_TOL_M_S:
            return _profile(v0, [])
        return _profile(v0, [(abs(dv) / big_a, np.copysign(big_a, dv), 0.0)])
    a0 = float(np.clip(accel_m_s2, -big_a, big_a))
    stop = v0 + a0 * abs(a0) / (2.0 * j)          # the speed where ramping a to 0 now ends
    s = v1 - stop
    if abs(s) <= SPEED_TOL_M_S:
        if abs(a0) <= ACCEL_TOL_M_S2:
            return _profile(v0, [])
        return _profile(v0, [(abs(a0) / j, a0, -np.sign(a0) * j)])
    d = 1.0 if s > 0 else -1.0                       # mirror so that the speed rises
    vt, vv, aa = d * v1, d * v0, d * a0
    peak = np.sqrt(max(j * (vt - vv) + 0.5 * aa * aa, 0.0))
    hold = 0.0
    if peak > big_a:
        peak = big_a
        hold = (vt - vv - (2.0 * big_a * big_a - aa * aa) / (2.0 * j)) / big_a
    phases = [((peak - aa) / j, d * aa, d * j), (hold, d * peak, 0.0), (peak / j, d * peak, -d * j)]
    return _profile(v0, [p for p in phases if p[0] > 0.0])


def steer_profile(steer_rad, steer_command_rad, *, max_steer_rate_rad_s) -> Profile:
    """The steering angle from ``delta0`` to the command at the rate limit, then held.

    Parameters
    ----------
    steer_rad, steer_command_rad : float
        Front-wheel steering angle now and commanded [rad].
    max_steer_rate_rad_s : float
        Steering-rate limit [rad/s]; 0: none (the angle jumps to the command).

    Returns
    -------
    Profile
        Angle (value) and rate against the time since now: continuous when the limit is set.
    """
    d0, d1, rate = float(steer_rad), float(steer_command_rad), float(max_steer_rate_rad_s)
    if rate <= 0.0:
        return _profile(d1, [])
    if d1 == d0:
        return _profile(d0, [])
    return _profile(d0, [(abs(d1 - d0) / rate, np.copysign(rate, d1 - d0), 0.0)])


# ------------------------------------------------------------------------------------------------
# The bicycle models: state (x, y, yaw, w, r) of the rear axle, w its lateral velocity (body y)
# ------------------------------------------------------------------------------------------------
def bicycle_step(x, y, yaw, v, steer_rad, dt, wheelbase_m):
    """Exact pose after ``dt`` [s] at constant speed ``v`` [m/s] and steering angle [rad].

    Kinematic bicycle about the rear axle (Rajamani 2012, Eq. 2.27 with the slip angle 0): yaw
    rate ``v tan(delta) / L``; the rear axle moves on a circle of radius ``L / tan(delta)``
    (a straight line for delta = 0). Returns ``(x, y, yaw)`` [m, m, rad].
    """
    k = np.tan(steer_rad) / wheelbase_m                    # curvature [1/m]
    s = v * dt                                             # arc length [m]
    yaw1 = yaw + k * s
    if abs(k * s) < 1e-12:
        return x + s * np.cos(yaw), y + s * np.sin(yaw), yaw1
    return x + (np.sin(yaw1) - np.sin(yaw)) / k, y - (np.cos(yaw1) - np.cos(yaw)) / k, yaw1


def dynamic_bicycle_rates(u, w, r, steer, *, mass_kg, yaw_inertia_kg_m2, cog_to_front_axle_m,
                          cog_to_rear_axle_m, cornering_stiffness_front_n_rad, cornering_stiffness_rear_n_rad):
    """Rates of the rear axle's lateral velocity and of the yaw rate, dynamic bicycle, linear tyres.

    Parameters
    ----------
    u : float
        Forward speed [m/s], > 0.
    w : float
        Lateral velocity of the rear axle's centre (body y) [m/s].
    r : float
        Yaw rate [rad/s].
    steer : float
        Front-wheel steering angle [rad].
    mass_kg, yaw_inertia_kg_m2 : float
        Mass m [kg] and yaw moment of inertia I_z about the centre of gravity [kg m^2].
    cog_to_front_axle_m, cog_to_rear_axle_m : float
        Distances l_f, l_r of the centre of gravity from the axles [m].
    cornering_stiffness_front_n_rad, cornering_stiffness_rear_n_rad : float
        Cornering stiffnesses C_f, C_r of the axles (both tyres each) [N/rad].

    Returns
    -------
    tuple of float
        ``(dw/dt [m/s^2], dr/dt [rad/s^2])``.

    Notes
    -----
    Rajamani 2012, eqs. 2.22-2.31: ``m (dv_y/dt + u r) = F_f cos(delta) + F_r``,
    ``I_z dr/dt = l_f F_f cos(delta) - l_r F_r``, ``F = C alpha`` with the slip angles
    ``alpha_f = delta - atan((v_y + l_f r) / u)``, ``alpha_r = -atan((v_y - l_r r) / u)`` at the
    centre of gravity's lateral velocity ``v_y = w + l_r r``. Deviations from eq. 2.31: the tyre
    velocity angles and the front force's ``cos(delta)`` are kept (eq. 2.31 takes their small-angle
    forms), so that as u goes to 0 the steady state is the kinematic bicycle's exactly
    (``r = u tan(delta) / L``, ``w = 0``) and, for small angles, eq. 2.31's; the longitudinal
    tyre forces' lateral part is left out, as there.
    """
    lf, lr = cog_to_front_axle_m, cog_to_rear_axle_m
    vy = w + lr * r
    f_front = cornering_stiffness_front_n_rad * (steer - np.arctan2(vy + lf * r, u))
    f_rear = -cornering_stiffness_rear_n_rad * np.arctan2(vy - lr * r, u)
    c = np.cos(steer)
    vy_dot = (f_front * c + f_rear) / mass_kg - u * r
    r_dot = (lf * f_front * c - lr * f_rear) / yaw_inertia_kg_m2
    return vy_dot - lr * r_dot, r_dot
