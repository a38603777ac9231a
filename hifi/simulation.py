"""The orchestrator: builds the scene, the caster and the models, and runs them in time.

    sim = hifi.load("scenario.toml")
    results = sim.run(out="run1")       # dict: sensor name -> xarray.Dataset
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from . import meshes, scenario as _scenario
from .bus import MessageBus, PoseMessage
from .caster import RayCaster
from .checks import warn_scene
from .errors import ScenarioError
from .estimate import check_memory
from .model import Model, RunContext, Var
from .motion import Pose, Track
from .output import FrameWriter, base_attrs, check_output_dir, write_run_marker
from .scene import Material, Scene
from .timemanager import TimeManager

#: Simulated runs shorter than this (wall clock) show no progress bar [s].
PROGRESS_DELAY_S = 2.0

#: File present in an output directory while it is being written; removed just before the
#: directory is moved into place, so a run killed half-way (an MPI job aborted by another rank)
#: leaves ``.NAME.partial-*`` holding this file, never a directory that looks finished.
INCOMPLETE_MARKER = "INCOMPLETE"


class MotionRecorder(Model):
    """Ground-truth poses of every object and sensor at a fixed rate (``motion.nc``).

    BlenSor's motion-data export: per time step, each body's position [m] and orientation
    (quaternion x, y, z, w and roll/pitch/yaw [deg], CONTRACTS convention) in the scene frame.
    Each pose is also published on the message bus as a :class:`~hifi.bus.PoseMessage`.
    """

    model_name = "motion"
    priority = -1

    def __init__(self, scene: Scene, rate_hz: float):
        super().__init__("motion", {}, rate_hz=rate_hz)
        self.scene = scene
        self.names = list(scene.bodies)

    def coords(self):
        kinds = np.array([self.scene.bodies[n].kind for n in self.names])
        return {
            "body": Var(("body",), np.array(self.names), "1", "name of the object or sensor"),
            "body_kind": Var(("body",), kinds, "1", "object or sensor"),
            "xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1", "scene-frame axis (x east, y north, z up)"),
            "quat": Var(("quat",), np.array(["x", "y", "z", "w"]), "1", "quaternion component"),
            "rpy": Var(("rpy",), np.array(["roll", "pitch", "yaw"]), "1", "rotation about x, y, z"),
        }

    def frame_layout(self):
        n, f8 = len(self.names), np.dtype(np.float64)
        return {"time": ((), f8), "position": ((n, 3), f8), "orientation": ((n, 4), f8), "rpy_deg": ((n, 3), f8)}

    def step(self, k, t):
        poses = [self.scene.pose_at(n, t) for n in self.names]
        pos = np.array([p.translation for p in poses])
        quat = np.array([p.rotation.as_quat() for p in poses])
        if self.ctx is not None:
            for name, p, q in zip(self.names, pos, quat):
                self.ctx.bus.publish(PoseMessage(self.name, t, body=name, position_m=tuple(p),
                                                 quaternion_xyzw=tuple(q)))
        with warnings.catch_warnings():      # gimbal lock at pitch +-90 deg is expected, not an error
            warnings.simplefilter("ignore", UserWarning)
            rpy = np.array([p.rotation.as_euler("xyz", degrees=True) for p in poses])
        return {
            "time": Var((), np.float64(t), "s", "time since simulation start"),
            "position": Var(("body", "xyz"), pos, "m", "position of the body origin, scene frame"),
            "orientation": Var(("body", "quat"), quat, "1", "orientation quaternion body -> scene (x, y, z, w)"),
            "rpy_deg": Var(("body", "rpy"), rpy, "degree",
                           "roll, pitch, yaw about the scene x, y, z axes (extrinsic xyz)"),
        }


def build_scene(sc: _scenario.Scenario) -> Scene:
    """Scene (meshes, materials, pose tree) of a validated scenario; sensors become bodies."""
    scene = Scene()
    for name, m in sc.materials.items():
        scene.add_material(Material(name, m["reflectivity"], m["mirror"], tuple(m["color_rgb"]), m["class"]))
    for spec in sc.objects:
        if spec.mesh_path is not None:
            mesh = meshes.load_mesh_file(spec.mesh_path, spec.mesh_params["scale"])
        else:
            mesh = meshes.build_generator(spec.mesh, spec.mesh_params)
        if spec.track is not None:
            local = Track([f["t_s"] for f in spec.track], [f["position_m"] for f in spec.track],
                          [f["rpy_deg"] for f in spec.track])
        else:
            local = Pose.from_position_rpy(spec.position_m, spec.rpy_deg)
        scene.add_object(spec.name, mesh, spec.material, local, spec.parent)
    for spec in sc.sensors:
        scene.add_body(spec.name, "sensor", Pose.from_position_rpy(spec.position_m, spec.rpy_deg), spec.parent)
    return scene


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
        self.extra_models: list[Model] = []
        warn_scene(sc, self.scene, self.models)       # ScenarioWarning: sensors inside bodies, zero-area faces

    @classmethod
    def from_dict(cls, d: dict, base_dir=".") -> "Simulation":
        """Scenario from nested dicts (the TOML structure); paths are relative to ``base_dir``."""
        return cls(_scenario.validate(d, base_dir=base_dir))

    @classmethod
    def from_file(cls, path) -> "Simulation":
        return cls(_scenario.load(path))

    def estimate(self, duration_s: float | None = None, *, in_memory: bool = False):
        """Peak memory and output size of a run, before it starts (:mod:`hifi.estimate`).

        Parameters
        ----------
        duration_s : float, optional
            Simulated span [s]; default the scenario's.
        in_memory : bool
            Results returned in memory (``run(out=None)``): the output counts as memory too.

        Returns
        -------
        hifi.estimate.RunEstimate
        """
        from .estimate import estimate_run
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
            keep=None, write: bool = True, partition=None) -> dict[str, Any]:
        """Run every model over the simulated interval.

        Parameters
        ----------
        out : path-like, optional
            Output directory: ``<sensor>.nc`` per model, ``motion.nc``, ``scenario.toml``. It
            must not exist unless ``overwrite``. Files are written into a temporary sibling and
            moved into place at the end, so a failed run leaves nothing half-written. With
            ``out=None`` results are returned in memory.
        seed : int, optional
            Overrides ``[simulation] seed``.
        duration_s : float, optional
            Overrides ``[simulation] duration_s`` [s].
        overwrite : bool
            Replace an existing output directory.
        progress : bool, optional
            Show a progress bar (default: when the run takes longer than a few seconds).
        caster : RayCaster, optional
            Ray caster to use (default: one over the whole scene).
        keep : callable, optional
            ``keep(model_index, k)``: whether this process computes event ``k`` of a model.
        write : bool
            Whether this process writes files (False on MPI ranks other than 0).
        partition : object, optional
            Hooks of a partitioned (MPI) run, used by the ``mpi`` package:
            ``partition.start(models)`` returns the ``keep`` filter (or None) once the model
            list is known; ``partition.frame(i, k, t, frame)`` sees every computed frame and
            returns whether this process writes it now; ``partition.drain(write)`` runs after
            the last event, before the files are closed, with ``write(i, k, t, frame)``.

        Returns
        -------
        dict of str to xarray.Dataset
            One dataset per model that writes one (lazily opened from ``out`` when given).
        """
        import xarray as xr

        sc = self.scenario
        seed = sc.seed if seed is None else int(seed)
        duration = sc.duration_s if duration_s is None else float(duration_s)
        if duration <= 0:
            raise ScenarioError("expected a duration > 0 s", key="--duration", value=duration)
        check_memory(self, self.estimate(duration, in_memory=out is None and write))   # before any allocation
        out_dir = None if out is None else Path(out)
        if out_dir is not None:
            check_output_dir(out, overwrite)

        if out_dir is not None:
            out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp_root = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-" if out_dir else ".hifi-run-",
                                         dir=out_dir.parent if out_dir else None))
        try:
            marker = tmp_root / INCOMPLETE_MARKER
            marker.write_text("hifi run in progress or failed; not a finished output directory\n",
                              encoding="utf-8")
            written = self._run_into(tmp_root, seed, duration, progress, caster, keep, write, partition)
            marker.unlink()
            if write:
                write_run_marker(tmp_root, [p.name for p in tmp_root.iterdir()])
            if out_dir is None:
                results = {}
                for name, path in written.items():
                    with xr.open_dataset(path) as ds:
                        results[name] = ds.load()
                return results
            if out_dir.exists():
                check_output_dir(out_dir, overwrite)      # still a hifi output (checked again, just before)
                shutil.rmtree(out_dir)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_root, 0o777 & ~umask)      # mkdtemp makes it private; give the usual mode
            tmp_root.rename(out_dir)
            return {name: xr.open_dataset(out_dir / path.name) for name, path in written.items()}
        finally:
            if tmp_root.exists():
                shutil.rmtree(tmp_root, ignore_errors=True)

    def _object_coords(self) -> dict:
        """``object_name`` / ``object_class`` of every object, written into every file."""
        from .dataset import object_coords
        classes = self.scene.object_table("class_id")[:-1]
        return object_coords(self.scene.object_names, [self.scene.class_names[c] for c in classes])

    def _run_into(self, directory: Path, seed, duration, progress, caster, keep, write, partition=None):
        sc = self.scenario
        bus = MessageBus()
        caster = caster or RayCaster(self.scene)
        ctx = RunContext(self.scene, caster, bus, seed, duration, sc.start_utc, dict(sc.origin), sc.base_dir)
        motion = MotionRecorder(self.scene, sc.motion_rate_hz)
        models = [*self.models, *self.extra_models, motion]
        for m in models:
            m.setup(ctx)
        if partition is not None:
            keep = partition.start(models)
        writers: dict[int, FrameWriter] = {}
        paths: dict[str, Path] = {}
        if write:
            (directory / "scenario.toml").write_text(sc.text, encoding="utf-8")
        try:
            for i, m in enumerate(models):
                if not m.writes_dataset or not write:
                    continue
                path = directory / f"{m.name}.nc"
                attrs = base_attrs(m.name, m.model_name, seed, sc.text, start_utc=sc.start_utc,
                                   origin_lat_deg=sc.origin["lat_deg"], origin_lon_deg=sc.origin["lon_deg"],
                                   origin_height_m=sc.origin["height_m"], rate_hz=m.rate_hz, **m.attrs())
                writers[i] = FrameWriter(path, attrs, {**m.coords(), **self._object_coords()})
                paths[m.name] = path

            def write_frame(i, k, t, frame):
                if i in writers:
                    writers[i].write(k, t, frame)

            def on_frame(i, k, t, frame):
                if partition is None or partition.frame(i, k, t, frame):
                    write_frame(i, k, t, frame)

            tm = TimeManager(models, duration, bus)
            bar = _progress_bar(duration, progress)
            last = [0.0]

            def on_progress(t):
                if bar is not None and t > last[0]:
                    bar.update(t - last[0])
                    last[0] = t
            try:
                tm.run(on_frame=on_frame, keep=keep, on_progress=on_progress)
            finally:
                if bar is not None:
                    bar.close()
            if partition is not None:
                partition.drain(write_frame)
            for m in models:
                m.finish()
        finally:
            for w in writers.values():
                w.close()
            caster.close()
        return paths


def _progress_bar(duration: float, progress: bool | None):
    if progress is False:
        return None
    from tqdm import tqdm
    return tqdm(total=duration, unit="s", unit_scale=False, desc="simulated",
                delay=0.0 if progress else PROGRESS_DELAY_S, leave=False,
                bar_format="{desc}: {n:.3f}/{total:.3f} s |{bar}| [{elapsed}<{remaining}]")
