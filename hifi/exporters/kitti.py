"""KITTI velodyne ``.bin`` scans: float32 x y z intensity in the sensor frame."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..run.dataset import POINTS_NOISY
from ._common import (
    Exporter,
    detected_returns,
    frame_paths,
    n_frames,
    require,
    sensor_pose,
)


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
    require(ds, "KITTI", POINTS_NOISY + ("intensity", "detected"))
    pos, rot = sensor_pose(ds, "KITTI")
    det = detected_returns(ds, list(POINTS_NOISY) + ["intensity"])
    xyz = np.stack([np.asarray(det[v], dtype=float) for v in POINTS_NOISY], axis=-1)
    frame = det["frame"]
    if xyz.shape[0]:
        points_sensor = rot[frame].apply(xyz - pos[frame], inverse=True)
    else:
        points_sensor = np.zeros((0, 3))
    inten = np.clip(np.asarray(det["intensity"], dtype=float), 0.0, 1.0)
    rows = np.column_stack([points_sensor, inten]).astype("<f4")
    paths = frame_paths(path, n_frames(ds), ".bin")
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


#: Registered in the entry-point group ``hifi.exporters`` as ``kitti``.
EXPORTER = Exporter(name="kitti", write=write_kitti, suffix=".bin", scope="sensor", per_frame=True,
                    summary="KITTI velodyne .bin: float32 x y z intensity in the sensor frame, one file per frame")
