"""gps_l1 receiver: blockage and multipath by ray casting, terms, determinism, fixes, example, plot.

The nav file is the one shipped with the example (examples/data/07590920.05n, GEONET station
0759, 2005-04-02), so these tests need nothing from ../shared/data.
"""

from __future__ import annotations

import numpy as np
import pytest

import gnss
import hifi
import sensors.gps as gps
from hifi.errors import ScenarioError

from conftest import REPO_ROOT

REPO = REPO_ROOT
EXAMPLES = REPO / "examples"
NAV = EXAMPLES / "data" / "07590920.05n"
START_UTC = "2005-04-02T00:10:00Z"
ORIGIN = {"lat_deg": 35.1608750388, "lon_deg": 139.6138372528, "height_m": 70.153}
ANTENNA_HEIGHT_M = 2.0


def _scenario(objects, params=None, duration_s=1.0, seed=3, sensor_extra=None):
    sensor = {"name": "gps", "model": "gps_l1", "rate_hz": 1.0, "position_m": [0.0, 0.0, ANTENNA_HEIGHT_M],
              "params": {"nav_file": "data/07590920.05n", **(params or {})}}
    sensor.update(sensor_extra or {})
    return {
        "simulation": {"duration_s": duration_s, "seed": seed, "start_utc": START_UTC, "origin": ORIGIN},
        "materials": {"concrete": {"reflectivity": 0.3}},
        "objects": [{"name": "ground", "mesh": "plane", "size_m": [400, 400], "material": "concrete"}, *objects],
        "sensors": [sensor],
    }


def _run(d, **kw):
    return hifi.Simulation.from_dict(d, base_dir=EXAMPLES).run(out=None, progress=False, **kw)["gps"]


def _horizontal(az_rad):
    """Unit horizontal vector toward azimuth az (clockwise from north), scene frame (x east, y north)."""
    return np.array([np.sin(az_rad), np.cos(az_rad), 0.0])


@pytest.fixture(scope="module")
def target():
    """A satellite between 20 and 35 deg elevation at the first epoch, seen from the origin."""
    nav = gnss.read_nav(NAV)
    t = gnss.utc_to_gpst(np.datetime64(START_UTC.rstrip("Z"), "ns"))
    import pymap3d
    rx = np.array(pymap3d.enu2ecef(0.0, 0.0, ANTENNA_HEIGHT_M, ORIGIN["lat_deg"], ORIGIN["lon_deg"], ORIGIN["height_m"]))
    pred = gnss.model_pseudoranges(nav, rx, t)
    el = pred["elevation"].values[0]
    ok = pred["visible"].values[0] & (el > np.radians(20)) & (el < np.radians(35))
    j = int(np.flatnonzero(ok)[0])
    return str(pred["sv"].values[j]), float(el[j]), float(pred["azimuth"].values[0, j])


def _canyon_objects(el, az, *, wall=True, d=10.0):
    """A blocker 10-12 m toward the satellite, and a wall whose face is d m behind the antenna."""
    h = _horizontal(az)
    yaw = float(np.degrees(np.arctan2(h[1], h[0])))
    tan = np.tan(el)
    # direct ray meets the blocker's near face at 2 + 10 tan(el); the reflected leg leaves the
    # wall at 2 + d tan(el) and passes the far face (d + 12 m on) at 2 + (2 d + 12) tan(el)
    blocker_h = ANTENNA_HEIGHT_M + 21.0 * tan
    objs = [{"name": "blocker", "mesh": "box", "size_m": [2.0, 20.0, blocker_h], "material": "concrete",
             "position_m": list(11.0 * h + [0, 0, blocker_h / 2]), "rpy_deg": [0, 0, yaw]}]
    if wall:
        objs.append({"name": "wall", "mesh": "box", "size_m": [1.0, 40.0, 60.0], "material": "concrete",
                     "position_m": list(-(d + 0.5) * h + [0, 0, 30.0]), "rpy_deg": [0, 0, yaw]})
    return objs, blocker_h


