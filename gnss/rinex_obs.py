"""RINEX 2.10/2.11 and 3.0x observation files: :func:`read_obs`.

Times are returned as numpy.datetime64[ns] on the GPS time scale.  The files' text (decompression,
header records, fixed-column numbers, epochs) is read by :mod:`gnss.rinex_text`.

References
----------
.. [1] W. Gurtner, "RINEX: The Receiver Independent Exchange Format Version 2.10", 2002.
.. [2] IGS/RTCM RINEX WG, "RINEX The Receiver Independent Exchange Format Version 3.04", 2018.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from . import gpstime
from .rinex_text import epoch_ns, fixed_fields, read_header, read_text, rinex_version, year4


_UNITS_BY_TYPE = {"C": ("m", "pseudorange"), "P": ("m", "P-code pseudorange"), "L": ("cycle", "carrier phase"),
                  "D": ("Hz", "Doppler"), "S": ("dB-Hz", "signal strength")}


def _obs_types(header: dict[str, list[str]], version: float) -> dict[str, list[str]]:
    """Observation codes per satellite system."""
    types: dict[str, list[str]] = {}
    if int(version) == 2:
        recs = header.get("# / TYPES OF OBSERV", [])
        n = int(recs[0][:6])
        codes: list[str] = []
        for rec in recs:
            codes.extend(rec[6:60].split())
        codes = codes[:n]
        for sys in "GRESJC":
            types[sys] = codes
        return types
    current = None
    for rec in header.get("SYS / # / OBS TYPES", []):
        if rec[0] != " ":
            current = rec[0]
            types[current] = []
        types[current].extend(rec[7:60].split())
    return types


def _truncated(path, line_index: int, nsat: int) -> str:
    return (f"{path}: the file ends inside the epoch record at line {line_index + 1} ({nsat} satellites "
            "announced); truncated file?")


def read_obs(path) -> xr.Dataset:
    """Read a RINEX 2 or 3 observation file into a Dataset (epoch, sv).

    Parameters
    ----------
    path : str or path-like
        RINEX 2.10/2.11 (``*.05o``) or 3.0x observation file, plain or compressed, Hatanaka
        (``*.05d``, ``*.crx``) included (see :func:`gnss.rinex_text.read_text`).

    Returns
    -------
    xarray.Dataset
        Coordinates ``epoch`` (datetime64[ns], GPST) and ``sv`` ("G03", "R07", ...); one data
        variable per observation code as written in the file (``C1``, ``L1``, ``P2`` in RINEX 2;
        ``C1C``, ``L1C``, ... in RINEX 3), NaN where not observed; ``epoch_flag``;
        ``approx_position_ecef`` (xyz) from the header when present.

    Raises
    ------
    ValueError
        If the file is not a RINEX 2/3 observation file, is compressed and cannot be
        decompressed, or ends inside an epoch record (truncated).

    Notes
    -----
    Event epochs (flag > 1) are skipped together with their special records.  Epoch times are
    parsed exactly to the nanosecond.  A file whose TIME OF FIRST OBS names GLONASS time (UTC
    based) is converted to GPST with the leap-second table.
    """
    path = Path(path)
    lines = read_text(path).splitlines()
    header, start = read_header(lines, path)
    version = rinex_version(header, path)
    if int(version) not in (2, 3) or header["RINEX VERSION / TYPE"][0][20:21].upper() != "O":
        raise ValueError(f"{path}: not a RINEX 2/3 observation file (version {version!r})")
    types = _obs_types(header, version)
    all_codes: list[str] = []
    for codes in types.values():
        for c in codes:
            if c not in all_codes:
                all_codes.append(c)

    epochs: list[np.datetime64] = []
    flags: list[int] = []
    values: dict[tuple[int, str, str], float] = {}
    sv_set: dict[str, None] = {}
    i = start
    n_lines = len(lines)
    v2 = int(version) == 2
    while i < n_lines:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        epoch_line = i
        if v2:
            flag = int(line[26:29] or 0)
            nsat = int(line[29:32])
            if flag > 1:
                i += 1 + nsat
                continue
            t = epoch_ns(year4(int(line[1:3])), int(line[4:6]), int(line[7:9]), int(line[10:12]),
                          int(line[13:15]), line[15:26])
            sats: list[str] = []
            j = i
            while len(sats) < nsat:
                if j >= n_lines:
                    raise ValueError(_truncated(path, epoch_line, nsat))
                chunk = lines[j][32:68]
                for k in range(0, len(chunk.rstrip()), 3):
                    s = chunk[k:k + 3]
                    if s.strip():
                        sats.append((s[0] if s[0] != " " else "G") + f"{int(s[1:3]):02d}")
                j += 1
            i = j
            codes_n = len(all_codes)
            lines_per_sat = (codes_n + 4) // 5
            if i + len(sats) * lines_per_sat > n_lines:
                raise ValueError(_truncated(path, epoch_line, nsat))
            e = len(epochs)
            for s in sats:
                text = "".join(lines[i + k].ljust(80) for k in range(lines_per_sat)) if lines_per_sat else ""
                # each line holds 5 fields of 16 characters; rebuild a continuous field string
                fields = []
                for k in range(lines_per_sat):
                    seg = text[k * 80:(k + 1) * 80]
                    fields.extend(seg[m * 16:(m + 1) * 16] for m in range(5))
                for c, f in zip(all_codes, fields):
                    v = f[:14].strip()
                    if v:
                        values[(e, s, c)] = float(v)
                sv_set[s] = None
                i += lines_per_sat
        else:
            if line[0] != ">":
                i += 1
                continue
            flag = int(line[31:32] or 0)
            nsat = int(line[32:35])
            if flag > 1:
                i += 1 + nsat
                continue
            t = epoch_ns(int(line[2:6]), int(line[7:9]), int(line[10:12]), int(line[13:15]),
                          int(line[16:18]), line[18:29])
            if i + nsat >= n_lines:
                raise ValueError(_truncated(path, epoch_line, nsat))
            e = len(epochs)
            for k in range(1, nsat + 1):
                rec = lines[i + k]
                s = rec[0] + f"{int(rec[1:3]):02d}"
                for m, c in enumerate(types.get(rec[0], [])):
                    v = rec[3 + m * 16: 3 + m * 16 + 14].strip()
                    if v:
                        values[(e, s, c)] = float(v)
                sv_set[s] = None
            i += 1 + nsat
        epochs.append(t)
        flags.append(flag)

    svs = sorted(sv_set)
    sv_index = {s: k for k, s in enumerate(svs)}
    code_index = {c: k for k, c in enumerate(all_codes)}
    cube = np.full((len(all_codes), len(epochs), len(svs)), np.nan)
    for (e, s, c), v in values.items():
        cube[code_index[c], e, sv_index[s]] = v
    epoch_arr = np.array(epochs, dtype="datetime64[ns]")
    first = header.get("TIME OF FIRST OBS", [""])[0]
    time_system = first[48:51].strip() or "GPS"
    if time_system == "GLO":
        epoch_arr = gpstime.utc_to_gpst(epoch_arr)
    ds = xr.Dataset(coords={
        "epoch": ("epoch", epoch_arr, {"long_name": "receiver time of reception (GPST)"}),
        "sv": ("sv", np.array(svs, dtype=object), {"long_name": "satellite identifier", "units": "1"}),
    })
    for c, k in code_index.items():
        units, long_name = _UNITS_BY_TYPE.get(c[0], ("1", "observation"))
        ds[c] = (("epoch", "sv"), cube[k], {"units": units, "long_name": f"{long_name} {c}"})
    ds["epoch_flag"] = ("epoch", np.array(flags, dtype=np.int8), {"units": "1", "long_name": "RINEX epoch flag"})
    approx = header.get("APPROX POSITION XYZ")
    if approx:
        ds["approx_position_ecef"] = ("xyz", np.array(fixed_fields(approx[0], 0, 3, 14)),
                                      {"units": "m", "long_name": "approximate marker position from the header, ECEF"})
        ds = ds.assign_coords(xyz=["x", "y", "z"])
    marker = header.get("MARKER NAME", [""])[0][:60].strip()
    ds.attrs.update({"rinex_version": version, "source_file": str(path), "marker_name": marker,
                     "time_system": "GPST"})
    return ds
