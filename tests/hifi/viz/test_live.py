"""``hifi run --live``: a run published to a Foxglove WebSocket server while it happens.

The client here is not hifi's: ``websockets`` speaks the Foxglove WebSocket protocol
(foxglove/ws-protocol ``docs/spec.md``: ``serverInfo`` and ``advertise`` as JSON text,
``subscribe``, then binary message data: opcode 1, subscription id (uint32 LE), log time
(uint64 LE), payload), and each message is decoded with the schema the server advertised (a
protobuf ``FileDescriptorSet``, through google.protobuf's descriptor pool), never with hifi's
code. Every wait is bounded; only the loopback interface is used.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import signal
import socket
import struct
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from _procs import Run, env

pytest.importorskip("foxglove", reason="foxglove-sdk is not installed (pip install \".[live]\")")
websockets = pytest.importorskip("websockets", reason="websockets is not installed (pip install \".[test]\")")
pytest.importorskip("google.protobuf", reason="protobuf is not installed (pip install \".[test]\")")

#: The Foxglove WebSocket subprotocol (ws-protocol spec), and the name foxglove-sdk 0.30 gives
#: the same protocol; a client offers both, the server picks the one it speaks.
SUBPROTOCOLS = ["foxglove.websocket.v1", "foxglove.sdk.v1"]

#: Longest wait for the client to connect and for the run to finish [s].
CONNECT_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 180.0

#: Subscriptions to a channel the server did not know yet are sent again after this [s], at
#: most this many times.
RESUBSCRIBE_DELAY_S = 0.02
MAX_RESUBSCRIBE = 100

START_UTC = "2024-05-01T12:00:00Z"
DURATION_S = 1.2

#: A robot with a SICK scanner, a colour camera, a depth camera and a pose sensor, driven by the
#: go/no-go planner: the lidar + camera of examples/crossing.toml and the closed loop of
#: examples/patrol.toml in one short run.
SCENE = f"""\
version = 1
[simulation]
duration_s = {DURATION_S}
start_utc = "{START_UTC}"
seed = 3
[output]
motion_rate_hz = 10.0
[materials.asphalt]
reflectivity = 0.27
color_rgb = [0.2, 0.2, 0.2]
class = "road"
[materials.concrete]
reflectivity = 0.35
color_rgb = [0.6, 0.6, 0.55]
class = "building"
[materials.paint]
reflectivity = 0.5
color_rgb = [0.8, 0.5, 0.1]
class = "robot"
[[objects]]
name = "ground"
mesh = "plane"
size_m = [60, 60]
material = "asphalt"
[[objects]]
name = "block"
mesh = "box"
size_m = [4, 4, 3]
material = "concrete"
position_m = [8.0, 3.0, 1.5]
[[objects]]
name = "robot"
mesh = "car"
size_m = [1.0, 0.7, 0.6]
material = "paint"
vehicle = {{ wheelbase_m = 0.6, max_steer_deg = 35.0, max_speed_m_s = 2.0, max_accel_m_s2 = 1.0 }}
[[sensors]]
name = "lms"
model = "sick_lms5xx"
parent = "robot"
position_m = [0.6, 0.0, 0.7]
rpy_deg = [0, 5, 0]
[[sensors]]
name = "camera"
model = "ccd_camera"
rate_hz = 5.0
parent = "robot"
position_m = [0.6, 0.0, 0.8]
[sensors.params]
resolution_x = 64
resolution_y = 48
pixel_pitch_m = 5.86e-5
focal_length_m = 4.0e-3
[[sensors]]
name = "depth"
model = "depthmap"
rate_hz = 5.0
parent = "robot"
position_m = [0.6, 0.0, 0.8]
[sensors.params]
resolution_x = 32
resolution_y = 24
fov_x_deg = 90.0
max_range_m = 50.0
[[sensors]]
name = "odometry"
model = "pose"
rate_hz = 20.0
parent = "robot"
[[models]]
name = "planner"
model = "gonogo_planner"
[models.params]
body = "robot"
sensors = ["lms"]
goal_m = [15.0, 0.0]
speed_m_s = 1.5
half_width_m = 0.8
lookahead_m = 2.0
extent_m = 30.0
cell_m = 0.5
"""

#: Every topic the run above publishes and its schema (hifi/viz/live.py's table: points of the
#: scanner and of the depth camera, the camera's image, the depth image, both cameras'
#: calibrations, the poses and paths
#: of the pose sensor and of the vehicle model, the planner's go/no-go grid and planned path,
#: the transforms, the object boxes, and the ground-truth pose and path of the one moving
#: object that rides on nothing, the robot).
EXPECTED = {
    "/lms/points": "foxglove.PointCloud",
    "/depth/points": "foxglove.PointCloud",
    "/camera/image": "foxglove.RawImage",
    "/depth/depth": "foxglove.RawImage",
    "/camera/camera_info": "foxglove.CameraCalibration",
    "/depth/camera_info": "foxglove.CameraCalibration",
    "/odometry/pose": "foxglove.PoseInFrame",
    "/odometry/path": "foxglove.PosesInFrame",
    "/robot/pose": "foxglove.PoseInFrame",
    "/robot/path": "foxglove.PosesInFrame",
    "/planner/gonogo": "foxglove.Grid",
    "/planner/path": "foxglove.PosesInFrame",
    "/tf": "foxglove.FrameTransforms",
    "/motion/robot/pose": "foxglove.PoseInFrame",
    "/motion/robot/path": "foxglove.PosesInFrame",
    "/objects": "foxglove.SceneUpdate",
}


def _message_class(schema_name: str, schema_b64: str):
    """The protobuf class of ``schema_name`` from the advertised FileDescriptorSet."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema_b64))
    pool = descriptor_pool.DescriptorPool()
    todo = list(fds.file)
    while todo:                                  # dependencies first, whatever their order in the set
        added = [f for f in todo if all(pool_has(pool, d) for d in f.dependency)]
        if not added:
            raise AssertionError(f"{schema_name}: unresolvable dependencies in the advertised schema")
        for f in added:
            pool.Add(f)
            todo.remove(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema_name))


