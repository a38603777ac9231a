"""hifi.analysis.metrics: each measure against values computed by hand, and against scipy's or a brute-force
implementation of the same measure where there is one."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import hifi
from hifi.analysis.metrics import (chamfer_distance, intensity_emd, range_grid, range_image_errors, ray_drop_scores,
                          ring_statistics)


def test_chamfer_by_hand_and_against_brute_force():
    a = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    b = np.array([[0.0, 0.0, 1.0], [np.nan, 0.0, 0.0]])          # the NaN row is a miss, dropped
    cd = chamfer_distance(a, b)
    # a -> b: 1 and sqrt(2), mean 1.207107; b -> a: 1; mean of both 1.103553 (hand calculation)
    assert cd.a_to_b == pytest.approx(1.207107, rel=1e-6) and cd.b_to_a == pytest.approx(1.0)
    assert cd.chamfer == pytest.approx(1.103553, rel=1e-6)
    assert chamfer_distance(a, b, squared=True).a_to_b == pytest.approx(1.5)        # (1 + 2) / 2
    rng = np.random.default_rng(0)
    p, q = rng.normal(size=(300, 3)), rng.normal(size=(200, 3))
    d = cdist(p, q)                                                   # brute force, scipy
    got = chamfer_distance(p, q, percentile=90)
    assert got.a_to_b == pytest.approx(d.min(axis=1).mean(), rel=1e-12)
    assert got.b_to_a == pytest.approx(d.min(axis=0).mean(), rel=1e-12)
    assert got.a_to_b_percentile == pytest.approx(np.percentile(d.min(axis=1), 90), rel=1e-12)
    # a sparse grid and its copy shifted by 0.1 m (spacing 1 m): Chamfer = the shift
    g = np.stack(np.meshgrid(np.arange(5.0), np.arange(5.0), [0.0]), axis=-1).reshape(-1, 3)
    assert chamfer_distance(g, g + [0.1, 0, 0]).chamfer == pytest.approx(0.1)
    with pytest.raises(ValueError, match="shape"):
        chamfer_distance(np.zeros((3, 2)), b)


def test_ring_statistics_by_hand():
    r = np.array([[1.0, 2.0, np.nan, 3.0],
                  [np.nan, np.nan, np.nan, np.nan]])
    s = ring_statistics(r)
    np.testing.assert_array_equal(s.points, [3, 0])
    np.testing.assert_allclose(s.fraction, [0.75, 0.0])
    assert s.mean_range[0] == pytest.approx(2.0) and s.median_range[0] == pytest.approx(2.0)
    assert s.std_range[0] == pytest.approx(np.sqrt(2.0 / 3.0))          # population std of 1, 2, 3
    assert np.isnan(s.mean_range[1]) and np.isnan(s.median_range[1])
    # an explicit detection mask removes the cell at 3 m
    s2 = ring_statistics(r, detected=np.array([[True, True, True, False], [False] * 4]))
    assert s2.points[0] == 2 and s2.mean_range[0] == pytest.approx(1.5)


def test_range_image_errors_and_ray_drop_by_hand():
    a = np.array([[10.0, 20.0, np.nan], [5.0, np.nan, 7.0]])
    b = np.array([[10.5, 19.0, 4.0], [np.nan, np.nan, 7.0]])
    e = range_image_errors(a, b)
    # both valid: (10, 10.5), (20, 19), (7, 7) -> errors -0.5, 1, 0
    assert e.n == 3
    assert e.rmse == pytest.approx(np.sqrt((0.25 + 1 + 0) / 3))
    assert e.median_abs == pytest.approx(0.5) and e.mean == pytest.approx(0.5 / 3)
    # drops: predicted a at (0,2) and (1,1); reference b at (1,0) and (1,1): tp 1
    s = ray_drop_scores(np.isfinite(a), np.isfinite(b))
    assert s.precision == pytest.approx(0.5) and s.recall == pytest.approx(0.5) and s.f1 == pytest.approx(0.5)
    assert s.drop_rate_predicted == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="shapes"):
        range_image_errors(a, b[:1])


def test_intensity_emd_by_hand_and_scipy():
    # two point masses: {0, 1} vs {1, 2}: every unit of mass moves by 1 (hand calculation)
    assert intensity_emd([0.0, 1.0], [1.0, 2.0]) == pytest.approx(1.0)
    # the same distribution in another scale: 0 after normalising by the medians
    x = np.random.default_rng(1).gamma(2.0, 10.0, 1000)
    assert intensity_emd(x, 3.0 * x, normalise=True) == pytest.approx(0.0, abs=1e-12)
    assert intensity_emd(x, x + 5.0) == pytest.approx(5.0)          # a shift moves all mass by 5
    assert intensity_emd([np.nan, 1.0], [1.0]) == 0.0


def test_range_grid_puts_rings_top_down_and_compares_a_run_with_itself():
    d = {"simulation": {"duration_s": 0.1, "seed": 0},
         "objects": [{"name": "ground", "mesh": "plane", "size_m": [80, 80]}],
         "sensors": [{"name": "v", "model": "vlp16", "position_m": [0, 0, 1.5], "params": {"azimuth_stride": 4}}]}
    ds = hifi.Simulation.from_dict(d).run()["v"]
    r, det = range_grid(ds)
    assert r.shape == (16, ds.sizes["step"])
    elev = np.sort(ds["laser_elevation"].values)[::-1]
    assert elev[0] > elev[-1]
    # the lowest ring (last row) sees the ground nearest: smallest median range of the detected
    stats = ring_statistics(r, det)
    assert np.nanargmin(stats.median_range) == 15
    assert range_image_errors(r, r).rmse == 0.0
    # the upper half of a VLP-16 over a plane sees sky: drops; a scan against itself scores 1
    same = ray_drop_scores(det, det)
    assert same.drop_rate_reference > 0.3 and same.precision == 1.0 and same.f1 == 1.0


def test_road_noise_statistics_of_a_simulated_road():
    # An HDL-32E 1.84 m over a flat road with noise sigma fixed at 1 cm and no per-laser bias:
    # the second-difference estimator recovers 1 cm (analytic: constant sigma, independent
    # shots), the fitted height is the mount height, and the road has no edges.
    d = {"simulation": {"duration_s": 0.1, "seed": 4},
         "materials": {"road": {"reflectivity": 0.27, "roughness_deg": 11.1, "class": "road"}},
         "objects": [{"name": "ground", "mesh": "plane", "size_m": [200, 200], "material": "road"}],
         "sensors": [{"name": "v", "model": "hdl32e", "position_m": [0, 0, 1.84],
                      "params": {"noise_sigma_m": 0.01, "bias_sigma_m": 0.0, "range_resolution_m": 0.0}}]}
    from hifi.analysis.metrics import road_noise_statistics
    h = road_noise_statistics(hifi.Simulation.from_dict(d).run()["v"])
    assert h["sensor_height_m"] == pytest.approx(1.84, abs=0.01)
    assert h["noise_sigma_7_40m_mm"] == pytest.approx(10.0, rel=0.1)      # 10 % for the MAD of ~10^4 shots
    assert h["n_edges"] == 0
