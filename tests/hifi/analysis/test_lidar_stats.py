"""hifi/analysis/lidar_stats.py on synthetic scans with known answers, and validation/lidar_real.py
on the real recordings (the vendored Ouster capture; the nuScenes sweep from ../shared/data).

Every synthetic expected value is analytic: the noise, slope, gains, misses and floating points
are what the test injects.
"""

from __future__ import annotations


import numpy as np
import pytest

from conftest import load_validation, shared_path





from hifi.analysis import lidar_stats as ls  # noqa: E402

ELEV_DEG = np.linspace(-30.0, -5.0, 16)      # downward rings, lowest first
N_COL = 1000
HEIGHT_M = 1.8


def synthetic_scan(*, sigma_m=0.0, bias_m=None, gains=None, slope=-0.5, seed=0, tilt_deg=0.0):
    """Rings of a lidar at HEIGHT_M over the plane z = -HEIGHT_M (optionally tilted about x).

    Returns points_sensor (ring, col, 3), range (ring, col), intensity I = g_ring (r / 10 m)^slope.
    """
    rng = np.random.default_rng(seed)
    az = np.linspace(0, 2 * np.pi, N_COL, endpoint=False)
    e = np.radians(ELEV_DEG)[:, None]
    u = np.stack(np.broadcast_arrays(np.cos(e) * np.cos(az), np.cos(e) * np.sin(az), np.sin(e)), axis=-1)
    t = np.radians(tilt_deg)
    n = np.array([0.0, np.sin(t), np.cos(t)])
    r_true = HEIGHT_M / -(u @ n)
    r = r_true + sigma_m * rng.standard_normal(r_true.shape)
    if bias_m is not None:
        r = r + np.asarray(bias_m)[:, None]
    g = np.ones(len(ELEV_DEG)) if gains is None else np.asarray(gains)
    inten = g[:, None] * (r_true / 10.0) ** slope
    return u * r[..., None], r, inten


def test_ground_plane_height_and_tilt():
    pts, _, _ = synthetic_scan(sigma_m=0.01, tilt_deg=2.0)
    plane = ls.fit_ground_plane(pts)
    assert plane.height_m == pytest.approx(HEIGHT_M, abs=0.005)        # 5 mm; analytic height
    assert np.degrees(plane.tilt_rad) == pytest.approx(2.0, abs=0.05)  # 0.05 deg


def test_ring_cones_recover_elevation_and_offset():
    # points of each ring at many ranges on its cone z = h_i + r tan e_i
    rng = np.random.default_rng(1)
    e = np.radians(np.array([-20.0, -10.0, 0.0, 5.0]))
    h = np.array([0.10, -0.05, 0.0, 0.02])
    r = rng.uniform(3, 40, size=(4, 500))
    az = rng.uniform(0, 2 * np.pi, size=r.shape)
    pts = np.stack([r * np.cos(az), r * np.sin(az), h[:, None] + r * np.tan(e)[:, None]], axis=-1)
    cones = ls.fit_ring_cones(pts, np.ones(r.shape, bool))
    np.testing.assert_allclose(cones.elevation_rad, e, atol=1e-9)   # exact data
    np.testing.assert_allclose(cones.offset_m, h, atol=1e-9)


def test_ground_ring_radii():
    pts, _, _ = synthetic_scan()
    radii = ls.ground_ring_radii(pts, np.ones(pts.shape[:2], bool))
    np.testing.assert_allclose(radii, HEIGHT_M / np.tan(-np.radians(ELEV_DEG)), rtol=1e-9)   # h / tan|e|


@pytest.mark.parametrize("estimator", ["mad", "clipped"])
def test_second_difference_sigma_white_noise(estimator):
    rng = np.random.default_rng(2)
    x = 0.3 * np.arange(200_000) + 0.004 * rng.standard_normal(200_000)     # linear signal + 4 mm
    d2 = x[2:] - 2 * x[1:-1] + x[:-2]
    assert ls.sigma_from_second_differences(d2, estimator=estimator) == pytest.approx(0.004, rel=0.02)


