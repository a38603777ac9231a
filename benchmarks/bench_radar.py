"""Time of one radar frame against one HDL-64E S2 sweep on ``examples/crossing.toml``.

Each sensor runs alone, mounted on ``car_1`` (the HDL-64E on the roof as the example has it,
each radar on the front bumper, 0.5 m up), for ``--frames`` frames at 10 Hz; the table gives
the median time of one model step (``Model.step``, from the caster's first cast to the frame's
variables), so scene building, BVH construction and writing are left out.

    PYTHONPATH=. python benchmarks/bench_radar.py [--frames 5]
"""

from __future__ import annotations

import argparse
import time
import tomllib
from pathlib import Path

import numpy as np

import hifi
from sensors.radar import Radar, RadarARS408, RadarAWR1843

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
for _n, _c in (("radar", Radar), ("radar_ars408", RadarARS408), ("radar_awr1843", RadarAWR1843)):
    hifi.register_model(_n, _c)

CASES = (
    ("hdl64e_s2 (HDL-64E S2 sweep)", {"name": "s", "model": "hdl64e_s2", "parent": "car_1", "position_m": [0, 0, 1.9]}),
    ("radar_ars408 ars408_far", {"name": "s", "model": "radar_ars408", "parent": "car_1", "position_m": [2.3, 0, 0.5],
                                 "params": {"preset": "ars408_far"}}),
    ("radar_ars408 ars408_near", {"name": "s", "model": "radar_ars408", "parent": "car_1", "position_m": [2.3, 0, 0.5],
                                  "params": {"preset": "ars408_near"}}),
    ("radar_awr1843 (profile_2d)", {"name": "s", "model": "radar_awr1843", "parent": "car_1",
                                    "position_m": [2.3, 0, 0.5]}),
    ("radar_awr1843, research mode", {"name": "s", "model": "radar_awr1843", "parent": "car_1",
                                      "position_m": [2.3, 0, 0.5], "params": {"mode": "research"}}),
)


def step_times(sensor: dict, frames: int) -> tuple[list, int]:
    scenario = tomllib.loads((EXAMPLES / "crossing.toml").read_text())
    scenario["sensors"] = [{**sensor, "rate_hz": 10.0}]
    scenario["simulation"]["duration_s"] = frames / 10.0
    scenario.pop("output", None)
    sim = hifi.Simulation.from_dict(scenario, base_dir=EXAMPLES)
    model = sim.models[0]
    times = []
    step = model.step

    def timed(k, t):
        t0 = time.perf_counter()
        out = step(k, t)
        times.append(time.perf_counter() - t0)
        return out

    model.step = timed
    sim.run(out=None)
    return times, model.rays_per_frame()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for label, sensor in CASES:
        times, rays = step_times(sensor, args.frames)
        rows.append((label, rays, float(np.median(times[1:] if len(times) > 1 else times))))
    lidar = rows[0][2]
    print("| sensor | rays cast per frame | median frame time [s] | vs the HDL-64E sweep |")
    print("|---|---:|---:|---:|")
    for label, rays, t in rows:
        print(f"| {label} | {rays:,} | {t:.3f} | {t / lidar:.2f}x |")


if __name__ == "__main__":
    main()
