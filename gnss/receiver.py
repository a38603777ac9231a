"""Pseudorange model: every error term separately, summed in one documented order.

:func:`pseudorange_sum` is the one place where the terms are added up; :func:`model_pseudoranges`
computes the terms and calls it, and so does a caller that adds terms of its own (the ``gps_l1``
sensor adds the multipath it finds by ray casting).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import atmosphere, errors, geometry, gpstime, orbit
from .constants import SPEED_OF_LIGHT

IONO_MODELS = ("klobuchar", "vane", "none")
TROPO_MODELS = ("saastamoinen_niell", "none")
RECEIVER_CLOCK_MODELS = ("random_walk", "none")

_TERMS = {
    "geometric_range": "geometric range at the light-time solution, incl. Earth rotation (Sagnac)",
    "receiver_clock_bias": "receiver clock offset times c",
    "sv_clock_error": "satellite clock offset times c (broadcast polynomial + relativity - TGD + clock error)",
    "ephemeris_error": "satellite ephemeris (signal-in-space) range error",
    "iono_delay": "ionospheric group delay on L1",
    "tropo_delay_dry": "slant hydrostatic tropospheric delay",
    "tropo_delay_wet": "slant wet tropospheric delay",
    "multipath_error": "multipath excess path (0 here; set by ray casting in the sensor model)",
    "noise": "receiver code noise",
}


PSEUDORANGE_TERMS = tuple(_TERMS)
"""Names of the pseudorange terms in the order :func:`pseudorange_sum` adds them."""


def pseudorange_sum(*, geometric_range, receiver_clock_bias, sv_clock_error, ephemeris_error, iono_delay,
                    tropo_delay_dry, tropo_delay_wet, multipath_error, noise, valid=None) -> np.ndarray:
    """Pseudorange from its terms, added in the order of :data:`PSEUDORANGE_TERMS`.

    Parameters
    ----------
    geometric_range : array_like
        Geometric range at the light-time solution, Sagnac included [m].
    receiver_clock_bias : array_like
        Receiver clock offset times c [m].
    sv_clock_error : array_like
        Satellite clock offset times c (broadcast polynomial + relativity - TGD + any clock
        error) [m]; subtracted.
    ephemeris_error, iono_delay, tropo_delay_dry, tropo_delay_wet, multipath_error, noise : array_like
        Satellite range error, ionospheric group delay, slant hydrostatic and wet tropospheric
        delays, multipath excess path, receiver code noise [m].
    valid : array_like of bool, optional
        Where the pseudorange exists (visible, tracked); NaN elsewhere.  All terms when omitted.

    All arguments are keyword-only and broadcast together (e.g. ``(n_epoch, n_sv)``).

    Returns
    -------
    numpy.ndarray
        Pseudorange [m], the broadcast shape of the terms.

    Notes
    -----
    pseudorange = geometric_range + receiver_clock_bias - sv_clock_error + ephemeris_error
    + iono_delay + tropo_delay_dry + tropo_delay_wet + multipath_error + noise,

    evaluated left to right in this order, so a caller that adds the same float64 terms in the
    same order gets the same bits.  Every pseudorange of the package (:func:`model_pseudoranges`,
    the ``gps_l1`` sensor) is formed here.
    """
    pseudorange = (np.asarray(geometric_range, dtype=float) + np.asarray(receiver_clock_bias, dtype=float)
                   - np.asarray(sv_clock_error, dtype=float) + np.asarray(ephemeris_error, dtype=float)
                   + np.asarray(iono_delay, dtype=float) + np.asarray(tropo_delay_dry, dtype=float)
                   + np.asarray(tropo_delay_wet, dtype=float) + np.asarray(multipath_error, dtype=float)
                   + np.asarray(noise, dtype=float))
    if valid is None:
        return pseudorange
    return np.where(valid, pseudorange, np.nan)


def _check_choice(key, value, allowed):
    if value not in allowed:
        raise ValueError(f"{key}: got {value!r}; allowed: {', '.join(repr(a) for a in allowed)}")


def model_pseudoranges(nav: xr.Dataset, receiver_ecef, t_gps, prns=None, *, rng: np.random.Generator | None = None,
                       elevation_mask_deg=10.0, iono_model="klobuchar", tropo_model="saastamoinen_niell",
                       ephemeris_error_model="sisre", sisre_rms_m=0.7, sv_clock_error_sigma_m=0.0,
                       receiver_clock_model="random_walk", receiver_clock_initial_bias_s=0.0,
                       receiver_clock_initial_drift=0.0, receiver_clock_bias_m=None, ephemeris_error_m=None,
                       noise_sigma_m=0.3, noise_draw=None, multipath_error_m=None, relative_humidity=0.5,
                       iono_zenith_delay_m=1.5) -> xr.Dataset:
    """Modelled L1 C/A pseudoranges of a receiver, term by term.

    Parameters
    ----------
    nav : xarray.Dataset
        Broadcast ephemerides and Klobuchar coefficients from :func:`gnss.read_nav`.
    receiver_ecef : array_like, shape (3,) or (n_epoch, 3)
        True antenna position, WGS 84 ECEF [m].
    t_gps : array_like of numpy.datetime64, shape (n_epoch,) or scalar
        True reception times, GPST.
    prns : array_like, optional
        Satellites: GPS PRNs (int) or names ("G05", "E11", ...); every satellite in ``nav`` when
        omitted. Satellites of systems not modelled (SBAS "S36", QZSS "J02", IRNSS "I05", as
        real RINEX 3 files list them) are not visible: NaN terms, one
        :class:`gnss.orbit.UnmodelledSatelliteWarning` naming them.
    rng : numpy.random.Generator, optional, keyword-only
        Source of every random term.  ``None`` makes the model deterministic: ephemeris error,
        satellite clock error, receiver clock random walk and noise are all zero (the receiver
        clock keeps its initial bias and drift) unless passed in (``ephemeris_error_m``,
        ``receiver_clock_bias_m``, ``noise_draw``), and ``attrs["stochastic"]`` says so.
    elevation_mask_deg : float, keyword-only
        Satellites below this elevation are not visible (pseudorange NaN) [deg].
    iono_model : {"klobuchar", "vane", "none"}, keyword-only
        Klobuchar with the broadcast coefficients, or a constant zenith delay
        ``iono_zenith_delay_m`` mapped with the single-layer function (see
        :func:`gnss.atmosphere.vane_iono_delay`), or off.
    tropo_model : {"saastamoinen_niell", "none"}, keyword-only
        Saastamoinen zenith delays in a standard atmosphere with relative humidity
        ``relative_humidity``, mapped with Niell's dry and wet functions.
    ephemeris_error_model : {"sisre", "none"}, keyword-only
        "sisre": a constant Gaussian range error per satellite with RMS ``sisre_rms_m``
        (Montenbruck et al. 2015).  "vane" raises ValueError: the VANE paper's Eq. (2) was not
        available to implement as printed.
    sv_clock_error_sigma_m : float, keyword-only
        Extra white satellite clock error [m] added to the broadcast clock offset.  Default 0
        because the 0.7 m SISRE already contains the broadcast clock error.
    receiver_clock_model : {"random_walk", "none"}, keyword-only
        Two-state random walk (TCXO, :func:`gnss.errors.receiver_clock_walk`) or a perfect clock.
    receiver_clock_initial_bias_s, receiver_clock_initial_drift : float, keyword-only
        Clock state at the first epoch [s], [s/s].
    receiver_clock_bias_m : array_like, shape (n_epoch,), optional, keyword-only
        Use this clock offset [m] instead of simulating one (for a caller stepping epoch by
        epoch with its own clock state).
    ephemeris_error_m : array_like, shape (n_sv,) or (n_epoch, n_sv), optional, keyword-only
        Use these ephemeris range errors [m] instead of drawing them (same reason).
    noise_sigma_m : float, keyword-only
        Zenith code noise sigma [m]; the sigma grows as 1 / sin(elevation)
        (:func:`gnss.errors.elevation_sigma`).
    noise_draw : array_like, shape (n_epoch, n_sv), optional, keyword-only
        Standard normal draws [1] to scale into the code noise instead of drawing them from
        ``rng`` (for a caller with its own random stream per epoch); used with or without
        ``rng``.
    multipath_error_m : array_like, broadcastable to (n_epoch, n_sv), optional, keyword-only
        Multipath excess path [m] computed outside (e.g. by ray casting in a scene); zero when
        omitted.  A caller that needs this model's geometry first (the satellite positions to
        cast toward) adds its multipath afterwards with :func:`pseudorange_sum`.
    relative_humidity : float, keyword-only
        Relative humidity of the standard atmosphere, 0..1 [1].
    iono_zenith_delay_m : float, keyword-only
        Vertical delay of ``iono_model="vane"`` [m].

    Returns
    -------
    xarray.Dataset
        Dimensions (epoch, sv[, xyz]) with the variables ``pseudorange``,
        ``geometric_range``, ``receiver_clock_bias``, ``sv_clock_error``, ``ephemeris_error``,
        ``iono_delay``, ``tropo_delay_dry``, ``tropo_delay_wet``, ``multipath_error`` (zeros
        unless ``multipath_error_m`` is given),
        ``noise`` (all m), ``elevation``, ``azimuth`` (rad), ``visible``, ``blocked`` (False),
        ``sv_position_ecef`` (at transmission, in the reception-time ECEF frame), plus
        ``true_position_ecef`` (epoch, xyz), ``receiver_clock_drift`` and the coordinate
        ``time_tag`` (the receiver's own reading of the reception time, as a real receiver
        would tag its observations; :func:`gnss.solve` uses it).

    Notes
    -----
    pseudorange = geometric_range + receiver_clock_bias - sv_clock_error + ephemeris_error
    + iono_delay + tropo_delay_dry + tropo_delay_wet + multipath_error + noise, formed by
    :func:`pseudorange_sum` (in this order), where visible; NaN elsewhere (the terms are still
    given).  The code noise is ``draw * noise_sigma_m / sin(el)``, the draw from ``rng`` or
    ``noise_draw``.  A satellite is visible when
    a healthy ephemeris lies within 2 h and its elevation is at least the mask.  Random numbers
    are drawn in a fixed order and fixed shapes (ephemeris (n_sv), satellite clock
    (n_epoch, n_sv), receiver clock (n_epoch, 2), noise (n_epoch, n_sv)) whatever the visibility,
    so the output is a function of the seed alone.
    """
    if ephemeris_error_model == "vane":
        raise ValueError(errors.VANE_EPHEMERIS_UNAVAILABLE)
    _check_choice("ephemeris_error_model", ephemeris_error_model, errors.EPHEMERIS_ERROR_MODELS)
    _check_choice("iono_model", iono_model, IONO_MODELS)
    _check_choice("tropo_model", tropo_model, TROPO_MODELS)
    _check_choice("receiver_clock_model", receiver_clock_model, RECEIVER_CLOCK_MODELS)
    for key, value in (("noise_sigma_m", noise_sigma_m), ("sisre_rms_m", sisre_rms_m),
                       ("sv_clock_error_sigma_m", sv_clock_error_sigma_m)):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{key}: got {value!r}; allowed: a finite number >= 0")
    if not 0.0 <= relative_humidity <= 1.0:
        raise ValueError(f"relative_humidity: got {relative_humidity!r}; allowed: 0..1")
    if not -90.0 <= elevation_mask_deg <= 90.0:
        raise ValueError(f"elevation_mask_deg: got {elevation_mask_deg!r}; allowed: -90..90")

    t = np.atleast_1d(np.asarray(t_gps, dtype="datetime64[ns]"))
    n_epoch = t.size
    sats = np.unique(orbit._sat_keys(nav)) if prns is None else prns
    prn = orbit._prn_array(sats).ravel()
    sv_names = orbit._sv_labels(sats, prn)
    n_sv = prn.size
    rx = np.asarray(receiver_ecef, dtype=float)
    if rx.shape == (3,):
        rx = np.broadcast_to(rx, (n_epoch, 3))
    if rx.shape != (n_epoch, 3):
        raise ValueError(f"receiver_ecef: shape {rx.shape!r}; allowed: (3,) or (n_epoch, 3) = ({n_epoch}, 3)")
    if noise_draw is not None:
        noise_draw = np.asarray(noise_draw, dtype=float)
        if noise_draw.shape != (n_epoch, n_sv):
            raise ValueError(f"noise_draw: shape {noise_draw.shape!r}; allowed: (n_epoch, n_sv) = ({n_epoch}, {n_sv})")

    gt = gpstime.from_datetime64(t)
    trans = orbit.light_time(nav, prn[None, :], gpstime.GpsTime(gt.week[:, None], gt.sow[:, None]), rx[:, None, :])
    geo = geometry.ecef_to_geodetic(rx)
    geo_b = geometry.Geodetic(*(g[:, None] for g in geo))
    look = geometry.look_angles(rx[:, None, :], trans.sv_position_ecef, geo_b)
    el, az = look.elevation_rad, look.azimuth_rad
    has_eph = trans.state.record >= 0
    visible = has_eph & (el >= np.radians(elevation_mask_deg))

    c = SPEED_OF_LIGHT
    zeros = np.zeros((n_epoch, n_sv))
    # --- stochastic draws, fixed order and shapes ---
    stochastic = rng is not None
    if stochastic:
        eph_draw = errors.sisre_range_error(n_sv, rng, rms_m=sisre_rms_m)
        svclk_draw = sv_clock_error_sigma_m * rng.standard_normal((n_epoch, n_sv))
        dt = np.diff(gt.week).astype(float) * gpstime.SECONDS_PER_WEEK + np.diff(gt.sow)
        clock = errors.receiver_clock_walk(np.concatenate([[0.0], dt]), rng,
                                           initial_bias_s=receiver_clock_initial_bias_s,
                                           initial_drift=receiver_clock_initial_drift)
        rng_noise = rng.standard_normal((n_epoch, n_sv))
    else:
        eph_draw = np.zeros(n_sv)
        svclk_draw = zeros
        dt = np.diff(gt.week).astype(float) * gpstime.SECONDS_PER_WEEK + np.diff(gt.sow)
        elapsed = np.concatenate([[0.0], np.cumsum(dt)])
        clock = errors.ClockWalk(receiver_clock_initial_bias_s + receiver_clock_initial_drift * elapsed,
                                 np.full(n_epoch, float(receiver_clock_initial_drift)))

    # --- terms ---
    geometric_range = trans.geometric_range
    if receiver_clock_bias_m is not None:
        rcv_clock = np.broadcast_to(np.asarray(receiver_clock_bias_m, dtype=float), (n_epoch,))
        rcv_drift = np.full(n_epoch, np.nan)
    elif receiver_clock_model == "none":
        rcv_clock, rcv_drift = np.zeros(n_epoch), np.zeros(n_epoch)
    else:
        rcv_clock, rcv_drift = c * clock.bias_s, clock.drift
    receiver_clock_bias = np.broadcast_to(rcv_clock[:, None], (n_epoch, n_sv))
    sv_clock_error = c * (trans.state.clock_bias_s - trans.state.tgd_s) + svclk_draw
    if ephemeris_error_m is not None:
        ephemeris_error = np.broadcast_to(np.asarray(ephemeris_error_m, dtype=float), (n_epoch, n_sv))
    elif ephemeris_error_model == "none":
        ephemeris_error = zeros
    else:
        ephemeris_error = np.broadcast_to(eph_draw[None, :], (n_epoch, n_sv))
    if iono_model == "klobuchar":
        alpha, beta = nav["ion_alpha"].values, nav["ion_beta"].values
        if not (np.all(np.isfinite(alpha)) and np.all(np.isfinite(beta))):
            raise ValueError(f"iono_model: got 'klobuchar' but the nav file {nav.attrs.get('source_file')!r} has "
                             "no Klobuchar coefficients; allowed for this file: 'vane', 'none'")
        iono = atmosphere.klobuchar_delay(geo_b.latitude_rad, geo_b.longitude_rad, az, el,
                                          gt.sow[:, None], alpha, beta)
    elif iono_model == "vane":
        iono = atmosphere.vane_iono_delay(el, zenith_delay_m=iono_zenith_delay_m)
    else:
        iono = zeros
    if tropo_model == "saastamoinen_niell":
        doy = geometry.day_of_year(t)[:, None]
        tropo = atmosphere.tropo_delay(el, geo_b.latitude_rad, geo_b.height_m, doy,
                                       relative_humidity=relative_humidity)
        tropo_dry, tropo_wet = tropo.dry_m, tropo.wet_m
    else:
        tropo_dry = tropo_wet = zeros
    multipath = zeros if multipath_error_m is None else \
        np.broadcast_to(np.asarray(multipath_error_m, dtype=float), (n_epoch, n_sv))
    if noise_draw is not None:
        draw = noise_draw
    elif stochastic:
        draw = rng_noise
    else:
        draw = None
    noise = zeros if draw is None else \
        draw * errors.elevation_sigma(np.where(has_eph, el, np.pi / 2), zenith_sigma_m=noise_sigma_m)

    pseudorange = pseudorange_sum(geometric_range=geometric_range, receiver_clock_bias=receiver_clock_bias,
                                  sv_clock_error=sv_clock_error, ephemeris_error=ephemeris_error, iono_delay=iono,
                                  tropo_delay_dry=tropo_dry, tropo_delay_wet=tropo_wet, multipath_error=multipath,
                                  noise=noise, valid=visible)

    def var(values, units, long_name, dims=("epoch", "sv")):
        return dims, np.array(values), {"units": units, "long_name": long_name}

    ds = xr.Dataset(
        {
            "pseudorange": var(pseudorange, "m", "modelled L1 C/A pseudorange (NaN where not visible)"),
            "geometric_range": var(geometric_range, "m", _TERMS["geometric_range"]),
            "receiver_clock_bias": var(receiver_clock_bias, "m", _TERMS["receiver_clock_bias"]),
            "sv_clock_error": var(sv_clock_error, "m", _TERMS["sv_clock_error"]),
            "ephemeris_error": var(ephemeris_error, "m", _TERMS["ephemeris_error"]),
            "iono_delay": var(iono, "m", _TERMS["iono_delay"]),
            "tropo_delay_dry": var(tropo_dry, "m", _TERMS["tropo_delay_dry"]),
            "tropo_delay_wet": var(tropo_wet, "m", _TERMS["tropo_delay_wet"]),
            "multipath_error": var(multipath, "m", _TERMS["multipath_error"]),
            "noise": var(noise, "m", _TERMS["noise"]),
            "elevation": var(el, "rad", "satellite elevation at the receiver"),
            "azimuth": var(az, "rad", "satellite azimuth from north, clockwise"),
            "visible": var(visible, "1", "healthy ephemeris and above the elevation mask"),
            "blocked": var(np.zeros((n_epoch, n_sv), dtype=bool), "1", "line of sight blocked by the scene"),
            "sv_position_ecef": var(trans.sv_position_ecef, "m",
                                    "satellite position at transmission in the ECEF frame of reception",
                                    ("epoch", "sv", "xyz")),
            "true_position_ecef": var(rx, "m", "true receiver antenna position, ECEF", ("epoch", "xyz")),
            "receiver_clock_drift": var(rcv_drift, "s/s", "receiver clock drift", ("epoch",)),
        },
        coords={"epoch": ("epoch", t, {"long_name": "true reception time (GPST)"}),
                "time_tag": ("epoch", t + np.round(rcv_clock / c * 1e9).astype(np.int64).astype("timedelta64[ns]"),
                             {"long_name": "receiver clock reading at reception (epoch + receiver clock offset)"}),
                "sv": ("sv", sv_names, {"long_name": "satellite identifier"}),
                "prn": ("sv", prn, {"long_name": "satellite key (GPS PRN; Galileo 200 + PRN; BeiDou 300 + PRN)",
                                    "units": "1"}),
                "xyz": ("xyz", np.array(["x", "y", "z"]), {"long_name": "ECEF axis"})},
        attrs={"elevation_mask_deg": float(elevation_mask_deg), "iono_model": iono_model,
               "tropo_model": tropo_model, "ephemeris_error_model": ephemeris_error_model,
               "receiver_clock_model": receiver_clock_model,
               "stochastic": "on" if stochastic else "off (rng=None: random terms are zero unless passed in)"},
    )
    return ds
