"""FMCW waveform, antenna and processing parameters of a radar, with the resolutions and
ambiguities they imply, and the checks a scenario's values must pass.

:class:`RadarConfig` holds every parameter in SI units (the scenario gives some in the units
of data sheets: dBm, dBi, dB, degrees, converted once here). Its properties are the textbook
relations of a chirp-sequence FMCW radar (M. A. Richards, *Fundamentals of Radar Signal
Processing*, 2nd ed., McGraw-Hill 2014, sec. 4.6; S. Rao, "Introduction to mmWave sensing:
FMCW radars", TI mmWave training series, 2017):

- range resolution ``c / (2 B)``, with ``B`` the bandwidth swept while the ADC samples;
- maximum range ``f_s c / (2 S)`` with ``S = B / (N_s / f_s)`` the chirp slope: the farthest
  range whose beat frequency ``2 S R / c`` the complex ADC samples unambiguously (``= N_s``
  range cells);
- velocity resolution ``lambda / (2 N_c T_c)`` and maximum unambiguous velocity
  ``lambda / (4 T_c)``, with ``T_c`` the interval between chirps of one transmitter;
- angular resolution ``lambda / (N d)`` [rad] at boresight for a uniform virtual array of N
  elements spaced d (``2 / N`` for half-wavelength spacing).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from hifi.constants import SPEED_OF_LIGHT_M_S

#: One-way gain of the Gaussian main-lobe pattern at which a field of view may end [dB]: the
#: FoV's edge must lie where the transmit (and again the receive) pattern is at most 10 dB
#: down, i.e. |angle| <= 0.911 x the 3 dB beamwidth (:func:`pattern_gain`); wider, the
#: antenna does not illuminate the field the sensor claims.
FOV_EDGE_GAIN_DB = -10.0

#: Largest complex range-Doppler cube (range x chirps x virtual channels, complex128) a frame
#: may hold in memory [B]: 1 GiB. Fast mode keeps one such cube per frame; research mode two.
MAX_CUBE_BYTES = 2 ** 30

#: Windows of the range and Doppler FFTs (:func:`window`).
WINDOWS = ("hann", "hamming", "rect")

#: Virtual array layouts (:func:`virtual_array_lambda`).
ARRAYS = ("ula", "awr1843boost")


def window(name: str, n: int) -> np.ndarray:
    """FFT window of length ``n`` (periodic form, so its DTFT is a sum of shifted Dirichlet
    kernels: Harris, Proc. IEEE 66(1), 1978, sec. IV)."""
    m = np.arange(n)
    if name == "hann":
        return 0.5 - 0.5 * np.cos(2.0 * np.pi * m / n)
    if name == "hamming":
        return 0.54 - 0.46 * np.cos(2.0 * np.pi * m / n)
    return np.ones(n)


def window_coefficients(name: str) -> tuple:
    """``(a0, a1)`` of ``w_m = a0 - a1 cos(2 pi m / n)``."""
    return {"hann": (0.5, 0.5), "hamming": (0.54, 0.46), "rect": (1.0, 0.0)}[name]


def window_snr_loss(name: str, n: int) -> float:
    """Processing loss of a window [1]: ``(sum w)^2 / (n sum w^2)`` (Harris 1978, Table 1:
    0.667 = -1.76 dB for Hann, 0.735 = -1.34 dB for Hamming, 1 for the rectangle)."""
    w = window(name, n)
    return float(np.sum(w) ** 2 / (n * np.sum(w * w)))


def pattern_gain(angle_rad, beamwidth_rad):
    """One-way power pattern of an element, relative to boresight [1]: a Gaussian main lobe
    ``exp(-4 ln 2 (angle / beamwidth)^2)``, 0.5 at half the 3 dB beamwidth.

    Notes
    -----
    A Gaussian is the usual fit to a patch array's main lobe (Balanis, *Antenna Theory*, 4th
    ed., Wiley 2016, sec. 2.5 for the beamwidth definitions); it has no sidelobes, so a target
    far outside the field of view returns nothing rather than through a sidelobe.
    """
    a = np.asarray(angle_rad, dtype=float)
    return np.exp(-4.0 * np.log(2.0) * (a / beamwidth_rad) ** 2)


def virtual_array_lambda(layout: str, n_tx: int, n_rx: int, rx_spacing_lambda: float) -> np.ndarray:
    """Positions of the virtual elements in the sensor's y (left) and z (up) axes [wavelengths],
    shape (n_tx n_rx, 2).

    ``"ula"``: receivers ``rx_spacing_lambda`` apart along y, transmitters ``n_rx`` times that
    apart, so the virtual array is one uniform line of ``n_tx n_rx`` elements (TDM-MIMO).
    ``"awr1843boost"``: TI's AWR1843BOOST antenna (TI SWRU546, xWR1843 EVM user's guide,
    antenna figure; TI mmWave SDK 3 xwr18xx demo's virtual-antenna map): four receivers
    lambda / 2 apart; TX1 and TX3 2 lambda apart on the receivers' row, TX2 between them and
    lambda / 2 higher; virtual array: 8 elements on one row lambda / 2 apart, 4 more lambda / 2
    above, over the middle four (azimuth and elevation).
    """
    rx = np.arange(n_rx) * rx_spacing_lambda
    if layout == "awr1843boost":
        tx = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 0.0]])[:n_tx]
    else:
        tx = np.stack([np.arange(n_tx) * n_rx * rx_spacing_lambda, np.zeros(n_tx)], axis=1)
    y = (tx[:, None, 0] + rx[None, :]).ravel()
    z = np.repeat(tx[:, 1], n_rx)
    return np.stack([-y, z], axis=1)          # element k further to the left: -y (sensor y is left)


@dataclass(frozen=True)
class RadarConfig:
    """Every parameter of a radar model in SI units (see :data:`sensors.radar.model.Radar.PARAMS`
    for each one's meaning and source)."""

    carrier_hz: float
    bandwidth_hz: float
    chirp_duration_s: float
    chirp_interval_s: float
    chirps_per_frame: int
    adc_sample_rate_hz: float
    adc_samples: int
    tx_power_w: float
    tx_gain: float
    rx_gain: float
    noise_figure: float
    system_loss: float
    azimuth_beamwidth_rad: float
    elevation_beamwidth_rad: float
    fov_azimuth_rad: float
    fov_elevation_rad: float
    n_tx: int
    n_rx: int
    rx_spacing_lambda: float
    array: str
    window: str
    min_range_m: float
    max_range_m: float
    velocity_min_m_s: float
    velocity_max_m_s: float
    reports_elevation: bool

    @classmethod
    def from_params(cls, p) -> "RadarConfig":
        """From a model's resolved parameters (:meth:`sensors.radar.model.Radar.resolve`)."""
        lam = SPEED_OF_LIGHT_M_S / p["carrier_hz"]
        vmax = lam / (4.0 * p["chirp_interval_s"])
        vlo = p["velocity_min_m_s"] if p["velocity_min_m_s"] is not None else -vmax
        vhi = p["velocity_max_m_s"] if p["velocity_max_m_s"] is not None else vmax
        return cls(
            carrier_hz=p["carrier_hz"], bandwidth_hz=p["bandwidth_hz"], chirp_duration_s=p["chirp_duration_s"],
            chirp_interval_s=p["chirp_interval_s"], chirps_per_frame=int(p["chirps_per_frame"]),
            adc_sample_rate_hz=p["adc_sample_rate_hz"], adc_samples=int(p["adc_samples"]),
            tx_power_w=1e-3 * 10.0 ** (p["tx_power_dbm"] / 10.0), tx_gain=10.0 ** (p["tx_gain_dbi"] / 10.0),
            rx_gain=10.0 ** (p["rx_gain_dbi"] / 10.0), noise_figure=10.0 ** (p["noise_figure_db"] / 10.0),
            system_loss=10.0 ** (p["system_loss_db"] / 10.0),
            azimuth_beamwidth_rad=np.radians(p["azimuth_beamwidth_deg"]),
            elevation_beamwidth_rad=np.radians(p["elevation_beamwidth_deg"]),
            fov_azimuth_rad=np.radians(p["fov_azimuth_deg"]), fov_elevation_rad=np.radians(p["fov_elevation_deg"]),
            n_tx=int(p["n_tx"]), n_rx=int(p["n_rx"]), rx_spacing_lambda=p["rx_spacing_lambda"], array=p["array"],
            window=p["window"], min_range_m=p["min_range_m"], max_range_m=p["max_range_m"],
            velocity_min_m_s=vlo, velocity_max_m_s=vhi, reports_elevation=bool(p["reports_elevation"]))

    # -- derived --------------------------------------------------------------------------------
    @property
    def wavelength_m(self) -> float:
        """``c / f`` [m]."""
        return SPEED_OF_LIGHT_M_S / self.carrier_hz

    @property
    def sampling_time_s(self) -> float:
        """ADC sampling window of one chirp ``N_s / f_s`` [s]."""
        return self.adc_samples / self.adc_sample_rate_hz

    @property
    def slope_hz_s(self) -> float:
        """Chirp slope ``B / (N_s / f_s)`` [Hz/s]."""
        return self.bandwidth_hz / self.sampling_time_s

    @property
    def range_resolution_m(self) -> float:
        """``c / (2 B)`` [m]."""
        return SPEED_OF_LIGHT_M_S / (2.0 * self.bandwidth_hz)

    @property
    def max_unambiguous_range_m(self) -> float:
        """``f_s c / (2 S)`` [m]: the beat frequency of this range is the complex ADC's
        sample rate (= ``N_s`` range cells)."""
        return self.adc_sample_rate_hz * SPEED_OF_LIGHT_M_S / (2.0 * self.slope_hz_s)

    @property
    def velocity_resolution_m_s(self) -> float:
        """``lambda / (2 N_c T_c)`` [m/s]."""
        return self.wavelength_m / (2.0 * self.chirps_per_frame * self.chirp_interval_s)

    @property
    def max_unambiguous_velocity_m_s(self) -> float:
        """``lambda / (4 T_c)`` [m/s]: Doppler phase steps of +-pi between chirps."""
        return self.wavelength_m / (4.0 * self.chirp_interval_s)

    @property
    def virtual_positions_m(self) -> np.ndarray:
        """Virtual elements (n_virtual, 2): sensor y and z [m]."""
        return virtual_array_lambda(self.array, self.n_tx, self.n_rx, self.rx_spacing_lambda) * self.wavelength_m

    @property
    def n_virtual(self) -> int:
        return self.n_tx * self.n_rx

    @property
    def azimuth_resolution_rad(self) -> float:
        """Rayleigh resolution ``lambda / D`` of the virtual array's horizontal aperture
        ``D = N_row d`` at boresight [rad] (``N_row``: elements on its longest row)."""
        pos = self.virtual_positions_m
        row = pos[pos[:, 1] == 0.0, 0]
        d = self.rx_spacing_lambda * self.wavelength_m
        return self.wavelength_m / (row.size * d)

    @property
    def has_elevation(self) -> bool:
        """Whether the virtual array has a vertical extent (it measures elevation)."""
        return bool(np.ptp(self.virtual_positions_m[:, 1]) > 0.0)

    @property
    def observation_time_s(self) -> float:
        """Coherent integration time of one range-Doppler cell ``N_c N_s / f_s`` [s]; the
        noise bandwidth of a cell is its inverse."""
        return self.chirps_per_frame * self.sampling_time_s

    @property
    def frame_duration_s(self) -> float:
        """Span of one frame's chirps ``N_c T_c`` [s]."""
        return self.chirps_per_frame * self.chirp_interval_s

    def cube_bytes(self) -> int:
        """Bytes of one complex128 range x chirps x virtual-channel cube."""
        return 16 * self.adc_samples * self.chirps_per_frame * self.n_virtual

    def attrs(self) -> dict:
        """The derived resolutions and ambiguities as dataset attributes (SI, unit in the name)."""
        return {
            "carrier_hz": self.carrier_hz, "wavelength_m": self.wavelength_m, "bandwidth_hz": self.bandwidth_hz,
            "chirp_slope_hz_s": self.slope_hz_s, "chirp_duration_s": self.chirp_duration_s,
            "chirp_interval_s": self.chirp_interval_s, "chirps_per_frame": self.chirps_per_frame,
            "adc_sample_rate_hz": self.adc_sample_rate_hz, "adc_samples": self.adc_samples,
            "range_resolution_m": self.range_resolution_m,
            "max_unambiguous_range_m": self.max_unambiguous_range_m,
            "velocity_resolution_m_s": self.velocity_resolution_m_s,
            "max_unambiguous_velocity_m_s": self.max_unambiguous_velocity_m_s,
            "reported_velocity_min_m_s": self.velocity_min_m_s, "reported_velocity_max_m_s": self.velocity_max_m_s,
            "azimuth_resolution_rad": self.azimuth_resolution_rad, "n_virtual_channels": self.n_virtual,
            "virtual_array": self.array, "window": self.window,
            "window_snr_loss_db": 10.0 * np.log10(window_snr_loss(self.window, self.adc_samples)
                                                  * window_snr_loss(self.window, self.chirps_per_frame)),
            "tx_power_w": self.tx_power_w, "noise_figure_db": 10.0 * np.log10(self.noise_figure),
        }


def check(cfg: RadarConfig, given: dict) -> None:
    """Raise ``ValueError("param: reason")`` for parameters a radar cannot have.

    ``given`` holds the parameters the scenario gave (the others come from the preset); an
    error names the one the user most likely set.
    """
    def name(*keys):
        for k in keys:
            if given.get(k) is not None:
                return k
        return keys[0]

    if cfg.sampling_time_s > cfg.chirp_duration_s:
        k = name("adc_samples", "adc_sample_rate_hz", "chirp_duration_s")
        raise ValueError(f"{k}: the ADC's sampling window adc_samples / adc_sample_rate_hz = "
                         f"{cfg.sampling_time_s * 1e6:.4g} us is longer than the chirp ({cfg.chirp_duration_s * 1e6:.4g}"
                         " us); allowed: adc_samples <= adc_sample_rate_hz * chirp_duration_s")
    if cfg.chirp_interval_s < cfg.chirp_duration_s:
        raise ValueError(f"chirp_interval_s: must be >= chirp_duration_s ({cfg.chirp_duration_s:g} s): "
                         "a transmitter's chirps cannot overlap")
    if cfg.max_range_m > cfg.max_unambiguous_range_m:
        k = name("max_range_m", "adc_sample_rate_hz", "bandwidth_hz", "adc_samples")
        raise ValueError(f"{k}: sampling theorem violated: a target at max_range_m = {cfg.max_range_m:g} m beats at "
                         f"{2 * cfg.slope_hz_s * cfg.max_range_m / SPEED_OF_LIGHT_M_S / 1e6:.4g} MHz, above the complex "
                         f"ADC's {cfg.adc_sample_rate_hz / 1e6:.4g} MHz; allowed: max_range_m <= "
                         f"adc_sample_rate_hz c / (2 slope) = {cfg.max_unambiguous_range_m:.4g} m")
    if not cfg.min_range_m < cfg.max_range_m:
        raise ValueError(f"min_range_m: must be below max_range_m ({cfg.max_range_m:g} m): the unambiguous range "
                         f"interval would be empty or negative")
    if not cfg.velocity_min_m_s < cfg.velocity_max_m_s:
        raise ValueError(f"velocity_min_m_s: must be below velocity_max_m_s ({cfg.velocity_max_m_s:g} m/s): the "
                         "reported velocity interval would be empty or negative")
    edge = np.sqrt(np.log(10.0 ** (-FOV_EDGE_GAIN_DB / 10.0)) / (4.0 * np.log(2.0)))   # 0.911 beamwidths
    for axis in ("azimuth", "elevation"):
        fov = getattr(cfg, f"fov_{axis}_rad")
        bw = getattr(cfg, f"{axis}_beamwidth_rad")
        if fov / 2.0 > edge * bw:
            k = name(f"fov_{axis}_deg", f"{axis}_beamwidth_deg")
            raise ValueError(f"{k}: the field of view (+-{np.degrees(fov / 2):.4g} deg) is wider than the antenna "
                             f"pattern: allowed: fov_{axis}_deg <= {2 * edge:.3f} x {axis}_beamwidth_deg = "
                             f"{2 * edge * np.degrees(bw):.4g} deg (the pattern {FOV_EDGE_GAIN_DB:g} dB down at the edge)")
    if cfg.cube_bytes() > MAX_CUBE_BYTES:
        k = name("adc_samples", "chirps_per_frame", "n_tx", "n_rx")
        raise ValueError(f"{k}: the range-Doppler cube adc_samples x chirps_per_frame x n_tx x n_rx = "
                         f"{cfg.adc_samples} x {cfg.chirps_per_frame} x {cfg.n_virtual} needs "
                         f"{cfg.cube_bytes() / 2**30:.3g} GiB; allowed: at most {MAX_CUBE_BYTES / 2**30:g} GiB (16 B a cell)")


CONFIG_FIELDS = tuple(f.name for f in fields(RadarConfig))
