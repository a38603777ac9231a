"""SICK presets: sick_lms1xx (LMS111), sick_lms5xx (LMS511), sick_tim7xx (TiM781); the
CoLa-B decoder of validation/sick_cola.py on the real telegrams; validation/sick_real.py.

Where expected values come from:
- data sheets and manuals, cited in sensors/sick.py (SICK support article "Measurement Errors
  LMSxxx"; LMS1xx operating instructions 8012471 sec. 3.6.2; LMS500 operating instructions
  8013796 sec. 3.5 and ch. 10; the online data sheets of the LMS111-10100, LMS511-10100 PRO and
  TiM781, whose figures are flagged "unverified here" in sensors/sick.py);
- the recordings' own telegrams (tests/data/lidar/sick_*.pcapng.json, Apache-2.0, SICK AG via
  sick_scan_xd, vendored with their notice in tests/data/lidar/README.md): header fields checked
  against each other and against the scanner's LocationName reply in the same capture;
- analytic results (the noise formula, the 50 % detection point, binomial and chi-square
  sampling tolerances, stated at each assertion).
"""

from __future__ import annotations

import struct

import conftest
import numpy as np
import pytest
from conftest import load_validation

import hifi
from hifi.api.registry import available_models, register_model
from sensors.lidar import SNR_THRESHOLD
from sensors.sick import (
    LMS111,
    LMS511,
    TIM781,
    SickLMS1xx,
    SickLMS5xx,
    SickTiM7xx,
    noise_figures,
    snr1_for,
)

# The entry points are in pyproject.toml; register in-process as well so that the tests run
# against an installation whose metadata predates them.
for _cls in (SickLMS1xx, SickLMS5xx, SickTiM7xx):
    if _cls.model_name not in available_models():
        register_model(_cls.model_name, _cls)



def _vendored(relative):
    """A vendored recording of tests/data (fails, naming it, when missing)."""
    return conftest.test_data_path(relative)




cola = load_validation("sick_cola")

LMS511_FILE = "lidar/sick_lms511_20210301.pcapng.json"
TIM781_FILE = "lidar/sick_tim781s_20210125.pcapng.json"
#: The ring scenes put the sensor inside a closed cylinder on purpose (a room).
pytestmark = pytest.mark.filterwarnings("ignore:.*is mounted inside objects.*:UserWarning")

PRESETS = {"sick_lms1xx": SickLMS1xx, "sick_lms5xx": SickLMS5xx, "sick_tim7xx": SickTiM7xx}


# ----------------------------------------------------------------------------- defaults


