"""Errors are one-line messages, not tracebacks.

Write errors (disk full, a netCDF/HDF5 error, no permission, a file where a directory must be)
exit with status 1 and name the file as the user knows it (``out/cam.nc``, not the temporary
directory); nothing is left behind. ``--seed`` and ``--duration`` are checked as the
scenario's ``[simulation]`` keys are (status 2, same message style); ``hifi plot --frame``
out of range names the valid range (status 2). A full disk is not filled here: the error is
injected where the writer raises it.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

import hifi
from hifi.cli import main
from hifi.run.output import FrameWriter

from _scenes import depth_camera_toml, wall_scenario
from _stores import zarr_copy


def _scenario_file(tmp_path):
    text = depth_camera_toml(0.3, seed=2, rate_hz=10.0, resolution=(16, 12))
    path = tmp_path / "scene.toml"
    path.write_text(text)
    return path


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("hifi: error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return err.strip()


def _nothing_left(tmp_path, keep=("scene.toml",)):
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


def _raise_enospc(self, *args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _raise_hdf(self, *args, **kwargs):
    raise RuntimeError("NetCDF: HDF error")


@pytest.mark.parametrize("method", ["flush", "write", "__init__"])
def test_disk_full_is_a_message_naming_the_file(tmp_path, capsys, monkeypatch, method):
    # Before: OSError / RuntimeError escaped as a traceback.
    scenario = _scenario_file(tmp_path)
    original = getattr(FrameWriter, method)

    def failing(self, *args, **kwargs):
        if method == "__init__":
            if str(args[0]).endswith("cam.nc"):
                _raise_enospc(self)
            return original(self, *args, **kwargs)
        if self.path.name == "cam.nc":
            _raise_enospc(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FrameWriter, method, failing)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 1
    err = _one_error(capsys)
    assert err == f"hifi: error: cannot write {out / 'cam.nc'}: No space left on device"
    _nothing_left(tmp_path)


def test_disk_full_on_the_netcdf_thread_is_a_message_naming_the_file(tmp_path, capsys, monkeypatch):
    # A block of frames is written by the netCDF thread while the run goes on (so models need not wait); its
    # error reaches the run at the writer's next wait, as the same one-line message. Blocks of
    # one frame here, so the failing block is written mid-run, not at close.
    import threading
    from hifi.run import output
    monkeypatch.setattr(output, "BUFFER_MAX_FRAMES", 1)
    threads = set()
    original = FrameWriter._write_block

    def failing(self, i0, block):
        threads.add(threading.current_thread().name)
        if self.path.name == "cam.nc" and i0 == 1:
            _raise_enospc(self)
        return original(self, i0, block)

    monkeypatch.setattr(FrameWriter, "_write_block", failing)
    scenario = _scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 1
    err = _one_error(capsys)
    assert err == f"hifi: error: cannot write {out / 'cam.nc'}: No space left on device"
    _nothing_left(tmp_path)
    assert len(threads) == 1 and threads != {threading.main_thread().name}


def test_netcdf_error_is_a_message_with_the_free_space(tmp_path, capsys, monkeypatch):
    scenario = _scenario_file(tmp_path)
    monkeypatch.setattr(FrameWriter, "flush", _raise_hdf)
    import shutil
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=1234))
    out = tmp_path / "out"
    # past the free-space check (which would refuse 1234 bytes free), to the write itself
    assert main(["run", str(scenario), "--out", str(out), "--no-progress", "--ignore-disk-space"]) == 1
    err = _one_error(capsys)
    # the first file closed (scenario order: cam, then motion) is the one that fails
    assert err == (f"hifi: error: cannot write {out / 'cam.nc'}: NetCDF: HDF error "
                   f"(the file system holding it has 1234 bytes free)")
    _nothing_left(tmp_path)


def test_write_error_from_python_names_the_final_path(tmp_path, monkeypatch):
    monkeypatch.setattr(FrameWriter, "flush", _raise_enospc)
    sim = hifi.Simulation.from_dict(wall_scenario(10.0, sensors=[
        {"name": "cam", "model": "depthmap", "params": {"resolution_x": 8, "resolution_y": 6}}]))
    with pytest.raises(hifi.OutputError, match=r"cannot write .*[/\\]out[/\\](cam|motion)\.nc: No space left"):
        sim.run(out=tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_out_under_a_regular_file(tmp_path, capsys):
    # Works as root too: a file where the parent directory must be.
    scenario = _scenario_file(tmp_path)
    (tmp_path / "notadir").write_text("x")
    assert main(["run", str(scenario), "--out", str(tmp_path / "notadir" / "run"), "--no-progress"]) == 1
    err = _one_error(capsys)
    assert err == f"hifi: error: cannot write {tmp_path / 'notadir' / 'run'}: {tmp_path / 'notadir'} is not a directory"
    _nothing_left(tmp_path, keep=("scene.toml", "notadir"))


def test_read_only_parent(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 0o555 does not stop root from writing; the message is "
                    "tested by test_no_permission_is_a_message (injected) and test_out_under_a_regular_file")
    scenario = _scenario_file(tmp_path)
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        assert main(["run", str(scenario), "--out", str(parent / "run"), "--no-progress"]) == 1
    finally:
        parent.chmod(0o755)
    err = _one_error(capsys)
    assert err == f"hifi: error: cannot write {parent / 'run'}: {parent} is not writable (Permission denied)"
    assert list(parent.iterdir()) == []


def test_no_permission_is_a_message(tmp_path, capsys, monkeypatch):
    # What a read-only --out parent gives a user who is not root, injected where mkdtemp fails.
    scenario = _scenario_file(tmp_path)
    parent = tmp_path / "ro"
    parent.mkdir()

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(parent / ".run.partial-x"))

    monkeypatch.setattr("hifi.run.simulation.tempfile.mkdtemp", denied)
    assert main(["run", str(scenario), "--out", str(parent / "run"), "--no-progress"]) == 1
    err = _one_error(capsys)
    assert err == f"hifi: error: cannot write {parent / 'run'}: {parent} is not writable (Permission denied)"
    assert list(parent.iterdir()) == []


# (arguments, expected message after "hifi: error: "): the scenario's own rules and wording
# (simulation.seed = -1: expected an integer >= 0), with the option as the key.
OVERRIDES = {
    "seed_negative": (["--seed", "-1"], "--seed = -1: expected an integer >= 0"),
    "seed_text": (["--seed", "abc"], "--seed = 'abc': expected an integer >= 0"),
    "seed_fraction": (["--seed", "1.5"], "--seed = 1.5: expected an integer >= 0"),
    "duration_zero": (["--duration", "0"], "--duration = 0: expected a number > 0"),
    "duration_negative": (["--duration", "-2.5"], "--duration = -2.5: expected a number > 0"),
    "duration_text": (["--duration", "1s"], "--duration = '1s': expected a number > 0"),
    "duration_inf": (["--duration", "inf"], "--duration = inf: expected a finite number (a number > 0)"),
    "partitioned_seed": (["--seed", "-3", "--partition", "time"], "--seed = -3: expected an integer >= 0"),
}


@pytest.mark.parametrize("case", sorted(OVERRIDES))
def test_seed_and_duration_checked_like_the_scenario(tmp_path, capsys, case):
    scenario = _scenario_file(tmp_path)
    args, expected = OVERRIDES[case]
    # The options are checked before anything else. --out exists here, so code that did not
    # check them would stop on that instead of running for ever (before: --duration inf did).
    (tmp_path / "out").mkdir()
    assert main(["run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress", *args]) == 2
    assert _one_error(capsys) == f"hifi: error: {expected}"
    _nothing_left(tmp_path, keep=("scene.toml", "out"))


def test_seed_and_duration_overrides_still_work(tmp_path, capsys):
    scenario = _scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress", "--seed", "9",
                 "--duration", "0.2"]) == 0
    import xarray as xr
    with xr.open_dataset(out / "cam.nc") as ds:
        assert ds.attrs["seed"] == 9 and ds.sizes["frame"] == 2        # 10 Hz over 0.2 s


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("plotrun")
    scenario = _scenario_file(root)
    assert main(["run", str(scenario), "--out", str(root / "run"), "--no-progress"]) == 0
    return root / "run"


@pytest.mark.parametrize("frame", [999, 3, -1])
def test_plot_frame_out_of_range(run_dir, tmp_path, capsys, frame):
    # 0.3 s at 10 Hz: frames 0, 1, 2. Before: IndexError traceback (or, for -1, the last frame).
    capsys.readouterr()
    png = tmp_path / "x.png"
    assert main(["plot", str(run_dir / "cam.nc"), "--frame", str(frame), "--out", str(png)]) == 2
    assert _one_error(capsys) == (f"hifi: error: {run_dir / 'cam.nc'}: --frame {frame}: "
                                  f"the dataset has 3 frames (0..2)")
    assert not png.exists()


def test_plot_last_frame_still_works(run_dir, tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs matplotlib (the viz extra)")
    png = tmp_path / "x.png"
    assert main(["plot", str(run_dir / "cam.nc"), "--frame", "2", "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_summary_lists_zarr_stores_with_their_size_and_dimensions(run_dir, tmp_path, capsys):
    # A partitioned run writes DIR/NAME.zarr stores: the summary lists each store once, its size
    # the bytes of every file in it, its dimensions from its metadata (expected: those of the
    # netCDF file it was written from, 0.3 s at 10 Hz of a 16 x 12 depth camera).
    import time

    from hifi.cli import _summary
    zarr_dir = zarr_copy(run_dir, tmp_path / "run")
    capsys.readouterr()
    _summary(zarr_dir, 0.3, time.monotonic())
    lines = capsys.readouterr().out.strip().splitlines()
    entries = {ln.split()[0]: ln for ln in lines[1:-1]}
    assert sorted(entries) == sorted(str(zarr_dir / n) for n in (".hifi-run", "cam.zarr", "motion.zarr",
                                                                  "scenario.toml"))
    sizes = {name: int(line.split()[1]) for name, line in entries.items()}
    store_bytes = sum(f.stat().st_size for f in (zarr_dir / "cam.zarr").rglob("*") if f.is_file())
    assert sizes[str(zarr_dir / "cam.zarr")] == store_bytes > 0
    cam = entries[str(zarr_dir / "cam.zarr")]
    for dim in ("frame=3", "row=12", "col=16"):
        assert dim in cam, cam
    total = sum(sizes.values())
    assert lines[-1].split()[:3] == ["total", str(total), "bytes"]
    assert lines[-1].endswith("in 2 files and 2 Zarr stores"), lines[-1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_writer_in_a_forked_child_after_a_run_in_the_parent(tmp_path):
    # The netCDF thread of the parent does not exist in a forked child (os.fork copies only the
    # calling thread): the child's writer must start its own, not wait forever on the parent's.
    from hifi.api.model import Var
    w = FrameWriter(tmp_path / "parent.nc", {"start_utc": ""}, {})
    w.write(0, 0.0, {"x": Var(("i",), np.arange(3.0), "m", "x")})
    w.close()
    pid = os.fork()
    if pid == 0:                                          # child: exit status tells the parent
        try:
            c = FrameWriter(tmp_path / "child.nc", {"start_utc": ""}, {})
            c.write(0, 0.0, {"x": Var(("i",), np.arange(3.0), "m", "x")})
            c.close()
            os._exit(0)
        except BaseException:
            os._exit(1)
    import time
    deadline = time.monotonic() + 60.0                   # a child stuck on the parent's thread hangs
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done, "the forked child's writer hung"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    import netCDF4
    with netCDF4.Dataset(tmp_path / "child.nc") as nc:
        assert nc["x"][:].tolist() == [[0.0, 1.0, 2.0]]
