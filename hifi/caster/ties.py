"""Vertex topology and the edge-tie rule: vertices merged by position
(:func:`merge_vertices`, :func:`merged_ids_of`), the faces around each merged vertex
(:func:`object_topology`), the scene-frame vertices of static objects, and
:func:`settle_ties` with its pieces (:func:`tie_candidates`, :func:`lowest_key`), which give a
hit on a shared edge to the same face whatever the BVH or the split of the facets over
processes. Both the serial caster and :mod:`mpi.caster` (which applies the rule to each rank's
share) use it, independently of any backend, so it is a module of its own.
"""

from __future__ import annotations

import numpy as np

from ..world.scene import Scene
from .hits import EDGE_BARY, NearestHits

#: Byte order of this machine: the low 32 bits of an int64 come first in memory when True.
_LITTLE_ENDIAN = np.little_endian


def merge_vertices(vertices) -> np.ndarray:
    """Index of each vertex among the distinct vertex positions, in lexicographic order.

    Parameters
    ----------
    vertices : (v, 3) float
        Vertex positions [m].

    Returns
    -------
    (v,) int32
        The same indices as ``np.unique(vertices, axis=0, return_inverse=True)[1]``: positions
        numbered in ascending (x, then y, then z) order, equal rows (by float comparison, so
        -0.0 equals 0.0) sharing a number.

    Notes
    -----
    ``np.unique(..., axis=0)`` sorts the rows as one structured array and keeps sorted copies
    of it (about 120 B per triangle of a terrain in transients, 13.7 s at 10 M triangles).
    Here ``np.lexsort`` orders the rows by their three columns and each column is compared
    with its sorted neighbour in turn, so the transients are a few 8-byte arrays per vertex.
    """
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    n = v.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    if n > np.iinfo(np.int32).max:
        raise ValueError(f"{n} vertices do not fit int32 vertex ids")
    order = np.lexsort((v[:, 2], v[:, 1], v[:, 0]))
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for j in range(3):
        col = v[order, j]
        new[1:] |= col[1:] != col[:-1]
        del col
    ids = np.cumsum(new, dtype=np.int32)
    ids -= 1
    vid = np.empty(n, dtype=np.int32)
    vid[order] = ids
    return vid


def object_topology(scene: Scene, index: int, cache: dict):
    """Faces around each vertex of object ``index`` (vertices merged by position).

    Returns ``(vid, indptr, vertex_face)``: ``vid`` (v,) int32, the merged id of each mesh
    vertex (:func:`merge_vertices`); the faces using merged vertex k are
    ``vertex_face[indptr[k]:indptr[k + 1]]`` (whole-mesh face indices, int32, ascending), a CSR
    table (``indptr`` int32 below 2**31 corners, else int64). Only the faces the object keeps
    are listed (all of them, or one rank's share: :meth:`hifi.world.scene.SceneObject.keep_share`),
    and the object's vertices (a share keeps those of its faces).
    """
    topo = cache.get(("topology", index))
    if topo is None:
        obj = scene.objects[index]
        vid = merge_vertices(obj.vertices)
        n_merged = int(vid.max()) + 1 if vid.size else 0
        corners = vid[obj.faces]                                   # (f, 3) int32
        indptr = np.zeros(n_merged + 1, dtype=np.int32 if 3 * len(obj.faces) < 2**31 else np.int64)
        np.cumsum(np.bincount(corners.reshape(-1), minlength=n_merged), out=indptr[1:])
        # One int64 key per corner, (merged vertex << 32) | face, sorted in place: the faces
        # around each vertex, ascending (what a stable argsort of the corners gives, with half
        # the transient memory: no int64 permutation and no merge buffer).
        key = corners.astype(np.int64)
        del corners
        np.left_shift(key, 32, out=key)
        face_ids = obj.face_ids()
        if face_ids is None:
            face_ids = np.arange(len(obj.faces), dtype=np.int64)
        for j in range(3):
            np.bitwise_or(key[:, j], face_ids, out=key[:, j])
        del face_ids
        key = key.reshape(-1)
        key.sort()
        vertex_face = np.ascontiguousarray(key.view(np.int32)[0::2] if _LITTLE_ENDIAN else key.view(np.int32)[1::2])
        del key
        topo = cache[("topology", index)] = (vid, indptr, vertex_face)
    return topo


