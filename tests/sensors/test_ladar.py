"""Divergent multi-ray LADAR (VANE sec. 4): analytic beams, mixed pixels, waveform energy."""

import numpy as np
import pytest

import hifi
from sensors.beam import process_returns, return_waveform, subray_count, subray_pattern

from conftest import REPO_ROOT


def test_weights_sum_to_one_and_pattern_is_deterministic():
    for n in (1, 7, 19, 100, 10_000):
        uv, w = subray_pattern(n)
        assert uv.shape == (n, 2) and w.shape == (n,)
        assert w.sum() == pytest.approx(1.0, abs=1e-12)             # energy conservation
        assert np.all(np.hypot(uv[:, 0], uv[:, 1]) <= 1.0) and np.all(uv[0] == 0.0)
        assert np.all(np.diff(w[1:]) <= 1e-15)                      # weights fall off outward
    a, b = subray_pattern(100), subray_pattern(100)
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
    with pytest.raises(ValueError, match="n_subrays = 0"):
        subray_pattern(0)


def test_subray_count_is_vane_equation_1():
    # VANE Eq. (1): N = 2 (r + R tan(Theta / 2)) / x, e.g. 2 (0.004 + 80 tan 0.006) / 0.1 = 9.68 -> 10.
    assert subray_count(0.004, 80.0, 0.012, 0.1) == 10
    assert subray_count(0.004, 80.0, 0.012, 0.0509) == int(np.ceil(2 * (0.004 + 80 * np.tan(0.006)) / 0.0509))
    assert subray_count(0.0, 10.0, 0.0, 1.0) == 1                  # clamped to >= 1
    assert subray_count(1.0, 1e4, 0.5, 1e-3) == 10_000             # clamped to <= 10,000


def test_waveform_energy_equals_the_sum_of_returns():
    rng = np.random.default_rng(0)
    tau = rng.uniform(20e-9, 500e-9, (50, 30))
    e = rng.uniform(0, 1, (50, 30))
    tau[3, :5] = np.nan                                               # some sub-rays return nothing
    wf = return_waveform(tau, e, bin_width_s=0.5e-9, n_bins=1200, pulse_width_s=5e-9)
    expected = np.where(np.isfinite(tau), e, 0.0).sum(axis=1)
    np.testing.assert_allclose(wf.sum(axis=1), expected, rtol=1e-12)  # exact bin integrals


def _scene(objects, params, duration_s=1 / 75, sensor=None):
    s = {"name": "ladar", "model": "sick_lms291", "params": {"noise_sigma_m": 0.0, **params}}
    s.update(sensor or {})
    return {"simulation": {"duration_s": duration_s}, "materials": {"w": {"reflectivity": 0.8}},
            "objects": objects, "sensors": [s]}


WALL = {"name": "wall", "mesh": "plane", "size_m": [60, 60], "material": "w", "position_m": [12, 0, 0],
        "rpy_deg": [0, -90, 0]}


def test_one_subray_equals_the_pencil_beam_lidar():
    objects = [WALL, {"name": "block", "mesh": "box", "size_m": [1, 3, 3], "material": "w", "position_m": [9.5, -1.5, 0]}]
    d = _scene(objects, {"n_subrays": 1, "fov_deg": 40.0, "angular_step_deg": 1.0})
    d["sensors"].append({"name": "pencil", "model": "sick_lms", "rate_hz": 75.0,
                         "params": {"noise_sigma_m": 0.0, "fov_min_deg": -20.0, "fov_max_deg": 20.0,
                                    "angular_step_deg": 1.0, "detection_model": "blensor", "bias_sigma_m": 0.0,
                                    "range_resolution_m": 0.0, "edge_subrays": 0}})   # pencil beams
    res = hifi.Simulation.from_dict(d).run()
    beam, pencil = res["ladar"].isel(frame=0, **{"return": 0}), res["pencil"].isel(frame=0, layer=0)
    for var in ("distance", "distance_noisy", "timestamp", "object_id", "detected"):
        np.testing.assert_array_equal(beam[var].values, pencil[var].values, err_msg=var)
    for var in ("yaw", "x_noisy", "y_noisy", "z_noisy"):   # same ray, built by two formulas: 1 ulp
        np.testing.assert_allclose(beam[var].values, pencil[var].values, rtol=0, atol=1e-12, err_msg=var)
    # The line lidar's intensity is now its reported code; its relative Lambertian return is
    # reflectivity / R^2 (two float32-stored values: 1e-6 relative).
    np.testing.assert_allclose(beam.intensity.values, pencil.reflectivity.values / pencil.distance.values ** 2,
                               rtol=1e-6)
    np.testing.assert_allclose(beam.reflectivity.values, pencil.reflectivity.values, rtol=1e-6)


