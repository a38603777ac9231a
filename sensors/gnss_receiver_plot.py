"""``hifi plot`` for ``gnss_receiver`` datasets: sky per constellation, fix error, C/N0, satellites.

Registered in the entry-point group ``hifi.plots`` under the model name ``gnss_receiver``. The
sky plot and the fix-error panel are those of the ``gps_l1`` plot (:mod:`sensors.gps_plot`).
"""

from __future__ import annotations

import warnings

import numpy as np

from hifi.run.dataset import seconds_since_start
from sensors.gps_plot import fix_error_panel, sky_plot

#: Name and colour of each satellite system (RINEX 3 system letter).
SYSTEMS = {"G": ("GPS", "tab:blue"), "R": ("GLONASS", "tab:red"), "E": ("Galileo", "tab:purple"),
           "C": ("BeiDou", "tab:brown"), "J": ("QZSS", "tab:pink")}
#: Line styles of a system's first, second, ... signal in the C/N0 panel.
_SIGNAL_STYLES = ("-", "--", ":", "-.")


def _system(letter: str):
    """(name, colour) of a system letter; an unknown letter is named by itself, in grey."""
    return SYSTEMS.get(letter, (letter, "0.4"))


def plot_gnss_receiver(ds, frame: int = 0):
    """The quick look of a ``gnss_receiver`` dataset (a matplotlib Figure).

    Parameters
    ----------
    ds : xarray.Dataset
        Output of the ``gnss_receiver`` model (dimensions ``frame`` = epoch, ``sv``, ``signal``).
    frame : int
        Epoch whose satellites are marked and labelled on the sky plots, and marked by a dashed
        line on the time panels.

    Notes
    -----
    Top row: one sky plot per constellation (the systems of the ``sv`` coordinate's first
    letter, in the dataset's order), as the ``gps_l1`` plot draws it
    (:func:`sensors.gps_plot.sky_plot`), the satellites the fix used at ``frame`` ringed.
    Bottom row: (1) east, north, up and horizontal error of the fix over time
    (``position_error_enu``); (2) C/N0 per signal [dB-Hz]: the median over the satellites
    tracking it at each epoch, the band from the weakest to the strongest (a reflected signal
    is 6 dB weaker, so the band widens in the canyon); (3) satellites per system and epoch:
    used in the fix (solid) and above the mask (dotted), and all used (black).
    """
    from matplotlib.ticker import MaxNLocator

    from hifi.viz.plot_common import pyplot

    plt = pyplot()
    name = ds.attrs.get("sensor_name", "gnss")
    t = seconds_since_start(ds, "timestamp")
    frame = int(np.clip(frame, 0, t.size - 1))
    sv_system = np.array([s[:1] for s in np.asarray(ds["sv"].values).astype(str)])
    systems = list(dict.fromkeys(sv_system))                   # first-seen order of the dataset

    fig = plt.figure(figsize=(15, 9.5), layout="constrained")
    gs = fig.add_gridspec(2, 1, height_ratios=[1.1, 1])
    gs_sky = gs[0].subgridspec(1, max(len(systems), 1))
    gs_time = gs[1].subgridspec(1, 3)

    sky_axes = []
    for k, letter in enumerate(systems):
        ax = fig.add_subplot(gs_sky[0, k], projection="polar")
        n_above = sky_plot(ax, ds, frame, sv=sv_system == letter, show_used="used" in ds)
        ax.set_title(f"{_system(letter)[0]} ({letter}): {n_above} above the mask", fontsize="medium")
        sky_axes.append(ax)
    if sky_axes:
        handles, labels = sky_axes[0].get_legend_handles_labels()
        for ax in sky_axes[1:]:                                 # the states any panel shows, once
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        sky_axes[-1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.1, 1.0), fontsize="small",
                            title="label: % of epochs\nblocked / reflected", title_fontsize="small")

    ax_err = fig.add_subplot(gs_time[0, 0])
    fix_error_panel(ax_err, t, ds["position_error_enu"].transpose("frame", "enu").values)
    ax_err.set_title("fix minus truth (gaps: no fix)")
    ax_err.legend(loc="best", fontsize="small", framealpha=0.8)

    ax_c = fig.add_subplot(gs_time[0, 1], sharex=ax_err)
    cn0 = np.asarray(ds["cn0"].transpose("frame", "sv", "signal").values, dtype=float)
    signals = np.asarray(ds["signal"].values).astype(str)
    per_system = {}
    for j, sig in enumerate(signals):
        c = cn0[:, :, j]
        if not np.isfinite(c).any():
            continue
        style = _SIGNAL_STYLES[per_system.get(sig[:1], 0) % len(_SIGNAL_STYLES)]
        per_system[sig[:1]] = per_system.get(sig[:1], 0) + 1
        colour = _system(sig[:1])[1]
        with warnings.catch_warnings(action="ignore", category=RuntimeWarning):   # epochs without it
            med, lo, hi = np.nanmedian(c, axis=1), np.nanmin(c, axis=1), np.nanmax(c, axis=1)
        ax_c.plot(t, med, style, color=colour, lw=1.5, label=sig)
        ax_c.fill_between(t, lo, hi, color=colour, alpha=0.12, lw=0)
    units = ds["cn0"].attrs.get("units", "dB-Hz")
    ax_c.set_xlabel("time [s]")
    ax_c.set_ylabel(f"C/N0 [{units}]")
    ax_c.set_title("C/N0 per signal: median over satellites\n(band: weakest to strongest)")
    if per_system:
        ax_c.legend(loc="best", fontsize="small", framealpha=0.8, ncols=2)

    ax_n = fig.add_subplot(gs_time[0, 2], sharex=ax_err)
    visible = np.asarray(ds["visible"].values, bool)
    used = np.asarray(ds["used"].values, bool) & visible if "used" in ds else None
    for letter in systems:
        m = sv_system == letter
        sys_name, colour = _system(letter)
        if used is not None:
            ax_n.step(t, used[:, m].sum(axis=1), "-", color=colour, where="mid", label=f"{sys_name} used")
        ax_n.step(t, visible[:, m].sum(axis=1), ":", color=colour, where="mid", label=f"{sys_name} above mask")
    ax_n.step(t, np.asarray(ds["n_sv_used"].values), "k", where="mid", lw=1.5, label="all used in the fix")
    top = max(int(np.nanmax(visible.sum(axis=1), initial=0)), int(np.nanmax(ds["n_sv_used"].values, initial=0)), 1)
    ax_n.set_ylim(0, 1.5 * top)                                 # room for the legend above the lines
    ax_n.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_n.set_xlabel("time [s]")
    ax_n.set_ylabel("satellites")
    ax_n.set_title("satellites per system and epoch")
    ax_n.legend(loc="upper center", fontsize="small", framealpha=0.8, ncols=2)

    for ax in (ax_err, ax_c, ax_n):
        ax.axvline(t[frame], color="0.6", lw=0.8, ls="--")
        ax.grid(alpha=0.3)
    constellations = ", ".join(_system(s)[0] for s in systems)
    fig.suptitle(f"{name} (gnss_receiver): {constellations}; {', '.join(signals)}; "
                 f"sky at epoch {frame}, t = {t[frame]:g} s")
    return fig
