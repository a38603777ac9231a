"""The radar's receiver and signal processing: radar equation with thermal noise, the
range-Doppler-channel cube, CA-CFAR, angle estimation over the virtual array and the detection
list.

Units of the cube: every cell is normalised to the thermal noise of one cell, so ``|X|^2`` is
a signal-to-noise ratio and noise alone is CN(0, 1). A scatterer of received power ``P`` [W]
gives ``|X|^2 = P T_obs / (k T0 F) L_w`` at its cell, with ``T_obs = N_c N_s / f_s`` the
coherent integration time (the cell's noise bandwidth is ``1 / T_obs``), ``F`` the noise
figure and ``L_w`` the windows' processing loss (Richards, *Fundamentals of Radar Signal
Processing*, 2nd ed., 2014, Eqs. 2.17, 5.15 and sec. 5.2.2).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.special import betaincinv, gammaincc
from scipy.stats import gamma as gamma_dist

from hifi.constants import BOLTZMANN_J_K, NOISE_REFERENCE_TEMPERATURE_K

from .waveform import RadarConfig, pattern_gain, window, window_coefficients

#: Half-width of the window's spectral kernel spread around a scatterer's fractional bin in
#: fast mode [bins]: beyond 6 bins a Hann window's sidelobes are below -55 dB (Harris 1978,
#: Fig. 15), below the thermal noise of any scatterer this model produces short of saturation.
KERNEL_HALF_BINS = 6

#: Points of the trapezoidal integral over the smaller training mean in :func:`caso_alpha`
#: (2001 up to its 1 - 1e-13 quantile: Weiss's closed form reproduced to 1e-4 relative in Pfa).
CASO_QUADRATURE_POINTS = 2001

#: Sub-bin grid on which scatterers of one direction are summed before their spectra are
#: spread (1/8 bin): the phase slope error across the kernel is at most pi/8 x 6 bins / N.
GROUP_SUBBINS = 8


def noise_power_w(cfg: RadarConfig) -> float:
    """Thermal noise power of one range-Doppler cell [W]: ``k T0 F / T_obs`` (kTBF with
    ``B = 1 / T_obs``)."""
    return BOLTZMANN_J_K * NOISE_REFERENCE_TEMPERATURE_K * cfg.noise_figure / cfg.observation_time_s


def antenna_gain(cfg: RadarConfig, direction_sensor, *, transmit: bool):
    """Element gain toward unit directions (n, 3) in the sensor frame [1]: the data sheet's peak
    gain times :func:`pattern_gain` in azimuth and elevation."""
    d = np.asarray(direction_sensor, dtype=float)
    az = np.arctan2(d[:, 1], d[:, 0])
    el = np.arcsin(np.clip(d[:, 2], -1.0, 1.0))
    g0 = cfg.tx_gain if transmit else cfg.rx_gain
    return g0 * pattern_gain(az, cfg.azimuth_beamwidth_rad) * pattern_gain(el, cfg.elevation_beamwidth_rad)


def received_power_w(cfg: RadarConfig, rcs_m2, gain_tx, gain_rx, out_m, back_m, extra_loss=1.0):
    """Radar equation [W]: ``P_t G_t G_r lambda^2 sigma / ((4 pi)^3 R_out^2 R_back^2 L)``
    (Skolnik, *Introduction to Radar Systems*, 3rd ed., 2001, Eq. 2.9, with the two one-way
    spreadings of a multipath echo kept apart)."""
    lam = cfg.wavelength_m
    return (cfg.tx_power_w * gain_tx * gain_rx * lam * lam * np.asarray(rcs_m2)
            / ((4.0 * np.pi) ** 3 * out_m ** 2 * back_m ** 2 * cfg.system_loss * extra_loss))


def snr_scale(cfg: RadarConfig) -> float:
    """``T_obs / (k T0 F)`` [1/W]: a cell's SNR per watt received, before the windows."""
    return 1.0 / noise_power_w(cfg)


