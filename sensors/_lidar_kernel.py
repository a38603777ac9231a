"""Compiled kernels of the lidar models (numba): the depth-edge flags of a scan grid, the
sub-ray directions of a beam's footprint and the edge probes' test.

They are the only implementation of these passes (geometry, no physics: the signal chain stays
in the vectorised functions of :mod:`sensors.radiometry`, :mod:`sensors.noise` and
:mod:`sensors.detection`). Each floating-point operation is the IEEE operation numpy would
perform in the same order (no ``fastmath``: sums of three products left to right, float32
where stated), so ``tests/oracles/lidar_kernel.py`` holds them, bit for bit, to numpy
written out. ``cache=True`` keeps the machine code in ``__pycache__`` (the first process
compiles, a few seconds); ``nogil``: the callers may run chunks on the caster's threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def edge_flags(points, normals, hit, order, depth, along, across):  # pragma: no cover (compiled)
    """Depth-edge flags of a scan grid (:func:`sensors.lidar.depth_edge_pulses`).

    Parameters
    ----------
    points, normals : (n_s, n_b, 3) float64
        Hit point and unit normal of each pulse's pencil ray (NaN on a miss).
    hit : (n_s, n_b) bool
    order : (n_b,) int64
        Beam indices in elevation order.
    depth : float32
        Depth step [m] (compared in float32, as numpy compares a float32 array with a Python
        float).
    along : (n_s, n_b) uint8, out, zeros
        Bit 1: the previous step's pulse leaves this pulse's surface; bit 2: the next one's.
    across : (n_s, n_b) uint8, out, zeros
        Bit 1: the ring below leaves the pulse's surface; bit 2: the ring above.

    Notes
    -----
    In float32: coordinates and normals rounded to float32, the difference
    of the two points and each normal's dot product with it (summed left to right) in float32.
    """
    n_s, n_b = hit.shape
    for s in range(n_s):
        for jj in range(n_b):
            j = order[jj]
            if s + 1 < n_s:                     # the next step, same beam
                _pair(points, normals, hit, s, j, s + 1, j, depth, along)
            if jj + 1 < n_b:                    # the next ring up, same step
                _pair(points, normals, hit, s, j, s, order[jj + 1], depth, across)


@numba.njit(inline="always")
def _pair(points, normals, hit, s, j, s2, j2, depth, out):  # pragma: no cover (compiled)
    """Flags of one pair of neighbours (lower / previous ``(s, j)``, upper / next ``(s2, j2)``)."""
    h_lo, h_hi = hit[s, j], hit[s2, j2]
    step = False
    if h_lo and h_hi:                            # points and normals of hits are finite
        d0 = np.float32(points[s2, j2, 0]) - np.float32(points[s, j, 0])
        d1 = np.float32(points[s2, j2, 1]) - np.float32(points[s, j, 1])
        d2 = np.float32(points[s2, j2, 2]) - np.float32(points[s, j, 2])
        o_lo = abs(np.float32(normals[s, j, 0]) * d0 + np.float32(normals[s, j, 1]) * d1
                   + np.float32(normals[s, j, 2]) * d2)
        o_hi = abs(np.float32(normals[s2, j2, 0]) * d0 + np.float32(normals[s2, j2, 1]) * d1
                   + np.float32(normals[s2, j2, 2]) * d2)
        step = max(o_lo, o_hi) > depth
    if step or (h_hi and not h_lo):
        out[s, j] |= np.uint8(2)
    if step or (h_lo and not h_hi):
        out[s2, j2] |= np.uint8(1)


@numba.njit(cache=True, nogil=True)
def footprint(axis, e_h, e_v, u, v, tan_u, tan_v, aperture, off, d):  # pragma: no cover (compiled)
    """Sub-rays of elliptical beams (:func:`sensors.beam.footprint_directions`).

    Parameters
    ----------
    axis, e_h, e_v : (p, 3) float64
        Unit beam axes (sensor frame, z up), the horizontal normal and ``axis x e_h``.
    u, v : (n,) float64
        Sub-ray positions in beam radii, across (horizontal) and up.
    tan_u, tan_v : (n,) float64
        ``tan(Theta_h / 2) u`` and ``tan(Theta_v / 2) v``.
    aperture : float
        Beam radius at the aperture [m].
    off, d : (p, n, 3) float64, out
        Origin offsets [m] and unit directions.

    Notes
    -----
    ``across = u e_h + v e_v``, ``d = (a + tan_u e_h) + tan_v e_v`` divided by its norm (the
    three squares summed left to right).
    """
    p, n = axis.shape[0], u.shape[0]
    for i in range(p):
        a0, a1, a2 = axis[i, 0], axis[i, 1], axis[i, 2]
        h0, h1, h2 = e_h[i, 0], e_h[i, 1], e_h[i, 2]
        v0, v1, v2 = e_v[i, 0], e_v[i, 1], e_v[i, 2]
        for k in range(n):
            off[i, k, 0] = aperture * (u[k] * h0 + v[k] * v0)
            off[i, k, 1] = aperture * (u[k] * h1 + v[k] * v1)
            off[i, k, 2] = aperture * (u[k] * h2 + v[k] * v2)
            d0 = a0 + tan_u[k] * h0 + tan_v[k] * v0
            d1 = a1 + tan_u[k] * h1 + tan_v[k] * v1
            d2 = a2 + tan_u[k] * h2 + tan_v[k] * v2
            s = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            d[i, k, 0] = d0 / s
            d[i, k, 1] = d1 / s
            d[i, k, 2] = d2 / s


@numba.njit(cache=True, nogil=True)
def probe_leaves(cand, hit, normal, point, probe_hit, probe_point, depth, out):  # pragma: no cover (compiled)
    """Whether each edge probe leaves its pulse's surface (:func:`sensors.lidar.probe_leaves`): it hits where the pulse's pencil ray missed or
    the reverse, or both hit and the probe's point lies more than ``depth`` [m] off the plane of
    the pencil's hit (``|n . (p_probe - p)|``, summed left to right; NaN is not more)."""
    for i in range(cand.shape[0]):
        c = cand[i]
        h, ph = hit[c], probe_hit[i]
        if h != ph:
            out[i] = True
        elif h:
            x = abs(normal[c, 0] * (probe_point[i, 0] - point[c, 0])
                    + normal[c, 1] * (probe_point[i, 1] - point[c, 1])
                    + normal[c, 2] * (probe_point[i, 2] - point[c, 2]))
            out[i] = x > depth
        else:
            out[i] = False
