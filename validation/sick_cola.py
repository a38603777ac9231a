"""A small decoder of SICK CoLa-B ``LMDscandata`` telegrams (binary scan data of LMS1xx, LMS5xx,
TiM7xx ... laser scanners), for the recordings of ``tests/data/lidar/sick_*.pcapng.json``.

CoLa-B framing: four STX bytes ``02 02 02 02``, the payload length as a big-endian uint32, the
payload, one checksum byte (XOR of the payload bytes). The payload of a scan is
``sSN LMDscandata `` (or ``sRA``) followed by big-endian binary fields:

======================  =======  ==========================================================
field                   type     meaning
======================  =======  ==========================================================
version                 uint16   telegram version (1)
device number           uint16
serial number           uint32
device status           2 uint8
telegram counter        uint16
scan counter            uint16
time since start-up     uint32   us, at the start of the scan
time of transmission    uint32   us
digital inputs          2 uint8
digital outputs         2 uint8
reserved / layer angle  uint16
scan frequency          uint32   1/100 Hz
measurement frequency   uint32   inverse time between two shots, 100 Hz units
encoders                uint16   n, then n x (position uint32, speed uint16)
16-bit channels         uint16   n, then per channel: content (5 characters, ``DIST1`` ...
                                 ``DIST5``, ``RSSI1`` ...), scale factor (float32), scale
                                 offset (float32), start angle (int32, 1/10000 deg), angular
                                 step (uint16, 1/10000 deg), number of values (uint16), values
                                 (uint16 each)
8-bit channels          uint16   n, then channels as above with uint8 values
position, name,         uint16   flags, each followed by its block when 1 (position: 6
comment, time, event             float32 + uint8; name, comment: uint8 length + text; time:
                                 year uint16, month, day, hour, minute, second uint8,
                                 microsecond uint32)
======================  =======  ==========================================================

Distances are ``value x scale factor`` in mm; 0 means no valid measurement. Angles are in the
sensor's own convention: 0 deg to the right, 90 deg straight ahead (the LMS1xx and TiM7xx scan
-45 to 225 deg, the LMS5xx -5 to 185 deg); hifi's yaw (x forward, counter-clockwise) is the
SICK angle minus 90 deg.

References
----------
SICK AG, "Telegram Listing: LiDAR sensors LMS1xx, LMS5xx, TiM2xx, TiM5xx, TiM7xx, LMS1000,
MRS1000, MRS6000, NAV310, LD-OEM15xx, LD-LRS36xx, LMS4000", technical information 8014631,
2020-08-21, ch. 2.1 (CoLa B framing) and the ``LMDscandata`` telegram.
SICK AG, "LMS500 Product Family" operating instructions 8013796/UL20, 2010, ch. 10 (message
syntax of ``LMDscandata``: DIST1..DIST5 for five echoes, angles in 1/10000 deg from -5 deg).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

STX = b"\x02\x02\x02\x02"
SCAN_COMMANDS = (b"sSN LMDscandata ", b"sRA LMDscandata ")


@dataclass
class Channel:
    """One output channel of a scan.

    Attributes
    ----------
    content : str
        ``DIST1`` .. ``DIST5`` (echo 1..5 distances), ``RSSI1`` ... (received signal strength).
    scale : float
        Scale factor of the values (distances: mm per count).
    offset : float
        Scale factor offset.
    start_angle_deg : float
        Angle of the first value, SICK convention [deg].
    step_deg : float
        Angular step between values [deg], as transmitted (1/10000 deg resolution).
    values : numpy.ndarray
        Raw values (uint16 or uint8).
    """

    content: str
    scale: float
    offset: float
    start_angle_deg: float
    step_deg: float
    values: np.ndarray

    @property
    def angles_deg(self) -> np.ndarray:
        """SICK angle of each value [deg]: ``start + i * step``."""
        return self.start_angle_deg + np.arange(self.values.size) * self.step_deg


@dataclass
class Scan:
    """One ``LMDscandata`` telegram."""

    version: int
    device_number: int
    serial_number: int
    telegram_counter: int
    scan_counter: int
    time_since_startup_us: int
    time_of_transmission_us: int
    scan_frequency_hz: float
    measurement_frequency_hz: float
    channels16: list = field(default_factory=list)
    channels8: list = field(default_factory=list)

    def channel(self, content: str) -> Channel | None:
        """The channel named ``content`` (``DIST1``, ``RSSI1`` ...), or None."""
        for c in self.channels16 + self.channels8:
            if c.content == content:
                return c
        return None

    def distance_m(self, echo: int = 1) -> np.ndarray:
        """Distances of echo ``echo`` [m]; NaN where the scanner reports 0 (no measurement)."""
        c = self.channel(f"DIST{echo}")
        if c is None:
            raise KeyError(f"scan has no DIST{echo} channel")
        d = c.values.astype(float) * c.scale + c.offset
        return np.where(c.values > 0, d / 1000.0, np.nan)


class _Reader:
    """Big-endian cursor over a payload."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def take(self, fmt: str):
        values = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype: str, n: int) -> np.ndarray:
        a = np.frombuffer(self.data, dtype=np.dtype(dtype).newbyteorder(">"), count=n, offset=self.pos)
        self.pos += a.nbytes
        return a.astype(dtype)


