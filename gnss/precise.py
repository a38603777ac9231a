"""Readers for IGS precise products: SP3-c/d orbits and RINEX clock files (for validation).

References
----------
.. [1] S. Hilla, "The Extended Standard Product 3 Orbit Format (SP3-c)", NGS, 2010.
.. [2] W. Gurtner, J. Ray, "RINEX Extensions to Handle Clock Information, Version 3.00", 2010.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from .rinex import epoch_ns, read_text

SP3_BAD_CLOCK_US = 999999.0
"""SP3 marks a missing clock with 999999.999999 [us]; any value at least this is missing."""


def read_sp3(path) -> xr.Dataset:
    """Read an SP3-c or SP3-d precise orbit file (position records only).

    Parameters
    ----------
    path : str or path-like
        SP3 file, plain or compressed (gzip, .Z, zip, bzip2; see :func:`gnss.rinex.read_text`).

    Returns
    -------
    xarray.Dataset
        ``sv_position_ecef`` (epoch, sv, xyz) [m] and ``sv_clock_bias`` (epoch, sv) [s], NaN where
        missing (zero positions, 999999 clocks).  Epochs in the file's time system, given in
        ``attrs["time_system"]`` (GPS for IGS products).

    Notes
    -----
    IGS final orbits refer to the satellite centre of mass and the ITRF realisation named in the
    header (IGS05 here); the clocks exclude the periodic relativistic correction.
    """
    path = Path(path)
    epochs, recs = [], {}
    time_system = "GPS"
    for line in read_text(path).splitlines():
        if line.startswith("%c") and not epochs and line[9:12].strip() and line[9:12] != "ccc":
            time_system = line[9:12].strip()
        elif line.startswith("*  "):
            f = line[3:].split()
            epochs.append(epoch_ns(int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[4]), f[5]))
        elif line.startswith("P") and epochs:
            sv = line[1:4].replace(" ", "0")
            x, y, z = (float(line[4 + 14 * k:18 + 14 * k]) for k in range(3))
            clk = float(line[46:60]) if line[46:60].strip() else SP3_BAD_CLOCK_US
            recs[(len(epochs) - 1, sv)] = (x, y, z, clk)
        elif line.startswith("EOF"):
            break
    svs = sorted({s for _, s in recs})
    idx = {s: k for k, s in enumerate(svs)}
    pos = np.full((len(epochs), len(svs), 3), np.nan)
    clk = np.full((len(epochs), len(svs)), np.nan)
    for (e, s), (x, y, z, c) in recs.items():
        if (x, y, z) != (0.0, 0.0, 0.0):
            pos[e, idx[s]] = (x * 1e3, y * 1e3, z * 1e3)
        if abs(c) < SP3_BAD_CLOCK_US:
            clk[e, idx[s]] = c * 1e-6
    return xr.Dataset(
        {"sv_position_ecef": (("epoch", "sv", "xyz"), pos, {"units": "m", "long_name": "precise satellite centre-of-mass position, ECEF"}),
         "sv_clock_bias": (("epoch", "sv"), clk, {"units": "s", "long_name": "precise satellite clock offset"})},
        coords={"epoch": ("epoch", np.array(epochs, dtype="datetime64[ns]"), {"long_name": f"epoch ({time_system} time)"}),
                "sv": ("sv", np.array(svs, dtype=object)), "xyz": ("xyz", np.array(["x", "y", "z"]))},
        attrs={"time_system": time_system, "source_file": str(path)})


def read_clk(path) -> xr.Dataset:
    """Read satellite clocks (``AS`` records) from a RINEX clock file.

    Parameters
    ----------
    path : str or path-like
        RINEX clock file, version 2 or 3.00, plain or compressed (see :func:`gnss.rinex.read_text`).

    Returns
    -------
    xarray.Dataset
        ``sv_clock_bias`` (epoch, sv) [s], NaN where absent.
    """
    path = Path(path)
    text = read_text(path).splitlines()
    start = next((i for i, line in enumerate(text) if line[60:73] == "END OF HEADER"), None)
    if start is None:
        raise ValueError(f"{path}: no 'END OF HEADER' record; not a RINEX clock file")
    start += 1
    values = {}
    for line in text[start:]:
        if not line.startswith("AS "):
            continue
        f = line.split()
        t = epoch_ns(int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]), f[7])
        values[(t, f[1])] = float(f[9].replace("D", "E"))
    epochs = sorted({t for t, _ in values})
    svs = sorted({s for _, s in values})
    ei = {t: k for k, t in enumerate(epochs)}
    si = {s: k for k, s in enumerate(svs)}
    clk = np.full((len(epochs), len(svs)), np.nan)
    for (t, s), v in values.items():
        clk[ei[t], si[s]] = v
    return xr.Dataset(
        {"sv_clock_bias": (("epoch", "sv"), clk, {"units": "s", "long_name": "precise satellite clock offset"})},
        coords={"epoch": ("epoch", np.array(epochs, dtype="datetime64[ns]"), {"long_name": "epoch (GPS time)"}),
                "sv": ("sv", np.array(svs, dtype=object))},
        attrs={"source_file": str(path)})
