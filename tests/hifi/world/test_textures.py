"""Textures at the hit (hifi.world.textures, and their reading by hifi.world.scene_files):
sRGB decoding, wrap modes, bilinear sampling, barycentric coordinates, the orientation of glTF
and OBJ texture coordinates, samplers, moving parts, mirror bounces, notes and errors.

Sources of expected values:
- IEC 61966-2-1:1999, 5.2 (the sRGB transfer function, typed in here as its two branches), and
  glTF 2.0's worked example of a base colour (3.9.2);
- the OpenGL 4.6 core specification, 8.14.2 (REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT texel
  indices, typed in as sequences) and, as an independent implementation of linear filtering,
  ``scipy.ndimage.map_coordinates(order=1)`` with the matching boundary modes (``grid-wrap``,
  ``nearest``, ``reflect``);
- ``trimesh.triangles.points_to_barycentric`` for the barycentric coordinates that interpolate
  a face's texture coordinates;
- glTF 2.0, 3.8.3 (texture coordinate (0, 0) is the image's upper-left corner) and the OBJ
  convention (``vt`` (0, 0) is its lower-left corner), on files typed in here (JSON, OBJ and
  MTL text) so trimesh's writers, which flip coordinates themselves, play no part: each
  quadrant of a 2 x 2 image has its own colour, and the texel centres sit at u, v = 1/4, 3/4;
- the geometry of the rays cast (a plane moved by a known track, a mirror at 45 degrees).
"""

from __future__ import annotations

import base64
import io
import json
import re
import warnings

import numpy as np
import PIL.Image
import pytest
import trimesh
from scipy import ndimage

import hifi
from hifi import materials
from hifi.api.estimate import SCENE_BYTES_PER_FACE, generated_scene_bytes
from hifi.caster import RayCaster
from hifi.cli import main
from hifi.errors import ScenarioWarning
from hifi.run import scenario as scenario_mod
from hifi.world.scene_files import read_scene_file
from hifi.world.textures import (SRGB8_TO_LINEAR, TEXCOORD_MAP_BYTES_PER_FACE, HitTextures, PartTexture,
                                 luminance_scaled_reflectance, read_reflectance_map, sample_bilinear, srgb_to_linear,
                                 texcoords_at, wrap_index)

#: The 2 x 2 image, rows from the top: red, green / blue, white.
QUADRANTS = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], np.uint8)
RED, GREEN, BLUE, WHITE = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)

SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
SQUARE_INDICES = np.array([0, 1, 2, 0, 2, 3], np.uint32)


def _png(texels) -> bytes:
    buf = io.BytesIO()
    PIL.Image.fromarray(np.asarray(texels, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def typed_gltf(path, *, uv, image=None, sampler=None, texcoord=None, extensions=None, name="Tex",
               second_material=None):
    """A glTF typed in as JSON: one node ``Square`` (the unit square in z = 0) with
    TEXCOORD_0 = ``uv`` and a material ``name`` whose baseColorTexture is ``image`` (a file
    name, or bytes to embed), with ``sampler`` (a dict) and ``texCoord``/``extensions`` on the
    texture info. ``second_material``: a second node ``Other`` at z = 1 with that material
    (a dict)."""
    uv = np.asarray(uv, np.float32)
    blob = SQUARE.tobytes() + uv.tobytes() + SQUARE_INDICES.tobytes()
    views = [{"buffer": 0, "byteOffset": 0, "byteLength": 48}, {"buffer": 0, "byteOffset": 48, "byteLength": 32},
             {"buffer": 0, "byteOffset": 80, "byteLength": 24}]
    info = {"index": 0}
    if texcoord is not None:
        info["texCoord"] = texcoord
    if extensions is not None:
        info["extensions"] = extensions
    g = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
         "nodes": [{"name": "Square", "mesh": 0}],
         "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "indices": 2, "material": 0}]}],
         "materials": [{"name": name, "pbrMetallicRoughness": {"baseColorTexture": info}}],
         "textures": [{"source": 0}],
         "accessors": [{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
                        "min": [0, 0, 0], "max": [1, 1, 0]},
                       {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC2"},
                       {"bufferView": 2, "componentType": 5125, "count": 6, "type": "SCALAR"}]}
    if isinstance(image, bytes):
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(image)})
        g["images"] = [{"bufferView": 3, "mimeType": "image/png"}]
        blob += image
    else:
        g["images"] = [{"uri": image}]
    if sampler is not None:
        g["samplers"] = [sampler]
        g["textures"][0]["sampler"] = 0
    if second_material is not None:
        g["scenes"][0]["nodes"].append(1)
        g["nodes"].append({"name": "Other", "mesh": 1, "translation": [0, 0, 1]})
        g["meshes"].append({"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "indices": 2,
                                            "material": 1}]})
        g["materials"].append(second_material)
    g["bufferViews"] = views
    g["buffers"] = [{"byteLength": len(blob),
                     "uri": "data:application/octet-stream;base64," + base64.b64encode(blob).decode()}]
    path.write_text(json.dumps(g))
    return path


