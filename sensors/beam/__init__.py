"""Divergent laser beams as bundles of sub-rays, and the return waveform they produce.

Plain functions over arrays, testable without a scene: the sub-ray pattern and weights of a Gaussian beam,
the sub-rays of a pulse, the return waveform and the receiver's signal processing. The VANE
scanning-LADAR model (C. Goodin, R. Kala, A. Carrillo, L. Y. Liu, "Sensor modeling for the
Virtual Autonomous Navigation Environment", IEEE Sensors 2009, sec. 4) samples the diverging
beam with N sub-rays, each carrying the radiant intensity of its place in the beam profile, and
sums their returns in time; where the spot straddles an edge part of the energy comes from the
near surface and part from the far one, and the receiver's processing decides what range is
reported.

The sub-rays of a pulse (count, pattern, directions) are in :mod:`sensors.beam.subrays`, the
pulse, the sampled waveform, the echo windows and the waveform's segments in
:mod:`sensors.beam.waveform`, and what the receiver reports from the segments in
:mod:`sensors.beam.receiver`. This module holds the pipelines that join them
(:func:`process_returns`, :func:`beam_echoes`, :func:`echo_report`) and re-exports every name
of the three.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hifi.constants import SPEED_OF_LIGHT_M_S

from .receiver import EchoReport, bundle_echoes, compact_segments, dominant, report_arrays, segment_report
from .subrays import (MAX_SUBRAYS, footprint_directions, subray_count,
                      subray_directions, subray_pattern)
from .waveform import (BYTES_PER_BIN, BYTES_PER_BIN_GATE, BYTES_PER_SUBRAY, WAVEFORM_BUDGET_BYTES, EchoWindow,
                       arrival_parts, convolution_taps, echo_segments, echo_window, full_waveform, pulse_kernel,
                       pulse_sigma_s, return_waveform, round_trip_s, sampled_waveform, waveform_segments,
                       window_chunks)

__all__ = ["MAX_SUBRAYS", "BeamEchoes", "EchoReport", "EchoWindow", "WAVEFORM_BUDGET_BYTES", "beam_echoes",
           "bundle_echoes", "echo_report", "echo_segments", "echo_window", "footprint_directions",
           "full_waveform", "process_returns", "pulse_kernel", "pulse_sigma_s",
           "return_waveform", "round_trip_s", "sampled_waveform", "segment_report",
           "subray_count", "subray_directions", "subray_pattern", "waveform_segments", "window_chunks"]

# The names these had while they were private to this module; beam_echoes below, the oracles
# (tests/oracles/beam.py) and the tests use them from here. beam_echoes and process_returns call
# echo_segments and segment_report through this module's names, so that
# tests.oracles.numpy_kernels, which replaces them here, reaches every call.
_BYTES_PER_BIN = BYTES_PER_BIN
_BYTES_PER_BIN_GATE = BYTES_PER_BIN_GATE
_BYTES_PER_SUBRAY = BYTES_PER_SUBRAY
_convolution_taps = convolution_taps
_arrival_parts = arrival_parts
_compact_segments = compact_segments
_dominant = dominant


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
        Without ``gate_bins``: the pulses in two parts of equal work on two of these threads
        (:func:`echo_report`; the compiled kernel releases the GIL); each writes its own rows,
        so the result does not depend on it.

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

    Without ``gate_bins`` no waveform is synthesised: :func:`echo_report` finds each pulse's
    segments as :func:`echo_segments` does (the segments :func:`process_returns` would find,
    from the few waveform samples that decide them) and reports them as :func:`segment_report`
    does, pulse by pulse in one compiled pass; the report is bit for bit the same
    (``tests/sensors/test_beam.py``, ``tests/sensors/test_beam_segments.py``).
    """
    rng = np.asarray(range_m, dtype=float)
    en = np.asarray(energy, dtype=float)
    p, n = rng.shape
    gate = np.zeros((p, int(gate_bins)))
    if not gate_bins:
        # No waveform kept: the segments of the waveform sampled only where they can change,
        # and the report, one compiled pass per pulse (echo_report).
        report, start_bin = echo_report(rng, en, bin_width_s=bin_width_s, pulse_width_s=pulse_width_s, mode=mode,
                                        detection_threshold=detection_threshold, cutoff_m=cutoff_m,
                                        budget_bytes=budget_bytes, threads=threads)
        return BeamEchoes(report, gate, start_bin)
    arrival = round_trip_s(rng)
    window = echo_window(arrival, bin_width_s=bin_width_s, pulse_width_s=pulse_width_s)
    m = 2 if mode in ("dual", "strongest_last") else 1
    out = EchoReport(np.full((p, m), np.nan), np.full((p, m), np.nan), np.full((p, m), -1, dtype=np.int64),
                     np.zeros((p, m, n), dtype=bool))
    # Per pulse: its sub-ray arrays and, when kept, the chunk's float64 range-gate row.
    row_bytes = _BYTES_PER_SUBRAY * n + 8 * int(gate_bins)
    for rows, width in window_chunks(window.n_bins, bin_bytes=_BYTES_PER_BIN_GATE, row_bytes=row_bytes,
                                     budget_bytes=budget_bytes):
        start = window.start_bin[rows]
        local = arrival[rows] - start[:, None] * bin_width_s
        e = en[rows]
        wf = return_waveform(local, e, bin_width_s=bin_width_s, n_bins=width, pulse_width_s=pulse_width_s)
        report = process_returns(wf, local, e, rng[rows], bin_width_s=bin_width_s, mode=mode,
                                 detection_threshold=detection_threshold, cutoff_m=cutoff_m)
        for whole, part in zip(out, report):
            whole[rows] = part
        gate[rows] = full_waveform(wf, start, gate_bins)
    return BeamEchoes(out, gate, window.start_bin)