@pytest.mark.parametrize("model,expected", [
    # LMS111-10100 data sheet: 270 deg (SICK -45..225 = yaw -135..135), 0.5 deg, 50 Hz, 0.5-20 m,
    # 905 nm; SICK "Measurement Errors LMSxxx": 12 mm statistical, +-30 mm systematic (typical);
    # LMS1xx OI 8012471 sec. 3.6.2: spot = d x 0.015 rad + 8 mm.
    ("sick_lms1xx", {"fov_min_deg": -135.0, "fov_max_deg": 135.0, "angular_step_deg": 0.5, "rate": 50.0,
                     "max_range_m": 20.0, "min_range_m": 0.5, "range_noise_floor_m": 0.012, "bias_sigma_m": 0.030,
                     "divergence_rad": 0.015, "aperture_radius_m": 0.004, "wavelength_m": 905e-9,
                     "intensity_max": 255, "range_resolution_m": 0.001, "return_mode": "strongest"}),
    # LMS500 OI 8013796 ch. 10: -5..185 deg (yaw -95..95), 1/6 deg at 25 Hz (1141 values);
    # LMS511-10100 PRO data sheet: 80 m, 905 nm; SICK "Measurement Errors LMSxxx" SR: 6 mm,
    # +-25 mm (1-10 m); OI sec. 3.5.2: spot = d x 0.011 rad (SR) + 13 mm.
    # Noise floor: noise_source "measured" (default), 3.6 mm, the LMS511 recording's per-beam
    # sigma (validation/sick_real.py on tests/data/lidar/sick_lms511_20210301.pcapng.json).
    ("sick_lms5xx", {"fov_min_deg": -95.0, "fov_max_deg": 95.0, "angular_step_deg": 1 / 6, "rate": 25.0,
                     "max_range_m": 80.0, "min_range_m": 0.0, "range_noise_floor_m": 0.0036, "bias_sigma_m": 0.025,
                     "divergence_rad": 0.011, "aperture_radius_m": 0.0065, "wavelength_m": 905e-9,
                     "intensity_max": 255, "range_resolution_m": 0.001, "return_mode": "first"}),
    # TiM781 data sheet: 270 deg (SICK -45..225), 0.33 deg (1/3: 811 values), 15 Hz, 0.05-25 m,
    # 850 nm, systematic +-60 mm; RSSI 16 bit as in the TiM781S recording; noise floor 11.6 mm,
    # the TiM781S recording's per-beam sigma (tests/data/lidar/sick_tim781s_20210125.pcapng.json).
    ("sick_tim7xx", {"fov_min_deg": -135.0, "fov_max_deg": 135.0, "angular_step_deg": 1 / 3, "rate": 15.0,
                     "max_range_m": 25.0, "min_range_m": 0.05, "range_noise_floor_m": 0.0116, "bias_sigma_m": 0.060,
                     "divergence_rad": 0.015, "aperture_radius_m": 0.004, "wavelength_m": 850e-9,
                     "intensity_max": 65535, "range_resolution_m": 0.001, "return_mode": "strongest"}),
])
def test_defaults_come_from_the_data_sheets(model, expected):
    cls = PRESETS[model]
    assert cls.model_name == model
    assert cls.default_rate_hz == expected.pop("rate")
    defaults = cls.check_params({k: spec.default for k, spec in cls.PARAMS.items()})   # noise_source filled in
    for key, value in expected.items():
        default = defaults[key]
        assert default == (value if isinstance(value, str) else pytest.approx(value, rel=1e-12)), key
    for key in ("fov_min_deg", "max_range_m", "range_noise_floor_m", "bias_sigma_m", "divergence_rad",
                "wavelength_m", "noise_power_w"):
        assert "(" in cls.PARAMS[key].doc and ")" in cls.PARAMS[key].doc          # every default names its source
    assert ("dual" in cls.PARAMS["return_mode"].choices) == (model == "sick_lms5xx")   # LMS5xx: multi-echo


def test_lms5xx_far_noise_is_the_data_sheet_figure():
    # snr1_for solves sqrt(floor^2 + (snr1 / SNR)^2) = 14 mm for a 10 % target at 25 m, where
    # SNR = 4.75 (40 / 25)^2 = 12.16 (analytic); and 10-20 m gives about the sheet's 8 mm.
    snr1 = snr1_for(0.014, 25.0, 0.006, range_10pct_m=40.0)
    snr25 = SNR_THRESHOLD * (40.0 / 25.0) ** 2
    assert snr1 == pytest.approx(np.sqrt(0.014 ** 2 - 0.006 ** 2) * snr25, rel=1e-12)
    assert noise_figures(LMS511, "datasheet")[1] == pytest.approx(snr1, rel=1e-12)
    # "measured" keeps the far figure: the SNR term is refitted over the 3.6 mm floor
    floor_m, snr1_m, _ = noise_figures(LMS511, "measured")
    assert floor_m == 0.0036
    assert np.hypot(floor_m, snr1_m / snr25) == pytest.approx(0.014, rel=1e-12)
    snr15 = SNR_THRESHOLD * (40.0 / 15.0) ** 2
    assert np.hypot(0.006, snr1 / snr15) == pytest.approx(0.008, abs=0.0006)   # SICK SR 10-20 m: 8 mm
    assert LMS111.points_per_scan == 541 and LMS511.points_per_scan == 1141 and TIM781.points_per_scan == 811


# ----------------------------------------------------------------------------- simulation


def _ring_scenario(model, *, radius_m, reflectivity, duration_s, seed=0, params=None, extra_objects=()):
    """The sensor at the centre of a cylinder: every shot meets a wall at normal incidence."""
    return {
        "simulation": {"duration_s": duration_s, "seed": seed},
        "materials": {"wall": {"reflectivity": reflectivity}, "pole": {"reflectivity": 0.5}},
        "objects": [{"name": "ring", "mesh": "cylinder", "radius_m": radius_m, "height_m": 4.0, "material": "wall",
                     "position_m": [0, 0, 1.0]}, *extra_objects],
        "sensors": [{"name": "s", "model": model, "position_m": [0, 0, 1.0], "params": params or {}}],
    }


def _run(model, **kw):
    return hifi.Simulation.from_dict(_ring_scenario(model, **kw), base_dir=".").run()["s"]


