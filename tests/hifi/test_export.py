"""Exporters: every format read back equals the dataset.

Sources of expected values: the dataset itself (round trips, to the precision each format
stores), the format specifications cited in ``hifi/export.py`` (record sizes, header fields,
end markers), independent readers (laspy for LAS, trimesh for PLY, ``struct`` as BlenSor's
``evd.py`` reads EVD, ``gnss.gpstime`` for GPS time) and analytic results (GPS seconds of an
epoch, a point in the sensor frame from yaw, pitch and distance).
"""

from __future__ import annotations

import struct

import laspy
import numpy as np
import pytest
import trimesh
import xarray as xr
from scipy.spatial.transform import Rotation

import hifi
from hifi.cli import main
from hifi.export import (FORMATS, ExportError, Exporter, export, gps_seconds_from_utc, las_classification,
                         load_exporter, read_evd, read_kitti_bin, read_pcd, read_ply, register_exporter)

from _scenes import wall_scenario
from _stores import zarr_copy


N_THETA, N_PHI = 9, 5
LAS_ATOL_M = 0.5e-4 + 1e-9     # half the 0.1 mm LAS scale, plus float64 rounding of the offset
START_UTC = "2000-01-01T12:00:00Z"


def _grid_scenario(*, orthogonal_sigma_m=0.01):
    """Wall at 10 m, generic_grid sensor offset and yawed, 2 frames; the outer columns miss."""
    d = wall_scenario(10.0, duration_s=0.2, seed=3)
    d["simulation"]["start_utc"] = START_UTC
    d["sensors"] = [
        {"name": "grid", "model": "generic_grid", "rate_hz": 10.0, "position_m": [1.0, 2.0, 0.5],
         "rpy_deg": [0.0, 5.0, 20.0],
         "params": {"n_theta": N_THETA, "n_phi": N_PHI, "theta_min_deg": -85.0, "theta_max_deg": 85.0,
                    "los_sigma_m": 0.02, "orthogonal_sigma_m": orthogonal_sigma_m}},
        {"name": "cam", "model": "depthmap", "rate_hz": 10.0, "params": {"resolution_x": 8, "resolution_y": 6}},
    ]
    return d


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "o"
    for ds in hifi.Simulation.from_dict(_grid_scenario()).run(out=out).values():
        ds.close()
    return out


@pytest.fixture(scope="module")
def grid(run_dir):
    with xr.open_dataset(run_dir / "grid.nc") as ds:    # closed here, not by the garbage collector
        ds.load()
    det = ds.detected.values
    assert 0 < det.sum() < det.size          # the fixture has hits and misses
    return ds


def _synthetic(shape=(3, 4), n_frames=2, *, p_detect=0.6, seed=0, pose=True, frame_dim=True):
    """A range-sensor dataset built by hand with the range-sensor variables (random values)."""
    rng = np.random.default_rng(seed)
    dims = ("frame",) + tuple(f"d{i}" for i in range(len(shape)))
    full = (n_frames, *shape)
    hit = rng.random(full) < max(p_detect, 0.8) if p_detect > 0 else np.zeros(full, bool)
    det = hit & (rng.random(full) < p_detect)
    xyz = rng.uniform(-50.0, 50.0, full + (3,))
    xyz[~hit] = np.nan
    noisy = np.where(det[..., None], xyz + rng.normal(0.0, 0.02, xyz.shape), np.nan)
    n = int(np.prod(shape, dtype=int))
    v = {
        "timestamp": 0.1 * np.arange(n_frames)[:, None] + 0.1 * np.arange(n) / n,
        "yaw": rng.uniform(-np.pi, np.pi, full), "pitch": rng.uniform(-0.5, 0.5, full),
        "distance": np.where(hit, rng.uniform(1.0, 80.0, full), np.nan),
        "detected": det,
        "x": xyz[..., 0], "y": xyz[..., 1], "z": xyz[..., 2],
        "x_noisy": noisy[..., 0], "y_noisy": noisy[..., 1], "z_noisy": noisy[..., 2],
        "object_id": np.where(hit, rng.integers(0, 3, full), -1).astype(np.int32),
        "intensity": np.where(hit, rng.uniform(0.0, 1.5, full), np.nan),   # > 1 near the sensor
    }
    v["timestamp"] = v["timestamp"].reshape(full)
    v["distance_noisy"] = np.where(det, v["distance"] + 0.01, np.nan)
    ds = xr.Dataset({k: (dims, np.asarray(a).reshape(full)) for k, a in v.items()},
                    attrs={"sensor_name": "syn", "sensor_model": "synthetic", "hifi_version": "0",
                           "seed": seed, "start_utc": START_UTC})
    if pose:
        ds["sensor_position"] = (("frame", "xyz"), rng.uniform(-5.0, 5.0, (n_frames, 3)))
        ds["sensor_orientation"] = (("frame", "quat"), Rotation.random(n_frames, random_state=seed).as_quat())
    if not frame_dim:
        ds = ds.isel(frame=0)
    return ds


def _det_flat(ds, name):
    """``name`` at the detected returns, frame by frame in C order (the exporters' order)."""
    if "frame" not in ds.dims:
        ds = ds.expand_dims("frame")
    if name == "timestamp":           # decoded to datetime64 from the file: seconds since start
        return ds.hifi.seconds(name).values[ds.detected.values]
    return ds[name].values[ds.detected.values]


def _frame_of_detected(ds):
    det = ds.detected.values
    return np.broadcast_to(np.arange(det.shape[0]).reshape((-1,) + (1,) * (det.ndim - 1)), det.shape)[det]


