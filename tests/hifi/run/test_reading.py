"""Reading run directories back (hifi.run.reading, ``hifi.open_run``): netCDF files and Zarr stores.

The Zarr run is a real serial run with every ``NAME.nc`` rewritten as ``NAME.zarr`` by xarray's
own Zarr writer (tests/_stores.py), so every expected value is the netCDF run's: the same
variables, values (bit for bit, NaN where NaN), dtypes and attributes through either format.
The conversion recipes of docs/outputs.md are run as written there and checked against the
netCDF file the run wrote (values, attributes, compression, chunks).
"""

from __future__ import annotations

import json
import re
import shutil
import warnings

import numpy as np
import pytest
import xarray as xr

import hifi
from hifi.run.reading import find_output, is_zarr_store, open_output, open_run, output_paths

from _scenes import wall_scenario
from _stores import zarr_copy
from conftest import REPO_ROOT


def _scenario():
    """A wall at 10 m, a 9 x 5 generic_grid ``lidar`` and an 8 x 6 depth map ``cam``, 2 frames."""
    d = wall_scenario(10.0, duration_s=0.2, seed=3)
    d["simulation"]["start_utc"] = "2000-01-01T12:00:00Z"
    d["sensors"] = [
        {"name": "lidar", "model": "generic_grid", "rate_hz": 10.0, "position_m": [1.0, 2.0, 0.5],
         "params": {"n_theta": 9, "n_phi": 5, "theta_min_deg": -85.0, "theta_max_deg": 85.0}},
        {"name": "cam", "model": "depthmap", "rate_hz": 10.0, "params": {"resolution_x": 8, "resolution_y": 6}},
    ]
    return d


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(netCDF run directory, its Zarr copy); both directories are named ``out``."""
    tmp = tmp_path_factory.mktemp("reading")
    nc = tmp / "nc" / "out"
    for ds in hifi.Simulation.from_dict(_scenario()).run(out=nc, progress=False).values():
        ds.close()
    return nc, zarr_copy(nc, tmp / "zarr" / "out")


def _same_attrs(a: dict, b: dict, where: str) -> None:
    """Equal attribute values; Zarr keeps attributes as JSON, so an array comes back as a list
    and a numpy scalar as a Python number: compared as values, not types."""
    assert set(a) == set(b), (where, set(a) ^ set(b))
    for key in a:
        assert np.asarray(a[key]).tolist() == np.asarray(b[key]).tolist(), (where, key, a[key], b[key])


def _same_datasets(a: xr.Dataset, b: xr.Dataset, name: str) -> None:
    assert set(a.variables) == set(b.variables), (name, set(a.variables) ^ set(b.variables))
    assert dict(a.sizes) == dict(b.sizes), name
    _same_attrs(a.attrs, b.attrs, name)
    for v in a.variables:
        assert a[v].dims == b[v].dims and a[v].dtype == b[v].dtype, (name, v, a[v].dtype, b[v].dtype)
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=f"{name}.{v}")
        _same_attrs(a[v].attrs, b[v].attrs, f"{name}.{v}")


def test_open_run_reads_zarr_stores_as_the_netcdf_files(runs):
    nc_dir, zarr_dir = runs
    assert sorted(p.name for p in zarr_dir.iterdir()) == [".hifi-run", "cam.zarr", "lidar.zarr", "motion.zarr",
                                                          "scenario.toml"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no "consolidated metadata not found" or any other
        a, b = hifi.open_run(nc_dir), hifi.open_run(zarr_dir)
    try:
        assert list(a) == list(b) == ["cam", "lidar", "motion"]
        for name in a:
            assert a[name].encoding["source"] == str(nc_dir / f"{name}.nc")
            assert b[name].encoding["source"] == str(zarr_dir / f"{name}.zarr")
            assert all(b[name][v].chunks is None for v in b[name].variables)      # no dask unless asked
            _same_datasets(a[name], b[name], name)
        # the readers built on the datasets: decoded CF times and the accessor agree too
        np.testing.assert_array_equal(b["lidar"].hifi.seconds("timestamp"), a["lidar"].hifi.seconds("timestamp"))
        assert b["lidar"].timestamp.dtype.kind == "M"                               # decoded: CF units kept
        np.testing.assert_array_equal(b["lidar"].hifi.points(), a["lidar"].hifi.points())
        assert b["lidar"].hifi.points().shape[0] > 0
        got, want = b["motion"].hifi.pose("lidar", [0.05]), a["motion"].hifi.pose("lidar", [0.05])
        np.testing.assert_array_equal(got.translation, want.translation)
        np.testing.assert_array_equal(got.rotation.as_quat(), want.rotation.as_quat())
    finally:
        for ds in (*a.values(), *b.values()):
            ds.close()


def test_a_store_without_consolidated_metadata_opens_without_a_warning(runs, tmp_path):
    _, zarr_dir = runs
    store = shutil.copytree(zarr_dir / "lidar.zarr", tmp_path / "lidar.zarr")
    (store / ".zmetadata").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with open_output(store) as plain, open_output(zarr_dir / "lidar.zarr") as consolidated:
            _same_datasets(consolidated, plain, "lidar")


def test_chunks_give_dask_arrays_of_the_same_values(runs):
    pytest.importorskip("dask", reason="dask (test extra) makes the chunked arrays")
    nc_dir, zarr_dir = runs
    with open_output(zarr_dir / "lidar.zarr", chunks={}) as lazy, open_output(nc_dir / "lidar.nc") as ref:
        assert lazy["x_noisy"].chunks is not None
        np.testing.assert_array_equal(lazy["x_noisy"].values, ref["x_noisy"].values)
    run = open_run(zarr_dir, chunks={})
    try:
        assert run["cam"]["depth"].chunks is not None
    finally:
        for ds in run.values():
            ds.close()


def test_output_paths_and_find_output(runs, tmp_path):
    nc_dir, zarr_dir = runs
    assert output_paths(zarr_dir) == {n: zarr_dir / f"{n}.zarr" for n in ("cam", "lidar", "motion")}
    assert output_paths(nc_dir) == {n: nc_dir / f"{n}.nc" for n in ("cam", "lidar", "motion")}
    assert find_output(zarr_dir, "lidar") == zarr_dir / "lidar.zarr" and find_output(zarr_dir, "gps") is None
    assert is_zarr_store(zarr_dir / "lidar.zarr")
    assert not is_zarr_store(zarr_dir) and not is_zarr_store(nc_dir / "lidar.nc")
    # A run may mix the formats; hidden entries (a writer's temporary file) are no datasets.
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(nc_dir / "cam.nc", mixed / "cam.nc")
    shutil.copytree(zarr_dir / "lidar.zarr", mixed / "lidar.zarr")
    shutil.copy(nc_dir / "motion.nc", mixed / ".motion.nc")
    assert output_paths(mixed) == {"cam": mixed / "cam.nc", "lidar": mixed / "lidar.zarr"}


def test_bad_run_directories_name_the_directory_and_what_is_expected(runs, tmp_path):
    nc_dir, zarr_dir = runs
    with pytest.raises(FileNotFoundError, match=rf"{re.escape(str(tmp_path / 'absent'))}: no such run directory"):
        open_run(tmp_path / "absent")
    with pytest.raises(ValueError, match="expected a run directory written by hifi run"):
        open_run(nc_dir / "scenario.toml")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=r"empty: no dataset in it \(NAME\.nc or NAME\.zarr\)"):
        open_run(tmp_path / "empty")
    # one name in both formats: which holds the run is not known, so neither is taken
    both = shutil.copytree(zarr_dir, tmp_path / "both")
    shutil.copy(nc_dir / "lidar.nc", both / "lidar.nc")
    with pytest.raises(ValueError, match=r"'lidar' is there twice, as lidar\.nc and lidar\.zarr"):
        open_run(both)


def test_bad_dataset_paths(runs, tmp_path):
    nc_dir, zarr_dir = runs
    with pytest.raises(FileNotFoundError, match=r"lidar\.nc: no such file or Zarr store; the run has lidar\.zarr"):
        open_output(zarr_dir / "lidar.nc")
    with pytest.raises(ValueError, match="a directory, not a dataset; expected one model's dataset, "
                                         r"DIR/NAME\.nc or DIR/NAME\.zarr"):
        open_output(nc_dir)
    (tmp_path / "broken.zarr").mkdir()                 # a store without metadata
    with pytest.raises(ValueError, match=r"broken\.zarr: not a readable Zarr store"):
        open_output(tmp_path / "broken.zarr")
    (tmp_path / "text.nc").write_text("not netCDF")
    with pytest.raises(ValueError, match=r"text\.nc: not a readable netCDF dataset"):
        open_output(tmp_path / "text.nc")
    # a run with a broken store: the datasets opened before it are closed, the error names it
    broken = shutil.copytree(zarr_dir, tmp_path / "run")
    shutil.rmtree(broken / "motion.zarr")
    (broken / "motion.zarr").mkdir()
    with pytest.raises(ValueError, match=r"motion\.zarr: not a readable Zarr store"):
        open_run(broken)


def test_open_run_is_the_public_name():
    assert hifi.open_run is open_run and "open_run" in hifi.__all__


# ------------------------------------------------------------------------------ docs/outputs.md


def _docs_snippets() -> list[str]:
    """The Python blocks of docs/outputs.md's section "Formats: netCDF and Zarr", in order."""
    text = (REPO_ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    section = text.split("\n## Formats: netCDF and Zarr\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 3, "expected the opening, Zarr -> netCDF and netCDF -> Zarr blocks"
    return blocks


def test_docs_recipes_open_and_convert_as_written(runs, tmp_path, monkeypatch):
    pytest.importorskip("dask", reason="dask (test extra): the docs open a store with xr.open_zarr's dask arrays")
    nc_dir, zarr_dir = runs
    shutil.copytree(zarr_dir, tmp_path / "out")          # the docs' run directory: out/lidar.zarr
    monkeypatch.chdir(tmp_path)
    opening, to_netcdf, to_zarr = _docs_snippets()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scope: dict = {}
        exec(opening, scope)
        for ds in [*scope["run"].values(), scope["ds"], scope["lazy"]]:
            ds.close()
        exec(to_netcdf, {})                               # out/lidar.zarr -> lidar.nc
        exec(to_zarr, {})                                 # lidar.nc -> lidar.zarr
    raw = {"decode_times": False, "mask_and_scale": False}     # the values as stored
    with xr.open_dataset(nc_dir / "lidar.nc", **raw) as ref, xr.open_dataset("lidar.nc", **raw) as back, \
            xr.open_dataset("lidar.zarr", engine="zarr", consolidated=True, **raw) as again:
        assert back.encoding["unlimited_dims"] == ref.encoding["unlimited_dims"] == {"frame"}
        compressed = []
        for v in ref.variables:
            for ds, what in ((back, "netCDF"), (again, "Zarr")):
                assert ds[v].dtype == ref[v].dtype, (what, v)
                np.testing.assert_array_equal(ds[v].values, ref[v].values, err_msg=f"{what} {v}")
                # Differences the formats make, not the recipe: a float variable gains the
                # store's fill value _FillValue = NaN, and integer attributes come back from
                # JSON as int64 (flag_values), with the same values.
                attrs = {k: a for k, a in ds[v].attrs.items()
                         if not (k == "_FillValue" and np.isnan(a) and k not in ref[v].attrs)}
                _same_attrs(ref[v].attrs, attrs, f"{what} {v}")
            frame_variable = ref[v].dims[:1] == ("frame",) and ref[v].ndim > 1
            if frame_variable:        # the run's netCDF layout: shuffle + zlib level 1, a chunk per frame
                got = {k: back[v].encoding.get(k) for k in ("zlib", "complevel", "shuffle", "chunksizes")}
                assert got == {"zlib": True, "complevel": 1, "shuffle": True,
                               "chunksizes": (1, *ref[v].shape[1:])}, (v, got)
                meta = json.loads((tmp_path / "lidar.zarr" / v / ".zarray").read_text())
                assert meta["compressor"] == {"id": "zlib", "level": 1}, v
                assert [f["id"] for f in meta["filters"]] == ["shuffle"], v
                assert meta["chunks"] == [1, *ref[v].shape[1:]], v
                compressed.append(v)
        assert {"x_noisy", "distance", "timestamp", "detected"} <= set(compressed)
