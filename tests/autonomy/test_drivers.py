"""Closed loop: a drivable body (kinematic bicycle) commanded over the bus,
the waypoint driver, [[models]], and what the loop forbids (time partitions).

Expected values: the kinematic bicycle's closed forms (Rajamani 2012, sec. 2.2): constant
acceleration, circles of radius L / tan(delta); a ramp's height and pitch from its angle; the
command timing the Vehicle documents.
"""

from __future__ import annotations

import numpy as np
import pytest

import hifi
from hifi.api.bus import Command
from hifi.errors import ScenarioError
from hifi.api.model import Model
from hifi.world.vehicle import bicycle_step

from conftest import REPO_ROOT


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


def test_waypoint_driver_reaches_every_waypoint():
    wps = [[12.0, 0.0], [12.0, 12.0], [0.0, 12.0]]
    d = _scene({"wheelbase_m": 2.7}, duration=25.0,
               models=[{"name": "driver", "model": "waypoint_driver",
                        "params": {"body": "car", "waypoints_m": wps, "speed_m_s": 3.0, "tolerance_m": 1.0}}])
    out = hifi.Simulation.from_dict(d).run(out=None)
    drv = out["driver"]
    assert int(drv.waypoint.values[-1]) == len(wps)
    path = drv.position_true.values
    for w in wps:
        assert np.min(np.hypot(*(path - w).T)) < 1.0, w
    assert abs(float(out["car"].speed.values[-1])) < 0.05       # stopped at the last one


def test_lidar_on_the_vehicle_is_deterministic_and_sees_the_road():
    d = _scene({"wheelbase_m": 2.7}, duration=1.0,
               sensors=[{"name": "lidar", "model": "vlp16", "parent": "car", "position_m": [0, 0, 1.9],
                         "params": {"azimuth_stride": 8}}],
               models=[{"name": "driver", "model": "waypoint_driver",
                        "params": {"body": "car", "waypoints_m": [[30.0, 5.0]], "speed_m_s": 5.0}}])
    a = hifi.Simulation.from_dict(d).run(out=None)
    b = hifi.Simulation.from_dict(d).run(out=None)
    for v in a["lidar"].data_vars:
        assert a["lidar"][v].values.tobytes() == b["lidar"][v].values.tobytes(), v
    # the sensor rides on the car: its position at the last frame is the car's plus the mount
    last = a["lidar"].isel(frame=-1)
    assert float(last.sensor_position.values[0]) > 0.3


def test_scenario_errors_name_the_key():
    base = _scene()
    bad = dict(base, objects=[base["objects"][0], {**base["objects"][1], "track": [
        {"t_s": 0.0, "position_m": [0, 0, 0]}, {"t_s": 1.0, "position_m": [1, 0, 0]}]}])
    with pytest.raises(ScenarioError, match=r"objects\[1\].vehicle"):
        hifi.Simulation.from_dict(bad)
    with pytest.raises(ScenarioError, match=r"objects\[1\].vehicle.wheelbase_m"):
        hifi.Simulation.from_dict(_scene({"wheelbase_m": -1.0}))
    with pytest.raises(ScenarioError, match=r"models\[0\].params.body"):
        hifi.Simulation.from_dict(_scene(models=[{"name": "d", "model": "waypoint_driver",
                                                   "params": {"body": "ground", "waypoints_m": [[1, 1]]}}]))
    with pytest.raises(ScenarioError, match=r"models\[0\].params.waypoints_m"):
        hifi.Simulation.from_dict(_scene(models=[{"name": "d", "model": "waypoint_driver",
                                                   "params": {"body": "car", "waypoints_m": [1, 2, 3]}}]))
    with pytest.raises(ScenarioError, match=r"models\[0\].model.*\[\[sensors\]\]"):
        hifi.Simulation.from_dict(_scene(models=[{"name": "d", "model": "vlp16"}]))
    with pytest.raises(ScenarioError, match=r"models\[0\].params.navigation"):
        hifi.Simulation.from_dict(_scene(models=[{"name": "d", "model": "waypoint_driver",
                                                   "params": {"body": "car", "waypoints_m": [[1, 1]],
                                                              "navigation": "nobody"}}]))


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


