"""Radiometry: camera equation, cos^4 vignetting, mechanical vignetting, photon counts, spectra."""

from __future__ import annotations

import numpy as np
import pytest

from optics.aberrations import pixel_positions
from optics.constants import PLANCK_J_S, SPEED_OF_LIGHT_M_S
from optics.radiometry import (
    field_angle,
    image_irradiance,
    mechanical_vignetting,
    photons_per_pixel,
)
from optics.spectral import (
    DEFAULT_RGB_FILTERS,
    channel_photon_irradiance,
    channel_response_curves,
    relative_quantum_efficiency,
)


def _pupil_integral_irradiance(radiance, r_image, focal, pupil_radius, n=400):
    """Independent check: E = L * integral cos(t1) cos(t2) / d^2 dA over a uniform disc pupil
    at distance f (radiometry of a Lambertian disc source, no cos^4 assumed)."""
    u = (np.arange(n) + 0.5) / n * 2 - 1
    x, y = np.meshgrid(u * pupil_radius, u * pupil_radius)
    inside = x * x + y * y <= pupil_radius ** 2
    dA = (2 * pupil_radius / n) ** 2
    dx = x - r_image
    d2 = dx * dx + y * y + focal * focal
    cos = focal / np.sqrt(d2)  # both planes are normal to the axis
    return radiance * np.sum(np.where(inside, cos * cos / d2, 0.0)) * dA


def test_flat_lambertian_field_follows_cos4_and_camera_equation():
    # A flat Lambertian field (uniform radiance) through a small-aperture lens: the image
    # irradiance from an independent pupil integration equals pi L / (4 N^2) cos^4(theta)
    # (camera equation + natural vignetting). The paraxial camera equation is accurate to
    # ~1/(16 N^2) (sin^2 u' vs tan^2 u'), 0.1 % at N = 8; the off-axis pupil integral differs
    # from cos^4 by O((D/f)^2) likewise.
    focal, n_f, radiance = 10e-3, 8.0, 50.0
    pupil_radius = focal / (2 * n_f)
    for r_image in [0.0, 3e-3, 6e-3, 9e-3]:
        theta = np.arctan(r_image / focal)
        e_model = image_irradiance(radiance, n_f, field_angle_rad=theta)
        e_ref = _pupil_integral_irradiance(radiance, r_image, focal, pupil_radius)
        assert e_model == pytest.approx(e_ref, rel=5e-3)
    # and on a pixel grid the fall-off is cos^4 of the pixel's field angle
    pos = pixel_positions((48, 64), 50e-6)
    theta = field_angle(pos, focal)
    e = image_irradiance(np.full(theta.shape, radiance), n_f, field_angle_rad=theta)
    ratio = e / (np.pi * radiance / (4 * n_f ** 2))
    np.testing.assert_allclose(ratio, focal ** 4 / (focal ** 2 + np.sum(pos ** 2, -1)) ** 2,
                               rtol=1e-12)  # cos^4(arctan(r/f)) = f^4 / (f^2 + r^2)^2


def test_mechanical_vignetting_overlap():
    # Equal circles (a = b) whose centres are one radius apart overlap by
    # (2 pi / 3 - sqrt(3) / 2) / pi = 0.39100 of a circle's area (analytic lens area).
    a = 2e-3
    s = 10e-3
    theta = np.arctan(a / s)  # shift d = s tan(theta) = a
    frac = mechanical_vignetting([0.0, theta, np.arctan(3 * a / s)], pupil_radius_m=a,
                                 aperture_radius_m=a, aperture_distance_m=s)
    np.testing.assert_allclose(frac, [1.0, (2 * np.pi / 3 - np.sqrt(3) / 2) / np.pi, 0.0],
                               atol=1e-12)
    # A larger barrel aperture does not vignette until d > b - a.
    frac = mechanical_vignetting(np.arctan(0.9e-3 / s), pupil_radius_m=a,
                                 aperture_radius_m=3e-3, aperture_distance_m=s)
    assert frac == 1.0


def test_photons_per_pixel_from_irradiance():
    # mu_p = E A t lambda / (h c) (EMVA 1288 eq. (2)): 1 W/m^2, (5 um)^2, 1 ms, 550 nm
    # -> 25e-12 * 1e-3 * 550e-9 / (h c) = 6.9219e4 photons (analytic).
    n = photons_per_pixel(1.0, pixel_pitch_m=5e-6, exposure_s=1e-3, wavelength_m=550e-9)
    assert n == pytest.approx(25e-12 * 1e-3 * 550e-9 / (PLANCK_J_S * SPEED_OF_LIGHT_M_S),
                              rel=1e-12)
    assert n == pytest.approx(6.9219e4, rel=1e-4)


def test_spectral_response_monochromatic_line_and_grey_balance():
    # A narrow line at 535 nm (green filter centre) gives photons ~ E/(h c/lambda) * T_G * q,
    # analytic for a Gaussian line much narrower than the filter.
    lam = np.linspace(380e-9, 780e-9, 4001)
    response = channel_response_curves(lam)
    line = 1e9 * np.exp(-0.5 * ((lam - 535e-9) / 0.5e-9) ** 2)  # [W m^-2 m^-1]
    power = np.trapezoid(line, lam)
    phi = channel_photon_irradiance(lam, line, response)
    q = relative_quantum_efficiency(535e-9)
    expected_g = power * 535e-9 / (PLANCK_J_S * SPEED_OF_LIGHT_M_S) * 0.9 * q
    assert phi[1] == pytest.approx(expected_g, rel=1e-3)
    # the other channels see the same line through their own Gaussian tails (analytic ratio)
    t = lambda f: f.peak * np.exp(-4 * np.log(2) * (535e-9 - f.centre_m) ** 2 / f.fwhm_m ** 2)
    r, g, b = DEFAULT_RGB_FILTERS
    assert phi[0] / phi[1] == pytest.approx(t(r) / t(g), rel=2e-3)
    assert phi[2] / phi[1] == pytest.approx(t(b) / t(g), rel=2e-3)
    # broadcasting over leading axes
    assert channel_photon_irradiance(lam, np.ones((2, 3, lam.size)), response).shape == (2, 3, 3)
    assert len(DEFAULT_RGB_FILTERS) == 3


def test_relative_qe_shape_bounds():
    lam = np.linspace(350e-9, 1150e-9, 81)
    q = relative_quantum_efficiency(lam)
    assert relative_quantum_efficiency(545e-9) == pytest.approx(1.0)
    assert np.all(q >= 0) and q[-1] < 0.05  # no response beyond the silicon band gap
    assert q[np.searchsorted(lam, 400e-9)] < 1.0  # blue loss in the dead layer
