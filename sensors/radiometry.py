"""Received-signal models for range sensors."""

from __future__ import annotations

import numpy as np


def oren_nayar_coefficients(roughness_rad):
    """Oren-Nayar's ``A`` and ``B`` of :func:`oren_nayar_backscatter` for a roughness [rad].

    ``A = 1 - 0.5 s^2 / (s^2 + 0.33)``, ``B = 0.45 s^2 / (s^2 + 0.09)``, ``s = roughness_rad``,
    element by element: a model computes them once per surface (its table of roughness per
    object) and gathers them per hit, the same bits as computing them per hit.
    """
    s2 = np.asarray(roughness_rad, dtype=float) ** 2
    return 1.0 - 0.5 * s2 / (s2 + 0.33), 0.45 * s2 / (s2 + 0.09)


def oren_nayar_backscatter(cos_incidence, roughness_rad=0.0, *, coefficients=None):
    """Diffuse backscatter of a rough surface toward a monostatic sensor, in place of cos(i).

    Parameters
    ----------
    cos_incidence : array_like
        Cosine of the angle between the beam and the surface normal, 0..1.
    roughness_rad : array_like
        Oren-Nayar roughness sigma: standard deviation of the facet slope angle [rad]; 0 is a
        Lambertian surface.
    coefficients : tuple of two array_like, optional
        ``(A, B)`` of :func:`oren_nayar_coefficients` of the roughness, computed beforehand (a
        surface's, gathered per hit); ``roughness_rad`` is then not used.

    Returns
    -------
    ndarray
        ``A cos(i) + B sin(i)^2`` with ``A = 1 - 0.5 s^2 / (s^2 + 0.33)``,
        ``B = 0.45 s^2 / (s^2 + 0.09)``, ``s = roughness_rad``; 0 where ``cos(i) <= 0``.
        For ``s = 0`` it is ``cos(i)`` exactly.

    Notes
    -----
    The qualitative model of Oren & Nayar (1994, Eq. 30), radiance
    ``L = rho / pi E0 cos(i) [A + B max(0, cos(phi_r - phi_i)) sin(alpha) tan(beta)]``, in the
    retro-reflection geometry of a lidar (emitter and receiver co-located: ``theta_r =
    theta_i``, ``phi_r = phi_i``, so ``sin(alpha) tan(beta) = sin(i) tan(i)``). The power
    collected from a beam that the surface fills is ``L`` times the beam's cross-section, so the
    Lambertian ``rho cos(i)`` of the lidar equation becomes ``rho (A cos(i) + B sin(i)^2)``.
    A rough surface (asphalt, soil, concrete) sends back much more light at grazing incidence
    than a Lambertian one: at 30 m from a lidar 1.84 m above a road (i = 86.5 deg),
    ``s = 0.2`` returns 3 times the Lambertian power. That is why roads stay visible to a
    Velodyne far beyond what ``rho cos(i)`` predicts, and why their reported reflectivity falls
    with range with a log-log slope near -0.5, not -1 (validation/lidar_real.py fits s = 0.19
    to the nuScenes HDL-32E road). The interreflection term of the full model is neglected
    (a few % at these roughnesses, Oren & Nayar Fig. 11).

    References
    ----------
    - M. Oren and S. K. Nayar, "Generalization of Lambert's reflectance model", SIGGRAPH 1994,
      pp. 239-246.
    """
    cos_i = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    a, b = oren_nayar_coefficients(roughness_rad) if coefficients is None else coefficients
    return np.where(cos_i > 0.0, a * cos_i + b * (1.0 - cos_i * cos_i), 0.0)


