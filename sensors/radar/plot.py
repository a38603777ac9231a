"""``hifi plot`` for radar datasets: a bird's-eye view of one frame's detections with their
radial velocities as arrows, and its range-Doppler map (or, without ``rd_map``, the detections
over range and radial velocity).

Registered in the entry-point group ``hifi.plots`` under ``radar``, ``radar_ars408`` and
``radar_awr1843``.
"""

from __future__ import annotations

import numpy as np


def plot_radar(ds, frame: int = 0):
    """Two panels of one frame of a radar dataset (a matplotlib Figure).

    Parameters
    ----------
    ds : xarray.Dataset
        Output of a radar model (dimensions ``frame``, ``detection``).
    frame : int
        The frame shown.

    Notes
    -----
    Left: detections in the sensor's plane (x forward, y left) [m], coloured by SNR [dB],
    ghosts ringed in red, each with an arrow of its radial velocity along the line of sight
    (1 s of motion). Right: ``rd_map`` [dB over one cell's noise] against range and radial
    velocity with the detections on it, or the detections alone where the map was not stored.
    """
    import matplotlib.pyplot as plt

    f = ds.isel(frame=frame)
    n = int(f["n_detections"])
    d = f.isel(detection=slice(0, n))
    rng, az, vr = d["range"].values, d["azimuth"].values, d["radial_velocity"].values
    snr, ghost = d["snr"].values, d["ghost"].values.astype(bool)
    x, y = rng * np.cos(az), rng * np.sin(az)
    fig, (ax, rd) = plt.subplots(1, 2, figsize=(13, 6))
    sc = ax.scatter(y, x, c=snr, s=14, cmap="viridis", zorder=3)
    ax.scatter(y[ghost], x[ghost], s=60, facecolors="none", edgecolors="tab:red", label="ghost", zorder=4)
    ax.quiver(y, x, vr * np.sin(az), vr * np.cos(az), angles="xy", scale_units="xy", scale=1.0, width=0.003,
              color="tab:orange", label="radial velocity (1 s)", zorder=2)
    ax.set_xlabel("y, left [m]")
    ax.set_ylabel("x, forward [m]")
    ax.invert_xaxis()                                   # left on the left, as seen from behind the sensor
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="upper right", fontsize=8)
    fig.colorbar(sc, ax=ax, label="snr [dB]")
    if "rd_map" in f:
        r_ax, v_ax = f["range_bin"].values, f["doppler_bin"].values
        im = rd.pcolormesh(v_ax, r_ax, f["rd_map"].values, shading="nearest", cmap="magma")
        fig.colorbar(im, ax=rd, label="power over one cell's noise [dB]")
    rd.scatter(vr, rng, s=16, facecolors="none", edgecolors="cyan" if "rd_map" in f else "k", label="detections")
    rd.set_xlabel("radial velocity, positive away [m/s]")
    rd.set_ylabel("range [m]")
    rd.legend(loc="upper right", fontsize=8)
    name = ds.attrs.get("sensor_name", "radar")
    fig.suptitle(f"{name} ({ds.attrs.get('sensor_model', 'radar')}, preset {ds.attrs.get('preset', '?')}), "
                 f"frame {frame}: {n} detections")
    fig.tight_layout()
    return fig
