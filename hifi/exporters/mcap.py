"""ROS 2 bag of a whole run in MCAP (``hifi export RUN_DIR --format mcap --out FILE.mcap``).

Writes ``FILE.mcap`` (MCAP, ``ros2`` profile, CDR messages with ``ros2msg`` schemas) and, beside
it, the rosbag2 ``metadata.yaml`` that makes the directory a bag for ``ros2 bag play`` and for
``rosbags`` (which read a bag folder). Writing needs ``mcap`` and ``mcap-ros2-support``
(``pip install mcap mcap-ros2-support``); they are imported when the format is used.

Why these writers: the ``ros2`` profile of MCAP is what ``ros2 bag record`` writes with its
MCAP storage plugin, and ``mcap-ros2-support`` encodes CDR from the message definitions
(:mod:`hifi.exporters._ros2msgs`, the standard ROS 2 interfaces as text). The tests read the
bag back with ``rosbags``, a separate CDR implementation with its own copy of the interfaces,
so a wrong definition or encoding here cannot pass unnoticed (writing with rosbags too would
check rosbags against itself).

Topics (``NAME`` a sensor, ``BODY`` an object or sensor; names made ROS-legal by
:func:`ros_name`):

============================ =============================== ==========================================
topic                        type                            from
============================ =============================== ==========================================
``/NAME/points``             ``sensor_msgs/msg/PointCloud2`` every range sensor (lidar, ToF, LADAR, grid)
``/NAME/detections``         ``sensor_msgs/msg/PointCloud2`` radars (detection lists: :func:`_radar_clouds`)
``/NAME/image_raw``          ``sensor_msgs/msg/Image``       ``ccd_camera`` (``image``), ``depthmap`` (``depth``, 32FC1)
``/NAME/camera_info``        ``sensor_msgs/msg/CameraInfo``  the same cameras
``/NAME/imu``                ``sensor_msgs/msg/Imu``         datasets with ``angular_rate`` and ``specific_force``
``/NAME/fix``                ``sensor_msgs/msg/NavSatFix``   datasets with ``position_ecef`` (GNSS solution)
``/tf_static``               ``tf2_msgs/msg/TFMessage``      transforms that never change (mounts)
``/tf``                      ``tf2_msgs/msg/TFMessage``      the others, every ``motion.nc`` sample
``/ground_truth/BODY/odom``  ``nav_msgs/msg/Odometry``       every body of ``motion.nc``, every sample
============================ =============================== ==========================================

Conventions
-----------
* Time: header stamps and log times are the simulated instants from the scenario's
  ``start_utc`` (:class:`hifi.api.timebase.Epoch`, UTC nanoseconds since 1970, ROS time).
* Frames (REP 103, REP 105): the scene frame is ``map`` (x east, y north, z up); each body and
  sensor has a frame of its (ROS-legal) name, x forward, y left, z up; a camera's image is in
  ``NAME_optical`` (z forward, x right, y down), a fixed child of ``NAME``. A body's parent
  frame is its ``body_parent`` in ``motion.nc`` (``map`` for the scene). A transform goes to
  ``/tf_static`` (once, at the start, transient-local QoS) when it is the same at every sample
  within :data:`STATIC_TOLERANCE_M` and :data:`STATIC_TOLERANCE_RAD`, else to ``/tf`` at every
  sample.
* Point clouds: one ``PointCloud2`` per frame, unorganised (height 1), every detected return
  (a dual return's two echoes are two points, :func:`._common.detected_returns`), fields
  ``x y z intensity`` (float32), ``ring`` (uint16), ``t`` (float32), little endian,
  point_step 24. ``x y z`` are the reported point in the sensor frame *at its own firing
  instant*, as a driver reports a raw scan (motion distortion included; consumers deskew with
  ``t``): ``p = R(t_i)^T (p_scene - T(t_i))`` with the sensor's pose from ``motion.nc``
  (:func:`hifi.world.motion.interpolate_poses`; beyond the last sample, constant velocity from it).
  The header stamp is the scan start, the frame's earliest ``timestamp`` over all rays; ``t`` is
  seconds since that stamp (>= 0). ``ring`` counts beams by elevation from the lowest (0) up
  (:func:`._common.beam_rings`): Velodyne's drivers count so, Ouster's count from the top; we
  follow the lowest-first order because it is what the Velodyne-trained tools (and LOAM-style
  odometry that sorts rings by elevation) expect, and it does not depend on a vendor's
  numbering. ``intensity`` is the dataset's ``intensity`` in the sensor's own scale (its
  ``long_name`` says which). ``is_dense`` is true (no NaN points).
* Images: ``ccd_camera`` ``image`` as ``rgb16`` / ``mono16`` (or ``rgb8`` / ``mono8`` for 8-bit
  data) in digital numbers as the sensor reports them (a 12-bit camera's values stay 0..4095);
  ``depthmap`` ``depth`` (along the optical axis) as ``32FC1`` metres with NaN where nothing was
  hit (REP 118). ``CameraInfo``: ``plumb_bob`` with ``k1`` from the dataset's
  ``distortion_k1`` (0 when absent), ``fx = fy = focal_length_px`` and the principal point
  ``principal_point_px - 0.5`` (hifi counts pixel positions from the pixel's edge, ROS from its
  centre), ``R`` the identity, ``P = [K | 0]``.
* ``Imu``: ``angular_velocity`` = ``angular_rate``, ``linear_acceleration`` = ``specific_force``
  (REP 145: accelerometers report specific force, +g up at rest), both in the sensor frame;
  no orientation (``orientation_covariance[0] = -1``, the message's convention), other
  covariances zero ("unknown").
* ``NavSatFix``: WGS 84 latitude, longitude [deg] and ellipsoidal height [m] of
  ``position_ecef`` (pymap3d), ``STATUS_FIX`` with ``SERVICE_GPS`` where the solution is finite,
  ``STATUS_NO_FIX`` and NaN otherwise; covariance unknown.
* ``Odometry``: pose of the body in ``map``; twist (``motion.nc`` ``velocity`` and
  ``angular_velocity``) in the body's own frame, the message's convention; covariances zero
  (exact ground truth).

References
----------
MCAP specification and its ``ros2`` profile (mcap.dev). rosbag2 ``metadata.yaml`` version 5
(ros2/rosbag2, ``rosbag2_storage/metadata_io``). REP 103 (units, frames), REP 105 (``map``),
REP 118 (depth images), REP 145 (IMU). ``sensor_msgs`` message documentation (covariance
conventions).
"""

