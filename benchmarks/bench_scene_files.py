"""A glTF city loaded as its parts against the same triangles as one mesh: load time and memory.

Run from the repository root::

    python benchmarks/bench_scene_files.py                            # 0.5, 1 and 5 M triangles
    python benchmarks/bench_scene_files.py --repeat 5 --repeat-large 3 --tmp /tmp/bsf
    python benchmarks/bench_scene_files.py --triangles 1 --blocks 24 --modes parts   # 12,672 parts
    python benchmarks/bench_scene_files.py --triangles 0.5 --profile parts   # where the load goes

The city (:func:`write_city`, deterministic, seeded) is a grid of ``BLOCKS x BLOCKS`` blocks of
``BLOCK_PITCH_M``: per block a ground tile (``Asphalt``), one building (a box of random footprint
and height whose walls and roof are gridded into squares, the size of the squares chosen so the
city has the triangles asked for; ``Facade_Concrete`` or ``Facade_Brick``), four parked cars
(a node with three children: body ``CarPaint_*``, cabin ``CarGlass``, wheels ``Rubber``) and four
trees (a node with a trunk ``Bark`` and a crown ``Leaves``). Each mesh is in its node's frame,
placed by the node's translation and yaw, as a modelling tool exports a city. The triangle
count of the grounds, cars and trees is fixed (156,672), the buildings take the rest: the part
count is the same at every size (3,168 parts with triangles, 1,296 nodes without), so the
per-part costs are fixed and the per-triangle ones grow. ``--blocks`` changes the grid (the
parts grow as its square).

Files, written once per size into ``--tmp`` (kept when given), with trimesh:

- ``city_<N>k.glb``: the city with its node tree;
- ``one_<N>k.glb``: the same triangles in the city frame (every node's transform applied), one
  node, one mesh, no material.

Cases, each in a fresh interpreter (peak memory is the process's own), over one scenario each
that holds the file and one ``hdl64e_s2`` sensor at a street crossing:

- ``one``: ``mesh = "one_<N>k.glb"``, ``material = "concrete"``: the baseline.
- ``parts``: ``mesh = "city_<N>k.glb"`` with a ``[scene_files.city_<N>k]`` table mapping the
  file's materials (``CarGlass`` and ``Rubber`` left to derived, opaque materials:
  :data:`MATERIAL_MAP`) and classes by glob.
- ``flat``: the city file with ``parts = false``: trimesh reads the same node tree and hifi
  flattens it into one object (how the file read before parts existed).

Each child imports hifi, casts a few rays through a one-box scene (so numba and the compiled
kernels are loaded before the baseline), then measures: ``hifi.load``, wall and CPU time
(of which: validating the scenario, which reads the mesh files; and the load-time checks,
:func:`hifi.run.checks.warn_scene`, timed through a wrapper), resident memory after it;
``RayCaster(sim.scene).build()`` (the BVHs); and one HDL-64E revolution (133,312 rays,
``benchmarks/_scene.py::hdl64e_rays``, 120 m) cast from 1.8 m above the street, three times
(median). Memory: ``VmRSS`` after loading minus the baseline, and the peak (``VmHWM``, reset
through ``/proc/self/clear_refs`` after the baseline where the kernel allows it) minus the
baseline, per triangle. The parent checks that ``one`` and ``parts`` hit the same rays at the
same distances. Rounds interleave the sizes and cases; ``--repeat`` rounds of sizes under 2 M
triangles, ``--repeat-large`` of the others; the table gives medians. ``--profile CASE`` prints
cProfile's view of ``hifi.load`` of that case instead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: Blocks per side of the city, and the distance between block centres [m] (a 40 m lot and a
#: 20 m street, about a Manhattan avenue block's short side).
BLOCKS = 12
BLOCK_PITCH_M = 60.0
#: Building footprint side [m] and height [m], drawn uniformly per building.
BUILDING_SIDE_M = (20.0, 36.0)
BUILDING_HEIGHT_M = (10.0, 60.0)
#: Parked cars and trees per block; the cars' lane and the trees' sidewalk, distance from the
#: block centre [m] (the lot reaches at most 20 m, the street between lots is 20 m wide).
CARS_PER_BLOCK = 4
TREES_PER_BLOCK = 4
CAR_LANE_M = 26.0
TREE_LINE_M = 22.0
#: Cells per side of a ground tile (2 triangles each).
GROUND_CELLS = 4
#: Segments around a wheel and a trunk; subdivisions of a tree crown's icosphere.
WHEEL_SECTIONS = 8
TRUNK_SECTIONS = 8
CROWN_SUBDIVISIONS = 1
#: Paint colours (glTF baseColorFactor, linear RGB).
PAINTS = {"Red": (0.6, 0.05, 0.05), "Blue": (0.05, 0.1, 0.5), "White": (0.85, 0.85, 0.85),
          "Black": (0.03, 0.03, 0.03), "Silver": (0.55, 0.56, 0.58), "Green": (0.1, 0.35, 0.12)}
#: The other materials of the file (name -> linear RGB).
FILE_COLOURS = {"Asphalt": (0.08, 0.08, 0.08), "Facade_Concrete": (0.55, 0.53, 0.5),
                "Facade_Brick": (0.45, 0.18, 0.12), "CarGlass": (0.1, 0.12, 0.14),
                "Rubber": (0.02, 0.02, 0.02), "Bark": (0.25, 0.17, 0.1), "Leaves": (0.12, 0.3, 0.08)}
#: The scenario's mappings of the city's materials and classes (hifi's library materials).
#: ``CarGlass`` and ``Rubber`` are left to the materials derived from their colours, which are
#: opaque: the library's ``glass_clear`` passes rays (hifi.world.surfaces), and the one-mesh
#: baseline has no glass, so both cases cast the same paths.
MATERIAL_MAP = {"Asphalt": "asphalt_worn", "Facade_Concrete": "concrete", "Facade_Brick": "brick",
                "CarPaint_*": "car_paint", "Bark": "bark", "Leaves": "vegetation"}
CLASS_MAP = {"building_*": "building", "car_*": "car", "tree_*": "vegetation", "ground_*": "road"}

#: The sensor: at the street crossing nearest the city centre, off the ground tiles' edges, 1.8 m
#: up (a car's roof, as benchmarks/_scene.py); :func:`sensor_m`.
SENSOR_OFFSET_M = (3.1, -2.7, 1.8)
#: Maximum range of the cast [m] (the HDL-64E's 120 m).
MAX_RANGE_M = 120.0
#: City seed.
SEED = 7


# -- the city --------------------------------------------------------------------------------------

def _grid(origin, u, v, nu: int, nv: int):
    """A rectangle ``origin + s u + t v`` (s, t in [0, 1]) as ``nu x nv`` squares, 2 triangles
    each, facing ``u x v``; (vertices, faces)."""
    s, t = np.meshgrid(np.linspace(0.0, 1.0, nu + 1), np.linspace(0.0, 1.0, nv + 1), indexing="ij")
    verts = (np.asarray(origin, float) + s[..., None] * np.asarray(u, float)
             + t[..., None] * np.asarray(v, float)).reshape(-1, 3)
    idx = np.arange((nu + 1) * (nv + 1)).reshape(nu + 1, nv + 1)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    faces = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return verts, faces


def _cells(w: float, d: float, h: float, cell: float):
    """Squares along the width, depth and height of a building with squares of side ``cell``."""
    return max(1, math.ceil(w / cell)), max(1, math.ceil(d / cell)), max(1, math.ceil(h / cell))


def _building_faces(w, d, h, cell) -> int:
    nw, nd, nh = _cells(w, d, h, cell)
    return 2 * (2 * nw * nh + 2 * nd * nh + nw * nd)


def building_mesh(w: float, d: float, h: float, cell: float):
    """A building of footprint ``w x d`` [m] and height ``h`` [m] standing on z = 0, centred
    on its node: four walls and a roof, each gridded into squares of about ``cell`` [m]."""
    import trimesh
    nw, nd, nh = _cells(w, d, h, cell)
    x, y, z = np.array([w, 0, 0]), np.array([0, d, 0]), np.array([0, 0, h])
    lo = np.array([-w / 2, -d / 2, 0.0])
    sides = [(lo, x, z, nw, nh), (lo + x + y, -x, z, nw, nh), (lo + x, y, z, nd, nh),
             (lo + y, -y, z, nd, nh), (lo + z, x, y, nw, nd)]
    verts, faces, n = [], [], 0
    for origin, u, v, nu, nv in sides:
        vv, ff = _grid(origin, u, v, nu, nv)
        verts.append(vv)
        faces.append(ff + n)
        n += len(vv)
    return trimesh.Trimesh(np.concatenate(verts), np.concatenate(faces), process=False)


def _yaw(deg: float, xyz) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    m = np.eye(4)
    m[:2, :2] = [[c, -s], [s, c]]
    m[:3, 3] = xyz
    return m


def _car_meshes():
    """Body, cabin and wheels of a parked car in its own frame (x forward, z up, on z = 0)."""
    import trimesh
    body = trimesh.creation.box([4.4, 1.8, 0.8], _yaw(0.0, [0.0, 0.0, 0.7]))
    cabin = trimesh.creation.box([2.2, 1.6, 0.6], _yaw(0.0, [-0.3, 0.0, 1.4]))
    axle = np.eye(4)
    axle[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]        # the cylinder's z axis along y
    wheels = []
    for x in (-1.4, 1.4):
        for y in (-0.8, 0.8):
            t = axle.copy()
            t[:3, 3] = [x, y, 0.33]
            wheels.append(trimesh.creation.cylinder(0.33, 0.22, sections=WHEEL_SECTIONS, transform=t))
    return body, cabin, trimesh.util.concatenate(wheels)


def _tree_meshes(rng):
    """Trunk and crown of a tree in its own frame."""
    import trimesh
    height = rng.uniform(2.0, 3.5)
    radius = rng.uniform(1.5, 2.5)
    trunk = trimesh.creation.cylinder(0.15, height, sections=TRUNK_SECTIONS,
                                      transform=_yaw(0.0, [0.0, 0.0, height / 2]))
    crown = trimesh.creation.icosphere(CROWN_SUBDIVISIONS, radius)
    crown.apply_translation([0.0, 0.0, height + 0.8 * radius])
    return trunk, crown


def city_layout(mtri: float, blocks: int = BLOCKS):
    """Every node of the city: a list of ``(name, parent or None, 4x4 local transform, mesh or
    None, file material or None)``, parents first; deterministic for ``SEED``."""
    import trimesh
    rng = np.random.default_rng(SEED)
    nodes = []
    buildings = []
    for i in range(blocks):
        for j in range(blocks):
            cx, cy = (i - (blocks - 1) / 2) * BLOCK_PITCH_M, (j - (blocks - 1) / 2) * BLOCK_PITCH_M
            block = f"block_{i}_{j}"
            nodes.append((block, None, _yaw(0.0, [cx, cy, 0.0]), None, None))
            half = BLOCK_PITCH_M / 2
            gv, gf = _grid([-half, -half, 0.0], [2 * half, 0, 0], [0, 2 * half, 0], GROUND_CELLS, GROUND_CELLS)
            nodes.append((f"ground_{i}_{j}", block, np.eye(4), trimesh.Trimesh(gv, gf, process=False), "Asphalt"))
            w, d = rng.uniform(*BUILDING_SIDE_M, size=2)
            h = rng.uniform(*BUILDING_HEIGHT_M)
            off = rng.uniform(-2.0, 2.0, size=2)
            facade = "Facade_Brick" if rng.random() < 0.4 else "Facade_Concrete"
            buildings.append(len(nodes))
            nodes.append((f"building_{i}_{j}", block, _yaw(0.0, [off[0], off[1], 0.0]), (w, d, h), facade))
            # two cars on the south lane, two on the east lane; trees on the north and west sidewalks
            for k in range(CARS_PER_BLOCK):
                along = (-9.0 if k % 2 == 0 else 9.0) + rng.uniform(-3.0, 3.0)
                xy, yaw = ([along, -CAR_LANE_M], 180.0 * rng.integers(2)) if k < 2 else \
                          ([CAR_LANE_M, along], 90.0 + 180.0 * rng.integers(2))
                car = f"car_{i}_{j}_{k}"
                nodes.append((car, block, _yaw(yaw, [xy[0], xy[1], 0.0]), None, None))
                body, cabin, wheels = _car_meshes()
                paint = f"CarPaint_{list(PAINTS)[rng.integers(len(PAINTS))]}"
                nodes += [(f"{car}_body", car, np.eye(4), body, paint),
                          (f"{car}_cabin", car, np.eye(4), cabin, "CarGlass"),
                          (f"{car}_wheels", car, np.eye(4), wheels, "Rubber")]
            for k in range(TREES_PER_BLOCK):
                along = (-12.0 if k % 2 == 0 else 12.0) + rng.uniform(-3.0, 3.0)
                xy = [along, TREE_LINE_M] if k < 2 else [-TREE_LINE_M, along]
                tree = f"tree_{i}_{j}_{k}"
                nodes.append((tree, block, _yaw(rng.uniform(0.0, 360.0), [xy[0], xy[1], 0.0]), None, None))
                trunk, crown = _tree_meshes(rng)
                nodes += [(f"{tree}_trunk", tree, np.eye(4), trunk, "Bark"),
                          (f"{tree}_crown", tree, np.eye(4), crown, "Leaves")]
    # The buildings' square size: the largest giving at least the triangles asked for.
    fixed = sum(len(n[3].faces) for n in nodes if n[3] is not None and not isinstance(n[3], tuple))
    want = max(int(mtri * 1e6) - fixed, 10 * len(buildings))
    dims = [nodes[b][3] for b in buildings]
    lo, hi = 1e-3, 100.0
    for _ in range(60):                                  # bisection on the square size [m]
        mid = math.sqrt(lo * hi)
        if sum(_building_faces(*dm, mid) for dm in dims) >= want:
            lo = mid
        else:
            hi = mid
    for b in buildings:
        name, parent, m, dm, mat = nodes[b]
        nodes[b] = (name, parent, m, building_mesh(*dm, lo), mat)
    return nodes


def _material(name: str):
    from trimesh.visual.material import PBRMaterial
    rgb = PAINTS[name.split("_", 1)[1]] if name.startswith("CarPaint_") else FILE_COLOURS[name]
    return PBRMaterial(name=name, baseColorFactor=[*rgb, 1.0])


def write_city(tmp: Path, mtri: float, blocks: int = BLOCKS) -> dict:
    """Write the city of ``blocks x blocks`` blocks and its one-mesh twin for ``mtri`` million
    triangles (unless present); their paths, triangles and parts."""
    import trimesh
    from trimesh.visual import TextureVisuals
    tag = f"{round(mtri * 1000)}k" + (f"_{blocks}blocks" if blocks != BLOCKS else "")
    city, one = tmp / f"city_{tag}.glb", tmp / f"one_{tag}.glb"
    meta_path = tmp / f"city_{tag}.json"
    if city.exists() and one.exists() and meta_path.exists():
        return {**json.loads(meta_path.read_text()), "city": city, "one": one, "tag": tag}
    t0 = time.perf_counter()
    nodes = city_layout(mtri, blocks)
    scene = trimesh.Scene()
    materials: dict = {}
    world: dict = {}
    verts, faces, n = [], [], 0
    for name, parent, matrix, mesh, mat in nodes:
        world[name] = (world[parent] if parent is not None else np.eye(4)) @ matrix
        if mesh is None:
            scene.graph.update(frame_to=name, frame_from=parent or scene.graph.base_frame, matrix=matrix)
            continue
        v = np.asarray(mesh.vertices)
        verts.append(v @ world[name][:3, :3].T + world[name][:3, 3])
        faces.append(np.asarray(mesh.faces) + n)
        n += len(v)
        mesh.visual = TextureVisuals(material=materials.setdefault(mat, _material(mat)))
        scene.add_geometry(mesh, node_name=name, geom_name=name, parent_node_name=parent, transform=matrix)
    city.write_bytes(scene.export(file_type="glb"))
    del scene
    flat = trimesh.Trimesh(np.concatenate(verts), np.concatenate(faces), process=False)
    one.write_bytes(trimesh.Scene(flat).export(file_type="glb"))
    meta = {"triangles": len(flat.faces), "vertices": len(flat.vertices),
            "parts": sum(1 for x in nodes if x[3] is not None), "nodes": len(nodes),
            "materials": len(materials), "write_s": time.perf_counter() - t0}
    meta_path.write_text(json.dumps(meta))
    return {**meta, "city": city, "one": one, "tag": tag}


def sensor_m(blocks: int) -> list:
    """The sensor's position [m]: a crossing is at the centre of a city of an even number of
    blocks, half a block from it otherwise."""
    shift = 0.0 if blocks % 2 == 0 else BLOCK_PITCH_M / 2
    return [SENSOR_OFFSET_M[0] + shift, SENSOR_OFFSET_M[1] + shift, SENSOR_OFFSET_M[2]]


def _toml_value(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(v) if isinstance(v, str) else repr(v)


def write_scenarios(tmp: Path, files: dict, blocks: int = BLOCKS) -> dict:
    """The scenario of each case for one size; mode -> path."""
    tag = files["tag"]
    head = ["[simulation]", "duration_s = 0.1", "seed = 1", ""]
    sensor = ["[[sensors]]", 'name = "lidar"', 'model = "hdl64e_s2"', "rate_hz = 10.0",
              f"position_m = {_toml_value(sensor_m(blocks))}", ""]
    objects = {
        "one": ["[[objects]]", 'name = "city"', f'mesh = "{files["one"].name}"', 'material = "concrete"', ""],
        "parts": [f"[scene_files.city_{tag}]", f"materials = {_toml_value(MATERIAL_MAP)}",
                  f"classes = {_toml_value(CLASS_MAP)}", "",
                  "[[objects]]", 'name = "city"', f'mesh = "{files["city"].name}"', ""],
        "flat": ["[[objects]]", 'name = "city"', f'mesh = "{files["city"].name}"', "parts = false",
                 'material = "concrete"', ""],
    }
    out = {}
    for mode, lines in objects.items():
        p = tmp / f"{mode}_{tag}.toml"
        p.write_text("\n".join(head + lines + sensor))
        out[mode] = p
    return out


# -- the children ----------------------------------------------------------------------------------

def _status_bytes(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0, ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _warm_up() -> None:
    """Import what a run imports and cast through a one-box scene, so numba, the compiled
    kernels and Embree are loaded before the baseline."""
    import netCDF4  # noqa: F401
    import trimesh
    import xarray  # noqa: F401

    import hifi  # noqa: F401
    import hifi.run.output  # noqa: F401
    import sensors.lidar  # noqa: F401
    from hifi.caster import RayCaster
    from hifi.world.scene import Scene
    from hifi.world.scene_files import read_scene_file  # noqa: F401
    scene = Scene()
    scene.add_object("box", trimesh.creation.box([1.0, 1.0, 1.0]))
    caster = RayCaster(scene).build()
    caster.cast(np.array([[5.0, 0.0, 0.0]] * 8), np.array([[-1.0, 0.0, 0.0]] * 8), 0.0, 10.0)
    caster.close()


def _child(mode: str, toml: str, profile: bool) -> dict:
    import gc
    import hashlib

    sys.path.insert(0, str(HERE))
    from _scene import hdl64e_rays
    _warm_up()
    import hifi
    from hifi.caster import RayCaster
    from hifi.run import scenario as _scenario
    from hifi.run import simulation as _simulation
    from hifi.run.simulation import Simulation
    # The load-time checks (hifi.run.checks.warn_scene) timed apart: their cost depends on the
    # meshes' bounding boxes around the sensor, not on how the file is read.
    checks_s = []
    warn_scene = _simulation.warn_scene

    def timed_checks(*args, **kwargs):
        start = time.perf_counter()
        warn_scene(*args, **kwargs)
        checks_s.append(time.perf_counter() - start)
    _simulation.warn_scene = timed_checks
    import tomllib
    with open(toml, "rb") as f:
        position = tomllib.load(f)["sensors"][0]["position_m"]
    origins, directions, _ = hdl64e_rays(position)
    gc.collect()
    base = _status_bytes("VmRSS")
    resettable = _reset_peak()
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        hifi.load(toml)
        prof.disable()
        stats = pstats.Stats(prof, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(35)
        stats.sort_stats("tottime").print_stats(25)
        return {}
    c0 = time.process_time()
    t0 = time.perf_counter()
    sc = _scenario.load(toml)
    t1 = time.perf_counter()
    sim = Simulation(sc)
    t2 = time.perf_counter()
    load_cpu = time.process_time() - c0
    loaded = _status_bytes("VmRSS")
    peak_load = _status_bytes("VmHWM")
    caster = RayCaster(sim.scene).build()
    t3 = time.perf_counter()
    built = _status_bytes("VmRSS")
    times = []
    for _ in range(3):
        s = time.perf_counter()
        hits = caster.cast(origins, directions, 0.0, MAX_RANGE_M)
        times.append(time.perf_counter() - s)
    peak = _status_bytes("VmHWM")
    hit = np.asarray(hits.hit)
    dist = np.asarray(hits.distance)
    caster.close()
    return {"base": base, "loaded": loaded, "built": built, "peak_load": peak_load, "peak": peak,
            "peak_reset": resettable, "validate_s": t1 - t0, "scene_s": t2 - t1, "load_s": t2 - t0,
            "checks_s": sum(checks_s), "load_cpu_s": load_cpu,
            "build_s": t3 - t2, "cast_s": statistics.median(times), "hits": int(np.count_nonzero(hit)),
            "distance_sum_m": float(np.sum(dist[hit])),
            "hit_mask": hashlib.sha1(np.packbits(hit).tobytes()).hexdigest(),
            "objects": len(sim.scene.objects), "bodies": len(sim.scene.bodies),
            "triangles": sum(o.n_faces for o in sim.scene.objects)}


# -- the parent ------------------------------------------------------------------------------------

def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_case(mode: str, toml: Path, profile: bool = False) -> dict:
    """One case in a fresh interpreter; its measurements."""
    cmd = [sys.executable, __file__, "--child", mode, str(toml)] + (["--profile-child"] if profile else [])
    if profile:
        subprocess.run(cmd, cwd=REPO, env=_env(), check=True)
        return {}
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=_env())
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv) -> None:
    if argv[:1] == ["--child"]:
        out = _child(argv[1], argv[2], profile="--profile-child" in argv)
        print("RESULT " + json.dumps(out), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triangles", type=float, nargs="+", default=[0.5, 1.0, 5.0], help="million triangles")
    ap.add_argument("--modes", nargs="+", default=["one", "parts", "flat"], choices=["one", "parts", "flat"])
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds (medians reported)")
    ap.add_argument("--repeat-large", type=int, default=1,
                    help="rounds for sizes of 2 M triangles and more (default 1)")
    ap.add_argument("--blocks", type=int, default=BLOCKS,
                    help=f"blocks per side of the city (default {BLOCKS}: 3,168 parts; the parts grow as its square)")
    ap.add_argument("--tmp", default=None,
                    help="directory for the files (kept and reused when present; default a temporary one, removed)")
    ap.add_argument("--json", default=None, help="write the raw measurements here")
    ap.add_argument("--profile", default=None, choices=["one", "parts", "flat"],
                    help="only profile hifi.load of this case at the first size (cProfile, to stderr)")
    args = ap.parse_args(argv)
    tmp = Path(args.tmp or tempfile.mkdtemp(prefix="hifi_bench_scene_files_"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        _measure(args, tmp)
    finally:
        if args.tmp is None:                  # a directory of our own: the 5 M files are 180 MB
            shutil.rmtree(tmp, ignore_errors=True)


def _measure(args, tmp: Path) -> None:
    """Write the files into ``tmp``, run the cases, print the table."""
    files = {}
    for m in args.triangles:
        files[m] = write_city(tmp, m, args.blocks)
        files[m]["toml"] = write_scenarios(tmp, files[m], args.blocks)
        f = files[m]
        print(f"  {f['tag']}: {f['triangles']:,} triangles, {f['parts']:,} parts in {f['nodes']:,} nodes, "
              f"{f['materials']} materials; {f['city'].stat().st_size / 2**20:.0f} MiB as parts, "
              f"{f['one'].stat().st_size / 2**20:.0f} MiB as one mesh", file=sys.stderr, flush=True)
    if args.profile:
        run_case(args.profile, files[args.triangles[0]]["toml"][args.profile], profile=True)
        return
    results: dict = {}
    loads = [_load_average()]
    for r in range(max(args.repeat, args.repeat_large)):     # rounds interleave sizes and modes
        for m in args.triangles:
            if r >= (args.repeat if m < 2.0 else args.repeat_large):
                continue
            for mode in args.modes:
                res = run_case(mode, files[m]["toml"][mode])
                results.setdefault((mode, m), []).append(res)
                per_tri = res["triangles"]
                print(f"  {mode:<5} {files[m]['tag']:>6}: load {res['load_s']:6.2f} s, build {res['build_s']:5.2f} s, "
                      f"cast {res['cast_s'] * 1e3:6.1f} ms, {(res['loaded'] - res['base']) / per_tri:5.0f} B/tri "
                      f"loaded, {(res['peak'] - res['base']) / per_tri:5.0f} B/tri peak",
                      file=sys.stderr, flush=True)
        loads.append(_load_average())

    def med(mode, m, key):
        rows = results[(mode, m)]
        if key in ("loaded", "peak", "peak_load", "built"):
            return statistics.median(r[key] - r["base"] for r in rows)
        return statistics.median(r[key] for r in rows)

    print(f"\nMedians of {args.repeat} round(s) ({args.repeat_large} from 2 M triangles); load average "
          f"(1, 5, 15 min) before and after each round: {' | '.join(loads)}")
    print("| triangles | parts | case | load [s] | load CPU [s] | reading [s] | checks [s] | BVHs [s] | cast [ms] | "
          "after load [B/tri] | peak of load [B/tri] | peak [B/tri] | load / one (wall / CPU) | peak / one |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in args.triangles:
        f = files[m]
        for mode in args.modes:
            ntri = results[(mode, m)][0]["triangles"]
            parts = results[(mode, m)][0]["objects"]
            ratio_t = ratio_m = "-"
            if "one" in args.modes:
                ratio_t = (f"{med(mode, m, 'load_s') / med('one', m, 'load_s'):.2f} / "
                           f"{med(mode, m, 'load_cpu_s') / med('one', m, 'load_cpu_s'):.2f}")
                ratio_m = f"{med(mode, m, 'peak') / med('one', m, 'peak'):.2f}"
            print(f"| {ntri:,} | {parts:,} | {mode} | {med(mode, m, 'load_s'):.2f} | "
                  f"{med(mode, m, 'load_cpu_s'):.2f} | "
                  f"{med(mode, m, 'validate_s'):.2f} | {med(mode, m, 'checks_s'):.2f} | "
                  f"{med(mode, m, 'build_s'):.2f} | {med(mode, m, 'cast_s') * 1e3:.0f} | "
                  f"{med(mode, m, 'loaded') / ntri:.0f} | {med(mode, m, 'peak_load') / ntri:.0f} | "
                  f"{med(mode, m, 'peak') / ntri:.0f} | {ratio_t} | {ratio_m} |")
        if "one" in args.modes and "parts" in args.modes:
            a, b = results[("one", m)][0], results[("parts", m)][0]
            same = a["hits"] == b["hits"] and a["hit_mask"] == b["hit_mask"]
            rel = abs(a["distance_sum_m"] - b["distance_sum_m"]) / max(a["distance_sum_m"], 1.0)
            print(f"  {f['tag']}: one {a['hits']:,} hits, parts {b['hits']:,} hits; same hit mask: {same}; "
                  f"sums of distances differ by {rel:.1e} (relative)", file=sys.stderr)
    if not all(r["peak_reset"] for rows in results.values() for r in rows):
        print("note: /proc/self/clear_refs refused; peaks include the imports' transients")
    if args.json:
        Path(args.json).write_text(json.dumps({f"{k[0]}@{k[1]}": v for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
