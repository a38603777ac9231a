"""The compiled kernels (hifi/kernels.py) against their numpy oracles (tests/oracles).

The kernels are the product's only implementation of their passes; the oracles are the same
passes written with whole numpy arrays. Whole frames are run both ways (numpy_kernels() puts
the oracles in the kernels' places) and every variable must have the same bytes: regression
tests of the kernels against an independent formulation, whose physics tests/sensors/test_lidar_signal.py
checks against hand calculations and data sheets.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import hifi
import sensors.lidar as lidar
from conftest import REPO_ROOT
from tests._scenes import street_scenario
from tests.oracles import lidar_kernel as lidar_oracle
from tests.oracles import numpy_kernels

#: A street frame with a mirror (ghost points: emitted ray and arriving ray differ) for each
#: model and parameter set: pencil beams, edge footprints, the divergent beam, weather, the
#: BlenSor detection model.
CASES = {
    "hdl64e_s2 pencil": ("hdl64e_s2", {"edge_subrays": 0}, None),
    "hdl64e_s2 edge footprints, dual": ("hdl64e_s2", {"return_mode": "dual"}, None),
    "hdl32e exponent 0.7, haze": ("hdl32e", {"intensity_exponent": 0.7, "visibility_m": 2000.0}, None),
    "vlp16 fixed sigma": ("vlp16", {"noise_sigma_m": 0.02}, None),
    "vlp16 blensor": ("vlp16", {"detection_model": "blensor"}, None),
    "vlp16 fog": ("vlp16", {}, {"fog_visibility_m": 50.0}),
    "ibeo_lux": ("ibeo_lux", {}, None),
    "ouster os1_128": ("ouster", {"preset": "os1_128"}, None),
    "vlp16 divergent beam, 4 sub-rays, dual": ("vlp16", {"n_subrays": 4, "return_mode": "dual"}, None),
    "vlp16 divergent beam, 3 sub-rays, average, snow": ("vlp16", {"n_subrays": 3, "return_mode": "average"},
                                                        {"snowfall_rate_mm_h": 2.0}),
}


def _run(model, params, weather):
    d = street_scenario(duration_s=0.1, weather=weather)
    d["materials"]["glass"] = {"reflectivity": 0.05, "mirror": 1.0}
    d["objects"].append({"name": "mirror", "mesh": "plane", "size_m": [4, 3], "material": "glass",
                         "position_m": [-6, 2, 1.5], "rpy_deg": [0, -90, 30]})
    d["sensors"] = [{"name": "lidar", "model": model, "rate_hz": 10.0, "parent": "ego", "position_m": [0, 0, 1.9],
                     "params": dict(params)}]
    return hifi.Simulation.from_dict(d).run()["lidar"]


@pytest.mark.parametrize("case", list(CASES))
def test_kernels_give_the_oracles_bytes(case):
    model, params, weather = CASES[case]
    fast = _run(model, params, weather)
    with numpy_kernels():
        ref = _run(model, params, weather)
    assert set(fast.data_vars) == set(ref.data_vars)
    for name in ref.data_vars:
        assert fast[name].values.tobytes() == ref[name].values.tobytes(), name
    assert fast.detected.values.sum() > 200          # ibeo_lux: 429 of 1364


def test_oracles_are_in_place_inside_the_switch():
    """numpy_kernels() replaces what the callers import (the switch itself can fail)."""
    import hifi._cast_kernel as ck
    import sensors._lidar_kernel as lk
    real = ck.static_hits, lk.edge_flags
    with numpy_kernels():
        assert ck.static_hits is not real[0] and lk.edge_flags is lidar_oracle.edge_flags
    assert (ck.static_hits, lk.edge_flags) == real


def test_retired_environment_variable_warns(monkeypatch):
    """HIFI_KERNELS chose between the kernels and their numpy twins until 0.2; set now, a run
    says it has no effect (a FutureWarning) and runs."""
    monkeypatch.setenv("HIFI_KERNELS", "off")
    with pytest.warns(FutureWarning, match="HIFI_KERNELS has no effect"):
        _run("vlp16", {}, None)
    monkeypatch.delenv("HIFI_KERNELS")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        _run("vlp16", {}, None)


def test_runs_that_cast_nothing_do_not_import_numba():
    """numba costs a process about half a second and 100 MiB; a run whose models cast no rays
    (an odometry sensor alone) never imports it, one with a lidar does."""
    code = """