def test_building_blocks_and_wall_reflects_with_image_method_excess(target):
    sv, el, az = target
    d = 10.0
    objs, _ = _canyon_objects(el, az, d=d)
    ds = _run(_scenario(objs, {"multipath_search_radius_m": 50.0}))
    s = ds.sel(sv=sv).isel(frame=0)
    assert bool(s["visible"]) and bool(s["blocked"]) and bool(s["reflected"]) and bool(s["tracked"])
    assert int(s["reflector_object_id"]) == 2                    # objects: ground, blocker, wall
    # Image method (antenna mirrored in the wall plane): a vertical wall at distance d whose
    # normal points at the satellite's azimuth gives excess = 2 d cos(el) for a distant source
    # (exact |X - A'| - |X - A| differs by ~d^2 / range, 5e-6 m here).
    el_ds = float(s["elevation"])
    assert float(s["multipath_error"]) == pytest.approx(2 * d * np.cos(el_ds), abs=1e-3)  # 1 mm
    # specular point on the wall face, at height h + d tan(el)
    p = s["reflection_point_scene"].values
    assert p @ _horizontal(az) == pytest.approx(-d, abs=1e-3)   # 1 mm
    assert p[2] == pytest.approx(ANTENNA_HEIGHT_M + d * np.tan(el_ds), abs=1e-2)  # 1 cm
    assert np.isfinite(float(s["pseudorange"]))
    # without the wall the blocked satellite has no pseudorange
    objs, _ = _canyon_objects(el, az, wall=False)
    s2 = _run(_scenario(objs, {"multipath_search_radius_m": 50.0})).sel(sv=sv).isel(frame=0)
    assert bool(s2["blocked"]) and not bool(s2["reflected"]) and not bool(s2["tracked"])
    assert np.isnan(float(s2["pseudorange"])) and float(s2["multipath_error"]) == 0.0
    # multipath search switched off: the wall is ignored
    objs, _ = _canyon_objects(el, az, d=d)
    s3 = _run(_scenario(objs, {"multipath_search_radius_m": 0.0})).sel(sv=sv).isel(frame=0)
    assert bool(s3["blocked"]) and not bool(s3["reflected"])


def test_image_reflection_kernel_ground_and_orientation():
    """Ground under an antenna at height h: excess -> 2 h sin(el) (analytic, distant source)."""
    h, el = 1.7, np.radians([5.0, 30.0, 80.0])
    far = 2.2e7
    x = np.stack([np.zeros(3), far * np.cos(el), h + far * np.sin(el)], axis=1)
    a = np.tile([0.0, 0.0, h], (3, 1))
    up = np.tile([0.0, 0.0, 1.0], (3, 1))
    r = gps.image_reflection(a, x, np.zeros((3, 3)), up)
    np.testing.assert_allclose(r.excess_m, 2 * h * np.sin(el), atol=1e-6)   # 1 um
    np.testing.assert_allclose(r.point[:, 2], 0.0, atol=1e-6)
    # plane-wave specular distance h / tan(el); the point source at 22,000 km moves it by ~(h/tan el)^2 / range
    np.testing.assert_allclose(r.point[:, 1], h / np.tan(el), atol=1e-4)    # 0.1 mm
    r_flip = gps.image_reflection(a, x, np.zeros((3, 3)), -up)               # either orientation
    np.testing.assert_array_equal(r_flip.excess_m, r.excess_m)
    below = gps.image_reflection(a, x * [1, 1, -1], np.zeros((3, 3)), up)    # source under the plane
    assert not below.valid.any() and np.all(np.isnan(below.excess_m))


@pytest.fixture(scope="module")
def example():
    sim = hifi.load(EXAMPLES / "urban_canyon.toml")
    return sim.run(out=None, progress=False)["gps"]


def test_example_runs_with_blockage_and_multipath(example):
    ds = example
    assert ds.sizes["frame"] == 60 and ds.attrs["sensor_model"] == "gps_l1"
    assert ds["blocked"].values.any() and ds["reflected"].values.any()
    assert (ds["n_sv_used"].values < 4).any() and (ds["n_sv_used"].values >= 4).any()
    refl = ds["reflected"].values
    assert np.all(ds["multipath_error"].values[refl] > 0)
    assert np.all(ds["multipath_error"].values[~refl] == 0)
    for name, v in ds.variables.items():
        if name not in ds.dims:
            # xarray moves the units of decoded times (epoch, time_tag) into .encoding
            assert ("units" in v.attrs or "units" in v.encoding) and "long_name" in v.attrs, name


def test_terms_add_up_exactly(example):
    ds = example
    pr = ds["pseudorange"].values
    total = (ds["geometric_range"].values + ds["receiver_clock_bias"].values - ds["sv_clock_error"].values
             + ds["ephemeris_error"].values + ds["iono_delay"].values + ds["tropo_delay_dry"].values
             + ds["tropo_delay_wet"].values + ds["multipath_error"].values + ds["noise"].values)
    tracked = ds["tracked"].values
    np.testing.assert_array_equal(pr[tracked], total[tracked])        # same order: bit for bit
    assert np.all(np.isnan(pr[~tracked]))
    np.testing.assert_array_equal(tracked, ds["visible"].values & (~ds["blocked"].values | ds["reflected"].values))


