"""A run whose output cannot fit on the disk is refused before it starts.

``hifi info`` estimated 975 TiB for ``--duration 1e9`` and ``hifi run`` started anyway. The
estimate (hifi.api.estimate: frames x bytes of a frame's variables, before compression) is compared
with ``shutil.disk_usage`` of the nearest existing parent of ``--out``; ``--ignore-disk-space``
goes on. The MPI runners check on the writing rank before the run.
"""

from __future__ import annotations

import collections
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hifi
from hifi.cli import main

SCENARIO = """\
version = 1

[simulation]
duration_s = 0.2

[[objects]]
name = "wall"
mesh = "plane"
size_m = [20, 20]
position_m = [10, 0, 0]
rpy_deg = [0, -90, 0]

[[sensors]]
name = "cam"
model = "depthmap"
[sensors.params]
resolution_x = 16
resolution_y = 12
"""

_Usage = collections.namedtuple("_Usage", "total used free")


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "scenario.toml"
    path.write_text(SCENARIO)
    return path


def test_a_run_longer_than_the_disk_holds_is_refused(tmp_path, scenario, capsys):
    # Regression: --duration 1e9 started. Analytic: 16 x 12 pixels x 25 B + 76 B per frame at
    # 10 Hz for 1e9 s and motion.nc at 100 Hz: hundreds of TiB, more than any test machine's disk.
    out = tmp_path / "deep" / "out"                # not there yet: its nearest existing parent is measured
    assert main(["run", str(scenario), "--out", str(out), "--duration", "1e9", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hifi: error: {scenario}: --out = {str(out)!r}: the run writes about "), err
    assert " TiB before compression, more than the " in err and f"free on the file system holding it (at {tmp_path})" \
        in err and "--ignore-disk-space" in err, err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.toml"]     # nothing written


def test_the_flag_goes_on_and_a_run_that_fits_is_not_refused(tmp_path, scenario, capsys, monkeypatch):
    # The estimate of this run (2 frames of the depth map, 20 of motion.nc) against a file system
    # with 1 kB free: refused; with the flag it runs (the real disk has room for the few kB).
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: _Usage(10**6, 10**6 - 1000, 1000))
    assert main(["run", str(scenario), "--out", str(tmp_path / "a"), "--no-progress"]) == 2
    assert "more than the 1000 B free" in capsys.readouterr().err
    assert main(["run", str(scenario), "--out", str(tmp_path / "b"), "--no-progress", "--ignore-disk-space"]) == 0
    assert (tmp_path / "b" / "cam.nc").is_file()
    with pytest.raises(hifi.ScenarioError, match=r"--out"):                 # the Python API too
        hifi.load(scenario).run(out=tmp_path / "c", progress=False)
    monkeypatch.setattr(shutil, "disk_usage", real)
    assert main(["run", str(scenario), "--out", str(tmp_path / "d"), "--no-progress"]) == 0


def test_info_shows_the_disk_check(scenario, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda p: _Usage(10**6, 10**6 - 1000, 1000))
    assert main(["info", str(scenario)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  disk: "))
    assert "before compression, 1000 B free at " in line and "hifi run --out there would refuse it" in line, line


def _mpirun():
    beside = Path(sys.executable).with_name("mpirun")
    return str(beside) if beside.is_file() else shutil.which("mpirun")


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or _mpirun() is None,
                    reason="MPI test skipped: mpi4py or mpirun missing")
@pytest.mark.parametrize("partition", ["time", "facets"])
def test_the_mpi_runners_refuse_too(tmp_path, scenario, partition):
    env = {k: v for k, v in os.environ.items() if k not in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE")}
    out = tmp_path / "out"
    proc = subprocess.run([_mpirun(), "-n", "2", sys.executable, "-m", "hifi.cli", "run", str(scenario), "--out",
                           str(out), "--duration", "1e9", "--partition", partition, "--no-progress"],
                          capture_output=True, text=True, timeout=120, env=env)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("hifi:")]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"hifi: error: {scenario}: --out = {str(out)!r}: the run writes"), \
        proc.stderr
    assert not out.exists()
