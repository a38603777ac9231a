"""SemanticKITTI: one lidar of a run as a labelled sequence (``hifi export RUN_DIR --format
semantickitti --sensor NAME --out DIR``).

Layout (Behley et al. 2019; semantic-kitti-api ``README.md`` "Data organization")::

    DIR/README.txt                       what was exported and how (this module's conventions)
    DIR/sequences/00/velodyne/NNNNNN.bin float32 x y z remission per point, sensor frame
    DIR/sequences/00/labels/NNNNNN.label uint32 per point: semantic id (low 16 bits), instance (high 16)
    DIR/sequences/00/poses.txt           3 x 4 row-major per scan: the lidar's pose in the first scan's lidar frame
    DIR/sequences/00/calib.txt           "Tr:" the identity (see below)
    DIR/sequences/00/times.txt           scan start [s] since the first scan's start

Conventions, each a choice where the format leaves one:

* Scans are the sensor's frames (``NNNNNN`` = frame index). A point is a detected return;
  a dual-return dataset gives its strongest echo (slot 0, as the organised formats do and as a
  single-return HDL-64E, KITTI's sensor, reports), so one point per beam and firing.
* Points are the reported (noisy) points in the sensor frame at the start of the scan
  (``p_sensor = R0^T (p_scene - t0)`` with the dataset's ``sensor_position`` /
  ``sensor_orientation``), the pose ``poses.txt`` gives for that scan: aggregating scans with
  ``poses.txt`` puts every point where it was measured, with no motion skew of the sensor.
* Remission is the calibrated ``reflectivity`` (0..1) where the dataset has it; otherwise
  ``intensity`` divided by its ``valid_max`` attribute, or clipped to 0..1 when it has none.
  ``README.txt`` says which. A return with no finite value gets 0.
* SemanticKITTI's ``poses.txt`` are camera poses and ``calib.txt``'s ``Tr`` maps the lidar
  into that camera; here the lidar is its own reference, so ``Tr`` is the identity and
  ``poses.txt`` holds lidar poses (semantic-kitti-api's ``generate_sequential.py`` computes
  ``Tr^-1 P Tr``, which then is ``P``). ``calib.txt`` holds only the ``Tr:`` line: the
  api's ``parse_calibration`` splits every line at ``:``, so the file can carry no comment;
  ``README.txt`` says it instead.
* Semantic ids come from the material's ``class`` through :data:`SEMANTIC_KITTI_LABELS` by
  name (case, blanks and underscores ignored: ``"traffic sign"`` is ``traffic-sign``); hifi's
  own ``unlabelled`` is 0. A class with no SemanticKITTI id becomes 0 (``unlabeled``) and is
  named in an :class:`ExportWarning`. A moving car is ``car`` (10), not ``moving-car``
  (252), unless its material says so: the class is the material's.
* Instance ids: object index + 1 for the "thing" classes (:data:`THING_LABELS`), 0 otherwise.
* Returns from the atmosphere (``object_id = -2``: fog, rain, snow) are ``outlier`` (1),
  instance 0: SemanticKITTI's class for returns that are no surface (its ``learning_map``
  sends 1 to 0, so training ignores them as it ignores ``unlabeled``, while the files keep
  them apart from unlabelled surfaces). A return with ``object_id = -1`` (none) is 0.

References
----------
J. Behley et al., "SemanticKITTI: A Dataset for Semantic Scene Understanding of LiDAR
Sequences", ICCV 2019. semantic-kitti-api (github.com/PRBonn/semantic-kitti-api, commit
a9c749e8, 2025-04-03): ``config/semantic-kitti.yaml`` (``labels``, ``learning_map``),
``auxiliary/laserscan.py`` (``.bin`` and ``.label`` reading), ``generate_sequential.py``
(``calib.txt``, ``poses.txt``), ``evaluate_panoptic.py`` (the ``things`` list).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from .._version import __version__
from ..run.dataset import POINTS_NOISY, seconds_since_start
from ..world.scene import UNLABELLED
from ._common import (
    Exporter,
    ExportError,
    ExportWarning,
    frame_first,
    is_range_dataset,
    n_frames,
    open_run_dataset,
    run_datasets,
    sensor_pose,
    strongest_return,
)

#: SemanticKITTI's raw label ids and names, ``labels`` of semantic-kitti-api's
#: ``config/semantic-kitti.yaml`` (commit a9c749e8). The ``.label`` files hold these ids.
SEMANTIC_KITTI_LABELS = {
    0: "unlabeled", 1: "outlier", 10: "car", 11: "bicycle", 13: "bus", 15: "motorcycle", 16: "on-rails",
    18: "truck", 20: "other-vehicle", 30: "person", 31: "bicyclist", 32: "motorcyclist", 40: "road",
    44: "parking", 48: "sidewalk", 49: "other-ground", 50: "building", 51: "fence", 52: "other-structure",
    60: "lane-marking", 70: "vegetation", 71: "trunk", 72: "terrain", 80: "pole", 81: "traffic-sign",
    99: "other-object", 252: "moving-car", 253: "moving-bicyclist", 254: "moving-person",
    255: "moving-motorcyclist", 256: "moving-on-rails", 257: "moving-bus", 258: "moving-truck",
    259: "moving-other-vehicle",
}

#: Label ids of the "thing" classes, which carry instance ids: those whose ``learning_map``
#: class (same yaml) is one of ``things`` in semantic-kitti-api's ``evaluate_panoptic.py``
#: (car, truck, bicycle, motorcycle, other-vehicle, person, bicyclist, motorcyclist); bus and
#: on-rails map to other-vehicle, the moving-* ids to their static class.
THING_LABELS = frozenset({10, 11, 13, 15, 16, 18, 20, 30, 31, 32, 252, 253, 254, 255, 256, 257, 258, 259})

#: Label of returns from the atmosphere (``object_id = -2``): ``outlier``.
ATMOSPHERE_LABEL = 1

#: Largest instance id the upper 16 bits hold (object index + 1).
MAX_INSTANCE = 0xFFFF

_BY_NAME = {name: i for i, name in SEMANTIC_KITTI_LABELS.items()}


def _key(class_name) -> str:
    return "-".join(str(class_name).strip().lower().replace("_", " ").split())


def semantic_id(class_name) -> int | None:
    """SemanticKITTI label id of a hifi class name, or None when it has none.

    Case, blanks and underscores are ignored (``"Traffic sign"`` -> 81); hifi's default class
    ``unlabelled`` (and ``unlabeled``) is 0.
    """
    key = _key(class_name)
    if key in (UNLABELLED, "unlabeled"):
        return 0
    return _BY_NAME.get(key)


def label_tables(object_classes) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Semantic and instance id per object id, shifted by 2 so that ids -2 and -1 index too.

    Parameters
    ----------
    object_classes : sequence of str
        Class of each object, by object id (``object_class``).

    Returns
    -------
    semantic : numpy.ndarray of uint32, (n + 2,)
        ``semantic[object_id + 2]``: :data:`ATMOSPHERE_LABEL` for -2, 0 for -1, then each
        object's id (0 for a class with none).
    instance : numpy.ndarray of uint32, (n + 2,)
        ``instance[object_id + 2]``: object index + 1 for :data:`THING_LABELS`, else 0.
    unknown : list of str
        The classes with no SemanticKITTI id, sorted.

    Raises
    ------
    ExportError
        More objects than the 16-bit instance field holds.
    """
    classes = [str(c) for c in object_classes]
    ids = [semantic_id(c) for c in classes]
    unknown = sorted({c for c, i in zip(classes, ids) if i is None})
    sem = np.array([ATMOSPHERE_LABEL, 0] + [i or 0 for i in ids], dtype=np.uint32)
    things = np.array([False, False] + [(i or 0) in THING_LABELS for i in ids])
    if things.any() and len(classes) > MAX_INSTANCE:
        raise ExportError(f"SemanticKITTI: {len(classes)} objects do not fit the 16-bit instance id "
                          f"(at most {MAX_INSTANCE})")
    inst = np.where(things, np.arange(-1, len(classes) + 1), 0).astype(np.uint32)
    return sem, inst, unknown


