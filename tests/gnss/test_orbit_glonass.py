"""GLONASS broadcast ephemerides: RINEX 3/4 records, the ICD's state-vector integration, and
the orbits against CODE's precise orbits."""

from __future__ import annotations

import numpy as np
import pytest

import gnss
from gnss.constants import MU_GLONASS, OMEGA_E_DOT_GLONASS
from gnss.orbit import glonass_orbit, select_ephemeris, sv_states
from gnss.precise import read_sp3

from conftest import TEST_DATA

DATA = TEST_DATA / "gnss"
BRDM = DATA / "BRDM00DLR_S_20230730000_01D_MN.rnx"          # RINEX 3.04, R01 and R02 (gnss_lib_py, MIT)
SP3 = DATA / "COD0OPSRAP_20230730000_01D_05M_ORB.SP3"       # CODE rapid orbits, 00:00-00:10 GPST
RNX4 = DATA / "KMS300DNK_R_20221591000_01H_MN.rnx.gz"       # RINEX 4.00 (georust/rinex, MPL-2.0)


def _circular_orbit_rotating(t_s):
    """Analytic two-body circular orbit (radius 25,510 km, inclination 64.8 deg: GLONASS's),
    expressed in a frame rotating at the PZ-90 rate that coincides with the inertial one at t = 0."""
    r, inc = 25510e3, np.radians(64.8)
    n = np.sqrt(MU_GLONASS / r ** 3)
    u = n * t_s
    p = r * np.array([np.cos(u), np.sin(u) * np.cos(inc), np.sin(u) * np.sin(inc)])
    v = r * n * np.array([-np.sin(u), np.cos(u) * np.cos(inc), np.cos(u) * np.sin(inc)])
    w = OMEGA_E_DOT_GLONASS
    c, s = np.cos(w * t_s), np.sin(w * t_s)
    rot = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    rot_dot = w * np.array([[-s, c, 0.0], [-c, -s, 0.0], [0.0, 0.0, 0.0]])
    return rot @ p, rot @ v + rot_dot @ p


@pytest.mark.parametrize("dt_s", [900.0, -900.0, 1800.0])
def test_integration_against_the_analytic_two_body_orbit(dt_s):
    # Analytic: with J2 = 0 and no lunisolar term the ICD's equations (rotating frame: centrifugal
    # and Coriolis terms) must follow a Kepler circle seen from the rotating frame.
    p0, v0 = _circular_orbit_rotating(0.0)
    st = glonass_orbit(dt_s, p0, v0, np.zeros(3), j2=0.0)
    p1, v1 = _circular_orbit_rotating(dt_s)
    assert np.linalg.norm(st.position_ecef - p1) < 1e-3        # 1 mm after 15-30 min
    assert np.linalg.norm(st.velocity_ecef - v1) < 1e-6        # 1 um/s


def test_integration_broadcasts_and_masks_nan():
    p0, v0 = _circular_orbit_rotating(0.0)
    st = glonass_orbit(np.array([[0.0, 60.0, np.nan]]), p0, v0, np.zeros(3))
    assert st.position_ecef.shape == (1, 3, 3)
    np.testing.assert_array_equal(st.position_ecef[0, 0], p0)   # dt = 0: the state itself
    assert np.all(np.isnan(st.position_ecef[0, 2])) and np.all(np.isfinite(st.position_ecef[0, 1]))


