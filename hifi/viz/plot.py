"""Quick-look plots of hifi datasets (matplotlib, the ``viz`` extra).

:func:`make_figure` builds the matplotlib figure of one frame of a dataset and
:func:`plot_dataset` writes it as a PNG. The kind of plot follows the dataset's variables:

- a range sensor (points ``x y z``): bird's-eye view beside the sensor-layout image, both
  coloured by ``color`` (object, height, intensity, calibrated reflectivity or reported
  distance); a dual-return scan shows its strongest echoes;
- a depth image (``depth`` over ``row`` / ``col``): depth beside the object ids; four depth
  cameras (``raw_lidar``, dimension ``camera``): both as panoramas;
- a pose time series (``position`` / ``orientation`` over ``frame``, the ``pose`` sensor):
  plan-view track beside position, orientation and velocity against time;
- ``motion.nc`` (``position`` over ``body``): every body's plan-view track beside the speeds;
- any model registered in the entry-point group ``hifi.plots``: the camera, the IMU, the GPS and
  multi-GNSS receivers (``gps_l1``, ``gnss_receiver``), the INS, the go/no-go planner, a driven
  body (``vehicle``) and the ``waypoint_driver`` (:mod:`autonomy.vehicle_plot`).

Object ids are drawn as categories named after ``[[objects]]`` (:func:`object_names`), at most
:data:`MAX_LEGEND_ENTRIES` legend entries (the least frequent objects grouped as "other").
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..run.dataset import ATMOSPHERE_ID


def _pyplot():
    """``matplotlib.pyplot``, on the Agg backend unless a backend was chosen already.

    ``hifi plot`` draws files, so it needs no display; but a notebook (whose kernel names its
    inline backend in ``MPLBACKEND``) or a session that imported pyplot keeps its backend, so
    that ``make_figure`` and the plots after it are shown.
    """
    import os
    import sys
    try:
        import matplotlib
    except ImportError:
        raise ImportError('plotting needs matplotlib: pip install "hifi[viz]"') from None
    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


#: Entry-point group of plot functions for models the built-in quick looks do not cover.
PLOT_GROUP = "hifi.plots"
#: Largest number of entries in an object legend; rarer objects are grouped as "other".
MAX_LEGEND_ENTRIES = 15
#: Quantities a range sensor's plot can be coloured by (``hifi plot --color``).
COLOR_CHOICES = ("object", "height", "intensity", "reflectivity", "distance")
#: Resolution of the PNG files [dots per inch].
DPI = 110

#: Categorical colours of object ids (tab20 without its greys, dark shades first); id i takes
#: colour i mod 18 unless another object in the same plot already has it.
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
            "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5")
#: Colour of the grouped "other" objects, and of "no hit" pixels in images.
OTHER_COLOR = "0.45"
#: Colour of returns from the atmosphere (``object_id`` -2: fog, rain, snow).
ATMOSPHERE_COLOR = "#9ecae1"
NO_HIT_COLOR = "white"


def _registered_plot(sensor_model):
    """Figure function registered for ``sensor_model`` in the entry-point group ``hifi.plots``.

    A model package that produces a dataset hifi's built-in quick looks do not cover (a GNSS
    receiver, a camera) registers ``sensor_model = "package.module:function"``. The function is
    called as ``function(ds, frame=frame, **options)`` and returns a ``matplotlib`` Figure;
    its keyword arguments besides ``frame`` are the plot options it accepts (for example
    ``white_balance``), and :func:`plot_dataset` writes and closes the figure.
    """
    if not sensor_model:
        return None
    from ..api.registry import entry_points
    for ep in entry_points(group=PLOT_GROUP):
        if ep.name == sensor_model:
            return ep.load()
    return None


# -- dataset helpers ---------------------------------------------------------------------------
def scenario_document(ds) -> dict:
    """The scenario of the ``scenario`` global attribute as a dict ({} when absent or unreadable).

    A scenario file's text is TOML; a scenario built in code is stored as a comment line and its
    JSON form on the next line (``# {...}``, :func:`hifi.run.scenario.validate`).
    """
    text = ds.attrs.get("scenario")
    if not text:
        return {}
    text = str(text)
    head, _, rest = text.partition("\n")
    if head.startswith("# scenario built in code") and rest.startswith("# "):
        import json
        try:
            doc = json.loads(rest[2:])
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}
    import tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def object_names(ds) -> list[str]:
    """Names of the scenario's ``[[objects]]`` in index order (``object_id`` i is entry i).

    From the ``object_name`` coordinate (dimension ``object``) when the dataset has one, else
    from the ``[[objects]]`` of the scenario in the ``scenario`` global attribute
    (:func:`scenario_document`); an empty list when neither is there.
    """
    if "object_name" in ds.variables:
        return [str(n) for n in np.asarray(ds["object_name"].values).ravel()]
    objects = scenario_document(ds).get("objects", [])
    return [str(o.get("name", f"object {i}")) if isinstance(o, dict) else f"object {i}"
            for i, o in enumerate(objects if isinstance(objects, list) else [])]


def _scenario_sensor_params(ds) -> dict:
    """``[sensors.params]`` of this dataset's sensor in the scenario ({} when absent)."""
    name = ds.attrs.get("sensor_name")
    for s in scenario_document(ds).get("sensors", []):
        if isinstance(s, dict) and s.get("name") == name:
            return dict(s.get("params", {}))
    return {}


def seconds(ds, name: str) -> np.ndarray:
    """Variable ``name`` (``timestamp``, ``frame_time``, ``time``) as float seconds since the start [s].

    Works on files opened with or without time decoding: ``datetime64`` values are taken from
    the ``start_utc`` global attribute (the CF reference of their units), ``timedelta64``
    values as durations, numbers as stored. NaT gives NaN.
    """
    values = np.asarray(ds[name].values)
    if values.dtype.kind == "M":
        start = np.datetime64(str(ds.attrs["start_utc"]).rstrip("Z"), "ns")
        ns = values.astype("datetime64[ns]")
        return np.where(np.isnat(ns), np.nan, (ns - start).astype(np.int64) / 1e9)
    if values.dtype.kind == "m":
        ns = values.astype("timedelta64[ns]")
        return np.where(np.isnat(ns), np.nan, ns.astype(np.int64) / 1e9)
    return values.astype(float)


def _title(ds, frame=None) -> str:
    """``name (model)``, and the frame with its time when ``frame`` is given."""
    name = ds.attrs.get("sensor_name", "dataset")
    model = ds.attrs.get("sensor_model")
    head = f"{name} ({model})" if model and model != name else str(name)
    if frame is None:
        return head
    k = int(np.asarray(ds["frame"].values)[frame]) if "frame" in ds.coords else frame
    t = ""
    if "frame_time" in ds:
        t = f", t = {seconds(ds, 'frame_time')[frame]:.3f} s"
    return f"{head}: frame {k}{t}"


# -- object categories -------------------------------------------------------------------------
class ObjectCategories(NamedTuple):
    """Object ids of one plot as legend categories (:func:`object_categories`)."""

    ids: np.ndarray
    """(k,) int: the ids with their own legend entry, ascending."""
    labels: list
    """k names, then ``"other (n objects)"`` when ids were grouped."""
    colors: list
    """k colours (matplotlib colour specs), then :data:`OTHER_COLOR` when ids were grouped."""
    other_ids: np.ndarray
    """(m,) int: the ids grouped as "other" (empty when none)."""

    def index(self, object_id) -> np.ndarray:
        """Category of each id: 0..k-1 for shown ids (the atmosphere, id -2, first when
        present), k for "other", -1 for no hit (id -1)."""
        oid = np.asarray(object_id).astype(np.int64)
        out = np.full(oid.shape, -1, dtype=np.int64)
        valid = (oid >= 0) | (oid == ATMOSPHERE_ID)
        shown = np.zeros(oid.shape, dtype=bool)
        if self.ids.size:
            pos = np.clip(np.searchsorted(self.ids, oid), 0, self.ids.size - 1)
            shown = valid & (self.ids[pos] == oid)
            out[shown] = pos[shown]
        out[valid & ~shown] = self.ids.size
        return out


def _distinct_slots(ids) -> list[int]:
    """Palette slot of each id: id mod 18, a colliding id moved to the first free slot."""
    slots = [int(i) % len(_PALETTE) for i in ids]
    free = [k for k in range(len(_PALETTE)) if k not in set(slots)]
    used, out = set(), []
    for k in slots:
        if k in used and free:
            k = free.pop(0)
        used.add(k)
        out.append(k)
    return out


def object_categories(object_id, names, *, max_entries: int = MAX_LEGEND_ENTRIES) -> ObjectCategories:
    """Legend categories of the object ids in ``object_id``: the most frequent named, the rest "other".

    Parameters
    ----------
    object_id : array_like of int
        Object ids of the points or pixels of one plot; -1 (no hit) is ignored, -2 (a return
        from the atmosphere) gets its own first entry.
    names : sequence of str
        Object names in id order (:func:`object_names`); an id without a name is "object i".
    max_entries : int
        Largest number of legend entries, "other" included.

    Returns
    -------
    ObjectCategories
        Ascending ids; when more than ``max_entries`` ids occur, the ``max_entries - 1`` with
        the most points keep their entry. Colours follow the id (:data:`_PALETTE`, id mod 18),
        so an object has the same colour in every plot of a run; of two shown ids that would
        share a colour, the later takes a colour no shown id uses.
    """
    oid = np.asarray(object_id).ravel()
    ids, counts = np.unique(oid[oid >= 0], return_counts=True)
    atmosphere = bool(np.any(oid == ATMOSPHERE_ID))
    room = max_entries - int(atmosphere)
    other = np.empty(0, dtype=ids.dtype)
    if ids.size > room:
        keep = np.sort(np.argsort(-counts, kind="stable")[:room - 1])
        other = np.setdiff1d(ids, ids[keep])
        ids = ids[keep]
    labels = [str(names[i]) if 0 <= i < len(names) else f"object {i}" for i in ids]
    colors = [_PALETTE[s] for s in _distinct_slots(ids)]
    if atmosphere:                  # returns from fog, rain or snow: their own entry, first
        ids = np.concatenate([[ATMOSPHERE_ID], ids])
        labels.insert(0, "atmosphere (fog, rain, snow)")
        colors.insert(0, ATMOSPHERE_COLOR)
    if other.size:
        labels.append(f"other ({other.size} objects)")
        colors.append(OTHER_COLOR)
    return ObjectCategories(ids.astype(np.int64), labels, colors, other.astype(np.int64))


def _sequential():
    """The colour map of continuous quantities; NaN (no hit) in :data:`NO_HIT_COLOR`."""
    import matplotlib
    return matplotlib.colormaps["viridis"].with_extremes(bad=NO_HIT_COLOR)


def _category_image(ax, object_id, cats: ObjectCategories, **kw):
    """Object ids as an image of category colours; no hit (id < 0) in :data:`NO_HIT_COLOR`."""
    from matplotlib.colors import ListedColormap
    idx = cats.index(object_id).astype(float)
    idx[idx < 0] = np.nan
    colors = cats.colors or [OTHER_COLOR]
    cmap = ListedColormap(colors).with_extremes(bad=NO_HIT_COLOR)
    return ax.imshow(idx, cmap=cmap, vmin=-0.5, vmax=len(colors) - 0.5, interpolation="nearest", **kw)


def _legend_handles(cats: ObjectCategories, *, marker="s", no_hit=False, extra=()):
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls="none", marker=marker, ms=8, color=c, label=lab)
               for c, lab in zip(cats.colors, cats.labels)]
    if no_hit:
        handles.append(Line2D([], [], ls="none", marker="s", ms=8, markerfacecolor=NO_HIT_COLOR,
                              markeredgecolor="0.3", label="no hit"))
    return handles + list(extra)


