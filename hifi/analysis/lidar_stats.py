"""Statistics that tell a real spinning-lidar sweep from a simulated one.

Plain functions over a *scan grid*: arrays of shape ``(ring, column)``, one row per laser
(ring) and the columns in acquisition (azimuth) order, so that neighbours along a ring are
neighbouring columns. A miss is a cell with ``detected`` False (its point may be NaN). Points are
in the sensor frame, ``points_sensor[..., :3]`` [m], origin at the sensor's optical centre;
ranges are ``|points_sensor|`` [m]. Nothing here reads files or runs a simulation:
``validation/lidar_real.py`` builds the grids from the recordings and the simulated datasets;
:func:`hifi.analysis.metrics.road_noise_statistics` takes a dataset.

Statistics (those published for real Velodyne recordings, so a simulation can be compared with them):

(a) :func:`fit_ground_plane`      road plane and the sensor height above it
(b) :func:`fit_ring_cones`        per-ring elevation and vertical beam offset, z = h_i + r tan e_i
(c) :func:`ground_ring_radii`     median horizontal range of each ring's ground returns
(d) :func:`range_noise_by_range`  per-shot range noise from second differences along a ring
(e) :func:`ring_range_offsets`    per-ring range bias along the ray against the fitted plane
(f) :func:`intensity_range_slope` log-log slope of road intensity against range
(g) :func:`ring_gain_spread`      per-ring gain spread of road intensity after the range trend
(h) :func:`isolated_miss_fraction` single misses inside the road
(i) :func:`edge_points`           mixed (floating) returns at depth discontinuities
(j) :func:`clean_edge_points`     the same at clean edges (both sides smooth), by depth gap

:func:`measure` runs them all and returns a flat dict of headline numbers.
"""

from __future__ import annotations

from typing import NamedTuple

import warnings

import numpy as np

# The edge statistics live in their own module; their names are also this module's.
from .lidar_edges import (EDGE_GAP_BINS_M, PATCH_COLUMNS, PLANAR_MIN_POINTS, PLANAR_RMS_M,  # noqa: F401
                          CleanEdges, EdgePoints, clean_edge_points, edge_points)

#: Median absolute deviation -> sigma of a normal distribution, 1 / Phi^-1(3/4).
MAD_TO_SIGMA = 1.482602218505602
#: Default range bins of the noise statistic [m] (the published HDL-64E figure is for 7-40 m).
NOISE_BINS_M = (3.0, 7.0, 10.0, 15.0, 20.0, 30.0, 40.0)
#: Range window of the headline noise figure [m].
NOISE_HEADLINE_M = (7.0, 40.0)


# --------------------------------------------------------------------------------------------
# (a) road plane
# --------------------------------------------------------------------------------------------

class Plane(NamedTuple):
    """Plane ``dot(normal, p) + offset_m = 0`` in the sensor frame, normal unit and pointing up."""

    normal: np.ndarray        #: (3,) unit normal, sensor frame, normal[2] > 0
    offset_m: float           #: [m]; the sensor origin is ``offset_m`` above the plane
    height_m: float           #: sensor origin above the plane [m] (= offset_m)
    tilt_rad: float           #: angle between the normal and the sensor z axis [rad]
    n_inliers: int            #: points within ``inlier_tol_m`` of the final plane


def height_above_plane(points_sensor, plane: Plane) -> np.ndarray:
    """Signed distance of points above ``plane`` [m], shape ``points_sensor.shape[:-1]``."""
    p = np.asarray(points_sensor, dtype=float)
    return p @ plane.normal + plane.offset_m


