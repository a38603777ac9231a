"""ccd_camera over a textured scene-file part: the image follows the base-colour texture.

Expected values: the camera's signal is linear in the surface's reflectance at a fixed
geometry and light (Lambert's law, the camera equation). The untextured road shows its
material's colour (``[materials.road]`` color_rgb 0.5); the textured one the file's base
colour, baseColorFactor (1) times the texture's linear value at the point it sees (glTF 2.0,
3.9.2): the texel's sRGB code decoded by IEC 61966-2-1 (typed in here). Their ratio is that
value over 0.5. Which texel a
pixel sees follows from the pinhole geometry of a camera looking straight down from 5 m: the
pixel-centre ray of column c meets the road at |y| = |c + 1/2 - 32| p h / f (p the pixel
pitch, f the focal length, h the height; the stripe is symmetric about y = 0, so the image's
left-right sense does not enter).
"""

import numpy as np

import hifi
from _scenes import ROAD_DARK_CODE, ROAD_STRIPE_CODE, textured_road_scenario

#: ideal_image is float32 (2**-23 relative) and both sides add in float64: a few ulp.
F32_RTOL = 1e-6
PITCH_M, FOCAL_M, HEIGHT_M, WIDTH = 5.86e-6, 1.875e-4, 5.0, 64
MATERIAL_RGB = 0.5                         # [materials.road] color_rgb of textured_road_scenario


def _srgb_linear(code):
    c = code / 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4      # IEC 61966-2-1, 5.2


def _camera(name, color):
    return {"name": name, "model": "ccd_camera", "position_m": [0, 0, HEIGHT_M], "rpy_deg": [0, 90, 0],
            "params": {"resolution_x": WIDTH, "resolution_y": WIDTH, "focal_length_m": FOCAL_M,
                       "pixel_pitch_m": PITCH_M, "color": color}}


def test_camera_pixels_follow_the_texture(tmp_path):
    cams = [_camera("rgb", "rgb"), _camera("mono", "mono")]
    runs = {}
    for textured in (True, False):
        sim = hifi.Simulation.from_dict(textured_road_scenario(tmp_path, cams, textured=textured), base_dir=tmp_path)
        runs[textured] = sim.run(out=None)
    y_m = np.abs(np.arange(WIDTH) + 0.5 - WIDTH / 2) * PITCH_M * HEIGHT_M / FOCAL_M      # per column
    stripe, dark = y_m <= 0.9, y_m >= 3.1           # pure texels: within 1 m of the stripe's centre, 3 m off
    assert stripe.sum() >= 10 and dark.sum() >= 20
    for name in ("rgb", "mono"):
        ratio = (runs[True][name].ideal_image.values[0].astype(float)
                 / runs[False][name].ideal_image.values[0].astype(float))          # (row, col, channel)
        assert (runs[True][name].object_id.values == 0).all()                     # the road fills the image
        np.testing.assert_allclose(ratio[:, stripe], _srgb_linear(ROAD_STRIPE_CODE) / MATERIAL_RGB, rtol=F32_RTOL)
        np.testing.assert_allclose(ratio[:, dark], _srgb_linear(ROAD_DARK_CODE) / MATERIAL_RGB, rtol=F32_RTOL)
