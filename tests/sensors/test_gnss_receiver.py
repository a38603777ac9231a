"""gnss_receiver: GPS, Galileo and BeiDou raw observables per signal in a scene."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hifi
from hifi.errors import ScenarioError

from conftest import REPO_ROOT, TEST_DATA

DATA = TEST_DATA
NAV = "gnss/BRDM00DLR_S_20230730000_01D_MN.rnx"
SIGNALS = ["G1C", "G5Q", "E1C", "E5Q", "C2I"]
# At 2023-03-14 01:30 UTC this site (45 S, 85 E) sees G01, E02, C01 and C02 above 10 deg (the
# file holds two satellites per system; computed from its ephemerides)
ORIGIN = {"lat_deg": -45.0, "lon_deg": 85.0, "height_m": 0.0}


def _scenario(params=None, duration_s=10.0, seed=5):
    p = {"nav_file": NAV, "constellations": ["G", "E", "C"], "signals": SIGNALS, **(params or {})}
    return {"simulation": {"duration_s": duration_s, "seed": seed, "start_utc": "2023-03-14T01:30:00Z",
                           "origin": ORIGIN},
            "materials": {"ground": {"reflectivity": 0.3}},
            "objects": [{"name": "ground", "mesh": "plane", "size_m": [200, 200], "material": "ground"}],
            "sensors": [{"name": "rx", "model": "gnss_receiver", "rate_hz": 1.0, "position_m": [0, 0, 1.5],
                         "params": p}]}


def _run(d):
    return hifi.Simulation.from_dict(d, base_dir=DATA).run(out=None, progress=False)["rx"]


#: A clock with a steady drift (50 ns/s) and no random walk: its phase and Doppler agree exactly
#: (the random-walk clock's bias steps are not in the instantaneous drift the Doppler sees).
STEADY_CLOCK = {"receiver_clock_model": "none", "receiver_clock_initial_bias_s": 1e-4,
                "receiver_clock_initial_drift": 5e-8}


@pytest.fixture(scope="module")
def rx():
    return _run(_scenario(STEADY_CLOCK))


def test_observables_per_signal_and_their_physics(rx):
    from gnss.observables import SIGNALS as SIG
    assert list(rx["signal"].values) == SIGNALS
    assert list(rx["sv"].values) == ["G01", "G02", "E01", "E02", "C01", "C02"]
    code = rx["code"].values                                    # (frame, sv, signal)
    tracked = np.isfinite(code)
    # each tracked satellite has exactly its own system's signals
    seen = {(sv, sig) for f, i, j in zip(*np.nonzero(tracked)) for sv, sig in
            [(str(rx["sv"].values[i]), SIGNALS[j])]}
    assert seen == {("G01", "G1C"), ("G01", "G5Q"), ("E02", "E1C"), ("E02", "E5Q"), ("C01", "C2I"), ("C02", "C2I")}
    lam = 299792458.0 / np.array([SIG[s].frequency_hz for s in SIGNALS])
    # Doppler against the phase's rate between 1 s epochs (analytic D = -dL/dt; phase noise of a
    # few 1e-3 cycles and the range's curvature over 1 s: 0.05 Hz)
    phase, dop = rx["phase"].values, rx["doppler"].values
    fd = -(phase[2:] - phase[:-2]) / 2.0
    ok = np.isfinite(fd)
    assert ok.sum() > 30
    np.testing.assert_allclose(dop[1:-1][ok], fd[ok], atol=0.05)
    # code minus carrier = 2 I_f + satellite group delay - lambda N + code noise (observation
    # equations, gnss.observables): within 10 m once the ambiguity is taken out
    cmc = code - lam * (phase - rx["ambiguity"].values) - 2 * rx["iono_delay"].values
    assert np.nanmax(np.abs(cmc)) < 10.0
    # one arc per satellite here: the loss-of-lock bit only at the first epoch, one ambiguity
    lli = rx["lli"].values
    assert np.all(lli[0][tracked[0]] == 1) and np.all(lli[1:][tracked[1:]] == 0)
    amb = rx["ambiguity"].values
    assert np.all((amb == amb[0])[tracked])
    # C/N0 from the link budget: 32-52 dB-Hz over 10-90 deg elevation (ICD minimum powers)
    cn0 = rx["cn0"].values[tracked]
    assert 30.0 < cn0.min() and cn0.max() < 52.0
    # the fix: 4 satellites for 3 + 3 unknowns: NaN, not an exception
    assert np.all(np.isnan(rx["position_ecef"].values))


def test_same_seed_same_bytes(rx):
    # regression: the receiver is reproducible from the scenario and seed
    again = _run(_scenario(STEADY_CLOCK))
    for v in ("code", "phase", "doppler", "cn0", "ambiguity"):
        np.testing.assert_array_equal(again[v].values, rx[v].values)


@pytest.mark.parametrize("params, match", [
    ({"signals": ["G1C", "E1C"], "constellations": ["G"]}, "signals"),
    ({"signals": ["G1C", "X9Z"]}, "signals"),
    ({"constellations": ["G", "R"]}, "constellations"),
    ({"constellations": ["G", "E", "C"], "signals": ["G1C", "E1C"]}, "constellations"),
])
def test_bad_signal_choices_are_clear_errors(params, match):
    with pytest.raises(ScenarioError, match=match):
        hifi.Simulation.from_dict(_scenario(params), base_dir=DATA)


def test_export_rinex_read_by_georinex(tmp_path):
    # hifi export DIR/rx.nc --format rinex: the observation file georinex (independent reader)
    # parses, every value equal to the dataset's to RINEX's 1 mm rounding, at the receiver's
    # time tags; the nav file beside it. A dataset without the observables: exit 2, nothing written.
    georinex = pytest.importorskip("georinex", reason="georinex (test extra) reads the written RINEX")
    import subprocess
    import sys

    import xarray as xr
    run = tmp_path / "run"
    hifi.Simulation.from_dict(_scenario(STEADY_CLOCK, duration_s=3.0), base_dir=DATA).run(out=run, progress=False)
    out = tmp_path / "rinex"
    r = subprocess.run([sys.executable, "-m", "hifi.cli", "export", str(run / "rx.nc"), "--format", "rinex",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "BRDM00DLR_S_20230730000_01D_MN.rnx", "rx.rnx"]
    g = georinex.load(out / "rx.rnx")
    with xr.open_dataset(run / "rx.nc") as ds:
        code = ds["code"].sel(sv="E02", signal="E5Q").values
        tags = ds["time_tag"].values
        dop = ds["doppler"].sel(sv="C01", signal="C2I").values
    np.testing.assert_allclose(g["C5Q"].sel(sv="E02").values, code, atol=6e-4)
    np.testing.assert_allclose(g["D2I"].sel(sv="C01").values, dop, atol=6e-4)
    # RINEX writes epochs to 0.1 us (F11.7 s); georinex keeps whole microseconds
    assert np.all(np.abs(g["time"].values - tags) < np.timedelta64(2, "us"))
    bad = tmp_path / "bad"
    lidar = {"simulation": {"duration_s": 0.1}, "objects": [{"name": "g", "mesh": "plane", "size_m": [10, 10]}],
             "sensors": [{"name": "v", "model": "vlp16", "position_m": [0, 0, 1]}]}
    hifi.Simulation.from_dict(lidar).run(out=tmp_path / "lid", progress=False)
    r = subprocess.run([sys.executable, "-m", "hifi.cli", "export", str(tmp_path / "lid" / "v.nc"), "--format",
                        "rinex", "--out", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "code" in r.stderr and not bad.exists()


def test_export_rinex_read_by_gnss_lib_py(tmp_path):
    # gnss-lib-py (Stanford NAV Lab) parses the exported file: one measurement per epoch,
    # satellite and signal (G01 L1 L5, E02 E1 E5a, C01 C02 B1: 6 per epoch), the same codes.
    # It pins plotly < 6 and xarray <= 2024.7, so it lives in the `gnsslib` extra, not the test
    # extra: skipped, by name, where it is not installed (checked by hand: passes with it).
    glp = pytest.importorskip("gnss_lib_py", reason="gnss-lib-py (pip install '.[gnsslib]') reads the RINEX")
    import xarray as xr
    from sensors.gnss_receiver_rinex import write_rinex
    run = tmp_path / "run"
    hifi.Simulation.from_dict(_scenario(STEADY_CLOCK, duration_s=3.0), base_dir=DATA).run(out=run, progress=False)
    with xr.open_dataset(run / "rx.nc") as ds:
        write_rinex(ds.load(), tmp_path / "rinex")
        code = ds["code"].sel(sv="E02", signal="E5Q").values
    m = glp.RinexObs(tmp_path / "rinex" / "rx.rnx")
    assert m.shape[1] == 18
    sel = (np.asarray(m["gnss_id"]) == "galileo") & (np.asarray(m["signal_type"]) == "e5a")
    np.testing.assert_allclose(np.sort(np.asarray(m["raw_pr_m"])[sel]), np.sort(code), atol=6e-4)


def test_error_budget_has_one_clock_per_system_and_adds_up_to_the_fix():
    """The multi-GNSS fix estimates one receiver clock per system; the error budget must too,
    or what is common to one system's satellites shows as a position error the fix does not
    make. The urban canyon with G + E + C (examples/multi_gnss_canyon.toml), 20 s: the terms
    add up to the fix's error within 1 cm + 0.5 % of it (the bound of gps_l1's test: the
    solver evaluates its corrections at its estimate, the budget at the truth)."""
    root = REPO_ROOT
    ds = hifi.load(root / "examples" / "multi_gnss_canyon.toml").run(out=None, duration_s=20.0,
                                                                      progress=False)["gnss"]
    fixed = np.all(np.isfinite(ds["position_error_enu"].values), axis=1)
    assert fixed.sum() >= 10
    total = ds["error_budget_enu"].values.sum(axis=1)
    err = ds["position_error_enu"].values
    bound = 0.01 + 0.005 * np.linalg.norm(err, axis=1)     # m
    assert np.all(np.abs(total[fixed] - err[fixed]).max(axis=1) <= bound[fixed])
    assert np.all(np.isnan(ds["error_budget_enu"].values[~fixed]))


def test_position_error_budget_per_system_clock_against_lstsq():
    """gnss.solver.position_error_budget with clock_index against an independent weighted
    least squares (numpy.linalg.lstsq on sqrt(w)-scaled rows, explicit design matrix), and the
    property that a bias common to one system's satellites moves no position."""
    from gnss.solver import position_error_budget
    rng = np.random.default_rng(11)
    n_e, n_sv = 5, 12
    el = rng.uniform(np.radians(10), np.radians(85), (n_e, n_sv))
    az = rng.uniform(0, 2 * np.pi, (n_e, n_sv))
    used = rng.random((n_e, n_sv)) > 0.1
    clock = np.repeat([0, 1, 2], 4)                     # G G G G E E E E C C C C
    terms = rng.normal(0, 3.0, (2, n_e, n_sv))
    terms[1] = np.array([0.0, 7.0, -4.0])[clock]         # an inter-system bias per system
    got = position_error_budget(terms, used, el, az, clock_index=clock)
    np.testing.assert_allclose(got[1], 0.0, atol=1e-9)   # m: absorbed by the per-system clocks
    for e in range(n_e):
        u = used[e]
        g = np.column_stack([-np.cos(el[e, u]) * np.sin(az[e, u]), -np.cos(el[e, u]) * np.cos(az[e, u]),
                             -np.sin(el[e, u]), (clock[u][:, None] == np.arange(3)).astype(float)])
        sw = np.sin(el[e, u])
        dx = np.linalg.lstsq(g * sw[:, None], terms[0, e, u] * sw, rcond=None)[0]
        np.testing.assert_allclose(got[0, e], dx[:3], atol=1e-9)  # m
    # one clock for all (the gps_l1 budget) does not absorb the inter-system bias
    assert np.abs(position_error_budget(terms, used, el, az)[1]).max() > 0.1


