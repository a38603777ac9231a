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
if mode == "facets":
    caster = FacetCaster(scene, comm, n_threads=threads).build()
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
    args = p.parse_args(argv)
    results = []
    for mode in ("facets", "time"):
        for n in args.ranks:
            results.append(run_case(mode, n, args.scans))
    print(f"nproc = {os.cpu_count()}; {args.scans} HDL-64E revolutions (133,312 rays) per case\n")
    print("| mode | ranks | threads/rank | time per scan [ms] | speed-up | parallel efficiency "
          "| triangles per rank | BVH memory per rank [MB] | reduction bytes per rank per step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in ("facets", "time"):
        rows = [r for r in results if r["mode"] == mode]
        base = next(r["per_scan_s"] for r in rows if r["ranks"] == min(args.ranks))
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
