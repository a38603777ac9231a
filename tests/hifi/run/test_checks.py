"""Load-time warnings (hifi.ScenarioWarning) for scenes that run but mislead.

A sensor mounted inside a closed mesh (the crossing example's Ibeo LUX sat at x = 2.2 m inside
its car, whose front face is at 2.25 m: every return was its own bumper), triangles of zero
area, boxes with a zero extent. The shipped examples load without any warning.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import hifi
from hifi.run.checks import degenerate_faces, inside_closed_mesh
from hifi.cli import main

from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"


def _scenario(sensors, objects=()):
    return {"simulation": {"duration_s": 0.1},
            "objects": [{"name": "block", "mesh": "box", "size_m": [2, 2, 2], "position_m": [0, 0, 1]},
                        {"name": "ground", "mesh": "plane", "size_m": [20, 20]}, *objects],
            "sensors": list(sensors)}


def _load(d):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hifi.Simulation.from_dict(d)
    return [str(w.message) for w in caught if issubclass(w.category, hifi.ScenarioWarning)]


def _depth(name, position, parent=None):
    s = {"name": name, "model": "depthmap", "position_m": position,
         "params": {"resolution_x": 4, "resolution_y": 3}}
    if parent:
        s["parent"] = parent
    return s


def test_sensor_inside_a_closed_mesh_warns_naming_sensor_and_body():
    msgs = _load(_scenario([_depth("inside", [0.5, 0, 1.0]), _depth("outside", [3, 0, 1.0]),
                            {"name": "imu", "model": "pose", "position_m": [0, 0, 1.0]}]))
    assert len(msgs) == 1, msgs                      # not the one outside, not the pose sensor (casts no rays)
    assert msgs[0].startswith("<dict>: sensors[0].position_m = [0.5, 0.0, 1.0]: sensor 'inside' is mounted "
                              "inside objects[0] 'block', a closed mesh, at t = 0"), msgs[0]


def test_mount_on_a_moving_parent_is_checked_at_t0():
    # A depth map on a car (track) 0.5 m above its origin: inside the body at t = 0.
    car = {"name": "car", "mesh": "car", "track": [{"t_s": 0.0, "position_m": [10, 0, 0]},
                                                    {"t_s": 1.0, "position_m": [20, 0, 0]}]}
    msgs = _load(_scenario([_depth("cam", [0, 0, 0.8], parent="car")], objects=[car]))
    assert len(msgs) == 1 and "sensor 'cam' is mounted inside objects[2] 'car'" in msgs[0]
    assert _load(_scenario([_depth("cam", [0, 0, 1.9], parent="car")], objects=[car])) == []  # on the roof


def test_open_meshes_have_no_inside():
    # Under the ground plane and behind a wall plane: open meshes, nothing is "inside".
    assert _load(_scenario([_depth("cam", [5, 5, -0.5])])) == []


def test_the_inside_check_leaves_no_edge_tables_on_the_scene_mesh():
    # Regression test: trimesh caches the edge tables of is_watertight (120 bytes per triangle)
    # on the mesh it is asked, and a scene object's mesh lives as long as the run. The answers
    # are closed forms: the centre of a closed unit cube is inside it, a point 2 m out is not.
    import trimesh
    cube = trimesh.creation.box([1.0, 1.0, 1.0])
    mesh = trimesh.Trimesh(np.array(cube.vertices), np.array(cube.faces), process=False)
    assert inside_closed_mesh(mesh, [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]).tolist() == [True, False]
    assert not {"edges", "edges_sorted", "edges_face"} & set(mesh._cache.cache)


def test_zero_size_box_warns_with_the_count():
    # A box of extent 0 in y: its four sides parallel to y collapse to lines, 8 of its 12
    # triangles (analytic), the two faces normal to y keep their area.
    msgs = _load(_scenario([], objects=[{"name": "sheet", "mesh": "box", "size_m": [1, 0, 1],
                                         "position_m": [5, 0, 0.5]}]))
    assert msgs == ["<dict>: objects[2].size_m = [1.0, 0.0, 1.0]: box 'sheet' has a zero extent, so 8 of its "
                    "12 triangles have zero area and cannot be hit reliably; give every extent > 0 (a flat "
                    "rectangle is mesh = \"plane\")"]


def test_zero_area_triangles_of_a_mesh_file_warn_with_the_count(tmp_path):
    # Two triangles, the second with three collinear vertices (zero area by construction).
    (tmp_path / "sliver.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 2 0 0\nf 1 2 3\nf 1 2 4\n")
    (tmp_path / "s.toml").write_text('[simulation]\nduration_s = 0.1\n\n[[objects]]\nname = "m"\n'
                                     'mesh = "sliver.obj"\n')
    with pytest.warns(hifi.ScenarioWarning) as rec:
        hifi.load(tmp_path / "s.toml")
    assert [str(w.message) for w in rec] == [
        f"{tmp_path / 's.toml'}:6: objects[0].mesh = 'sliver.obj': 1 of the 2 triangles of 'm' have zero area "
        "(height <= 1.19e-07 x longest edge) and cannot be hit reliably"]


def test_degenerate_faces_is_scale_free():
    # A right triangle, a sliver of relative height 1e-6 (thin but resolvable in float32) and
    # one of 1e-9 (below float32's 2**-23 = 1.2e-7): at 1 mm and at 10 km scale alike.
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.5, 1e-6, 0], [0.5, 1e-9, 0.0]])
    f = np.array([[0, 1, 2], [0, 1, 3], [0, 1, 4]])
    for scale in (1e-3, 1.0, 1e4):
        np.testing.assert_array_equal(degenerate_faces(v * scale, f), [False, False, True])


def test_shipped_examples_load_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("crossing.toml", "urban_canyon.toml", "ouster.toml", "multi_gnss_canyon.toml", "street.toml",
                     "urban_canyon_seeds.toml"):
            hifi.load(EXAMPLES / name)


WARNED = ('[simulation]\nduration_s = 0.1\n\n[[objects]]\nname = "block"\nmesh = "box"\nsize_m = [2, 0, 2]\n\n'
          '[[sensors]]\nname = "cam"\nmodel = "depthmap"\nposition_m = [0, 0.5, 0]\n'
          '[sensors.params]\nresolution_x = 4\nresolution_y = 3\n')


def _expected(path):
    return (f"hifi: warning: {path}:7: objects[0].size_m = [2.0, 0.0, 2.0]: box 'block' has a zero extent, so 8 "
            "of its 12 triangles have zero area and cannot be hit reliably; give every extent > 0 (a flat "
            "rectangle is mesh = \"plane\")")


def test_cli_info_prints_the_warning(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(WARNED)
    assert main(["info", str(tmp_path / "s.toml")]) == 0
    assert capsys.readouterr().err.splitlines() == [_expected(tmp_path / "s.toml")]


def test_cli_run_prints_each_warning_once(tmp_path):
    # The console script, as a user sees it: the warning once although the run loads and runs.
    (tmp_path / "s.toml").write_text(WARNED)
    proc = subprocess.run([sys.executable, "-m", "hifi.cli", "run", str(tmp_path / "s.toml"), "--out",
                           str(tmp_path / "out"), "--no-progress"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [_expected(tmp_path / "s.toml")], proc.stderr


ROOF = {"simulation": {"duration_s": 0.1},
        "objects": [{"name": "ground", "mesh": "plane", "size_m": [50, 50]}, {"name": "car", "mesh": "car"}],
        "sensors": [{"name": "grid", "model": "generic_grid", "position_m": [-0.5, 0, 1.5], "rate_hz": 10.0,
                     "params": {"n_theta": 10, "n_phi": 6}}]}


def test_a_sensor_on_a_surface_warns_and_reports_no_return():
    # Regression: a generic_grid at exactly the car's roof height (1.5 m: the default car's
    # height, its roof the top of the side profile) gave distance 0 and infinite intensity on
    # every ray, with two raw numpy RuntimeWarnings and no scenario warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = hifi.Simulation.from_dict(ROOF)
        ds = sim.run(out=None, progress=False)["grid"]
    msgs = [str(w.message) for w in caught if issubclass(w.category, hifi.ScenarioWarning)]
    assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == [], [str(w.message) for w in caught]
    assert len(msgs) == 1 and msgs[0].startswith(
        "<dict>: sensors[0].position_m = [-0.5, 0.0, 1.5]: sensor 'grid' is on the surface of objects[1] 'car' "
        "at t = 0 (within 1 mm"), msgs
    hit_at_zero = (ds.distance == 0).values
    assert hit_at_zero.any()
    assert not ds.detected.values[hit_at_zero].any()               # masked: no return
    assert not np.isinf(ds.intensity.values).any()
    assert np.isnan(ds.intensity.values[~ds.detected.values]).all()
    assert np.isnan(ds.distance_noisy.values[hit_at_zero]).all()
    # 1 cm above the roof: no warning, and every ray is a return with a finite intensity
    # (straight down: 1 cm to the roof)
    above = {**ROOF, "sensors": [{**ROOF["sensors"][0], "position_m": [-0.5, 0, 1.51]}]}
    assert _load(above) == []


def test_min_range_masks_close_returns_of_the_generic_grid():
    # A wall 2 m ahead: with min_range_m = 5 nothing is reported, with the default everything is.
    d = {"simulation": {"duration_s": 0.1},
         "objects": [{"name": "wall", "mesh": "plane", "size_m": [50, 50], "position_m": [2, 0, 0],
                      "rpy_deg": [0, -90, 0]}],
         "sensors": [{"name": "g", "model": "generic_grid", "rate_hz": 10.0,
                      "params": {"n_theta": 3, "n_phi": 3, "theta_min_deg": -10, "theta_max_deg": 10,
                                 "phi_min_deg": -10, "phi_max_deg": 10}}]}
    ds = hifi.Simulation.from_dict(d).run(out=None, progress=False)["g"]
    assert ds.detected.values.all() and np.isfinite(ds.intensity.values).all()
    d["sensors"][0]["params"]["min_range_m"] = 5.0
    ds = hifi.Simulation.from_dict(d).run(out=None, progress=False)["g"]
    assert not ds.detected.values.any() and np.isnan(ds.intensity.values).all()
    assert (ds.distance.values >= 2.0).all()          # the true geometry stays: a wall 2 m ahead, hit obliquely


@pytest.mark.parametrize("model, params", [("tof_sr4000", {"resolution_x": 16, "resolution_y": 12}),
                                           ("vlp16", {"azimuth_stride": 8})])
def test_other_range_sensors_on_a_surface_report_no_return_at_distance_zero(model, params):
    # Regression: the ToF camera at the roof's height reported every ray that met the roof at
    # distance 0 as a detected return (the rotating lidars' min_range_m already masked them).
    sensor = {"name": "s", "model": model, "position_m": [-0.5, 0, 1.5], "rpy_deg": [0, 60, 0], "params": params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hifi.ScenarioWarning)           # the warning is tested above
        ds = hifi.Simulation.from_dict({**ROOF, "sensors": [sensor]}).run(out=None, progress=False)["s"]
    at_zero = (ds.distance == 0).values
    assert at_zero.any()
    assert not ds.detected.values[at_zero].any()
    assert np.isfinite(ds.intensity.values[ds.detected.values]).all()
