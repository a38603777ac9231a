"""Lane paint against asphalt: how much brighter road markings are in real lidar sweeps and in hifi.

The quantity is the ratio of the median reported intensity of painted road markings to that
of the asphalt around them, per range bin: the unknown per-unit gain of a sensor's intensity
scale cancels in it, so a real sweep and a simulated one can be compared directly. Each
recording and its simulated counterpart goes through the same estimator:

1. Road: the plane of :func:`hifi.analysis.lidar_stats.fit_ground_plane` (RANSAC, 400
   hypotheses, then total least squares); road returns lie within :data:`ROAD_TOL_M` of it,
   :data:`RANGE_BAND_M` from the sensor, and farther than :data:`CLEARANCE_M` (horizontally)
   from any raised return (kerb faces, wheels: :data:`RAISED_M`).
2. Asphalt level: the running median of the road intensity along each ring over
   :data:`LEVEL_HALF_WIDTH` columns either side (:func:`asphalt_level`). It takes out what
   makes the asphalt's own intensity spread: per-laser gains (40 % spread on the nuScenes
   sweep), the fall with range and incidence, patches of different asphalt.
3. Paint: the returns whose contrast ``log(I / level)`` lies above Otsu's threshold
   (:func:`otsu_threshold`) of the road's contrasts; asphalt: the rest (:func:`separate`).
   Otsu on the raw intensity does not work on these sweeps: it puts 55 % (nuScenes) and 59 %
   (Ouster) of the road in the bright class (the asphalt's spread from gains and range is wider
   than its distance from the paint), where the contrast gives 3 % and 20 %, in lines (the
   bird's-eye figure, :func:`plot_bev`). Returns whose asphalt level is below
   :data:`LEVEL_MIN_CODE` are in neither class.
4. Per range bin (:data:`RANGE_EDGES_M`) and over the band: the median intensity of each class
   and their ratio (:func:`paint_statistics`).

Recordings (sources and licences: ``../shared/data/SOURCES.md``, ``tests/data/lidar/README.md``),
read with ``validation/lidar_real.py``'s readers:

- nuScenes LIDAR_TOP sweep, Velodyne HDL-32E at 20 Hz (``../shared/data/lidar/
  nuscenes_hdl32e_sweep.pcd.bin``, CC BY-NC-SA 4.0, read in place; ``HIFI_SHARED_DATA``
  overrides the folder): a street in Singapore, with an edge line along its left kerb and
  lane lines.
- Ouster OS1-128 capture, frame 0 (``tests/data/lidar/ouster_os1_128.pcap``, the same bytes as
  the shared copy; BSD-3-Clause): a crossing with a zebra crosswalk and two long lane lines.

Simulated: the same sensor at the height and tilt of the real road plane (``hdl32e`` at 20 Hz,
0.331776 deg steps, as ``lidar_real.py``; ``ouster`` from the capture's metadata, mounted by
``lidar_real.ouster_mount``), model defaults otherwise, over a road of the library's
``asphalt_worn`` (905 nm reflectance 0.278, Oren-Nayar roughness 11.1 deg: the values
``lidar_real.py`` fits to the nuScenes road) with stripes of ``road_paint_white`` (0.75,
Lambertian) 3 mm above it where the recording has its markings (:data:`NUSCENES_STRIPES`,
:data:`OUSTER_STRIPES`), and the nuScenes street's kerbs. The simulated datasets know which
object every return hit, so the simulated column also gives the ratio over the true classes
(``truth``), and :func:`lambertian_ratio` gives it in closed form.

    python validation/lane_paint.py [--json] [--markdown FILE] [--png FILE] [--bev FILE] [--no-sim]

The simulated column reflects the lidar models and the material library of the commit the
script runs on.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import lidar_real as lr  # noqa: E402
from hifi.analysis import lidar_stats as ls  # noqa: E402

#: Range band of the comparison [m] (3-D range from the sensor): inside 4 m the HDL-32E's
#: lowest rings see little road around the car; beyond 25 m its rings are metres apart and a
#: 15 cm line gives a handful of returns.
RANGE_BAND_M = (4.0, 25.0)
#: Range bins [m] of the table, wider with range as the HDL-32E's rings spread: on a flat road
#: 1.84 m below it 7, 4, 2, 2 and 2 of its rings (r = h / sin|elevation|, 32db.yaml elevations).
RANGE_EDGES_M = (4.0, 6.0, 8.0, 11.0, 15.0, 25.0)
#: Height band around the road plane [m]: road markings are a few mm thick (UK Specification for
#: the Reinstatement of Openings in Highways, S11: sprayed lines at least 0.8-1.5 mm, screed
#: thermoplastic 3.5 +- 1.5 mm), the range noise of both sensors on their roads 4-20 mm
#: (``lidar_real.md``); 5 cm keeps the road out to 25 m and drops the upper part of kerb faces.
ROAD_TOL_M = 0.05
#: Heights above the road plane of the "raised" returns the road keeps clear of [m]: kerb faces
#: and tops (0.06 m: above :data:`ROAD_TOL_M` and its noise), wheels, car bodies.
RAISED_M = (0.06, 2.0)
#: Horizontal clearance of a road return from the nearest raised return [m]: the foot of a kerb
#: face lies within 5 cm of the road plane and faces the sensor (bright), so the strip along it
#: is left out.
CLEARANCE_M = 0.3
#: Half-width of the running median along a ring [columns]: 25 columns are 8.3 deg of the
#: nuScenes sweep (1084 columns) and 8.8 deg of the Ouster (1024), 0.7-3.6 m of road along a ring
#: at 5-25 m: much longer than a line is wide, so the median stays on the asphalt.
LEVEL_HALF_WIDTH = 25
#: Fewest road cells in the window for a level [1].
LEVEL_MIN_CELLS = 10
#: Fewest returns of a class for a median in a bin [1].
MIN_POINTS = 5
#: A zero intensity code counts as half a code in the contrast (the quantisation's bound).
ZERO_CODE = 0.5
#: Lowest asphalt level [code] at which a return is classified: the intensity is an integer
#: code, so against a level of L codes the contrast moves in steps of 1 / L; at 1-2 codes (the
#: Ouster's asphalt 4-6 m out) one code of noise doubles it and passes any threshold found here
#: (x1.3-1.8), at 3 codes a step is 33 % of the level. Returns below it are in neither class.
LEVEL_MIN_CODE = 3.0
#: Bins of Otsu's histogram of the contrast.
OTSU_BINS = 256


# --------------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------------

class Road(NamedTuple):
    """Road returns of a scan grid (ring, column)."""

    plane: ls.Plane          #: fitted road plane
    mask: np.ndarray         #: (ring, column) bool: road returns in the band, clear of raised returns
    range_m: np.ndarray      #: (ring, column) range from the sensor [m] (NaN for misses)
    cos_incidence: np.ndarray  #: (ring, column) cosine of the incidence on the plane [1]


def road_returns(points_sensor, detected, *, band_m=RANGE_BAND_M, tol_m=ROAD_TOL_M, raised_m=RAISED_M,
                 clearance_m=CLEARANCE_M, roi_m=None) -> Road:
    """Returns on the road plane, within ``band_m`` [m] of the sensor, clear of raised returns.

    Parameters
    ----------
    points_sensor : (ring, column, 3) float
        Points in the sensor frame [m], NaN for misses.
    detected : (ring, column) bool
    band_m : (2,) float
        Range band [m].
    tol_m : float
        Largest distance from the plane [m].
    raised_m : (2,) float
        Heights above the plane [m] of the raised returns.
    clearance_m : float
        Road returns closer than this (horizontally, in the sensor's x-y) to a raised return are
        left out [m].
    roi_m : (4,) float, optional
        ``(x_min, x_max, y_min, y_max)`` [m], sensor frame: the road is taken inside it only.

    Returns
    -------
    Road
    """
    from scipy.spatial import cKDTree

    p = np.asarray(points_sensor, dtype=float)
    det = np.asarray(detected, dtype=bool) & np.all(np.isfinite(p), axis=-1)
    plane = ls.fit_ground_plane(p, det)
    with np.errstate(invalid="ignore"):
        h = ls.height_above_plane(p, plane)
        r = np.linalg.norm(p, axis=-1)
        cos_i = np.abs(h - plane.offset_m) / r          # |n . p| / |p|: p . n = h - offset
        road = det & (np.abs(h) < tol_m) & (r >= band_m[0]) & (r < band_m[1])
        raised = det & (h > raised_m[0]) & (h < raised_m[1])
        if roi_m is not None:
            x, y = p[..., 0], p[..., 1]
            road &= (x >= roi_m[0]) & (x <= roi_m[1]) & (y >= roi_m[2]) & (y <= roi_m[3])
    if raised.any() and road.any():
        dist, _ = cKDTree(p[raised][:, :2]).query(p[road][:, :2])
        keep = np.zeros_like(road)
        keep[road] = dist > clearance_m
        road = keep
    return Road(plane, road, np.where(det, r, np.nan), np.where(det, cos_i, np.nan))


def asphalt_level(intensity, road, *, half_width=LEVEL_HALF_WIDTH, min_cells=LEVEL_MIN_CELLS) -> np.ndarray:
    """Running median of the road intensity along each ring, (ring, column); NaN where fewer than
    ``min_cells`` road cells lie within ``half_width`` columns.

    The columns wrap around (a sweep is a full rotation). Where paint covers less than half of
    the window the median is the asphalt's.
    """
    x = np.where(np.asarray(road, dtype=bool), np.asarray(intensity, dtype=float), np.nan)
    w = int(half_width)
    padded = np.concatenate([x[:, -w:], x, x[:, :w]], axis=1)
    win = np.lib.stride_tricks.sliding_window_view(padded, 2 * w + 1, axis=1)     # (ring, column, 2w+1)
    n = np.sum(np.isfinite(win), axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)                         # all-NaN windows
        med = np.nanmedian(win, axis=-1)
    return np.where(n >= min_cells, med, np.nan)


def otsu_threshold(values, bins: int = OTSU_BINS) -> float:
    """Otsu's threshold of a sample: the cut that maximises the between-class variance.

    Parameters
    ----------
    values : array_like
        The sample (finite values).
    bins : int
        Histogram bins over the sample's range.

    Returns
    -------
    float
        The upper edge of the last bin of the lower class: values above it form the upper class.

    Notes
    -----
    N. Otsu, "A threshold selection method from gray-level histograms", IEEE Trans. Systems, Man
    and Cybernetics 9(1), 62-66 (1979): for a cut after bin k, ``sigma_B^2 = w0 w1 (mu0 -
    mu1)^2`` with the class weights w and means mu over the histogram; the threshold is the cut
    of largest sigma_B^2 (the first one where several tie, so a gap between two clusters gives its
    lower end).
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2 or np.ptp(v) == 0.0:
        return float("nan")
    hist, edges = np.histogram(v, bins=int(bins))
    centres = 0.5 * (edges[:-1] + edges[1:])
    w0 = np.cumsum(hist).astype(float)
    w1 = w0[-1] - w0
    s0 = np.cumsum(hist * centres)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu0 = s0 / w0
        mu1 = (s0[-1] - s0) / w1
    between = np.nan_to_num(w0 * w1 * (mu0 - mu1) ** 2)[:-1]
    return float(edges[int(np.argmax(between)) + 1])


class Separation(NamedTuple):
    """Paint and asphalt among the road returns."""

    paint: np.ndarray        #: (ring, column) bool
    asphalt: np.ndarray      #: (ring, column) bool
    contrast: np.ndarray     #: (ring, column) log(I / asphalt level), NaN off the road [1]
    threshold: float         #: Otsu's threshold of the contrast [1] (paint: above)


def separate(intensity, road, *, min_level=LEVEL_MIN_CODE, **level_kw) -> Separation:
    """Paint and asphalt by Otsu's threshold of the contrast against the local asphalt level.

    ``road``: the road mask (:func:`road_returns`); ``level_kw``: of :func:`asphalt_level`.
    Road returns without a level (too few road cells around) or with a level below
    ``min_level`` [code] (:data:`LEVEL_MIN_CODE`) are in neither class.
    """
    i = np.asarray(intensity, dtype=float)
    road = np.asarray(road, dtype=bool)
    level = asphalt_level(i, road, **level_kw)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.log(np.maximum(i, ZERO_CODE) / level)
        ok = road & np.isfinite(c) & (level >= min_level)
    c = np.where(ok, c, np.nan)
    t = otsu_threshold(c[ok])
    paint = ok & (c > t)
    return Separation(paint, ok & ~paint, c, t)


class PaintStats(NamedTuple):
    """Median intensity of paint and asphalt per range bin; the last entry is the whole band."""

    edges_m: np.ndarray          #: (bin + 1,) range bin edges [m]
    n_paint: np.ndarray          #: (bin + 1,) paint returns
    n_asphalt: np.ndarray        #: (bin + 1,) asphalt returns
    paint: np.ndarray            #: (bin + 1,) median paint intensity [sensor code]; NaN if too few
    asphalt: np.ndarray          #: (bin + 1,) median asphalt intensity [sensor code]
    ratio: np.ndarray            #: (bin + 1,) paint / asphalt [1]
    paired: np.ndarray           #: (bin + 1,) median over paint of intensity / local asphalt level [1]
    range_m: np.ndarray          #: (bin + 1,) median range of the paint returns [m]
    incidence_deg: np.ndarray    #: (bin + 1,) median incidence of the paint returns on the plane [deg]
    saturated: np.ndarray        #: (bin + 1,) fraction of paint returns at or above ``saturation_code``


def _bins(range_m, edges_m) -> list:
    """Masks of the range bins and, last, of the whole band."""
    r = np.asarray(range_m, dtype=float)
    e = np.asarray(edges_m, dtype=float)
    with np.errstate(invalid="ignore"):
        return [(r >= lo) & (r < hi) for lo, hi in zip(e[:-1], e[1:])] + [(r >= e[0]) & (r < e[-1])]


def paint_statistics(intensity, range_m, paint, asphalt, cos_incidence=None, contrast=None, *,
                     edges_m=RANGE_EDGES_M, min_points=MIN_POINTS, saturation_code=100.0) -> PaintStats:
    """Median intensity of the two classes and their ratio per range bin and over all bins.

    ``contrast``: log(I / local asphalt level) (:class:`Separation`), for ``paired``: the median
    over the paint of its intensity over the asphalt level of its own ring around it, which
    cancels the per-laser gains that a ratio of the two classes' medians keeps when they are
    seen by different lasers. ``saturation_code``: the top of a Velodyne's or Ouster's diffuse
    scale (100: HDL-32E and VLP-16 manuals, Ouster firmware user manual: 0..100 diffuse,
    101..255 retroreflective); the share of paint returns at or above it says whether a
    median is clipped.
    """
    i = np.asarray(intensity, dtype=float)
    r = np.asarray(range_m, dtype=float)
    cos_i = np.full(r.shape, np.nan) if cos_incidence is None else np.asarray(cos_incidence, dtype=float)
    c = np.full(r.shape, np.nan) if contrast is None else np.asarray(contrast, dtype=float)
    sel = _bins(r, edges_m)
    out = {k: np.full(len(sel), np.nan) for k in PaintStats._fields if k != "edges_m"}
    for b, s in enumerate(sel):                      # loop over bins, not points
        pa, asp = np.asarray(paint, bool) & s, np.asarray(asphalt, bool) & s
        out["n_paint"][b], out["n_asphalt"][b] = pa.sum(), asp.sum()
        if pa.sum() >= min_points and asp.sum() >= min_points:
            out["paint"][b], out["asphalt"][b] = np.median(i[pa]), np.median(i[asp])
            out["ratio"][b] = out["paint"][b] / out["asphalt"][b] if out["asphalt"][b] > 0 else np.nan
            out["paired"][b] = np.exp(np.median(c[pa]))
            out["range_m"][b] = np.median(r[pa])
            out["incidence_deg"][b] = np.degrees(np.arccos(np.clip(np.median(cos_i[pa]), 0.0, 1.0)))
            out["saturated"][b] = np.mean(i[pa] >= saturation_code)
    return PaintStats(np.asarray(edges_m, dtype=float), **out)


#: Resamples of :func:`ring_bootstrap` and the seed of its generator.
BOOTSTRAP_RESAMPLES = 400
BOOTSTRAP_SEED = 12


def ring_bootstrap(intensity, range_m, paint, asphalt, *, edges_m=RANGE_EDGES_M, min_points=MIN_POINTS,
                   n_resamples=BOOTSTRAP_RESAMPLES, rng=None) -> np.ndarray:
    """16th and 84th percentiles of the paint / asphalt ratio over resampled rings, (2, bin + 1).

    A cluster bootstrap (B. Efron and R. Tibshirani, "An introduction to the bootstrap", 1993,
    Sec. 8.5 on resampling the independent units): the rings are drawn with replacement, each
    with all its returns, because returns of one ring share its laser's gain (log-normal sigma
    0.45 on the nuScenes sweep) and are not independent. ``rng``: a numpy Generator (default:
    seeded with :data:`BOOTSTRAP_SEED`).
    """
    rng = np.random.default_rng(BOOTSTRAP_SEED) if rng is None else rng
    i = np.asarray(intensity, dtype=float)
    r = np.asarray(range_m, dtype=float)
    pa, asp = np.asarray(paint, bool), np.asarray(asphalt, bool)
    keep = pa | asp
    rings = [(i[k][keep[k]], r[k][keep[k]], pa[k][keep[k]]) for k in range(i.shape[0])]
    out = np.full((n_resamples, len(edges_m)), np.nan)
    for n in range(n_resamples):                     # loop over resamples, not points
        pick = rng.integers(0, len(rings), len(rings))
        ii, rr, pp = (np.concatenate([rings[k][j] for k in pick]) for j in range(3))
        for b, s in enumerate(_bins(rr, edges_m)):
            a_, p_ = ii[s & ~pp], ii[s & pp]
            if len(p_) >= min_points and len(a_) >= min_points and np.median(a_) > 0:
                out[n, b] = np.median(p_) / np.median(a_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)                         # bins never filled
        return np.nanpercentile(out, [16.0, 84.0], axis=0)


def lambertian_ratio(cos_incidence, *, paint_reflectivity, asphalt_reflectivity, asphalt_roughness_deg):
    """Paint / asphalt intensity ratio of a Lambertian paint on an Oren-Nayar asphalt, closed form.

    ``rho_p cos(i) / (rho_a (A cos(i) + B sin(i)^2))``, with ``A = 1 - 0.5 s^2 / (s^2 + 0.33)``,
    ``B = 0.45 s^2 / (s^2 + 0.09)``, s the roughness [rad] (Oren & Nayar 1994, Eq. 30, in the
    monostatic geometry of a lidar), for a sensor whose intensity is linear in the received
    power; written out here, not taken from :func:`sensors.radiometry.oren_nayar_backscatter`,
    so that it checks the simulation independently.
    """
    c = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    s2 = np.radians(float(asphalt_roughness_deg)) ** 2
    a, b = 1.0 - 0.5 * s2 / (s2 + 0.33), 0.45 * s2 / (s2 + 0.09)
    return paint_reflectivity * c / (asphalt_reflectivity * (a * c + b * (1.0 - c * c)))


def measure(grid, truth=None, *, roi_m=None, bootstrap=True) -> dict:
    """The estimator on one scan grid (``points_sensor``, ``intensity``, ``detected``).

    ``truth``: (ring, column) bool, the returns that hit paint (simulations only); adds
    ``truth``, the statistics over the true classes of the same road returns, and the
    separation's ``precision`` and ``recall`` against them. ``roi_m``: of :func:`road_returns`.
    ``bootstrap``: adds ``interval``, :func:`ring_bootstrap` of the ratio.
    """
    road = road_returns(grid["points_sensor"], grid["detected"], roi_m=roi_m)
    sep = separate(grid["intensity"], road.mask)
    i = np.asarray(grid["intensity"], dtype=float)
    out = {"road": road, "sep": sep, "intensity": i, "points_sensor": np.asarray(grid["points_sensor"], dtype=float),
           "stats": paint_statistics(i, road.range_m, sep.paint, sep.asphalt, road.cos_incidence, sep.contrast)}
    if bootstrap:
        out["interval"] = ring_bootstrap(i, road.range_m, sep.paint, sep.asphalt)
    if truth is not None:
        t = np.asarray(truth, dtype=bool)
        on = np.isfinite(sep.contrast)                # the road returns both classifications share
        out["truth"] = paint_statistics(i, road.range_m, on & t, on & ~t, road.cos_incidence, sep.contrast)
        out["truth_mask"] = on & t
        out["recall"] = float((sep.paint & t).sum() / max((on & t).sum(), 1))
        out["precision"] = float((sep.paint & t).sum() / max(sep.paint.sum(), 1))
    return out


# --------------------------------------------------------------------------------------------
# simulated counterparts
# --------------------------------------------------------------------------------------------

#: Library materials of the simulated road and its markings.
ASPHALT = "asphalt_worn"
PAINT = "road_paint_white"
#: Paint's height above the road surface in the simulation [m] (thermoplastic screed lines are
#: 3.5 +- 1.5 mm thick: UK Specification for the Reinstatement of Openings in Highways, S11).
PAINT_LIFT_M = 0.003

#: Markings of the simulated nuScenes street, in the sweep's sensor frame (x right, y forward):
#: (name, x at y = 0 [m], heading from +y toward -x [deg], width [m], length [m]). Measured from
#: the sweep's paint class (this script, :func:`separate`): the edge line along the left kerb
#: (x = -4.45 - 0.0975 y), a centre line through (-0.3, 5) and (-1.0, -7) and a lane line
#: through (2.3, -7.4) and (3.1, 6.2) (both x = x0 + 0.06 y), and a right lane line near x = 5.2.
#: Widths: 0.15 m, the common lane-line width (US MUTCD 2009, Section 3A.06: a normal line is 4 to
#: 6 in wide); continuous (dashes would change the counts, not the ratio).
NUSCENES_STRIPES = (
    ("edge_left", -4.45, 5.6, 0.15, 60.0),
    ("centre", -0.6, -3.4, 0.15, 60.0),
    ("lane_right", 2.75, -3.4, 0.15, 60.0),
    ("edge_right", 5.2, -3.4, 0.15, 60.0),
)
#: Kerbs of the nuScenes street: (name, x at y = 0 of the kerb face [m], heading [deg], side):
#: the sweep's road ends at a kerb on either side, its sidewalk 0.2 m above the road (measured
#: from the sweep's returns 0.15-0.3 m above the plane beyond x = -5.3 and x = 6.7).
NUSCENES_KERBS = (("kerb_left", -5.3, 5.6, -1), ("kerb_right", 6.7, -3.4, 1))
KERB_HEIGHT_M = 0.2
KERB_WIDTH_M = 4.0

#: Markings of the simulated Ouster crossing, in the capture's lidar frame (x, y as the capture's
#: points): (name, start (x, y) [m], end (x, y) [m], width [m]). Measured from frame 0's paint
#: class (this script): seven crosswalk bars along x from -9.5 to -2 m, 0.6 m wide (5-95 %
#: spread of their points 0.50-0.58 m = 0.9 of the width of a uniform bar), centres at the
#: measured y; two lane lines, y = -2.56 + 0.062 x and y = -6.07 + 0.019 x, 0.3 m wide (spread
#: 0.27 m).
OUSTER_STRIPES = (
    *((f"bar_{k}", (-9.5, y), (-2.0, y), 0.6) for k, y in
      enumerate((-6.76, -5.42, -3.96, -2.48, -0.76, 0.62, 1.88))),
    ("lane_a", (3.0, -2.56 + 0.062 * 3.0), (22.0, -2.56 + 0.062 * 22.0), 0.3),
    ("lane_b", (1.0, -6.07 + 0.019 * 1.0), (22.0, -6.07 + 0.019 * 22.0), 0.3),
)


#: Region of the Ouster comparison in the capture's lidar frame, (x_min, x_max, y_min, y_max) [m]:
#: the carriageway with the crosswalk and the lane lines. Beyond y = 3 m, at x < -12 m, the road
#: has arcs along single rings 3-5 times brighter than the rings' asphalt 14-25 m out (a
#: different surface or a ring artefact: no line, no shape of a marking), which Otsu's threshold
#: took for paint (104 of 127 bright returns at 15-25 m without the region).
OUSTER_ROI_M = (-25.0, 25.0, -8.5, 3.0)


def _stripe(name, centre_xy, heading_deg, width_m, length_m, material=PAINT, z_m=PAINT_LIFT_M) -> dict:
    """A flat stripe (``plane`` mesh, long along its y) centred at ``centre_xy`` [m], turned by
    ``heading_deg`` about z."""
    return {"name": name, "mesh": "plane", "size_m": [float(width_m), float(length_m)], "material": material,
            "position_m": [float(centre_xy[0]), float(centre_xy[1]), float(z_m)],
            "rpy_deg": [0.0, 0.0, float(heading_deg)]}


def nuscenes_scene(plane: ls.Plane) -> dict:
    """The simulated nuScenes street: ``hdl32e`` at 20 Hz at the height and tilt of ``plane``
    (the real sweep's road), road, stripes and kerbs as the module docstring says."""
    from scipy.spatial.transform import Rotation
    objects = [{"name": "road", "mesh": "plane", "size_m": [240, 240], "material": ASPHALT}]
    for name, x0, heading, width, length in NUSCENES_STRIPES:
        objects.append(_stripe(name, (x0, 0.0), heading, width, length))
    for name, x0, heading, side in NUSCENES_KERBS:
        # the kerb face at x0, the sidewalk box beyond it
        c = np.array([x0 + side * KERB_WIDTH_M / 2.0, 0.0])
        objects.append({"name": name, "mesh": "box", "size_m": [KERB_WIDTH_M, 60.0, KERB_HEIGHT_M],
                        "material": "concrete", "position_m": [float(c[0]), 0.0, KERB_HEIGHT_M / 2.0],
                        "rpy_deg": [0.0, 0.0, float(heading)]})
    # tilt: the mount rotation takes the fitted plane's normal (sensor frame) to the scene's up, as
    # lidar_real.ouster_mount does
    q, _ = Rotation.align_vectors([[0.0, 0.0, 1.0]], [np.asarray(plane.normal, dtype=float)])
    sensor = {"name": "lidar", "model": "hdl32e", "rate_hz": 20.0, "position_m": [0.0, 0.0, float(plane.height_m)],
              "rpy_deg": [float(v) for v in q.as_euler("xyz", degrees=True)],
              "params": {"azimuth_step_deg": 0.331776}}
    return {"simulation": {"duration_s": 0.05, "seed": 12}, "objects": objects, "sensors": [sensor]}


def _ouster_lidar_to_scene(meta: dict, height_m: float, rpy_deg):
    """Function taking (n, 3) points of the capture's lidar frame to the simulated scene frame
    (the mount of ``lidar_real.ouster_mount``; the metadata's ``lidar_to_sensor_transform``,
    translation in mm)."""
    from scipy.spatial.transform import Rotation
    t = np.asarray(meta["lidar_to_sensor_transform"], dtype=float).reshape(4, 4)
    rot, trans = t[:3, :3], t[:3, 3] / 1e3
    q = Rotation.from_euler("xyz", rpy_deg, degrees=True)
    return lambda p: q.apply(np.asarray(p, dtype=float) @ rot.T + trans) + np.array([0.0, 0.0, height_m])


def ouster_scene(plane: ls.Plane, meta_path=lr.OUSTER_JSON) -> dict:
    """The simulated Ouster crossing: ``ouster`` from the capture's metadata, mounted at the real
    road plane's height and tilt (``lidar_real.ouster_mount``), road and :data:`OUSTER_STRIPES`."""
    meta = json.loads(Path(meta_path).read_text())
    height, rpy = lr.ouster_mount(plane, meta)
    to_scene = _ouster_lidar_to_scene(meta, height, rpy)
    objects = [{"name": "road", "mesh": "plane", "size_m": [240, 240], "material": ASPHALT}]
    for name, a, b, width in OUSTER_STRIPES:
        ends = to_scene(np.array([[a[0], a[1], -plane.height_m], [b[0], b[1], -plane.height_m]]))
        d = ends[1, :2] - ends[0, :2]
        heading = np.degrees(np.arctan2(-d[0], d[1]))           # the stripe's y axis along d
        objects.append(_stripe(name, 0.5 * (ends[0, :2] + ends[1, :2]), heading, width, np.hypot(*d)))
    sensor = {"name": "lidar", "model": "ouster", "position_m": [0.0, 0.0, float(height)],
              "rpy_deg": [float(v) for v in rpy], "params": {"metadata_file": str(meta_path)}}
    return {"simulation": {"duration_s": 0.1, "seed": 12}, "objects": objects, "sensors": [sensor]}


def _paint_ids(ds) -> np.ndarray:
    """Indices of the objects of the paint's class (``lane_marking``, the library entry's)."""
    from hifi.materials import LIBRARY
    return np.flatnonzero(np.asarray(ds["object_class"].values).astype(str) == LIBRARY[PAINT].class_name)


def simulate_nuscenes(plane: ls.Plane) -> tuple:
    """(grid, truth) of one simulated nuScenes sweep (``lidar_real.sim_grid``'s layout)."""
    import hifi
    ds = hifi.Simulation.from_dict(nuscenes_scene(plane)).run(out=None)["lidar"]
    grid = lr.sim_grid(ds)
    f = ds.isel(frame=0)
    order = np.argsort(f["laser_elevation"].values)
    truth = np.isin(f["object_id"].values.T[order], _paint_ids(ds))
    return grid, truth


def simulate_ouster(plane: ls.Plane, meta_path=lr.OUSTER_JSON) -> tuple:
    """(grid, truth) of one simulated Ouster frame in the capture's lidar frame
    (``lidar_real.ouster_sim_grid``'s layout)."""
    import hifi
    ds = hifi.Simulation.from_dict(ouster_scene(plane, meta_path)).run(out=None)["lidar"]
    grid = lr.ouster_sim_grid(ds, json.loads(Path(meta_path).read_text()))
    truth = np.isin(ds.isel(frame=0)["object_id"].values.T, _paint_ids(ds))
    return grid, truth


# --------------------------------------------------------------------------------------------
# the comparison
# --------------------------------------------------------------------------------------------

def library_values() -> dict:
    """Reflectances (905 nm and 865 nm) and roughness of the simulated asphalt and paint."""
    from hifi.materials import LIBRARY
    a, p = LIBRARY[ASPHALT], LIBRARY[PAINT]
    return {"asphalt_905": a.lidar[1], "asphalt_865": a.lidar[0], "paint_905": p.lidar[1], "paint_865": p.lidar[0],
            "asphalt_roughness_deg": a.roughness_deg, "paint_roughness_deg": p.roughness_deg}


def run(*, sim: bool = True, nuscenes_path=None) -> dict:
    """Measure both recordings and, with ``sim``, their simulated counterparts.

    Returns ``{"nuscenes": {"real": m, "sim": m or None, "file": str} or None, "ouster": {...}}``
    with the dicts of :func:`measure`; ``nuscenes`` is None when the sweep is absent.
    """
    out = {}
    path = Path(nuscenes_path) if nuscenes_path else lr.shared_data_dir() / lr.NUSCENES_FILE
    if path.is_file():
        real = measure(lr.nuscenes_grid(path))
        out["nuscenes"] = {"real": real, "sim": measure(*simulate_nuscenes(real["road"].plane)) if sim else None,
                           "file": str(path), "wavelength": "905"}
    else:
        out["nuscenes"] = None
        print(f"nuScenes sweep not found: {path} (set HIFI_SHARED_DATA)", file=sys.stderr)
    real = measure(lr.ouster_grid(0), roi_m=OUSTER_ROI_M)
    out["ouster"] = {"real": real,
                     "sim": measure(*simulate_ouster(real["road"].plane), roi_m=OUSTER_ROI_M) if sim else None,
                     "file": str(lr.OUSTER_PCAP), "wavelength": "865"}
    return out


def closed_form(stats: PaintStats, wavelength: str) -> np.ndarray:
    """:func:`lambertian_ratio` of the library's paint and asphalt at each bin's median incidence."""
    lib = library_values()
    return lambertian_ratio(np.cos(np.radians(stats.incidence_deg)), paint_reflectivity=lib[f"paint_{wavelength}"],
                            asphalt_reflectivity=lib[f"asphalt_{wavelength}"],
                            asphalt_roughness_deg=lib["asphalt_roughness_deg"])


def _labels(stats: PaintStats) -> list:
    e = stats.edges_m
    return [f"{lo:g}-{hi:g} m" for lo, hi in zip(e[:-1], e[1:])] + [f"all {e[0]:g}-{e[-1]:g} m"]


def table_rows(rec: dict) -> list:
    """Rows of one recording: per bin and over the band, the asphalt and paint medians, their
    ratio (with the 68 % ring-bootstrap interval), the paired ratio and the counts; columns real,
    sim, sim / real, sim over the true classes, closed form."""
    real, sim = rec["real"], rec["sim"]
    cf = closed_form(sim["stats"], rec["wavelength"]) if sim is not None else None
    rows = []
    for b, label in enumerate(_labels(real["stats"])):
        for q, key in (("asphalt median", "asphalt"), ("paint median", "paint"), ("paint / asphalt", "ratio"),
                       ("paint / own ring's asphalt", "paired")):
            rv = float(real["stats"]._asdict()[key][b])
            sv = None if sim is None else float(sim["stats"]._asdict()[key][b])
            tv = None if sim is None else float(sim["truth"]._asdict()[key][b])
            row = {"bin": label, "quantity": q, "real": rv, "sim": sv, "ratio": lr.ratio(rv, sv), "truth": tv,
                   "closed_form": float(cf[b]) if (cf is not None and key in ("ratio", "paired")) else None}
            if key == "ratio":
                row["real_interval"] = tuple(float(x) for x in real["interval"][:, b]) if "interval" in real else None
                row["sim_interval"] = (tuple(float(x) for x in sim["interval"][:, b])
                                       if sim is not None and "interval" in sim else None)
            rows.append(row)
        rows.append({"bin": label, "quantity": "paint / asphalt returns", "real": _count(real["stats"], b),
                     "sim": None if sim is None else _count(sim["stats"], b), "ratio": float("nan"),
                     "truth": None if sim is None else _count(sim["truth"], b), "closed_form": None})
    return rows


def _count(s: PaintStats, b: int) -> str:
    return f"{int(s.n_paint[b])} / {int(s.n_asphalt[b])}"


def _fmt(v, nd=3):
    if isinstance(v, str):
        return v
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.{nd}g}"


