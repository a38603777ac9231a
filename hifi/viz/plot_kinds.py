"""The built-in quick looks of :mod:`hifi.viz.plot`, one figure function per kind of dataset.

- :func:`range_figure`: a range sensor's points, bird's-eye view beside the sensor-layout image
  (:func:`layout`), coloured by one of :data:`COLOR_CHOICES`;
- :func:`depth_figure`: a depth image beside its object ids; :func:`panorama_figure`: several
  depth cameras (``raw_lidar``) as panoramas;
- :func:`pose_figure`: a pose time series, plan-view track beside position, orientation and
  velocity against time; :func:`motion_figure`: every body of ``motion.nc``.

Each is called as ``function(ds, frame=frame, **options)`` and returns a matplotlib Figure;
:func:`hifi.viz.plot.make_figure` picks the function from the dataset's variables.
"""

from __future__ import annotations

import warnings

import numpy as np

from .plot_common import (MAX_LEGEND_ENTRIES, OTHER_COLOR, PALETTE, category_image, distinct_slots, figure_legend,
                          legend_handles, object_categories, object_names, pyplot, seconds, sequential, title)

#: Quantities a range sensor's plot can be coloured by (``hifi plot --color``).
COLOR_CHOICES = ("object", "height", "intensity", "reflectivity", "distance")


# -- range sensors ------------------------------------------------------------------------------
def _values(fr, var):
    return np.asarray(fr[var].values, dtype=float)


def _color_quantity(fr, color):
    """Values, colour-bar label and norm of a continuous colour choice over the sensor layout."""
    from matplotlib.colors import LogNorm, Normalize
    if color == "height":
        v = _values(fr, "z_noisy" if "z_noisy" in fr else "z")
        return v, "reported z (up) [m]", None
    if color == "distance":
        return _values(fr, "distance_noisy"), "reported distance [m]", None
    if color == "reflectivity":
        if "reflectivity" not in fr:
            raise ValueError("color = 'reflectivity': this dataset has no 'reflectivity' variable (range "
                             "datasets of the lidar family have it); use 'intensity'")
        v = _values(fr, "reflectivity")
        return v, "calibrated reflectivity rho f(i) [1]", Normalize(vmin=0.0, vmax=max(float(np.nanmax(
            np.where(np.isfinite(v), v, 0.0))), 1e-3))
    v = _values(fr, "intensity")
    units = fr["intensity"].attrs.get("units", "1")
    label = f"intensity [{units}]"
    if "white Lambertian" in fr["intensity"].attrs.get("long_name", ""):
        label = f"intensity [{units}] (1 = white Lambertian target at 1 m)"
    pos = v[np.isfinite(v) & (v > 0)]
    if pos.size and np.nanpercentile(pos, 99) > 20 * np.nanpercentile(pos, 1):
        lo, hi = np.nanpercentile(pos, [1, 99])             # spans decades: 1/R^2 falls off
        return v, label + ", log scale", LogNorm(vmin=lo, vmax=hi, clip=True)
    return v, label, Normalize()


