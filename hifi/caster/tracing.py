"""Tracing over any nearest-hit backend: :func:`nearest_step` (one cast step, split over
threads, with the edge-tie rule), :func:`trace` (the first segment of every ray finished in
place, then the bounded mirror bounce loop with its secondary-ray offsets) and
:func:`trace_surfaces` (the same through glass panes and off water surfaces, keeping the first
such surface of every path and the path's throughput). Plain functions over the backend
protocol, kept apart from the backends they drive and from the facade that binds them to a
scene.
"""

from __future__ import annotations

import numpy as np

from typing import NamedTuple

from ..constants import MAX_MIRROR_BOUNCES, MAX_PANE_CROSSINGS
from ..world.surfaces import GLASS, MIRROR, WATER, surface_throughput
from ._rows import rows_or_shared
from .hits import Hits, NearestHitBackend, NearestHits, SurfaceHits, no_front

#: Smallest cosine used to turn the normal clearance of a secondary ray into a distance along
#: it; grazing reflections (cos < 0.05, 87 deg) step at most 20 offsets along the ray.
_MIN_COS_OFFSET = 0.05


def _concat_hits(parts: list) -> NearestHits:
    """One :class:`NearestHits` from the chunks' results, in order."""
    if len(parts) == 1:
        return parts[0]
    return NearestHits(*(np.concatenate(f) for f in zip(*parts)))


def _slice(x, a: int, b: int):
    """``x[a:b]`` for an array of per-ray values, ``x`` itself for a scalar (one for all rays)."""
    return x if np.ndim(x) == 0 else x[a:b]


def _one_time(times):
    """``times`` as one float when every ray has the same time (one pose per moving object)."""
    if np.ndim(times) == 0:
        return float(times)
    if times.size and times.strides == (0,):      # a broadcast of one time (a camera's frame)
        return times[0]
    return times[0] if times.size and bool(np.all(times == times[0])) else times


def _per_ray(x, n: int):
    """``x`` (times, ranges) as one float or as an (n,) float64 array (a broadcast view where
    it has fewer values; the array itself where it has one per ray already)."""
    if type(x) is float:
        return x
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return float(x)
    return x if x.shape == (n,) else np.broadcast_to(x, (n,))


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
    distance, point, normal, direction, object_id, face_index = (
        _rows_of(x, a, b, shape) for x, shape in zip(out, _FIELD_SHAPES))
    o = origins[a:b]
    d = direction
    d_in = directions_in[a:b]
    from .._cast_kernel import finish_hits, unit_rows          # numba: loaded by the first cast
    t, limit = _slice(times, a, b), _slice(max_range, a, b)
    unit_cast = getattr(backend, "nearest_unit", None)
    if unit_cast is None:
        unit_rows(np.ascontiguousarray(d_in), d)
        hits = backend.nearest(o, d, t, limit)
    else:                                      # normalised in the backend's pass over the rays
        # no normals where nothing reads them: no normal output, no ray followed off a surface
        hits = unit_cast(o, np.ascontiguousarray(d_in), d, t, limit,
                         normals=out[2] is not None or mirror_object is not None)
    if settle is not None:
        settle(o, d, t, hits)
    seg, obj_g, face_g, nrm_g, _ = hits
    dist, pt, nrm, obj, face = distance, point, normal, object_id, face_index
    if finish_hits(rows_or_shared(o), d, seg, obj_g, face_g, np.ascontiguousarray(nrm_g), dist, pt, nrm,
                   obj, face) == 0 or mirror_object is None:
        return None
    return _mirror_state(a, mirror_object, obj, face, dist, pt, nrm, d)


#: Row shape and dtype of the first segment's outputs (distance, point, normal, direction,
#: object id, face index): what a chunk's scratch rows are for an output the caller left out.
_FIELD_SHAPES = (((), np.float64), ((3,), np.float64), ((3,), np.float64), ((3,), np.float64),
                 ((), np.int32), ((), np.int32))


