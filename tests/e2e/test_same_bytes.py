"""The comparison function of benchmarks/same_bytes.py on two tiny netCDF files.

No expected value here comes from hifi's physics: each file is built in the test and the change
is planted, so the expected verdict (identical, which variable differs, by how much) is known by
construction. The examples themselves are not run (that is the script's job, across commits).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT

netCDF4 = pytest.importorskip("netCDF4")

SCRIPT = REPO_ROOT / "benchmarks" / "same_bytes.py"


@pytest.fixture(scope="module")
def same_bytes():
    spec = importlib.util.spec_from_file_location("same_bytes", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["same_bytes"] = mod          # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def _write(path: Path, *, range_m=None, drop=None, version="0.1.0", nav_file="/a/base/data/nav.05n",
           history=None) -> Path:
    range_m = np.array([1.0, 2.5, np.nan, 4.0]) if range_m is None else range_m
    with netCDF4.Dataset(path, "w") as ds:
        ds.hifi_version = version
        ds.scenario = "version = 1\n"
        ds.nav_file = nav_file
        if history is not None:
            ds.history = history
        ds.createDimension("frame", 4)
        frame = ds.createVariable("frame", "i4", ("frame",))
        frame[:] = np.arange(4)
        frame.units = "1"
        if drop != "range":
            r = ds.createVariable("range", "f8", ("frame",))
            r[:] = range_m
            r.units = "m"
        t = ds.createVariable("time", "f8", ("frame",))
        t.units = "seconds since 2024-05-01"          # raw values compare: no time decoding
        t[:] = [0.0, 0.1, 0.2, 0.3]
    return path


def test_identical_files_are_identical(tmp_path, same_bytes):
    a = _write(tmp_path / "a.nc")
    b = _write(tmp_path / "b.nc")
    res = same_bytes.compare_netcdf(a, b)
    assert res.identical and res.differences == []
    assert res.n_variables == 3


def test_one_changed_value_is_named_with_its_size(tmp_path, same_bytes):
    a = _write(tmp_path / "a.nc")
    # 2.5 -> the next float64 up: one bit of one value (the smallest change a byte compare sees)
    changed = np.array([1.0, np.nextafter(2.5, 3.0), np.nan, 4.0])
    b = _write(tmp_path / "b.nc", range_m=changed)
    res = same_bytes.compare_netcdf(a, b)
    assert not res.identical
    assert res.differing == ["range"]
    assert "1 of 4 values differ" in res.differences[0]
    assert "max |diff| 4.44e-16 m" in res.differences[0]     # one ulp at 2.5: 2**-51 m


def test_nan_in_one_file_only_is_a_difference(tmp_path, same_bytes):
    a = _write(tmp_path / "a.nc")
    b = _write(tmp_path / "b.nc", range_m=np.array([1.0, 2.5, 3.0, 4.0]))
    res = same_bytes.compare_netcdf(a, b)
    assert res.differing == ["range"] and "NaN in one only at 1" in res.differences[0]


def test_a_missing_variable_is_named(tmp_path, same_bytes):
    a = _write(tmp_path / "a.nc")
    b = _write(tmp_path / "b.nc", drop="range")
    res = same_bytes.compare_netcdf(a, b)
    assert res.differing == ["range"]
    assert res.differences == ["variable range: only in base"]


def test_version_and_side_paths_are_notes_not_differences(tmp_path, same_bytes):
    a = _write(tmp_path / "a.nc")
    b = _write(tmp_path / "b.nc", version="0.2.0", nav_file="/a/head/data/nav.05n")
    res = same_bytes.compare_netcdf(a, b, roots_a={"<checkout>": "/a/base"},
                                    roots_b={"<checkout>": "/a/head"})
    assert res.identical
    assert any("hifi_version" in n for n in res.notes) and any("nav_file" in n for n in res.notes)
    # any other global attribute that differs is a difference
    c = _write(tmp_path / "c.nc", history="made by hand")
    assert same_bytes.compare_netcdf(a, c).differing == ["@history"]


def test_run_dirs_compare_the_set_of_files(tmp_path, same_bytes):
    for side in ("base", "head"):
        (tmp_path / side).mkdir()
        _write(tmp_path / side / "lidar.nc")
        (tmp_path / side / "scenario.toml").write_text("version = 1\n")
    _write(tmp_path / "head" / "extra.nc")
    results = {r.name: r for r in same_bytes.compare_run_dirs(tmp_path / "base", tmp_path / "head")}
    assert results["lidar.nc"].identical and results["scenario.toml"].identical
    assert results["extra.nc"].differences == ["only in head"]