from __future__ import annotations

import heapq
import re
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from .._version import __version__
from ..run.dataset import POINTS_NOISY, seconds_since_start
from ..world.motion import Pose, interpolate_poses
from ..api.timebase import Epoch
from . import _ros2msgs
from ._common import (
    Exporter,
    ExportError,
    ExportWarning,
    beam_rings,
    detected_returns,
    frame_first,
    is_range_dataset,
    n_frames,
    open_motion,
    open_run_dataset,
    run_datasets,
)

#: A transform counts as fixed (``/tf_static``) when its translation stays within this [m] ...
STATIC_TOLERANCE_M = 1e-9
#: ... and its rotation within this angle [rad] over every ``motion.nc`` sample.
STATIC_TOLERANCE_RAD = 1e-9

#: Frame id of the scene frame (REP 105's world-fixed frame).
MAP_FRAME = "map"

#: rosbag2 metadata version written (ROS 2 Humble's; read by Humble and later, and by rosbags).
ROSBAG2_METADATA_VERSION = 5

#: Rotation optical frame -> sensor frame: optical z (forward) = sensor x, optical x (right) =
#: -sensor y, optical y (down) = -sensor z (REP 103, "Suffix Frames").
OPTICAL_IN_SENSOR = Rotation.from_matrix([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])

#: PointCloud2 layout: (name, numpy dtype, offset [byte]); point_step :data:`POINT_STEP`.
CLOUD_FIELDS = (("x", "<f4", 0), ("y", "<f4", 4), ("z", "<f4", 8), ("intensity", "<f4", 12),
                ("ring", "<u2", 16), ("t", "<f4", 20))
POINT_STEP = 24
CLOUD_DTYPE = np.dtype({"names": [f[0] for f in CLOUD_FIELDS], "formats": [f[1] for f in CLOUD_FIELDS],
                        "offsets": [f[2] for f in CLOUD_FIELDS], "itemsize": POINT_STEP})


def _qos(durability: int, depth: int) -> str:
    """One rosbag2 offered-QoS profile as the YAML text rosbag2 stores (rmw enum values:
    history 1 keep-last, reliability 1 reliable, durability 1 transient-local / 2 volatile,
    liveliness 1 automatic; durations 0 = the middleware default)."""
    zero = "\n    sec: 0\n    nsec: 0"
    return (f"- history: 1\n  depth: {depth}\n  reliability: 1\n  durability: {durability}\n"
            f"  deadline:{zero}\n  lifespan:{zero}\n  liveliness: 1\n  liveliness_lease_duration:{zero}\n"
            f"  avoid_ros_namespace_conventions: false")