def fit_ground_plane(points_sensor, valid=None, *, min_range_m=2.0, max_range_m=30.0, inlier_tol_m=0.08,
                     max_tilt_deg=15.0, n_trials=400, rng=None) -> Plane:
    """Road plane by RANSAC on the points below the sensor, refined by least squares.

    Parameters
    ----------
    points_sensor : (..., 3) float
        Points, sensor frame [m]; NaN rows are ignored.
    valid : (...) bool, optional
        Points to use (default: all finite).
    min_range_m, max_range_m : float
        Horizontal range window of the candidates [m] (near the sensor the road dominates).
    inlier_tol_m : float
        Distance from a plane within which a point supports it [m].
    max_tilt_deg : float
        Planes whose normal is further than this from the sensor z axis are rejected [deg].
    n_trials : int
        RANSAC hypotheses (three candidate points each).
    rng : numpy.random.Generator, optional
        Draws the hypotheses (default ``default_rng(0)``: deterministic).

    Returns
    -------
    Plane

    Notes
    -----
    Candidates are the points in the range window lying below the sensor (z < 0). RANSAC keeps
    the near-horizontal plane (tilt < ``max_tilt_deg``) with most points within
    ``inlier_tol_m``; then two rounds of total least squares (smallest singular vector of the
    centred inliers) refine it, the second with the tolerance shrunk to 3 sigma of the
    residuals (at least 2 cm). Kerbs, cars and walls are outliers; a road that is not flat over
    the window biases the result.
    """
    p = np.asarray(points_sensor, dtype=float).reshape(-1, 3)
    ok = np.all(np.isfinite(p), axis=1)
    if valid is not None:
        ok &= np.asarray(valid, dtype=bool).ravel()
    rh = np.hypot(p[:, 0], p[:, 1])
    ok &= (rh >= min_range_m) & (rh <= max_range_m) & (p[:, 2] < 0.0)
    cand = p[ok]
    if len(cand) < 3:
        raise ValueError(f"fit_ground_plane: only {len(cand)} candidate points below the sensor "
                         f"within {min_range_m}-{max_range_m} m")
    rng = np.random.default_rng(0) if rng is None else rng
    idx = rng.integers(0, len(cand), size=(n_trials, 3))
    a, b, c = cand[idx[:, 0]], cand[idx[:, 1]], cand[idx[:, 2]]
    n = np.cross(b - a, c - a)
    norm = np.linalg.norm(n, axis=1)
    good = norm > 0
    n = np.where(good[:, None], n / np.where(good, norm, 1.0)[:, None], 0.0)
    n *= np.sign(n[:, 2:3] + (n[:, 2:3] == 0))
    good &= n[:, 2] > np.cos(np.radians(max_tilt_deg))
    d = -np.sum(n * a, axis=1)
    # support of every hypothesis, in chunks to bound memory
    sub = cand if len(cand) <= 20000 else cand[rng.choice(len(cand), 20000, replace=False)]
    support = np.zeros(n_trials, dtype=int)
    for s in range(0, n_trials, 50):
        support[s:s + 50] = np.sum(np.abs(sub @ n[s:s + 50].T + d[s:s + 50]) < inlier_tol_m, axis=0)
    support[~good] = -1
    best = int(np.argmax(support))
    if support[best] < 3:
        raise ValueError("fit_ground_plane: no near-horizontal plane found")
    normal, offset = n[best], d[best]
    tol = inlier_tol_m
    for _ in range(2):
        inl = cand[np.abs(cand @ normal + offset) < tol]
        centre = inl.mean(axis=0)
        normal = np.linalg.svd(inl - centre, full_matrices=False)[2][-1]
        normal = normal * np.sign(normal[2])
        offset = -float(normal @ centre)
        res = inl @ normal + offset
        tol = max(3.0 * MAD_TO_SIGMA * float(np.median(np.abs(res - np.median(res)))), 0.02)
    n_in = int(np.sum(np.abs(cand @ normal + offset) < tol))
    return Plane(normal, float(offset), float(offset), float(np.arccos(np.clip(normal[2], -1, 1))), n_in)


def ground_mask(points_sensor, detected, plane: Plane, *, tol_m=0.10, max_range_m=60.0) -> np.ndarray:
    """Returns within ``tol_m`` [m] of ``plane`` and within ``max_range_m`` [m]: the road, (ring, column)."""
    p = np.asarray(points_sensor, dtype=float)
    with np.errstate(invalid="ignore"):
        h = height_above_plane(p, plane)
        r = np.linalg.norm(p, axis=-1)
        return np.asarray(detected, dtype=bool) & (np.abs(h) < tol_m) & (r < max_range_m)


# --------------------------------------------------------------------------------------------
# (b) ring cones, (c) ground-ring radii
# --------------------------------------------------------------------------------------------

class RingCones(NamedTuple):
    elevation_rad: np.ndarray   #: (ring,) fitted beam elevation [rad]
    offset_m: np.ndarray        #: (ring,) vertical beam origin h_i above the sensor origin [m]
    residual_m: np.ndarray      #: (ring,) robust sigma of the z residuals [m]
    n_points: np.ndarray        #: (ring,) points used in the last iteration