def test_driver_on_gps_fixes_shows_the_navigation_error_in_the_path():
    # The waypoint driver following a GPS receiver on the car (real broadcast orbits of GEONET
    # 0759, examples/data) instead of the truth: it still gets to the waypoint within its
    # tolerance plus the fix error, and its perceived position differs from the true one by the
    # receiver's error (about a metre open-sky: validation/gnss.md), so the path driven differs
    # from the truth-driven one.
    nav = REPO_ROOT / "examples" / "data" / "07590920.05n"

    def run(navigation):
        d = {"simulation": {"duration_s": 16.0, "seed": 2, "start_utc": "2005-04-02T00:10:00Z",
                            "origin": {"lat_deg": 35.1608750388, "lon_deg": 139.6138372528, "height_m": 70.153}},
             "objects": [{"name": "ground", "mesh": "plane", "size_m": [400, 400]},
                         {"name": "car", "mesh": "car", "vehicle": {}}],
             "sensors": [{"name": "gps", "model": "gps_l1", "rate_hz": 1.0, "parent": "car",
                          "position_m": [0, 0, 1.9], "params": {"nav_file": str(nav)}}],
             "models": [{"name": "driver", "model": "waypoint_driver",
                         "params": {"body": "car", "waypoints_m": [[25.0, 5.0]], "speed_m_s": 3.0,
                                    "navigation": navigation, "tolerance_m": 2.0}}]}
        return hifi.Simulation.from_dict(d).run(out=None)["driver"]
    gps, truth = run("gps"), run("truth")
    err = np.hypot(*(gps.position_perceived.values - gps.position_true.values).T)
    err = err[np.isfinite(err)]
    assert 0.05 < np.sqrt(np.mean(err ** 2)) < 5.0
    assert int(gps.waypoint.values[-1]) == 1
    assert np.hypot(*(gps.position_true.values[-1] - [25.0, 5.0])) < 2.0 + 5.0
    assert not np.allclose(gps.position_true.values, truth.position_true.values, atol=0.05)


def _ins_scene(duration, *, preset, gnss=True, navigation="nav", ins_params=None):
    nav = REPO_ROOT / "examples" / "data" / "07590920.05n"
    # The IMU on the rear axle (the vehicle's origin): the vehicle's steering changes at its
    # steps, so a point off the axle would see its velocity jump there (hifi.world.vehicle).
    sensors = [{"name": "imu", "model": "imu", "rate_hz": 100.0, "parent": "car", "position_m": [0.0, 0.0, 0.0],
                "params": {"preset": preset}}]
    params = {"imu": "imu", **(ins_params or {})}
    if gnss:
        sensors.append({"name": "gps", "model": "gps_l1", "rate_hz": 1.0, "parent": "car", "position_m": [0, 0, 1.9],
                        "params": {"nav_file": str(nav)}})
        params["gnss"] = "gps"
    return {"simulation": {"duration_s": duration, "seed": 2, "start_utc": "2005-04-02T00:10:00Z",
                           "origin": {"lat_deg": 35.1608750388, "lon_deg": 139.6138372528, "height_m": 70.153}},
            "objects": [{"name": "ground", "mesh": "plane", "size_m": [400, 400]},
                        {"name": "car", "mesh": "car", "vehicle": {}}],
            "sensors": sensors,
            "models": [{"name": "nav", "model": "ins", "params": params},
                       {"name": "driver", "model": "waypoint_driver",
                        "params": {"body": "car", "waypoints_m": [[15.0, 0.0], [15.0, 15.0]], "speed_m_s": 3.0,
                                   "navigation": navigation, "tolerance_m": 2.0}}]}


