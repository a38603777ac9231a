"""sensors.surfaces and the pulsed lidars on glass, water and retroreflectors: the pane's echo
near normal incidence and the wall behind it, dual returns, water's specular and diffuse
returns and its mirror ghosts, a retroreflector's return against its R_A, the saturated
intensity, and the halo's angular extent against the response's parameters."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

import hifi
from sensors.radiometry import lidar_received_power
from sensors.sick import SickLMS1xx
from sensors.surfaces import (HALO_LEVEL_DB, HALO_PITCH_RAD, HALO_SLOPE, glint_reflectivity, halo_radius_rad,
                              halo_response, retroreflector_reflectivity, specular_return_fraction,
                              water_volume_reflectivity)

N_GLASS = 1.515
N_WATER = 1.327
P = {k: v.default for k, v in SickLMS1xx.PARAMS.items()}        # the LMS111's defaults


def _fresnel(i_rad, n):
    """Unpolarised Fresnel reflectance, angle form (Born & Wolf 1999, sec. 1.5.2), written here
    independently of hifi.world.surfaces: (R_s, R_p) averaged."""
    i = np.asarray(i_rad, dtype=float)
    i = np.where(i == 0.0, 1e-9, i)                              # the limit at 0 is ((n-1)/(n+1))^2
    t = np.arcsin(np.sin(i) / n)
    return 0.5 * (np.sin(i - t) ** 2 / np.sin(i + t) ** 2 + np.tan(i - t) ** 2 / np.tan(i + t) ** 2)


def _pane(i_rad, n, tau0=1.0):
    """(R_pane, T_pane) of a thin pane: the sums of its multiple reflections per polarisation
    (Born & Wolf sec. 7.6), averaged; independent of hifi.world.surfaces."""
    i = np.where(np.asarray(i_rad, dtype=float) == 0.0, 1e-9, i_rad)
    t = np.arcsin(np.sin(i) / n)
    tau = tau0 ** (1 / np.cos(t))
    refl, trans = 0.0, 0.0
    for r in (np.sin(i - t) ** 2 / np.sin(i + t) ** 2, np.tan(i - t) ** 2 / np.tan(i + t) ** 2):
        den = 1 - (r * tau) ** 2
        refl = refl + 0.5 * (r + (1 - r) ** 2 * r * tau ** 2 / den)
        trans = trans + 0.5 * (1 - r) ** 2 * tau / den
    return refl, trans


def _glint(i_rad, r_m, spec, p=P):
    """The specular echo's apparent reflectivity (sensors.surfaces.glint_reflectivity's model,
    written out): R_s (1 - exp(-2 a^2 / w^2)) exp(-2 s^2 / w^2) pi R^2 / A_r with
    w = r_0 + 2 R tan(div / 2), s = R sin(2 i), a the receiver radius."""
    a = p["receiver_aperture_m"] / 2
    w = p["aperture_radius_m"] + 2 * r_m * np.tan(p["divergence_rad"] / 2)
    s = r_m * np.sin(2 * i_rad)
    return spec * (1 - np.exp(-2 * a * a / w ** 2)) * np.exp(-2 * s * s / w ** 2) * np.pi * r_m ** 2 / (np.pi * a * a)


def _snr(apparent, r_m, p=P):
    """SNR of a return of this apparent reflectivity at this range (the chain's lidar equation)."""
    from sensors.radiometry import extinction_from_visibility
    r_m = np.where(np.asarray(r_m) > 0, r_m, np.nan)                 # rays pointing away: no return
    pw = lidar_received_power(p["peak_power_w"], apparent, 1.0, r_m,
                              receiver_area_m2=np.pi * p["receiver_aperture_m"] ** 2 / 4,
                              system_efficiency=p["optical_efficiency"],
                              extinction_per_m=extinction_from_visibility(p["visibility_m"], 905e-9))
    return pw / p["noise_power_w"]


def _line(objects, materials, params=None, position=(0, 0, 0), rpy=(0, 0, 0), seed=0):
    """A SICK LMS111 (one scan line in its xy plane) among ``objects``; its first frame."""
    data = {"simulation": {"duration_s": 0.02, "seed": seed}, "materials": materials, "objects": objects,
            "sensors": [{"name": "l", "model": "sick_lms1xx", "position_m": list(position), "rpy_deg": list(rpy),
                         "params": {"angular_step_deg": 0.25, **(params or {})}}]}
    return hifi.Simulation.from_dict(data).run()["l"].isel(frame=0)


def _wall(name, x_m, material, size=60.0, y_m=0.0):
    return {"name": name, "mesh": "plane", "size_m": [size, size], "material": material,
            "position_m": [x_m, y_m, 0], "rpy_deg": [0, -90, 0]}


NO_HALO = {"halo_level_db": -300.0}                                  # 1e-30: no halo


# -- the models, closed forms --------------------------------------------------------------------
def test_specular_fraction_closed_form():
    # Normal incidence: the Gaussian's power inside the receiver radius, 1 - exp(-2 a^2 / w^2);
    # at s = w / sqrt(2) off axis, e^-1 of that (Gaussian beam, 1/e^2 radius w).
    r, div, r0, a = 10.0, 0.002, 0.005, 0.025
    w = r0 + 2 * r * np.tan(div / 2)
    f0 = specular_return_fraction(1.0, r, divergence_rad=div, aperture_radius_m=r0, receiver_radius_m=a)
    assert f0 == pytest.approx(1 - np.exp(-2 * a * a / w / w), rel=1e-12)
    i = 0.5 * np.arcsin(w / np.sqrt(2) / r)                     # R sin(2i) = w / sqrt(2)
    fi = specular_return_fraction(np.cos(i), r, divergence_rad=div, aperture_radius_m=r0, receiver_radius_m=a)
    assert fi == pytest.approx(f0 * np.exp(-1.0), rel=1e-9)
    # the docstring's example: a clear pane at 10 m, HDL-64E beam, 5 cm receiver: 1.1e4
    g = glint_reflectivity(_pane(0.0, N_GLASS)[0], 1.0, r, divergence_rad=div, aperture_radius_m=r0,
                           receiver_aperture_m=0.05)
    assert g == pytest.approx(1.1e4, rel=0.02)


def test_retroreflector_conversion_closed_form():
    # ASTM D4956 Type I white: R_A 70 at -4 deg, 30 at +30 deg entrance (0.2 deg observation).
    # rho cos(i) = pi R_A(i) / cos(i): at the two tabulated angles exactly pi 70 / cos 4 deg and
    # pi 30 / cos 30 deg; a Lambertian white (R_A = cos(i) / pi ... = 1/pi at normal) gives 1.
    c4, c30 = np.cos(np.radians(4.0)), np.cos(np.radians(30.0))
    assert retroreflector_reflectivity(70.0, c4, 30.0) == pytest.approx(np.pi * 70 / c4, rel=1e-12)
    assert retroreflector_reflectivity(70.0, c30, 30.0) == pytest.approx(np.pi * 30 / c30, rel=1e-12)
    assert retroreflector_reflectivity(70.0, c30) == pytest.approx(np.pi * 30 / c30, rel=1e-12)   # default ratio
    assert retroreflector_reflectivity(1 / np.pi, 1.0, 1 / np.pi) == pytest.approx(1.0, rel=1e-12)
    # falls toward grazing and is 0 there and behind
    c = np.cos(np.radians([10, 45, 60, 80]))
    assert np.all(np.diff(retroreflector_reflectivity(70.0, c, 30.0)) < 0)
    assert retroreflector_reflectivity(70.0, 0.0, 30.0) == 0.0 and retroreflector_reflectivity(70.0, -0.5) == 0.0


def test_water_volume_and_halo_closed_forms():
    # volume return: rho ((1 - R_F(i)) / (1 - R_F(0)))^2, 0 at grazing incidence
    for deg in (0.0, 30.0, 60.0, 85.0):
        i = np.radians(deg)
        expected = 0.05 * ((1 - _fresnel(i, N_WATER)) / (1 - ((N_WATER - 1) / (N_WATER + 1)) ** 2)) ** 2
        assert water_volume_reflectivity(0.05, np.cos(i), N_WATER) == pytest.approx(expected, rel=1e-6)
    assert water_volume_reflectivity(0.05, 0.0, N_WATER) == pytest.approx(0.0, abs=1e-12)
    # halo: -40 dB one pitch away, -60 dB four pitches away (Leddar Pixell user guide), and
    # halo_radius_rad inverts it
    assert halo_response(HALO_PITCH_RAD) == pytest.approx(1e-4, rel=1e-12)
    assert halo_response(4 * HALO_PITCH_RAD) == pytest.approx(1e-6, rel=1e-9)
    assert halo_radius_rad(1e-6) == pytest.approx(4 * HALO_PITCH_RAD, rel=1e-9)
    assert halo_response(1e-6) == 1.0                                # capped near the source


def test_halo_echoes_against_brute_force():
    # The k-d tree search (16 nearest, then all within reach where a farther source could give
    # more) against every pair, computed here directly: same source, power and range per pulse.
    from sensors.surfaces import halo_echoes
    rng = np.random.default_rng(7)
    n = 3000
    yaw, pitch = rng.uniform(-0.3, 0.3, n), rng.uniform(-0.1, 0.1, n)
    d = np.column_stack([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw), np.sin(pitch)])
    source = rng.random(n) < 0.05
    power = np.where(source, 10.0 ** rng.uniform(-3, 1, n), 1e-6)    # sources over four decades
    rng_m = rng.uniform(2, 50, n)
    kw = dict(min_power_w=1e-7, core_rad=0.001)
    got = halo_echoes(d, rng_m, power, source, **kw)
    src = np.flatnonzero(source)
    ang = 2 * np.arcsin(np.minimum(np.linalg.norm(d[:, None, :] - d[None, src, :], axis=2) / 2, 1))
    pw = np.where(ang > kw["core_rad"], power[src][None, :] * halo_response(ang), 0.0)
    best = pw.max(axis=1)
    expected = np.where(~source & (best >= kw["min_power_w"]), best, 0.0)
    np.testing.assert_allclose(got.power_w, expected, rtol=1e-12)
    has = expected > 0
    assert has.sum() > 500
    np.testing.assert_array_equal(got.source[has], src[pw.argmax(axis=1)][has])
    np.testing.assert_array_equal(got.range_m[has], rng_m[src[pw.argmax(axis=1)]][has])
    assert np.all(got.source[~has] == -1) and np.all(np.isnan(got.range_m[~has]))


