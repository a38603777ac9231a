"""Base classes of the models the time manager runs.

A model is registered under a name in the entry-point group ``hifi.models`` and declares its
parameters (:class:`~hifi.api.params.Param`), its default rate and, for models that produce a
dataset, one frame of variables per event. :class:`Sensor` adds a mount on a scene body and ray
casting in the sensor frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np

from .estimate import ModelEstimate
from .params import Param


@dataclass(frozen=True)
class Var:
    """One variable of a frame (or a static coordinate): dims, data and attributes.

    ``dims`` exclude the leading ``frame`` dimension for frame data. ``encoding`` says how the
    file stores the values (as xarray's ``encoding``): ``dtype`` (e.g. ``"f4"``), and for CF
    packing ``scale_factor``, ``add_offset``, ``_FillValue`` (NaN is written as the fill value)
    plus ``comment`` (the stored precision, written as an attribute); see
    :data:`hifi.run.dataset.RANGE_ENCODING`. ``data`` in memory (and on the message bus) keeps
    its own dtype.
    """

    dims: tuple
    data: np.ndarray
    units: str
    long_name: str
    extra: Mapping[str, Any] | None = None
    encoding: Mapping[str, Any] | None = None

    def attrs(self) -> dict:
        a = {"units": self.units, "long_name": self.long_name}
        if self.extra:
            a.update(self.extra)
        return a


@dataclass
class RunContext:
    """What a model can use while it runs.

    Attributes
    ----------
    scene : hifi.world.scene.Scene
    caster : hifi.caster.RayCaster
    bus : hifi.api.bus.MessageBus
    seed : int
    duration_s : float
    start_utc : str
        ISO 8601 epoch of t = 0, as the scenario gave it (normalised).
    epoch : hifi.api.timebase.Epoch or None
        ``start_utc`` parsed once: UTC and GPS time of t = 0 as datetime64[ns] (None when
        ``start_utc`` is empty, for contexts built by hand in tests). Models use this, never
        the string.
    origin : dict
        ``lat_deg``, ``lon_deg``, ``height_m`` of the scene frame's origin (ENU).
    base_dir : pathlib.Path
        Directory of the scenario file (model paths are relative to it).
    weather : dict or None
        The scenario's validated ``[weather]`` table (``fog_visibility_m``, ``rain_rate_mm_h``,
        ``snowfall_rate_mm_h``); None: clear air (contexts built by hand). Optical models turn
        it into extinction with :class:`sensors.weather.Weather`.
    """

    scene: Any
    caster: Any
    bus: Any
    seed: int
    duration_s: float
    start_utc: str
    origin: dict
    base_dir: Any
    weather: Any = None
    epoch: Any = field(init=False, default=None)

    def __post_init__(self):
        if self.start_utc:
            from .timebase import Epoch
            self.epoch = Epoch.from_utc(self.start_utc)


class Model:
    """A model run by the time manager at its own rate over simulated time.

    Subclasses set :attr:`model_name`, :attr:`PARAMS`, :attr:`default_rate_hz` and implement
    :meth:`step`. Events happen at ``k / rate_hz`` for ``k = 0, 1, ...`` while before the end
    of the run; override :meth:`event_time` for another schedule.
    """

    model_name: ClassVar[str] = ""
    PARAMS: ClassVar[dict[str, Param]] = {}
    default_rate_hz: ClassVar[float] = 10.0
    #: Events at equal times run in increasing priority, then in registration order.
    priority: ClassVar[int] = 0
    #: Whether the model writes a dataset.
    writes_dataset: ClassVar[bool] = True
    #: Whether :meth:`step` changes the scene others read (a driven body's track:
    #: :class:`hifi.world.vehicle.Vehicle`). The time manager then runs no other step across
    #: this model's steps (each other step sees the scene a serial run shows it).
    writes_scene: ClassVar[bool] = False
    #: Parameters that set the size of a frame, each with how to shrink it ("lower" or
    #: "raise"); a run that cannot fit in memory names the first one the scenario gives.
    SIZE_PARAMS: ClassVar[dict[str, str]] = {}
    #: Working memory per ray while a frame is computed [B], beyond :meth:`setup_bytes` and
    #: the output (:meth:`estimate`). Each shipped model sets its own, calibrated from measured
    #: peak RSS (benchmarks/calibrate_memory.py, 75 to 320 B); this default is above the
    #: largest of them, so an uncalibrated model is not underestimated.
    WORKING_BYTES_PER_RAY: ClassVar[float] = 400.0
    #: Output bytes per ray of a model that gives :meth:`rays_per_frame` but no
    #: :meth:`frame_layout`: the range-sensor variables of docs/datasets.md (12 float64, a bool, an int32).
    RANGE_BYTES_PER_RAY: ClassVar[int] = 101

    def __init__(self, name: str, params: Mapping[str, Any] | None = None, *,
                 rate_hz: float | None = None):
        self.name = name
        self.params = dict(params or {})
        self.rate_hz = float(rate_hz if rate_hz is not None else self.default_rate_hz)
        self.ctx: RunContext | None = None

    # -- schedule ---------------------------------------------------------------------------
    def event_time(self, k: int) -> float | None:
        """Simulated time of event ``k`` [s], or None when the model has no more events."""
        return k / self.rate_hz

    def available_at(self, k: int, t: float, frame: Mapping[str, Var]) -> float:
        """Simulated time [s] at which frame ``k`` (event at ``t``) is complete and published.

        Default: the latest per-measurement ``timestamp`` of the frame when it has one (a
        lidar sweep is seen when its last ray has fired), else ``t``. Override for models
        whose output takes time to become available (a latency).
        """
        ts = frame.get("timestamp")
        if ts is not None and np.size(ts.data) and np.issubdtype(np.asarray(ts.data).dtype, np.floating):
            last = np.nanmax(ts.data) if np.any(np.isfinite(ts.data)) else t
            return max(float(last), t)
        return t

    def check_scene(self, scene) -> None:
        """Check, when the simulation is built, that the scene can serve this model.

        Raise :class:`hifi.errors.ScenarioError` with ``key`` (e.g. ``"objects[2].interpolation"``)
        and ``value``; the simulation adds the scenario file and line. Default: nothing to check.
        """

    def setup(self, ctx: RunContext) -> None:
        """Called once before the first event (subscribe to the bus here)."""
        self.ctx = ctx

    def step(self, k: int, t: float) -> dict[str, Var] | None:
        """Run event ``k`` at time ``t`` [s]; return the frame's variables or None."""
        raise NotImplementedError

    def coords(self) -> dict[str, Var]:
        """Static coordinate variables of the dataset (written once)."""
        return {}

    def attrs(self) -> dict[str, Any]:
        """Extra global attributes of the dataset."""
        return {}

    def finish(self) -> None:
        """Called once after the last event."""

    # -- cost, known before running (hifi.api.estimate) -------------------------------------------
    def frame_count(self, duration_s: float) -> int:
        """Events with ``event_time(k) < duration_s`` [s], as the time manager runs them."""
        if type(self).event_time is Model.event_time:
            n = max(int(math.ceil(duration_s * self.rate_hz)), 0)
            while n > 0 and (n - 1) / self.rate_hz >= duration_s:
                n -= 1
            while n / self.rate_hz < duration_s:
                n += 1
            return n
        n = 0
        while (t := self.event_time(n)) is not None and t < duration_s:
            n += 1
        return n

    def rays_per_frame(self) -> int:
        """Rays this model casts per frame (0: none), from its parameters, before ``setup``."""
        return 0

    def frame_layout(self) -> dict[str, tuple[tuple[int, ...], np.dtype]] | None:
        """Shape (without ``frame``) and dtype of every variable :meth:`step` returns, before ``setup``.

        None when the model does not say; :meth:`estimate` then assumes the range-sensor
        variables per ray (:attr:`RANGE_BYTES_PER_RAY`).
        """
        return None

    def setup_bytes(self) -> int:
        """Memory of the arrays :meth:`setup` builds and keeps for the run [B]."""
        return 0

    def working_bytes(self) -> int:
        """Extra memory while one frame is computed [B]: :attr:`WORKING_BYTES_PER_RAY` x rays."""
        return int(round(self.WORKING_BYTES_PER_RAY * self.rays_per_frame()))

    def estimate(self, duration_s: float) -> ModelEstimate:
        """What this model costs over a run of ``duration_s`` [s], known before ``setup``.

        Frames from the rate (:meth:`frame_count`); output bytes per frame from
        :meth:`frame_layout` (or :attr:`RANGE_BYTES_PER_RAY` x :meth:`rays_per_frame`),
        before compression; memory from :meth:`setup_bytes` and :meth:`working_bytes`. The
        run adds the process, the scene and the writers (:mod:`hifi.api.estimate`).
        """
        rays = int(self.rays_per_frame())
        layout = self.frame_layout()
        if layout is None:
            var_bytes = {"frame": rays * self.RANGE_BYTES_PER_RAY}
        else:
            var_bytes = {name: int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                         for name, (shape, dtype) in layout.items()}
        return ModelEstimate(self.name, self.model_name, self.frame_count(duration_s), rays, var_bytes,
                             int(self.setup_bytes()), int(self.working_bytes()), self.writes_dataset,
                             bool(self.uses_beam_kernel()))

    def uses_beam_kernel(self) -> bool:
        """Whether a frame runs the compiled divergent-beam receiver (:mod:`sensors._beam_kernel`,
        numba): its memory counts in the estimate (:data:`hifi.api.estimate.KERNEL_RSS_BYTES`)."""
        return False