def _scene(tmp_path, objects, materials=None, scene_files=None):
    d = {"simulation": {"duration_s": 1.0}, "objects": objects}
    if materials:
        d["materials"] = materials
    if scene_files:
        d["scene_files"] = scene_files
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = hifi.Simulation.from_dict(d, base_dir=tmp_path)
    return sim.scene, [str(w.message) for w in caught if issubclass(w.category, ScenarioWarning)]


def _down(points_xy, z=1.0):
    """Rays straight down onto z = 0 at ``points_xy``."""
    p = np.asarray(points_xy, float)
    return np.c_[p, np.full(len(p), z)], np.tile([0.0, 0.0, -1.0], (len(p), 1))


def _colours(scene, origins, directions, times=0.0):
    hits = RayCaster(scene).cast(origins, directions, times)
    return HitTextures(scene).colour(scene.object_table("color_rgb"), hits, times), hits


# -- the functions --------------------------------------------------------------------------------

def test_srgb_decoding_is_iec_61966_2_1():
    c = np.array([0.0, 0.02, 0.04045, 0.1, 0.5, 188 / 255, 1.0])
    # IEC 61966-2-1:1999, 5.2, inverted: linear below the breakpoint, the 2.4 power above it
    expected = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    np.testing.assert_allclose(srgb_to_linear(c), expected, rtol=1e-15)
    # the two branches meet at the breakpoint to 1e-7 (the standard's own rounding of 0.04045)
    assert abs(0.04045 / 12.92 - ((0.04045 + 0.055) / 1.055) ** 2.4) < 1e-7
    assert srgb_to_linear(0.0) == 0.0 and srgb_to_linear(1.0) == 1.0
    # glTF 2.0, 3.9.2, worked example: texel [64, 124, 231] decodes to [0.051, 0.202, 0.799] and,
    # times baseColorFactor [0.2, 1.0, 0.7], gives the base colour [0.0102, 0.202, 0.5593]
    decoded = SRGB8_TO_LINEAR[[64, 124, 231]]
    np.testing.assert_allclose(decoded, [0.051, 0.202, 0.799], atol=5e-4)
    np.testing.assert_allclose(decoded * [0.2, 1.0, 0.7], [0.0102, 0.202, 0.5593], atol=5e-4)


def test_wrap_indices_follow_opengl():
    i = np.arange(-5, 9)
    # OpenGL 4.6, 8.14.2, for n = 4 texels, typed in
    assert wrap_index(i, 4, "repeat").tolist() == [3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]
    assert wrap_index(i, 4, "clamp").tolist() == [0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3]
    assert wrap_index(i, 4, "mirror").tolist() == [3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0]
    with pytest.raises(ValueError, match="wrap mode 'border'"):
        wrap_index(i, 4, "border")


