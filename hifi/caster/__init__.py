"""Embree ray caster (through embreex) that follows rays through mirrors.

Three layers:

- a nearest-hit backend (:class:`NearestHitBackend`): the nearest facet along each ray for one
  straight segment. :class:`EmbreeBackend` is the serial one: static objects share one BVH built
  once in the scene frame (shifted to the scene centre so float32 keeps its precision); every
  moving object has its own BVH built once in its body frame, and rays are transformed into
  that frame at each ray's own emission time instead of rebuilding the BVH.
  :class:`mpi.caster.FacetBackend` casts a share of the facets and reduces over processes;
- plain functions over a backend: :func:`trace` (first segment, then the bounded mirror
  bounce loop) and :func:`settle_ties` (the edge-tie rule that makes a hit independent of how
  the facets are split);
- :class:`RayCaster`, the public facade the sensors call (``ctx.caster.cast(...)``), which
  also splits the rays over threads (:class:`ChunkPool`; embreex releases the GIL inside
  ``run``).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from .. import kernels
from ..constants import (
    MAX_MIRROR_BOUNCES,
    MIRROR_FOLLOW_THRESHOLD,
    SECONDARY_RAY_OFFSET_MIN_M,
    SECONDARY_RAY_OFFSET_REL,
)
from ..motion import Pose, Track
from ..scene import Scene

#: Rays per thread task below which threading costs more than it saves.
_MIN_RAYS_PER_TASK = 2048

#: Most rays in one chunk of work handed to a thread. Smaller chunks balance the threads
#: better but pay numpy's per-call overhead more often (16 k to 128 k measured within noise).
_CHUNK_RAYS = 65536

#: Smallest cosine used to turn the normal clearance of a secondary ray into a distance along
#: it; grazing reflections (cos < 0.05, 87 deg) step at most 20 offsets along the ray.
_MIN_COS_OFFSET = 0.05

#: Faces examined at once where a whole mesh is reduced to one number (the size term of the
#: secondary-ray offsets): bounds the temporaries to about 5 MB.
_FACE_BLOCK = 1 << 16

#: Relative margin on a moving object's swept bounding ball, against rounding in the cull test.
_CULL_MARGIN_REL = 1e-6

#: Barycentric coordinate (Embree's u, v, 1 - u - v) below which a hit counts as on the edge of
#: its triangle, where another triangle may give the same float32 distance (a tie). float32
#: rounds barycentrics at ~1e-7; 2**-16 (1.5e-5) keeps every exact tie with margin.
_EDGE_BARY = 2.0**-16

#: ``face_lookup`` and ``geom_start`` of a group without a lookup, for the kernel.
_NO_LOOKUP = (np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64))

#: Byte order of this machine: the low 32 bits of an int64 come first in memory when True.
_LITTLE_ENDIAN = np.little_endian

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
        """Cosine of the angle between the arriving ray and the surface normal, NaN on a miss.

        ``-(d_x n_x + d_y n_y + d_z n_z)`` summed left to right, written out (not ``einsum``,
        whose order of summation is numpy's to choose) so that the compiled lidar chain
        (:mod:`sensors._lidar_kernel`) computes the same bits.
        """
        d, nrm = self.direction, self.normal
        c = d[:, 0] * nrm[:, 0]
        c += d[:, 1] * nrm[:, 1]
        c += d[:, 2] * nrm[:, 2]
        np.negative(c, out=c)
        c[~self.hit] = np.nan
        return c

    def __len__(self) -> int:
        return self.distance.shape[0]


def secondary_ray_offset_m(coordinate_bound_m, *, rel: float = SECONDARY_RAY_OFFSET_REL,
                           min_m: float = SECONDARY_RAY_OFFSET_MIN_M) -> np.ndarray:
    """Clearance [m] of a secondary ray's origin from the surface it leaves (mirror bounce,
    shadow ray), per ray.

    Parameters
    ----------
    coordinate_bound_m : (n,) array_like
        Bound on the float32 coordinates Embree handled for each hit [m]: the hit point and the
        vertices of the triangle hit, in the frame the hit was computed in (see
        :meth:`EmbreeBackend.secondary_offset_m`).
    rel : float, keyword-only
        Offset relative to that bound (:data:`~hifi.constants.SECONDARY_RAY_OFFSET_REL`, 2**-16).
    min_m : float, keyword-only
        Floor [m] (:data:`~hifi.constants.SECONDARY_RAY_OFFSET_MIN_M`).

    Returns
    -------
    (n,) float64
        ``max(rel * coordinate_bound_m, min_m)`` [m]; NaN where the bound is NaN (a miss).

    Notes
    -----
    Embree intersects in float32 (24-bit significand, ulp = 2**-23 relative): the ray origin,
    the triangle's vertices and the intersection arithmetic each carry errors of a few ulp of
    the largest coordinate involved, so a ray leaving a surface from exactly on it may hit that
    surface again at a distance of a few ulp. Clearing it by 2**-16 of that magnitude (128 ulp
    of relative error, or more) cannot re-hit it whatever the scale. The magnitude is the one
    of *this* hit in *its* Embree frame, so the offset does not grow with the size or the
    number of other objects in the scene (a scene-wide extent did: 400 posts 100 m away once
    lifted shadow rays 0.41 m off the ground).
    """
    bound = np.asarray(coordinate_bound_m, dtype=float)
    return np.maximum(rel * bound, min_m)          # NaN propagates


class NearestHits(NamedTuple):
    """Nearest facet along each of n rays, one segment, before the edge-tie rule.

    Attributes
    ----------
    distance : (n,) float64
        Segment length to the hit [m] (Embree's float32 ``tfar``); ``inf`` on a miss.
    object_id, face_index : (n,) int32
        Object hit and facet of its mesh; -1 on a miss.
    normal : (n, 3) float64
        Unit geometric normal of that facet, scene frame, not turned toward the ray; NaN on a miss.
    edge : (n,) bool
        The hit lies on an edge of its triangle (a barycentric below ``_EDGE_BARY``), where
        another triangle may give the same float32 distance (see :func:`settle_ties`).
    """

    distance: np.ndarray
    object_id: np.ndarray
    face_index: np.ndarray
    normal: np.ndarray
    edge: np.ndarray


def no_hits(n: int) -> NearestHits:
    """:class:`NearestHits` of n rays before any cast: inf, -1, NaN normals, no edge."""
    return NearestHits(np.full(n, np.inf), np.full(n, -1, dtype=np.int32),
                       np.full(n, -1, dtype=np.int32), np.full((n, 3), np.nan),
                       np.zeros(n, dtype=bool))


class NearestHitBackend(Protocol):
    """What :func:`trace` and :class:`RayCaster` need from a ray-casting backend.

    Implementations: :class:`EmbreeBackend` (serial: the static BVH and one BVH per moving
    object) and :class:`mpi.caster.FacetBackend` (this process's share of the facets, then two
    reductions over the processes); the benchmarks' ``Open3DBackend``
    (``benchmarks/_open3d_backend.py``) is the first through Open3D's ``RaycastingScene``.

    Attributes
    ----------
    collective : bool
        False: :meth:`nearest`'s result for a ray depends on that ray alone, and it may be
        called on any chunk of the rays from several threads at once (the caller splits the
        rays over threads). True: :meth:`nearest` is a collective over processes; every process
        calls it with the same rays in the same order, and the caller passes all rays of a
        cast step in one call.
    n_triangles : int
        Triangles handed to Embree by :meth:`build` (all of the scene's, or this share).
    threads_inside : bool, optional
        True: :meth:`nearest` runs its own threads (and may hold the GIL while it casts), so
        :class:`RayCaster` passes all rays of a cast step in one call instead of splitting them
        over its :class:`ChunkPool` (the benchmarks' ``Open3DBackend``). Absent: False.
    """

    collective: bool
    n_triangles: int

    def build(self) -> NearestHitBackend:
        """Build the acceleration structures now (otherwise done on the first :meth:`nearest`)."""

    def nearest(self, origins: np.ndarray, directions: np.ndarray, times,
                max_distance) -> NearestHits:
        """Nearest facet of any material along each ray within ``max_distance``.

        Parameters
        ----------
        origins, directions : (n, 3) float64
            Scene frame [m]; directions of unit length.
        times : float or (n,) float64
            Emission time of each ray [s] (poses of moving objects are taken there); a float is
            one time for all rays (one pose per moving object).
        max_distance : float or (n,) float64
            Search limit per ray [m] (``inf`` for none).

        Returns
        -------
        NearestHits
            Ties on shared edges not yet settled (:func:`settle_ties` does that).
        """

    def secondary_offset_m(self, points_scene: np.ndarray, object_id: np.ndarray) -> np.ndarray:
        """Clearance [m] a secondary ray leaving each hit needs (:func:`secondary_ray_offset_m`
        of the float32 magnitude of that hit in the frame this backend computed it in).

        Parameters
        ----------
        points_scene : (n, 3) float64
            Hit points, scene frame [m].
        object_id : (n,) int
            Object hit (-1: NaN offset).

        Returns
        -------
        (n,) float64
            Offset [m]; the same on every process of a collective backend.
        """

    def close(self) -> None:
        """Release threads and other resources (the backend stays usable)."""


class ChunkPool:
    """Runs ``fn(start, stop)`` over contiguous chunks of ``range(n)`` on a thread pool.

    Each thread gets the same number of chunks of at most ``_CHUNK_RAYS`` rays; fewer than
    ``_MIN_RAYS_PER_TASK`` rays per thread run in the calling thread. Embree and numpy release
    the GIL, so the chunks run in parallel.

    Parameters
    ----------
    n_threads : int, optional
        Threads; default every core (``os.cpu_count()``).
    """

    def __init__(self, n_threads: int | None = None):
        self.n_threads = int(n_threads or os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None

    def map(self, fn, n: int) -> list:
        """``[fn(a, b) for each chunk a:b of range(n)]``, in order."""
        tasks = min(self.n_threads, max(1, n // _MIN_RAYS_PER_TASK))
        n_chunks = tasks * max(1, -(-n // (tasks * _CHUNK_RAYS)))
        bounds = np.linspace(0, n, n_chunks + 1).astype(int)
        if tasks <= 1:
            return [fn(bounds[i], bounds[i + 1]) for i in range(n_chunks)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="hifi-cast")
        return list(self._pool.map(lambda i: fn(bounds[i], bounds[i + 1]), range(n_chunks)))

    def run(self, fns) -> list:
        """``[fn() for fn in fns]`` on the pool's threads at once (tasks that release the GIL:
        numpy's random fills, compiled kernels), results in order."""
        if self.n_threads <= 1 or len(fns) <= 1:
            return [fn() for fn in fns]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="hifi-cast")
        return [f.result() for f in [self._pool.submit(fn) for fn in fns]]

    def close(self) -> None:
        """Shut the thread pool down (a later :meth:`map` starts a new one)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def _concat_hits(parts: list) -> NearestHits:
    """One :class:`NearestHits` from the chunks' results, in order."""
    if len(parts) == 1:
        return parts[0]
    return NearestHits(*(np.concatenate(f) for f in zip(*parts)))


def _slice(x, a: int, b: int):
    """``x[a:b]`` for an array of per-ray values, ``x`` itself for a scalar (one for all rays)."""
    return x if np.ndim(x) == 0 else x[a:b]


# -- the serial Embree backend ------------------------------------------------------------------
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


def _limit32(max_distance, n: int) -> np.ndarray:
    """Embree's ``tfar`` for n rays: the search limit [m] in float32, ``inf`` replaced by
    float32's max; a fresh array (Embree shortens it in place)."""
    limit = np.where(np.isfinite(max_distance), max_distance, np.finfo(np.float32).max)
    if limit.ndim == 0:
        return np.full(n, limit, dtype=np.float32)
    return np.ascontiguousarray(limit, dtype=np.float32)


class EmbreeBackend:
    """Serial nearest-hit backend (:class:`NearestHitBackend`) over embreex.

    Static objects share one BVH built once in the scene frame, shifted to the centre of their
    bounding box so float32 keeps its precision; every moving object has its own BVH built once
    in its body frame, and rays are transformed into that frame at each ray's emission time
    instead of rebuilding the BVH. Rays that cannot reach a moving object's swept bounding
    ball are not cast against it. :meth:`nearest` runs in the calling thread and may be called
    from several threads at once (``collective`` is False).

    Parameters
    ----------
    scene : Scene
        Objects and motion (frozen once built).
    face_subset : callable, optional
        ``face_subset(object_index, n_faces) -> indices`` of the faces this backend holds (the
        MPI facet partition); default all faces.
    """

    collective = False

    def __init__(self, scene: Scene, *, face_subset=None):
        self.scene = scene
        self._face_subset = face_subset
        self._groups: list[_Group] | None = None
        self._centre_rows: np.ndarray | None = None
        #: Triangles handed to Embree by :meth:`build` (all of the scene's, or this subset's).
        self.n_triangles = 0
        # Margin of the swept-ball cull [m] against float32 rounding of rays cast in a body
        # frame: ray origins lie within the scene's extent, and 2**-16 of it is hundreds of ulp.
        self._cull_margin_m = max(SECONDARY_RAY_OFFSET_REL * scene.extent_m(),
                                  SECONDARY_RAY_OFFSET_MIN_M)
        # Float32 frames: the static BVH's centre (set by build()) and, per object id (and -1
        # last), static or moving and the size added to the hit point's magnitude (set on the
        # first secondary_offset_m; see _frame_tables).
        self._centre = np.zeros(3)
        self._static_object: np.ndarray | None = None
        self._size_m: np.ndarray | None = None

    # -- building -------------------------------------------------------------------------------
    #: One empty BVH. Casting calls only its ``run(origins32, directions32, dists=tfar32,
    #: output=1)`` (embreex's ``EmbreeScene.run``: the hit arrays ``tfar``, ``geomID``,
    #: ``primID``, ``Ng``, ``u``, ``v``, and ``dists`` shortened in place), so a subclass casts
    #: through another library by overriding this and :attr:`_add_triangles`
    #: (the benchmarks' ``Open3DBackend``, ``benchmarks/_open3d_backend.py``).
    _new_bvh = staticmethod(_embree_scene)
    #: ``_add_triangles(bvh, vertices, faces)``: one geometry (float32 vertices [m], int faces).
    _add_triangles = staticmethod(_add_triangles)

    def _triangles_of(self, obj, vertices: np.ndarray):
        """``(vertices, faces, face ids)`` handed to Embree for ``obj``.

        With a face subset, or an object reduced to one rank's share of its faces
        (:meth:`hifi.scene.SceneObject.keep_share`), only the vertices those faces use are kept
        (faces renumbered), so a process holds about its share of the vertex buffer too; face
        ids (whole-mesh indices) is None for all faces.
        """
        if obj.share is not None:                # its vertices are those of its faces already
            if self._face_subset is not None:
                raise ValueError(f"object {obj.name!r} keeps a share of its faces; a face_subset "
                                 "cannot be taken from it")
            return vertices, obj.faces, obj.face_ids()
        if self._face_subset is None:
            return vertices, obj.faces, None
        sel = np.asarray(self._face_subset(obj.index, len(obj.faces)), dtype=np.int64)
        faces = obj.faces[sel]
        # The vertices used, ascending, and the faces renumbered into them: what
        # np.unique(faces, return_inverse=True) gives, through a mask instead of a sort (a
        # fraction of its transient memory and time).
        mask = np.zeros(len(vertices), dtype=bool)
        mask[faces.reshape(-1)] = True
        used = np.flatnonzero(mask)
        remap = np.cumsum(mask, dtype=np.int32)
        del mask
        remap -= 1
        return vertices[used], remap[faces], sel

    @staticmethod
    def _lookup(geom_faces):
        if all(f is None for f in geom_faces):
            return None, None
        sizes = [len(f) for f in geom_faces]
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return np.concatenate(geom_faces).astype(np.int32), start

    def build(self) -> EmbreeBackend:
        """Build every BVH now (otherwise done on the first :meth:`nearest`)."""
        if self._groups is not None:
            return self
        scene = self.scene
        groups: list[_Group] = []
        self.n_triangles = 0
        static = [o for o in scene.objects if not scene.is_moving(o.name)]
        if static:
            world = [static_world_vertices(scene, o) for o in static]
            # The extent of the whole meshes (kept by a facet rank's share), so every rank
            # casts in the serial float32 frame.
            ext = [o.world_bounds if o.share is not None else (w.min(axis=0), w.max(axis=0))
                   for o, w in zip(static, world) if o.share is None or o.world_bounds is not None]
            lo = np.min([e[0] for e in ext], axis=0)
            hi = np.max([e[1] for e in ext], axis=0)
            centre = self._centre = (lo + hi) / 2.0
            es = self._new_bvh()
            geom_obj, geom_faces = [], []
            for obj, verts in zip(static, world):
                verts, faces, sel = self._triangles_of(obj, verts)
                if len(faces) == 0:
                    continue
                self._add_triangles(es, verts - centre, faces)
                self.n_triangles += len(faces)
                geom_obj.append(obj.index)
                geom_faces.append(sel)
            if geom_obj:
                groups.append(_Group(es, np.asarray(geom_obj, dtype=np.int32),
                                     *self._lookup(geom_faces), None, centre))
                # The centre tiled over a chunk, so origins - centre runs on flat arrays.
                self._centre_rows = np.tile(centre, _CHUNK_RAYS)
        for obj in scene.objects:
            if not scene.is_moving(obj.name):
                continue
            verts, faces, sel = self._triangles_of(obj, obj.vertices)
            if len(faces) == 0:
                continue
            es = self._new_bvh()
            self._add_triangles(es, verts, faces)
            self.n_triangles += len(faces)
            groups.append(_Group(es, np.asarray([obj.index], dtype=np.int32),
                                 *self._lookup([sel]), obj.name, np.zeros(3),
                                 float(np.max(_row_norm(verts[faces.ravel()])))))
        self._groups = groups
        return self

    def _frame_tables(self) -> None:
        """Per object id (and -1 last): static or moving, and the size term of its offset [m].

        Static objects are cast in the scene frame minus the static centre; the term is the
        object's longest triangle edge, which bounds the distance from a hit point to every
        vertex of its triangle. A moving object is cast in its body frame, where its hit points
        and vertices all lie within its reach (largest vertex distance from its origin); the
        term is that reach. Computed from the whole meshes (not a face subset), so every process
        of a partitioned cast gets the same offsets.
        """
        scene = self.scene
        n = len(scene.objects)
        static = np.zeros(n + 1, dtype=bool)
        size = np.full(n + 1, np.nan)
        shared = [o.name for o in scene.objects if o.share is not None]
        if shared:
            raise RuntimeError(f"the offsets' size terms need whole meshes; {shared} keep a share "
                               "of their faces (compute them before keep_share)")
        for obj in scene.objects:
            v, f = obj.vertices, obj.faces
            if len(f) == 0:
                continue
            moving = scene.is_moving(obj.name)
            static[obj.index] = not moving
            # By blocks of faces, so the temporaries stay a few MB whatever the mesh (np.max of
            # the blocks' maxima is the same number, NaN included).
            maxima = []
            for a in range(0, len(f), _FACE_BLOCK):
                fb = f[a:a + _FACE_BLOCK]
                if moving:
                    maxima.append(np.max(_row_norm(v[fb.ravel()])))
                else:
                    maxima += [np.max(_row_norm(v[fb[:, (j + 1) % 3]] - v[fb[:, j]])) for j in range(3)]
            size[obj.index] = float(np.max(maxima))
        self._static_object, self._size_m = static, size

    def secondary_offset_m(self, points_scene, object_id) -> np.ndarray:
        """Clearance [m] of a secondary ray leaving each hit (see :class:`NearestHitBackend`).

        The float32 magnitude of a hit on a static object is ``|point - centre|`` (its
        coordinates in the static BVH's frame) plus the object's longest triangle edge; on a
        moving object, its reach (see :meth:`_frame_tables`); the offset is
        :func:`secondary_ray_offset_m` of it.
        """
        self.build()
        if self._size_m is None:
            self._frame_tables()
        points = np.asarray(points_scene, dtype=float).reshape(-1, 3)
        k = np.asarray(object_id, dtype=np.int64)
        static = self._static_object[k]
        bound = self._size_m[k]
        if np.any(static):
            bound = np.where(static, _row_norm(points - self._centre) + bound, bound)
        return secondary_ray_offset_m(bound)

    def close(self) -> None:
        """Nothing to release (threads belong to the caller)."""

    # -- casting --------------------------------------------------------------------------------
    def _swept_ball(self, g: _Group, t_min: float, t_max: float):
        """Ball [m] containing moving object ``g`` at every time in ``[t_min, t_max]``, or None.

        For an object on its own keyframed track (no parent), its origin stays in the convex
        hull of :meth:`hifi.motion.Track.hull_points` (for a linear track the positions at
        ``t_min``, ``t_max`` and the keyframes between; for a spline the Bezier control points
        of its pieces); every vertex stays within ``reach`` of the origin whatever the rotation.
        So the ball centred on those points' bounding-box centre with radius (largest distance
        to them) + ``reach`` holds the object throughout.
        Objects riding on a parent are not bounded this way (None: every ray is cast).
        """
        body = self.scene.bodies[g.body]
        if body.parent is not None or not isinstance(body.local, Track):
            return None
        pts = body.local.hull_points(t_min, t_max)
        centre = (pts.min(axis=0) + pts.max(axis=0)) / 2.0
        radius = float(np.max(_row_norm(pts - centre))) + g.reach
        return centre, radius * (1.0 + _CULL_MARGIN_REL) + self._cull_margin_m

    def _candidates(self, g: _Group, origins, directions, times, tfar32):
        """Indices of the rays whose segment passes within the object's swept ball (or None)."""
        ball = self._swept_ball(g, float(np.min(times)), float(np.max(times)))
        if ball is None:
            return None
        centre, radius = ball
        rel = centre - origins
        along = np.clip(_row_dot(rel, directions), 0.0, tfar32.astype(np.float64))
        closest = rel - directions * along[:, None]
        return np.nonzero(_row_dot(closest, closest) <= radius * radius)[0]

    def _cast_static(self, g: _Group, origins, directions, tfar32) -> NearestHits:
        """The static group, cast first: Embree's arrays go straight into fresh hit arrays."""
        n = origins.shape[0]
        o32 = np.empty((n, 3), dtype=np.float32)
        one = _rows_or_shared(origins)
        if one.shape[0] == 1 < n:                   # one origin: one row subtracted, then copied
            o32[:] = np.subtract(one[0], g.offset).astype(np.float32)
        else:
            rows = self._centre_rows
            if rows.size < 3 * n:
                rows = np.tile(g.offset, n)
            # origins - centre on flat arrays (same bits as the broadcast subtraction).
            np.subtract(one.reshape(-1), rows[:3 * n], out=o32.reshape(-1), casting="same_kind")
        r = g.embree.run(o32, directions.astype(np.float32), dists=tfar32, output=1)
        if kernels.enabled():
            from .._cast_kernel import static_hits          # numba: loaded by the first cast
            out = NearestHits(np.empty(n), np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32),
                              np.empty((n, 3)), np.empty(n, dtype=bool))
            lookup = (_NO_LOOKUP if g.face_lookup is None else
                      (np.ascontiguousarray(g.face_lookup, dtype=np.int32),
                       np.ascontiguousarray(g.geom_start, dtype=np.int64)))
            static_hits(r["tfar"], r["geomID"], r["primID"], r["Ng"], r["u"], r["v"], g.geom_object, *lookup,
                        np.float32(_EDGE_BARY), np.float32(1.0 - _EDGE_BARY), *out)
            return out
        gid = r["geomID"]
        miss = gid < 0
        obj = np.empty(n, dtype=np.int32)
        # geomID -1 (miss) wraps to the appended -1.
        np.take(np.append(g.geom_object, np.int32(-1)), gid, out=obj, mode="wrap")
        if g.face_lookup is None:
            face = np.array(r["primID"], dtype=np.int32)
            np.copyto(face, -1, where=miss)
        else:
            face = np.full(n, -1, dtype=np.int32)
            idx = np.nonzero(~miss)[0]
            face[idx] = g.face_lookup[g.geom_start[gid[idx]] + r["primID"][idx]]
        distance = r["tfar"].astype(np.float64)
        np.copyto(distance, np.inf, where=miss)
        ng = r["Ng"]
        denom = _row_norm(ng)
        np.copyto(denom, np.nan, where=miss)            # misses: NaN normal, no 0/0 warning
        normal = _divide_rows(ng, denom, out=np.empty((n, 3)))
        edge = _on_edge(r["u"], r["v"])
        edge[miss] = False
        return NearestHits(distance, obj, face, normal, edge)

    def nearest(self, origins, directions, times, max_distance) -> NearestHits:
        """Nearest facet along each ray (see :meth:`NearestHitBackend.nearest`)."""
        self.build()
        n = origins.shape[0]
        if n == 0:
            return no_hits(0)
        tfar32 = _limit32(max_distance, n)
        groups = self._groups
        if groups and groups[0].body is None:       # the static group is always first
            hits = self._cast_static(groups[0], origins, directions, tfar32)
            groups = groups[1:]
        else:
            hits = no_hits(n)
        if not groups:
            return hits
        best, obj, face, normal, edge = hits
        raw = np.zeros(n, dtype=bool)                # rows holding a normal not yet of unit length
        uniform = np.ndim(times) == 0
        for g in groups:
            sel = self._candidates(g, origins, directions, times, tfar32)
            if sel is not None and sel.size == 0:
                continue
            o_s, d_s = (origins, directions) if sel is None else (origins[sel], directions[sel])
            t_s = times if uniform or sel is None else times[sel]
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
            best[idx] = t[sub]
            obj[idx] = g.geom_object[gid[sub]]
            prim = r["primID"][sub]
            face[idx] = prim if g.face_lookup is None else g.face_lookup[g.geom_start[gid[sub]] + prim]
            ng = r["Ng"][sub].astype(np.float64)
            normal[idx] = (pose if pose.single else Pose(pose.rotation[sub], pose.translation[sub])).apply_vectors(ng)
            raw[idx] = True
            edge[idx] = _on_edge(r["u"][sub], r["v"][sub])
        rows = np.nonzero(raw)[0]
        if rows.size:
            normal[rows] /= _row_norm(normal[rows])[:, None]
        return hits


# -- the edge-tie rule ---------------------------------------------------------------------------
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


def _object_topology(scene: Scene, index: int, cache: dict):
    """Faces around each vertex of object ``index`` (vertices merged by position).

    Returns ``(vid, indptr, vertex_face)``: ``vid`` (v,) int32, the merged id of each mesh
    vertex (:func:`merge_vertices`); the faces using merged vertex k are
    ``vertex_face[indptr[k]:indptr[k + 1]]`` (whole-mesh face indices, int32, ascending), a CSR
    table (``indptr`` int32 below 2**31 corners, else int64). Only the faces the object keeps
    are listed (all of them, or one rank's share: :meth:`hifi.scene.SceneObject.keep_share`),
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
    """Merged vertex id (:func:`_object_topology`) of each of these body-frame positions of
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
        vid = _object_topology(scene, index, cache)[0]
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
    ``_EDGE_BARY``) is settled the same way whatever triangle Embree returned: candidates
    are the object's faces sharing a vertex position with it; those whose plane passes
    within ``plane_tol_m`` of the hit point and whose barycentrics there are >= -``_EDGE_BARY``
    contain it; the lowest face index wins and its unit normal (float64 cross product of its
    scene-frame vertices at the ray's time) replaces Embree's.
    Ties between faces of two different objects (coincident surfaces) are not settled.
    A facet-partitioned caster, whose processes each keep a share of the faces, applies the
    same rule with :func:`tie_candidates` over each share and three reductions
    (:meth:`mpi.caster.FacetBackend.settle_ties`).
    """
    best, obj, face, normal, edge = hits
    rows = _edge_rows(obj, edge)
    if rows.size == 0:
        return
    cache = {} if cache is None else cache
    for index in np.unique(obj[rows]):
        r = rows[obj[rows] == index]
        o = scene.objects[int(index)]
        vid, indptr, vertex_face = _object_topology(scene, int(index), cache)
        if kernels.enabled() and o.share is None and not scene.is_moving(o.name):
            from .._cast_kernel import settle_static          # numba: the same bits, one pass
            settle_static(r.astype(np.int64), best, face, normal, origins, directions, o.faces,
                          _static_world_vertices(scene, int(index), cache), vid, indptr, vertex_face,
                          float(plane_tol_m), _EDGE_BARY)
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


def _edge_rows(obj, edge) -> np.ndarray:
    """Rows of the hits flagged on an edge of their triangle (misses excluded), ascending: the
    few flagged rows first, then their object ids (a pass over the flags only)."""
    rows = np.flatnonzero(edge)
    return rows[obj[rows] >= 0]


def _cross_rows(a, b) -> np.ndarray:
    """``np.cross(a, b)`` of (k, 3) rows, the same bits (each component ``a_i b_j - a_j b_i``,
    products then difference, as numpy computes it) without its axis handling, which cost
    more than the arithmetic on the few rows of the tie rule."""
    out = np.empty_like(a)
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.subtract(a[:, i] * b[:, j], a[:, j] * b[:, i], out=out[:, k])
    return out


def tie_candidates(scene: Scene, index: int, corners, reported, r, origins, directions, times, best, *,
                   plane_tol_m: float, cache: dict):
    """The edge-tie rule's candidates for rays ``r`` on object ``index`` (:func:`settle_ties`).

    Parameters
    ----------
    scene : Scene
    index : int
        Object hit by every ray of ``r``.
    corners : (m, 3) int
        Merged vertex ids (:func:`_object_topology`) of the reported face's corners, per ray;
        -1 for a corner where none of the object's kept vertices lies (a facet rank's share).
    reported : (m,) int
        Whole-mesh index of the reported face, per ray.
    r : (m,) int
        Rows of ``origins``, ``directions``, ``times`` and ``best`` (the hit distance) they are.
    plane_tol_m : float
    cache : dict
        Topology and static vertices of the object (:func:`_object_topology`).

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
    _, indptr, vertex_face = _object_topology(scene, index, cache)
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
    e1, e2, w = tri[1] - tri[0], tri[2] - tri[0], p - tri[0]
    n = _cross_rows(e1, e2)
    n_len = _row_norm(n)
    unit = n / n_len[:, None]
    # Barycentrics of p projected on the candidate's plane (Cramer's rule).
    d11, d12, d22 = _row_dot(e1, e1), _row_dot(e1, e2), _row_dot(e2, e2)
    dw1, dw2 = _row_dot(w, e1), _row_dot(w, e2)
    den = d11 * d22 - d12 * d12
    b1 = (d22 * dw1 - d12 * dw2) / den
    b2 = (d11 * dw2 - d12 * dw1) / den
    inside = ((np.abs(_row_dot(w, unit)) <= plane_tol_m) & (b1 >= -_EDGE_BARY)
              & (b2 >= -_EDGE_BARY) & (b1 + b2 <= 1.0 + _EDGE_BARY))
    key = np.where(inside | (cand == np.asarray(reported)[pair_ray]), cand, np.int64(NOT_CONTAINED))
    return pair_ray, cand, unit, key


