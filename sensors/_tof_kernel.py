"""Compiled per-pixel pass of the ToF camera (numba): :func:`tof_pixels`.

:meth:`sensors.tof.ToFSR4000.step` ran about twenty numpy passes over every pixel after the
cast (noise, wrap, detection, reported point, incidence, Oren-Nayar return, power, SNR,
reflectivity, the masked dataset columns), one after the other on one thread: 1.3 ms of a
5 ms frame of the SR4000's 25,344 pixels beside 2.5 ms of raw Embree on two threads
(``benchmarks/bench_sensors.py``). This kernel makes them one pass over a chunk of pixels, run
on the caster's threads (``nogil``).

The physics stays written once in numpy (:func:`sensors.radiometry.lambertian_return`,
:func:`sensors.radiometry.oren_nayar_backscatter`, :func:`sensors.noise.gaussian_range_noise`,
:func:`sensors.tof.phase_wrap`, :func:`sensors.tof.backfold`, :attr:`hifi.caster.Hits.cos_incidence`);
this kernel repeats each floating-point operation of those functions in their order (no
``fastmath``; ``x ** 2`` as numpy's ``x * x``, ``np.mod`` as numpy's ``npy_divmod``), and
``tests/sensors/test_tof_kernel.py`` holds it to them bit for bit. The rarer terms
(retroreflectors, glass throughput, weather extinction) stay in numpy after the kernel.
Imported at the ToF camera's first frame, so importing the sensors does not import numba.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: ``wrap`` codes of :func:`tof_pixels`: no wrap, phase wrap (:func:`sensors.tof.phase_wrap`),
#: BlenSor's backfolding (:func:`sensors.tof.backfold`).
NO_WRAP, PHASE_WRAP, BACKFOLD = 0, 1, 2


def oren_nayar_terms(roughness_rad):
    """``A = 1 - 0.5 s^2 / (s^2 + 0.33)`` and ``B = 0.45 s^2 / (s^2 + 0.09)`` of
    :func:`sensors.radiometry.oren_nayar_backscatter` for each roughness ``s`` [rad] (a table per
    object), with its numpy operations: the same bits as it computes them per hit."""
    s2 = np.asarray(roughness_rad, dtype=float) ** 2
    return np.ascontiguousarray(1.0 - 0.5 * s2 / (s2 + 0.33)), np.ascontiguousarray(0.45 * s2 / (s2 + 0.09))


@numba.njit(cache=True, nogil=True)
def _remainder(a, b):  # pragma: no cover (compiled)
    """``np.mod(a, b)`` for float64: numpy's ``npy_divmod`` remainder (the sign of ``b``)."""
    mod = np.fmod(a, b)
    if b == 0.0:
        return mod
    if mod != 0.0:
        if (b < 0.0) != (mod < 0.0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@numba.njit(cache=True, nogil=True)
def tof_pixels(a, b, distance, point, normal, direction, object_id, origins, dirs, z, reflectance,
               mirror, oren_a, oren_b, class_table, sigma_m, wrap, wrap_m, reference_w, noise_w,
               measured, detected, intensity, power, snr, reflectivity, class_ids,
               distance_noisy, x, y, z_, x_noisy, y_noisy, z_noisy, object_id32):  # pragma: no cover
    """Pixels ``a:b`` of a ToF frame from their hits, one pass.

    Parameters
    ----------
    a, b : int
        The pixels (rows of every per-pixel array).
    distance, point, normal, direction, object_id
        :class:`hifi.caster.Hits` of every pixel ((n,), (n, 3), (n, 3), (n, 3), (n,)).
    origins : (1, 3) or (n, 3) float64
        Ray origins, scene frame [m]: one row every ray shares, or one per ray.
    dirs : (n, 3) float64
        Emitted directions, scene frame.
    z : (n,) float64
        Standard normal deviates of the frame, drawn in one call.
    reflectance : (n,) float64
        Diffuse reflectance of each hit (:meth:`hifi.world.textures.HitTextures.reflectance`).
    mirror : (n_objects + 1,) float64
        Per object id (-1 last): specular fraction.
    oren_a, oren_b : (n_objects + 1,) float64
        Per object id (-1 last): the Oren-Nayar ``A`` and ``B`` of its roughness
        (:func:`oren_nayar_terms`).
    class_table : (n_objects + 1,) uint8
        Per object id (-1 last): semantic class.
    sigma_m : float
        Range noise sigma [m].
    wrap : int
        :data:`NO_WRAP`, :data:`PHASE_WRAP` (``wrap_m`` the unambiguous range c / (2 f) [m]) or
        :data:`BACKFOLD` (``wrap_m`` the maximum range [m]).
    reference_w, noise_w : float
        Received power of a white target at 1 m, and the noise power [W].
    measured, detected, intensity, power, snr, reflectivity, class_ids : out, (n,)
        The step's per-pixel values (``measured``: noisy, wrapped range before the detection
        mask).
    distance_noisy, x, y, z_, x_noisy, y_noisy, z_noisy, object_id32 : out, (n,)
        :func:`hifi.run.dataset.range_columns`, filled as :func:`hifi.run.dataset.range_frame`
        fills them.
    """
    shared = origins.shape[0] == 1
    last = class_table.shape[0] - 1
    half = wrap_m / 2.0
    for i in range(a, b):
        d = distance[i]
        m = (d + 0.0) + sigma_m * z[i]             # gaussian_range_noise: d + bias + sigma z
        if wrap == PHASE_WRAP:
            m = _remainder(m, wrap_m)
        elif wrap == BACKFOLD:
            f = m - half if m > half else m
            m = np.nan if m > wrap_m else f
        measured[i] = m
        oid = object_id[i]
        k = oid if oid >= 0 else last
        det = oid >= 0 and math.isfinite(m) and d > 0.0
        detected[i] = det
        o = 0 if shared else i
        for c in range(3):
            p = point[i, c]
            rep = origins[o, c] + dirs[i, c] * m
            if c == 0:
                x[i] = p
                x_noisy[i] = rep if det else np.nan
            elif c == 1:
                y[i] = p
                y_noisy[i] = rep if det else np.nan
            else:
                z_[i] = p
                z_noisy[i] = rep if det else np.nan
        distance_noisy[i] = m if det else np.nan
        object_id32[i] = oid
        class_ids[i] = class_table[k]
        # Hits.cos_incidence: -(dx nx + dy ny + dz nz), NaN on a miss
        cos = direction[i, 0] * normal[i, 0]
        cos += direction[i, 1] * normal[i, 1]
        cos += direction[i, 2] * normal[i, 2]
        cos = -cos
        if oid < 0:
            cos = np.nan
        # oren_nayar_backscatter: clip to [0, 1] (NaN stays NaN), A cos + B sin^2, 0 where cos <= 0
        ci = min(max(cos, 0.0), 1.0) if cos == cos else cos
        back = oren_a[k] * ci + oren_b[k] * (1.0 - ci * ci) if ci > 0.0 else 0.0
        # lambertian_return: (1 - mirror) rho f (1 / r)^2, r NaN where not positive
        r = d if d > 0.0 else np.nan
        q = 1.0 / r
        e = (1.0 - mirror[k]) * reflectance[i] * back * (q * q)
        intensity[i] = e
        pw = reference_w * e
        power[i] = pw
        snr[i] = pw / noise_w
        reflectivity[i] = e * (d * d)
