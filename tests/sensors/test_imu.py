"""The ``imu`` model: physics against analytic results and published constants,
a strapdown integration of its output, the error model's statistics, Allan recovery, bad
parameters and determinism; and the spline tracks it rides on."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import hifi
from hifi.errors import ScenarioError
from hifi.world.motion import Pose, Track
from hifi.world.scene import Scene
from sensors.imu import (
    FLICKER_ALLAN_FLOOR,
    GAUSS_MARKOV_ALLAN_PEAK,
    GAUSS_MARKOV_ALLAN_PEAK_TAU,
    IMU,
    PRESETS,
    ImuErrorProcess,
    allan_deviation,
    avar_gauss_markov,
    earth_rate_enu,
    normal_gravity,
)

from conftest import REPO_ROOT

# The entry point lives in pyproject.toml; register in-process too, so the tests run from a
# checkout whose installed metadata predates the model.
hifi.register_model("imu", IMU)

LAT_DEG, LON_DEG, H_M = 47.80, 13.04, 430.0
ORIGIN = {"lat_deg": LAT_DEG, "lon_deg": LON_DEG, "height_m": H_M}
OMEGA = 7.292115e-5                       # WGS 84 Earth rate [rad/s] (NIMA TR8350.2 Table 3.1)


# -- independent reference formulas (written here, not imported) -----------------------------------
def somigliana_closed(lat_rad):
    """Somigliana's formula in its original form, (a g_e cos^2 + b g_p sin^2) / sqrt(a^2 cos^2 +
    b^2 sin^2), with a, b, g_e, g_p of NIMA TR8350.2 Tables 3.1, 3.3, 3.4 (Moritz, Geodetic
    Reference System 1980, eq. 5); the model uses the k-form of TR8350.2 eq. 4-1."""
    a, b, ge, gp = 6378137.0, 6356752.3142, 9.7803253359, 9.8321849378
    c2, s2 = np.cos(lat_rad) ** 2, np.sin(lat_rad) ** 2
    return (a * ge * c2 + b * gp * s2) / np.sqrt(a * a * c2 + b * b * s2)


#: Normal free-air gradient -0.3086 mGal/m = -3.086e-6 s^-2 (Hofmann-Wellenhof & Moritz,
#: Physical Geodesy, 2nd ed., 2006, eq. 2-124); its latitude dependence and the h^2 term move
#: the correction at 430 m by under 2e-6 m/s^2.
FREE_AIR_GRADIENT = -3.086e-6


def gravity_reference(lat_deg, h_m):
    return somigliana_closed(np.radians(lat_deg)) + FREE_AIR_GRADIENT * h_m


def run_imu(objects, sensor, *, duration_s, seed=5, origin=ORIGIN, rate_hz=None):
    d = {"simulation": {"duration_s": duration_s, "seed": seed, "origin": origin},
         "objects": objects, "sensors": [sensor], "output": {"motion_rate_hz": 1.0}}
    if rate_hz is not None:
        sensor["rate_hz"] = rate_hz
    sim = hifi.Simulation.from_dict(d)
    return sim, sim.run(progress=False)[sensor["name"]]


BOX = {"name": "body", "mesh": "box", "size_m": [1.0, 1.0, 1.0]}


# -- Earth model ----------------------------------------------------------------------------------
def test_normal_gravity_published_values():
    # NIMA TR8350.2 Table 3.4: normal gravity at the equator and at the poles.
    assert normal_gravity(0.0) == pytest.approx(9.7803253359, abs=1e-10)
    assert normal_gravity(np.pi / 2) == pytest.approx(9.8321849378, abs=1e-9)
    lat = np.radians(np.linspace(-90, 90, 37))
    np.testing.assert_allclose(normal_gravity(lat), somigliana_closed(lat), atol=1e-9)   # 1 nm/s^2
    # free-air correction against the normal gradient
    assert normal_gravity(np.radians(LAT_DEG), H_M) == pytest.approx(gravity_reference(LAT_DEG, H_M), abs=2e-6)


def test_earth_rate_components():
    # omega (0, cos phi, sin phi) in ENU (Groves 2013 eq. 2.123); the norm is the WGS 84 rate.
    w = earth_rate_enu(np.radians([0.0, LAT_DEG, 90.0]))
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), OMEGA, rtol=1e-15)
    np.testing.assert_allclose(w[0], [0, OMEGA, 0], atol=1e-20)
    np.testing.assert_allclose(w[2], [0, 0, OMEGA], atol=1e-20)


# -- the model at rest and turning ------------------------------------------------------------------
@pytest.mark.parametrize("yaw_deg", [0.0, 90.0])
def test_at_rest_reads_gravity_and_earth_rate(yaw_deg):
    # Analytic: a body at rest senses f = (0, 0, +g(phi, h)) and the Earth's rate
    # (0, Omega cos phi, Omega sin phi) in ENU, rotated into the sensor axes (yawed 90 deg: x
    # points north, so the north component appears on +x, east on -y).
    sensor = {"name": "imu", "model": "imu", "rpy_deg": [0.0, 0.0, yaw_deg], "params": {"preset": "ideal"}}
    _, ds = run_imu([], sensor, duration_s=0.05)
    phi = np.radians(LAT_DEG)
    g = gravity_reference(LAT_DEG, H_M)
    if yaw_deg == 0.0:
        rate = [0.0, OMEGA * np.cos(phi), OMEGA * np.sin(phi)]
    else:
        rate = [OMEGA * np.cos(phi), 0.0, OMEGA * np.sin(phi)]
    np.testing.assert_allclose(ds["specific_force_true"].values, np.broadcast_to([0, 0, g], (5, 3)), atol=2e-6)
    np.testing.assert_allclose(ds["angular_rate_true"].values, np.broadcast_to(rate, (5, 3)), atol=1e-18)
    np.testing.assert_array_equal(ds["angular_rate"].values, ds["angular_rate_true"].values)     # ideal
    np.testing.assert_array_equal(ds["specific_force"].values, ds["specific_force_true"].values)


def test_without_origin_uses_the_equator_at_sea_level():
    # The scenario's default origin (0, 0, 0 m): g = gamma_e (TR8350.2 Table 3.4), Earth rate north.
    sensor = {"name": "imu", "model": "imu", "params": {"preset": "ideal"}}
    d = {"simulation": {"duration_s": 0.02}, "sensors": [sensor]}
    ds = hifi.Simulation.from_dict(d).run(progress=False)["imu"]
    np.testing.assert_allclose(ds["specific_force_true"].values[0], [0, 0, 9.7803253359], atol=1e-10)
    np.testing.assert_allclose(ds["angular_rate_true"].values[0], [0, OMEGA, 0], atol=1e-18)


def test_constant_turn_rate():
    # A body yawing at a constant 0.3 rad/s (keyframes every second, spline track); the sensor
    # 2 m out along the body's x axis. Analytic: gyro = (0, 0, w) + Earth rate in sensor axes;
    # accelerometer = centripetal -w^2 r along x + Coriolis 2 Omega x v + (0, 0, g).
    w = 0.3
    times = np.arange(0.0, 31.0)
    track = [{"t_s": float(t), "position_m": [0.0, 0.0, 0.0], "rpy_deg": [0.0, 0.0, float(np.degrees(w * t))]}
             for t in times]
    body = dict(BOX, track=track, interpolation="spline")
    sensor = {"name": "imu", "model": "imu", "parent": "body", "position_m": [2.0, 0.0, 0.0],
              "params": {"preset": "ideal"}}
    _, ds = run_imu([body], sensor, duration_s=30.0, rate_hz=10.0)
    t = np.arange(ds.sizes["frame"]) / 10.0                         # frame k at k / rate_hz
    mid = (t > 2.0) & (t < 28.0)
    psi = w * t[mid]
    phi = np.radians(LAT_DEG)
    e_enu = OMEGA * np.array([0.0, np.cos(phi), np.sin(phi)])
    c, s = np.cos(psi), np.sin(psi)
    # ENU -> sensor: rotate by -psi about z
    earth_sensor = np.column_stack([c * e_enu[0] + s * e_enu[1], -s * e_enu[0] + c * e_enu[1],
                                    np.full(psi.size, e_enu[2])])
    expected_rate = earth_sensor + [0.0, 0.0, w]
    np.testing.assert_allclose(ds["angular_rate_true"].values[mid], expected_rate, atol=1e-9)   # 1 nrad/s
    r = 2.0
    v_enu = r * w * np.column_stack([-s, c, np.zeros_like(s)])                  # tangential velocity
    cor = 2.0 * np.cross(e_enu, v_enu)
    f_enu = np.column_stack([-w * w * r * c, -w * w * r * s, np.zeros_like(c)]) + cor
    f_enu[:, 2] += gravity_reference(LAT_DEG, H_M)
    f_sensor = np.column_stack([c * f_enu[:, 0] + s * f_enu[:, 1], -s * f_enu[:, 0] + c * f_enu[:, 1], f_enu[:, 2]])
    np.testing.assert_allclose(ds["specific_force_true"].values[mid], f_sensor, atol=2e-6)      # 0.2 ug


# -- strapdown integration --------------------------------------------------------------------------
def _qmul(p, q):
    """Hamilton product of quaternions (w, x, y, z), (..., 4)."""
    pw, px, py, pz = np.moveaxis(p, -1, 0)
    qw, qx, qy, qz = np.moveaxis(q, -1, 0)
    return np.stack([pw * qw - px * qx - py * qy - pz * qz, pw * qx + px * qw + py * qz - pz * qy,
                     pw * qy - px * qz + py * qw + pz * qx, pw * qz + px * qy - py * qx + pz * qw], axis=-1)


def _rotate(q, v):
    """Rotate v by unit quaternion q (w, x, y, z): q (0, v) q*."""
    qv = np.concatenate([[0.0], v])
    conj = q * np.array([1.0, -1.0, -1.0, -1.0])
    return _qmul(_qmul(q, qv), conj)[1:]


def strapdown_rk4(q0, v0, r0, gyro, accel, h, earth_rate, gravity):
    """Textbook strapdown navigation in an Earth-fixed local frame (Titterton & Weston 2004,
    sec. 3.5; Groves 2013 sec. 5.3): q' = q (0, w_ib)/2 - (0, W_ie) q/2, v' = C f - 2 W x v + g,
    r' = v, integrated by classical RK4 with step ``h`` = 2 sample intervals, the odd samples
    serving as midpoints."""
    def deriv(q, v, w_b, f_b):
        qd = 0.5 * _qmul(q, np.concatenate([[0.0], w_b])) - 0.5 * _qmul(np.concatenate([[0.0], earth_rate]), q)
        vd = _rotate(q, f_b) - 2.0 * np.cross(earth_rate, v) + gravity
        return qd, vd

    q, v, r = q0.copy(), v0.copy(), r0.copy()
    positions = [r.copy()]
    for i in range(0, len(gyro) - 2, 2):
        w0, wm, w1 = gyro[i], gyro[i + 1], gyro[i + 2]
        f0, fm, f1 = accel[i], accel[i + 1], accel[i + 2]
        k1q, k1v = deriv(q, v, w0, f0)
        k1r = v
        k2q, k2v = deriv(q + 0.5 * h * k1q, v + 0.5 * h * k1v, wm, fm)
        k2r = v + 0.5 * h * k1v
        k3q, k3v = deriv(q + 0.5 * h * k2q, v + 0.5 * h * k2v, wm, fm)
        k3r = v + 0.5 * h * k2v
        k4q, k4v = deriv(q + h * k3q, v + h * k3v, w1, f1)
        k4r = v + h * k3v
        q = q + h / 6.0 * (k1q + 2 * k2q + 2 * k3q + k4q)
        q /= np.linalg.norm(q)
        v = v + h / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
        r = r + h / 6.0 * (k1r + 2 * k2r + 2 * k3r + k4r)
        positions.append(r.copy())
    return np.array(positions), q


def test_strapdown_reproduces_a_curved_60s_trajectory():
    # A car-like path (a wide S with a hill), heading along the path, some roll and pitch,
    # keyframes every 2 s through a spline; the noise-free IMU at 200 Hz integrated by the
    # textbook strapdown above from the true initial state must stay within 1 cm of the
    # trajectory for 60 s (analytic expectation: RK4 error ~ h^4, micrometres).
    tk = np.arange(0.0, 62.0, 2.0)
    x = 40.0 * np.sin(0.05 * tk) + 2.0 * tk
    y = 15.0 * (1.0 - np.cos(0.1 * tk))
    z = 1.5 * np.sin(0.08 * tk)
    heading = np.degrees(np.arctan2(np.gradient(y, tk), np.gradient(x, tk)))
    roll = 3.0 * np.sin(0.3 * tk)
    pitch = -2.0 * np.cos(0.2 * tk)
    track = [{"t_s": float(t), "position_m": [float(a), float(b), float(c)], "rpy_deg": [float(r), float(p), float(hd)]}
             for t, a, b, c, r, p, hd in zip(tk, x, y, z, roll, pitch, heading)]
    body = dict(BOX, track=track, interpolation="spline")
    sensor = {"name": "imu", "model": "imu", "parent": "body", "position_m": [1.2, 0.3, 0.8],
              "rpy_deg": [0.0, 5.0, 2.0], "params": {"preset": "ideal"}}
    sim, ds = run_imu([body], sensor, duration_s=60.0 + 0.006, rate_hz=200.0)
    gyro, accel = ds["angular_rate"].values, ds["specific_force"].values
    n = gyro.shape[0] - (gyro.shape[0] + 1) % 2          # odd count: whole RK4 steps
    t = np.arange(n) / 200.0
    # initial state from the scene's poses alone (velocity by a one-sided second-order
    # difference: the track starts at t = 0 and is held before it)
    pose0 = sim.scene.pose_at("imu", 0.0)
    h_fd = 1e-4
    p1, p2 = (sim.scene.pose_at("imu", k * h_fd).translation for k in (1, 2))
    v0 = (-3.0 * pose0.translation + 4.0 * p1 - p2) / (2.0 * h_fd)
    qx, qy, qz, qw = pose0.rotation.as_quat()
    phi = np.radians(LAT_DEG)
    earth = OMEGA * np.array([0.0, np.cos(phi), np.sin(phi)])
    # the model's normal gravity (checked against TR8350.2 in test_normal_gravity_published_values;
    # the free-air gradient approximation of gravity_reference would leave ~1e-6 m/s^2, 2 mm in 60 s)
    gravity = np.array([0.0, 0.0, -float(ds.attrs["gravity_m_s2"])])
    positions, q_end = strapdown_rk4(np.array([qw, qx, qy, qz]), v0, pose0.translation.copy(), gyro[:n], accel[:n],
                                     2.0 / 200.0, earth, gravity)
    truth = sim.scene.pose_at("imu", t[::2]).translation
    err = np.linalg.norm(positions - truth, axis=1)
    assert t[::2][-1] >= 60.0 - 1e-9
    assert np.ptp(truth[:, 0]) > 50.0                                   # it did go somewhere
    assert err.max() < 0.01, f"strapdown drifted {err.max():.4f} m"     # 1 cm
    att = Rotation.from_quat([q_end[1], q_end[2], q_end[3], q_end[0]])
    att_err = (att.inv() * sim.scene.pose_at("imu", t[::2][-1]).rotation).magnitude()
    assert att_err < 1e-6                                               # 1 urad


# -- error model --------------------------------------------------------------------------------------
def test_gauss_markov_allan_constants():
    # The peak of the closed-form Gauss-Markov Allan deviation (IEEE 952 Annex C), found
    # numerically; the flicker floor sqrt(2 ln 2 / pi) of IEEE 952 Annex C.
    from scipy.optimize import minimize_scalar
    res = minimize_scalar(lambda u: -avar_gauss_markov(1.0, 1.0, u), bounds=(0.5, 5.0), method="bounded",
                          options={"xatol": 1e-10})
    assert res.x == pytest.approx(GAUSS_MARKOV_ALLAN_PEAK_TAU, rel=1e-6)
    assert np.sqrt(-res.fun) == pytest.approx(GAUSS_MARKOV_ALLAN_PEAK, rel=1e-12)
    assert FLICKER_ALLAN_FLOOR == pytest.approx(0.6643, abs=1e-4)
    # series and closed form meet at the switch (relative 1e-9); the limits
    u = np.array([1e-2 * (1 - 1e-12), 1e-2])
    a = avar_gauss_markov(1.0, 1.0, u)
    assert a[0] == pytest.approx(a[1], rel=1e-9)
    assert avar_gauss_markov(2.0, 10.0, 1e-6) == pytest.approx(2 * 4.0 * 1e-7 / 3, rel=1e-6)   # 2 s^2 u / 3
    assert avar_gauss_markov(2.0, 10.0, 1e6) == pytest.approx(2 * 4.0 * 10 / 1e6, rel=1e-4)    # 2 s^2 T / tau


def test_allan_deviation_matches_allantools():
    allantools = pytest.importorskip("allantools")         # test extra; a visible skip without it
    rng = np.random.default_rng(4)
    y = rng.standard_normal(20000) + np.cumsum(rng.standard_normal(20000)) * 0.01
    taus, ours = allan_deviation(y, 0.01, np.logspace(-2, 1.5, 20))
    t2, theirs, _, _ = allantools.oadev(y, rate=100.0, data_type="freq", taus=taus)
    np.testing.assert_allclose(t2, taus)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_block_processes_have_the_sequential_law():
    # 4000 independent axes of each process with small blocks (16 samples) and T = 8 samples:
    # the block-bridged processes must have the moments of the sequential recursions across
    # block boundaries (Gelb 1974 table 3.3-1): Var g = s^2, Cov(g_k, g_k+1) = phi s^2,
    # Var r_k = K^2 k dt, white Var = N^2 / dt. Sampling error of a variance from 4000 draws
    # is 2.2 %; tolerance 8 % (3.5 sigma).
    c, bsz, rate = 4000, 16, 10.0
    dt = 1.0 / rate
    t_corr = 8 * dt
    proc = ImuErrorProcess(1, "law", rate, np.full(c, 0.5), np.full(c, 2.0), t_corr, np.full(c, 0.3),
                           block_frames=bsz)
    white, gm, rw = zip(*(proc.block(b) for b in range(4)))
    white, gm, rw = (np.concatenate(x) for x in (white, gm, rw))
    phi = np.exp(-dt / t_corr)
    for k in (0, bsz - 1, bsz, 2 * bsz + 7, 4 * bsz - 1):
        assert np.var(gm[k]) == pytest.approx(4.0, rel=0.08)
        assert np.var(rw[k]) == pytest.approx(0.09 * k * dt, rel=0.08, abs=1e-12)
    for k in (bsz - 1, 2 * bsz - 1, 5, bsz + 3):                         # across and inside blocks
        assert np.mean(gm[k] * gm[k + 1]) == pytest.approx(phi * 4.0, rel=0.08)
        inc0, inc1 = rw[k + 1] - rw[k], rw[k] - rw[k - 1]
        assert np.var(inc0) == pytest.approx(0.09 * dt, rel=0.08)
        assert abs(np.corrcoef(inc0, inc1)[0, 1]) < 0.06                 # independent increments
    assert np.var(white) == pytest.approx(0.25 / dt, rel=0.02)


def _allan_module():
    path = REPO_ROOT / "validation" / "imu_allan.py"
    spec = importlib.util.spec_from_file_location("hifi_validation_imu_allan", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_allan_parameters_recovered_fast():
    # Fast version of validation/imu_allan.py (20-min white run, T = 1 s bias over 2000 T,
    # 2000 s random walk): N within 5 %, B and K within 10 % of what was set.
    allan = _allan_module()
    rows = allan.run(allan.FAST)
    checked = [r for r in rows if r.tolerance is not None]
    assert len(checked) == 6
    for r in checked:
        assert r.passed, f"{r.run} {r.quantity}: set {r.set_value:.4g}, recovered {r.recovered:.4g}"


@pytest.mark.validation
def test_allan_parameters_recovered_full(tmp_path):
    # validation/imu_allan.py as published (hours-long static runs, a 30-min run of the model).
    allan = _allan_module()
    assert allan.main(["--markdown", str(tmp_path / "a.md"), "--figure", str(tmp_path / "a.png")]) == 0


def test_turn_on_bias_scale_factor_misalignment_quantisation_saturation():
    # measured = sat(quant(M true + bias + noise)); the dataset stores M and the turn-on bias.
    params = {"preset": "ideal", "gyro_turn_on_bias_rad_s": 1e-3, "accel_turn_on_bias_m_s2": 0.05,
              "gyro_scale_factor_ppm": 2000.0, "accel_misalignment_rad": 1e-3,
              "accel_resolution_m_s2": 0.01, "gyro_range_rad_s": 0.5}
    w = 0.8                                                                 # beyond the 0.5 rad/s range
    track = [{"t_s": float(t), "position_m": [0.0, 0.0, 0.0], "rpy_deg": [0.0, 0.0, float(np.degrees(w * t))]}
             for t in range(6)]
    body = dict(BOX, track=track, interpolation="spline")
    _, ds = run_imu([body], {"name": "imu", "model": "imu", "parent": "body", "params": params},
                    duration_s=4.0, rate_hz=10.0)
    m_g = ds["angular_rate_matrix"].values
    m_a = ds["specific_force_matrix"].values
    assert np.all(np.diag(m_a) == 1.0) and np.all(np.abs(m_a - np.eye(3)) < 5e-3)
    assert np.all(np.abs(np.diag(m_g) - 1.0) < 1e-2) and np.all(m_g[~np.eye(3, dtype=bool)] == 0.0)
    b_g = ds["angular_rate_turn_on_bias"].values
    np.testing.assert_array_equal(ds["angular_rate_bias"].values, np.broadcast_to(b_g, (40, 3)))
    expected = ds["angular_rate_true"].values @ m_g.T + b_g
    sat = ds["angular_rate_saturated"].values
    mid = slice(20, 30)
    assert np.all(sat[mid, 2]) and not np.any(sat[mid, :2])
    np.testing.assert_allclose(ds["angular_rate"].values[mid, 2], 0.5, rtol=0)        # clipped to the range
    np.testing.assert_allclose(ds["angular_rate"].values[mid, :2], expected[mid, :2], atol=1e-15)
    f = ds["specific_force"].values
    np.testing.assert_allclose(f / 0.01, np.rint(f / 0.01), atol=1e-9)                # multiples of the LSB
    f_exp = ds["specific_force_true"].values @ m_a.T + ds["specific_force_turn_on_bias"].values
    np.testing.assert_allclose(f, f_exp, atol=0.005 + 1e-12)                           # half an LSB


def test_presets_resolve_and_override():
    p = IMU.resolve({"preset": "bmi160", "gyro_noise_density_rad_s_rthz": 1e-3})
    assert p["gyro_noise_density_rad_s_rthz"] == 1e-3
    # BMI160 data sheet (BST-BMI160-DS000-07 rev 0.8): 180 ug/sqrt(Hz), 16384 LSB/g at +-2 g.
    assert p["accel_noise_density_m_s2_rthz"] == pytest.approx(180e-6 * 9.80665)
    assert p["accel_resolution_m_s2"] == pytest.approx(9.80665 / 16384)
    # ADIS16448 Rev. H: ARW 0.66 deg/sqrt(h) = 1.91986e-4 rad/s/sqrt(Hz); 14.5 deg/h in-run
    # bias stability = 0.6643 B.
    a = PRESETS["adis16448"]
    assert a["gyro_noise_density_rad_s_rthz"] == pytest.approx(1.91986e-4, rel=1e-5)
    assert a["gyro_bias_instability_rad_s"] * FLICKER_ALLAN_FLOOR == pytest.approx(7.02980e-5, rel=1e-5)
    assert all(set(v) == set(PRESETS["ideal"]) for v in PRESETS.values())


# -- bad parameters -------------------------------------------------------------------------------------
@pytest.mark.parametrize("params,key,fragment", [
    ({"gyro_noise_density_rad_s_rthz": -1.0}, "sensors[0].params.gyro_noise_density_rad_s_rthz", ">= 0"),
    ({"preset": "mpu6050"}, "sensors[0].params.preset", "'adis16448'"),
    ({"bias_correlation_time_s": 0.0}, "sensors[0].params.bias_correlation_time_s", "> 0"),
    ({"accel_resolution_m_s2": 200.0}, "sensors[0].params.accel_resolution_m_s2", "smaller than the range"),
    ({"gyro_noise": 1.0}, "sensors[0].params.gyro_noise", "unknown key"),
])
def test_bad_params_raise(params, key, fragment):
    d = {"simulation": {"duration_s": 0.1}, "sensors": [{"name": "imu", "model": "imu", "params": params}]}
    with pytest.raises(ScenarioError) as err:
        hifi.Simulation.from_dict(d)
    assert err.value.key == key
    assert fragment in str(err.value)


def test_imu_on_a_linear_track_is_refused(tmp_path):
    text = """
