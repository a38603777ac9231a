"""The dataset schema: names, units and long names of the variables sensors write, and builders.

Sensors, exporters, the ``ds.hifi`` accessor and third-party models use these, so a variable
means the same thing in every file (docs/datasets.md):

- :data:`RANGE_VARIABLES` and :func:`range_frame`: the range-sensor variables of one frame
  (rotating and line lidars, ToF, generic grid, divergent LADAR);
- :func:`annotation_var`: the semantic class id per ray or pixel, with CF ``flag_values`` and
  ``flag_meanings`` naming the classes;
- :func:`sensor_pose_vars` with :func:`axis_coords`: the sensor pose at the start of a frame;
- :func:`image_coords`: ``row`` / ``col`` of image sensors;
- :func:`object_coords` and :func:`object_id_attrs`: the names and classes of ``[[objects]]``
  (coordinates ``object_name``, ``object_class`` over dimension ``object``, indexed by
  ``object_id``) and CF flag attributes naming the ids, written into every file;
- :data:`POINTS_NOISY` / :data:`POINTS_TRUE` / :data:`SENSOR_POSE`: the names readers look for;
- :data:`TIME_VARIABLES`, :func:`cf_time_attrs`, :func:`seconds_since_start` and :func:`utc_times`:
  instants are stored as float64 seconds since the run's start with CF units
  ``seconds since <start_utc>``, so ``xarray.open_dataset`` decodes them to ``datetime64``;
  every reader in hifi goes through :func:`seconds_since_start`, which gives the float seconds
  whether or not the file was decoded;
- :data:`RANGE_ENCODING` and :func:`encode`: how the file stores each range variable (float32,
  or points packed as int32 at :data:`POINT_SCALE_M`) and the precision a reader gets back.
"""

from __future__ import annotations

import numpy as np

from ..api.model import Var
from ..api.timebase import Epoch

#: Reported (noisy) point variables, scene frame, in x, y, z order.
POINTS_NOISY = ("x_noisy", "y_noisy", "z_noisy")
#: True hit point variables, scene frame, in x, y, z order.
POINTS_TRUE = ("x", "y", "z")
#: ``object_id`` of a ray that hit nothing, and of a return from the atmosphere (fog, rain,
#: snow).
NO_HIT_ID = -1
ATMOSPHERE_ID = -2
#: Per-frame sensor pose variables (frame start): position (xyz) and quaternion (x, y, z, w).
SENSOR_POSE = ("sensor_position", "sensor_orientation")

#: Variables that hold instants as float64 seconds since the run's start (``start_utc``). The
#: writer gives them CF units ``seconds since <start_utc>`` (:func:`cf_time_attrs`).
TIME_VARIABLES = ("timestamp", "frame_time")

#: Variables holding an object id (index into ``object_name``, -1 none): they get the CF flag
#: attributes of :func:`object_id_attrs`.
OBJECT_ID_VARIABLES = ("object_id", "return_object_id")

#: long_name of the ``annotation`` variable.
ANNOTATION_LONG_NAME = "semantic class id of the surface hit (0: none/unlabelled)"

#: units and long_name of every range-sensor variable.
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
    "received_power": ("W", "peak optical power received from the surface hit (lidar equation); NaN: no hit"),
    "snr": ("1", "received power over the RMS receiver noise; NaN: no hit"),
    "reflectivity": ("1", "calibrated apparent reflectivity rho cos(incidence) (1 - mirror), 0..1, what a "
                          "perfect range and gain calibration reports; NaN: no hit"),
}

#: The signal variables, written by
#: sensors that model the received signal (pulsed lidars, ToF, divergent LADAR).
SIGNAL_VARIABLES = ("received_power", "snr", "reflectivity")


#: Stored precision of the scene-frame points ``x``, ``y``, ``z`` (and ``_noisy``) [m]: CF
#: packing as int32 in units of 0.1 mm from the scene origin, so a value read back is within
#: 0.05 mm of the computed one anywhere within +-214 km of the origin.
POINT_SCALE_M = 1e-4

