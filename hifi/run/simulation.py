"""The orchestrator: builds the scene, the caster and the models, and runs them in time.

    sim = hifi.load("scenario.toml")
    results = sim.run(out="run1")       # dict: sensor name -> xarray.Dataset
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from .. import kernels

from ..api import meshes

from . import scenario as _scenario
from ..api.bus import MessageBus, PoseMessage
from ..caster import RayCaster
from .checks import warn_scene
from ..errors import ModelError, OutputError, ScenarioError
from ..api.estimate import check_memory, format_bytes as _fmt, steady_heap
from ..runtime.interrupt import note_time
from ..api.model import Model, RunContext, Var
from ..world.motion import Pose, Track, oriented_boxes
from .output import FrameWriter, base_attrs, check_output_dir, write_run_marker
from .resume import identity as resume_identity, plan as resume_plan, write_identity as write_resume_identity
from .reading import open_output
from .zarr_output import ZarrFrameWriter, finish_store, model_chunk_frames, written_frames
from ..runtime.progress import PROGRESS_DELAY_S, Progress  # noqa: F401  (PROGRESS_DELAY_S: kept importable here)
from ..runtime.safety import umask
from ..world.scene import Scene
from ..runtime.threads import ThreadBudget, resolve_threads, single_threaded_blas
from .timemanager import TimeManager, set_up

#: A netCDF error while the file system holding the output has less free space than this is
#: reported with the free space (a frame block of :data:`hifi.api.estimate.BUFFER_MAX_BYTES` may not
#: fit) [bytes].
LOW_DISK_BYTES = 64 * 2**20

#: File present in an output directory while it is being written; removed just before the
#: directory is moved into place, so a run killed half-way (an MPI job aborted by another rank)
#: leaves ``.NAME.partial-*`` holding this file, never a directory that looks finished.
INCOMPLETE_MARKER = "INCOMPLETE"


class MotionRecorder(Model):
    """Ground truth of every object and sensor at a fixed rate (``motion.nc``).

    BlenSor's motion-data export: per time step, each body's position [m] and orientation
    (quaternion x, y, z, w and roll/pitch/yaw [deg] about the parent's x, y, z axes) in the scene frame,
    its velocity [m/s] and angular velocity [rad/s], and per object an oriented 3-D bounding
    box (``box_center``, ``box_size``, ``box_yaw``; :func:`hifi.world.motion.oriented_boxes`) from
    the mesh's own bounds in its body frame, whose semantic class is ``object_class``. The
    coordinate ``body_parent`` names each body's parent ("" for the scene), so a reader can
    rebuild the pose tree (the ROS 2 export's ``/tf``). Each pose is also published on the
    message bus as a :class:`~hifi.api.bus.PoseMessage`.
    """

    model_name = "motion"
    priority = -1

    def __init__(self, scene: Scene, rate_hz: float):
        super().__init__("motion", {}, rate_hz=rate_hz)
        self.scene = scene
        self.names = list(scene.bodies)
        self._object_rows = np.array([self.names.index(o.name) for o in scene.objects], dtype=int)
        self._bounds = np.array([o.bounds if o.n_faces else np.full((2, 3), np.nan)
                                 for o in scene.objects], dtype=float).reshape(-1, 2, 3)

    def coords(self):
        kinds = np.array([self.scene.bodies[n].kind for n in self.names])
        parents = np.array([self.scene.bodies[n].parent or "" for n in self.names])
        c = {
            "body": Var(("body",), np.array(self.names), "1", "name of the object or sensor"),
            "body_kind": Var(("body",), kinds, "1", "object or sensor"),
            "body_parent": Var(("body",), parents, "1", "name of the body this one rides on; '' for the scene"),
            "xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1", "scene-frame axis (x east, y north, z up)"),
            "quat": Var(("quat",), np.array(["x", "y", "z", "w"]), "1", "quaternion component"),
            "rpy": Var(("rpy",), np.array(["roll", "pitch", "yaw"]), "1", "rotation about x, y, z"),
        }
        if self.scene.objects:
            c["lwh"] = Var(("lwh",), np.array(["length", "width", "height"]), "1",
                           "box extent along its heading, across it, and vertically")
        return c

    def frame_layout(self):
        n, f8 = len(self.names), np.dtype(np.float64)
        out = {"time": ((), f8), "position": ((n, 3), f8), "orientation": ((n, 4), f8), "rpy_deg": ((n, 3), f8),
               "velocity": ((n, 3), f8), "angular_velocity": ((n, 3), f8)}
        m = len(self.scene.objects)
        if m:
            out.update(box_center=((m, 3), f8), box_size=((m, 3), f8), box_yaw=((m,), f8))
        return out

    def _velocities(self, t):
        """Velocity [m/s] and angular velocity [rad/s] of every body, scene axes, (n, 3) each:
        :meth:`Scene.kinematics_at` (each body's motion differentiated analytically and carried
        up its parent chain; a linear track's segment rates, taken from the segment that starts
        at a keyframe)."""
        kin = [self.scene.kinematics_at(name, t) for name in self.names]
        return (np.array([k.velocity for k in kin], dtype=float).reshape(-1, 3),
                np.array([k.angular_rate for k in kin], dtype=float).reshape(-1, 3))

    def step(self, k, t):
        poses = [self.scene.pose_at(n, t) for n in self.names]
        pos = np.array([p.translation for p in poses]).reshape(-1, 3)
        quat = np.array([p.rotation.as_quat() for p in poses]).reshape(-1, 4)
        if self.ctx is not None:
            for name, p, q in zip(self.names, pos, quat):
                self.ctx.bus.publish(PoseMessage(self.name, t, body=name, position_m=tuple(p),
                                                 quaternion_xyzw=tuple(q)))
        # gimbal lock at pitch +-90 deg is expected, not an error: scipy's warning of it is
        # filtered for the whole run (_run_into; a filter set here would not be thread-safe)
        rpy = np.array([p.rotation.as_euler("xyz", degrees=True) for p in poses]).reshape(-1, 3)
        vel, omega = self._velocities(t)
        out = {
            "time": Var((), np.float64(t), "s", "time since simulation start"),
            "position": Var(("body", "xyz"), pos, "m", "position of the body origin, scene frame"),
            "orientation": Var(("body", "quat"), quat, "1", "orientation quaternion body -> scene (x, y, z, w)"),
            "rpy_deg": Var(("body", "rpy"), rpy, "degree",
                           "roll, pitch, yaw about the scene x, y, z axes (extrinsic xyz)"),
            "velocity": Var(("body", "xyz"), vel, "m s-1", "velocity of the body origin, scene frame"),
            "angular_velocity": Var(("body", "xyz"), omega, "rad s-1",
                                    "angular velocity of the body, scene axes"),
        }
        if len(self._object_rows):
            rows = self._object_rows
            center, size, yaw = oriented_boxes(self._bounds, Pose(Rotation.from_quat(quat[rows]), pos[rows]))
            out.update({
                "box_center": Var(("object", "xyz"), center, "m",
                                  "centre of the object's oriented bounding box, scene frame"),
                "box_size": Var(("object", "lwh"), size, "m",
                                "length, width, height of the object's oriented bounding box"),
                "box_yaw": Var(("object",), yaw, "rad",
                               "heading of the bounding box about the scene z axis, from x toward y"),
            })
        return out


def build_scene(sc: _scenario.Scenario) -> Scene:
    """Scene (meshes, materials, pose tree) of a validated scenario; sensors become bodies.

    Raises
    ------
    hifi.ScenarioError
        Before any mesh is built, when the meshes cannot fit in the memory available
        (:func:`hifi.api.estimate.check_scene_memory`); and naming the object when building its mesh
        runs out of memory all the same (numpy's ``MemoryError``).
    """
    from ..api.estimate import check_scene_memory
    check_scene_memory(sc)                        # before the first generator allocates anything
    scene = Scene()
    for material in sc.materials.values():      # the scenario's own, then the library's it uses
        scene.add_material(material)
    for material in sc.part_materials.values():   # derived from scene files' own materials
        scene.add_material(material)
    for spec in sc.objects:
        if spec.parts is not None:
            mesh = None                           # the parts hold the meshes
        elif spec.loaded_mesh is not None:          # read once, while validating; handed over, so
            mesh, spec.loaded_mesh = spec.loaded_mesh, None    # the scene alone holds it
        elif spec.mesh_path is not None:
            mesh = meshes.load_mesh_file(spec.mesh_path, spec.mesh_params["scale"])
        else:
            try:
                mesh = meshes.build_generator(spec.mesh, spec.mesh_params)
            except MemoryError:
                raise _out_of_memory(sc, f"objects[{spec.index}].mesh", spec.mesh,
                                     f"building {spec.mesh} {spec.name!r}") from None
            except ScenarioError as exc:          # what only the data shows: a DEM whose samples are all no-data
                raise _scenario.located(sc, ScenarioError(exc.reason, key=f"objects[{spec.index}].{exc.key}",
                                                          value=exc.value)) from None
        if spec.vehicle is not None:
            from ..world.vehicle import DYNAMIC_SPEED_BOUND, VehicleTrack
            bound = spec.vehicle["max_speed_m_s"] * (DYNAMIC_SPEED_BOUND if spec.vehicle["model"] == "dynamic" else 1.0)
            local = VehicleTrack(spec.position_m, np.radians(spec.rpy_deg[2]), spec.vehicle["wheelbase_m"],
                                 reach_m=bound * sc.duration_s,
                                 max_accel_m_s2=spec.vehicle["max_accel_m_s2"],
                                 max_speed_m_s=spec.vehicle["max_speed_m_s"], speed_bound_m_s=bound)
        elif spec.track is not None:
            local = Track([f["t_s"] for f in spec.track], [f["position_m"] for f in spec.track],
                          [f["rpy_deg"] for f in spec.track], interpolation=spec.interpolation)
        else:
            local = Pose.from_position_rpy(spec.position_m, spec.rpy_deg)
        if spec.parts is None:
            scene.add_object(spec.name, mesh, spec.material, local, spec.parent)
            continue
        # A scene file with parts: the object is a body, each node of the file a body riding on
        # it (or on its parent node) with the node's pose, and each node with triangles an object.
        scene.add_body(spec.name, "object", local, spec.parent)
        part_meshes = [p.mesh for p in spec.parts]
        if any(p.n_faces and p.mesh is None for p in spec.parts):   # handed to an earlier scene
            from ..world.scene_files import read_scene_file
            part_meshes = [n.mesh for n in read_scene_file(spec.mesh_path, spec.mesh_params["scale"]).nodes]
        # One scipy call for every node's rotation, then indexed: the same quaternions as one call
        # per node, without scipy's fixed cost per call (about 0.1 ms, most of this loop's time
        # for a file of thousands of nodes).
        rotations = Rotation.from_matrix(np.stack([p.rotation for p in spec.parts]))
        for k, (part, mesh) in enumerate(zip(spec.parts, part_meshes)):
            part.mesh = None                          # handed over: the scene alone holds it
            pose = Pose(rotations[k], np.asarray(part.translation, dtype=float))
            if mesh is None:
                scene.add_body(part.name, "object", pose, part.parent)
            else:
                obj = scene.add_object(part.name, mesh, part.material, pose, part.parent, class_name=part.class_name)
                if part.texture is not None:          # over the object's own (whole) mesh arrays
                    obj.texture = part.texture.bind(obj.vertices, obj.faces)
    for spec in sc.sensors:
        scene.add_body(spec.name, "sensor", Pose.from_position_rpy(spec.position_m, spec.rpy_deg), spec.parent)
    return scene


def _out_of_memory(sc: _scenario.Scenario, key: str | None, value, what: str) -> ScenarioError:
    """The one-line error for a ``MemoryError`` the estimate did not foresee: what ran out, the
    memory available now, at ``key`` of the scenario (its file and line)."""
    from ..api.estimate import available_memory_bytes, format_bytes
    avail = available_memory_bytes()
    free = f"{format_bytes(avail)} available now" if avail is not None else "available memory unknown"
    exc = ScenarioError(f"out of memory while {what} ({free}); make the scenario smaller", key=key,
                        value=value if key is not None else ScenarioError._MISSING)
    return _scenario.located(sc, exc)


class Simulation:
    """A loaded scenario, ready to run.

    Use :func:`hifi.load` for a file or :meth:`from_dict` for a scenario built in code.
    """

    def __init__(self, sc: _scenario.Scenario):
        self.scenario = sc
        self.scene = build_scene(sc)
        self.models: list[Model] = [
            spec.model_cls(spec.name, spec.params, rate_hz=spec.rate_hz) for spec in sc.sensors
        ]
        # The closed loop: a Vehicle model per driven body, then the [[models]] (drivers, filters).
        from ..world.vehicle import Vehicle
        for spec in sc.objects:
            if spec.vehicle is not None:
                self.models.append(Vehicle(spec.name, spec.vehicle, self.scene.bodies[spec.name].local))
        self.models += [spec.model_cls(spec.name, spec.params, rate_hz=spec.rate_hz) for spec in sc.models]
        self.extra_models: list[Model] = []
        for model in self.models:
            try:
                model.check_scene(self.scene)             # e.g. an IMU needs a twice-differentiable mount
            except ScenarioError as exc:
                raise (exc if exc.file is not None else _scenario.located(sc, exc)) from None
        warn_scene(sc, self.scene, self.models)       # ScenarioWarning: sensors inside bodies, zero-area faces
        from ..api.estimate import trim_heap
        trim_heap()                  # the pages freed by the mesh readers and checks (hifi.api.estimate.trim_heap)

    @classmethod
    def from_dict(cls, d: dict, base_dir=".") -> "Simulation":
        """Scenario from nested dicts (the TOML structure); paths are relative to ``base_dir``."""
        return cls(_scenario.validate(d, base_dir=base_dir))

    @classmethod
    def from_file(cls, path) -> "Simulation":
        return cls(_scenario.load(path))

    def estimate(self, duration_s: float | None = None, *, in_memory: bool = False):
        """Peak memory and output size of a run, before it starts (:mod:`hifi.api.estimate`).

        Parameters
        ----------
        duration_s : float, optional
            Simulated span [s]; default the scenario's.
        in_memory : bool
            Results returned in memory (``run(out=None)``): the output counts as memory too.

        Returns
        -------
        hifi.api.estimate.RunEstimate
        """
        from ..api.estimate import estimate_run
        duration = self.scenario.duration_s if duration_s is None else float(duration_s)
        motion = MotionRecorder(self.scene, self.scenario.motion_rate_hz)
        return estimate_run([*self.models, *self.extra_models, motion], self.scene, duration,
                            in_memory=in_memory)

    def add_model(self, model: Model) -> Model:
        """Add a model built in code (it runs after the scenario's sensors at equal times)."""
        self.extra_models.append(model)
        return model

    def run(self, out=None, *, seed: int | None = None, duration_s: float | None = None,
            overwrite: bool = False, progress: bool | None = None, caster: RayCaster | None = None,
            keep=None, write: bool = True, partition=None, ignore_disk_space: bool = False,
            output_format: str | None = None, resume: bool = False, live=None,
            threads: int | None = None) -> dict[str, Any]:
        """Run every model over the simulated interval; return the results as datasets.

        Parameters
        ----------
        out : path-like, optional
            Output directory: ``<sensor>.nc`` (or ``<sensor>.zarr``) per model, ``motion.nc``,
            ``scenario.toml``. It must not exist unless ``overwrite``. Files are written into a
            temporary sibling ``.NAME.partial-*`` and moved into place at the end, so a failed
            or interrupted run never leaves a directory that looks finished. With
            ``out=None`` results are returned in memory (through a temporary directory that
            is deleted).
        seed : int, optional
            Overrides ``[simulation] seed``.
        duration_s : float, optional
            Overrides ``[simulation] duration_s`` [s].
        overwrite : bool
            Replace an existing output directory.
        progress : bool, optional
            Report progress on stderr (:class:`hifi.runtime.progress.Progress`): None (default) a bar on
            a terminal once the run takes a few seconds, else a plain line every 10 s; True a
            bar at once; False nothing.
        caster : RayCaster, optional
            Ray caster to use (default: one over the whole scene).
        keep : callable, optional
            ``keep(model_index, k)``: whether this process computes event ``k`` of a model.
        write : bool
            Whether this process writes files (False: nothing is written anywhere, not even
            a temporary directory, and ``{}`` is returned).
        partition : object, optional
            Hooks of a partitioned (MPI) run, used by the ``mpi`` package (see
            :class:`mpi.runner.Partition`): ``directory`` (the temporary directory every rank
            writes into, made by the owner), ``owner`` (whether this process makes the
            stores and finishes the run) and ``resumed`` (whether the directory holds a
            stopped run's frames); ``start(models, progress, written)`` returns the ``keep``
            filter (or None), ``written`` mapping a model's index to the frames already
            written; ``ready()`` once the owner has made the stores; ``event(t)``
            after every event of the time manager (``t`` [s]); ``frame(i, k, t, frame)``
            whether this process writes a computed frame; ``written()`` once this process has
            written all its frames (before the owner finishes the run).
        ignore_disk_space : bool
            Run even when the estimated output (before compression) exceeds the free space
            of the file system that holds ``out`` (:func:`hifi.api.estimate.check_disk`).
        output_format : {"netcdf", "zarr"}, optional
            How the datasets are written (docs/outputs.md): netCDF files, the default of a
            serial run, or Zarr stores, which a partitioned run always writes and which a
            stopped run keeps so that ``resume`` can continue it.
        resume : bool
            Continue the unfinished run of ``out`` (:mod:`hifi.run.resume`; implies Zarr):
            the frames it wrote are kept, the others computed. Without one, the run starts;
            when ``out`` is already that finished run, nothing is computed.
        live : hifi.viz.live.LiveServer, optional
            Publish every frame while the run goes on to this Foxglove WebSocket server
            (docs/live.md; ``hifi.LiveServer("127.0.0.1:8765")``), which the run leaves open
            (one server for many runs or steps): any object with its ``begin``, ``frame`` and
            ``end``. The datasets and files are the same with and without it.
        threads : int, optional
            Threads the run computes on, >= 1 (docs/performance.md): model steps at the same
            time and the casts inside them share them; the results do not depend on it. Default
            ``HIFI_THREADS``, else ``[simulation] threads``, else the cores this process may run
            on (its CPU affinity). Ignored with ``caster`` (its own threads stand).

        Returns
        -------
        dict of str to xarray.Dataset
            One dataset per model that writes one (lazily opened from ``out`` when given).

        Raises
        ------
        hifi.ScenarioError
            Before anything is allocated or written: the estimated peak memory exceeds the
            memory available, or the estimated output the free disk space (unless
            ``ignore_disk_space``); ``resume`` of a directory of another run; ``live`` with
            a partitioned run, or not a live view.
        hifi.OutputError
            A file or directory could not be written (disk full, no permission, a netCDF
            error); the message names it as ``out/...``. A netCDF run leaves nothing behind; a
            Zarr run keeps its frames for ``resume``.
        KeyboardInterrupt
            Also :class:`hifi.runtime.interrupt.Interrupted` (SIGINT/SIGTERM under ``hifi run``), with
            ``t_s``, the simulated time of the last event started, and for a Zarr run
            ``kept_in``, the directory holding the frames written.
        """
        return self._execute(out, seed=seed, duration_s=duration_s, overwrite=overwrite, progress=progress,
                             caster=caster, keep=keep, write=write, partition=partition, open_results=True,
                             ignore_disk_space=ignore_disk_space, output_format=output_format, resume=resume,
                             live=live, threads=threads)

    def run_to_files(self, out, *, seed: int | None = None, duration_s: float | None = None,
                     overwrite: bool = False, progress: bool | None = None,
                     ignore_disk_space: bool = False, output_format: str | None = None,
                     resume: bool = False, live=None, threads: int | None = None) -> dict[str, Path]:
        """:meth:`run` into the directory ``out``, returning the path of each model's file
        (``<out>/<sensor>.nc`` or ``.zarr``) instead of opened datasets: no xarray import, what
        ``hifi run`` calls. Parameters, errors and files as :meth:`run`."""
        if out is None:
            raise ValueError("run_to_files: out is None; allowed: an output directory (or use run(out=None))")
        return self._execute(out, seed=seed, duration_s=duration_s, overwrite=overwrite, progress=progress,
                             caster=None, keep=None, write=True, partition=None, open_results=False,
                             ignore_disk_space=ignore_disk_space, output_format=output_format, resume=resume,
                             live=live, threads=threads)

    def check_disk(self, out, duration_s: float | None = None, *, ignore_disk_space: bool = False) -> None:
        """Refuse (:class:`hifi.ScenarioError`) a run into ``out`` whose estimated output, before
        compression, exceeds the free space of its file system (:func:`hifi.api.estimate.check_disk`);
        the MPI runners call it on the writing rank before the run."""
        from ..api.estimate import check_disk
        duration = self.scenario.duration_s if duration_s is None else float(duration_s)
        check_disk(self, self.estimate(duration), out, ignore=ignore_disk_space)

    def _execute(self, out, *, seed, duration_s, overwrite, progress, caster, keep, write, partition,
                 open_results: bool, ignore_disk_space: bool = False, output_format=None, resume=False,
                 live=None, threads=None):
        sc = self.scenario
        self.threads_used = None
        seed = sc.seed if seed is None else int(seed)
        duration = sc.duration_s if duration_s is None else float(duration_s)
        if duration <= 0:
            raise ScenarioError("expected a duration > 0 s", key="--duration", value=duration)
        shared = getattr(partition, "directory", None)              # every rank writes into it
        fmt = output_format_of(output_format, partitioned=shared is not None, resume=resume, out=out)
        ident = resume_identity(sc.text, seed, duration)
        out_dir = None if out is None else Path(out)
        partial = None
        if resume and shared is None:                                  # before the checks: maybe nothing to do
            partial, complete = resume_plan(out_dir, ident, INCOMPLETE_MARKER)
            if complete:
                return self._finished(out_dir, open_results)
        est = self.estimate(duration, in_memory=out is None and write)
        check_memory(self, est)                                        # before any allocation
        if write and shared is None:                                   # before any file
            from ..api.estimate import check_disk
            check_disk(self, est, out if out is not None else tempfile.gettempdir(), ignore=ignore_disk_space)
        kernels.warn_retired_env()
        if out_dir is not None and shared is None and partial is None:
            check_output_dir(out, overwrite)
        if live is not None:                                           # before any file
            if partition is not None:
                raise ScenarioError("a live view publishes the frames of one process; a partitioned (MPI) "
                                    "run has them on many", key="live", value=live)
            if not all(callable(getattr(live, name, None)) for name in ("begin", "frame", "end")):
                raise ScenarioError("expected a live view, hifi.LiveServer(\"[HOST:]PORT\")", key="live",
                                    value=live)
        owner = shared is None or partition.owner
        tmp_root = None
        keep_partial = False
        try:
            if write:
                if shared is not None:
                    tmp_root = Path(shared)
                elif partial is not None:
                    tmp_root = partial
                else:
                    tmp_root = make_partial(out_dir, ident if fmt == "zarr" else None)
                where = out_dir if out_dir is not None else tmp_root    # as the user knows it
                keep_partial = fmt == "zarr"                             # resumable: kept if the run stops

                def shown(path: Path) -> Path:
                    return where / path.relative_to(tmp_root)
            else:
                shown = None
            try:
                written = self._run_into(tmp_root, seed, duration, progress, caster, keep, write, partition,
                                         shown, fmt=fmt, owner=owner,
                                         resumed=partial is not None or getattr(partition, "resumed", False),
                                         live=live, threads=threads)
            except MemoryError:
                raise _out_of_memory(sc, None, None, f"running (estimated peak {_fmt(est.peak_bytes)})") from None
            except ModelError as exc:         # the time manager's wrap of a model's MemoryError
                if not isinstance(exc.__cause__, MemoryError):
                    raise
                raise _out_of_memory(sc, None, None, f"running (estimated peak {_fmt(est.peak_bytes)}): "
                                                     f"{exc}") from None
            if not write or not owner:
                keep_partial = True                                      # the owner finishes or keeps it
                return {}
            with _writing(where, tmp_root):
                (tmp_root / INCOMPLETE_MARKER).unlink()
                write_run_marker(tmp_root, [p.name for p in tmp_root.iterdir()])
            if out_dir is None:
                import xarray as xr
                results = {}
                for name, path in written.items():
                    with xr.open_dataset(path) as ds:
                        results[name] = ds.load()
                return results
            if out_dir.exists():
                check_output_dir(out_dir, overwrite)      # still a hifi output (checked again, just before)
                with _writing(out_dir, tmp_root):
                    shutil.rmtree(out_dir)
            with _writing(out_dir, tmp_root):
                os.chmod(tmp_root, 0o777 & ~umask())    # mkdtemp makes it private; give the usual mode
                tmp_root.rename(out_dir)
            keep_partial = False
            if not open_results:
                return {name: out_dir / path.name for name, path in written.items()}
            return {name: open_output(out_dir / path.name) for name, path in written.items()}
        except KeyboardInterrupt as exc:
            note_time(exc, 0.0)                      # stopped before the first event
            if keep_partial and owner and tmp_root is not None and tmp_root.exists():
                exc.kept_in = shown(tmp_root) if out_dir is None else out_dir.parent / tmp_root.name
            raise
        finally:
            if not keep_partial and tmp_root is not None and tmp_root.exists():
                shutil.rmtree(tmp_root, ignore_errors=True)

    def _finished(self, out_dir: Path, open_results: bool) -> dict:
        """The datasets of the finished run ``out_dir`` (``resume`` found nothing to do)."""
        from .output import RUN_MARKER
        names = [p for p in sorted(out_dir.iterdir()) if p.suffix in (".nc", ".zarr") and p.name != RUN_MARKER]
        if not open_results:
            return {p.stem: p for p in names}
        return {p.stem: open_output(p) for p in names}

    def dataset_attrs(self, model: Model, seed: int) -> dict:
        """The global attributes of ``model``'s dataset in a run with ``seed``."""
        sc = self.scenario
        return base_attrs(model.name, model.model_name, seed, sc.text, start_utc=sc.start_utc,
                          origin_lat_deg=sc.origin["lat_deg"], origin_lon_deg=sc.origin["lon_deg"],
                          origin_height_m=sc.origin["height_m"], rate_hz=model.rate_hz, **model.attrs())

    def session(self, out=None, *, observe=None, seed: int | None = None, duration_s: float | None = None,
                overwrite: bool = False, output_format: str | None = None, name: str = "session", live=None):
        """A run that advances when asked: a :class:`hifi.run.session.Session` (a context manager).

        ::

            with sim.session("out/drive", observe=["front"]) as s:
                while not s.finished:
                    obs = s.step(0.1)                    # frames published in the last 0.1 s
                    s.command("robot", speed_m_s=1.0, steer_deg=my_controller(obs))

        Parameters are those of :meth:`run` (``out=None``: no files); ``observe`` names the
        models whose frames each step returns (default: all that write a dataset), ``name``
        the session's own model, the sender of its commands, and ``live`` a
        :class:`hifi.LiveServer` that shows the run in Foxglove as it is stepped. Sessions and
        runs of one simulation may follow each other; each starts again from the scenario's
        start (driven vehicles back at their start poses).
        """
        from .session import Session
        return Session(self, out, observe=observe, seed=seed, duration_s=duration_s, overwrite=overwrite,
                       output_format=output_format, name=name, live=live)

    def _object_coords(self) -> dict:
        """``object_name`` / ``object_class`` of every object, written into every file."""
        from .dataset import object_coords
        classes = self.scene.object_table("class_id")[:-1]
        return object_coords(self.scene.object_names, [self.scene.class_names[c] for c in classes])

    def _run_into(self, directory: Path | None, seed, duration, progress, caster, keep, write,
                  partition=None, shown=None, *, fmt="netcdf", owner=True, resumed=False, live=None,
                  threads=None):
        sc = self.scenario
        bus = MessageBus()
        budget = None
        if caster is None:
            n, source = resolve_threads(threads, sc.threads, where=sc.source)
            budget = ThreadBudget(n)
            caster = RayCaster(self.scene, budget=budget)
        else:
            n, source = caster.n_threads, "caster"
        #: Threads of the last run and where the number came from (the run summary prints them).
        self.threads_used = (n, source)
        writers: dict[int, Any] = {}
        paths: dict[str, Path] = {}
        report = Progress(duration, progress)
        tm = None
        done = False
        try:
            ctx = RunContext(self.scene, caster, bus, seed, duration, sc.start_utc, dict(sc.origin), sc.base_dir,
                             weather=dict(sc.weather))
            motion = MotionRecorder(self.scene, sc.motion_rate_hz)
            models = [*self.models, *self.extra_models, motion]
            subscribers = set_up(models, ctx)
            # Frames a stopped run already wrote: read by every rank before any rank writes.
            written = {i: set(written_frames(directory / f"{m.name}.zarr").tolist())
                       for i, m in enumerate(models) if m.writes_dataset} if resumed and write else {}
            if partition is not None:
                keep = partition.start(models, report, written)
            if write and owner:
                with _writing(shown(directory / "scenario.toml"), directory):
                    (directory / "scenario.toml").write_text(sc.text, encoding="utf-8")

            def make_writers(owner_now: bool):
                for i, m in enumerate(models):
                    if not m.writes_dataset or not write:
                        continue
                    path = directory / (f"{m.name}.zarr" if fmt == "zarr" else f"{m.name}.nc")
                    attrs = self.dataset_attrs(m, seed)
                    coords = {**m.coords(), **self._object_coords()}
                    with _writing(shown(path), directory):
                        if fmt == "zarr":
                            times = [m.event_time(k) for k in range(m.frame_count(duration))]
                            writers[i] = ZarrFrameWriter(path, attrs, coords, times, owner=owner_now,
                                                         chunk=model_chunk_frames(m, duration))
                        else:
                            writers[i] = FrameWriter(path, attrs, coords)
                    paths[m.name] = path

            if owner:
                make_writers(True)
            if partition is not None:
                partition.ready()
            if not owner:
                make_writers(False)
            keep, skip_write = _resume_filters(models, keep, written)

            def write_frame(i, k, t, frame):
                if i in writers and not skip_write(i, k):
                    with _writing(shown(writers[i].path), directory):
                        writers[i].write(k, t, frame)

            def on_frame(i, k, t, frame):
                if partition is None or partition.frame(i, k, t, frame):
                    write_frame(i, k, t, frame)
                if live is not None:             # after the writer: it reads the frame, never changes it
                    live.frame(models[i], k, t, frame)

            def on_progress(t):
                if partition is None:
                    report.simulated(t)
                else:
                    partition.event(t)

            if live is not None:
                live.begin(self.scene, models, sc.start_utc)           # may wait for a client (wait_s)
            # One budget of threads for the steps and the casts inside them; a facet-partitioned
            # caster's casts are collectives, which every rank must call in the same order: one
            # step at a time there.
            shared = None if caster.collective_nearest else getattr(caster.threads, "budget", None)
            tm = TimeManager(models, duration, bus, budget=shared, subscribers=subscribers)
            # no BLAS threads spinning against the caster's; the frames' pages kept between frames
            with single_threaded_blas(), steady_heap(), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Gimbal lock detected", category=UserWarning)
                tm.run(on_frame=on_frame, keep=keep, on_progress=on_progress)
            if live is not None:
                live.end()
            # Writing phase: the frames still buffered now.
            pending = {i: w.pending_frames for i, w in writers.items()}
            report.expect_writes(sum(pending.values()))
            report.start_writing()
            for m in models:
                m.finish()
            for i, w in writers.items():
                with _writing(shown(w.path), directory):
                    w.close()
                report.wrote(pending[i])
            if partition is not None:
                partition.written()
            if fmt == "zarr" and owner and write:
                for i, w in writers.items():
                    with _writing(shown(w.path), directory):
                        finish_store(w.path, w.n_frames)
            report.close()
            done = True
        except KeyboardInterrupt as exc:
            note_time(exc, None if tm is None else tm.last_started_s)
            raise
        finally:
            if not done:
                report.abandon()
                for w in writers.values():
                    w.discard()
            caster.close()
            if budget is not None:
                budget.close()
        return paths


def _resume_filters(models, keep, written: dict):
    """The ``keep`` filter and the write filter of a resumed run (``written``: model index ->
    frames already in the store).

    A frame depends only on the scenario, the seed, its index and its time, so a written frame
    is not computed again. A closed loop (a model whose steps depend on those before it) runs
    from the start, and only its missing frames are written.
    """
    if not any(written.values()):
        return keep, lambda i, k: False
    if any(getattr(m, "closed_loop", False) for m in models):
        return keep, lambda i, k: k in written.get(i, ())

    def resumed_keep(i, k):
        return k not in written.get(i, ()) and (keep is None or keep(i, k))
    return resumed_keep, lambda i, k: False


def make_partial(out_dir: Path | None, ident: dict | None = None) -> Path:
    """Make the run's temporary directory (:func:`_make_temp_dir`) holding the
    :data:`INCOMPLETE_MARKER` and, for a resumable run, the record ``ident``
    (:func:`hifi.run.resume.write_identity`).

    Raises
    ------
    hifi.OutputError
        Naming ``out_dir`` (or the temporary directory) and why.
    """
    tmp_root = _make_temp_dir(out_dir)
    where = out_dir if out_dir is not None else tmp_root
    try:
        with _writing(where, tmp_root):
            (tmp_root / INCOMPLETE_MARKER).write_text(
                "hifi run in progress, stopped or failed; not a finished output directory"
                + ("; hifi run ... --resume continues it\n" if ident is not None else "\n"), encoding="utf-8")
            if ident is not None:
                write_resume_identity(tmp_root, ident)
    except BaseException:
        shutil.rmtree(tmp_root, ignore_errors=True)
        raise
    return tmp_root


def output_format_of(requested, *, partitioned: bool, resume: bool, out) -> str:
    """The format a run writes (:data:`hifi.run.resume.FORMATS`): ``requested``, else Zarr for
    a partitioned or resumable run, netCDF otherwise.

    Raises
    ------
    hifi.ScenarioError
        An unknown format, netCDF for a partitioned or resumed run, or Zarr in memory (``out`` None).
    """
    from .resume import FORMATS
    if requested is not None and requested not in FORMATS:
        raise ScenarioError(f"expected one of {', '.join(FORMATS)}", key="--format", value=requested)
    fmt = requested or ("zarr" if partitioned or resume else "netcdf")
    if fmt == "netcdf" and partitioned:
        raise ScenarioError("a run partitioned over MPI ranks writes Zarr stores (every rank writes its own "
                            "frames; netCDF files are written by one process); use --format zarr or no --format",
                            key="--format", value=requested)
    if fmt == "netcdf" and resume:
        raise ScenarioError("--resume continues a Zarr run (a killed process leaves a netCDF file unreadable); "
                            "use --format zarr or no --format", key="--format", value=requested)
    if fmt == "zarr" and out is None:
        raise ScenarioError("a run returned in memory (no output directory) is written as netCDF; give out=DIR "
                            "for Zarr", key="output_format", value=requested)
    return fmt


def _make_temp_dir(out_dir: Path | None) -> Path:
    """The run's temporary directory: ``.NAME.partial-*`` beside ``out_dir``, or
    ``.hifi-run-*`` in the system's temporary directory for an in-memory run.

    Raises
    ------
    hifi.OutputError
        Naming ``out_dir`` and why: a file where a directory must be, no permission.
    """
    if out_dir is None:
        try:
            return Path(tempfile.mkdtemp(prefix=".hifi-run-"))
        except OSError as exc:
            raise OutputError(tempfile.gettempdir(), exc) from exc
    parent = out_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=parent))
    except OSError as exc:
        blocker = next((p for p in (parent, *parent.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            reason = f"{blocker} is not a directory"
        elif isinstance(exc, PermissionError):
            reason = f"{parent} is not writable ({exc.strerror})"
        else:
            reason = exc
        raise OutputError(out_dir, reason) from exc


@contextmanager
def _writing(path, directory):
    """Turn a failure to write ``path`` (an ``OSError``, or the ``RuntimeError`` netCDF4 raises
    for an HDF5 error) into :class:`hifi.OutputError` naming ``path`` as the user knows it;
    ``directory`` is where the bytes really go (for the free-space hint)."""
    try:
        yield
    except OutputError:
        raise
    except (OSError, RuntimeError) as exc:
        raise OutputError(path, _write_failure(exc, directory)) from exc


def _write_failure(exc: BaseException, directory) -> str:
    """Why a write failed: the OS's reason, or netCDF's text plus the free space when low."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc) or type(exc).__name__
    try:
        free = shutil.disk_usage(directory).free
    except (OSError, TypeError):
        return text
    if free < LOW_DISK_BYTES:
        text += f" (the file system holding it has {free} bytes free)"
    return text
