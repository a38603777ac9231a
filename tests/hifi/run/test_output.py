"""Output files, determinism, the CLI's plot and export, and the xarray accessor."""

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

import hifi
from hifi.cli import main
from hifi.export import read_ptx

from _scenes import wall_scenario
from conftest import REPO_ROOT


def _scenario(seed=5):
    d = wall_scenario(15.0, duration_s=0.4, seed=seed, objects_extra=[
        {"name": "mover", "mesh": "car",
         "track": [{"t_s": 0.0, "position_m": [8, -3, -1]}, {"t_s": 1.0, "position_m": [8, 3, -1]}]}])
    d["sensors"] = [
        {"name": "grid", "model": "generic_grid", "rate_hz": 5.0,
         "params": {"n_theta": 40, "n_phi": 20, "los_sigma_m": 0.03, "orthogonal_sigma_m": 0.01}},
        {"name": "cam", "model": "depthmap", "rate_hz": 10.0, "params": {"resolution_x": 32, "resolution_y": 24}},
    ]
    return d


def test_same_seed_same_bytes_different_seed_differs(tmp_path):
    a = hifi.Simulation.from_dict(_scenario(5)).run(out=tmp_path / "a")
    b = hifi.Simulation.from_dict(_scenario(5)).run(out=tmp_path / "b")
    c = hifi.Simulation.from_dict(_scenario(6)).run()
    for name in ("grid", "cam", "motion"):
        assert set(a[name].data_vars) == set(b[name].data_vars)
        for var in a[name].data_vars:
            assert a[name][var].values.tobytes() == b[name][var].values.tobytes(), (name, var)
    assert not np.array_equal(a["grid"].distance_noisy.values, c["grid"].distance_noisy.values,
                              equal_nan=True)
    np.testing.assert_array_equal(a["grid"].distance.values, c["grid"].distance.values)   # truth is seed-free


def test_dataset_conventions(tmp_path):
    res = hifi.Simulation.from_dict(_scenario()).run(out=tmp_path / "o")
    files = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert files == [".hifi-run", "cam.nc", "grid.nc", "motion.nc", "scenario.toml"]
    ds = res["grid"]
    for key in ("sensor_name", "sensor_model", "hifi_version", "seed", "scenario"):
        assert key in ds.attrs
    assert ds.attrs["sensor_model"] == "generic_grid" and ds.attrs["seed"] == 5
    for name, var in {**ds.data_vars, **ds.coords}.items():
        # decoded CF times (timestamp, frame_time) keep their units in .encoding
        assert ("units" in var.attrs or "units" in var.encoding) and "long_name" in var.attrs, name
    contract = ["timestamp", "yaw", "pitch", "distance", "detected", "distance_noisy", "x", "y", "z",
                "x_noisy", "y_noisy", "z_noisy", "object_id", "intensity"]
    assert all(v in ds for v in contract)
    assert ds.detected.dtype == bool and ds.object_id.dtype == np.int32
    assert np.isnan(ds.distance_noisy.values[~ds.detected.values]).all()
    # motion.nc: ground-truth poses of every object and sensor (regression of the layout).
    m = res["motion"]
    assert list(m.body.values) == ["wall", "mover", "grid", "cam"]
    pos = m.position.sel(body="mover").values
    np.testing.assert_allclose(pos[:, 1], -3 + 6 * m.hifi.seconds("frame_time").values, atol=1e-8)   # the track (analytic)
    # scenario.toml beside the files is the exact input text
    assert (tmp_path / "o" / "scenario.toml").read_text() == ds.attrs["scenario"]


def test_points_accessor():
    ds = hifi.Simulation.from_dict(_scenario()).run()["grid"]
    pts = ds.hifi.points(noisy=True)
    assert pts.shape == (int(ds.detected.sum()), 3) and pts.dtype == np.float64
    clean = ds.hifi.points(noisy=False)
    assert clean.shape == pts.shape
    assert np.all(np.isfinite(pts))
    one = ds.hifi.points(frame=0)
    assert one.shape == (int(ds.detected.isel(frame=0).sum()), 3)
    empty = ds.where(ds.detected & False, drop=False)
    empty["detected"] = ds.detected & False
    assert empty.hifi.points().shape == (0, 3)                       # same rank when empty


