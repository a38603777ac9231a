"""Rotating multi-beam lidars (Velodyne) and line lidars with a rotating mirror (Ibeo, SICK).

Both follow the BlenSor paper (Gschwandtner et al. 2011, sec. 3.2-3.3): every ray is cast from
where the sensor is at its own firing time, the reported distance gets a per-laser bias fixed
for the run plus per-ray Gaussian noise (Eq. 2), and a return is reported only when the surface
is bright enough for its distance (Eq. 1, :mod:`sensors.detection`). Behind a mirror the
reported point is a ghost on the emitted ray at the folded distance (sec. 3.5).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hifi import kernels
from hifi.caster import Hits
from hifi.constants import SPEED_OF_LIGHT_M_S
from hifi.dataset import (ATMOSPHERE_ID, annotation_var, axis_coords, range_frame, range_layout, sensor_pose_vars,
                          yaw_pitch)
from hifi.model import Sensor, Var
from hifi.params import Param
from hifi.rng import stream

from . import calibration as cal
from .beam import beam_echoes, bundle_echoes, footprint_directions, subray_pattern
from .detection import detected as detect, detection_probability
from .noise import snr_range_sigma
from .radiometry import (extinction_from_visibility, lambertian_return, lidar_received_power, overlap_factor,
                         reported_intensity)
from .weather import Particles, fog_echo_table, particle_window, precipitation, sample_particles, weather_of


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
    from .radiometry import extinction_from_visibility, lidar_received_power

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


def _common_params(*, max_range_m, noise_sigma_m=None, bias_sigma_m=0.0, reflectivity_lower=0.10,
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


def lidar_signal_chain(distance_m, reflectivity, apparent_reflectivity, p, *, bias_m, gain, noise_rng,
                       detection_rng, intensity_rng, range_offset_m=0.0, extinction_per_m=None, fog=None,
                       fog_rng=None, particles=None, mode="strongest") -> SignalChain:
    """Measurement chain of a pulsed lidar after the cast: power, SNR, detection, noise, intensity.

    Parameters
    ----------
    distance_m : (n,) float
        Range of the echo [m]; NaN where nothing hit.
    reflectivity : (n,) float
        Diffuse reflectivity of the surface, ``rho (1 - mirror)`` (BlenSor threshold).
    apparent_reflectivity : (n,) float
        ``rho cos(i) (1 - mirror)`` of a pencil beam, or the spot-weighted value of an echo.
    p : mapping
        The lidar's parameters (:func:`_common_params`).
    bias_m, gain : (n,) float
        Per-laser range bias [m] and intensity gain of each ray.
    noise_rng, detection_rng, intensity_rng : numpy.random.Generator
        Independent streams; ``noise_rng`` gives the range noise first (one normal deviate per
        ray), as BlenSor Eq. 2 did before this chain existed.
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
    4. Intensity: :func:`sensors.radiometry.reported_intensity` of the apparent reflectivity.
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
    """
    d = np.asarray(distance_m, dtype=float)
    hit = np.isfinite(d)
    alpha = (extinction_from_visibility(p["visibility_m"], p["wavelength_m"]) if extinction_per_m is None
             else float(extinction_per_m))
    power = lidar_received_power(p["peak_power_w"], apparent_reflectivity, 1.0, d,
                                 receiver_area_m2=np.pi * p["receiver_aperture_m"] ** 2 / 4.0,
                                 system_efficiency=p["optical_efficiency"], extinction_per_m=alpha,
                                 overlap=overlap_factor(d, p["full_overlap_m"]))
    power = np.where(hit, power, np.nan)
    snr = power / p["noise_power_w"]
    z = noise_rng.standard_normal(d.shape)
    if p["noise_sigma_m"] is not None:
        sigma = float(p["noise_sigma_m"])
    else:
        sigma = np.where(hit, snr_range_sigma(snr, floor_m=p["range_noise_floor_m"],
                                              snr1_m=p["range_noise_snr1_m"]), 0.0)
    d_noisy = d + np.asarray(bias_m, dtype=float) + sigma * z
    if p["range_resolution_m"] > 0.0:
        res = p["range_resolution_m"]
        d_noisy = np.round((d_noisy + range_offset_m) / res) * res - range_offset_m
    with np.errstate(invalid="ignore"):
        in_range = hit & (d >= p["min_range_m"]) & (d <= p["max_range_m"])
    u = detection_rng.random((2,) + d.shape)
    if p["detection_model"] == "snr":
        p_d = detection_probability(snr, p["snr_threshold"])
        det = in_range & (u[0] < p_d) & (u[1] >= p["dropout_probability"])
    else:
        det = in_range & detect(d, reflectivity, reflectivity_lower=p["reflectivity_lower"],
                                reflectivity_upper=p["reflectivity_upper"], distance_lower_m=p["distance_lower_m"],
                                distance_upper_m=p["distance_upper_m"])
    apparent = np.where(hit, apparent_reflectivity, np.nan)
    atmos = r_atm = None
    cands = []                                  # atmospheric echoes: (range, power, detected) per pulse
    if fog is not None:
        r_lo, r_hi, p_fog = fog.at(d)
        u_fog = fog_rng.random((2,) + d.shape)
        r_fog = r_lo + (r_hi - r_lo) * u_fog[1]
        with np.errstate(invalid="ignore"):
            fog_det = (u_fog[0] < detection_probability(p_fog / p["noise_power_w"], p["snr_threshold"])) & (
                r_fog >= p["min_range_m"]) & (p_fog > 0.0)
        cands.append((r_fog, p_fog, fog_det))
    if particles is not None and particles.pulse.size:
        cands.append(_best_particle_echo(particles, d, p, alpha, mode))
    if cands:
        r_a, p_a, det_a = cands[0]
        for r_b, p_b, det_b in cands[1:]:
            take = det_b & (~det_a | _preferred(mode, r_b, p_b, r_a, p_a))
            r_a, p_a, det_a = np.where(take, r_b, r_a), np.where(take, p_b, p_a), det_a | det_b
        with np.errstate(invalid="ignore"):
            atmos = det_a & ~(det & ~_preferred(mode, r_a, p_a, d, np.nan_to_num(power)))
        if atmos.any():
            snr_a = p_a / p["noise_power_w"]
            sigma_a = (np.full(d.shape, float(p["noise_sigma_m"])) if p["noise_sigma_m"] is not None else
                       snr_range_sigma(snr_a, floor_m=p["range_noise_floor_m"], snr1_m=p["range_noise_snr1_m"]))
            r_rep = r_a + np.asarray(bias_m, dtype=float) + sigma_a * z
            if p["range_resolution_m"] > 0.0:
                res = p["range_resolution_m"]
                r_rep = np.round((r_rep + range_offset_m) / res) * res - range_offset_m
            area_eff = p["peak_power_w"] * p["optical_efficiency"] * np.pi * p["receiver_aperture_m"] ** 2 / 4.0
            d_noisy = np.where(atmos, r_rep, d_noisy)
            power = np.where(atmos, p_a, power)
            snr = np.where(atmos, snr_a, snr)
            apparent = np.where(atmos, np.pi * p_a * r_a ** 2 / area_eff, apparent)
            det = det | atmos
        r_atm = np.where(atmos, r_a, np.nan)
    intensity = reported_intensity(apparent, snr, gain, intensity_rng, full_scale=p["intensity_full_scale"],
                                   max_code=p["intensity_max"], exponent=p["intensity_exponent"])
    return SignalChain(power, snr, apparent, det, d_noisy, intensity, atmos, r_atm)


def _preferred(mode, r1, p1, r2, p2):
    """Whether echo 1 is reported rather than echo 2 by ``mode``: strongest the larger power,
    first the nearer, last the farther (NaN compares false)."""
    with np.errstate(invalid="ignore"):
        if mode == "first":
            return r1 < r2
        if mode == "last":
            return r1 > r2
        return p1 > p2


def _best_particle_echo(particles, d, p, alpha, mode):
    """Per pulse, the particle echo ``mode`` would report among the detected ones in front of
    the target: ``(range [m], power [W], detected)``, NaN / 0 / False where there is none.

    A particle's power is the lidar equation of its equivalent reflectivity
    (:class:`sensors.weather.Particles`) with the pulse's overlap and extinction; it is detected
    with ``Phi(SNR - snr_threshold)`` against its own draw, and only in front of the pulse's hard
    target and beyond ``min_range_m``. The target's power is not reduced by what the particles
    in front of it take (a few % at most for the particles that echo).
    """
    r = particles.range_m
    pw = lidar_received_power(p["peak_power_w"], particles.rho_apparent, 1.0, r,
                              receiver_area_m2=np.pi * p["receiver_aperture_m"] ** 2 / 4.0,
                              system_efficiency=p["optical_efficiency"], extinction_per_m=alpha,
                              overlap=overlap_factor(r, p["full_overlap_m"]))
    with np.errstate(invalid="ignore"):
        ok = (particles.u_detect < detection_probability(pw / p["noise_power_w"], p["snr_threshold"])) & (
            r >= p["min_range_m"]) & ~(r >= d[particles.pulse])
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

#: Depth discontinuity that marks a pulse as an edge pulse [m] (:func:`depth_edge_pulses`): a
#: neighbour's hit farther than this from the pulse's tangent plane (or a hit next to a miss).
#: Depth steps below it merge into one echo (the range resolution c tau / 2 is 0.75 m for 5 ns)
#: whose centroid moves by at most its energy share times the step, 2.5 cm at 5 cm: about the
#: range noise, so pulses beside smaller steps keep their pencil range.
EDGE_DEPTH_M = 0.05


def _footprint_params(params, *, divergence_rad, divergence_v_rad=None, aperture_radius_m=0.005,
                      source="", dual=False):
    """A model's beam-footprint defaults (data sheet) and the edge-point parameters.

    Updates ``params`` (a PARAMS dict of :func:`_common_params`) in place and returns it:
    ``divergence_rad`` (horizontal), ``divergence_v_rad`` (vertical, None: circular),
    ``aperture_radius_m``, ``edge_subrays`` and, for the rotating lidars, ``return_mode``
    with ``"dual"``.
    """
    params["divergence_rad"] = Param("float", default=divergence_rad, minimum=0.0, maximum=0.5,
                                     doc=f"full beam divergence (horizontal) at the 1/e^2 points [rad] ({source})")
    params["divergence_v_rad"] = Param("float", default=divergence_v_rad, minimum=0.0, maximum=0.5,
                                       doc=f"full vertical beam divergence [rad] ({source}; none: as divergence_rad)")
    params["aperture_radius_m"] = Param("float", default=aperture_radius_m, minimum=0.0,
                                        doc="beam radius at the aperture [m]")
    params["edge_subrays"] = Param("int", default=7, minimum=0, maximum=100,
                                   doc="sub-rays of the beam footprint cast for pulses at depth edges "
                                       "(n_subrays = 1); 0: pencil beams everywhere")
    if dual:
        params["return_mode"] = Param(
            "str", default="strongest", choices=("first", "last", "strongest", "average", "dual"),
            doc="echo reported at edges and with n_subrays > 1 (Velodyne default: strongest); "
                "dual: strongest and last (second-strongest if they coincide), a 'return' dimension of 2")
    return params


def depth_edge_pulses(points, normals, hit, shape, ring_order=None, depth_m=EDGE_DEPTH_M):
    """Pulses whose footprint may straddle a depth edge: a neighbour off their surface.

    The compiled kernel :func:`sensors._lidar_kernel.edge_flags` (with the kernels off,
    :func:`hifi.kernels.enabled`, :func:`depth_edge_pulses_reference`); the same flags either
    way (parameters and results there).
    """
    if not kernels.enabled():
        return depth_edge_pulses_reference(points, normals, hit, shape, ring_order, depth_m)
    from ._lidar_kernel import edge_flags

    n_s, n_b = shape
    order = np.arange(n_b) if ring_order is None else np.asarray(ring_order, dtype=np.int64)
    along = np.zeros((n_s, n_b), dtype=np.uint8)
    across = np.zeros((n_s, n_b), dtype=np.uint8)
    edge_flags(np.ascontiguousarray(points, dtype=float).reshape(n_s, n_b, 3),
               np.ascontiguousarray(normals, dtype=float).reshape(n_s, n_b, 3),
               np.ascontiguousarray(hit, dtype=bool).reshape(n_s, n_b), order, np.float32(depth_m), along, across)
    return along.ravel() > 0, across.ravel()


def depth_edge_pulses_reference(points, normals, hit, shape, ring_order=None, depth_m=EDGE_DEPTH_M):
    """Pulses whose footprint may straddle a depth edge: a neighbour off their surface (numpy).

    Parameters
    ----------
    points, normals : (n, 3) float
        Hit point [m] and unit surface normal of each pulse's pencil ray (NaN on a miss),
        n = prod(shape), in the order of ``shape``.
    hit : (n,) bool
    shape : (int, int)
        The scan grid: (steps along the scan, beams across it).
    ring_order : (shape[1],) int, optional
        Beam indices in elevation order, so that neighbours across the scan are adjacent rings.
    depth_m : float
        :data:`EDGE_DEPTH_M`.

    Returns
    -------
    along : ndarray of bool, shape (n,)
        Pulses with a neighbour along the scan that leaves their surface: both pulses of a pair
        whose hit points lie farther than ``depth_m`` from either one's tangent plane,
        ``max(|n_p . (x_q - x_p)|, |n_q . (x_q - x_p)|) > depth_m``, and the missing pulse of
        a pair of which one hits and the other does not (the hitting one's spot, partly in the
        void, still reports its own surface). A plane, however oblique (a ground ring at
        grazing incidence), flags nothing; a step in depth does.
    across : ndarray of uint8, shape (n,)
        The same across the scan between adjacent rings in elevation order: bit 1 set where
        the ring below leaves the pulse's surface, bit 2 where the ring above does.
    """
    n_s, n_b = shape
    order = np.arange(n_b) if ring_order is None else np.asarray(ring_order)
    # float32 (1e-5 m at 100 m, far below depth_m): half the memory traffic of float64
    x = np.asarray(points).reshape(n_s, n_b, 3)[:, order].astype(np.float32)
    nrm = np.asarray(normals).reshape(n_s, n_b, 3)[:, order].astype(np.float32)
    np.nan_to_num(x, copy=False)
    np.nan_to_num(nrm, copy=False)
    h = np.asarray(hit, dtype=bool).reshape(n_s, n_b)[:, order]
    flags = []
    for axis in (0, 1):
        flag = np.zeros((n_s, n_b), dtype=np.uint8)
        lo = [slice(None), slice(None)]
        hi = [slice(None), slice(None)]
        lo[axis], hi[axis] = slice(None, -1), slice(1, None)
        lo, hi = tuple(lo), tuple(hi)
        dx = x[hi] - x[lo]
        # normal . difference summed left to right (einsum's order is numpy's to choose)
        off = np.maximum(np.abs(_dot3(nrm[lo], dx)), np.abs(_dot3(nrm[hi], dx)))
        step = h[lo] & h[hi] & (off > depth_m)
        flag[lo] |= (step | (h[hi] & ~h[lo])).astype(np.uint8) * 2      # its upper / next neighbour
        flag[hi] |= (step | (h[lo] & ~h[hi])).astype(np.uint8)          # its lower / previous one
        out = np.empty_like(flag)
        out[:, order] = flag
        flags.append(out.ravel())
    return flags[0] > 0, flags[1]


def _dot3(u, v):
    """``u . v`` over the last axis (length 3), summed left to right, in the arrays' dtype."""
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]


