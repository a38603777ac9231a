"""Detection threshold of pulsed lidars (BlenSor, Gschwandtner et al. 2011, Eq. 1)."""

from __future__ import annotations

import numpy as np


def min_detectable_reflectivity(distance_m, *, reflectivity_lower=0.10, reflectivity_upper=0.80,
                                distance_lower_m=50.0, distance_upper_m=120.0):
    """Smallest diffuse reflectivity the sensor detects at ``distance_m``.

    Parameters
    ----------
    distance_m : array_like
        Path length to the surface [m].
    reflectivity_lower, reflectivity_upper : float
        Minimum reflectivity detected at ``distance_lower_m`` and at ``distance_upper_m``.
        Defaults: the HDL-64E S2 data sheet (10 % at 50 m, 80 % at 120 m).
    distance_lower_m, distance_upper_m : float
        [m].

    Returns
    -------
    ndarray
        0 below ``distance_lower_m`` (any surface with reflectivity > 0 is detected), rising
        linearly to ``reflectivity_upper`` at ``distance_upper_m``, and ``inf`` beyond it
        (nothing is detected past the farthest distance the data sheet guarantees); NaN in,
        NaN out.

    Notes
    -----
    Eq. (1) of the BlenSor paper, in the form its text describes. As printed, the equation uses
    ``dist`` where ``dist - d_lower`` is meant: with the HDL-64E values it would demand
    r_lower + (r_upper - r_lower) * 50 / 70 = 60 % at 50 m, contradicting both the paper's text
    and the data sheet's 10 % at 50 m. The continuous form implemented here is

        r_min(d) = r_lower + (r_upper - r_lower) * (d - d_lower) / (d_upper - d_lower)

    for d_lower <= d <= d_upper, which equals r_lower at d_lower and r_upper at d_upper.

    References
    ----------
    M. Gschwandtner et al., "BlenSor: Blender Sensor Simulation Toolbox", ISVC 2011, Eq. (1).
    Velodyne, HDL-64E S2 data sheet (detects 10 % reflectivity at 50 m, 80 % at 120 m).
    """
    d = np.asarray(distance_m, dtype=float)
    frac = (d - distance_lower_m) / (distance_upper_m - distance_lower_m)
    r = reflectivity_lower + (reflectivity_upper - reflectivity_lower) * frac
    r = np.where(d < distance_lower_m, 0.0, r)
    r = np.where(d > distance_upper_m, np.inf, r)
    return np.where(np.isnan(d), np.nan, r)


def detected(distance_m, reflectivity, **threshold):
    """Whether a return is reported: a hit (finite distance) with reflectivity above the threshold.

    ``reflectivity`` is the diffuse reflectivity of the surface hit (scaled by ``1 - mirror``);
    a surface of reflectivity 0 is never detected. Keyword arguments as
    :func:`min_detectable_reflectivity`.
    """
    d = np.asarray(distance_m, dtype=float)
    rho = np.asarray(reflectivity, dtype=float)
    r_min = min_detectable_reflectivity(d, **threshold)
    with np.errstate(invalid="ignore"):
        return np.isfinite(d) & (rho > 0) & (rho >= r_min)


def detection_probability(snr, snr_threshold):
    """Probability that a return crosses the receiver's threshold in Gaussian noise.

    Parameters
    ----------
    snr : array_like
        Peak signal over the RMS noise of the receiver, ``P_r / P_noise`` [1]; NaN gives 0.
    snr_threshold : float
        Detection threshold over the RMS noise (threshold-to-noise ratio) [1].

    Returns
    -------
    ndarray
        ``P_d = Phi(SNR - SNR_threshold)``, 0..1.

    Notes
    -----
    A peak of amplitude s in additive Gaussian noise of standard deviation sigma exceeds a
    threshold T with probability ``Q((T - s) / sigma) = Phi(s / sigma - T / sigma)`` (Skolnik,
    *Introduction to Radar Systems*, 3rd ed., 2001, sec. 2.5, for the non-fluctuating target in
    the high-SNR Gaussian approximation of the Rice distribution; Richmond & Cain, *Direct-Detection
    LADAR Systems*, SPIE 2010, ch. 6). The 50 % point is ``SNR = SNR_threshold``. Signal shot
    noise and speckle are neglected (receiver-noise-limited APD detection of a diffuse target
    with an aperture much larger than the speckle size).
    """
    from scipy.special import ndtr

    s = np.nan_to_num(np.asarray(snr, dtype=float), nan=-np.inf)
    return ndtr(s - float(snr_threshold))
