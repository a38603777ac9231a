"""Stochastic error terms of the pseudorange model (each takes an explicit numpy Generator).

Ephemeris error models: only the statistical signal-in-space range error ("sisre", default) is
implemented.  ``ephemeris_error_model = "vane"`` (the VANE paper's Eq. (2) as printed) is refused
with a ValueError: we searched for the paper's equation text and could not find it, and we do
not implement a guessed substitute.

References
----------
.. [1] O. Montenbruck, P. Steigenberger, A. Hauschild, "Broadcast versus precise ephemerides: a
   multi-GNSS perspective", GPS Solutions 19, 321-333, 2015 (GPS SISRE about 0.7 m RMS).
.. [2] R. G. Brown, P. Y. C. Hwang, "Introduction to Random Signals and Applied Kalman
   Filtering", 4th ed., Wiley 2012, sec. 9.3 (two-state receiver clock model, h0 and h-2 of a
   TCXO).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

EPHEMERIS_ERROR_MODELS = ("sisre", "none")
"""Allowed ``ephemeris_error_model`` values.  "vane" is recognised but refused, see below."""

VANE_EPHEMERIS_UNAVAILABLE = (
    "ephemeris_error_model 'vane' is not implemented: the VANE paper's Eq. (2) could not be "
    "obtained to implement it as printed, and we do not invent a substitute; allowed: 'sisre', 'none'")

TCXO_H0 = 2e-19
"""White frequency noise coefficient h0 of a TCXO [s] (Brown & Hwang 2012, table of typical clocks)."""
TCXO_H_MINUS2 = 2e-20
"""Random-walk frequency noise coefficient h-2 of a TCXO [1/s] (Brown & Hwang 2012)."""


def sisre_range_error(n_sv: int, rng: np.random.Generator, *, rms_m=0.7) -> np.ndarray:
    """Statistical signal-in-space range error, one constant draw per satellite [m].

    Parameters
    ----------
    n_sv : int
        Number of satellites.
    rng : numpy.random.Generator
        Random source.
    rms_m : float, keyword-only
        RMS of the range error [m]; 0.7 m is the GPS broadcast SISRE of Montenbruck et al. (2015)
        (orbit and clock together, as seen by a user on Earth).

    Returns
    -------
    numpy.ndarray, shape (n_sv,)
        Zero-mean Gaussian range errors with standard deviation ``rms_m`` [m].

    Notes
    -----
    Broadcast errors change over hours (one upload per day), so a constant per satellite is a
    fair model over a simulation of an hour or less; a longer run should redraw per upload.
    """
    return rms_m * rng.standard_normal(n_sv)


def elevation_sigma(elevation_rad, *, zenith_sigma_m, min_elevation_rad=np.radians(2.0)):
    """Elevation-dependent pseudorange noise sigma = zenith_sigma / sin(elevation) [m].

    Parameters
    ----------
    elevation_rad : array_like
        Elevation [rad]; clipped below at ``min_elevation_rad`` to keep the sigma finite.
    zenith_sigma_m : float, keyword-only
        Noise standard deviation at the zenith [m].

    Notes
    -----
    The 1/sin(e) law is the usual simple model of the C/N0 drop at low elevation (e.g. the
    ``a / sin e`` term of RTKLIB's ``varerr``).
    """
    el = np.maximum(np.asarray(elevation_rad, dtype=float), min_elevation_rad)
    return zenith_sigma_m / np.sin(el)


class ClockWalk(NamedTuple):
    """Receiver clock realisation.

    Attributes
    ----------
    bias_s : numpy.ndarray
        Clock offset per epoch [s].
    drift : numpy.ndarray
        Clock drift per epoch [s/s].
    """

    bias_s: np.ndarray
    drift: np.ndarray


def receiver_clock_walk(dt_s, rng: np.random.Generator, *, initial_bias_s=0.0, initial_drift=0.0,
                        h0=TCXO_H0, h_minus2=TCXO_H_MINUS2) -> ClockWalk:
    """Two-state receiver clock: bias and drift driven by random walks.

    Parameters
    ----------
    dt_s : array_like, shape (n_epoch,)
        Time since the previous epoch [s]; the first entry is ignored (the clock starts at the
        initial state).
    rng : numpy.random.Generator
        Random source; draws 2 * n_epoch standard normals in a fixed order.
    initial_bias_s, initial_drift : float, keyword-only
        State at the first epoch [s], [s/s].
    h0, h_minus2 : float, keyword-only
        Allan variance coefficients [s], [1/s] (defaults: TCXO).

    Returns
    -------
    ClockWalk
        Bias and drift per epoch.

    Notes
    -----
    Brown & Hwang (2012): with S_f = h0 / 2 and S_g = 2 pi^2 h-2, the process noise over dt is
    Q = [[S_f dt + S_g dt^3/3, S_g dt^2/2], [S_g dt^2/2, S_g dt]]; state transition
    b_k = b_{k-1} + d_{k-1} dt + w_b, d_k = d_{k-1} + w_d.  The recursion is evaluated with
    cumulative sums (no Python loop).
    """
    dt = np.asarray(dt_s, dtype=float).copy()
    n = dt.size
    z = rng.standard_normal((n, 2))
    if n == 0:
        return ClockWalk(np.zeros(0), np.zeros(0))
    dt[0] = 0.0
    sf, sg = h0 / 2.0, 2.0 * np.pi ** 2 * h_minus2
    qbb = sf * dt + sg * dt ** 3 / 3.0
    qbd = sg * dt ** 2 / 2.0
    qdd = sg * dt
    l11 = np.sqrt(qbb)
    l21 = np.divide(qbd, l11, out=np.zeros_like(qbd), where=l11 > 0)
    l22 = np.sqrt(np.maximum(qdd - l21 ** 2, 0.0))
    wb = l11 * z[:, 0]
    wd = l21 * z[:, 0] + l22 * z[:, 1]
    drift = initial_drift + np.cumsum(wd)
    drift_prev = np.concatenate([[initial_drift], drift[:-1]])
    bias = initial_bias_s + np.cumsum(drift_prev * dt + wb)
    return ClockWalk(bias, drift)