#: Offered QoS of every topic, and of ``/tf_static`` (transient local, as tf2's static broadcaster).
QOS_DEFAULT = _qos(2, 10)
QOS_STATIC = _qos(1, 1)


def ros_name(name: str) -> str:
    """``name`` as a legal ROS 2 name token: letters, digits and single underscores, not
    starting with a digit (others become ``_``; a leading digit gets a ``_`` before it)."""
    token = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", str(name))) or "_"
    return "_" + token if token[0].isdigit() else token


def _stamp(ns: int) -> dict:
    sec, nanosec = divmod(int(ns), 1_000_000_000)
    return {"sec": sec, "nanosec": nanosec}


def _header(ns: int, frame_id: str) -> dict:
    return {"stamp": _stamp(ns), "frame_id": frame_id}


def _vec(v) -> dict:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def _quat(q) -> dict:
    return {"x": float(q[0]), "y": float(q[1]), "z": float(q[2]), "w": float(q[3])}


class _Motion:
    """``motion.nc`` in memory: body frames, parents, samples; poses at any instant."""

    def __init__(self, ds):
        self.names = [str(b) for b in ds["body"].values]
        self.parents = ([str(p) for p in ds["body_parent"].values] if "body_parent" in ds.variables
                        else [""] * len(self.names))
        self.times = np.asarray(ds["time"].values, dtype=float)
        self.position = np.asarray(ds["position"].transpose("frame", "body", "xyz").values, dtype=float)
        self.orientation = np.asarray(ds["orientation"].transpose("frame", "body", "quat").values, dtype=float)
        if "velocity" in ds.variables and "angular_velocity" in ds.variables:
            self.velocity = np.asarray(ds["velocity"].transpose("frame", "body", "xyz").values, dtype=float)
            self.omega = np.asarray(ds["angular_velocity"].transpose("frame", "body", "xyz").values, dtype=float)
        else:                     # a run written before motion.nc had velocities: differences of the samples
            self.velocity, self.omega = self._differences()

    def _differences(self):
        n = len(self.times)
        if n < 2:
            return np.zeros_like(self.position), np.zeros_like(self.position)
        v = np.gradient(self.position, self.times, axis=0)
        rot = Rotation.from_quat(self.orientation.reshape(-1, 4)).as_matrix().reshape(n, -1, 3, 3)
        omega = np.zeros_like(self.position)
        for b in range(rot.shape[1]):
            steps = Rotation.from_matrix(rot[1:, b] @ np.swapaxes(rot[:-1, b], -1, -2)).as_rotvec()
            rate = steps / np.diff(self.times)[:, None]
            omega[:, b] = np.vstack([rate[:1], 0.5 * (rate[1:] + rate[:-1]), rate[-1:]]) if n > 2 else rate[[0, 0]]
        return v, omega

    def index(self, name: str) -> int | None:
        return self.names.index(name) if name in self.names else None

    def poses_at(self, b: int, t_s) -> Pose:
        """Pose of body ``b`` at instants ``t_s`` [s] (stack): interpolated within the samples,
        extrapolated at constant velocity and angular velocity beyond them."""
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        lo, hi = self.times[0], self.times[-1]
        pos = np.empty((len(t), 3))
        quat = np.empty((len(t), 4))
        inside = (t >= lo) & (t <= hi)
        if inside.any():
            p = interpolate_poses(self.times, self.position[:, b], self.orientation[:, b], t[inside])
            pos[inside], quat[inside] = p.translation, p.rotation.as_quat()
        for mask, k in ((t > hi, -1), (t < lo, 0)):
            if mask.any():
                dt = t[mask] - self.times[k]
                pos[mask] = self.position[k, b] + dt[:, None] * self.velocity[k, b]
                quat[mask] = (Rotation.from_rotvec(dt[:, None] * self.omega[k, b])
                              * Rotation.from_quat(self.orientation[k, b])).as_quat()
        return Pose(Rotation.from_quat(quat), pos)


