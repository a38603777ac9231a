"""Event-driven, deterministic time manager over simulated time.

Each model declares its event times (its rate, or :meth:`~hifi.model.Model.event_time`);
events are ordered by (time, priority, registration order). Time is simulated, not wall clock:
a slow model simply takes longer to compute, it never shifts another model's timestamps
(VANE's run-time interface).
"""

from __future__ import annotations

import heapq
from typing import Callable

from .bus import MessageBus, SensorData
from .errors import ModelError


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
        """Run every event in order.

        Parameters
        ----------
        on_frame : callable, optional
            ``on_frame(model_index, k, t, frame_vars)`` for each event that produced data.
        keep : callable, optional
            ``keep(model_index, k)``: whether this process computes event k (MPI time partition).
        on_progress : callable, optional
            ``on_progress(t)`` after each event.

        Returns
        -------
        int
            Events run.
        """
        heap = []
        for reg, m in enumerate(self.models):
            t = m.event_time(0)
            if t is not None and t < self.duration_s:
                heapq.heappush(heap, (t, m.priority, reg, 0))
        count = 0
        while heap:
            t, _, reg, k = heapq.heappop(heap)
            model = self.models[reg]
            if keep is None or keep(reg, k):
                try:
                    frame = model.step(k, t)
                except Exception as exc:
                    raise ModelError(f"model {model.name!r} ({model.model_name}) failed at "
                                     f"t = {t:.6f} s, frame {k}: {type(exc).__name__}: {exc}") from exc
                count += 1
                if frame is not None:
                    if on_frame is not None:
                        on_frame(reg, k, t, frame)
                    self.bus.publish(SensorData(model.name, t, frame=k,
                                                data={n: v.data for n, v in frame.items()}))
            if on_progress is not None:
                on_progress(t)
            t_next = model.event_time(k + 1)
            if t_next is not None and t_next < self.duration_s:
                heapq.heappush(heap, (t_next, model.priority, reg, k + 1))
        return count