# -- tracing: first segment, then the mirror bounce loop ----------------------------------------
def _one_time(times):
    """``times`` as one float when every ray has the same time (one pose per moving object)."""
    if np.ndim(times) == 0:
        return float(times)
    if times.size and times.strides == (0,):      # a broadcast of one time (a camera's frame)
        return times[0]
    return times[0] if times.size and bool(np.all(times == times[0])) else times


def _settled(backend: NearestHitBackend, settle, origins, directions, times, max_distance):
    """``backend.nearest`` on these rays, then the tie rule ``settle`` (if any), in this thread."""
    hits = backend.nearest(origins, directions, times, max_distance)
    if settle is not None:
        settle(origins, directions, times, hits)
    return hits


def nearest_step(backend: NearestHitBackend, origins, directions, times, max_distance, *,
                 settle=None, map_chunks=None) -> NearestHits:
    """One cast step: ``backend.nearest`` and the edge-tie rule, split over threads.

    Parameters
    ----------
    backend : NearestHitBackend
    origins, directions : (n, 3) float64
        Scene frame [m]; directions of unit length.
    times : float or (n,) float64
        Emission times [s].
    max_distance : float or (n,) float64
        Search limit per ray [m].
    settle : callable, optional
        ``settle(origins, directions, times, hits)``: the tie rule in place
        (:func:`settle_ties` bound to the scene); default none.
    map_chunks : callable, optional
        ``map_chunks(fn, n)`` (:meth:`ChunkPool.map`) to split the rays over threads; used only
        if the backend is not collective.

    Returns
    -------
    NearestHits
    """
    times = _one_time(times)
    n = origins.shape[0]

    def step(a, b):
        return _settled(backend, settle, origins[a:b], directions[a:b], _slice(times, a, b),
                        _slice(max_distance, a, b))

    if backend.collective or map_chunks is None:
        return step(0, n)
    return _concat_hits(map_chunks(step, n))


