""":class:`RayCaster`, the facade the sensors call (``ctx.caster.cast(...)``): it holds the
scene, a backend (by default :class:`~hifi.caster.embree.EmbreeBackend`), a
:class:`~hifi.caster.pool.ChunkPool` and the tie tables, and binds :func:`~hifi.caster.tracing.trace`
and :func:`~hifi.caster.ties.settle_ties` to them. It sits on top of every other module of the
caster, which it alone wires together.
"""

from __future__ import annotations

import threading

import numpy as np

from ..constants import MAX_MIRROR_BOUNCES, MIRROR_FOLLOW_THRESHOLD
from ..world.scene import Scene
from .embree import EmbreeBackend
from .hits import Hits, NearestHitBackend, NearestHits, SurfaceHits, no_front
from .pool import ChunkPool
from .ties import object_topology, settle_ties
from .tracing import SurfaceTable, nearest_step, trace, trace_surfaces

#: Distance of a hit point from a neighbouring triangle's plane within which that triangle is
#: taken to contain the point too, relative to the scene extent (2**-20: a few float32 ulp).
_TIE_PLANE_REL = 2.0**-20

#: Rays below which :meth:`RayCaster.cast_frame` rotates a frame's directions in one matrix
#: product, at and above it chunk by chunk: the bound of :func:`hifi.api.model._rotate_rows`,
#: so that the rows are the same products, hence the same bits, as :meth:`RayCaster.cast` gets.
_ROTATE_CHUNKED = 65536


