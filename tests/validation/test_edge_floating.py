"""Floating returns at clean depth edges, real recordings against the receiver model
(validation/edge_floating.py): the real counts (regression values of the recordings, measured
when the statistic was written) and the simulated-to-real ratios of each depth-gap bin.

The Ouster OS1-128 capture is vendored (tests/data/lidar); the nuScenes HDL-32E sweep is read
from ../shared/data and its tests skip, naming the file, where it is absent.
"""

import numpy as np
import pytest

from conftest import load_validation, shared_path

pytestmark = pytest.mark.validation

_CACHE = {}


def _tables():
    if "rows" not in _CACHE:
        ef = load_validation("edge_floating")
        real = ef.real_stats()
        _CACHE["real"] = real
        _CACHE["rows"] = ef.rows(real, ef.sim_stats(real), "default")
    return _CACHE["real"], _CACHE["rows"]


def test_ouster_real_clean_edges_regression(test_data):
    test_data("lidar/ouster_os1_128.pcap")
    real, _ = _tables()
    s = real["ouster"]["stats"]
    # regression values: the capture's clean edges and isolated floating returns per gap bin
    # (0.5-2, 2-8, > 8 m) as measured when clean_edge_points was written
    np.testing.assert_array_equal(s["n_edges"], OUSTER_EDGES)
    np.testing.assert_array_equal(s["n_floating"], OUSTER_FLOATING)


def test_nuscenes_real_clean_edges_regression():
    shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    real, _ = _tables()
    s = real["nuscenes"]["stats"]
    np.testing.assert_array_equal(s["n_edges"], NUSCENES_EDGES)      # regression values, as above
    np.testing.assert_array_equal(s["n_floating"], NUSCENES_FLOATING)


def _row(recording, gap):
    _, rows = _tables()
    return next(r for r in rows if r["recording"] == recording and r["gap"] == gap)


OUSTER_EDGES, OUSTER_FLOATING = [201, 287, 40], [2, 5, 3]
NUSCENES_EDGES, NUSCENES_FLOATING = [12, 89, 10], [0, 0, 0]


def test_ouster_2_8_m_within_factor_2_5(test_data):
    test_data("lidar/ouster_os1_128.pcap")
    r = _row("Ouster OS1-128", "2-8 m")
    assert 1 / 2.5 <= r["ratio"] <= 2.5, r                    # acceptance: within 2.5x


@pytest.mark.xfail(strict=True, reason="0.5-2 m: simulated 4/135 against the capture's 2/201 per clean edge, "
                                        "3.0x (validation/edge_floating.md); inside the real count's 95 % interval")
def test_ouster_0_5_2_m_within_factor_2_5(test_data):
    test_data("lidar/ouster_os1_128.pcap")
    r = _row("Ouster OS1-128", "0.5-2 m")
    assert 1 / 2.5 <= r["ratio"] <= 2.5, r


@pytest.mark.xfail(strict=True, reason="> 8 m: the capture floats 3 of 40 clean edges, the receiver model 1 of 89 "
                                        "(0.15x): no tail floats gaps of 10-40 m without floating 0.5-8 m too "
                                        "often (validation/edge_floating.md)")
def test_ouster_beyond_8_m_within_factor_2_5(test_data):
    test_data("lidar/ouster_os1_128.pcap")
    r = _row("Ouster OS1-128", "> 8 m")
    assert 1 / 2.5 <= r["ratio"] <= 2.5, r


@pytest.mark.parametrize("gap", ["0.5-2 m", "2-8 m", "> 8 m"])
def test_nuscenes_no_floating_at_clean_edges_real_or_simulated(gap):
    shared_path("lidar/nuscenes_hdl32e_sweep.pcd.bin")
    r = _row("nuScenes HDL-32E", gap)
    # the sweep has none at its 111 clean edges (regression value above); the simulated street
    # must not invent them: at most what the real count's 95 % upper bound allows
    assert r["simulated"] <= r["real_ci"][1], r