class _Bag:
    """The MCAP writer with one channel per topic, and the counts ``metadata.yaml`` needs."""

    def __init__(self, stream):
        try:
            from mcap.writer import Writer
            from mcap_ros2._dynamic import serialize_dynamic
        except ImportError as exc:
            raise ImportError(f"--format mcap needs the mcap and mcap-ros2-support packages ({exc}); "
                              f"install them with: pip install mcap mcap-ros2-support") from None
        self._serialize_dynamic = serialize_dynamic
        self._writer = Writer(stream)
        self._writer.start(profile="ros2", library=f"hifi {__version__}")
        self._schemas: dict[str, int] = {}
        self._encoders: dict[str, object] = {}
        self.topics: dict[str, dict] = {}
        self.first_ns: int | None = None
        self.last_ns: int | None = None

    def add_topic(self, topic: str, msgtype: str, qos: str = QOS_DEFAULT) -> None:
        if topic in self.topics:
            raise ExportError(f"mcap: two sources publish on topic {topic!r} (names that differ only in "
                              f"characters ROS names do not allow?)")
        if msgtype not in self._schemas:
            text = _ros2msgs.schema_text(msgtype)
            self._schemas[msgtype] = self._writer.register_schema(msgtype, "ros2msg", text.encode())
            self._encoders[msgtype] = self._serialize_dynamic(msgtype, text)[msgtype]
        cid = self._writer.register_channel(topic, "cdr", self._schemas[msgtype], {"offered_qos_profiles": qos})
        self.topics[topic] = {"id": cid, "type": msgtype, "qos": qos, "count": 0}

    def write(self, topic: str, t_ns: int, msg: dict) -> None:
        info = self.topics[topic]
        data = self._encoders[info["type"]](msg)
        self._writer.add_message(info["id"], log_time=int(t_ns), data=data, publish_time=int(t_ns),
                                 sequence=info["count"])
        info["count"] += 1
        self.first_ns = t_ns if self.first_ns is None else min(self.first_ns, t_ns)
        self.last_ns = t_ns if self.last_ns is None else max(self.last_ns, t_ns)

    def finish(self, metadata: dict) -> None:
        self._writer.add_metadata("hifi", metadata)
        self._writer.finish()


def write_mcap(run_dir: Path, path: Path, *, sensor: str | None = None) -> list[Path]:
    """Write the run in ``run_dir`` as a ROS 2 bag: ``path`` (MCAP) and ``metadata.yaml`` beside it.

    Parameters
    ----------
    run_dir : pathlib.Path
        A run directory (``hifi run --out``).
    path : pathlib.Path
        The ``.mcap`` file to write.
    sensor : str, optional
        Only this sensor's topics (plus ``/tf``, ``/tf_static`` and the ground truth); default
        every sensor of the run.

    Returns
    -------
    list of pathlib.Path
        ``[path, path.parent / "metadata.yaml"]``.

    Raises
    ------
    ExportError
        No ``motion.nc`` in the run, or ``sensor`` names no dataset of it.
    ImportError
        ``mcap`` or ``mcap-ros2-support`` is not installed (the message gives the command).

    Notes
    -----
    See the module docstring for the topics and conventions. Datasets that no message type
    here holds (the ``pose`` sensor, a raw lidar) are left out, named in an
    :class:`ExportWarning`. Messages are written in time order (ties in topic order); a frame
    is read from its netCDF file only when its messages are written, so memory stays at one
    frame per sensor.
    """
    run_dir, path = Path(run_dir), Path(path)
    names = run_datasets(run_dir) if sensor is None else [sensor]
    datasets = {n: open_run_dataset(run_dir, n, "mcap") for n in names}
    with open_motion(run_dir, "mcap") as mds:
        motion = _Motion(mds.load())
        start_utc, seed = mds.attrs.get("start_utc"), str(mds.attrs.get("seed", ""))
    try:
        if not start_utc:
            raise ExportError(f"mcap: {run_dir}/motion.nc has no start_utc attribute (the epoch of the stamps)")
        epoch = Epoch.from_utc(start_utc)
        with open(path, "wb") as stream:
            bag = _Bag(stream)
            sources = _sources(bag, datasets, motion, epoch)
            merged = heapq.merge(*[_tagged(i, s) for i, s in enumerate(sources)], key=lambda m: m[:2])
            for t_ns, _, topic, msg in merged:
                bag.write(topic, int(t_ns), msg)
            bag.finish({"hifi_version": __version__, "start_utc": epoch.iso, "run": run_dir.name,
                        "seed": seed})
    finally:
        for ds in datasets.values():
            ds.close()
    meta = path.parent / "metadata.yaml"
    meta.write_text(_metadata_yaml(bag, path.name), encoding="utf-8")
    return [path, meta]


def _tagged(i, source):
    for t_ns, topic, msg in source:
        yield t_ns, i, topic, msg


