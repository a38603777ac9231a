"""MPI runs: ``mpirun -n 2`` and ``-n 3`` with ``--partition facets`` and ``time``
give files whose every variable is byte-identical to the serial run; a failing rank aborts the
job; a rank holds about 1/N of the triangles.

The MPI runs go through ``mpirun`` (found beside ``sys.executable``, else on PATH) in
subprocesses. Without mpi4py or mpirun those tests are skipped and say why (``pytest -ra``).
MPICH's Hydra places 3 ranks on 2 cores without an oversubscription flag.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

import pytest

from hifi.cli import main

#: Longest an MPI subprocess may take before the test calls it a hang [s].
MPI_TIMEOUT_S = 120


def _mpirun() -> str | None:
    beside = Path(sys.executable).with_name("mpirun")
    return str(beside) if beside.is_file() else shutil.which("mpirun")


_MISSING = ("mpi4py is not installed (pip install \".[mpi]\")"
            if importlib.util.find_spec("mpi4py") is None else
            "no mpirun beside the Python executable or on PATH" if _mpirun() is None else None)
needs_mpi = pytest.mark.skipif(_MISSING is not None, reason=f"MPI tests skipped: {_MISSING}")


def _env() -> dict:
    env = dict(os.environ)
    for var in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE"):    # not inside another launch
        env.pop(var, None)
    return env


def _mpi(n: int, *args, cwd=None) -> subprocess.CompletedProcess:
    cmd = [_mpirun(), "-n", str(n), sys.executable, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=MPI_TIMEOUT_S, env=_env(),
                          cwd=cwd)


#: A small scene with everything the partitions must get right: a mirror (rays cross
#: partitions between bounces), a car moving during the scans, boxes, and a plane turned by
#: 45 deg about z and tilted, so rays along the scene x axis run down its diagonal (shared edge).
SCENARIO = """
[simulation]
duration_s = 0.3
seed = 11

[materials.road]
reflectivity = 0.3
class = "road"

[materials.paint]
reflectivity = 0.6
class = "car"

[materials.glass]
reflectivity = 0.05
mirror = 1.0
class = "window"

[[objects]]
name = "ground"
mesh = "plane"
size_m = [60, 60]
material = "road"

[[objects]]
name = "diagonal_plate"
mesh = "plane"
size_m = [4, 4]
material = "paint"
position_m = [6, 0, 0.8]
rpy_deg = [0, 20, 45]

[[objects]]
name = "mirror"
mesh = "plane"
size_m = [6, 3]
material = "glass"
position_m = [0, 8, 1.5]
rpy_deg = [90, 0, 0]

[[objects]]
name = "block"
mesh = "box"
size_m = [3, 3, 3]
material = "road"
position_m = [-6, 6, 1.5]

[[objects]]
name = "car"
mesh = "car"
material = "paint"
track = [ { t_s = 0.0, position_m = [-8, -4, 0], rpy_deg = [0, 0, 0] },
          { t_s = 0.3, position_m = [-2, -4, 0], rpy_deg = [0, 0, 10] } ]

[[objects]]
name = "ball"
mesh = "sphere"
radius_m = 1.0
material = "paint"
position_m = [3, -6, 1]

[[sensors]]
name = "lidar"
model = "vlp16"
rate_hz = 10.0
position_m = [0, 0, 1.8]
[sensors.params]
azimuth_stride = 2
noise_sigma_m = 0.01

[[sensors]]
name = "depth"
model = "depthmap"
rate_hz = 10.0
position_m = [0, 0, 1.5]
[sensors.params]
resolution_x = 64
resolution_y = 48
fov_x_deg = 120.0
max_range_m = 50.0

[[sensors]]
name = "grid"
model = "generic_grid"
rate_hz = 10.0
position_m = [0, 0, 2.5]
[sensors.params]
theta_min_deg = -180.0
theta_max_deg = 179.0
n_theta = 360
phi_min_deg = -40.0
phi_max_deg = 0.0
n_phi = 21
los_sigma_m = 0.01
orthogonal_sigma_m = 0.002
max_range_m = 60.0

