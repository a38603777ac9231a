"""Ouster lidar packets in a pcap file, with the sensor's metadata JSON beside it.

:func:`write_ouster_pcap` turns an ``ouster`` dataset into the UDP lidar packets the sensor
would have sent, in the UDP profile of its metadata, wrapped in Ethernet / IPv4 / UDP frames of
a classic libpcap file, and writes the metadata JSON next to it, so that ``ouster-sdk`` (or any
Ouster driver) opens the pair as a recording of the real sensor. Plain :mod:`struct` and numpy:
a pcap of fixed-size UDP datagrams needs no packet library.

References
----------
Ouster, *Firmware user manual*, "Lidar Data Format" (packet header, column header, pixel
layouts of the LEGACY, RNG19_RFL8_SIG16_NIR16(_DUAL) and RNG15_RFL8_NIR8 profiles, footer).
ouster-lidar/ouster-sdk @ 46b7bcee, ``ouster_core/src/parsing.cpp``: the same layouts as bit
fields (``LEGACY_FIELD_INFO``, ``SINGLE_FIELD_INFO``, ``DUAL_FIELD_INFO``, ``LB_FIELD_INFO``),
header offsets (``PacketFormat::Impl``) and the CRC-64 of the footer (``crc64_compute``: ECMA-182
polynomial, reflected, initial and final value all ones). libpcap file format:
https://wiki.wireshark.org/Development/LibpcapFileFormat. IPv4: RFC 791 (header checksum RFC 1071);
UDP: RFC 768.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..run.dataset import utc_times
from ._common import ExportError, frame_first, require

#: Encoder ticks per revolution of the LEGACY column header (Ouster software user manual
#: v1.12, "Lidar Data Format": encoder count 0..90111).
ENCODER_TICKS_PER_REV = 90112

#: Dataset attributes the ``ouster`` model writes and the writer reads.
OUSTER_ATTRS = ("ouster_metadata", "ouster_lidar_mode", "ouster_udp_profile_lidar", "ouster_range_offset_m")

#: Lidar modes: name -> (columns per frame, frames per second) (as :data:`sensors.ouster.LIDAR_MODES`).
LIDAR_MODES = {"512x10": (512, 10), "512x20": (512, 20), "1024x10": (1024, 10), "1024x20": (1024, 20),
               "2048x10": (2048, 10), "4096x5": (4096, 5)}


@dataclass(frozen=True)
class PixelLayout:
    """One UDP profile's pixel: its size [bytes] and fields ``name -> (first bit, bits, upshift)``.

    A field's value is ``(word >> first_bit) & (2**bits - 1)`` of the little-endian pixel,
    shifted up by ``upshift`` when decoded (the 15-bit range counts 8 mm, the 8-bit near-IR 16
    photons).
    """

    size: int
    fields: dict


#: Pixel layouts (Ouster firmware user manual "Lidar Data Format"; ouster-sdk parsing.cpp):
#: range in mm from the lidar origin, calibrated reflectivity byte, signal and near-IR photons.
PROFILES = {
    "LEGACY": PixelLayout(12, {"range": (0, 20, 0), "reflectivity": (32, 8, 0), "signal": (48, 16, 0),
                               "near_ir": (64, 16, 0)}),
    "RNG19_RFL8_SIG16_NIR16": PixelLayout(12, {"range": (0, 19, 0), "reflectivity": (32, 8, 0),
                                               "signal": (48, 16, 0), "near_ir": (64, 16, 0)}),
    "RNG19_RFL8_SIG16_NIR16_DUAL": PixelLayout(16, {"range": (0, 19, 0), "reflectivity": (24, 8, 0),
                                                    "range2": (32, 19, 0), "reflectivity2": (56, 8, 0),
                                                    "signal": (64, 16, 0), "signal2": (80, 16, 0),
                                                    "near_ir": (96, 16, 0)}),
    "RNG15_RFL8_NIR8": PixelLayout(4, {"range": (0, 15, 3), "reflectivity": (16, 8, 0), "near_ir": (24, 8, 4)}),
}


@dataclass(frozen=True)
class PacketFormat:
    """Sizes of one profile's lidar packet [bytes] (ouster-sdk ``PacketFormat``)."""

    profile: str
    pixels_per_column: int
    columns_per_packet: int

    @property
    def legacy(self) -> bool:
        return self.profile == "LEGACY"

    @property
    def packet_header_size(self) -> int:
        return 0 if self.legacy else 32

    @property
    def col_header_size(self) -> int:
        return 16 if self.legacy else 12

    @property
    def col_footer_size(self) -> int:
        return 4 if self.legacy else 0

    @property
    def packet_footer_size(self) -> int:
        return 0 if self.legacy else 32

    @property
    def col_size(self) -> int:
        return self.col_header_size + self.pixels_per_column * PROFILES[self.profile].size + self.col_footer_size

    @property
    def lidar_packet_size(self) -> int:
        return self.packet_header_size + self.columns_per_packet * self.col_size + self.packet_footer_size