def _metadata_yaml(bag: _Bag, file_name: str) -> str:
    """rosbag2 ``metadata.yaml`` (version :data:`ROSBAG2_METADATA_VERSION`) of the bag."""
    import yaml
    start = bag.first_ns or 0
    duration = 0 if bag.first_ns is None else bag.last_ns - bag.first_ns
    count = sum(t["count"] for t in bag.topics.values())
    info = {
        "version": ROSBAG2_METADATA_VERSION,
        "storage_identifier": "mcap",
        "duration": {"nanoseconds": int(duration)},
        "starting_time": {"nanoseconds_since_epoch": int(start)},
        "message_count": int(count),
        "topics_with_message_count": [
            {"topic_metadata": {"name": topic, "type": t["type"], "serialization_format": "cdr",
                                "offered_qos_profiles": t["qos"]},
             "message_count": int(t["count"])}
            for topic, t in bag.topics.items()],
        "compression_format": "",
        "compression_mode": "",
        "relative_file_paths": [file_name],
        "files": [{"path": file_name, "starting_time": {"nanoseconds_since_epoch": int(start)},
                   "duration": {"nanoseconds": int(duration)}, "message_count": int(count)}],
    }
    return yaml.safe_dump({"rosbag2_bagfile_information": info}, sort_keys=False)


# -- sources: generators of (t_ns, topic, message) in time order ---------------------------------
def _sources(bag: _Bag, datasets: dict, motion: _Motion, epoch: Epoch) -> list:
    ns0 = int((epoch.utc - np.datetime64(0, "ns")).astype(np.int64))

    def to_ns(t_s) -> np.ndarray:
        return ns0 + np.round(np.asarray(t_s, dtype=float) * 1e9).astype(np.int64)

    frames = {name: ros_name(name) for name in motion.names}
    renamed = sorted(n for n, f in frames.items() if f != n)
    for name in datasets:
        frames.setdefault(name, ros_name(name))
    if len(set(frames.values())) != len(frames):
        raise ExportError("mcap: names that differ only in characters ROS names do not allow give the same "
                          f"frame: {sorted(frames)}")
    if renamed:
        warnings.warn(f"mcap: names changed to legal ROS names: "
                      f"{', '.join(f'{n} -> {frames[n]}' for n in renamed)}", ExportWarning, stacklevel=4)

    sources, skipped, optical = [], [], []
    for name, ds in datasets.items():
        f = frames[name]
        if "radial_velocity" in ds.variables and "detection" in ds["radial_velocity"].dims:
            bag.add_topic(f"/{f}/detections", "sensor_msgs/msg/PointCloud2")
            sources.append(_radar_clouds(ds, f, to_ns))
        elif is_range_dataset(ds):
            bag.add_topic(f"/{f}/points", "sensor_msgs/msg/PointCloud2")
            sources.append(_clouds(ds, name, f, motion, to_ns))
        elif _camera_kind(ds):
            bag.add_topic(f"/{f}/image_raw", "sensor_msgs/msg/Image")
            bag.add_topic(f"/{f}/camera_info", "sensor_msgs/msg/CameraInfo")
            sources.append(_images(ds, f, to_ns))
            optical.append(f)
        elif "angular_rate" in ds.variables and "specific_force" in ds.variables:
            bag.add_topic(f"/{f}/imu", "sensor_msgs/msg/Imu")
            sources.append(_imu(ds, f, to_ns))
        elif "position_ecef" in ds.variables:
            bag.add_topic(f"/{f}/fix", "sensor_msgs/msg/NavSatFix")
            sources.append(_fixes(ds, f, to_ns))
        else:
            skipped.append(f"{name} ({ds.attrs.get('sensor_model')})")
        if motion.index(name) is None:
            warnings.warn(f"mcap: sensor {name!r} is not a body of motion.nc: its frame has no transform and "
                          f"its points are taken at the frame-start pose", ExportWarning, stacklevel=4)
    if skipped:
        warnings.warn(f"mcap: no ROS 2 message here holds these datasets, left out: {', '.join(skipped)}",
                      ExportWarning, stacklevel=4)

    static, dynamic = _transforms(motion, frames)
    t_first = to_ns(motion.times[0])
    if static or optical:
        bag.add_topic("/tf_static", "tf2_msgs/msg/TFMessage", QOS_STATIC)
        sources.insert(0, _static_tf(static, optical, int(t_first)))
    if dynamic:
        bag.add_topic("/tf", "tf2_msgs/msg/TFMessage")
        sources.insert(1, _dynamic_tf(dynamic, motion, to_ns))
    for b, name in enumerate(motion.names):
        topic = f"/ground_truth/{frames[name]}/odom"
        bag.add_topic(topic, "nav_msgs/msg/Odometry")
        sources.append(_odometry(motion, b, frames[name], topic, to_ns))
    return sources