[[sensors]]
name = "odometry"
model = "pose"
rate_hz = 50.0
parent = "car"
"""


def _stored(path: Path) -> dict:
    """Every variable of a netCDF file or a Zarr store as stored (packed, not decoded)."""
    if path.suffix == ".zarr":
        import zarr
        group = zarr.open_group(path, mode="r")
        return {name: np.asarray(array[...]) for name, array in group.arrays()}
    import netCDF4
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        return {name: np.asarray(var[...]) for name, var in nc.variables.items()}


def _assert_identical(serial: Path, other: Path) -> None:
    """Every dataset of ``other`` (netCDF or Zarr) has the serial run's variables, byte for
    byte as stored, and decodes to the same dataset (values, attributes, coordinates)."""
    import xarray as xr

    from hifi.run.reading import open_output
    datasets = {p.stem: p for p in serial.iterdir() if p.suffix == ".nc"}
    others = {p.stem: p for p in other.iterdir() if p.suffix in (".nc", ".zarr")}
    assert sorted(others) == sorted(datasets)
    assert (serial / "scenario.toml").read_bytes() == (other / "scenario.toml").read_bytes()
    for stem, path in datasets.items():
        a, b = _stored(path), _stored(others[stem])
        assert set(a) == set(b), stem
        for v in a:
            x, y = a[v], b[v]
            if x.dtype.kind in "OU":               # netCDF: variable-length strings; Zarr: fixed width
                assert x.tolist() == y.tolist(), (stem, v)
            else:
                assert x.dtype == y.dtype and x.shape == y.shape, (stem, v)
                assert x.tobytes() == y.tobytes(), f"{stem}: variable {v} differs"
        with open_output(path) as x, open_output(others[stem]) as y:
            xr.testing.assert_identical(x.load(), y.load())


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("mpi")
    scenario = root / "scene.toml"
    scenario.write_text(SCENARIO)
    assert main(["run", str(scenario), "--out", str(root / "serial"), "--no-progress"]) == 0
    return scenario, root / "serial"


@needs_mpi
@pytest.mark.parametrize("mode,n", [("facets", 2), ("facets", 3), ("time", 2), ("time", 3)])
def test_partitioned_run_is_byte_identical(serial_run, tmp_path, mode, n):
    scenario, serial = serial_run
    out = tmp_path / f"{mode}{n}"
    r = _mpi(n, "-m", "hifi.cli", "run", scenario, "--out", out, "--partition", mode, "--no-progress")
    assert r.returncode == 0, r.stderr
    # Rank 0 alone reports the stores, once each (every rank wrote its own frames into them).
    assert r.stdout.count("lidar.zarr") == 1 and r.stdout.count("motion.zarr") == 1
    # The summary says how the run was shared: the ranks and each rank's threads, by default the
    # node's cores shared by its ranks (mpi.runner._threads_per_rank).
    assert re.search(rf" on {n} ranks x \d+ threads? each \(MPI rank share\)$", r.stdout.splitlines()[0])
    _assert_identical(serial, out)


#: Glass, water and a retroreflector (docs/surfaces.md): rays that go on through a pane and off
#: the water cross the facet partition between segments, and the halo spans pulses.
SURFACES_SCENARIO = """
[simulation]
duration_s = 0.2
seed = 5

[materials.road]
reflectivity = 0.3

[materials.tinted]
library = "glass_clear"
transmittance = 0.6

[[objects]]
name = "ground"
mesh = "plane"
size_m = [60, 60]
material = "road"

[[objects]]
name = "puddle"
mesh = "plane"
size_m = [6, 6]
material = "water"
position_m = [4, -3, 0.01]

[[objects]]
name = "window"
mesh = "plane"
size_m = [3, 6]
material = "tinted"
position_m = [6, 2, 1.5]
rpy_deg = [0, -90, 0]

[[objects]]
name = "room"
mesh = "box"
size_m = [2, 4, 3]
material = "road"
position_m = [9, 2, 1.5]

[[objects]]
name = "sign"
mesh = "plane"
size_m = [0.8, 0.8]
material = "retroreflective_sheeting"
position_m = [-5, 1, 1.8]
rpy_deg = [0, 90, 0]

[[objects]]
name = "van"
mesh = "box"
size_m = [2, 2, 2]
material = "road"
position_m = [9, -3, 1]

[[sensors]]
name = "lidar"
model = "vlp16"
rate_hz = 10.0
position_m = [0, 0, 1.8]
[sensors.params]
azimuth_stride = 2
return_mode = "dual"

