"""Allan-variance validation of the ``imu`` error model (IEEE Std 952-1997, Annex C).

Static runs of the IMU's stochastic errors, each long enough for the term it checks, analysed
as a lab analyses a real IMU (overlapping Allan deviation, :func:`sensors.imu.allan_deviation`,
checked against ``allantools.oadev`` when it is installed):

* white noise density N: the Allan deviation at tau = 1 s (IEEE 952 Annex C: N = sigma(1 s));
  run with white noise only, 100 Hz, 2 h (full) / 20 min (fast). Must be within 5 %.
* bias instability B: the peak of the Allan deviation of the Gauss-Markov bias divided by the
  flicker-floor factor sqrt(2 ln 2 / pi) = 0.6643 (IEEE 952 Annex C): the model sets the Gauss-
  Markov sigma so that this peak, at tau = 1.89 T, equals the floor 0.6643 B a flicker bias of
  coefficient B would leave (:func:`sensors.imu.gauss_markov_sigma`). Run with the bias only
  for 2000 T: 10 Hz, 55.6 h for T = 100 s (full) / 20 Hz, 2000 s for T = 1 s (fast), so that
  the Allan estimate at the peak averages about 1000 clusters. Must be within 10 %.
* random walk K: a weighted least-squares fit of sigma^2 = K^2 tau / 3 (IEEE 952 Annex C) over
  tau from 1 s to a twentieth of the run; random walk only, 10 Hz, 24 h (full) / 20 Hz,
  2000 s (fast). Must be within 10 %.

Each quantity pools the three axes of a triad (independent realisations: the mean of their
Allan variances). Then one combined 48 h static run (all terms, 10 Hz) is fitted with the three
Allan-variance shapes at once (non-negative least squares, T known), as a lab would, and one
30-minute static run of the real ``imu`` model through :class:`hifi.Simulation` (ADIS16448
preset, quantisation and all, 100 Hz) gives the white-noise densities of its dataset (5 %).

The settings are the ADIS16448 preset's N and B (data sheet Rev. H) with T = 100 s, and bias
random walks chosen so that the random walk overtakes the bias floor near tau = 2000 s (the
data sheet gives none).

Run:  PYTHONPATH=. python validation/imu_allan.py [--fast] [--markdown FILE] [--figure FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

from sensors.imu import (  # noqa: E402
    FLICKER_ALLAN_FLOOR,
    GAUSS_MARKOV_ALLAN_PEAK,
    PRESETS,
    ImuErrorProcess,
    allan_deviation,
    avar_gauss_markov,
    avar_random_walk,
    avar_white,
    gauss_markov_sigma,
)

#: Acceptance: white-noise density within 5 %, bias instability and random walk within 10 %.
TOLERANCE = {"white": 0.05, "bias_instability": 0.10, "random_walk": 0.10}

_ADIS = PRESETS["adis16448"]


class Triad(NamedTuple):
    """What is set for one sensor triad (SI units)."""

    name: str
    unit_n: str
    unit_b: str
    unit_k: str
    white: float
    bias_instability: float
    random_walk: float


GYRO = Triad("gyro", "rad/s/sqrt(Hz)", "rad/s", "rad/s^2/sqrt(Hz)",
             _ADIS["gyro_noise_density_rad_s_rthz"], _ADIS["gyro_bias_instability_rad_s"], 3.0e-6)
ACCEL = Triad("accel", "m/s^2/sqrt(Hz)", "m/s^2", "m/s^3/sqrt(Hz)",
              _ADIS["accel_noise_density_m_s2_rthz"], _ADIS["accel_bias_instability_m_s2"], 1.0e-4)


class Plan(NamedTuple):
    """Rates [Hz], durations [s] and correlation time [s] of the runs."""

    white_rate_hz: float
    white_s: float
    gm_rate_hz: float
    gm_s: float
    correlation_time_s: float
    rw_rate_hz: float
    rw_s: float
    combined_rate_hz: float
    combined_s: float
    model_s: float


FULL = Plan(100.0, 7200.0, 10.0, 2000 * 100.0, 100.0, 10.0, 86400.0, 10.0, 48 * 3600.0, 1800.0)
FAST = Plan(100.0, 1200.0, 20.0, 2000.0, 1.0, 20.0, 2000.0, 20.0, 4000.0, 0.0)


def _taus(dt_s: float, duration_s: float, per_decade: int = 12) -> np.ndarray:
    """Log-spaced averaging times from one sample to a tenth of the run [s] (and 1 s itself)."""
    grid = np.logspace(np.log10(dt_s), np.log10(duration_s / 10.0), int(per_decade * np.log10(duration_s / 10.0 / dt_s) + 1))
    return np.unique(np.append(grid, 1.0))


def static_errors(seed: int, name: str, rate_hz: float, duration_s: float, *, white=(0.0, 0.0),
                  bias_instability=(0.0, 0.0), random_walk=(0.0, 0.0), correlation_time_s=100.0) -> np.ndarray:
    """Errors of a static run, (n, 6): gyro x y z, accel x y z, from the model's own process.

    Each pair is (gyro, accel) in SI units; the run is ``duration_s`` [s] at ``rate_hz`` [Hz].
    """
    def axes(pair):
        return np.array([pair[0]] * 3 + [pair[1]] * 3, dtype=float)

    proc = ImuErrorProcess(seed, name, rate_hz, axes(white), gauss_markov_sigma(axes(bias_instability)),
                           correlation_time_s, axes(random_walk))
    return proc.total(int(round(duration_s * rate_hz)))


def pooled_adev(y: np.ndarray, dt_s: float, taus_s) -> tuple[np.ndarray, np.ndarray]:
    """Allan deviation pooled over the columns of ``y`` (root of the mean Allan variance)."""
    taus, adev = allan_deviation(y, dt_s, taus_s)
    return taus, np.sqrt(np.mean(adev ** 2, axis=1))


def recover_white(y, dt_s) -> float:
    """N = sigma(1 s) (IEEE 952 Annex C), pooled over the columns."""
    taus, adev = pooled_adev(y, dt_s, [1.0])
    return float(adev[np.argmin(np.abs(taus - 1.0))])


def recover_bias_instability(y, dt_s, correlation_time_s) -> float:
    """B = peak of the Allan deviation / 0.6643, searched over T/3 .. 10 T, 40 per decade."""
    t = correlation_time_s
    _, adev = pooled_adev(y, dt_s, np.logspace(np.log10(t / 3.0), np.log10(10.0 * t), 62))
    return float(adev.max() / FLICKER_ALLAN_FLOOR)


def recover_random_walk(y, dt_s, duration_s) -> float:
    """K from sigma^2 = K^2 tau / 3 over 1 s .. duration / 20, each tau weighted by the number of
    clusters it averages (duration / tau)."""
    taus, adev = pooled_adev(y, dt_s, np.logspace(0.0, np.log10(duration_s / 20.0), 40))
    w = duration_s / taus
    return float(np.sqrt(np.sum(w * 3.0 * adev ** 2 / taus) / np.sum(w)))


def fit_all(y, dt_s, duration_s, correlation_time_s) -> tuple[float, float, float]:
    """N, B, K fitted at once to the pooled Allan variance (non-negative least squares on the
    relative residual, rows weighted by sqrt(clusters)), tau from 0.1 s to a tenth of the run."""
    from scipy.optimize import nnls

    taus, adev = pooled_adev(y, dt_s, _taus(dt_s, duration_s))
    keep = taus >= 0.1
    taus, avar = taus[keep], adev[keep] ** 2
    basis = np.column_stack([avar_white(1.0, taus), avar_gauss_markov(1.0, correlation_time_s, taus),
                             avar_random_walk(1.0, taus)])
    w = np.sqrt(duration_s / taus) / avar
    coef, _ = nnls(basis * w[:, None], w * avar)
    n2, s2, k2 = coef
    return float(np.sqrt(n2)), float(np.sqrt(s2) * GAUSS_MARKOV_ALLAN_PEAK / FLICKER_ALLAN_FLOOR), float(np.sqrt(k2))


def model_white(duration_s: float, seed: int = 11) -> tuple[float, float, float, float]:
    """Gyro and accel white-noise densities recovered from a static run of the real ``imu`` model
    (ADIS16448 preset), with what the preset sets."""
    import hifi
    from sensors.imu import IMU

    if "imu" not in hifi.available_models():
        hifi.register_model("imu", IMU)
    d = {"simulation": {"duration_s": duration_s, "seed": seed,
                        "origin": {"lat_deg": 47.8, "lon_deg": 13.04, "height_m": 430.0}},
         "sensors": [{"name": "imu", "model": "imu", "params": {"preset": "adis16448"}}],
         "output": {"motion_rate_hz": 1.0}}
    ds = hifi.Simulation.from_dict(d).run(progress=False)["imu"]
    dt = 1.0 / float(ds.attrs["rate_hz"])
    n_g = recover_white(ds["angular_rate"].values, dt)
    n_a = recover_white(ds["specific_force"].values, dt)
    return n_g, _ADIS["gyro_noise_density_rad_s_rthz"], n_a, _ADIS["accel_noise_density_m_s2_rthz"]


def _span(seconds: float) -> str:
    """A run length as people say it: minutes below an hour, else hours."""
    return f"{seconds / 60:.3g} min" if seconds < 3600 else f"{seconds / 3600:.3g} h"


class Row(NamedTuple):
    run: str
    quantity: str
    unit: str
    set_value: float
    recovered: float
    tolerance: float | None

    @property
    def ratio(self) -> float:
        return self.recovered / self.set_value

    @property
    def passed(self) -> bool:
        return self.tolerance is None or abs(self.ratio - 1.0) <= self.tolerance


def run(plan: Plan = FULL, seed: int = 7, *, curves: dict | None = None) -> list[Row]:
    """Every check of the module docstring; ``curves`` (if given) receives the Allan curves."""
    rows: list[Row] = []
    pairs = {"white": (GYRO.white, ACCEL.white), "bias_instability": (GYRO.bias_instability, ACCEL.bias_instability),
             "random_walk": (GYRO.random_walk, ACCEL.random_walk)}
    t = plan.correlation_time_s
    y_w = static_errors(seed, "allan_white", plan.white_rate_hz, plan.white_s, white=pairs["white"])
    y_g = static_errors(seed, "allan_gm", plan.gm_rate_hz, plan.gm_s, bias_instability=pairs["bias_instability"],
                        correlation_time_s=t)
    y_r = static_errors(seed, "allan_rw", plan.rw_rate_hz, plan.rw_s, random_walk=pairs["random_walk"])
    y_c = static_errors(seed, "allan_all", plan.combined_rate_hz, plan.combined_s, white=pairs["white"],
                        bias_instability=pairs["bias_instability"], random_walk=pairs["random_walk"],
                        correlation_time_s=t)
    span = {k: _span(v) for k, v in plan._asdict().items() if k.endswith("_s")}
    for j, tri in enumerate((GYRO, ACCEL)):
        cols = slice(3 * j, 3 * j + 3)
        rows.append(Row(f"white only, {plan.white_rate_hz:g} Hz, {span['white_s']}", f"{tri.name} N", tri.unit_n,
                        tri.white, recover_white(y_w[:, cols], 1.0 / plan.white_rate_hz), TOLERANCE["white"]))
        rows.append(Row(f"Gauss-Markov only (T = {t:g} s), {plan.gm_rate_hz:g} Hz, {span['gm_s']}",
                        f"{tri.name} B", tri.unit_b, tri.bias_instability,
                        recover_bias_instability(y_g[:, cols], 1.0 / plan.gm_rate_hz, t), TOLERANCE["bias_instability"]))
        rows.append(Row(f"random walk only, {plan.rw_rate_hz:g} Hz, {span['rw_s']}", f"{tri.name} K", tri.unit_k,
                        tri.random_walk, recover_random_walk(y_r[:, cols], 1.0 / plan.rw_rate_hz, plan.rw_s),
                        TOLERANCE["random_walk"]))
        n, b, k = fit_all(y_c[:, cols], 1.0 / plan.combined_rate_hz, plan.combined_s, t)
        label = f"all terms, joint fit, {plan.combined_rate_hz:g} Hz, {span['combined_s']}"
        rows += [Row(label, f"{tri.name} N", tri.unit_n, tri.white, n, None),
                 Row(label, f"{tri.name} B", tri.unit_b, tri.bias_instability, b, None),
                 Row(label, f"{tri.name} K", tri.unit_k, tri.random_walk, k, None)]
        if curves is not None:
            for key, y, rate, dur in (("white", y_w, plan.white_rate_hz, plan.white_s),
                                      ("gm", y_g, plan.gm_rate_hz, plan.gm_s),
                                      ("rw", y_r, plan.rw_rate_hz, plan.rw_s),
                                      ("all", y_c, plan.combined_rate_hz, plan.combined_s)):
                curves[(tri.name, key)] = pooled_adev(y[:, cols], 1.0 / rate, _taus(1.0 / rate, dur))
    if plan.model_s > 0:
        n_g, set_g, n_a, set_a = model_white(plan.model_s)
        label = f"imu model (ADIS16448 preset, quantised), 100 Hz, {_span(plan.model_s)}"
        rows += [Row(label, "gyro N", GYRO.unit_n, set_g, n_g, TOLERANCE["white"]),
                 Row(label, "accel N", ACCEL.unit_n, set_a, n_a, TOLERANCE["white"])]
    return rows


def allantools_check(seed: int = 3) -> float | None:
    """Largest relative difference between our Allan deviation and ``allantools.oadev`` on one
    white + random-walk series, or None without allantools."""
    try:
        import allantools
    except ImportError:
        return None
    y = static_errors(seed, "allan_check", 50.0, 2000.0, white=(1e-3, 1e-3), random_walk=(1e-5, 1e-5))[:, 0]
    taus, ours = allan_deviation(y, 0.02, np.logspace(-1.5, 2.0, 15))
    t2, theirs, _, _ = allantools.oadev(y, rate=50.0, data_type="freq", taus=taus)
    return float(np.max(np.abs(ours / theirs - 1.0))) if np.allclose(t2, taus) else float("nan")


def markdown(rows: list[Row], plan: Plan, check: float | None) -> str:
    intro = ("Generated by `python validation/imu_allan.py` (see its docstring for the method). Static runs of "
             "the `imu` error model (`sensors.imu.ImuErrorProcess`, the same code the model runs), Allan "
             "deviation pooled over the three axes of each triad. Set: the ADIS16448 preset's white noise and "
             "bias instability (data sheet Rev. H: ARW 0.66 deg/sqrt(h), VRW 0.11 m/s/sqrt(h), in-run bias "
             f"stability 14.5 deg/h and 0.25 mg, the last one unverified, see `sensors/imu.py`), "
             f"T = {plan.correlation_time_s:g} s, and bias random walks chosen here (the data sheet has none).")
    lines = ["# IMU Allan-variance validation", "", intro, "",
             "| run | quantity | unit | set | recovered | ratio | tolerance | pass |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tol = f"{100 * r.tolerance:g} %" if r.tolerance is not None else "(information)"
        ok = "yes" if r.passed else "NO"
        lines.append(f"| {r.run} | {r.quantity} | {r.unit} | {r.set_value:.4g} | {r.recovered:.4g} | "
                     f"{r.ratio:.3f} | {tol} | {ok if r.tolerance is not None else '-'} |")
    floor = ("A data sheet's *in-run bias stability* is the minimum of the measured Allan deviation "
             "(Analog Devices' definition). IEEE Std 952-1997 (Annex C; also IEEE Std 647) models "
             "that floor as flicker noise of coefficient B, whose Allan deviation is flat at "
             "sqrt(2 ln 2 / pi) B = 0.6643 B; so B = in-run bias stability / 0.6643, and B is what "
             "`gyro_bias_instability_rad_s` / `accel_bias_instability_m_s2` hold.")
    peak = ("The model's bias is a first-order Gauss-Markov process (correlation time T, standard "
            "deviation sigma), whose Allan variance is sigma^2 (T/tau)^2 (2 tau/T - 3 + 4 e^(-tau/T) - "
            "e^(-2 tau/T)) (IEEE 952 Annex C, exponentially correlated noise, with q_c^2 = 2 sigma^2 / T). "
            "It has no floor but a peak of 0.6174 sigma at tau = 1.89 T. The model sets the peak to the "
            "flicker floor: sigma = 0.6643 B / 0.6174 = 1.076 B (`sensors.imu.gauss_markov_sigma`). Taking "
            "sigma = B (a common shortcut) would put the Allan curve 7 % below the data sheet's minimum.")
    recovery = ("Recovery: B = (peak of the Allan deviation of the bias run) / 0.6643. The joint fit "
                "rows fit N^2/tau + sigma^2 f(tau/T) + K^2 tau/3 to one run with every term and report "
                "B = 0.6174 sigma / 0.6643; they are for information (the terms overlap in tau), the "
                "per-term runs carry the acceptance.")
    lines += ["", "## Bias instability: Gauss-Markov sigma versus the Allan number", "", floor, "", peak, "",
              recovery, ""]
    if check is not None:
        lines += [(f"Our overlapping Allan deviation agrees with `allantools.oadev` (2024.6) to {check:.1e} "
                   "(largest relative difference over 15 averaging times)."), ""]
    lines += ["![Allan deviations](imu_allan.png)", ""]
    return "\n".join(lines)


def figure(curves: dict, rows: list[Row], path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, tri in zip(axes, (GYRO, ACCEL)):
        styles = {"white": ("white noise only", "C0"), "gm": ("Gauss-Markov bias only", "C1"),
                  "rw": ("bias random walk only", "C2"), "all": ("all terms", "k")}
        for key, (label, colour) in styles.items():
            taus, adev = curves[(tri.name, key)]
            ax.loglog(taus, adev, color=colour, lw=1.6 if key == "all" else 1.0, label=label)
        taus = np.logspace(-2, 5, 200)
        t = FULL.correlation_time_s if curves[(tri.name, "gm")][0].max() > 100 else FAST.correlation_time_s
        ax.loglog(taus, np.sqrt(avar_white(tri.white, taus)), "C0:", lw=0.8)
        ax.loglog(taus, np.sqrt(avar_random_walk(tri.random_walk, taus)), "C2:", lw=0.8)
        ax.loglog(taus, np.sqrt(avar_gauss_markov(gauss_markov_sigma(tri.bias_instability), t, taus)), "C1:", lw=0.8)
        ax.axhline(FLICKER_ALLAN_FLOOR * tri.bias_instability, color="C1", ls="--", lw=0.8,
                   label="0.664 B (data-sheet minimum)")
        ax.plot([1.0], [tri.white], "o", mfc="none", color="C0", label="N at 1 s (set)")
        ax.set_xlabel("averaging time tau [s]")
        ax.set_ylabel(f"Allan deviation [{tri.unit_b}]")
        ax.set_title(f"{tri.name}: set (dotted) and simulated (solid)")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=min(a.min() for (n, _), (_, a) in curves.items() if n == tri.name) / 2)
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="the short runs of the test suite")
    ap.add_argument("--markdown", default=str(_HERE / "imu_allan.md"))
    ap.add_argument("--figure", default=str(_HERE / "imu_allan.png"))
    args = ap.parse_args(argv)
    plan = FAST if args.fast else FULL
    curves: dict = {}
    rows = run(plan, curves=curves)
    check = allantools_check()
    for r in rows:
        print(f"{r.run:60s} {r.quantity:8s} set {r.set_value:.4g} recovered {r.recovered:.4g} ratio {r.ratio:.3f}"
              f"{'' if r.passed else '  FAIL'}")
    if check is not None:
        print(f"allantools.oadev agreement: {check:.1e}")
    Path(args.markdown).write_text(markdown(rows, plan, check), encoding="utf-8")
    figure(curves, rows, args.figure)
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
