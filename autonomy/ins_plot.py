"""``hifi plot`` for ``ins`` datasets: the true and the perceived path with the GNSS fixes, and
the estimate's error against its own 1-sigma.

Registered in the entry-point group ``hifi.plots`` under the model name ``ins``.
"""

from __future__ import annotations

import numpy as np

from hifi.run.dataset import seconds_since_start


def plot_ins(ds, frame: int = 0):
    """Two panels of an ``ins`` dataset (a matplotlib Figure).

    Left, bird's-eye: the true path of the IMU (black), the filter's estimate (blue), the GNSS
    fixes it used (orange dots), the position at ``frame`` marked. Right: the estimate's east,
    north and up errors over time with the filter's +-1 sigma (shaded): a consistent filter keeps
    its error mostly inside (VANE's Figure 8 shows the same: GPS at 1 Hz, the IMU between).
    """
    import matplotlib.pyplot as plt

    t = seconds_since_start(ds, "frame_time")
    est, true = ds["position"].values, ds["position_true"].values
    fix = ds["fix"].values if "fix" in ds else np.full_like(est, np.nan)
    sig = ds["position_sigma"].values
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [1.1, 1.0]})
    ax.plot(true[:, 0], true[:, 1], color="k", lw=1.4, label="true path")
    ax.plot(est[:, 0], est[:, 1], color="tab:blue", lw=1.0, label="perceived (INS estimate)")
    ok = np.isfinite(fix).all(axis=1)
    ax.plot(fix[ok, 0], fix[ok, 1], ".", color="tab:orange", ms=5, label=f"GNSS fixes used ({int(ok.sum())})")
    if 0 <= frame < t.size:
        ax.plot(*true[frame, :2], "k+", ms=12, mew=2)
        ax.plot(*est[frame, :2], "+", color="tab:blue", ms=12, mew=2)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (east) [m]")
    ax.set_ylabel("y (north) [m]")
    ax.legend(fontsize=8, loc="best")
    ax.grid(True, alpha=0.3)
    for i, (name, colour) in enumerate(zip(("east", "north", "up"), ("tab:red", "tab:green", "tab:blue"))):
        err = est[:, i] - true[:, i]
        ax2.fill_between(t, -sig[:, i], sig[:, i], color=colour, alpha=0.12, lw=0)
        ax2.plot(t, err, color=colour, lw=0.9, label=f"{name} error (band: +-1 sigma)")
    ax2.axhline(0.0, color="0.5", lw=0.6)
    ax2.set_xlabel("time since start [s]")
    ax2.set_ylabel("estimate - truth [m]")
    ax2.legend(fontsize=8, loc="best")
    ax2.grid(True, alpha=0.3)
    fig.suptitle(f"{ds.attrs.get('sensor_name', 'ins')} (ins): true and perceived path")
    fig.tight_layout()
    return fig
