"""A run held between steps: the stepping API (:meth:`hifi.Simulation.session`).

A :class:`Session` runs the time manager on a thread of its own and holds it at the simulated
times the caller asks for. Between two steps the caller reads what the sensors published and
sends commands (for example the ``drive`` commands of a vehicle); the run then goes on. This
is how a perception or planning stack, or reinforcement-learning code, is put in the loop.

How it stays a normal run. The session adds one model, the *controller* (a
:class:`CommandScript` whose script is written as the run goes), registered after the
scenario's models. Its events are the times the caller steps to; at each it hands over the
frames delivered so far and publishes the caller's commands on the bus, stamped with that time,
exactly as a built-in driver would. Nothing else differs from a batch run: the files are
written by the same writers into the same temporary directory and moved into place when the
run ends, and an interrupted or closed session leaves what an interrupted ``hifi run`` leaves.
A batch run given the same commands at the same times, ``sim.add_model(CommandScript(name,
session.commands))``, writes the same bytes (random streams are keyed by model name and frame,
:mod:`hifi.api.rng`, so the controller draws none of anyone's numbers).

Which frames a step returns. Those a subscriber of the bus would hold at the step's time t:
frames whose :meth:`~hifi.api.model.Model.available_at` time is at or before t (a lidar sweep
when its last ray has fired), each once. The controller steps before every other model at
equal times (priority -2), so a step to t returns after every event before t and before any at t.
"""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import numpy as np

from ..api.bus import Command, SensorData
from ..api.model import Model, Var
from ..runtime.interrupt import Interrupted

#: Seconds a session waits for its run's thread at each request before it looks again (the
#: wait is in slices so that Ctrl-C reaches the caller; the run itself has no time limit).
_POLL_S = 0.5


class SessionError(RuntimeError):
    """A session used as it cannot be: after it closed, or stepped backwards in time."""


class CommandScript(Model):
    """Publishes given commands at given simulated times (a driver that reads nothing).

    The batch twin of a :class:`Session`'s controller: given a session's
    :attr:`Session.commands`, a run with this model added (:meth:`hifi.Simulation.add_model`)
    receives the same commands at the same times and writes the same files.

    Parameters
    ----------
    name : str
        The model's name (the commands' sender).
    commands : sequence of hifi.Command
        Each published at its ``time_s`` [s], in the order given at equal times (re-stamped
        with this model's name as sender).
    """

    model_name: ClassVar[str] = "command_script"
    #: Before every other model at equal times (a vehicle is -1): a step to t sees the run before t.
    priority: ClassVar[int] = -2
    writes_dataset: ClassVar[bool] = False
    closed_loop: ClassVar[bool] = True

    def __init__(self, name: str, commands=()):
        super().__init__(name, {}, rate_hz=1.0)
        self._times: list[float] = []
        self._batches: list[list[Command]] = []
        for c in sorted(commands, key=lambda c: c.time_s):
            if not self._times or c.time_s != self._times[-1]:
                self._times.append(float(c.time_s))
                self._batches.append([])
            self._batches[-1].append(c)

    def event_time(self, k: int) -> float | None:
        return self._times[k] if k < len(self._times) else None

    def frame_count(self, duration_s: float) -> int:
        return sum(t < duration_s for t in self._times)

    def step(self, k: int, t: float):
        self._publish(self._batches[k], t)
        return None

    def _publish(self, commands, t: float) -> None:
        for c in commands:
            self.ctx.bus.publish(Command(self.name, t, target=c.target, name=c.name, value=dict(c.value or {})))


@dataclass(frozen=True)
class Frame:
    """One frame a sensor published: its index, times and variables (read-only arrays)."""

    frame: int                       #: frame index of the model
    time_s: float                    #: the frame's event time [s] (``frame_time`` in its file)
    available_s: float               #: when it was published on the bus [s]
    variables: Mapping[str, Var]     #: name -> :class:`hifi.Var` (data, dims, units, long name)

    def __getitem__(self, name: str) -> np.ndarray:
        """The data of variable ``name`` (read-only)."""
        return self.variables[name].data