def window_kernel(name: str, n: int, delta_bins):
    """DTFT of the length-``n`` window at ``delta_bins`` from a tone [1], complex, normalised by
    ``sqrt(n sum w^2)`` so that noise of unit variance per sample stays unit variance per bin
    and ``|kernel(0)|^2`` is the window's processing loss.

    ``sum_m w_m exp(-2 pi j m delta / n) = a0 D(delta) - a1 / 2 (D(delta - 1) + D(delta + 1))``
    with ``D(x) = exp(-j pi x (n - 1) / n) sin(pi x) / sin(pi x / n)``, the Dirichlet kernel, for
    the cosine windows ``w = a0 - a1 cos(2 pi m / n)`` (Harris, Proc. IEEE 66(1), 1978, sec. IV).
    """
    x = np.asarray(delta_bins, dtype=float)
    a0, a1 = window_coefficients(name)

    def dirichlet(y):
        return np.exp(-1j * np.pi * y * (n - 1) / n) * n * np.sinc(y) / np.sinc(y / n)

    k = a0 * dirichlet(x) - 0.5 * a1 * (dirichlet(x - 1.0) + dirichlet(x + 1.0))
    w = window(name, n)
    return k / np.sqrt(n * np.sum(w * w))


class Scatterers(NamedTuple):
    """Echo contributions summed per sub-bin cell and direction (:func:`group`), g of them."""

    amplitude: np.ndarray        # (g,) complex: sqrt(SNR before windows), phase of the sum
    range_bin: np.ndarray        # (g,) fractional range bin
    doppler_bin: np.ndarray      # (g,) fractional Doppler bin, centred (0: zero velocity)
    arrival_sensor: np.ndarray   # (g, 3) unit direction of arrival, sensor frame
    object_id: np.ndarray        # (g,) int32, dominant contribution's
    ghost: np.ndarray            # (g,) bool, dominant contribution's
    range_m: np.ndarray          # (g,) dominant contribution's true range (half path) [m]
    radial_velocity_m_s: np.ndarray   # (g,) dominant contribution's true radial velocity [m/s]


