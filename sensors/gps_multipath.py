"""Specular multipath off the scene's planar facets, for the GNSS receivers (:mod:`sensors.gps`).

Plain functions over arrays: the image method in an infinite plane (:func:`image_reflection`),
and the search of a blocked satellite's shortest valid reflection off facets near the antenna
with the scene's ray caster (:func:`find_reflections`, its candidate facets found by a fan of
rays, :func:`fibonacci_directions`).  :class:`sensors.gps.GpsL1` calls them for the satellites
whose direct path the scene blocks; its ``multipath_error`` is the excess path found here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Tolerance on the reflection point [m]: the first surface along the antenna -> reflection
#: point ray must lie within this of the plane, and the ray back to the satellite leaves from
#: this far off the plane.  Embree works in float32 (ulp 8 um at 100 m), so 1 cm is safe for
#: scenes of a few km.
REFLECTION_POINT_TOL_M = 1e-2

#: The surface found at the reflection point must be parallel to the candidate plane within
#: this cosine (about 0.8 deg).
REFLECTION_NORMAL_COS_TOL = 0.9999

#: Quantisation of a facet's unit normal [1] and plane offset [m] when facets found by the fan
#: are merged into distinct candidate planes (coplanar facets of one object are one plane).
PLANE_NORMAL_QUANTUM = 1e-6
PLANE_OFFSET_QUANTUM_M = 1e-4


def fibonacci_directions(n: int) -> np.ndarray:
    """``n`` unit vectors spread nearly uniformly over the sphere (Fibonacci lattice).

    Parameters
    ----------
    n : int
        Number of directions.

    Returns
    -------
    numpy.ndarray, shape (n, 3)
        Unit vectors [1]; neighbours are about ``sqrt(4 pi / n)`` rad apart.

    References
    ----------
    .. [1] A. Gonzalez, "Measurement of areas on a sphere using Fibonacci and latitude-longitude
       lattices", Mathematical Geosciences 42, 49-64, 2010.
    """
    i = np.arange(n, dtype=float) + 0.5
    z = 1.0 - 2.0 * i / n
    r = np.sqrt(np.maximum(1.0 - z * z, 0.0))
    phi = np.pi * (3.0 - np.sqrt(5.0)) * i
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=-1)


class Reflection(NamedTuple):
    """Specular reflection of a point source in a plane (image method).

    Attributes
    ----------
    point : numpy.ndarray, shape (n, 3)
        Specular point on the plane [m]; NaN where there is no reflection.
    excess_m : numpy.ndarray, shape (n,)
        Reflected path length minus direct path length [m]; NaN where there is no reflection.
    valid : numpy.ndarray of bool, shape (n,)
        The source and the antenna are on the front side of the plane.
    """

    point: np.ndarray
    excess_m: np.ndarray
    valid: np.ndarray


def image_reflection(antenna, source, plane_point, plane_normal) -> Reflection:
    """Specular point and excess path of a reflection in an infinite plane.

    Parameters
    ----------
    antenna : array_like, shape (n, 3)
        Receiving antenna A [m].
    source : array_like, shape (n, 3)
        Transmitter X (the satellite) [m], same frame.
    plane_point : array_like, shape (n, 3)
        Any point P of the plane [m].
    plane_normal : array_like, shape (n, 3)
        Unit normal n of the plane, either orientation [1].

    Returns
    -------
    Reflection

    Notes
    -----
    Image method (e.g. Rappaport, "Wireless Communications", 2nd ed., sec. 4.6; Born & Wolf,
    specular reflection): with n turned toward the antenna and h = (A - P) . n > 0 the antenna's
    height over the plane, the image of the antenna is A' = A - 2 h n.  The reflected path
    X -> S -> A has the length ``|X - A'|`` and its specular point S is where the segment X A'
    crosses the plane: S = A' + s (X - A'), s = h / ((X - P) . n + h).  A reflection exists
    when both X and A are in front of the plane, (X - P) . n > 0 and h > 0.  With D = X - A,
    ``|X - A'|^2 - |X - A|^2 = 4 h ((X - P) . n)``, so the excess path is evaluated without
    cancellation as::

        excess = 4 h ((X - P) . n) / (|D + 2 h n| + |D|).

    For a distant source in the unit direction u this tends to 2 h (n . u): 2 h sin(el) for the
    ground under an antenna at height h, 2 d cos(el) cos(az - az_n) for a vertical wall at
    distance d whose normal points to azimuth az_n.  Exact for a point source and an infinite
    plane; whether S lies on a real facet and both legs are free is checked by the caller.
    """
    a = np.asarray(antenna, dtype=float)
    x = np.asarray(source, dtype=float)
    p = np.asarray(plane_point, dtype=float)
    n = np.asarray(plane_normal, dtype=float)
    h = np.einsum("ij,ij->i", a - p, n)
    n = np.where((h < 0)[:, None], -n, n)
    h = np.abs(h)
    front = np.einsum("ij,ij->i", x - p, n)
    valid = (h > 0) & (front > 0)
    d = x - a
    image_leg = d + 2.0 * h[:, None] * n
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = 4.0 * h * front / (np.linalg.norm(image_leg, axis=1) + np.linalg.norm(d, axis=1))
        s = h / (front + h)
        point = (a - 2.0 * h[:, None] * n) + s[:, None] * image_leg
    excess = np.where(valid, excess, np.nan)
    point = np.where(valid[:, None], point, np.nan)
    return Reflection(point, excess, valid)


def unit_vectors(v):
    """``v`` scaled to unit length along its last axis [1]; a zero vector stays zero."""
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


def _ragged_pairs(group_of_a, group_of_b, n_groups):
    """All pairs (i, j) with ``group_of_a[i] == group_of_b[j]``, vectorised.

    Returns index arrays into a and into b.
    """
    order_b = np.argsort(group_of_b, kind="stable")
    counts = np.bincount(group_of_b, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    cnt = counts[group_of_a]
    ia = np.repeat(np.arange(group_of_a.size), cnt)
    offs = np.arange(ia.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    ib = order_b[np.repeat(start[group_of_a], cnt) + offs]
    return ia, ib


class Multipath(NamedTuple):
    """Reflected paths of blocked satellites (one per (epoch, sv); NaN / -1 where none)."""

    excess_m: np.ndarray          # (n_epoch, n_sv)
    point_scene: np.ndarray       # (n_epoch, n_sv, 3)
    object_id: np.ndarray         # (n_epoch, n_sv) int32


def find_reflections(caster, antenna_scene, times_s, sv_scene, blocked, *, search_radius_m,
                     fan_directions) -> Multipath:
    """Shortest valid specular reflection of each blocked satellite off planar facets nearby.

    Parameters
    ----------
    caster : hifi.caster.RayCaster
        Scene caster (:meth:`~hifi.caster.RayCaster.nearest`: first surface of any material).
    antenna_scene : numpy.ndarray, shape (n_epoch, 3)
        Antenna positions, scene frame [m].
    times_s : numpy.ndarray, shape (n_epoch,)
        Simulated times of the epochs [s] (poses of moving objects).
    sv_scene : numpy.ndarray, shape (n_epoch, n_sv, 3)
        Satellite positions in the scene frame [m].
    blocked : numpy.ndarray of bool, shape (n_epoch, n_sv)
        Satellites whose direct path is blocked (the ones to search a reflection for).
    search_radius_m : float
        Reflectors and specular points farther than this from the antenna are ignored [m].
    fan_directions : numpy.ndarray, shape (n_fan, 3)
        Unit directions of the fan of rays cast to find candidate facets.

    Returns
    -------
    Multipath

    Notes
    -----
    1. At each epoch with a blocked satellite, the fan is cast from the antenna up to
       ``search_radius_m``; each facet hit gives a candidate plane (its hit point and unit
       normal); coplanar facets of one object are merged.  A facet narrower than the fan's
       angular spacing seen from the antenna can be missed.
    2. For every (blocked satellite, candidate plane) of the same epoch,
       :func:`image_reflection` gives the specular point S and the excess path.
    3. The reflection is valid when S is within ``search_radius_m`` of the antenna, the first
       surface on the ray antenna -> S lies at S within :data:`REFLECTION_POINT_TOL_M` and is
       parallel to the plane (so S is on a real facet and the leg is free), and the ray from S
       toward the satellite hits nothing (the leg to the satellite is free).
    4. Of the valid reflections of a satellite the shortest (smallest excess) is kept: the
       receiver is taken to track the earliest reflected replica.  Only single reflections are
       modelled; diffraction and the reflection's power are not.
    """
    n_epoch, n_sv = blocked.shape
    out_excess = np.full((n_epoch, n_sv), np.nan)
    out_point = np.full((n_epoch, n_sv, 3), np.nan)
    out_obj = np.full((n_epoch, n_sv), -1, dtype=np.int32)
    if search_radius_m <= 0 or not blocked.any():
        return Multipath(out_excess, out_point, out_obj)
    # 1. fan from the antenna at the epochs that need it
    ep = np.flatnonzero(blocked.any(axis=1))
    n_fan = fan_directions.shape[0]
    f_epoch = np.repeat(ep, n_fan)
    f_orig = antenna_scene[f_epoch]
    f_dir = np.tile(fan_directions, (ep.size, 1))
    dist, obj, _, normal = caster.nearest(f_orig, f_dir, times_s[f_epoch], np.full(f_epoch.size, search_radius_m))
    hit = np.isfinite(dist)
    f_epoch, obj, normal = f_epoch[hit], obj[hit], normal[hit]
    point = f_orig[hit] + f_dir[hit] * dist[hit, None]
    normal = np.where((np.einsum("ij,ij->i", normal, f_dir[hit]) > 0)[:, None], -normal, normal)
    offset = np.einsum("ij,ij->i", normal, point)
    key = np.column_stack([f_epoch, obj, np.round(normal / PLANE_NORMAL_QUANTUM),
                           np.round(offset / PLANE_OFFSET_QUANTUM_M)]).astype(np.int64)
    _, first = np.unique(key, axis=0, return_index=True)
    pl_epoch, pl_obj, pl_point, pl_normal = f_epoch[first], obj[first], point[first], normal[first]
    # 2. pairs (blocked satellite, plane of the same epoch)
    be, bs = np.nonzero(blocked)
    ia, ib = _ragged_pairs(be, pl_epoch, n_epoch)
    if ia.size == 0:
        return Multipath(out_excess, out_point, out_obj)
    e, s = be[ia], bs[ia]
    a = antenna_scene[e]
    refl = image_reflection(a, sv_scene[e, s], pl_point[ib], pl_normal[ib])
    leg1 = refl.point - a
    len1 = np.linalg.norm(leg1, axis=1)
    ok = refl.valid & (len1 <= search_radius_m) & (len1 > REFLECTION_POINT_TOL_M)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return Multipath(out_excess, out_point, out_obj)
    # 3. both legs by casting: antenna -> S (first surface at S), S -> satellite (free)
    n_pl = pl_normal[ib[idx]]
    n_pl = np.where((np.einsum("ij,ij->i", a[idx] - refl.point[idx], n_pl) < 0)[:, None], -n_pl, n_pl)
    start2 = refl.point[idx] + REFLECTION_POINT_TOL_M * n_pl
    d1 = leg1[idx] / len1[idx, None]
    d2 = unit_vectors(sv_scene[e[idx], s[idx]] - start2)
    m = idx.size
    t = times_s[e[idx]]
    dist2, _, _, nrm2 = caster.nearest(np.concatenate([a[idx], start2]), np.concatenate([d1, d2]),
                                       np.concatenate([t, t]),
                                       np.concatenate([len1[idx] + REFLECTION_POINT_TOL_M, np.full(m, np.inf)]))
    on_plane = (np.abs(dist2[:m] - len1[idx]) <= REFLECTION_POINT_TOL_M) & \
        (np.abs(np.einsum("ij,ij->i", nrm2[:m], n_pl)) >= REFLECTION_NORMAL_COS_TOL)
    free = ~np.isfinite(dist2[m:])
    good = idx[on_plane & free]
    if good.size == 0:
        return Multipath(out_excess, out_point, out_obj)
    # 4. shortest per (epoch, sv)
    pair = e[good] * n_sv + s[good]
    order = np.lexsort((refl.excess_m[good], pair))
    good, pair = good[order], pair[order]
    _, first = np.unique(pair, return_index=True)
    best = good[first]
    out_excess[e[best], s[best]] = refl.excess_m[best]
    out_point[e[best], s[best]] = refl.point[best]
    out_obj[e[best], s[best]] = pl_obj[ib[best]]
    return Multipath(out_excess, out_point, out_obj)
