"""Nothing a user made is ever lost: every command against bad output locations.

The table runs every command that writes files (``run``, ``export`` to every format, ``view``,
``plot``) and ``info`` against the output locations a user gets wrong: the output equal to the
input, the output containing or inside the input, an existing file without ``--overwrite``, a
read-only file system and a full one. Each case checks the exit status of its kind (2 bad
input, 1 a file that cannot be written: docs/outputs.md ("What a run writes")), exactly one
``hifi: error:`` line, that every input file keeps its bytes and that nothing is left in the
output location.

The read-only and full file systems are real tmpfs mounts where this process may mount (root,
as in CI), filled to the last byte for "full"; elsewhere the final rename of every command is
made to fail with ``ENOSPC`` / ``EROFS`` (a simulated write error, the other route the rules
allow), and the test says which one it used in its id.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

import hifi
from hifi.cli import main

from _scenes import depth_camera_toml, street_scenario
from conftest import TEST_DATA

DATA = TEST_DATA

#: The GNSS receiver of tests/sensors/test_gnss_receiver.py (a real broadcast file of
#: tests/data/gnss, three systems) over 2 s: the source of the RINEX export.
GNSS_SCENARIO = {
    "simulation": {"duration_s": 2.0, "seed": 5, "start_utc": "2023-03-14T01:30:00Z",
                   "origin": {"lat_deg": -45.0, "lon_deg": 85.0, "height_m": 0.0}},
    "materials": {"ground": {"reflectivity": 0.3}},
    "objects": [{"name": "ground", "mesh": "plane", "size_m": [200, 200], "material": "ground"}],
    "sensors": [{"name": "rx", "model": "gnss_receiver", "rate_hz": 1.0, "position_m": [0, 0, 1.5],
                 "params": {"nav_file": str(DATA / "gnss/BRDM00DLR_S_20230730000_01D_MN.rnx"),
                            "constellations": ["G", "E", "C"], "signals": ["G1C", "E1C", "C2I"]}}],
}

#: A wall and a depth camera: the scenario of the ``run`` and ``info`` rows.
SCENARIO_TOML = depth_camera_toml(0.1, seed=3, rate_hz=10.0)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A run of the street (VLP-16 on a car, three frames), a GNSS receiver run and a scenario."""
    root = tmp_path_factory.mktemp("inputs")
    hifi.Simulation.from_dict(street_scenario(duration_s=0.25)).run(out=root / "street", progress=False)
    hifi.Simulation.from_dict(GNSS_SCENARIO).run(out=root / "gnss", progress=False)
    (root / "scenario.toml").write_text(SCENARIO_TOML, encoding="utf-8")
    return root