#: int32 fill value of the packed points (NaN: no hit / not detected).
POINT_FILL = np.int32(-2**31)

_F32 = "stored as float32: relative precision 2**-24 (6e-8)"

#: How the file stores each range-sensor variable (:attr:`hifi.api.model.Var.encoding`). In
#: memory every variable keeps float64; the writer converts. Choices (README "Size"):
#: ``timestamp`` float64 (float32 would resolve 0.24 ms after an hour; firings are us apart);
#: ``yaw``/``pitch`` float32 (1.2e-7 rad at pi: 14 um at 120 m); ``distance`` and
#: ``distance_noisy`` float32 (half an ulp: 4 um at 120 m, 15 um at 500 m, 30 um at 1 km,
#: below the caster's own float32 ray distances and far below any range noise); ``intensity``
#: float32; points packed int32 at :data:`POINT_SCALE_M` (absolute 0.05 mm however far from the
#: origin, where float32 would lose 1 mm at 10 km, and int32 compresses better).
RANGE_ENCODING = {
    "yaw": {"dtype": "f4", "comment": _F32},
    "pitch": {"dtype": "f4", "comment": _F32},
    "distance": {"dtype": "f4", "comment": _F32},
    "distance_noisy": {"dtype": "f4", "comment": _F32},
    "intensity": {"dtype": "f4", "comment": _F32},
    "received_power": {"dtype": "f4", "comment": _F32},
    "snr": {"dtype": "f4", "comment": _F32},
    "reflectivity": {"dtype": "f4", "comment": _F32},
    **{name: {"dtype": "i4", "scale_factor": np.float64(POINT_SCALE_M), "add_offset": np.float64(0.0),
              "_FillValue": POINT_FILL,
              "comment": "CF packed: int32 units of 0.1 mm from the scene origin; read back within 0.05 mm "
                         "(|value| <= 214748 m); NaN is the _FillValue"}
       for name in POINTS_TRUE + POINTS_NOISY},
}


def encode(data, encoding, name: str = "") -> np.ndarray:
    """Values as the file stores them under ``encoding`` (:attr:`hifi.api.model.Var.encoding`).

    float -> float32 for ``dtype = "f4"``; CF packing ``round((v - add_offset) / scale_factor)``
    with NaN -> ``_FillValue`` for an integer dtype with ``scale_factor``.

    Raises
    ------
    ValueError
        A packed value does not fit the integer type (the message names the variable and the
        representable range in its units).
    """
    data = np.asarray(data)
    if not encoding or "dtype" not in encoding:
        return data
    dtype = np.dtype(encoding["dtype"])
    if "scale_factor" not in encoding:
        return data.astype(dtype)
    scale, offset = float(encoding["scale_factor"]), float(encoding.get("add_offset", 0.0))
    fill = encoding["_FillValue"]
    finite = np.isfinite(data)
    packed = np.round((np.where(finite, data, offset) - offset) / scale)
    info = np.iinfo(dtype)
    if packed.size and (packed.min() <= info.min or packed.max() > info.max):
        raise ValueError(f"variable {name!r}: a value beyond {offset:+g} +- {(info.max * scale):g} cannot be "
                         f"stored with scale_factor {scale:g} in {dtype} (largest |value| "
                         f"{np.nanmax(np.abs(data)):g})")
    return np.where(finite, packed, fill).astype(dtype)


