"""Noise models for range measurements (plain functions of arrays and a Generator)."""

from __future__ import annotations

import numpy as np


def gaussian_range_noise(distance_m, sigma_m, rng: np.random.Generator, *, bias_m=0.0):
    """Noisy ranges: ``d + bias + N(0, sigma)`` (BlenSor, Gschwandtner et al. 2011, Eq. 2).

    Parameters
    ----------
    distance_m : array_like
        True ranges [m]; NaN stays NaN.
    sigma_m : float
        Standard deviation of the per-measurement noise [m]; 0 gives no noise.
    rng : numpy.random.Generator
    bias_m : array_like
        Systematic offset broadcast against ``distance_m`` (e.g. a fixed per-laser bias) [m].

    Returns
    -------
    ndarray
        Same shape as ``distance_m``. One normal deviate is drawn per element whatever
        ``sigma_m`` is, so the random stream does not depend on the parameter values.
    """
    d = np.asarray(distance_m, dtype=float)
    return noisy_range(d, sigma_m, rng.standard_normal(d.shape), bias_m=bias_m)


def noisy_range(distance_m, sigma_m, deviates, *, bias_m=0.0):
    """:func:`gaussian_range_noise` with its standard normal deviates drawn beforehand.

    Parameters
    ----------
    distance_m : array_like
        True ranges [m]; NaN stays NaN.
    sigma_m : float
        Standard deviation of the per-measurement noise [m].
    deviates : array_like
        Standard normal deviates ``z``, one per element of ``distance_m``: the draw
        :func:`gaussian_range_noise` makes, made elsewhere (on another thread while the frame
        casts) or sliced for a chunk of the elements.
    bias_m : array_like
        As :func:`gaussian_range_noise` [m].

    Returns
    -------
    ndarray
        ``d + bias + sigma z`` [m], element by element (a chunk of the elements gives the same
        bits as the whole).
    """
    d = np.asarray(distance_m, dtype=float)
    return d + np.asarray(bias_m, dtype=float) + float(sigma_m) * np.asarray(deviates, dtype=float)


def orthonormal_basis(directions):
    """Two unit vectors orthogonal to each (n, 3) unit direction and to each other.

    Uses the branch-free construction of Duff et al., "Building an orthonormal basis,
    revisited", JCGT 6(1), 2017, which is stable for every direction.
    """
    d = np.asarray(directions, dtype=float)
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    sign = np.where(z >= 0.0, 1.0, -1.0)
    a = -1.0 / (sign + z)
    b = x * y * a
    e1 = np.column_stack([1.0 + sign * x * x * a, sign * b, -sign * x])
    e2 = np.column_stack([b, sign + y * y * a, -y])
    return e1, e2


def orthogonal_point_noise(directions, sigma_m, rng: np.random.Generator):
    """Displacements perpendicular to each ray, each axis N(0, sigma) [m], shape (n, 3).

    The synthetic scanner of Doria (2009) perturbs points orthogonally to the line of sight as
    well as along it; here the perpendicular error is an isotropic 2-D Gaussian in the plane
    normal to the ray with standard deviation ``sigma_m`` per axis.
    """
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    e1, e2 = orthonormal_basis(d)
    z = rng.standard_normal((d.shape[0], 2))
    return float(sigma_m) * (z[:, :1] * e1 + z[:, 1:] * e2)


def snr_range_sigma(snr, *, floor_m, snr1_m):
    """Range noise sigma [m] of a pulsed lidar as a function of the return's SNR.

    Parameters
    ----------
    snr : array_like
        Signal-to-noise ratio of the return [1]; NaN gives NaN.
    floor_m : float
        Sigma at infinite SNR (timing jitter, clock quantisation, calibration) [m].
    snr1_m : float
        Noise-limited sigma at SNR = 1 [m].

    Returns
    -------
    ndarray
        ``sigma_R = sqrt(floor_m^2 + (snr1_m / SNR)^2)``.

    Notes
    -----
    The timing error of a pulse in additive noise is the noise divided by the slope of the
    pulse, ``sigma_t = tau_rise / SNR``, so ``sigma_R = c tau_rise / (2 SNR)`` (Skolnik,
    *Introduction to Radar Systems*, 3rd ed., 2001, sec. 6.3; Richmond & Cain, *Direct-Detection
    LADAR Systems*, SPIE 2010, sec. 6.6); a floor adds in quadrature for the SNR-independent
    parts. ``snr1_m`` plays the role of ``c tau_rise / 2``; a waveform-fitting receiver (the
    Velodyne DSP) does better than leading-edge timing, so it is fitted to measured noise rather
    than taken from the pulse rise time.
    """
    s = np.asarray(snr, dtype=float)
    with np.errstate(divide="ignore"):
        return np.sqrt(float(floor_m) ** 2 + (float(snr1_m) / s) ** 2)
