"""Benchmark of the ccd_camera: one 1920 x 1080 RGB frame of the crossing scene.

The camera of ``examples/crossing.toml`` (on car_1, 1.0 m ahead of its centre, 1.4 m up) at
1920 x 1080 pixels of 5.86 um behind an 8 mm f/8 lens (70 deg across), IMX174 sensor with a
Bayer filter, every Seidel term non-zero (field-dependent PSF on 8 x 8 tiles plus distortion)
and the sensor noise. One frame is timed as a whole model step and split into the ray casting
(primary rays, then shadow rays towards the sun) and the rest (sunlight, shading, camera
equation, optics, sensor, dataset variables). The split is measured from outside the model: the
model casts through a wrapper around hifi's caster (``_TimedCaster``) that clocks each
``cast`` call, so the model itself carries no timers. The very rays the model cast are then
replayed through raw embreex on two threads (scene triangles at t = 0, float32 inputs prepared
before the clock starts, as in ``bench_caster.py``) and through hifi's caster alone.

    python benchmarks/bench_ccd.py [--repeat N] [--json FILE]
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

from bench_caster import _cpu_model, _raw_embree  # noqa: E402

import hifi  # noqa: E402
from hifi.api.bus import MessageBus  # noqa: E402
from hifi.caster import RayCaster  # noqa: E402
from hifi.api.model import RunContext  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "crossing.toml"

CAMERA = {
    "name": "camera", "model": "ccd_camera", "parent": "car_1", "position_m": [1.0, 0.0, 1.4],
    "params": {"resolution_x": 1920, "resolution_y": 1080, "pixel_pitch_m": 5.86e-6,
               "focal_length_m": 8.0e-3, "f_number": 8.0, "exposure_s": 1.0e-3,
               "preset": "pointgrey_grasshopper3_imx174", "W040": 0.5, "W131": 1.0,
               "W222": 0.5, "W220": 0.5, "W311": 2.0, "psf_tiles": 8},
}


class _TimedCaster:
    """Wraps a caster: clocks every ``cast`` call and, while ``record`` is on, keeps its rays.

    The ccd_camera casts twice per frame, the primary rays first (through ``Sensor.cast``) and
    then the shadow rays towards the sun, so ``calls[0]`` / ``calls[1]`` of one step are those
    two. Only the wrapped ``cast`` is inside the clock; copying the rays is not.
    """

    def __init__(self, caster):
        self.caster = caster
        self.record = False
        self.rays = []
        self.calls = []   # (wall-clock seconds, number of rays) per cast of the current step

    def cast(self, origins, directions, times=0.0, max_range_m=np.inf):
        t0 = time.perf_counter()
        hits = self.caster.cast(origins, directions, times, max_range_m)
        self.calls.append((time.perf_counter() - t0, len(origins)))
        if self.record:
            self.rays.append((np.asarray(origins, float).copy(),
                              np.asarray(directions, float).copy(), max_range_m))
        return hits

    def close(self):
        self.caster.close()

    def __getattr__(self, name):
        # Everything else (secondary_offset_m, scene, build ...) is the wrapped caster's.
        return getattr(self.caster, name)


def _timed_step(model, timed):
    """One model step(0, 0.0), timed whole and split by the caster wrapper's clocks [s]."""
    timed.calls.clear()
    t0 = time.perf_counter()
    frame = model.step(0, 0.0)
    total = time.perf_counter() - t0
    (primary_s, primary_n), (shadow_s, shadow_n) = (timed.calls + [(0.0, 0), (0.0, 0)])[:2]
    return frame, {"total": total, "primary_cast": primary_s, "shadow_cast": shadow_s,
                   "primary_rays": float(primary_n), "shadow_rays": float(shadow_n)}


def _raw_runner(es, centre, pool, rays):
    """A function casting ``rays`` through raw embreex on two threads (inputs prepared here)."""
    o, d, max_range = rays
    n = len(o)
    o32 = np.ascontiguousarray(o - centre, dtype=np.float32)
    d32 = np.ascontiguousarray(d / np.linalg.norm(d, axis=1, keepdims=True), dtype=np.float32)
    limit = np.broadcast_to(np.asarray(max_range, dtype=float), (n,))
    tfar = np.ascontiguousarray(np.where(np.isfinite(limit), limit, np.finfo(np.float32).max),
                                dtype=np.float32)
    half = n // 2
    parts = [(0, half), (half, n)]
    buf = {}

    def prepare():
        buf["t"] = tfar.copy()

    def run():
        t = buf["t"]
        return list(pool.map(lambda ab: es.run(o32[ab[0]:ab[1]], d32[ab[0]:ab[1]],
                                               dists=t[ab[0]:ab[1]], output=1), parts))
    return prepare, run