def layout(fr):
    """How a 2-D scan is shown as an image: ``(arrange, elevation_deg, azimuth_deg, row_dim)``.

    Rows are the dimension along which the elevation varies, sorted by elevation (top =
    highest); with no elevation change (a dual-return line scanner) the shorter dimension, in
    its order (``elevation_deg`` None). Columns run from larger to smaller azimuth, as the
    scene looks from the sensor (left = counter-clockwise), a full turn with the sensor's
    forward direction in the middle. ``arrange(a)`` puts an array of the
    scan's two dimensions in that layout; the angles are per row / column of the result.
    """
    dims = fr["distance_noisy"].dims
    pitch = _values(fr, "pitch")
    with np.errstate(all="ignore"), warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        along0 = np.nanstd(np.nanmean(pitch, axis=1))
        along1 = np.nanstd(np.nanmean(pitch, axis=0))
    flat = max(along0, along1) < 1e-9
    rows_dim0 = (pitch.shape[0] <= pitch.shape[1]) if flat else along0 > along1

    def rows_first(a):
        return a if rows_dim0 else a.T
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        elev = np.degrees(np.nanmean(rows_first(pitch), axis=1))
        yaw_rad = rows_first(_values(fr, "yaw"))            # circular mean: yaw wraps at +-180 deg
        yaw = np.degrees(np.arctan2(np.nanmean(np.sin(yaw_rad), axis=0), np.nanmean(np.cos(yaw_rad), axis=0)))
    rows = np.arange(elev.size) if flat else np.argsort(-elev, kind="stable")
    ok = np.isfinite(yaw)
    turn = np.diff(np.unwrap(np.radians(yaw[ok])))
    cols = np.arange(yaw.size)[::-1] if turn.size and np.sum(turn) > 0 else np.arange(yaw.size)
    if turn.size and abs(np.sum(turn)) > np.radians(300.0):   # a full turn: forward in the middle
        behind = np.nanargmin(np.cos(np.radians(yaw[cols])))  # the column closest to 180 deg
        cols = np.roll(cols, -int(behind))

    def arrange(a):
        return rows_first(a)[rows][:, cols]
    return arrange, (None if flat else elev[rows]), yaw[cols], dims[0] if rows_dim0 else dims[1]



