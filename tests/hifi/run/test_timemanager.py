"""Scheduler and message bus: rates, ordering, determinism (analytic expectations)."""

import numpy as np

import hifi
from hifi.api.bus import Command, MessageBus, SensorData
from hifi.api.model import Model, Var
from hifi.run.timemanager import TimeManager

from _scenes import wall_scenario


class Recorder(Model):
    model_name = "recorder"

    def __init__(self, name, rate_hz, log, priority=0):
        super().__init__(name, rate_hz=rate_hz)
        self.log = log
        self.priority = priority

    def step(self, k, t):
        self.log.append((t, self.name, k))
        return {"value": Var((), np.float64(k), "1", "event index")}


def test_rates_and_exact_timestamps():
    log = []
    models = [Recorder("lidar", 10.0, log), Recorder("slow", 1.0, log), Recorder("fast", 100.0, log)]
    TimeManager(models, 1.0, MessageBus()).run()
    by = {n: [t for t, m, _ in log if m == n] for n in ("lidar", "slow", "fast")}
    assert [len(by[n]) for n in ("lidar", "slow", "fast")] == [10, 1, 100]
    # Each model's event k is at exactly k / rate (not accumulated sums).
    assert by["lidar"] == [k / 10.0 for k in range(10)]
    assert by["fast"] == [k / 100.0 for k in range(100)]
    assert by["slow"] == [0.0]
    # Global order is by time, then priority, then registration order.
    times = [t for t, _, _ in log]
    assert times == sorted(times)
    assert [m for t, m, _ in log if t == 0.0] == ["lidar", "slow", "fast"]
    assert [m for t, m, _ in log if t == 0.5] == ["lidar", "fast"]


def test_priority_breaks_ties_before_registration():
    log = []
    models = [Recorder("a", 10.0, log, priority=5), Recorder("b", 10.0, log, priority=-1)]
    TimeManager(models, 0.2, MessageBus()).run()
    assert [m for _, m, _ in log] == ["b", "a", "b", "a"]


def test_schedule_is_deterministic_and_matches_run():
    def once():
        log = []
        models = [Recorder("x", 7.0, log), Recorder("y", 3.0, log), Recorder("z", 13.0, log)]
        tm = TimeManager(models, 2.0, MessageBus())
        sched = [(t, tm.models[r].name, k) for t, _, r, k in tm.schedule()]
        tm.run()
        return log, sched
    log1, sched1 = once()
    log2, _ = once()
    assert log1 == log2 == sched1


def test_bus_delivers_sensor_data_and_commands_in_time_order():
    bus = MessageBus()
    log = []

    class Controller(Model):
        model_name = "controller"
        writes_dataset = False

        def setup(self, ctx):
            super().setup(ctx)
            bus.subscribe(self.on_data, SensorData, sender="lidar")

        def on_data(self, msg):
            bus.publish(Command(self.name, msg.time_s, target="vehicle", name="brake", value=msg.frame))

        def step(self, k, t):
            return None

    received = []
    bus.subscribe(lambda m: received.append((m.time_s, m.target, m.value)), Command)
    models = [Recorder("lidar", 10.0, log), Controller("ctrl", rate_hz=1.0)]
    for m in models:
        m.setup(hifi.RunContext(None, None, bus, 0, 1.0, "", {}, "."))
    TimeManager(models, 1.0, bus).run()
    assert received == [(k / 10.0, "vehicle", k) for k in range(10)]


def test_three_rates_in_one_simulation():
    # A 10 Hz depth sensor, a 1 Hz and a 100 Hz pose model in one run, each at its own timestamps.
    d = wall_scenario(10.0, duration_s=1.0, sensors=[
        {"name": "cam", "model": "depthmap", "rate_hz": 10.0, "params": {"resolution_x": 8, "resolution_y": 6}},
        {"name": "slow", "model": "pose", "rate_hz": 1.0},
        {"name": "fast", "model": "pose", "rate_hz": 100.0}])
    sim = hifi.Simulation.from_dict(d)
    seen = []

    class Listener(Model):
        model_name = "listener"
        writes_dataset = False
        priority = 10

        def setup(self, ctx):
            super().setup(ctx)
            ctx.bus.subscribe(lambda m: seen.append((m.sender, m.time_s)), SensorData)

        def event_time(self, k):
            return None

    sim.add_model(Listener("listener"))
    res = sim.run()
    np.testing.assert_array_equal(res["cam"].hifi.seconds("frame_time").values, np.arange(10) / 10.0)
    np.testing.assert_array_equal(res["slow"].hifi.seconds("frame_time").values, [0.0])
    np.testing.assert_array_equal(res["fast"].hifi.seconds("frame_time").values, np.arange(100) / 100.0)
    assert [t for s, t in seen] == sorted(t for s, t in seen)
    assert sum(1 for s, _ in seen if s == "fast") == 100


def test_motion_recorder_publishes_poses():
    d = wall_scenario(10.0, duration_s=0.1, objects_extra=[
        {"name": "car", "mesh": "box", "size_m": [1, 1, 1],
         "track": [{"t_s": 0.0, "position_m": [0, 0, 0]}, {"t_s": 1.0, "position_m": [10, 0, 0]}]}])
    d["output"] = {"motion_rate_hz": 50.0}
    sim = hifi.Simulation.from_dict(d)
    poses = []

    class Listener(Model):
        model_name = "listener"
        writes_dataset = False

        def setup(self, ctx):
            super().setup(ctx)
            ctx.bus.subscribe(lambda m: poses.append((m.time_s, m.body, m.position_m)), hifi.PoseMessage)

        def event_time(self, k):
            return None

    sim.add_model(Listener("listener"))
    sim.run()
    car = [(t, p) for t, b, p in poses if b == "car"]
    assert [t for t, _ in car] == [k / 50.0 for k in range(5)]
    np.testing.assert_allclose([p[0] for _, p in car], [10 * k / 50.0 for k in range(5)])   # the track


