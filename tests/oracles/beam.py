"""Oracles of the divergent-beam receiver (:mod:`sensors.beam`): the segment search and the
report written with numpy, whole arrays at a time.

:func:`echo_segments` finds the segments of each pulse's returns by synthesising the samples
around them; :func:`segment_report` reports them in every mode; :func:`echo_report` joins them
from the sub-rays' ranges and energies. The product runs the compiled kernels of
:mod:`sensors._beam_kernel` for the three; ``tests/sensors/test_beam_segments.py`` holds them
to these bit for bit.
"""

from __future__ import annotations

import numpy as np

from sensors.beam import (_BYTES_PER_SUBRAY, WAVEFORM_BUDGET_BYTES, EchoReport, _arrival_parts, _compact_segments,
                          _convolution_taps, _dominant, echo_window, return_waveform, round_trip_s, sampled_waveform,
                          waveform_segments, window_chunks)


def echo_segments(arrival_s, energy, n_bins, *, bin_width_s, pulse_width_s,
                            budget_bytes=WAVEFORM_BUDGET_BYTES):
    """Segment of each sub-ray's return, as :func:`waveform_segments` finds it in the
    :func:`return_waveform` of the pulse's window, without synthesising whole waveforms: the
    numpy reference of :func:`echo_segments`.

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
        :func:`segment_report` gives the same report bit for bit (the numbers differ: here a
        pulse's segments count from its earliest return).

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
      samples. The work per pulse follows the spread of its returns, not the pulse length.

    A pulse whose sampled stretch would reach outside its window (never, by the margins of
    :func:`echo_window`) gets the whole waveform, as in :func:`return_waveform`.
    """
    tau = np.asarray(arrival_s, dtype=float)
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    need = np.asarray(n_bins, dtype=np.int64)
    p, n = tau.shape
    has, _, b_i, b0_all, c_lo, c_hi = _arrival_parts(tau, e, bin_width_s)
    seg = np.where(has, 0, -1).astype(np.int64)
    if p == 0 or n == 0:
        return seg
    b_min = np.min(np.where(has, b_i, np.iinfo(np.int64).max), axis=1)
    b_max = np.max(np.where(has, b_i, -1), axis=1)
    taps, symmetric = _convolution_taps(bin_width_s, pulse_width_s)
    half = (len(taps) - 1) // 2
    spread = np.flatnonzero(b_max > b_min)            # returns in more than one bin
    inside = (b_min[spread] - 2 - half >= 0) & (b_max[spread] + half < need[spread])
    sampled, whole = spread[inside], spread[~inside]
    # Grouped by the number of samples (not by the impulse train, which adds 2 half to each):
    # per sample its impulse, the sample, the sum temporaries, starts and labels (int64).
    n_samples = b_max[sampled] - b_min[sampled] + 3
    for rows, n_out in window_chunks(n_samples, bin_bytes=48, row_bytes=_BYTES_PER_SUBRAY * n + 16 * half,
                                     budget_bytes=budget_bytes):
        r = sampled[rows]
        w = n_out + 2 * half
        origin = b_min[r] - 2 - half                  # window bin of impulse column 0
        ok = has[r]
        b0 = b0_all[r]
        base = (np.arange(r.size) * w - origin)[:, None]
        keys = np.concatenate([(base + b0)[ok], (base + b0 + 1)[ok]])
        weights = np.concatenate([c_lo[r][ok], c_hi[r][ok]])
        impulses = np.bincount(keys, weights=weights, minlength=r.size * w).reshape(r.size, w)
        wf = sampled_waveform(impulses, taps, symmetric, n_out)        # window bins b_min - 2 ...
        starts = np.zeros((r.size, n_out), dtype=np.int64)
        starts[:, 3:] = (wf[:, 3:] > wf[:, 2:-1]) & (wf[:, 2:-1] <= wf[:, 1:-2])
        label = np.cumsum(starts, axis=1)
        col = np.where(ok, b_i[r] - b_min[r][:, None] + 2, 0)
        seg[r] = np.where(ok, np.take_along_axis(label, col, axis=1), -1)
    for rows, w in window_chunks(need[whole], row_bytes=_BYTES_PER_SUBRAY * n, budget_bytes=budget_bytes):
        r = whole[rows]
        wf = return_waveform(tau[r], np.asarray(energy, dtype=float)[r], bin_width_s=bin_width_s, n_bins=w, pulse_width_s=pulse_width_s)
        seg[r] = waveform_segments(wf, tau[r], has[r], bin_width_s=bin_width_s)
    return seg


