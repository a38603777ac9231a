"""Real lidar recordings against hifi's lidar models: statistics that tell a real sweep from a simulated one.

Measures the statistics of :mod:`hifi.analysis.lidar_stats` (road plane and sensor height, ring
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
  1.0.1's decoding of the same file). Simulated with ``ouster`` from the capture's own metadata
  (:func:`simulate_ouster`), mounted at the fitted height and tilt of the real road plane, and
  compared in the lidar frame; :func:`ouster_geometry` adds the Ouster-specific checks (beam
  elevations and azimuth offsets measured from the points, ground-ring radii, the road's
  reflectivity distribution).

    python validation/lidar_real.py [--json] [--markdown FILE] [--png FILE] [--no-sim]

The simulated column reflects the lidar models of the commit the script runs on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from hifi.analysis import lidar_stats as ls  # noqa: E402

NUSCENES_FILE = "lidar/nuscenes_hdl32e_sweep.pcd.bin"
OUSTER_PCAP = REPO / "tests" / "data" / "lidar" / "ouster_os1_128.pcap"
OUSTER_JSON = REPO / "tests" / "data" / "lidar" / "ouster_os1_128.json"
NUSCENES_COLUMNS = 1084
NUSCENES_RINGS = 32
#: Two placeholders of one column are the same point if closer than this [m] (they are
#: bit-identical float32 in the file).
PLACEHOLDER_TOL_M = 1e-4

#: The simulated road (Oren-Nayar reflectivity and roughness at 905 nm): by default those that
#: :func:`hifi.analysis.lidar_stats.fit_road_brdf` fits to the nuScenes sweep's own road intensities (the
#: HDL-32E reports calibrated reflectivity, 0..100 for diffuse targets), refitted on every run
#: from the recording at hand; these are the values of the 2026-11-23 fit, used when there is
#: no recording: rho 0.27, sigma 11.1 deg (the published 905 nm reflectance of aged asphalt
#: and concrete is 0.15-0.35; Oren & Nayar's rough samples have sigma 10-40 deg).
ASPHALT_REFLECTIVITY = 0.27
ASPHALT_ROUGHNESS_DEG = 11.1


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


# --------------------------------------------------------------------------------------------
# simulated counterpart
# --------------------------------------------------------------------------------------------

#: Obstacles that make depth edges at several ranges: (name, mesh, size or radius/height,
#: position [m], yaw [deg]). Cars on the road, boxes (kerb-side clutter), poles.
OBSTACLES = (
    ("car_a", "car", None, (8.0, -3.5, 0.0), 0.0),
    ("car_b", "car", None, (-12.0, 3.5, 0.0), 180.0),
    ("car_c", "car", None, (22.0, 4.0, 0.0), 10.0),
    ("box_a", "box", (2.0, 1.0, 1.2), (-5.0, -6.0, 0.6), 30.0),
    ("box_b", "box", (1.5, 3.0, 2.0), (3.0, 14.0, 1.0), 0.0),
    ("box_c", "box", (3.0, 3.0, 3.0), (-25.0, -10.0, 1.5), 45.0),
    ("pole_a", "cylinder", (0.12, 5.0), (5.0, 6.0, 2.5), 0.0),
    ("pole_b", "cylinder", (0.15, 6.0), (-7.0, -9.0, 3.0), 0.0),
    ("pole_c", "cylinder", (0.15, 6.0), (15.0, -7.0, 3.0), 0.0),
    ("pole_d", "cylinder", (0.2, 7.0), (-18.0, 8.0, 3.5), 0.0),
)


#: Street trees of the nuScenes comparison (``sim_scenario(trees=True)``): the sweep's street is
#: lined with trees on both sides. 4,669 of its 30,295 returns lie 2.5-10 m above the road at
#: 3-60 m, with low intensity (medians 3-15 of 100), in 3 m cells along two lines about 15 m
#: either side of the sensor from 36 m behind to 39 m ahead. Here: ten trees a side, 8 m
#: apart, at 16 and 18 m, crowns 2.5-9 m high and 5 m across (``hifi.api.meshes.tree`` defaults
#: otherwise: leaves of 8 cm, leaf area density 1 m^2/m^3, typical of street trees), leaves of
#: reflectivity 0.45 at 905 nm (green leaves reflect 0.4-0.5 in the near infrared: PROSPECT,
#: Jacquemoud & Baret 1990), bark 0.3. The Ouster capture's street has building fronts instead
#: (its elevated returns are dense walls), so its simulation has no trees.
STREET_TREES = tuple((f"tree_{side}{i}", (x, -36.0 + 8.0 * i, 0.0), 100 * (side == "r") + i)
                     for side, x in (("l", -16.0), ("r", 18.0)) for i in range(10))
TREE = {"height_m": 9.0, "crown_height_m": 6.5, "crown_radius_m": 2.5}


def sim_scenario(model: str, height_m: float, rate_hz: float | None, azimuth_step_deg: float | None = None, *,
                 seed: int = 12, params: dict | None = None, rpy_deg=(0.0, 0.0, 0.0), obstacles=True, trees=False,
                 tree_seed_offset: int = 0,
                 road_reflectivity: float = ASPHALT_REFLECTIVITY,
                 road_roughness_deg: float = ASPHALT_ROUGHNESS_DEG) -> dict:
    """One sweep of ``model`` at ``height_m`` [m] over a flat asphalt road with :data:`OBSTACLES`.

    The road's reflectivity and Oren-Nayar roughness [deg] are arguments (defaults
    :data:`ASPHALT_REFLECTIVITY`, :data:`ASPHALT_ROUGHNESS_DEG`); cars 0.5, boxes 0.35, poles
    0.3 (the values of ``examples/crossing.toml``), Lambertian. The sensor's own parameters are
    the model defaults, plus ``azimuth_step_deg`` when given and ``params``; ``rpy_deg`` tilts
    the mount; ``obstacles = False`` leaves the road alone; ``trees``: the :data:`STREET_TREES`
    (their leaf seeds plus ``tree_seed_offset``).
    ``rate_hz`` None: the model's own rate.
    """
    objects = [{"name": "road", "mesh": "plane", "size_m": [240, 240], "material": "asphalt"}]
    for name, mesh, size, pos, yaw in (OBSTACLES if obstacles else ()):
        o = {"name": name, "mesh": mesh, "position_m": list(pos), "rpy_deg": [0, 0, yaw],
             "material": {"car": "paint", "box": "concrete", "cylinder": "metal"}[mesh]}
        if mesh == "box":
            o["size_m"] = list(size)
        elif mesh == "cylinder":
            o["radius_m"], o["height_m"] = size
        objects.append(o)
    for name, pos, tree_seed in (STREET_TREES if trees else ()):
        objects.append({"name": name, "mesh": "tree", **TREE, "seed": tree_seed + int(tree_seed_offset),
                        "position_m": list(pos),
                        "material": "leaves"})
    sensor_params = dict(params or {})
    if azimuth_step_deg is not None:
        sensor_params["azimuth_step_deg"] = azimuth_step_deg
    sensor = {"name": "lidar", "model": model, "position_m": [0.0, 0.0, height_m], "rpy_deg": list(rpy_deg),
              "params": sensor_params}
    if rate_hz is not None:
        sensor["rate_hz"] = rate_hz
    return {
        "simulation": {"duration_s": 1.0 / (rate_hz or 10.0), "seed": seed},
        "materials": {"asphalt": {"reflectivity": road_reflectivity, "roughness_deg": road_roughness_deg,
                                  "class": "road"},
                      "paint": {"reflectivity": 0.5, "class": "car"},
                      "concrete": {"reflectivity": 0.35, "class": "building"},
                      "metal": {"reflectivity": 0.3, "class": "pole"},
                      "leaves": {"reflectivity": 0.45, "class": "vegetation"}},
        "objects": objects,
        "sensors": [sensor],
    }


def sim_grid(ds) -> dict:
    """(ring, column) grid of one simulated rotating-lidar frame, rings sorted by elevation (lowest first)."""
    f = ds.isel(frame=0)
    order = np.argsort(f["laser_elevation"].values)
    det = f["detected"].values.T[order]                                   # (laser, step)
    pos = f["sensor_position"].values
    pts = np.stack([f[v].values.T[order] for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1) - pos
    pts = np.where(det[..., None], pts, np.nan)
    return {"points_sensor": pts, "intensity": f["intensity"].values.T[order], "detected": det,
            "elevation_rad": f["laser_elevation"].values[order]}


#: Leaf realizations of the simulated street pooled into one grid (:func:`simulate_nuscenes`):
#: one sweep past its trees has about 160 edges and 12-25 floating returns, so the fraction
#: of one realization scatters from 2.7 to 5.9 % (six tree seeds, the same sensor); four
#: pooled put the scatter of the counts near that of the real sweep's 34 of 668.
TREE_REALIZATIONS = 4


def simulate_nuscenes(height_m: float, road_reflectivity: float = ASPHALT_REFLECTIVITY,
                      road_roughness_deg: float = ASPHALT_ROUGHNESS_DEG, realizations: int = TREE_REALIZATIONS):
    """The ``hdl32e`` at 20 Hz (nuScenes LIDAR_TOP) over the test road; returns its grid.

    ``realizations`` sweeps of the same sensor (same seed: the same per-laser bias, gain and
    noise streams) past differently drawn leaves (tree seeds offset by 1000 each), their grids
    side by side along the columns with a column of misses between, so that no edge or
    neighbour spans two sweeps."""
    import hifi
    grids = []
    for r in range(int(realizations)):
        # 20 Hz: the 46.08 us firing cycle is 0.331776 deg of rotation (1085 steps; nuScenes keeps 1084).
        d = sim_scenario("hdl32e", height_m, 20.0, 0.331776, road_reflectivity=road_reflectivity,
                         road_roughness_deg=road_roughness_deg, trees=True, tree_seed_offset=1000 * r)
        grids.append(sim_grid(hifi.Simulation.from_dict(d).run(out=None)["lidar"]))
    if len(grids) == 1:
        return grids[0]
    gap = {"points_sensor": np.nan, "intensity": np.nan, "detected": False}
    out = {"elevation_rad": grids[0]["elevation_rad"]}
    for key, fill in gap.items():
        parts = []
        for g in grids:
            a = g[key]
            parts += [a, np.full(a.shape[:1] + (1,) + a.shape[2:], fill, dtype=a.dtype)]
        out[key] = np.concatenate(parts[:-1], axis=1)
    return out


def _lidar_to_sensor(meta: dict):
    """Rotation and translation [m] of the metadata's ``lidar_to_sensor_transform``."""
    t = np.asarray(meta.get("lidar_to_sensor_transform") or
                   meta.get("lidar_intrinsics", {}).get("lidar_to_sensor_transform"), dtype=float).reshape(4, 4)
    return t[:3, :3], t[:3, 3] / 1e3