def merged_ids_of(scene: Scene, index: int, cache: dict, positions) -> np.ndarray:
    """Merged vertex id (:func:`object_topology`) of each of these body-frame positions of
    object ``index``, -1 where none of the object's (kept) vertices lies there.

    The merged ids number the distinct positions in ascending (x, y, z) order
    (:func:`merge_vertices`), so a position is found by a binary search over them with the
    same float comparisons (-0.0 equals 0.0; NaN matches nothing). A facet rank, which keeps
    only the vertices of its own faces, finds another rank's corners this way.

    Parameters
    ----------
    positions : (k, 3) float64

    Returns
    -------
    (k,) int64
    """
    key = ("positions", index)
    uniq = cache.get(key)
    if uniq is None:
        vid = object_topology(scene, index, cache)[0]
        n_merged = int(vid.max()) + 1 if vid.size else 0
        uniq = np.empty((n_merged, 3))
        uniq[vid] = scene.objects[index].vertices
        cache[key] = uniq
    q = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    lo = np.zeros(len(q), dtype=np.int64)
    hi = np.full(len(q), len(uniq), dtype=np.int64)
    while True:                      # first merged position not below q, lexicographically
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        u = uniq[np.minimum(mid, len(uniq) - 1)]
        below = np.zeros(len(q), dtype=bool)
        equal = np.ones(len(q), dtype=bool)
        for j in range(3):
            below |= equal & (u[:, j] < q[:, j])
            equal &= u[:, j] == q[:, j]
        lo = np.where(active & below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    found = lo < len(uniq)
    hit = np.zeros(len(q), dtype=bool)
    hit[found] = np.all(uniq[lo[found]] == q[found], axis=1)
    return np.where(hit, lo, -1)


def static_world_vertices(scene: Scene, obj) -> np.ndarray:
    """Scene-frame vertices (float64) of static object ``obj``: its pose at t = 0 applied.

    An object placed at the origin without rotation (quaternion (0, 0, 0, +-1), translation
    +0.0) gets its own vertex array back, not a copy, when every vertex is finite and none has
    a -0.0 coordinate: the rotation then multiplies by exact ones and zeros and adds exact
    zeros (with or without fused multiply-adds, in any order), which gives every finite
    coordinate back bit for bit except -0.0 (turned into +0.0). Otherwise
    ``pose.apply(vertices)``.
    """
    if obj.world is not None:                     # a facet rank's share, from the whole mesh's
        return obj.world
    pose = scene.pose_at(obj.name, 0.0)
    v = obj.vertices
    q = np.asarray(pose.rotation.as_quat(), dtype=float).reshape(-1)
    t = np.asarray(pose.translation, dtype=float).reshape(-1)
    if (q.size == 4 and not np.any(q[:3]) and abs(q[3]) == 1.0 and not np.any(t) and not np.any(np.signbit(t))
            and np.isfinite(v).all() and not np.any(np.signbit(v[v == 0.0]))):
        return v
    return pose.apply(v)


def _static_world_vertices(scene: Scene, index: int, cache: dict) -> np.ndarray:
    """Scene-frame vertices (float64) of static object ``index``, cached."""
    world = cache.get(("world", index))
    if world is None:
        world = cache[("world", index)] = static_world_vertices(scene, scene.objects[index])
    return world


def settle_ties(scene: Scene, origins, directions, times, hits: NearestHits, *,
                plane_tol_m: float, cache: dict | None = None) -> None:
    """Edge-tie rule, in place on ``hits.face_index`` and ``hits.normal``: a hit on a
    triangle's edge goes to the lowest-index face of that object that contains the hit point,
    with that face's normal computed here.

    Parameters
    ----------
    scene : Scene
        The whole scene (every object keeps all its faces).
    origins, directions : (n, 3) float64
        The rays cast, scene frame [m]; directions of unit length.
    times : float or (n,) float64
        Emission times [s].
    hits : NearestHits
        Their nearest hits (over all facets).
    plane_tol_m : float
        Distance [m] of the hit point from a neighbouring triangle's plane within which that
        triangle is taken to contain the point.
    cache : dict, optional
        Per-scene cache of mesh topology and static vertices, reused across calls.

    Notes
    -----
    Embree reports one of the triangles at the nearest float32 distance; when a ray meets
    the shared edge (or vertex) of several, which one depends on the BVH, so on how the
    facets are split over processes. Every hit flagged ``edge`` (a barycentric below
    ``EDGE_BARY``) is settled the same way whatever triangle Embree returned: candidates
    are the object's faces sharing a vertex position with it; those whose plane passes
    within ``plane_tol_m`` of the hit point and whose barycentrics there are >= -``EDGE_BARY``
    contain it; the lowest face index wins and its unit normal (float64 cross product of its
    scene-frame vertices at the ray's time) replaces Embree's.
    Ties between faces of two different objects (coincident surfaces) are not settled.
    A facet-partitioned caster, whose processes each keep a share of the faces, applies the
    same rule with :func:`tie_candidates` over each share and three reductions
    (:meth:`mpi.caster.FacetBackend.settle_ties`).
    """
    best, obj, face, normal, edge = hits
    rows = edge_rows(obj, edge)
    if rows.size == 0:
        return
    cache = {} if cache is None else cache
    hit = obj[rows]
    one = hit[0] == hit[-1] and bool(np.all(hit == hit[0]))    # often: the terrain alone
    for index in (hit[:1] if one else np.unique(hit)):
        r = rows if one else rows[hit == index]
        o = scene.objects[int(index)]
        vid, indptr, vertex_face = object_topology(scene, int(index), cache)
        if o.share is None and not scene.is_moving(o.name):
            from .._cast_kernel import settle_static          # numba: gather and rule in one pass
            settle_static(r.astype(np.int64), best, face, normal, origins, directions, o.faces,
                          _static_world_vertices(scene, int(index), cache), vid, indptr, vertex_face,
                          float(plane_tol_m), EDGE_BARY)
            continue
        pair_ray, cand, unit, key = tie_candidates(scene, int(index), vid[o.faces[face[r]]], face[r], r, origins,
                                                   directions, times, best, plane_tol_m=plane_tol_m, cache=cache)
        # Lowest containing candidate per ray (the reported face always counts: every ray has one).
        ray, pick = lowest_key(pair_ray, key)
        face[r[ray]] = cand[pick]
        normal[r[ray]] = unit[pick]


#: Key of a candidate face that does not contain the hit point (above every face index).
NOT_CONTAINED = np.iinfo(np.int64).max


def lowest_key(pair_ray, key):
    """Each ray's pair of lowest key (the first of equal ones): ``(rays, pairs)``, the rays that
    have pairs (ascending) and the index of that pair, from the pairs of
    :func:`tie_candidates`."""
    order = np.lexsort((key, pair_ray))
    ray = pair_ray[order]
    first = order[np.concatenate([[True], ray[1:] != ray[:-1]])] if ray.size else order
    return pair_ray[first], first


def edge_rows(obj, edge) -> np.ndarray:
    """Rows of the hits flagged on an edge of their triangle (misses excluded), ascending: the
    few flagged rows first, then their object ids (a pass over the flags only)."""
    rows = np.flatnonzero(edge)
    return rows[obj[rows] >= 0]


def tie_candidates(scene: Scene, index: int, corners, reported, r, origins, directions, times, best, *,
                   plane_tol_m: float, cache: dict):
    """The edge-tie rule's candidates for rays ``r`` on object ``index`` (:func:`settle_ties`).

    Parameters
    ----------
    scene : Scene
    index : int
        Object hit by every ray of ``r``.
    corners : (m, 3) int
        Merged vertex ids (:func:`object_topology`) of the reported face's corners, per ray;
        -1 for a corner where none of the object's kept vertices lies (a facet rank's share).
    reported : (m,) int
        Whole-mesh index of the reported face, per ray.
    r : (m,) int
        Rows of ``origins``, ``directions``, ``times`` and ``best`` (the hit distance) they are.
    plane_tol_m : float
    cache : dict
        Topology and static vertices of the object (:func:`object_topology`).

    Returns
    -------
    pair_ray : (k,) int64
        Ray (index into ``r``) of each (ray, candidate) pair, ascending.
    cand : (k,) int32
        Candidate: a face this object keeps around one of the reported face's corners.
    unit : (k, 3) float64
        Unit normal of the candidate (float64 cross product of its scene-frame vertices).
    key : (k,) int64
        The candidate's index if it contains the hit point or is the reported face, else
        :data:`NOT_CONTAINED`.

    Each pair's numbers are computed row by row, so they do not depend on which other pairs
    are computed with it (a process keeping a share of the faces gets the same bits).
    """
    o = scene.objects[index]
    _, indptr, vertex_face = object_topology(scene, index, cache)
    m = len(r)
    v = np.asarray(corners, dtype=np.int64)
    vv = np.maximum(v, 0)                         # -1: a corner no kept vertex lies at
    start = indptr[vv].ravel()
    count = np.where(v >= 0, indptr[vv + 1] - indptr[vv], 0).ravel()
    pair_ray = np.repeat(np.repeat(np.arange(m), 3), count)
    first = np.repeat(np.cumsum(count) - count, count)
    cand = vertex_face[np.repeat(start, count) + np.arange(count.sum()) - first]
    rows = o.face_rows(cand)
    if scene.is_moving(o.name):
        t = np.broadcast_to(np.asarray(times, dtype=float), best.shape)
        pose = scene.pose_at(o.name, t[r][pair_ray])
        tri = [pose.apply(o.vertices[o.faces[rows, j]]) for j in range(3)]
    else:                   # static: scene-frame vertices computed once per object
        world = _static_world_vertices(scene, index, cache)
        tri = [world[o.faces[rows, j]] for j in range(3)]
    p = origins[r][pair_ray] + directions[r][pair_ray] * best[r][pair_ray, None]
    from .._cast_kernel import tie_keys          # numba: the arithmetic of settle_static, pair by pair
    k = pair_ray.shape[0]
    unit = np.empty((k, 3))
    key = np.empty(k, dtype=np.int64)
    tie_keys(np.ascontiguousarray(p, dtype=float), *(np.ascontiguousarray(x, dtype=float) for x in tri),
             np.ascontiguousarray(cand, dtype=np.int64), np.asarray(reported, dtype=np.int64)[pair_ray],
             float(plane_tol_m), EDGE_BARY, NOT_CONTAINED, unit, key)
    return pair_ray, cand, unit, key