#: Position (beam radii) of the probe sub-ray that tests whether the footprint of a pulse
#: flagged across rings reaches the edge: the bottom (bit 1) or top (bit 2) of the spot.
_PROBE_UV = {1: np.array([[0.0, -0.9]]), 2: np.array([[0.0, 0.9]])}


def _row_sums(x):
    """``np.sum(x, axis=1)``, the same bits: numpy sums fewer than 8 elements one after the other
    (from -0.0), which column-by-column additions repeat faster than its reduction over a short
    axis; 8 or more: numpy's pairwise sum itself."""
    if x.shape[1] >= 8 or x.shape[1] == 0:
        return np.sum(x, axis=1)
    s = x[:, 0].copy()
    for j in range(1, x.shape[1]):
        s += x[:, j]
    return s


def _probe_leaves(hits, cand, probe):
    """Which of the probes of pulses ``cand`` (their :class:`hifi.caster.Hits` ``probe``) leave
    the surface of the pulse's pencil hit: one hits and the other misses, or the probe's point
    lies more than :data:`EDGE_DEPTH_M` off the plane of the pencil's hit. The compiled kernel
    :func:`sensors._lidar_kernel.probe_leaves` with the kernels on, else numpy; the same flags
    (the plane distance summed left to right either way)."""
    if kernels.enabled():
        from ._lidar_kernel import probe_leaves
        out = np.empty(cand.size, dtype=bool)
        probe_leaves(cand, np.ascontiguousarray(hits.hit), np.ascontiguousarray(hits.normal),
                     np.ascontiguousarray(hits.point), np.ascontiguousarray(probe.hit),
                     np.ascontiguousarray(probe.point), EDGE_DEPTH_M, out)
        return out
    ax_hit = hits.hit[cand]
    off_plane = np.abs(_dot3(hits.normal[cand], probe.point - hits.point[cand]))
    return (probe.hit != ax_hit) | (probe.hit & ax_hit & (np.nan_to_num(off_plane) > EDGE_DEPTH_M))


def _take_hits(hits, rows):
    return Hits(*(getattr(hits, f)[rows] for f in Hits.__dataclass_fields__))


