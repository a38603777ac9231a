"""Receiver-satellite geometry: geodetic coordinates, local ENU frames and axes, azimuth and elevation."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pymap3d

from .constants import SECONDS_PER_DAY


class Geodetic(NamedTuple):
    """WGS 84 geodetic coordinates.

    Attributes
    ----------
    latitude_rad, longitude_rad : numpy.ndarray
        Geodetic latitude and longitude [rad].
    height_m : numpy.ndarray
        Ellipsoidal height [m].
    """

    latitude_rad: np.ndarray
    longitude_rad: np.ndarray
    height_m: np.ndarray


def ecef_to_geodetic(position_ecef) -> Geodetic:
    """WGS 84 geodetic coordinates of ECEF positions (..., 3) [m] (pymap3d.ecef2geodetic)."""
    p = np.asarray(position_ecef, dtype=float)
    lat, lon, h = pymap3d.ecef2geodetic(p[..., 0], p[..., 1], p[..., 2], deg=False)
    shape = p.shape[:-1]
    return Geodetic(*(np.asarray(v, dtype=float).reshape(shape) for v in (lat, lon, h)))


def enu_to_ecef(points_enu, origin_lat_deg, origin_lon_deg, origin_height_m) -> np.ndarray:
    """WGS 84 ECEF positions of points given in a local east-north-up frame.

    Parameters
    ----------
    points_enu : array_like, shape (..., 3)
        East, north, up coordinates relative to the origin [m].
    origin_lat_deg, origin_lon_deg : float
        Geodetic latitude and longitude of the frame's origin [deg].
    origin_height_m : float
        Ellipsoidal height of the origin [m].

    Returns
    -------
    numpy.ndarray, shape (..., 3)
        ECEF x, y, z [m].

    Notes
    -----
    ``pymap3d.enu2ecef`` on the WGS 84 ellipsoid: the origin's ECEF position plus the ENU
    vector rotated by the transpose of :func:`enu_rotation` at the origin (a tangent plane, so
    "up" is the ellipsoid normal at the origin, not at the point).
    """
    e = np.asarray(points_enu, dtype=float)
    return np.stack(pymap3d.enu2ecef(e[..., 0], e[..., 1], e[..., 2], origin_lat_deg, origin_lon_deg,
                                     origin_height_m), axis=-1)


def ecef_to_enu(points_ecef, origin_lat_deg, origin_lon_deg, origin_height_m) -> np.ndarray:
    """Local east-north-up coordinates of WGS 84 ECEF positions; inverse of :func:`enu_to_ecef`.

    Parameters
    ----------
    points_ecef : array_like, shape (..., 3)
        ECEF x, y, z [m].
    origin_lat_deg, origin_lon_deg : float
        Geodetic latitude and longitude of the frame's origin [deg].
    origin_height_m : float
        Ellipsoidal height of the origin [m].

    Returns
    -------
    numpy.ndarray, shape (..., 3)
        East, north, up relative to the origin [m] (``pymap3d.ecef2enu``).
    """
    x = np.asarray(points_ecef, dtype=float)
    return np.stack(pymap3d.ecef2enu(x[..., 0], x[..., 1], x[..., 2], origin_lat_deg, origin_lon_deg,
                                     origin_height_m), axis=-1)


def enu_rotation(latitude_rad, longitude_rad) -> np.ndarray:
    """Rotation matrices ECEF -> local ENU, shape (..., 3, 3); rows are the east, north, up axes."""
    lat = np.asarray(latitude_rad, dtype=float)
    lon = np.asarray(longitude_rad, dtype=float)
    sl, cl, sp, cp = np.sin(lon), np.cos(lon), np.sin(lat), np.cos(lat)
    zero = np.zeros_like(lat + lon)
    east = np.stack([-sl + zero, cl + zero, zero], -1)
    north = np.stack([-sp * cl, -sp * sl, cp + zero], -1)
    up = np.stack([cp * cl, cp * sl, sp + zero], -1)
    return np.stack([east, north, up], -2)


class LookAngles(NamedTuple):
    """Direction of a satellite seen from the receiver.

    Attributes
    ----------
    azimuth_rad : numpy.ndarray
        Azimuth from north, clockwise, in [0, 2 pi) [rad].
    elevation_rad : numpy.ndarray
        Elevation above the local ellipsoidal horizon [rad].
    """

    azimuth_rad: np.ndarray
    elevation_rad: np.ndarray


def look_angles(receiver_ecef, sv_position_ecef, receiver_geodetic: Geodetic | None = None) -> LookAngles:
    """Azimuth and elevation of satellites (..., 3) seen from receivers (..., 3), broadcast [rad]."""
    rx = np.asarray(receiver_ecef, dtype=float)
    sv = np.asarray(sv_position_ecef, dtype=float)
    geo = receiver_geodetic if receiver_geodetic is not None else ecef_to_geodetic(rx)
    rot = enu_rotation(geo.latitude_rad, geo.longitude_rad)
    d = sv - rx
    enu = np.einsum("...ij,...j->...i", rot, d) if rot.ndim == d.ndim + 1 else np.einsum(
        "...ij,...j->...i", np.broadcast_to(rot, d.shape[:-1] + (3, 3)), d)
    horiz = np.hypot(enu[..., 0], enu[..., 1])
    el = np.arctan2(enu[..., 2], horiz)
    az = np.mod(np.arctan2(enu[..., 0], enu[..., 1]), 2.0 * np.pi)
    return LookAngles(az, el)


def day_of_year(t) -> np.ndarray:
    """Day of year with fraction of datetime64 values, 1.0 at 1 January 00:00 [day]."""
    t = np.asarray(t, dtype="datetime64[ns]")
    start = t.astype("datetime64[Y]").astype("datetime64[ns]")
    return (t - start).astype(np.int64) / (SECONDS_PER_DAY * 1e9) + 1.0
