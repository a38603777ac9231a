"""The ``ouster`` model: metadata reading, beam geometry, timing, channels, errors, and the
check against the real OS1-128 capture (tests/data/lidar, its own metadata).

Independent implementations: ouster-sdk 1.0.1 (test extra; its ``SensorInfo`` parser and its
``XYZLut``), skipped visibly where it is missing. Analytic expectations are derived in the
comments; fitted defaults are named as such.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT, load_validation

import hifi
from hifi.run.dataset import seconds_since_start
from sensors import ouster as osr

CAPTURE_JSON = REPO_ROOT / "tests" / "data" / "lidar" / "ouster_os1_128.json"


def _sdk():
    return pytest.importorskip("ouster.sdk.core", reason="ouster-sdk not installed (pip install ouster-sdk)")




def _scene(sensor_params, *, objects=None, duration_s=0.1, position=(0.0, 0.0, 1.9), rpy=(0.0, 0.0, 0.0),
           rate_hz=None, materials=None):
    sensor = {"name": "os", "model": "ouster", "position_m": list(position), "rpy_deg": list(rpy),
              "params": dict(sensor_params)}
    if rate_hz is not None:
        sensor["rate_hz"] = rate_hz
    return {"simulation": {"duration_s": duration_s, "seed": 3},
            "materials": materials or {"asphalt": {"reflectivity": 0.1, "class": "road"},
                                       "white": {"reflectivity": 0.8, "class": "wall"},
                                       "grey": {"reflectivity": 0.5, "class": "wall"}},
            "objects": objects if objects is not None else
            [{"name": "road", "mesh": "plane", "size_m": [100, 100], "material": "asphalt"}],
            "sensors": [sensor]}


def _sim(d, base_dir=None):
    return hifi.Simulation.from_dict(d) if base_dir is None else hifi.Simulation.from_dict(d, base_dir=base_dir)


def _run(d, base_dir=None):
    return _sim(d, base_dir).run(out=None)["os"]


# --------------------------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", sorted(osr.PRESETS))
def test_presets_read_as_ouster_sdk_reads_them(preset):
    c = _sdk()
    path = osr.PRESETS[preset]
    m = osr.read_metadata(path)
    info = c.SensorInfo(path.read_text())                   # ouster-sdk's parser: the independent reading
    np.testing.assert_array_equal(m.beam_altitude_deg, info.beam_altitude_angles)
    np.testing.assert_array_equal(m.beam_azimuth_deg, info.beam_azimuth_angles)
    np.testing.assert_allclose(m.beam_to_lidar_mm, info.beam_to_lidar_transform, atol=0)
    np.testing.assert_allclose(m.lidar_to_sensor_mm, info.lidar_to_sensor_transform, atol=0)
    assert m.lidar_mode == str(info.config.lidar_mode)
    assert m.columns_per_frame == info.format.columns_per_frame
    assert m.pixels_per_column == info.format.pixels_per_column
    assert m.columns_per_packet == info.format.columns_per_packet
    if str(info.format.udp_profile_lidar) == "OFF":
        # ouster-sdk reads a unit that was not streaming (empty udp_dest: OS1-64 fw 2.1.2) as OFF;
        # the profile it would send is LEGACY (no profile in the file), and the metadata the
        # simulated unit writes gives it a destination, so ouster-sdk reads LEGACY there
        assert json.loads(path.read_text())["config_params"]["udp_dest"] == ""
        eff = c.SensorInfo(json.dumps(osr.effective_metadata(m, m.lidar_mode, m.udp_profile_lidar)))
        assert m.udp_profile_lidar == str(eff.format.udp_profile_lidar) == "LEGACY"
    else:
        assert m.udp_profile_lidar == str(info.format.udp_profile_lidar)
    assert m.udp_port_lidar == info.config.udp_port_lidar
    assert m.prod_sn == info.sn and m.init_id == info.init_id
    assert m.prod_line == info.prod_line
    assert m.range_offset_m == pytest.approx(info.lidar_origin_to_beam_origin_mm / 1e3, abs=1e-12)


def test_presets_cover_both_layouts_and_their_products():
    # sensors/data/README.md: two nested files (OS0-128 fw 3.0.1, OS1-64 fw 2.1.2), two legacy
    got = {k: (osr.read_metadata(p).layout, osr.read_metadata(p).prod_line, osr.read_metadata(p).pixels_per_column)
           for k, p in osr.PRESETS.items()}
    assert got == {"os0_128": ("nested", "OS-0-128", 128), "os1_64": ("nested", "OS-1-64", 64),
                   "os1_128": ("legacy", "OS-1-128", 128), "os2_128": ("legacy", "OS-2-128", 128)}
    # the OS1-128 preset is the capture's own metadata (same bytes)
    assert osr.PRESETS["os1_128"].read_bytes() == CAPTURE_JSON.read_bytes()


def test_minimal_legacy_metadata_gets_ouster_sdk_defaults(tmp_path):
    # Only the beam table and the mode, as ouster-sdk's tests/pcaps/OS-1-64_sensor_config_reduced.json;
    # the defaults (beam origin 12.163 mm without a product line, lidar_to_sensor 36.18 mm up and a
    # half turn, LEGACY, port 7502) must be the ones ouster-sdk fills in.
    c = _sdk()
    alt = list(np.linspace(16.6, -16.6, 64))       # ouster-sdk wants 64 beams without a data format
    az = [3.0, 0.9, -1.3, -3.1] * 16
    path = tmp_path / "reduced.json"
    path.write_text(json.dumps({"beam_altitude_angles": alt, "beam_azimuth_angles": az, "lidar_mode": "512x20"}))
    m = osr.read_metadata(path)
    info = c.SensorInfo(path.read_text())
    assert m.layout == "legacy" and m.udp_profile_lidar == "LEGACY" and m.udp_port_lidar == 7502
    assert m.range_offset_m * 1e3 == pytest.approx(info.lidar_origin_to_beam_origin_mm, abs=1e-12)   # 12.163
    np.testing.assert_allclose(m.lidar_to_sensor_mm, info.lidar_to_sensor_transform, atol=0)
    assert m.columns_per_frame == 512 and m.rate_hz == 20.0


# --------------------------------------------------------------------------------------------
# geometry
# --------------------------------------------------------------------------------------------

def _sdk_points(c, path_or_text, range_m):
    """ouster-sdk's XYZLut: points [m] of every pixel for a range [m], as (w, h, 3)."""
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    info = c.SensorInfo(text)
    lut = c.XYZLut(info)
    w, h = info.format.columns_per_frame, info.format.pixels_per_column
    d = np.asarray(lut.direction).reshape(h, w, 3).transpose(1, 0, 2)      # per mm of range
    o = np.asarray(lut.offset).reshape(h, w, 3).transpose(1, 0, 2)         # [m]
    return np.asarray(range_m)[..., None] * 1e3 * d + o, d * 1e3


