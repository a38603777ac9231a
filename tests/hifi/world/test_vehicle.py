"""The driven vehicle (hifi.world.vehicle): a drivable body (kinematic bicycle) commanded over
the bus, and an IMU riding on it.

Expected values: the kinematic bicycle's closed forms (Rajamani 2012, sec. 2.2): constant
acceleration, circles of radius L / tan(delta); a ramp's height and pitch from its angle; the
command timing the Vehicle documents.
"""

from __future__ import annotations

import numpy as np
import pytest

import hifi
from hifi.api.bus import Command
from hifi.api.model import Model
from hifi.world.vehicle import bicycle_step


class Commander(Model):
    """Publishes the ``drive`` commands of ``schedule`` [(t_s, speed_m_s, steer_deg)] at its rate."""

    model_name = "commander"
    writes_dataset = False

    def __init__(self, name, target, schedule, rate_hz=10.0):
        super().__init__(name, {}, rate_hz=rate_hz)
        self.target, self.schedule = target, schedule

    def step(self, k, t):
        for ts, v, steer in self.schedule:
            if abs(ts - t) < 1e-12:
                self.ctx.bus.publish(Command(self.name, t, target=self.target, name="drive",
                                             value={"speed_m_s": v, "steer_deg": steer}))
        return None


def _scene(vehicle=None, duration=4.0, ground=None, sensors=(), models=()):
    objects = [ground or {"name": "ground", "mesh": "plane", "size_m": [400, 400]},
               {"name": "car", "mesh": "car", "vehicle": vehicle or {}}]
    return {"simulation": {"duration_s": duration, "seed": 3}, "objects": objects,
            "sensors": list(sensors), "models": list(models)}


def _run(d, schedule):
    sim = hifi.Simulation.from_dict(d)
    sim.add_model(Commander("cmd", "car", schedule))
    return sim.run(out=None)


def test_straight_acceleration_matches_the_closed_form():
    # 2 m/s commanded at t = 0 with a 3 m/s^2 limit: the speed ramps for 2/3 s, then holds;
    # distance at 4 s = 2 * 4 - 2^2 / (2 * 3) = 7.3333 m. The command published at t = 0 acts
    # from the vehicle's first step after 0 (t = 0.02 at 50 Hz), so the run is 0.02 s late:
    # 2 * (4 - 0.02) - 2 / 3 = 7.2933 m (analytic).
    out = _run(_scene(), [(0.0, 2.0, 0.0)])
    car = out["car"]
    assert car.speed_command.values[0] == 0.0 and car.speed_command.values[1] == 2.0
    x_end = float(car.position.values[-1, 0])
    # the dataset's last row is the state at the last step (3.98 s), before its own step; the
    # step in which the speed reaches 2 m/s moves at its mean speed, off the continuous ramp by
    # at most a dt^2 / 8 = 3 * 0.02^2 / 8 = 1.5e-4 m (analytic)
    assert x_end == pytest.approx(2.0 * (3.98 - 0.02) - 2.0 / 3.0, abs=1.5e-4)
    np.testing.assert_allclose(car.position.values[:, 1], 0.0, atol=1e-12)


def test_constant_steering_drives_a_circle_of_radius_l_over_tan_delta():
    # L = 2.7 m, delta = 20 deg: R = 2.7 / tan(20 deg) = 7.4182 m (analytic). After the speed is
    # reached every position lies on the circle through the start, centred R to the left.
    L, delta = 2.7, 20.0
    out = _run(_scene({"wheelbase_m": L, "follow_ground": False}, duration=12.0), [(0.0, 3.0, delta)])
    p = out["car"].position.values[:, :2]
    R = L / np.tan(np.radians(delta))
    r = np.hypot(p[:, 0] - 0.0, p[:, 1] - R)
    np.testing.assert_allclose(r, R, rtol=1e-9)
    assert np.ptp(p[:, 0]) > 1.9 * R                    # more than half the circle driven
    # bicycle_step agrees with a fine Euler integration of x' = v cos psi, y' = v sin psi,
    # psi' = v tan(delta) / L (independent integration, 1e5 steps)
    x = y = psi = 0.0
    for _ in range(100_000):
        x, y, psi = x + 3e-5 * np.cos(psi), y + 3e-5 * np.sin(psi), psi + 3e-5 * np.tan(np.radians(delta)) / L
    xe, ye, pe = bicycle_step(0.0, 0.0, 0.0, 3.0, np.radians(delta), 1.0, L)
    assert (xe, ye, pe) == pytest.approx((x, y, psi), abs=1e-4)