def test_cli_plot_and_ptx_roundtrip(tmp_path, capsys):
    hifi.Simulation.from_dict(_scenario()).run(out=tmp_path / "o")
    for name in ("grid", "cam", "motion"):
        assert main(["plot", str(tmp_path / "o" / f"{name}.nc"), "--out", str(tmp_path / f"{name}.png")]) == 0
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ptx = tmp_path / "grid.ptx"
    assert main(["export", str(tmp_path / "o" / "grid.nc"), "--format", "ptx", "--out", str(ptx)]) == 0
    ds = xr.open_dataset(tmp_path / "o" / "grid.nc")
    scans = read_ptx(ptx)
    assert len(scans) == ds.sizes["frame"]
    for f, scan in enumerate(scans):
        fr = ds.isel(frame=f)
        assert (scan["n_columns"], scan["n_rows"]) == (fr.sizes["theta"], fr.sizes["phi"])
        # acquisition order: columns from theta_max (theta is stored increasing), each bottom to top
        fr = fr.isel(theta=slice(None, None, -1))
        det = fr.detected.values.ravel()
        local = scan["points"][:, :3]
        assert np.all(scan["points"][~det] == 0.0)                     # a miss is a line of zeros
        world = local @ scan["matrix"][:3, :3] + scan["matrix"][3, :3]  # row-vector convention
        expect = np.column_stack([fr[v].values.ravel() for v in ("x_noisy", "y_noisy", "z_noisy")])
        np.testing.assert_allclose(world[det], expect[det], atol=2e-6)  # 6 decimals in the file
    # A dataset that is not a grid gives a clear error and exit status 2.
    assert main(["export", str(tmp_path / "o" / "cam.nc"), "--format", "ptx", "--out", str(tmp_path / "x.ptx")]) == 2
    assert "PTX needs a gridded scan" in capsys.readouterr().err and not (tmp_path / "x.ptx").exists()


def test_cli_info(tmp_path, capsys):
    example = REPO_ROOT / "examples" / "crossing.toml"
    assert main(["info", str(example)]) == 0
    out = capsys.readouterr().out
    assert "car_2" in out and "moving" in out and "generic_grid" in out


def test_failed_run_leaves_nothing(tmp_path):
    class Boom(hifi.Model):
        model_name = "boom"

        def step(self, k, t):
            if k == 2:
                raise RuntimeError("sensor exploded")
            return {"v": hifi.Var((), np.float64(k), "1", "value")}

    sim = hifi.Simulation.from_dict(_scenario())
    sim.add_model(Boom("boom", rate_hz=10.0))
    with pytest.raises(hifi.ModelError, match=r"'boom'.*t = 0\.200000 s, frame 2.*sensor exploded"):
        sim.run(out=tmp_path / "o")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("order", ["hifi first", "xarray first"])
def test_accessor_registered_whichever_is_imported_first(order):
    # import hifi leaves xarray (and pandas) unimported (start-up time); the ds.hifi
    # accessor is registered when xarray loads, in either order of imports.
    imports = "import hifi, sys; lazy = 'xarray' not in sys.modules and 'pandas' not in sys.modules; import xarray as xr"
    if order == "xarray first":
        imports = "import xarray as xr, sys; lazy = True; import hifi"
    code = (f"{imports}\n"
            "from hifi.run.accessor import HifiAccessor\n"
            "assert lazy, 'import hifi imported xarray or pandas'\n"
            "assert isinstance(xr.Dataset().hifi, HifiAccessor)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_hifi_run_does_not_import_xarray(tmp_path):
    # Start-up: hifi run writes with netCDF4 and prints its summary from the files;
    # xarray and pandas (0.5-0.7 s to import) are left out. Python's own check, in a fresh
    # interpreter: sys.modules after the run.
    from _scenes import depth_camera_toml
    scenario = tmp_path / "scene.toml"
    scenario.write_text(depth_camera_toml(0.3, seed=2, rate_hz=10.0, resolution=(16, 12)))
    code = ("import sys\nfrom hifi.cli import main\n"
            f"status = main(['run', {str(scenario)!r}, '--out', {str(tmp_path / 'out')!r}, '--no-progress'])\n"
            "assert status == 0, status\n"
            "assert 'xarray' not in sys.modules and 'pandas' not in sys.modules, 'hifi run imported xarray'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "cam.nc" in proc.stdout and "frame=" in proc.stdout       # the summary's dimensions
