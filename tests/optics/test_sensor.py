"""EMVA 1288 sensor model: noise statistics, saturation, black level, determinism, presets, Bayer.

Expected values are written out in each test from the linear camera model of EMVA Standard
1288, Release 4.0 Linear (2021), section 2 "Sensitivity, Linearity, and Noise" (linear signal
model, noise model, signal-to-noise ratio, saturation) and section 3 "Dark Current", in the
standard's symbols:

    mu_e = eta mu_p                                   photo-electrons (eta QE, mu_p photons)
    mu_d = dark_current t_exp                         dark electrons (at T = T_ref)
    mu_y.dark = black level + K mu_d                  [DN], K the overall system gain [DN/e-]
    mu_y = mu_y.dark + K eta mu_p                     [DN]
    sigma_y^2 = K^2 (sigma_d0^2 + mu_d + mu_e) + sigma_q^2,   sigma_q^2 = 1/12 DN^2
    SNR = eta mu_p / sqrt(sigma_d0^2 + mu_d + sigma_q^2 / K^2 + eta mu_p)

(R3.1 numbers the same equations (1)-(11); section and equation numbers of R4.0 are not
quoted here because they were not checked against the standard's text.) Nothing below takes
an expected value from ``SensorModel.mean_dn`` / ``temporal_variance_dn2`` or another method
of the code under test. Tolerances are in DN, DN^2 or e- and come from the number of pixels
averaged: the mean of N pixels of variance sigma^2 has standard error sigma / sqrt(N); a
variance from a difference image of N pixels has relative standard error sqrt(2 / N).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import optics
from optics.sensor import (
    PRESETS,
    SensorModel,
    clip_full_well,
    dark_current_mean_e,
    emva_figures,
)

from conftest import REPO_ROOT

#: Quantisation noise of rounding to whole DN [DN^2] (EMVA 1288: sigma_q^2 = 1/12).
SIGMA_Q2 = 1.0 / 12.0
#: Width of the acceptance bands, in standard errors of the estimate (a false alarm in
#: 1 in 1.7 million runs per check).
Z = 5.0

_VALIDATION = REPO_ROOT / "validation" / "emva1288.py"


def _validation():
    spec = importlib.util.spec_from_file_location("hifi_validation_emva1288", _VALIDATION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flat_pair(sensor, mu_p, shape=(256, 256), exposure_s=0.01, seed=1):
    rng = np.random.default_rng(seed)
    a = sensor.expose(np.full(shape, mu_p), exposure_s, rng).astype(float)
    b = sensor.expose(np.full(shape, mu_p), exposure_s, rng).astype(float)
    return a, b


def test_contract_signature_and_output_type():
    # The documented API: keyword construction and expose(mean_photons, exposure_s=, rng=).
    s = optics.SensorModel(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0,
                           gain_dn_per_e=0.1, bit_depth=12)
    mean_photons = np.full((4, 5), 1000.0)
    dn = s.expose(mean_photons, exposure_s=0.01, rng=np.random.default_rng(0))
    assert dn.shape == (4, 5)
    assert np.issubdtype(dn.dtype, np.unsignedinteger)


@pytest.mark.parametrize("mu_p", [0.0, 200.0, 5000.0])
def test_mean_and_temporal_variance_follow_emva_equations(mu_p):
    eta, sigma_d0, k, black = 0.6, 7.0, 0.4, 100.0
    dark_current, t_exp, dsnu, prnu = 300.0, 0.01, 3.0, 0.01
    s = SensorModel(quantum_efficiency=eta, dark_noise_e=sigma_d0, full_well_e=20000.0,
                    gain_dn_per_e=k, bit_depth=14, black_level_dn=black,
                    dark_current_e_per_s=dark_current, dsnu_e=dsnu, prnu=prnu)
    a, b = _flat_pair(s, mu_p, exposure_s=t_exp)
    n = a.size
    # EMVA 1288 linear model, written out (module docstring):
    mu_d = dark_current * t_exp                                   # 3 e-
    mu_e = eta * mu_p
    expected_mean = black + k * mu_d + k * mu_e                   # mu_y = mu_y.dark + K eta mu_p
    expected_var = k ** 2 * (sigma_d0 ** 2 + mu_d + mu_e) + SIGMA_Q2
    # Mean of 2 n pixel values: temporal noise sqrt(sigma_y^2 / 2n), plus the sample mean of
    # this camera's DSNU and PRNU maps (n values each): K sqrt(DSNU^2 + (PRNU mu_e)^2) / sqrt(n).
    # At mu_p = 5000: sqrt(1300 / 131072) + 0.4 * 30.1 / 256 = 0.10 + 0.05 DN -> 5 sigma 0.6 DN.
    spatial_dn = k * np.hypot(dsnu, prnu * mu_e)
    tol_mean = Z * (np.sqrt(expected_var / (2 * n)) + spatial_dn / np.sqrt(n))
    assert 0.5 * (a.mean() + b.mean()) == pytest.approx(expected_mean, abs=tol_mean)
    # Temporal variance from the difference image (EMVA two-frame method; the fixed pattern
    # cancels): relative standard error sqrt(2 / n) = 0.55 %, 5 sigma = 2.8 %.
    diff = (a - a.mean()) - (b - b.mean())
    temporal_var = 0.5 * np.mean(diff * diff)
    assert temporal_var == pytest.approx(expected_var, rel=Z * np.sqrt(2 / n))


def test_snr_follows_the_emva_formula():
    # SNR = eta mu_p / sqrt(sigma_d0^2 + mu_d + sigma_q^2 / K^2 + eta mu_p), the EMVA 1288
    # signal-to-noise ratio; measured as (mu_y - mu_y.dark) / sigma_y with mu_y.dark written
    # out (black + K mu_d). With eta mu_p = 150 e-, sigma_d0 = 9 e-, mu_d = 20 e-, K = 0.25:
    # SNR = 150 / sqrt(81 + 20 + 1.333 + 150) = 150 / 15.885 = 9.4429 (analytic).
    eta, sigma_d0, k, black, mu_p = 0.5, 9.0, 0.25, 50.0, 300.0
    dark_current, t_exp = 2000.0, 0.01
    s = SensorModel(quantum_efficiency=eta, dark_noise_e=sigma_d0, full_well_e=20000.0,
                    gain_dn_per_e=k, bit_depth=12, black_level_dn=black,
                    dark_current_e_per_s=dark_current)
    a, b = _flat_pair(s, mu_p, shape=(512, 512), exposure_s=t_exp, seed=11)
    n = a.size
    mu_d = dark_current * t_exp
    expected = eta * mu_p / np.sqrt(sigma_d0 ** 2 + mu_d + SIGMA_Q2 / k ** 2 + eta * mu_p)
    assert expected == pytest.approx(9.4429, abs=1e-4)
    diff = (a - a.mean()) - (b - b.mean())
    sigma_y = np.sqrt(0.5 * np.mean(diff * diff))
    snr = (0.5 * (a.mean() + b.mean()) - (black + k * mu_d)) / sigma_y
    # sigma_y from n pixels: relative standard error sqrt(1 / (2 n)) = 0.14 %; the mean's error
    # (sigma_y / sqrt(2 n) = 0.006 DN on a 37.5 DN signal) adds 0.016 %. 5 sigma -> 0.8 %.
    rel_se = np.sqrt(1 / (2 * n)) + 1 / np.sqrt(2 * n) / expected
    assert snr == pytest.approx(expected, rel=Z * rel_se)


def test_dark_current_doubles_per_doubling_temperature():
    # EMVA 1288 section 3 (dark current): mu_I = mu_I,ref 2^((T - T_ref)/T_d), analytic.
    base = dark_current_mean_e(10.0, 2.0, 300.0, reference_temperature_k=300.0,
                               doubling_temperature_k=7.0)
    hot = dark_current_mean_e(10.0, 2.0, 314.0, reference_temperature_k=300.0,
                              doubling_temperature_k=7.0)
    assert base == pytest.approx(20.0, rel=1e-12)  # 10 e-/s * 2 s
    assert hot == pytest.approx(80.0, rel=1e-12)   # two doublings


def test_dark_signal_is_linear_in_exposure_with_the_black_level_as_intercept():
    # EMVA 1288 section 3: mu_y.dark(t) = black + K mu_I t, the black level fixed whatever the
    # exposure (also the default one). K = 0.1, mu_I = 5000 e-/s: 0 / 50 / 100 e- at
    # 0 / 10 / 20 ms -> black + 0 / 5 / 10 DN. Default black for sigma_d0 = 8 e-:
    # ceil(6 sqrt(0.1^2 8^2 + 1/12)) = ceil(5.10) = 6 DN.
    s = SensorModel(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0,
                    gain_dn_per_e=0.1, bit_depth=12, dark_current_e_per_s=5000.0)
    rng = np.random.default_rng(4)
    dark = np.zeros((512, 512))
    means = [s.expose(dark, t, rng).astype(float).mean() for t in (0.0, 0.01, 0.02)]
    # per-pixel variance <= 0.1^2 (64 + 100) + 1/12 = 1.72 DN^2 -> standard error of a mean of
    # 262144 pixels 0.0026 DN, 5 sigma 0.013 DN.
    np.testing.assert_allclose(means, [6.0, 11.0, 16.0], atol=Z * np.sqrt(1.72 / dark.size))


def test_saturation_clips_at_full_well_and_adc_range():
    # Full well 1000 e- at K = 0.5 DN/e- -> 500 DN + 10 DN offset, inside a 10-bit ADC
    # (0..1023); no read noise, so every pixel sits exactly there (analytic).
    s = SensorModel(quantum_efficiency=1.0, dark_noise_e=0.0, full_well_e=1000.0,
                    gain_dn_per_e=0.5, bit_depth=10, black_level_dn=10.0)
    dn = s.expose(np.full((64, 64), 1e6), 0.01, np.random.default_rng(0))
    assert np.all(dn == 510)
    # The same charge into an 8-bit ADC: 500 DN + offset > 255, clipped at 2**8 - 1.
    s8 = SensorModel(quantum_efficiency=1.0, dark_noise_e=0.0, full_well_e=1000.0,
                     gain_dn_per_e=0.5, bit_depth=8)
    dn8 = s8.expose(np.full((8, 8), 1e6), 0.01, np.random.default_rng(0))
    assert np.all(dn8 == 255)
    assert dn8.dtype == np.uint16


def test_temporal_variance_above_full_well_is_read_noise_only():
    # Past saturation the charge is pinned at the full well; the read noise is added after the
    # clip, so mu_y = black + K F and sigma_y^2 = K^2 sigma_d0^2 + 1/12 (the standard's model
    # with mu_e fixed): 20 + 0.2 * 5000 = 1020 DN, 0.04 * 36 + 1/12 = 1.5233 DN^2.
    k, sigma_d0, full_well, black = 0.2, 6.0, 5000.0, 20.0
    s = SensorModel(quantum_efficiency=0.8, dark_noise_e=sigma_d0, full_well_e=full_well,
                    gain_dn_per_e=k, bit_depth=12, black_level_dn=black)
    a, b = _flat_pair(s, 1e6, seed=5)
    n = a.size
    var = k ** 2 * sigma_d0 ** 2 + SIGMA_Q2
    assert 0.5 * (a.mean() + b.mean()) == pytest.approx(black + k * full_well,
                                                        abs=Z * np.sqrt(var / (2 * n)))
    diff = (a - a.mean()) - (b - b.mean())
    assert 0.5 * np.mean(diff * diff) == pytest.approx(var, rel=Z * np.sqrt(2 / n))


@pytest.mark.parametrize("dark_noise_e", [
    8.0,   # SensorModel()'s default
    9.0,   # reported 2026-11-23: 5.1 e- recovered for a set 9 e- with the old 0 DN default
])
def test_default_black_level_keeps_the_emva_dark_noise_measurement_unbiased(dark_noise_e):
    # Regression (2026-11-23): a sensor built with the documented arguments only. The EMVA 1288
    # dark-noise measurement -- two dark frames, temporal variance from their difference,
    # sigma_d = sqrt(sigma_y.dark^2 - 1/12) / K (validation/emva1288.py) -- must recover the set
    # sigma_d0. With the old default offset of 0 DN half of the read noise was clipped at 0 DN
    # and this very test recovered 4.36 e- (set 8) and 4.98 e- (set 9).
    k = 0.1
    s = optics.SensorModel(quantum_efficiency=0.5, dark_noise_e=dark_noise_e,
                           full_well_e=6000.0, gain_dn_per_e=k, bit_depth=12)
    rng = np.random.default_rng(10)
    dark = np.zeros((512, 512))
    a, b = (s.expose(dark, exposure_s=0.01, rng=rng) for _ in range(2))
    sigma_d = _validation().dark_noise_from_pair(a, b, k)
    # sigma_y.dark^2 = K^2 sigma_d0^2 + 1/12 from n = 262144 pixels has relative standard error
    # sqrt(2 / n) = 0.28 %; sigma_d = sqrt(var - 1/12) / K then has standard error
    # var sqrt(2 / n) / (2 K^2 sigma_d0) = 0.012 e- (set 8) / 0.013 e- (set 9); 5 sigma.
    var = k ** 2 * dark_noise_e ** 2 + SIGMA_Q2
    tol_e = Z * var * np.sqrt(2 / a.size) / (2 * k ** 2 * dark_noise_e)
    assert tol_e < 0.07                                    # 0.8 % of sigma_d0
    assert sigma_d == pytest.approx(dark_noise_e, abs=tol_e)
    # and no dark pixel is at the 0 DN clip (expected count 262144 x 5e-11, analytic tail)
    assert np.count_nonzero(a == 0) == 0


def test_default_black_level_rule_and_explicit_values():
    # Rule: b = ceil(6 sqrt(K^2 (sigma_d0^2 + DSNU^2) + 1/12)) [DN], written out.
    default_camera = optics.SensorModel(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0,
                                        gain_dn_per_e=0.1, bit_depth=12)
    assert default_camera.black_level_dn == 6.0            # ceil(6 x 0.8505) = ceil(5.10)
    with_dsnu = SensorModel(dark_noise_e=8.0, gain_dn_per_e=0.1, dsnu_e=6.0)
    assert with_dsnu.black_level_dn == 7.0        # ceil(6 x sqrt(1.0 + 1/12)) = ceil(6.25)
    assert SensorModel(dark_noise_e=0.0).black_level_dn == 2.0   # ceil(6 / sqrt(12)) = ceil(1.73)
    # The default does not depend on the exposure or the dark current (a camera setting).
    assert SensorModel(dark_current_e_per_s=1e5).black_level_dn == 6.0
    # Presets without a data-sheet black level use the rule:
    # Basler K = 0.5, sigma_d0 = 13 e-: ceil(6 x 6.506) = 40 DN; GS3 K = 0.6, 8.28 e-:
    # ceil(6 x 4.976) = 30 DN; IMX174 K = 0.1225, 6.83 e-: ceil(6 x 0.885) = 6 DN.
    assert [SensorModel.from_preset(name).black_level_dn for name in
            ("basler_pia2400_17gm", "pointgrey_gs3_pge_50s5m", "pointgrey_grasshopper3_imx174")
            ] == [40.0, 30.0, 6.0]
    # An explicit value wins, 0 included.
    assert SensorModel(black_level_dn=0.0).black_level_dn == 0.0
    assert SensorModel(black_level_dn=100.0).black_level_dn == 100.0
    basler_64 = SensorModel.from_preset("basler_pia2400_17gm", black_level_dn=64.0)
    assert basler_64.black_level_dn == 64.0


def test_blooming_spills_charge_along_columns_and_conserves_it_inside():
    e = np.zeros((21, 3))
    e[10, 1] = 5000.0
    out = clip_full_well(e, 1000.0, blooming=True)
    assert out.max() <= 1000.0
    assert out[:, 1].sum() == pytest.approx(5000.0)  # charge conserved (streak inside array)
    assert out[:, 0].sum() == 0.0 and out[:, 2].sum() == 0.0  # vertical streak only
    no_bloom = clip_full_well(e, 1000.0, blooming=False)
    assert no_bloom.sum() == 1000.0


def test_deterministic_for_a_seed_and_fixed_pattern_independent_of_frame_rng():
    s = SensorModel(prnu=0.02, dsnu_e=5.0, pattern_seed=42, black_level_dn=50.0)
    photons = np.full((32, 32), 3000.0)
    a = s.expose(photons, 0.01, np.random.default_rng(7))
    b = SensorModel(prnu=0.02, dsnu_e=5.0, pattern_seed=42, black_level_dn=50.0).expose(
        photons, 0.01, np.random.default_rng(7))
    assert a.tobytes() == b.tobytes()  # same seed, same bytes
    # The fixed pattern is a property of the camera seed, not of the frame generator.
    p1 = s.fixed_pattern((32, 32)).prnu_gain
    p2 = SensorModel(prnu=0.02, dsnu_e=5.0, pattern_seed=42).fixed_pattern((32, 32)).prnu_gain
    p3 = SensorModel(prnu=0.02, dsnu_e=5.0, pattern_seed=43).fixed_pattern((32, 32)).prnu_gain
    assert np.array_equal(p1, p2) and not np.array_equal(p1, p3)


def test_bad_parameters_raise_with_name_and_value():
    with pytest.raises(ValueError, match=r"gain_dn_per_e = -1\.0"):
        SensorModel(gain_dn_per_e=-1.0)
    with pytest.raises(ValueError, match=r"bit_depth = 12\.5"):
        SensorModel(bit_depth=12.5)
    with pytest.raises(ValueError, match="allowed: \\['basler_pia2400_17gm'"):
        SensorModel.from_preset("basler")
    with pytest.raises(ValueError, match=r"black_level_dn = -1\.0"):
        SensorModel(black_level_dn=-1.0)
    # A 2-bit ADC (0..3 DN) has no room above the 6 DN default offset: say so, do not clip.
    with pytest.raises(ValueError, match=r"bit_depth = 2: the default black level"):
        SensorModel(bit_depth=2)
    assert SensorModel(bit_depth=2, black_level_dn=0.0).max_dn == 3   # explicit offset is fine


@pytest.mark.parametrize("name, snr_max_db", [
    ("basler_pia2400_17gm", 38.4),            # Basler piA2400-17gm EMVA 1288 data sheet
    ("pointgrey_gs3_pge_50s5m", 37.71),       # Point Grey GS3-PGE-50S5M EMVA data
    ("pointgrey_grasshopper3_imx174", 45.12),  # Point Grey Grasshopper3 IMX174 EMVA data
])
def test_preset_snr_max_matches_datasheet(name, snr_max_db):
    # SNR_max = 20 log10 sqrt(mu_e,sat), EMVA 1288 R3.1 eq. (16); data-sheet value within 0.2 dB.
    s = SensorModel.from_preset(name)
    assert s.figures().snr_max_db == pytest.approx(snr_max_db, abs=0.2)
    assert PRESETS[name]["datasheet"]["snr_max_db"] == snr_max_db


def test_emva_figures_reproduce_published_dynamic_ranges():
    # IMX174: 73 dB / 12.1 bit (Point Grey data), from QE 0.77, 6.83 e-, 32691 e-.
    f = emva_figures(quantum_efficiency=0.77, dark_noise_e=6.83, saturation_e=32691.0)
    assert f.dynamic_range_db == pytest.approx(73.0, abs=0.2)
    # piA2400-17gm: 9.1 bit with Basler's definition log2(mu_e,sat / sigma_d0).
    f = emva_figures(quantum_efficiency=0.47, dark_noise_e=13.0, saturation_e=7000.0)
    assert f.dynamic_range_sigma_d_bit == pytest.approx(9.1, abs=0.05)
    # GS3-PGE-50S5M: 9.41 bit (Point Grey data); 0.2 dB = 0.033 bit.
    f = emva_figures(quantum_efficiency=0.57, dark_noise_e=8.28, saturation_e=5903.0)
    assert f.dynamic_range_bit == pytest.approx(9.41, abs=0.2 / (20 * np.log10(2)))


def test_bayer_round_trip_on_grey_image():
    # A uniform grey scene through RGGB mosaic + bilinear demosaic stays grey (analytic).
    grey = np.full((16, 20, 3), 0.37)
    rgb = optics.demosaic_bilinear(optics.mosaic(grey))
    np.testing.assert_allclose(rgb, grey, rtol=0, atol=1e-12)
    # The noise-free-readout sensor maps mu_p to mu_y = black + K eta mu_p in every channel:
    # K eta mu_p = 0.01 x 0.5 x 1e6 = 5000 DN, default black ceil(6 sqrt(1/12)) = 2 DN.
    eta, k, mu_p = 0.5, 0.01, 1e6
    s = SensorModel(quantum_efficiency=eta, dark_noise_e=0.0, full_well_e=1e9,
                    gain_dn_per_e=k, bit_depth=16, bayer=True)
    dn = s.expose(np.full((16, 20, 3), mu_p), 0.01, np.random.default_rng(3))
    assert dn.shape == (16, 20, 3)
    expected = 2.0 + k * eta * mu_p
    # Shot noise: sqrt(5e5) e- = 7.07 DN per raw pixel. A demosaiced channel's image mean is a
    # weighted mean of that channel's raw pixels, 80 for R and B (a quarter of 16 x 20):
    # standard error 7.07 / sqrt(80) = 0.79 DN, 5 sigma 3.95 DN.
    tol = Z * k * np.sqrt(eta * mu_p) / np.sqrt(16 * 20 / 4)
    assert np.abs(dn.astype(float).mean(axis=(0, 1)) - expected).max() < tol
