"""The data of the replay page (:mod:`hifi.viz.view`): a run directory read and sorted by what
the page draws, the slider's instants, and each sensor frame as the page stores it.

- :func:`open_run` opens every dataset of a run directory (:class:`RunDatasets`);
- :func:`replay_times` and :func:`held_frames`: the slider's instants and the frame each sensor
  shows at each of them;
- images: :func:`png_bytes` (an 8-bit PNG written with ``zlib``), block-averaged down to
  :data:`IMAGE_MAX_WIDTH_PX`; a camera frame shown as ``hifi plot`` shows it;
- points: the (subsampled) returns of one frame (:class:`FramePoints`), their object and class
  names, and the 0..255 levels and colour scales the page colours them with.

Nothing here builds the figure or writes the page (:mod:`hifi.viz.view`).
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

#: Default cap on the slider steps [1].
MAX_FRAMES = 200
#: Camera images and depth maps are block-averaged down to at most this width [px].
IMAGE_MAX_WIDTH_PX = 400
#: Frame instants closer than this are one slider step [s] (timestamps are float64 seconds
#: since the start; frames of sensors at commensurate rates fall on the same instants to
#: well within it).
TIME_MERGE_S = 1e-6


class RunDatasets(NamedTuple):
    """The datasets of a run directory, by what the page does with them."""

    range_sensors: dict     #: name -> dataset with reported points (:func:`point_names`)
    cameras: dict           #: name -> ``ccd_camera``-like dataset (``image`` over row, col, channel)
    depth_maps: dict        #: name -> dataset with ``depth`` over (frame, row, col)
    gps: dict               #: name -> GPS receiver dataset (azimuth, elevation over frame, sv)
    motion: object          #: the ``motion`` dataset (``motion.nc`` or ``motion.zarr``), or None
    not_shown: list         #: names of the datasets the page does not draw



# --------------------------------------------------------------------------------------------
# reading the run
# --------------------------------------------------------------------------------------------

def open_run(run_dir) -> RunDatasets:
    """Open every dataset of ``run_dir`` (``NAME.nc`` files and ``NAME.zarr`` stores,
    :func:`hifi.run.reading.open_run`) and sort them by what the page draws.

    Raises
    ------
    FileNotFoundError
        ``run_dir`` does not exist.
    ValueError
        ``run_dir`` is not a directory, holds no dataset, or a dataset is unreadable.
    """
    from ..run.reading import open_run as open_datasets

    run_dir = Path(run_dir)
    datasets = open_datasets(run_dir)
    out = RunDatasets({}, {}, {}, {}, None, [])
    for name, ds in datasets.items():
        if "position" in ds and "body" in ds.dims:
            out = out._replace(motion=ds)
        elif "frame" not in ds.dims:
            out.not_shown.append(name)
        elif point_names(ds) is not None:
            out.range_sensors[name] = ds
        elif "image" in ds and {"row", "col"} <= set(ds["image"].dims):
            out.cameras[name] = ds
        elif "depth" in ds and set(ds["depth"].dims) == {"frame", "row", "col"}:
            out.depth_maps[name] = ds
        elif {"azimuth", "elevation"} <= set(ds.data_vars) and "sv" in ds.dims:
            out.gps[name] = ds
        else:
            out.not_shown.append(name)
        if name in out.not_shown:
            ds.close()
    if not (out.range_sensors or out.cameras or out.depth_maps or out.gps or out.motion is not None):
        for d in datasets.values():
            d.close()
        raise ValueError(f"{run_dir}: none of its datasets can be replayed ({', '.join(out.not_shown)}); "
                         f"expected range sensors, cameras, depth maps, GPS or motion")
    return out


def frame_seconds(ds) -> np.ndarray:
    from ..run.dataset import seconds_since_start
    if "frame_time" in ds.variables:
        return np.asarray(seconds_since_start(ds, "frame_time"), dtype=float)
    return np.asarray(seconds_since_start(ds, "time"), dtype=float)


def replay_times(frame_times, max_frames: int = MAX_FRAMES):
    """The slider's instants: every distinct frame instant, thinned to ``max_frames``.

    Parameters
    ----------
    frame_times : sequence of (n_i,) array_like
        Frame instants of each sensor shown [s].
    max_frames : int
        Most slider steps; more instants are thinned to evenly spaced ones (first and last kept).

    Returns
    -------
    (times, n_instants) : ((k,) numpy.ndarray [s], int)
        The instants of the steps, and how many distinct instants the run has.
    """
    t = np.concatenate([np.asarray(x, dtype=float).ravel() for x in frame_times] or [np.zeros(0)])
    t = t[np.isfinite(t)]
    if t.size == 0:
        return np.zeros(1), 1
    ticks = np.unique(np.round(t / TIME_MERGE_S).astype(np.int64))
    times = ticks * TIME_MERGE_S
    n = times.size
    if n > max_frames:
        times = times[np.unique(np.round(np.linspace(0, n - 1, max_frames)).astype(int))]
    return times, n


def held_frames(frame_times, times) -> np.ndarray:
    """Index of the latest frame at or before each instant of ``times`` (-1: none yet)."""
    ft = np.asarray(frame_times, dtype=float)
    return np.searchsorted(ft, np.asarray(times, dtype=float) + 0.5 * TIME_MERGE_S, side="right") - 1


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------

def png_bytes(image) -> bytes:
    """An 8-bit PNG of ``image`` (rows, cols) grey or (rows, cols, 3) RGB, uint8 or 0..1 floats.

    Notes
    -----
    The PNG specification (W3C / ISO/IEC 15948:2004): signature (sec. 5.2), IHDR with bit depth
    8 and colour type 0 (grey) or 2 (RGB) (sec. 11.2.2), one IDAT holding the zlib stream of
    the scanlines, each prefixed by its filter type, here 1 "Sub" (sec. 9.2: each byte minus
    the byte one pixel to its left, modulo 256), and IEND; every chunk ends with the CRC-32 of
    its type and data (sec. 5.3, ``zlib.crc32``).
    """
    a = np.asarray(image)
    if a.dtype != np.uint8:
        a = np.round(np.clip(np.nan_to_num(a.astype(float)), 0.0, 1.0) * 255.0).astype(np.uint8)
    if a.ndim == 2:
        a, colour_type = a[..., None], 0
    elif a.ndim == 3 and a.shape[2] == 3:
        colour_type = 2
    else:
        raise ValueError(f"png_bytes: expected (rows, cols) or (rows, cols, 3), got shape {a.shape}")
    h, w, ch = a.shape
    rows = a.reshape(h, w * ch).astype(np.int16)
    sub = rows.copy()
    sub[:, ch:] = rows[:, ch:] - rows[:, :-ch]
    raw = np.concatenate([np.ones((h, 1), np.uint8), (sub % 256).astype(np.uint8)], axis=1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
            + chunk(b"IEND", b""))


def data_uri(image) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(image)).decode("ascii")


def shrink(a, max_width: int = IMAGE_MAX_WIDTH_PX):
    """Block mean of ``a`` (rows, cols[, ch]) by the smallest integer factor that fits ``max_width``."""
    f = max(1, math.ceil(a.shape[1] / max_width))
    if f == 1:
        return a, 1
    h, w = (a.shape[0] // f) * f, (a.shape[1] // f) * f
    b = a[:h, :w].reshape(h // f, f, w // f, f, *a.shape[2:])
    with np.errstate(invalid="ignore"):
        return np.nanmean(b, axis=(1, 3)), f


def camera_display(ds, j: int) -> np.ndarray:
    """Frame ``j`` of a camera as display values 0..1 (gray-world white balance, gamma 1/2.2),
    as ``hifi plot`` shows it (:mod:`hifi.viz.imaging`, shared with :func:`sensors.ccd_plot.plot_camera`)."""
    from .imaging import display, white_balance_gains
    img = ds["image"].isel(frame=j)
    img = img.transpose("row", "col", *[d for d in img.dims if d not in ("row", "col")])
    image = np.asarray(img.values, dtype=float)
    if image.ndim == 2:
        image = image[..., None]
    black = float(ds.attrs.get("black_level_dn", 0.0))
    max_dn = float(ds.attrs.get("max_dn", np.nanmax(image) if np.isfinite(image).any() else 1.0))
    gains = white_balance_gains(image, "gray-world", black_level_dn=black, saturation_dn=max_dn)
    return display((image - black) * gains, max_dn - black, np.any(image >= max_dn, axis=-1))


def colour_lut(scale_name: str = "Viridis") -> np.ndarray:
    """(256, 3) uint8 colours of a plotly sequential colour scale."""
    import plotly.colors as pc
    stops = [pc.hex_to_rgb(c) if c.startswith("#") else pc.unlabel_rgb(c)
             for c in getattr(pc.sequential, scale_name)]
    stops = np.asarray(stops, dtype=float)
    x = np.linspace(0.0, 1.0, len(stops))
    u = np.linspace(0.0, 1.0, 256)
    return np.stack([np.interp(u, x, stops[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


# --------------------------------------------------------------------------------------------
# points
# --------------------------------------------------------------------------------------------

class FramePoints(NamedTuple):
    """The shown (subsampled) returns of one frame of a range sensor."""

    xyz: np.ndarray          #: (n, 3) reported points, scene frame [m]
    object_id: np.ndarray    #: (n,) object hit (-2 atmosphere)
    intensity: np.ndarray    #: (n,) the sensor's intensity, its own scale


def point_names(ds):
    """The variables of a dataset's reported points in the scene frame, or None: a range
    sensor's ``x_noisy``, ``y_noisy``, ``z_noisy``, or a radar's detections ``x``, ``y``, ``z``
    (over ``frame`` and ``detection``; NaN past the frame's last detection)."""
    names = set(ds.data_vars)
    if {"x_noisy", "y_noisy", "z_noisy"} <= names:
        return "x_noisy", "y_noisy", "z_noisy"
    if {"x", "y", "z"} <= names and "detection" in ds.dims:
        return "x", "y", "z"
    return None


def detected_count(ds, j: int) -> int:
    f = ds.isel(frame=j)
    if "detected" in f:
        return int(np.count_nonzero(np.asarray(f["detected"].values)))
    return int(np.count_nonzero(np.isfinite(np.asarray(f[point_names(ds)[0]].values))))


def frame_points(ds, j: int, fraction: float, rng) -> FramePoints:
    """A share ``fraction`` of frame ``j``'s reported points (:func:`point_names`), with their
    object ids and intensities (a radar's: its detections' RCS [dBsm])."""
    import xarray as xr
    f = ds.isel(frame=j)
    xs, ys, zs = point_names(ds)
    ref = f[xs]
    brightness = "intensity" if "intensity" in f else "rcs" if "rcs" in f else None
    parts = [f[xs], f[ys], f[zs],
             f["detected"] if "detected" in f else xr.ones_like(ref, dtype=bool),
             f["object_id"] if "object_id" in f else xr.full_like(ref, -1, dtype=np.int32),
             f[brightness] if brightness else xr.full_like(ref, np.nan)]
    parts = [p.transpose(*ref.dims, ...) for p in xr.broadcast(*parts)]
    x, y, z, det, oid, inten = (np.asarray(p.values).ravel() for p in parts)
    keep = np.flatnonzero(det.astype(bool) & np.isfinite(x) & np.isfinite(y) & np.isfinite(z))
    m = min(keep.size, int(math.floor(fraction * keep.size)))
    if m < keep.size:
        keep = np.sort(rng.choice(keep, size=m, replace=False))
    xyz = np.stack([x[keep], y[keep], z[keep]], axis=1)
    return FramePoints(xyz, oid[keep].astype(np.int64), inten[keep].astype(float))


def categories(datasets) -> tuple[list, list]:
    """Object names and class names of the run (from the first dataset that names them)."""
    for ds in datasets:
        if "object_name" in ds.variables:
            names = [str(s) for s in np.asarray(ds["object_name"].values)]
            classes = ([str(s) for s in np.asarray(ds["object_class"].values)]
                       if "object_class" in ds.variables else ["unlabelled"] * len(names))
            return names, classes
    return [], []


def discrete_scale(colours) -> list:
    """A plotly colour scale with one flat band per category (codes 0..n-1 over cmin -0.5, cmax n - 0.5)."""
    n = len(colours)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def palette(n: int) -> list:
    import plotly.colors as pc
    base = pc.qualitative.Plotly + pc.qualitative.D3 + pc.qualitative.Dark24 + pc.qualitative.Light24
    return [base[i % len(base)] for i in range(n)]


def levels(v, lo: float, hi: float) -> np.ndarray:
    """Values mapped linearly from lo..hi onto 0..255 (uint8), clipped; NaN -> 0."""
    span = hi - lo if hi > lo else 1.0
    u = np.clip((np.nan_to_num(np.asarray(v, dtype=float), nan=lo) - lo) / span, 0.0, 1.0)
    return np.round(u * 255.0).astype(np.uint8)


def percentiles(values, q=(1.0, 99.0)) -> tuple[float, float]:
    v = np.concatenate([np.asarray(x, dtype=float).ravel() for x in values] or [np.zeros(0)])
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0, 1.0
    lo, hi = np.percentile(v, q)
    return float(lo), float(hi if hi > lo else lo + 1.0)