def _rows_of(x, a, b, shape):
    """Rows ``a:b`` of output ``x``, or, where the caller asked for no such output (None),
    rows of a scratch array of this chunk (heap memory the next chunk reuses; the mirror
    loop still reads the rays it follows from them)."""
    if x is not None:
        return x[a:b]
    row, dtype = shape
    return np.empty((b - a, *row), dtype=dtype)


_HITS_FIELDS = tuple(Hits.__dataclass_fields__)
_HITS_DTYPES = (np.float64, np.float64, np.float64, np.float64, np.int32, np.int32, np.int8)


def _outputs(n: int, out: Hits | None) -> Hits:
    """The arrays a trace of ``n`` rays writes: ``out``'s (its None fields left out), or fresh.

    Raises
    ------
    ValueError
        An array of ``out`` is not C-contiguous and writeable with the shape and dtype of its
        field for ``n`` rays, or ``out`` holds no array.
    """
    if out is None:
        return Hits(np.empty(n), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)),
                    np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32), np.zeros(n, dtype=np.int8))
    arrays = [getattr(out, name) for name in _HITS_FIELDS]
    if all(x is None for x in arrays):
        raise ValueError("out: every field is None; give the array of one output at least")
    for name, dtype, x in zip(_HITS_FIELDS, _HITS_DTYPES, arrays):
        if x is None:
            continue
        shape = (n, 3) if name in ("point", "normal", "direction") else (n,)
        if not (isinstance(x, np.ndarray) and x.shape == shape and x.dtype == dtype
                and x.flags.c_contiguous and x.flags.writeable):
            got = (f"{type(x).__name__} {getattr(x, 'shape', '')} {getattr(x, 'dtype', '')}").strip()
            raise ValueError(f"out.{name}: expected a writeable C-contiguous {np.dtype(dtype)} array of shape "
                             f"{shape} or None, got {got}")
    if out.bounces is not None:
        out.bounces.fill(0)
    return out


def _mirror_state(a, mirror_object, obj, face, dist, pt, nrm, d):
    """The rays of a finished first segment that hit a mirror (or any surface ``mirror_object``
    flags): ``(index, segment, point, normal, direction, object id, face)`` for the bounce
    loop, their outputs reset to NaN / -1; None if there are none."""
    on_mirror = mirror_object[obj]
    if not np.any(on_mirror):
        return None
    m = np.nonzero(on_mirror)[0]
    state = (m + a, dist[m], pt[m], nrm[m], d[m], obj[m], face[m])
    dist[m] = np.nan
    pt[m] = np.nan
    nrm[m] = np.nan
    obj[m] = -1
    face[m] = -1
    return state


def _trace_first(backend, origins, directions, times, max_range_m, mirror_object, settle, map_chunks,
                 out=None):
    """The outputs of a trace and its first segment: ``(hits, states, times, max_range)``,
    ``hits`` finished for every ray that ends on its first surface (in ``out``'s arrays, see
    :func:`trace`), ``states`` the
    :func:`_mirror_state` of each chunk that has rays on a surface ``mirror_object`` flags
    (those left out), ``times`` and ``max_range`` as the loops take them."""
    origins = np.asarray(origins, dtype=float).reshape(-1, 3)
    directions_in = np.asarray(directions, dtype=float).reshape(-1, 3)
    n = origins.shape[0]
    if directions_in.shape[0] != n:
        raise ValueError(f"origins has {n} rays but directions has {directions_in.shape[0]}")
    times = _per_ray(times, n)
    max_range = _per_ray(max_range_m, n)

    hits = _outputs(n, out)
    if n == 0:
        return hits, [], times, max_range
    backend.build()
    times = _one_time(times)
    mirrors = mirror_object if np.any(mirror_object) else None
    arrays = (hits.distance, hits.point, hits.normal, hits.direction, hits.object_id, hits.face_index)

    def first(a, b):
        return _first_segment(backend, settle, a, b, origins, directions_in, times, max_range,
                              arrays, mirrors)

    if backend.collective or map_chunks is None:
        states = [first(0, n)]
    else:
        states = map_chunks(first, n)
    return hits, [s for s in states if s is not None], times, max_range


