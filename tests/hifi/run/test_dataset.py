"""Outputs ready for analysis.

Expected values come from the CF conventions (time units, section 4.4), ASPRS LAS 1.4 R15
(Table 17, classification codes), the run's own motion.nc (sensor poses, an independent output
of the same run), pypcd4 and laspy as independent readers, and analytic results (elevation
order of the calibrated HDL-64E S2 lasers).
"""

from __future__ import annotations

import netCDF4
import numpy as np
import pytest
import xarray as xr
from _scenes import wall_scenario

import hifi
from hifi.export import export, read_evd, read_ply

START_UTC = "2024-05-01T12:00:00Z"
CF_UNITS = "seconds since 2024-05-01T12:00:00.000000"
NS = 1e-9          # xarray decodes CF times to whole nanoseconds (truncating)


def _scenario():
    d = wall_scenario(10.0, duration_s=0.2, seed=4, materials={
        "paint": {"reflectivity": 0.5, "class": "vehicle"}})
    d["simulation"]["start_utc"] = START_UTC
    d["objects"].append({"name": "car_1", "mesh": "car", "material": "paint",
                         "track": [{"t_s": 0.0, "position_m": [6, -2, -1]},
                                   {"t_s": 1.0, "position_m": [6, 2, -1]}]})
    d["objects"].append({"name": "carrier", "mesh": "sphere", "radius_m": 0.01,
                         "track": [{"t_s": 0.0, "position_m": [0, 0, -5]}, {"t_s": 1.0, "position_m": [1, 0, -5]}]})
    d["sensors"] = [
        {"name": "grid", "model": "generic_grid", "rate_hz": 10.0, "parent": "carrier", "position_m": [0, 0, 5],
         "params": {"n_theta": 12, "n_phi": 7, "theta_min_deg": -60.0, "theta_max_deg": 60.0,
                    "los_sigma_m": 0.01}},
        {"name": "depth", "model": "depthmap", "rate_hz": 10.0, "parent": "carrier", "position_m": [0, 0, 5],
         "params": {"resolution_x": 8, "resolution_y": 6}},
        {"name": "tof", "model": "tof_sr4000", "rate_hz": 10.0, "params": {"resolution_x": 8, "resolution_y": 6}},
        {"name": "ccd", "model": "ccd_camera", "rate_hz": 10.0, "parent": "carrier", "position_m": [0, 0, 5],
         "params": {"resolution_x": 8, "resolution_y": 6, "focal_length_m": 1e-3, "preset": "generic"}},
        {"name": "odo", "model": "pose", "rate_hz": 20.0},
    ]
    return d


def _load(path, **kw):
    """The dataset in memory, its file closed (files are opened several ways in one test)."""
    with xr.open_dataset(path, **kw) as ds:
        return ds.load()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis") / "o"
    hifi.Simulation.from_dict(_scenario()).run(out=out)
    return out


# ------------------------------------------------------------------------------- 9. time


@pytest.mark.parametrize("name", ["grid", "depth", "tof", "ccd", "odo"])
def test_times_have_cf_units_and_decode_to_datetime64(run_dir, name):
    path = run_dir / f"{name}.nc"
    with netCDF4.Dataset(path) as nc:
        for var in ("timestamp", "frame_time"):
            v = nc.variables[var]
            assert v.dtype == np.float64                       # stored numbers: seconds since start
            assert v.units == CF_UNITS and v.calendar == "standard", (name, var)
        raw_t = np.asarray(nc.variables["timestamp"][...].data)
        raw_f = np.asarray(nc.variables["frame_time"][...].data)
    ds = _load(path)
    assert ds.timestamp.dtype == np.dtype("datetime64[ns]") and ds.frame_time.dtype == np.dtype("datetime64[ns]")
    # CF: t seconds after the reference time (analytic), to the nanosecond of the decoding.
    start = np.datetime64("2024-05-01T12:00:00", "ns")
    got = (ds.frame_time.values - start).astype(np.int64) * NS
    np.testing.assert_allclose(got, raw_f, rtol=0, atol=NS)
    # ds.hifi.seconds: float seconds whatever the decoding; bit for bit when not decoded.
    np.testing.assert_allclose(ds.hifi.seconds("timestamp").values, raw_t, rtol=0, atol=NS)
    plain = _load(path, decode_times=False)
    assert plain.hifi.seconds("timestamp").values.tobytes() == raw_t.tobytes()
    assert plain.hifi.seconds("frame_time").values.tobytes() == raw_f.tobytes()
    # ds.hifi.time: absolute UTC, the same from either opening.
    np.testing.assert_array_equal(ds.hifi.time("frame_time").values, ds.frame_time.values)
    dt = (plain.hifi.time("timestamp").values - ds.hifi.time("timestamp").values).astype(np.int64)
    assert np.abs(dt).max() <= 1                                   # ns


