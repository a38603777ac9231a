"""Compiled kernels of the divergent-beam receiver (numba): :func:`sensors.beam.echo_segments`,
:func:`sensors.beam.segment_report` and the two joined, :func:`sensors.beam.echo_report`.

Kept apart from :mod:`sensors.beam` so that importing the sensors does not import numba
(a run imports it with the caster's kernels, :mod:`hifi.kernels`). ``cache=True`` keeps the
machine code in ``__pycache__`` (first use compiles, about 5 s; later processes load it); no
``fastmath``, so every floating-point operation is the IEEE operation written, in the order
written, as in the numpy oracle of ``tests/oracles/beam.py``.
"""

from __future__ import annotations

import numba
import numpy as np

#: Samples of the waveform computed together (:func:`_pulse_segments`).
_BLOCK = 4
_U1, _U2, _U3 = np.uint64(1), np.uint64(2), np.uint64(3)
#: Return modes of :func:`report_kernel`.
REPORT_MODES = {"first": 0, "last": 1, "strongest": 2, "dual": 3, "strongest_last": 4, "average": 5}


@numba.njit(cache=True, nogil=True)
def _scratch(n_samples, half):  # pragma: no cover (compiled)
    """Per-pulse work arrays for up to ``n_samples`` samples: impulses (with the kernel's reach
    and a block's slack on either side), samples, labels, ranks."""
    return (np.zeros(n_samples + 2 * half + _BLOCK), np.zeros(n_samples + _BLOCK),
            np.zeros(n_samples, dtype=np.int64), np.zeros(n_samples, dtype=np.int64))


@numba.njit(cache=True, nogil=True, inline="always")
def _bin_span(b_i, has):  # pragma: no cover (compiled)
    """Earliest and latest bin of a pulse's returns, (-1, -1) for none."""
    b_min = np.int64(-1)
    b_max = np.int64(-1)
    for j in range(b_i.shape[0]):
        if has[j]:
            b = b_i[j]
            if b_max < 0:
                b_min = b
                b_max = b
            else:
                b_min = min(b_min, b)
                b_max = max(b_max, b)
    return b_min, b_max


