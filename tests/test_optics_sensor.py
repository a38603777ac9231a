"""EMVA 1288 sensor model: noise statistics, saturation, determinism, presets, Bayer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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

#: Quantisation noise of rounding to whole DN [DN^2] (EMVA 1288: sigma_q^2 = 1/12).
SIGMA_Q2 = 1.0 / 12.0
#: Width of the acceptance bands, in standard errors of the estimate.
Z = 5.0

_VALIDATION = Path(__file__).resolve().parents[1] / "validation" / "emva1288.py"


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
    # CONTRACTS.md: keyword construction and expose(mean_photons, exposure_s=, rng=).
    s = optics.SensorModel(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0,
                           gain_dn_per_e=0.1, bit_depth=12)
    mean_photons = np.full((4, 5), 1000.0)
    dn = s.expose(mean_photons, exposure_s=0.01, rng=np.random.default_rng(0))
    assert dn.shape == (4, 5)
    assert np.issubdtype(dn.dtype, np.unsignedinteger)


@pytest.mark.parametrize("mu_p", [0.0, 200.0, 5000.0])
def test_mean_and_temporal_variance_follow_emva_equations(mu_p):
    # Expected values: EMVA 1288 R3.1 eq. (6) mu_y = K (eta mu_p + mu_d) + offset and eq. (8)
    # sigma_y^2 = K^2 (sigma_d^2 + mu_I t + eta mu_p) + 1/12, analytic.
    s = SensorModel(quantum_efficiency=0.6, dark_noise_e=7.0, full_well_e=20000.0,
                    gain_dn_per_e=0.4, bit_depth=14, black_level_dn=100.0,
                    dark_current_e_per_s=300.0, dsnu_e=3.0, prnu=0.01)
    a, b = _flat_pair(s, mu_p)
    n = a.size
    expected_mean = s.mean_dn(mu_p, 0.01)
    expected_var = s.temporal_variance_dn2(mu_p, 0.01)
    # Mean: standard error sqrt(var/n) plus PRNU/DSNU spatial spread / sqrt(n); 5 sigma band.
    spatial = 0.4 * np.hypot(3.0, 0.01 * 0.6 * mu_p)
    tol_mean = 5 * np.sqrt((expected_var + spatial ** 2) / (2 * n))
    assert 0.5 * (a.mean() + b.mean()) == pytest.approx(expected_mean, abs=tol_mean)
    # Temporal variance from the difference image (EMVA 1288 R3.1 eq. (32)); the relative
    # standard error of a variance from n samples is sqrt(2/n) = 0.55 %; 5 sigma -> 2.8 %.
    temporal_var = 0.5 * np.var(a - b)
    assert temporal_var == pytest.approx(expected_var, rel=5 * np.sqrt(2 / n))


def test_dark_current_doubles_per_doubling_temperature():
    # EMVA 1288 R3.1 section 3.2: mu_I = mu_I,ref 2^((T - T_ref)/T_d), analytic.
    base = dark_current_mean_e(10.0, 2.0, 300.0, reference_temperature_k=300.0,
                               doubling_temperature_k=7.0)
    hot = dark_current_mean_e(10.0, 2.0, 314.0, reference_temperature_k=300.0,
                              doubling_temperature_k=7.0)
    assert base == pytest.approx(20.0, rel=1e-12)  # 10 e-/s * 2 s
    assert hot == pytest.approx(80.0, rel=1e-12)   # two doublings


def test_saturation_clips_at_full_well_and_adc_range():
    # Full well 1000 e- at K = 0.5 DN/e- -> 500 DN + 10 DN offset; ADC range 0..255 (8 bit).
    s = SensorModel(quantum_efficiency=1.0, dark_noise_e=0.0, full_well_e=1000.0,
                    gain_dn_per_e=0.5, bit_depth=10, black_level_dn=10.0)
    dn = s.expose(np.full((64, 64), 1e6), 0.01, np.random.default_rng(0))
    assert np.all(dn == 510)  # analytic: K * full_well + offset, no noise left
    s8 = SensorModel(quantum_efficiency=1.0, dark_noise_e=0.0, full_well_e=1000.0,
                     gain_dn_per_e=0.5, bit_depth=8)
    dn8 = s8.expose(np.full((8, 8), 1e6), 0.01, np.random.default_rng(0))
    assert np.all(dn8 == 255)  # ADC clip at 2**8 - 1
    assert dn8.dtype == np.uint16


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
    # A uniform grey scene through RGGB mosaic + bilinear demosaic stays grey (analytic), and
    # the noise-free sensor maps it to K * eta * mu_p + offset DN in every channel (offset: the
    # default black level, ceil(6 sqrt(1/12)) = 2 DN without read noise).
    grey = np.full((16, 20, 3), 0.37)
    rgb = optics.demosaic_bilinear(optics.mosaic(grey))
    np.testing.assert_allclose(rgb, grey, rtol=0, atol=1e-12)
    s = SensorModel(quantum_efficiency=0.5, dark_noise_e=0.0, full_well_e=1e9,
                    gain_dn_per_e=0.01, bit_depth=16, bayer=True)
    # Poisson noise is still there: 1e6 photons -> 5e5 e- +- 707 -> 5000 DN +- 7 DN.
    dn = s.expose(np.full((16, 20, 3), 1e6), 0.01, np.random.default_rng(3))
    assert dn.shape == (16, 20, 3)
    assert np.abs(dn.astype(float).mean(axis=(0, 1)) - 5002.0).max() < 3.0  # 5 sigma of mean


@pytest.mark.parametrize("dark_noise_e", [
    8.0,   # CONTRACTS.md example
    9.0,   # issue 10's report: 5.1 e- recovered for a set 9 e- with the old 0 DN default
])
def test_default_black_level_keeps_the_emva_dark_noise_measurement_unbiased(dark_noise_e):
    # Regression (issue 10): a sensor built with the documented arguments only. The EMVA 1288
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
    contracts = optics.SensorModel(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0,
                                   gain_dn_per_e=0.1, bit_depth=12)
    assert contracts.black_level_dn == 6.0                 # ceil(6 x 0.8505) = ceil(5.10)
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