def _mount(where: Path, options: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    return r.returncode == 0


def _fill(where: Path) -> None:
    """Write into ``where`` until its file system has no byte left."""
    with open(where / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    for i in range(64):                # the inodes' last blocks: small files until none fits
        try:
            (where / f"filler{i}").write_bytes(b"\0" * 512)
        except OSError:
            break


@pytest.fixture(scope="module")
def locations(tmp_path_factory):
    """Output locations: 'plain' (a writable directory), 'readonly' and 'full' (tmpfs mounts, or
    None where this process cannot mount)."""
    root = tmp_path_factory.mktemp("where")
    plain = root / "plain"
    plain.mkdir()
    ro, full = root / "readonly", root / "full"
    mounted = []
    if _mount(ro, "ro,size=64k"):
        mounted.append(ro)
    if _mount(full, "size=64k"):
        mounted.append(full)
        try:
            _fill(full)
        except BaseException:
            subprocess.run(["umount", str(full)], capture_output=True)
            raise
    yield {"plain": plain, "readonly": ro if ro in mounted else None, "full": full if full in mounted else None}
    for m in mounted:
        subprocess.run(["umount", str(m)], capture_output=True)


def _simulated_write_error(monkeypatch, code: int) -> None:
    """Every command's last step (the rename into place) fails with ``code``."""
    def fail(src, dst, *a, **k):
        raise OSError(code, os.strerror(code), str(dst))
    monkeypatch.setattr(os, "replace", fail)
    monkeypatch.setattr(os, "rename", fail)


def _digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _listing(root: Path) -> list:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


#: Every command and format: (id, argv builder (inputs, out) -> argv, the input it reads, the
#: default output suffix). ``out`` is the output path to use.
COMMANDS = {
    "run": (lambda i, out: ["run", str(i / "scenario.toml"), "--out", str(out), "--no-progress"], "scenario.toml"),
    "info": (lambda i, out: ["info", str(i / "scenario.toml")], "scenario.toml"),
    "view": (lambda i, out: ["view", str(i / "street"), "--out", str(out)], "street"),
    "plot": (lambda i, out: ["plot", str(i / "street" / "lidar.nc"), "--out", str(out)], "street/lidar.nc"),
    "export-semantickitti": (lambda i, out: ["export", str(i / "street"), "--format", "semantickitti",
                                             "--sensor", "lidar", "--out", str(out)], "street"),
    "export-mcap": (lambda i, out: ["export", str(i / "street"), "--format", "mcap", "--out", str(out)], "street"),
    "export-rinex": (lambda i, out: ["export", str(i / "gnss" / "rx.nc"), "--format", "rinex", "--out", str(out)],
                     "gnss/rx.nc"),
    **{f"export-{fmt}": ((lambda fmt: lambda i, out: ["export", str(i / "street" / "lidar.nc"), "--format", fmt,
                                                      "--out", str(out)])(fmt), "street/lidar.nc")
       for fmt in ("ply", "las", "pcd", "ptx", "evd", "kitti", "pcap")},
}

OUT_NAME = {"run": "run1", "view": "page.html", "plot": "fig.png", "export-semantickitti": "sk",
            "export-mcap": "x.mcap", "export-rinex": "rnx", "info": "nothing"}

CONDITIONS = ("same", "inside", "exists", "readonly", "full")


def test_every_command_and_format_is_in_the_table():
    from hifi.exporters import available_exporters
    assert {c.removeprefix("export-") for c in COMMANDS if c.startswith("export-")} == set(available_exporters())


def _out_for(command: str, condition: str, i: Path, where: dict) -> Path:
    src = i / COMMANDS[command][1]
    name = OUT_NAME.get(command, f"x.{command.removeprefix('export-')}")
    if condition == "same":
        return src
    if condition == "inside":      # inside a directory input, or the directory holding a file input
        return src / name if src.is_dir() else src.parent
    if condition == "exists":
        return where["plain"] / f"exists-{command}" / name
    return where[condition] / name


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_output_locations(command, condition, inputs, locations, tmp_path, monkeypatch, capsys):
    build, _ = COMMANDS[command]
    simulated = condition in ("readonly", "full") and locations[condition] is None
    if simulated:
        target = tmp_path / condition
        target.mkdir()
        where = dict(locations, **{condition: target})
        _simulated_write_error(monkeypatch, errno.EROFS if condition == "readonly" else errno.ENOSPC)
    else:
        where = locations
    out = _out_for(command, condition, inputs, where)
    if condition == "exists":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"the user's file\n")
    before = _digest(inputs)
    around = {c: _listing(where[c]) for c in ("plain", "readonly", "full") if where[c] is not None}
    argv = build(inputs, out)
    if command == "run" and condition in ("readonly", "full"):
        argv.append("--ignore-disk-space")     # past the free-space estimate, to the write itself
    status = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("hifi: warning:")]
    assert _digest(inputs) == before, "an input file changed"
    if command == "info":
        # info writes nothing, wherever the user stands: status 0 and no error
        assert status == 0 and lines == []
    else:
        expected = {"same": 2, "inside": 2, "exists": 2, "readonly": 1, "full": 1}[condition]
        assert status == expected, err
        assert len(lines) == 1 and lines[0].startswith("hifi: error: "), err
        reason = {"same": "is the input", "inside": "the input", "exists": "exists",
                  "readonly": "cannot write", "full": "cannot write"}[condition]
        assert reason in lines[0], lines[0]
        if condition in ("readonly", "full"):
            assert ("Read-only file system" if condition == "readonly" else "No space left on device") in lines[0] \
                or "0 bytes free" in lines[0], lines[0]
    if condition == "exists":
        assert out.read_bytes() == b"the user's file\n"
    # nothing left anywhere: the output locations hold what they held
    assert {c: _listing(where[c]) for c in around} == around


