"""Progress and the run summary.

The bar (a terminal) and the plain periodic line (anything else) reach 100 % and show the
writing phase; under ``mpirun`` rank 0 alone reports, for the whole job; the run ends with a
summary on stdout (simulated span, wall time, every file with its size on disk, the total);
``--no-progress`` silences the progress but not the summary; ``hifi --version``.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hifi

from _scenes import depth_camera_toml
from hifi._version import __version__
from hifi.cli import main

from _procs import env, mpirun, needs_mpi

#: 3 s at 20 Hz (60 depth frames) plus 300 motion frames: a second or two of wall time.
FEW_SECONDS = depth_camera_toml(3.0, seed=4, rate_hz=20.0, mover_y_m=3.0)

SIMULATED = re.compile(r"^hifi: simulated (\d+\.\d\d)/(\d+\.\d\d) s \((\d+) %\), (\d\d):(\d\d) elapsed$")
WRITING = re.compile(r"^hifi: writing (\d+)/(\d+) frames \((\d+) %\), \d\d:\d\d elapsed$")

#: Longest a run of FEW_SECONDS may take on a loaded machine [s].
RUN_TIMEOUT_S = 300


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _scenario(tmp_path) -> Path:
    path = tmp_path / "few.toml"
    path.write_text(FEW_SECONDS)
    return path


def _check_summary(stdout: str, out: Path, duration_s: float) -> None:
    """The summary lists every file and Zarr store of ``out`` once with its size on disk (a
    store's: the sum of its files), and their total."""
    lines = stdout.strip().splitlines()
    # a run says its threads and where the number came from, an MPI run its ranks and each
    # rank's threads (docs/performance.md)
    assert re.fullmatch(rf"simulated 0 to {duration_s:g} s in \d+\.\d s wall time"
                        rf"( on \d+ threads? \((CPU affinity|HIFI_THREADS|\[simulation\] threads)\)"
                        rf"| on \d+ ranks x \d+ threads? each \((MPI rank share|HIFI_THREADS|\[simulation\] threads)\))?",
                        lines[0]), stdout
    files = sorted(p for p in out.iterdir() if p.is_file())
    stores = sorted(p for p in out.iterdir() if p.suffix == ".zarr")
    names = {p.name for p in files + stores}
    assert names in ({"cam.nc", "motion.nc", "scenario.toml", ".hifi-run"},
                     {"cam.zarr", "motion.zarr", "scenario.toml", ".hifi-run", ".hifi-resume.json"}), names

    def size(p):
        return p.stat().st_size if p.is_file() else sum(q.stat().st_size for q in p.rglob("*") if q.is_file())
    for p in files + stores:
        rows = [ln for ln in lines if ln.split()[0] == str(p)]
        assert len(rows) == 1, (p, stdout)
        assert int(rows[0].split()[1]) == size(p) and rows[0].split()[2] == "bytes", rows
    total = sum(size(p) for p in files + stores)
    count = f"{len(files)} files" + (f" and {len(stores)} Zarr stores" if stores else "")
    assert re.fullmatch(rf"total\s+{total} bytes  \S+ \S+ in {count}", lines[-1]), lines[-1]
    assert len(lines) == len(files) + len(stores) + 2


def _check_progress_lines(stderr: str, duration_s: float) -> list[re.Match]:
    lines = stderr.strip().splitlines()
    sims = [SIMULATED.match(ln) for ln in lines if ln.startswith("hifi: simulated")]
    writes = [WRITING.match(ln) for ln in lines if ln.startswith("hifi: writing")]
    assert sims and all(sims) and all(writes), stderr
    assert len(sims) + len(writes) == len(lines), stderr          # nothing else on stderr
    done = [float(m.group(1)) for m in sims]
    assert done == sorted(done), stderr                              # never goes back
    assert all(float(m.group(2)) == duration_s for m in sims)
    last = sims[-1]                                                  # before: stopped short of it
    assert float(last.group(1)) == duration_s and last.group(3) == "100", stderr
    if writes:
        assert writes[-1].group(1) == writes[-1].group(2) and writes[-1].group(3) == "100", stderr
    return writes


def test_plain_progress_lines_reach_100_percent_and_summary(tmp_path):
    scenario = _scenario(tmp_path)
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "hifi.cli", "run", scenario, "--out", out],
                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
                       env=env(tmp_path, HIFI_PROGRESS_INTERVAL_S=0.05))
    assert r.returncode == 0, r.stderr
    _check_progress_lines(r.stderr, 3.0)           # stderr is a pipe: plain lines, no bar
    assert "\r" not in r.stderr and "|" not in r.stderr
    _check_summary(r.stdout, out, 3.0)