class _PulsedLidar(Sensor):
    """Shared measurement chain (:func:`lidar_signal_chain`): received power, SNR, detection,
    SNR-dependent range noise, reported intensity; ghost points behind mirrors."""

    #: long_name of the ``intensity`` variable: what the sensor reports, in its own scale.
    intensity_long_name = "reported intensity, integer code 0..intensity_max (intensity_full_scale: white target)"
    #: Start of the range grid before each ray's origin [m] (:func:`lidar_signal_chain`
    #: ``range_offset_m``): 0, or an Ouster's beam-origin offset.
    range_offset_m = 0.0

    @classmethod
    def check_params(cls, p):
        if p["distance_upper_m"] <= p["distance_lower_m"]:
            raise ValueError(f"distance_upper_m: must be > distance_lower_m ({p['distance_lower_m']})")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        scene = ctx.scene
        self._refl = scene.object_table("reflectivity")
        self._mirror = scene.object_table("mirror")
        self._rough = scene.object_table("roughness_rad")
        self._class = scene.object_table("class_id")
        self._class_names = list(scene.class_names)
        self._setup_weather(ctx)

    def _setup_weather(self, ctx):
        """Extinction and the fog echo of the run's ``[weather]`` (:mod:`sensors.weather`).

        Clear air (no ``[weather]``): the ``visibility_m`` parameter's extinction and no fog
        echo, exactly as without weather. Fog: the fog's extinction replaces the clear air's;
        its echo (:func:`sensors.weather.fog_echo_table`) uses the pulse of ``pulse_width_s``,
        the overlap of ``full_overlap_m`` and the blind zone ``min_range_m`` (0.1 m if that
        is 0: :data:`FOG_BLIND_MIN_M`).
        """
        p = self.params
        w = weather_of(ctx)
        self._weather = w
        self._extinction = None if w.clear else w.extinction(
            p["wavelength_m"], float(extinction_from_visibility(p["visibility_m"], p["wavelength_m"])))
        self._fog = None
        if w.fog_visibility_m is not None:
            lo = max(float(p["min_range_m"]), FOG_BLIND_MIN_M)
            scale = p["peak_power_w"] * p["optical_efficiency"] * np.pi * p["receiver_aperture_m"] ** 2 / 4.0
            table = fog_echo_table(
                extinction_per_m=self._extinction, backscatter_per_m_sr=w.fog_backscatter(p["wavelength_m"]),
                pulse_fwhm_s=p["pulse_width_s"], full_overlap_m=p["full_overlap_m"], blind_m=lo,
                max_range_m=min(float(p["max_range_m"]), lo + float(p["full_overlap_m"]) + 10.0),
                noise=p["noise_power_w"] / scale)
            self._fog = table._replace(height=scale * table.height)
        # Rain drops and snowflakes: the sizes and ranges whose echo can be detected (P_d >=
        # 1e-3 at SNR = snr_threshold - 3.09) for this lidar's beam, overlap and extinction.
        self._precip = []
        div_h, div_v = self._divergence()
        self._half_div = 0.25 * (div_h + div_v)
        area = np.pi * p["receiver_aperture_m"] ** 2 / 4.0
        alpha = self._extinction if self._extinction is not None else 0.0

        def power_per_rho(r):
            return lidar_received_power(p["peak_power_w"], 1.0, 1.0, r, receiver_area_m2=area,
                                        system_efficiency=p["optical_efficiency"], extinction_per_m=alpha,
                                        overlap=overlap_factor(r, p["full_overlap_m"]))
        for kind in precipitation(w):
            window = particle_window(kind, power_per_rho_fn=power_per_rho,
                                     min_power_w=p["noise_power_w"] * max(p["snr_threshold"] - 3.09, 0.1),
                                     aperture_radius_m=p["aperture_radius_m"], half_divergence_rad=self._half_div,
                                     r_min_m=max(float(p["min_range_m"]), FOG_BLIND_MIN_M),
                                     r_max_m=float(p["max_range_m"]))
            if window is not None:
                self._precip.append((kind, window))

    def _particles(self, k, n_pulses):
        """Rain drops and snowflakes in the beams of frame ``k`` (None without precipitation)."""
        if not self._precip:
            return None
        rng = stream(self.ctx.seed, self.name, k, "precipitation")
        parts = [sample_particles(rng, n_pulses, kind, window, aperture_radius_m=self.params["aperture_radius_m"],
                                  half_divergence_rad=self._half_div) for kind, window in self._precip]
        return Particles(*(np.concatenate([getattr(q, f) for q in parts]) for f in Particles._fields))

    def _laser_bias(self, n_lasers: int) -> np.ndarray:
        """Per-laser range bias [m], drawn once per run (stream keyed by sensor, not frame)."""
        rng = stream(self.ctx.seed, self.name, -1, "laser_bias")
        return self.params["bias_sigma_m"] * rng.standard_normal(n_lasers)

    def _subrays(self, directions, origins_sensor, uv):
        """Origins and directions (sensor frame, (pulses x sub-rays, 3)) of the divergent beams
        of ``directions`` (:func:`sensors.beam.footprint_directions`). Kept for the next frame
        when they are the model's own fixed beams (``self._dirs``, ``self._origins``): the
        same every frame (an HDL-64E with 4 sub-rays: 115 ms a frame saved, 26 MB held,
        counted in :meth:`setup_bytes`)."""
        p = self.params
        div_h, div_v = self._divergence()
        fixed = directions is getattr(self, "_dirs", None) and (
            origins_sensor is None or origins_sensor is getattr(self, "_origins", None))
        cache = getattr(self, "_subray_cache", None)
        if fixed and cache is not None and cache[0] is directions and cache[1] is origins_sensor:
            return cache[2], cache[3]
        off, d = footprint_directions(directions, uv, div_h, div_v, p["aperture_radius_m"])
        o = off if origins_sensor is None else off + np.asarray(origins_sensor)[:, None, :]
        out = o.reshape(-1, 3), d.reshape(-1, 3)
        if fixed:
            self._subray_cache = (directions, origins_sensor, *out)
        return out

    def _subray_bytes(self) -> int:
        """Bytes per pulse of the sub-rays :meth:`_subrays` keeps from frame to frame (origin and
        direction, float64, of each of ``n_subrays`` > 1)."""
        n = self.params.get("n_subrays", 1)
        return 48 * n if n > 1 else 0

    def uses_beam_kernel(self) -> bool:
        """``n_subrays`` > 1, or ``average`` mode with edge footprints: the waveform receiver
        (:func:`sensors.beam.beam_echoes`) runs."""
        p = self.params
        return p.get("n_subrays", 1) > 1 or (p.get("return_mode") == "average" and p.get("edge_subrays", 0) > 1)

    def _beam_mode(self):
        """:func:`sensors.beam.process_returns` mode of ``return_mode`` (dual: Velodyne's)."""
        mode = self.params["return_mode"]
        return "strongest_last" if mode == "dual" else mode

    def _divergence(self):
        p = self.params
        v = p.get("divergence_v_rad")
        return p["divergence_rad"], (p["divergence_rad"] if v is None else v)

    def _cast_beams(self, directions, times, origins_sensor=None, grid=None, ring_order=None):
        """Cast every pulse: pencil rays with footprints at edges, or with ``n_subrays`` > 1 a
        divergent beam.

        Returns ``(hits, origins, dirs, echoes)``: per return slot (2 for ``return_mode =
        "dual"``, else 1) a :class:`hifi.caster.Hits` and an echo, and the origins and
        directions of the beam axes (scene frame).

        With ``n_subrays`` > 1, the divergent beam of every pulse: the VANE model of
        :mod:`sensors.beam`: sub-rays with Gaussian weights over the elliptical footprint
        (:func:`sensors.beam.footprint_directions`), Lambertian returns summed into a waveform,
        echoes chosen by ``return_mode``; the echo is ``(range_m, reflectivity, energy)`` of
        the echo the receiver reports and its reflectivity for the detection threshold (Eq. 1)
        is the spot-weighted reflectivity of the surfaces in it, ``sum_i w_i rho_i (1 -
        mirror_i)`` over its sub-rays, so a half-covered spot counts half. The hits are those
        of the beam axes.

        With ``n_subrays`` = 1 (default) the edge-aware footprint: every pulse casts its pencil
        ray; pulses at a depth edge (:func:`depth_edge_pulses` over the scan ``grid``, rings
        in ``ring_order``) cast ``edge_subrays`` - 1 more sub-rays of the same footprint (the
        pencil ray is sub-ray 0 of :func:`sensors.beam.subray_pattern`); their returns are
        grouped into echoes at the pulse's range resolution (:func:`sensors.beam.bundle_echoes`;
        ``average`` mode: the waveform receiver :func:`sensors.beam.beam_echoes`) and
        ``return_mode`` picks the echo. That pulse's hit
        becomes the hit of the echo's dominant sub-ray (surface, normal, object, point) with
        the echo's range as ``distance``, so the measurement chain sees a pencil hit and
        echoes are None: an edge pulse reports one of the two surfaces (or, for steps below the
        0.75 m range resolution, a range between them), never the pencil's choice by default.
        Its power is that of the dominant surface (the partial coverage of the spot is not
        applied). ``edge_subrays`` = 0 is the pencil beam everywhere.
        """
        p = self.params
        n = p["n_subrays"]
        m = 2 if p["return_mode"] == "dual" else 1
        div_h, div_v = self._divergence()
        if n == 1:
            hits, origins, dirs = self.cast(directions, times, p["max_range_m"], origins_sensor)
            k = p["edge_subrays"]
            if k <= 1 or grid is None:
                return [hits] * m, origins, dirs, [None] * m
            along, across = depth_edge_pulses(hits.point, hits.normal, hits.hit, grid, ring_order)
            # Rings are far apart compared with the footprint (HDL-64E: 7 mrad vs 2): a pulse
            # flagged only across rings casts a probe at the bottom and/or top of its spot,
            # toward the ring that left its surface, and gets the full bundle only if a probe
            # leaves its surface too.
            cands = [np.flatnonzero(((across & bit) > 0) & ~along) for bit in _PROBE_UV]
            cand = np.concatenate(cands)
            if cand.size:
                parts = [footprint_directions(np.asarray(directions)[c], uv, div_h, div_v, p["aperture_radius_m"])
                         for c, uv in zip(cands, _PROBE_UV.values())]
                off = np.concatenate([q[0] for q in parts])[:, 0]
                d = np.concatenate([q[1] for q in parts])[:, 0]
                o = off if origins_sensor is None else off + np.asarray(origins_sensor)[cand]
                probe, _, _ = self.cast(d, np.asarray(times)[cand], p["max_range_m"], o)   # one cast for all
                cand = cand[_probe_leaves(hits, cand, probe)]
            edge = np.union1d(np.flatnonzero(along), cand)
            if edge.size == 0:
                return [hits] * m, origins, dirs, [None] * m
            uv, w = subray_pattern(k)
            off, d = footprint_directions(np.asarray(directions)[edge], uv[1:], div_h, div_v, p["aperture_radius_m"])
            o = off if origins_sensor is None else off + np.asarray(origins_sensor)[edge][:, None, :]
            sub, _, _ = self.cast(d.reshape(-1, 3), np.repeat(np.asarray(times)[edge], k - 1), p["max_range_m"],
                                  o.reshape(-1, 3))
            axis = _take_hits(hits, edge)
            both = Hits(*(np.concatenate([getattr(axis, f)[:, None], getattr(sub, f).reshape(
                (edge.size, k - 1) + getattr(sub, f).shape[1:])], axis=1).reshape((-1,) + getattr(sub, f).shape[1:])
                for f in Hits.__dataclass_fields__))
            oid = both.object_id
            energy = np.where(both.hit, np.broadcast_to(w, (edge.size, k)).ravel() * lambertian_return(
                self._refl[oid], both.cos_incidence, both.distance, self._mirror[oid],
                roughness_rad=self._rough[oid]), 0.0).reshape(edge.size, k)
            if p["return_mode"] == "average":
                report = beam_echoes(both.distance.reshape(edge.size, k), energy, bin_width_s=p["bin_width_s"],
                                     pulse_width_s=p["pulse_width_s"], mode="average", detection_threshold=0.0,
                                     cutoff_m=p["cutoff_m"]).report
            else:
                report = bundle_echoes(both.distance.reshape(edge.size, k), energy, mode=self._beam_mode(),
                                       resolution_m=SPEED_OF_LIGHT_M_S * p["pulse_width_s"] / 2.0)
            out = []
            for j in range(m):
                dom = report.dominant[:, j]
                ok = dom >= 0
                pick = np.flatnonzero(ok) * k + dom[ok]          # row of the dominant sub-ray in `both`
                # the pencil hits are this step's own: the last slot takes them over
                slot = hits if j == m - 1 else Hits(*(getattr(hits, f).copy() for f in Hits.__dataclass_fields__))
                chosen = _take_hits(both, pick)
                for f in Hits.__dataclass_fields__:
                    getattr(slot, f)[edge[ok]] = getattr(chosen, f)
                slot.distance[edge[ok]] = report.range_m[ok, j]
                out.append(slot)
            return out, origins, dirs, [None] * m
        count = directions.shape[0]
        uv, w = subray_pattern(n)
        o, d = self._subrays(directions, origins_sensor, uv)
        hits, origins, dirs = self.cast(d, np.repeat(times, n), p["max_range_m"], o)
        oid = hits.object_id
        weight = np.broadcast_to(w, (count, n))
        if kernels.enabled():                  # the same bytes as the numpy expression below
            from ._lidar_kernel import subray_energy
            energy = np.empty(count * n)
            args = (hits.distance, hits.direction, hits.normal, oid, self._refl, self._mirror, self._rough,
                    np.ascontiguousarray(w, dtype=float), energy)
            self.run_chunks(subray_energy, count * n, *args)
            energy = energy.reshape(count, n)
        else:
            energy = np.where(hits.hit, weight.ravel() * lambertian_return(
                self._refl[oid], hits.cos_incidence, hits.distance, self._mirror[oid],
                roughness_rad=self._rough[oid]), 0.0).reshape(count, n)
        rng_sub = hits.distance.reshape(count, n)
        echo = beam_echoes(rng_sub, energy, bin_width_s=p["bin_width_s"], pulse_width_s=p["pulse_width_s"],
                           mode=self._beam_mode(), detection_threshold=0.0, cutoff_m=p["cutoff_m"],
                           threads=self.threads).report
        rho_sub = (self._refl[oid] * (1.0 - self._mirror[oid])).reshape(count, n)
        axis = slice(None, None, n)             # sub-ray 0 of every pulse: strided copies, no index array
        axis_hits = Hits(*(np.ascontiguousarray(getattr(hits, f)[axis]) for f in Hits.__dataclass_fields__))
        w_rho = weight * np.nan_to_num(rho_sub)
        echoes = []
        for j in range(m):
            rho_echo = _row_sums(np.where(echo.members[:, j, :], w_rho, 0.0))
            echoes.append((echo.range_m[:, j], rho_echo, echo.energy[:, j]))
        return [axis_hits] * m, np.ascontiguousarray(origins[axis]), np.ascontiguousarray(dirs[axis]), echoes

    def _measure_returns(self, k, t, hits, origins, dirs, bias, dims, shape, times, yaw, pitch, echoes):
        """:meth:`_measure` per return slot; two slots are stacked on a trailing ``return`` dim."""
        mode = self.params["return_mode"]
        modes = ("strongest", "last") if mode == "dual" else (mode if mode in ("first", "last") else "strongest",)
        particles = self._particles(k, int(np.prod(shape)))        # the same drops for both slots
        frames = [self._measure(k, t, h, origins, dirs, bias, dims, shape, times, yaw, pitch, e, mode=m,
                                particles=particles)
                  for h, e, m in zip(hits, echoes, modes)]
        if self.params["return_mode"] != "dual":
            return frames[0]
        out = {}
        for name, var in frames[0].items():
            if tuple(var.dims[:len(dims)]) == tuple(dims):
                data = np.stack([np.asarray(f[name].data) for f in frames], axis=len(dims))
                out[name] = Var(tuple(var.dims) + ("return",), data, var.units, var.long_name, var.extra,
                                var.encoding)
            else:
                out[name] = var
        return out

    def _laser_gain(self, n_lasers: int) -> np.ndarray:
        """Per-laser intensity gain, log-normal ``exp(laser_gain_sigma z)``, drawn once per run."""
        cache = getattr(self, "_gain_cache", None)
        if cache is None or cache.shape[0] != n_lasers:
            rng = stream(self.ctx.seed, self.name, -1, "laser_gain")
            cache = np.exp(self.params["laser_gain_sigma"] * rng.standard_normal(n_lasers))
            self._gain_cache = cache
        return cache

    def _measure(self, k, t, hits, origins, dirs, bias, dims, shape, times, yaw, pitch, echo=None,
                 mode="strongest", particles=None):
        """The signal chain after the cast (:func:`lidar_signal_chain`), then the dataset.

        In weather, pulses whose reported echo is the fog's or a particle's (``atmosphere``) get
        ``object_id`` -2, their true range and point at that echo on the emitted ray (no normal,
        no face, annotation 0). Both return slots of a dual return see the same fog and the
        same particles.
        """
        p = self.params
        oid = hits.object_id
        n_lasers = shape[-1]
        if self._kernel_applies(echo, particles):
            sig, reported = self._kernel_chain(k, hits, origins, dirs, bias, n_lasers, echo)
            return self._frame(t, hits, origins, dirs, sig, reported, dims, shape, times, yaw, pitch)
        if echo is None:
            measured = hits.distance
            rho = self._refl[oid] * (1.0 - self._mirror[oid])
            apparent = lambertian_return(self._refl[oid], hits.cos_incidence, measured, self._mirror[oid],
                                         roughness_rad=self._rough[oid], reference_distance_m=1.0) * measured ** 2
        else:
            measured, rho, energy = echo
            apparent = np.where(np.isfinite(measured), np.nan_to_num(energy) * measured ** 2, np.nan)
        gain = np.tile(self._laser_gain(n_lasers), int(np.prod(shape[:-1])))
        sig = lidar_signal_chain(measured, rho, apparent, p, bias_m=bias, gain=gain,
                                 noise_rng=stream(self.ctx.seed, self.name, k, "noise"),
                                 detection_rng=stream(self.ctx.seed, self.name, k, "detection"),
                                 intensity_rng=stream(self.ctx.seed, self.name, k, "intensity"),
                                 range_offset_m=self.range_offset_m,
                                 extinction_per_m=self._extinction, fog=self._fog,
                                 fog_rng=None if self._fog is None else stream(self.ctx.seed, self.name, k, "fog"),
                                 particles=particles, mode=mode)
        if sig.atmosphere is not None and sig.atmosphere.any():
            a = sig.atmosphere
            hits = Hits(*(getattr(hits, f).copy() for f in Hits.__dataclass_fields__))
            hits.object_id[a] = ATMOSPHERE_ID
            hits.face_index[a] = -1
            hits.distance[a] = sig.atmosphere_range[a]
            hits.point[a] = origins[a] + dirs[a] * sig.atmosphere_range[a][:, None]
            hits.normal[a] = np.nan
            oid = hits.object_id
        reported = origins + dirs * sig.distance_noisy[:, None]          # on the emitted ray: mirror ghosts
        return self._frame(t, hits, origins, dirs, sig, reported, dims, shape, times, yaw, pitch)

    def _kernel_applies(self, echo, particles) -> bool:
        """Whether :meth:`_kernel_chain` computes this slot: the compiled kernels on
        (:func:`hifi.kernels.enabled`), no fog echo and no particles in the beams, the SNR
        detection model (pencil hits and divergent-beam echoes alike)."""
        return (kernels.enabled() and self._fog is None and (particles is None or not particles.pulse.size)
                and self.params["detection_model"] == "snr")

    def _kernel_chain(self, k, hits, origins, dirs, bias, n_lasers, echo=None):
        """:func:`lidar_signal_chain` of pencil hits or of a divergent beam's ``echo`` in clear
        air (or weather without fog or particles in the beams) with the SNR detection model, in
        the compiled kernel :func:`sensors._lidar_kernel.pencil_chain`, chunks of pulses on the
        caster's threads.

        The same deviates from the same streams as the numpy chain; returns the
        :class:`SignalChain` (``distance_noisy`` already NaN where not detected) and the
        reported points (NaN where not detected).
        """
        from ._lidar_kernel import pencil_chain       # numba: loaded by the first lidar step

        p = self.params
        seed, name = self.ctx.seed, self.name
        n = hits.distance.shape[0]
        threads = self.threads
        draws = [lambda: stream(seed, name, k, "noise").standard_normal(n),      # three streams at once
                 lambda: stream(seed, name, k, "detection").random((2, n)),
                 lambda: stream(seed, name, k, "intensity").standard_normal(n)]
        z, u, zi = [f() for f in draws] if threads is None else threads.run(draws)
        alpha = (extinction_from_visibility(p["visibility_m"], p["wavelength_m"]) if self._extinction is None
                 else self._extinction)
        c = np.array([
            float(p["peak_power_w"]) * float(p["optical_efficiency"]), np.pi * p["receiver_aperture_m"] ** 2 / 4.0,
            -2.0 * float(alpha), float(p["full_overlap_m"]), float(p["noise_power_w"]),
            float(p["range_noise_floor_m"]) ** 2, float(p["range_noise_snr1_m"]),
            np.nan if p["noise_sigma_m"] is None else float(p["noise_sigma_m"]), float(p["range_resolution_m"]),
            float(p["min_range_m"]), float(p["max_range_m"]), float(p["snr_threshold"]),
            float(p["dropout_probability"]), float(p["intensity_full_scale"]), float(p["intensity_max"]),
            float(p["intensity_exponent"])])
        power, snr, apparent, d_out, inten = (np.empty(n) for _ in range(5))
        det = np.empty(n, dtype=bool)
        pts = np.empty((n, 3))
        if echo is None:
            dist, app_in = hits.distance, np.empty(0)
        else:                                   # as _measure's numpy path makes them
            dist, _, energy = echo
            with np.errstate(invalid="ignore"):
                app_in = np.where(np.isfinite(dist), np.nan_to_num(energy) * dist ** 2, np.nan)
        args = (np.ascontiguousarray(dist, dtype=float), np.ascontiguousarray(hits.direction, dtype=float),
                np.ascontiguousarray(hits.normal, dtype=float), np.ascontiguousarray(hits.object_id, dtype=np.int32),
                self._refl, self._mirror, self._rough, app_in,
                np.ascontiguousarray(np.broadcast_to(bias, (n,)), dtype=float),
                np.ascontiguousarray(self._laser_gain(n_lasers), dtype=float), z, u, zi,
                np.ascontiguousarray(origins, dtype=float), np.ascontiguousarray(dirs, dtype=float),
                np.atleast_1d(np.asarray(self.range_offset_m, dtype=float)).ravel(), c,
                power, snr, apparent, det, d_out, pts, inten)
        self.run_chunks(pencil_chain, n, *args)
        return SignalChain(power, snr, apparent, det, d_out, inten), pts

    def _frame(self, t, hits, origins, dirs, sig, reported, dims, shape, times, yaw, pitch):
        """The dataset of a frame from the signal chain's results (:func:`range_frame`)."""
        p = self.params
        oid = hits.object_id
        start = self.pose_at(t)
        extra = {
            # -2 (atmosphere) reads the "no hit" entry, -1, of the table: annotation 0
            "annotation": annotation_var(dims, self._class[np.maximum(oid, -1)].reshape(shape), self._class_names),
            **sensor_pose_vars(start),
        }
        return range_frame(dims, shape, timestamp=times, yaw=yaw, pitch=pitch, hits=hits, detected=sig.detected,
                           distance_noisy=sig.distance_noisy, points_noisy=reported, intensity=sig.intensity,
                           intensity_long_name=self.intensity_long_name, intensity_valid_max=p["intensity_max"],
                           received_power=sig.received_power,
                           snr=sig.snr, reflectivity=sig.reflectivity, extra=extra)

    def _axis_coords(self):
        return axis_coords()


