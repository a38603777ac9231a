"""The receiver's impulse response and the mixed pixels it makes at depth edges
(sensors.lidar.impulse): closed forms for one and two echoes, and a plate before a wall."""

import numpy as np
import pytest

import hifi
from hifi.constants import SPEED_OF_LIGHT_M_S
from sensors.beam import bundle_echoes, pulse_sigma_s
from sensors.lidar.rotating import VLP16
from sensors.radiometry import lidar_received_power
from sensors.lidar.impulse import merge_limit_s, receiver_echoes, receiver_peak, receiver_response

TAU_P = 5e-9          # HDL-64E S2 data sheet pulse, FWHM [s]
C2 = SPEED_OF_LIGHT_M_S / 2.0


@pytest.mark.parametrize("tail_s", [2e-9, 10e-9, 30e-9])
def test_response_is_the_unit_area_exponentially_modified_gaussian(tail_s):
    t_pk, g_pk = receiver_peak(TAU_P, tail_s)
    # peak of 1 at t_peak; area g_pk^-1 (the unit-area convolution of two unit-area functions)
    assert receiver_response(t_pk, pulse_width_s=TAU_P, tail_s=tail_s) == pytest.approx(1.0, abs=1e-9)
    t = np.linspace(-20 * TAU_P, 40 * TAU_P + 60 * tail_s, 400_001)       # trapezoid, steps <= 2 ps
    area = np.trapezoid(receiver_response(t, pulse_width_s=TAU_P, tail_s=tail_s), t)
    assert area * g_pk == pytest.approx(1.0, rel=1e-6)
    # the convolution by direct quadrature at a few times (independent of the closed form)
    s = pulse_sigma_s(TAU_P)
    u = np.linspace(0.0, 60 * tail_s + 20 * s, 400_001)
    for t in (-3e-9, t_pk, 3 * tail_s):
        direct = np.trapezoid(np.exp(-0.5 * ((t - u) / s) ** 2) / (s * np.sqrt(2 * np.pi))
                              * np.exp(-u / tail_s) / tail_s, u)
        assert receiver_response(t, pulse_width_s=TAU_P, tail_s=tail_s) * g_pk == pytest.approx(direct, rel=1e-5)  # quadrature step
    # far behind the pulse, an exponential of time constant tau
    t = t_pk + 10 * s + 2 * tail_s
    ratio = receiver_response(t + tail_s, pulse_width_s=TAU_P, tail_s=tail_s) / receiver_response(
        t, pulse_width_s=TAU_P, tail_s=tail_s)
    assert ratio == pytest.approx(np.exp(-1.0), rel=1e-6)


def test_merge_limit_closed_forms():
    s = pulse_sigma_s(TAU_P)
    snr = np.array([10.0, 100.0, 1000.0])
    # no tail: the Gaussian pulse stays above the threshold for s sqrt(2 ln(snr / thr))
    np.testing.assert_allclose(merge_limit_s(snr, pulse_width_s=TAU_P, tail_s=0.0, snr_threshold=4.75),
                               s * np.sqrt(2 * np.log(snr / 4.75)), atol=1e-12)            # 1 ps
    # a tail of tau >> s: the exponential's own t_peak + tau ln(snr / thr), to within s
    tau = 40e-9
    t_pk = receiver_peak(TAU_P, tau)[0]
    lim = merge_limit_s(snr, pulse_width_s=TAU_P, tail_s=tau, snr_threshold=4.75)
    np.testing.assert_allclose(lim, t_pk + tau * np.log(snr / 4.75), atol=s)
    assert np.isnan(merge_limit_s(np.array([4.0]), pulse_width_s=TAU_P, tail_s=tau, snr_threshold=4.75))[0]


