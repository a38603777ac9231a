"""A run's files at 1, 2 and 3 threads (``Simulation.run_to_files(threads=...)``): every file
byte for byte the same, for an open-loop example (every model steps ahead) and a closed loop
(a driven vehicle, a planner and an INS on the bus). The netCDF files hifi writes hold no
creation time (netCDF-4 turns HDF5's object time tracking off), so whole files compare; the
1-thread run is the reference (the serial order). 3 threads on this 2-core machine are
oversubscribed on purpose (a ThreadsWarning): the bytes must not depend on it either.
"""

import filecmp
import warnings
from pathlib import Path

import pytest

import hifi
from hifi.runtime.threads import ThreadsWarning

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(name, duration_s, threads, out, sim=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ThreadsWarning)
        sim = sim or hifi.load(EXAMPLES / name)
        sim.run_to_files(out, duration_s=duration_s, progress=False, threads=threads)
    assert sim.threads_used == (threads, "threads=")
    return out


def _assert_same_files(a: Path, b: Path):
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    assert ".hifi-run" in names and "motion.nc" in names
    for n in names:
        assert filecmp.cmp(a / n, b / n, shallow=False), f"{b.name}/{n} differs from {a.name}/{n}"


def test_open_loop_files_identical_at_1_2_3_threads(tmp_path):
    sim = hifi.load(EXAMPLES / "crossing.toml")       # open loop: one scene serves every run
    ref = _run("crossing.toml", 0.15, 1, tmp_path / "t1", sim)
    for n in (2, 3):
        _assert_same_files(ref, _run("crossing.toml", 0.15, n, tmp_path / f"t{n}", sim))


def test_closed_loop_files_identical_at_1_2_3_threads(tmp_path, monkeypatch):
    # a closed loop's vehicle track is made by the run: a fresh load each time. 0.6 s: the
    # planner's commands at 0 and 0.5 s reach the vehicle, the GPS fix at 0 the INS. Every free
    # model runs ahead (the scanners, the IMU, the motion recorder too, which by default step in
    # their turn: hifi.run.timemanager.AHEAD_MIN_RAYS), between the vehicle's steps.
    from hifi.run import timemanager
    monkeypatch.setattr(timemanager, "AHEAD_MIN_RAYS", 0)
    ref = _run("patrol.toml", 0.6, 1, tmp_path / "t1")
    for n in (2, 3):
        _assert_same_files(ref, _run("patrol.toml", 0.6, n, tmp_path / f"t{n}"))