@pytest.mark.parametrize("preset", sorted(osr.PRESETS))
def test_beams_equal_ouster_sdk_xyzlut(preset):
    # ray origins and directions equal ouster-sdk's XYZLut to 1 mm at 10 m
    c = _sdk()
    m = osr.read_metadata(osr.PRESETS[preset])
    b = osr.ouster_beams(m.beam_altitude_deg, m.beam_azimuth_deg, m.beam_to_lidar_mm, m.lidar_to_sensor_mm,
                         m.columns_per_frame)
    p_sdk, d_sdk = _sdk_points(c, osr.PRESETS[preset], 10.0)
    np.testing.assert_allclose(b.direction_sensor, d_sdk, atol=1e-9)
    # a range r from the lidar origin is the beam origin plus (r - n) along the beam
    np.testing.assert_allclose(b.origin_sensor + (10.0 - b.range_offset_m) * b.direction_sensor, p_sdk,
                               atol=1e-3)    # 1 mm


def test_beams_with_vertical_beam_origin_equal_ouster_sdk(tmp_path):
    # A beam_to_lidar_transform with a z offset (synthetic: none of the four real units has one):
    # n = hypot(x, z) (ouster-sdk make_xyz_lut), origin lifted by z.
    c = _sdk()
    meta = json.loads(osr.PRESETS["os0_128"].read_text())
    meta["beam_intrinsics"]["beam_to_lidar_transform"] = [1, 0, 0, 20.0, 0, 1, 0, 0, 0, 0, 1, 7.5, 0, 0, 0, 1]
    text = json.dumps(meta)
    (tmp_path / "m.json").write_text(text)
    m = osr.read_metadata(tmp_path / "m.json")
    b = osr.ouster_beams(m.beam_altitude_deg, m.beam_azimuth_deg, m.beam_to_lidar_mm, m.lidar_to_sensor_mm, 1024)
    assert b.range_offset_m == pytest.approx(np.hypot(20.0, 7.5) / 1e3, abs=1e-15)
    p_sdk, _ = _sdk_points(c, text, 10.0)
    np.testing.assert_allclose(b.origin_sensor + (10.0 - b.range_offset_m) * b.direction_sensor, p_sdk, atol=1e-3)