@pytest.mark.parametrize("tail_s", [5e-9, 20e-9])
def test_two_plates_merge_into_a_mixed_pixel_up_to_the_merge_limit(tail_s):
    """Two plates at R and R + gap share a spot: power P1 near, P2 far (threshold 1). Below the
    merge limit of the near echo (its filtered signal still above the threshold when the far
    echo arrives) the receiver reports one return at R + gap P2 / (P1 + P2), the centroid;
    beyond it two returns, each at its own plate, and no range between."""
    p1, p2, thr, r0 = 400.0, 100.0, 1.0, 20.0
    limit_m = C2 * float(merge_limit_s(np.array([p1 / thr]), pulse_width_s=TAU_P, tail_s=tail_s, snr_threshold=1.0)[0])
    gaps = np.array([0.3, 0.5, 0.9, 0.99, 1.01, 1.5]) * limit_m
    r = np.column_stack([np.full(gaps.size, r0), r0 + gaps])
    pw = np.tile([p1, p2], (gaps.size, 1))
    for mode in ("first", "last", "strongest"):
        rep = receiver_echoes(r, pw, mode=mode, pulse_width_s=TAU_P, tail_s=tail_s, threshold_w=thr)
        merged = gaps < limit_m
        np.testing.assert_allclose(rep.range_m[merged, 0], r0 + gaps[merged] * p2 / (p1 + p2), atol=1e-9)
        np.testing.assert_allclose(rep.energy[merged, 0], p1 + p2)
        apart = {"first": r0, "last": r0 + gaps, "strongest": r0}[mode]
        np.testing.assert_allclose(rep.range_m[~merged, 0], np.broadcast_to(apart, gaps.shape)[~merged], atol=1e-9)
    # a tail of tens of ns merges edges metres deep (the "5 ns cannot merge 4-8 m" argument
    # misses the receiver): 400 x the threshold, tau = 20 ns -> about 19 m
    if tail_s == 20e-9:
        assert limit_m > 8.0


def test_strongest_compares_the_filtered_peaks():
    """A weak far echo beyond the merge limit rides on the near echo's tail: its filtered peak
    is its own power plus that tail, so it can win the strongest-return comparison that its
    optical power alone would lose."""
    tail = 20e-9
    thr, p1, gap = 1.0, 30.0, 14.0
    # the near echo's tail at the far echo's peak (closed form of the response)
    t_pk = receiver_peak(TAU_P, tail)[0]
    lift = p1 * receiver_response(gap / C2 + t_pk, pulse_width_s=TAU_P, tail_s=tail)
    assert C2 * merge_limit_s(np.array([p1]), pulse_width_s=TAU_P, tail_s=tail, snr_threshold=thr)[0] < gap
    p2 = p1 - 0.5 * lift                                   # weaker than p1, stronger once filtered
    rep = receiver_echoes(np.array([[10.0, 10.0 + gap]]), np.array([[p1, p2]]), mode="strongest",
                          pulse_width_s=TAU_P, tail_s=tail, threshold_w=thr)
    assert rep.range_m[0, 0] == pytest.approx(10.0 + gap, abs=1e-9)
    old = bundle_echoes(np.array([[10.0, 10.0 + gap]]), np.array([[p1, p2]]), mode="strongest",
                        resolution_m=C2 * TAU_P)
    assert old.range_m[0, 0] == pytest.approx(10.0, abs=1e-9)


