"""The threads of a run: where the number comes from, the default (the CPU affinity), and bad
input (one line naming the file or variable, the key, the value and what is allowed; exit 2)."""

import os
import warnings

import pytest

from hifi.cli import main
from hifi.runtime import threads as T
from hifi.runtime.threads import ThreadsWarning, resolve_threads

from _scenes import depth_camera_toml


def _scenario(tmp_path, threads_line=""):
    text = depth_camera_toml(0.1, seed=1, rate_hz=10.0).replace("seed = 1\n", f"seed = 1\n{threads_line}\n", 1)
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def two_cores(monkeypatch):
    """A process allowed cores 0 and 1 (what ``taskset -c 0,1`` gives it)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv(T.THREADS_ENV, raising=False)


def test_default_is_the_cpu_affinity_not_the_cpu_count(two_cores, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert resolve_threads() == (2, "CPU affinity")


def test_order_argument_environment_scenario_mpi_share(two_cores, monkeypatch):
    assert resolve_threads(None, 1, default=2) == (1, "[simulation] threads")
    assert resolve_threads(None, None, default=1) == (1, "MPI rank share")
    monkeypatch.setenv(T.THREADS_ENV, "1")
    assert resolve_threads(None, 2) == (1, "HIFI_THREADS")
    assert resolve_threads(2, 1) == (2, "threads=")


def test_more_than_the_affinity_warns_with_the_allowed_count(two_cores):
    with pytest.warns(ThreadsWarning, match=r"s.toml: simulation.threads = 3: more threads than the 2 cores .* "
                                            r"allowed: 1 to 2"):
        assert resolve_threads(None, 3, where="s.toml") == (3, "[simulation] threads")


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_bad_argument_is_a_value_error(two_cores, value):
    with pytest.raises(ValueError, match=r"threads = .*: expected an integer >= 1"):
        resolve_threads(value)


def test_scenario_threads_zero_exits_2_naming_file_key_value(tmp_path, capsys, two_cores):
    path = _scenario(tmp_path, "threads = 0")
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert str(path) in err[0] and "simulation.threads" in err[0] and "0" in err[0] and ">= 1" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["0", "two", "-3"])
def test_bad_environment_variable_exits_2_in_one_line(tmp_path, capsys, monkeypatch, two_cores, value):
    monkeypatch.setenv(T.THREADS_ENV, value)
    assert main(["run", str(_scenario(tmp_path)), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hifi: error: HIFI_THREADS = {value!r}: expected an integer >= 1 (the threads of a run; "
                   f"at most the 2 cores this process may run on)"]


def test_oversubscribed_run_warns_and_reports_its_threads(tmp_path, capsys, two_cores):
    path = _scenario(tmp_path, "threads = 3")
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    cap = capsys.readouterr()
    warned = [line for line in cap.err.splitlines() if line.startswith("hifi: warning:")]
    assert len(warned) == 1 and "simulation.threads = 3" in warned[0] and "allowed: 1 to 2" in warned[0]
    assert "on 3 threads ([simulation] threads)" in cap.out.splitlines()[0]


def test_run_summary_names_the_affinity_default(tmp_path, capsys, two_cores):
    assert main(["run", str(_scenario(tmp_path)), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert "on 2 threads (CPU affinity)" in capsys.readouterr().out.splitlines()[0]