def lambertian_return(reflectivity, cos_incidence, distance_m, mirror=0.0, *, roughness_rad=0.0,
                      reference_distance_m=1.0, coefficients=None):
    """Relative received power of a pencil beam from a diffuse (Lambertian or rough) surface.

    Parameters
    ----------
    reflectivity : array_like
        Diffuse reflectance of the surface, 0..1.
    cos_incidence : array_like
        Cosine of the angle between the beam and the surface normal, 0..1.
    distance_m : array_like
        Path length from the sensor to the surface [m].
    mirror : array_like
        Specular fraction of the surface, 0..1; only ``1 - mirror`` of the light is scattered
        diffusely back toward the sensor.
    roughness_rad : array_like
        Oren-Nayar roughness of the surface [rad] (:func:`oren_nayar_backscatter`); 0:
        Lambertian.
    reference_distance_m : float
        Distance at which a normal-incidence white Lambertian target gives 1 [m].
    coefficients : tuple of two array_like, optional
        Oren-Nayar's ``(A, B)`` of the roughness (:func:`oren_nayar_coefficients`), computed
        beforehand; ``roughness_rad`` is then not used.

    Returns
    -------
    ndarray
        ``(1 - mirror) * reflectivity * f(i) * (reference_distance_m / distance_m)**2`` with
        ``f = cos(i)`` for a Lambertian surface (:func:`oren_nayar_backscatter` otherwise);
        NaN where the distance is NaN or not positive (a surface through the sensor's origin
        gives distance 0: no finite return, not an infinite one).

    Notes
    -----
    The lidar (radar) equation for an extended Lambertian target that fills the beam:
    P_r = P_t * rho * cos(theta) * A_r / (pi R^2) * eta (e.g. Jelalian, *Laser Radar Systems*,
    1992, Eq. 2.6; Höfle & Pfeifer 2007, Eq. 4). All factors independent of the target
    (P_t, A_r, eta, 1/pi) are folded into the reference distance, so the value is 1 for a white
    (rho = 1) target at normal incidence at ``reference_distance_m``. Atmospheric attenuation
    is neglected (< 2 % at 100 m in clear air at 905 nm).
    """
    rho = np.asarray(reflectivity, dtype=float)
    f = oren_nayar_backscatter(cos_incidence, roughness_rad, coefficients=coefficients)
    r = np.asarray(distance_m, dtype=float)
    r = np.where(r > 0.0, r, np.nan)
    return (1.0 - np.asarray(mirror, dtype=float)) * rho * f * (reference_distance_m / r) ** 2


def extinction_from_visibility(visibility_m, wavelength_m=905e-9):
    """Aerosol extinction coefficient [1/m] from the meteorological visibility (Koschmieder, Kim).

    Parameters
    ----------
    visibility_m : array_like
        Meteorological visibility (visual range at 550 nm, 2 % contrast) [m], > 0.
    wavelength_m : float
        Wavelength of the lidar [m].

    Returns
    -------
    ndarray
        ``alpha = 3.912 / V * (lambda / 550 nm) ** -q`` [1/m].

    Notes
    -----
    Koschmieder's law gives the extinction at 550 nm from the visibility at 2 % contrast,
    ``alpha_550 = ln(50) / V = 3.912 / V``. The wavelength dependence is the Kim et al. (2001)
    size-distribution exponent: q = 1.6 for V > 50 km, 1.3 for 6 km < V <= 50 km,
    0.16 V[km] + 0.34 for 1 km < V <= 6 km, V[km] - 0.5 for 0.5 km < V <= 1 km, 0 below
    (fog: wavelength-independent). Valid for haze and fog from the visible to about 1.6 um;
    rain and snow scatter differently. Clear air, V = 23 km at 905 nm:
    ``alpha = 3.912 / 23000 * (905 / 550) ** -1.3 = 8.90e-5 / m``, a two-way transmission of
    0.979 at 120 m. Molecular absorption at 905 nm is neglected.

    References
    ----------
    - H. Koschmieder, "Theorie der horizontalen Sichtweite", Beitr. Phys. freien Atm. 12, 1924.
    - I. I. Kim, B. McArthur, E. Korevaar, "Comparison of laser beam propagation at 785 nm and
      1550 nm in fog and haze for optical wireless communications", Proc. SPIE 4214, 2001,
      Eq. (3).
    """
    v = np.asarray(visibility_m, dtype=float)
    v_km = v / 1000.0
    q = np.select([v_km > 50.0, v_km > 6.0, v_km > 1.0, v_km > 0.5],
                  [1.6, 1.3, 0.16 * v_km + 0.34, v_km - 0.5], 0.0)
    return 3.912 / v * (float(wavelength_m) / 550e-9) ** (-q)


def overlap_factor(distance_m, full_overlap_m):
    """Geometric overlap (form) factor of a biaxial lidar, 0..1.

    ``O(R) = min(1, R / R_full) ** 2`` with ``R_full = full_overlap_m``; ``full_overlap_m = 0``
    gives 1 everywhere (no near-range loss).

    Notes
    -----
    Simplest form of the near-range loss of a biaxial transmitter/receiver: the fraction of the
    laser spot imaged onto the detector grows from 0 to 1 at the full-overlap distance
    (Measures, *Laser Remote Sensing*, 1984, sec. 7.2; the quadratic ramp approximates the
    overlap of two equal circles whose separation shrinks as 1/R). Real overlap functions
    depend on the optics' layout; set ``full_overlap_m`` from a measured curve where known.
    """
    r = np.asarray(distance_m, dtype=float)
    if full_overlap_m <= 0.0:
        return np.where(np.isnan(r), np.nan, 1.0)
    return np.minimum(1.0, np.maximum(r, 0.0) / full_overlap_m) ** 2


