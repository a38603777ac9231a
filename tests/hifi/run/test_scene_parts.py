"""Scene files with parts in a scenario (hifi.run.scene_parts): ids, classes, materials, poses,
warnings, errors, the memory estimate, and a whole run through to SemanticKITTI labels.

Sources of expected values:
- the transforms written into the files here: a part's hit points are computed with numpy
  from the object's pose (scipy ``Rotation.from_euler("xyz", rpy)``, REP 103) times the node
  matrix written into the file, times the part's own vertices, never through hifi's poses;
- the face counts of the meshes written (trimesh's box: 12 triangles);
- the luminance coefficients of IEC 61966-2-1 / ITU-R BT.709-6 (0.2126, 0.7152, 0.0722);
- SemanticKITTI's file format and label ids as semantic-kitti-api reads them
  (``auxiliary/laserscan.py``: ``.label`` uint32, ``label & 0xFFFF`` semantic, ``label >> 16``
  instance; ``config/semantic-kitti.yaml``: car 10, building 50, traffic-sign 81), typed in.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import trimesh
import xarray as xr
from scipy.spatial.transform import Rotation
from trimesh.visual import TextureVisuals
from trimesh.visual.material import PBRMaterial

import hifi
from hifi.api import meshes
from hifi.api.estimate import (MOVING_SCENE_BYTES_PER_FACE, SCENE_BYTES_PER_FACE, check_scene_memory,
                               generated_scene_bytes)
from hifi.caster import RayCaster
from hifi.cli import main
from hifi.errors import ScenarioError, ScenarioWarning
from hifi.run import scenario as scenario_mod

#: float32 casting of coordinates below 30 m: a few um; 20 um bounds it with the poses' rounding.
HIT_ATOL_M = 2e-5

#: Colours in multiples of 1/255 (trimesh keeps 8 bits per channel).
PAINT_RGB = (204 / 255, 51 / 255, 51 / 255)
CLOTH_RGB = (51 / 255, 102 / 255, 204 / 255)


def _m(translation, rpy_deg) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_euler("xyz", rpy_deg, degrees=True).as_matrix()
    m[:3, 3] = translation
    return m


#: The flag's transform in the chassis's frame, as written into cart.glb.
FLAG_LOCAL = _m([0.5, 0.0, 1.5], [90.0, 0.0, 30.0])
CHASSIS = trimesh.creation.box(extents=[2.0, 1.0, 0.5])
FLAG = meshes.plane([1.0, 1.0])                     # a unit square in its own xy plane


def write_cart(directory, name="cart.glb"):
    """A cart: node Chassis (a 2 x 1 x 0.5 m box, material Paint) with a child Flag (a 1 m
    square, material Cloth) at :data:`FLAG_LOCAL`."""
    chassis, flag = CHASSIS.copy(), FLAG.copy()
    chassis.visual = TextureVisuals(material=PBRMaterial(name="Paint", baseColorFactor=[*PAINT_RGB, 1.0]))
    flag.visual = TextureVisuals(material=PBRMaterial(name="Cloth", baseColorFactor=[*CLOTH_RGB, 1.0]))
    s = trimesh.Scene()
    s.add_geometry(chassis, node_name="Chassis", geom_name="chassis")
    s.add_geometry(flag, node_name="Flag", geom_name="flag", parent_node_name="Chassis", transform=FLAG_LOCAL)
    path = directory / name
    path.write_bytes(s.export(file_type="glb"))
    return path


def write_house(directory):
    """house.obj + house.mtl: object Wall (a 4 x 3 m wall in the xz plane, Brick) and object
    Sign (a square in front of it, Metal)."""
    (directory / "house.mtl").write_text("newmtl Brick\nKd 0.6 0.4 0.2\nnewmtl Metal\nKd 0.8 0.8 0.8\n")
    (directory / "house.obj").write_text(
        "mtllib house.mtl\n"
        "o Wall\nv -2 0 0\nv 2 0 0\nv 2 0 3\nv -2 0 3\nusemtl Brick\nf 1 2 3\nf 1 3 4\n"
        "o Sign\nv -0.5 -0.5 1\nv 0.5 -0.5 1\nv 0.5 -0.5 2\nv -0.5 -0.5 2\nusemtl Metal\nf 5 6 7\nf 5 7 8\n")
    return directory / "house.obj"


def cart_scenario(**table):
    """Two carts: one standing at (10, 5, 0) turned 40 deg, one driving along y = -10."""
    d = {"simulation": {"duration_s": 1.0},
         "materials": {"paint": {"reflectivity": 0.6, "class": "car"}},
         "objects": [{"name": "cart", "mesh": "cart.glb", "position_m": [10, 5, 0], "rpy_deg": [0, 0, 40]},
                     {"name": "cart2", "mesh": "cart.glb",
                      "track": [{"t_s": 0.0, "position_m": [0, -10, 0]}, {"t_s": 1.0, "position_m": [10, -10, 0]}]}]}
    if table is not None:
        d["scene_files"] = {"cart": table}
    return d


def _sim(tmp_path, d):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = hifi.Simulation.from_dict(d, base_dir=tmp_path)
    return sim, [str(w.message) for w in caught if issubclass(w.category, ScenarioWarning)]


def _face_rays(mesh, world, offset_m=3.0):
    """Rays toward the centroid of every face of ``mesh`` placed by the 4 x 4 ``world``, from
    ``offset_m`` out along the face's normal: (origins, directions, expected hit points)."""
    centre = trimesh.transform_points(mesh.triangles_center, world)
    normal = mesh.face_normals @ world[:3, :3].T
    return centre + offset_m * normal, -normal, centre


