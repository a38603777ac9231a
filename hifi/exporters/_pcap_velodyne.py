"""Velodyne VLP-16, HDL-32E and HDL-64E S2 data packets in a pcap file, as the sensors send them.

A rotating-lidar dataset of ``vlp16``, ``hdl32e`` or ``hdl64e_s2`` becomes the UDP stream the
sensor would have put on its Ethernet port (destination port 2368), recorded as a libpcap file
(:mod:`._udp_pcap`), plus the calibration table the run used as a YAML file beside it, so that
packet decoders (``velodyne_decoder``, VeloView, the ROS driver) read the run as a recording.

Packet layout (1206-byte payload; every multi-byte value little-endian)
----------------------------------------------------------------------
12 data blocks of 100 bytes: a 2-byte block identifier (bytes ``FF EE``; the HDL-64E's lower
laser block ``FF DD``), the rotor azimuth in 0.01 deg (0-35999, clockwise from the sensor's
forward axis) and 32 channels of (distance: uint16 in 2 mm, intensity: uint8); then a 4-byte
timestamp, microseconds past the top of the UTC hour of the first firing in the packet; then
two bytes that differ per model:

- VLP-16 (product id 0x22) and HDL-32E (0x21): return mode (0x37 strongest, 0x38 last,
  0x39 dual) and product id. A VLP-16 block holds two firing sequences of its 16 lasers
  (channels 0-15 and 16-31), 24 sequences per packet; an HDL-32E block one firing of its 32
  lasers. Dual return: block pairs share an azimuth, the even block holding the last return,
  the odd one the strongest (the second-strongest where the last is the strongest); one
  detected return fills both.
- HDL-64E S2: an upper block (lasers 0-31, ``FF EE``) and a lower block (lasers 32-63,
  ``FF DD``) per firing, six firings per packet; the two bytes are a status type and value
  (the S2 has no return-mode or product byte). Dual return: four blocks per firing, upper and
  lower strongest then upper and lower last, three firings per packet, the layout
  ``velodyne_decoder`` decodes (it detects dual mode from blocks 0 and 2 sharing an azimuth).

References
----------
Velodyne, "VLP-16 User Manual", 63-9243 Rev. D/E, ch. 9 (packet structure, dual-return blocks,
firing timing 2.304 us / 55.296 us, return mode and product id bytes).
Velodyne, "HDL-32E User's Manual" and application note 63-9277 (packet structure and timing:
1.152 us per laser, 46.08 us cycle).
Velodyne, "HDL-64E S2 and S2.1 User's Manual", appendix E (data packet format: six upper and six
lower block firings, 0xEEFF/0xDDFF, 2 mm distances, GPS timestamp and rotating status bytes).
velodyne_decoder 3.1.0 (M. Valgur, BSD-3-Clause, https://github.com/valgur/velodyne_decoder),
the client the tests decode the files with.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..api.timebase import Epoch
from ._common import ExportError, ExportWarning, frame_first, require
from ._udp_pcap import udp_pcap_bytes

#: UDP port of Velodyne data packets (every model's manual: "data port 2368").
VELODYNE_DATA_PORT = 2368
#: Factory default addresses: the sensor at 192.168.1.201 broadcasting to 255.255.255.255
#: (VLP-16 manual, ch. 7); source MAC in Velodyne's OUI 60:76:88.
VELODYNE_SRC_IP = "192.168.1.201"
VELODYNE_DST_IP = "255.255.255.255"
VELODYNE_SRC_MAC = "60:76:88:00:00:01"
PAYLOAD_BYTES = 1206
BLOCKS_PER_PACKET = 12
CHANNELS_PER_BLOCK = 32
#: Distance LSB [m]: 2 mm for all three models (VLP-16 and HDL-32E manuals; HDL-64E S2 manual
#: appendix E: "2 mm increments").
DISTANCE_LSB_M = 0.002
#: Azimuth LSB [deg].
AZIMUTH_LSB_DEG = 0.01
#: Block identifiers as little-endian uint16 (bytes FF EE and FF DD on the wire).
UPPER_BLOCK_ID = 0xEEFF
LOWER_BLOCK_ID = 0xDDFF
#: Return-mode byte of the VLP-16 / HDL-32E packets.
RETURN_MODE_BYTE = {"strongest": 0x37, "last": 0x38, "dual": 0x39}
#: HDL-64E S2 status types rotating through the last two bytes: hours, minutes, seconds, day,
#: month, year (since 2000) of the packet's UTC time (S2 manual appendix E). The unit-parameter
#: and calibration types are not written: the calibration goes beside the pcap as YAML.
HDL64_STATUS_TYPES = "HMSDNY"

_CHANNEL = np.dtype([("distance", "<u2"), ("intensity", "u1")])
_BLOCK = np.dtype([("block_id", "<u2"), ("azimuth", "<u2"), ("channels", _CHANNEL, (CHANNELS_PER_BLOCK,))])
_PACKET = np.dtype([("blocks", _BLOCK, (BLOCKS_PER_PACKET,)), ("timestamp", "<u4"), ("factory", "u1", (2,))])
assert _PACKET.itemsize == PAYLOAD_BYTES


@dataclass(frozen=True)
class VelodyneModel:
    """How one model lays its firings out in packets.

    Attributes
    ----------
    lasers : int
        Lasers per firing cycle.
    product_id : int or None
        Product id byte; None for the HDL-64E S2 (status bytes instead).
    label : str
        Name for messages and the YAML header.
    """

    lasers: int
    product_id: int | None
    label: str

    @property
    def cycles_per_block(self) -> int:
        """Firing cycles in one 32-channel block (VLP-16: 2)."""
        return max(1, CHANNELS_PER_BLOCK // self.lasers)

    @property
    def banks(self) -> int:
        """Blocks one firing cycle needs (HDL-64E: upper and lower)."""
        return max(1, self.lasers // CHANNELS_PER_BLOCK)

    def cycles_per_packet(self, n_returns: int) -> int:
        """Firing cycles in one packet: 24 / 12 / 6 single return, half of that dual."""
        return BLOCKS_PER_PACKET * self.cycles_per_block // (self.banks * n_returns)


#: The models this writer handles, by hifi model name.
VELODYNE_MODELS = {
    "vlp16": VelodyneModel(lasers=16, product_id=0x22, label="Velodyne VLP-16"),
    "hdl32e": VelodyneModel(lasers=32, product_id=0x21, label="Velodyne HDL-32E"),
    "hdl64e_s2": VelodyneModel(lasers=64, product_id=None, label="Velodyne HDL-64E S2"),
}

_CALIBRATION_VARS = ("laser_elevation", "laser_azimuth_offset", "laser_vert_offset", "laser_horiz_offset",
                     "laser_distance_correction")


def encode_distance(distance_m, detected, dist_correction_m) -> tuple[np.ndarray, np.ndarray]:
    """Raw packet distances: ``round((d - dist_correction) / 2 mm)``, 0 for no return.

    Parameters
    ----------
    distance_m : array_like
        Reported distance, the firmware's corrected range [m] (``distance_noisy``).
    detected : array_like of bool
        Whether the sensor reports the return.
    dist_correction_m : array_like
        Per-laser range offset the decoder adds back [m] (0 for the VLP-16 and HDL-32E).

    Returns
    -------
    raw : ndarray of uint16
        Packet distance code; 0 (no return) where not detected or not representable.
    lost : ndarray of bool
        Detected returns the packet cannot hold: a raw code below 1 (closer than the laser's
        distance correction) or above 65535 (beyond 131.07 m plus the correction).
    """
    d = np.asarray(distance_m, dtype=float)
    det = np.asarray(detected, dtype=bool) & np.isfinite(d)
    with np.errstate(invalid="ignore"):
        code = np.round((d - np.asarray(dist_correction_m, dtype=float)) / DISTANCE_LSB_M)
    ok = det & (code >= 1) & (code <= 65535)
    return np.where(ok, code, 0).astype(np.uint16), det & ~ok


def encode_intensity(intensity) -> np.ndarray:
    """Intensity byte: the reported code rounded and clipped to 0..255 (NaN: 0)."""
    i = np.nan_to_num(np.asarray(intensity, dtype=float), nan=0.0)
    return np.clip(np.round(i), 0, 255).astype(np.uint8)


def dual_blocks(raw, intensity) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Split hifi's two return slots into Velodyne's last and strongest blocks.

    Parameters
    ----------
    raw, intensity : (..., 2) arrays
        Packet codes of hifi's slots: 0 the strongest echo, 1 the last echo or, where the last
        is the strongest, the second-strongest (:class:`sensors.lidar.RotatingLidar`); raw 0
        where a slot is not reported.

    Returns
    -------
    (last_raw, last_intensity), (strongest_raw, strongest_intensity)
        The farther of two reported returns in the last block, the nearer in the strongest
        block: with slot 1 the last echo that is exactly Velodyne's (last, strongest) pair;
        with slot 1 the second-strongest it is (last = strongest, second-strongest), which the
        manuals put in the same blocks. One reported return fills both blocks, as the sensor
        reports a single echo.
    """
    raw = np.asarray(raw)
    intensity = np.asarray(intensity)
    r0, r1 = raw[..., 0], raw[..., 1]
    i0, i1 = intensity[..., 0], intensity[..., 1]
    # fill a missing slot with the other one
    r0, i0, r1, i1 = (np.where(r0 > 0, r0, r1), np.where(r0 > 0, i0, i1),
                      np.where(r1 > 0, r1, r0), np.where(r1 > 0, i1, i0))
    first_far = r0 >= r1
    last = (np.where(first_far, r0, r1), np.where(first_far, i0, i1))
    strongest = (np.where(first_far, r1, r0), np.where(first_far, i1, i0))
    return last, strongest


