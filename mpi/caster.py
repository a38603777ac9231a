"""Facet-partitioned nearest-hit ray caster (the VANE Quick Caster's decomposition).

The scene's triangles are dealt over the ranks in stretches of about 1/N of them, ordered by
object and lowest vertex index (:func:`vertex_order_shares`); each rank keeps only its faces
and the vertices they use, and builds Embree BVHs and edge-tie tables for them. All ranks cast the same rays against their
share, and one reduction per cast step picks the global nearest hit.

:class:`FacetBackend` is that decomposition as a :class:`hifi.caster.NearestHitBackend`;
:class:`FacetCaster` is the :class:`hifi.caster.RayCaster` over it.
"""

from __future__ import annotations

import gc

import numpy as np

from hifi.caster import (
    NOT_CONTAINED,
    ChunkPool,
    EmbreeBackend,
    NearestHits,
    RayCaster,
    edge_rows,
    lowest_key,
    merged_ids_of,
    no_hits,
    static_world_vertices,
    tie_candidates,
)
from hifi.api.estimate import trim_heap

from .control import wait

#: Reduction key of a ray that hit nothing on a rank (larger than every hit's key).
MISS_KEY = np.iinfo(np.int64).max

#: Global face ids are packed into the low 32 bits of the reduction key.
MAX_GLOBAL_FACES = 2**32


