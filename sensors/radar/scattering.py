"""Shooting and bouncing rays (SBR): the radar echo of the scene's meshes.

Rays leave the radar as tubes, each covering a small solid angle (or, for a plane wave, a
small area) of the field of view. Each tube is traced through specular reflections off the
meshes (up to :data:`MAX_RADAR_BOUNCES`); wherever it lands, the physical-optics (PO) current
its footprint carries on that facet radiates back to the radar. The sum over all tubes and all
bounces of these contributions, with their phases, is the echo: its magnitude squared is the
radar cross-section (RCS).

This is the SBR method of H. Ling, R.-C. Chou and S.-W. Lee, "Shooting and bouncing rays:
calculating the RCS of an arbitrarily shaped cavity", IEEE Trans. Antennas Propag. 37(2),
194-205 (1989), with the PO integral done at every hit point rather than only at the exit
aperture (S.-W. Lee, H. Ling, R.-C. Chou, "Ray-tube integration in shooting and bouncing ray
method", Microwave Opt. Technol. Lett. 1(8), 286-289, 1988; the usual form of SBR for open
targets, e.g. Bhalla & Ling, IEEE Trans. Antennas Propag. 44(12), 1996). Each tube's footprint
on a facet is a parallelogram; the PO integral over it has the closed form

    A = sqrt(4 pi) / lambda * Gamma * (cos i + cos s) / 2 * dS * sinc(q.e1 / 2) sinc(q.e2 / 2)
        * exp(-j k (L + R))

with ``q = k (d - r)`` (d the arriving direction, r the unit vector back to the radar),
``e1``, ``e2`` the footprint's edges, ``dS = |e1 x e2|``, ``Gamma`` the product of the Fresnel
reflection coefficients along the path (:func:`sensors.radar.materials.fresnel_te`, -1 for
metal), ``L`` the path to the facet and ``R`` the way back. For a flat facet tiled by the
footprints the sum is the exact PO integral of the facet: a square plate at normal incidence
gives ``4 pi A^2 / lambda^2``; the tubes that bounce three times in a trihedral corner
reflector give ``4 pi a^4 / (3 lambda^2)``; a faceted sphere of facets much smaller than its
Fresnel zone gives ``pi a^2`` (tests/sensors/test_radar.py).

Notes
-----
- Scalar: one polarisation (the TE Fresnel coefficient at every reflection); no
  cross-polarisation, no depolarisation in a dihedral.
- No edge diffraction (PTD), no creeping waves, no transmission through dielectrics.
- A tube takes the normal of the facet its centre hits over its whole footprint: footprints
  larger than the facets of a curved mesh overstate its specular flashes.
- A tube's widening after a curved surface comes from its grid neighbours (``grid_shape``):
  the road-sphere ghost of a sphere over the road matches the image method within 0.1 dB
  (plane wave), the road-sphere-road ghost comes out 4.5-6 dB too strong and converges
  slowly with the tube spacing (tests/sensors/test_radar.py, docs/radar.md).
- Roughness (:mod:`sensors.radar.materials`) lowers the coherent term by ``exp(-g / 2)`` and adds
  an incoherent Lambertian term of random phase (``diffuse``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import fresnel

from .materials import diffuse_sigma0, fresnel_te, rayleigh_roughness

#: Quadratic phase across a footprint edge below which :func:`footprint_integral` is a sinc [rad]:
#: the neglected phase is at most a quarter of it, 0.0025 rad.
FRESNEL_MIN_CURVATURE_RAD = 1e-2

#: Specular bounces followed per tube: three, the most a trihedral corner reflector or the
#: road-car-road ghost path needs.
MAX_RADAR_BOUNCES = 3


class Contributions(NamedTuple):
    """Echo contributions: one per tube and hit point seen from the radar (coherent PO) plus
    one per rough hit (diffuse), n in all.

    Attributes
    ----------
    amplitude : (n,) complex128
        Complex RCS amplitude [m] (``|sum|^2`` is the RCS [m^2]), phase ``-k`` x path length.
    path_m : (n,) float64
        Total path radar -> scatterers -> radar [m]; the apparent range is half of it.
    out_m, back_m : (n,) float64
        Path from the radar to the last hit point, and back from it [m] (spherical spreading).
    departure_scene, arrival_scene : (n, 3) float64
        Unit direction of the emitted ray, and from the radar toward the last hit point (where
        the echo arrives from), scene frame.
    path_rate_m_s : (n,) float64
        Time derivative of ``path_m`` [m/s]: twice the radial velocity (positive: opening).
    object_id : (n,) int32
        The object of the path's farthest hit from the radar (its turning point).
    ghost : (n,) bool
        The path touched more than one object (multipath).
    bounces : (n,) int8
        Hit points on the path (1: single reflection).
    """

    amplitude: np.ndarray
    path_m: np.ndarray
    out_m: np.ndarray
    back_m: np.ndarray
    departure_scene: np.ndarray
    arrival_scene: np.ndarray
    path_rate_m_s: np.ndarray
    object_id: np.ndarray
    ghost: np.ndarray
    bounces: np.ndarray

    @staticmethod
    def concat(parts) -> "Contributions":
        return Contributions(*(np.concatenate(a, axis=0) for a in zip(*parts)))


def tube_edges_spherical(yaw_rad, pitch_rad, dyaw_rad, dpitch_rad):
    """Angular edge vectors of tubes on a yaw x pitch grid [rad], sensor frame, (2, n, 3):
    ``d(direction)/d(yaw) dyaw`` and ``d(direction)/d(pitch) dpitch``; at path length L the
    tube's cross-section has edges L times these."""
    y = np.asarray(yaw_rad, dtype=float)
    p = np.asarray(pitch_rad, dtype=float)
    cy, sy, cp, sp = np.cos(y), np.sin(y), np.cos(p), np.sin(p)
    e1 = np.stack([-sy * cp, cy * cp, np.zeros_like(y)], axis=-1) * dyaw_rad
    e2 = np.stack([-cy * sp, -sy * sp, cp], axis=-1) * dpitch_rad
    return np.stack([e1, e2])