@pytest.mark.parametrize("wrap, scipy_mode", [("repeat", "grid-wrap"), ("clamp", "nearest"), ("mirror", "reflect")])
def test_bilinear_sampling_matches_scipy(wrap, scipy_mode):
    rng = np.random.default_rng(3)
    img = rng.random((5, 7))
    uv = rng.uniform(-1.5, 2.5, (400, 2))
    got = sample_bilinear(img, uv, (wrap, wrap))
    # scipy: pixel centres at integer indices, rows from the top; v up -> row (1 - v) H - 1/2
    coords = np.vstack([(1.0 - uv[:, 1]) * 5 - 0.5, uv[:, 0] * 7 - 0.5])
    expected = ndimage.map_coordinates(img, coords, order=1, mode=scipy_mode)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_srgb_texels_are_decoded_before_interpolation():
    img = np.array([[[0, 0, 0], [255, 255, 255]]], np.uint8)             # black | white, one row
    mid = sample_bilinear(img, [[0.5, 0.5]], ("clamp", "clamp"), lut=SRGB8_TO_LINEAR)
    # halfway between the texel centres: half of linear black and linear white (glTF 2.0,
    # 3.9.2: decode, then filter), not the decoded mean code 0.5 (0.214)
    np.testing.assert_allclose(mid, [[0.5, 0.5, 0.5]], atol=1e-15)
    assert np.isnan(sample_bilinear(img, [[np.nan, 0.5]], lut=SRGB8_TO_LINEAR)).all()


def test_face_maps_interpolate_with_trimesh_barycentric_coordinates():
    rng = np.random.default_rng(5)
    vertices = rng.normal(size=(300, 3)) * 10.0
    faces = rng.permutation(300).reshape(100, 3)
    uv = rng.uniform(-2, 3, (300, 2))
    tri = vertices[faces]
    w = rng.dirichlet([1, 1, 1], 100)
    # points on each face, 1e-9 m off its plane (as Embree's hits are)
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    points = np.einsum("ij,ijk->ik", w, tri) + 1e-9 * normal / np.linalg.norm(normal, axis=1)[:, None]
    texture = PartTexture(uv, None, (1.0, 1.0, 1.0)).bind(vertices, faces)
    got = texcoords_at(texture, points, np.arange(100))
    bary = trimesh.triangles.points_to_barycentric(tri, points)
    np.testing.assert_allclose(got, np.einsum("ij,ijk->ik", bary, uv[faces]), atol=1e-9)
    # a zero-area face: its corners' mean
    flat = PartTexture(uv[:3], None, (1.0, 1.0, 1.0)).bind([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]])
    np.testing.assert_allclose(texcoords_at(flat, [[0.5, 0, 0]], [0]), [uv[:3].mean(axis=0)], atol=1e-15)


def test_luminance_scaling_and_its_bounds():
    grey = np.full((3, 3), 0.5)
    colour = np.array([[1.0, 1.0, 1.0], [0.25, 0.25, 0.25], [2.0, 2.0, 2.0]])
    # rho x Y(colour) / Y(grey): 0.2 x 2 = 0.4, 0.2 x 0.5 = 0.1, and 0.6 x 4 = 2.4 clipped to 1
    np.testing.assert_allclose(luminance_scaled_reflectance([0.2, 0.2, 0.6], colour, grey), [0.4, 0.1, 1.0])
    black = np.zeros((1, 3))
    assert luminance_scaled_reflectance([0.3], [[1.0, 1.0, 1.0]], black)[0] == 0.3    # no ratio: kept
    # the documented saturation: white road paint's colour on worn asphalt (the library's
    # entries) would be 0.278 x 0.8186 / 0.1763 = 1.29 at 905 nm, clipped to 1
    asphalt, paint = materials.LIBRARY["asphalt_worn"], materials.LIBRARY["road_paint_white"]
    y = np.dot([0.2126, 0.7152, 0.0722], paint.rgb) / np.dot([0.2126, 0.7152, 0.0722], asphalt.rgb)
    assert 1.28 < asphalt.lidar[1] * y < 1.30
    assert luminance_scaled_reflectance([asphalt.lidar[1]], [paint.rgb], [asphalt.rgb])[0] == 1.0


# -- files: orientation, samplers, the scene ---------------------------------------------------------

#: Scene points (x, y) on the unit square at the four texel centres, and the quadrant glTF
#: coordinates u = x, v = y put there (glTF 2.0, 3.8.3: v from the image's top).
POINTS = [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)]


