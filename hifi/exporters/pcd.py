"""PCD v0.7 (Point Cloud Library): organised, binary, reported and true points."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from ..run.dataset import POINTS_NOISY, POINTS_TRUE, SENSOR_POSE
from ._common import (
    Exporter,
    frame_first,
    frame_paths,
    require,
    scan_grid_order,
    strongest_return,
    sensor_pose,
)

#: PCD fields written by :func:`write_pcd`: (name, numpy dtype); float32 except the uint16 beam
#: indices ``ring`` and ``laser_id``.
PCD_FIELD_TYPES = (("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4"), ("ring", "<u2"),
                   ("laser_id", "<u2"), ("x_true", "<f4"), ("y_true", "<f4"), ("z_true", "<f4"))
#: Names of :data:`PCD_FIELD_TYPES`.
PCD_FIELDS = tuple(name for name, _ in PCD_FIELD_TYPES)


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
    * ``DATA binary`` (not ascii): 32 bytes per point instead of about 90, and exact float32
      values; fields are little endian as PCL writes them on every common host.
    * Fields (:data:`PCD_FIELD_TYPES`): ``x y z intensity`` (float32) = the reported (noisy)
      point in the scene frame and its intensity (PCL's ``PointXYZI`` loads these); ``ring``
      (uint16) = the beam's rank by elevation, 0 the lowest, as the ROS velodyne driver's
      ``ring`` (so ``PointXYZIR`` loads too); ``laser_id`` (uint16) = the beam's index along the
      dataset's beam dimension (the calibration's laser id for a rotating lidar, which is not in
      elevation order); ``x_true y_true z_true`` (float32) = the true hit point, in the same file
      (not a second file), so clean and noisy points stay aligned cell by cell.
    * Organised: every ray has a cell. A ray that was not detected has ``x y z intensity`` NaN
      (PCL's invalid point); ``x_true`` is NaN only where nothing was hit within range (a hit
      below the detection threshold keeps its true point).
    * Organised so that neighbours in the file are neighbours in the scan. A sensor with two
      dimensions (d0, d1), such as a rotating lidar (``step``, ``laser``), a line lidar
      (``step``, ``layer``) or ``generic_grid`` (``theta``, ``phi``): ``WIDTH`` = size of d0,
      ``HEIGHT`` = size of d1; PCD row r is one beam (a d1 index), rows sorted by elevation from
      the top (row 0, the highest mean ``pitch``) to the bottom, so ``ring = HEIGHT - 1 - r``;
      columns are the d0 slices in acquisition order (by their first ``timestamp``: the
      rotating lidar's steps as stored, ``generic_grid`` from ``theta_max`` on the left to
      ``theta_min``). PCD cell (r, c) is dataset element ``[columns[c], rows[r]]`` of
      :func:`hifi.exporters._common.scan_grid_order`. A camera-like sensor whose last two
      dimensions are (``row``, ``col``), such as the ToF camera, is written as its image:
      ``WIDTH`` = columns, PCD rows = image rows top to bottom (C order), ``laser_id`` the image
      row and ``ring = HEIGHT - 1 - row``. A one-dimensional sensor has ``HEIGHT`` 1 (``ring``
      and ``laser_id`` 0); one with more than two dimensions ``WIDTH`` = the first and
      ``HEIGHT`` = the product of the others in Fortran order, ``laser_id`` the row index.
    * A dual-return scan (rotating lidar, ``return`` dimension) is written with its strongest
      echo (slot 0) in every cell (:func:`hifi.exporters._common.strongest_return`); the point
      lists (LAS, PLY, KITTI, EVD) hold both echoes.
    * ``VIEWPOINT`` is the sensor pose at the start of the frame (``tx ty tz qw qx qy qz``) when
      the dataset carries it, else the identity; the points stay in the scene frame.
    * float32 holds a coordinate to a relative 6e-8 (60 um at 1 km from the scene origin).

    References
    ----------
    Point Cloud Library, "The PCD (Point Cloud Data) file format", v0.7,
    https://pointclouds.org/documentation/tutorials/pcd_file_format.html
    """
    if is_radar_dataset(ds):
        return write_radar_pcd(ds, path)
    require(ds, "PCD", POINTS_NOISY + POINTS_TRUE + ("intensity", "detected"))
    ds = strongest_return(ds)
    arrs = frame_first(ds, list(POINTS_NOISY + POINTS_TRUE) + ["intensity", "detected"])
    det = arrs["detected"].astype(bool)
    n_frames, sensor_shape = det.shape[0], det.shape[1:]
    image_like = tuple(d for d in ds["detected"].dims if d != "frame")[-2:] == ("row", "col")
    if image_like:            # a camera-like sensor: PCD rows are image rows, as in an image
        width = sensor_shape[-1]
        height = int(np.prod(sensor_shape[:-1], dtype=np.int64))
        flat = np.arange(width * height)                    # C order of the sensor dims
        laser = flat // width
    elif len(sensor_shape) == 2:
        width, height = sensor_shape
        columns, rows = scan_grid_order(ds)
        flat = np.ravel_multi_index((columns[None, :], rows[:, None]), sensor_shape).ravel()
        laser = np.repeat(rows, width)
    else:
        width = sensor_shape[0] if sensor_shape else 1
        height = int(np.prod(sensor_shape[1:], dtype=np.int64))
        flat = np.arange(width * height).reshape(sensor_shape).ravel(order="F")   # Fortran order
        laser = np.arange(width * height) // width
    ring = (height - 1 - np.arange(width * height) // width).astype(np.uint16)
    pose = sensor_pose(ds, "PCD") if all(v in ds.variables for v in SENSOR_POSE) else None
    dtype = np.dtype(list(PCD_FIELD_TYPES))
    sources = dict(zip(("x", "y", "z", "intensity", "x_true", "y_true", "z_true"),
                       POINTS_NOISY + ("intensity",) + POINTS_TRUE))
    paths = frame_paths(path, n_frames, ".pcd")
    for f, p in enumerate(paths):
        rec = np.empty(det[f].size, dtype=dtype)
        det_f = det[f].ravel()[flat]
        for field, var in sources.items():
            val = np.asarray(arrs[var][f], dtype=float).ravel()[flat]
            if field in ("x", "y", "z", "intensity"):
                val = np.where(det_f, val, np.nan)
            rec[field] = val
        rec["ring"] = ring
        rec["laser_id"] = laser
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
            f"SIZE {' '.join(str(dtype[n].itemsize) for n in PCD_FIELDS)}\n"
            f"TYPE {' '.join('U' if dtype[n].kind == 'u' else 'F' for n in PCD_FIELDS)}\n"
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


#: The fields of a nuScenes radar PCD (nuscenes-devkit ``RadarPointCloud.from_file``; the
#: ARS408's cluster and quality fields): name, PCD SIZE, PCD TYPE.
NUSCENES_RADAR_FIELDS = (("x", 4, "F"), ("y", 4, "F"), ("z", 4, "F"), ("dyn_prop", 1, "I"), ("id", 2, "I"),
                         ("rcs", 4, "F"), ("vx", 4, "F"), ("vy", 4, "F"), ("vx_comp", 4, "F"), ("vy_comp", 4, "F"),
                         ("is_quality_valid", 1, "I"), ("ambig_state", 1, "I"), ("x_rms", 1, "I"), ("y_rms", 1, "I"),
                         ("invalid_state", 1, "I"), ("pdh0", 1, "I"), ("vx_rms", 1, "I"), ("vy_rms", 1, "I"))


def is_radar_dataset(ds) -> bool:
    """A radar detection list (dimension ``detection``, ``radial_velocity``: docs/radar.md)."""
    return "radial_velocity" in ds.variables and "detection" in ds["radial_velocity"].dims


def write_radar_pcd(ds, path: Path) -> list[Path]:
    """A radar's detections as nuScenes radar PCD files, one per frame.

    Parameters
    ----------
    ds : xarray.Dataset
        A radar dataset (``range``, ``azimuth``, ``elevation``, ``radial_velocity``, ``rcs``,
        ``n_detections``, ``sensor_velocity``, ``sensor_orientation``).
    path : pathlib.Path
        Output file; with more than one frame, ``<stem>_<frame:06d>.pcd`` beside it.

    Returns
    -------
    list of pathlib.Path

    Notes
    -----
    The layout nuScenes' radar sweeps have and the nuscenes-devkit reads
    (``RadarPointCloud.from_file``): ``DATA binary``, ``HEIGHT 1``, the 18 fields of
    :data:`NUSCENES_RADAR_FIELDS`, points in the sensor frame (x forward, y left, ``z`` 0 where
    the radar measures no elevation). ``vx``, ``vy``: the radial velocity along the line of
    sight (positive away); ``vx_comp``, ``vy_comp``: the same with the sensor's own velocity
    along the line of sight added (ego-motion compensated, as nuScenes'). ``rcs`` [dBsm];
    ``id`` the detection's index; ``dyn_prop`` 1 (stationary) where the compensated speed is
    below the velocity resolution, 0 (moving) otherwise; the quality fields as an ARS408
    reports a valid, unambiguous cluster (``is_quality_valid`` 1, ``ambig_state`` 3,
    ``invalid_state`` 0, ``pdh0`` 1, rms codes 0).
    """
    require(ds, "PCD", ("range", "azimuth", "elevation", "radial_velocity", "rcs", "n_detections"))
    paths = frame_paths(path, ds.sizes.get("frame", 1), ".pcd")
    dtype = np.dtype([(n, f"<{'f' if t == 'F' else 'u'}{s}") for n, s, t in NUSCENES_RADAR_FIELDS])
    dv = float(ds.attrs.get("velocity_resolution_m_s", 0.0))
    for f, p in enumerate(paths):
        fr = ds.isel(frame=f) if "frame" in ds.dims else ds
        n = int(fr["n_detections"])
        d = fr.isel(detection=slice(0, n))
        rng, az, vr = (np.asarray(d[v].values, dtype=float) for v in ("range", "azimuth", "radial_velocity"))
        el = np.nan_to_num(np.asarray(d["elevation"].values, dtype=float))
        u = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1)
        comp = vr.copy()
        if "sensor_velocity" in fr.variables and "sensor_orientation" in fr.variables:
            v_s = Rotation.from_quat(np.asarray(fr["sensor_orientation"].values, float)).apply(
                np.asarray(fr["sensor_velocity"].values, float), inverse=True)
            comp = vr + u @ v_s
        rec = np.zeros(n, dtype=dtype)
        rec["x"], rec["y"], rec["z"] = (rng[:, None] * u).T
        rec["id"] = np.arange(n)
        rec["rcs"] = np.asarray(d["rcs"].values, dtype=float)
        rec["vx"], rec["vy"] = vr * np.cos(az), vr * np.sin(az)
        rec["vx_comp"], rec["vy_comp"] = comp * np.cos(az), comp * np.sin(az)
        rec["dyn_prop"] = np.where(np.abs(comp) < dv, 1, 0)
        rec["is_quality_valid"], rec["ambig_state"], rec["pdh0"] = 1, 3, 1
        names = [n_ for n_, _, _ in NUSCENES_RADAR_FIELDS]
        header = (
            "# .PCD v0.7 - Point Cloud Data file format\n"
            f"# hifi export: sensor_name {ds.attrs.get('sensor_name', '')}, frame {f}, nuScenes radar layout\n"
            "VERSION 0.7\n"
            f"FIELDS {' '.join(names)}\n"
            f"SIZE {' '.join(str(s) for _, s, _ in NUSCENES_RADAR_FIELDS)}\n"
            f"TYPE {' '.join(t for _, _, t in NUSCENES_RADAR_FIELDS)}\n"
            f"COUNT {' '.join('1' for _ in names)}\n"
            f"WIDTH {n}\nHEIGHT 1\n"
            "VIEWPOINT 0 0 0 1 0 0 0\n"
            f"POINTS {n}\n"
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


#: Registered in the entry-point group ``hifi.exporters`` as ``pcd``.
EXPORTER = Exporter(name="pcd", write=write_pcd, suffix=".pcd", scope="sensor", per_frame=True,
                    summary="PCD v0.7 binary, organised (one cell per ray, NaN for misses), reported and true points")
