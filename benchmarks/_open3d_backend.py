"""A nearest-hit backend over Open3D's ``RaycastingScene`` (Embree inside), for the benchmarks.

:class:`Open3DBackend` is :class:`hifi.caster.EmbreeBackend` with its BVHs built and cast by
``open3d.t.geometry.RaycastingScene`` instead of embreex: the same float32 frames (static
objects in the scene frame minus the centre of their bounding box, each moving object in its
body frame), the same swept-ball culling of moving objects and the same facet subsets; only
the library that holds the BVH and runs the rays differs. ``bench_caster.py``,
``bench_sensors.py --ray-caster open3d`` and ``bench_memory.py --modes caster_open3d`` cast
through it where open3d is installed (``pip install ".[bench]"``).

It is not offered to runs (no scenario key): a backend is worth offering only if it is faster than
the default on identical hits, and through hifi this one is not (``benchmarks/README.md``,
"Open3D backend"): its hits are the default's, its casts take 1.00-1.10x the time,
and importing open3d costs a run about 2 s and 200 MB.

References
----------
Open3D, ``open3d.t.geometry.RaycastingScene``, https://www.open3d.org/docs/release/python_api/open3d.t.geometry.RaycastingScene.html
(``add_triangles``: float32 vertices, uint32 triangles, returns the geometry id;
``cast_rays(rays, nthreads=0)``: ``t_hit``, ``geometry_ids``, ``primitive_ids``,
``primitive_uvs``, ``primitive_normals``; misses ``inf`` and ``INVALID_ID``).
Open3D ray casting tutorial, https://www.open3d.org/docs/release/tutorial/geometry/ray_casting.html
Q.-Y. Zhou, J. Park, V. Koltun, "Open3D: A Modern Library for 3D Data Processing",
arXiv:1801.09847, 2018.
"""

from __future__ import annotations

import os

import numpy as np

from hifi.caster import EmbreeBackend

#: One float32 xyz row as an opaque 12-byte block (for copying whole rows).
_XYZ32 = np.dtype("V12")

#: The command that installs the optional extra, named by every error about a missing open3d.
INSTALL_HINT = 'pip install ".[bench]" (or pip install "open3d>=0.19")'


def import_open3d():
    """The ``open3d`` module, imported now.

    Raises
    ------
    ImportError
        With :data:`INSTALL_HINT` when open3d is missing or does not load (its wheel needs the
        system's ``libusb-1.0``, e.g. Debian's ``libusb-1.0-0``; the message says what failed).
    """
    try:
        import open3d
    except ImportError as exc:
        raise ImportError(f"the Open3D backend needs open3d >= 0.19, which does not import here "
                          f"({exc}); install it with {INSTALL_HINT}") from None
    return open3d


class _Open3DBVH:
    """One Open3D ``RaycastingScene`` behind embreex's ``EmbreeScene.run`` interface.

    Parameters
    ----------
    nthreads : int
        Threads of each ``cast_rays`` (Open3D splits the rays over them with TBB).
    """

    def __init__(self, nthreads: int):
        o3d = import_open3d()
        self._tensor = o3d.core.Tensor
        self.scene = o3d.t.geometry.RaycastingScene()
        self.nthreads = int(nthreads)

    def add_triangles(self, vertices, faces) -> None:
        """One geometry: vertices (v, 3) [m] (cast to float32), faces (f, 3) (uint32); its
        geometry id is the count of geometries added before it, as with embreex."""
        self.scene.add_triangles(self._tensor(np.ascontiguousarray(vertices, dtype=np.float32)),
                                 self._tensor(np.ascontiguousarray(faces, dtype=np.uint32)))

    def run(self, origins, directions, *, dists, output=1) -> dict:
        """Nearest hits of float32 rays within ``dists``, as embreex's ``run(..., output=1)``.

        Parameters
        ----------
        origins, directions : (n, 3) float32
            Rays in this BVH's frame [m]; unit directions (``t_hit`` is then in metres).
        dists : (n,) float32
            Search limit per ray [m]; shortened in place to the hit distance where a hit lies
            within it (embreex does the same).
        output : int
            Ignored (always the full hit record; embreex's signature).

        Returns
        -------
        dict
            ``tfar`` (``dists``), ``geomID`` and ``primID`` (n,) int32 (-1 on a miss),
            ``Ng`` (n, 3) float32 (Open3D's unit normal), ``u``, ``v`` (n,) float32.

        Notes
        -----
        ``cast_rays`` takes no per-ray far limit (it starts every ray with ``tfar = inf``), so
        a hit beyond ``dists`` is turned into a miss here: the nearest hit within the limit is
        the nearest hit overall when that lies within it, and none otherwise. The test is
        ``t_hit <= dists`` in float32; Embree tests its limit inside its own intersection
        arithmetic, so a hit within a float32 ulp of the limit may be kept by one and dropped
        by the other.
        """
        rays = np.empty((origins.shape[0], 6), dtype=np.float32)
        # [o, d] per ray as two 12-byte blocks (a copy of whole rows: twice as fast as writing
        # the (n, 3) halves column by column).
        blocks = rays.view(_XYZ32)
        blocks[:, 0] = np.ascontiguousarray(origins, dtype=np.float32).view(_XYZ32)[:, 0]
        blocks[:, 1] = np.ascontiguousarray(directions, dtype=np.float32).view(_XYZ32)[:, 0]
        r = self.scene.cast_rays(self._tensor.from_numpy(rays), nthreads=self.nthreads)
        t = r["t_hit"].numpy()
        # INVALID_ID is 2**32 - 1: its uint32 bits read as int32 are -1, embreex's miss.
        within = t <= dists
        geom = np.where(within, r["geometry_ids"].numpy().view(np.int32), np.int32(-1))
        prim = np.where(within, r["primitive_ids"].numpy().view(np.int32), np.int32(-1))
        np.copyto(dists, t, where=within)
        uv = r["primitive_uvs"].numpy()
        return {"tfar": dists, "geomID": geom, "primID": prim, "Ng": r["primitive_normals"].numpy(),
                "u": uv[:, 0], "v": uv[:, 1]}