@pytest.mark.parametrize("name", ["depth", "ccd"])
def test_cameras_carry_exposure_time_and_sensor_pose(run_dir, name):
    ds = _load(run_dir / f"{name}.nc", decode_times=False)
    motion = _load(run_dir / "motion.nc", decode_times=False)
    assert ds.timestamp.dims == ("frame",)
    np.testing.assert_array_equal(ds.timestamp.values, ds.frame_time.values)     # global shutter at t
    assert ds.sensor_position.dims == ("frame", "xyz") and ds.sensor_orientation.dims == ("frame", "quat")
    # The pose at the exposure equals motion.nc's ground truth of the sensor body at that time
    # (the carrier moves 1 m/s along x, 5 m below the sensor: motion.nc runs at 100 Hz, so frame
    # times are among its samples).
    idx = np.searchsorted(motion.frame_time.values, ds.timestamp.values)
    np.testing.assert_allclose(motion.frame_time.values[idx], ds.timestamp.values, atol=1e-12)
    body = motion.position.sel(body=name).values[idx]
    np.testing.assert_allclose(ds.sensor_position.values, body, atol=1e-12)
    np.testing.assert_allclose(ds.sensor_position.values[:, 0], ds.timestamp.values, atol=1e-12)  # track


def test_exporters_read_decoded_and_undecoded_times_alike(run_dir, tmp_path):
    laspy = pytest.importorskip("laspy")
    decoded = _load(run_dir / "grid.nc")
    plain = _load(run_dir / "grid.nc", decode_times=False)
    assert decoded.timestamp.dtype.kind == "M" and plain.timestamp.dtype.kind == "f"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for fmt in ("ply", "evd", "las"):
        export(decoded, fmt, a / f"g.{fmt}")
        export(plain, fmt, b / f"g.{fmt}")
    raw = plain.timestamp.values[plain.detected.values]
    pa, pb = read_ply(a / "g.ply"), read_ply(b / "g.ply")
    assert pb["timestamp"].tobytes() == raw.tobytes()
    np.testing.assert_allclose(pa["timestamp"], raw, rtol=0, atol=NS)
    ea, eb = np.concatenate(read_evd(a / "g.evd")), np.concatenate(read_evd(b / "g.evd"))
    assert eb["timestamp"].tobytes() == raw.tobytes()
    np.testing.assert_allclose(ea["timestamp"], raw, rtol=0, atol=NS)
    la, lb = laspy.read(a / "g.las"), laspy.read(b / "g.las")
    # GPS seconds of 2024-05-01T12:00:00Z: (2024-05-01 - 1980-01-06) = 16187 days, + 12 h,
    # + 18 leap seconds (IERS Bulletin C), minus the LAS adjusted-time offset 1e9.
    expect = 16187 * 86400 + 12 * 3600 + 18 - 1_000_000_000 + raw
    np.testing.assert_allclose(np.asarray(lb.gps_time), expect, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(la.gps_time), np.asarray(lb.gps_time), rtol=0, atol=1e-6)


# -------------------------------------------------------------- 10. object names and classes

OBJECTS = ["wall", "car_1", "carrier"]
CLASSES = ["wall", "vehicle", "unlabelled"]          # materials white, paint, and none


@pytest.mark.parametrize("name", ["grid", "depth", "tof", "ccd", "odo", "motion"])
def test_every_file_names_the_objects_and_their_classes(run_dir, name):
    ds = _load(run_dir / f"{name}.nc")
    assert ds.object_name.dims == ("object",) and list(ds.object_name.values) == OBJECTS
    assert list(ds.object_class.values) == CLASSES
    if "object_id" in ds:
        attrs = ds.object_id.attrs
        np.testing.assert_array_equal(attrs["flag_values"], [-1, 0, 1, 2])
        assert attrs["flag_meanings"] == "no_hit wall car_1 carrier"
        # a reader names the object hit without the scenario
        oid = ds.object_id.values
        hit = oid >= 0
        assert hit.any()
        assert set(ds.object_name.values[oid[hit]]) <= set(OBJECTS)