# -- glass ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tau0", [1.0, 0.4])
def test_pane_before_a_wall(tau0):
    # A pane 5 m ahead (normal incidence at yaw 0), a white-ish wall 12 m ahead. Off the normal
    # the lidar reports the wall at 12 / cos(yaw), its reflectivity rho cos(i) T(i)^2 (the two
    # passes through the pane); near the normal the pane's own echo wins (strongest), where the
    # closed form of its glint puts the SNR well above the threshold.
    mats = {"wall": {"reflectivity": 0.5}, "pane": {"kind": "glass", "reflectivity": 0.0, "transmittance": tau0}}
    ds = _line([_wall("pane", 5.0, "pane", size=20.0), _wall("wall", 12.0, "wall")], mats, NO_HALO)
    yaw = ds.yaw.values.ravel()
    oid, det = ds.object_id.values.ravel(), ds.detected.values.ravel()
    dist, dn, refl = ds.distance.values.ravel(), ds.distance_noisy.values.ravel(), ds.reflectivity.values.ravel()
    i = np.abs(yaw)
    front = i < np.arccos(12.0 / 19.0)                           # through the pane, wall within 20 m range
    glint_snr = _snr(_glint(i, 5.0 / np.cos(i), _pane(i, N_GLASS, tau0)[0]), 5.0 / np.cos(i))
    wall_snr = _snr(0.5 * np.cos(i) * _pane(i, N_GLASS, tau0)[1] ** 2, 12.0 / np.cos(i))
    thr = P["snr_threshold"]
    glass = front & (glint_snr > thr + 4) & (glint_snr > 1.5 * wall_snr)
    wall = front & (glint_snr < thr - 4)
    assert glass.sum() >= 2 and wall.sum() > 100
    assert np.all(det[glass] & (oid[glass] == 0))
    np.testing.assert_allclose(dist[glass], 5.0 / np.cos(i[glass]), atol=1e-4)
    np.testing.assert_allclose(dn[glass], dist[glass], atol=0.1)          # LMS111: 30 mm systematic, 12 mm noise
    w_det = wall & det
    assert np.all(oid[wall] == 1) and np.all(det[wall & (wall_snr > thr + 4)])
    # the pane's attenuation: the wall's SNR, T(i)^2 of it, as the lidar equation says (the
    # tinted pane loses the wall beyond 48 deg)
    np.testing.assert_allclose(ds.snr.values.ravel()[w_det & (i < np.radians(45))],
                               wall_snr[w_det & (i < np.radians(45))], rtol=1e-5)
    np.testing.assert_allclose(dist[wall], 12.0 / np.cos(i[wall]), atol=1e-4)
    np.testing.assert_allclose(refl[w_det], 0.5 * np.cos(i[w_det]) * _pane(i[w_det], N_GLASS, tau0)[1] ** 2,
                               rtol=1e-6)
    # the glass echo exists only near the normal: within the glint's width, a few LMS111 beams
    assert np.degrees(i[oid == 0].max()) < 2.0


