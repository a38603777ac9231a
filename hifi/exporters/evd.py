"""BlenSor EVD: its binary record per ray."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import Exporter, detected_returns, n_frames, require

#: BlenSor EVD record: 11 float64 and one uint64, little endian, 96 bytes (see :func:`write_evd`).
EVD_RECORD = np.dtype([("timestamp", "<f8"), ("yaw", "<f8"), ("pitch", "<f8"), ("distance", "<f8"),
                       ("distance_noisy", "<f8"), ("x", "<f8"), ("y", "<f8"), ("z", "<f8"),
                       ("x_noisy", "<f8"), ("y_noisy", "<f8"), ("z_noisy", "<f8"), ("object_id", "<u8")])


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
    (r, g, b) before the object id; this writes the original ``"11dQ"`` of the BlenSor paper.

    Only detected returns are written: BlenSor's scanners add an entry per return of
    ``scan_interface.scan_rays``, which keeps rays with 0 < distance < max range; misses are
    not recorded, so a scan where nothing was detected is a count of 0. Values are hifi's:
    ``timestamp`` [s] since simulation start, ``yaw`` and ``pitch`` [rad] as :mod:`hifi.run.dataset` defines
    them (BlenSor's rotating scanner stores its own yaw convention), points in the scene frame
    (as BlenSor applies its world transformation), ``object_id`` the 0-based object index as
    uint64 (BlenSor writes its renderer's unsigned object id; a -1 would be written as 2**64-1).

    References
    ----------
    M. Gschwandtner, R. Kwitt, A. Uhl, W. Pree, "BlenSor: Blender Sensor Simulation Toolbox",
    ISVC 2011, LNCS 6939; mgschwan/blensor, ``release/scripts/addons/blensor/evd.py``.
    """
    fields = [name for name in EVD_RECORD.names]
    require(ds, "EVD", fields + ["detected"])
    det = detected_returns(ds, fields)
    rec = np.empty(det["frame"].size, dtype=EVD_RECORD)
    for name in fields:
        if name == "object_id":
            rec[name] = np.asarray(det[name], dtype=np.int64).view(np.uint64)
        else:
            rec[name] = det[name]
    n_frame = n_frames(ds)
    counts = np.bincount(det["frame"], minlength=n_frame)
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


#: Registered in the entry-point group ``hifi.exporters`` as ``evd``.
EXPORTER = Exporter(name="evd", write=write_evd, suffix=".evd", scope="sensor", per_frame=False,
                    summary="BlenSor's EVD records (one per detected return, 96 bytes each)")