def test_rinex3_records_read_as_written():
    nav = gnss.read_nav(BRDM, systems=("R",))
    assert list(nav["sv"].values) == ["R01"] * 4 + ["R02"] * 3
    first = nav.isel(record=0)
    # the file's first R01 record: 2023 03 14 00 15 00 (UTC), -TauN 2.470612525940e-05,
    # X 5.763751464844e+03 km, Vx -1.299090385437e+00 km/s, Y 1.183432617188e+04 km,
    # frequency number 1; GPST - UTC = 18 s in 2023 (IERS Bulletin C)
    assert first["toc"].values == np.datetime64("2023-03-14T00:15:18")
    assert first["af0"].values == 2.470612525940e-05
    assert first["glo_x"].values == pytest.approx(5763751.464844, abs=1e-6)
    assert first["glo_vx"].values == pytest.approx(-1299.090385437, abs=1e-9)
    assert first["glo_y"].values == pytest.approx(11834326.17188, abs=1e-5)
    assert first["glo_frequency_channel"].values == 1.0
    assert nav["glo_frequency_channel"].values[-1] == -4.0          # R02's line 2, field 4
    assert np.all(nav["health"].values == 0)
    mixed = gnss.read_nav(BRDM, systems=("G", "R", "E", "C"))
    assert mixed.sizes["record"] == nav.sizes["record"] + gnss.read_nav(BRDM, systems=("G", "E", "C")).sizes["record"]
    assert np.all(np.isnan(mixed["glo_x"].values[mixed["system"].values != "R"]))


def test_rinex4_fdma_records_are_glonass_orbits():
    # RINEX 4.00 "> EPH Rnn FDMA" records (four orbit lines): 24 in the file; each state vector
    # lies on a GLONASS orbit: radius 25,510 km (ICD 3.1), inertial speed sqrt(mu / r)
    # = 3.95 km/s (the velocity in the rotating frame plus omega x r).
    nav = gnss.read_nav(RNX4, systems=("R",))
    assert nav.sizes["record"] == 24
    pos = np.stack([nav[f"glo_{c}"].values for c in "xyz"], axis=-1)
    vel = np.stack([nav[f"glo_v{c}"].values for c in "xyz"], axis=-1)
    inertial = vel + OMEGA_E_DOT_GLONASS * np.stack([-pos[:, 1], pos[:, 0], np.zeros(len(pos))], axis=-1)
    assert np.all(np.abs(np.linalg.norm(pos, axis=1) - 25510e3) < 100e3)             # m
    assert np.all(np.abs(np.linalg.norm(inertial, axis=1) - 3953.0) < 20.0)          # m/s


def _continuity_gaps(nav):
    gaps = []
    for sv in np.unique(nav["sv"].values):
        r = nav.isel(record=np.flatnonzero(nav["sv"].values == sv))
        for k in range(r.sizes["record"] - 1):
            dt = float((r["toc"].values[k + 1] - r["toc"].values[k]) / np.timedelta64(1, "s"))
            state = [np.array([r[f"glo_{a}{c}"].values[k] for c in "xyz"]) for a in ("", "v", "a")]
            nxt = np.array([r[f"glo_{c}"].values[k + 1] for c in "xyz"])
            gaps.append((dt, float(np.linalg.norm(glonass_orbit(dt, *state).position_ecef - nxt))))
    return gaps


@pytest.mark.parametrize("path", [BRDM, RNX4], ids=["rinex3", "rinex4"])
def test_consecutive_state_vectors_agree(path):
    # Each 30-min state vector propagated to the next tb: measured 1.2-1.8 m (BRDM). The bound
    # 5 m is GLONASS's broadcast orbit error of a few metres (Montenbruck et al., "Broadcast
    # versus precise ephemerides: a multi-GNSS perspective", GPS Solutions 19, 2015).
    gaps = _continuity_gaps(gnss.read_nav(path, systems=("R",)))
    assert gaps and all(dt == 1800.0 for dt, _ in gaps)
    assert max(g for _, g in gaps) < 5.0                              # m


