"""Real lidar recordings against hifi's lidar models: the statistics of issue 12.

Measures the statistics of :mod:`validation.lidar_stats` (road plane and sensor height, ring
cones, ground-ring radii, per-shot range noise, ring-to-ring range offsets, intensity against
range, per-ring gain spread, isolated misses, edge points) on two real recordings and on a
simulated counterpart of each (same mount height, a flat asphalt road, cars, boxes and poles at
several ranges), and prints statistic | real | simulated | ratio.

Recordings (sources and licences: ``../shared/data/SOURCES.md``, ``tests/data/lidar/README.md``):

- nuScenes LIDAR_TOP sweep, Velodyne HDL-32E at 20 Hz (``../shared/data/lidar/
  nuscenes_hdl32e_sweep.pcd.bin``; CC BY-NC-SA 4.0, read in place, never copied here; folder
  overridden by ``HIFI_SHARED_DATA``). Simulated with ``hdl32e`` at 20 Hz.
- Ouster OS1-128 capture (``tests/data/lidar/ouster_os1_128.pcap`` + ``.json``, vendored,
  BSD-3-Clause), decoded here with numpy (profile RNG15_RFL8_NIR8; bit-identical to ouster-sdk
  1.0.1's decoding of the same file). hifi has no Ouster model yet: its simulated column is n/a.

    python validation/lidar_real.py [--json] [--markdown FILE] [--png FILE] [--no-sim]

The simulated column reflects the lidar models of the commit the script runs on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import lidar_stats as ls  # noqa: E402

NUSCENES_FILE = "lidar/nuscenes_hdl32e_sweep.pcd.bin"
OUSTER_PCAP = REPO / "tests" / "data" / "lidar" / "ouster_os1_128.pcap"
OUSTER_JSON = REPO / "tests" / "data" / "lidar" / "ouster_os1_128.json"
NUSCENES_COLUMNS = 1084
NUSCENES_RINGS = 32
#: Two placeholders of one column are the same point if closer than this [m] (they are
#: bit-identical float32 in the file).
PLACEHOLDER_TOL_M = 1e-4

#: Asphalt reflectance at 905 nm used for the simulated road (dimensionless). Dry asphalt is
#: dark in the near infrared: about 0.08-0.15 at 850-950 nm (Lemmetti et al.? -- see README in
#: validation/lidar_real.md for the source actually used).
ASPHALT_REFLECTIVITY = 0.10


def shared_data_dir(repo: Path = REPO) -> Path:
    """``$HIFI_SHARED_DATA`` or ``<repo>/../shared/data`` (the folder beside the checkout)."""
    return Path(os.environ.get("HIFI_SHARED_DATA", Path(repo).parent / "shared" / "data"))


# --------------------------------------------------------------------------------------------
# nuScenes HDL-32E sweep
# --------------------------------------------------------------------------------------------

def nuscenes_grid(path) -> dict:
    """Read the nuScenes sweep into a (ring, column) grid in the sensor frame at each column.

    Parameters
    ----------
    path : path-like
        ``nuscenes_hdl32e_sweep.pcd.bin``: float32 x y z intensity ring_index per point,
        1084 columns of 32 points (ring 0 lowest), misses included as placeholders.

    Returns
    -------
    dict
        ``points_sensor`` (32, 1084, 3) [m] (NaN for misses), ``intensity`` (32, 1084) [0-255],
        ``detected`` (32, 1084) bool, ``origin`` (1084, 3) [m]: the sensor origin of each column
        in the file's (compensated) frame.

    Notes
    -----
    nuScenes moves every point into the sensor frame at one reference time (ego-motion
    compensation); a miss is stored as the compensated sensor origin of its column, so the
    placeholders trace the sensor's path over the sweep. A placeholder is a point with a
    bit-identical twin in its column (within ``PLACEHOLDER_TOL_M``). The origin of every column
    is a quadratic in column index fitted through the placeholders, and subtracting it undoes
    the translation part of the compensation (the rotation part, the yaw change over 50 ms, is
    not undone: it turns points about the vertical and leaves ranges to the sensor unchanged).
    """
    a = np.fromfile(path, dtype=np.float32).reshape(NUSCENES_COLUMNS, NUSCENES_RINGS, 5)
    p = a[..., :3].astype(float)
    inten = a[..., 3].astype(float)
    ring = a[..., 4].astype(int)
    if not np.all(ring == np.arange(NUSCENES_RINGS)[None, :]):
        raise ValueError(f"{path}: expected ring index 0..31 in every column")
    dist = np.linalg.norm(p[:, :, None, :] - p[:, None, :, :], axis=-1)          # (col, 32, 32)
    dist[:, np.arange(32), np.arange(32)] = np.inf
    twin = np.any(dist < PLACEHOLDER_TOL_M, axis=2)
    k = np.broadcast_to(np.arange(NUSCENES_COLUMNS)[:, None], twin.shape)[twin]
    coef = np.polyfit(k, p[twin], 2)                                               # (3, 3)
    cols = np.arange(NUSCENES_COLUMNS)
    origin = np.stack([np.polyval(coef[:, j], cols) for j in range(3)], axis=1)
    placeholder = np.linalg.norm(p - origin[:, None, :], axis=-1) < 0.01
    det = ~placeholder
    ps = np.where(det[..., None], p - origin[:, None, :], np.nan)
    return {"points_sensor": ps.transpose(1, 0, 2), "intensity": inten.T, "detected": det.T, "origin": origin}


# --------------------------------------------------------------------------------------------
# Ouster OS1-128
# --------------------------------------------------------------------------------------------

def read_pcap_udp_payloads(path) -> list:
    """UDP payloads of a classic little-endian pcap of Ethernet/IPv4/UDP frames (bytes each).

    Global header 24 bytes, each record a 16-byte header (``incl_len`` at bytes 8-12) then the
    frame; Ethernet (14) + IPv4 without options (20) + UDP (8) = 42 header bytes.
    """
    d = Path(path).read_bytes()
    if d[:4] != b"\xd4\xc3\xb2\xa1":
        raise ValueError(f"{path}: not a little-endian microsecond pcap")
    out, off = [], 24
    while off + 16 <= len(d):
        incl = int.from_bytes(d[off + 8:off + 12], "little")
        out.append(d[off + 16 + 42:off + 16 + incl])
        off += 16 + incl
    return out


def ouster_frames(pcap=OUSTER_PCAP, meta=OUSTER_JSON) -> dict:
    """Decode an Ouster RNG15_RFL8_NIR8 capture into (frame, beam, measurement id) arrays.

    Returns
    -------
    dict
        ``range_m`` (frame, 128, 1024) [m] (0 where no return), ``reflectivity`` [0-255],
        ``near_ir`` [photons, 16x the 8-bit field], ``frame_id`` (frame,), ``meta`` (the JSON).

    Notes
    -----
    Ouster's "low data rate" profile RNG15_RFL8_NIR8 (firmware 2.2+, Ouster firmware user
    manual, "Lidar Data Packet Format"; checked against ouster-sdk 1.0.1, which decodes the
    vendored capture to the same integers): 32-byte packet header (packet type u16, frame id
    u16, ...), ``columns_per_packet`` columns of a 12-byte header (timestamp u64, measurement
    id u16, status u16) and 4 bytes per pixel (range: low 15 bits in units of 8 mm;
    reflectivity u8; near-IR u8 in units of 16), then a 32-byte footer. Columns are stored by
    measurement id (the staggered layout: along a row, consecutive shots of one beam).
    """
    m = json.loads(Path(meta).read_text())
    fmt = m["data_format"]
    if fmt["udp_profile_lidar"] != "RNG15_RFL8_NIR8":
        raise ValueError(f"{meta}: udp_profile_lidar {fmt['udp_profile_lidar']!r}; only 'RNG15_RFL8_NIR8' is decoded")
    h, cpp, w = fmt["pixels_per_column"], fmt["columns_per_packet"], fmt["columns_per_frame"]
    col_bytes = 12 + 4 * h
    size = 32 + cpp * col_bytes + 32
    pk = np.stack([np.frombuffer(x, dtype=np.uint8) for x in read_pcap_udp_payloads(pcap) if len(x) == size])
    fid = pk[:, 2:4].copy().view("<u2")[:, 0]
    cols = pk[:, 32:32 + cpp * col_bytes].reshape(-1, cpp, col_bytes)
    mid = cols[:, :, 8:10].copy().view("<u2")[..., 0].astype(int)
    status = cols[:, :, 10:12].copy().view("<u2")[..., 0]
    px = cols[:, :, 12:].reshape(-1, cpp, h, 4)
    rng_mm = (px[..., 0:2].copy().view("<u2")[..., 0] & 0x7FFF).astype(float) * 8.0
    refl = px[..., 2].astype(float)
    nir = px[..., 3].astype(float) * 16.0
    frames = np.unique(fid)
    shape = (len(frames), h, w)
    out = {k: np.zeros(shape) for k in ("range_m", "reflectivity", "near_ir")}
    fi = np.searchsorted(frames, fid)[:, None].repeat(cpp, 1)
    valid = (status & 1).astype(bool)
    for key, val in (("range_m", rng_mm / 1e3), ("reflectivity", refl), ("near_ir", nir)):
        out[key][fi[valid], :, mid[valid]] = val[valid]
    out["frame_id"] = frames
    out["meta"] = m
    return out


def ouster_grid(frame: int = 0, pcap=OUSTER_PCAP, meta=OUSTER_JSON) -> dict:
    """One Ouster frame as a (beam, column) grid in the lidar frame (points [m], NaN for misses).

    Notes
    -----
    Ouster's lidar-frame geometry (firmware user manual, "Lidar Range to XYZ"): for beam i in
    measurement column m of W, encoder angle ``theta_e = 2 pi (1 - m / W)``, beam azimuth
    ``theta_a = -2 pi beam_azimuth_angles[i] / 360``, altitude ``phi = 2 pi
    beam_altitude_angles[i] / 360``, and with n = ``lidar_origin_to_beam_origin_mm`` / 1000:
    ``x = (r - n) cos(theta_e + theta_a) cos(phi) + n cos(theta_e)``, ``y`` likewise with sin,
    ``z = (r - n) sin(phi)``. The lidar frame's origin is on the rotation axis; the
    ``lidar_to_sensor_transform`` (a flip and a 36 mm lift) is not applied. Intensity is the
    calibrated reflectivity (this profile carries no signal channel).
    """
    f = ouster_frames(pcap, meta)
    m = f["meta"]
    r = f["range_m"][frame]
    h, w = r.shape
    th_e = 2 * np.pi * (1 - np.arange(w) / w)[None, :]
    th_a = -np.radians(np.asarray(m["beam_azimuth_angles"], dtype=float))[:, None]
    phi = np.radians(np.asarray(m["beam_altitude_angles"], dtype=float))[:, None]
    n = m["lidar_origin_to_beam_origin_mm"] / 1e3
    det = r > 0
    x = (r - n) * np.cos(th_e + th_a) * np.cos(phi) + n * np.cos(th_e)
    y = (r - n) * np.sin(th_e + th_a) * np.cos(phi) + n * np.sin(th_e)
    z = (r - n) * np.sin(phi)
    pts = np.where(det[..., None], np.stack([x, y, z], axis=-1), np.nan)
    return {"points_sensor": pts, "intensity": f["reflectivity"][frame], "detected": det,
            "near_ir": f["near_ir"][frame], "elevation_rad": phi[:, 0]}