#: Relative tolerance of an explicit ``azimuth_step_deg`` against the step implied by
#: ``rate_hz`` and the model's firing cycle (0.1 %: the data sheets' steps are rounded to
#: three or four digits, 0.1728 or 0.2 deg).
AZIMUTH_STEP_RTOL = 1e-3


def azimuth_step_deg(rate_hz, firing_cycle_s):
    """Rotor angle turned during one firing cycle [deg]: ``360 rate_hz T_c``.

    Parameters
    ----------
    rate_hz : float
        Rotation rate [Hz].
    firing_cycle_s : float
        Duration of the model's firing cycle, fixed by its electronics [s].
    """
    return 360.0 * float(rate_hz) * float(firing_cycle_s)


def cycles_per_rotation(rate_hz, firing_cycle_s) -> int:
    """Complete firing cycles in one rotation, ``floor(1 / (rate_hz T_c))``."""
    return int(np.floor(1.0 / (float(rate_hz) * float(firing_cycle_s)) + 1e-9))


#: ``firing`` values of the rotating lidars (:func:`firing_fractions`).
FIRING_MODES = ("staggered", "simultaneous")


def firing_fractions(n_lasers, firing, calibrated=None, model=None) -> np.ndarray:
    """Instant of each laser in the firing cycle, as a fraction of the cycle [1], shape (n_lasers,).

    Parameters
    ----------
    n_lasers : int
    firing : {"staggered", "simultaneous"}
        ``"simultaneous"``: every laser at 0 (all beams of a column fire at once, as an Ouster:
        Ouster software user manual, "Lidar Data Format": one measurement block per column,
        one timestamp for all its pixels). ``"staggered"``: ``calibrated`` if given, else
        ``model`` if it has one entry per laser, else ``i / n_lasers`` (evenly spread).
    calibrated : (n_lasers,) float, optional
        The calibration file's ``firing_fraction`` column.
    model : array_like, optional
        The model's data-sheet firing sequence (:attr:`RotatingLidar.fire_fraction`).
    """
    if firing not in FIRING_MODES:
        raise ValueError(f"firing: {firing!r} is not one of {', '.join(repr(f) for f in FIRING_MODES)}")
    if firing == "simultaneous":
        return np.zeros(n_lasers)
    if calibrated is not None:
        return np.asarray(calibrated, dtype=float)
    frac = np.asarray(model if model is not None else (), dtype=float)
    return frac if len(frac) == n_lasers else np.arange(n_lasers) / n_lasers