def test_single_echoes_are_reported_exactly():
    # a pulse whose sub-rays all hit one plane reports their weighted mean, the pencil's range
    r = np.array([[12.0, 12.0, 12.0], [5.0, np.nan, np.nan]])
    rep = receiver_echoes(r, np.array([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), mode="strongest", pulse_width_s=TAU_P,
                          tail_s=10e-9, threshold_w=0.1)
    np.testing.assert_allclose(rep.range_m[:, 0], [12.0, 5.0], atol=1e-12)


def _plate_before_wall(gap_m, tail_s, timing="centroid"):
    """A VLP-16's pulses across a 2 m plate at 10 m before a wall gap_m behind it (both
    reflectivity 0.5, Lambertian); BlenSor detection and no range noise, so that every range
    not on a surface comes from the footprint."""
    d = {"simulation": {"duration_s": 0.1, "seed": 3},
         "materials": {"m": {"reflectivity": 0.5}},
         "objects": [{"name": "wall", "mesh": "plane", "size_m": [200, 200], "material": "m",
                      "position_m": [10.0 + gap_m, 0, 0], "rpy_deg": [0, -90, 0]},
                     {"name": "plate", "mesh": "box", "size_m": [0.05, 2.0, 2.0], "material": "m",
                      "position_m": [10.0, 0, 0]}],
         "sensors": [{"name": "v", "model": "vlp16", "params": {
             "noise_sigma_m": 0.0, "bias_sigma_m": 0.0, "detection_model": "blensor", "receiver_tail_s": tail_s,
             "edge_timing": timing}}]}
    ds = hifi.Simulation.from_dict(d).run()["v"].isel(frame=0)
    ahead = np.abs(ds.yaw.values) < np.radians(20)
    x = ds.x_noisy.values[ahead & ds.detected.values]
    return np.sum((x > 10.2) & (x < 10.0 + gap_m - 0.2)), np.sum(np.abs(x - 10.0) < 0.1)


def test_plate_before_a_wall_floats_points_only_within_the_tail():
    """A 2 m plate 4 m before a wall: without a receiver tail no return lies between them (the
    5 ns pulse resolves 0.75 m); with a 20 ns tail the edge pulses straddling the plate's sides
    report ranges between (mixed pixels). 30 m behind, the tail has decayed below the threshold
    before the wall's echo arrives (merge limit of the whole spot on the plate, the lidar
    equation at the VLP-16's fitted noise: 13 m) and nothing floats."""
    p = {k: v.default for k, v in VLP16.PARAMS.items()}
    snr = lidar_received_power(p["peak_power_w"], 0.5, 1.0, 10.0, receiver_area_m2=np.pi * p["receiver_aperture_m"] ** 2
                               / 4, system_efficiency=p["optical_efficiency"]) / p["noise_power_w"]
    limit_m = C2 * merge_limit_s(np.array([snr]), pulse_width_s=p["pulse_width_s"], tail_s=20e-9,
                                 snr_threshold=p["snr_threshold"])[0]
    assert 4.0 < limit_m < 30.0
    n0, plate0 = _plate_before_wall(4.0, 0.0)
    n1, plate1 = _plate_before_wall(4.0, 20e-9)
    assert plate0 > 100 and plate1 > 100
    assert n0 == 0
    assert n1 >= 5
    far, _ = _plate_before_wall(30.0, 20e-9)
    assert far == 0
    # timed on the peak (the default), the merged return reports the stronger part's surface:
    # at 4 m a weak far part on the tail pulls the peak by a fraction of the pulse, not metres
    peak, _ = _plate_before_wall(4.0, 20e-9, "peak")
    assert peak == 0


def test_peak_timing_of_merged_echoes():
    """``timing = "peak"``: two equal echoes merge into one symmetric pulse whose maximum lies
    half-way between them (symmetry; a sum of two equal Gaussians 0.5 sigma apart has one
    maximum); with a tail the sum is not symmetric, and its maximum still lies between them; unequal echoes a few pulse widths apart keep two maxima and the stronger one's
    is reported at its own range (less than a millimetre of pull from the other)."""
    s_m = C2 * pulse_sigma_s(TAU_P)                    # the pulse's sigma in range, 0.32 m
    r = np.array([[20.0, 20.0 + 0.5 * s_m]])
    rep = receiver_echoes(r, np.array([[50.0, 50.0]]), mode="strongest", pulse_width_s=TAU_P, tail_s=1e-12,
                          threshold_w=1.0, timing="peak")
    assert rep.range_m[0, 0] == pytest.approx(20.0 + 0.25 * s_m, abs=1e-3)                 # 1 mm
    rep = receiver_echoes(r, np.array([[50.0, 50.0]]), mode="strongest", pulse_width_s=TAU_P, tail_s=10e-9,
                          threshold_w=1.0, timing="peak")
    assert 20.0 < rep.range_m[0, 0] < 20.0 + 0.5 * s_m
    rep = receiver_echoes(np.array([[20.0, 20.0 + 10 * s_m]]), np.array([[50.0, 20.0]]), mode="strongest",
                          pulse_width_s=TAU_P, tail_s=2e-9, threshold_w=1.0, timing="peak")
    assert rep.range_m[0, 0] == pytest.approx(20.0, abs=1e-3)
