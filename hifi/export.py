"""Exporters from hifi range-sensor datasets to the point-cloud formats of the field.

``hifi export DATASET.nc --format pcd|ply|las|ptx|evd|kitti`` calls :func:`export`. Every writer
is a small function ``write_<format>(ds, path)`` that a user may also call directly; the readers
``read_pcd``, ``read_ply``, ``read_evd``, ``read_kitti_bin`` and ``read_ptx`` read the files back
(use laspy to read LAS).

Layout decisions shared by all formats
--------------------------------------
* Input is a range-sensor dataset (CONTRACTS "Datasets"): a ``frame`` dimension followed by the
  sensor's own dimensions, in the order of ``x_noisy``'s dimensions. A dataset without ``frame``
  is treated as one frame.
* "Frame index" is the 0-based position along ``frame``.
* Point lists (PLY, LAS, EVD, KITTI) hold the *detected* returns only (``detected`` true), the
  reported (noisy) points, in frame order and within a frame in the C order of the sensor
  dimensions (acquisition order for ``generic_grid`` and the rotating lidars).
* Formats with one file per frame (PCD, KITTI): a one-frame dataset is written to ``out``
  itself; with more than one frame, ``<stem>_<frame:06d>.<ext>`` next to ``out`` (``out`` itself
  is not written). Those writers always return the list of paths.
* :func:`export` writes into a temporary directory beside ``out`` and moves the files into place
  only when the writer has succeeded, so a failed export leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import NamedTuple

import datetime as _dt

import numpy as np
from scipy.spatial.transform import Rotation

from .timebase import Epoch

#: Formats ``hifi export`` writes (CONTRACTS "Command line").
FORMATS = ("pcd", "ply", "las", "ptx", "evd", "kitti")

#: The range-sensor point variables of CONTRACTS, reported point first.
_NOISY_XYZ = ("x_noisy", "y_noisy", "z_noisy")
_TRUE_XYZ = ("x", "y", "z")
_POSE = ("sensor_position", "sensor_orientation")

#: Offset of LAS "adjusted standard GPS time" [s]: GPS seconds since the GPS epoch minus 1e9
#: (ASPRS LAS 1.4 R15, Global Encoding bit 0).
LAS_ADJUSTED_GPS_OFFSET_S = 1_000_000_000

#: LAS coordinate scale [m]: 0.1 mm, so a coordinate read back is within half of it, 0.05 mm,
#: of the dataset value, and int32 coordinates span +-214 km around the offset.
LAS_SCALE_M = 1e-4

#: Intensity [1] mapped to the LAS full scale 65535 (see :func:`write_las`).
LAS_INTENSITY_FULL_SCALE = 1.0

#: BlenSor EVD record: 11 float64 and one uint64, little endian, 96 bytes (see :func:`write_evd`).
EVD_RECORD = np.dtype([("timestamp", "<f8"), ("yaw", "<f8"), ("pitch", "<f8"), ("distance", "<f8"),
                       ("distance_noisy", "<f8"), ("x", "<f8"), ("y", "<f8"), ("z", "<f8"),
                       ("x_noisy", "<f8"), ("y_noisy", "<f8"), ("z_noisy", "<f8"), ("object_id", "<u8")])

#: PCD fields written by :func:`write_pcd` (all float32).
PCD_FIELDS = ("x", "y", "z", "intensity", "x_true", "y_true", "z_true")

#: PLY vertex properties written by :func:`write_ply`: (name, PLY type, numpy dtype).
PLY_PROPERTIES = (("x", "double", "<f8"), ("y", "double", "<f8"), ("z", "double", "<f8"),
                  ("intensity", "float", "<f4"), ("object_id", "int", "<i4"), ("frame", "int", "<i4"),
                  ("timestamp", "double", "<f8"))


class ExportError(ValueError):
    """The dataset cannot be written in the requested format."""


def export(ds, fmt: str, out) -> list[Path]:
    """Write dataset ``ds`` in format ``fmt`` to ``out``.

    Parameters
    ----------
    ds : xarray.Dataset
        A range-sensor dataset (CONTRACTS "Datasets").
    fmt : str
        One of :data:`FORMATS`.
    out : path-like
        Output file. For the per-frame formats (``pcd``, ``kitti``) and a dataset with more than
        one frame, the files are ``<stem>_<frame:06d>.<ext>`` beside ``out``.

    Returns
    -------
    list of pathlib.Path
        Every file written, in frame order (one element for the single-file formats).

    Raises
    ------
    ExportError
        The format is unknown or the dataset lacks what the format needs (the message names
        the missing variables or attributes). Nothing is left written.
    FileNotFoundError
        The directory of ``out`` does not exist.
    """
    if fmt not in FORMATS:
        raise ExportError(f"format {fmt!r} is not supported; allowed: {', '.join(FORMATS)}")
    out = Path(out)
    writer = {"pcd": write_pcd, "ply": write_ply, "las": write_las, "ptx": write_ptx,
              "evd": write_evd, "kitti": write_kitti}[fmt]
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{out.parent}: no such directory for {out.name}")
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        written = writer(ds, staging / out.name)
        written = [written] if isinstance(written, Path) else list(written)
        final = [out.parent / p.name for p in written]
        for src, dst in zip(written, final):
            os.replace(src, dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


# --------------------------------------------------------------------------- dataset access


def _require(ds, fmt: str, names, why: str = "") -> None:
    """Raise :class:`ExportError` naming the variables of ``names`` that ``ds`` lacks."""
    missing = [n for n in names if n not in ds.variables]
    if missing:
        raise ExportError(f"{fmt} needs {why or 'the range-sensor variables'} {', '.join(names)}; the dataset "
                          f"(sensor_model {ds.attrs.get('sensor_model')!r}) lacks {', '.join(missing)}")


def _frame_first(ds, names) -> dict:
    """Variables ``names`` as arrays (n_frames, *sensor_shape), dims ordered like ``x_noisy``."""
    if "frame" not in ds.dims:
        ds = ds.expand_dims("frame")
    ref = ds["x_noisy"] if "x_noisy" in ds.variables else ds[names[0]]
    dims = ("frame",) + tuple(d for d in ref.dims if d != "frame")
    out = {}
    for n in names:
        var = ds[n]
        extra = [d for d in var.dims if d not in dims]
        if extra:
            raise ExportError(f"variable {n!r} has dimensions {var.dims}, expected a subset of {dims}")
        out[n] = np.asarray(var.broadcast_like(ref).transpose(*dims).values)
    return out


def _n_frames(ds) -> int:
    return int(ds.sizes["frame"]) if "frame" in ds.dims else 1


def _pose(ds, fmt: str):
    """Sensor -> scene pose at the start of every frame: positions (n_frames, 3) [m], Rotation."""
    _require(ds, fmt, _POSE, why="the sensor pose at the start of each frame,")
    n = _n_frames(ds)
    arrs = []
    for name, width in zip(_POSE, (3, 4)):
        var = ds[name]
        var = var.transpose("frame", ...) if "frame" in var.dims else var.expand_dims(frame=n)  # static pose
        a = np.asarray(var.values, dtype=float)
        if a.shape != (n, width):
            raise ExportError(f"{fmt}: variable {name!r} has shape {var.shape} over {var.dims}, expected "
                              f"(frame, {width})")
        arrs.append(a)
    return arrs[0], Rotation.from_quat(arrs[1])


def _detected(ds, names) -> dict:
    """The detected returns: ``names`` as flat arrays plus ``frame`` (frame index, int32).

    Order: frame by frame, within a frame the C order of the sensor dimensions.
    """
    arrs = _frame_first(ds, list(names) + ["detected"])
    det = arrs.pop("detected").astype(bool)
    frame = np.broadcast_to(np.arange(det.shape[0], dtype=np.int32).reshape((-1,) + (1,) * (det.ndim - 1)),
                            det.shape)
    out = {n: a[det] for n, a in arrs.items()}
    out["frame"] = frame[det]
    return out


def _frame_paths(path: Path, n_frames: int, ext: str) -> list[Path]:
    """``[path]`` for one frame, else ``<stem>_<frame:06d><ext>`` beside ``path``."""
    if n_frames == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{f:06d}{ext}") for f in range(n_frames)]


# --------------------------------------------------------------------------- PCD


class PcdCloud(NamedTuple):
    """A PCD file read by :func:`read_pcd`.

    Attributes
    ----------
    header : dict
        Header keys (``VERSION``, ``FIELDS``, ``WIDTH``, ``HEIGHT``, ``VIEWPOINT``, ``POINTS``,
        ``DATA`` ...) as lists of strings, ``WIDTH``, ``HEIGHT`` and ``POINTS`` as int.
    points : numpy.ndarray
        Structured array of shape (HEIGHT, WIDTH), one field per PCD field.
    """

    header: dict
    points: np.ndarray


def write_pcd(ds, path: Path) -> list[Path]:
    """Point Cloud Library PCD v0.7, binary, organised, one file per frame.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset with ``x_noisy y_noisy z_noisy x y z intensity detected``;
        ``sensor_position`` and ``sensor_orientation`` are used for ``VIEWPOINT`` when present.
    path : pathlib.Path
        Output file; with more than one frame, ``<stem>_<frame:06d>.pcd`` beside it.

    Returns
    -------
    list of pathlib.Path
        One path per frame, in frame order.

    Notes
    -----
    * ``DATA binary`` (not ascii): 28 bytes per point instead of about 80, and exact float32
      values; fields are little endian as PCL writes them on every common host.
    * Fields, all float32 (``SIZE 4``, ``TYPE F``): ``x y z intensity`` = the reported (noisy)
      point in the scene frame and its intensity (PCL's ``PointXYZI`` loads these), then
      ``x_true y_true z_true`` = the true hit point, in the same file (not a second file), so
      clean and noisy points stay aligned cell by cell.
    * Organised: every ray has a cell. A ray that was not detected has ``x y z intensity`` NaN
      (PCL's invalid point); ``x_true`` is NaN only where nothing was hit within range (a hit
      below the detection threshold keeps its true point).
    * ``WIDTH`` x ``HEIGHT`` are the sensor's non-frame dimensions in dataset order: ``WIDTH`` =
      size of the first, ``HEIGHT`` = size of the second (product of the others for more than
      two; 1 for a one-dimensional sensor). PCD stores rows of ``WIDTH`` points, so dataset
      element ``[i0, i1]`` is PCD cell (row ``i1``, column ``i0``), i.e. points are in Fortran
      order of the sensor dimensions. For ``generic_grid`` (``theta``, ``phi``) a PCD row is one
      elevation, columns left (``theta_max``) to right; for a rotating lidar (``step``, ``laser``)
      a row is one laser ring, as in ROS's organised Velodyne clouds. A camera-like sensor
      whose last two dimensions are (``row``, ``col``), such as the ToF camera, is written as an
      image instead: ``WIDTH`` = columns, PCD rows = image rows (C order).
    * ``VIEWPOINT`` is the sensor pose at the start of the frame (``tx ty tz qw qx qy qz``) when
      the dataset carries it, else the identity; the points stay in the scene frame.
    * float32 holds a coordinate to a relative 6e-8 (60 um at 1 km from the scene origin).

    References
    ----------
    Point Cloud Library, "The PCD (Point Cloud Data) file format", v0.7,
    https://pointclouds.org/documentation/tutorials/pcd_file_format.html
    """
    _require(ds, "PCD", _NOISY_XYZ + _TRUE_XYZ + ("intensity", "detected"))
    arrs = _frame_first(ds, list(_NOISY_XYZ + _TRUE_XYZ) + ["intensity", "detected"])
    det = arrs["detected"].astype(bool)
    n_frames, sensor_shape = det.shape[0], det.shape[1:]
    image_like = tuple(d for d in ds["detected"].dims if d != "frame")[-2:] == ("row", "col")
    if image_like:            # a camera-like sensor: PCD rows are image rows, as in an image
        width = sensor_shape[-1]
        height = int(np.prod(sensor_shape[:-1], dtype=np.int64))
    else:
        width = sensor_shape[0] if sensor_shape else 1
        height = int(np.prod(sensor_shape[1:], dtype=np.int64))
    order = "C" if image_like else "F"
    pose = _pose(ds, "PCD") if all(v in ds.variables for v in _POSE) else None
    dtype = np.dtype([(f, "<f4") for f in PCD_FIELDS])
    sources = dict(zip(PCD_FIELDS, _NOISY_XYZ + ("intensity",) + _TRUE_XYZ))
    paths = _frame_paths(path, n_frames, ".pcd")
    for f, p in enumerate(paths):
        rec = np.empty(det[f].size, dtype=dtype)
        for field, var in sources.items():
            val = np.asarray(arrs[var][f], dtype=float)
            if field in ("x", "y", "z", "intensity"):
                val = np.where(det[f], val, np.nan)
            rec[field] = val.ravel(order=order)
        if pose is None:
            viewpoint = "0 0 0 1 0 0 0"
        else:
            q = pose[1][f].as_quat()                        # scipy: x y z w
            viewpoint = " ".join(repr(float(v)) for v in (*pose[0][f], q[3], q[0], q[1], q[2]))
        header = (
            "# .PCD v0.7 - Point Cloud Data file format\n"
            f"# hifi export: sensor_name {ds.attrs.get('sensor_name', '')}, frame {f}\n"
            "VERSION 0.7\n"
            f"FIELDS {' '.join(PCD_FIELDS)}\n"
            f"SIZE {' '.join('4' for _ in PCD_FIELDS)}\n"
            f"TYPE {' '.join('F' for _ in PCD_FIELDS)}\n"
            f"COUNT {' '.join('1' for _ in PCD_FIELDS)}\n"
            f"WIDTH {width}\nHEIGHT {height}\n"
            f"VIEWPOINT {viewpoint}\n"
            f"POINTS {width * height}\n"
            "DATA binary\n"
        )
        with open(p, "wb") as fh:
            fh.write(header.encode("ascii"))
            fh.write(rec.tobytes())
    return paths


def read_pcd(path) -> PcdCloud:
    """Read a PCD v0.7 file with ``DATA ascii`` or ``DATA binary`` (not ``binary_compressed``).

    Returns
    -------
    PcdCloud
        The header and the points as a structured array of shape (HEIGHT, WIDTH).
    """
    raw = Path(path).read_bytes()
    header, pos = {}, 0
    while True:
        end = raw.index(b"\n", pos)
        line = raw[pos:end].decode("ascii").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *vals = line.split()
        header[key] = vals
        if key == "DATA":
            break
    for key in ("WIDTH", "HEIGHT", "POINTS"):
        header[key] = int(header[key][0])
    counts = [int(c) for c in header.get("COUNT", ["1"] * len(header["FIELDS"]))]
    kinds = {"F": "f", "I": "i", "U": "u"}
    dtype = np.dtype([(name, f"<{kinds[t]}{s}", (c,) if c > 1 else ())
                      for name, s, t, c in zip(header["FIELDS"], header["SIZE"], header["TYPE"], counts)])
    n, mode = header["POINTS"], header["DATA"][0]
    if mode == "binary":
        pts = np.frombuffer(raw, dtype=dtype, count=n, offset=pos).copy()
    elif mode == "ascii":
        table = np.loadtxt(raw[pos:].decode("ascii").splitlines(), ndmin=2)
        pts = np.zeros(n, dtype=dtype)
        col = 0
        for name, c in zip(header["FIELDS"], counts):
            pts[name] = table[:, col] if c == 1 else table[:, col:col + c]
            col += c
    else:
        raise ValueError(f"{path}: PCD DATA {mode!r} is not supported; allowed: ascii, binary")
    return PcdCloud(header, pts.reshape(header["HEIGHT"], header["WIDTH"]))


# --------------------------------------------------------------------------- PLY


def write_ply(ds, path: Path) -> Path:
    """Stanford PLY, binary little endian: every detected return of every frame as a vertex.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset with ``x_noisy y_noisy z_noisy intensity object_id timestamp
        detected``.
    path : pathlib.Path
        Output file.

    Returns
    -------
    pathlib.Path

    Notes
    -----
    One ``vertex`` element, no faces, properties :data:`PLY_PROPERTIES`: ``x y z`` the reported
    point in the scene frame as ``double`` (exact), ``intensity`` as ``float`` (float32),
    ``object_id`` ``int``, ``frame`` (frame index) ``int``, ``timestamp`` [s since simulation
    start] ``double``. Header comments carry ``sensor_name``, ``sensor_model`` and ``start_utc``.
    Written from a numpy structured array, so the body is one ``tobytes`` call.

    References
    ----------
    G. Turk, "The PLY polygon file format", 1994, http://paulbourke.net/dataformats/ply/
    """
    _require(ds, "PLY", _NOISY_XYZ + ("intensity", "object_id", "timestamp", "detected"))
    pts = _detected(ds, list(_NOISY_XYZ) + ["intensity", "object_id", "timestamp"])
    dtype = np.dtype([(name, dt) for name, _, dt in PLY_PROPERTIES])
    rec = np.empty(pts["frame"].size, dtype=dtype)
    for name, var in zip(("x", "y", "z"), _NOISY_XYZ):
        rec[name] = pts[var]
    for name in ("intensity", "object_id", "frame", "timestamp"):
        rec[name] = pts[name]
    comments = "".join(f"comment {k} {ds.attrs[k]}\n" for k in ("sensor_name", "sensor_model", "start_utc")
                       if k in ds.attrs)
    header = ("ply\nformat binary_little_endian 1.0\ncomment hifi export: detected returns, scene frame\n"
              + comments + f"element vertex {rec.size}\n"
              + "".join(f"property {t} {name}\n" for name, t, _ in PLY_PROPERTIES) + "end_header\n")
    with open(path, "wb") as fh:
        fh.write(header.encode("ascii"))
        fh.write(rec.tobytes())
    return path


def read_ply(path) -> np.ndarray:
    """Read the ``vertex`` element of a binary little endian PLY without list properties.

    Returns
    -------
    numpy.ndarray
        Structured array, one field per vertex property.
    """
    raw = Path(path).read_bytes()
    end = raw.index(b"end_header\n") + len(b"end_header\n")
    lines = raw[:end].decode("ascii").splitlines()
    if lines[0] != "ply" or lines[1].split()[1] != "binary_little_endian":
        raise ValueError(f"{path}: only binary_little_endian PLY is supported, got {lines[1]!r}")
    types = {"char": "i1", "uchar": "u1", "short": "<i2", "ushort": "<u2", "int": "<i4", "uint": "<u4",
             "float": "<f4", "double": "<f8", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2",
             "int32": "<i4", "uint32": "<u4", "float32": "<f4", "float64": "<f8"}
    elements, current = [], None
    for line in lines[2:]:
        words = line.split()
        if words[0] == "element":
            current = [words[1], int(words[2]), []]
            elements.append(current)
        elif words[0] == "property":
            if words[1] == "list":
                raise ValueError(f"{path}: list properties are not supported")
            current[2].append((words[2], types[words[1]]))
    offset = end
    for name, count, props in elements:
        dtype = np.dtype(props)
        if name == "vertex":
            return np.frombuffer(raw, dtype=dtype, count=count, offset=offset).copy()
        offset += count * dtype.itemsize
    raise ValueError(f"{path}: no vertex element")


# --------------------------------------------------------------------------- LAS


def gps_seconds_from_utc(start_utc: str, t_s) -> tuple[np.ndarray, np.ndarray]:
    """GPS time of instants ``start_utc + t_s`` as integer seconds and a fraction.

    ``start_utc`` is the dataset's ISO 8601 attribute; see :meth:`hifi.timebase.Epoch.gps_seconds`.
    """
    try:
        epoch = Epoch.from_utc(str(start_utc))
    except ValueError:
        raise ExportError(f"start_utc = {start_utc!r}: expected an ISO 8601 UTC time such as "
                          f"'2024-05-01T12:00:00Z'") from None
    return epoch.gps_seconds(t_s)


def las_classification(object_id, *, annotation=None, class_id=None) -> np.ndarray:
    """LAS classification (uint8) of returns from their class annotation or object id.

    Parameters
    ----------
    object_id : array_like of int
        Object hit by each return, -1 for none [1].
    annotation : array_like of uint8, optional
        Semantic class id of each return (same shape as ``object_id``) [1].
    class_id : sequence of int, optional
        Class id of every object, indexed by object id [1].

    Returns
    -------
    numpy.ndarray of uint8
        Same shape as ``object_id``.

    Notes
    -----
    In order of preference: ``annotation`` when given; else ``class_id[object_id]`` when
    ``class_id`` is given (object ids outside it, and -1, give 0); else 0, ASPRS "created, never
    classified". The ids are hifi's class ids (the order of the scenario's ``class`` names),
    written as they are: they are not the ASPRS standard codes (2 ground, 6 building, ...).

    Raises
    ------
    ExportError
        ``class_id`` is not a sequence of integers, or a class id is outside 0..255.
    """
    oid = np.asarray(object_id, dtype=np.int64)
    if annotation is not None:
        cls = np.broadcast_to(np.asarray(annotation), oid.shape)
    elif class_id is not None:
        lut = np.atleast_1d(np.asarray(class_id))
        if lut.ndim != 1 or not np.issubdtype(lut.dtype, np.integer):
            raise ExportError(f"attribute class_id = {class_id!r}: expected a sequence of integer "
                              f"class ids indexed by object id")
        ok = (oid >= 0) & (oid < lut.size)
        cls = np.where(ok, np.append(lut, 0)[np.where(ok, oid, lut.size)], 0)
    else:
        return np.zeros(oid.shape, dtype=np.uint8)
    if cls.size and (cls.min() < 0 or cls.max() > 255):
        raise ExportError(f"LAS classification must be 0..255; the dataset's class ids span "
                          f"{cls.min()}..{cls.max()}")
    return cls.astype(np.uint8)


def write_las(ds, path: Path, *, intensity_full_scale: float = LAS_INTENSITY_FULL_SCALE) -> Path:
    """ASPRS LAS 1.4, point data record format 6, through laspy: the detected returns.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset with ``x_noisy y_noisy z_noisy intensity object_id timestamp
        detected`` and the global attribute ``start_utc``; optional: a per-point ``annotation``
        variable (uint8) or a global attribute ``class_id`` (class id per object id), see
        :func:`las_classification`.
    path : pathlib.Path
        Output file.
    intensity_full_scale : float
        Intensity [1] written as 65535.

    Returns
    -------
    pathlib.Path

    Notes
    -----
    * Coordinates: the reported (noisy) point in the scene frame (local ENU, no CRS record).
      Scale :data:`LAS_SCALE_M` = 0.1 mm on every axis; offset = the midpoint of the points'
      extent rounded to a whole metre (0 when empty). A coordinate read back is within 0.05 mm
      of the dataset value; points spanning more than about 429 km on an axis raise
      :class:`ExportError`.
    * Intensity: ``round(65535 * clip(intensity / intensity_full_scale, 0, 1))``, uint16. The
      LAS specification normalises intensity to 16 bits by the sensor's dynamic range; hifi's
      intensity is relative to a white Lambertian target at normal incidence at 1 m, so the
      default full scale 1.0 is that target (brighter returns, closer than 1 m, saturate).
    * Classification: :func:`las_classification`.
    * GPS time: adjusted standard GPS time, GPS seconds since 1980-01-06 minus 1e9, with Global
      Encoding bit 0 set; GPST from ``start_utc`` + ``timestamp`` with the leap-second table
      (:func:`gps_seconds_from_utc`). float64 resolves it to about 0.1 us.
    * ``return_number`` = ``number_of_returns`` = 1 (first return only); ``point_source_id``,
      ``scan_angle``, ``user_data`` 0; ``system_identifier`` ``"hifi <sensor_model>"``.

    References
    ----------
    ASPRS, "LAS Specification 1.4 - R15", 2019 (point format 6, Global Encoding, intensity).
    laspy, https://laspy.readthedocs.io
    """
    try:
        import laspy
        from laspy.header import GpsTimeType
    except ImportError:
        raise ImportError("LAS export needs laspy: pip install laspy") from None
    _require(ds, "LAS", _NOISY_XYZ + ("intensity", "object_id", "timestamp", "detected"))
    if "start_utc" not in ds.attrs:
        raise ExportError(f"LAS needs the global attribute start_utc (UTC epoch of t = 0) for GPS time; "
                          f"the dataset (sensor_model {ds.attrs.get('sensor_model')!r}) lacks it")
    names = list(_NOISY_XYZ) + ["intensity", "object_id", "timestamp"]
    if "annotation" in ds.variables:
        names.append("annotation")
    det = _detected(ds, names)
    xyz = np.stack([np.asarray(det[v], dtype=float) for v in _NOISY_XYZ], axis=-1)
    if xyz.size:
        offsets = np.round((xyz.min(axis=0) + xyz.max(axis=0)) / 2.0)
    else:
        offsets = np.zeros(3)
    ints = np.round((xyz - offsets) / LAS_SCALE_M)
    limit = np.iinfo(np.int32).max
    if ints.size and np.abs(ints).max() > limit:
        raise ExportError(f"LAS: the points span more than {2 * limit * LAS_SCALE_M / 1e3:.0f} km on an axis, "
                          f"beyond int32 coordinates at scale {LAS_SCALE_M} m")
    classification = las_classification(det["object_id"], annotation=det.get("annotation"),
                                        class_id=ds.attrs.get("class_id"))
    sec, frac = gps_seconds_from_utc(ds.attrs["start_utc"], det["timestamp"])
    gps_time = (sec - LAS_ADJUSTED_GPS_OFFSET_S).astype(float) + frac
    inten = np.clip(np.nan_to_num(np.asarray(det["intensity"], dtype=float) / intensity_full_scale), 0.0, 1.0)

    header = laspy.LasHeader(point_format=6, version="1.4")
    header.scales = np.full(3, LAS_SCALE_M)
    header.offsets = offsets
    header.global_encoding.gps_time_type = GpsTimeType.STANDARD
    header.system_identifier = f"hifi {ds.attrs.get('sensor_model', '')}"[:32]
    header.generating_software = f"hifi {ds.attrs.get('hifi_version', '')}".strip()[:32]
    # Creation date = the simulated epoch, not the day of export, so exports are reproducible.
    header.creation_date = _dt.datetime.fromisoformat(ds.attrs["start_utc"].replace("Z", "+00:00")).date()
    las = laspy.LasData(header)
    n = xyz.shape[0]
    las.X, las.Y, las.Z = (ints[:, i].astype(np.int32) for i in range(3))
    las.intensity = np.round(inten * 65535.0).astype(np.uint16)
    las.return_number = np.ones(n, dtype=np.uint8)
    las.number_of_returns = np.ones(n, dtype=np.uint8)
    las.classification = classification
    las.gps_time = gps_time
    las.write(str(path))
    return path


# --------------------------------------------------------------------------- KITTI


class KittiScan(NamedTuple):
    """A KITTI Velodyne ``.bin`` scan read by :func:`read_kitti_bin`.

    Attributes
    ----------
    points_sensor : numpy.ndarray
        (n, 3) float32 points in the sensor frame [m].
    intensity : numpy.ndarray
        (n,) float32 reflectance [1].
    """

    points_sensor: np.ndarray
    intensity: np.ndarray


def write_kitti(ds, path: Path) -> list[Path]:
    """KITTI Velodyne ``.bin``: float32 ``x y z intensity`` per detected return, sensor frame.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset with ``x_noisy y_noisy z_noisy intensity detected`` and the sensor
        pose per frame, ``sensor_position`` (xyz) [m] and ``sensor_orientation`` (quaternion
        x y z w, sensor -> scene).
    path : pathlib.Path
        Output file; with more than one frame, ``<stem>_<frame:06d>.bin`` beside it.

    Returns
    -------
    list of pathlib.Path
        One path per frame, in frame order.

    Notes
    -----
    As in KITTI's ``velodyne/*.bin``: no header, 16 bytes per point, little endian float32
    ``x y z reflectance``, coordinates in the sensor frame (x forward, y left, z up). The
    reported points are transformed with the sensor pose at the *start* of the frame,
    ``p_sensor = R^T (p_scene - t)``; a sensor that moves during the sweep therefore shows its
    motion distortion in the file, as a real sensor's raw scan does. Intensity is clipped to
    0..1 (KITTI's reflectance range, and what PTX writes). An empty frame is an empty file.

    References
    ----------
    A. Geiger, P. Lenz, C. Stiller, R. Urtasun, "Vision meets robotics: the KITTI dataset",
    IJRR 32(11), 2013 (raw data development kit, ``readme.txt``).
    """
    _require(ds, "KITTI", _NOISY_XYZ + ("intensity", "detected"))
    pos, rot = _pose(ds, "KITTI")
    det = _detected(ds, list(_NOISY_XYZ) + ["intensity"])
    xyz = np.stack([np.asarray(det[v], dtype=float) for v in _NOISY_XYZ], axis=-1)
    frame = det["frame"]
    if xyz.shape[0]:
        points_sensor = rot[frame].apply(xyz - pos[frame], inverse=True)
    else:
        points_sensor = np.zeros((0, 3))
    inten = np.clip(np.asarray(det["intensity"], dtype=float), 0.0, 1.0)
    rows = np.column_stack([points_sensor, inten]).astype("<f4")
    paths = _frame_paths(path, _n_frames(ds), ".bin")
    for f, p in enumerate(paths):
        p.write_bytes(rows[frame == f].tobytes())
    return paths


def read_kitti_bin(path) -> KittiScan:
    """Read a KITTI Velodyne ``.bin`` (float32 ``x y z reflectance`` records)."""
    rows = np.fromfile(path, dtype="<f4")
    if rows.size % 4:
        raise ValueError(f"{path}: size {rows.size * 4} bytes is not a multiple of 16 (4 float32 per point)")
    rows = rows.reshape(-1, 4)
    return KittiScan(rows[:, :3].copy(), rows[:, 3].copy())


# --------------------------------------------------------------------------- EVD


def write_evd(ds, path: Path) -> Path:
    """BlenSor's EVD: per frame an int32 count then that many records, the file ends with -1.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset with ``timestamp yaw pitch distance distance_noisy x y z x_noisy
        y_noisy z_noisy object_id detected``.
    path : pathlib.Path
        Output file.

    Returns
    -------
    pathlib.Path

    Notes
    -----
    Layout as BlenSor's ``evd.py`` (``evd_file.appendEvdFile`` / ``finishEvdFile``): for every
    scan ``struct.pack("i", n)`` then n records ``struct.pack("11dQ", timestamp, yaw, pitch,
    distance, distance_noise, x, y, z, x_noise, y_noise, z_noise, object_id)``, and after the
    last scan ``struct.pack("i", -1)``. BlenSor packs in native byte order; this writes little
    endian explicitly (:data:`EVD_RECORD`, 96 bytes, no padding), which is what BlenSor writes
    on x86 and ARM hosts. Later BlenSor versions write ``"14dQ"`` with the material colour
    (r, g, b) before the object id; this writes the original ``"11dQ"`` of the BlenSor paper
    and of issue 3.

    Only detected returns are written: BlenSor's scanners add an entry per return of
    ``scan_interface.scan_rays``, which keeps rays with 0 < distance < max range; misses are
    not recorded, so a scan where nothing was detected is a count of 0. Values are hifi's:
    ``timestamp`` [s] since simulation start, ``yaw`` and ``pitch`` [rad] as CONTRACTS defines
    them (BlenSor's rotating scanner stores its own yaw convention), points in the scene frame
    (as BlenSor applies its world transformation), ``object_id`` the 0-based object index as
    uint64 (BlenSor writes its renderer's unsigned object id; a -1 would be written as 2**64-1).

    References
    ----------
    M. Gschwandtner, R. Kwitt, A. Uhl, W. Pree, "BlenSor: Blender Sensor Simulation Toolbox",
    ISVC 2011, LNCS 6939; mgschwan/blensor, ``release/scripts/addons/blensor/evd.py``.
    """
    fields = [name for name in EVD_RECORD.names]
    _require(ds, "EVD", fields + ["detected"])
    det = _detected(ds, fields)
    rec = np.empty(det["frame"].size, dtype=EVD_RECORD)
    for name in fields:
        if name == "object_id":
            rec[name] = np.asarray(det[name], dtype=np.int64).view(np.uint64)
        else:
            rec[name] = det[name]
    n_frames = _n_frames(ds)
    counts = np.bincount(det["frame"], minlength=n_frames)
    with open(path, "wb") as fh:
        start = 0
        for c in counts:
            fh.write(np.int32(c).astype("<i4").tobytes())
            fh.write(rec[start:start + c].tobytes())
            start += c
        fh.write(np.int32(-1).astype("<i4").tobytes())
    return path


def read_evd(path) -> list[np.ndarray]:
    """Read a BlenSor EVD file written with ``"11dQ"`` records.

    Returns
    -------
    list of numpy.ndarray
        One structured array (:data:`EVD_RECORD`) per scan, in file order.
    """
    raw = Path(path).read_bytes()
    scans, pos = [], 0
    while True:
        if pos + 4 > len(raw):
            raise ValueError(f"{path}: truncated EVD file (no end marker -1 after {len(scans)} scans)")
        (count,) = np.frombuffer(raw, dtype="<i4", count=1, offset=pos)
        pos += 4
        if count == -1:
            break
        if count < 0 or pos + count * EVD_RECORD.itemsize > len(raw):
            raise ValueError(f"{path}: scan {len(scans)} announces {count} records that the file does not hold")
        scans.append(np.frombuffer(raw, dtype=EVD_RECORD, count=int(count), offset=pos).copy())
        pos += int(count) * EVD_RECORD.itemsize
    if pos != len(raw):
        raise ValueError(f"{path}: {len(raw) - pos} bytes after the end marker")
    return scans


# --------------------------------------------------------------------------- PTX


def write_ptx(ds, path: Path) -> Path:
    """Leica PTX: one scan per frame, column by column, a miss as a line of zeros.

    Each scan: number of columns, number of rows, the scanner's registered position, its three
    axes, and the 4 x 4 transform (row-vector convention, translation in the last row); then
    ``x y z intensity`` per point in the scanner frame, columns in acquisition order, each
    column bottom to top. A point that was not detected is ``0 0 0 0``. Intensity is the
    relative return clipped to 0..1. Coordinates are the reported (noisy) points.

    References
    ----------
    Leica Geosystems, "PTX format", Cyclone 9 documentation (pointcloud ASCII exchange format).
    """
    needed = ("x_noisy", "y_noisy", "z_noisy", "intensity", "detected", "sensor_position", "sensor_orientation")
    missing = [v for v in needed if v not in ds]
    if missing or ds["x_noisy"].ndim != 3:
        raise ExportError(f"PTX needs a gridded scan (frame, column, row) with {', '.join(needed)}; "
                          f"sensor_model {ds.attrs.get('sensor_model')!r} lacks {missing or 'the grid layout'}")
    with open(path, "w", encoding="ascii", newline="\n") as fh:
        for f in range(ds.sizes["frame"]):
            fr = ds.isel(frame=f)
            ncol, nrow = fr["x_noisy"].shape
            t = np.asarray(fr["sensor_position"].values, dtype=float)
            rot = Rotation.from_quat(np.asarray(fr["sensor_orientation"].values, dtype=float))
            axes = rot.as_matrix().T                       # rows: scanner x, y, z axes in the scene
            pts = np.stack([fr[v].values.ravel() for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
            det = np.asarray(fr["detected"].values, dtype=bool).ravel()
            local = rot.apply(np.where(det[:, None], pts, 0.0) - t, inverse=True)
            inten = np.clip(np.nan_to_num(np.asarray(fr["intensity"].values, dtype=float).ravel()), 0.0, 1.0)
            rows = np.column_stack([local, inten])
            rows[~det] = 0.0
            fh.write(f"{ncol}\n{nrow}\n")
            fh.write(" ".join(f"{v:.6f}" for v in t) + "\n")
            for a in axes:
                fh.write(" ".join(f"{v:.9f}" for v in a) + "\n")
            for a in axes:
                fh.write(" ".join(f"{v:.9f}" for v in a) + " 0\n")
            fh.write(" ".join(f"{v:.6f}" for v in t) + " 1\n")
            np.savetxt(fh, rows, fmt="%.6f %.6f %.6f %.6f")
    return path


def read_ptx(path) -> list[dict]:
    """Read scans written by :func:`write_ptx` (or any PTX): list of dicts with
    ``n_columns``, ``n_rows``, ``matrix`` (4 x 4, row-vector convention) and ``points``
    (n_columns * n_rows, 4) in file order."""
    lines = Path(path).read_text(encoding="ascii").splitlines()
    scans, i = [], 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        ncol, nrow = int(lines[i]), int(lines[i + 1])
        matrix = np.array([[float(v) for v in lines[i + 6 + j].split()] for j in range(4)])
        n = ncol * nrow
        pts = np.loadtxt(lines[i + 10:i + 10 + n], ndmin=2)
        scans.append({"n_columns": ncol, "n_rows": nrow, "matrix": matrix, "points": pts})
        i += 10 + n
    return scans