def test_second_difference_sigma_quantised():
    # 20 mm noise in 8 mm steps (Ouster RNG15): clipped std gives sqrt(s^2 + q^2/12)
    rng = np.random.default_rng(3)
    x = np.round((10.0 + 0.02 * rng.standard_normal(200_000)) / 0.008) * 0.008
    d2 = x[2:] - 2 * x[1:-1] + x[:-2]
    expect = np.sqrt(0.02 ** 2 + 0.008 ** 2 / 12)
    assert ls.sigma_from_second_differences(d2, estimator="clipped") == pytest.approx(expect, rel=0.03)


def test_range_noise_by_range_on_plane():
    pts, r, _ = synthetic_scan(sigma_m=0.005, seed=4)
    nz = ls.range_noise_by_range(r, np.ones(r.shape, bool))
    ok = np.isfinite(nz.sigma_m)
    assert ok.sum() >= 3
    np.testing.assert_allclose(nz.sigma_m[ok], 0.005, rtol=0.1)           # 5 mm injected
    assert nz.headline_m == pytest.approx(0.005, rel=0.05)


def test_ring_range_offsets_recover_bias():
    bias = 0.03 * np.random.default_rng(5).standard_normal(len(ELEV_DEG))
    bias -= bias.mean()
    pts, _, _ = synthetic_scan(sigma_m=0.002, bias_m=bias, seed=6)
    plane = ls.Plane(np.array([0.0, 0.0, 1.0]), HEIGHT_M, HEIGHT_M, 0.0, 0)   # the true plane
    off = ls.ring_range_offsets(pts, np.ones(pts.shape[:2], bool), plane, max_range_m=100.0)
    np.testing.assert_allclose(off.offset_m, bias, atol=0.0005)             # 0.5 mm
    assert off.spread_m == pytest.approx(np.std(bias, ddof=1), abs=0.0005)
    assert off.ring_to_ring_m == pytest.approx(np.std(np.diff(bias), ddof=1) / np.sqrt(2), abs=0.0005)


def test_ring_to_ring_offset_ignores_smooth_trend():
    trend = np.linspace(-0.2, 0.2, len(ELEV_DEG))          # a road curving away: smooth in ring
    pts, _, _ = synthetic_scan(bias_m=trend)
    plane = ls.Plane(np.array([0.0, 0.0, 1.0]), HEIGHT_M, HEIGHT_M, 0.0, 0)
    off = ls.ring_range_offsets(pts, np.ones(pts.shape[:2], bool), plane, max_range_m=100.0)
    assert off.ring_to_ring_m < 1e-6 < off.spread_m                        # linear trend: equal steps


def test_intensity_slope_and_gain_spread():
    gains = np.random.default_rng(7).uniform(0.6, 1.4, len(ELEV_DEG))
    pts, r, inten = synthetic_scan(gains=gains, slope=-0.45)
    road = np.ones(r.shape, bool)
    # slope through bins that each see one ring: use equal gains for the slope
    _, _, flat = synthetic_scan(slope=-0.45)
    sl = ls.intensity_range_slope(r, flat, road, range_window_m=(3.0, 25.0), n_bins=8)
    assert sl.slope == pytest.approx(-0.45, abs=0.02)                       # injected slope
    gs = ls.ring_gain_spread(r, inten, road, slope=-0.45, range_window_m=(3.0, 25.0))
    ok = np.isfinite(gs.gain)
    g = gains[ok]
    assert gs.spread == pytest.approx(np.std(g, ddof=1) / np.mean(g), rel=1e-6)   # known gains


