"""The compiled lidar signal chain (sensors/_lidar_kernel.py) against the numpy chain it replaces.

Regression tests: the expected values are the numpy functions' own (lidar_signal_chain,
lambertian_return, range_frame's masking), which tests/test_lidar_signal.py checks against hand
calculations and data sheets. Every variable must have the same bytes.
"""

import numpy as np
import pytest

import hifi
import sensors.lidar as lidar
from hifi import kernels
from tests._scenes import street_scenario

#: A street frame with a mirror (ghost points: emitted ray and arriving ray differ) for each
#: model and parameter set the kernel serves.
CASES = {
    "hdl64e_s2 pencil": ("hdl64e_s2", {"edge_subrays": 0}, None),
    "hdl64e_s2 edge footprints, dual": ("hdl64e_s2", {"return_mode": "dual"}, None),
    "hdl32e exponent 0.7, haze": ("hdl32e", {"intensity_exponent": 0.7, "visibility_m": 2000.0}, None),
    "vlp16 fixed sigma": ("vlp16", {"noise_sigma_m": 0.02}, None),
    "ibeo_lux": ("ibeo_lux", {}, None),
    "ouster os1_128": ("ouster", {"preset": "os1_128"}, None),
    "vlp16 divergent beam, 4 sub-rays, dual": ("vlp16", {"n_subrays": 4, "return_mode": "dual"}, None),
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
def test_kernel_chain_has_the_numpy_chains_bytes(case, monkeypatch):
    model, params, weather = CASES[case]
    calls = []
    real = lidar._PulsedLidar._kernel_applies
    monkeypatch.setattr(lidar._PulsedLidar, "_kernel_applies",
                        lambda self, echo, particles: calls.append(real(self, echo, particles)) or calls[-1])
    with kernels.use(True):
        fast = _run(model, params, weather)
    assert calls and all(calls), "the kernel should serve every slot of this case"
    with kernels.use(False):                      # the caster's and the edge flags' numpy passes too
        ref = _run(model, params, weather)
    assert not any(calls[len(calls) // 2:])
    assert set(fast.data_vars) == set(ref.data_vars)
    for name in ref.data_vars:
        assert fast[name].values.tobytes() == ref[name].values.tobytes(), name
    assert fast.detected.values.sum() > 200          # ibeo_lux: 429 of 1364


def test_runs_choose_the_kernels_by_their_rays(monkeypatch):
    """hifi.kernels.for_run: a run of fewer than MIN_RAYS rays stays on numpy (no numba start-up),
    a longer one uses the kernels; use() decides for the runs inside it."""
    seen = []
    real = lidar._PulsedLidar._kernel_chain
    monkeypatch.setattr(lidar._PulsedLidar, "_kernel_chain", lambda self, *a: seen.append(1) or real(self, *a))
    _run("vlp16", {}, None)                               # 0.1 s: 1808 x 16 rays
    assert not seen
    monkeypatch.setattr(kernels, "MIN_RAYS", 1000)
    _run("vlp16", {}, None)
    assert seen
    seen.clear()
    with kernels.use(False):
        _run("vlp16", {}, None)
    assert not seen


def test_kernel_is_not_used_where_the_numpy_chain_must_run(monkeypatch):
    """Fog, particles and the BlenSor model stay on the numpy chain."""
    used = []
    real = lidar._PulsedLidar._kernel_chain
    monkeypatch.setattr(lidar._PulsedLidar, "_kernel_chain", lambda self, *a: used.append(1) or real(self, *a))
    with kernels.use(True):
        for model, params, weather in [("vlp16", {"detection_model": "blensor"}, None),
                                       ("vlp16", {}, {"fog_visibility_m": 50.0}),
                                       ("vlp16", {"n_subrays": 3}, {"snowfall_rate_mm_h": 2.0})]:
            _run(model, params, weather)
    assert not used


def test_edge_flags_kernel_has_the_numpy_flags():
    """sensors._lidar_kernel.edge_flags against depth_edge_pulses_reference on a street frame of
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
        a2, c2 = lidar.depth_edge_pulses_reference(pts, nrm, hit, shape, order, depth)
        assert np.array_equal(a1, a2) and np.array_equal(c1, c2)
        assert 0 < a1.sum() < a1.size and 0 < (c1 > 0).sum() < c1.size


def test_footprint_kernel_has_the_numpy_bytes():
    """sensors._lidar_kernel.footprint against footprint_directions_reference: the HDL-64E's
    edge probes (one sub-ray at the top of the spot) and bundles (6 sub-rays), an elliptical and
    a circular beam, over random axes with vertical and nearly vertical ones (the reference's
    fallback basis, which the kernel leaves to it)."""
    from sensors.beam import footprint_directions, footprint_directions_reference, subray_pattern
    rng = np.random.default_rng(5)
    a = rng.normal(size=(5000, 3))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    a[:4] = [[0, 0, 1], [0, 0, -1], [1e-12, 0, 1], [0, 1e-8, -1]]
    for uv in (np.array([[0.0, 0.9]]), subray_pattern(7)[0][1:]):
        for div in ((0.002, 0.0012, 0.004), (0.0035, 0.0035, 0.0)):
            with kernels.use(True):
                o1, d1 = footprint_directions(a, uv, *div)
            o2, d2 = footprint_directions_reference(a, uv, *div)
            assert o1.tobytes() == o2.tobytes() and d1.tobytes() == d2.tobytes()
    with kernels.use(False):                        # the kernels off: the reference itself
        assert footprint_directions(a, uv, *div)[1].tobytes() == d2.tobytes()


def test_probe_leaves_kernel_has_the_numpy_flags():
    """sensors._lidar_kernel.probe_leaves against the numpy it replaces: probes that miss where
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
    with kernels.use(True):
        k = lidar._probe_leaves(pencil, cand, probe)
    with kernels.use(False):
        r = lidar._probe_leaves(pencil, cand, probe)
    assert np.array_equal(k, r)
    both = pencil.hit[cand] & probe.hit
    assert 0 < (k & both).sum() < both.sum()           # both sides of the threshold were tried


def test_hifi_kernels_environment_variable(monkeypatch, tmp_path, capsys):
    """HIFI_KERNELS=on forces the kernels on a small run; a wrong value is a scenario error
    naming the variable and the allowed values, exit status 2 from the CLI, and no output."""
    seen = []
    real = lidar._PulsedLidar._kernel_chain
    monkeypatch.setattr(lidar._PulsedLidar, "_kernel_chain", lambda self, *a: seen.append(1) or real(self, *a))
    monkeypatch.setenv("HIFI_KERNELS", "on")
    _run("vlp16", {}, None)
    assert seen
    monkeypatch.setenv("HIFI_KERNELS", "fast")
    with pytest.raises(hifi.ScenarioError, match=r"HIFI_KERNELS.*'fast'.*allowed: on, off, auto"):
        _run("vlp16", {}, None)
    from hifi.cli import main
    scenario = tmp_path / "s.toml"
    scenario.write_text('[simulation]\nduration_s = 0.1\n\n[[objects]]\nname = "w"\nmesh = "plane"\n'
                        'size_m = [10, 10]\nposition_m = [0, 0, -2]\n\n[[sensors]]\nname = "l"\nmodel = "vlp16"\n')
    monkeypatch.delenv("HIFI_KERNELS")
    assert main(["run", str(scenario), "--out", str(tmp_path / "ok"), "--no-progress"]) == 0
    monkeypatch.setenv("HIFI_KERNELS", "fast")
    capsys.readouterr()
    assert main(["run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert "HIFI_KERNELS" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_depth_image_kernel_has_the_numpy_bytes():
    """hifi._cast_kernel.range_image against the depth camera's numpy (regression: same bytes)."""
    d = street_scenario(duration_s=0.1)
    d["sensors"] = [{"name": "cam", "model": "depthmap", "rate_hz": 10.0, "parent": "ego", "position_m": [0, 0, 2.5],
                     "params": {"resolution_x": 160, "resolution_y": 120}}]
    with kernels.use(True):
        fast = hifi.Simulation.from_dict(d).run()["cam"]
    with kernels.use(False):
        ref = hifi.Simulation.from_dict(d).run()["cam"]
    for name in ref.data_vars:
        assert fast[name].values.tobytes() == ref[name].values.tobytes(), name
    assert np.isnan(fast.distance.values).any() and (fast.annotation.values > 0).any()
