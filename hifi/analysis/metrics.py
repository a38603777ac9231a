"""Measures of how close a simulated scan is to a real one (or to another simulation).

Plain functions over arrays (or over datasets, through :func:`range_grid`); each docstring gives
the definition and its source. They take the scans as they come: point lists ``(n, 3)``, or
organised scans ``(rows, columns)`` of range and detection in the same layout (the same sensor
geometry), NaN for "no return".

- :func:`chamfer_distance`: symmetric nearest-neighbour distance between two point clouds.
- :func:`ring_statistics`: points and range statistics per ring (beam) of an organised scan.
- :func:`range_image_errors`: RMSE and median absolute error between two range images.
- :func:`ray_drop_scores`: precision, recall and F1 of the dropped rays of one scan against another.
- :func:`intensity_emd`: earth mover's distance between two intensity distributions.
- :func:`road_noise_statistics`: the road-plane statistics of the lidar-fidelity validation
  (:mod:`hifi.analysis.lidar_stats`: per-shot noise by range, ring-to-ring offsets, intensity slope,
  gain spread, isolated misses, edge points) of one rotating-lidar frame.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

__all__ = ["ChamferDistance", "RangeImageErrors", "RayDropScores", "RingStatistics", "chamfer_distance",
           "intensity_emd", "range_grid", "range_image_errors", "ray_drop_scores", "ring_statistics",
           "road_noise_statistics"]


class ChamferDistance(NamedTuple):
    """Result of :func:`chamfer_distance` (distances in the points' unit, squared if asked)."""

    chamfer: float          #: (a_to_b + b_to_a) / 2
    a_to_b: float           #: mean over a of the distance to the nearest point of b
    b_to_a: float           #: mean over b of the distance to the nearest point of a
    a_to_b_percentile: float   #: the ``percentile`` of the a -> b distances
    b_to_a_percentile: float   #: the ``percentile`` of the b -> a distances


def _points(x, name):
    a = np.asarray(x, dtype=float)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name}: expected points of shape (n, 3), got {a.shape}")
    a = a[np.all(np.isfinite(a), axis=1)]
    if a.shape[0] == 0:
        raise ValueError(f"{name}: no finite point")
    return a


def chamfer_distance(a, b, *, percentile: float = 95.0, squared: bool = False) -> ChamferDistance:
    """Symmetric Chamfer distance between point clouds ``a`` and ``b``.

    Parameters
    ----------
    a, b : (n, 3), (m, 3) array_like
        Points [m]; rows with a NaN are dropped (misses).
    percentile : float
        Percentile of each direction's nearest-neighbour distances also returned (robust to
        outliers; 95 by default).
    squared : bool
        Use squared distances (the form of Fan et al. 2017) instead of distances.

    Returns
    -------
    ChamferDistance

    Notes
    -----
    ``CD(a, b) = 1/2 (1/|a| sum_{x in a} min_{y in b} d(x, y) + 1/|b| sum_{y in b} min_{x in a}
    d(x, y))``, with nearest neighbours from a k-d tree (scipy ``cKDTree``, exact). The mean of
    the two directions, not their sum, so that identical-but-shifted clouds give the shift.
    Fan, Su, Guibas, "A point set generation network for 3D object reconstruction from a single
    image", CVPR 2017, Eq. 1 (sum of squared distances).
    """
    from scipy.spatial import cKDTree

    pa, pb = _points(a, "a"), _points(b, "b")
    dab = cKDTree(pb).query(pa)[0]
    dba = cKDTree(pa).query(pb)[0]
    if squared:
        dab, dba = dab ** 2, dba ** 2
    ab, ba = float(dab.mean()), float(dba.mean())
    return ChamferDistance(0.5 * (ab + ba), ab, ba, float(np.percentile(dab, percentile)),
                           float(np.percentile(dba, percentile)))