def _sliding(mode, cutoff=3.0, n=100):
    # The sensor slides along y from -0.4 to +0.4 m, one pulse straight ahead per frame; a plate
    # at x = 10 covers y < 0 and the wall is at x = 12 (analytic truths 10 and 12 m). The spot
    # is 2 (0.004 + 10 tan 0.006) = 0.128 m wide at the plate.
    plate = {"name": "plate", "mesh": "plane", "size_m": [10, 10], "material": "w", "position_m": [10, -5, 0],
             "rpy_deg": [0, -90, 0]}
    carrier = {"name": "carrier", "mesh": "sphere", "radius_m": 0.01,
               "track": [{"t_s": 0.0, "position_m": [0, -0.4, -1]}, {"t_s": 1.0, "position_m": [0, 0.4, -1]}]}
    d = _scene([WALL, plate, carrier], {"n_subrays": n, "fov_deg": 0.01, "return_mode": mode, "cutoff_m": cutoff},
               duration_s=1.0, sensor={"parent": "carrier", "position_m": [0, 0, 1]})
    ds = hifi.Simulation.from_dict(d).run()["ladar"]
    return ds.isel(step=0)


def test_average_mode_floats_between_the_surfaces_monotonically():
    ds = _sliding("average")
    r = ds.distance_noisy.isel(**{"return": 0}).values
    assert np.all(r > 10.0 - 1e-3) and np.all(r < 12.0 + 1e-3)       # between the two surfaces
    floating = (r > 10.01) & (r < 11.99)
    assert floating.sum() >= 3                                       # mixed pixels at the edge
    assert np.all(np.diff(r) >= -1e-6)                               # moves monotonically 10 -> 12
    # Far from the edge the spot is on one surface: the plate's or the wall's range (analytic,
    # to the spot's 1/cos spread of < 0.2 mm).
    np.testing.assert_allclose(r[:20], 10.0, atol=2e-4)
    np.testing.assert_allclose(r[-20:], 12.0, atol=2e-4)


@pytest.mark.parametrize("mode, surface", [("first", 10.0), ("last", 12.0)])
def test_first_and_last_do_not_float(mode, surface):
    ds = _sliding(mode)
    r = ds.distance_noisy.isel(**{"return": 0}).values
    near10, near12 = np.abs(r - 10.0) < 0.01, np.abs(r - 12.0) < 0.01
    assert np.all(near10 | near12)                                   # never in between
    straddling = np.nonzero(near10)[0].max() + 1 if mode == "first" else np.nonzero(near12)[0].min()
    assert 0 < straddling < len(r)


def test_plate_filling_the_spot_gives_the_plate_range():
    uv, w = subray_pattern(50)
    d = _scene([WALL], {"n_subrays": 50, "fov_deg": 0.01, "return_mode": "average"})
    ds = hifi.Simulation.from_dict(d).run()["ladar"].isel(frame=0, step=0, **{"return": 0})
    # Analytic: sub-ray i leaves r uv_i off axis toward direction (1, tan(T/2) uv_i) normalised;
    # its path to the plane x = 12 is 12 sqrt(1 + tan^2(T/2) |uv_i|^2); the report is the
    # energy-weighted mean.
    t = np.tan(0.006)
    expected = np.sum(w * 12.0 * np.sqrt(1.0 + t**2 * (uv**2).sum(axis=1)))
    assert float(ds.distance_noisy) == pytest.approx(expected, abs=2e-6)   # Embree's float32: 1 ulp(12 m) = 1e-6 m