def test_simulated_hits_lie_on_the_xyzlut_rays():
    # End to end: the OS1-128 preset at the centre of a sphere of radius 10 m (every ray hits at
    # about 10 m). The true hit of each pixel is ouster-sdk's point for its true range from the
    # lidar origin, distance + n: origins and directions of the model are the XYZLut's.
    c = _sdk()
    d = _scene({"preset": "os1_128", "edge_subrays": 0}, position=(0.0, 0.0, 0.0),
               objects=[{"name": "ball", "mesh": "sphere", "radius_m": 10.0, "material": "white"}])
    with pytest.warns(hifi.ScenarioWarning, match="inside"):            # meant: the sensor is in the sphere
        ds = _run(d)
    f = ds.isel(frame=0)
    hit = f["object_id"].values == 0
    assert hit.mean() > 0.999
    r = f["distance"].values + ds.attrs["ouster_range_offset_m"]
    p_sdk, _ = _sdk_points(c, osr.PRESETS["os1_128"], r)
    p = np.stack([f[v].values for v in ("x", "y", "z")], axis=-1)      # scene = sensor frame here
    np.testing.assert_allclose(p[hit], p_sdk[hit], atol=1e-3)          # 1 mm at 10 m


def test_ground_radii_on_a_flat_plane_are_analytic():
    # Lidar frame: beam i of column j leaves from n (cos te, sin te, 0) (OS1-128: no z offset) with
    # altitude phi_i < 0; the lidar origin is H above the road, so the ray travels H / sin(-phi)
    # and lands at horizontal offset n u_e + H cot(-phi) u_b (u_e, u_b: unit vectors at te and
    # te + ta): radius sqrt(n^2 + L^2 + 2 n L cos(ta)), L = H cot(-phi). The OS1-128's lidar frame
    # is 36.18 mm above its sensor frame (lidar_to_sensor_transform), so the sensor sits at
    # H - 36.18 mm.
    h = 1.9
    m = osr.read_metadata(CAPTURE_JSON)
    d = _scene({"preset": "os1_128", "lidar_mode": "512x20", "edge_subrays": 0, "detection_model": "blensor",
                "distance_lower_m": 80.0, "distance_upper_m": 100.0},
               position=(0.0, 0.0, h - m.lidar_to_sensor_mm[2, 3] / 1e3), duration_s=0.05,
               materials={"asphalt": {"reflectivity": 0.8, "class": "road"}})
    ds = _run(d)
    f = ds.isel(frame=0)
    phi = np.radians(m.beam_altitude_deg)
    ta = -np.radians(m.beam_azimuth_deg)
    down = phi < np.radians(-3.0)                                          # rings within 37 m (road: 50 m)
    L = h / np.tan(-phi[down])
    n = m.range_offset_m
    expect = np.sqrt(n ** 2 + L ** 2 + 2 * n * L * np.cos(ta[down]))
    radius = np.hypot(f["x"].values, f["y"].values)[:, down]               # (column, beam), sensor above origin
    np.testing.assert_allclose(np.median(radius, axis=0), expect, rtol=1e-4)


def test_columns_fire_at_once_at_the_mode_rate():
    # Ouster: every beam of a column at the same instant; measurement id j at t + j / (w fps).
    ds = _run(_scene({"preset": "os1_64", "lidar_mode": "512x20"}, duration_s=0.1))
    assert ds.sizes["frame"] == 2 and ds.attrs["rate_hz"] == 20.0          # 512x20: 20 frames per second
    assert ds.sizes["column"] == 512 and ds.sizes["beam"] == 64
    t = seconds_since_start(ds, "timestamp")                               # (frame, column, beam)
    assert np.all(t == t[:, :, :1])                                        # simultaneous
    expect = np.arange(2)[:, None] / 20.0 + np.arange(512)[None, :] / (512 * 20.0)
    np.testing.assert_allclose(t[:, :, 0], expect, atol=1e-9)             # xarray decodes times to whole ns


