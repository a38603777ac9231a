"""Ctrl-C or SIGTERM stops ``hifi run`` cleanly, serial and under ``mpirun``.

A real signal goes to a real subprocess once the run is under way. Then: exit status 128 +
signal (130, 143), one line ``hifi: interrupted at t = ... s`` on stderr and no traceback, and
nothing left behind: neither in the ``--out`` parent (no ``.DIR.partial-*``) nor in the
temporary directory (no ``.hifi-run-*``; every test gives the run a private TMPDIR). A
partitioned run writes Zarr and keeps its frames for ``--resume``: its one line says where,
and that one ``.DIR.partial-*``, marked ``INCOMPLETE``, is all it leaves. Every wait is
bounded; a run that does not stop is killed with everything it started and the test fails.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

import hifi

from _procs import Run, descendants, env, mpirun, needs_mpi
from _scenes import depth_camera_toml, wall_scenario

#: A run far longer than any test waits (each frame takes milliseconds; 4000 frames of a depth
#: camera and 20,000 motion frames): it is always still running when the signal comes.
LONG = depth_camera_toml(200.0, seed=1, rate_hz=20.0, mover_y_m=10.0)

INTERRUPTED = re.compile(r"^hifi: interrupted at t = (\d+\.\d{3}) s$")

#: A partitioned run whose Zarr writes take 0.3 s a block, so that a signal reliably lands in
#: the writing phase after the last event (rank 0 writing its last blocks while the other rank
#: writes its own).
_SLOW_WRITES = """
import sys
import time
from hifi.run.zarr_output import ZarrFrameWriter
from hifi.cli import main

_write_block = ZarrFrameWriter._write_block


def slow_write_block(self, i0, block):
    time.sleep(0.3)
    return _write_block(self, i0, block)


