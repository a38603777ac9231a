"""``hifi plot`` for ``gps_l1`` datasets: sky plot, position error, error budget per term.

Registered in the entry-point group ``hifi.plots`` under the model name ``gps_l1``. The sky plot
(:func:`sky_plot`) and the fix-error panel (:func:`fix_error_panel`) are shared with the
``gnss_receiver`` plot (``sensors/gnss_receiver_plot.py``).
"""

from __future__ import annotations

import numpy as np

from hifi.run.dataset import seconds_since_start

#: Colours of the sky plot's satellite states.
_STATE_STYLE = {
    "direct": dict(color="tab:green", marker="o", s=40, label="tracked, direct"),
    "reflected": dict(color="tab:orange", marker="o", s=40, label="blocked, reflected (multipath)"),
    "lost": dict(color="tab:red", marker="X", s=50, label="blocked, no pseudorange"),
}


def sky_plot(ax, ds, frame: int, *, sv=None, show_used: bool = False) -> int:
    """Draw the sky of epoch ``frame`` on the polar axes ``ax``; return the satellites shown.

    Parameters
    ----------
    ax : matplotlib.projections.polar.PolarAxes
        Axes made with ``projection="polar"``.
    ds : xarray.Dataset
        A ``gps_l1`` or ``gnss_receiver`` dataset: ``elevation``, ``azimuth`` [rad], ``visible``,
        ``blocked``, ``reflected`` over (``frame``, ``sv``); ``used`` when ``show_used``.
    frame : int
        Epoch whose satellites are marked and labelled (the tracks show every epoch).
    sv : array_like of bool, optional
        (n_sv,) the satellites to draw (a constellation); default all.
    show_used : bool
        Ring the satellites the fix used at ``frame`` (variable ``used``).

    Returns
    -------
    int
        Number of the drawn satellites above the mask at ``frame``.

    Notes
    -----
    Azimuth clockwise from north, 90 deg - elevation as the radius (zenith at the centre, the
    outer ring at the elevation mask). Green: tracked directly; orange: blocked but tracked
    through a reflection; red: blocked and lost. Each satellite is labelled with the share of the
    run's epochs (above the mask) it was blocked / reflected; its track over the run in grey.
    """
    n_sv = ds.sizes["sv"]
    keep = np.ones(n_sv, bool) if sv is None else np.asarray(sv, bool)
    el = np.degrees(np.asarray(ds["elevation"].values, dtype=float))[:, keep]
    az = np.asarray(ds["azimuth"].values, dtype=float)[:, keep]
    visible = np.asarray(ds["visible"].values, bool)[:, keep]
    blocked = np.asarray(ds["blocked"].values, bool)[:, keep] & visible
    reflected = np.asarray(ds["reflected"].values, bool)[:, keep] & blocked
    svs = np.asarray(ds["sv"].values).astype(str)[keep]

    ax.set_theta_zero_location("N")
    ax.set_theta_direction(-1)
    states = {"direct": visible & ~blocked, "reflected": reflected, "lost": blocked & ~reflected}
    track_r = np.where(visible, 90.0 - el, np.nan)
    ax.plot(az, track_r, "-", color="0.6", lw=2.0)                 # tracks over the run (columns: satellites)
    for state, mask in states.items():
        m = mask[frame]
        ax.scatter(az[frame, m], 90.0 - el[frame, m], **_STATE_STYLE[state])
    if show_used:
        used = np.asarray(ds["used"].values, bool)[:, keep][frame] & visible[frame]
        ax.scatter(az[frame, used], 90.0 - el[frame, used], s=120, facecolors="none", edgecolors="k",
                   linewidths=1.2, label="used in the fix")
    n_vis = np.maximum(visible.sum(axis=0), 1)
    for j in np.flatnonzero(visible[frame]):
        share = f"{svs[j]} b{100 * blocked[:, j].sum() / n_vis[j]:.0f}% r{100 * reflected[:, j].sum() / n_vis[j]:.0f}%"
        # Near the horizon in the east half the label goes left, towards the centre, not over "E".
        east = np.sin(az[frame, j]) > 0.0 and el[frame, j] < 35.0
        ax.annotate(share, (az[frame, j], 90.0 - el[frame, j]), fontsize=7,
                    xytext=(-5 if east else 5, 3), textcoords="offset points",
                    ha="right" if east else "left")
    mask_deg = float(ds.attrs.get("elevation_mask_deg", 0.0))
    ax.set_rlim(0, 90)
    ax.set_rticks([0, 30, 60, 90 - mask_deg])
    ax.set_yticklabels(["90", "60", "30", f"{mask_deg:g}"])
    ax.set_thetagrids(range(0, 360, 45), ["N", "", "E", "", "S", "", "W", ""])
    ax.set_rlabel_position(180.0 + 22.5)
    return int(visible[frame].sum())