def decoder_calibration(elevation_rad, azimuth_offset_rad, vert_offset_m, horiz_offset_m,
                        dist_correction_m) -> dict:
    """Calibration table (ros-drivers YAML keys) that makes ``velodyne_decoder`` rebuild hifi's beams.

    Parameters
    ----------
    elevation_rad, azimuth_offset_rad : (n,) float
        hifi's per-laser calibration [rad] (:class:`sensors.calibration.LaserCalibration`).
    vert_offset_m, horiz_offset_m, dist_correction_m : (n,) float
        Beam origin offsets and the firmware's range offset [m].

    Returns
    -------
    dict
        ``distance_resolution``, ``num_lasers`` and ``lasers`` (``laser_id``, ``rot_correction``,
        ``vert_correction``, ``dist_correction``, ``vert_offset_correction``,
        ``horiz_offset_correction``, ``two_pt_correction_available: false``).

    Notes
    -----
    hifi places a beam as ros-drivers' ``RawData::unpack`` does: it leaves from
    ``v * up_perp + h * left`` (``up_perp`` perpendicular to the beam in its vertical plane), so
    ``xy = d cos(el) - v sin(el)`` and ``z = d sin(el) + v cos(el)``. ``velodyne_decoder``
    follows the HDL-64E manuals instead: ``z = d sin(el) + v'`` and ``xy = d' cos(el)``, the
    offset straight up. The two describe the same line when ``v' = v / cos(el)`` and the range
    along it is shorter by ``v tan(el)``: the table written for the decoder has
    ``vert_offset_correction = v / cos(el)`` and ``dist_correction = dc - v tan(el)``, and the
    packets keep hifi's raw code ``(d - dc) / 2 mm``; the decoded point is then hifi's point
    (for ``v = 0``, the VLP-16 and HDL-32E, the table is hifi's). Read with ros-drivers'
    convention this table would move such a point by ``v (1/cos(el) - 1)`` perpendicular to the
    beam, up to 1 cm for the HDL-64E's lowest lasers. The two-point distance correction is
    not modelled by hifi and is left out (``dist_correction_x/_y`` absent).
    """
    el = np.asarray(elevation_rad, dtype=float)
    v = np.asarray(vert_offset_m, dtype=float)
    v_dec = v / np.cos(el)
    dc_dec = np.asarray(dist_correction_m, dtype=float) - v * np.tan(el)
    lasers = [{"laser_id": i, "rot_correction": float(a), "vert_correction": float(e), "dist_correction": float(dc),
               "vert_offset_correction": float(vo), "horiz_offset_correction": float(h),
               "two_pt_correction_available": False}
              for i, (a, e, dc, vo, h) in enumerate(zip(np.asarray(azimuth_offset_rad, dtype=float), el, dc_dec,
                                                        v_dec, np.asarray(horiz_offset_m, dtype=float)))]
    return {"distance_resolution": DISTANCE_LSB_M, "num_lasers": len(lasers), "lasers": lasers}