@numba.njit(cache=True, nogil=True, inline="always")
def _pulse_segments(b_i, b0, c_lo, c_hi, has, b_min, b_max, need, taps, symmetric,
                    imp, wf, lab, rank, nz, seg):  # pragma: no cover (compiled)
    """Segments of one pulse's returns (rows of :func:`segments_kernel`'s arrays; ``b_min``,
    ``b_max`` from :func:`_bin_span`; work arrays from :func:`_scratch` for at least
    ``b_max - b_min + 3`` samples, ``imp`` all zeros, ``nz`` at least 2 n long). Fills ``seg``;
    returns True (``seg`` all -1) where the sampled stretch would leave the window of ``need``
    bins: that pulse is left to the whole-waveform path."""
    n = b_i.shape[0]
    half = (taps.shape[0] - 1) // 2
    size2 = taps.shape[0] - half - 1
    for j in range(n):
        seg[j] = -1
    if b_max < 0:
        return False
    if b_max == b_min:
        for j in range(n):
            if has[j]:
                seg[j] = 0
        return False
    origin = b_min - 2 - half
    if origin < 0 or b_max + half >= need:
        return True
    n_out = b_max - b_min + 3
    # imp is all zeros here (the non-zero entries of the last pulse were reset); this
    # pulse's impulses lie in bins b_min - 1 .. b_max + 1 (columns half + 1 .. half + n_out).
    # np.add.at order of return_waveform: every lower part, then every upper part.
    for j in range(n):
        if has[j]:
            imp[b0[j] - origin] += c_lo[j]
    for j in range(n):
        if has[j]:
            imp[b0[j] + 1 - origin] += c_hi[j]
    m = 0                                         # positions of the non-zero impulses
    for i in range(half + 1, half + n_out + 1):
        if imp[i] != 0.0:
            nz[m] = i
            m += 1
    if symmetric:
        # scipy's NI_Correlate1D sums: o = x[i] w[0], then o += (x[i-d] + x[i+d]) w[-d] for
        # d = half .. 1 (symmetric branch). A pair of zero impulses adds (0 + 0) w = +0.0,
        # which changes no sum here (every impulse is >= 0 or NaN, so no sum is -0.0): each
        # sample's sum starts at the largest d that can reach a non-zero impulse, in the same
        # descending order, with the same expression. _BLOCK samples at a time, each its own
        # sum (independent chains of additions the processor overlaps; each sum's operations
        # and order are unchanged; the last block's extra samples read zeros and are not
        # used). Sample 0 decides no segment start (below) and is not computed.
        lo = 0          # first non-zero impulse at >= (block's first sample) - half
        hi = -1         # last non-zero impulse at <= (block's last sample) + half
        for q in range(1, n_out, _BLOCK):
            i = q + half
            while lo < m and nz[lo] < i - half:
                lo += 1
            while hi + 1 < m and nz[hi + 1] <= i + _BLOCK - 1 + half:
                hi += 1
            top = 0
            if lo <= hi:
                top = min(half, max(i + _BLOCK - 1 - nz[lo], nz[hi] - i))
            # unsigned indices (all >= 0 here): numba then adds no negative-index wraparound,
            # so the four adjacent loads on either side are plain loads
            ui = np.uint64(i)
            acc0 = imp[ui] * taps[half]
            acc1 = imp[ui + _U1] * taps[half]
            acc2 = imp[ui + _U2] * taps[half]
            acc3 = imp[ui + _U3] * taps[half]
            for d in range(top, 0, -1):
                w = taps[half - d]
                a = np.uint64(i - d)
                c = np.uint64(i + d)
                acc0 += (imp[a] + imp[c]) * w
                acc1 += (imp[a + _U1] + imp[c + _U1]) * w
                acc2 += (imp[a + _U2] + imp[c + _U2]) * w
                acc3 += (imp[a + _U3] + imp[c + _U3]) * w
            wf[q] = acc0
            wf[q + 1] = acc1
            wf[q + 2] = acc2
            wf[q + 3] = acc3
    else:
        for q in range(1, n_out):
            i = q + half
            acc = imp[i + size2] * taps[half + size2]
            for jj in range(-half, size2):
                acc += imp[i + jj] * taps[half + jj]
            wf[q] = acc
    for t in range(m):
        imp[nz[t]] = 0.0
    count = 0
    lab[0] = 0
    lab[1] = 0
    lab[2] = 0
    for q in range(3, n_out):
        if wf[q] > wf[q - 1] and wf[q - 1] <= wf[q - 2]:
            count += 1
        lab[q] = count
    # Number the segments that hold a return 0, 1, ... in time order (the empty ones
    # between them are never reported), so a pulse has at most n segments.
    for c in range(count + 1):
        rank[c] = -1
    for j in range(n):
        if has[j]:
            rank[lab[b_i[j] - b_min + 2]] = 0
    r = 0
    for c in range(count + 1):
        if rank[c] == 0:
            rank[c] = r
            r += 1
    for j in range(n):
        if has[j]:
            seg[j] = rank[lab[b_i[j] - b_min + 2]]
    return False


@numba.njit(cache=True, nogil=True)
def segments_kernel(b_i, b0, c_lo, c_hi, has, need, taps, symmetric, seg, whole):  # pragma: no cover (compiled)
    """Segment of each sub-ray's return, pulse by pulse (see :func:`sensors.beam.echo_segments`).

    Parameters
    ----------
    b_i : (p, n) int64
        Bin of each arrival, ``rint(t / dt)``.
    b0 : (p, n) int64
        ``floor(t / dt)``: the arrival is split between bins b0 and b0 + 1.
    c_lo, c_hi : (p, n) float64
        The parts of its energy in bin b0 and b0 + 1, ``e (1 - frac)`` and ``e frac``.
    has : (p, n) bool
    need : (p,) int64
        Window length of each pulse [bins].
    taps : (2 half + 1,) float64
        The reversed pulse kernel; ``symmetric``: scipy's symmetric branch.
    seg : (p, n) int64, out
        Filled with the segment of each return, -1 for none; a pulse's segments that hold a
        return are numbered 0, 1, ... in time order.
    whole : (p,) bool, out
        Set where the sampled stretch would leave the window: those pulses are left to the
        whole-waveform path.
    """
    p, n = b_i.shape
    half = (taps.shape[0] - 1) // 2
    imp, wf, lab, rank = _scratch(64, half)
    nz = np.zeros(2 * n + 2, dtype=np.int64)
    for k in range(p):
        b_min, b_max = _bin_span(b_i[k], has[k])
        if b_max - b_min + 3 > lab.shape[0]:
            imp, wf, lab, rank = _scratch(2 * (b_max - b_min + 3), half)
        if _pulse_segments(b_i[k], b0[k], c_lo[k], c_hi[k], has[k], b_min, b_max, need[k], taps, symmetric,
                           imp, wf, lab, rank, nz, seg[k]):
            whole[k] = True


