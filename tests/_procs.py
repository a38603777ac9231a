"""Running ``hifi`` in real subprocesses (serial and under ``mpirun``) for the tests of
interrupts and progress: bounded in time, and never leaving a process behind."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Longest wait for a run to reach the state a test waits for (startup of mpirun and of two
#: Python processes on a loaded two-core machine takes tens of seconds at worst) [s].
START_TIMEOUT_S = 180.0

#: Longest wait for a process to end after it was signalled [s]; more is a hang.
STOP_TIMEOUT_S = 60.0


def mpirun() -> str | None:
    beside = Path(sys.executable).with_name("mpirun")
    return str(beside) if beside.is_file() else shutil.which("mpirun")


_MISSING = ("mpi4py is not installed (pip install \".[mpi]\")"
            if importlib.util.find_spec("mpi4py") is None else
            "no mpirun beside the Python executable or on PATH" if mpirun() is None else None)
needs_mpi = pytest.mark.skipif(_MISSING is not None, reason=f"MPI tests skipped: {_MISSING}")


def env(tmpdir: Path, **extra) -> dict:
    """The test's environment: this checkout first on the path, a private TMPDIR (so a test
    sees what a run leaves there), outside any MPI launch."""
    e = dict(os.environ)
    for var in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE"):
        e.pop(var, None)
    repo = str(Path(__file__).resolve().parents[1])
    e["PYTHONPATH"] = os.pathsep.join([repo, *filter(None, [e.get("PYTHONPATH")])])
    e["TMPDIR"] = str(tmpdir)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), children first."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` and everything it started (MPI ranks sit in their own process groups)."""
    for pid in [*descendants(proc.pid), proc.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=STOP_TIMEOUT_S)


class Run:
    """A ``hifi`` command in a subprocess; stdout and stderr go to files the test can read
    while it runs."""

    def __init__(self, cmd, cwd: Path, environ: dict):
        self.dir = Path(cwd)
        self._out = open(self.dir / "stdout.txt", "w+")
        self._err = open(self.dir / "stderr.txt", "w+")
        self.proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=environ, stdout=self._out,
                                     stderr=self._err, stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def stdout(self) -> str:
        return (self.dir / "stdout.txt").read_text()

    @property
    def stderr(self) -> str:
        return (self.dir / "stderr.txt").read_text()

    def wait_until(self, condition, what: str, timeout=START_TIMEOUT_S) -> None:
        """Poll ``condition()`` until true; fail (and end the run) if the run ends first or on
        timeout."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended (status {self.proc.returncode}) before {what}:\n"
                            f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"no {what} within {timeout} s:\nstderr:\n{self.stderr}")
            time.sleep(0.05)

    def wait(self, timeout=STOP_TIMEOUT_S) -> int:
        """Exit status; a run still going after ``timeout`` is killed and the test fails."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the run did not end within {timeout} s (hang):\nstderr:\n{self.stderr}")

    def kill(self) -> None:
        kill_tree(self.proc)
        self.close()

    def close(self) -> None:
        self._out.close()
        self._err.close()