class RayCaster:
    """Nearest-hit ray casting against a :class:`~hifi.world.scene.Scene`, through mirrors.

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
        Threads casting in parallel; default: ``budget``'s, else :func:`hifi.caster.pool.default_threads`
        (``HIFI_THREADS``, else the cores this process may run on).
    face_subset : callable, optional
        ``face_subset(object_index, n_faces) -> indices`` of the faces the default backend
        holds; default all faces.
    backend : NearestHitBackend, optional
        Cast through this backend instead (e.g. :class:`mpi.caster.FacetBackend`); not with
        ``face_subset``.
    budget : hifi.runtime.threads.ThreadBudget, optional
        Threads shared with the rest of a run (the time manager's concurrent model steps):
        the chunks of a cast run on them, not on a pool of the caster's own.

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
                 backend: NearestHitBackend | None = None, budget=None):
        if backend is not None and face_subset is not None:
            raise ValueError("face_subset is for the default backend; got both face_subset and "
                             f"backend={backend!r}")
        self.scene = scene
        self.max_bounces = int(max_bounces)
        self.threads = ChunkPool(n_threads, budget=budget)
        self.n_threads = self.threads.n_threads
        shared = [o.name for o in scene.objects if o.share is not None]
        if backend is None and shared:
            raise ValueError(f"objects {shared} keep one rank's share of their faces (a facet-partitioned "
                             "caster reduced them); load the scene again to cast it serially")
        self.backend = backend if backend is not None else EmbreeBackend(scene, face_subset=face_subset)
        # Per object id (and -1, last entry, NaN -> False): does a ray follow its reflection?
        self._mirror_object = scene.object_table("mirror") >= MIRROR_FOLLOW_THRESHOLD
        # Glass and water (hifi.world.surfaces): None when the scene has neither, so that a cast
        # is then trace() itself.
        table = SurfaceTable.of(scene)
        self._surfaces = table if table.any else None
        self._tie_cache: dict = {}
        self._tables_built = False
        self._tie_plane_m = _TIE_PLANE_REL * max(scene.extent_m(), 1.0)
        self._frame_rows = threading.local()       # cast_frame's scratch rows, per thread
        # Looked up once here, not on every cast: the backend's tie rule and thread splitter.
        self._tie_rule = getattr(self.backend, "settle_ties", settle_ties)
        self._map = None if getattr(self.backend, "threads_inside", False) else self.threads.map

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

        The tie tables (:func:`object_topology`) come first: their transients are then freed
        before Embree builds its BVHs on the first cast, instead of adding to the BVHs' memory
        (and the threads of the first cast do not build them twice at once).
        """
        if not self._tables_built:
            for obj in self.scene.objects:
                if len(obj.faces):
                    object_topology(self.scene, obj.index, self._tie_cache)
            self._tables_built = True
            self.backend.build()
            from ..api.estimate import trim_heap
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
        return self._map

    def _settle(self, origins, directions, times, hits: NearestHits) -> None:
        # A backend whose processes keep shares of the faces settles ties over them.
        self._tie_rule(self.scene, origins, directions, times, hits, plane_tol_m=self._tie_plane_m, cache=self._tie_cache)

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

    def cast(self, origins, directions, times=0.0, max_range_m=np.inf, *, out: Hits | None = None) -> Hits:
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
        out : Hits, optional
            Arrays to write the result into, a field None where the caller needs no such output
            (:func:`trace`'s ``out``); default fresh arrays.

        Returns
        -------
        Hits
            ``out`` itself when given.

        Notes
        -----
        :func:`trace` over this caster's backend, threads and scene; in a scene with glass or
        water (:data:`hifi.world.surfaces.KINDS`) the rays go on through panes and along the
        reflections off water (:meth:`cast_surfaces`, whose ``hits`` this is).
        """
        if self._surfaces is not None:
            return self.cast_surfaces(origins, directions, times, max_range_m, out=out).hits
        if not self._tables_built:
            self.build()
        return trace(self.backend, origins, directions, times, max_range_m,
                     mirror_object=self._mirror_object, max_bounces=self.max_bounces, settle=self._settle,
                     map_chunks=self._map_chunks(), out=out)

    def cast_frame(self, origin, rotation, directions_sensor, max_range_m: float, finish) -> bool:
        """A camera frame cast and finished chunk by chunk, where nothing but the nearest static
        surface can end a ray: no full-frame array of rays or hits is written and read again.

        Parameters
        ----------
        origin : (3,) float
            The camera centre, scene frame [m] (every ray leaves it).
        rotation : (3, 3) float
            Sensor -> scene rotation matrix.
        directions_sensor : (n, 3) float64, C-contiguous
            Unit ray directions in the sensor frame.
        max_range_m : float
            Search limit [m].
        finish : callable
            ``finish(a, o, d, tfar, geom_id, geom_object)`` for each chunk ``a:a + len(tfar)``
            on the caster's threads: ``o`` (1, 3) the origin, ``d`` (m, 3) the chunk's unit
            scene-frame directions, then :meth:`EmbreeBackend.cast_static_unit`'s arrays (scratch
            that the thread's next chunk overwrites). Its outputs are the caller's to write.

        Returns
        -------
        bool
            True when cast; False, with nothing cast, where a ray could go further or a hit
            could come from elsewhere than Embree's static BVH, so :meth:`cast` must be used:
            a scene with glass, water or a mirror, a moving object, a backend other than
            :class:`EmbreeBackend` casting on this caster's threads (facet ranks, a backend with
            threads of its own), or no rays.

        Notes
        -----
        The rays are those :meth:`hifi.api.model.Sensor.cast` makes: rotated by a matrix
        product per chunk (whole below :data:`_ROTATE_CHUNKED` rays), normalised in float64
        and rounded to float32 (:func:`hifi._cast_kernel.unit_rays32`), cast with the
        float32 limit. The edge-tie rule is not applied: it changes only the face and the
        normal of a hit, which ``finish`` is not given.
        """
        d = directions_sensor
        n = d.shape[0]
        if (n == 0 or self._surfaces is not None or bool(np.any(self._mirror_object))
                or not isinstance(self.backend, EmbreeBackend) or self._map_chunks() is None):
            return False
        self.build()
        if not self.backend.static_only():
            return False
        rt = np.asarray(rotation, dtype=float).T
        whole = d @ rt if n < _ROTATE_CHUNKED else None
        o = np.ascontiguousarray(np.asarray(origin, dtype=float).reshape(1, 3))
        limit = float(max_range_m)

        def chunk(a, b):
            rot, unit, o32, d32 = self._scratch_rows(b - a)
            rows = whole[a:b] if whole is not None else np.matmul(d[a:b], rt, out=rot)
            finish(a, o, unit, *self.backend.cast_static_unit(o, rows, unit, limit, o32, d32))

        self.threads.map(chunk, n)
        return True

    def _scratch_rows(self, m: int):
        """This thread's rows for :meth:`cast_frame`'s chunk of ``m`` rays: rotated and unit
        directions (float64), Embree's origins and directions (float32); kept from chunk to
        chunk, so a frame does not fault in fresh pages for them."""
        rows = getattr(self._frame_rows, "rows", None)
        if rows is None or rows[0].shape[0] < m:
            rows = (np.empty((m, 3)), np.empty((m, 3)), np.empty((m, 3), dtype=np.float32),
                    np.empty((m, 3), dtype=np.float32))
            self._frame_rows.rows = rows
        return tuple(x[:m] for x in rows)

    @property
    def has_surfaces(self) -> bool:
        """Whether the scene holds glass or water, so that :meth:`cast_surfaces` may find a
        front surface and a throughput below 1."""
        return self._surfaces is not None

    def cast_surfaces(self, origins, directions, times=0.0, max_range_m=np.inf, *,
                      out: Hits | None = None) -> SurfaceHits:
        """Cast rays through mirrors, glass panes and water reflections, keeping the first glass
        or water surface of every path and the path's throughput.

        Parameters
        ----------
        origins, directions, times, max_range_m, out
            As :meth:`cast` (``out`` for ``hits``).

        Returns
        -------
        SurfaceHits
            ``hits`` as :meth:`cast` returns them, ``front`` (NaN / -1 where a path meets no
            glass or water) and ``throughput`` (one way, 1 where none).

        Notes
        -----
        :func:`trace_surfaces` over this caster's backend, threads and scene; in a scene
        without glass or water, :func:`trace` with no front and a throughput of 1.
        """
        self.build()
        if self._surfaces is None:
            hits = trace(self.backend, origins, directions, times, max_range_m,
                         mirror_object=self._mirror_object, max_bounces=self.max_bounces, settle=self._settle,
                         map_chunks=self._map_chunks(), out=out)
            return SurfaceHits(hits, no_front(len(hits)), np.ones(len(hits)))
        return trace_surfaces(self.backend, origins, directions, times, max_range_m, surfaces=self._surfaces,
                              max_bounces=self.max_bounces, settle=self._settle, map_chunks=self._map_chunks(),
                              out=out)
