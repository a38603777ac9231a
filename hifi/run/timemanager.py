"""Event-driven, deterministic time manager over simulated time.

Each model declares its event times (its rate, or :meth:`~hifi.api.model.Model.event_time`);
events are ordered by (time, priority, registration order). Time is simulated, not wall clock:
a slow model simply takes longer to compute, it never shifts another model's timestamps
(VANE's run-time interface).

With a :class:`~hifi.runtime.threads.ThreadBudget` of more than one thread, models step at the
same time, conservatively (Chandy and Misra's parallel discrete-event simulation: a process
runs ahead only as far as no message can reach it from behind). A model that subscribes to
nothing on the bus reads only the scene and its own state, so its steps may run ahead of the
others, in its own order, on the budget's threads, as far as the scene is settled: up to the
next step of a model that changes the scene (:attr:`~hifi.api.model.Model.writes_scene`, a
driven vehicle), whose own step waits for every step before it. A subscriber steps when its
turn comes, after every delivery before it. Whatever ran ahead is committed in the serial
order, (time, priority, registration, frame): the messages a step published (held back while
it ran ahead), its frame to the writer, its delivery on the bus; so files and deliveries are
those of a serial run, byte for byte, at any number of threads.

References
----------
K. M. Chandy and J. Misra, "Distributed simulation: a case study in design and verification of
distributed programs", IEEE Trans. Softw. Eng. SE-5(5), 440-452, 1979.
R. E. Bryant, "Simulation of packet communication architecture computer systems", MIT
LCS TR-188, 1977.
"""

from __future__ import annotations

import heapq
import threading
from collections import deque
from typing import Callable

from ..api.bus import MessageBus, SensorData, frozen_arrays
from ..errors import ModelError
from ..runtime.interrupt import check as check_interrupt
from ..runtime.interrupt import note_time
from ..runtime.threads import DONE, STEP

#: Kinds of time-manager events; at equal times deliveries come before steps.
_DELIVERY, _STEP = 0, 1

#: Rays per frame (:meth:`~hifi.api.model.Model.rays_per_frame`) below which a free model still
#: steps in its turn rather than ahead on another thread. A small step is mostly Python holding
#: the GIL (a SICK LMS511's 1,141 rays: 69 % of its step in scipy's rotations of the pose tree,
#: before poses became quaternion rows), so two of them at once take as long as one after the
#: other, plus the hand-overs: examples/patrol.toml with every free model ahead ran 0.76x on two
#: cores (models phase, benchmarks/bench_threads.py, load 3.6); with the quaternion poses, 0 and
#: 1,000 (the scanners ahead) were not better on one core nor on two (load 2.8-4.4,
#: benchmarks/README.md). The same bound as the caster's smallest chunk
#: (:data:`hifi.caster.pool._MIN_RAYS_PER_TASK`).
AHEAD_MIN_RAYS = 2048


def set_up(models, ctx) -> set[int]:
    """Run every model's :meth:`~hifi.api.model.Model.setup` in registration order; return the
    indices of those that subscribed to the bus there (they step in their turn, waiting for
    the messages they read; the others may step ahead, :class:`TimeManager`)."""
    subscribers = set()
    for i, m in enumerate(models):
        before = ctx.bus.subscriptions
        m.setup(ctx)
        if ctx.bus.subscriptions != before:
            subscribers.add(i)
    return subscribers


