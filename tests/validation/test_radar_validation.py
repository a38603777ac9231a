"""validation/radar_car.py, radar_range.py and radar_ghost.py on short runs (``validation``
marker): the built-in car's RCS over aspect against measured cars, the ARS408 far scan's
detection range against its data sheet, and the sphere-over-road multipath against the image
method where the tubes are wider than the facets."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_validation

pytestmark = pytest.mark.validation


def test_car_median_rcs_over_aspect_is_a_measured_cars():
    car = load_validation("radar_car")
    rcs_db = 10.0 * np.log10(car.car_rcs(np.arange(0.0, 181.0, 15.0), 2.0))
    # measured passenger cars at 76-81 GHz: about 10-20 dBsm from the front and the rear, 10 dBsm the
    # reference car (sources in validation/radar_car.py); flat panels gave 38-40 dBsm at 0 and 180 deg
    assert 8.0 < np.median(rcs_db) < 20.0
    assert rcs_db[0] < 20.0 and rcs_db[-1] < 20.0


def test_ars408_far_scan_detects_a_10_dbsm_car_to_the_sheets_250_m():
    rr = load_validation("radar_range")
    # data sheet: far range 250 m (for a 10 dBsm target, 50 %: assumed conditions); the target is
    # 11.0 dBsm, 265 m. Bracket it: reliably detected 30 m short of it, rarely 35 m beyond
    assert rr.detection_probability("ars408_far", 235.0, 16) >= 0.8
    assert rr.detection_probability("ars408_far", 300.0, 16) <= 0.2


def test_road_sphere_road_ghost_follows_the_image_method_with_tubes_narrower_than_facets():
    ghost = load_validation("radar_ghost")
    out = ghost.paths(0.001, 6, smooth=True)        # 1 mm tubes, 1.6 mm facets, interpolated normals
    for name, (closed, sim) in out.items():
        # image method (Knott et al. sec. 7) with the sphere's pi a^2; with the facets' normals the
        # road-sphere-road echo came out +5.5 dB here (validation/radar_ghost.md)
        assert abs(10.0 * np.log10(sim / closed)) < 1.5, name