def _first_segment(backend, settle, a, b, origins, directions_in, times, max_range, out,
                   mirror_object):
    """First segment of rays ``a:b``, written straight into the slices of the outputs.

    Normalises the directions, casts them (backend, then tie rule) and finishes every ray that
    reaches a diffuse surface or misses: normal turned toward the ray, misses NaN / -1, hit
    point. Rays on a mirror (``mirror_object``, None if the scene has none) are left NaN / -1
    and returned as ``(index, segment, point, normal, direction, object id)`` for the bounce
    loop (None if there are none).
    """
    distance, point, normal, direction, object_id, face_index = out
    o = origins[a:b]
    d = direction[a:b]
    d_in = directions_in[a:b]
    use_kernels = kernels.enabled()
    if use_kernels:
        from .._cast_kernel import finish_hits, unit_rows          # numba: loaded by the first cast
        unit_rows(np.ascontiguousarray(d_in), d)
    else:
        _divide_rows(d_in, _row_norm(d_in), out=d)
    seg, obj_g, face_g, nrm_g, _ = _settled(backend, settle, o, d, _slice(times, a, b),
                                            _slice(max_range, a, b))
    dist, pt, nrm = distance[a:b], point[a:b], normal[a:b]
    obj, face = object_id[a:b], face_index[a:b]
    if use_kernels:
        if finish_hits(_rows_or_shared(o), d, seg, obj_g, face_g, np.ascontiguousarray(nrm_g), dist, pt, nrm,
                       obj, face) == 0 or mirror_object is None:
            return None
        return _mirror_state(a, mirror_object, obj, face, dist, pt, nrm, d)
    hit = obj_g >= 0
    if not np.any(hit):
        dist.fill(np.nan)
        pt.fill(np.nan)
        nrm.fill(np.nan)
        obj.fill(-1)
        face.fill(-1)
        return None
    np.copyto(obj, obj_g)
    np.copyto(face, face_g)
    # Misses NaN (their normal is NaN already).
    np.copyto(dist, seg)
    np.copyto(dist, np.nan, where=~hit)
    # Normals turned toward the arriving ray (x -1.0 is exact).
    facing = _row_dot(nrm_g, d)
    _multiply_rows(nrm_g, np.where(facing > 0, -1.0, 1.0), out=nrm)
    # Hit point o + d t.
    _multiply_rows(d, dist, out=pt)
    np.add(o, pt, out=pt)
    if mirror_object is None:
        return None
    return _mirror_state(a, mirror_object, obj, face, dist, pt, nrm, d)


