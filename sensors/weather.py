"""Weather: extinction of fog, rain and snow, and the backscatter echo of fog.

Plain functions over numpy arrays; :class:`Weather` holds the scenario's ``[weather]`` table and
gives every optical model its extinction coefficient. What is modelled (and what is not) is
listed in the README section "Weather".

References
----------
H. Koschmieder, "Theorie der horizontalen Sichtweite", Beitr. Phys. freien Atm. 12, 1924.
I. I. Kim, B. McArthur, E. Korevaar, "Comparison of laser beam propagation at 785 nm and
1550 nm in fog and haze for optical wireless communications", Proc. SPIE 4214, 2001.
J. S. Marshall and W. McK. Palmer, "The distribution of raindrops with size", J. Meteor. 5,
1948, 165-166.
K. L. S. Gunn and J. S. Marshall, "The distribution with size of aggregate snowflakes",
J. Meteor. 15, 1958, 452-461.
M. Hahner, C. Sakaridis, D. Dai, L. Van Gool, "Fog Simulation on Real LiDAR Point Clouds for
3D Object Detection in Adverse Weather", ICCV 2021 (soft-target impulse response, Eq. 7-10).
R. H. Rasshofer, M. Spies, H. Spies, "Influences of weather phenomena on automotive laser radar
systems", Adv. Radio Sci. 9, 2011, 49-60 (fog backscatter-to-extinction).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def fog_backscatter_waveform(range_m, *, extinction_per_m, backscatter_per_m_sr, pulse_fwhm_s,
                             full_overlap_m, blind_m):
    """Received power of the fog's own echo (soft target) over range, per watt emitted and unit
    receiver area and efficiency [1/m^2].

    Parameters
    ----------
    range_m : (n,) float
        Ranges at which the waveform is evaluated [m], increasing.
    extinction_per_m, backscatter_per_m_sr : float
        Fog extinction alpha [1/m] and backscatter coefficient beta [1/(m sr)].
    pulse_fwhm_s : float
        Half-power width tau_H of the emitted pulse [s].
    full_overlap_m : float
        Full-overlap range of the transmitter and receiver [m]; the overlap is the lidar's own
        :func:`sensors.radiometry.overlap_factor`, so the fog sees the optics the hard targets see.
    blind_m : float
        Fog nearer than this contributes nothing [m] (> 0; see Notes).

    Returns
    -------
    ndarray
        ``P(R) = (c / 2) int_0^{2 tau_H} sin^2(pi t / (2 tau_H)) O(R') beta exp(-2 alpha R') /
        R'^2 dt``, ``R' = R - c t / 2 >= blind_m``: the soft-target impulse response of Hahner
        et al. (2021, Eq. 7-10) convolved with their sin^2 pulse, integrated by the trapezoid
        rule on 64 steps of the pulse.

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
    from .radiometry import overlap_factor

    r = np.asarray(range_m, dtype=float)
    tau_h = float(pulse_fwhm_s)
    t = np.linspace(0.0, 2.0 * tau_h, 65)
    shape = np.sin(np.pi * t / (2.0 * tau_h)) ** 2
    rp = r[:, None] - SPEED_OF_LIGHT_M_S * t[None, :] / 2.0
    ok = rp >= float(blind_m)
    rs = np.where(ok, rp, 1.0)
    h = np.where(ok, overlap_factor(rs, float(full_overlap_m)) * backscatter_per_m_sr
                 * np.exp(-2.0 * extinction_per_m * rs) / rs ** 2, 0.0)
    dt = t[1] - t[0]
    f = shape[None, :] * h
    return (f.sum(axis=1) - 0.5 * (f[:, 0] + f[:, -1])) * dt * SPEED_OF_LIGHT_M_S / 2.0   # trapezoid rule


def fog_echo_peak(*, extinction_per_m, backscatter_per_m_sr, pulse_fwhm_s, full_overlap_m, blind_m,
                  max_range_m=30.0, noise=0.0):
    """The top of the fog's echo (:func:`fog_backscatter_waveform`): ``(r_lo, r_hi, height)``.

    Evaluated on a 1 cm grid from ``blind_m`` to ``max_range_m``. ``height`` [1/m^2] is the
    waveform's maximum; ``r_lo .. r_hi`` [m] the ranges where it lies within ``noise`` (the
    receiver's r.m.s. noise in the same units) of that maximum: the peak of a flat-topped
    echo plus receiver noise falls anywhere there, so that is where a receiver reports the
    fog (with ``noise`` = 0, the first maximum only).
    """
    r = np.arange(float(blind_m), float(max_range_m), 0.01)
    w = fog_backscatter_waveform(r, extinction_per_m=extinction_per_m, backscatter_per_m_sr=backscatter_per_m_sr,
                                 pulse_fwhm_s=pulse_fwhm_s, full_overlap_m=full_overlap_m, blind_m=blind_m)
    i = int(np.argmax(w))
    top = np.flatnonzero(w >= w[i] - float(noise))
    return float(r[top[0]]), float(r[top[-1]]), float(w[i])


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