def test_the_table_used_real_file_systems(locations):
    """Say (as a visible skip) when the table above had to simulate the write errors."""
    if locations["readonly"] is None or locations["full"] is None:
        pytest.skip("tmpfs could not be mounted here: the read-only and full cases used a simulated write error")


# -- an earlier export is replaced as a whole -------------------------------------------------------
@pytest.mark.parametrize("fmt, ext", [("kitti", ".bin"), ("pcd", ".pcd")])
def test_overwrite_replaces_an_earlier_longer_export_as_a_whole(fmt, ext, tmp_path, capsys):
    # three frames exported, then one frame with --overwrite to the same --out: before, the
    # frames 1 and 2 of the first export stayed beside the new file (two runs in one folder)
    long_run, short_run = tmp_path / "long", tmp_path / "short"
    hifi.Simulation.from_dict(street_scenario(duration_s=0.25)).run(out=long_run, progress=False)
    hifi.Simulation.from_dict(street_scenario(duration_s=0.05)).run(out=short_run, progress=False)
    out = tmp_path / "exp" / f"scan{ext}"
    out.parent.mkdir()
    (out.parent / "mine.txt").write_text("a file of the user")
    assert main(["export", str(long_run / "lidar.nc"), "--format", fmt, "--out", str(out)]) == 0
    first = sorted(p.name for p in out.parent.iterdir())
    assert first == [f".scan{ext}.hifi-export", "mine.txt"] + [f"scan_{k:06d}{ext}" for k in range(3)]
    # without --overwrite, the earlier export stops a new one (one line, status 2)
    capsys.readouterr()
    assert main(["export", str(short_run / "lidar.nc"), "--format", fmt, "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["export", str(short_run / "lidar.nc"), "--format", fmt, "--out", str(out),
                 "--overwrite"]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["mine.txt", f"scan{ext}"]
    # and back to three frames: the one-frame file goes
    assert main(["export", str(long_run / "lidar.nc"), "--format", fmt, "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == first
    assert (out.parent / "mine.txt").read_text() == "a file of the user"


def test_plot_refuses_to_overwrite_without_the_flag(inputs, tmp_path, capsys):
    out = tmp_path / "fig.png"
    out.write_bytes(b"an earlier figure")
    src = str(inputs / "street" / "lidar.nc")
    assert main(["plot", src, "--out", str(out)]) == 2
    assert out.read_bytes() == b"an earlier figure"
    assert "use --overwrite" in capsys.readouterr().err
    assert main(["plot", src, "--out", str(out), "--overwrite"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"            # the PNG signature (PNG spec 5.2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]


def test_velodyne_pcap_warning_is_one_hifi_line(inputs, tmp_path, capsys):
    # a detected return beyond the 16-bit field of 2 mm units (131 m, Velodyne's packet format)
    import xarray as xr
    with xr.open_dataset(inputs / "street" / "lidar.nc") as ds:
        ds = ds.load()
    d = ds["distance_noisy"].values
    first = tuple(int(k[0]) for k in ds["detected"].values.nonzero())
    d[first] = 200.0
    src = tmp_path / "far.nc"
    ds.to_netcdf(src)
    assert main(["export", str(src), "--format", "pcap", "--out", str(tmp_path / "x.pcap")]) == 0
    err = capsys.readouterr().err
    assert "hifi: warning: Velodyne pcap: 1 detected returns lie outside" in err
    assert "UserWarning" not in err and err.count("\n") == 1


@pytest.mark.parametrize("exc, status, text", [
    (MemoryError("Unable to allocate 12.0 GiB for an array with shape (40000, 40000, 2)"), 2,
     "hifi: error: out of memory (Unable to allocate 12.0 GiB"),
    (MemoryError(), 2, "hifi: error: out of memory (MemoryError)"),
    (PermissionError(13, "Permission denied", "in.nc"), 2, "hifi: error: [Errno 13] Permission denied: 'in.nc'"),
])
def test_errors_of_every_kind_are_one_line(exc, status, text, monkeypatch, capsys):
    # wherever in a command they come from, these end in one line and the status of their kind,
    # not a traceback (before: numpy's MemoryError and an unreadable input printed tracebacks)
    import hifi.cli

    def fail(args):
        raise exc
    monkeypatch.setattr(hifi.cli, "_command", fail)
    assert main(["info", "x.toml"]) == status
    err = capsys.readouterr().err
    assert err.startswith(text) and err.count("\n") == 1, err
