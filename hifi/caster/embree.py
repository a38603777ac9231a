"""The serial nearest-hit backend, :class:`EmbreeBackend`, over embreex: one BVH of the
static objects in the scene frame (shifted to their centre for float32), one per moving object
in its body frame, the swept-ball cull, the float32 frames behind the secondary-ray offsets, and
the conversion of Embree's hit arrays into :class:`~hifi.caster.hits.NearestHits`. It is the
one module that talks to Embree; the tie rule and the tracer work through the backend protocol,
so a partitioned backend (:mod:`mpi.caster`) can replace it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from ..constants import SECONDARY_RAY_OFFSET_MIN_M, SECONDARY_RAY_OFFSET_REL
from ..world.motion import Pose, Track
from ..world.scene import Scene
from ._rows import row_dot, row_norm, rows_or_shared
from .hits import EDGE_BARY, NearestHits, no_hits, secondary_ray_offset_m
from .ties import static_world_vertices

#: Faces examined at once where a whole mesh is reduced to one number (the size term of the
#: secondary-ray offsets): bounds the temporaries to about 5 MB.
_FACE_BLOCK = 1 << 16

#: Relative margin on a moving object's swept bounding ball, against rounding in the cull test.
_CULL_MARGIN_REL = 1e-6

#: ``face_lookup`` and ``geom_start`` of a group without a lookup, for the kernel.
_NO_LOOKUP = (np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64))


def _on_edge(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether Embree's barycentrics ``u``, ``v`` put a hit on its triangle's edge (``EDGE_BARY``)."""
    return (np.minimum(u, v) < EDGE_BARY) | (u + v > 1.0 - EDGE_BARY)


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


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _limit32(max_distance, n: int) -> np.ndarray:
    """Embree's ``tfar`` for n rays: the search limit [m] in float32, ``inf`` replaced by
    float32's max; a fresh array (Embree shortens it in place)."""
    if isinstance(max_distance, float):        # one limit for all rays (a trace's scalar range)
        return np.full(n, max_distance if math.isfinite(max_distance) else _FLOAT32_MAX, dtype=np.float32)
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
        # Model steps cast from several threads at once (hifi.run.timemanager): the first casts
        # build the BVHs and tables once, under this lock, not once per thread.
        self._build_lock = threading.Lock()
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
        (:meth:`hifi.world.scene.SceneObject.keep_share`), only the vertices those faces use are kept
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
        with self._build_lock:
            if self._groups is None:
                self._build()
        return self

    def _build(self) -> None:
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
                                 float(np.max(row_norm(verts[faces.ravel()])))))
        self._groups = groups

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
                    maxima.append(np.max(row_norm(v[fb.ravel()])))
                else:
                    maxima += [np.max(row_norm(v[fb[:, (j + 1) % 3]] - v[fb[:, j]])) for j in range(3)]
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
            with self._build_lock:
                if self._size_m is None:
                    self._frame_tables()
        points = np.asarray(points_scene, dtype=float).reshape(-1, 3)
        k = np.asarray(object_id, dtype=np.int64)
        static = self._static_object[k]
        bound = self._size_m[k]
        if np.any(static):
            bound = np.where(static, row_norm(points - self._centre) + bound, bound)
        return secondary_ray_offset_m(bound)

    def close(self) -> None:
        """Nothing to release (threads belong to the caller)."""

    # -- casting --------------------------------------------------------------------------------
    def _swept_ball(self, g: _Group, t_min: float, t_max: float):
        """Ball [m] containing moving object ``g`` at every time in ``[t_min, t_max]``, or None.

        For an object on its own keyframed track (no parent), its origin stays in the convex
        hull of :meth:`hifi.world.motion.Track.hull_points` (for a linear track the positions at
        ``t_min``, ``t_max`` and the keyframes between; for a spline the Bezier control points
        of its pieces); every vertex stays within ``reach`` of the origin whatever the rotation.
        So the ball centred on those points' bounding-box centre with radius (largest distance
        to them) + ``reach`` holds the object throughout. An object riding at fixed poses on
        such a body (the parts of a scene file on a moving object: each body of the chain a
        fixed :class:`~hifi.world.motion.Pose` relative to its parent) has its origin within the
        sum of the chain's translation norms of that body's origin whatever the rotations, so
        its ball is that body's, grown by the sum.
        Other objects riding on a parent are not bounded this way (None: every ray is cast).
        """
        body = self.scene.bodies[g.body]
        chain_m = 0.0
        while body.parent is not None and isinstance(body.local, Pose) and body.local.single:
            chain_m += float(np.linalg.norm(body.local.translation))
            body = self.scene.bodies[body.parent]
        if body.parent is not None or not isinstance(body.local, Track):
            return None
        pts = body.local.hull_points(t_min, t_max)
        centre = (pts.min(axis=0) + pts.max(axis=0)) / 2.0
        radius = float(np.max(row_norm(pts - centre))) + chain_m + g.reach
        return centre, radius * (1.0 + _CULL_MARGIN_REL) + self._cull_margin_m

    def _candidates(self, g: _Group, origins, directions, times, tfar32):
        """Indices of the rays whose segment passes within the object's swept ball (or None)."""
        ball = self._swept_ball(g, float(np.min(times)), float(np.max(times)))
        if ball is None:
            return None
        centre, radius = ball
        rel = centre - origins
        along = np.clip(row_dot(rel, directions), 0.0, tfar32.astype(np.float64))
        closest = rel - directions * along[:, None]
        return np.nonzero(row_dot(closest, closest) <= radius * radius)[0]

    def _cast_static(self, g: _Group, origins, directions, tfar32, directions_in=None,
                     normals: bool = True) -> NearestHits:
        """The static group, cast first: Embree's arrays go straight into fresh hit arrays
        (``directions_in``: normalised into ``directions`` first; ``normals`` False: NaN
        normals; :meth:`nearest_unit`)."""
        n = origins.shape[0]
        from .._cast_kernel import rays32, static_hits, unit_rays32   # numba: loaded by the first cast
        o32 = np.empty((n, 3), dtype=np.float32)
        d32 = np.empty((n, 3), dtype=np.float32)
        # origins - centre (one row every ray shares, or a row each) and the directions in
        # float32, one compiled pass (normalising them in it too for nearest_unit)
        offset = np.ascontiguousarray(g.offset, dtype=float)
        if directions_in is None:
            rays32(rows_or_shared(origins), offset, np.ascontiguousarray(directions, dtype=float), o32, d32)
        else:
            unit_rays32(rows_or_shared(origins), offset, directions_in, directions, o32, d32)
        r = g.embree.run(o32, d32, dists=tfar32, output=1)
        out = NearestHits(np.empty(n), np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32),
                          np.empty((n, 3)), np.empty(n, dtype=bool))
        lookup = (_NO_LOOKUP if g.face_lookup is None else
                  (np.ascontiguousarray(g.face_lookup, dtype=np.int32),
                   np.ascontiguousarray(g.geom_start, dtype=np.int64)))
        static_hits(r["tfar"], r["geomID"], r["primID"], r["Ng"], r["u"], r["v"], g.geom_object, *lookup,
                    np.float32(EDGE_BARY), np.float32(1.0 - EDGE_BARY), normals, *out)
        return out

    def static_only(self) -> bool:
        """Whether every triangle is in the static group's BVH (no moving object's BVH), so a
        ray's nearest hit is Embree's hit in that one BVH (:meth:`cast_static_unit`)."""
        self.build()
        return len(self._groups) == 1 and self._groups[0].body is None

    def cast_static_unit(self, origin, directions_in, directions, max_distance, o32, d32):
        """Embree's nearest hits in the static BVH of rays from one ``origin`` (1, 3) along the
        rows of ``directions_in`` (m, 3), normalised into ``directions`` (m, 3) float64 in the
        pass that writes Embree's float32 rays into ``o32``, ``d32`` (m, 3) float32
        (:func:`hifi._cast_kernel.unit_rays32`, as :meth:`nearest_unit`), with the search limit
        ``max_distance`` [m] (a float): ``(tfar, geomID, geomID -> object index)``, Embree's own
        arrays (``geomID`` -1 on a miss) for a caller that makes its outputs straight from them
        (:meth:`hifi.caster.RayCaster.cast_frame`); only where :meth:`static_only`."""
        from .._cast_kernel import unit_rays32                    # numba: loaded by the first cast
        g = self._groups[0]
        unit_rays32(origin, np.ascontiguousarray(g.offset, dtype=float), directions_in, directions, o32, d32)
        r = g.embree.run(o32, d32, dists=_limit32(max_distance, directions_in.shape[0]), output=1)
        return r["tfar"], r["geomID"], g.geom_object

    def nearest(self, origins, directions, times, max_distance) -> NearestHits:
        """Nearest facet along each ray (see :meth:`NearestHitBackend.nearest`)."""
        return self._nearest(origins, directions, times, max_distance, None, True)

    def nearest_unit(self, origins, directions_in, directions, times, max_distance, *,
                     normals: bool = True) -> NearestHits:
        """:meth:`nearest` along the rows of ``directions_in`` (n, 3) normalised, which are
        written into ``directions`` (n, 3) float64, C-contiguous) in the compiled pass that makes
        Embree's float32 rays (:func:`hifi._cast_kernel.unit_rays32`): the first segment of a
        trace reads the rays once instead of twice (see :class:`NearestHitBackend`).
        ``normals`` False: the static objects' hits get NaN normals, not computed (a trace
        whose caller reads none and follows no ray off a surface)."""
        return self._nearest(origins, directions, times, max_distance, directions_in, normals)

    def _nearest(self, origins, directions, times, max_distance, directions_in, normals) -> NearestHits:
        self.build()
        n = origins.shape[0]
        groups = self._groups
        static = bool(groups) and groups[0].body is None        # the static group is always first
        if directions_in is not None and (n == 0 or not static):
            from .._cast_kernel import unit_rows                  # no static pass to do it in
            unit_rows(directions_in, directions)
        if n == 0:
            return no_hits(0)
        tfar32 = _limit32(max_distance, n)
        if static:
            hits = self._cast_static(groups[0], origins, directions, tfar32, directions_in, normals)
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
            normal[rows] /= row_norm(normal[rows])[:, None]
        return hits
