"""The pulse and the return waveform of a divergent beam: the pulse kernel, the waveform sampled
from the sub-rays' returns, the echo window of each pulse and the chunking of pulses by window
length, and the segments the receiver splits the waveform into (:func:`waveform_segments` on a
whole waveform, :func:`echo_segments` from the few samples that decide them).

The receiver's report from those segments is :mod:`sensors.beam.receiver`; the pipeline that
joins them, :func:`sensors.beam.beam_echoes`, and every name here are importable from
:mod:`sensors.beam`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.special import erf

from hifi.constants import SPEED_OF_LIGHT_M_S

__all__ = ["BYTES_PER_BIN", "BYTES_PER_BIN_GATE", "BYTES_PER_SUBRAY", "EchoWindow", "WAVEFORM_BUDGET_BYTES",
           "arrival_parts", "convolution_taps", "echo_segments", "echo_window", "full_waveform", "pulse_kernel",
           "pulse_sigma_s", "return_waveform", "round_trip_s", "sampled_waveform", "waveform_segments",
           "window_chunks"]

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
BYTES_PER_BIN = 32

#: The same when the full range-gate waveform is kept: the waveform held while
#: :func:`full_waveform` builds its int64 column indices, mask, row/column indices and
#: gathered values. Measured with tracemalloc: 48 B; rounded up to 56.
BYTES_PER_BIN_GATE = 56

#: Working memory per (pulse, sub-ray) [bytes]: the chunk's copies of the sub-ray arrays and the
#: temporaries of :func:`return_waveform` and :func:`process_returns`. Measured with
#: tracemalloc: about 100 B; rounded up to 128.
BYTES_PER_SUBRAY = 128


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


def window_chunks(n_bins, *, bin_bytes=BYTES_PER_BIN, row_bytes=0, budget_bytes=WAVEFORM_BUDGET_BYTES):
    """Pulses grouped by the length of their echo window and cut into chunks within a budget.

    Parameters
    ----------
    n_bins : (p,) int
        Window length each pulse needs (:attr:`EchoWindow.n_bins`).
    bin_bytes : int
        Working memory per (pulse, window bin) [bytes] (:data:`BYTES_PER_BIN`).
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


def round_trip_s(range_m):
    """Round-trip time 2 R / c [s] of a path of one-way length ``range_m`` [m]."""
    return 2.0 * np.asarray(range_m, dtype=float) / SPEED_OF_LIGHT_M_S


def convolution_taps(bin_width_s, pulse_width_s):
    """The pulse kernel as :func:`scipy.ndimage.convolve1d` applies it in :func:`return_waveform`.

    Returns ``(taps, symmetric)``: the kernel reversed (``convolve1d`` correlates with the
    reversed weights) and whether scipy's ``NI_Correlate1D`` takes its symmetric branch (every
    pair of taps equal within ``DBL_EPSILON``, its test), which fixes the order of the sums.
    """
    taps, symmetric = _taps(float(bin_width_s), float(pulse_width_s))
    return taps.copy(), symmetric


@lru_cache(maxsize=16)
def _taps(bin_width_s: float, pulse_width_s: float):
    """:func:`convolution_taps`, kept per (bin, pulse) width: a sensor asks for the same taps
    every frame, and the erf of :func:`pulse_kernel` costs more than its receiver's other
    bookkeeping per frame. Read-only; callers get a copy."""
    taps = pulse_kernel(bin_width_s, pulse_width_s)[::-1].copy()
    half = (len(taps) - 1) // 2
    eps = np.finfo(float).eps
    symmetric = bool(np.all(np.abs(taps[half + 1:] - taps[:half][::-1]) <= eps))
    taps.flags.writeable = False
    return taps, symmetric


def sampled_waveform(impulses, taps, symmetric, n_out):
    """``convolve1d(impulses, kernel, mode="constant")`` at bins ``half`` to ``half + n_out - 1``,
    with scipy's operations in scipy's order, so every sample has the same bits.

    Parameters
    ----------
    impulses : (p, w) float
        Impulse trains, ``w >= n_out + 2 half``; the samples need no zero padding.
    taps, symmetric
        :func:`convolution_taps`.
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


def arrival_parts(tau, e, bin_width_s):
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
    has, _, b_i, b0, c_lo, c_hi = arrival_parts(tau, e, bin_width_s)
    taps, symmetric = convolution_taps(bin_width_s, pulse_width_s)
    seg = np.empty((p, n), dtype=np.int64)
    whole = np.zeros(p, dtype=bool)
    segments_kernel(b_i, b0, c_lo, c_hi, has, need, taps, symmetric, seg, whole)
    rows_whole = np.flatnonzero(whole)
    for rows, w in window_chunks(need[rows_whole], row_bytes=BYTES_PER_SUBRAY * n, budget_bytes=budget_bytes):
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