# -- bus: read-only messages, delivery when a frame is complete, commands by target ------------

def _vlp16_wall(tmp_path, listener=None, out="run"):
    d = wall_scenario(10.0, duration_s=0.2, sensors=[
        {"name": "lidar", "model": "vlp16", "rate_hz": 10.0, "params": {"azimuth_stride": 10}}])
    sim = hifi.Simulation.from_dict(d)
    if listener is not None:
        sim.add_model(listener)
    sim.run(out=tmp_path / out)
    import xarray as xr
    with xr.open_dataset(tmp_path / out / "lidar.nc") as ds:
        return ds.load()


def test_subscriber_cannot_rewrite_the_output(tmp_path):
    # Regression (2026-11-23): SensorData shared its arrays with the writer's unflushed
    # buffer, so a subscriber's fill(-1) changed the file. Arrays are read-only now.
    errors = []

    class Vandal(Model):
        model_name = "vandal"
        writes_dataset = False

        def setup(self, ctx):
            super().setup(ctx)
            ctx.bus.subscribe(self.on_data, SensorData, sender="lidar")

        def on_data(self, msg):
            for name in ("distance", "x_noisy", "object_id"):
                arr = msg.data[name]
                try:
                    arr.fill(-1)
                except ValueError as exc:              # "assignment destination is read-only"
                    errors.append(str(exc))
                try:
                    arr.flags.writeable = True          # cannot be switched back on either
                except ValueError:
                    errors.append("flag")

        def event_time(self, k):
            return None

    clean = _vlp16_wall(tmp_path, out="clean")
    vandalised = _vlp16_wall(tmp_path, Vandal("vandal"), out="vandal")
    assert len(errors) == 2 * 3 * 2            # 2 frames x 3 variables x (fill, flag)
    for name in clean.data_vars:
        np.testing.assert_array_equal(vandalised[name].values, clean[name].values, err_msg=name)


def test_message_is_immutable():
    msg = SensorData("s", 0.0, frame=0, data={"a": np.arange(3.0)})
    with np.testing.assert_raises(ValueError):
        msg.data["a"][0] = 5.0
    with np.testing.assert_raises(TypeError):
        msg.data["b"] = np.zeros(1)             # the mapping is a read-only proxy


def test_sweep_published_when_complete(tmp_path):
    # A sweep is delivered at the firing time of its last ray, not at its start.
    got = []

    class Listener(Model):
        model_name = "listener"
        writes_dataset = False

        def setup(self, ctx):
            super().setup(ctx)
            ctx.bus.subscribe(lambda m: got.append((m.time_s, m.frame_time_s, np.nanmax(m.data["timestamp"]))),
                              SensorData, sender="lidar")

        def event_time(self, k):
            return None

    ds = _vlp16_wall(tmp_path, Listener("listener"))
    assert [g[1] for g in got] == [0.0, 0.1]                      # frame start times (rate 10 Hz)
    ts = ds.hifi.seconds("timestamp")
    last = ts.max(dim=[d for d in ts.dims if d != "frame"]).values
    np.testing.assert_allclose([g[0] for g in got], last, rtol=0, atol=1e-9)   # delivered at the last firing
    # (1 ns: xarray decodes the file's CF times to whole nanoseconds)
    assert all(0.09 < g[0] - g[1] < 0.1 for g in got)             # a sweep lasts almost 1 / 10 Hz


def test_delivery_before_steps_at_equal_time():
    # A frame completed at time T is seen by a model stepping at T (deliveries come first).
    bus = MessageBus()
    seen_at_step = []

    class Late(Model):
        model_name = "late"

        def step(self, k, t):
            return {"timestamp": Var(("n",), np.array([t, t + 0.5]), "s", "t"),
                    "v": Var(("n",), np.zeros(2), "1", "v")}

    class Reader(Model):
        model_name = "reader"
        writes_dataset = False

        def setup(self, ctx):
            super().setup(ctx)
            self.frames = []
            ctx.bus.subscribe(lambda m: self.frames.append(m.frame), SensorData, sender="late")

        def step(self, k, t):
            seen_at_step.append((t, list(self.frames)))

    models = [Late("late", rate_hz=1.0), Reader("reader", rate_hz=2.0)]
    for m in models:
        m.setup(hifi.RunContext(None, None, bus, 0, 2.0, "", {}, "."))
    TimeManager(models, 2.0, bus).run()
    # Frame 0 (t = 0) completes at 0.5, frame 1 (t = 1) at 1.5.
    assert seen_at_step == [(0.0, []), (0.5, [0]), (1.0, [0]), (1.5, [0, 1])]


def test_commands_go_to_their_target():
    bus = MessageBus()
    got = {"vehicle": [], "other": []}
    bus.subscribe(lambda m: got["vehicle"].append(m.value["speed_m_s"]), target="vehicle")
    bus.subscribe(lambda m: got["other"].append(m.value), target="other")
    bus.publish(Command("driver", 0.0, target="vehicle", name="drive", value={"speed_m_s": 2.0}))
    assert got == {"vehicle": [2.0], "other": []}
    with np.testing.assert_raises(ValueError):
        Command("driver", 0.0, name="drive")                      # no target
