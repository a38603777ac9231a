"""EMVA 1288 photon-transfer validation of ``optics.SensorModel``.

Simulates the standard's sensitivity measurement -- flat fields at increasing exposure time,
two frames per step, plus a pair of dark frames at every exposure time -- and analyses it by
the standard's photon-transfer method (EMVA 1288 Release 3.1, sections 6.2-6.6):

* mean mu_y = (mean(A) + mean(B)) / 2, temporal variance sigma_y^2 = var(A - B) / 2
  (the difference image removes the fixed pattern), same for the dark pair;
* saturation: the step with the maximum temporal variance; mu_e,sat = (mu_y,sat -
  mu_y,dark) / K. The variance peaks about 3 sqrt(F) below the full-well clip F, so the
  "configured" saturation to compare with is optics.sensor.emva_saturation_capacity(F), the
  value the method measures for that clip (the presets set F from the data sheet's
  saturation capacity with the inverse function);
* overall system gain K: slope through the origin of (sigma_y^2 - sigma_y,dark^2) against
  (mu_y - mu_y,dark), fitted over 0-70 % of saturation;
* responsivity R = eta K: slope through the origin of (mu_y - mu_y,dark) against mu_p, same range;
  eta = R / K;
* temporal dark noise sigma_d = sqrt(sigma_y,dark^2 - 1/12) / K, sigma_y,dark^2 the intercept
  at t = 0 of a line fitted to the dark variances against exposure time (removes the
  dark-current shot noise);
* SNR_max = sqrt(mu_e,sat), dynamic range from mu_p,min (see optics.sensor.emva_figures).

If the ``emva1288`` package (the EMVA's reference implementation, PyPI ``emva1288``) is
installed, the same series is also analysed with it as an independent check.

Run:  PYTHONPATH=. python validation/emva1288.py [--pixels 256] [--steps 150] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

# This file is called emva1288.py: when run as a script its folder is sys.path[0] and would
# shadow the ``emva1288`` package used for the independent check. Drop that entry; put the
# repository root first so that ``optics`` imports from this checkout.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from optics.sensor import (  # noqa: E402
    PRESETS,
    QUANTISATION_VARIANCE_DN2,
    SensorModel,
    emva_figures,
    emva_saturation_capacity,
)

# Fit range of the linear sensitivity fits, fraction of the saturation signal (EMVA 1288 R3.1
# section 6.6: "0 to 70 % of the saturation").
FIT_FRACTION = 0.70
# Largest simulated photon count as a multiple of the configured saturation photon count.
OVERDRIVE = 1.15


class Series(NamedTuple):
    """Photon-transfer series statistics, one entry per exposure step."""

    texp_s: np.ndarray
    u_p: np.ndarray
    u_y: np.ndarray
    s2_y: np.ndarray
    u_ydark: np.ndarray
    s2_ydark: np.ndarray
    package_data: dict  # the same series in the emva1288 package's input format


class Analysis(NamedTuple):
    """Results of the photon-transfer analysis."""

    gain_dn_per_e: float
    quantum_efficiency: float
    dark_noise_e: float
    saturation_e: float
    snr_max_db: float
    dynamic_range_db: float
    dynamic_range_bit: float
    dynamic_range_sigma_d_bit: float


def pair_statistics(a, b):
    """Mean and temporal variance of a pair of frames taken under the same conditions.

    Parameters
    ----------
    a, b : array_like
        Two frames [DN].

    Returns
    -------
    mean : float
        mu_y = (mean(A) + mean(B)) / 2 [DN].
    temporal_variance : float
        sigma_y^2 = mean(((A - mean A) - (B - mean B))^2) / 2 [DN^2].

    Notes
    -----
    The two-frame method of EMVA 1288 (R3.1 section 6.6, R4.0 Linear section 6): the
    difference image cancels the fixed pattern (DSNU, PRNU), and removing each frame's own
    mean also cancels a frame-to-frame change of the whole signal. With N pixels and Gaussian
    noise the relative standard error of sigma_y^2 is sqrt(2 / N).
    """
    a = np.asarray(a).astype(np.float64)
    b = np.asarray(b).astype(np.float64)
    mean = 0.5 * (a.mean() + b.mean())
    diff = (a - a.mean()) - (b - b.mean())
    return mean, 0.5 * np.mean(diff * diff)


def dark_noise_from_pair(dark_a, dark_b, gain_dn_per_e: float) -> float:
    """Temporal dark noise from two dark frames, sigma_d = sqrt(sigma_y.dark^2 - 1/12) / K [e-].

    The EMVA 1288 dark-noise measurement with a known gain K [DN/e-] (R3.1 section 6.6,
    eq. (8) solved for sigma_d at mu_p = 0); it includes the dark-current shot noise of the
    frames' exposure. :func:`analyse` does the same from the intercept at t = 0 of a whole
    dark series, with the measured K.
    """
    _, var = pair_statistics(dark_a, dark_b)
    return float(np.sqrt(max(var - QUANTISATION_VARIANCE_DN2, 0.0)) / gain_dn_per_e)


def _package_entry(a, b):
    # emva1288.process.routines.get_int_imgs, reduced to the totals the temporal analysis uses.
    i1, i2 = a.astype(np.int64), b.astype(np.int64)
    s = i1 + i2
    pvar = 2 * (2 * (i1 * i1 + i2 * i2) - s * s)
    return {"sum": int(s.sum()), "pvar": int(pvar.sum()), "dmean": float(i2.mean() - i1.mean()),
            "L": 2}


def simulate_series(sensor: SensorModel, *, pixels: int = 256, steps: int = 150,
                    max_exposure_s: float = 0.01, seed: int = 1288) -> Series:
    """Simulate the EMVA 1288 photon-transfer series for a sensor.

    The irradiance is constant and the exposure time is varied linearly from
    max_exposure_s / steps to max_exposure_s, reaching ``OVERDRIVE`` times the saturation
    photon count full_well / eta. Each step: two bright frames, two dark frames.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    shape = (pixels, pixels)
    photons_per_s = OVERDRIVE * sensor.full_well_e / sensor.quantum_efficiency / max_exposure_s
    texp = max_exposure_s * np.arange(1, steps + 1) / steps
    out = {k: [] for k in ("u_p", "u_y", "s2_y", "u_ydark", "s2_ydark")}
    temporal = {}
    dark = np.zeros(shape)
    for t in texp:  # loop over exposure steps (not pixels): each step is a vectorised frame
        mu_p = photons_per_s * t
        bright = np.full(shape, mu_p)
        a, b = (sensor.expose(bright, t, rng) for _ in range(2))
        da, db = (sensor.expose(dark, t, rng) for _ in range(2))
        m, v = pair_statistics(a, b)
        md, vd = pair_statistics(da, db)
        out["u_p"].append(mu_p)
        out["u_y"].append(m)
        out["s2_y"].append(v)
        out["u_ydark"].append(md)
        out["s2_ydark"].append(vd)
        temporal[float(t)] = {0.0: _package_entry(da, db), float(mu_p): _package_entry(a, b)}
    # one spatial point (required by the package's data format): the middle step
    mid = float(texp[steps // 2])
    mid_p = photons_per_s * mid
    imgs = [sensor.expose(np.full(shape, mid_p), mid, rng) for _ in range(2)]
    dimgs = [sensor.expose(dark, mid, rng) for _ in range(2)]
    package_data = {"width": pixels, "height": pixels, "temporal": temporal,
                    "spatial": {mid: {0.0: _spatial(dimgs), float(mid_p): _spatial(imgs)}}}
    return Series(texp_s=texp, package_data=package_data,
                  **{k: np.asarray(v) for k, v in out.items()})


def _spatial(imgs):
    ints = [i.astype(np.int64) for i in imgs]
    s = sum(ints)
    sq = sum(i * i for i in ints)
    n = len(ints)
    return {"L": n, "sum": s, "pvar": n * (n * sq - s * s), "dmean": 0.0}


def _slope_through_origin(x, y):
    return float(np.dot(x, y) / np.dot(x, x))


def analyse(series: Series) -> Analysis:
    """Photon-transfer analysis of a series by the EMVA 1288 method (module docstring)."""
    y = series.u_y - series.u_ydark
    s2 = series.s2_y - series.s2_ydark
    i_sat = int(np.argmax(series.s2_y))
    fit = y <= FIT_FRACTION * y[i_sat]
    fit[i_sat:] = False
    k = _slope_through_origin(y[fit], s2[fit])
    r = _slope_through_origin(series.u_p[fit], y[fit])
    eta = r / k
    slope, intercept = np.polyfit(series.texp_s, series.s2_ydark, 1)
    sigma_d = float(np.sqrt(max(intercept - QUANTISATION_VARIANCE_DN2, 0.0)) / k)
    mu_e_sat = float(y[i_sat] / k)
    fig = emva_figures(quantum_efficiency=eta, dark_noise_e=sigma_d, saturation_e=mu_e_sat)
    return Analysis(gain_dn_per_e=k, quantum_efficiency=eta, dark_noise_e=sigma_d,
                    saturation_e=mu_e_sat, snr_max_db=fig.snr_max_db,
                    dynamic_range_db=fig.dynamic_range_db,
                    dynamic_range_bit=fig.dynamic_range_bit,
                    dynamic_range_sigma_d_bit=fig.dynamic_range_sigma_d_bit)


def analyse_with_package(series: Series):
    """Analyse the series with the ``emva1288`` package; None if it is not installed."""
    try:
        from emva1288.process.data import Data1288
        from emva1288.process.results import Results1288
    except ImportError:
        return None
    import logging
    if not hasattr(np, "asfarray"):
        # emva1288 1.0.2 (latest on PyPI) calls np.asfarray, removed in NumPy 2.0. Restore the
        # old function for the duration of this analysis only (same semantics: float array).
        np.asfarray = lambda a, dtype=np.float64: np.asarray(a, dtype=dtype)
        try:
            return _package_results(Data1288, Results1288, series, logging)
        finally:
            del np.asfarray
    return _package_results(Data1288, Results1288, series, logging)


def _package_results(Data1288, Results1288, series, logging):
    data = Data1288(series.package_data, loglevel=logging.WARNING)
    res = Results1288(data.data, loglevel=logging.WARNING)
    forced = Results1288(data.data, index_u_ysat=int(np.argmax(series.s2_y)),
                         loglevel=logging.WARNING)
    return {"saturation_e_at_our_index": float(forced.u_e_sat),"gain_dn_per_e": float(res.K), "quantum_efficiency": float(res.QE) / 100.0,
            "dark_noise_e": float(res.sigma_d), "saturation_e": float(res.u_e_sat),
            "snr_max_db": float(res.SNR_max_dB()), "dynamic_range_db": float(res.DR_dB())}


# A generic configuration with every noise source on (SensorModel()'s defaults + extras).
GENERIC = dict(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0, gain_dn_per_e=0.1,
               bit_depth=12, black_level_dn=20.0, dark_current_e_per_s=2000.0,
               dsnu_e=2.0, prnu=0.005, pattern_seed=3)


def _rel(a, b):
    return 100.0 * (a - b) / b


def run(pixels: int, steps: int) -> str:
    """Run all configurations and return the Markdown report."""
    lines = []
    configs = [("generic (SensorModel() defaults + dark current, DSNU, PRNU)", SensorModel(**GENERIC),
                None)]
    for name in PRESETS:
        configs.append((name, SensorModel.from_preset(name), PRESETS[name]["datasheet"]))
    lines.append(f"Series: {pixels} x {pixels} pixels, {steps} exposure steps up to "
                 f"{OVERDRIVE:.2f} x saturation, 2 bright + 2 dark frames per step.\n")
    lines.append("### Recovered parameters (photon-transfer method) vs configured\n")
    lines.append("| configuration | K [DN/e-] (err %) | QE (err %) | sigma_d [e-] (err %) | "
                 "mu_e,sat [e-] (err % vs expected) | full-well clip [e-] |")
    lines.append("|---|---|---|---|---|---|")
    sheet_lines = ["### SNRmax and dynamic range vs the data sheets\n",
                   "| preset | SNRmax sim [dB] | SNRmax sheet [dB] | diff [dB] | "
                   "DR sim | DR sheet | diff [dB] | DR definition |",
                   "|---|---|---|---|---|---|---|---|"]
    pkg_lines = ["### Independent check with the `emva1288` package\n",
                 "| configuration | K | QE | sigma_d [e-] | mu_e,sat [e-] (own search) | "
                 "SNRmax [dB] | DR [dB] | mu_e,sat [e-] at our saturation step |",
                 "|---|---|---|---|---|---|---|---|"]
    package_available = True
    for label, sensor, sheet in configs:
        series = simulate_series(sensor, pixels=pixels, steps=steps)
        a = analyse(series)
        expected_sat = emva_saturation_capacity(sensor.full_well_e)
        lines.append(
            f"| {label} | {a.gain_dn_per_e:.5f} ({_rel(a.gain_dn_per_e, sensor.gain_dn_per_e):+.2f}) "
            f"| {a.quantum_efficiency:.4f} ({_rel(a.quantum_efficiency, sensor.quantum_efficiency):+.2f}) "
            f"| {a.dark_noise_e:.3f} ({_rel(a.dark_noise_e, sensor.dark_noise_e):+.2f}) "
            f"| {a.saturation_e:.0f} ({_rel(a.saturation_e, expected_sat):+.2f} vs "
            f"{expected_sat:.0f}) | {sensor.full_well_e:.0f} |")
        if sheet is not None:
            definition = sheet["dynamic_range_definition"]
            if "sigma_d0" in definition:
                dr_sim_bit = a.dynamic_range_sigma_d_bit
            else:
                dr_sim_bit = a.dynamic_range_bit
            dr_sheet_bit = sheet["dynamic_range_bit"]
            db_per_bit = 20.0 * np.log10(2.0)
            sheet_lines.append(
                f"| {label} | {a.snr_max_db:.2f} | {sheet['snr_max_db']:.2f} | "
                f"{a.snr_max_db - sheet['snr_max_db']:+.2f} | {dr_sim_bit:.2f} bit "
                f"({dr_sim_bit * db_per_bit:.2f} dB) | {dr_sheet_bit:.2f} bit "
                f"({dr_sheet_bit * db_per_bit:.2f} dB) | "
                f"{(dr_sim_bit - dr_sheet_bit) * db_per_bit:+.2f} | {definition} |")
        pkg = analyse_with_package(series)
        if pkg is None:
            package_available = False
        else:
            pkg_lines.append(
                f"| {label} | {pkg['gain_dn_per_e']:.5f} | {pkg['quantum_efficiency']:.4f} | "
                f"{pkg['dark_noise_e']:.3f} | {pkg['saturation_e']:.0f} | "
                f"{pkg['snr_max_db']:.2f} | {pkg['dynamic_range_db']:.2f} | "
                f"{pkg['saturation_e_at_our_index']:.0f} |")
    report = "\n".join(lines) + "\n\n" + "\n".join(sheet_lines) + "\n\n"
    if package_available:
        report += "\n".join(pkg_lines) + "\n"
    else:
        report += ("The `emva1288` package is not installed: independent check skipped "
                   "(`pip install emva1288`).\n")
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pixels", type=int, default=256, help="frame side [pixels]")
    parser.add_argument("--steps", type=int, default=150, help="exposure steps")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)
    report = run(args.pixels, args.steps)
    print(report)
    if args.markdown is not None:
        args.markdown.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
