"""Mirrors and motion in the scene (hifi.world.scene: a mirror material, bodies and sensors on
tracks) against analytic results."""

import numpy as np

import hifi

from _scenes import wall_scenario


def _grid(name="grid", n_theta=200, n_phi=100, span=20.0, rate_hz=1.0, **params):
    return {"name": name, "model": "generic_grid", "rate_hz": rate_hz,
            "params": {"theta_min_deg": -span, "theta_max_deg": span, "n_theta": n_theta,
                       "phi_min_deg": -span / 2, "phi_max_deg": span / 2, "n_phi": n_phi, **params}}


def test_mirror_at_45_degrees_folds_the_path():
    # Mirror plane through (5, 0, 0) with normal along (1, -1, 0)/sqrt 2 reflects +x rays to +y;
    # the target wall is the plane y = 7. Reflecting that plane in the mirror (x, y) -> (y + 5, x - 5)
    # gives the ghost plane x = 12, so the folded path along an emitted unit direction u is
    # 12 / u_x (analytic), the ghost point lies on x = 12 and the true point is its mirror image.
    d = {"simulation": {"duration_s": 1.0},
         "materials": {"glass": {"reflectivity": 0.1, "mirror": 1.0}, "white": {"reflectivity": 0.8}},
         "objects": [{"name": "mirror", "mesh": "plane", "size_m": [4, 4], "material": "glass",
                      "position_m": [5, 0, 0], "rpy_deg": [0, 90, -45]},
                     {"name": "target", "mesh": "plane", "size_m": [60, 60], "material": "white",
                      "position_m": [0, 7, 0], "rpy_deg": [90, 0, 0]}],
         "sensors": [_grid(n_theta=21, n_phi=21, span=10.0)]}
    ds = hifi.Simulation.from_dict(d).run()["grid"].isel(frame=0)
    yaw, pitch = ds.yaw.values.ravel(), ds.pitch.values.ravel()
    ux = np.cos(pitch) * np.cos(yaw)
    dist = ds.distance.values.ravel()
    np.testing.assert_allclose(dist, 12.0 / ux, rtol=1e-6)       # float32 casting, < 12 um
    assert (ds.object_id.values == 1).all()                       # the object seen in the mirror
    ghost_x = ds.x_noisy.values.ravel()
    # points are stored within 0.05 mm (int32 packing at 0.1 mm, hifi.run.dataset.POINT_SCALE_M)
    np.testing.assert_allclose(ghost_x, 12.0, atol=5.1e-5)       # ghost on the emitted ray, x = 12
    gy, gz = ds.y_noisy.values.ravel(), ds.z_noisy.values.ravel()
    np.testing.assert_allclose(ds.y.values.ravel(), 7.0, atol=5.1e-5)   # true point on the target
    np.testing.assert_allclose(ds.x.values.ravel(), gy + 5.0, atol=1.01e-4)   # two stored points
    np.testing.assert_allclose(ds.z.values.ravel(), gz, atol=1.01e-4)


def test_moving_object_follows_track_at_each_ray_time():
    # A box face moves along x at 20 m/s: x_face(t) = 9.5 + 20 t. 500 rays along +x over one
    # frame, each at its own time t_i, must see distance 9.5 + 20 t_i (analytic).
    d = {"simulation": {"duration_s": 0.5},
         "objects": [{"name": "box", "mesh": "box", "size_m": [1, 4, 4],
                      "track": [{"t_s": 0.0, "position_m": [10, 0, 0]}, {"t_s": 1.0, "position_m": [30, 0, 0]}]}],
         "sensors": [{"name": "grid", "model": "generic_grid", "rate_hz": 2.0,
                      "params": {"theta_min_deg": 0, "theta_max_deg": 0, "n_theta": 500,
                                 "phi_min_deg": 0, "phi_max_deg": 0, "n_phi": 1}}]}
    ds = hifi.Simulation.from_dict(d).run()["grid"].isel(frame=0)
    t = ds.hifi.seconds("timestamp").values.ravel()
    assert np.ptp(t) > 0.49                                   # rays spread over the 0.5 s frame
    np.testing.assert_allclose(ds.distance.values.ravel(), 9.5 + 20.0 * t, atol=2e-5)


def test_moving_sensor_distance_follows_its_own_track():
    # Sensor riding on a carrier that drives at 20 m/s toward a wall at x = 50: d(t) = 50 - 20 t.
    d = wall_scenario(50.0, duration_s=0.5, objects_extra=[
        {"name": "carrier", "mesh": "sphere", "radius_m": 0.01,
         "track": [{"t_s": 0.0, "position_m": [0, 0, -5]}, {"t_s": 1.0, "position_m": [20, 0, -5]}]}])
    d["sensors"] = [{"name": "grid", "model": "generic_grid", "rate_hz": 2.0, "parent": "carrier",
                     "position_m": [0, 0, 5],
                     "params": {"theta_min_deg": 0, "theta_max_deg": 0, "n_theta": 300,
                                "phi_min_deg": 0, "phi_max_deg": 0, "n_phi": 1}}]
    ds = hifi.Simulation.from_dict(d).run()["grid"].isel(frame=0)
    t = ds.hifi.seconds("timestamp").values.ravel()
    np.testing.assert_allclose(ds.distance.values.ravel(), 50.0 - 20.0 * t, atol=2e-5)


def test_velocity_at_the_start_of_a_track_is_its_first_segments():
    # Regression (found by the pose plot): at t = 0 the central difference straddled the start
    # of the track (held still before its first keyframe) and gave half the speed. Analytic:
    # 10 m in 1 s along x is 10 m/s at every t in [0, 1), including t = 0.
    d = {"simulation": {"duration_s": 1.0},
         "objects": [{"name": "car", "mesh": "box", "size_m": [1, 1, 1],
                      "track": [{"t_s": 0.0, "position_m": [0, 0, 0]}, {"t_s": 1.0, "position_m": [10, 0, 0]}]}]}
    scene = hifi.Simulation.from_dict(d).scene
    np.testing.assert_allclose(scene.velocity_at("car", 0.0), [10.0, 0.0, 0.0], rtol=1e-9)
    np.testing.assert_allclose(scene.velocity_at("car", np.array([0.0, 0.25, 0.5])),
                               np.tile([10.0, 0.0, 0.0], (3, 1)), rtol=1e-9)
