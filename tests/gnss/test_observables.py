"""Raw observables: code, carrier phase, Doppler, C/N0 per signal; RINEX 3 out."""

import numpy as np
import pytest

from conftest import test_data_path as data_path
from gnss import observables as ob
from gnss.constants import SPEED_OF_LIGHT
from gnss.rinex import read_nav

NAV = "gnss/BRDM00DLR_S_20230730000_01D_MN.rnx"
SITE = np.array([-2267750.0, 5009150.0, 3221290.0])
SVS = ["G01", "G02", "E01", "E02", "C01", "C02"]
SIGNALS = ["G1C", "G5Q", "E1C", "E5Q", "C2I"]


@pytest.fixture(scope="module")
def nav():
    return read_nav(data_path(NAV), systems=("G", "E", "C"))


def _obs(nav, t, *, iono=0.0, bias=(1000.0, 2.5), tracked=None, rng=None, vel=(3.0, -4.0, 1.0)):
    t = np.atleast_1d(np.asarray(t, dtype="datetime64[ns]"))
    n = t.size
    secs = (t - t[0]).astype("timedelta64[ns]").astype(float) * 1e-9
    b0, bdot = bias
    return ob.model_observables(
        nav, SITE + np.outer(secs, vel), np.broadcast_to(vel, (n, 3)), t, SVS, SIGNALS,
        receiver_clock_bias_m=b0 + bdot * secs, receiver_clock_drift_m_s=np.full(n, bdot),
        iono_l1_m=np.full((n, len(SVS)), iono), tropo_m=np.full((n, len(SVS)), 2.0),
        tracked=np.ones((n, len(SVS)), bool) if tracked is None else tracked,
        elevation_rad=np.full((n, len(SVS)), np.radians(60.0)), rng=rng)


def test_doppler_is_the_rate_of_the_phase(nav):
    # Analytic: D = -dL/dt for the noise-free phase (no ambiguity change, constant iono); the
    # central difference over +-0.5 s of a smooth range agrees to 1 mHz (the range's third
    # derivative over 0.5 s is below 1e-4 m/s).
    t0 = np.datetime64("2023-03-14T00:30:00", "ns")
    h = np.timedelta64(500, "ms")
    ds = _obs(nav, np.array([t0 - h, t0, t0 + h]))
    d_fd = -(ds["phase"].values[2] - ds["phase"].values[0]) / 1.0
    ok = np.isfinite(d_fd)
    assert ok.sum() == 10                              # G and E: 2 signals x 2 satellites, C: 1 x 2
    np.testing.assert_allclose(ds["doppler"].values[1][ok], d_fd[ok], atol=1e-3)
    # and the range rate itself: d rho / dt from the geometric range (analytic, 1 mm/s)
    r = ds["geometric_range"].values
    np.testing.assert_allclose(ds["range_rate"].values[1], (r[2] - r[0]) / 1.0, atol=1e-3)


def test_ionosphere_free_combination_and_code_minus_carrier(nav):
    # Analytic properties of the observation equations: the L1/L5 (E1/E5a) ionosphere-free
    # code is the same with 7 m of L1 ionosphere as with none; code minus carrier is twice the
    # signal's ionospheric delay plus the satellite group delay minus lambda N.
    t = np.datetime64("2023-03-14T00:30:00", "ns")
    a, b = _obs(nav, t, iono=7.0), _obs(nav, t, iono=0.0)
    f1, f5 = 1575.42e6, 1176.45e6

    def iono_free(ds, s1, s5):
        p1, p5 = ds["code"].sel(signal=s1).values, ds["code"].sel(signal=s5).values
        return (f1 ** 2 * p1 - f5 ** 2 * p5) / (f1 ** 2 - f5 ** 2)
    for s1, s5 in (("G1C", "G5Q"), ("E1C", "E5Q")):
        d = iono_free(a, s1, s5) - iono_free(b, s1, s5)
        assert np.all(np.abs(d[np.isfinite(d)]) < 1e-6) and np.isfinite(d).sum() == 2
    rng_ds = _obs(nav, t, iono=7.0, rng=None)
    lam = SPEED_OF_LIGHT / np.array([ob.SIGNALS[s].frequency_hz for s in SIGNALS])
    cmc = rng_ds["code"].values - rng_ds["phase"].values * lam
    two_i = 2 * rng_ds["iono_delay"].values
    gd = cmc - two_i                                   # the satellite group delays (|c g| < 10 m)
    assert np.all(np.abs(gd[np.isfinite(gd)]) < 10.0)
    np.testing.assert_allclose(rng_ds["iono_delay"].sel(signal="G5Q").values[0, :2], 7.0 * (f1 / f5) ** 2)