def _cell(row, key) -> str:
    """A value with its interval, ``2.5 (2.1-2.9)``, where it has one."""
    iv = row.get(f"{key}_interval")
    if iv is None or not np.all(np.isfinite(iv)) or row[key] is None:
        return _fmt(row[key])
    return f"{_fmt(row[key])} ({_fmt(iv[0], 2)}-{_fmt(iv[1], 2)})"


def markdown_table(rec: dict, title: str) -> str:
    lines = [f"| {title} | quantity | real | hifi sim | sim / real | sim, true classes | Lambertian closed form |",
             "|---|---|---|---|---|---|---|"]
    for r in table_rows(rec):
        q = f"**{r['quantity']}**" if r["quantity"] == "paint / asphalt" else r["quantity"]
        lines.append(f"| {r['bin']} | {q} | {_cell(r, 'real')} | {_cell(r, 'sim')} | {_fmt(r['ratio'], 2)} | "
                     f"{_fmt(r['truth'])} | {_fmt(r['closed_form'])} |")
    return "\n".join(lines)


def reconciling_exponent(real_ratio, sim_ratio) -> np.ndarray:
    """The response exponent gamma that would turn the simulated ratio into the real one,
    ``log(real) / log(sim)`` (an intensity code ``~ rho^gamma`` raises a ratio to the power
    gamma); NaN where the simulated ratio is not above 1. One gamma for every bin would point
    to the intensity scale; a gamma that changes with range cannot be the scale."""
    rv, sv = np.asarray(real_ratio, dtype=float), np.asarray(sim_ratio, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sv > 1.0, np.log(rv) / np.log(sv), np.nan)