def test_isolated_miss_fraction():
    det = np.ones((4, 1000), bool)
    det[1, [10, 50, 300]] = False         # three isolated misses
    det[2, [100, 101]] = False            # a double miss: not isolated, and its cells are not candidates
    road = det.copy()
    res = ls.isolated_miss_fraction(det, road)
    n_cand = 4 * 998 - 3 * 2 - 4            # each single miss removes its 2 neighbours, the pair removes 4
    assert (res.n_isolated, res.n_candidates) == (3, n_cand)
    assert res.fraction == pytest.approx(3 / n_cand)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_edge_points_counts_floating_returns(k):
    # one ring: 20 returns on a pole at 8 m, k floating points, 20 on a wall at 15 m
    fg, bg = np.full(20, 8.0), np.full(20, 15.0)
    mid = np.linspace(8.0, 15.0, k + 2)[1:-1]
    r = np.concatenate([fg, mid, bg])[None, :]
    res = ls.edge_points(r, np.ones(r.shape, bool))
    assert res.n_edges == 1
    assert res.n_floating == k
    assert res.fraction == pytest.approx(k / (k + 2))
    assert res.edges_with_floating == (1.0 if k else 0.0)


def test_edge_points_tells_isolated_from_supported_floating_returns():
    # three rings (elevation order) over a 8 m -> 15 m edge with one floating return at 11 m in
    # the middle ring: in case "pole" the ring above has a return at 11.05 m one column over (a
    # thin structure both rings see: supported); in case "mixed" it does not (isolated).
    # Constructed by hand.
    for case, n_iso in (("pole", 0), ("mixed", 1)):
        ring = np.concatenate([np.full(20, 8.0), [11.0], np.full(20, 15.0)])
        r = np.stack([np.concatenate([np.full(20, 8.0), [8.0], np.full(20, 15.0)]), ring,
                      np.concatenate([np.full(20, 8.0), [15.0], np.full(20, 15.0)])])
        if case == "pole":
            r[2, 21] = 11.05
        res = ls.edge_points(r, np.ones(r.shape, bool))
        assert res.n_floating >= 1, case
        assert res.n_isolated == n_iso, case
        assert res.isolated_fraction == pytest.approx(n_iso / res.n_edge_returns), case


def test_edge_points_ignores_misses_and_small_steps():
    r = np.concatenate([np.full(20, 8.0), np.full(20, 8.5), [np.nan], np.full(20, 20.0)])[None, :]
    det = np.isfinite(r)
    res = ls.edge_points(r, det)
    assert res.n_edges == 0          # 0.5 m step < min_jump_m; the sky gap is a miss, not an edge


# --------------------------------------------------------------------------------------------
# real recordings
# --------------------------------------------------------------------------------------------

def test_ouster_decoder_matches_metadata(test_data):
    lr = load_validation("lidar_real")
    f = lr.ouster_frames(test_data("lidar/ouster_os1_128.pcap"), test_data("lidar/ouster_os1_128.json"))
    assert f["range_m"].shape == (3, 128, 1024)                 # 3 frames of 1024 x 128 (lidar_mode 1024x10)
    assert list(f["frame_id"]) == [1795, 1796, 1797]
    assert 0.75 < np.mean(f["range_m"][0] > 0) < 0.9


def test_ouster_decoder_matches_ouster_sdk(test_data):
    sdk = pytest.importorskip("ouster.sdk", reason="ouster-sdk not installed (pip install ouster-sdk)")
    lr = load_validation("lidar_real")
    pcap, meta = test_data("lidar/ouster_os1_128.pcap"), test_data("lidar/ouster_os1_128.json")
    ours = lr.ouster_frames(pcap, meta)
    src = sdk.open_source(str(pcap), meta=[str(meta)])
    frame = next(iter(src))[0]
    np.testing.assert_array_equal(np.round(ours["range_m"][0] * 1000), frame.field("RANGE"))   # mm integers
    np.testing.assert_array_equal(ours["reflectivity"][0], frame.field("REFLECTIVITY"))
    np.testing.assert_array_equal(ours["near_ir"][0], frame.field("NEAR_IR"))


def test_ouster_real_statistics_plausible(test_data):
    test_data("lidar/ouster_os1_128.pcap")
    lr = load_validation("lidar_real")
    h = lr.measure_ouster()["headline"]
    assert 1.0 < h["sensor_height_m"] < 3.0                   # a car roof mount
    # OS1 data sheet (rev 6/7): range precision about 1-3 cm at 1-50 m; plus 8 mm quantisation
    assert 5.0 < h["noise_sigma_7_40m_mm"] < 30.0
    # published Velodyne figures: isolated misses 0.4-1 %, floating 4-9 % of edge returns; bounds widened 2x
    assert 0.1 < h["isolated_miss_pct"] < 2.0
    assert 2.0 < h["edge_floating_pct"] < 18.0
    assert h["ring_to_ring_offset_cm"] < 5.0                  # published Velodyne: 2.5-4 cm