def test_first_and_last_return_through_glass():
    # Same pane and wall: "first" reports the pane where its echo is detected, "last" the wall
    # everywhere (the pane never hides it: the wall is farther).
    mats = {"wall": {"reflectivity": 0.5}}
    objs = [_wall("pane", 5.0, "glass_clear", size=20.0), _wall("wall", 12.0, "wall")]
    first = _line(objs, mats, {**NO_HALO, "return_mode": "first"} if "return_mode" in P else NO_HALO)
    oid = first.object_id.values.ravel()
    assert (oid == 0).any() and (oid == 1).any()
    # the HDL-64E's dual return (slot 0 strongest, slot 1 last) on a pane facing laser 31
    # (-0.0419 deg) at azimuth 0: the pane where its glint is, the wall behind it in slot 1
    el = np.radians(-0.0419)
    data = {"simulation": {"duration_s": 0.1, "seed": 0}, "materials": mats,
            "objects": [{"name": "pane", "mesh": "plane", "size_m": [4, 4], "material": "glass_clear",
                         "position_m": [5 * np.cos(el), 0, 5 * np.sin(el) + 1.0],
                         "rpy_deg": [0, -90 + float(np.degrees(-el)), 0]},
                        {"name": "wall", "mesh": "plane", "size_m": [30, 30], "material": "wall",
                         "position_m": [12, 0, 1.0], "rpy_deg": [0, -90, 0]}],
            "sensors": [{"name": "v", "model": "hdl64e_s2", "position_m": [0, 0, 1.0],
                         "params": {"return_mode": "dual", **NO_HALO}}]}
    ds = hifi.Simulation.from_dict(data).run()["v"].isel(frame=0, laser=31)
    oid = ds.object_id.values                                      # (step, return)
    glass = oid[:, 0] == 0
    assert 1 <= glass.sum() <= 4                                  # a couple of azimuth steps at the normal
    assert np.all(oid[glass, 1] == 1)                             # the last return: the wall behind
    np.testing.assert_allclose(ds.distance.values[glass, 0], 5.0, atol=0.01)
    assert np.all(ds.distance.values[glass, 1] > 11.9)
    assert np.all(ds.intensity.values[glass, 0] == 255)          # the glint saturates the byte
    # off the normal, both slots hold the wall (one echo: the sensor repeats it)
    off = (np.abs(ds.yaw.values[:, 0]) < np.radians(15)) & ~glass
    assert np.all(oid[off] == 1)