def test_parts_have_their_ids_classes_and_are_hit_where_the_transforms_put_them(tmp_path):
    write_cart(tmp_path)
    sim, _ = _sim(tmp_path, cart_scenario(materials={"Paint": "paint"}, classes={"Flag": "traffic-sign"}))
    scene = sim.scene
    assert scene.object_names == ["cart/Chassis", "cart/Flag", "cart2/Chassis", "cart2/Flag"]
    assert [b.parent for b in map(scene.bodies.get, ["cart/Chassis", "cart/Flag", "cart2/Flag"])] == \
        ["cart", "cart/Chassis", "cart2/Chassis"]
    classes = scene.object_table("class_id")[:-1]
    assert [scene.class_names[c] for c in classes] == ["car", "traffic-sign", "car", "traffic-sign"]
    caster = RayCaster(scene)
    # scene pose of each part: the object's pose times the node matrices written into the file
    cases = [("cart", _m([10, 5, 0], [0, 0, 40]), 0.0), ("cart2", _m([5, -10, 0], [0, 0, 0]), 0.5)]
    for obj, pose, t in cases:
        for part, mesh, node in [("Chassis", CHASSIS, np.eye(4)), ("Flag", FLAG, FLAG_LOCAL)]:
            world = pose @ node
            origins, directions, expected = _face_rays(mesh, world)
            keep = directions[:, 2] > -0.5            # not down through the flag onto the chassis
            hits = caster.cast(origins[keep], directions[keep], t)
            assert (hits.object_id == scene.object_names.index(f"{obj}/{part}")).all(), (obj, part)
            np.testing.assert_allclose(hits.point, expected[keep], atol=HIT_ATOL_M)
            np.testing.assert_allclose(hits.distance, 3.0, atol=HIT_ATOL_M)
    caster.close()


def test_a_sensor_and_an_object_ride_on_a_part(tmp_path):
    write_cart(tmp_path)
    d = cart_scenario(materials={"*": "paint"})
    d["objects"].append({"name": "pennant", "mesh": "box", "size_m": [0.1, 0.1, 0.1], "parent": "cart2/Flag",
                         "position_m": [0, 0, 0.2]})
    d["sensors"] = [{"name": "cam", "model": "depthmap", "parent": "cart2/Flag", "position_m": [0.1, 0.2, 0.3],
                     "rpy_deg": [0, 0, 10]}]
    sim, _ = _sim(tmp_path, d)
    flag = _m([5, -10, 0], [0, 0, 0]) @ FLAG_LOCAL                      # cart2's pose at t = 0.5 s
    np.testing.assert_allclose(sim.scene.pose_at("pennant", 0.5).translation, (flag @ [0, 0, 0.2, 1])[:3],
                               atol=1e-12)
    cam = sim.scene.pose_at("cam", 0.5)
    expected = flag @ _m([0.1, 0.2, 0.3], [0, 0, 10])
    np.testing.assert_allclose(cam.translation, expected[:3, 3], atol=1e-12)
    np.testing.assert_allclose(cam.rotation.as_matrix(), expected[:3, :3], atol=1e-12)
    assert sim.scene.object_names[-1] == "pennant"                   # ids: the entries in order, parts in place


