"""Compare hifi's single-point fixes with RTKLIB's on the vendored stations.

    python validation/gnss_rtklib.py [--json] [--data-dir DIR]

For every station of tests/data/gnss (observation + navigation files, listed in
:data:`STATIONS`; sources in tests/data/gnss/README.md) this runs, epoch by epoch,

* RTKLIB 2.4.3's single-point positioning, ``pntpos``, through pyrtklib (the Python binding of
  RTKLIB; an independent implementation, the reference one of GNSS single-point positioning):
  ``PMODE_SINGLE``, broadcast ephemerides, broadcast (Klobuchar) ionosphere, Saastamoinen
  troposphere, RTKLIB's own code priority and error model, RAIM FDE on (``posopt[4]``);
* hifi's :func:`gnss.solve` with its RTKLIB-like options: ``weighting="rtklib"``,
  ``tropo_model="saastamoinen_cosz"``, ``relative_humidity=0.7``,
  ``ephemeris_selection="rtklib"``, ``max_gdop=30``, RAIM on;

with the same elevation mask and the same systems, and prints per station and system set a
markdown table: epochs both fixed, the median and 95th percentile of the 3-D, horizontal and
vertical difference hifi - RTKLIB, and each solution's 95 % horizontal / vertical error against
the known station position (real = the header position; hifi and rtklib beside it). The target
is a median 3-D difference below :data:`TARGET_MEDIAN_M` per station. Results and the remaining
differences: validation/gnss.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gnss  # noqa: E402
from gnss import geometry  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO / "tests" / "data" / "gnss"
TARGET_MEDIAN_M = 0.1
"""Largest median 3-D difference hifi - RTKLIB per station accepted [m]."""
RTKLIB_MAX_GDOP = 30.0
"""RTKLIB's ``prcopt_default.maxgdop``: both solvers withhold fixes of larger GDOP [1]."""
ELEVATION_MASK_DEG = 15.0
"""Elevation mask of both solvers [deg] (RTKLIB's ``prcopt_default`` elmin)."""


class Station(NamedTuple):
    """One vendored station: files, antenna height above the marker [m] and the systems solved."""

    name: str
    obs: str
    nav: str
    antenna_height_m: float
    system_sets: tuple[tuple[str, ...], ...]


#: The stations of tests/data/gnss (tests/data/gnss/README.md). 0759's RINEX 3.04 re-layout
#: (0759_v304_*.rnx, 4 epochs, 4 satellites) is the same recording and is not repeated. Antenna
#: heights from the RINEX headers (ANTENNA: DELTA H/E/N); 0759's header gives none.
STATIONS = (
    Station("0759", "07590920.05o", "07590920.05n", 0.0, (("G",),)),
    Station("ESBC00DNK", "ESBC00DNK_R_20201770000_02H_05M_MO.rnx.gz", "ESBC00DNK_R_20201770000_04H_MN.rnx.gz",
            0.216, (("G",), ("G", "E"), ("G", "E", "C"), ("G", "R"), ("G", "E", "C", "R"))),
    Station("NYA100NOR", "NYA100NOR_S_20241240000_02H_05M_MO.rnx.gz", "NYA100NOR_S_20241240000_04H_MN.rnx.gz",
            0.0, (("G",), ("G", "E"), ("G", "E", "C"))),
)


def _import_pyrtklib():
    try:
        import pyrtklib
    except ImportError as exc:     # named optional piece: say how to get it, no fallback
        raise SystemExit("validation/gnss_rtklib.py needs pyrtklib: pip install pyrtklib==0.2.7 "
                         "(or pip install -e .[test])") from exc
    return pyrtklib