class RotatingLidar(_PulsedLidar):
    """Velodyne-type spinning lidar: n lasers on a rotor, each firing at its own instant.

    The rotor turns clockwise seen from above (yaw decreasing) at ``rate_hz``. The firing cycle
    ``T_c`` (:attr:`firing_cycle_s`) is fixed by the model's electronics, so the rate sets the
    azimuth step, ``360 rate_hz T_c`` (:func:`azimuth_step_deg`), and a rotation holds
    ``floor(1 / (rate_hz T_c))`` cycles (:func:`cycles_per_rotation`); an explicit
    ``azimuth_step_deg`` must agree with that within :data:`AZIMUTH_STEP_RTOL`. Laser i fires
    at ``fire_fraction[i] * T_c`` into the cycle (``firing = "staggered"``; the calibration
    file's ``firing_fraction`` column overrides the model's sequence; ``"simultaneous"``: all at
    the start of the cycle, :func:`firing_fractions`), from where the sensor is at that instant, in
    the direction the rotor points then (plus its calibrated azimuth offset), from its
    calibrated beam origin (:meth:`sensors.calibration.LaserCalibration.beams`). With
    ``azimuth_stride`` n > 1 only every n-th cycle is simulated (a sparse sweep for previews
    and tests; the timing of the cycles kept is unchanged). The ``step`` dimension counts the
    cycles simulated, the ``laser`` dimension is in laser-ID order.

    Beam footprint (default): every pulse has the data sheet's divergence; pulses at depth
    edges cast ``edge_subrays`` sub-rays of it and report the echo ``return_mode`` picks, so a
    spot straddling a foreground and a background reports one of them (or, in ``dual`` mode,
    both) where a pencil ray would report the surface its axis hits
    (:meth:`_PulsedLidar._cast_beams`). ``return_mode = "dual"`` is Velodyne's dual return: slot
    0 the strongest echo, slot 1 the last, or the second-strongest where the last is the
    strongest; a pulse with one echo reports it in both slots, as the sensor does. Its datasets
    have a trailing ``return`` dimension of 2 on every per-pulse variable (range noise is drawn
    once per pulse, the same in both slots); other modes have none.

    Noise (BlenSor Eq. 2): ``d_noisy = d + b_laser + N(0, noise_sigma_m)`` with
    ``b_laser ~ N(0, bias_sigma_m)`` drawn once per run and fixed across rotations.
    With ``n_subrays`` > 1 every pulse is a divergent Gaussian beam (VANE model,
    :meth:`_PulsedLidar._cast_beams`): the reported range is the echo ``return_mode`` picks from
    the waveform, so spots straddling an edge give mixed pixels in ``average`` mode.
    Detection (BlenSor Eq. 1, continuous form): :func:`sensors.detection.min_detectable_reflectivity`.
    Intensity: :func:`sensors.radiometry.lambertian_return`.
    """

    calibration_key = ""
    #: Duration of one firing cycle [s], fixed by the model (data sheet / user's manual).
    firing_cycle_s: float = 50e-6
    #: Fraction of the firing cycle at which each laser fires (array over lasers).
    fire_fraction: np.ndarray = np.zeros(1)
    PARAMS: dict = {}
    SIZE_PARAMS = {"azimuth_stride": "raise", "n_subrays": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, HDL-64E S2 fitted 79 B): per cast ray
    #: (pulse or sub-ray).
    WORKING_BYTES_PER_RAY = 80.0

    @classmethod
    def check_run(cls, p, *, start_utc, duration_s, rate_hz):
        """An explicit ``azimuth_step_deg`` must be the step ``rate_hz`` implies.

        Raises
        ------
        ValueError
            ``"azimuth_step_deg: ..."`` naming the value, the step implied by ``rate_hz`` and
            the model's firing cycle, and the rate that would give the value asked for.
        """
        step = p.get("azimuth_step_deg")
        if step is None:
            return
        implied = azimuth_step_deg(rate_hz, cls.firing_cycle_s)
        if abs(step - implied) > AZIMUTH_STEP_RTOL * implied:
            raise ValueError(
                f"azimuth_step_deg: {step!r} deg disagrees with the {implied:.6g} deg implied by rate_hz = "
                f"{rate_hz:g} and the {cls.model_name} firing cycle of {cls.firing_cycle_s * 1e6:g} us "
                f"(360 x rate_hz x cycle; tolerance {AZIMUTH_STEP_RTOL:.1%}); leave it out, or set rate_hz = "
                f"{step / (360.0 * cls.firing_cycle_s):.6g} for a {step!r} deg step, or use azimuth_stride "
                f"for a sparser sweep")

    @classmethod
    def check_params(cls, p):
        """A ``calibration_file`` must be readable (ValueError "calibration_file: ..." otherwise)."""
        p = super().check_params(p)
        if p.get("calibration_file") is not None:
            try:
                cal.read_calibration(p["calibration_file"])
            except ValueError as exc:
                raise ValueError(f"calibration_file: {exc}") from None
        return p

    def _step_deg(self) -> float:
        """Azimuth step of one firing cycle at this sensor's rate [deg]."""
        return azimuth_step_deg(self.rate_hz, self.firing_cycle_s)

    def _n_steps(self) -> int:
        """Firing cycles simulated per rotation: every ``azimuth_stride``-th of
        :func:`cycles_per_rotation`."""
        n = cycles_per_rotation(self.rate_hz, self.firing_cycle_s)
        return -(-n // int(self.params["azimuth_stride"]))

    def _n_lasers(self) -> int:
        p = self.params
        if p["calibration_file"] is not None:
            return cal.read_calibration(p["calibration_file"]).n_lasers
        return cal.BUILTIN[self.calibration_key].n_lasers

    def rays_per_frame(self):
        """Pulses x ``n_subrays``; the edge footprint's extra sub-rays (a few % of the pulses in
        street scenes, 1.8 % on the benchmark scene) are not counted."""
        return self._n_steps() * self._n_lasers() * self.params["n_subrays"]

    def frame_layout(self):
        dual = (2,) if self.params["return_mode"] == "dual" else ()
        return range_layout((self._n_steps(), self._n_lasers()) + dual, annotation=True, signal=True)

    def setup_bytes(self):
        # per pulse: time, direction, origin, yaw, pitch, bias, and the sub-rays kept
        return (80 + self._subray_bytes()) * self._n_steps() * self._n_lasers()

    @classmethod
    def _params(cls, **kw):
        p = {"azimuth_step_deg": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                                       maximum=90.0,
                                       doc="rotor angle between firing cycles [deg]; fixed by rate_hz and the "
                                           "model's firing cycle (360 x rate_hz x cycle): give it only to "
                                           "check that"),
             "azimuth_stride": Param("int", default=1, minimum=1,
                                     doc="simulate every n-th firing cycle only (sparse sweep for previews)")}
        p.update(_common_params(**kw))
        p["calibration_file"] = Param("path", default=None,
                                      doc="ros-drivers YAML or CSV calibration replacing the built-in one")
        p["firing"] = Param("str", default="staggered", choices=FIRING_MODES,
                            doc="'staggered': each laser at its own instant of the firing cycle (the calibration "
                                "file's firing_fraction column if it has one, else the model's data-sheet "
                                "sequence, as a Velodyne); 'simultaneous': every laser at the start of the cycle "
                                "(a whole column at once, as an Ouster)")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        self.check_run(p, start_utc=None, duration_s=None, rate_hz=self.rate_hz)
        if p["calibration_file"] is not None:
            self.calib = cal.read_calibration(p["calibration_file"])
        else:
            self.calib = cal.BUILTIN[self.calibration_key]
        n = self.calib.n_lasers
        self._frac = firing_fractions(n, p["firing"], self.calib.fire_fraction, self.fire_fraction)
        self.cycle_s = float(self.firing_cycle_s)
        self.azimuth_step_deg = self._step_deg()
        step = np.radians(self.azimuth_step_deg)
        self.n_steps = self._n_steps()
        cycle = np.arange(self.n_steps) * int(p["azimuth_stride"])
        phase = cycle[:, None] + self._frac[None, :]          # (step, laser)
        self._dt = phase * self.cycle_s
        rotor_yaw = -phase * step
        d, o = self.calib.beams(rotor_yaw)
        self._dirs = d.reshape(-1, 3)
        self._origins = o.reshape(-1, 3)
        self._yaw, self._pitch = yaw_pitch(self._dirs)
        self._bias = np.broadcast_to(self._laser_bias(n), (self.n_steps, n)).ravel()

    def coords(self):
        c = {"laser": Var(("laser",), np.arange(self.calib.n_lasers, dtype=np.int32), "1", "laser id"),
             "laser_elevation": Var(("laser",), self.calib.elevation_rad, "rad",
                                    f"calibrated beam elevation ({self.calib.source})"),
             # The rest of the calibration, so that the dataset reproduces every beam and an
             # exporter (Velodyne pcap + calibration YAML) can write the table the run used.
             "laser_azimuth_offset": Var(("laser",), self.calib.azimuth_offset_rad, "rad",
                                         "calibrated azimuth offset added to the rotor yaw (counter-clockwise; "
                                         "ros-drivers rot_correction)"),
             "laser_vert_offset": Var(("laser",), self.calib.vert_offset_m, "m",
                                      "beam origin offset perpendicular to the beam in its vertical plane "
                                      "(ros-drivers vert_offset_correction)"),
             "laser_horiz_offset": Var(("laser",), self.calib.horiz_offset_m, "m",
                                       "beam origin offset to the beam's left in the horizontal plane "
                                       "(ros-drivers horiz_offset_correction)"),
             "laser_distance_correction": Var(("laser",), self.calib.dist_correction_m, "m",
                                              "range offset the firmware adds to the raw range (ros-drivers "
                                              "dist_correction); distance already includes it"),
             "step": Var(("step",), np.arange(self.n_steps, dtype=np.int32) * int(self.params["azimuth_stride"]),
                         "1", "firing cycle in the rotation")}
        if self.params["return_mode"] == "dual":
            c["return"] = Var(("return",), np.arange(2, dtype=np.int32), "1",
                              "return slot (dual: 0 strongest, 1 last, or second-strongest if the last is the "
                              "strongest)")
        c.update(self._axis_coords())
        return c

    def attrs(self):
        return {"calibration_source": self.calib.source, "firing_cycle_s": self.cycle_s,
                "azimuth_step_deg": self.azimuth_step_deg, "azimuth_stride": int(self.params["azimuth_stride"]),
                "return_mode": self.params["return_mode"]}

    def step(self, k, t):
        times = t + self._dt.ravel()
        shape = (self.n_steps, self.calib.n_lasers)
        hits, origins, dirs, echoes = self._cast_beams(self._dirs, times, self._origins, grid=shape,
                                                       ring_order=np.argsort(self.calib.elevation_rad))
        return self._measure_returns(k, t, hits, origins, dirs, self._bias, ("step", "laser"), shape, times,
                                     self._yaw, self._pitch, echoes)


