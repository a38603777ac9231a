"""HDL-64E S2 road intensity against range, with and without the sensor's own intensity path.

One sweep of ``hdl64e_s2`` at 10 Hz, 1.73 m above a flat asphalt road (KITTI's Velodyne mount
height; the road of :func:`lidar_real.sim_scenario`: reflectivity 0.27, Oren-Nayar roughness
11.1 deg, fitted to the nuScenes HDL-32E sweep), no obstacles. The log-log slope of road
intensity against range is measured as ``validation/lidar_real.py`` measures it on the nuScenes
sweep (:func:`hifi.analysis.lidar_stats.intensity_range_slope`: line through the (median range,
median intensity) of 12 log bins), here over 5-40 m.

``intensity_compensation = true`` is the HDL-64E S2's own intensity: the raw byte (hifi's
calibrated code times the received power relative to the laser's ``focal_distance``,
:func:`sensors.radiometry.velodyne_raw_intensity_scale`) plus the host's per-laser distance
compensation (:func:`sensors.radiometry.velodyne_focal_compensation`), with the per-laser
``focal_distance``, ``focal_slope``, ``min_intensity`` and ``max_intensity`` read from
``sensors/data/64e_s2.1-sztaki.yaml`` (printed below). ``false`` (the default) is hifi's
range-compensated calibrated reflectivity code.

Reference: -0.2, the road of a KITTI HDL-64E S2 recording; published figures for real Velodyne
recordings give -0.2 to -0.7 (:func:`sensors.radiometry.reported_intensity`,
``validation/lidar_real.py``), and the simulated HDL-32E gives -0.46 against -0.48 on the
nuScenes sweep (``validation/lidar_real.md``). No KITTI scan is in the repository: the
reference is the one number, not a per-range profile.

    python validation/hdl64e_intensity.py [--json]

Prints the calibration's parameters, reference | simulated | ratio for both settings, the
per-range medians, and the slope with the assumed full-overlap range (``full_overlap_m``, the
one parameter of the raw byte that no data sheet gives) at 4 and 12 m; the simulated columns
reflect the lidar model of the commit the script runs on.
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
#: Full-overlap ranges of the sensitivity rows [m] (the model's default is 7.6 m).
OVERLAP_SWEEP_M = (4.0, 12.0)


def calibration_table() -> list[dict]:
    """Per-block summary of the intensity fields of the calibration the model reads."""
    from sensors.calibration import SZTAKI_64E_S21_YAML, read_calibration
    f = read_calibration(SZTAKI_64E_S21_YAML).intensity
    rows = []
    for name, sl in (("upper block, lasers 0-31", slice(0, 32)), ("lower block, lasers 32-63", slice(32, 64))):
        rows.append({"block": name, "file": Path(SZTAKI_64E_S21_YAML).name,
                     **{k: [float(np.min(v[sl])), float(np.median(v[sl])), float(np.max(v[sl]))]
                        for k, v in (("focal_distance_m", f.focal_distance_m), ("focal_slope", f.focal_slope),
                                     ("min_intensity", f.min_intensity), ("max_intensity", f.max_intensity))}})
    return rows


def simulated(compensation: bool, *, seed: int = 12, params: dict | None = None) -> ls.IntensitySlope:
    """Road intensity slope of one simulated ``hdl64e_s2`` sweep over :data:`RANGE_WINDOW_M`."""
    import hifi
    d = sim_scenario("hdl64e_s2", KITTI_HEIGHT_M, 10.0, seed=seed, obstacles=False,
                     params={"intensity_compensation": bool(compensation), **(params or {})})
    g = sim_grid(hifi.Simulation.from_dict(d).run(out=None)["lidar"])
    rng = np.linalg.norm(g["points_sensor"], axis=-1)
    return ls.intensity_range_slope(rng, g["intensity"], g["detected"], range_window_m=RANGE_WINDOW_M)


def simulated_slope(compensation: bool, *, seed: int = 12) -> float:
    """The slope of :func:`simulated`."""
    return simulated(compensation, seed=seed).slope


def run() -> dict:
    on, off = simulated(True), simulated(False)
    return {"reference": REFERENCE_SLOPE, "compensated": on.slope, "uncompensated": off.slope,
            "bins": {"range_m": on.centres_m.tolist(), "compensated": on.median.tolist(),
                     "uncompensated": off.median.tolist()},
            "overlap_sweep": {str(fo): simulated(True, params={"full_overlap_m": fo}).slope for fo in OVERLAP_SWEEP_M},
            "calibration": calibration_table()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    a = ap.parse_args(argv)
    res = run()
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print("| calibration (min / median / max) | file | focal_distance [m] | focal_slope | min_intensity | "
          "max_intensity |")
    print("|---|---|---|---|---|---|")
    for row in res["calibration"]:
        cells = " | ".join("{:g} / {:g} / {:g}".format(*row[k]) for k in
                           ("focal_distance_m", "focal_slope", "min_intensity", "max_intensity"))
        print(f"| {row['block']} | {row['file']} | {cells} |")
    print()
    lo, hi = RANGE_WINDOW_M
    print(f"| HDL-64E S2 road intensity vs range, log-log slope {lo:g}-{hi:g} m | reference (KITTI) | "
          f"hifi `hdl64e_s2` sim | ratio |")
    print("|---|---|---|---|")
    for key, label in (("compensated", "intensity_compensation = true"),
                       ("uncompensated", "intensity_compensation = false (default)")):
        print(f"| {label} | {res['reference']:.2f} | {res[key]:.3f} | {res[key] / res['reference']:.2f} |")
    for fo, s in res["overlap_sweep"].items():
        print(f"| intensity_compensation = true, full_overlap_m = {float(fo):g} (default 7.6) | "
              f"{res['reference']:.2f} | {s:.3f} | {s / res['reference']:.2f} |")
    print()
    print("| median range [m] | sim median intensity, compensation on | off |")
    print("|---|---|---|")
    b = res["bins"]
    for r, on, off in zip(b["range_m"], b["compensated"], b["uncompensated"]):
        print(f"| {r:.1f} | {on:.0f} | {off:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