def ouster_mount(plane, meta: dict):
    """Mount pose (position [m], rpy [deg]) that puts a simulated Ouster's lidar frame where the
    real one was: ``plane.height_m`` above the road, the road's normal (fitted in the lidar
    frame) as the scene's up.

    The sensor frame is the lidar frame turned and lifted by ``lidar_to_sensor_transform`` (R, T):
    the road normal in the sensor frame is ``R n``; the mount rotation Q takes it to +z (the
    smallest such rotation), and the sensor origin goes where ``Q T`` lands the lidar origin
    ``plane.height_m`` above the road.
    """
    from scipy.spatial.transform import Rotation
    rot, trans = _lidar_to_sensor(meta)
    n_s = rot @ np.asarray(plane.normal, dtype=float)
    q, _ = Rotation.align_vectors([[0.0, 0.0, 1.0]], [n_s])
    height = plane.height_m - (q.apply(trans))[2]
    return height, tuple(q.as_euler("xyz", degrees=True))


def simulate_ouster(plane, *, meta_path=OUSTER_JSON, params=None, **scene):
    """One frame of ``ouster`` from the capture's metadata, mounted as :func:`ouster_mount`;
    returns its grid (:func:`ouster_sim_grid`) in the lidar frame. ``scene``: keywords of
    :func:`sim_scenario` (``obstacles``, the road's material)."""
    import hifi
    meta = json.loads(Path(meta_path).read_text())
    height, rpy = ouster_mount(plane, meta)
    d = sim_scenario("ouster", height, None, params={"metadata_file": str(meta_path), **(params or {})},
                     rpy_deg=rpy, **scene)
    return ouster_sim_grid(hifi.Simulation.from_dict(d).run(out=None)["lidar"], meta)