def test_broadcast_orbits_against_code_rapid_orbits():
    """Independent reference: CODE's rapid precise orbits (SP3, centre of mass) at 00:00-00:10
    GPST, 5-15 min before the first tb. Measured 2.8-3.4 m 3-D, within the few metres of
    GLONASS broadcast orbits (Montenbruck et al. 2015); bound 5 m. Part of it is the antenna
    offset: broadcast GLONASS orbits refer to the antenna phase centre, SP3 to the centre of mass."""
    nav = gnss.read_nav(BRDM, systems=("G", "R", "E", "C"))
    sp3 = read_sp3(SP3)
    st = sv_states(nav, ["R01", "R02"], sp3["epoch"].values)
    err = np.linalg.norm(st["sv_position_ecef"].values - sp3["sv_position_ecef"].sel(sv=["R01", "R02"]).values,
                         axis=-1)
    assert np.all(st["ephemeris_record"].values >= 0)
    assert np.all(err < 5.0)                                          # m
    assert np.all(err > 0.5)            # the comparison compares: the orbits are not the SP3's own


def test_glonass_ephemeris_is_used_30_min_around_tb():
    # GLONASS_EPHEMERIS_MAX_AGE_S (RTKLIB's MAXDTOE_GLO): R02's last tb is 01:15:18 GPST;
    # 01:44 is within 30 min of it, 01:46 is not (GPS records stay usable for 2 h).
    nav = gnss.read_nav(BRDM, systems=("R",))
    t = gnss.gpstime.from_datetime64(np.array(["2023-03-14T01:44:00", "2023-03-14T01:46:00"],
                                              dtype="datetime64[ns]"))
    rec = select_ephemeris(nav, np.array([102, 102]), t)
    assert rec[0] == 6 and rec[1] == -1


def test_broadcast_vs_grgs_mgex_orbits_median_per_satellite():
    # GRGS MGEX final orbits of 2020-06-25 00:00-02:00 (centre of mass) against ESBC00DNK's
    # broadcast GLONASS state vectors (tests/data/gnss/README.md): measured median per-satellite
    # 3-D RMS 2.73 m over 16 satellites (max 5.7 m); bound 5 m, the few metres of GLONASS
    # broadcast orbits (Montenbruck et al. 2015).
    nav = gnss.read_nav(DATA / "ESBC00DNK_R_20201770000_04H_MN.rnx.gz", systems=("R",))
    sp3 = read_sp3(DATA / "GRG0MGXFIN_20201770000_02H_15M_ORB.SP3.gz")
    svs = [s for s in sp3["sv"].values if s.startswith("R")]
    st = sv_states(nav, svs, sp3["epoch"].values)
    e2 = np.sum((st["sv_position_ecef"].values - sp3["sv_position_ecef"].sel(sv=svs).values) ** 2, axis=-1)
    have = np.isfinite(e2).any(axis=0)
    rms = np.sqrt(np.nanmean(e2[:, have], axis=0))
    assert have.sum() >= 14
    assert np.median(rms) < 5.0                                       # m


def test_single_system_glonass_file(tmp_path):
    # A RINEX 3 navigation file of GLONASS alone (system letter "R" in its first header line,
    # as IGS's *_RN.rnx files): its records read as in the mixed file they come from.
    lines = BRDM.read_text().splitlines()
    end = next(i for i, x in enumerate(lines) if "END OF HEADER" in x)
    body = []
    for i in range(end + 1, len(lines)):
        if lines[i].startswith("R"):
            body.extend(lines[i:i + 4])
    head = f"{'     3.04':<20}{'N: GNSS NAV DATA':<20}{'R: GLONASS':<20}RINEX VERSION / TYPE"
    path = tmp_path / "GLO_RN.rnx"
    path.write_text("\n".join([head, f"{'':60}END OF HEADER", *body]) + "\n")
    nav = gnss.read_nav(path, systems=("R",))
    mixed = gnss.read_nav(BRDM, systems=("R",))
    for name in ("toc", "glo_x", "glo_vz", "glo_az", "af0", "af1", "glo_frequency_channel"):
        np.testing.assert_array_equal(nav[name].values, mixed[name].values)
    with pytest.raises(ValueError, match="not a RINEX 3 navigation file"):
        path.write_text(path.read_text().replace("R: GLONASS", "J: QZSS   "))
        gnss.read_nav(path, systems=("R",))
