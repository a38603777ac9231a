"""Broadcast ephemeris to satellite position, velocity and clock: GPS (IS-GPS-200, Table 20-IV),
Galileo (OS SIS ICD 5.1.1, the same equations with its constants), BeiDou (BDS-SIS-ICD-B1I 3.0,
5.2.4.12, with the GEO satellites' own rotation) and GLONASS (the broadcast state vector,
integrated).

Kernels take plain arrays; :func:`sv_states` is the Dataset-level entry point. Satellites are
named by RINEX 3 identifiers ("G05", "E11", "C06") or by integer keys (GPS PRN; Galileo 200 +
PRN, BeiDou 300 + PRN: :data:`gnss.rinex.SYSTEM_KEY_OFFSET`); every time is GPST (Galileo and
BeiDou times are converted inside).

This module works on a navigation Dataset: it names the satellites, picks each query's record
(:func:`select_ephemeris`, :func:`ephemeris_coverage`), evaluates it (:func:`sv_state_at`,
:func:`sv_states`) and iterates the signal's travel time in the rotating Earth frame
(:func:`light_time`). The orbit equations are :mod:`gnss.orbit_kepler` (GPS, Galileo, BeiDou:
Keplerian elements) and :mod:`gnss.orbit_glonass` (GLONASS: an integrated state vector); their
names are importable from here too.

References
----------
.. [1] IS-GPS-200N, "Navstar GPS Space Segment/Navigation User Segment Interfaces", 2022,
   20.3.3.3.3 (SV clock, relativity, TGD) and 20.3.3.4.3 (Table 20-IV, position and velocity).
.. [2] J. Sanz Subirana, J. M. Juan Zornoza, M. Hernandez-Pajares, "GNSS Data Processing, Vol. I:
   Fundamentals and Algorithms", ESA TM-23/1, 2013, sec. 5.1.1 (transmission time, Sagnac).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import xarray as xr

from . import gpstime
from .constants import (EPHEMERIS_MAX_AGE_S, F_RELATIVITY, GLONASS_EPHEMERIS_MAX_AGE_S, LIGHT_TIME_MAX_ITERATIONS,
                        LIGHT_TIME_TOLERANCE_S, OMEGA_E_DOT, SECONDS_PER_WEEK, SPEED_OF_LIGHT)
from .orbit_glonass import glonass_orbit
from .orbit_kepler import (  # noqa: F401  (re-exported: importable from here as before the split)
    ORBIT_KEYS, OrbitState, beidou_geo, broadcast_orbit, solve_kepler, sv_clock_offset, system_constants)
from .rinex import GLONASS_FIELDS, SYSTEM_KEY_OFFSET

# The names these had while they were private to this module.
_system_constants = system_constants
_beidou_geo = beidou_geo
_ORBIT_KEYS = ORBIT_KEYS


def earth_rotation_matrix(angle_rad) -> np.ndarray:
    """R3(angle): rotation of the ECEF frame about z by ``angle_rad`` [rad], shape (..., 3, 3).

    Applied to a position at transmission time with angle = OmegaE * travel time, it gives the
    position in the ECEF frame at reception time.
    """
    th = np.asarray(angle_rad, dtype=float)
    c, s = np.cos(th), np.sin(th)
    zero, one = np.zeros_like(th), np.ones_like(th)
    return np.stack([np.stack([c, s, zero], -1), np.stack([-s, c, zero], -1),
                     np.stack([zero, zero, one], -1)], -2)


def rotate_to_reception_frame(sv_position_ecef, travel_time_s, *, omega_e_dot=OMEGA_E_DOT) -> np.ndarray:
    """Express a transmit-time ECEF position in the ECEF frame of the reception time [m], (..., 3)."""
    p = np.asarray(sv_position_ecef, dtype=float)
    th = omega_e_dot * np.asarray(travel_time_s, dtype=float)
    c, s = np.cos(th), np.sin(th)
    return np.stack([c * p[..., 0] + s * p[..., 1], -s * p[..., 0] + c * p[..., 1], p[..., 2]], axis=-1)


def sagnac_correction(receiver_ecef, sv_position_ecef, *, omega_e_dot=OMEGA_E_DOT, c=SPEED_OF_LIGHT):
    """First-order Earth-rotation (Sagnac) range correction [m].

    Parameters
    ----------
    receiver_ecef : array_like, shape (..., 3)
        Receiver position at reception, ECEF [m].
    sv_position_ecef : array_like, shape (..., 3)
        Satellite position at transmission in the ECEF frame of transmission [m].

    Returns
    -------
    numpy.ndarray
        OmegaE / c * (x_sv y_rx - y_sv x_rx) [m], to be added to the Euclidean distance computed
        in one frame (Sanz Subirana et al. 2013, eq. 5.11).
    """
    r = np.asarray(receiver_ecef, dtype=float)
    s = np.asarray(sv_position_ecef, dtype=float)
    return omega_e_dot / c * (s[..., 0] * r[..., 1] - s[..., 1] * r[..., 0])


#: RINEX 3 system letters of satellites this package has no orbit model for: SBAS, QZSS and
#: IRNSS/NavIC (RINEX 3.04 section 3.5). Real observation files list them; the public functions
#: give NaN for them (key :data:`UNMODELLED_KEY`) with one :class:`UnmodelledSatelliteWarning`.
UNMODELLED_SYSTEMS = ("S", "J", "I")
#: Satellite key of a satellite of :data:`UNMODELLED_SYSTEMS`: it matches no navigation record,
#: so its states, ranges and pseudoranges are NaN.
UNMODELLED_KEY = -1


class UnmodelledSatelliteWarning(UserWarning):
    """Satellites of systems without a model here (SBAS, QZSS, IRNSS) were asked for; their
    results are NaN (a bad data point is masked, not raised)."""


def _prn_array(prns) -> np.ndarray:
    """Satellite keys as int64 from ints (GPS PRNs or keys) or 'Gnn' / 'Rnn' / 'Enn' / 'Cnn' strings.

    A satellite of :data:`UNMODELLED_SYSTEMS` ('S36', 'J02', 'I05') gets :data:`UNMODELLED_KEY`,
    and one :class:`UnmodelledSatelliteWarning` names them all; any other letter raises.
    """
    arr = np.atleast_1d(np.asarray(prns))
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    out = []
    unmodelled = []
    for p in arr.ravel():
        text = str(p).strip()
        system = text[:1].upper() if text[:1].isalpha() else "G"
        if system in UNMODELLED_SYSTEMS:
            unmodelled.append(text)
            out.append(UNMODELLED_KEY)
            continue
        if system not in SYSTEM_KEY_OFFSET:
            raise ValueError(f"prns: {p!r} is not a satellite of a supported system; allowed: integers (GPS "
                             f"PRNs) or 'Gnn', 'Rnn', 'Enn', 'Cnn' (and 'Snn', 'Jnn', 'Inn', given NaN)")
        out.append(SYSTEM_KEY_OFFSET[system] + int(text[1:] if text[:1].isalpha() else text))
    if unmodelled:
        warnings.warn(f"{len(unmodelled)} satellites of systems not modelled (SBAS, QZSS, IRNSS): "
                      f"{', '.join(unmodelled)}; their results are NaN", UnmodelledSatelliteWarning, stacklevel=3)
    return np.array(out, dtype=np.int64).reshape(arr.shape)


def _sv_labels(prns, keys) -> np.ndarray:
    """RINEX 3 names of satellites given as ``prns`` with keys ``keys`` (:func:`_prn_array`):
    the names given for strings (so an unmodelled 'S36' keeps its name), else :func:`sat_label`."""
    arr = np.atleast_1d(np.asarray(prns))
    if arr.dtype.kind in "iu":
        return np.array([sat_label(k) for k in np.ravel(keys)], dtype=object)
    return np.array([sat_label(k) if k != UNMODELLED_KEY else str(p).strip() for p, k in
                     zip(arr.ravel(), np.ravel(keys))], dtype=object)


def sat_label(key) -> str:
    """RINEX 3 identifier of a satellite key ("G05", "R07", "E11", "C06")."""
    key = int(key)
    system = max((off, x) for x, off in SYSTEM_KEY_OFFSET.items() if off <= key)[1]
    return f"{system}{key - SYSTEM_KEY_OFFSET[system]:02d}"


def _sat_keys(nav: xr.Dataset) -> np.ndarray:
    """Satellite key of every nav record (GPS-only datasets of older readers: the PRN)."""
    return (nav["sat"] if "sat" in nav else nav["prn"]).values.astype(np.int64)


def _toe_offset(nav: xr.Dataset) -> np.ndarray:
    """GPST minus system time of each record's toe_sow [s] (0 for GPS-only datasets)."""
    return nav["system_time_offset_s"].values if "system_time_offset_s" in nav else np.zeros(nav.sizes["record"])


