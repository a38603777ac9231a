"""Atmosphere models against RTKLIB's published unit-test values (SOURCES.md, t_atmos.c)."""

import numpy as np
import pytest

from gnss import atmosphere

D = np.radians
# RTKLIB test/utest/t_atmos.c: receiver at 35 deg N, 140 deg E, 100 m
LAT, LON, HGT = D(35.0), D(140.0), 100.0
ALPHA = [0.2e-7, -0.8e-8, -0.5e-7, 0.1e-6]
BETA = [0.2e6, 0.2e6, -0.1e6, -0.1e7]
# 2007-01-16 01:00 GPST: GPS week 1410 began Sunday 2007-01-14, so tow = 2 d + 1 h
TOW = 2 * 86400 + 3600


@pytest.mark.parametrize("az, el, expected", [
    (60.0, 75.0, 6.73590532099438),    # RTKLIB t_atmos.c (published, SOURCES.md)
    (190.0, 3.0, 21.6345415123632),    # RTKLIB t_atmos.c
    (0.0, 90.0, 6.58339711400694),     # RTKLIB t_atmos.c
])
def test_klobuchar_rtklib(az, el, expected):
    got = atmosphere.klobuchar_delay(LAT, LON, D(az), D(el), TOW, ALPHA, BETA)
    assert got == pytest.approx(expected, abs=1e-6)  # 1 um


def test_klobuchar_vectorised_and_below_horizon():
    az = D(np.array([[60.0, 190.0, 0.0, 10.0]]))
    el = D(np.array([[75.0, 3.0, 90.0, -5.0]]))
    got = atmosphere.klobuchar_delay(LAT, LON, az, el, TOW, ALPHA, BETA)
    assert got.shape == (1, 4)
    # first three: RTKLIB t_atmos.c values; last: below the horizon gives 0 (RTKLIB convention)
    np.testing.assert_allclose(got[0], [6.73590532099438, 21.6345415123632, 6.58339711400694, 0.0], atol=1e-6)


@pytest.mark.parametrize("el, expected", [
    (75.0, 2.44799870144088),   # RTKLIB tropmodel, t_atmos.c (published, SOURCES.md)
    (3.0, 45.1808916506163),    # RTKLIB tropmodel, t_atmos.c
])
def test_saastamoinen_rtklib(el, expected):
    # RTKLIB tropmodel: standard atmosphere at the height, humidity 0.5, mapping 1/cos(z)
    atm = atmosphere.standard_atmosphere(HGT, 0.5)
    z = atmosphere.saastamoinen_zenith_delay(LAT, HGT, *atm)
    got = (z.hydrostatic_m + z.wet_m) / np.sin(D(el))
    assert got == pytest.approx(expected, abs=1e-6)  # 1 um


def test_saastamoinen_zenith_magnitude():
    # Analytic order of magnitude: ZHD at sea level ~ 2.3 m (0.0022768 m/hPa * 1013 hPa),
    # guarding against a per-km coefficient applied per metre.
    z = atmosphere.saastamoinen_zenith_delay(0.0, 0.0, 101325.0, 288.15, 0.0)
    assert z.hydrostatic_m == pytest.approx(0.0022768 * 1013.25 / (1 - 0.00266), rel=1e-12)
    assert 2.2 < z.hydrostatic_m < 2.4


@pytest.mark.parametrize("el, dry, wet", [
    (75.0, 1.035184526466435, 1.035233787448654),   # RTKLIB tropmapf (Niell), t_atmos.c
    (3.0, 14.643271711748200, 16.455045694559484),  # RTKLIB tropmapf (Niell), t_atmos.c
])
def test_niell_rtklib(el, dry, wet):
    doy = 16.25  # 2007-01-16 06:00 -> day of year 16 + 6/24 (RTKLIB time2doy)
    m = atmosphere.niell_mapping(D(el), LAT, HGT, doy)
    assert m.hydrostatic == pytest.approx(dry, abs=1e-6)
    assert m.wet == pytest.approx(wet, abs=1e-6)


def test_niell_zenith_is_one():
    # Analytic: the normalised Marini fraction is 1 at the zenith; the height term vanishes there.
    m = atmosphere.niell_mapping(D(90.0), D(np.array([-50.0, 0.0, 35.0, 80.0])), 0.0, 100.0)
    np.testing.assert_allclose(m.hydrostatic, 1.0, atol=1e-12)
    np.testing.assert_allclose(m.wet, 1.0, atol=1e-12)


def test_single_layer_mapping_bounds():
    # Analytic: 1 at the zenith, 1/sqrt(1 - (R/(R+H))^2) at the horizon (~3.0 for H = 350 km)
    m = atmosphere.single_layer_mapping(D(np.array([90.0, 0.0])))
    r = 6371e3 / (6371e3 + 350e3)
    np.testing.assert_allclose(m, [1.0, 1.0 / np.sqrt(1.0 - r * r)], rtol=1e-12)
    v = atmosphere.vane_iono_delay(D(np.array([90.0, -1.0])), zenith_delay_m=2.0)
    np.testing.assert_allclose(v, [2.0, 0.0], atol=1e-12)


def test_tropo_delay_zero_below_horizon_and_out_of_range():
    t = atmosphere.tropo_delay(D(np.array([-5.0, 30.0, 30.0])), LAT, np.array([0.0, 2e4, 0.0]), 100.0)
    assert t.dry_m[0] == 0.0 and t.dry_m[1] == 0.0 and t.wet_m[1] == 0.0
    assert 4.0 < t.dry_m[2] < 5.0  # about 2.3 m / sin 30 deg (analytic order of magnitude)