import sys, hifi
from tests._scenes import street_scenario
d = street_scenario(duration_s=0.1)
d["sensors"] = [{"name": "odometry", "model": "pose", "rate_hz": 10.0, "parent": "ego"}]
hifi.Simulation.from_dict(d).run()
print("numba" in sys.modules)
d["sensors"] = [{"name": "l", "model": "vlp16", "rate_hz": 10.0, "parent": "ego", "position_m": [0, 0, 1.9]}]
hifi.Simulation.from_dict(d).run()
print("numba" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    assert out.stdout.split() == ["False", "True"], out.stderr[-2000:]


def test_edge_flags_kernel_has_the_numpy_flags():
    """sensors._lidar_kernel.edge_flags against the oracle's edge_bits on a street frame of
    the HDL-64E (cars, a house, a pole, a kerb: steps of every size, misses into the sky)."""
    ds = _run("hdl64e_s2", {"edge_subrays": 0}, None).isel(frame=0)
    shape = ds.distance.shape
    pts = np.stack([ds[c].values.ravel() for c in ("x", "y", "z")], axis=1).astype(float)
    hit = ds.object_id.values.ravel() >= 0
    # normals: the facet normal is not in the dataset; a ring's neighbour direction stands in
    # (unit vectors, finite on hits) so that both tests see the same, varied orientations
    rng = np.random.default_rng(3)
    nrm = rng.normal(size=pts.shape)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm[~hit] = np.nan
    order = np.argsort(ds.laser_elevation.values)
    for depth in (0.05, 0.5):
        a1, c1 = lidar.depth_edge_pulses(pts, nrm, hit, shape, order, depth)
        a2, c2 = lidar_oracle.edge_bits(pts, nrm, hit, shape, order, np.float32(depth))
        assert np.array_equal(a1, a2 > 0) and np.array_equal(c1, c2)
        assert 0 < a1.sum() < a1.size and 0 < (c1 > 0).sum() < c1.size


def test_footprint_kernel_has_the_numpy_bytes():
    """sensors.beam.footprint_directions (its basis, then the kernel sensors._lidar_kernel.footprint)
    against the oracle written whole in numpy: the HDL-64E's edge probes (one sub-ray at the top
    of the spot) and bundles (6 sub-rays), an elliptical and a circular beam, over random axes
    with vertical and nearly vertical ones (the fallback basis of sensors.noise.orthonormal_basis)."""
    from sensors.beam import footprint_directions, subray_pattern
    rng = np.random.default_rng(5)
    a = rng.normal(size=(5000, 3))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    a[:4] = [[0, 0, 1], [0, 0, -1], [1e-12, 0, 1], [0, 1e-8, -1]]
    for uv in (np.array([[0.0, 0.9]]), subray_pattern(7)[0][1:]):
        for div in ((0.002, 0.0012, 0.004), (0.0035, 0.0035, 0.0)):
            o1, d1 = footprint_directions(a, uv, *div)
            o2, d2 = lidar_oracle.footprint_directions(a, uv, *div)
            assert o1.tobytes() == o2.tobytes() and d1.tobytes() == d2.tobytes()
            with numpy_kernels():                   # the kernel's own oracle, on the same basis
                o3, d3 = footprint_directions(a, uv, *div)
            assert o3.tobytes() == o2.tobytes() and d3.tobytes() == d2.tobytes()
    assert footprint_directions(a[:0], uv, *div)[1].shape == (0, uv.shape[0], 3)


def test_probe_leaves_kernel_has_the_numpy_flags():
    """sensors._lidar_kernel.probe_leaves against its oracle: probes that miss where
    the pencil hit and the reverse, NaN points, and plane distances on both sides of the 5 cm
    threshold (EDGE_DEPTH_M)."""
    from hifi.caster import Hits
    rng = np.random.default_rng(6)
    n, m = 400, 300

    def hits(k, point):
        oid = rng.integers(-1, 3, size=k).astype(np.int32)
        nrm = rng.normal(size=(k, 3))
        nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
        nrm[oid < 0] = np.nan
        point = point.copy()
        point[oid < 0] = np.nan
        return Hits(np.ones(k), point, nrm, nrm.copy(), oid, oid.copy(), np.zeros(k, dtype=np.int8))

    pencil = hits(n, rng.normal(size=(n, 3)) * 10.0)
    cand = np.sort(rng.choice(n, size=m, replace=False))
    step = rng.uniform(-0.1, 0.1, size=(m, 1)) * pencil.normal[cand]   # off-plane by |step| (+ a sliver)
    probe = hits(m, pencil.point[cand] + np.nan_to_num(step))
    probe.object_id[:] = np.where(rng.random(m) < 0.8, pencil.object_id[cand], probe.object_id)
    k = lidar.probe_leaves(pencil, cand, probe)
    with numpy_kernels():
        r = lidar.probe_leaves(pencil, cand, probe)
    assert np.array_equal(k, r)
    both = pencil.hit[cand] & probe.hit
    assert 0 < (k & both).sum() < both.sum()           # both sides of the threshold were tried


def test_depth_image_kernel_has_the_numpy_bytes():
    """hifi._cast_kernel.range_image (and the caster's kernels) against their oracles on a depth
    camera's frame (regression: same bytes)."""
    d = street_scenario(duration_s=0.1)
    d["sensors"] = [{"name": "cam", "model": "depthmap", "rate_hz": 10.0, "parent": "ego", "position_m": [0, 0, 2.5],
                     "params": {"resolution_x": 160, "resolution_y": 120}}]
    fast = hifi.Simulation.from_dict(d).run()["cam"]
    with numpy_kernels():
        ref = hifi.Simulation.from_dict(d).run()["cam"]
    for name in ref.data_vars:
        assert fast[name].values.tobytes() == ref[name].values.tobytes(), name
    assert np.isnan(fast.distance.values).any() and (fast.annotation.values > 0).any()