def _plain_copy(path: Path, tmp: Path) -> Path:
    """RTKLIB's reader gunzips through a shell command next to the file: hand it a plain copy."""
    if path.suffix != ".gz":
        return path
    out = tmp / path.name[:-3]
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def rtklib_fixes(obs_path: Path, nav_path: Path, systems, elevation_mask_deg: float) -> dict:
    """RTKLIB ``pntpos`` per epoch of a RINEX observation file.

    Returns a dict of ``epoch`` (datetime64[ns] time tags, GPST), ``position_ecef`` (n, 3) [m],
    ``status`` (pntpos's return: 1 fix, 0 none or rejected by its chi-square/GDOP test),
    ``n_sv``, ``codes`` (per epoch, satellite -> RINEX code RTKLIB used, e.g. "1C") and
    ``message`` (pntpos's reason where it gave no fix, e.g. "gdop error nv=9 gdop=34.9").
    """
    rk = _import_pyrtklib()
    mask = {"G": rk.SYS_GPS, "E": rk.SYS_GAL, "C": rk.SYS_CMP, "R": rk.SYS_GLO}
    with tempfile.TemporaryDirectory() as tmp:
        obs, nav, sta = rk.obs_t(), rk.nav_t(), rk.sta_t()
        for p in (obs_path, nav_path):
            if rk.readrnx(str(_plain_copy(Path(p), Path(tmp))), 1, "", obs, nav, sta) <= 0:
                raise SystemExit(f"{p}: RTKLIB readrnx read nothing")
    rk.sortobs(obs)
    rk.uniqnav(nav)
    opt = rk.prcopt_default              # RTKLIB's defaults (err = [100, 0.003, 0.003], maxgdop 30)
    opt.mode = rk.PMODE_SINGLE
    opt.navsys = int(sum(mask[x] for x in systems))
    opt.elmin = float(np.radians(elevation_mask_deg))
    opt.ionoopt = rk.IONOOPT_BRDC
    opt.tropopt = rk.TROPOPT_SAAS
    opt.sateph = rk.EPHOPT_BRDC
    opt.posopt[4] = 1                      # RAIM FDE, as gnss.solve's raim=True
    data, n = obs.data, obs.n
    epochs, pos, status, n_sv, codes, message = [], [], [], [], [], []
    i = 0
    while i < n:
        t0 = data[i].time
        j = i
        while j < n and rk.timediff(data[j].time, t0) == 0.0:
            j += 1
        sol = rk.sol_t()
        azel = rk.Arr1Ddouble(2 * (j - i))
        ssat = rk.Arr1Dssat_t(rk.MAXSAT)
        msg = rk.Arr1Dchar(256)
        st = rk.pntpos(data[i:j].ptr, j - i, nav, opt, sol, azel, ssat.ptr, msg)
        epochs.append(np.datetime64(int(t0.time), "s").astype("datetime64[ns]")
                      + np.timedelta64(int(round(t0.sec * 1e9)), "ns"))
        pos.append([sol.rr[k] for k in range(3)] if sol.stat else [np.nan] * 3)
        status.append(int(st))
        message.append(msg[0] if not st else "")
        n_sv.append(int(sol.ns))
        used = {}
        for k in range(i, j):
            d = data[k]
            sat = d.sat
            if ssat[sat - 1].vs:
                ident = rk.Arr1Dchar(8)
                rk.satno2id(sat, ident)
                used[ident[0]] = rk.code2obs(d.code[0])
        codes.append(used)
        i = j
    return {"epoch": np.array(epochs), "position_ecef": np.array(pos, dtype=float), "status": np.array(status),
            "n_sv": np.array(n_sv), "codes": codes, "message": message}


def hifi_fixes(obs_path: Path, nav_path: Path, systems, elevation_mask_deg: float):
    """:func:`gnss.solve` with its RTKLIB-like options on the same files."""
    obs = gnss.read_obs(obs_path)
    nav = gnss.read_nav(nav_path)
    return obs, gnss.solve(obs, nav, constellations=tuple(systems), elevation_mask_deg=elevation_mask_deg,
                           weighting="rtklib", tropo_model="saastamoinen_cosz", relative_humidity=0.7, raim=True,
                           ephemeris_selection="rtklib", max_gdop=RTKLIB_MAX_GDOP)


def _p(x, q):
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.percentile(x, q)) if x.size else float("nan")