class TimeManager:
    """Runs models in event order until the end of the simulated interval.

    Parameters
    ----------
    models : list of Model
        In registration order.
    duration_s : float
        Events at times ``t < duration_s`` run.
    bus : MessageBus
    budget : hifi.runtime.threads.ThreadBudget, optional
        Threads the steps share with the casts inside them; None or one thread: one step at a
        time, in order.
    subscribers : set of int, optional
        Indices of the models that subscribed to the bus (default: the models whose bound
        methods are subscribed; every model when a callback belongs to none).
    """

    def __init__(self, models, duration_s: float, bus: MessageBus, *, budget=None, subscribers=None):
        self.models = list(models)
        self.duration_s = float(duration_s)
        self.bus = bus
        self.budget = budget
        self.subscribers = None if subscribers is None else set(subscribers)
        #: Simulated time of the last step this process started [s] (None before the first).
        self.last_started_s: float | None = None

    def schedule(self):
        """Every (time, priority, registration, frame) in execution order, without running."""
        events = []
        for reg, m in enumerate(self.models):
            k = 0
            while True:
                t = m.event_time(k)
                if t is None or t >= self.duration_s:
                    break
                events.append((t, m.priority, reg, k))
                k += 1
        events.sort()
        return events

    def run(self, on_frame: Callable | None = None, keep: Callable[[int, int], bool] | None = None,
            on_progress: Callable[[float], None] | None = None) -> int:
        """Run every event in order, publishing each frame on the bus when it is complete.

        Parameters
        ----------
        on_frame : callable, optional
            ``on_frame(model_index, k, t, frame_vars)`` for each event that produced data
            (called when the step returns, before the frame is published).
        keep : callable, optional
            ``keep(model_index, k)``: whether this process computes event k (MPI time partition).
        on_progress : callable, optional
            ``on_progress(t)`` after each event.

        Returns
        -------
        int
            Events run.

        Notes
        -----
        The heap holds two kinds of entries, ordered by ``(time, kind, priority, registration,
        frame)``: deliveries (kind 0) of a frame as :class:`~hifi.api.bus.SensorData` at the
        model's :meth:`~hifi.api.model.Model.available_at` time, and model steps (kind 1). So at
        equal times every frame completed by then is delivered before any model steps, and
        the order never depends on the machine. Deliveries due after the end of the run are
        made before the run ends.

        An interrupt (``KeyboardInterrupt``, :class:`hifi.runtime.interrupt.Interrupted`) leaves with
        :attr:`last_started_s` noted on it as ``t_s``.
        """
        try:
            if self.budget is not None and self.budget.n_threads > 1:
                return _Concurrent(self, on_frame, keep, on_progress).run()
            return self._run(on_frame, keep, on_progress)
        except KeyboardInterrupt as exc:
            note_time(exc, self.last_started_s)
            raise

    def first_events(self) -> list:
        """The heap of every model's first step: ``(time, kind, priority, registration, frame,
        message)`` entries, the order both the serial and the concurrent walks pop them in."""
        heap = []
        for reg, m in enumerate(self.models):
            t = m.event_time(0)
            if t is not None and t < self.duration_s:
                heapq.heappush(heap, (t, _STEP, m.priority, reg, 0, None))
        return heap

    def _run(self, on_frame, keep, on_progress) -> int:
        heap = self.first_events()
        count = 0
        while heap:
            check_interrupt()                 # a stop signal whose exception was swallowed
            t, kind, _, reg, k, message = heapq.heappop(heap)
            model = self.models[reg]
            if kind == _DELIVERY:
                self.bus.publish(message)
                continue
            if keep is None or keep(reg, k):
                self.last_started_s = t
                try:
                    frame = model.step(k, t)
                    t_pub = None if frame is None else float(model.available_at(k, t, frame))
                except Exception as exc:
                    check_interrupt()         # a stop signal's exception the step's code wrapped
                    raise ModelError(f"model {model.name!r} ({model.model_name}) failed at "
                                     f"t = {t:.6f} s, frame {k}: {type(exc).__name__}: {exc}") from exc
                count += 1
                if frame is not None:
                    message = SensorData(model.name, max(t_pub, t), frame=k, frame_time_s=t,
                                         data={n: v.data for n, v in frame.items()})
                    if on_frame is not None:
                        on_frame(reg, k, t, frame)
                    heapq.heappush(heap, (message.time_s, _DELIVERY, model.priority, reg, k, message))
            if on_progress is not None:
                on_progress(t)
            t_next = model.event_time(k + 1)
            if t_next is not None and t_next < self.duration_s:
                heapq.heappush(heap, (t_next, _STEP, model.priority, reg, k + 1, None))
        return count

    def bound_models(self) -> set[int]:
        """Models that step only in their turn: subscribers to the bus and scene writers."""
        if self.subscribers is not None:
            subs = set(self.subscribers)
        else:
            subs = set()
            for callback in self.bus.callbacks:
                owner = getattr(callback, "__self__", None)
                regs = [i for i, m in enumerate(self.models) if m is owner]
                if not regs:                      # a callback of no model: no one runs ahead
                    return set(range(len(self.models)))
                subs.update(regs)
        return subs | {i for i, m in enumerate(self.models) if getattr(m, "writes_scene", False)}