def summary_rows(res: dict) -> list:
    """(label, real, sim) of the separation: threshold, paint share, codes at the top of the
    diffuse scale, precision and recall against the simulation's true classes, and the
    reconciling exponent per bin (text)."""
    rows = []
    for key, name in (("nuscenes", "nuScenes HDL-32E"), ("ouster", "Ouster OS1-128")):
        rec = res.get(key)
        if not rec:
            continue
        real, sim = rec["real"], rec["sim"]

        def share(m):
            return 100.0 * m["sep"].paint.sum() / max(int(np.isfinite(m["sep"].contrast).sum()), 1)

        rows += [
            (f"{name}: Otsu threshold, paint above x times the local asphalt level",
             float(np.exp(real["sep"].threshold)), None if sim is None else float(np.exp(sim["sep"].threshold))),
            (f"{name}: paint share of the road returns [%]", share(real), None if sim is None else share(sim)),
            (f"{name}: paint returns at or above code 100 (top of the diffuse scale) [%]",
             100.0 * float(real["stats"].saturated[-1]),
             None if sim is None else 100.0 * float(sim["stats"].saturated[-1])),
        ]
        if sim is not None:
            g = reconciling_exponent(real["stats"].ratio, sim["truth"].ratio)
            rows += [(f"{name}: sim separation against the true classes, precision [%]", None,
                      100.0 * sim["precision"]),
                     (f"{name}: sim separation against the true classes, recall [%]", None, 100.0 * sim["recall"]),
                     (f"{name}: exponent that would turn sim (true classes) into real, per bin "
                      f"({', '.join(_labels(real['stats'])[:-1])})", None,
                      ", ".join(_fmt(x, 2) for x in g[:-1]))]
    return rows


