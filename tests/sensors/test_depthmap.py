"""Depth map against analytic geometry (expected values are analytic results)."""

import numpy as np
import pytest

import hifi
from sensors.depthmap import pinhole_directions

from _scenes import wall_scenario

# float32 storage and Embree's float32 arithmetic: a few ulps, 2**-21 relative.
F32_RTOL = 2.0 ** -21


def _depth(d, **params):
    sensor = {"name": "cam", "model": "depthmap", "params": {"resolution_x": 64, "resolution_y": 48, **params}}
    d["sensors"] = [sensor]
    return hifi.Simulation.from_dict(d).run()["cam"].isel(frame=0)


def test_plane_at_known_distance_is_exact():
    ds = _depth(wall_scenario(12.5), fov_x_deg=60.0)
    # Analytic: a plane perpendicular to the optical axis at D has depth D in every pixel...
    np.testing.assert_allclose(ds.depth.values, 12.5, rtol=F32_RTOL, atol=0)
    # ... and radial distance D / cos(angle to the axis).
    _, cos_axis = pinhole_directions(64, 48, np.radians(60.0))
    np.testing.assert_allclose(ds.distance.values, 12.5 / cos_axis, rtol=F32_RTOL)
    assert (ds.object_id.values == 0).all()
    # annotation: class "wall" is the first class after "unlabelled" (id 1)
    assert (ds.annotation.values == 1).all()
    assert ds.annotation.attrs["flag_meanings"] == "unlabelled wall"


def test_misses_are_nan_and_minus_one():
    d = wall_scenario(12.5)
    ds = _depth(d, fov_x_deg=170.0, max_range_m=20.0)
    miss = ds.object_id.values == -1
    assert miss.any() and (~miss).any()        # the wall (40 m wide at 12.5 m) does not fill 170 deg
    assert np.isnan(ds.depth.values[miss]).all() and np.isnan(ds.distance.values[miss]).all()
    assert (ds.annotation.values[miss] == 0).all()
    assert np.isfinite(ds.depth.values[~miss]).all()


@pytest.mark.parametrize("position, rpy, face", [
    ([5, 0, 0], [0, 0, 180], "+x"),
    ([-5, 0, 0], [0, 0, 0], "-x"),
    ([0, 5, 0], [0, 0, -90], "+y"),
    ([0, -5, 0], [0, 0, 90], "-y"),
    ([0, 0, 5], [0, 90, 0], "+z"),       # positive pitch tips x down (REP 103)
    ([0, 0, -5], [0, -90, 0], "-z"),
])
def test_box_faces(position, rpy, face):
    size = {"+x": 2.0, "-x": 2.0, "+y": 3.0, "-y": 3.0, "+z": 1.0, "-z": 1.0}[face]
    d = {"simulation": {"duration_s": 0.1},
         "objects": [{"name": "other", "mesh": "sphere", "radius_m": 0.1, "position_m": [50, 50, 50]},
                     {"name": "box", "mesh": "box", "size_m": [2.0, 3.0, 1.0]}],
         "sensors": [{"name": "cam", "model": "depthmap", "position_m": position, "rpy_deg": rpy,
                      "params": {"resolution_x": 9, "resolution_y": 9, "fov_x_deg": 5.0}}]}
    ds = hifi.Simulation.from_dict(d).run()["cam"].isel(frame=0)
    # Analytic: the camera 5 m from the box centre sees the face at 5 - half extent, object 1.
    np.testing.assert_allclose(ds.depth.values, 5.0 - size / 2.0, rtol=F32_RTOL)
    assert (ds.object_id.values == 1).all()


def test_object_ids_follow_objects_order():
    d = wall_scenario(20.0, objects_extra=[
        {"name": "left", "mesh": "box", "size_m": [1, 1, 1], "position_m": [10, 3, 0]},
        {"name": "right", "mesh": "box", "size_m": [1, 1, 1], "position_m": [10, -3, 0]}])
    d["sensors"] = [{"name": "cam", "model": "depthmap", "params": {"resolution_x": 201, "resolution_y": 3,
                                                                      "fov_x_deg": 60.0}}]
    ds = hifi.Simulation.from_dict(d).run()["cam"].isel(frame=0, row=1)
    ids = ds.object_id.values
    # Image left is sensor +y: the "left" box (index 1) appears in the left half, "right" (2) in the right.
    assert set(ids[:100]) == {0, 1} and set(ids[101:]) == {0, 2}
    # Analytic: each box shows its front face (depth 9.5) and its inner side face (|y| = 2.5,
    # x from 9.5 to 10.5), so its depths span exactly [9.5, 10.5].
    for oid in (1, 2):
        dep = ds.depth.values[ids == oid]
        assert dep.min() == pytest.approx(9.5, rel=F32_RTOL) and dep.max() <= 10.5 * (1 + F32_RTOL)
    np.testing.assert_allclose(ds.depth.values[ids == 0], 20.0, rtol=F32_RTOL)
