"""Bad scenarios: one specific message (file, line, key, value, what is allowed), exit status 2,
and no output directory left behind."""

import subprocess
import sys

import pytest

import hifi
from hifi.cli import main

GOOD = """\
version = 1

[simulation]
duration_s = 0.1
seed = 3

[materials.white]
reflectivity = 0.8
class = "wall"

[[objects]]
name = "wall"
mesh = "plane"
size_m = [20, 20]
material = "white"
position_m = [10, 0, 0]
rpy_deg = [0, -90, 0]

[[objects]]
name = "mover"
mesh = "box"
size_m = [1, 1, 1]
track = [ { t_s = 0.0, position_m = [5, 0, 0] }, { t_s = 1.0, position_m = [5, 1, 0] } ]

[[sensors]]
name = "cam"
model = "depthmap"
[sensors.params]
resolution_x = 16
resolution_y = 12
"""

# (replace this, with that, expected fragments of the message)
CASES = {
    "unknown_top_key": ("[simulation]", "[simulaton]", ["simulaton", "unknown top-level key", "allowed"]),
    "unknown_object_key": ('material = "white"', 'materail = "white"',
                           ["objects[0].materail = 'white'", "unknown key", "size_m"]),
    "missing_duration": ("duration_s = 0.1", "", ["simulation.duration_s", "required key is missing"]),
    "reflectivity_range": ("reflectivity = 0.8", "reflectivity = 1.5",
                           [":8:", "materials.white.reflectivity = 1.5", "<= 1"]),
    "unknown_material": ('material = "white"', 'material = "stel"',
                         ["objects[0].material = 'stel'", "unknown material", "'white'"]),
    "unknown_generator": ('mesh = "box"', 'mesh = "cube"', ["objects[1].mesh = 'cube'", "plane, box, sphere"]),
    "missing_mesh_file": ('mesh = "box"\nsize_m = [1, 1, 1]', 'mesh = "nothere.obj"',
                          [":21:", "objects[1].mesh = 'nothere.obj'", "not found"]),
    "generator_key_on_file": ('mesh = "box"', 'mesh = "car.obj"', ["objects[1].size_m", "unknown key for a mesh file"]),
    "unknown_model": ('model = "depthmap"', 'model = "depthmapp"',
                      ["sensors[0].model = 'depthmapp'", "unknown model", "depthmap, generic_grid"]),
    "unknown_param": ("resolution_x = 16", "resolution = 16",
                      ["sensors[0].params.resolution = 16", "unknown key", "resolution_x"]),
    "param_type": ("resolution_x = 16", 'resolution_x = "16"',
                   ["sensors[0].params.resolution_x = '16'", "an integer"]),
    "param_range": ("resolution_y = 12", "resolution_y = 0", ["sensors[0].params.resolution_y = 0", ">= 1"]),
    "unknown_parent": ('model = "depthmap"', 'model = "depthmap"\nparent = "car"',
                       ["sensors[0].parent = 'car'", "'wall'"]),
    "duplicate_name": ('name = "mover"', 'name = "wall"', ["objects[1].name = 'wall'", "already used"]),
    "track_order": ("t_s = 1.0", "t_s = 0.0", ["objects[1].track[1].t_s = 0.0", "increase strictly"]),
    "track_and_position": ("track = [", "position_m = [1, 2, 3]\ntrack = [",
                           ["objects[1].track", "either track or position_m"]),
    "bad_toml": ("seed = 3", "seed = = 3", ["not valid TOML"]),
    "version": ("version = 1", "version = 2", ["version = 2", "unsupported scenario version"]),
    "start_utc": ("seed = 3", 'seed = 3\nstart_utc = "yesterday"', ["simulation.start_utc = 'yesterday'", "ISO 8601"]),
    "vector_length": ("size_m = [20, 20]", "size_m = [20, 20, 1]", ["objects[0].size_m = [20, 20, 1]", "2 numbers"]),
    "negative_seed": ("seed = 3", "seed = -1", ["simulation.seed = -1", ">= 0"]),
    # a sensor's name is its file name DIR/<name>.nc; it must not leave DIR
    "sensor_name_parent": ('name = "cam"', 'name = "../evil"', ["sensors[0].name = '../evil'", "letters, digits"]),
    "sensor_name_absolute": ('name = "cam"', 'name = "/abs/path"', ["sensors[0].name = '/abs/path'", "letters, digits"]),
    "sensor_name_slash": ('name = "cam"', 'name = "a/b"', ["sensors[0].name = 'a/b'", "letters, digits"]),
    "sensor_name_motion": ('name = "cam"', 'name = "motion"', ["sensors[0].name = 'motion'", "reserved"]),
    "sensor_name_scenario": ('name = "cam"', 'name = "Scenario"', ["sensors[0].name = 'Scenario'", "reserved"]),
}


def _write(tmp_path, text):
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return path