def fix_error_panel(ax, t, err_enu) -> None:
    """East, north, up and horizontal error of the fix against time on ``ax``.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    t : array_like
        (n,) epoch times since the start [s].
    err_enu : array_like
        (n, 3) fix minus truth in local east, north, up [m]; NaN rows (no fix) leave gaps.
    """
    err = np.asarray(err_enu, dtype=float)
    for i, lab in enumerate(("east", "north", "up")):
        ax.plot(t, err[:, i], ".-", ms=3, label=lab)
    ax.plot(t, np.hypot(err[:, 0], err[:, 1]), "k.-", ms=3, label="horizontal")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("position error [m]")
    ax.set_title("fix minus truth (gaps: fewer than 4 satellites)")


def plot_gps(ds, frame: int = 0):
    """The four-panel quick look of a ``gps_l1`` dataset (a matplotlib Figure).

    Parameters
    ----------
    ds : xarray.Dataset
        Output of the ``gps_l1`` model (dimensions ``frame`` = epoch, ``sv``).
    frame : int
        Epoch whose satellites are labelled on the sky plot (the tracks show every epoch).

    Notes
    -----
    Panels: (1) sky plot, azimuth clockwise from north and 90 deg - elevation as the radius:
    the satellites above the mask at epoch ``frame``, green where tracked directly, orange where
    blocked but tracked through a reflection, red where blocked and lost, labelled with the share
    of the run's epochs each was blocked / reflected, and their tracks over the run in grey; (2) east, north, up and
    horizontal error of the fix over time (gaps: fewer than four satellites); (3) the error
    budget (VANE paper's Fig. 4 idea): the 3-D position error each term causes alone, the
    ``error_budget_enu`` variable, i.e. the term's range residual after the receiver's own
    ionosphere / troposphere corrections mapped through the solver's weighted least squares at
    the epoch's geometry, beside the total error of the fix; (4) satellites visible, blocked,
    reflected and used per epoch.
    """
    from hifi.viz.plot_common import pyplot

    plt = pyplot()
    t = seconds_since_start(ds, "timestamp")
    visible = np.asarray(ds["visible"].values, bool)
    blocked = np.asarray(ds["blocked"].values, bool) & visible
    reflected = np.asarray(ds["reflected"].values, bool) & blocked
    frame = int(np.clip(frame, 0, t.size - 1))

    fig = plt.figure(figsize=(13, 9.5), constrained_layout=True)
    ax_sky = fig.add_subplot(2, 2, 1, projection="polar")
    sky_plot(ax_sky, ds, frame)
    name = ds.attrs.get("sensor_name", "gps")
    ax_sky.set_title(f"{name}: sky at epoch {frame}, t = {t[frame]:g} s\n(label: % of epochs blocked / reflected)")
    ax_sky.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize="small")

    err = np.asarray(ds["position_error_enu"].values, dtype=float)
    ax_err = fig.add_subplot(2, 2, 2)
    fix_error_panel(ax_err, t, err)
    ax_err.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")

    ax_b = fig.add_subplot(2, 2, 3)
    budget = np.asarray(ds["error_budget_enu"].values, dtype=float)
    for j, term in enumerate(np.asarray(ds["term"].values).astype(str)):
        ax_b.plot(t, np.linalg.norm(budget[:, j, :], axis=-1), ".-", ms=3, label=f"{term} alone")
    ax_b.plot(t, np.linalg.norm(err, axis=-1), "k.-", ms=3, lw=1.5, label="all terms (fix)")
    ax_b.set_xlabel("time [s]")
    ax_b.set_ylabel("3-D position error [m]")
    ax_b.set_title("error budget: each term alone\n(residual after the receiver's corrections)")
    ax_b.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")

    ax_n = fig.add_subplot(2, 2, 4)
    ax_n.step(t, visible.sum(axis=1), where="mid", label="above mask")
    ax_n.step(t, blocked.sum(axis=1), where="mid", label="blocked")
    ax_n.step(t, reflected.sum(axis=1), where="mid", label="reflected")
    ax_n.step(t, np.asarray(ds["n_sv_used"].values), "k", where="mid", label="used in the fix")
    ax_n.axhline(4, color="0.6", ls="--", lw=0.8)
    ax_n.set_xlabel("time [s]")
    ax_n.set_ylabel("satellites")
    ax_n.set_title("satellites per epoch")
    ax_n.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")

    return fig