def trace(backend: NearestHitBackend, origins, directions, times=0.0, max_range_m=np.inf, *,
          mirror_object: np.ndarray, max_bounces: int = MAX_MIRROR_BOUNCES,
          settle=None, map_chunks=None, out: Hits | None = None) -> Hits:
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
    out : Hits, optional
        The arrays to write the result into (C-contiguous, the dtypes and shapes of
        :class:`Hits` for n rays), returned as the result; a field that is None there is not
        stored, and stays None in the result. A caller that reads a few outputs of a large cast
        (a depth map: distance, point, object) passes those, reusing its arrays from frame to
        frame, instead of faulting in fresh (n, 3) arrays it never reads. Default: fresh arrays
        for every field.

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
    hits, states, times, max_range = _trace_first(backend, origins, directions, times, max_range_m,
                                                  mirror_object, settle, map_chunks, out)
    if not states or max_bounces == 0:
        return hits
    n = len(hits)
    distance, point, normal, out_dir, object_id, face_index, bounces = (
        getattr(hits, f) for f in Hits.__dataclass_fields__)

    # Rays on a mirror: reflect and follow, up to max_bounces reflections.
    active = np.concatenate([s[0] for s in states])
    seg, p, nrm, d, mirror = (np.concatenate([s[i] for s in states]) for i in range(1, 6))
    all_times = np.broadcast_to(times, (n,))
    remaining = np.broadcast_to(max_range, (n,))[active] - seg
    travelled = seg
    for bounce in range(1, max_bounces + 1):
        reflected = d - 2.0 * np.einsum("ij,ij->i", d, nrm)[:, None] * nrm
        d = reflected
        seg, obj, face, nrm, p, hit = _leave(backend, p, d, nrm, mirror, all_times[active], remaining,
                                             settle, map_chunks)
        total = travelled + seg
        is_mirror = hit & mirror_object[obj]
        final = hit & ~is_mirror
        fi = active[final]
        _store((distance, point, normal, out_dir, object_id, face_index), fi, final, total, p, nrm, d, obj, face)
        if bounces is not None:
            bounces[fi] = bounce
        if bounce == max_bounces or not np.any(is_mirror):
            break
        m = is_mirror
        active, travelled, remaining = active[m], total[m], remaining[m] - seg[m]
        seg, p, nrm, d, mirror = seg[m], p[m], nrm[m], d[m], obj[m]
    return hits


class SurfaceTable(NamedTuple):
    """Per object id (and -1, last entry), what :func:`trace_surfaces` needs of its material."""

    kind: np.ndarray              #: int8 code (:mod:`hifi.world.surfaces`: OPAQUE ... MIRROR)
    refractive_index: np.ndarray  #: float64, NaN where the kind has none
    transmittance: np.ndarray     #: float64, internal transmittance of a pane

    @classmethod
    def of(cls, scene) -> "SurfaceTable":
        """The table of a :class:`~hifi.world.scene.Scene`."""
        return cls(scene.object_table("kind"), scene.object_table("refractive_index"),
                   scene.object_table("transmittance"))

    @property
    def any(self) -> bool:
        """Whether any object is glass or water (else :func:`trace` does the same work)."""
        return bool(np.any((self.kind == GLASS) | (self.kind == WATER)))

    def follow(self) -> np.ndarray:
        """Per object id: does a ray go on from it (a mirror, a pane, a water surface)?"""
        return (self.kind == MIRROR) | (self.kind == GLASS) | (self.kind == WATER)


