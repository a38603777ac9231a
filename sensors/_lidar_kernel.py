"""Compiled kernels of the lidar models (numba): the signal chain of pencil hits, edge flags,
the edge footprints' sub-ray directions and probes.

:func:`pencil_chain` is one pass per pulse over what :meth:`sensors.lidar._PulsedLidar._measure`
does with numpy for a pencil hit (the default and the edge-footprint path, whose edge pulses
carry the hit of their echo's dominant sub-ray): :func:`sensors.radiometry.lambertian_return`
(Oren-Nayar), :func:`sensors.lidar.lidar_signal_chain` (received power, SNR, detection, range
noise, quantisation, intensity) and the reported points masked as
:func:`hifi.run.dataset.range_frame` masks them. :func:`edge_flags` is
:func:`sensors.lidar.depth_edge_pulses_reference`, :func:`footprint` is
:func:`sensors.beam.footprint_directions_reference` and :func:`probe_leaves` the numpy of
``sensors.lidar._probe_leaves``. The numpy functions stay the reference (and
the chain for weather, divergent beams and the BlenSor detection model); ``tests/
test_lidar_kernel.py`` holds the kernels to them bit for bit.

Every floating-point operation is the IEEE operation numpy performs, in numpy's order (no
``fastmath``): sums of three products left to right (as :attr:`hifi.caster.Hits.cos_incidence`
writes them out), ``x ** 2`` as ``x * x`` (numpy's fast path), ``exp`` / ``sqrt`` / ``pow`` from
the same C library, ``rint`` for ``np.round``. The one difference: the detection probability
``Phi(SNR - T)`` is ``erfc(-x / sqrt 2) / 2`` from the C library where scipy's ``ndtr`` uses
Cephes' own erf and erfc; the two differ by a few units in the last place, which decides a
detection differently only when the uniform draw falls within those few ulp of it (about 1e-16
per pulse). The random deviates are drawn by the caller from the same streams, in the same order.
``cache=True`` keeps the machine code in ``__pycache__`` (the first process compiles, a few
seconds). ``nogil``: the callers run chunks of the pulses on the caster's threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: ``1 / sqrt(2)`` for ``Phi(x) = erfc(-x / sqrt 2) / 2``.
_SQRT1_2 = 0.7071067811865476


@numba.njit(cache=True, nogil=True)
def pencil_chain(a, b, dist, direction, normal, oid, refl, mirror, rough, app_in, bias, gain, z, u, zi,
                 origins, emitted, range_offset, c,
                 power, snr, apparent, det, d_out, pts, inten):  # pragma: no cover (compiled)
    """Signal chain of pulses ``a:b`` (see the module docstring for the reference functions).

    Parameters
    ----------
    a, b : int
        The chunk of pulses.
    dist : (n,) float64
        Range of each pencil hit [m], NaN on a miss.
    direction, normal : (n, 3) float64
        The arriving ray and the surface normal (:class:`hifi.caster.Hits`).
    oid : (n,) int32
        Object hit, -1 on a miss (indexes the last entry of the tables).
    refl, mirror, rough : (n_objects + 1,) float64
        Object tables: reflectivity, specular fraction, Oren-Nayar roughness [rad].
    app_in : (n,) or (0,) float64
        The apparent reflectivity of each echo of a divergent beam (its energy times R^2; NaN
        where none); length 0: computed here from the pencil hit.
    bias : (n,) float64
        Per-laser range bias of each pulse [m].
    gain : (n_lasers,) float64
        Per-laser intensity gain; pulse i has laser ``i % n_lasers``.
    z, zi : (n,) float64
        Standard normal deviates: range noise, intensity noise.
    u : (2, n) float64
        Uniform deviates: detection, drop-out.
    origins, emitted : (n, 3) float64
        Origins [m] and directions of the emitted rays; the reported point is
        ``origin + emitted * reported range`` (on the emitted ray: mirror ghosts).
    range_offset : (1,) or (n,) float64
        Start of the range grid before each origin [m].
    c : (16,) float64
        Constants, in order: ``P_t eta``, receiver area [m^2], ``-2 alpha`` [1/m], full-overlap
        range [m] (<= 0: none), noise power [W], noise floor^2 [m^2], sigma at SNR 1 [m],
        fixed noise sigma [m] (NaN: from the SNR), range resolution [m] (0: none), minimum and
        maximum range [m], SNR threshold, drop-out probability, intensity full scale, largest
        code, response exponent.

    Outputs (written for ``a:b``): ``power`` [W], ``snr``, ``apparent`` (the ``reflectivity``
    variable), ``det`` (bool), ``d_out`` (reported range, NaN where not detected), ``pts``
    (n, 3) reported points (NaN where not detected), ``inten`` (intensity code, NaN on a miss).
    """
    pe, area, m2alpha, full, noise_w = c[0], c[1], c[2], c[3], c[4]
    floor2, snr1, fixed_sigma, res = c[5], c[6], c[7], c[8]
    r_min, r_max, thr, dropout = c[9], c[10], c[11], c[12]
    full_scale, max_code, expo = c[13], c[14], c[15]
    n_gain = gain.shape[0]
    per_ray_offset = range_offset.shape[0] > 1
    echo_in = app_in.shape[0] > 0
    for i in range(a, b):
        o = oid[i]
        j = o if o >= 0 else refl.shape[0] - 1
        r = dist[i]
        hit = math.isfinite(r)
        nan = np.nan
        if hit and echo_in:
            app = app_in[i]
        elif hit:
            # lambertian_return(...) * measured ** 2 (a pencil hit always has an object)
            lam = _lambertian(direction, normal, i, j, r, refl, mirror, rough) if o >= 0 else 0.0
            app = lam * (r * r)
        if hit:
            # lidar_received_power with cos(i) = 1 and the overlap factor
            ov = 1.0
            if full > 0.0:
                ov = max(r, 0.0) / full
                if ov > 1.0:
                    ov = 1.0
                ov = ov * ov
            pw = pe * app * 1.0 * (area / (np.pi * (r * r))) * math.exp(m2alpha * r) * ov
            s = pw / noise_w
            if math.isnan(fixed_sigma):
                t = snr1 / s
                sigma = math.sqrt(floor2 + t * t)
            else:
                sigma = fixed_sigma
        else:
            app = nan
            pw = nan
            s = nan
            sigma = 0.0 if math.isnan(fixed_sigma) else fixed_sigma
        dn = r + bias[i] + sigma * z[i]
        if res > 0.0:
            off = range_offset[i] if per_ray_offset else range_offset[0]
            dn = np.rint((dn + off) / res) * res - off
        detected = False
        if hit and r >= r_min and r <= r_max:
            x = s - thr
            # Phi(x) rounds to exactly 1.0 above 8.3 (Q(8.3) = 5e-17 < half an ulp of 1) and
            # to 0.0 below -38.5: the C library's erfc only in between (it costs 20 ns)
            p_d = 1.0 if x > 9.0 else 0.0 if x < -40.0 else 0.5 * math.erfc(-x * _SQRT1_2)
            detected = u[0, i] < p_d and u[1, i] >= dropout
        power[i] = pw
        snr[i] = s
        apparent[i] = app
        det[i] = detected
        if detected:
            d_out[i] = dn
            for k in range(3):
                pts[i, k] = origins[i, k] + emitted[i, k] * dn
        else:
            d_out[i] = nan
            for k in range(3):
                pts[i, k] = nan
        # reported_intensity
        if hit:
            w = zi[i] / s if s > 0.0 else 0.0
            v = app * (1.0 + w)
            if v < 0.0:
                v = 0.0
            if expo == 2.0:                   # numpy's fast paths of a scalar power
                v = v * v
            elif expo == 0.5:
                v = math.sqrt(v)
            elif expo != 1.0:
                v = math.pow(v, expo)
            code = gain[i % n_gain] * full_scale * v
            if code < 0.0:
                code = 0.0
            elif code > max_code:
                code = max_code
            inten[i] = np.rint(code)
        else:
            inten[i] = nan


@numba.njit(inline="always")
def _lambertian(direction, normal, i, j, r, refl, mirror, rough):  # pragma: no cover (compiled)
    """:func:`sensors.radiometry.lambertian_return` at 1 m of hit ``i`` on object ``j`` at range
    ``r``: ``(1 - mirror) rho f(i) (1 / r)^2`` with the Oren-Nayar ``f`` of
    :func:`sensors.radiometry.oren_nayar_backscatter` and the cosine of
    :attr:`hifi.caster.Hits.cos_incidence` (summed left to right), clipped to 1 (below 0 the
    backscatter is 0 either way)."""
    cos = -(direction[i, 0] * normal[i, 0] + direction[i, 1] * normal[i, 1] + direction[i, 2] * normal[i, 2])
    if cos > 1.0:
        cos = 1.0
    s2 = rough[j] * rough[j]
    fa = 1.0 - 0.5 * s2 / (s2 + 0.33)
    fb = 0.45 * s2 / (s2 + 0.09)
    f = fa * cos + fb * (1.0 - cos * cos) if cos > 0.0 else 0.0
    q = 1.0 / r
    return (1.0 - mirror[j]) * refl[j] * f * (q * q)


@numba.njit(cache=True, nogil=True)
def edge_flags(points, normals, hit, order, depth, along, across):  # pragma: no cover (compiled)
    """Depth-edge flags of a scan grid (:func:`sensors.lidar.depth_edge_pulses_reference`).

    Parameters
    ----------
    points, normals : (n_s, n_b, 3) float64
        Hit point and unit normal of each pulse's pencil ray (NaN on a miss).
    hit : (n_s, n_b) bool
    order : (n_b,) int64
        Beam indices in elevation order.
    depth : float32
        Depth step [m] (compared in float32, as numpy compares a float32 array with a Python
        float).
    along : (n_s, n_b) uint8, out, zeros
        Bit 1: the previous step's pulse leaves this pulse's surface; bit 2: the next one's.
    across : (n_s, n_b) uint8, out, zeros
        Bit 1: the ring below leaves the pulse's surface; bit 2: the ring above.

    Notes
    -----
    In float32 as the reference: coordinates and normals rounded to float32, the difference
    of the two points and each normal's dot product with it (summed left to right) in float32.
    """
    n_s, n_b = hit.shape
    for s in range(n_s):
        for jj in range(n_b):
            j = order[jj]
            if s + 1 < n_s:                     # the next step, same beam
                _pair(points, normals, hit, s, j, s + 1, j, depth, along)
            if jj + 1 < n_b:                    # the next ring up, same step
                _pair(points, normals, hit, s, j, s, order[jj + 1], depth, across)


@numba.njit(inline="always")
def _pair(points, normals, hit, s, j, s2, j2, depth, out):  # pragma: no cover (compiled)
    """Flags of one pair of neighbours (lower / previous ``(s, j)``, upper / next ``(s2, j2)``)."""
    h_lo, h_hi = hit[s, j], hit[s2, j2]
    step = False
    if h_lo and h_hi:                            # points and normals of hits are finite
        d0 = np.float32(points[s2, j2, 0]) - np.float32(points[s, j, 0])
        d1 = np.float32(points[s2, j2, 1]) - np.float32(points[s, j, 1])
        d2 = np.float32(points[s2, j2, 2]) - np.float32(points[s, j, 2])
        o_lo = abs(np.float32(normals[s, j, 0]) * d0 + np.float32(normals[s, j, 1]) * d1
                   + np.float32(normals[s, j, 2]) * d2)
        o_hi = abs(np.float32(normals[s2, j2, 0]) * d0 + np.float32(normals[s2, j2, 1]) * d1
                   + np.float32(normals[s2, j2, 2]) * d2)
        step = max(o_lo, o_hi) > depth
    if step or (h_hi and not h_lo):
        out[s, j] |= np.uint8(2)
    if step or (h_lo and not h_hi):
        out[s2, j2] |= np.uint8(1)


@numba.njit(cache=True, nogil=True)
def subray_energy(a, b, dist, direction, normal, oid, refl, mirror, rough, weight,
                  energy):  # pragma: no cover (compiled)
    """Energy of each sub-ray's return (``weight x`` :func:`sensors.radiometry.lambertian_return`
    at 1 m, 0 where nothing is hit), sub-rays ``a:b``; ``weight`` (n_sub,) repeats pulse by
    pulse. The numpy expression it replaces is in ``sensors.lidar._PulsedLidar._cast_beams``."""
    n_w = weight.shape[0]
    for i in range(a, b):
        o = oid[i]
        if o < 0:
            energy[i] = 0.0
            continue
        energy[i] = weight[i % n_w] * _lambertian(direction, normal, i, o, dist[i], refl, mirror, rough)


@numba.njit(cache=True, nogil=True)
def footprint(axis, u, v, tan_u, tan_v, aperture, off, d, vertical):  # pragma: no cover (compiled)
    """Sub-rays of elliptical beams (:func:`sensors.beam.footprint_directions_reference`).

    Parameters
    ----------
    axis : (p, 3) float64
        Unit beam axes (sensor frame, z up).
    u, v : (n,) float64
        Sub-ray positions in beam radii, across (horizontal) and up.
    tan_u, tan_v : (n,) float64
        ``tan(Theta_h / 2) u`` and ``tan(Theta_v / 2) v``, as the reference forms them.
    aperture : float
        Beam radius at the aperture [m].
    off, d : (p, n, 3) float64, out
        Origin offsets [m] and unit directions; rows of a vertical axis are not written.
    vertical : (p,) bool, out
        Axes whose horizontal normal is shorter than 1e-9 (the reference's fallback basis).

    Notes
    -----
    In the reference's order: ``e_h = (-a_y, a_x, 0) / |.|`` (the norm of the three squares
    summed left to right), ``e_v = a x e_h`` as ``np.cross`` forms it, ``across = u e_h + v e_v``,
    ``d = (a + tan_u e_h) + tan_v e_v`` divided by its norm.
    """
    p, n = axis.shape[0], u.shape[0]
    for i in range(p):
        a0, a1, a2 = axis[i, 0], axis[i, 1], axis[i, 2]
        h0, h1, h2 = -a1, a0, 0.0
        norm = math.sqrt(h0 * h0 + h1 * h1 + h2 * h2)
        if norm < 1e-9:
            vertical[i] = True
            continue
        vertical[i] = False
        h0, h1, h2 = h0 / norm, h1 / norm, h2 / norm
        v0 = a1 * h2 - a2 * h1
        v1 = a2 * h0 - a0 * h2
        v2 = a0 * h1 - a1 * h0
        for k in range(n):
            off[i, k, 0] = aperture * (u[k] * h0 + v[k] * v0)
            off[i, k, 1] = aperture * (u[k] * h1 + v[k] * v1)
            off[i, k, 2] = aperture * (u[k] * h2 + v[k] * v2)
            d0 = a0 + tan_u[k] * h0 + tan_v[k] * v0
            d1 = a1 + tan_u[k] * h1 + tan_v[k] * v1
            d2 = a2 + tan_u[k] * h2 + tan_v[k] * v2
            s = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            d[i, k, 0] = d0 / s
            d[i, k, 1] = d1 / s
            d[i, k, 2] = d2 / s


@numba.njit(cache=True, nogil=True)
def probe_leaves(cand, hit, normal, point, probe_hit, probe_point, depth, out):  # pragma: no cover (compiled)
    """Whether each edge probe leaves its pulse's surface (the numpy in
    ``sensors.lidar._PulsedLidar._cast_beams``): it hits where the pulse's pencil ray missed or
    the reverse, or both hit and the probe's point lies more than ``depth`` [m] off the plane of
    the pencil's hit (``|n . (p_probe - p)|``, summed left to right; NaN is not more)."""
    for i in range(cand.shape[0]):
        c = cand[i]
        h, ph = hit[c], probe_hit[i]
        if h != ph:
            out[i] = True
        elif h:
            x = abs(normal[c, 0] * (probe_point[i, 0] - point[c, 0])
                    + normal[c, 1] * (probe_point[i, 1] - point[c, 1])
                    + normal[c, 2] * (probe_point[i, 2] - point[c, 2]))
            out[i] = x > depth
        else:
            out[i] = False