def test_material_globs_derived_materials_and_class_precedence(tmp_path):
    write_cart(tmp_path)
    sim, caught = _sim(tmp_path, cart_scenario(materials={"Pai*": "paint", "Nothing*": "default"},
                                               classes={"Cl*": "traffic-sign", "Flag": "flag", "Chassis": "car"}))
    scene = sim.scene
    mats = [scene.materials[o.material_index] for o in scene.objects]
    assert [m.name for m in mats] == ["paint", "cart/Cloth", "paint", "cart/Cloth"]
    cloth = mats[1]
    # derived from the file: colour as given, reflectivity = its relative luminance
    assert cloth.color_rgb == pytest.approx(CLOTH_RGB)
    assert cloth.reflectivity == pytest.approx(0.2126 * CLOTH_RGB[0] + 0.7152 * CLOTH_RGB[1] + 0.0722 * CLOTH_RGB[2])
    assert (cloth.mirror, cloth.class_name) == (0.0, "unlabelled")
    # the node's own name ("Flag") wins over its material's ("Cl*") whatever the table's order
    classes = [scene.class_names[c] for c in scene.object_table("class_id")[:-1]]
    assert classes == ["car", "flag", "car", "flag"]
    # one warning for the file's unmapped material (two objects use the file), one for the glob
    # that matches nothing, naming the file's materials
    unmapped = [w for w in caught if "Cloth" in w and "luminance" in w]
    assert len(unmapped) == 1 and "'Paint'" not in unmapped[0] and "cart.glb" in unmapped[0]
    assert "reflectivity 0.386" in unmapped[0]             # 0.2126*0.2 + 0.7152*0.4 + 0.0722*0.8 = 0.38636
    unmatched = [w for w in caught if "'Nothing*' match(es) no part's material" in w]
    assert len(unmatched) == 1 and "'Cloth', 'Paint'" in unmatched[0]
    assert len(caught) == 2


def test_a_mapping_may_name_a_library_material(tmp_path):
    # hifi.materials: an entry named by a mapping is the library's (its spectrum and class),
    # added to the scene once, as an object's material = "car_paint" would be
    from hifi.materials import LIBRARY
    write_cart(tmp_path)
    sim, _ = _sim(tmp_path, cart_scenario(materials={"Paint": "car_paint", "Cloth": "cotton"}))
    mats = [sim.scene.materials[o.material_index] for o in sim.scene.objects]
    assert [m.name for m in mats] == ["car_paint", "cotton", "car_paint", "cotton"]
    assert mats[0] == LIBRARY["car_paint"].material() and mats[1] == LIBRARY["cotton"].material()
    assert [m.name for m in sim.scene.materials].count("car_paint") == 1
    assert "car_paint" not in sim.scenario.part_materials