class Open3DBackend(EmbreeBackend):
    """Serial nearest-hit backend (:class:`hifi.caster.NearestHitBackend`) over Open3D's
    ``RaycastingScene``.

    Everything but the BVH library is :class:`~hifi.caster.EmbreeBackend`'s: the float32 frames,
    the moving objects' body-frame BVHs and swept-ball culling, ``face_subset``, the offsets of
    secondary rays, and the conversion of the hit arrays into :class:`~hifi.caster.NearestHits`
    (distance from ``t_hit``, object and face ids, the edge flag from ``primitive_uvs`` with the
    same ``_EDGE_BARY`` rule).

    Parameters
    ----------
    scene : Scene
        Objects and motion (frozen once built).
    face_subset : callable, optional
        As :class:`~hifi.caster.EmbreeBackend`.
    n_threads : int, optional
        Threads of each ``cast_rays`` call; default every core (``os.cpu_count()``).

    Notes
    -----
    Open3D casts with Embree like embreex, but batches the rays (``rtcIntersect1M`` over 1024-ray
    blocks on a TBB ``parallel_for``) instead of embreex's one ``rtcIntersect1`` per ray, and
    builds its scene with ``RTC_SCENE_FLAG_ROBUST``. On the benchmark scan (the HDL-64E scan of the BlenSor acre: 133,312
    rays, 472,000 triangles) its hits are those of embreex bit for bit: same hit mask, same
    float32 distances, same geometry, primitive and barycentrics (``benchmarks/README.md``).

    Normals: Open3D returns Embree's geometric normal ``Ng`` scaled to unit length in float32
    (``Ng * (1 / sqrt(Ng . Ng))``, zero on a miss); :class:`~hifi.caster.EmbreeBackend` scales
    the raw ``Ng`` in float64. Scaled again in float64 here, the two unit normals differ by a
    float32 rounding, below 2e-7 per component.

    Threads: ``cast_rays`` holds Python's GIL while it casts (two Python threads calling it
    run one after the other) and runs its own threads, so ``threads_inside`` is True: a
    :class:`~hifi.caster.RayCaster` passes all rays of a cast step to one :meth:`nearest`
    call instead of splitting them over its :class:`~hifi.caster.ChunkPool`.

    Speed (``benchmarks/README.md``, "Open3D backend"): Open3D's own ``cast_rays``
    is about 0.86-0.90x of raw embreex's time on two threads, but through hifi this backend is
    1.00-1.10x of the embreex backend's time for a static scan and slower with a moving object
    at per-ray times: around the one GIL-holding call, the float32 packing and hifi's per-ray
    passes of that step (frames, moving-object transforms, tie rule, finishing) run on one
    thread, where the embreex backend runs them chunk by chunk on every core. Its BVHs build
    faster (one HDL-64E cast with the build, 1 M triangles: 2.0 s against 2.7 s), and importing
    open3d costs about 2 s and 200 MB.
    """

    #: :meth:`nearest` runs its own threads and holds the GIL: call it once per cast step.
    threads_inside = True

    def __init__(self, scene, *, face_subset=None, n_threads: int | None = None):
        super().__init__(scene, face_subset=face_subset)
        import_open3d()                      # a missing open3d is an error now, not at the first cast
        self.n_threads = int(n_threads or os.cpu_count() or 1)

    def _new_bvh(self):
        return _Open3DBVH(self.n_threads)

    @staticmethod
    def _add_triangles(bvh, vertices, faces) -> None:
        bvh.add_triangles(vertices, faces)
