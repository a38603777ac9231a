"""Leica PTX: one scan per frame, a grid with the sensor pose; a miss is a line of zeros."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from ._common import Exporter, ExportError, scan_grid_order, strongest_return


def write_ptx(ds, path: Path) -> Path:
    """Leica PTX: one scan per frame, column by column, a miss as a line of zeros.

    Each scan: number of columns, number of rows, the scanner's registered position, its three
    axes, and the 4 x 4 transform (row-vector convention, translation in the last row); then
    ``x y z intensity`` per point in the scanner frame, column by column. Columns are the first
    sensor dimension's slices in acquisition order and each column runs bottom to top, by
    elevation (:func:`hifi.exporters._common.scan_grid_order`: by first ``timestamp`` and by mean
    ``pitch``): for ``generic_grid`` the columns from ``theta_max`` (left) to ``theta_min``,
    each ``phi`` increasing, as the scanner acquires them (``theta`` is stored increasing, so
    this is the reverse of the dataset's column order); for a rotating lidar the steps in
    firing order, the lasers sorted by elevation whatever their ids. A point that was not
    detected is ``0 0 0 0``. Intensity is the relative return clipped to 0..1. Coordinates are
    the reported (noisy) points.

    References
    ----------
    Leica Geosystems, "PTX format", Cyclone 9 documentation (pointcloud ASCII exchange format).
    """
    ds = strongest_return(ds)          # a dual-return scan: its strongest echo per cell
    needed = ("x_noisy", "y_noisy", "z_noisy", "intensity", "detected", "sensor_position", "sensor_orientation")
    missing = [v for v in needed if v not in ds]
    if missing or ds["x_noisy"].ndim != 3:
        raise ExportError(f"PTX needs a gridded scan (frame, column, row) with {', '.join(needed)}; "
                          f"sensor_model {ds.attrs.get('sensor_model')!r} lacks {missing or 'the grid layout'}")
    columns, rows = scan_grid_order(ds)
    dims = [d for d in ds["x_noisy"].dims if d != "frame"]
    with open(path, "w", encoding="ascii", newline="\n") as fh:
        for f in range(ds.sizes["frame"]):
            fr = ds.isel(frame=f).isel({dims[0]: columns, dims[1]: rows[::-1]})
            ncol, nrow = fr["x_noisy"].shape
            t = np.asarray(fr["sensor_position"].values, dtype=float)
            rot = Rotation.from_quat(np.asarray(fr["sensor_orientation"].values, dtype=float))
            axes = rot.as_matrix().T                       # rows: scanner x, y, z axes in the scene
            pts = np.stack([fr[v].values.ravel() for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
            det = np.asarray(fr["detected"].values, dtype=bool).ravel()
            local = rot.apply(np.where(det[:, None], pts, 0.0) - t, inverse=True)
            inten = np.clip(np.nan_to_num(np.asarray(fr["intensity"].values, dtype=float).ravel()), 0.0, 1.0)
            table = np.column_stack([local, inten])
            table[~det] = 0.0
            fh.write(f"{ncol}\n{nrow}\n")
            fh.write(" ".join(f"{v:.6f}" for v in t) + "\n")
            for a in axes:
                fh.write(" ".join(f"{v:.9f}" for v in a) + "\n")
            for a in axes:
                fh.write(" ".join(f"{v:.9f}" for v in a) + " 0\n")
            fh.write(" ".join(f"{v:.6f}" for v in t) + " 1\n")
            np.savetxt(fh, table, fmt="%.6f %.6f %.6f %.6f")
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


#: Registered in the entry-point group ``hifi.exporters`` as ``ptx``.
EXPORTER = Exporter(name="ptx", write=write_ptx, suffix=".ptx", scope="sensor", per_frame=False,
                    summary="Leica PTX grid per frame with the scanner pose; a miss is a line of zeros")
