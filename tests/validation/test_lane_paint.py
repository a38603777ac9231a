"""validation/lane_paint.py: the paint / asphalt separation on synthetic scans with known answers
(default suite), the real recordings' paint classes, and the full comparison with hifi's
simulation (``validation`` marker)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_validation, shared_path

#: Synthetic scan: sensor height [m], ring elevations [deg], columns, stripe edges [m] (x, along y).
_H = 1.84
_ELEV_DEG = np.linspace(-25.0, -4.5, 32)       # ground at 4.35-23.4 m: inside RANGE_BAND_M (4-25 m)
_COLUMNS = 1000
_STRIPES_X = ((1.5, 1.65), (-3.65, -3.5))        # two 15 cm lines along y
_KERB_X = 5.0                                    # a sidewalk 15 cm high from here to _WALL_X
_WALL_X = 8.0                                    # nothing returns beyond (a wall's shadow: misses)
_PAINT_FACTOR = 3.0


def _synthetic_scan(*, gain_sigma=0.2, noise_sigma=0.05, seed=4):
    """(grid, paint truth) of a flat road seen from ``_H``: asphalt intensity 30 (h / r)^0.5 codes
    times a per-ring log-normal gain and a per-return log-normal noise, paint ``_PAINT_FACTOR``
    times the asphalt there, integer codes; a sidewalk 15 cm high at ``_KERB_X`` < x < ``_WALL_X``,
    misses beyond."""
    rng = np.random.default_rng(seed)
    el = np.radians(_ELEV_DEG)[:, None]
    az = np.linspace(0.0, 2 * np.pi, _COLUMNS, endpoint=False)[None, :]
    rh = _H / np.tan(-el) * np.ones_like(az)
    x, y = rh * np.cos(az), rh * np.sin(az)
    kerb = x > _KERB_X
    z = np.where(kerb, -_H + 0.15, -_H)
    pts = np.stack([x, y, z], axis=-1)
    r = np.linalg.norm(pts, axis=-1)
    paint = np.zeros(x.shape, bool)
    for lo, hi in _STRIPES_X:
        paint |= (x >= lo) & (x <= hi)
    paint &= ~kerb
    gain = np.exp(gain_sigma * rng.standard_normal((len(_ELEV_DEG), 1)))
    level = 30.0 * np.sqrt(_H / r) * gain * np.exp(noise_sigma * rng.standard_normal(x.shape))
    intensity = np.round(np.where(paint, _PAINT_FACTOR * level, level))
    return {"points_sensor": pts, "intensity": intensity, "detected": x < _WALL_X}, paint


# --------------------------------------------------------------------------------------------
# the estimator on synthetic data (default suite)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_low, n_high", [(500, 500), (950, 50)])
def test_otsu_threshold_is_the_lower_end_of_the_gap(n_low, n_high):
    # closed form: two clusters, uniform on [0, 1) and [3, 4); every cut in the gap gives the same
    # between-class variance (the classes do not change), the first is the gap's lower end,
    # whatever the weights (50:50 and 95:5); 256 bins over [0, 4): bin edges 1/64 apart, 1.0 is one
    lp = load_validation("lane_paint")
    rng = np.random.default_rng(1)
    v = np.concatenate([rng.uniform(0.0, 1.0, n_low), rng.uniform(3.0, 4.0, n_high), [0.0, 4.0]])
    assert lp.otsu_threshold(v) == pytest.approx(1.0, abs=1.0 / 64)


def test_otsu_threshold_of_a_degenerate_sample_is_nan():
    lp = load_validation("lane_paint")
    assert np.isnan(lp.otsu_threshold([2.0, 2.0, 2.0]))
    assert np.isnan(lp.otsu_threshold([1.0]))


def test_separation_recovers_the_painted_stripes():
    # the synthetic scan's truth is its construction: returns inside the two 15 cm stripes
    lp = load_validation("lane_paint")
    grid, truth = _synthetic_scan()
    m = lp.measure(grid, truth, bootstrap=False)
    assert m["precision"] >= 0.95 and m["recall"] >= 0.95, (m["precision"], m["recall"])
    # sidewalk: no road return on it, none within CLEARANCE_M (horizontally) of a sidewalk return
    # (brute force here, a k-d tree there), and the road still reaches to within 1 m of the kerb
    p = grid["points_sensor"]
    road, side = m["road"].mask, grid["detected"] & (p[..., 0] > _KERB_X)
    assert not np.any(road & side)
    near = road & (p[..., 0] > _KERB_X - 1.0)          # the others are farther than 1 m from any
    d = np.linalg.norm(p[near][:, None, :2] - p[side][None, :, :2], axis=-1).min(axis=1)
    assert d.min() > lp.CLEARANCE_M
    assert np.any(road & (p[..., 0] > _KERB_X - 1.0))
    # the plane: the sensor 1.84 m above it, level (construction)
    assert m["road"].plane.height_m == pytest.approx(_H, abs=1e-6)


def test_paint_statistics_give_the_constructed_ratio():
    # paint is _PAINT_FACTOR = 3 times the asphalt at the same place (construction); rounding to
    # whole codes (asphalt 5-30 codes: up to 10 % on a ratio of medians) and the per-ring gains
    # (log-normal 0.2, weighed differently by the two classes' medians) allow 15 %; the paired
    # ratio (each paint return against its own ring's asphalt) cancels the gains: 10 %
    lp = load_validation("lane_paint")
    grid, truth = _synthetic_scan()
    s = lp.measure(grid, truth, bootstrap=False)["stats"]
    np.testing.assert_allclose(s.ratio, _PAINT_FACTOR, rtol=0.15)
    np.testing.assert_allclose(s.paired, _PAINT_FACTOR, rtol=0.10)
    assert np.all(s.n_paint >= lp.MIN_POINTS)
    # incidence on the plane: i = 90 deg - elevation, so cos i = h / r (closed form)
    r = s.range_m
    np.testing.assert_allclose(np.cos(np.radians(s.incidence_deg)), _H / r, rtol=0.02)


def test_raw_intensity_otsu_takes_bright_rings_for_paint():
    # why the contrast against the local asphalt level: with the per-ring gain spread of a real
    # unit (hdl32e laser_gain_sigma 0.45, fitted to the nuScenes sweep) and the
    # fall with range, Otsu on the raw codes splits the asphalt itself (here over a quarter of
    # the road in the bright class, where 3.6 % is paint) and the contrast does not
    lp = load_validation("lane_paint")
    grid, truth = _synthetic_scan(gain_sigma=0.45)
    m = lp.measure(grid, truth, bootstrap=False)
    road = np.isfinite(m["sep"].contrast)
    raw = np.log(grid["intensity"][road])
    bright = raw > lp.otsu_threshold(raw)
    assert bright.mean() > 0.25
    assert m["precision"] >= 0.9 and m["recall"] >= 0.9


def test_lambertian_ratio_against_the_radiometry_module():
    # independent implementation: sensors.radiometry.oren_nayar_backscatter (what the lidar
    # models use), rho_p cos i / (rho_a f_ON(cos i, sigma))
    from sensors.radiometry import oren_nayar_backscatter
    lp = load_validation("lane_paint")
    c = np.linspace(0.05, 1.0, 20)
    got = lp.lambertian_ratio(c, paint_reflectivity=0.75, asphalt_reflectivity=0.278, asphalt_roughness_deg=11.1)
    want = 0.75 * c / (0.278 * oren_nayar_backscatter(c, np.radians(11.1)))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a Lambertian asphalt (roughness 0): the ratio of the reflectances at every incidence
    np.testing.assert_allclose(lp.lambertian_ratio(c, paint_reflectivity=0.75, asphalt_reflectivity=0.25,
                                                   asphalt_roughness_deg=0.0), 3.0, rtol=1e-12)


def test_ring_bootstrap_collapses_without_ring_scatter():
    # every ring alike (asphalt 10, paint 30 everywhere): every resample gives 3 exactly
    lp = load_validation("lane_paint")
    r = np.tile(np.linspace(4.5, 24.0, 200), (16, 1))
    paint = np.zeros(r.shape, bool)
    paint[:, ::10] = True
    i = np.where(paint, 30.0, 10.0)
    iv = lp.ring_bootstrap(i, r, paint, ~paint, n_resamples=50)
    np.testing.assert_array_equal(iv, 3.0)


def test_reconciling_exponent():
    # closed form: a code ~ rho^gamma raises a ratio to the power gamma
    lp = load_validation("lane_paint")
    g = lp.reconciling_exponent([2.0 ** 1.5, 4.0, 2.0], [2.0, 2.0, 0.9])
    np.testing.assert_allclose(g[:2], [1.5, 2.0])
    assert np.isnan(g[2])                    # a simulated ratio not above 1 has no exponent


# --------------------------------------------------------------------------------------------
# the real recordings' paint (default suite: no simulation, ~2 s each)
# --------------------------------------------------------------------------------------------

def _on_ouster_stripes(lp, xy):
    on = np.zeros(len(xy), bool)
    for _, a, b, w in lp.OUSTER_STRIPES:
        a, b = np.asarray(a, float), np.asarray(b, float)
        length = np.linalg.norm(b - a)
        u = (b - a) / length
        q = xy - a
        along, across = q @ u, q @ np.array([-u[1], u[0]])
        on |= (along > -0.3) & (along < length + 0.3) & (np.abs(across) < w / 2 + 0.3)
    return on


def test_ouster_capture_paint_lies_on_its_markings(test_data):
    test_data("lidar/ouster_os1_128.pcap")
    lp = load_validation("lane_paint")
    lr = load_validation("lidar_real")
    m = lp.measure(lr.ouster_grid(0), roi_m=lp.OUSTER_ROI_M, bootstrap=False)
    paint = m["sep"].paint
    # regression (measured 2026-11-27, 86 %): the stripe table was mapped from this paint class; the
    # bright class forms the crosswalk bars and the two lane lines, a few arrows aside
    assert _on_ouster_stripes(lp, m["points_sensor"][paint][:, :2]).mean() >= 0.75
    # the capture itself reports part of a lane line in its retroreflector range (Ouster firmware
    # user manual, calibrated reflectivity: 0..100 Lambertian, 101..255 retroreflectors), never
    # the asphalt: 39 paint returns at 101-117 (measured)
    i = m["intensity"]
    assert np.sum(i[paint] > 100) > 0
    assert np.sum(i[m["sep"].asphalt] > 100) == 0


def test_nuscenes_sweep_paint_lies_on_its_markings():
    path = shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    lp = load_validation("lane_paint")
    lr = load_validation("lidar_real")
    m = lp.measure(lr.nuscenes_grid(path), bootstrap=False)
    p = m["points_sensor"][m["sep"].paint]
    d = np.min([np.abs(p[:, 0] - (x0 - np.tan(np.radians(heading)) * p[:, 1]))
                for _, x0, heading, _, _ in lp.NUSCENES_STRIPES], axis=0)
    # regression (measured 2026-11-27, 84 % of 297): the stripe table was mapped from this paint class
    assert np.mean(d < 0.3) >= 0.75
    assert 0.01 < m["sep"].paint.sum() / np.isfinite(m["sep"].contrast).sum() < 0.10     # measured 3.0 %


# --------------------------------------------------------------------------------------------
# the full comparison (validation marker: two simulated sweeps, ~20 s)
# --------------------------------------------------------------------------------------------

_CACHE: dict = {}


def _comparison():
    if "res" not in _CACHE:
        lp = load_validation("lane_paint")
        _CACHE["res"] = lp.run(sim=True)
    return _CACHE["res"]


def _record(key):
    if key == "nuscenes":
        shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    return _comparison()[key]


@pytest.mark.validation
@pytest.mark.parametrize("key", ["nuscenes", "ouster"])
def test_simulated_paint_follows_the_lambertian_closed_form(key):
    # closed form (lane_paint.lambertian_ratio of the library's road_paint_white over
    # asphalt_worn at each bin's median incidence) against the simulation over its true classes,
    # paired with the own ring's asphalt (which cancels the per-laser gains); 10 %: whole codes
    # (asphalt 6-13) and the spread of incidences in a bin
    lp = load_validation("lane_paint")
    rec = _record(key)
    t = rec["sim"]["truth"]
    np.testing.assert_allclose(t.paired, lp.closed_form(t, rec["wavelength"]), rtol=0.10)


@pytest.mark.validation
@pytest.mark.parametrize("key", ["nuscenes", "ouster"])
def test_separation_finds_the_simulated_paint(key):
    # against the simulation's true classes (the object each return hit); measured 95 / 83 %
    # (nuScenes) and 100 / 88 % (Ouster): the misses are paint beyond 15 m, where a Lambertian
    # paint is within 30 % of the asphalt and below any threshold
    rec = _record(key)
    assert rec["sim"]["precision"] >= 0.9
    assert rec["sim"]["recall"] >= 0.75


# real markings not reproduced yet (validation/lane_paint.md): strict, so a ratio that comes within
# the factor must lose its entry here
_NOT_YET = {"ouster": "the crossing's markings are 3-6 times the asphalt at every range (beads: their return "
                      "holds up at grazing incidence); road_paint_white is Lambertian: sim / real 0.62 over the band"}


@pytest.mark.validation
@pytest.mark.parametrize("key", ["nuscenes", "ouster"])
def test_paint_asphalt_ratio_real_vs_sim_within_factor_1_5(key, request):
    if key in _NOT_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason=_NOT_YET[key]))
    lr = load_validation("lidar_real")
    rec = _record(key)
    real, sim = rec["real"]["stats"].ratio[-1], rec["sim"]["stats"].ratio[-1]
    q = lr.ratio(real, sim)
    assert 1 / 1.5 <= q <= 1.5, f"paint / asphalt over 4-25 m: real {real:.3g}, sim {sim:.3g}, sim / real {q:.3g}"


@pytest.mark.validation
def test_figures_and_tables_are_written(tmp_path):
    from _plots import png_size
    lp = load_validation("lane_paint")
    res = _comparison()
    lp.plot(res, tmp_path / "a.png")
    lp.plot_bev(res, tmp_path / "b.png")
    for name in ("a.png", "b.png"):
        w, h = png_size(tmp_path / name)
        assert w > 500 and h > 500
    text = lp.markdown_table(res["ouster"], "Ouster OS1-128")
    assert text.count("\n") == 1 + 6 * 5              # header, rule, 6 bins (5 + the band) x 5 rows
