"""A sensor's whole step against raw embreex on two threads, round by round, with the fastest
round beside the median: on cores that other processes share, the fastest of many rounds is
the round that had both cores, which the median of a loaded machine hides.

    python benchmarks/bench_sensor_rounds.py LABEL [--rounds N] [--json FILE]

``LABEL`` is a row of ``bench_sensors.py`` (``hdl64e_s2``, ``tof_sr4000``, ...). Each round
casts the step's primary rays through raw embreex, then every ray the step casts (each of its
casts in turn), then runs the model step, timing each in wall and process CPU time
(``time.process_time``, every thread). To compare two commits, run it from each one's tree
(``PYTHONPATH`` set to it) in turn, several times.
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
from bench_caster import _raw_embree, raw_two_threads  # noqa: E402
from bench_sensors import SENSORS, _error, _raw_inputs, _Recorder  # noqa: E402

from hifi.api.bus import MessageBus  # noqa: E402
from hifi.api.estimate import steady_heap  # noqa: E402
from hifi.api.model import RunContext  # noqa: E402
from hifi.api.params import check_params  # noqa: E402
from hifi.api.registry import load_model  # noqa: E402
from hifi.caster import RayCaster  # noqa: E402
from hifi.runtime.threads import single_threaded_blas  # noqa: E402
from hifi.world.motion import Pose  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("label", choices=list(SENSORS), metavar="LABEL", help="a row of bench_sensors.py")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        print(f"bench_sensor_rounds.py: --rounds {args.rounds}: expected >= 1", file=sys.stderr)
        return 2

    scene, sensor_pos = build_scene()
    caster = RayCaster(scene, n_threads=2).build()
    es, centre, _ = _raw_embree(scene)
    pool = ThreadPoolExecutor(2)
    model_name, params = SENSORS[args.label]
    rpy = (0.0, 10.0, 0.0) if model_name in ("tof_sr4000", "depthmap") else (0.0, 0.0, 0.0)
    scene.add_body("bench", "sensor", Pose.from_position_rpy(sensor_pos, rpy))
    rec = _Recorder(caster)
    cls = load_model(model_name)
    model = cls("bench", check_params(params, cls.PARAMS, _error, "params"))
    model.setup(RunContext(scene, rec, MessageBus(), 0, 1.0, "2000-01-01T12:00:00Z", {}, "."))
    with single_threaded_blas(), steady_heap():          # as a run steps its models
        rec.arm()
        model.step(0, 0.0)                               # warm-up, records every cast's rays
        rec.disarm()
        inputs = [_raw_inputs(c, centre) for c in rec.casts]
        for x in inputs:
            raw_two_threads(pool, es, *x)
        items = {"raw": lambda: raw_two_threads(pool, es, *inputs[0]),
                 "raw_every_ray": lambda: [raw_two_threads(pool, es, *x) for x in inputs],
                 "step": lambda: model.step(0, 0.0)}
        wall = {k: [] for k in items}
        cpu = {k: [] for k in items}
        for _ in range(args.rounds):
            for name, fn in items.items():
                c0, t0 = time.process_time(), time.perf_counter()
                fn()
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    pool.shutdown()
    caster.close()
    out = {"sensor": args.label, "rounds": args.rounds, "load_1min": os.getloadavg()[0],
           **{k: {"wall_min_s": min(wall[k]), "wall_median_s": float(np.median(wall[k])),
                  "cpu_min_s": min(cpu[k]), "cpu_median_s": float(np.median(cpu[k]))} for k in items}}
    s, r, a = out["step"], out["raw"], out["raw_every_ray"]
    print(f"{args.label}: {args.rounds} rounds, load {out['load_1min']:.1f}")
    print(f"  step [ms]: wall fastest {s['wall_min_s'] * 1e3:.1f}, median {s['wall_median_s'] * 1e3:.1f}; "
          f"CPU fastest {s['cpu_min_s'] * 1e3:.1f}")
    print(f"  raw embreex, primary rays [ms]: wall fastest {r['wall_min_s'] * 1e3:.1f}, median "
          f"{r['wall_median_s'] * 1e3:.1f}; every ray: wall fastest {a['wall_min_s'] * 1e3:.1f}")
    print(f"  step / raw: wall fastest {s['wall_min_s'] / r['wall_min_s']:.2f}, median "
          f"{s['wall_median_s'] / r['wall_median_s']:.2f}; of every ray, fastest "
          f"{s['wall_min_s'] / a['wall_min_s']:.2f}; CPU fastest {s['cpu_min_s'] / r['cpu_min_s']:.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