[[sensors]]
name = "depth"
model = "depthmap"
rate_hz = 10.0
position_m = [0, 0, 1.5]
[sensors.params]
resolution_x = 48
resolution_y = 32
fov_x_deg = 120.0
max_range_m = 50.0
"""


@needs_mpi
def test_surfaces_facet_run_is_byte_identical(tmp_path):
    # Glass, water and a retroreflector: the facet partition gives the serial run's bytes.
    scenario = tmp_path / "surfaces.toml"
    scenario.write_text(SURFACES_SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "serial"), "--no-progress"]) == 0
    import xarray as xr
    with xr.open_dataset(tmp_path / "serial" / "lidar.nc") as ds:
        oid, z = ds.object_id.values, ds.z_noisy.values
    assert np.any(oid == 3) and np.any(oid == 4)           # the room behind the window, the sign
    assert np.any(z < -0.1)                                # the van's ghost below the puddle
    out = tmp_path / "facets2"
    r = _mpi(2, "-m", "hifi.cli", "run", scenario, "--out", out, "--partition", "facets", "--no-progress")
    assert r.returncode == 0, r.stderr
    _assert_identical(tmp_path / "serial", out)


@needs_mpi
def test_mpirun_without_partition_defaults_to_time(serial_run, tmp_path):
    scenario, serial = serial_run
    out = tmp_path / "default"
    r = _mpi(2, "-m", "hifi.cli", "run", scenario, "--out", out, "--no-progress")
    assert r.returncode == 0, r.stderr
    _assert_identical(serial, out)


def test_scene_has_shared_edge_ties(serial_run):
    # The byte comparisons are only a test of the tie rule if rays do land on a shared edge where
    # two triangles give Embree the same float32 distance but different normals: cast the
    # diagonal rays against each triangle of the plate alone, before the tie rule.
    import hifi
    from hifi.caster import RayCaster
    scene = hifi.load(serial_run[0]).scene
    plate = next(o for o in scene.objects if o.name == "diagonal_plate")
    pose = scene.pose_at(plate.name, 0.0)
    s = np.linspace(-1.9, 1.9, 401)
    normal = pose.apply_vectors(np.array([[0.0, 0.0, 1.0]]))[0]
    origins = pose.apply(np.column_stack([s, s, np.zeros_like(s)])) + 0.5 * normal
    directions = np.broadcast_to(-normal, origins.shape)
    raw = []
    for f in (0, 1):
        c = RayCaster(scene, face_subset=lambda i, n, f=f: np.arange(n)[f:f + 1] if i == plate.index
                      else np.arange(0)).build()
        raw.append(c.backend.nearest(origins, directions, 0.0, 10.0))     # before the tie rule
    tie = raw[0][0] == raw[1][0]
    assert tie.sum() > 20 and raw[0][4][tie].all()            # flagged as edge hits
    assert np.any(raw[0][3][tie] != raw[1][3][tie])           # Embree's normals differ


_TIE_SCRIPT = """
import sys
import numpy as np
import hifi
from hifi.caster import RayCaster
from mpi.runner import world
from mpi.caster import FacetCaster

comm = world()
scene = hifi.load(sys.argv[1]).scene
plate = next(o for o in scene.objects if o.name == "diagonal_plate")
pose = scene.pose_at(plate.name, 0.0)
s = np.linspace(-1.9, 1.9, 401)
normal = pose.apply_vectors(np.array([[0.0, 0.0, 1.0]]))[0]
# Rays down the plate's diagonal, and the same rays bounced off the mirror onto it.
origins = pose.apply(np.column_stack([s, s, np.zeros_like(s)])) + 0.5 * normal
directions = np.broadcast_to(-normal, origins.shape)
full = RayCaster(scene).cast(origins, directions)
part = FacetCaster(scene, comm).cast(origins, directions)
same = all(np.asarray(getattr(full, f)).tobytes() == np.asarray(getattr(part, f)).tobytes()
           for f in ("distance", "point", "normal", "direction", "object_id", "face_index", "bounces"))
if comm.Get_rank() == 0:
    print("SAME" if same else "DIFFERENT", int(np.sum(full.object_id == plate.index)))
"""


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_shared_edge_rays_identical_to_serial(serial_run, tmp_path, n):
    # Rays exactly on the diagonal shared by the plate's two triangles (tie in distance): the
    # partitioned caster gives the serial caster's every field, face index included.
    script = tmp_path / "tie.py"
    script.write_text(_TIE_SCRIPT)
    r = _mpi(n, script, serial_run[0])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["SAME", "401"]


_FAIL_SCRIPT = """
import os
import sys
import numpy as np
import hifi
from hifi.api.model import Sensor, Var
from hifi.cli import main


