"""Peak memory per triangle and load / cast times of hifi against a raw embreex process.

Run from the repository root::

    python benchmarks/bench_memory.py                          # 0.1, 1, 3, 10 M triangles
    python benchmarks/bench_memory.py --sizes 0.1 1 --repeat 3
    python benchmarks/bench_memory.py --facets 2 3 4 --sizes 3 # MPI facets, larger rank / serial
    python benchmarks/bench_memory.py --facets 4 --group 2 --sizes 3 --modes caster   # facets=2 on 4 ranks
    python benchmarks/bench_memory.py --plot benchmarks/scaling.png

Every case runs in a fresh interpreter, so its peak RSS (``VmHWM``,
:func:`hifi.api.estimate.peak_rss_bytes`) is its own. The scene is a terrain of ``2 c^2``
triangles (:func:`hifi.api.meshes.terrain`, the BlenSor acre of side 63.6 m at ``63.6 / c`` m
spacing, amplitude 0.5 m) and one HDL-64E frame is cast from 2.3 m above its centre.

Cases:

- ``raw``: the minimal embreex process. The PLY file is read with trimesh
  (``trimesh.load(..., process=False)``), its vertices and faces taken as float32 / int32, the
  mesh dropped, then an ``embreex.rtcore_scene.EmbreeScene`` with one ``TriangleMesh`` casts the
  133,312 rays of one HDL-64E revolution (``benchmarks/_scene.py::hdl64e_rays``).
- ``file``: a user's run: a scenario naming the PLY file and an ``hdl64e_s2`` sensor at 10 Hz
  for 0.1 s (one frame), ``hifi.load`` then ``Simulation.run(out=None)``.
- ``gen``: the same scenario with ``mesh = "terrain"`` (the generator) instead of the file.
- ``caster``: ``hifi.load`` of the file scenario, then ``hifi.caster.RayCaster.cast`` of the raw
  case's rays (the scene and caster without the sensor model's working memory).
- ``caster_open3d`` (not run by default; needs open3d): the ``caster`` case with the Open3D
  backend (``benchmarks/_open3d_backend.py``; open3d is imported before the baseline, like the
  other libraries).

Memory is the peak RSS minus the process's RSS after its imports (numpy, trimesh, embreex;
for hifi also xarray, netCDF4 and the sensor models), divided by the triangles. The ratio
column is hifi / raw at the same size; ``slope`` is the least-squares growth of that memory per
triangle over the sizes, which removes the per-frame working memory that does not grow with
the scene. ``--facets`` runs ``mpirun -n N`` of the ``caster`` case with
:class:`mpi.caster.FacetCaster` and reports the largest rank's memory against the serial one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: Side of the terrain [m] (an acre, as benchmarks/_scene.py) and its amplitude [m].
SIDE_M = 63.6
AMPLITUDE_M = 0.5

#: Sensor height above the terrain's mean plane [m]: above every peak (0.5 m) by 1.8 m.
SENSOR_Z_M = 2.3

#: Maximum range of the raw and caster cases' rays [m] (the HDL-64E's 120 m).
MAX_RANGE_M = 120.0


def cells_for(mtri: float) -> int:
    """Grid cells per side giving about ``mtri`` million triangles (2 per cell)."""
    return max(2, round((mtri * 1e6 / 2.0) ** 0.5))


def scenario_dict(cells: int, mesh_file: str | None) -> dict:
    """The benchmark scenario: the terrain (file or generator) and one HDL-64E for one frame."""
    ground = {"name": "ground", "material": "ground"}
    if mesh_file is None:
        ground.update(mesh="terrain", size_m=[SIDE_M, SIDE_M], resolution_m=SIDE_M / cells,
                      amplitude_m=AMPLITUDE_M, seed=1)
    else:
        ground.update(mesh=mesh_file)
    return {
        "simulation": {"duration_s": 0.1, "seed": 1},
        "materials": {"ground": {"reflectivity": 0.3, "class": "ground"}},
        "objects": [ground],
        "sensors": [{"name": "lidar", "model": "hdl64e_s2", "rate_hz": 10.0,
                     "position_m": [0.0, 0.0, SENSOR_Z_M]}],
    }


def _status_bytes(field: str) -> int:
    """A memory field of ``/proc/self/status`` [B] (read here, not through hifi.api.estimate, so
    the raw embreex child imports nothing of hifi)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def rss_now() -> int:
    """Resident memory of this process now [B] (``VmRSS``)."""
    return _status_bytes("VmRSS")