def group(amplitude, range_bin, doppler_bin, arrival_sensor, object_id, ghost, range_m, velocity_m_s,
          direction_step_rad) -> Scatterers:
    """Sum contributions coherently on a 1/:data:`GROUP_SUBBINS` range x Doppler grid and a
    ``direction_step_rad`` grid of arrival directions; keep the strongest member's truth."""
    amp = np.asarray(amplitude, dtype=complex)
    if amp.size == 0:
        z = np.zeros(0)
        return Scatterers(z.astype(complex), z, z, np.zeros((0, 3)), z.astype(np.int32), z.astype(bool), z, z)
    u = np.asarray(arrival_sensor, dtype=float)
    az = np.arctan2(u[:, 1], u[:, 0])
    el = np.arcsin(np.clip(u[:, 2], -1.0, 1.0))
    keys = np.stack([np.round(range_bin * GROUP_SUBBINS), np.round(doppler_bin * GROUP_SUBBINS),
                     np.round(az / direction_step_rad), np.round(el / direction_step_rad)], axis=1).astype(np.int64)
    order = np.argsort(-np.abs(amp), kind="stable")          # strongest first: np.unique keeps it
    uk, first, inv = np.unique(keys[order], axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    g = uk.shape[0]
    a = amp[order]
    total = np.bincount(inv, a.real, g) + 1j * np.bincount(inv, a.imag, g)
    w = np.abs(a) ** 2
    wsum = np.maximum(np.bincount(inv, w, g), np.finfo(float).tiny)
    rb = np.bincount(inv, w * range_bin[order], g) / wsum
    db = np.bincount(inv, w * doppler_bin[order], g) / wsum
    dirs = np.stack([np.bincount(inv, w * u[order, j], g) for j in range(3)], axis=1)
    dirs /= np.maximum(np.linalg.norm(dirs, axis=1, keepdims=True), np.finfo(float).tiny)
    top = order[first]
    return Scatterers(total, rb, db, dirs, np.asarray(object_id)[top].astype(np.int32), np.asarray(ghost)[top],
                      np.asarray(range_m)[top], np.asarray(velocity_m_s)[top])


def steering(cfg: RadarConfig, direction_sensor) -> np.ndarray:
    """Phase of each virtual channel for plane waves from unit directions (n, 3), sensor frame:
    ``exp(j k (y_v u_y + z_v u_z))``, (n, n_virtual)."""
    pos = cfg.virtual_positions_m
    u = np.asarray(direction_sensor, dtype=float)
    k = 2.0 * np.pi / cfg.wavelength_m
    return np.exp(1j * k * (u[:, 1:2] * pos[None, :, 0] + u[:, 2:3] * pos[None, :, 1]))


def cube_fast(cfg: RadarConfig, sc: Scatterers, rng) -> np.ndarray:
    """Range x Doppler x channel cube, (n_virtual, N_s, N_c) complex, noise CN(0, 1) per cell:
    each scatterer spread over +-:data:`KERNEL_HALF_BINS` bins by :func:`window_kernel`
    (range not cyclic, Doppler cyclic as the FFT is)."""
    nr, nd, nv = cfg.adc_samples, cfg.chirps_per_frame, cfg.n_virtual
    cube = (rng.standard_normal((nv, nr, nd)) + 1j * rng.standard_normal((nv, nr, nd))) * np.sqrt(0.5)
    if sc.amplitude.size == 0:
        return cube
    kh = KERNEL_HALF_BINS
    off = np.arange(-kh + 1, kh + 1)
    m0 = np.floor(sc.range_bin).astype(np.int64)
    m = m0[:, None] + off[None, :]                                 # (g, 2 kh)
    kr = window_kernel(cfg.window, nr, m - sc.range_bin[:, None])
    kr[(m < 0) | (m >= nr)] = 0.0
    mc = np.clip(m, 0, nr - 1)
    dd = sc.doppler_bin + nd / 2.0                                 # stored index: zero velocity at nd / 2
    n0 = np.floor(dd).astype(np.int64)
    nn = n0[:, None] + off[None, :]
    kd = window_kernel(cfg.window, nd, nn - dd[:, None])
    nn = np.mod(nn, nd)
    patch = sc.amplitude[:, None, None] * kr[:, :, None] * kd[:, None, :]     # (g, 2kh, 2kh)
    flat = (mc[:, :, None] * nd + nn[:, None, :]).ravel()
    g = sc.amplitude.size
    # cube[c] = sum_g steering[g, c] x patch_g placed at its cells: one sparse (cells x g) product
    spread = csr_matrix((patch.ravel(), (flat, np.repeat(np.arange(g), (2 * kh) ** 2))), shape=(nr * nd, g))
    cube += np.asarray(spread @ steering(cfg, sc.arrival_sensor)).T.reshape(nv, nr, nd)
    return cube


def cube_research(cfg: RadarConfig, sc: Scatterers, rng) -> np.ndarray:
    """The same cube from synthesised beat signals: each scatterer a complex tone over fast
    time (its range) and slow time (its Doppler) on every virtual channel, thermal noise per
    ADC sample, the windows, then the range and Doppler FFTs (Rao 2017; Richards 2014,
    sec. 4.6). Costs O(n_virtual N_s N_c g) where fast mode costs O(n_virtual g)."""
    nr, nd, nv = cfg.adc_samples, cfg.chirps_per_frame, cfg.n_virtual
    wr, wd = window(cfg.window, nr), window(cfg.window, nd)
    norm = 1.0 / np.sqrt(nr * np.sum(wr * wr) * nd * np.sum(wd * wd))
    sig_sigma = 1.0 / np.sqrt(np.sum(wr * wr) * np.sum(wd * wd))
    fast = np.exp(2j * np.pi * np.outer(sc.range_bin, np.arange(nr)) / nr)         # (g, nr)
    slow = np.exp(2j * np.pi * np.outer(sc.doppler_bin, np.arange(nd)) / nd)       # (g, nd)
    st = steering(cfg, sc.arrival_sensor)
    cube = np.empty((nv, nr, nd), dtype=complex)
    for c in range(nv):
        x = (fast * (sc.amplitude * st[:, c] * norm)[:, None]).T @ slow              # (nr, nd)
        noise = (rng.standard_normal((nr, nd)) + 1j * rng.standard_normal((nr, nd))) * np.sqrt(0.5) * sig_sigma
        x = (x + noise) * wr[:, None] * wd[None, :]
        spec = np.fft.fft(np.fft.fft(x, axis=0), axis=1)
        cube[c] = np.fft.fftshift(spec, axes=1)
    return cube


def cfar_alpha(pfa: float, n_train, n_channels: int):
    """CA-CFAR threshold factor on the mean of ``n_train`` cells, for cells that are the mean
    of ``|X|^2`` over ``n_channels`` noise-only channels (Gamma(C) distributed).

    With X the cell's sum and T the training cells' sum, ``X / (X + T)`` is Beta(C, n C), so
    ``Pfa = 1 - I_t(C, n C)`` at ``t = (alpha / n) / (1 + alpha / n)``; for C = 1 this is the
    classic ``alpha = n (Pfa^(-1/n) - 1)`` (Richards 2014, Eq. 7.28).
    """
    n = np.asarray(n_train, dtype=float)
    t = betaincinv(float(n_channels), n * n_channels, 1.0 - pfa)
    return n * t / (1.0 - t)


def caso_alpha(pfa: float, n_left: int, n_right: int, n_channels: int) -> float:
    """CASO-CFAR threshold factor on the smaller of the left and right training means [1], for
    cells that are the mean of ``|X|^2`` over ``n_channels`` noise-only channels.

    ``Pfa(alpha) = int P(X > alpha C z) f_Z(z) dz`` with X ~ Gamma(C) the cell's sum and Z the
    smaller of two independent Gamma(n C) / (n C) means (the order statistic's density
    ``f_L (1 - F_R) + f_R (1 - F_L)``), solved for alpha; for C = 1 and equal sides this is Weiss's
    closed form (M. Weiss, IEEE Trans. Aerosp. Electron. Syst. 18(1), 102-114, 1982, Eq. 17).
    A side with no cells leaves cell averaging on the other (:func:`cfar_alpha`).
    """
    if n_left == 0 or n_right == 0:
        return float(cfar_alpha(pfa, max(n_left, n_right, 1), n_channels))
    return _caso_alpha(float(pfa), int(min(n_left, n_right)), int(max(n_left, n_right)), int(n_channels))


@functools.lru_cache(maxsize=256)
def _caso_alpha(pfa, n_left, n_right, n_channels):
    c = float(n_channels)
    lft = gamma_dist(n_left * c, scale=1.0 / (n_left * c))
    rgt = gamma_dist(n_right * c, scale=1.0 / (n_right * c))
    hi = float(min(lft.ppf(1.0 - 1e-13), rgt.ppf(1.0 - 1e-13)))
    z = np.linspace(0.0, hi, CASO_QUADRATURE_POINTS)
    fz = lft.pdf(z) * rgt.sf(z) + rgt.pdf(z) * lft.sf(z)
    log_alpha = np.linspace(np.log(1e-2), np.log(1e5), 400)
    pf = np.trapezoid(gammaincc(c, np.exp(log_alpha)[:, None] * c * z[None, :]) * fz[None, :], z, axis=1)
    pf = np.maximum(pf, np.finfo(float).tiny)
    # log Pfa falls monotonically with log alpha: interpolate the design rate's alpha
    return float(np.exp(np.interp(-np.log(pfa), -np.log(pf), log_alpha)))


def ca_cfar(power, pfa: float, n_train: int, n_guard: int, n_channels: int, mode: str = "ca") -> np.ndarray:
    """CFAR along range (axis 0) of a (N_s, N_c) power map: a cell is a detection when it
    exceeds alpha times the noise estimate from ``n_train`` cells on each side beyond
    ``n_guard`` guard cells (fewer at the map's ends, each count with its own alpha).

    ``mode`` ``"ca"``: the mean of both sides (:func:`cfar_alpha`); ``"caso"``: the smaller of
    the two sides' means (:func:`caso_alpha`), which a strong target in one side's window does
    not raise (TI mmWave SDK ``cfarCfg`` averaging mode 2; Richards 2014, sec. 7.4.1); where the
    map's end cuts a window, the cells left are averaged (CA) with their own alpha.
    """
    p = np.asarray(power, dtype=float)
    nr = p.shape[0]
    cs = np.concatenate([np.zeros((1,) + p.shape[1:]), np.cumsum(p, axis=0)], axis=0)
    i = np.arange(nr)

    def window_sum(lo, hi):                      # sum of rows lo..hi-1, clipped; count
        lo, hi = np.clip(lo, 0, nr), np.clip(hi, 0, nr)
        return cs[hi] - cs[lo], np.maximum(hi - lo, 0)

    ls, ln = window_sum(i - n_guard - n_train, i - n_guard)
    rs, rn = window_sum(i + n_guard + 1, i + n_guard + 1 + n_train)
    if mode == "caso":
        lm = ls / np.maximum(ln, 1)[:, None]
        rm = rs / np.maximum(rn, 1)[:, None]
        full = (ln == n_train) & (rn == n_train)
        count = ln + rn
        est = np.where(full[:, None], np.minimum(lm, rm), (ls + rs) / np.maximum(count, 1)[:, None])
        alpha = np.where(full, caso_alpha(pfa, n_train, n_train, n_channels),
                         cfar_alpha(pfa, np.maximum(count, 1), n_channels))
    else:
        count = ln + rn
        est = (ls + rs) / np.maximum(count, 1)[:, None]
        alpha = cfar_alpha(pfa, np.maximum(count, 1), n_channels)
    return (p > alpha[:, None] * est) & ((ln + rn) > 0)[:, None]


def local_peaks(power) -> np.ndarray:
    """Cells not below any of their 8 neighbours (range not cyclic, Doppler cyclic)."""
    p = np.asarray(power, dtype=float)
    padded = np.pad(p, ((1, 1), (0, 0)), constant_values=-np.inf)
    ok = np.ones(p.shape, dtype=bool)
    for dm in (-1, 0, 1):
        for dn in (-1, 0, 1):
            if dm == 0 and dn == 0:
                continue
            ok &= p >= np.roll(padded, -dn, axis=1)[1 + dm:1 + dm + p.shape[0]]
    return ok


def parabolic_offset(y_minus, y0, y_plus):
    """Vertex offset [bins] and height of the parabola through three equally spaced samples."""
    den = y_minus - 2.0 * y0 + y_plus
    off = np.where(den < 0.0, 0.5 * (y_minus - y_plus) / np.where(den < 0.0, den, -1.0), 0.0)
    off = np.clip(off, -0.5, 0.5)
    return off, y0 - 0.25 * (y_minus - y_plus) * off


def angle_grid(cfg: RadarConfig):
    """Beamforming grid: azimuth over the field at 1/16 of the array's resolution; elevation
    likewise where the array has a vertical extent (else 0 only). Returns directions (m, 3),
    azimuths and elevations (m,) [rad]."""
    step = cfg.azimuth_resolution_rad / 16.0
    half = cfg.fov_azimuth_rad / 2.0
    az = np.arange(-half, half + 0.5 * step, step)
    if cfg.has_elevation:
        eh = cfg.fov_elevation_rad / 2.0
        el = np.arange(-eh, eh + 0.5 * step, step)
    else:
        el = np.zeros(1)
    a, e = (g.ravel() for g in np.meshgrid(az, el, indexing="ij"))
    return np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=1), a, e


