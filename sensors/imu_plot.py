"""``hifi plot`` for ``imu`` datasets: measured and true rates and specific forces, and the biases.

Registered in the entry-point group ``hifi.plots`` under the model name ``imu``.
"""

from __future__ import annotations

import numpy as np

from hifi.run.dataset import seconds_since_start

_AXES = ("x", "y", "z")
_COLOURS = ("tab:red", "tab:green", "tab:blue")


def plot_imu(ds, frame: int = 0):
    """Four panels of an ``imu`` dataset over the run (a matplotlib Figure).

    Parameters
    ----------
    ds : xarray.Dataset
        Output of the ``imu`` model (dimensions ``frame``, ``axis``).
    frame : int
        Marked with a vertical line on every panel.

    Notes
    -----
    Top: ``angular_rate`` [rad/s] and ``specific_force`` [m/s^2] per sensor axis, measured
    (solid) over true (black dashed). Bottom: the total additive biases
    (``angular_rate_bias``, ``specific_force_bias``: turn-on + Gauss-Markov + random walk),
    with the frames where an axis saturated marked.
    """
    import matplotlib.pyplot as plt

    t = seconds_since_start(ds)
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
    for col, (q, unit) in enumerate((("angular_rate", "rad/s"), ("specific_force", "m/s^2"))):
        top, bottom = axes[0, col], axes[1, col]
        measured, true, bias = (ds[v].values for v in (q, f"{q}_true", f"{q}_bias"))
        saturated = ds[f"{q}_saturated"].values.astype(bool)
        for i, (name, colour) in enumerate(zip(_AXES, _COLOURS)):
            top.plot(t, measured[:, i], color=colour, lw=0.6, label=f"{name} measured")
            top.plot(t, true[:, i], color="k", ls="--", lw=0.8, label="true" if i == 0 else None)
            bottom.plot(t, bias[:, i], color=colour, lw=0.9, label=name)
            if saturated[:, i].any():
                top.plot(t[saturated[:, i]], measured[saturated[:, i], i], "x", color=colour, ms=4,
                         label=f"{name} saturated")
        top.set_ylabel(f"{q.replace('_', ' ')} [{unit}]")
        bottom.set_ylabel(f"{q.replace('_', ' ')} bias [{unit}]")
        bottom.set_xlabel("time since start [s]")
        for ax in (top, bottom):
            if 0 <= frame < t.size:
                ax.axvline(t[frame], color="0.6", lw=0.8)
            ax.grid(True, alpha=0.3)
        top.legend(fontsize=7, ncol=2)
        bottom.legend(fontsize=7)
    preset = ds.attrs.get("preset", "?")
    fig.suptitle(f"{ds.attrs.get('sensor_name', 'imu')} (imu, preset {preset}, "
                 f"{float(ds.attrs.get('rate_hz', np.nan)):g} Hz)")
    fig.tight_layout()
    return fig
