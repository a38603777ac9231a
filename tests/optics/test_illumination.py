"""optics.illumination: Lambertian facets under the sun and an isotropic sky, on plain arrays.

Expected values are analytic (Lambert's cosine law, the Liu & Jordan (1963) sky view factor
(1 + cos tilt) / 2, the uniform-sky relation E = pi L) from the inputs written out in each
test; no scene, caster or camera is involved.
"""

from __future__ import annotations

import numpy as np
import pytest

from optics.illumination import (
    SPECTRAL_GRID_M,
    lambertian_photon_radiance,
    scene_photon_radiance,
    sky_photon_radiance,
    sun_facing,
    sunlight,
)
from optics.spectral import channel_response_curves

#: Kernels are a few float64 operations per element: 1e-12 relative is a few ulp.
RTOL = 1e-12

E_DIR = np.array([3.0e20, 2.0e20, 1.0e20])     # [photons s^-1 m^-2], made-up channel values
E_SKY = np.array([0.2e20, 0.3e20, 0.5e20])
RHO = np.array([0.8, 0.6, 0.4])


def _sun(elevation_deg, azimuth_deg=180.0):
    el, az = np.radians(elevation_deg), np.radians(azimuth_deg)
    return np.array([np.cos(el) * np.sin(az), np.cos(el) * np.cos(az), np.sin(el)])


def _tilted_normal(tilt_deg):
    """Normal of a facet tilted by tilt_deg about the east axis, towards the south."""
    b = np.radians(tilt_deg)
    return np.array([0.0, -np.sin(b), np.cos(b)])


@pytest.mark.parametrize("tilt_deg", [0.0, 30.0, 90.0, 135.0])
def test_lambertian_facet_cosine_law_and_sky_view_factor(tilt_deg):
    # L = rho / pi (E_dir cos i + E_sky (1 + cos beta) / 2), sun 40 deg up in the south:
    # cos i = cos(50 deg - beta) for a facet tilted by beta towards the south (analytic).
    s = _sun(40.0)
    n = _tilted_normal(tilt_deg)
    cos_i = max(np.cos(np.radians(50.0 - tilt_deg)), 0.0)
    expected = RHO / np.pi * (E_DIR * cos_i + E_SKY * (1.0 + np.cos(np.radians(tilt_deg))) / 2.0)
    got = lambertian_photon_radiance(RHO[None, :], n[None, :], s, E_DIR, E_SKY, [True])
    np.testing.assert_allclose(got[0], expected, rtol=RTOL)


def test_shadowed_facet_keeps_only_the_sky_term():
    s = _sun(40.0)
    n = np.array([[0.0, 0.0, 1.0]])
    shaded = lambertian_photon_radiance(RHO[None, :], n, s, E_DIR, E_SKY, [False])
    np.testing.assert_allclose(shaded[0], RHO / np.pi * E_SKY, rtol=RTOL)   # n_z = 1: full sky


def test_energy_bound_white_horizontal_facet():
    # A white (rho = 1) horizontal Lambertian facet re-emits exactly what it receives:
    # exitance pi L = E_dir cos z + E_sky (energy conservation, analytic).
    s = _sun(25.0)
    got = lambertian_photon_radiance(np.ones((1, 3)), [[0.0, 0.0, 1.0]], s, E_DIR, E_SKY, [True])
    np.testing.assert_allclose(np.pi * got[0], E_DIR * s[2] + E_SKY, rtol=RTOL)


def test_sky_radiance_inverts_uniform_sky_irradiance():
    # A uniform sky of radiance L gives a horizontal plane pi L (analytic).
    np.testing.assert_allclose(np.pi * sky_photon_radiance(E_SKY), E_SKY, rtol=RTOL)


def test_sun_facing_needs_the_sun_up_and_in_front():
    normals = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]])
    s = np.array([0.0, -np.cos(np.radians(30.0)), 0.5])   # south, 30 deg up (x exactly 0)
    np.testing.assert_array_equal(sun_facing(normals, s, np.radians(60.0)),
                                  [True, False, True, False])   # east wall: n . s = 0, edge-on
    # Below the horizon nothing faces the sun, whatever the normals.
    assert not sun_facing(normals, _sun(-5.0), np.radians(95.0)).any()
    assert sun_facing(np.zeros((0, 3)), s, 0.5).shape == (0,)    # same rank when empty


def test_scene_radiance_uses_facets_on_hits_and_sky_on_misses():
    s = _sun(40.0)
    hit = np.array([True, False, True])
    rho = np.array([RHO, [np.nan] * 3, RHO])           # misses may carry NaN reflectance
    normal = np.array([[0.0, 0.0, 1.0], [np.nan] * 3, [0.0, 0.0, 1.0]])
    lit = np.array([True, False, False])
    got = scene_photon_radiance(hit, rho, normal, lit, s, E_DIR, E_SKY)
    assert got.shape == (3, 3) and np.isfinite(got).all()
    np.testing.assert_allclose(got[0], RHO / np.pi * (E_DIR * s[2] + E_SKY), rtol=RTOL)
    np.testing.assert_allclose(got[1], E_SKY / np.pi, rtol=RTOL)
    np.testing.assert_allclose(got[2], RHO / np.pi * E_SKY, rtol=RTOL)
    empty = scene_photon_radiance(np.zeros(0, bool), np.zeros((0, 3)), np.zeros((0, 3)),
                                  np.zeros(0, bool), s, E_DIR, E_SKY)
    assert empty.shape == (0, 3)


def test_sunlight_is_zero_at_night_and_positive_by_day():
    # Salzburg: 2024-05-01 00:00 UTC is night (sun far below the horizon), 10:00 UTC is day;
    # with the sun down the clear-sky model gives no irradiance (optics.sun, analytic zero).
    resp = channel_response_curves(SPECTRAL_GRID_M)
    night = sunlight(np.datetime64("2024-05-01T00:00:00"), 47.8, 13.04, 430.0, resp)
    day = sunlight(np.datetime64("2024-05-01T10:00:00"), 47.8, 13.04, 430.0, resp)
    assert night.zenith_rad > np.pi / 2
    assert (night.direct_normal == 0).all() and (night.diffuse_horizontal == 0).all()
    assert day.zenith_rad < np.pi / 2 and (day.direct_normal > 0).all()
    np.testing.assert_allclose(np.linalg.norm(day.direction_scene), 1.0, rtol=RTOL)
    assert day.direct_normal.shape == day.diffuse_horizontal.shape == (3,)
