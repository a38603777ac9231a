"""The standard ROS 2 message definitions the MCAP export writes, as ``.msg`` text.

Each definition lists the fields of the ROS 2 Humble interface of the same name, in order,
without comments or default values; constants are kept where the message defines them.
Sources: github.com/ros2/common_interfaces (``sensor_msgs/msg/PointCloud2.msg``,
``PointField.msg``, ``Image.msg``, ``CameraInfo.msg``, ``RegionOfInterest.msg``, ``Imu.msg``,
``NavSatFix.msg``, ``NavSatStatus.msg``; ``std_msgs/msg/Header.msg``; ``geometry_msgs/msg/*``;
``nav_msgs/msg/Odometry.msg``), github.com/ros2/geometry2 (``tf2_msgs/msg/TFMessage.msg``) and
github.com/ros2/rcl_interfaces (``builtin_interfaces/msg/Time.msg``). Field types are written
fully qualified (``geometry_msgs/Vector3``), as ``ros2 bag record`` resolves them.

:func:`schema_text` gives a type's definition followed by those of every type it uses, each
after a line of 80 ``=`` and ``MSG: pkg/Type``: the ``ros2msg`` schema encoding of the MCAP
``ros2`` profile (mcap.dev, "Well-known profiles: ros2"; the concatenation ``ros2 bag record``
writes). ``tests/hifi/exporters/test_mcap.py`` checks every definition against rosbags' own
typestore, an independent transcription of the same interfaces.
"""

from __future__ import annotations

#: ``pkg/msg/Type`` -> the ``.msg`` text (see the module docstring for the sources).
DEFINITIONS = {
    "builtin_interfaces/msg/Time": "int32 sec\nuint32 nanosec\n",
    "std_msgs/msg/Header": "builtin_interfaces/Time stamp\nstring frame_id\n",
    "geometry_msgs/msg/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/msg/Point": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/msg/Quaternion": "float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n",
    "geometry_msgs/msg/Pose": "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n",
    "geometry_msgs/msg/PoseWithCovariance": "geometry_msgs/Pose pose\nfloat64[36] covariance\n",
    "geometry_msgs/msg/Twist": "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n",
    "geometry_msgs/msg/TwistWithCovariance": "geometry_msgs/Twist twist\nfloat64[36] covariance\n",
    "geometry_msgs/msg/Transform": "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n",
    "geometry_msgs/msg/TransformStamped": "std_msgs/Header header\nstring child_frame_id\n"
                                          "geometry_msgs/Transform transform\n",
    "tf2_msgs/msg/TFMessage": "geometry_msgs/TransformStamped[] transforms\n",
    "nav_msgs/msg/Odometry": "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\n"
                             "geometry_msgs/TwistWithCovariance twist\n",
    "sensor_msgs/msg/PointField": "uint8 INT8=1\nuint8 UINT8=2\nuint8 INT16=3\nuint8 UINT16=4\nuint8 INT32=5\n"
                                  "uint8 UINT32=6\nuint8 FLOAT32=7\nuint8 FLOAT64=8\n"
                                  "string name\nuint32 offset\nuint8 datatype\nuint32 count\n",
    "sensor_msgs/msg/PointCloud2": "std_msgs/Header header\nuint32 height\nuint32 width\n"
                                   "sensor_msgs/PointField[] fields\nbool is_bigendian\nuint32 point_step\n"
                                   "uint32 row_step\nuint8[] data\nbool is_dense\n",
    "sensor_msgs/msg/Image": "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\n"
                             "uint8 is_bigendian\nuint32 step\nuint8[] data\n",
    "sensor_msgs/msg/RegionOfInterest": "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\n"
                                        "bool do_rectify\n",
    "sensor_msgs/msg/CameraInfo": "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\n"
                                  "float64[] d\nfloat64[9] k\nfloat64[9] r\nfloat64[12] p\nuint32 binning_x\n"
                                  "uint32 binning_y\nsensor_msgs/RegionOfInterest roi\n",
    "sensor_msgs/msg/Imu": "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\n"
                           "float64[9] orientation_covariance\ngeometry_msgs/Vector3 angular_velocity\n"
                           "float64[9] angular_velocity_covariance\ngeometry_msgs/Vector3 linear_acceleration\n"
                           "float64[9] linear_acceleration_covariance\n",
    "sensor_msgs/msg/NavSatStatus": "int8 STATUS_NO_FIX=-1\nint8 STATUS_FIX=0\nint8 STATUS_SBAS_FIX=1\n"
                                    "int8 STATUS_GBAS_FIX=2\nuint16 SERVICE_GPS=1\nuint16 SERVICE_GLONASS=2\n"
                                    "uint16 SERVICE_COMPASS=4\nuint16 SERVICE_GALILEO=8\nint8 status\nuint16 service\n",
    "sensor_msgs/msg/NavSatFix": "uint8 COVARIANCE_TYPE_UNKNOWN=0\nuint8 COVARIANCE_TYPE_APPROXIMATED=1\n"
                                 "uint8 COVARIANCE_TYPE_DIAGONAL_KNOWN=2\nuint8 COVARIANCE_TYPE_KNOWN=3\n"
                                 "std_msgs/Header header\nsensor_msgs/NavSatStatus status\nfloat64 latitude\n"
                                 "float64 longitude\nfloat64 altitude\nfloat64[9] position_covariance\n"
                                 "uint8 position_covariance_type\n",
}

_SEPARATOR = "=" * 80 + "\n"

#: PointField datatype codes (``sensor_msgs/msg/PointField`` constants).
POINT_FIELD_TYPES = {"int8": 1, "uint8": 2, "int16": 3, "uint16": 4, "int32": 5, "uint32": 6, "float32": 7,
                     "float64": 8}


def _full(short: str) -> str:
    pkg, name = short.split("/")
    return f"{pkg}/msg/{name}"


def dependencies(msgtype: str) -> list[str]:
    """Every message type ``msgtype`` uses, directly or not, in order of first use (depth first)."""
    seen: list[str] = []

    def visit(t: str) -> None:
        for line in DEFINITIONS[t].splitlines():
            ftype = line.split()[0].split("[")[0]
            if "/" in ftype and "=" not in line:
                dep = _full(ftype)
                if dep not in seen:
                    seen.append(dep)
                    visit(dep)

    visit(msgtype)
    return seen


def schema_text(msgtype: str) -> str:
    """The ``ros2msg`` schema of ``msgtype``: its definition, then each dependency's after a separator."""
    parts = [DEFINITIONS[msgtype]]
    for dep in dependencies(msgtype):
        pkg, _, name = dep.split("/")
        parts.append(f"{_SEPARATOR}MSG: {pkg}/{name}\n{DEFINITIONS[dep]}")
    return "".join(parts)
