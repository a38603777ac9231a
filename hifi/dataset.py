"""The dataset schema: names, units and long names of the variables sensors write, and builders.

Sensors, exporters, the ``ds.hifi`` accessor and third-party models use these, so a variable
means the same thing in every file (CONTRACTS "Datasets"):

- :data:`RANGE_VARIABLES` and :func:`range_frame`: the range-sensor variables of one frame
  (rotating and line lidars, ToF, generic grid, divergent LADAR);
- :func:`annotation_var`: the semantic class id per ray or pixel, with CF ``flag_values`` and
  ``flag_meanings`` naming the classes;
- :func:`sensor_pose_vars` with :func:`axis_coords`: the sensor pose at the start of a frame;
- :func:`image_coords`: ``row`` / ``col`` of image sensors;
- :data:`POINTS_NOISY` / :data:`POINTS_TRUE` / :data:`SENSOR_POSE`: the names readers look for.
"""

from __future__ import annotations

import numpy as np

from .model import Var

#: Reported (noisy) point variables, scene frame, in x, y, z order.
POINTS_NOISY = ("x_noisy", "y_noisy", "z_noisy")
#: True hit point variables, scene frame, in x, y, z order.
POINTS_TRUE = ("x", "y", "z")
#: Per-frame sensor pose variables (frame start): position (xyz) and quaternion (x, y, z, w).
SENSOR_POSE = ("sensor_position", "sensor_orientation")

#: long_name of the ``annotation`` variable.
ANNOTATION_LONG_NAME = "semantic class id of the surface hit (0: none/unlabelled)"

#: units and long_name of every range-sensor variable (CONTRACTS "Datasets").
RANGE_VARIABLES = {
    "timestamp": ("s", "time of the measurement since simulation start"),
    "yaw": ("rad", "ray azimuth about the sensor z axis from x toward y at emission"),
    "pitch": ("rad", "ray elevation above the sensor xy plane at emission"),
    "distance": ("m", "true length of the ray path to the first diffuse surface (through mirrors)"),
    "detected": ("1", "whether the sensor reports a return"),
    "distance_noisy": ("m", "reported distance"),
    "x": ("m", "true hit point x, scene frame"),
    "y": ("m", "true hit point y, scene frame"),
    "z": ("m", "true hit point z, scene frame"),
    "x_noisy": ("m", "reported point x, scene frame"),
    "y_noisy": ("m", "reported point y, scene frame"),
    "z_noisy": ("m", "reported point z, scene frame"),
    "object_id": ("1", "index of the object hit in [[objects]], -1 for none"),
    "intensity": ("1", "received signal relative to a white Lambertian target at normal incidence at 1 m"),
}


def yaw_pitch(directions_sensor):
    """Yaw and pitch [rad] of unit direction vectors given in the sensor frame (CONTRACTS)."""
    d = np.asarray(directions_sensor, dtype=float)
    yaw = np.arctan2(d[..., 1], d[..., 0])
    pitch = np.arctan2(d[..., 2], np.hypot(d[..., 0], d[..., 1]))
    return yaw, pitch


def direction_from_yaw_pitch(yaw, pitch):
    """Unit vectors (..., 3) in the sensor frame from yaw and pitch [rad]."""
    yaw = np.asarray(yaw, dtype=float)
    pitch = np.asarray(pitch, dtype=float)
    cp = np.cos(pitch)
    return np.stack([cp * np.cos(yaw), cp * np.sin(yaw), np.sin(pitch)], axis=-1)


