"""EMVA 1288 linear camera model: photons -> electrons -> digital numbers.

Two layers, so each can be tested alone: the physics is in small vectorised functions
(:func:`collect_electrons`, :func:`dark_current_mean_e`, :func:`clip_full_well`, :func:`read_out`,
:func:`fixed_pattern_maps`, :func:`default_black_level_dn`); :class:`SensorModel` holds the
parameters and chains them. What the EMVA 1288 method gives for this model (the closed forms
:func:`optics.emva.emva_mean_dn`, :func:`optics.emva.emva_temporal_variance_dn2`, the figures of
merit :func:`optics.emva.emva_figures`, the saturation capacity) and the published data sheets
of :data:`optics.emva.PRESETS` are :mod:`optics.emva`; its names are importable from here too.

Symbols follow EMVA 1288 (Release 3.1 and 4.0): mu_p mean photons per pixel during the exposure,
eta quantum efficiency, mu_e = eta mu_p mean photo-electrons, mu_d mean dark electrons,
sigma_d temporal dark noise [e-], K overall system gain [DN/e-], sigma_q^2 = 1/12 DN^2
quantisation noise, mu_y mean and sigma_y^2 temporal variance of the digital signal.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _checks
from .bayer import demosaic_bilinear, mosaic
from .emva import (
    PRESETS, QUANTISATION_VARIANCE_DN2, EmvaFigures, emva_figures, emva_mean_dn, emva_saturation_capacity,
    emva_temporal_variance_dn2, full_well_for_saturation_capacity)

__all__ = [
    "SensorModel",
    "PRESETS",
    "FixedPattern",
    "EmvaFigures",
    "collect_electrons",
    "dark_current_mean_e",
    "clip_full_well",
    "read_out",
    "fixed_pattern_maps",
    "default_black_level_dn",
    "emva_mean_dn",
    "emva_temporal_variance_dn2",
    "emva_figures",
    "emva_saturation_capacity",
    "full_well_for_saturation_capacity",
    "QUANTISATION_VARIANCE_DN2",
    "BLACK_LEVEL_SIGMAS",
]

# Standard deviations of the total dark noise by which the default black level keeps the mean
# dark signal above 0 DN (see default_black_level_dn). A Gaussian falls below -6 sigma with
# probability Phi(-6) = 9.9e-10, so fewer than 1e-9 of the dark pixel values are clipped.
BLACK_LEVEL_SIGMAS = 6.0
# Number of vertical spill passes of the blooming model (a fixed bound, so the cost of a frame is known):
# charge can travel at most this many pixels from a saturated pixel before it is drained.
BLOOMING_PASSES = 64


# --------------------------------------------------------------------------------------------
# physics kernels
# --------------------------------------------------------------------------------------------


class FixedPattern(NamedTuple):
    """Per-camera fixed-pattern maps."""

    dsnu_e: np.ndarray
    """Dark signal offset per pixel [e-], zero mean, spatial std = DSNU."""
    prnu_gain: np.ndarray
    """Relative photo-response per pixel [1], mean 1, spatial std = PRNU (a fraction)."""


def fixed_pattern_maps(shape, dsnu_e: float, prnu: float, seed: int) -> FixedPattern:
    """Draw the DSNU and PRNU maps of one camera.

    Parameters
    ----------
    shape : tuple of int
        Raw pixel-array shape.
    dsnu_e : float
        Dark signal non-uniformity: spatial standard deviation of the dark signal [e-].
    prnu : float
        Photo-response non-uniformity: spatial standard deviation of the gain, as a fraction of
        the mean [1] (0.01 = 1 %).
    seed : int
        Camera seed. The maps come from ``numpy.random.default_rng(SeedSequence(seed))``, a
        Generator independent of the per-frame generator, so the pattern is the same in every
        frame and every run of one camera.

    Returns
    -------
    FixedPattern

    Notes
    -----
    Both maps are Gaussian white noise (EMVA 1288 R3.1 section 4.1 defines DSNU and PRNU as
    spatial standard deviations; it does not prescribe a distribution). The PRNU gain is clipped
    at 0 so that no pixel has a negative response (relevant only for PRNU > ~30 %).
    """
    dsnu_e = _checks.non_negative("dsnu_e", dsnu_e)
    prnu = _checks.non_negative("prnu", prnu)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    dsnu_map = dsnu_e * rng.standard_normal(shape)
    prnu_map = np.maximum(1.0 + prnu * rng.standard_normal(shape), 0.0)
    return FixedPattern(dsnu_e=dsnu_map, prnu_gain=prnu_map)


def dark_current_mean_e(
    dark_current_e_per_s: float,
    exposure_s,
    temperature_k: float,
    *,
    reference_temperature_k: float,
    doubling_temperature_k: float,
):
    """Mean dark-current electrons accumulated during an exposure.

    Parameters
    ----------
    dark_current_e_per_s : float
        Dark current at the reference temperature [e-/s].
    exposure_s : float or array_like
        Exposure time [s].
    temperature_k : float
        Sensor temperature [K].
    reference_temperature_k : float
        Temperature at which ``dark_current_e_per_s`` holds [K].
    doubling_temperature_k : float
        Temperature rise that doubles the dark current [K].

    Returns
    -------
    float or numpy.ndarray
        mu_I t [e-].

    Notes
    -----
    EMVA 1288 R3.1 section 3.2: mu_I = mu_I,ref 2^((T - T_ref) / T_d). The accumulated dark
    signal is mu_I t_exp; its temporal variance is Poisson, equal to its mean.
    """
    doubling = _checks.positive("doubling_temperature_k", doubling_temperature_k)
    rate = dark_current_e_per_s * 2.0 ** ((temperature_k - reference_temperature_k) / doubling)
    return rate * np.asarray(exposure_s, dtype=float)


def collect_electrons(mean_photons, quantum_efficiency: float, rng: np.random.Generator,
                      *, prnu_gain=1.0, dark_mean_e=0.0) -> np.ndarray:
    """Photo-electrons plus dark-current electrons, with Poisson shot noise.

    Parameters
    ----------
    mean_photons : array_like
        Mean number of photons reaching each pixel during the exposure, mu_p [1].
        Non-finite or negative values (no light information) count as 0 photons.
    quantum_efficiency : float
        eta [1], 0..1.
    rng : numpy.random.Generator
        Per-frame generator.
    prnu_gain : float or array_like, optional
        Relative response per pixel (see :func:`fixed_pattern_maps`) [1].
    dark_mean_e : float or array_like, optional
        Mean dark-current electrons (see :func:`dark_current_mean_e`) [e-].

    Returns
    -------
    numpy.ndarray of float64
        Electrons per pixel [e-], integer valued.

    Notes
    -----
    mu_e = eta mu_p (EMVA 1288 eq. (1)); photon arrival and photo-electron generation are a
    Poisson process, so sigma_e^2 = mu_e (eq. (5)). Because a Poisson count thinned with
    probability eta is Poisson with mean eta mu_p, one Poisson draw of eta mu_p is exact.
    Dark-current electrons are an independent Poisson draw.
    """
    mu_p = np.asarray(mean_photons, dtype=float)
    mu_p = np.where(np.isfinite(mu_p) & (mu_p > 0.0), mu_p, 0.0)
    mu_e = quantum_efficiency * mu_p * np.asarray(prnu_gain, dtype=float)
    electrons = rng.poisson(mu_e).astype(float)
    dark = np.broadcast_to(np.asarray(dark_mean_e, dtype=float), mu_e.shape)
    if np.any(dark > 0.0):
        electrons += rng.poisson(dark)
    return electrons


def clip_full_well(electrons, full_well_e: float, *, blooming: bool = False) -> np.ndarray:
    """Limit the charge of each pixel to its full-well capacity.

    Parameters
    ----------
    electrons : array_like, shape (rows, cols, ...)
        Collected charge [e-].
    full_well_e : float
        Full-well capacity [e-].
    blooming : bool, optional
        If True, the charge in excess of the full well spills along the column (axis 0, the CCD
        transfer direction), half upwards and half downwards, filling the next pixels that are
        below their full well; a packet travels at most ``BLOOMING_PASSES`` pixels and charge
        that leaves the array or travels further is drained. If False (an ideal anti-blooming
        drain), excess charge is discarded.

    Returns
    -------
    numpy.ndarray of float64
        Charge per pixel, 0 <= e <= full_well_e [e-].

    Notes
    -----
    Saturation is a clip, never an error: it is a property of the data, not a configuration
    mistake. The blooming model is a
    deliberately simple, vectorised stand-in for charge spilling along CCD columns (vertical
    blooming streaks); it conserves charge except at the array edges and after the last pass.
    """
    e = np.array(electrons, dtype=float, copy=True)
    if blooming and e.ndim >= 1 and e.shape[0] > 1:
        excess = np.maximum(e - full_well_e, 0.0)
        e -= excess
        up = 0.5 * excess      # packets travelling towards row 0
        down = 0.5 * excess    # packets travelling towards the last row
        for _ in range(BLOOMING_PASSES):
            if not (np.any(up) or np.any(down)):
                break
            up = np.concatenate([up[1:], np.zeros_like(up[:1])])         # leaves at row 0
            down = np.concatenate([np.zeros_like(down[:1]), down[:-1]])  # leaves at the end
            take = np.minimum(up, full_well_e - e)
            e += take
            up -= take
            take = np.minimum(down, full_well_e - e)
            e += take
            down -= take
    return np.minimum(e, full_well_e)


def read_out(electrons, *, dark_noise_e: float, gain_dn_per_e: float, black_level_dn: float,
             bit_depth: int, rng: np.random.Generator, dsnu_e=0.0) -> np.ndarray:
    """Charge -> digital number: DSNU, read noise, gain, offset, quantisation, clipping.

    Parameters
    ----------
    electrons : array_like
        Charge per pixel after the full-well clip [e-].
    dark_noise_e : float
        Temporal dark (read) noise sigma_d0 [e-], Gaussian.
    gain_dn_per_e : float
        Overall system gain K [DN/e-].
    black_level_dn : float
        Offset added before quantisation [DN].
    bit_depth : int
        ADC resolution [bit]; output is clipped to 0 .. 2**bit_depth - 1.
    rng : numpy.random.Generator
        Per-frame generator.
    dsnu_e : float or array_like, optional
        Fixed dark-signal offset per pixel [e-].

    Returns
    -------
    numpy.ndarray of uint16 (bit_depth <= 16) or uint32
        Digital numbers [DN].

    Notes
    -----
    y = round(K (e + dsnu + n_read) + offset), n_read ~ N(0, sigma_d0^2); rounding to the nearest
    integer adds sigma_q^2 = 1/12 DN^2 (EMVA 1288 eq. (8)). Values outside the ADC range are
    clipped (a saturated or black-clipped pixel, never an error).
    """
    e = np.asarray(electrons, dtype=float)
    analog = e + dsnu_e
    if dark_noise_e > 0.0:
        analog = analog + dark_noise_e * rng.standard_normal(e.shape)
    y = np.floor(gain_dn_per_e * analog + black_level_dn + 0.5)
    y = np.clip(y, 0.0, float(2 ** int(bit_depth) - 1))
    dtype = np.uint16 if bit_depth <= 16 else np.uint32
    return y.astype(dtype)


def default_black_level_dn(*, dark_noise_e: float, gain_dn_per_e: float, dsnu_e: float = 0.0,
                           sigmas: float = BLACK_LEVEL_SIGMAS) -> float:
    """Default offset: the smallest whole DN that keeps the dark signal clear of the 0 DN clip.

    Parameters
    ----------
    dark_noise_e : float
        Temporal dark (read) noise sigma_d0 [e-].
    gain_dn_per_e : float
        Overall system gain K [DN/e-].
    dsnu_e : float, optional
        Dark signal non-uniformity, spatial std [e-].
    sigmas : float, optional
        k, the margin in standard deviations. Default ``BLACK_LEVEL_SIGMAS`` = 6.

    Returns
    -------
    float
        b = ceil(k sqrt(K^2 (sigma_d0^2 + DSNU^2) + sigma_q^2)) [DN], sigma_q^2 = 1/12 DN^2.

    Notes
    -----
    The read-out (:func:`read_out`) clips at 0 DN, so an offset of 0 clips half of the dark
    read noise and the EMVA 1288 dark-noise measurement then gives about 0.55 sigma_d0
    instead of sigma_d0 (4.9 to 5.0 e- for a set 9 e- at K = 0.1 DN/e-). The dark signal of
    a pixel is b + K (DSNU_i + n_read) with a Gaussian DSNU map and Gaussian read noise (plus
    rounding), so its spread over pixels and frames is the root sum of squares above; an offset
    of k = 6 of those standard deviations leaves Phi(-6) = 9.9e-10 of the dark pixel values
    below 0 DN before rounding (about one pixel value in a thousand 1-Mpixel frames). Including
    sigma_q overstates the spread slightly (rounding is not a Gaussian tail), erring on the safe
    side; with no read noise and no DSNU the rule gives ceil(6 / sqrt(12)) = 2 DN.

    The rule does not depend on the exposure time, for two reasons. The black level is a
    camera setting fixed at construction: EMVA 1288's dark signal mu_y.dark = offset +
    K mu_I t_exp (R4.0 Linear section 3, dark current) is linear in t_exp only if the offset
    stays put, and an offset that moved with the exposure would bias every dark-current and
    photon-transfer fit. And it does not need to: dark-current and photo-electrons are Poisson
    counts, never negative, so they only lift the signal further from 0 DN; their shot noise
    cannot push a pixel below the offset.

    EMVA 1288 itself asks only that the offset be set so that the dark signal, temporal noise
    and nonuniformity included, is not significantly clipped (R3.1 section 6.5, measurement
    conditions, "Offset"); k = 6 makes the clipped fraction negligible at any frame size, so the
    dark-noise measurement is unbiased. The presets of :data:`PRESETS` use this rule because no
    data sheet quoted for them states a black level.

    References
    ----------
    EMVA Standard 1288, Release 3.1 (2016), section 6.5; Release 4.0 Linear (2021), section 3.
    """
    gain = _checks.non_negative("gain_dn_per_e", gain_dn_per_e)
    sigma_d = _checks.non_negative("dark_noise_e", dark_noise_e)
    dsnu = _checks.non_negative("dsnu_e", dsnu_e)
    sigma_dn = np.sqrt(gain * gain * (sigma_d * sigma_d + dsnu * dsnu) + QUANTISATION_VARIANCE_DN2)
    return float(np.ceil(_checks.non_negative("sigmas", sigmas) * sigma_dn))



# --------------------------------------------------------------------------------------------
# parameter holder
# --------------------------------------------------------------------------------------------


class SensorModel:
    """EMVA 1288 linear camera sensor.

    Parameters
    ----------
    quantum_efficiency : float
        eta [1], in (0, 1]: photo-electrons per photon at the reference wavelength.
    dark_noise_e : float
        Temporal dark (read) noise sigma_d0 [e-], >= 0.
    full_well_e : float
        Full-well (saturation) capacity [e-], > 0.
    gain_dn_per_e : float
        Overall system gain K [DN/e-], > 0.
    bit_depth : int
        ADC resolution [bit], 1..32.
    black_level_dn : float or None, keyword-only
        Offset added before quantisation [DN]. Default None: the smallest whole DN that keeps
        the dark signal 6 standard deviations of the total dark noise (read noise, DSNU,
        quantisation; not the exposure-dependent dark-current shot noise) above the 0 DN clip,
        :func:`default_black_level_dn`; for the default camera, ``SensorModel()`` (K = 0.1 DN/e-,
        sigma_d0 = 8 e-) that is 6 DN. An explicit value, 0 included, is used as given (a
        value below that rule clips part of the dark noise and biases the EMVA dark-noise
        measurement low).
    dark_current_e_per_s : float, keyword-only
        Dark current at ``reference_temperature_k`` [e-/s]. Default 0.
    temperature_k, reference_temperature_k : float, keyword-only
        Sensor and reference temperature [K]. Default 298.15 both.
    doubling_temperature_k : float, keyword-only
        Dark-current doubling temperature T_d [K]. Default 8.0 (the value used by the EMVA
        reference simulator, ``emva1288.camera.Camera(temperature_doubling=8)``).
    dsnu_e : float, keyword-only
        Dark signal non-uniformity, spatial std [e-]. Default 0.
    prnu : float, keyword-only
        Photo-response non-uniformity, spatial std as a fraction [1]. Default 0.
    pattern_seed : int, keyword-only
        Seed of the fixed DSNU/PRNU patterns (one camera = one seed). Default 0.
    blooming : bool, keyword-only
        Spill charge above the full well into column neighbours. Default False.
    bayer : bool, keyword-only
        RGGB colour filter array: ``expose`` then takes and returns (rows, cols, 3) and
        demosaics bilinearly. Default False.

    Notes
    -----
    ``expose`` implements, per pixel,
    e = min(Poisson(eta mu_p g_PRNU) + Poisson(mu_I t), full well),
    y = clip(round(K (e + dsnu + N(0, sigma_d0^2)) + offset), 0, 2^b - 1),
    with mu_I t from :func:`dark_current_mean_e`. Below saturation the mean and temporal
    variance are EMVA 1288 R3.1 eqs. (6) and (8): :func:`optics.emva.emva_mean_dn`,
    :func:`optics.emva.emva_temporal_variance_dn2`. Deviation from the standard's idealisation: the
    saturation is a hard clip of the charge per pixel (the standard only observes its effect).

    With ``bayer=True`` the colour filter is assumed to be part of the spectral response that
    produced the per-channel photon counts (:mod:`optics.spectral`); the mosaic keeps each
    pixel's own channel, the noise chain runs on the raw mosaic, and the demosaiced DN are
    rounded back to integers.

    References
    ----------
    EMVA Standard 1288, "Standard for Characterization of Image Sensors and Cameras",
    Release 3.1 (2016) and Release 4.0 Linear (2021), European Machine Vision Association.
    """

    def __init__(self, quantum_efficiency: float = 0.5, dark_noise_e: float = 8.0,
                 full_well_e: float = 6000.0, gain_dn_per_e: float = 0.1, bit_depth: int = 12,
                 *, black_level_dn: float | None = None, dark_current_e_per_s: float = 0.0,
                 temperature_k: float = 298.15, reference_temperature_k: float = 298.15,
                 doubling_temperature_k: float = 8.0, dsnu_e: float = 0.0, prnu: float = 0.0,
                 pattern_seed: int = 0, blooming: bool = False, bayer: bool = False):
        eta = _checks.in_closed_range("quantum_efficiency", quantum_efficiency, 0.0, 1.0)
        if eta == 0.0:
            raise ValueError(f"quantum_efficiency = {quantum_efficiency!r}: must be in (0, 1]")
        self.quantum_efficiency = eta
        self.dark_noise_e = _checks.non_negative("dark_noise_e", dark_noise_e)
        self.full_well_e = _checks.positive("full_well_e", full_well_e)
        self.gain_dn_per_e = _checks.positive("gain_dn_per_e", gain_dn_per_e)
        self.bit_depth = _checks.integer_in_range("bit_depth", bit_depth, 1, 32)
        self.dsnu_e = _checks.non_negative("dsnu_e", dsnu_e)
        if black_level_dn is None:
            black_level_dn = default_black_level_dn(dark_noise_e=self.dark_noise_e,
                                                    gain_dn_per_e=self.gain_dn_per_e,
                                                    dsnu_e=self.dsnu_e)
            if black_level_dn >= 2 ** self.bit_depth - 1:
                raise ValueError(
                    f"bit_depth = {bit_depth!r}: the default black level ({black_level_dn:g} DN, "
                    f"6 sigma of the dark noise) leaves no signal range below "
                    f"{2 ** self.bit_depth - 1} DN; pass black_level_dn explicitly or use more "
                    "bits")
        self.black_level_dn = _checks.non_negative("black_level_dn", black_level_dn)
        self.dark_current_e_per_s = _checks.non_negative("dark_current_e_per_s",
                                                         dark_current_e_per_s)
        self.temperature_k = _checks.positive("temperature_k", temperature_k)
        self.reference_temperature_k = _checks.positive("reference_temperature_k",
                                                        reference_temperature_k)
        self.doubling_temperature_k = _checks.positive("doubling_temperature_k",
                                                       doubling_temperature_k)
        self.prnu = _checks.non_negative("prnu", prnu)
        self.pattern_seed = _checks.integer_in_range("pattern_seed", pattern_seed, 0, 2 ** 63 - 1)
        if not isinstance(blooming, bool):
            raise ValueError(f"blooming = {blooming!r}: must be True or False")
        if not isinstance(bayer, bool):
            raise ValueError(f"bayer = {bayer!r}: must be True or False")
        self.blooming = blooming
        self.bayer = bayer
        self._patterns: dict[tuple, FixedPattern] = {}

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "SensorModel":
        """Sensor with the parameters of a published EMVA 1288 data sheet.

        Parameters
        ----------
        name : str
            One of ``sorted(optics.PRESETS)``: ``"basler_pia2400_17gm"``,
            ``"pointgrey_gs3_pge_50s5m"``, ``"pointgrey_grasshopper3_imx174"``. The sources of
            each figure, and the figures that could not be found, are listed beside each entry
            of :data:`PRESETS` in ``optics/emva.py``. The data sheet's saturation capacity is
            the EMVA-measured mean at the variance maximum; the full-well clip is set so that
            the EMVA method measures exactly that value
            (:func:`optics.emva.full_well_for_saturation_capacity`). No data sheet states a black level, so
            the default rule applies (:func:`default_black_level_dn`, with the preset's or the
            overridden gain).
        **overrides
            Any constructor keyword, replacing the preset's value.
        """
        if name not in PRESETS:
            raise ValueError(f"preset = {name!r}: unknown; allowed: {sorted(PRESETS)}")
        preset = PRESETS[name]
        params = {k: v for k, v in preset.items()
                  if k not in ("datasheet", "wavelength_m", "saturation_capacity_e")}
        params["full_well_e"] = full_well_for_saturation_capacity(preset["saturation_capacity_e"])
        params.update(overrides)
        return cls(**params)

    # -- derived quantities -----------------------------------------------------------------

    @property
    def max_dn(self) -> int:
        """Largest digital number, 2**bit_depth - 1 [DN]."""
        return 2 ** self.bit_depth - 1

    def dark_mean_e(self, exposure_s) -> float:
        """Mean dark-current electrons for an exposure [e-]."""
        return dark_current_mean_e(self.dark_current_e_per_s, exposure_s, self.temperature_k,
                                   reference_temperature_k=self.reference_temperature_k,
                                   doubling_temperature_k=self.doubling_temperature_k)

    def fixed_pattern(self, shape) -> FixedPattern:
        """The camera's DSNU/PRNU maps for a raw array shape (cached, deterministic)."""
        shape = tuple(int(s) for s in shape)
        if shape not in self._patterns:
            self._patterns[shape] = fixed_pattern_maps(shape, self.dsnu_e, self.prnu,
                                                       self.pattern_seed)
        return self._patterns[shape]

    def mean_dn(self, mean_photons, exposure_s: float):
        """Expected DN below saturation, EMVA 1288 eq. (6) [DN] (no clipping, no patterns)."""
        return emva_mean_dn(mean_photons, quantum_efficiency=self.quantum_efficiency,
                            gain_dn_per_e=self.gain_dn_per_e,
                            dark_mean_e=self.dark_mean_e(exposure_s),
                            black_level_dn=self.black_level_dn)

    def temporal_variance_dn2(self, mean_photons, exposure_s: float):
        """Expected temporal variance below saturation, EMVA 1288 eq. (8) [DN^2]."""
        return emva_temporal_variance_dn2(mean_photons, quantum_efficiency=self.quantum_efficiency,
                                          gain_dn_per_e=self.gain_dn_per_e,
                                          dark_noise_e=self.dark_noise_e,
                                          dark_mean_e=self.dark_mean_e(exposure_s))

    def figures(self) -> EmvaFigures:
        """SNRmax, absolute sensitivity threshold and dynamic range of this configuration.

        The saturation capacity is the one the EMVA method measures for this full well
        (:func:`optics.emva.emva_saturation_capacity`), as on a data sheet.
        """
        return emva_figures(quantum_efficiency=self.quantum_efficiency,
                            dark_noise_e=self.dark_noise_e,
                            saturation_e=emva_saturation_capacity(self.full_well_e))

    # -- simulation -----------------------------------------------------------------------

    def expose_electrons(self, mean_photons, exposure_s: float, rng: np.random.Generator):
        """Charge per raw pixel after shot noise, dark current and the full-well clip [e-]."""
        exposure_s = _checks.non_negative("exposure_s", exposure_s)
        mu_p = np.asarray(mean_photons, dtype=float)
        pattern = self.fixed_pattern(mu_p.shape)
        electrons = collect_electrons(mu_p, self.quantum_efficiency, rng,
                                      prnu_gain=pattern.prnu_gain,
                                      dark_mean_e=self.dark_mean_e(exposure_s))
        return clip_full_well(electrons, self.full_well_e, blooming=self.blooming)

    def expose(self, mean_photons, exposure_s: float, rng: np.random.Generator) -> np.ndarray:
        """Simulate one frame.

        Parameters
        ----------
        mean_photons : array_like
            Mean photons per pixel during the exposure, mu_p [1]; any shape, or
            (rows, cols, 3) per-channel photons when ``bayer`` is True. Non-finite or negative
            entries count as 0 photons.
        exposure_s : float
            Exposure time [s] (scales the dark current only: the photon count is already
            integrated over the exposure).
        rng : numpy.random.Generator
            Per-frame generator for the temporal noise.

        Returns
        -------
        numpy.ndarray of unsigned int, same shape as ``mean_photons``
            Digital numbers [DN], 0 .. 2**bit_depth - 1 (uint16 up to 16 bit, else uint32).
        """
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng = {rng!r}: must be a numpy.random.Generator")
        mu_p = np.asarray(mean_photons, dtype=float)
        if self.bayer:
            if mu_p.ndim != 3 or mu_p.shape[-1] != 3:
                raise ValueError(f"mean_photons shape = {mu_p.shape!r}: with bayer=True it "
                                 "must be (rows, cols, 3)")
            mu_p = mosaic(mu_p)
        electrons = self.expose_electrons(mu_p, exposure_s, rng)
        dn = read_out(electrons, dark_noise_e=self.dark_noise_e,
                      gain_dn_per_e=self.gain_dn_per_e, black_level_dn=self.black_level_dn,
                      bit_depth=self.bit_depth, rng=rng,
                      dsnu_e=self.fixed_pattern(mu_p.shape).dsnu_e)
        if self.bayer:
            rgb = np.clip(np.floor(demosaic_bilinear(dn) + 0.5), 0, self.max_dn)
            dn = rgb.astype(dn.dtype)
        return dn

    def __repr__(self) -> str:
        return (f"SensorModel(quantum_efficiency={self.quantum_efficiency!r}, "
                f"dark_noise_e={self.dark_noise_e!r}, full_well_e={self.full_well_e!r}, "
                f"gain_dn_per_e={self.gain_dn_per_e!r}, bit_depth={self.bit_depth!r}, "
                f"black_level_dn={self.black_level_dn!r}, prnu={self.prnu!r}, "
                f"dsnu_e={self.dsnu_e!r}, bayer={self.bayer!r})")