def test_depth_camera_sees_through_glass():
    data = {"simulation": {"duration_s": 0.02}, "materials": {"wall": {"reflectivity": 0.5}},
            "objects": [_wall("pane", 5.0, "glass_clear", size=20.0), _wall("wall", 12.0, "wall")],
            "sensors": [{"name": "d", "model": "depthmap", "params": {"resolution_x": 16, "resolution_y": 8,
                                                                      "fov_x_deg": 60.0, "max_range_m": 50.0}}]}
    ds = hifi.Simulation.from_dict(data).run()["d"].isel(frame=0)
    np.testing.assert_allclose(ds.depth.values, 12.0, atol=1e-4)    # along the optical axis: the wall
    assert np.all(ds.object_id.values == 1)


# -- water -----------------------------------------------------------------------------------------
def _pond(material, extra=(), mats=None, params=None, height_m=2.0):
    """The LMS111 ``height_m`` above a pond, its scan plane vertical (pitched 90 deg down): the
    incidence on the water is |yaw|, the scan toward -y for yaw < 0."""
    objs = [{"name": "pond", "mesh": "plane", "size_m": [200, 200], "material": material}, *extra]
    ds = _line(objs, mats or {}, {**NO_HALO, "edge_subrays": 0, **(params or {})}, position=(0, 0, height_m),
               rpy=(0, 90, 0))
    return (ds.yaw.values.ravel(), ds.object_id.values.ravel(), ds.detected.values.ravel(),
            ds.reflectivity.values.ravel(), ds.distance.values.ravel(), ds.z_noisy.values.ravel())