def test_nuscenes_real_statistics_plausible():
    path = shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    lr = load_validation("lidar_real")
    m = lr.measure_nuscenes(path)
    h = m["headline"]
    assert h["sensor_height_m"] == pytest.approx(1.84, abs=0.05)   # SOURCES.md: about 1.84 m
    # ring cones against ros-drivers 32db.yaml (-30.67 .. +10.67 deg, 1.33 deg apart): this unit's
    # lowest rings come out up to 0.63 deg lower (measured; they see mostly road, where h_i and e_i
    # trade off), the others within 0.2 deg; 0.75 deg
    np.testing.assert_allclose(np.degrees(m["cones"].elevation_rad), np.linspace(-30.67, 10.67, 32), atol=0.75)
    # published HDL-32E figures: ~4 mm growing to 8-12 mm past 15 m
    assert 2.0 < h["noise_sigma_7_10m_mm"] < 8.0
    assert 0.3 < h["isolated_miss_pct"] < 1.5                 # published: 0.4-1 %
    assert 3.0 < h["edge_floating_pct"] < 12.0                # published: 4-9 %
    assert -0.8 < h["intensity_loglog_slope"] < -0.15         # published: -0.2 to -0.7
    assert 0.3 < h["ring_to_ring_offset_cm"] < 5.0            # published: 2.5-4 cm


def _ring_noise(kind, *, sigma_m=0.005, rho=0.0, lsb_m=0.0, seed=3):
    """Ranges of 16 rings of 4000 road returns at 10 m plus noise: white, or AR(1) with lag-1
    correlation ``rho`` (stationary, variance sigma^2), rounded to ``lsb_m`` when > 0."""
    rng = np.random.default_rng(seed)
    e = sigma_m * rng.standard_normal((16, 4000))
    n = e.copy()
    if kind == "ar1":
        for j in range(1, n.shape[1]):
            n[:, j] = rho * n[:, j - 1] + np.sqrt(1.0 - rho ** 2) * e[:, j]
    r = 10.0 + n
    if lsb_m > 0.0:
        r = np.round(r / lsb_m) * lsb_m
    return r, np.ones(r.shape, dtype=bool)


def test_second_difference_noise_white_quantised():
    lr = load_validation("lidar_real")
    r, road = _ring_noise("white", sigma_m=0.005, lsb_m=0.002)
    h = lr.second_difference_noise(r, road, lsb_m=0.002)
    # rounding to q adds q^2/12 per sample (Widrow: sigma 2.5 LSB): std(d2)^2 / 6 = s^2 + q^2 / 12
    assert h["noise_ring_clipped_mm"] == pytest.approx(np.hypot(5.0, 2.0 / np.sqrt(12.0)), rel=0.03)
    assert h["noise_ring_dequantised_mm"] == pytest.approx(5.0, rel=0.03)      # the injected sigma
    assert h["d2_lag1_corr"] == pytest.approx(-2.0 / 3.0, abs=0.03)           # -4 / 6 for white noise
    for k in lr.NOISE_LAGS:                                                    # 6 s^2 at every lag
        assert h[f"noise_lag{k}_mm"] == pytest.approx(h["noise_lag1_mm"], rel=0.05)
    # the MAD of whole-step second differences is a multiple of half a step (a median of an even count)
    d2 = np.diff(r[0], 2) / 0.002
    mad_steps = np.median(np.abs(d2 - np.median(d2)))
    assert 2 * mad_steps == pytest.approx(round(2 * mad_steps), abs=1e-9)


