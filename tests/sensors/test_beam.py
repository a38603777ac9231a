"""Divergent-beam echo pipeline: memory bounded by the echoes, results independent of chunking
(the receiver's window, fixed on 2026-11-23)."""

import tracemalloc

import numpy as np
import pytest

from sensors import beam
from sensors.beam import (EchoReport, beam_echoes, echo_window, full_waveform, pulse_kernel, round_trip_s,
                          window_chunks)

BIN_S = 0.5e-9       # receiver bin [s] (the sensors' default)
PULSE_S = 5e-9       # pulse FWHM [s] (the sensors' default)
GATE_BINS = int(np.ceil(round_trip_s(120.0) / BIN_S)) + 1     # a 120 m range gate, as the LADAR sizes it
MODES = ("first", "last", "strongest", "average", "dual")


# --- regression reference: the pre-fix single-window implementation -----------------------------
# sensors/beam.py before 2026-11-23 (commit e0645a0): one window length, the widest of any pulse,
# for every pulse, then the windowed waveforms placed in the range gate. Kept here ONLY as the
# reference of the bit-for-bit regression test below; return_waveform and process_returns are
# the unchanged library functions.

def _reference_echo_window(arrival_s, *, bin_width_s, pulse_width_s):
    tau = np.asarray(arrival_s, dtype=float)
    half = (len(pulse_kernel(bin_width_s, pulse_width_s)) - 1) // 2
    has = np.isfinite(tau)
    t_min = np.min(np.where(has, tau, np.inf), axis=1)
    t_max = np.max(np.where(has, tau, -np.inf), axis=1)
    any_echo = np.isfinite(t_min)
    t_min = np.where(any_echo, t_min, 0.0)
    t_max = np.where(any_echo, t_max, 0.0)
    start = np.floor(t_min / bin_width_s).astype(np.int64) - half - 2
    span = np.ceil((t_max - t_min) / bin_width_s).astype(np.int64)
    return start, int(span.max(initial=0)) + 2 * half + 6


def _reference_beam_echoes(range_m, energy, *, bin_width_s, pulse_width_s, mode, detection_threshold, cutoff_m,
                           gate_bins):
    arrival = round_trip_s(range_m)
    start, n_local = _reference_echo_window(arrival, bin_width_s=bin_width_s, pulse_width_s=pulse_width_s)
    local = arrival - start[:, None] * bin_width_s
    wf = beam.return_waveform(local, energy, bin_width_s=bin_width_s, n_bins=n_local, pulse_width_s=pulse_width_s)
    report = beam.process_returns(wf, local, energy, range_m, bin_width_s=bin_width_s, mode=mode,
                                  detection_threshold=detection_threshold, cutoff_m=cutoff_m)
    p = wf.shape[0]
    full = np.zeros((p, gate_bins))
    cols = start[:, None] + np.arange(n_local)
    inside = (cols >= 0) & (cols < gate_bins)
    full[np.nonzero(inside)[0], cols[inside]] = wf[inside]
    return report, full, start

# --- end of the regression reference ------------------------------------------------------------


def _random_pulses(seed, p=600, n=7):
    """Sub-ray ranges [m] and energies covering every case the windowing meets.

    Pulses centred 0.2 to 125 m away (some closer than the kernel, so windows start before
    t = 0, some beyond the 120 m gate); sub-ray spreads of millimetres (one echo), metres
    (separate echoes) and up to 110 m (an edge against the far background); missing returns,
    zero and NaN energies, and a pulse with no return at all.
    """
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0.2, 125.0, (p, 1))
    scale = rng.choice([0.003, 0.3, 3.0, 110.0], size=(p, 1), p=[0.4, 0.3, 0.2, 0.1])
    r = np.abs(centre + scale * rng.uniform(-0.5, 0.5, (p, n)))
    r[rng.uniform(size=(p, n)) < 0.15] = np.nan
    r[5] = np.nan
    e = rng.uniform(0.0, 1.0, (p, n)) / np.maximum(r, 1.0) ** 2
    e[rng.uniform(size=(p, n)) < 0.05] = 0.0
    e[rng.uniform(size=(p, n)) < 0.02] = np.nan
    return r, e