#: Velodyne defaults shared by the three models (sources in each string).
#: HDL-32E per-laser terms fitted to the real nuScenes HDL-32E sweep (validation/lidar_real.py,
#: nuScenes LIDAR_TOP, mmdetection3d demo): ring-to-ring range offset (neighbour differences /
#: sqrt 2) 0.83 cm, reproduced by a per-laser bias sigma of 0.9 cm; per-ring intensity gain
#: spread 40 %, reproduced by a log-normal gain sigma of 0.45 (22 % came out of 0.25).
_HDL32E_FIT = dict(
    bias_sigma_m=0.009, laser_gain_sigma=0.45,
    gain_source="fit to the nuScenes HDL-32E sweep: per-ring gain spread 40 % (validation/lidar_real.py)",
)

_VELODYNE = dict(
    min_range_m=0.9, min_range_source="ros-drivers/velodyne issue #60: no Velodyne returns below about 0.9 m; "
                                      "VLP-16 manual: 1 m to 100 m",
    range_resolution_m=0.002, resolution_source="distance LSB 2 mm: HDL-64E S2 and VLP-16 manuals, ros-drivers "
                                                "DISTANCE_RESOLUTION",
    full_overlap_m=7.6, overlap_source="biaxial geometry of Hahner et al. 2021 (ICCV, Eq. 11-12 with their "
                                       "parameter set: emitter/receiver 10 cm apart, 1 cm apertures, 2 and 3.5 deg "
                                       "fields of view), about a Velodyne's layout; the data sheets give none",
    bias_sigma_m=0.03, dropout_probability=0.004,
    dropout_source="fit to the nuScenes HDL-32E sweep: 0.475 % isolated misses on its road, 0.30 % within 7 m "
                   "where the SNR is far above threshold, 0.8-0.9 % at 7-20 m; with the SNR drop-outs of the "
                   "simulated road (validation/lidar_real.py)",
    laser_gain_sigma=0.25, gain_source="fit to published Velodyne recordings: per-laser gain spread of intensity 17-33 %",
)


