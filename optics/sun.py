"""Sun: position from UTC time and geodetic position, clear-sky broadband and spectral irradiance.

Plain functions over numpy arrays, free of scenes and simulations so they are tested on their
own. Angles in radians inside; the geodetic
position is taken in degrees at this boundary because that is how scenarios state it
(``lat_deg``, ``lon_deg``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _checks
from .constants import (
    ASTRONOMICAL_UNIT_M,
    EARTH_MEAN_RADIUS_M,
    MEINEL_SOLAR_CONSTANT_W_M2,
    PLANCK_J_S,
    SPEED_OF_LIGHT_M_S,
    BOLTZMANN_J_K,
    SUN_EFFECTIVE_TEMPERATURE_K,
)

__all__ = [
    "SolarPosition",
    "solar_position",
    "sun_direction_enu",
    "relative_airmass",
    "ClearSkyIrradiance",
    "clear_sky_irradiance",
    "planck_spectral_radiance",
    "rayleigh_optical_depth",
    "SpectralIrradiance",
    "clear_sky_spectral_irradiance",
]

_NS_PER_DAY = 86_400 * 10 ** 9
_NS_PER_HOUR = 3_600 * 10 ** 9
# 2000-01-01T12:00:00 (J2000.0, taken in UT as the PSA algorithm does) in ns since 1970.
_J2000_UNIX_NS = 946_728_000 * 10 ** 9
# Standard refraction conditions of the SPA refraction formula (Reda & Andreas 2004, eq. (42)).
_REFRACTION_PRESSURE_PA = 101_000.0
_REFRACTION_TEMPERATURE_K = 283.0
# Wavelength grid for normalising the spectral shapes over the whole solar spectrum [m]
# (250 nm .. 4 um holds 99 % of a 5772 K blackbody's power).
_SOLAR_GRID_M = np.linspace(250e-9, 4000e-9, 3751)


class SolarPosition(NamedTuple):
    """Topocentric solar position."""

    zenith_rad: np.ndarray
    """Geometric topocentric zenith angle, parallax included, no refraction [rad]."""
    apparent_zenith_rad: np.ndarray
    """Zenith angle corrected for atmospheric refraction [rad]."""
    azimuth_rad: np.ndarray
    """Azimuth from north towards east, 0..2 pi [rad]."""
    declination_rad: np.ndarray
    """Geocentric declination [rad]."""


def _to_unix_ns(time_utc) -> np.ndarray:
    t = np.asarray(time_utc)
    if not np.issubdtype(t.dtype, np.datetime64):
        try:
            t = t.astype("datetime64[ns]")
        except (TypeError, ValueError):
            raise ValueError(f"time_utc = {time_utc!r}: must be numpy datetime64 or ISO 8601 "
                             "strings in UTC") from None
    return t.astype("datetime64[ns]").astype(np.int64)


def solar_position(time_utc, lat_deg, lon_deg, *, pressure_pa: float = 101325.0,
                   temperature_k: float = 288.15) -> SolarPosition:
    """Solar zenith and azimuth by the PSA algorithm (Blanco-Muriel et al. 2001).

    Parameters
    ----------
    time_utc : datetime64 or str, array_like
        UTC instants (``numpy.datetime64`` of any unit, or ISO 8601 strings).
    lat_deg, lon_deg : float or array_like
        Geodetic latitude (north positive) and longitude (east positive) [deg].
    pressure_pa, temperature_k : float, optional
        Site pressure [Pa] and air temperature [K], used only for the refraction correction.

    Returns
    -------
    SolarPosition
        Arrays of the broadcast shape of the inputs.

    Notes
    -----
    The PSA algorithm: low-precision solar ecliptic coordinates from the elapsed days n since
    J2000.0 (mean longitude, mean anomaly, the equation of centre, nutation through the Moon's
    ascending node Omega = 2.1429 - 0.0010394594 n), the obliquity, then right ascension and
    declination, Greenwich mean sidereal time GMST = 6.6974243242 + 0.0657098283 n + UT [h],
    hour angle, and topocentric zenith and azimuth with the parallax correction
    (R_earth / AU) sin(zenith). Stated accuracy 0.5 arcmin over 1999-2015 (the paper's
    validity window; it degrades slowly outside it). UT1 - UTC (< 0.9 s) and Delta T are
    ignored, as in the paper.

    Refraction: the formula of NREL SPA (Reda & Andreas 2004, eq. (42)), applied when the sun's
    apparent upper limb is above the horizon (elevation >= -0.8333 deg).

    References
    ----------
    M. Blanco-Muriel, D. C. Alarcon-Padilla, T. Lopez-Moratalla, M. Lara-Coira, "Computing the
    solar vector", Solar Energy 70(5), 431-441, 2001.
    I. Reda and A. Andreas, "Solar position algorithm for solar radiation applications",
    Solar Energy 76(5), 577-589, 2004 (NREL/TP-560-34302).
    """
    ns = _to_unix_ns(time_utc)
    lat = np.radians(np.asarray(lat_deg, dtype=float))
    lon_deg = np.asarray(lon_deg, dtype=float)
    if np.any(np.abs(lat) > np.pi / 2):
        raise ValueError(f"lat_deg = {lat_deg!r}: must be in [-90, 90]")
    pressure_pa = _checks.positive("pressure_pa", pressure_pa)
    temperature_k = _checks.positive("temperature_k", temperature_k)

    decimal_hours = np.mod(ns, _NS_PER_DAY) / _NS_PER_HOUR
    n = (ns - _J2000_UNIX_NS) / _NS_PER_DAY  # elapsed days since J2000.0 (UT)

    omega = 2.1429 - 0.0010394594 * n
    mean_longitude = 4.8950630 + 0.017202791698 * n
    mean_anomaly = 6.2400600 + 0.0172019699 * n
    ecliptic_longitude = (mean_longitude + 0.03341607 * np.sin(mean_anomaly)
                          + 0.00034894 * np.sin(2.0 * mean_anomaly) - 0.0001134
                          - 0.0000203 * np.sin(omega))
    obliquity = 0.4090928 - 6.2140e-9 * n + 0.0000396 * np.cos(omega)

    sin_el = np.sin(ecliptic_longitude)
    right_ascension = np.mod(np.arctan2(np.cos(obliquity) * sin_el, np.cos(ecliptic_longitude)),
                             2.0 * np.pi)
    declination = np.arcsin(np.sin(obliquity) * sin_el)

    gmst_h = 6.6974243242 + 0.0657098283 * n + decimal_hours
    lmst = np.radians(gmst_h * 15.0 + lon_deg)
    hour_angle = lmst - right_ascension

    cos_lat, sin_lat = np.cos(lat), np.sin(lat)
    cos_ha = np.cos(hour_angle)
    zenith = np.arccos(np.clip(cos_lat * cos_ha * np.cos(declination)
                               + np.sin(declination) * sin_lat, -1.0, 1.0))
    azimuth = np.mod(np.arctan2(-np.sin(hour_angle),
                                np.tan(declination) * cos_lat - sin_lat * cos_ha), 2.0 * np.pi)
    zenith = zenith + (EARTH_MEAN_RADIUS_M / ASTRONOMICAL_UNIT_M) * np.sin(zenith)

    elevation_deg = 90.0 - np.degrees(zenith)
    refraction_deg = ((pressure_pa / _REFRACTION_PRESSURE_PA)
                      * (_REFRACTION_TEMPERATURE_K / temperature_k)
                      * 1.02 / (60.0 * np.tan(np.radians(elevation_deg + 10.3
                                                         / (elevation_deg + 5.11)))))
    refraction_deg = np.where(elevation_deg >= -0.8333, refraction_deg, 0.0)
    apparent_zenith = zenith - np.radians(refraction_deg)
    return SolarPosition(zenith_rad=zenith, apparent_zenith_rad=apparent_zenith,
                         azimuth_rad=azimuth, declination_rad=declination)


def sun_direction_enu(zenith_rad, azimuth_rad) -> np.ndarray:
    """Unit vector towards the sun in the local east-north-up frame.

    Parameters
    ----------
    zenith_rad, azimuth_rad : array_like
        Zenith angle and azimuth (from north towards east) [rad].

    Returns
    -------
    numpy.ndarray, shape (..., 3)
        (east, north, up) [1]; matches the scene frame (x east, y north, z up).
    """
    z = np.asarray(zenith_rad, dtype=float)
    a = np.asarray(azimuth_rad, dtype=float)
    return np.stack([np.sin(z) * np.sin(a), np.sin(z) * np.cos(a), np.cos(z)], axis=-1)


def relative_airmass(zenith_rad):
    """Relative optical air mass, Kasten & Young (1989).

    Parameters
    ----------
    zenith_rad : array_like
        Apparent solar zenith angle [rad].

    Returns
    -------
    numpy.ndarray
        AM [1]; NaN for the sun below the horizon (zenith > 90 deg).

    Notes
    -----
    AM = 1 / (cos z + 0.50572 (96.07995 - z_deg)^-1.6364), valid up to the horizon
    (AM(90 deg) = 38).

    References
    ----------
    F. Kasten and A. T. Young, "Revised optical air mass tables and approximation formula",
    Applied Optics 28(22), 4735-4738, 1989.
    """
    z = np.asarray(zenith_rad, dtype=float)
    z_deg = np.degrees(z)
    above = z_deg <= 90.0
    safe = np.where(above, z_deg, 90.0)
    am = 1.0 / (np.cos(np.radians(safe)) + 0.50572 * (96.07995 - safe) ** -1.6364)
    return np.where(above, am, np.nan)


class ClearSkyIrradiance(NamedTuple):
    """Broadband clear-sky irradiance [W/m^2]; zero with the sun below the horizon."""

    dni: np.ndarray
    """Direct normal irradiance [W/m^2]."""
    dhi: np.ndarray
    """Diffuse sky irradiance on a horizontal plane [W/m^2]."""
    ghi: np.ndarray
    """Global horizontal irradiance, dni cos z + dhi [W/m^2]."""


def clear_sky_irradiance(zenith_rad, *, altitude_m=0.0,
                         diffuse_fraction: float = 0.1) -> ClearSkyIrradiance:
    """Simple clear-sky model: Meinel & Meinel direct beam with Laue's altitude term.

    Parameters
    ----------
    zenith_rad : array_like
        Apparent solar zenith angle [rad].
    altitude_m : float or array_like, optional
        Site altitude above sea level [m], 0 .. 10 km.
    diffuse_fraction : float, optional
        Diffuse sky irradiance as a fraction of the direct normal irradiance [1]. Default 0.1.

    Returns
    -------
    ClearSkyIrradiance

    Notes
    -----
    DNI = 1353 [(1 - a h) 0.7^(AM^0.678) + a h] W/m^2 with a = 0.14 per km and h the altitude
    in km (Meinel & Meinel 1976 with Laue 1970's altitude correction, as given by Honsberg &
    Bowden, PVEducation, "Air Mass"), AM from :func:`relative_airmass`. The diffuse sky is
    taken as 10 % of the direct beam (same source: "the diffuse radiation is about 10 % of the
    direct component" on a clear day), and applied to a horizontal plane: DHI = 0.1 DNI.
    A first-order model: no aerosol, water vapour or turbidity inputs; use it for plausible
    image brightness and shading, not for solar-resource work.

    References
    ----------
    A. B. Meinel and M. P. Meinel, Applied Solar Energy, Addison-Wesley, 1976.
    E. G. Laue, "The measurement of solar spectral irradiance at different terrestrial
    elevations", Solar Energy 13, 43-57, 1970.
    C. Honsberg and S. Bowden, PVEducation, "Air Mass" (pveducation.org).
    """
    h_km = np.asarray(altitude_m, dtype=float) / 1000.0
    if np.any((h_km < 0.0) | (h_km > 10.0)):
        raise ValueError(f"altitude_m = {altitude_m!r}: must be in [0, 10000]")
    diffuse_fraction = _checks.non_negative("diffuse_fraction", diffuse_fraction)
    z = np.asarray(zenith_rad, dtype=float)
    am = relative_airmass(z)
    up = np.isfinite(am)
    am_safe = np.where(up, am, 1.0)
    dni = MEINEL_SOLAR_CONSTANT_W_M2 * ((1.0 - 0.14 * h_km) * 0.7 ** (am_safe ** 0.678)
                                        + 0.14 * h_km)
    dni = np.where(up, dni, 0.0)
    dhi = diffuse_fraction * dni
    ghi = dni * np.where(up, np.cos(z), 0.0) + dhi
    return ClearSkyIrradiance(dni=dni, dhi=dhi, ghi=ghi)


def planck_spectral_radiance(wavelength_m, temperature_k):
    """Blackbody spectral radiance, Planck's law.

    Parameters
    ----------
    wavelength_m : array_like
        Wavelength [m].
    temperature_k : float
        Temperature [K].

    Returns
    -------
    numpy.ndarray
        B_lambda = 2 h c^2 / lambda^5 / (exp(h c / (lambda k T)) - 1) [W m^-2 sr^-1 m^-1].
    """
    lam = np.asarray(wavelength_m, dtype=float)
    t = _checks.positive("temperature_k", temperature_k)
    x = PLANCK_J_S * SPEED_OF_LIGHT_M_S / (lam * BOLTZMANN_J_K * t)
    return 2.0 * PLANCK_J_S * SPEED_OF_LIGHT_M_S ** 2 / lam ** 5 / np.expm1(x)


def rayleigh_optical_depth(wavelength_m):
    """Rayleigh optical depth of the standard atmosphere at sea level.

    Parameters
    ----------
    wavelength_m : array_like
        Wavelength [m].

    Returns
    -------
    numpy.ndarray
        tau_R = 0.008735 lambda_um^-4.08 [1] (Leckner 1978, as used by Iqbal 1983, eq. 6.13.2).

    References
    ----------
    B. Leckner, "The spectral distribution of solar radiation at the earth's surface --
    elements of a model", Solar Energy 20(2), 143-150, 1978.
    M. Iqbal, An Introduction to Solar Radiation, Academic Press, 1983.
    """
    lam_um = np.asarray(wavelength_m, dtype=float) * 1e6
    return 0.008735 * lam_um ** -4.08


class SpectralIrradiance(NamedTuple):
    """Clear-sky spectral irradiance [W m^-2 m^-1], last axis over wavelength."""

    direct_normal: np.ndarray
    """Direct beam on a plane normal to the sun [W m^-2 m^-1]."""
    diffuse_horizontal: np.ndarray
    """Diffuse sky on a horizontal plane [W m^-2 m^-1]."""


def _direct_shape(lam, am):
    return planck_spectral_radiance(lam, SUN_EFFECTIVE_TEMPERATURE_K) * np.exp(
        -rayleigh_optical_depth(lam) * am)


def _diffuse_shape(lam, am):
    return planck_spectral_radiance(lam, SUN_EFFECTIVE_TEMPERATURE_K) * -np.expm1(
        -rayleigh_optical_depth(lam) * am)


def clear_sky_spectral_irradiance(wavelength_m, zenith_rad, *, altitude_m=0.0,
                                  diffuse_fraction: float = 0.1) -> SpectralIrradiance:
    """Spectral distribution of the clear-sky direct and diffuse irradiance.

    Parameters
    ----------
    wavelength_m : array_like, shape (n_lambda,)
        Wavelength grid [m].
    zenith_rad : array_like, shape (...)
        Apparent solar zenith angle [rad].
    altitude_m, diffuse_fraction
        As in :func:`clear_sky_irradiance`.

    Returns
    -------
    SpectralIrradiance
        Each of shape (..., n_lambda).

    Notes
    -----
    Shapes: the direct beam is a 5772 K blackbody attenuated by Rayleigh scattering along the
    air mass, S_dir = B(lambda, T_sun) exp(-tau_R(lambda) AM); the diffuse sky is the scattered
    part, S_sky = B(lambda, T_sun) (1 - exp(-tau_R(lambda) AM)). Each shape is normalised over
    250 nm .. 4 um so that it integrates to the broadband DNI and DHI of
    :func:`clear_sky_irradiance`. This gives the reddening of the low sun and the blue sky
    (the colour shifts of the image), not the atmospheric absorption bands: deviations from a
    measured spectrum (e.g. ASTM G173) of 10-30 % at single wavelengths are expected, while
    band-integrated RGB ratios are representative.
    """
    lam = np.asarray(wavelength_m, dtype=float)
    z = np.asarray(zenith_rad, dtype=float)
    broadband = clear_sky_irradiance(z, altitude_m=altitude_m, diffuse_fraction=diffuse_fraction)
    am = relative_airmass(z)
    am = np.where(np.isfinite(am), am, 1.0)[..., None]
    grid = _SOLAR_GRID_M
    norm_dir = np.trapezoid(_direct_shape(grid, am), grid, axis=-1)
    norm_sky = np.trapezoid(_diffuse_shape(grid, am), grid, axis=-1)
    direct = broadband.dni[..., None] * _direct_shape(lam, am) / norm_dir[..., None]
    diffuse = broadband.dhi[..., None] * _diffuse_shape(lam, am) / norm_sky[..., None]
    return SpectralIrradiance(direct_normal=direct, diffuse_horizontal=diffuse)