def _rows_or_shared(v: np.ndarray) -> np.ndarray:
    """``v`` (n, 3) as a C-contiguous array for a kernel: its one row if every row is the same
    memory (a broadcast origin, :meth:`hifi.model.Sensor.cast`'s for a camera), else its rows
    (a copy only if they are not contiguous)."""
    if v.shape[0] > 1 and v.strides[0] == 0:
        return np.ascontiguousarray(v[:1])
    return np.ascontiguousarray(v)


def _mirror_state(a, mirror_object, obj, face, dist, pt, nrm, d):
    """The rays of a finished first segment that hit a mirror: ``(index, segment, point,
    normal, direction, object id)`` for the bounce loop, their outputs reset to NaN / -1; None
    if there are none."""
    on_mirror = mirror_object[obj]
    if not np.any(on_mirror):
        return None
    m = np.nonzero(on_mirror)[0]
    state = (m + a, dist[m], pt[m], nrm[m], d[m], obj[m])
    dist[m] = np.nan
    pt[m] = np.nan
    nrm[m] = np.nan
    obj[m] = -1
    face[m] = -1
    return state


def trace(backend: NearestHitBackend, origins, directions, times=0.0, max_range_m=np.inf, *,
          mirror_object: np.ndarray, max_bounces: int = MAX_MIRROR_BOUNCES,
          settle=None, map_chunks=None) -> Hits:
    """Cast rays and follow them through mirrors to the first diffuse surface.

    Parameters
    ----------
    backend : NearestHitBackend
        Nearest-hit casting (serial or partitioned).
    origins : (n, 3) array_like
        Ray origins, scene frame [m].
    directions : (n, 3) array_like
        Ray directions, scene frame (normalised here).
    times : float or (n,) array_like
        Emission time of each ray [s].
    max_range_m : float or (n,) array_like
        Maximum total path length [m]; a surface beyond it is a miss.
    mirror_object : (n_objects + 1,) bool
        Per object id, and -1 last: does a ray follow its reflection off that object?
    max_bounces : int
        Bound on mirror reflections per ray; a ray still on a mirror after that many
        reflections reports no hit.
    settle : callable, optional
        Edge-tie rule (see :func:`nearest_step`).
    map_chunks : callable, optional
        Thread splitter (:meth:`ChunkPool.map`) for a backend that is not collective.

    Returns
    -------
    Hits

    Notes
    -----
    The first segment of every ray is cast and finished chunk by chunk on the threads of
    ``map_chunks``, writing into the preallocated outputs (numpy and Embree release the GIL);
    with a collective backend it is one step over all rays. Only rays that hit a mirror go on
    to the bounce loop, one step per reflection, at most ``max_bounces``.
    A secondary ray leaves the mirror from a point on the reflected line that clears the
    surface by ``backend.secondary_offset_m`` of that reflection point (float32-safe for that
    hit, whatever else the scene holds: :func:`secondary_ray_offset_m`), stepping along the
    line offset / cos (cos clamped at ``_MIN_COS_OFFSET`` for grazing reflections); the path
    length is measured from the true reflection point, so the offset does not bias the
    distance, and the reflected line itself is exact. The scene is frozen during a ray's
    flight (< 1 us at 300 m).
    """
    origins = np.asarray(origins, dtype=float).reshape(-1, 3)
    directions_in = np.asarray(directions, dtype=float).reshape(-1, 3)
    n = origins.shape[0]
    if directions_in.shape[0] != n:
        raise ValueError(f"origins has {n} rays but directions has {directions_in.shape[0]}")
    times = np.asarray(times, dtype=float)
    times = float(times) if times.ndim == 0 else np.broadcast_to(times, (n,))
    max_range = np.asarray(max_range_m, dtype=float)
    max_range = float(max_range) if max_range.ndim == 0 else np.broadcast_to(max_range, (n,))

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
    backend.build()
    times = _one_time(times)
    mirrors = mirror_object if np.any(mirror_object) else None
    out = (distance, point, normal, out_dir, object_id, face_index)

    def first(a, b):
        return _first_segment(backend, settle, a, b, origins, directions_in, times, max_range,
                              out, mirrors)

    if backend.collective or map_chunks is None:
        states = [first(0, n)]
    else:
        states = map_chunks(first, n)
    states = [s for s in states if s is not None]
    if not states or max_bounces == 0:
        return hits

    # Rays on a mirror: reflect and follow, up to max_bounces reflections.
    active = np.concatenate([s[0] for s in states])
    seg, p, nrm, d, mirror = (np.concatenate([s[i] for s in states]) for i in range(1, 6))
    all_times = np.broadcast_to(times, (n,))
    remaining = np.broadcast_to(max_range, (n,))[active] - seg
    travelled = seg
    for bounce in range(1, max_bounces + 1):
        reflected = d - 2.0 * np.einsum("ij,ij->i", d, nrm)[:, None] * nrm
        start = p
        # Leave along the reflected line itself, far enough to clear the mirror by the
        # offset (clamped at grazing reflection), so the path stays exact.
        cos_out = np.maximum(np.einsum("ij,ij->i", reflected, nrm), _MIN_COS_OFFSET)
        offset_m = backend.secondary_offset_m(start, mirror)
        o = start + reflected * (offset_m / cos_out)[:, None]
        d = reflected
        seg, obj, face, nrm, _ = nearest_step(backend, o, d, all_times[active], remaining,
                                              settle=settle, map_chunks=map_chunks)
        hit = obj >= 0
        p = o + d * np.where(hit, seg, np.nan)[:, None]
        # Measure from the true reflection point, not the offset origin.
        seg = np.where(hit, np.linalg.norm(p - start, axis=1), seg)
        facing = np.einsum("ij,ij->i", nrm, d)
        nrm = np.where((facing > 0)[:, None], -nrm, nrm)
        total = travelled + seg
        is_mirror = hit & mirror_object[obj]
        final = hit & ~is_mirror
        fi = active[final]
        distance[fi] = total[final]
        point[fi] = p[final]
        normal[fi] = nrm[final]
        out_dir[fi] = d[final]
        object_id[fi] = obj[final]
        face_index[fi] = face[final]
        bounces[fi] = bounce
        if bounce == max_bounces or not np.any(is_mirror):
            break
        m = is_mirror
        active, travelled, remaining = active[m], total[m], remaining[m] - seg[m]
        seg, p, nrm, d, mirror = seg[m], p[m], nrm[m], d[m], obj[m]
    return hits