def remission_source(ds) -> str:
    """Which variable gives the remission (see the module notes), as README.txt states it."""
    if "reflectivity" in ds.variables:
        return "reflectivity (calibrated, 0..1)"
    vmax = ds["intensity"].attrs.get("valid_max") if "intensity" in ds.variables else None
    if vmax:
        return f"intensity / {float(vmax):g} (its valid_max)"
    return "intensity clipped to 0..1"


def _remission(ds, arrs) -> np.ndarray:
    if "reflectivity" in ds.variables:
        r = np.asarray(arrs["reflectivity"], dtype=float)
    else:
        r = np.asarray(arrs["intensity"], dtype=float)
        vmax = ds["intensity"].attrs.get("valid_max")
        if vmax:
            r = r / float(vmax)
    return np.clip(np.where(np.isfinite(r), r, 0.0), 0.0, 1.0)


def _pose_rows(matrices) -> str:
    return "".join(" ".join(f"{v:.12e}" for v in m[:3, :4].ravel()) + "\n" for m in matrices)


def write_semantickitti(run_dir: Path, path: Path, *, sensor: str | None = None) -> list[Path]:
    """Write the lidar ``sensor`` of the run in ``run_dir`` as a SemanticKITTI sequence under ``path``.

    Parameters
    ----------
    run_dir : pathlib.Path
        A run directory (``hifi run --out``).
    path : pathlib.Path
        The directory to create (it must not exist).
    sensor : str
        Name of a range sensor of the run (its ``DIR/<sensor>.nc`` or ``DIR/<sensor>.zarr``).

    Returns
    -------
    list of pathlib.Path
        ``[path]``.

    Raises
    ------
    ExportError
        No ``sensor`` given, no such dataset in the run, or not a range sensor's (the messages
        list the run's range sensors).

    Notes
    -----
    See the module docstring for the layout and every convention.
    """
    fmt = "SemanticKITTI"
    ranged = [n for n in run_datasets(run_dir) if _is_range(run_dir, n)]
    if sensor is None:
        raise ExportError(f"{fmt} exports one lidar: give --sensor NAME (range sensors of this run: "
                          f"{', '.join(ranged) or 'none'})")
    ds = open_run_dataset(run_dir, sensor, fmt)
    try:
        if not is_range_dataset(ds):
            raise ExportError(f"{fmt}: {sensor!r} (sensor_model {ds.attrs.get('sensor_model')!r}) is not a range "
                              f"sensor (it has no x_noisy, detected, object_id); range sensors of this run: "
                              f"{', '.join(ranged) or 'none'}")
        return _write(ds, Path(path), sensor, fmt)
    finally:
        ds.close()


