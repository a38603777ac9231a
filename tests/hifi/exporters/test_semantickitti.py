"""SemanticKITTI export and the ground-truth boxes of motion.nc.

Sources of expected values:
- the file conventions of semantic-kitti-api (github.com/PRBonn/semantic-kitti-api, commit
  a9c749e8), re-implemented here as the api reads them, not imported: ``auxiliary/laserscan.py``
  (``np.fromfile(float32).reshape(-1, 4)``; ``label & 0xFFFF`` semantic, ``label >> 16``
  instance, ``sem + (inst << 16) == label``, as many labels as points) and
  ``generate_sequential.py`` (``parse_calibration``: ``key: 12 numbers`` per line;
  ``parse_poses``: ``Tr^-1 P Tr``);
- the published label ids of ``config/semantic-kitti.yaml`` (car 10, road 40, sidewalk 48,
  building 50, pole 80; outlier 1; unlabeled 0), typed in from the yaml;
- analytic poses: the street's ego car drives x = 10 t m and yaws 20 t deg; the lidar sits 1.9 m
  above its origin (tests/_scenes.street_scenario);
- the dataset itself (reported points, reflectivity, object ids), which the export must carry.
"""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.spatial.transform import Rotation

import hifi
from hifi.cli import main
from hifi.exporters import ExportError, ExportWarning, export, register_exporter
from hifi.exporters.semantickitti import EXPORTER, SEMANTIC_KITTI_LABELS, THING_LABELS, label_tables, semantic_id

from _scenes import street_scenario

#: float32 storage of a coordinate below 64 m: half an ulp is 3.8 um; 10 um with the pose's float64 rounding.
POINT_ATOL_M = 1e-5

#: Label ids the street's classes must get (semantic-kitti-api config/semantic-kitti.yaml).
PUBLISHED = {"road": 40, "car": 10, "building": 50, "pole": 80, "sidewalk": 48, "Mail box": 0}


@pytest.fixture(scope="module", autouse=True)
def _registered():
    # the editable install's entry points predate this format: register it for the tests
    register_exporter(EXPORTER)


@pytest.fixture(scope="module")
def street():
    return street_scenario(weather={"fog_visibility_m": 60.0})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, street):
    out = tmp_path_factory.mktemp("sk") / "run"
    for ds in hifi.Simulation.from_dict(street).run(out=out, progress=False).values():
        ds.close()
    return out


@pytest.fixture(scope="module")
def lidar(run_dir):
    with xr.open_dataset(run_dir / "lidar.nc") as ds:
        ds.load()
    oid = ds.object_id.values[ds.detected.values]
    assert {-2, 1, 2, 3, 4, 5, 6, 7} <= set(np.unique(oid))   # fog, cars, house, lamp, mailbox, kerb all hit
    return ds


