"""The Ouster metadata JSON: reading it, what ouster-sdk fills in for older files, the beam
geometry it defines, and the JSON of a simulated unit (:class:`sensors.ouster.Ouster` is the model).

An Ouster describes itself in a metadata JSON (what the sensor's HTTP API returns and
``ouster-sdk`` writes beside every recording): per-beam altitude and azimuth angles, the offset
of the beam origins from the rotation axis, the transform from its lidar frame to its sensor
frame, the mode (columns per frame x frames per second) and the UDP packet layout.

The JSON is read with :mod:`json` (:func:`read_metadata`), both the legacy flat layout
(firmware <= 2.x) and the nested one (``sensor_info``, ``beam_intrinsics``, ``lidar_intrinsics``,
``config_params``, ``lidar_data_format``, ...), with ouster-sdk's defaults for what older files
lack. :func:`ouster_beams` gives every pixel's origin and direction as Ouster defines them,
:func:`destagger_shift` the column shift of each beam, and :func:`effective_metadata` the file as
the simulated unit would write it. ouster-sdk itself is not needed; the tests use it as the
independent implementation.

References
----------
Ouster, *Firmware user manual*, "Sensor Data: Coordinate Frames and XYZ Calculation" and
"Lidar Data Format" (static.ouster.dev/sensor-docs). ouster-lidar/ouster-sdk @ 46b7bcee
(BSD-3-Clause): ``ouster_core/src/xyzlut.cpp`` (``make_xyz_lut``), ``metadata.cpp``,
``sensor_config.cpp`` and ``sensor_info.cpp`` (modes and defaults).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

#: Lidar modes: name -> (columns per frame, frames per second). ouster-sdk
#: ``sensor_config.cpp`` (``LidarMode::_512x10`` ... ``_4096x5``), the modes the firmware offers.
LIDAR_MODES = {"512x10": (512, 10), "512x20": (512, 20), "1024x10": (1024, 10), "1024x20": (1024, 20),
               "2048x10": (2048, 10), "4096x5": (4096, 5)}

#: Single-return (and one dual) UDP lidar profiles the model records and ``hifi export --format
#: pcap`` writes (:mod:`hifi.exporters._pcap_ouster` holds their layouts).
UDP_PROFILES = ("LEGACY", "RNG19_RFL8_SIG16_NIR16", "RNG19_RFL8_SIG16_NIR16_DUAL", "RNG15_RFL8_NIR8")

#: UDP destination port of lidar packets when the metadata gives none (Ouster firmware default;
#: ouster-sdk ``SensorConfig``).
DEFAULT_UDP_PORT_LIDAR = 7502

#: UDP destination written into metadata whose ``udp_dest`` is empty (TEST-NET-1, RFC 5737: the
#: address ``hifi export --format pcap`` sends to).
SIMULATED_UDP_DEST = "192.0.2.1"

#: ``lidar_origin_to_beam_origin_mm`` by product line when legacy metadata lacks it: ouster-sdk
#: ``sensor_info.cpp::default_lidar_origin_to_beam_origin`` (12.163 mm: the first generation).
DEFAULT_BEAM_ORIGIN_MM = (("OS-0-", 27.67), ("OS-1-", 15.806), ("OS-2-", 13.762))
GEN1_BEAM_ORIGIN_MM = 12.163

#: ``lidar_to_sensor_transform`` [mm] when the metadata lacks it: ouster-sdk ``metadata.cpp``
#: ``DEFAULT_LIDAR_TO_SENSOR`` (a half turn about z and 36.18 mm up).
DEFAULT_LIDAR_TO_SENSOR_MM = (-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1)

#: The keys whose presence marks the nested metadata layout (ouster-sdk ``metadata.cpp``
#: ``NONLEGACY_METADATA_FIELDS``, the required ones).
NESTED_KEYS = ("sensor_info", "beam_intrinsics", "imu_intrinsics", "lidar_intrinsics", "config_params")


class MetadataError(ValueError):
    """An Ouster metadata file that cannot be used; the message names the file, the key, the
    value and what is allowed."""


@dataclass(frozen=True)
class OusterMetadata:
    """What the model and the pcap writer need from an Ouster metadata JSON.

    Attributes
    ----------
    source : str
        The file read.
    layout : {"legacy", "nested"}
    prod_line : str
        ``OS-1-128``, ...
    prod_sn, init_id : int
        Serial number and initialisation id (0 when absent); packets carry them.
    lidar_mode : str
        A key of :data:`LIDAR_MODES`.
    pixels_per_column, columns_per_packet : int
    udp_profile_lidar : str
        One of :data:`UDP_PROFILES`.
    udp_port_lidar : int
    beam_altitude_deg, beam_azimuth_deg : ndarray, shape (pixels_per_column,)
        [deg], as in the file.
    beam_to_lidar_mm : ndarray, shape (4, 4)
        ``beam_to_lidar_transform`` (translation in mm), or the identity with
        ``lidar_origin_to_beam_origin_mm`` in [0, 3] as ouster-sdk builds it for older files.
    lidar_to_sensor_mm : ndarray, shape (4, 4)
        ``lidar_to_sensor_transform`` (translation in mm).
    raw : dict
        The JSON as read.
    """

    source: str
    layout: str
    prod_line: str
    prod_sn: int
    init_id: int
    lidar_mode: str
    pixels_per_column: int
    columns_per_packet: int
    udp_profile_lidar: str
    udp_port_lidar: int
    beam_altitude_deg: np.ndarray
    beam_azimuth_deg: np.ndarray
    beam_to_lidar_mm: np.ndarray
    lidar_to_sensor_mm: np.ndarray
    raw: dict

    @property
    def columns_per_frame(self) -> int:
        return LIDAR_MODES[self.lidar_mode][0]

    @property
    def rate_hz(self) -> float:
        return float(LIDAR_MODES[self.lidar_mode][1])

    @property
    def range_offset_m(self) -> float:
        """``n``: distance from the lidar origin to a beam origin [m], the part of Ouster's
        range field before the beam leaves (ouster-sdk ``make_xyz_lut``:
        ``hypot(beam_to_lidar[0, 3], beam_to_lidar[2, 3])``)."""
        return float(np.hypot(self.beam_to_lidar_mm[0, 3], self.beam_to_lidar_mm[2, 3])) / 1e3


def _fail(path, key, value, reason) -> MetadataError:
    return MetadataError(f"{path}: key {key!r} = {value!r}: {reason}")


def _numbers(path, key, value, n=None) -> np.ndarray:
    ok = isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    if not ok or (n is not None and len(value) != n) or not value:
        want = f"a list of {n} numbers" if n is not None else "a non-empty list of numbers"
        shown = value if not isinstance(value, list) or len(value) <= 6 else f"<list of {len(value)}>"
        raise _fail(path, key, shown, f"expected {want}")
    return np.asarray(value, dtype=float)


def read_metadata(path) -> OusterMetadata:
    """Read an Ouster sensor metadata JSON, legacy flat or nested layout.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    OusterMetadata

    Raises
    ------
    MetadataError
        Not JSON, a layout that is neither (some nested keys but not all), a missing or malformed
        beam table, an unknown ``lidar_mode`` or ``udp_profile_lidar``, or a data format that
        contradicts the mode; the message names the file, the key, the value and what is allowed.

    Notes
    -----
    The layout is nested when the file has every one of :data:`NESTED_KEYS` and legacy when it
    has none (ouster-sdk ``metadata.cpp::is_new_format``; ``convert_legacy_to_nonlegacy`` maps
    the flat keys onto the nested ones as read here). Defaults for what older files lack, as
    ouster-sdk: ``udp_profile_lidar`` LEGACY, ``udp_port_lidar`` 7502,
    ``lidar_origin_to_beam_origin_mm`` by product line (:data:`DEFAULT_BEAM_ORIGIN_MM`),
    ``beam_to_lidar_transform`` the identity with that offset in x,
    ``lidar_to_sensor_transform`` :data:`DEFAULT_LIDAR_TO_SENSOR_MM`, 16 columns per packet.
    """
    path = Path(path)
    try:
        d = json.loads(path.read_text())
    except OSError as exc:
        raise MetadataError(f"{path}: cannot read the Ouster metadata file ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError(f"{path}: not an Ouster metadata JSON (not valid JSON: {exc})") from None
    if not isinstance(d, dict):
        raise MetadataError(f"{path}: not an Ouster metadata JSON (expected a JSON object, got "
                            f"{type(d).__name__})")
    present = [k for k in NESTED_KEYS if k in d]
    if present and len(present) < len(NESTED_KEYS):
        missing = [k for k in NESTED_KEYS if k not in d]
        raise MetadataError(f"{path}: nested Ouster metadata must have all of {', '.join(NESTED_KEYS)}; it has "
                            f"{', '.join(present)} but lacks {', '.join(missing)}")
    nested = bool(present)
    if nested:
        for k in NESTED_KEYS:
            if not isinstance(d[k], dict):
                raise _fail(path, k, d[k], "expected a JSON object")
        beam, cfg, info = d["beam_intrinsics"], d["config_params"], d["sensor_info"]
        fmt = d.get("lidar_data_format") or {}
        l2s, l2s_key = d["lidar_intrinsics"].get("lidar_to_sensor_transform"), \
            "lidar_intrinsics.lidar_to_sensor_transform"
        pre = {"beam": "beam_intrinsics.", "cfg": "config_params.", "fmt": "lidar_data_format."}
    else:
        beam = cfg = info = d
        fmt = d.get("data_format") or {}
        l2s, l2s_key = d.get("lidar_to_sensor_transform"), "lidar_to_sensor_transform"
        pre = {"beam": "", "cfg": "", "fmt": "data_format."}
    if not isinstance(fmt, dict):
        raise _fail(path, pre["fmt"].rstrip("."), fmt, "expected a JSON object")

    for key in ("beam_altitude_angles", "beam_azimuth_angles"):
        if key not in beam:
            raise MetadataError(f"{path}: key {pre['beam'] + key!r} is missing; an Ouster metadata file lists one "
                                f"angle [deg] per beam")
    alt = _numbers(path, pre["beam"] + "beam_altitude_angles", beam["beam_altitude_angles"])
    h = len(alt)
    az = _numbers(path, pre["beam"] + "beam_azimuth_angles", beam["beam_azimuth_angles"], h)

    mode = cfg.get("lidar_mode")
    if mode is None:
        raise MetadataError(f"{path}: key {pre['cfg'] + 'lidar_mode'!r} is missing; allowed: "
                            f"{', '.join(LIDAR_MODES)}")
    if mode not in LIDAR_MODES:
        raise _fail(path, pre["cfg"] + "lidar_mode", mode, f"unknown lidar mode; allowed: {', '.join(LIDAR_MODES)}")
    ppc = fmt.get("pixels_per_column", h)
    if ppc != h:
        raise _fail(path, pre["fmt"] + "pixels_per_column", ppc,
                    f"must equal the number of beam_altitude_angles ({h})")
    cpf = fmt.get("columns_per_frame", LIDAR_MODES[mode][0])
    if cpf != LIDAR_MODES[mode][0]:
        raise _fail(path, pre["fmt"] + "columns_per_frame", cpf,
                    f"contradicts lidar_mode {mode!r} ({LIDAR_MODES[mode][0]} columns)")
    cpp = fmt.get("columns_per_packet", cfg.get("columns_per_packet", 16))
    if not isinstance(cpp, int) or isinstance(cpp, bool) or cpp < 1 or LIDAR_MODES[mode][0] % cpp:
        raise _fail(path, pre["fmt"] + "columns_per_packet", cpp,
                    f"expected a positive divisor of the {LIDAR_MODES[mode][0]} columns of {mode!r} (1, 2, 4, 8, 16)")
    profile = fmt.get("udp_profile_lidar") or cfg.get("udp_profile_lidar") or "LEGACY"
    if profile not in UDP_PROFILES:
        raise _fail(path, pre["fmt"] + "udp_profile_lidar", profile,
                    f"UDP lidar profile not supported; allowed: {', '.join(UDP_PROFILES)}")
    port = cfg.get("udp_port_lidar") or DEFAULT_UDP_PORT_LIDAR
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise _fail(path, pre["cfg"] + "udp_port_lidar", port, "expected a UDP port 1..65535")

    prod_line = str(info.get("prod_line") or "")
    n_mm = beam.get("lidar_origin_to_beam_origin_mm")
    if n_mm is None:
        n_mm = next((v for prefix, v in DEFAULT_BEAM_ORIGIN_MM if prod_line.startswith(prefix)), GEN1_BEAM_ORIGIN_MM)
    elif isinstance(n_mm, bool) or not isinstance(n_mm, (int, float)):
        raise _fail(path, pre["beam"] + "lidar_origin_to_beam_origin_mm", n_mm, "expected a number [mm]")
    b2l = beam.get("beam_to_lidar_transform")
    if b2l is None:
        b2l_m = np.eye(4)
        b2l_m[0, 3] = float(n_mm)
    else:
        b2l_m = _numbers(path, pre["beam"] + "beam_to_lidar_transform", b2l, 16).reshape(4, 4)
    l2s_m = np.asarray(DEFAULT_LIDAR_TO_SENSOR_MM, dtype=float).reshape(4, 4) if l2s is None else \
        _numbers(path, l2s_key, l2s, 16).reshape(4, 4)
    rot = l2s_m[:3, :3]
    if not np.allclose(rot @ rot.T, np.eye(3), atol=1e-6):
        raise _fail(path, l2s_key, l2s, "the upper-left 3 x 3 block must be a rotation")

    def _int(v):
        try:
            return int(v or 0)
        except (TypeError, ValueError):
            return 0

    return OusterMetadata(str(path), "nested" if nested else "legacy", prod_line, _int(info.get("prod_sn")),
                          _int(info.get("initialization_id")), mode, h, cpp, profile, int(port), alt, az, b2l_m,
                          l2s_m, d)


class OusterBeams(NamedTuple):
    """Result of :func:`ouster_beams`."""

    direction_sensor: np.ndarray   #: (m, h, 3) unit ray directions, sensor frame
    origin_sensor: np.ndarray      #: (m, h, 3) beam origins, sensor frame [m]
    range_offset_m: float          #: n, lidar origin to beam origin [m]


def ouster_beams(beam_altitude_deg, beam_azimuth_deg, beam_to_lidar_mm, lidar_to_sensor_mm, columns_per_frame,
                 columns=None) -> OusterBeams:
    """Origin and direction of every pixel (measurement column, beam) of an Ouster, sensor frame.

    Parameters
    ----------
    beam_altitude_deg, beam_azimuth_deg : (h,) float
        ``beam_altitude_angles`` and ``beam_azimuth_angles`` of the metadata [deg].
    beam_to_lidar_mm : (4, 4) float
        ``beam_to_lidar_transform`` (translation [mm]); only [0, 3] and [2, 3] are used.
    lidar_to_sensor_mm : (4, 4) float
        ``lidar_to_sensor_transform`` (rotation, translation [mm]).
    columns_per_frame : int
        ``w`` of the lidar mode.
    columns : (m,) int, optional
        Measurement ids to return (default ``0 .. w-1``).

    Returns
    -------
    OusterBeams
        ``direction_sensor`` (m, h, 3), ``origin_sensor`` (m, h, 3) [m], ``range_offset_m`` [m].

    Notes
    -----
    Ouster's lidar frame (firmware user manual, "Lidar Range to XYZ"; ouster-sdk
    ``make_xyz_lut``): for measurement id ``j`` of ``w`` the encoder angle is
    ``theta_e = 2 pi (1 - j / w)`` (the rotor turns clockwise seen from above, column 0 at the
    lidar frame's +x, the connector side), beam ``i`` points at ``theta_e + theta_a`` with
    ``theta_a = -2 pi beam_azimuth_angles[i] / 360`` and altitude ``phi = 2 pi
    beam_altitude_angles[i] / 360``:

        d = (cos(theta_e + theta_a) cos(phi), sin(theta_e + theta_a) cos(phi), sin(phi))

    and leaves from the beam origin ``b = (B03 cos(theta_e), B03 sin(theta_e), B23)`` on the
    beam circle (B: ``beam_to_lidar_transform``). A range ``r`` reported by the sensor is measured
    from the lidar origin: the point is ``r d + b - n d = b + (r - n) d`` with ``n = hypot(B03,
    B23)``, so the ray from ``b`` travels ``r - n``. ``lidar_to_sensor_transform`` (R, T) then
    takes directions to ``R d`` and origins to ``R b + T``. All beams of a column fire at once.
    """
    alt = np.radians(np.asarray(beam_altitude_deg, dtype=float))
    theta_a = -np.radians(np.asarray(beam_azimuth_deg, dtype=float))
    w = int(columns_per_frame)
    j = np.arange(w) if columns is None else np.asarray(columns)
    theta_e = 2.0 * np.pi * (1.0 - j / w)
    ang = theta_e[:, None] + theta_a[None, :]
    ca = np.cos(alt)[None, :]
    d = np.stack([np.cos(ang) * ca, np.sin(ang) * ca, np.broadcast_to(np.sin(alt)[None, :], ang.shape)], axis=-1)
    b2l = np.asarray(beam_to_lidar_mm, dtype=float)
    bx, bz = b2l[0, 3], b2l[2, 3]
    b = np.stack([bx * np.cos(theta_e), bx * np.sin(theta_e), np.full_like(theta_e, bz)], axis=-1)   # (m, 3) mm
    t = np.asarray(lidar_to_sensor_mm, dtype=float)
    rot, trans = t[:3, :3], t[:3, 3]
    d_s = d @ rot.T
    o_s = np.broadcast_to(((b @ rot.T + trans) / 1e3)[:, None, :], d.shape).copy()
    return OusterBeams(d_s, o_s, float(np.hypot(bx, bz)) / 1e3)


def destagger_shift(beam_azimuth_deg, n_columns) -> np.ndarray:
    """Column shift that puts every beam's pixel of one azimuth into one image column [columns].

    ``s_i = round(beam_azimuth_deg[i] n_columns / 360)``: pixel (j, i) points at azimuth
    ``theta_e(j) - az_i`` = ``theta_e(j + az_i w / 360)``, so column ``j + s_i`` of the
    destaggered image holds the beams that point the same way (Ouster's ``pixel_shift_by_row``
    up to a constant: 24, 16, 8, 0 for azimuths 4.2, 1.4, -1.4, -4.2 deg at 1024 columns).
    """
    return np.rint(np.asarray(beam_azimuth_deg, dtype=float) * n_columns / 360.0).astype(int)


def effective_metadata(meta: OusterMetadata, lidar_mode: str, udp_profile_lidar: str) -> dict:
    """The metadata JSON of the simulated unit: the file as read, with the mode and profile used.

    ``lidar_mode``, ``columns_per_frame``, ``column_window`` (the full frame: every column is
    simulated), ``udp_profile_lidar`` and, for a new column count, ``pixel_shift_by_row``
    (:func:`destagger_shift` plus the file's constant offset) are replaced in the file's own
    layout, and an empty ``config_params.udp_dest`` becomes :data:`SIMULATED_UDP_DEST` (a unit
    that was not streaming when its metadata was saved); nothing else changes, so ouster-sdk
    reads the result as it reads the original.
    """
    d = json.loads(json.dumps(meta.raw))
    w = LIDAR_MODES[lidar_mode][0]
    if meta.layout == "nested":
        cfg, fmt = d["config_params"], d.setdefault("lidar_data_format", {})
        if "udp_profile_lidar" in cfg or udp_profile_lidar != meta.udp_profile_lidar:
            cfg["udp_profile_lidar"] = udp_profile_lidar
        if "udp_dest" in cfg and not cfg["udp_dest"]:
            # ouster-sdk takes an empty destination for a stream that was off (profile OFF,
            # metadata.cpp); the simulated unit sends to the pcap writer's host address.
            cfg["udp_dest"] = SIMULATED_UDP_DEST
    else:
        cfg, fmt = d, d.setdefault("data_format", {})
    cfg["lidar_mode"] = lidar_mode
    if lidar_mode != meta.lidar_mode or "pixel_shift_by_row" not in fmt:
        old = fmt.get("pixel_shift_by_row")
        base = destagger_shift(meta.beam_azimuth_deg, w)
        offset = 0
        if old is not None and len(old) == len(base):
            step = np.median(np.asarray(old) - destagger_shift(meta.beam_azimuth_deg, meta.columns_per_frame))
            offset = round(float(step) * w / meta.columns_per_frame)
        fmt["pixel_shift_by_row"] = [int(v) for v in base + offset]
    fmt["columns_per_frame"] = w
    fmt["pixels_per_column"] = meta.pixels_per_column
    fmt["columns_per_packet"] = meta.columns_per_packet
    fmt["column_window"] = [0, w - 1]
    fmt["udp_profile_lidar"] = udp_profile_lidar
    return d