def trace_surfaces(backend: NearestHitBackend, origins, directions, times=0.0, max_range_m=np.inf, *,
                   surfaces: SurfaceTable, max_bounces: int = MAX_MIRROR_BOUNCES,
                   max_crossings: int = MAX_PANE_CROSSINGS, settle=None, map_chunks=None,
                   out: Hits | None = None) -> SurfaceHits:
    """Cast rays and follow them through mirrors, through glass panes and along the
    reflection off water surfaces to the first surface that stops them.

    Parameters
    ----------
    backend, origins, directions, times, max_range_m, settle, map_chunks, out
        As :func:`trace` (``out`` for ``hits``).
    surfaces : SurfaceTable
        Per object id (and -1 last): its kind (a perfect mirror is ``MIRROR``), refractive
        index and internal transmittance.
    max_bounces : int
        Bound on reflections per ray (mirrors and water surfaces); a ray that would reflect
        once more reports no hit.
    max_crossings : int
        Bound on glass panes crossed per ray (:data:`~hifi.constants.MAX_PANE_CROSSINGS`); a ray
        that would cross one more reports no hit.

    Returns
    -------
    SurfaceHits
        The final hits (as :func:`trace` returns them: ``bounces`` counts the mirror and water
        reflections), the first glass or water surface of every path, and the throughput.

    Notes
    -----
    A ray that reaches a pane goes on in the same direction (a thin pane shifts it sideways by
    millimetres: :func:`hifi.world.surfaces.pane_optics`), one that reaches water along its
    mirror reflection; each multiplies the path's throughput by the share that goes on that
    way (:func:`hifi.world.surfaces.surface_throughput`), and the first of them on a path is
    kept as ``front``. The secondary ray leaves from a point on the continued line that clears
    the surface by ``backend.secondary_offset_m`` (stepping ``offset / cos``, cos clamped at
    ``_MIN_COS_OFFSET``), the path length is measured from the true point, as in
    :func:`trace`. Every ray in the loop is on such a surface and each step adds a reflection or
    a crossing to it, so at most ``max_bounces + max_crossings`` steps run. The loop's arrays
    and its decisions come from the backend's (collective) results only, so every MPI rank
    runs it alike. A scene without glass or water gives what :func:`trace` gives (its first
    ``hits``), with no front and a throughput of 1.
    """
    follow = surfaces.follow()
    hits, states, times, max_range = _trace_first(backend, origins, directions, times, max_range_m, follow,
                                                  settle, map_chunks, out)
    n = len(hits)
    throughput = np.ones(n)
    if not states:
        return SurfaceHits(hits, no_front(n), throughput)
    distance, point, normal, out_dir, object_id, face_index, bounces = (
        getattr(hits, f) for f in Hits.__dataclass_fields__)
    front = Hits(np.full(n, np.nan), np.full((n, 3), np.nan), np.full((n, 3), np.nan), np.full((n, 3), np.nan),
                 np.full(n, -1, dtype=np.int32), np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=np.int8))
    has_front = np.zeros(n, dtype=bool)

    active = np.concatenate([s[0] for s in states])
    seg, p, nrm, d, obj, face = (np.concatenate([s[i] for s in states]) for i in range(1, 7))
    all_times = np.broadcast_to(times, (n,))
    remaining = np.broadcast_to(max_range, (n,))[active] - seg
    travelled = seg
    tp = np.ones(active.size)
    n_reflect = np.zeros(active.size, dtype=np.int64)
    n_cross = np.zeros(active.size, dtype=np.int64)
    for _ in range(max_bounces + max_crossings):
        kind = surfaces.kind[obj]
        dn = np.einsum("ij,ij->i", d, nrm)              # < 0: nrm faces the arriving ray
        on_surface = (kind == GLASS) | (kind == WATER)
        first = on_surface & ~has_front[active]
        if np.any(first):
            fi = active[first]
            has_front[fi] = True
            front.distance[fi] = travelled[first]
            front.point[fi] = p[first]
            front.normal[fi] = nrm[first]
            front.direction[fi] = d[first]
            front.object_id[fi] = obj[first]
            front.face_index[fi] = face[first]
            front.bounces[fi] = n_reflect[first]
        if np.any(on_surface):
            tp = tp * surface_throughput(kind, -dn, surfaces.refractive_index[obj], surfaces.transmittance[obj])
        reflect = (kind == MIRROR) | (kind == WATER)
        n_reflect = n_reflect + reflect
        n_cross = n_cross + (kind == GLASS)
        keep = (n_reflect <= max_bounces) & (n_cross <= max_crossings)
        if not np.all(keep):                            # past a bound: no hit (outputs stay NaN / -1)
            active, travelled, remaining, tp = active[keep], travelled[keep], remaining[keep], tp[keep]
            n_reflect, n_cross, reflect = n_reflect[keep], n_cross[keep], reflect[keep]
            p, nrm, d, obj, dn = p[keep], nrm[keep], d[keep], obj[keep], dn[keep]
            if active.size == 0:
                break
        going = np.where(reflect[:, None], d - 2.0 * dn[:, None] * nrm, d)
        d = going
        seg, obj, face, nrm, p, hit = _leave(backend, p, d, nrm, obj, all_times[active], remaining,
                                             settle, map_chunks)
        total = travelled + seg
        goes_on = hit & follow[obj]
        final = hit & ~goes_on
        fi = active[final]
        _store((distance, point, normal, out_dir, object_id, face_index), fi, final, total, p, nrm, d, obj, face)
        if bounces is not None:
            bounces[fi] = n_reflect[final]
        throughput[fi] = tp[final]
        if not np.any(goes_on):
            break
        m = goes_on
        active, travelled, remaining = active[m], total[m], remaining[m] - seg[m]
        seg, p, nrm, d, obj, face = seg[m], p[m], nrm[m], d[m], obj[m], face[m]
        tp, n_reflect, n_cross = tp[m], n_reflect[m], n_cross[m]
    return SurfaceHits(hits, front, throughput)