def _angle_ticks(axis, values_deg, *, wrap: bool = False, max_ticks: int = 9):
    """Ticks of an image axis at round angles, placed where the pixels' angle has that value.

    ``values_deg`` is the angle of each pixel index [deg]; a monotonic run is interpolated
    (with ``wrap``, an azimuth: unwrapped first, labels in (-180, 180]), anything else keeps
    the index ticks labelled with the nearest pixel's angle.
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, MaxNLocator

    v = np.asarray(values_deg, dtype=float)
    idx = np.flatnonzero(np.isfinite(v))
    if idx.size < 2:
        return
    vv = np.degrees(np.unwrap(np.radians(v[idx]))) if wrap else v[idx]
    step = np.diff(vv)
    if np.all(step > 0) or np.all(step < 0):
        sign = 1 if step[0] > 0 else -1
        lo, hi = sorted((vv[0], vv[-1]))
        span = hi - lo
        nice = next((d for d in (0.5, 1, 2, 5, 10, 15, 30, 45, 90) if span / d <= max_ticks - 1), 180)
        marks = np.arange(np.ceil(lo / nice) * nice, hi + 1e-9, nice)
        pos = np.interp(marks * sign, vv * sign, idx.astype(float))
        labels = ((marks + 180.0) % 360.0 - 180.0) if wrap else marks
        labels = np.where(np.isclose(labels, -180.0), 180.0, labels) if wrap else labels
        fmt = "{:.0f}" if nice >= 1 else "{:.1f}"
        axis.set_major_locator(FixedLocator(pos))
        axis.set_major_formatter(FixedFormatter([fmt.format(m) for m in labels]))
        return

    def f(x, _pos):
        i = round(x)
        return f"{v[i]:.0f}" if 0 <= i < v.size and np.isfinite(v[i]) else ""
    axis.set_major_locator(MaxNLocator(nbins=max_ticks, integer=True))
    axis.set_major_formatter(FuncFormatter(f))


def range_figure(ds, frame: int = 0, color: str = "object"):
    """Bird's-eye view beside the sensor-layout image (2-D scans), coloured by ``color``."""
    if color not in COLOR_CHOICES:
        raise ValueError(f"color = {color!r}: expected one of {', '.join(map(repr, COLOR_CHOICES))}")
    from matplotlib.ticker import MaxNLocator
    plt = pyplot()
    fr = ds.isel(frame=frame)
    # A rotating lidar's dual return (a third dimension, not a line scanner's echo axis): the
    # strongest echo (slot 0) is drawn, as drivers show it.
    dual = "return" in fr.dims and "distance_noisy" in fr and fr["distance_noisy"].ndim == 3
    if dual:
        fr = fr.isel({"return": 0})
    noisy = "x_noisy" in fr
    xyz = np.stack([_values(fr, v) for v in (("x_noisy", "y_noisy", "z_noisy") if noisy else ("x", "y", "z"))],
                   axis=-1)
    det = np.asarray(fr["detected"].values, bool) if "detected" in fr else np.all(np.isfinite(xyz), axis=-1)
    det = det & np.all(np.isfinite(xyz), axis=-1)
    pts = xyz[det]
    grid = "distance_noisy" in fr and fr["distance_noisy"].ndim == 2 and "pitch" in fr and "yaw" in fr
    fig, axes = plt.subplots(1, 2 if grid else 1, figsize=(15.5 if grid else 9.5, 6.5),
                             layout="constrained", squeeze=False)
    ax = axes[0, 0]
    size = float(np.clip(3e4 / max(len(pts), 1), 1.5, 12.0))
    oid_var = "return_object_id" if "return_object_id" in fr else "object_id"
    oid = np.asarray(fr[oid_var].values).astype(np.int64)
    cats = None
    if color == "object":
        cats = object_categories(oid[det], object_names(ds))
        cat = cats.index(oid[det])
        counts = np.bincount(cat[cat >= 0], minlength=len(cats.labels))
        for c in np.argsort(-counts, kind="stable"):        # the largest object underneath
            m = cat == c
            ax.scatter(pts[m, 0], pts[m, 1], s=size, color=cats.colors[c], linewidths=0, rasterized=True)
        mappable = None
    else:
        values, label, norm = _color_quantity(fr, color)
        v = values[det]
        order = np.argsort(v, kind="stable")                  # the largest values on top
        mappable = ax.scatter(pts[order, 0], pts[order, 1], c=v[order], s=size, cmap="viridis",
                              norm=norm, linewidths=0, rasterized=True)
    sensor = []
    if "sensor_position" in fr:
        sp = _values(fr, "sensor_position")
        sensor = ax.plot(sp[0], sp[1], "k+", ms=12, mew=2, label="sensor (frame start)")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (east) [m]")
    ax.set_ylabel("y (north) [m]")
    ax.set_title(f"bird's-eye view, {len(pts)} returns" + (" (dual: strongest)" if dual else ""))
    if grid:
        ax2 = axes[0, 1]
        arrange, elev, yaw, row_dim = layout(fr)
        if color == "object":
            category_image(ax2, arrange(np.where(det, oid, -1)), cats, aspect="auto")
            ax2.set_title("object id in the sensor layout")
        else:
            ax2.imshow(arrange(np.where(det, values, np.nan)), aspect="auto", cmap=sequential(),
                       norm=mappable.norm, interpolation="nearest")
            ax2.set_title("sensor layout (white: no return)")
        _angle_ticks(ax2.xaxis, yaw, wrap=True)
        ax2.set_xlabel("azimuth in the sensor frame [deg] (left: counter-clockwise)")
        if elev is None:
            ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax2.set_ylabel(f"{row_dim}")
        else:
            _angle_ticks(ax2.yaxis, elev, max_ticks=8)
            ax2.set_ylabel(f"elevation [deg] (rows: {row_dim}, top = highest)")
    if color == "object":
        no_hit = grid and not det.all()
        figure_legend(fig, legend_handles(cats, marker="o", no_hit=no_hit, extra=sensor), "object")
    else:
        fig.colorbar(mappable, ax=axes.ravel().tolist(), label=label, shrink=0.9)
        if sensor:
            ax.legend(loc="best", fontsize="small", framealpha=0.8)
    fig.suptitle(title(ds, frame))
    return fig