def test_glonass_fdma_carrier_per_satellite(tmp_path):
    """GLONASS L1 (R1C) under R01 (2023-03-14 01:30 UTC, its sub-satellite point 28.6 N 82.9 E):
    the carrier phase is the observation equation at R01's own FDMA carrier, channel +1 in the
    navigation file: lambda = c / (1602 + 0.5625 k) MHz (GLONASS ICD 3.3.1.4). Independent
    reconstruction from the dataset's own terms (range, clocks, troposphere, ephemeris and
    multipath, the signal's ionosphere, the ambiguity): within 0.05 cycle (PLL jitter at the
    zenith is a few mm). With channel 0 the phase would differ by ~37,000 cycles. The RINEX
    export writes R01's slot and channel, and georinex reads its R1C values."""
    from gnss.constants import SPEED_OF_LIGHT
    d = _scenario({**STEADY_CLOCK, "constellations": ["G", "R", "E", "C"],
                   "signals": ["G1C", "R1C", "E1C", "C2I"]}, duration_s=3.0)
    d["simulation"]["origin"] = {"lat_deg": 28.6, "lon_deg": 82.9, "height_m": 0.0}
    run = tmp_path / "run"
    ds = hifi.Simulation.from_dict(d, base_dir=DATA).run(out=run, progress=False)["rx"].load()
    r01 = ds.sel(sv="R01", signal="R1C")
    assert np.all(np.isfinite(r01["phase"].values))
    lam = SPEED_OF_LIGHT / (1602.0e6 + 1 * 0.5625e6)
    s = ds.sel(sv="R01")
    path = (s["geometric_range"] + s["receiver_clock_bias"] - s["sv_clock_error"] + s["tropo_delay_dry"]
            + s["tropo_delay_wet"] + s["ephemeris_error"] + s["multipath_error"]).values
    expected = (path - r01["iono_delay"].values) / lam + r01["ambiguity"].values
    np.testing.assert_allclose(r01["phase"].values, expected, atol=0.05)          # cycles
    # RINEX export: the GLONASS header records and the R1C values, read back by georinex
    georinex = pytest.importorskip("georinex")
    from hifi.cli import main
    assert main(["export", str(run / "rx.nc"), "--format", "rinex", "--out", str(tmp_path / "rnx")]) == 0
    text = (tmp_path / "rnx" / "rx.rnx").read_text()
    assert "R01  1" in next(x for x in text.splitlines() if x.endswith("GLONASS SLOT / FRQ #"))
    obs = georinex.load(tmp_path / "rnx" / "rx.rnx")
    got = obs["L1C"].sel(sv="R01").values
    np.testing.assert_allclose(got[np.isfinite(got)], r01["phase"].values, atol=1e-3)   # RINEX's 3 decimals


