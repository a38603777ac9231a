"""Lidars over a textured scene-file part: the reflectivity follows the texture, or the
reflectance map.

Expected values, for returns on pure texels (within 1 m of a stripe's centre line, or 3 m to
13 m off it: see tests/_scenes.py):
- the mapping's closed form (hifi.world.textures.luminance_scaled_reflectance, typed in):
  rho = 0.2 x Y(texel) / Y(0.5 grey), Y the relative luminance (0.2126, 0.7152, 0.0722 of
  IEC 61966-2-1; a grey's Y is its value), the texel's sRGB code decoded by IEC 61966-2-1;
  with a reflectance map, the map's 8-bit value over 255;
- the ``reflectivity`` variable is the apparent reflectivity rho cos(i) of a Lambertian surface
  (sensors.lidar.signal), and for a sensor h above a horizontal plane cos(i) = h / distance;
- a divergent beam's echo energy, a ToF camera's and a generic grid's intensity are linear in
  the reflectance of the surface (Lambert's law), so on a pure zone the textured run's value is
  the untextured run's (rho = 0.2) times rho / 0.2.
"""

import numpy as np
import PIL.Image

import hifi
from _scenes import ROAD_DARK_CODE, ROAD_PERIOD_M, ROAD_STRIPE_CODE, ROAD_TEXTURE_SHAPE, textured_road_scenario

#: reflectivity is stored as float32; distances come from Embree's float32 casts.
REFL_RTOL = 1e-5
HEIGHT_M = 1.5
MATERIAL_RHO, MATERIAL_Y = 0.2, 0.5      # [materials.road] of textured_road_scenario


def _srgb_linear(code):
    c = code / 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4      # IEC 61966-2-1, 5.2


def _zones(ds, margin_m=0.1):
    """Returns on the road away from its edges that lie on pure stripe / dark texels, with
    ``margin_m`` to spare (a divergent beam's spot, stretched along the road at grazing
    incidence, reaches 0.3 m beyond its axis at 29 m)."""
    x, y = ds.x.values.ravel(), ds.y.values.ravel()
    on = (ds.object_id.values.ravel() == 0) & (np.abs(x) < 22.0) & (np.abs(y) < 22.0)
    off = np.abs((y + ROAD_PERIOD_M / 2) % ROAD_PERIOD_M - ROAD_PERIOD_M / 2)   # from the nearest stripe centre
    return on & (off <= 1.0 - margin_m), on & (off >= 3.0 + margin_m) & (off <= 13.0 - margin_m)


SENSORS = [{"name": "pencil", "model": "vlp16", "position_m": [0, 0, HEIGHT_M]},
           {"name": "beam", "model": "vlp16", "position_m": [0, 0, HEIGHT_M], "params": {"n_subrays": 4}}]


def _run(tmp_path, **kw):
    sim = hifi.Simulation.from_dict(textured_road_scenario(tmp_path, SENSORS, **kw), base_dir=tmp_path)
    return sim.run(out=None)


def test_lidar_reflectivity_follows_the_texture(tmp_path):
    textured, plain = _run(tmp_path), _run(tmp_path, textured=False)
    expected = {"stripe": MATERIAL_RHO * _srgb_linear(ROAD_STRIPE_CODE) / MATERIAL_Y,       # 0.4
                "dark": MATERIAL_RHO * _srgb_linear(ROAD_DARK_CODE) / MATERIAL_Y}           # 0.0205
    ds = textured["pencil"]
    stripe, dark = _zones(ds)
    assert stripe.sum() > 20 and dark.sum() > 200
    refl, dist = ds.reflectivity.values.ravel(), ds.distance.values.ravel()
    for zone, rho in ((stripe, expected["stripe"]), (dark, expected["dark"])):
        np.testing.assert_allclose(refl[zone], rho * HEIGHT_M / dist[zone], rtol=REFL_RTOL)
    # the stripe's returns are brighter by the ratio of the texels' luminances, 19.5
    assert np.isclose(expected["stripe"] / expected["dark"], 1.0 / _srgb_linear(ROAD_DARK_CODE))
    for name, margin_m in (("pencil", 0.1), ("beam", 0.5)):
        stripe, dark = _zones(textured[name], margin_m)
        ratio = textured[name].reflectivity.values.ravel() / plain[name].reflectivity.values.ravel()
        np.testing.assert_allclose(ratio[stripe], expected["stripe"] / MATERIAL_RHO, rtol=REFL_RTOL)
        np.testing.assert_allclose(ratio[dark], expected["dark"] / MATERIAL_RHO, rtol=REFL_RTOL)
        # the intensity a VLP-16 reports (its calibrated reflectivity code) follows
        intensity = textured[name].intensity.values.ravel().astype(float)
        assert np.nanmedian(intensity[stripe]) > 5 * np.nanmedian(intensity[dark])


def test_a_reflectance_map_overrides_the_mapping(tmp_path):
    grey = np.full(ROAD_TEXTURE_SHAPE, 26, np.uint8)
    grey[3:5] = 230                                  # the stripe's rows, as the colour texture's
    PIL.Image.fromarray(grey, mode="L").save(tmp_path / "road_nir.png")
    ds = _run(tmp_path, reflectance_map="road_nir.png")["pencil"]
    stripe, dark = _zones(ds)
    refl, dist = ds.reflectivity.values.ravel(), ds.distance.values.ravel()
    np.testing.assert_allclose(refl[stripe], 230 / 255 * HEIGHT_M / dist[stripe], rtol=REFL_RTOL)
    np.testing.assert_allclose(refl[dark], 26 / 255 * HEIGHT_M / dist[dark], rtol=REFL_RTOL)


def test_tof_grid_and_ladar_intensity_follow_the_texture(tmp_path):
    """The ToF camera's, the generic grid's and the divergent-beam LADAR's intensity (a
    Lambertian return, or the echo energy of one, linear in the reflectance) over the textured
    road, against the untextured road's."""
    sensors = [{"name": "tof", "model": "tof_sr4000", "position_m": [0, 4, 9], "rpy_deg": [0, 90, 0]},
               {"name": "grid", "model": "generic_grid", "position_m": [0, 0, HEIGHT_M],
                "params": {"phi_min_deg": -60, "phi_max_deg": -5, "n_phi": 30, "n_theta": 60}},
               {"name": "ladar", "model": "sick_lms291", "position_m": [0, 0, 3.0], "rpy_deg": [0, 30, 0],
                "params": {"detection_threshold": 1e-7}}]          # the darkest echoes too
    runs = [hifi.Simulation.from_dict(textured_road_scenario(tmp_path, sensors, textured=t), base_dir=tmp_path)
            .run(out=None) for t in (True, False)]
    for name, margin_m in (("tof", 0.1), ("grid", 0.1), ("ladar", 0.8)):
        stripe, dark = _zones(runs[0][name], margin_m)
        assert stripe.sum() > 10 and dark.sum() > 10, name
        with np.errstate(invalid="ignore"):                # 0 / 0 off the road
            ratio = runs[0][name].intensity.values.ravel() / runs[1][name].intensity.values.ravel()
        np.testing.assert_allclose(ratio[stripe], _srgb_linear(ROAD_STRIPE_CODE) / MATERIAL_Y, rtol=REFL_RTOL)
        np.testing.assert_allclose(ratio[dark], _srgb_linear(ROAD_DARK_CODE) / MATERIAL_Y, rtol=REFL_RTOL)