# ----------------------------------------------------------------------------- formats list


def test_formats_are_the_contract_list(capsys):
    # The command line: hifi export ... --format pcd|ply|las|ptx|evd|kitti, found through
    # the entry-point group hifi.exporters (pyproject.toml), each an Exporter named like its entry.
    from importlib.metadata import entry_points
    contract = {"pcd", "ply", "las", "ptx", "evd", "kitti"}
    assert contract <= set(FORMATS)
    assert contract <= {ep.name for ep in entry_points(group="hifi.exporters")}
    for name in FORMATS:
        assert load_exporter(name).name == name
    with pytest.raises(ExportError, match="'xyz' is not supported; allowed: evd, kitti, las"):
        export(_synthetic(), "xyz", "/nonexistent/x.xyz")
    # hifi export --help lists every format with its one-line summary
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    help_text = capsys.readouterr().out
    for name in FORMATS:
        assert f"  {name} " in help_text and load_exporter(name).summary in help_text


def test_only_the_export_command_loads_the_exporters():
    """The formats' modules are imported for ``hifi export`` (its ``--format`` choices and help)
    and not for ``hifi run``, whose start-up they cost 0.3 s; a bad format is
    still argparse's usage error (exit status 2)."""
    import subprocess
    import sys
    code = ("import sys\nfrom hifi.cli import _parser\n"
            "_parser(sys.argv[1:])\n"
            "print(sorted(m for m in sys.modules if m.startswith('hifi.exporters.') and m != 'hifi.exporters._common'))")
    run = subprocess.run([sys.executable, "-c", code, "run", "s.toml", "--out", "o"], capture_output=True, text=True)
    export_ = subprocess.run([sys.executable, "-c", code, "export", "d.nc", "--format", "las"], capture_output=True,
                             text=True)
    assert run.returncode == 0 and export_.returncode == 0, run.stderr + export_.stderr
    assert run.stdout.strip() == "[]"
    assert "hifi.exporters.las" in export_.stdout
    with pytest.raises(SystemExit) as exc:
        main(["export", "d.nc", "--format", "xyz"])
    assert exc.value.code == 2


def test_exporter_plugin_and_run_level_source(tmp_path, run_dir, capsys):
    # A format registered in-process (as a third-party entry point would be) is used by the CLI;
    # a run-level format takes the run directory and the --sensor option.
    seen = []

    def write_names(source, path, *, sensor=None):
        seen.append((source, sensor))
        path.write_text("\n".join(sorted(p.name for p in source.iterdir())) + "\n", encoding="utf-8")
        return path

    register_exporter(Exporter(name="listing_test", write=write_names, suffix=".txt", scope="run",
                               summary="file names of a run (test plugin)"))
    try:
        out = tmp_path / "names.txt"
        assert main(["export", str(run_dir), "--format", "listing_test", "--sensor", "grid", "--out", str(out)]) == 0
        assert out.read_text(encoding="utf-8").split() == [".hifi-run", "cam.nc", "grid.nc", "motion.nc", "scenario.toml"]
        assert seen == [(run_dir, "grid")]
        # a run-level format refuses a sensor file; a sensor format takes DIR with --sensor
        assert main(["export", str(run_dir / "grid.nc"), "--format", "listing_test", "--out", str(out)]) == 2
        assert "takes a run directory" in capsys.readouterr().err
        assert main(["export", str(run_dir), "--format", "ply", "--sensor", "grid",
                     "--out", str(tmp_path / "g.ply")]) == 0
        assert (tmp_path / "g.ply").is_file()
        assert main(["export", str(run_dir), "--format", "ply"]) == 2
        assert "is a directory" in capsys.readouterr().err
    finally:
        from hifi.exporters import _extra
        _extra.pop("listing_test", None)


# ----------------------------------------------------------------------------- PCD


def test_pcd_organised_round_trip_one_file_per_frame(grid, tmp_path):
    paths = export(grid, "pcd", tmp_path / "scan.pcd")
    # file-per-frame naming: <stem>_<frame:06d>.pcd, and not `out` itself
    assert [p.name for p in paths] == ["scan_000000.pcd", "scan_000001.pcd"]
    # beside them, the manifest that lists them (hifi.exporters.manifest_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".scan.pcd.hifi-export", "scan_000000.pcd",
                                                          "scan_000001.pcd"]
    for f, p in enumerate(paths):
        cloud = read_pcd(p)
        h = cloud.header
        # PCD v0.7 spec: header fields; WIDTH, HEIGHT = the sensor dims (theta, phi)
        assert h["VERSION"] == ["0.7"] and h["DATA"] == ["binary"]
        assert h["FIELDS"] == ["x", "y", "z", "intensity", "ring", "laser_id", "x_true", "y_true", "z_true"]
        assert h["SIZE"] == ["4", "4", "4", "4", "2", "2", "4", "4", "4"]
        assert h["TYPE"] == ["F", "F", "F", "F", "U", "U", "F", "F", "F"]
        assert (h["WIDTH"], h["HEIGHT"], h["POINTS"]) == (N_THETA, N_PHI, N_THETA * N_PHI)
        assert p.stat().st_size == len(p.read_bytes().split(b"DATA binary\n")[0]) + 12 + 32 * N_THETA * N_PHI
        fr = grid.isel(frame=f)
        pts = cloud.points                                      # (HEIGHT, WIDTH): [phi, theta]
        # theta and phi are stored increasing; PCD row 0 is the highest phi (top) and column 0
        # the first column acquired, theta_max (left): cell (r, c) = dataset [-1 - c, -1 - r].
        det = fr.detected.values[::-1, ::-1]                    # (theta, phi) in PCD order
        np.testing.assert_array_equal(pts["ring"], np.broadcast_to(np.arange(N_PHI)[::-1, None], pts.shape))
        np.testing.assert_array_equal(pts["laser_id"], pts["ring"])       # phi index = rank by elevation
        for field, var in (("x", "x_noisy"), ("y", "y_noisy"), ("z", "z_noisy"), ("intensity", "intensity"),
                           ("x_true", "x"), ("y_true", "y"), ("z_true", "z")):
            got = pts[field].T
            want = fr[var].values[::-1, ::-1].astype(np.float32)
            np.testing.assert_array_equal(got[det], want[det], err_msg=field)
            if field.endswith("_true"):
                np.testing.assert_array_equal(got, want, err_msg=field)   # truth written everywhere
        # misses are NaN in the organised cloud (PCL's invalid point)
        for field in ("x", "y", "z", "intensity"):
            assert np.all(np.isnan(pts[field].T[~det])) and np.all(np.isfinite(pts[field].T[det]))
        # VIEWPOINT tx ty tz qw qx qy qz = sensor pose at the frame start (round trip, repr floats)
        vp = np.array(h["VIEWPOINT"], dtype=float)
        np.testing.assert_array_equal(vp[:3], fr.sensor_position.values)
        q = fr.sensor_orientation.values
        np.testing.assert_array_equal(vp[3:], [q[3], q[0], q[1], q[2]])