def test_ins_mechanisation_follows_an_ideal_imu_through_a_turn():
    # Free inertial, ideal IMU (no errors), no initial errors, no motion constraint: the
    # strapdown integration of autonomy.ins reproduces the driven path from the imu model's
    # readings (gravity, Earth rate and Coriolis as the imu model puts them in): within 5 cm
    # and 0.1 deg after 10 s through a turn (an independent integrator of the same physics;
    # exact but for rounding, since the vehicle's motion is piecewise constant in steering and
    # acceleration between IMU samples).
    zero = {"initial_position_sigma_m": 0.0, "initial_velocity_sigma_m_s": 0.0, "initial_attitude_sigma_deg": 0.0,
            "nonholonomic_sigma_m_s": 0.0}
    out = hifi.Simulation.from_dict(_ins_scene(10.0, preset="ideal", gnss=False, navigation="truth",
                                               ins_params=zero)).run(out=None)
    ins = out["nav"]
    err = np.linalg.norm(ins.position.values - ins.position_true.values, axis=1)
    assert np.nanmax(err) < 0.05, np.nanmax(err)
    yaw_err = np.angle(np.exp(1j * (ins.yaw.values - ins.yaw_true.values)))
    assert np.nanmax(np.abs(np.degrees(yaw_err))) < 0.1
    assert np.ptp(np.degrees(ins.yaw_true.values)) > 30.0           # the drive did turn


def test_gnss_aided_ins_is_consistent_and_drives_the_car():
    # ADIS16448 IMU (0.5 deg/s turn-on gyro bias) + GPS fixes at 1 Hz + the motion constraint;
    # the driver steers on the INS estimate. The position estimate stays within 3 of its own
    # sigma on most epochs and the heading error within 3 sigma of the filter's heading sigma
    # (a consistent filter; heading converges only over a longer drive), the waypoints are reached.
    out = hifi.Simulation.from_dict(_ins_scene(20.0, preset="adis16448")).run(out=None)
    ins = out["nav"]
    err = ins.position.values - ins.position_true.values
    sig = ins.position_sigma.values
    ok = np.isfinite(err).all(axis=1)
    assert np.mean(np.all(np.abs(err[ok]) < 3 * sig[ok], axis=1)) > 0.9
    assert int(ins.fixes_used.values[-1]) >= 15
    yaw_err = np.degrees(np.angle(np.exp(1j * (ins.yaw.values - ins.yaw_true.values))))
    yaw_sig = ins.attitude_sigma.values[:, 2]
    assert np.mean(np.abs(yaw_err[1:]) < 3 * yaw_sig[1:]) > 0.9
    assert int(out["driver"].waypoint.values[-1]) == 2


def test_hifi_plot_of_the_ins_draws_true_and_perceived_paths(tmp_path):
    pytest.importorskip("matplotlib", reason="hifi plot needs matplotlib (the viz extra)")
    import matplotlib.pyplot as plt
    from _plots import legend_texts, outside_figure
    from hifi.viz.plot import make_figure
    out = hifi.Simulation.from_dict(_ins_scene(6.0, preset="adis16448")).run(out=tmp_path / "run", progress=False)
    fig = make_figure(out["nav"])
    try:
        texts = legend_texts(fig)
        assert "true path" in texts and "perceived (INS estimate)" in texts
        n_fix = int(np.isfinite(out["nav"].fix.values).all(axis=1).sum())      # numpy count
        assert f"GNSS fixes used ({n_fix})" in texts and n_fix >= 5
        assert outside_figure(fig) == []
    finally:
        plt.close(fig)


def _planner_scene(duration=18.0):
    # A 14 m wall across the straight line from the start to the goal (x = 10 m, y -4 .. 10 m);
    # the planner knows it only from the VLP-16 on the car.
    return {"simulation": {"duration_s": duration, "seed": 1},
            "objects": [{"name": "ground", "mesh": "plane", "size_m": [100, 100]},
                        {"name": "wall", "mesh": "box", "size_m": [1.0, 14.0, 2.0], "position_m": [10.0, 3.0, 1.0]},
                        {"name": "car", "mesh": "car", "vehicle": {}}],
            "sensors": [{"name": "lidar", "model": "vlp16", "parent": "car", "position_m": [0, 0, 1.9],
                         "params": {"azimuth_stride": 4}}],
            "models": [{"name": "planner", "model": "gonogo_planner",
                        "params": {"body": "car", "sensors": ["lidar"], "goal_m": [20.0, 0.0], "speed_m_s": 2.0}}]}