def compare(station: Station, systems, data_dir: Path, elevation_mask_deg=ELEVATION_MASK_DEG) -> dict:
    """Both solvers on one station and system set; differences and errors against the truth."""
    obs_path, nav_path = data_dir / station.obs, data_dir / station.nav
    obs, sol = hifi_fixes(obs_path, nav_path, systems, elevation_mask_deg)
    rtk = rtklib_fixes(obs_path, nav_path, systems, elevation_mask_deg)
    t = sol["epoch"].values.astype("datetime64[ns]")
    idx = {v: k for k, v in enumerate(rtk["epoch"])}
    rows = np.array([idx.get(v, -1) for v in t])
    x_rtk = np.where((rows >= 0)[:, None], rtk["position_ecef"][np.maximum(rows, 0)], np.nan)
    x_hifi = sol["position_ecef"].values
    header = np.asarray(obs["approx_position_ecef"].values, dtype=float)
    g = geometry.ecef_to_geodetic(header[None])
    lat, lon = np.degrees(g.latitude_rad[0]), np.degrees(g.longitude_rad[0])
    truth = geometry.enu_to_ecef(np.array([[0.0, 0.0, station.antenna_height_m]]), lat, lon, float(g.height_m[0]))[0]
    rot = geometry.enu_rotation(g.latitude_rad, g.longitude_rad)[0]
    both = np.all(np.isfinite(x_hifi), axis=1) & np.all(np.isfinite(x_rtk), axis=1)
    d = (x_hifi - x_rtk) @ rot.T
    e_h = (x_hifi - truth) @ rot.T
    e_r = (x_rtk - truth) @ rot.T
    d3, dh, dv = np.linalg.norm(d, axis=1), np.hypot(d[:, 0], d[:, 1]), np.abs(d[:, 2])
    # which code each solver took per satellite (RTKLIB writes "1C", hifi "C1C"; RINEX 2 "C1" = "1C")
    code_diff = 0
    code_total = 0
    sv = np.asarray(sol["sv"].values).astype(str)
    used = sol["used"].values
    code_used = sol["code_used"].values
    for k, r in enumerate(rows):
        if r < 0:
            continue
        for s, c in rtk["codes"][r].items():
            m = np.flatnonzero(sv == s)
            if m.size and used[k, m[0]]:
                code_total += 1
                mine = str(code_used[k, m[0]])
                mine = {"C1": "C1C", "P1": "C1W", "P2": "C2W", "C2": "C2C"}.get(mine, mine)
                code_diff += mine[1:] != c
    sv_diff = int(sum(abs(int(sol["n_sv_used"].values[k]) - int(rtk["n_sv"][r])) > 0
                      for k, r in enumerate(rows) if r >= 0 and both[k]))
    return {
        "station": station.name, "systems": "+".join(systems), "epochs": int(t.size), "epochs_both": int(both.sum()),
        "hifi_fixes": int(np.all(np.isfinite(x_hifi), axis=1).sum()),
        "epochs_one_only": int((np.all(np.isfinite(x_hifi), axis=1) != np.all(np.isfinite(x_rtk), axis=1)).sum()),
        "rtklib_fixes": int((rtk["status"] == 1).sum()),
        "median_3d_m": _p(d3[both], 50), "p95_3d_m": _p(d3[both], 95),
        "median_h_m": _p(dh[both], 50), "p95_h_m": _p(dh[both], 95),
        "median_v_m": _p(dv[both], 50), "p95_v_m": _p(dv[both], 95),
        "max_3d_m": float(np.max(d3[both])) if both.any() else float("nan"),
        "hifi_h95_m": _p(np.hypot(e_h[both, 0], e_h[both, 1]), 95), "hifi_v95_m": _p(np.abs(e_h[both, 2]), 95),
        "rtklib_h95_m": _p(np.hypot(e_r[both, 0], e_r[both, 1]), 95), "rtklib_v95_m": _p(np.abs(e_r[both, 2]), 95),
        "epochs_different_sv_count": sv_diff, "sv_epochs_different_code": int(code_diff),
        "sv_epochs_compared": int(code_total), "hifi_observables": sol.attrs["observable"],
        "rtklib_rejected": sorted({m.split(" nv=")[0] for m in rtk["message"] if m}),
        "rtklib_rejected_epochs": int(sum(bool(m) for m in rtk["message"])),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help=f"station files (default: {DEFAULT_DATA_DIR})")
    ap.add_argument("--elevation-mask-deg", type=float, default=ELEVATION_MASK_DEG, help="mask of both solvers [deg]")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    results = [compare(st, systems, args.data_dir, args.elevation_mask_deg)
               for st in STATIONS for systems in st.system_sets]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"hifi (weighting='rtklib', tropo 'saastamoinen_cosz', RH 0.7) - RTKLIB 2.4.3 pntpos (pyrtklib), "
          f"mask {args.elevation_mask_deg:g} deg; target median 3-D < {TARGET_MEDIAN_M:g} m\n")
    print("| station | systems | epochs (both fixed) | median 3-D / H / V [m] | 95 % 3-D / H / V [m] | max 3-D [m] "
          "| sat-epochs other code | RTKLIB no fix (why) | fixed by one only |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        why = f"{r['rtklib_rejected_epochs']} ({', '.join(r['rtklib_rejected'])})" if r["rtklib_rejected"] else "0"
        print(f"| {r['station']} | {r['systems']} | {r['epochs']} ({r['epochs_both']}) | "
              f"{r['median_3d_m']:.4f} / {r['median_h_m']:.4f} / {r['median_v_m']:.4f} | "
              f"{r['p95_3d_m']:.4f} / {r['p95_h_m']:.4f} / {r['p95_v_m']:.4f} | {r['max_3d_m']:.4f} | "
              f"{r['sv_epochs_different_code']} of {r['sv_epochs_compared']} | {why} | {r['epochs_one_only']} |")
    print("\nError against the known station position (real = header position + antenna height), epochs both fixed\n")
    print("| station | systems | real [m] | hifi H95 / V95 [m] | rtklib H95 / V95 [m] | ratio H95 / V95 hifi/rtklib |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['station']} | {r['systems']} | 0 | {r['hifi_h95_m']:.3f} / {r['hifi_v95_m']:.3f} | "
              f"{r['rtklib_h95_m']:.3f} / {r['rtklib_v95_m']:.3f} | "
              f"{r['hifi_h95_m'] / r['rtklib_h95_m']:.4f} / {r['hifi_v95_m'] / r['rtklib_v95_m']:.4f} |")
    bad = [r for r in results if not r["median_3d_m"] < TARGET_MEDIAN_M]
    for r in bad:
        print(f"\nNOT MET: {r['station']} {r['systems']}: median 3-D {r['median_3d_m']:.3f} m")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
