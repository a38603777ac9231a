"""RINEX 2.10/2.11 and 3.0x readers for GPS navigation and observation files.

This module reads navigation files: :func:`read_nav` (broadcast ephemerides of GPS, Galileo,
BeiDou and GLONASS, and the Klobuchar coefficients).  The observation reader is
:mod:`gnss.rinex_obs`, and what both share, the files' text (decompression of gzip, Unix
compress ``.Z``, zip, bzip2, Hatanaka CRINEX and their combinations, header records,
fixed-column numbers with Fortran ``D`` exponents, epochs), is :mod:`gnss.rinex_text`; their
names are importable from here too.  Times are returned as numpy.datetime64[ns] on the GPS time
scale; ephemeris reference times are additionally kept as integer week + seconds of week (one
float of seconds since 1980 loses sub-microsecond precision).

References
----------
.. [1] W. Gurtner, "RINEX: The Receiver Independent Exchange Format Version 2.10", 2002.
.. [2] IGS/RTCM RINEX WG, "RINEX The Receiver Independent Exchange Format Version 3.04", 2018.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from hifi.api.timebase import utc_to_gpst

from . import gpstime
from .rinex_obs import read_obs  # noqa: F401  (re-exported: importable from here as before the split)
from .rinex_text import (  # noqa: F401
    compression_of, epoch_ns, fixed_fields, read_header, read_text, rinex_version, year4)

# The names these had while they were private to this module; gnss.precise imports _epoch_ns
# from here.
_fields = fixed_fields
_header = read_header
_version = rinex_version
_epoch_ns = epoch_ns
_year4 = year4


# Broadcast orbit fields after the epoch line's three clock terms, in RINEX order (v2 and v3 alike).
_ORBIT_FIELDS = (
    "iode", "crs", "delta_n", "m0",
    "cuc", "e", "cus", "sqrt_a",
    "toe_sow", "cic", "omega0", "cis",
    "i0", "crc", "omega", "omega_dot",
    "idot", "l2_codes", "toe_week", "l2p_flag",
    "sv_accuracy", "health", "tgd", "iodc",
    "transmission_time", "fit_interval",
)

NAV_ATTRS = {
    "toc_week": ("week", "GPS week of the clock reference time toc"),
    "toc_sow": ("s", "seconds of week of the clock reference time toc"),
    "toc": ("", "clock reference time toc (GPST)"),
    "af0": ("s", "SV clock bias af0"),
    "af1": ("s/s", "SV clock drift af1"),
    "af2": ("s/s^2", "SV clock drift rate af2"),
    "iode": ("1", "issue of data, ephemeris"),
    "crs": ("m", "sine harmonic correction to the orbit radius Crs"),
    "delta_n": ("rad/s", "mean motion difference from computed value"),
    "m0": ("rad", "mean anomaly at reference time"),
    "cuc": ("rad", "cosine harmonic correction to the argument of latitude Cuc"),
    "e": ("1", "eccentricity"),
    "cus": ("rad", "sine harmonic correction to the argument of latitude Cus"),
    "sqrt_a": ("m^0.5", "square root of the semi-major axis"),
    "toe_sow": ("s", "reference time of ephemeris toe, seconds of week"),
    "cic": ("rad", "cosine harmonic correction to the inclination Cic"),
    "omega0": ("rad", "longitude of ascending node at weekly epoch Omega0"),
    "cis": ("rad", "sine harmonic correction to the inclination Cis"),
    "i0": ("rad", "inclination at reference time"),
    "crc": ("m", "cosine harmonic correction to the orbit radius Crc"),
    "omega": ("rad", "argument of perigee"),
    "omega_dot": ("rad/s", "rate of right ascension"),
    "idot": ("rad/s", "rate of inclination"),
    "l2_codes": ("1", "codes on L2 channel"),
    "toe_week": ("week", "continuous GPS week of toe"),
    "l2p_flag": ("1", "L2 P data flag"),
    "sv_accuracy": ("m", "SV accuracy (URA)"),
    "health": ("1", "SV health (0 = healthy)"),
    "tgd": ("s", "group delay of the first signal: GPS TGD (L1), Galileo BGD(E1, E5b), BeiDou TGD1 (B1I)"),
    "bgd_e5a_e1": ("s", "Galileo broadcast group delay BGD(E1, E5a) (NaN: other systems)"),
    "tgd2": ("s", "BeiDou group delay TGD2 (B2I) (NaN: other systems)"),
    "iodc": ("1", "issue of data, clock"),
    "transmission_time": ("s", "transmission time of message, seconds of week"),
    "fit_interval": ("h", "fit interval (0 in RINEX 2 means 4 h)"),
    "glo_x": ("m", "GLONASS satellite position x at tb, PZ-90 (NaN: other systems)"),
    "glo_y": ("m", "GLONASS satellite position y at tb, PZ-90 (NaN: other systems)"),
    "glo_z": ("m", "GLONASS satellite position z at tb, PZ-90 (NaN: other systems)"),
    "glo_vx": ("m/s", "GLONASS satellite velocity x at tb, PZ-90 (NaN: other systems)"),
    "glo_vy": ("m/s", "GLONASS satellite velocity y at tb, PZ-90 (NaN: other systems)"),
    "glo_vz": ("m/s", "GLONASS satellite velocity z at tb, PZ-90 (NaN: other systems)"),
    "glo_ax": ("m/s^2", "GLONASS lunisolar acceleration x, PZ-90 (NaN: other systems)"),
    "glo_ay": ("m/s^2", "GLONASS lunisolar acceleration y, PZ-90 (NaN: other systems)"),
    "glo_az": ("m/s^2", "GLONASS lunisolar acceleration z, PZ-90 (NaN: other systems)"),
    "glo_frequency_channel": ("1", "GLONASS FDMA frequency number k, -7..+6 (NaN: other systems)"),
}


def _ion_coefficients(header: dict[str, list[str]], version: float):
    """Klobuchar alpha and beta from ION ALPHA/ION BETA (v2) or IONOSPHERIC CORR GPSA/GPSB (v3)."""
    alpha = beta = None
    if "ION ALPHA" in header:
        alpha = fixed_fields(header["ION ALPHA"][0], 2, 4, 12)
    if "ION BETA" in header:
        beta = fixed_fields(header["ION BETA"][0], 2, 4, 12)
    for rec in header.get("IONOSPHERIC CORR", []):
        kind = rec[:4].strip()
        values = fixed_fields(rec, 5, 4, 12)
        if kind == "GPSA":
            alpha = values
        elif kind == "GPSB":
            beta = values
    return alpha, beta


#: Width of a broadcast-orbit field [characters] (RINEX 2.11 Table A4 and RINEX 3.04 Table A6:
#: 4D19.12 after 3X (v2) or 4X (v3); the epoch line's three clock terms are 3D19.12).
_NAV_FIELD_WIDTH = 19

#: Broadcast-orbit lines after the epoch line of a GPS navigation record (RINEX 2 and 3).
_NAV_ORBIT_LINES = 7


#: Fields that must be present on broadcast-orbit lines 1..7 of a record, per system (RINEX 3.04
#: Tables A6, A8, A14): GPS line 5 holds L2 codes, week and L2 P flag (4 with RINEX 2's spare
#: written); Galileo's line 5 data sources, GAL week and a blank spare (3); BeiDou's line 5 a
#: spare, BDT week and a spare (3 read, the last may be blank); line 7 the transmission time.
_NAV_REQUIRED_FIELDS = {"G": (4, 4, 4, 4, 4, 4, 1), "E": (4, 4, 4, 4, 3, 4, 1), "C": (4, 4, 4, 4, 3, 4, 1)}


def _check_nav_record(lines: list[str], i: int, clock_col: int, offset: int, path, system: str = "G") -> None:
    """Refuse a GPS navigation record that is cut short (a truncated file).

    A record is the epoch line ``i`` (PRN, toc and the three clock terms, which end at column
    ``clock_col + 57``) and seven broadcast-orbit lines; orbit lines 1 to 6 hold four fields
    each, all defined for GPS, so they end at column ``offset + 76``; line 7 holds at least
    the transmission time (its fit interval and spares may be blank). A shorter line or a
    missing line is a record cut short: reading it would silently give zeros.

    Raises
    ------
    ValueError
        Naming the file, the 1-based line and what is missing.
    """
    w = _NAV_FIELD_WIDTH
    head = lines[i].rstrip()
    if len(head) < clock_col + 3 * w:
        raise ValueError(f"{path}:{i + 1}: truncated navigation record: the epoch line has "
                         f"{len(head)} characters, expected {clock_col + 3 * w} (PRN, toc and 3 clock "
                         f"terms); the file looks cut short")
    for k in range(1, _NAV_ORBIT_LINES + 1):
        if i + k >= len(lines) or (k < _NAV_ORBIT_LINES and not lines[i + k].strip()):
            raise ValueError(f"{path}:{i + 1}: truncated navigation record: the record starting on this "
                             f"line has {k - 1} of its {_NAV_ORBIT_LINES} broadcast-orbit lines; the file "
                             f"looks cut short")
        need = offset + _NAV_REQUIRED_FIELDS[system][k - 1] * w
        have = len(lines[i + k].rstrip())
        if have < need:
            raise ValueError(f"{path}:{i + k + 1}: truncated navigation record: broadcast-orbit line {k} "
                             f"has {have} characters, expected at least {need}; the file looks cut short")


def _glonass_record(lines: list[str], i: int, path) -> tuple[list[float], list[float]]:
    """The clock terms (-TauN [s], GammaN [1], message frame time [s]) and the 12 fields of
    broadcast-orbit lines 1-3 (X, Vx, Ax, health; Y, Vy, Ay, frequency number; Z, Vz, Az, age;
    km, km/s, km/s^2) of the GLONASS record whose epoch line is ``i`` (RINEX 3.04 Table A10).

    Raises
    ------
    ValueError
        A line missing or cut short (naming the file and line), or a malformed number.
    """
    w = _NAV_FIELD_WIDTH
    head = lines[i].rstrip()
    if len(head) < 23 + 3 * w:
        raise ValueError(f"{path}:{i + 1}: truncated navigation record: the epoch line has {len(head)} "
                         f"characters, expected {23 + 3 * w} (slot, tb and 3 clock terms); the file looks cut short")
    for k in range(1, 4):
        have = len(lines[i + k].rstrip()) if i + k < len(lines) else 0
        if have < 4 + 4 * w:
            raise ValueError(f"{path}:{i + k + 1}: truncated navigation record: GLONASS broadcast-orbit line {k} "
                             f"has {have} characters, expected {4 + 4 * w}; the file looks cut short")
    clock = _fields_at(lines, i, 23, 3, path)
    state = [v for k in range(1, 4) for v in _fields_at(lines, i + k, 4, 4, path)]
    return clock, state


def _fields_at(lines: list[str], i: int, start: int, n: int, path) -> list[float]:
    """:func:`gnss.rinex_text.fixed_fields` of line ``i``, a malformed number naming the file and line."""
    try:
        return fixed_fields(lines[i], start, n)
    except ValueError as exc:
        raise ValueError(f"{path}:{i + 1}: cannot read a navigation field ({exc}): "
                         f"{lines[i].rstrip()!r}") from None


#: Systems whose broadcast ephemerides :func:`read_nav` reads (RINEX 3 system letters).
NAV_SYSTEMS = ("G", "E", "C", "R")
#: GPST minus the system's time scale at the same instant [s], ignoring the broadcast
#: sub-microsecond offsets (GGTO, A0_BDS): Galileo System Time is steered to GPST's seconds and
#: week numbering (Galileo OS SIS ICD 5.1.2); BDT started 2006-01-01 00:00:00 UTC, when GPST was
#: 14 s ahead of UTC, and has no leap seconds (BDS-SIS-ICD-B1I-3.0, 5.1.2 and 5.2.4.10).
SYSTEM_TIME_OFFSET_S = {"G": 0.0, "E": 0.0, "C": 14.0, "R": 0.0}
#: GPS week in which the system's week 0 begins: BDT week 0 is GPS week 1356 (2006-01-01);
#: RINEX 3 writes the Galileo week aligned with the GPS week (RINEX 3.04 Table A8).
SYSTEM_WEEK_OFFSET = {"G": 0, "E": 0, "C": 1356, "R": 0}
#: Integer key of a satellite across systems: offset + PRN / slot ("G05" -> 5, "R07" -> 107,
#: "E11" -> 211, "C06" -> 306).
SYSTEM_KEY_OFFSET = {"G": 0, "R": 100, "E": 200, "C": 300}
#: GLONASS records: the broadcast state vector, NaN for the other systems (RINEX 3.04 Table A10).
GLONASS_FIELDS = ("glo_x", "glo_vx", "glo_ax", "glo_y", "glo_vy", "glo_ay", "glo_z", "glo_vz", "glo_az")


def read_nav(path, systems=None) -> xr.Dataset:
    """Read broadcast ephemerides and Klobuchar coefficients from a RINEX 2 or 3 nav file.

    Parameters
    ----------
    path : str or path-like
        RINEX 2.x GPS navigation file (``*.05n``) or RINEX 3.0x navigation file, GPS-only or
        mixed, plain or compressed (see :func:`gnss.rinex_text.read_text`).
    systems : sequence of {"G", "E", "C", "R"}, optional
        Which systems' records to keep; default every one of them the file holds (a GPS file
        gives GPS, a mixed file GPS, Galileo, BeiDou and GLONASS). ``systems=("G",)`` keeps the
        GPS records alone, as this reader did before it read mixed files. Records of systems
        not modelled here (SBAS, QZSS, IRNSS/NavIC) are always skipped. Galileo: only I/NAV records (data sources bit 0 or 2; F/NAV
        repeats the orbit with a clock referred to E1/E5a). BeiDou: B1I D1/D2 records.
        GLONASS: the state vector at tb (``glo_x`` .. ``glo_az`` in m, m/s, m/s^2, and
        ``glo_frequency_channel``), tb as ``toc`` and as toe (moved from UTC to GPST with the
        leap seconds of :mod:`hifi.api.timebase`), ``af0`` = -TauN, ``af1`` = GammaN, ``tgd`` 0; the
        Keplerian fields are NaN.

    Returns
    -------
    xarray.Dataset
        Dimension ``record`` (one broadcast ephemeris each) with data variables named after the
        IS-GPS-200 quantities (``af0``, ``sqrt_a``, ``toe_sow``, ...; see ``NAV_ATTRS``), ``prn``
        (int, per system), ``sv`` ("Gnn", "Enn", "Cnn"), ``system``, ``sat`` (the cross-system
        key of :data:`SYSTEM_KEY_OFFSET`), ``toc`` (datetime64 GPST: a BeiDou toc, written in
        BDT, is moved by 14 s), ``toc_week``/``toc_sow`` (GPST) and ``toe_week`` (the continuous
        GPS week in which the system's week of toe begins), ``toe_sow`` (the system's own
        seconds of week, as the orbit equations need them) and ``system_time_offset_s``
        (:data:`SYSTEM_TIME_OFFSET_S`: toe in GPST is ``toe_sow + system_time_offset_s`` in week
        ``toe_week``); and ``ion_alpha``, ``ion_beta`` (dimension ``klobuchar_term`` = 4, NaN
        when the header has none). Per system, ``tgd`` is the group delay a user of the first
        signal subtracts from the clock: GPS TGD (L1 C/A), Galileo BGD(E1, E5b) (I/NAV, OS SIS
        ICD 5.1.5), BeiDou TGD1 (B1I, BDS ICD 5.2.4.10); ``bgd_e5a_e1`` (Galileo) and ``tgd2``
        (BeiDou, B2I) hold the other (NaN for the other systems), and ``iode`` holds Galileo's
        IODnav and BeiDou's AODE.

    Raises
    ------
    ValueError
        If the file is not a RINEX navigation file of version 2 or 3, is compressed and
        cannot be decompressed, or holds a record cut short or a malformed number (the message
        names the file and line, :func:`_check_nav_record`).

    Notes
    -----
    The week of toe is resolved against the week of toc with
    :func:`gnss.gpstime.resolve_week`, so files that write a 10-bit week still decode.
    """
    systems = NAV_SYSTEMS if systems is None else tuple(systems)
    bad = [x for x in systems if x not in NAV_SYSTEMS]
    if bad or not systems:
        raise ValueError(f"read_nav: systems {list(systems)!r} not supported; allowed: a non-empty subset of "
                         f"{list(NAV_SYSTEMS)}")
    path = Path(path)
    lines = read_text(path).splitlines()
    header, start = read_header(lines, path)
    version = rinex_version(header, path)
    ftype = header["RINEX VERSION / TYPE"][0][20:21].upper()
    if int(version) not in (2, 3, 4):
        raise ValueError(f"{path}: RINEX version {version!r} not supported; allowed: 2.x, 3.x, 4.x")
    if int(version) == 2 and ftype != "N":
        raise ValueError(f"{path}: RINEX 2 file type {ftype!r} is not GPS navigation ('N')")
    file_system = header["RINEX VERSION / TYPE"][0][40:41]
    if int(version) >= 3 and (ftype != "N" or file_system not in (*NAV_SYSTEMS, "M", " ")):
        raise ValueError(f"{path}: not a RINEX 3 navigation file of {', '.join(NAV_SYSTEMS)} or mixed "
                         f"(file type {ftype!r}, system {file_system!r})")

    records = []
    glonass: list[list[float]] = []         # per record: GLONASS_FIELDS and the frequency number
    no_glonass = [np.nan] * (len(GLONASS_FIELDS) + 1)
    # GLONASS records have 3 broadcast-orbit lines up to RINEX 3.04, 4 from 3.05 (status flags)
    glonass_lines = 4 if version >= 3.05 else 3
    i = start
    n_lines = len(lines)
    v4_ion = None
    v4_keep = False
    while i < n_lines:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if int(version) == 4:
            # RINEX 4.00 (Table A5): every record opens with "> TYPE SV MESSAGE"; the broadcast
            # ephemerides of LNAV (GPS), INAV (Galileo) and D1/D2 (BeiDou) have the RINEX 3
            # layout below it; the GPS LNAV ION record holds Klobuchar's alpha and beta; every
            # other record (CNAV, FNAV, GLONASS, SBAS, STO, EOP) is skipped to the next ">".
            if line.startswith(">"):
                f = line[1:].split()
                kind, msg = (f[0], f[2]) if len(f) >= 3 else ("", "")
                sv_sys = f[1][:1] if len(f) >= 2 else ""
                v4_keep = kind == "EPH" and sv_sys in systems and msg in ("LNAV", "INAV", "D1", "D2", "FDMA")
                if kind == "ION" and sv_sys == "G" and msg == "LNAV" and i + 3 < n_lines and v4_ion is None:
                    a = _fields_at(lines, i + 1, 23, 3, path)
                    b = _fields_at(lines, i + 2, 4, 4, path)
                    c = _fields_at(lines, i + 3, 4, 1, path)
                    v4_ion = ([*a, b[0]], [b[1], b[2], b[3], c[0]])
                i += 1
                continue
            if not v4_keep:
                i += 1
                continue
            v4_keep = False
        try:
            if int(version) == 2:
                prn = int(line[0:2])
                y, mo, d, h, mi = (int(line[k:k + 3]) for k in (2, 5, 8, 11, 14))
                toc = epoch_ns(year4(y), mo, d, h, mi, line[17:22])
                clock_col = 22
                offset = 3
                system = "G"
            else:                                       # RINEX 3 (and a RINEX 4 record's body)
                system = line[0]
                n_orbit = {"G": 7, "E": 7, "J": 7, "C": 7, "I": 7, "R": glonass_lines, "S": 3}.get(system, 7)
                if system not in systems:
                    i += 1 + n_orbit
                    continue
                prn = int(line[1:3])
                y, mo, d, h, mi = int(line[4:8]), int(line[9:11]), int(line[12:14]), int(line[15:17]), int(line[18:20])
                toc = epoch_ns(y, mo, d, h, mi, line[21:23])
                clock_col = 23
                offset = 4
        except ValueError as exc:
            raise ValueError(f"{path}:{i + 1}: cannot read the epoch line of a navigation record "
                             f"({exc}): {line.rstrip()!r}") from None
        if system == "G" and "G" not in systems:
            i += 8
            continue
        if system == "R":
            clock, state = _glonass_record(lines, i, path)
            i += 1 + glonass_lines
            # the epoch (tb) is UTC(SU) in RINEX 3 (Table A10): GPST = UTC + leap seconds
            toc = utc_to_gpst(toc)
            tb = gpstime.from_datetime64(toc)
            orbit = [np.nan] * len(_ORBIT_FIELDS)
            for name, value in (("health", state[3]), ("toe_sow", float(tb.sow)), ("toe_week", float(tb.week)),
                                ("tgd", 0.0)):
                orbit[_ORBIT_FIELDS.index(name)] = value
            # af0 = -TauN (RINEX writes -TauN), af1 = GammaN: dt_sv = -TauN + GammaN (t - tb)
            records.append(("R", prn, toc, [clock[0], clock[1], 0.0], orbit))
            # km, km/s, km/s^2 -> m, m/s, m/s^2; line k holds (pos, vel, acc, extra) of axis k
            glonass.append([1e3 * state[4 * k + j] for k in range(3) for j in range(3)] + [state[7]])
            continue
        _check_nav_record(lines, i, clock_col, offset, path, system)
        clock = _fields_at(lines, i, clock_col, 3, path)
        orbit: list[float] = []
        for k in range(1, 8):
            orbit.extend(_fields_at(lines, i + k, offset, 4, path))
        i += 8
        if system == "E" and not int(orbit[17]) & 0b101:    # data sources: keep I/NAV (E1-B, E5b-I)
            continue
        toc = toc + np.timedelta64(int(SYSTEM_TIME_OFFSET_S[system] * 1e9), "ns")
        records.append((system, prn, toc, clock, orbit[:len(_ORBIT_FIELDS)]))
        glonass.append(no_glonass)

    n = len(records)
    data: dict[str, np.ndarray] = {}
    prn = np.array([r[1] for r in records], dtype=np.int64)
    toc = np.array([r[2] for r in records], dtype="datetime64[ns]")
    clock = np.array([r[3] for r in records], dtype=float).reshape(n, 3)
    orbit = np.array([r[4] for r in records], dtype=float).reshape(n, len(_ORBIT_FIELDS))
    toc_t = gpstime.from_datetime64(toc)
    data["toc"] = toc
    data["toc_week"] = toc_t.week
    data["toc_sow"] = toc_t.sow
    for j, name in enumerate(("af0", "af1", "af2")):
        data[name] = clock[:, j]
    for j, name in enumerate(_ORBIT_FIELDS):
        data[name] = orbit[:, j]
    glo = np.array(glonass, dtype=float).reshape(n, len(GLONASS_FIELDS) + 1)
    for j, name in enumerate(GLONASS_FIELDS):
        data[name] = glo[:, j]
    data["glo_frequency_channel"] = glo[:, -1]
    system = np.array([r[0] for r in records], dtype=object)
    is_e, is_c = system == "E", system == "C"
    data["bgd_e5a_e1"] = np.where(is_e, data["tgd"], np.nan)
    data["tgd2"] = np.where(is_c, data["iodc"], np.nan)
    data["tgd"] = np.where(is_e, data["iodc"], data["tgd"])          # Galileo: BGD(E1, E5b), I/NAV
    data["iodc"] = np.where(is_e | is_c, np.nan, data["iodc"])
    data["fit_interval"] = np.where(is_c, np.nan, data["fit_interval"])   # BeiDou: AODC there
    week_offset = np.array([SYSTEM_WEEK_OFFSET[x] for x in system], dtype=np.int64)
    time_offset = np.array([SYSTEM_TIME_OFFSET_S[x] for x in system], dtype=float)
    data["toe_week"] = np.round(data["toe_week"]).astype(np.int64) + week_offset
    data["toe_week"] = gpstime.resolve_week(data["toe_week"], toc_t.week)
    # The week written with toe may belong to toc's week while toe is early next week, or vice versa.
    dt = gpstime.diff_seconds(gpstime.GpsTime(data["toe_week"], data["toe_sow"] + time_offset), toc_t)
    data["toe_week"] = data["toe_week"] - np.round(dt / (gpstime.SECONDS_PER_WEEK)).astype(np.int64)

    ds = xr.Dataset(coords={"record": np.arange(n)})
    ds["prn"] = ("record", prn, {"units": "1", "long_name": "PRN number within the satellite's system"})
    ds["sv"] = ("record", np.array([f"{x}{p:02d}" for x, p in zip(system, prn)], dtype=object),
                {"units": "1", "long_name": "satellite identifier"})
    ds["system"] = ("record", system.astype(str) if n else np.array([], dtype=str),
                    {"units": "1", "long_name": "RINEX satellite system letter"})
    ds["sat"] = ("record", prn + np.array([SYSTEM_KEY_OFFSET[x] for x in system], dtype=np.int64),
                 {"units": "1", "long_name": "satellite key across systems (G 0, E 200, C 300, plus PRN)"})
    ds["system_time_offset_s"] = ("record", time_offset,
                                  {"units": "s", "long_name": "GPST minus the system time of toe_sow"})
    for name, values in data.items():
        units, long_name = NAV_ATTRS[name]
        # datetime64 variables carry their unit in the dtype (netCDF encodes it); name the scale
        attrs = {"long_name": long_name, "units": units} if units else {"long_name": long_name,
                                                                         "time_system": "GPST"}
        ds[name] = ("record", values, attrs)
    alpha, beta = _ion_coefficients(header, version) if int(version) < 4 else (v4_ion or (None, None))
    nan4 = [np.nan] * 4
    ds["ion_alpha"] = ("klobuchar_term", np.array(alpha if alpha else nan4),
                       {"units": "s, s/semicircle, s/semicircle^2, s/semicircle^3",
                        "long_name": "Klobuchar amplitude coefficients alpha_0..3"})
    ds["ion_beta"] = ("klobuchar_term", np.array(beta if beta else nan4),
                      {"units": "s, s/semicircle, s/semicircle^2, s/semicircle^3",
                       "long_name": "Klobuchar period coefficients beta_0..3"})
    leap = header.get("LEAP SECONDS")
    ds.attrs.update({
        "rinex_version": version,
        "source_file": str(path),
        "time_system": "GPST",
        "leap_seconds": int(leap[0][:6]) if leap else -1,
    })
    return ds