def _rotate_rows(v, rot, threads=None):
    """``v @ rot.T`` for (n, 3) rows, in chunks on ``threads`` (a :class:`hifi.caster.ChunkPool`)
    when given: the same bits (each row is its own 3 x 3 product; a run keeps BLAS on one
    thread, :mod:`hifi.runtime.threads`), twice as fast on two cores for a 2000 x 2000 depth map."""
    if threads is None or v.shape[0] < 65536:
        return v @ rot.T
    out = np.empty_like(v)
    rt = rot.T
    threads.map(lambda a, b: np.matmul(v[a:b], rt, out=out[a:b]), v.shape[0])
    return out


class Sensor(Model):
    """A model mounted on a scene body (its pose comes from the scene's pose tree)."""

    def __init__(self, name: str, params: Mapping[str, Any] | None = None, *,
                 rate_hz: float | None = None):
        super().__init__(name, params, rate_hz=rate_hz)

    def pose_at(self, t_s):
        """Sensor pose (sensor -> scene frame) at time(s) ``t_s`` [s]."""
        return self.ctx.scene.pose_at(self.name, t_s)

    @property
    def threads(self):
        """The caster's :class:`hifi.caster.ChunkPool` (None for a caster without one): the
        threads the model's compiled kernels and other GIL-free passes run their chunks on."""
        return getattr(self.ctx.caster, "threads", None)

    def run_chunks(self, kernel, n: int, *args) -> None:
        """``kernel(a, b, *args)`` over chunks ``a:b`` of ``range(n)`` on :attr:`threads` (a
        compiled kernel that writes rows ``a:b`` of its outputs), or at once without them."""
        threads = self.threads
        if threads is None:
            kernel(0, n, *args)
        else:
            threads.map(lambda a, b: kernel(a, b, *args), n)

    def beside(self, fn):
        """Start ``fn()`` on one of :attr:`threads` while the caller goes on; returns a function
        that waits for it and returns its value (or raises its exception).

        For work that releases the GIL and needs nothing the caller is about to compute: a
        frame's random draw (numpy's ``Generator`` fills its arrays without the GIL) beside the
        frame's cast. The value is that of ``fn()`` wherever it runs, so the numbers do not
        depend on the threads. Without threads, or with one, ``fn`` runs at once.
        """
        threads = self.threads
        if threads is None or threads.n_threads <= 1:
            value = fn()
            return lambda: value
        budget = threads.budget
        task = budget.submit(fn)

        def result():
            budget.wait([task])
            return budget.result(task)
        return result

    def cast(self, directions_sensor, times_s, max_range_m, origins_sensor=None, *, out=None):
        """Cast rays given in the sensor frame, each from where the sensor was at its time.

        Parameters
        ----------
        directions_sensor : (n, 3) float
            Ray directions in the sensor frame.
        times_s : float or (n,) float
            Emission times [s].
        max_range_m : float or (n,) float
            Maximum path length [m].
        origins_sensor : (n, 3) float, optional
            Ray origins in the sensor frame [m] (default: the sensor origin).
        out : hifi.caster.Hits, optional
            Arrays for the hits, None for an output the model does not read
            (:meth:`hifi.caster.RayCaster.cast`'s ``out``); default fresh arrays.

        Returns
        -------
        hits : hifi.caster.Hits
        origins_scene, directions_scene : (n, 3) float
            The emitted rays in the scene frame (``origins_scene`` a read-only broadcast of one
            point when every ray leaves the sensor origin at one pose).
        """
        origins, dirs, times = self._scene_rays(directions_sensor, times_s, origins_sensor)
        if out is None:
            hits = self.ctx.caster.cast(origins, dirs, times, max_range_m)
        else:
            hits = self.ctx.caster.cast(origins, dirs, times, max_range_m, out=out)
        return hits, origins, dirs

    def cast_surfaces(self, directions_sensor, times_s, max_range_m, origins_sensor=None):
        """:meth:`cast` through glass panes and along water reflections, keeping the first such
        surface of every path and the path's throughput
        (:meth:`hifi.caster.RayCaster.cast_surfaces`).

        Returns
        -------
        surface_hits : hifi.caster.SurfaceHits
        origins_scene, directions_scene : (n, 3) float
            As :meth:`cast`.
        """
        origins, dirs, times = self._scene_rays(directions_sensor, times_s, origins_sensor)
        return self.ctx.caster.cast_surfaces(origins, dirs, times, max_range_m), origins, dirs

    def _scene_rays(self, directions_sensor, times_s, origins_sensor):
        """The rays of :meth:`cast` in the scene frame: ``(origins, directions, times)``, times
        broadcast to one per ray."""
        d = np.asarray(directions_sensor, dtype=float).reshape(-1, 3)
        n = d.shape[0]
        times = np.asarray(times_s, dtype=float)
        if times.ndim == 0 or not self.ctx.scene.is_moving(self.name):
            # One pose for every ray: a 3 x 3 matrix product (the rotation keeps unit length).
            pose = self.pose_at(times if times.ndim == 0 else times.flat[0] if times.size else 0.0)
            rot = pose.rotation_matrix()
            dirs = _rotate_rows(d, rot, self.threads)
            if origins_sensor is None:
                # one origin for every ray: a read-only broadcast, no (n, 3) copy (the caster's
                # threads copy their chunks)
                origins = np.broadcast_to(np.asarray(pose.translation, dtype=float), (n, 3))
            else:
                origins = np.asarray(origins_sensor, float).reshape(-1, 3) @ rot.T
                for j in range(3):       # in place, column by column: numpy's broadcast over an
                    origins[:, j] += pose.translation[j]   # inner axis of 3 is several times slower
        else:
            pose = self.pose_at(np.broadcast_to(times, (n,)))
            o_s = np.zeros((n, 3)) if origins_sensor is None else np.asarray(origins_sensor, float).reshape(-1, 3)
            origins = pose.apply(o_s)
            dirs = pose.apply_vectors(d)
            dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        return origins, dirs, np.broadcast_to(times, (n,))