def _is_range(run_dir, name) -> bool:
    with open_run_dataset(run_dir, name, "SemanticKITTI") as ds:
        return is_range_dataset(ds)


def _write(ds, root: Path, sensor: str, fmt: str) -> list[Path]:
    ds = strongest_return(ds)
    pos, rot = sensor_pose(ds, fmt)
    n = n_frames(ds)
    classes = [str(c) for c in ds["object_class"].values] if "object_class" in ds.variables else []
    sem_table, inst_table, unknown = label_tables(classes)
    remission_name = "reflectivity" if "reflectivity" in ds.variables else "intensity"
    names = list(POINTS_NOISY) + ["detected", "object_id", remission_name]

    seq = root / "sequences" / "00"
    (seq / "velodyne").mkdir(parents=True)
    (seq / "labels").mkdir()
    unknown_ids = [i + 2 for i, c in enumerate(classes) if c in unknown]
    unknown_points = 0
    for f in range(n):
        sub = ds.isel(frame=[f]) if "frame" in ds.dims else ds
        arrs = frame_first(sub, names)
        det = np.asarray(arrs["detected"], dtype=bool)
        xyz = np.stack([np.asarray(arrs[v], dtype=float)[det] for v in POINTS_NOISY], axis=-1)
        points_sensor = rot[f].apply(xyz - pos[f], inverse=True) if len(xyz) else np.zeros((0, 3))
        remission = _remission(ds, {remission_name: arrs[remission_name][det]})
        rows = np.column_stack([points_sensor, remission]).astype("<f4")
        oid = np.asarray(arrs["object_id"])[det].astype(np.int64)
        idx = np.clip(oid + 2, 0, len(sem_table) - 1)          # an id beyond the table cannot occur
        labels = (sem_table[idx] | (inst_table[idx] << np.uint32(16))).astype("<u4")
        unknown_points += int(np.isin(idx, unknown_ids).sum())
        (seq / "velodyne" / f"{f:06d}.bin").write_bytes(rows.tobytes())
        (seq / "labels" / f"{f:06d}.label").write_bytes(labels.tobytes())

    if unknown:
        warnings.warn(f"{fmt}: classes with no SemanticKITTI id, labelled 0 (unlabeled): {', '.join(unknown)} "
                      f"({unknown_points} points)", ExportWarning, stacklevel=3)

    # poses: T_0^-1 T_f, the lidar's pose in the first scan's lidar frame
    m = np.tile(np.eye(4), (n, 1, 1))
    m[:, :3, :3] = rot.as_matrix()
    m[:, :3, 3] = pos
    rel = np.linalg.inv(m[0]) @ m
    (seq / "poses.txt").write_text(_pose_rows(rel), encoding="ascii")
    (seq / "calib.txt").write_text("Tr: " + _pose_rows([np.eye(4)]), encoding="ascii")
    t = np.atleast_1d(seconds_since_start(ds, "frame_time")) if "frame_time" in ds.variables else \
        np.nanmin(frame_first(ds, ["timestamp"])["timestamp"].reshape(n, -1), axis=1)
    (seq / "times.txt").write_text("".join(f"{v:.9e}\n" for v in t - t[0]), encoding="ascii")
    (root / "README.txt").write_text(_readme(ds, sensor, classes, unknown), encoding="utf-8")
    return [root]


