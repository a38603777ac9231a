"""Scene files read with their parts (hifi.world.scene_files): node trees, transforms, materials.

Sources of expected values:
- the transforms, colours and names written into the files here (trimesh's glTF and OBJ
  writers, and a glTF whose JSON is typed in): a part's placement is checked against the
  matrix product of what was written, composed with numpy and scipy, never with the reader;
- trimesh's own flattening of the same file (``Scene.to_mesh``, an independent path through
  the scene graph) for the scene-frame vertices;
- glTF 2.0 (schema ``node``: TRS "postmultiplied in the T * R * S order"; schema
  ``material.pbrMetallicRoughness``: ``baseColorFactor`` default ``[1, 1, 1, 1]``) and
  IEC 61966-2-1 / ITU-R BT.709-6 for the luminance coefficients 0.2126, 0.7152, 0.0722.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation
from trimesh.visual import TextureVisuals
from trimesh.visual.material import PBRMaterial

from hifi.api.meshes import check_gltf_file, load_mesh_file
from hifi.world.scene_files import FileMaterial, derived_material, read_scene_file, split_rigid

#: Colours as multiples of 1/255, so trimesh's 8-bit storage holds them exactly.
PAINT_RGB = (204 / 255, 51 / 255, 51 / 255)        # 0.8, 0.2, 0.2
RUBBER_RGB = (13 / 255, 13 / 255, 26 / 255)


def _matrix(translation, rpy_deg) -> np.ndarray:
    """4 x 4 transform: rotation about x, y, z (scipy) then translation."""
    m = np.eye(4)
    m[:3, :3] = Rotation.from_euler("xyz", rpy_deg, degrees=True).as_matrix()
    m[:3, 3] = translation
    return m


#: The wheel's transform in the body's frame, as written into the file.
WHEEL_LOCAL = _matrix([1.2, -0.8, 0.3], [90.0, 0.0, 30.0])


def car_scene() -> trimesh.Scene:
    """A body (2 x 1 x 1 m box, material Paint) with a child wheel (cylinder, material Rubber)
    at :data:`WHEEL_LOCAL`."""
    body = trimesh.creation.box(extents=[2.0, 1.0, 1.0])
    body.visual = TextureVisuals(material=PBRMaterial(name="Paint", baseColorFactor=[*PAINT_RGB, 1.0]))
    wheel = trimesh.creation.cylinder(radius=0.3, height=0.2, sections=16)
    wheel.visual = TextureVisuals(material=PBRMaterial(name="Rubber", baseColorFactor=[*RUBBER_RGB, 1.0]))
    s = trimesh.Scene()
    s.add_geometry(body, node_name="Body", geom_name="body")
    s.add_geometry(wheel, node_name="Wheel", geom_name="wheel", parent_node_name="Body", transform=WHEEL_LOCAL)
    return s


def write_car(tmp_path, suffix=".glb"):
    """:func:`car_scene` as ``car.glb``, or ``car.gltf`` with its buffers beside it."""
    s = car_scene()
    if suffix == ".glb":
        path = tmp_path / "car.glb"
        path.write_bytes(s.export(file_type="glb"))
        return path
    for name, data in s.export(file_type="gltf").items():
        (tmp_path / ("car.gltf" if name == "model.gltf" else name)).write_bytes(data)
    return tmp_path / "car.gltf"


def _pose_matrix(rotation, translation) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rotation, translation
    return m


def _placed_vertices(sf) -> np.ndarray:
    """Every part's vertices in the file's frame, through the nodes' rigid poses."""
    world, out = [], []
    for node in sf.nodes:
        local = _pose_matrix(node.rotation, node.translation)
        world.append(local if node.parent is None else world[node.parent] @ local)
        if node.mesh is not None:
            out.append(node.mesh.vertices @ world[-1][:3, :3].T + world[-1][:3, 3])
    return np.concatenate(out)


