"""hifi.world.surfaces: Fresnel reflectance, a thin pane's reflectance and transmittance, the
caster's throughput, and the material fields and scenario keys that name glass, water and
retroreflectors."""

from __future__ import annotations

import numpy as np
import pytest

from hifi.errors import ScenarioError
from hifi.run import scenario
from hifi.world.scene import Material
from hifi.world.surfaces import (GLASS, GLASS_REFRACTIVE_INDEX, OPAQUE, WATER, WATER_REFRACTIVE_INDEX,
                                 fresnel_reflectance, fresnel_sp, pane_optics, surface_throughput)

ANGLES_DEG = np.array([0.0, 10.0, 30.0, 45.0, 56.0, 70.0, 85.0, 89.0])


def _snell_form(i_rad, n):
    """Fresnel's reflectances in the angle form (Born & Wolf 1999, sec. 1.5.2, Eq. 35):
    R_s = sin^2(i - t) / sin^2(i + t), R_p = tan^2(i - t) / tan^2(i + t), t from Snell's law; an
    independent formula from the cosine form of the code (normal incidence is its limit, so
    it is left to the closed form ((n - 1) / (n + 1))^2)."""
    t = np.arcsin(np.sin(i_rad) / n)
    return np.sin(i_rad - t) ** 2 / np.sin(i_rad + t) ** 2, np.tan(i_rad - t) ** 2 / np.tan(i_rad + t) ** 2


