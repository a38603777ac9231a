"""HDL-64E S2 intensity distance compensation (sensors.radiometry.velodyne_focal_compensation)."""

import numpy as np
import pytest

import hifi
from sensors.calibration import SZTAKI_64E_S21_YAML, read_calibration
from sensors.radiometry import velodyne_focal_compensation


def test_focal_fields_come_from_the_sztaki_yaml():
    focal = read_calibration(SZTAKI_64E_S21_YAML).intensity
    # Expected values: sensors/data/64e_s2.1-sztaki.yaml, lasers 0, 1, 44 and 63.
    np.testing.assert_array_equal(focal.focal_distance_m[[0, 1, 44, 63]], [12.0, 5.0, 15.0, 9.0])
    np.testing.assert_allclose(focal.focal_slope[[0, 1, 44, 63]], [1.4, 1.0, 1.6, 0.80000001], rtol=0, atol=0)
    # laser 0: min 30, max 235; laser 44: no min_intensity (0, ros-drivers' default), max 220;
    # laser 63: neither (0 and 255).
    np.testing.assert_array_equal(focal.min_intensity[[0, 44, 63]], [30.0, 0.0, 0.0])
    np.testing.assert_array_equal(focal.max_intensity[[0, 44, 63]], [235.0, 220.0, 255.0])


def test_compensation_closed_form():
    # Closed form of the manufacturer's formula: at the focal distance nothing is added; at
    # raw distance n counts, s |256 (1 - F / 131)^2 - 256 (1 - n / 65535)^2|.
    assert velodyne_focal_compensation(20.0, 12.0 * 65535 * 0.002 / 131.0, 12.0, 1.4) == pytest.approx(20.0, abs=1e-9)
    n = 20_000                                             # 40 m in 2 mm counts
    expected = 20.0 + 1.4 * abs(256 * (1 - 12.0 / 131.0) ** 2 - 256 * (1 - n / 65535) ** 2)   # 142.6
    assert velodyne_focal_compensation(20.0, n * 0.002, 12.0, 1.4) == pytest.approx(expected, rel=1e-12)
    # clipped to the laser's min/max codes; NaN (no hit) stays NaN
    out = velodyne_focal_compensation([0.0, 250.0, np.nan], 12.0 * 65535 * 0.002 / 131.0, 12.0, 1.4,
                                      min_code=30.0, max_code=235.0)
    np.testing.assert_allclose(out[:2], [30.0, 235.0], rtol=0, atol=1e-9)
    assert np.isnan(out[2])


def _road(compensation):
    scene = {
        "simulation": {"duration_s": 0.1, "seed": 3},
        "materials": {"asphalt": {"reflectivity": 0.27, "roughness_deg": 11.1, "class": "road"}},
        "objects": [{"name": "road", "mesh": "plane", "size_m": [240, 240], "material": "asphalt"}],
        "sensors": [{"name": "lidar", "model": "hdl64e_s2", "position_m": [0, 0, 1.73], "rate_hz": 10.0,
                     "params": {"azimuth_stride": 8, "intensity_compensation": compensation}}],
    }
    f = hifi.Simulation.from_dict(scene).run(out=None)["lidar"].isel(frame=0)
    det = f["detected"].values
    pts = np.stack([f[v].values for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1) - f["sensor_position"].values
    return np.where(det, np.linalg.norm(pts, axis=-1), np.nan), np.where(det, f["intensity"].values, np.nan)


def test_compensation_lifts_far_road_intensity():
    r0, i0 = _road(False)
    r1, i1 = _road(True)
    np.testing.assert_array_equal(r0, r1)                  # ranges untouched, same streams
    near, far = (r0 > 5) & (r0 < 8), (r0 > 25) & (r0 < 40)
    lift_near = np.nanmedian(i1[near] - i0[near])
    lift_far = np.nanmedian(i1[far] - i0[far])
    # Closed form for the median laser (focal 9 m, slope 1): about +20 codes at 5-8 m (raw
    # distance 3.6-6.6 m), +60 to +80 at 25-40 m; the far lift must exceed the near one.
    assert lift_far > lift_near + 20.0 and lift_near > 0.0