def test_second_difference_noise_correlated():
    lr = load_validation("lidar_real")
    r, road = _ring_noise("ar1", sigma_m=0.005, rho=0.5)
    h = lr.second_difference_noise(r, road, lsb_m=0.0)
    # AR(1): var(lag-k d2) = s^2 (6 - 8 rho^k + 2 rho^2k), so d2 / sqrt 6 reads s sqrt((6 - 8 rho^k + 2 rho^2k) / 6)
    for k in lr.NOISE_LAGS:
        expected = 5.0 * np.sqrt((6 - 8 * 0.5 ** k + 2 * 0.5 ** (2 * k)) / 6)
        assert h[f"noise_lag{k}_mm"] == pytest.approx(expected, rel=0.05), k
    # corr(d2_j, d2_j+1) = (-4 + 7 rho - 4 rho^2 + rho^3) / (6 - 8 rho + 2 rho^2) = -1.375 / 2.5 = -0.55
    assert h["d2_lag1_corr"] == pytest.approx(-0.55, abs=0.03)


def test_nuscenes_second_difference_noise_grows_with_lag():
    path = shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    lr = load_validation("lidar_real")
    m = lr.measure_nuscenes(path)
    h = lr.second_difference_noise(m["range_m"], m["road"], lsb_m=lr.RANGE_LSB_M[("nuscenes", "real")])
    # regression values (2026-11-28): per-ring clipped 4.43 mm, MAD 3.64 mm (3 steps of 1.21 mm), lag 1 -> 4:
    # 4.05 -> 6.12 mm, neighbouring d2 correlated -0.50
    assert h["noise_ring_clipped_mm"] == pytest.approx(4.43, abs=0.05)
    assert h["noise_ring_mad_mm"] == pytest.approx(3.64, abs=0.05)
    assert h["noise_lag4_mm"] / h["noise_lag1_mm"] == pytest.approx(1.51, abs=0.03)
    assert h["d2_lag1_corr"] == pytest.approx(-0.50, abs=0.02)


# statistics the lidar models do not reproduce yet (validation/lidar_real.md, "Not yet"); strict:
# a statistic that comes within the factor must lose its entry here
# (empty since 2026-11-27: floating edge returns came within the factor, 4.65 vs 5.09 %, once the
# simulated street got the sweep's street trees)
_NOT_YET: dict = {}


@pytest.mark.validation
@pytest.mark.parametrize("key", ["noise_sigma_7_40m_mm", "noise_ring_mad_mm", "noise_ring_clipped_mm",
                                 "ring_to_ring_offset_cm", "intensity_loglog_slope",
                                 "ring_gain_spread_pct", "isolated_miss_pct", "edge_floating_pct"])   # lidar_real.COMPARED
def test_nuscenes_sim_matches_real_within_factor_1_5(key, request):
    path = shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    if key in _NOT_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason=_NOT_YET[key]))
    lr = load_validation("lidar_real")
    res = _nuscenes_comparison(lr, path)
    real, sim = res["real"]["headline"][key], res["sim"]["headline"][key]
    ratio = lr.ratio(real, sim)
    assert 1 / 1.5 <= ratio <= 1.5, f"{key}: real {real:.4g}, sim {sim:.4g}, ratio {ratio:.3g}"   # acceptance: within 1.5x


_CACHE = {}


def _nuscenes_comparison(lr, path):
    if "nuscenes" not in _CACHE:
        _CACHE["nuscenes"] = lr.run(nuscenes_path=path)["nuscenes"]
    return _CACHE["nuscenes"]


