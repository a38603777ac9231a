"""The ToF camera's compiled per-pixel pass against the numpy functions it fuses.

Regression tests: the expected values are the numpy physics of the sensor packages
(:func:`sensors.noise.gaussian_range_noise`, :func:`sensors.tof.phase_wrap`,
:func:`sensors.tof.backfold`, :func:`sensors.radiometry.lambertian_return`,
:attr:`hifi.caster.Hits.cos_incidence` and the masking of :func:`hifi.run.dataset.range_frame`),
which the kernel must reproduce bit for bit (same operations, same order), so that frames keep
their bytes.
"""

import numpy as np
import pytest

from hifi.caster import Hits
from hifi.constants import SPEED_OF_LIGHT_M_S
from hifi.run.dataset import RANGE_COLUMNS, range_columns, range_frame
from sensors.noise import gaussian_range_noise
from sensors.radiometry import lambertian_return
from sensors.tof import SR4000_NOISE_POWER_W, SR4000_REFERENCE_POWER_W, backfold, phase_wrap

pytest.importorskip("numba")


def _hits(rng, n, n_objects):
    """Hits of n rays from one origin: misses (NaN / -1), a hit at distance 0 (a surface through
    the emitter), normals facing the ray and away from it."""
    dirs = rng.normal(size=(n, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    normal = rng.normal(size=(n, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    dist = rng.uniform(0.0, 14.0, n)
    oid = rng.integers(-1, n_objects, n).astype(np.int32)
    dist[oid < 0] = np.nan
    dist[3] = 0.0
    oid[3] = 0
    origin = np.array([[1.5, -2.0, 0.7]])
    point = origin + dirs * dist[:, None]
    normal[oid < 0] = np.nan
    return Hits(dist, point, normal, dirs, oid, np.where(oid >= 0, 7, -1).astype(np.int32),
                np.zeros(n, dtype=np.int8)), origin, dirs


@pytest.mark.parametrize("wrap", ["none", "phase", "backfold"])
def test_tof_pixels_matches_the_numpy_chain_bit_for_bit(wrap):
    from sensors._tof_kernel import BACKFOLD, NO_WRAP, PHASE_WRAP, oren_nayar_terms, tof_pixels
    rng = np.random.default_rng(5)
    n, n_obj = 3001, 4
    hits, origin, dirs = _hits(rng, n, n_obj)
    refl = rng.uniform(0.0, 1.0, n)
    mirror = np.append(rng.uniform(0.0, 0.5, n_obj), np.nan)
    rough = np.append([0.0, 0.19, 0.5, 1.2], np.nan)
    classes = np.array([1, 2, 3, 1, 0], dtype=np.uint8)
    sigma, max_range, f_mod = 0.004, 10.0, 30e6
    # numpy: the ToF step's chain as the sensor functions write it
    measured = gaussian_range_noise(hits.distance, sigma, np.random.default_rng(11))
    if wrap == "phase":
        measured = phase_wrap(measured, f_mod)
    elif wrap == "backfold":
        measured = backfold(measured, max_range)
    det = hits.hit & np.isfinite(measured) & (hits.distance > 0.0)
    reported = origin + dirs * measured[:, None]
    oid = hits.object_id
    intensity = lambertian_return(refl, hits.cos_incidence, hits.distance, mirror[oid], roughness_rad=rough[oid])
    power = SR4000_REFERENCE_POWER_W * intensity
    want = range_frame(("pixel",), (n,), timestamp=0.0, yaw=np.zeros(n), pitch=np.zeros(n), hits=hits,
                       detected=det, distance_noisy=measured, points_noisy=reported, intensity=intensity,
                       received_power=power, snr=power / SR4000_NOISE_POWER_W,
                       reflectivity=intensity * hits.distance ** 2)
    # the kernel, in three uneven chunks
    code, wrap_m = {"none": (NO_WRAP, 0.0), "phase": (PHASE_WRAP, SPEED_OF_LIGHT_M_S / (2.0 * f_mod)),
                    "backfold": (BACKFOLD, max_range)}[wrap]
    z = np.random.default_rng(11).standard_normal(n)
    out = [np.empty(n) for _ in range(5)]
    detected, class_ids, columns = np.empty(n, dtype=bool), np.empty(n, dtype=np.uint8), range_columns(n)
    for a, b in ((0, 1000), (1000, 1001), (1001, n)):
        tof_pixels(a, b, hits.distance, hits.point, hits.normal, hits.direction, oid, origin, dirs, z, refl,
                   mirror, *oren_nayar_terms(rough), classes, sigma, code, wrap_m, SR4000_REFERENCE_POWER_W,
                   SR4000_NOISE_POWER_W,
                   out[0], detected, *out[1:], class_ids, *(columns[k] for k in RANGE_COLUMNS))
    got = range_frame(("pixel",), (n,), timestamp=0.0, yaw=np.zeros(n), pitch=np.zeros(n), hits=hits,
                      detected=detected, distance_noisy=None, points_noisy=None, intensity=out[1],
                      received_power=out[2], snr=out[3], reflectivity=out[4], columns=columns)
    assert np.isnan(want["intensity"].data).any() and want["detected"].data.any() and not want["detected"].data.all()
    for name, var in want.items():
        assert got[name].data.dtype == var.data.dtype, name
        assert got[name].data.tobytes() == var.data.tobytes(), name
    assert out[0].tobytes() == measured.tobytes()
    assert class_ids.tobytes() == classes[oid].tobytes()