@pytest.mark.parametrize("suffix", [".glb", ".gltf"])
def test_gltf_parts_keep_names_materials_and_node_transforms(tmp_path, suffix):
    sf = read_scene_file(write_car(tmp_path, suffix))
    names = [n.name for n in sf.nodes]
    assert names == ["Body", "Wheel"]
    body, wheel = sf.nodes
    assert body.parent is None and wheel.parent == 0 and wheel.ancestors == ("Body",)
    assert (body.material, wheel.material) == ("Paint", "Rubber")
    np.testing.assert_allclose(body.rotation, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(body.translation, 0.0, atol=1e-15)
    # the child's local pose is the matrix written for it (float32 in the file: 1e-7 relative)
    np.testing.assert_allclose(_pose_matrix(wheel.rotation, wheel.translation), WHEEL_LOCAL, atol=1e-6)
    assert len(body.mesh.faces) == 12 and len(wheel.mesh.faces) == len(trimesh.creation.cylinder(
        radius=0.3, height=0.2, sections=16).faces)
    assert sf.materials["Paint"] == FileMaterial("Paint", PAINT_RGB, "glTF baseColorFactor")
    assert sf.materials["Rubber"].color_rgb == RUBBER_RGB
    assert sf.n_faces == len(body.mesh.faces) + len(wheel.mesh.faces)


def test_placed_parts_are_where_trimesh_flattens_them(tmp_path):
    # trimesh's Scene.to_mesh applies each node's full transform to its geometry: the same
    # vertices, in the same node order, as the rigid poses of the parts applied to their meshes
    path = write_car(tmp_path)
    sf = read_scene_file(path)
    loaded = trimesh.load_scene(str(path), process=False)
    order = [loaded.graph[n.name] for n in sf.nodes]
    expected = np.concatenate([trimesh.transform_points(loaded.geometry[g].vertices, m) for m, g in order])
    np.testing.assert_allclose(_placed_vertices(sf), expected, atol=1e-12)


def _typed_gltf(tmp_path, *, buffer_bytes=None, uri="door.bin") -> tuple:
    """A glTF typed in as JSON: node Car (no mesh) with children Door (TRS, a mesh of two
    primitives, materials Glass and Paint), Door (a second node of that name, scale 2) and an
    unnamed node; each primitive a unit square, z = 0 and z = 1."""
    v0 = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    v1 = v0 + np.float32([0, 0, 1])
    idx = np.array([0, 1, 2, 0, 2, 3], np.uint32)
    blob = v0.tobytes() + v1.tobytes() + idx.tobytes()
    door_q = Rotation.from_euler("z", 90, degrees=True).as_quat()          # x, y, z, w (glTF's order)
    g = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
         "nodes": [{"name": "Car", "children": [1, 2, 3]},
                   {"name": "Door", "mesh": 0, "translation": [1, 2, 3], "rotation": list(door_q)},
                   {"name": "Door", "mesh": 1, "scale": [2, 2, 2]},
                   {"mesh": 1}],
         "meshes": [{"name": "door", "primitives": [{"attributes": {"POSITION": 0}, "indices": 2, "material": 0},
                                                    {"attributes": {"POSITION": 1}, "indices": 2, "material": 1}]},
                    {"name": "plate", "primitives": [{"attributes": {"POSITION": 0}, "indices": 2}]}],
         "materials": [{"name": "Glass", "pbrMetallicRoughness": {"baseColorFactor": [0.2, 0.4, 0.6, 1.0]}},
                       {"name": "Paint"}],
         "buffers": [{"uri": uri, "byteLength": len(blob)}],
         "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 48},
                         {"buffer": 0, "byteOffset": 48, "byteLength": 48},
                         {"buffer": 0, "byteOffset": 96, "byteLength": 24}],
         "accessors": [{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
                        "min": [0, 0, 0], "max": [1, 1, 0]},
                       {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3",
                        "min": [0, 0, 1], "max": [1, 1, 1]},
                       {"bufferView": 2, "componentType": 5125, "count": 6, "type": "SCALAR"}]}
    path = tmp_path / "door.gltf"
    path.write_text(json.dumps(g))
    (tmp_path / "door.bin").write_bytes(blob if buffer_bytes is None else blob[:buffer_bytes])
    return path, v0, v1