def test_first_le_strongest_le_last_and_dual():
    objects = [WALL, {"name": "post", "mesh": "box", "size_m": [0.2, 0.06, 5], "material": "w", "position_m": [6, 0, 0]}]
    res = {}
    for mode in ("first", "strongest", "last", "dual"):
        d = _scene(objects, {"n_subrays": 200, "fov_deg": 4.0, "angular_step_deg": 0.05, "return_mode": mode,
                             "divergence_rad": 0.03})
        res[mode] = hifi.Simulation.from_dict(d).run()["ladar"].isel(frame=0).distance_noisy.values
    f, s, l = res["first"][:, 0], res["strongest"][:, 0], res["last"][:, 0]
    ok = np.isfinite(f)
    assert np.all(f[ok] <= s[ok] + 1e-9) and np.all(s[ok] <= l[ok] + 1e-9)
    assert np.any(l[ok] - f[ok] > 5.0)                               # two returns somewhere
    np.testing.assert_array_equal(res["dual"][:, 0], f)
    np.testing.assert_array_equal(res["dual"][:, 1], l)


def test_process_returns_separates_two_echoes():
    # Two sub-rays 3 m apart (20 ns) with a 5 ns pulse: two returns (analytic centroids).
    tau = np.array([[2 * 10.0 / 299792458.0, 2 * 13.0 / 299792458.0]])
    e = np.array([[0.3, 0.1]])
    r = np.array([[10.0, 13.0]])
    wf = return_waveform(tau, e, bin_width_s=0.5e-9, n_bins=400, pulse_width_s=5e-9)
    for mode, want in (("first", 10.0), ("last", 13.0), ("strongest", 10.0), ("average", 11.0)):
        rep, _, _, _ = process_returns(wf, tau, e, r, bin_width_s=0.5e-9, mode=mode, detection_threshold=0.05,
                                    cutoff_m=5.0)
        assert rep[0, 0] == pytest.approx(want if mode != "average" else (0.3 * 10 + 0.1 * 13) / 0.4)
    rep, _, _, _ = process_returns(wf, tau, e, r, bin_width_s=0.5e-9, mode="last", detection_threshold=0.2,
                                cutoff_m=5.0)
    assert rep[0, 0] == pytest.approx(10.0)                          # the weak echo is below threshold


def test_deterministic_and_partition_independent():
    d = _scene([WALL, {"name": "block", "mesh": "box", "size_m": [1, 3, 3], "material": "w", "position_m": [9.5, -1.5, 0]}],
               {"noise_sigma_m": 0.01, "store_waveform": True}, duration_s=4 / 75)
    full = hifi.Simulation.from_dict(d).run()["ladar"]
    part = hifi.Simulation.from_dict(d).run(keep=lambda model, k: model != 0 or k >= 2)["ladar"]
    assert full.sizes["frame"] == 4 and part.sizes["frame"] == 2
    for var in full.data_vars:
        if "frame" in full[var].dims:
            assert full[var].isel(frame=slice(2, 4)).values.tobytes() == part[var].values.tobytes(), var
    again = hifi.Simulation.from_dict(d).run()["ladar"]
    for var in full.data_vars:
        assert full[var].values.tobytes() == again[var].values.tobytes(), var


def test_mixed_pixel_validation_script():
    # validation/mixed_pixels.py on a cheap beam: floating points only in average mode, at the
    # block's two edges (|y| about 1 m), between the block (18.5 m) and the wall (20 m).
    import importlib.util
    path = REPO_ROOT / "validation" / "mixed_pixels.py"
    spec = importlib.util.spec_from_file_location("mixed_pixels", path)
    mp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mp)
    res = mp.run(19)
    assert all(len(res[m]["floating"]) == 0 for m in ("first", "last", "strongest", "dual"))
    fl = res["average"]["floating"]
    assert len(fl) >= 4
    assert all(18.5 < p["x_m"] < 20.0 and 0.8 < abs(p["y_m"]) < 1.3 for p in fl)
    assert {np.sign(p["y_m"]) for p in fl} == {-1.0, 1.0}              # both edges


