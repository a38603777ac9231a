"""A loosely coupled GNSS/INS: an error-state extended Kalman filter over an IMU and a GPS receiver.

Model ``ins`` (a ``[[models]]`` entry): strapdown mechanisation of the named IMU's samples in the
scene's local-level frame (ENU at the origin, Earth-fixed), corrected by the named receiver's
fixes. The state error is 15-dimensional: position, velocity, attitude (small angles, scene
axes), gyro and accelerometer biases.

References
----------
P. D. Groves, *Principles of GNSS, Inertial, and Multisensor Integrated Navigation Systems*,
2nd ed., Artech House 2013: sec. 5.4 (local-navigation-frame mechanisation), 14.2 (the error
model, Eq. 14.63-14.65 without the transport-rate terms: the scene frame is Earth-fixed), 14.3
(the loosely coupled position measurement with the lever arm, Eq. 14.111).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.spatial.transform import Rotation

from hifi.api.bus import SensorData
from hifi.world.earth import earth_rate_enu, normal_gravity
from hifi.api.model import Model, Var
from hifi.api.params import Param
from hifi.api.rng import stream


def _skew(v):
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


class INS(Model):
    """Loosely coupled GNSS/INS error-state EKF (Groves 2013, ch. 14).

    Propagation, at every sample of the IMU named ``imu`` (its ``angular_rate`` and
    ``specific_force``, sensor axes; the sample at the start of each interval holds over it):
    attitude ``C <- C exp([(w - b_g - C^T w_ie) dt]x)``,
    velocity ``v <- v + (C (f - b_a) - 2 w_ie x v + g) dt`` with the normal gravity of the
    origin (:func:`hifi.world.earth.normal_gravity`) and the Earth rate ``w_ie`` in the scene's ENU
    axes (:func:`hifi.world.earth.earth_rate_enu`), position by the trapezoid of the velocities.
    The error covariance follows ``Phi = I + F dt`` (Groves Eq. 14.63-14.65: ``dv' = -[f]x dth
    - C db_a``, ``dth' = -C db_g``, biases as random walks) with the process noise of the
    filter's own noise densities (``*_noise_density_*``, ``*_random_walk_*``: what the
    integrator assumes, not the simulated IMU's truth).

    Update, at every fix of the receiver named ``gnss`` (``position_ecef`` to the scene frame):
    the antenna position ``p + C l`` against the fix, ``l`` the lever arm from the IMU to the
    antenna (both ride on one body; measured at t = 0), ``R = diag(fix_sigma_m^2)``; Joseph
    form; the error state is fed back and reset. At every output step, the land vehicle's
    motion constraint (no sideways or vertical velocity in the IMU's axes, which are taken as
    the vehicle's: mount the IMU level and forward): without it the heading of a GPS-aided INS
    is observable only while the vehicle accelerates.

    Initialisation at the first IMU sample: the truth of the IMU's body plus errors drawn from
    ``initial_*_sigma`` (seeded: stream ``(seed, name, -1, "init")``), biases zero. Dataset per
    frame (``rate_hz``): the estimate (``position``, ``velocity``, ``rpy_deg``, ``yaw``,
    biases), its 1-sigma, and the truth.
    """

    model_name: ClassVar[str] = "ins"
    default_rate_hz: ClassVar[float] = 10.0
    closed_loop: ClassVar[bool] = True
    PARAMS: ClassVar[dict] = {
        "imu": Param("str", doc="the imu sensor whose samples it integrates"),
        "gnss": Param("str", default=None, doc="the GPS receiver whose fixes correct it (none: free inertial)"),
        "gyro_noise_density_rad_s_rthz": Param("float", default=1.92e-4, minimum=0.0, exclusive_minimum=True,
                                               doc="assumed gyro white noise [rad/s/sqrt(Hz)] (ADIS16448 data "
                                                   "sheet, as the imu preset)"),
        "accel_noise_density_m_s2_rthz": Param("float", default=1.83e-3, minimum=0.0, exclusive_minimum=True,
                                               doc="assumed accelerometer white noise [m/s^2/sqrt(Hz)] (ADIS16448)"),
        "gyro_random_walk_rad_s2_rthz": Param("float", default=3e-6, minimum=0.0, exclusive_minimum=True,
                                              doc="assumed gyro bias random walk [rad/s^2/sqrt(Hz)] (the imu "
                                                  "preset's, a modelling choice)"),
        "accel_random_walk_m_s3_rthz": Param("float", default=1e-4, minimum=0.0, exclusive_minimum=True,
                                             doc="assumed accelerometer bias random walk [m/s^3/sqrt(Hz)]"),
        "fix_sigma_m": Param("vec3", default=(1.5, 1.5, 3.0),
                             doc="1-sigma of a fix in east, north, up [m] (about the gps_l1 receiver's open-sky "
                                 "error, validation/gnss.md)"),
        "nonholonomic_sigma_m_s": Param("float", default=0.2, minimum=0.0,
                                        doc="1-sigma of the land-vehicle motion constraint, zero sideways and "
                                            "vertical velocity in the IMU's axes, applied at every output step "
                                            "(Groves 2013 sec. 15.4; 0.2 m/s leaves room for the lever arm of an IMU "
                                            "off the rear axle in turns); 0: not applied"),
        "initial_position_sigma_m": Param("float", default=1.0, minimum=0.0, doc="initial position error [m]"),
        "initial_velocity_sigma_m_s": Param("float", default=0.1, minimum=0.0, doc="initial velocity error [m/s]"),
        "initial_attitude_sigma_deg": Param("float", default=1.0, minimum=0.0,
                                            doc="initial attitude error per axis [deg]"),
        "initial_gyro_bias_sigma_rad_s": Param("float", default=float(np.radians(0.5)), minimum=0.0,
                                               doc="initial gyro bias uncertainty [rad/s] (0.5 deg/s: the "
                                                   "ADIS16448's bias repeatability, data sheet Rev. H)"),
        "initial_accel_bias_sigma_m_s2": Param("float", default=0.05, minimum=0.0,
                                               doc="initial accelerometer bias uncertainty [m/s^2] (assumed, "
                                                   "about 5 mg)"),
    }

    @classmethod
    def check_references(cls, p, *, names, vehicles):
        if names.get(p["imu"]) != "sensors":
            raise ValueError(f"imu: {p['imu']!r} is not a sensor of this scenario")
        if p["gnss"] is not None and names.get(p["gnss"]) != "sensors":
            raise ValueError(f"gnss: {p['gnss']!r} is not a sensor of this scenario")

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        lat = np.radians(ctx.origin.get("lat_deg", 0.0))
        self._g = np.array([0.0, 0.0, -float(normal_gravity(lat, ctx.origin.get("height_m", 0.0)))])
        self._w_ie = np.asarray(earth_rate_enu(lat), dtype=float)
        self._t = None
        self._fixes = 0
        self._new_fix = None
        if p["gnss"] is not None:
            imu0 = ctx.scene.pose_at(p["imu"], 0.0)
            ant0 = ctx.scene.pose_at(p["gnss"], 0.0)
            self._lever = imu0.rotation.inv().apply(ant0.translation - imu0.translation)   # IMU axes [m]
            ctx.bus.subscribe(self._on_fix, SensorData, sender=p["gnss"])
        ctx.bus.subscribe(self._on_imu, SensorData, sender=p["imu"])

    def _init(self, t):
        p = self.params
        rng = stream(self.ctx.seed, self.name, -1, "init")
        kin = self.ctx.scene.kinematics_at(p["imu"], float(t))
        d_att = np.radians(p["initial_attitude_sigma_deg"]) * rng.standard_normal(3)
        self.pos = np.asarray(kin.pose.translation, dtype=float) + p["initial_position_sigma_m"] * rng.standard_normal(3)
        self.vel = np.asarray(kin.velocity, dtype=float) + p["initial_velocity_sigma_m_s"] * rng.standard_normal(3)
        self.C = (Rotation.from_rotvec(d_att) * kin.pose.rotation).as_matrix()
        self.bg = np.zeros(3)
        self.ba = np.zeros(3)
        sig = np.concatenate([np.full(3, p["initial_position_sigma_m"]), np.full(3, p["initial_velocity_sigma_m_s"]),
                              np.full(3, np.radians(p["initial_attitude_sigma_deg"])),
                              np.full(3, p["initial_gyro_bias_sigma_rad_s"]),
                              np.full(3, p["initial_accel_bias_sigma_m_s2"])])
        self.P = np.diag(np.maximum(sig, 1e-12) ** 2)
        self._t = float(t)

    def _on_imu(self, msg: SensorData) -> None:
        t = float(msg.frame_time_s)
        w_m = np.asarray(msg.data["angular_rate"], dtype=float)
        f_m = np.asarray(msg.data["specific_force"], dtype=float)
        if self._t is None:
            self._init(t)
            self._last = (w_m, f_m)
            return
        dt = t - self._t
        if dt <= 0:
            return
        p = self.params
        # the sample at the start of the interval holds over it (rectangle rule): exact for the
        # vehicle model, whose steering and acceleration change only at its steps, which are
        # IMU sample times; first order in dt for smooth motion
        w_avg, f_avg = self._last
        self._last = (w_m, f_m)
        w = w_avg - self.bg - self.C.T @ self._w_ie
        f_b = f_avg - self.ba
        C0 = self.C
        self.C = C0 @ Rotation.from_rotvec(w * dt).as_matrix()
        f_n = 0.5 * (C0 + self.C) @ f_b
        a = f_n - 2.0 * np.cross(self._w_ie, self.vel) + self._g
        v0 = self.vel
        self.vel = v0 + a * dt
        self.pos = self.pos + 0.5 * (v0 + self.vel) * dt
        F = np.zeros((15, 15))
        F[0:3, 3:6] = np.eye(3)
        F[3:6, 6:9] = -_skew(f_n)
        F[3:6, 12:15] = -self.C
        F[6:9, 9:12] = -self.C
        Phi = np.eye(15) + F * dt
        Q = np.zeros((15, 15))
        Q[3:6, 3:6] = np.eye(3) * p["accel_noise_density_m_s2_rthz"] ** 2 * dt
        Q[6:9, 6:9] = np.eye(3) * p["gyro_noise_density_rad_s_rthz"] ** 2 * dt
        Q[9:12, 9:12] = np.eye(3) * p["gyro_random_walk_rad_s2_rthz"] ** 2 * dt
        Q[12:15, 12:15] = np.eye(3) * p["accel_random_walk_m_s3_rthz"] ** 2 * dt
        self.P = Phi @ self.P @ Phi.T + Q
        self._t = t

    def _on_fix(self, msg: SensorData) -> None:
        import pymap3d
        if self._t is None:
            return
        pos = np.asarray(msg.data.get("position_ecef", np.full(3, np.nan)), dtype=float).reshape(-1, 3)[-1]
        if not np.all(np.isfinite(pos)):
            return
        o = self.ctx.origin
        z_fix = np.array(pymap3d.ecef2enu(pos[0], pos[1], pos[2], o["lat_deg"], o["lon_deg"], o["height_m"]))
        lever_n = self.C @ self._lever
        H = np.zeros((3, 15))
        H[:, 0:3] = np.eye(3)
        H[:, 6:9] = -_skew(lever_n)
        R = np.diag(np.asarray(self.params["fix_sigma_m"], dtype=float) ** 2)
        self._update(H, R, z_fix - (self.pos + lever_n))
        self._fixes += 1
        self._new_fix = z_fix

    def _update(self, H, R, innov) -> None:
        """Kalman update of the error state (Joseph form), fed back and reset."""
        S = H @ self.P @ H.T + R
        K = self.P @ H.T @ np.linalg.inv(S)
        dx = K @ innov
        IKH = np.eye(15) - K @ H
        self.P = IKH @ self.P @ IKH.T + K @ R @ K.T
        self.pos = self.pos + dx[0:3]
        self.vel = self.vel + dx[3:6]
        self.C = Rotation.from_rotvec(dx[6:9]).as_matrix() @ self.C
        self.bg = self.bg + dx[9:12]
        self.ba = self.ba + dx[12:15]

    def _motion_constraint(self) -> None:
        """Land vehicle: sideways and vertical velocity zero in the IMU axes (Groves 2013,
        sec. 15.4.1): ``h = [e_y, e_z]^T C^T v``, ``dh = C^T dv + C^T [v]x dth``."""
        sigma = self.params["nonholonomic_sigma_m_s"]
        if sigma <= 0 or self._t is None:
            return
        CT = self.C.T
        H = np.zeros((2, 15))
        H[:, 3:6] = CT[1:3]
        H[:, 6:9] = (CT @ _skew(self.vel))[1:3]
        self._update(H, np.eye(2) * sigma ** 2, -(CT @ self.vel)[1:3])

    def coords(self):
        return {"xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1", "scene axis (east, north, up)")}

    def step(self, k, t):
        self._motion_constraint()
        nan3 = np.full(3, np.nan)
        fix, self._new_fix = self._new_fix, None
        truth = self.ctx.scene.kinematics_at(self.params["imu"], float(t))
        t_rpy = truth.pose.rotation.as_euler("xyz", degrees=True)
        if self._t is None:
            est = dict(position=nan3, velocity=nan3, rpy=nan3, yaw=np.nan, sig=np.full(15, np.nan), bg=nan3, ba=nan3)
        else:
            rot = Rotation.from_matrix(self.C)
            fwd = rot.apply([1.0, 0.0, 0.0])
            est = dict(position=self.pos.copy(), velocity=self.vel.copy(), rpy=rot.as_euler("xyz", degrees=True),
                       yaw=float(np.arctan2(fwd[1], fwd[0])), sig=np.sqrt(np.diag(self.P)), bg=self.bg.copy(),
                       ba=self.ba.copy())
        fwd_t = truth.pose.rotation.apply([1.0, 0.0, 0.0])
        return {
            "position": Var(("xyz",), est["position"], "m", "estimated IMU position, scene frame"),
            "velocity": Var(("xyz",), est["velocity"], "m/s", "estimated velocity, scene frame"),
            "rpy_deg": Var(("xyz",), est["rpy"], "degree", "estimated roll, pitch, yaw (extrinsic xyz)"),
            "yaw": Var((), np.float64(est["yaw"]), "rad", "estimated heading of the IMU's x axis"),
            "position_sigma": Var(("xyz",), est["sig"][0:3], "m", "1-sigma of the position estimate"),
            "velocity_sigma": Var(("xyz",), est["sig"][3:6], "m/s", "1-sigma of the velocity estimate"),
            "attitude_sigma": Var(("xyz",), np.degrees(est["sig"][6:9]), "degree", "1-sigma of the attitude"),
            "gyro_bias": Var(("xyz",), est["bg"], "rad/s", "estimated gyro bias, sensor axes"),
            "accel_bias": Var(("xyz",), est["ba"], "m/s2", "estimated accelerometer bias, sensor axes"),
            "position_true": Var(("xyz",), np.asarray(truth.pose.translation, dtype=float), "m",
                                 "true IMU position, scene frame"),
            "yaw_true": Var((), np.float64(np.arctan2(fwd_t[1], fwd_t[0])), "rad", "true heading"),
            "rpy_deg_true": Var(("xyz",), t_rpy, "degree", "true roll, pitch, yaw"),
            "fixes_used": Var((), np.int32(self._fixes), "1", "GNSS fixes used so far"),
            "fix": Var(("xyz",), nan3 if fix is None else fix, "m",
                       "antenna position of the GNSS fix used since the previous frame, scene frame (NaN: none)"),
        }