def yaw_pitch(directions_sensor):
    """Yaw and pitch [rad] of unit direction vectors in the sensor frame.

    Yaw turns about z from x toward y; pitch rises from the xy plane toward z.
    """
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
                points_noisy, intensity, extra=None, intensity_long_name=None, intensity_valid_max=None,
                received_power=None, snr=None,
                reflectivity=None, threads=None) -> dict:
    """The range-sensor variables of one frame, reshaped to ``shape`` over ``dims``.

    ``distance_noisy`` and ``points_noisy`` are set to NaN where not ``detected``.
    ``intensity_long_name`` replaces the generic long_name of ``intensity`` (say the sensor's
    scale). ``received_power``, ``snr`` and ``reflectivity`` (:data:`SIGNAL_VARIABLES`) are
    written when given (all three or none). ``threads``: a :class:`hifi.caster.ChunkPool` (the
    model's :attr:`hifi.api.model.Sensor.threads`) on which the masked and copied columns are
    built in chunks of the rays (element by element: the same bits as in one piece).
    """
    signal = (received_power, snr, reflectivity)
    if any(v is None for v in signal) and any(v is not None for v in signal):
        raise ValueError("range_frame: give all of received_power, snr, reflectivity or none")
    detected = np.asarray(detected, dtype=bool)
    pts = np.asarray(points_noisy)
    if threads is None:
        dn = np.where(detected, distance_noisy, np.nan)
        # column by column: contiguous at once (a masked (n, 3) copy, then each column copied
        # again, took 2 ms of an HDL-64E frame); the same values
        xn, yn, zn = (np.where(detected, pts[:, c], np.nan) for c in range(3))
        x, y, z = hits.point[:, 0], hits.point[:, 1], hits.point[:, 2]
        oid = hits.object_id.astype(np.int32)
    else:
        dn, xn, yn, zn, x, y, z, oid = _range_columns(detected, distance_noisy, pts, hits, threads)
    values = {
        "timestamp": np.broadcast_to(np.asarray(timestamp, dtype=float), detected.shape),
        "yaw": yaw, "pitch": pitch, "distance": hits.distance, "detected": detected,
        "distance_noisy": dn,
        "x": x, "y": y, "z": z,
        "x_noisy": xn, "y_noisy": yn, "z_noisy": zn,
        "object_id": oid, "intensity": intensity,
    }
    if received_power is not None:
        values.update(received_power=received_power, snr=snr, reflectivity=reflectivity)
    out = {}
    for name, arr in values.items():
        units, long_name = RANGE_VARIABLES[name]
        if name == "intensity" and intensity_long_name:
            long_name = intensity_long_name
        arr = np.asarray(arr)
        extra_attrs = None
        if name == "object_id":
            extra_attrs = {"missing_value_meaning": f"{NO_HIT_ID}: no hit; {ATMOSPHERE_ID}: a return from the "
                                                    f"atmosphere (fog, rain, snow)"}
        if name == "intensity" and intensity_valid_max is not None:
            # CF valid range of the sensor's integer code: exporters scale by it (LAS: 16 bit)
            extra_attrs = {"valid_min": 0.0, "valid_max": float(intensity_valid_max)}
        out[name] = Var(dims, np.ascontiguousarray(arr.reshape(shape)), units, long_name, extra_attrs,
                        RANGE_ENCODING.get(name))
    for name, var in (extra or {}).items():
        out[name] = var
    return out


def _range_columns(detected, distance_noisy, points_noisy, hits, threads):
    """:func:`range_frame`'s per-ray columns built in chunks on ``threads``: ``distance_noisy``
    and the three columns of ``points_noisy`` masked by ``detected``, the three columns of the
    hit points and ``object_id`` as int32, each contiguous, (n,)."""
    n = detected.shape[0]
    dist = np.asarray(distance_noisy)
    dn = np.empty(n, np.result_type(dist, np.nan))
    noisy = [np.empty(n, np.result_type(points_noisy, np.nan)) for _ in range(3)]
    point = [np.empty(n, hits.point.dtype) for _ in range(3)]
    oid = np.empty(n, np.int32)

    def fill(a, b):
        det = detected[a:b]
        dn[a:b] = np.where(det, dist[a:b], np.nan)
        for c in range(3):
            noisy[c][a:b] = np.where(det, points_noisy[a:b, c], np.nan)
            point[c][a:b] = hits.point[a:b, c]
        oid[a:b] = hits.object_id[a:b]

    threads.map(fill, n)
    return (dn, *noisy, *point, oid)


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
                "flag_meanings": " ".join(_flag_word(n) for n in class_names)})


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