def test_isolated_misses_by_range_and_range_matched():
    # Two rings of 1002 road cells, ranges 6 m (first 501 columns) and 25 m (the rest); misses
    # at known cells: 2 at 6 m, 10 at 25 m (hand count). A "simulation" with the same rates but
    # three times the far road must give the real overall fraction once matched by range.
    def grid(n_near, n_far, miss_near, miss_far):
        r = np.concatenate([np.full(n_near, 6.0), np.full(n_far, 25.0)])[None, :].repeat(2, axis=0)
        det = np.ones_like(r, dtype=bool)
        det[0, 1:1 + 2 * miss_near:2] = False
        det[1, n_near + 1:n_near + 1 + 2 * miss_far:2] = False
        return r, det

    r, det = grid(501, 501, 2, 10)
    real = ls.isolated_miss_fraction(det, np.ones_like(det), np.where(det, r, np.nan))
    assert (real.n_isolated, real.n_candidates) == (12, 2 * 1000)
    i6, i25 = real.edges_m.index(5.0), real.edges_m.index(20.0)
    assert real.n_isolated_by_range[i6] == 2 and real.n_isolated_by_range[i25] == 10
    r2, det2 = grid(501, 1503, 2, 30)
    sim = ls.isolated_miss_fraction(det2, np.ones_like(det2), np.where(det2, r2, np.nan))
    assert sim.fraction > 1.25 * real.fraction                  # more far road, more misses overall
    s, rr = ls.range_matched_miss_fractions(sim, real)
    assert rr == pytest.approx(real.fraction, rel=0.01) and s == pytest.approx(rr, rel=0.05)


def _two_walls(near_m=10.0, far_m=15.0, n_ring=9, n_col=60, rough_far_m=0.0, seed=1):
    """Rings 1 deg apart (-4..4 deg) and columns 0.2 deg apart looking along +x at two walls,
    x = near_m left of the edge (columns < n_col / 2) and x = far_m right of it: two planes, so
    both sides are clean; ``rough_far_m`` adds that much Gaussian range scatter to the far wall
    (leaves)."""
    rng = np.random.default_rng(seed)
    el = np.radians(np.linspace(-4, 4, n_ring))[:, None]
    az = np.radians(0.2 * (np.arange(n_col) - n_col // 2))[None, :]
    u = np.stack(np.broadcast_arrays(np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)), axis=-1)
    x = np.where(np.arange(n_col)[None, :] < n_col // 2, near_m, far_m)
    r = x / u[..., 0]
    far = np.arange(n_col)[None, :] >= n_col // 2
    r = r + np.where(far, rough_far_m * rng.standard_normal(r.shape), 0.0)
    return u, r


def test_clean_edge_points_counts_an_isolated_mixed_pixel():
    u, r = _two_walls()
    det = np.ones(r.shape, dtype=bool)
    c0 = ls.clean_edge_points(u * r[..., None], det)
    # every ring crosses the edge once: 9 clean edges of 5 m gap (bin 2-8 m), nothing floating
    np.testing.assert_array_equal(c0.n_edges, [0, 9, 0])
    np.testing.assert_array_equal(c0.n_floating, [0, 0, 0])
    # a mixed pixel in ring 4 at the first far column, 40 % of the way to the far wall
    r1 = r.copy()
    r1[4, 30] = r[4, 29] + 0.4 * (r[4, 30] - r[4, 29])
    c1 = ls.clean_edge_points(u * r1[..., None], det)
    np.testing.assert_array_equal(c1.n_floating, [0, 1, 0])
    np.testing.assert_allclose(c1.position, [0.4], atol=0.01)       # the far wall's range varies by mm
    # the same range in ring 5 too: a structure both rings see (supported), not counted
    r2 = r1.copy()
    r2[5, 30] = r1[4, 30]
    np.testing.assert_array_equal(ls.clean_edge_points(u * r2[..., None], det).n_floating, [0, 0, 0])
    # two neighbouring floating returns at one range (a post two columns wide): not counted
    r3 = r.copy()
    r3[4, 30:32] = 12.0
    r3[4, 32] = r[4, 32]
    c3 = ls.clean_edge_points(u * r3[..., None], det)
    assert c3.n_floating.sum() == 0 and c3.n_supported.sum() == 2


def test_clean_edge_points_skips_rough_sides():
    # 15 cm range scatter on the far wall (a crown of leaves scatters by decimetres): the RMS of a
    # 5-point run about its plane is 15 cm x sqrt(2 / 5) = 9 cm expected, far above 3 cm
    u, r = _two_walls(rough_far_m=0.15)
    c = ls.clean_edge_points(u * r[..., None], np.ones(r.shape, dtype=bool))
    assert c.n_edges_all >= 9 and c.n_edges.sum() == 0          # 9 rings' edges, plus breaks in the scatter
