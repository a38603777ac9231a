"""KISS-ICP lidar odometry on hifi's exports of the crossing example, against hifi's ground truth.

An off-the-shelf consumer reads the exports as it reads real data and estimates the sensor's
motion; if the exports' geometry, frames, poses or per-point times were wrong, its odometry
would drift. Two runs:

* **SemanticKITTI**: the ``velodyne/*.bin`` scans of ``hifi export --format semantickitti``,
  read as KISS-ICP's KITTI loader reads them (float32 ``x y z remission``, without its KITTI-only
  vertical-angle correction ``correct_kitti_scan``, a fix for the real HDL-64E's calibration),
  deskew off: the scans are already expressed in the lidar frame at their start.
* **MCAP**: the ``/velodyne/points`` clouds of ``hifi export --format mcap``, read from the bag
  folder with rosbags and parsed by KISS-ICP's own ``kiss_icp.tools.point_cloud2.read_point_cloud``
  (its ROS 2 reader: fields by name and datatype, the per-point ``t``), deskewed by KISS-ICP with
  ``t``: the raw scans, each point in the lidar frame of its own firing. (KISS-ICP's
  ``McapDataloader`` cannot be used with mcap-ros2-support 0.6: its PointField lookup reads
  the datatype constants from ``vars(field)``, and 0.6 decodes into slotted objects without
  them: ``Unknown datatype code 7 for field {}``, whatever bag it reads.)

Scenario: ``examples/crossing.toml`` (the BlenSor crossing). Its lidar rides the ego car, which
waits at the crossing: a static sensor, nothing to estimate. So the HDL-64E (same parameters and
mount, 1.9 m above the car's origin) is put on ``car_2``, the car that crosses at 10 m/s, and
car_2's track is extended at the same speed to ``--duration`` seconds (default 3 s: 30 scans,
30 m, past the parked cars and between the two buildings). Other sensors are left out.

KISS-ICP settings: its defaults (``KISSConfig()``: voxel size max_range / 100, adaptive
threshold) with ``max_range`` 100 m and ``min_range`` 3 m, which drops the returns from the
sensor's own car roof (they move with the sensor; real set-ups crop them the same way).

Each export is read twice: with every point, and with the ground cut away by height (points
less than :data:`GROUND_CUT_M` above the flat ground, i.e. below ``z = -1.9 + 0.3`` m in the lidar
frame, are dropped: the crude ground removal of many lidar pipelines; no labels used). The
crossing's ground is a flat, uniform plane that holds about three quarters of the points, and
its scan rings are circles around the sensor that look the same from every position; KISS-ICP
registers points to points, so they pull its estimate to zero motion (started at the true 1 m
step, its first registration returns 5 cm). Without the ground the buildings and the cars fix
the motion. Real roads carry texture, curbs and far more structure around them; this scene
has little besides the plane, so it shows the limitation in full.

Metric: relative pose error over consecutive scans (Sturm et al., "A benchmark for the
evaluation of RGB-D SLAM systems", IROS 2012, RPE with a step of one frame):
``E_i = (G_i^-1 G_i+1)^-1 (P_i^-1 P_i+1)`` with ``G`` our ground truth (the lidar body of
``motion.nc`` at each scan's start) and ``P`` KISS-ICP's poses; reported as the mean
translational error per scan [m], the same as a percentage of the distance travelled per scan,
the mean rotational error [deg], and the end-point drift over the whole path [% of length].
KITTI's own odometry metric averages over 100-800 m segments, longer than this run.

    python validation/kiss_icp_crossing.py [--duration 3] [--markdown FILE]

Needs the validation extra: ``pip install -e ".[validation]"`` (kiss-icp, mcap, mcap-ros2-support,
rosbags).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "crossing.toml"
SPEED_M_S = 10.0          # car_2's speed in examples/crossing.toml
MOUNT_HEIGHT_M = 1.9      # the HDL-64E above the car's origin, on the ground (examples/crossing.toml)
#: Points less than this above the ground are cut in the "without ground" runs [m].
GROUND_CUT_M = 0.3


def scenario(duration_s: float) -> dict:
    """The crossing example with its HDL-64E on the crossing car, whose track lasts ``duration_s``."""
    d = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    d["simulation"]["duration_s"] = float(duration_s)
    car = next(o for o in d["objects"] if o["name"] == "car_2")
    k0 = car["track"][0]
    x0, y0, z0 = k0["position_m"]
    car["track"] = [k0, {"t_s": float(duration_s), "position_m": [x0 + SPEED_M_S * duration_s, y0, z0],
                         "rpy_deg": k0["rpy_deg"]}]
    lidar = next(s for s in d["sensors"] if s["name"] == "velodyne")
    lidar["parent"] = "car_2"
    d["sensors"] = [lidar]
    return d


def _register_formats():
    from hifi.exporters import register_exporter
    from hifi.exporters.mcap import EXPORTER as MCAP
    from hifi.exporters.semantickitti import EXPORTER as SEMANTICKITTI
    for exporter in (SEMANTICKITTI, MCAP):          # as their entry points do (an older install may lack them)
        register_exporter(exporter)


def kiss_config():
    from kiss_icp.config import KISSConfig
    config = KISSConfig()
    config.data.max_range = 100.0
    config.data.min_range = 3.0
    config.mapping.voxel_size = config.data.max_range / 100.0
    return config


def odometry(scans, deskew: bool) -> np.ndarray:
    """KISS-ICP poses (n, 4, 4) of an iterable of (points (m, 3) [m], per-point times or empty)."""
    from kiss_icp.kiss_icp import KissICP
    config = kiss_config()
    config.data.deskew = deskew
    kiss = KissICP(config)
    poses = []
    for points, times in scans:
        kiss.register_frame(np.asarray(points, dtype=np.float64), np.asarray(times, dtype=np.float64))
        poses.append(kiss.last_pose.copy())
    return np.array(poses)


def relative_errors(gt: np.ndarray, est: np.ndarray) -> dict:
    """RPE over consecutive poses (module docstring): translational [m], [%], rotational [deg], drift [%]."""
    from scipy.spatial.transform import Rotation
    d_gt = np.linalg.inv(gt[:-1]) @ gt[1:]
    d_est = np.linalg.inv(est[:-1]) @ est[1:]
    err = np.linalg.inv(d_gt) @ d_est
    trans = np.linalg.norm(err[:, :3, 3], axis=1)
    step = np.linalg.norm(d_gt[:, :3, 3], axis=1)
    rot = np.degrees(Rotation.from_matrix(err[:, :3, :3]).magnitude())
    g = np.linalg.inv(gt[0]) @ gt
    e = np.linalg.inv(est[0]) @ est
    length = float(step.sum())
    return {"rpe_m": float(trans.mean()), "rpe_rmse_m": float(np.sqrt(np.mean(trans ** 2))),
            "rpe_pct": float(100.0 * trans.sum() / length), "rpe_deg": float(rot.mean()),
            "drift_pct": float(100.0 * np.linalg.norm(g[-1, :3, 3] - e[-1, :3, 3]) / length),
            "length_m": length, "pairs": len(trans)}


def run(duration_s: float = 3.0, workdir: Path | None = None) -> dict:
    """Simulate, export both formats, run KISS-ICP on each; the metrics per export."""
    import xarray as xr

    import hifi
    from hifi.exporters import ExportWarning, export

    _register_formats()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tmp = Path(tmp)
        run_dir = tmp / "run"
        for ds in hifi.Simulation.from_dict(scenario(duration_s), base_dir=EXAMPLE.parent).run(
                out=run_dir, progress=False).values():
            ds.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExportWarning)
            export(run_dir, "semantickitti", tmp / "kitti", sensor="velodyne")
            (tmp / "bag").mkdir()
            export(run_dir, "mcap", tmp / "bag" / "crossing.mcap", sensor="velodyne")
        with xr.open_dataset(run_dir / "velodyne.nc") as lidar, xr.open_dataset(run_dir / "motion.nc") as motion:
            starts = lidar.hifi.seconds("frame_time").values
            motion.load()
            pose = motion.hifi.pose("velodyne", starts)
        gt = np.tile(np.eye(4), (len(starts), 1, 1))
        gt[:, :3, :3] = pose.rotation.as_matrix()
        gt[:, :3, 3] = pose.translation

        velodyne = sorted((tmp / "kitti" / "sequences" / "00" / "velodyne").glob("*.bin"))

        def kitti_scans():
            return ((np.fromfile(p, dtype=np.float32).reshape(-1, 4)[:, :3], np.array([])) for p in velodyne)

        def mcap_scans():
            return bag_scans(tmp / "bag", "/velodyne/points")

        results = {}
        for name, scans, deskew in (("SemanticKITTI (.bin, no deskew)", kitti_scans, False),
                                    ("MCAP (PointCloud2, KISS-ICP deskew with t)", mcap_scans, True)):
            results[f"{name}, every point"] = relative_errors(gt, odometry(scans(), deskew))
            results[f"{name}, ground cut"] = relative_errors(gt, odometry(map(cut_ground, scans()), deskew))
    return results


def cut_ground(scan):
    """Drop the points less than :data:`GROUND_CUT_M` above the flat ground (lidar frame)."""
    points, times = scan
    keep = points[:, 2] > GROUND_CUT_M - MOUNT_HEIGHT_M
    return points[keep], (times[keep] if len(times) else times)


def bag_scans(folder: Path, topic: str):
    """(points, per-point t) of every PointCloud2 on ``topic``: rosbags reads, KISS-ICP parses."""
    from kiss_icp.tools.point_cloud2 import read_point_cloud
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(folder) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        for conn, _, raw in reader.messages(connections=connections):
            yield read_point_cloud(store.deserialize_cdr(raw, conn.msgtype))


def markdown(results: dict, duration_s: float) -> str:
    lines = ["# KISS-ICP on the crossing example's lidar exports", "",
             f"`python validation/kiss_icp_crossing.py --duration {duration_s:g}`. Scenario, settings and "
             "metric: the script's docstring (the crossing's HDL-64E on car_2, 10 m/s, one scan per 0.1 s; "
             "RPE over consecutive scans against motion.nc).", "",
             "With every point KISS-ICP estimates almost no motion: the crossing's flat, uniform ground holds "
             "about three quarters of the points, and its scan rings look the same from every position, so "
             "point-to-point registration holds the sensor still. With the ground cut by height (no labels) "
             "the buildings and cars fix the motion, from either export: the SemanticKITTI scans (lidar frame at "
             "the scan start) and the MCAP clouds (each point at its firing, deskewed by KISS-ICP with `t`) "
             "give the same odometry within a few millimetres per scan.", "",
             "| export read by KISS-ICP | scans | path [m] | RPE translation [m / scan] | RPE [% of distance] | "
             "RPE rotation [deg / scan] | end-point drift [% of path] |",
             "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['pairs'] + 1} | {r['length_m']:.1f} | {r['rpe_m']:.4f} | {r['rpe_pct']:.2f} | "
                     f"{r['rpe_deg']:.3f} | {r['drift_pct']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0, help="simulated seconds (10 scans per second)")
    ap.add_argument("--markdown", type=Path, default=None, help="write the table to this Markdown file")
    args = ap.parse_args(argv)
    results = run(args.duration)
    text = markdown(results, args.duration)
    print(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
