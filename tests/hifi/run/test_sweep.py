"""Sweeps ([sweep], hifi.run.sweep): variants written as whole runs, the catalog, open_sweep,
the bad-input cases, and MPI sharing."""

import copy
import itertools
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import hifi
from hifi.cli import main
from hifi.run.sweep import INCOMPLETE_MARKER, MAX_VARIANTS, to_toml

from _procs import env, mpirun, needs_mpi
from _scenes import depth_camera_toml, street_scenario
from _stores import zarr_copy

#: A wall at 10 m facing a 16 x 12 depth camera at 20 Hz for 0.1 s (tests/_scenes.py).
BASE = depth_camera_toml(0.1, seed=0, rate_hz=20.0, resolution=(16, 12))
SEEDS = [1, 2]
WALL_X_M = [8.0, 12.0]
GRID = BASE + f"""
[sweep]
mode = "grid"
seed = {SEEDS}
"objects.wall.position_m.0" = {WALL_X_M}
"""


def _write(tmp_path, text, name="sweep.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _variant_dict(seed, wall_x):
    """The variant's scenario built by hand from the base text (not through hifi.run.sweep)."""
    d = tomllib.loads(BASE)
    d["simulation"]["seed"] = seed
    d["objects"][0]["position_m"] = [wall_x, 0, 0]
    return d


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    path = _write(tmp, GRID)
    assert main(["run", str(path), "--out", str(tmp / "out"), "--no-progress"]) == 0
    return tmp / "out"


def test_grid_writes_every_variant_and_the_catalog(grid_run):
    dirs = sorted(p.name for p in grid_run.iterdir())
    assert dirs == [".hifi-resume.json", "sweep.json", "variant_0000", "variant_0001", "variant_0002", "variant_0003"]
    assert not (grid_run / INCOMPLETE_MARKER).exists()
    catalog = json.loads((grid_run / "sweep.json").read_text())
    # the cartesian product, last list fastest (itertools.product's order)
    expected = [{"simulation.seed": s, "objects.wall.position_m.0": x} for s, x in itertools.product(SEEDS, WALL_X_M)]
    assert [v["values"] for v in catalog["variants"]] == expected
    assert [v["dir"] for v in catalog["variants"]] == [f"variant_{i:04d}" for i in range(4)]
    for v in catalog["variants"]:
        d = grid_run / v["dir"]
        assert sorted(p.name for p in d.iterdir()) == [".hifi-run", "cam.nc", "motion.nc", "scenario.toml"]
        # the variant's own scenario, readable TOML, holds its values and no [sweep]
        text = tomllib.loads((d / "scenario.toml").read_text())
        assert "sweep" not in text
        assert text["simulation"]["seed"] == v["values"]["simulation.seed"]
        assert text["objects"][0]["position_m"][0] == v["values"]["objects.wall.position_m.0"]


@pytest.mark.parametrize("index", range(4))
def test_each_variant_equals_a_plain_run_of_its_scenario(grid_run, tmp_path, index):
    seed, wall_x = list(itertools.product(SEEDS, WALL_X_M))[index]
    plain = hifi.Simulation.from_dict(_variant_dict(seed, wall_x)).run(out=tmp_path / "plain")
    for name, ds in plain.items():
        with xr.open_dataset(grid_run / f"variant_{index:04d}" / f"{name}.nc") as swept:
            assert set(swept.data_vars) == set(ds.data_vars)
            for var in ds.data_vars:
                np.testing.assert_array_equal(swept[var].values, ds[var].values, err_msg=f"{name}.{var}")
            assert swept.attrs["seed"] == seed
        ds.close()


def test_variants_see_the_wall_where_the_sweep_put_it(grid_run):
    # closed form: a depth camera at the origin looking along +x sees the plane x = wall_x at
    # depth wall_x in every pixel (float32 rounding: 1e-6 relative)
    ds = hifi.open_sweep(grid_run)["cam"]
    for i, x in enumerate([x for _, x in itertools.product(SEEDS, WALL_X_M)]):
        np.testing.assert_allclose(ds["depth"].isel(variant=i).values, x, rtol=2e-6)


def test_open_sweep_has_a_variant_dimension_and_the_swept_coordinates(grid_run):
    sweep = hifi.open_sweep(grid_run)
    assert sorted(sweep) == ["cam", "motion"]
    ds = sweep["cam"]
    assert ds.sizes["variant"] == 4
    assert ds["variant"].values.tolist() == [0, 1, 2, 3]
    assert ds["seed"].values.tolist() == [1, 1, 2, 2]
    assert ds["objects.wall.position_m.0"].values.tolist() == [8.0, 12.0, 8.0, 12.0]
    means = ds["depth"].groupby("objects.wall.position_m.0").mean(...)        # a study is a groupby
    np.testing.assert_allclose(means.values, WALL_X_M, rtol=2e-6)


def _close(sweep):
    for ds in sweep.values():
        ds.close()


@pytest.mark.parametrize("converted", [["variant_0000", "variant_0001", "variant_0002", "variant_0003"],
                                       ["variant_0001", "variant_0003"]], ids=["all", "some"])
def test_open_sweep_reads_variants_written_as_zarr_stores(grid_run, tmp_path, converted):
    # A sweep run under mpirun may hold Zarr stores (DIR/variant_*/NAME.zarr), or some variants'
    # .nc files and others' stores: the same datasets as the netCDF sweep (expected values: the
    # netCDF sweep's own, which the tests above check), bit for bit.
    zarr_sweep = tmp_path / "out"
    shutil.copytree(grid_run, zarr_sweep, ignore=lambda d, names: names if Path(d).name in converted else [])
    for name in converted:
        shutil.rmtree(zarr_sweep / name)
        zarr_copy(grid_run / name, zarr_sweep / name)
    assert sorted(p.name for p in (zarr_sweep / converted[0]).iterdir() if not p.name.startswith(".")) == [
        "cam.zarr", "motion.zarr", "scenario.toml"]
    a, b = hifi.open_sweep(grid_run), hifi.open_sweep(zarr_sweep)
    try:
        assert sorted(a) == sorted(b) == ["cam", "motion"]
        for name in a:
            xr.testing.assert_identical(a[name].drop_encoding(), b[name].drop_encoding())
    finally:
        _close(a)
        _close(b)
    shutil.rmtree(zarr_sweep / converted[-1] / "cam.zarr")      # a variant without a dataset the first has
    with pytest.raises(FileNotFoundError, match=rf"{converted[-1]}: no cam\.nc or cam\.zarr, which variant_0000 has"):
        hifi.open_sweep(zarr_sweep)


def test_zip_pairs_the_lists_and_a_list_value_gets_its_own_dimension(tmp_path):
    path = _write(tmp_path, BASE + """
[sweep]
mode = "zip"
seed = [5, 6]
"objects.wall.position_m" = [[9.0, 0.0, 0.0], [11.0, 1.0, 0.0]]
""")
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    ds = hifi.open_sweep(tmp_path / "out")["cam"]
    assert ds.sizes["variant"] == 2
    assert ds["seed"].values.tolist() == [5, 6]
    assert ds["objects.wall.position_m"].dims == ("variant", "objects.wall.position_m_index")
    assert ds["objects.wall.position_m"].values.tolist() == [[9.0, 0.0, 0.0], [11.0, 1.0, 0.0]]


BAD = {
    "unknown sensor": ('"sensors.nope.params.resolution_x" = [8, 16]', "names no scenario value"),
    "unknown root": ('"foo.bar" = [1, 2]', "names no scenario value"),
    "a table": ('"objects.wall" = [1, 2]', "is a table, not a value"),
    "empty list": ("seed = []", "non-empty list"),
    "not a list": ("seed = 3", "non-empty list"),
    "mixed types": ('seed = [1, "two"]', "values of one type"),
    "bad mode": ('mode = "random"\nseed = [1, 2]', "unknown sweep mode"),
    "nothing swept": ('mode = "grid"', "at least one value list"),
    "zip lengths": ('mode = "zip"\nseed = [1, 2, 3]\n"objects.wall.position_m.0" = [8.0, 12.0]', "of one length"),
    "too many": (f'seed = {list(range(1000))}\n"objects.wall.position_m.0" = {[float(x) for x in range(1, 1001)]}',
                 f"at most {MAX_VARIANTS:,}"),
    "value out of range": ("seed = [1, -1]", "sweep variant 1: simulation.seed = -1"),
    "unknown model key": ('"sensors.cam.params.no_such_key" = [1.0, 2.0]', "sweep variant 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_sweep_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, case):
    table, expected = BAD[case]
    path = _write(tmp_path, BASE + "\n[sweep]\n" + table + "\n")
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hifi: error: ") and expected in err, err
    assert not out.exists()


def test_sweep_over_the_free_disk_space_is_refused(tmp_path, capsys, monkeypatch):
    import hifi.api.estimate as estimate
    path = _write(tmp_path, GRID)
    # one variant's estimate fits, the sum of the four does not
    one = hifi.Simulation.from_dict(_variant_dict(1, 8.0)).estimate().output_bytes
    monkeypatch.setattr(estimate, "disk_free_bytes", lambda p: (2 * one, tmp_path))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "--ignore-disk-space" in err, err
    assert not out.exists()


def test_existing_directory_partition_and_seed_are_refused(tmp_path, capsys, grid_run):
    path = _write(tmp_path, GRID)
    assert main(["run", str(path), "--out", str(grid_run)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--partition", "time"]) == 2
    assert "drop --partition" in capsys.readouterr().err
    assert main(["run", str(path), "--out", str(out), "--seed", "3"]) == 2
    assert "drop --seed" in capsys.readouterr().err
    assert not out.exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["run", str(path), "--out", str(foreign), "--overwrite"]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine"


def test_overwrite_replaces_a_sweep_directory(tmp_path):
    path = _write(tmp_path, GRID)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    (out / "variant_0000" / "cam.nc").unlink()
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--overwrite"]) == 0
    assert (out / "variant_0000" / "cam.nc").is_file()


def test_a_scenario_without_sweep_loads_as_before(tmp_path):
    sc = hifi.load(_write(tmp_path, BASE)).scenario
    assert sc.sweep is None
    assert len(hifi.load(_write(tmp_path, GRID, "g.toml")).scenario.sweep) == 4


def test_info_names_the_sweep(tmp_path, capsys):
    assert main(["info", str(_write(tmp_path, GRID))]) == 0
    assert "sweep     4 variants, grid of simulation.seed, objects.wall.position_m.0" in capsys.readouterr().out


def test_toml_writer_round_trips_a_scenario():
    # independent check: Python's own TOML reader (tomllib) parses the text back to the data
    d = street_scenario(weather={"fog_visibility_m": 200.0})
    d["materials"]["odd name"] = {"reflectivity": 0.5, "class": 'say "hi"\\'}
    assert tomllib.loads(to_toml(d)) == json.loads(json.dumps(d))


@needs_mpi
def test_mpirun_shares_variants_and_gives_the_serial_bytes(grid_run, tmp_path):
    path = grid_run.parent / "sweep.toml"         # the serial run's file: every file names it
    out = tmp_path / "mpi"
    r = subprocess.run([mpirun(), "-n", "2", sys.executable, "-m", "hifi.cli", "run", str(path), "--out", str(out),
                        "--no-progress"], capture_output=True, text=True, timeout=300, env=env(tmp_path))
    assert r.returncode == 0, r.stderr
    files = sorted(p.relative_to(grid_run) for p in grid_run.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for rel in files:
        assert (grid_run / rel).read_bytes() == (out / rel).read_bytes(), rel


def test_resume_keeps_finished_variants_and_runs_the_others(tmp_path, monkeypatch):
    # A sweep stopped after its second variant: --resume keeps the finished variants' files
    # (same inodes) and runs the others, deleting a variant's unfinished directory; the result
    # is the uninterrupted sweep's (regression values: the same sweep run whole).
    from hifi.run import sweep as sweep_mod
    from hifi.run.simulation import Simulation
    path = _write(tmp_path, GRID)
    whole = tmp_path / "whole"
    assert sweep_mod.run_sweep(path, whole, progress=False) is not None
    out = tmp_path / "out"
    real = Simulation.run_to_files
    calls = []

    def stop_at_third(self, out_dir, **kw):
        calls.append(out_dir)
        if len(calls) == 3:
            (out_dir.parent / f".{out_dir.name}.partial-x").mkdir()      # what a kill leaves
            raise KeyboardInterrupt
        return real(self, out_dir, **kw)
    monkeypatch.setattr(Simulation, "run_to_files", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        sweep_mod.run_sweep(path, out, progress=False)
    monkeypatch.setattr(Simulation, "run_to_files", real)
    assert (out / sweep_mod.INCOMPLETE_MARKER).is_file() and not (out / sweep_mod.CATALOG).exists()
    kept = {p.name: p.stat().st_ino for p in (out / "variant_0000").iterdir()}
    assert sweep_mod.run_sweep(path, out, progress=False, resume=True) == out / sweep_mod.CATALOG
    assert {p.name: p.stat().st_ino for p in (out / "variant_0000").iterdir()} == kept
    assert not list(out.glob(".variant_*"))
    a, b = sweep_mod.open_sweep(whole), sweep_mod.open_sweep(out)
    for name in a:
        xr.testing.assert_identical(a[name].load(), b[name].load())
    # Another duration override is another sweep: refused before anything is written.
    with pytest.raises(hifi.ScenarioError, match="--resume"):
        sweep_mod.run_sweep(path, out, progress=False, resume=True, duration_s=0.05)