def test_pcd_read_by_pypcd4(grid, tmp_path):
    # Independent reader: pypcd4 (PyPI, test extra) parses our header and binary body into the
    # same fields, cell for cell, with the organised layout (WIDTH, HEIGHT) and the VIEWPOINT.
    from pypcd4 import PointCloud
    paths = export(grid, "pcd", tmp_path / "scan.pcd")
    for f, p in enumerate(paths):
        pc = PointCloud.from_path(p)
        assert tuple(pc.fields) == ("x", "y", "z", "intensity", "ring", "laser_id", "x_true", "y_true", "z_true")
        assert (pc.metadata.width, pc.metadata.height) == (N_THETA, N_PHI)
        fr = grid.isel(frame=f).isel(theta=slice(None, None, -1), phi=slice(None, None, -1))
        det = fr.detected.values.ravel(order="F")             # rows of WIDTH, top phi first
        arr = pc.numpy(("x", "y", "z", "x_true", "y_true", "z_true"))
        want = np.column_stack([fr[v].values.ravel(order="F") for v in
                                ("x_noisy", "y_noisy", "z_noisy", "x", "y", "z")]).astype(np.float32)
        np.testing.assert_array_equal(arr[det], want[det])
        assert np.all(np.isnan(arr[~det, :3]))
        q = fr.sensor_orientation.values
        np.testing.assert_allclose(pc.metadata.viewpoint, [*fr.sensor_position.values, q[3], q[0], q[1], q[2]],
                                   rtol=0, atol=1e-12)


def test_pcd_one_frame_writes_out_and_one_dim_sensor_has_height_1(tmp_path):
    ds = _synthetic(shape=(7,), n_frames=1)
    paths = export(ds, "pcd", tmp_path / "line.pcd")
    assert paths == [tmp_path / "line.pcd"]
    cloud = read_pcd(paths[0])
    assert (cloud.header["WIDTH"], cloud.header["HEIGHT"]) == (7, 1)
    det = ds.detected.values[0]
    np.testing.assert_array_equal(cloud.points["x"][0][det], ds.x_noisy.values[0][det].astype(np.float32))
    # a dataset without a frame dimension is one frame too
    paths = export(_synthetic(shape=(7,), frame_dim=False), "pcd", tmp_path / "noframe.pcd")
    assert paths == [tmp_path / "noframe.pcd"]


def test_pcd_three_sensor_dims_fortran_order(tmp_path):
    ds = _synthetic(shape=(2, 3, 4), n_frames=3, seed=4)
    paths = export(ds, "pcd", tmp_path / "cube.pcd")
    assert [p.name for p in paths] == [f"cube_{f:06d}.pcd" for f in range(3)]
    for f, p in enumerate(paths):
        cloud = read_pcd(p)
        # WIDTH = first sensor dim, HEIGHT = product of the others (documented layout)
        assert (cloud.header["WIDTH"], cloud.header["HEIGHT"]) == (2, 12)
        want = np.where(ds.detected.values[f], ds.z_noisy.values[f], np.nan).astype(np.float32)
        np.testing.assert_array_equal(cloud.points["z"].ravel(), want.ravel(order="F"))
        # a hit below the detection threshold: invalid reported point and intensity, true point kept
        det, hit = ds.detected.values[f].ravel(order="F"), ds.object_id.values[f].ravel(order="F") >= 0
        below = hit & ~det
        assert below.any()
        assert np.all(np.isnan(cloud.points["intensity"].ravel()[below]))
        np.testing.assert_array_equal(cloud.points["x_true"].ravel()[below],
                                      ds.x.values[f].ravel(order="F")[below].astype(np.float32))


