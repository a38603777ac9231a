"""Secondary rays (mirror bounces, camera shadow rays) and the float32 scale they are offset by.

Until 2026-11-23 (commit 0f560a9) the offset of a secondary ray scaled with ``Scene.extent_m``,
which summed the offsets of all bodies, so 400 small posts 100 m away lifted shadow rays 0.41 m
off the ground.
Expected values: the extent is hand-computed from the pose tree; the near-scene results with
and without far posts must be the same (a regression property: far objects must not change
near results), up to float32 rounding where the posts move the static BVH's float32 frame.
"""

import numpy as np
import pytest

import hifi
from hifi.api import meshes
from hifi.caster import RayCaster, secondary_ray_offset_m
from hifi.constants import SECONDARY_RAY_OFFSET_MIN_M, SECONDARY_RAY_OFFSET_REL
from hifi.world.motion import Pose, Track
from hifi.world.scene import Scene

START = "2024-05-01T08:00:00Z"            # Salzburg, sun ~45 deg up in the south-east
ORIGIN = {"lat_deg": 47.80, "lon_deg": 13.04, "height_m": 430.0}

#: Distances with and without the far posts [m]: the posts move the static BVH's centre by
#: ~60 m, so near hits are computed in float32 at coordinates up to ~100 m (ulp 7.6 um).
FLOAT32_AT_100M_ATOL_M = 1e-5  # 10 um


def test_extent_follows_each_parent_chain():
    # Two chains. A: car (box 2 x 2 x 2) on a track through (3, 4, 0) and (6, 8, 0), a sensor
    # 2 m above it, a 0.2 m box 1 m beside the sensor. B: a static pole (box 1 x 1 x 6) at
    # (0, 0, 8) with a 0.2 m box 6 m above it.
    scene = Scene()
    small = meshes.box([0.2, 0.2, 0.2])                       # vertex radius sqrt(0.03)
    scene.add_object("car", meshes.box([2, 2, 2]), local=Track([0, 1], [[3, 4, 0], [6, 8, 0]], [[0, 0, 0]] * 2))
    scene.add_body("roof", "sensor", Pose.from_position_rpy([0, 0, 2], [0, 0, 0]), parent="car")
    scene.add_object("antenna", small, local=Pose.from_position_rpy([0, 1, 0], [0, 0, 30]), parent="roof")
    scene.add_object("pole", meshes.box([1, 1, 6]), local=Pose.from_position_rpy([0, 0, 8], [0, 0, 0]))
    scene.add_object("lamp", small, local=Pose.from_position_rpy([0, 0, 6], [0, 0, 0]), parent="pole")
    # Hand-computed, per body (vertex radius + offsets up its own chain):
    #   car sqrt(3) + 10 = 11.73; roof 0 + 2 + 10 = 12; antenna sqrt(0.03) + 1 + 2 + 10 = 13.17;
    #   pole sqrt(9.5) + 8 = 11.08; lamp sqrt(0.03) + 6 + 8 = 14.17 (the largest).
    # (The old rule, largest vertex radius + the largest coordinate of every body, gave
    # sqrt(9.5) + 8 + 2 + 1 + 8 + 6 = 28.1.)
    assert scene.extent_m() == pytest.approx(14.0 + np.sqrt(0.03), rel=1e-12)
    # It bounds every vertex of every object at every time (property).
    for t in (0.0, 0.5, 1.0):
        for o in scene.objects:
            r = np.linalg.norm(scene.pose_at(o.name, t).apply(o.vertices), axis=1)
            assert r.max() <= scene.extent_m()


def test_extent_does_not_grow_with_the_number_of_objects():
    # 400 posts 100 m away: the bound is that of one post (analytic: its offset
    # |(100 cos a, 100 sin a, 0.5)| = sqrt(100^2 + 0.5^2) plus its vertex radius
    # sqrt(0.05^2 + 0.05^2 + 0.5^2)), not 400 times it.
    scene = Scene()
    post = meshes.box([0.1, 0.1, 1.0])
    for k in range(400):
        a = 2 * np.pi * k / 400
        scene.add_object(f"post_{k}", post, local=Pose.from_position_rpy([100 * np.cos(a), 100 * np.sin(a), 0.5],
                                                                         [0, 0, 0]))
    assert scene.extent_m() == pytest.approx(np.sqrt(10000.25) + np.sqrt(0.255), rel=1e-12)


def test_secondary_offset_rule():
    # Analytic values of the rule: 2**-16 of (|hit point - static centre| + longest triangle
    # edge) for a static object; of the reach for a moving one; floored; NaN for a miss.
    scene = Scene()
    scene.add_object("ground", meshes.plane([40, 40]))        # two triangles, diagonal 40 sqrt 2
    scene.add_object("box", meshes.box([2, 2, 2]), local=Track([0, 1], [[0, 0, 5], [10, 0, 5]], [[0, 0, 0]] * 2))
    caster = RayCaster(scene)
    points = np.array([[3.0, 4.0, 0.0], [5.0, 0.0, 4.0], [0.0, 0.0, 0.0]])
    off = caster.secondary_offset_m(points, np.array([0, 1, -1]))
    # Static centre: the ground's bounding-box centre, the scene origin.
    assert off[0] == pytest.approx(SECONDARY_RAY_OFFSET_REL * (5.0 + 40 * np.sqrt(2)), rel=1e-12)
    assert off[1] == pytest.approx(SECONDARY_RAY_OFFSET_REL * np.sqrt(3), rel=1e-12)
    assert np.isnan(off[2])
    assert secondary_ray_offset_m([0.0])[0] == SECONDARY_RAY_OFFSET_MIN_M