def test_no_progress_silences_progress_not_the_summary(tmp_path):
    scenario = _scenario(tmp_path)
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "hifi.cli", "run", scenario, "--out", out, "--no-progress"],
                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
                       env=env(tmp_path, HIFI_PROGRESS_INTERVAL_S=0.05))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    _check_summary(r.stdout, out, 3.0)


def test_default_period_is_quiet_for_a_short_run(tmp_path, capsys, monkeypatch):
    # Without the environment variable the period is PROGRESS_INTERVAL_S (10 s): a short run
    # prints no progress at all, only the summary.
    monkeypatch.delenv("HIFI_PROGRESS_INTERVAL_S", raising=False)
    scenario = _scenario(tmp_path)
    assert main(["run", str(scenario), "--out", str(tmp_path / "run"), "--duration", "0.2"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    _check_summary(captured.out, tmp_path / "run", 0.2)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"hifi {__version__}\n"


def test_bar_reaches_100_percent_on_a_terminal(tmp_path, monkeypatch):
    # Before: the bar followed the last event's time (0.2 s of 0.3 s here) and was erased.
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    sim = hifi.Simulation.from_dict({
        "simulation": {"duration_s": 0.3, "seed": 1},
        "materials": {"w": {"reflectivity": 0.5}},
        "objects": [{"name": "wall", "mesh": "plane", "size_m": [20, 20], "material": "w",
                     "position_m": [10, 0, 0], "rpy_deg": [0, -90, 0]}],
        "sensors": [{"name": "cam", "model": "depthmap", "rate_hz": 10.0,
                     "params": {"resolution_x": 8, "resolution_y": 6}}]})
    sim.run(out=tmp_path / "o", progress=True)
    text = terminal.getvalue()
    assert "simulated: 0.300/0.300 s" in text and "100 %" in text, text
    assert text.endswith("\n")                     # the bar stays, complete


def test_progress_phases_on_a_terminal():
    from hifi.runtime.progress import Progress
    terminal = _Terminal()
    p = Progress(2.0, True, stream=terminal)
    assert p.tty
    for t in (0.0, 0.5, 1.5, 1.9):                 # event times: the last is short of 2 s
        p.simulated(t)
    p.expect_writes(2)
    p.start_writing(3)
    for _ in range(5):
        p.wrote(1)
    p.close()
    text = terminal.getvalue()
    assert "simulated: 2.000/2.000 s" in text and "writing: 5/5 frames" in text, text


def test_progress_plain_lines_in_process(monkeypatch):
    from hifi.runtime.progress import Progress
    stream = io.StringIO()
    p = Progress(4.0, None, stream=stream, interval_s=1e-9)
    p.simulated(1.0)
    p.simulated(0.5)                               # never goes back
    p.start_writing(2)
    p.wrote(2)
    p.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("hifi: simulated 1.00/4.00 s (25 %), 00:00 elapsed")
    assert "hifi: simulated 4.00/4.00 s (100 %), 00:00 elapsed" in lines
    assert lines[-1] == "hifi: writing 2/2 frames (100 %), 00:00 elapsed"
    monkeypatch.setenv("HIFI_PROGRESS_INTERVAL_S", "-1")
    with pytest.raises(ValueError, match="HIFI_PROGRESS_INTERVAL_S = '-1'"):
        Progress(1.0, None, stream=io.StringIO())


@needs_mpi
@pytest.mark.parametrize("mode", ["time", "facets"])
def test_mpi_progress_and_summary_once(tmp_path, mode):
    scenario = _scenario(tmp_path)
    out = tmp_path / "run"
    cmd = [mpirun(), "-n", "2", sys.executable, "-m", "hifi.cli", "run", scenario, "--out", out,
           "--partition", mode]
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
                       env=env(tmp_path, HIFI_PROGRESS_INTERVAL_S=0.05))
    assert r.returncode == 0, r.stderr
    _check_summary(r.stdout, out, 3.0)             # rank 0 alone prints it, once
    writes = _check_progress_lines(r.stderr, 3.0)  # rank 0 alone reports progress
    del writes                                     # every rank writes its own frames: any count