def test_primitives_scale_duplicate_and_unnamed_nodes(tmp_path):
    path, v0, v1 = _typed_gltf(tmp_path)
    sf = read_scene_file(path, scale=0.5)
    by = {n.name: n for n in sf.nodes}
    # trimesh names: duplicates numbered (Door_1), an unnamed node by its index (3); a mesh of
    # two primitives is a node without triangles with one child per primitive, named by material
    assert set(by) == {"Car", "Door", "Door_1", "3", "Door/Glass", "Door/Paint"}
    assert by["Door"].mesh is None and by["Car"].mesh is None
    assert by["Door/Glass"].parent == sf.nodes.index(by["Door"]) and by["Door/Glass"].node_name == "Door"
    assert by["Door/Glass"].ancestors == ("Car",) and by["Door/Paint"].material == "Paint"
    assert by["3"].material is None
    # glTF 2.0: a material without pbrMetallicRoughness has baseColorFactor [1, 1, 1, 1]
    assert sf.materials["Paint"] == FileMaterial("Paint", (1.0, 1.0, 1.0), "glTF default baseColorFactor")
    assert sf.materials["Glass"].color_rgb == pytest.approx((51 / 255, 102 / 255, 153 / 255))   # 8-bit
    # scene-file frame of each vertex: scale 0.5 on everything; Door at T R (glTF node: T * R * S),
    # Door_1 scaled by 2 (baked into its vertices, its frame rigid)
    rot = Rotation.from_euler("z", 90, degrees=True)
    world = {}
    for node in sf.nodes:
        local = _pose_matrix(node.rotation, node.translation)
        world[node.name] = local if node.parent is None else world[sf.nodes[node.parent].name] @ local
    def placed(name):
        m = world[name]
        return by[name].mesh.vertices @ m[:3, :3].T + m[:3, 3]
    np.testing.assert_allclose(placed("Door/Glass"), 0.5 * (rot.apply(v0) + [1, 2, 3]), atol=1e-12)
    np.testing.assert_allclose(placed("Door/Paint"), 0.5 * (rot.apply(v1) + [1, 2, 3]), atol=1e-12)
    np.testing.assert_allclose(placed("Door_1"), 0.5 * 2.0 * v0, atol=1e-12)
    np.testing.assert_allclose(placed("3"), 0.5 * v0, atol=1e-12)
    for node in sf.nodes:                     # every frame is rigid
        np.testing.assert_allclose(node.rotation @ node.rotation.T, np.eye(3), atol=1e-12)


def _write_obj(tmp_path, *, mtl=True):
    """An OBJ with objects Wall (faces of Brick and of Window_Glass) and Roof (Brick)."""
    if mtl:
        (tmp_path / "house.mtl").write_text("newmtl Brick\nKd 0.6 0.4 0.2\nnewmtl Window_Glass\nKd 0.2 0.4 0.6\n")
    (tmp_path / "house.obj").write_text(
        ("mtllib house.mtl\n" if mtl else "")
        + "o Wall\nv 0 0 0\nv 4 0 0\nv 4 0 3\nv 0 0 3\nv 1 0 1\nv 2 0 1\nv 2 0 2\n"
        "usemtl Brick\nf 1 2 3\nf 1 3 4\nusemtl Window_Glass\nf 5 6 7\n"
        "o Roof\nv 0 0 3\nv 4 0 3\nv 2 2 4\nusemtl Brick\nf 8 9 10\n")
    return tmp_path / "house.obj"


def test_obj_parts_by_object_and_material(tmp_path):
    sf = read_scene_file(_write_obj(tmp_path))
    by = {n.name: n for n in sf.nodes}
    # trimesh (split_objects, split_groups) names a part OBJECT_MATERIAL
    assert set(by) == {"Wall_Brick", "Wall_Window_Glass", "Roof_Brick"}
    assert [len(by[n].mesh.faces) for n in ("Wall_Brick", "Wall_Window_Glass", "Roof_Brick")] == [2, 1, 1]
    assert {n: by[n].material for n in by} == {"Wall_Brick": "Brick", "Wall_Window_Glass": "Window_Glass",
                                               "Roof_Brick": "Brick"}
    assert all(n.parent is None and np.array_equal(n.rotation, np.eye(3)) for n in sf.nodes)
    # MTL Kd 0.6 0.4 0.2 at 8 bits per channel (trimesh), as written
    assert sf.materials["Brick"].color_rgb == pytest.approx((153 / 255, 102 / 255, 51 / 255))
    assert sf.materials["Brick"].source == "MTL Kd"
    np.testing.assert_allclose(by["Roof_Brick"].mesh.vertices, [[0, 0, 3], [4, 0, 3], [2, 2, 4]])


