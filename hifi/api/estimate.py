"""What a run will cost before it starts: peak memory and output size, and the memory check.

A run that cannot fit is refused before anything is allocated (a 20000 x 20000
depth map used all 24 GiB of a machine and was killed by the kernel). Every model states what
one frame costs (:meth:`hifi.api.model.Model.estimate`): its number of frames from its rate and the
duration, its rays per frame, the shape and dtype of every output variable of a frame, the
arrays it holds from ``setup`` to the end, and its working memory while a frame is computed.
This module adds the process, the scene and the netCDF writers, and compares the peak with the
memory available.

Memory model (peak resident set size of the process)::

    peak = BASE_PROCESS_BYTES + kernels + scene + sum over models (setup + writer)
           + max over models (working)

- ``BASE_PROCESS_BYTES``: the interpreter with numpy, scipy, xarray, netCDF4, trimesh and
  embreex imported, running a one-body scene with a pose sensor (measured, see below).
- kernels: ``KERNEL_RSS_BYTES`` once if the run loads numba and llvmlite: it casts rays (the
  compiled kernels of :mod:`hifi.kernels`), or runs the divergent-beam receiver.
- scene: ``SCENE_BYTES_PER_FACE`` per triangle of a static object, ``MOVING_SCENE_BYTES_PER_FACE``
  per triangle of a moving one (mesh arrays, the float32 copies handed to Embree and its BVH;
  a moving object has its own BVH in its body frame), plus the textures of scene-file parts:
  their texels as held (3 B per pixel of a base-colour texture, 4 B of a reflectance map),
  their texture coordinates (16 B per vertex) and each textured face's map to them (64 B).
- setup: the arrays a model keeps from ``setup`` on (ray directions, per-ray times), analytic.
- writer (:func:`writer_bytes`): the frames :class:`hifi.run.output.FrameWriter` buffers before it
  writes (at most ``BUFFER_MAX_FRAMES`` frames or ``BUFFER_MAX_BYTES``), the copy its flush
  makes of one variable, and the HDF5 chunk cache netCDF keeps per variable (64 MiB each with
  netCDF-C 4.9+, ``netCDF4.get_chunk_cache()``), which stays filled until the file is closed.
- working: ``WORKING_BYTES_PER_RAY`` of the model times its rays per frame: the hits of the
  caster (distance, point, normal, direction, ids), the rays in the scene frame, the noise
  chain's temporaries. Only one model steps at a time, so the largest counts.

The per-ray factors and the base are calibrated, not derived: ``benchmarks/calibrate_memory.py``
runs each shipped model at three sizes against a small scene, each in its own subprocess, reads
its peak RSS (:func:`~hifi.api.process_memory.peak_rss_bytes`: ``VmHWM``, else
``resource.getrusage``), subtracts the base, the scene, the setup arrays and the writer model,
and fits the per-ray factor by least squares through the origin; its table (estimate against
measurement) is in ``benchmarks/README.md``. With the
factors set, every calibration run's estimated peak is within 11 % of the measured one, and
the part above the base within 10 % at each model's largest size; the crossing example as a
whole is overestimated by 22 % (its eight writers' chunk caches are not all full at once).
The tests hold the estimate to a factor of 2 (``tests/hifi/api/test_estimate.py``).

Output size is frames times the bytes of one frame's variables, plus the frame index and time
(12 B per frame), before netCDF compression (zlib level 1 with shuffle: float data usually
shrinks to 30-70 %, masks and ids to a few %). Coordinates and attributes are not counted.

This process's resident and peak memory and glibc's heap (trim, steady thresholds) are
:mod:`hifi.api.process_memory`; its names are importable from here too.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Mapping

from .process_memory import (  # noqa: F401  (re-exported: importable from here as before the split)
    STEADY_MMAP_THRESHOLD_BYTES, STEADY_TRIM_THRESHOLD_BYTES, peak_rss_bytes, process_rss_bytes, steady_heap,
    trim_heap)


#: Peak RSS of a run of a pose sensor over a one-plane scene [B]: the interpreter and the
#: imported libraries (numpy, scipy, xarray, netCDF4, trimesh, embreex), measured on Linux
#: x86-64, Python 3.11 (benchmarks/calibrate_memory.py).
BASE_PROCESS_BYTES = 160 * 2**20

#: Resident memory the compiled kernels add to a process that casts rays [B]: numba, llvmlite's
#: LLVM and the cached machine code of :mod:`hifi._cast_kernel`, :mod:`sensors._lidar_kernel`
#: and, with a divergent beam, :mod:`sensors._beam_kernel`. Measured with
#: :func:`process_rss_bytes` (Linux x86-64, Python 3.11, numba 0.68, llvmlite 0.50): 56 MiB for
#: importing numba, 104 MiB with the three kernel modules loaded from the cache after a cast;
#: the beam kernel alone had measured 99 MiB above an imported hifi (2026-11-27). 100 MiB.
KERNEL_RSS_BYTES = 100 * 2**20

#: Resident bytes per triangle of a static object at the run's peak (the mesh's float64 vertices
#: and int64 faces, the edge-tie tables, Embree's float32 copies and its BVH build), measured
#: with terrains of 0.5 to 4 million triangles (benchmarks/calibrate_memory.py --scene,
#: 2026-11-27, after the memory work in benchmarks/README.md, "Memory per triangle and facets":
#: 169 B per triangle between 0.5 and 4.1 M
#: triangles; 2 M: 489 MiB measured, 4.1 M: 818 MiB).
SCENE_BYTES_PER_FACE = 170

#: The same for a moving object (own BVH in its body frame, plus the arrays of its transform).
MOVING_SCENE_BYTES_PER_FACE = 205

#: Bytes written per frame besides the variables: ``frame`` (int32) and ``frame_time`` (float64).
FRAME_INDEX_BYTES = 12

#: :class:`hifi.run.output.FrameWriter` writes frames in blocks: a block closes at this many frames
#: or bytes, so memory stays bounded in long runs while small frames (a GNSS epoch, a pose) do
#: not pay one netCDF call per variable per frame. The limits depend only on the frames' sizes, so the blocks, and the bytes
#: of the file, are the same in every run of a scenario.
BUFFER_MAX_FRAMES = 256
BUFFER_MAX_BYTES = 8 * 2**20

#: HDF5 chunk cache per variable when netCDF4 cannot be asked [B] (netCDF-C 4.9+ default).
DEFAULT_CHUNK_CACHE_BYTES = 64 * 2**20

_GIB = 2**30


@functools.lru_cache(maxsize=1)
def chunk_cache_bytes() -> int:
    """Chunk cache netCDF gives each variable of a file it writes [B] (``netCDF4.get_chunk_cache``)."""
    try:
        import netCDF4
    except ImportError:
        return DEFAULT_CHUNK_CACHE_BYTES
    return int(netCDF4.get_chunk_cache()[0])


def writer_bytes(var_bytes: Mapping[str, int], frames: int, *, chunk_cache: int | None = None) -> int:
    """Peak memory of one :class:`hifi.run.output.FrameWriter` over a run [B].

    Parameters
    ----------
    var_bytes : mapping of str to int
        Bytes of each variable of one frame [B].
    frames : int
        Frames written.
    chunk_cache : int, optional
        HDF5 chunk cache per variable [B]; default :func:`chunk_cache_bytes`.

    Notes
    -----
    ``blocks + write copy + chunk caches``: a block closes at
    ``n = min(frames, BUFFER_MAX_FRAMES, ceil(BUFFER_MAX_BYTES / frame))`` frames and is
    written by the netCDF thread while the next block fills, so up to ``min(frames, 2 n)``
    frames are held; the write stacks a block one variable at a time (a copy of ``n`` frames of
    the largest variable), and HDF5 keeps up to ``chunk_cache`` of every variable's written
    chunks until the file is closed. Measured with synthetic frames of 1 to 4 variables of 40 kB to 64 MB
    (benchmarks/calibrate_memory.py --writer): within 15 % up to 16 MB per variable, an
    overestimate of 34 % at 64 MB.
    """
    sizes = [int(b) for b in var_bytes.values()]
    frame = sum(sizes)
    if frames <= 0 or frame <= 0:
        return 0
    cache = chunk_cache_bytes() if chunk_cache is None else int(chunk_cache)
    n = min(int(frames), BUFFER_MAX_FRAMES, max(1, math.ceil(BUFFER_MAX_BYTES / frame)))
    return min(int(frames), 2 * n) * frame + n * max(sizes) + sum(min(cache, frames * b) for b in sizes)


@dataclass(frozen=True)
class ModelEstimate:
    """What one model costs over a run (from :meth:`hifi.api.model.Model.estimate`).

    Attributes
    ----------
    name, model : str
        The model's name in the scenario and its registered model name.
    frames : int
        Events over the run (frames written).
    rays_per_frame : int
        Rays cast per frame (0 for models that cast none).
    var_bytes : mapping of str to int
        Bytes of each output variable of one frame [B], before compression.
    setup_bytes : int
        Arrays held from ``setup`` to the end of the run [B].
    working_bytes : int
        Extra memory while one frame is computed [B].
    writes_dataset : bool
        Whether the model writes a file (then its writer's memory counts).
    """

    name: str
    model: str
    frames: int
    rays_per_frame: int
    var_bytes: Mapping[str, int]
    setup_bytes: int
    working_bytes: int
    writes_dataset: bool = True
    beam_kernel: bool = False          #: runs the compiled divergent-beam receiver (numba)

    @property
    def frame_bytes(self) -> int:
        """Bytes of one frame's variables [B]."""
        return int(sum(self.var_bytes.values()))

    @property
    def output_bytes(self) -> int:
        """Bytes the run writes for this model before compression [B] (0 if it writes none)."""
        if not self.writes_dataset:
            return 0
        return self.frames * (self.frame_bytes + FRAME_INDEX_BYTES)

    @property
    def writer_bytes(self) -> int:
        """Memory of this model's netCDF writer [B] (:func:`writer_bytes`)."""
        if not self.writes_dataset:
            return 0
        return writer_bytes(self.var_bytes, self.frames)

    @property
    def held_bytes(self) -> int:
        """Memory held for the whole run: setup arrays and the writer [B]."""
        return self.setup_bytes + self.writer_bytes

    @property
    def memory_bytes(self) -> int:
        """This model's share of the peak: held memory plus its working memory [B]."""
        return self.held_bytes + self.working_bytes


@dataclass(frozen=True)
class RunEstimate:
    """Peak memory and output size of a whole run (:meth:`hifi.Simulation.estimate`).

    Attributes
    ----------
    models : tuple of ModelEstimate
        Every model, the scenario's sensors first, then added models and ``motion``.
    scene_bytes : int
        Meshes and BVHs [B].
    base_bytes : int
        The process before any model [B] (:data:`BASE_PROCESS_BYTES`).
    in_memory : bool
        Whether the results are returned in memory (``run(out=None)``): then the output is
        held too.
    """

    models: tuple
    scene_bytes: int
    base_bytes: int = BASE_PROCESS_BYTES
    in_memory: bool = False
    duration_s: float | None = None     #: simulated span the estimate is for [s]

    @property
    def output_bytes(self) -> int:
        """Bytes of every file's variables before compression [B]."""
        return sum(m.output_bytes for m in self.models)

    @property
    def peak_bytes(self) -> int:
        """Estimated peak resident memory of the run [B] (module docstring)."""
        working = max((m.working_bytes for m in self.models), default=0)
        peak = (self.base_bytes + self.kernel_bytes + self.scene_bytes + sum(m.held_bytes for m in self.models)
                + working)
        return peak + (self.output_bytes if self.in_memory else 0)

    @property
    def rays(self) -> int:
        """Rays the whole run casts [1]."""
        return sum(m.frames * m.rays_per_frame for m in self.models)

    @property
    def kernel_bytes(self) -> int:
        """:data:`KERNEL_RSS_BYTES` if the run loads numba, else 0 [B]: it casts rays (the
        caster's passes are compiled kernels, :mod:`hifi.kernels`) or a model runs the
        divergent-beam receiver (``n_subrays`` > 1, ``average`` edge returns, ``sick_lms291``)."""
        beam = any(m.beam_kernel for m in self.models)
        return KERNEL_RSS_BYTES if self.rays > 0 or beam else 0

    def largest(self) -> ModelEstimate | None:
        """The model with the largest share of the peak."""
        return max(self.models, key=lambda m: m.memory_bytes, default=None)


def scene_bytes(scene) -> int:
    """Memory of a scene's meshes and BVHs [B]: per-triangle factors for static and moving objects,
    and the textures of scene-file parts (``SceneObject.texture``: the decoded images and the
    face maps, each array once however many parts share it)."""
    total = 0
    seen: set[int] = set()
    for obj in scene.objects:
        per = MOVING_SCENE_BYTES_PER_FACE if scene.is_moving(obj.name) else SCENE_BYTES_PER_FACE
        total += per * len(obj.faces)
        texture = getattr(obj, "texture", None)
        for arr in (texture.arrays() if texture is not None else ()):
            if id(arr) not in seen:
                seen.add(id(arr))
                total += int(arr.nbytes)
    return total


def estimate_run(models, scene, duration_s: float, *, in_memory: bool = False) -> RunEstimate:
    """:class:`RunEstimate` of ``models`` (instances, before ``setup``) over ``duration_s`` [s]."""
    return RunEstimate(tuple(m.estimate(duration_s) for m in models), scene_bytes(scene), in_memory=in_memory,
                       duration_s=float(duration_s))


# -- the memory this process can use -----------------------------------------------------------

def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _sysconf_available() -> int | None:
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def _psutil_available() -> int | None:
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def _cgroup_headroom() -> int | None:
    """Memory left under this process's cgroup v2 limit [B], None without one."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as f:
            current = int(f.read().strip())
        return max(int(limit) - current, 0)
    except (OSError, ValueError):
        return None


def available_memory_bytes() -> int | None:
    """Memory the system can still give this process [B], or None when it cannot be known.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux 3.14+: free memory plus the page cache and
    reclaimable slabs that can be dropped), else ``os.sysconf`` free physical pages (which
    ignores the page cache, so it is lower), else ``psutil.virtual_memory().available`` when
    psutil is installed; the lower of that and the headroom under a cgroup v2 ``memory.max``
    (a container's limit).
    """
    avail = _meminfo_available()
    if avail is None:
        avail = _sysconf_available()
    if avail is None:
        avail = _psutil_available()
    headroom = _cgroup_headroom()
    if headroom is not None:
        avail = headroom if avail is None else min(avail, headroom)
    return avail


def memory_budget_bytes() -> int | None:
    """Memory a run in this process can reach at its peak [B]: what it holds now plus what is available."""
    avail = available_memory_bytes()
    return None if avail is None else avail + process_rss_bytes()


def format_bytes(n: float) -> str:
    """``1.5 GiB``, ``320.0 MiB``, ``12.0 kiB``, ``512 B``."""
    n = float(n)
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("kiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


# -- the check ---------------------------------------------------------------------------------

def check_memory(sim, est: RunEstimate, budget: int | None = None) -> None:
    """Refuse a run whose estimated peak exceeds the memory available, naming the key to change.

    Parameters
    ----------
    sim : hifi.Simulation
        The loaded scenario (for the file, the keys and their lines).
    est : RunEstimate
        Its estimate.
    budget : int, optional
        Memory the run may reach [B]; default :func:`memory_budget_bytes`. When it cannot be
        known nothing is refused.

    Raises
    ------
    hifi.ScenarioError
        Naming the largest consumer's size parameter (``sensors[i].params.resolution_x``, or
        the largest mesh), the memory it needs, the run's peak, the memory available and what
        to change.
    """
    from .params import Validator

    budget = memory_budget_bytes() if budget is None else budget
    peak = est.peak_bytes
    if budget is None or peak <= budget:
        return
    sc = sim.scenario
    v = Validator(sc.source, sc.text)
    tail = (f"the run needs about {format_bytes(peak)} at its peak, more than the "
            f"{format_bytes(budget)} available")
    big = est.largest()
    if big is not None and big.memory_bytes >= est.scene_bytes:
        specs = {s.name: s for s in sc.sensors}
        spec = specs.get(big.name)
        model = next((m for m in sim.models if m.name == big.name), None)
        size_params = dict(getattr(model, "SIZE_PARAMS", {}) or {})
        per_ray = f" ({big.rays_per_frame:,} rays x ~{big.memory_bytes / big.rays_per_frame:.0f} B)" \
            if big.rays_per_frame else ""
        reason = f"a frame of {big.name!r} needs about {format_bytes(big.memory_bytes)}{per_ray}; {tail}"
        if big.name == "motion":
            raise v.error(f"{reason}; lower the rate", key="output.motion_rate_hz", value=sc.motion_rate_hz)
        if spec is None or not size_params:
            raise v.error(reason + "; make its frames smaller")
        advice = "; ".join(f"{how} " + " / ".join(p for p, h in size_params.items() if h == how)
                           for how in dict.fromkeys(size_params.values()))
        key, value, first = _size_driver(sc, spec, model, big, size_params, est.duration_s)
        raise v.error(f"{reason}; {first + '; ' if first else ''}{advice}", key=key, value=value)
    obj = max(sim.scene.objects, key=lambda o: len(o.faces))
    spec = next(s for s in sc.objects if obj.name in s.object_names)     # a part's object entry
    raise v.error(f"the scene's triangles need about {format_bytes(est.scene_bytes)} ({len(obj.faces):,} in "
                  f"{obj.name!r}, ~{SCENE_BYTES_PER_FACE} B each); {tail}; use a coarser mesh",
                  key=f"objects[{spec.index}].mesh", value=spec.mesh)


# -- the disk check ----------------------------------------------------------------------------

def disk_free_bytes(path) -> tuple[int | None, "os.PathLike | None"]:
    """Free space of the file system that will hold ``path`` [B], and the existing directory
    it was measured at (``path`` itself or its nearest existing parent); ``(None, None)`` when
    it cannot be known."""
    import shutil
    from pathlib import Path
    p = Path(path).absolute()
    for candidate in (p, *p.parents):
        if candidate.exists():
            try:
                return int(shutil.disk_usage(candidate).free), candidate
            except OSError:
                return None, None
    return None, None


def check_disk(sim, est: RunEstimate, out, *, ignore: bool = False) -> None:
    """Refuse a run whose estimated output exceeds the free space where it is written.

    Parameters
    ----------
    sim : hifi.Simulation
        The loaded scenario (its file names the error).
    est : RunEstimate
        Its estimate; :attr:`RunEstimate.output_bytes` is compared.
    out : path-like
        Where the files go (the output directory, or the temporary directory of an in-memory
        run); its nearest existing parent's file system is measured (``shutil.disk_usage``).
    ignore : bool
        Do not refuse (``hifi run --ignore-disk-space``).

    Raises
    ------
    hifi.ScenarioError
        At ``--out``, naming the output estimate, the free space and the directory measured.

    Notes
    -----
    The estimate is before compression. netCDF's zlib keeps 30-70 % of float data and a few
    % of masks and ids, so it overestimates what is written, by up to about 3x for range
    data; there is no lower bound that holds for every scene (a frame of misses compresses to
    almost nothing). The check refuses with the uncompressed estimate, says so, and names the
    flag that goes on anyway: a run that would fill the disk after hours is worse than one
    refused at once that the user can restart with the flag.
    """
    if ignore or est.output_bytes <= 0:
        return
    free, measured = disk_free_bytes(out)
    if free is None or est.output_bytes <= free:
        return
    from ..errors import ScenarioError
    sc = sim.scenario
    raise ScenarioError(f"the run writes about {format_bytes(est.output_bytes)} before compression, more than the "
                        f"{format_bytes(free)} free on the file system holding it (at {measured}); netCDF "
                        f"compression usually keeps 30-70 % of it: shorten the duration or the sensors' "
                        f"output, write elsewhere, or go on with --ignore-disk-space",
                        file=sc.source, key="--out", value=str(out))


def disk_line(est: RunEstimate, path=".") -> str:
    """What ``hifi info`` says of the disk: the output before compression against the free space
    at ``path`` (default the current directory), and whether ``hifi run`` would refuse."""
    free, measured = disk_free_bytes(path)
    if free is None:
        return f"output {format_bytes(est.output_bytes)} before compression; free disk space unknown"
    verdict = ("hifi run --out there would refuse it (--ignore-disk-space goes on)" if est.output_bytes > free
               else "fits")
    return (f"output {format_bytes(est.output_bytes)} before compression, {format_bytes(free)} free at "
            f"{measured}: {verdict}")


def generated_scene_bytes(sc) -> tuple[int, list]:
    """Peak memory of building a scenario's scene [B], before any mesh is built, and per object
    ``(spec, triangles, held, build)``.

    A generated mesh's triangles come from its parameters (:func:`hifi.api.meshes.generator_faces`);
    a mesh file's from the mesh read while validating (a file loaded with parts: all its parts'
    triangles, ``hifi.run.scene_parts.PartSpec.n_faces``). Each object then holds
    :data:`SCENE_BYTES_PER_FACE` (:data:`MOVING_SCENE_BYTES_PER_FACE` with a track, a parent or
    a vehicle) per triangle, and a generator needs
    :data:`hifi.api.meshes.BUILD_BYTES_PER_FACE` per triangle while it runs; the peak is the process,
    everything held, and the largest build on top (objects are built one after another).
    """
    from . import meshes
    rows = []
    for spec in sc.objects:
        if spec.mesh in meshes.GENERATORS:
            n = meshes.generator_faces(spec.mesh, spec.mesh_params)
            build = n * meshes.BUILD_BYTES_PER_FACE.get(spec.mesh, meshes.DEFAULT_BUILD_BYTES_PER_FACE)
        elif spec.parts is not None:
            n, build = sum(p.n_faces for p in spec.parts), 0
        else:
            mesh = spec.loaded_mesh
            n, build = (0 if mesh is None else len(mesh.faces)), 0
        moving = spec.track is not None or spec.parent is not None or spec.vehicle is not None
        held = n * (MOVING_SCENE_BYTES_PER_FACE if moving else SCENE_BYTES_PER_FACE)
        if spec.parts is not None:                # decoded textures and texture coordinates
            held += sum(getattr(p, "texture_bytes", 0) for p in spec.parts)
        rows.append((spec, n, held, build))
    peak = BASE_PROCESS_BYTES + sum(r[2] for r in rows) + max((r[3] for r in rows), default=0)
    return peak, rows


def check_scene_memory(sc, budget: int | None = None) -> None:
    """Refuse a scenario whose meshes cannot be built in the memory available, before any is.

    Parameters
    ----------
    sc : hifi.run.scenario.Scenario
        The validated scenario.
    budget : int, optional
        Memory the process may reach [B]; default :func:`memory_budget_bytes`. When it cannot
        be known nothing is refused.

    Raises
    ------
    hifi.ScenarioError
        Naming the object's key that drives its size and that the file gives (a terrain's
        ``objects[i].resolution_m``, a tree's ``objects[i].leaf_area_density``), its value, the
        triangles and memory it needs, the memory available and what to change (a mesh file:
        ``objects[i].mesh``).

    Notes
    -----
    A 2 km terrain at 5 cm has 3.2e9 triangles; without this check numpy raised MemoryError
    when the generator asked for its first array (12 GiB of noise), and a 100 km terrain at
    1 cm or a tree of leaf area density 1e6 likewise ended in a traceback.
    """
    from . import meshes
    from .params import Validator

    budget = memory_budget_bytes() if budget is None else budget
    if budget is None:
        return
    peak, rows = generated_scene_bytes(sc)
    if peak <= budget or not rows:
        return
    spec, n, held, build = max(rows, key=lambda r: r[2] + r[3])
    v = Validator(sc.source, sc.text)
    reason = (f"{spec.mesh} {spec.name!r} would have {n:,} triangles, about {format_bytes(held + build)} to build "
              f"and hold; the scene needs about {format_bytes(peak)}, more than the {format_bytes(budget)} available")
    size_params = meshes.SIZE_PARAMS.get(spec.mesh)
    if not size_params:
        raise v.error(f"{reason}; use a coarser mesh", key=f"objects[{spec.index}].mesh", value=spec.mesh)
    raw = (sc.raw.get("objects", [{}])[spec.index] if sc.raw else {}) or {}
    gen = meshes.GENERATORS[spec.mesh][1]
    name = None
    for p in (p for p in size_params if p in raw and not gen[p].required and gen[p].default is not None):
        try:
            fewer = meshes.generator_faces(spec.mesh, {**spec.mesh_params, p: gen[p].default})
        except ValueError:        # nothing at the default (an OSM radius with no building in it)
            continue
        if fewer <= n / 2:
            name = p
            break
    if name is None:
        name = next((p for p in size_params if p in raw), next(iter(size_params)))
    advice = "; ".join(f"{how} " + " / ".join(p for p, h in size_params.items() if h == how)
                       for how in dict.fromkeys(size_params.values()))
    value = spec.mesh_params.get(name)
    raise v.error(f"{reason}; {advice}", key=f"objects[{spec.index}].{name}",
                  value=list(value) if isinstance(value, tuple) else value)


def _size_driver(sc, spec, model, big: ModelEstimate, size_params: Mapping[str, str], duration_s):
    """The key of ``spec`` (a sensor the scenario states) that makes ``big`` large: ``(key,
    value, advice)``.

    Candidates are the keys the scenario file gives: the model's :attr:`~hifi.api.model.Model.SIZE_PARAMS`
    in its ``params`` (in that order) and its ``rate_hz`` (a rotating lidar's firing cycle is
    fixed, so its rate sets the pulses per rotation). Each in turn is set back to its default in
    a copy of the model; the first whose default at least halves the model's memory is named
    (else the one that shrinks it most), with a line of advice for the rate. When none is given (or none shrinks it) the first given size parameter, else the
    first size parameter, is named as before, without extra advice.
    """
    raw = (sc.raw.get("sensors", [{}])[spec.index] if sc.raw else {}) or {}
    given = raw.get("params") or {}
    fallback = next((p for p in size_params if p in given), next(iter(size_params)))
    fallback = (f"sensors[{spec.index}].params.{fallback}", spec.params[fallback], "")
    if model is None or duration_s is None:
        return fallback
    cls = spec.model_cls
    trials = [(p, {**spec.params, p: cls.PARAMS[p].default}, spec.rate_hz)
              for p in size_params if p in given and p in cls.PARAMS]
    if "rate_hz" in raw and spec.rate_hz is not None and spec.rate_hz != cls.default_rate_hz:
        trials.append(("rate_hz", spec.params, None))
    best, best_bytes = None, big.memory_bytes
    for name, params, rate in trials:
        try:
            smaller = cls(spec.name, params, rate_hz=rate).estimate(duration_s).memory_bytes
        except (ValueError, TypeError, KeyError, ArithmeticError):   # a default that other params exclude
            continue
        if smaller < best_bytes:
            best, best_bytes = name, smaller
        if best_bytes <= big.memory_bytes / 2:        # the first key that alone halves it is named
            break
    if best is None:
        return fallback
    if best == "rate_hz":
        how = "raise" if cls.default_rate_hz > spec.rate_hz else "lower"
        return (f"sensors[{spec.index}].rate_hz", spec.rate_hz,
                f"{how} rate_hz (a frame is one period of it; at the default {cls.default_rate_hz:g} Hz it "
                f"needs about {format_bytes(best_bytes)})")
    return f"sensors[{spec.index}].params.{best}", spec.params[best], ""