def _figure_legend(fig, handles, title):
    """A legend right of every panel, outside the axes (constrained layout makes room)."""
    return fig.legend(handles=handles, loc="outside right upper", title=title, fontsize="small",
                      title_fontsize="small", frameon=True)


# -- public entry points -------------------------------------------------------------------------
def make_figure(ds, frame: int = 0, *, color: str | None = None, white_balance: str | None = None):
    """The quick-look figure of one frame of ``ds`` (a ``matplotlib.figure.Figure``, not yet saved).

    Parameters
    ----------
    ds : xarray.Dataset
        A hifi output dataset (one sensor's file or ``motion.nc``).
    frame : int
        Position of the frame along ``frame`` (negative counts from the end).
    color : {"object", "height", "intensity", "reflectivity", "distance"}, optional
        Range sensors: what colours the bird's-eye view and the sensor-layout image (default
        ``"object"``). An error for other plots.
    white_balance : str, optional
        Plots that take it (the ``ccd_camera``: ``"gray-world"``, ``"daylight"``, ``"none"``).

    Raises
    ------
    ValueError
        ``frame`` outside the dataset, an option the plot does not take or a value it does not
        allow, or a dataset no plot covers.
    """
    name = ds.attrs.get("sensor_name", "dataset")
    frame = int(frame)
    if "frame" in ds.dims:
        n = ds.sizes["frame"]
        if not -n <= frame < n:
            raise ValueError(f"frame = {frame!r}: {name!r} has {n} frames (0 .. {n - 1})")
        frame %= n
    options = {k: v for k, v in (("color", color), ("white_balance", white_balance)) if v is not None}
    fn, kind = _figure_function(ds)
    accepted = set(inspect.signature(fn).parameters) - {"ds", "frame"}
    for key, value in options.items():
        if key not in accepted:
            allowed = ", ".join(sorted(accepted)) or "none"
            raise ValueError(f"{key} = {value!r}: the {kind} plot of {name!r} does not take {key} "
                             f"(its options: {allowed})")
    return fn(ds, frame=frame, **options)