def _near_scene(n_posts: int) -> dict:
    """Ground, a 1 m plate 0.3 m above it in the sun, a 45-degree mirror whose reflections go
    straight down to the ground from 0.29 m to 1.71 m above it; a camera looking down at the
    plate and its shadow, a lidar looking at the mirror; and ``n_posts`` small posts in a block
    100 m to the east, out of every sensor's view."""
    objects = [
        {"name": "ground", "mesh": "plane", "size_m": [40, 40], "material": "grey"},
        {"name": "plate", "mesh": "plane", "size_m": [1, 1], "material": "grey", "position_m": [3, 0, 0.3]},
        {"name": "mirror", "mesh": "plane", "size_m": [2, 2], "material": "glass",
         "position_m": [-6, 0, 1.0], "rpy_deg": [0, 45, 0]},
    ]
    objects += [{"name": f"post_{k}", "mesh": "box", "size_m": [0.1, 0.1, 1.0], "material": "grey",
                 "position_m": [100.0 + k % 20, -10.0 + k // 20, 0.5]} for k in range(n_posts)]
    return {"simulation": {"duration_s": 0.1, "seed": 0, "start_utc": START, "origin": ORIGIN},
            "materials": {"grey": {"reflectivity": 0.5, "color_rgb": [0.5, 0.5, 0.5]},
                          "glass": {"reflectivity": 0.05, "mirror": 1.0}},
            "objects": objects,
            "sensors": [
                {"name": "cam", "model": "ccd_camera", "position_m": [3, 0, 5], "rpy_deg": [0, 90, 0],
                 "params": {"resolution_x": 160, "resolution_y": 120, "focal_length_m": 2e-3}},
                {"name": "lidar", "model": "generic_grid", "position_m": [-10, 0, 1.0], "rate_hz": 10.0,
                 "params": {"theta_min_deg": -12, "theta_max_deg": 12, "n_theta": 61,
                            "phi_min_deg": -12, "phi_max_deg": 12, "n_phi": 61, "max_range_m": 50.0}}]}


def _shadowed(cam) -> np.ndarray:
    """Pixels lit by the sky only: green ideal_image below half the sunlit level (the plate and
    the ground share material and normal; shadowed / sunlit is ~0.14 here, cos^4 across the
    field < 3 %)."""
    g = cam.ideal_image.values[..., 1].astype(float)
    return g < 0.5 * np.percentile(g, 90)


def test_far_objects_do_not_move_secondary_rays():
    near = hifi.Simulation.from_dict(_near_scene(0)).run()
    far = hifi.Simulation.from_dict(_near_scene(400)).run()
    cam_n, cam_f = near["cam"].isel(frame=0), far["cam"].isel(frame=0)
    lid_n, lid_f = near["lidar"].isel(frame=0), far["lidar"].isel(frame=0)

    # The scene exercises what it should: the plate's shadow is in view (~1700 pixels), and
    # hundreds of lidar rays reach the ground through the mirror (true point off the emitted
    # ray), many reflected less than 0.6 m above the ground (the offset the old scene-wide
    # rule gave with the posts). Reflection point: the emitted ray from (-10, 0, 1) meets the
    # mirror plane n . (p - (-6, 0, 1)) = 0, n = (1, 0, 1) / sqrt 2, at t = 4 / (d_x + d_z).
    shadow = _shadowed(cam_n)
    assert shadow.sum() > 1000 and (cam_n.object_id.values[shadow] == 0).all()
    det = lid_n.detected.values
    via_mirror = det & (np.abs(lid_n.x.values - lid_n.x_noisy.values) > 0.01)
    yaw, pitch = np.broadcast_arrays(lid_n.yaw.values, lid_n.pitch.values)
    d_x, d_z = np.cos(pitch) * np.cos(yaw), np.sin(pitch)
    z_mirror = 1.0 + 4.0 / (d_x + d_z) * d_z
    assert via_mirror.sum() > 500 and (via_mirror & (z_mirror < 0.6)).sum() > 100
    assert not np.isin(cam_f.object_id.values, np.arange(3, 403)).any()
    assert not np.isin(lid_f.object_id.values, np.arange(3, 403)).any()

    # With the posts: same objects, same shadows, same detections; distances to float32.
    np.testing.assert_array_equal(cam_f.object_id.values, cam_n.object_id.values)
    np.testing.assert_array_equal(_shadowed(cam_f), shadow)
    np.testing.assert_allclose(cam_f.distance.values, cam_n.distance.values, rtol=0,
                               atol=FLOAT32_AT_100M_ATOL_M)
    np.testing.assert_array_equal(lid_f.object_id.values, lid_n.object_id.values)
    np.testing.assert_array_equal(lid_f.detected.values, det)
    np.testing.assert_allclose(lid_f.distance.values, lid_n.distance.values, rtol=0,
                               atol=FLOAT32_AT_100M_ATOL_M)