def test_stored_waveform_holds_the_return_energy():
    # With store_waveform the full range-gate waveform of each pulse is written; its sum is the
    # sum of the sub-ray returns (energy conservation), here checked against the analytic
    # return of a plate filling the spot: sum_i w_i rho cos(theta_i) / R_i^2 with R_i, theta_i
    # of sub-ray i (rho = 0.8, plane x = 12).
    uv, w = subray_pattern(30)
    d = _scene([WALL], {"n_subrays": 30, "fov_deg": 0.01, "store_waveform": True})
    ds = hifi.Simulation.from_dict(d).run()["ladar"].isel(frame=0, step=0)
    t = np.tan(0.006)
    cos_i = 1.0 / np.sqrt(1.0 + t**2 * (uv**2).sum(axis=1))
    r_i = 12.0 / cos_i
    expected = np.sum(w * 0.8 * cos_i / r_i**2)
    assert float(ds.waveform.sum()) == pytest.approx(expected, rel=1e-6)
    peak_t = float(ds.bin[int(np.argmax(ds.waveform.values))])
    assert peak_t == pytest.approx(2 * 12.0 / 299792458.0, abs=0.5e-9)   # echo at 2 R / c


@pytest.mark.parametrize("mode", ["average", "dual"])
def test_frames_equal_the_numpy_receiver_bit_for_bit(mode):
    # Reference: the same frames with the receiver's numpy oracles in place of its compiled
    # kernels (tests.oracles.numpy_kernels): every variable's bytes. A block before a wall and a
    # floor below: spots on one surface, across the block's edges and along the floor.
    from tests.oracles import numpy_kernels
    floor = {"name": "floor", "mesh": "plane", "size_m": [60, 60], "material": "w", "position_m": [0, 0, -1.5]}
    objects = [WALL, floor, {"name": "block", "mesh": "box", "size_m": [1, 3, 3], "material": "w",
                             "position_m": [9.5, -1.5, 0]}]
    d = _scene(objects, {"n_subrays": 19, "fov_deg": 120.0, "angular_step_deg": 0.25, "return_mode": mode},
               sensor={"rpy_deg": [0, 4, 0]})
    fast = hifi.Simulation.from_dict(d).run()["ladar"]
    with numpy_kernels():
        ref = hifi.Simulation.from_dict(d).run()["ladar"]
    for var in ref.data_vars:
        assert fast[var].values.tobytes() == ref[var].values.tobytes(), var
    reported = fast.distance_noisy.values[0]                       # (step, return), no noise
    assert np.isfinite(reported).sum() > 100
    if mode == "dual":                                              # pulses with two echoes
        assert np.sum(reported[:, 1] - reported[:, 0] > 0.5) >= 2


@pytest.mark.parametrize("shared", [True, False])
def test_a_shared_mirror_and_roughness_gives_the_gathered_bits(monkeypatch, shared):
    """Regression test: the LADAR passes a mirror fraction or roughness that every object
    shares to ``lambertian_return`` as one number instead of a per-sub-ray gather; the frame
    must be bit for bit the one the gather gives (materials that share them, and ones that
    differ, where the gather is the only path)."""
    import sensors.ladar as ladar
    rough = {"roughness_deg": 12.0, "mirror": 0.25}
    d = _scene([WALL, {"name": "plate", "mesh": "plane", "size_m": [4, 4], "material": "p",
                       "position_m": [8, -2, 0], "rpy_deg": [0, -80, 0]}],
               {"n_subrays": 19, "fov_deg": 60.0, "angular_step_deg": 2.0})
    d["materials"] = {"w": {"reflectivity": 0.8, **rough},
                      "p": {"reflectivity": 0.4, **(rough if shared else {"roughness_deg": 30.0})}}
    first = hifi.Simulation.from_dict(d).run()["ladar"]
    if shared:
        assert ladar._shared_value(np.array([0.25, 0.25, np.nan])) == 0.25
    monkeypatch.setattr(ladar, "_shared_value", lambda table: None)
    gathered = hifi.Simulation.from_dict(d).run()["ladar"]
    assert np.any(first.detected.values)
    for name in first.data_vars:
        assert first[name].values.tobytes() == gathered[name].values.tobytes(), name