def ouster_sim_grid(ds, meta: dict) -> dict:
    """(beam, column) grid of one simulated Ouster frame in the lidar frame, as :func:`ouster_grid`.

    Reported points go to the sensor frame with the frame's mount pose, then to the lidar frame
    with the inverse ``lidar_to_sensor_transform``; intensity is the reflectivity byte.
    """
    from scipy.spatial.transform import Rotation
    f = ds.isel(frame=0)
    det = f["detected"].values.T                                           # (beam, column)
    p = np.stack([f[v].values.T for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
    q = Rotation.from_quat(f["sensor_orientation"].values)
    ps = q.inv().apply(p.reshape(-1, 3) - f["sensor_position"].values).reshape(p.shape)
    rot, trans = _lidar_to_sensor(meta)
    pl = (ps - trans) @ rot                                               # R^T (p - T)
    pl = np.where(det[..., None], pl, np.nan)
    return {"points_sensor": pl, "intensity": f["intensity"].values.T, "detected": det,
            "near_ir": f["near_ir"].values.T, "elevation_rad": f["beam_altitude"].values}


#: Horizontal range out to which ground-ring radii are compared [m] (the 3 % acceptance check), and
#: the range out to which the capture's road is planar enough for it: beyond about 15 m its
#: rings come 3-4.5 % closer than a plane puts them (the road rises; its per-ring range offsets
#: show the trend, 16 cm std over rings).
RADII_MAX_M = 20.0
RADII_NEAR_M = 15.0


def ouster_geometry(grid, meta: dict, road) -> dict:
    """Ouster-specific checks of a (beam, column) grid in the lidar frame.

    Returns
    -------
    dict
        ``elevation_err_deg`` (beam,): fitted ring-cone elevation minus the metadata's
        ``beam_altitude_angles``; ``azimuth_err_deg`` (beam,): per-beam median of the measured
        azimuth offset ``theta_e - atan2(y, x)`` (points beyond 5 m, where the 16 mm beam origin
        moves the azimuth by < 0.01 deg) minus ``beam_azimuth_angles``; ``road_reflectivity``:
        the reflectivity bytes of the road returns.

    Notes
    -----
    The real points were computed from the metadata's angles (as every Ouster driver does), so
    for the capture these residuals only show the decoding and the fits; for the simulation
    they show that the model fires each beam where the metadata says.
    """
    p = np.asarray(grid["points_sensor"], dtype=float)
    det = np.asarray(grid["detected"], dtype=bool) & np.all(np.isfinite(p), axis=-1)
    alt = np.asarray(meta.get("beam_altitude_angles") or meta["beam_intrinsics"]["beam_altitude_angles"], float)
    az = np.asarray(meta.get("beam_azimuth_angles") or meta["beam_intrinsics"]["beam_azimuth_angles"], float)
    cones = ls.fit_ring_cones(p, det)
    w = det.shape[1]
    theta_e = 2 * np.pi * (1 - np.arange(w) / w)
    with np.errstate(invalid="ignore"):
        far = det & (np.linalg.norm(p, axis=-1) > 5.0)
        meas = np.degrees(np.angle(np.exp(1j * (theta_e[None, :] - np.arctan2(p[..., 1], p[..., 0])))))
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):      # all-NaN rings
        az_meas = np.nanmedian(np.where(far, meas, np.nan), axis=1)
    return {"elevation_err_deg": np.degrees(cones.elevation_rad) - alt, "azimuth_err_deg": az_meas - az,
            "road_reflectivity": np.asarray(grid["intensity"], dtype=float)[road]}


def ouster_rows(real: dict, sim: dict | None) -> list:
    """Ouster-specific table rows: (label, real, sim, ratio) with sim None when not simulated;
    ratio is NaN for residuals (decoding and fit precision, not a property to compare)."""
    rows = []
    gr, gs = real["geometry"], (sim or {}).get("geometry")
    for label, key in (("beam elevation, max abs(fitted - metadata) [deg]", "elevation_err_deg"),
                       ("beam azimuth offset, max abs(measured - metadata) [deg]", "azimuth_err_deg")):
        rows.append((label, float(np.nanmax(np.abs(gr[key]))), None if gs is None else
                     float(np.nanmax(np.abs(gs[key]))), False))
    rr = real["ring_radii_m"]
    rows.append(("lowest ring's ground radius [m]", float(rr[np.isfinite(rr)][-1]),
                 None if sim is None else float(sim["ring_radii_m"][np.isfinite(sim["ring_radii_m"])][-1]), True))
    if sim is not None:
        cr, cs = common_ring_radii(real, sim)
        for lo, hi in ((0.0, RADII_NEAR_M), (RADII_NEAR_M, RADII_MAX_M)):
            ok = np.isfinite(cr) & np.isfinite(cs) & (cr >= lo) & (cr < hi)
            dev = np.abs(cs[ok] / cr[ok] - 1.0)
            label = (f"ground-ring radii {lo:g}-{hi:g} m (common road pixels): max abs(sim / real - 1) [%] "
                     f"({ok.sum()} rings)")
            rows.append((label, None, 100 * float(dev.max()) if ok.any() else None, False))
    for q in (5, 25, 50, 75, 95):
        rows.append((f"road reflectivity byte, {q}th percentile", float(np.percentile(gr["road_reflectivity"], q)),
                     None if gs is None else float(np.percentile(gs["road_reflectivity"], q)), True))
    return [(label, real_v, sim_v, ratio(real_v, sim_v) if comparable else float("nan"))
            for label, real_v, sim_v, comparable in rows]


# --------------------------------------------------------------------------------------------
# per-shot range noise: second differences per ring, beside the pooled headline
# --------------------------------------------------------------------------------------------

#: Range LSB of the recordings and models compared [m]: Velodyne 2 mm (HDL-32E / VLP-16
#: manuals, ros-drivers DISTANCE_RESOLUTION; the nuScenes sweep's ranges, once the translation
#: is undone, lie within 0.03 LSB of multiples of 2 mm, and ``hdl32e`` reports the same grid);
#: the Ouster capture's RNG15 profile 8 mm; the simulated Ouster whole millimetres.
RANGE_LSB_M = {("nuscenes", "real"): 0.002, ("nuscenes", "sim"): 0.002,
               ("ouster", "real"): 0.008, ("ouster", "sim"): 0.001}
#: Rings whose median road range lies in this window enter the per-ring estimators [m].
NOISE_RING_WINDOW_M = (7.0, 40.0)
#: Range window of the lag test (:func:`lagged_second_differences`) [m]: near rings, many returns.
NOISE_LAG_WINDOW_M = (7.0, 15.0)
NOISE_LAGS = (1, 2, 3, 4)


def lagged_second_differences(range_m, road, lag: int = 1):
    """Second differences ``r[j+k] - 2 r[j] + r[j-k]`` along each ring at lag k = ``lag`` columns.

    Returns ``(d2, r_centre)``, both (ring, column - 2k) [m]; NaN where a cell is not road.

    Notes
    -----
    For white noise of sigma s the variance is 6 s^2 at every lag; a smooth true range adds
    ``(k dtheta)^4 r''^2``, negligible on a road (a plane tilted 1.5 deg under the HDL-32E adds
    < 0.1 mm at k = 4, measured on the simulated sweep); noise or surface structure correlated
    over neighbouring shots (correlation rho_1 at lag 1) gives ``(6 - 8 rho_1 + 2 rho_2) s^2`` at
    lag 1, less than at larger lags, so a sigma that grows with k is the signature of
    correlation along the ring.
    """
    k = int(lag)
    r = np.where(np.asarray(road, dtype=bool), np.asarray(range_m, dtype=float), np.nan)
    return r[:, 2 * k:] - 2.0 * r[:, k:-k] + r[:, :-2 * k], r[:, k:-k]


def second_difference_noise(range_m, road, *, lsb_m: float, window_m=NOISE_RING_WINDOW_M,
                            lag_window_m=NOISE_LAG_WINDOW_M, min_points: int = 30) -> dict:
    """Per-shot range noise by second differences per ring, and the tests that tell why estimators differ.

    Parameters
    ----------
    range_m, road : (ring, column)
        Measured range [m] and the road mask (:func:`hifi.analysis.lidar_stats.measure`).
    lsb_m : float
        Range quantisation step of the recording [m] (:data:`RANGE_LSB_M`).
    window_m : (float, float)
        Rings whose median road range lies in it are used [m].
    lag_window_m : (float, float)
        Range window of the lag test [m].
    min_points : int
        Fewest second differences a ring needs.

    Returns
    -------
    dict
        Headline floats (units in the keys): ``noise_ring_mad_mm`` (median over rings of each
        ring's ``1.4826 MAD(d2) / sqrt 6``), ``noise_ring_clipped_mm`` (the same with the
        3.5-sigma clipped standard deviation), ``noise_ring_dequantised_mm`` (the clipped one
        less the quantisation term, ``sqrt(s^2 - lsb^2 / 12)``), ``noise_pooled_clipped_mm``
        (all second differences with centre range in ``window_m`` pooled, clipped),
        ``d2_lag1_corr`` (correlation of neighbouring second
        differences; -2/3 for white noise), ``noise_lag{k}_mm`` for k in :data:`NOISE_LAGS`
        (clipped sigma of the lag-k second difference in ``lag_window_m``), ``n_noise_rings``.

    Notes
    -----
    The per-shot sigma from a second difference of independent noise is ``std(d2) / sqrt 6``
    (variance 1 + 4 + 1). Ranges quantised to a step q add q^2/12 per sample when the noise
    is wider than about a step (Widrow's condition), so ``std(d2)^2 / 6 = s^2 + q^2 / 12``:
    0.58 mm in quadrature for q = 2 mm. The MAD of such d2 is a multiple of q (d2 is a whole
    number of steps), so the MAD estimator moves in steps of ``1.4826 q / sqrt 6`` = 1.21 mm for
    q = 2 mm (3.63, 4.84, 6.05 mm): a tie of two MAD figures says only that both lie within the
    same step. The clipped standard deviation is continuous.
    """
    r = np.asarray(range_m, dtype=float)
    road = np.asarray(road, dtype=bool)
    d2, rc = ls.range_second_differences(r, road)
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):      # all-NaN rings
        ring_r = np.nanmedian(np.where(road, r, np.nan), axis=1)
    mad_s, clip_s = [], []
    for i in np.flatnonzero((ring_r >= window_m[0]) & (ring_r < window_m[1])):
        x = d2[i][np.isfinite(d2[i])]
        if x.size >= min_points:
            mad_s.append(ls.sigma_from_second_differences(x))
            clip_s.append(ls.sigma_from_second_differences(x, estimator="clipped"))
    ring_clip = float(np.median(clip_s)) if clip_s else float("nan")
    sel = np.isfinite(d2) & (rc >= window_m[0]) & (rc < window_m[1])
    pooled = ls.sigma_from_second_differences(d2[sel], estimator="clipped") if sel.sum() >= min_points else float("nan")
    a, b = d2[:, :-1], d2[:, 1:]
    pair = sel[:, :-1] & sel[:, 1:]
    # 5 cm bounds the pairs to the noise core (edges and lane paint give larger d2)
    pair &= (np.abs(np.nan_to_num(a)) < 0.05) & (np.abs(np.nan_to_num(b)) < 0.05)
    corr = float(np.corrcoef(a[pair], b[pair])[0, 1]) if pair.sum() >= min_points else float("nan")
    out = {"noise_ring_mad_mm": 1e3 * float(np.median(mad_s)) if mad_s else float("nan"),
           "noise_ring_clipped_mm": 1e3 * ring_clip,
           "noise_ring_dequantised_mm": 1e3 * float(np.sqrt(max(ring_clip ** 2 - lsb_m ** 2 / 12.0, 0.0))),
           "noise_pooled_clipped_mm": 1e3 * pooled,
           "d2_lag1_corr": corr,
           "n_noise_rings": float(len(clip_s))}
    for k in NOISE_LAGS:
        dk, rk = lagged_second_differences(r, road, k)
        ok = np.isfinite(dk) & (rk >= lag_window_m[0]) & (rk < lag_window_m[1])
        out[f"noise_lag{k}_mm"] = (1e3 * ls.sigma_from_second_differences(dk[ok], estimator="clipped")
                                   if ok.sum() >= min_points else float("nan"))
    return out