@pytest.mark.parametrize("name", ["grid", "tof"])
def test_range_datasets_carry_annotation(run_dir, name):
    ds = _load(run_dir / f"{name}.nc")
    ann = ds.annotation
    assert ann.dims == ds.distance.dims and ann.dtype == np.uint8
    names = ann.attrs["flag_meanings"].split()
    # The class of each hit equals the class of the object hit (object_class, same file).
    oid = ds.object_id.values
    hit = oid >= 0
    np.testing.assert_array_equal(np.array(names)[ann.values[hit]], ds.object_class.values[oid[hit]])
    assert np.all(ann.values[~hit] == 0)


def test_asprs_codes_of_class_names():
    from hifi.exporters.las import asprs_class_map, asprs_code
    # ASPRS LAS 1.4 R15 Table 17: 2 ground, 3 low / 5 high vegetation, 6 building, 9 water,
    # 10 rail, 11 road surface, 17 bridge deck; matched case-insensitively, plural s dropped.
    table = {"Road": 11, "asphalt": 11, "STREET": 11, "road surface": 11, "ground": 2, "Terrain": 2,
             "grass": 3, "building": 6, "Buildings": 6, "wall": 6, "tree": 5, "trees": 5, "vegetation": 5,
             "water": 9, "rail": 10, "bridge-deck": 17, "unlabelled": 1, "vehicle": None, "car": None}
    for name, code in table.items():
        assert asprs_code(name) == code, name
    # classes without a standard code get user-definable codes 64, 65, ... in class-id order
    np.testing.assert_array_equal(asprs_class_map(["unlabelled", "car", "road", "pedestrian", "car park"]),
                                  [1, 64, 11, 65, 66])


def test_las_classes_vlrs_and_crs(run_dir, tmp_path):
    laspy = pytest.importorskip("laspy")
    ds = _load(run_dir / "grid.nc")
    (path,) = export(ds, "las", tmp_path / "g.las")
    las = laspy.read(path)
    det = ds.detected.values
    oid = ds.object_id.values[det]
    assert set(oid) == {0, 1}                               # the scan sees the wall and the car
    # wall -> 6 building, car_1 (class "vehicle") -> 64, the first user-definable code
    np.testing.assert_array_equal(np.asarray(las.classification), np.where(oid == 0, 6, 64))
    vlrs = {(v.user_id, v.record_id): v for v in las.header.vlrs}
    lookup = vlrs[("LASF_Spec", 0)]
    assert lookup.lookups[6] == "wall" and lookup.lookups[64] == "vehicle" and lookup.lookups[1] == "unlabelled"
    text = vlrs[("hifi", 1)].record_data.decode("utf-8")
    assert "\n6 wall\n" in text and "\n64 vehicle\n" in text
    # CRS: a WKT VLR of the scene frame at the scenario origin (origin_* attributes).
    assert las.header.global_encoding.wkt
    wkt = vlrs[("LASF_Projection", 2112)].string
    assert wkt.startswith("PROJCRS[") and "Geographic/topocentric conversions" in wkt
    for key in ("origin_lat_deg", "origin_lon_deg", "origin_height_m"):
        assert repr(float(ds.attrs[key])) in wkt


def test_las_crs_places_points_like_pymap3d(run_dir, tmp_path):
    laspy = pytest.importorskip("laspy")
    pyproj = pytest.importorskip("pyproj", reason="pyproj is optional; the WKT is checked with it when present")
    pymap3d = pytest.importorskip("pymap3d")
    ds = _load(run_dir / "grid.nc")
    (path,) = export(ds, "las", tmp_path / "g.las")
    crs = laspy.read(path).header.parse_crs()
    to_geo = pyproj.Transformer.from_crs(crs, "EPSG:4979", always_xy=True)
    lat0, lon0, h0 = (float(ds.attrs[k]) for k in ("origin_lat_deg", "origin_lon_deg", "origin_height_m"))
    e, n, u = 100.0, -250.0, 12.0
    lon, lat, h = to_geo.transform(e, n, u)
    want = pymap3d.enu2geodetic(e, n, u, lat0, lon0, h0)          # independent implementation
    np.testing.assert_allclose([lat, lon], want[:2], rtol=0, atol=1e-10)   # deg, about 10 um
    np.testing.assert_allclose(h, want[2], rtol=0, atol=1e-6)              # 1 um


# ------------------------------------------------------- 14. grids where neighbours are neighbours