def test_read_pcd_ascii():
    # A PCD ascii file as in the PCL tutorial's example (format spec), read by the same reader.
    import tempfile
    from pathlib import Path
    text = ("# .PCD v.7 - Point Cloud Data file format\nVERSION .7\nFIELDS x y z rgb\nSIZE 4 4 4 4\n"
            "TYPE F F F F\nCOUNT 1 1 1 1\nWIDTH 2\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 2\nDATA ascii\n"
            "0.93773 0.33763 0 4.2108e+06\n0.90805 0.35641 0 4.2108e+06\n")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "a.pcd"
        p.write_text(text)
        cloud = read_pcd(p)
    assert cloud.points.shape == (1, 2)
    np.testing.assert_array_equal(cloud.points["x"][0], np.float32([0.93773, 0.90805]))


# ----------------------------------------------------------------------------- PLY


def test_ply_round_trip(grid, tmp_path):
    (path,) = export(grid, "ply", tmp_path / "scan.ply")
    v = read_ply(path)
    assert v.size == int(grid.detected.sum())                # detected returns of all frames
    for name, var in (("x", "x_noisy"), ("y", "y_noisy"), ("z", "z_noisy"), ("timestamp", "timestamp"),
                      ("object_id", "object_id")):
        np.testing.assert_array_equal(v[name], _det_flat(grid, var), err_msg=name)   # double / int: exact
    np.testing.assert_array_equal(v["intensity"], _det_flat(grid, "intensity").astype(np.float32))
    np.testing.assert_array_equal(v["frame"], _frame_of_detected(grid))
    # independent reader: trimesh parses the same vertices
    cloud = trimesh.load(path)
    np.testing.assert_array_equal(np.asarray(cloud.vertices),
                                  np.column_stack([v["x"], v["y"], v["z"]]))


# ----------------------------------------------------------------------------- LAS


def test_las_round_trip(grid, tmp_path):
    (path,) = export(grid, "las", tmp_path / "scan.las")
    las = laspy.read(path)
    assert str(las.header.version) == "1.4" and las.header.point_format.id == 6
    # LAS 1.4 Global Encoding bit 0: adjusted standard GPS time
    assert las.header.global_encoding.gps_time_type == laspy.header.GpsTimeType.STANDARD
    assert las.header.point_count == int(grid.detected.sum())
    np.testing.assert_array_equal(las.header.scales, [1e-4] * 3)
    for axis, var in zip("xyz", ("x_noisy", "y_noisy", "z_noisy")):
        np.testing.assert_allclose(np.asarray(las[axis]), _det_flat(grid, var), rtol=0, atol=LAS_ATOL_M)
    # intensity: round(65535 * clip(intensity, 0, 1)) (documented scaling, full scale 1.0)
    want_i = np.round(65535 * np.clip(_det_flat(grid, "intensity"), 0, 1)).astype(np.uint16)
    np.testing.assert_array_equal(np.asarray(las.intensity), want_i)
    # every return is on the wall, class "wall": ASPRS 6 "building" (LAS 1.4 R15 Table 17)
    np.testing.assert_array_equal(np.asarray(las.classification), 6)
    np.testing.assert_array_equal(np.asarray(las.return_number), 1)
    # GPS time, analytic: 2000-01-01T12:00:00 UTC is 7300 days + 12 h after 1980-01-06 plus 13 leap
    # seconds = 630763213 s GPS; adjusted standard GPS time subtracts 1e9.
    want_t = (630763213 - 1_000_000_000) + _det_flat(grid, "timestamp")
    np.testing.assert_allclose(np.asarray(las.gps_time), want_t, rtol=0, atol=1e-6)   # 1 us


def test_las_classification_sources(tmp_path):
    ds = _synthetic(shape=(4, 5), n_frames=2, seed=7)
    # 1. class_id attribute indexed by object id
    ds.attrs["class_id"] = np.array([3, 7], dtype=np.int64)            # object 2 has none -> 0
    (p,) = export(ds, "las", tmp_path / "a.las")
    oid = _det_flat(ds, "object_id")
    np.testing.assert_array_equal(np.asarray(laspy.read(p).classification), np.choose(oid, [3, 7, 0]))
    # 2. a per-point annotation variable takes precedence
    ann = (np.arange(ds.detected.size).reshape(ds.detected.shape) % 200).astype(np.uint8)
    ds["annotation"] = (ds.detected.dims, ann)
    (p,) = export(ds, "las", tmp_path / "b.las")
    np.testing.assert_array_equal(np.asarray(laspy.read(p).classification), ann[ds.detected.values])
    # 3. class ids beyond uint8 are refused
    bad = ds.drop_vars("annotation")
    bad.attrs["class_id"] = [300, 1, 1]
    with pytest.raises(ExportError, match="0..255"):
        export(bad, "las", tmp_path / "c.las")
    assert not (tmp_path / "c.las").exists()


def test_las_classification_function():
    oid = np.array([-1, 0, 1, 5])
    # nothing to go on: 0, ASPRS "created, never classified" (LAS 1.4 R15, classification table)
    np.testing.assert_array_equal(las_classification(oid), [0, 0, 0, 0])
    # lookup by object id; -1 and ids beyond the table give 0 (documented)
    np.testing.assert_array_equal(las_classification(oid, class_id=[4, 9]), [0, 4, 9, 0])
    ann = np.array([1, 2, 3, 4], dtype=np.uint8)
    np.testing.assert_array_equal(las_classification(oid, annotation=ann, class_id=[4, 9]), ann)
    assert las_classification(np.zeros((0,), np.int32), class_id=[1]).shape == (0,)   # same rank when empty
    with pytest.raises(ExportError, match="class_id"):
        las_classification(oid, class_id=["road"])