class RingStatistics(NamedTuple):
    """Per ring (row) of an organised scan (:func:`ring_statistics`); arrays of shape (rows,)."""

    points: np.ndarray        #: returns in the ring
    fraction: np.ndarray      #: returns / columns
    mean_range: np.ndarray    #: mean range of the returns [m] (NaN if none)
    median_range: np.ndarray  #: median range [m]
    std_range: np.ndarray     #: standard deviation of the range (ddof 0) [m]


def ring_statistics(range_m, detected=None) -> RingStatistics:
    """Point counts and range statistics per ring of an organised scan.

    Parameters
    ----------
    range_m : (rows, columns) array_like
        Range of each cell [m]; NaN where there is no return.
    detected : (rows, columns) array_like of bool, optional
        Which cells hold a return (default: finite range).
    """
    r = np.asarray(range_m, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"range_m: expected (rows, columns), got shape {r.shape}")
    det = np.isfinite(r) if detected is None else (np.asarray(detected, dtype=bool) & np.isfinite(r))
    rv = np.where(det, r, np.nan)
    n = det.sum(axis=1)
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):   # rings without a return: NaN
        return RingStatistics(n, n / r.shape[1], np.nanmean(rv, axis=1), np.nanmedian(rv, axis=1),
                              np.nanstd(rv, axis=1))


class RangeImageErrors(NamedTuple):
    rmse: float               #: root mean square of (a - b) over cells where both have a return [m]
    median_abs: float         #: median of ``|a - b|`` over those cells [m]
    mean: float               #: mean of (a - b) (bias) [m]
    n: int                    #: cells compared


def range_image_errors(range_a, range_b) -> RangeImageErrors:
    """Range-image errors between two organised scans of the same layout.

    ``a - b`` over the cells where both have a return (finite range); a range image compares
    the geometry of the returns both scans have, :func:`ray_drop_scores` the returns one has
    and the other has not (the metrics of LiDAR-NeRF, Tao et al. 2023, and of the range-image
    literature: RMSE and median absolute error).
    """
    a = np.asarray(range_a, dtype=float)
    b = np.asarray(range_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"range images of different shapes: {a.shape} and {b.shape}")
    both = np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return RangeImageErrors(float("nan"), float("nan"), float("nan"), 0)
    e = a[both] - b[both]
    return RangeImageErrors(float(np.sqrt(np.mean(e ** 2))), float(np.median(np.abs(e))), float(np.mean(e)),
                            int(both.sum()))


class RayDropScores(NamedTuple):
    precision: float          #: dropped in both / dropped in the prediction
    recall: float             #: dropped in both / dropped in the reference
    f1: float                 #: harmonic mean of precision and recall
    drop_rate_predicted: float
    drop_rate_reference: float


def ray_drop_scores(detected_predicted, detected_reference) -> RayDropScores:
    """Precision, recall and F1 of the dropped rays of a predicted (simulated) scan.

    A ray is *dropped* where its cell has no return. Positives are the drops: precision =
    ``|dropped in both| / |dropped in the prediction|``, recall = ``|dropped in both| / |dropped in
    the reference|``, F1 = 2 P R / (P + R) (the ray-drop metrics of LiDARsim, Manivasagam et al.
    2020, and LiDAR-NeRF). NaN where a denominator is 0.
    """
    p = ~np.asarray(detected_predicted, dtype=bool)
    r = ~np.asarray(detected_reference, dtype=bool)
    if p.shape != r.shape:
        raise ValueError(f"scans of different shapes: {p.shape} and {r.shape}")
    tp = float(np.sum(p & r))
    prec = tp / p.sum() if p.sum() else float("nan")
    rec = tp / r.sum() if r.sum() else float("nan")
    f1 = 2 * prec * rec / (prec + rec) if np.isfinite(prec) and np.isfinite(rec) and prec + rec > 0 else float("nan")
    return RayDropScores(float(prec), float(rec), float(f1), float(p.mean()), float(r.mean()))


