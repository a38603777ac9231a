"""The sweep example (examples/urban_canyon_seeds.toml, notebooks/08_sweeps.ipynb): the file as
shipped checks in all its variants, and a cut of it to three seeds runs through ``hifi run``
and opens with ``hifi.open_sweep`` as the notebook reads it.

The full sweep (100 seeds of a 60 s drive, about 45 s) is the notebook's; here the shipped
file is only prepared (every variant validated, nothing run) and the run is a copy of it with
three seeds and 3 s, so the test stays within a few seconds.
"""

from __future__ import annotations

import tomllib

import numpy as np
import xarray as xr

import hifi
from hifi.cli import main
from hifi.run.sweep import prepare, to_toml

from conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "urban_canyon_seeds.toml"


def test_the_example_has_100_seeds_and_every_variant_validates(tmp_path):
    # the 100 seeds its header, docs/scenario_files.md and the notebook promise; prepare()
    # validates each variant as a scenario of its own and writes nothing
    scenario, sweep, variants = prepare(EXAMPLE, tmp_path / "out")
    assert sweep.mode == "grid" and list(sweep.lists) == ["simulation.seed"]
    seeds = [v.values["simulation.seed"] for v in variants]
    assert len(seeds) == 100 and len(set(seeds)) == 100
    base = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    del base["sweep"]
    for v, seed in zip(variants, seeds):
        # the seed is the only difference to the file's scenario
        assert v.data["simulation"].pop("seed") == seed
        assert v.data == base
    assert not (tmp_path / "out").exists()


def _cut(tmp_path, seeds):
    """The example with its seed list cut to ``seeds``, written beside the test's output (its
    navigation file named by its absolute path, since the copy is not in examples/)."""
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["sweep"]["seed"] = seeds
    params = data["sensors"][0]["params"]
    params["nav_file"] = str(EXAMPLE.parent / params["nav_file"])
    path = tmp_path / "canyon_seeds.toml"
    path.write_text(to_toml(data), encoding="utf-8")
    return path


def test_a_cut_of_the_example_runs_and_opens_over_the_seeds(tmp_path):
    seeds = [1, 2, 3]
    out = tmp_path / "out"
    assert main(["run", str(_cut(tmp_path, seeds)), "--out", str(out), "--duration", "3", "--no-progress"]) == 0
    sweep = hifi.open_sweep(out)
    assert sorted(sweep) == ["gps", "motion"]
    gps = sweep["gps"]
    assert dict(gps.sizes)["variant"] == 3 and dict(gps.sizes)["frame"] == 3       # 3 s at 1 Hz
    assert gps["seed"].dims == ("variant",) and gps["seed"].values.tolist() == seeds
    assert sweep["motion"]["seed"].values.tolist() == seeds

    # The seed draws the receiver's random terms only: the truth and which satellites are
    # blocked or reflected are the same in every variant, the noise is not.
    for name in ("true_position_ecef", "blocked", "reflected", "multipath_error"):
        values = gps[name].transpose("variant", ...).values
        np.testing.assert_array_equal(values, np.broadcast_to(values[0], values.shape), err_msg=name)
    noise = gps["noise"].transpose("variant", ...).values
    tracked = np.isfinite(noise[0])
    assert tracked.sum() > 0
    assert not np.array_equal(noise[0][tracked], noise[1][tracked])

    # Variant 1 is the example file run as a plain scenario at seed 2 (hifi.load ignores [sweep]).
    plain = hifi.Simulation.from_file(EXAMPLE).run(seed=seeds[1], duration_s=3.0, progress=False)["gps"]
    with xr.open_dataset(out / "variant_0001" / "gps.nc") as swept:
        for var in plain.data_vars:
            np.testing.assert_array_equal(swept[var].values, plain[var].values, err_msg=var)
    for ds in sweep.values():
        ds.close()
