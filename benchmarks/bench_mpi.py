"""Strong scaling of the MPI partitions on the 237,000-vertex benchmark scene.

Run from the repository root (it launches ``mpirun`` itself)::

    python benchmarks/bench_mpi.py                    # 1, 2, 3, 4 ranks, 5 scans per case
    python benchmarks/bench_mpi.py --ranks 1 2 --scans 10

Facets: every rank builds BVHs for its share (:func:`mpi.caster.vertex_order_shares`) of the 474,104 triangles
(:class:`mpi.caster.FacetCaster`) and casts all 133,312 rays of one HDL-64E revolution; one
reduction pair per cast step picks the global nearest hit. Time: every rank holds the whole
scene and casts ``scans / N`` of the revolutions (the time partition's unit of work is a
frame). Reported per case: median wall time of one scan (facets) or of the whole batch
divided by the scans (time), parallel efficiency ``T1 / (N TN)``, the largest per-rank
resident-memory growth of the BVH build, and the reduction bytes per rank per cast.
Ranks beyond ``nproc`` are oversubscribed (MPICH's Hydra allows it by default).

Whole runs (``--whole-run``): ``hifi run examples/crossing.toml --duration 8`` (1,592 frames)
as the serial netCDF run and under ``mpirun -n N --partition time`` (every rank writes its own
frames into the Zarr stores). Reported per case: the wall time from the process's start to the
last event (the latest rank's), the writing after it (until the last rank has written, then
rank 0 consolidating the stores and moving the directory into place), the whole command's wall
time, and the speed-up against one rank::

    python benchmarks/bench_mpi.py --whole-run --ranks 1 2 --duration 8

Sweeps (``--sweep V``): V seeds of ``examples/urban_canyon_seeds.toml`` as one sweep on each
number of ranks (rank r runs the variants r, r + N, ...), the wall time and the speed-up::

    python benchmarks/bench_mpi.py --sweep 32 --ranks 1 2 --duration 12

Facets and time together (``--modes facets=K``): groups of K ranks share the facets, the groups
the scans; the memory of a rank on a 3 M-triangle scene is ``bench_memory.py --group K``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Maximum range of the scan [m], as bench_caster.py.
MAX_RANGE_M = 120.0

_WORKER = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, {here!r})
from _scene import build_scene, hdl64e_rays
from hifi.caster import RayCaster
from mpi.runner import world
from mpi.caster import FacetCaster

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

mode, scans = sys.argv[1], int(sys.argv[2])
comm = world()
rank, size = comm.Get_rank(), comm.Get_size()
scene, pos = build_scene()
o, d, t = hdl64e_rays(pos)
threads = max(1, {nproc} // size)          # the cores shared out, as hifi would on a node
before = rss()
group = comm
if mode.startswith("facets="):                 # groups of K ranks share the facets, the groups the scans
    k = int(mode.split("=")[1])
    group = comm.Split(rank // k, rank)
if mode.startswith("facets"):
    caster = FacetCaster(scene, group, n_threads=threads).build()
else:
    caster = RayCaster(scene, n_threads=threads).build()
grown = rss() - before
caster.cast(o, d, 0.0, {max_range})         # warm-up
times = []
if mode == "facets":
    for _ in range(scans):
        comm.Barrier(); t0 = time.perf_counter()
        h = caster.cast(o, d, 0.0, {max_range})
        comm.Barrier(); times.append(time.perf_counter() - t0)
    per_scan = statistics.median(times)
    hits = int(np.sum(h.object_id >= 0))
    step_bytes = caster.reduced_bytes / max(caster.n_steps, 1)
elif mode.startswith("facets="):
    groups = size // group.Get_size()
    mine = range(rank // group.Get_size(), scans, groups)
    comm.Barrier(); t0 = time.perf_counter()
    for _ in mine:
        h = caster.cast(o, d, 0.0, {max_range})
    comm.Barrier(); per_scan = (time.perf_counter() - t0) / scans
    hits = int(np.sum(h.object_id >= 0))
    step_bytes = caster.reduced_bytes / max(caster.n_steps, 1)
else:
    mine = range(rank, scans, size)
    comm.Barrier(); t0 = time.perf_counter()
    for _ in mine:
        h = caster.cast(o, d, 0.0, {max_range})
    comm.Barrier(); per_scan = (time.perf_counter() - t0) / scans
    hits = int(np.sum(h.object_id >= 0))
    step_bytes = 0
rows = comm.gather((grown, caster.n_triangles), root=0)
if rank == 0:
    print(json.dumps({{"mode": mode, "ranks": size, "threads": threads, "per_scan_s": per_scan,
                      "hits": hits, "max_rss_mb": max(r[0] for r in rows) / 1e6,
                      "triangles_per_rank": max(r[1] for r in rows),
                      "reduction_bytes_per_step": step_bytes}}))
"""


