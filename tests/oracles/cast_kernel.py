"""Oracles of :mod:`hifi._cast_kernel`: the caster's passes around Embree written with numpy.

Each function has the signature and the outputs of the compiled kernel of the same name, so a
test can put it in the kernel's place (:func:`tests.oracles.numpy_kernels`) and run a whole
cast or frame both ways. They are the numpy passes the product ran before the kernels became
its only implementation (moved here unchanged apart from writing into the kernels' output
arrays); the kernels are held to their bits, operation by operation in numpy's order.
"""

from __future__ import annotations

import numpy as np

from hifi.caster._rows import row_dot, row_norm


def _divide_rows(v, s, out):
    """``out = v / s[:, None]`` column by column (the bits of the broadcast division)."""
    for j in range(3):
        np.divide(v[:, j], s, out=out[:, j], dtype=np.float64)
    return out


def _multiply_rows(v, s, out):
    """``out = v * s[:, None]`` column by column."""
    for j in range(3):
        np.multiply(v[:, j], s, out=out[:, j])
    return out


def rays32(o, offset, d, o32, d32):
    """:func:`hifi._cast_kernel.rays32` with numpy."""
    if o.shape[0] == 1 < d.shape[0]:                # one origin: one row subtracted, then copied
        o32[:] = np.subtract(o[0], offset).astype(np.float32)
    else:
        np.subtract(o, offset, out=o32, casting="same_kind")
    d32[:] = d.astype(np.float32)


def static_hits(tfar, geom_id, prim_id, ng, u, v, geom_object, face_lookup, geom_start, edge_lo, edge_hi,
                with_normal, distance, obj, face, normal, edge):
    """:func:`hifi._cast_kernel.static_hits` with numpy."""
    n = tfar.shape[0]
    gid = geom_id
    miss = gid < 0
    # geomID -1 (miss) wraps to the appended -1.
    np.take(np.append(geom_object, np.int32(-1)), gid, out=obj, mode="wrap")
    if face_lookup.shape[0] == 0:
        face[:] = np.array(prim_id, dtype=np.int32)
        np.copyto(face, -1, where=miss)
    else:
        face.fill(-1)
        idx = np.nonzero(~miss)[0]
        face[idx] = face_lookup[geom_start[gid[idx]] + prim_id[idx]]
    distance[:] = tfar.astype(np.float64)
    np.copyto(distance, np.inf, where=miss)
    denom = row_norm(ng)
    np.copyto(denom, np.nan, where=miss)            # misses: NaN normal, no 0/0 warning
    _divide_rows(ng, denom, out=normal)
    if not with_normal:
        normal.fill(np.nan)
    edge[:] = (np.minimum(u, v) < edge_lo) | (u + v > edge_hi)
    edge[miss] = False
    assert n == distance.shape[0]


def unit_rays32(o, offset, d_in, d, o32, d32):
    """:func:`hifi._cast_kernel.unit_rays32` with numpy: :func:`unit_rows`, then :func:`rays32`."""
    unit_rows(d_in, d)
    rays32(o, offset, d, o32, d32)


def unit_rows(d_in, out):
    """:func:`hifi._cast_kernel.unit_rows` with numpy."""
    _divide_rows(d_in, row_norm(d_in), out=out)


def finish_hits(o, d, seg, obj_g, face_g, nrm_g, dist, pt, nrm, obj, face):
    """:func:`hifi._cast_kernel.finish_hits` with numpy; returns the number of hits."""
    hit = obj_g >= 0
    if not np.any(hit):
        dist.fill(np.nan)
        pt.fill(np.nan)
        nrm.fill(np.nan)
        obj.fill(-1)
        face.fill(-1)
        return 0
    np.copyto(obj, obj_g)
    np.copyto(face, face_g)
    # Misses NaN (their normal is NaN already).
    np.copyto(dist, seg)
    np.copyto(dist, np.nan, where=~hit)
    # Normals turned toward the arriving ray (x -1.0 is exact).
    facing = row_dot(nrm_g, d)
    _multiply_rows(nrm_g, np.where(facing > 0, -1.0, 1.0), out=nrm)
    # Hit point o + d t.
    _multiply_rows(d, dist, out=pt)
    np.add(o, pt, out=pt)
    return int(np.count_nonzero(hit))