def test_ancestor_names_label_the_parts_below(tmp_path):
    # Car (no mesh) > Door (material Glass_front) and Body (material Paint_red): "Car" labels
    # Body through its ancestor; Door's material glob comes before the ancestor's
    s = trimesh.Scene()
    s.graph.update(frame_from=s.graph.base_frame, frame_to="Car", matrix=_m([0, 0, 1], [0, 0, 0]))
    for node, material in [("Door", "Glass_front"), ("Body", "Paint_red")]:
        box = trimesh.creation.box(extents=[1, 1, 1])
        box.visual = TextureVisuals(material=PBRMaterial(name=material, baseColorFactor=[1.0, 1.0, 1.0, 1.0]))
        s.add_geometry(box, node_name=node, geom_name=node.lower(), parent_node_name="Car",
                       transform=_m([3 if node == "Door" else -3, 0, 0], [0, 0, 0]))
    (tmp_path / "auto.glb").write_bytes(s.export(file_type="glb"))
    d = {"simulation": {"duration_s": 0.1},
         "scene_files": {"auto": {"materials": {"*": "default"}, "classes": {"Car": "car", "Glass*": "window"}}},
         "objects": [{"name": "auto", "mesh": "auto.glb"}]}
    sim, caught = _sim(tmp_path, d)
    assert caught == []
    scene = sim.scene
    named = dict(zip(scene.object_names, (scene.class_names[c] for c in scene.object_table("class_id")[:-1])))
    assert named == {"auto/Door": "window", "auto/Body": "car"}
    assert scene.bodies["auto/Car"].kind == "object" and "auto/Car" not in scene.object_names
    np.testing.assert_allclose(scene.pose_at("auto/Door", 0.0).translation, [3, 0, 1], atol=1e-12)


def test_obj_parts_and_parts_true_without_a_table(tmp_path):
    write_house(tmp_path)
    d = {"simulation": {"duration_s": 0.1},
         "objects": [{"name": "house", "mesh": "house.obj", "parts": True, "position_m": [0, 10, 0]}]}
    sim, caught = _sim(tmp_path, d)
    assert sorted(sim.scene.object_names) == ["house/Sign_Metal", "house/Wall_Brick"]
    assert len(caught) == 1 and "no [scene_files.house] table maps them" in caught[0] and "objects[0].mesh" in caught[0]
    assert "'Brick'" in caught[0] and "'Metal'" in caught[0]
    hits = RayCaster(sim.scene).cast([[0, 0, 1.5], [1.5, 0, 0.5]], [[0, 1, 0], [0, 1, 0]])
    ids = [sim.scene.object_names[i] for i in hits.object_id]
    assert ids == ["house/Sign_Metal", "house/Wall_Brick"]            # the sign stands 0.5 m before the wall
    np.testing.assert_allclose(hits.distance, [9.5, 10.0], atol=HIT_ATOL_M)


def test_parts_without_material_take_default_and_are_counted_once_per_file(tmp_path):
    (tmp_path / "plain.obj").write_text("o A\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
                                        "o B\nv 0 0 1\nv 1 0 1\nv 0 1 1\nf 4 5 6\n")
    d = {"simulation": {"duration_s": 0.1},
         "objects": [{"name": n, "mesh": "plain.obj", "parts": True, "position_m": [x, 0, 0]}
                     for n, x in (("p1", 0), ("p2", 5))]}
    sim, caught = _sim(tmp_path, d)
    assert len(sim.scene.objects) == 4
    assert {sim.scene.materials[o.material_index].name for o in sim.scene.objects} == {"default"}
    assert len(caught) == 1 and "2 part(s) of plain.obj without a material in the file take 'default'" in caught[0]


def test_without_a_table_a_file_is_one_object_as_before(tmp_path):
    path = write_cart(tmp_path)
    d = cart_scenario()
    del d["scene_files"]
    d["objects"] = d["objects"][:1]
    sim, _ = _sim(tmp_path, d)
    assert sim.scene.object_names == ["cart"]
    whole = meshes.load_mesh_file(path)
    np.testing.assert_array_equal(sim.scene.objects[0].vertices, whole.vertices)
    np.testing.assert_array_equal(sim.scene.objects[0].faces, whole.faces)
    # parts = false with a table: one object too, and the unused table is refused
    d["objects"][0]["parts"] = False
    d["scene_files"] = {"cart": {"materials": {"Paint": "paint"}}}
    with pytest.raises(ScenarioError, match=r"scene_files.cart: every object with a 'cart' mesh file says parts = false"):
        scenario_mod.validate(d, base_dir=tmp_path)