class HDL64E_S2(RotatingLidar):
    """Velodyne HDL-64E S2: BlenSor's elevations, beam offsets of a real unit.

    Calibration: :data:`sensors.calibration.BUILTIN` ``"hdl64e_s2"``, BlenSor's elevations
    with the per-laser beam origins (two blocks 0.19-0.21 m and 0.105-0.124 m above the sensor
    origin) and distance corrections of ros-drivers' ``64e_s2.1-sztaki.yaml``.
    Timing: a 48 us firing cycle in which the upper block (lasers 0-31) and the lower block
    (32-63) fire simultaneously, each block's 32 lasers in sequence (HDL-64E S2 user's manual,
    firing sequence), so laser i fires at (i mod 32) / 32 of the cycle. 48 us is 64 points per
    cycle at the data sheet's 1.33 million points per second, and at 10 Hz it is BlenSor's
    0.1728 deg step: 2083 cycles x 64 lasers = 133,312 rays per rotation; 5 Hz gives 4166
    cycles of 0.0864 deg, 20 Hz 1041 of 0.3456 deg.
    Defaults: 10 Hz, 120 m range, 2 cm range sigma, 10 % reflectivity at 50 m and 80 % at
    120 m (HDL-64E S2 data sheet).
    """

    model_name = "hdl64e_s2"
    calibration_key = "hdl64e_s2"
    default_rate_hz = 10.0
    firing_cycle_s = 48e-6
    fire_fraction = (np.arange(64) % 32) / 32.0
    intensity_long_name = ("reported intensity, Velodyne HDL-64E S2 calibrated intensity byte 0..255 "
                           "(255: white Lambertian target at normal incidence)")
    PARAMS = _footprint_params(RotatingLidar._params(
        max_range_m=120.0, source="HDL-64E S2 data sheet", **_VELODYNE,
        receiver_aperture_m=0.05, aperture_source="assumed from the unit's receiver lens size, no data-sheet value",
        detection_points=((0.10, 50.0), (0.80, 120.0)), detection_source="HDL-64E S2 data sheet",
        range_noise_floor_m=0.006, range_noise_snr1_m=0.05,
        noise_source="fit to published HDL-64E recordings: per-shot sigma ~7 mm median on a road at 7-40 m, "
                     "ring-to-ring offsets 2.5-4 cm",
        intensity_full_scale=255.0, intensity_max=255, intensity_source="HDL-64E S2 manual: intensity byte 0..255"),
        divergence_rad=0.002, source="assumed 2 mrad: the HDL-64E S2 documents give no figure", dual=True)


class HDL32E(RotatingLidar):
    """Velodyne HDL-32E (elevations from ros-drivers 32db.yaml).

    Timing (HDL-32E user's manual): the 32 lasers fire in sequence 1.152 us apart in a 46.08 us
    cycle, so laser i fires at i / 40 of the cycle. A rotation at 10 Hz holds
    floor(1 / (10 Hz x 46.08 us)) = 2170 cycles of 0.165888 deg; at 20 Hz 1085 cycles of
    0.331776 deg (a real unit's motor runs a little off its set rate: the nuScenes sweeps of
    SOURCES.md have 1084 columns, which rate_hz = 20.01 reproduces). 100 m range, 2 cm range
    sigma (data sheet); the detection threshold keeps the HDL-64E values (the HDL-32E data
    sheet gives none).
    """

    model_name = "hdl32e"
    calibration_key = "hdl32e"
    default_rate_hz = 10.0
    firing_cycle_s = 46.08e-6
    fire_fraction = np.arange(32) * 1.152 / 46.08
    intensity_long_name = ("reported intensity, Velodyne calibrated reflectivity byte (0..100 diffuse, "
                           "101..255 retroreflective)")
    PARAMS = _footprint_params(RotatingLidar._params(
        max_range_m=100.0, distance_upper_m=100.0, source="HDL-32E data sheet",
        **{**_VELODYNE, **_HDL32E_FIT}, receiver_aperture_m=0.03,
        aperture_source="assumed from the unit's receiver lens size, no data-sheet value",
        detection_points=((0.10, 50.0), (0.80, 120.0)),
        detection_source="the HDL-64E S2 data sheet's, same laser and receiver generation (the HDL-32E data sheet "
                         "gives 80-100 m without a reflectivity); the nuScenes road agrees: 2.9 % isolated misses on "
                         "its 20-40 m road rings (validation/lidar_real.py) need the 50 % point of an 80 % target "
                         "near 120 m",
        range_noise_floor_m=0.004, range_noise_snr1_m=0.12,
        noise_source="fit to the nuScenes HDL-32E sweep's road (validation/lidar_real.py): per-shot sigma 3.6 mm "
                     "to 15 m, 6 mm at 15-20 m, 17 mm at 20-30 m; simulated 3.7 / 6.1-8.5 / 13-19 mm for 0.10-0.15",
        intensity_full_scale=100.0, intensity_max=255,
        intensity_source="HDL-32E / VLP-16 manuals: 0..100 diffuse, 101..255 retroreflective"),
        divergence_rad=0.003, divergence_v_rad=0.0015,
        source="3.0 x 1.5 mrad, Velodyne's VLP-16 / VLS-128 manuals; assumed the same for the HDL-32E", dual=True)


class VLP16(RotatingLidar):
    """Velodyne VLP-16 (elevations from ros-drivers VLP16db.yaml).

    Timing (VLP-16 user's manual): 16 lasers fire 2.304 us apart in a 55.296 us firing sequence,
    so laser i fires at i / 24 of the cycle; at 10 Hz one sequence is 0.199066 deg and a
    rotation holds floor(1 / (10 Hz x 55.296 us)) = 1808 of them (the data sheet rounds the
    step to 0.2 deg). 100 m range, 3 cm typical accuracy (data sheet).
    """

    model_name = "vlp16"
    calibration_key = "vlp16"
    default_rate_hz = 10.0
    firing_cycle_s = 55.296e-6
    fire_fraction = np.arange(16) * 2.304 / 55.296
    intensity_long_name = HDL32E.intensity_long_name
    PARAMS = _footprint_params(RotatingLidar._params(
        max_range_m=100.0, distance_upper_m=100.0, source="VLP-16 data sheet",
        **_VELODYNE, receiver_aperture_m=0.025,
        aperture_source="assumed from the unit's receiver lens size, no data-sheet value",
        detection_points=((0.80, 100.0),),
        detection_source="VLP-16 data sheet range 100 m, taken as the 80 % target's as for the HDL-64E",
        range_noise_floor_m=0.004, range_noise_snr1_m=0.12,
        noise_source="as the HDL-32E (same generation; the published recordings used for those give no VLP-16 figure); data sheet: +-3 cm "
                     "typical accuracy",
        intensity_full_scale=100.0, intensity_max=255,
        intensity_source="VLP-16 manual: 0..100 diffuse, 101..255 retroreflective"),
        divergence_rad=0.003, divergence_v_rad=0.0015, source="VLP-16 user's manual: 3.0 x 1.5 mrad", dual=True)


