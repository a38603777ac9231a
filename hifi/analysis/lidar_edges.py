"""Mixed (floating) returns at depth discontinuities along the rings of a range image.

Part of the lidar statistics of :mod:`hifi.analysis.lidar_stats` (same conventions: arrays
(ring, column) with the columns in acquisition order, NaN or ``detected`` False for no
return), kept in their own module because they are one topic:

- :func:`edge_points`        floating returns between the two sides of every depth edge;
- :func:`clean_edge_points`  the same at clean edges (both sides planar), by depth gap.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class EdgePoints(NamedTuple):
    fraction: float              #: n_floating / n_edge_returns [1]
    edges_with_floating: float   #: fraction of edges with at least one floating return [1]
    n_edges: int
    n_edge_returns: int          #: bracketing returns (2 per edge) plus the returns between them
    n_floating: int
    #: floating returns that no return of the ring above or below (same or next column) shares
    #: the range of: candidates for the sensor's own mixed pixels. The others lie on a
    #: structure narrower than ``min_run`` columns (a pole, branch, sign, a surface at grazing
    #: incidence) that the neighbouring ring sees too: scene content, not a sensor artefact.
    n_isolated: int = 0
    isolated_fraction: float = float("nan")   #: n_isolated / n_edge_returns [1]


class _RingEdges(NamedTuple):
    """Candidate edges of a scan grid (:func:`_ring_edges`): one row per pair of consecutive
    surfaces along a ring; cells indexed into ``seq``, the rings laid end to end with a NaN
    after each (cell ``ring * (ncol + 1) + column``)."""

    seq: np.ndarray        #: (nring * (ncol + 1),) range [m], NaN: miss or ring separator
    a_end: np.ndarray      #: (pair,) last cell of the first surface
    b_start: np.ndarray    #: (pair,) first cell of the second surface
    idx: np.ndarray        #: (pair, max_gap) cells between them (clipped into ``seq``)
    inside: np.ndarray     #: (pair, max_gap) bool, the cell lies between the two surfaces
    vals: np.ndarray       #: (pair, max_gap) range of those cells [m]
    is_edge: np.ndarray    #: (pair,) bool, an edge by :func:`edge_points`' definition
    floating: np.ndarray   #: (pair, max_gap) bool, a floating return of that pair
    run: np.ndarray        #: (nring * (ncol + 1),) run id of every cell (consecutive joined cells)


def _ring_edges(r, *, min_jump_m, break_abs_m, break_rel, min_run, max_gap) -> _RingEdges:
    """Edges along the rings of the range grid ``r`` (ring, column) [m], NaN for misses: the
    runs, surfaces, edges and floating returns of :func:`edge_points` (see its Notes)."""
    nring, ncol = r.shape
    seq = np.concatenate([r, np.full((nring, 1), np.nan)], axis=1).ravel()   # NaN separates rings
    tol = np.maximum(break_abs_m, break_rel * np.fmin(seq[:-1], seq[1:]))
    with np.errstate(invalid="ignore"):
        joined = np.abs(seq[1:] - seq[:-1]) < tol                                    # (n - 1,)
    fin = np.isfinite(seq)
    # run ids: a new run starts wherever a cell is not joined to its predecessor
    start = np.ones(seq.size, dtype=bool)
    start[1:] = ~joined
    run = np.cumsum(start) - 1
    length = np.bincount(run)
    surface_run = (length >= min_run) & np.bincount(run, weights=fin).astype(bool)
    first = np.flatnonzero(start)
    last = np.append(first[1:] - 1, seq.size - 1)
    s_first, s_last = first[surface_run], last[surface_run]
    # consecutive surfaces
    a_end, b_start = s_last[:-1], s_first[1:]
    gap = b_start - a_end - 1
    pos = np.arange(max(max_gap, 1))
    idx = a_end[:, None] + 1 + pos[None, :]                         # (pair, max_gap)
    inside = pos[None, :] < gap[:, None]
    vals = seq[np.clip(idx, 0, seq.size - 1)]
    no_miss = ~np.any(inside & ~np.isfinite(vals), axis=1)
    ra, rb = seq[a_end], seq[b_start]
    with np.errstate(invalid="ignore"):
        is_edge = (gap <= max_gap) & no_miss & (np.abs(rb - ra) > min_jump_m)
        lo, hi = np.fmin(ra, rb), np.fmax(ra, rb)
        tl = np.maximum(break_abs_m, break_rel * lo)[:, None]
        th = np.maximum(break_abs_m, break_rel * hi)[:, None]
        floating = inside & (vals > lo[:, None] + tl) & (vals < hi[:, None] - th)
    return _RingEdges(seq, a_end, b_start, idx, inside, vals, is_edge, floating, run)


def _supported(r, flat, *, break_abs_m, break_rel):
    """Whether each floating return (cells ``flat`` of :class:`_RingEdges`' ``seq``) has a return
    of the ring above or below, same or next column, within the break tolerance of its range:
    a structure that the next ring sees too (:func:`edge_points`' ``n_isolated``)."""
    nring, ncol = r.shape
    ring, col = np.divmod(flat, ncol + 1)
    v = r[ring, col]
    tol_v = np.maximum(break_abs_m, break_rel * v)
    support = np.zeros(flat.size, dtype=bool)
    for dr in (-1, 1):
        rr = ring + dr
        for dc in (-1, 0, 1):
            cc = col + dc
            ok = (rr >= 0) & (rr < nring) & (cc >= 0) & (cc < ncol)
            w = r[np.clip(rr, 0, nring - 1), np.clip(cc, 0, ncol - 1)]
            with np.errstate(invalid="ignore"):
                support |= ok & (np.abs(w - v) < tol_v)
    return support


def edge_points(range_m, detected, *, min_jump_m=1.0, break_abs_m=0.15, break_rel=0.03, min_run=3,
                max_gap=3) -> EdgePoints:
    """Mixed (floating) returns at depth discontinuities along the rings.

    Parameters
    ----------
    range_m : (ring, column) float
        Measured range [m]; misses may be NaN.
    detected : (ring, column) bool
    min_jump_m : float
        Range step between the two surfaces that makes an edge [m].
    break_abs_m, break_rel : float
        Two neighbouring returns belong to one surface if their ranges differ by less than
        ``max(break_abs_m, break_rel * r)`` [m, 1] (r: the nearer of the two).
    min_run : int
        A surface is a run of at least ``min_run`` such neighbours.
    max_gap : int
        At most this many columns between the two surfaces.

    Notes
    -----
    Each ring is cut into runs of neighbouring returns that belong together (a miss ends a run).
    Runs of at least ``min_run`` returns are surfaces. An *edge* is a pair of surfaces that are
    consecutive along the ring, separated by at most ``max_gap`` columns, with no miss between
    them, whose facing ends (the last return of the first, the first of the second) differ by
    more than ``min_jump_m``. Its *edge returns* are these two bracketing returns plus every
    return between them; a return between them is *floating* (a mixed pixel) if its range lies
    between the two bracketing ranges, more than the break tolerance from each. Statistic:
    floating returns over edge returns; an edge with k floating points contributes k of k + 2.
    Rings do not wrap around. Rings are taken in elevation order (ring i and i + 1 are vertical
    neighbours): a floating return is *supported* if a return of ring i - 1 or i + 1 in the same
    or an adjacent column lies within the break tolerance of its range, else *isolated*
    (``n_isolated``, ``isolated_fraction``).
    """
    r = np.where(np.asarray(detected, dtype=bool), np.asarray(range_m, dtype=float), np.nan)
    nring, ncol = r.shape
    e = _ring_edges(r, min_jump_m=min_jump_m, break_abs_m=break_abs_m, break_rel=break_rel, min_run=min_run,
                    max_gap=max_gap)
    idx, is_edge, floating, inside, vals = e.idx, e.is_edge, e.floating, e.inside, e.vals
    n_edges = int(is_edge.sum())
    n_between = int((inside & np.isfinite(vals))[is_edge].sum())
    n_float_per = floating[is_edge].sum(axis=1)
    n_float = int(n_float_per.sum())
    n_ret = 2 * n_edges + n_between
    support = _supported(r, idx[is_edge][floating[is_edge]], break_abs_m=break_abs_m, break_rel=break_rel)
    n_iso = int((~support).sum())
    return EdgePoints(n_float / n_ret if n_ret else float("nan"),
                      float(np.mean(n_float_per > 0)) if n_edges else float("nan"), n_edges, n_ret, n_float,
                      n_iso, n_iso / n_ret if n_ret else float("nan"))


#: Depth-gap bins of :func:`clean_edge_points` [m]: steps a little above the range resolution
#: of a 5 ns pulse (0.75 m), steps within the tail of a receiver's impulse response (tens of
#: ns, 2-8 m) and steps beyond it.
EDGE_GAP_BINS_M = (0.5, 2.0, 8.0, np.inf)
#: RMS range residual about its fitted plane [m] below which a side of an edge is a smooth surface
#: (:func:`clean_edge_points`): a few times the range noise of the recordings compared (nuScenes
#: HDL-32E 4-5 mm, Ouster OS1-128 about 1 cm per shot; lidar_real.py) and the sag of a car's
#: body over a patch of five columns (under 2 cm); a crown of leaves scatters by decimetres.
PLANAR_RMS_M = 0.03
#: Returns of its own ring that the plane of one side of an edge takes (:func:`_patch_rms`).
PATCH_COLUMNS = 5
#: Fewest returns that the plane of one side of an edge is fitted to: four of its ring (one
#: more than the three parameters) or three and one of a neighbouring ring.
PLANAR_MIN_POINTS = 4


class CleanEdges(NamedTuple):
    """Floating returns at clean edges by depth gap (:func:`clean_edge_points`); per bin of
    :data:`EDGE_GAP_BINS_M` (arrays of length ``len(gap_bins_m) - 1``)."""

    gap_bins_m: tuple                #: bin edges of the depth gap [m]
    n_edges: np.ndarray              #: clean edges per bin
    n_floating: np.ndarray           #: isolated floating returns at those edges (no ring neighbour at their range)
    per_edge: np.ndarray             #: n_floating / n_edges [1], NaN for an empty bin
    n_supported: np.ndarray          #: floating returns a neighbouring ring sees too, or in pairs at one range
    n_edges_all: int                 #: every edge (clean or not) of at least the first bin's gap
    position: np.ndarray             #: (k,) where each floating return lies, 0 near .. 1 far [1]
    position_gap_m: np.ndarray       #: (k,) the depth gap of its edge [m]


def _patch_rms(p, det, run, ring, col, step, *, break_abs_m, break_rel):
    """RMS range residual [m] about their best plane of the returns of one side of an edge: the
    last :data:`PATCH_COLUMNS` returns of its own run along the ring (from column ``col``,
    ``step`` -1 or +1 away from the edge; ``run``: :class:`_RingEdges`' run ids) and, in the
    rings above and below, the returns of those columns within the break tolerance of the
    ring's own (the same surface: the road's neighbouring rings lie metres away and are left
    out); NaN where fewer than :data:`PLANAR_MIN_POINTS` returns qualify. Vectorised over edges.

    A plane ``n . x = h`` seen along unit rays u has ``1 / r = (n / h) . u``, linear in u: the
    fit is the linear least squares of ``w . u_k = 1 / r_k`` weighted by ``r_k^2`` (so that the
    residuals are ranges, ``dr = -r^2 d(1 / r)``), and the residual of return k is
    ``r_k - 1 / (w . u_k)``, zero for any plane and any patch shape (a covariance's smallest
    eigenvalue is not: a patch narrower along the ring than its scatter along the rays finds
    its thin direction across the rays)."""
    nring, ncol = det.shape
    k = np.arange(PATCH_COLUMNS)
    cc = col[:, None] + step * k[None, :]                                  # (e, K)
    inside = (cc >= 0) & (cc < ncol)
    cc = np.clip(cc, 0, ncol - 1)
    cell = ring[:, None] * (ncol + 1) + cc
    own = inside & (run[cell] == run[(ring * (ncol + 1) + col)][:, None]) & det[ring[:, None], cc]
    r0 = np.where(own, np.linalg.norm(p[ring[:, None], cc], axis=-1), np.nan)
    rr = np.concatenate([ring[:, None] + d + 0 * k[None, :] for d in (0, -1, 1)], axis=1)
    cc3 = np.concatenate([cc] * 3, axis=1)
    ok = np.concatenate([own] * 3, axis=1) & (rr >= 0) & (rr < nring)
    rr = np.clip(rr, 0, nring - 1)
    ok &= det[rr, cc3]
    ref = np.concatenate([r0] * 3, axis=1)
    with np.errstate(invalid="ignore"):
        ok &= np.abs(np.linalg.norm(p[rr, cc3], axis=-1) - ref) < np.maximum(break_abs_m, break_rel * ref)
    q = np.where(ok[..., None], p[rr, cc3], 0.0)                          # (e, 3 K, 3)
    r = np.linalg.norm(q, axis=-1)
    ok &= r > 0
    rs = np.where(ok, r, 1.0)
    u = q / rs[..., None]
    a = np.where(ok[..., None], u * (rs ** 2)[..., None], 0.0)            # rows r^2 u, target r
    n = ok.sum(axis=1)
    ata = np.einsum("eki,ekj->eij", a, a)
    atb = np.einsum("eki,ek->ei", a, np.where(ok, rs, 0.0))
    few = n < PLANAR_MIN_POINTS                                          # reported NaN below
    ata[few] = np.eye(3)
    w = np.linalg.solve(ata, atb[..., None])[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.where(ok, rs - 1.0 / np.einsum("eki,ei->ek", u, w), 0.0)
    rms = np.sqrt(np.sum(res ** 2, axis=1) / np.maximum(n, 1))
    return np.where(n >= PLANAR_MIN_POINTS, rms, np.nan)


def clean_edge_points(points_sensor, detected, *, gap_bins_m=EDGE_GAP_BINS_M, planar_rms_m=PLANAR_RMS_M,
                      break_abs_m=0.15, break_rel=0.03, min_run=3, max_gap=3) -> CleanEdges:
    """Floating returns per clean edge, by the depth gap between the two surfaces.

    Parameters
    ----------
    points_sensor : (ring, column, 3) float
        Points, sensor frame [m]; rings in elevation order, columns in acquisition order.
    detected : (ring, column) bool
    gap_bins_m : sequence of float
        Bin edges of the depth gap ``|r_b - r_a|`` between the two surfaces [m]; edges are
        those of :func:`edge_points` with ``min_jump_m = gap_bins_m[0]``.
    planar_rms_m : float
        A side is smooth where the RMS range residual about its best plane (:func:`_patch_rms`) is below
        this [m] (:data:`PLANAR_RMS_M`).
    break_abs_m, break_rel, min_run, max_gap
        As :func:`edge_points`.

    Returns
    -------
    CleanEdges

    Notes
    -----
    An edge is *clean* where both its sides are smooth surfaces: for the bracketing return of
    each side, the last :data:`PATCH_COLUMNS` returns of its run along the ring and the returns
    of the rings above and below in those columns that lie on the same surface (within the
    break tolerance) are fitted with a plane (:func:`_patch_rms`, range residuals along the
    rays): at least :data:`PLANAR_MIN_POINTS` of them and an RMS residual below
    ``planar_rms_m``. Leaves, grass and clutter fail it; walls, car bodies, boxes and the road
    pass. The test reads only the points, so a recording and a simulation are judged the
    same way. Floating returns that the ring above or below sees at the same range (a pole or
    a post narrower than ``min_run`` columns between the two surfaces: scene content) are
    counted apart (``n_supported``), and so are two neighbouring floating returns within the
    break tolerance of each other (a third surface two columns wide: two pulses of a beam
    stepping across an edge cover it in different proportions, so the receiver's mixed pixels
    do not come in pairs at one range); the statistic is the *isolated* ones
    (:func:`edge_points`' ``n_isolated``), the receiver's own. An isolated floating return's *position* is
    ``(r - r_near) / (r_far - r_near)``.
    Tuley, Vandapel and Hebert (ICRA 2005) survey where mixed pixels fall between the two
    surfaces; Hebert and Krotkov (Image and Vision Computing 10(3), 1992) measured them on
    imaging laser radars.
    """
    p = np.asarray(points_sensor, dtype=float)
    det = np.asarray(detected, dtype=bool) & np.all(np.isfinite(p), axis=-1)
    r = np.where(det, np.linalg.norm(p, axis=-1), np.nan)
    nring, ncol = r.shape
    bins = np.asarray(gap_bins_m, dtype=float)
    e = _ring_edges(r, min_jump_m=float(bins[0]), break_abs_m=break_abs_m, break_rel=break_rel, min_run=min_run,
                    max_gap=max_gap)
    k = np.flatnonzero(e.is_edge)
    ra, rb = e.seq[e.a_end[k]], e.seq[e.b_start[k]]
    ring_a, col_a = np.divmod(e.a_end[k], ncol + 1)
    ring_b, col_b = np.divmod(e.b_start[k], ncol + 1)
    # each side's patch: centred one column inside its own surface
    rms_a = _patch_rms(p, det, e.run, ring_a, col_a, -1, break_abs_m=break_abs_m, break_rel=break_rel)
    rms_b = _patch_rms(p, det, e.run, ring_b, col_b, 1, break_abs_m=break_abs_m, break_rel=break_rel)
    with np.errstate(invalid="ignore"):
        clean = (rms_a < planar_rms_m) & (rms_b < planar_rms_m)
    gap = np.abs(rb - ra)
    which = np.digitize(gap, bins) - 1
    nb = bins.size - 1
    sup = np.zeros(e.floating.shape, dtype=bool)
    sup[e.floating] = _supported(r, e.idx[e.floating], break_abs_m=break_abs_m, break_rel=break_rel)
    # two neighbouring floating returns at one range: a surface two columns wide (a post, a
    # sign, a far wall seen through a gap), not two pulses split in the same proportion
    with np.errstate(invalid="ignore"):
        pair = (e.floating[:, 1:] & e.floating[:, :-1]
                & (np.abs(e.vals[:, 1:] - e.vals[:, :-1]) < np.maximum(break_abs_m, break_rel * e.vals[:, 1:])))
    sup[:, 1:] |= pair
    sup[:, :-1] |= pair
    fl = (e.floating & ~sup)[k]
    n_fl = fl.sum(axis=1)
    n_sup = sup[k].sum(axis=1)
    use = clean & (which >= 0) & (which < nb)
    n_edges = np.bincount(which[use], minlength=nb)[:nb]
    n_floating = np.bincount(which[use], weights=n_fl[use], minlength=nb)[:nb].astype(int)
    n_supported = np.bincount(which[use], weights=n_sup[use], minlength=nb)[:nb].astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_edge = np.where(n_edges > 0, n_floating / np.maximum(n_edges, 1), np.nan)
    rows, cols = np.nonzero(fl & use[:, None])
    near = np.fmin(ra, rb)[rows]
    pos = (e.vals[k][rows, cols] - near) / gap[rows]
    return CleanEdges(tuple(float(b) for b in bins), n_edges, n_floating, per_edge, n_supported, int(k.size), pos,
                      gap[rows])
