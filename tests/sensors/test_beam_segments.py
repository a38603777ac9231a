"""Echo segments without whole waveforms (memory and speed): sensors.beam.echo_segments groups the sub-ray
returns exactly as the waveform receiver (return_waveform + waveform_segments) does."""

import numpy as np
import pytest
from scipy.ndimage import convolve1d

from sensors.beam import (_compact_segments, _convolution_taps, echo_segments, echo_window, pulse_kernel,
                          return_waveform, round_trip_s, sampled_waveform, segment_report, waveform_segments)
from tests.oracles import beam as oracle

#: The compiled kernel and its numpy oracle: both must give the waveform receiver's segments.
IMPLEMENTATIONS = [echo_segments, oracle.echo_segments]

BIN_S = 0.5e-9       # receiver bin [s] (the sensors' default)
PULSE_S = 5e-9       # pulse FWHM [s] (the sensors' default)


def _pulses(seed, p=800, n=7):
    """Sub-ray ranges [m] and energies with every case the receiver meets: spreads of a
    millimetre (one bin, one echo), 0.3 m (merged echoes), 3 m (separate echoes) and 110 m (an
    edge against the far background); single sub-rays, missing returns, zero and NaN energies,
    pulses with no return at all."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0.2, 125.0, (p, 1))
    scale = rng.choice([0.001, 0.3, 3.0, 110.0], size=(p, 1), p=[0.4, 0.3, 0.2, 0.1])
    r = np.abs(centre + scale * rng.uniform(-0.5, 0.5, (p, n)))
    r[rng.uniform(size=(p, n)) < 0.15] = np.nan
    r[5] = np.nan                                     # no return
    r[6, 1:] = np.nan                                 # a single sub-ray
    r[7, :] = 30.0                                    # every sub-ray at the same range
    e = rng.uniform(0.0, 1.0, (p, n)) / np.maximum(r, 1.0) ** 2
    e[rng.uniform(size=(p, n)) < 0.05] = 0.0
    e[rng.uniform(size=(p, n)) < 0.02] = np.nan
    return r, e


@pytest.mark.parametrize("bin_s, pulse_s", [(BIN_S, PULSE_S), (0.25e-9, 3e-9), (1e-9, 2e-9)])
def test_sampled_waveform_equals_scipy_convolve1d_bit_for_bit(bin_s, pulse_s):
    # Independent implementation: scipy.ndimage.convolve1d, as return_waveform applies it.
    rng = np.random.default_rng(0)
    kernel = pulse_kernel(bin_s, pulse_s)
    half = (len(kernel) - 1) // 2
    x = rng.uniform(0.0, 1.0, (50, 6 * half)) * (rng.uniform(size=(50, 6 * half)) < 0.1)   # sparse impulses
    x[0] = 0.0
    taps, symmetric = _convolution_taps(bin_s, pulse_s)
    assert symmetric                                  # a Gaussian kernel takes scipy's symmetric branch
    n_out = x.shape[1] - 2 * half
    want = convolve1d(x, kernel, axis=1, mode="constant")[:, half:half + n_out]
    assert sampled_waveform(x, taps, symmetric, n_out).tobytes() == want.tobytes()


def test_sampled_waveform_general_branch_equals_scipy():
    # An asymmetric kernel takes scipy's general branch; independent implementation: scipy.
    rng = np.random.default_rng(1)
    kernel = rng.uniform(0.0, 1.0, 9)
    x = rng.uniform(0.0, 1.0, (20, 40))
    want = convolve1d(x, kernel, axis=1, mode="constant")[:, 4:36]
    assert sampled_waveform(x, kernel[::-1].copy(), False, 32).tobytes() == want.tobytes()


def _reference_segments(local, e, n_bins):
    """The waveform receiver: the whole waveform of every pulse in a window of n_bins bins."""
    wf = return_waveform(local, e, bin_width_s=BIN_S, n_bins=n_bins, pulse_width_s=PULSE_S)
    has = np.isfinite(local) & (np.nan_to_num(e) > 0)
    return waveform_segments(wf, local, has, bin_width_s=BIN_S)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("seed, n", [(0, 7), (1, 7), (2, 7), (3, 100)])
def test_echo_segments_group_the_returns_as_the_waveform_does(seed, n, impl):
    # Reference: return_waveform + waveform_segments (the receiver before 2026-11-24) on the
    # window every pulse needs; the grouping and its order must agree (numbers compacted).
    # n = 100: many non-zero impulses within a kernel half-width (the kernel's dense branch).
    r, e = _pulses(seed, p=800 if n < 50 else 300, n=n)
    arrival = round_trip_s(r)
    win = echo_window(arrival, bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    local = arrival - win.start_bin[:, None] * BIN_S
    want = _compact_segments(_reference_segments(local, e, int(win.n_bins.max())))
    for budget in (32 * 2**20, 4096):
        got = impl(local, e, win.n_bins, bin_width_s=BIN_S, pulse_width_s=PULSE_S, budget_bytes=budget)
        assert np.array_equal(_compact_segments(got), want), budget
        if impl is echo_segments:            # the kernel numbers a pulse's segments 0, 1, ... itself
            assert np.array_equal(got, want), budget
    # the cases are there: one-bin pulses, spread pulses with merged and with separate echoes
    assert (want.max(axis=1) == 0).sum() > 100 and (want.max(axis=1) > 0).sum() > 50


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_echo_segments_fall_back_to_the_whole_waveform_at_the_window_edge(impl):
    # With a window too short for some pulses (n_bins below what echo_window asks), those
    # pulses take the whole-waveform path, the others the sampled one; both must agree with the
    # reference on that same short window.
    r, e = _pulses(4)
    arrival = round_trip_s(r)
    win = echo_window(arrival, bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    local = arrival - win.start_bin[:, None] * BIN_S
    short = 120
    want = _compact_segments(_reference_segments(local, e, short))
    got = impl(local, e, np.full(len(r), short), bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    assert np.array_equal(_compact_segments(got), want)
    assert np.sum(win.n_bins > short) > 20             # many pulses took the fallback


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_echo_segments_edge_shapes(impl):
    # No pulses, no sub-rays, and all-NaN input: -1 everywhere, the right shape.
    for p, n in ((0, 4), (3, 0)):
        got = impl(np.zeros((p, n)), np.zeros((p, n)), np.full(p, 100), bin_width_s=BIN_S,
                            pulse_width_s=PULSE_S)
        assert got.shape == (p, n) and got.dtype == np.int64
    nan = np.full((2, 3), np.nan)
    got = impl(nan, nan, np.full(2, 100), bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    assert got.tolist() == [[-1, -1, -1], [-1, -1, -1]]


def test_compact_segments_keeps_order_and_missing():
    # Analytic: ranks per row of the distinct segment numbers; -1 stays -1.
    seg = np.array([[7, -1, 3, 7, 12], [-1, -1, -1, -1, -1], [0, 0, 0, 0, 0]])
    assert _compact_segments(seg).tolist() == [[1, -1, 0, 1, 2], [-1] * 5, [0] * 5]


@pytest.mark.parametrize("mode", ["first", "last", "strongest", "dual", "strongest_last", "average"])
def test_segment_report_kernel_equals_the_numpy_reference_bit_for_bit(mode):
    # Reference: the oracle's segment_report (numpy bincount / argmax, the receiver before 2026-11-24);
    # average: sensors.beam's own numpy against the oracle's (regression).
    # Random segments with empty ones in between, ties of energy, infinite and zero energies,
    # NaN energies, pulses without returns; thresholds that detect all, some and none.
    rng = np.random.default_rng(5)
    p, n = 2000, 9
    seg = rng.integers(-1, 6, (p, n))
    seg[:20] = -1                                           # no return
    seg[20:40] = np.where(seg[20:40] >= 0, 3, -1)           # one segment, numbered 3
    r = rng.uniform(1.0, 80.0, (p, n))
    e = rng.choice([0.5, 1.0, 2.0], size=(p, n)) * rng.choice([1.0, 1e-4], size=(p, 1))   # ties
    e[40:45, 0] = np.inf
    e[45:50, 1] = np.nan
    e = np.where(seg >= 0, e, 0.0)
    e[50:60] = np.where(seg[50:60] >= 0, np.nan_to_num(e[50:60]) + 1e-9, 0.0)
    for threshold in (0.0, 1.5, 1e9):
        kw = dict(mode=mode, detection_threshold=threshold, cutoff_m=3.0)
        with np.errstate(over="ignore"):        # the infinite energies (1.8e308 after nan_to_num)
            want = oracle.segment_report(seg, e, r, **kw)
            got = segment_report(seg, e, r, **kw)
        for name, a, b in zip(("range_m", "energy", "dominant", "members"), want, got):
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert a.tobytes() == b.tobytes(), (name, threshold)


@pytest.mark.parametrize("mode", ["first", "dual", "average"])
def test_segment_report_of_no_pulses_or_no_subrays_detects_nothing(mode):
    """Shapes (0, n) and (p, 0): an empty report of the mode's slots (the numpy receiver before
    the kernel raised on (p, 0): argmax of an empty axis)."""
    m = 2 if mode == "dual" else 1
    for p, n in ((0, 5), (3, 0)):
        rep = segment_report(np.full((p, n), -1), np.zeros((p, n)), np.zeros((p, n)), mode=mode,
                             detection_threshold=0.0, cutoff_m=3.0)
        assert rep.range_m.shape == (p, m) and rep.members.shape == (p, m, n)
        assert np.isnan(rep.range_m).all() and (rep.dominant == -1).all() and not rep.members.any()


@pytest.mark.parametrize("mode", ["first", "last", "strongest", "dual", "strongest_last", "average"])
@pytest.mark.parametrize("n", [7, 19, 200])
def test_echo_report_equals_the_numpy_reference_bit_for_bit(mode, n, monkeypatch):
    # Reference: the oracle's echo_report (round_trip_s, echo_window, then the numpy
    # echo_segments and segment_report in row chunks: the receiver before 2026-11-28). n = 19
    # and 200: the average mode's row sums take numpy's eight-way and halving branches.
    import sensors.beam as beam
    from hifi.caster import ChunkPool
    r, e = _pulses(10 + n, p=240 if n > 100 else 500, n=n)
    kw = dict(bin_width_s=BIN_S, pulse_width_s=PULSE_S, mode=mode, detection_threshold=1e-6, cutoff_m=3.0)
    want, want_start = oracle.echo_report(r, e, **kw)
    got, got_start = beam.echo_report(r, e, **kw)
    assert got_start.tobytes() == want_start.tobytes()
    for name, a, b in zip(("range_m", "energy", "dominant", "members"), want, got):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name
    # in parts on two threads (any work shared), and with a window too short for some pulses
    # (the whole-waveform fallback): the same bytes
    monkeypatch.setattr(beam, "_MIN_COST_THREADED", 0.0)
    pool = ChunkPool(2)
    try:
        threaded, _ = beam.echo_report(r, e, threads=pool, **kw)
    finally:
        pool.close()
    assert all(a.tobytes() == b.tobytes() for a, b in zip(want, threaded))


def test_echo_report_takes_the_whole_waveform_where_the_window_is_too_short(monkeypatch):
    # The window kernel's lengths cut below what the samples need for every third pulse: those
    # pulses take the numpy whole-waveform path; reference: the oracle's echo_segments and
    # segment_report on the same short windows.
    import sensors.beam as beam
    import sensors._beam_kernel as kernel
    r, e = _pulses(4)
    kw = dict(mode="dual", detection_threshold=0.0, cutoff_m=3.0)
    arrival = round_trip_s(r)
    win = echo_window(arrival, bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    half = (len(pulse_kernel(BIN_S, PULSE_S)) - 1) // 2
    n_bins = win.n_bins.copy()
    n_bins[::3] = np.minimum(n_bins[::3], 2 * half + 8)
    local = arrival - win.start_bin[:, None] * BIN_S
    seg = oracle.echo_segments(local, e, n_bins, bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    want = oracle.segment_report(seg, e, r, **kw)
    window = kernel.window_kernel

    def short(range_m, c, dt, half, arrival, start_bin, lengths, cost):
        window(range_m, c, dt, half, arrival, start_bin, lengths, cost)
        lengths[:] = n_bins

    calls = []
    waveform = beam.return_waveform
    monkeypatch.setattr(kernel, "window_kernel", short)
    monkeypatch.setattr(beam, "return_waveform", lambda *a, **k: calls.append(len(a[0])) or waveform(*a, **k))
    got, _ = beam.echo_report(r, e, bin_width_s=BIN_S, pulse_width_s=PULSE_S, **kw)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(want, got))
    assert sum(calls) > 20                     # many pulses took the whole waveform


def test_numpy_sum_is_numpys_row_sum():
    # Independent reference: numpy's own add.reduce over rows, for every branch of its pairwise
    # sum (below 8, up to 128, halving above) and magnitudes that make the order show.
    from sensors._beam_kernel import _numpy_sum
    rng = np.random.default_rng(3)
    for n in (0, 1, 5, 8, 9, 19, 64, 127, 128, 129, 200, 257, 1000, 4099):
        a = rng.standard_normal((4, n)) * 10.0 ** rng.integers(-8, 9, (4, n))
        want = a.sum(axis=1)
        got = np.array([0.0 + _numpy_sum(np.ascontiguousarray(row), n) for row in a])
        assert got.tobytes() == want.tobytes(), n