def test_column_stride_keeps_every_nth_column():
    ds = _run(_scene({"preset": "os1_128", "column_stride": 8}, duration_s=0.05))
    assert list(ds["column"].values[:3]) == [0, 8, 16] and ds.sizes["column"] == 128
    np.testing.assert_allclose(ds["column_time"].values, ds["column"].values / (1024 * 10.0))


# --------------------------------------------------------------------------------------------
# measurement
# --------------------------------------------------------------------------------------------

def test_range_is_whole_mm_from_the_lidar_origin():
    ds = _run(_scene({"preset": "os2_128", "column_stride": 4}))
    f = ds.isel(frame=0)
    det = f["detected"].values
    assert det.sum() > 1000
    n = ds.attrs["ouster_range_offset_m"]
    assert n == pytest.approx(0.013762)                                   # OS2-128 metadata: 13.762 mm
    rng = f["range"].values[det].astype(float)
    mm = rng * 1e3
    np.testing.assert_allclose(mm, np.round(mm), atol=2e-3)              # float32 of a whole mm at < 200 m
    np.testing.assert_allclose(rng, f["distance_noisy"].values[det] + n, atol=2e-5)
    assert np.all(np.isnan(f["range"].values[~det]))


def test_channels_are_photon_counts_and_a_reflectivity_byte():
    # A grey wall (rho 0.5) 12 m ahead, facing the sensor; the road below.
    objects = [{"name": "road", "mesh": "plane", "size_m": [100, 100], "material": "asphalt"},
               {"name": "wall", "mesh": "box", "size_m": [0.2, 40, 20], "position_m": [12.1, 0, 5], "material": "grey"}]
    ds = _run(_scene({"preset": "os1_128", "column_stride": 2}, objects=objects))
    f = ds.isel(frame=0)
    det = f["detected"].values
    for name in ("signal", "near_ir", "intensity"):
        v = f[name].values[np.isfinite(f[name].values)]
        assert np.all(v == np.round(v)) and v.min() >= 0                  # integer counts / codes
    assert f["intensity"].values[det].max() <= 255 and f["signal"].values[det].max() <= 65535
    wall = det & (f["object_id"].values == 1)
    # near-IR: Poisson(6500 x 0.5) on the wall (fitted default); mean within 5 standard errors
    nir = f["near_ir"].values[wall]
    assert abs(nir.mean() - 3250.0) < 5 * np.sqrt(3250.0 / nir.size)
    # reflectivity byte: 100 rho cos(i) with the per-beam gain (log-normal sigma 0.3): the median
    # over many beams of the head-on wall is within 15 % of 50
    inc = f["reflectivity"].values[wall]
    assert np.median(f["intensity"].values[wall] / (100 * inc)) == pytest.approx(1.0, rel=0.15)
    assert inc.max() <= 0.5 + 1e-6 and np.percentile(inc, 99) > 0.49     # rho cos(i): 0.5 head-on
    # signal ~ P_r: at 12 m (full overlap is 15 m: factor (12 / 15)^2 = 0.64) a rho 0.5 target at
    # normal incidence gives 1.43e5 x 0.5 x 0.64 / 12^2 = 318 photons (fitted defaults)
    near_normal = wall & (f["reflectivity"].values > 0.49)
    r = f["distance"].values[near_normal]
    expect = 1.43e5 * 0.5 * (r / 15.0) ** 2 / r ** 2 * np.exp(-2 * 0.0 * r)
    assert np.median(f["signal"].values[near_normal] / expect) == pytest.approx(1.0, rel=0.03)
    # misses: no range, no signal, sky near-IR ~ 470
    sky = ~np.isfinite(f["distance"].values)
    assert np.all(np.isnan(f["signal"].values[sky])) and abs(np.mean(f["near_ir"].values[sky]) - 470) < 5