@pytest.fixture(scope="module")
def spinning(tmp_path_factory):
    """One sweep of a VLP-16 (laser ids interleave elevations) and an HDL-64E S2 over ground."""
    d = wall_scenario(15.0, duration_s=0.1, seed=2)
    d["objects"].append({"name": "ground", "mesh": "plane", "size_m": [100, 100], "material": "white",
                         "position_m": [0, 0, -1.8]})
    d["sensors"] = [{"name": "vlp", "model": "vlp16", "rate_hz": 10.0, "params": {"azimuth_stride": 20}},
                    {"name": "hdl", "model": "hdl64e_s2", "rate_hz": 10.0, "params": {"azimuth_stride": 23}}]
    out = tmp_path_factory.mktemp("spin") / "o"
    hifi.Simulation.from_dict(d).run(out=out)
    return out


@pytest.mark.parametrize("name", ["vlp", "hdl"])
def test_pcd_rows_in_elevation_order_with_ring_read_by_pypcd4(spinning, tmp_path, name):
    from pypcd4 import PointCloud  # independent reader
    ds = _load(spinning / f"{name}.nc").isel(frame=0)
    n_steps, n_lasers = ds.sizes["step"], ds.sizes["laser"]
    elevation = ds.laser_elevation.values
    assert np.any(np.diff(elevation) > 0) and np.any(np.diff(elevation) < 0)   # ids not in elevation order
    (path,) = export(ds, "pcd", tmp_path / f"{name}.pcd")
    pc = PointCloud.from_path(path)
    assert (pc.metadata.width, pc.metadata.height) == (n_steps, n_lasers)
    assert pc.types[pc.fields.index("ring")] == np.uint16 and pc.types[pc.fields.index("laser_id")] == np.uint16
    ring = pc.numpy(("ring",))[:, 0].reshape(n_lasers, n_steps)
    laser = pc.numpy(("laser_id",))[:, 0].reshape(n_lasers, n_steps).astype(int)
    # every column holds every laser once; row r is one laser, highest elevation at the top (row 0)
    assert np.all(laser == laser[:, :1]) and sorted(laser[:, 0]) == list(range(n_lasers))
    assert np.all(np.diff(elevation[laser[:, 0]]) <= 0)
    # ring as the ROS velodyne driver: rank by elevation, 0 the lowest
    np.testing.assert_array_equal(ring[:, 0], np.arange(n_lasers)[::-1])
    np.testing.assert_array_equal(np.argsort(np.argsort(elevation, kind="stable"), kind="stable")[laser[:, 0]],
                                  ring[:, 0])
    # cell (r, c) = dataset element [step c, laser laser_id]; the true point of each cell
    want = ds.z.values[np.arange(n_steps)[None, :], laser].astype(np.float32)
    got = pc.numpy(("z_true",))[:, 0].reshape(n_lasers, n_steps)
    np.testing.assert_array_equal(got, want)
    # neighbours are neighbours: on the ground, vertically adjacent cells of a column are adjacent beams
    pitch = ds.pitch.values[np.arange(n_steps)[None, :], laser]
    assert np.all(np.diff(pitch, axis=0) <= 1e-9)


def test_ptx_columns_bottom_to_top_for_a_rotating_lidar(spinning, tmp_path):
    from hifi.export import read_ptx
    ds = _load(spinning / "vlp.nc").isel(frame=[0])
    (path,) = export(ds, "ptx", tmp_path / "vlp.ptx")
    (scan,) = read_ptx(path)
    n_lasers = ds.sizes["laser"]
    assert (scan["n_columns"], scan["n_rows"]) == (ds.sizes["step"], n_lasers)
    order = np.argsort(ds.laser_elevation.values, kind="stable")             # bottom to top
    fr = ds.isel(frame=0, laser=order)
    det = fr.detected.values.ravel()
    world = scan["points"][:, :3] @ scan["matrix"][:3, :3] + scan["matrix"][3, :3]
    expect = np.column_stack([fr[v].values.ravel() for v in ("x_noisy", "y_noisy", "z_noisy")])
    np.testing.assert_allclose(world[det], expect[det], atol=2e-6)          # 6 decimals in the file


