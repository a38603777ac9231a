"""Benchmark of the gps_l1 receiver: one hour at 1 Hz in the crossing scene.

Run from the repository root::

    python benchmarks/bench_gnss.py                 # 3 repetitions, markdown table
    python benchmarks/bench_gnss.py --repeat 5 --json out/bench_gnss.json

The scene is ``examples/crossing.toml`` with its sensors replaced by one ``gps_l1`` receiver on
the roof of ``car_1`` (1.9 m), the nav file shipped with the urban canyon example, the start
moved into its validity (2005-04-02 00:00 UTC) and the origin moved to the station that logged
it (GEONET 0759, Japan: the file holds only the satellites that station saw, so from the
crossing's Austrian origin fewer than three would be above the mask); ``car_2``, which drives for the first second of
the example, stands at its start so that raw embreex can cast the same rays against the same
triangles in one BVH.  Every ray the receiver casts (one per satellite above the mask and
epoch for blockage; the fan and the two legs of each candidate reflection for multipath) goes
through :meth:`hifi.caster.RayCaster.nearest`; a recording caster times those calls and keeps
the rays, which raw embreex (float32 inputs prepared in advance, two threads, one call per
recorded batch as hifi made them) then casts again.  The receiver is timed twice: a whole
``Simulation.run`` (frames written to netCDF by hifi's FrameWriter, as ``hifi run`` does) and a
run with ``write=False`` (the model alone: terms, casting, solver, budget).  Medians over
``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hifi  # noqa: E402
from bench_caster import _raw_embree  # noqa: E402
from hifi.caster import RayCaster  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DURATION_S = 3600.0


class RecordingCaster(RayCaster):
    """A RayCaster that times its ``nearest`` calls and keeps the rays (first run only)."""

    def __init__(self, *a, record=True, **kw):
        super().__init__(*a, **kw)
        self.record = record
        self.batches = []
        self.seconds = 0.0
        self.rays = 0

    def nearest(self, origins, directions, times, max_distance):
        t0 = time.perf_counter()
        out = super().nearest(origins, directions, times, max_distance)
        self.seconds += time.perf_counter() - t0
        self.rays += origins.shape[0]
        if self.record:
            self.batches.append((origins.copy(), directions.copy(), np.asarray(max_distance, float).copy(),
                                 out[0].copy(), out[1].copy()))
        return out


def scenario(name: str = "crossing") -> dict:
    """The benchmark scenario: "crossing" (see the module notes) or "canyon": the urban canyon
    example with its car parked for the hour at y = -30 m, between the two tallest buildings,
    so that blockage and the multipath search run at every epoch."""
    if name == "canyon":
        d = tomllib.loads((REPO / "examples" / "urban_canyon.toml").read_text())
        d["simulation"]["duration_s"] = DURATION_S
        d["output"] = {"motion_rate_hz": 1.0}
        for obj in d["objects"]:
            if obj["name"] == "car":
                obj.pop("track")
                obj["position_m"], obj["rpy_deg"] = [2.0, -30.0, 0.0], [0, 0, 90]
        d["sensors"][0]["params"]["nav_file"] = str(REPO / "examples" / "data" / "07590920.05n")
        return d
    d = tomllib.loads((REPO / "examples" / "crossing.toml").read_text())
    d["simulation"]["duration_s"] = DURATION_S
    d["simulation"]["start_utc"] = "2005-04-02T00:00:00Z"
    d["simulation"]["origin"] = {"lat_deg": 35.1608750388, "lon_deg": 139.6138372528, "height_m": 70.153}
    d["output"] = {"motion_rate_hz": 1.0}
    for obj in d["objects"]:
        if obj["name"] == "car_2":
            first = obj.pop("track")[0]
            obj["position_m"], obj["rpy_deg"] = first["position_m"], first["rpy_deg"]
    d["sensors"] = [{"name": "gps", "model": "gps_l1", "rate_hz": 1.0, "parent": "car_1",
                     "position_m": [0.0, 0.0, 1.9],
                     "params": {"nav_file": str(REPO / "examples" / "data" / "07590920.05n")}}]
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions (default 3)")
    ap.add_argument("--scene", choices=("crossing", "canyon"), default="crossing")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    print(f"hifi {hifi.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
          f"{os.cpu_count()} cores")
    d = scenario(args.scene)
    print(f"scene: {args.scene}")
    sim = hifi.Simulation.from_dict(d, base_dir=REPO / "examples")

    runs = []
    recorded = None
    for k in range(args.repeat + 1):              # run 0: warm-up that records the rays
        caster = RecordingCaster(sim.scene, n_threads=2, record=(k == 0))
        caster.build()
        t0 = time.perf_counter()
        res = sim.run(out=None, progress=False, caster=caster)
        total = time.perf_counter() - t0
        if k == 0:
            recorded, result = caster, res["gps"]
            continue
        nowrite = RecordingCaster(sim.scene, n_threads=2, record=False)
        nowrite.build()
        t0 = time.perf_counter()
        sim.run(out=None, progress=False, caster=nowrite, write=False)
        model = time.perf_counter() - t0
        runs.append((total, model, nowrite.seconds))
    n_rays = recorded.rays
    vis = int(result["visible"].values.sum())
    print(f"{result.sizes['frame']} epochs, {vis} satellite-epochs above the mask, "
          f"{int(result['blocked'].values.sum())} blocked, {int(result['reflected'].values.sum())} reflected; "
          f"{n_rays} rays in {len(recorded.batches)} nearest() calls")

    # raw embreex on the same rays, batch by batch, two threads
    es, centre, _ = _raw_embree(sim.scene)
    batches = []
    for o, dvec, tmax, dist_hifi, obj_hifi in recorded.batches:
        o32 = np.ascontiguousarray(o - centre, dtype=np.float32)
        d32 = np.ascontiguousarray(dvec, dtype=np.float32)
        t32 = np.where(np.isfinite(tmax), tmax, np.finfo(np.float32).max).astype(np.float32)
        batches.append((o32, d32, t32, dist_hifi, obj_hifi))
    pool = ThreadPoolExecutor(2)

    def raw_all(keep=False):
        results = []
        for o32, d32, t32, _, _ in batches:
            t = t32.copy()
            n = o32.shape[0]
            if n >= 4096:
                h = n // 2
                parts = list(pool.map(lambda s: es.run(o32[s], d32[s], dists=t[s], output=1),
                                      [slice(0, h), slice(h, n)]))
                r = {k: np.concatenate([p[k] for p in parts]) for k in ("geomID", "tfar")}
            else:
                r = es.run(o32, d32, dists=t, output=1)
            if keep:
                results.append(r)
        return results

    raw_times = []
    ref = raw_all(keep=True)
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        raw_all()
        raw_times.append(time.perf_counter() - t0)
    pool.shutdown()
    same_hit = all(np.array_equal(r["geomID"] >= 0, np.isfinite(b[3])) for r, b in zip(ref, batches))
    same_obj = all(np.array_equal(np.where(r["geomID"] >= 0, r["geomID"], -1), b[4]) for r, b in zip(ref, batches))
    print(f"check: raw embreex gives the same hit mask {same_hit} and object ids {same_obj} on every batch")

    total = statistics.median(r[0] for r in runs)
    model = statistics.median(r[1] for r in runs)
    cast = statistics.median(r[2] for r in runs)
    raw = statistics.median(raw_times)
    rows = [
        (f"{args.scene}: hifi run, 1 h at 1 Hz, frames written to netCDF", n_rays, total, total / raw),
        ("the same without writing (gps_l1 model alone)", n_rays, model, model / raw),
        ("  of which hifi RayCaster.nearest", n_rays, cast, cast / raw),
        ("  of which gnss terms, solver, error budget, frames", 0, model - cast, float("nan")),
        ("raw embreex, 2 threads, same rays and batches", n_rays, raw, 1.0),
    ]
    print()
    print("| case | rays | median time [s] | ratio to raw embreex |")
    print("|---|---:|---:|---:|")
    for name, n, tsec, ratio in rows:
        print(f"| {name} | {n if n else ''} | {tsec:.3f} | {'' if np.isnan(ratio) else f'{ratio:.1f}'} |")
    print(f"\nsimulated / wall-clock time: {DURATION_S / total:.0f}x with output, {DURATION_S / model:.0f}x model alone")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "runs": runs, "raw_times": raw_times,
                                         "rays": n_rays, "same_hit": same_hit, "same_object": same_obj}, indent=2))
    return 0 if (same_hit and same_obj) else 1


if __name__ == "__main__":
    sys.exit(main())
