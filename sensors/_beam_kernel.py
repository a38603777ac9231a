"""Compiled kernels of the divergent-beam receiver (numba): :func:`sensors.beam.echo_segments`
and :func:`sensors.beam.segment_report`.

Kept apart from :mod:`sensors.beam` so that importing the sensors does not import numba
(a run imports it with the caster's kernels, :mod:`hifi.kernels`). ``cache=True`` keeps the
machine code in ``__pycache__`` (first use compiles, about 5 s; later processes load it); no
``fastmath``, so every floating-point operation is the IEEE operation written, in the order
written, as in the numpy oracle of ``tests/oracles/beam.py``.
"""

from __future__ import annotations

import numba
import numpy as np


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
    size2 = taps.shape[0] - half - 1
    cap = 64
    pad = 4                                       # samples per block (below); the tail block's
    imp = np.zeros(cap + 2 * half + pad)          # extra samples read zeros and are not used
    wf = np.zeros(cap + pad)
    lab = np.zeros(cap, dtype=np.int64)
    rank = np.zeros(cap, dtype=np.int64)
    nz = np.zeros(2 * n + 2, dtype=np.int64)      # positions of the non-zero impulses
    for k in range(p):
        b_min = np.int64(-1)
        b_max = np.int64(-1)
        for j in range(n):
            seg[k, j] = -1
            if has[k, j]:
                b = b_i[k, j]
                if b_max < 0:
                    b_min = b
                    b_max = b
                else:
                    b_min = min(b_min, b)
                    b_max = max(b_max, b)
        if b_max < 0:
            continue
        if b_max == b_min:
            for j in range(n):
                if has[k, j]:
                    seg[k, j] = 0
            continue
        origin = b_min - 2 - half
        if origin < 0 or b_max + half >= need[k]:
            whole[k] = True
            continue
        n_out = b_max - b_min + 3
        if n_out > cap:
            cap = 2 * n_out
            imp = np.zeros(cap + 2 * half + pad)
            wf = np.zeros(cap + pad)
            lab = np.zeros(cap, dtype=np.int64)
            rank = np.zeros(cap, dtype=np.int64)
        # imp is all zeros here (the non-zero entries of the last pulse were reset); this
        # pulse's impulses lie in bins b_min - 1 .. b_max + 1 (columns half + 1 .. half + n_out).
        # np.add.at order of return_waveform: every lower part, then every upper part.
        for j in range(n):
            if has[k, j]:
                imp[b0[k, j] - origin] += c_lo[k, j]
        for j in range(n):
            if has[k, j]:
                imp[b0[k, j] + 1 - origin] += c_hi[k, j]
        m = 0
        for i in range(half + 1, half + n_out + 1):
            if imp[i] != 0.0:
                if m == nz.shape[0]:
                    grown = np.empty(2 * m, dtype=np.int64)
                    grown[:m] = nz
                    nz = grown
                nz[m] = i
                m += 1
        if symmetric:
            # scipy's NI_Correlate1D sums: o = x[i] w[0], then o += (x[i-d] + x[i+d]) w[-d] for
            # d = half .. 1 (symmetric branch). A pair of zero impulses adds (0 + 0) w = +0.0,
            # which changes no sum here (every impulse is >= 0 or NaN, so no sum is -0.0): each
            # sample's sum starts at the largest d that can reach a non-zero impulse, in the
            # same descending order, with the same expression. Four samples at a time, each its
            # own sum (independent chains of additions the processor overlaps; each sum's
            # operations and order are unchanged). Sample 0 decides no segment start (below)
            # and is not computed.
            lo = 0          # first non-zero impulse at >= (block's first sample) - half
            hi = -1         # last non-zero impulse at <= (block's last sample) + half
            for q in range(1, n_out, pad):
                i = q + half
                while lo < m and nz[lo] < i - half:
                    lo += 1
                while hi + 1 < m and nz[hi + 1] <= i + pad - 1 + half:
                    hi += 1
                top = 0
                if lo <= hi:
                    top = min(half, max(i + pad - 1 - nz[lo], nz[hi] - i))
                acc0 = imp[i] * taps[half]
                acc1 = imp[i + 1] * taps[half]
                acc2 = imp[i + 2] * taps[half]
                acc3 = imp[i + 3] * taps[half]
                for d in range(top, 0, -1):
                    w = taps[half - d]
                    acc0 += (imp[i - d] + imp[i + d]) * w
                    acc1 += (imp[i + 1 - d] + imp[i + 1 + d]) * w
                    acc2 += (imp[i + 2 - d] + imp[i + 2 + d]) * w
                    acc3 += (imp[i + 3 - d] + imp[i + 3 + d]) * w
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
            if has[k, j]:
                rank[lab[b_i[k, j] - b_min + 2]] = 0
        r = 0
        for c in range(count + 1):
            if rank[c] == 0:
                rank[c] = r
                r += 1
        for j in range(n):
            if has[k, j]:
                seg[k, j] = rank[lab[b_i[k, j] - b_min + 2]]