def plot_dataset(ds, out, frame: int = 0, *, color: str | None = None,
                 white_balance: str | None = None) -> Path:
    """Write the PNG quick look of one frame of ``ds`` and return its path.

    See :func:`make_figure` for the parameters; ``out`` is the PNG file to write.
    """
    fig = make_figure(ds, frame, color=color, white_balance=white_balance)
    return save_figure(fig, out)


def save_figure(fig, out) -> Path:
    """Write ``fig`` as a PNG at :data:`DPI`, close it and return the path."""
    plt = _pyplot()
    out = Path(out)
    try:
        fig.savefig(out, dpi=DPI)
    finally:
        plt.close(fig)
    return out


def _figure_function(ds):
    """The figure function for ``ds`` and a short name of the plot kind."""
    model = ds.attrs.get("sensor_model")
    custom = _registered_plot(model)
    if custom is not None:
        return custom, f"{model!r}"
    if "depth" in ds and {"row", "col"} <= set(ds["depth"].dims):
        if "camera" in ds["depth"].dims:
            return _panorama_figure, "depth-camera panorama"
        return _depth_figure, "depth image"
    if "position" in ds and "body" in ds["position"].dims:
        return _motion_figure, "motion"
    if "position" in ds and "orientation" in ds and set(ds["position"].dims) == {"frame", "xyz"}:
        return _pose_figure, "pose"
    if "x" in ds:
        return _range_figure, "range sensor"
    name = ds.attrs.get("sensor_name", "dataset")
    raise ValueError(f"no plot for dataset {name!r} (sensor_model {model!r}): expected a depth image, "
                     f"points (x, y, z), a pose time series or motion poses, or a plot registered "
                     f"in the entry-point group {PLOT_GROUP!r}")


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