@pytest.fixture(scope="module")
def exported(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("skout") / "kitti"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert export(run_dir, "semantickitti", out, sensor="lidar") == [out]
    return out, [w for w in caught if issubclass(w.category, ExportWarning)]


def _read_scan(seq, f):
    """A scan as semantic-kitti-api's LaserScan / SemLaserScan read it."""
    scan = np.fromfile(seq / "velodyne" / f"{f:06d}.bin", dtype=np.float32).reshape((-1, 4))
    label = np.fromfile(seq / "labels" / f"{f:06d}.label", dtype=np.uint32).reshape((-1))
    assert label.shape[0] == scan.shape[0]                        # "Scan and Label don't contain same number of points"
    sem, inst = label & 0xFFFF, label >> 16
    assert (sem + (inst << 16) == label).all()                    # laserscan.py's sanity check
    return scan[:, :3], scan[:, 3], sem, inst


def _parse_calibration(path):
    """generate_sequential.py's parse_calibration: every line ``KEY: 12 numbers``."""
    calib = {}
    for line in path.read_text().splitlines():
        key, content = line.strip().split(":")
        values = [float(v) for v in content.strip().split()]
        pose = np.zeros((4, 4))
        pose[0, 0:4], pose[1, 0:4], pose[2, 0:4] = values[0:4], values[4:8], values[8:12]
        pose[3, 3] = 1.0
        calib[key] = pose
    return calib


def _parse_poses(path, calibration):
    """generate_sequential.py's parse_poses: ``Tr^-1 P Tr`` per line."""
    tr = calibration["Tr"]
    poses = []
    for line in path.read_text().splitlines():
        v = [float(x) for x in line.split()]
        pose = np.eye(4)
        pose[:3, :4] = np.reshape(v, (3, 4))
        poses.append(np.linalg.inv(tr) @ pose @ tr)
    return np.array(poses)


def _lidar_pose(t):
    """Analytic lidar -> scene pose of the street at time t [s]: R (yaw 20 t deg), T."""
    return Rotation.from_euler("z", 20.0 * t, degrees=True), np.array([10.0 * t, 0.0, 1.9])


# ---------------------------------------------------------------------------- label map


def test_label_map_is_the_published_one():
    # config/semantic-kitti.yaml: the ids of the classes hifi uses, and every name maps back to its id
    for name, i in {"car": 10, "road": 40, "sidewalk": 48, "building": 50, "vegetation": 70, "pole": 80,
                    "unlabeled": 0, "outlier": 1, "traffic-sign": 81, "moving-car": 252}.items():
        assert SEMANTIC_KITTI_LABELS[i] == name and semantic_id(name) == i
    assert len(SEMANTIC_KITTI_LABELS) == 34                      # the yaml's labels: 34 entries
    assert semantic_id("Traffic sign") == semantic_id("traffic_sign") == 81
    assert semantic_id("unlabelled") == 0 and semantic_id("window") is None
    # things: learning_map targets in evaluate_panoptic.py's things list (bus -> other-vehicle)
    assert {10, 13, 18, 20, 30, 252} <= THING_LABELS and not {40, 48, 50, 70, 80, 81, 0, 1} & THING_LABELS
    sem, inst, unknown = label_tables(["road", "car", "window", "car"])
    assert sem.tolist() == [1, 0, 40, 10, 0, 10]                 # ids -2 (outlier), -1, then objects 0..3
    assert inst.tolist() == [0, 0, 0, 2, 0, 4]                   # object index + 1 for things
    assert unknown == ["window"]


# ---------------------------------------------------------------------------- the export


def test_layout_and_unknown_class_warning(exported, lidar):
    out, caught = exported
    seq = out / "sequences" / "00"
    n = lidar.sizes["frame"]
    assert sorted(p.name for p in (seq / "velodyne").iterdir()) == [f"{f:06d}.bin" for f in range(n)]
    assert sorted(p.name for p in (seq / "labels").iterdir()) == [f"{f:06d}.label" for f in range(n)]
    assert {p.name for p in seq.iterdir()} == {"velodyne", "labels", "poses.txt", "calib.txt", "times.txt"}
    assert (out / "README.txt").is_file()
    # the one class without a SemanticKITTI id is named, with its point count
    (w,) = caught
    n_mailbox = int(((lidar.object_id == 6) & lidar.detected).sum())
    assert "Mail box" in str(w.message) and f"({n_mailbox} points)" in str(w.message)
    readme = (out / "README.txt").read_text()
    assert "Tr is the identity" in readme and "reflectivity" in readme and "Mail box -> 0" in readme


def test_every_point_carries_the_class_and_instance_of_the_object_hit(exported, lidar, street):
    out, _ = exported
    seq = out / "sequences" / "00"
    classes = [street["materials"][o["material"]]["class"] for o in street["objects"]]
    thing = [c == "car" for c in classes]
    for f in range(lidar.sizes["frame"]):
        _, _, sem, inst = _read_scan(seq, f)
        fr = lidar.isel(frame=f)
        oid = fr.object_id.values[fr.detected.values]
        expected_sem = np.array([1 if o == -2 else PUBLISHED[classes[o]] for o in oid])
        expected_inst = np.array([o + 1 if o >= 0 and thing[o] else 0 for o in oid])
        np.testing.assert_array_equal(sem, expected_sem)
        np.testing.assert_array_equal(inst, expected_inst)
        assert (sem == 1).sum() == (oid == -2).sum() > 0              # fog returns: outlier
        assert set(inst[sem == 10]) <= {2, 3, 4} and not inst[sem != 10].any()


def test_points_are_the_detected_returns_in_the_scan_start_lidar_frame(exported, lidar):
    out, _ = exported
    seq = out / "sequences" / "00"
    t0 = lidar.hifi.seconds("frame_time").values
    for f in range(lidar.sizes["frame"]):
        xyz, remission, _, _ = _read_scan(seq, f)
        fr = lidar.isel(frame=f)
        det = fr.detected.values
        scene = np.stack([fr[v].values[det] for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
        rot, trans = _lidar_pose(t0[f])
        np.testing.assert_allclose(xyz, rot.apply(scene - trans, inverse=True), rtol=0, atol=POINT_ATOL_M)
        # remission: the calibrated reflectivity, 0..1 (float32)
        np.testing.assert_array_equal(remission, np.clip(fr.reflectivity.values[det], 0, 1).astype(np.float32))
        assert 0.0 <= remission.min() and remission.max() <= 1.0


def test_poses_calib_times_reproduce_the_sensor_poses(exported, lidar):
    out, _ = exported
    seq = out / "sequences" / "00"
    calib = _parse_calibration(seq / "calib.txt")
    assert list(calib) == ["Tr"]
    np.testing.assert_array_equal(calib["Tr"], np.eye(4))
    poses = _parse_poses(seq / "poses.txt", calib)
    t = lidar.hifi.seconds("frame_time").values
    assert poses.shape == (len(t), 4, 4)
    r0, p0 = _lidar_pose(t[0])
    for f, tf in enumerate(t):
        r, p = _lidar_pose(tf)
        expected = np.eye(4)
        expected[:3, :3] = (r0.inv() * r).as_matrix()
        expected[:3, 3] = r0.apply(p - p0, inverse=True)
        np.testing.assert_allclose(poses[f], expected, rtol=0, atol=1e-9)   # 1 nm: 12 printed digits
    np.testing.assert_allclose(np.loadtxt(seq / "times.txt"), t - t[0], rtol=0, atol=1e-12)
    # reading back gives the dataset: poses.txt and the first pose put every point where it was measured
    xyz, _, _, _ = _read_scan(seq, 2)
    fr = lidar.isel(frame=2)
    scene = np.stack([fr[v].values[fr.detected.values] for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
    back = (r0.as_matrix() @ (poses[2][:3, :3] @ xyz.T + poses[2][:3, 3:4])).T + p0
    np.testing.assert_allclose(back, scene, rtol=0, atol=POINT_ATOL_M)


def test_dual_return_exports_the_strongest_echo(tmp_path):
    run = tmp_path / "run"
    for ds in hifi.Simulation.from_dict(street_scenario(duration_s=0.1, return_mode="dual")).run(
            out=run, progress=False).values():
        ds.close()
    with xr.open_dataset(run / "lidar.nc") as ds:
        ds.load()
    assert ds.x_noisy.dims[-1] == "return"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExportWarning)
        export(run, "semantickitti", tmp_path / "k", sensor="lidar")
    xyz, _, _, _ = _read_scan(tmp_path / "k" / "sequences" / "00", 0)
    slot0 = ds.isel(frame=0, **{"return": 0})
    assert len(xyz) == int(slot0.detected.sum()) < int(ds.isel(frame=0).detected.sum())
    rot, trans = _lidar_pose(0.0)
    scene = np.stack([slot0[v].values[slot0.detected.values] for v in ("x_noisy", "y_noisy", "z_noisy")], -1)
    np.testing.assert_allclose(xyz, rot.apply(scene - trans, inverse=True), rtol=0, atol=POINT_ATOL_M)


# ---------------------------------------------------------------------------- bad input, CLI


def test_bad_input_is_refused_and_leaves_nothing(run_dir, tmp_path):
    for sensor, words in ((None, "give --sensor NAME (range sensors of this run: lidar)"),
                          ("nope", "has no sensor 'nope'"),
                          ("motion", "'motion' (sensor_model 'motion') is not a range sensor")):
        with pytest.raises(ExportError, match=words.replace("(", r"\(").replace(")", r"\)")):
            export(run_dir, "semantickitti", tmp_path / "k", sensor=sensor)
    assert list(tmp_path.iterdir()) == []
    # a run directory, not a dataset
    with pytest.raises(ExportError, match="takes a run directory"):
        export(run_dir / "lidar.nc", "semantickitti", tmp_path / "k", sensor="lidar")


def test_camera_is_not_a_range_sensor(tmp_path):
    cam = {"name": "cam", "model": "depthmap", "rate_hz": 10.0, "params": {"resolution_x": 8, "resolution_y": 6}}
    run = tmp_path / "run"
    for ds in hifi.Simulation.from_dict(street_scenario(duration_s=0.1, sensors_extra=[cam])).run(
            out=run, progress=False).values():
        ds.close()
    out = tmp_path / "o"
    out.mkdir()
    with pytest.raises(ExportError, match="'cam' \\(sensor_model 'depthmap'\\) is not a range sensor.*: lidar"):
        export(run, "semantickitti", out / "k", sensor="cam")
    assert list(out.iterdir()) == []


def test_cli_and_overwrite_of_directories(run_dir, tmp_path, capsys):
    out = tmp_path / "kitti"
    argv = ["export", str(run_dir), "--format", "semantickitti", "--sensor", "lidar", "--out", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExportWarning)
        assert main(argv) == 0
    assert capsys.readouterr().out.strip() == str(out)
    first = (out / "sequences" / "00" / "poses.txt").read_text()
    assert main(argv) == 2                                       # exists
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert main(argv + ["--overwrite"]) == 0                     # our own directory: replaced
    assert (out / "sequences" / "00" / "poses.txt").read_text() == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]     # no staging left
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["export", str(run_dir), "--format", "semantickitti", "--sensor", "lidar", "--out", str(foreign),
                 "--overwrite"]) == 2
    assert "not written by hifi export" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "keep me"
    # default output: RUN_semantickitti beside the run directory
    shutil.rmtree(out)
    assert main(["export", str(run_dir), "--format", "semantickitti", "--sensor", "lidar"]) == 0
    default = run_dir.with_name(run_dir.name + "_semantickitti")
    assert (default / "sequences" / "00" / "calib.txt").is_file()
    shutil.rmtree(default)


# ---------------------------------------------------------------------------- boxes in motion.nc


def test_boxes_in_motion_nc(run_dir, street):
    # Expected: the car mesh's default size (hifi.api.meshes: 4.5 x 1.8 x 1.5 m, origin on the
    # ground at its centre), the box meshes' own sizes, and the analytic tracks.
    with xr.open_dataset(run_dir / "motion.nc") as motion:
        motion.load()
    t = motion.time.values
    center, size, yaw = motion.box_center.values, motion.box_size.values, motion.box_yaw.values
    assert motion.box_center.attrs["units"] == "m" and motion.box_yaw.attrs["units"] == "rad"
    assert list(motion.object_class.values) == ["road", "car", "car", "car", "building", "pole", "Mail box",
                                                "sidewalk"]
    np.testing.assert_allclose(size[:, 1], [[4.5, 1.8, 1.5]] * len(t), atol=1e-9)
    np.testing.assert_allclose(size[:, 4], [[10, 6, 8]] * len(t), atol=1e-9)
    np.testing.assert_allclose(size[:, 5, 2], 5.0, atol=1e-9)
    np.testing.assert_allclose(center[:, 1], np.column_stack([10 * t, 0 * t, 0.75 + 0 * t]), atol=1e-9)
    np.testing.assert_allclose(yaw[:, 1], np.radians(20 * t), atol=1e-12)
    np.testing.assert_allclose(center[:, 3], np.column_stack([20 + 0 * t, -10 + 10 * t, 0.75 + 0 * t]), atol=1e-9)
    np.testing.assert_allclose(yaw[:, 3], np.pi / 2, atol=1e-12)
    np.testing.assert_allclose(center[:, 2], [[12, 4, 0.75]] * len(t), atol=1e-9)
    np.testing.assert_allclose(yaw[:, 2], np.radians(30), atol=1e-12)
    # velocities: the ego's track, 10 m/s along x and 20 deg/s about z
    i = list(motion.body.values).index("ego")
    np.testing.assert_allclose(motion.velocity.values[1:, i], [[10, 0, 0]] * (len(t) - 1), atol=1e-6)
    np.testing.assert_allclose(motion.angular_velocity.values[1:, i], [[0, 0, np.radians(20)]] * (len(t) - 1),
                               atol=1e-9)
    assert motion.body_parent.values[list(motion.body.values).index("lidar")] == "ego"
    # the accessor: boxes and poses at any time in the span, exact at samples, linear between
    b = motion.hifi.boxes(0.05)
    np.testing.assert_allclose(b.box_center.values[1], [0.5, 0, 0.75], atol=1e-9)
    np.testing.assert_allclose(b.box_yaw.values[1], np.radians(1.0), atol=1e-12)
    assert b.object_class.values[1] == "car"
    both = motion.hifi.boxes([0.0, t[-1]])
    np.testing.assert_array_equal(both.box_center.values[1], center[-1])
    pose = motion.hifi.pose("lidar", 0.123)
    np.testing.assert_allclose(pose.translation, [1.23, 0, 1.9], atol=1e-9)
    np.testing.assert_allclose(pose.rotation.as_euler("xyz")[2], np.radians(20 * 0.123), atol=1e-12)
    with pytest.raises(ValueError, match="outside the recorded span"):
        motion.hifi.boxes(t[-1] + 0.01)
    with pytest.raises(ValueError, match="bodies: ground, ego"):
        motion.hifi.pose("nobody", 0.0)


def test_box_of_a_tilted_body_holds_its_bounds():
    # A 6 x 2.5 m plane stood upright (roll 90 deg): its box is 6 m long, 0 wide, 2.5 m high,
    # heading 0 (analytic: the plane's corners in the scene).
    from hifi.world.motion import Pose, oriented_boxes
    center, size, yaw = oriented_boxes([[[-3, -1.25, 0], [3, 1.25, 0]]], Pose.from_position_rpy([1, 2, 3], [90, 0, 0]))
    np.testing.assert_allclose(size, [[6, 0, 2.5]], atol=1e-12)
    np.testing.assert_allclose(center, [[1, 2, 3]], atol=1e-12)
    assert yaw[0] == 0.0
    # a yawed upright box is its body-frame bounds, moved and turned (any heading, any offset)
    rng = np.random.default_rng(0)
    for _ in range(5):
        lo = rng.uniform(-3, 0, 3)
        hi = lo + rng.uniform(0.1, 4, 3)
        psi = rng.uniform(-np.pi, np.pi)
        pose = Pose.from_position_rpy(rng.uniform(-50, 50, 3), [0, 0, np.degrees(psi)])
        c, s, y = oriented_boxes([[lo, hi]], pose)
        np.testing.assert_allclose(s[0], hi - lo, atol=1e-12)
        np.testing.assert_allclose(y[0], psi, atol=1e-12)
        np.testing.assert_allclose(c[0], pose.apply(0.5 * (lo + hi)), atol=1e-12)