def test_clear_water_returns_only_its_glint_at_normal_incidence():
    # Clear water (library): no diffuse return at 905 nm; the specular echo (Fresnel R at
    # n = 1.327, R_F(0) = 0.0197) reaches the receiver only within the glint's width of the
    # normal; nothing anywhere else, grazing incidence included.
    yaw, oid, det, refl, dist, _ = _pond("water")
    i = np.abs(yaw)
    seen = det & (oid == 0)
    # within about half the LMS111's 15 mrad divergence of the normal (0.25 deg steps)
    assert 1 <= seen.sum() <= 12 and np.degrees(i[seen].max()) < 1.5
    # (rtol 1e-4: the yaw read back is float32, and the glint's Gaussian is steep in it)
    np.testing.assert_allclose(refl[seen], _glint(i[seen], 2.0 / np.cos(i[seen]), _fresnel(i[seen], N_WATER)),
                               rtol=1e-4)
    assert not np.any(det & ~seen)


def test_turbid_water_volume_return_and_grazing():
    # Water with a volume return of 0.05 at normal incidence (turbid): off the glint the return
    # is rho ((1 - R_F(i)) / (1 - R_F(0)))^2, which vanishes at grazing incidence.
    yaw, oid, det, refl, dist, _ = _pond("pond", mats={"pond": {"kind": "water", "reflectivity": 0.05}},
                                         height_m=0.5)
    i = np.abs(yaw)
    r_f, r_0 = _fresnel(i, N_WATER), ((N_WATER - 1) / (N_WATER + 1)) ** 2
    on = (oid == 0) & (i > np.radians(3.0))
    assert on.sum() > 100
    np.testing.assert_allclose(refl[on], 0.05 * ((1 - r_f[on]) / (1 - r_0)) ** 2, rtol=1e-6)
    np.testing.assert_allclose(dist[on], 0.5 / np.cos(i[on]), rtol=1e-5)
    # toward grazing incidence the return falls below the noise: none where the closed form's
    # SNR is 4 below the threshold, and that happens before 90 deg
    snr = _snr(0.05 * ((1 - r_f) / (1 - r_0)) ** 2, 0.5 / np.cos(np.minimum(i, np.radians(89.9))))
    gone = (i < np.radians(90)) & (snr < P["snr_threshold"] - 4)
    assert gone.sum() > 10 and not np.any(det[gone])
    assert np.degrees(i[det & (oid == 0)].max()) < 85.0


def test_water_mirrors_a_box_into_a_ghost():
    # Clear water 1 m below the lidar, a box standing in it at y = -8 (its face toward the
    # sensor at y = -7.5, 3 m tall): rays toward -y at incidence i hit the water at
    # y = -tan(i), reflect (Fresnel R_F(i)) and meet the face at incidence 90 deg - i. Reported
    # on the emitted ray at the folded distance 1 / cos(i) + (7.5 - tan i) / sin(i): a ghost
    # below the surface, reflectivity rho cos(90 deg - i) R_F(i)^2 (two reflections off the water).
    box = {"name": "box", "mesh": "box", "size_m": [4, 1, 3], "material": "box", "position_m": [0, -8.0, 1.5]}
    yaw, oid, det, refl, dist, z = _pond("water", [box], {"box": {"reflectivity": 0.6}}, height_m=1.0)
    i = np.abs(yaw)
    ghost = det & (oid == 1) & (yaw < 0) & (z < -0.05)
    assert ghost.sum() > 3
    r_f = _fresnel(i[ghost], N_WATER)
    np.testing.assert_allclose(refl[ghost], 0.6 * np.sin(i[ghost]) * r_f ** 2, rtol=1e-6)
    np.testing.assert_allclose(dist[ghost], 1 / np.cos(i[ghost]) + (7.5 - np.tan(i[ghost])) / np.sin(i[ghost]),
                               atol=1e-4)
    assert np.all(np.degrees(i[ghost]) > 60)                    # only near grazing is R_F large enough