#: What both whole-run workers do first: note, on every process, when its writing phase starts
#: (after its last event).
_MARK_LAST_EVENT = r"""
import json, sys, time
t0 = time.monotonic()
from hifi.runtime import progress
marks = {{}}
_start_writing = progress.Progress.start_writing
def start_writing(self, *a, **k):
    marks.setdefault("last_event", time.monotonic() - t0)
    return _start_writing(self, *a, **k)
progress.Progress.start_writing = start_writing
"""

#: The whole-run worker: ``hifi run``'s partitioned runner with two instants noted on every
#: rank (the start of the writing phase, after the last event; the end of this rank's writing)
#: and gathered on rank 0.
_RUN_WORKER = _MARK_LAST_EVENT + r"""
import mpi.runner as runner
_written = runner.Partition.written
def written(self):
    marks["written"] = time.monotonic() - t0
    return _written(self)
runner.Partition.written = written
scenario, out, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
res = runner.run_time(scenario, out=out, duration_s=duration, progress=False)
done = time.monotonic() - t0
comm = runner.world()
rows = comm.gather(marks, root=0)
if comm.Get_rank() == 0:
    print(json.dumps({{"last_event_s": max(r["last_event"] for r in rows),
                      "written_s": max(r["written"] for r in rows), "done_s": done}}))
"""

#: The serial netCDF run, with the same instant noted.
_SERIAL_WORKER = _MARK_LAST_EVENT + r"""
import hifi
hifi.load(sys.argv[1]).run_to_files(sys.argv[2], duration_s=float(sys.argv[3]), progress=False)
print(json.dumps({{"last_event_s": marks["last_event"], "written_s": time.monotonic() - t0,
                  "done_s": time.monotonic() - t0}}))
"""