#: Draws averaged by :func:`range_matched_noise` (fixed seed: the figure is reproducible).
NOISE_MATCH_DRAWS = 20


def range_matched_noise(sim: dict, real: dict, *, bins_m=ls.NOISE_BINS_M, window_m=ls.NOISE_HEADLINE_M,
                        seed: int = 0) -> float:
    """Pooled clipped second-difference sigma [mm] of ``sim`` on the real road's range mix.

    The simulated road is seen to 40 m where the real street hides it behind cars and trees,
    and the noise grows with range, so a pooled figure weighs the two differently. Per range
    bin of ``bins_m`` the simulated second differences are drawn (with a fixed seed, without
    replacement where there are enough) as many times as the real road has in that bin, then
    pooled; the mean over :data:`NOISE_MATCH_DRAWS` draws is returned.
    """
    edges = np.asarray(bins_m, dtype=float)

    def binned(m):
        d2, rc = ls.range_second_differences(m["range_m"], m["road"])
        ok = np.isfinite(d2) & (rc >= window_m[0]) & (rc < window_m[1])
        return d2[ok], np.digitize(rc[ok], edges) - 1

    ds, ks = binned(sim)
    _, kr = binned(real)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(NOISE_MATCH_DRAWS):
        parts = []
        for b in range(len(edges) - 1):
            n, pool = int((kr == b).sum()), ds[ks == b]
            if n and pool.size:
                parts.append(rng.choice(pool, n, replace=pool.size < n))
        if parts:
            vals.append(ls.sigma_from_second_differences(np.concatenate(parts), estimator="clipped"))
    return 1e3 * float(np.mean(vals)) if vals else float("nan")


