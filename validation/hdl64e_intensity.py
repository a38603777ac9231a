"""HDL-64E S2 road intensity against range, with and without the sensor's distance compensation.

One sweep of ``hdl64e_s2`` at 10 Hz, 1.73 m above a flat asphalt road (KITTI's Velodyne mount
height; the road of :func:`lidar_real.sim_scenario`: reflectivity 0.27, Oren-Nayar roughness
11.1 deg, fitted to the nuScenes HDL-32E sweep), no obstacles. The log-log slope of road
intensity against range is measured as ``validation/lidar_real.py`` measures it on the nuScenes
sweep (:func:`hifi.analysis.lidar_stats.intensity_range_slope`: line through the (median range,
median intensity) of 12 log bins), here over 5-40 m, with ``intensity_compensation`` on
(ros-drivers' focal-distance compensation with the per-laser ``focal_distance`` and
``focal_slope`` of ``sensors/data/64e_s2.1-sztaki.yaml``) and off (the model's default).

Reference: -0.2, the road of a KITTI HDL-64E S2 recording; published figures for real Velodyne
recordings give -0.2 to -0.7 (:func:`sensors.radiometry.reported_intensity`,
``validation/lidar_real.py``), and the simulated HDL-32E gives -0.46 against -0.48 on the
nuScenes sweep (``validation/lidar_real.md``).

    python validation/hdl64e_intensity.py [--json]

Prints reference | simulated | ratio for both settings; the simulated column reflects the lidar
model of the commit the script runs on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from hifi.analysis import lidar_stats as ls  # noqa: E402
from lidar_real import sim_grid, sim_scenario  # noqa: E402

#: KITTI's Velodyne HDL-64E is 1.73 m above the road (Geiger et al. 2013, IJRR, Fig. 3).
KITTI_HEIGHT_M = 1.73
#: Log-log slope of the road intensity of a KITTI HDL-64E S2 recording.
REFERENCE_SLOPE = -0.2
#: Range window of the fit [m].
RANGE_WINDOW_M = (5.0, 40.0)


def simulated_slope(compensation: bool, *, seed: int = 12) -> float:
    """Road intensity slope of one simulated ``hdl64e_s2`` sweep over :data:`RANGE_WINDOW_M`."""
    import hifi
    d = sim_scenario("hdl64e_s2", KITTI_HEIGHT_M, 10.0, seed=seed, obstacles=False,
                     params={"intensity_compensation": bool(compensation)})
    g = sim_grid(hifi.Simulation.from_dict(d).run(out=None)["lidar"])
    rng = np.linalg.norm(g["points_sensor"], axis=-1)
    return ls.intensity_range_slope(rng, g["intensity"], g["detected"], range_window_m=RANGE_WINDOW_M).slope


def run() -> dict:
    return {"reference": REFERENCE_SLOPE,
            "compensated": simulated_slope(True),
            "uncompensated": simulated_slope(False)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    a = ap.parse_args(argv)
    res = run()
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    lo, hi = RANGE_WINDOW_M
    print(f"| HDL-64E S2 road intensity vs range, log-log slope {lo:g}-{hi:g} m | reference (KITTI) | "
          f"hifi `hdl64e_s2` sim | ratio |")
    print("|---|---|---|---|")
    for key, label in (("compensated", "intensity_compensation = true"),
                       ("uncompensated", "intensity_compensation = false (default)")):
        print(f"| {label} | {res['reference']:.2f} | {res[key]:.3f} | {res[key] / res['reference']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
