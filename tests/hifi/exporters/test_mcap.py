"""ROS 2 bag (MCAP) export of a whole run, read back with two independent clients.

Sources of expected values:
- ``rosbags`` (a real ROS 2 bag reader in the test extra, with its own CDR decoder and its own
  copy of the standard interfaces) opens the bag folder; ``mcap`` + ``mcap-ros2-support``
  decode the same file as a second client;
- the standard ROS 2 interfaces as rosbags' Humble typestore holds them (field names, types,
  order, constants) for the message definitions we write;
- analytic values of the street scenario (tests/_scenes.street_scenario): the ego car's pose
  x = 10 t m, yaw 20 t deg, so its twist (10 m/s, 20 deg/s); the mounts given in the scenario;
  header stamps = start_utc + simulated time;
- the VLP-16's published beam layout (VLP-16 user's manual: 16 beams from -15 to +15 deg in
  2 deg steps), for the rings;
- pyproj (PROJ, EPSG:4978 -> EPSG:4979) for the GNSS fix's latitude, longitude and height;
- :func:`optics.aberrations.apply_distortion` on an impulse image for the camera's ``k1``;
- the datasets themselves for what the bag must carry (points, intensities, images, depths).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
import xarray as xr
import yaml
from scipy.spatial.transform import Rotation

import hifi
from hifi.exporters import ExportError, ExportWarning, export, register_exporter
from hifi.exporters import _ros2msgs
from hifi.exporters.mcap import EXPORTER, ros_name

from _scenes import STREET_START_UTC, street_scenario
from conftest import REPO_ROOT

rosbags = pytest.importorskip("rosbags", reason="rosbags (test extra) reads the bag back")
from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

EXAMPLES = REPO_ROOT / "examples"
TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
START_NS = int(np.datetime64(STREET_START_UTC.rstrip("Z"), "ns").astype(np.int64))

#: float32 point coordinates below 64 m (half an ulp 3.8 um) with the pose in float64.
POINT_ATOL_M = 1e-5

CAMERA = {"name": "camera", "model": "ccd_camera", "rate_hz": 5.0, "parent": "ego", "position_m": [1.0, 0.0, 1.4],
          "params": {"resolution_x": 64, "resolution_y": 48, "pixel_pitch_m": 5.86e-6, "focal_length_m": 4e-4,
                     "W311": 2.0}}
DEPTH = {"name": "depth", "model": "depthmap", "rate_hz": 10.0, "parent": "ego", "position_m": [1.0, 0.0, 1.4],
         "params": {"resolution_x": 16, "resolution_y": 12}}
GPS = {"name": "gps", "model": "gps_l1", "rate_hz": 10.0, "parent": "ego", "position_m": [0.0, 0.0, 2.0],
       "params": {"nav_file": "data/07590920.05n"}}
#: A pose sensor named imu gives the IMU its mount; its dataset is then replaced by a synthetic
#: IMU dataset (docs/datasets.md: angular_rate, specific_force over (frame, axis)).
IMU_MOUNT = {"name": "imu", "model": "pose", "rate_hz": 100.0, "parent": "ego", "position_m": [0.5, 0.2, 0.4]}


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_exporter(EXPORTER)       # the editable install's entry points predate this format


def _synthetic_imu(n, rate_hz=100.0, seed=5):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate_hz
    units = f"seconds since {STREET_START_UTC.rstrip('Z')}"
    return xr.Dataset(
        {"timestamp": ("frame", t, {"units": units, "long_name": "time of the measurement since simulation start"}),
         "angular_rate": (("frame", "axis"), rng.normal(0, 0.1, (n, 3)), {"units": "rad s-1", "long_name": "w"}),
         "specific_force": (("frame", "axis"), rng.normal([0, 0, 9.81], 0.1, (n, 3)),
                            {"units": "m s-2", "long_name": "f"})},
        coords={"frame": np.arange(n), "axis": ["x", "y", "z"]},
        attrs={"sensor_name": "imu", "sensor_model": "imu", "start_utc": STREET_START_UTC})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bag") / "run"
    d = street_scenario(sensors_extra=[CAMERA, DEPTH, GPS, IMU_MOUNT])
    for ds in hifi.Simulation.from_dict(d, base_dir=EXAMPLES).run(out=out, progress=False).values():
        ds.close()
    with xr.open_dataset(out / "imu.nc") as pose:
        n = pose.sizes["frame"]
    (out / "imu.nc").unlink()
    _synthetic_imu(n).to_netcdf(out / "imu.nc")
    return out


@pytest.fixture(scope="module")
def bag(run_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bagout")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExportWarning)
        written = export(run_dir, "mcap", folder / "run.mcap")
    assert written == [folder / "run.mcap", folder / "metadata.yaml"]
    messages = {}
    with Reader(folder) as reader:
        topics = {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
        for conn, t_ns, raw in reader.messages():
            messages.setdefault(conn.topic, []).append((t_ns, TYPESTORE.deserialize_cdr(raw, conn.msgtype)))
    return folder, topics, messages


def _ds(run_dir, name):
    # loaded and closed at once: a file left to the garbage collector may be closed in the middle
    # of another netCDF call (seen as HDF errors and a segfault in later opens)
    with xr.open_dataset(run_dir / f"{name}.nc") as ds:
        return ds.load()


def _ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _ego(t):
    """Analytic ego pose: rotation (yaw 20 t deg) and position (10 t, 0, 0)."""
    t = np.asarray(t, dtype=float)
    return Rotation.from_euler("z", 20.0 * t[..., None] if t.ndim else 20.0 * t, degrees=True), np.stack(
        [10.0 * t, 0.0 * t, 0.0 * t], axis=-1)


# ---------------------------------------------------------------------------- definitions


def _rosbags_type(node) -> str:
    from rosbags.typesys.msg import Nodetype
    kind, arg = node
    if kind == Nodetype.BASE:
        return arg[0]
    if kind == Nodetype.NAME:
        pkg, _, name = arg.split("/")
        return f"{pkg}/{name}"
    inner, size = arg
    return _rosbags_type(inner) + (f"[{size}]" if kind == Nodetype.ARRAY else "[]")


def test_message_definitions_are_the_standard_interfaces():
    # every definition we write: the fields and constants of rosbags' ROS 2 Humble typestore
    for msgtype, text in _ros2msgs.DEFINITIONS.items():
        consts, fields = TYPESTORE.FIELDDEFS[msgtype]
        ours_fields = [tuple(line.split()[::-1]) for line in text.splitlines() if "=" not in line]
        assert ours_fields == [(name, _rosbags_type(node)) for name, node in fields], msgtype
        ours_consts = [(line.split()[1].split("=")[0], line.split()[0], int(line.split("=")[1]))
                       for line in text.splitlines() if "=" in line]
        assert ours_consts == [tuple(c) for c in consts], msgtype
    # the schema of a type carries every type it uses once
    text = _ros2msgs.schema_text("nav_msgs/msg/Odometry")
    assert text.count("MSG: geometry_msgs/Vector3\n") == 1 and text.count("=" * 80) == 9


def test_ros_names():
    assert ros_name("car_1") == "car_1"
    assert ros_name("front-lidar") == "front_lidar"
    assert ros_name("2nd cam") == "_2nd_cam"
    assert ros_name("a--b") == "a_b"


# ---------------------------------------------------------------------------- the bag


def test_topics_counts_and_metadata(bag, run_dir):
    folder, topics, messages = bag
    lidar, cam, depth, gps, imu = (_ds(run_dir, n) for n in ("lidar", "camera", "depth", "gps", "imu"))
    motion = _ds(run_dir, "motion")
    n_motion = motion.sizes["frame"]
    expected = {
        "/lidar/points": ("sensor_msgs/msg/PointCloud2", lidar.sizes["frame"]),
        "/camera/image_raw": ("sensor_msgs/msg/Image", cam.sizes["frame"]),
        "/camera/camera_info": ("sensor_msgs/msg/CameraInfo", cam.sizes["frame"]),
        "/depth/image_raw": ("sensor_msgs/msg/Image", depth.sizes["frame"]),
        "/depth/camera_info": ("sensor_msgs/msg/CameraInfo", depth.sizes["frame"]),
        "/gps/fix": ("sensor_msgs/msg/NavSatFix", gps.sizes["frame"]),
        "/imu/imu": ("sensor_msgs/msg/Imu", imu.sizes["frame"]),
        "/tf_static": ("tf2_msgs/msg/TFMessage", 1),
        "/tf": ("tf2_msgs/msg/TFMessage", n_motion),
        **{f"/ground_truth/{b}/odom": ("nav_msgs/msg/Odometry", n_motion) for b in motion.body.values},
    }
    assert topics == expected
    assert {t: len(m) for t, m in messages.items()} == {t: c for t, (_, c) in expected.items()}
    meta = yaml.safe_load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["relative_file_paths"] == ["run.mcap"] and meta["storage_identifier"] == "mcap"
    assert meta["message_count"] == sum(c for _, c in expected.values())
    stamps = [t for m in messages.values() for t, _ in m]
    assert meta["starting_time"]["nanoseconds_since_epoch"] == min(stamps) == START_NS
    assert meta["duration"]["nanoseconds"] == max(stamps) - min(stamps)
    static = next(t for t in meta["topics_with_message_count"] if t["topic_metadata"]["name"] == "/tf_static")
    assert "durability: 1" in static["topic_metadata"]["offered_qos_profiles"]       # transient local


def test_second_client_decodes_every_message(bag):
    # mcap + mcap-ros2-support: the same messages, the same bytes of the first cloud
    pytest.importorskip("mcap_ros2")
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    folder, topics, messages = bag
    counts = {}
    cloud = None
    with open(folder / "run.mcap", "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for _, channel, message, decoded in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/lidar/points" and cloud is None:
                cloud = decoded
            assert message.log_time == message.publish_time
            assert "offered_qos_profiles" in channel.metadata
    assert counts == {t: c for t, (_, c) in topics.items()}
    assert bytes(cloud.data) == messages["/lidar/points"][0][1].data.tobytes()


def test_every_stamp_is_start_utc_plus_simulated_time(bag, run_dir):
    _, _, messages = bag
    for topic, msgs in messages.items():
        for t_ns, m in msgs:
            stamp = m.transforms[0].header.stamp if topic.startswith("/tf") else m.header.stamp
            assert _ns(stamp) == t_ns, topic                        # log time = header stamp
    motion = _ds(run_dir, "motion")
    expected = START_NS + np.round(motion.time.values * 1e9).astype(np.int64)
    assert [t for t, _ in messages["/tf"]] == list(expected)
    assert [t for t, _ in messages["/ground_truth/ego/odom"]] == list(expected)
    lidar = _ds(run_dir, "lidar")
    start = np.nanmin(lidar.hifi.seconds().values.reshape(lidar.sizes["frame"], -1), axis=1)
    np.testing.assert_array_equal([t for t, _ in messages["/lidar/points"]],
                                  START_NS + np.round(start * 1e9).astype(np.int64))
    np.testing.assert_allclose(start, [0.0, 0.1, 0.2], atol=1e-12)        # scan start = frame start (10 Hz)


def test_clouds_hold_the_detected_points_in_the_firing_lidar_frame(bag, run_dir):
    _, _, messages = bag
    lidar = _ds(run_dir, "lidar")
    ts = lidar.hifi.seconds().values
    elevation_deg = np.degrees(lidar.laser_elevation.values)
    # VLP-16 manual: beams at -15, -13, ..., +15 deg; ring 0 the lowest
    ring_of_laser = np.round((elevation_deg + 15.0) / 2.0).astype(int)
    assert sorted(ring_of_laser) == list(range(16))
    for f, (t_ns, msg) in enumerate(messages["/lidar/points"]):
        assert [(fl.name, fl.offset, fl.datatype, fl.count) for fl in msg.fields] == [
            ("x", 0, 7, 1), ("y", 4, 7, 1), ("z", 8, 7, 1), ("intensity", 12, 7, 1), ("ring", 16, 4, 1),
            ("t", 20, 7, 1)]
        assert msg.header.frame_id == "lidar" and msg.height == 1 and msg.point_step == 24 and msg.is_dense
        assert not msg.is_bigendian and msg.row_step == 24 * msg.width
        dt = np.dtype({"names": ["x", "y", "z", "intensity", "ring", "t"],
                       "formats": ["<f4", "<f4", "<f4", "<f4", "<u2", "<f4"], "offsets": [0, 4, 8, 12, 16, 20],
                       "itemsize": 24})
        pts = np.frombuffer(msg.data.tobytes(), dtype=dt)
        fr = lidar.isel(frame=f)
        det = fr.detected.values
        assert len(pts) == det.sum()
        t = (t_ns - START_NS) * 1e-9 + pts["t"].astype(float)
        np.testing.assert_allclose(t, ts[f][det], atol=2e-8)                # float32 t: 10 ns
        assert pts["t"].min() >= 0.0
        rot, pos = _ego(t)
        xyz = np.column_stack([pts["x"], pts["y"], pts["z"]]).astype(float)
        scene = rot.apply(xyz) + pos + rot.apply([0.0, 0.0, 1.9])
        expected = np.stack([fr[v].values[det] for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
        np.testing.assert_allclose(scene, expected, rtol=0, atol=POINT_ATOL_M)
        np.testing.assert_array_equal(pts["intensity"], fr.intensity.values[det].astype(np.float32))
        laser = np.broadcast_to(np.arange(16), det.shape)[det]
        np.testing.assert_array_equal(pts["ring"], ring_of_laser[laser])


def test_tf_chain_gives_the_sensor_pose(bag, run_dir):
    _, _, messages = bag
    static = {tr.child_frame_id: tr for tr in messages["/tf_static"][0][1].transforms}
    # mounts as the scenario gives them; fixed objects in map; cameras' optical frames
    assert static["lidar"].header.frame_id == "ego"
    np.testing.assert_allclose([static["lidar"].transform.translation.z, static["imu"].transform.translation.y],
                               [1.9, 0.2], atol=1e-12)
    assert static["parked"].header.frame_id == "map" and "ego" not in static and "crossing" not in static
    q = static["camera_optical"].transform.rotation
    np.testing.assert_allclose(Rotation.from_quat([q.x, q.y, q.z, q.w]).apply([0, 0, 1]), [1, 0, 0], atol=1e-12)
    lidar = _ds(run_dir, "lidar")
    tf = dict(messages["/tf"])
    for f, (t_ns, cloud) in enumerate(messages["/lidar/points"]):
        dynamic = {tr.child_frame_id: tr for tr in tf[t_ns].transforms}
        assert set(dynamic) == {"ego", "crossing"} and dynamic["ego"].header.frame_id == "map"

        def pose(tr):
            r, p = tr.transform.rotation, tr.transform.translation
            return Rotation.from_quat([r.x, r.y, r.z, r.w]), np.array([p.x, p.y, p.z])

        r1, p1 = pose(dynamic["ego"])
        r2, p2 = pose(static[cloud.header.frame_id])
        rot, pos = r1 * r2, p1 + r1.apply(p2)
        np.testing.assert_allclose(pos, lidar.sensor_position.values[f], atol=1e-9)
        assert (rot.inv() * Rotation.from_quat(lidar.sensor_orientation.values[f])).magnitude() < 1e-9
        t = (t_ns - START_NS) * 1e-9
        np.testing.assert_allclose(pos, [10 * t, 0, 1.9], atol=1e-9)               # analytic


def test_odometry_is_the_ground_truth(bag, run_dir):
    _, _, messages = bag
    motion = _ds(run_dir, "motion")
    for k, (t_ns, odom) in enumerate(messages["/ground_truth/ego/odom"]):
        t = (t_ns - START_NS) * 1e-9
        assert odom.header.frame_id == "map" and odom.child_frame_id == "ego"
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        np.testing.assert_allclose([p.x, p.y, p.z], [10 * t, 0, 0], atol=1e-9)
        np.testing.assert_allclose(Rotation.from_quat([q.x, q.y, q.z, q.w]).as_euler("xyz")[2], np.radians(20 * t),
                                   atol=1e-12)
        if k:                                     # t = 0 takes the one-sided difference: same here
            v, w = odom.twist.twist.linear, odom.twist.twist.angular
            yaw = np.radians(20 * t)
            np.testing.assert_allclose([v.x, v.y, v.z], [10 * np.cos(yaw), -10 * np.sin(yaw), 0], atol=1e-6)
            np.testing.assert_allclose([w.x, w.y, w.z], [0, 0, np.radians(20)], atol=1e-9)
    (_, parked), *_ = messages["/ground_truth/parked/odom"]
    np.testing.assert_allclose(parked.twist.twist.linear.x, 0.0, atol=1e-12)
    np.testing.assert_allclose(motion.position.values[:, 2], [[12, 4, 0]] * motion.sizes["frame"], atol=1e-12)


def test_images_and_camera_info(bag, run_dir):
    _, _, messages = bag
    cam = _ds(run_dir, "camera")
    for f, (t_ns, img) in enumerate(messages["/camera/image_raw"]):
        assert img.encoding == "rgb16" and img.header.frame_id == "camera_optical"
        assert (img.height, img.width, img.step) == (48, 64, 64 * 3 * 2)
        np.testing.assert_array_equal(np.frombuffer(img.data.tobytes(), "<u2").reshape(48, 64, 3),
                                      cam.image.values[f])
        assert t_ns == START_NS + round(float(cam.hifi.seconds().values[f]) * 1e9)
    info = messages["/camera/camera_info"][0][1]
    fx = 4e-4 / 5.86e-6                                               # focal length / pixel pitch
    np.testing.assert_allclose(info.k, [fx, 0, 31.5, 0, fx, 23.5, 0, 0, 1], rtol=1e-12)   # centre of 64 x 48
    np.testing.assert_allclose(info.p, [fx, 0, 31.5, 0, 0, fx, 23.5, 0, 0, 0, 1, 0], rtol=1e-12)
    assert info.distortion_model == "plumb_bob" and info.header.frame_id == "camera_optical"
    # k1 reproduces hifi's distortion remap: remapping a ramp image (bilinear interpolation is
    # exact on it) gives each output pixel's source position; plumb_bob must send it back there
    from optics.aberrations import apply_distortion
    k1 = info.d[0]
    assert k1 < 0 and list(info.d[1:]) == [0, 0, 0, 0]               # W311 > 0: barrel
    rows, cols = np.indices((48, 64)).astype(float)
    src = apply_distortion(np.stack([rows, cols], axis=-1), 2.0, pixel_pitch_m=5.86e-6, wavelength_m=550e-9,
                           f_number=8.0)
    inside = (src[..., 0] > 0.5) & (src[..., 0] < 46.5) & (src[..., 1] > 0.5) & (src[..., 1] < 62.5)
    x, y = (src[..., 1] - 31.5) / fx, (src[..., 0] - 23.5) / fx
    s = 1 + k1 * (x * x + y * y)
    assert np.hypot(src[..., 0] - rows, src[..., 1] - cols)[inside].max() > 1.0     # it moves pixels
    np.testing.assert_allclose((x * s * fx + 31.5)[inside], cols[inside], atol=1e-9)
    np.testing.assert_allclose((y * s * fx + 23.5)[inside], rows[inside], atol=1e-9)
    # the depth camera: 32FC1 metres, NaN where nothing was hit (REP 118)
    depth = _ds(run_dir, "depth")
    for f, (_, img) in enumerate(messages["/depth/image_raw"]):
        assert img.encoding == "32FC1" and img.step == 16 * 4
        np.testing.assert_array_equal(np.frombuffer(img.data.tobytes(), "<f4").reshape(12, 16),
                                      depth.depth.values[f].astype(np.float32))
    dinfo = messages["/depth/camera_info"][0][1]
    assert dinfo.k[2] == depth.attrs["principal_point_px"][0] - 0.5 == 7.5


def test_imu_and_fix(bag, run_dir):
    _, _, messages = bag
    imu = _ds(run_dir, "imu")
    for f, (t_ns, m) in enumerate(messages["/imu/imu"]):
        assert m.header.frame_id == "imu" and m.orientation_covariance[0] == -1.0
        np.testing.assert_array_equal([m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z],
                                      imu.angular_rate.values[f])
        np.testing.assert_array_equal([m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z],
                                      imu.specific_force.values[f])
        assert t_ns == START_NS + round(f / 100.0 * 1e9)
    pyproj = pytest.importorskip("pyproj")
    to_geodetic = pyproj.Transformer.from_crs("EPSG:4978", "EPSG:4979", always_xy=True)
    gps = _ds(run_dir, "gps")
    for f, (_, fix) in enumerate(messages["/gps/fix"]):
        x, y, z = gps.position_ecef.values[f]
        lon, lat, h = to_geodetic.transform(x, y, z)
        assert fix.status.status == 0 and fix.status.service == 1 and fix.header.frame_id == "gps"
        np.testing.assert_allclose([fix.latitude, fix.longitude], [lat, lon], atol=1e-9)   # 0.1 mm
        np.testing.assert_allclose(fix.altitude, h, atol=1e-4)
        assert fix.position_covariance_type == 0


# ---------------------------------------------------------------------------- bad input


def test_bad_input_leaves_nothing(run_dir, tmp_path, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    with pytest.raises(ExportError, match="has no sensor 'nope'"):
        export(run_dir, "mcap", out / "x.mcap", sensor="nope")
    empty = tmp_path / "empty_run"
    empty.mkdir()
    with pytest.raises(ExportError, match="no motion.nc"):
        export(empty, "mcap", out / "x.mcap")
    monkeypatch.setitem(sys.modules, "mcap.writer", None)             # mcap not installed
    with pytest.raises(ImportError, match="pip install mcap mcap-ros2-support"):
        export(run_dir, "mcap", out / "x.mcap")
    assert list(out.iterdir()) == []


def test_one_sensor_and_a_renamed_one(run_dir, tmp_path):
    # --sensor: that sensor's topics plus the transforms and ground truth
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportWarning)
        export(run_dir, "mcap", tmp_path / "lidar.mcap", sensor="lidar")
    with Reader(tmp_path) as reader:
        topics = {c.topic for c in reader.connections}
    assert "/lidar/points" in topics and not any(t.startswith(("/camera", "/gps", "/imu/")) for t in topics)


def test_imu_model_dataset_becomes_imu_messages(tmp_path):
    # The imu model (a spline track: it needs a twice-differentiable mount): every Imu message
    # carries the dataset's angular_rate and specific_force (sensor axes) at its timestamp.
    d = {"simulation": {"duration_s": 0.2, "seed": 2, "start_utc": STREET_START_UTC},
         "objects": [{"name": "cart", "mesh": "box", "size_m": [1, 1, 1], "interpolation": "spline",
                      "track": [{"t_s": 0.0, "position_m": [0, 0, 0]}, {"t_s": 0.1, "position_m": [0.1, 0.05, 0]},
                                {"t_s": 0.2, "position_m": [0.3, 0.1, 0]}]}],
         "sensors": [{"name": "imu", "model": "imu", "rate_hz": 100.0, "parent": "cart"}]}
    run = tmp_path / "run"
    for ds in hifi.Simulation.from_dict(d).run(out=run, progress=False).values():
        ds.close()
    imu = _ds(run, "imu")
    (tmp_path / "bag").mkdir()
    export(run, "mcap", tmp_path / "bag" / "imu.mcap")
    with Reader(tmp_path / "bag") as reader:
        msgs = [(t, TYPESTORE.deserialize_cdr(raw, c.msgtype)) for c, t, raw in reader.messages()
                if c.topic == "/imu/imu"]
    assert len(msgs) == imu.sizes["frame"] == 20
    t = imu.hifi.seconds().values
    for f, (t_ns, m) in enumerate(msgs):
        assert t_ns == START_NS + round(float(t[f]) * 1e9)
        np.testing.assert_array_equal([m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z],
                                      imu.angular_rate.values[f])
        np.testing.assert_array_equal([m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z],
                                      imu.specific_force.values[f])