def _add_noise_estimators(name: str, rec: dict) -> None:
    """Adds :func:`second_difference_noise` (and, with a simulation, :func:`range_matched_noise`)
    to the headlines of a real / sim pair."""
    for kind in ("real", "sim"):
        m = rec[kind]
        if m is not None:
            m["headline"].update(second_difference_noise(m["range_m"], m["road"], lsb_m=RANGE_LSB_M[(name, kind)]))
    if rec["sim"] is not None:
        rec["sim"]["headline"]["noise_pooled_range_matched_mm"] = range_matched_noise(rec["sim"], rec["real"])
        rec["real"]["headline"]["noise_pooled_range_matched_mm"] = rec["real"]["headline"]["noise_pooled_clipped_mm"]


# --------------------------------------------------------------------------------------------
# the comparison
# --------------------------------------------------------------------------------------------

#: Rows of the table: (headline key, label, published range (lo, hi) or None, source of the range).
ROWS = (
    ("sensor_height_m", "sensor height above the road [m]", None, ""),
    ("noise_sigma_7_40m_mm", "per-shot range noise, 7-40 m [mm]", (3.0, 12.0), "Velodyne recordings: HDL-64E ~7 mm, HDL-32E 4-12 mm"),
    ("noise_sigma_3_7m_mm", "  noise 3-7 m [mm]", None, ""),
    ("noise_sigma_7_10m_mm", "  noise 7-10 m [mm]", None, ""),
    ("noise_sigma_10_15m_mm", "  noise 10-15 m [mm]", None, ""),
    ("noise_sigma_15_20m_mm", "  noise 15-20 m [mm]", None, ""),
    ("noise_sigma_20_30m_mm", "  noise 20-30 m [mm]", None, ""),
    ("noise_ring_mad_mm", "  second differences per ring (rings at 7-40 m), MAD, median over rings [mm]", None, ""),
    ("noise_ring_clipped_mm", "  the same, 3.5-sigma clipped std (not step-valued) [mm]", None, ""),
    ("noise_ring_dequantised_mm", "  the same less the 2 mm LSB term q^2/12 (Ouster: 8 mm) [mm]", None, ""),
    ("noise_pooled_clipped_mm", "  noise 7-40 m pooled, clipped std [mm]", None, ""),
    ("noise_pooled_range_matched_mm", "  the same, sim drawn on the real road's range mix [mm]", None, ""),
    ("d2_lag1_corr", "  correlation of neighbouring second differences (white noise: -0.667)", None, ""),
    *((f"noise_lag{k}_mm", f"  second difference at lag {k} columns, 7-15 m, clipped [mm]", None, "")
      for k in NOISE_LAGS),
    ("ring_to_ring_offset_cm", "ring-to-ring range offset, neighbour differences / sqrt 2 (<= 15 m) [cm]", (0.5, 5.0),
     "Velodyne recordings: 2.5-4 cm"),
    ("ring_offset_spread_cm", "  per-ring offset, std over rings [cm]", None, ""),
    ("ring_offset_p2p_cm", "  peak to peak [cm]", None, ""),
    ("intensity_loglog_slope", "road intensity vs range, log-log slope", (-0.7, -0.2), "Velodyne recordings: -0.2 to -0.7"),
    ("ring_gain_spread_pct", "per-ring gain spread (std/mean) [%]", (17.0, 45.0), "Velodyne recordings: 17-33 %"),
    ("road_reflectivity", "road reflectivity, Oren-Nayar fit (sim: the real fit's value as input)", None, ""),
    ("road_roughness_deg", "road roughness, Oren-Nayar fit [deg]", None, ""),
    ("isolated_miss_pct", "isolated misses inside the road [%]", (0.2, 1.5), "Velodyne recordings: 0.4-1 %"),
    ("isolated_miss_range_matched_pct", "  sim's rate per range bin on the real road's ranges [%]", None, ""),
    *((f"isolated_miss_{lo:g}_{hi:g}m_pct", f"  isolated misses {lo:g}-{hi:g} m [%]", None, "")
      for lo, hi in zip(ls.MISS_RANGE_EDGES_M[1:-1], ls.MISS_RANGE_EDGES_M[2:])),
    ("edge_floating_pct", "floating returns / edge returns [%]", (2.0, 12.0), "Velodyne recordings: 4-9 %"),
    ("edge_floating_isolated_pct", "  of them isolated: no ring neighbour at their range [%]", None, ""),
    ("edges_with_floating_pct", "  edges with a floating return [%]", None, ""),
    ("n_edges", "  edges found", None, ""),
)