@pytest.mark.parametrize("mode", MODES)
def test_chunked_echoes_equal_the_single_window_bit_for_bit(mode):
    # Regression test: the grouped/chunked pipeline reports the same bytes as the pre-fix
    # single-window implementation above, whatever the chunking (default budget, chunks of a
    # few pulses, one pulse per chunk), with and without the stored range-gate waveform.
    r, e = _random_pulses(1)
    for threshold in (0.0, 1e-3):
        kw = dict(bin_width_s=BIN_S, pulse_width_s=PULSE_S, mode=mode, detection_threshold=threshold, cutoff_m=3.0)
        ref_report, ref_full, ref_start = _reference_beam_echoes(r, e, gate_bins=GATE_BINS, **kw)
        # Default budget (one chunk per bucket), chunks of a few pulses, one pulse per chunk.
        cases = [(beam.WAVEFORM_BUDGET_BYTES, 0), (beam.WAVEFORM_BUDGET_BYTES, GATE_BINS), (64 * 1024, 0),
                 (64 * 1024, GATE_BINS)] + ([(1, GATE_BINS)] if threshold else [])
        for budget, gate in cases:
            got = beam_echoes(r, e, gate_bins=gate, budget_bytes=budget, **kw)
            for name, want, have in zip(EchoReport._fields, ref_report, got.report):
                assert have.dtype == want.dtype and have.shape == want.shape, name
                assert have.tobytes() == want.tobytes(), (name, budget, gate)
            assert got.start_bin.tobytes() == ref_start.tobytes()
            assert got.waveform.shape == (r.shape[0], gate)
            if gate:
                assert got.waveform.tobytes() == ref_full.tobytes(), budget


def test_window_chunks_partition_the_pulses_within_the_budget():
    rng = np.random.default_rng(2)
    need = rng.integers(80, 2000, 5000)
    budget, bin_bytes, row_bytes = 256 * 1024, 32, 500
    chunks = window_chunks(need, bin_bytes=bin_bytes, row_bytes=row_bytes, budget_bytes=budget)
    rows = np.concatenate([c for c, _ in chunks])
    assert np.array_equal(np.sort(rows), np.arange(need.size))          # every pulse exactly once
    for c, width in chunks:
        assert np.all(np.diff(c) > 0)                                   # ascending
        assert width == need[c].max()
        assert np.all(width < 2 * need[c])                              # power-of-two buckets: < 2x each need
        assert c.size * (bin_bytes * width + row_bytes) <= budget       # within the budget
    assert window_chunks(np.zeros(0, dtype=np.int64)) == []
    # A pulse larger than the budget is a chunk of its own.
    assert [c.tolist() for c, _ in window_chunks([100, 100], budget_bytes=1)] == [[0], [1]]


def test_echo_window_holds_every_echo():
    # Property: the waveform placed in the full range gate is zero outside each pulse's own
    # window, and holds every return's energy (energy conservation, exact bin integrals) when
    # every echo and its pulse (8.5 sigma = 18 ns, 2.7 m of range) lie inside the 120 m gate.
    r, e = _random_pulses(3)
    r = np.where((r > 3.0) & (r < 117.0), r, np.nan)
    got = beam_echoes(r, e, bin_width_s=BIN_S, pulse_width_s=PULSE_S, mode="first", detection_threshold=0.0,
                      cutoff_m=3.0, gate_bins=GATE_BINS)
    win = echo_window(round_trip_s(r), bin_width_s=BIN_S, pulse_width_s=PULSE_S)
    cols = np.arange(GATE_BINS)
    outside = (cols < win.start_bin[:, None]) | (cols >= (win.start_bin + win.n_bins)[:, None])
    assert np.all(got.waveform[outside] == 0.0)
    expected = np.where(np.isfinite(r), np.nan_to_num(e), 0.0).sum(axis=1)
    np.testing.assert_allclose(got.waveform.sum(axis=1), expected, rtol=1e-12, atol=1e-300)


