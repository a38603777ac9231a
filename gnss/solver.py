"""Single-point positioning: iterative weighted least squares on L1 pseudoranges."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from . import atmosphere, geometry, gpstime, orbit
from .constants import (MIN_WEIGHT_ELEVATION_RAD, SECONDS_PER_WEEK, SOLVER_MAX_ITERATIONS, SOLVER_TOLERANCE_M,
                        SPEED_OF_LIGHT)
# RTKLIB's error model and group-delay rules (the RTKLIB-like options), also this module's names
from .rtklib_model import (RTKLIB_BEIDOU_TGD1_CODES, RTKLIB_CBIAS_SIGMA_M, RTKLIB_CODE_ERROR_M,  # noqa: F401
                           RTKLIB_GALILEO_NAPA_SIGMA_M, RTKLIB_GLONASS_EPHEMERIS_SIGMA_M, RTKLIB_GLONASS_ERROR_FACTOR,
                           RTKLIB_IONO_FRACTION, RTKLIB_SAAS_SIGMA_M, RTKLIB_URA_M, rtklib_code_variance,
                           rtklib_ephemeris_sigma_m, rtklib_group_delay_applies)

PSEUDORANGE_VARIABLES = ("pseudorange", "C1C", "C1", "C1W", "P1")
"""Variables tried, in this order, as the L1 pseudorange of an observation Dataset."""

NEAR_SURFACE_HEIGHT_M = 1e5
"""Atmospheric corrections, the elevation mask and elevation weights are applied only once the
estimate is within this height of the ellipsoid [m] (before, e.g. from the Earth's centre, the
elevations are meaningless)."""




IONO_CORRECTIONS = ("klobuchar", "none")
"""Ionospheric corrections a receiver may apply (``iono_model`` of :func:`solve`)."""
TROPO_CORRECTIONS = ("saastamoinen_niell", "saastamoinen_cosz", "none")
"""Tropospheric corrections a receiver may apply (``tropo_model`` of :func:`solve`):
Saastamoinen zenith delays mapped with Niell's functions, or with 1 / cos z as RTKLIB's
``tropmodel`` (which RTKLIB's ``pntpos`` evaluates at 70 % relative humidity)."""
EPHEMERIS_SELECTIONS = ("nearest", "rtklib")
"""Broadcast record choices of :func:`solve` (``ephemeris_selection``)."""
WEIGHTINGS = ("elevation", "rtklib", "none")
"""Observation weights of :func:`solve` (:func:`observation_weights`)."""

def observation_weights(elevation_rad, weighting="elevation", *, rtklib_error_m=RTKLIB_CODE_ERROR_M):
    """Relative weights of code observations, 1 at the zenith [1].

    Parameters
    ----------
    elevation_rad : array_like
        Elevation [rad] (floored at :data:`MIN_WEIGHT_ELEVATION_RAD`).
    weighting : {"elevation", "rtklib", "none"}
        "elevation": sin^2(el) (sigma proportional to 1 / sin el); "rtklib": the inverse of
        RTKLIB 2.4.3 ``pntpos``'s code variance a^2 + b^2 / sin(el) (``varerr``, src/pntpos.c;
        note sin, not sin^2, in that release; its RTK ``varerr`` of src/rtkpos.c divides by
        sin^2), scaled to 1 at the zenith; "none": 1.
    rtklib_error_m : tuple of float, keyword-only
        (a, b) of the "rtklib" model [m].

    Returns
    -------
    numpy.ndarray
        Weights, the shape of ``elevation_rad``. RTKLIB adds to that variance its ionosphere,
        troposphere and ephemeris model variances; they are not part of this weighting (they are
        of :func:`solve`'s, :func:`rtklib_code_variance`).
    """
    _choice("weighting", weighting, WEIGHTINGS)
    s = np.sin(np.clip(np.asarray(elevation_rad, dtype=float), MIN_WEIGHT_ELEVATION_RAD, None))
    if weighting == "elevation":
        return s ** 2
    if weighting == "rtklib":
        a, b = rtklib_error_m
        return (a ** 2 + b ** 2) / (a ** 2 + b ** 2 / s)
    return np.ones_like(s)




class AtmosphericCorrections(NamedTuple):
    """Delays a receiver removes from its pseudoranges.

    Attributes
    ----------
    iono_m : numpy.ndarray
        Modelled ionospheric group delay on L1 [m] (zeros when not corrected).
    tropo_m : numpy.ndarray
        Modelled slant tropospheric delay, hydrostatic plus wet [m] (zeros when not corrected).
    """

    iono_m: np.ndarray
    tropo_m: np.ndarray


def atmospheric_corrections(latitude_rad, longitude_rad, height_m, azimuth_rad, elevation_rad, gps_sow_s,
                            day_of_year, *, alpha, beta, iono_model="klobuchar",
                            tropo_model="saastamoinen_niell", relative_humidity=0.5) -> AtmosphericCorrections:
    """Ionospheric and tropospheric corrections of a single-frequency receiver.

    Parameters
    ----------
    latitude_rad, longitude_rad : array_like
        Geodetic latitude and longitude of the receiver [rad].
    height_m : array_like
        Ellipsoidal height of the receiver [m].
    azimuth_rad, elevation_rad : array_like
        Look angles of the satellites [rad].
    gps_sow_s : array_like
        GPS seconds of week of the (receiver's) reception time [s] (Klobuchar's local time).
    day_of_year : array_like
        Day of year with fraction [day] (Niell's seasonal term).
    alpha, beta : array_like, shape (4,), keyword-only
        Broadcast Klobuchar coefficients (``nav["ion_alpha"]``, ``nav["ion_beta"]``).
    iono_model : {"klobuchar", "none"}, keyword-only
    tropo_model : {"saastamoinen_niell", "saastamoinen_cosz", "none"}, keyword-only
    relative_humidity : float, keyword-only
        Relative humidity of the standard atmosphere, 0..1 [1].

    All array arguments broadcast together (e.g. receiver quantities ``(n_epoch, 1)`` with
    satellite ones ``(n_epoch, n_sv)``).

    Returns
    -------
    AtmosphericCorrections
        ``iono_m`` and ``tropo_m`` [m], the broadcast shape.

    Notes
    -----
    iono = :func:`gnss.atmosphere.klobuchar_delay` (IS-GPS-200 20.3.3.5.2.5), tropo = dry + wet
    of :func:`gnss.atmosphere.tropo_delay` (Saastamoinen zenith delays in a standard atmosphere,
    Niell mapping).  :func:`solve` subtracts ``iono_m + tropo_m`` at its estimate in each
    iteration; the ``gps_l1`` sensor evaluates them at the true position to split its error
    budget.
    """
    _choice("iono_model", iono_model, IONO_CORRECTIONS)
    _choice("tropo_model", tropo_model, TROPO_CORRECTIONS)
    shape = np.broadcast_shapes(*(np.shape(a) for a in (latitude_rad, longitude_rad, height_m, azimuth_rad,
                                                         elevation_rad, gps_sow_s, day_of_year)))
    if iono_model == "klobuchar":
        iono = np.broadcast_to(atmosphere.klobuchar_delay(latitude_rad, longitude_rad, azimuth_rad, elevation_rad,
                                                          gps_sow_s, alpha, beta), shape)
    else:
        iono = np.zeros(shape)
    if tropo_model in ("saastamoinen_niell", "saastamoinen_cosz"):
        tr = atmosphere.tropo_delay(elevation_rad, latitude_rad, height_m, day_of_year,
                                    relative_humidity=relative_humidity,
                                    mapping="niell" if tropo_model == "saastamoinen_niell" else "cosz")
        tropo = np.broadcast_to(tr.dry_m + tr.wet_m, shape)
    else:
        tropo = np.zeros(shape)
    return AtmosphericCorrections(iono, tropo)


def _choice(key, value, allowed):
    if value not in allowed:
        raise ValueError(f"{key}: got {value!r}; allowed: {', '.join(repr(a) for a in allowed)}")


def position_error_budget(terms_m, used, elevation_rad, azimuth_rad, *, weighting="elevation",
                          clock_index=None):
    """Position error caused by each pseudorange error term alone, through the solver's LSQ.

    Parameters
    ----------
    terms_m : numpy.ndarray, shape (n_term, n_epoch, n_sv)
        Residual range error of each term after the receiver's own corrections [m].
    used : numpy.ndarray of bool, shape (n_epoch, n_sv)
        Satellites the solver used.
    elevation_rad, azimuth_rad : numpy.ndarray, shape (n_epoch, n_sv)
        Look angles at the true position [rad].
    weighting : {"elevation", "rtklib", "none"}, keyword-only
        :func:`observation_weights`: as :func:`solve` for "elevation" and "none"; "rtklib" here
        is the code part of RTKLIB's variance only (:func:`solve` adds the ephemeris,
        ionosphere and troposphere variances of :func:`rtklib_code_variance`).
    clock_index : array_like of int, shape (n_sv,), optional
        Receiver clock of each satellite's system, 0 .. n_clock - 1, as :func:`solve` with
        several ``constellations`` estimates one clock per system; default one clock for all.

    Returns
    -------
    numpy.ndarray, shape (n_term, n_epoch, 3)
        East, north, up position error [m]; NaN at epochs with fewer than 3 + (clocks with a
        used satellite) satellites used, as in :func:`solve`.

    Notes
    -----
    The least-squares solution is linear in the pseudorange residuals near the truth:
    dx = (G^T W G)^-1 G^T W r with rows G = [-e_E, -e_N, -e_U, 1] (unit line of sight e in
    local ENU) and W = diag(sin^2 el).  Each term's dx is what the solver returns when only that
    term is switched on, to first order; the clock column absorbs the part common to all
    satellites, so the receiver clock gives no position error.  With several clocks (one per
    system, ``clock_index``) G has one clock column per system, and what is common to the
    satellites of one system (an inter-system bias, a group delay common to a constellation)
    gives none either; a clock whose system has no used satellite at an epoch is not
    estimated there, as in the solver.  The terms add up to the
    linearised total error.  The real fix differs from that sum by the non-linearity
    (``|dx|^2 / range``, negligible) and because the receiver evaluates its troposphere and
    ionosphere corrections at its estimate, not at the truth (the tropospheric delay falls by
    about 0.3 mm per metre of height at the zenith, more at low elevation): in the urban canyon
    example 9 cm for a 55 m vertical error.  Unlike :func:`solve`, the weights are not floored
    at :data:`MIN_WEIGHT_ELEVATION_RAD`, which matters only for satellites used below 1 deg.
    """
    _choice("weighting", weighting, WEIGHTINGS)
    el = np.where(used, elevation_rad, 0.0)
    az = np.where(used, azimuth_rad, 0.0)
    los = [-np.cos(el) * np.sin(az), -np.cos(el) * np.cos(az), -np.sin(el)]
    if weighting == "elevation":
        w = np.sin(el) ** 2
    elif weighting == "rtklib":
        w = observation_weights(np.where(used, el, np.pi / 2), "rtklib")
    else:
        w = np.ones_like(el)
    w = np.where(used, w, 0.0)
    r = np.where(used[None], np.nan_to_num(terms_m), 0.0)
    if clock_index is None:
        g = np.stack([*los, np.ones_like(el)], axis=-1)
        nmat = np.einsum("ek,eki,ekj->eij", w, g, g)
        ok = used.sum(axis=1) >= 4
        nmat[~ok] = np.eye(4)
    else:
        clock_index = np.asarray(clock_index, dtype=np.int64)
        n_clk = int(clock_index.max()) + 1 if clock_index.size else 1
        onehot = (clock_index[:, None] == np.arange(n_clk)[None, :]).astype(float)     # (sv, clock)
        g = np.concatenate([np.stack(los, axis=-1), np.broadcast_to(onehot, el.shape + (n_clk,))], axis=-1)
        nmat = np.einsum("ek,eki,ekj->eij", w, g, g)
        clk_used = used.astype(float) @ onehot > 0                                      # (epoch, clock)
        ok = (used.sum(axis=1) >= 3 + clk_used.sum(axis=1)) & clk_used.any(axis=1)
        idle = np.concatenate([np.zeros((el.shape[0], 3), dtype=bool), ~clk_used], axis=1)
        nmat = nmat + np.einsum("ei,ij->eij", idle.astype(float), np.eye(3 + n_clk))   # idle clock: 0
        nmat[~ok] = np.eye(3 + n_clk)
    rhs = np.einsum("ek,eki,tek->tei", w, g, r)
    dx = np.linalg.solve(nmat[None], rhs[..., None])[..., 0]
    return np.where(ok[None, :, None], dx[..., :3], np.nan)


def _pick_pseudorange(obs: xr.Dataset, observable):
    if observable is not None:
        if observable not in obs:
            raise ValueError(f"observable: got {observable!r}; allowed: one of the data variables "
                             f"{sorted(str(v) for v in obs.data_vars)}")
        return observable
    for name in PSEUDORANGE_VARIABLES:
        if name in obs:
            return name
    raise ValueError(f"obs has none of the pseudorange variables {PSEUDORANGE_VARIABLES}")


def dops(design_enu_t, used) -> dict[str, np.ndarray]:
    """Dilutions of precision from an unweighted design matrix in local ENU.

    Parameters
    ----------
    design_enu_t : array_like, shape (n_epoch, n_sv, 3 + n_clock)
        Rows [-e_E, -e_N, -e_U, 1] (unit line of sight in ENU, clock column), or with one clock
        column per satellite system (1 in the column of the row's system); TDOP is the first
        clock's.
    used : array_like of bool, shape (n_epoch, n_sv)
        Rows that take part.

    Returns
    -------
    dict
        ``gdop``, ``pdop``, ``hdop``, ``vdop``, ``tdop`` [1]; NaN where fewer than 4 rows.

    Notes
    -----
    Q = (G^T G)^-1, the purely geometric (unweighted) form; GDOP = sqrt(tr Q),
    PDOP = sqrt(Q_EE + Q_NN + Q_UU), HDOP = sqrt(Q_EE + Q_NN), VDOP = sqrt(Q_UU), TDOP = sqrt(Q_tt).
    """
    g = np.where(np.asarray(used)[..., None], np.asarray(design_enu_t, dtype=float), 0.0)
    n = np.einsum("eki,ekj->eij", g, g)
    k = g.shape[-1]
    ok = np.asarray(used).sum(axis=1) >= k
    # a clock column no used row touches (a system without satellites at that epoch) drops out
    empty = np.einsum("eii->ei", n) == 0.0
    n = n + np.einsum("ei,ij->eij", empty.astype(float), np.eye(k))
    ok &= np.asarray(used).sum(axis=1) >= k - empty[:, 3:].sum(axis=1)
    n[~ok] = np.eye(k)
    with np.errstate(invalid="ignore"):
        q = np.linalg.inv(n)
    d = np.diagonal(q, axis1=1, axis2=2)
    out = {
        "gdop": np.sqrt(d.sum(axis=1)),
        "pdop": np.sqrt(d[:, 0] + d[:, 1] + d[:, 2]),
        "hdop": np.sqrt(d[:, 0] + d[:, 1]),
        "vdop": np.sqrt(d[:, 2]),
        "tdop": np.sqrt(d[:, 3]),
    }
    return {k: np.where(ok, v, np.nan) for k, v in out.items()}


#: Single-frequency code observables tried per system, in this order (the concatenated bands of
#: :data:`CODE_PRIORITY` that :func:`solve` uses alone): GPS L1, Galileo E1, BeiDou B1I then
#: B1C, GLONASS G1. Kept for callers that name a system's first choices.
SYSTEM_PSEUDORANGES = {"G": PSEUDORANGE_VARIABLES, "E": ("pseudorange", "C1C", "C1A", "C1B", "C1X", "C1Z"),
                       "C": ("pseudorange", "C2I", "C2Q", "C2X", "C1I", "C1Q", "C1D", "C1P", "C1X"),
                       "R": ("pseudorange", "C1C", "C1P")}
#: Carrier frequency of each system's first band [Hz] (IS-GPS-200 3.3.1.1; Galileo OS SIS ICD 2.2;
#: BDS-SIS-ICD-B1I 3.0, 4.2.1): the Klobuchar delay (computed for L1) scales as (f_L1 / f)^2.
SYSTEM_FREQ_HZ = {"G": 1575.42e6, "E": 1575.42e6, "C": 1561.098e6}


class Band(NamedTuple):
    """The code observations of one frequency band of one system, in the order tried.

    Attributes
    ----------
    codes : tuple of str
        Variable names of the observation Dataset: RINEX 3 ``C<band><attribute>`` (RINEX 3.05,
        section 5.1, Tables 4-10), RINEX 2 names (``C1``, ``P1``, ``P2``) and ``pseudorange`` (a
        simulated receiver's) where they mean this band.
    frequency_hz : float
        Carrier [Hz] (GLONASS FDMA: the channel-0 carrier; the satellite's own is used).
    """

    codes: tuple[str, ...]
    frequency_hz: float


#: Code priority per system and frequency band: per satellite and epoch, :func:`solve` takes the
#: first code of the band that has a value. The attribute orders are RTKLIB 2.4.3's default
#: code priorities (``codepris`` in src/rtkcmn.c: GPS L1 "CPYWMNSL", L2 "PYWCMNDLSX", L5 "IQX";
#: Galileo E1 "CABXZ", E5a and E5b "IQX"; BeiDou B1 "IQXDPAN", B3 "IQXA"; GLONASS G1 "CPABX",
#: G2 "PCABX"), restricted to the attributes RINEX 3.05 defines for the band, with the codeless
#: N (no code pseudorange) dropped and GPS L1C (S, L, X, after RTKLIB's list) appended.
#: BeiDou B1 is two signals on two carriers: B1I (RINEX 3.02+ band 2, I Q X; RINEX 3.01 wrote it
#: C1I, C1Q) first, then B1C (band 1, D P X). A RINEX 3.01 file's C1X (B1I I+Q) is read as B1C.
#: Group delays (which broadcast delay the satellite clock takes off, ``tgd`` of
#: :func:`gnss.read_nav`): GPS L1 C/A and P(Y), TGD (IS-GPS-200 20.3.3.3.3.2; L1C's ISC is
#: broadcast in CNAV-2 only, so L1C takes TGD too, a few decimetres at most); Galileo E1 (B, C,
#: X alike), BGD(E1, E5b) of the I/NAV clock (OS SIS ICD 5.1.5); BeiDou B1I, TGD1 (BDS ICD
#: 5.2.4.10); B1C's TGD_B1Cp is broadcast in B-CNAV1 only, not in the D1/D2 records read here, so
#: B1C takes TGD1 too (B1C and B1I group delays of a satellite differ by a few ns; the common
#: part goes into the BeiDou receiver clock); GLONASS, none (RINEX 3.04 has none).
CODE_PRIORITY = {
    "G": {"L1": Band(("pseudorange", "C1C", "C1", "C1P", "C1Y", "C1W", "P1", "C1M", "C1S", "C1L", "C1X"), 1575.42e6),
          "L2": Band(("C2P", "C2Y", "C2W", "P2", "C2C", "C2M", "C2D", "C2L", "C2S", "C2X", "C2"), 1227.60e6),
          "L5": Band(("C5I", "C5Q", "C5X"), 1176.45e6)},
    "E": {"E1": Band(("pseudorange", "C1C", "C1A", "C1B", "C1X", "C1Z"), 1575.42e6),
          "E5a": Band(("C5I", "C5Q", "C5X"), 1176.45e6),
          "E5b": Band(("C7I", "C7Q", "C7X"), 1207.14e6)},
    "C": {"B1I": Band(("pseudorange", "C2I", "C2Q", "C2X", "C1I", "C1Q"), 1561.098e6),
          "B1C": Band(("C1D", "C1P", "C1X"), 1575.42e6),
          "B3I": Band(("C6I", "C6Q", "C6X"), 1268.52e6)},
    "R": {"G1": Band(("pseudorange", "C1C", "C1P"), 1602.0e6),
          "G2": Band(("C2C", "C2P"), 1246.0e6)},
}
#: Bands :func:`solve` takes one code from, per system, single frequency: the first band that
#: has a code at that satellite and epoch (BeiDou: B1I, else B1C).
SINGLE_FREQUENCY_BANDS = {"G": ("L1",), "E": ("E1",), "C": ("B1I", "B1C"), "R": ("G1",)}
#: Dual-frequency pairs of the ionosphere-free combination per system: the two bands, and the
#: second band's frequency [Hz]. GPS L1/L2 P(Y) (the broadcast clock refers to it, IS-GPS-200
#: 20.3.3.3.3.3; on L1 the P(Y) codes W, P, Y are tried first, then C/A standing in for them),
#: Galileo E1/E5b (the I/NAV clock, OS SIS ICD 5.1.5), BeiDou B1I/B3I (the clock refers to B3I,
#: TGD1 is B1I's group delay: BDS ICD 5.2.4.10).
IONO_FREE_PAIRS = {"G": ((("C1W", "C1P", "C1Y", "P1", "C1C", "C1"), CODE_PRIORITY["G"]["L2"].codes), 1227.60e6),
                   "E": ((CODE_PRIORITY["E"]["E1"].codes[1:], CODE_PRIORITY["E"]["E5b"].codes), 1207.14e6),
                   "C": ((CODE_PRIORITY["C"]["B1I"].codes[1:], CODE_PRIORITY["C"]["B3I"].codes), 1268.52e6),
                   "R": ((CODE_PRIORITY["R"]["G1"].codes[1:], CODE_PRIORITY["R"]["G2"].codes), None)}
#: Probability of a false alarm of the RAIM chi-square test (:func:`solve`, ``raim``): RTKLIB's
#: ``valsol`` tests at 0.001 (its ``chisqr`` table, alpha = 0.001).
RAIM_FALSE_ALARM_PROBABILITY = 1e-3
#: Standard deviation of a zenith code pseudorange assumed by the RAIM test [m]: the observation
#: at elevation e has sigma / sin(e) (the weighting of :func:`solve`). 3 m covers the broadcast
#: Klobuchar residual (~50 % of the ionospheric delay), the broadcast orbit and clock (~1 m) and
#: code noise and multipath of a single-frequency receiver; the clean station files of
#: tests/data/gnss pass the test at this value (tests/gnss/test_raim.py).
RAIM_CODE_SIGMA_M = 3.0
#: RAIM status values of :func:`solve`'s ``raim_status``.
RAIM_STATUS = {0: "test passed", 1: "test passed after excluding satellites",
               2: "test failed with no redundancy left to exclude (fix withheld when raim is on)",
               3: "not testable (no redundant satellite) or no fix"}
#: GLONASS FDMA carriers [Hz] (GLONASS ICD, ed. 5.1, 3.3.1.4): f = base + k step with the
#: satellite's frequency number k (``glo_frequency_channel`` of the navigation records).
GLONASS_L1_HZ = (1602.0e6, 0.5625e6)
GLONASS_L2_HZ = (1246.0e6, 0.4375e6)
SOLVER_SYSTEMS = ("G", "E", "C", "R")


def glonass_channels(nav: xr.Dataset, sv_names) -> np.ndarray:
    """Frequency number k of each GLONASS satellite in ``sv_names`` from its navigation records
    (NaN where the file has none, or for another system)."""
    if "glo_frequency_channel" not in nav:
        return np.full(len(sv_names), np.nan)
    k = nav["glo_frequency_channel"].values
    ok = np.isfinite(k)
    # a satellite's first record (the dict keeps the last value given: reversed order)
    channel = dict(zip(np.asarray(nav["sv"].values).astype(str)[ok][::-1], k[ok][::-1]))
    return np.array([channel.get(str(name), np.nan) for name in sv_names], dtype=float)


def code_frequency_hz(nav: xr.Dataset, sv_names) -> np.ndarray:
    """Carrier frequency [Hz] of the single-frequency code :func:`solve` uses for each satellite
    in ``sv_names``: :data:`SYSTEM_FREQ_HZ` of its system, for GLONASS its own FDMA L1 carrier
    (:data:`GLONASS_L1_HZ`, channel from ``nav``; channel 0 where the file has none). NaN for a
    system :func:`solve` does not use. The Klobuchar (L1) delay scales to it as (f_L1 / f)^2."""
    names = np.asarray(sv_names).astype(str)
    f = np.array([SYSTEM_FREQ_HZ.get(x[:1], np.nan) for x in names], dtype=float)
    glo = np.char.startswith(names, "R") if names.size else np.zeros(0, dtype=bool)
    if np.any(glo):
        f[glo] = GLONASS_L1_HZ[0] + np.nan_to_num(glonass_channels(nav, names[glo])) * GLONASS_L1_HZ[1]
    return f


def first_record_tgd_s(nav: xr.Dataset, sat) -> np.ndarray:
    """Group delay (``tgd`` of :func:`gnss.read_nav`) of each satellite's first record [s].

    RTKLIB 2.4.3's ``gettgd`` (src/pntpos.c) takes the TGD/BGD of the first record of the
    satellite in its sorted navigation data, not of the record it computes the orbit from; the
    group delays of consecutive records differ by up to a few tenths of a nanosecond. NaN
    where ``nav`` has no record of the satellite.

    Parameters
    ----------
    nav : xarray.Dataset
        Output of :func:`gnss.read_nav`.
    sat : array_like of int
        Satellite keys (``nav["sat"]``; the PRN for GPS).

    Returns
    -------
    numpy.ndarray
        Group delay [s], the shape of ``sat``.
    """
    keys = orbit._sat_keys(nav)
    toe = nav["toe_week"].values.astype(float) * SECONDS_PER_WEEK + nav["toe_sow"].values
    order = np.lexsort((toe, keys))
    first = {}
    for k in order[::-1]:
        first[int(keys[k])] = float(nav["tgd"].values[k])
    return np.array([first.get(int(x), np.nan) for x in np.asarray(sat).ravel()], dtype=float).reshape(np.shape(sat))




def _first_present(obs, names, system):
    for name in names:
        if name in obs:
            return name
    raise ValueError(f"obs has none of {list(names)} for system {system!r}; allowed: a Dataset holding one "
                     f"of them (or choose constellations without {system!r})")


def select_codes(obs: xr.Dataset, cols, candidates):
    """Per epoch and satellite, the first code of ``candidates`` that has a value.

    Parameters
    ----------
    obs : xarray.Dataset
        (epoch, sv) code observations [m].
    cols : array_like of int
        Satellites (indices along ``sv``) to fill.
    candidates : sequence of (str, float)
        Variable name and carrier frequency [Hz], in priority order; names absent from ``obs``
        are skipped.

    Returns
    -------
    values : numpy.ndarray, shape (n_epoch, len(cols))
        Code pseudorange [m], NaN where no candidate has a value.
    index : numpy.ndarray of int, shape (n_epoch, len(cols))
        Index into ``candidates`` of the code taken, -1 where none.
    """
    cols = np.asarray(cols, dtype=np.int64)
    n_epoch = obs.sizes["epoch"]
    values = np.full((n_epoch, cols.size), np.nan)
    index = np.full((n_epoch, cols.size), -1, dtype=np.int64)
    for k, (name, _) in enumerate(candidates):
        if name not in obs:
            continue
        v = np.asarray(obs[name].values, dtype=float)[:, cols]
        take = ~np.isfinite(values) & np.isfinite(v)
        values[take] = v[take]
        index[take] = k
    return values, index


def _band_candidates(system, bands):
    return [(code, CODE_PRIORITY[system][b].frequency_hz) for b in bands for code in CODE_PRIORITY[system][b].codes]


def _code_summary(names, index, present):
    """The codes used (in priority order, '/'-joined), else the first present candidate."""
    used = sorted(set(int(k) for k in np.unique(index) if k >= 0))
    if used:
        return "/".join(names[k] for k in used)
    return present


def solve(obs: xr.Dataset, nav: xr.Dataset, *, elevation_mask_deg=10.0, iono_model="klobuchar",
          tropo_model="saastamoinen_niell", weighting="elevation", relative_humidity=0.5,
          initial_position_ecef=None, observable=None, true_position_ecef=None,
          constellations=("G",), iono_free=False, raim=True, raim_false_alarm_probability=RAIM_FALSE_ALARM_PROBABILITY,
          raim_code_sigma_m=RAIM_CODE_SIGMA_M, ephemeris_selection="nearest", max_gdop=None) -> xr.Dataset:
    """Single-point position and receiver clocks per epoch from code pseudoranges.

    Parameters
    ----------
    obs : xarray.Dataset
        (epoch, sv) pseudoranges: a :func:`gnss.read_obs` Dataset (any RINEX 2 or 3 code
        observations: per satellite and epoch the first code of :data:`CODE_PRIORITY` that has a
        value) or a simulated receiver Dataset (``pseudorange``).  Only the satellites of
        ``constellations`` are used.  Epochs are the receiver's time tags (GPST); a ``time_tag``
        coordinate, when present, is used instead as the time tag (simulated Datasets keep the
        true time in ``epoch``).
    nav : xarray.Dataset
        Broadcast ephemerides and Klobuchar coefficients.
    elevation_mask_deg : float, keyword-only
        Satellites below this elevation are not used [deg].
    iono_model : {"klobuchar", "none"}, keyword-only
        Ionospheric correction.
    tropo_model : {"saastamoinen_niell", "saastamoinen_cosz", "none"}, keyword-only
        Tropospheric correction (standard atmosphere with ``relative_humidity``), mapped with
        Niell's functions or, as RTKLIB, with 1 / cos z (:data:`TROPO_CORRECTIONS`).
    weighting : {"elevation", "rtklib", "none"}, keyword-only
        "elevation": weights sin^2(elevation) (sigma proportional to 1 / sin e); "rtklib":
        1 / sigma^2 of RTKLIB 2.4.3 ``pntpos``'s whole error model (:func:`rtklib_code_variance`:
        code, ephemeris accuracy of the record, code bias, ionosphere, troposphere) [1/m^2].
    initial_position_ecef : array_like, shape (3,), optional, keyword-only
        Start of the iteration [m]; the header ``approx_position_ecef`` if present, else the
        Earth's centre.
    observable : str, optional, keyword-only
        Name of one pseudorange variable used for every system (no per-satellite choice); by
        default the code priority of :data:`CODE_PRIORITY` per satellite and epoch.
    true_position_ecef : array_like, shape (3,) or (n_epoch, 3), optional, keyword-only
        Known true position, copied to the output (a simulated Dataset's ``true_position_ecef``
        is used when this is omitted).
    constellations : sequence of {"G", "E", "C", "R"}, keyword-only
        Systems used (default GPS only); each gets its own receiver clock (the inter-system
        offsets, time scales and receiver group delays, are estimated, not assumed). ``nav``
        must hold their ephemerides (``gnss.read_nav(path)`` reads every system of the file). GLONASS uses
        its G1 (or G1+G2 ionosphere-free) codes at each satellite's FDMA frequency;
        one clock for all its frequencies (inter-frequency biases are not estimated).
    iono_free : bool, keyword-only
        Use the dual-frequency ionosphere-free combination of :data:`IONO_FREE_PAIRS` instead
        of one signal and a model: ``(f1^2 P1 - f2^2 P2) / (f1^2 - f2^2)``, no ionospheric
        correction, the satellite clock referred to that pair.
    raim : bool, keyword-only
        Receiver autonomous integrity monitoring (Notes): exclude the worst satellite while the
        chi-square test of the residuals fails and redundancy remains, withhold the fix (NaN)
        when it still fails. Off: the statistic is reported, nothing is excluded or withheld.
    raim_false_alarm_probability : float, keyword-only
        Probability of a false alarm of the test, 0..1 [1].
    raim_code_sigma_m : float, keyword-only
        Zenith code sigma the test assumes [m] (:data:`RAIM_CODE_SIGMA_M`). Not used with
        ``weighting="rtklib"``, whose weights are RTKLIB's own inverse variances [1/m^2].
    ephemeris_selection : {"nearest", "rtklib"}, keyword-only
        "nearest": per satellite the healthy record whose toe is nearest the reception time tag
        (:func:`gnss.orbit.select_ephemeris`), its own group delay; "rtklib": as RTKLIB 2.4.3
        (``satposs`` and ``seleph`` in src/ephemeris.c, ``gettgd`` and ``prange`` in
        src/pntpos.c): :func:`gnss.orbit.select_ephemeris` with ``rule="rtklib"`` (RTKLIB's
        ages, the later record on a tie, Galileo only records whose toe is before the time
        tag), the group delay (TGD, BGD) of the satellite's first record in ``nav``, and none
        for BeiDou codes other than B1I's C2I (:func:`rtklib_group_delay_applies`).
    max_gdop : float, optional, keyword-only
        Withhold the fix (NaN, ``gdop_withheld``) where the GDOP of the satellites used, with
        one receiver clock for all systems, exceeds this [1]: RTKLIB's ``maxgdop`` test in
        ``valsol`` (30 in its ``prcopt_default``). None (default): no limit.

    Returns
    -------
    xarray.Dataset
        Per epoch: ``position_ecef`` (epoch, xyz) [m], ``clock_bias`` [m], ``gdop``, ``pdop``,
        ``hdop``, ``vdop``, ``tdop``, ``n_sv_used``, ``converged``, ``raim_statistic``,
        ``raim_threshold``, ``raim_status`` (:data:`RAIM_STATUS`); per (epoch, sv):
        ``residual`` [m], ``used``, ``raim_excluded`` and ``code_used`` (the observation code used,
        ``"C1X"``, ``"C1W+C2W"`` ionosphere-free; ``""`` none); ``true_position_ecef`` and
        ``position_error_enu`` when the truth is known.  Epochs with fewer than 4 usable
        satellites are NaN, never an exception. The attribute ``observable`` names the codes
        used per system.

    Notes
    -----
    Transmission time: t_tx = t_rx - P / c - dt_sv(t_rx - P / c), which is independent of the
    receiver clock offset (RTKLIB ``satposs`` convention); satellite clock with relativity and
    minus the group delay of the code used (:data:`CODE_PRIORITY`).  Each iteration rotates the
    transmit-time satellite positions by OmegaE * rho / c (Sagnac), forms
    v = P - (rho + b - c dt_sv + I + T) and solves the weighted normal equations
    (G^T W G) dx = G^T W v for all epochs at once (batched solves; epochs are independent).
    DOPs are the unweighted geometric ones (:func:`dops`) at the final position, in local ENU.

    RAIM (Brown, "A baseline GPS RAIM scheme and a note on the equivalence of three RAIM
    methods", Navigation 39(3), 1992; Kaplan & Hegarty, "Understanding GPS/GNSS", 3rd ed., 2017,
    sec. 11.6; RTKLIB ``valsol`` and ``raim_fde`` in src/pntpos.c): with the post-fit residuals r
    and variances sigma_i^2 = ``raim_code_sigma_m``^2 / w_i (w the weights above), the statistic
    T = sum r_i^2 / sigma_i^2 is chi-square with n - p degrees of freedom (p = 3 + the clocks
    estimated) when the errors are Gaussian with those sigmas; the test fails when T exceeds the
    1 - ``raim_false_alarm_probability`` quantile. While it fails and n - p >= 2, the satellite
    of largest normalised residual ``|r_i| / (sigma_i sqrt(1 - h_ii))`` (h the hat matrix
    W^1/2 G (G^T W G)^-1 G^T W^1/2; Baarda's w-test) is excluded and the epoch solved again;
    when it fails with n - p = 1 the fix is withheld (NaN, ``raim_status`` 2). RTKLIB instead
    tries every subset of n - 1 satellites and keeps the one of smallest residuals, and its
    sigmas come from its error model (ionosphere, troposphere, ephemeris, code).
    """
    from scipy.stats import chi2

    _choice("iono_model", iono_model, IONO_CORRECTIONS)
    _choice("tropo_model", tropo_model, TROPO_CORRECTIONS)
    _choice("weighting", weighting, WEIGHTINGS)
    _choice("ephemeris_selection", ephemeris_selection, EPHEMERIS_SELECTIONS)
    if not 0.0 < float(raim_false_alarm_probability) < 1.0:
        raise ValueError(f"raim_false_alarm_probability: got {raim_false_alarm_probability!r}; allowed: 0 < p < 1")
    if max_gdop is not None and not float(max_gdop) > 0.0:
        raise ValueError(f"max_gdop: got {max_gdop!r}; allowed: None or > 0")
    if not float(raim_code_sigma_m) > 0.0:
        raise ValueError(f"raim_code_sigma_m: got {raim_code_sigma_m!r}; allowed: > 0 [m]")
    systems = tuple(constellations)
    if not systems or any(x not in SOLVER_SYSTEMS for x in systems) or len(set(systems)) != len(systems):
        raise ValueError(f"constellations: got {list(systems)!r}; allowed: distinct letters of {list(SOLVER_SYSTEMS)}")
    sv_all = np.asarray(obs["sv"].values).astype(str)
    keep = np.isin(np.array([x[:1] for x in sv_all]), systems)
    obs_g = obs.isel(sv=np.flatnonzero(keep))
    sv_names = np.asarray(obs_g["sv"].values).astype(str)
    sv_sys = np.array([x[:1] for x in sv_names])
    prn = orbit._prn_array(sv_names) if sv_names.size else np.zeros(0, dtype=np.int64)
    n_epoch0 = obs_g.sizes["epoch"]
    p = np.full((n_epoch0, sv_names.size), np.nan)
    iono_scale = np.ones((n_epoch0, sv_names.size))   # Klobuchar (L1) -> the code's frequency
    tgd_factor = np.ones(sv_names.size)                # multiple of the broadcast tgd the clock takes off
    code_used = np.full((n_epoch0, sv_names.size), "", dtype=object)
    channel = np.nan_to_num(glonass_channels(nav, sv_names))   # no GLONASS record: channel 0, unused anyway
    used_names = {}
    for x in systems:
        cols = np.flatnonzero(sv_sys == x)
        if iono_free:
            (first, second), f2 = IONO_FREE_PAIRS[x]
            for names_ in (first, second):
                _first_present(obs_g, names_, x)     # neither band in the Dataset: a bad parameter
            p1, k1 = select_codes(obs_g, cols, [(c, 0.0) for c in first])
            p2, k2 = select_codes(obs_g, cols, [(c, 0.0) for c in second])
            f1 = code_frequency_hz(nav, sv_names[cols])[None, :]
            if x == "R":
                f2 = GLONASS_L2_HZ[0] + channel[cols] * GLONASS_L2_HZ[1]
            p[:, cols] = (f1 ** 2 * p1 - f2 ** 2 * p2) / (f1 ** 2 - f2 ** 2)
            iono_scale[:, cols] = 0.0
            # GPS and Galileo: the broadcast clock refers to this very pair; BeiDou: to B3I, so the
            # B1I/B3I combination takes gamma TGD1 off, gamma = f1^2 / (f1^2 - f3^2); GLONASS
            # broadcasts no group delay in RINEX 3.04 (tgd 0)
            tgd_factor[cols] = (f1 ** 2 / (f1 ** 2 - f2 ** 2))[0] if x == "C" else 0.0
            both = (k1 >= 0) & (k2 >= 0)
            names1, names2 = np.array(first, dtype=object), np.array(second, dtype=object)
            pair = np.where(both, names1[np.maximum(k1, 0)] + "+" + names2[np.maximum(k2, 0)], "")
            code_used[:, cols] = pair
            distinct = [s for s in dict.fromkeys(pair[both].ravel())]
            used_names[x] = "/".join(f"IF({s.replace('+', ',')})" for s in distinct) or \
                f"IF({_first_present(obs_g, first, x)},{_first_present(obs_g, second, x)})"
        elif observable is not None:
            n1 = _pick_pseudorange(obs_g, observable)
            p[:, cols] = np.asarray(obs_g[n1].values, dtype=float)[:, cols]
            iono_scale[:, cols] = (SYSTEM_FREQ_HZ["G"] / code_frequency_hz(nav, sv_names[cols])) ** 2
            code_used[:, cols] = np.where(np.isfinite(p[:, cols]), n1, "")
            used_names[x] = n1
        else:
            cand = _band_candidates(x, SINGLE_FREQUENCY_BANDS[x])
            names = [c for c, _ in cand]
            present = _first_present(obs_g, names, x)
            values, k = select_codes(obs_g, cols, cand)
            f = np.array([fr for _, fr in cand])[np.maximum(k, 0)]
            if x == "R":                                # FDMA: the satellite's own G1 carrier
                f = np.broadcast_to(GLONASS_L1_HZ[0] + channel[cols] * GLONASS_L1_HZ[1], f.shape)
            p[:, cols] = values
            iono_scale[:, cols] = (SYSTEM_FREQ_HZ["G"] / f) ** 2
            code_used[:, cols] = np.where(k >= 0, np.array(names, dtype=object)[np.maximum(k, 0)], "")
            used_names[x] = _code_summary(names, k, present)
    name = used_names[systems[0]] if len(systems) == 1 else ", ".join(f"{k}: {v}" for k, v in used_names.items())
    t = np.asarray(obs_g["epoch"].values, dtype="datetime64[ns]")
    # a simulated Dataset carries the receiver's own time tags beside the true epochs
    t_tag = np.asarray(obs_g["time_tag"].values, dtype="datetime64[ns]") if "time_tag" in obs_g.coords else t
    n_epoch, n_sv = p.shape
    c = SPEED_OF_LIGHT
    alpha, beta = nav["ion_alpha"].values, nav["ion_beta"].values
    if iono_model == "klobuchar" and not iono_free and not (np.all(np.isfinite(alpha)) and np.all(np.isfinite(beta))):
        raise ValueError(f"iono_model: got 'klobuchar' but nav {nav.attrs.get('source_file')!r} has no "
                         "Klobuchar coefficients; allowed for this file: 'none'")

    # satellite states at transmission (independent of the receiver estimate)
    gt = gpstime.from_datetime64(t_tag)
    t_rx = gpstime.GpsTime(np.broadcast_to(gt.week[:, None], p.shape), np.broadcast_to(gt.sow[:, None], p.shape))
    p_safe = np.where(np.isfinite(p), p, 0.0)
    t_sv = gpstime.add_seconds(t_rx, -p_safe / c)
    # RTKLIB's satposs also selects the record at the reception time tag (its teph)
    record = orbit.select_ephemeris(nav, np.broadcast_to(prn[None, :], p.shape), t_rx,
                                    rule="nearest" if ephemeris_selection == "nearest" else "rtklib")
    first = orbit.sv_state_at(nav, prn[None, :], t_sv, record=record)
    t_tx = gpstime.add_seconds(t_sv, -np.where(np.isfinite(first.clock_bias_s), first.clock_bias_s, 0.0))
    st = orbit.sv_state_at(nav, prn[None, :], t_tx, record=record)
    if ephemeris_selection == "nearest":
        tgd_s = st.tgd_s
        tgd_scale = np.broadcast_to(tgd_factor[None, :], p.shape)
    else:
        tgd_s = first_record_tgd_s(nav, prn)[None, :]
        tgd_scale = tgd_factor[None, :] * rtklib_group_delay_applies(sv_sys[None, :], code_used, iono_free)
    sv_clock_m = c * (st.clock_bias_s - tgd_scale * tgd_s)
    valid = np.isfinite(p) & (record >= 0) & np.all(np.isfinite(st.position_ecef), axis=-1)

    if initial_position_ecef is not None:
        x0 = np.asarray(initial_position_ecef, dtype=float)
    elif "approx_position_ecef" in obs and np.linalg.norm(obs["approx_position_ecef"].values) > 0:
        x0 = np.asarray(obs["approx_position_ecef"].values, dtype=float)
    else:
        x0 = np.zeros(3)
    if weighting == "rtklib":
        eph_sigma = rtklib_ephemeris_sigma_m(nav["sv_accuracy"].values[np.maximum(record, 0)], sv_sys[None, :])
    n_clk = len(systems)
    onehot = (sv_sys[:, None] == np.array(systems)[None, :]).astype(float)      # (sv, system)
    doy = geometry.day_of_year(t)
    mask_rad = np.radians(elevation_mask_deg)

    def least_squares(x, bs, excluded):
        """Iterate the epochs' weighted least squares from (x, bs) without the ``excluded``."""
        converged = np.zeros(n_epoch, dtype=bool)
        for _ in range(SOLVER_MAX_ITERATIONS):
            sv_pos = np.where(valid[..., None], st.position_ecef, 0.0)
            rho0 = np.linalg.norm(sv_pos - x[:, None, :], axis=-1)
            sv_rot = orbit.rotate_to_reception_frame(sv_pos, rho0 / c)
            d = sv_rot - x[:, None, :]
            rho = np.linalg.norm(d, axis=-1)
            los = d / np.where(rho > 0, rho, 1.0)[..., None]
            geo = geometry.ecef_to_geodetic(x)
            near = np.abs(geo.height_m) < NEAR_SURFACE_HEIGHT_M
            geo_b = geometry.Geodetic(*(g[:, None] for g in geo))
            look = geometry.look_angles(x[:, None, :], sv_rot, geo_b)
            el = look.elevation_rad
            ac = atmospheric_corrections(geo_b.latitude_rad, geo_b.longitude_rad, geo_b.height_m, look.azimuth_rad, el,
                                         gt.sow[:, None], doy[:, None], alpha=alpha, beta=beta, iono_model=iono_model,
                                         tropo_model=tropo_model, relative_humidity=relative_humidity)
            corr = ac.iono_m * iono_scale + ac.tropo_m
            corr = np.where(near[:, None] & np.isfinite(corr), corr, 0.0)
            used = valid & (~near[:, None] | (el >= mask_rad)) & ~excluded
            if weighting == "rtklib":
                # RTKLIB scales the L1 Klobuchar variance by (f_L1 / f)^2, the delay's own factor
                var = rtklib_code_variance(el, sv_sys[None, :],
                                           iono_m=np.where(near[:, None], ac.iono_m * np.sqrt(iono_scale), 0.0),
                                           ephemeris_sigma_m=eph_sigma)
                w = np.where(near[:, None], 1.0 / var, 1.0)
            else:
                w = np.where(near[:, None], observation_weights(el, weighting), 1.0)
            w = np.where(used, w, 0.0)
            v = np.where(used, p_safe - (rho + bs @ onehot.T - sv_clock_m + corr), 0.0)
            g = np.concatenate([-los, np.broadcast_to(onehot, (n_epoch, n_sv, n_clk))], axis=-1)
            g = np.where(used[..., None], g, 0.0)
            n_used = used.sum(axis=1)
            sys_used = used.astype(float) @ onehot > 0                                  # (epoch, system)
            ok = n_used >= 3 + sys_used.sum(axis=1)
            ok &= sys_used.any(axis=1)
            nmat = np.einsum("ek,eki,ekj->eij", w, g, g)
            rhs = np.einsum("ek,eki,ek->ei", w, g, v)
            # a system without a used satellite at an epoch: its clock is not estimated there
            idle = np.concatenate([np.zeros((n_epoch, 3), bool), ~sys_used], axis=1)
            nmat = nmat + np.einsum("ei,ij->eij", idle.astype(float), np.eye(3 + n_clk))
            nmat[~ok] = np.eye(3 + n_clk)
            rhs[~ok] = 0.0
            dx = np.linalg.solve(nmat, rhs[..., None])[..., 0]
            x = x + dx[:, :3]
            bs = bs + dx[:, 3:]
            converged = ok & (np.linalg.norm(dx, axis=1) < SOLVER_TOLERANCE_M) & near
            if np.all(converged | ~ok):
                break
        residual = np.where(used, v - np.einsum("eki,ei->ek", g, dx), 0.0)
        # hat-matrix diagonal h_ii = w_i g_i^T N^-1 g_i (redundancy number 1 - h_ii)
        h = w * np.einsum("eki,eij,ekj->ek", g, np.linalg.inv(nmat), g)
        n_par = 3 + sys_used.sum(axis=1)
        return dict(x=x, bs=bs, used=used, los=los, residual=residual, w=w, h=h, ok=ok, converged=converged,
                    sys_used=sys_used, dof=n_used - n_par)

    excluded = np.zeros((n_epoch, n_sv), dtype=bool)
    s = least_squares(np.broadcast_to(x0, (n_epoch, 3)).copy(), np.zeros((n_epoch, n_clk)), excluded)
    # "rtklib" weights are 1 / sigma^2 of RTKLIB's own error model [1/m^2]: its chi-square test
    # (valsol) divides by those sigmas, not by raim_code_sigma_m
    sigma2 = 1.0 if weighting == "rtklib" else float(raim_code_sigma_m) ** 2
    for _ in range(n_sv + 1):
        stat = np.sum(s["w"] * s["residual"] ** 2, axis=1) / sigma2
        testable = s["ok"] & (s["dof"] >= 1)
        threshold = np.where(testable, chi2.ppf(1.0 - raim_false_alarm_probability, np.maximum(s["dof"], 1)), np.nan)
        fail = testable & (stat > threshold)
        exclude_now = fail & (s["dof"] >= 2) if raim else np.zeros(n_epoch, dtype=bool)
        if not exclude_now.any():
            break
        red = 1.0 - s["h"]
        z = np.where(s["used"] & (red > 1e-9), np.abs(s["residual"]) * np.sqrt(s["w"] / np.where(red > 1e-9, red, 1.0)),
                     -1.0)
        worst = np.argmax(z, axis=1)
        excluded[np.flatnonzero(exclude_now), worst[exclude_now]] = True
        start = np.where(np.isfinite(s["x"]) & s["ok"][:, None], s["x"], x0)
        s = least_squares(start, np.where(np.isfinite(s["bs"]), s["bs"], 0.0), excluded)
    x, bs, used, los, ok = s["x"], s["bs"], s["used"], s["los"], s["ok"]
    n_excl = excluded.sum(axis=1)
    status = np.where(~testable, 3, np.where(fail, 2, np.where(n_excl > 0, 1, 0))).astype(np.int8)
    withheld = fail & bool(raim)
    # final geometry and residuals
    geo = geometry.ecef_to_geodetic(x)
    rot = geometry.enu_rotation(geo.latitude_rad, geo.longitude_rad)
    design_enu = np.concatenate([np.einsum("eij,ekj->eki", rot, -los), np.broadcast_to(onehot, (n_epoch, n_sv, n_clk))],
                                axis=-1)
    dop = dops(design_enu, used)
    gdop_withheld = np.zeros(n_epoch, dtype=bool)
    if max_gdop is not None:
        # RTKLIB's valsol: the GDOP of one clock for all systems, over the satellites used
        single_clock = np.concatenate([design_enu[..., :3], np.ones((n_epoch, n_sv, 1))], axis=-1)
        gdop_withheld = ok & ~withheld & ~(dops(single_clock, used)["gdop"] <= float(max_gdop))
        withheld = withheld | gdop_withheld
    n_used = used.sum(axis=1)
    sys_used = s["sys_used"]
    x[~ok | withheld] = np.nan
    bs = np.where(ok[:, None] & ~withheld[:, None] & sys_used, bs, np.nan)
    b = bs[:, 0]
    residual = np.where(used, s["residual"], np.nan)

    out = xr.Dataset(
        {
            "position_ecef": (("epoch", "xyz"), x, {"units": "m", "long_name": "estimated receiver position, WGS 84 ECEF"}),
            "clock_bias": ("epoch", b, {"units": "m", "long_name": "estimated receiver clock offset times c "
                                                                 "(the first constellation's)"}),
            "clock_bias_system": (("epoch", "system"), bs, {"units": "m", "long_name": "receiver clock offset times "
                                                            "c against each system's signals (NaN: none used)"}),
            "n_sv_used": ("epoch", n_used.astype(np.int32), {"units": "1", "long_name": "satellites used"}),
            "converged": ("epoch", s["converged"], {"units": "1", "long_name": "least-squares iteration converged"}),
            "residual": (("epoch", "sv"), residual, {"units": "m", "long_name": "post-fit pseudorange residual"}),
            "used": (("epoch", "sv"), used, {"units": "1", "long_name": "satellite used in the solution"}),
            "code_used": (("epoch", "sv"), code_used.astype(str),
                     {"units": "1", "long_name": "observation code used (RINEX; '+': ionosphere-free pair; '': none)"}),
            "raim_statistic": ("epoch", np.where(testable, stat, np.nan),
                               {"units": "1", "long_name": "RAIM chi-square statistic of the weighted post-fit "
                                                           "residuals (after exclusions)"}),
            "raim_threshold": ("epoch", threshold, {"units": "1", "long_name": "RAIM chi-square threshold at the "
                                                                                 "false-alarm probability"}),
            "raim_status": ("epoch", status, {"units": "1", "long_name": "RAIM: " + "; ".join(
                f"{k} {v}" for k, v in RAIM_STATUS.items())}),
            "raim_excluded": (("epoch", "sv"), excluded, {"units": "1", "long_name": "satellite excluded by RAIM"}),
            "gdop_withheld": ("epoch", gdop_withheld, {"units": "1", "long_name": "fix withheld: single-clock GDOP "
                                                                                 "above max_gdop"}),
        },
        coords={"epoch": ("epoch", t, {"long_name": "receiver time tag (GPST)"}),
                "sv": ("sv", obs_g["sv"].values, {"long_name": "satellite identifier"}),
                "xyz": ("xyz", np.array(["x", "y", "z"]), {"long_name": "ECEF axis"}),
                "system": ("system", np.array(systems), {"long_name": "satellite system of each receiver clock"})},
        attrs={"observable": name, "iono_free": int(bool(iono_free)), "elevation_mask_deg": float(elevation_mask_deg), "iono_model": iono_model,
               "tropo_model": tropo_model, "weighting": weighting,
               "ephemeris_selection": ephemeris_selection,
               "dop_definition": "unweighted (G^T G)^-1 in local ENU", "raim": int(bool(raim)),
               "raim_false_alarm_probability": float(raim_false_alarm_probability),
               "raim_code_sigma_m": float(raim_code_sigma_m)},
    )
    for k, long_name in (("gdop", "geometric"), ("pdop", "position"), ("hdop", "horizontal"),
                         ("vdop", "vertical"), ("tdop", "time")):
        out[k] = ("epoch", dop[k], {"units": "1", "long_name": f"{long_name} dilution of precision"})
    truth = true_position_ecef
    if truth is None and "true_position_ecef" in obs:
        truth = obs["true_position_ecef"].values
    if truth is not None:
        truth = np.broadcast_to(np.asarray(truth, dtype=float), (n_epoch, 3))
        out["true_position_ecef"] = (("epoch", "xyz"), truth.copy(), {"units": "m", "long_name": "true receiver position, ECEF"})
        tg = geometry.ecef_to_geodetic(truth)
        err = np.einsum("eij,ej->ei", geometry.enu_rotation(tg.latitude_rad, tg.longitude_rad), x - truth)
        out["position_error_enu"] = (("epoch", "enu"), err, {"units": "m", "long_name": "position error, local ENU at the truth"})
        out = out.assign_coords(enu=("enu", np.array(["e", "n", "u"]), {"long_name": "local axis"}))
    return out
