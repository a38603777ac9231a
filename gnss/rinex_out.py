"""RINEX 3.04 observation files from simulated observables (:mod:`gnss.observables`).

Format: IGS/RTCM RINEX WG, "RINEX The Receiver Independent Exchange Format Version 3.04", 2018:
header records of 60 columns plus a 20-column label (section 5.1, Table A1), epoch records
``> yyyy mm dd hh mm ss.sssssss  f nn`` (Table A3) and one line per satellite, every
observation ``F14.3`` followed by the loss-of-lock indicator and the signal-strength index
(``I1, I1``, sections 5.3-5.7). Observation types per system (``SYS / # / OBS TYPES``) are the
code, phase, Doppler and signal strength of each simulated signal: ``C1C L1C D1C S1C`` and so on.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xarray as xr

#: Observation kinds written per signal, in this order (RINEX 3.04 5.2.16).
KINDS = (("C", "code"), ("L", "phase"), ("D", "doppler"), ("S", "cn0"))
#: RINEX's F14.3 holds |x| < 1e10 (9 integer digits, sign, point, 3 decimals).
F14_MAX = 9.999999999e9
#: Decimals of an observation in the file (F14.3, RINEX 3.04 Table A3): 1 mm of code.
OBSERVATION_DECIMALS = 3


#: Resolution of a RINEX time tag: F11.7 seconds in an epoch record, F13.7 in TIME OF FIRST OBS
#: (RINEX 3.04 Tables A2, A3) [ns].
TIME_TAG_RESOLUTION_NS = 100


def _label(content: str, label: str) -> str:
    return f"{content:<60.60}{label:<20.20}"


def round_time_tag(t):
    """Time tags rounded to the resolution of a RINEX file (:data:`TIME_TAG_RESOLUTION_NS`).

    Parameters
    ----------
    t : array_like of numpy.datetime64
        Time tags (GPST).

    Returns
    -------
    numpy.ndarray of datetime64[ns]
        ``t`` rounded to the nearest 0.1 us (half up): the time the file states.
    """
    ns = np.asarray(t, dtype="datetime64[ns]").astype(np.int64)
    q = TIME_TAG_RESOLUTION_NS
    return ((ns + q // 2) // q * q).astype("datetime64[ns]")


def round_observation(value):
    """Observations as a RINEX file holds them: rounded to :data:`OBSERVATION_DECIMALS`, NaN
    where F14.3 cannot hold them (written blank).

    Parameters
    ----------
    value : array_like
        Observations [m, cycles, Hz or dB-Hz].

    Returns
    -------
    numpy.ndarray
        The values a reader of the file gets (to within one unit in the last place of the
        decimal text).
    """
    v = np.asarray(value, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(v) <= F14_MAX, np.round(v, OBSERVATION_DECIMALS), np.nan)


def split_time_tag(t):
    """Calendar fields of a time tag as RINEX writes it: rounded first, then split.

    Parameters
    ----------
    t : numpy.datetime64
        One time tag (GPST).

    Returns
    -------
    tuple
        (year, month, day, hour, minute, whole seconds, fraction of a second in units of
        0.1 us); the seconds are below 60.

    Notes
    -----
    Rounding the seconds after splitting writes a time just below a whole minute as 60.0000000
    s, which RINEX does not allow (seconds 0..59.9999999); rounding the whole time tag first
    carries into the minute, hour, day, month and year.
    """
    r = round_time_tag(t)
    minute = r.astype("datetime64[m]")
    units = int((r - minute).astype(np.int64)) // TIME_TAG_RESOLUTION_NS       # 0 .. 599999999
    d = minute.item()
    per_s = 1_000_000_000 // TIME_TAG_RESOLUTION_NS
    return d.year, d.month, d.day, d.hour, d.minute, units // per_s, units % per_s


def signal_strength_index(cn0_dbhz):
    """RINEX signal strength index 1..9 from C/N0: 1 below 12 dB-Hz, then one step per 6 dB,
    9 at 54 dB-Hz and above (RINEX 3.04 5.7, Table 7); 0 (blank) where unknown."""
    c = np.asarray(cn0_dbhz, dtype=float)
    ssi = np.clip(np.floor(c / 6.0), 1, 9)
    return np.where(np.isfinite(c), ssi, 0).astype(int)


def _obs_types(ds: xr.Dataset) -> dict[str, list[tuple[str, str, str]]]:
    """Per system: (RINEX type, dataset variable, signal key) of every observable written."""
    from .observables import SIGNALS
    types: dict[str, list] = {}
    for key in ds["signal"].values.astype(str):
        s = SIGNALS[key]
        for letter, var in KINDS:
            types.setdefault(s.system, []).append((f"{letter}{s.code}", var, key))
    return types


def to_obs_dataset(ds: xr.Dataset) -> xr.Dataset:
    """The observables as :func:`gnss.read_obs` returns a file's (epoch, sv) variables named by
    RINEX type: what :func:`write_obs` writes, unrounded (for :func:`gnss.solve` without a file)."""
    types = _obs_types(ds)
    sv = np.asarray(ds["sv"].values).astype(str)
    sys_of = np.array([s[:1] for s in sv])
    out = {}
    for x, items in types.items():
        for code, var, key in items:
            col = np.where(sys_of == x, 1.0, np.nan)
            values = np.asarray(ds[var].sel(signal=key).values, dtype=float) * col[None, :]
            if code in out:
                values = np.where(np.isnan(values), out[code][1], values)
            out[code] = (("epoch", "sv"), values)
    return xr.Dataset(out, coords={"epoch": ds["epoch"].values, "sv": ds["sv"].values})


def write_obs(ds: xr.Dataset, path, *, marker_name="HIFI", approx_position_ecef=(0.0, 0.0, 0.0),
              receiver_type="hifi simulated", antenna_type="hifi patch", program="hifi",
              glonass_channels=None) -> Path:
    """Write the observables ``ds`` (:func:`gnss.observables.model_observables`) as RINEX 3.04.

    Parameters
    ----------
    ds : xarray.Dataset
        (epoch, sv, signal) ``code``, ``phase``, ``doppler``, ``cn0``, ``lli``; epochs are the
        receiver's time tags (GPST), written rounded to 0.1 us (:func:`round_time_tag`, then
        split into calendar fields: :func:`split_time_tag`).
    path : path-like
        File to write; written to a temporary name and renamed, so a failure leaves nothing
        half-written.
    glonass_channels : mapping of str to int, optional
        FDMA channel of each GLONASS satellite ("R07": -4), written as the header's
        ``GLONASS SLOT / FRQ #`` records (RINEX 3.04 requires them in a file with GLONASS).

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    types = _obs_types(ds)
    systems = [x for x in ("G", "R", "E", "C") if x in types]
    t = np.asarray(ds["epoch"].values, dtype="datetime64[ns]")
    if t.size == 0:
        raise ValueError(f"{path}: no epochs to write")
    sv = np.asarray(ds["sv"].values).astype(str)
    sig_index = {k: i for i, k in enumerate(ds["signal"].values.astype(str))}
    data = {var: np.asarray(ds[var].values, dtype=float) for _, var in KINDS}
    lli = np.asarray(ds["lli"].values, dtype=int)
    ssi = signal_strength_index(data["cn0"])
    lines = [_label(f"{3.04:9.2f}{'':11}{'OBSERVATION DATA':<20}{'M':<20}", "RINEX VERSION / TYPE"),
             _label(f"{program:<20}{'hifi':<20}{datetime.now(timezone.utc).strftime('%Y%m%d %H%M%S UTC'):<20}",
                    "PGM / RUN BY / DATE"),
             _label("simulated by hifi (gnss.observables); not a real receiver", "COMMENT"),
             _label(marker_name, "MARKER NAME"),
             _label("NON_GEODETIC", "MARKER TYPE"),
             _label(f"{'hifi':<20}{'hifi':<40}", "OBSERVER / AGENCY"),
             _label(f"{'0':<20}{receiver_type:<20}{'0':<20}", "REC # / TYPE / VERS"),
             _label(f"{'0':<20}{antenna_type:<20}", "ANT # / TYPE"),
             _label("".join(f"{v:14.4f}" for v in approx_position_ecef), "APPROX POSITION XYZ"),
             _label(f"{0.0:14.4f}{0.0:14.4f}{0.0:14.4f}", "ANTENNA: DELTA H/E/N")]
    for x in systems:
        codes = [c for c, _, _ in types[x]]
        for k in range(0, len(codes), 13):
            head = f"{x}  {len(codes):3d}" if k == 0 else " " * 6
            lines.append(_label(head + "".join(f" {c}" for c in codes[k:k + 13]), "SYS / # / OBS TYPES"))
    if t.size > 1:
        lines.append(_label(f"{float(np.median(np.diff(t).astype('timedelta64[ns]').astype(float))) * 1e-9:10.3f}",
                            "INTERVAL"))
    y, mo, d, h, mi, s, frac = split_time_tag(t[0])
    lines.append(_label(f"{y:6d}{mo:6d}{d:6d}{h:6d}{mi:6d}{s:5d}.{frac:07d}{'':5}GPS", "TIME OF FIRST OBS"))
    for x in systems:
        for c, _, _ in types[x]:
            if c.startswith("L"):
                lines.append(_label(f"{x} {c} {0.0:8.5f}", "SYS / PHASE SHIFT"))
    if "R" in systems:
        slots = sorted((str(k), int(v)) for k, v in (glonass_channels or {}).items())
        for k in range(0, max(len(slots), 1), 8):
            head = f"{len(slots):3d} " if k == 0 else " " * 4
            lines.append(_label(head + "".join(f"{name:3s} {ch:2d} " for name, ch in slots[k:k + 8]),
                                "GLONASS SLOT / FRQ #"))
        # code-phase biases: not simulated (blank, as RINEX 3.04 allows for unknown values)
        lines.append(_label(" C1C         C1P         C2C         C2P        ", "GLONASS COD/PHS/BIS"))
    lines.append(_label("", "END OF HEADER"))
    sys_of = np.array([s[:1] for s in sv])
    for e in range(t.size):
        present = [j for j in range(sv.size) if sys_of[j] in types
                   and np.any(np.isfinite(data["code"][e, j]) | np.isfinite(data["phase"][e, j]))]
        y, mo, d, h, mi, s, frac = split_time_tag(t[e])
        lines.append(f"> {y:4d} {mo:02d} {d:02d} {h:02d} {mi:02d}{s:3d}.{frac:07d}  0{len(present):3d}")
        for j in present:
            row = [sv[j]]
            for c, var, key in types[sys_of[j]]:
                i = sig_index[key]
                v = data[var][e, j, i]
                if not np.isfinite(v) or abs(v) > F14_MAX:
                    row.append(" " * 16)
                    continue
                flag = str(lli[e, j, i]) if c.startswith("L") and lli[e, j, i] else " "
                s_idx = str(ssi[e, j, i]) if ssi[e, j, i] else " "
                row.append(f"{v:14.3f}{flag}{s_idx}")
            lines.append("".join(row).rstrip())
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_text("\n".join(lines) + "\n", encoding="ascii")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