@numba.njit(cache=True, nogil=True)
def _block_sum(a, lo, n):  # pragma: no cover (compiled)
    """:func:`_numpy_sum` of at most 128 terms."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(cache=True, nogil=True)
def _numpy_sum(a, n):  # pragma: no cover (compiled)
    """``a[:n]``'s sum as numpy's ``add.reduce`` of a contiguous row adds it (after its
    identity 0.0, which the caller adds): the pairwise sum of
    numpy/_core/src/umath/loops_utils.h.src. Below 8 terms one by one; up to 128, eight running
    sums combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the rest one by
    one; above, the sum of the two halves' sums, cut at a multiple of 8 (the recursion walked
    with a stack: numba's cache does not keep recursive functions)."""
    if n <= 128:
        return _block_sum(a, 0, n)
    depth = 64
    los = np.empty(depth, dtype=np.int64)
    lens = np.empty(depth, dtype=np.int64)
    stage = np.empty(depth, dtype=np.int64)
    vals = np.empty(depth)
    sp = 1
    los[0], lens[0], stage[0] = 0, n, 0
    vsp = 0
    while sp > 0:
        t = sp - 1
        m = lens[t]
        if m <= 128:
            vals[vsp] = _block_sum(a, los[t], m)
            vsp += 1
            sp -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        if stage[t] == 0:
            stage[t] = 1
            los[sp], lens[sp], stage[sp] = los[t], n2, 0
            sp += 1
        elif stage[t] == 1:
            stage[t] = 2
            los[sp], lens[sp], stage[sp] = los[t] + n2, m - n2, 0
            sp += 1
        else:
            vals[vsp - 2] = vals[vsp - 2] + vals[vsp - 1]
            vsp -= 1
            sp -= 1
    return vals[0]


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pulse_report(seg, e, rng, mode, threshold, cutoff_m, n_seg, seg_e, seg_ed, masked, we, wd,
                  out_r, out_e, out_dom, out_members):  # pragma: no cover (compiled)
    """One pulse of :func:`report_kernel` (rows of its arrays; work arrays ``seg_e``,
    ``seg_ed``, ``masked`` of at least ``n_seg``, ``we``, ``wd`` of n)."""
    n = seg.shape[0]
    ref = np.inf
    for j in range(n):                 # np.min: a NaN propagates
        if seg[j] >= 0 and (np.isnan(rng[j]) or rng[j] < ref):
            ref = rng[j]
    if not np.isfinite(ref):
        ref = 0.0
    for s in range(n_seg):
        seg_e[s] = 0.0
        seg_ed[s] = 0.0
    for j in range(n):
        s = seg[j]
        if s >= 0:
            seg_e[s] += e[j]
    for j in range(n):
        s = seg[j]
        if s >= 0:
            seg_ed[s] += e[j] * (rng[j] - ref)
    first = -1
    last = -1
    strongest = -1
    best = -np.inf
    for s in range(n_seg):
        if seg_e[s] >= threshold and seg_e[s] > 0.0:
            if first < 0:
                first = s
            last = s
            if strongest < 0 or seg_e[s] > best:
                strongest = s
                best = seg_e[s]
    if mode == 5:
        # average: every return within cutoff_m behind the first detected segment's centroid,
        # its energy-weighted mean offset; the sums as numpy's row sums (_numpy_sum)
        if first < 0:
            out_r[0] = np.nan
            out_e[0] = np.nan
            out_dom[0] = -1
            for j in range(n):
                out_members[0, j] = False
            return
        r_first = ref + seg_ed[first] / seg_e[first]
        finite = np.isfinite(r_first)
        dom = 0
        top = -np.inf
        for j in range(n):
            near = seg[j] >= 0 and rng[j] <= r_first + cutoff_m and finite
            out_members[0, j] = near
            we[j] = e[j] if near else 0.0
            wd[j] = we[j] * ((rng[j] - ref) if seg[j] >= 0 else 0.0)
            if we[j] > top:            # np.argmax: the first of equal maxima
                top = we[j]
                dom = j
        tot = 0.0 + _numpy_sum(we, n)
        sd = 0.0 + _numpy_sum(wd, n)
        out_r[0] = ref + sd / tot if tot > 0 else np.nan
        out_e[0] = tot
        out_dom[0] = dom
        return
    c0 = first
    c1 = -1
    if mode == 1:
        c0 = last
    elif mode == 2:
        c0 = strongest
    elif mode == 3:
        c1 = last
    elif mode == 4:
        for s in range(n_seg):
            detected = seg_e[s] >= threshold and seg_e[s] > 0.0
            masked[s] = seg_e[s] if detected else -np.inf
        masked[max(strongest, 0)] = -np.inf
        has_second = False
        second = 0
        for s in range(n_seg):
            if np.isfinite(masked[s]):
                has_second = True
            if masked[s] > masked[second]:
                second = s
        if not has_second:
            second = strongest
        c0 = strongest
        c1 = last if last != strongest else second
    for slot in range(out_r.shape[0]):
        s = c0 if slot == 0 else c1
        if s < 0:
            out_r[slot] = np.nan
            out_e[slot] = np.nan
            out_dom[slot] = -1
            for j in range(n):
                out_members[slot, j] = False
            continue
        out_r[slot] = ref + seg_ed[s] / seg_e[s]
        out_e[slot] = seg_e[s]
        dom = 0
        top = -np.inf
        for j in range(n):
            member = seg[j] == s
            out_members[slot, j] = member
            w = e[j] if member else 0.0
            if w > top:
                top = w
                dom = j
        out_dom[slot] = dom