# -- retroreflectors -------------------------------------------------------------------------------
def test_retroreflector_return_and_saturation():
    # A sign of Type I white sheeting 8 m ahead, facing the sensor, and one turned by 30 deg.
    objs = [_wall("sign", 8.0, "retroreflective_sheeting", size=2.0),
            {"name": "turned", "mesh": "plane", "size_m": [2, 2], "material": "retroreflective_sheeting",
             "position_m": [0, 8.0, 0], "rpy_deg": [0, -90, 90 + 30]}]
    ds = _line(objs, {}, {**NO_HALO, "edge_subrays": 0})
    yaw = ds.yaw.values.ravel()
    oid, refl, inten = ds.object_id.values.ravel(), ds.reflectivity.values.ravel(), ds.intensity.values.ravel()
    cos_i = np.abs(np.cos(yaw))                                   # the sign at x = 8: incidence |yaw|
    on = oid == 0
    assert on.sum() > 10
    # pi R_A(i) / cos(i) (ASTM D4956 fall-off fit through 70 and 30) + the diffuse 0.27 cos(i)
    k = np.log(30 / 70) / np.log(np.cos(np.radians(30)) / np.cos(np.radians(4)))
    expected = np.pi * 70 * (cos_i[on] / np.cos(np.radians(4))) ** k / cos_i[on] + 0.27 * cos_i[on]
    np.testing.assert_allclose(refl[on], expected, rtol=1e-6)
    assert np.all(inten[on] == P["intensity_max"])                 # saturated code
    # the turned sign: at the pulse toward its centre, incidence 30 deg: pi 30 / cos 30 + 0.27 cos 30
    turned = oid == 1
    centre = np.argmin(np.where(turned, np.abs(yaw - np.pi / 2), np.inf))
    c = np.cos(np.radians(30) + (yaw[centre] - np.pi / 2))
    assert refl[centre] == pytest.approx(np.pi * 70 * (c / np.cos(np.radians(4))) ** k / c + 0.27 * c, rel=1e-6)
    assert refl[centre] == pytest.approx(np.pi * 30 / np.cos(np.radians(30)) + 0.27 * np.cos(np.radians(30)),
                                         rel=0.02)


def test_halo_around_a_retroreflector():
    # A 0.3 m sign 6 m ahead, nothing behind: the pulses around it report the halo at the
    # sign's range on their own rays, out to the angle where P_sign g(angle) reaches the
    # detection threshold (g: -40 dB at 2 deg, slope 3.32), and none beyond; with the halo off,
    # nothing but the sign.
    objs = [_wall("sign", 6.0, "retroreflective_sheeting", size=0.3)]
    ds = _line(objs, {}, {"edge_subrays": 0})
    yaw = ds.yaw.values.ravel()
    oid, det = ds.object_id.values.ravel(), ds.detected.values.ravel()
    on = np.abs(yaw) < np.arctan(0.15 / 6.0)
    assert np.all(oid[on] == 0)
    p_sign = float(np.median(ds.received_power.values.ravel()[on]))
    edge = np.arctan(0.15 / 6.0)
    angle = np.abs(yaw) - edge                                     # to the nearest sign pulse (0.25 deg steps)
    steps = np.radians(0.25)
    nearest = np.where(on, 0.0, np.ceil(np.maximum(angle, 0) / steps - 1e-9) * steps + 0.0)
    # the halo of the sign's outermost pulse: angle to it from each pulse
    outer = np.abs(yaw[on]).max()
    ang = np.abs(yaw) - outer
    thr, noise = P["snr_threshold"], P["noise_power_w"]
    inner_r = halo_radius_rad((thr + 4.0) * noise / p_sign)       # detected almost surely inside
    outer_r = halo_radius_rad((thr - 4.0) * noise / p_sign)       # almost never beyond
    halo = det & (oid == 0) & ~on
    assert halo.sum() >= 4
    assert np.all(ang[halo] <= outer_r)
    assert np.all(halo[~on & (ang > 0) & (ang <= inner_r)])
    np.testing.assert_allclose(ds.distance.values.ravel()[halo], 6.0, atol=0.05)  # the sign's range
    pts = np.column_stack([ds.x.values.ravel(), ds.y.values.ravel()])[halo]
    # on the pulse's own ray (yaw and x, y stored as float32: 1e-5 rad)
    np.testing.assert_allclose(np.arctan2(pts[:, 1], pts[:, 0]), yaw[halo], atol=1e-5)
    assert np.degrees(outer_r) < 10 and inner_r > np.radians(0.5)   # a few degrees: the model's scale
    del nearest
    off = _line(objs, {}, {"edge_subrays": 0, **NO_HALO})
    assert not np.any(off.detected.values.ravel() & ~on)
    # the halo's power at its outer edge: the response's closed form
    assert p_sign * halo_response(outer_r) == pytest.approx((thr - 4.0) * noise, rel=1e-9)
    assert norm.cdf(-4.0) < 1e-4
    assert (HALO_LEVEL_DB, HALO_SLOPE) == (-40.0, pytest.approx(3.3219, rel=1e-4))


