"""A drivable body: a kinematic bicycle that follows the ground, steered by ``Command`` messages.

An ``[[objects]]`` entry with ``vehicle = { ... }`` instead of a ``track`` becomes a body whose
pose is integrated during the run by a :class:`Vehicle` model of the same name, from the last
``drive`` command on the bus (:class:`hifi.api.bus.Command` with ``target`` = the object's name).
Its motion is a :class:`VehicleTrack`, so sensors, the caster and ``motion.nc`` see it as any
moving body.

References
----------
R. Rajamani, *Vehicle Dynamics and Control*, 2nd ed., Springer 2012, sec. 2.2 (kinematic
bicycle model, reference point on the rear axle).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.spatial.transform import Rotation

from ..api.bus import Command
from ..api.model import Model, Var
from .motion import Kinematics, Pose, Track
from ..api.params import Param

#: ``vehicle = { ... }`` keys: a mid-size car by default (``vehicle = {}``).
VEHICLE_PARAMS = {
    "wheelbase_m": Param("float", default=2.7, minimum=0.0, exclusive_minimum=True,
                         doc="distance between the axles [m] (2.7 m: a mid-size car, e.g. the VW Golf VIII's 2.64 m, "
                             "Toyota Camry's 2.83 m)"),
    "max_steer_deg": Param("float", default=35.0, minimum=0.0, exclusive_minimum=True, maximum=89.0,
                           doc="largest front-wheel steering angle [deg] (35: a passenger car's lock, turning circle "
                               "about 2 L / tan 35 = 7.7 m radius)"),
    "max_speed_m_s": Param("float", default=15.0, minimum=0.0, exclusive_minimum=True,
                           doc="speed limit of the body [m/s] (commands above it are clipped)"),
    "max_accel_m_s2": Param("float", default=3.0, minimum=0.0, exclusive_minimum=True,
                            doc="largest acceleration and deceleration [m/s^2] (3: brisk urban driving)"),
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


class VehicleTrack(Track):
    """The motion of a driven body: the states a :class:`Vehicle` integrates, as a track.

    States are recorded at the vehicle's steps (time, position, yaw, roll, pitch, speed,
    steering). Between two states the pose follows the exact bicycle arc from the earlier one
    (so the path between steps is the driven one, not a chord); beyond the last state it is
    extrapolated with the speed and steering in force. Before the first step the body rests at
    its start pose.

    Its :meth:`kinematics` are the arc's: velocity along the heading, the centripetal
    acceleration ``v^2 kappa``, the yaw rate ``v kappa``; the speed changes between steps
    (``max_accel_m_s2``) and the ground's slopes are steps in them, so an IMU on a vehicle reads
    a piecewise-constant acceleration along its path (twice differentiable within each step).
    """

    #: The arc is smooth within a step (an IMU may ride on a vehicle; see :meth:`kinematics`).
    twice_differentiable = True
    #: Its future is made during the run: models that look ahead (the IMU's blocks) must not
    #: (:meth:`hifi.world.scene.Scene.rides_on_driven_body` reads this).
    driven = True
    interpolation = "vehicle"

    def __init__(self, position_m, yaw_rad: float, wheelbase_m: float, reach_m: float, max_accel_m_s2: float = 3.0,
                 max_speed_m_s: float = 15.0):
        self.wheelbase_m = float(wheelbase_m)
        self.max_accel_m_s2 = float(max_accel_m_s2)
        self.max_speed_m_s = float(max_speed_m_s)
        # States in arrays that grow by doubling (pose queries read them at every cast, so no
        # list-to-array conversion per query): rows x y z yaw roll pitch v steer accel.
        self._n = 1
        self._tt = np.zeros(64)
        self._st = np.zeros((64, 9))
        self._st[0, :4] = (float(position_m[0]), float(position_m[1]), float(position_m[2]), float(yaw_rad))
        self._start = np.asarray(position_m, dtype=float)
        self._reach = float(reach_m)
        self._slerp = None

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
        farthest it can drive in the run (``max_speed_m_s`` x duration)."""
        return float(np.linalg.norm(self._start)) + self._reach

    def hull_points(self, t_min: float, t_max: float) -> np.ndarray:
        """Points whose hull holds the origin's path over ``[t_min, t_max]``: the position at
        ``t_min`` and the six points ``max_speed_m_s (t_max - t_min)`` away along the axes (the
        farthest the body can get, whatever it is commanded; the ball through them holds the
        path, which is what the caster's cull needs)."""
        p0 = self.at(float(t_min)).translation
        s = self.max_speed_m_s * max(float(t_max) - float(t_min), 0.0) + 1e-6
        return np.vstack([p0, p0 + np.vstack([np.eye(3), -np.eye(3)]) * s])

    def record(self, t_s: float, x, y, z, yaw, roll, pitch, v, steer, accel=0.0) -> None:
        """Append the state at ``t_s`` [s] (after the last one)."""
        last = self._tt[self._n - 1]
        if t_s <= last:
            raise ValueError(f"vehicle states must advance in time: {t_s} after {last}")
        if self._n == self._tt.size:
            self._tt = np.concatenate([self._tt, np.zeros(self._n)])
            self._st = np.concatenate([self._st, np.zeros((self._n, 9))])
        self._tt[self._n] = t_s
        self._st[self._n] = (x, y, z, yaw, roll, pitch, v, steer, accel)
        self._n += 1

    def set_motion(self, v, steer, accel) -> None:
        """Speed [m/s], steering [rad] and acceleration [m/s^2] of the last state: the arc
        driven from it to the next."""
        self._st[self._n - 1, 6:9] = (v, steer, accel)

    def state(self):
        """``(t, (x, y, z, yaw, roll, pitch, v, steer, accel))`` of the last state."""
        return float(self._tt[self._n - 1]), tuple(float(a) for a in self._st[self._n - 1])

    def kinematics(self, t1) -> Kinematics:
        """Pose, velocity, acceleration, angular rate and angular acceleration at times ``t1``
        (n,) [s], scene axes (the body has no parent)."""
        t1 = np.atleast_1d(np.asarray(t1, dtype=float))
        pose = self.at(t1)
        times, st = self._tt[:self._n], self._st[:self._n]
        i = np.clip(np.searchsorted(times, t1, side="right") - 1, 0, self._n - 1)
        yaw0, v0, d0, a0 = st[i, 3], st[i, 6], st[i, 7], st[i, 8]
        k = np.tan(d0) / self.wheelbase_m
        dt = np.maximum(t1 - times[i], 0.0)
        v = v0 + a0 * dt
        yaw = yaw0 + k * (v0 * dt + 0.5 * a0 * dt * dt)
        zero = np.zeros_like(t1)
        heading = np.column_stack([np.cos(yaw), np.sin(yaw), zero])
        normal = np.column_stack([-np.sin(yaw), np.cos(yaw), zero])
        return Kinematics(pose, v[:, None] * heading, a0[:, None] * heading + (v ** 2 * k)[:, None] * normal,
                          np.column_stack([zero, zero, v * k]), np.column_stack([zero, zero, a0 * k]))

    def at(self, t_s) -> Pose:
        t = np.asarray(t_s, dtype=float)
        scalar = t.ndim == 0
        t1 = np.atleast_1d(t)
        times, st = self._tt[:self._n], self._st[:self._n]
        i = np.clip(np.searchsorted(times, t1, side="right") - 1, 0, self._n - 1)
        x0, y0, z0, yaw0, roll0, pitch0, v0, d0, a0 = (st[i, j] for j in range(9))
        dt = np.maximum(t1 - times[i], 0.0)
        # the arc from state i: its steering held, its speed changing at its acceleration
        k = np.tan(d0) / self.wheelbase_m
        s = v0 * dt + 0.5 * a0 * dt * dt
        yaw = yaw0 + k * s
        straight = np.abs(k * s) < 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(straight, x0 + s * np.cos(yaw0), x0 + (np.sin(yaw) - np.sin(yaw0)) / np.where(straight, 1, k))
            y = np.where(straight, y0 + s * np.sin(yaw0), y0 - (np.cos(yaw) - np.cos(yaw0)) / np.where(straight, 1, k))
        # height, roll, pitch: linear towards the next state (the ground found there)
        j = np.minimum(i + 1, len(times) - 1)
        span = np.where(j > i, times[j] - times[i], 1.0)
        w = np.where(j > i, np.clip(dt / span, 0.0, 1.0), 0.0)
        z = z0 + w * (st[j, 2] - z0)
        roll = roll0 + w * (st[j, 4] - roll0)
        pitch = pitch0 + w * (st[j, 5] - pitch0)
        rot = Rotation.from_euler("ZYX", np.column_stack([yaw, pitch, roll]))
        pos = np.column_stack([x, y, z])
        if scalar:
            return Pose(rot[0], pos[0])
        return Pose(rot, pos)