def footprint_integral(b, c):
    """``int_{-1/2}^{1/2} exp(j (b s + c s^2)) ds`` [1], complex: the PO integral along one edge of
    a footprint with linear phase ``b`` [rad] (the tilt of the wave to the facet) and quadratic
    phase ``c`` [rad] (the curvature of spherical waves across it).

    ``sinc(b / 2 pi)`` where ``|c| <`` :data:`FRESNEL_MIN_CURVATURE_RAD` (phase error below
    ``c / 4``), else the Fresnel integrals of the completed square (Abramowitz & Stegun 7.3):
    ``sqrt(pi / 2c) [C(z) + j S(z)]`` between ``z = (s + b / 2c) sqrt(2c / pi)`` at
    ``s = -1/2, 1/2``. A footprint wider than the Fresnel zone so adds only the zone's share, as
    a large flat facet near the radar does.
    """
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    out = np.sinc(b / (2.0 * np.pi)).astype(complex)
    big = np.abs(c) >= FRESNEL_MIN_CURVATURE_RAD
    if np.any(big):
        bb, cc = b[big], np.abs(c[big])
        sign = np.sign(c[big])
        bb = bb * sign                                      # conj for c < 0: exp(j(b s - |c| s^2))
        scale = np.sqrt(2.0 * cc / np.pi)
        z1 = (-0.5 + bb / (2.0 * cc)) * scale
        z2 = (0.5 + bb / (2.0 * cc)) * scale
        s1, c1 = fresnel(z1)
        s2, c2 = fresnel(z2)
        val = np.sqrt(np.pi / (2.0 * cc)) * ((c2 - c1) + 1j * (s2 - s1)) * np.exp(-1j * bb * bb / (4.0 * cc))
        out[big] = np.where(sign < 0, np.conj(val), val)
    return out


def _point_velocity(scene, object_id, points, t_s):
    """Velocity of the surface points of the objects hit [m/s], scene frame, (n, 3): the
    object's velocity plus its angular rate x the lever arm (rigid motion,
    :meth:`hifi.world.scene.Scene.kinematics_at`)."""
    v = np.zeros_like(points)
    for oid in np.unique(object_id[object_id >= 0]):
        name = scene.objects[int(oid)].name
        if not scene.is_moving(name):
            continue
        kin = scene.kinematics_at(name, float(t_s))
        sel = object_id == oid
        arm = points[sel] - np.asarray(kin.pose.translation, dtype=float)
        v[sel] = np.asarray(kin.velocity, dtype=float) + np.cross(np.asarray(kin.angular_rate, dtype=float), arm)
    return v


