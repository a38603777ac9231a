"""Ionospheric and tropospheric delay models on plain arrays (all delays in metres at GPS L1).

References
----------
.. [1] IS-GPS-200N, 20.3.3.5.2.5 "Ionospheric model" (Klobuchar, 1987).
.. [2] O. Montenbruck, E. Gill, "Satellite Orbits", Springer 2000, sec. 6.4.2 (single-layer
   ionosphere mapping).
.. [3] J. Saastamoinen, "Atmospheric correction for the troposphere and stratosphere in radio
   ranging of satellites", Geophys. Monogr. 15, AGU, 1972.
.. [4] A. E. Niell, "Global mapping functions for the atmosphere delay at radio wavelengths",
   J. Geophys. Res. 101(B2), 3227-3246, 1996 (Tables 3 and 4).
.. [5] T. Takasu, RTKLIB 2.4.2 ``src/rtkcmn.c`` (``ionmodel``, ``tropmodel``, ``tropmapf``), whose
   conventions the tests reproduce against ``test/utest/t_atmos.c``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .constants import SPEED_OF_LIGHT


# ----------------------------------------------------------------------------------------------
# Ionosphere
# ----------------------------------------------------------------------------------------------
def klobuchar_delay(latitude_rad, longitude_rad, azimuth_rad, elevation_rad, gps_sow_s, alpha, beta, *,
                    c=SPEED_OF_LIGHT, night_delay_s=5e-9, min_period_s=72000.0):
    """Klobuchar single-frequency ionospheric group delay on L1 [m].

    Parameters
    ----------
    latitude_rad, longitude_rad : array_like
        Geodetic receiver latitude and longitude [rad].
    azimuth_rad, elevation_rad : array_like
        Satellite azimuth (from north, clockwise) and elevation at the receiver [rad].
    gps_sow_s : array_like
        GPS time of week (or any time whose value modulo one day is the GPS time of day) [s].
    alpha, beta : array_like, shape (4,)
        Broadcast coefficients, in the units of the navigation message (s/semicircle^n).
    c : float, keyword-only
        Speed of light [m/s].
    night_delay_s, min_period_s : float, keyword-only
        The constant night-time delay (5 ns) and the period floor (72000 s) of IS-GPS-200.

    Returns
    -------
    numpy.ndarray
        Slant L1 delay [m]; 0 where elevation <= 0.  All inputs broadcast.

    Notes
    -----
    IS-GPS-200 20.3.3.5.2.5 with angles converted to semicircles by dividing by pi:
    psi = 0.0137 / (E + 0.11) - 0.022; phi_i = phi_u + psi cos A clipped to +-0.416;
    lambda_i = lambda_u + psi sin A / cos(phi_i); phi_m = phi_i + 0.064 cos(lambda_i - 1.617);
    t = 43200 lambda_i + t_GPS modulo 86400; F = 1 + 16 (0.53 - E)^3;
    AMP = sum alpha_n phi_m^n (>= 0), PER = sum beta_n phi_m^n (>= 72000), x = 2 pi (t - 50400)/PER;
    T_iono = F [5e-9 + AMP (1 - x^2/2 + x^4/24)] if ``|x|`` < 1.57 else F 5e-9.
    RTKLIB's ``ionmodel`` follows the same conventions (radians in, semicircles inside, pi for
    the conversion, the clipped phi_i used in cos(phi_i)); we reproduce its published values to
    1e-8 m.  RTKLIB substitutes default coefficients when all eight are zero; we do not.
    """
    lat = np.asarray(latitude_rad, dtype=float) / np.pi
    lon = np.asarray(longitude_rad, dtype=float) / np.pi
    az = np.asarray(azimuth_rad, dtype=float)
    el_rad = np.asarray(elevation_rad, dtype=float)
    el = el_rad / np.pi
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    psi = 0.0137 / (el + 0.11) - 0.022
    phi_i = np.clip(lat + psi * np.cos(az), -0.416, 0.416)
    lam_i = lon + psi * np.sin(az) / np.cos(phi_i * np.pi)
    phi_m = phi_i + 0.064 * np.cos((lam_i - 1.617) * np.pi)
    t = np.mod(43200.0 * lam_i + np.asarray(gps_sow_s, dtype=float), 86400.0)
    f = 1.0 + 16.0 * (0.53 - el) ** 3
    amp = np.maximum(alpha[0] + phi_m * (alpha[1] + phi_m * (alpha[2] + phi_m * alpha[3])), 0.0)
    per = np.maximum(beta[0] + phi_m * (beta[1] + phi_m * (beta[2] + phi_m * beta[3])), min_period_s)
    x = 2.0 * np.pi * (t - 50400.0) / per
    day = night_delay_s + amp * (1.0 + x * x * (-0.5 + x * x / 24.0))
    delay = c * f * np.where(np.abs(x) < 1.57, day, night_delay_s)
    return np.where(el_rad > 0.0, delay, 0.0)


def single_layer_mapping(elevation_rad, *, earth_radius_m=6371e3, shell_height_m=350e3):
    """Single-layer (thin shell) ionospheric obliquity factor [1].

    Parameters
    ----------
    elevation_rad : array_like
        Satellite elevation [rad].
    earth_radius_m, shell_height_m : float, keyword-only
        Mean Earth radius and shell height [m] (Montenbruck & Gill 2000 use 350-400 km).

    Returns
    -------
    numpy.ndarray
        1 / cos z' with sin z' = R / (R + H) cos(elevation) (Montenbruck & Gill 2000, eq. 6.98);
        about 3 at the horizon for H = 350 km.
    """
    el = np.asarray(elevation_rad, dtype=float)
    s = earth_radius_m / (earth_radius_m + shell_height_m) * np.cos(el)
    return 1.0 / np.sqrt(1.0 - s * s)


def vane_iono_delay(elevation_rad, *, zenith_delay_m=1.5, earth_radius_m=6371e3, shell_height_m=350e3):
    """``iono_model = "vane"``: a constant vertical delay mapped to the slant [m].

    Parameters
    ----------
    elevation_rad : array_like
        Satellite elevation [rad].
    zenith_delay_m : float, keyword-only
        Vertical ionospheric L1 delay [m].  The default 1.5 m is c * 5 ns, the constant night-time
        term of the Klobuchar model (IS-GPS-200), chosen here because we could not obtain the
        VANE paper's own value.
    earth_radius_m, shell_height_m : float, keyword-only
        Shell geometry of :func:`single_layer_mapping` [m].

    Returns
    -------
    numpy.ndarray
        zenith_delay_m * single_layer_mapping(elevation); 0 where elevation <= 0.

    Notes
    -----
    What is implemented: the mapping of a zenith delay with the single-layer mapping function of
    Montenbruck & Gill (2000, sec. 6.4.2), nothing else (no diurnal or geographic variation).
    The VANE paper's ionosphere is described (in secondary accounts) as a zenith delay mapped
    after Montenbruck.
    We could not obtain the paper's text (searched, not found), so its exact equation and
    parameter values are not reproduced here; this is the textbook form of that description.
    """
    el = np.asarray(elevation_rad, dtype=float)
    m = single_layer_mapping(el, earth_radius_m=earth_radius_m, shell_height_m=shell_height_m)
    return np.where(el > 0.0, zenith_delay_m * m, 0.0)


# ----------------------------------------------------------------------------------------------
# Troposphere
# ----------------------------------------------------------------------------------------------
class Atmosphere(NamedTuple):
    """Surface meteorology.

    Attributes
    ----------
    pressure_pa : numpy.ndarray
        Total pressure [Pa].
    temperature_k : numpy.ndarray
        Temperature [K].
    water_vapour_pressure_pa : numpy.ndarray
        Partial pressure of water vapour [Pa].
    """

    pressure_pa: np.ndarray
    temperature_k: np.ndarray
    water_vapour_pressure_pa: np.ndarray


def standard_atmosphere(height_m, relative_humidity=0.5, *, sea_level_temperature_c=15.0,
                        kelvin_offset=273.16):
    """Standard atmosphere at a height, with RTKLIB's ``tropmodel`` conventions.

    Parameters
    ----------
    height_m : array_like
        Height [m] (RTKLIB uses the ellipsoidal height; negative heights are clipped to 0).
    relative_humidity : array_like
        Relative humidity, 0..1 [1].
    sea_level_temperature_c : float, keyword-only
        Temperature at sea level [degC].
    kelvin_offset : float, keyword-only
        RTKLIB adds 273.16 (not 273.15) to degrees Celsius; kept to reproduce its values.

    Returns
    -------
    Atmosphere
        P = 1013.25 (1 - 2.2557e-5 h)^5.2568 hPa, T = 15 - 6.5e-3 h degC,
        e = 6.108 rh exp((17.15 T - 4684) / (T - 38.45)) hPa (T in K), returned in SI [Pa, K].
    """
    h = np.maximum(np.asarray(height_m, dtype=float), 0.0)
    p_hpa = 1013.25 * (1.0 - 2.2557e-5 * h) ** 5.2568
    t_k = sea_level_temperature_c - 6.5e-3 * h + kelvin_offset
    e_hpa = 6.108 * np.asarray(relative_humidity, dtype=float) * np.exp((17.15 * t_k - 4684.0) / (t_k - 38.45))
    return Atmosphere(p_hpa * 100.0, t_k, e_hpa * 100.0)


class ZenithDelay(NamedTuple):
    """Zenith tropospheric delays.

    Attributes
    ----------
    hydrostatic_m : numpy.ndarray
        Zenith hydrostatic ("dry") delay [m].
    wet_m : numpy.ndarray
        Zenith wet delay [m].
    """

    hydrostatic_m: np.ndarray
    wet_m: np.ndarray


def saastamoinen_zenith_delay(latitude_rad, height_m, pressure_pa, temperature_k, water_vapour_pressure_pa):
    """Saastamoinen (1972) zenith hydrostatic and wet delays [m].

    Parameters
    ----------
    latitude_rad : array_like
        Geodetic latitude [rad].
    height_m : array_like
        Height [m] (clipped to >= 0 as in RTKLIB).
    pressure_pa, temperature_k, water_vapour_pressure_pa : array_like
        Surface meteorology [Pa, K, Pa], e.g. from :func:`standard_atmosphere`.

    Returns
    -------
    ZenithDelay
        ZHD = 0.0022768 P / (1 - 0.00266 cos 2 phi - 0.00028 H) and
        ZWD = 0.002277 (1255 / T + 0.05) e, with P and e in hPa and H in km (the per-km
        coefficient is applied to kilometres).  About 2.3 m and 0.1-0.3 m at sea level.
    """
    lat = np.asarray(latitude_rad, dtype=float)
    h_km = np.maximum(np.asarray(height_m, dtype=float), 0.0) / 1e3
    p_hpa = np.asarray(pressure_pa, dtype=float) / 100.0
    e_hpa = np.asarray(water_vapour_pressure_pa, dtype=float) / 100.0
    t = np.asarray(temperature_k, dtype=float)
    zhd = 0.0022768 * p_hpa / (1.0 - 0.00266 * np.cos(2.0 * lat) - 0.00028 * h_km)
    zwd = 0.002277 * (1255.0 / t + 0.05) * e_hpa
    return ZenithDelay(zhd, zwd)


def marini_mapping(elevation_rad, a, b, c):
    """Normalised Marini continued fraction with three terms (Niell 1996, eq. 4) [1].

    (1 + a / (1 + b / (1 + c))) / (sin e + a / (sin e + b / (sin e + c))).
    """
    s = np.sin(np.asarray(elevation_rad, dtype=float))
    return (1.0 + a / (1.0 + b / (1.0 + c))) / (s + a / (s + b / (s + c)))


# Niell (1996) Table 3 coefficients at latitudes 15, 30, 45, 60, 75 deg.
_NIELL_LAT_DEG = np.array([15.0, 30.0, 45.0, 60.0, 75.0])
_NIELL_HYD_AVG = np.array([
    [1.2769934e-3, 1.2683230e-3, 1.2465397e-3, 1.2196049e-3, 1.2045996e-3],
    [2.9153695e-3, 2.9152299e-3, 2.9288445e-3, 2.9022565e-3, 2.9024912e-3],
    [62.610505e-3, 62.837393e-3, 63.721774e-3, 63.824265e-3, 64.258455e-3],
])
_NIELL_HYD_AMP = np.array([
    [0.0, 1.2709626e-5, 2.6523662e-5, 3.4000452e-5, 4.1202191e-5],
    [0.0, 2.1414979e-5, 3.0160779e-5, 7.2562722e-5, 11.723375e-5],
    [0.0, 9.0128400e-5, 4.3497037e-5, 84.795348e-5, 170.37206e-5],
])
_NIELL_WET = np.array([
    [5.8021897e-4, 5.6794847e-4, 5.8118019e-4, 5.9727542e-4, 6.1641693e-4],
    [1.4275268e-3, 1.5138625e-3, 1.4572752e-3, 1.5007428e-3, 1.7599082e-3],
    [4.3472961e-2, 4.6729510e-2, 4.3908931e-2, 4.4626982e-2, 5.4736038e-2],
])
_NIELL_HEIGHT = (2.53e-5, 5.49e-3, 1.14e-3)  # a_ht, b_ht, c_ht (Niell 1996, Table 3)


class Mapping(NamedTuple):
    """Tropospheric mapping factors.

    Attributes
    ----------
    hydrostatic : numpy.ndarray
        Hydrostatic ("dry") mapping factor [1].
    wet : numpy.ndarray
        Wet mapping factor [1].
    """

    hydrostatic: np.ndarray
    wet: np.ndarray


def niell_mapping(elevation_rad, latitude_rad, height_m, day_of_year):
    """Niell (1996) hydrostatic and wet mapping functions [1].

    Parameters
    ----------
    elevation_rad : array_like
        Elevation [rad]; factors are 0 where elevation <= 0.
    latitude_rad : array_like
        Geodetic latitude [rad].
    height_m : array_like
        Height of the site [m] (ellipsoidal, as in RTKLIB, instead of above sea level).
    day_of_year : array_like
        Day of year with fraction, 1.0 = 1 January 00:00 [day].

    Returns
    -------
    Mapping
        Hydrostatic and wet factors.

    Notes
    -----
    Coefficients (Niell 1996, Table 3) are linearly interpolated in ``|latitude|`` between 15 and 75
    degrees and held constant outside.  Hydrostatic: a = a_avg - a_amp cos(2 pi (doy - 28) /
    365.25), half a year added in the southern hemisphere, plus the height correction
    (1/sin e - m(e; a_ht, b_ht, c_ht)) H[km].  Wet: a, b, c interpolated, no seasonal term.
    This is RTKLIB's ``nmf`` convention (interpolation, doy 28 phase, ellipsoidal height).
    """
    el = np.asarray(elevation_rad, dtype=float)
    lat_deg = np.degrees(np.asarray(latitude_rad, dtype=float))
    h = np.asarray(height_m, dtype=float)
    y = (np.asarray(day_of_year, dtype=float) - 28.0) / 365.25 + np.where(lat_deg < 0.0, 0.5, 0.0)
    cosy = np.cos(2.0 * np.pi * y)
    alat = np.abs(lat_deg)

    def interp(table):
        return [np.interp(alat, _NIELL_LAT_DEG, row) for row in table]

    avg, amp, wet = interp(_NIELL_HYD_AVG), interp(_NIELL_HYD_AMP), interp(_NIELL_WET)
    ah = [avg[k] - amp[k] * cosy for k in range(3)]
    dm = (1.0 / np.sin(el) - marini_mapping(el, *_NIELL_HEIGHT)) * h / 1e3
    hyd = marini_mapping(el, *ah) + dm
    w = marini_mapping(el, *wet)
    positive = el > 0.0
    return Mapping(np.where(positive, hyd, 0.0), np.where(positive, w, 0.0))


TROPO_MAX_HEIGHT_M = 1.0e4
"""Above this height [m] the model returns 0, as RTKLIB's ``tropmodel`` does: its standard
atmosphere (linear temperature lapse) is a troposphere model and breaks down above ~11 km.
A receiver above 10 km therefore gets no tropospheric delay (a known limitation; the true
delay there is still ~0.5 m at the zenith)."""


class TropoDelay(NamedTuple):
    """Slant tropospheric delays.

    Attributes
    ----------
    dry_m : numpy.ndarray
        Slant hydrostatic delay [m].
    wet_m : numpy.ndarray
        Slant wet delay [m].
    """

    dry_m: np.ndarray
    wet_m: np.ndarray


def tropo_delay(elevation_rad, latitude_rad, height_m, day_of_year, *, relative_humidity=0.5, mapping="niell"):
    """Saastamoinen zenith delays in a standard atmosphere, mapped with Niell [m].

    Parameters
    ----------
    elevation_rad, latitude_rad : array_like
        Satellite elevation and receiver latitude [rad].
    height_m : array_like
        Receiver height [m].
    day_of_year : array_like
        Day of year with fraction [day].
    relative_humidity : float, keyword-only
        Relative humidity of the standard atmosphere, 0..1 [1].
    mapping : {"niell", "cosz"}, keyword-only
        "niell": :func:`niell_mapping` (hydrostatic and wet functions); "cosz": 1 / cos z =
        1 / sin(e) for both parts, as RTKLIB's ``tropmodel`` (src/rtkcmn.c) maps its
        Saastamoinen delays.

    Returns
    -------
    TropoDelay
        ZHD * m_h(e) and ZWD * m_w(e); 0 where elevation <= 0 and where the height is outside
        [-100 m, ``TROPO_MAX_HEIGHT_M`` = 10 km], as RTKLIB's ``tropmodel``.
    """
    if mapping not in ("niell", "cosz"):
        raise ValueError(f"mapping: got {mapping!r}; allowed: 'niell', 'cosz'")
    h = np.asarray(height_m, dtype=float)
    inside = (h >= -100.0) & (h <= TROPO_MAX_HEIGHT_M)
    h_in = np.where(inside, h, 0.0)
    el = np.asarray(elevation_rad, dtype=float)
    up = el > 0.0
    el_in = np.where(up, el, np.pi / 2)
    atm = standard_atmosphere(h_in, relative_humidity)
    z = saastamoinen_zenith_delay(latitude_rad, h_in, *atm)
    if mapping == "niell":
        m = niell_mapping(el_in, latitude_rad, h_in, day_of_year)
        m_h, m_w = m.hydrostatic, m.wet
    else:
        m_h = m_w = 1.0 / np.sin(el_in)
    ok = inside & up
    return TropoDelay(np.where(ok, z.hydrostatic_m * m_h, 0.0), np.where(ok, z.wet_m * m_w, 0.0))