@pytest.mark.parametrize("model", list(PRESETS))
def test_scan_geometry_and_timing(model):
    cls = PRESETS[model]
    sheet = cls.DATA_SHEET
    ds = _run(model, radius_m=5.0, reflectivity=0.8, duration_s=2.0 / cls.default_rate_hz)
    yaw = np.degrees(ds.step.values)
    assert ds.sizes["step"] == sheet.points_per_scan and ds.sizes["frame"] == 2
    assert yaw[0] == pytest.approx(sheet.start_angle_deg - 90.0, abs=1e-9)          # SICK angle - 90 deg
    assert yaw[-1] - yaw[0] == pytest.approx(sheet.aperture_deg, abs=1e-9)
    # shot i fires when the mirror has turned i steps at rate_hz: t_i = i step / (360 rate) (analytic)
    t = ds.hifi.seconds("timestamp").isel(layer=0).values
    expected = np.arange(sheet.points_per_scan) * sheet.step_deg / (360.0 * sheet.rate_hz)
    assert np.allclose(t[0] - t[0, 0], expected, atol=1e-9)
    assert t[1, 0] - t[0, 0] == pytest.approx(1.0 / sheet.rate_hz, abs=1e-9)
    # every shot of a white wall at 5 m is reported, at 5 m within 5 sigma of bias and noise
    det = ds.detected.values
    assert det.all()
    err = ds.distance_noisy.values[det] - 5.0
    assert np.abs(err).max() < 5 * np.hypot(sheet.systematic_error_m, sheet.statistical_error_m)
    assert ds.attrs["product"] == sheet.product and ds.attrs["sick_start_angle_deg"] == sheet.start_angle_deg
    assert ds.intensity.attrs["valid_max"] == sheet.rssi_max


@pytest.mark.parametrize("model,source,sigma_m,radius_m,refl", [
    ("sick_lms1xx", None, 0.012, 5.0, 0.8),            # SICK: LMS1xx statistical error 12 mm (typical)
    ("sick_lms5xx", "datasheet", 0.006, 5.0, 0.8),     # SICK: LMS5xx SR 6 mm at 1-10 m
    ("sick_lms5xx", "datasheet", 0.014, 25.0, 0.10),   # SICK: LMS5xx SR 14 mm at 20-30 m, a 10 % target (fitted)
    ("sick_lms5xx", "measured", 0.014, 25.0, 0.10),    # the same far figure over the measured floor (fitted)
    ("sick_tim7xx", "datasheet", 0.020, 5.0, 0.8),     # TiM781 data sheet: statistical error < 20 mm
    # the defaults (noise_source "measured"): the per-beam sigma of SICK's recordings on static
    # walls, LMS511 3.6 mm and TiM781S 11.6 mm (validation/sick_real.py on
    # tests/data/lidar/sick_lms511_20210301.pcapng.json and sick_tim781s_20210125.pcapng.json,
    # SICKAG/sick_scan_xd @ c2642d0e); the SNR term adds < 0.1 mm at 5 m for a white wall
    ("sick_lms5xx", None, 0.0036, 5.0, 0.8),
    ("sick_tim7xx", None, 0.0116, 5.0, 0.8),
])
def test_per_beam_temporal_noise_is_the_statistical_error(model, source, sigma_m, radius_m, refl):
    n_frames = 12
    params = {} if source is None else {"noise_source": source}
    ds = _run(model, radius_m=radius_m, reflectivity=refl, duration_s=n_frames / PRESETS[model].default_rate_hz,
              params=params)
    d = ds.distance_noisy.isel(layer=0).values
    d = np.where(ds.detected.isel(layer=0).values, d, np.nan)
    assert np.isfinite(d).all()
    sd = np.std(d, axis=0, ddof=1)
    # the 1 mm quantisation adds 1/12 mm^2 of variance; the median of n beams' sample sigmas
    # (11 degrees of freedom each) is within 3 x 1.25 x sigma / sqrt(2 x 11 x n) of sigma
    expected = np.sqrt(sigma_m ** 2 + 0.001 ** 2 / 12)
    tol = 3 * 1.25 * expected / np.sqrt(2 * (n_frames - 1) * sd.size) + 0.02 * expected   # + median bias of s
    assert np.median(sd) == pytest.approx(expected, abs=tol)


