"""Your own controller in the loop: drive the yard robot to its goal through the stepping API.

Run:  python examples/yard_controller.py [OUT]      (default out/yard_controller)
It steers toward the goal from the robot's true pose, slows down when the lidar sees something
ahead, and writes the run's files as a batch run given the same commands would.
"""
import sys
from pathlib import Path

import numpy as np

import hifi

GOAL = np.array([8.0, 4.0])
sim = hifi.Simulation.from_file(Path(__file__).with_name("yard.toml"))
with sim.session(sys.argv[1] if len(sys.argv) > 1 else "out/yard_controller", overwrite=True) as s:
    while not s.finished:
        pose = s.pose("robot")
        to_goal = pose.rotation.inv().apply(np.r_[GOAL - pose.translation[:2], 0.0])
        distance = float(np.hypot(*to_goal[:2]))
        scan = s.step(0.1)["lidar"]                      # the sweeps published in the last 0.1 s
        ahead = min((np.nanmin(np.where(np.abs(f["yaw"]) < 0.3, f["distance_noisy"], np.nan), initial=np.inf)
                     for f in scan), default=np.inf)
        speed = 0.0 if distance < 0.3 or s.finished else min(1.5, distance, max(ahead - 0.8, 0.3))
        steer = np.degrees(np.arctan2(2 * 0.6 * to_goal[1], distance ** 2))    # pure pursuit, L = 0.6 m
        if not s.finished:
            s.command("robot", speed_m_s=speed, steer_deg=float(np.clip(steer, -35, 35)))
print(f"robot at {s.pose('robot').translation[:2].round(2)} m after {s.time_s:.1f} s; "
      f"{len(s.commands)} commands; files in {sorted(s.results)}")