#: Least work (:func:`sensors._beam_kernel.window_kernel`'s cost units, 2.4 to 3.7 ns each on
#: the development machine) that :func:`echo_report` shares with other threads: about 1 ms.
#: Below, handing a part to a waiting thread and waking the caller again cost about what they
#: save on a busy machine (a ``sick_lms291`` sweep of 19 sub-rays, 0.27 ms of work: 2.35 ms a
#: step on one thread against 2.48 to 2.54 ms on two, load average 3).
_MIN_COST_THREADED = 400_000.0
#: Parts of equal work :func:`echo_report` cuts the pulses into on threads: more than the two
#: threads, so that the caller, which runs queued parts while it waits, takes over the parts of
#: a thread that starts late.
_THREAD_PARTS = 4


def echo_report(range_m, energy, *, bin_width_s, pulse_width_s, mode, detection_threshold, cutoff_m,
                budget_bytes=WAVEFORM_BUDGET_BYTES, threads=None):
    """What the receiver reports of each pulse, without a waveform: :func:`beam_echoes`
    without ``gate_bins``.

    Parameters
    ----------
    range_m, energy : (p, n) float
        Path length [m] (NaN for no return) and return energy of every sub-ray of every pulse.
    bin_width_s, pulse_width_s, mode, detection_threshold, cutoff_m, budget_bytes
        As :func:`beam_echoes` (the budget bounds the pulses that need a whole waveform).
    threads : hifi.caster.ChunkPool, optional
        Where the work is large (:data:`_MIN_COST_THREADED`, about 1 ms), the pulses are cut
        into parts of about equal work (by the spread of each pulse's returns) that run on
        these threads; each writes its own rows, so the result does not depend on it.

    Returns
    -------
    report : EchoReport
        :func:`segment_report` of :func:`echo_segments` of each pulse's returns in its
        :func:`echo_window`, bit for bit.
    start_bin : (p,) int64
        :attr:`EchoWindow.start_bin`.

    Notes
    -----
    The round-trip times and echo windows in one compiled pass
    (:func:`sensors._beam_kernel.window_kernel`), then per pulse its arrivals' bins and energy
    parts, its segments (the samples of its waveform that can decide them, as
    :func:`echo_segments`) and its report (as :func:`segment_report`) in a second
    (:func:`sensors._beam_kernel.echoes_kernel`): no (pulses, sub-rays) temporaries beside the
    times. A pulse whose sampled stretch would leave its window (never, by the margins of
    :func:`echo_window`) gets the whole waveform in numpy, as :func:`echo_segments` does.
    The numpy reference is ``tests/oracles/beam.py``'s ``echo_report``.
    """
    from .._beam_kernel import REPORT_MODES, echoes_kernel, window_kernel   # numba, only where a beam runs
    rng = np.ascontiguousarray(range_m, dtype=float)
    en = np.ascontiguousarray(energy, dtype=float)
    p, n = rng.shape
    taps, symmetric = convolution_taps(bin_width_s, pulse_width_s)
    half = (len(taps) - 1) // 2
    arrival = np.empty((p, n))
    start_bin = np.empty(p, dtype=np.int64)
    n_bins = np.empty(p, dtype=np.int64)
    cost = np.empty(p)
    window_kernel(rng, SPEED_OF_LIGHT_M_S, float(bin_width_s), half, arrival, start_bin, n_bins, cost)
    out = report_arrays(p, n, mode)
    whole = np.zeros(p, dtype=bool)
    args = (arrival, en, rng, start_bin, n_bins, float(bin_width_s), taps, symmetric, REPORT_MODES[mode],
            float(detection_threshold), float(cutoff_m))
    total = np.cumsum(cost)
    if threads is None or getattr(threads, "n_threads", 1) < 2 or p < 2 or total[-1] < _MIN_COST_THREADED:
        echoes_kernel(*args, 0, p, whole, *out)
    else:
        # parts of equal work: the work of a pulse grows with the spread of its returns, which
        # varies along a sweep (near ground at grazing incidence, far walls face on)
        parts = _THREAD_PARTS
        cuts = np.searchsorted(total, total[-1] * np.arange(1, parts) / parts)
        bounds = [0, *np.clip(cuts, 0, p).tolist(), p]
        threads.run([lambda a=a, b=b: echoes_kernel(*args, a, b, whole, *out)
                     for a, b in zip(bounds[:-1], bounds[1:]) if b > a])
    rows = np.flatnonzero(whole)
    if rows.size:
        e = np.nan_to_num(en)
        for part, w in window_chunks(n_bins[rows], row_bytes=_BYTES_PER_SUBRAY * n, budget_bytes=int(budget_bytes) // 2):
            r = rows[part]
            local = arrival[r] - start_bin[r, None] * bin_width_s
            wf = return_waveform(local, e[r], bin_width_s=bin_width_s, n_bins=w, pulse_width_s=pulse_width_s)
            seg = waveform_segments(wf, local, np.isfinite(local) & (e[r] > 0), bin_width_s=bin_width_s)
            report = segment_report(seg, en[r], rng[r], mode=mode, detection_threshold=detection_threshold,
                                    cutoff_m=cutoff_m)
            for whole_part, part_report in zip(out, report):
                whole_part[r] = part_report
    return out, start_bin