def test_gps_time_leap_seconds_against_bulletin_c():
    import datetime as dt
    # GPST - UTC at each epoch, read off IERS Bulletin C's leap-second list (TAI - UTC minus 19 s):
    # 0 until 1981-06-30, 1 from 1981-07-01, 13 from 1999-01-01, 17 from 2015-07-01, 18 from 2017-01-01.
    epochs = {"1980-01-06T00:00:00": 0, "1981-06-30T23:59:59": 0, "1981-07-01T00:00:00": 1,
              "1999-06-01T08:30:00.250000": 13, "2016-12-31T23:59:59": 17, "2017-01-01T00:00:00": 18,
              "2024-05-01T12:00:00": 18}
    gps_epoch = dt.datetime(1980, 1, 6)
    for e, leap in epochs.items():
        sec, frac = gps_seconds_from_utc(e + "Z", np.array([0.0, 0.5]))
        # analytic: whole UTC seconds since 1980-01-06 by calendar arithmetic, plus the leap count
        since = dt.datetime.fromisoformat(e) - gps_epoch
        want_ns = (since.days * 86400 + since.seconds + leap) * 1_000_000_000 + since.microseconds * 1000
        np.testing.assert_array_equal(sec * 1_000_000_000 + np.round(frac * 1e9).astype(np.int64),
                                      want_ns + np.array([0, 500_000_000]), err_msg=e)
    # IERS Bulletin C: GPST - UTC is 17 s before and 18 s from 2017-01-01 (analytic difference)
    a, _ = gps_seconds_from_utc("2016-12-31T23:59:59Z", [0.0])
    b, _ = gps_seconds_from_utc("2017-01-01T00:00:00Z", [0.0])
    assert int(b[0] - a[0]) == 2
    # a point timestamped across the boundary picks up the leap second
    c, fc = gps_seconds_from_utc("2016-12-31T23:59:59Z", [2.0])
    assert int(c[0]) + fc[0] == pytest.approx(int(a[0]) + 3.0, abs=1e-9)


# ----------------------------------------------------------------------------- KITTI


def test_kitti_sensor_frame_round_trip(grid, tmp_path):
    paths = export(grid, "kitti", tmp_path / "scan.bin")
    assert [p.name for p in paths] == ["scan_000000.bin", "scan_000001.bin"]
    for f, p in enumerate(paths):
        fr = grid.isel(frame=f)
        det = fr.detected.values
        assert p.stat().st_size == 16 * int(det.sum())          # 4 float32 per point, no header
        scan = read_kitti_bin(p)
        assert scan.points_sensor.dtype == np.float32 and scan.points_sensor.shape == (int(det.sum()), 3)
        rot = Rotation.from_quat(fr.sensor_orientation.values)
        scene = np.column_stack([fr[v].values[det] for v in ("x_noisy", "y_noisy", "z_noisy")])
        want = rot.apply(scene - fr.sensor_position.values, inverse=True).astype(np.float32)
        np.testing.assert_array_equal(scan.points_sensor, want)               # float32 round trip
        np.testing.assert_array_equal(scan.intensity, np.clip(fr.intensity.values[det], 0, 1).astype(np.float32))


def test_kitti_point_from_yaw_pitch_distance(tmp_path):
    # Analytic: a static sensor without orthogonal noise reports distance_noisy along its ray, so
    # in the sensor frame p = distance_noisy * (cos p cos y, cos p sin y, sin p).
    ds = hifi.Simulation.from_dict(_grid_scenario(orthogonal_sigma_m=0.0)).run()["grid"]
    paths = export(ds, "kitti", tmp_path / "s.bin")
    for f, p in enumerate(paths):
        fr = ds.isel(frame=f)
        det = fr.detected.values
        yaw, pitch, d = fr.yaw.values[det], fr.pitch.values[det], fr.distance_noisy.values[det]
        want = d[:, None] * np.column_stack([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw), np.sin(pitch)])
        # 0.1 mm: stored points are within 0.05 mm per scene axis (int32 packing), so within
        # sqrt(3) * 0.05 mm = 0.087 mm per sensor axis after the rotation, plus float32 (< 10 um).
        np.testing.assert_allclose(read_kitti_bin(p).points_sensor, want, rtol=0, atol=1e-4)


def test_kitti_static_pose_without_frame_dimension(tmp_path):
    ds = _synthetic(shape=(4, 3), n_frames=2, seed=5)
    static = ds.assign(sensor_position=ds.sensor_position.isel(frame=0),
                       sensor_orientation=ds.sensor_orientation.isel(frame=0))
    paths = export(static, "kitti", tmp_path / "s.bin")
    rot = Rotation.from_quat(static.sensor_orientation.values)
    for f, p in enumerate(paths):
        fr = static.isel(frame=f)
        det = fr.detected.values
        scene = np.column_stack([fr[v].values[det] for v in ("x_noisy", "y_noisy", "z_noisy")])
        want = rot.apply(scene - static.sensor_position.values, inverse=True).astype(np.float32)
        np.testing.assert_array_equal(read_kitti_bin(p).points_sensor, want)   # float32 round trip


def test_kitti_needs_sensor_pose(tmp_path):
    with pytest.raises(ExportError, match="sensor pose.*lacks sensor_position, sensor_orientation"):
        export(_synthetic(pose=False), "kitti", tmp_path / "x.bin")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- EVD


def _read_evd_with_struct(path):
    """Independent reader: BlenSor's evd_reader logic, struct "i" then "11dQ" records (little endian)."""
    raw = path.read_bytes()
    scans, pos = [], 0
    while True:
        (n,) = struct.unpack_from("<i", raw, pos)
        pos += 4
        if n == -1:
            return scans, pos
        scans.append([struct.unpack_from("<11dQ", raw, pos + 96 * k) for k in range(n)])
        pos += 96 * n