@pytest.mark.parametrize("constellations, signals", [
    (["G", "E", "C"], ["G1C", "G5Q", "E1C", "E5Q", "C2I"]),     # examples/multi_gnss_canyon.toml as written
    (["G"], ["G1C", "G5Q"]),                                    # the same receiver restricted to GPS
])
def test_exported_rinex_is_read_whole_and_reproduces_the_fix(tmp_path, constellations, signals):
    """A receiver's fix and the observations it logs agree. examples/multi_gnss_canyon.toml (60 s)
    run and exported with ``hifi export --format rinex``: georinex (independent reader) reads all
    60 epochs, at the dataset's time tags, though one tag lies just below a whole minute; and
    gnss.solve on the exported observation and navigation files, with the solver settings the
    dataset records (attribute ``solver_settings``), gives the dataset's ``position_ecef`` within
    1 cm at every epoch (NaN at the same epochs). Measured before the fix: 42 epochs read; fixes
    apart by a median 1.4 m and up to 28 m (the fix used the model pseudorange, the file holds
    the code with its tracking noise)."""
    georinex = pytest.importorskip("georinex", reason="georinex (test extra) reads the written RINEX")
    import json
    import subprocess
    import sys
    import tomllib
    import warnings

    import xarray as xr

    import gnss
    root = REPO_ROOT / "examples"
    d = tomllib.loads((root / "multi_gnss_canyon.toml").read_text())
    d["sensors"][0]["params"].update(constellations=constellations, signals=signals)
    run = tmp_path / "run"
    hifi.Simulation.from_dict(d, base_dir=root).run(out=run, progress=False)
    out = tmp_path / "rinex"
    r = subprocess.run([sys.executable, "-m", "hifi.cli", "export", str(run / "gnss.nc"), "--format", "rinex",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with xr.open_dataset(run / "gnss.nc") as ds:
        ds = ds.load()
    tags = ds["time_tag"].values
    # the case that broke the writer: a tag within 0.05 us below a whole minute (GPST + the clock)
    ns_in_minute = tags.astype(np.int64) % (60 * 10 ** 9)
    assert np.any(ns_in_minute >= 60 * 10 ** 9 - 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)          # georinex's own xarray merge notices
        g = georinex.load(out / "gnss.rnx")
    assert g.sizes["time"] == ds.sizes["frame"] == 60
    # RINEX writes 0.1 us; georinex keeps whole microseconds
    assert np.all(np.abs(g["time"].values - tags) <= np.timedelta64(1, "us"))
    settings = json.loads(ds.attrs["solver_settings"])
    assert settings["constellations"] == constellations
    # RAIM is on by default (parameter raim); its statistic is in the dataset wherever the fix has
    # a redundant satellite (status 3: not testable, e.g. four satellites in the canyon)
    assert settings["raim"] is True
    stat, status = ds["raim_statistic"].values, ds["raim_status"].values
    np.testing.assert_array_equal(np.isfinite(stat), status != 3)
    assert np.isfinite(stat).sum() >= 10 and "raim_excluded" in ds
    nav = out / Path(d["sensors"][0]["params"]["nav_file"]).name        # copied beside the observations
    sol = gnss.solve(gnss.read_obs(out / "gnss.rnx"), gnss.read_nav(nav), **settings)
    mine, theirs = ds["position_ecef"].values, sol["position_ecef"].values
    assert np.array_equal(np.isnan(mine), np.isnan(theirs))
    assert np.isfinite(mine[:, 0]).sum() >= 50
    np.testing.assert_allclose(theirs, mine, rtol=0, atol=0.01)    # 1 cm, every epoch
    # the code the fix used is the logged one: pseudorange is the code of each system's fix
    # signal (G1C, E1C, C2I) to float rounding (its noise term is that code's tracking noise)
    from sensors.gnss_receiver import FIX_SIGNALS
    fix_code = np.stack([ds["code"].sel(sv=x, signal=FIX_SIGNALS[x[0]]).values
                         for x in ds["sv"].values.astype(str)], axis=1)
    np.testing.assert_allclose(ds["pseudorange"].values, fix_code, rtol=0, atol=1e-6)   # 1 um
