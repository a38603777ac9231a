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

Object ids are drawn as categories named after ``[[objects]]``
(:func:`~hifi.viz.plot_common.object_names`), at most :data:`MAX_LEGEND_ENTRIES` legend entries
(the least frequent objects grouped as "other").

This module picks the figure function and writes the PNG. The built-in kinds' figure functions
are :mod:`hifi.viz.plot_kinds`; what every quick look shares (the pyplot backend, the dataset's
scenario and times, object categories, colours and legends) is :mod:`hifi.viz.plot_common`.
Their names are importable from here too.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from .plot_common import (  # noqa: F401  (re-exported: importable from here as before the split)
    ATMOSPHERE_COLOR, MAX_LEGEND_ENTRIES, NO_HIT_COLOR, OTHER_COLOR, PALETTE, ObjectCategories, category_image,
    distinct_slots, figure_legend, legend_handles, object_categories, object_names, pyplot, scenario_document,
    scenario_sensor_params, seconds, sequential, title)
from .plot_kinds import (  # noqa: F401
    COLOR_CHOICES, depth_figure, layout, motion_figure, panorama_figure, plan_limits, pose_figure, range_figure)

#: Entry-point group of plot functions for models the built-in quick looks do not cover.
PLOT_GROUP = "hifi.plots"
#: Resolution of the PNG files [dots per inch].
DPI = 110

# The names these had while they were private to this module; sensors.ccd_plot, sensors.gps_plot,
# sensors.gnss_receiver_plot, autonomy.vehicle_plot and the tests import some of them from here.
_pyplot = pyplot
_PALETTE = PALETTE
_scenario_sensor_params = scenario_sensor_params
_title = title
_distinct_slots = distinct_slots
_sequential = sequential
_category_image = category_image
_legend_handles = legend_handles
_figure_legend = figure_legend
_layout = layout
_range_figure = range_figure
_depth_figure = depth_figure
_panorama_figure = panorama_figure
_plan_limits = plan_limits
_pose_figure = pose_figure
_motion_figure = motion_figure


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
