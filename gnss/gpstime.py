"""GPS time: numpy.datetime64 (GPST) at the API, week + seconds-of-week inside.

No kernel holds GPS time as one float of seconds since 1980 (it would keep only ~0.2 us).  Public functions
take and return ``numpy.datetime64`` values on the GPS time scale (GPST, no leap seconds).
Internally a time is a :class:`GpsTime` pair of an integer week and a float seconds-of-week
(0 <= sow < 604800, so a float64 resolves it to ~1e-10 s).  Differences of two times are formed
as ``(week_a - week_b) * 604800 + (sow_a - sow_b)``, exact to the float resolution of ``sow``.

Leap seconds (UTC -> GPST) come from the project's one table, :mod:`hifi.api.timebase` (IERS
Bulletin C, GPST - UTC = (TAI - UTC) - 19 s); :func:`utc_to_gpst`, :func:`gpst_to_utc` and
:func:`gpst_minus_utc` are its functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hifi.api import timebase as _timebase

from .constants import GPS_EPOCH, SECONDS_PER_WEEK, WEEK_ROLLOVER

_NS_PER_S = 1_000_000_000
_NS_PER_WEEK = SECONDS_PER_WEEK * _NS_PER_S

#: The project's one leap-second table (:mod:`hifi.api.timebase`), re-exported.
LEAP_SECONDS_GPST_MINUS_UTC = _timebase.LEAP_SECONDS_GPST_MINUS_UTC


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


gpst_minus_utc = _timebase.gpst_minus_utc
utc_to_gpst = _timebase.utc_to_gpst
gpst_to_utc = _timebase.gpst_to_utc
