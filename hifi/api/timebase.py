"""Time scales of a run: the scenario's start epoch parsed once, UTC and GPS time.

The scenario's ``start_utc`` is parsed here once into an :class:`Epoch` that the run context
hands to every model (``ctx.epoch``); no model parses the string again. This module holds the
one leap-second table of the project (``gnss.gpstime`` and the LAS exporter use it).

GPST - UTC is the number of leap seconds inserted since the GPS epoch 1980-01-06T00:00:00
(UTC = GPST then): (TAI - UTC) - 19 s, from IERS Bulletin C.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

#: UTC date from which GPST - UTC takes the value [s]: the leap seconds since 1980-01-06 from
#: IERS Bulletin C (https://hpiers.obspm.fr/iers/bul/bulc/Leap_Second.dat, TAI - UTC minus the
#: 19 s of TAI - GPST). The last row is the leap second of 2017-01-01 (Bulletin C 52); add a
#: row when a Bulletin C announces a new one.
LEAP_SECONDS_GPST_MINUS_UTC = (
    ("1981-07-01", 1), ("1982-07-01", 2), ("1983-07-01", 3), ("1985-07-01", 4),
    ("1988-01-01", 5), ("1990-01-01", 6), ("1991-01-01", 7), ("1992-07-01", 8),
    ("1993-07-01", 9), ("1994-07-01", 10), ("1996-01-01", 11), ("1997-07-01", 12),
    ("1999-01-01", 13), ("2006-01-01", 14), ("2009-01-01", 15), ("2012-07-01", 16),
    ("2015-07-01", 17), ("2017-01-01", 18),
)

#: GPS epoch 1980-01-06T00:00:00 (IS-GPS-200, section 3.3.4), as datetime64[ns].
GPS_EPOCH = np.datetime64("1980-01-06T00:00:00", "ns")

_NS_PER_S = 1_000_000_000
_LEAP_DATES_NS = np.array([np.datetime64(d, "ns").astype(np.int64) for d, _ in LEAP_SECONDS_GPST_MINUS_UTC])
_LEAP_VALUES = np.array([v for _, v in LEAP_SECONDS_GPST_MINUS_UTC], dtype=np.int64)


def parse_utc(value: Any) -> datetime:
    """Parse an ISO 8601 UTC time (string or TOML datetime) to an aware UTC datetime.

    A trailing ``Z`` or an explicit offset is honoured; a time without one is taken as UTC.

    Raises
    ------
    ValueError
        If ``value`` is neither a datetime nor an ISO 8601 string.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    else:
        raise ValueError("not a string")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def gpst_minus_utc(t_utc) -> np.ndarray:
    """GPST - UTC [s] (integer leap seconds since 1980) at UTC datetime64 instants ``t_utc``."""
    t = np.asarray(t_utc).astype("datetime64[ns]").astype(np.int64)
    idx = np.searchsorted(_LEAP_DATES_NS, t, side="right")
    return np.where(idx > 0, _LEAP_VALUES[np.maximum(idx - 1, 0)], 0)


def utc_to_gpst(t_utc) -> np.ndarray:
    """UTC datetime64 values -> GPST datetime64[ns] with the leap-second table.

    Instants inside an inserted leap second (23:59:60) cannot be represented by
    numpy.datetime64 and are not handled.
    """
    t = np.asarray(t_utc).astype("datetime64[ns]")
    return t + (gpst_minus_utc(t) * _NS_PER_S).astype("timedelta64[ns]")


def gpst_to_utc(t_gps) -> np.ndarray:
    """GPST datetime64 values -> UTC datetime64[ns] (inverse of :func:`utc_to_gpst`)."""
    t = np.asarray(t_gps).astype("datetime64[ns]")
    first = t - (gpst_minus_utc(t) * _NS_PER_S).astype("timedelta64[ns]")
    return t - (gpst_minus_utc(first) * _NS_PER_S).astype("timedelta64[ns]")


@dataclass(frozen=True)
class Epoch:
    """The absolute time of a run's t = 0, on the scales models need.

    Attributes
    ----------
    iso : str
        ISO 8601 UTC text with a ``Z`` (microsecond resolution), as written into datasets.
    utc : numpy.datetime64
        t = 0 in UTC, datetime64[ns].
    gps : numpy.datetime64
        t = 0 in GPS time (GPST), datetime64[ns].
    """

    iso: str
    utc: np.datetime64
    gps: np.datetime64

    @classmethod
    def from_utc(cls, value: Any) -> "Epoch":
        """Epoch of an ISO 8601 UTC string or datetime (see :func:`parse_utc`)."""
        dt = parse_utc(value)
        utc = np.datetime64(dt.replace(tzinfo=None), "ns")
        return cls(dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), utc, utc_to_gpst(utc)[()])

    def utc_at(self, t_s) -> np.ndarray:
        """UTC datetime64[ns] of instants ``t_s`` [s] after the epoch (SI seconds)."""
        return self.utc + np.round(np.asarray(t_s, dtype=float) * 1e9).astype("timedelta64[ns]")

    def gps_at(self, t_s) -> np.ndarray:
        """GPST datetime64[ns] of instants ``t_s`` [s] after the epoch (SI seconds; GPST has no leaps)."""
        return self.gps + np.round(np.asarray(t_s, dtype=float) * 1e9).astype("timedelta64[ns]")

    def gps_seconds(self, t_s) -> tuple[np.ndarray, np.ndarray]:
        """GPS time of instants ``t_s`` [s] after the epoch as whole seconds and a fraction.

        Returns
        -------
        seconds : numpy.ndarray of int64
            Whole GPS seconds since the GPS epoch 1980-01-06T00:00:00 [s].
        fraction : numpy.ndarray of float64
            The rest [s]; ``seconds + fraction`` is the GPS time (may exceed 1 when ``t_s`` does).

        Notes
        -----
        GPST = UTC + (GPST - UTC), the leap-second count taken at each instant. The epoch is
        split into integer seconds and a fraction so that no step holds GPS time as one float
        of seconds since 1980 (a float64 of ~1.4e9 s keeps only ~0.2 us).
        """
        t_s = np.asarray(t_s, dtype=float)
        ns0 = int((self.utc - GPS_EPOCH).astype(np.int64))
        sec0, frac0 = divmod(ns0, _NS_PER_S)
        leap = gpst_minus_utc(self.utc_at(t_s))
        return sec0 + leap, frac0 * 1e-9 + t_s