def test_good_scenario_runs(tmp_path):
    path = _write(tmp_path, GOOD)
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".hifi-run", "cam.nc", "motion.nc", "scenario.toml"]
    # the marker lists what the run wrote, so --overwrite can tell a hifi output from anything else
    listed = [ln for ln in (tmp_path / "out" / ".hifi-run").read_text().splitlines() if not ln.startswith("#")]
    assert listed == ["cam.nc", "motion.nc", "scenario.toml"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_scenario(case, tmp_path, capsys):
    old, new, fragments = CASES[case]
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hifi: error: ") and str(path) in err
    for frag in fragments:
        assert frag in err, f"{frag!r} not in {err!r}"
    assert len(err.strip().splitlines()) == 1             # one message
    assert not out.exists()                                 # nothing half-written
    assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())
    with pytest.raises(hifi.ScenarioError):
        hifi.load(path)


def test_cross_parameter_check_names_the_parameter(tmp_path, capsys):
    text = GOOD.replace('model = "depthmap"', 'model = "generic_grid"').replace(
        "resolution_x = 16\nresolution_y = 12", "theta_min_deg = 10.0\ntheta_max_deg = -10.0")
    path = _write(tmp_path, text)
    assert main(["info", str(path)]) == 2
    assert "sensors[0].params.theta_max_deg = -10.0" in capsys.readouterr().err


def test_corrupt_mesh_file(tmp_path, capsys):
    (tmp_path / "broken.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\nend_header\n1 2\n")
    path = _write(tmp_path, GOOD.replace('mesh = "box"\nsize_m = [1, 1, 1]', 'mesh = "broken.ply"'))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "objects[1].mesh = 'broken.ply'" in err and "cannot load mesh file" in err


def test_from_dict_errors_name_the_key():
    with pytest.raises(hifi.ScenarioError, match=r"<dict>: objects\[0\]\.radius_m = -1"):
        hifi.Simulation.from_dict({"simulation": {"duration_s": 1},
                                   "objects": [{"name": "s", "mesh": "sphere", "radius_m": -1}]})


def test_existing_output_refused_then_overwritten(tmp_path, capsys):
    path = _write(tmp_path, GOOD)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
    assert "exists; use --overwrite" in capsys.readouterr().err
    before = (out / "cam.nc").stat().st_mtime_ns
    assert main(["run", str(path), "--out", str(out), "--overwrite", "--no-progress"]) == 0
    assert (out / "cam.nc").stat().st_mtime_ns != before           # a hifi output is replaced


def test_overwrite_never_deletes_what_hifi_did_not_write(tmp_path, capsys, monkeypatch):
    # Regression (2026-11-23): --out . --overwrite emptied the working directory. --overwrite
    # replaces only a directory hifi wrote (its .hifi-run lists every file in it).
    path = _write(tmp_path, GOOD)
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("precious")
    monkeypatch.chdir(work)
    for out in (".", "", "..", str(work), str(tmp_path), "/", str(__import__("pathlib").Path.home())):
        assert main(["run", str(path), "--out", out, "--overwrite", "--no-progress"]) == 2, out
        err = capsys.readouterr().err
        assert err.startswith("hifi: error: --out") and len(err.strip().splitlines()) == 1, err
    assert (work / "thesis.tex").read_text() == "precious"
    # a directory without the marker, or with a file the marker does not list, is kept
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.csv").write_text("1,2\n")
    assert main(["run", str(path), "--out", str(foreign), "--overwrite", "--no-progress"]) == 2
    assert "not written by hifi run" in capsys.readouterr().err and (foreign / "data.csv").exists()
    run = tmp_path / "run"
    assert main(["run", str(path), "--out", str(run), "--no-progress"]) == 0
    (run / "notes.txt").write_text("mine")
    assert main(["run", str(path), "--out", str(run), "--overwrite", "--no-progress"]) == 2
    assert "notes.txt" in capsys.readouterr().err and (run / "notes.txt").exists()
    # an empty directory may be filled
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", str(path), "--out", str(empty), "--overwrite", "--no-progress"]) == 0
    assert not any(p.name.startswith(".") and p.name != ".hifi-run" for p in tmp_path.rglob("*"))


def test_export_refuses_an_existing_file_like_run(tmp_path, capsys):
    # Regression (2026-11-23): hifi export --out EXISTING_FILE overwrote silently.
    path = _write(tmp_path, GOOD.replace('model = "depthmap"', 'model = "generic_grid"').replace(
        "resolution_x = 16\nresolution_y = 12", "n_theta = 5\nn_phi = 3"))
    run = tmp_path / "run"
    assert main(["run", str(path), "--out", str(run), "--no-progress"]) == 0
    target = tmp_path / "scan.ply"
    target.write_text("keep me")
    assert main(["export", str(run / "cam.nc"), "--format", "ply", "--out", str(target)]) == 2
    assert "exists; use --overwrite" in capsys.readouterr().err and target.read_text() == "keep me"
    assert main(["export", str(run / "cam.nc"), "--format", "ply", "--out", str(target), "--overwrite"]) == 0
    assert target.read_bytes().startswith(b"ply\n")
    assert main(["export", str(run / "cam.nc"), "--format", "ply", "--out", str(tmp_path)]) == 2


def test_console_script_exit_status(tmp_path):
    path = _write(tmp_path, GOOD.replace("reflectivity = 0.8", "reflectivity = -0.1"))
    proc = subprocess.run([sys.executable, "-m", "hifi.cli", "run", str(path), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "materials.white.reflectivity = -0.1" in proc.stderr and not (tmp_path / "o").exists()