#: Return modes of :func:`report_kernel` (``average`` stays in numpy).
REPORT_MODES = {"first": 0, "last": 1, "strongest": 2, "dual": 3, "strongest_last": 4}


@numba.njit(cache=True, nogil=True, error_model="numpy")
def report_kernel(seg, e, rng, mode, threshold, n_seg, out_r, out_e, out_dom, out_members):  # pragma: no cover
    """:func:`sensors.beam.segment_report` pulse by pulse (not ``average``).

    Parameters
    ----------
    seg : (p, n) int64
        Segment of each sub-ray, -1 for none, every value < ``n_seg``.
    e, rng : (p, n) float64
        Return energies (NaN replaced by 0) and path lengths [m].
    mode : int
        :data:`REPORT_MODES`.
    threshold : float
    n_seg : int
    out_r, out_e : (p, m) float64, out_dom : (p, m) int64, out_members : (p, m, n) bool
        Filled as :class:`sensors.beam.EchoReport`.

    Notes
    -----
    The sums are ``np.bincount``'s: from 0.0, in sub-ray order; the range of a segment is
    ``ref + sum(e (r - ref)) / sum(e)`` with ``ref`` the pulse's nearest return; the choices
    follow ``np.argmax`` (the first of equal maxima), as the reference.
    """
    p, n = seg.shape
    seg_e = np.zeros(max(n_seg, 1))
    seg_ed = np.zeros(max(n_seg, 1))
    masked = np.zeros(max(n_seg, 1))
    chosen = np.zeros(2, dtype=np.int64)
    for k in range(p):
        ref = np.inf
        for j in range(n):                 # np.min: a NaN propagates
            if seg[k, j] >= 0 and (np.isnan(rng[k, j]) or rng[k, j] < ref):
                ref = rng[k, j]
        if not np.isfinite(ref):
            ref = 0.0
        for s in range(n_seg):
            seg_e[s] = 0.0
            seg_ed[s] = 0.0
        for j in range(n):
            s = seg[k, j]
            if s >= 0:
                seg_e[s] += e[k, j]
        for j in range(n):
            s = seg[k, j]
            if s >= 0:
                seg_ed[s] += e[k, j] * (rng[k, j] - ref)
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
        if mode == 0:
            chosen[0] = first
        elif mode == 1:
            chosen[0] = last
        elif mode == 2:
            chosen[0] = strongest
        elif mode == 3:
            chosen[0] = first
            chosen[1] = last
        else:
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
            chosen[0] = strongest
            chosen[1] = last if last != strongest else second
        for slot in range(out_r.shape[1]):
            s = chosen[slot]
            if s < 0:
                out_r[k, slot] = np.nan
                out_e[k, slot] = np.nan
                out_dom[k, slot] = -1
                for j in range(n):
                    out_members[k, slot, j] = False
                continue
            out_r[k, slot] = ref + seg_ed[s] / seg_e[s]
            out_e[k, slot] = seg_e[s]
            dom = 0
            top = -np.inf
            for j in range(n):
                member = seg[k, j] == s
                out_members[k, slot, j] = member
                w = e[k, j] if member else 0.0
                if w > top:
                    top = w
                    dom = j
            out_dom[k, slot] = dom
