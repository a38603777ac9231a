"""hifi.caster.tracing.trace_surfaces: rays through glass panes and along the reflection off
water, the front surface of every path and the path's throughput, against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from hifi.caster import RayCaster
from hifi.world.scene import Material, Scene

N_GLASS = 1.515


def _quad(x_m, half_m=50.0):
    """A square in the plane x = x_m (normal along x), 2 half_m wide."""
    h = half_m
    return trimesh.Trimesh(vertices=[[x_m, -h, -h], [x_m, h, -h], [x_m, h, h], [x_m, -h, h]],
                           faces=[[0, 1, 2], [0, 2, 3]], process=False)


def _floor(z_m, half_m=50.0):
    h = half_m
    return trimesh.Trimesh(vertices=[[-h, -h, z_m], [h, -h, z_m], [h, h, z_m], [-h, h, z_m]],
                           faces=[[0, 1, 2], [0, 2, 3]], process=False)


def _pane_transmittance(i_rad, n, tau0=1.0):
    """A pane's transmittance from the angle form of Fresnel's equations (Born & Wolf sec. 1.5.2,
    R_s = sin^2(i - t) / sin^2(i + t), R_p = tan^2(i - t) / tan^2(i + t)) and the closed sum of
    its multiple reflections, T = (1 - R)^2 tau / (1 - R^2 tau^2) (sec. 7.6), averaged over s
    and p: computed here independently of hifi.world.surfaces."""
    if i_rad == 0.0:
        rs = rp = ((n - 1) / (n + 1)) ** 2
        t = 0.0
    else:
        t = np.arcsin(np.sin(i_rad) / n)
        rs = np.sin(i_rad - t) ** 2 / np.sin(i_rad + t) ** 2
        rp = np.tan(i_rad - t) ** 2 / np.tan(i_rad + t) ** 2
    tau = tau0 ** (1 / np.cos(t))
    return float(np.mean([(1 - r) ** 2 * tau / (1 - (r * tau) ** 2) for r in (rs, rp)]))


def _pane_scene(n_panes=1, tau0=1.0):
    sc = Scene()
    sc.add_material(Material("glass", reflectivity=0.0, kind="glass", refractive_index=N_GLASS, transmittance=tau0))
    sc.add_material(Material("wall", reflectivity=0.5))
    for k in range(n_panes):
        sc.add_object(f"pane{k}", _quad(5.0 + k), "glass")
    sc.add_object("wall", _quad(12.0), "wall")
    return sc


ANGLES_DEG = (0.0, 15.0, 30.0, 45.0, 60.0, 75.0)


@pytest.mark.parametrize("tau0", [1.0, 0.5])
def test_rays_pass_a_pane_to_the_wall_with_fresnel_transmittance(tau0):
    a = np.radians(ANGLES_DEG)
    d = np.column_stack([np.cos(a), np.sin(a), np.zeros_like(a)])
    sh = RayCaster(_pane_scene(tau0=tau0), n_threads=1).cast_surfaces(np.zeros((a.size, 3)), d, 0.0, 500.0)
    assert np.all(sh.hits.object_id == 1)                         # the wall
    # straight on through a thin pane: the wall at 12 / cos(a), the pane at 5 / cos(a) (exact
    # geometry; float32 Embree: 1e-5 m)
    np.testing.assert_allclose(sh.hits.distance, 12.0 / np.cos(a), atol=1e-5)
    np.testing.assert_allclose(sh.front.distance, 5.0 / np.cos(a), atol=1e-5)
    assert np.all(sh.front.object_id == 0) and np.all(sh.hits.bounces == 0)
    np.testing.assert_allclose(sh.front.cos_incidence, np.cos(a), atol=1e-6)
    expected = [_pane_transmittance(x, N_GLASS, tau0) for x in a]
    np.testing.assert_allclose(sh.throughput, expected, rtol=1e-6)
    # the plain cast gives the same final hits
    h = RayCaster(_pane_scene(tau0=tau0), n_threads=1).cast(np.zeros((a.size, 3)), d, 0.0, 500.0)
    np.testing.assert_array_equal(h.object_id, sh.hits.object_id)
    np.testing.assert_array_equal(h.distance, sh.hits.distance)


def test_two_panes_multiply_and_the_crossing_bound_holds():
    a = np.radians([0.0, 40.0])
    d = np.column_stack([np.cos(a), np.sin(a), np.zeros_like(a)])
    sh = RayCaster(_pane_scene(n_panes=2), n_threads=1).cast_surfaces(np.zeros((2, 3)), d, 0.0, 500.0)
    np.testing.assert_allclose(sh.throughput, [_pane_transmittance(x, N_GLASS) ** 2 for x in a], rtol=1e-6)
    assert np.all(sh.front.object_id == 0)                        # the nearer pane is the front
    from hifi.caster import SurfaceTable, trace_surfaces
    caster = RayCaster(_pane_scene(n_panes=2), n_threads=1).build()
    one = trace_surfaces(caster.backend, np.zeros((2, 3)), d, 0.0, 500.0, surfaces=SurfaceTable.of(caster.scene),
                         max_crossings=1)
    assert np.all(one.hits.object_id == -1) and np.all(np.isnan(one.hits.distance))   # a 2nd pane is one too many
    assert np.all(one.front.object_id == 0)


def test_water_reflects_the_ray_with_fresnel_reflectance():
    # A lidar 2 m above still water looks down at 45 deg toward a wall at x = 10: the ray
    # reflects off the water at x = 2 and reaches the wall at height 8 (mirror image), path
    # 2 sqrt(2) + 8 sqrt(2); throughput the Fresnel reflectance at 45 deg (angle form).
    sc = Scene()
    sc.add_material(Material("water", reflectivity=0.0, kind="water"))
    sc.add_material(Material("wall", reflectivity=0.5))
    sc.add_object("water", _floor(0.0), "water")
    sc.add_object("wall", _quad(10.0), "wall")
    d = np.array([[np.sqrt(0.5), 0.0, -np.sqrt(0.5)], [0.0, 0.0, -1.0]])
    sh = RayCaster(sc, n_threads=1).cast_surfaces(np.array([[0.0, 0.0, 2.0]] * 2), d, 0.0, 500.0)
    assert sh.hits.object_id[0] == 1 and sh.hits.bounces[0] == 1
    assert sh.hits.distance[0] == pytest.approx(10.0 * np.sqrt(2.0), abs=1e-5)
    np.testing.assert_allclose(sh.hits.point[0], [10.0, 0.0, 8.0], atol=1e-5)
    n = 1.327
    i, t = np.radians(45.0), np.arcsin(np.sin(np.radians(45.0)) / n)
    r45 = 0.5 * (np.sin(i - t) ** 2 / np.sin(i + t) ** 2 + np.tan(i - t) ** 2 / np.tan(i + t) ** 2)
    assert sh.throughput[0] == pytest.approx(r45, rel=1e-6)
    assert sh.front.object_id[0] == 0 and sh.front.distance[0] == pytest.approx(2.0 * np.sqrt(2.0), abs=1e-5)
    # straight down: reflected back up to nothing (the sky): a miss, the water its front
    assert sh.hits.object_id[1] == -1 and sh.front.object_id[1] == 0
    assert sh.front.distance[1] == pytest.approx(2.0, abs=1e-6)


def test_scene_without_glass_or_water_is_the_plain_cast():
    # Regression test: no front, a throughput of 1, and the same hits as cast() (same bits).
    sc = Scene()
    sc.add_material(Material("mirror", reflectivity=0.0, mirror=1.0))
    sc.add_material(Material("wall", reflectivity=0.5))
    sc.add_object("mirror", _quad(5.0), "mirror")
    sc.add_object("floor", _floor(-1.0), "wall")
    rng = np.random.default_rng(3)
    d = rng.normal(size=(500, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    caster = RayCaster(sc, n_threads=2)
    assert not caster.has_surfaces
    sh = caster.cast_surfaces(np.zeros((500, 3)), d, 0.0, 100.0)
    h = caster.cast(np.zeros((500, 3)), d, 0.0, 100.0)
    for f in h.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(sh.hits, f), getattr(h, f))
    assert np.all(sh.throughput == 1.0) and np.all(sh.front.object_id == -1)
    assert (h.bounces > 0).sum() > 5                               # some rays went by the mirror


def test_mirror_and_pane_paths_agree_with_threads():
    # Regression test: the threads split only the first segment; the result does not depend
    # on their number (pane, mirror and wall in one scene, many rays).
    sc = _pane_scene()
    sc.add_material(Material("mirror", reflectivity=0.0, mirror=1.0))
    sc.add_object("mirror", _floor(-2.0), "mirror")
    rng = np.random.default_rng(5)
    d = rng.normal(size=(4000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    one = RayCaster(sc, n_threads=1).cast_surfaces(np.zeros((4000, 3)), d, 0.0, 300.0)
    four = RayCaster(sc, n_threads=4).cast_surfaces(np.zeros((4000, 3)), d, 0.0, 300.0)
    for f in one.hits.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(one.hits, f), getattr(four.hits, f))
        np.testing.assert_array_equal(getattr(one.front, f), getattr(four.front, f))
    np.testing.assert_array_equal(one.throughput, four.throughput)
    assert (one.front.object_id == 0).sum() > 500 and ((one.hits.bounces > 0) & (one.front.object_id == 0)).sum() > 20