class Fragile(Sensor):
    \"\"\"Casts one ray per frame and fails on rank 1 from frame 1 on (a sensor bug on one rank).\"\"\"
    model_name = "fragile"
    default_rate_hz = 10.0

    def step(self, k, t):
        if os.environ.get("PMI_RANK") == "1" and k >= 1:
            raise RuntimeError("fragile sensor failed on purpose")
        hits, _, _ = self.cast(np.array([[1.0, 0.0, -0.2]]), t, 50.0)
        return {"distance": Var(("ray",), hits.distance, "m", "distance")}


hifi.register_model("fragile", Fragile)
sys.exit(main(sys.argv[1:]))
"""


@needs_mpi
@pytest.mark.parametrize("mode", ["facets", "time"])
def test_failing_rank_aborts_the_job(serial_run, tmp_path, mode):
    scenario = tmp_path / "fragile.toml"
    scenario.write_text(SCENARIO + '\n[[sensors]]\nname = "fragile"\nmodel = "fragile"\n'
                        'position_m = [0, 0, 1]\n')
    script = tmp_path / "run.py"
    script.write_text(_FAIL_SCRIPT)
    out = tmp_path / "out"
    r = _mpi(2, script, "run", scenario, "--out", out, "--partition", mode, "--no-progress")
    # One line from rank 0 naming the failing rank; status 1, Python's for an uncaught error
    # (a serial run shows the ModelError's traceback); before, rank 1 printed it and called
    # MPI_Abort(3), and MPICH added its own "Abort(3)" line.
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hifi: error: rank 1 of 2: "), r.stderr
    assert "fragile sensor failed on purpose" in lines[0], r.stderr
    assert not out.exists()                       # never a directory that looks finished
    for partial in tmp_path.glob(".out.partial-*"):
        assert (partial / "INCOMPLETE").is_file()


@needs_mpi
def test_bad_scenario_reported_once(tmp_path):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(SCENARIO.replace("reflectivity = 0.3", "reflectivity = 1.3"))
    r = _mpi(3, "-m", "hifi.cli", "run", scenario, "--out", tmp_path / "out", "--partition", "facets")
    assert r.returncode == 2
    assert r.stderr.count("reflectivity") == 1, r.stderr
    assert not (tmp_path / "out").exists()


def _serial(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hifi.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=MPI_TIMEOUT_S, env=_env(), cwd=cwd)


def _error_cases(tmp_path):
    """(name, arguments after the scenario, scenario text): one output error, two of bad input."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    bad = SCENARIO.replace("reflectivity = 0.3", "reflectivity = 1.3")
    return {
        # --out under an existing file: "cannot write ...: ... is not a directory", status 1
        "output": (["--out", blocker / "out"], SCENARIO),
        "bad-scenario": (["--out", tmp_path / "out"], bad),
        "bad-seed": (["--out", tmp_path / "out", "--seed", "-1"], SCENARIO),
    }