def test_gltf_texture_coordinates_start_at_the_top_left(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    typed_gltf(tmp_path / "sq.gltf", uv=SQUARE[:, :2], image="quad.png")
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.gltf", "parts": True}])
    colour, hits = _colours(scene, *_down(POINTS))
    assert (hits.object_id == 0).all()
    # (u, v) = (1/4, 1/4): the top-left quadrant; (3/4, 1/4): top-right; (1/4, 3/4): bottom-left
    np.testing.assert_allclose(colour, [RED, GREEN, BLUE, WHITE], atol=1e-12)


def test_embedded_glb_images_read_alike(tmp_path):
    typed_gltf(tmp_path / "sq.gltf", uv=SQUARE[:, :2], image=_png(QUADRANTS))
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.gltf", "parts": True}])
    colour, _ = _colours(scene, *_down(POINTS))
    np.testing.assert_allclose(colour, [RED, GREEN, BLUE, WHITE], atol=1e-12)
    assert scene.objects[0].texture.base_colour.name == "0 (embedded in sq.gltf)"


def test_obj_texture_coordinates_start_at_the_bottom_left(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    (tmp_path / "sq.mtl").write_text("newmtl Tex\nKd 1 1 1\nmap_Kd quad.png\n")
    (tmp_path / "sq.obj").write_text("mtllib sq.mtl\no Square\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
                                     "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nusemtl Tex\nf 1/1 2/2 3/3\nf 1/1 3/3 4/4\n")
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.obj", "parts": True}])
    colour, _ = _colours(scene, *_down(POINTS))
    # vt (1/4, 1/4): the bottom-left quadrant of the image; (1/4, 3/4): top-left
    np.testing.assert_allclose(colour, [BLUE, WHITE, RED, GREEN], atol=1e-12)


def test_base_colour_factor_multiplies_the_texture(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    path = typed_gltf(tmp_path / "sq.gltf", uv=SQUARE[:, :2], image="quad.png")
    g = json.loads(path.read_text())
    g["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"] = [0.2, 0.4, 0.6, 1.0]
    path.write_text(json.dumps(g))
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.gltf", "parts": True}])
    colour, _ = _colours(scene, *_down(POINTS))
    # glTF 2.0, 3.9.2: factor x texture; trimesh keeps the factor at 8 bits (round(255 f) / 255)
    factor = np.round(np.array([0.2, 0.4, 0.6]) * 255) / 255
    np.testing.assert_allclose(colour, factor * np.array([RED, GREEN, BLUE, WHITE]), atol=1e-12)


def test_sampler_wrap_modes_outside_zero_to_one(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    uv = 2.0 * SQUARE[:, :2] - 0.5                       # glTF u, v from -1/2 to 3/2
    # x = 7/8 -> u = 5/4; x = 1/8 -> u = -1/4 (y likewise for v)
    points = [(0.875, 0.875), (0.125, 0.125), (0.875, 0.125)]
    typed_gltf(tmp_path / "cm.gltf", uv=uv, image="quad.png", sampler={"wrapS": 33071, "wrapT": 33648})
    typed_gltf(tmp_path / "rr.gltf", uv=uv, image="quad.png")                 # no sampler: REPEAT
    cm, _ = _scene(tmp_path, [{"name": "a", "mesh": "cm.gltf", "parts": True}])
    rr, _ = _scene(tmp_path, [{"name": "b", "mesh": "rr.gltf", "parts": True}])
    # CLAMP_TO_EDGE in u: 5/4 -> the right column, -1/4 -> the left one; MIRRORED_REPEAT in v:
    # 5/4 -> 3/4 (bottom row), -1/4 -> 1/4 (top row)
    np.testing.assert_allclose(_colours(cm, *_down(points))[0], [WHITE, RED, GREEN], atol=1e-12)
    # REPEAT: 5/4 -> 1/4, -1/4 -> 3/4, in both
    np.testing.assert_allclose(_colours(rr, *_down(points))[0], [RED, WHITE, BLUE], atol=1e-12)


def test_mtl_clamp_option(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    (tmp_path / "sq.mtl").write_text("newmtl Tex\nKd 1 1 1\nmap_Kd -clamp on quad.png\n")
    (tmp_path / "sq.obj").write_text("mtllib sq.mtl\no Square\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
                                     "vt -0.5 -0.5\nvt 1.5 -0.5\nvt 1.5 1.5\nvt -0.5 1.5\nusemtl Tex\n"
                                     "f 1/1 2/2 3/3\nf 1/1 3/3 4/4\n")
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.obj", "parts": True}])
    assert scene.objects[0].texture.base_colour.wrap == ("clamp", "clamp")
    # vt (5/4, 5/4) clamps to the top-right texel, (-1/4, -1/4) to the bottom-left one
    np.testing.assert_allclose(_colours(scene, *_down([(0.875, 0.875), (0.125, 0.125)]))[0], [GREEN, BLUE],
                               atol=1e-12)


def test_a_moving_part_is_sampled_in_its_frame_at_the_ray_time(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    typed_gltf(tmp_path / "sq.gltf", uv=SQUARE[:, :2], image="quad.png")
    track = [{"t_s": 0.0, "position_m": [0, 0, 0]}, {"t_s": 1.0, "position_m": [1, 0, 0]}]
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.gltf", "parts": True, "track": track}])
    o, d = _down([(0.75, 0.25), (0.75, 0.25)])
    # the same scene point at t = 0 (body x = 3/4: green) and t = 1/2 (body x = 1/4: red)
    colour, hits = _colours(scene, o, d, np.array([0.0, 0.5]))
    assert (hits.object_id == 0).all()
    np.testing.assert_allclose(colour, [GREEN, RED], atol=1e-9)


def test_behind_a_mirror_the_final_surface_is_sampled(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    typed_gltf(tmp_path / "sq.gltf", uv=SQUARE[:, :2], image="quad.png")
    # a mirror in the plane x = 1.5 (a plane generator turned about y: normal along x)
    mirror = {"name": "mirror", "mesh": "plane", "size_m": [2.0, 3.0], "material": "silver",
              "position_m": [1.5, 0.5, 1.0], "rpy_deg": [0, 90, 0]}
    scene, _ = _scene(tmp_path, [{"name": "sq", "mesh": "sq.gltf", "parts": True}, mirror],
                      materials={"silver": {"reflectivity": 0.0, "mirror": 1.0}})
    # from (1.25, 0.25, 1) toward +x and down at 45 deg: the mirror at (1.5, 0.25, 0.75), then
    # the square at (0.75, 0.25, 0): green
    d = np.array([[1.0, 0.0, -1.0]]) / np.sqrt(2.0)
    colour, hits = _colours(scene, np.array([[1.25, 0.25, 1.0]]), d)
    assert hits.bounces[0] == 1 and hits.object_id[0] == 0
    np.testing.assert_allclose(hits.point[0], [0.75, 0.25, 0.0], atol=1e-6)
    np.testing.assert_allclose(colour, [GREEN], atol=1e-6)


def test_without_textures_the_lookup_is_the_table_itself(tmp_path):
    """Regression: a scene without textures gets ``table[object_id]``, bit for bit."""
    scene, _ = _scene(tmp_path, [{"name": "g", "mesh": "plane", "size_m": [4, 4]}])
    hits = RayCaster(scene).cast(*_down([(0.1, 0.2), (9.0, 9.0)]))
    lookup = HitTextures(scene)
    assert not lookup
    table = scene.object_table("reflectivity", wavelength_m=905e-9)
    got = lookup.reflectance(table, hits, 0.0)
    assert got.dtype == table.dtype and np.array_equal(got, table[hits.object_id], equal_nan=True)


def test_textures_left_out_are_warned_about(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    typed_gltf(tmp_path / "t1.gltf", uv=SQUARE[:, :2], image="quad.png", texcoord=1)
    typed_gltf(tmp_path / "tt.gltf", uv=SQUARE[:, :2], image="quad.png",
               extensions={"KHR_texture_transform": {"scale": [2, 2]}})
    scene, warned = _scene(tmp_path, [{"name": "a", "mesh": "t1.gltf", "parts": True},
                                      {"name": "b", "mesh": "tt.gltf", "parts": True}])
    assert all(o.texture is None for o in scene.objects)
    assert any("t1.gltf: material 'Tex': its texture 'quad.png' is left out: it uses TEXCOORD_1" in w
               for w in warned), warned
    assert any("tt.gltf: material 'Tex': its texture 'quad.png' is left out: it has a KHR_texture_transform" in w
               for w in warned), warned


def test_materials_trimesh_cannot_tell_apart_are_refused(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    (tmp_path / "other.png").write_bytes(_png(QUADRANTS[::-1]))
    path = typed_gltf(tmp_path / "two.gltf", uv=SQUARE[:, :2], image="quad.png",
                      second_material={"name": "Tex", "pbrMetallicRoughness": {"baseColorTexture": {"index": 1}}})
    g = json.loads(path.read_text())
    g["textures"].append({"source": 1})
    g["images"].append({"uri": "other.png"})
    path.write_text(json.dumps(g))
    with pytest.raises(ValueError, match=r"its materials 0, 1 share the name 'Tex' and baseColorFactor but not "
                                         r"their baseColorTexture"):
        read_scene_file(path)


def test_memory_estimate_counts_decoded_textures(tmp_path):
    (tmp_path / "big.png").write_bytes(_png(np.zeros((64, 32, 3), np.uint8)))
    typed_gltf(tmp_path / "sq.gltf", uv=SQUARE[:, :2], image="big.png")
    sc = scenario_mod.validate({"simulation": {"duration_s": 0.1},
                                "objects": [{"name": "sq", "mesh": "sq.gltf", "parts": True}]}, base_dir=tmp_path)
    _, rows = generated_scene_bytes(sc)
    # 2 triangles and their maps to texture coordinates, a 64 x 32 RGB image at 1 B per
    # channel, 4 vertices' (u, v) in float64
    assert TEXCOORD_MAP_BYTES_PER_FACE == 2 * 4 * 8                      # 2 x 4 float64
    assert rows[0][2] == 2 * (SCENE_BYTES_PER_FACE + TEXCOORD_MAP_BYTES_PER_FACE) + 64 * 32 * 3 + 4 * 2 * 8


def test_reflectance_maps_read_greyscale_as_linear(tmp_path):
    PIL.Image.fromarray(np.array([[0, 51], [255, 102]], np.uint8), mode="L").save(tmp_path / "m8.png")
    PIL.Image.fromarray(np.array([[0, 65535]], np.uint16)).save(tmp_path / "m16.png")
    np.testing.assert_allclose(read_reflectance_map(tmp_path / "m8.png").texels, [[0, 0.2], [1, 0.4]], atol=1e-7)
    np.testing.assert_allclose(read_reflectance_map(tmp_path / "m16.png").texels, [[0, 1]], atol=1e-7)
    PIL.Image.fromarray(QUADRANTS).save(tmp_path / "rgb.png")
    with pytest.raises(ValueError, match="a RGB image; a reflectance map is greyscale"):
        read_reflectance_map(tmp_path / "rgb.png")
    with pytest.raises(ValueError, match=r"file not found \(looked for .*nothere.png\)"):
        read_reflectance_map(tmp_path / "nothere.png")


# -- bad input through the command line -----------------------------------------------------------

def _write_inputs(tmp_path):
    (tmp_path / "quad.png").write_bytes(_png(QUADRANTS))
    (tmp_path / "junk.png").write_bytes(b"not an image at all" * 4)
    (tmp_path / "cut.png").write_bytes(_png(np.zeros((64, 64, 3), np.uint8) + 7)[:60])
    typed_gltf(tmp_path / "lost.gltf", uv=SQUARE[:, :2], image="gone.png")
    typed_gltf(tmp_path / "junk.gltf", uv=SQUARE[:, :2], image="junk.png")
    typed_gltf(tmp_path / "cut.gltf", uv=SQUARE[:, :2], image="cut.png")
    typed_gltf(tmp_path / "emb.gltf", uv=SQUARE[:, :2], image=b"\x89PNG\r\n\x1a\nbroken")
    (tmp_path / "sq.mtl").write_text("newmtl Tex\nKd 1 1 1\nmap_Kd gone.png\n")
    (tmp_path / "sq.obj").write_text("mtllib sq.mtl\no Square\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
                                     "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nusemtl Tex\nf 1/1 2/2 3/3\nf 1/1 3/3 4/4\n")
    (tmp_path / "nouv.obj").write_text("o Plain\nv 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n")
    typed_gltf(tmp_path / "ok.gltf", uv=SQUARE[:, :2], image="quad.png")
    PIL.Image.fromarray(QUADRANTS).save(tmp_path / "rgb.png")
    PIL.Image.fromarray(np.full((2, 2), 128, np.uint8), mode="L").save(tmp_path / "grey.png")


@pytest.mark.parametrize("body, message", [
    ('[[objects]]\nname = "a"\nmesh = "lost.gltf"\nparts = true\n',
     r"s.toml:5: objects\[0\].mesh = 'lost.gltf': cannot load mesh file .*lost.gltf: its texture image 'gone.png' "
     r"is missing \(looked for .*gone.png\)"),
    ('[[objects]]\nname = "a"\nmesh = "junk.gltf"\nparts = true\n',
     r"objects\[0\].mesh = 'junk.gltf': cannot load mesh file .*junk.gltf: its texture image 'junk.png' cannot be "
     r"decoded \(UnidentifiedImageError"),
    ('[[objects]]\nname = "a"\nmesh = "cut.gltf"\nparts = true\n',
     r"objects\[0\].mesh = 'cut.gltf': cannot load mesh file .*cut.gltf: its texture image 'cut.png' cannot be "
     r"decoded \(OSError"),
    ('[[objects]]\nname = "a"\nmesh = "emb.gltf"\nparts = true\n',
     r"objects\[0\].mesh = 'emb.gltf': cannot load mesh file .*emb.gltf: its texture image 0 \(embedded in "
     r"emb.gltf\) cannot be decoded"),
    ('[[objects]]\nname = "a"\nmesh = "sq.obj"\nparts = true\n',
     r"objects\[0\].mesh = 'sq.obj': cannot load mesh file .*sq.obj: its texture image 'gone.png' is missing"),
    ('[scene_files.ok]\nreflectance_maps = { "Tex" = "nothere.png" }\n[[objects]]\nname = "a"\nmesh = "ok.gltf"\n',
     r"s.toml:4: scene_files.ok.reflectance_maps = 'nothere.png': reflectance map 'nothere.png' for 'Tex': file "
     r"not found \(looked for .*nothere.png\)"),
    ('[scene_files.ok]\nreflectance_maps = { "Tex" = "rgb.png" }\n[[objects]]\nname = "a"\nmesh = "ok.gltf"\n',
     r"scene_files.ok.reflectance_maps = 'rgb.png': reflectance map 'rgb.png' for 'Tex': a RGB image; a "
     r"reflectance map is greyscale"),
    ('[scene_files.nouv]\nreflectance_maps = { "*" = "grey.png" }\n[[objects]]\nname = "a"\nmesh = "nouv.obj"\n',
     r"scene_files.nouv.reflectance_maps = '\*': '\*' gives a reflectance map to part 'a/Plain', which has no "
     r"texture coordinates in nouv.obj"),
])
def test_bad_textures_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, body, message):
    _write_inputs(tmp_path)
    scenario = tmp_path / "s.toml"
    scenario.write_text("[simulation]\nduration_s = 0.1\n" + body)
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hifi: error: "), err
    assert re.search(message, err[0]), err[0]
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_a_reflectance_map_glob_that_matches_no_part_is_warned_about(tmp_path):
    _write_inputs(tmp_path)
    scene, warned = _scene(tmp_path, [{"name": "a", "mesh": "ok.gltf"}],
                           scene_files={"ok": {"reflectance_maps": {"Nothing*": "grey.png", "Tex": "grey.png"}}})
    assert any("scene_files.ok.reflectance_maps: 'Nothing*' match(es) no part" in w for w in warned), warned
    # the one that matches: the map's 128 / 255 everywhere on the square, for a lidar at any wavelength
    hits = RayCaster(scene).cast(*_down(POINTS))
    table = scene.object_table("reflectivity", wavelength_m=1550e-9)
    np.testing.assert_allclose(HitTextures(scene).reflectance(table, hits, 0.0), 128 / 255, atol=1e-7)