#: Statistics compared real vs simulated within a factor 1.5 (the acceptance target).
COMPARED = ("noise_sigma_7_40m_mm", "noise_ring_mad_mm", "noise_ring_clipped_mm", "ring_to_ring_offset_cm",
            "intensity_loglog_slope", "ring_gain_spread_pct", "isolated_miss_pct", "edge_floating_pct")


def ratio(real, sim):
    """sim / real, NaN when either is missing or real is 0."""
    if real is None or sim is None or not np.isfinite(real) or not np.isfinite(sim) or real == 0:
        return float("nan")
    return sim / real


def measure_nuscenes(path=None) -> dict:
    path = Path(path) if path else shared_data_dir() / NUSCENES_FILE
    g = nuscenes_grid(path)
    return ls.measure(g["points_sensor"], g["intensity"], g["detected"])


def measure_ouster(frame: int = 0) -> dict:
    g = ouster_grid(frame)
    # 8 mm range steps in this profile: the MAD of second differences is step-valued.
    m = ls.measure(g["points_sensor"], g["intensity"], g["detected"], noise_estimator="clipped")
    m["geometry"] = ouster_geometry(g, json.loads(OUSTER_JSON.read_text()), m["road"])
    m["points_lidar"] = g["points_sensor"]
    return m


def ouster_road(real: dict):
    """The simulated road of the Ouster comparison: its reflectivity fitted from the capture's
    reflectivity bytes (:func:`hifi.analysis.lidar_stats.fit_road_brdf`) at the nuScenes asphalt's roughness
    (:data:`ASPHALT_ROUGHNESS_DEG`): the capture's bytes rise with range, so a free fit of the
    roughness runs to its bound."""
    return ls.fit_road_brdf(real["slope"], real["plane"].height_m, roughness_deg=ASPHALT_ROUGHNESS_DEG)