def test_evd_round_trip(grid, tmp_path):
    (path,) = export(grid, "evd", tmp_path / "scan.evd")
    assert struct.calcsize("<11dQ") == 96                         # BlenSor's record, no padding
    scans, end = _read_evd_with_struct(path)
    assert end == path.stat().st_size                            # the int32 -1 end marker closes the file
    assert path.read_bytes()[-4:] == struct.pack("<i", -1)
    assert [len(s) for s in scans] == [int(grid.detected.isel(frame=f).sum()) for f in range(2)]  # hits only
    rows = np.array([r for s in scans for r in s], dtype=object)
    fields = ("timestamp", "yaw", "pitch", "distance", "distance_noisy", "x", "y", "z",
              "x_noisy", "y_noisy", "z_noisy")
    for k, name in enumerate(fields):                             # float64: exact
        np.testing.assert_array_equal(rows[:, k].astype(float), _det_flat(grid, name), err_msg=name)
    np.testing.assert_array_equal(rows[:, 11].astype(np.int64), _det_flat(grid, "object_id"))
    # the public reader agrees with the struct reader
    recs = read_evd(path)
    np.testing.assert_array_equal(np.concatenate(recs)["x_noisy"], _det_flat(grid, "x_noisy"))
    np.testing.assert_array_equal(np.concatenate(recs)["object_id"], _det_flat(grid, "object_id"))


# ----------------------------------------------------------------------------- edge cases


def test_all_misses_give_valid_empty_files(tmp_path):
    ds = _synthetic(shape=(3, 4), n_frames=2, p_detect=0.0)
    assert not ds.detected.values.any()
    pcd = export(ds, "pcd", tmp_path / "m.pcd")
    for p in pcd:
        cloud = read_pcd(p)
        assert cloud.header["POINTS"] == 12 and np.all(np.isnan(cloud.points["x"]))   # organised, all invalid
    (ply,) = export(ds, "ply", tmp_path / "m.ply")
    assert read_ply(ply).size == 0 and b"element vertex 0\n" in ply.read_bytes()
    (las,) = export(ds, "las", tmp_path / "m.las")
    assert laspy.read(las).header.point_count == 0
    (evd,) = export(ds, "evd", tmp_path / "m.evd")
    assert evd.read_bytes() == struct.pack("<iii", 0, 0, -1)     # two scans of count 0, then -1
    assert [r.size for r in read_evd(evd)] == [0, 0]
    kitti = export(ds, "kitti", tmp_path / "m.bin")
    assert [p.stat().st_size for p in kitti] == [0, 0]
    assert read_kitti_bin(kitti[0]).points_sensor.shape == (0, 3)


def test_synthetic_single_frame_all_formats(tmp_path):
    ds = _synthetic(shape=(5, 6), n_frames=1, seed=2)
    n = int(ds.detected.sum())
    for fmt, name in (("pcd", "a.pcd"), ("ply", "a.ply"), ("las", "a.las"), ("ptx", "a.ptx"),
                      ("evd", "a.evd"), ("kitti", "a.bin")):
        assert export(ds, fmt, tmp_path / name) == [tmp_path / name]    # one frame: `out` itself
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.evd", "a.las", "a.pcd", "a.ply", "a.ptx"]
    assert read_ply(tmp_path / "a.ply").size == n
    assert laspy.read(tmp_path / "a.las").header.point_count == n
    assert read_kitti_bin(tmp_path / "a.bin").intensity.size == n
    assert [r.size for r in read_evd(tmp_path / "a.evd")] == [n]


#: Formats of one sensor family's raw packets (tested in their own files, e.g.
#: exporters/test_pcap_velodyne.py): any other model is refused naming it and the supported ones.
RAW_PACKET_FORMATS = {"pcap"}
#: GNSS receiver formats (RINEX: tests/sensors/test_gnss_receiver.py): they need a gnss_receiver's raw
#: observables, not points.
GNSS_FORMATS = {"rinex"}
#: Run-level formats (scope "run": SemanticKITTI, MCAP) take a run directory, not a dataset; they
#: are tested in their own files (exporters/test_semantickitti.py, exporters/test_mcap.py).
RUN_FORMATS = {f for f in FORMATS if load_exporter(f).scope == "run"}
SENSOR_FORMATS = [f for f in FORMATS if f not in RUN_FORMATS]
POINT_FORMATS = [f for f in SENSOR_FORMATS if f not in RAW_PACKET_FORMATS | GNSS_FORMATS]


@pytest.mark.parametrize("fmt", SENSOR_FORMATS)
def test_depth_map_dataset_is_refused_naming_what_is_missing(run_dir, tmp_path, fmt):
    with xr.open_dataset(run_dir / "cam.nc") as cam, pytest.raises(ExportError) as err:
        export(cam, fmt, tmp_path / f"cam.{fmt}")
    msg = str(err.value)
    if fmt in RAW_PACKET_FORMATS:
        assert "supported models" in msg
    elif fmt in GNSS_FORMATS:
        assert "code, phase, doppler" in msg
    else:
        assert "x_noisy" in msg or "gridded scan" in msg
    assert "depthmap" in msg                                       # names the sensor model
    assert list(tmp_path.iterdir()) == []                          # nothing written, no staging dir