class Vehicle(Model):
    """Integrates a driven body's pose from ``drive`` commands (one per ``vehicle`` object).

    Commands: :class:`hifi.api.bus.Command` with ``target`` the object's name and ``name``
    ``"drive"``, value ``{"speed_m_s": v, "steer_deg": delta}`` (speed clipped to
    ``max_speed_m_s``, steering to ``max_steer_deg``). A command published at time t acts from
    the vehicle's first step after t (strictly): the step at t_k uses the latest command with
    ``time_s < t_k``. The speed moves toward the commanded one at no more than
    ``max_accel_m_s2``; over a step the body follows the bicycle arc of its steering at a
    constant acceleration (arc length ``v dt + a dt^2 / 2``, :func:`bicycle_step` at the step's
    mean speed), so the velocity, acceleration and yaw rate an IMU on it reads are the path's. With ``follow_ground`` the body is then set on the
    surface under its new position (a ray cast down from :data:`GROUND_PROBE_UP_M` above its
    wheels, through the body's own faces): height from the hit, roll and pitch from the surface
    normal.

    Steps run before every other model at equal times (priority -1), so sensors casting at a
    step's time see the body's pose to the next step; rays later than that see it extrapolated
    with the command in force (a command arriving within a sweep changes the path only from the
    vehicle's next step on). Dataset per step: ``position`` [m], ``yaw`` [rad], ``speed`` [m/s],
    ``steer`` [rad], commanded speed and steering.
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
        super().__init__(name, params, rate_hz=params["rate_hz"])
        self.track = track
        self._commands: list[Command] = []

    def setup(self, ctx):
        super().setup(ctx)
        ctx.bus.subscribe(self._on_command, target=self.name)
        self._v = 0.0
        self._cmd = (0.0, 0.0)

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

    def step(self, k, t):
        p = self.params
        t_next = self.event_time(k + 1)                  # k / rate: no drift from summing steps
        dt = t_next - t
        v_cmd, steer = self._command_at(t)
        t0, (x, y, z, yaw, roll, pitch, v, _, _) = self.track.state()
        if t0 != t:                    # the state at t: the previous step's arc, recorded as it was
            raise RuntimeError(f"vehicle {self.name!r} missed a step: state at {t0}, step at {t}")
        dv = float(np.clip(v_cmd - v, -p["max_accel_m_s2"] * dt, p["max_accel_m_s2"] * dt))
        v_mean = v + 0.5 * dv
        # the state at t gets this step's steering and acceleration, so the arc to t + dt is the
        # one driven: arc length v dt + a dt^2 / 2 = v_mean dt
        self.track.set_motion(v, steer, dv / dt)
        x1, y1, yaw1 = bicycle_step(x, y, yaw, v_mean, steer, dt, self.track.wheelbase_m)
        z1, roll1, pitch1 = z, roll, pitch
        if p["follow_ground"]:
            z1, roll1, pitch1 = self._ground(x1, y1, z, yaw1, t_next, fallback=(z, roll, pitch))
        self.track.record(t_next, x1, y1, z1, yaw1, roll1, pitch1, v + dv, steer)
        return {
            "position": Var(("xyz",), np.array([x, y, z]), "m", "body origin (rear axle on the ground), scene frame"),
            "yaw": Var((), np.float64(yaw), "rad", "heading, counter-clockwise from the scene x axis"),
            "speed": Var((), np.float64(v), "m/s", "speed at the step"),
            "steer": Var((), np.float64(steer), "rad", "front-wheel steering angle over the step"),
            "speed_command": Var((), np.float64(v_cmd), "m/s", "commanded speed in force"),
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