def range_frame(dims, shape, *, timestamp, yaw, pitch, hits, detected, distance_noisy,
                points_noisy, intensity, extra=None) -> dict:
    """The CONTRACTS range-sensor variables of one frame, reshaped to ``shape`` over ``dims``.

    ``distance_noisy`` and ``points_noisy`` are set to NaN where not ``detected``.
    """
    detected = np.asarray(detected, dtype=bool)
    dn = np.where(detected, distance_noisy, np.nan)
    pn = np.where(detected[:, None], points_noisy, np.nan)
    values = {
        "timestamp": np.broadcast_to(np.asarray(timestamp, dtype=float), detected.shape),
        "yaw": yaw, "pitch": pitch, "distance": hits.distance, "detected": detected,
        "distance_noisy": dn,
        "x": hits.point[:, 0], "y": hits.point[:, 1], "z": hits.point[:, 2],
        "x_noisy": pn[:, 0], "y_noisy": pn[:, 1], "z_noisy": pn[:, 2],
        "object_id": hits.object_id.astype(np.int32), "intensity": intensity,
    }
    out = {}
    for name, arr in values.items():
        units, long_name = RANGE_VARIABLES[name]
        arr = np.asarray(arr)
        extra_attrs = None
        if name == "object_id":
            extra_attrs = {"missing_value_meaning": "-1: no hit"}
        out[name] = Var(dims, np.ascontiguousarray(arr.reshape(shape)), units, long_name, extra_attrs)
    for name, var in (extra or {}).items():
        out[name] = var
    return out


def annotation_var(dims, class_ids, class_names) -> Var:
    """The ``annotation`` variable: uint8 semantic class id, with CF flag attributes.

    Parameters
    ----------
    dims : tuple of str
        Dimensions of the frame's data (without ``frame``).
    class_ids : array_like of uint8
        Class id per ray or pixel, already shaped to ``dims``; 0 is "no hit / unlabelled".
    class_names : sequence of str
        The scene's class names, indexed by id (``Scene.class_names``).

    Notes
    -----
    ``flag_values`` lists every id and ``flag_meanings`` the class names (spaces replaced by
    underscores, CF conventions section 3.5), so a reader can name the classes without the
    scenario.
    """
    flag_values = np.arange(len(class_names), dtype=np.uint8)
    return Var(tuple(dims), np.ascontiguousarray(np.asarray(class_ids, dtype=np.uint8)), "1",
               ANNOTATION_LONG_NAME,
               {"flag_values": flag_values,
                "flag_meanings": " ".join(str(n).replace(" ", "_") for n in class_names)})


def sensor_pose_vars(pose) -> dict:
    """``sensor_position`` and ``sensor_orientation`` of a single pose (the frame's start)."""
    return {
        "sensor_position": Var(("xyz",), np.asarray(pose.translation, dtype=float), "m",
                               "sensor origin at the start of the frame, scene frame"),
        "sensor_orientation": Var(("quat",), pose.rotation.as_quat(), "1",
                                  "sensor -> scene quaternion (x, y, z, w) at the start of the frame"),
    }


def axis_coords() -> dict:
    """Coordinates of the ``xyz`` and ``quat`` dimensions used by :func:`sensor_pose_vars`."""
    return {"xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1", "scene-frame axis"),
            "quat": Var(("quat",), np.array(["x", "y", "z", "w"]), "1", "quaternion component")}


def image_coords(resolution_x: int, resolution_y: int) -> dict:
    """``row`` and ``col`` coordinates of an image sensor (row 0 at the top, col 0 at the left)."""
    return {"row": Var(("row",), np.arange(resolution_y, dtype=np.int32), "1", "image row, 0 at the top"),
            "col": Var(("col",), np.arange(resolution_x, dtype=np.int32), "1", "image column, 0 at the left")}


#: dtype of every variable :func:`range_frame` writes (the CONTRACTS range-sensor variables).
RANGE_DTYPES = {name: np.dtype(np.float64) for name in RANGE_VARIABLES}
RANGE_DTYPES.update(detected=np.dtype(bool), object_id=np.dtype(np.int32))


def range_layout(shape, *, annotation: bool = False, pose: bool = True) -> dict:
    """Shapes and dtypes of a :func:`range_frame` frame (for :meth:`hifi.model.Model.frame_layout`).

    Parameters
    ----------
    shape : tuple of int
        The frame's shape (without ``frame``).
    annotation : bool
        With the uint8 ``annotation`` of :func:`annotation_var`.
    pose : bool
        With :func:`sensor_pose_vars` (``sensor_position`` (3), ``sensor_orientation`` (4)).
    """
    shape = tuple(int(n) for n in shape)
    out = {name: (shape, dtype) for name, dtype in RANGE_DTYPES.items()}
    if annotation:
        out["annotation"] = (shape, np.dtype(np.uint8))
    if pose:
        out["sensor_position"] = ((3,), np.dtype(np.float64))
        out["sensor_orientation"] = ((4,), np.dtype(np.float64))
    return out
