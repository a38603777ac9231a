"""``hifi plot`` for driven bodies: the ``vehicle`` dataset and the ``waypoint_driver`` dataset.

A body with ``vehicle = {...}`` writes ``NAME.nc`` (``sensor_model`` ``vehicle``: ``position``,
``yaw``, ``speed``, ``steer``, ``speed_command`` per step); a ``waypoint_driver`` writes the
true and the perceived pose it steered by and its commands (``position_true``, ``yaw_true``,
``position_perceived``, ``yaw_perceived``, ``speed_command``, ``steer_command``). Both are drawn
alike: plan-view track beside speed, heading and steering against time. Registered in the
entry-point group ``hifi.plots`` under both model names.
"""

from __future__ import annotations

import numpy as np


def _first(ds, *names):
    """The first of ``names`` that ``ds`` holds, else None."""
    return next((n for n in names if n in ds), None)


def _deg(ds, name) -> np.ndarray:
    """Angle variable ``name`` [rad] in degrees, unwrapped along ``frame`` (NaN kept)."""
    a = np.asarray(ds[name].values, dtype=float)
    ok = np.isfinite(a)
    out = np.full(a.shape, np.nan)
    out[ok] = np.degrees(np.unwrap(a[ok]))
    return out


def plot_vehicle(ds, frame: int = 0):
    """Plan-view track beside speed, heading and steering against time (a matplotlib Figure).

    Parameters
    ----------
    ds : xarray.Dataset
        A ``vehicle`` or ``waypoint_driver`` dataset (dimension ``frame``, time ``frame_time``).
    frame : int
        Step marked on the track (a cross) and on the time panels (a dashed line).

    Notes
    -----
    Left: the body's track in the scene's x (east) / y (north) plane at equal scale (at least
    10 m wide), start and end marked, the heading (``yaw``, counter-clockwise from x) drawn as
    arrows at about a dozen steps; a driver's perceived track (``position_perceived``: what its
    navigation believed) dashed beside the true one. Right, against time: speed and the
    commanded speed [m/s]; heading [deg], unwrapped (and the perceived heading); steering angle
    [deg] (the vehicle's, else the driver's command).
    """
    from hifi.viz.plot_common import pyplot, seconds, title
    from hifi.viz.plot_kinds import plan_limits

    plt = pyplot()
    t = seconds(ds, "frame_time" if "frame_time" in ds else "timestamp")
    pos_var = _first(ds, "position", "position_true")
    yaw_var = _first(ds, "yaw", "yaw_true")
    p = np.asarray(ds[pos_var].values, dtype=float)[:, :2]
    yaw = _deg(ds, yaw_var) if yaw_var else np.full(t.shape, np.nan)

    fig = plt.figure(figsize=(15, 8.5), layout="constrained")
    gs = fig.add_gridspec(3, 2, width_ratios=[1.1, 1])
    ax = fig.add_subplot(gs[:, 0])
    ax.plot(p[:, 0], p[:, 1], "-", color="tab:blue", lw=1.5, label="track (true)")
    if "position_perceived" in ds:
        q = np.asarray(ds["position_perceived"].values, dtype=float)[:, :2]
        ax.plot(q[:, 0], q[:, 1], "--", color="tab:orange", lw=1.2, label="track (perceived)")
    ax.plot(p[0, 0], p[0, 1], "o", color="tab:green", ms=8, label=f"start, t = {t[0]:.2f} s")
    ax.plot(p[-1, 0], p[-1, 1], "s", color="tab:red", ms=8, label=f"end, t = {t[-1]:.2f} s")
    ax.plot(p[frame, 0], p[frame, 1], "k+", ms=14, mew=2, label=f"step {frame}, t = {t[frame]:.2f} s")
    step = max(len(t) // 12, 1)
    h = np.radians(yaw[::step])
    ok = np.isfinite(h) & np.all(np.isfinite(p[::step]), axis=1)
    if ok.any():
        ax.quiver(p[::step, 0][ok], p[::step, 1][ok], np.cos(h[ok]), np.sin(h[ok]), angles="xy",
                  color="0.3", width=0.004, scale=25, label="heading")
    plan_limits(ax, p)
    moved = float(np.nansum(np.linalg.norm(np.diff(p, axis=0), axis=1)))
    ax.set_title(f"plan view, {moved:.1f} m travelled")
    ax.legend(loc="best", fontsize="small", framealpha=0.8)

    ax_v = fig.add_subplot(gs[0, 1])
    if "speed" in ds:
        ax_v.plot(t, np.asarray(ds["speed"].values, dtype=float), "k", lw=1.5, label="speed")
    if "speed_command" in ds:
        ax_v.step(t, np.asarray(ds["speed_command"].values, dtype=float), "--", color="tab:blue",
                  where="post", label="commanded")
    ax_v.set_ylabel("speed [m/s]")
    ax_h = fig.add_subplot(gs[1, 1], sharex=ax_v)
    ax_h.plot(t, yaw, color="tab:blue", label="heading" + (" (true)" if "yaw_perceived" in ds else ""))
    if "yaw_perceived" in ds:
        ax_h.plot(t, _deg(ds, "yaw_perceived"), "--", color="tab:orange", label="heading (perceived)")
    ax_h.set_ylabel("heading [deg]")
    ax_s = fig.add_subplot(gs[2, 1], sharex=ax_v)
    steer_var = _first(ds, "steer", "steer_command")
    if steer_var:
        ax_s.step(t, np.degrees(np.asarray(ds[steer_var].values, dtype=float)), color="tab:purple",
                  where="post", label="steering" if steer_var == "steer" else "steering command")
    ax_s.set_ylabel("steering [deg]")
    ax_s.set_xlabel("time [s]")
    for a in (ax_v, ax_h, ax_s):
        a.axvline(t[frame], color="0.6", lw=0.8, ls="--")
        a.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
        a.grid(alpha=0.3)
    ax_v.tick_params(labelbottom=False)
    ax_h.tick_params(labelbottom=False)
    ax_v.set_title("heading counter-clockwise from x (east); steering positive to the left")
    fig.suptitle(title(ds))
    return fig