def segment_report(seg_i, energy, range_m, *, mode, detection_threshold, cutoff_m):
    """What the receiver reports, from the segment each sub-ray's return fell in (numpy; the
    reference of :func:`segment_report`).

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
    """
    seg_i = np.asarray(seg_i, dtype=np.int64)
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    rng = np.asarray(range_m, dtype=float)
    p, n = seg_i.shape
    n_seg = max(int(seg_i.max()) + 1 if seg_i.size else 1, 1)
    if n_seg > n:
        # Renumber each pulse's occupied segments 0, 1, ... in time order (segments without a
        # return are never reported): the (p, n_seg) arrays below then stay within (p, n).
        seg_i = _compact_segments(seg_i)
        n_seg = max(int(seg_i.max()) + 1, 1)
    has = seg_i >= 0
    key = np.arange(p)[:, None] * n_seg + seg_i
    ok = seg_i >= 0
    # Centroids as reference + weighted mean offset: exact for one sub-ray, and well
    # conditioned (offsets of centimetres, not ranges of tens of metres).
    ref = np.min(np.where(has, rng, np.inf), axis=1)      # nearest return of each pulse
    ref = np.where(np.isfinite(ref), ref, 0.0)
    dev = np.where(has, rng - ref[:, None], 0.0)
    seg_e = np.bincount(key[ok], weights=e[ok], minlength=p * n_seg).reshape(p, n_seg)
    seg_ed = np.bincount(key[ok], weights=(e * dev)[ok], minlength=p * n_seg).reshape(p, n_seg)
    with np.errstate(invalid="ignore", divide="ignore"):
        seg_r = ref[:, None] + seg_ed / seg_e
    detected = seg_e >= detection_threshold
    detected &= seg_e > 0
    any_det = detected.any(axis=1)
    first = np.where(any_det, np.argmax(detected, axis=1), -1)
    last = np.where(any_det, n_seg - 1 - np.argmax(detected[:, ::-1], axis=1), -1)
    strongest = np.where(any_det, np.argmax(np.where(detected, seg_e, -np.inf), axis=1), -1)

    def pick(seg):
        r = np.where(seg >= 0, np.take_along_axis(seg_r, np.maximum(seg, 0)[:, None], axis=1)[:, 0], np.nan)
        en = np.where(seg >= 0, np.take_along_axis(seg_e, np.maximum(seg, 0)[:, None], axis=1)[:, 0], np.nan)
        members = (seg_i == seg[:, None]) & (seg >= 0)[:, None]
        dom = _dominant(np.where(members, e, 0.0), seg >= 0)
        return r, en, dom, members

    if mode == "average":
        r_first = pick(first)[0]
        near = has & (rng <= r_first[:, None] + cutoff_m) & np.isfinite(r_first)[:, None] & any_det[:, None]
        we = np.where(near, e, 0.0)
        tot = we.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(tot > 0, ref + (we * dev).sum(axis=1) / tot, np.nan)
        r = np.where(any_det, r, np.nan)
        en = np.where(any_det, tot, np.nan)
        return EchoReport(r[:, None], en[:, None], _dominant(we, any_det)[:, None], near[:, None, :])
    if mode == "strongest_last":
        masked = np.where(detected, seg_e, -np.inf)
        masked[np.arange(p), np.maximum(strongest, 0)] = -np.inf
        has_second = np.isfinite(masked).any(axis=1) if n_seg > 1 else np.zeros(p, dtype=bool)
        second = np.where(has_second, np.argmax(masked, axis=1), strongest)
        other = np.where(last != strongest, last, second)
        chosen = [strongest, other]
    else:
        chosen = {"first": [first], "last": [last], "strongest": [strongest], "dual": [first, last]}[mode]
    parts = [pick(s) for s in chosen]
    return EchoReport(*(np.stack([q[k] for q in parts], axis=1) for k in range(4)))




def echo_report(range_m, energy, *, bin_width_s, pulse_width_s, mode, detection_threshold, cutoff_m,
                budget_bytes=WAVEFORM_BUDGET_BYTES, threads=None):
    """What the receiver reports of each pulse, without a waveform (numpy; the reference of
    :func:`sensors.beam.echo_report`): round-trip times, each pulse's :func:`echo_window`, and
    in row chunks of half the budget :func:`echo_segments` and :func:`segment_report` above.
    ``threads`` is accepted and not used (the result does not depend on it).

    Returns
    -------
    (EchoReport, start_bin)
    """
    rng = np.asarray(range_m, dtype=float)
    en = np.asarray(energy, dtype=float)
    p, n = rng.shape
    arrival = round_trip_s(rng)
    window = echo_window(arrival, bin_width_s=bin_width_s, pulse_width_s=pulse_width_s)
    m = 2 if mode in ("dual", "strongest_last") else 1
    out = EchoReport(np.full((p, m), np.nan), np.full((p, m), np.nan), np.full((p, m), -1, dtype=np.int64),
                     np.zeros((p, m, n), dtype=bool))
    size = max(1, (int(budget_bytes) // 2) // (_BYTES_PER_SUBRAY * max(n, 1)))
    for lo in range(0, p, size):
        rows = slice(lo, min(lo + size, p))
        local = arrival[rows] - window.start_bin[rows, None] * bin_width_s
        seg = echo_segments(local, en[rows], window.n_bins[rows], bin_width_s=bin_width_s,
                            pulse_width_s=pulse_width_s, budget_bytes=int(budget_bytes) // 2)
        report = segment_report(seg, en[rows], rng[rows], mode=mode, detection_threshold=detection_threshold,
                                cutoff_m=cutoff_m)
        for whole, part in zip(out, report):
            whole[rows] = part
    return out, window.start_bin
