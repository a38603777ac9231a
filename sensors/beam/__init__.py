"""Divergent laser beams as bundles of sub-rays, and the return waveform they produce.

Plain functions over arrays, testable without a scene: the sub-ray pattern and weights of a Gaussian beam,
the sub-rays of a pulse, the return waveform and the receiver's signal processing. The VANE
scanning-LADAR model (C. Goodin, R. Kala, A. Carrillo, L. Y. Liu, "Sensor modeling for the
Virtual Autonomous Navigation Environment", IEEE Sensors 2009, sec. 4) samples the diverging
beam with N sub-rays, each carrying the radiant intensity of its place in the beam profile, and
sums their returns in time; where the spot straddles an edge part of the energy comes from the
near surface and part from the far one, and the receiver's processing decides what range is
reported.

The sub-rays of a pulse (count, pattern, directions) are in :mod:`sensors.beam.subrays`; this
module holds the waveform and the receiver, and re-exports the sub-ray functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import erf

from hifi.constants import SPEED_OF_LIGHT_M_S

from .subrays import (MAX_SUBRAYS, footprint_directions, subray_count,
                      subray_directions, subray_pattern)

__all__ = ["MAX_SUBRAYS", "BeamEchoes", "EchoReport", "EchoWindow", "WAVEFORM_BUDGET_BYTES", "beam_echoes",
           "bundle_echoes", "echo_segments", "echo_window", "footprint_directions",
           "full_waveform", "process_returns", "pulse_kernel", "pulse_sigma_s",
           "return_waveform", "round_trip_s", "sampled_waveform", "segment_report",
           "subray_count", "subray_directions", "subray_pattern", "waveform_segments", "window_chunks"]

#: Half-width of the pulse kernel evaluated around each arrival, in pulse standard deviations
#: (the Gaussian mass beyond 8.5 sigma is 2e-17, below float64 resolution of the sum).
_KERNEL_SIGMAS = 8.5

#: Memory budget [bytes] of the working arrays of one chunk of pulses in :func:`beam_echoes`
#: (:func:`window_chunks`). 32 MiB: below the numpy arrays of a pencil-beam HDL-64E frame
#: (48 MiB at their peak, benchmarks/bench_beam_memory.py), large enough that a chunk holds
#: thousands of pulses and the loop over chunks costs little.
WAVEFORM_BUDGET_BYTES = 32 * 2**20

#: Working memory per (pulse, window bin) [bytes]: the float64 waveform held by
#: :func:`beam_echoes` while :func:`process_returns` holds its int64 segment labels and four
#: bool masks (8 + 8 + 4); :func:`return_waveform` needs less (float64 impulses and result).
#: Measured with tracemalloc: 27 B; rounded up to 32.
_BYTES_PER_BIN = 32

#: The same when the full range-gate waveform is kept: the waveform held while
#: :func:`full_waveform` builds its int64 column indices, mask, row/column indices and
#: gathered values. Measured with tracemalloc: 48 B; rounded up to 56.
_BYTES_PER_BIN_GATE = 56

#: Working memory per (pulse, sub-ray) [bytes]: the chunk's copies of the sub-ray arrays and the
#: temporaries of :func:`return_waveform` and :func:`process_returns`. Measured with
#: tracemalloc: about 100 B; rounded up to 128.
_BYTES_PER_SUBRAY = 128


def pulse_sigma_s(pulse_width_s):
    """Standard deviation [s] of a Gaussian pulse of full width at half maximum ``pulse_width_s``."""
    return pulse_width_s / (2.0 * np.sqrt(2.0 * np.log(2.0)))


def pulse_kernel(bin_width_s, pulse_width_s):
    """Bin-integrated Gaussian pulse centred on a bin boundary, normalised to sum 1.

    Tap j (j = -h..h) holds ``Phi((j + 1/2) dt / s) - Phi((j - 1/2) dt / s)`` of the pulse of
    standard deviation s (:func:`pulse_sigma_s`), over +-8.5 s, renormalised so the taps sum to
    exactly 1 (the mass beyond 8.5 s is 2e-17).
    """
    s = pulse_sigma_s(pulse_width_s)
    half = int(np.ceil(_KERNEL_SIGMAS * s / bin_width_s))
    j = np.arange(-half, half + 1)
    taps = 0.5 * (erf((j + 0.5) * bin_width_s / (s * np.sqrt(2.0))) - erf((j - 0.5) * bin_width_s / (s * np.sqrt(2.0))))
    return taps / taps.sum()


def return_waveform(arrival_s, energy, *, bin_width_s, n_bins, pulse_width_s):
    """Received energy per time bin of each pulse: the returns convolved with the pulse.

    Parameters
    ----------
    arrival_s : (p, n) float
        Round-trip time of each sub-ray's return, ``2 R / c`` [s]; NaN for no return.
    energy : (p, n) float
        Energy of each return (relative units); 0 or NaN for none.
    bin_width_s : float
        Sampling interval of the receiver [s]; bin b is centred on ``b dt``.
    n_bins : int
    pulse_width_s : float
        Full width at half maximum of the Gaussian emitted pulse [s].

    Returns
    -------
    ndarray, shape (p, n_bins)
        Energy per bin. Each return is split between the two bins around its arrival time in
        proportion to its distance from them (linear interpolation, so the echo's centroid
        keeps its sub-bin time) and the impulse train is convolved with the bin-integrated
        pulse :func:`pulse_kernel`. Both steps conserve energy exactly, so the waveform's sum
        equals the sum of the returns whenever every echo lies inside the window.
    """
    tau = np.asarray(arrival_s, dtype=float)
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    p, n = tau.shape
    valid = np.isfinite(tau) & (e > 0)
    pos = np.where(valid, tau, 0.0) / bin_width_s
    b0 = np.floor(pos).astype(np.int64)
    frac = pos - b0
    rows = np.arange(p)[:, None]
    impulses = np.zeros(p * (n_bins + 1))
    for b, w in ((b0, 1.0 - frac), (b0 + 1, frac)):
        ok = valid & (b >= 0) & (b <= n_bins)
        np.add.at(impulses, (rows * (n_bins + 1) + b)[ok], (e * w)[ok])
    impulses = impulses.reshape(p, n_bins + 1)[:, :n_bins]
    from scipy.ndimage import convolve1d
    return convolve1d(impulses, pulse_kernel(bin_width_s, pulse_width_s), axis=1, mode="constant")


class EchoWindow(NamedTuple):
    """Receiver window of each pulse that holds every echo (:func:`echo_window`).

    Attributes
    ----------
    start_bin : (p,) int
        Absolute bin of the window's first sample (may be negative); bin b is centred on
        ``b dt`` after emission.
    n_bins : (p,) int
        Number of bins the pulse needs: the spread of its arrivals plus the pulse kernel and a
        margin on both sides. Any longer window starting at ``start_bin`` holds the same
        waveform followed by zeros.
    """

    start_bin: np.ndarray
    n_bins: np.ndarray


def echo_window(arrival_s, *, bin_width_s, pulse_width_s):
    """Per-pulse receiver window that holds every echo: first bin and length.

    Parameters
    ----------
    arrival_s : (p, n) float
        Round-trip times [s], NaN for none.
    bin_width_s : float
        Sampling interval of the receiver [s].
    pulse_width_s : float
        Full width at half maximum of the emitted pulse [s].

    Returns
    -------
    EchoWindow
        ``start_bin`` and ``n_bins``, both (p,) int64.

    Notes
    -----
    ``start_bin = floor(t_min / dt) - h - 2`` and ``n_bins = ceil((t_max - t_min) / dt) + 2 h + 6``
    with ``t_min``, ``t_max`` the earliest and latest arrival of the pulse and h the half-width
    of :func:`pulse_kernel` in bins (a pulse without echoes gets ``t_min = t_max = 0``). The
    margin of 2 to 3 bins beyond the kernel on each side holds the linear split of an arrival
    between two bins and the rounding of ``tau / dt``, so the waveform is exactly zero outside
    the window. Processing a window instead of the whole range gate gives the same result at a
    cost set by the echoes, not by the maximum range; :func:`beam_echoes` processes pulses
    of similar window length together (:func:`window_chunks`).
    """
    tau = np.asarray(arrival_s, dtype=float)
    half = (len(pulse_kernel(bin_width_s, pulse_width_s)) - 1) // 2
    if tau.shape[1] <= 16:
        # column by column (NaN-ignoring fmin / fmax): numpy reduces a short inner axis slowly
        t_min = np.full(tau.shape[0], np.inf)
        t_max = np.full(tau.shape[0], -np.inf)
        for j in range(tau.shape[1]):
            np.fmin(t_min, tau[:, j], out=t_min)
            np.fmax(t_max, tau[:, j], out=t_max)
    else:
        has = np.isfinite(tau)
        t_min = np.min(np.where(has, tau, np.inf), axis=1, initial=np.inf)
        t_max = np.max(np.where(has, tau, -np.inf), axis=1, initial=-np.inf)
    any_echo = np.isfinite(t_min)
    t_min = np.where(any_echo, t_min, 0.0)
    t_max = np.where(any_echo, t_max, 0.0)
    start = np.floor(t_min / bin_width_s).astype(np.int64) - half - 2
    span = np.ceil((t_max - t_min) / bin_width_s).astype(np.int64)
    return EchoWindow(start, span + 2 * half + 6)


def window_chunks(n_bins, *, bin_bytes=_BYTES_PER_BIN, row_bytes=0, budget_bytes=WAVEFORM_BUDGET_BYTES):
    """Pulses grouped by the length of their echo window and cut into chunks within a budget.

    Parameters
    ----------
    n_bins : (p,) int
        Window length each pulse needs (:attr:`EchoWindow.n_bins`).
    bin_bytes : int
        Working memory per (pulse, window bin) [bytes] (:data:`_BYTES_PER_BIN`).
    row_bytes : int
        Memory per pulse that does not depend on the window length [bytes] (the pulse's
        sub-ray arrays, its row of a full range-gate waveform).
    budget_bytes : int
        Memory budget of one chunk's working arrays [bytes], :data:`WAVEFORM_BUDGET_BYTES`.

    Returns
    -------
    list of (rows, width)
        ``rows`` (k,) int64: ascending indices of the pulses of one chunk; ``width`` int: the
        chunk's common window length, the largest ``n_bins`` in it. Every pulse is in exactly
        one chunk. Empty for p = 0.

    Notes
    -----
    Pulses are bucketed by the power of two of their need, ``ceil(log2(n_bins))``, so a
    chunk's window is less than twice the need of any pulse in it and its (pulses x bins)
    arrays are tight: one pulse whose echoes are 100 m apart no longer sets the window of a
    whole sweep. Each bucket is cut into chunks of at most
    ``max(1, budget_bytes // (bin_bytes * width + row_bytes))`` pulses, so the working
    arrays of a chunk stay within ``budget_bytes`` (a single pulse larger than the budget is a
    chunk of its own). The number of chunks is about the number of occupied buckets (5 for
    a 120 m gate in 0.5 ns bins with a 5 ns pulse: 128 to 2,048 bins) plus the total working
    memory over the budget.
    """
    need = np.asarray(n_bins, dtype=np.int64)
    # ceil(log2(need)) exactly, from the binary exponent: need - 1 = m 2^e with 0.5 <= m < 1.
    bucket = np.frexp(np.maximum(need - 1, 0).astype(float))[1]
    order = np.argsort(bucket, kind="stable")
    chunks = []
    for rows in np.split(order, np.flatnonzero(np.diff(bucket[order])) + 1):
        if rows.size == 0:
            continue
        size = max(1, int(budget_bytes) // (int(bin_bytes) * int(need[rows].max()) + int(row_bytes)))
        for lo in range(0, rows.size, size):
            part = rows[lo:lo + size]
            chunks.append((part, int(need[part].max())))
    return chunks


class EchoReport(NamedTuple):
    """What the receiver reports per pulse and return slot (:func:`process_returns`).

    Attributes
    ----------
    range_m : (p, m) float
        Reported range [m], NaN where nothing is reported.
    energy : (p, m) float
        Energy of the reported return.
    dominant : (p, m) int
        Sub-ray carrying most of the return's energy, -1 for none.
    members : (p, m, n) bool
        Which sub-rays make up each reported return.
    """

    range_m: np.ndarray
    energy: np.ndarray
    dominant: np.ndarray
    members: np.ndarray


def process_returns(waveform, arrival_s, energy, range_m, *, bin_width_s, mode, detection_threshold,
                    cutoff_m):
    """The receiver's signal processing: ranges reported per pulse.

    Parameters
    ----------
    waveform : (p, b) float
        :func:`return_waveform`.
    arrival_s, energy, range_m : (p, n) float
        Each sub-ray's return time [s], energy and path length [m] (NaN for none).
    bin_width_s : float
    mode : {"first", "last", "strongest", "average", "dual", "strongest_last"}
    detection_threshold : float
        Smallest return energy reported (same units as ``energy``).
    cutoff_m : float
        ``average`` mode: sub-ray returns within this distance behind the first return are
        averaged [m].

    Returns
    -------
    EchoReport
        Per return slot (m = 2 for ``dual`` and ``strongest_last``, else 1): reported range,
        energy, dominant sub-ray and member sub-rays.

    Notes
    -----
    The waveform is split into returns at its local minima: each local maximum and the bins
    down to the minima on either side form one return, and every sub-ray belongs to the return
    whose span holds its arrival. Echoes closer than about the range resolution
    ``c * pulse_width / 2`` (0.75 m for 5 ns) leave no minimum between them and merge into one
    return whose centroid lies between the surfaces, as in a real receiver. A return is detected when its energy (the sum of its
    sub-rays') reaches ``detection_threshold``. Its range is the energy-weighted mean of its
    sub-rays' path lengths (the centroid of the echo), so a single sub-ray reports its own path
    length exactly. ``first`` / ``last`` / ``strongest`` report the earliest, latest or most
    energetic detected return, ``dual`` the first and the last. ``strongest_last`` is
    Velodyne's dual-return mode (VLP-16 and HDL-32E user's manuals, "dual return"): the
    strongest and the last return, and where the strongest is the last, the strongest and the
    second-strongest; a pulse with a single return reports it in both slots, as the sensor
    repeats it. ``average`` reports the
    energy-weighted mean range of every sub-ray return no farther than ``cutoff_m`` behind the
    first detected return: where a spot straddles two surfaces closer than ``cutoff_m`` the
    reported point floats between them, the mixed pixel of SICK-like processing.
    """
    tau = np.asarray(arrival_s, dtype=float)
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    has = np.isfinite(tau) & (e > 0)
    seg_i = waveform_segments(waveform, tau, has, bin_width_s=bin_width_s)
    return segment_report(seg_i, energy, range_m, mode=mode, detection_threshold=detection_threshold,
                          cutoff_m=cutoff_m)


def waveform_segments(waveform, arrival_s, has, *, bin_width_s):
    """Segment of the waveform that holds each sub-ray's arrival: the labelling of
    :func:`process_returns`.

    Parameters
    ----------
    waveform : (p, b) float
        :func:`return_waveform`.
    arrival_s : (p, n) float
        Each sub-ray's return time [s] on the waveform's time axis.
    has : (p, n) bool
        Which sub-rays returned (finite time, energy > 0).
    bin_width_s : float

    Returns
    -------
    ndarray, shape (p, n), int64
        Segment index of each sub-ray, -1 where ``has`` is False. Segments are numbered in time
        order from the start of the window: a bin starts a new segment where the waveform stops
        falling and starts rising (a local minimum), so each segment holds one local maximum.
    """
    wf = np.asarray(waveform, dtype=float)
    tau = np.asarray(arrival_s, dtype=float)
    nb = wf.shape[1]
    rising = np.zeros_like(wf, dtype=bool)
    rising[:, 1:] = wf[:, 1:] > wf[:, :-1]
    falling_before = np.zeros_like(wf, dtype=bool)
    falling_before[:, 1:] = wf[:, 1:] <= wf[:, :-1]
    starts = np.zeros_like(wf, dtype=bool)
    starts[:, 1:] = rising[:, 1:] & falling_before[:, :-1]
    label = np.cumsum(starts, axis=1)                                # segment id per bin
    b_i = np.clip(np.rint(np.where(has, tau, 0.0) / bin_width_s).astype(np.int64), 0, max(nb - 1, 0))
    if nb == 0:
        return np.where(has, 0, -1).astype(np.int64)
    return np.where(has, np.take_along_axis(label, b_i, axis=1), -1)


def segment_report(seg_i, energy, range_m, *, mode, detection_threshold, cutoff_m):
    """What the receiver reports, from the segment each sub-ray's return fell in.

    Parameters
    ----------
    seg_i : (p, n) int
        Segment of each sub-ray (:func:`waveform_segments`), -1 for no return; segments are
        numbered in time order. Only the grouping and its order matter: any numbering that
        keeps both gives the same report bit for bit.
    energy, range_m : (p, n) float
        Return energy and path length [m] of every sub-ray.
    mode, detection_threshold, cutoff_m
        As :func:`process_returns`.

    Returns
    -------
    EchoReport

    Notes
    -----
    Per pulse, each segment's energy (the sum of its sub-rays') and centroid range (the
    pulse's nearest return plus the energy-weighted mean offset); segments of at least
    ``detection_threshold`` are detected; ``first``, ``last``, ``strongest`` pick one of them,
    ``dual`` first and last, ``strongest_last`` the strongest and the last (the second
    strongest where they coincide), in the compiled kernel
    :func:`sensors._beam_kernel.report_kernel`; ``average`` in :func:`_average_report`.
    """
    seg_i = np.asarray(seg_i, dtype=np.int64)
    if seg_i.size == 0:
        return _empty_report(seg_i.shape, mode)
    if mode == "average":
        return _average_report(seg_i, energy, range_m, detection_threshold=detection_threshold, cutoff_m=cutoff_m)
    from .._beam_kernel import REPORT_MODES, report_kernel  # numba, only where a divergent beam runs
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    rng = np.asarray(range_m, dtype=float)
    p, n = seg_i.shape
    n_seg = max(int(seg_i.max()) + 1, 1)
    if n_seg > n:
        seg_i = _compact_segments(seg_i)
        n_seg = max(int(seg_i.max()) + 1, 1)
    m = 2 if mode in ("dual", "strongest_last") else 1
    out = EchoReport(np.empty((p, m)), np.empty((p, m)), np.empty((p, m), dtype=np.int64),
                     np.empty((p, m, n), dtype=bool))
    report_kernel(seg_i, np.ascontiguousarray(e), np.ascontiguousarray(rng), REPORT_MODES[mode],
                  float(detection_threshold), n_seg, *out)
    return out


def _average_report(seg_i, energy, range_m, *, detection_threshold, cutoff_m):
    """The ``average`` mode of :func:`segment_report` (numpy): the energy-weighted mean range of
    the returns within ``cutoff_m`` behind the first detected segment's centroid.

    Parameters and result as :func:`segment_report`. Segments are summed per pulse with
    ``np.bincount``; a centroid is a reference (the pulse's nearest return) plus the weighted
    mean offset: exact for one sub-ray, and well conditioned (offsets of centimetres, not
    ranges of tens of metres).
    """
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    rng = np.asarray(range_m, dtype=float)
    p, n = seg_i.shape
    n_seg = max(int(seg_i.max()) + 1, 1)
    if n_seg > n:
        # Renumber each pulse's occupied segments 0, 1, ... in time order (segments without a
        # return are never reported): the (p, n_seg) arrays below then stay within (p, n).
        seg_i = _compact_segments(seg_i)
        n_seg = max(int(seg_i.max()) + 1, 1)
    has = seg_i >= 0
    key = np.arange(p)[:, None] * n_seg + seg_i
    ref = np.min(np.where(has, rng, np.inf), axis=1)      # nearest return of each pulse
    ref = np.where(np.isfinite(ref), ref, 0.0)
    dev = np.where(has, rng - ref[:, None], 0.0)
    seg_e = np.bincount(key[has], weights=e[has], minlength=p * n_seg).reshape(p, n_seg)
    seg_ed = np.bincount(key[has], weights=(e * dev)[has], minlength=p * n_seg).reshape(p, n_seg)
    detected = seg_e >= detection_threshold
    detected &= seg_e > 0
    any_det = detected.any(axis=1)
    first = np.where(any_det, np.argmax(detected, axis=1), -1)
    # the first detected segment's centroid
    with np.errstate(invalid="ignore", divide="ignore"):
        seg_r = ref[:, None] + seg_ed / seg_e
    r_first = np.where(first >= 0, np.take_along_axis(seg_r, np.maximum(first, 0)[:, None], axis=1)[:, 0], np.nan)
    near = has & (rng <= r_first[:, None] + cutoff_m) & np.isfinite(r_first)[:, None] & any_det[:, None]
    we = np.where(near, e, 0.0)
    tot = we.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(tot > 0, ref + (we * dev).sum(axis=1) / tot, np.nan)
    r = np.where(any_det, r, np.nan)
    en = np.where(any_det, tot, np.nan)
    return EchoReport(r[:, None], en[:, None], _dominant(we, any_det)[:, None], near[:, None, :])


def _empty_report(shape, mode) -> "EchoReport":
    """The report of pulses without sub-rays or of no pulses (``shape`` (p, n), p or n zero):
    nothing detected."""
    p, n = shape
    m = 2 if mode in ("dual", "strongest_last") else 1
    return EchoReport(np.full((p, m), np.nan), np.full((p, m), np.nan), np.full((p, m), -1, dtype=np.int64),
                      np.zeros((p, m, n), dtype=bool))


def bundle_echoes(range_m, energy, *, resolution_m, mode):
    """Echoes of small sub-ray bundles without sampling a waveform: returns grouped by range.

    Parameters
    ----------
    range_m, energy : (p, n) float
        Path length [m] (NaN for no return) and return energy of every sub-ray of every pulse.
    resolution_m : float
        Range resolution [m], ``c * pulse_width / 2`` (0.75 m for a 5 ns pulse).
    mode : {"first", "last", "strongest", "dual", "strongest_last"}
        As :func:`process_returns` (not ``average``).

    Returns
    -------
    EchoReport
        As :func:`process_returns`.

    Notes
    -----
    The sub-ray returns of a pulse, sorted by range, are split into echoes wherever two
    consecutive ones are more than ``resolution_m`` apart; an echo's energy is the sum of its
    returns and its range their energy-weighted mean. It approximates the waveform receiver of
    :func:`beam_echoes`, where two returns closer than about the pulse length leave no minimum
    between them and merge, at a cost of a sort over n instead of a waveform per pulse: meant
    for the few sub-rays (n < 10) of the edge-point footprint of the rotating and line lidars
    (:meth:`sensors.lidar._PulsedLidar._cast_beams`), validated against the full waveform beam
    in ``tests/test_lidar.py::test_edge_footprint_agrees_with_full_divergent_beam``.
    """
    r = np.asarray(range_m, dtype=float)
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    p, n = r.shape
    has = np.isfinite(r) & (e > 0)
    order = np.argsort(np.where(has, r, np.inf), axis=1, kind="stable")
    rs = np.take_along_axis(np.where(has, r, np.inf), order, axis=1)
    es = np.take_along_axis(np.where(has, e, 0.0), order, axis=1)
    ok = np.isfinite(rs)
    new = np.zeros((p, n), dtype=bool)
    with np.errstate(invalid="ignore"):                            # inf - inf past the last return
        new[:, 1:] = (rs[:, 1:] - rs[:, :-1]) > resolution_m
    label = np.where(ok, np.cumsum(new, axis=1), n)                # n: no return
    key = (np.arange(p)[:, None] * (n + 1) + label).ravel()
    ref = np.where(ok[:, 0], rs[:, 0], 0.0)
    dev = np.where(ok, rs - ref[:, None], 0.0)
    seg_e = np.bincount(key, weights=es.ravel(), minlength=p * (n + 1)).reshape(p, n + 1)[:, :n]
    seg_ed = np.bincount(key, weights=(es * dev).ravel(), minlength=p * (n + 1)).reshape(p, n + 1)[:, :n]
    detected = seg_e > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        seg_r = ref[:, None] + seg_ed / seg_e
    any_det = detected.any(axis=1)
    first = np.where(any_det, 0, -1)
    last = np.where(any_det, n - 1 - np.argmax(detected[:, ::-1], axis=1), -1)
    masked = np.where(detected, seg_e, -np.inf)
    strongest = np.where(any_det, np.argmax(masked, axis=1), -1)
    if mode == "strongest_last":
        masked[np.arange(p), np.maximum(strongest, 0)] = -np.inf
        has_second = np.isfinite(masked).any(axis=1)
        second = np.where(has_second, np.argmax(masked, axis=1), strongest)
        chosen = [strongest, np.where(last != strongest, last, second)]
    else:
        chosen = {"first": [first], "last": [last], "strongest": [strongest], "dual": [first, last]}[mode]
    rows = np.arange(p)
    parts = []
    for seg in chosen:
        valid = seg >= 0
        sg = np.maximum(seg, 0)
        in_seg = (label == sg[:, None]) & valid[:, None]
        dom_sorted = np.argmax(np.where(in_seg, es, -1.0), axis=1)
        members = np.zeros((p, n), dtype=bool)
        np.put_along_axis(members, order, in_seg, axis=1)
        parts.append((np.where(valid, seg_r[rows, sg], np.nan), np.where(valid, seg_e[rows, sg], np.nan),
                      np.where(valid, order[rows, dom_sorted], -1), members))
    return EchoReport(*(np.stack([q[k] for q in parts], axis=1) for k in range(4)))


def _compact_segments(seg_i):
    """Segment numbers renumbered per row to 0, 1, ... keeping their order; -1 stays -1."""
    big = np.where(seg_i >= 0, seg_i, np.iinfo(np.int64).max)
    order = np.argsort(big, axis=1, kind="stable")
    ranked = np.take_along_axis(big, order, axis=1)
    step = np.zeros(ranked.shape, dtype=np.int64)
    step[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    out = np.empty_like(seg_i)
    np.put_along_axis(out, order, np.cumsum(step, axis=1), axis=1)
    return np.where(seg_i >= 0, out, -1)


def _dominant(weights, valid):
    """Index of the largest weight per row, -1 where ``valid`` is False."""
    return np.where(valid, np.argmax(weights, axis=1), -1)


def round_trip_s(range_m):
    """Round-trip time 2 R / c [s] of a path of one-way length ``range_m`` [m]."""
    return 2.0 * np.asarray(range_m, dtype=float) / SPEED_OF_LIGHT_M_S


class BeamEchoes(NamedTuple):
    """Echoes of a set of divergent pulses (:func:`beam_echoes`).

    Attributes
    ----------
    report : EchoReport
        What the receiver reports per pulse (:func:`process_returns`).
    waveform : (p, gate_bins) float
        Each pulse's waveform in the full range gate, bin b centred on ``b dt`` after emission
        (:func:`full_waveform`); (p, 0) unless ``gate_bins`` was asked for.
    start_bin : (p,) int
        Absolute bin of the first sample of each pulse's echo window (:func:`echo_window`).
    """

    report: EchoReport
    waveform: np.ndarray
    start_bin: np.ndarray


def beam_echoes(range_m, energy, *, bin_width_s, pulse_width_s, mode, detection_threshold, cutoff_m,
                gate_bins=0, budget_bytes=WAVEFORM_BUDGET_BYTES, threads=None):
    """From sub-ray path lengths and return energies to reported echoes, per pulse.

    Round-trip times ``2 R / c``, the echo window of each pulse (:func:`echo_window`), the
    waveform in it (:func:`return_waveform`) and the receiver's processing
    (:func:`process_returns`): the one pipeline every divergent-beam sensor uses.

    Parameters
    ----------
    range_m, energy : (p, n) float
        Path length [m] (NaN for no return) and return energy of every sub-ray of every pulse.
    bin_width_s, pulse_width_s : float
        Receiver sampling interval and FWHM of the emitted pulse [s].
    mode, detection_threshold, cutoff_m
        As in :func:`process_returns`.
    gate_bins : int
        Number of bins of the full range gate to return the waveforms in; 0 (default) keeps no
        waveform.
    budget_bytes : int
        Memory budget of the working arrays of one chunk of pulses [bytes]
        (:data:`WAVEFORM_BUDGET_BYTES`, :func:`window_chunks`).
    threads : hifi.caster.ChunkPool, optional
        Without ``gate_bins``: the row chunks (half the budget each) run two at a time on
        these threads (the compiled kernels release the GIL); each writes its own rows, so the
        result does not depend on it.

    Returns
    -------
    BeamEchoes

    Notes
    -----
    Pulses are processed in chunks of similar window length (:func:`window_chunks`): pulses
    are bucketed by the power of two of the bins their echoes need and each bucket is cut so
    that a chunk's working arrays stay within ``budget_bytes``. Peak memory is then about the
    sub-ray arrays plus the budget, and time grows with the number of sub-rays and the bins
    each pulse needs, not with ``pulses x`` the widest spread of any pulse. The result does not
    depend on the chunking: each pulse's waveform is binned on the same absolute bins from the
    same window start (:attr:`EchoWindow.start_bin`), a window longer than the pulse needs only
    adds zeros, and :func:`return_waveform` and :func:`process_returns` work row by row, so the
    report and the waveform are bit for bit those of one window common to every pulse.

    Without ``gate_bins`` no waveform is synthesised: pulses are processed in row chunks of half
    the budget, each through :func:`echo_segments` (the segments :func:`process_returns` would
    find, from the few waveform samples that decide them) and :func:`segment_report`; the report
    is bit for bit the same (``tests/sensors/test_beam.py``, ``tests/sensors/test_beam_segments.py``).
    """
    rng = np.asarray(range_m, dtype=float)
    en = np.asarray(energy, dtype=float)
    p, n = rng.shape
    arrival = round_trip_s(rng)
    window = echo_window(arrival, bin_width_s=bin_width_s, pulse_width_s=pulse_width_s)
    m = 2 if mode in ("dual", "strongest_last") else 1
    out = EchoReport(np.full((p, m), np.nan), np.full((p, m), np.nan), np.full((p, m), -1, dtype=np.int64),
                     np.zeros((p, m, n), dtype=bool))
    gate = np.zeros((p, int(gate_bins)))
    if not gate_bins:
        # No waveform kept: the segments of the waveform sampled only where they can change
        # (echo_segments), then the report, in row chunks of half the budget each.
        size = max(1, (int(budget_bytes) // 2) // (_BYTES_PER_SUBRAY * max(n, 1)))

        def chunk(rows):
            local = arrival[rows] - window.start_bin[rows, None] * bin_width_s
            seg = echo_segments(local, en[rows], window.n_bins[rows], bin_width_s=bin_width_s,
                                pulse_width_s=pulse_width_s, budget_bytes=int(budget_bytes) // 2)
            report = segment_report(seg, en[rows], rng[rows], mode=mode, detection_threshold=detection_threshold,
                                    cutoff_m=cutoff_m)
            for whole, part in zip(out, report):
                whole[rows] = part

        chunks = [slice(lo, min(lo + size, p)) for lo in range(0, p, size)]
        for i in range(0, len(chunks), 2):        # two at a time: the budget's two halves
            pair = [lambda r=r: chunk(r) for r in chunks[i:i + 2]]
            if threads is None:
                for f in pair:
                    f()
            else:
                threads.run(pair)
        return BeamEchoes(out, gate, window.start_bin)
    # Per pulse: its sub-ray arrays and, when kept, the chunk's float64 range-gate row.
    row_bytes = _BYTES_PER_SUBRAY * n + 8 * int(gate_bins)
    bin_bytes = _BYTES_PER_BIN_GATE if gate_bins else _BYTES_PER_BIN
    for rows, width in window_chunks(window.n_bins, bin_bytes=bin_bytes, row_bytes=row_bytes,
                                     budget_bytes=budget_bytes):
        start = window.start_bin[rows]
        local = arrival[rows] - start[:, None] * bin_width_s
        e = en[rows]
        wf = return_waveform(local, e, bin_width_s=bin_width_s, n_bins=width, pulse_width_s=pulse_width_s)
        report = process_returns(wf, local, e, rng[rows], bin_width_s=bin_width_s, mode=mode,
                                 detection_threshold=detection_threshold, cutoff_m=cutoff_m)
        for whole, part in zip(out, report):
            whole[rows] = part
        if gate_bins:
            gate[rows] = full_waveform(wf, start, gate_bins)
    return BeamEchoes(out, gate, window.start_bin)


def _convolution_taps(bin_width_s, pulse_width_s):
    """The pulse kernel as :func:`scipy.ndimage.convolve1d` applies it in :func:`return_waveform`.

    Returns ``(taps, symmetric)``: the kernel reversed (``convolve1d`` correlates with the
    reversed weights) and whether scipy's ``NI_Correlate1D`` takes its symmetric branch (every
    pair of taps equal within ``DBL_EPSILON``, its test), which fixes the order of the sums.
    """
    taps = pulse_kernel(bin_width_s, pulse_width_s)[::-1].copy()
    half = (len(taps) - 1) // 2
    eps = np.finfo(float).eps
    symmetric = bool(np.all(np.abs(taps[half + 1:] - taps[:half][::-1]) <= eps))
    return taps, symmetric


def sampled_waveform(impulses, taps, symmetric, n_out):
    """``convolve1d(impulses, kernel, mode="constant")`` at bins ``half`` to ``half + n_out - 1``,
    with scipy's operations in scipy's order, so every sample has the same bits.

    Parameters
    ----------
    impulses : (p, w) float
        Impulse trains, ``w >= n_out + 2 half``; the samples need no zero padding.
    taps, symmetric
        :func:`_convolution_taps`.
    n_out : int

    Returns
    -------
    ndarray, shape (p, n_out)
        Sample q is the waveform at impulse bin ``q + half``. scipy's ``NI_Correlate1D``
        (scipy/ndimage/src/ni_filters.c, compiled without FMA contraction on x86-64 and
        aarch64 manylinux) computes ``o = x[i] w[0]``, then ``o += (x[i+j] + x[i-j]) w[j]`` for
        ``j = -half .. -1`` (symmetric kernel), else ``o = x[i+s2] w[s2]`` and
        ``o += x[i+j] w[j]`` for ``j = -half .. s2 - 1``; each numpy step below is one of these
        IEEE operations on whole columns.
    """
    x = np.asarray(impulses, dtype=float)
    half = (len(taps) - 1) // 2
    fw = lambda j: taps[half + j]  # noqa: E731  (scipy's fw pointer at the centre tap)
    col = lambda j: x[:, half + j:half + j + n_out]  # noqa: E731
    if symmetric:
        out = col(0) * fw(0)
        for j in range(-half, 0):
            out += (col(j) + col(-j)) * fw(j)
    else:
        size2 = len(taps) - half - 1
        out = col(size2) * fw(size2)
        for j in range(-half, size2):
            out += col(j) * fw(j)
    return out


def _arrival_parts(tau, e, bin_width_s):
    """Per sub-ray: returned?, ``t / dt``, its bin ``rint``, and its split between bins ``floor``
    and ``floor + 1`` with the energies going to each, as :func:`return_waveform` computes them."""
    has = np.isfinite(tau) & (e > 0)
    pos = np.where(has, tau, 0.0) / bin_width_s
    b0 = np.floor(pos).astype(np.int64)
    frac = pos - b0
    return has, pos, np.rint(pos).astype(np.int64), b0, e * (1.0 - frac), e * frac


def echo_segments(arrival_s, energy, n_bins, *, bin_width_s, pulse_width_s, budget_bytes=WAVEFORM_BUDGET_BYTES):
    """Segment of each sub-ray's return, as :func:`waveform_segments` finds it in the
    :func:`return_waveform` of the pulse's window: the compiled kernel
    (:func:`sensors._beam_kernel.segments_kernel`, numba).

    Parameters
    ----------
    arrival_s : (p, n) float
        Round-trip times relative to each pulse's window start (:attr:`EchoWindow.start_bin`)
        [s], NaN for none.
    energy : (p, n) float
        Return energies (0 or NaN: none).
    n_bins : (p,) int
        Window length of each pulse (:attr:`EchoWindow.n_bins`).
    bin_width_s, pulse_width_s : float
        Receiver sampling interval and pulse FWHM [s].
    budget_bytes : int
        Memory budget of the working arrays of one chunk [bytes].

    Returns
    -------
    ndarray, shape (p, n), int64
        Segment index of each sub-ray, -1 for none; the same grouping of sub-rays into segments,
        in the same time order, as :func:`waveform_segments` on :func:`return_waveform`, so
        :func:`segment_report` gives the same report bit for bit; a pulse's segments that hold
        a return are numbered 0, 1, ... (so :func:`segment_report` needs no renumbering).

    Notes
    -----
    A sub-ray's segment is the number of segment starts (bins where the waveform rises after
    not rising) up to the bin ``rint(t / dt)`` of its arrival. Sub-rays of one pulse are in
    different segments only if a start lies between their bins, so:

    - a pulse whose returns all fall in one bin (most pulses: the spot on one surface) is one
      segment, with no waveform at all;
    - otherwise only the samples from two bins before the earliest return's bin to the latest
      return's bin decide it. They are computed exactly as :func:`return_waveform` computes
      them: the same impulses, accumulated in the same order (``np.bincount`` adds in input
      order as ``np.add.at`` does), and the convolution sums of scipy in scipy's order
      (:func:`sampled_waveform`), on an impulse train that covers the kernel around those
      samples. The work per pulse follows the spread of its returns, not the pulse length,
      and the working memory is a few arrays of the sub-rays and one pulse's samples.

    A pulse whose sampled stretch would reach outside its window (never, by the margins of
    :func:`echo_window`) gets the whole waveform, as in :func:`return_waveform`.
    """
    tau = np.asarray(arrival_s, dtype=float)
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    need = np.asarray(n_bins, dtype=np.int64)
    p, n = tau.shape
    if p == 0 or n == 0:
        return np.full((p, n), -1, dtype=np.int64)
    from .._beam_kernel import segments_kernel        # numba, only where a divergent beam runs
    has, _, b_i, b0, c_lo, c_hi = _arrival_parts(tau, e, bin_width_s)
    taps, symmetric = _convolution_taps(bin_width_s, pulse_width_s)
    seg = np.empty((p, n), dtype=np.int64)
    whole = np.zeros(p, dtype=bool)
    segments_kernel(b_i, b0, c_lo, c_hi, has, need, taps, symmetric, seg, whole)
    rows_whole = np.flatnonzero(whole)
    for rows, w in window_chunks(need[rows_whole], row_bytes=_BYTES_PER_SUBRAY * n, budget_bytes=budget_bytes):
        r = rows_whole[rows]
        wf = return_waveform(tau[r], e[r], bin_width_s=bin_width_s, n_bins=w, pulse_width_s=pulse_width_s)
        seg[r] = waveform_segments(wf, tau[r], has[r], bin_width_s=bin_width_s)
    return seg


def full_waveform(waveform, start_bin, n_bins: int) -> np.ndarray:
    """Windowed waveforms placed in the full range gate.

    Parameters
    ----------
    waveform : (p, w) float
        Waveform of each pulse in its window (:func:`return_waveform` on times relative to the
        window start).
    start_bin : (p,) int
        Absolute bin of each window's first sample (:attr:`EchoWindow.start_bin`).
    n_bins : int
        Bins of the range gate.

    Returns
    -------
    ndarray, shape (p, n_bins)
        Bin b centred on ``b dt`` after emission; samples outside the gate are dropped.
    """
    wf = np.asarray(waveform, dtype=float)
    p, n_local = wf.shape
    full = np.zeros((p, n_bins))
    cols = np.asarray(start_bin)[:, None] + np.arange(n_local)
    inside = (cols >= 0) & (cols < n_bins)
    full[np.nonzero(inside)[0], cols[inside]] = wf[inside]
    return full
