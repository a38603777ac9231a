"""RAIM of gnss.solve: the chi-square test, exclusion of a blunder, a fix withheld."""

import numpy as np
import pytest

import gnss
from gnss import geometry, solver

HEADER = np.array([-3976219.5082, 3382372.5671, 3652512.9849])  # 0759 APPROX POSITION XYZ (SOURCES.md)


@pytest.fixture
def station(test_data):
    return gnss.read_obs(test_data("gnss/07590920.05o")), gnss.read_nav(test_data("gnss/07590920.05n"))


def _blunders(obs, sv, epochs, jumps_m):
    bad = obs.copy(deep=True)
    for e, jump in zip(epochs, jumps_m):
        bad["C1"][e, list(bad["sv"].values).index(sv)] += jump
    return bad


def test_blunders_on_two_epochs_are_excluded(station):
    # Real station 0759 (RINEX 2, 7 satellites used, 3 redundant): G08's C1 jumps by +800 m at
    # epoch 10 and by -4800 m at epoch 11. With RAIM every fix stays within 20 m of the clean
    # fix (measured: 0.32 m, the geometry without G08), G08 is excluded at exactly those epochs,
    # and the statistic is present at every epoch. Without RAIM the same blunders move the fix by
    # 314 m and 1876 m (measured).
    obs, nav = station
    clean = gnss.solve(obs, nav, true_position_ecef=HEADER)
    assert (clean["raim_status"].values == 0).all()          # no false alarm on the clean hour
    bad = _blunders(obs, "G08", (10, 11), (800.0, -4800.0))
    sol = gnss.solve(bad, nav, true_position_ecef=HEADER)
    shift = np.linalg.norm(sol["position_ecef"].values - clean["position_ecef"].values, axis=1)
    assert np.all(shift < 20.0), shift.max()                   # 20 m
    assert np.isfinite(sol["raim_statistic"].values).all()
    assert np.all(sol["raim_statistic"].values <= sol["raim_threshold"].values)
    excluded = sol["raim_excluded"].values
    assert excluded[10, list(sol["sv"].values).index("G08")] and excluded[11, list(sol["sv"].values).index("G08")]
    assert excluded.sum() == 2
    np.testing.assert_array_equal(np.flatnonzero(sol["raim_status"].values == 1), [10, 11])
    off = gnss.solve(bad, nav, true_position_ecef=HEADER, raim=False)
    moved = np.linalg.norm(off["position_ecef"].values - clean["position_ecef"].values, axis=1)
    assert moved[10] > 20.0 and moved[11] > 20.0
    assert (off["raim_status"].values[[10, 11]] == 2).all() and not off["raim_excluded"].values.any()
    # the statistic: chi-square of the weighted residuals with sigma = raim_code_sigma_m / sin(el)
    # (closed form from the returned residuals and elevations of the clean fix)
    used = clean["used"].values[0]
    r = clean["residual"].values[0, used]
    st = gnss.sv_states(nav, list(clean["sv"].values[used]), obs["epoch"].values[:1])
    la = geometry.look_angles(clean["position_ecef"].values[:1, None, :], st["sv_position_ecef"].values)
    w = np.sin(la.elevation_rad[0]) ** 2
    expected = np.sum(w * r ** 2) / solver.RAIM_CODE_SIGMA_M ** 2
    np.testing.assert_allclose(clean["raim_statistic"].values[0], expected, rtol=0.05)


def test_fix_withheld_without_redundancy(station):
    # Five satellites (one redundant): a 800 m blunder fails the test and no satellite can be
    # excluded and the rest still tested, so the fix is withheld (NaN, status 2).
    obs, nav = station
    keep = ["G07", "G08", "G11", "G19", "G20"]
    five = _blunders(obs.sel(sv=keep), "G08", (0,), (800.0,))
    sol = gnss.solve(five, nav, true_position_ecef=HEADER)
    assert sol["raim_status"].values[0] == 2 and np.isnan(sol["position_ecef"].values[0]).all()
    assert sol["raim_statistic"].values[0] > sol["raim_threshold"].values[0]
    assert np.isfinite(sol["position_ecef"].values[1:]).all()


def test_raim_parameters_are_checked(station):
    obs, nav = station
    with pytest.raises(ValueError, match="raim_false_alarm_probability"):
        gnss.solve(obs, nav, raim_false_alarm_probability=1.5)
    with pytest.raises(ValueError, match="raim_code_sigma_m"):
        gnss.solve(obs, nav, raim_code_sigma_m=0.0)
