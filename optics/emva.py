"""What the EMVA 1288 method gives for the linear camera model of :mod:`optics.sensor`: the
closed forms of the mean and temporal variance of the digital signal below saturation
(:func:`emva_mean_dn`, :func:`emva_temporal_variance_dn2`), a data sheet's figures of merit
(:func:`emva_figures`), the saturation capacity the method measures for a hard full-well clip
and its inverse (:func:`emva_saturation_capacity`, :func:`full_well_for_saturation_capacity`),
and the published data sheets of real cameras that the presets come from (:data:`PRESETS`).

Symbols follow EMVA 1288 (Release 3.1 and 4.0), as in :mod:`optics.sensor`: mu_p mean photons
per pixel during the exposure, eta quantum efficiency, mu_e = eta mu_p mean photo-electrons,
mu_d mean dark electrons, sigma_d temporal dark noise [e-], K overall system gain [DN/e-],
sigma_q^2 = 1/12 DN^2 quantisation noise, mu_y mean and sigma_y^2 temporal variance of the
digital signal.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from . import _checks

__all__ = [
    "PRESETS",
    "EmvaFigures",
    "emva_mean_dn",
    "emva_temporal_variance_dn2",
    "emva_figures",
    "emva_saturation_capacity",
    "full_well_for_saturation_capacity",
    "QUANTISATION_VARIANCE_DN2",
]

# Variance of uniform rounding to the nearest integer [DN^2] (EMVA 1288 R3.1 eq. (8): sigma_q^2).
QUANTISATION_VARIANCE_DN2 = 1.0 / 12.0


# --------------------------------------------------------------------------------------------
# closed forms and figures of merit
# --------------------------------------------------------------------------------------------


def emva_mean_dn(mean_photons, *, quantum_efficiency, gain_dn_per_e, dark_mean_e=0.0,
                 black_level_dn=0.0):
    """Mean digital signal of the EMVA 1288 linear model (below saturation).

    Returns
    -------
    mu_y = K (eta mu_p + mu_d) + offset [DN]  (EMVA 1288 R3.1 eq. (6), with the offset made
    explicit).
    """
    mu_p = np.asarray(mean_photons, dtype=float)
    return gain_dn_per_e * (quantum_efficiency * mu_p + dark_mean_e) + black_level_dn


def emva_temporal_variance_dn2(mean_photons, *, quantum_efficiency, gain_dn_per_e, dark_noise_e,
                               dark_mean_e=0.0):
    """Temporal variance of the digital signal of the EMVA 1288 linear model (below saturation).

    Returns
    -------
    sigma_y^2 = K^2 (sigma_d0^2 + mu_I t + eta mu_p) + 1/12 [DN^2]  (EMVA 1288 R3.1 eq. (8);
    the dark-current shot noise mu_I t is part of sigma_d^2 there, written out here).
    """
    mu_p = np.asarray(mean_photons, dtype=float)
    return (gain_dn_per_e ** 2 * (dark_noise_e ** 2 + dark_mean_e + quantum_efficiency * mu_p)
            + QUANTISATION_VARIANCE_DN2)


class EmvaFigures(NamedTuple):
    """EMVA 1288 figures of merit computed from the model parameters."""

    snr_max_db: float
    """Maximum SNR, 20 log10(sqrt(mu_e,sat)) [dB] (EMVA 1288 R3.1 eq. (16))."""
    snr_max_bit: float
    """Maximum SNR in bits, log2(sqrt(mu_e,sat)) [bit]."""
    absolute_sensitivity_threshold_p: float
    """mu_p,min [photons] (EMVA 1288 R3.1 eq. (17))."""
    dynamic_range_db: float
    """DR = mu_p,sat / mu_p,min in dB, 20 log10 [dB] (EMVA 1288 R3.1 eq. (18))."""
    dynamic_range_bit: float
    """The same in bits, log2 [bit]."""
    dynamic_range_sigma_d_bit: float
    """log2(mu_e,sat / sigma_d0) [bit], the definition printed in Basler data sheets."""


def emva_figures(*, quantum_efficiency, dark_noise_e, saturation_e, gain_dn_per_e=None):
    """Figures of merit of an EMVA 1288 data sheet from the linear-model parameters.

    Parameters
    ----------
    quantum_efficiency : float
        eta [1].
    dark_noise_e : float
        sigma_d [e-].
    saturation_e : float
        Saturation capacity mu_e,sat [e-].
    gain_dn_per_e : float, optional
        K [DN/e-]; if given, the quantisation noise sigma_q^2 / K^2 is added to sigma_d^2 as in
        EMVA 1288 R3.1 eq. (17) (sigma_y,dark / K). If None it is left out.

    Returns
    -------
    EmvaFigures

    Notes
    -----
    SNR_max = sqrt(mu_e,sat) (R3.1 eq. (16)); mu_p,min = (sqrt(sigma_d^2 + 1/4) + 1/2) / eta
    (R3.1 eq. (17), the solution of SNR = 1 with shot noise included; the ``emva1288`` package
    uses the R3.0 approximation (sigma_d + 1/2) / eta, which differs by < 0.01 dB for
    sigma_d > 5 e-). The Point Grey data sheets' dynamic ranges (9.41 bit, 73 dB) are
    reproduced with sigma_d alone, i.e. without the quantisation term (``gain_dn_per_e=None``);
    DR = mu_p,sat / mu_p,min (eq. (18)). Basler data sheets print
    DR = log2(mu_e,sat / sigma_d0) instead, returned as ``dynamic_range_sigma_d_bit``.
    """
    sigma_d2 = float(dark_noise_e) ** 2
    if gain_dn_per_e is not None:
        sigma_d2 += QUANTISATION_VARIANCE_DN2 / float(gain_dn_per_e) ** 2
    mu_e_min = np.sqrt(sigma_d2 + 0.25) + 0.5
    snr = np.sqrt(saturation_e)
    dr = saturation_e / mu_e_min
    return EmvaFigures(
        snr_max_db=float(20.0 * np.log10(snr)),
        snr_max_bit=float(np.log2(snr)),
        absolute_sensitivity_threshold_p=float(mu_e_min / quantum_efficiency),
        dynamic_range_db=float(20.0 * np.log10(dr)),
        dynamic_range_bit=float(np.log2(dr)),
        dynamic_range_sigma_d_bit=float(np.log2(saturation_e / dark_noise_e)),
    )


def _clipped_normal_moments(a):
    """Mean and variance of min(X, a), X ~ N(0, 1)."""
    phi = np.exp(-0.5 * a * a) / np.sqrt(2.0 * np.pi)
    tail = 0.5 * special.erfc(a / np.sqrt(2.0))
    m1 = -phi + a * tail
    m2 = (1.0 - tail) - a * phi + a * a * tail
    return m1, m2 - m1 * m1


def emva_saturation_capacity(full_well_e: float, *, dark_noise_e: float = 0.0) -> float:
    """Saturation capacity that the EMVA 1288 method measures for a hard full-well clip.

    Parameters
    ----------
    full_well_e : float
        Physical full-well capacity F (the clip of the charge per pixel) [e-].
    dark_noise_e : float, optional
        Read noise sigma_d0 added after the clip [e-] (it shifts the variance, not the peak).

    Returns
    -------
    float
        mu_e,sat [e-]: the mean signal at the maximum of the temporal variance.

    Notes
    -----
    EMVA 1288 R3.1 section 6.5 defines saturation as the point of maximum temporal variance.
    With Poisson shot noise (Gaussian approximation, variance = mean mu) clipped at F, the
    variance is mu v(a) + sigma_d0^2 with a = (F - mu) / sqrt(mu) and v the variance of a
    standard normal clipped at a; it peaks about 3 sqrt(F) below F, so the measured
    saturation capacity is 2-4 % below F for F of a few thousand electrons. Computed by
    maximising the variance over mu numerically (bounded scalar search).
    """
    f = _checks.positive("full_well_e", full_well_e)
    del dark_noise_e  # a constant offset of the variance does not move its maximum

    def neg_var(mu):
        sd = np.sqrt(mu)
        return -mu * _clipped_normal_moments((f - mu) / sd)[1]

    res = optimize.minimize_scalar(neg_var, bounds=(0.5 * f, f + 5.0 * np.sqrt(f)),
                                   method="bounded", options={"xatol": 1e-6 * f})
    mu = float(res.x)
    return mu + np.sqrt(mu) * float(_clipped_normal_moments((f - mu) / np.sqrt(mu))[0])


def full_well_for_saturation_capacity(saturation_e: float) -> float:
    """Full-well clip F whose EMVA-measured saturation capacity is ``saturation_e`` [e-].

    Inverse of :func:`emva_saturation_capacity` (root finding). Used by the presets, because a
    data sheet's "saturation capacity" is the EMVA-measured quantity, not the clip.
    """
    target = _checks.positive("saturation_e", saturation_e)
    return float(optimize.brentq(lambda f: emva_saturation_capacity(f) - target,
                                 target, 1.2 * target + 20.0 * np.sqrt(target), xtol=1e-6))


# --------------------------------------------------------------------------------------------
# presets from published EMVA 1288 data
# --------------------------------------------------------------------------------------------

# Black level: none of the data sheets quoted below states one, so the presets use the default
# rule (default_black_level_dn: 6 sigma of the dark noise, whole DN): 40 DN (Basler), 30 DN
# (GS3-PGE-50S5M), 6 DN (IMX174). Before 2026-11-23 they carried unsourced 64, 32 and 16 DN.
PRESETS: dict[str, dict] = {
    # Basler pilot piA2400-17gm, Sony ICX625 CCD, 5 MP, 3.45 um pixels.
    # Published EMVA 1288 figures (Basler piA2400-17gm EMVA 1288 data sheet, as tabulated in
    # mengineer.hatenablog.com/entry/2016/05/02/212822, "EMVA1288 data: CCD", which compares
    # it with the GS3-PGE-50S5M): QE 47 % at 545 nm, temporal dark noise 13 e-, saturation
    # capacity 7000 e-, absolute sensitivity threshold 27 photons, dynamic range 9.1 bit
    # (Basler definition log2(mu_e,sat / sigma_d0), data sheet p. 25 per the same source),
    # SNRmax 6.4 bit = 38.4 dB.
    # NOT FOUND: the overall system gain K, the dark current, DSNU and PRNU. K below is a
    # modelling choice that places the full well at 3500 DN of the 12-bit range (so saturation
    # is set by the full well, not by the ADC); dark current, DSNU and PRNU are set to 0.
    # Bit depth 12: the pilot cameras' Mono 12 pixel formats (Basler pilot User's Manual,
    # "effective pixel depth of 12 bits"), not an EMVA figure.
    "basler_pia2400_17gm": dict(
        quantum_efficiency=0.47, wavelength_m=545e-9, dark_noise_e=13.0, saturation_capacity_e=7000.0,
        gain_dn_per_e=0.5, bit_depth=12,
        datasheet=dict(snr_max_db=38.4, dynamic_range_bit=9.1,
                       dynamic_range_definition="log2(mu_e,sat/sigma_d0)",
                       absolute_sensitivity_threshold_p=27.0),
    ),
    # Point Grey (FLIR) Grasshopper3 GigE GS3-PGE-50S5M, Sony ICX625 CCD.
    # Published EMVA 1288 figures (Point Grey GS3-PGE-50S5M-C EMVA data, p. 5, tabulated in
    # the same mengineer.hatenablog.com comparison): QE 57 % at 525 nm, temporal dark noise
    # 8.28 e-, saturation capacity 5903 e-, absolute sensitivity threshold 15.69 photons,
    # dynamic range 9.41 bit, SNRmax 6.26 bit = 37.71 dB.
    # NOT FOUND: K, dark current, DSNU, PRNU, ADC bit depth. K below is a modelling choice
    # (full well at 3542 DN of a 12-bit range); dark current, DSNU and PRNU are 0; 12 bit is an
    # assumption, not a data-sheet figure.
    "pointgrey_gs3_pge_50s5m": dict(
        quantum_efficiency=0.57, wavelength_m=525e-9, dark_noise_e=8.28, saturation_capacity_e=5903.0,
        gain_dn_per_e=0.6, bit_depth=12,
        datasheet=dict(snr_max_db=37.71, dynamic_range_bit=9.41,
                       dynamic_range_definition="EMVA 1288 mu_p,sat/mu_p,min",
                       absolute_sensitivity_threshold_p=15.69),
    ),
    # Point Grey (FLIR) Grasshopper3 USB3 GS3-U3-23S6M, Sony IMX174 CMOS, 1920 x 1200,
    # 5.86 um pixels. Published EMVA 1288 figures (Point Grey data, as quoted in
    # fhotolab.fherb.de/2016/09/07/sony-exmor-sensoren-dateblattrekonstruktion-imx157/ and the
    # Point Grey white paper "Sony Pregius Global Shutter CMOS Imaging Performance"): QE 77 % at
    # 525 nm, temporal dark noise 6.83 e-, saturation capacity 32,691 e-, dynamic range 73 dB
    # (12.1 bit), SNRmax 45.12 dB (7.5 bit), gain 0.51 (unit not given by that source).
    # Interpretation: 0.51 e-/ADU on the 16-bit output scale, i.e. K = 1 / (0.51 * 16) =
    # 0.1225 DN/e- for the 12-bit ADC, which maps the saturation capacity to 4006 DN -- just
    # below 4095, consistent with a 12-bit ADC sized to the full well. NOT FOUND: dark current,
    # DSNU, PRNU (set to 0).
    "pointgrey_grasshopper3_imx174": dict(
        quantum_efficiency=0.77, wavelength_m=525e-9, dark_noise_e=6.83, saturation_capacity_e=32691.0,
        gain_dn_per_e=1.0 / (0.51 * 16.0), bit_depth=12,
        datasheet=dict(snr_max_db=45.12, dynamic_range_db=73.0, dynamic_range_bit=12.1,
                       dynamic_range_definition="EMVA 1288 mu_p,sat/mu_p,min"),
    ),
}
