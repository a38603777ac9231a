"""Embree ray caster (through embreex) that follows rays through mirrors.

Static objects share one BVH built once in the scene frame (shifted to the scene centre so
float32 keeps its precision); every moving object has its own BVH built once in its body frame,
and rays are transformed into that frame at each ray's own emission time instead of rebuilding
the BVH. Casting is split over threads (embreex releases the GIL inside ``run``).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .constants import (MAX_MIRROR_BOUNCES, MIRROR_FOLLOW_THRESHOLD, SECONDARY_RAY_OFFSET_MIN_M,
                        SECONDARY_RAY_OFFSET_REL)
from .motion import Pose, Track
from .scene import Scene

#: Rays per thread task below which threading costs more than it saves.
_MIN_RAYS_PER_TASK = 2048

#: Most rays in one chunk of work handed to a thread. Smaller chunks balance the threads
#: better but pay numpy's per-call overhead more often (16 k to 128 k measured within noise).
_CHUNK_RAYS = 65536

#: Smallest cosine used to turn the normal clearance of a secondary ray into a distance along
#: it; grazing reflections (cos < 0.05, 87 deg) step at most 20 offsets along the ray.
_MIN_COS_OFFSET = 0.05

#: Relative margin on a moving object's swept bounding ball, against rounding in the cull test.
_CULL_MARGIN_REL = 1e-6

#: Barycentric coordinate (Embree's u, v, 1 - u - v) below which a hit counts as on the edge of
#: its triangle, where another triangle may give the same float32 distance (a tie). float32
#: rounds barycentrics at ~1e-7; 2**-16 (1.5e-5) keeps every exact tie with margin.
_EDGE_BARY = 2.0**-16

#: Distance of a hit point from a neighbouring triangle's plane within which that triangle is
#: taken to contain the point too, relative to the scene extent (2**-20: a few float32 ulp).
_TIE_PLANE_REL = 2.0**-20


def _row_norm(v: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row of ``v`` (n, 3), shape (n,).

    The same arithmetic as ``np.linalg.norm(v, axis=1)``, ``sqrt((x^2 + y^2) + z^2)``, so the
    same bits, without numpy's slow reduction over an axis of length 3 (about 6x faster).
    """
    sq = np.square(v, dtype=np.float64)
    s = np.add(sq[:, 0], sq[:, 1])
    np.add(s, sq[:, 2], out=s)
    return np.sqrt(s, out=s)