def peak_now() -> int:
    """Peak resident memory of this process so far [B] (``VmHWM``)."""
    return _status_bytes("VmHWM")


# -- the children ----------------------------------------------------------------------------------

def _rays():
    sys.path.insert(0, str(HERE))
    from _scene import hdl64e_rays
    return hdl64e_rays([0.0, 0.0, SENSOR_Z_M])


def _child_raw(ply: str) -> dict:
    import gc

    import numpy as np
    import trimesh
    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh
    origins, directions, _ = _rays()
    o32, d32 = origins.astype(np.float32), directions.astype(np.float32)
    del origins, directions
    base = rss_now()
    t0 = time.perf_counter()
    mesh = trimesh.load(ply, process=False)
    vertices = np.ascontiguousarray(mesh.vertices, dtype=np.float32)
    faces = np.ascontiguousarray(mesh.faces, dtype=np.int32)
    del mesh
    gc.collect()
    t1 = time.perf_counter()
    scene = rtcore_scene.EmbreeScene()
    TriangleMesh(scene, vertices, faces)
    res = scene.run(o32, d32, dists=np.full(len(o32), MAX_RANGE_M, dtype=np.float32), output=1)
    t2 = time.perf_counter()
    return {"base": base, "peak": peak_now(), "load_s": t1 - t0, "cast_s": t2 - t1,
            "hits": int(np.count_nonzero(res["geomID"] >= 0)), "triangles": len(faces)}


def _import_hifi():
    """Everything a run imports, so the baseline holds the libraries and not the scene."""
    import netCDF4  # noqa: F401
    import xarray  # noqa: F401
    from embreex import rtcore_scene  # noqa: F401
    from embreex.mesh_construction import TriangleMesh  # noqa: F401

    import hifi  # noqa: F401
    import hifi.run.output  # noqa: F401
    import sensors.lidar  # noqa: F401


