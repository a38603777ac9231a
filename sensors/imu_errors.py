"""The error model of the strapdown IMU (:class:`sensors.imu.IMU`): the Allan-variance terms, the
bias processes and white noise, and the deterministic error chain of a triad; plain functions
and a class over arrays, without a scene. Their names are importable from :mod:`sensors.imu` too.

Errors (per axis, six axes: gyro x y z, accelerometer x y z)
------------------------------------------------------------
``measured = sat(quant(M true + b_turn_on + b_gm(t) + b_rw(t) + n(t)))`` with ``M = I + S + A``
(scale factors on the diagonal, small-angle misalignment / cross-coupling off it; Groves eq.
4.16-4.17), a constant turn-on bias, a first-order Gauss-Markov bias (the bias instability), a
bias random walk and white noise, discretised as the Kalibr IMU noise model documents (white:
``sigma / sqrt(dt)``; random walk: ``sigma sqrt(dt)``) and the Gauss-Markov process exactly
(:func:`gauss_markov_sigma`, :class:`ImuErrorProcess`). Saturation clips at the range (and flags
it), quantisation rounds to the resolution.

Randomness and partitions
-------------------------
The bias processes run over the whole time line, yet a frame must not depend on which frames a
process computed before it (MPI time partition, :mod:`mpi.runner`). :class:`ImuErrorProcess`
therefore cuts the time line into blocks of :data:`BLOCK_FRAMES` frames. The bias values at the
block boundaries form an exact coarse chain (one draw per block boundary, stream keyed by the
block); inside a block the process is filled in with the exact conditional law given both
boundary values (a Gauss-Markov / Brownian bridge, built by "conditioning by kriging": simulate,
then correct linearly toward the drawn end value). Every rank computes the same chain and the
same blocks, so any frame's value is the same bytes whoever computes it, and the process has
exactly the law of the sequential recursion.
"""

from __future__ import annotations

import numpy as np

from hifi.api.rng import stream

__all__ = [
    "FLICKER_ALLAN_FLOOR", "GAUSS_MARKOV_ALLAN_PEAK", "GAUSS_MARKOV_ALLAN_PEAK_TAU", "BLOCK_FRAMES",
    "gauss_markov_sigma", "allan_deviation", "avar_white", "avar_gauss_markov", "avar_random_walk",
    "ImuErrorProcess", "apply_sensor_errors",
]

#: Allan deviation of a flicker (1/f) bias floor per unit bias-instability coefficient B:
#: sqrt(2 ln 2 / pi) = 0.6643 (IEEE Std 952-1997, Annex C, bias instability; El-Sheimy, Hou & Niu, IEEE Trans.
#: Instrum. Meas. 57(1), 2008, table of Allan-variance terms).
FLICKER_ALLAN_FLOOR = float(np.sqrt(2.0 * np.log(2.0) / np.pi))

#: Peak of the Allan deviation of a first-order Gauss-Markov process per unit of its standard
#: deviation, max over tau of sqrt(avar_gauss_markov(1, T, tau)) = 0.61736 (at tau = 1.8926 T),
#: from the closed form of :func:`avar_gauss_markov` (tests/sensors/test_imu.py finds it numerically).
GAUSS_MARKOV_ALLAN_PEAK = 0.6173642831444414

#: tau / T at that peak.
GAUSS_MARKOV_ALLAN_PEAK_TAU = 1.8926178073412692

#: Frames per block of the bias processes (see the module docstring). A modelling constant:
#: changing it changes the random draws (not their law).
BLOCK_FRAMES = 1024

#: Below this tau / T the Gauss-Markov Allan variance uses its series (the closed form cancels).
_GM_SERIES_BELOW = 1e-2