def pool_has(pool, file_name: str) -> bool:
    try:
        pool.FindFileByName(file_name)
        return True
    except KeyError:
        return False


async def _listen(url: str, deadline: float, on_message=None) -> tuple[dict, dict]:
    """Subscribe to every channel the server advertises and decode what arrives until the
    server closes the connection (the run ended); ``on_message(received)`` after each message.
    Returns the advertised ``{topic: channel}`` and ``{topic: [(log_time_ns, message), ...]}``."""
    channels, classes, received, sub_of, retries = {}, {}, {}, {}, {}
    while True:                                  # the server may not listen yet
        try:
            ws = await websockets.connect(url, subprotocols=SUBPROTOCOLS, open_timeout=5, max_size=None)
            break
        except (OSError, asyncio.TimeoutError, websockets.exceptions.InvalidHandshake):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
    async with ws:
        assert ws.subprotocol in SUBPROTOCOLS
        next_sub = 1
        while True:
            try:
                data = await asyncio.wait_for(ws.recv(), timeout=max(deadline - time.monotonic(), 0.01))
            except websockets.exceptions.ConnectionClosed:
                return channels, received
            if isinstance(data, str):
                op = json.loads(data)
                if op["op"] == "advertise":
                    subs = []
                    for ch in op["channels"]:
                        assert ch["encoding"] == "protobuf" and ch["schemaEncoding"] == "protobuf", ch
                        channels[ch["topic"]] = ch
                        classes[next_sub] = (ch["topic"], _message_class(ch["schemaName"], ch["schema"]))
                        subs.append({"id": next_sub, "channelId": ch["id"]})
                        sub_of[ch["id"]] = next_sub
                        next_sub += 1
                    await ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))
                elif op["op"] == "status" and (m := re.fullmatch(r"Unknown channel ID: (\d+)", op["message"])):
                    # foxglove-sdk 0.30 advertises a channel made while a client is connected a
                    # moment before it accepts subscriptions to it: subscribe again, a bounded
                    # number of times.
                    cid = int(m.group(1))
                    retries[cid] = retries.get(cid, 0) + 1
                    assert cid in sub_of and retries[cid] <= MAX_RESUBSCRIBE, op
                    await asyncio.sleep(RESUBSCRIBE_DELAY_S)
                    await ws.send(json.dumps({"op": "subscribe",
                                              "subscriptions": [{"id": sub_of[cid], "channelId": cid}]}))
                continue
            assert data[0] == 1, f"opcode {data[0]}: only message data is expected"
            sub, log_time = struct.unpack_from("<IQ", data, 1)
            topic, cls = classes[sub]
            received.setdefault(topic, []).append((log_time, cls.FromString(bytes(data[13:]))))
            if on_message is not None:
                on_message(received)