def headline_json(res: dict) -> dict:
    out = {}
    for key, rec in res.items():
        if rec is None:
            out[key] = None
            continue
        out[key] = {kind: (None if rec[kind] is None else
                           {k: [float(x) for x in np.asarray(v)] for k, v in rec[kind]["stats"]._asdict().items()})
                    for kind in ("real", "sim")}
        for kind in ("real", "sim"):
            if rec[kind] is not None and "interval" in rec[kind]:
                out[key][kind]["ratio_interval_16_84"] = [[float(x) for x in row] for row in rec[kind]["interval"]]
        if rec["sim"] is not None:
            out[key]["sim_truth"] = {k: [float(x) for x in np.asarray(v)]
                                     for k, v in rec["sim"]["truth"]._asdict().items()}
        out[key]["file"] = rec["file"]
    return out


# --------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------

_VIEWS = {"nuscenes": ((-9.0, 9.0), (-25.0, 25.0), "nuScenes HDL-32E"),
          "ouster": ((-25.0, 25.0), (-14.0, 10.0), "Ouster OS1-128 (lidar frame)")}


def _bev_panels(fig, axes, m, view, kind) -> None:
    """Three bird's-eye panels of one grid: the road's intensity, its intensity over the local
    asphalt level, and the two classes."""
    import matplotlib
    xl, yl, title = view
    p, sep, i = m["points_sensor"], m["sep"], m["intensity"]
    on = np.isfinite(sep.contrast)
    for ax, val, norm, label in ((axes[0], np.maximum(i, ZERO_CODE), matplotlib.colors.LogNorm(1.0, 100.0),
                                  "intensity [code]"),
                                 (axes[1], np.exp(sep.contrast), matplotlib.colors.LogNorm(0.3, 10.0),
                                  "intensity / local asphalt level")):
        o = np.argsort(val[on])
        sc = ax.scatter(p[on][o, 0], p[on][o, 1], c=val[on][o], s=2, cmap="magma", norm=norm, rasterized=True)
        fig.colorbar(sc, ax=ax, shrink=0.6, label=label)
    axes[2].scatter(p[sep.asphalt][:, 0], p[sep.asphalt][:, 1], s=1, c="0.8", rasterized=True, label="asphalt")
    axes[2].scatter(p[sep.paint][:, 0], p[sep.paint][:, 1], s=3, c="C3", rasterized=True,
                    label=f"paint (above x{np.exp(sep.threshold):.2f})")
    axes[2].legend(fontsize=7, loc="lower right", markerscale=4)
    for ax, t in zip(axes, ("intensity", "over asphalt level", "Otsu classes")):
        ax.set(xlim=xl, ylim=yl, aspect="equal", xlabel="x [m]", ylabel="y [m]", title=f"{title} {kind}:\n{t}")
        ax.title.set_fontsize(9)
        ax.grid(True, alpha=0.3)