def test_command_acts_from_the_first_step_after_it():
    # A stop command at t = 1.0 (the commander's step): the vehicle step at 1.0 still uses the
    # earlier command; the one at 1.02 decelerates.
    out = _run(_scene(duration=1.2), [(0.0, 2.0, 0.0), (1.0, 0.0, 0.0)])
    car = out["car"]
    t = np.round(car.frame_time.values.astype(float) if np.issubdtype(car.frame_time.dtype, np.floating)
                 else (car.frame_time.values - car.frame_time.values[0]) / np.timedelta64(1, "s"), 6)
    cmd = dict(zip(t, car.speed_command.values))
    assert cmd[1.0] == 2.0 and cmd[1.02] == 0.0


def test_follows_a_ramp():
    # A plane tilted 10 deg about y (rising toward +x): the car driving along x sits on it,
    # z = x tan 10 deg and pitched 10 deg nose up (analytic), once it is on the slope.
    ramp = {"name": "ground", "mesh": "plane", "size_m": [400, 400], "rpy_deg": [0, -10, 0]}
    out = _run(_scene(duration=3.0, ground=ramp), [(0.0, 2.0, 0.0)])
    pose = out["motion"]
    car = out["car"]
    x, z = car.position.values[-1, 0], car.position.values[-1, 2]
    assert x > 3.0
    assert z == pytest.approx(x * np.tan(np.radians(10.0)), abs=1e-3)
    body = list(pose["body"].values).index("car")
    rpy = pose.rpy_deg.values[-1, body]
    assert rpy[1] == pytest.approx(-10.0, abs=0.05)        # extrinsic y: nose up is negative pitch


def test_imu_on_a_vehicle_reads_the_driven_circle():
    # Constant steering 20 deg at 3 m/s, L = 2.7 m: yaw rate v tan(delta) / L = 0.40437 rad/s and
    # centripetal acceleration v^2 tan(delta) / L = 1.21312 m/s^2 toward the left (+y, body
    # axes), analytic; the gyro adds the Earth rate's vertical part, 7.292115e-5 sin(lat)
    # (WGS 84), since the car stays level.
    lat = 47.8
    d = _scene({"wheelbase_m": 2.7, "follow_ground": False}, duration=3.0,
               sensors=[{"name": "imu", "model": "imu", "parent": "car", "params": {"preset": "ideal"}}])
    d["simulation"]["origin"] = {"lat_deg": lat, "lon_deg": 13.0, "height_m": 0.0}
    out = _run(d, [(0.0, 3.0, 20.0)])
    imu = out["imu"]
    late = imu.timestamp.values.astype(float) > 1.5 if np.issubdtype(imu.timestamp.dtype, np.floating) else \
        (imu.timestamp.values - imu.timestamp.values[0]) / np.timedelta64(1, "s") > 1.5
    k = np.tan(np.radians(20.0)) / 2.7
    w = imu.angular_rate_true.values[late]
    np.testing.assert_allclose(w[:, 2], 3.0 * k + 7.292115e-5 * np.sin(np.radians(lat)), atol=1e-6)
    f = imu.specific_force_true.values[late]
    np.testing.assert_allclose(f[:, 1], 9.0 * k, atol=2e-3)          # + the Coriolis term, < 1e-3
    np.testing.assert_allclose(f[:, 0], 0.0, atol=2e-3)