#: Largest |t - toe| of a broadcast record RTKLIB 2.4.3 uses, per system [s] (``seleph`` and
#: ``selgeph``, src/ephemeris.c: ``MAXDTOE`` + 1 s for GPS, ``MAXDTOE_GAL``, ``MAXDTOE_CMP`` + 1 s,
#: ``MAXDTOE_GLO``); :func:`select_ephemeris`'s own rule is 2 h for all but GLONASS (30 min).
RTKLIB_MAX_TOE_AGE_S = {"G": 7201.0, "E": 14400.0, "C": 21601.0, "R": 1800.0}


def select_ephemeris(nav: xr.Dataset, prn, t: gpstime.GpsTime, *,
                     max_age_s=EPHEMERIS_MAX_AGE_S, rule="nearest") -> np.ndarray:
    """Index of the healthy ephemeris record with toe nearest to ``t`` for each (prn, t).

    Parameters
    ----------
    nav : xarray.Dataset
        Output of :func:`gnss.read_nav`.
    prn : array_like of int
        PRN per query, broadcast with ``t``.
    t : GpsTime
        Query times (week, sow).
    max_age_s : float, keyword-only
        Largest allowed ``|t - toe|`` [s] (default 2 h; GLONASS records at most
        :data:`gnss.constants.GLONASS_EPHEMERIS_MAX_AGE_S`, 30 min).
    rule : {"nearest", "rtklib"}, keyword-only
        "nearest": the toe nearest ``t``, the earlier record on a tie. "rtklib": as RTKLIB
        2.4.3's ``seleph``/``selgeph`` (src/ephemeris.c): the ages of
        :data:`RTKLIB_MAX_TOE_AGE_S` instead of ``max_age_s``, the later record on a tie (its
        ``t <= tmin`` over records sorted by transmission time), and Galileo only records whose
        toe is strictly before ``t``.

    Returns
    -------
    numpy.ndarray of int64
        Record index into ``nav``; -1 where no healthy record lies within ``max_age_s``.

    Notes
    -----
    Vectorised with one ``searchsorted`` on the key prn * 1e12 + whole seconds of toe since the
    GPS epoch; the two neighbours are compared by their exact week/sow difference.
    """
    prn = np.asarray(prn, dtype=np.int64)
    week = np.asarray(t.week, dtype=np.int64)
    sow = np.asarray(t.sow, dtype=float)
    prn, week, sow = np.broadcast_arrays(prn, week, sow)
    healthy = np.flatnonzero(nav["health"].values == 0)
    big = np.int64(10) ** 12
    rec_week = nav["toe_week"].values[healthy].astype(np.int64)
    rec_sow = (nav["toe_sow"].values + _toe_offset(nav))[healthy]
    rec_key = _sat_keys(nav)[healthy] * big + rec_week * SECONDS_PER_WEEK + np.floor(rec_sow).astype(np.int64)
    order = np.argsort(rec_key, kind="stable")
    rec_key, cand = rec_key[order], healthy[order]
    if cand.size == 0:
        return np.full(prn.shape, -1, dtype=np.int64)
    finite = np.isfinite(sow)
    q_key = prn * big + week * SECONDS_PER_WEEK + np.floor(np.where(finite, sow, 0.0)).astype(np.int64)
    pos = np.searchsorted(rec_key, q_key)
    best = np.full(prn.shape, -1, dtype=np.int64)
    best_dt = np.full(prn.shape, np.inf)
    nav_prn = _sat_keys(nav)
    toe_week = nav["toe_week"].values
    toe_sow = nav["toe_sow"].values + _toe_offset(nav)          # toe in GPST
    # GLONASS state vectors hold for GLONASS_EPHEMERIS_MAX_AGE_S around tb
    limit = np.where(_is_glonass(nav_prn), min(float(max_age_s), GLONASS_EPHEMERIS_MAX_AGE_S), float(max_age_s))
    if rule == "rtklib":
        for letter, age in RTKLIB_MAX_TOE_AGE_S.items():
            lo = SYSTEM_KEY_OFFSET[letter]
            limit = np.where((nav_prn >= lo) & (nav_prn < lo + 100), age, limit)
    elif rule != "nearest":
        raise ValueError(f"rule: got {rule!r}; allowed: 'nearest', 'rtklib'")
    for shift in (-1, 0):
        k = np.clip(pos + shift, 0, cand.size - 1)
        idx = cand[k]
        signed = (week - toe_week[idx]).astype(float) * SECONDS_PER_WEEK + (sow - toe_sow[idx])
        dt = np.abs(signed)
        closer = (dt <= best_dt) if rule == "rtklib" else (dt < best_dt)
        ok = finite & (nav_prn[idx] == prn) & (dt <= limit[idx]) & closer
        if rule == "rtklib":
            ok &= ~(_is_galileo(nav_prn[idx]) & (signed <= 0.0))
        best = np.where(ok, idx, best)
        best_dt = np.where(ok, dt, best_dt)
    return best


