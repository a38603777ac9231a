"""Radiometry of the camera: scene radiance -> image irradiance -> photons per pixel."""

from __future__ import annotations

import numpy as np

from . import _checks
from .constants import PLANCK_J_S, SPEED_OF_LIGHT_M_S

__all__ = [
    "field_angle",
    "natural_vignetting",
    "mechanical_vignetting",
    "image_irradiance",
    "photons_per_pixel",
    "photon_energy",
]


def field_angle(image_position_m, focal_length_m: float):
    """Field angle of image points (pinhole / distortion-free mapping).

    Parameters
    ----------
    image_position_m : array_like, shape (..., 2)
        Image-plane position from the optical axis [m] (e.g. :func:`optics.aberrations.pixel_positions`).
    focal_length_m : float
        Focal length (pinhole distance) [m].

    Returns
    -------
    numpy.ndarray, shape (...)
        theta = arctan(``|r|`` / f) [rad].
    """
    f = _checks.positive("focal_length_m", focal_length_m)
    p = np.asarray(image_position_m, dtype=float)
    return np.arctan(np.hypot(p[..., 0], p[..., 1]) / f)


def natural_vignetting(field_angle_rad):
    """Natural (cos^4) fall-off of image irradiance with field angle.

    Parameters
    ----------
    field_angle_rad : array_like
        Angle between the chief ray and the optical axis [rad].

    Returns
    -------
    numpy.ndarray
        cos^4(theta) [1].

    Notes
    -----
    For a Lambertian object and a small exit pupil at distance f: one cos from the obliquity
    of the pupil seen from the image point, one from the obliquity of the image plane, and
    cos^2 from the inverse-square distance f / cos(theta) (Slater 1980; Smith, Modern Optical
    Engineering, sect. 8.2). Exact for a thin lens with the stop at the lens and no pupil
    aberration; real wide-angle lenses deviate (pupil growth with field).
    """
    return np.cos(np.asarray(field_angle_rad, dtype=float)) ** 4


def mechanical_vignetting(field_angle_rad, *, pupil_radius_m: float, aperture_radius_m: float,
                          aperture_distance_m: float):
    """Fraction of the pupil not blocked by a second aperture (lens barrel), "cat's eye" model.

    Parameters
    ----------
    field_angle_rad : array_like
        Field angle [rad].
    pupil_radius_m : float
        Entrance-pupil radius [m].
    aperture_radius_m : float
        Radius of the limiting barrel aperture [m].
    aperture_distance_m : float
        Axial distance of that aperture in front of the entrance pupil [m].

    Returns
    -------
    numpy.ndarray
        Unvignetted pupil fraction, 0..1 [1].

    Notes
    -----
    The beam of field angle theta passes the entrance pupil (radius a) and, at distance s in
    front of it, an aperture of radius b; projected onto the pupil plane along theta the
    aperture is a circle of radius b shifted by d = s tan(theta). The transmitted fraction is
    the circle-circle overlap area divided by pi a^2 (the classical cat's-eye vignetting
    construction, e.g. Smith, Modern Optical Engineering, sect. 7.3).
    """
    a = _checks.positive("pupil_radius_m", pupil_radius_m)
    b = _checks.positive("aperture_radius_m", aperture_radius_m)
    s = _checks.non_negative("aperture_distance_m", aperture_distance_m)
    d = np.abs(s * np.tan(np.asarray(field_angle_rad, dtype=float)))
    full = d <= abs(b - a)
    none = d >= a + b
    d_safe = np.where(full | none, 0.5 * (a + b), d)
    # circle-circle intersection area (lens formula)
    c1 = np.clip((d_safe ** 2 + a ** 2 - b ** 2) / (2 * d_safe * a), -1.0, 1.0)
    c2 = np.clip((d_safe ** 2 + b ** 2 - a ** 2) / (2 * d_safe * b), -1.0, 1.0)
    k = np.sqrt(np.maximum((-d_safe + a + b) * (d_safe + a - b) * (d_safe - a + b)
                           * (d_safe + a + b), 0.0))
    overlap = a * a * np.arccos(c1) + b * b * np.arccos(c2) - 0.5 * k
    frac = overlap / (np.pi * a * a)
    full_frac = min(1.0, (b / a) ** 2)
    return np.where(full, full_frac, np.where(none, 0.0, frac))