def mirror_scan_directions(mirror_yaw_rad, layer_pitch_rad):
    """Beam directions of fixed emitters reflected by a rotating mirror (BlenSor sec. 3.3).

    Parameters
    ----------
    mirror_yaw_rad : (n,) float
        Mirror (scan) angle [rad].
    layer_pitch_rad : (m,) float
        Emitted pitch of each layer [rad].

    Returns
    -------
    ndarray, shape (n, m, 3)
        Unit directions in the sensor frame:
        ``R_z(m) R_x(-m) (cos p, 0, sin p)``.

    Notes
    -----
    A mirror turning about the scan axis rotates the image of the fixed emitter array by the
    mirror angle: at mirror yaw 0 every ray keeps its emitted yaw (0) and pitch p; at 90 deg the
    pitch separation of the layers has turned fully into yaw separation (pitch 0, yaw 90 deg +
    p); in between, a layer at pitch p points at elevation asin(sin p cos m). This is the
    geometric model of the BlenSor paper's Fig. 3.
    """
    m = np.asarray(mirror_yaw_rad, dtype=float)[:, None]
    p = np.asarray(layer_pitch_rad, dtype=float)[None, :]
    # R_x(-m) applied to (cos p, 0, sin p), then R_z(m)
    x0, y0, z0 = np.cos(p), np.sin(p) * np.sin(m), np.sin(p) * np.cos(m)
    cm, sm = np.cos(m), np.sin(m)
    return np.stack([cm * x0 - sm * y0, sm * x0 + cm * y0, np.broadcast_to(z0, (m.shape[0], p.shape[1]))],
                    axis=-1)


class LineLidar(_PulsedLidar):
    """Line scanner: fixed emitters firing at a rotating mirror (Ibeo LUX, SICK LMS).

    The mirror turns once per frame (``rate_hz``); rays fire every ``angular_step_deg`` from
    ``fov_min_deg`` to ``fov_max_deg`` (increasing yaw), all layers of a step at once, each step
    at its own time ``t + (angle - fov_min) / (2 pi rate)``. Directions:
    :func:`mirror_scan_directions`. Noise, detection and intensity as :class:`RotatingLidar`.
    Dims: (``frame``, ``step``, ``layer``), plus a trailing ``return`` of 2 for
    ``return_mode = "dual"`` where a model offers it (:func:`_footprint_params` with ``dual``).
    """

    layers_deg: tuple = (0.0,)
    SIZE_PARAMS = {"angular_step_deg": "raise", "n_subrays": "lower"}
    #: The rotating lidars' measurement chain (benchmarks/calibrate_memory.py: HDL-64E S2
    #: fitted 79 B; the Ibeo LUX's 49 B comes from runs too small to fit well): per cast ray.
    WORKING_BYTES_PER_RAY = 80.0

    def _n_steps(self) -> int:
        """Shots per sweep, ``floor((fov_max_deg - fov_min_deg) / angular_step_deg) + 1``."""
        p = self.params
        return int(np.floor((p["fov_max_deg"] - p["fov_min_deg"]) / p["angular_step_deg"] + 1e-9)) + 1

    def rays_per_frame(self):
        return self._n_steps() * len(self.layers_deg) * self.params["n_subrays"]

    def frame_layout(self):
        dual = (2,) if self.params["return_mode"] == "dual" else ()
        return range_layout((self._n_steps(), len(self.layers_deg)) + dual, annotation=True, signal=True)

    def setup_bytes(self):
        # per pulse: direction, yaw, pitch, time, bias, and the sub-rays kept
        return (56 + self._subray_bytes()) * self._n_steps() * len(self.layers_deg)

    def attrs(self):
        return {"return_mode": self.params["return_mode"]}

    @classmethod
    def _params(cls, *, fov_min_deg, fov_max_deg, angular_step_deg, **kw):
        p = {"fov_min_deg": Param("float", default=fov_min_deg, minimum=-180.0, maximum=180.0,
                                  doc="first scan angle (yaw) [deg]"),
             "fov_max_deg": Param("float", default=fov_max_deg, minimum=-180.0, maximum=180.0,
                                  doc="last scan angle (yaw) [deg]"),
             "angular_step_deg": Param("float", default=angular_step_deg, minimum=0.0, exclusive_minimum=True,
                                       doc="angle between shots [deg]")}
        p.update(_common_params(**kw))
        return p

    @classmethod
    def check_params(cls, p):
        p = super().check_params(p)
        if p["fov_max_deg"] < p["fov_min_deg"]:
            raise ValueError(f"fov_max_deg: must be >= fov_min_deg ({p['fov_min_deg']})")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        n = self._n_steps()
        self.mirror_yaw = np.radians(p["fov_min_deg"] + np.arange(n) * p["angular_step_deg"])
        self.layer_pitch = np.radians(np.asarray(self.layers_deg, dtype=float))
        d = mirror_scan_directions(self.mirror_yaw, self.layer_pitch)
        self._dirs = d.reshape(-1, 3)
        self._yaw, self._pitch = yaw_pitch(self._dirs)
        dt = (self.mirror_yaw - self.mirror_yaw[0]) / (2 * np.pi * self.rate_hz)
        self._dt = np.repeat(dt, len(self.layer_pitch))
        self._bias = np.tile(self._laser_bias(len(self.layer_pitch)), n)

    def coords(self):
        c = {"step": Var(("step",), self.mirror_yaw, "rad", "mirror (scan) angle of the shot"),
             "layer": Var(("layer",), self.layer_pitch, "rad", "emitted pitch of the layer")}
        if self.params["return_mode"] == "dual":
            c["return"] = Var(("return",), np.arange(2, dtype=np.int32), "1",
                              "return slot (dual: 0 strongest, 1 last, or second-strongest if the last is the "
                              "strongest)")
        c.update(self._axis_coords())
        return c

    def step(self, k, t):
        times = t + self._dt
        shape = (len(self.mirror_yaw), len(self.layer_pitch))
        hits, origins, dirs, echoes = self._cast_beams(self._dirs, times, grid=shape,
                                                       ring_order=np.argsort(self.layer_pitch))
        return self._measure_returns(k, t, hits, origins, dirs, self._bias, ("step", "layer"), shape, times,
                                     self._yaw, self._pitch, echoes)


class IbeoLux(LineLidar):
    """Ibeo LUX: 4 layers at -1.6, -0.8, +0.8, +1.6 deg, -50 to +35 deg in 0.25 deg steps, 12.5 Hz.

    Range about 200 m, 10 % reflectivity at 50 m (Ibeo LUX data sheet, as used by BlenSor
    sec. 3.3); the 80 % at 200 m upper threshold is chosen by analogy with the HDL-64E (the data
    sheet gives the range without a reflectivity). Range sigma 4 cm (data sheet: resolution
    4 cm).
    """

    model_name = "ibeo_lux"
    default_rate_hz = 12.5
    layers_deg = (-1.6, -0.8, 0.8, 1.6)
    intensity_long_name = "reported intensity, 8-bit code 0..255 (assumed scale; the LUX reports echo pulse width)"
    PARAMS = LineLidar._params(
        fov_min_deg=-50.0, fov_max_deg=35.0, angular_step_deg=0.25, max_range_m=200.0,
        distance_lower_m=50.0, distance_upper_m=200.0, source="Ibeo LUX data sheet",
        min_range_m=0.3, min_range_source="Ibeo LUX data sheet: 0.3 m", receiver_aperture_m=0.03,
        aperture_source="assumed", detection_points=((0.10, 50.0),), detection_source="Ibeo LUX data sheet",
        range_noise_floor_m=0.01, range_noise_snr1_m=0.05,
        noise_source="assumed; the data sheet's 4 cm is its resolution, modelled by range_resolution_m",
        range_resolution_m=0.04, resolution_source="Ibeo LUX data sheet: 4 cm",
        intensity_source="assumed 8-bit scale")
    PARAMS = _footprint_params(PARAMS, divergence_rad=np.radians(0.08), divergence_v_rad=np.radians(0.8),
                               source="Ibeo LUX data sheet: 0.08 x 0.8 deg")


class SickLMS(LineLidar):
    """SICK LMS 2xx: one layer over 180 deg (-90 to +90), 1 deg steps at 75 Hz.

    80 m range, 10 % reflectivity at 30 m, 10 mm statistical range error (SICK LMS291 data
    sheet); the 80 % at 80 m upper threshold is chosen by analogy with the HDL-64E.
    """

    model_name = "sick_lms"
    default_rate_hz = 75.0
    layers_deg = (0.0,)
    intensity_long_name = "reported intensity, 8-bit remission code 0..255 (assumed scale)"
    PARAMS = LineLidar._params(
        fov_min_deg=-90.0, fov_max_deg=90.0, angular_step_deg=1.0, max_range_m=80.0,
        distance_lower_m=30.0, distance_upper_m=80.0, source="SICK LMS291 data sheet",
        receiver_aperture_m=0.03, aperture_source="assumed", detection_points=((0.10, 30.0),),
        detection_source="SICK LMS291 data sheet", range_noise_floor_m=0.008, range_noise_snr1_m=0.05,
        noise_source="LMS291 data sheet: 10 mm statistical error, floor chosen so a 10 % target at 30 m has "
                     "about that",
        range_resolution_m=0.01, resolution_source="LMS291 data sheet: 10 mm resolution (cm mode)",
        intensity_source="assumed 8-bit scale")
    PARAMS = _footprint_params(PARAMS, divergence_rad=0.012, aperture_radius_m=0.004,
                               source="as sick_lms291: 12 mrad, about a 1 m spot at 80 m")