ZarrFrameWriter._write_block = slow_write_block
sys.exit(main(sys.argv[1:]))
"""

#: The last line of a partitioned (Zarr) run that stopped: it keeps its frames for --resume.
KEPT = re.compile(r"^hifi: interrupted at t = (\d+\.\d{3}) s; the frames written are kept in (\S+): "
                  r"the same command with --resume continues$")


@pytest.fixture
def place(tmp_path):
    """work/ (scenario, logs, cwd), runs/ (the --out parent), tmp/ (TMPDIR): runs/ and tmp/
    must be empty again when the run has stopped."""
    for name in ("work", "runs", "tmp"):
        (tmp_path / name).mkdir()
    scenario = tmp_path / "work" / "long.toml"
    scenario.write_text(LONG)
    return tmp_path, scenario


@pytest.fixture
def runs():
    started: list[Run] = []
    yield started
    for run in started:               # a failed assertion must not leave processes running
        if run.proc.poll() is None:
            run.kill()
        run.close()


def _partial(runs_dir: Path):
    return [p for p in runs_dir.iterdir() if p.name.startswith(".out.partial-")]


def _assert_stopped_cleanly(run: Run, signum: int, root: Path, progress_lines: bool = False, kept: bool = False):
    status = run.wait()
    err = run.stderr
    assert status == 128 + signum, (status, err)
    assert "Traceback" not in err and "Error" not in err, err
    lines = err.strip().splitlines()
    if progress_lines:               # progress lines may come first; the message is the last line
        assert all(ln.startswith(("hifi: simulated ", "hifi: writing ")) for ln in lines[:-1]), err
    else:
        assert len(lines) == 1, err
    match = (KEPT if kept else INTERRUPTED).match(lines[-1])
    assert match, err
    assert 0.0 <= float(match.group(1)) < 200.0
    assert sum(1 for ln in lines if ln.startswith("hifi: interrupted")) == 1, err
    assert "simulated 0 to" not in run.stdout                 # no summary: the run did not finish
    if kept:
        # A Zarr run keeps its frames for --resume, in the one directory the line names, marked
        # unfinished; never a directory that looks finished.
        left = os.listdir(root / "runs")
        assert len(left) == 1 and left[0].startswith(".out.partial-"), left
        assert Path(match.group(2)).name == left[0]
        assert (root / "runs" / left[0] / "INCOMPLETE").is_file()
    else:
        assert sorted(os.listdir(root / "runs")) == [], "left behind in the --out parent"
    assert sorted(os.listdir(root / "tmp")) == [], "left behind in the temporary directory"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serial_run_stops_cleanly(place, runs, signum):
    root, scenario = place
    run = Run([sys.executable, "-m", "hifi.cli", "run", scenario, "--out", root / "runs" / "out",
               "--no-progress"], root / "work", env(root / "tmp"))
    runs.append(run)
    # Under way: the temporary directory holds the open netCDF files (before: a hidden
    # .out.partial-* with empty files stayed after the signal, and SIGINT gave a traceback).
    run.wait_until(lambda: any((p / "cam.nc").exists() for p in _partial(root / "runs")),
                   "the run's files in .out.partial-*")
    run.proc.send_signal(signum)
    _assert_stopped_cleanly(run, signum, root)


def _mpi_run(root: Path, scenario: Path, mode: str, script: Path | None = None, extra=()) -> Run:
    entry = [script] if script is not None else ["-m", "hifi.cli"]
    cmd = [mpirun(), "-n", "2", sys.executable, *entry, "run", scenario, "--out", root / "runs" / "out",
           "--partition", mode, *extra]
    return Run(cmd, root / "work", env(root / "tmp", HIFI_PROGRESS_INTERVAL_S=0.1))


@needs_mpi
@pytest.mark.parametrize("mode,signum", [("time", signal.SIGTERM), ("facets", signal.SIGINT)],
                         ids=["time-SIGTERM", "facets-SIGINT"])
def test_mpi_run_stops_cleanly_while_simulating(place, runs, mode, signum):
    root, scenario = place
    run = _mpi_run(root, scenario, mode)
    runs.append(run)
    run.wait_until(lambda: "hifi: simulated " in run.stderr, "a progress line (the simulation running)")
    run.proc.send_signal(signum)                      # to mpiexec, which passes it on to the ranks
    _assert_stopped_cleanly(run, signum, root, progress_lines=True, kept=True)


@needs_mpi
@pytest.mark.parametrize("mode", ["time", "facets"])
def test_mpi_run_without_progress_prints_one_line(place, runs, mode):
    root, scenario = place
    run = _mpi_run(root, scenario, mode, extra=["--no-progress"])
    runs.append(run)
    run.wait_until(lambda: any((p / "cam.zarr").exists() for p in _partial(root / "runs")),
                   "the stores in .out.partial-*")
    run.proc.send_signal(signal.SIGTERM)
    _assert_stopped_cleanly(run, signal.SIGTERM, root, kept=True)           # exactly one line on stderr


@needs_mpi
def test_mpi_run_stops_cleanly_while_writing(place, runs):
    # A signal in the writing phase after the last event (every rank writing its own frames).
    root, _ = place
    short = root / "work" / "short.toml"
    short.write_text(depth_camera_toml(6.0, seed=1, rate_hz=20.0, mover_y_m=10.0))
    script = root / "work" / "slow_writes.py"
    script.write_text(_SLOW_WRITES)
    run = _mpi_run(root, short, "time", script)
    runs.append(run)
    run.wait_until(lambda: "hifi: writing " in run.stderr, "the writing phase")
    run.proc.send_signal(signal.SIGINT)
    _assert_stopped_cleanly(run, signal.SIGINT, root, progress_lines=True, kept=True)
    assert "hifi: writing " in run.stderr.strip().splitlines()[-2]       # stopped while writing


@needs_mpi
def test_mpi_signal_to_one_rank_stops_every_rank(place, runs):
    # A signal that reaches rank 1 only (not through mpiexec): rank 1 tells the others to stop,
    # rank 0 cleans up and reports once.
    root, scenario = place
    run = _mpi_run(root, scenario, "time")
    runs.append(run)
    run.wait_until(lambda: "hifi: simulated " in run.stderr, "a progress line (the simulation running)")
    rank1 = [pid for pid in descendants(run.proc.pid) if _rank_of(pid) == "1"]
    assert len(rank1) == 1, rank1
    os.kill(rank1[0], signal.SIGTERM)
    _assert_stopped_cleanly(run, signal.SIGTERM, root, progress_lines=True, kept=True)


def _rank_of(pid: int) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if b"hifi.cli" not in cmdline:
        return None
    for item in environ:
        if item.startswith(b"PMI_RANK="):
            return item.split(b"=", 1)[1].decode()
    return None


class _StopAt(hifi.Model):
    """Raises KeyboardInterrupt (what Ctrl-C does in a Python session) at frame 2."""

    model_name = "stop_at"

    def step(self, k, t):
        if k == 2:
            raise KeyboardInterrupt
        return {"v": hifi.Var((), np.float64(k), "1", "value")}


def _small_sim():
    sim = hifi.Simulation.from_dict(wall_scenario(10.0, duration_s=1.0, sensors=[
        {"name": "cam", "model": "depthmap", "params": {"resolution_x": 8, "resolution_y": 6}}]))
    sim.add_model(_StopAt("stopper", rate_hz=10.0))
    return sim


@pytest.mark.parametrize("to_disk", [False, True], ids=["in-memory", "out"])
def test_python_interrupt_leaves_nothing_and_says_when(tmp_path, monkeypatch, to_disk):
    # sim.run(out=None) works through .hifi-run-* in the temporary directory, sim.run(out=DIR)
    # through .DIR.partial-*: both go on KeyboardInterrupt, which carries the simulated time.
    import tempfile
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with pytest.raises(KeyboardInterrupt) as info:
        _small_sim().run(out=tmp_path / "out" if to_disk else None)
    assert info.value.t_s == pytest.approx(0.2)          # frame 2 of 10 Hz (analytic)
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


def test_rank_that_does_not_write_makes_no_temporary_directory(tmp_path, monkeypatch):
    # MPI ranks other than 0 run with write=False: before, each made a .hifi-run-* in /tmp,
    # left behind when the job was killed.
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sim = hifi.Simulation.from_dict(wall_scenario(10.0, duration_s=0.2, sensors=[
        {"name": "cam", "model": "depthmap", "params": {"resolution_x": 8, "resolution_y": 6}}]))
    made = []
    real = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    assert sim.run(out=None, write=False, progress=False) == {}
    assert made == [] and list(tmp_path.iterdir()) == []


class _SignalInSetName:
    """A class attribute whose ``__set_name__`` receives SIGTERM: Python wraps the handler's
    exception in ``RuntimeError("Error calling __set_name__ ...")``, as it did when a stop
    signal landed while threadpoolctl's classes were being created (a flaky MPI test)."""

    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):              # the handler runs at the next bytecode boundary
            pass


