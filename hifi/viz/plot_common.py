"""What every quick-look plot shares (:mod:`hifi.viz.plot`, and the plot modules of the model
packages: :mod:`sensors.ccd_plot`, :mod:`sensors.gps_plot`, :mod:`autonomy.vehicle_plot` ...).

- :func:`pyplot`: ``matplotlib.pyplot`` on the Agg backend unless one was chosen;
- the dataset's scenario and times: :func:`scenario_document`, :func:`object_names`,
  :func:`scenario_sensor_params`, :func:`seconds`, and a figure's :func:`title`;
- object ids as legend categories (:func:`object_categories`) with colours that follow the id
  (:data:`PALETTE`), drawn as an image (:func:`category_image`) and in a legend
  (:func:`legend_handles`, :func:`figure_legend`); the colour map of continuous quantities
  (:func:`sequential`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..run.dataset import ATMOSPHERE_ID


def pyplot():
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


#: Largest number of entries in an object legend; rarer objects are grouped as "other".
MAX_LEGEND_ENTRIES = 15

#: Categorical colours of object ids (tab20 without its greys, dark shades first); id i takes
#: colour i mod 18 unless another object in the same plot already has it.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
            "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5")
#: Colour of the grouped "other" objects, and of "no hit" pixels in images.
OTHER_COLOR = "0.45"
#: Colour of returns from the atmosphere (``object_id`` -2: fog, rain, snow).
ATMOSPHERE_COLOR = "#9ecae1"
NO_HIT_COLOR = "white"


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


def scenario_sensor_params(ds) -> dict:
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


def title(ds, frame=None) -> str:
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


def distinct_slots(ids) -> list[int]:
    """Palette slot of each id: id mod 18, a colliding id moved to the first free slot."""
    slots = [int(i) % len(PALETTE) for i in ids]
    free = [k for k in range(len(PALETTE)) if k not in set(slots)]
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
        the most points keep their entry. Colours follow the id (:data:`PALETTE`, id mod 18),
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
    colors = [PALETTE[s] for s in distinct_slots(ids)]
    if atmosphere:                  # returns from fog, rain or snow: their own entry, first
        ids = np.concatenate([[ATMOSPHERE_ID], ids])
        labels.insert(0, "atmosphere (fog, rain, snow)")
        colors.insert(0, ATMOSPHERE_COLOR)
    if other.size:
        labels.append(f"other ({other.size} objects)")
        colors.append(OTHER_COLOR)
    return ObjectCategories(ids.astype(np.int64), labels, colors, other.astype(np.int64))


def sequential():
    """The colour map of continuous quantities; NaN (no hit) in :data:`NO_HIT_COLOR`."""
    import matplotlib
    return matplotlib.colormaps["viridis"].with_extremes(bad=NO_HIT_COLOR)


def category_image(ax, object_id, cats: ObjectCategories, **kw):
    """Object ids as an image of category colours; no hit (id < 0) in :data:`NO_HIT_COLOR`."""
    from matplotlib.colors import ListedColormap
    idx = cats.index(object_id).astype(float)
    idx[idx < 0] = np.nan
    colors = cats.colors or [OTHER_COLOR]
    cmap = ListedColormap(colors).with_extremes(bad=NO_HIT_COLOR)
    return ax.imshow(idx, cmap=cmap, vmin=-0.5, vmax=len(colors) - 0.5, interpolation="nearest", **kw)


def legend_handles(cats: ObjectCategories, *, marker="s", no_hit=False, extra=()):
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls="none", marker=marker, ms=8, color=c, label=lab)
               for c, lab in zip(cats.colors, cats.labels)]
    if no_hit:
        handles.append(Line2D([], [], ls="none", marker="s", ms=8, markerfacecolor=NO_HIT_COLOR,
                              markeredgecolor="0.3", label="no hit"))
    return handles + list(extra)


def figure_legend(fig, handles, title):
    """A legend right of every panel, outside the axes (constrained layout makes room)."""
    return fig.legend(handles=handles, loc="outside right upper", title=title, fontsize="small",
                      title_fontsize="small", frameon=True)


