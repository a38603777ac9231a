"""Radar presets: every parameter of :class:`sensors.radar.model.Radar` for a real device, each
value with its source.

Sources
-------
ARS408 : Continental Engineering Services, "ARS 408-21 Premium Long Range Radar Sensor 77 GHz",
    technical data sheet (2017): 76-77 GHz; ranges 0.20-250 m (far scan) and 0.20-70 m (near
    scan); azimuth field of view +-9 deg (far) and +-60 deg (near); elevation field 14 deg (far)
    and 20 deg (near); range resolution 1.79 m (far) and 0.39 m (near); azimuth resolution
    1.6 deg (far) and 3.2 deg at 0 deg (near); velocity range -400 to +200 km/h; velocity
    resolution 0.37 km/h (far) and 0.43 km/h (near); no elevation measurement (nuScenes' radar
    points have z = 0). The sheet could not be re-read when these presets were written (the
    search tool did not return it): the values above are as recalled from it and should be
    checked against the sheet. Continental publishes no chirp parameters, transmit power or
    antenna gains: the waveform below is one that gives the sheet's resolutions and ranges
    (derivations beside each value), the power and gains are assumptions, each marked.
AWR1843 : Texas Instruments mmWave SDK 3.x, xwr18xx out-of-box demo, profile_2d.cfg ("best range
    resolution": ``profileCfg 0 77 267 7 57.14 0 0 70 1 256 5209 0 0 30``, ``frameCfg 0 2 16 0
    100 1 0``, ``cfarCfg -1 0 2 8 4 3 0 15 1``; its header: range resolution 0.044 m, maximum
    unambiguous range 9.02 m, maximum radial velocity 1 m/s, velocity resolution 0.13 m/s, frame
    100 ms); TI AWR1843 data sheet (SWRS211): 12 dBm transmit power, 15 dB receiver noise figure
    (77-81 GHz); AWR1843BOOST: 3 TX / 4 RX, 12 virtual channels (TI SWRU546). The EVM's antenna
    gain and beamwidths (10.5 dBi; +-50 deg azimuth, +-20 deg elevation fields) are as recalled
    from TI's EVM user's guide, not re-read.
"""

from __future__ import annotations

_KMH = 1.0 / 3.6
_C = 299_792_458.0


def _ars408(scan: str) -> dict:
    far = scan == "far"
    # Range resolution c / 2B = 1.79 m (far) / 0.39 m (near) -> B = 83.74 / 384.3 MHz.
    bandwidth = _C / (2.0 * (1.79 if far else 0.39))
    # Velocity resolution lambda / (2 N Tc) = 0.37 / 0.43 km/h with N = 256 chirps at 76.5 GHz
    # -> Tc = 74.5 / 64.1 us (assumed N; the sheet gives only the resolution).
    lam = _C / 76.5e9
    tc = lam / (2.0 * 256 * (0.37 if far else 0.43) * _KMH)
    return {
        "carrier_hz": 76.5e9,                 # centre of the 76-77 GHz band (data sheet)
        "bandwidth_hz": bandwidth,
        "chirp_interval_s": tc,
        "chirp_duration_s": 60e-6 if far else 56e-6,    # assumed: the ramp within Tc holding the ADC window
        "chirps_per_frame": 256,              # assumed (see Tc)
        "adc_sample_rate_hz": 5e6,            # assumed: 256 complex samples in 51.2 us
        "adc_samples": 256,                   # -> 256 range cells: 458 m (far) / 99.8 m (near) unambiguous
        "tx_power_dbm": 12.0,                 # assumed: a 77 GHz MMIC's output (as the AWR1843's 12 dBm)
        # assumed: directivity of the element's beam (Kraus 41253 / (az deg x el deg)) less 2 dB
        "tx_gain_dbi": 19.7 if far else 13.0,
        "rx_gain_dbi": 19.7 if far else 13.0,
        "noise_figure_db": 12.0,              # assumed: a 77 GHz SiGe receiver
        "system_loss_db": 3.0,                # assumed: radome and feed losses
        # Element beamwidths: far 20 deg (assumed, covering the +-9 deg field at -2.4 dB); near
        # 65.9 deg, so the one-way pattern is 10 dB down at +-60 deg: two-way -20 dB, range x 0.32,
        # the sheet's 70 m at 0 deg falling to about 20 m at +-60 deg.
        "azimuth_beamwidth_deg": 20.0 if far else 65.9,
        "elevation_beamwidth_deg": 14.0 if far else 20.0,   # the sheet's elevation fields as 3 dB widths
        "fov_azimuth_deg": 18.0 if far else 120.0,
        "fov_elevation_deg": 14.0 if far else 20.0,
        # Virtual arrays giving the sheet's azimuth resolution lambda / (N d): far 12 elements
        # 2.98 lambda apart (1.6 deg; grating lobes at +-19.6 deg, outside the field), near 36
        # elements lambda / 2 apart (3.18 deg, no grating lobe). Assumed layouts.
        "n_tx": 2 if far else 3,
        "n_rx": 6 if far else 12,
        "rx_spacing_lambda": 1.0 / (12 * 0.0279253) if far else 0.5,
        "array": "ula",
        "window": "hann",                     # assumed
        "min_range_m": 0.20,
        "max_range_m": 250.0 if far else 70.0,
        # The sheet's velocity range -400 .. +200 km/h, read as closing speeds up to 400 km/h
        # (oncoming traffic) and opening speeds up to 200 km/h, in hifi's sign (positive away).
        "velocity_min_m_s": -400.0 * _KMH,
        "velocity_max_m_s": 200.0 * _KMH,
        "reports_elevation": False,
        "cfar_pfa": 1e-6,                     # assumed
        "cfar_mode": "caso",                  # assumed, as TI's cfarCfg
        "cfar_training_cells": 8,             # assumed, as TI's cfarCfg
        "cfar_guard_cells": 4,
        "max_detections": 250,                # assumed: the order of the ARS408's cluster list
    }