def _divide_rows(v: np.ndarray, s: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = v / s[:, None]`` in float64 for ``v`` (n, 3), column by column.

    Same bits as the broadcast division; numpy runs a broadcast over an inner axis of length 3
    about twice as slowly as three divisions over columns.
    """
    for j in range(3):
        np.divide(v[:, j], s, out=out[:, j], dtype=np.float64)
    return out


def _row_dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Dot product of the rows of ``u`` and ``v`` (n, 3) in float64, shape (n,)."""
    p = np.multiply(u, v, dtype=np.float64)
    s = np.add(p[:, 0], p[:, 1])
    np.add(s, p[:, 2], out=s)
    return s


def _on_edge(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether Embree's barycentrics ``u``, ``v`` put a hit on its triangle's edge (``_EDGE_BARY``)."""
    return (np.minimum(u, v) < _EDGE_BARY) | (u + v > 1.0 - _EDGE_BARY)


def _multiply_rows(v: np.ndarray, s: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = v * s[:, None]`` for ``v`` (n, 3), column by column (see :func:`_divide_rows`)."""
    for j in range(3):
        np.multiply(v[:, j], s, out=out[:, j])
    return out


@dataclass(frozen=True)
class Hits:
    """Result of casting n rays. Misses are NaN / -1, never exceptions.

    Attributes
    ----------
    distance : (n,) float64
        Length of the whole ray path to the first diffuse surface, through mirrors [m]; NaN if
        nothing is hit within the maximum range.
    point : (n, 3) float64
        True hit point on that surface, scene frame [m]; NaN on a miss.
    normal : (n, 3) float64
        Unit geometric normal of the hit facet, scene frame, turned to face the arriving ray.
    direction : (n, 3) float64
        Unit direction of the last ray segment (the emitted direction if no mirror was hit).
    object_id : (n,) int32
        Index of the object hit in the scene, -1 on a miss.
    face_index : (n,) int32
        Index of the facet in that object's mesh, -1 on a miss.
    bounces : (n,) int8
        Mirror reflections on the way.
    """

    distance: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    direction: np.ndarray
    object_id: np.ndarray
    face_index: np.ndarray
    bounces: np.ndarray

    @property
    def hit(self) -> np.ndarray:
        """Boolean mask of rays that reached a diffuse surface."""
        return self.object_id >= 0

    @property
    def cos_incidence(self) -> np.ndarray:
        """Cosine of the angle between the arriving ray and the surface normal, NaN on a miss."""
        c = -np.einsum("ij,ij->i", self.direction, self.normal)
        c[~self.hit] = np.nan
        return c

    def __len__(self) -> int:
        return self.distance.shape[0]


def _no_hits(n: int):
    """Nearest-hit buffers for n rays before any cast: inf distance, ids -1, zero normals, no edge."""
    return (np.full(n, np.inf), np.full(n, -1, dtype=np.int32), np.full(n, -1, dtype=np.int32),
            np.zeros((n, 3)), np.zeros(n, dtype=bool))


@dataclass
class _Group:
    """One Embree scene: all static objects (scene frame) or one moving object (body frame)."""

    embree: object
    geom_object: np.ndarray            # geomID -> object index
    face_lookup: np.ndarray | None     # concatenated local primID -> object face index (None: identity)
    geom_start: np.ndarray | None      # geomID -> start of its block in face_lookup
    body: str | None                   # moving object's body name, None for the static group
    offset: np.ndarray                 # subtracted from scene-frame coordinates before float32
    reach: float = 0.0                 # moving object: largest vertex distance from its origin [m]


def _embree_scene():
    from embreex import rtcore_scene  # imported lazily: importing hifi builds nothing
    return rtcore_scene.EmbreeScene()


def _add_triangles(escene, vertices: np.ndarray, faces: np.ndarray) -> None:
    from embreex.mesh_construction import TriangleMesh
    TriangleMesh(escene, np.ascontiguousarray(vertices, dtype=np.float32),
                 np.ascontiguousarray(faces, dtype=np.int32))


class RayCaster:
    """Nearest-hit ray casting against a :class:`~hifi.scene.Scene`, through mirrors.

    Parameters
    ----------
    scene : Scene
        Objects, materials and motion.
    max_bounces : int
        Bound on mirror reflections per ray (default 8); a ray still on a mirror after that many
        reflections reports no hit.
    n_threads : int, optional
        Threads casting in parallel; default: every core (``os.cpu_count()``).
    face_subset : callable, optional
        ``face_subset(object_index, n_faces) -> indices`` of the faces this caster holds (used
        by the MPI facet-partitioned caster); default all faces.

    Notes
    -----
    BVHs are built on first use, not at construction, so creating a caster is cheap.
    Secondary rays leave a mirror from a point on the reflected line that clears the surface by
    ``SECONDARY_RAY_OFFSET_REL`` times the scene's coordinate magnitude (float32 safe at any
    scale); the path length is measured from the true reflection point, so the offset does not
    bias the distance, and the reflected line itself is exact. The scene is frozen during a ray's flight (< 1 us at 300 m).
    """

    #: Whether :meth:`nearest` is a collective over processes (the MPI facet-partitioned caster
    #: sets it): then :meth:`cast` passes the first segment of all rays through one
    #: :meth:`nearest` call instead of per-chunk work in the threads, so that every process makes
    #: the same calls in the same order.
    collective_nearest = False

    def __init__(self, scene: Scene, *, max_bounces: int = MAX_MIRROR_BOUNCES,
                 n_threads: int | None = None, face_subset=None):
        self.scene = scene
        self.max_bounces = int(max_bounces)
        self.n_threads = int(n_threads or os.cpu_count() or 1)
        self._face_subset = face_subset
        self._groups: list[_Group] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._mirror = scene.object_table("mirror")
        # Per object id (and -1, last entry, NaN -> False): does a ray follow its reflection?
        self._mirror_object = self._mirror >= MIRROR_FOLLOW_THRESHOLD
        self._has_mirror = bool(np.any(self._mirror_object))
        #: Triangles handed to Embree by :meth:`build` (all of the scene's, or this subset's).
        self.n_triangles = 0
        extent_m = scene.extent_m()
        self._offset_m = max(SECONDARY_RAY_OFFSET_REL * extent_m, SECONDARY_RAY_OFFSET_MIN_M)
        self._tie_plane_m = _TIE_PLANE_REL * max(extent_m, 1.0)

    # -- building -------------------------------------------------------------------------------
    def _faces_of(self, obj) -> np.ndarray:
        if self._face_subset is None:
            return np.arange(len(obj.faces))
        return np.asarray(self._face_subset(obj.index, len(obj.faces)), dtype=np.int64)

    def _triangles_of(self, obj, vertices: np.ndarray):
        """``(vertices, faces, face ids)`` handed to Embree for ``obj``.

        With a face subset, only the vertices its faces use are kept (faces renumbered), so a
        process holds about its share of the vertex buffer too; face ids is None for all faces.
        """
        sel = self._faces_of(obj)
        if self._face_subset is None:
            return vertices, obj.faces, None
        used, faces = np.unique(obj.faces[sel], return_inverse=True)
        return vertices[used], faces.reshape(-1, 3), sel

    @staticmethod
    def _lookup(geom_faces):
        if all(f is None for f in geom_faces):
            return None, None
        sizes = [len(f) for f in geom_faces]
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return np.concatenate(geom_faces).astype(np.int32), start

    def build(self) -> "RayCaster":
        """Build every BVH now (otherwise done on the first cast)."""
        if self._groups is not None:
            return self
        scene = self.scene
        groups: list[_Group] = []
        self.n_triangles = 0
        static = [o for o in scene.objects if not scene.is_moving(o.name)]
        if static:
            world = [scene.pose_at(o.name, 0.0).apply(o.vertices) for o in static]
            lo = np.min([w.min(axis=0) for w in world], axis=0)
            hi = np.max([w.max(axis=0) for w in world], axis=0)
            centre = (lo + hi) / 2.0
            es = _embree_scene()
            geom_obj, geom_faces = [], []
            for obj, verts in zip(static, world):
                verts, faces, sel = self._triangles_of(obj, verts)
                if len(faces) == 0:
                    continue
                _add_triangles(es, verts - centre, faces)
                self.n_triangles += len(faces)
                geom_obj.append(obj.index)
                geom_faces.append(sel)
            if geom_obj:
                groups.append(_Group(es, np.asarray(geom_obj, dtype=np.int32),
                                     *self._lookup(geom_faces), None, centre))
        for obj in scene.objects:
            if not scene.is_moving(obj.name):
                continue
            verts, faces, sel = self._triangles_of(obj, obj.vertices)
            if len(faces) == 0:
                continue
            es = _embree_scene()
            _add_triangles(es, verts, faces)
            self.n_triangles += len(faces)
            groups.append(_Group(es, np.asarray([obj.index], dtype=np.int32),
                                 *self._lookup([sel]), obj.name, np.zeros(3),
                                 float(np.max(_row_norm(verts[faces.ravel()])))))
        self._groups = groups
        return self

    def close(self) -> None:
        """Release the thread pool."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    # -- casting ----------------------------------------------------------------------------------
    def _map(self, fn, n: int) -> list:
        """``fn(start, stop)`` over contiguous chunks of ``range(n)``, on the pool; results in order.

        Each thread gets the same number of chunks of at most ``_CHUNK_RAYS`` rays; fewer than
        ``_MIN_RAYS_PER_TASK`` rays per thread run in the calling thread. Every ray's result
        depends on that ray alone, never on the chunking.
        """
        tasks = min(self.n_threads, max(1, n // _MIN_RAYS_PER_TASK))
        n_chunks = tasks * max(1, -(-n // (tasks * _CHUNK_RAYS)))
        bounds = np.linspace(0, n, n_chunks + 1).astype(int)
        if tasks <= 1:
            return [fn(bounds[i], bounds[i + 1]) for i in range(n_chunks)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="hifi-cast")
        return list(self._pool.map(lambda i: fn(bounds[i], bounds[i + 1]), range(n_chunks)))

    def _offset_rows(self, group: _Group, n: int) -> np.ndarray:
        """``group.offset`` tiled over at least ``n`` rays, flat (3 n,); cached per group."""
        cache = self.__dict__.setdefault("_offset_rows_cache", {})
        rows = cache.get(id(group))
        if rows is None or rows.size < 3 * n:
            rows = cache[id(group)] = np.tile(group.offset, max(n, _CHUNK_RAYS))
        return rows[:3 * n]

    @staticmethod
    def _limit32(max_distance) -> np.ndarray:
        """Embree's ``tfar``: the search limit [m] in float32, ``inf`` replaced by float32's max."""
        limit = np.where(np.isfinite(max_distance), max_distance, np.finfo(np.float32).max)
        return np.ascontiguousarray(limit, dtype=np.float32)

    def _swept_ball(self, g: _Group, t_min: float, t_max: float):
        """Ball [m] containing moving object ``g`` at every time in ``[t_min, t_max]``, or None.

        For an object on its own keyframed track (no parent), its origin moves on the polyline
        through the keyframe positions, which lies in the convex hull of the positions at
        ``t_min``, ``t_max`` and the keyframes between; every vertex stays within ``reach`` of
        the origin whatever the rotation. So the ball centred on those positions' bounding-box
        centre with radius (largest distance to them) + ``reach`` holds the object throughout.
        Objects riding on a parent are not bounded this way (None: every ray is cast).
        """
        body = self.scene.bodies[g.body]
        if body.parent is not None or not isinstance(body.local, Track):
            return None
        tk = body.local.times_s
        inner = tk[(tk > t_min) & (tk < t_max)]
        pts = body.local.at(np.concatenate([[t_min, t_max], inner])).translation
        centre = (pts.min(axis=0) + pts.max(axis=0)) / 2.0
        radius = float(np.max(_row_norm(pts - centre))) + g.reach
        return centre, radius * (1.0 + _CULL_MARGIN_REL) + self._offset_m

    def _candidates(self, g: _Group, origins, directions, times, tfar32):
        """Indices of the rays whose segment passes within the object's swept ball (or None)."""
        ball = self._swept_ball(g, float(times.min()), float(times.max()))
        if ball is None:
            return None
        centre, radius = ball
        rel = centre - origins
        along = np.clip(_row_dot(rel, directions), 0.0, tfar32.astype(np.float64))
        closest = rel - directions * along[:, None]
        return np.nonzero(_row_dot(closest, closest) <= radius * radius)[0]

    def _nearest_chunk(self, origins, directions, times, tfar32, uniform_time: bool):
        """:meth:`nearest` over one chunk of rays; ``tfar32`` is shortened in place by Embree."""
        n = origins.shape[0]
        best, obj, face, normal, edge = _no_hits(n)
        for g in self._groups:
            pose = None
            if g.body is None:
                o32 = np.empty((n, 3), dtype=np.float32)
                np.subtract(origins, g.offset, out=o32, casting="same_kind")
                d32 = directions.astype(np.float32)
                sel = None
                r = g.embree.run(o32, d32, dists=tfar32, output=1)
            else:
                sel = self._candidates(g, origins, directions, times, tfar32)
                if sel is not None and sel.size == 0:
                    continue
                o_s, d_s = (origins, directions) if sel is None else (origins[sel], directions[sel])
                t_s = times[0] if uniform_time else (times if sel is None else times[sel])
                pose = self.scene.pose_at(g.body, t_s)
                o32 = np.ascontiguousarray(pose.inverse_apply(o_s), dtype=np.float32)
                d32 = np.ascontiguousarray(pose.inverse_apply_vectors(d_s), dtype=np.float32)
                sub_tfar = tfar32 if sel is None else np.ascontiguousarray(tfar32[sel])
                r = g.embree.run(o32, d32, dists=sub_tfar, output=1)
                if sel is not None:
                    tfar32[sel] = sub_tfar
            gid = r["geomID"]
            t = r["tfar"].astype(np.float64)
            rows = slice(None) if sel is None else sel
            better = (gid >= 0) & (t < best[rows])
            if not np.any(better):
                continue
            sub = np.nonzero(better)[0]                    # index into this group's rays
            idx = sub if sel is None else sel[sub]         # index into the chunk
            t, gid = t[sub], gid[sub]
            best[idx] = t
            gsel = gid
            obj[idx] = g.geom_object[gsel]
            prim = r["primID"][sub]
            face[idx] = prim if g.face_lookup is None else g.face_lookup[g.geom_start[gsel] + prim]
            ng = r["Ng"][sub].astype(np.float64)
            if pose is not None:
                ng = (pose if pose.single else Pose(pose.rotation[sub], pose.translation[sub])).apply_vectors(ng)
            normal[idx] = ng
            edge[idx] = _on_edge(r["u"][sub], r["v"][sub])
        hit = obj >= 0
        norms = _row_norm(normal[hit])
        normal[hit] /= norms[:, None]
        return best, obj, face, normal, edge

    def nearest(self, origins: np.ndarray, directions: np.ndarray, times: np.ndarray,
                max_distance: np.ndarray):
        """One segment: nearest facet along each ray within ``max_distance``.

        Parameters
        ----------
        origins, directions : (n, 3) float64
            Scene frame; directions of unit length.
        times : (n,) float64
            Emission time of each ray [s] (poses of moving objects are taken there).
        max_distance : (n,) float64
            Search limit per ray [m] (``inf`` for none).

        Returns
        -------
        distance : (n,) float64
            Segment length [m], ``inf`` on a miss.
        object_id, face_index : (n,) int32
            -1 on a miss.
        normal : (n, 3) float64
            Unit facet normal, scene frame, not yet turned toward the ray.
        """
        self.build()
        n = origins.shape[0]
        best, obj, face, normal, edge = _no_hits(n)
        if n == 0:
            return best, obj, face, normal
        tfar32 = self._limit32(max_distance)
        uniform_time = bool(np.all(times == times[0]))

        def work(a, b):
            best[a:b], obj[a:b], face[a:b], normal[a:b], edge[a:b] = self._nearest_chunk(
                origins[a:b], directions[a:b], times[a:b], tfar32[a:b], uniform_time)

        self._map(work, n)
        best, obj, face, normal, edge = self._combine(best, obj, face, normal, edge)
        self._settle_ties(origins, directions, times, best, obj, face, normal, edge)
        return best, obj, face, normal

    def _combine(self, best, obj, face, normal, edge):
        """Hook of the partitioned caster: this process's nearest hits -> the global ones."""
        return best, obj, face, normal, edge

    # -- ties -------------------------------------------------------------------------------------
    def _object_topology(self, index: int):
        """Faces around each vertex of object ``index`` (vertices merged by position): CSR."""
        cache = self.__dict__.setdefault("_topology_cache", {})
        topo = cache.get(index)
        if topo is None:
            obj = self.scene.objects[index]
            _, vid = np.unique(obj.vertices, axis=0, return_inverse=True)
            corners = vid.reshape(-1)[obj.faces.reshape(-1)].reshape(-1, 3)
            order = np.argsort(corners.ravel(), kind="stable")
            indptr = np.searchsorted(corners.ravel()[order], np.arange(vid.max() + 2))
            topo = cache[index] = (corners, indptr, order // 3)
        return topo

    def _static_world_vertices(self, index: int) -> np.ndarray:
        """Scene-frame vertices (float64) of static object ``index``, cached."""
        cache = self.__dict__.setdefault("_world_vertices_cache", {})
        if index not in cache:
            obj = self.scene.objects[index]
            cache[index] = self.scene.pose_at(obj.name, 0.0).apply(obj.vertices)
        return cache[index]

    def _settle_ties(self, origins, directions, times, best, obj, face, normal, edge) -> None:
        """Tie rule, in place: a hit on a triangle's edge goes to the lowest-index face of that
        object that contains the hit point, with that face's normal computed here.

        Embree reports one of the triangles at the nearest float32 distance; when a ray meets
        the shared edge (or vertex) of several, which one depends on the BVH, so on how the
        facets are split over processes. Every hit flagged ``edge`` (a barycentric below
        ``_EDGE_BARY``) is settled the same way whatever triangle Embree returned: candidates
        are the object's faces sharing a vertex position with it; those whose plane passes
        within ``_TIE_PLANE_REL`` of the scene extent of the hit point and whose barycentrics
        there are >= -``_EDGE_BARY`` contain it; the lowest face index wins and its unit normal
        (float64 cross product of its scene-frame vertices at the ray's time) replaces Embree's.
        Ties between faces of two different objects (coincident surfaces) are not settled.
        """
        rows = np.nonzero(edge & (obj >= 0))[0]
        if rows.size == 0:
            return
        tol = self._tie_plane_m
        for index in np.unique(obj[rows]):
            r = rows[obj[rows] == index]
            o = self.scene.objects[int(index)]
            corners, indptr, vertex_face = self._object_topology(int(index))
            # (ray, candidate face) pairs: every face around each corner of the reported face.
            v = corners[face[r]]                                   # (m, 3) vertex ids
            start, count = indptr[v].ravel(), (indptr[v + 1] - indptr[v]).ravel()
            pair_ray = np.repeat(np.repeat(np.arange(r.size), 3), count)
            first = np.repeat(np.cumsum(count) - count, count)
            cand = vertex_face[np.repeat(start, count) + np.arange(count.sum()) - first]
            if self.scene.is_moving(o.name):
                pose = self.scene.pose_at(o.name, times[r][pair_ray])
                tri = [pose.apply(o.vertices[o.faces[cand, j]]) for j in range(3)]
            else:                   # static: scene-frame vertices computed once per object
                world = self._static_world_vertices(int(index))
                tri = [world[o.faces[cand, j]] for j in range(3)]
            p = origins[r][pair_ray] + directions[r][pair_ray] * best[r][pair_ray, None]
            e1, e2, w = tri[1] - tri[0], tri[2] - tri[0], p - tri[0]
            n = np.cross(e1, e2)
            n_len = _row_norm(n)
            unit = n / n_len[:, None]
            # Barycentrics of p projected on the candidate's plane (Cramer's rule).
            d11, d12, d22 = _row_dot(e1, e1), _row_dot(e1, e2), _row_dot(e2, e2)
            dw1, dw2 = _row_dot(w, e1), _row_dot(w, e2)
            den = d11 * d22 - d12 * d12
            b1 = (d22 * dw1 - d12 * dw2) / den
            b2 = (d11 * dw2 - d12 * dw1) / den
            inside = ((np.abs(_row_dot(w, unit)) <= tol) & (b1 >= -_EDGE_BARY) & (b2 >= -_EDGE_BARY)
                      & (b1 + b2 <= 1.0 + _EDGE_BARY))
            # Lowest containing candidate per ray; the reported face always counts.
            key = np.where(inside | (cand == face[r][pair_ray]), cand, np.iinfo(np.int64).max)
            order = np.lexsort((key, pair_ray))
            firsts = order[np.searchsorted(pair_ray[order], np.arange(r.size))]
            face[r] = cand[firsts]
            normal[r] = unit[firsts]

    def _first_segment(self, a, b, origins, directions_in, times, uniform_time, max_range, out,
                       collective=False):
        """First segment of rays ``a:b``, written straight into the slices of the outputs.

        Normalises the directions, casts, and finishes every ray that reaches a diffuse surface
        or misses; rays on a mirror are left NaN / -1 and returned as
        ``(index, segment, point, normal, direction)`` for the next bounce (None if there are none).
        With ``collective``, the segment is cast through :meth:`nearest` (see
        :attr:`collective_nearest`) and the rays are finished as in the general path.
        """
        distance, point, normal, direction, object_id, face_index = out
        o = origins[a:b]
        d = direction[a:b]
        d_in = directions_in[a:b]
        _divide_rows(d_in, _row_norm(d_in), out=d)
        if max_range.ndim == 0:
            tfar32 = np.full(b - a, self._limit32(max_range), dtype=np.float32)
        else:
            tfar32 = self._limit32(max_range[a:b])
        dist, pt, nrm = distance[a:b], point[a:b], normal[a:b]
        obj, face = object_id[a:b], face_index[a:b]
        groups = self._groups
        if not collective and len(groups) == 1 and groups[0].body is None:
            # One static group (no moving objects): Embree's arrays go straight to the outputs.
            g = groups[0]
            o32 = np.empty((b - a, 3), dtype=np.float32)
            # origins - offset, with the offset tiled so the subtraction runs on flat arrays.
            np.subtract(o.reshape(-1), self._offset_rows(g, b - a), out=o32.reshape(-1),
                        casting="same_kind")
            r = g.embree.run(o32, d.astype(np.float32), dists=tfar32, output=1)
            gid = r["geomID"]
            hit = gid >= 0
            any_hit = bool(np.any(hit))
            if any_hit:
                miss = ~hit
                # geomID -1 (miss) wraps to the appended -1.
                np.take(np.append(g.geom_object, np.int32(-1)), gid, out=obj, mode="wrap")
                if g.face_lookup is None:
                    np.copyto(face, r["primID"])
                else:
                    face.fill(-1)
                    idx = np.nonzero(hit)[0]
                    face[idx] = g.face_lookup[g.geom_start[gid[idx]] + r["primID"][idx]]
                np.copyto(dist, r["tfar"])
                # Unit normal turned toward the arriving ray in one division: Ng / (|Ng| s),
                # s = -1 where Ng faces along the ray (dividing by -x is exactly negating).
                # The sign is taken from Ng before normalising; it could differ from the
                # normalised normal's only for |cos incidence| < 1e-15 (a ray in the facet's
                # plane, where either side is as good).
                ng = r["Ng"]
                denom = _row_norm(ng)
                denom[_row_dot(ng, d) > 0] *= -1.0
                np.copyto(denom, np.nan, where=miss)        # misses: NaN normal, no 0/0 warning
                _divide_rows(ng, denom, out=nrm)
                edge = hit & _on_edge(r["u"], r["v"])
                if np.any(edge):
                    e = np.nonzero(edge)[0]
                    seg_e, obj_e, face_e = np.copy(dist[e]), np.copy(obj[e]), np.copy(face[e])
                    nrm_e = np.empty((e.size, 3))
                    self._settle_ties(o[e], d[e], times[a:b][e], seg_e, obj_e, face_e, nrm_e,
                                      np.ones(e.size, dtype=bool))
                    face[e] = face_e
                    facing = np.einsum("ij,ij->i", nrm_e, d[e])
                    nrm[e] = nrm_e * np.where(facing > 0, -1.0, 1.0)[:, None]
        else:
            if collective:
                seg, obj_g, face_g, nrm_g = self.nearest(o, d, times[a:b],
                                                         np.broadcast_to(max_range, (len(times),))[a:b])
            else:
                seg, obj_g, face_g, nrm_g, edge = self._nearest_chunk(o, d, times[a:b], tfar32, uniform_time)
                self._settle_ties(o, d, times[a:b], seg, obj_g, face_g, nrm_g, edge)
            hit = obj_g >= 0
            any_hit = bool(np.any(hit))
            if any_hit:
                miss = ~hit
                obj[:], face[:], dist[:], nrm[:] = obj_g, face_g, seg, nrm_g
                # Turn normals toward the arriving ray (x -1.0 is exact).
                facing = np.einsum("ij,ij->i", nrm, d)
                _multiply_rows(nrm, np.where(facing > 0, -1.0, 1.0), out=nrm)
                np.copyto(nrm, np.nan, where=miss[:, None])
        if not any_hit:
            dist.fill(np.nan)
            pt.fill(np.nan)
            nrm.fill(np.nan)
            obj.fill(-1)
            face.fill(-1)
            return None
        # Misses NaN / -1; hit point o + d t.
        np.copyto(dist, np.nan, where=miss)
        np.copyto(face, -1, where=miss)
        _multiply_rows(d, dist, out=pt)
        np.add(o, pt, out=pt)
        if not self._has_mirror:
            return None
        on_mirror = self._mirror_object[obj]
        if not np.any(on_mirror):
            return None
        m = np.nonzero(on_mirror)[0]
        state = (m + a, dist[m], pt[m], nrm[m], d[m])
        dist[m] = np.nan
        pt[m] = np.nan
        nrm[m] = np.nan
        obj[m] = -1
        face[m] = -1
        return state

    def cast(self, origins, directions, times=0.0, max_range_m=np.inf) -> Hits:
        """Cast rays and follow them through mirrors to the first diffuse surface.

        Parameters
        ----------
        origins : (n, 3) array_like
            Ray origins, scene frame [m].
        directions : (n, 3) array_like
            Ray directions, scene frame (normalised here).
        times : float or (n,) array_like
            Emission time of each ray [s].
        max_range_m : float or (n,) array_like
            Maximum total path length [m]; a surface beyond it is a miss.

        Returns
        -------
        Hits

        Notes
        -----
        The first segment of every ray is cast and finished chunk by chunk on the thread pool,
        writing into the preallocated outputs (numpy and Embree release the GIL); only rays
        that hit a mirror go on to the bounce loop.
        """
        origins = np.asarray(origins, dtype=float).reshape(-1, 3)
        directions_in = np.asarray(directions, dtype=float).reshape(-1, 3)
        n = origins.shape[0]
        if directions_in.shape[0] != n:
            raise ValueError(f"origins has {n} rays but directions has {directions_in.shape[0]}")
        times = np.broadcast_to(np.asarray(times, dtype=float), (n,))
        max_range = np.asarray(max_range_m, dtype=float)
        if max_range.ndim > 0:
            max_range = np.broadcast_to(max_range, (n,))

        distance = np.empty(n)
        point = np.empty((n, 3))
        normal = np.empty((n, 3))
        out_dir = np.empty((n, 3))
        object_id = np.empty(n, dtype=np.int32)
        face_index = np.empty(n, dtype=np.int32)
        bounces = np.zeros(n, dtype=np.int8)
        hits = Hits(distance, point, normal, out_dir, object_id, face_index, bounces)
        if n == 0:
            return hits
        self.build()
        moving = any(g.body is not None for g in self._groups)
        uniform_time = bool(np.all(times == times[0])) if moving else True
        out = (distance, point, normal, out_dir, object_id, face_index)
        if self.collective_nearest:
            first = [self._first_segment(0, n, origins, directions_in, times, uniform_time,
                                         max_range, out, collective=True)]
        else:
            first = self._map(lambda a, b: self._first_segment(a, b, origins, directions_in, times,
                                                               uniform_time, max_range, out), n)
        states = [s for s in first if s is not None]
        if not states or self.max_bounces == 0:
            return hits

        # Rays on a mirror: reflect and follow, up to max_bounces reflections.
        active = np.concatenate([s[0] for s in states])
        seg, p, nrm, d = (np.concatenate([s[i] for s in states]) for i in range(1, 5))
        remaining = np.broadcast_to(max_range, (n,))[active] - seg
        travelled = seg
        for bounce in range(1, self.max_bounces + 1):
            reflected = d - 2.0 * np.einsum("ij,ij->i", d, nrm)[:, None] * nrm
            start = p
            # Leave along the reflected line itself, far enough to clear the mirror by the
            # scene-scaled offset (clamped at grazing reflection), so the path stays exact.
            cos_out = np.maximum(np.einsum("ij,ij->i", reflected, nrm), _MIN_COS_OFFSET)
            o = start + reflected * (self._offset_m / cos_out)[:, None]
            d = reflected
            seg, obj, face, nrm = self.nearest(o, d, times[active], remaining)
            hit = obj >= 0
            p = o + d * np.where(hit, seg, np.nan)[:, None]
            # Measure from the true reflection point, not the offset origin.
            seg = np.where(hit, np.linalg.norm(p - start, axis=1), seg)
            facing = np.einsum("ij,ij->i", nrm, d)
            nrm = np.where((facing > 0)[:, None], -nrm, nrm)
            total = travelled + seg
            is_mirror = hit & self._mirror_object[obj]
            final = hit & ~is_mirror
            fi = active[final]
            distance[fi] = total[final]
            point[fi] = p[final]
            normal[fi] = nrm[final]
            out_dir[fi] = d[final]
            object_id[fi] = obj[final]
            face_index[fi] = face[final]
            bounces[fi] = bounce
            if bounce == self.max_bounces or not np.any(is_mirror):
                break
            m = is_mirror
            active, travelled, remaining = active[m], total[m], remaining[m] - seg[m]
            seg, p, nrm, d = seg[m], p[m], nrm[m], d[m]
        return hits