def fit_ring_cones(points_sensor, detected, *, min_range_m=2.0, n_iter=4, clip_sigma=3.0, min_points=20) -> RingCones:
    """Per-ring cone ``z = h_i + r tan(e_i)`` by iteratively clipped least squares.

    Parameters
    ----------
    points_sensor : (ring, column, 3) float
        Points, sensor frame [m].
    detected : (ring, column) bool
    min_range_m : float
        Horizontal range below which points are ignored [m] (the car body).
    n_iter, clip_sigma : int, float
        Rounds of least squares; after each, points further than ``clip_sigma`` robust sigmas
        (MAD) from the line are dropped.
    min_points : int
        Rings with fewer points get NaN.

    Notes
    -----
    A ring's beams sweep a cone about the sensor z axis with apex ``h_i`` above the origin;
    every return of ring i satisfies ``z = h_i + r tan(e_i)`` with ``r`` the horizontal range.
    The fit uses all returns of the ring, not only the ground: on a level road every ground
    point of one ring has the same r and z, which does not separate h_i from e_i; the range
    spread of cars, walls and poles does. Closed-form two-parameter regression, vectorised
    over rings. For the nuScenes sweep the ego-motion compensation must be undone first
    (``lidar_real.nuscenes_grid``), or the cone is smeared by the car's travel.
    """
    p = np.asarray(points_sensor, dtype=float)
    r = np.hypot(p[..., 0], p[..., 1])
    z = p[..., 2]
    use = np.asarray(detected, dtype=bool) & np.isfinite(r) & np.isfinite(z) & (r >= min_range_m)
    r0, z0 = np.where(use, r, 0.0), np.where(use, z, 0.0)
    slope = np.full(p.shape[0], np.nan)
    icpt = np.full(p.shape[0], np.nan)
    sig = np.full(p.shape[0], np.nan)
    for _ in range(n_iter):
        w = use.astype(float)
        n = w.sum(axis=1)
        sr, sz = (w * r0).sum(1), (w * z0).sum(1)
        srr, srz = (w * r0 * r0).sum(1), (w * r0 * z0).sum(1)
        den = n * srr - sr * sr
        # nanmedian of an empty ring warns; its NaN is the answer
        with np.errstate(invalid="ignore", divide="ignore"), \
                warnings.catch_warnings(action="ignore", category=RuntimeWarning):
            slope = np.where((n >= min_points) & (den > 0), (n * srz - sr * sz) / den, np.nan)
            icpt = (sz - slope * sr) / n
            res = z0 - (icpt[:, None] + slope[:, None] * r0)
            absres = np.where(use, np.abs(res), np.nan)
            med = np.nanmedian(absres, axis=1) if np.any(use) else np.full(p.shape[0], np.nan)
        sig = np.maximum(MAD_TO_SIGMA * med, 1e-4)
        use = use & (np.abs(res) <= clip_sigma * sig[:, None])
    return RingCones(np.arctan(slope), icpt, sig, use.sum(axis=1))