#: Satellites a position and clock fix needs (three coordinates and the receiver clock).
MIN_SATELLITES_FOR_FIX = 4


def ephemeris_coverage(nav: xr.Dataset, *, min_satellites: int = MIN_SATELLITES_FOR_FIX,
                       max_age_s: float = EPHEMERIS_MAX_AGE_S) -> list[tuple[np.datetime64, np.datetime64]]:
    """GPST intervals in which ``min_satellites`` satellites have a usable broadcast ephemeris.

    Parameters
    ----------
    nav : xarray.Dataset
        Output of :func:`gnss.read_nav`.
    min_satellites : int, keyword-only
        Distinct satellites required at every instant (default 4, a fix).
    max_age_s : float, keyword-only
        Half-width of the interval around each toe in which a record is used [s] (default 2 h,
        :data:`gnss.constants.EPHEMERIS_MAX_AGE_S`).

    Returns
    -------
    list of (numpy.datetime64, numpy.datetime64)
        Closed, disjoint, increasing intervals [start, end] (GPST, datetime64[ns]); empty when
        the file never has ``min_satellites`` usable satellites at once.

    Notes
    -----
    "Covers" is defined by the rule :func:`select_ephemeris` applies: a satellite has a usable
    ephemeris at instant t when one of its healthy records (``health`` = 0) has
    ``|t - toe| <= max_age_s``. IS-GPS-200 (20.3.4.4) fits the broadcast elements over a 4 h
    interval (fit interval flag 0), so they are valid about +-2 h around toe. An instant is
    covered when at least ``min_satellites`` distinct satellites have a usable ephemeris; the
    intervals are the union of the records' toe +- ``max_age_s``, merged per satellite and
    counted with a sweep (touching intervals count as continuous).
    """
    healthy = np.flatnonzero(nav["health"].values == 0)
    if healthy.size == 0:
        return []
    toe_ns = gpstime.to_ns(gpstime.to_datetime64(gpstime.GpsTime(
        nav["toe_week"].values[healthy].astype(np.int64), (nav["toe_sow"].values + _toe_offset(nav))[healthy])))
    half = int(round(max_age_s * 1e9))
    prn = _sat_keys(nav)[healthy]
    events = []
    for p in np.unique(prn):
        starts = np.sort(toe_ns[prn == p])
        lo, hi = starts[0] - half, starts[0] + half
        for t in starts[1:]:
            if t - half > hi:
                events += [(lo, 0), (hi, 1)]
                lo = t - half
            hi = t + half
        events += [(lo, 0), (hi, 1)]
    events.sort()                                   # at equal times a start (0) before an end (1)
    out, count, begin = [], 0, None
    for t, kind in events:
        count += 1 if kind == 0 else -1
        if kind == 0 and count == min_satellites:
            begin = t
        elif kind == 1 and count == min_satellites - 1:
            if out and begin <= out[-1][1]:
                out[-1] = (out[-1][0], t)
            else:
                out.append((begin, t))
    epoch = gpstime.GPS_EPOCH
    return [(epoch + np.timedelta64(int(a), "ns"), epoch + np.timedelta64(int(b), "ns")) for a, b in out]


