"""Weather: extinction of fog, rain and snow, and the backscatter echo of fog.

Plain functions over numpy arrays; :class:`Weather` holds the scenario's ``[weather]`` table and
gives every optical model its extinction coefficient. What is modelled (and what is not) is
listed in the README section "Weather".

References
----------
- H. Koschmieder, "Theorie der horizontalen Sichtweite", Beitr. Phys. freien Atm. 12, 1924.
- I. I. Kim, B. McArthur, E. Korevaar, "Comparison of laser beam propagation at 785 nm and
  1550 nm in fog and haze for optical wireless communications", Proc. SPIE 4214, 2001.
- J. S. Marshall and W. McK. Palmer, "The distribution of raindrops with size", J. Meteor. 5,
  1948, 165-166.
- K. L. S. Gunn and J. S. Marshall, "The distribution with size of aggregate snowflakes",
  J. Meteor. 15, 1958, 452-461.
- M. Hahner, C. Sakaridis, D. Dai, L. Van Gool, "Fog Simulation on Real LiDAR Point Clouds for
  3D Object Detection in Adverse Weather", ICCV 2021 (soft-target impulse response, Eq. 7-10).
- R. H. Rasshofer, M. Spies, H. Spies, "Influences of weather phenomena on automotive laser radar
  systems", Adv. Radio Sci. 9, 2011, 49-60 (fog backscatter-to-extinction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hifi.constants import SPEED_OF_LIGHT_M_S

from .radiometry import extinction_from_visibility

#: Marshall-Palmer (1948): N(D) = N0 exp(-Lambda D), N0 = 8000 m^-3 mm^-1, Lambda = 4.1 R^-0.21
#: mm^-1 (R in mm/h). In SI: N0 = 8.0e6 m^-4, Lambda = 4100 R^-0.21 m^-1.
MP_N0_PER_M4 = 8.0e6
MP_LAMBDA_PER_M = 4100.0
MP_LAMBDA_EXPONENT = -0.21
#: Gunn-Marshall (1958) for aggregate snowflakes, melted diameters, S the water-equivalent rate
#: in mm/h: N0 = 3800 S^-0.87 m^-3 mm^-1 = 3.8e6 S^-0.87 m^-4, Lambda = 2.55 S^-0.48 mm^-1.
GM_N0_PER_M4 = 3.8e6
GM_N0_EXPONENT = -0.87
GM_LAMBDA_PER_M = 2550.0
GM_LAMBDA_EXPONENT = -0.48
#: Backscatter-to-extinction ratio of fog at near-infrared wavelengths [1/sr]: Hahner et al.
#: (2021) take beta = 0.046 / MOR with alpha = 3.0 / MOR (Rasshofer et al. 2011), i.e.
#: beta / alpha = 0.046 / ln(20) = 0.0154 sr^-1, the value of a fog of water droplets of a few
#: micrometres (phase function at 180 deg ~ 0.12, single-scattering albedo 1).
FOG_LIDAR_RATIO_PER_SR = 0.046 / np.log(20.0)


def exponential_dsd_extinction(n0_per_m4, lambda_per_m):
    """Extinction of an exponential size distribution of large spheres [1/m].

    ``alpha = int Q_ext pi D^2 / 4 N0 exp(-Lambda D) dD = pi N0 / Lambda^3`` with the
    geometric-optics extinction efficiency ``Q_ext = 2`` (drops of 0.1-5 mm are 100-5000 times
    the wavelength: the extinction paradox, van de Hulst 1957, sec. 8.22).
    """
    return np.pi * np.asarray(n0_per_m4, dtype=float) / np.asarray(lambda_per_m, dtype=float) ** 3


def rain_extinction(rate_mm_h):
    """Optical extinction of rain [1/m] from the rain rate [mm/h], Marshall-Palmer drops.

    Returns ``pi N0 / Lambda^3 = 3.65e-4 R^0.63`` [1/m] (:func:`exponential_dsd_extinction`):
    0.37 /km at 1 mm/h, 2.8 /km at 25 mm/h. Independent of wavelength from the visible to
    1.6 um (geometric optics). The same law, 0.365 R^0.63 /km, is the classic optical rain
    extinction (Atlas 1953, J. Meteor. 10, 486-488). Zero rate: 0.
    """
    r = np.asarray(rate_mm_h, dtype=float)
    lam = MP_LAMBDA_PER_M * np.where(r > 0, r, 1.0) ** MP_LAMBDA_EXPONENT
    return np.where(r > 0, exponential_dsd_extinction(MP_N0_PER_M4, lam), 0.0)


def snow_extinction(rate_mm_h):
    """Optical extinction of snowfall [1/m] from the water-equivalent rate [mm/h], Gunn-Marshall.

    Returns ``pi N0 / Lambda^3 = 7.2e-4 S^0.57`` [1/m] over the *melted* diameters of
    Gunn & Marshall's distribution. A flake's cross-section is larger than its melted drop's,
    so this is a lower bound: 0.72 /km at 1 mm/h is a 5.4 km visibility, where observed
    visibilities in 1 mm/h snow are 1-2 km. Zero rate: 0.
    """
    s = np.asarray(rate_mm_h, dtype=float)
    pos = np.where(s > 0, s, 1.0)
    n0 = GM_N0_PER_M4 * pos ** GM_N0_EXPONENT
    lam = GM_LAMBDA_PER_M * pos ** GM_LAMBDA_EXPONENT
    return np.where(s > 0, exponential_dsd_extinction(n0, lam), 0.0)


def _fog_terms(range_m, *, extinction_per_m, backscatter_per_m_sr, pulse_fwhm_s, full_overlap_m, blind_m,
               overlap=None, n_steps=64, hard_target_m=np.inf):
    """The terms of :func:`fog_backscatter_waveform`'s integral: ``(f, step)`` where
    ``f[i, j]`` is the trapezoid-weighted integrand at range ``range_m[i]`` and pulse time
    ``t_j = 2 tau_H j / n_steps`` (times ``c dt / 2``), whose sum over ``j`` is the waveform,
    and ``step`` = ``c dt / 2`` [m] is how far the fog's range ``R' = R - c t / 2`` moves per
    time step."""
    from .radiometry import overlap_factor

    r = np.asarray(range_m, dtype=float)
    tau_h = float(pulse_fwhm_s)
    t = np.linspace(0.0, 2.0 * tau_h, int(n_steps) + 1)
    shape = np.sin(np.pi * t / (2.0 * tau_h)) ** 2
    rp = r[:, None] - SPEED_OF_LIGHT_M_S * t[None, :] / 2.0
    ok = (rp >= float(blind_m)) & (rp <= float(hard_target_m))
    rs = np.where(ok, rp, 1.0)
    o = overlap(rs) if overlap is not None else overlap_factor(rs, float(full_overlap_m))
    h = np.where(ok, o * backscatter_per_m_sr * np.exp(-2.0 * extinction_per_m * rs) / rs ** 2, 0.0)
    dt = t[1] - t[0]
    weight = np.full(t.size, dt * SPEED_OF_LIGHT_M_S / 2.0)
    weight[[0, -1]] *= 0.5                                            # trapezoid rule
    return shape[None, :] * h * weight[None, :], SPEED_OF_LIGHT_M_S * dt / 2.0


def fog_backscatter_waveform(range_m, *, extinction_per_m, backscatter_per_m_sr, pulse_fwhm_s,
                             full_overlap_m, blind_m, overlap=None, n_steps=64, hard_target_m=np.inf):
    """Received power of the fog's own echo (soft target) over range, per watt emitted and unit
    receiver area and efficiency [1/m^2].

    Parameters
    ----------
    range_m : (n,) float
        Ranges at which the waveform is evaluated [m], increasing: ``R = c t_rx / 2`` with
        ``t_rx`` counted from the start of the emitted pulse (the pulse's peak comes
        ``c tau_H / 2`` later; see :func:`fog_echo_table` for the reported range).
    extinction_per_m, backscatter_per_m_sr : float
        Fog extinction alpha [1/m] and backscatter coefficient beta [1/(m sr)].
    pulse_fwhm_s : float
        Half-power width tau_H of the emitted pulse [s].
    full_overlap_m : float
        Full-overlap range of the transmitter and receiver [m]; the overlap is the lidar's own
        :func:`sensors.radiometry.overlap_factor`, so the fog sees the optics the hard targets see.
    blind_m : float
        Fog nearer than this contributes nothing [m] (> 0; see Notes).
    overlap : callable, optional
        Another overlap function of range (0..1) in place of the quadratic one, e.g. Hahner et
        al.'s linear ramp between R_1 and R_2 (``validation/weather.py``).
    n_steps : int
        Trapezoid steps over the pulse's ``2 tau_H``.
    hard_target_m : float
        Range of the hard target that ends the fog [m]: fog beyond it contributes nothing
        (Hahner et al.'s Heaviside step ``H(R_0 - R')``); infinite by default.

    Returns
    -------
    ndarray
        ``P(R) = (c / 2) int_0^{2 tau_H} sin^2(pi t / (2 tau_H)) O(R') beta exp(-2 alpha R') /
        R'^2 dt``, ``R' = R - c t / 2 >= blind_m``: the soft-target impulse response of Hahner
        et al. (2021, Eq. 7-10) convolved with their sin^2 pulse, integrated by the trapezoid
        rule on ``n_steps`` steps of the pulse.

    Notes
    -----
    Multiplied by ``P_t eta A_r`` this is a power in the units of
    :func:`sensors.radiometry.lidar_received_power` (where a Lambertian target of reflectivity
    rho gives ``P_t eta A_r rho / (pi R^2)``). With the quadratic overlap ``(R / R_full)^2``,
    ``O(R) / R^2`` is flat up to ``R_full``, so the waveform has a plateau from a pulse length
    to ``R_full`` and falls as 1/R^2 beyond: the overlap, not the fog, sets how strong the
    near-range clutter is (Hahner et al. note that a co-axial sensor, full overlap at 0, is the
    most affected). Without an overlap model (``full_overlap_m`` = 0) the 1/R^2 would diverge
    at the sensor, so ``blind_m`` (the receiver's blind zone, ``min_range_m``) bounds it.
    """
    f, _ = _fog_terms(range_m, extinction_per_m=extinction_per_m, backscatter_per_m_sr=backscatter_per_m_sr,
                      pulse_fwhm_s=pulse_fwhm_s, full_overlap_m=full_overlap_m, blind_m=blind_m,
                      overlap=overlap, n_steps=n_steps, hard_target_m=hard_target_m)
    return f.sum(axis=1)


class FogEcho(NamedTuple):
    """The top of the fog's echo in front of a hard target, tabulated over the target's range
    (:func:`fog_echo_table`). A pulse whose target lies beyond ``target_m[-1]`` (or that hits
    nothing) sees the last row, the echo of unoccluded fog."""

    target_m: np.ndarray      #: hard-target ranges of the rows, increasing [m]
    r_lo_m: np.ndarray        #: nearest reported range of the echo's top [m] (NaN: no echo)
    r_hi_m: np.ndarray        #: farthest reported range of the echo's top [m]
    height: np.ndarray        #: the echo's peak [1/m^2], as :func:`fog_backscatter_waveform`

    def at(self, distance_m):
        """``(r_lo, r_hi, height)`` per pulse for targets at ``distance_m`` (NaN: no target):
        the row of the nearest tabulated target range at or below it."""
        d = np.asarray(distance_m, dtype=float)
        i = np.searchsorted(self.target_m, np.where(np.isnan(d), np.inf, d), side="right") - 1
        none = i < 0
        i = np.maximum(i, 0)
        return (np.where(none, np.nan, self.r_lo_m[i]), np.where(none, np.nan, self.r_hi_m[i]),
                np.where(none, 0.0, self.height[i]))


def fog_echo_table(*, extinction_per_m, backscatter_per_m_sr, pulse_fwhm_s, full_overlap_m, blind_m,
                   max_range_m=30.0, noise=0.0, overlap=None, n_steps=64, step_m=0.01,
                   target_step_m=0.05) -> FogEcho:
    """The fog's echo in front of a hard target at each range (Hahner et al. 2021, Eq. 7-10 with
    their Heaviside step ``H(R_0 - R')``: no fog behind the target).

    The waveform (:func:`fog_backscatter_waveform`) is evaluated on a ``step_m`` grid from
    ``blind_m`` to ``max_range_m``, keeping for a target at ``R_0`` only the fog nearer than
    ``R_0`` and only the part of the waveform received before the target's echo begins
    (``R <= R_0``, as Hahner et al.'s lookup tables do). ``height`` is its maximum; ``r_lo ..
    r_hi`` the ranges where it lies within ``noise`` (the receiver's r.m.s. noise in the same
    units) of that maximum: the peak of a flat-topped echo plus noise falls anywhere there.

    Ranges are reported as the sensor reports a hard target's: from the peak of the emitted
    pulse, ``R - c tau_H / 2`` (Hahner et al.'s "shifted" tables), so a hard target at ``R_0``
    reads ``R_0``. Targets are tabulated every ``target_step_m`` up to ``max_range_m``; the last
    row is the unoccluded fog's echo.
    """
    r = np.arange(float(blind_m), float(max_range_m), float(step_m))
    f, step = _fog_terms(r, extinction_per_m=extinction_per_m, backscatter_per_m_sr=backscatter_per_m_sr,
                         pulse_fwhm_s=pulse_fwhm_s, full_overlap_m=full_overlap_m, blind_m=blind_m,
                         overlap=overlap, n_steps=n_steps)
    # R' = R - j step falls with j, so the fog nearer than R_0 is a suffix of the time steps:
    # j >= ceil((R - R_0) / step). suffix[i, j] = sum of f[i, j:].
    n_t = f.shape[1]
    suffix = np.zeros((r.size, n_t + 1))
    suffix[:, :n_t] = np.cumsum(f[:, ::-1], axis=1)[:, ::-1]
    targets = np.append(np.arange(float(blind_m) + float(target_step_m), float(max_range_m), float(target_step_m)),
                        r[-1])
    j0 = np.clip(np.ceil((r[None, :] - targets[:, None]) / step - 1e-9), 0, n_t).astype(np.intp)
    w = np.take_along_axis(np.broadcast_to(suffix, (targets.size,) + suffix.shape), j0[:, :, None], axis=2)[..., 0]
    w = np.where(r[None, :] <= targets[:, None] + 1e-9, w, -np.inf)
    height = w.max(axis=1)
    top = w >= height[:, None] - float(noise)
    shift = SPEED_OF_LIGHT_M_S * float(pulse_fwhm_s) / 2.0
    lo = r[np.argmax(top, axis=1)] - shift
    hi = r[r.size - 1 - np.argmax(top[:, ::-1], axis=1)] - shift
    none = ~(height > 0.0)
    return FogEcho(targets, np.where(none, np.nan, lo), np.where(none, np.nan, hi), np.where(none, 0.0, height))


def fog_echo_peak(*, extinction_per_m, backscatter_per_m_sr, pulse_fwhm_s, full_overlap_m, blind_m,
                  max_range_m=30.0, noise=0.0):
    """The top of the unoccluded fog's echo: ``(r_lo, r_hi, height)``, the last row of
    :func:`fog_echo_table` (reported ranges, from the emitted pulse's peak)."""
    t = fog_echo_table(extinction_per_m=extinction_per_m, backscatter_per_m_sr=backscatter_per_m_sr,
                       pulse_fwhm_s=pulse_fwhm_s, full_overlap_m=full_overlap_m, blind_m=blind_m,
                       max_range_m=max_range_m, noise=noise, target_step_m=max_range_m)
    return float(t.r_lo_m[-1]), float(t.r_hi_m[-1]), float(t.height[-1])


@dataclass(frozen=True)
class Weather:
    """The scenario's ``[weather]``: fog visibility [m] (None: clear air), rain and snowfall
    rates [mm/h, water equivalent]."""

    fog_visibility_m: float | None = None
    rain_rate_mm_h: float = 0.0
    snowfall_rate_mm_h: float = 0.0

    @property
    def clear(self) -> bool:
        return self.fog_visibility_m is None and self.rain_rate_mm_h == 0 and self.snowfall_rate_mm_h == 0

    def fog_extinction(self, wavelength_m: float) -> float:
        """Fog extinction at ``wavelength_m`` [1/m]: Koschmieder 3.912 / V with Kim et al.'s
        wavelength exponent (:func:`sensors.radiometry.extinction_from_visibility`); 0 without fog."""
        if self.fog_visibility_m is None:
            return 0.0
        return float(extinction_from_visibility(self.fog_visibility_m, wavelength_m))

    def precipitation_extinction(self) -> float:
        """Rain plus snow extinction [1/m] (:func:`rain_extinction`, :func:`snow_extinction`)."""
        return float(rain_extinction(self.rain_rate_mm_h) + snow_extinction(self.snowfall_rate_mm_h))

    def extinction(self, wavelength_m: float, clear_air_per_m: float) -> float:
        """Total extinction [1/m]: the model's clear-air extinction without fog, or the fog's
        (which includes the haze), plus rain and snow."""
        fog = self.fog_extinction(wavelength_m)
        return (fog if self.fog_visibility_m is not None else float(clear_air_per_m)) + self.precipitation_extinction()

    def fog_backscatter(self, wavelength_m: float) -> float:
        """Fog backscatter coefficient beta [1/(m sr)]: :data:`FOG_LIDAR_RATIO_PER_SR` times the
        fog extinction; 0 without fog."""
        return FOG_LIDAR_RATIO_PER_SR * self.fog_extinction(wavelength_m)


CLEAR = Weather()


def weather_of(ctx) -> Weather:
    """The :class:`Weather` of a run context (its ``weather`` table; clear air without one)."""
    table = getattr(ctx, "weather", None)
    return Weather(**table) if table else CLEAR


#: Backscatter of a rain drop as the reflectivity of an equivalent Lambertian target of the
#: drop's cross-section: a large sphere's back-reflection from its front surface has the radar
#: cross-section R pi a^2 (R the Fresnel reflectance at normal incidence; Skolnik, Radar
#: Handbook, 3rd ed., sec. 14.3), R = ((n - 1) / (n + 1))^2 = 0.020 for water (n = 1.33 at
#: 905 nm), i.e. R / (4 pi) per steradian, which a Lambertian disc (rho / pi per steradian)
#: matches with rho = R / 4 = 0.005. The glory and the internal reflections are left out (a
#: lower bound).
RAIN_DROP_EQUIVALENT_RHO = ((1.33 - 1.0) / (1.33 + 1.0)) ** 2 / 4.0
#: Snowflakes: Lambertian discs of fresh snow's near-infrared reflectance, 0.9 at 905 nm
#: (Warren, "Optical properties of snow", Rev. Geophys. 20, 1982, Fig. 8: fine-grained snow's
#: albedo about 0.9 near 0.9 um), of their melted diameter (Gunn-Marshall; a lower bound of a
#: flake's cross-section).
SNOWFLAKE_RHO = 0.9
#: Quantile beyond which particle sizes are not drawn: exp(-Lambda D) = 1e-6.
PARTICLE_SIZE_TAIL = 1e-6


class Precipitation(NamedTuple):
    """One kind of falling particle: exponential size distribution and its echo."""

    kind: str                  #: "rain" or "snow"
    n0_per_m4: float           #: intercept N0 of N(D) = N0 exp(-Lambda D) [m^-4]
    lambda_per_m: float        #: slope Lambda [1/m]
    rho_equivalent: float      #: equivalent Lambertian reflectivity of a particle's cross-section


def precipitation(weather: "Weather") -> list:
    """The :class:`Precipitation` kinds of ``weather`` (Marshall-Palmer rain, Gunn-Marshall snow)."""
    out = []
    if weather.rain_rate_mm_h > 0:
        r = weather.rain_rate_mm_h
        out.append(Precipitation("rain", MP_N0_PER_M4, MP_LAMBDA_PER_M * r ** MP_LAMBDA_EXPONENT,
                                 RAIN_DROP_EQUIVALENT_RHO))
    if weather.snowfall_rate_mm_h > 0:
        s = weather.snowfall_rate_mm_h
        out.append(Precipitation("snow", GM_N0_PER_M4 * s ** GM_N0_EXPONENT, GM_LAMBDA_PER_M * s ** GM_LAMBDA_EXPONENT,
                                 SNOWFLAKE_RHO))
    return out


def beam_radius(range_m, *, aperture_radius_m, half_divergence_rad):
    """Beam radius at a range [m]: the aperture radius plus range times the half divergence."""
    return aperture_radius_m + np.asarray(range_m, dtype=float) * half_divergence_rad


def intercepted_fraction(diameter_m, range_m, *, aperture_radius_m, half_divergence_rad):
    """Share of the pulse a particle of diameter D at range r takes: min(1, (D / 2)^2 / w(r)^2)
    (a top-hat beam of radius w, :func:`beam_radius`)."""
    w = beam_radius(range_m, aperture_radius_m=aperture_radius_m, half_divergence_rad=half_divergence_rad)
    return np.minimum(1.0, (0.5 * np.asarray(diameter_m, dtype=float)) ** 2 / w ** 2)


class ParticleWindow(NamedTuple):
    """Where a lidar can see particles of one kind (:func:`particle_window`); empty if none."""

    d_min_m: float        #: smallest diameter detectable anywhere [m]
    r_lo_m: float         #: nearest range at which the largest drawn particle is detectable [m]
    r_hi_m: float         #: farthest such range [m]


def particle_window(p: Precipitation, *, power_per_rho_fn, min_power_w, aperture_radius_m, half_divergence_rad,
                    r_min_m, r_max_m, step_m=0.05):
    """The sizes and ranges worth drawing: those whose echo can reach ``min_power_w``.

    ``power_per_rho_fn(r)`` is the received power [W] of a unit equivalent reflectivity at range
    ``r`` (overlap and extinction included). A particle of diameter D at r returns
    ``rho_eq f(D, r) power_per_rho_fn(r)`` (:func:`intercepted_fraction`); the diameter needed
    there is ``D(r) = 2 w(r) sqrt(rho_needed / rho_eq)``. Particles smaller than the minimum of
    D(r), or outside the ranges where the largest drawn size (the :data:`PARTICLE_SIZE_TAIL`
    quantile) suffices, never echo and are not drawn. Returns None if there is no such range.
    """
    r = np.arange(float(r_min_m), float(r_max_m), step_m)
    if r.size == 0:
        return None
    with np.errstate(divide="ignore"):
        rho_need = float(min_power_w) / power_per_rho_fn(r)
    w = beam_radius(r, aperture_radius_m=aperture_radius_m, half_divergence_rad=half_divergence_rad)
    with np.errstate(invalid="ignore"):
        d_req = np.where(rho_need <= p.rho_equivalent, 2.0 * w * np.sqrt(rho_need / p.rho_equivalent), np.inf)
    d_cap = -np.log(PARTICLE_SIZE_TAIL) / p.lambda_per_m
    ok = np.flatnonzero(d_req <= d_cap)
    if ok.size == 0:
        return None
    return ParticleWindow(float(np.min(d_req[ok])), float(r[ok[0]]), float(min(r[ok[-1]] + step_m, r_max_m)))


class Particles(NamedTuple):
    """Particles drawn in the beams of one frame (flat arrays over all pulses' particles)."""

    pulse: np.ndarray          #: index of the pulse each particle is in
    range_m: np.ndarray        #: range of the particle along the beam [m]
    rho_apparent: np.ndarray   #: equivalent reflectivity of its echo, rho_eq * intercepted fraction
    u_detect: np.ndarray       #: uniform draw for its detection


def sample_particles(rng, n_pulses: int, p: Precipitation, window: ParticleWindow, *, aperture_radius_m,
                     half_divergence_rad) -> Particles:
    """Particles of one kind in every pulse's beam between ``window.r_lo_m`` and ``r_hi_m``.

    Notes
    -----
    Particle centres form a Poisson process of density ``N0 / Lambda exp(-Lambda D_min)`` (the
    particles at least ``D_min`` across) inside the beam's cone, radius ``w(r)`` (:func:`beam_radius`):
    ``n ~ Poisson(N pi int w(r)^2 dr)`` per pulse, ranges with density ``~ w(r)^2`` (inverse
    CDF of ``(w0 + k r)^3``), diameters ``D_min + Exp(Lambda)`` (the exponential is memoryless).
    Draw order: counts, ranges, diameters, detection draws, each one array for the frame, so
    the particles of a pulse depend on the seed and frame only.
    """
    w0, k = float(aperture_radius_m), float(half_divergence_rad)
    lo, hi = window.r_lo_m, window.r_hi_m
    density = p.n0_per_m4 / p.lambda_per_m * np.exp(-p.lambda_per_m * window.d_min_m)
    if k > 0:
        c_lo, c_hi = (w0 + k * lo) ** 3, (w0 + k * hi) ** 3
        volume = np.pi * (c_hi - c_lo) / (3.0 * k)
    else:
        volume = np.pi * w0 ** 2 * (hi - lo)
    counts = rng.poisson(density * volume, n_pulses)
    total = int(counts.sum())
    pulse = np.repeat(np.arange(n_pulses), counts)
    u = rng.random(total)
    r = ((c_lo + u * (c_hi - c_lo)) ** (1.0 / 3.0) - w0) / k if k > 0 else lo + u * (hi - lo)
    diameter = window.d_min_m + rng.exponential(1.0 / p.lambda_per_m, total)
    rho = p.rho_equivalent * intercepted_fraction(diameter, r, aperture_radius_m=w0, half_divergence_rad=k)
    return Particles(pulse, r, rho, rng.random(total))
