"""Divergent-beam memory: peak memory and time of one HDL-64E S2 frame.

Scenes (scenario dict API): a 200 x 200 m ground plane, a wall 40 m wide and 20 m high at
x = 30 m facing the sensor, and in the ``pole`` scene a 5 cm diameter, 4 m high pole 1 m in
front of the sensor (x = 1 m). The ``hdl64e_s2`` sits 1.9 m above the ground and runs one frame
(``rate_hz = 10``, ``duration_s = 0.1``) with ``n_subrays`` = 1 (pencil beam) and more.
A sub-ray on the pole and one on the wall or the ground far behind it give a pulse whose
echoes are tens of metres apart.

Every case runs in a fresh subprocess, so one case's peak does not hide another's. Reported
per case: the process's peak resident set size (``ru_maxrss``: interpreter, imports, scene,
BVH and the frame), the peak of the Python/numpy allocations during ``sim.run`` (tracemalloc;
numpy reports its buffers to it) and the wall time of ``sim.run``: the median over ``--repeat``
further subprocesses without tracemalloc (tracing slows allocation-heavy code); their peak RSS
is the one reported. Ratios are to the pencil beam of the same scene.

    python benchmarks/bench_beam_memory.py [--subrays 1 4 16] [--scenes open pole] [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MIB = 2.0**20


def scenario(scene: str, n_subrays: int) -> dict:
    """The benchmark scenario: ground + wall at 30 m (+ a 5 cm pole at 1 m for ``pole``)."""
    objects = [
        {"name": "ground", "mesh": "plane", "size_m": [200, 200], "material": "asphalt"},
        {"name": "wall", "mesh": "plane", "size_m": [20, 40], "material": "concrete",
         "position_m": [30.0, 0.0, 10.0], "rpy_deg": [0, -90, 0]},
    ]
    if scene == "pole":
        objects.append({"name": "pole", "mesh": "cylinder", "radius_m": 0.025, "height_m": 4.0,
                        "material": "metal", "position_m": [1.0, 0.0, 2.0]})
    return {
        "simulation": {"duration_s": 0.1, "seed": 0},
        "materials": {"asphalt": {"reflectivity": 0.15, "class": "road"},
                      "concrete": {"reflectivity": 0.35, "class": "building"},
                      "metal": {"reflectivity": 0.5, "class": "pole"}},
        "objects": objects,
        "sensors": [{"name": "velo", "model": "hdl64e_s2", "rate_hz": 10.0, "position_m": [0, 0, 1.9],
                     "params": {"n_subrays": n_subrays}}],
    }


def run_case(scene: str, n_subrays: int, trace: bool) -> dict:
    """One frame in this process; returns peak memory and time."""
    import resource
    import tracemalloc

    import hifi

    sim = hifi.Simulation.from_dict(scenario(scene, n_subrays), base_dir=".")
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    out = sim.run(out=None, progress=False)
    dt = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] if trace else float("nan")
    if trace:
        tracemalloc.stop()
    ds = out["velo"]
    return {"scene": scene, "n_subrays": n_subrays, "frames": int(ds.sizes["frame"]),
            "pulses": int(ds.sizes["step"] * ds.sizes["laser"]),
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MIB,
            "traced_mib": traced / MIB, "time_s": dt}


def _subprocess(scene: str, n: int, trace: bool) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--case", scene, str(n)] + (["--trace"] if trace else [])
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subrays", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--scenes", nargs="+", default=["open", "pole"], choices=["open", "pole"])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per case (median)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--case", nargs=2, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(args.case[0], int(args.case[1]), args.trace)))
        return 0
    rows = []
    for scene in args.scenes:
        pencil = None
        for n in sorted(set([1] + args.subrays)):
            mem = _subprocess(scene, n, trace=True)
            timed = [_subprocess(scene, n, trace=False) for _ in range(max(1, args.repeat))]
            row = {**mem, "time_s": float(np.median([t["time_s"] for t in timed])),
                   "rss_untraced_mib": max(t["rss_mib"] for t in timed)}
            pencil = pencil or row
            row["rss_ratio"] = row["rss_untraced_mib"] / pencil["rss_untraced_mib"]
            row["traced_ratio"] = row["traced_mib"] / pencil["traced_mib"]
            row["time_ratio"] = row["time_s"] / pencil["time_s"]
            rows.append(row)
            print(f"  {scene} n_subrays={n}: {row['rss_untraced_mib']:.0f} MiB, {row['time_s']:.2f} s",
                  file=sys.stderr, flush=True)
    print(f"machine: {os.cpu_count()} cores; one hdl64e_s2 frame per case, each run in a fresh process; "
          f"time: median of {max(1, args.repeat)} runs")
    print()
    print("| case | n_subrays | pulses | peak RSS [MiB] | ratio to pencil | peak numpy (tracemalloc) [MiB] "
          "| ratio to pencil | time [s] | ratio to pencil |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['scene']} | {r['n_subrays']} | {r['pulses']} | {r['rss_untraced_mib']:.0f} | "
              f"{r['rss_ratio']:.2f} | {r['traced_mib']:.0f} | {r['traced_ratio']:.2f} | {r['time_s']:.2f} | "
              f"{r['time_ratio']:.2f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
