"""optics.spectral.channel_mean_wavelength: analytic centroids."""

import numpy as np

from optics.spectral import GaussianFilter, channel_mean_wavelength, gaussian_transmission


def test_mean_wavelength_of_symmetric_and_flat_responses():
    lam = np.arange(350, 1101, 5) * 1e-9
    # A Gaussian well inside the grid is symmetric about its centre: the centroid is the centre
    # (analytic); a flat response over [350, 1100] nm has its centroid at the midpoint, 725 nm.
    g = np.stack([gaussian_transmission(lam, GaussianFilter(600e-9, 40e-9, 1.0)), np.ones_like(lam)])
    np.testing.assert_allclose(channel_mean_wavelength(lam, g), [600e-9, 725e-9], rtol=1e-9)
