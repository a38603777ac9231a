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
from .motion import Pose
from .scene import Scene

#: Rays per thread task below which threading costs more than it saves.
_MIN_RAYS_PER_TASK = 2048

#: Smallest cosine used to turn the normal clearance of a secondary ray into a distance along
#: it; grazing reflections (cos < 0.05, 87 deg) step at most 20 offsets along the ray.
_MIN_COS_OFFSET = 0.05


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


@dataclass
class _Group:
    """One Embree scene: all static objects (scene frame) or one moving object (body frame)."""

    embree: object
    geom_object: np.ndarray            # geomID -> object index
    face_lookup: np.ndarray | None     # concatenated local primID -> object face index (None: identity)
    geom_start: np.ndarray | None      # geomID -> start of its block in face_lookup
    body: str | None                   # moving object's body name, None for the static group
    offset: np.ndarray                 # subtracted from scene-frame coordinates before float32


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

    def __init__(self, scene: Scene, *, max_bounces: int = MAX_MIRROR_BOUNCES,
                 n_threads: int | None = None, face_subset=None):
        self.scene = scene
        self.max_bounces = int(max_bounces)
        self.n_threads = int(n_threads or os.cpu_count() or 1)
        self._face_subset = face_subset
        self._groups: list[_Group] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._mirror = scene.object_table("mirror")
        self._offset_m = max(SECONDARY_RAY_OFFSET_REL * scene.extent_m(), SECONDARY_RAY_OFFSET_MIN_M)

    # -- building -------------------------------------------------------------------------------
    def _faces_of(self, obj) -> np.ndarray:
        if self._face_subset is None:
            return np.arange(len(obj.faces))
        return np.asarray(self._face_subset(obj.index, len(obj.faces)), dtype=np.int64)

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
        static = [o for o in scene.objects if not scene.is_moving(o.name)]
        if static:
            world = [scene.pose_at(o.name, 0.0).apply(o.vertices) for o in static]
            lo = np.min([w.min(axis=0) for w in world], axis=0)
            hi = np.max([w.max(axis=0) for w in world], axis=0)
            centre = (lo + hi) / 2.0
            es = _embree_scene()
            geom_obj, geom_faces = [], []
            for obj, verts in zip(static, world):
                sel = self._faces_of(obj)
                if len(sel) == 0:
                    continue
                _add_triangles(es, verts - centre, obj.faces[sel])
                geom_obj.append(obj.index)
                geom_faces.append(None if self._face_subset is None else sel)
            if geom_obj:
                groups.append(_Group(es, np.asarray(geom_obj, dtype=np.int32),
                                     *self._lookup(geom_faces), None, centre))
        for obj in scene.objects:
            if not scene.is_moving(obj.name):
                continue
            sel = self._faces_of(obj)
            if len(sel) == 0:
                continue
            es = _embree_scene()
            _add_triangles(es, obj.vertices, obj.faces[sel])
            groups.append(_Group(es, np.asarray([obj.index], dtype=np.int32),
                                 *self._lookup([None if self._face_subset is None else sel]),
                                 obj.name, np.zeros(3)))
        self._groups = groups
        return self

    def close(self) -> None:
        """Release the thread pool."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    # -- casting ----------------------------------------------------------------------------------
    def _run(self, es, origins32: np.ndarray, dirs32: np.ndarray, tfar32: np.ndarray) -> dict:
        """embreex ``run`` over contiguous chunks on the thread pool."""
        n = origins32.shape[0]
        tasks = min(self.n_threads, max(1, n // _MIN_RAYS_PER_TASK))
        if tasks <= 1:
            return es.run(origins32, dirs32, dists=tfar32, output=1)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="hifi-cast")
        bounds = np.linspace(0, n, tasks + 1).astype(int)
        parts = list(self._pool.map(
            lambda i: es.run(origins32[bounds[i]:bounds[i + 1]], dirs32[bounds[i]:bounds[i + 1]],
                             dists=tfar32[bounds[i]:bounds[i + 1]], output=1), range(tasks)))
        return {k: np.concatenate([p[k] for p in parts]) for k in ("tfar", "geomID", "primID", "Ng")}

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
        best = np.full(n, np.inf)
        obj = np.full(n, -1, dtype=np.int32)
        face = np.full(n, -1, dtype=np.int32)
        normal = np.zeros((n, 3))
        if n == 0:
            return best, obj, face, normal
        limit = np.where(np.isfinite(max_distance), max_distance, np.finfo(np.float32).max)
        tfar32 = np.ascontiguousarray(limit, dtype=np.float32)
        uniform_time = bool(np.all(times == times[0]))
        for g in self._groups:
            pose = None
            if g.body is None:
                o32 = np.ascontiguousarray(origins - g.offset, dtype=np.float32)
                d32 = np.ascontiguousarray(directions, dtype=np.float32)
            else:
                pose = self.scene.pose_at(g.body, times[0] if uniform_time else times)
                o32 = np.ascontiguousarray(pose.inverse_apply(origins), dtype=np.float32)
                d32 = np.ascontiguousarray(pose.inverse_apply_vectors(directions), dtype=np.float32)
            r = self._run(g.embree, o32, d32, tfar32)
            gid = r["geomID"]
            t = r["tfar"].astype(np.float64)
            better = (gid >= 0) & (t < best)
            if not np.any(better):
                continue
            idx = np.nonzero(better)[0]
            best[idx] = t[idx]
            gsel = gid[idx]
            obj[idx] = g.geom_object[gsel]
            prim = r["primID"][idx]
            face[idx] = prim if g.face_lookup is None else g.face_lookup[g.geom_start[gsel] + prim]
            ng = r["Ng"][idx].astype(np.float64)
            if pose is not None:
                ng = (pose if pose.single else Pose(pose.rotation[idx], pose.translation[idx])).apply_vectors(ng)
            normal[idx] = ng
        hit = obj >= 0
        norms = np.linalg.norm(normal[hit], axis=1)
        normal[hit] /= norms[:, None]
        return best, obj, face, normal

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
        """
        origins = np.asarray(origins, dtype=float).reshape(-1, 3)
        directions = np.asarray(directions, dtype=float).reshape(-1, 3)
        n = origins.shape[0]
        if directions.shape[0] != n:
            raise ValueError(f"origins has {n} rays but directions has {directions.shape[0]}")
        directions = directions / np.linalg.norm(directions, axis=1, keepdims=True)
        times = np.broadcast_to(np.asarray(times, dtype=float), (n,))
        remaining = np.broadcast_to(np.asarray(max_range_m, dtype=float), (n,)).copy()

        distance = np.full(n, np.nan)
        point = np.full((n, 3), np.nan)
        normal = np.full((n, 3), np.nan)
        out_dir = directions.copy()
        object_id = np.full(n, -1, dtype=np.int32)
        face_index = np.full(n, -1, dtype=np.int32)
        bounces = np.zeros(n, dtype=np.int8)

        active = np.arange(n)
        o, d, travelled = origins, directions, np.zeros(n)
        start = origins            # true start of the current segment (reflection point)
        for bounce in range(self.max_bounces + 1):
            if active.size == 0:
                break
            seg, obj, face, nrm = self.nearest(o, d, times[active], remaining[active])
            hit = obj >= 0
            p = o + d * np.where(hit, seg, np.nan)[:, None]
            if bounce > 0:         # measure from the true reflection point, not the offset origin
                seg = np.where(hit, np.linalg.norm(p - start, axis=1), seg)
            facing = np.einsum("ij,ij->i", nrm, d)
            nrm = np.where((facing > 0)[:, None], -nrm, nrm)
            total = travelled + seg
            is_mirror = hit & (self._mirror[obj] >= MIRROR_FOLLOW_THRESHOLD)
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
            nm, dm = nrm[m], d[m]
            reflected = dm - 2.0 * np.einsum("ij,ij->i", dm, nm)[:, None] * nm
            start = p[m]
            # Leave along the reflected line itself, far enough to clear the mirror by the
            # scene-scaled offset (clamped at grazing reflection), so the path stays exact.
            cos_out = np.maximum(np.einsum("ij,ij->i", reflected, nm), _MIN_COS_OFFSET)
            o = start + reflected * (self._offset_m / cos_out)[:, None]
            d = reflected
            travelled = total[m]
            remaining[active[m]] -= seg[m]
            active = active[m]
        return Hits(distance, point, normal, out_dir, object_id, face_index, bounces)