def _readme(ds, sensor, classes, unknown) -> str:
    mapping = sorted({(c, semantic_id(c) or 0) for c in classes})
    lines = [
        f"SemanticKITTI export of hifi sensor {sensor!r} (sensor_model {ds.attrs.get('sensor_model')!r}), "
        f"hifi {__version__}, seed {ds.attrs.get('seed')}, start_utc {ds.attrs.get('start_utc')}.",
        "",
        "sequences/00/velodyne/NNNNNN.bin: float32 x y z remission per detected return, the sensor frame at the",
        "  start of scan NNNNNN (x forward, y left, z up) [m]; dual return: the strongest echo.",
        f"  remission = {remission_source(ds)}.",
        "sequences/00/labels/NNNNNN.label: uint32 per point, semantic id (low 16 bits) | instance id << 16;",
        "  instance = object index + 1 for thing classes, else 0. Atmospheric returns (fog, rain, snow): 1 outlier.",
        "sequences/00/poses.txt: 3x4 row-major per scan, the LIDAR's pose at the scan start in the first scan's",
        "  lidar frame (not a camera pose).",
        "sequences/00/calib.txt: Tr is the identity: the lidar is its own reference frame (no camera).",
        "sequences/00/times.txt: scan start [s] since the first scan's start.",
        "",
        "hifi class -> SemanticKITTI id (semantic-kitti-api config/semantic-kitti.yaml):",
        *[f"  {c} -> {i} {SEMANTIC_KITTI_LABELS[i]}" + ("  (no SemanticKITTI class)" if c in unknown else "")
          for c, i in mapping],
    ]
    return "\n".join(lines) + "\n"


#: Registered in the entry-point group ``hifi.exporters`` as ``semantickitti``.
EXPORTER = Exporter(name="semantickitti", write=write_semantickitti, suffix="", scope="run", per_frame=False,
                    summary="SemanticKITTI sequence of one lidar (--sensor): velodyne/*.bin, labels/*.label, poses, "
                            "calib, times")