@numba.njit(cache=True, nogil=True, error_model="numpy")
def report_kernel(seg, e, rng, mode, threshold, cutoff_m, n_seg, out_r, out_e, out_dom, out_members):  # pragma: no cover
    """:func:`sensors.beam.segment_report` pulse by pulse.

    Parameters
    ----------
    seg : (p, n) int64
        Segment of each sub-ray, -1 for none, every value < ``n_seg``.
    e, rng : (p, n) float64
        Return energies (NaN replaced by 0) and path lengths [m].
    mode : int
        :data:`REPORT_MODES`.
    threshold, cutoff_m : float
    n_seg : int
    out_r, out_e : (p, m) float64, out_dom : (p, m) int64, out_members : (p, m, n) bool
        Filled as :class:`sensors.beam.EchoReport`.

    Notes
    -----
    The sums are ``np.bincount``'s: from 0.0, in sub-ray order; the range of a segment is
    ``ref + sum(e (r - ref)) / sum(e)`` with ``ref`` the pulse's nearest return; the choices
    follow ``np.argmax`` (the first of equal maxima), as the reference; ``average``'s two
    sums over the sub-rays are numpy's row sums (:func:`_numpy_sum`).
    """
    p, n = seg.shape
    size = max(n_seg, 1)
    seg_e, seg_ed, masked = np.zeros(size), np.zeros(size), np.zeros(size)
    we, wd = np.zeros(n), np.zeros(n)
    for k in range(p):
        _pulse_report(seg[k], e[k], rng[k], mode, threshold, cutoff_m, n_seg, seg_e, seg_ed, masked, we, wd,
                      out_r[k], out_e[k], out_dom[k], out_members[k])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def window_kernel(range_m, speed_m_s, bin_width_s, half, arrival, start_bin, n_bins, cost):  # pragma: no cover
    """Round-trip times and each pulse's echo window (:func:`sensors.beam.echo_window`).

    Parameters
    ----------
    range_m : (p, n) float64
        Path lengths [m], NaN for none.
    speed_m_s, bin_width_s : float
    half : int
        Half-width of the pulse kernel [bins].
    arrival : (p, n) float64, out
        ``2 R / c`` [s].
    start_bin, n_bins : (p,) int64, out
        :class:`sensors.beam.EchoWindow`.
    cost : (p,) float64, out
        The work :func:`echoes_kernel` will spend on the pulse, in sub-ray units: its
        sub-rays plus a quarter of (samples x kernel terms); for cutting the pulses into parts
        of equal work.

    Notes
    -----
    As numpy: up to 16 sub-rays the window spans the NaN-ignoring ``np.fmin`` / ``np.fmax`` of
    the times, beyond the finite ones (``echo_window``'s two branches).
    """
    p, n = range_m.shape
    for k in range(p):
        t_min = np.inf
        t_max = -np.inf
        for j in range(n):
            a = 2.0 * range_m[k, j] / speed_m_s
            arrival[k, j] = a
            if n <= 16 or np.isfinite(a):
                if a < t_min:
                    t_min = a
                if a > t_max:
                    t_max = a
        if not np.isfinite(t_min):
            t_min = 0.0
            t_max = 0.0
        start_bin[k] = np.int64(np.floor(t_min / bin_width_s)) - half - 2
        span = np.int64(np.ceil((t_max - t_min) / bin_width_s))
        n_bins[k] = span + 2 * half + 6
        samples = min(max(span, 0), 1 << 20) + 3
        cost[k] = n + samples * min(samples + 3, half) / 4.0