def plot_bev(res: dict, out) -> None:
    """Bird's-eye view of the road returns (the band, clear of raised returns): their intensity,
    their intensity over the local asphalt level and the Otsu classes, real and simulated. The
    nuScenes street runs along y (one row of six panels), the Ouster crossing along x (a row of
    three for each)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = [k for k in ("nuscenes", "ouster") if res.get(k)]
    heights = {"nuscenes": 9.0, "ouster": 7.0}
    fig = plt.figure(figsize=(20.0, sum(heights[k] for k in keys)), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(len(keys), 1, height_ratios=[heights[k] for k in keys]))
    for sub, key in zip(subs, keys):
        kinds = [k for k in ("real", "sim") if res[key][k] is not None]
        if key == "nuscenes":
            axes = sub.subplots(1, 3 * len(kinds)).reshape(len(kinds), 3)
        else:
            axes = sub.subplots(len(kinds), 3, squeeze=False)
        for row, kind in enumerate(kinds):
            _bev_panels(sub, axes[row], res[key][kind], _VIEWS[key], "real" if kind == "real" else "hifi sim")
    fig.savefig(out, dpi=48)
    plt.close(fig)


def plot(res: dict, out) -> None:
    """Real beside simulated: histograms of the road intensity by class, and paint / asphalt
    against range (68 % ring-bootstrap intervals) with the closed form of a Lambertian paint."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter
    keys = [k for k in ("nuscenes", "ouster") if res.get(k)]
    fig, ax = plt.subplots(len(keys), 2, figsize=(13, 4.8 * len(keys)), squeeze=False, constrained_layout=True)
    # whole codes, merged into about 40 logarithmic bins: the codes are integers
    edges = np.unique(np.round(np.geomspace(1.0, 256.0, 40))) - 0.5
    for row, key in enumerate(keys):
        rec, title = res[key], _VIEWS[key][2]
        a = ax[row, 0]
        for kind, ls_, lab in (("real", "-", "real"), ("sim", "--", "hifi sim")):
            m = rec[kind]
            if m is None:
                continue
            i = m["intensity"]
            for cls, col in (("asphalt", "0.3"), ("paint", "C3")):
                sel = getattr(m["sep"], cls)
                if sel.any():
                    a.hist(i[sel], bins=edges, histtype="step", ls=ls_, color=col, density=True,
                           label=f"{lab} {cls}: median {np.median(i[sel]):.0f}, {sel.sum()} returns")
        a.set(xscale="log", yscale="log", xlabel="reported intensity [code]", ylabel="density [1 / code]",
              title=f"{title}: road returns {RANGE_BAND_M[0]:g}-{RANGE_BAND_M[1]:g} m by class")
        a.xaxis.set_major_formatter(ScalarFormatter())
        a.legend(fontsize=8)
        b = ax[row, 1]
        for kind, st, lab in (("real", "o-", "real"), ("sim", "s--", "hifi sim (Otsu classes)")):
            m = rec[kind]
            if m is None:
                continue
            s = m["stats"]
            iv = m.get("interval")
            yerr = None if iv is None else np.abs(iv[:, :-1] - s.ratio[:-1])
            b.errorbar(s.range_m[:-1], s.ratio[:-1], yerr=yerr, fmt=st, capsize=3, label=lab)
        if rec["sim"] is not None:
            t = rec["sim"]["truth"]
            b.plot(t.range_m[:-1], t.ratio[:-1], "^:", label="hifi sim (true classes)")
            r = np.linspace(RANGE_BAND_M[0], RANGE_BAND_M[1], 100)
            h = rec["real"]["road"].plane.height_m
            b.plot(r, lambertian_ratio(h / r, **_cf_kw(rec["wavelength"])), "k-", lw=0.8,
                   label="Lambertian paint / Oren-Nayar asphalt (closed form)")
        b.set(xlabel="range [m]", ylabel="median paint / median asphalt", yscale="log",
              title=f"{title}: paint / asphalt against range")
        b.yaxis.set_major_formatter(ScalarFormatter())
        b.yaxis.set_minor_formatter(ScalarFormatter())
        b.axhline(1.0, color="0.5", lw=0.5)
        b.grid(True, which="both", alpha=0.3)
        b.legend(fontsize=8)
    fig.savefig(out, dpi=80)
    plt.close(fig)