# ------------------------------------------------------------------------------------------------
# Allan variance: estimator and the model terms (IEEE Std 952-1997, Annex C)
# ------------------------------------------------------------------------------------------------
def allan_deviation(rate, dt_s: float, taus_s) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping Allan deviation of a rate signal, per column.

    Parameters
    ----------
    rate : (n,) or (n, c) float
        Samples of a rate (rad/s, m/s^2, ...) at interval ``dt_s``.
    dt_s : float
        Sample interval [s].
    taus_s : array_like
        Averaging times [s]; each is rounded to a whole number m of samples, 1 <= m < n / 2
        (others are dropped; duplicates after rounding are kept once).

    Returns
    -------
    taus : (t,) float
        The averaging times used, ``m dt`` [s].
    adev : (t,) or (t, c) float
        Allan deviation, units of ``rate``.

    Notes
    -----
    With the integral ``x_i = dt sum_{j<i} y_j`` (``x_0 = 0``, n + 1 values) and ``tau = m dt``,
    ``sigma^2(tau) = sum_i (x_{i+2m} - 2 x_{i+m} + x_i)^2 / (2 tau^2 (n + 1 - 2m))`` (IEEE Std
    952-1997, Annex C, written with overlapping clusters; Riley, Handbook of Frequency Stability Analysis,
    NIST SP 1065, 2008, overlapping Allan variance).
    tests/sensors/test_imu.py checks it against ``allantools.oadev``.
    """
    y = np.asarray(rate, dtype=float)
    one = y.ndim == 1
    y2 = y[:, None] if one else y
    n = y2.shape[0]
    x = np.concatenate([np.zeros((1, y2.shape[1])), np.cumsum(y2, axis=0) * dt_s])
    m_all = np.unique(np.rint(np.asarray(taus_s, dtype=float) / dt_s).astype(np.int64))
    m_all = m_all[(m_all >= 1) & (2 * m_all < n)]
    out = np.empty((m_all.size, y2.shape[1]))
    for j, m in enumerate(m_all):           # a few dozen averaging times, each vectorised over n
        d = x[2 * m:] - 2.0 * x[m:-m] + x[:-2 * m]
        tau = m * dt_s
        out[j] = np.sqrt(np.einsum("ij,ij->j", d, d) / (2.0 * tau * tau * d.shape[0]))
    return m_all * dt_s, out[:, 0] if one else out


def avar_white(density, tau_s):
    """Allan variance of white rate noise of density N: ``N^2 / tau`` (IEEE 952 Annex C)."""
    return np.asarray(density, dtype=float) ** 2 / np.asarray(tau_s, dtype=float)


def avar_random_walk(density, tau_s):
    """Allan variance of a rate random walk of density K: ``K^2 tau / 3`` (IEEE 952 Annex C)."""
    return np.asarray(density, dtype=float) ** 2 * np.asarray(tau_s, dtype=float) / 3.0


def avar_gauss_markov(sigma, correlation_time_s, tau_s):
    """Allan variance of a first-order Gauss-Markov process (exponentially correlated noise).

    ``sigma^2 (T / tau)^2 (2 u - 3 + 4 e^-u - e^-2u)``, ``u = tau / T``, for the stationary
    process of variance sigma^2 and autocovariance ``sigma^2 exp(-|s| / T)`` (IEEE Std
    952-1997 Annex C, exponentially correlated noise, with ``q_c^2 = 2 sigma^2 / T``;
    El-Sheimy et al. 2008). For ``u`` below 1e-2 the bracket is its
    Taylor series ``2u^3/3 - u^4/2 + 7u^5/30 - u^6/12`` (the closed form cancels there).
    Limits: ``2 sigma^2 u / 3`` for tau << T (a random walk), ``2 sigma^2 T / tau`` for tau >> T.
    """
    s = np.asarray(sigma, dtype=float)
    u = np.asarray(tau_s, dtype=float) / float(correlation_time_s)
    small = u < _GM_SERIES_BELOW
    us = np.where(small, u, 0.0)
    series = us * (2.0 / 3.0 + us * (-0.5 + us * (7.0 / 30.0 - us / 12.0)))     # bracket / u^2
    ul = np.where(small, 1.0, u)
    closed = (2.0 * ul + 4.0 * np.expm1(-ul) - np.expm1(-2.0 * ul)) / (ul * ul)
    return s * s * np.where(small, series, closed)


def gauss_markov_sigma(bias_instability):
    """Standard deviation of the Gauss-Markov bias for an IEEE 952 bias-instability coefficient.

    Parameters
    ----------
    bias_instability : array_like
        Bias-instability coefficient B (rad/s or m/s^2).

    Returns
    -------
    ndarray
        ``sigma_GM = B * 0.6643 / 0.6174`` (= 1.0760 B).

    Notes
    -----
    IEEE Std 952-1997 (Annex C) defines B by the flat floor a flicker (1/f) bias leaves on the
    Allan deviation, ``sigma_A = sqrt(2 ln 2 / pi) B = 0.6643 B``
    (:data:`FLICKER_ALLAN_FLOOR`); a data sheet's "in-run bias stability" is the minimum of the
    measured Allan deviation, i.e. ``0.6643 B`` (Analog Devices defines it so), hence
    ``B = in-run bias stability / 0.6643``. A first-order Gauss-Markov process cannot make a
    flat floor; its Allan deviation has a peak of ``0.6174 sigma_GM`` at ``tau = 1.89 T``
    (:data:`GAUSS_MARKOV_ALLAN_PEAK`). The model sets the peak to the flicker floor, so a static
    run's Allan curve touches the data sheet's minimum at 1.89 T. This is the conversion
    validation/imu_allan.py checks; it is not sigma_GM = B (a common shortcut, 7.6 % low).
    """
    return np.asarray(bias_instability, dtype=float) * (FLICKER_ALLAN_FLOOR / GAUSS_MARKOV_ALLAN_PEAK)


# ------------------------------------------------------------------------------------------------
# Stochastic errors, block-partitioned (see the module docstring)
# ------------------------------------------------------------------------------------------------
class ImuErrorProcess:
    """White noise, Gauss-Markov bias and bias random walk of a multi-axis inertial sensor.

    Parameters
    ----------
    seed : int
        Scenario seed.
    name : str
        Sensor name (keys the random streams, :func:`hifi.api.rng.stream`).
    rate_hz : float
        Sample rate [Hz]; sample k is at ``k / rate_hz``.
    white_density : (c,) float
        White-noise density per axis (rad/s/sqrt(Hz), m/s^2/sqrt(Hz)).
    gm_sigma : (c,) float
        Standard deviation of the Gauss-Markov bias per axis (:func:`gauss_markov_sigma`).
    correlation_time_s : float
        Its correlation time T [s] (> 0).
    random_walk_density : (c,) float
        Bias random-walk density per axis (rad/s^2/sqrt(Hz), m/s^3/sqrt(Hz)).
    block_frames : int
        Samples per block (:data:`BLOCK_FRAMES`).

    Notes
    -----
    Discrete models with ``dt = 1 / rate_hz`` (Kalibr wiki "IMU Noise Model"; Gelb, Applied
    Optimal Estimation, 1974, table 3.3-1 for the Gauss-Markov transition):

    - white: ``n_k = N / sqrt(dt) w_k``
    - random walk: ``r_{k+1} = r_k + K sqrt(dt) w_k``, ``r_0 = 0``
    - Gauss-Markov: ``g_{k+1} = phi g_k + sigma sqrt(1 - phi^2) w_k``, ``phi = exp(-dt / T)``,
      ``g_0 ~ N(0, sigma^2)`` (stationary from the start).

    Block b holds samples ``[bB, (b + 1)B)``. The boundary values ``g_{bB}``, ``r_{bB}`` come
    from the B-step transitions (``phi^B``, ``sigma sqrt(1 - phi^2B)``; ``K sqrt(B dt)``) with
    one draw per boundary from ``stream(seed, name, b, "imu_bias_boundary")``. Inside the block
    the recursion is run from ``g_{bB}`` with draws from ``stream(seed, name, b, "imu_block")``
    to ``u_0 .. u_B`` and corrected to end at the drawn ``g_{(b+1)B}``:
    ``g_{bB+i} = u_i + c_i (g_{(b+1)B} - u_B)``, ``c_i = Cov(u_i, u_B) / Var(u_B)
    = phi^(B-i) (1 - phi^2i) / (1 - phi^2B)`` (``i / B`` for the random walk). For Gaussian
    processes this gives exactly the conditional law of the path between the two boundary
    values (Hoffman & Ribak, ApJ 380, L5, 1991, "constrained realizations"), so the blocks
    together are an exact realisation of the recursion. The white noise of block b comes from
    the same block stream.
    """

    def __init__(self, seed: int, name: str, rate_hz: float, white_density, gm_sigma,
                 correlation_time_s: float, random_walk_density, *, block_frames: int = BLOCK_FRAMES):
        # scipy.signal (the bias filter of each block) is imported here, at the model's set-up,
        # and not at the first block: its import takes about 0.7 s, which in a closed loop would
        # stall the run (or a stepping session's first step) at the IMU's first sample.
        from scipy.signal import lfilter
        self._lfilter = lfilter
        self.seed, self.name = int(seed), str(name)
        self.dt_s = 1.0 / float(rate_hz)
        self.white = np.asarray(white_density, dtype=float)
        self.gm_sigma = np.asarray(gm_sigma, dtype=float)
        self.rw = np.asarray(random_walk_density, dtype=float)
        self.n_axes = self.white.size
        if not (self.gm_sigma.size == self.rw.size == self.n_axes):
            raise ValueError("white_density, gm_sigma and random_walk_density need one value per axis")
        if not correlation_time_s > 0:
            raise ValueError(f"correlation_time_s must be > 0, got {correlation_time_s!r}")
        self.correlation_time_s = float(correlation_time_s)
        self.block_frames = int(block_frames)
        a = self.dt_s / self.correlation_time_s
        bsz = self.block_frames
        self._phi = np.exp(-a)
        self._gm_step = self.gm_sigma * np.sqrt(-np.expm1(-2.0 * a))
        self._phi_block = np.exp(-bsz * a)
        self._gm_block_step = self.gm_sigma * np.sqrt(-np.expm1(-2.0 * bsz * a))
        self._rw_block_step = self.rw * np.sqrt(bsz * self.dt_s)
        i = np.arange(bsz + 1, dtype=float)
        self._phi_pow = np.exp(-i * a)                                 # phi^i, i = 0..B
        self._gm_bridge = (np.exp(-(bsz - i) * a) * np.expm1(-2.0 * i * a) / np.expm1(-2.0 * bsz * a))
        self._rw_bridge = i / bsz
        self._has_gm = bool(np.any(self.gm_sigma > 0))
        self._has_rw = bool(np.any(self.rw > 0))
        initial = stream(self.seed, self.name, -1, "imu_bias_initial").standard_normal(self.n_axes)
        self._gm_boundary = [self.gm_sigma * initial]
        self._rw_boundary = [np.zeros(self.n_axes)]

    def _boundaries(self, block: int):
        """Bias values at the start of ``block`` and of the next one: (g_b, g_b+1, r_b, r_b+1)."""
        while len(self._gm_boundary) < block + 2:
            j = len(self._gm_boundary) - 1
            z = stream(self.seed, self.name, j, "imu_bias_boundary").standard_normal((2, self.n_axes))
            self._gm_boundary.append(self._phi_block * self._gm_boundary[j] + self._gm_block_step * z[0])
            self._rw_boundary.append(self._rw_boundary[j] + self._rw_block_step * z[1])
        return (self._gm_boundary[block], self._gm_boundary[block + 1],
                self._rw_boundary[block], self._rw_boundary[block + 1])

    def block(self, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """White noise, Gauss-Markov bias and random-walk bias of block ``b``, each (B, c)."""
        lfilter = self._lfilter
        bsz = self.block_frames
        w = stream(self.seed, self.name, b, "imu_block").standard_normal((3, bsz, self.n_axes))
        white = w[0] * (self.white / np.sqrt(self.dt_s))
        g0, g1, r0, r1 = self._boundaries(b)
        gm = np.zeros((bsz, self.n_axes))
        rw = np.zeros((bsz, self.n_axes))
        if self._has_gm:
            e = np.zeros((bsz + 1, self.n_axes))                      # AR(1) from 0
            e[1:] = lfilter([1.0], [1.0, -self._phi], w[1] * self._gm_step, axis=0)
            u = self._phi_pow[:, None] * g0 + e                       # u_0 .. u_B from g0
            gm = (u + self._gm_bridge[:, None] * (g1 - u[-1]))[:bsz]
        if self._has_rw:
            u = r0 + np.concatenate([np.zeros((1, self.n_axes)),
                                     np.cumsum(w[2] * (self.rw * np.sqrt(self.dt_s)), axis=0)])
            rw = (u + self._rw_bridge[:, None] * (r1 - u[-1]))[:bsz]
        return white, gm, rw

    def total(self, n: int) -> np.ndarray:
        """Sum of the three processes for samples 0 .. n-1, shape (n, c) (for long static runs)."""
        out = np.empty((n, self.n_axes))
        for b in range(-(-n // self.block_frames)):
            white, gm, rw = self.block(b)
            lo = b * self.block_frames
            hi = min(lo + self.block_frames, n)
            out[lo:hi] = (white + gm + rw)[:hi - lo]
        return out


def apply_sensor_errors(true, matrix, bias, noise, *, range_limit, resolution):
    """Deterministic error chain of one triad: ``sat(quant(M true + bias + noise))``.

    Parameters
    ----------
    true : (n, 3) float
        Error-free values (sensor axes).
    matrix : (3, 3) float
        ``M = I + S + A``: scale factors on the diagonal, misalignment / cross-coupling off it.
    bias, noise : (n, 3) float
        Additive bias and white noise, same units as ``true``.
    range_limit : float
        Output range (full scale): values beyond +-range_limit are clipped; 0 or less: none.
    resolution : float
        Output resolution (one LSB): values are rounded to a multiple of it; 0 or less: none.

    Returns
    -------
    measured : (n, 3) float
    saturated : (n, 3) bool
        Where the value before clipping was beyond the range.
    """
    x = np.asarray(true, dtype=float) @ np.asarray(matrix, dtype=float).T + bias + noise
    saturated = np.zeros(x.shape, dtype=bool)
    if range_limit > 0:
        saturated = np.abs(x) > range_limit
        x = np.clip(x, -range_limit, range_limit)
    if resolution > 0:
        x = np.rint(x / resolution) * resolution
    return x, saturated
