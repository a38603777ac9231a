"""Compiled kernel of :func:`sensors.beam.echo_segments` (numba, imported only by the beam path).

Kept apart from :mod:`sensors.beam` so that importing the sensors, and every run without a
divergent beam, neither imports numba nor pays its JIT's memory. ``cache=True`` keeps the
machine code in ``__pycache__`` (first use compiles, about 5 s; later processes load it); no
``fastmath``, so every floating-point operation is the IEEE operation written, in the order
written, as in the numpy reference :func:`sensors.beam.echo_segments_reference`.
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
    imp = np.zeros(cap + 2 * half)
    wf = np.zeros(cap)
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
            imp = np.zeros(cap + 2 * half)
            wf = np.zeros(cap)
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
        # scipy's NI_Correlate1D sums: o = x[i] w[0], then o += (x[i-d] + x[i+d]) w[-d] for
        # d = half .. 1 (symmetric branch). A pair of zero impulses adds (0 + 0) w = +0.0 (the
        # taps of a Gaussian are > 0), which changes no sum here (every impulse is >= 0, so no
        # sum is -0.0): only the d at which a non-zero impulse (NaN included) lies are visited,
        # in the same descending order, with the same expression.
        m = 0
        for i in range(half + 1, half + n_out + 1):
            if imp[i] != 0.0:
                if m == nz.shape[0]:
                    grown = np.empty(2 * m, dtype=np.int64)
                    grown[:m] = nz
                    nz = grown
                nz[m] = i
                m += 1
        lo = 0          # first non-zero impulse at >= i - half
        mid = 0         # first at >= i
        hi = -1         # last at <= i + half
        for q in range(n_out):
            i = q + half
            if symmetric:
                while lo < m and nz[lo] < i - half:
                    lo += 1
                while mid < m and nz[mid] < i:
                    mid += 1
                ex = mid + 1 if mid < m and nz[mid] == i else mid     # first at > i
                while hi + 1 < m and nz[hi + 1] <= i + half:
                    hi += 1
                acc = imp[i] * taps[half]
                if hi - lo + 1 > half // 2:
                    # Many non-zero impulses around i (a wide spot of many sub-rays): every d,
                    # skipping the zero pairs, is cheaper than the merge below; same terms.
                    for d in range(half, 0, -1):
                        a = imp[i - d]
                        c = imp[i + d]
                        if a != 0.0 or c != 0.0:
                            acc += (a + c) * taps[half - d]
                    wf[q] = acc
                    continue
                left = lo
                right = hi
                while True:
                    d_left = i - nz[left] if left < mid else 0
                    d_right = nz[right] - i if right >= ex else 0
                    d = max(d_left, d_right)
                    if d == 0:
                        break
                    acc += (imp[i - d] + imp[i + d]) * taps[half - d]
                    if d_left == d:
                        left += 1
                    if d_right == d:
                        right -= 1
            else:
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