@numba.njit(cache=True, nogil=True, error_model="numpy")
def echoes_kernel(arrival, energy, range_m, start_bin, n_bins, bin_width_s, taps, symmetric, mode, threshold,
                  cutoff_m, lo, hi, whole, out_r, out_e, out_dom, out_members):  # pragma: no cover (compiled)
    """Pulses ``lo:hi`` from round-trip times to the report: each pulse's times in its window,
    the bins and energy parts of its arrivals (:func:`sensors.beam.waveform.arrival_parts`), its
    segments (:func:`_pulse_segments`) and report (:func:`_pulse_report`), one pulse at a time.

    Parameters
    ----------
    arrival, start_bin, n_bins
        From :func:`window_kernel`.
    energy, range_m : (p, n) float64
        Return energies (NaN: none; NaN and infinities replaced as ``np.nan_to_num`` does) and
        path lengths [m].
    bin_width_s : float
    taps, symmetric
        :func:`sensors.beam.waveform.convolution_taps`.
    mode, threshold, cutoff_m
        As :func:`report_kernel`.
    lo, hi : int
        The pulses this call fills; calls on disjoint ranges may run at once.
    whole : (p,) bool, out
        Set where a pulse needs the whole waveform (:func:`segments_kernel`): its report is
        left to the caller.
    out_r, out_e, out_dom, out_members
        As :func:`report_kernel`.
    """
    p, n = arrival.shape
    half = (taps.shape[0] - 1) // 2
    big = np.finfo(np.float64).max
    imp, wf, lab, rank = _scratch(64, half)
    nz = np.zeros(2 * n + 2, dtype=np.int64)
    b_i = np.zeros(n, dtype=np.int64)
    b0 = np.zeros(n, dtype=np.int64)
    c_lo, c_hi, e = np.zeros(n), np.zeros(n), np.zeros(n)
    has = np.zeros(n, dtype=np.bool_)
    seg = np.zeros(n, dtype=np.int64)
    seg_e, seg_ed, masked = np.zeros(max(n, 1)), np.zeros(max(n, 1)), np.zeros(max(n, 1))
    we, wd = np.zeros(n), np.zeros(n)
    for k in range(lo, hi):
        shift = np.float64(start_bin[k]) * bin_width_s
        for j in range(n):
            x = energy[k, j]
            if np.isnan(x):
                x = 0.0
            elif x == np.inf:
                x = big
            elif x == -np.inf:
                x = -big
            e[j] = x
            t = arrival[k, j] - shift
            h = np.isfinite(t) and x > 0
            has[j] = h
            pos = (t if h else 0.0) / bin_width_s
            f = np.floor(pos)
            b0[j] = np.int64(f)
            frac = pos - np.float64(b0[j])
            b_i[j] = np.int64(np.rint(pos))
            c_lo[j] = x * (1.0 - frac)
            c_hi[j] = x * frac
        b_min, b_max = _bin_span(b_i, has)
        if b_max - b_min + 3 > lab.shape[0]:
            imp, wf, lab, rank = _scratch(2 * (b_max - b_min + 3), half)
        if _pulse_segments(b_i, b0, c_lo, c_hi, has, b_min, b_max, n_bins[k], taps, symmetric,
                           imp, wf, lab, rank, nz, seg):
            whole[k] = True
            continue
        n_seg = 1
        for j in range(n):
            n_seg = max(n_seg, seg[j] + 1)
        _pulse_report(seg, e, range_m[k], mode, threshold, cutoff_m, n_seg, seg_e, seg_ed, masked, we, wd,
                      out_r[k], out_e[k], out_dom[k], out_members[k])
