"""Kill and resume: a run killed with SIGKILL keeps the frames it wrote, and ``--resume``
finishes it with every variable identical to an uninterrupted run, serial and under
``mpirun``; what cannot be resumed is refused in one line with exit status 2.

The expected values are those of the uninterrupted serial run of the same scenario and seed
(netCDF), compared as stored and decoded (``_assert_identical`` of the MPI tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hifi.cli import main
from hifi.run.zarr_output import written_frames
from tests._procs import Run, env, mpirun, needs_mpi
from tests.e2e.test_mpi import SCENARIO, _assert_identical

#: The MPI tests' scene (a mirror, a moving car, a VLP-16, a grid sensor, a depth map) over
#: 2 s: 20 lidar frames, written in blocks of a few frames, so a kill at the first written
#: frame leaves most of them to compute.
LONG = SCENARIO.replace("duration_s = 0.3", "duration_s = 2.0")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    scenario = root / "scene.toml"
    scenario.write_text(LONG)
    assert main(["run", str(scenario), "--out", str(root / "serial"), "--no-progress"]) == 0
    return scenario, root / "serial"


def _partial(out: Path) -> Path | None:
    found = sorted(out.parent.glob(f".{out.name}.partial-*"))
    return found[0] if found else None


def _lidar_frames(out: Path) -> int:
    partial = _partial(out)
    return 0 if partial is None else written_frames(partial / "lidar.zarr").size


def _kill_after_first_frames(cmd, out: Path, tmp_path: Path) -> Path:
    """Start ``cmd``, SIGKILL it (every process) once the lidar store holds a frame, and
    return the directory it left."""
    run = Run(cmd, tmp_path, env(tmp_path))
    try:
        run.wait_until(lambda: _lidar_frames(out) > 0, "a written lidar frame")
    finally:
        run.kill()
    partial = _partial(out)
    assert partial is not None and (partial / "INCOMPLETE").is_file()
    assert not out.exists()                                 # never a directory that looks finished
    return partial


def _hifi(*args) -> list:
    return [sys.executable, "-m", "hifi.cli", *map(str, args)]


def test_serial_run_killed_then_resumed_is_identical(uninterrupted, tmp_path):
    scenario, serial = uninterrupted
    out = tmp_path / "out"
    partial = _kill_after_first_frames(_hifi("run", scenario, "--out", out, "--format", "zarr", "--no-progress"),
                                       out, tmp_path)
    kept = written_frames(partial / "lidar.zarr")
    assert 0 < kept.size < 20, kept
    first = next((partial / "lidar.zarr" / "distance").glob(f"{kept[0]}.*"))
    inode = first.stat().st_ino
    assert main(["run", str(scenario), "--out", str(out), "--resume", "--no-progress"]) == 0
    assert not partial.exists()
    # The kept frame was not written again: the same file (a rewrite renames a new one into place).
    assert (out / "lidar.zarr" / "distance" / first.name).stat().st_ino == inode
    _assert_identical(serial, out)
    # Resuming a finished run computes nothing and says so by succeeding.
    assert main(["run", str(scenario), "--out", str(out), "--resume", "--no-progress"]) == 0


@needs_mpi
def test_mpi_run_killed_then_resumed_on_other_ranks_is_identical(uninterrupted, tmp_path):
    # Killed as a 2-rank time partition, resumed as a 2-rank facet partition: the frames
    # depend only on the scenario, the seed, their index and time, whoever computes them.
    scenario, serial = uninterrupted
    out = tmp_path / "out"
    _kill_after_first_frames([mpirun(), "-n", "2", *_hifi("run", scenario, "--out", out, "--partition", "time",
                                                            "--no-progress")], out, tmp_path)
    r = subprocess.run([mpirun(), "-n", "2", *_hifi("run", scenario, "--out", out, "--partition", "facets",
                                                    "--resume", "--no-progress")],
                       capture_output=True, text=True, timeout=300, env=env(tmp_path))
    assert r.returncode == 0, r.stderr
    _assert_identical(serial, out)


def _refused(args, tmp_path, what: str) -> str:
    r = subprocess.run(_hifi(*args), capture_output=True, text=True, timeout=120, env=env(tmp_path))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("hifi: error: "), r.stderr
    assert what in lines[0], lines[0]
    return lines[0]


def test_resume_of_another_run_is_refused_before_writing(tmp_path):
    scenario = tmp_path / "scene.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--format", "zarr", "--no-progress"]) == 0
    other = tmp_path / "other.toml"
    other.write_text(SCENARIO.replace("reflectivity = 0.3", "reflectivity = 0.31"))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    _refused(["run", scenario, "--out", out, "--resume", "--seed", "12"], tmp_path, "seed 11")
    _refused(["run", scenario, "--out", out, "--resume", "--duration", "0.2"], tmp_path, "duration")
    _refused(["run", other, "--out", out, "--resume"], tmp_path, "another scenario")
    # A netCDF run cannot be resumed (a killed netCDF writer leaves its file unreadable).
    nc = tmp_path / "nc"
    assert main(["run", str(scenario), "--out", str(nc), "--no-progress"]) == 0
    _refused(["run", scenario, "--out", nc, "--resume"], tmp_path, "netCDF")
    _refused(["run", scenario, "--out", tmp_path / "new", "--resume", "--format", "netcdf"], tmp_path, "--format")
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert [p for p in after if p not in before and not str(p).startswith("nc")] == [], "something was written"


def test_resume_of_a_partial_of_another_seed_is_refused(tmp_path):
    scenario = tmp_path / "scene.toml"
    scenario.write_text(LONG)
    out = tmp_path / "out"
    _kill_after_first_frames(_hifi("run", scenario, "--out", out, "--format", "zarr", "--no-progress"), out, tmp_path)
    line = _refused(["run", scenario, "--out", out, "--resume", "--seed", "3"], tmp_path, "seed")
    assert ".out.partial-" in line and "delete" in line


def test_sigterm_keeps_the_frames_of_a_zarr_run_and_says_how_to_resume(tmp_path):
    # A scheduler's time limit sends SIGTERM: the run stops, keeps what it wrote, and says so.
    import signal
    scenario = tmp_path / "scene.toml"
    scenario.write_text(LONG)
    out = tmp_path / "out"
    run = Run(_hifi("run", scenario, "--out", out, "--format", "zarr", "--no-progress"), tmp_path, env(tmp_path))
    try:
        run.wait_until(lambda: _lidar_frames(out) > 0, "a written lidar frame")
        os.kill(run.proc.pid, signal.SIGTERM)
        status = run.wait()
    finally:
        run.close()
    assert status == 128 + signal.SIGTERM
    partial = _partial(out)
    assert partial is not None and written_frames(partial / "lidar.zarr").size > 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hifi: interrupted at t = "), run.stderr
    assert "--resume" in lines[0] and partial.name in lines[0]


@needs_mpi
def test_facets_and_time_together_is_identical(tmp_path):
    # 4 ranks as 2 groups of 2: each group shares the scene by facets, the groups the time.
    scenario = tmp_path / "scene.toml"
    scenario.write_text(SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "serial"), "--no-progress"]) == 0
    out = tmp_path / "hybrid"
    r = subprocess.run([mpirun(), "-n", "4", *_hifi("run", scenario, "--out", out, "--partition", "facets=2",
                                                    "--no-progress")],
                       capture_output=True, text=True, timeout=300, env=env(tmp_path))
    assert r.returncode == 0, r.stderr
    _assert_identical(tmp_path / "serial", out)


@needs_mpi
@pytest.mark.parametrize("partition,what", [("facets=3", "divide the number of ranks (2)"),
                                            ("facets=0", "facets=K"), ("slices", "facets=K")])
def test_bad_partition_is_one_line(tmp_path, partition, what):
    scenario = tmp_path / "scene.toml"
    scenario.write_text(SCENARIO)
    r = subprocess.run([mpirun(), "-n", "2", *_hifi("run", scenario, "--out", tmp_path / "out", "--partition",
                                                    partition)],
                       capture_output=True, text=True, timeout=120, env=env(tmp_path))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and what in lines[0], r.stderr
    assert not list(tmp_path.glob(".out*")) and not (tmp_path / "out").exists()


def test_netcdf_partitioned_is_refused(tmp_path):
    from hifi.errors import ScenarioError
    from hifi.run.simulation import output_format_of
    with pytest.raises(ScenarioError, match="Zarr"):
        output_format_of("netcdf", partitioned=True, resume=False, out="x")
    assert output_format_of(None, partitioned=True, resume=False, out="x") == "zarr"
    assert output_format_of(None, partitioned=False, resume=False, out="x") == "netcdf"
    assert output_format_of(None, partitioned=False, resume=True, out="x") == "zarr"