def fold_velocity(v_m_s, lo: float, hi: float):
    """Velocities folded into ``[lo, hi)`` [m/s] (period ``hi - lo``)."""
    return lo + np.mod(np.asarray(v_m_s, dtype=float) - lo, hi - lo)


def rain_specific_attenuation_db_km(frequency_hz: float, rain_rate_mm_h: float, polarization: str = "h") -> float:
    """Specific attenuation of rain [dB/km]: ``gamma = k R^alpha`` with k and alpha from
    Recommendation ITU-R P.838-3 (2005), Eqs. 2-3 and Tables 1-4 (the fits in log f, f in GHz,
    valid 1-1000 GHz); ``polarization`` ``"h"`` or ``"v"``."""
    x = np.log10(frequency_hz / 1e9)
    if polarization == "h":
        ka, kb, kc, km, kcc = ([-5.33980, -0.35351, -0.23789, -0.94158], [-0.10008, 1.26970, 0.86036, 0.64552],
                               [1.13098, 0.45400, 0.15354, 0.16817], -0.18961, 0.71147)
        aa, ab, ac, am, acc = ([-0.14318, 0.29591, 0.32177, -5.37610, 16.1721],
                               [1.82442, 0.77564, 0.63773, -0.96230, -3.29980],
                               [-0.55187, 0.19822, 0.13164, 1.47828, 3.43990], 0.67849, -1.95537)
    else:
        ka, kb, kc, km, kcc = ([-3.80595, -3.44965, -0.39902, 0.50167], [0.56934, -0.22911, 0.73042, 1.07319],
                               [0.81061, 0.51059, 0.11899, 0.27195], -0.16398, 0.63297)
        aa, ab, ac, am, acc = ([-0.07771, 0.56727, -0.20238, -48.2991, 48.5833],
                               [2.33840, 0.95545, 1.14520, 0.791669, 0.791459],
                               [-0.76284, 0.54039, 0.26809, 0.116226, 0.116479], -0.053739, 0.83433)
    logk = sum(a * np.exp(-((x - b) / c) ** 2) for a, b, c in zip(ka, kb, kc)) + km * x + kcc
    alpha = sum(a * np.exp(-((x - b) / c) ** 2) for a, b, c in zip(aa, ab, ac)) + am * x + acc
    return float(10.0 ** logk * rain_rate_mm_h ** alpha) if rain_rate_mm_h > 0 else 0.0
