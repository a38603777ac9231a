"""GPS time: numpy.datetime64 (GPST) at the API, week + seconds-of-week inside.

House style 6: no kernel holds GPS time as one float of seconds since 1980.  Public functions
take and return ``numpy.datetime64`` values on the GPS time scale (GPST, no leap seconds).
Internally a time is a :class:`GpsTime` pair of an integer week and a float seconds-of-week
(0 <= sow < 604800, so a float64 resolves it to ~1e-10 s).  Differences of two times are formed
as ``(week_a - week_b) * 604800 + (sow_a - sow_b)``, exact to the float resolution of ``sow``.

Leap seconds (UTC -> GPST) come from the IERS table of TAI - UTC (IERS Bulletin C; the list at
https://hpiers.obspm.fr/iers/bul/bulc/Leap_Second.dat), with GPST - UTC = (TAI - UTC) - 19 s.
The table ends with the leap second of 2017-01-01 (the last one at the time of writing); add a
row when IERS Bulletin C announces a new one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .constants import GPS_EPOCH, SECONDS_PER_WEEK, WEEK_ROLLOVER

_NS_PER_S = 1_000_000_000
_NS_PER_WEEK = SECONDS_PER_WEEK * _NS_PER_S

# UTC date from which GPST - UTC takes the value [s] (IERS Bulletin C leap seconds since 1980).
LEAP_SECONDS_GPST_MINUS_UTC = (
    ("1981-07-01", 1), ("1982-07-01", 2), ("1983-07-01", 3), ("1985-07-01", 4),
    ("1988-01-01", 5), ("1990-01-01", 6), ("1991-01-01", 7), ("1992-07-01", 8),
    ("1993-07-01", 9), ("1994-07-01", 10), ("1996-01-01", 11), ("1997-07-01", 12),
    ("1999-01-01", 13), ("2006-01-01", 14), ("2009-01-01", 15), ("2012-07-01", 16),
    ("2015-07-01", 17), ("2017-01-01", 18),
)
_LEAP_DATES_NS = np.array([np.datetime64(d, "ns").astype(np.int64) for d, _ in LEAP_SECONDS_GPST_MINUS_UTC])
_LEAP_VALUES = np.array([v for _, v in LEAP_SECONDS_GPST_MINUS_UTC], dtype=np.int64)


class GpsTime(NamedTuple):
    """A GPS time as integer week and seconds of week (arrays broadcast together).

    Attributes
    ----------
    week : numpy.ndarray of int64
        Continuous GPS week number since 1980-01-06 (no 1024 rollover) [week].
    sow : numpy.ndarray of float64
        Seconds of week, 0 <= sow < 604800 [s].
    """

    week: np.ndarray
    sow: np.ndarray


def to_ns(t) -> np.ndarray:
    """Integer nanoseconds since the GPS epoch of datetime64 GPST values ``t``."""
    t = np.asarray(t)
    if not np.issubdtype(t.dtype, np.datetime64):
        raise ValueError(f"t_gps: expected numpy.datetime64 values (GPST), got dtype {t.dtype!r}")
    return (t.astype("datetime64[ns]") - GPS_EPOCH).astype(np.int64)


def from_datetime64(t) -> GpsTime:
    """Split datetime64 GPST values into week and seconds of week.

    Parameters
    ----------
    t : array_like of numpy.datetime64
        Times on the GPS time scale, any shape.

    Returns
    -------
    GpsTime
        ``week`` [week] and ``sow`` [s] with the shape of ``t``.
    """
    ns = to_ns(t)
    week = np.floor_divide(ns, _NS_PER_WEEK)
    rem = ns - week * _NS_PER_WEEK
    sec = np.floor_divide(rem, _NS_PER_S)
    sow = sec.astype(np.float64) + (rem - sec * _NS_PER_S).astype(np.float64) * 1e-9
    return GpsTime(week.astype(np.int64), sow)


def to_datetime64(t: GpsTime) -> np.ndarray:
    """datetime64[ns] GPST of a :class:`GpsTime` (rounded to the nanosecond)."""
    t = normalize(t.week, t.sow)
    sec = np.floor(t.sow)
    ns = t.week * _NS_PER_WEEK + sec.astype(np.int64) * _NS_PER_S + np.round((t.sow - sec) * 1e9).astype(np.int64)
    return GPS_EPOCH + ns.astype("timedelta64[ns]")


def normalize(week, sow) -> GpsTime:
    """Carry whole weeks from ``sow`` into ``week`` so that 0 <= sow < 604800.

    Parameters
    ----------
    week : array_like of int
        GPS week [week].
    sow : array_like of float
        Seconds of week, may lie outside one week (e.g. after subtracting a travel time) [s].
    """
    week = np.asarray(week, dtype=np.int64)
    sow = np.asarray(sow, dtype=np.float64)
    carry = np.floor_divide(sow, SECONDS_PER_WEEK)
    carry = np.where(np.isfinite(carry), carry, 0.0)  # NaN times stay NaN in sow, week unchanged
    return GpsTime(week + carry.astype(np.int64), sow - carry * SECONDS_PER_WEEK)


def add_seconds(t: GpsTime, dt_s) -> GpsTime:
    """``t + dt_s`` for a small offset ``dt_s`` [s], normalised."""
    return normalize(t.week, t.sow + np.asarray(dt_s, dtype=np.float64))


def diff_seconds(a: GpsTime, b: GpsTime) -> np.ndarray:
    """``a - b`` [s] formed from the week difference and the sow difference separately."""
    return (np.asarray(a.week) - np.asarray(b.week)).astype(np.float64) * SECONDS_PER_WEEK + (
        np.asarray(a.sow, dtype=np.float64) - np.asarray(b.sow, dtype=np.float64))


def resolve_week(week_mod, reference_week) -> np.ndarray:
    """Continuous GPS week from a week number broadcast modulo 1024 (rollover handling).

    Parameters
    ----------
    week_mod : array_like of int
        Week number as broadcast, 0..1023 (values >= 1024 are taken as already continuous) [week].
    reference_week : array_like of int
        A continuous week known to lie within 512 weeks of the true one (e.g. from the file date
        or the computer clock) [week].

    Returns
    -------
    numpy.ndarray of int64
        The continuous week closest to ``reference_week`` that is congruent to ``week_mod``
        modulo 1024.

    Notes
    -----
    IS-GPS-200 20.3.3.3.1.1: the legacy message carries the 10 LSBs of the week number, which
    rolled over on 1999-08-22 and 2019-04-07.
    """
    week_mod = np.asarray(week_mod, dtype=np.int64)
    ref = np.asarray(reference_week, dtype=np.int64)
    k = np.round((ref - week_mod) / WEEK_ROLLOVER).astype(np.int64)
    resolved = week_mod + k * WEEK_ROLLOVER
    return np.where(week_mod >= WEEK_ROLLOVER, week_mod, resolved)


def gpst_minus_utc(t_utc) -> np.ndarray:
    """GPST - UTC [s] (integer leap seconds since 1980) at UTC datetime64 instants ``t_utc``."""
    t = np.asarray(t_utc).astype("datetime64[ns]").astype(np.int64)
    idx = np.searchsorted(_LEAP_DATES_NS, t, side="right")
    return np.where(idx > 0, _LEAP_VALUES[np.maximum(idx - 1, 0)], 0)


def utc_to_gpst(t_utc) -> np.ndarray:
    """Convert UTC datetime64 values to GPST datetime64[ns] with the leap-second table.

    Instants inside a leap second (23:59:60) cannot be represented by numpy.datetime64 and are
    not handled.
    """
    t = np.asarray(t_utc).astype("datetime64[ns]")
    return t + (gpst_minus_utc(t) * _NS_PER_S).astype("timedelta64[ns]")


def gpst_to_utc(t_gps) -> np.ndarray:
    """Convert GPST datetime64 values to UTC datetime64[ns] (inverse of :func:`utc_to_gpst`)."""
    t = np.asarray(t_gps).astype("datetime64[ns]")
    first = t - (gpst_minus_utc(t) * _NS_PER_S).astype("timedelta64[ns]")
    return t - (gpst_minus_utc(first) * _NS_PER_S).astype("timedelta64[ns]")