def test_obj_without_mtl_has_parts_without_material(tmp_path):
    sf = read_scene_file(_write_obj(tmp_path, mtl=False))
    assert sf.materials == {} and all(n.material is None for n in sf.nodes) and sf.n_faces == 4


@pytest.mark.parametrize("linear", [np.diag([2.0, 0.5, 3.0]), np.diag([1.0, 1.0, -1.0]),
                                    np.array([[1.0, 0.4, 0.0], [0.0, 1.0, 0.0], [0.2, 0.0, 1.5]])])
def test_split_rigid_keeps_the_affine_map(linear):
    # A = R L for a rotation R (orthonormal, det +1) whatever scale, reflection or shear
    m = np.eye(4)
    m[:3, :3] = Rotation.from_euler("xyz", [10, -20, 35], degrees=True).as_matrix() @ linear
    m[:3, 3] = [1.0, -2.0, 0.5]
    r, t, rest = split_rigid(m)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(r) == pytest.approx(1.0)
    np.testing.assert_allclose(r @ rest, m[:3, :3], atol=1e-12)
    np.testing.assert_array_equal(t, m[:3, 3])


def test_split_rigid_takes_a_rotation_as_it_is():
    m = _matrix([3, 4, 5], [30, 40, 50])
    r, t, rest = split_rigid(m)
    assert rest is None and np.array_equal(r, m[:3, :3]) and np.array_equal(t, [3, 4, 5])


def test_derived_material_reflectivity_is_the_luminance():
    # IEC 61966-2-1 / BT.709-6: Y = 0.2126 R + 0.7152 G + 0.0722 B (coefficients typed in)
    for rgb in [(1.0, 1.0, 1.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), PAINT_RGB]:
        d = derived_material(FileMaterial("m", rgb, "test"), "f/m")
        assert d.reflectivity == pytest.approx(0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2], abs=1e-12)
        assert d.color_rgb == pytest.approx(rgb) and d.name == "f/m" and d.spectrum is None
        assert (d.mirror, d.roughness_rad, d.class_name) == (0.0, 0.0, "unlabelled")
    assert derived_material(FileMaterial("w", (1.0, 1.0, 1.0), "test"), "w").reflectivity == pytest.approx(1.0)


def test_missing_and_truncated_buffers_name_the_file(tmp_path):
    path, *_ = _typed_gltf(tmp_path, uri="gone.bin")
    with pytest.raises(ValueError, match=r"buffer 0 is the file 'gone.bin', which is missing .*gone.bin"):
        read_scene_file(path)
    path, *_ = _typed_gltf(tmp_path, buffer_bytes=50)
    with pytest.raises(ValueError, match=r"buffer 0, .*door.bin, holds 50 bytes, fewer than its byteLength 120"):
        check_gltf_file(path)
    with pytest.raises(ValueError, match=r"buffer 0, .*door.bin, holds 50 bytes"):     # as one mesh too
        load_mesh_file(path)
    glb = write_car(tmp_path)
    data = glb.read_bytes()
    glb.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match=rf"holds {len(data) // 2} bytes, fewer than the {len(data)} its header"):
        read_scene_file(glb)


def test_unreadable_files_raise_value_errors(tmp_path):
    (tmp_path / "junk.gltf").write_text("{not json")
    with pytest.raises(ValueError, match="not glTF JSON"):
        read_scene_file(tmp_path / "junk.gltf")
    (tmp_path / "junk.obj").write_text("v a b c\nf 1 2 3\n")
    with pytest.raises(ValueError, match="trimesh could not read it"):
        read_scene_file(tmp_path / "junk.obj")
    (tmp_path / "empty.obj").write_text("v 0 0 0\n")
    with pytest.raises(ValueError, match="holds no triangles"):
        read_scene_file(tmp_path / "empty.obj")
    trimesh.creation.box().export(tmp_path / "box.stl")
    with pytest.raises(ValueError, match="only .gltf, .glb, .obj files have parts"):
        read_scene_file(tmp_path / "box.stl")
