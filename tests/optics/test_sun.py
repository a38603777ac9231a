"""Solar position and clear-sky irradiance against published values."""

from __future__ import annotations

import numpy as np
import pytest

from optics.sun import (
    clear_sky_irradiance,
    clear_sky_spectral_irradiance,
    relative_airmass,
    solar_position,
    sun_direction_enu,
)

PSA_ACCURACY_DEG = 0.5 / 60.0  # stated accuracy of the PSA algorithm, 0.5 arcmin


def test_solar_position_matches_nrel_spa_worked_example():
    # Reda & Andreas 2004 (NREL/TP-560-34302), worked example, Table A5.1: 2003-10-17 12:30:30
    # local time, UTC-7 -> 19:30:30 UTC; lat 39.742476, lon -105.1786, 820 mbar, 11 degC.
    # Published: topocentric zenith 50.11162 deg (refraction included), azimuth 194.34024 deg.
    p = solar_position(np.datetime64("2003-10-17T19:30:30"), 39.742476, -105.1786,
                       pressure_pa=82000.0, temperature_k=284.15)
    assert np.degrees(p.apparent_zenith_rad) == pytest.approx(50.11162, abs=PSA_ACCURACY_DEG)
    assert np.degrees(p.azimuth_rad) == pytest.approx(194.34024, abs=PSA_ACCURACY_DEG)


def test_solar_position_broadcasts_and_declination_at_solstice():
    # Declination at the June solstice equals the obliquity, 23.44 deg (Astronomical Almanac);
    # 2021-06-21T03:32 UTC was the solstice instant.
    times = np.array(["2021-06-21T03:32", "2021-06-21T15:32"], dtype="datetime64[m]")
    p = solar_position(times[:, None], np.array([0.0, 45.0, -30.0]), 10.0)
    assert p.zenith_rad.shape == (2, 3)
    assert np.degrees(p.declination_rad[0, 0]) == pytest.approx(23.44, abs=0.01)


def test_sun_direction_enu_is_unit_and_points_south_at_noon_in_the_north():
    d = sun_direction_enu(np.radians(30.0), np.radians(180.0))
    np.testing.assert_allclose(d, [0.0, -0.5, np.sqrt(3) / 2], atol=1e-12)


def test_airmass_kasten_young_reference_values():
    # Kasten & Young 1989: AM(0) = 0.9997 (formula), AM(90 deg) = 37.92 (their Table).
    am = relative_airmass(np.radians([0.0, 90.0, 95.0]))
    assert am[0] == pytest.approx(0.99971, abs=1e-4)
    assert am[1] == pytest.approx(37.92, abs=0.01)
    assert np.isnan(am[2])


def test_clear_sky_meinel_values_and_night():
    # Meinel & Meinel 1976 at sea level: DNI = 1353 * 0.7^(AM^0.678) W/m^2 (analytic), i.e.
    # about 947 W/m^2 at zenith 0 (AM 0.9997); diffuse 10 % of it; zero at night.
    cs = clear_sky_irradiance(np.radians([0.0, 100.0]))
    am0 = relative_airmass(0.0)
    assert cs.dni[0] == pytest.approx(1353 * 0.7 ** (am0 ** 0.678), rel=1e-12)
    assert cs.dhi[0] == pytest.approx(0.1 * cs.dni[0])
    assert cs.dni[1] == 0.0 and cs.ghi[1] == 0.0


def test_spectral_irradiance_integrates_to_broadband_and_reddens_at_low_sun():
    # The spectral shapes are normalised to the broadband values (250 nm - 4 um), and the ratio
    # of blue to red direct irradiance falls with air mass (Rayleigh tau ~ lambda^-4).
    lam = np.linspace(250e-9, 4000e-9, 3751)
    s = clear_sky_spectral_irradiance(lam, np.radians([20.0, 80.0]))
    cs = clear_sky_irradiance(np.radians([20.0, 80.0]))
    np.testing.assert_allclose(np.trapezoid(s.direct_normal, lam, axis=-1), cs.dni, rtol=1e-9)
    i450, i650 = np.searchsorted(lam, [450e-9, 650e-9])
    blue_red = s.direct_normal[:, i450] / s.direct_normal[:, i650]
    assert blue_red[1] < 0.7 * blue_red[0]
    sky_blue_red = s.diffuse_horizontal[:, i450] / s.diffuse_horizontal[:, i650]
    assert np.all(sky_blue_red > blue_red)  # the sky is bluer than the sun