# -- the other paths: divergent beams, the Ouster's column order, the ToF camera ----------------------
def _pane_and_wall(sensor, pane_m=5.0, wall_m=12.0):
    return {"simulation": {"duration_s": 0.05, "seed": 0}, "materials": {"wall": {"reflectivity": 0.5}},
            "objects": [_wall("pane", pane_m, "glass_clear", size=20.0), _wall("wall", wall_m, "wall")],
            "sensors": [sensor]}


@pytest.mark.parametrize("sensor", [
    {"name": "s", "model": "hdl64e_s2", "params": {"n_subrays": 7, "azimuth_stride": 8, **NO_HALO}},
    {"name": "s", "model": "ouster", "params": {"preset": "os1_64", **NO_HALO}},
], ids=["divergent_beam", "ouster"])
def test_wall_behind_a_pane_on_other_lidars(sensor):
    # Through a clear pane the wall 12 m ahead keeps its distance and returns rho cos(i) T(i)^2
    # (within 2 %: a divergent beam's spot-weighted echo, an Ouster's beam origins 1.5 cm off
    # its axis); the object behind the pane is the wall, never the pane, off the normal.
    ds = hifi.Simulation.from_dict(_pane_and_wall(sensor)).run()["s"].isel(frame=0)
    oid, det = ds.object_id.values.ravel(), ds.detected.values.ravel()
    dist, refl = ds.distance.values.ravel(), ds.reflectivity.values.ravel()
    x, y, z = ds.x.values.ravel(), ds.y.values.ravel(), ds.z.values.ravel()
    # on the wall, through the 20 m pane (the ray crosses x = 5 at 5/12 of the hit point)
    wall = (det & (oid == 1) & (np.abs(x - 12.0) < 1e-3) & (np.abs(y) * 5 / 12 < 9.9)
            & (np.abs(z) * 5 / 12 < 9.9))
    assert wall.sum() > 100
    # incidence on the wall (and on the pane, parallel to it) from the hit point: cos = 12 / |p - o|
    pts = np.column_stack([ds.x.values.ravel(), ds.y.values.ravel(), ds.z.values.ravel()])[wall]
    cos_i = 12.0 / np.linalg.norm(pts, axis=1)
    i = np.arccos(np.minimum(cos_i, 1.0))
    np.testing.assert_allclose(refl[wall], 0.5 * cos_i * _pane(i, N_GLASS)[1] ** 2, rtol=0.02)
    np.testing.assert_allclose(dist[wall], np.linalg.norm(pts, axis=1), rtol=0.01)


def test_tof_camera_amplitude_through_a_pane():
    # The SR4000 sees the wall 4 m ahead through a pane at 1.5 m; its amplitude is the wall's
    # times T(i)^2 (the same pixel without the pane, both runs noise-free in amplitude).
    tof = {"name": "t", "model": "tof_sr4000", "params": {"resolution_x": 16, "resolution_y": 12}}
    with_pane = hifi.Simulation.from_dict(_pane_and_wall(tof, 1.5, 4.0)).run()["t"].isel(frame=0)
    bare = _pane_and_wall(tof, 1.5, 4.0)
    bare["objects"] = bare["objects"][1:]
    without = hifi.Simulation.from_dict(bare).run()["t"].isel(frame=0)
    assert np.all(with_pane.object_id.values == 1)
    cos_i = 4.0 / without.distance.values
    ratio = with_pane.intensity.values / without.intensity.values
    np.testing.assert_allclose(ratio, _pane(np.arccos(cos_i), N_GLASS)[1] ** 2, rtol=1e-5)