def frame_payload(telegram: bytes) -> bytes:
    """The payload of one CoLa-B telegram, after checking its framing and XOR checksum.

    Raises
    ------
    ValueError
        No STX, a length that does not match, or a wrong checksum.
    """
    if telegram[:4] != STX:
        raise ValueError("not a CoLa-B telegram (no 02 02 02 02 start)")
    (n,) = struct.unpack_from(">I", telegram, 4)
    if len(telegram) != 8 + n + 1:
        raise ValueError(f"CoLa-B length field {n} does not match the telegram's {len(telegram) - 9} payload bytes")
    payload = telegram[8:8 + n]
    check = np.bitwise_xor.reduce(np.frombuffer(payload, dtype=np.uint8)) if n else 0
    if int(check) != telegram[-1]:
        raise ValueError(f"CoLa-B checksum {telegram[-1]:#04x} != XOR of the payload {int(check):#04x}")
    return payload


def _channel(r: _Reader, dtype: str) -> Channel:
    content = r.data[r.pos:r.pos + 5].decode("ascii")
    r.pos += 5
    scale, offset = r.take("ff")
    start, step, n = r.take("iHH")
    return Channel(content, scale, offset, start / 1e4, step / 1e4, r.array(dtype, n))


def decode_scan(telegram: bytes) -> Scan:
    """Decode one CoLa-B ``LMDscandata`` telegram (framing included).

    Raises
    ------
    ValueError
        Not a scan telegram, or a malformed one.
    """
    payload = frame_payload(telegram)
    for cmd in SCAN_COMMANDS:
        if payload.startswith(cmd):
            break
    else:
        raise ValueError(f"not an LMDscandata telegram: {payload[:20]!r}")
    r = _Reader(payload, len(cmd))
    version, device, serial = r.take("HHI")
    r.take("BB")                                            # device status
    tel_count, scan_count, t_start, t_tx = r.take("HHII")
    r.take("BBBB")                                          # digital inputs, outputs
    r.take("H")                                             # reserved / layer angle
    scan_f, meas_f = r.take("II")
    n_enc = r.take("H")
    for _ in range(n_enc):
        r.take("IH")
    scan = Scan(version, device, serial, tel_count, scan_count, t_start, t_tx, scan_f / 100.0, meas_f * 100.0)
    scan.channels16 = [_channel(r, "u2") for _ in range(r.take("H"))]
    scan.channels8 = [_channel(r, "u1") for _ in range(r.take("H"))]
    return scan


def telegrams_from_wireshark_json(path) -> list[tuple[float, bytes]]:
    """(capture time [s], TCP payload) of every ``LMDscandata`` telegram of a Wireshark-JSON file.

    The files of ``tests/data/lidar/sick_*.pcapng.json`` (sick_scan_xd's emulator data) hold one
    TCP payload per entry, colon-separated hex, with its relative capture time.
    """
    out = []
    for entry in json.loads(Path(path).read_text()):
        tcp = entry["_source"]["layers"]["tcp"]
        payload = bytes.fromhex(tcp["tcp.payload"].replace(":", ""))
        if payload.startswith(STX) and any(c in payload[8:30] for c in SCAN_COMMANDS):
            out.append((float(tcp["Timestamps"]["tcp.time_relative"]), payload))
    return out


def read_scans(path) -> tuple[np.ndarray, list[Scan]]:
    """Capture times [s] and decoded scans of a recording (see :func:`telegrams_from_wireshark_json`)."""
    items = telegrams_from_wireshark_json(path)
    return np.array([t for t, _ in items]), [decode_scan(p) for _, p in items]