def _flag_word(name) -> str:
    """A CF ``flag_meanings`` word: blanks replaced by underscores (CF section 3.5)."""
    return "_".join(str(name).split()) or "_"


def object_coords(object_names, object_classes) -> dict:
    """``object_name`` and ``object_class`` coordinates over dimension ``object``.

    Parameters
    ----------
    object_names : sequence of str
        Names of the scene's objects in index order (``object_id`` i is ``object_names[i]``): the
        ``[[objects]]``, a scene file loaded with parts giving one ``OBJECT/NODE`` per part.
    object_classes : sequence of str
        Semantic class of each object (its material's ``class``; ``unlabelled`` when none).

    Returns
    -------
    dict of str to Var
        Empty when there are no objects (netCDF has no fixed dimension of length 0).
    """
    names = [str(n) for n in object_names]
    classes = [str(c) for c in object_classes]
    if len(names) != len(classes):
        raise ValueError(f"{len(names)} object names but {len(classes)} object classes")
    if not names:
        return {}
    return {"object_name": Var(("object",), np.array(names), "1",
                               "name of the object in [[objects]]; object_id indexes this dimension"),
            "object_class": Var(("object",), np.array(classes), "1",
                                "semantic class of the object's material (its annotation class name)")}


def object_id_attrs(object_names) -> dict:
    """CF ``flag_values`` / ``flag_meanings`` of an object-id variable: -1 ``no_hit``, then the names."""
    names = [str(n) for n in object_names]
    return {"flag_values": np.arange(-1, len(names), dtype=np.int32),
            "flag_meanings": " ".join(["no_hit"] + [_flag_word(n) for n in names])}


def image_coords(resolution_x: int, resolution_y: int) -> dict:
    """``row`` and ``col`` coordinates of an image sensor (row 0 at the top, col 0 at the left)."""
    return {"row": Var(("row",), np.arange(resolution_y, dtype=np.int32), "1", "image row, 0 at the top"),
            "col": Var(("col",), np.arange(resolution_x, dtype=np.int32), "1", "image column, 0 at the left")}


# -- time ------------------------------------------------------------------------------------
def cf_time_attrs(start_utc) -> dict:
    """CF ``units`` and ``calendar`` of instants stored as seconds since ``start_utc``.

    Parameters
    ----------
    start_utc : str or datetime
        The run's epoch of t = 0 (ISO 8601 UTC, the ``start_utc`` global attribute).

    Returns
    -------
    dict
        ``{"units": "seconds since 2024-05-01T12:00:00.000000", "calendar": "standard"}``.

    Notes
    -----
    The reference time is written without a time zone: CF (section 4.4) takes such a time as
    UTC. ``calendar = "standard"`` counts SI seconds without leap seconds, as ``start_utc + t``
    does everywhere in hifi (:meth:`hifi.api.timebase.Epoch.utc_at`). The stored numbers are float64
    seconds since the start either way; only the attributes change.
    """
    iso = Epoch.from_utc(start_utc).iso
    return {"units": "seconds since " + iso.rstrip("Z"), "calendar": "standard"}


def _start_epoch(ds, name: str) -> Epoch:
    """The epoch of t = 0 of ``ds``: its ``start_utc`` attribute, else the variable's CF units."""
    start = getattr(ds, "attrs", {}).get("start_utc")
    if start:
        return Epoch.from_utc(str(start))
    var = ds[name] if name is not None else ds
    for source in (var.encoding, var.attrs):
        units = str(source.get("units", ""))
        if units.startswith("seconds since "):
            return Epoch.from_utc(units[len("seconds since "):])
    raise ValueError(f"variable {name!r}: cannot tell the epoch of t = 0; the dataset has no start_utc "
                     f"attribute and the variable no 'seconds since ...' units")


def _time_var(ds, name):
    if name is None:
        return ds
    if name not in ds.variables:
        raise KeyError(f"dataset has no variable {name!r}")
    return ds[name]