def measure_ouster_sim(plane, **kw) -> dict:
    """:func:`simulate_ouster` measured as the capture (the simulated ranges are whole mm: the
    MAD estimator, as for the nuScenes sweep)."""
    g = simulate_ouster(plane, **kw)
    m = ls.measure(g["points_sensor"], g["intensity"], g["detected"])
    m["geometry"] = ouster_geometry(g, json.loads(OUSTER_JSON.read_text()), m["road"])
    m["points_lidar"] = g["points_sensor"]
    return m


def common_ring_radii(real: dict, sim: dict):
    """Ground-ring radii [m] of the capture and the simulation over the pixels that are road in
    both (:func:`hifi.analysis.lidar_stats.ground_ring_radii`), shape (beam,) each.

    Pixel for pixel the two grids share beam and encoder angle, so the medians are taken over
    the same azimuths: the real road is seen only between the street's cars and buildings, and
    with the 0.8 deg tilt a ring's radius changes with azimuth.
    """
    common = real["road"] & sim["road"]
    return ls.ground_ring_radii(real["points_lidar"], common), ls.ground_ring_radii(sim["points_lidar"], common)


def _range_matched(rec: dict) -> None:
    """Adds ``isolated_miss_range_matched_pct`` to both headlines of a real / sim pair
    (:func:`hifi.analysis.lidar_stats.range_matched_miss_fractions`)."""
    if rec["sim"] is not None:
        s, r = ls.range_matched_miss_fractions(rec["sim"]["misses"], rec["real"]["misses"])
        rec["sim"]["headline"]["isolated_miss_range_matched_pct"] = 1e2 * s
        rec["real"]["headline"]["isolated_miss_range_matched_pct"] = 1e2 * r


def run(*, sim: bool = True, nuscenes_path=None) -> dict:
    """Measure both recordings and, with ``sim``, the simulated nuScenes counterpart.

    Returns ``{"nuscenes": {"real": m, "sim": m or None}, "ouster": {"real": m, "sim": m or None}}``
    with the dicts of :func:`hifi.analysis.lidar_stats.measure` (Ouster: plus ``geometry``, :func:`ouster_geometry`);
    ``nuscenes`` is None when the sweep is absent.
    """
    out = {}
    path = Path(nuscenes_path) if nuscenes_path else shared_data_dir() / NUSCENES_FILE
    if path.is_file():
        real = measure_nuscenes(path)
        brdf = real["brdf"]
        road = (brdf.reflectivity, brdf.roughness_deg) if np.isfinite(brdf.reflectivity) else ()
        simm = ls.measure(**{k: v for k, v in simulate_nuscenes(real["plane"].height_m, *road).items()
                             if k != "elevation_rad"}) if sim else None
        out["nuscenes"] = {"real": real, "sim": simm, "file": str(path)}
        _range_matched(out["nuscenes"])
        _add_noise_estimators("nuscenes", out["nuscenes"])
    else:
        out["nuscenes"] = None
        print(f"nuScenes sweep not found: {path} (set HIFI_SHARED_DATA)", file=sys.stderr)
    real = measure_ouster()
    road = ouster_road(real)
    out["ouster"] = {"real": real, "sim": measure_ouster_sim(real["plane"], road_reflectivity=road.reflectivity,
                                                             road_roughness_deg=road.roughness_deg) if sim else None,
                     "file": str(OUSTER_PCAP), "road": road}
    _range_matched(out["ouster"])
    _add_noise_estimators("ouster", out["ouster"])
    return out


def table_rows(res) -> list:
    rows = []
    for key, label, rng_pub, src in ROWS:
        row = {"key": key, "statistic": label}
        for rec in ("nuscenes", "ouster"):
            r = res.get(rec)
            real = r["real"]["headline"].get(key) if r else None
            simv = r["sim"]["headline"].get(key) if r and r["sim"] else None
            row[rec] = {"real": real, "sim": simv, "ratio": ratio(real, simv)}
        row["published"] = rng_pub
        row["source"] = src
        rows.append(row)
    return rows