def test_error_budget_adds_up_to_the_fix(example):
    """Linearised terms sum to the solver's error.  They differ by the corrections the solver
    evaluates at its estimate (tropo ~0.3 mm per metre of height at the zenith, ~1 mm/m at
    20 deg; see gnss.solver.position_error_budget): bound 1 cm + 0.5 % of the error."""
    ds = example
    ok = ds["n_sv_used"].values >= 4
    total = ds["error_budget_enu"].values.sum(axis=1)
    err = ds["position_error_enu"].values
    bound = 0.01 + 0.005 * np.linalg.norm(err, axis=1)     # m
    assert np.all(np.abs(total[ok] - err[ok]).max(axis=1) <= bound[ok])
    assert np.all(np.isnan(ds["error_budget_enu"].values[~ok]))


def test_same_seed_same_bytes_and_partition_independent(tmp_path, monkeypatch):
    hsim = hifi.load(EXAMPLES / "urban_canyon.toml")
    a = hsim.run(out=tmp_path / "a", duration_s=6.0, progress=False)["gps"].load()
    b = hsim.run(out=tmp_path / "b", duration_s=6.0, progress=False)["gps"].load()
    # blocks of 2 epochs instead of 128, and only odd frames computed (a time partition)
    monkeypatch.setattr(gps, "BLOCK_EPOCHS", 2)
    c = hsim.run(out=tmp_path / "c", duration_s=6.0, progress=False, keep=lambda i, k: k % 2 == 1)["gps"].load()
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
        if "frame" in a[name].dims:
            np.testing.assert_array_equal(a[name].values[1::2], c[name].values, err_msg=name)
    other = hsim.run(out=None, duration_s=6.0, seed=12, progress=False)["gps"]
    assert not np.array_equal(other["noise"].values, a["noise"].values)


def test_open_sky_fix_within_a_few_metres():
    ds = _run(_scenario([], duration_s=10.0, seed=5))
    assert not ds["blocked"].values.any()
    np.testing.assert_array_equal(ds["n_sv_used"].values, ds["visible"].values.sum(axis=1))
    err = ds["position_error_enu"].values
    assert np.all(np.hypot(err[:, 0], err[:, 1]) < 5.0)   # m; 0.7 m SISRE, 0.3 m noise, PDOP ~2
    assert np.all(np.abs(err[:, 2]) < 10.0)                # m
    assert np.all(ds["pdop"].values > 1) and np.all(ds["gdop"].values >= ds["pdop"].values)
    # the public solver on the written dataset gives the same fix (the solver's layout via epoch_view)
    import pymap3d
    origin_ecef = pymap3d.geodetic2ecef(ORIGIN["lat_deg"], ORIGIN["lon_deg"], ORIGIN["height_m"])
    sol = gnss.solve(gps.epoch_view(ds), gnss.read_nav(NAV), initial_position_ecef=origin_ecef)
    assert np.all(np.linalg.norm(sol["position_ecef"].values - ds["position_ecef"].values, axis=1) < 1e-3)  # 1 mm


def test_deep_canyon_epochs_with_fewer_than_four_satellites_are_masked():
    walls = [{"name": n, "mesh": "box", "size_m": [2.0, 400.0, 300.0], "material": "concrete",
              "position_m": [x, 0.0, 150.0]} for n, x in (("east", 5.0), ("west", -5.0))]
    ds = _run(_scenario(walls, {"multipath_search_radius_m": 0.0}, duration_s=3.0))
    n = ds["n_sv_used"].values
    assert np.all(n < 4)
    assert np.all(np.isnan(ds["position_ecef"].values)) and np.all(np.isnan(ds["gdop"].values))
    assert np.all(np.isnan(ds["clock_bias"].values))


def test_plot_writes_png(example, tmp_path):
    pytest.importorskip("matplotlib", reason="hifi plot needs matplotlib (the viz extra)")
    from _plots import outside_figure, png_size
    from hifi.viz.plot import make_figure, plot_dataset
    out = plot_dataset(example, tmp_path / "gps.png", frame=20)
    width, height = png_size(out)
    assert 1000 <= width <= 1750 and 800 <= height <= 1200          # 13 x 9.5 in at 110 dpi
    fig = make_figure(example, frame=20)
    assert outside_figure(fig) == []                                 # no clipped label or legend
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "tracked, direct", "blocked, reflected (multipath)", "blocked, no pseudorange"]
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_bad_parameters_raise_scenario_errors(tmp_path):
    d = _scenario([], {"nav_file": "data/missing.05n"})
    with pytest.raises(ScenarioError, match="nav_file"):
        hifi.Simulation.from_dict(d, base_dir=EXAMPLES)
    with pytest.raises(ScenarioError, match="Eq. \\(2\\)"):
        hifi.Simulation.from_dict(_scenario([], {"ephemeris_error_model": "vane"}), base_dir=EXAMPLES)
    with pytest.raises(ScenarioError, match="iono_model"):
        hifi.Simulation.from_dict(_scenario([], {"iono_model": "nequick"}), base_dir=EXAMPLES)
