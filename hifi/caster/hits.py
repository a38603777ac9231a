"""What a cast returns and what a backend must provide: :class:`Hits` (the result of
:meth:`~hifi.caster.RayCaster.cast`, through mirrors), :class:`NearestHits` (one segment's
nearest facets, before the edge-tie rule), :func:`secondary_ray_offset_m`, the barycentric
tolerance :data:`EDGE_BARY` that flags a hit on a triangle's edge, and the
:class:`NearestHitBackend` protocol. Every other module of the caster, and the backends outside
it (:mod:`mpi.caster`, the benchmarks' Open3D one), build on these types, so they import
nothing of the caster themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from ..constants import SECONDARY_RAY_OFFSET_MIN_M, SECONDARY_RAY_OFFSET_REL

#: Barycentric coordinate (Embree's u, v, 1 - u - v) below which a hit counts as on the edge of
#: its triangle, where another triangle may give the same float32 distance (a tie). float32
#: rounds barycentrics at ~1e-7; 2**-16 (1.5e-5) keeps every exact tie with margin.
EDGE_BARY = 2.0**-16


@dataclass(frozen=True)
class Hits:
    """Result of casting n rays. Misses are NaN / -1, never exceptions.

    A cast given ``out`` (:meth:`~hifi.caster.RayCaster.cast`) returns it, with None for each
    field the caller left out there.

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
        # the rays of the first field a cast's ``out`` kept (it keeps one at least)
        return next(x for x in (getattr(self, f) for f in self.__dataclass_fields__) if x is not None).shape[0]


@dataclass(frozen=True)
class SurfaceHits:
    """Result of casting n rays through glass and off water
    (:meth:`~hifi.caster.RayCaster.cast_surfaces`).

    Attributes
    ----------
    hits : Hits
        The surface each ray ends on, through panes, mirrors and water reflections (what
        :meth:`~hifi.caster.RayCaster.cast` returns).
    front : Hits
        The first glass or water surface on each ray's path (:data:`hifi.world.surfaces.KINDS`):
        path length to it, point, normal turned toward the ray, the ray's direction there,
        object, face, mirror reflections before it; NaN / -1 where the path has none.
    throughput : (n,) float64
        Share of the emitted power that reaches ``hits`` along the path, one way: the product
        of the transmittances of the panes crossed and the Fresnel reflectances of the water
        surfaces reflected off (:func:`hifi.world.surfaces.surface_throughput`); 1 where the
        path crosses none (and on a miss).
    """

    hits: Hits
    front: Hits
    throughput: np.ndarray

    def __len__(self) -> int:
        return len(self.hits)


def no_front(n: int) -> Hits:
    """:class:`Hits` of n rays that meet no glass or water: read-only broadcasts of NaN / -1 /
    0, no memory per ray."""
    nan, nan3 = np.broadcast_to(np.nan, (n,)), np.broadcast_to(np.nan, (n, 3))
    none = np.broadcast_to(np.int32(-1), (n,))
    return Hits(nan, nan3, nan3, nan3, none, none, np.broadcast_to(np.int8(0), (n,)))


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
        The hit lies on an edge of its triangle (a barycentric below ``EDGE_BARY``), where
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

    A backend may also have ``nearest_unit(origins, directions_in, directions, times,
    max_distance, *, normals=True)``: :meth:`nearest` along the rows of ``directions_in``
    normalised (``d / sqrt((x^2 + y^2) + z^2)``), written into ``directions``, for the first
    segment of a trace (:meth:`EmbreeBackend.nearest_unit` does it in its pass over the rays),
    with ``normals`` False free to leave the normals NaN (the trace's caller reads none);
    without it the tracer normalises them first.
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