@pytest.mark.parametrize("n", [GLASS_REFRACTIVE_INDEX, WATER_REFRACTIVE_INDEX, 2.4])
def test_fresnel_against_the_angle_form(n):
    i = np.radians(ANGLES_DEG[1:])
    rs, rp = fresnel_sp(np.cos(i), n)
    rs_ref, rp_ref = _snell_form(i, n)
    np.testing.assert_allclose(rs, rs_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(rp, rp_ref, rtol=1e-10, atol=1e-14)
    # normal incidence: ((n - 1) / (n + 1))^2 for both polarisations (closed form)
    r0 = ((n - 1) / (n + 1)) ** 2
    assert fresnel_sp(1.0, n)[0] == pytest.approx(r0, rel=1e-12)
    assert fresnel_reflectance(1.0, n) == pytest.approx(r0, rel=1e-12)
    # Brewster's angle, tan(i_B) = n: no p reflection
    assert fresnel_sp(np.cos(np.arctan(n)), n)[1] == pytest.approx(0.0, abs=1e-15)
    # grazing incidence: everything reflected
    assert fresnel_reflectance(0.0, n) == pytest.approx(1.0, abs=1e-12)


def test_water_and_glass_indices_at_905_nm():
    # Rubin (1985) soda-lime dispersion n = 1.5130 - 0.003169 l^2 + 0.003962 / l^2 at l = 0.905 um
    assert GLASS_REFRACTIVE_INDEX == pytest.approx(1.5130 - 0.003169 * 0.905 ** 2 + 0.003962 / 0.905 ** 2, abs=5e-4)
    # IAPWS R9-97 at 905 nm, 20 C, 998.2 kg/m^3 (evaluated with the release's coefficients here)
    a = [0.244257733, 0.00974634476, -0.00373234996, 0.000268678472, 0.0015892057, 0.00245934259, 0.90070492,
         -0.0166626219]
    rho, t, lam = 0.9982, 293.15 / 273.15, 0.905 / 0.589
    s = rho * (a[0] + a[1] * rho + a[2] * t + a[3] * lam ** 2 * t + a[4] / lam ** 2 + a[5] / (lam ** 2 - 0.2292020 ** 2)
               + a[6] / (lam ** 2 - 5.432937 ** 2) + a[7] * rho ** 2)
    assert WATER_REFRACTIVE_INDEX == pytest.approx(np.sqrt((2 * s + 1) / (1 - s)), abs=5e-4)


def _pane_by_series(i_rad, n, tau0, n_terms=5000):
    """A pane's reflectance and transmittance by summing its multiple reflections term by term
    (each pass through the bulk multiplies by tau, each face reflects R or transmits 1 - R),
    per polarisation, then averaged: an independent route to the closed sums of Born & Wolf
    sec. 7.6."""
    t = np.arcsin(np.sin(i_rad) / n)
    tau = tau0 ** (1.0 / np.cos(t))
    refl = trans = 0.0
    for r in _snell_form(i_rad, n) if i_rad > 0 else (((n - 1) / (n + 1)) ** 2,) * 2:
        trans_s = sum((1 - r) ** 2 * tau * (r * tau) ** (2 * k) for k in range(n_terms))
        refl_s = r + sum((1 - r) ** 2 * r * tau ** 2 * (r * tau) ** (2 * k) for k in range(n_terms))
        trans, refl = trans + 0.5 * trans_s, refl + 0.5 * refl_s
    return refl, trans


@pytest.mark.parametrize("tau0", [1.0, 0.6])
def test_pane_against_the_sum_of_its_reflections(tau0):
    for deg in ANGLES_DEG:
        i = np.radians(deg)
        ref_r, ref_t = _pane_by_series(i, GLASS_REFRACTIVE_INDEX, tau0)
        got = pane_optics(np.cos(i), GLASS_REFRACTIVE_INDEX, tau0)
        assert got.reflectance == pytest.approx(ref_r, rel=1e-9, abs=1e-12), deg
        assert got.transmittance == pytest.approx(ref_t, rel=1e-9, abs=1e-12), deg
    # clear pane at normal incidence, closed form: T = (1 - R) / (1 + R), R_pane = 2R / (1 + R)
    r = ((GLASS_REFRACTIVE_INDEX - 1) / (GLASS_REFRACTIVE_INDEX + 1)) ** 2
    clear = pane_optics(1.0, GLASS_REFRACTIVE_INDEX)
    assert clear.transmittance == pytest.approx((1 - r) / (1 + r), rel=1e-12)
    assert clear.reflectance == pytest.approx(2 * r / (1 + r), rel=1e-12)


def test_pane_conserves_energy():
    # A clear pane absorbs nothing: R + T = 1 at every incidence; a tinted one absorbs the rest.
    c = np.cos(np.radians(np.linspace(0, 90, 91)))
    clear = pane_optics(c, 1.515, 1.0)
    np.testing.assert_allclose(clear.reflectance + clear.transmittance, 1.0, atol=1e-12)
    tinted = pane_optics(c, 1.515, 0.5)
    assert np.all(tinted.reflectance + tinted.transmittance <= 1.0 + 1e-12)
    assert np.all(tinted.transmittance <= clear.transmittance) and np.all(np.diff(clear.transmittance) <= 1e-12)   # falls with incidence
    assert pane_optics(0.0, 1.515, 1.0).transmittance == 0.0          # grazing: nothing passes


def test_surface_throughput_by_kind():
    c = np.array([1.0, 0.5, 1.0, 0.5, 0.7])
    kind = np.array([GLASS, GLASS, WATER, WATER, OPAQUE])
    n = np.array([1.515, 1.515, 1.327, 1.327, np.nan])
    tau = np.array([1.0, 0.8, 1.0, 1.0, 1.0])
    got = surface_throughput(kind, c, n, tau)
    assert got[0] == pane_optics(1.0, 1.515, 1.0).transmittance
    assert got[1] == pane_optics(0.5, 1.515, 0.8).transmittance
    assert got[2] == pytest.approx(((1.327 - 1) / 2.327) ** 2, rel=1e-12)   # water reflects: Fresnel
    assert got[3] == fresnel_reflectance(0.5, 1.327) and got[4] == 1.0


# -- materials and scenario keys ------------------------------------------------------------------
def test_material_defaults_are_opaque_and_kind_defaults():
    m = Material("m")
    assert (m.kind, m.refractive_index, m.transmittance, m.retroreflection_cd_lx_m2) == ("opaque", None, 1.0, 0.0)
    assert Material("g", kind="glass").refractive_index == GLASS_REFRACTIVE_INDEX
    assert Material("w", kind="water").refractive_index == WATER_REFRACTIVE_INDEX
    assert Material("m") == Material("m")                    # equality kept (no NaN field)
    with pytest.raises(ValueError, match="kind"):
        Material("x", kind="crystal")
    with pytest.raises(ValueError, match="retroreflection_cd_lx_m2"):
        Material("r", kind="retroreflector")


def _scenario(table, material="m"):
    return {"simulation": {"duration_s": 0.01}, "materials": {"m": table},
            "objects": [{"name": "o", "mesh": "plane", "size_m": [1, 1], "material": material}]}


def test_scenario_keys_make_the_material():
    sc = scenario.validate(_scenario({"kind": "glass", "transmittance": 0.4}), base_dir=".")
    m = sc.materials["m"]
    assert (m.kind, m.transmittance, m.refractive_index) == ("glass", 0.4, GLASS_REFRACTIVE_INDEX)
    sc = scenario.validate(_scenario({"kind": "retroreflector", "retroreflection_cd_lx_m2": 250.0,
                                      "retroreflection_30deg_cd_lx_m2": 150.0}), base_dir=".")
    assert sc.materials["m"].retroreflection_30deg_cd_lx_m2 == 150.0
    # a library entry derived with a tint keeps its kind and index
    sc = scenario.validate(_scenario({"library": "glass_clear", "transmittance": 0.5}), base_dir=".")
    assert (sc.materials["m"].kind, sc.materials["m"].transmittance) == ("glass", 0.5)


@pytest.mark.parametrize("table, key", [
    ({"transmittance": 0.5}, "materials.m.transmittance"),                          # opaque has none
    ({"kind": "water", "transmittance": 0.5}, "materials.m.transmittance"),
    ({"kind": "glass", "mirror": 1.0}, "materials.m.mirror"),
    ({"kind": "retroreflector"}, "materials.m.kind"),                               # R_A missing
    ({"kind": "retroreflector", "retroreflection_cd_lx_m2": 70.0, "retroreflection_30deg_cd_lx_m2": 90.0},
     "materials.m.retroreflection_30deg_cd_lx_m2"),
    ({"kind": "glass", "refractive_index": 0.9}, "materials.m.refractive_index"),
    ({"kind": "opal"}, "materials.m.kind"),
    ({"library": "asphalt_worn", "refractive_index": 1.5}, "materials.m.refractive_index"),
])
def test_bad_optical_keys_are_one_line_errors(table, key):
    with pytest.raises(ScenarioError) as err:
        scenario.validate(_scenario(table), base_dir=".")
    msg = str(err.value)
    assert key in msg and "\n" not in msg
