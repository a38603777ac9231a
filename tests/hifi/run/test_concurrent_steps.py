"""Concurrent model steps (hifi.run.timemanager with a ThreadBudget): what a run commits, in what
order, and what each step sees, are the serial run's at any number of threads; nested pools
(a step's chunks on the threads that run the steps) finish.

The expected values are the serial run's (one step at a time, the time manager's definition of
the order): these are determinism tests, with step durations chosen so that steps started ahead
finish out of order.
"""

import threading
import time

import numpy as np
import pytest

from hifi.api.bus import Command, LogMessage, MessageBus, SensorData
from hifi.api.model import Model, Var
from hifi.caster.pool import ChunkPool
from hifi.errors import ModelError
from hifi.run import timemanager
from hifi.run.timemanager import TimeManager, set_up
from hifi.runtime.threads import ThreadBudget


@pytest.fixture(autouse=True)
def every_free_model_ahead(monkeypatch):
    """The models here cast no rays: let them all run ahead (the hardest case for the order)."""
    monkeypatch.setattr(timemanager, "AHEAD_MIN_RAYS", 0)


class World:
    """What scene writers change and every step reads (a driven body's track, in a run)."""

    def __init__(self):
        self.version = 0


class Free(Model):
    """Subscribes to nothing: steps ahead. Sleeps ``delay_s`` (GIL released, as Embree does) so
    later steps finish before earlier ones; publishes a log line from its step."""

    model_name = "free"

    def __init__(self, name, rate_hz, world, delay_s, chunks=None):
        super().__init__(name, rate_hz=rate_hz)
        self.world, self.delay_s, self.chunks = world, delay_s, chunks
        self.count = 0                                    # its own state, across its steps

    def step(self, k, t):
        seen = self.world.version
        time.sleep(self.delay_s * (1 + (k % 3)))
        if self.chunks is not None:                       # nested: chunks on the steps' threads
            parts = self.chunks.run([lambda j=j: (time.sleep(0.001), j * j)[1] for j in range(6)])
            assert parts == [j * j for j in range(6)]
        self.count += 1
        self.ctx.bus.publish(LogMessage(self.name, t, text=f"{self.name} {k}"))
        return {"seen": Var((), np.int64(seen), "1", "world version read"),
                "count": Var((), np.int64(self.count), "1", "steps so far")}


class Driver(Model):
    """A subscriber: logs every message it receives and commands the writer."""

    model_name = "driver"

    def __init__(self, name, rate_hz, received):
        super().__init__(name, rate_hz=rate_hz)
        self.received = received

    def setup(self, ctx):
        super().setup(ctx)
        ctx.bus.subscribe(self._on, SensorData)
        ctx.bus.subscribe(self._on, LogMessage)

    def _on(self, msg):
        self.received.append((type(msg).__name__, msg.sender, msg.time_s, getattr(msg, "frame", None)))

    def step(self, k, t):
        self.ctx.bus.publish(Command(self.name, t, target="writer", name="go", value={"n": len(self.received)}))
        return {"heard": Var((), np.int64(len(self.received)), "1", "messages so far")}


class Writer(Model):
    """Changes the world every step (a vehicle): no step may run across it."""

    model_name = "writer"
    priority = -1
    writes_scene = True

    def __init__(self, name, rate_hz, world):
        super().__init__(name, rate_hz=rate_hz)
        self.world = world
        self.last = None

    def setup(self, ctx):
        super().setup(ctx)
        ctx.bus.subscribe(lambda m: setattr(self, "last", m.value["n"]), target=self.name)

    def step(self, k, t):
        self.world.version += 1
        return {"version": Var((), np.int64(self.world.version), "1", "world version written"),
                "command": Var((), np.int64(-1 if self.last is None else self.last), "1", "last command")}


def _run(n_threads, *, with_writer=True, chunks=False, duration_s=0.6):
    world, received, frames = World(), [], []
    budget = None if n_threads is None else ThreadBudget(n_threads)
    pool = None if budget is None else ChunkPool(budget=budget)
    models = [Free("slow", 10.0, world, 0.004, pool if chunks else None), Free("fast", 40.0, world, 0.0005),
              Free("mid", 25.0, world, 0.002, pool if chunks else None), Driver("driver", 5.0, received)]
    if with_writer:
        models.append(Writer("writer", 20.0, world))
    bus = MessageBus()

    class Ctx:
        pass
    ctx = Ctx()
    ctx.bus = bus
    subscribers = set_up(models, ctx)

    def on_frame(i, k, t, frame):
        frames.append((models[i].name, k, t, {n: v.data.item() for n, v in frame.items()}))
    try:
        count = TimeManager(models, duration_s, bus, budget=budget, subscribers=subscribers).run(on_frame=on_frame)
    finally:
        if budget is not None:
            budget.close()
    return count, frames, received, bus.published


@pytest.mark.parametrize("n", [2, 3])
def test_frames_messages_and_reads_are_the_serial_runs(n):
    serial = _run(None)
    assert _run(n) == serial
    # the writer's steps are barriers: a free step at t saw the versions written at or before t
    # (the writer runs first at equal times, priority -1; 20 Hz -> version floor(20 t) + 1)
    for name, k, t, values in serial[1]:
        if name in ("slow", "fast", "mid"):
            assert values["seen"] == int(np.floor(20 * t + 1e-9)) + 1


def test_without_a_writer_free_models_run_ahead_and_commit_in_order():
    assert _run(3, with_writer=False) == _run(None, with_writer=False)


def test_nested_chunk_pools_on_the_step_threads_finish():
    result = {}

    def target():
        result["concurrent"] = _run(2, chunks=True)
    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(60.0)                       # serial: about 1 s; a deadlock never ends
    assert not th.is_alive(), "nested pools deadlocked"
    assert result["concurrent"] == _run(None, chunks=False)


class Failing(Free):
    model_name = "failing"

    def step(self, k, t):
        if k == 3:
            raise RuntimeError("boom")
        return super().step(k, t)


@pytest.mark.parametrize("n", [None, 2])
def test_a_failing_step_is_reported_in_its_turn(n):
    world = World()
    budget = None if n is None else ThreadBudget(n)
    log = []
    models = [Failing("bad", 10.0, world, 0.0), Free("other", 50.0, world, 0.002)]
    tm = TimeManager(models, 1.0, MessageBus(), budget=budget, subscribers=set())
    for m in models:
        m.ctx = type("Ctx", (), {"bus": tm.bus})()
    with pytest.raises(ModelError, match=r"model 'bad' \(failing\) failed at t = 0.300000 s, frame 3: RuntimeError: boom"):
        tm.run(on_frame=lambda i, k, t, f: log.append((models[i].name, k)))
    # committed up to the failure, as a serial run: every frame before t = 0.3 (other's frame at
    # 0.3 comes after bad's, registered first), none of the steps other ran ahead
    assert log == [(models[r].name, k) for (t, _, r, k) in tm.schedule() if t < 0.3]
    if budget is not None:
        budget.idle()                   # nothing left running or queued
        budget.close()
