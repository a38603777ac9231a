"""Compiled kernels of the caster's passes around Embree (numba), their only implementation.

:func:`rays32` makes Embree's float32 origins and directions (:func:`unit_rays32` with the
directions normalised in the same pass, for the first segment of a trace),
:func:`static_hits` turns Embree's ray-hit arrays into :class:`hifi.caster.NearestHits`,
:func:`unit_rows` normalises the directions and :func:`finish_hits` finishes the first segment
of :func:`hifi.caster.tracing._first_segment` (normal toward the ray, hit point, misses NaN), one
pass each; :func:`settle_static` and :func:`tie_keys` apply the edge-tie rule
(:func:`hifi.caster.settle_ties`) with one arithmetic, :func:`_tie_pair`; :func:`range_image`
makes a depth camera's images from the hits, :func:`depth_rows` from Embree's arrays of a chunk
(:meth:`hifi.caster.RayCaster.cast_frame`). Each floating-point operation is the one numpy would do, in
numpy's order (no ``fastmath``): ``sqrt((x^2 + y^2) + z^2)`` as :func:`hifi.caster._rows.row_norm`,
dot products left to right, float32 comparisons of Embree's barycentrics as numpy makes them
with a Python float; ``tests/oracles/cast_kernel.py`` writes each with numpy and
``tests/hifi/caster/test_caster.py`` holds the two to the same bits. Imported at the first cast
(numba with it, :mod:`hifi.kernels`); ``cache=True`` keeps the
machine code in ``__pycache__``; ``nogil``: the caster's threads run them on their chunks.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def static_hits(tfar, geom_id, prim_id, ng, u, v, geom_object, face_lookup, geom_start, edge_lo, edge_hi,
                with_normal, distance, obj, face, normal, edge):  # pragma: no cover (compiled)
    """Nearest hits of the static group from Embree's arrays.

    Parameters
    ----------
    tfar : (n,) float32
    geom_id, prim_id : (n,) int32
        Embree's geomID (-1 on a miss) and primID.
    ng : (n, 3) float32
        Embree's unnormalised geometric normal.
    u, v : (n,) float32
        Barycentrics of the hit.
    geom_object : (g,) int32
        geomID -> object index.
    face_lookup, geom_start : (m,) int32, (g,) int64
        geomID's block start and local primID -> object face index; ``face_lookup`` of
        length 0: primID is the face index.
    edge_lo, edge_hi : float32
        ``_EDGE_BARY`` and ``1 - _EDGE_BARY`` as float32.
    with_normal : bool
        False: the normal is NaN on every row (a trace whose caller reads no normals and
        follows no ray off a surface skips the square root and three divisions of each hit).
    distance, obj, face, normal, edge : out
        float64 distance (inf on a miss), int32 object and face (-1), unit float64 normal
        (NaN), bool on a triangle's edge (False on a miss).
    """
    n = tfar.shape[0]
    lookup = face_lookup.shape[0] > 0
    for i in range(n):
        g = geom_id[i]
        if g < 0 or not with_normal:
            normal[i, 0] = np.nan
            normal[i, 1] = np.nan
            normal[i, 2] = np.nan
        if g < 0:
            distance[i] = np.inf
            obj[i] = -1
            face[i] = -1
            edge[i] = False
            continue
        obj[i] = geom_object[g]
        face[i] = face_lookup[geom_start[g] + prim_id[i]] if lookup else prim_id[i]
        distance[i] = np.float64(tfar[i])
        if with_normal:
            x = np.float64(ng[i, 0])
            y = np.float64(ng[i, 1])
            z = np.float64(ng[i, 2])
            den = math.sqrt((x * x + y * y) + z * z)
            normal[i, 0] = x / den
            normal[i, 1] = y / den
            normal[i, 2] = z / den
        ui, vi = u[i], v[i]
        edge[i] = min(ui, vi) < edge_lo or ui + vi > edge_hi


@numba.njit(cache=True, nogil=True, inline="always")
def _origin32(o, r, offset, o32, i):  # pragma: no cover (compiled)
    """Row ``i`` of Embree's float32 origins from row ``r`` of ``o``: ``float32(o[r] - offset)``,
    the subtraction in float64, then rounded (numpy's ``np.subtract(o, offset).astype(np.float32)``)."""
    o32[i, 0] = np.float32(o[r, 0] - offset[0])
    o32[i, 1] = np.float32(o[r, 1] - offset[1])
    o32[i, 2] = np.float32(o[r, 2] - offset[2])


@numba.njit(cache=True, nogil=True)
def rays32(o, offset, d, o32, d32):  # pragma: no cover (compiled)
    """Embree's float32 rays, one pass: ``o32 = float32(o - offset)`` (``o`` one row every ray
    shares, or a row per ray), ``d32 = float32(d)``; the subtraction in float64, then rounded,
    as numpy's ``np.subtract(o, offset).astype(np.float32)``."""
    shared = o.shape[0] == 1
    for i in range(d.shape[0]):
        _origin32(o, 0 if shared else i, offset, o32, i)
        d32[i, 0] = np.float32(d[i, 0])
        d32[i, 1] = np.float32(d[i, 1])
        d32[i, 2] = np.float32(d[i, 2])


@numba.njit(cache=True, nogil=True)
def unit_rays32(o, offset, d_in, d, o32, d32):  # pragma: no cover (compiled)
    """:func:`unit_rows` and :func:`rays32` in one pass over the rays of a first segment:
    ``d = d_in / |d_in|`` (float64, the norm ``sqrt((x^2 + y^2) + z^2)``), ``d32 = float32(d)``,
    ``o32 = float32(o - offset)`` (``o`` one row every ray shares, or a row per ray)."""
    shared = o.shape[0] == 1
    for i in range(d_in.shape[0]):
        _origin32(o, 0 if shared else i, offset, o32, i)
        x, y, z = d_in[i, 0], d_in[i, 1], d_in[i, 2]
        s = math.sqrt((x * x + y * y) + z * z)
        ux = x / s
        uy = y / s
        uz = z / s
        d[i, 0] = ux
        d[i, 1] = uy
        d[i, 2] = uz
        d32[i, 0] = np.float32(ux)
        d32[i, 1] = np.float32(uy)
        d32[i, 2] = np.float32(uz)


@numba.njit(cache=True, nogil=True)
def unit_rows(d_in, out):  # pragma: no cover (compiled)
    """``out = d_in / |d_in|`` row by row, the norm ``sqrt((x^2 + y^2) + z^2)``."""
    for i in range(d_in.shape[0]):
        x, y, z = d_in[i, 0], d_in[i, 1], d_in[i, 2]
        s = math.sqrt((x * x + y * y) + z * z)
        out[i, 0] = x / s
        out[i, 1] = y / s
        out[i, 2] = z / s


@numba.njit(cache=True, nogil=True)
def finish_hits(o, d, seg, obj_g, face_g, nrm_g, dist, pt, nrm, obj, face):  # pragma: no cover (compiled)
    """First segment finished: object and face (-1 on a miss), distance (NaN on a miss), the
    normal turned toward the arriving ray (``-n`` where ``n . d > 0``, summed left to right),
    the hit point ``o + d t`` (NaN on a miss). ``o`` holds a row per ray, or one row that every
    ray shares (a camera's centre). Returns the number of hits."""
    hits = 0
    shared = o.shape[0] == 1
    for i in range(seg.shape[0]):
        ob = obj_g[i]
        obj[i] = ob
        face[i] = face_g[i]
        if ob < 0:
            dist[i] = np.nan
            for k in range(3):
                nrm[i, k] = nrm_g[i, k]               # NaN
                pt[i, k] = np.nan
            continue
        hits += 1
        t = seg[i]
        dist[i] = t
        facing = nrm_g[i, 0] * d[i, 0] + nrm_g[i, 1] * d[i, 1] + nrm_g[i, 2] * d[i, 2]
        sign = -1.0 if facing > 0 else 1.0
        for k in range(3):
            nrm[i, k] = nrm_g[i, k] * sign
            pt[i, k] = o[0 if shared else i, k] + d[i, k] * t
    return hits


@numba.njit(cache=True, nogil=True)
def range_image(a, b, dist, point, oid, cos_axis, class_table,
                distance32, depth32, x32, y32, z32, class_ids):  # pragma: no cover (compiled)
    """The float32 images of a depth camera's pixels ``a:b`` from its hits, one pass
    (:meth:`sensors.depthmap.DepthMap.step`'s numpy: ``astype(np.float32)`` of the distance,
    of ``distance x cos_axis``, of the point's columns, and the class of each object, -1: the
    table's last entry)."""
    last = class_table.shape[0] - 1
    for i in range(a, b):
        d = dist[i]
        distance32[i] = np.float32(d)
        depth32[i] = np.float32(d * cos_axis[i])
        x32[i] = np.float32(point[i, 0])
        y32[i] = np.float32(point[i, 1])
        z32[i] = np.float32(point[i, 2])
        o = oid[i]
        class_ids[i] = class_table[o if o >= 0 else last]


@numba.njit(cache=True, nogil=True)
def depth_rows(a, o, d, tfar, geom_id, geom_object, cos_axis, class_table,
               distance32, depth32, x32, y32, z32, object_id, class_ids):  # pragma: no cover (compiled)
    """A depth camera's pixels ``a:a + len(tfar)`` straight from Embree's arrays of their chunk
    (:meth:`hifi.caster.RayCaster.cast_frame`): what :func:`static_hits`, :func:`finish_hits`
    and :func:`range_image` make of them one after the other, in one pass and with their
    operations, for a frame with no tie rule to apply to what it keeps (distance, point and
    object only) and no mirror: the distance ``float64(tfar)`` (NaN on a miss), the point
    ``o + d t``, both to float32, ``float32(distance x cos_axis)``, the object (-1) and its
    class (-1: the table's last entry). ``o`` one row every ray shares, ``d`` the chunk's unit
    float64 directions; ``tfar``, ``geom_id``, ``d`` indexed from 0, the images from ``a``."""
    last = class_table.shape[0] - 1
    for i in range(tfar.shape[0]):
        j = a + i
        g = geom_id[i]
        if g < 0:
            t = np.nan
            ob = -1
            px = np.nan
            py = np.nan
            pz = np.nan
        else:
            t = np.float64(tfar[i])
            ob = geom_object[g]
            px = o[0, 0] + d[i, 0] * t
            py = o[0, 1] + d[i, 1] * t
            pz = o[0, 2] + d[i, 2] * t
        distance32[j] = np.float32(t)
        depth32[j] = np.float32(t * cos_axis[j])
        x32[j] = np.float32(px)
        y32[j] = np.float32(py)
        z32[j] = np.float32(pz)
        object_id[j] = ob
        class_ids[j] = class_table[ob if ob >= 0 else last]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def settle_static(rows, best, face, normal, origins, directions, faces, world, vid, indptr,
                  vertex_face, plane_tol, edge_bary):  # pragma: no cover (compiled)
    """The edge-tie rule of :func:`hifi.caster.settle_ties` for hits on one static object, in
    place on ``face`` and ``normal`` (the numpy of :func:`hifi.caster.tie_candidates` and the
    lowest-key choice, pair by pair in the same order, with the same operations).

    Parameters
    ----------
    rows : (m,) int64
        The rays hit on an edge of this object.
    best : (n,) float64
        Hit distances [m].
    face : (n,) int32, normal : (n, 3) float64
        Reported face (whole-mesh index) and normal; overwritten on ``rows``.
    origins, directions : (n, 3) float64
    faces : (f, 3) int64
        The object's faces (all of them).
    world : (v, 3) float64
        Scene-frame vertices.
    vid, indptr, vertex_face
        :func:`hifi.caster.ties.object_topology`.
    plane_tol, edge_bary : float
    """
    for ii in range(rows.shape[0]):
        i = rows[ii]
        reported = face[i]
        t = best[i]
        p0 = origins[i, 0] + directions[i, 0] * t
        p1 = origins[i, 1] + directions[i, 1] * t
        p2 = origins[i, 2] + directions[i, 2] * t
        win_key = np.iinfo(np.int64).max
        win = (0.0, 0.0, 0.0)
        for c in range(3):
            m = vid[faces[reported, c]]
            for k in range(indptr[m], indptr[m + 1]):
                cand = vertex_face[k]                # a whole-mesh face index is its row here
                a = world[faces[cand, 0]]
                b = world[faces[cand, 1]]
                q = world[faces[cand, 2]]
                u0, u1, u2, inside = _tie_pair(p0, p1, p2, a, b, q, plane_tol, edge_bary)
                if (inside or cand == reported) and cand < win_key:
                    win_key = cand
                    win = (u0, u1, u2)
        face[i] = win_key
        normal[i, 0] = win[0]
        normal[i, 1] = win[1]
        normal[i, 2] = win[2]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def tie_keys(p, a, b, q, cand, reported, plane_tol, edge_bary, not_contained, unit, key):  # pragma: no cover
    """The edge-tie rule's arithmetic for (ray, candidate) pairs whose triangles are given
    (:func:`hifi.caster.ties.tie_candidates`: a moving object's vertices at each ray's time, or a
    facet rank's share), pair by pair as :func:`settle_static` does it.

    Parameters
    ----------
    p : (k, 3) float64
        Hit point of the pair's ray [m].
    a, b, q : (k, 3) float64
        The candidate's scene-frame vertices [m].
    cand, reported : (k,) int
        The candidate face and the face the ray's hit reported.
    plane_tol, edge_bary : float
    not_contained : int
        The key of a candidate that neither contains the point nor is the reported face.
    unit : (k, 3) float64, key : (k,) int64
        Out: the candidate's unit normal and its key (its index if it contains the point or is
        the reported face, else ``not_contained``).
    """
    for i in range(p.shape[0]):
        u0, u1, u2, inside = _tie_pair(p[i, 0], p[i, 1], p[i, 2], a[i], b[i], q[i], plane_tol, edge_bary)
        unit[i, 0] = u0
        unit[i, 1] = u1
        unit[i, 2] = u2
        key[i] = cand[i] if inside or cand[i] == reported[i] else not_contained


@numba.njit(inline="always", error_model="numpy")
def _tie_pair(p0, p1, p2, a, b, q, plane_tol, edge_bary):  # pragma: no cover (compiled)
    """Unit normal of triangle ``a b q`` (float64 cross product, ``sqrt((x^2 + y^2) + z^2)``) and
    whether the point ``p`` lies within ``plane_tol`` [m] of its plane and inside it by its
    barycentrics (Cramer's rule on the projected point, ``edge_bary`` of slack): the one
    arithmetic of the edge-tie rule, dot products summed left to right."""
    e10 = b[0] - a[0]
    e11 = b[1] - a[1]
    e12 = b[2] - a[2]
    e20 = q[0] - a[0]
    e21 = q[1] - a[1]
    e22 = q[2] - a[2]
    w0 = p0 - a[0]
    w1 = p1 - a[1]
    w2 = p2 - a[2]
    n0 = e11 * e22 - e12 * e21
    n1 = e12 * e20 - e10 * e22
    n2 = e10 * e21 - e11 * e20
    n_len = math.sqrt((n0 * n0 + n1 * n1) + n2 * n2)
    u0 = n0 / n_len
    u1 = n1 / n_len
    u2 = n2 / n_len
    d11 = (e10 * e10 + e11 * e11) + e12 * e12
    d12 = (e10 * e20 + e11 * e21) + e12 * e22
    d22 = (e20 * e20 + e21 * e21) + e22 * e22
    dw1 = (w0 * e10 + w1 * e11) + w2 * e12
    dw2 = (w0 * e20 + w1 * e21) + w2 * e22
    den = d11 * d22 - d12 * d12
    b1 = (d22 * dw1 - d12 * dw2) / den
    b2 = (d11 * dw2 - d12 * dw1) / den
    inside = (abs((w0 * u0 + w1 * u1) + w2 * u2) <= plane_tol and b1 >= -edge_bary
              and b2 >= -edge_bary and b1 + b2 <= 1.0 + edge_bary)
    return u0, u1, u2, inside
