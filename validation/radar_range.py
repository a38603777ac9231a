"""Detection range of the ARS408 presets against the data sheet: the probability of detecting a
10 dBsm-class target over N frames, swept in range, and the range where it falls below 50 %.

Target: a flat 1 m x 1 m face of the ``car`` class, facing the radar on its boresight, 0.5 m
below it, in free space (no road: the data sheet's figure is a property of the sensor, not of
the multipath at one mounting height). Its panel scatters as a cap of the ``car_body`` radius R
(``sensors.radar.materials``), RCS ``pi R^2`` = 11.0 dBsm (checked: the model reports 11.06
dBsm at 100 m). The sheet's range for a 10 dBsm target is scaled to this one by the radar
equation, R ~ sigma^(1/4): x 1.06.

Data sheet (Continental, "ARS 408-21 Premium Long Range Radar Sensor 77 GHz", technical data,
2017, as recalled; it could not be re-read, see ``sensors/radar/presets.py``): far range
0.20-250 m, near range 0.20-70 m at 0 deg (less toward +-60 deg). The sheet states no target
RCS or detection probability; the 10 dBsm reference car (ISO 15622, adaptive cruise control)
and 50 % detection probability are taken as its conditions (assumptions).

Calibration: Continental publishes no transmit power, antenna gain or noise figure; the preset's
``tx_power_dbm`` (one named assumption) is set so that the far scan's 50 % range is the sheet's
250 m for a 10 dBsm target, then the near scan is checked against its 70 m with no further
change. The far scan is swept past its reported 250 m (``max_range_m`` raised to 450 m, within
its 458 m unambiguous range) so that the range where detection fails can be seen; the near
scan up to 99 m (its unambiguous range is 99.8 m).

A detection counts when the frame holds one on the target within two range cells of its range.

    python validation/radar_range.py [--markdown FILE] [--frames 16]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hifi  # noqa: E402
from sensors.radar import RadarARS408  # noqa: E402
from sensors.radar.materials import RADAR_MATERIALS  # noqa: E402
from sensors.radar.presets import PRESETS  # noqa: E402

hifi.register_model("radar_ars408", RadarARS408)

#: Transmit power of the presets before the calibration [dBm] (a 77 GHz MMIC's output, assumed).
UNCALIBRATED_TX_DBM = 12.0
SHEET_RANGE_M = {"ars408_far": 250.0, "ars408_near": 70.0}
SHEET_RCS_DBSM = 10.0
SWEEP_M = {"ars408_far": np.arange(200.0, 341.0, 10.0), "ars408_near": np.arange(50.0, 99.1, 4.0)}
#: Transmit power of each sweep [dBm]: low enough that detection fails within the scan's
#: unambiguous range; ranges at other powers follow by the radar equation, R ~ P_t^(1/4).
SWEEP_TX_DBM = {"ars408_far": -5.0, "ars408_near": -13.0}
MAX_RANGE_M = {"ars408_far": 450.0, "ars408_near": 99.0}


def target_rcs_dbsm() -> float:
    """RCS of the 1 m face as a cap of the car body's radius [dBsm]: pi R^2."""
    r = RADAR_MATERIALS["car_body"].curvature_radius_m
    return float(10.0 * np.log10(np.pi * r * r))


def detection_probability(preset, range_m, frames, tx_power_dbm=None, seed=3) -> float:
    """Share of ``frames`` frames holding a detection of the face ``range_m`` [m] ahead."""
    params = {"preset": preset, "diffuse": False, "fov_azimuth_deg": 2.0, "fov_elevation_deg": 2.0,
              "ray_spacing_deg": 0.01, "max_range_m": MAX_RANGE_M[preset]}
    if tx_power_dbm is not None:
        params["tx_power_dbm"] = float(tx_power_dbm)
    d = {"simulation": {"duration_s": frames / 10.0, "seed": seed},
         "materials": {"body": {"reflectivity": 0.5, "class": "car"}},
         "objects": [{"name": "target", "mesh": "box", "size_m": [0.1, 1.0, 1.0], "material": "body",
                      "position_m": [range_m + 0.05, 0.0, 0.5]}],
         "sensors": [{"name": "radar", "model": "radar_ars408", "rate_hz": 10.0, "position_m": [0.0, 0.0, 1.0],
                      "params": params}]}
    ds = hifi.Simulation.from_dict(d, base_dir=".").run(out=None)["radar"]
    cell = ds.attrs["range_resolution_m"]
    hit = (ds.object_id.values == 0) & (np.abs(ds.range.values - range_m) < 2.0 * cell)
    return float(np.mean(np.any(hit, axis=1)))


def crossing(ranges, pd, level) -> float:
    """Range where ``pd`` first falls below ``level`` [m], linear between the sweep's points;
    NaN if it never does."""
    below = np.flatnonzero(np.asarray(pd) < level)
    if below.size == 0:
        return float("nan")
    i = int(below[0])
    if i == 0:
        return float(ranges[0])
    r0, r1, p0, p1 = ranges[i - 1], ranges[i], pd[i - 1], pd[i]
    return float(r0 + (p0 - level) / (p0 - p1) * (r1 - r0))


def sweep(preset, frames, tx_power_dbm=None):
    ranges = SWEEP_M[preset]
    pd = np.array([detection_probability(preset, r, frames, tx_power_dbm) for r in ranges])
    return ranges, pd


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--frames", type=int, default=16)
    args = ap.parse_args()
    scale = 10.0 ** ((target_rcs_dbsm() - SHEET_RCS_DBSM) / 40.0)
    rows, curves = [], []
    for preset in ("ars408_far", "ars408_near"):
        tx0 = SWEEP_TX_DBM[preset]
        ranges, pd = sweep(preset, args.frames, tx0)
        curves.append((preset, tx0, ranges, pd))
        sheet = SHEET_RANGE_M[preset] * scale
        for label, tx in (("uncalibrated", UNCALIBRATED_TX_DBM), ("calibrated", PRESETS[preset]["tx_power_dbm"])):
            f = 10.0 ** ((tx - tx0) / 40.0)
            r50, r90 = crossing(ranges, pd, 0.5) * f, crossing(ranges, pd, 0.9) * f
            how = "swept" if tx == tx0 else f"swept at {tx0:g} dBm x {f:.3f}"
            rows.append(f"| {preset} | {label}, {tx:.1f} dBm | {sheet:.0f} | {r50:.0f} ({how}) | {r50 / sheet:.2f} | "
                        f"{r90:.0f} |")
    text = ("# ARS408 detection range against the data sheet\n\n`python validation/radar_range.py --markdown "
            f"validation/radar_range.md` ({args.frames} frames per range; target {target_rcs_dbsm():.1f} dBsm, the "
            f"sheet's range for {SHEET_RCS_DBSM:.0f} dBsm scaled by x{scale:.3f}; sources in the script)\n\n"
            "| scan | tx_power_dbm | sheet, 50 % [m] | simulated 50 % [m] | ratio | simulated 90 % [m] |\n"
            "|---|---|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n\nDetection probability per range:\n\n")
    for preset, tx, ranges, pd in curves:
        text += (f"- {preset} at {tx:.1f} dBm: " + ", ".join(f"{r:g} m {p:.2f}" for r, p in zip(ranges, pd)) + "\n")
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