def _fmt(v, nd=3):
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.{nd}g}"


def markdown_table(rows) -> str:
    head = ("| statistic | nuScenes HDL-32E real | hifi `hdl32e` sim | ratio | Ouster OS1-128 real | hifi `ouster` sim "
            "| ratio | published range |")
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n, o = r["nuscenes"], r["ouster"]
        pub = f"{r['published'][0]:g} to {r['published'][1]:g} ({r['source']})" if r["published"] else ""
        lines.append(f"| {r['statistic']} | {_fmt(n['real'])} | {_fmt(n['sim'])} | {_fmt(n['ratio'], 2)} | "
                     f"{_fmt(o['real'])} | {_fmt(o['sim'])} | {_fmt(o['ratio'], 2)} | {pub} |")
    return "\n".join(lines)


def ouster_markdown(res) -> str:
    """The Ouster-specific rows (:func:`ouster_rows`) as a Markdown table."""
    o = res.get("ouster")
    lines = ["| Ouster OS1-128 | real | hifi `ouster` sim | ratio |", "|---|---|---|---|"]
    for label, real, simv, rat in ouster_rows(o["real"], o["sim"]):
        lines.append(f"| {label} | {_fmt(real)} | {_fmt(simv)} | {_fmt(rat, 2)} |")
    return "\n".join(lines)


def plot(res, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(12, 9), constrained_layout=True)
    styles = (("nuscenes", "real", "nuScenes HDL-32E", "C0", "o-"), ("nuscenes", "sim", "hifi hdl32e", "C1", "s--"),
              ("ouster", "real", "Ouster OS1-128", "C2", "^:"), ("ouster", "sim", "hifi ouster", "C3", "v--"))
    for rec, kind, label, col, st in styles:
        r = res.get(rec)
        if not r or not r[kind]:
            continue
        m = r[kind]
        radii = m["ring_radii_m"]
        k = np.flatnonzero(np.isfinite(radii))
        if rec == "ouster":                       # Ouster beam 0 is the highest: count from the lowest
            radii = radii[::-1]
            k = np.flatnonzero(np.isfinite(radii))
        ax[0, 0].plot(k, radii[k], st, color=col, label=label, ms=3)
        nz = m["noise"]
        c = 0.5 * (nz.edges_m[:-1] + nz.edges_m[1:])
        ax[0, 1].plot(c, 1e3 * nz.sigma_m, st, color=col, label=label)
        sl = m["slope"]
        ok = np.isfinite(sl.median)
        med = sl.median[ok] / np.nanmedian(sl.median[ok])
        ax[1, 0].loglog(sl.centres_m[ok], med, st, color=col, label=f"{label}: slope {sl.slope:.2f}")
        g = m["gain"].gain
        kg = np.flatnonzero(np.isfinite(g))
        ax[1, 1].plot(np.arange(len(kg)), g[kg] / np.nanmean(g), st, color=col,
                      label=f"{label}: spread {100 * m['gain'].spread:.0f} %")
    ax[0, 0].set(xlabel="ring, counted from the lowest", ylabel="median ground range [m]", yscale="log",
                 title="ground-ring radii")
    ax[0, 1].set(xlabel="range [m]", ylabel="per-shot range sigma [mm]", yscale="log",
                 title="range noise (second differences on the road)")
    ax[1, 0].set(xlabel="range [m]", ylabel="median road intensity / median over bins",
                 title="road intensity vs range")
    ax[1, 1].set(xlabel="road-seeing ring, lowest first", ylabel="ring gain / mean",
                 title="per-ring gain (range trend removed)")
    for a in ax.ravel():
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    fig.savefig(out, dpi=90)
    plt.close(fig)


def headline_json(res) -> dict:
    return {rec: (None if r is None else {"real": r["real"]["headline"],
                                          "sim": r["sim"]["headline"] if r["sim"] else None, "file": r["file"]})
            for rec, r in res.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    ap.add_argument("--png", metavar="FILE", default=str(HERE / "lidar_real.png"), help="figure (default: %(default)s)")
    ap.add_argument("--no-sim", action="store_true", help="measure the recordings only")
    args = ap.parse_args(argv)
    res = run(sim=not args.no_sim)
    rows = table_rows(res)
    if args.json:
        print(json.dumps(headline_json(res), indent=1, default=float))
    else:
        print(f"{'statistic':58s} {'nuSc real':>10s} {'sim':>10s} {'ratio':>7s} {'Ouster real':>12s} {'sim':>10s} "
              f"{'ratio':>7s}")
        for r in rows:
            n, o = r["nuscenes"], r["ouster"]
            print(f"{r['statistic']:58s} {_fmt(n['real']):>10s} {_fmt(n['sim']):>10s} {_fmt(n['ratio'], 2):>7s} "
                  f"{_fmt(o['real']):>12s} {_fmt(o['sim']):>10s} {_fmt(o['ratio'], 2):>7s}")
        print()
        for label, real, simv, rat in ouster_rows(res["ouster"]["real"], res["ouster"]["sim"]):
            print(f"{label:96s} {_fmt(real):>10s} {_fmt(simv):>10s} {_fmt(rat, 2):>7s}")
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(rows) + "\n\n" + ouster_markdown(res) + "\n")
    if args.png:
        plot(res, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