def vertex_order_shares(scene, rank: int, size: int) -> list:
    """Faces of each object dealt to ``rank``: every face is placed by its lowest vertex index
    (object by object), and the ranks take consecutive stretches of that order, each about
    1/``size`` of all faces.

    Parameters
    ----------
    scene : hifi.world.scene.Scene
        The whole scene (every object keeps all its faces).
    rank, size : int
        This rank and the number of ranks.

    Returns
    -------
    list of (m,) int64
        Per object, the whole-mesh indices of the faces dealt to ``rank``, ascending: what
        :meth:`hifi.world.scene.SceneObject.keep_share` keeps.

    Notes
    -----
    VANE's Quick Caster dealt facets round-robin, which balances the ranks whatever the order
    of the faces, but then every rank's faces use nearly every vertex, and every rank's BVH
    spans the whole scene. Meshes list their vertices in a spatial order (a terrain's rows, a
    scan's sweeps, an exported model's parts), so faces placed by their lowest vertex index
    come in neighbourhoods: a stretch of that order uses a stretch of the vertices, and a
    rank's BVH covers its own region. The split is made on the histogram of the lowest vertex
    indices (no sort): rank r takes the faces whose (object, lowest vertex) position in that
    order lies from the first position where the running count reaches ``r F / size`` to the
    one where it reaches ``(r + 1) F / size`` (F faces in all), so the ranks' shares differ by
    at most the faces around one vertex. Every rank computes the same split.
    """
    counts = []
    for obj in scene.objects:
        low = obj.faces.min(axis=1) if len(obj.faces) else np.zeros(0, dtype=np.int64)
        counts.append(np.bincount(low, minlength=len(obj.vertices)))
        del low
    running = np.cumsum(np.concatenate(counts)) if counts else np.zeros(0, dtype=np.int64)
    base = np.concatenate([[0], np.cumsum([len(c) for c in counts])]).astype(np.int64)
    del counts
    total = int(running[-1]) if running.size else 0
    # Positions (object base + vertex) where rank r's stretch starts and ends.
    lo, hi = (int(np.searchsorted(running, rank * total // size, side="right")) if rank else 0,
              int(np.searchsorted(running, (rank + 1) * total // size, side="right")) if rank + 1 < size
              else int(base[-1]))
    del running
    shares = []
    for obj, b in zip(scene.objects, base[:-1]):
        if len(obj.faces) == 0 or hi <= b or lo >= b + len(obj.vertices):
            shares.append(np.zeros(0, dtype=np.int64))
            continue
        low = obj.faces.min(axis=1)        # again: holding every object's would cost 8 B a face at the peak
        shares.append(np.flatnonzero((low >= lo - b) & (low < hi - b)).astype(np.int64))
        del low
    return shares


def pack_keys(distance, object_id, face_index, face_offset) -> np.ndarray:
    """Reduction keys (n,) int64: float32 bits of the distance, then the global face id.

    A non-negative float32's bit pattern orders like its value, so the minimum key is the
    nearest hit, and on an exact tie in distance the lowest global face id (object index, then
    face index). Misses get :data:`MISS_KEY`.
    """
    key = np.full(distance.shape[0], MISS_KEY, dtype=np.int64)
    hit = object_id >= 0
    bits = distance[hit].astype(np.float32).view(np.uint32).astype(np.int64)
    key[hit] = (bits << 32) | (face_offset[object_id[hit]] + face_index[hit])
    return key


def unpack_keys(key, face_offset):
    """Inverse of :func:`pack_keys`: ``distance`` [m] (inf on a miss), ``object_id``, ``face_index``."""
    n = key.shape[0]
    hit = key != MISS_KEY
    distance = np.full(n, np.inf)
    distance[hit] = (key[hit] >> 32).astype(np.uint32).view(np.float32).astype(np.float64)
    gface = key[hit] & 0xFFFFFFFF
    obj = np.full(n, -1, dtype=np.int32)
    face = np.full(n, -1, dtype=np.int32)
    o = np.searchsorted(face_offset, gface, side="right") - 1
    obj[hit] = o
    face[hit] = gface - face_offset[o]
    return distance, obj, face


class FacetBackend:
    """Nearest-hit backend (:class:`hifi.caster.NearestHitBackend`) over this rank's share of
    the facets; every :meth:`nearest` is a global nearest hit over all ranks of ``comm``.

    Parameters
    ----------
    scene : hifi.world.scene.Scene
        The whole scene (every rank holds the same scene description).
    comm : mpi4py.MPI.Comm
        Communicator of the ranks sharing the facets; every rank must cast the same rays in
        the same order (``collective`` is True).
    n_threads : int, optional
        Threads casting this rank's share; default every core.

    Notes
    -----
    This rank's share is an :class:`hifi.caster.EmbreeBackend` over the faces dealt to it by
    :func:`vertex_order_shares`. Per cast step (the first segment, then each mirror bounce) two
    reductions over the rays: ``Allreduce(MIN)`` of an int64 key per ray, ``(float32 bits of
    the distance) << 32 | global face id``, which is the nearest hit with ties in distance going
    to the lowest global face id (object index, then face index); then ``Allreduce(BOR)`` of the
    winner's unit normal as raw float64 bits and its on-an-edge flag (the other ranks contribute
    zero bits), which carries them over exactly. The distance, object and face come back out of
    the key, so every rank ends the step with the same hits and follows the same mirror
    bounces. Traffic per step: 40 bytes per ray into each reduction.
    The reductions are non-blocking (``Iallreduce``) and waited for with
    :func:`mpi.control.wait`, so a rank whose partner stopped on a signal stops too instead of
    waiting forever.

    The rank keeps only its share: every object of ``scene`` is reduced to the faces dealt to
    this rank and the vertices they use (:meth:`hifi.world.scene.SceneObject.keep_share`), so the
    whole arrays are freed and the Embree arrays and edge-tie tables list this rank's faces
    only. The scene must not be cast serially afterwards. What needs whole meshes is computed
    first: the secondary-ray offsets' size terms (longest edge, reach), the static objects'
    scene-frame vertices and their extent (the static BVH's float32 frame is the serial one).

    The caller then applies the serial caster's tie rule through :meth:`settle_ties`: a hit on
    a triangle's edge goes to the lowest-index face of that object containing the point. The
    owner of the reported face shares its corners' positions, every rank finds its own faces
    around them (:func:`hifi.caster.merged_ids_of`) and tests them
    (:func:`hifi.caster.tie_candidates`, the serial arithmetic row by row), and a reduction
    picks the lowest containing face, whose owner shares its normal: the serial result,
    whichever rank's triangle won.

    The distance a ray reaches a triangle at is Embree's float32 ``tfar`` for that ray and that
    triangle, which does not depend on the other triangles in the BVH; each rank hands Embree
    the same float32 vertex coordinates as a serial run (same scene centre offset, same body
    frames), so a rank's distances are the serial ones.
    """

    collective = True

    def __init__(self, scene, comm, *, n_threads: int | None = None, stop_comm=None):
        sizes = [len(o.faces) for o in scene.objects]
        self.face_offset = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        if self.face_offset[-1] > MAX_GLOBAL_FACES:
            raise ValueError(f"scene has {self.face_offset[-1]} faces; the facet partition packs "
                             f"global face ids in 32 bits (at most {MAX_GLOBAL_FACES})")
        self.comm = comm
        #: Where another rank's stop message arrives (the job's communicator, of which ``comm``
        #: may be one group).
        self.stop_comm = comm if stop_comm is None else stop_comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        #: Reductions made and bytes each rank contributed to them (for the benchmark model).
        self.n_reductions = 0
        #: Cast steps (each: two reductions, and three more over its edge hits if it has any).
        self.n_steps = 0
        self.reduced_bytes = 0
        self.local = EmbreeBackend(scene)
        self.local._frame_tables()             # from the whole meshes, before they are shared
        for obj, ids in zip(scene.objects, vertex_order_shares(scene, self.rank, self.size)):
            world = None if scene.is_moving(obj.name) else static_world_vertices(scene, obj)
            obj.keep_share(ids, world)
            del world
        # trimesh meshes hold reference cycles (their caches): the whole meshes go at a collection.
        gc.collect()
        trim_heap()
        self.threads = ChunkPool(n_threads)

    @property
    def n_triangles(self) -> int:
        """Triangles of this rank's share handed to Embree."""
        return self.local.n_triangles

    def build(self) -> FacetBackend:
        """Build this rank's BVHs now."""
        self.local.build()
        return self

    def close(self) -> None:
        """Release this rank's threads."""
        self.threads.close()

    def secondary_offset_m(self, points_scene, object_id) -> np.ndarray:
        """As :meth:`hifi.caster.EmbreeBackend.secondary_offset_m`: every rank's share uses the
        serial float32 frames and whole-mesh sizes, so the offsets are the serial ones."""
        return self.local.secondary_offset_m(points_scene, object_id)

    def nearest(self, origins, directions, times, max_distance) -> NearestHits:
        """Global nearest facet along each ray (collective; see the class notes)."""
        self.build()
        n = origins.shape[0]
        if n == 0:
            return no_hits(0)

        def part(a, b):
            t = times if np.ndim(times) == 0 else times[a:b]
            m = max_distance if np.ndim(max_distance) == 0 else max_distance[a:b]
            return self.local.nearest(origins[a:b], directions[a:b], t, m)

        parts = self.threads.map(part, n)
        local = parts[0] if len(parts) == 1 else NearestHits(*(np.concatenate(f) for f in zip(*parts)))
        return self.combine(local)

    def combine(self, hits: NearestHits) -> NearestHits:
        """This rank's nearest hits -> the global ones (collective; see the class notes)."""
        from mpi4py import MPI

        best, obj, face, normal, edge = hits
        n = best.shape[0]
        key = pack_keys(best, obj, face, self.face_offset)
        global_key = np.empty_like(key)
        self._reduce(key, global_key, MPI.MIN)
        mine = (key == global_key) & (key != MISS_KEY)
        bits = np.zeros((n, 4), dtype=np.uint64)
        bits[mine, :3] = normal[mine].view(np.uint64)
        bits[mine, 3] = edge[mine]
        self._reduce(MPI.IN_PLACE, bits, MPI.BOR)
        self.n_steps += 1
        distance, obj, face = unpack_keys(global_key, self.face_offset)
        normal = np.ascontiguousarray(bits[:, :3]).view(np.float64)
        normal[obj < 0] = np.nan
        return NearestHits(distance, obj, face, normal, bits[:, 3] != 0)

    def settle_ties(self, scene, origins, directions, times, hits: NearestHits, *, plane_tol_m: float,
                    cache: dict) -> None:
        """The edge-tie rule (:func:`hifi.caster.settle_ties`) over the ranks' shares, in place
        on the global ``hits`` (collective; see the class notes).

        Three reductions over the m rays hit on an edge (none when there are none; every rank
        has the same global hits, so they agree): ``BOR`` of the reported face's corner
        positions from its owner (72 bytes a ray), ``MIN`` of each rank's lowest containing
        face (8 bytes), ``BOR`` of the winner's unit normal bits from its owner (24 bytes).
        """
        from mpi4py import MPI

        best, obj, face, normal, edge = hits
        rows = edge_rows(obj, edge)
        if rows.size == 0:
            return
        m = rows.size
        o_r, f_r = obj[rows], face[rows]
        mine = np.zeros(m, dtype=bool)
        for index in np.unique(o_r):
            k = np.nonzero(o_r == index)[0]
            mine[k] = np.isin(f_r[k], scene.objects[int(index)].share)
        # The reported face's corners (body frame, float64 bits) from the rank that owns it.
        corners = np.zeros((m, 3, 3))
        for index in np.unique(o_r[mine]):
            k = np.nonzero(mine & (o_r == index))[0]
            o = scene.objects[int(index)]
            corners[k] = o.vertices[o.faces[o.face_rows(f_r[k])]]
        bits = corners.view(np.uint64)
        self._reduce(MPI.IN_PLACE, bits, MPI.BOR)
        local = np.full(m, NOT_CONTAINED, dtype=np.int64)
        unit = np.zeros((m, 3))
        for index in np.unique(o_r):
            if len(scene.objects[int(index)].faces) == 0:
                continue                       # none of its faces here
            k = np.nonzero(o_r == index)[0]
            ids = merged_ids_of(scene, int(index), cache, corners[k].reshape(-1, 3)).reshape(-1, 3)
            pair_ray, cand, unit_k, key = tie_candidates(scene, int(index), ids, f_r[k], rows[k], origins,
                                                         directions, times, best, plane_tol_m=plane_tol_m,
                                                         cache=cache)
            ray, pick = lowest_key(pair_ray, key)
            local[k[ray]] = key[pick]
            unit[k[ray]] = unit_k[pick]
        winner = np.empty_like(local)
        self._reduce(local, winner, MPI.MIN)
        bits = np.zeros((m, 3), dtype=np.uint64)
        won = local == winner
        bits[won] = unit[won].view(np.uint64)
        self._reduce(MPI.IN_PLACE, bits, MPI.BOR)
        face[rows] = winner
        normal[rows] = bits.view(np.float64)

    def _reduce(self, send, recv, op) -> None:
        """``Iallreduce`` waited for with :func:`mpi.control.wait`, counted."""
        wait(self.stop_comm, self.comm.Iallreduce(send, recv, op=op))
        self.n_reductions += 1
        self.reduced_bytes += recv.nbytes


class FacetCaster(RayCaster):
    """:class:`hifi.caster.RayCaster` over a :class:`FacetBackend`: this rank's share of the
    facets; every cast step is a global nearest hit over all ranks of ``comm``.

    Parameters
    ----------
    scene : hifi.world.scene.Scene
        The whole scene (every rank holds the same scene description).
    comm : mpi4py.MPI.Comm
        Communicator of the ranks sharing the facets; every rank must cast the same rays in
        the same order.
    stop_comm : mpi4py.MPI.Comm, optional
        The job's communicator, where a stop message from any rank arrives (default ``comm``).
    **kwargs
        Passed to :class:`~hifi.caster.RayCaster` (``max_bounces``, ``n_threads``).
    """

    def __init__(self, scene, comm, *, stop_comm=None, **kwargs):
        facets = FacetBackend(scene, comm, n_threads=kwargs.get("n_threads"), stop_comm=stop_comm)
        super().__init__(scene, backend=facets, **kwargs)

    @property
    def face_offset(self) -> np.ndarray:
        """Global id of each object's first face (cumulative face counts)."""
        return self.backend.face_offset

    @property
    def comm(self):
        return self.backend.comm

    @property
    def rank(self) -> int:
        return self.backend.rank

    @property
    def size(self) -> int:
        return self.backend.size

    @property
    def n_reductions(self) -> int:
        """Reductions made so far (two per cast step, three more per step with edge hits)."""
        return self.backend.n_reductions

    @property
    def n_steps(self) -> int:
        """Cast steps so far (the first segment, each mirror bounce)."""
        return self.backend.n_steps

    @property
    def reduced_bytes(self) -> int:
        """Bytes this rank contributed to the reductions so far."""
        return self.backend.reduced_bytes
