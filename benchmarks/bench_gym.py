"""Steps per second of hifi.gym.HifiEnv: a random policy on examples/yard.toml.

The yard robot with its SICK LMS111 (10 Hz, 541 beams) and ADIS16448 IMU (100 Hz), 0.1 s of
simulated time per step, episodes of the scenario's 20 s (200 steps) or until the goal. Reports
steps per second, the real-time factor (simulated / wall seconds) and the share of the wall
time spent in the resets (each builds a new Simulation: scene and BVH).

    python benchmarks/bench_gym.py [--steps 10000] [--dt 0.1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from hifi.gym import HifiEnv

YARD = Path(__file__).resolve().parent.parent / "examples" / "yard.toml"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--dt", type=float, default=0.1)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    env = HifiEnv(YARD, vehicle="robot", goal_m=(8.0, 4.0), dt_s=a.dt,
                  observe={"lidar": ["distance_noisy"], "imu": ["specific_force", "angular_rate"]})
    env.action_space.seed(0)
    t0 = time.perf_counter()
    reset_s = 0.0
    episodes = 1
    tr = time.perf_counter()
    env.reset(seed=0)
    reset_s += time.perf_counter() - tr
    for _ in range(a.steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            tr = time.perf_counter()
            env.reset(seed=episodes)
            reset_s += time.perf_counter() - tr
            episodes += 1
    wall = time.perf_counter() - t0
    env.close()
    out = {"steps": a.steps, "dt_s": a.dt, "episodes": episodes, "wall_s": round(wall, 2),
           "steps_per_s": round(a.steps / wall, 1), "real_time_factor": round(a.steps * a.dt / wall, 2),
           "reset_share": round(reset_s / wall, 3), "cores": len(os.sched_getaffinity(0))}
    print("| steps | dt [s] | episodes | wall [s] | steps/s | real-time factor | resets' share | cores |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("| {steps} | {dt_s} | {episodes} | {wall_s} | {steps_per_s} | {real_time_factor} | {reset_share} | {cores} |"
          .format(**out))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