def _hour_microseconds(epoch: Epoch, t_s) -> tuple[np.ndarray, np.ndarray]:
    """UTC instants of ``t_s`` [s] after the epoch: ns since 1970 (int64) and us past the hour."""
    unix_ns = epoch.utc.astype("datetime64[ns]").astype(np.int64) + np.round(np.asarray(t_s) * 1e9).astype(np.int64)
    us = (unix_ns + 500) // 1000
    return unix_ns, (us % 3_600_000_000).astype(np.uint32)


def _status_bytes(unix_ns, packet_index) -> np.ndarray:
    """HDL-64E S2 status type and value of each packet (:data:`HDL64_STATUS_TYPES`)."""
    t = np.asarray(unix_ns, dtype=np.int64).astype("datetime64[ns]")
    year = t.astype("datetime64[Y]").astype(int) + 1970
    month = t.astype("datetime64[M]").astype(int) % 12 + 1
    day = (t.astype("datetime64[D]") - t.astype("datetime64[M]")).astype(int) + 1
    sec_of_day = (t - t.astype("datetime64[D]")).astype("timedelta64[s]").astype(int)
    values = np.stack([sec_of_day // 3600, sec_of_day // 60 % 60, sec_of_day % 60, day, month, year - 2000])
    k = np.asarray(packet_index) % len(HDL64_STATUS_TYPES)
    types = np.frombuffer(HDL64_STATUS_TYPES.encode("ascii"), dtype=np.uint8)[k]
    return np.stack([types, values[k, np.arange(k.size)].astype(np.uint8)], axis=-1)


def velodyne_packets(ds):
    """The payloads and capture times of a dataset's packets (see :func:`write_velodyne_pcap`).

    Returns
    -------
    payloads : (n, 1206) uint8
    capture_ns : (n,) int64
        Capture time of each packet [ns since 1970 UTC].
    lost : int
        Detected returns the packets could not hold (written as no return).
    """
    model_name = ds.attrs.get("sensor_model")
    model = VELODYNE_MODELS.get(model_name)
    if model is None:
        raise ExportError(f"Velodyne pcap: sensor_model {model_name!r} is not a Velodyne model; allowed: "
                          f"{', '.join(VELODYNE_MODELS)}")
    fmt = f"pcap ({model.label})"
    require(ds, fmt, ("distance_noisy", "detected", "intensity", "timestamp") + _CALIBRATION_VARS,
            why="the rotating-lidar variables and the per-laser calibration")
    for key in ("start_utc", "firing_cycle_s", "azimuth_step_deg", "return_mode"):
        if key not in ds.attrs:
            raise ExportError(f"{fmt} needs the global attribute {key}; the dataset (sensor_model "
                              f"{model_name!r}) lacks it (written by hifi's rotating lidars since the pcap export)")
    mode = str(ds.attrs["return_mode"])
    if mode not in RETURN_MODE_BYTE:
        raise ExportError(f"{fmt}: return_mode = {mode!r} has no Velodyne packet encoding; allowed: "
                          f"{', '.join(RETURN_MODE_BYTE)}")
    n_ret = 2 if mode == "dual" else 1
    if (mode == "dual") != ("return" in ds.dims) or (n_ret == 2 and ds.sizes["return"] != 2):
        raise ExportError(f"{fmt}: return_mode {mode!r} but the dataset's dimensions are {dict(ds.sizes)}")
    n_lasers = int(ds.sizes.get("laser", 0))
    if n_lasers != model.lasers:
        raise ExportError(f"{fmt}: the dataset has {n_lasers} lasers, the {model.label} {model.lasers}")
    steps = np.asarray(ds["step"].values) if "step" in ds.variables else None
    n_steps = int(ds.sizes.get("step", 0))
    if steps is None or not np.array_equal(steps, np.arange(n_steps)):
        stride = ds.attrs.get("azimuth_stride")
        shown = "none" if steps is None else ", ".join(str(int(v)) for v in steps[:3]) + ", ..."
        raise ExportError(f"{fmt} needs every firing cycle of a rotation (azimuth_stride = 1); the dataset's "
                          f"steps are {shown} (azimuth_stride = {'unknown' if stride is None else int(stride)})")
    try:
        epoch = Epoch.from_utc(str(ds.attrs["start_utc"]))
    except ValueError:
        raise ExportError(f"start_utc = {ds.attrs['start_utc']!r}: expected an ISO 8601 UTC time") from None

    arrs = frame_first(ds, ["distance_noisy", "detected", "intensity", "timestamp"])
    dc = np.asarray(ds["laser_distance_correction"].values, dtype=float)
    shape = arrs["detected"].shape                                   # (F, S, L[, R])
    dc_b = dc.reshape((1, 1, -1) + (1,) * (len(shape) - 3))
    raw, lost = encode_distance(arrs["distance_noisy"], arrs["detected"], dc_b)
    inten = np.where(raw > 0, encode_intensity(arrs["intensity"]), 0).astype(np.uint8)
    if n_ret == 2:
        (lr, li), (sr, si) = dual_blocks(raw, inten)
        # block order within a firing: VLP-16 / HDL-32E (last, strongest); HDL-64E (strongest, last)
        pair = ((sr, si), (lr, li)) if model.banks == 2 else ((lr, li), (sr, si))
        raw = np.stack([pair[0][0], pair[1][0]], axis=-1)
        inten = np.stack([pair[0][1], pair[1][1]], axis=-1)
    else:
        raw, inten = raw[..., None], inten[..., None]
    n_frames = shape[0]
    cpp = model.cycles_per_packet(n_ret)
    per_frame = -(-n_steps // cpp)                                    # packets per rotation
    n_cyc = per_frame * cpp
    pad = ((0, 0), (0, n_cyc - n_steps), (0, 0), (0, 0))
    raw, inten = np.pad(raw, pad), np.pad(inten, pad)                 # empty cycles close the last packet
    k, banks, per_bank = model.cycles_per_block, model.banks, model.lasers // model.banks

    def blocks(a):
        a = a.reshape(n_frames, n_cyc // k, k, banks, per_bank, n_ret)
        return a.transpose(0, 1, 5, 3, 2, 4).reshape(-1, CHANNELS_PER_BLOCK)

    n_packets = n_frames * per_frame
    pk = np.zeros(n_packets, dtype=_PACKET)
    blk = pk["blocks"]                                               # (n_packets, 12) view: not reshapeable
    blk["channels"]["distance"] = blocks(raw).reshape(n_packets, BLOCKS_PER_PACKET, CHANNELS_PER_BLOCK)
    blk["channels"]["intensity"] = blocks(inten).reshape(n_packets, BLOCKS_PER_PACKET, CHANNELS_PER_BLOCK)
    cycle = np.arange(n_cyc)
    az = np.round(cycle * float(ds.attrs["azimuth_step_deg"]) / AZIMUTH_LSB_DEG).astype(np.int64) % 36000
    per_group = n_ret * banks
    blk["azimuth"] = np.tile(np.repeat(az[::k], per_group), n_frames).reshape(n_packets, BLOCKS_PER_PACKET)
    ids = np.array([UPPER_BLOCK_ID, LOWER_BLOCK_ID][:banks], dtype=np.uint16)
    blk["block_id"] = np.tile(ids, BLOCKS_PER_PACKET // banks)
    # timing: firing cycle s of frame f starts at t0_f + s T_c (laser 0 fires at the cycle start)
    t = np.asarray(arrs["timestamp"], dtype=float)
    t_first = t.reshape(n_frames, n_steps, -1)[:, 0, :]
    t0 = np.nanmin(t_first, axis=1)                                  # (F,)
    tc = float(ds.attrs["firing_cycle_s"])
    packet_start = (t0[:, None] + (np.arange(per_frame) * cpp * tc)[None, :]).ravel()
    start_ns, us_hour = _hour_microseconds(epoch, packet_start)
    pk["timestamp"] = us_hour
    if model.product_id is None:
        pk["factory"] = _status_bytes(start_ns, np.arange(n_packets))
    else:
        pk["factory"] = (RETURN_MODE_BYTE[mode], model.product_id)
    capture_ns, _ = _hour_microseconds(epoch, packet_start + cpp * tc)
    return pk.view(np.uint8).reshape(n_packets, PAYLOAD_BYTES), capture_ns, int(lost.sum())


def write_velodyne_pcap(ds, out_path, *, calibration_path=None) -> list[Path]:
    """Write a Velodyne dataset as the sensor's UDP data packets in a pcap, with its calibration.

    Parameters
    ----------
    ds : xarray.Dataset
        A ``vlp16``, ``hdl32e`` or ``hdl64e_s2`` dataset of every firing cycle
        (``azimuth_stride = 1``), ``return_mode`` strongest, last or dual, with the per-laser
        calibration variables (``laser_elevation``, ``laser_azimuth_offset``,
        ``laser_vert_offset``, ``laser_horiz_offset``, ``laser_distance_correction``) and the
        attributes ``start_utc``, ``firing_cycle_s``, ``azimuth_step_deg``, ``return_mode``.
    out_path : path-like
        The pcap file.
    calibration_path : path-like, optional
        The calibration YAML; default ``out_path`` with suffix ``.yaml``.

    Returns
    -------
    list of pathlib.Path
        ``[pcap, yaml]``.

    Notes
    -----
    * Packets: the layout of the module docstring, one rotation (dataset frame) after the
      other; a rotation's first packet starts at its firing cycle 0 (azimuth 0). hifi simulates
      ``floor(1 / (rate T_c))`` cycles per rotation and starts the next at azimuth 0 where a
      real sensor fires on without a gap, so the last packet of a rotation is filled with
      firing cycles that continue the rotation and report nothing (distance 0): every
      packet's azimuths then advance uniformly, as the decoders' interpolation assumes.
    * Block azimuth: the rotor's azimuth at the block's first firing, ``s * azimuth_step_deg``
      for firing cycle s, rounded to 0.01 deg. Decoders interpolate the azimuth of each laser
      from the rotation rate and the manuals' firing times.
    * Distance: ``round((distance_noisy - laser_distance_correction) / 2 mm)``; misses and
      undetected returns are 0, "no return" (:func:`encode_distance`). Intensity: the dataset's
      reported code (Velodyne's byte), rounded. Dual return: :func:`dual_blocks`.
    * Time: the 4-byte timestamp is the UTC time of the packet's first firing (``start_utc`` +
      the dataset's firing times) in microseconds past the top of the hour, the convention of
      the VLP-16 manual and of ``velodyne_decoder`` (the older HDL manuals describe the
      timestamp as taken at packet assembly). The capture time of the pcap record is the end
      of the packet's last firing cycle, when the sensor can send it.
    * Calibration: a ros-drivers YAML (``lasers:`` list) written for the decoder's beam
      geometry, :func:`decoder_calibration`. ``velodyne_decoder`` needs it for the HDL-64E
      (``Config(model=Model.HDL64E_S2, calibration=Calibration.read(yaml))``). It finds the
      VLP-16 and HDL-32E from the product id byte on its own, but its built-in tables add
      per-laser vertical beam offsets (``focal x tan(-elevation)``; the VLP-16 manual documents
      up to 11.2 mm, the decoder's HDL-32E table reaches 17 mm) that hifi's tables (ros-drivers
      ``VLP16db.yaml`` / ``32db.yaml``) lack: decode with the YAML to get the dataset's points.
    * Detected returns the 16-bit distance cannot hold (beyond 131 m, or for the HDL-64E
      closer than the laser's 1.2-1.5 m distance correction) are written as no return with a
      warning naming their number.

    Raises
    ------
    ExportError
        Not a Velodyne dataset (the message names the model and the supported ones), a sparse
        sweep, a return mode without packet encoding, or a missing variable or attribute.
    """
    import yaml

    out_path = Path(out_path)
    payloads, capture_ns, lost = velodyne_packets(ds)
    if lost:
        warnings.warn(f"Velodyne pcap: {lost} detected returns lie outside the 16-bit distance field "
                      f"(2 mm units after the distance correction) and are written as no return", ExportWarning,
                      stacklevel=2)
    out_path.write_bytes(udp_pcap_bytes(payloads, capture_ns, src_ip=VELODYNE_SRC_IP, dst_ip=VELODYNE_DST_IP,
                                        src_port=VELODYNE_DATA_PORT, dst_port=VELODYNE_DATA_PORT,
                                        src_mac=VELODYNE_SRC_MAC))
    calib = decoder_calibration(*(ds[v].values for v in _CALIBRATION_VARS))
    cal_path = Path(calibration_path) if calibration_path is not None else out_path.with_suffix(".yaml")
    header = (f"# {VELODYNE_MODELS[ds.attrs['sensor_model']].label} calibration of hifi sensor "
              f"{ds.attrs.get('sensor_name', '')!r}, written with {out_path.name} by hifi "
              f"{ds.attrs.get('hifi_version', '')}\n"
              f"# source: {ds.attrs.get('calibration_source', 'unknown')}\n"
              "# Beam geometry of velodyne_decoder / the HDL-64E manuals (vertical offset straight up): "
              "vert_offset_correction = v / cos(vert_correction), dist_correction = dc - v tan(vert_correction) "
              "of hifi's (ros-drivers') v and dc; angles in rad, lengths in m.\n")
    cal_path.write_text(header + yaml.safe_dump(calib, sort_keys=False))
    return [out_path, cal_path]