def _elements(nav: xr.Dataset, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Ephemeris fields gathered at record indices (NaN where idx == -1)."""
    names = ("sqrt_a", "e", "delta_n", "m0", "omega", "cuc", "cus", "crc", "crs", "cic", "cis", "i0",
             "idot", "omega0", "omega_dot", "toe_sow", "af0", "af1", "af2", "tgd", "toc_sow")
    safe = np.where(idx >= 0, idx, 0)
    out = {}
    for name in names:
        v = nav[name].values[safe].astype(float)
        out[name] = np.where(idx >= 0, v, np.nan)
    if "glo_x" in nav:
        for name in GLONASS_FIELDS:
            out[name] = np.where(idx >= 0, nav[name].values[safe].astype(float), np.nan)
    out["toe_week"] = nav["toe_week"].values[safe]
    out["toc_week"] = nav["toc_week"].values[safe]
    out["sat"] = np.where(idx >= 0, _sat_keys(nav)[safe], -1)
    out["toe_offset_s"] = np.where(idx >= 0, _toe_offset(nav)[safe], np.nan)
    return out


class SvState(NamedTuple):
    """Satellite state at (transmit) times, arrays of the query shape.

    Attributes
    ----------
    position_ecef, velocity_ecef : numpy.ndarray, shape (..., 3)
        ECEF at the evaluation time [m], [m/s].
    clock_bias_s : numpy.ndarray
        Delta t_sv with relativity, without TGD [s].
    clock_drift : numpy.ndarray
        af1 + 2 af2 (t - toc) [s/s].
    tgd_s : numpy.ndarray
        Broadcast TGD [s].
    record : numpy.ndarray of int64
        Ephemeris record used, -1 if none (then everything else is NaN).
    """

    position_ecef: np.ndarray
    velocity_ecef: np.ndarray
    clock_bias_s: np.ndarray
    clock_drift: np.ndarray
    tgd_s: np.ndarray
    record: np.ndarray


def sv_state_at(nav: xr.Dataset, prn, t: gpstime.GpsTime, *, record=None) -> SvState:
    """Satellite position, velocity and clock at GPS system times ``t`` (array kernel).

    Parameters
    ----------
    nav : xarray.Dataset
        Broadcast ephemerides from :func:`gnss.read_nav`.
    prn : array_like of int
        PRN per query, broadcast with ``t``.
    t : GpsTime
        Evaluation times (GPS system time).
    record : array_like of int, optional
        Ephemeris record per query; selected with :func:`select_ephemeris` when omitted.
    """
    prn = np.asarray(prn, dtype=np.int64)
    shape = np.broadcast_shapes(prn.shape, np.shape(t.week), np.shape(t.sow))
    week = np.broadcast_to(t.week, shape)
    sow = np.broadcast_to(t.sow, shape)
    tt = gpstime.GpsTime(week, sow)
    idx = select_ephemeris(nav, np.broadcast_to(prn, shape), tt) if record is None else np.broadcast_to(record, shape)
    el = _elements(nav, idx)
    # t - toe in the satellite's own time scale (Galileo GST, BeiDou BDT): the same difference
    # as GPST minus toe expressed in GPST
    tk = (week - el["toe_week"]).astype(float) * SECONDS_PER_WEEK + (sow - (el["toe_sow"] + el["toe_offset_s"]))
    mu, we, f_rel, geo = system_constants(el["sat"])
    if np.all(el["sat"] < SYSTEM_KEY_OFFSET["E"]):      # GPS only: the IS-GPS-200 constants as before
        state = broadcast_orbit(tk, **{k: el[k] for k in ORBIT_KEYS})
    else:
        state = broadcast_orbit(tk, **{k: el[k] for k in ORBIT_KEYS}, mu=mu, omega_e_dot=we)
        if geo.any():
            g = beidou_geo(tk, el, mu, we)
            state = OrbitState(np.where(geo[..., None], g.position_ecef, state.position_ecef),
                               np.where(geo[..., None], g.velocity_ecef, state.velocity_ecef),
                               state.eccentric_anomaly)
    dt_toc = (week - el["toc_week"]).astype(float) * SECONDS_PER_WEEK + (sow - el["toc_sow"])
    clk = sv_clock_offset(dt_toc, af0=el["af0"], af1=el["af1"], af2=el["af2"], e=el["e"],
                          sqrt_a=el["sqrt_a"], eccentric_anomaly=state.eccentric_anomaly,
                          f_relativity=f_rel if np.any(el["sat"] >= SYSTEM_KEY_OFFSET["E"]) else F_RELATIVITY)
    drift = el["af1"] + 2.0 * el["af2"] * dt_toc
    glo = _is_glonass(el["sat"])
    if np.any(glo):
        # GLONASS: the broadcast state vector integrated from tb (= toe) to t; the clock is
        # -TauN + GammaN (t - tb), relativity included in it (ICD 3.3.3), no TGD in RINEX 3.04
        r = np.nonzero(glo)
        g = glonass_orbit(tk[r], *(np.stack([el[f"glo_{a}{c}"][r] for c in "xyz"], axis=-1)
                                   for a in ("", "v", "a")))
        pos, vel = state.position_ecef.copy(), state.velocity_ecef.copy()
        pos[r], vel[r] = g.position_ecef, g.velocity_ecef
        state = OrbitState(pos, vel, state.eccentric_anomaly)
        clk = np.where(glo, el["af0"] + el["af1"] * dt_toc, clk)
    return SvState(state.position_ecef, state.velocity_ecef, clk, drift, el["tgd"], idx)


def _is_glonass(sat: np.ndarray) -> np.ndarray:
    return (sat >= SYSTEM_KEY_OFFSET["R"]) & (sat < SYSTEM_KEY_OFFSET["E"])


def _is_galileo(sat: np.ndarray) -> np.ndarray:
    return (sat >= SYSTEM_KEY_OFFSET["E"]) & (sat < SYSTEM_KEY_OFFSET["C"])


def sv_states(nav: xr.Dataset, prns, t_gps) -> xr.Dataset:
    """Satellite positions, velocities and clocks from broadcast ephemerides.

    Parameters
    ----------
    nav : xarray.Dataset
        From :func:`gnss.read_nav`.
    prns : array_like
        Satellites, shape (n_sv,): GPS PRNs as integers, or names "G05", "R07", "E11", "C06";
        a satellite of a system not modelled ("S36", "J02", "I05") gets NaN and one
        :class:`UnmodelledSatelliteWarning` names them.
    t_gps : array_like of numpy.datetime64
        Evaluation times in GPST, shape (n_epoch,) or scalar.

    Returns
    -------
    xarray.Dataset
        Dimensions (epoch, sv, xyz): ``sv_position_ecef`` [m] and ``sv_velocity_ecef`` [m/s] in
        WGS 84 ECEF at the given time (no light-time or Earth-rotation correction: this is the
        state at system time t), ``sv_clock_bias`` [s] (af0 + af1 dt + af2 dt^2 + relativistic
        term, without TGD), ``sv_clock_drift`` [s/s], ``tgd`` [s], ``ephemeris_record`` (-1 and NaN
        where no healthy ephemeris lies within 2 h).
    """
    prn = _prn_array(prns).ravel()
    t = np.atleast_1d(np.asarray(t_gps, dtype="datetime64[ns]"))
    gt = gpstime.from_datetime64(t)
    st = sv_state_at(nav, prn[None, :], gpstime.GpsTime(gt.week[:, None], gt.sow[:, None]))
    return _state_dataset(t, prn, st, names=_sv_labels(prns, prn))


def _state_dataset(t, prn, st: SvState, names=None) -> xr.Dataset:
    names = np.array([sat_label(p) for p in prn], dtype=object) if names is None else names
    return xr.Dataset(
        {
            "sv_position_ecef": (("epoch", "sv", "xyz"), st.position_ecef,
                                 {"units": "m", "long_name": "satellite antenna phase centre position, WGS 84 ECEF"}),
            "sv_velocity_ecef": (("epoch", "sv", "xyz"), st.velocity_ecef,
                                 {"units": "m/s", "long_name": "satellite velocity in the rotating ECEF frame"}),
            "sv_clock_bias": (("epoch", "sv"), st.clock_bias_s,
                              {"units": "s", "long_name": "satellite clock offset incl. relativistic term, excl. TGD"}),
            "sv_clock_drift": (("epoch", "sv"), st.clock_drift, {"units": "s/s", "long_name": "satellite clock drift"}),
            "tgd": (("epoch", "sv"), st.tgd_s, {"units": "s", "long_name": "broadcast group delay TGD"}),
            "ephemeris_record": (("epoch", "sv"), st.record,
                                 {"units": "1", "long_name": "index of the nav record used, -1 if none"}),
        },
        coords={"epoch": ("epoch", t, {"long_name": "GPS time (GPST)"}),
                "sv": ("sv", names, {"long_name": "satellite identifier"}),
                "prn": ("sv", prn, {"long_name": "satellite key: GPS PRN, Galileo 200 + PRN, BeiDou 300 + PRN",
                                    "units": "1"}),
                "xyz": ("xyz", ["x", "y", "z"])},
    )


class Transmission(NamedTuple):
    """Result of the light-time iteration.

    Attributes
    ----------
    sv_position_ecef : numpy.ndarray, (..., 3)
        Satellite position at transmission, expressed in the ECEF frame of reception [m].
    geometric_range : numpy.ndarray
        ``|sv_position_ecef - receiver|`` [m], which includes the Earth-rotation correction.
    travel_time_s : numpy.ndarray
        Signal travel time [s].
    state : SvState
        Satellite state at transmission (frame of transmission).
    """

    sv_position_ecef: np.ndarray
    geometric_range: np.ndarray
    travel_time_s: np.ndarray
    state: SvState


def light_time(nav: xr.Dataset, prn, t_rx: gpstime.GpsTime, receiver_ecef, *,
               tolerance_s=LIGHT_TIME_TOLERANCE_S, max_iterations=LIGHT_TIME_MAX_ITERATIONS) -> Transmission:
    """Transmission time and geometric range for a receiver at known position and true time.

    Parameters
    ----------
    nav : xarray.Dataset
        Broadcast ephemerides.
    prn : array_like of int
        PRNs, broadcast with ``t_rx`` and the leading shape of ``receiver_ecef``.
    t_rx : GpsTime
        True reception time (GPS system time).
    receiver_ecef : array_like, shape (..., 3)
        Receiver position at reception [m].

    Notes
    -----
    Iterates ``tau <- |R3(OmegaE tau) x_sv(t_rx - tau) - x_rx| / c`` from tau = 0.075 s (Sanz
    Subirana et al. 2013, sec. 5.1.1.1-2).  The rotation expresses the transmit-time position in
    the reception-time ECEF frame, which is the exact form of the Sagnac correction.  The
    ephemeris record is chosen once at the reception time so the iteration is smooth.
    """
    prn = np.asarray(prn, dtype=np.int64)
    rx = np.asarray(receiver_ecef, dtype=float)
    shape = np.broadcast_shapes(prn.shape, np.shape(t_rx.week), np.shape(t_rx.sow), rx.shape[:-1])
    prn = np.broadcast_to(prn, shape)
    week = np.broadcast_to(t_rx.week, shape)
    sow = np.broadcast_to(t_rx.sow, shape)
    record = select_ephemeris(nav, prn, gpstime.GpsTime(week, sow))
    tau = np.full(shape, 0.075)
    for _ in range(max_iterations):
        st = sv_state_at(nav, prn, gpstime.add_seconds(gpstime.GpsTime(week, sow), -tau), record=record)
        pos = rotate_to_reception_frame(st.position_ecef, tau)
        rng = np.linalg.norm(pos - rx, axis=-1)
        new_tau = rng / SPEED_OF_LIGHT
        done = not np.any(np.abs(new_tau - tau) > tolerance_s)
        tau = np.where(np.isfinite(new_tau), new_tau, tau)
        if done:
            break
    st = sv_state_at(nav, prn, gpstime.add_seconds(gpstime.GpsTime(week, sow), -tau), record=record)
    pos = rotate_to_reception_frame(st.position_ecef, tau)
    rng = np.linalg.norm(pos - rx, axis=-1)
    return Transmission(pos, rng, rng / SPEED_OF_LIGHT, st)