@needs_mpi
@pytest.mark.parametrize("mode", ["facets", "time"])
@pytest.mark.parametrize("case", ["output", "bad-scenario", "bad-seed"])
def test_mpi_error_reads_as_the_serial_one(tmp_path, mode, case):
    # The expected line and status are the serial run's own (README: bad input 2, a file that
    # cannot be written 1, one line "hifi: error: ..."). Before, an output error under mpirun
    # read "hifi: error: rank 0 of 2: hifi.errors.OutputError: ..." plus MPICH's "Abort(3)"
    # line, status 3, and --seed -1 was printed by every rank.
    args, text = _error_cases(tmp_path)[case]
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    serial = _serial("run", scenario, *args, "--no-progress", cwd=tmp_path)
    assert serial.returncode == (1 if case == "output" else 2), serial.stderr
    assert len(serial.stderr.strip().splitlines()) == 1, serial.stderr
    assert serial.stderr.startswith("hifi: error: "), serial.stderr
    r = _mpi(2, "-m", "hifi.cli", "run", scenario, *args, "--no-progress", "--partition", mode, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (serial.returncode, serial.stderr)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


_MEMORY_SCRIPT = """
import sys
import numpy as np
import hifi
from mpi.runner import world
from mpi.caster import FacetCaster


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


comm = world()
d = {"simulation": {"duration_s": 0.1},
     "materials": {"g": {"reflectivity": 0.3}},
     "objects": [{"name": "t", "mesh": "terrain", "size_m": [100, 100], "resolution_m": 0.25,
                  "amplitude_m": 1.0, "seed": 3},
                 {"name": "s", "mesh": "sphere", "radius_m": 1.0, "material": "g"}],
     "sensors": []}
d["objects"][0]["material"] = "g"
scene = hifi.Simulation.from_dict(d).scene
total = sum(len(o.faces) for o in scene.objects)
# Warm up Embree (device, task scheduler threads) on one triangle so that only the scene counts.
tiny = hifi.Simulation.from_dict({"simulation": {"duration_s": 0.1}, "materials": d["materials"],
                                  "objects": [{"name": "p", "mesh": "plane", "size_m": [1, 1],
                                               "material": "g"}], "sensors": []}).scene
FacetCaster(tiny, comm).build().cast(np.zeros((1, 3)), np.array([[0.0, 0.0, -1.0]]))
caster = FacetCaster(scene, comm)
before = rss_bytes()
caster.backend.build()          # this rank's Embree share
grown = rss_bytes() - before
caster.build()                  # and the edge-tie tables of its faces
kept = sum(len(o.faces) for o in scene.objects)
table = sum(t[2].size for k, t in caster._tie_cache.items() if k[0] == "topology")
whole = sum(o.mesh is not None for o in scene.objects)
verts = sum(len(o.vertices) for o in scene.objects)
rows = comm.gather((caster.n_triangles, grown, kept, table, whole, verts), root=0)
if comm.Get_rank() == 0:
    print(total, *[x for row in rows for x in row])
"""


@needs_mpi
def test_rank_holds_its_share_of_triangles(tmp_path):
    script = tmp_path / "mem.py"
    script.write_text(_MEMORY_SCRIPT)
    one = _mpi(1, script)
    three = _mpi(3, script)
    assert one.returncode == 0 and three.returncode == 0, one.stderr + three.stderr
    total, n1, mem1, _, _, _, verts1 = map(int, one.stdout.split())
    fields = list(map(int, three.stdout.split()))
    assert fields[0] == total == n1
    counts, mems, kept, table, whole, verts = (fields[1 + j::6] for j in range(6))
    # Stretches of the faces in lowest-vertex order: every rank within the faces around one
    # vertex (6 on the terrain grid, analytic) of total / 3.
    assert sum(counts) == total
    assert all(abs(c - total / 3) <= 6 for c in counts)
    # A rank keeps only its share of the faces, the vertices they use (the terrain's vertices
    # come row by row, so a third of the faces uses a third of the vertices, plus a row at each
    # border) and the edge-tie tables of its faces (three corners per face), and no whole mesh.
    assert kept == counts and whole == [0, 0, 0]
    assert table == [3 * c for c in counts]
    assert all(v < 0.36 * verts1 for v in verts), (verts, verts1)
    # Resident memory grown by the BVH build (Embree's triangles, BVH nodes, vertex buffer).
    # Measured on this terrain (320,000 triangles): 37 MB for all of them, 22 MB for a third in
    # one contiguous block: Embree's build allocator does not shrink in proportion. So the
    # bound is loose: well under the whole scene, above 1/5.
    for m in mems:
        assert 0.2 * mem1 < m < 0.8 * mem1, (mems, mem1)


def test_partition_without_mpi4py_names_the_install(tmp_path, monkeypatch, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    monkeypatch.setitem(sys.modules, "mpi4py", None)          # import mpi4py -> ImportError
    status = main(["run", str(scenario), "--out", str(tmp_path / "out"), "--partition", "facets"])
    assert status == 2
    assert 'pip install ".[mpi]"' in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_import_and_serial_run_do_not_touch_mpi(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        import mpi, mpi.runner, mpi.caster
        assert "mpi4py" not in sys.modules, "importing mpi imported mpi4py"
        from hifi.cli import main
        assert main(["run", {str(Path(__file__).with_name('_mpi_scene.toml'))!r}, "--out",
                     {str(tmp_path / 'o')!r}, "--no-progress"]) == 0
        assert "mpi4py" not in sys.modules, "a serial run imported mpi4py"
    """)
    (Path(__file__).with_name("_mpi_scene.toml")).exists() or None
    scenario = tmp_path / "scene.toml"
    scenario.write_text(SCENARIO.replace("duration_s = 0.3", "duration_s = 0.1"))
    code = code.replace(repr(str(Path(__file__).with_name('_mpi_scene.toml'))), repr(str(scenario)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
                       timeout=MPI_TIMEOUT_S)
    assert r.returncode == 0, r.stderr


@needs_mpi
@pytest.mark.parametrize("mode", ["facets", "time"])
def test_fog_run_is_byte_identical_across_partitions(tmp_path, mode):
    # Weather: the fog echo's and the snowflakes' draws are keyed by sensor and frame,
    # so a run in fog (V = 40 m) and snow (1 mm/h), with hundreds of atmospheric returns per
    # sweep, is partition-independent.
    scenario = tmp_path / "fog.toml"
    scenario.write_text(SCENARIO + "\n[weather]\nfog_visibility_m = 40.0\nsnowfall_rate_mm_h = 1.0\n")
    serial = tmp_path / "serial"
    assert main(["run", str(scenario), "--out", str(serial), "--no-progress"]) == 0
    import xarray as xr
    with xr.open_dataset(serial / "lidar.nc") as ds:
        assert int((ds.object_id.values == -2).sum()) > 100
    out = tmp_path / mode
    r = _mpi(2, "-m", "hifi.cli", "run", scenario, "--out", out, "--partition", mode, "--no-progress")
    assert r.returncode == 0, r.stderr
    _assert_identical(serial, out)


LOOP_SCENARIO = """
[simulation]
duration_s = 1.0
seed = 5

[[objects]]
name = "ground"
mesh = "plane"
size_m = [100, 100]

[[objects]]
name = "wall"
mesh = "box"
size_m = [1, 20, 3]
position_m = [15, 0, 1.5]

[[objects]]
name = "car"
mesh = "car"
vehicle = { wheelbase_m = 2.7 }

[[sensors]]
name = "lidar"
model = "vlp16"
parent = "car"
position_m = [0, 0, 1.9]
[sensors.params]
azimuth_stride = 4

[[models]]
name = "driver"
model = "waypoint_driver"
[models.params]
body = "car"
waypoints_m = [[10.0, 3.0]]
speed_m_s = 4.0
"""


@needs_mpi
def test_closed_loop_refuses_time_partition_and_is_identical_on_facets(tmp_path):
    # Closed loop: a vehicle and a driver cannot be split in time (exit 2, the message says why
    # and what to use); facets give the serial run's bytes.
    scenario = tmp_path / "loop.toml"
    scenario.write_text(LOOP_SCENARIO)
    r = _mpi(2, "-m", "hifi.cli", "run", scenario, "--out", tmp_path / "t", "--partition", "time", "--no-progress")
    assert r.returncode == 2, r.stderr
    assert "closed loop" in r.stderr and "--partition facets" in r.stderr and r.stderr.count("closed loop") == 1
    assert not (tmp_path / "t").exists()
    serial = tmp_path / "serial"
    assert main(["run", str(scenario), "--out", str(serial), "--no-progress"]) == 0
    r = _mpi(2, "-m", "hifi.cli", "run", scenario, "--out", tmp_path / "f", "--partition", "facets", "--no-progress")
    assert r.returncode == 0, r.stderr
    _assert_identical(serial, tmp_path / "f")


@needs_mpi
def test_a_rank_dead_before_mpi_init_does_not_hang_the_job(tmp_path):
    # Regression: a rank that dies before MPI_Init (a Ctrl-C in Python's own start-up, before any
    # hifi code runs) left the other rank waiting in MPI_Init forever; Hydra does not end a job
    # for a process that never initialised (measured with MPICH 5.0.2). hifi bounds its MPI_Init
    # (mpi.control.import_mpi), here at 2 s: the job ends, with a failure status, within seconds.
    script = tmp_path / "dies_early.py"
    script.write_text("import os, sys\n"
                      "if os.environ.get('PMI_RANK') == '1':\n"
                      "    os._exit(1)\n"
                      "from mpi.runner import world\n"
                      "world()\n"
                      "print('initialised', file=sys.stderr)\n")
    env = dict(_env(), HIFI_MPI_INIT_TIMEOUT_S="2")
    start = time.monotonic()
    r = subprocess.run([_mpirun(), "-n", "2", sys.executable, str(script)], capture_output=True, text=True,
                       timeout=MPI_TIMEOUT_S, env=env)
    assert time.monotonic() - start < 30.0
    assert r.returncode != 0 and "initialised" not in r.stderr
