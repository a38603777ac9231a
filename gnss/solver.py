"""Single-point positioning: iterative weighted least squares on L1 pseudoranges."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from . import atmosphere, geometry, gpstime, orbit
from .constants import SOLVER_MAX_ITERATIONS, SOLVER_TOLERANCE_M, SPEED_OF_LIGHT

PSEUDORANGE_VARIABLES = ("pseudorange", "C1C", "C1", "C1W", "P1")
"""Variables tried, in this order, as the L1 pseudorange of an observation Dataset."""

NEAR_SURFACE_HEIGHT_M = 1e5
"""Atmospheric corrections, the elevation mask and elevation weights are applied only once the
estimate is within this height of the ellipsoid [m] (before, e.g. from the Earth's centre, the
elevations are meaningless)."""


MIN_WEIGHT_ELEVATION_RAD = np.radians(1.0)
"""Elevations below this are weighted as this [rad] (only matters with a mask below 1 deg)."""


IONO_CORRECTIONS = ("klobuchar", "none")
"""Ionospheric corrections a receiver may apply (``iono_model`` of :func:`solve`)."""
TROPO_CORRECTIONS = ("saastamoinen_niell", "none")
"""Tropospheric corrections a receiver may apply (``tropo_model`` of :func:`solve`)."""


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
    tropo_model : {"saastamoinen_niell", "none"}, keyword-only
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
    if tropo_model == "saastamoinen_niell":
        tr = atmosphere.tropo_delay(elevation_rad, latitude_rad, height_m, day_of_year,
                                    relative_humidity=relative_humidity)
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
    weighting : {"elevation", "none"}, keyword-only
        As :func:`solve` (weights sin^2 el).
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
    _choice("weighting", weighting, ("elevation", "none"))
    el = np.where(used, elevation_rad, 0.0)
    az = np.where(used, azimuth_rad, 0.0)
    los = [-np.cos(el) * np.sin(az), -np.cos(el) * np.cos(az), -np.sin(el)]
    w = np.sin(el) ** 2 if weighting == "elevation" else np.ones_like(el)
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


#: Single-frequency code observables tried per system, in this order: GPS L1 C/A, Galileo E1,
#: BeiDou B1I (RINEX 3.02+ C2I; 3.01 wrote C1I).
SYSTEM_PSEUDORANGES = {"G": PSEUDORANGE_VARIABLES, "E": ("pseudorange", "C1C", "C1X", "C1B"),
                       "C": ("pseudorange", "C2I", "C1I"), "R": ("pseudorange", "C1C", "C1P")}
#: Carrier frequency of those signals [Hz] (IS-GPS-200 3.3.1.1; Galileo OS SIS ICD 2.2;
#: BDS-SIS-ICD-B1I 3.0, 4.2.1): the Klobuchar delay (computed for L1) scales as (f_L1 / f)^2.
SYSTEM_FREQ_HZ = {"G": 1575.42e6, "E": 1575.42e6, "C": 1561.098e6}
#: Dual-frequency pairs of the ionosphere-free combination per system: (first, second) code
#: observables tried, and the second frequency [Hz]. GPS L1/L2 P(Y) (the broadcast clock refers
#: to it, IS-GPS-200 20.3.3.3.3.3; C1C stands in for P1), Galileo E1/E5b (the I/NAV clock,
#: OS SIS ICD 5.1.5), BeiDou B1I/B3I (the clock refers to B3I, TGD1 is B1I's group delay: BDS ICD
#: 5.2.4.10).
IONO_FREE_PAIRS = {"G": ((("C1W", "P1", "C1C", "C1"), ("C2W", "P2", "C2X", "C2L")), 1227.60e6),
                   "E": ((("C1C", "C1X"), ("C7Q", "C7X", "C7I")), 1207.14e6),
                   "C": ((("C2I", "C1I"), ("C6I",)), 1268.52e6),
                   "R": ((("C1C", "C1P"), ("C2C", "C2P")), None)}
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


def _first_present(obs, names, system):
    for name in names:
        if name in obs:
            return name
    raise ValueError(f"obs has none of {list(names)} for system {system!r}; allowed: a Dataset holding one "
                     f"of them (or choose constellations without {system!r})")


def solve(obs: xr.Dataset, nav: xr.Dataset, *, elevation_mask_deg=10.0, iono_model="klobuchar",
          tropo_model="saastamoinen_niell", weighting="elevation", relative_humidity=0.5,
          initial_position_ecef=None, observable=None, true_position_ecef=None,
          constellations=("G",), iono_free=False) -> xr.Dataset:
    """Single-point position and receiver clocks per epoch from code pseudoranges.

    Parameters
    ----------
    obs : xarray.Dataset
        (epoch, sv) pseudoranges: a :func:`gnss.read_obs` Dataset (``C1C``/``C1``) or a simulated
        receiver Dataset (``pseudorange``).  Only the satellites of ``constellations`` are used.  Epochs are
        the receiver's time tags (GPST); a ``time_tag`` coordinate, when present, is used
        instead as the time tag (simulated Datasets keep the true time in ``epoch``).
    nav : xarray.Dataset
        Broadcast ephemerides and Klobuchar coefficients.
    elevation_mask_deg : float, keyword-only
        Satellites below this elevation are not used [deg].
    iono_model : {"klobuchar", "none"}, keyword-only
        Ionospheric correction.
    tropo_model : {"saastamoinen_niell", "none"}, keyword-only
        Tropospheric correction (standard atmosphere with ``relative_humidity``).
    weighting : {"elevation", "none"}, keyword-only
        "elevation": weights sin^2(elevation) (sigma proportional to 1 / sin e).
    initial_position_ecef : array_like, shape (3,), optional, keyword-only
        Start of the iteration [m]; the header ``approx_position_ecef`` if present, else the
        Earth's centre.
    observable : str, optional, keyword-only
        Name of the pseudorange variable; first of ``PSEUDORANGE_VARIABLES`` present by default.
    true_position_ecef : array_like, shape (3,) or (n_epoch, 3), optional, keyword-only
        Known true position, copied to the output (a simulated Dataset's ``true_position_ecef``
        is used when this is omitted).
    constellations : sequence of {"G", "E", "C", "R"}, keyword-only
        Systems used (default GPS only); each gets its own receiver clock (the inter-system
        offsets, time scales and receiver group delays, are estimated, not assumed). ``nav``
        must hold their ephemerides (``gnss.read_nav(path)`` reads every system of the file). GLONASS uses
        C1P/C1C (or C1P+C2P, C1C+C2C ionosphere-free) at each satellite's FDMA frequency;
        one clock for all its frequencies (inter-frequency biases are not estimated).
    iono_free : bool, keyword-only
        Use the dual-frequency ionosphere-free combination of :data:`IONO_FREE_PAIRS` instead
        of one signal and a model: ``(f1^2 P1 - f2^2 P2) / (f1^2 - f2^2)``, no ionospheric
        correction, the satellite clock referred to that pair.

    Returns
    -------
    xarray.Dataset
        Per epoch: ``position_ecef`` (epoch, xyz) [m], ``clock_bias`` [m], ``gdop``, ``pdop``,
        ``hdop``, ``vdop``, ``tdop``, ``n_sv_used``, ``converged``; per (epoch, sv): ``residual``
        [m] and ``used``; ``true_position_ecef`` and ``position_error_enu`` when the truth is
        known.  Epochs with fewer than 4 usable satellites are NaN, never an exception.

    Notes
    -----
    Transmission time: t_tx = t_rx - P / c - dt_sv(t_rx - P / c), which is independent of the
    receiver clock offset (RTKLIB ``satposs`` convention); satellite clock with relativity and
    minus TGD (L1 C/A, IS-GPS-200 20.3.3.3.3.2).  Each iteration rotates the transmit-time
    satellite positions by OmegaE * rho / c (Sagnac), forms
    v = P - (rho + b - c dt_sv + I + T) and solves the weighted normal equations
    (G^T W G) dx = G^T W v for all epochs at once (batched 4x4 solves; epochs are independent).
    DOPs are the unweighted geometric ones (:func:`dops`) at the final position, in local ENU.
    """
    _choice("iono_model", iono_model, IONO_CORRECTIONS)
    _choice("tropo_model", tropo_model, TROPO_CORRECTIONS)
    _choice("weighting", weighting, ("elevation", "none"))
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
    iono_scale = np.ones(sv_names.size)            # Klobuchar (L1) -> the signal's frequency
    tgd_factor = np.ones(sv_names.size)            # multiple of the broadcast tgd the clock takes off
    f_code = code_frequency_hz(nav, sv_names)      # no GLONASS record: channel 0, the satellite is unused
    used_names = {}
    for x in systems:
        cols = np.flatnonzero(sv_sys == x)
        f_sys = f_code[cols]
        if iono_free:
            (first, second), f2 = IONO_FREE_PAIRS[x]
            n1, n2 = _first_present(obs_g, first, x), _first_present(obs_g, second, x)
            f1 = f_sys
            if x == "R":
                f2 = GLONASS_L2_HZ[0] + np.nan_to_num(glonass_channels(nav, sv_names[cols])) * GLONASS_L2_HZ[1]
            p1 = np.asarray(obs_g[n1].values, dtype=float)[:, cols]
            p2 = np.asarray(obs_g[n2].values, dtype=float)[:, cols]
            p[:, cols] = (f1 ** 2 * p1 - f2 ** 2 * p2) / (f1 ** 2 - f2 ** 2)
            iono_scale[cols] = 0.0
            # GPS and Galileo: the broadcast clock refers to this very pair; BeiDou: to B3I, so the
            # B1I/B3I combination takes gamma TGD1 off, gamma = f1^2 / (f1^2 - f3^2); GLONASS
            # broadcasts no group delay in RINEX 3.04 (tgd 0)
            tgd_factor[cols] = f1 ** 2 / (f1 ** 2 - f2 ** 2) if x == "C" else 0.0
            used_names[x] = f"IF({n1},{n2})"
        else:
            n1 = _pick_pseudorange(obs_g, observable) if (observable is not None or x == "G") else \
                _first_present(obs_g, SYSTEM_PSEUDORANGES[x], x)
            p[:, cols] = np.asarray(obs_g[n1].values, dtype=float)[:, cols]
            iono_scale[cols] = (SYSTEM_FREQ_HZ["G"] / f_sys) ** 2
            used_names[x] = n1
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
    record = orbit.select_ephemeris(nav, np.broadcast_to(prn[None, :], p.shape), t_rx)
    first = orbit.sv_state_at(nav, prn[None, :], t_sv, record=record)
    t_tx = gpstime.add_seconds(t_sv, -np.where(np.isfinite(first.clock_bias_s), first.clock_bias_s, 0.0))
    st = orbit.sv_state_at(nav, prn[None, :], t_tx, record=record)
    sv_clock_m = c * (st.clock_bias_s - tgd_factor[None, :] * st.tgd_s)
    valid = np.isfinite(p) & (record >= 0) & np.all(np.isfinite(st.position_ecef), axis=-1)

    if initial_position_ecef is not None:
        x0 = np.asarray(initial_position_ecef, dtype=float)
    elif "approx_position_ecef" in obs and np.linalg.norm(obs["approx_position_ecef"].values) > 0:
        x0 = np.asarray(obs["approx_position_ecef"].values, dtype=float)
    else:
        x0 = np.zeros(3)
    x = np.broadcast_to(x0, (n_epoch, 3)).copy()
    n_clk = len(systems)
    onehot = (sv_sys[:, None] == np.array(systems)[None, :]).astype(float)      # (sv, system)
    bs = np.zeros((n_epoch, n_clk))
    doy = geometry.day_of_year(t)
    mask_rad = np.radians(elevation_mask_deg)
    converged = np.zeros(n_epoch, dtype=bool)
    used = valid.copy()
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
        corr = ac.iono_m * iono_scale[None, :] + ac.tropo_m
        corr = np.where(near[:, None] & np.isfinite(corr), corr, 0.0)
        used = valid & (~near[:, None] | (el >= mask_rad))
        if weighting == "elevation":
            w = np.where(near[:, None], np.sin(np.clip(el, MIN_WEIGHT_ELEVATION_RAD, None)) ** 2, 1.0)
        else:
            w = np.ones((n_epoch, n_sv))
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
    # final geometry and residuals
    geo = geometry.ecef_to_geodetic(x)
    rot = geometry.enu_rotation(geo.latitude_rad, geo.longitude_rad)
    design_enu = np.concatenate([np.einsum("eij,ekj->eki", rot, -los), np.broadcast_to(onehot, (n_epoch, n_sv, n_clk))],
                                axis=-1)
    dop = dops(design_enu, used)
    n_used = used.sum(axis=1)
    sys_used = used.astype(float) @ onehot > 0
    ok = (n_used >= 3 + sys_used.sum(axis=1)) & sys_used.any(axis=1)
    x[~ok] = np.nan
    bs = np.where(ok[:, None] & sys_used, bs, np.nan)
    b = bs[:, 0]
    residual = np.where(used, v - np.einsum("eki,ei->ek", g, dx), np.nan)

    out = xr.Dataset(
        {
            "position_ecef": (("epoch", "xyz"), x, {"units": "m", "long_name": "estimated receiver position, WGS 84 ECEF"}),
            "clock_bias": ("epoch", b, {"units": "m", "long_name": "estimated receiver clock offset times c "
                                                                 "(the first constellation's)"}),
            "clock_bias_system": (("epoch", "system"), bs, {"units": "m", "long_name": "receiver clock offset times "
                                                            "c against each system's signals (NaN: none used)"}),
            "n_sv_used": ("epoch", n_used.astype(np.int32), {"units": "1", "long_name": "satellites used"}),
            "converged": ("epoch", converged, {"units": "1", "long_name": "least-squares iteration converged"}),
            "residual": (("epoch", "sv"), residual, {"units": "m", "long_name": "post-fit pseudorange residual"}),
            "used": (("epoch", "sv"), used, {"units": "1", "long_name": "satellite used in the solution"}),
        },
        coords={"epoch": ("epoch", t, {"long_name": "receiver time tag (GPST)"}),
                "sv": ("sv", obs_g["sv"].values, {"long_name": "satellite identifier"}),
                "xyz": ("xyz", np.array(["x", "y", "z"]), {"long_name": "ECEF axis"}),
                "system": ("system", np.array(systems), {"long_name": "satellite system of each receiver clock"})},
        attrs={"observable": name, "iono_free": int(bool(iono_free)), "elevation_mask_deg": float(elevation_mask_deg), "iono_model": iono_model,
               "tropo_model": tropo_model, "weighting": weighting,
               "dop_definition": "unweighted (G^T G)^-1 in local ENU"},
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
