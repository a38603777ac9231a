"""What every exporter shares: the :class:`Exporter` record, its error and warning, dataset access
(required variables, frame-first arrays, detected returns, poses, per-frame file names, beam rings)
and the run directory of the run-level formats (its sensors, ``motion``; each a ``.nc`` file or a
``.zarr`` store, :mod:`hifi.run.reading`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from ..run.dataset import SENSOR_POSE, seconds_since_start
from ..run.reading import MOTION, OUTPUT_SUFFIXES, find_output, open_output, output_paths


class ExportError(ValueError):
    """The dataset cannot be written in the requested format."""


class ExportWarning(UserWarning):
    """An export that succeeds but loses or maps something the user should know about (classes
    with no id in the target format, names changed to fit it, datasets the format cannot hold).
    ``hifi export`` prints it as ``hifi: warning: MESSAGE``."""


@dataclass(frozen=True)
class Exporter:
    """A file format ``hifi export`` writes, registered in the entry-point group ``hifi.exporters``.

    Attributes
    ----------
    name : str
        The ``--format`` value (the entry point's name).
    write : callable
        ``scope = "sensor"``: ``write(ds, path) -> Path | list[Path]`` for one sensor's
        :class:`xarray.Dataset`; ``scope = "run"``: ``write(run_dir, path, *, sensor=None) ->
        Path | list[Path]`` for a whole run directory (``sensor`` names one sensor when the
        format needs one). ``path`` lies in a staging directory; :func:`hifi.exporters.export`
        moves what was written into place only on success.
    suffix : str
        File suffix of the default output name (``.pcd``); empty for a directory.
    scope : str
        ``"sensor"`` (takes one dataset, ``DIR/NAME.nc`` or ``DIR/NAME.zarr``) or ``"run"``
        (takes ``DIR``).
    per_frame : bool
        Whether a dataset of several frames gives one file per frame
        (``<stem>_<frame:06d><suffix>``).
    summary : str
        One line for ``hifi export --help``.
    """

    name: str
    write: Callable
    suffix: str
    scope: str = "sensor"
    per_frame: bool = False
    summary: str = ""

    def __post_init__(self):
        if self.scope not in ("sensor", "run"):
            raise ValueError(f"exporter {self.name!r}: scope = {self.scope!r}; allowed: 'sensor', 'run'")


def require(ds, fmt: str, names, why: str = "") -> None:
    """Raise :class:`ExportError` naming the variables of ``names`` that ``ds`` lacks."""
    missing = [n for n in names if n not in ds.variables]
    if missing:
        raise ExportError(f"{fmt} needs {why or 'the range-sensor variables'} {', '.join(names)}; the dataset "
                          f"(sensor_model {ds.attrs.get('sensor_model')!r}) lacks {', '.join(missing)}")


def frame_first(ds, names) -> dict:
    """Variables ``names`` as arrays (n_frames, *sensor_shape), dims ordered like ``x_noisy``.

    Instants (``timestamp``, decoded to ``datetime64`` or not) come as float64 seconds since the
    run's start (:func:`hifi.run.dataset.seconds_since_start`).
    """
    if "frame" not in ds.dims:
        ds = ds.expand_dims("frame")
    ref = ds["x_noisy"] if "x_noisy" in ds.variables else ds[names[0]]
    dims = ("frame",) + tuple(d for d in ref.dims if d != "frame")
    out = {}
    for n in names:
        var = ds[n]
        if np.asarray(var.values).dtype.kind in "Mm":
            var = var.copy(data=seconds_since_start(ds, n))
        extra = [d for d in var.dims if d not in dims]
        if extra:
            raise ExportError(f"variable {n!r} has dimensions {var.dims}, expected a subset of {dims}")
        out[n] = np.asarray(var.broadcast_like(ref).transpose(*dims).values)
    return out


def n_frames(ds) -> int:
    return int(ds.sizes["frame"]) if "frame" in ds.dims else 1


def sensor_pose(ds, fmt: str):
    """Sensor -> scene pose at the start of every frame: positions (n_frames, 3) [m], Rotation."""
    require(ds, fmt, SENSOR_POSE, why="the sensor pose at the start of each frame,")
    n = n_frames(ds)
    arrs = []
    for name, width in zip(SENSOR_POSE, (3, 4)):
        var = ds[name]
        var = var.transpose("frame", ...) if "frame" in var.dims else var.expand_dims(frame=n)  # static pose
        a = np.asarray(var.values, dtype=float)
        if a.shape != (n, width):
            raise ExportError(f"{fmt}: variable {name!r} has shape {var.shape} over {var.dims}, expected "
                              f"(frame, {width})")
        arrs.append(a)
    return arrs[0], Rotation.from_quat(arrs[1])


def dual_return(ds) -> bool:
    """True for a rotating lidar's dual-return dataset: ``return`` is a third sensor dimension
    after the scan's two (a line scanner's ``(step, return)`` echoes are its scan grid)."""
    ref = ds["x_noisy"] if "x_noisy" in ds.variables else None
    return ref is not None and "return" in ref.dims and len([d for d in ref.dims if d != "frame"]) == 3


def strongest_return(ds):
    """``ds`` with a dual return's slot 0 (the strongest echo) only; other datasets unchanged.

    The organised formats (PCD, PTX) hold one echo per beam and column: they take this one,
    as Velodyne's drivers do in their organised clouds.
    """
    return ds.isel({"return": 0}) if dual_return(ds) else ds


def detected_returns(ds, names) -> dict:
    """The detected returns: ``names`` as flat arrays plus ``frame`` (frame index, int32),
    ``return_number`` and ``number_of_returns`` (uint8, LAS 1.4 convention).

    Order: frame by frame, within a frame the C order of the sensor dimensions.

    Dual return (:func:`dual_return`): a pulse with one echo reports it in both slots (as
    Velodyne's dual mode does); the copy in slot 1 is dropped, so every echo is one point.
    A pulse with two echoes gives two points; ``return_number`` counts them in range order
    (1 = nearer, LAS's "first"), ``number_of_returns`` is 2. Otherwise both are 1.
    """
    dual = dual_return(ds)
    want = list(names) + ["detected"] + (["distance_noisy"] if dual and "distance_noisy" not in names else [])
    arrs = frame_first(ds, want)
    det = arrs.pop("detected").astype(bool)
    number = np.ones(det.shape, dtype=np.uint8)
    count = np.ones(det.shape, dtype=np.uint8)
    if dual:
        d = arrs["distance_noisy"] if "distance_noisy" in names else arrs.pop("distance_noisy")
        d = np.asarray(d, dtype=float)
        both = det[..., 0] & det[..., 1]
        twin = both & (d[..., 0] == d[..., 1])
        det = det.copy()
        det[..., 1] &= ~twin
        two = det[..., 0] & det[..., 1]
        count[..., 0] = count[..., 1] = np.where(two, 2, 1)
        second_nearer = two & (d[..., 1] < d[..., 0])
        number[..., 0] = np.where(second_nearer, 2, 1)
        number[..., 1] = np.where(two & ~second_nearer, 2, 1)
    frame = np.broadcast_to(np.arange(det.shape[0], dtype=np.int32).reshape((-1,) + (1,) * (det.ndim - 1)),
                            det.shape)
    out = {n: a[det] for n, a in arrs.items()}
    out["frame"] = frame[det]
    out["return_number"] = number[det]
    out["number_of_returns"] = count[det]
    return out


def frame_paths(path: Path, n_frames: int, ext: str) -> list[Path]:
    """``[path]`` for one frame, else ``<stem>_<frame:06d><ext>`` beside ``path``."""
    if n_frames == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{f:06d}{ext}") for f in range(n_frames)]


def scan_grid_order(ds) -> tuple[np.ndarray, np.ndarray]:
    """Layout of a scan with two sensor dimensions for the organised formats (PCD, PTX).

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset whose ``x_noisy`` has dims (``frame``, d0, d1).

    Returns
    -------
    columns : numpy.ndarray of int
        Indices along d0 in acquisition order: by the earliest ``timestamp`` of each d0 slice in
        the first frame (stable; dataset order without ``timestamp``). For a rotating lidar
        (``step``) the steps as stored, for ``generic_grid`` (``theta`` increasing, acquired from
        ``theta_max``) from left to right.
    rows : numpy.ndarray of int
        Indices along d1, highest elevation first: by the mean ``pitch`` of each d1 slice,
        decreasing (stable; dataset order without ``pitch``). For a rotating lidar the lasers
        top to bottom, whatever their id order.
    """
    arrs = frame_first(ds, [n for n in ("timestamp", "pitch") if n in ds.variables])
    shape = np.asarray(frame_first(ds, ["detected"])["detected"]).shape
    if len(shape) != 3:
        raise ExportError(f"expected a scan with two sensor dimensions, got shape {shape[1:]}")
    n0, n1 = shape[1], shape[2]
    columns, rows = np.arange(n0), np.arange(n1)
    if "timestamp" in arrs:
        t = np.asarray(arrs["timestamp"][0], dtype=float)
        first = np.min(np.where(np.isfinite(t), t, np.inf), axis=1)
        columns = np.argsort(first, kind="stable")
    if "pitch" in arrs:
        pitch = np.asarray(arrs["pitch"], dtype=float)
        mean = np.array([np.mean(col[np.isfinite(col)]) if np.isfinite(col).any() else 0.0
                         for col in np.moveaxis(pitch, 2, 0).reshape(n1, -1)])
        rows = np.argsort(-mean, kind="stable")
    return columns, rows


# -- run directories (scope "run") --------------------------------------------------------------
#: Variables that make a dataset a range sensor's (:mod:`hifi.run.dataset`).
RANGE_REQUIRED = ("x_noisy", "y_noisy", "z_noisy", "detected", "object_id", "timestamp")


def _either(name: str) -> str:
    return " or ".join(name + s for s in OUTPUT_SUFFIXES)


def run_datasets(run_dir: Path) -> list[str]:
    """Names of the model datasets of a run directory (``DIR/<name>.nc`` files and
    ``DIR/<name>.zarr`` stores), sorted, without the ground truth ``motion``
    (:class:`hifi.run.simulation.MotionRecorder`)."""
    return [name for name in output_paths(run_dir) if name != MOTION]


def open_run_dataset(run_dir: Path, name: str, fmt: str):
    """Open ``DIR/<name>.nc`` or ``DIR/<name>.zarr`` lazily.

    Raises
    ------
    ExportError
        No such dataset in the run (the message lists those there are).
    """
    path = find_output(run_dir, name)
    if path is None:
        have = run_datasets(run_dir)
        raise ExportError(f"{fmt}: the run {run_dir} has no sensor {name!r} (no {_either(name)}); its datasets: "
                          f"{', '.join(have) or 'none'}")
    return open_output(path)


def is_range_dataset(ds) -> bool:
    """Whether ``ds`` holds a range sensor's returns (every variable of :data:`RANGE_REQUIRED`)."""
    return all(n in ds.variables for n in RANGE_REQUIRED)


def open_motion(run_dir: Path, fmt: str):
    """Open the run's ``motion.nc`` or ``motion.zarr`` lazily; :class:`ExportError` if it is missing."""
    path = find_output(run_dir, MOTION)
    if path is None:
        raise ExportError(f"{fmt}: the run {run_dir} has no {_either(MOTION)} (the ground truth every run "
                          f"writes)")
    return open_output(path)


def beam_rings(ds) -> np.ndarray:
    """Ring number of every beam: 0 for the lowest elevation, counting up.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset; its scan dimensions are those of ``x_noisy`` other than
        ``frame`` and a dual return's ``return``.

    Returns
    -------
    numpy.ndarray of uint16
        Shape of the scan dimensions (a dual return's two echoes share their beam's ring).

    Notes
    -----
    The elevation axis is the scan dimension along which the mean ``pitch`` (over the first
    frame) varies most: ``laser`` of a rotating lidar, ``layer`` of a line scanner, ``row`` of
    a ToF camera, ``phi`` of ``generic_grid``, ``beam`` of an Ouster. Its indices are ranked by
    that mean pitch, lowest first (ties in dataset order); the other dimensions share it. A
    one-dimensional scan, or a dataset without ``pitch``, is ring 0 throughout.
    """
    ref = ds["x_noisy"]
    dims = [d for d in ref.dims if d not in ("frame", "return")]
    shape = tuple(int(ds.sizes[d]) for d in dims)
    rings = np.zeros(shape, dtype=np.uint16)
    if len(dims) < 2 or "pitch" not in ds.variables:
        return rings
    pitch = ds["pitch"]
    if "frame" in pitch.dims:
        pitch = pitch.isel(frame=0)
    if "return" in pitch.dims:
        pitch = pitch.isel({"return": 0})
    pitch = pitch.broadcast_like(ref.isel({d: 0 for d in ref.dims if d not in dims})).transpose(*dims)
    p = np.asarray(pitch.values, dtype=float)
    best, spread, means = None, -1.0, None
    for axis in range(len(dims)):
        other = tuple(a for a in range(len(dims)) if a != axis)
        with np.errstate(all="ignore"):
            counts = np.sum(np.isfinite(p), axis=other)
            m = np.where(counts > 0, np.nansum(p, axis=other) / np.maximum(counts, 1), np.nan)
        s = float(np.nanmax(m) - np.nanmin(m)) if np.isfinite(m).any() else 0.0
        if s > spread:
            best, spread, means = axis, s, m
    rank = np.empty(len(means), dtype=np.uint16)
    rank[np.argsort(np.where(np.isfinite(means), means, np.inf), kind="stable")] = np.arange(len(means))
    view = [1] * len(dims)
    view[best] = len(means)
    return np.broadcast_to(rank.reshape(view), shape).copy()
