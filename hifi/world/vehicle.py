"""A drivable body: a bicycle model that follows the ground, steered by ``Command`` messages.

An ``[[objects]]`` entry with ``vehicle = { ... }`` instead of a ``track`` becomes a body whose
pose is integrated during the run by a :class:`Vehicle` model of the same name, from the last
``drive`` command on the bus (:class:`hifi.api.bus.Command` with ``target`` = the object's name).
Its motion is a :class:`VehicleTrack`, so sensors, the caster and ``motion.nc`` see it as any
moving body.

Two models of the body (``model``): the kinematic bicycle about the rear axle (Rajamani 2012,
sec. 2.2), and the dynamic bicycle with linear tyres (Rajamani 2012, sec. 2.3, eq. 2.31), which
runs as the kinematic one below ``switch_speed_m_s``. Either way the commands reach the body
through actuator limits (``max_accel_m_s2``, ``max_jerk_m_s3``, ``max_steer_rate_deg_s``), so
the speed and the steering angle are continuous in time and every point of the body moves with
a continuous velocity (:func:`speed_profile`, :func:`steer_profile`).

References
----------
R. Rajamani, *Vehicle Dynamics and Control*, 2nd ed., Springer 2012, sec. 2.2 (kinematic
bicycle model), sec. 2.3 (dynamic bicycle model, eq. 2.31), sec. 3.2-3.3 (steady-state
cornering, the understeer gradient; the example vehicle of ch. 3 is the ``car`` preset's).
T. D. Gillespie, *Fundamentals of Vehicle Dynamics*, SAE 1992, ch. 6 (understeer gradient
``K = W_f / C_af - W_r / C_ar`` [rad/g], eq. 6-15).
J. Kong, M. Pfeiffer, G. Schildbach, F. Borrelli, "Kinematic and dynamic vehicle models for
autonomous driving control design", IEEE IV 2015 (the dynamic model's slip angles are singular
as the speed goes to zero; the kinematic model holds at low speed).
P. Polack, F. Altche, B. d'Andrea-Novel, A. de La Fortelle, "The kinematic bicycle model: a
consistent model for planning feasible trajectories for autonomous vehicles?", IEEE IV 2017.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from scipy.spatial.transform import Rotation

from ..api.bus import Command
from ..api.model import Model, Var
from . import quaternion
from .motion import Kinematics, Pose, Track
from .vehicle_dynamics import (  # noqa: F401  (re-exported: importable from here as before)
    ACCEL_TOL_M_S2, SPEED_TOL_M_S, Profile, bicycle_step, dynamic_bicycle_rates, speed_profile,
    steady_state_yaw_rate_gain, steer_profile, understeer_gradient)
from ..api.params import Param


# ------------------------------------------------------------------------------------------------
# Presets: a passenger car and a small robot, every value with its source
# ------------------------------------------------------------------------------------------------
#: Husky A200's yaw-rate and yaw-acceleration limits [rad/s, rad/s^2] and top speed [m/s]
#: (Clearpath Robotics, husky/husky ``husky_control/config/control.yaml``: angular.z
#: max_velocity 2.0, max_acceleration 6.0; Husky data sheet: 1.0 m/s) and wheelbase [m]
#: (data sheet: 512 mm): the robot preset's steering lock and rate are derived from them.
_HUSKY_YAW_RATE, _HUSKY_YAW_ACCEL, _HUSKY_SPEED, _HUSKY_WHEELBASE = 2.0, 6.0, 1.0, 0.512

VEHICLE_PRESETS: dict[str, dict[str, float | None]] = {
    # A mid-size passenger car: Rajamani's example vehicle of ch. 3 (sec. 3.2, the lane-keeping
    # examples: m = 1573 kg, I_z = 2873 kg m^2, l_f = 1.1 m, l_r = 1.58 m, C_af = C_ar = 80000
    # N/rad per tyre, so 160000 N/rad per axle) with comfort limits on its actuators.
    "car": dict(
        wheelbase_m=1.1 + 1.58,                  # l_f + l_r (VW Golf VIII 2.64 m, Toyota Camry 2.83 m)
        max_steer_deg=35.0,                      # a passenger car's lock: turning radius about L / tan 35 = 3.8 m
        max_speed_m_s=15.0,                      # urban driving, 54 km/h
        # ISO 22179:2009 (full speed range ACC) bounds automatic acceleration by 4 m/s^2 below
        # 5 m/s and 2 m/s^2 above 20 m/s; 3 m/s^2: brisk urban driving, between the two.
        max_accel_m_s2=3.0,
        # ISO 15622:2018 / ISO 22179:2009: the average jerk of automatic deceleration within
        # 2.5 m/s^3 (above 20 m/s; 5 m/s^3 below 5 m/s), the comfort bound taken both ways.
        # Values as quoted in the ACC literature, not re-read from the standards' text.
        max_jerk_m_s3=2.5,
        # Baidu Apollo's Lincoln MKZ vehicle parameters (modules/common/data/mkz_config.pb.txt):
        # max_steer_angle_rate 8.55211 rad/s at the steering wheel, steer_ratio 16: 30.6 deg/s
        # at the road wheels.
        max_steer_rate_deg_s=float(np.degrees(8.55211 / 16.0)),
        mass_kg=1573.0,
        yaw_inertia_kg_m2=2873.0,
        cog_to_front_axle_m=1.1,
        cornering_stiffness_front_n_rad=2 * 80000.0,
        cornering_stiffness_rear_n_rad=2 * 80000.0,
    ),
    # A small field robot: Clearpath Husky A200 (data sheet: 990 x 670 x 390 mm, 50 kg, 1.0 m/s;
    # husky_control/config/control.yaml: 3.0 m/s^2, no jerk limit). The Husky steers its wheels
    # by skid, not by a steering angle: as a bicycle of its wheelbase, its yaw rate 2 rad/s at
    # 1 m/s is a lock of atan(2 * 0.512 / 1) = 45.7 deg, and its yaw acceleration 6 rad/s^2 at
    # 1 m/s a steering rate of 6 * 0.512 / 1 rad/s = 176 deg/s (straight ahead). No tyre data:
    # the dynamic model needs the mass, inertia and cornering stiffnesses given.
    "robot": dict(
        wheelbase_m=_HUSKY_WHEELBASE,
        max_steer_deg=float(np.degrees(np.arctan(_HUSKY_YAW_RATE * _HUSKY_WHEELBASE / _HUSKY_SPEED))),
        max_speed_m_s=_HUSKY_SPEED,
        max_accel_m_s2=3.0,
        max_jerk_m_s3=0.0,
        max_steer_rate_deg_s=float(np.degrees(_HUSKY_YAW_ACCEL * _HUSKY_WHEELBASE / _HUSKY_SPEED)),
        mass_kg=None, yaw_inertia_kg_m2=None, cog_to_front_axle_m=None,
        cornering_stiffness_front_n_rad=None, cornering_stiffness_rear_n_rad=None,
    ),
}
#: Keys a preset fills (each ``None`` by default in :data:`VEHICLE_PARAMS`).
PRESET_KEYS = tuple(VEHICLE_PRESETS["car"])
#: Keys the dynamic model needs.
DYNAMIC_KEYS = ("mass_kg", "yaw_inertia_kg_m2", "cog_to_front_axle_m", "cornering_stiffness_front_n_rad",
                "cornering_stiffness_rear_n_rad")


def _preset(doc: str, **bounds) -> Param:
    return Param("float", default=None, doc=doc + "; default: the preset's", **bounds)


#: ``vehicle = { ... }`` keys: a mid-size car by default (``vehicle = {}``).
VEHICLE_PARAMS = {
    "preset": Param("str", default="car", choices=tuple(VEHICLE_PRESETS),
                    doc="'car' (Rajamani 2012 ch. 3's example car, ISO 22179 comfort jerk, Apollo's Lincoln MKZ "
                        "steering rate) or 'robot' (Clearpath Husky A200 data sheet and controller limits); every "
                        "key below overrides the preset's value (hifi.world.vehicle.VEHICLE_PRESETS)"),
    "model": Param("str", default="kinematic", choices=("kinematic", "dynamic"),
                   doc="'kinematic': bicycle about the rear axle, no tyre slip (Rajamani 2012, sec. 2.2); "
                       "'dynamic': bicycle with linear tyres (sec. 2.3, eq. 2.31), kinematic below switch_speed_m_s"),
    "wheelbase_m": _preset("distance between the axles [m] (car 2.68 m, robot 0.512 m)",
                           minimum=0.0, exclusive_minimum=True),
    "max_steer_deg": _preset("largest front-wheel steering angle [deg] (car 35, robot 45.7)",
                             minimum=0.0, exclusive_minimum=True, maximum=89.0),
    "max_speed_m_s": _preset("speed limit of the body [m/s] (commands above it are clipped; car 15, robot 1.0)",
                             minimum=0.0, exclusive_minimum=True),
    "max_accel_m_s2": _preset("largest acceleration and deceleration [m/s^2] (car 3, robot 3)",
                              minimum=0.0, exclusive_minimum=True),
    "max_jerk_m_s3": _preset("largest rate of change of the acceleration [m/s^3] (car 2.5: ISO 15622 / 22179 "
                             "comfort; robot 0); 0: none (the acceleration steps)", minimum=0.0),
    "max_steer_rate_deg_s": _preset("largest rate of the front-wheel steering angle [deg/s] (car 30.6: Apollo's "
                                    "Lincoln MKZ, 490 deg/s at the wheel over a ratio of 16; robot 176); 0: none "
                                    "(the steering steps at the vehicle's steps)", minimum=0.0),
    "mass_kg": _preset("dynamic model: mass [kg] (car 1573)", minimum=0.0, exclusive_minimum=True),
    "yaw_inertia_kg_m2": _preset("dynamic model: yaw moment of inertia about the centre of gravity [kg m^2] "
                                 "(car 2873)", minimum=0.0, exclusive_minimum=True),
    "cog_to_front_axle_m": _preset("dynamic model: centre of gravity to front axle l_f [m], less than the "
                                   "wheelbase (car 1.1; l_r = wheelbase - l_f)", minimum=0.0, exclusive_minimum=True),
    "cornering_stiffness_front_n_rad": _preset("dynamic model: cornering stiffness of the front axle (both tyres) "
                                               "[N/rad] (car 160000)", minimum=0.0, exclusive_minimum=True),
    "cornering_stiffness_rear_n_rad": _preset("dynamic model: cornering stiffness of the rear axle [N/rad] "
                                              "(car 160000)", minimum=0.0, exclusive_minimum=True),
    "switch_speed_m_s": Param("float", default=0.5, minimum=0.0, exclusive_minimum=True,
                              doc="dynamic model: below this speed [m/s] (and backwards) the body moves as the "
                                  "kinematic bicycle, whose slip-free motion the dynamic one tends to as the speed "
                                  "goes to 0 (0.5 m/s: the F1TENTH gym's switch; CommonRoad's single-track model "
                                  "uses 0.1 m/s)"),
    "rate_hz": Param("float", default=50.0, minimum=0.0, exclusive_minimum=True,
                     doc="integration rate of the pose [Hz]"),
    "follow_ground": Param("bool", default=True,
                           doc="put the body on the surface under it at every step (height, roll and pitch from "
                               "the ground's normal); false: it stays at its start height, level"),
}
#: How far above its wheels the ground probe starts [m]: a kerb or ramp step up to this high
#: is climbed; the probe starts below the floor of a car body (ground clearance 0.15-0.2 m).
GROUND_PROBE_UP_M = 0.15
#: How far down the ground probe looks [m]: farther drops leave the body where it is.
GROUND_PROBE_DOWN_M = 5.0
#: Longest integration substep [s] (RK4; at the car's yaw rates, below 1 rad/s, the pose error
#: per substep is below 1e-12 m): 4 substeps per step at the default 50 Hz.
MAX_SUBSTEP_S = 0.005
#: Largest |lambda| h of a dynamic-model substep (the lateral modes' eigenvalues, about
#: -(C_f + C_r) / (m v), are real; RK4's stability interval on the real axis is 2.785).
DYNAMIC_STABILITY = 1.5
#: Intervals of a step shorter than this are merged into the next [s].
MIN_INTERVAL_S = 1e-9
#: Rear-axle speed bound of the dynamic model as a multiple of ``max_speed_m_s``: its lateral
#: velocity stays below its forward speed (rear slip angle below 45 deg, far beyond the linear
#: tyre range) -- the reach the caster's cull allows for.
DYNAMIC_SPEED_BOUND = 2.0


def resolve_vehicle(params: dict, error=None, key: str = "vehicle") -> dict:
    """The preset's values filled into ``params`` (every key given overrides), checked together.

    Parameters
    ----------
    params : dict
        ``vehicle = { ... }`` after :func:`hifi.api.params.check_params` (``None`` where not given).
    error : callable, optional
        ``error(reason, key=..., value=...)`` returning the exception to raise (a located
        :class:`hifi.errors.ScenarioError`); default: ``ValueError``.
    key : str
        Key path of the table, for the messages.

    Returns
    -------
    dict
        Every key with a value.
    """
    def fail(reason, k, value):
        if error is None:
            return ValueError(f"{key}.{k} = {value!r}: {reason}")
        return error(reason, key=f"{key}.{k}", value=value)

    preset = params.get("preset") or "car"
    out = dict(params)
    out["preset"] = preset
    for k, value in VEHICLE_PRESETS[preset].items():
        if out.get(k) is None:
            out[k] = value
    if out.get("model", "kinematic") == "dynamic":
        missing = [k for k in DYNAMIC_KEYS if out.get(k) is None]
        if missing:
            raise fail(f"model 'dynamic' needs {', '.join(missing)} (preset {preset!r} has none: no data sheet "
                       f"gives its tyres)", "model", "dynamic")
        if out["cog_to_front_axle_m"] >= out["wheelbase_m"]:
            raise fail(f"the centre of gravity must lie between the axles: less than wheelbase_m "
                       f"({out['wheelbase_m']:g} m)", "cog_to_front_axle_m", out["cog_to_front_axle_m"])
    return out


def _hermite5(p0, v0, a0, p1, v1, a1, h):
    """Coefficients (..., 6), lowest first, of the quintic on [0, h] through value, rate and
    second derivative at both ends (C2 Hermite interpolation)."""
    delta = p1 - (p0 + v0 * h + 0.5 * a0 * h * h)
    dv = v1 - (v0 + a0 * h)
    da = a1 - a0
    c3 = (10.0 * delta - 4.0 * dv * h + 0.5 * da * h * h) / h ** 3
    c4 = (-15.0 * delta + 7.0 * dv * h - da * h * h) / h ** 4
    c5 = (6.0 * delta - 3.0 * dv * h + 0.5 * da * h * h) / h ** 5
    return np.stack([p0, v0, 0.5 * a0, c3, c4, c5], axis=-1)


def _poly(c, d, derivatives=True):
    """Value, first and second derivative (None without ``derivatives``) of the quintics ``c``
    (n, k, 6) at ``d`` (n,)."""
    d = d[:, None]
    p = ((((c[..., 5] * d + c[..., 4]) * d + c[..., 3]) * d + c[..., 2]) * d + c[..., 1]) * d + c[..., 0]
    if not derivatives:
        return p, None, None
    v = (((5 * c[..., 5] * d + 4 * c[..., 4]) * d + 3 * c[..., 3]) * d + 2 * c[..., 2]) * d + c[..., 1]
    a = ((20 * c[..., 5] * d + 12 * c[..., 4]) * d + 6 * c[..., 3]) * d + 2 * c[..., 2]
    return p, v, a


#: Single poses a VehicleTrack keeps (:meth:`VehicleTrack.at`): the few times asked for
#: between two of its steps.
_KEPT_POSES = 256

# Columns of a VehicleTrack state row
_X, _Y, _Z, _YAW, _ROLL, _PITCH, _U, _W, _R, _STEER, _ACCEL = range(11)
_NCOL = 11


class VehicleTrack(Track):
    """The motion of a driven body: the states a :class:`Vehicle` integrates, as a track.

    States are recorded at the vehicle's integration nodes (its steps, their substeps, and the
    times within a step where an actuator reaches its command): position, yaw, roll, pitch, the
    rear axle's forward and lateral velocity (body axes), the yaw rate, the steering angle and
    the acceleration. Between two nodes the horizontal position and the yaw follow the quintic
    through both nodes' values and first and second derivatives (the model's own, so the pose
    and its derivatives agree to the integration's accuracy); height, roll and pitch are linear
    between the ground probes of the steps. Beyond the last node the body keeps its body-axis
    velocity and yaw rate (an arc); before the first it rests at its start pose.

    Its :meth:`kinematics` are the quintics' derivatives: with the actuator limits the velocity
    of every point of the body is continuous, and its acceleration bounded.
    """

    #: Smooth between nodes and C1 at them (an IMU may ride on a vehicle; see :meth:`kinematics`).
    twice_differentiable = True
    #: Its future is made during the run: models that look ahead (the IMU's blocks) must not
    #: (:meth:`hifi.world.scene.Scene.rides_on_driven_body` reads this).
    driven = True
    interpolation = "vehicle"

    def __init__(self, position_m, yaw_rad: float, wheelbase_m: float, reach_m: float, max_accel_m_s2: float = 3.0,
                 max_speed_m_s: float = 15.0, speed_bound_m_s: float | None = None):
        self.wheelbase_m = float(wheelbase_m)
        self.max_accel_m_s2 = float(max_accel_m_s2)
        self.max_speed_m_s = float(max_speed_m_s)
        self.speed_bound_m_s = float(max_speed_m_s if speed_bound_m_s is None else speed_bound_m_s)
        # Node arrays that grow by doubling (pose queries read them at every cast): the state rows
        # and, per node, the quintics (x, y, yaw) of the segment it starts.
        self._n = 1
        self._tt = np.zeros(64)
        self._st = np.zeros((64, _NCOL))
        self._cf = np.zeros((64, 3, 6))
        self._zrp = np.zeros((64, 3))                 # z, roll, pitch: the columns at() reads
        self._zrp[0, 0] = float(position_m[2])
        self._st[0, :4] = (float(position_m[0]), float(position_m[1]), float(position_m[2]), float(yaw_rad))
        self._start = np.asarray(position_m, dtype=float)
        self._reach = float(reach_m)
        self._slerp = None
        self._kept: dict[bytes, tuple] = {}     # t.tobytes() -> (version, Pose): at()
        self._kept_stack = None                  # (version, times' bytes, Pose): at()
        self._first = (self._st[0].copy(), self._zrp[0].copy())      # the start node: reset()
        self._generation = 0                     # nodes of earlier runs: version() never repeats

    def reset(self) -> None:
        """Back to the start node, for a new run of the same simulation: the nodes of the last
        run are dropped and :attr:`version` goes on counting up (from every node ever recorded),
        so a pose the scene keeps by version is never taken for one of the new run."""
        self._generation += self._n
        self._n = 1
        self._st[0], self._zrp[0] = self._first[0], self._first[1]
        self._tt[0] = 0.0
        self._slerp = None
        self._kept = {}
        self._kept_stack = None

    # Track's attributes, as the scene and caster read them -------------------------------
    @property
    def times_s(self) -> np.ndarray:
        return self._tt[:self._n]

    @property
    def positions_m(self) -> np.ndarray:
        """The start and the farthest the body can get from it (``extent_m`` bounds)."""
        return np.vstack([self._start, self._start + [self._reach, 0.0, 0.0],
                          self._start + [0.0, 0.0, self._reach]])

    def max_offset_m(self) -> float:
        """Bound on the body origin's distance from the scene origin [m]: its start plus the
        farthest it can drive in the run (its speed bound x duration)."""
        return float(np.linalg.norm(self._start)) + self._reach

    def hull_points(self, t_min: float, t_max: float) -> np.ndarray:
        """Points whose hull holds the origin's path over ``[t_min, t_max]``: the position at
        ``t_min`` and the six points ``speed_bound_m_s (t_max - t_min)`` away along the axes (the
        farthest the body can get, whatever it is commanded; the ball through them holds the
        path, which is what the caster's cull needs)."""
        p0 = self.at(float(t_min)).translation
        s = self.speed_bound_m_s * max(float(t_max) - float(t_min), 0.0) + 1e-6
        return np.vstack([p0, p0 + np.vstack([np.eye(3), -np.eye(3)]) * s])

    def append(self, times_s, rows, coefs) -> None:
        """Append nodes at ``times_s`` (m,) [s] (after the last one) with state ``rows`` (m, 11);
        ``coefs`` (m, 3, 6): the quintics of the segments from the last node to the first new one,
        and between the new ones."""
        times_s = np.asarray(times_s, dtype=float)
        m = times_s.size
        if times_s[0] <= self._tt[self._n - 1] or np.any(np.diff(times_s) <= 0):
            raise ValueError(f"vehicle states must advance in time: {times_s} after {self._tt[self._n - 1]}")
        while self._n + m > self._tt.size:
            k = self._tt.size
            self._tt = np.concatenate([self._tt, np.zeros(k)])
            self._st = np.concatenate([self._st, np.zeros((k, _NCOL))])
            self._cf = np.concatenate([self._cf, np.zeros((k, 3, 6))])
            self._zrp = np.concatenate([self._zrp, np.zeros((k, 3))])
        n = self._n
        self._tt[n:n + m] = times_s
        self._st[n:n + m] = rows
        self._zrp[n:n + m] = np.asarray(rows)[:, [_Z, _ROLL, _PITCH]]
        self._cf[n - 1:n - 1 + m] = coefs
        self._n += m

    @property
    def version(self) -> int:
        """Nodes recorded so far: the track at a time changes only when this grows (the scene
        keeps poses by it, :meth:`hifi.world.scene.Scene.pose_at`); it goes on counting across
        :meth:`reset`."""
        return self._generation + self._n

    def state(self):
        """``(t, row)`` of the last node: x, y, z, yaw, roll, pitch [m, rad], forward and lateral
        velocity of the rear axle [m/s], yaw rate [rad/s], steering [rad], acceleration [m/s^2]."""
        return float(self._tt[self._n - 1]), self._st[self._n - 1].copy()

    def _eval(self, t1, derivatives=True):
        """Pose (x, y, yaw (n, 3)), its first and second derivatives (n, 3; None without
        ``derivatives``), and height, roll, pitch (n, 3) at times ``t1`` (n,)."""
        n = self._n
        times, st = self._tt[:n], self._st[:n]
        i = np.clip(np.searchsorted(times, t1, side="right") - 1, 0, n - 1)
        d = np.maximum(t1 - times[i], 0.0)
        inside = i < n - 1
        p, v, a = _poly(self._cf[i], np.where(inside, d, 0.0), derivatives)
        if not inside.all():          # beyond the last node: its body-axis velocity and yaw rate held
            out = ~inside
            row = st[n - 1]
            u, w, r, yaw0 = row[_U], row[_W], row[_R], row[_YAW]
            de = d[out]
            x = r * de
            s_ = de * np.sinc(x / np.pi)                               # sin(r d) / r
            c_ = de * 0.5 * x * np.sinc(x / (2 * np.pi)) ** 2          # (1 - cos(r d)) / r
            bx, by = u * s_ - w * c_, u * c_ + w * s_
            cy, sy = np.cos(yaw0), np.sin(yaw0)
            yaw_e = yaw0 + x
            ce, se = np.cos(yaw_e), np.sin(yaw_e)
            p[out] = np.column_stack([row[_X] + cy * bx - sy * by, row[_Y] + sy * bx + cy * by, yaw_e])
            if derivatives:
                v[out] = np.column_stack([ce * u - se * w, se * u + ce * w, np.full_like(de, r)])
                a[out] = np.column_stack([-r * (se * u + ce * w), r * (ce * u - se * w), np.zeros_like(de)])
        # height, roll, pitch: linear towards the next node
        j = np.minimum(i + 1, n - 1)
        span = np.where(j > i, times[j] - times[i], 1.0)
        f = np.where(j > i, np.minimum(d / span, 1.0), 0.0)
        zrp0 = self._zrp[i]
        zrp = zrp0 + f[:, None] * (self._zrp[j] - zrp0)
        return p, v, a, zrp

    def kinematics(self, t1) -> Kinematics:
        """Pose, velocity, acceleration, angular rate and angular acceleration at times ``t1``
        (n,) [s], scene axes (the body has no parent; the height, roll and pitch changes of
        following the ground are not differentiated, as before: level ground is exact)."""
        t1 = np.atleast_1d(np.asarray(t1, dtype=float))
        p, v, a, zrp = self._eval(t1)
        zero = np.zeros_like(t1)
        pose = self._pose(p, zrp, scalar=False)
        return Kinematics(pose, np.column_stack([v[:, 0], v[:, 1], zero]), np.column_stack([a[:, 0], a[:, 1], zero]),
                          np.column_stack([zero, zero, v[:, 2]]), np.column_stack([zero, zero, a[:, 2]]))

    @staticmethod
    def _pose(p, zrp, scalar):
        # Rotation.from_euler("ZYX", (yaw, pitch, roll)), its arithmetic without its cost per call
        quat = quaternion.from_euler("ZYX", np.column_stack([p[:, 2], zrp[:, 2], zrp[:, 1]]))
        pos = np.column_stack([p[:, 0], p[:, 1], zrp[:, 0]])
        if scalar:
            return Pose.from_quat(quat[:1], pos[0])
        return Pose.from_quat(quat, pos)

    def at(self, t_s) -> Pose:
        """Pose(s) at time(s) ``t_s`` [s]. Single poses are kept by time and :attr:`version` (the
        caster asks for the pose at the start of every cast, the scene at every lookup), and the
        last stack by its times' bytes and the version; the arrays returned are read-only."""
        t = np.asarray(t_s, dtype=float)
        n = self._n
        if t.ndim == 0:
            key = t.tobytes()
            hit = self._kept.get(key)
            if hit is not None and hit[0] == n:
                return hit[1]
        else:
            # the last stack too: a scan's rays' times are asked for twice, for the sensor's
            # pose and, by the caster, for this body's
            key = t.tobytes()
            hit = self._kept_stack
            if hit is not None and hit[0] == n and hit[1] == key and hit[2].translation.shape == t.shape + (3,):
                return hit[2]
        p, _, _, zrp = self._eval(np.atleast_1d(t), derivatives=False)
        pose = self._pose(p, zrp, scalar=t.ndim == 0)
        pose.translation.flags.writeable = False
        pose.quat.flags.writeable = False
        if t.ndim == 0:
            if len(self._kept) >= _KEPT_POSES:
                self._kept.clear()                   # one step (threads share the dict)
            self._kept[key] = (n, pose)
        else:
            self._kept_stack = (n, key, pose)
        return pose


class Vehicle(Model):
    """Integrates a driven body's pose from ``drive`` commands (one per ``vehicle`` object).

    Commands: :class:`hifi.api.bus.Command` with ``target`` the object's name and ``name``
    ``"drive"``, value ``{"speed_m_s": v, "steer_deg": delta}`` (speed clipped to
    ``max_speed_m_s``, steering to ``max_steer_deg``). A command published at time t acts from
    the vehicle's first step after t (strictly): the step at t_k uses the latest command with
    ``time_s < t_k``. From there the actuators move toward it within their limits
    (:func:`speed_profile`: acceleration ``max_accel_m_s2``, jerk ``max_jerk_m_s3``;
    :func:`steer_profile`: ``max_steer_rate_deg_s``), continuously through the step and the
    steps after until the command is reached; a limit of 0 lets its quantity step. The body
    follows the kinematic bicycle (rear axle without slip, yaw rate ``v tan(delta) / L``) or,
    with ``model = "dynamic"`` at ``switch_speed_m_s`` and above, the dynamic bicycle
    (:func:`dynamic_bicycle_rates`), integrated by RK4 on substeps of at most
    :data:`MAX_SUBSTEP_S` that end where an actuator reaches its command (and short enough for
    the dynamic model's fast lateral modes). With ``follow_ground`` the body is then set on the
    surface under its new position (a ray cast down from :data:`GROUND_PROBE_UP_M` above its
    wheels, through the body's own faces): height from the hit, roll and pitch from the surface
    normal.

    Steps run before every other model at equal times (priority -1), so sensors casting at a
    step's time see the body's pose to the next step; rays later than that see it extrapolated
    with its velocity and yaw rate (a command arriving within a sweep changes the path only from
    the vehicle's next step on). Dataset per step: ``position`` [m], ``yaw`` [rad], ``speed``
    [m/s], ``acceleration`` [m/s^2], ``steer`` [rad], ``yaw_rate`` [rad/s], and the commands in
    force.
    """

    model_name: ClassVar[str] = "vehicle"
    priority: ClassVar[int] = -1
    #: A closed-loop model: its output depends on earlier frames (no time partition).
    closed_loop: ClassVar[bool] = True
    #: Its steps extend the body's track, which every cast and pose query reads.
    writes_scene: ClassVar[bool] = True
    default_rate_hz: ClassVar[float] = 50.0
    PARAMS: ClassVar[dict] = VEHICLE_PARAMS

    def __init__(self, name: str, params, track: VehicleTrack):
        params = resolve_vehicle(params)
        super().__init__(name, params, rate_hz=params["rate_hz"])
        self.track = track
        self._commands: list[Command] = []

    def setup(self, ctx):
        super().setup(ctx)
        self.track.reset()                 # a second run of the same simulation starts at the start
        self._commands = []
        ctx.bus.subscribe(self._on_command, target=self.name)
        self._cmd = (0.0, 0.0)
        p = self.params
        self._dynamic = p["model"] == "dynamic"
        if self._dynamic:
            lf = p["cog_to_front_axle_m"]
            self._tyres = dict(mass_kg=p["mass_kg"], yaw_inertia_kg_m2=p["yaw_inertia_kg_m2"],
                               cog_to_front_axle_m=lf, cog_to_rear_axle_m=p["wheelbase_m"] - lf,
                               cornering_stiffness_front_n_rad=p["cornering_stiffness_front_n_rad"],
                               cornering_stiffness_rear_n_rad=p["cornering_stiffness_rear_n_rad"])
            # |lambda| <= stiff / u + u: Gershgorin bound of the lateral modes' Jacobian (Rajamani
            # 2012, eq. 2.31's state matrix in v_y and r; the rear-axle states are a similarity)
            cf, cr = p["cornering_stiffness_front_n_rad"], p["cornering_stiffness_rear_n_rad"]
            lr = p["wheelbase_m"] - lf
            cross = abs(lf * cf - lr * cr)
            self._stiff = ((cf + cr + cross) / p["mass_kg"]
                           + (lf * lf * cf + lr * lr * cr + cross) / p["yaw_inertia_kg_m2"])

    def _on_command(self, msg: Command) -> None:
        if msg.name != "drive":
            raise ValueError(f"vehicle {self.name!r}: unknown command {msg.name!r} from {msg.sender!r}; "
                             f"expected 'drive' with speed_m_s and steer_deg")
        self._commands.append(msg)

    def _command_at(self, t: float):
        live = [c for c in self._commands if c.time_s < t]
        if live:
            c = live[-1]
            self._commands = self._commands[self._commands.index(c):]
            p = self.params
            v = float(np.clip(c.value.get("speed_m_s", 0.0), -p["max_speed_m_s"], p["max_speed_m_s"]))
            lim = np.radians(p["max_steer_deg"])
            self._cmd = (v, float(np.clip(np.radians(c.value.get("steer_deg", 0.0)), -lim, lim)))
        return self._cmd

    def coords(self):
        return {"xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1", "scene axis")}

    # -- the model's right-hand side ----------------------------------------------------------------
    def _rates(self, s, inputs, dynamic):
        """``(d/dt (x, y, yaw, w, r), (vx, vy, r), (ax, ay, dr/dt))`` of state ``s`` = (x, y, yaw,
        w, r) with ``inputs`` = (u, du/dt, delta, ddelta/dt) at that time: the state's rates and
        the node data of the quintics (velocity and acceleration in scene x, y; the yaw's rates).
        Plain floats: it runs a few times per substep."""
        u, a, steer, steer_rate = inputs
        if dynamic:
            w, r = s[3], s[4]
            w_dot, r_dot = dynamic_bicycle_rates(u, w, r, steer, **self._tyres)
        else:
            w = w_dot = 0.0
            t = math.tan(steer)
            L = self._wheelbase
            r = u * t / L
            r_dot = (a * t + u * steer_rate / math.cos(steer) ** 2) / L
        c, sn = math.cos(s[2]), math.sin(s[2])
        vx, vy = u * c - w * sn, u * sn + w * c
        bx, by = a - r * w, w_dot + r * u                  # body-axis acceleration of the rear axle
        acc = (c * bx - sn * by, sn * bx + c * by, r_dot)
        return np.array([vx, vy, r, w_dot, r_dot]), (vx, vy, r), acc

    def step(self, k, t):
        p = self.params
        t_next = self.event_time(k + 1)                  # k / rate: no drift from summing steps
        dt = t_next - t
        v_cmd, steer_cmd = self._command_at(t)
        t0, row = self.track.state()
        if t0 != t:                    # the state at t: the previous step's path, recorded as it was
            raise RuntimeError(f"vehicle {self.name!r} missed a step: state at {t0}, step at {t}")
        speed = speed_profile(row[_U], row[_ACCEL], v_cmd, max_accel_m_s2=p["max_accel_m_s2"],
                              max_jerk_m_s3=p["max_jerk_m_s3"])
        steering = steer_profile(row[_STEER], steer_cmd, max_steer_rate_rad_s=np.radians(p["max_steer_rate_deg_s"]))
        # intervals: the step cut where an actuator changes phase, each cut into substeps
        cuts = np.unique(np.concatenate([[0.0, dt], speed.start_s, steering.start_s]))
        cuts = cuts[(cuts >= 0.0) & (cuts <= dt)]
        cuts = cuts[np.concatenate([[True], np.diff(cuts) > MIN_INTERVAL_S])]
        cuts[-1] = dt
        s = np.array([row[_X], row[_Y], row[_YAW], row[_W], row[_R]])
        L = self._wheelbase = p["wheelbase_m"]
        switch = p["switch_speed_m_s"]
        taus, rows, coefs = [], [], []
        for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            mid = 0.5 * (lo + hi)
            # this interval's phase of each input, as plain floats: (start, value, rate, curvature)
            ip = int(np.searchsorted(speed.start_s, mid, side="right") - 1)
            iq = int(np.searchsorted(steering.start_s, mid, side="right") - 1)
            sp = (float(speed.start_s[ip]), float(speed.value[ip]), float(speed.rate[ip]), float(speed.curvature[ip]))
            sq = (float(steering.start_s[iq]), float(steering.value[iq]), float(steering.rate[iq]))

            def inp(tau, sp=sp, sq=sq):
                d = tau - sp[0]
                e = tau - sq[0]
                return (sp[1] + sp[2] * d + 0.5 * sp[3] * d * d, sp[2] + sp[3] * d, sq[1] + sq[2] * e, sq[2])

            u_lo = min(inp(lo)[0], inp(hi)[0])
            dynamic = self._dynamic and u_lo >= switch
            n_sub = int(np.ceil((hi - lo) / MAX_SUBSTEP_S - 1e-9))
            if dynamic:
                u_hi = max(abs(inp(lo)[0]), abs(inp(hi)[0]))
                n_sub = max(n_sub, int(np.ceil((hi - lo) * (self._stiff / u_lo + u_hi) / DYNAMIC_STABILITY)))
            edges = np.linspace(lo, hi, n_sub + 1).tolist()
            in_a = inp(lo)
            if not dynamic:                               # the kinematic algebraic states
                s[3], s[4] = 0.0, in_a[0] * math.tan(in_a[2]) / L
            k1, v0, a0 = self._rates(s, in_a, dynamic)
            for a_, b_ in zip(edges[:-1], edges[1:]):
                h = b_ - a_
                in_m, in_b = inp(a_ + 0.5 * h), inp(b_)
                k2 = self._rates(s + 0.5 * h * k1, in_m, dynamic)[0]
                k3 = self._rates(s + 0.5 * h * k2, in_m, dynamic)[0]
                k4 = self._rates(s + h * k3, in_b, dynamic)[0]
                s1 = s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
                if not dynamic:
                    s1[3], s1[4] = 0.0, in_b[0] * math.tan(in_b[2]) / L
                k1_next, v1, a1 = self._rates(s1, in_b, dynamic)
                coefs.append(_hermite5(s[:3], np.array(v0), np.array(a0), s1[:3], np.array(v1), np.array(a1), h))
                taus.append(b_)
                rows.append((s1[0], s1[1], s1[2], s1[3], s1[4], in_b[0], in_b[2], in_b[1]))
                s, k1, v0, a0 = s1, k1_next, v1, a1
        x1, y1, yaw1 = s[0], s[1], s[2]
        z, roll, pitch = row[_Z], row[_ROLL], row[_PITCH]
        z1, roll1, pitch1 = z, roll, pitch
        if p["follow_ground"]:
            z1, roll1, pitch1 = self._ground(x1, y1, z, yaw1, t_next, fallback=(z, roll, pitch))
        taus = np.array(taus)
        taus[-1] = dt
        frac = taus / dt
        nodes = np.array(rows)
        table = np.zeros((taus.size, _NCOL))
        table[:, [_X, _Y, _YAW, _W, _R, _U, _STEER, _ACCEL]] = nodes
        table[:, _Z] = z + frac * (z1 - z)
        table[:, _ROLL] = roll + frac * (roll1 - roll)
        table[:, _PITCH] = pitch + frac * (pitch1 - pitch)
        times = t + taus
        times[-1] = t_next
        self.track.append(times, table, np.array(coefs))
        return {
            "position": Var(("xyz",), np.array([row[_X], row[_Y], z]), "m",
                            "body origin (rear axle on the ground), scene frame"),
            "yaw": Var((), np.float64(row[_YAW]), "rad", "heading, counter-clockwise from the scene x axis"),
            "speed": Var((), np.float64(row[_U]), "m/s", "forward speed at the step"),
            "acceleration": Var((), np.float64(row[_ACCEL]), "m/s^2", "forward acceleration at the step"),
            "steer": Var((), np.float64(row[_STEER]), "rad", "front-wheel steering angle at the step"),
            "yaw_rate": Var((), np.float64(row[_R]), "rad/s", "yaw rate at the step"),
            "speed_command": Var((), np.float64(v_cmd), "m/s", "commanded speed in force"),
            "steer_command": Var((), np.float64(steer_cmd), "rad", "commanded steering angle in force (clipped)"),
        }

    def _ground(self, x, y, z, yaw, t, fallback):
        """Height, roll and pitch of the surface under (x, y), or ``fallback`` if none."""
        own = self.ctx.scene.object_names.index(self.name)
        top = z + GROUND_PROBE_UP_M
        down = np.array([[0.0, 0.0, -1.0]])
        for _ in range(4):                   # past the body's own faces (its floor, its wheels)
            hits = self.ctx.caster.cast(np.array([[x, y, top]]), down, t, top - (z - GROUND_PROBE_DOWN_M))
            if not hits.hit[0]:
                return fallback
            if hits.object_id[0] != own:
                break
            top = float(hits.point[0, 2]) - 1e-4
        else:
            return fallback
        n = hits.normal[0]
        n = n if n[2] >= 0 else -n
        # the body's axes on the surface: forward along the heading projected on the plane
        fwd = np.array([np.cos(yaw), np.sin(yaw), 0.0])
        fwd = fwd - n * np.dot(fwd, n)
        fwd /= np.linalg.norm(fwd)
        left = np.cross(n, fwd)
        rot = Rotation.from_matrix(np.column_stack([fwd, left, n]))
        _, pitch, roll = rot.as_euler("ZYX")
        return float(hits.point[0, 2]), float(roll), float(pitch)
