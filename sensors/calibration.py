"""Per-laser calibration of multi-beam lidars: elevation, azimuth offset, beam offsets.

Built-in tables (degrees, laser-ID order), with their sources (``../shared/data/SOURCES.md``):

- HDL-64E S2: BlenSor's ``laser_angles`` (mgschwan/blensor, release/scripts/addons/blensor/
  blendodyne.py), the calibration BlenSor ships for its HDL-64E S2 model.
- HDL-32E: ros-drivers/velodyne, velodyne_pointcloud/params/32db.yaml.
- VLP-16: ros-drivers/velodyne, velodyne_pointcloud/params/VLP16db.yaml.

Any other sensor can be described by a calibration file (:func:`read_calibration`): a
ros-drivers YAML (``lasers:`` with ``laser_id``, ``vert_correction``, ``rot_correction`` [rad],
``vert_offset_correction``, ``horiz_offset_correction``, ``dist_correction`` [m]) or a CSV
with a header naming ``elevation_deg`` and optionally ``azimuth_deg``, ``vert_offset_m``,
``horiz_offset_m``, ``dist_correction_m``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HDL64E_S2_ELEVATION_DEG = (
    -7.1144, -6.8259, 0.3329, 0.6608, -6.4908, -6.0974, -8.5282, -8.1613,
    -5.8425, -5.4714, -7.8512, -7.5292, -3.0491, -2.7687, -5.0533, -4.7975,
    -2.3830, -2.1140, -4.4368, -4.0757, -1.7279, -1.4471, -3.7843, -3.4226,
    1.0238, 1.3399, -0.9905, -0.6978, 1.6910, 1.9718, -0.3464, -0.0419,
    -22.6175, -22.2171, -11.3515, -10.7762, -21.7438, -21.1961, -24.8933, -24.2637,
    -20.6647, -20.0160, -23.7457, -23.0651, -16.4140, -16.0145, -19.4245, -19.1009,
    -15.4937, -15.0141, -18.6500, -18.1544, -14.4664, -13.8277, -17.5921, -16.9942,
    -10.3348, -9.8352, -13.2298, -12.8964, -9.3798, -8.8889, -12.3723, -11.9694,
)
HDL32E_ELEVATION_DEG = (
    -30.67, -9.33, -29.33, -8.00, -28.00, -6.67, -26.67, -5.33, -25.33, -4.00, -24.00, -2.67,
    -22.67, -1.33, -21.33, 0.00, -20.00, 1.33, -18.67, 2.67, -17.33, 4.00, -16.00, 5.33,
    -14.67, 6.67, -13.33, 8.00, -12.00, 9.33, -10.67, 10.67,
)
VLP16_ELEVATION_DEG = (-15, 1, -13, 3, -11, 5, -9, 7, -7, 9, -5, 11, -3, 13, -1, 15)


@dataclass(frozen=True)
class LaserCalibration:
    """Per-laser geometry, arrays of length n_lasers in laser-ID order.

    Attributes
    ----------
    elevation_rad : ndarray
        Beam elevation above the sensor's xy plane [rad].
    azimuth_offset_rad : ndarray
        Offset added to the rotor's yaw for this beam [rad], yaw convention (positive toward +y).
    vert_offset_m : ndarray
        Beam origin offset perpendicular to the beam in its vertical plane [m].
    horiz_offset_m : ndarray
        Beam origin offset perpendicular to the beam in the horizontal plane, positive to the
        beam's left [m].
    dist_correction_m : ndarray
        Range offset the sensor's firmware removes; the simulator adds it to the true range
        before the firmware removes it, so it is carried for exporters only [m].
    source : str
    """

    elevation_rad: np.ndarray
    azimuth_offset_rad: np.ndarray
    vert_offset_m: np.ndarray
    horiz_offset_m: np.ndarray
    dist_correction_m: np.ndarray
    source: str

    @property
    def n_lasers(self) -> int:
        return len(self.elevation_rad)

    @classmethod
    def from_elevations_deg(cls, elevation_deg, source: str) -> "LaserCalibration":
        el = np.radians(np.asarray(elevation_deg, dtype=float))
        z = np.zeros_like(el)
        return cls(el, z, z.copy(), z.copy(), z.copy(), source)

    def beams(self, yaw_rad):
        """Unit directions and origins of every beam at rotor yaws ``yaw_rad`` (..., n_lasers).

        Returns
        -------
        directions, origins : ndarray, shape (..., n_lasers, 3)
            Sensor frame. The origin is ``vert_offset * up_perp + horiz_offset * left`` where
            ``up_perp`` is perpendicular to the beam in its vertical plane and ``left`` is the
            horizontal normal to the beam: the geometry of ros-drivers/velodyne's
            ``RawData::unpack`` (xy_distance = d cos(el) - v sin(el), z = d sin(el) + v cos(el)).
        """
        yaw = np.asarray(yaw_rad, dtype=float) + self.azimuth_offset_rad
        el = self.elevation_rad
        ce, se = np.cos(el), np.sin(el)
        cy, sy = np.cos(yaw), np.sin(yaw)
        d = np.stack([ce * cy, ce * sy, np.broadcast_to(se, yaw.shape)], axis=-1)
        up_perp = np.stack([-se * cy, -se * sy, np.broadcast_to(ce, yaw.shape)], axis=-1)
        left = np.stack([-sy, cy, np.zeros_like(yaw)], axis=-1)
        o = self.vert_offset_m[..., None] * up_perp + self.horiz_offset_m[..., None] * left
        return d, o


BUILTIN = {
    "hdl64e_s2": LaserCalibration.from_elevations_deg(
        HDL64E_S2_ELEVATION_DEG, "BlenSor blendodyne.py laser_angles (HDL-64E S2)"),
    "hdl32e": LaserCalibration.from_elevations_deg(
        HDL32E_ELEVATION_DEG, "ros-drivers/velodyne velodyne_pointcloud/params/32db.yaml"),
    "vlp16": LaserCalibration.from_elevations_deg(
        VLP16_ELEVATION_DEG, "ros-drivers/velodyne velodyne_pointcloud/params/VLP16db.yaml"),
}


def read_calibration(path) -> LaserCalibration:
    """Read a ros-drivers YAML or a CSV calibration file.

    Raises
    ------
    ValueError
        Naming the file and what is wrong (missing column, unreadable YAML, no lasers).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML ({exc})") from None
        lasers = data.get("lasers") if isinstance(data, dict) else None
        if not lasers:
            raise ValueError(f"{path}: expected a 'lasers:' list as in ros-drivers/velodyne calibration files")
        try:
            lasers = sorted(lasers, key=lambda L: int(L["laser_id"]))
            get = lambda key: np.array([float(L.get(key, 0.0)) for L in lasers])  # noqa: E731
            el = np.array([float(L["vert_correction"]) for L in lasers])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: every laser needs laser_id and vert_correction ({exc!r})") from None
        # ros-drivers: the beam's azimuth is (rotor position - rot_correction), clockwise from
        # forward; in hifi's counter-clockwise yaw that is yaw = rotor yaw + rot_correction.
        return LaserCalibration(el, get("rot_correction"), get("vert_offset_correction"),
                                get("horiz_offset_correction"), get("dist_correction"), str(path))
    if suffix == ".csv":
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or "elevation_deg" not in rows[0]:
            raise ValueError(f"{path}: expected a CSV header with elevation_deg (and optionally "
                             "azimuth_deg, vert_offset_m, horiz_offset_m, dist_correction_m)")
        try:
            col = lambda key: np.array([float(r.get(key) or 0.0) for r in rows])  # noqa: E731
            return LaserCalibration(np.radians(col("elevation_deg")), np.radians(col("azimuth_deg")),
                                    col("vert_offset_m"), col("horiz_offset_m"), col("dist_correction_m"),
                                    str(path))
        except ValueError as exc:
            raise ValueError(f"{path}: non-numeric value ({exc})") from None
    raise ValueError(f"{path}: calibration files must end in .yaml, .yml or .csv")