def ground_ring_radii(points_sensor, ground, *, min_points=10) -> np.ndarray:
    """Median horizontal range [m] of each ring's ground returns, shape (ring,); NaN below ``min_points``."""
    p = np.asarray(points_sensor, dtype=float)
    g = np.asarray(ground, dtype=bool)
    rh = np.where(g, np.hypot(p[..., 0], p[..., 1]), np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        med = np.nanmedian(rh, axis=1)
    return np.where(g.sum(axis=1) >= min_points, med, np.nan)


# --------------------------------------------------------------------------------------------
# (d) per-shot range noise
# --------------------------------------------------------------------------------------------

def sigma_from_second_differences(d2, *, estimator="mad", clip_sigma=3.5, n_iter=10) -> float:
    """Per-sample sigma of white noise from its second differences, robustly.

    Parameters
    ----------
    d2 : array_like
        Second differences ``x[j+1] - 2 x[j] + x[j-1]`` [any unit]; NaN ignored.
    estimator : {"mad", "clipped"}
        ``"mad"``: ``MAD_TO_SIGMA * median(|d2 - median(d2)|) / sqrt(6)``. ``"clipped"``: the
        standard deviation of d2 iteratively clipped at ``clip_sigma`` of itself (``n_iter``
        rounds, started from the plain standard deviation), divided by the truncated normal's
        factor ``sqrt(1 - 2 c phi(c) / (2 Phi(c) - 1))`` and by sqrt(6); use it for quantised
        ranges, where the MAD can only take multiples of the step.

    Returns
    -------
    float
        Per-sample sigma [same unit as d2], NaN if empty.

    Notes
    -----
    For ``x_j = s_j + n_j`` with a smooth signal (``s`` locally linear, so its second difference
    is negligible) and independent noise of variance sigma^2, ``d2 = n_{j+1} - 2 n_j + n_{j-1}``
    has variance (1 + 4 + 1) sigma^2 = 6 sigma^2; for Gaussian noise d2 is Gaussian and its MAD
    times 1.4826 estimates its sigma, robust to the few large d2 at edges and lane markings.
    Neighbouring d2 are correlated (they share samples), which widens the estimator's spread
    but does not bias it. Quantised ranges (Ouster's low-bandwidth profile: 8 mm steps) add the
    quantisation noise step/sqrt(12) and make the MAD itself step-valued when sigma is below
    about a step.
    """
    d2 = np.asarray(d2, dtype=float)
    d2 = d2[np.isfinite(d2)]
    if d2.size == 0:
        return float("nan")
    if estimator == "mad":
        return float(MAD_TO_SIGMA * np.median(np.abs(d2 - np.median(d2))) / np.sqrt(6.0))
    if estimator != "clipped":
        raise ValueError(f"estimator: {estimator!r}; allowed 'mad', 'clipped'")
    from scipy.stats import norm
    c = clip_sigma
    centre, s = np.median(d2), np.std(d2)
    for _ in range(n_iter):
        sel = d2[np.abs(d2 - centre) <= c * s]
        if sel.size < 2:
            break
        centre, s_new = sel.mean(), sel.std(ddof=1)
        s_true = s_new / np.sqrt(1.0 - 2.0 * c * norm.pdf(c) / (2.0 * norm.cdf(c) - 1.0))
        if np.isclose(s_true, s, rtol=1e-6):
            s = s_true
            break
        s = s_true
    return float(s / np.sqrt(6.0))


class NoiseByRange(NamedTuple):
    edges_m: np.ndarray     #: (bin + 1,) range bin edges [m]
    sigma_m: np.ndarray     #: (bin,) per-shot range sigma [m]
    n: np.ndarray           #: (bin,) second differences in the bin
    headline_m: float       #: sigma over NOISE_HEADLINE_M [m]


def range_second_differences(range_m, road):
    """Second differences of range along each ring where three neighbouring cells are road.

    Returns ``(d2, r_centre)``, both (ring, column - 2) [m]; NaN where a cell is not road.
    """
    r = np.where(np.asarray(road, dtype=bool), np.asarray(range_m, dtype=float), np.nan)
    d2 = r[:, 2:] - 2.0 * r[:, 1:-1] + r[:, :-2]
    return d2, r[:, 1:-1]


def range_noise_by_range(range_m, road, *, bins_m=NOISE_BINS_M, headline_m=NOISE_HEADLINE_M,
                         min_count=30, estimator="mad") -> NoiseByRange:
    """Per-shot range noise sigma by range bin, from second differences along the rings.

    Parameters
    ----------
    range_m : (ring, column) float
        Measured range [m].
    road : (ring, column) bool
        Returns on the road (flat, so the true range is smooth along a ring).
    bins_m : sequence of float
        Range bin edges [m].
    min_count : int
        Bins with fewer second differences get NaN.
    estimator : {"mad", "clipped"}
        See :func:`sigma_from_second_differences`.

    Notes
    -----
    Estimator: :func:`sigma_from_second_differences` on the d2 whose centre range falls in the
    bin. On a flat road the true range along a ring changes slowly (a tilted plane gives a
    sinusoid over the 360 deg); its second difference at 0.17-0.35 deg steps is far below a
    millimetre. Road texture and ego-motion residuals count as noise.
    """
    d2, rc = range_second_differences(range_m, road)
    edges = np.asarray(bins_m, dtype=float)
    ok = np.isfinite(d2)
    d2, rc = d2[ok], rc[ok]
    k = np.digitize(rc, edges) - 1
    sig = np.full(len(edges) - 1, np.nan)
    cnt = np.zeros(len(edges) - 1, dtype=int)
    for b in range(len(edges) - 1):          # loop over a handful of bins, not points
        sel = d2[k == b]
        cnt[b] = sel.size
        if sel.size >= min_count:
            sig[b] = sigma_from_second_differences(sel, estimator=estimator)
    hs = d2[(rc >= headline_m[0]) & (rc < headline_m[1])]
    head = sigma_from_second_differences(hs, estimator=estimator) if hs.size >= min_count else float("nan")
    return NoiseByRange(edges, sig, cnt, head)


# --------------------------------------------------------------------------------------------
# (e) ring-to-ring range offsets
# --------------------------------------------------------------------------------------------

class RingOffsets(NamedTuple):
    offset_m: np.ndarray     #: (ring,) median of measured minus plane range [m]; NaN if too few
    spread_m: float          #: standard deviation of offset_m over the rings that have one [m]
    peak_to_peak_m: float    #: max - min of offset_m [m]
    ring_to_ring_m: float    #: std of the differences of neighbouring rings' offsets / sqrt(2) [m]


def plane_range(points_sensor, plane: Plane) -> np.ndarray:
    """Range [m] at which the ray from the origin through each point meets ``plane``."""
    p = np.asarray(points_sensor, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = p / np.linalg.norm(p, axis=-1, keepdims=True)
        return -plane.offset_m / (u @ plane.normal)


def ring_range_offsets(points_sensor, ground, plane: Plane, *, max_range_m=15.0, min_points=20) -> RingOffsets:
    """Per-ring range bias along the ray, measured against the fitted road plane.

    Notes
    -----
    For each road return, the residual is ``|p| - t`` with t the range where the ray from the
    sensor origin through p meets the plane (:func:`plane_range`). Range noise moves the point
    along its own ray, so t does not depend on it and the residual is the range error. The
    per-ring median of the residuals is that ring's offset; the spread is their standard
    deviation over rings (ddof 1). Because the plane is fitted to the same points the mean
    offset is near zero. An elevation error de of a ring also appears here, as
    ``r de / tan(e)`` at grazing incidence (for the nuScenes HDL-32E, 0.1 deg on a ring
    meeting the road at 10 m is about 6 cm), and so does a beam origin off the sensor origin;
    the statistic is the range offset *as the point cloud shows it*, whatever its cause.
    ``ring_to_ring_m`` differences the offsets of neighbouring rings (in the order given, which
    should be elevation order) and divides their standard deviation by sqrt(2): for independent
    per-ring biases it equals their sigma, and a smooth trend over the rings (a road that curves
    or slopes away from the plane fitted near the sensor) drops out.
    Only returns within ``max_range_m`` [m] count: a road height deviation dz moves the plane
    range by about ``dz r / h``, eight times dz at 15 m for a 1.84 m mount, so the far,
    grazing rings measure the road's unevenness rather than the sensor.
    """
    p = np.asarray(points_sensor, dtype=float)
    with np.errstate(invalid="ignore"):
        g = np.asarray(ground, dtype=bool) & (np.linalg.norm(p, axis=-1) <= max_range_m)
    res = np.where(g, np.linalg.norm(p, axis=-1) - plane_range(p, plane), np.nan)
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        med = np.nanmedian(res, axis=1)
    med = np.where(g.sum(axis=1) >= min_points, med, np.nan)
    ok = np.isfinite(med)
    spread = float(np.std(med[ok], ddof=1)) if ok.sum() >= 2 else float("nan")
    ptp = float(np.ptp(med[ok])) if ok.any() else float("nan")
    dd = np.diff(med[ok])
    r2r = float(np.std(dd, ddof=1) / np.sqrt(2.0)) if dd.size >= 2 else float("nan")
    return RingOffsets(med, spread, ptp, r2r)


# --------------------------------------------------------------------------------------------
# (f) intensity against range, (g) per-ring gain
# --------------------------------------------------------------------------------------------

class IntensitySlope(NamedTuple):
    slope: float              #: d log I / d log r [1]
    intercept: float          #: log I at r = 1 m [log of intensity unit]
    centres_m: np.ndarray     #: (bin,) median range of the returns in each bin (geometric centre if empty) [m]
    median: np.ndarray        #: (bin,) median intensity in the bin; NaN if too few


def intensity_range_slope(range_m, intensity, road, *, range_window_m=(4.0, 40.0), n_bins=12,
                          min_count=30) -> IntensitySlope:
    """Log-log slope of road intensity against range.

    Notes
    -----
    Road returns are binned in ``n_bins`` logarithmic range bins over ``range_window_m`` [m];
    a straight line ``log I = a + b log r`` is fitted (unweighted) through the points (median
    range, median intensity) of the bins (bins with at least ``min_count`` returns and a positive median). The slope b
    is the statistic: a Lambertian road seen from a fixed height gives ``I ~ cos(theta) / r^2``
    with ``cos(theta) = h / r``, so b = -3 in the far field, while Velodyne and Ouster firmware
    report range-compensated, calibrated values with much flatter slopes.
    """
    r = np.asarray(range_m, dtype=float)
    i = np.asarray(intensity, dtype=float)
    g = np.asarray(road, dtype=bool) & np.isfinite(r) & np.isfinite(i)
    edges = np.geomspace(range_window_m[0], range_window_m[1], n_bins + 1)
    rr, ii = r[g], i[g]
    k = np.digitize(rr, edges) - 1
    med = np.full(n_bins, np.nan)
    centres = np.sqrt(edges[:-1] * edges[1:])
    for b in range(n_bins):                  # loop over bins, not points
        sel = k == b
        if sel.sum() >= min_count:
            med[b] = np.median(ii[sel])
            centres[b] = np.median(rr[sel])
    ok = np.isfinite(med) & (med > 0)
    if ok.sum() < 2:
        return IntensitySlope(float("nan"), float("nan"), centres, med)
    b, a = np.polyfit(np.log(centres[ok]), np.log(med[ok]), 1)
    return IntensitySlope(float(b), float(a), centres, med)


class RoadBRDF(NamedTuple):
    reflectivity: float       #: Oren-Nayar albedo rho of the road, 0..1 (NaN if no fit)
    roughness_deg: float      #: Oren-Nayar roughness sigma [deg]
    rms_log: float            #: RMS of the log residuals of the bin medians [1]


def fit_road_brdf(slope: IntensitySlope, height_m, *, full_scale=100.0, roughness_deg=None) -> RoadBRDF:
    """Reflectivity and roughness of the road from its reported intensity against range.

    Parameters
    ----------
    slope : IntensitySlope
        The bin medians of :func:`intensity_range_slope`.
    height_m : float
        Sensor height above the road [m].
    full_scale : float
        Code the sensor reports for a white Lambertian target at normal incidence (100 for
        Velodyne's calibrated reflectivity: HDL-32E / VLP-16 manuals, 0..100 diffuse).
    roughness_deg : float, optional
        Fit the reflectivity alone at this roughness (a sensor whose reported value does not
        fall with range as a range-compensated one should: the Ouster capture's rises).

    Notes
    -----
    Fits ``I(r) = full_scale rho (A cos i + B sin^2 i)``, ``cos i = h / r``, the monostatic
    Oren-Nayar backscatter (:func:`sensors.radiometry.oren_nayar_backscatter`) of a road seen
    by a sensor whose intensity is range-compensated and linear in reflectivity, to the bin
    medians by least squares in the log (scipy ``least_squares``; rho in 0.01..1, sigma in
    0..60 deg). The per-ring gains of a real unit are in the medians; they average out only
    over many rings, so the fit carries their scatter (``rms_log``).
    """
    from scipy.optimize import least_squares

    ok = np.isfinite(slope.median) & (slope.median > 0)
    if ok.sum() < 3:
        return RoadBRDF(float("nan"), float("nan"), float("nan"))
    r, med = slope.centres_m[ok], slope.median[ok]
    c = np.clip(float(height_m) / r, 0.0, 1.0)

    def resid(x):
        s2 = x[1] ** 2
        f = (1.0 - 0.5 * s2 / (s2 + 0.33)) * c + 0.45 * s2 / (s2 + 0.09) * (1.0 - c * c)
        return np.log(full_scale * x[0] * f) - np.log(med)

    if roughness_deg is not None:              # reflectivity alone, at a given roughness
        sig = float(np.radians(roughness_deg))
        fit = least_squares(lambda x: resid([x[0], sig]), [0.2], bounds=([0.01], [1.0]))
        return RoadBRDF(float(fit.x[0]), float(roughness_deg), float(np.sqrt(np.mean(fit.fun ** 2))))
    fit = least_squares(resid, [0.2, 0.2], bounds=([0.01, 0.0], [1.0, np.radians(60.0)]))
    return RoadBRDF(float(fit.x[0]), float(np.degrees(fit.x[1])), float(np.sqrt(np.mean(fit.fun ** 2))))


class GainSpread(NamedTuple):
    spread: float            #: std / mean of the per-ring gains (ddof 1) [1]
    gain: np.ndarray         #: (ring,) median range-corrected road intensity; NaN if too few


def ring_gain_spread(range_m, intensity, road, *, slope, range_window_m=(4.0, 40.0), min_points=30) -> GainSpread:
    """Spread of per-ring gains of road intensity after removing the range trend.

    Notes
    -----
    Each road return's intensity is brought to 10 m with the fitted log-log slope,
    ``I_c = I (10 m / r)^slope``; a ring's gain is the median of its ``I_c`` in
    ``range_window_m``; the statistic is the coefficient of variation (std, ddof 1, over mean)
    of the gains of the rings with at least ``min_points`` returns. On a flat road each ring
    meets the road at its own range, so "equal range" is reached through the trend model;
    a slope error therefore leaks in as a range-correlated gain pattern. Road paint seen by a
    few rings is suppressed by the median.
    """
    r = np.asarray(range_m, dtype=float)
    i = np.asarray(intensity, dtype=float)
    g = np.asarray(road, dtype=bool) & (r >= range_window_m[0]) & (r <= range_window_m[1]) & np.isfinite(i)
    with np.errstate(all="ignore"), warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        ic = np.where(g, i * (10.0 / r) ** slope, np.nan)
        gain = np.nanmedian(ic, axis=1)
    gain = np.where(g.sum(axis=1) >= min_points, gain, np.nan)
    ok = np.isfinite(gain)
    spread = float(np.std(gain[ok], ddof=1) / np.mean(gain[ok])) if ok.sum() >= 2 else float("nan")
    return GainSpread(spread, gain)


# --------------------------------------------------------------------------------------------
# (h) isolated misses, (i) edge points
# --------------------------------------------------------------------------------------------

class IsolatedMisses(NamedTuple):
    fraction: float          #: n_isolated / n_candidates [1]
    n_isolated: int          #: misses whose two ring neighbours are road returns
    n_candidates: int        #: cells whose two ring neighbours are road returns
    #: Edges of the range bins [m] (the mean range of the two neighbours), and per bin the
    #: isolated misses and the candidates (empty without ``range_m``).
    edges_m: tuple = ()
    n_isolated_by_range: tuple = ()
    n_candidates_by_range: tuple = ()


#: Range bins [m] of :func:`isolated_miss_fraction`'s breakdown: the road's SNR falls with range,
#: so a shot's chance to be dropped depends on it, and two scenes that show different stretches
#: of road give different overall fractions from the same sensor.
MISS_RANGE_EDGES_M = (0.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 60.0)


def isolated_miss_fraction(detected, road, range_m=None, edges_m=MISS_RANGE_EDGES_M) -> IsolatedMisses:
    """Fraction of single dropouts inside the road, overall and by range.

    Notes
    -----
    A candidate is an interior cell (column j, 0 < j < n - 1) whose two neighbours along the
    ring, j - 1 and j + 1, are both road returns; it is an isolated miss if it is itself a miss.
    Only rings that see the road (downward rings) have candidates. The fraction estimates the
    probability that a shot at the road is dropped though the road is there. With ``range_m``
    (grid of ranges [m], NaN where no return) candidates are also counted per bin of the mean
    range of their two neighbours (``edges_m``).
    """
    det = np.asarray(detected, dtype=bool)
    rd = np.asarray(road, dtype=bool)
    cand = rd[:, :-2] & rd[:, 2:]
    iso = cand & ~det[:, 1:-1]
    nc, ni = int(cand.sum()), int(iso.sum())
    by_iso, by_cand = (), ()
    if range_m is not None:
        r = np.asarray(range_m, dtype=float)
        mid = 0.5 * (r[:, :-2] + r[:, 2:])
        b = np.digitize(np.where(cand, mid, np.nan), edges_m) - 1         # NaN -> len(edges_m) - 1
        n_bins = len(edges_m) - 1
        by_cand = tuple(int(v) for v in np.bincount(b[cand], minlength=n_bins + 1)[:n_bins])
        by_iso = tuple(int(v) for v in np.bincount(b[iso], minlength=n_bins + 1)[:n_bins])
    return IsolatedMisses(ni / nc if nc else float("nan"), ni, nc, tuple(edges_m) if by_cand else (), by_iso,
                          by_cand)


def range_matched_miss_fractions(sim: IsolatedMisses, real: IsolatedMisses, min_candidates: int = 100) -> tuple:
    """``(sim, real)``: the simulated isolated-miss rate of each range bin weighted by the real
    recording's candidates in that bin (what the simulated sensor would show on the real road's
    range distribution), and the real fraction over the same bins. Bins with fewer than
    ``min_candidates`` in either (a rate of 1 in 3 says little) are left out of both; NaN
    without a breakdown."""
    nan = (float("nan"), float("nan"))
    if not sim.n_candidates_by_range or not real.n_candidates_by_range:
        return nan
    cs, xs = np.asarray(sim.n_candidates_by_range, float), np.asarray(sim.n_isolated_by_range, float)
    cr, xr = np.asarray(real.n_candidates_by_range, float), np.asarray(real.n_isolated_by_range, float)
    ok = (cs >= min_candidates) & (cr >= min_candidates)
    if not ok.any():
        return nan
    return float(np.sum(xs[ok] / cs[ok] * cr[ok]) / np.sum(cr[ok])), float(np.sum(xr[ok]) / np.sum(cr[ok]))


# --------------------------------------------------------------------------------------------
# everything at once
# --------------------------------------------------------------------------------------------

def measure(points_sensor, intensity, detected, *, ground_tol_m=0.10, plane_max_range_m=30.0,
            intensity_window_m=(4.0, 40.0), noise_estimator="mad", intensity_full_scale=100.0, rng=None) -> dict:
    """All statistics of one scan grid.

    Parameters
    ----------
    points_sensor : (ring, column, 3) float
        Points, sensor frame [m]; rings in elevation order (either direction; the ring-to-ring
        offset differences neighbours), columns in acquisition order.
    intensity : (ring, column) float
        Intensity or reflectivity as the sensor reports it [sensor units].
    detected : (ring, column) bool
    noise_estimator : {"mad", "clipped"}
        See :func:`sigma_from_second_differences` ("clipped" for quantised ranges).
    intensity_full_scale : float
        Intensity of a white Lambertian target at normal incidence (:func:`fit_road_brdf`).

    Returns
    -------
    dict
        ``plane``, ``road`` (the mask), the NamedTuples of every statistic (keys ``cones``,
        ``ring_radii_m``, ``noise``, ``offsets``, ``slope``, ``brdf``, ``gain``, ``misses``, ``edges``)
        and ``headline``: a flat dict of floats (units in the key names).
    """
    p = np.asarray(points_sensor, dtype=float)
    det = np.asarray(detected, dtype=bool) & np.all(np.isfinite(p), axis=-1)
    plane = fit_ground_plane(p, det, max_range_m=plane_max_range_m, rng=rng)
    road = ground_mask(p, det, plane, tol_m=ground_tol_m)
    rng_m = np.linalg.norm(p, axis=-1)
    cones = fit_ring_cones(p, det)
    radii = ground_ring_radii(p, road)
    noise = range_noise_by_range(rng_m, road, estimator=noise_estimator)
    offsets = ring_range_offsets(p, road, plane)
    slope = intensity_range_slope(rng_m, intensity, road, range_window_m=intensity_window_m)
    gain = ring_gain_spread(rng_m, intensity, road, slope=slope.slope if np.isfinite(slope.slope) else 0.0,
                            range_window_m=intensity_window_m)
    brdf = fit_road_brdf(slope, plane.height_m, full_scale=intensity_full_scale)
    misses = isolated_miss_fraction(det, road, np.where(det, rng_m, np.nan))
    edges = edge_points(rng_m, det)
    headline = {
        "sensor_height_m": plane.height_m,
        "plane_tilt_deg": float(np.degrees(plane.tilt_rad)),
        "noise_sigma_7_40m_mm": 1e3 * noise.headline_m,
        **{f"noise_sigma_{lo:g}_{hi:g}m_mm": 1e3 * s for lo, hi, s in zip(noise.edges_m[:-1], noise.edges_m[1:],
                                                                             noise.sigma_m)},
        "ring_to_ring_offset_cm": 1e2 * offsets.ring_to_ring_m,
        "ring_offset_spread_cm": 1e2 * offsets.spread_m,
        "ring_offset_p2p_cm": 1e2 * offsets.peak_to_peak_m,
        "intensity_loglog_slope": slope.slope,
        "ring_gain_spread_pct": 1e2 * gain.spread,
        "road_reflectivity": brdf.reflectivity,
        "road_roughness_deg": brdf.roughness_deg,
        "isolated_miss_pct": 1e2 * misses.fraction,
        **{f"isolated_miss_{lo:g}_{hi:g}m_pct": (1e2 * i / c if c else float("nan"))
           for lo, hi, i, c in zip(misses.edges_m[:-1], misses.edges_m[1:], misses.n_isolated_by_range,
                                   misses.n_candidates_by_range)},
        "edge_floating_pct": 1e2 * edges.fraction,
        "edge_floating_isolated_pct": 1e2 * edges.isolated_fraction,
        "edges_with_floating_pct": 1e2 * edges.edges_with_floating,
        "n_edges": float(edges.n_edges),
        "n_road_returns": float(road.sum()),
    }
    return {"plane": plane, "road": road, "range_m": rng_m, "cones": cones, "ring_radii_m": radii, "noise": noise,
            "offsets": offsets, "slope": slope, "brdf": brdf, "gain": gain, "misses": misses, "edges": edges,
            "headline": headline}