class _Concurrent:
    """One concurrent run of a :class:`TimeManager` (see the module's notes).

    The main thread walks the events in the serial order (the heap of :meth:`TimeManager._run`)
    and commits each; meanwhile the steps of free models (:meth:`TimeManager.bound_models`
    excluded) that cast at least :data:`AHEAD_MIN_RAYS` rays a frame are started ahead on the
    budget's threads, each after its own model's previous step, none past the next uncommitted
    scene writer's step, at most ``16 x threads`` started and not yet committed, within the
    memory of ``2 x threads`` steps of the costliest of them (a bound on the frames held beyond
    a serial run's). Every other step runs in the main thread in its turn. The main thread,
    waiting, runs queued steps and chunks itself.

    Steps are compared by their key in the serial order, ``(time, priority, registration,
    frame)``. A model that runs ahead must know its event times beforehand (its
    :meth:`~hifi.api.model.Model.event_time` does not depend on the run, as a rate's); a bound
    model's may be written as the run goes (a stepping session's controller).
    """

    def __init__(self, tm: TimeManager, on_frame, keep, on_progress):
        self.tm, self.on_frame, self.on_progress, self.keep = tm, on_frame, on_progress, keep
        self.budget = tm.budget
        n = self.budget.n_threads
        #: Most steps started ahead and not committed: short steps must not fill the window while
        #: a long one holds the commit back (2 x threads: the worker of two threads waited 30 % of
        #: a crossing run; crossing 4 s on two idle cores, 8 x threads: 6.67 s, the worker waiting
        #: 17 %; 16 x threads: 6.56 s, 14 %). The memory bound below holds whatever the count.
        self.window = 16 * n
        bound = tm.bound_models()
        #: Models whose steps change the scene: each of their steps is a barrier.
        self.writers = {i: 0 for i, m in enumerate(tm.models) if getattr(m, "writes_scene", False)}
        free = [reg for reg, m in enumerate(tm.models)
                if reg not in bound and m.rays_per_frame() >= AHEAD_MIN_RAYS]
        #: Per model that runs ahead, its next kept step not yet started: (k, t), or None.
        self.head = {reg: self._kept_from(reg, 0) for reg in free}
        #: Their estimated memory per step (frame + working arrays, hifi.api.estimate), at most
        #: that of 2 x threads steps of the costliest of them: beyond a serial run's one step.
        self.cost = {}
        for reg in free:
            est = tm.models[reg].estimate(tm.duration_s)
            self.cost[reg] = sum(est.var_bytes.values()) + est.working_bytes
        self.max_bytes = 2 * n * max(self.cost.values(), default=0)
        self.ahead_bytes = 0
        self.ahead = 0              # steps started ahead and not committed
        self.started = {}           # (reg, k) -> (task, outbox)
        self.last = {}              # reg -> task of its latest started step
        self.lock = threading.Lock()

    def _kept_from(self, reg: int, k: int):
        """``(k, t)`` of model ``reg``'s first step from ``k`` on that this process runs, or None."""
        m = self.tm.models[reg]
        while True:
            t = m.event_time(k)
            if t is None or t >= self.tm.duration_s:
                return None
            if self.keep is None or self.keep(reg, k):
                return k, t
            k += 1

    def _key(self, reg: int, k: int, t: float) -> tuple:
        return (t, self.tm.models[reg].priority, reg, k)

    def _barrier(self) -> tuple:
        """Key of the earliest scene writer's step not yet committed (under :attr:`lock`)."""
        keys = [(float("inf"),)]
        for reg, k in self.writers.items():
            t = self.tm.models[reg].event_time(k)
            if t is not None and t < self.tm.duration_s:
                keys.append(self._key(reg, k, t))
        return min(keys)

    # -- starting steps ahead -----------------------------------------------------------------
    def _start(self, reg: int) -> None:
        """Queue the next step of free model ``reg`` (under :attr:`lock`)."""
        k, t = self.head[reg]
        self.head[reg] = self._kept_from(reg, k + 1)
        model, bus, outbox = self.tm.models[reg], self.tm.bus, []

        def step():
            with bus.deferring(outbox):
                frame = model.step(k, t)
            if frame is not None:            # read-only now, as a serial run's bus makes it at once
                frozen_arrays({n: v.data for n, v in frame.items()})
            with self.lock:                  # taken after _start (which holds it) has set task
                if self.last.get(reg) is task:
                    self.last[reg] = None    # the model's next step may start
            self.fill()
            return frame

        task = self.budget.submit(step, STEP)
        self.started[(reg, k)] = (task, outbox)
        self.last[reg] = task
        self.ahead += 1
        self.ahead_bytes += self.cost[reg]

    def fill(self) -> None:
        """Start every free step whose inputs are settled, earliest first, within the window."""
        with self.lock:
            if self.ahead >= self.window:
                return
            barrier = self._barrier()
            ready = []
            for reg, head in self.head.items():
                if head is None:
                    continue
                key = self._key(reg, *head)
                if key > barrier:
                    continue
                last = self.last.get(reg)
                # after a failed step, none of the model's later steps (the run stops at it)
                if last is None or (last.state == DONE and last.error is None):
                    ready.append((key, reg))
            for _, reg in sorted(ready):
                if self.ahead >= self.window:
                    break
                if self.ahead and self.ahead_bytes + self.cost[reg] > self.max_bytes:
                    continue                      # a smaller step may still fit
                self._start(reg)

    def _result(self, reg: int, k: int):
        """Frame of free step (reg, k), waited for (running queued work meanwhile), and what it
        published."""
        with self.lock:
            if (reg, k) not in self.started:    # not started ahead (the window was full)
                self._start(reg)
            task, outbox = self.started.pop((reg, k))
        budget = self.budget
        while True:
            self.fill()
            seen = budget.completed
            budget.wait([task], help_steps=True, until=lambda: budget.completed != seen)
            if task.state == DONE:
                break
        with self.lock:
            self.ahead -= 1
            self.ahead_bytes -= self.cost[reg]
        return budget.result(task), outbox

    # -- the serial walk ------------------------------------------------------------------------
    def run(self) -> int:
        try:
            return self._walk()
        finally:
            self.budget.cancel_queued(STEP)   # steps started ahead of a failure or a stop
            self.budget.idle()

    def _walk(self) -> int:
        tm, bus = self.tm, self.tm.bus
        heap = tm.first_events()
        count = 0
        while heap:
            check_interrupt()
            t, kind, _, reg, k, message = heapq.heappop(heap)
            model = tm.models[reg]
            if kind == _DELIVERY:
                bus.publish(message)
                continue
            if self.keep is None or self.keep(reg, k):
                tm.last_started_s = t
                try:
                    if reg in self.head:
                        frame, outbox = self._result(reg, k)
                        for sent in outbox:            # published in its turn, as a serial run does
                            bus.publish(sent)
                    else:
                        frame = model.step(k, t)
                    t_pub = None if frame is None else float(model.available_at(k, t, frame))
                except Exception as exc:
                    check_interrupt()
                    raise ModelError(f"model {model.name!r} ({model.model_name}) failed at "
                                     f"t = {t:.6f} s, frame {k}: {type(exc).__name__}: {exc}") from exc
                count += 1
                if frame is not None:
                    message = SensorData(model.name, max(t_pub, t), frame=k, frame_time_s=t,
                                         data={n: v.data for n, v in frame.items()})
                    if self.on_frame is not None:
                        self.on_frame(reg, k, t, frame)
                    heapq.heappush(heap, (message.time_s, _DELIVERY, model.priority, reg, k, message))
            if reg in self.writers:
                with self.lock:                      # committed: the writer's barrier moves on
                    self.writers[reg] = k + 1
            if self.on_progress is not None:
                self.on_progress(t)
            t_next = model.event_time(k + 1)
            if t_next is not None and t_next < tm.duration_s:
                heapq.heappush(heap, (t_next, _STEP, model.priority, reg, k + 1, None))
            self.fill()
        return count
