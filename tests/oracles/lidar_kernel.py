"""Oracles of :mod:`sensors._lidar_kernel`: the lidars' geometry passes written with numpy.

Each has the signature and outputs of the compiled kernel of the same name (see
:mod:`tests.oracles.cast_kernel`); they are the numpy the product ran before the kernels became
its only implementation.
"""

from __future__ import annotations

import numpy as np

from sensors.noise import orthonormal_basis


def edge_bits(points, normals, hit, shape, ring_order=None, depth_m=0.05):
    """The depth-edge flags of :func:`sensors.lidar.depth_edge_pulses` with numpy, both as
    uint8 bits (1: the lower / previous neighbour leaves the pulse's surface, 2: the upper /
    next one), flat in the order of ``shape``: ``(along, across)``."""
    n_s, n_b = shape
    order = np.arange(n_b) if ring_order is None else np.asarray(ring_order)
    # float32 (1e-5 m at 100 m, far below depth_m): half the memory traffic of float64
    x = np.asarray(points).reshape(n_s, n_b, 3)[:, order].astype(np.float32)
    nrm = np.asarray(normals).reshape(n_s, n_b, 3)[:, order].astype(np.float32)
    np.nan_to_num(x, copy=False)
    np.nan_to_num(nrm, copy=False)
    h = np.asarray(hit, dtype=bool).reshape(n_s, n_b)[:, order]
    flags = []
    for axis in (0, 1):
        flag = np.zeros((n_s, n_b), dtype=np.uint8)
        lo = [slice(None), slice(None)]
        hi = [slice(None), slice(None)]
        lo[axis], hi[axis] = slice(None, -1), slice(1, None)
        lo, hi = tuple(lo), tuple(hi)
        dx = x[hi] - x[lo]
        # normal . difference summed left to right (einsum's order is numpy's to choose)
        off = np.maximum(np.abs(_dot3(nrm[lo], dx)), np.abs(_dot3(nrm[hi], dx)))
        step = h[lo] & h[hi] & (off > depth_m)
        flag[lo] |= (step | (h[hi] & ~h[lo])).astype(np.uint8) * 2      # its upper / next neighbour
        flag[hi] |= (step | (h[lo] & ~h[hi])).astype(np.uint8)          # its lower / previous one
        out = np.empty_like(flag)
        out[:, order] = flag
        flags.append(out.ravel())
    return flags[0], flags[1]


def _dot3(u, v):
    """``u . v`` over the last axis (length 3), summed left to right, in the arrays' dtype."""
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]


def edge_flags(points, normals, hit, order, depth, along, across):
    """:func:`sensors._lidar_kernel.edge_flags` with numpy."""
    n_s, n_b = hit.shape
    a, c = edge_bits(points.reshape(-1, 3), normals.reshape(-1, 3), hit.ravel(), (n_s, n_b), order, depth)
    along[:] = a.reshape(n_s, n_b)
    across[:] = c.reshape(n_s, n_b)


def footprint_directions(axis, uv, divergence_h_rad, divergence_v_rad, aperture_radius_m):
    """:func:`sensors.beam.footprint_directions` with numpy: ``(offsets, directions)``."""
    a = np.asarray(axis, dtype=float)
    e_h = np.stack([-a[:, 1], a[:, 0], np.zeros(len(a))], axis=-1)
    norm = np.linalg.norm(e_h, axis=-1, keepdims=True)
    vertical = norm[:, 0] < 1e-9
    e_h = e_h / np.where(vertical[:, None], 1.0, norm)
    if np.any(vertical):
        e_h[vertical] = orthonormal_basis(a[vertical])[0]
    e_v = np.cross(a, e_h)
    u, v = uv[None, :, 0:1], uv[None, :, 1:2]
    across = u * e_h[:, None, :] + v * e_v[:, None, :]
    d = (a[:, None, :] + np.tan(divergence_h_rad / 2.0) * u * e_h[:, None, :]
         + np.tan(divergence_v_rad / 2.0) * v * e_v[:, None, :])
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    return aperture_radius_m * across, d


def probe_leaves(cand, hit, normal, point, probe_hit, probe_point, depth, out):
    """:func:`sensors._lidar_kernel.probe_leaves` with numpy."""
    ax_hit = hit[cand]
    off_plane = np.abs(_dot3(normal[cand], probe_point - point[cand]))
    out[:] = (probe_hit != ax_hit) | (probe_hit & ax_hit & (np.nan_to_num(off_plane) > depth))


def footprint(axis, e_h, e_v, u, v, tan_u, tan_v, aperture, off, d):
    """:func:`sensors._lidar_kernel.footprint` with numpy."""
    h, w = e_h[:, None, :], e_v[:, None, :]
    across = u[None, :, None] * h + v[None, :, None] * w
    off[:] = aperture * across
    d[:] = axis[:, None, :] + tan_u[None, :, None] * h + tan_v[None, :, None] * w
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
