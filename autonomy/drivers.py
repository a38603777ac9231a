"""Autonomous drivers: models that read the bus and command a vehicle (``[[models]]``).

- :class:`WaypointDriver` (``waypoint_driver``): pure pursuit through a list of waypoints,
  following the pose the navigation it is given perceives (the truth, or a GPS receiver's
  fixes), so navigation errors show in the path driven.

References
----------
R. C. Coulter, "Implementation of the Pure Pursuit Path Tracking Algorithm", Carnegie Mellon
University, CMU-RI-TR-92-01, 1992.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hifi.api.bus import Command, SensorData
from hifi.api.model import Model, Var
from hifi.api.params import Param


def pure_pursuit_steer(x, y, yaw, target_xy, wheelbase_m):
    """Front-wheel steering angle [rad] that puts the rear axle on the arc through the target.

    Coulter (1992): the arc through the vehicle's rear axle, tangent to its heading, through a
    point at distance ``l`` seen at angle ``alpha`` off the heading has curvature
    ``2 sin(alpha) / l``; the bicycle's steering for it is ``atan(L * curvature)``.
    """
    dx, dy = target_xy[0] - x, target_xy[1] - y
    dist = float(np.hypot(dx, dy))
    if dist < 1e-9:
        return 0.0
    alpha = np.arctan2(dy, dx) - yaw
    alpha = (alpha + np.pi) % (2.0 * np.pi) - np.pi
    return float(np.arctan(2.0 * wheelbase_m * np.sin(alpha) / dist))


class WaypointDriver(Model):
    """Drives a ``vehicle`` body through ``waypoints_m`` with pure pursuit (Coulter 1992).

    At each step it takes the body's pose as ``navigation`` perceives it (``"truth"``: the
    scene's pose; the name of a GPS receiver model: its last fix in the scene frame, heading
    from the last two fixes at least ``min_heading_baseline_m`` apart), advances to the next
    waypoint once within ``tolerance_m`` of the current one, aims at the point ``lookahead_m``
    ahead on the segment to the current waypoint (the waypoint itself when nearer), and
    publishes a ``drive`` :class:`~hifi.api.bus.Command` for the body: ``speed_m_s``, slowing to
    stop at the last waypoint (``v <= sqrt(2 a d)`` with the vehicle's ``max_accel_m_s2``), and
    the pure-pursuit steering. Dataset per step: the perceived and the true position and
    heading, the current waypoint, the command.
    """

    model_name: ClassVar[str] = "waypoint_driver"
    default_rate_hz: ClassVar[float] = 20.0
    #: A closed-loop model: its output depends on earlier frames (no time partition).
    closed_loop: ClassVar[bool] = True
    PARAMS: ClassVar[dict] = {
        "body": Param("str", doc="the vehicle object it drives"),
        "waypoints_m": Param("any", doc="[[x, y], ...] in the scene frame [m]"),
        "speed_m_s": Param("float", default=2.0, minimum=0.0, exclusive_minimum=True, doc="cruise speed [m/s]"),
        "navigation": Param("str", default="truth",
                            doc="'truth' (the scene's pose), the name of a GPS receiver whose fixes it follows "
                                "(heading from successive fixes) or of an ins model whose estimate it follows"),
        "lookahead_m": Param("float", default=3.0, minimum=0.0, exclusive_minimum=True,
                             doc="pure-pursuit look-ahead distance [m] (Coulter 1992: about 1-2 s of travel)"),
        "tolerance_m": Param("float", default=1.0, minimum=0.0, exclusive_minimum=True,
                             doc="a waypoint counts as reached within this distance [m]"),
        "min_heading_baseline_m": Param("float", default=0.5, minimum=0.0, exclusive_minimum=True,
                                        doc="GPS navigation: heading from fixes at least this far apart [m]"),
    }

    @classmethod
    def check_params(cls, p):
        wp = p["waypoints_m"]
        try:
            arr = np.asarray(wp, dtype=float)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1 or not np.all(np.isfinite(arr)):
            raise ValueError(f"waypoints_m: expected a list of [x, y] pairs of finite numbers [m], got {wp!r}")
        return p

    @classmethod
    def check_references(cls, p, *, names, vehicles):
        if p["body"] not in vehicles:
            raise ValueError(f"body: {p['body']!r} is not a vehicle object; vehicles: "
                             f"{', '.join(sorted(vehicles)) or 'none (give an object vehicle = {})'}")
        nav = p["navigation"]
        if nav != "truth" and names.get(nav) not in ("sensors", "models"):
            raise ValueError(f"navigation: {nav!r} is neither 'truth' nor a sensor or model of this scenario")

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        self._wp = np.asarray(p["waypoints_m"], dtype=float)
        self._index = 0
        self._fixes: list[tuple[float, np.ndarray]] = []
        self._heading = None
        track = ctx.scene.bodies[p["body"]].local
        self._wheelbase = track.wheelbase_m
        self._max_accel = None
        if p["navigation"] != "truth":
            ctx.bus.subscribe(self._on_fix, SensorData, sender=p["navigation"])

    def _on_fix(self, msg: SensorData) -> None:
        """A navigation message: an INS estimate (``position``, ``yaw``, scene frame) or a GPS
        receiver's solution (``position_ecef`` to the scene frame, ENU at the origin)."""
        import pymap3d
        if "yaw" in msg.data and "position" in msg.data:              # an INS (autonomy.ins)
            pos = np.asarray(msg.data["position"], dtype=float)
            if np.all(np.isfinite(pos[:2])) and np.isfinite(msg.data["yaw"]):
                self._last_fix = pos[:2].copy()
                self._heading = float(msg.data["yaw"])
            return
        pos = np.asarray(msg.data.get("position_ecef", np.full(3, np.nan)), dtype=float).reshape(-1, 3)[-1]
        if not np.all(np.isfinite(pos)):
            return
        o = self.ctx.origin
        e, n, u = pymap3d.ecef2enu(pos[0], pos[1], pos[2], o["lat_deg"], o["lon_deg"], o["height_m"])
        xy = np.array([e, n], dtype=float)
        if self._fixes and np.hypot(*(xy - self._fixes[-1][1])) >= self.params["min_heading_baseline_m"]:
            d = xy - self._fixes[-1][1]
            self._heading = float(np.arctan2(d[1], d[0]))
            self._fixes.append((msg.time_s, xy))
        elif not self._fixes:
            self._fixes.append((msg.time_s, xy))
        self._last_fix = xy

    def _perceived(self, t, true_xy, true_yaw):
        if self.params["navigation"] == "truth":
            return true_xy, true_yaw
        xy = getattr(self, "_last_fix", None)
        if xy is None:
            return None, None
        return xy, (self._heading if self._heading is not None else np.nan)

    def step(self, k, t):
        p = self.params
        pose = self.ctx.scene.pose_at(p["body"], t)
        true_xy = np.asarray(pose.translation[:2], dtype=float)
        fwd = pose.rotation.apply([1.0, 0.0, 0.0])
        true_yaw = float(np.arctan2(fwd[1], fwd[0]))
        xy, yaw = self._perceived(t, true_xy, true_yaw)
        speed = steer = 0.0
        if xy is not None and np.isfinite(yaw if yaw is not None else np.nan):
            while self._index < len(self._wp) and np.hypot(*(self._wp[self._index] - xy)) < p["tolerance_m"]:
                self._index += 1
            if self._index < len(self._wp):
                goal = self._wp[self._index]
                d = float(np.hypot(*(goal - xy)))
                target = goal if d <= p["lookahead_m"] else xy + (goal - xy) * (p["lookahead_m"] / d)
                steer = pure_pursuit_steer(xy[0], xy[1], yaw, target, self._wheelbase)
                remaining = d + float(np.sum(np.hypot(*np.diff(self._wp[self._index:], axis=0).T))) \
                    if self._index + 1 < len(self._wp) else d
                accel = self.ctx.scene.bodies[p["body"]].local.max_accel_m_s2
                speed = float(min(p["speed_m_s"], np.sqrt(2.0 * accel * max(remaining - 0.5 * p["tolerance_m"], 0.0))))
        elif xy is not None:                    # a fix but no heading yet: creep straight ahead to get one
            speed = min(p["speed_m_s"], 0.5)
        self.ctx.bus.publish(Command(self.name, t, target=p["body"], name="drive",
                                     value={"speed_m_s": speed, "steer_deg": float(np.degrees(steer))}))
        nan2 = np.full(2, np.nan)
        return {
            "position_perceived": Var(("xy",), np.asarray(xy if xy is not None else nan2, dtype=float), "m",
                                      "body position as the navigation perceives it, scene frame"),
            "yaw_perceived": Var((), np.float64(yaw if yaw is not None else np.nan), "rad",
                                 "heading as the navigation perceives it"),
            "position_true": Var(("xy",), true_xy, "m", "true body position, scene frame"),
            "yaw_true": Var((), np.float64(true_yaw), "rad", "true heading"),
            "waypoint": Var((), np.int32(self._index), "1", "index of the waypoint being driven to (n: all reached)"),
            "speed_command": Var((), np.float64(speed), "m/s", "commanded speed"),
            "steer_command": Var((), np.float64(steer), "rad", "commanded steering angle"),
        }

    def coords(self):
        return {"xy": Var(("xy",), np.array(["x", "y"]), "1", "scene axis")}