# -- the public facade ---------------------------------------------------------------------------
class RayCaster:
    """Nearest-hit ray casting against a :class:`~hifi.scene.Scene`, through mirrors.

    A thin facade: a :class:`NearestHitBackend` casts (default :class:`EmbreeBackend` over the
    whole scene), :func:`trace` follows mirrors, :func:`settle_ties` settles shared-edge ties,
    and a :class:`ChunkPool` splits the rays over threads.

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
        ``face_subset(object_index, n_faces) -> indices`` of the faces the default backend
        holds; default all faces.
    backend : NearestHitBackend, optional
        Cast through this backend instead (e.g. :class:`mpi.caster.FacetBackend`); not with
        ``face_subset``.

    Notes
    -----
    BVHs are built on first use, not at construction, so creating a caster is cheap.
    Secondary rays leave a mirror from a point on the reflected line that clears the surface by
    :meth:`secondary_offset_m` of the reflection point: ``SECONDARY_RAY_OFFSET_REL`` times the
    float32 magnitude of that hit in its Embree frame (float32 safe at any scale, and
    independent of the rest of the scene); the path length is measured from the true
    reflection point, so the offset does not bias the distance, and the reflected line itself
    is exact. The scene is frozen during a ray's flight (< 1 us at 300 m).
    """

    def __init__(self, scene: Scene, *, max_bounces: int = MAX_MIRROR_BOUNCES,
                 n_threads: int | None = None, face_subset=None,
                 backend: NearestHitBackend | None = None):
        if backend is not None and face_subset is not None:
            raise ValueError("face_subset is for the default backend; got both face_subset and "
                             f"backend={backend!r}")
        self.scene = scene
        self.max_bounces = int(max_bounces)
        self.threads = ChunkPool(n_threads)
        self.n_threads = self.threads.n_threads
        shared = [o.name for o in scene.objects if o.share is not None]
        if backend is None and shared:
            raise ValueError(f"objects {shared} keep one rank's share of their faces (a facet-partitioned "
                             "caster reduced them); load the scene again to cast it serially")
        self.backend = backend if backend is not None else EmbreeBackend(scene, face_subset=face_subset)
        # Per object id (and -1, last entry, NaN -> False): does a ray follow its reflection?
        self._mirror_object = scene.object_table("mirror") >= MIRROR_FOLLOW_THRESHOLD
        self._tie_cache: dict = {}
        self._tables_built = False
        self._tie_plane_m = _TIE_PLANE_REL * max(scene.extent_m(), 1.0)

    @property
    def collective_nearest(self) -> bool:
        """Whether the backend's nearest hit is a collective over processes."""
        return self.backend.collective

    @property
    def n_triangles(self) -> int:
        """Triangles handed to Embree by :meth:`build` (all of the scene's, or this share)."""
        return self.backend.n_triangles

    def build(self) -> RayCaster:
        """Build the edge-tie tables and every BVH now (otherwise done on the first cast).

        The tie tables (:func:`_object_topology`) come first: their transients are then freed
        before Embree builds its BVHs on the first cast, instead of adding to the BVHs' memory
        (and the threads of the first cast do not build them twice at once).
        """
        if not self._tables_built:
            for obj in self.scene.objects:
                if len(obj.faces):
                    _object_topology(self.scene, obj.index, self._tie_cache)
            self._tables_built = True
            self.backend.build()
            from ..estimate import trim_heap
            trim_heap()              # the transients' pages, before Embree allocates its BVHs
        self.backend.build()
        return self

    def close(self) -> None:
        """Release the threads (the caster stays usable)."""
        self.threads.close()
        self.backend.close()

    def secondary_offset_m(self, points_scene, object_id) -> np.ndarray:
        """Clearance [m] a secondary ray (mirror bounce, shadow ray) leaving each hit needs.

        Parameters
        ----------
        points_scene : (n, 3) array_like
            Hit points, scene frame [m] (``Hits.point``).
        object_id : (n,) array_like of int
            Object hit (``Hits.object_id``); -1 gives NaN.

        Returns
        -------
        (n,) float64
            Offset [m] along the surface normal: :func:`secondary_ray_offset_m` of the hit's
            float32 magnitude in the Embree frame it was computed in (the static BVH's frame or
            the moving object's body frame) plus the size of the object's triangles. It does
            not depend on the other objects in the scene.
        """
        return self.backend.secondary_offset_m(points_scene, object_id)

    def _map_chunks(self):
        """How the rays of a cast step are split over threads: :meth:`ChunkPool.map`, or None
        (one :meth:`NearestHitBackend.nearest` call for all of them) for a backend that runs
        its own threads (``threads_inside``: the benchmarks' ``Open3DBackend``)."""
        return None if getattr(self.backend, "threads_inside", False) else self.threads.map

    def _settle(self, origins, directions, times, hits: NearestHits) -> None:
        # A backend whose processes keep shares of the faces settles ties over them.
        rule = getattr(self.backend, "settle_ties", settle_ties)
        rule(self.scene, origins, directions, times, hits, plane_tol_m=self._tie_plane_m, cache=self._tie_cache)

    def nearest(self, origins: np.ndarray, directions: np.ndarray, times: np.ndarray,
                max_distance: np.ndarray):
        """One segment: nearest facet of any material along each ray within ``max_distance``.

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
            Unit facet normal, scene frame, not turned toward the ray; NaN on a miss.
        """
        self.build()
        origins = np.asarray(origins, dtype=float)
        directions = np.asarray(directions, dtype=float)
        n = origins.shape[0]
        times = np.broadcast_to(np.asarray(times, dtype=float), (n,))
        hits = nearest_step(self.backend, origins, directions, times,
                            np.broadcast_to(np.asarray(max_distance, dtype=float), (n,)),
                            settle=self._settle, map_chunks=self._map_chunks())
        return hits.distance, hits.object_id, hits.face_index, hits.normal

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
        :func:`trace` over this caster's backend, threads and scene.
        """
        self.build()
        return trace(self.backend, origins, directions, times, max_range_m,
                     mirror_object=self._mirror_object, max_bounces=self.max_bounces, settle=self._settle,
                     map_chunks=self._map_chunks())