def _transforms(motion: _Motion, frames: dict):
    """Split parent -> body transforms into fixed ones (one pose) and moving ones (indices)."""
    static, dynamic = [], []
    for b, (name, parent) in enumerate(zip(motion.names, motion.parents)):
        p = motion.index(parent) if parent else None            # "" (the scene) or a parent not recorded: map
        rot_b = Rotation.from_quat(motion.orientation[:, b])
        if p is None:
            rot, trans = rot_b, motion.position[:, b]
            parent_frame = MAP_FRAME
        else:
            rot_p = Rotation.from_quat(motion.orientation[:, p])
            rot = rot_p.inv() * rot_b
            trans = rot_p.apply(motion.position[:, b] - motion.position[:, p], inverse=True)
            parent_frame = frames[parent]
        moved = np.max(np.linalg.norm(trans - trans[0], axis=-1))
        turned = np.max((rot[0].inv() * rot).magnitude())
        entry = (parent_frame, frames[name], rot, trans)
        if moved <= STATIC_TOLERANCE_M * max(1.0, float(np.linalg.norm(trans[0]))) and turned <= STATIC_TOLERANCE_RAD:
            static.append(entry)
        else:
            dynamic.append(entry)
    return static, dynamic


def _transform_msg(ns: int, parent: str, child: str, rotation: Rotation, translation) -> dict:
    return {"header": _header(ns, parent), "child_frame_id": child,
            "transform": {"translation": _vec(translation), "rotation": _quat(rotation.as_quat())}}


def _static_tf(static, optical, t_ns: int):
    msgs = [_transform_msg(t_ns, parent, child, rot[0], trans[0]) for parent, child, rot, trans in static]
    msgs += [_transform_msg(t_ns, f, f"{f}_optical", OPTICAL_IN_SENSOR, np.zeros(3)) for f in optical]
    yield t_ns, "/tf_static", {"transforms": msgs}


def _dynamic_tf(dynamic, motion: _Motion, to_ns):
    stamps = to_ns(motion.times)
    for k, ns in enumerate(stamps):
        yield ns, "/tf", {"transforms": [_transform_msg(ns, parent, child, rot[k], trans[k])
                                         for parent, child, rot, trans in dynamic]}


def _odometry(motion: _Motion, b: int, frame: str, topic: str, to_ns):
    stamps = to_ns(motion.times)
    rot = Rotation.from_quat(motion.orientation[:, b])
    v_body = rot.apply(motion.velocity[:, b], inverse=True)
    w_body = rot.apply(motion.omega[:, b], inverse=True)
    zeros36 = [0.0] * 36
    for k, ns in enumerate(stamps):
        yield ns, topic, {
            "header": _header(ns, MAP_FRAME), "child_frame_id": frame,
            "pose": {"pose": {"position": _vec(motion.position[k, b]), "orientation": _quat(motion.orientation[k, b])},
                     "covariance": zeros36},
            "twist": {"twist": {"linear": _vec(v_body[k]), "angular": _vec(w_body[k])}, "covariance": zeros36}}


def _frame_times(ds) -> np.ndarray:
    """Per-frame instant [s]: ``timestamp`` when it is per frame, else ``frame_time``."""
    if "timestamp" in ds.variables and ds["timestamp"].dims in ((), ("frame",)):
        return np.atleast_1d(seconds_since_start(ds, "timestamp"))
    return np.atleast_1d(seconds_since_start(ds, "frame_time"))


def _clouds(ds, name: str, frame: str, motion: _Motion, to_ns):
    """One PointCloud2 per frame (see the module notes)."""
    ref_dims = [d for d in ds["x_noisy"].dims if d not in ("frame", "return")]
    rings = beam_rings(ds)
    b = motion.index(name)
    fields = [{"name": n, "offset": off, "datatype": _ros2msgs.POINT_FIELD_TYPES[np.dtype(dt).name], "count": 1}
              for n, dt, off in CLOUD_FIELDS]
    for f in range(n_frames(ds)):
        sub = ds.isel(frame=[f]) if "frame" in ds.dims else ds
        sub = sub.assign(ring=(tuple(ref_dims), rings))
        start = float(np.nanmin(frame_first(sub, ["timestamp"])["timestamp"]))
        det = detected_returns(sub, list(POINTS_NOISY) + ["timestamp", "intensity", "ring"])
        xyz = np.stack([np.asarray(det[v], dtype=float) for v in POINTS_NOISY], axis=-1)
        t = np.asarray(det["timestamp"], dtype=float)
        if b is not None and len(t):
            uniq, inverse = np.unique(t, return_inverse=True)
            poses = motion.poses_at(b, uniq)
            pts = poses.rotation[inverse].apply(xyz - poses.translation[inverse], inverse=True)
        elif len(t):
            pos = np.asarray(sub["sensor_position"].values, dtype=float).reshape(3)
            q = np.asarray(sub["sensor_orientation"].values, dtype=float).reshape(4)
            pts = Rotation.from_quat(q).apply(xyz - pos, inverse=True)
        else:
            pts = np.zeros((0, 3))
        cloud = np.zeros(len(t), dtype=CLOUD_DTYPE)
        cloud["x"], cloud["y"], cloud["z"] = pts[:, 0], pts[:, 1], pts[:, 2]
        cloud["intensity"] = np.asarray(det["intensity"], dtype=float)
        cloud["ring"] = det["ring"]
        cloud["t"] = np.maximum(t - start, 0.0)
        ns = int(to_ns(start))
        yield ns, f"/{frame}/points", {
            "header": _header(ns, frame), "height": 1, "width": len(cloud), "fields": fields,
            "is_bigendian": False, "point_step": POINT_STEP, "row_step": POINT_STEP * len(cloud),
            "data": cloud.tobytes(), "is_dense": True}


