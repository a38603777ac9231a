"""Validate the gnss core against real data: precise orbits/clocks and a real station.

    python validation/gnss_station.py --precise [--json]

reads RTKLIB's files vendored in tests/data/gnss (station 0759: 07590920.05o/.05n; with
--precise also igs15904.sp3/.clk and brdc1820.10n; sources in tests/data/gnss/README.md). Other
files: --obs, --nav, --sp3, --clk, --precise-nav, or another folder with --data-dir (default
tests/data/gnss when present, else ../shared/data/gnss).

Prints one table per check (see validation/gnss.md for the figures and their reading):

1. broadcast vs precise orbits and clocks (needs --sp3 [--clk]; the broadcast file is
   --precise-nav, default --nav, and must cover the SP3 day);
2. station: modelled minus observed C1 after removing one receiver clock per epoch;
3. station: single-point solution against the header position;
4. station: predicted visible satellites against the satellites logged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gnss  # noqa: E402
from gnss import gpstime  # noqa: E402
from gnss.constants import SPEED_OF_LIGHT  # noqa: E402


REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = next((d for d in (REPO / "tests" / "data" / "gnss", REPO.parent / "shared" / "data" / "gnss")
                         if d.is_dir()), REPO / "tests" / "data" / "gnss")
"""Folder of the default files: the vendored RTKLIB files when present, else ../shared/data/gnss."""

GROSS_ORBIT_ERROR_M = 100.0
"""Broadcast-minus-precise 3D differences above this [m] are reported as bad records, not averaged."""


def _rms(x) -> float:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.sqrt(np.mean(x * x))) if x.size else float("nan")


def orbit_clock_comparison(nav, sp3, clk=None) -> dict:
    """Broadcast minus precise satellite positions (3D, radial/along/cross) and clocks.

    Positions: broadcast ephemerides give the antenna phase centre (APC), IGS finals the centre
    of mass (CoM); no APC->CoM offset is applied, so the radial component carries that offset
    (the broadcast-vs-precise SISRE literature, e.g. Montenbruck et al. 2015, applies it; its
    size is below ~1 m for Block IIR/IIR-M and up to ~2-3 m along the nadir axis for IIA).
    Clocks: broadcast af0 + af1 dt + af2 dt^2 (no relativistic term, no TGD, like the IGS
    clocks), minus the precise clock, minus the mean difference over satellites per epoch.
    """
    svs = [s for s in np.asarray(sp3["sv"].values).astype(str) if s.startswith("G")]
    t = sp3["epoch"].values
    st = gnss.sv_states(nav, svs, t)
    ref = sp3["sv_position_ecef"].sel(sv=svs).values
    pos = st["sv_position_ecef"].values
    vel = st["sv_velocity_ecef"].values
    d = pos - ref
    r_hat = pos / np.linalg.norm(pos, axis=-1, keepdims=True)
    c_vec = np.cross(pos, vel)
    c_hat = c_vec / np.linalg.norm(c_vec, axis=-1, keepdims=True)
    a_hat = np.cross(c_hat, r_hat)
    radial, along, cross = (np.sum(d * u, axis=-1) for u in (r_hat, a_hat, c_hat))
    err3d = np.linalg.norm(d, axis=-1)
    # a broadcast record marked healthy can still be wrong (brdc1820.10n holds one for G01 at
    # 06:00 with another satellite's a and e); such gross errors are counted and excluded
    gross = err3d > GROSS_ORBIT_ERROR_M
    gross_svs = sorted({str(svs[k]) for k in np.flatnonzero(gross.any(axis=0))})
    err3d = np.where(gross, np.nan, err3d)
    radial, along, cross = (np.where(gross, np.nan, x) for x in (radial, along, cross))
    per_sv = {s: _rms(err3d[:, k]) for k, s in enumerate(svs) if np.isfinite(err3d[:, k]).any()}
    out = {
        "n_epochs": int(t.size), "n_pairs": int(np.isfinite(err3d).sum()),
        "rms_3d_m": _rms(err3d), "rms_radial_m": _rms(radial), "rms_along_m": _rms(along),
        "rms_cross_m": _rms(cross), "mean_radial_m": float(np.nanmean(radial)),
        "n_gross_excluded": int(gross.sum()), "gross_svs": gross_svs,
        "max_3d_m": float(np.nanmax(err3d)) if np.isfinite(err3d).any() else float("nan"),
        "per_sv_rms_3d_m": per_sv,
    }
    clock_src = clk if clk is not None else sp3
    csvs = [s for s in svs if s in set(np.asarray(clock_src["sv"].values).astype(str))]
    tc = clock_src["epoch"].values
    stc = gnss.sv_states(nav, csvs, tc)
    rec = stc["ephemeris_record"].values
    safe = np.where(rec >= 0, rec, 0)
    g = gpstime.from_datetime64(tc)
    dt = (g.week[:, None] - nav["toc_week"].values[safe]) * 604800.0 + (g.sow[:, None] - nav["toc_sow"].values[safe])
    poly = nav["af0"].values[safe] + dt * (nav["af1"].values[safe] + dt * nav["af2"].values[safe])
    poly = np.where(rec >= 0, poly, np.nan)
    diff = (poly - clock_src["sv_clock_bias"].sel(sv=csvs).values) * SPEED_OF_LIGHT
    diff = diff - np.nanmean(diff, axis=1, keepdims=True)
    out.update({"clock_source": "clk" if clk is not None else "sp3", "clock_epochs": int(tc.size),
                "clock_rms_m": _rms(diff), "clock_rms_ns": _rms(diff) / SPEED_OF_LIGHT * 1e9,
                "clock_per_sv_rms_m": {s: _rms(diff[:, k]) for k, s in enumerate(csvs) if np.isfinite(diff[:, k]).any()}})
    return out


def station_checks(obs, nav, elevation_mask_deg=10.0, visibility_mask_deg=5.0) -> dict:
    """Residuals, single-point solution and visibility for a station with a header position."""
    header = obs["approx_position_ecef"].values
    sol = gnss.solve(obs, nav, elevation_mask_deg=elevation_mask_deg, true_position_ecef=header)
    err = sol["position_error_enu"].values
    horiz = np.hypot(err[:, 0], err[:, 1])
    gps = [s for s in np.asarray(obs["sv"].values).astype(str) if s.startswith("G")]
    c1 = obs[sol.attrs["observable"]].sel(sv=gps).values
    # model at the true reception time = time tag - receiver clock offset (from the fix)
    t_true = obs["epoch"].values - np.round(sol["clock_bias"].values / SPEED_OF_LIGHT * 1e9).astype(np.int64).astype("timedelta64[ns]")
    model = gnss.model_pseudoranges(nav, header, t_true, gps, elevation_mask_deg=elevation_mask_deg,
                                    receiver_clock_model="none")
    m = model["pseudorange"].values
    res = c1 - m
    res = res - np.nanmean(res, axis=1, keepdims=True)
    vis = gnss.model_pseudoranges(nav, header, obs["epoch"].values, np.arange(1, 33),
                                  elevation_mask_deg=visibility_mask_deg)
    predicted = vis["visible"].values
    logged = np.zeros_like(predicted)
    vis_svs = np.asarray(vis["sv"].values).astype(str)
    idx = {s: k for k, s in enumerate(vis_svs)}
    for k, s in enumerate(gps):
        logged[:, idx[s]] = np.isfinite(c1[:, k])
    mismatch = {s: {"predicted_not_logged": int((predicted[:, k] & ~logged[:, k]).sum()),
                    "logged_not_predicted": int((logged[:, k] & ~predicted[:, k]).sum()),
                    "max_elevation_deg": float(np.degrees(np.nanmax(vis["elevation"].values[:, k])))}
                for k, s in enumerate(vis_svs) if np.any(predicted[:, k] != logged[:, k])}
    return {
        "n_epochs": int(obs.sizes["epoch"]),
        "residual_rms_m": _rms(res), "residual_max_abs_m": float(np.nanmax(np.abs(res))),
        "residual_per_sv_rms_m": {s: _rms(res[:, k]) for k, s in enumerate(gps) if np.isfinite(res[:, k]).any()},
        "solution_h95_m": float(np.percentile(horiz, 95)), "solution_v95_m": float(np.percentile(np.abs(err[:, 2]), 95)),
        "solution_mean_enu_m": [float(v) for v in np.mean(err, axis=0)],
        "solution_rms_h_m": _rms(horiz), "solution_rms_v_m": _rms(err[:, 2]),
        "mean_n_sv_used": float(np.mean(sol["n_sv_used"].values)), "mean_pdop": float(np.nanmean(sol["pdop"].values)),
        "visibility_mask_deg": visibility_mask_deg,
        "visible_predicted_mean": float(predicted.sum(axis=1).mean()), "logged_mean": float(logged.sum(axis=1).mean()),
        "epochs_sets_equal": int(np.all(predicted == logged, axis=1).sum()),
        "predicted_not_logged": int((predicted & ~logged).sum()), "logged_not_predicted": int((logged & ~predicted).sum()),
        "visibility_mismatch_per_sv": mismatch,
        "min_elevation_logged_deg": float(np.degrees(np.nanmin(np.where(logged, vis["elevation"].values, np.nan)))),
    }


#: Multi-GNSS station: ESBC00DNK (Esbjerg, Denmark; Septentrio PolarX5, ASH701945E_M
#: SCIS, antenna 0.216 m above the marker), 2020-06-25 00:00-02:00 every 5 min, and the mixed
#: broadcast file of the same day (tests/data/gnss/README.md).
MULTI_OBS = "ESBC00DNK_R_20201770000_02H_05M_MO.rnx.gz"
MULTI_NAV = "ESBC00DNK_R_20201770000_04H_MN.rnx.gz"
#: Acceptance targets: per-constellation residual RMS, combined fix 95 % horizontal.
MULTI_RESIDUAL_TARGET_M = 1.5
MULTI_H95_TARGET_M = 2.0


def multi_gnss_station(obs, nav, *, antenna_height_m=0.0, elevation_mask_deg=15.0) -> dict:
    """Per constellation (GPS C1C, Galileo C1C, BeiDou C2I) at a station with a known position:
    modelled minus observed code RMS after one receiver clock per system and epoch (above
    ``elevation_mask_deg``), and the single-point fixes of each system alone and of all three
    (one clock each), 95 % horizontal and vertical against the header position raised by the
    antenna height (the antenna reference point; the phase centres are ~0.1 m higher still)."""
    from gnss import geometry
    header = np.asarray(obs["approx_position_ecef"].values, dtype=float)
    g = geometry.ecef_to_geodetic(header[None])
    truth = geometry.enu_to_ecef(np.array([[0.0, 0.0, antenna_height_m]]), np.degrees(g.latitude_rad[0]),
                                 np.degrees(g.longitude_rad[0]), float(g.height_m[0]))[0]
    out = {"fixes": {}, "residual_rms_m": {}, "n_residuals": {}}
    present = set(np.asarray(nav["system"].values).astype(str))
    systems = tuple(x for x in ("G", "E", "C", "R") if x in present)
    combos = [(x,) for x in systems] + [("G", "E", "C")]
    if "R" in systems:
        combos.append(("G", "E", "C", "R"))
    for cons in combos:
        sol = gnss.solve(obs, nav, constellations=cons, true_position_ecef=truth, elevation_mask_deg=elevation_mask_deg)
        e = sol["position_error_enu"].values
        ok = np.all(np.isfinite(e), axis=1)
        out["fixes"]["+".join(cons)] = {
            "h95_m": float(np.percentile(np.hypot(e[ok, 0], e[ok, 1]), 95)),
            "v95_m": float(np.percentile(np.abs(e[ok, 2]), 95)),
            "n_epochs": int(ok.sum()), "mean_n_sv": float(np.mean(sol["n_sv_used"].values[ok])),
            "observable": sol.attrs["observable"]}
        if cons == ("G", "E", "C"):
            combined = sol
    # residuals at the truth: model at the true reception time (time tag - the combined fix's
    # GPS clock), one clock per system and epoch removed (the median of that system's residuals)
    sv_all = np.asarray(obs["sv"].values).astype(str)
    sv = sv_all[np.isin(np.array([x[:1] for x in sv_all]), systems)]
    b = np.nan_to_num(combined["clock_bias_system"].values[:, 0])
    t_true = obs["epoch"].values - np.round(b / SPEED_OF_LIGHT * 1e9).astype(np.int64).astype("timedelta64[ns]")
    model = gnss.model_pseudoranges(nav, truth, t_true, list(sv), elevation_mask_deg=elevation_mask_deg,
                                    receiver_clock_model="none", ephemeris_error_model="none")
    # the modelled ionosphere is the L1 Klobuchar delay: scaled to each signal's frequency
    from gnss.solver import SYSTEM_FREQ_HZ, code_frequency_hz
    iono = np.nan_to_num(model["iono_delay"].values) * ((SYSTEM_FREQ_HZ["G"] / code_frequency_hz(nav, sv)) ** 2 - 1.0)
    for x, name in (("G", "C1C"), ("E", "C1C"), ("C", "C2I"), ("R", "C1C")):
        if x not in systems:
            continue
        cols = np.flatnonzero(np.char.startswith(sv, x))
        res = obs[name].sel(sv=list(sv[cols])).values - (model["pseudorange"].values[:, cols] + iono[:, cols])
        res = res - np.nanmedian(res, axis=1, keepdims=True)
        out["residual_rms_m"][x] = _rms(res)
        out["n_residuals"][x] = int(np.isfinite(res).sum())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                    help=f"folder of the default files (default: {DEFAULT_DATA_DIR})")
    ap.add_argument("--obs", help="RINEX observation file of a station with APPROX POSITION XYZ "
                                  "(default: DATA_DIR/07590920.05o)")
    ap.add_argument("--nav", help="RINEX navigation file for --obs (default: DATA_DIR/07590920.05n)")
    ap.add_argument("--precise", action="store_true",
                    help="compare broadcast with precise orbits and clocks using DATA_DIR/igs15904.sp3, "
                         "igs15904.clk and brdc1820.10n (unless --sp3/--clk/--precise-nav are given)")
    ap.add_argument("--sp3", help="precise orbit file (SP3)")
    ap.add_argument("--clk", help="precise clock file (RINEX clock)")
    ap.add_argument("--precise-nav", help="broadcast file covering the --sp3 day (default: --nav)")
    ap.add_argument("--elevation-mask-deg", type=float, default=10.0, help="mask of the solution and residuals")
    ap.add_argument("--visibility-mask-deg", type=float, default=5.0,
                    help="mask of the visibility prediction (0759's lowest logged elevation is 5.0 deg)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--multi", action="store_true",
                    help=f"multi-GNSS station instead: DATA_DIR/{MULTI_OBS} with {MULTI_NAV} (Galileo, BeiDou, GLONASS)")
    args = ap.parse_args(argv)
    if args.multi:
        from gnss.rinex import read_nav
        r = multi_gnss_station(gnss.read_obs(args.data_dir / MULTI_OBS),
                               read_nav(args.data_dir / MULTI_NAV, systems=("G", "E", "C", "R")),
                               antenna_height_m=0.216)
        if args.json:
            print(json.dumps(r, indent=2))
            return 0
        print("Multi-GNSS station ESBC00DNK, 2020-06-25 00-02 h, mask 15 deg (header position + 0.216 m as truth)")
        print(f"  {'system':10s} {'residual RMS [m]':>17s} {'target':>7s} {'n':>6s}")
        for x in r["residual_rms_m"]:
            print(f"  {x:10s} {r['residual_rms_m'][x]:17.2f} {MULTI_RESIDUAL_TARGET_M:7.1f} {r['n_residuals'][x]:6d}")
        print(f"  {'fix':10s} {'H95 [m]':>9s} {'V95 [m]':>9s} {'sats':>5s}  observables")
        for k, f in r["fixes"].items():
            print(f"  {k:10s} {f['h95_m']:9.2f} {f['v95_m']:9.2f} {f['mean_n_sv']:5.1f}  {f['observable']}")
        print(f"  combined H95 target: < {MULTI_H95_TARGET_M:g} m")
        return 0
    args.obs = args.obs or args.data_dir / "07590920.05o"
    args.nav = args.nav or args.data_dir / "07590920.05n"
    if args.precise:
        args.sp3 = args.sp3 or args.data_dir / "igs15904.sp3"
        args.clk = args.clk or args.data_dir / "igs15904.clk"
        args.precise_nav = args.precise_nav or args.data_dir / "brdc1820.10n"

    results = {}
    if args.sp3:
        nav_p = gnss.read_nav(args.precise_nav or args.nav)
        results["orbit_clock"] = orbit_clock_comparison(nav_p, gnss.read_sp3(args.sp3),
                                                        gnss.read_clk(args.clk) if args.clk else None)
    results["station"] = station_checks(gnss.read_obs(args.obs), gnss.read_nav(args.nav),
                                        args.elevation_mask_deg, args.visibility_mask_deg)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    if "orbit_clock" in results:
        r = results["orbit_clock"]
        print("Broadcast vs precise (IGS final), no APC->CoM correction")
        print(f"  {'quantity':38s} {'value':>10s}")
        for key, label in (("n_pairs", "satellite-epochs compared"), ("rms_3d_m", "orbit RMS 3D [m]"),
                           ("rms_radial_m", "orbit RMS radial [m]"), ("mean_radial_m", "orbit mean radial [m]"),
                           ("rms_along_m", "orbit RMS along-track [m]"), ("rms_cross_m", "orbit RMS cross-track [m]"),
                           ("max_3d_m", "orbit max 3D [m]"), ("clock_rms_m", f"clock RMS, common offset removed [m] ({r['clock_source']})"),
                           ("clock_rms_ns", "clock RMS [ns]")):
            print(f"  {label:38s} {r[key]:10.3f}")
        print(f"  gross errors (> {GROSS_ORBIT_ERROR_M:g} m) excluded: {r['n_gross_excluded']} sat-epochs of {r['gross_svs']}")
        print("  per satellite RMS 3D [m]: " + ", ".join(f"{s} {v:.2f}" for s, v in r["per_sv_rms_3d_m"].items()))
    s = results["station"]
    print("Station (header position as truth)")
    for key, label in (("residual_rms_m", "C1 model - observed RMS, clock removed [m]"),
                       ("residual_max_abs_m", "C1 model - observed max |.| [m]"),
                       ("solution_h95_m", "solution 95 % horizontal [m] (< 5)"),
                       ("solution_v95_m", "solution 95 % vertical [m] (< 8)"),
                       ("solution_rms_h_m", "solution RMS horizontal [m]"), ("solution_rms_v_m", "solution RMS vertical [m]"),
                       ("mean_n_sv_used", "mean satellites used"), ("mean_pdop", "mean PDOP"),
                       ("visible_predicted_mean", f"predicted visible (mask {s['visibility_mask_deg']:g} deg), mean"),
                       ("logged_mean", "satellites logged, mean"), ("epochs_sets_equal", "epochs with identical sets"),
                       ("predicted_not_logged", "sat-epochs predicted, not logged"),
                       ("logged_not_predicted", "sat-epochs logged, not predicted"),
                       ("min_elevation_logged_deg", "lowest elevation logged [deg]")):
        print(f"  {label:44s} {s[key]:10.3f}")
    for sv, m in s["visibility_mismatch_per_sv"].items():
        print(f"  {sv}: predicted-not-logged {m['predicted_not_logged']}, logged-not-predicted "
              f"{m['logged_not_predicted']}, max elevation {m['max_elevation_deg']:.1f} deg")
    print(f"  solution mean ENU error [m]: {', '.join(f'{v:.2f}' for v in s['solution_mean_enu_m'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
