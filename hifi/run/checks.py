"""Load-time checks of a built scene that warn (:class:`~hifi.errors.ScenarioWarning`).

A scenario can be valid key by key and still not do what its author meant. These checks run
once when a :class:`~hifi.Simulation` is created and warn, naming the file, the key and the
objects involved:

- a sensor that casts rays and whose mount point at t = 0 lies inside a closed (watertight)
  mesh: every ray starts inside that body, so the sensor sees only its inner faces (what a
  sensor in a room should see, hence a warning and not an error);
- triangles of zero area (:func:`degenerate_faces`), among them every box with a zero extent in
  ``size_m``: the caster cannot hit them reliably;
- a sensor that casts rays and whose mount point at t = 0 lies on a mesh surface (within
  :data:`hifi.constants.MOUNT_ON_SURFACE_M`, :func:`distance_to_surface`): the rays that leave
  into the surface hit it at distance 0, which the range sensors mask (no return);
- a ``[weather]`` value outside the range its model is valid for
  (:data:`hifi.run.scenario.WEATHER_VALID`);
- a scene file loaded with parts whose materials the scenario does not map (they take the
  file's colour, :func:`hifi.world.scene_files.derived_material`), and a ``[scene_files.STEM]``
  glob that matches no part (:mod:`hifi.run.scene_parts`).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..constants import DEGENERATE_TRIANGLE_REL, MOUNT_ON_SURFACE_M
from ..errors import ScenarioWarning

#: Faces examined at once by :func:`degenerate_faces`: bounds its temporaries to about 15 MB,
#: so checking a mesh of millions of triangles does not raise the peak memory of loading it.
_FACE_BLOCK = 1 << 16


def degenerate_faces(vertices, faces, *, rel=DEGENERATE_TRIANGLE_REL) -> np.ndarray:
    """Which triangles have zero area: height at most ``rel`` times the longest edge.

    Parameters
    ----------
    vertices : (v, 3) float
        Vertex positions [m].
    faces : (n, 3) int
        Vertex indices of each triangle.
    rel : float
        Relative height below which a triangle is a line or a point
        (:data:`hifi.constants.DEGENERATE_TRIANGLE_REL`, float32 resolution).

    Returns
    -------
    (n,) bool

    Notes
    -----
    With edges a = v1 - v0, b = v2 - v0 the doubled area is ``|a x b|`` and the height over the
    longest edge L is ``|a x b| / L``; a triangle is degenerate when that is <= ``rel`` L (which
    includes L = 0, all three vertices equal). Scale-free: the same mesh at 1e-3 m and at
    1e4 m gives the same answer.
    """
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    out = np.zeros(len(f), dtype=bool)
    for start in range(0, len(f), _FACE_BLOCK):
        tri = v[f[start:start + _FACE_BLOCK]]
        a, b = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
        c = tri[:, 2] - tri[:, 1]
        longest = np.sqrt(np.max(np.stack([np.einsum("ij,ij->i", e, e) for e in (a, b, c)]), axis=0))
        doubled = np.linalg.norm(np.cross(a, b), axis=1)
        out[start:start + len(tri)] = doubled <= rel * longest * longest
    return out


def distance_to_surface(vertices, faces, point, *, within=MOUNT_ON_SURFACE_M) -> float:
    """Distance from ``point`` (3,) [m] to the nearest of the triangles that come within
    ``within`` [m] of it; ``inf`` when none does.

    Triangles are screened by their bounding boxes grown by ``within``, :data:`_FACE_BLOCK` at
    a time (so a mesh of millions of triangles costs no more memory than a block), and the
    exact point-triangle distance (``trimesh.triangles.closest_point``) is taken of those left.
    """
    from trimesh.triangles import closest_point
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    p = np.asarray(point, dtype=float).reshape(3)
    best = np.inf
    for start in range(0, len(f), _FACE_BLOCK):
        tri = v[f[start:start + _FACE_BLOCK]]
        near = np.all((tri.min(axis=1) - within <= p) & (p <= tri.max(axis=1) + within), axis=1)
        if near.any():
            cand = tri[near]
            d = np.linalg.norm(closest_point(cand, np.broadcast_to(p, (len(cand), 3))) - p, axis=1)
            best = min(best, float(d.min()))
    return best


def inside_closed_mesh(mesh, points, bounds=None) -> np.ndarray:
    """Which ``points`` (n, 3) [m], in the mesh's frame, lie inside a watertight ``mesh``.

    False for every point when the mesh is not watertight (inside is undefined). Points outside
    the mesh's bounding box (``bounds``, default ``mesh.bounds``) are not tested further; the
    others go to trimesh's ``contains`` (ray parity).

    Watertightness is trimesh's test (every edge shared by exactly two faces,
    ``trimesh.graph.is_watertight``, what ``Trimesh.is_watertight`` calls) on edges made here and
    dropped on return: ``mesh.is_watertight`` would keep the edges, sorted edges and each edge's
    face in the mesh's cache, 120 bytes per triangle, for as long as the scene holds the mesh.
    """
    import trimesh
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    lo, hi = mesh.bounds if bounds is None else bounds
    near = np.all((p >= lo) & (p <= hi), axis=1)
    out = np.zeros(len(p), dtype=bool)
    faces = np.asarray(mesh.faces).view(np.ndarray)
    if near.any() and len(faces) and trimesh.graph.is_watertight(trimesh.geometry.faces_to_edges(faces))[0]:
        out[near] = mesh.contains(p[near])
    return out


def warn_scene(sc, scene, models) -> None:
    """Warn about a scenario's scene (module docstring); ``models`` are the sensors' models."""
    from .scenario import WEATHER_VALID, where

    for key, (lo, hi) in WEATHER_VALID.items():
        value = sc.weather.get(key)
        if value is not None and value != 0 and not lo <= value <= hi:
            warnings.warn(f"{where(sc, f'weather.{key}')} = {value!r}: outside {lo:g} .. {hi:g}, where the model "
                          f"is valid (README \"Weather\"); the result is an extrapolation", ScenarioWarning,
                          stacklevel=3)
    for line in sc.part_warnings:
        warnings.warn(line, ScenarioWarning, stacklevel=3)
    by_name = {o.name: o for o in scene.objects}
    # every [[objects]] entry with the scene objects it made (one, or its parts with triangles)
    pairs = [(spec, by_name[name]) for spec in sc.objects for name in spec.object_names]
    for spec, obj in pairs:
        bad = int(np.count_nonzero(degenerate_faces(obj.vertices, obj.faces)))
        if not bad:
            continue
        size = spec.mesh_params.get("size_m")
        if spec.mesh == "box" and size is not None and min(size) == 0:
            warnings.warn(f"{where(sc, f'objects[{spec.index}].size_m')} = {list(size)!r}: box {obj.name!r} has a "
                          f"zero extent, so {bad} of its {len(obj.faces)} triangles have zero area and cannot "
                          f"be hit reliably; give every extent > 0 (a flat rectangle is mesh = \"plane\")",
                          ScenarioWarning, stacklevel=3)
        else:
            warnings.warn(f"{where(sc, f'objects[{spec.index}].mesh')} = {spec.mesh!r}: {bad} of the "
                          f"{len(obj.faces)} triangles of {obj.name!r} have zero area (height <= "
                          f"{DEGENERATE_TRIANGLE_REL:.3g} x longest edge) and cannot be hit reliably",
                          ScenarioWarning, stacklevel=3)
    casting = [(spec, m) for spec, m in zip(sc.sensors, models) if m.rays_per_frame() > 0]
    for spec, _ in casting:
        mount = scene.pose_at(spec.name, 0.0).translation
        for ospec, obj in pairs:
            local = scene.pose_at(obj.name, 0.0).inverse_apply(np.asarray(mount, dtype=float)[None, :])
            if obj.bounds is None:
                continue
            lo, hi = obj.bounds
            if (np.all((local[0] >= lo - MOUNT_ON_SURFACE_M) & (local[0] <= hi + MOUNT_ON_SURFACE_M))
                    and distance_to_surface(obj.vertices, obj.faces, local[0]) <= MOUNT_ON_SURFACE_M):
                pos = ", ".join(f"{x:.3g}" for x in mount)
                warnings.warn(f"{where(sc, f'sensors[{spec.index}].position_m')} = {list(spec.position_m)!r}: sensor "
                              f"{spec.name!r} is on the surface of objects[{ospec.index}] {obj.name!r} at t = 0 "
                              f"(within {MOUNT_ON_SURFACE_M * 1e3:g} mm; scene position [{pos}] m): its rays leave "
                              f"from that surface and can hit it at distance 0, which is no "
                              f"return; move the mount off the surface (a real sensor's housing sits on it)",
                              ScenarioWarning, stacklevel=3)
                continue
            if inside_closed_mesh(obj.mesh, local, obj.bounds)[0]:
                where_key = where(sc, f"sensors[{spec.index}].position_m")
                pos = ", ".join(f"{x:.3g}" for x in mount)
                warnings.warn(f"{where_key} = {list(spec.position_m)!r}: sensor {spec.name!r} is mounted inside "
                              f"objects[{ospec.index}] {obj.name!r}, a closed mesh, at t = 0 (scene position "
                              f"[{pos}] m): its rays start inside that body and can hit nothing but its "
                              f"inner faces; unless it is a room, move the mount outside", ScenarioWarning,
                              stacklevel=3)
