"""Per-laser calibration of multi-beam lidars: elevation, azimuth offset, beam offsets.

Built-in tables (degrees, laser-ID order), with their sources (``../shared/data/SOURCES.md``):

- HDL-64E S2: elevations from BlenSor's ``laser_angles`` (mgschwan/blensor, release/scripts/
  addons/blensor/blendodyne.py), the calibration BlenSor ships for its HDL-64E S2 model; beam
  origin offsets (``vert_offset_correction``, ``horiz_offset_correction``) and distance
  corrections from a real HDL-64E S2.1 unit, ros-drivers/velodyne
  ``velodyne_pointcloud/params/64e_s2.1-sztaki.yaml`` (BSD; shipped as
  ``sensors/data/64e_s2.1-sztaki.yaml``, see ``sensors/data/README.md``). That unit's
  elevations of the lower block agree with BlenSor's within 0.25 deg, those of its upper
  block differ by up to 3 deg (an S2.1, not an S2) and its azimuth corrections reach 9.6 deg:
  per-unit values, so the built-in table keeps BlenSor's elevations and zero azimuth offsets
  and takes from the real unit only the offsets BlenSor lacks (the two laser blocks sit
  0.105-0.124 m and 0.193-0.213 m above the sensor origin, HDL-64E S2 manual). Pass the YAML
  as ``calibration_file`` to simulate that unit in full.
- HDL-32E: ros-drivers/velodyne, velodyne_pointcloud/params/32db.yaml.
- VLP-16: ros-drivers/velodyne, velodyne_pointcloud/params/VLP16db.yaml.

Any other sensor can be described by a calibration file (:func:`read_calibration`): a
ros-drivers YAML (``lasers:`` with ``laser_id``, ``vert_correction``, ``rot_correction`` [rad],
``vert_offset_correction``, ``horiz_offset_correction``, ``dist_correction`` [m]) or a CSV
with a header naming ``elevation_deg`` and optionally ``azimuth_deg``, ``vert_offset_m``,
``horiz_offset_m``, ``dist_correction_m``. Either may give every laser a ``firing_fraction``
(a hifi extension, 0 <= f < 1): the instant the laser fires, as a fraction of the model's firing
cycle (all 0: a whole column at once, as an Ouster; ``i / n``: evenly staggered, as a
Velodyne); without it the model's data-sheet sequence applies (``firing`` parameter of
:class:`sensors.lidar.RotatingLidar`).
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

#: ros-drivers/velodyne : velodyne_pointcloud/params/64e_s2.1-sztaki.yaml @ 16be7978ee0f (file
#: unchanged at 29abd0e1361c; BSD, Austin Robot Technology and others): a real HDL-64E S2.1.
SZTAKI_64E_S21_SOURCE = ("ros-drivers/velodyne velodyne_pointcloud/params/64e_s2.1-sztaki.yaml "
                         "@ 16be7978ee0fa78818a9ff04faf5efac83ccf378 (BSD)")
#: Its ``vert_offset_correction`` [m], laser-ID order: upper block (0-31) 0.193-0.213 m, lower
#: block (32-63) 0.105-0.124 m above the sensor origin.
HDL64E_S21_VERT_OFFSET_M = (
    0.19548199, 0.19601112, 0.2096954, 0.21031273, 0.19674604, 0.19740747, 0.19277746, 0.19342419,
    0.19792192, 0.19868624, 0.19412971, 0.19474705, 0.20331627, 0.20399239, 0.19943586, 0.20003851,
    0.20458033, 0.20512417, 0.20065582, 0.20133196, 0.20585909, 0.20630005, 0.20190519, 0.20256662,
    0.21097416, 0.2116062, 0.20721134, 0.20779928, 0.21222351, 0.21282616, 0.20838722, 0.20904865,
    0.10812235, 0.10859233, 0.12148494, 0.12213274, 0.10918932, 0.10991334, 0.1053787, 0.10593759,
    0.11047223, 0.11138678, 0.10667431, 0.10753805, 0.11568009, 0.11620087, 0.11205999, 0.11252997,
    0.11669625, 0.11729325, 0.11308886, 0.11369856, 0.11796646, 0.11856346, 0.11424475, 0.11501958,
    0.12259002, 0.12319972, 0.11933828, 0.11983367, 0.12361888, 0.12422858, 0.12046877, 0.12086253,
)
#: Its ``horiz_offset_correction`` [m]: +0.025999999 for even laser IDs, -0.025999999 for odd.
HDL64E_S21_HORIZ_OFFSET_M = tuple(0.025999999 * (1 - 2 * (i % 2)) for i in range(64))
#: Its ``dist_correction`` [m] (the firmware adds it to the raw range).
HDL64E_S21_DIST_CORRECTION_M = (
    1.5195264, 1.5145139, 1.4963768, 1.3771207, 1.2947885, 1.4395787, 1.3618773, 1.5325716,
    1.3743323, 1.4969112, 1.434263, 1.5500841, 1.3725992, 1.3111591, 1.5360803, 1.4755449,
    1.4410587, 1.4434521, 1.3243448, 1.4565854, 1.3313776, 1.3787535, 1.3419412, 1.4338304,
    1.4930911, 1.4367653, 1.5279892, 1.5077638, 1.3627797, 1.3749608, 1.2940709, 1.3907666,
    1.3461819, 1.2487466, 1.5016498, 1.2495708, 1.2674536, 1.2481956, 1.4516722, 1.3843004,
    1.244738, 1.3284543, 1.4055542, 1.3529747, 1.240738, 1.5288052, 1.5423979, 1.3086253,
    1.340533, 1.2994545, 1.4499763, 1.3516956, 1.2374236, 1.3730562, 1.4445888, 1.3861449,
    1.4635341, 1.3715826, 1.4644832, 1.3074548, 1.4378391, 1.3585466, 1.4478067, 1.4329738,
)
#: The shipped copy of that file (package data).
SZTAKI_64E_S21_YAML = Path(__file__).parent / "data" / "64e_s2.1-sztaki.yaml"


@dataclass(frozen=True)
class FocalIntensity:
    """Per-laser intensity distance compensation of a Velodyne HDL-64E S2 calibration, arrays of
    length n_lasers in laser-ID order (:func:`sensors.radiometry.velodyne_focal_compensation`).

    Attributes
    ----------
    focal_distance_m : ndarray
        Distance at which the laser's compensation is zero [m] (ros-drivers ``focal_distance``,
        the manufacturer's db.xml ``focalDistance_`` in cm converted to m by ros-drivers'
        ``gen_calibration.py``).
    focal_slope : ndarray
        Intensity codes added per unit of the compensation curve [1] (``focal_slope``).
    min_intensity, max_intensity : ndarray
        The compensated intensity is clipped to these codes (``min_intensity``,
        ``max_intensity``; 0 and 255 where the file leaves them out, as ros-drivers'
        ``calibration.cpp``).
    """

    focal_distance_m: np.ndarray
    focal_slope: np.ndarray
    min_intensity: np.ndarray
    max_intensity: np.ndarray


def _focal_intensity(path, lasers) -> "FocalIntensity | None":
    """The lasers' focal compensation fields, or None if no laser has them; every laser or none."""
    have = [("focal_distance" in L and "focal_slope" in L) for L in lasers]
    if not any(have):
        return None
    if not all(have):
        missing = [int(L["laser_id"]) for L, h in zip(lasers, have) if not h]
        raise ValueError(f"{path}: focal_distance and focal_slope are given for some lasers but not for laser_id "
                         f"{', '.join(map(str, missing[:8]))}{' ...' if len(missing) > 8 else ''}; give them for "
                         f"every laser or none")
    col = lambda key, default: np.array([float(L.get(key, default)) for L in lasers])  # noqa: E731
    return FocalIntensity(col("focal_distance", 0.0), col("focal_slope", 0.0), col("min_intensity", 0.0),
                          col("max_intensity", 255.0))


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
    fire_fraction : ndarray or None
        Instant each laser fires, as a fraction of the firing cycle, 0 <= f < 1 (the file's
        ``firing_fraction``); None: the model's sequence.
    intensity : FocalIntensity or None
        The per-laser intensity distance compensation of an HDL-64E S2 calibration (the file's
        ``focal_distance``, ``focal_slope``, ``min_intensity``, ``max_intensity``); None: the
        file has none.
    """

    elevation_rad: np.ndarray
    azimuth_offset_rad: np.ndarray
    vert_offset_m: np.ndarray
    horiz_offset_m: np.ndarray
    dist_correction_m: np.ndarray
    source: str
    fire_fraction: np.ndarray | None = None
    intensity: "FocalIntensity | None" = None

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
            ``RawData::unpack`` (``velodyne_pointcloud/src/lib/rawdata.cc``):
            ``xy = d cos(el) - v sin(el)``, ``z = d sin(el) + v cos(el)``, and the horizontal
            offset ``h`` added along the horizontal normal of the beam (Velodyne frame
            ``x = xy sin(a) - h cos(a)``, ``y = xy cos(a) + h sin(a)``, ROS ``X = y, Y = -x``,
            which is ``h * left`` in hifi's counter-clockwise yaw). ``d`` is the range measured
            from that origin, the firmware's corrected distance ``raw + dist_correction``, so
            the simulated ``distance`` is what the driver reports after its correction.

        Notes
        -----
        A beam of elevation ``el`` < 0 from a sensor ``H`` above flat ground meets it at
        horizontal distance ``sqrt(((H cos(el) + v) / -sin(el))^2 + h^2)`` from the sensor
        axis: the vertical offset lengthens every ring by ``v / -sin(el)``.
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
    "hdl64e_s2": LaserCalibration(
        np.radians(np.asarray(HDL64E_S2_ELEVATION_DEG, dtype=float)), np.zeros(64),
        np.asarray(HDL64E_S21_VERT_OFFSET_M, dtype=float), np.asarray(HDL64E_S21_HORIZ_OFFSET_M, dtype=float),
        np.asarray(HDL64E_S21_DIST_CORRECTION_M, dtype=float),
        "elevations: BlenSor blendodyne.py laser_angles (HDL-64E S2); beam offsets and distance "
        "corrections: " + SZTAKI_64E_S21_SOURCE),
    "hdl32e": LaserCalibration.from_elevations_deg(
        HDL32E_ELEVATION_DEG, "ros-drivers/velodyne velodyne_pointcloud/params/32db.yaml"),
    "vlp16": LaserCalibration.from_elevations_deg(
        VLP16_ELEVATION_DEG, "ros-drivers/velodyne velodyne_pointcloud/params/VLP16db.yaml"),
}


def _firing_fraction(path, values) -> np.ndarray:
    """The ``firing_fraction`` column, checked: every value in [0, 1)."""
    f = np.asarray(values, dtype=float)
    bad = np.flatnonzero(~((f >= 0.0) & (f < 1.0)))
    if bad.size:
        raise ValueError(f"{path}: firing_fraction must be in [0, 1) (a fraction of the firing cycle); laser "
                         f"{int(bad[0])} has {f[bad[0]]!r}")
    return f


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
        have = [("firing_fraction" in L) for L in lasers]
        if any(have) and not all(have):
            missing = [int(L["laser_id"]) for L, h in zip(lasers, have) if not h]
            raise ValueError(f"{path}: firing_fraction is given for some lasers but not for laser_id "
                             f"{', '.join(map(str, missing[:8]))}{' ...' if len(missing) > 8 else ''}; give it for "
                             f"every laser or none")
        fire = _firing_fraction(path, get("firing_fraction")) if all(have) else None
        try:
            focal = _focal_intensity(path, lasers)
        except (TypeError, ValueError) as exc:
            if str(exc).startswith(str(path)):
                raise
            raise ValueError(f"{path}: focal_distance, focal_slope, min_intensity and max_intensity must be "
                             f"numbers ({exc})") from None
        # ros-drivers: the beam's azimuth is (rotor position - rot_correction), clockwise from
        # forward; in hifi's counter-clockwise yaw that is yaw = rotor yaw + rot_correction.
        return LaserCalibration(el, get("rot_correction"), get("vert_offset_correction"),
                                get("horiz_offset_correction"), get("dist_correction"), str(path), fire, focal)
    if suffix == ".csv":
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or "elevation_deg" not in rows[0]:
            raise ValueError(f"{path}: expected a CSV header with elevation_deg (and optionally "
                             "azimuth_deg, vert_offset_m, horiz_offset_m, dist_correction_m, firing_fraction)")
        try:
            col = lambda key: np.array([float(r.get(key) or 0.0) for r in rows])  # noqa: E731
            fire = None
            if "firing_fraction" in rows[0]:
                blank = [i for i, r in enumerate(rows) if not (r.get("firing_fraction") or "").strip()]
                if blank:
                    raise ValueError(f"firing_fraction is empty in data row(s) {', '.join(str(i + 1) for i in blank[:8])}; "
                                     f"give it for every laser or drop the column")
                fire = _firing_fraction(path, col("firing_fraction"))
            return LaserCalibration(np.radians(col("elevation_deg")), np.radians(col("azimuth_deg")),
                                    col("vert_offset_m"), col("horiz_offset_m"), col("dist_correction_m"),
                                    str(path), fire)
        except ValueError as exc:
            msg = str(exc)
            if msg.startswith(str(path)):
                raise
            if msg.startswith("firing_fraction"):
                raise ValueError(f"{path}: {msg}") from None
            raise ValueError(f"{path}: non-numeric value ({exc})") from None
    raise ValueError(f"{path}: calibration files must end in .yaml, .yml or .csv")
