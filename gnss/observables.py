"""Raw GNSS observables of a receiver: code, carrier phase, Doppler and C/N0 per signal.

Plain arrays in, an xarray Dataset out (dimensions ``epoch``, ``sv``, ``signal``); the scene
(blocking, multipath) stays with the caller, which passes what it found per satellite. The
satellite geometry is :func:`gnss.orbit.light_time` on the broadcast ephemerides of every
system :func:`gnss.read_nav` reads.

Observation equations (Teunissen & Montenbruck, eds., "Springer Handbook of GNSS", 2017,
ch. 19, Eqs. 19.1-19.2; Kaplan & Hegarty, "Understanding GPS/GNSS", 3rd ed., 2017, ch. 11):

- code      P_f = rho + c (dt_r - dt_sv + g_f) + T + I_f + eps_P
- phase     L_f = (rho + c (dt_r - dt_sv) + T - I_f) / lambda_f + N_f + eps_L     [cycles]
- Doppler   D_f = -(d rho / dt + c (d dt_r / dt - d dt_sv / dt)) / lambda_f        [Hz]
- C/N0      = P_min,f + G_ant(elevation) - L_reflection - N_0                       [dB-Hz]

with rho the geometric range (light time and Earth rotation), I_f = I_L1 (f_L1 / f)^2 the
first-order ionospheric delay (code delayed, phase advanced by the same amount, so the
dual-frequency ionosphere-free combination removes it), g_f the satellite group delay of the
signal from the broadcast TGD/BGD, N_f an integer ambiguity fixed per continuous arc and
drawn anew (with the RINEX loss-of-lock bit) when the satellite was not tracked at the previous
epoch, and the noises from the tracking loops' thermal jitter at that C/N0 (Kaplan & Hegarty
2017, Eqs. 8.37 (PLL) and 8.44 (coherent early-minus-late DLL)). RINEX's sign convention:
a satellite coming closer has a positive Doppler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from . import gpstime, orbit
from .constants import SPEED_OF_LIGHT


@dataclass(frozen=True)
class Signal:
    """One GNSS signal: its RINEX 3 observation code, system and carrier."""

    code: str                 #: RINEX 3 band + attribute ("1C", "5Q", "2I")
    system: str               #: "G", "E", "C"
    frequency_hz: float
    chip_length_m: float      #: c / chipping rate of the ranging code
    min_power_dbw: float      #: specified minimum received power (ICD, 0 dBic antenna, >= 5-10 deg)
    group_delay: str          #: which broadcast group delay applies: "tgd", "bgd_e5a_e1", "none"
    source: str
    channel_step_hz: float = 0.0   #: GLONASS FDMA: carrier = frequency_hz + k step, k the satellite's channel

    def carrier_hz(self, channel=0.0):
        """Carrier frequency [Hz] of a satellite on FDMA channel ``channel`` (CDMA: ``frequency_hz``)."""
        return self.frequency_hz + np.asarray(channel, dtype=float) * self.channel_step_hz


#: Signals by "<system><code>". Frequencies and chipping rates: IS-GPS-200N 3.3.1.1 and
#: 3.3.2.1 (L1 1575.42 MHz, C/A 1.023 Mcps), IS-GPS-705J 3.3.1.1 (L5 1176.45 MHz, 10.23 Mcps),
#: Galileo OS SIS ICD 2.0 Tables 2-3 (E1 1575.42 MHz, 1.023 Mcps; E5a 1176.45 MHz, 10.23 Mcps),
#: BDS-SIS-ICD-B1I-3.0 3.2 (B1I 1561.098 MHz, 2.046 Mcps), GLONASS ICD ed. 5.1 3.3.1.4 and
#: 3.3.2.2 (L1OF 1602 + 0.5625 k MHz, C/A 0.511 Mcps). Minimum received power at the user
#: (0 dBic linearly polarised antenna): L1 C/A -158.5 dBW (IS-GPS-200N Table 3-Va), L5 -157.9
#: dBW per component, I5 + Q5 -154.9 dBW (IS-GPS-705J Table 3-Ia), E1 -157.0 dBW and E5a
#: -155.0 dBW (Galileo OS SIS ICD 2.0, 2.3.1), B1I -163.0 dBW (BDS-SIS-ICD-B1I-3.0, 3.4.1),
#: GLONASS L1 C/A -161.0 dBW (GLONASS ICD ed. 5.1, 3.3.1.6). GLONASS broadcasts no group delay
#: of L1 in RINEX 3.04 (its clock TauN refers to L1).
SIGNALS = {
    "G1C": Signal("1C", "G", 1575.42e6, SPEED_OF_LIGHT / 1.023e6, -158.5, "tgd", "IS-GPS-200N"),
    "G5Q": Signal("5Q", "G", 1176.45e6, SPEED_OF_LIGHT / 10.23e6, -154.9, "tgd_l5", "IS-GPS-705J"),
    "E1C": Signal("1C", "E", 1575.42e6, SPEED_OF_LIGHT / 1.023e6, -157.0, "tgd", "Galileo OS SIS ICD 2.0"),
    "E5Q": Signal("5Q", "E", 1176.45e6, SPEED_OF_LIGHT / 10.23e6, -155.0, "bgd_e5a_e1", "Galileo OS SIS ICD 2.0"),
    "C2I": Signal("2I", "C", 1561.098e6, SPEED_OF_LIGHT / 2.046e6, -163.0, "tgd", "BDS-SIS-ICD-B1I-3.0"),
    "R1C": Signal("1C", "R", 1602.0e6, SPEED_OF_LIGHT / 0.511e6, -161.0, "none", "GLONASS ICD 5.1",
                  channel_step_hz=0.5625e6),
}
#: Half step of the central difference that gives the range rate [s] (the light-time iteration
#: converges to far below a micrometre, so the difference is exact to ~1e-6 m/s).
RANGE_RATE_STEP_S = 0.05
#: Frequency of GPS L1 [Hz], the reference of the ionospheric delay passed in.
F_L1_HZ = 1575.42e6
#: Boltzmann's constant in dB: 10 log10(1.380649e-23 J/K) = -228.6 dBW/(K Hz).
BOLTZMANN_DBW_K_HZ = 10.0 * np.log10(1.380649e-23)


@dataclass(frozen=True)
class Receiver:
    """Receiver front end and tracking loops.

    Defaults: system noise temperature 290 K (a sky-looking antenna at ~100 K plus a 2 dB noise
    figure front end gives 270 K; Kaplan & Hegarty 2017, 8.4 take T_sys ~ 290 K, N0 = -204
    dBW/Hz); antenna gain of a right-hand-circular patch, +3 dBic at zenith falling to -5 dBic at
    5 deg elevation (``antenna_gain_dbic``: linear in elevation between the two; Kaplan &
    Hegarty 2017, ch. 9, typical patch pattern); a reflected-only (non line-of-sight) signal
    loses ``reflection_loss_db`` = 6 dB (RHCP to LHCP conversion at a dielectric surface and the
    antenna's cross-polar rejection; Groves, "Principles of GNSS, Inertial, and Multisensor
    Integrated Navigation Systems", 2nd ed., 2013, 10.4); DLL noise bandwidth 1 Hz (carrier
    aided), early-late spacing 0.1 chip, PLL 15 Hz, pre-detection 20 ms (Kaplan & Hegarty
    2017, 8.8).
    """

    system_temperature_k: float = 290.0
    antenna_gain_zenith_dbic: float = 3.0
    antenna_gain_5deg_dbic: float = -5.0
    reflection_loss_db: float = 6.0
    dll_bandwidth_hz: float = 1.0
    correlator_spacing_chip: float = 0.1
    pll_bandwidth_hz: float = 15.0
    integration_time_s: float = 0.02

    @property
    def noise_density_dbw_hz(self) -> float:
        """N0 = k T_sys [dBW/Hz]."""
        return BOLTZMANN_DBW_K_HZ + 10.0 * np.log10(self.system_temperature_k)

    def antenna_gain_dbic(self, elevation_rad):
        """Gain toward a satellite at ``elevation_rad``: linear in elevation from 5 deg to zenith."""
        el = np.degrees(np.asarray(elevation_rad, dtype=float))
        s = np.clip((el - 5.0) / 85.0, 0.0, 1.0)
        return self.antenna_gain_5deg_dbic + s * (self.antenna_gain_zenith_dbic - self.antenna_gain_5deg_dbic)


def cn0_dbhz(signal: Signal, elevation_rad, receiver: Receiver, reflected_only=False):
    """C/N0 [dB-Hz]: minimum received power + antenna gain - reflection loss - N0."""
    return (signal.min_power_dbw + receiver.antenna_gain_dbic(elevation_rad)
            - np.where(reflected_only, receiver.reflection_loss_db, 0.0) - receiver.noise_density_dbw_hz)


def tracking_sigmas(signal: Signal, cn0, receiver: Receiver):
    """Thermal-noise 1-sigma of code [m] and carrier phase [cycles] at ``cn0`` [dB-Hz].

    DLL, coherent early-minus-late, BPSK with a wide front end (Kaplan & Hegarty 2017, Eq. 8.44):
    ``sigma = chip sqrt(B_L d / (2 C/N0) (1 + 2 / (T C/N0 (2 - d))))``; PLL (Eq. 8.37):
    ``sigma = 1 / (2 pi) sqrt(B_n / C/N0 (1 + 1 / (2 T C/N0)))`` cycles.
    """
    c_n0 = 10.0 ** (np.asarray(cn0, dtype=float) / 10.0)
    d, t = receiver.correlator_spacing_chip, receiver.integration_time_s
    code = signal.chip_length_m * np.sqrt(receiver.dll_bandwidth_hz * d / (2.0 * c_n0)
                                          * (1.0 + 2.0 / (t * c_n0 * (2.0 - d))))
    phase = np.sqrt(receiver.pll_bandwidth_hz / c_n0 * (1.0 + 1.0 / (2.0 * t * c_n0))) / (2.0 * np.pi)
    return code, phase


def _group_delay_s(signal: Signal, st_tgd, bgd_e5a):
    """Satellite group delay of the signal [s] (added to the code as c g): GPS L1 C/A and
    Galileo E1 (I/NAV) and BeiDou B1I take the broadcast TGD/BGD/TGD1; GPS L5 TGD (f1/f5)^2
    (IS-GPS-705J 20.3.3.3.1.2.1 without the ISCs); Galileo E5a BGD(E1,E5a) (f1/f5)^2 (OS SIS ICD
    5.1.5)."""
    if signal.group_delay == "tgd":
        return st_tgd
    if signal.group_delay == "none":
        return np.zeros_like(st_tgd)
    ratio = (F_L1_HZ / signal.frequency_hz) ** 2
    if signal.group_delay == "tgd_l5":
        return st_tgd * ratio
    return bgd_e5a * ratio


def model_observables(nav: xr.Dataset, receiver_ecef, receiver_velocity_ecef, t_gps, svs, signals, *,
                      receiver_clock_bias_m, receiver_clock_drift_m_s, iono_l1_m, tropo_m, tracked,
                      reflected_only=None, elevation_rad, receiver: Receiver = Receiver(),
                      rng: np.random.Generator | None = None, ambiguity_range=100000,
                      new_arc=None, ambiguities=None, noise_draws=None) -> xr.Dataset:
    """Code, carrier phase, Doppler and C/N0 of every tracked (epoch, satellite, signal).

    Parameters
    ----------
    nav : xarray.Dataset
        Broadcast ephemerides of the satellites' systems (:func:`gnss.read_nav`).
    receiver_ecef, receiver_velocity_ecef : (n_epoch, 3) float
        True antenna position [m] and velocity [m/s], ECEF.
    t_gps : (n_epoch,) datetime64
        True reception times, GPST.
    svs : sequence of str
        Satellites ("G05", "R07", "E11", "C06"); a GLONASS satellite's carrier follows the FDMA
        channel of its navigation record (``glo_frequency_channel``).
    signals : sequence of str
        Keys of :data:`SIGNALS`; a satellite gets the signals of its own system.
    receiver_clock_bias_m, receiver_clock_drift_m_s : (n_epoch,) float
        Receiver clock offset times c [m] and its rate [m/s].
    iono_l1_m, tropo_m, elevation_rad : (n_epoch, n_sv) float
        Ionospheric delay at L1 [m], tropospheric delay [m] and elevation [rad].
    tracked : (n_epoch, n_sv) bool
        Whether the receiver tracks the satellite (above the mask and not blocked, or received
        by reflection only); an untracked epoch ends the arc.
    reflected_only : (n_epoch, n_sv) bool, optional
        Signal received only by reflection (its C/N0 loses ``receiver.reflection_loss_db``).
    rng : numpy.random.Generator, optional
        Ambiguities and noise; None gives zero noise and zero ambiguities (deterministic).
    new_arc, ambiguities, noise_draws : optional
        A caller that computes a long run in blocks passes its own arcs (``new_arc`` (n_epoch,
        n_sv) bool: the epoch starts an arc), integer ``ambiguities`` (n_epoch, n_sv, n_signal)
        and standard-normal ``noise_draws`` (2, n_epoch, n_sv, n_signal: code, phase) instead.

    Returns
    -------
    xarray.Dataset
        (epoch, sv, signal): ``code`` [m], ``phase`` [cycles], ``doppler`` [Hz], ``cn0``
        [dB-Hz], ``lli`` (RINEX loss-of-lock indicator, 1 at the first epoch of an arc),
        ``ambiguity`` [cycles], ``iono_delay`` [m, on the code of that signal], ``code_noise``
        [m, the tracking noise in ``code``] and the
        noise-free ``geometric_range`` (epoch, sv) [m]; NaN where not tracked or where the
        satellite's system lacks the signal.
    """
    svs = np.asarray(svs, dtype=object)
    sig = [SIGNALS[s] for s in signals]
    t = np.asarray(t_gps, dtype="datetime64[ns]")
    n_epoch, n_sv, n_sig = t.size, svs.size, len(sig)
    x = np.broadcast_to(np.asarray(receiver_ecef, dtype=float), (n_epoch, 3))
    v = np.broadcast_to(np.asarray(receiver_velocity_ecef, dtype=float), (n_epoch, 3))
    gt = gpstime.from_datetime64(t)
    keys = orbit._prn_array(svs)
    tx = orbit.light_time(nav, keys[None, :], gpstime.GpsTime(gt.week[:, None], gt.sow[:, None]), x[:, None, :])
    rho = tx.geometric_range
    # range rate: the central difference of the light-time range over +-RANGE_RATE_STEP_S with
    # the receiver moved along its velocity, which keeps every term (the transmit-time factor
    # 1 - rho_dot / c and the Earth-rotation term add up to several mm/s) that a line-of-sight
    # projection of the two velocities would drop
    h = RANGE_RATE_STEP_S
    ends = []
    for sign in (-1.0, 1.0):
        te = gpstime.add_seconds(gpstime.GpsTime(gt.week[:, None], gt.sow[:, None]), sign * h)
        ends.append(orbit.light_time(nav, keys[None, :], te, (x + sign * h * v)[:, None, :]))
    rho_dot = (ends[1].geometric_range - ends[0].geometric_range) / (2.0 * h)
    # the satellite clock's rate likewise, relativistic term included (its rate reaches 1 mm/s
    # for e = 0.01, which af1 + 2 af2 dt alone would miss)
    ddt_sv = SPEED_OF_LIGHT * (ends[1].state.clock_bias_s - ends[0].state.clock_bias_s) / (2.0 * h)
    c = SPEED_OF_LIGHT
    dt_sv_m = c * tx.state.clock_bias_s
    rec = tx.state.record
    bgd = np.where(rec >= 0, nav["bgd_e5a_e1"].values[np.maximum(rec, 0)], np.nan) if "bgd_e5a_e1" in nav \
        else np.full(rec.shape, np.nan)
    # GLONASS FDMA channel of each satellite's record (NaN for the CDMA systems: not used)
    channel = np.where(rec >= 0, nav["glo_frequency_channel"].values[np.maximum(rec, 0)], np.nan) \
        if "glo_frequency_channel" in nav else np.full(rec.shape, np.nan)
    b = np.asarray(receiver_clock_bias_m, dtype=float)[:, None]
    bdot = np.asarray(receiver_clock_drift_m_s, dtype=float)[:, None]
    trk = np.asarray(tracked, dtype=bool) & np.isfinite(rho)
    refl = np.zeros((n_epoch, n_sv), bool) if reflected_only is None else np.asarray(reflected_only, dtype=bool)
    # arcs: a new one wherever tracking starts
    start = trk & ~np.vstack([np.zeros((1, n_sv), bool), trk[:-1]]) if new_arc is None else \
        trk & np.asarray(new_arc, dtype=bool)
    arc = np.cumsum(start, axis=0)                                # arc number per (epoch, sv)
    sys_of = np.array([s[:1] for s in svs])
    shape = (n_epoch, n_sv, n_sig)
    out = {k: np.full(shape, np.nan) for k in ("code", "phase", "doppler", "cn0", "ambiguity", "iono_delay",
                                               "code_noise")}
    lli = np.zeros(shape, dtype=np.int8)
    el = np.asarray(elevation_rad, dtype=float)
    iono_l1 = np.asarray(iono_l1_m, dtype=float)
    tropo = np.asarray(tropo_m, dtype=float)
    for j, s in enumerate(sig):
        cols = np.flatnonzero(sys_of == s.system)
        if cols.size == 0:
            continue
        f = s.carrier_hz(channel[:, cols]) if s.channel_step_hz else s.frequency_hz
        lam = c / f
        m = trk[:, cols]
        i_f = iono_l1[:, cols] * (F_L1_HZ / f) ** 2
        g = c * _group_delay_s(s, tx.state.tgd_s[:, cols], bgd[:, cols])
        cn0 = cn0_dbhz(s, el[:, cols], receiver, refl[:, cols])
        s_code, s_phase = tracking_sigmas(s, cn0, receiver)
        if ambiguities is not None or noise_draws is not None:
            n_amb = np.zeros(m.shape) if ambiguities is None else np.asarray(ambiguities, dtype=float)[:, cols, j]
            z_code, z_phase = (np.zeros(m.shape), np.zeros(m.shape)) if noise_draws is None else \
                (np.asarray(noise_draws)[0][:, cols, j], np.asarray(noise_draws)[1][:, cols, j])
        elif rng is None:
            z_code = z_phase = np.zeros(m.shape)
            n_amb = np.zeros(m.shape)
        else:
            z_code, z_phase = rng.standard_normal((2,) + m.shape)
            # one integer per (satellite, arc) of this signal
            draws = rng.integers(-ambiguity_range, ambiguity_range + 1, size=(int(arc.max()) + 1, cols.size))
            n_amb = np.take_along_axis(draws, arc[:, cols], axis=0).astype(float)
        geom = rho[:, cols] + b - dt_sv_m[:, cols] + tropo[:, cols]
        code = geom + g + i_f + s_code * z_code
        phase = (geom - i_f) / lam + n_amb + s_phase * z_phase
        dop = -(rho_dot[:, cols] + bdot - ddt_sv[:, cols]) / lam
        for name, val in (("code", code), ("phase", phase), ("doppler", dop), ("cn0", cn0),
                          ("ambiguity", n_amb), ("iono_delay", i_f), ("code_noise", s_code * z_code)):
            out[name][:, cols, j] = np.where(m, val, np.nan)
        lli[:, cols, j] = np.where(start[:, cols], 1, 0)
    attrs = {
        "code": ("m", "code pseudorange"), "phase": ("cycle", "carrier phase"),
        "doppler": ("Hz", "Doppler shift, positive for an approaching satellite"),
        "cn0": ("dB-Hz", "carrier-to-noise density ratio"), "ambiguity": ("cycle", "integer ambiguity of the arc"),
        "iono_delay": ("m", "first-order ionospheric code delay of the signal (phase advance of the same size)"),
        "code_noise": ("m", "code tracking noise (DLL thermal jitter at the C/N0) in the code"),
    }
    ds = xr.Dataset({k: (("epoch", "sv", "signal"), out[k], {"units": u, "long_name": ln}) for k, (u, ln) in attrs.items()},
                    coords={"epoch": t, "sv": svs, "signal": np.array(list(signals))})
    ds["lli"] = (("epoch", "sv", "signal"), lli, {"units": "1", "long_name": "RINEX loss of lock indicator (bit 0)"})
    ds["geometric_range"] = (("epoch", "sv"), rho, {"units": "m", "long_name": "geometric range incl. Earth rotation"})
    ds["range_rate"] = (("epoch", "sv"), rho_dot, {"units": "m/s", "long_name": "geometric range rate"})
    return ds