#: Radar PointCloud2 layout (:func:`_radar_clouds`): (name, numpy dtype, offset [byte]).
RADAR_CLOUD_FIELDS = (("x", "<f4", 0), ("y", "<f4", 4), ("z", "<f4", 8), ("radial_velocity", "<f4", 12),
                      ("rcs", "<f4", 16), ("snr", "<f4", 20), ("object_id", "<i4", 24), ("ghost", "<u1", 28))
RADAR_POINT_STEP = 32
RADAR_CLOUD_DTYPE = np.dtype({"names": [f[0] for f in RADAR_CLOUD_FIELDS],
                              "formats": [f[1] for f in RADAR_CLOUD_FIELDS],
                              "offsets": [f[2] for f in RADAR_CLOUD_FIELDS], "itemsize": RADAR_POINT_STEP})


def _radar_clouds(ds, frame: str, to_ns):
    """One PointCloud2 per radar frame: the detections in the sensor's frame (x forward, y left,
    z up; z 0 where the radar measures no elevation) with ``radial_velocity`` [m/s, positive
    away], ``rcs`` [dBsm], ``snr`` [dB] (float32), ``object_id`` (int32, ground truth) and
    ``ghost`` (uint8), stamped at the frame time."""
    fields = [{"name": n, "offset": off, "datatype": _ros2msgs.POINT_FIELD_TYPES[np.dtype(dt).name], "count": 1}
              for n, dt, off in RADAR_CLOUD_FIELDS]
    times = _frame_times(ds)
    for f in range(n_frames(ds)):
        fr = ds.isel(frame=f) if "frame" in ds.dims else ds
        n = int(fr["n_detections"])
        d = fr.isel(detection=slice(0, n))
        rng, az = (np.asarray(d[v].values, dtype=float) for v in ("range", "azimuth"))
        el = np.nan_to_num(np.asarray(d["elevation"].values, dtype=float))
        cloud = np.zeros(n, dtype=RADAR_CLOUD_DTYPE)
        cloud["x"], cloud["y"], cloud["z"] = rng * np.cos(el) * np.cos(az), rng * np.cos(el) * np.sin(az), rng * np.sin(el)
        for v in ("radial_velocity", "rcs", "snr", "object_id"):
            cloud[v] = d[v].values
        cloud["ghost"] = d["ghost"].values.astype(np.uint8)
        ns = int(to_ns(times[f]))
        yield ns, f"/{frame}/detections", {
            "header": _header(ns, frame), "height": 1, "width": n, "fields": fields, "is_bigendian": False,
            "point_step": RADAR_POINT_STEP, "row_step": RADAR_POINT_STEP * n, "data": cloud.tobytes(),
            "is_dense": True}


def _camera_kind(ds) -> str | None:
    """``"image"`` (a CCD camera), ``"depth"`` (a depth map) or None."""
    if "focal_length_px" not in ds.attrs or "principal_point_px" not in ds.attrs:
        return None
    if "image" in ds.variables and ds["image"].dims[:3] == ("frame", "row", "col"):
        return "image"
    if "depth" in ds.variables and ds["depth"].dims == ("frame", "row", "col"):
        return "depth"
    return None