def run_whole(ranks: int, duration_s: float, scenario: Path) -> dict:
    """One whole run of ``scenario`` (0 ranks: the serial netCDF run, no MPI); wall times [s]."""
    import shutil
    import tempfile
    import time
    env = {k: v for k, v in os.environ.items() if k not in ("PMI_SIZE", "PMI_RANK")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), *filter(None, [env.get("PYTHONPATH")])])
    work = Path(tempfile.mkdtemp(prefix="bench_mpi_"))
    try:
        out = work / "out"
        if ranks == 0:
            cmd = [sys.executable, "-c", _SERIAL_WORKER.format(), str(scenario), str(out), str(duration_s)]
        else:
            cmd = [_mpirun(), "-n", str(ranks), sys.executable, "-c", _RUN_WORKER.format(), str(scenario),
                   str(out), str(duration_s)]
        t = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.monotonic() - t
        if r.returncode != 0:
            raise RuntimeError(f"whole run on {ranks} ranks failed:\n{r.stderr}")
        row = json.loads(r.stdout.strip().splitlines()[-1])
        files = [p for p in out.rglob("*") if p.is_file()]
        row.update(ranks=ranks, total_s=wall, bytes=sum(p.stat().st_size for p in files), files=len(files))
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def whole_table(rows: list) -> str:
    """The whole-run table (Markdown): each case's times and its speed-up against 1 rank."""
    one = next((r for r in rows if r["ranks"] == 1), rows[0])
    lines = ["| case | last event at [s] | writing after it [s] | total [s] | speed-up (total, vs 1 rank) | written |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        case = "serial netCDF (no MPI)" if r["ranks"] == 0 else f"{r['ranks']} rank{'s' if r['ranks'] > 1 else ''}"
        lines.append(f"| {case} | {r['last_event_s']:.1f} | {r['written_s'] - r['last_event_s']:.2f} | "
                     f"{r['total_s']:.1f} | {one['total_s'] / r['total_s']:.2f}x | "
                     f"{r['bytes'] / 2**20:.0f} MiB in {r['files']} files |")
    return "\n".join(lines)


def run_sweep_case(ranks: int, variants: int, duration_s: float) -> dict:
    """``examples/urban_canyon_seeds.toml`` cut to its first ``variants`` seeds, run as a sweep on
    ``ranks`` processes (rank r runs the variants r, r + N, ...); wall time [s]."""
    import re
    import shutil
    import tempfile
    import time
    text = (HERE.parent / "examples" / "urban_canyon_seeds.toml").read_text(encoding="utf-8")
    seeds = ", ".join(str(i) for i in range(1, variants + 1))
    text = re.sub(r"^seed = \[[^\]]*\]", f"seed = [{seeds}]", text, count=1, flags=re.M | re.S)
    work = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    try:
        path = HERE.parent / "examples" / f".bench_sweep_{os.getpid()}.toml"   # beside its data files
        path.write_text(text, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("PMI_SIZE", "PMI_RANK")}
        cmd = [sys.executable, "-m", "hifi.cli", "run", str(path), "--out", str(work / "out"), "--duration",
               str(duration_s), "--no-progress"]
        if ranks > 1:
            cmd = [_mpirun(), "-n", str(ranks), *cmd]
        t = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.monotonic() - t
        if r.returncode != 0:
            raise RuntimeError(f"sweep on {ranks} ranks failed:\n{r.stderr}")
        return {"ranks": ranks, "variants": variants, "total_s": wall}
    finally:
        path.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def _mpirun() -> str:
    beside = Path(sys.executable).with_name("mpirun")
    return str(beside) if beside.is_file() else "mpirun"


def run_case(mode: str, ranks: int, scans: int) -> dict:
    code = _WORKER.format(here=str(HERE), nproc=os.cpu_count() or 1, max_range=MAX_RANGE_M)
    env = {k: v for k, v in os.environ.items() if k not in ("PMI_SIZE", "PMI_RANK")}
    r = subprocess.run([_mpirun(), "-n", str(ranks), sys.executable, "-c", code, mode, str(scans)],
                       capture_output=True, text=True, env=env, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{mode} on {ranks} ranks failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 3, 4])
    p.add_argument("--scans", type=int, default=5, help="revolutions per case")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--modes", nargs="+", default=["facets", "time"],
                   help="facets, time, facets=K (groups of K ranks share the facets, the groups the scans)")
    p.add_argument("--whole-run", action="store_true",
                   help="whole runs of examples/crossing.toml: serial, then mpirun -n N --partition time")
    p.add_argument("--duration", type=float, default=8.0, help="simulated span of a whole run [s]")
    p.add_argument("--repeat", type=int, default=1, help="whole runs per case (the fastest is shown)")
    p.add_argument("--sweep", type=int, default=0, metavar="V",
                   help="a sweep of V seeds of examples/urban_canyon_seeds.toml on each of --ranks")
    args = p.parse_args(argv)
    if args.sweep:
        rows = [run_sweep_case(n, args.sweep, args.duration) for n in args.ranks]
        one = rows[0]["total_s"]
        print(f"nproc = {os.cpu_count()}; {args.sweep} variants of examples/urban_canyon_seeds.toml, "
              f"--duration {args.duration:g}\n")
        print("| ranks | total [s] | per variant [s] | speed-up |\n|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['ranks']} | {r['total_s']:.1f} | {r['total_s'] / args.sweep:.2f} | {one / r['total_s']:.2f}x |")
        return 0
    if args.whole_run:
        scenario = HERE.parent / "examples" / "crossing.toml"
        rows = []
        for n in [0, *args.ranks]:
            tries = [run_whole(n, args.duration, scenario) for _ in range(args.repeat)]
            rows.append(min(tries, key=lambda r: r["total_s"]))
        print(f"nproc = {os.cpu_count()}; examples/crossing.toml --duration {args.duration:g}\n")
        print(whole_table(rows))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    p_modes = args.modes
    results = []
    for mode in p_modes:
        for n in args.ranks:
            if mode.startswith("facets=") and n % int(mode.split("=")[1]):
                continue
            results.append(run_case(mode, n, args.scans))
    print(f"nproc = {os.cpu_count()}; {args.scans} HDL-64E revolutions (133,312 rays) per case\n")
    print("| mode | ranks | threads/rank | time per scan [ms] | speed-up | parallel efficiency "
          "| triangles per rank | BVH memory per rank [MB] | reduction bytes per rank per step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in p_modes:
        rows = [r for r in results if r["mode"] == mode]
        if not rows:
            continue
        # against one rank of the same mode; facets=K (never one rank) against one rank of time
        same = [r for r in rows if r["ranks"] == min(args.ranks)]
        serial = [r for r in results if r["mode"] == "time" and r["ranks"] == min(args.ranks)]
        base = (same or serial or rows)[0]["per_scan_s"]
        for r in rows:
            speed = base / r["per_scan_s"] * min(args.ranks)
            over = " (oversubscribed)" if r["ranks"] > (os.cpu_count() or 1) else ""
            print(f"| {mode} | {r['ranks']}{over} | {r['threads']} | {1e3 * r['per_scan_s']:.1f} | "
                  f"{speed:.2f} | {speed / r['ranks']:.2f} | {r['triangles_per_rank']} | "
                  f"{r['max_rss_mb']:.1f} | {r['reduction_bytes_per_step']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