def test_memory_estimate_counts_the_parts(tmp_path):
    write_cart(tmp_path)
    sc = scenario_mod.validate(cart_scenario(materials={"Paint": "paint"}), base_dir=tmp_path)
    _, rows = generated_scene_bytes(sc)
    faces = len(CHASSIS.faces) + len(FLAG.faces)                     # 12 + 2 per cart
    assert [r[1] for r in rows] == [faces, faces]
    # held per triangle: static, then moving (the second cart has a track)
    assert [r[2] for r in rows] == [faces * SCENE_BYTES_PER_FACE, faces * MOVING_SCENE_BYTES_PER_FACE]
    with pytest.raises(ScenarioError, match=rf"objects\[1\].mesh = 'cart.glb': cart.glb 'cart2' would have {faces} "
                                            r"triangles.*use a coarser mesh"):
        check_scene_memory(sc, budget=1)


def _scenario_text(tmp_path, body):
    path = tmp_path / "s.toml"
    path.write_text('[simulation]\nduration_s = 0.1\n[materials.paint]\nreflectivity = 0.6\nclass = "car"\n' + body)
    return path


@pytest.mark.parametrize("case, body, message", [
    ("unknown stem", '[scene_files.nothere]\nmaterials = { "*" = "paint" }\n'
     '[[objects]]\nname = "cart"\nmesh = "cart.glb"\n',
     r"s.toml:6: scene_files.nothere: matches no object's mesh file .*; mesh files: 'cart.glb'"),
    ("unknown material", '[scene_files.cart]\nmaterials = { "Paint*" = "asphalt" }\n'
     '[[objects]]\nname = "cart"\nmesh = "cart.glb"\n',
     r"s.toml:7: scene_files.cart.materials = \{'Paint\*': 'asphalt'\}: 'Paint\*' names material 'asphalt': "
     r"unknown material \(did you mean 'asphalt_\w+'\?\); allowed: 'default', 'paint' or a library material"),
    ("truncated buffer", '[[objects]]\nname = "cart"\nmesh = "cart.gltf"\nparts = true\n',
     r"objects\[0\].mesh = 'cart.gltf': cannot load mesh file .*cart.gltf: its buffer 0, .*gltf_buffer_0.bin, "
     r"holds 10 bytes, fewer than its byteLength"),
    ("missing buffer", '[[objects]]\nname = "cart"\nmesh = "lost.gltf"\nparts = true\n',
     r"objects\[0\].mesh = 'lost.gltf': cannot load mesh file .*lost.gltf: its buffer 0 is the file "
     r"'gone.bin', which is missing"),
    ("unreadable", '[[objects]]\nname = "junk"\nmesh = "junk.obj"\nparts = true\n',
     r"objects\[0\].mesh = 'junk.obj': cannot load mesh file .*junk.obj: trimesh could not read it"),
    ("parts of an STL", '[scene_files.box]\n[[objects]]\nname = "box"\nmesh = "box.stl"\n',
     r"objects\[0\].mesh = 'box.stl': only glTF and OBJ files .* have parts, and \[scene_files.box\] names it"),
    ("material beside parts", '[[objects]]\nname = "cart"\nmesh = "cart.glb"\nparts = true\nmaterial = "paint"\n',
     r"objects\[0\].material = 'paint': a file loaded with parts \(parts = true\) takes its materials from"),
])
def test_bad_scene_files_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, case, body, message):
    write_cart(tmp_path)
    for name, data in trimesh.load_scene(str(tmp_path / "cart.glb")).export(file_type="gltf").items():
        target = tmp_path / ("cart.gltf" if name == "model.gltf" else name)
        target.write_bytes(data[:10] if name == "gltf_buffer_0.bin" else data)
    (tmp_path / "lost.gltf").write_text((tmp_path / "cart.gltf").read_text().replace("gltf_buffer_0.bin", "gone.bin"))
    (tmp_path / "junk.obj").write_text("v a b c\nf 1 2 3\n")
    trimesh.creation.box().export(tmp_path / "box.stl")
    out = tmp_path / "out"
    assert main(["run", str(_scenario_text(tmp_path, body)), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hifi: error: "), err
    assert __import__("re").search(message, err[0]), err[0]
    assert not out.exists() and not list(tmp_path.glob(".out*"))


#: SemanticKITTI label ids of the classes used below (config/semantic-kitti.yaml).
PUBLISHED = {"car": 10, "traffic-sign": 81, "building": 50}


def test_hifi_run_and_semantickitti_labels_of_parts(tmp_path, capsys):
    write_cart(tmp_path)
    write_house(tmp_path)
    scenario = _scenario_text(tmp_path, """
[materials.brick]
reflectivity = 0.3
class = "building"

[scene_files.cart]
materials = { "Paint" = "paint" }
classes = { "Flag" = "traffic-sign" }

[scene_files.house]
materials = { "*" = "brick" }
classes = { "Sign*" = "traffic-sign" }

[[objects]]
name = "cart"
mesh = "cart.glb"
position_m = [8, 0, 0]
rpy_deg = [0, 0, 90]

[[objects]]
name = "house"
mesh = "house.obj"
position_m = [0, 12, 0]

[[sensors]]
name = "grid"
model = "generic_grid"
rate_hz = 10
position_m = [0, 0, 1.2]
[sensors.params]
theta_min_deg = -60
theta_max_deg = 120
n_theta = 361
phi_min_deg = -20
phi_max_deg = 30
n_phi = 51
""")
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    names = ["cart/Chassis", "cart/Flag", "house/Sign_Metal", "house/Wall_Brick"]
    classes = ["car", "traffic-sign", "traffic-sign", "building"]
    with xr.open_dataset(out / "grid.nc") as ds, xr.open_dataset(out / "motion.nc") as motion:
        ds.load()
        motion.load()
    for f in (ds, motion):
        order = np.argsort(f.object_name.values)
        assert f.object_name.values[order].tolist() == names
        assert f.object_class.values[order].tolist() == classes
    oid = ds.object_id.values
    hit = oid >= 0
    assert set(np.unique(oid[hit])) == set(range(4))                 # every part seen
    # annotation = the class id of the object hit (flag_meanings: the class names by id)
    meanings = ds.annotation.attrs["flag_meanings"].split()
    hit_class = np.array([c.replace(" ", "_") for c in ds.object_class.values])[oid[hit]]
    assert (np.array(meanings)[ds.annotation.values[hit]] == hit_class).all()
    assert (ds.annotation.values[~hit] == 0).all()
    # motion.nc: the chassis's box at the cart's position, the cart's heading (90 deg), 2 x 1 x 0.5 m
    k = motion.object_name.values.tolist().index("cart/Chassis")
    np.testing.assert_allclose(motion.box_center.values[0, k], [8, 0, 0], atol=1e-9)
    np.testing.assert_allclose(motion.box_size.values[0, k], [2, 1, 0.5], atol=1e-9)
    assert np.isclose(np.cos(motion.box_yaw.values[0, k] - np.pi / 2), 1.0) or \
        np.isclose(np.cos(motion.box_yaw.values[0, k] + np.pi / 2), 1.0)
    flag = motion.object_name.values.tolist().index("cart/Flag")
    centre = _m([8, 0, 0], [0, 0, 90]) @ FLAG_LOCAL @ [0, 0, 0, 1]       # the flag square is centred
    np.testing.assert_allclose(motion.box_center.values[0, flag], centre[:3], atol=1e-9)
    assert set(motion.body.values) >= {"cart", "house", "cart/Chassis", "cart/Flag"}

    kitti = tmp_path / "kitti"
    assert main(["export", str(out), "--format", "semantickitti", "--sensor", "grid", "--out", str(kitti)]) == 0
    label = np.fromfile(kitti / "sequences" / "00" / "labels" / "000000.label", dtype=np.uint32)
    scan = np.fromfile(kitti / "sequences" / "00" / "velodyne" / "000000.bin", dtype=np.float32).reshape(-1, 4)
    det = ds.detected.values[0].ravel()
    assert label.shape[0] == scan.shape[0] == det.sum()
    sem, inst = label & 0xFFFF, label >> 16
    ids = oid[0].ravel()[det]
    expected = np.array([PUBLISHED[c] for c in ds.object_class.values])[ids]
    assert (sem == expected).all()
    # instance: object id + 1 for the "thing" classes (car), 0 for stuff (traffic-sign, building)
    assert (inst == np.where(expected == 10, ids + 1, 0)).all() and (expected == 10).any()