[simulation]
duration_s = 1.0

[[objects]]
name = "cart"
mesh = "box"
size_m = [1, 1, 1]
track = [ { t_s = 0.0, position_m = [0, 0, 0] }, { t_s = 1.0, position_m = [1, 0, 0] } ]

[[sensors]]
name = "imu"
model = "imu"
parent = "cart"
"""
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        hifi.load(path)
    msg = str(err.value)
    assert err.value.key == "objects[0].interpolation" and "spline" in msg and str(path) in msg
    assert err.value.line == 5          # the [[objects]] header of that table (no interpolation key to point at)


def test_interpolation_needs_a_track():
    d = {"simulation": {"duration_s": 0.1},
         "objects": [dict(BOX, interpolation="spline")]}
    with pytest.raises(ScenarioError, match="applies to a track") as err:
        hifi.Simulation.from_dict(d)
    assert err.value.key == "objects[0].interpolation"
    d["objects"] = [dict(BOX, track=[{"t_s": 0.0, "position_m": [0, 0, 0]}], interpolation="cubic")]
    with pytest.raises(ScenarioError, match="'linear', 'spline'"):
        hifi.Simulation.from_dict(d)


# -- determinism ------------------------------------------------------------------------------------
def _noisy_scenario(duration_s=25.0):
    track = [{"t_s": float(t), "position_m": [t, 0.5 * np.sin(t), 0.0], "rpy_deg": [0.0, 0.0, 10.0 * t]}
             for t in range(0, 30, 3)]
    body = dict(BOX, track=track, interpolation="spline")
    params = {"preset": "adis16448", "gyro_random_walk_rad_s2_rthz": 1e-4, "accel_random_walk_m_s3_rthz": 1e-3,
              "gyro_scale_factor_ppm": 500.0, "accel_misalignment_rad": 1e-3}
    return {"simulation": {"duration_s": duration_s, "seed": 9, "origin": ORIGIN}, "objects": [body],
            "sensors": [{"name": "imu", "model": "imu", "parent": "body", "params": params}],
            "output": {"motion_rate_hz": 1.0}}


VARIABLES = ("angular_rate", "specific_force", "angular_rate_bias", "specific_force_bias", "angular_rate_true")


def test_same_seed_same_bytes_and_partition_independent():
    # Two serial runs: identical bytes. A run that computes only frames >= 1500 (as the last
    # rank of a time partition does: blocks 0 and 1 never computed) gives the same bytes for
    # those frames; another seed gives other errors.
    a = hifi.Simulation.from_dict(_noisy_scenario()).run(progress=False)["imu"]
    b = hifi.Simulation.from_dict(_noisy_scenario()).run(progress=False)["imu"]
    for v in VARIABLES:
        assert a[v].values.tobytes() == b[v].values.tobytes(), v
    start = 1500                                                # in block 1 (frames 1024..2047)
    late = hifi.Simulation.from_dict(_noisy_scenario()).run(progress=False, keep=lambda i, k: i != 0 or k >= start)["imu"]
    assert late.sizes["frame"] == a.sizes["frame"] - start
    for v in VARIABLES:
        assert late[v].values.tobytes() == a[v].values[start:].tobytes(), v
    d = _noisy_scenario()
    d["simulation"]["seed"] = 10
    c = hifi.Simulation.from_dict(d).run(progress=False)["imu"]
    assert not np.array_equal(c["angular_rate"].values, a["angular_rate"].values)
    np.testing.assert_array_equal(c["angular_rate_true"].values, a["angular_rate_true"].values)


def test_a_longer_run_keeps_the_earlier_frames():
    # The draws of a frame do not depend on the run's length (streams keyed by block, not run).
    a = hifi.Simulation.from_dict(_noisy_scenario(12.0)).run(progress=False)["imu"]
    b = hifi.Simulation.from_dict(_noisy_scenario(25.0)).run(progress=False)["imu"]
    n = a.sizes["frame"]
    assert a["angular_rate"].values.tobytes() == b["angular_rate"].values[:n].tobytes()


# -- spline tracks ------------------------------------------------------------------------------------
def _chain():
    rng = np.random.default_rng(1)
    tk = np.arange(0.0, 11.0)
    scene = Scene()
    scene.add_body("a", "object", Track(tk, rng.normal(size=(11, 3)) * 5, rng.normal(size=(11, 3)) * 40,
                                        interpolation="spline"))
    scene.add_body("b", "object", Track(tk, rng.normal(size=(11, 3)), rng.normal(size=(11, 3)) * 30,
                                        interpolation="spline"), parent="a")
    scene.add_body("s", "sensor", Pose.from_position_rpy([0.3, -0.2, 1.0], [10, 20, 30]), parent="b")
    return scene


def test_kinematics_compose_up_the_chain():
    # Analytic derivatives against central differences of the composed poses (away from the
    # keyframes, where the third derivative jumps): step 1e-3 s, error ~ h^2.
    scene = _chain()
    t = np.linspace(0.5, 9.5, 7) + 0.37
    k = scene.kinematics_at("s", t)
    h = 1e-3
    kp, km = scene.kinematics_at("s", t + h), scene.kinematics_at("s", t - h)
    p = scene.pose_at
    np.testing.assert_allclose(k.velocity, (p("s", t + h).translation - p("s", t - h).translation) / (2 * h), atol=1e-4)
    np.testing.assert_allclose(k.acceleration, (kp.velocity - km.velocity) / (2 * h), atol=1e-4)
    w_fd = (p("s", t + h).rotation * p("s", t - h).rotation.inv()).as_rotvec() / (2 * h)
    np.testing.assert_allclose(k.angular_rate, w_fd, atol=1e-5)
    np.testing.assert_allclose(k.angular_acceleration, (kp.angular_rate - km.angular_rate) / (2 * h), atol=1e-4)
    one = scene.kinematics_at("s", 3.3)
    assert one.velocity.shape == (3,) and one.pose.single


def test_spline_passes_through_keyframes_and_holds_outside():
    rng = np.random.default_rng(2)
    tk = np.array([0.0, 1.0, 2.5, 4.0])
    pos, rpy = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)) * 30
    tr = Track(tk, pos, rpy, interpolation="spline")
    np.testing.assert_allclose(tr.at(tk).translation, pos, atol=1e-12)
    lin = Track(tk, pos, rpy)
    assert (tr.at(tk).rotation.inv() * lin.at(tk).rotation).magnitude().max() < 1e-9
    np.testing.assert_allclose(tr.at([-1.0, 9.0]).translation, pos[[0, -1]], atol=1e-12)   # held (spline ends)
    k = tr.kinematics(np.array([-1.0, 0.0, 4.0, 9.0]))
    np.testing.assert_allclose(k.velocity, 0.0, atol=1e-12)            # clamped ends, held outside
    assert tr.twice_differentiable and not lin.twice_differentiable


def test_spline_bounds_hold_the_path():
    # The caster's swept ball and the scene extent rely on these bounds (a spline overshoots).
    from scipy.spatial import Delaunay
    rng = np.random.default_rng(3)
    tk = np.arange(0.0, 11.0)
    tr = Track(tk, rng.normal(size=(11, 3)) * 5, np.zeros((11, 3)), interpolation="spline")
    path = tr.at(np.linspace(0, 10, 20001)).translation
    assert np.linalg.norm(path, axis=1).max() <= tr.max_offset_m()
    assert tr.max_offset_m() > np.linalg.norm(tr.positions_m, axis=1).max()     # it does overshoot
    hull = Delaunay(tr.hull_points(2.3, 5.7))
    assert np.all(hull.find_simplex(tr.at(np.linspace(2.3, 5.7, 2000)).translation) >= 0)


def test_plot_shows_rates_forces_and_biases(tmp_path):
    pytest.importorskip("matplotlib", reason="hifi plot needs matplotlib (the viz extra)")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from _plots import outside_figure
    from sensors.imu_plot import plot_imu
    ds = hifi.Simulation.from_dict(_noisy_scenario(3.0)).run(progress=False)["imu"]
    fig = plot_imu(ds, frame=100)
    assert len(fig.axes) == 4
    assert outside_figure(fig) == []                                 # no clipped label or legend
    assert fig.axes[0].get_ylabel() == "angular rate [rad/s]"
    plt.close(fig)