@pytest.mark.parametrize("fmt", ["semantickitti", "mcap"])
def test_run_level_formats_refuse_a_dataset(grid, tmp_path, fmt):
    import importlib
    register_exporter(importlib.import_module(f"hifi.exporters.{fmt}").EXPORTER)    # as its entry point
    assert load_exporter(fmt).scope == "run"
    with pytest.raises(ExportError, match="takes a run directory"):
        export(grid, fmt, tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_missing_output_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        export(_synthetic(), "ply", tmp_path / "absent" / "a.ply")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("fmt", POINT_FORMATS)
def test_cli_export(run_dir, tmp_path, fmt, capsys):
    out = tmp_path / f"grid.{fmt}"
    assert main(["export", str(run_dir / "grid.nc"), "--format", fmt, "--out", str(out)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    if fmt in ("pcd", "kitti"):                                   # two frames: one file per frame
        ext = ".pcd" if fmt == "pcd" else ".bin"
        assert written == [f".grid.{fmt}.hifi-export", f"grid_000000{ext}", f"grid_000001{ext}"]   # + manifest
    else:
        assert written == [out.name]
    assert "grid" in capsys.readouterr().out
    # a dataset the format cannot hold: exit status 2, one message, nothing left
    bad = tmp_path / "bad"
    bad.mkdir()
    assert main(["export", str(run_dir / "cam.nc"), "--format", fmt, "--out", str(bad / f"cam.{fmt}")]) == 2
    assert "depthmap" in capsys.readouterr().err
    assert list(bad.iterdir()) == []


# ----------------------------------------------------------------------------- Zarr stores


@pytest.fixture(scope="module")
def zarr_run(run_dir, tmp_path_factory):
    """``run_dir`` with every dataset a Zarr store (a partitioned run's layout, written from the
    .nc files by xarray: tests/_stores.py), in a directory of the same name (MCAP records it)."""
    return zarr_copy(run_dir, tmp_path_factory.mktemp("zarr") / run_dir.name)


def _files(d):
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", ["las", "ply", "pcd"])
def test_cli_export_of_a_zarr_store_is_the_netcdf_export(run_dir, zarr_run, tmp_path, fmt):
    # Expected: the export of the netCDF file, byte for byte (LAS carries the simulated epoch,
    # not the export's date). The store is named as SOURCE, and found by --sensor in DIR.
    for sub, source in (("nc", [str(run_dir / "grid.nc")]), ("zarr", [str(zarr_run / "grid.zarr")]),
                        ("sensor", [str(zarr_run), "--sensor", "grid"])):
        (tmp_path / sub).mkdir()
        assert main(["export", *source, "--format", fmt, "--out", str(tmp_path / sub / f"grid.{fmt}")]) == 0
    want = _files(tmp_path / "nc")
    assert len(want) == (3 if fmt == "pcd" else 1)                  # pcd: two frame files and the manifest
    assert _files(tmp_path / "zarr") == _files(tmp_path / "sensor") == want
    if fmt == "las":                                                # read back by laspy, the field's client
        with xr.open_dataset(run_dir / "grid.nc") as ds:
            assert laspy.read(tmp_path / "zarr" / "grid.las").header.point_count == int(ds.detected.sum()) > 0


@pytest.mark.parametrize("fmt", ["semantickitti", "mcap"])
def test_run_level_export_of_a_zarr_run_is_the_netcdf_export(run_dir, zarr_run, tmp_path, fmt):
    # The run-level formats read the sensors and motion.zarr (hifi.exporters._common); expected:
    # the export of the netCDF run, byte for byte.
    if fmt == "mcap":
        pytest.importorskip("mcap_ros2", reason="mcap-ros2-support (test extra) writes --format mcap")
    for sub, d in (("nc", run_dir), ("zarr", zarr_run)):
        (tmp_path / sub).mkdir()
        out = tmp_path / sub / ("seq" if fmt == "semantickitti" else "run.mcap")
        assert main(["export", str(d), "--format", fmt, "--sensor", "grid", "--out", str(out)]) == 0
    want = _files(tmp_path / "nc")
    assert len(want) > 1 and _files(tmp_path / "zarr") == want


def test_export_never_writes_over_or_inside_a_zarr_store(zarr_run, tmp_path, capsys):
    # A store is a directory: an output inside the one read is refused (status 2) as an output
    # over it is, whatever --overwrite says, and nothing is written.
    store = zarr_run / "grid.zarr"
    before = _files(zarr_run)
    for args in ([str(store), "--out", str(store / "x.las")],
                 [str(store), "--out", str(store / "x_noisy" / "x.las"), "--overwrite"],
                 [str(store), "--out", str(store), "--overwrite"],
                 [str(zarr_run), "--sensor", "grid", "--out", str(store / "x.las")]):
        assert main(["export", *args, "--format", "las"]) == 2, args
        err = capsys.readouterr().err
        assert "refusing to write over or inside a command's own input" in err and str(store) in err, err
    with xr.open_dataset(store, engine="zarr") as ds:                # the API refuses it too
        with pytest.raises(ValueError, match="lies inside the input"):
            export(ds, "ply", store / "x.ply")
    assert _files(zarr_run) == before
    # a store is one dataset, not a run directory; an unknown --sensor lists the datasets
    assert main(["export", str(store), "--format", "semantickitti", "--out", str(tmp_path / "seq")]) == 2
    assert "takes a run directory (hifi run --out DIR) (this is one model's Zarr store)" in capsys.readouterr().err
    assert main(["export", str(zarr_run), "--format", "las", "--sensor", "lidar",
                 "--out", str(tmp_path / "x.las")]) == 2
    err = capsys.readouterr().err
    assert "--sensor 'lidar': no lidar.nc or lidar.zarr in it; its datasets: cam, grid, motion" in err
    assert list(tmp_path.iterdir()) == []


def test_tof_exports_as_an_image_and_las_is_reproducible(tmp_path):
    # A ToF camera (dims row, col) is written to PCD as an image: WIDTH = columns (PCD spec:
    # rows of WIDTH points), and its sensor pose makes KITTI possible. LAS carries the
    # simulated epoch as its creation date, so two exports are byte-identical (regression).
    d = {"simulation": {"duration_s": 0.05},
         "objects": [{"name": "wall", "mesh": "plane", "size_m": [50, 50], "position_m": [4, 0, 0],
                      "rpy_deg": [0, -90, 0]}],
         "sensors": [{"name": "tof", "model": "tof_sr4000", "rate_hz": 20.0,
                      "params": {"resolution_x": 8, "resolution_y": 6}}]}
    ds = hifi.Simulation.from_dict(d).run()["tof"]
    (pcd,) = export(ds, "pcd", tmp_path / "tof.pcd")
    header = pcd.read_bytes().split(b"DATA binary\n")[0].decode()
    assert "WIDTH 8\n" in header and "HEIGHT 6\n" in header
    cloud = read_pcd(pcd)
    assert cloud.points.shape == (6, 8)                                  # (HEIGHT, WIDTH)
    np.testing.assert_allclose(cloud.points["x"], ds.x_noisy.isel(frame=0).values.astype(np.float32))
    (kitti,) = export(ds, "kitti", tmp_path / "tof.bin")
    assert read_kitti_bin(kitti).points_sensor.shape == (48, 3)
    (a,) = export(ds, "las", tmp_path / "a.las")
    (b,) = export(ds, "las", tmp_path / "b.las")
    assert a.read_bytes() == b.read_bytes()


def test_las_intensity_scaled_by_the_sensors_code_range(tmp_path):
    # LAS 1.4 R15: intensity is normalised to 16 bits by the sensor's dynamic range. A dataset
    # whose intensity carries valid_max (a Velodyne byte: 255) maps code c to round(65535 c / 255).
    ds = _synthetic(shape=(4, 5), n_frames=1, seed=3)
    codes = np.round(np.random.default_rng(0).uniform(0, 255, ds.intensity.shape))
    ds["intensity"] = (ds.intensity.dims, codes, {"valid_min": 0.0, "valid_max": 255.0})
    (p,) = export(ds, "las", tmp_path / "v.las")
    want = np.round(65535 * _det_flat(ds, "intensity") / 255.0).astype(np.uint16)
    np.testing.assert_array_equal(np.asarray(laspy.read(p).intensity), want)


def test_dual_return_exports_every_echo_once(tmp_path):
    # The fence-before-a-wall scene of tests/sensors/test_lidar.py in VLP-16 dual mode: LAS (read by laspy)
    # holds every distinct echo once, with LAS 1.4 return numbering in range order; PCD (read by
    # read_pcd; pypcd4 reads the same writer's files in the other tests) keeps the 16-ring
    # organised grid with the strongest echo per cell. Expected counts: the dataset, with numpy.
    slats = [{"name": f"slat{i}", "mesh": "box", "size_m": [0.02, 0.05, 3.0], "material": "fence",
              "position_m": [6.0, -1.5 + 0.15 * i, 0.0]} for i in range(21)]
    d = {"simulation": {"duration_s": 0.1, "start_utc": "2024-05-01T12:00:00Z"},
         "materials": {"fence": {"reflectivity": 0.8}, "wall": {"reflectivity": 0.3}},
         "objects": [{"name": "wall", "mesh": "plane", "size_m": [60, 60], "material": "wall",
                      "position_m": [9, 0, 0], "rpy_deg": [0, -90, 0]}] + slats,
         # an ideal receiver (no impulse-response tail): the echoes are the fence's and the wall's,
         # none floating between them, so each return number has one surface to check
         "sensors": [{"name": "v", "model": "vlp16", "params": {"return_mode": "dual", "receiver_tail_s": 0.0}}]}
    ds = hifi.Simulation.from_dict(d).run()["v"]
    fr = ds.isel(frame=0)
    det, r = fr.detected.values, fr.distance_noisy.values
    two = det[..., 0] & det[..., 1] & (r[..., 0] != r[..., 1])
    n_echoes = int(det[..., 0].sum() + (det[..., 1] & ~(det[..., 0] & (r[..., 0] == r[..., 1]))).sum())
    assert two.sum() >= 20
    out = export(ds, "las", tmp_path / "v.las")[0]
    las = laspy.read(out)
    assert len(las.points) == n_echoes
    assert int((las.number_of_returns == 2).sum()) == 2 * int(two.sum())
    assert int((las.return_number == 2).sum()) == int(two.sum())
    # return 1 is the nearer echo of its pulse: the fence (x ~ 6 m), return 2 the wall (x ~ 9 m)
    x = np.asarray(las.x)
    assert np.all(x[np.asarray(las.return_number) == 2] > 8.5)
    assert np.all(x[(np.asarray(las.return_number) == 1) & (np.asarray(las.number_of_returns) == 2)] < 6.5)
    pcd = read_pcd(export(ds, "pcd", tmp_path / "v.pcd")[0])
    assert (pcd.header["HEIGHT"], pcd.header["WIDTH"]) == (16, ds.sizes["step"])
    assert int(np.isfinite(pcd.points["x"]).sum()) == int(det[..., 0].sum())
