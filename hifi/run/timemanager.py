"""Event-driven, deterministic time manager over simulated time.

Each model declares its event times (its rate, or :meth:`~hifi.api.model.Model.event_time`);
events are ordered by (time, priority, registration order). Time is simulated, not wall clock:
a slow model simply takes longer to compute, it never shifts another model's timestamps
(VANE's run-time interface).
"""

from __future__ import annotations

import heapq
from typing import Callable

from ..api.bus import MessageBus, SensorData
from ..errors import ModelError
from ..runtime.interrupt import check as check_interrupt
from ..runtime.interrupt import note_time

#: Kinds of time-manager events; at equal times deliveries come before steps.
_DELIVERY, _STEP = 0, 1


class TimeManager:
    """Runs models in event order until the end of the simulated interval.

    Parameters
    ----------
    models : list of Model
        In registration order.
    duration_s : float
        Events at times ``t < duration_s`` run.
    bus : MessageBus
    """

    def __init__(self, models, duration_s: float, bus: MessageBus):
        self.models = list(models)
        self.duration_s = float(duration_s)
        self.bus = bus
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
            return self._run(on_frame, keep, on_progress)
        except KeyboardInterrupt as exc:
            note_time(exc, self.last_started_s)
            raise

    def _run(self, on_frame, keep, on_progress) -> int:
        heap = []
        for reg, m in enumerate(self.models):
            t = m.event_time(0)
            if t is not None and t < self.duration_s:
                heapq.heappush(heap, (t, _STEP, m.priority, reg, 0, None))
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