def test_cn0_link_budget_by_hand():
    # L1 C/A at zenith: -158.5 dBW (IS-GPS-200N Table 3-Va) + 3 dBic - N0, N0 = 10 log10(k 290 K)
    # = -204.0 dBW/Hz: 48.5 dB-Hz, inside the 45-50 dB-Hz open-sky range of Kaplan & Hegarty
    # (2017, 8.4). A reflected-only signal is 6 dB weaker; at 5 deg the antenna gives 8 dB less.
    r = ob.Receiver()
    n0 = 10 * np.log10(1.380649e-23 * 290.0)
    assert r.noise_density_dbw_hz == pytest.approx(n0)
    s = ob.SIGNALS["G1C"]
    assert float(ob.cn0_dbhz(s, np.pi / 2, r)) == pytest.approx(-158.5 + 3.0 - n0)
    assert 45.0 < float(ob.cn0_dbhz(s, np.pi / 2, r)) < 50.0
    assert float(ob.cn0_dbhz(s, np.pi / 2, r, True)) == pytest.approx(-158.5 + 3.0 - n0 - 6.0)
    assert float(ob.cn0_dbhz(s, np.radians(5.0), r)) == pytest.approx(-158.5 - 5.0 - n0)
    # tracking jitter at 45 dB-Hz (C/N0 = 31623 Hz), by hand from Kaplan & Hegarty's Eqs. 8.44
    # and 8.37: DLL 293.05 m sqrt(1 * 0.1 / (2 * 31623) (1 + 2 / (0.02 * 31623 * 1.9))) = 0.369 m;
    # PLL sqrt(15 / 31623 (1 + 1 / (2 * 0.02 * 31623))) / (2 pi) = 3.47e-3 cycles (0.66 mm)
    code, phase = ob.tracking_sigmas(s, 45.0, r)
    assert code == pytest.approx(0.369, abs=1e-3) and phase == pytest.approx(3.47e-3, abs=1e-5)


def test_arcs_ambiguities_and_loss_of_lock(nav):
    # A satellite lost at the third of five epochs: a new arc after the gap, with a new integer
    # ambiguity and the loss-of-lock bit at the first epoch of each arc (RINEX 3.04 5.3).
    t = np.datetime64("2023-03-14T00:30:00", "ns") + np.arange(5) * np.timedelta64(1, "s")
    trk = np.ones((5, len(SVS)), bool)
    trk[2, 0] = False
    ds = _obs(nav, t, tracked=trk, rng=np.random.default_rng(3))
    g01 = ds.sel(sv="G01", signal="G1C")
    assert g01["lli"].values.tolist() == [1, 0, 0, 1, 0]
    assert np.isnan(g01["phase"].values[2])
    n = g01["ambiguity"].values
    assert n[0] == n[1] and n[3] == n[4] and n[0] != n[3] and np.all(n[[0, 3]] == np.round(n[[0, 3]]))
    # the other satellites keep one arc
    assert ds["lli"].sel(sv="G02", signal="G1C").values.tolist() == [1, 0, 0, 0, 0]


def test_rinex_304_written_reads_back_in_georinex_and_solves(nav, tmp_path):
    # The written file is RINEX 3.04 that georinex (an independent reader, test extra) parses:
    # every C, L, D, S value equals the dataset's to RINEX's 1e-3 rounding. Our own reader
    # reads it too, and gnss.solve on it (G + E + C, one clock each, no atmosphere) gives the
    # fixes of the unrounded observables to 1 cm (the acceptance target; RINEX rounds to 1 mm).
    georinex = pytest.importorskip("georinex", reason="georinex (test extra) reads the written RINEX")
    import gnss
    from gnss.rinex_out import write_obs
    t = np.datetime64("2023-03-14T00:30:00", "ns") + np.arange(3) * np.timedelta64(30, "s")
    n = t.size
    ds = ob.model_observables(nav, np.broadcast_to(SITE, (n, 3)), np.zeros((n, 3)), t, SVS, SIGNALS,
                              receiver_clock_bias_m=np.full(n, 250.0), receiver_clock_drift_m_s=np.zeros(n),
                              iono_l1_m=np.zeros((n, 6)), tropo_m=np.zeros((n, 6)), tracked=np.ones((n, 6), bool),
                              elevation_rad=np.full((n, 6), np.radians(45.0)), rng=np.random.default_rng(1))
    path = write_obs(ds, tmp_path / "SIM00HIF_R_20230730030_01M_30S_MO.rnx", approx_position_ecef=SITE)
    g = georinex.load(path)
    for sv, sig in (("G01", "G1C"), ("G02", "G5Q"), ("E01", "E5Q"), ("C02", "C2I")):
        code = ob.SIGNALS[sig].code
        for letter, var in (("C", "code"), ("L", "phase"), ("D", "doppler"), ("S", "cn0")):
            np.testing.assert_allclose(g[f"{letter}{code}"].sel(sv=sv).values, ds[var].sel(sv=sv, signal=sig).values,
                                       atol=6e-4, err_msg=f"{sv} {letter}{code}")
    mine = gnss.read_obs(path)
    np.testing.assert_allclose(mine["C2I"].sel(sv="C01").values, ds["code"].sel(sv="C01", signal="C2I").values,
                               atol=6e-4)
    from gnss.rinex_out import to_obs_dataset
    kw = dict(constellations=("G", "E", "C"), iono_model="none", tropo_model="none", elevation_mask_deg=-90.0,
              weighting="none", initial_position_ecef=SITE)
    sol = gnss.solve(mine, nav, **kw)
    ref = gnss.solve(to_obs_dataset(ds), nav, **kw)
    np.testing.assert_allclose(sol["position_ecef"].values, ref["position_ecef"].values, atol=0.01)
    assert np.all(np.isfinite(sol["position_ecef"].values))
    # bad input: nothing half-written
    with pytest.raises(Exception):
        write_obs(ds.isel(epoch=slice(0, 0)), tmp_path / "empty.rnx")
    assert not list(tmp_path.glob("empty.rnx*"))