def lidar_received_power(peak_power_w, reflectivity, cos_incidence, distance_m, mirror=0.0, *,
                         receiver_area_m2, system_efficiency, extinction_per_m=0.0, overlap=1.0):
    """Peak received power [W] of a pulsed lidar from an extended Lambertian target.

    Parameters
    ----------
    peak_power_w : float
        Emitted peak power [W].
    reflectivity : array_like
        Diffuse reflectance of the surface, 0..1 (for an echo of a divergent beam: the apparent
        reflectivity ``sum w_i rho_i cos_i (R / R_i)^2`` with ``cos_incidence = 1``).
    cos_incidence : array_like
        Cosine of the incidence angle, 0..1.
    distance_m : array_like
        Range [m]; NaN (no hit) gives NaN.
    mirror : array_like
        Specular fraction of the surface; ``1 - mirror`` is scattered diffusely.
    receiver_area_m2 : float
        Receiver aperture area [m^2].
    system_efficiency : float
        Product of the transmit and receive optical efficiencies, 0..1.
    extinction_per_m : float
        Atmospheric extinction coefficient [1/m] (:func:`extinction_from_visibility`).
    overlap : array_like
        Geometric overlap factor (:func:`overlap_factor`), 0..1.

    Returns
    -------
    ndarray
        ``P_r = P_t eta (1 - mirror) rho cos(i) A_r / (pi R^2) exp(-2 alpha R) O(R)`` [W].

    Notes
    -----
    The lidar equation for a target larger than the laser spot that scatters as a Lambertian
    surface (radiance rho E cos(i) / pi into the receiver's solid angle A_r / R^2): Jelalian,
    *Laser Radar Systems*, 1992, Eq. 2.6 (extended target); Höfle & Pfeifer 2007, Eq. 4 with
    beam width and target area cancelled. ``T_atm^2 = exp(-2 alpha R)`` is the two-way
    Beer-Lambert transmission. Valid beyond the overlap distance for a beam filled by the
    target; a partly filled beam (edges) is handled by the divergent-beam model, which passes
    the spot-weighted apparent reflectivity. The receiver aperture is assumed small against R
    (far field).

    References
    ----------
    - A. V. Jelalian, *Laser Radar Systems*, Artech House, 1992.
    - B. Höfle, N. Pfeifer, "Correction of laser scanning intensity data: data and model-driven
      approaches", ISPRS J. Photogramm. Remote Sens. 62(6), 2007, Eq. 4.
    """
    rho = np.asarray(reflectivity, dtype=float)
    cos_i = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    r = np.asarray(distance_m, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        geometric = receiver_area_m2 / (np.pi * r ** 2)
    return (float(peak_power_w) * float(system_efficiency) * (1.0 - np.asarray(mirror, dtype=float)) * rho
            * cos_i * geometric * np.exp(-2.0 * float(extinction_per_m) * r) * np.asarray(overlap, dtype=float))


#: Full scale of the HDL-64E S2 focal-distance compensation [m]: Velodyne's formula divides
#: the focal distance in cm by 13100 and the raw distance count (2 mm) by 65535, both about
#: 131 m, the largest distance the 16-bit count holds (HDL-64E S3 manual, 63-HDL64ES3 rev. G,
#: Appendix F "Intensity Compensation vs Distance", as cited in VeloView's
#: ``vtkVelodyneHDLReader.cxx``, which divides the focal distance in metres by 131.0).
FOCAL_FULL_SCALE_M = 131.0


def velodyne_raw_intensity_scale(distance_m, focal_distance_m, *, full_overlap_m, extinction_per_m=0.0):
    """Raw intensity byte of an HDL-64E S2 laser relative to its value at the laser's focal distance.

    Parameters
    ----------
    distance_m : array_like
        Range of the echo [m], NaN where no hit.
    focal_distance_m : array_like
        The laser's calibration ``focal_distance`` [m] (broadcast).
    full_overlap_m : float
        Range of full transmitter/receiver overlap [m] (:func:`overlap_factor`).
    extinction_per_m : array_like
        Atmospheric extinction coefficient [1/m] (two-way transmission ``exp(-2 alpha R)``).

    Returns
    -------
    ndarray
        ``g(R) / g(R_ref)`` with ``g(R) = O(R) exp(-2 alpha R) / R^2`` and
        ``R_ref = max(F, full_overlap_m)``; 1 where ``R_ref`` is 0 (no focal distance and no
        overlap range to refer to), NaN where ``distance_m`` is NaN.

    Notes
    -----
    The HDL-64E S2 reports an uncompensated intensity byte; its host software (Velodyne's
    DSR/VeloView, ros-drivers) adds the per-laser distance compensation
    (:func:`velodyne_focal_compensation`), which is zero at the laser's focal distance. The
    byte follows the received power of the lidar equation (:func:`lidar_received_power`:
    ``1/R^2``, overlap, two-way extinction). Its scale is taken from the one distance the
    calibration names: at its focal distance ("maximum intensity distance", HDL-64E S3 manual,
    table of the db.xml calibration parameters), where the compensation adds nothing, the
    laser's byte equals the calibrated reflectivity code (:func:`reported_intensity`). That
    reference is a modelling choice: no Velodyne document states the raw byte's absolute scale.
    Inside the full-overlap range the overlap's ``R^2`` ramp cancels ``1/R^2``, so the byte is
    flat there and every focal distance inside it gives the same reference.
    """
    r = np.asarray(distance_m, dtype=float)
    r_ref = np.maximum(np.asarray(focal_distance_m, dtype=float), float(full_overlap_m))
    alpha = np.asarray(extinction_per_m, dtype=float)

    def g(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return overlap_factor(x, full_overlap_m) * np.exp(-2.0 * alpha * x) / x ** 2

    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(r_ref > 0.0, g(r) / g(np.where(r_ref > 0.0, r_ref, 1.0)), 1.0)
    return np.where(np.isnan(r), np.nan, scale)


def velodyne_focal_compensation(intensity, raw_distance_m, focal_distance_m, focal_slope, *, min_code=0.0,
                                max_code=255.0, distance_lsb_m=0.002, focal_full_scale_m=FOCAL_FULL_SCALE_M):
    """Intensity of a Velodyne HDL-64E S2 after its per-laser distance compensation.

    Parameters
    ----------
    intensity : array_like
        Raw intensity byte before the compensation, NaN where no hit.
    raw_distance_m : array_like
        Distance the sensor measured, before its per-laser ``dist_correction`` is added [m].
    focal_distance_m, focal_slope : array_like
        The laser's ``focal_distance`` [m] and ``focal_slope`` [1] (broadcast).
    min_code, max_code : array_like
        The laser's ``min_intensity`` and ``max_intensity``: the result is clipped to them.
    distance_lsb_m : float
        Size of one raw distance count [m] (HDL-64E S2 manual: 2 mm).
    focal_full_scale_m : float
        Distance that the focal distance is divided by [m] (:data:`FOCAL_FULL_SCALE_M`).

    Returns
    -------
    ndarray
        ``clip(I + s |f0 - 256 (1 - n / 65535)^2|, min_code, max_code)`` with
        ``f0 = 256 (1 - F / focal_full_scale_m)^2`` and ``n = raw_distance_m / distance_lsb_m``,
        NaN where ``intensity`` is NaN.

    Notes
    -----
    Velodyne's formula (HDL-64E S3 manual rev. G, Appendix F, "Intensity Compensation vs
    Distance"; the HDL-64E S2.1 calibration in ``sensors/data`` carries the same per-laser
    ``focal_distance`` and ``focal_slope``) is
    ``focalOffset = 256 (1 - focalDistance / 13100)^2``,
    ``I += focalSlope |focalOffset - 256 (1 - distance / 65535)^2|`` with ``focalDistance`` in
    cm (the db.xml's unit) and ``distance`` the packet's raw 16-bit count (2 mm on the HDL-64E)
    before ``dist_correction``: both terms are fractions of about 131 m, and the compensation is
    zero at the focal distance and grows on either side. Here the focal distance is in m and
    is divided by 131 m, as VeloView does (``vtkVelodyneHDLReader.cxx``,
    ``focalDistance / 131.0``).

    ros-drivers/velodyne (``velodyne_pointcloud/src/lib/rawdata.cc``, ``RawData::unpack``)
    uses the same expression with the raw count before ``dist_correction``, then clips to the
    laser's ``min_intensity`` and ``max_intensity``, which is what this function does; but its
    ``gen_calibration.py`` converts ``focalDistance_`` from cm to m and the driver still divides
    by 13100, so its focal offset is about 256 for every laser (ros-drivers/velodyne issue
    #499, open): ``focal_full_scale_m = 13100`` reproduces the driver. VeloView instead
    rescales the byte by ``(I - min) / (max - min) 255`` before adding the compensation and
    clips the sum to 1..255. The result is not rounded: ros-drivers reports it as a float.
    """
    i = np.asarray(intensity, dtype=float)
    n = np.asarray(raw_distance_m, dtype=float) / distance_lsb_m
    f0 = 256.0 * (1.0 - np.asarray(focal_distance_m, dtype=float) / focal_full_scale_m) ** 2
    added = np.asarray(focal_slope, dtype=float) * np.abs(f0 - 256.0 * (1.0 - n / 65535.0) ** 2)
    return np.clip(i + added, min_code, max_code)


def reported_intensity(apparent_reflectivity, snr, gain, rng, *, full_scale, max_code, exponent=1.0, deviates=None):
    """Intensity as a sensor reports it: range-compensated, per-laser gain, noisy, integer.

    Parameters
    ----------
    apparent_reflectivity : array_like
        ``rho cos(i) (1 - mirror)``: received power with range, atmosphere and the system
        constants divided out (what a perfect range calibration gives), NaN where no hit.
    snr : array_like
        Signal-to-noise ratio of the return (noise of the intensity estimate: sigma = signal / snr).
    gain : array_like
        Per-laser gain (broadcast), 1 = nominal.
    rng : numpy.random.Generator
        One normal deviate is drawn per element (None with ``deviates``).
    full_scale : float
        Code reported for a white (rho = 1) Lambertian target at normal incidence.
    max_code : int
        Largest code (255 for a byte).
    exponent : float
        Response exponent gamma: code = gain * full_scale * rho_app ** gamma.
    deviates : array_like, optional
        The standard normal deviates ``z``, one per element, drawn beforehand (the draw from
        ``rng`` made elsewhere); None: drawn from ``rng``.

    Returns
    -------
    ndarray
        ``round(clip(gain * full_scale * max(rho_app (1 + z / snr), 0) ** gamma, 0, max_code))``
        as float, NaN where no hit.

    Notes
    -----
    Velodyne sensors report a calibrated reflectivity byte: the raw peak is range-compensated
    and corrected per laser by the factory's intensity calibration (HDL-64E S2 manual, "Dual Two
    Point Calibration", intensity byte 0..255; HDL-32E and VLP-16 manuals: 0..100 diffuse
    reflectors, 101..255 retroreflectors), linear in reflectivity (``exponent`` 1, the
    default). Incidence is not compensated. The HDL-64E S2's range compensation is done by its
    host software from per-laser calibration fields instead; ``hdl64e_s2`` with
    ``intensity_compensation`` models that path (:func:`velodyne_raw_intensity_scale`,
    :func:`velodyne_focal_compensation`). Reported intensity on a uniform road falls with
    range with a log-log slope of -0.2 to -0.7 in published figures for real Velodyne recordings where a
    Lambertian road (cos(i) = h / R) would give -1: roads are rough, and a rough surface's
    backscatter falls more slowly than cos(i) toward grazing incidence
    (:func:`oren_nayar_backscatter`; the nuScenes road is fitted with a roughness of 11 deg).
    ``exponent`` < 1 compresses the response (a non-linear intensity scale); on a target at
    fixed incidence the code is flat in range either way. The intensity noise follows the
    return's SNR: the peak estimate
    has the receiver's noise, ``sigma / signal = 1 / SNR``. The reported value is quantised to
    integers and clipped to the byte.
    """
    rho = np.asarray(apparent_reflectivity, dtype=float)
    s = np.asarray(snr, dtype=float)
    z = rng.standard_normal(rho.shape) if deviates is None else np.asarray(deviates, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        noisy = np.maximum(rho * (1.0 + np.where(s > 0, z / s, 0.0)), 0.0)
    code = np.asarray(gain, dtype=float) * full_scale * noisy ** float(exponent)
    return np.where(np.isnan(rho), np.nan, np.round(np.clip(code, 0.0, float(max_code))))
