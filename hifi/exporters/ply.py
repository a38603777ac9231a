"""Stanford PLY, binary little endian: the detected returns as vertices."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..run.dataset import POINTS_NOISY
from ._common import Exporter, detected_returns, require

#: PLY vertex properties written by :func:`write_ply`: (name, PLY type, numpy dtype).
PLY_PROPERTIES = (("x", "double", "<f8"), ("y", "double", "<f8"), ("z", "double", "<f8"),
                  ("intensity", "float", "<f4"), ("object_id", "int", "<i4"), ("frame", "int", "<i4"),
                  ("timestamp", "double", "<f8"))


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
    require(ds, "PLY", POINTS_NOISY + ("intensity", "object_id", "timestamp", "detected"))
    pts = detected_returns(ds, list(POINTS_NOISY) + ["intensity", "object_id", "timestamp"])
    dtype = np.dtype([(name, dt) for name, _, dt in PLY_PROPERTIES])
    rec = np.empty(pts["frame"].size, dtype=dtype)
    for name, var in zip(("x", "y", "z"), POINTS_NOISY):
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


#: Registered in the entry-point group ``hifi.exporters`` as ``ply``.
EXPORTER = Exporter(name="ply", write=write_ply, suffix=".ply", scope="sensor", per_frame=False,
                    summary="Stanford PLY, binary: every detected return with intensity, object id, frame, time")