def image_irradiance(radiance, f_number: float, *, field_angle_rad=0.0,
                     transmittance: float = 1.0, magnification: float = 0.0):
    """Image-plane irradiance from scene radiance: the camera equation with cos^4 fall-off.

    Parameters
    ----------
    radiance : array_like
        Scene radiance along the chief ray [W m^-2 sr^-1] (or spectral radiance
        [W m^-2 sr^-1 m^-1], or a photon radiance: the equation is linear).
    f_number : float
        N = f / D [1].
    field_angle_rad : array_like, optional
        Field angle of each image point [rad]; broadcast with ``radiance``.
    transmittance : float, optional
        Lens transmittance T [1], 0..1.
    magnification : float, optional
        ``|m|``, lateral magnification magnitude [1]; 0 for objects at infinity.

    Returns
    -------
    numpy.ndarray
        ``E = pi L T cos^4(theta) / (4 N^2 (1 + |m|)^2)`` [W m^-2] (or the matching spectral unit).

    Notes
    -----
    The camera equation for a Lambertian source imaged by an aplanatic lens with a small
    aperture (paraxial working f-number ``N (1 + |m|)``); exact form pi L T sin^2(u'), with
    ``sin u' = 1 / (2 N (1 + |m|))``, differs by < 1 % for N >= 2.8. Natural vignetting cos^4 per
    :func:`natural_vignetting`; mechanical vignetting is a separate factor
    (:func:`mechanical_vignetting`).

    References
    ----------
    W. J. Smith, Modern Optical Engineering, 4th ed., McGraw-Hill, 2008, ch. 8.
    """
    n = _checks.positive("f_number", f_number)
    t = _checks.in_closed_range("transmittance", transmittance, 0.0, 1.0)
    m = abs(_checks.finite("magnification", magnification))
    l_rad = np.asarray(radiance, dtype=float)
    return np.pi * l_rad * t * natural_vignetting(field_angle_rad) / (4.0 * n * n * (1 + m) ** 2)


def photon_energy(wavelength_m):
    """Photon energy h c / lambda [J]."""
    return PLANCK_J_S * SPEED_OF_LIGHT_M_S / np.asarray(wavelength_m, dtype=float)


def photons_per_pixel(irradiance_w_m2, *, pixel_pitch_m: float, exposure_s: float,
                      wavelength_m: float, fill_factor: float = 1.0):
    """Mean photons reaching one pixel during an exposure (monochromatic).

    Parameters
    ----------
    irradiance_w_m2 : array_like
        Image-plane irradiance [W/m^2].
    pixel_pitch_m : float
        Pixel pitch; the pixel area is pitch^2 [m].
    exposure_s : float
        Exposure time [s].
    wavelength_m : float
        Wavelength [m].
    fill_factor : float, optional
        Light-collecting fraction of the pixel area [1] (1 when microlenses are folded into QE,
        as EMVA 1288 does).

    Returns
    -------
    numpy.ndarray
        mu_p = E A t lambda / (h c) [photons] (EMVA 1288 R3.1 eq. (2)).
    """
    p = _checks.positive("pixel_pitch_m", pixel_pitch_m)
    t = _checks.non_negative("exposure_s", exposure_s)
    ff = _checks.in_closed_range("fill_factor", fill_factor, 0.0, 1.0)
    lam = _checks.positive("wavelength_m", wavelength_m)
    e = np.asarray(irradiance_w_m2, dtype=float)
    return e * p * p * ff * t / photon_energy(lam)