def seconds_since_start(ds, name: str | None = "timestamp") -> np.ndarray:
    """Instants of variable ``name`` as float64 seconds since the run's start [s].

    Parameters
    ----------
    ds : xarray.Dataset or xarray.DataArray
        A hifi dataset opened with or without ``decode_times`` (or built in memory); a
        DataArray with ``name=None``.
    name : str or None
        The variable (``timestamp``, ``frame_time``).

    Returns
    -------
    numpy.ndarray of float64
        Same shape as the variable; NaN where the time is missing (NaT).

    Notes
    -----
    Undecoded values (``decode_times=False``, or datasets built in memory) are returned as
    they are stored, bit for bit. Decoded ``datetime64`` values are converted back through
    integer nanoseconds from ``start_utc``: xarray decodes to whole nanoseconds (it truncates),
    so the result is within 1 ns of the stored value.
    """
    var = _time_var(ds, name)
    values = np.asarray(var.values)
    if values.dtype.kind == "M":
        epoch = _start_epoch(ds, name)
        ns = values.astype("datetime64[ns]")
        delta = (ns - epoch.utc).astype(np.int64)
        return np.where(np.isnat(ns), np.nan, delta / 1e9)
    if values.dtype.kind == "m":
        td = values.astype("timedelta64[ns]")
        return np.where(np.isnat(td), np.nan, td.astype(np.int64) / 1e9)
    if values.dtype.kind in "fiu":
        units = str(var.attrs.get("units", var.encoding.get("units", "s")))
        if units not in ("s", "seconds") and not units.startswith("seconds since "):
            raise ValueError(f"variable {name!r} has units {units!r}; expected 's' or 'seconds since ...'")
        return np.asarray(values, dtype=np.float64)
    raise TypeError(f"variable {name!r} has dtype {values.dtype}; expected float seconds or datetime64 "
                    f"(open the file without use_cftime)")


def utc_times(ds, name: str | None = "timestamp") -> np.ndarray:
    """Instants of variable ``name`` as UTC ``datetime64[ns]`` (NaT where missing).

    See :func:`seconds_since_start`; undecoded seconds are added to ``start_utc`` rounded to
    the nanosecond (:meth:`hifi.api.timebase.Epoch.utc_at`).
    """
    var = _time_var(ds, name)
    values = np.asarray(var.values)
    if values.dtype.kind == "M":
        return values.astype("datetime64[ns]")
    s = seconds_since_start(ds, name)
    epoch = _start_epoch(ds, name)
    out = epoch.utc_at(np.nan_to_num(s))
    return np.where(np.isnan(s), np.datetime64("NaT", "ns"), out)


#: dtype of every variable :func:`range_frame` writes (the range-sensor variables).
RANGE_DTYPES = {name: np.dtype(np.float64) for name in RANGE_VARIABLES}
RANGE_DTYPES.update(detected=np.dtype(bool), object_id=np.dtype(np.int32))


def range_layout(shape, *, annotation: bool = False, pose: bool = True, signal: bool = False) -> dict:
    """Shapes and dtypes of a :func:`range_frame` frame (for :meth:`hifi.api.model.Model.frame_layout`).

    Parameters
    ----------
    shape : tuple of int
        The frame's shape (without ``frame``).
    annotation : bool
        With the uint8 ``annotation`` of :func:`annotation_var`.
    pose : bool
        With :func:`sensor_pose_vars` (``sensor_position`` (3), ``sensor_orientation`` (4)).
    signal : bool
        With :data:`SIGNAL_VARIABLES` (float64 in memory).
    """
    shape = tuple(int(n) for n in shape)
    out = {name: (shape, dtype) for name, dtype in RANGE_DTYPES.items()
           if signal or name not in SIGNAL_VARIABLES}
    if annotation:
        out["annotation"] = (shape, np.dtype(np.uint8))
    if pose:
        out["sensor_position"] = ((3,), np.dtype(np.float64))
        out["sensor_orientation"] = ((4,), np.dtype(np.float64))
    return out