def range_image(a, b, dist, point, oid, cos_axis, class_table, distance32, depth32, x32, y32, z32, class_ids):
    """:func:`hifi._cast_kernel.range_image` with numpy."""
    s = slice(a, b)
    distance32[s] = dist[s].astype(np.float32)
    depth32[s] = (dist[s] * cos_axis[s]).astype(np.float32)
    x32[s] = point[s, 0].astype(np.float32)
    y32[s] = point[s, 1].astype(np.float32)
    z32[s] = point[s, 2].astype(np.float32)
    class_ids[s] = class_table[oid[s]]               # -1: the table's last entry


def depth_rows(a, o, d, tfar, geom_id, geom_object, cos_axis, class_table,
               distance32, depth32, x32, y32, z32, object_id, class_ids):
    """:func:`hifi._cast_kernel.depth_rows` with numpy: the distance and object of
    :func:`static_hits`, the point of :func:`finish_hits` (misses NaN), then :func:`range_image`."""
    m = tfar.shape[0]
    hit = geom_id >= 0
    obj = np.take(np.append(geom_object, np.int32(-1)), geom_id, mode="wrap").astype(np.int32)
    dist = tfar.astype(np.float64)
    np.copyto(dist, np.nan, where=~hit)
    pt = _multiply_rows(d, dist, out=np.empty((m, 3)))
    np.add(o, pt, out=pt)
    s = slice(a, a + m)
    range_image(0, m, dist, pt, obj, cos_axis[s], class_table, distance32[s], depth32[s], x32[s], y32[s], z32[s],
                class_ids[s])
    object_id[s] = obj


def _cross_rows(a, b):
    """``np.cross(a, b)`` of (k, 3) rows, each component ``a_i b_j - a_j b_i``."""
    out = np.empty_like(a)
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.subtract(a[:, i] * b[:, j], a[:, j] * b[:, i], out=out[:, k])
    return out


def tie_keys(p, a, b, q, cand, reported, plane_tol, edge_bary, not_contained, unit, key):
    """:func:`hifi._cast_kernel.tie_keys` with numpy."""
    e1, e2, w = b - a, q - a, p - a
    n = _cross_rows(e1, e2)
    n_len = row_norm(n)
    unit[:] = n / n_len[:, None]
    # Barycentrics of p projected on the candidate's plane (Cramer's rule).
    d11, d12, d22 = row_dot(e1, e1), row_dot(e1, e2), row_dot(e2, e2)
    dw1, dw2 = row_dot(w, e1), row_dot(w, e2)
    den = d11 * d22 - d12 * d12
    with np.errstate(divide="ignore", invalid="ignore"):
        b1 = (d22 * dw1 - d12 * dw2) / den
        b2 = (d11 * dw2 - d12 * dw1) / den
        inside = ((np.abs(row_dot(w, unit)) <= plane_tol) & (b1 >= -edge_bary)
                  & (b2 >= -edge_bary) & (b1 + b2 <= 1.0 + edge_bary))
    key[:] = np.where(inside | (cand == reported), cand, np.int64(not_contained))


def settle_static(rows, best, face, normal, origins, directions, faces, world, vid, indptr, vertex_face,
                  plane_tol, edge_bary):
    """:func:`hifi._cast_kernel.settle_static` with numpy: the pairs as
    :func:`hifi.caster.ties.tie_candidates` makes them, :func:`tie_keys`, the lowest key per ray."""
    from hifi.caster.ties import NOT_CONTAINED, lowest_key
    m = rows.shape[0]
    v = vid[faces[face[rows]]].astype(np.int64)
    start = indptr[v].ravel()
    count = (indptr[v + 1] - indptr[v]).ravel()
    pair_ray = np.repeat(np.repeat(np.arange(m), 3), count)
    first = np.repeat(np.cumsum(count) - count, count)
    cand = vertex_face[np.repeat(start, count) + np.arange(count.sum()) - first].astype(np.int64)
    r = rows[pair_ray]
    p = origins[r] + directions[r] * best[r][:, None]
    unit = np.empty((cand.size, 3))
    key = np.empty(cand.size, dtype=np.int64)
    tie_keys(p, *(world[faces[cand, j]] for j in range(3)), cand, face[r].astype(np.int64), plane_tol,
             edge_bary, NOT_CONTAINED, unit, key)
    ray, pick = lowest_key(pair_ray, key)
    face[rows[ray]] = key[pick]
    normal[rows[ray]] = unit[pick]