def _store(out, fi, final, *segment) -> None:
    """Write the rays that end on this segment into the outputs ``out`` (distance, point,
    normal, direction, object id, face index) at rows ``fi``: the segment's values
    (``total, p, nrm, d, obj, face``) where ``final``. Shared by the mirror loop and the
    glass/water loop."""
    for array, values in zip(out, segment):
        if array is not None:                    # an output the caller left out
            array[fi] = values[final]


def _leave(backend, start, going, nrm, left, times, remaining, settle, map_chunks):
    """The next segment of rays that leave a surface (a mirror's reflection, or a pane or water
    surface crossed or reflected off) at ``start`` along unit ``going``: ``(segment length,
    object, face, normal toward the ray, end point, hit)``.

    The secondary ray starts on the continued line itself, far enough to clear the surface left
    (object ids ``left``, normal ``nrm``) by the backend's offset over ``|going . n|`` (clamped
    at ``_MIN_COS_OFFSET`` for grazing rays), so the path stays exact; the length is measured
    from the true point on the surface, not the offset origin. Misses: NaN point, the segment
    as the backend gives it."""
    cos_out = np.maximum(np.abs(np.einsum("ij,ij->i", going, nrm)), _MIN_COS_OFFSET)
    offset_m = backend.secondary_offset_m(start, left)
    o = start + going * (offset_m / cos_out)[:, None]
    seg, obj, face, nrm, _ = nearest_step(backend, o, going, times, remaining, settle=settle, map_chunks=map_chunks)
    hit = obj >= 0
    p = o + going * np.where(hit, seg, np.nan)[:, None]
    seg = np.where(hit, np.linalg.norm(p - start, axis=1), seg)
    facing = np.einsum("ij,ij->i", nrm, going)
    return seg, obj, face, np.where((facing > 0)[:, None], -nrm, nrm), p, hit