def _stderr_url(run: Run) -> str | None:
    m = re.search(r"live view on (ws://\S+)", run.stderr)
    return m.group(1) if m else None


def _freed(port: int, timeout_s: float = 10.0) -> bool:
    """Whether ``port`` on the loopback can be bound within ``timeout_s`` [s] (the SDK's
    server finishes stopping in its own threads after ``stop()`` returns)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)    # as a server binds
            try:
                probe.bind(("127.0.0.1", port))
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
        time.sleep(0.05)


def _ns(msg_stamp) -> int:
    return msg_stamp.seconds * 1_000_000_000 + msg_stamp.nanos


@pytest.fixture
def scene(tmp_path) -> Path:
    path = tmp_path / "scene.toml"
    path.write_text(SCENE, encoding="utf-8")
    return path


def _hifi(*args):
    return [sys.executable, "-m", "hifi.cli", *map(str, args)]


def test_live_run_publishes_every_topic_and_writes_the_same_files(tmp_path, scene):
    run = Run(_hifi("run", scene, "--out", tmp_path / "live", "--no-progress", "--live", "127.0.0.1:0",
                    "--live-wait", CONNECT_TIMEOUT_S), tmp_path, env(tmp_path))
    try:
        run.wait_until(lambda: _stderr_url(run) is not None, "the live view's address on stderr")
        url = _stderr_url(run)
        assert url.startswith("ws://127.0.0.1:")
        channels, received = asyncio.run(_listen(url, time.monotonic() + RUN_TIMEOUT_S))
        assert run.wait() == 0, run.stderr
    finally:
        if run.proc.poll() is None:
            run.kill()
        run.close()
    assert {t: c["schemaName"] for t, c in channels.items()} == EXPECTED
    assert sorted(received) == sorted(EXPECTED), f"no message on {sorted(set(EXPECTED) - set(received))}"
    epoch_ns = int(datetime.fromisoformat(START_UTC).replace(tzinfo=timezone.utc).timestamp()) * 1_000_000_000
    for topic, msgs in received.items():
        for log_time, msg in msgs:
            # Stamps are simulated time: start_utc + t with 0 <= t < duration (the scenario's).
            assert epoch_ns <= log_time < epoch_ns + int(DURATION_S * 1e9), (topic, log_time)
            stamp = msg.timestamp if hasattr(msg, "timestamp") else msg.transforms[0].timestamp \
                if hasattr(msg, "transforms") else msg.entities[0].timestamp
            assert _ns(stamp) == log_time, topic
    cloud = received["/lms/points"][-1][1]
    fields = {f.name: f for f in cloud.fields}
    assert {"x", "y", "z", "intensity", "class", "object"} <= set(fields)
    assert cloud.frame_id == "map" and len(cloud.data) % cloud.point_stride == 0 and len(cloud.data) > 0
    image = received["/camera/image"][-1][1]
    assert (image.width, image.height, image.encoding) == (64, 48, "rgb8")      # the scenario's resolution
    assert len(image.data) == image.step * image.height == 64 * 3 * 48
    depth = received["/depth/depth"][-1][1]
    assert (depth.width, depth.height, depth.encoding, len(depth.data)) == (32, 24, "32FC1", 32 * 24 * 4)
    info = received["/camera/camera_info"][-1][1]
    # fx = focal_length_m / pixel_pitch_m = 4e-3 / 5.86e-5 px; cx = 64 / 2 - 0.5 (scenario above;
    # ROS counts pixels from their centres)
    assert (info.width, info.height, info.distortion_model) == (64, 48, "plumb_bob")
    assert info.K[0] == pytest.approx(4.0e-3 / 5.86e-5, rel=1e-12) and info.K[2] == 31.5 and info.K[5] == 23.5
    grid = received["/planner/gonogo"][-1][1]
    # extent_m 30 / cell_m 0.5 = 60 cells a side (the planner's map, autonomy/planner.py)
    assert grid.column_count == 60 and len(grid.data) == 60 * grid.row_stride
    assert grid.cell_size.x == grid.cell_size.y == 0.5
    assert grid.fields[0].name == "gonogo"
    # The grid's corner: the planner's map is centred half-way between the robot's start (0, 0)
    # and the goal (15, 0), 60 cells of 0.5 m a side (autonomy/planner.py, setup).
    assert (grid.pose.position.x, grid.pose.position.y) == (7.5 - 15.0, 0.0 - 15.0)
    boxes = received["/objects"][-1][1]
    assert sorted(e.id for e in boxes.entities) == ["block", "ground", "robot"]
    assert received["/robot/path"][-1][1].frame_id == "map"

    # The same run without --live writes the same bytes.
    plain = Run(_hifi("run", scene, "--out", tmp_path / "plain", "--no-progress"), tmp_path, env(tmp_path))
    try:
        assert plain.wait(RUN_TIMEOUT_S) == 0, plain.stderr
    finally:
        plain.close()
    # What the client decoded is what the files hold: the last go/no-go grid and scanner cloud.
    import xarray as xr
    t0_ns = epoch_ns
    with xr.open_dataset(tmp_path / "live" / "planner.nc") as ds:
        log_time, grid = received["/planner/gonogo"][-1]
        frame = int(round((log_time - t0_ns) / 0.5e9))                   # the planner's 2 Hz
        assert (bytes(grid.data) == ds["gonogo"].isel(frame=frame).transpose("y", "x").values.astype("<i1")
                .tobytes())
    with xr.open_dataset(tmp_path / "live" / "lms.nc", decode_times=False) as ds:      # timestamp [s]
        log_time, cloud = received["/lms/points"][-1]
        times_ns = t0_ns + (ds["timestamp"].min(("step", "layer")).values * 1e9).round().astype(int)
        f = ds.isel(frame=int(abs(times_ns - log_time).argmin()))
        det = f["detected"].values
        numeric = cloud.fields[0].DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number  # the schema's enum
        dtypes = {"FLOAT32": "<f4", "FLOAT64": "<f8", "INT32": "<i4", "UINT8": "u1", "INT8": "i1"}
        layout = {fl.name: (fl.offset, dtypes[numeric[fl.type].name]) for fl in cloud.fields}
        pts = np.frombuffer(bytes(cloud.data), dtype=np.dtype(
            {"names": list(layout), "formats": [v[1] for v in layout.values()],
             "offsets": [v[0] for v in layout.values()], "itemsize": cloud.point_stride}))
        assert len(pts) == det.sum()
        # the file stores points to 1e-4 m (0.05 mm error, docs/outputs.md), the message as float32 (1 um at 10 m)
        np.testing.assert_allclose(pts["x"], f["x_noisy"].values[det], rtol=0, atol=0.06e-3)
        np.testing.assert_array_equal(pts["class"], f["annotation"].values[det])
    with xr.open_dataset(tmp_path / "live" / "motion.nc") as ds:
        log_time, pose = received["/motion/robot/pose"][-1]
        frame = int(round((log_time - t0_ns) / 0.1e9))                   # motion_rate_hz = 10
        p = ds["position"].isel(frame=frame).sel(body="robot").values
        np.testing.assert_allclose([pose.pose.position.x, pose.pose.position.y, pose.pose.position.z], p,
                                   rtol=0, atol=1e-9)                  # both float64 [m]
    names = sorted(p.name for p in (tmp_path / "plain").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "live").iterdir())
    for name in names:
        assert (tmp_path / "live" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes(), name


def test_port_in_use_exits_2_with_one_line(tmp_path, scene):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = Run(_hifi("run", scene, "--out", tmp_path / "out", "--live", f"127.0.0.1:{port}"), tmp_path,
                  env(tmp_path))
        try:
            status = run.wait()
        finally:
            run.close()
    lines = run.stderr.strip().splitlines()
    assert status == 2 and len(lines) == 1, run.stderr
    assert lines[0].startswith("hifi: error: --live = ") and f"127.0.0.1:{port}" in lines[0]
    assert "in use" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scene.toml", "stderr.txt", "stdout.txt"]


@pytest.mark.parametrize("args, named", [
    (["--live", "127.0.0.1:70000"], "--live"),
    (["--live", "localhost:"], "--live"),
    (["--live", "eighty"], "--live"),
    (["--live", "[::1]8765"], "--live"),
    (["--live", "127.0.0.1:0", "--live-wait", "-1"], "--live-wait"),
    (["--live-wait", "5"], "--live-wait"),
])
def test_bad_live_arguments_exit_2_with_one_line(tmp_path, scene, args, named):
    run = Run(_hifi("run", scene, "--out", tmp_path / "out", *args), tmp_path, env(tmp_path))
    try:
        status = run.wait()
    finally:
        run.close()
    lines = run.stderr.strip().splitlines()
    assert status == 2 and len(lines) == 1, run.stderr
    assert lines[0].startswith(f"hifi: error: {named}"), lines[0]
    assert not (tmp_path / "out").exists()


def test_ctrl_c_during_a_live_run_leaves_nothing(tmp_path, scene):
    run = Run(_hifi("run", scene, "--out", tmp_path / "out", "--no-progress", "--live", "127.0.0.1:0",
                    "--live-wait", RUN_TIMEOUT_S), tmp_path, env(tmp_path))
    try:
        run.wait_until(lambda: _stderr_url(run) is not None, "the live view's address on stderr")
        port = int(_stderr_url(run).rsplit(":", 1)[1])
        run.proc.send_signal(signal.SIGINT)            # before the first event: loading, or waiting for a client
        status = run.wait()
    finally:
        if run.proc.poll() is None:
            run.kill()
        run.close()
    assert status == 130, run.stderr                  # 128 + SIGINT (hifi.runtime.interrupt)
    assert run.stderr.strip().splitlines()[-1].startswith("hifi: interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scene.toml", "stderr.txt", "stdout.txt"]
    assert _freed(port)                              # the server is gone: its port is free


def test_ctrl_c_with_a_client_connected_leaves_nothing(tmp_path, scene):
    run = Run(_hifi("run", scene, "--out", tmp_path / "out", "--no-progress", "--duration", 60, "--live",
                    "127.0.0.1:0", "--live-wait", CONNECT_TIMEOUT_S), tmp_path, env(tmp_path))
    signalled = []

    def interrupt(received):                         # mid-run: a second of frames already seen
        if not signalled and len(received.get("/odometry/pose", ())) >= 20:     # 20 Hz pose sensor
            run.proc.send_signal(signal.SIGINT)
            signalled.append(True)
    try:
        run.wait_until(lambda: _stderr_url(run) is not None, "the live view's address on stderr")
        asyncio.run(_listen(_stderr_url(run), time.monotonic() + RUN_TIMEOUT_S, interrupt))
        status = run.wait()
    finally:
        if run.proc.poll() is None:
            run.kill()
        run.close()
    assert signalled and status == 130, run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("hifi: interrupted at t = ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scene.toml", "stderr.txt", "stdout.txt"]


def test_python_api_live_server_kept_across_runs(tmp_path, scene):
    import hifi
    from hifi.errors import ScenarioError
    with hifi.LiveServer("127.0.0.1:0") as server:
        a = hifi.load(scene).run_to_files(tmp_path / "a", duration_s=0.2, progress=False, live=server)
        b = hifi.load(scene).run_to_files(tmp_path / "b", duration_s=0.2, progress=False, live=server)
        with socket.socket() as probe, pytest.raises(OSError):
            probe.bind(("127.0.0.1", server.port))     # the runs leave the server they were given open
    assert _freed(server.port)                          # stopped at the end of the block
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].read_bytes() == b[name].read_bytes(), name
    with pytest.raises(ScenarioError, match=r"^live = '127.0.0.1:8765': expected a live view"):
        hifi.load(scene).run(out=None, live="127.0.0.1:8765")


def test_parse_address():
    from hifi.errors import ScenarioError
    from hifi.viz.live import DEFAULT_HOST, DEFAULT_PORT, parse_address
    assert parse_address(DEFAULT_PORT) == (DEFAULT_HOST, 8765)
    assert parse_address("9000") == ("127.0.0.1", 9000)
    assert parse_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_address("[::1]:9000") == ("::1", 9000)
    for bad in ("", ":9000", "host:-1", "host:65536", "1.2.3.4:x", True, 1.5):
        with pytest.raises(ScenarioError, match="live"):
            parse_address(bad)


def test_optical_frame_rotation():
    """The camera's optical frame (REP 103 "Suffix Frames": z forward, x right, y down) in the
    sensor frame (x forward, y left, z up): optical x = -sensor y, y = -sensor z, z = sensor x."""
    from scipy.spatial.transform import Rotation
    from hifi.viz.live import OPTICAL_IN_SENSOR_XYZW
    columns = [[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]     # optical axes in sensor coordinates
    np.testing.assert_allclose(Rotation.from_quat(OPTICAL_IN_SENSOR_XYZW).as_matrix(), np.array(columns).T,
                               atol=1e-15)


def test_missing_sdk_names_the_install_command(monkeypatch):
    from hifi.viz.live import LiveServer
    monkeypatch.setitem(sys.modules, "foxglove", None)        # as if foxglove-sdk were not installed
    with pytest.raises(ImportError, match=r"pip install .*foxglove-sdk"):
        LiveServer("127.0.0.1:0")


class _Enough(Exception):
    """Raised by the test client once it has what it waited for."""


def test_a_stepping_session_is_shown_live(tmp_path):
    """A session (hifi.run.session) with a live server: a client subscribed before the first
    step receives the yard lidar's point cloud and the driven robot's pose while the caller
    steps, decoded with the schemas the server advertises; the files equal a run without it."""
    import threading

    import hifi
    from conftest import REPO_ROOT

    yard = REPO_ROOT / "examples" / "yard.toml"
    got: dict = {}

    def enough(received):
        if "/lidar/points" in received and "/robot/pose" in received:
            got.update(received)
            raise _Enough

    with hifi.LiveServer("127.0.0.1:0", wait_s=CONNECT_TIMEOUT_S) as server:
        def client():
            try:
                asyncio.run(_listen(server.url, time.monotonic() + RUN_TIMEOUT_S, on_message=enough))
            except _Enough:
                pass

        listener = threading.Thread(target=client, daemon=True)
        listener.start()
        with hifi.Simulation.from_file(yard).session(tmp_path / "live", duration_s=1.0, live=server) as s:
            while not s.finished:
                s.command("robot", speed_m_s=1.0, steer_deg=10.0)
                s.step(0.25)
            commands = s.commands
        listener.join(timeout=RUN_TIMEOUT_S)
    assert not listener.is_alive()
    cloud = got["/lidar/points"][-1][1]
    assert type(cloud).DESCRIPTOR.full_name == "foxglove.PointCloud" and len(cloud.data) > 0
    assert type(got["/robot/pose"][-1][1]).DESCRIPTOR.full_name == "foxglove.PoseInFrame"
    from hifi.run.session import CommandScript
    batch = hifi.Simulation.from_file(yard)
    batch.add_model(CommandScript("session", commands))
    batch.run_to_files(tmp_path / "batch", duration_s=1.0, progress=False)
    for name in ("lidar.nc", "robot.nc", "imu.nc"):
        assert (tmp_path / "live" / name).read_bytes() == (tmp_path / "batch" / name).read_bytes(), name