# -- depth images ------------------------------------------------------------------------------
def depth_figure(ds, frame: int = 0):
    """Depth image beside the object ids of one frame."""
    plt = pyplot()
    fr = ds.isel(frame=frame)
    rows, cols = fr["depth"].transpose("row", "col").shape
    fig, axes = plt.subplots(1, 2, figsize=(14.0, 0.36 * 14.0 * rows / cols + 1.2), layout="constrained")
    depth = np.asarray(fr["depth"].transpose("row", "col").values, dtype=float)
    im = axes[0].imshow(depth, cmap=sequential(), interpolation="nearest")
    fig.colorbar(im, ax=axes[0], label=f"depth [{fr['depth'].attrs.get('units', 'm')}] (white: no hit)",
                 shrink=0.9)
    axes[0].set_title("depth along the optical axis")
    oid = np.asarray(fr["object_id"].transpose("row", "col").values).astype(np.int64)
    cats = object_categories(oid, object_names(ds))
    category_image(axes[1], oid, cats)
    axes[1].set_title("object id")
    for ax in axes:
        ax.set_xlabel("col")
        ax.set_ylabel("row")
    figure_legend(fig, legend_handles(cats, no_hit=bool((oid < 0).any())), "object")
    fig.suptitle(title(ds, frame))
    return fig


def panorama_figure(ds, frame: int = 0):
    """Distance and object ids of several depth cameras side by side (``raw_lidar``)."""
    plt = pyplot()
    fr = ds.isel(frame=frame)
    yaw = np.degrees(np.asarray(ds["camera"].values, dtype=float))
    order = np.argsort(-yaw, kind="stable")           # image left = larger yaw: cameras right to left
    var = "distance" if "distance" in fr else "depth"

    def pano(name, fill):
        a = np.asarray(fr[name].transpose("camera", "row", "col").values)
        return np.concatenate([np.where(np.isfinite(a[c]), a[c], fill) if a.dtype.kind == "f" else a[c]
                               for c in order], axis=1)
    dist = pano(var, np.nan).astype(float)
    oid = pano("object_id", -1).astype(np.int64)
    n_cam, (rows, cols) = yaw.size, fr[var].transpose("camera", "row", "col").shape[1:]
    width = 15.0
    panel_h = max(width * rows / (n_cam * cols), 0.8)
    fig, axes = plt.subplots(2, 1, figsize=(width, 2 * panel_h + 2.4), layout="constrained", sharex=True)
    im = axes[0].imshow(dist, cmap=sequential(), interpolation="nearest", aspect="auto")
    fig.colorbar(im, ax=axes[0], label=f"{var} [m]", shrink=0.9)
    axes[0].set_title(f"{var} (white: no hit)")
    cats = object_categories(oid, object_names(ds))
    category_image(axes[1], oid, cats, aspect="auto")
    axes[1].set_title("object id")
    centres = cols * (np.arange(n_cam) + 0.5) - 0.5
    for ax in axes:
        for b in range(1, n_cam):
            ax.axvline(b * cols - 0.5, color="k", lw=0.8)
        ax.set_ylabel("row")
    axes[1].set_xticks(centres, [f"{y:.0f}" for y in yaw[order]])
    axes[1].set_xlabel("camera yaw in the sensor frame [deg] (each image: left = larger yaw)")
    figure_legend(fig, legend_handles(cats, no_hit=bool((oid < 0).any())), "object")
    fig.suptitle(title(ds, frame))
    return fig


# -- poses -------------------------------------------------------------------------------------
def _rpy_deg(quat_xyzw) -> np.ndarray:
    """Roll, pitch, yaw [deg] (extrinsic x, y, z as the scenario's ``rpy_deg``), yaw unwrapped."""
    from scipy.spatial.transform import Rotation
    q = np.asarray(quat_xyzw, dtype=float).reshape(-1, 4)
    rpy = np.full((q.shape[0], 3), np.nan)
    ok = np.all(np.isfinite(q), axis=1) & (np.linalg.norm(q, axis=1) > 0)
    if ok.any():
        e = Rotation.from_quat(q[ok]).as_euler("xyz")
        e[:, 2] = np.unwrap(e[:, 2])
        rpy[ok] = np.degrees(e)
    return rpy


