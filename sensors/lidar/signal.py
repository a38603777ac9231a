"""The pulsed lidars' signal chain (:func:`lidar_signal_chain`): received power from the lidar
equation, SNR, detection, range noise and the reported intensity, with the particle echoes of
precipitation and the parameters every pulsed lidar shares (:func:`common_params`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hifi.api.params import Param

from ..detection import detected as detect, detection_probability
from ..noise import snr_range_sigma
from ..radiometry import extinction_from_visibility, lidar_received_power, overlap_factor, reported_intensity, \
    velodyne_focal_compensation, velodyne_raw_intensity_scale
from ..surfaces import (HALO_LEVEL_DB, HALO_PITCH_RAD, HALO_SLOPE, HALO_SOURCE_MIN_REFLECTIVITY,
                        halo_echoes)


def fit_noise_power(points, *, peak_power_w, receiver_aperture_m, optical_efficiency, visibility_m,
                    wavelength_m, snr_threshold):
    """Receiver noise power [W] that puts data-sheet detection ranges at the 50 % points.

    Parameters
    ----------
    points : sequence of (reflectivity, range_m)
        Data-sheet detection ranges of Lambertian targets at normal incidence.
    peak_power_w, receiver_aperture_m, optical_efficiency, visibility_m, wavelength_m : float
        As the lidar parameters of the same names.
    snr_threshold : float
        Threshold-to-noise ratio of the receiver [1].

    Returns
    -------
    float
        ``P_noise = (prod_k P_r(rho_k, R_k)) ** (1 / n) / SNR_threshold`` [W].

    Notes
    -----
    With :func:`sensors.detection.detection_probability` the 50 % point is where
    ``P_r = SNR_threshold * P_noise``. One point fixes it exactly. Two points that do not lie on
    one contour of the lidar equation (the HDL-64E S2's 10 % at 50 m and 80 % at 120 m:
    rho / R^2 = 4.0e-5 vs 5.6e-5, ratio 1.39, of which clear-air extinction explains 1.2 %)
    are fitted in the log: the geometric mean of their received powers, so both ranges are
    missed by the same factor, ``(P_2 / P_1) ** (1/4)`` = 1.082 for the HDL-64E (50 % points at
    46 m for 10 % and 130 m for 80 %).
    """
    from ..radiometry import extinction_from_visibility, lidar_received_power

    rho, r = (np.asarray(v, dtype=float) for v in zip(*points))
    alpha = extinction_from_visibility(visibility_m, wavelength_m)
    p = lidar_received_power(peak_power_w, rho, 1.0, r, receiver_area_m2=np.pi * receiver_aperture_m ** 2 / 4,
                             system_efficiency=optical_efficiency, extinction_per_m=alpha)
    return float(np.exp(np.mean(np.log(p)))) / snr_threshold


#: Threshold-to-noise ratio of the pulsed lidars' receivers: Q(4.75) = 1e-6 false alarms per
#: noise sample in Gaussian noise, a common design point (Richmond & Cain, Direct-Detection
#: LADAR Systems, SPIE 2010, ch. 6). Assumed: Velodyne does not publish its threshold.
SNR_THRESHOLD = 4.75
#: Clear-air visibility [m]: the "clear" class of the international visibility code (20-50 km),
#: 23 km as in MODTRAN's rural aerosol default.
CLEAR_VISIBILITY_M = 23_000.0


def common_params(*, max_range_m, noise_sigma_m=None, bias_sigma_m=0.0, reflectivity_lower=0.10,
                   reflectivity_upper=0.80, distance_lower_m=50.0, distance_upper_m=120.0, source="",
                   min_range_m=0.0, min_range_source="", peak_power_w=75.0, receiver_aperture_m=0.05,
                   aperture_source="assumed", optical_efficiency=0.5, detection_points=((0.10, 50.0),),
                   detection_source="", range_noise_floor_m=0.01, range_noise_snr1_m=0.05,
                   noise_source="", range_resolution_m=0.0, resolution_source="", dropout_probability=0.0,
                   dropout_source="", laser_gain_sigma=0.0, gain_source="", intensity_full_scale=255.0,
                   intensity_max=255, intensity_exponent=1.0, intensity_source="", full_overlap_m=0.0,
                   overlap_source="the data sheets give none; min_range_m covers the blind zone"):
    noise_power = fit_noise_power(detection_points, peak_power_w=peak_power_w,
                                  receiver_aperture_m=receiver_aperture_m, optical_efficiency=optical_efficiency,
                                  visibility_m=CLEAR_VISIBILITY_M, wavelength_m=905e-9,
                                  snr_threshold=SNR_THRESHOLD)
    points = ", ".join(f"{int(round(r * 100))} % at {d:g} m" for r, d in detection_points)
    return {
        "max_range_m": Param("float", default=max_range_m, minimum=0.0, exclusive_minimum=True,
                             doc=f"maximum range [m] ({source})"),
        "min_range_m": Param("float", default=min_range_m, minimum=0.0,
                             doc=f"nothing closer is reported [m] ({min_range_source})"),
        "detection_model": Param("str", default="snr", choices=("snr", "blensor"),
                                 doc="'snr': P_d = Phi(SNR - snr_threshold) from the lidar equation; "
                                     "'blensor': BlenSor Eq. 1 reflectivity/distance threshold"),
        "wavelength_m": Param("float", default=905e-9, minimum=0.0, exclusive_minimum=True,
                              doc="laser wavelength [m] (905 nm: Velodyne, Ibeo, SICK data sheets)"),
        "peak_power_w": Param("float", default=peak_power_w, minimum=0.0, exclusive_minimum=True,
                              doc="emitted peak power per pulse [W] (assumed: data sheets give only the laser "
                                  "class; 75 W is the OSRAM SPL PL90_3 905 nm pulsed diode's rating)"),
        "receiver_aperture_m": Param("float", default=receiver_aperture_m, minimum=0.0, exclusive_minimum=True,
                                     doc=f"receiver lens diameter [m] ({aperture_source})"),
        "optical_efficiency": Param("float", default=optical_efficiency, minimum=0.0, exclusive_minimum=True,
                                    maximum=1.0, doc="transmit x receive optical efficiency (assumed 0.5, typical "
                                                     "of lens + window + 905 nm filter)"),
        "visibility_m": Param("float", default=CLEAR_VISIBILITY_M, minimum=0.0, exclusive_minimum=True,
                              doc="meteorological visibility for the two-way atmospheric transmission [m] "
                                  "(23 km: clear air; Koschmieder / Kim et al. 2001)"),
        "full_overlap_m": Param("float", default=full_overlap_m, minimum=0.0,
                                doc=f"range of full transmitter/receiver overlap [m], quadratic ramp below it; "
                                    f"0: no near-range loss ({overlap_source}). It also sets how strongly fog "
                                    f"echoes near the sensor"),
        "snr_threshold": Param("float", default=SNR_THRESHOLD, minimum=0.0,
                               doc="detection threshold over the RMS receiver noise [1] (assumed 4.75: "
                                   "1e-6 false alarms per sample)"),
        "noise_power_w": Param("float", default=noise_power, minimum=0.0, exclusive_minimum=True,
                               doc=f"RMS receiver noise as optical power [W] (fitted: the 50 % detection points "
                                   f"are the data sheet's {points} ({detection_source}), log-mean for two)"),
        "dropout_probability": Param("float", default=dropout_probability, minimum=0.0, maximum=1.0,
                                     doc=f"'snr' model: probability of an isolated miss whatever the signal "
                                         f"({dropout_source})"),
        "noise_sigma_m": Param("float", default=noise_sigma_m, minimum=0.0,
                               doc="constant per-ray range noise sigma [m] (BlenSor Eq. 2); unset: the SNR "
                                   "model sqrt(range_noise_floor_m^2 + (range_noise_snr1_m / SNR)^2)"),
        "range_noise_floor_m": Param("float", default=range_noise_floor_m, minimum=0.0,
                                     doc=f"range noise sigma at high SNR [m] ({noise_source})"),
        "range_noise_snr1_m": Param("float", default=range_noise_snr1_m, minimum=0.0,
                                    doc=f"noise-limited range sigma at SNR = 1 [m] ({noise_source})"),
        "bias_sigma_m": Param("float", default=bias_sigma_m, minimum=0.0,
                              doc=f"sigma of the per-laser range bias drawn once per run [m] (BlenSor Eq. 2; "
                                  f"{noise_source})"),
        "range_resolution_m": Param("float", default=range_resolution_m, minimum=0.0,
                                    doc=f"reported distances are multiples of this [m]; 0: not quantised "
                                        f"({resolution_source})"),
        "laser_gain_sigma": Param("float", default=laser_gain_sigma, minimum=0.0,
                                  doc=f"log-normal sigma of the per-laser intensity gain drawn once per run "
                                      f"({gain_source})"),
        "intensity_full_scale": Param("float", default=intensity_full_scale, minimum=0.0, exclusive_minimum=True,
                                      doc=f"intensity code of a white Lambertian target at normal incidence "
                                          f"({intensity_source})"),
        "intensity_max": Param("int", default=intensity_max, minimum=1,
                               doc=f"largest intensity code ({intensity_source})"),
        "intensity_exponent": Param("float", default=intensity_exponent, minimum=0.0, exclusive_minimum=True,
                                    doc="response exponent of the reported intensity: code = gain x "
                                        "intensity_full_scale x reflectivity ** exponent (1: linear, the "
                                        "calibrated reflectivity of the Velodyne manuals)"),
        "reflectivity_lower": Param("float", default=reflectivity_lower, minimum=0.0, maximum=1.0,
                                    doc="'blensor' model: minimum reflectivity detected at distance_lower_m"),
        "reflectivity_upper": Param("float", default=reflectivity_upper, minimum=0.0, maximum=1.0,
                                    doc="'blensor' model: minimum reflectivity detected at distance_upper_m"),
        "distance_lower_m": Param("float", default=distance_lower_m, minimum=0.0,
                                  doc="'blensor' model: closer than this every surface with reflectivity > 0 "
                                      "is detected [m]"),
        "distance_upper_m": Param("float", default=distance_upper_m, minimum=0.0, exclusive_minimum=True,
                                  doc="'blensor' model: nothing is detected beyond this distance [m]"),
        # Optional divergent beam (sensors.beam, the VANE model); n_subrays = 1 is the pencil beam.
        "n_subrays": Param("int", default=1, minimum=1, maximum=10_000,
                           doc="sub-rays per pulse; 1: pencil beam (divergence ignored)"),
        "divergence_rad": Param("float", default=0.003, minimum=0.0, maximum=0.5,
                                doc="full beam divergence at the 1/e^2 points [rad] (assumed 3 mrad, typical "
                                    "of 905 nm automotive lidars; set it from your unit's data sheet)"),
        "aperture_radius_m": Param("float", default=0.005, minimum=0.0, doc="beam radius at the aperture [m]"),
        "return_mode": Param("str", default="strongest", choices=("first", "last", "strongest", "average"),
                             doc="echo reported when n_subrays > 1 (Velodyne's default: strongest)"),
        "pulse_width_s": Param("float", default=5e-9, minimum=0.0, exclusive_minimum=True,
                               doc="FWHM of the emitted pulse [s] (HDL-64E S2 data sheet: 5 ns)"),
        "bin_width_s": Param("float", default=0.5e-9, minimum=0.0, exclusive_minimum=True,
                             doc="receiver sampling interval [s]"),
        "cutoff_m": Param("float", default=3.0, minimum=0.0, doc="average mode: window behind the first echo [m]"),
        # The halo of strong returns (sensors.surfaces.halo_response), docs/surfaces.md.
        "halo_level_db": Param("float", default=HALO_LEVEL_DB, maximum=0.0,
                               doc="stray light of a strong return (retroreflector, pane seen head-on) in a pulse "
                                   "halo_pitch_rad away [dB of power] (Leddar Pixell user guide: -40 dB next "
                                   "segment); -300: no halo"),
        "halo_pitch_rad": Param("float", default=HALO_PITCH_RAD, minimum=0.0, exclusive_minimum=True,
                                doc="angle at which halo_level_db applies [rad] (the Pixell's segment pitch, "
                                    "about 2 deg)"),
        "halo_slope": Param("float", default=HALO_SLOPE, minimum=0.0, exclusive_minimum=True,
                            doc="power-law slope of the halo's fall-off with angle (Pixell: 20 dB more four "
                                "segments away, 2 / log10 4 = 3.32)"),
    }


class SignalChain(NamedTuple):
    """Per-ray results of :func:`lidar_signal_chain` (all shape (n,))."""

    received_power: np.ndarray   #: peak received power [W], NaN where nothing hit
    snr: np.ndarray              #: received power over the RMS receiver noise [1], NaN where nothing hit
    reflectivity: np.ndarray     #: apparent reflectivity rho cos(i) (1 - mirror), 0..1, NaN where nothing hit
    detected: np.ndarray         #: bool
    distance_noisy: np.ndarray   #: reported distance [m] (before masking by ``detected``)
    intensity: np.ndarray        #: reported intensity code, NaN where nothing hit
    atmosphere: np.ndarray | None = None   #: bool, the echo reported is the fog's (None: no fog)
    atmosphere_range: np.ndarray | None = None   #: true range of the fog echo [m] where ``atmosphere``
    #: int8, which hard echo is reported (None: neither ``front`` nor ``halo`` given):
    #: :data:`TARGET_ECHO`, :data:`FRONT_ECHO` or :data:`HALO_ECHO`
    echo: np.ndarray | None = None
    halo_source: np.ndarray | None = None   #: source pulse of the halo echo reported, -1 elsewhere
    halo_range: np.ndarray | None = None    #: true range of the halo echo [m] where reported


#: Codes of :attr:`SignalChain.echo`: the pulse's target (or nothing), the glass or water surface
#: in front of it, the halo of a strong return nearby.
TARGET_ECHO, FRONT_ECHO, HALO_ECHO = 0, 1, 2


class Halo(NamedTuple):
    """What :func:`lidar_signal_chain` needs to add the halo of strong returns
    (:func:`sensors.surfaces.halo_echoes`): the pulses' directions and the response's
    parameters (the lidar's ``halo_*`` parameters)."""

    directions: np.ndarray   #: (n, 3) unit direction of each pulse's axis, scene frame
    level_db: float          #: response one pitch away [dB of power]
    pitch_rad: float         #: angle of that level [rad]
    slope: float             #: power-law slope [1]
    core_rad: float          #: half the beam divergence: no halo inside the pulse's own beam [rad]


class FocalCompensation(NamedTuple):
    """Per-ray fields of the HDL-64E S2 intensity distance compensation
    (:func:`sensors.radiometry.velodyne_focal_compensation`), each (n,): the calibration's
    values of the laser that fired the ray."""

    dist_correction_m: np.ndarray   #: range offset the firmware adds to the raw distance [m]
    focal_distance_m: np.ndarray    #: focal distance [m]
    focal_slope: np.ndarray         #: focal slope [1]
    min_intensity: np.ndarray       #: lowest code reported
    max_intensity: np.ndarray       #: highest code reported


class ChainParams(NamedTuple):
    """What the signal chain (:func:`lidar_signal_chain`) needs of a lidar, by name: the lidar's
    parameters of the same names (:func:`common_params` documents each, with its source).
    :meth:`from_params` picks them from a model's parameters once per model."""

    peak_power_w: float          #: emitted peak power per pulse [W]
    optical_efficiency: float    #: transmit x receive optical efficiency [1]
    receiver_aperture_m: float   #: receiver lens diameter [m]
    wavelength_m: float          #: laser wavelength [m]
    visibility_m: float          #: meteorological visibility of the clear-air extinction [m]
    full_overlap_m: float        #: range of full transmitter/receiver overlap [m]; 0: none
    noise_power_w: float         #: RMS receiver noise as optical power [W]
    snr_threshold: float         #: detection threshold over the RMS noise [1]
    detection_model: str         #: "snr" or "blensor"
    dropout_probability: float   #: "snr": probability of an isolated miss [1]
    reflectivity_lower: float    #: "blensor": minimum reflectivity detected at distance_lower_m
    reflectivity_upper: float    #: "blensor": minimum reflectivity detected at distance_upper_m
    distance_lower_m: float      #: "blensor": closer, every surface with reflectivity > 0 is detected [m]
    distance_upper_m: float      #: "blensor": nothing detected beyond [m]
    min_range_m: float           #: nothing closer is reported [m]
    max_range_m: float           #: maximum range [m]
    noise_sigma_m: float | None  #: constant range noise sigma [m]; None: from the SNR
    range_noise_floor_m: float   #: range noise sigma at high SNR [m]
    range_noise_snr1_m: float    #: range noise sigma at SNR 1 [m]
    range_resolution_m: float    #: reported ranges are multiples of this [m]; 0: not quantised
    intensity_full_scale: float  #: intensity code of a white Lambertian target at normal incidence
    intensity_max: int           #: largest intensity code
    intensity_exponent: float    #: response exponent of the reported intensity [1]

    @classmethod
    def from_params(cls, params) -> "ChainParams":
        """The fields from a lidar's parameters (a mapping with at least these keys)."""
        return cls(**{name: params[name] for name in cls._fields})


class ChainDraws(NamedTuple):
    """The random numbers :func:`lidar_signal_chain` draws for its pulses in every weather
    (:func:`chain_draws`): drawn beforehand, on another thread while the frame casts, they are
    the same numbers."""

    noise: np.ndarray       #: (n,) standard normal deviates of the range noise (``noise_rng``)
    detection: np.ndarray   #: (2, n) uniform [0, 1): detection and drop-out (``detection_rng``)
    intensity: np.ndarray   #: (n,) standard normal deviates of the intensity (``intensity_rng``)


def chain_draws(n: int, noise_rng, detection_rng, intensity_rng) -> ChainDraws:
    """The :class:`ChainDraws` of ``n`` pulses from the three (distinct) streams of
    :func:`lidar_signal_chain`, each drawn as the chain draws it."""
    return ChainDraws(noise_rng.standard_normal((n,)), detection_rng.random((2, n)),
                      intensity_rng.standard_normal((n,)))


def lidar_signal_chain(distance_m, reflectivity, apparent_reflectivity, chain, *, bias_m, gain, noise_rng=None,
                       detection_rng=None, intensity_rng=None, range_offset_m=0.0, extinction_per_m=None, fog=None,
                       fog_rng=None, particles=None, mode="strongest", front=None, halo=None,
                       surface_rng=None, focal=None, draws=None) -> SignalChain:
    """Measurement chain of a pulsed lidar after the cast: power, SNR, detection, noise, intensity.

    Parameters
    ----------
    distance_m : (n,) float
        Range of the echo [m]; NaN where nothing hit.
    reflectivity : (n,) float
        Diffuse reflectivity of the surface, ``rho (1 - mirror)`` (BlenSor threshold).
    apparent_reflectivity : (n,) float
        ``rho cos(i) (1 - mirror)`` of a pencil beam, or the spot-weighted value of an echo.
    chain : ChainParams or mapping
        The lidar's parameters the chain uses (:class:`ChainParams`; a mapping of the lidar's
        parameters is read into one).
    bias_m, gain : (n,) float
        Per-laser range bias [m] and intensity gain of each ray.
    noise_rng, detection_rng, intensity_rng : numpy.random.Generator
        Independent streams; ``noise_rng`` gives the range noise first (one normal deviate per
        ray), as BlenSor Eq. 2 did before this chain existed. Not needed with ``draws``.
    extinction_per_m : float, optional
        Two-way path extinction [1/m] (weather, :meth:`sensors.weather.Weather.extinction`);
        None: the clear air of ``visibility_m``.
    fog : sensors.weather.FogEcho, optional
        The top of the fog's own echo in front of a target at each range
        (:func:`sensors.weather.fog_echo_table`, ``height`` times ``P_t eta A_r``: a power [W]);
        None: no fog.
    fog_rng : numpy.random.Generator
        With ``fog``: two uniform draws per ray, the fog echo's detection and where on the
        echo's top its peak is found.
    particles : sensors.weather.Particles, optional
        Rain drops and snowflakes in the pulses' beams (:func:`sensors.weather.sample_particles`).
    mode : {"strongest", "first", "last"}
        Which of the detected echoes (target, fog, particles) is reported (``average`` counts
        as strongest).
    range_offset_m : float or (n,) float
        Where the sensor's range grid starts, this far before the ray's origin [m]: the
        reported range ``d + range_offset_m`` is the multiple of ``range_resolution_m`` (0 for
        the Velodynes; an Ouster measures from its lidar origin, ``n`` behind each beam origin).
    front : tuple of two (n,) float, optional
        ``(range_m, apparent_reflectivity)`` of the glass or water surface in front of each
        pulse's target (NaN where none; :func:`sensors.surfaces.front_reflectivity`): its own
        echo. None: no such surface in the scene.
    halo : Halo, optional
        The pulses' directions and the halo response: strong returns (apparent reflectivity
        above 1, target or front) add a stray-light echo at their range to the pulses around
        them (:func:`sensors.surfaces.halo_echoes`). None: no halo.
    surface_rng : numpy.random.Generator
        With ``front`` or ``halo``: two uniform draws per pulse, the detection of the front's
        echo and of the halo's.
    focal : FocalCompensation, optional
        The HDL-64E S2's per-laser intensity distance compensation of each ray: the raw byte
        (received power relative to the laser's focal distance) plus the compensation; None:
        the range-compensated reflectivity code.
    draws : ChainDraws, optional
        The three streams' numbers drawn beforehand (:func:`chain_draws` of the same streams,
        ``n`` pulses); None: drawn here.

    Notes
    -----
    1. Received power: :func:`sensors.radiometry.lidar_received_power` with the two-way clear-air
       transmission (:func:`sensors.radiometry.extinction_from_visibility`) and the overlap
       factor. SNR = P_r / ``noise_power_w``.
    2. Detection, ``detection_model = "snr"``:
       ``P_d = Phi(SNR - snr_threshold) (1 - dropout_probability)``
       (:func:`sensors.detection.detection_probability`), one uniform draw per ray;
       ``"blensor"``: BlenSor Eq. 1 (:func:`sensors.detection.detected`). Both: only within
       ``min_range_m .. max_range_m``.
    3. Range: ``d + b_laser + sigma z`` with ``sigma = noise_sigma_m`` when set (BlenSor Eq. 2),
       else :func:`sensors.noise.snr_range_sigma`; then rounded to ``range_resolution_m``
       on a grid that starts ``range_offset_m`` before the ray's origin.
    4. Intensity: :func:`sensors.radiometry.reported_intensity` of the apparent reflectivity (a
       range-compensated, calibrated reflectivity code). With ``focal`` (the HDL-64E S2, whose
       byte is not range-compensated in the sensor): the raw byte is that code scaled by the
       received power relative to the laser's focal distance
       (:func:`sensors.radiometry.velodyne_raw_intensity_scale`, at the reported range), and
       the host's distance compensation
       (:func:`sensors.radiometry.velodyne_focal_compensation`) is added at the reported range
       less the laser's ``dist_correction`` (the raw distance count it is defined on).
    5. Weather: the fog's echo (``fog``) and the particles' (``particles``, the one ``mode``
       prefers per pulse, :func:`_best_particle_echo`) are each detected with
       ``Phi(SNR - snr_threshold)`` against their own draws, and the reported echo is the one
       ``mode`` prefers among the detected target, fog and particle echoes: strongest, the
       largest power; first, the nearest; last, the farthest (so the target wherever it is
       detected). The fog's echo is the one in front of the pulse's target (only fog nearer
       than the target echoes, and before the target's echo arrives: Hahner et al. 2021); its
       true range is uniform over its echo's top (where noise moves the peak). An atmospheric echo gets the range noise of its SNR and the apparent reflectivity
       ``pi P R^2 / (P_t eta A_r)`` (what a Lambertian target at that range would need).
       Without weather nothing is drawn, so clear-air results keep their bytes.
    6. Surfaces (docs/surfaces.md): the echo of a glass or water surface in front of the target
       (``front``, the lidar equation of its apparent reflectivity) and the halo of a strong
       return nearby (``halo``) are each detected with ``Phi(SNR - snr_threshold)`` against
       their own draws, and the hard echo reported is the one ``mode`` prefers among the
       detected target, front and halo echoes (as for the weather, which then competes with
       it): strongest the largest power, first the nearest, last the farthest. A front or halo
       echo gets the range noise of its SNR; a halo's apparent reflectivity is
       ``pi P R^2 / (P_t eta A_r)``. Without them nothing is drawn.
    """
    c = chain if isinstance(chain, ChainParams) else ChainParams.from_params(chain)
    d = np.asarray(distance_m, dtype=float)
    hit = np.isfinite(d)
    alpha = (extinction_from_visibility(c.visibility_m, c.wavelength_m) if extinction_per_m is None
             else float(extinction_per_m))
    power = lidar_received_power(c.peak_power_w, apparent_reflectivity, 1.0, d,
                                 receiver_area_m2=np.pi * c.receiver_aperture_m ** 2 / 4.0,
                                 system_efficiency=c.optical_efficiency, extinction_per_m=alpha,
                                 overlap=overlap_factor(d, c.full_overlap_m))
    power = np.where(hit, power, np.nan)
    snr = power / c.noise_power_w
    z = noise_rng.standard_normal(d.shape) if draws is None else draws.noise
    if c.noise_sigma_m is not None:
        sigma = float(c.noise_sigma_m)
    else:
        sigma = np.where(hit, snr_range_sigma(snr, floor_m=c.range_noise_floor_m,
                                              snr1_m=c.range_noise_snr1_m), 0.0)
    d_noisy = _on_range_grid(d + np.asarray(bias_m, dtype=float) + sigma * z, c, range_offset_m)
    with np.errstate(invalid="ignore"):
        in_range = hit & (d >= c.min_range_m) & (d <= c.max_range_m)
    u = detection_rng.random((2,) + d.shape) if draws is None else draws.detection
    if c.detection_model == "snr":
        p_d = detection_probability(snr, c.snr_threshold)
        det = in_range & (u[0] < p_d) & (u[1] >= c.dropout_probability)
    else:
        det = in_range & detect(d, reflectivity, reflectivity_lower=c.reflectivity_lower,
                                reflectivity_upper=c.reflectivity_upper, distance_lower_m=c.distance_lower_m,
                                distance_upper_m=c.distance_upper_m)
    apparent = np.where(hit, apparent_reflectivity, np.nan)
    d_hard = d                                  # range of the hard echo reported (target, front, halo)
    echo = halo_src = r_halo = None
    if front is not None or halo is not None:
        area_eff = c.peak_power_w * c.optical_efficiency * np.pi * c.receiver_aperture_m ** 2 / 4.0
        u_s = surface_rng.random((2,) + d.shape)
        hard = []                               # (code, range, power, apparent, detected)
        p_f = r_f = None
        if front is not None:
            r_f, rho_f = (np.asarray(a, dtype=float) for a in front)
            with np.errstate(invalid="ignore"):
                p_f = lidar_received_power(c.peak_power_w, rho_f, 1.0, r_f,
                                           receiver_area_m2=np.pi * c.receiver_aperture_m ** 2 / 4.0,
                                           system_efficiency=c.optical_efficiency, extinction_per_m=alpha,
                                           overlap=overlap_factor(r_f, c.full_overlap_m))
                det_f = (np.isfinite(r_f) & (r_f >= c.min_range_m) & (r_f <= c.max_range_m)
                         & (u_s[0] < detection_probability(p_f / c.noise_power_w, c.snr_threshold)))
            hard.append((FRONT_ECHO, r_f, p_f, rho_f, det_f))
        if halo is not None:
            # each pulse's strongest hard return, its power and range, and whether it is a source
            p_t = np.nan_to_num(power)
            with np.errstate(invalid="ignore"):
                use_f = np.zeros(d.shape, dtype=bool) if p_f is None else np.nan_to_num(p_f) > p_t
                p_src = np.where(use_f, np.nan_to_num(p_f), p_t)
                r_src = np.where(use_f, r_f if r_f is not None else d, d)
                rho_src = np.where(use_f, rho_f if front is not None else apparent, np.nan_to_num(apparent))
                source = rho_src > HALO_SOURCE_MIN_REFLECTIVITY
            h = halo_echoes(halo.directions, r_src, p_src, source,
                            min_power_w=c.noise_power_w * max(c.snr_threshold - 3.09, 0.1), level_db=halo.level_db,
                            pitch_rad=halo.pitch_rad, slope=halo.slope, core_rad=halo.core_rad)
            if h is not None:
                with np.errstate(invalid="ignore", divide="ignore"):
                    det_h = ((h.source >= 0) & ~source & (h.range_m >= c.min_range_m) & (h.range_m <= c.max_range_m)
                             & (u_s[1] < detection_probability(h.power_w / c.noise_power_w, c.snr_threshold)))
                    rho_h = np.pi * h.power_w * h.range_m ** 2 / area_eff
                hard.append((HALO_ECHO, h.range_m, h.power_w, rho_h, det_h))
                halo_src = np.where(det_h, h.source, -1)
        r_c, p_c, rho_c, det_c = d, np.nan_to_num(power), apparent, det
        echo = np.zeros(d.shape, dtype=np.int8)
        for code, r_x, p_x, rho_x, det_x in hard:
            with np.errstate(invalid="ignore"):
                take = det_x & (~det_c | _preferred(mode, r_x, p_x, r_c, p_c))
            r_c, p_c, rho_c = np.where(take, r_x, r_c), np.where(take, p_x, p_c), np.where(take, rho_x, rho_c)
            det_c = det_c | det_x
            echo = np.where(take, np.int8(code), echo)
        sel = echo != TARGET_ECHO
        if sel.any():
            snr_c, r_rep = _echo_range(r_c, p_c, z, bias_m, c, range_offset_m)
            d_noisy = np.where(sel, r_rep, d_noisy)
            power = np.where(sel, p_c, power)
            snr = np.where(sel, snr_c, snr)
            apparent = np.where(sel, rho_c, apparent)
            det = det | sel
            d_hard = np.where(sel, r_c, d)
        if halo_src is not None:
            halo_src = np.where(echo == HALO_ECHO, halo_src, -1)
            r_halo = np.where(echo == HALO_ECHO, r_c, np.nan)
    atmos = r_atm = None
    cands = []                                  # atmospheric echoes: (range, power, detected) per pulse
    if fog is not None:
        r_lo, r_hi, p_fog = fog.at(d)
        u_fog = fog_rng.random((2,) + d.shape)
        r_fog = r_lo + (r_hi - r_lo) * u_fog[1]
        with np.errstate(invalid="ignore"):
            fog_det = (u_fog[0] < detection_probability(p_fog / c.noise_power_w, c.snr_threshold)) & (
                r_fog >= c.min_range_m) & (p_fog > 0.0)
        cands.append((r_fog, p_fog, fog_det))
    if particles is not None and particles.pulse.size:
        cands.append(_best_particle_echo(particles, d, c, alpha, mode))
    if cands:
        r_a, p_a, det_a = cands[0]
        for r_b, p_b, det_b in cands[1:]:
            take = det_b & (~det_a | _preferred(mode, r_b, p_b, r_a, p_a))
            r_a, p_a, det_a = np.where(take, r_b, r_a), np.where(take, p_b, p_a), det_a | det_b
        with np.errstate(invalid="ignore"):
            atmos = det_a & ~(det & ~_preferred(mode, r_a, p_a, d_hard, np.nan_to_num(power)))
        if atmos.any():
            snr_a, r_rep = _echo_range(r_a, p_a, z, bias_m, c, range_offset_m)
            area_eff = c.peak_power_w * c.optical_efficiency * np.pi * c.receiver_aperture_m ** 2 / 4.0
            d_noisy = np.where(atmos, r_rep, d_noisy)
            power = np.where(atmos, p_a, power)
            snr = np.where(atmos, snr_a, snr)
            apparent = np.where(atmos, np.pi * p_a * r_a ** 2 / area_eff, apparent)
            det = det | atmos
        r_atm = np.where(atmos, r_a, np.nan)
    if focal is None:
        intensity = reported_intensity(apparent, snr, gain, intensity_rng, full_scale=c.intensity_full_scale,
                                       max_code=c.intensity_max, exponent=c.intensity_exponent,
                                       deviates=None if draws is None else draws.intensity)
    else:
        raw_scale = velodyne_raw_intensity_scale(d_noisy, focal.focal_distance_m, full_overlap_m=c.full_overlap_m,
                                                 extinction_per_m=alpha)
        raw = reported_intensity(apparent * raw_scale, snr, gain, intensity_rng, full_scale=c.intensity_full_scale,
                                 max_code=c.intensity_max, exponent=c.intensity_exponent,
                                 deviates=None if draws is None else draws.intensity)
        intensity = velodyne_focal_compensation(raw, d_noisy - focal.dist_correction_m, focal.focal_distance_m,
                                                focal.focal_slope, min_code=focal.min_intensity,
                                                max_code=focal.max_intensity)
    if echo is not None and atmos is not None:
        echo = np.where(atmos, np.int8(TARGET_ECHO), echo)      # the weather's echo replaced it
        if halo_src is not None:
            halo_src = np.where(atmos, -1, halo_src)
            r_halo = np.where(atmos, np.nan, r_halo)
    return SignalChain(power, snr, apparent, det, d_noisy, intensity, atmos, r_atm, echo, halo_src, r_halo)


def _on_range_grid(r, c: ChainParams, range_offset_m):
    """Ranges ``r`` [m] rounded to ``c.range_resolution_m`` on a grid that starts
    ``range_offset_m`` before the ray's origin (unchanged where the resolution is 0)."""
    if c.range_resolution_m > 0.0:
        res = c.range_resolution_m
        return np.round((r + range_offset_m) / res) * res - range_offset_m
    return r


def _echo_range(r, power_w, z, bias_m, c: ChainParams, range_offset_m):
    """``(SNR, reported range [m])`` of an echo other than the target's (a pane, water, fog, a
    particle, a halo) at true range ``r`` with peak power ``power_w`` [W]: the range noise of
    its own SNR (or the fixed ``noise_sigma_m``) with the pulse's deviate ``z`` and laser bias,
    on the range grid, as the target's range is reported."""
    snr = power_w / c.noise_power_w
    sigma = (np.full(np.shape(r), float(c.noise_sigma_m)) if c.noise_sigma_m is not None else
             snr_range_sigma(snr, floor_m=c.range_noise_floor_m, snr1_m=c.range_noise_snr1_m))
    return snr, _on_range_grid(r + np.asarray(bias_m, dtype=float) + sigma * z, c, range_offset_m)


def _preferred(mode, r1, p1, r2, p2):
    """Whether echo 1 is reported rather than echo 2 by ``mode``: strongest the larger power,
    first the nearer, last the farther (NaN compares false)."""
    with np.errstate(invalid="ignore"):
        if mode == "first":
            return r1 < r2
        if mode == "last":
            return r1 > r2
        return p1 > p2


def _best_particle_echo(particles, d, c: ChainParams, alpha, mode):
    """Per pulse, the particle echo ``mode`` would report among the detected ones in front of
    the target: ``(range [m], power [W], detected)``, NaN / 0 / False where there is none.

    A particle's power is the lidar equation of its equivalent reflectivity
    (:class:`sensors.weather.Particles`) with the pulse's overlap and extinction; it is detected
    with ``Phi(SNR - snr_threshold)`` against its own draw, and only in front of the pulse's hard
    target and beyond ``min_range_m``. The target's power is not reduced by what the particles
    in front of it take (a few % at most for the particles that echo).
    """
    r = particles.range_m
    pw = lidar_received_power(c.peak_power_w, particles.rho_apparent, 1.0, r,
                              receiver_area_m2=np.pi * c.receiver_aperture_m ** 2 / 4.0,
                              system_efficiency=c.optical_efficiency, extinction_per_m=alpha,
                              overlap=overlap_factor(r, c.full_overlap_m))
    with np.errstate(invalid="ignore"):
        ok = (particles.u_detect < detection_probability(pw / c.noise_power_w, c.snr_threshold)) & (
            r >= c.min_range_m) & ~(r >= d[particles.pulse])
    sel = np.flatnonzero(ok)
    r_out = np.full(d.shape, np.nan)
    p_out = np.zeros(d.shape)
    det = np.zeros(d.shape, dtype=bool)
    if sel.size:
        key = {"first": -r, "last": r}.get(mode, pw)[sel]
        order = sel[np.lexsort((key, particles.pulse[sel]))]      # by pulse, then key ascending
        pulse = particles.pulse[order]
        best = order[np.r_[pulse[1:] != pulse[:-1], True]]         # the largest key of each pulse
        r_out[particles.pulse[best]] = r[best]
        p_out[particles.pulse[best]] = pw[best]
        det[particles.pulse[best]] = True
    return r_out, p_out, det


#: Nearest fog that can echo when a lidar has neither an overlap model nor a blind zone
#: (``full_overlap_m`` = ``min_range_m`` = 0) [m]: the 1/R^2 of the fog's echo diverges at the
#: sensor (:func:`sensors.weather.fog_backscatter_waveform`); 0.1 m is about the size of the
#: optics, inside which no scattering volume is imaged (assumed); a measured overlap
#: (``full_overlap_m``) replaces it.
FOG_BLIND_MIN_M = 0.1