def _class_made_during_a_signal():
    type("Made", (), {"field": _SignalInSetName()})


def test_stop_signal_wrapped_by_python_is_still_the_stop(monkeypatch, capsys):
    # hifi.cli.main: the RuntimeError Python made of the Interrupted is the stop: 143 and the
    # one line, not an error (the shell's 128 + SIGTERM convention, hifi.runtime.interrupt).
    import hifi.cli as cli
    with pytest.raises(RuntimeError, match="__set_name__"):          # what Python does with it
        from hifi.runtime.interrupt import signal_handlers
        with signal_handlers():
            _class_made_during_a_signal()
    monkeypatch.setattr(cli, "_command", lambda args: _class_made_during_a_signal())
    assert cli.main(["info", "x.nc"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "hifi: interrupted"


def test_stop_signal_wrapped_in_a_model_step_is_not_a_model_error():
    # The time manager wraps a model's exceptions in ModelError; one that is a stop signal's,
    # wrapped by Python, leaves as the stop (KeyboardInterrupt with the simulated time).
    class _Wraps(hifi.Model):
        PARAMS = {}

        def step(self, k, t):
            if k == 2:
                _class_made_during_a_signal()
            return {"v": hifi.Var((), np.float64(k), "1", "value")}

    sim = hifi.Simulation.from_dict(wall_scenario(10.0, duration_s=1.0, sensors=[
        {"name": "cam", "model": "depthmap", "params": {"resolution_x": 8, "resolution_y": 6}}]))
    sim.add_model(_Wraps("wraps", rate_hz=10.0))
    from hifi.runtime.interrupt import Interrupted, signal_handlers
    with signal_handlers(), pytest.raises(Interrupted) as info:
        sim.run(out=None, progress=False)
    assert info.value.signum == signal.SIGTERM and info.value.t_s == pytest.approx(0.2)


# -- Signals at the start of a run --------------------------------------------------------------
# Before, the handlers came after ``import hifi`` had loaded numpy, scipy and trimesh (0.5 s):
# a SIGINT there gave a KeyboardInterrupt traceback (or was swallowed inside scipy's import and
# the run went on to exit 0), and under mpirun one rank could wait in MPI_Init forever for a
# rank that had died in its imports. tests/signal_sample.py draws 50 instants per signal and
# mode; here a few fixed instants in the imports and the scenario's loading.

#: Instants after the start at which the signal is sent [s]: in the imports of the command
#: (serial ``import hifi.cli`` took 0.59 s before it was made lazy) and in the loading.
START_INSTANTS_S = (0.1, 0.35, 0.7)


@pytest.mark.parametrize("mode", ["serial", pytest.param("mpi", marks=needs_mpi)])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_start_up_is_clean(tmp_path, mode, signum):
    import signal_sample
    outcomes = signal_sample.sample(mode, signum, START_INSTANTS_S, tmp_path)
    for o in outcomes:
        # 128 + signal (the shell's convention, hifi.runtime.interrupt), one line, nothing left behind
        assert o.status == 128 + signum, (o.at_s, o.status, o.lines)
        assert len(o.lines) == 1 and signal_sample.LINE.match(o.lines[0]), (o.at_s, o.lines)
        assert o.left == signal_sample.kept_dirs(o.lines[0]), (o.at_s, o.left)


def test_swallowed_signal_is_not_lost(monkeypatch, capsys):
    # A stop signal whose exception some code swallowed (a bare except in a dependency's
    # import, a finaliser) still stops the command: 143 and the one line, not 0.
    import hifi.cli as cli

    def swallowing(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):              # the handler runs at the next bytecode boundary
                pass
        except BaseException:                  # what the careless code does
            pass
        return 0

    monkeypatch.setattr(cli, "_command", swallowing)
    assert cli.main(["info", "x.toml"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "hifi: interrupted"


def test_import_hifi_cli_is_cheap():
    # The handlers come in hifi.cli.main; what runs before them must not import the heavy
    # dependencies (numpy alone took 0.1 s, scipy and trimesh 0.4 s more).
    code = ("import sys, hifi.cli, hifi\n"
            "heavy = [m for m in ('numpy', 'scipy', 'trimesh', 'xarray') if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "assert hifi.Simulation.__name__ == 'Simulation' and callable(hifi.load)\n")
    import subprocess
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_signal_in_the_import_systems_weakref_callback_is_only_noted():
    # Regression (seen once in CI under mpirun): a SIGTERM that landed in importlib's module-lock
    # weak-reference callback raised Interrupted there, where Python prints "Exception ignored
    # in ..." and drops it: a traceback beside the one line. The handler must only note it.
    import types

    from hifi.runtime.interrupt import _swallowed_in
    frozen = sys.modules["_frozen_importlib"]
    cb = next(c for c in frozen._get_module_lock.__code__.co_consts
              if isinstance(c, types.CodeType) and c.co_name == "cb")
    frame = types.SimpleNamespace(f_globals={"__name__": frozen.__name__}, f_code=cb)
    assert _swallowed_in(frame)
    ordinary = types.SimpleNamespace(f_globals={"__name__": "hifi.run.simulation"},
                                     f_code=test_signal_in_the_import_systems_weakref_callback_is_only_noted.__code__)
    assert not _swallowed_in(ordinary)