def _median_time(fn, repeat, prepare=None):
    times = []
    for k in range(repeat + 1):
        if prepare is not None:
            prepare()
        t0 = time.perf_counter()
        fn()
        if k:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed repetitions (default 5)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    with open(EXAMPLE, "rb") as fh:
        d = tomllib.load(fh)
    d["sensors"] = [CAMERA]
    sim = hifi.Simulation.from_dict(d, base_dir=EXAMPLE.parent)
    sc = sim.scenario
    scene = sim.scene
    caster = RayCaster(scene, n_threads=2).build()
    rec = _TimedCaster(caster)
    model = sim.models[0]
    model.setup(RunContext(scene, rec, MessageBus(), sc.seed, sc.duration_s, sc.start_utc,
                           dict(sc.origin), sc.base_dir))
    print(f"hifi {hifi.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
          f"{os.cpu_count()} cores, {_cpu_model()}")
    n_tri = sum(len(o.faces) for o in scene.objects)
    print(f"scene: examples/crossing.toml, {len(scene.objects)} objects, {n_tri} triangles; "
          f"camera 1920 x 1080 RGB, optics margin {model._margin} px; "
          f"{args.repeat} repetitions after 1 warm-up, median reported")

    rec.record = True
    frame, _ = _timed_step(model, rec)               # warm-up; records the rays
    rec.record = False
    primary, shadow = rec.rays[0], rec.rays[1]
    steps = [_timed_step(model, rec)[1] for _ in range(args.repeat)]
    med = {k: statistics.median(s[k] for s in steps) for k in ("total", "primary_cast", "shadow_cast")}
    med["rest"] = statistics.median(s["total"] - s["primary_cast"] - s["shadow_cast"] for s in steps)

    es, centre, _ = _raw_embree(scene)
    pool = ThreadPoolExecutor(2)
    rows = []
    for label, rays, hifi_key in (("primary", primary, "primary_cast"), ("shadow", shadow, "shadow_cast")):
        prepare, raw = _raw_runner(es, centre, pool, rays)
        raw_med, raw_min = _median_time(raw, args.repeat, prepare)
        cast_med, cast_min = _median_time(lambda: caster.cast(rays[0], rays[1], 0.0, rays[2]), args.repeat)
        prepare()
        r = raw()
        raw_ids = np.concatenate([x["geomID"] for x in r])
        hits = caster.cast(rays[0], rays[1], 0.0, rays[2])
        agree = float(np.mean((raw_ids >= 0) == hits.hit))
        rows.append({"rays": label, "n": len(rays[0]), "raw_2t_s": raw_med, "raw_2t_min_s": raw_min,
                     "hifi_cast_s": cast_med, "hifi_cast_min_s": cast_min,
                     "in_model_s": med[hifi_key], "hit_mask_agreement": agree})
    pool.shutdown()
    rec.close()

    image = frame["image"].data
    print(f"frame: image {image.shape} {image.dtype}, mean DN {image.mean(axis=(0, 1)).round(1)}, "
          f"sunlit fraction {float(frame['sunlit_fraction'].data):.3f}")
    print()
    print("| part of one frame | rays | hifi, in the model step [ms] | hifi caster alone [ms] "
          "| raw embreex 2 threads [ms] | in-model / raw |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['rays']} rays | {r['n']} | {r['in_model_s'] * 1e3:.0f} | {r['hifi_cast_s'] * 1e3:.0f} "
              f"| {r['raw_2t_s'] * 1e3:.0f} | {r['in_model_s'] / r['raw_2t_s']:.2f} |")
    cast_total = med["primary_cast"] + med["shadow_cast"]
    raw_total = sum(r["raw_2t_s"] for r in rows)
    print(f"| ray casting (primary + shadow) | {sum(r['n'] for r in rows)} | {cast_total * 1e3:.0f} "
          f"| {sum(r['hifi_cast_s'] for r in rows) * 1e3:.0f} | {raw_total * 1e3:.0f} "
          f"| {cast_total / raw_total:.2f} |")
    print(f"| the rest (sun, shading, camera equation, optics, sensor) | | {med['rest'] * 1e3:.0f} | | | |")
    print(f"| **whole frame** | | **{med['total'] * 1e3:.0f}** | | | {med['total'] / raw_total:.2f} |")
    print()
    print("hit-mask agreement hifi vs raw embreex: " + "; ".join(
        f"{r['rays']} {r['hit_mask_agreement'] * 100:.3f} %" for r in rows))
    print("fastest runs [ms]: " + "; ".join(
        f"{r['rays']}: raw {r['raw_2t_min_s'] * 1e3:.0f}, hifi caster {r['hifi_cast_min_s'] * 1e3:.0f}"
        for r in rows) + f"; whole frame {min(s['total'] for s in steps) * 1e3:.0f}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"steps": steps, "median": med, "casts": rows,
                                         "cpu_count": os.cpu_count(), "cpu_model": _cpu_model()},
                                        indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