def test_gonogo_planner_drives_around_a_wall_it_has_only_scanned():
    out = hifi.Simulation.from_dict(_planner_scene()).run(out=None)
    pl = out["planner"]
    path = out["car"].position.values[:, :2]
    # reaches the goal (within its 1.5 m tolerance)
    assert np.hypot(*(path[-1] - [20.0, 0.0])) < 1.5
    # the car's footprint (its mesh: 4.5 x 1.8 m about its origin) never overlaps the wall
    # (x 9.5 .. 10.5, y -4 .. 10): points on a 10 cm grid over the footprint, at every step
    yaw = out["car"].yaw.values
    u, v = np.meshgrid(np.linspace(-2.25, 2.25, 46), np.linspace(-0.9, 0.9, 19))
    u, v = u.ravel(), v.ravel()
    fx = path[:, 0, None] + np.cos(yaw)[:, None] * u - np.sin(yaw)[:, None] * v
    fy = path[:, 1, None] + np.sin(yaw)[:, None] * u + np.cos(yaw)[:, None] * v
    inside = (fx > 9.5) & (fx < 10.5) & (fy > -4.0) & (fy < 10.0)
    assert not inside.any()
    # the map marks the wall's cells no-go (cell centres within 1 m of the wall), and the path
    # planned at the first step after the wall was seen crosses none of them
    grid = pl["gonogo"].values[-1]
    xc, yc = np.meshgrid(pl.x.values, pl.y.values)
    on_wall = (np.abs(xc - 10.0) < 0.5) & (yc > -3.5) & (yc < 9.5)
    assert np.mean(grid[on_wall] == 1) > 0.5
    assert np.all(grid[(np.abs(xc) > 25) | (np.abs(yc) > 25)] != 1)     # no obstacle far off


def test_planner_scenario_errors():
    d = _planner_scene(1.0)
    d["models"][0]["params"]["sensors"] = ["nothing"]
    with pytest.raises(ScenarioError, match=r"models\[0\].params.sensors"):
        hifi.Simulation.from_dict(d)


def test_hifi_plot_of_the_planner_shows_map_and_path(tmp_path):
    pytest.importorskip("matplotlib", reason="hifi plot needs matplotlib (the viz extra)")
    import matplotlib.pyplot as plt
    from _plots import legend_texts, outside_figure
    from hifi.viz.plot import make_figure
    out = hifi.Simulation.from_dict(_planner_scene(3.0)).run(out=tmp_path / "run", progress=False)
    fig = make_figure(out["planner"])
    try:
        texts = legend_texts(fig)
        for label in ("planned path", "vehicle so far", "goal", "no-go", "go", "unknown"):
            assert label in texts, texts
        assert outside_figure(fig) == []
    finally:
        plt.close(fig)


def test_patrol_example_runs_its_first_seconds():
    # examples/patrol.toml, cut to 6 s: the scanners on the nodding mount see the town, the
    # planner maps no-go cells and drives, the INS uses the GPS fixes. (The whole 40 s run
    # reaches the goal: docs/closed_loop.md.)
    example = REPO_ROOT / "examples" / "patrol.toml"
    out = hifi.load(example).run(out=None, duration_s=6.0, progress=False)
    pl, ins = out["planner"], out["ins"]
    assert int((pl["gonogo"].values[-1] == 1).sum()) > 10
    assert float(out["robot"].position.values[-1, 0]) > 2.0
    assert int(ins.fixes_used.values[-1]) >= 4
    err = np.linalg.norm(ins.position.values - ins.position_true.values, axis=1)
    assert np.nanmax(err) < 5.0
    pitch = out["motion"].rpy_deg.values[:, list(out["motion"]["body"].values).index("mount_front"), 1]
    assert np.ptp(pitch) > 10.0                                   # the mount nods