def intensity_emd(a, b, *, normalise: bool = False) -> float:
    """Earth mover's (1-Wasserstein) distance between two intensity distributions.

    Parameters
    ----------
    a, b : array_like
        Intensities of the returns of each scan (NaN dropped), in one scale.
    normalise : bool
        Divide each sample by its own median first (compares the shapes of distributions of
        sensors whose intensity scales differ).

    Notes
    -----
    ``W1 = int |F_a(x) - F_b(x)| dx``, F the empirical distribution functions
    (``scipy.stats.wasserstein_distance``; Rubner, Tomasi, Guibas, IJCV 40, 2000).
    """
    from scipy.stats import wasserstein_distance

    x = np.asarray(a, dtype=float).ravel()
    y = np.asarray(b, dtype=float).ravel()
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size == 0 or y.size == 0:
        raise ValueError("intensity_emd: an empty sample")
    if normalise:
        x, y = x / np.median(x), y / np.median(y)
    return float(wasserstein_distance(x, y))


def range_grid(ds, frame: int = 0, *, variable: str = "distance_noisy"):
    """``(range (rows, columns), detected (rows, columns))`` of a rotating lidar's frame, rows
    the lasers from the highest elevation down, columns the firing steps (a dual return: its
    strongest slot), for the organised measures above."""
    f = ds.isel(frame=frame) if "frame" in ds.dims else ds
    if "return" in f.dims and f[variable].ndim == 3:
        f = f.isel({"return": 0})
    r = np.asarray(f[variable].values, dtype=float)
    det = np.asarray(f["detected"].values, dtype=bool)
    if r.ndim != 2:
        raise ValueError(f"{variable}: expected two sensor dimensions, got {f[variable].dims}")
    if "laser_elevation" in f:
        order = np.argsort(-np.asarray(f["laser_elevation"].values), kind="stable")
    elif "pitch" in f:
        order = np.argsort(-np.nanmean(np.asarray(f["pitch"].values, dtype=float), axis=0), kind="stable")
    else:
        order = np.arange(r.shape[1])
    r, det = r[:, order].T, det[:, order].T
    return np.where(det, r, np.nan), det


def road_noise_statistics(ds, frame: int = 0) -> dict:
    """The road-plane statistics of a rotating lidar's frame, as ``validation/lidar_real.py``
    measures real recordings (:func:`hifi.analysis.lidar_stats.measure`).

    The frame's reported points are brought into the sensor frame with its start pose
    (``sensor_position``, ``sensor_orientation``), laid out as (ring, column) with the rings
    in elevation order, and measured: road plane and sensor height, per-shot range noise by
    range (second differences along the rings), ring-to-ring offsets, intensity slope, per-ring
    gain spread, isolated misses, edge points. Returns :func:`hifi.analysis.lidar_stats.measure`'s
    ``headline`` dict (units in the key names).
    """
    from scipy.spatial.transform import Rotation

    from .lidar_stats import measure

    f = ds.isel(frame=frame) if "frame" in ds.dims else ds
    if "return" in f.dims and f["x_noisy"].ndim == 3:
        f = f.isel({"return": 0})
    if "laser_elevation" not in f:
        raise ValueError("road_noise_statistics: expected a rotating lidar's dataset (laser_elevation)")
    order = np.argsort(np.asarray(f["laser_elevation"].values), kind="stable")
    pts = np.stack([np.asarray(f[v].values, dtype=float) for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
    rot = Rotation.from_quat(np.asarray(f["sensor_orientation"].values, dtype=float))
    local = rot.inv().apply((pts - np.asarray(f["sensor_position"].values, dtype=float)).reshape(-1, 3))
    local = local.reshape(pts.shape)
    det = np.asarray(f["detected"].values, dtype=bool)
    grid = np.where(det[..., None], local, np.nan)[:, order].transpose(1, 0, 2)
    return measure(grid, np.asarray(f["intensity"].values, dtype=float)[:, order].T, det[:, order].T)["headline"]