def _child_hifi(mode: str, toml: str, facets: bool, group: int = 0) -> dict:
    import numpy as np
    _import_hifi()
    if mode == "caster_open3d":
        import open3d  # noqa: F401       (the library's ~200 MB in the baseline, as embreex's)
    import hifi
    comm = None
    if facets:
        from mpi.runner import world
        comm = world()
        if group:                 # --partition facets=K: the ranks of a group of K share the facets
            world_comm, comm = comm, comm.Split(comm.Get_rank() // group, comm.Get_rank())
    rays = _rays() if mode.startswith("caster") else None
    base = rss_now()
    t0 = time.perf_counter()
    sim = hifi.load(toml)
    t1 = time.perf_counter()
    if mode.startswith("caster"):
        if comm is not None:
            from mpi.caster import FacetCaster
            caster = FacetCaster(sim.scene, comm).build()
        else:
            from hifi.caster import RayCaster
            if mode == "caster_open3d":
                from _open3d_backend import Open3DBackend
                caster = RayCaster(sim.scene, backend=Open3DBackend(sim.scene)).build()
            else:
                caster = RayCaster(sim.scene).build()
        # the compiled kernels load numba (hifi.kernels), about 100 MiB that does not grow with
        # the triangles: the fit's intercept, not its slope
        hits = caster.cast(rays[0], rays[1], 0.0, MAX_RANGE_M)
        n_hits = int(np.count_nonzero(hits.hit))
        caster.close()
    else:
        ds = sim.run(out=None, progress=False)["lidar"]
        n_hits = int(np.count_nonzero(np.isfinite(ds["range"].values))) if "range" in ds else -1
    t2 = time.perf_counter()
    out = {"base": base, "peak": peak_now(), "load_s": t1 - t0, "cast_s": t2 - t1, "hits": n_hits,
           "triangles": sum(o.n_faces for o in sim.scene.objects)}
    if comm is not None:
        if group:
            comm = world_comm
        out = comm.gather(out, root=0)
        if comm.Get_rank() != 0:
            sys.exit(0)
    return out


def _child(argv) -> None:
    mode, path = argv[0], argv[1]
    if mode == "raw":
        out = _child_raw(path)
    else:
        layout = argv[2] if len(argv) > 2 else ""
        out = _child_hifi(mode, path, facets=layout.startswith("facets"),
                          group=int(layout.split("=")[1]) if layout.startswith("facets=") else 0)
    print("RESULT " + json.dumps(out), flush=True)


# -- the parent ------------------------------------------------------------------------------------

def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _parse(stdout: str):
    line = [x for x in stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def run_case(mode: str, path: Path, n_ranks: int = 0, group: int = 0):
    """One case in a fresh interpreter (or ``n_ranks`` MPI ranks); its measurement dict(s)."""
    cmd = [sys.executable, __file__, "--child", mode, str(path)]
    if n_ranks:
        mpirun = Path(sys.executable).with_name("mpirun")
        cmd = [str(mpirun) if mpirun.is_file() else "mpirun", "-n", str(n_ranks), *cmd,
               f"facets={group}" if group else "facets"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=_env())
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return _parse(out.stdout)


def _toml(d: dict) -> str:
    """A TOML text of the benchmark scenario (flat enough to write by hand, no new dependency)."""
    def value(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)
    lines = ["[simulation]"] + [f"{k} = {value(v)}" for k, v in d["simulation"].items()]
    for name, m in d["materials"].items():
        lines += [f"[materials.{name}]"] + [f"{k} = {value(v)}" for k, v in m.items()]
    for o in d["objects"]:
        lines += ["[[objects]]"] + [f"{k} = {value(v)}" for k, v in o.items()]
    for s in d["sensors"]:
        lines += ["[[sensors]]"] + [f"{k} = {value(v)}" for k, v in s.items()]
    return "\n".join(lines) + "\n"


def write_size(tmp: Path, mtri: float) -> dict:
    """Write the terrain PLY and the two scenarios of one size; mode -> path."""
    from hifi.api.meshes import terrain
    cells = cells_for(mtri)
    ply = tmp / f"terrain_{cells}.ply"
    if not ply.exists():
        mesh = terrain([SIDE_M, SIDE_M], SIDE_M / cells, AMPLITUDE_M, seed=1)
        mesh.export(ply)
        del mesh
    paths = {"raw": ply}
    for mode, mesh_file in (("file", ply.name), ("gen", None)):
        p = tmp / f"{mode}_{cells}.toml"
        p.write_text(_toml(scenario_dict(cells, mesh_file)))
        paths[mode] = p
    paths["caster"] = paths["caster_open3d"] = paths["file"]
    return paths


def fit_slope(rows) -> float:
    """Least-squares growth of memory with triangles [B per triangle] (with an intercept)."""
    x = [r["triangles"] for r in rows]
    y = [r["peak"] - r["base"] for r in rows]
    if len(x) < 2:
        return float("nan")
    mx, my = statistics.fmean(x), statistics.fmean(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)


def main(argv) -> None:
    if argv[:1] == ["--child"]:
        return _child(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[0.1, 1.0, 3.0, 10.0],
                    help="million triangles")
    ap.add_argument("--modes", nargs="+", default=["raw", "file", "gen", "caster"])
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds (medians reported)")
    ap.add_argument("--facets", type=int, nargs="*", default=[], help="MPI ranks for the facets case")
    ap.add_argument("--group", type=int, default=0,
                    help="with --facets: groups of this many ranks share the facets (--partition facets=K)")
    ap.add_argument("--plot", default=None, help="write time and memory against triangles here (PNG)")
    ap.add_argument("--json", default=None, help="write the raw measurements here")
    ap.add_argument("--tmp", default=None, help="directory for the PLY files (kept)")
    ap.add_argument("--before", default=None, help="--json file of an earlier run, plotted dashed")
    ap.add_argument("--replot", default=None, help="only plot this --json file (with --plot, --before)")
    args = ap.parse_args(argv)
    if args.replot:
        return replot(args.replot, args.plot, args.before)
    tmp = Path(args.tmp or tempfile.mkdtemp(prefix="hifi_bench_memory_"))
    tmp.mkdir(parents=True, exist_ok=True)
    sizes = {m: write_size(tmp, m) for m in args.sizes}
    results: dict = {}
    for _ in range(args.repeat):                        # rounds interleave sizes and modes
        for m in args.sizes:
            for mode in args.modes:
                r = run_case(mode, sizes[m][mode])
                results.setdefault((mode, m), []).append(r)
                print(f"  {mode:<7} {m:>5} M: {(r['peak'] - r['base']) / r['triangles']:7.1f} B/tri, "
                      f"load {r['load_s']:6.2f} s, cast {r['cast_s']:6.2f} s", file=sys.stderr, flush=True)
            for n in args.facets:
                ranks = run_case("caster", sizes[m]["caster"], n, args.group)
                results.setdefault((f"facets{n}", m), []).append(ranks)

    def med(mode, m, key):
        rows = results[(mode, m)]
        if key == "mem":
            return statistics.median(r["peak"] - r["base"] for r in rows)
        return statistics.median(r[key] for r in rows)

    print("\nPeak RSS above the imports, per triangle [B], and times [s] (medians of "
          f"{args.repeat} round(s))")
    print("| triangles | case | peak above imports [MiB] | per triangle [B] | ratio to raw | load [s] | "
          "cast [s] |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for m in args.sizes:
        ntri = results[(args.modes[0], m)][0]["triangles"]
        raw = med("raw", m, "mem") if "raw" in args.modes else None
        for mode in args.modes:
            mem = med(mode, m, "mem")
            ratio = f"{mem / raw:.2f}" if raw else "-"
            print(f"| {ntri:,} | {mode} | {mem / 2**20:.0f} | {mem / ntri:.0f} | {ratio} | "
                  f"{med(mode, m, 'load_s'):.2f} | {med(mode, m, 'cast_s'):.2f} |")
    if len(args.sizes) > 1:
        print("\nGrowth per triangle (least squares over the sizes, every round) [B]:")
        slopes = {mode: fit_slope([r for m in args.sizes for r in results[(mode, m)]]) for mode in args.modes}
        for mode in args.modes:
            extra = f", {slopes[mode] / slopes['raw']:.2f}x raw" if "raw" in slopes else ""
            print(f"  {mode:<7} {slopes[mode]:6.1f}{extra}")
    if args.facets:
        print("\nMPI facets (caster case), peak above imports of the larger rank / serial")
        if args.group:
            print(f"(ranks in groups of {args.group} sharing the facets: --partition facets={args.group})")
        print("| triangles | ranks | serial [MiB] | largest rank [MiB] | smallest rank [MiB] | largest / serial |")
        print("|---:|---:|---:|---:|---:|---:|")
        for m in args.sizes:
            serial = med("caster", m, "mem")
            ntri = results[("caster", m)][0]["triangles"]
            for n in args.facets:
                big = statistics.median(max(r["peak"] - r["base"] for r in ranks) for ranks in results[(f"facets{n}", m)])
                small = statistics.median(min(r["peak"] - r["base"] for r in ranks)
                                          for ranks in results[(f"facets{n}", m)])
                print(f"| {ntri:,} | {n} | {serial / 2**20:.0f} | {big / 2**20:.0f} | {small / 2**20:.0f} | "
                      f"{big / serial:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({f"{k[0]}@{k[1]}": v for k, v in results.items()}, indent=1))
    if args.plot:
        before = None
        if args.before:
            raw = json.loads(Path(args.before).read_text())
            before = {(k.split("@")[0], float(k.split("@")[1])): v for k, v in raw.items()}
        plot(results, args.sizes, [m for m in args.modes], args.plot, before=before)
    return None


def replot(json_path: str, path: str, before_path: str | None = None) -> None:
    """The plot of an earlier run's ``--json`` file (and of a run before a change, dashed)."""
    def load(p):
        raw = json.loads(Path(p).read_text())
        return {(k.split("@")[0], float(k.split("@")[1])): v for k, v in raw.items()}
    results = load(json_path)
    sizes = sorted({m for mode, m in results if mode == "raw"})
    modes = [m for m in ("raw", "file", "gen", "caster") if (m, sizes[0]) in results]
    plot(results, sizes, modes, path, before=load(before_path) if before_path else None)


def plot(results: dict, sizes, modes, path, before: dict | None = None) -> None:
    """Time (load + cast) and memory above the imports against triangles, log-log; the hifi
    cases of ``before`` (an earlier run) dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.5))
    runs = [(results, "-", "")] + ([(before, "--", ", before")] if before else [])
    for run, style, tag in runs:
        for k, mode in enumerate(modes):
            if tag and mode == "raw":
                continue
            have = [m for m in sizes if (mode, m) in run]
            if not have:
                continue
            ntri = [run[(mode, m)][0]["triangles"] for m in have]
            t = [statistics.median(r["load_s"] + r["cast_s"] for r in run[(mode, m)]) for m in have]
            mem = [statistics.median(r["peak"] - r["base"] for r in run[(mode, m)]) / 2**20 for m in have]
            label = "raw embreex" if mode == "raw" else f"hifi {mode}{tag}"
            ax_t.loglog(ntri, t, style, marker="o", color=f"C{k}", label=label)
            ax_m.loglog(ntri, mem, style, marker="o", color=f"C{k}", label=label)
    ax_t.set(xlabel="triangles", ylabel="load + cast one HDL-64E frame [s]", title="time (busy 2-core machine)")
    ax_m.set(xlabel="triangles", ylabel="peak RSS above imports [MiB]", title="memory")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1:])