def _peak_bytes(func):
    """Peak of the Python/numpy allocations [bytes] made while ``func`` runs (tracemalloc)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    func()
    peak = tracemalloc.get_traced_memory()[1] - base
    if not was_tracing:
        tracemalloc.stop()
    return peak


def _tight_pulses(p=10_000, n=4, seed=4):
    """p pulses of n sub-rays within 0.3 m of one another, 10 to 60 m away."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(10.0, 60.0, (p, 1)) + rng.uniform(0.0, 0.3, (p, n))
    return r, rng.uniform(0.01, 1.0, (p, n)) / r**2


def test_one_wide_pulse_does_not_set_the_memory_of_all():
    # 10,000 tight pulses (one echo each: windows of 84 bins) plus one pulse with echoes at
    # 1 m and 120 m (a window of about 1,680 bins). Before 2026-11-23 that pulse set the window
    # of all 10,001 pulses: about 19x the memory of the tight pulses alone (measured: 23 MiB
    # -> 431 MiB). The bound: the wide pulse may at most double the peak of the tight pulses
    # alone, the pencil-like case of the same sweep.
    r, e = _tight_pulses()
    wide_r = np.array([[1.0, 120.0, 1.05, 119.9]])
    r_mixed, e_mixed = np.vstack([r, wide_r]), np.vstack([e, 1.0 / wide_r**2])
    kw = dict(bin_width_s=BIN_S, pulse_width_s=PULSE_S, mode="strongest", detection_threshold=0.0, cutoff_m=3.0)
    tight = _peak_bytes(lambda: beam_echoes(r, e, **kw))
    mixed = _peak_bytes(lambda: beam_echoes(r_mixed, e_mixed, **kw))
    assert mixed <= 2 * tight, (tight / 2**20, mixed / 2**20)


def test_peak_memory_follows_the_budget():
    # With a 1 MiB budget the peak is the budget plus the arrays beam_echoes holds for the whole
    # input: arrival times (8 B per sub-ray), the echo-window temporaries (17 B per sub-ray:
    # float64 masked times and a bool mask), the members of the report (1 B per sub-ray) and
    # per pulse the window, bucket and report arrays (about 100 B), plus the requested range-gate
    # waveform (8 B per gate bin). Bound: 32 B per sub-ray and 128 B per pulse on top of the
    # budget and the gate. The working arrays alone would be 25.6 MiB in one chunk (10,001
    # pulses x 84 bins x 32 B), or 431 MiB as one window before 2026-11-23.
    r, e = _tight_pulses()
    r, e = np.vstack([r, [[1.0, 120.0, 1.05, 119.9]]]), np.vstack([e, np.full((1, 4), 1e-3)])
    p, n = r.shape
    budget = 2**20
    for gate in (0, GATE_BINS):
        peak = _peak_bytes(lambda g=gate: beam_echoes(r, e, bin_width_s=BIN_S, pulse_width_s=PULSE_S, mode="dual",
                                                      detection_threshold=0.0, cutoff_m=3.0, gate_bins=g,
                                                      budget_bytes=budget))
        assert peak <= budget + 8 * p * gate + 32 * p * n + 128 * p, (gate, peak / 2**20)


def test_full_waveform_drops_samples_outside_the_gate():
    # Analytic: a window starting 2 bins before the gate and ending 1 bin past it.
    wf = np.arange(1.0, 8.0)[None, :]
    full = full_waveform(wf, np.array([-2]), 4)
    assert full.tolist() == [[3.0, 4.0, 5.0, 6.0]]