def test_noise_source_fills_only_what_is_not_given():
    # an explicit floor or SNR term overrides noise_source; the other comes from it (sensors.sick)
    base = {k: spec.default for k, spec in SickTiM7xx.PARAMS.items()}
    p = SickTiM7xx.check_params({**base, "noise_source": "datasheet", "range_noise_floor_m": 0.005})
    assert p["range_noise_floor_m"] == 0.005 and p["range_noise_snr1_m"] == 0.05
    with pytest.raises(ValueError, match="noise_source: 'measured' needs a recording"):
        noise_figures(LMS111, "measured")                  # no LMS1xx recording in tests/data/lidar
    assert "noise_source" not in SickLMS1xx.PARAMS


def test_systematic_error_is_a_per_run_offset():
    # bias_sigma_m: one offset per run, the same in every scan; over 40 runs its spread is the
    # data sheet's 30 mm (LMS1xx) within the chi-square 95 % interval of 40 samples (x0.78..1.22).
    offsets = []
    for seed in range(40):
        ds = _run("sick_lms1xx", radius_m=5.0, reflectivity=0.8, duration_s=0.04, seed=seed)
        err = ds.distance_noisy.isel(layer=0).values - 5.0                   # (2 frames, 541)
        per_frame = err.mean(axis=1)
        assert per_frame[0] == pytest.approx(per_frame[1], abs=5 * 0.012 / np.sqrt(541))   # same offset
        offsets.append(err.mean())
    assert np.std(offsets, ddof=1) == pytest.approx(0.030, rel=0.22)


@pytest.mark.parametrize("model", list(PRESETS))
def test_half_of_the_shots_see_a_10_percent_target_at_the_data_sheet_range(model):
    # The receiver noise is fitted so that P_d = 0.5 for 10 % remission at the sheet's range; 4
    # binomial standard errors of the 2 x points-per-scan shots (sheet ranges: 18, 40, 8 m).
    sheet = PRESETS[model].DATA_SHEET
    ds = _run(model, radius_m=sheet.range_10pct_m, reflectivity=0.10,
              duration_s=2.0 / sheet.rate_hz)
    p = ds.detected.values.mean()
    n = ds.detected.size
    assert p == pytest.approx(0.5, abs=4 * 0.5 / np.sqrt(n))


def test_lms5xx_dual_return_gives_two_echoes_at_edges():
    # A 5 cm pole 3 m ahead of a wall at 6 m: the shots grazing its edges see both surfaces;
    # "dual" keeps both (strongest and last) in a return dimension of 2.
    pole = {"name": "pole", "mesh": "cylinder", "radius_m": 0.025, "height_m": 4.0, "material": "pole",
            "position_m": [3.0, 0.0, 1.0]}
    ds = _run("sick_lms5xx", radius_m=6.0, reflectivity=0.8, duration_s=0.04, params={"return_mode": "dual"},
              extra_objects=(pole,))
    assert ds.sizes["return"] == 2 and ds.attrs["return_mode"] == "dual"
    d = np.where(ds.detected.values, ds.distance_noisy.values, np.nan)[0, :, 0, :]        # (step, return)
    two = np.isfinite(d).all(axis=1) & (np.abs(d[:, 0] - d[:, 1]) > 1.0)
    assert two.sum() >= 2                                                           # both edges of the pole
    assert np.allclose(np.sort(d[two], axis=1), [[3.0 - 0.025, 6.0]] * two.sum(), atol=0.15)
    single = _run("sick_lms5xx", radius_m=6.0, reflectivity=0.8, duration_s=0.04)
    assert "return" not in single.dims and single.attrs["return_mode"] == "first"


# ----------------------------------------------------------------------------- CoLa-B decoder


@pytest.fixture(scope="module")
def lms511():
    return cola.read_scans(_vendored(LMS511_FILE))


@pytest.fixture(scope="module")
def tim781():
    return cola.read_scans(_vendored(TIM781_FILE))