def _layout(fr):
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


def _range_figure(ds, frame: int = 0, color: str = "object"):
    """Bird's-eye view beside the sensor-layout image (2-D scans), coloured by ``color``."""
    if color not in COLOR_CHOICES:
        raise ValueError(f"color = {color!r}: expected one of {', '.join(map(repr, COLOR_CHOICES))}")
    from matplotlib.ticker import MaxNLocator
    plt = _pyplot()
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
        arrange, elev, yaw, row_dim = _layout(fr)
        if color == "object":
            _category_image(ax2, arrange(np.where(det, oid, -1)), cats, aspect="auto")
            ax2.set_title("object id in the sensor layout")
        else:
            ax2.imshow(arrange(np.where(det, values, np.nan)), aspect="auto", cmap=_sequential(),
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
        _figure_legend(fig, _legend_handles(cats, marker="o", no_hit=no_hit, extra=sensor), "object")
    else:
        fig.colorbar(mappable, ax=axes.ravel().tolist(), label=label, shrink=0.9)
        if sensor:
            ax.legend(loc="best", fontsize="small", framealpha=0.8)
    fig.suptitle(_title(ds, frame))
    return fig


# -- depth images ------------------------------------------------------------------------------
def _depth_figure(ds, frame: int = 0):
    """Depth image beside the object ids of one frame."""
    plt = _pyplot()
    fr = ds.isel(frame=frame)
    rows, cols = fr["depth"].transpose("row", "col").shape
    fig, axes = plt.subplots(1, 2, figsize=(14.0, 0.36 * 14.0 * rows / cols + 1.2), layout="constrained")
    depth = np.asarray(fr["depth"].transpose("row", "col").values, dtype=float)
    im = axes[0].imshow(depth, cmap=_sequential(), interpolation="nearest")
    fig.colorbar(im, ax=axes[0], label=f"depth [{fr['depth'].attrs.get('units', 'm')}] (white: no hit)",
                 shrink=0.9)
    axes[0].set_title("depth along the optical axis")
    oid = np.asarray(fr["object_id"].transpose("row", "col").values).astype(np.int64)
    cats = object_categories(oid, object_names(ds))
    _category_image(axes[1], oid, cats)
    axes[1].set_title("object id")
    for ax in axes:
        ax.set_xlabel("col")
        ax.set_ylabel("row")
    _figure_legend(fig, _legend_handles(cats, no_hit=bool((oid < 0).any())), "object")
    fig.suptitle(_title(ds, frame))
    return fig


def _panorama_figure(ds, frame: int = 0):
    """Distance and object ids of several depth cameras side by side (``raw_lidar``)."""
    plt = _pyplot()
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
    im = axes[0].imshow(dist, cmap=_sequential(), interpolation="nearest", aspect="auto")
    fig.colorbar(im, ax=axes[0], label=f"{var} [m]", shrink=0.9)
    axes[0].set_title(f"{var} (white: no hit)")
    cats = object_categories(oid, object_names(ds))
    _category_image(axes[1], oid, cats, aspect="auto")
    axes[1].set_title("object id")
    centres = cols * (np.arange(n_cam) + 0.5) - 0.5
    for ax in axes:
        for b in range(1, n_cam):
            ax.axvline(b * cols - 0.5, color="k", lw=0.8)
        ax.set_ylabel("row")
    axes[1].set_xticks(centres, [f"{y:.0f}" for y in yaw[order]])
    axes[1].set_xlabel("camera yaw in the sensor frame [deg] (each image: left = larger yaw)")
    _figure_legend(fig, _legend_handles(cats, no_hit=bool((oid < 0).any())), "object")
    fig.suptitle(_title(ds, frame))
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


def _plan_limits(ax, xy, min_span_m=10.0):
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


def _pose_figure(ds, frame: int = 0):
    """Plan-view track beside position, orientation and velocity against time (``pose`` sensor)."""
    plt = _pyplot()
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
    _plan_limits(ax, p[:, :2])
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
    fig.suptitle(_title(ds))
    return fig


def _motion_figure(ds, frame: int = 0):
    """Plan-view tracks of every body of ``motion.nc`` beside the speed of the moving ones."""
    plt = _pyplot()
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
    colour = {b: _PALETTE[s] for b, s in zip(shown, _distinct_slots(shown))}
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
    _plan_limits(ax, pos[:, :, :2])
    ax.set_title("plan view: tracks (o start, -> end); static bodies as markers")
    _figure_legend(fig, handles, "body")
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