def test_grid_theta_increases_and_selects(run_dir):
    ds = _load(run_dir / "grid.nc", decode_times=False)
    theta = ds.theta.values
    assert np.all(np.diff(theta) > 0) and np.all(np.diff(ds.phi.values) > 0)
    np.testing.assert_allclose(theta[[0, -1]], np.radians([-60.0, 60.0]), atol=1e-12)
    # yaw of every ray is its column's theta; the slice selects the columns within the bounds
    np.testing.assert_allclose(ds.yaw.values[0], np.broadcast_to(theta[:, None], ds.yaw.shape[1:]), atol=1e-6)
    sub = ds.sel(theta=slice(np.radians(-20.0), np.radians(30.0)))
    assert sub.sizes["theta"] == np.count_nonzero((theta >= np.radians(-20.0)) & (theta <= np.radians(30.0))) > 0
    # acquisition: column theta_max first (left to right), each column bottom to top
    t = ds.timestamp.values[0] - ds.frame_time.values[0]
    order = np.argsort(t.ravel())
    it, ip = np.unravel_index(order, t.shape)
    np.testing.assert_array_equal(it, np.repeat(np.arange(theta.size)[::-1], ds.sizes["phi"]))
    np.testing.assert_array_equal(ip, np.tile(np.arange(ds.sizes["phi"]), theta.size))


# ------------------------------------------------------------------------------------ 11. size


def test_stored_precision_of_range_variables(tmp_path):
    """The file holds float32 / packed int32 where documented; values read back are the computed
    ones (taken from the message bus, full float64) to the documented precision."""
    from hifi.api.bus import SensorData
    from hifi.run.dataset import POINT_SCALE_M
    frames = {}

    class Listener(hifi.Model):
        model_name = "listener"
        writes_dataset = False

        def setup(self, ctx):
            super().setup(ctx)
            ctx.bus.subscribe(lambda m: frames.setdefault(m.frame, {k: np.array(v) for k, v in m.data.items()}),
                              SensorData, sender="vlp")

        def event_time(self, k):
            return None

    d = wall_scenario(15.0, duration_s=0.2, seed=2)
    d["objects"][0]["position_m"] = [1500.0, 0, 0]      # far from the origin: float32 would give 60 um
    d["objects"].append({"name": "ground", "mesh": "plane", "size_m": [100, 100], "material": "white",
                         "position_m": [1400.0, 0, -1.8]})
    d["sensors"] = [{"name": "vlp", "model": "vlp16", "rate_hz": 10.0, "position_m": [1400.0, 0, 0],
                     "params": {"azimuth_stride": 10}}]
    sim = hifi.Simulation.from_dict(d)
    sim.add_model(Listener("listener"))
    sim.run(out=tmp_path / "o")
    path = tmp_path / "o" / "vlp.nc"
    with netCDF4.Dataset(path) as nc:
        stored = {name: v.dtype for name, v in nc.variables.items()}
        for name in ("x", "y", "z", "x_noisy", "y_noisy", "z_noisy"):
            v = nc.variables[name]
            assert v.dtype == np.int32 and v.scale_factor == POINT_SCALE_M and v.add_offset == 0.0
            assert v._FillValue == np.iinfo(np.int32).min and "0.05 mm" in v.comment
            assert v.chunking() == [1, nc.dimensions["step"].size, nc.dimensions["laser"].size]  # a frame
            assert v.filters()["zlib"] and v.filters()["shuffle"]
    for name in ("yaw", "pitch", "distance", "distance_noisy", "intensity"):
        assert stored[name] == np.float32, name
    assert stored["timestamp"] == np.float64 and stored["frame_time"] == np.float64
    ds = _load(path, decode_times=False)
    assert ds.x.dtype == np.float64                       # xarray unpacks to float64 scene metres
    for k, mem in frames.items():
        fr = ds.isel(frame=k)
        for name in ("x", "y", "z", "x_noisy", "y_noisy", "z_noisy"):
            got, want = fr[name].values, mem[name]
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))     # NaN <-> _FillValue
            assert np.nanmax(np.abs(got - want)) <= POINT_SCALE_M / 2 * (1 + 1e-6), name   # 0.05 mm
        for name in ("yaw", "pitch", "distance", "distance_noisy", "intensity"):
            np.testing.assert_allclose(fr[name].values, mem[name], rtol=2.0**-24, atol=0, err_msg=name)
        assert fr.timestamp.values.tobytes() == mem["timestamp"].tobytes()
    assert np.nanmax(np.abs(ds.x.values)) > 1400.0       # the test does reach far from the origin


def test_packing_refuses_values_it_cannot_hold():
    from hifi.run.dataset import RANGE_ENCODING, encode
    enc = RANGE_ENCODING["x"]
    np.testing.assert_array_equal(encode(np.array([0.0, 1.23456, -0.00005, np.nan]), enc),
                                  [0, 12346, -0, np.iinfo(np.int32).min])
    with pytest.raises(ValueError, match="'x'.*cannot be stored"):
        encode(np.array([0.0, 3.0e5]), enc, "x")           # 300 km from the origin