_AWR1843 = {
    # Sweep centre over the ADC window: 77 GHz + 70 MHz/us x (7 us ADC start + 49.15 us / 2).
    "carrier_hz": 77e9 + 70e12 * (7e-6 + 0.5 * 256 / 5.209e6),
    "bandwidth_hz": 70e12 * 256 / 5.209e6,    # slope x sampling window = 3.44 GHz -> 0.0436 m
    "chirp_duration_s": 57.14e-6,              # rampEndTime
    "chirp_interval_s": 3 * (267e-6 + 57.14e-6),   # (idle + ramp) x 3 TDM transmitters
    "chirps_per_frame": 16,                    # frameCfg loops
    "adc_sample_rate_hz": 5.209e6,
    "adc_samples": 256,
    "tx_power_dbm": 12.0,
    "tx_gain_dbi": 10.5,
    "rx_gain_dbi": 10.5,
    "noise_figure_db": 15.0,
    "system_loss_db": 0.0,                     # no radome on the EVM
    "azimuth_beamwidth_deg": 110.0,            # the +-50 deg field at -10 dB one way (FOV_EDGE_GAIN_DB)
    "elevation_beamwidth_deg": 44.0,           # the +-20 deg field at -10 dB one way
    "fov_azimuth_deg": 100.0,
    "fov_elevation_deg": 40.0,
    "n_tx": 3,
    "n_rx": 4,
    "rx_spacing_lambda": 0.5,
    "array": "awr1843boost",
    "window": "hann",                          # assumed
    "min_range_m": 0.35,                       # calibDcRangeSig removes range bins up to 8 (0.35 m)
    "max_range_m": 9.02,                       # the profile's stated maximum (80 % of the IF band)
    "velocity_min_m_s": None,                  # +-lambda / (4 Tc), folded as the FFT folds it
    "velocity_max_m_s": None,
    "reports_elevation": True,
    "cfar_pfa": 1e-6,                          # assumed (TI thresholds at a fixed 15 dB)
    "cfar_mode": "caso",                       # cfarCfg averageMode 2: cell averaging, smallest of
    "cfar_training_cells": 8,                  # cfarCfg noiseWin
    "cfar_guard_cells": 4,                     # cfarCfg guardLen
    "max_detections": 250,                     # assumed
}

#: Preset name -> every parameter (SI, or the data sheet's unit where the name says so).
PRESETS = {
    "ars408_far": _ars408("far"),
    "ars408_near": _ars408("near"),
    "awr1843": _AWR1843,
}