def pack_fields(values: dict, layout: PixelLayout) -> np.ndarray:
    """Pixels as bytes: ``values`` (name -> integer array, all one shape S) into uint8 (*S, size).

    Each value is shifted down by its field's ``upshift`` (the caller has rounded it), masked
    to the field's bits and OR-ed into the little-endian pixel at its first bit.
    """
    shape = np.shape(next(iter(values.values())))
    out = np.zeros(shape + (layout.size,), dtype=np.uint8)
    for name, v in values.items():
        first, bits, up = layout.fields[name]
        word = (np.asarray(v, dtype=np.uint64) >> np.uint64(up)) & np.uint64((1 << bits) - 1)
        word = word << np.uint64(first % 8)
        for k in range((first % 8 + bits + 7) // 8):
            out[..., first // 8 + k] |= ((word >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.uint8)
    return out


def _crc64_table() -> np.ndarray:
    poly = np.uint64(0xC96C5795D7870F42)          # ECMA-182, reflected
    t = np.arange(256, dtype=np.uint64)
    for _ in range(8):
        t = np.where(t & np.uint64(1), (t >> np.uint64(1)) ^ poly, t >> np.uint64(1))
    return t


_CRC64 = _crc64_table()


def crc64(buffers: np.ndarray) -> np.ndarray:
    """CRC-64 (ECMA-182 reflected, init and xor-out all ones: CRC-64/XZ) of each row of a uint8 array.

    Vectorised over rows (packets): one table step per byte position. ``crc64(b"123456789")`` is
    0x995DC9BBDF1939FA, the CRC-64/XZ check value.
    """
    b = np.atleast_2d(np.asarray(buffers, dtype=np.uint8))
    crc = np.full(b.shape[0], np.uint64(0xFFFFFFFFFFFFFFFF))
    ff = np.uint64(0xFF)
    eight = np.uint64(8)
    for j in range(b.shape[1]):
        crc = _CRC64[(crc ^ b[:, j].astype(np.uint64)) & ff] ^ (crc >> eight)
    return ~crc


def _ones_complement_sum(words: np.ndarray) -> np.ndarray:
    """16-bit one's-complement sum of each row of big-endian uint16 words (RFC 1071)."""
    s = np.sum(np.asarray(words, dtype=np.uint64), axis=-1)
    while np.any(s >> np.uint64(16)):
        s = (s & np.uint64(0xFFFF)) + (s >> np.uint64(16))
    return s


def ipv4_checksum(header: np.ndarray) -> np.ndarray:
    """IPv4 header checksum of each row (20 bytes, checksum field zero): RFC 791 / RFC 1071."""
    words = np.asarray(header, dtype=np.uint8).reshape(header.shape[0], -1, 2)
    w = (words[..., 0].astype(np.uint64) << np.uint64(8)) | words[..., 1].astype(np.uint64)
    return (~_ones_complement_sum(w)) & np.uint64(0xFFFF)


def udp_checksum(src_ip: bytes, dst_ip: bytes, udp: np.ndarray) -> np.ndarray:
    """UDP checksum of each row (UDP header with zero checksum + payload), IPv4 pseudo-header (RFC 768).

    A computed 0 is sent as 0xFFFF (0 means "no checksum").
    """
    seg = np.asarray(udp, dtype=np.uint8)
    n, length = seg.shape
    if length % 2:
        seg = np.concatenate([seg, np.zeros((n, 1), np.uint8)], axis=1)
    w = (seg[:, 0::2].astype(np.uint64) << np.uint64(8)) | seg[:, 1::2].astype(np.uint64)
    pseudo = np.frombuffer(src_ip + dst_ip + bytes([0, 17]) + struct.pack(">H", length), dtype=">u2")
    s = _ones_complement_sum(np.concatenate([w, np.broadcast_to(pseudo.astype(np.uint64), (n, pseudo.size))],
                                            axis=1))
    c = (~s) & np.uint64(0xFFFF)
    return np.where(c == 0, np.uint64(0xFFFF), c)


def ethernet_ipv4_udp(payloads: np.ndarray, *, src_ip="192.0.2.10", dst_ip="192.0.2.1", src_port=7502,
                      dst_port=7502, first_ident=1) -> np.ndarray:
    """Ethernet II + IPv4 (no options, DF) + UDP frames around equal-size payloads, one per row.

    Parameters
    ----------
    payloads : (n, m) uint8
    src_ip, dst_ip : str
        Dotted quads. Defaults from TEST-NET-1 (RFC 5737, documentation addresses): the sensor
        is simulated.
    src_port, dst_port : int
    first_ident : int
        IPv4 identification of the first datagram (incremented per datagram).

    Returns
    -------
    (n, 42 + m) uint8
        Zero MAC addresses (as ouster-sdk's recorder writes them), ethertype 0x0800, TTL 64.
    """
    p = np.asarray(payloads, dtype=np.uint8)
    n, m = p.shape
    if m + 28 > 0xFFFF:
        raise ExportError(f"pcap: a UDP payload of {m} bytes does not fit one IPv4 datagram")
    sip = bytes(int(x) for x in src_ip.split("."))
    dip = bytes(int(x) for x in dst_ip.split("."))
    eth = np.zeros((n, 14), np.uint8)
    eth[:, 12:14] = (0x08, 0x00)
    ip = np.zeros((n, 20), np.uint8)
    ip[:, 0] = 0x45
    ip[:, 2:4] = np.frombuffer(struct.pack(">H", 20 + 8 + m), np.uint8)
    ident = (first_ident + np.arange(n)) & 0xFFFF
    ip[:, 4] = ident >> 8
    ip[:, 5] = ident & 0xFF
    ip[:, 6] = 0x40                              # don't fragment
    ip[:, 8] = 64                                # TTL
    ip[:, 9] = 17                                # UDP
    ip[:, 12:16] = np.frombuffer(sip, np.uint8)
    ip[:, 16:20] = np.frombuffer(dip, np.uint8)
    c = ipv4_checksum(ip)
    ip[:, 10] = (c >> np.uint64(8)).astype(np.uint8)
    ip[:, 11] = (c & np.uint64(0xFF)).astype(np.uint8)
    udp = np.zeros((n, 8 + m), np.uint8)
    udp[:, 0:2] = np.frombuffer(struct.pack(">H", src_port), np.uint8)
    udp[:, 2:4] = np.frombuffer(struct.pack(">H", dst_port), np.uint8)
    udp[:, 4:6] = np.frombuffer(struct.pack(">H", 8 + m), np.uint8)
    udp[:, 8:] = p
    c = udp_checksum(sip, dip, udp)
    udp[:, 6] = (c >> np.uint64(8)).astype(np.uint8)
    udp[:, 7] = (c & np.uint64(0xFF)).astype(np.uint8)
    return np.concatenate([eth, ip, udp], axis=1)


#: libpcap global header: magic (microsecond timestamps), version 2.4, zone 0, sigfigs 0,
#: snaplen 65535, link type 1 (Ethernet).
PCAP_GLOBAL_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def write_pcap_records(path, frames: np.ndarray, times_ns: np.ndarray) -> None:
    """A classic little-endian libpcap file of equal-size link-layer frames.

    ``frames`` (n, m) uint8, ``times_ns`` (n,) int64 capture times [ns since 1970-01-01 UTC],
    written with microsecond resolution (truncated, as libpcap does).
    """
    f = np.asarray(frames, dtype=np.uint8)
    n, m = f.shape
    t = np.asarray(times_ns, dtype=np.int64)
    rec = np.zeros((n, 4), dtype="<u4")
    rec[:, 0] = t // 1_000_000_000
    rec[:, 1] = (t % 1_000_000_000) // 1000
    rec[:, 2] = m
    rec[:, 3] = m
    body = np.concatenate([rec.view(np.uint8).reshape(n, 16), f], axis=1)
    with open(path, "wb") as fh:
        fh.write(PCAP_GLOBAL_HEADER)
        fh.write(body.tobytes())


def _meta_value(meta: dict, *keys, default=None):
    """A value of the nested (``section.key``) or legacy (``key``) layout."""
    for key in keys:
        node = meta
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return default


def write_ouster_pcap(ds, out_path, *, src_ip="192.0.2.10", dst_ip="192.0.2.1") -> list:
    """Write an ``ouster`` dataset as Ouster UDP lidar packets in a pcap, with its metadata JSON.

    Parameters
    ----------
    ds : xarray.Dataset
        Output of the ``ouster`` model (dims ``frame``, ``column``, ``beam``; attributes
        :data:`OUSTER_ATTRS`).
    out_path : path-like
        The pcap file; the metadata goes to the same name with ``.json``.
    src_ip, dst_ip : str
        Addresses of the IPv4 header (documentation addresses by default).

    Returns
    -------
    list of pathlib.Path
        ``[pcap, json]``.

    Raises
    ------
    ExportError
        Not an Ouster dataset, a profile without a layout here, a beam count that contradicts
        the metadata.

    Notes
    -----
    One packet per ``columns_per_packet`` consecutive measurement ids, every column of every
    frame (columns a ``column_stride`` left out are sent as invalid: status 0, pixels zero).
    Non-LEGACY profiles: a 32-byte packet header (packet type 1, frame id, initialisation id,
    serial number of the metadata), per column a 12-byte header (timestamp [ns], measurement id,
    status 1 = valid), the pixels, a 32-byte footer ending in the CRC-64 of the rest. LEGACY:
    per column a 16-byte header (timestamp, measurement id, frame id, encoder count
    ``id x 90112 / w``), the pixels, a 4-byte status 0xFFFFFFFF. Frame id: the frame's index
    modulo 2^16.

    Channels: range [mm] = ``round(1000 range)`` (the dataset's ``range``, from the lidar
    origin, the beam-origin offset included, as ouster-sdk decodes it); RNG15 counts 8 mm,
    ``round(mm / 8)``; 0 where not detected (a miss) or where the field cannot hold it.
    Reflectivity: ``intensity`` (the calibrated byte). Signal and near-IR: photons (RNG15's
    near-IR counts 16, ``round(photons / 16)``), clipped to their fields. ``*_DUAL``: the second
    return is empty (range 0). Column timestamps are the dataset's column times as UTC
    nanoseconds since 1970 (a sensor synchronised to UTC); each record's capture time is the
    last column of its packet (the sensor sends a packet when its last column is measured).
    """
    missing = [a for a in OUSTER_ATTRS if a not in ds.attrs]
    if missing:
        raise ExportError(f"pcap (Ouster): the dataset (sensor_model {ds.attrs.get('sensor_model')!r}) lacks the "
                          f"attributes {', '.join(missing)} that the ouster model writes")
    meta = json.loads(ds.attrs["ouster_metadata"])
    profile = str(ds.attrs["ouster_udp_profile_lidar"])
    if profile not in PROFILES:
        raise ExportError(f"pcap (Ouster): UDP profile {profile!r} has no packet layout here; allowed: "
                          f"{', '.join(PROFILES)}")
    require(ds, "pcap (Ouster)", ("range", "intensity", "near_ir", "detected", "timestamp")
            + (("signal",) if "signal" in PROFILES[profile].fields else ()))
    mode = str(ds.attrs["ouster_lidar_mode"])
    if mode not in LIDAR_MODES:
        raise ExportError(f"pcap (Ouster): lidar mode {mode!r} unknown; allowed: {', '.join(LIDAR_MODES)}")
    w, fps = LIDAR_MODES[mode]
    layout = PROFILES[profile]
    arrs = frame_first(ds, ["range", "intensity", "near_ir", "detected", "timestamp"]
                       + (["signal"] if "signal" in layout.fields else []))
    nf, nc, h = arrs["detected"].shape
    ppc = int(_meta_value(meta, "lidar_data_format.pixels_per_column", "data_format.pixels_per_column", default=h))
    if ppc != h:
        raise ExportError(f"pcap (Ouster): the dataset has {h} beams, its metadata pixels_per_column = {ppc}")
    cpp = int(_meta_value(meta, "lidar_data_format.columns_per_packet", "data_format.columns_per_packet",
                          "config_params.columns_per_packet", default=16))
    port = int(_meta_value(meta, "config_params.udp_port_lidar", "udp_port_lidar", default=0) or 7502)
    prod_sn = int(_meta_value(meta, "sensor_info.prod_sn", "prod_sn", default=0) or 0)
    init_id = int(_meta_value(meta, "sensor_info.initialization_id", "initialization_id", default=0) or 0)
    fmt = PacketFormat(profile, h, cpp)

    cols = np.asarray(ds["column"].values if "column" in ds.coords else np.arange(nc), dtype=np.int64)
    if cols.size != nc or cols.min() < 0 or cols.max() >= w:
        raise ExportError(f"pcap (Ouster): columns {cols.min()}..{cols.max()} do not fit the {w} of mode {mode!r}")
    det = arrs["detected"].astype(bool)

    # channels on the full (frame, w, h) grid; unsimulated columns stay 0 and invalid
    def full(a, dtype=np.uint64):
        out = np.zeros((nf, w, h), dtype=dtype)
        out[:, cols] = a
        return out

    rng_mm = np.where(det, np.rint(np.nan_to_num(arrs["range"]) * 1000.0), 0.0)
    _, bits, up = layout.fields["range"]
    if up:
        rng_mm = np.rint(rng_mm / 2 ** up) * 2 ** up
    rng_mm = np.where((rng_mm > 0) & (rng_mm < 2 ** (bits + up)), rng_mm, 0.0)
    values = {"range": full(rng_mm.astype(np.uint64))}
    refl = np.where(det, np.clip(np.rint(np.nan_to_num(arrs["intensity"])), 0, 255), 0)
    values["reflectivity"] = full(refl.astype(np.uint64))
    if "signal" in layout.fields:
        sig = np.where(det, np.clip(np.rint(np.nan_to_num(arrs["signal"])), 0, 65535), 0)
        values["signal"] = full(sig.astype(np.uint64))
    _, nbits, nup = layout.fields["near_ir"]
    nir = np.clip(np.rint(np.nan_to_num(arrs["near_ir"]) / 2 ** nup), 0, 2 ** nbits - 1) * 2 ** nup
    values["near_ir"] = full(nir.astype(np.uint64))
    pixels = pack_fields(values, layout)                                   # (nf, w, h, size)

    # column times: the dataset's where simulated, the mode's grid elsewhere
    t_da = ds["timestamp"].copy(data=np.asarray(utc_times(ds, "timestamp"), dtype="datetime64[ns]").astype(np.int64))
    if "frame" not in t_da.dims:
        t_da = t_da.expand_dims("frame")
    t_col = t_da.transpose("frame", "column", "beam").values[:, :, 0]          # all beams of a column: one time
    start = t_col[:, 0] - np.rint(cols[0] * 1e9 / (w * fps)).astype(np.int64)
    ts = start[:, None] + np.rint(np.arange(w) * 1e9 / (w * fps)).astype(np.int64)[None, :]
    ts[:, cols] = t_col
    valid = np.zeros((nf, w), dtype=bool)
    valid[:, cols] = True

    # columns: header + pixels (+ legacy footer)
    colbuf = np.zeros((nf, w, fmt.col_size), dtype=np.uint8)
    colbuf[:, :, 0:8] = ts.astype("<u8").view(np.uint8).reshape(nf, w, 8)
    mid = np.broadcast_to(np.arange(w, dtype="<u2"), (nf, w))
    colbuf[:, :, 8:10] = np.ascontiguousarray(mid).view(np.uint8).reshape(nf, w, 2)
    frame_id = (np.arange(nf) % 65536).astype("<u2")
    if fmt.legacy:
        colbuf[:, :, 10:12] = np.broadcast_to(frame_id[:, None], (nf, w)).copy().view(np.uint8).reshape(nf, w, 2)
        enc = (np.arange(w) * ENCODER_TICKS_PER_REV // w).astype("<u4")
        colbuf[:, :, 12:16] = np.broadcast_to(enc, (nf, w)).copy().view(np.uint8).reshape(nf, w, 4)
        status = np.where(valid, np.uint32(0xFFFFFFFF), np.uint32(0)).astype("<u4")
        colbuf[:, :, -4:] = status.view(np.uint8).reshape(nf, w, 4)
    else:
        colbuf[:, :, 10:12] = valid.astype("<u2").view(np.uint8).reshape(nf, w, 2)
    hs = fmt.col_header_size
    colbuf[:, :, hs:hs + h * layout.size] = pixels.reshape(nf, w, h * layout.size)
    colbuf[~valid, hs:hs + h * layout.size] = 0

    # packets
    npk = w // cpp
    body = colbuf.reshape(nf, npk, cpp * fmt.col_size)
    if fmt.legacy:
        pk = body.reshape(nf * npk, -1)
    else:
        head = np.zeros((nf, npk, 32), dtype=np.uint8)
        head[..., 0:2] = np.frombuffer(struct.pack("<H", 1), np.uint8)          # packet type: lidar
        head[..., 2:4] = np.broadcast_to(frame_id[:, None], (nf, npk)).copy().view(np.uint8).reshape(nf, npk, 2)
        head[..., 4:7] = np.frombuffer(struct.pack("<I", init_id & 0xFFFFFF)[:3], np.uint8)
        head[..., 7:12] = np.frombuffer(struct.pack("<Q", prod_sn & 0xFFFFFFFFFF)[:5], np.uint8)
        foot = np.zeros((nf, npk, 32), dtype=np.uint8)
        pk = np.concatenate([head, body, foot], axis=2).reshape(nf * npk, -1)
        pk[:, -8:] = crc64(pk[:, :-8]).astype("<u8").view(np.uint8).reshape(-1, 8)
    if pk.shape[1] != fmt.lidar_packet_size:
        raise AssertionError(f"packet of {pk.shape[1]} bytes, expected {fmt.lidar_packet_size}")
    packet_time = ts.reshape(nf, npk, cpp)[:, :, -1].ravel()
    frames = ethernet_ipv4_udp(pk, src_ip=src_ip, dst_ip=dst_ip, src_port=port, dst_port=port)
    out_path = Path(out_path)
    write_pcap_records(out_path, frames, packet_time)
    meta_path = out_path.with_suffix(".json")
    meta_path.write_text(json.dumps(meta, indent=4) + "\n")
    return [out_path, meta_path]
