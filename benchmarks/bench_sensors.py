"""BlenSor's Table 1 on this machine: one frame of each sensor on the 237,000-vertex scene.

For each sensor (one HDL-64E S2 rotation, one Ibeo LUX scan, one SR4000 ToF frame, a
2000 x 2000 depth map) the whole model step is timed (ray generation, casting through hifi's
caster, noise, detection, dataset variables), and raw embreex casts the very same rays on two
threads in the same run. BlenSor's published times (Gschwandtner et al. 2011, Table 1) are shown
beside them; they were measured on 2011 hardware inside Blender, so only the order of magnitude
compares.

    python benchmarks/bench_sensors.py [--repeat N] [--json FILE] [--sensors LABEL ...]
                                       [--ray-caster embree|open3d]

``--ray-caster open3d`` steps the models on the benchmarks' Open3D backend
(``benchmarks/_open3d_backend.py``); the raw column stays raw embreex, so two runs, one per
backend, compare through it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _scene import build_scene  # noqa: E402
from bench_caster import _cpu_model, _raw_embree, raw_two_threads  # noqa: E402

from hifi.api.bus import MessageBus  # noqa: E402
from hifi.errors import ScenarioError  # noqa: E402
from hifi.api.model import RunContext  # noqa: E402
from hifi.world.motion import Pose  # noqa: E402
from hifi.api.params import check_params  # noqa: E402
from hifi.api.registry import load_model  # noqa: E402
from hifi.caster import RayCaster  # noqa: E402
from hifi.api.estimate import steady_heap  # noqa: E402
from hifi.runtime.threads import single_threaded_blas  # noqa: E402

#: BlenSor paper, Table 1: seconds per scan on the 237,000-vertex scene.
BLENSOR_S = {"hdl64e_s2": 8.462, "ibeo_lux": 4.943, "tof_sr4000": 5.290, "depthmap": 11.721}
#: Target set for the sensors: every sensor within this ratio of raw embreex on two threads.
TARGET_RATIO = 1.25

#: Rows: label -> (model, parameters). The HDL-64E three times: its defaults (beam footprint at
#: depth edges, signal chain), pencil beams (``edge_subrays = 0``), the real-recording comparison's settings, and
#: a divergent beam of 4 sub-rays per pulse (its first cast, the one raw embreex
#: replays, is every sub-ray: 4 x 133,312 rays).
SENSORS = {
    "hdl64e_s2": ("hdl64e_s2", {}),
    "hdl64e_s2 (pencil beams)": ("hdl64e_s2", {"edge_subrays": 0}),
    "hdl64e_s2 (n_subrays = 4)": ("hdl64e_s2", {"n_subrays": 4}),
    "ibeo_lux": ("ibeo_lux", {}),
    "tof_sr4000": ("tof_sr4000", {}),
    "depthmap": ("depthmap", {"resolution_x": 2000, "resolution_y": 2000, "fov_x_deg": 90.0}),
}


class _Recorder:
    """Wraps a caster; between :meth:`arm` and :meth:`disarm` keeps the rays of every cast (a
    model step's first cast: its primary rays, one per pulse; edge probes and footprints come in
    later casts of the same step) to replay them through raw embreex."""

    def __init__(self, caster):
        self.caster = caster
        self.casts = []
        self.armed = False

    def arm(self):
        self.armed, self.casts = True, []

    def disarm(self):
        self.armed = False

    @property
    def rays(self):
        """``(origins, directions, max_range_m)`` of the first cast recorded."""
        return self.casts[0]

    @property
    def total_rays(self) -> int:
        return sum(len(c[0]) for c in self.casts)

    def cast(self, origins, directions, times=0.0, max_range_m=np.inf, **out):
        if self.armed:
            self.casts.append((np.asarray(origins, float), np.asarray(directions, float), max_range_m))
        return self.caster.cast(origins, directions, times, max_range_m, **out)

    def cast_frame(self, origin, rotation, directions_sensor, max_range_m, finish):
        """:meth:`hifi.caster.RayCaster.cast_frame` (a depth map's fused frame), its rays recorded
        as :meth:`cast` records them (one origin, the directions rotated to the scene frame)."""
        done = self.caster.cast_frame(origin, rotation, directions_sensor, max_range_m, finish)
        if done and self.armed:
            n = len(directions_sensor)
            self.casts.append((np.broadcast_to(np.asarray(origin, float), (n, 3)),
                               directions_sensor @ np.asarray(rotation, float).T, max_range_m))
        return done

    def close(self):
        self.caster.close()

    def __getattr__(self, name):                 # secondary_offset_m, scene, ... of the caster
        return getattr(self.caster, name)


def _error(reason, key=None, value=None):
    return ScenarioError(reason, key=key, value=value)


def _raw_inputs(rays, centre):
    """Raw embreex's float32 origins (relative to ``centre``), unit directions and limits."""
    o, d, max_range = rays
    o32 = np.ascontiguousarray(o - centre, dtype=np.float32)
    d32 = np.ascontiguousarray(d / np.linalg.norm(d, axis=1, keepdims=True), dtype=np.float32)
    limit = np.broadcast_to(np.asarray(max_range, dtype=float), (len(o),))
    tfar = np.ascontiguousarray(np.where(np.isfinite(limit), limit, np.finfo(np.float32).max), dtype=np.float32)
    return o32, d32, tfar


def time_against_raw(model, caster, es, centre, pool, casts, repeat, cpu=None):
    """Wall times [s] of raw embreex (2 threads) on the primary rays and on every ray of the
    step, of hifi's caster on the primary rays and of the whole model step.

    ``cpu``: a list to which each round appends the process CPU time [s] (every thread's,
    ``time.process_time``) of raw embreex on the primary rays and of the model step. On a
    machine other jobs share, CPU time counts the work done and not the waits for a core, so
    its ratio is steadier than the wall times' (on two cores both are the same for work that
    keeps two threads busy).

    ``casts``: ``(origins, directions, max_range_m)`` of each cast of one step as the model
    cast them, the primary rays first; raw embreex casts each in turn (the step's later casts
    depend on the earlier ones' hits, so they cannot be one call either way). The four are
    timed round by round over ``repeat`` rounds after one warm-up of the raw casts.
    """
    o, d, max_range = casts[0]
    inputs = [_raw_inputs(c, centre) for c in casts]
    for x in inputs:
        raw_two_threads(pool, es, *x)
    t_raw, t_raw_all, t_cast, t_model = [], [], [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        raw_two_threads(pool, es, *inputs[0])
        t_raw.append(time.perf_counter() - t0)
        c_raw = time.process_time() - c0
        t0 = time.perf_counter()
        for x in inputs:
            raw_two_threads(pool, es, *x)
        t_raw_all.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        caster.cast(o, d, 0.0, max_range)
        t_cast.append(time.perf_counter() - t0)
        c0, t0 = time.process_time(), time.perf_counter()
        model.step(0, 0.0)
        t_model.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append((c_raw, time.process_time() - c0))
    return t_raw, t_raw_all, t_cast, t_model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--sensors", nargs="+", default=None, choices=list(SENSORS), metavar="LABEL",
                    help="rows to run (default: all): " + ", ".join(repr(k) for k in SENSORS))
    ap.add_argument("--ray-caster", default="embree", choices=("embree", "open3d"),
                    help="hifi's nearest-hit backend (default embree; open3d: benchmarks/_open3d_backend.py)")
    args = ap.parse_args(argv)

    scene, sensor_pos = build_scene()
    if args.ray_caster == "open3d":
        from _open3d_backend import Open3DBackend
        caster = RayCaster(scene, n_threads=2, backend=Open3DBackend(scene, n_threads=2)).build()
    else:
        caster = RayCaster(scene, n_threads=2).build()
    es, centre, _ = _raw_embree(scene)
    pool = ThreadPoolExecutor(2)
    rec = _Recorder(caster)
    rows = []
    blas = single_threaded_blas()                 # as hifi.Simulation.run steps its models
    blas.__enter__()
    heap = steady_heap()                          # likewise
    heap.__enter__()
    for label, (model_name, params) in SENSORS.items():
        if args.sensors and label not in args.sensors:
            continue
        name = f"bench_{label.split()[0]}_{len(rows)}"
        rpy = (0.0, 10.0, 0.0) if model_name in ("tof_sr4000", "depthmap") else (0.0, 0.0, 0.0)
        scene.add_body(name, "sensor", Pose.from_position_rpy(sensor_pos, rpy))
        cls = load_model(model_name)
        model = cls(name, check_params(params, cls.PARAMS, _error, "params"))
        model.setup(RunContext(scene, rec, MessageBus(), 0, 1.0, "2000-01-01T12:00:00Z", {}, "."))
        rec.arm()
        model.step(0, 0.0)                                    # warm-up, records every cast's rays
        rec.disarm()
        all_rays = rec.total_rays
        o, d, max_range = rec.rays
        cpu = []
        t_raw, t_raw_all, t_cast, t_model = time_against_raw(model, caster, es, centre, pool, rec.casts,
                                                             args.repeat, cpu)
        r, r_all, c, m = (float(np.median(x)) for x in (t_raw, t_raw_all, t_cast, t_model))
        cpu_raw, cpu_model = (float(np.median(x)) for x in zip(*cpu))
        rows.append({"sensor": label, "rays": len(o), "rays_cast": all_rays, "casts": len(rec.casts),
                     "raw_embreex_2t_s": r, "raw_embreex_all_rays_2t_s": r_all, "hifi_cast_s": c,
                     "hifi_model_step_s": m, "cast_ratio": c / r, "model_ratio": m / r, "model_ratio_all": m / r_all,
                     "raw_embreex_cpu_s": cpu_raw, "hifi_model_step_cpu_s": cpu_model,
                     "model_cpu_ratio": cpu_model / cpu_raw,
                     "blensor_s": BLENSOR_S[model_name]})
    heap.__exit__(None, None, None)
    blas.__exit__(None, None, None)
    pool.shutdown()
    caster.close()

    print(f"machine: {os.cpu_count()} cores, {_cpu_model()}; median of {args.repeat} runs after a warm-up; "
          f"hifi's ray caster: {args.ray_caster}")
    print()
    print("| sensor | primary rays | rays cast in all (casts) | raw embreex 2 threads, primary rays [ms] | "
          "raw embreex, every ray of the step [ms] | hifi cast, primary rays [ms] | hifi whole model step [ms] | "
          "cast / raw | model step / raw | model step / raw of every ray | model step / raw, CPU time | "
          "BlenSor 2011 [s] |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['sensor']} | {row['rays']} | {row['rays_cast']} ({row['casts']}) | "
              f"{row['raw_embreex_2t_s'] * 1e3:.1f} | {row['raw_embreex_all_rays_2t_s'] * 1e3:.1f} | "
              f"{row['hifi_cast_s'] * 1e3:.1f} | {row['hifi_model_step_s'] * 1e3:.1f} | "
              f"{row['cast_ratio']:.2f} | {row['model_ratio']:.2f} | {row['model_ratio_all']:.2f} | "
              f"{row['model_cpu_ratio']:.2f} | {row['blensor_s']:.3f} |")
    worst = max(row["model_ratio"] for row in rows)
    print()
    print(f"target: every sensor within {TARGET_RATIO}x of raw embreex on 2 threads: "
          f"worst whole-step ratio {worst:.2f}x -> {'met' if worst <= TARGET_RATIO else 'NOT met'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "repeat": args.repeat, "target_ratio": TARGET_RATIO,
                       "ray_caster": args.ray_caster}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