class Observations(Mapping):
    """What a step returns: model name -> the frames it published since the last step, oldest first.

    Every observed model has an entry (an empty tuple when it published nothing).
    :meth:`dataset` gives a model's frames as the ``xarray.Dataset`` its file holds.
    """

    def __init__(self, frames: dict[str, tuple[Frame, ...]], session: "Session", t_s: float):
        self._frames = frames
        self._session = session
        #: The simulated time the run is held at [s].
        self.time_s = float(t_s)

    def __getitem__(self, name: str) -> tuple[Frame, ...]:
        return self._frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def latest(self, name: str) -> Frame | None:
        """The newest frame of ``name`` in this step, or None."""
        frames = self._frames[name]
        return frames[-1] if frames else None

    def dataset(self, name: str):
        """The frames of ``name`` as an ``xarray.Dataset``: the variables, coordinates and
        attributes its file has, decoded as :func:`hifi.open_run` decodes them."""
        return self._session.dataset(name, self._frames[name])


class Session:
    """A run that advances when asked (see the module's documentation). Made by
    :meth:`hifi.Simulation.session`; use it as a context manager.

    Parameters
    ----------
    sim : hifi.Simulation
        A simulation that has not run (a session integrates its vehicles from their start).
    out : path-like, optional
        Output directory, written as :meth:`hifi.Simulation.run` writes it; None: no files.
    observe : sequence of str, optional
        Models whose frames the steps return (default: every model of the scenario that
        writes a dataset).
    seed, duration_s, overwrite, output_format, live :
        As :meth:`hifi.Simulation.run` (``live``: a :class:`hifi.LiveServer` that shows the run
        in Foxglove as it is stepped).
    name : str
        Name of the controller model (the sender of the commands).
    """

    def __init__(self, sim, out=None, *, observe=None, seed: int | None = None, duration_s: float | None = None,
                 overwrite: bool = False, output_format: str | None = None, name: str = "session", live=None):
        models = {m.name: m for m in [*sim.models, *sim.extra_models]}
        if name in models:
            raise ValueError(f"session name {name!r} is already a model of the scenario; allowed: another name")
        if observe is None:
            observe = [n for n, m in models.items() if m.writes_dataset]
        observe = list(observe)
        for n in observe:
            if n not in models:
                raise ValueError(f"observe: no model {n!r}; allowed: {', '.join(sorted(models))}")
        self.sim = sim
        self.name = name
        self.duration_s = float(sim.scenario.duration_s if duration_s is None else duration_s)
        self.seed = int(sim.scenario.seed if seed is None else seed)
        self._observe = observe
        self._models = models
        self._vehicles = {m.name for m in sim.models if m.model_name == "vehicle"}
        self._run_kwargs = dict(out=out, seed=self.seed, duration_s=self.duration_s, overwrite=overwrite,
                                progress=False, output_format=output_format, write=out is not None, live=live)
        self._controller = _Controller(name, self)
        #: Every command sent so far, stamped with its time and the controller's name.
        self.commands: list[Command] = []
        self._pending: list[Command] = []
        self._captured: dict[tuple[str, int], Var] = {}
        self._inbox: list[Frame] = []
        self._lock = threading.Lock()
        self._to_run: queue.Queue = queue.Queue()
        self._to_caller: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._wrapped: dict[str, Any] = {}
        self._time_s = 0.0
        self._state = "new"                # new -> held -> (finished | closed)
        #: What :meth:`hifi.Simulation.run` returned once the run ended: model name -> dataset
        #: (or ``{}`` without ``out``); None before.
        self.results: dict | None = None

    # -- state ------------------------------------------------------------------------------
    @property
    def time_s(self) -> float:
        """The simulated time the run is held at [s]."""
        return self._time_s

    @property
    def finished(self) -> bool:
        """Whether the run has reached its end (its files are in place)."""
        return self._state == "finished"

    def __enter__(self) -> "Session":
        self._start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def _start(self) -> None:
        if self._state != "new":
            return
        for n in self._observe:                       # keep each computed frame's variables
            model = self._models[n]
            self._wrapped[n] = model.__dict__.get("step")
            model.step = self._capturing(model, type(model).step.__get__(model))
        self.sim.add_model(self._controller)
        self._thread = threading.Thread(target=self._run, name="hifi-session", daemon=True)
        self._thread.start()
        self._wait()                                  # held at the controller's first event, t = 0

    def _capturing(self, model, step):
        def captured_step(k, t):
            frame = step(k, t)
            if frame is not None:
                with self._lock:
                    self._captured[(model.name, k)] = frame
            return frame
        return captured_step

    def _run(self) -> None:
        try:
            results = self.sim.run(**self._run_kwargs)
        except BaseException as exc:              # handed to the caller's thread
            self._to_caller.put(("error", exc))
        else:
            self._to_caller.put(("done", results))

    def _wait(self) -> None:
        """Wait for the run to be held again, or to end; raise its error."""
        while True:
            try:
                kind, value = self._to_caller.get(timeout=_POLL_S)
            except queue.Empty:
                if self._thread is not None and not self._thread.is_alive() and self._to_caller.empty():
                    raise SessionError("the session's run stopped without a word") from None
                continue
            if kind == "held":
                self._state = "held"
                self._time_s = value
                return
            self._thread.join()
            self._restore()
            if kind == "done":
                self._state = "finished"
                self._time_s = self.duration_s
                self.results = value
                return
            self._state = "closed"
            raise value

    def _restore(self) -> None:
        for n, own in self._wrapped.items():
            model = self._models[n]
            if own is None:
                model.__dict__.pop("step", None)
            else:
                model.step = own
        self._wrapped = {}
        if any(m is self._controller for m in self.sim.extra_models):     # the next run is without it
            self.sim.extra_models.remove(self._controller)

    def _check_open(self, what: str) -> None:
        if self._state == "new":
            self._start()
        if self._state == "closed":
            raise SessionError(f"session.{what}: the session is closed")
        if self._state == "finished":
            raise SessionError(f"session.{what}: the run has ended at t = {self.duration_s} s (duration_s)")

    # -- stepping ---------------------------------------------------------------------------
    def step_until(self, t_s: float) -> Observations:
        """Run every event before ``t_s`` [s] (to the end of the run if ``t_s`` is at or past
        it) and return the frames published since the last step.

        Raises
        ------
        SessionError
            ``t_s`` is before the time the run is held at, or the session is closed or ended.
        hifi.ModelError
            A model failed (the session is then closed, as a failed run).
        """
        self._check_open("step_until")
        t_s = float(t_s)
        if not np.isfinite(t_s) or t_s < self._time_s:
            raise SessionError(f"session.step_until: t_s = {t_s} is before the session's time "
                               f"{self._time_s} s; allowed: t_s >= {self._time_s}")
        if t_s == self._time_s:
            return self._take(self._time_s)
        commands, self._pending = self._pending, []
        self._to_run.put(("go", t_s if t_s < self.duration_s else None, commands))
        self._wait()
        return self._take(self._time_s)

    def step(self, dt_s: float) -> Observations:
        """:meth:`step_until` ``time_s + dt_s`` (``dt_s`` >= 0 [s])."""
        dt_s = float(dt_s)
        if not dt_s >= 0:
            raise SessionError(f"session.step: dt_s = {dt_s}; allowed: dt_s >= 0")
        return self.step_until(self._time_s + dt_s)

    def command(self, target: str, name: str = "drive", **value) -> Command:
        """Send a command to the model ``target``, published at the session's time.

        For a vehicle, ``name`` is ``"drive"`` and ``value`` ``speed_m_s`` [m/s] and
        ``steer_deg`` [deg] (:class:`hifi.world.vehicle.Vehicle`); it acts from the vehicle's
        next step after the session's time, as a built-in driver's command does.

        Raises
        ------
        ValueError
            ``target`` is not a model of the run, or a drive command for a body that is not a
            vehicle, or with other keys.
        """
        self._check_open("command")
        if target not in self._models:
            raise ValueError(f"session.command: no model {target!r}; allowed: {', '.join(sorted(self._models))}")
        if name == "drive":
            if target not in self._vehicles:
                raise ValueError(f"session.command: {target!r} is not a vehicle; drive commands go to: "
                                 f"{', '.join(sorted(self._vehicles)) or '(no vehicle in the scenario)'}")
            extra = set(value) - {"speed_m_s", "steer_deg"}
            if extra:
                raise ValueError(f"session.command: drive takes speed_m_s and steer_deg, not {', '.join(sorted(extra))}")
            for key, v in value.items():
                if not np.isfinite(float(v)):
                    raise ValueError(f"session.command: {key} = {v}; allowed: a finite number")
            value = {k: float(v) for k, v in value.items()}
        cmd = Command(self.name, self._time_s, target=target, name=name, value=value)
        self._pending.append(cmd)
        self.commands.append(cmd)
        return cmd

    def close(self) -> None:
        """Stop the run where it is held (as an interrupted ``hifi run``: no output directory;
        a Zarr run keeps its frames for ``resume``). Nothing to do once it has ended."""
        if self._state in ("new", "finished", "closed"):
            self._state = "finished" if self._state == "finished" else "closed"
            self._restore()
            return
        self._to_run.put(("stop", None, None))
        try:
            # The run may still be going to its next hold (a step interrupted by Ctrl-C): it
            # reads the stop there; wait until it has cleaned up and ended.
            while True:
                self._wait()
                if self._state != "held":
                    break
        except KeyboardInterrupt:
            pass
        finally:
            if self._state != "finished":
                self._state = "closed"

    # -- what the caller reads --------------------------------------------------------------
    def pose(self, body: str, t_s: float | None = None):
        """The true pose of the scene body ``body`` at ``t_s`` (default: the session's time),
        as a :class:`hifi.Pose` (``rotation``, ``translation`` [m]: body to scene frame). A
        driven body's pose is known to its last step: at the session's time, it is."""
        scene = self.sim.scene
        if body not in scene.bodies:
            raise ValueError(f"session.pose: no body {body!r}; allowed: {', '.join(sorted(scene.bodies))}")
        return scene.pose_at(body, self._time_s if t_s is None else float(t_s))

    def _deliver(self, msg: SensorData) -> None:
        """Bus callback (run thread): a frame of an observed model was published."""
        with self._lock:
            var = self._captured.pop((msg.sender, msg.frame), None)
        if var is not None:
            self._inbox.append((Frame(msg.frame, msg.frame_time_s, msg.time_s, var), msg.sender))

    def _take(self, t_s: float) -> Observations:
        frames, self._inbox = self._inbox, []
        out = {n: [] for n in self._observe}
        for f, n in frames:
            out[n].append(f)
        return Observations({n: tuple(v) for n, v in out.items()}, self, t_s)

    def dataset(self, name: str, frames):
        """``frames`` (of model ``name``) as the ``xarray.Dataset`` its file holds, decoded."""
        import xarray as xr
        from .dataset import cf_time_attrs
        from .output import (FRAME_ATTRS, FRAME_TIME_ATTRS, frame_variable_attrs, frame_variable_kwargs, stored_values,
                             variable_attrs)
        model = self._models[name]
        attrs = self.sim.dataset_attrs(model, self.seed)
        coords = {**model.coords(), **self.sim._object_coords()}
        time_attrs = cf_time_attrs(attrs["start_utc"]) if attrs.get("start_utc") else {}
        data = {"frame": (("frame",), np.array([f.frame for f in frames], np.int32), FRAME_ATTRS),
                "frame_time": (("frame",), np.array([f.time_s for f in frames], np.float64),
                               {**FRAME_TIME_ATTRS, **time_attrs})}
        for n, v in coords.items():
            data[n] = (v.dims, stored_values(np.asarray(v.data)), variable_attrs(v))
        if frames:
            for n, v in frames[0].variables.items():
                stacked = np.stack([stored_values(np.asarray(f.variables[n].data), v.encoding, n) for f in frames])
                attrs_n = frame_variable_attrs(n, v, time_attrs, coords)
                fill = frame_variable_kwargs(v)["fill_value"]
                if fill is not False:                 # packed values: NaN is stored as the fill value
                    attrs_n["_FillValue"] = fill
                data[n] = (("frame",) + tuple(v.dims), stacked, attrs_n)
        ds = xr.Dataset({n: xr.Variable(d, a, at) for n, (d, a, at) in data.items()}, attrs=attrs)
        return xr.decode_cf(ds)


class _Controller(CommandScript):
    """The session's model: its script is written by the caller as the run goes."""

    def __init__(self, name: str, session: Session):
        super().__init__(name)
        self._session = session
        self._times = [0.0]

    def setup(self, ctx) -> None:
        super().setup(ctx)
        for n in self._session._observe:
            ctx.bus.subscribe(self._session._deliver, SensorData, sender=n)

    def frame_count(self, duration_s: float) -> int:
        return 1

    def step(self, k: int, t: float):
        s = self._session
        s._to_caller.put(("held", t))
        kind, t_next, commands = s._to_run.get()
        if kind == "stop":
            raise Interrupted(signal.SIGINT)
        self._publish(commands, t)
        if t_next is not None:
            self._times.append(t_next)
        return None
