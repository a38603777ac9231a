"""Spectral response per colour channel: filter transmission x silicon quantum efficiency.

A channel's response to a spectral irradiance E(lambda) [W m^-2 m^-1] is the photon irradiance
weighted by the channel's filter transmission T_c(lambda) and by the *relative* quantum
efficiency q(lambda) = QE(lambda) / QE(lambda_ref):

    Phi_c = integral E(lambda) lambda / (h c) T_c(lambda) q(lambda) d lambda   [photons s^-1 m^-2]

The absolute QE at the reference wavelength is the scalar ``quantum_efficiency`` of
:class:`optics.SensorModel` (the EMVA 1288 figure), so that electrons = eta * photons as in the
standard; Phi_c are "photons as counted at lambda_ref".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _checks
from .constants import PLANCK_J_S, SPEED_OF_LIGHT_M_S

__all__ = [
    "GaussianFilter",
    "DEFAULT_RGB_FILTERS",
    "gaussian_transmission",
    "SILICON_ABSORPTION_WAVELENGTH_M",
    "SILICON_ABSORPTION_PER_M",
    "silicon_absorption_coefficient",
    "relative_quantum_efficiency",
    "channel_response_curves",
    "channel_photon_irradiance",
    "channel_mean_wavelength",
]


class GaussianFilter(NamedTuple):
    """A Gaussian band-pass transmission curve."""

    centre_m: float
    """Centre wavelength [m]."""
    fwhm_m: float
    """Full width at half maximum [m]."""
    peak: float
    """Peak transmission [1]."""


# Representative RGB colour-filter-array curves: Gaussian approximations with centres and widths
# typical of dye CFAs on consumer and machine-vision sensors (red ~600 nm, green ~535 nm, blue
# ~460 nm, 80-100 nm FWHM). They are a documented default, not the curves of a particular
# sensor; pass measured curves to channel_response_curves for a specific camera.
DEFAULT_RGB_FILTERS = (
    GaussianFilter(centre_m=600e-9, fwhm_m=100e-9, peak=0.90),  # R
    GaussianFilter(centre_m=535e-9, fwhm_m=90e-9, peak=0.90),   # G
    GaussianFilter(centre_m=460e-9, fwhm_m=80e-9, peak=0.90),   # B
)


def gaussian_transmission(wavelength_m, f: GaussianFilter):
    """Transmission of a Gaussian filter.

    Parameters
    ----------
    wavelength_m : array_like
        Wavelength [m].
    f : GaussianFilter

    Returns
    -------
    numpy.ndarray
        T = peak exp(-4 ln 2 (lambda - centre)^2 / fwhm^2) [1].
    """
    lam = np.asarray(wavelength_m, dtype=float)
    fwhm = _checks.positive("fwhm_m", f.fwhm_m)
    peak = _checks.in_closed_range("peak", f.peak, 0.0, 1.0)
    return peak * np.exp(-4.0 * np.log(2.0) * (lam - f.centre_m) ** 2 / fwhm ** 2)


# Absorption coefficient of intrinsic crystalline silicon at 300 K, 50 nm steps, from
# M. A. Green and M. J. Keevers, "Optical properties of intrinsic silicon at 300 K", Progress in
# Photovoltaics 3(3), 189-192, 1995, as tabulated by C. Honsberg and S. Bowden, PVEducation,
# "Optical Properties of Silicon" (cm^-1 there; converted to m^-1 here).
SILICON_ABSORPTION_WAVELENGTH_M = np.arange(400, 1101, 50) * 1e-9
SILICON_ABSORPTION_PER_M = np.array([
    9.52e4, 2.55e4, 1.11e4, 6.39e3, 4.14e3, 2.81e3, 1.90e3, 1.30e3,
    8.50e2, 5.35e2, 3.06e2, 1.57e2, 6.40e1, 1.63e1, 3.50e0,
]) * 100.0


def silicon_absorption_coefficient(wavelength_m):
    """Absorption coefficient of silicon at 300 K [1/m], log-linear interpolation.

    Outside 400-1100 nm the end values are extrapolated log-linearly (so the response falls off
    beyond the band gap instead of staying constant).
    """
    lam = np.asarray(wavelength_m, dtype=float)
    x = SILICON_ABSORPTION_WAVELENGTH_M
    log_a = np.log(SILICON_ABSORPTION_PER_M)
    inside = np.interp(lam, x, log_a)
    slope_lo = (log_a[1] - log_a[0]) / (x[1] - x[0])
    slope_hi = (log_a[-1] - log_a[-2]) / (x[-1] - x[-2])
    out = np.where(lam < x[0], log_a[0] + slope_lo * (lam - x[0]),
                   np.where(lam > x[-1], log_a[-1] + slope_hi * (lam - x[-1]), inside))
    return np.exp(out)


def relative_quantum_efficiency(wavelength_m, *, reference_wavelength_m: float = 545e-9,
                                dead_layer_m: float = 0.1e-6,
                                collection_depth_m: float = 3.0e-6):
    """Relative quantum efficiency of a silicon photodiode, 1 at the reference wavelength.

    Parameters
    ----------
    wavelength_m : array_like
        Wavelength [m].
    reference_wavelength_m : float, optional
        Wavelength where the curve is normalised to 1 (where the EMVA QE is quoted) [m].
    dead_layer_m : float, optional
        Surface layer whose carriers recombine before collection [m]. Default 0.1 um.
    collection_depth_m : float, optional
        Depth down to which photo-carriers are collected [m]. Default 3 um.

    Returns
    -------
    numpy.ndarray
        q(lambda) = QE(lambda) / QE(lambda_ref) [1].

    Notes
    -----
    Beer-Lambert absorption between the dead layer and the collection depth:
    QE(lambda) proportional to exp(-alpha d0) - exp(-alpha d), alpha from
    :func:`silicon_absorption_coefficient` (Green & Keevers 1995). The two depths are model
    parameters chosen to give the usual front-illuminated shape (peak near 500-600 nm, blue
    loss, near-infrared tail to 1.1 um); they are not fitted to a particular sensor. Reflection
    losses, microlenses and cover glass are folded into the absolute QE at lambda_ref.
    """
    d0 = _checks.non_negative("dead_layer_m", dead_layer_m)
    d = _checks.positive("collection_depth_m", collection_depth_m)
    if d <= d0:
        raise ValueError(f"collection_depth_m = {collection_depth_m!r}: must exceed "
                         f"dead_layer_m = {dead_layer_m!r}")

    def shape(lam):
        a = silicon_absorption_coefficient(lam)
        return np.exp(-a * d0) - np.exp(-a * d)

    return shape(wavelength_m) / shape(_checks.positive("reference_wavelength_m",
                                                        reference_wavelength_m))


def channel_response_curves(wavelength_m, *, filters=DEFAULT_RGB_FILTERS,
                            reference_wavelength_m: float = 545e-9):
    """Per-channel spectral response T_c(lambda) q(lambda).

    Parameters
    ----------
    wavelength_m : array_like, shape (n_lambda,)
        Wavelength grid [m].
    filters : sequence of GaussianFilter, optional
        One per channel; default :data:`DEFAULT_RGB_FILTERS` (R, G, B).
    reference_wavelength_m : float, optional
        Normalisation wavelength of the relative QE [m].

    Returns
    -------
    numpy.ndarray, shape (n_channels, n_lambda)
        [1].
    """
    lam = np.asarray(wavelength_m, dtype=float)
    q = relative_quantum_efficiency(lam, reference_wavelength_m=reference_wavelength_m)
    return np.stack([gaussian_transmission(lam, f) * q for f in filters])


def channel_photon_irradiance(wavelength_m, spectral_irradiance_w_m2_m, response):
    """Integrate a spectral irradiance to per-channel photon irradiance.

    Parameters
    ----------
    wavelength_m : array_like, shape (n_lambda,)
        Wavelength grid [m], increasing.
    spectral_irradiance_w_m2_m : array_like, shape (..., n_lambda)
        Spectral irradiance [W m^-2 m^-1].
    response : array_like, shape (n_channels, n_lambda)
        Channel responses, e.g. from :func:`channel_response_curves` [1].

    Returns
    -------
    numpy.ndarray, shape (..., n_channels)
        Phi_c = integral E lambda / (h c) R_c d lambda [photons s^-1 m^-2] (trapezoidal rule).
    """
    lam = np.asarray(wavelength_m, dtype=float)
    e = np.asarray(spectral_irradiance_w_m2_m, dtype=float)
    r = np.asarray(response, dtype=float)
    photon = e * (lam / (PLANCK_J_S * SPEED_OF_LIGHT_M_S))
    return np.trapezoid(photon[..., None, :] * r, lam, axis=-1)


def channel_mean_wavelength(wavelength_m, response):
    """Mean wavelength of each channel's spectral response.

    Parameters
    ----------
    wavelength_m : array_like, shape (n_lambda,)
        Wavelength grid [m], increasing.
    response : array_like, shape (n_channels, n_lambda)
        Channel responses, e.g. from :func:`channel_response_curves` [1].

    Returns
    -------
    numpy.ndarray, shape (n_channels,)
        lambda_c = integral lambda R_c d lambda / integral R_c d lambda [m] (trapezoidal rule).

    Notes
    -----
    The wavelength at which a channel samples a quantity that varies slowly across its band,
    such as the extinction of haze, beta ~ lambda^-q with q <= 1.6 (Kim et al. 2001): to first
    order in the variation, the band average of beta is beta(lambda_c). Deviation: the weight is
    the response alone, not the response times the spectrum of the light seen (which changes
    with the scene and the sun); the default filters give 594, 533 and 466 nm (R, G, B).
    """
    lam = np.asarray(wavelength_m, dtype=float)
    r = np.asarray(response, dtype=float)
    return np.trapezoid(r * lam, lam, axis=-1) / np.trapezoid(r, lam, axis=-1)
