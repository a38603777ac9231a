"""Embree ray caster (through embreex) that follows rays through mirrors.

Three layers:

- a nearest-hit backend (:class:`NearestHitBackend`): the nearest facet along each ray for one
  straight segment. :class:`EmbreeBackend` is the serial one: static objects share one BVH built
  once in the scene frame (shifted to the scene centre so float32 keeps its precision); every
  moving object has its own BVH built once in its body frame, and rays are transformed into
  that frame at each ray's own emission time instead of rebuilding the BVH.
  :class:`mpi.caster.FacetBackend` casts a share of the facets and reduces over processes;
- plain functions over a backend: :func:`trace` (first segment, then the bounded mirror
  bounce loop), :func:`trace_surfaces` (the same through glass panes and off water, with the
  first such surface of every path and the path's throughput) and :func:`settle_ties` (the edge-tie rule that makes a hit independent of how
  the facets are split);
- :class:`RayCaster`, the public facade the sensors call (``ctx.caster.cast(...)``), which
  also splits the rays over threads (:class:`ChunkPool`; embreex releases the GIL inside
  ``run``); :meth:`RayCaster.cast_frame` hands a camera's chunks of Embree's arrays to the
  model's kernel where only static surfaces end rays (the depth map's frame).

The package holds one topic per module, layered so that none imports another in a cycle:
:mod:`~hifi.caster.hits` (the result types and the backend protocol) and
:mod:`~hifi.caster.pool` (the thread pool) at the bottom; :mod:`~hifi.caster.ties` (vertex
topology and the edge-tie rule), :mod:`~hifi.caster.embree` (the serial backend) and
:mod:`~hifi.caster.tracing` (the cast step and the mirror bounce loop) on them;
:mod:`~hifi.caster.facade` (:class:`RayCaster`) on top. Every name is re-exported here, so
``from hifi.caster import RayCaster`` and the other imports of the former single module hold.
"""

from __future__ import annotations

from .embree import EmbreeBackend
from .facade import RayCaster
from .hits import Hits, NearestHitBackend, NearestHits, SurfaceHits, no_front, no_hits, secondary_ray_offset_m
from .pool import ChunkPool
from .ties import (
    NOT_CONTAINED,
    edge_rows,
    lowest_key,
    merge_vertices,
    merged_ids_of,
    settle_ties,
    static_world_vertices,
    tie_candidates,
)
# The former module-private name that the tests import from here.
from .ties import object_topology as _object_topology
from .tracing import SurfaceTable, nearest_step, trace, trace_surfaces

__all__ = [
    "NOT_CONTAINED",
    "ChunkPool",
    "EmbreeBackend",
    "Hits",
    "NearestHitBackend",
    "NearestHits",
    "RayCaster",
    "SurfaceHits",
    "SurfaceTable",
    "_object_topology",
    "edge_rows",
    "lowest_key",
    "merge_vertices",
    "merged_ids_of",
    "nearest_step",
    "no_front",
    "no_hits",
    "secondary_ray_offset_m",
    "settle_ties",
    "static_world_vertices",
    "tie_candidates",
    "trace",
    "trace_surfaces",
]
