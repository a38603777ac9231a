"""Mixed pixels of a divergent-beam LADAR: the VANE paper's Fig. 3 experiment.

A rectangular block stands 1.5 m in front of a wall; a SICK LMS291 (``sick_lms291``, every
pulse a Gaussian beam of sub-rays) scans across both of its edges. In ``average`` mode, where
the spot straddles an edge the reported point floats between block and wall (a mixed pixel);
in ``first`` and ``last`` mode it does not. The script draws the truth lines and the simulated
points of every mode (PNG) and prints, per mode, how many points float and where.

    python validation/mixed_pixels.py [--out FILE] [--n-subrays 100]    # figure: validation/mixed_pixels.png

Reference: C. Goodin, R. Kala, A. Carrillo, L. Y. Liu, "Sensor modeling for the Virtual
Autonomous Navigation Environment", IEEE Sensors 2009, sec. 4 and Fig. 3.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import hifi

WALL_X_M = 20.0          # wall plane x [m]
BLOCK_FRONT_X_M = 18.5   # block front face x [m]
BLOCK_HALF_WIDTH_M = 1.0
#: A reported point counts as on a surface within this distance of it [m] (5 sigma of the
#: 1 cm range noise, plus the spot's 1/cos spread).
ON_SURFACE_TOL_M = 0.06
MODES = ("first", "last", "strongest", "average", "dual")


def scenario(mode: str, n_subrays: int, seed: int = 1) -> dict:
    return {
        "simulation": {"duration_s": 1 / 75, "seed": seed},
        "materials": {"wall": {"reflectivity": 0.6, "class": "wall"}, "block": {"reflectivity": 0.6, "class": "block"}},
        "objects": [
            {"name": "wall", "mesh": "plane", "size_m": [60, 20], "material": "wall",
             "position_m": [WALL_X_M, 0, 0], "rpy_deg": [0, -90, 0]},
            {"name": "block", "mesh": "box", "size_m": [1.0, 2 * BLOCK_HALF_WIDTH_M, 3.0], "material": "block",
             "position_m": [BLOCK_FRONT_X_M + 0.5, 0, 0]},
        ],
        "sensors": [{"name": "lms", "model": "sick_lms291",
                     "params": {"fov_deg": 12.0, "angular_step_deg": 0.1, "return_mode": mode,
                                "n_subrays": n_subrays}}],
    }


def classify(x):
    """'block', 'wall' or 'floating' for reported depths x [m] (NaN: 'none')."""
    out = np.full(x.shape, "floating", dtype=object)
    out[np.abs(x - BLOCK_FRONT_X_M) < ON_SURFACE_TOL_M] = "block"
    out[np.abs(x - WALL_X_M) < ON_SURFACE_TOL_M] = "wall"
    out[~np.isfinite(x)] = "none"
    return out


def run(n_subrays: int):
    results = {}
    for mode in MODES:
        ds = hifi.Simulation.from_dict(scenario(mode, n_subrays)).run()["lms"].isel(frame=0)
        x = ds.x_noisy.values          # (step, return)
        y = ds.y_noisy.values
        kind = classify(x)
        float_idx = np.nonzero(kind == "floating")
        results[mode] = {
            "x": x, "y": y, "kind": kind,
            "floating": [{"x_m": float(x[i, j]), "y_m": float(y[i, j]), "return": int(j)}
                         for i, j in zip(*float_idx)],
        }
    return results


def plot(results, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(MODES), figsize=(4 * len(MODES), 5), sharey=True, constrained_layout=True)
    for ax, mode in zip(axes, MODES):
        r = results[mode]
        ax.plot([WALL_X_M, WALL_X_M], [-2.2, 2.2], "k-", lw=1, label="truth: wall")
        ax.plot([BLOCK_FRONT_X_M] * 2, [-BLOCK_HALF_WIDTH_M, BLOCK_HALF_WIDTH_M], "b-", lw=1, label="truth: block")
        for kind, style in (("block", "b."), ("wall", "k."), ("floating", "r^")):
            sel = r["kind"] == kind
            ax.plot(r["x"][sel], r["y"][sel], style, ms=4 if kind != "floating" else 6, label=kind)
        ax.set_title(f"{mode}: {len(r['floating'])} floating")
        ax.set_xlabel("x (range) [m]")
        ax.set_xlim(BLOCK_FRONT_X_M - 0.5, WALL_X_M + 0.5)
    axes[0].set_ylabel("y [m]")
    axes[0].legend(fontsize="small", loc="lower left")
    fig.suptitle("SICK LMS291, divergent beam: block 1.5 m in front of a wall (VANE Fig. 3 experiment)")
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().with_suffix(".png")),
                    help="figure (default: beside this script, %(default)s)")
    ap.add_argument("--n-subrays", type=int, default=100)
    ap.add_argument("--json", action="store_true", help="print the floating points as JSON")
    args = ap.parse_args(argv)
    results = run(args.n_subrays)
    plot(results, args.out)
    print(f"figure: {args.out}")
    print(f"{'mode':<10} {'floating':>8}  positions (x, y) [m]")
    for mode in MODES:
        fl = results[mode]["floating"]
        pos = ", ".join(f"({p['x_m']:.2f}, {p['y_m']:+.2f})" for p in fl)
        print(f"{mode:<10} {len(fl):>8}  {pos}")
    if args.json:
        print(json.dumps({m: results[m]["floating"] for m in MODES}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