def camera_info(ds, ns: int, frame_id: str) -> dict:
    """``sensor_msgs/msg/CameraInfo`` of a hifi camera dataset (module notes: conventions)."""
    rows, cols = int(ds.sizes["row"]), int(ds.sizes["col"])
    f = float(ds.attrs["focal_length_px"])
    cx, cy = (np.asarray(ds.attrs["principal_point_px"], dtype=float).reshape(2) - 0.5)
    k1 = float(ds.attrs.get("distortion_k1", 0.0))
    return {"header": _header(ns, frame_id), "height": rows, "width": cols, "distortion_model": "plumb_bob",
            "d": [k1, 0.0, 0.0, 0.0, 0.0], "k": [f, 0.0, cx, 0.0, f, cy, 0.0, 0.0, 1.0],
            "r": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            "p": [f, 0.0, cx, 0.0, 0.0, f, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
            "binning_x": 0, "binning_y": 0,
            "roi": {"x_offset": 0, "y_offset": 0, "height": 0, "width": 0, "do_rectify": False}}


def _images(ds, frame: str, to_ns):
    kind = _camera_kind(ds)
    optical = f"{frame}_optical"
    times = _frame_times(ds)
    for f in range(n_frames(ds)):
        ns = int(to_ns(times[f]))
        if kind == "image":
            img = np.asarray(ds["image"].isel(frame=f).values)
            channels = img.shape[2] if img.ndim == 3 else 1
            if img.dtype.itemsize > 2 or img.dtype.kind not in "u":
                raise ExportError(f"mcap: image of {frame!r} has dtype {img.dtype}; expected uint8 or uint16")
            depth = 8 * img.dtype.itemsize
            encoding = {(3, 8): "rgb8", (3, 16): "rgb16", (1, 8): "mono8", (1, 16): "mono16"}.get((channels, depth))
            if encoding is None:
                raise ExportError(f"mcap: image of {frame!r} has {channels} channels; expected 1 or 3")
            data = np.ascontiguousarray(img.astype(img.dtype.newbyteorder("<")))
        else:
            encoding = "32FC1"
            data = np.ascontiguousarray(np.asarray(ds["depth"].isel(frame=f).values, dtype="<f4"))
        rows, cols = data.shape[:2]
        yield ns, f"/{frame}/image_raw", {
            "header": _header(ns, optical), "height": rows, "width": cols, "encoding": encoding,
            "is_bigendian": 0, "step": data.nbytes // rows, "data": data.tobytes()}
        yield ns, f"/{frame}/camera_info", camera_info(ds, ns, optical)


def _imu(ds, frame: str, to_ns):
    times = _frame_times(ds)
    w = np.asarray(ds["angular_rate"].transpose("frame", ...).values, dtype=float).reshape(-1, 3)
    a = np.asarray(ds["specific_force"].transpose("frame", ...).values, dtype=float).reshape(-1, 3)
    unknown = [-1.0] + [0.0] * 8
    zeros = [0.0] * 9
    for f in range(len(times)):
        ns = int(to_ns(times[f]))
        yield ns, f"/{frame}/imu", {
            "header": _header(ns, frame), "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
            "orientation_covariance": unknown, "angular_velocity": _vec(w[f]), "angular_velocity_covariance": zeros,
            "linear_acceleration": _vec(a[f]), "linear_acceleration_covariance": zeros}


def geodetic(position_ecef) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """WGS 84 latitude [deg], longitude [deg], ellipsoidal height [m] of ECEF positions (..., 3) [m]."""
    import pymap3d
    p = np.asarray(position_ecef, dtype=float)
    return pymap3d.ecef2geodetic(p[..., 0], p[..., 1], p[..., 2], deg=True)


def _fixes(ds, frame: str, to_ns):
    times = _frame_times(ds)
    ecef = np.asarray(ds["position_ecef"].transpose("frame", ...).values, dtype=float).reshape(-1, 3)
    ok = np.all(np.isfinite(ecef), axis=1)
    lat, lon, h = geodetic(np.where(ok[:, None], ecef, 0.0))
    lat, lon, h = (np.where(ok, np.atleast_1d(v), np.nan) for v in (lat, lon, h))
    for f in range(len(times)):
        ns = int(to_ns(times[f]))
        yield ns, f"/{frame}/fix", {
            "header": _header(ns, frame), "status": {"status": 0 if ok[f] else -1, "service": 1},
            "latitude": float(lat[f]), "longitude": float(lon[f]), "altitude": float(h[f]),
            "position_covariance": [0.0] * 9, "position_covariance_type": 0}


#: Registered in the entry-point group ``hifi.exporters`` as ``mcap``.
EXPORTER = Exporter(name="mcap", write=write_mcap, suffix=".mcap", scope="run", per_frame=False,
                    summary="ROS 2 bag (MCAP + metadata.yaml) of the whole run: PointCloud2, Image, CameraInfo, "
                            "Imu, NavSatFix, tf, ground-truth Odometry")
