"""Divergent-beam LADAR cost against raw embreex: sub-rays per second at N = 19 and N = 100.

One sweep of the ``sick_lms291`` (361 pulses over 180 deg) from 1.8 m above the centre of the
237,000-vertex scene (benchmarks/_scene.py), pitched 5 deg down so every pulse meets terrain or
cars. For each N: the whole model step (sub-ray generation, cast, returns, waveform, signal
processing, dataset variables) against raw embreex casting exactly the same sub-rays on two
threads in the same run. The target: hifi's sub-rays per second at least 0.8x raw
embreex's.

    python benchmarks/bench_ladar.py [--repeat N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _scene import build_scene  # noqa: E402
from bench_caster import _cpu_model, _raw_embree  # noqa: E402
from bench_sensors import _error, _Recorder, time_against_raw  # noqa: E402

from hifi.api.bus import MessageBus  # noqa: E402
from hifi.caster import RayCaster  # noqa: E402
from hifi.api.model import RunContext  # noqa: E402
from hifi.world.motion import Pose  # noqa: E402
from hifi.api.params import check_params  # noqa: E402
from hifi.api.registry import load_model  # noqa: E402

TARGET = 0.8


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    scene, pos = build_scene()
    caster = RayCaster(scene, n_threads=2).build()
    es, centre, _ = _raw_embree(scene)
    pool = ThreadPoolExecutor(2)
    rec = _Recorder(caster)
    cls = load_model("sick_lms291")
    rows = []
    for n in (1, 19, 100):
        name = f"ladar_{n}"
        scene.add_body(name, "sensor", Pose.from_position_rpy(pos, [0.0, 5.0, 0.0]))
        model = cls(name, check_params({"n_subrays": n}, cls.PARAMS, _error, "params"))
        model.setup(RunContext(scene, rec, MessageBus(), 0, 1.0, "2000-01-01T12:00:00Z", {}, "."))
        rec.arm()                      # keep the rays of the step's casts (bench_sensors._Recorder)
        model.step(0, 0.0)
        rec.disarm()
        o, d, max_range = rec.rays
        cpu = []
        t_raw, _, t_cast, t_model = time_against_raw(model, caster, es, centre, pool, rec.casts[:1], args.repeat,
                                                     cpu)
        r, m, c = float(np.median(t_raw)), float(np.median(t_model)), float(np.median(t_cast))
        cpu_raw, cpu_model = (float(np.median(x)) for x in zip(*cpu))
        rows.append({"n_subrays": n, "pulses": len(model.scan), "subrays": len(o), "raw_s": r, "hifi_s": m,
                     "hifi_cast_s": c, "cast_ratio": r / c,
                     "hifi_per_pulse_us": m / len(model.scan) * 1e6, "ratio": r / m,
                     "cpu_ratio": cpu_raw / cpu_model})
    pool.shutdown()
    caster.close()
    print(f"machine: {os.cpu_count()} cores, {_cpu_model()}; median of {args.repeat} runs after a warm-up")
    print()
    print("| N sub-rays | pulses | sub-rays | raw embreex 2 threads [ms] | hifi cast [ms] | hifi model step [ms] "
          "| hifi per pulse [us] | cast sub-rays/s / raw | model step sub-rays/s / raw | the same, CPU time |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['n_subrays']} | {row['pulses']} | {row['subrays']} | {row['raw_s'] * 1e3:.2f} | "
              f"{row['hifi_cast_s'] * 1e3:.2f} | {row['hifi_s'] * 1e3:.2f} | {row['hifi_per_pulse_us']:.1f} | "
              f"{row['cast_ratio']:.2f} | {row['ratio']:.2f} | {row['cpu_ratio']:.2f} |")
    worst = min(row["ratio"] for row in rows if row["n_subrays"] in (19, 100))
    print()
    print(f"target: sub-rays per second >= {TARGET}x raw embreex at N = 19 and 100: "
          f"worst {worst:.2f}x -> {'met' if worst >= TARGET else 'NOT met'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "target": TARGET}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