#: Cosine of the largest angle between the facet normals of neighbouring tubes that still
#: count as one smooth surface for :func:`_neighbour_tubes` (25.8 deg): a curved mesh's facets
#: pass, a box's edge does not.
NEIGHBOUR_NORMAL_COS = 0.9


def _cross_area(edges, d):
    """Area of a tube's cross-section normal to ``d`` spanned by its two ``edges`` (2, m, 3) [m^2]."""
    perp = edges - d[None] * np.sum(edges * d[None], axis=2)[:, :, None]
    return np.linalg.norm(np.cross(perp[0], perp[1]), axis=1)


def _neighbour_tubes(grid, idx, p, d, nrm, oid, consistent):
    """Footprint edges [m] (2, m, 3), radii of curvature of the arriving wave [m] (2, m) and
    validity (2, m) of the m live tubes ``idx`` of a ``grid`` of tubes, from their neighbours.

    A neighbour along an axis counts while it has hit the same object at every bounce so far,
    with facet normals within :data:`NEIGHBOUR_NORMAL_COS` of this tube's (``consistent``,
    (n, 4), updated in place): the four neighbours are the corner rays of the classic ray tube.
    The edge is the central difference of the hit points (one-sided with one neighbour); the
    radius ``|w|^2 / (w . dd)`` comes from the spread ``w`` of the hit points and ``dd`` of the
    arriving directions across the ray (negative: a converging wave).
    """
    na, ne = grid
    n = na * ne
    full = {}
    for name, val in (("p", p), ("d", d), ("n", nrm)):
        a = np.full((n, 3), np.nan)
        a[idx] = val
        full[name] = a.reshape(na, ne, 3)
    obj = np.full(n, -2, dtype=np.int64)
    obj[idx] = oid
    obj = obj.reshape(na, ne)
    cons = consistent.reshape(na, ne, 4)

    def shifted(a, axis, step):
        out = np.full_like(a, np.nan if a.dtype.kind == "f" else -3)
        dst = [slice(None)] * a.ndim
        src = [slice(None)] * a.ndim
        dst[axis], src[axis] = (slice(0, -1), slice(1, None)) if step > 0 else (slice(1, None), slice(0, -1))
        out[tuple(dst)] = a[tuple(src)]
        return out

    edges = np.zeros((2, idx.size, 3))
    rho = np.zeros((2, idx.size))
    ok = np.zeros((2, idx.size), dtype=bool)
    for axis in (0, 1):
        side = {}
        for j, step in enumerate((-1, 1)):
            o_n = shifted(obj, axis, step)
            n_n = shifted(full["n"], axis, step)
            with np.errstate(invalid="ignore"):
                v = (o_n == obj) & (obj >= 0) & (np.sum(n_n * full["n"], axis=-1) > NEIGHBOUR_NORMAL_COS)
            v &= cons[..., 2 * axis + j]
            cons[..., 2 * axis + j] = v
            side[step] = (v, shifted(full["p"], axis, step), shifted(full["d"], axis, step))
        (vm, pm, dm), (vp, pp, dp) = side[-1], side[1]
        both = (vm & vp)[..., None]
        w = np.where(both, 0.5 * (pp - pm), np.where(vp[..., None], pp - full["p"], full["p"] - pm))
        dd = np.where(both, 0.5 * (dp - dm), np.where(vp[..., None], dp - full["d"], full["d"] - dm))
        w = w.reshape(n, 3)[idx]
        dd = dd.reshape(n, 3)[idx]
        good = (vm | vp).reshape(n)[idx]
        w_perp = w - d * np.sum(w * d, axis=1, keepdims=True)
        dd_perp = dd - d * np.sum(dd * d, axis=1, keepdims=True)
        ww = np.sum(w_perp * w_perp, axis=1)
        wd = np.sum(w_perp * dd_perp, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(np.abs(wd) > 1e-12 * np.maximum(ww, 1e-300), ww / wd, np.inf)
        edges[axis] = np.where(good[:, None], w, 0.0)
        rho[axis] = np.where(good, r, np.inf)
        ok[axis] = good
    return edges, rho, ok


def _reflect(vec, nrm):
    return vec - 2.0 * np.sum(vec * nrm, axis=-1, keepdims=True) * nrm


def shoot(caster, scene, origins_scene, directions_scene, edges_m, edges_rad, t_s, *, wavelength_m,
          permittivity, rms_height_m, radar_position=None, radar_velocity=None, far_direction=None,
          max_path_m=np.inf, max_bounces=MAX_RADAR_BOUNCES, diffuse=True, rng=None, grid_shape=None) -> Contributions:
    """Trace radar ray tubes and return their echo contributions.

    Parameters
    ----------
    caster : hifi.caster.RayCaster
    scene : hifi.world.scene.Scene
    origins_scene, directions_scene : (n, 3) float
        Tube centres: origins [m] and unit directions, scene frame.
    edges_m, edges_rad : (2, n, 3) float
        The tube's cross-section edges: a constant part [m] (a plane wave's tubes) plus a part
        growing with the path length L [rad] (a point source's), scene frame.
    t_s : float
        Time of the frame [s] (object poses and velocities).
    wavelength_m : float
    permittivity : (n_objects + 1,) complex
        Relative permittivity of each object's material (last entry: no hit).
    rms_height_m : (n_objects + 1,) float
        Surface rms height of each object [m].
    radar_position, radar_velocity : (3,) float, optional
        Monostatic radar at a point [m], moving at [m/s] (spherical waves; the sensor model).
    far_direction : (3,) float, optional
        Instead: unit vector toward a radar in the far field (plane wave, RCS computation; the
        returned ``path_m`` is then measured from the plane through the origin normal to it).
    max_path_m : float
        Longest path followed out [m].
    max_bounces : int
    diffuse : bool
        Add the incoherent term of rough surfaces (needs ``rng``).
    rng : numpy.random.Generator, optional
        Phases of the diffuse contributions.
    grid_shape : (int, int), optional
        The tubes form a C-ordered grid of this shape (edge 1 along its first axis, edge 2
        along its second): at every hit a tube's footprint, the curvature of the arriving wave
        and its divergence factor come from its neighbours' hits (:func:`_neighbour_tubes`),
        so a tube widens after a curved surface and its field weakens as geometric optics
        says (the ray tube of four corner rays, Ling et al. 1989, sec. II). Without it, or where
        a neighbour left the path, the edges grow with the path length (image-source
        divergence, exact after flat facets).

    Returns
    -------
    Contributions
    """
    k = 2.0 * np.pi / wavelength_m
    pre = np.sqrt(4.0 * np.pi) / wavelength_m
    pos = np.array(origins_scene, dtype=float, copy=True)
    d = np.array(directions_scene, dtype=float, copy=True)
    n = d.shape[0]
    e_m = np.array(np.broadcast_to(edges_m, (2, n, 3)), dtype=float)
    e_rad = np.array(np.broadcast_to(edges_rad, (2, n, 3)), dtype=float)
    plane = far_direction is not None
    if plane:
        rhat_far = np.asarray(far_direction, dtype=float) / np.linalg.norm(far_direction)
        v_radar = np.zeros(3)
    else:
        radar = np.asarray(radar_position, dtype=float)
        v_radar = np.zeros(3) if radar_velocity is None else np.asarray(radar_velocity, dtype=float)
    departure = d.copy()
    L = -(pos @ rhat_far) if plane else np.zeros(n)   # plane wave: path from the reference plane
    out_len = np.zeros(n)
    gamma = np.ones(n, dtype=complex)
    rate = np.zeros(n)
    v_prev = np.broadcast_to(v_radar, (n, 3)).copy()
    first_obj = np.full(n, -1, dtype=np.int32)
    far_obj = np.full(n, -1, dtype=np.int32)
    far_dist = np.full(n, -np.inf)
    multi = np.zeros(n, dtype=bool)
    idx = np.arange(n)
    grid = None if grid_shape is None else (int(grid_shape[0]), int(grid_shape[1]))
    if grid is not None and grid[0] * grid[1] != n:
        raise ValueError(f"grid_shape {grid} does not hold the {n} tubes")
    consistent = np.ones((n, 4), dtype=bool)        # each neighbour (axis 0 -/+, axis 1 -/+) on this path so far
    parts = []
    for b in range(int(max_bounces)):
        if idx.size == 0:
            break
        times = np.full(idx.size, float(t_s))
        dist, oid, _, nrm = caster.nearest(pos, d, times, np.maximum(max_path_m - out_len, 0.0))
        hit = (oid >= 0) & np.isfinite(dist)
        if not np.any(hit):
            break
        sel = np.flatnonzero(hit)
        idx, pos, d, dist, oid, nrm = idx[sel], pos[sel], d[sel], dist[sel], oid[sel], nrm[sel]
        e_m, e_rad, L, out_len, gamma, rate, v_prev = (e_m[:, sel], e_rad[:, sel], L[sel], out_len[sel], gamma[sel],
                                                       rate[sel], v_prev[sel])
        first_obj, far_obj, far_dist, multi, departure = (first_obj[sel], far_obj[sel], far_dist[sel], multi[sel],
                                                          departure[sel])
        p = pos + d * dist[:, None]
        nrm = np.where(np.sum(nrm * d, axis=1, keepdims=True) > 0.0, -nrm, nrm)   # face the arriving ray
        L = L + dist
        out_len = out_len + dist
        v_p = _point_velocity(scene, oid, p, t_s)
        rate = rate + np.sum(d * (v_p - v_prev), axis=1)
        first_obj = np.where(first_obj < 0, oid, first_obj)
        multi = multi | (oid != first_obj)
        if plane:
            rhat = np.broadcast_to(rhat_far, p.shape)
            back = -(p @ rhat_far)               # to the reference plane through the origin
            here = np.full(p.shape[0], np.inf)
        else:
            to_radar = radar - p
            back = np.linalg.norm(to_radar, axis=1)
            rhat = to_radar / back[:, None]
            here = back
        depth = -back if plane else back
        farther = depth > far_dist
        far_obj = np.where(farther, oid, far_obj)
        far_dist = np.where(farther, depth, far_dist)
        cos_in = -np.sum(d * nrm, axis=1)
        cos_out = np.sum(rhat * nrm, axis=1)
        eps = permittivity[oid]
        h = rms_height_m[oid]
        g_in = fresnel_te(cos_in, eps)
        # footprint: the tube's edges at this path length (or from its neighbours' hits), projected
        # on the facet along d; the arriving wave's radius of curvature across each edge
        edges = e_m + e_rad * out_len[None, :, None]
        rho = np.broadcast_to(np.inf if plane else out_len, (2, p.shape[0])).copy()
        divergence = np.ones(p.shape[0])
        if grid is not None:
            fd_edges, fd_rho, fd_ok = _neighbour_tubes(grid, idx, p, d, nrm, oid, consistent)
            image = edges
            edges = np.where(fd_ok[:, :, None], fd_edges, edges)
            rho = np.where(fd_ok, fd_rho, rho)
            # GO divergence factor: the field falls as the tube's cross-section grows beyond the
            # image source's spreading, which the radar equation's 1 / R_out already holds
            with np.errstate(divide="ignore", invalid="ignore"):
                divergence = np.sqrt(_cross_area(image, d) / _cross_area(edges, d))
            divergence = np.where(np.isfinite(divergence), divergence, 1.0)
        dn = np.sum(d * nrm, axis=1)
        fp = edges - d[None] * (np.sum(edges * nrm[None], axis=2) / dn[None])[:, :, None]
        dS = np.linalg.norm(np.cross(fp[0], fp[1]), axis=1)
        # back toward the radar: facing it, and nothing in the way
        offset = caster.secondary_offset_m(p, oid)
        start = p + nrm * offset[:, None]
        facing = cos_out > 0.0
        seen = np.zeros(p.shape[0], dtype=bool)
        if np.any(facing):
            f = np.flatnonzero(facing)
            limit = here[f] - offset[f] if not plane else np.full(f.size, np.inf)
            sd, so, _, _ = caster.nearest(start[f], np.ascontiguousarray(rhat[f]), times[:f.size],
                                          np.maximum(limit, 0.0))
            seen[f] = ~((so >= 0) & np.isfinite(sd))
        if np.any(seen):
            s = np.flatnonzero(seen)
            q = k * (d[s] - rhat[s])
            # quadratic phase of the curved waves across the footprint (Fresnel zones):
            # k / 2 (|e_perp_in|^2 / rho + |e_perp_out|^2 / R) per edge (R infinite for a plane wave)
            e_in = fp[:, s] - d[s][None] * np.sum(fp[:, s] * d[s][None], axis=2)[:, :, None]
            curv = 0.5 * k * np.sum(e_in * e_in, axis=2) / rho[:, s]
            if not plane:
                e_out = fp[:, s] - rhat[s][None] * np.sum(fp[:, s] * rhat[s][None], axis=2)[:, :, None]
                curv = curv + 0.5 * k * np.sum(e_out * e_out, axis=2) / back[s][None]
            sinc = (footprint_integral(np.sum(q * fp[0, s], axis=1), curv[0])
                    * footprint_integral(np.sum(q * fp[1, s], axis=1), curv[1]))
            g_bi = (k * h[s] * (cos_in[s] + cos_out[s])) ** 2          # Beckmann's bistatic roughness
            path = L[s] + back[s]
            amp = (pre * gamma[s] * divergence[s] * (-g_in[s]) * 0.5 * (cos_in[s] + cos_out[s]) * dS[s] * sinc
                   * np.exp(-0.5 * g_bi) * np.exp(-1j * k * path))
            arrival = -rhat[s]
            back_rate = -np.sum(rhat[s] * (v_p[s] - v_radar), axis=1)
            common = (path, out_len[s], back[s], departure[s],
                      np.ascontiguousarray(arrival), rate[s] + back_rate, far_obj[s].astype(np.int32), multi[s],
                      np.full(s.size, b + 1, dtype=np.int8))
            parts.append(Contributions(amp, *common))
            if diffuse and rng is not None:
                rough = h[s] > 0.0
                if np.any(rough):
                    r = np.flatnonzero(rough)
                    sig = diffuse_sigma0(np.sqrt(np.clip(cos_in[s][r] * cos_out[s][r], 0.0, 1.0)),
                                         np.abs(gamma[s][r] * g_in[s][r]) ** 2, g_bi[r]) * dS[s][r] * divergence[s][r] ** 2
                    phase = rng.uniform(0.0, 2.0 * np.pi, r.size)
                    parts.append(Contributions(np.sqrt(sig) * np.exp(1j * phase), *(c[r] for c in common)))
        # the specular ray goes on, its coherent part only
        g_sp = rayleigh_roughness(cos_in, h, k)
        gamma = gamma * g_in * np.exp(-0.5 * g_sp)
        d = _reflect(d, nrm)
        e_m = _reflect(e_m, nrm[None])
        e_rad = _reflect(e_rad, nrm[None])
        pos = start
        v_prev = v_p
    if not parts:
        z3 = np.zeros((0, 3))
        return Contributions(np.zeros(0, complex), np.zeros(0), np.zeros(0), np.zeros(0), z3, z3, np.zeros(0),
                             np.zeros(0, np.int32), np.zeros(0, bool), np.zeros(0, np.int8))
    return Contributions.concat(parts)


def plane_wave_rcs(caster, scene, toward_radar, center, half_width_m, spacing_m, *, wavelength_m, permittivity,
                   rms_height_m, max_bounces=MAX_RADAR_BOUNCES, start_m=None) -> float:
    """Monostatic RCS [m^2] of the scene for a plane wave from ``toward_radar`` (unit vector
    from the target to the radar): a square grid of ray tubes ``spacing_m`` apart covering
    ``half_width_m`` around ``center`` [m], coherent sum of :func:`shoot`'s contributions."""
    u = np.asarray(toward_radar, dtype=float)
    u = u / np.linalg.norm(u)
    a = np.cross(u, [0.0, 0.0, 1.0]) if abs(u[2]) < 0.9 else np.cross(u, [1.0, 0.0, 0.0])
    a /= np.linalg.norm(a)
    b = np.cross(u, a)
    g = np.arange(-half_width_m + 0.5 * spacing_m, half_width_m, spacing_m)
    ga, gb = np.meshgrid(g, g, indexing="ij")
    start = (2.0 * half_width_m + 1.0) if start_m is None else start_m
    origins = (np.asarray(center, float) + start * u + ga.reshape(-1, 1) * a + gb.reshape(-1, 1) * b)
    n = origins.shape[0]
    dirs = np.broadcast_to(-u, (n, 3)).copy()
    edges = np.stack([np.broadcast_to(a * spacing_m, (n, 3)), np.broadcast_to(b * spacing_m, (n, 3))])
    c = shoot(caster, scene, origins, dirs, edges, np.zeros((2, n, 3)), 0.0, wavelength_m=wavelength_m,
              permittivity=permittivity, rms_height_m=rms_height_m, far_direction=u, max_bounces=max_bounces,
              diffuse=False, grid_shape=ga.shape)
    return float(np.abs(np.sum(c.amplitude)) ** 2)