def _cf_kw(wavelength: str) -> dict:
    lib = library_values()
    return {"paint_reflectivity": lib[f"paint_{wavelength}"], "asphalt_reflectivity": lib[f"asphalt_{wavelength}"],
            "asphalt_roughness_deg": lib["asphalt_roughness_deg"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="write the tables as Markdown")
    ap.add_argument("--png", metavar="FILE", default=str(HERE / "lane_paint.png"), help="figure (default: %(default)s)")
    ap.add_argument("--bev", metavar="FILE", default=str(HERE / "lane_paint_bev.png"),
                    help="bird's-eye figure (default: %(default)s)")
    ap.add_argument("--no-sim", action="store_true", help="measure the recordings only")
    args = ap.parse_args(argv)
    res = run(sim=not args.no_sim)
    titles = {"nuscenes": "nuScenes HDL-32E", "ouster": "Ouster OS1-128"}
    if args.json:
        print(json.dumps(headline_json(res), indent=1))
    else:
        for key, title in titles.items():
            if not res.get(key):
                continue
            print(f"{title:16s} {'quantity':27s} {'real':>17s} {'sim':>17s} {'sim/real':>8s} {'sim truth':>12s} "
                  f"{'closed form':>11s}")
            for r in table_rows(res[key]):
                print(f"{r['bin']:16s} {r['quantity']:27s} {_cell(r, 'real'):>17s} {_cell(r, 'sim'):>17s} "
                      f"{_fmt(r['ratio'], 2):>8s} {_fmt(r['truth']):>12s} {_fmt(r['closed_form']):>11s}")
            print()
        for label, real, simv in summary_rows(res):
            print(f"{label:88s} {_fmt(real):>8s} {_fmt(simv):>8s}")
    if args.markdown:
        parts = [markdown_table(res[k], titles[k]) for k in titles if res.get(k)]
        summ = ["| separation | real | hifi sim |", "|---|---|---|"] + [
            f"| {label} | {_fmt(real)} | {_fmt(simv)} |" for label, real, simv in summary_rows(res)]
        Path(args.markdown).write_text("\n\n".join(parts + ["\n".join(summ)]) + "\n")
    if args.png:
        plot(res, args.png)
    if args.bev:
        plot_bev(res, args.bev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
