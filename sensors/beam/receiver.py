"""What the receiver of a divergent beam reports: the echoes of a pulse from the segments its
sub-rays' returns fell in (:func:`segment_report`, every return mode), and the same without a
waveform for small sub-ray bundles (:func:`bundle_echoes`).

The segments come from :mod:`sensors.beam.waveform`; the pipeline that joins them,
:func:`sensors.beam.beam_echoes`, and every name here are importable from :mod:`sensors.beam`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["EchoReport", "bundle_echoes", "compact_segments", "dominant", "report_arrays", "report_from_groups",
           "segment_report"]

class EchoReport(NamedTuple):
    """What the receiver reports per pulse and return slot (:func:`process_returns`).

    Attributes
    ----------
    range_m : (p, m) float
        Reported range [m], NaN where nothing is reported.
    energy : (p, m) float
        Energy of the reported return.
    dominant : (p, m) int
        Sub-ray carrying most of the return's energy, -1 for none.
    members : (p, m, n) bool
        Which sub-rays make up each reported return.
    """

    range_m: np.ndarray
    energy: np.ndarray
    dominant: np.ndarray
    members: np.ndarray


def segment_report(seg_i, energy, range_m, *, mode, detection_threshold, cutoff_m):
    """What the receiver reports, from the segment each sub-ray's return fell in.

    Parameters
    ----------
    seg_i : (p, n) int
        Segment of each sub-ray (:func:`waveform_segments`), -1 for no return; segments are
        numbered in time order. Only the grouping and its order matter: any numbering that
        keeps both gives the same report bit for bit.
    energy, range_m : (p, n) float
        Return energy and path length [m] of every sub-ray.
    mode, detection_threshold, cutoff_m
        As :func:`process_returns`.

    Returns
    -------
    EchoReport

    Notes
    -----
    Per pulse, each segment's energy (the sum of its sub-rays') and centroid range (the
    pulse's nearest return plus the energy-weighted mean offset); segments of at least
    ``detection_threshold`` are detected; ``first``, ``last``, ``strongest`` pick one of them,
    ``dual`` first and last, ``strongest_last`` the strongest and the last (the second
    strongest where they coincide); ``average`` the energy-weighted mean range of the returns
    within ``cutoff_m`` behind the first detected segment's centroid. Every mode in the
    compiled kernel :func:`sensors._beam_kernel.report_kernel`, held to the numpy oracle of
    ``tests/oracles/beam.py`` bit for bit.
    """
    seg_i = np.asarray(seg_i, dtype=np.int64)
    if seg_i.size == 0:
        return _empty_report(seg_i.shape, mode)
    from .._beam_kernel import REPORT_MODES, report_kernel  # numba, only where a divergent beam runs
    e = np.nan_to_num(np.asarray(energy, dtype=float))
    rng = np.asarray(range_m, dtype=float)
    p, n = seg_i.shape
    n_seg = max(int(seg_i.max()) + 1, 1)
    if n_seg > n:
        # Renumber each pulse's occupied segments 0, 1, ... in time order (segments without a
        # return are never reported): the per-pulse segment arrays then stay within n.
        seg_i = compact_segments(seg_i)
        n_seg = max(int(seg_i.max()) + 1, 1)
    out = report_arrays(p, n, mode)
    report_kernel(np.ascontiguousarray(seg_i), np.ascontiguousarray(e), np.ascontiguousarray(rng), REPORT_MODES[mode],
                  float(detection_threshold), float(cutoff_m), n_seg, *out)
    return out


def report_arrays(p, n, mode) -> "EchoReport":
    """Uninitialised report arrays of ``p`` pulses of ``n`` sub-rays, the mode's slots."""
    m = 2 if mode in ("dual", "strongest_last") else 1
    return EchoReport(np.empty((p, m)), np.empty((p, m)), np.empty((p, m), dtype=np.int64),
                      np.empty((p, m, n), dtype=bool))


def _empty_report(shape, mode) -> "EchoReport":
    """The report of pulses without sub-rays or of no pulses (``shape`` (p, n), p or n zero):
    nothing detected."""
    p, n = shape
    m = 2 if mode in ("dual", "strongest_last") else 1
    return EchoReport(np.full((p, m), np.nan), np.full((p, m), np.nan), np.full((p, m), -1, dtype=np.int64),
                      np.zeros((p, m, n), dtype=bool))


def bundle_echoes(range_m, energy, *, resolution_m, mode):
    """Echoes of small sub-ray bundles without sampling a waveform: returns grouped by range.

    Parameters
    ----------
    range_m, energy : (p, n) float
        Path length [m] (NaN for no return) and return energy of every sub-ray of every pulse.
    resolution_m : float
        Range resolution [m], ``c * pulse_width / 2`` (0.75 m for a 5 ns pulse).
    mode : {"first", "last", "strongest", "dual", "strongest_last"}
        As :func:`process_returns` (not ``average``).

    Returns
    -------
    EchoReport
        As :func:`process_returns`.

    Notes
    -----
    The sub-ray returns of a pulse, sorted by range, are split into echoes wherever two
    consecutive ones are more than ``resolution_m`` apart; an echo's energy is the sum of its
    returns and its range their energy-weighted mean. It approximates the waveform receiver of
    :func:`beam_echoes`, where two returns closer than about the pulse length leave no minimum
    between them and merge, at a cost of a sort over n instead of a waveform per pulse: meant
    for the few sub-rays (n < 10) of the edge-point footprint of the rotating and line lidars
    (:meth:`sensors.lidar._PulsedLidar._cast_beams`), validated against the full waveform beam
    in ``tests/sensors/test_lidar.py::test_edge_footprint_agrees_with_full_divergent_beam``.
    """
    rs, es, order = sorted_echoes(range_m, energy)
    p, n = rs.shape
    new = np.zeros((p, n), dtype=bool)
    with np.errstate(invalid="ignore"):                            # inf - inf past the last return
        new[:, 1:] = (rs[:, 1:] - rs[:, :-1]) > resolution_m
    return report_from_groups(rs, es, order, new, mode=mode)


def sorted_echoes(range_m, weight):
    """Each pulse's echoes in increasing range: ``(ranges, weights, order)``, each (p, n).

    An echo without a range or with no positive ``weight`` (energy, power) sorts last with
    range inf and weight 0; ``order`` is the stable argsort that put them there.
    """
    r = np.asarray(range_m, dtype=float)
    w = np.nan_to_num(np.asarray(weight, dtype=float))
    has = np.isfinite(r) & (w > 0)
    order = np.argsort(np.where(has, r, np.inf), axis=1, kind="stable")
    return (np.take_along_axis(np.where(has, r, np.inf), order, axis=1),
            np.take_along_axis(np.where(has, w, 0.0), order, axis=1), order)


def report_from_groups(rs, es, order, new, *, mode, amplitude=None) -> EchoReport:
    """What the receiver reports of sub-ray returns sorted by range and grouped into echoes.

    Parameters
    ----------
    rs, es : (p, n) float
        Each pulse's sub-ray ranges [m] in ascending order (inf past the last return) and their
        energies (0 where none).
    order : (p, n) int
        Column of each sorted return in the caller's sub-ray order.
    new : (p, n) bool
        Where a sorted return starts a new echo (column 0 always does).
    mode : {"first", "last", "strongest", "dual", "strongest_last"}
        As :func:`sensors.beam.process_returns`.
    amplitude : (p, n) float, optional
        Per sorted return, the amplitude ``strongest`` compares; an echo's is the largest of its
        members'. None: an echo's energy, the sum of its members'.

    Returns
    -------
    EchoReport
        An echo's energy is the sum of its returns' and its range their energy-weighted mean
        (the pulse's nearest return plus the weighted mean offset).
    """
    p, n = rs.shape
    ok = np.isfinite(rs)
    label = np.where(ok, np.cumsum(new, axis=1), n)                # n: no return
    key = (np.arange(p)[:, None] * (n + 1) + label).ravel()
    ref = np.where(ok[:, 0], rs[:, 0], 0.0)
    dev = np.where(ok, rs - ref[:, None], 0.0)
    seg_e = np.bincount(key, weights=es.ravel(), minlength=p * (n + 1)).reshape(p, n + 1)[:, :n]
    seg_ed = np.bincount(key, weights=(es * dev).ravel(), minlength=p * (n + 1)).reshape(p, n + 1)[:, :n]
    detected = seg_e > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        seg_r = ref[:, None] + seg_ed / seg_e
    any_det = detected.any(axis=1)
    first = np.where(any_det, 0, -1)
    last = np.where(any_det, n - 1 - np.argmax(detected[:, ::-1], axis=1), -1)
    if amplitude is None:
        seg_a = seg_e
    else:
        seg_a = np.zeros(p * (n + 1))
        np.maximum.at(seg_a, key, np.where(ok, amplitude, 0.0).ravel())
        seg_a = seg_a.reshape(p, n + 1)[:, :n]
    masked = np.where(detected, seg_a, -np.inf)
    strongest = np.where(any_det, np.argmax(masked, axis=1), -1)
    if mode == "strongest_last":
        masked[np.arange(p), np.maximum(strongest, 0)] = -np.inf
        has_second = np.isfinite(masked).any(axis=1)
        second = np.where(has_second, np.argmax(masked, axis=1), strongest)
        chosen = [strongest, np.where(last != strongest, last, second)]
    else:
        chosen = {"first": [first], "last": [last], "strongest": [strongest], "dual": [first, last]}[mode]
    rows = np.arange(p)
    parts = []
    for seg in chosen:
        valid = seg >= 0
        sg = np.maximum(seg, 0)
        in_seg = (label == sg[:, None]) & valid[:, None]
        dom_sorted = np.argmax(np.where(in_seg, es, -1.0), axis=1)
        members = np.zeros((p, n), dtype=bool)
        np.put_along_axis(members, order, in_seg, axis=1)
        parts.append((np.where(valid, seg_r[rows, sg], np.nan), np.where(valid, seg_e[rows, sg], np.nan),
                      np.where(valid, order[rows, dom_sorted], -1), members))
    return EchoReport(*(np.stack([q[k] for q in parts], axis=1) for k in range(4)))


def compact_segments(seg_i):
    """Segment numbers renumbered per row to 0, 1, ... keeping their order; -1 stays -1."""
    big = np.where(seg_i >= 0, seg_i, np.iinfo(np.int64).max)
    order = np.argsort(big, axis=1, kind="stable")
    ranked = np.take_along_axis(big, order, axis=1)
    step = np.zeros(ranked.shape, dtype=np.int64)
    step[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    out = np.empty_like(seg_i)
    np.put_along_axis(out, order, np.cumsum(step, axis=1), axis=1)
    return np.where(seg_i >= 0, out, -1)


def dominant(weights, valid):
    """Index of the largest weight per row, -1 where ``valid`` is False."""
    return np.where(valid, np.argmax(weights, axis=1), -1)