@pytest.mark.parametrize("which,rate_hz,aperture_deg,n_points,start_deg,step_code", [
    ("lms511", 25.0, 190.0, 1141, -5.0, 1667),     # LMS500 OI ch. 10: -5..185 deg, 1141 values
    ("tim781", 15.0, 270.0, 811, -45.0, 3333),     # TiM781: -45..225 deg, 0.33 deg
])
def test_cola_decoder_on_the_real_telegrams(which, rate_hz, aperture_deg, n_points, start_deg, step_code, request):
    _, scans = request.getfixturevalue(which)
    assert len(scans) > 100
    for s in scans:
        dist = s.channel("DIST1")
        assert dist.values.size == n_points and dist.start_angle_deg == start_deg
        assert dist.scale == 1.0 and dist.offset == 0.0                     # mm per count
        # the telegram's own fields agree: (points - 1) x step = aperture, to the 1/10000 deg
        # rounding of the step (1/6 -> 0.1667, 1/3 -> 0.3333: at most 0.5e-4 deg per step)
        assert round(dist.step_deg * 1e4) == step_code
        assert (n_points - 1) * dist.step_deg == pytest.approx(aperture_deg, abs=(n_points - 1) * 0.5e-4)
        assert s.scan_frequency_hz == rate_hz
        # measurement frequency = shots per second of a full turn: rate x 360 / (aperture / (n - 1))
        assert s.measurement_frequency_hz == pytest.approx(rate_hz * 360.0 * (n_points - 1) / aperture_deg, rel=1e-9)
        rssi = s.channel("RSSI1")
        assert rssi.values.size == n_points
    # consecutive scans: counters step by 1, the scanner's clock by 1 / rate within 1 ms
    counters = np.array([s.scan_counter for s in scans])
    assert np.all(np.diff(counters) == 1)
    dt = np.diff([s.time_since_startup_us for s in scans]) * 1e-6
    assert np.abs(dt - 1.0 / rate_hz).max() < 1e-3
    d = np.array([s.distance_m(1) for s in scans])
    assert np.nanmin(d) > 0.2 and np.nanmax(d) < 3.5                                # an indoor scene


def test_cola_serial_number_matches_the_location_name_reply(lms511):
    # The LMS511 capture also holds the scanner's reply to "sRN LocationName" ("SN 18110550"):
    # the serial number field of every scan telegram must be that number (an independent check
    # of the header field offsets).
    import json
    raw = json.loads(_vendored(LMS511_FILE).read_text())
    replies = [bytes.fromhex(e["_source"]["layers"]["tcp"]["tcp.payload"].replace(":", "")) for e in raw]
    location = next(r for r in replies if b"sRA LocationName" in r)
    payload = cola.frame_payload(location)
    name = payload[len(b"sRA LocationName "):]
    (n,) = struct.unpack(">H", name[:2])
    assert name[2:2 + n] == b"SN 18110550"
    assert {s.serial_number for s in lms511[1]} == {18110550}


def test_cola_framing_errors_raise(lms511):
    telegram = cola.telegrams_from_wireshark_json(_vendored(LMS511_FILE))[0][1]
    bad = bytearray(telegram)
    bad[100] ^= 0x01
    with pytest.raises(ValueError, match="checksum"):
        cola.decode_scan(bytes(bad))
    with pytest.raises(ValueError, match="length field"):
        cola.decode_scan(telegram[:-5])
    with pytest.raises(ValueError, match="not a CoLa-B telegram"):
        cola.decode_scan(b"\x02sSN LMDscandata\x03")


# ----------------------------------------------------------------------------- validation script


def test_sick_real_validation_table():
    sr = load_validation("sick_real")
    res = sr.run(sim=True)
    for model, r in res.items():
        rows = {row["quantity"]: row for row in r["rows"]}
        assert rows["points per scan"]["ratio"] == 1.0
        assert rows["start angle (SICK)"]["ratio"] == 1.0
        # the telegram rounds the step to 1/10000 deg; the preset steps by exactly 1/6 or 1/3 deg
        assert rows["angular step"]["ratio"] == pytest.approx(1.0, abs=2e-4)
        assert rows["scan rate"]["ratio"] == pytest.approx(1.0, abs=2e-3)
        noise = rows["per-beam temporal noise, static walls"]
        sheet = PRESETS[model].DATA_SHEET
        # real: regression values of the recordings (this decoder, this beam selection)
        assert noise["real"] == pytest.approx({"sick_lms5xx": 3.64, "sick_tim7xx": 11.62}[model], rel=0.01)
        # default (noise_source "measured"): the recording's own per-beam sigma, 3.6 / 11.6 mm
        # (SICKAG/sick_scan_xd @ c2642d0e, tests/data/lidar/README.md), within 25 %
        assert noise["sim"] == pytest.approx(noise["real"], rel=0.25)
        assert noise["sim"] == pytest.approx(1e3 * sheet.measured_statistical_m, rel=0.08)
        # "datasheet": the data sheet's statistical error (near range, high SNR) within 8 %
        assert noise["sim_datasheet"] == pytest.approx(1e3 * sheet.statistical_error_m, rel=0.08)