def test_same_seed_same_bytes_other_seed_differs():
    d = _scene({"preset": "os0_128", "column_stride": 16})
    a, b = _run(d), _run(d)
    for v in ("range", "signal", "near_ir", "intensity", "x_noisy"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
    d["simulation"]["seed"] = 4
    c = _run(d)
    assert not np.array_equal(np.nan_to_num(a["range"].values), np.nan_to_num(c["range"].values))


def test_dataset_layout_and_metadata_attribute():
    ds = _run(_scene({"preset": "os1_64", "lidar_mode": "1024x20", "udp_profile_lidar": "RNG19_RFL8_SIG16_NIR16",
                      "column_stride": 4}, duration_s=0.05))
    assert ds["x_noisy"].dims == ("frame", "column", "beam")
    for v in ("timestamp", "yaw", "pitch", "distance", "detected", "distance_noisy", "x", "y", "z", "x_noisy",
              "y_noisy", "z_noisy", "object_id", "intensity", "received_power", "snr", "reflectivity", "range",
              "signal", "near_ir"):
        assert v in ds and "long_name" in ds[v].attrs
        assert "units" in ds[v].attrs or "units" in ds[v].encoding          # times: CF units, decoded
    refl = ds["reflectivity"].values
    assert np.nanmin(refl) >= 0 and np.nanmax(refl) <= 1                  # reflectivity is calibrated, 0..1
    meta = json.loads(ds.attrs["ouster_metadata"])
    # the written metadata is the file's own nested layout, with the mode and profile simulated
    assert meta["config_params"]["lidar_mode"] == "1024x20"
    assert meta["lidar_data_format"]["udp_profile_lidar"] == "RNG19_RFL8_SIG16_NIR16"
    assert meta["lidar_data_format"]["columns_per_frame"] == 1024
    assert ds.attrs["ouster_udp_profile_lidar"] == "RNG19_RFL8_SIG16_NIR16"


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------

def _error(params, tmp_path=None, **kw):
    with pytest.raises(hifi.ScenarioError) as exc:
        _sim(_scene(params, **kw), tmp_path)
    return str(exc.value)


def test_unknown_preset_names_the_allowed_ones():
    msg = _error({"preset": "os3_128"})
    assert "sensors[0].params.preset = 'os3_128'" in msg and "'os0_128'" in msg and "'os2_128'" in msg


def test_neither_or_both_sources(tmp_path):
    assert "metadata_file" in _error({}) and "os1_128" in _error({})
    (tmp_path / "m.json").write_text(CAPTURE_JSON.read_text())
    assert "either preset or metadata_file" in _error({"preset": "os1_128", "metadata_file": "m.json"}, tmp_path)


def test_metadata_file_relative_to_the_scenario(tmp_path):
    (tmp_path / "unit.json").write_text(CAPTURE_JSON.read_text())
    sim = _sim(_scene({"metadata_file": "unit.json", "column_stride": 64}), tmp_path)
    ds = sim.run(out=None)["os"]
    assert ds.attrs["ouster_metadata_source"] == str((tmp_path / "unit.json").resolve())
    assert "file not found" in _error({"metadata_file": "nope.json"}, tmp_path)


@pytest.mark.parametrize("edit, key, fragment", [
    (lambda d: "{not json", None, "not valid JSON"),
    (lambda d: {**d, "lidar_mode": "1024x7"}, "'lidar_mode' = '1024x7'", "allowed: 512x10, 512x20, 1024x10"),
    (lambda d: {**d, "data_format": {**d["data_format"], "udp_profile_lidar": "FUSA_RNG15_RFL8_NIR8_DUAL"}},
     "'data_format.udp_profile_lidar' = 'FUSA_RNG15_RFL8_NIR8_DUAL'", "allowed: LEGACY, RNG19_RFL8_SIG16_NIR16"),
    (lambda d: {k: v for k, v in d.items() if k != "beam_azimuth_angles"}, "'beam_azimuth_angles' is missing", ""),
    (lambda d: {**d, "beam_azimuth_angles": d["beam_azimuth_angles"][:5]}, "'beam_azimuth_angles'",
     "a list of 128 numbers"),
    (lambda d: {**d, "sensor_info": {}}, None, "nested Ouster metadata must have all of"),
])
def test_bad_metadata_names_file_key_value_allowed(tmp_path, edit, key, fragment):
    d = json.loads(CAPTURE_JSON.read_text())
    new = edit(d)
    (tmp_path / "bad.json").write_text(new if isinstance(new, str) else json.dumps(new))
    msg = _error({"metadata_file": "bad.json"}, tmp_path)
    # the scenario's key and value (the loader has resolved the path), the metadata file
    assert f"sensors[0].params.metadata_file = '{(tmp_path / 'bad.json').resolve()}'" in msg
    if key:
        assert key in msg
    assert fragment in msg


def test_unknown_lidar_mode_and_profile_params():
    msg = _error({"preset": "os1_128", "lidar_mode": "1024x15"})
    assert "sensors[0].params.lidar_mode = '1024x15'" in msg and "'2048x10'" in msg
    msg = _error({"preset": "os1_128", "udp_profile_lidar": "RNG99"})
    assert "sensors[0].params.udp_profile_lidar = 'RNG99'" in msg and "'LEGACY'" in msg


def test_rate_must_be_the_modes():
    msg = _error({"preset": "os1_128"}, rate_hz=20.0)                     # 1024x10 is 10 Hz
    assert "sensors[0].params.lidar_mode = None" in msg and "10 Hz" in msg and "1024x20" in msg
    ds = _run(_scene({"preset": "os1_128", "column_stride": 64}, rate_hz=10.0))   # agreeing: fine
    assert ds.attrs["rate_hz"] == 10.0


# --------------------------------------------------------------------------------------------
# against the real capture (validation/lidar_real.py)
# --------------------------------------------------------------------------------------------

def test_ground_radii_match_the_real_capture(test_data):
    # The OS1-128 simulated from the capture's own metadata, mounted at the road plane fitted to
    # the capture (1.97 m, 0.79 deg tilt), over a flat bright road; ring radii as medians over the
    # pixels that are road in both. Within 3 % out to 15 m (the acceptance bound); 15-20 m within
    # 5 %: there the capture's road rises above the fitted plane (its per-ring range offsets trend
    # by 16 cm std over rings), bringing its rings 3-4.5 % closer.
    test_data("lidar/ouster_os1_128.pcap")
    lr = load_validation("lidar_real")
    from hifi.analysis import lidar_stats as ls
    real = lr.measure_ouster()
    g = lr.simulate_ouster(real["plane"], obstacles=False, road_reflectivity=0.8)
    sim = ls.measure(g["points_sensor"], g["intensity"], g["detected"])
    sim["points_lidar"] = g["points_sensor"]
    cr, cs = lr.common_ring_radii(real, sim)
    ok = np.isfinite(cr) & np.isfinite(cs)
    near = ok & (cr < 15.0)
    far = ok & (cr >= 15.0) & (cr < 20.0)
    assert near.sum() >= 40 and far.sum() >= 4
    np.testing.assert_allclose(cs[near], cr[near], rtol=0.03)
    np.testing.assert_allclose(cs[far], cr[far], rtol=0.05)
    # elevations and azimuth offsets measured from the simulated points are the metadata's
    geo = lr.ouster_geometry(g, json.loads(CAPTURE_JSON.read_text()), sim["road"])
    assert np.nanmax(np.abs(geo["elevation_err_deg"])) < 0.01            # ring-cone fit, noisy ranges
    assert np.nanmax(np.abs(geo["azimuth_err_deg"])) < 0.02              # beam origin: < 0.01 deg past 5 m


@pytest.mark.validation
def test_real_capture_statistics_within_a_factor_1_5(test_data):
    # validation/lidar_real.md, Ouster column: what the model reproduces of the capture (factor
    # 1.5, the acceptance bound) with the cars and poles of the HDL-32E comparison over a road whose
    # reflectivity is fitted from the capture's bytes at the asphalt's roughness
    # (lidar_real.ouster_road). Isolated misses (about 2x) and the road's low bytes are the known
    # gaps (lidar_real.md "Not yet"): not asserted here.
    test_data("lidar/ouster_os1_128.pcap")
    lr = load_validation("lidar_real")
    real = lr.measure_ouster()
    road = lr.ouster_road(real)
    sim = lr.measure_ouster_sim(real["plane"], road_reflectivity=road.reflectivity,
                                road_roughness_deg=road.roughness_deg)
    for key in ("sensor_height_m", "noise_sigma_7_40m_mm", "ring_to_ring_offset_cm", "ring_gain_spread_pct",
                "edge_floating_pct"):
        ratio = lr.ratio(real["headline"][key], sim["headline"][key])
        assert 1 / 1.5 <= ratio <= 1.5, f"{key}: real {real['headline'][key]:.4g}, sim {sim['headline'][key]:.4g}"
    # the road's reflectivity byte: the 95th percentile within a factor 1.5 (real 14)
    hi_real = np.percentile(real["geometry"]["road_reflectivity"], 95)
    hi_sim = np.percentile(sim["geometry"]["road_reflectivity"], 95)
    assert 1 / 1.5 <= hi_sim / hi_real <= 1.5, (hi_real, hi_sim)


# --------------------------------------------------------------------------------------------
# the example
# --------------------------------------------------------------------------------------------

def test_example_runs():
    example = REPO_ROOT / "examples" / "ouster.toml"
    sim = hifi.load(example)
    res = sim.run(out=None)
    ds = res["os1"]
    assert ds.attrs["sensor_model"] == "ouster" and ds.sizes["beam"] == 128
    assert ds["detected"].values.mean() > 0.3
    lms = res["lms511"]                                 # the LMS511 on the bumper, two echoes
    assert lms.attrs["sensor_model"] == "sick_lms5xx" and lms.sizes["return"] == 2
    assert lms.sizes["step"] == 1141 and lms["detected"].values.any()


# --------------------------------------------------------------------------------------------
# calibration files of rotating lidars: firing
# --------------------------------------------------------------------------------------------

def _velodyne(tmp_path, params, csv_text=None):
    if csv_text is not None:
        (tmp_path / "cal.csv").write_text(csv_text)
        params = {"calibration_file": "cal.csv", **params}
    d = {"simulation": {"duration_s": 0.05},
         "objects": [{"name": "road", "mesh": "plane", "size_m": [100, 100]}],
         "sensors": [{"name": "v", "model": "vlp16", "position_m": [0, 0, 1.8],
                      "params": {"azimuth_stride": 300, **params}}]}
    return _sim(d, tmp_path)


def _offsets_in_cycle(ds):
    t = seconds_since_start(ds, "timestamp")[0]                        # (step, laser)
    return (t - t[:, :1]) / ds.attrs["firing_cycle_s"]


def test_firing_simultaneous_fires_a_column_at_once(tmp_path):
    # VLP-16 manual: laser i at i x 2.304 us of the 55.296 us cycle (staggered, the default);
    # firing = "simultaneous": every laser at the cycle's start, as an Ouster column
    ds = _velodyne(tmp_path, {}).run(out=None)["v"]
    np.testing.assert_allclose(_offsets_in_cycle(ds)[0], np.arange(16) * 2.304 / 55.296, atol=2e-5)   # 1 ns
    ds = _velodyne(tmp_path, {"firing": "simultaneous"}).run(out=None)["v"]
    np.testing.assert_allclose(_offsets_in_cycle(ds), 0.0, atol=1e-9)


def test_calibration_firing_fraction_column(tmp_path):
    # A CSV calibration's firing_fraction column sets each laser's instant in the cycle
    el = np.linspace(-15, 15, 16)
    frac = np.r_[np.zeros(8), np.full(8, 0.5)]                        # two banks, half a cycle apart
    text = "elevation_deg,firing_fraction\n" + "".join(f"{e:.3f},{f:g}\n" for e, f in zip(el, frac))
    ds = _velodyne(tmp_path, {}, text).run(out=None)["v"]
    np.testing.assert_allclose(_offsets_in_cycle(ds)[0], frac, atol=2e-5)        # times decode to whole ns
    # ... and "simultaneous" overrides it
    ds = _velodyne(tmp_path, {"firing": "simultaneous"}, text).run(out=None)["v"]
    np.testing.assert_allclose(_offsets_in_cycle(ds), 0.0, atol=1e-9)


@pytest.mark.parametrize("rows, fragment", [
    ("-15,0.2\n-13,\n", "firing_fraction is empty in data row(s) 2"),
    ("-15,0.2\n-13,1.0\n", "firing_fraction must be in [0, 1)"),
])
def test_bad_firing_fraction(tmp_path, rows, fragment):
    with pytest.raises(hifi.ScenarioError) as exc:
        _velodyne(tmp_path, {}, "elevation_deg,firing_fraction\n" + rows)
    assert "sensors[0].params.calibration_file" in str(exc.value) and fragment in str(exc.value)


def test_yaml_firing_fraction_for_every_laser_or_none(tmp_path):
    from sensors.calibration import read_calibration
    lasers = "".join(f"- {{laser_id: {i}, vert_correction: {-0.2 + 0.02 * i}, firing_fraction: {i / 4}}}\n"
                     for i in range(4))
    (tmp_path / "a.yaml").write_text("lasers:\n" + lasers)
    np.testing.assert_allclose(read_calibration(tmp_path / "a.yaml").fire_fraction, [0, 0.25, 0.5, 0.75])
    (tmp_path / "b.yaml").write_text("lasers:\n" + lasers + "- {laser_id: 4, vert_correction: 0.1}\n")
    with pytest.raises(ValueError, match="firing_fraction is given for some lasers but not for laser_id 4"):
        read_calibration(tmp_path / "b.yaml")
