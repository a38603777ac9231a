"""The receiver's impulse response and the echoes it merges at depth edges.

A pulsed lidar does not time the optical pulse but the photocurrent after its avalanche
photodiode (APD), transimpedance amplifier (TIA) and filter: the received pulse convolved with
the receiver's impulse response. Below breakdown the mean avalanche current of an APD decays
exponentially after its initial transient (Groves, Tan, David, Rees and Hayat, "Exponential
time response in analogue and Geiger mode avalanche photodiodes", IEEE Trans. Electron Devices
52(7), 1527, 2005); at 905 nm a silicon APD also absorbs photons below its depletion layer,
whose carriers arrive late by diffusion, and the TIA's pole adds its own exponential decay.
The model is one exponential of time constant tau behind the Gaussian pulse. Where a beam
footprint straddles a depth edge, the far part of the spot echoes while the near part's echo
is still decaying: the receiver may see one return instead of two, and the time it reports
for it lies between the two surfaces. Velodyne's DSP "conducts a full waveform analysis" of
each return and ignores returns "below a certain noise floor" (HDL-64E S3 user's manual,
rev. K, "Noise level adjustment"); its time estimator is not published: ``timing`` is the
maximum of the filtered signal ("peak", the rotating lidars' and the Ouster's default) or its
centroid ("centroid", as the divergent-beam receiver :func:`sensors.beam.process_returns`
reports a return).

Mixed pixels ("floating" returns between the two surfaces of an edge) were measured on imaging
laser radars by Hebert and Krotkov ("3D measurements from imaging laser radars: how good are
they?", Image and Vision Computing 10(3), 1992) and surveyed by Tuley, Vandapel and Hebert
("Analysis and removal of artifacts in 3-D LADAR data", ICRA 2005, pp. 2203-2210): they occur
only within a range of depth gaps that the receiver sets, and fall anywhere between the two
surfaces.

Plain functions over arrays: :func:`receiver_response` (the filtered single echo),
:func:`merge_limit_s` (the largest gap that merges, in closed form) and
:func:`receiver_echoes` (the returns of small sub-ray bundles, as
:func:`sensors.beam.bundle_echoes` but grouped by the filtered waveform).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import erfc, erfcx

from hifi.constants import SPEED_OF_LIGHT_M_S

from ..beam import EchoReport
from ..beam.receiver import report_from_groups, sorted_echoes
from ..beam.waveform import pulse_sigma_s

__all__ = ["EDGE_TIMING", "RECEIVER_TAIL_S", "TAIL_SOURCE", "TIMINGS", "TIMING_SOURCE", "merge_limit_s", "receiver_echoes", "receiver_peak",
           "receiver_response"]

#: Time constant of the receiver's exponential impulse response of the rotating lidars and the
#: Ouster [s], with :data:`EDGE_TIMING`: fitted. No data sheet gives a receiver response;
#: ``validation/edge_floating.py --tails`` runs the Ouster OS1-128 capture's clean-edge table
#: (isolated floating returns per clean edge in the depth-gap bins 0.5-2, 2-8 and > 8 m; real
#: 2/201, 5/287 and 3/40) for tails of 0-40 ns and both time estimators, three seeds pooled,
#: and takes the least summed squared log ratio simulated / real (a bin without simulated
#: floating returns counted as half of one): the peak with 20 ns, 5.2 (ratios 3.0, 1.9, 0.15);
#: peak 10 ns 8.8 (3.7, 1.9, 0 of 89), 40 ns 9.7 (12, 1.0, 0.15); centroid 1 ns 5.9 (2.9, 2.1,
#: 0.13), centroid 5 ns and more float 3.5 to 44 times too many points at 0.5-8 m. Counts are
#: small (the real bins hold 2, 5 and 3 floating returns; the simulated 0.5-2 m and > 8 m
#: fractions lie at the edges of the real ones' 95 % intervals): the fit says what the data
#: allow, not an exact value. Twenty ns is far longer than a fast TIA's pole (260 MHz, 0.6 ns,
#: in Baharmast and Kostamovaara, Optical Engineering 59(10) 104102, 2020): a slow tail of the
#: detector (avalanche decay, Groves et al. 2005; diffusion at 905 nm) or the filter, not
#: published for these sensors. The nuScenes HDL-32E sweep has no floating return
#: at its 111 clean edges and constrains nothing; the same value serves the Velodynes.
RECEIVER_TAIL_S = 20e-9
#: The time estimator of edge returns for the same models: the maximum of the filtered signal.
#: Velodyne's DSP "conducts a full waveform analysis" of each return (HDL-64E S3 user's manual,
#: rev. K) without saying how it times it; the peak is fitted with :data:`RECEIVER_TAIL_S`.
EDGE_TIMING = "peak"
TAIL_SOURCE = "fitted to the Ouster OS1-128 capture's clean-edge floating returns, sensors.lidar.impulse"
TIMING_SOURCE = ("Velodyne's HDL-64E S3 manual: a full waveform analysis per return, its estimator unpublished; "
                 "fitted with receiver_tail_s")


def _emg(t, sigma, tau):
    """Unit-area Gaussian (sigma [s]) convolved with ``exp(-t / tau) / tau`` (t >= 0), at ``t`` [s]:
    the exponentially modified Gaussian, in the form that neither overflows nor cancels."""
    t = np.asarray(t, dtype=float)
    x = (sigma / tau - t / sigma) / np.sqrt(2.0)
    with np.errstate(over="ignore", invalid="ignore"):
        # x >= 0: exp(-t^2 / 2 s^2) erfcx(x) (both bounded); x < 0: exp(s^2 / 2 tau^2 - t / tau) erfc(x)
        a = np.exp(-0.5 * (t / sigma) ** 2) * erfcx(np.maximum(x, 0.0))
        b = np.exp(0.5 * (sigma / tau) ** 2 - t / tau) * erfc(np.minimum(x, 0.0))
    return np.where(x >= 0.0, a, b) / (2.0 * tau)


@lru_cache(maxsize=64)
def receiver_peak(pulse_width_s: float, tail_s: float) -> tuple:
    """``(t_peak [s], g_peak [1/s])``: time after the echo's arrival and height of the maximum of
    the unit-area filtered echo (:func:`receiver_response` before normalisation), by a grid of
    sigma / 2000 refined by a parabola (better than 1 ps)."""
    s = pulse_sigma_s(pulse_width_s)
    if tail_s <= 0.0:
        return 0.0, 1.0 / (s * np.sqrt(2.0 * np.pi))
    t = np.arange(-3.0 * s, 4.0 * s + 3.0 * tail_s, s / 2000.0)
    g = _emg(t, s, tail_s)
    i = int(np.clip(np.argmax(g), 1, t.size - 2))
    den = g[i - 1] - 2.0 * g[i] + g[i + 1]
    dt = 0.5 * (g[i - 1] - g[i + 1]) / den if den != 0.0 else 0.0
    return float(t[i] + dt * (t[1] - t[0])), float(g[i] - 0.25 * (g[i - 1] - g[i + 1]) * dt)


def receiver_response(t_s, *, pulse_width_s, tail_s):
    """The receiver's output for one echo arriving at t = 0, normalised to a peak of 1.

    Parameters
    ----------
    t_s : array_like
        Time after the echo's arrival (the centre of the received optical pulse) [s].
    pulse_width_s : float
        FWHM of the Gaussian optical pulse [s].
    tail_s : float
        Time constant of the receiver's exponential impulse response [s]; 0: none (the optical
        pulse itself).

    Returns
    -------
    ndarray
        ``g(t) / g_peak`` [1], ``g = G_sigma * h``, ``h(t) = exp(-t / tau) / tau`` for t >= 0: the
        exponentially modified Gaussian ``g(t) = exp(sigma^2 / 2 tau^2 - t / tau)
        erfc((sigma / tau - t / sigma) / sqrt 2) / (2 tau)``; its peak lies ``t_peak``
        (:func:`receiver_peak`) after the arrival. The detection threshold and the lidar
        equation's peak power keep their meaning for a single echo: its filtered peak is its
        received power.

    Notes
    -----
    For ``t >> t_peak`` the response decays as ``exp(-t / tau)``: an echo of peak power P stays
    above a threshold T for about ``t_peak + tau ln(P / T)`` after it arrives
    (:func:`merge_limit_s`).
    """
    s = pulse_sigma_s(pulse_width_s)
    t = np.asarray(t_s, dtype=float)
    if tail_s <= 0.0:
        return np.exp(-0.5 * (t / s) ** 2)
    return _emg(t, s, tail_s) / receiver_peak(float(pulse_width_s), float(tail_s))[1]


#: Step of the tabulated response of :func:`receiver_echoes` [s]: 5 ps, a 420th of the 5 ns
#: pulse's sigma; linear interpolation errs by at most h^2 / 8 |g''| = 2e-5 of the peak.
_TABLE_STEP_S = 5e-12


@lru_cache(maxsize=16)
def _response_table(pulse_width_s: float, tail_s: float):
    """:func:`receiver_response` tabulated every :data:`_TABLE_STEP_S` from 12 sigma before the
    arrival to 12 sigma + 50 tau after it (beyond: below 1e-21 of the peak, taken as 0), as a
    function of ``t`` [s] (any shape) by linear interpolation: the per-pulse sums of
    :func:`receiver_echoes` evaluate it for every pair of echoes."""
    s = pulse_sigma_s(pulse_width_s)
    t = np.arange(-12.0 * s, 12.0 * s + 50.0 * max(tail_s, 0.0), _TABLE_STEP_S)
    y = receiver_response(t, pulse_width_s=pulse_width_s, tail_s=tail_s)

    y = np.append(y, 0.0)                    # one zero past the end: the last interval's right end
    dy = y[1:] - y[:-1]                      # each interval's rise, y[i + 1] - y[i]
    last = t.size - 1

    def g(x):
        # uniform grid: the interval by arithmetic, no search (np.interp's bisection costs 4x);
        # ``y[i] + f (y[i + 1] - y[i])``, 0 outside, the rises tabulated and the temporaries
        # reused in place (the arrays are a million elements for an HDL-64E's edge pulses; the
        # same bits)
        u = np.subtract(x, t[0], dtype=float)
        u *= 1.0 / _TABLE_STEP_S
        outside = u >= 0.0
        outside &= u < last
        np.logical_not(outside, out=outside)     # NaN counts as outside, as before
        u[outside] = 0.0
        i = u.astype(np.int64)
        u -= i                                   # the fraction f
        out = dy[i]
        out *= u
        out += y[i]
        out[outside] = 0.0
        return out
    return g


def sum_last_axis(x):
    """``np.sum(x, axis=-1)``, the same bits: numpy sums fewer than 8 elements one after the
    other from +0.0, which column-by-column additions repeat about 4 times faster than its
    reduction over a short inner axis (an HDL-64E's 7 sub-rays: (1000, 64, 7) in 0.53 ms
    against 2.0); 8 or more: numpy's pairwise sum itself. (Starting from the first element
    instead would differ where every element is -0.0.)"""
    n = x.shape[-1]
    if n >= 8 or n == 0:
        return np.sum(x, axis=-1)
    s = x[..., 0] + 0.0
    for j in range(1, n):
        s += x[..., j]
    return s


def _terms(g, dt, power, ok):
    """``power g(dt)`` where ``ok``, else 0, broadcast together: each echo's share of the
    filtered signal (``np.where(ok, power * g(dt), 0.0)``, the same bits, built in ``g``'s own
    output)."""
    out = g(dt)
    out *= power
    np.copyto(out, 0.0, where=~ok)
    return out


def merge_limit_s(snr, *, pulse_width_s, tail_s, snr_threshold):
    """Largest delay [s] after an echo of peak ``snr`` (times the RMS noise) at which a second
    echo still joins it into one return: where the first echo's filtered signal
    (:func:`receiver_response`) falls to the threshold ``snr_threshold``.

    Solved on the response's falling side by bisection (60 steps, to below 1 ps); NaN where
    ``snr`` < ``snr_threshold`` (the first echo is not detected on its own). For
    ``tau >> sigma`` it is close to ``t_peak + tau ln(snr / snr_threshold)``.
    """
    snr = np.asarray(snr, dtype=float)
    t_pk = receiver_peak(float(pulse_width_s), float(tail_s))[0]
    s = pulse_sigma_s(pulse_width_s)
    q = snr_threshold / np.where(snr > 0, snr, np.nan)
    lo = np.full(snr.shape, t_pk)
    hi = np.full(snr.shape, t_pk + 40.0 * s + 60.0 * max(tail_s, 0.0))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = receiver_response(mid, pulse_width_s=pulse_width_s, tail_s=tail_s) >= q
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(snr >= snr_threshold, 0.5 * (lo + hi), np.nan)


#: Time estimators of :func:`receiver_echoes`: the centroid of the return's filtered signal, or
#: the time of its maximum.
TIMINGS = ("centroid", "peak")
#: Grid of the search for a merged return's maximum (:func:`_peak_ranges`): points over the
#: span of its members, refined by a parabola through the best three.
_PEAK_GRID = 64
#: Members of a return spanning less than this [m] report their centroid under ``timing =
#: "peak"`` too: the maximum of their filtered sum lies within about ``var(t) g^(3) / (2 g^(2))``
#: of the centroid, a millimetre for a 5 cm span (0.33 ns) and the 5 ns pulse, below the range
#: noise floor (4-6 mm).
_PEAK_SEARCH_MIN_M = 0.05
#: Echoes closer than this [m] arrive together (70 ps, a seventieth of the 5 ns pulse) and never
#: start a new return.
_TOGETHER_M = 0.01


def _peak_ranges(rs, ps, members_sorted, *, pulse_width_s, tail_s):
    """Range [m] of the maximum of the filtered signal ``sum_j P_j g(t - t_j)`` (every echo of the
    pulse) between the first member's arrival and the last member's peak, per pulse (rows of
    ``rs``, ``ps``, sorted by range; ``members_sorted`` the return's members), the response's
    own peak delay calibrated out: a single echo reports its range."""
    t_pk = receiver_peak(float(pulse_width_s), float(tail_s))[0] if tail_s > 0 else 0.0
    ok = np.isfinite(rs)
    ts = np.where(ok, 2.0 * rs / SPEED_OF_LIGHT_M_S, 0.0)
    t0 = np.min(np.where(members_sorted, ts, np.inf), axis=1)
    t1 = np.max(np.where(members_sorted, ts, -np.inf), axis=1)
    u = np.linspace(0.0, 1.0, _PEAK_GRID)
    grid = (t0 + t_pk)[:, None] + (t1 - t0)[:, None] * u[None, :]                      # (q, G)
    g = _response_table(float(pulse_width_s), float(tail_s))
    y = sum_last_axis(_terms(g, grid[:, :, None] - ts[:, None, :], ps[:, None, :], ok[:, None, :]))
    best = np.argmax(y, axis=1)
    i = np.clip(best, 1, _PEAK_GRID - 2)
    rows = np.arange(y.shape[0])
    a, b, c = y[rows, i - 1], y[rows, i], y[rows, i + 1]
    den = a - 2.0 * b + c
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(den < 0, 0.5 * (a - c) / den, 0.0)
    at_edge = (best == 0) | (best == _PEAK_GRID - 1)
    step = (t1 - t0) / (_PEAK_GRID - 1)
    t = np.where(at_edge, grid[rows, best], grid[rows, i] + np.clip(shift, -1, 1) * step)
    return 0.5 * SPEED_OF_LIGHT_M_S * (t - t_pk)


#: Points per pair of consecutive echoes at which :func:`_dips_between` looks for a minimum.
_DIP_GRID = 24
#: A dip must fall this far (relative) below the lower of the two peaks: rounding of a flat
#: shoulder (a weak echo on a tail) is not a minimum.
_DIP_RTOL = 1e-9


def _dips_between(rs, ps, ts, peak, t_pk, g, dip_min_m):
    """(p, n - 1) bool: whether the filtered signal of all the echoes of a pulse (sorted by range
    ``rs``, powers ``ps``, arrivals ``ts`` [s]) has a minimum between the peaks of echoes k and
    k + 1 (``peak``: the signal at each echo's peak time), lower than both: two maxima, two
    returns. ``g``: the response (:func:`_response_table`). Pairs closer than ``dip_min_m``
    (``c sigma``: two sigma of the pulse in time) never dip and are not searched: two Gaussians
    less than two sigma apart sum to a unimodal curve whatever their weights, and convolving
    with the receiver's exponential (log-concave) keeps it so (Ibragimov's strong
    unimodality)."""
    p, n = rs.shape
    out = np.zeros((p, n - 1), dtype=bool)
    with np.errstate(invalid="ignore"):
        far = np.isfinite(rs[:, 1:]) & ((rs[:, 1:] - rs[:, :-1]) > dip_min_m)
    q, k = np.nonzero(far)
    if q.size == 0:
        return out
    u = np.linspace(0.0, 1.0, _DIP_GRID + 2)[1:-1]
    t0, t1 = ts[q, k] + t_pk, ts[q, k + 1] + t_pk
    grid = t0[:, None] + (t1 - t0)[:, None] * u[None, :]                             # (m, G)
    ok = np.isfinite(rs[q])
    y = sum_last_axis(_terms(g, grid[:, :, None] - ts[q][:, None, :], ps[q][:, None, :], ok[:, None, :]))
    ends = np.minimum(peak[q, k], peak[q, k + 1])
    out[q, k] = np.min(y, axis=1) < ends * (1.0 - _DIP_RTOL)
    return out


#: Fewest pulses in a part of :func:`receiver_echoes` handed to a thread: each costs about 4 us
#: (an HDL-64E's 7 sub-rays, ``timing = "peak"``), so a part takes a millisecond or more, far
#: longer than handing it over.
_MIN_PULSES_PER_THREAD = 256


def receiver_echoes(range_m, power_w, *, mode, pulse_width_s, tail_s, threshold_w,
                    timing="centroid", threads=None) -> EchoReport:
    """Returns of small sub-ray bundles (edge footprints) as the receiver's filtered waveform
    forms them.

    Parameters
    ----------
    range_m : (p, n) float
        Path length of every sub-ray of every pulse [m]; NaN: no return.
    power_w : (p, n) float
        Peak received power of each sub-ray's share of the pulse [W] (the lidar equation of its
        spot-weighted apparent reflectivity); 0 or NaN: none.
    mode : {"first", "last", "strongest", "dual", "strongest_last"}
        As :func:`sensors.beam.process_returns`.
    pulse_width_s, tail_s : float
        :func:`receiver_response` [s].
    threshold_w : float
        Detection threshold of the filtered signal [W] (``snr_threshold * noise_power_w``).
    timing : {"centroid", "peak"}
        The return's time: the centroid of its filtered signal, or its maximum.
    threads : hifi.caster.ChunkPool, optional
        Threads on which parts of the pulses are worked out at once (a model's
        :attr:`hifi.api.model.Sensor.threads`). Every quantity is computed pulse by pulse (the
        sums over a pulse's echoes included), so the parts give the bits of the whole.

    Returns
    -------
    EchoReport
        As :func:`sensors.beam.bundle_echoes`: range, energy (the return's summed power [W]),
        dominant sub-ray and members of the return(s) ``mode`` reports.

    Notes
    -----
    The sub-ray returns of a pulse are sorted by arrival ``t_k = 2 R_k / c``. Return k + 1 joins
    the return of k where the filtered signal of the returns before it is still at or above the
    threshold when it arrives: ``sum_{j <= k} P_j g(t_{k+1} - t_j) >= threshold``. The signal
    of earlier echoes falls monotonically past their peaks, so it stays above the threshold
    from return k to k + 1 (a sufficient condition: the rising edge of k + 1 could bridge a
    slightly deeper dip). With ``tail_s`` = 0 this groups echoes closer than about the pulse's
    width, as :func:`sensors.beam.bundle_echoes` does at ``c tau_p / 2``; a tail of tau joins
    echoes up to :func:`merge_limit_s` apart, metres for tens of ns.

    ``timing = "peak"``: the receiver finds the maxima of the filtered signal, as the
    divergent-beam receiver splits its waveform at the minima (:func:`sensors.beam.process_returns`):
    return k + 1 also starts a new return where the signal dips between the peaks of k and
    k + 1 below both (:func:`_dips_between`), and a return's time is that of its maximum
    (searched over the span of its members, :func:`_peak_ranges`; members within a centimetre
    report their centroid, the same to well below a millimetre). Echoes of comparable power
    closer than about the pulse's width merge into one maximum between them; a weaker echo on
    the falling tail of a stronger one leaves no maximum of its own where the tail falls
    faster than its rise climbs, and pulls the merged peak toward it. Each merged return's
    range lies between its surfaces. ``"centroid"``: a
    return's time is the centroid of its filtered signal, which for one pulse shape is the
    power-weighted mean arrival of its members plus the response's mean delay, calibrated
    out: its range is ``sum P_k R_k / sum P_k`` (the truncation of the run by the threshold
    is neglected). Merged echoes of a spot split across an edge thus report a range between
    the two surfaces at the far part's share of the power, the mixed pixel; a single echo
    reports its own range exactly. A return's amplitude, which ``strongest`` compares, is the
    peak of the filtered signal: the largest ``sum_j P_j g(t_m + t_peak - t_j)`` over its
    members m, so an echo riding on the tail of another counts that tail.
    """
    parts = 0 if threads is None else min(threads.n_threads, len(range_m) // _MIN_PULSES_PER_THREAD)
    if parts > 1:
        r, pw = np.asarray(range_m), np.asarray(power_w)
        bounds = np.linspace(0, r.shape[0], parts + 1).astype(int)
        reports = threads.run([lambda a=a, b=b: receiver_echoes(
            r[a:b], pw[a:b], mode=mode, pulse_width_s=pulse_width_s, tail_s=tail_s, threshold_w=threshold_w,
            timing=timing) for a, b in zip(bounds[:-1], bounds[1:])])
        return EchoReport(*(np.concatenate(f) for f in zip(*reports)))
    rs, ps, order = sorted_echoes(range_m, power_w)
    p, n = rs.shape
    ok = np.isfinite(rs)
    ts = np.where(ok, 2.0 * rs / SPEED_OF_LIGHT_M_S, 0.0)
    t_pk = receiver_peak(float(pulse_width_s), float(tail_s))[0] if tail_s > 0 else 0.0
    # Echoes closer than a centimetre arrive together: they never start a new return, and a
    # pulse whose echoes all do (one surface) is one return.
    with np.errstate(invalid="ignore"):
        apart = ok[:, 1:] & ((rs[:, 1:] - rs[:, :-1]) > _TOGETHER_M)
    new = np.zeros((p, n), dtype=bool)
    peak = ps.copy()                                   # one return: its members' order is all that counts
    q = np.flatnonzero(apart.any(axis=1))
    if q.size:
        g = _response_table(float(pulse_width_s), float(tail_s))
        tq, pq, okq = ts[q], ps[q], ok[q]
        # dt[p, k, j]: time of k's arrival after j's arrival
        dt = tq[:, :, None] - tq[:, None, :]
        pair = okq[:, :, None] & okq[:, None, :]
        before = np.tril(np.ones((n, n), dtype=bool), -1)[None]
        # the signal of the echoes before k (sorted order; ties count as before) when k arrives
        at_arrival = sum_last_axis(_terms(g, dt, pq[:, None, :], pair & before))
        new[q, 1:] = apart[q] & (at_arrival[:, 1:] < threshold_w)
        peak[q] = sum_last_axis(_terms(g, dt + t_pk, pq[:, None, :], pair))
        if timing == "peak":
            new[q, 1:] |= apart[q] & _dips_between(rs[q], pq, tq, peak[q], t_pk, g,
                                                   SPEED_OF_LIGHT_M_S * pulse_sigma_s(pulse_width_s))
    rep = report_from_groups(rs, ps, order, new, mode=mode, amplitude=np.where(ok, peak, 0.0))
    if timing == "peak":
        for j in range(rep.range_m.shape[1]):
            mem = np.take_along_axis(rep.members[:, j, :], order, axis=1)            # sorted order
            span = np.max(np.where(mem, rs, -np.inf), axis=1) - np.min(np.where(mem, rs, np.inf), axis=1)
            q = np.flatnonzero(mem.any(axis=1) & (span > _PEAK_SEARCH_MIN_M))
            if q.size:
                rep.range_m[q, j] = _peak_ranges(rs[q], ps[q], mem[q], pulse_width_s=pulse_width_s, tail_s=tail_s)
    return rep