def plan_limits(ax, xy, min_span_m=10.0):
    """Equal-aspect plan view at least ``min_span_m`` wide (a static body is a point)."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if xy.size:
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        centre, half = (lo + hi) / 2.0, min_span_m / 2.0
        ax.update_datalim([centre - half, centre + half])     # widen, never crop
        ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (east) [m]")
    ax.set_ylabel("y (north) [m]")


def pose_figure(ds, frame: int = 0):
    """Plan-view track beside position, orientation and velocity against time (``pose`` sensor)."""
    plt = pyplot()
    t = seconds(ds, "timestamp" if "timestamp" in ds else "frame_time")
    p = np.asarray(ds["position"].transpose("frame", "xyz").values, dtype=float)
    rpy = _rpy_deg(ds["orientation"].transpose("frame", "quat").values)
    fig = plt.figure(figsize=(15, 8.5), layout="constrained")
    gs = fig.add_gridspec(3, 2, width_ratios=[1.1, 1])
    ax = fig.add_subplot(gs[:, 0])
    ax.plot(p[:, 0], p[:, 1], "-", color="tab:blue", lw=1.5, label="track")
    ax.plot(p[0, 0], p[0, 1], "o", color="tab:green", ms=8, label=f"start, t = {t[0]:.2f} s")
    ax.plot(p[-1, 0], p[-1, 1], "s", color="tab:red", ms=8, label=f"end, t = {t[-1]:.2f} s")
    ax.plot(p[frame, 0], p[frame, 1], "k+", ms=14, mew=2, label=f"frame {frame}, t = {t[frame]:.2f} s")
    heading = np.radians(rpy[:, 2])
    step = max(len(t) // 12, 1)
    ok = np.isfinite(heading[::step])
    if ok.any():
        ax.quiver(p[::step, 0][ok], p[::step, 1][ok], np.cos(heading[::step][ok]), np.sin(heading[::step][ok]),
                  angles="xy", color="0.3", width=0.004, scale=25, label="heading (sensor x)")
    plan_limits(ax, p[:, :2])
    moved = float(np.nansum(np.linalg.norm(np.diff(p[:, :2], axis=0), axis=1)))
    ax.set_title(f"plan view, {moved:.1f} m travelled")
    ax.legend(loc="best", fontsize="small", framealpha=0.8)
    ax_p = fig.add_subplot(gs[0, 1])
    for i, lab in enumerate("xyz"):
        ax_p.plot(t, p[:, i], label=lab)
    ax_p.set_ylabel("position [m]")
    ax_o = fig.add_subplot(gs[1, 1], sharex=ax_p)
    for i, lab in enumerate(("roll", "pitch", "yaw")):
        ax_o.plot(t, rpy[:, i], label=lab)
    ax_o.set_ylabel("orientation [deg]")
    ax_v = fig.add_subplot(gs[2, 1], sharex=ax_p)
    if "velocity" in ds:
        v = np.asarray(ds["velocity"].transpose("frame", "xyz").values, dtype=float)
        for i, lab in enumerate("xyz"):
            ax_v.plot(t, v[:, i], label=f"v{lab}")
        ax_v.plot(t, np.linalg.norm(v, axis=1), "k", lw=1.2, label="speed")
        ax_v.set_ylabel("velocity [m/s]")
    else:
        ax_v.set_axis_off()
    for a in (ax_p, ax_o, ax_v):
        if a.axison:
            a.axvline(t[frame], color="0.6", lw=0.8, ls="--")
            a.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
            a.grid(alpha=0.3)
    ax_p.tick_params(labelbottom=False)
    ax_o.tick_params(labelbottom=not ax_v.axison)
    (ax_v if ax_v.axison else ax_o).set_xlabel("time [s]")
    ax_p.set_title("scene frame: x east, y north, z up; rpy extrinsic about x, y, z")
    fig.suptitle(title(ds))
    return fig


def motion_figure(ds, frame: int = 0):
    """Plan-view tracks of every body of ``motion.nc`` beside the speed of the moving ones."""
    plt = pyplot()
    t = seconds(ds, "time" if "time" in ds else "frame_time")
    pos = np.asarray(ds["position"].transpose("frame", "body", "xyz").values, dtype=float)
    bodies = [str(b) for b in np.asarray(ds["body"].values)]
    kinds = [str(k) for k in np.asarray(ds["body_kind"].values)] if "body_kind" in ds else ["object"] * len(bodies)
    path = np.nansum(np.linalg.norm(np.diff(pos[:, :, :2], axis=0), axis=-1), axis=0)
    moving = path > 1e-6
    # Legend order: moving bodies (longest path first), then objects, then sensors.
    rank = sorted(range(len(bodies)), key=lambda b: (not moving[b], kinds[b] != "object", -path[b], b))
    shown = rank[:MAX_LEGEND_ENTRIES] if len(rank) <= MAX_LEGEND_ENTRIES else rank[:MAX_LEGEND_ENTRIES - 1]
    grouped = [b for b in rank if b not in shown]
    fig, (ax, ax_s) = plt.subplots(1, 2, figsize=(15, 7), layout="constrained", width_ratios=[1.2, 1])
    from matplotlib.lines import Line2D
    # Colours by body index (objects come first in motion.nc, so an object keeps the colour of
    # its id in the sensor plots) unless two shown bodies collide.
    colour = {b: PALETTE[s] for b, s in zip(shown, distinct_slots(shown))}
    handles = []
    for b in shown:
        c = colour[b]
        marker = "^" if kinds[b] != "object" else "o"
        if moving[b]:
            ax.plot(pos[:, b, 0], pos[:, b, 1], "-", color=c, lw=1.5)
            ax.plot(pos[0, b, 0], pos[0, b, 1], marker, color=c, ms=6)
            ax.annotate("", pos[-1, b, :2], pos[-2, b, :2] if len(t) > 1 else pos[-1, b, :2],
                        arrowprops={"arrowstyle": "->", "color": c, "lw": 1.5})
        else:
            ax.plot(pos[0, b, 0], pos[0, b, 1], marker, color=c, ms=7 if kinds[b] == "object" else 5,
                    mfc="none" if kinds[b] != "object" else c)
        handles.append(Line2D([], [], color=c, marker=marker, ls="-" if moving[b] else "none",
                              mfc="none" if kinds[b] != "object" else c,
                              label=f"{bodies[b]}" + (" (sensor)" if kinds[b] != "object" else "")))
    if grouped:
        g = np.asarray(grouped)
        ax.plot(pos[:, g, 0].ravel(), pos[:, g, 1].ravel(), ".", color=OTHER_COLOR, ms=3)
        handles.append(Line2D([], [], color=OTHER_COLOR, marker=".", ls="none",
                              label=f"other ({len(grouped)} bodies)"))
    plan_limits(ax, pos[:, :, :2])
    ax.set_title("plan view: tracks (o start, -> end); static bodies as markers")
    figure_legend(fig, handles, "body")
    if moving.any() and len(t) > 1:
        speed = np.linalg.norm(np.gradient(pos, t, axis=0), axis=-1)
        for b in shown:
            if moving[b]:
                ax_s.plot(t, speed[:, b], color=colour[b], label=bodies[b])
        ax_s.set_ylim(0.0, 1.1 * float(np.nanmax(speed[:, moving])) + 1e-3)
        ax_s.ticklabel_format(axis="y", useOffset=False)
        ax_s.set_xlabel("time [s]")
        ax_s.set_ylabel("speed [m/s] (finite differences of position)")
        ax_s.set_title("speed of the moving bodies")
        ax_s.grid(alpha=0.3)
    else:
        ax_s.set_axis_off()
        ax_s.text(0.5, 0.5, "no body moves", ha="center", va="center", transform=ax_s.transAxes)
    fig.suptitle(f"ground-truth motion, {len(bodies)} bodies, {len(t)} samples"
                 + (f" over {t[-1] - t[0]:.2f} s" if len(t) > 1 else ""))
    return fig
