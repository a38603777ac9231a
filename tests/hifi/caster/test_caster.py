"""Meshes, poses and the caster: analytic geometry, scale sweeps, file formats."""

import numpy as np
import pytest
import trimesh

import hifi
from hifi.api import meshes
from hifi.caster import EmbreeBackend, RayCaster, _object_topology, merge_vertices, static_world_vertices
from hifi.world.motion import Pose, Track
from hifi.world.scene import Material, Scene


def test_generators_have_the_requested_size():
    assert np.allclose(meshes.plane([4, 6]).extents, [4, 6, 0])
    assert np.allclose(meshes.box([1, 2, 3]).extents, [1, 2, 3]) and meshes.box([1, 2, 3]).is_watertight
    s = meshes.sphere(2.0)
    assert s.is_watertight and np.allclose(np.linalg.norm(s.vertices, axis=1), 2.0)
    c = meshes.cylinder(0.5, 3.0)
    assert c.is_watertight and np.allclose(c.extents, [1, 1, 3], atol=1e-3)
    car = meshes.car()
    assert car.is_watertight and car.is_winding_consistent and car.volume > 0
    assert np.allclose(car.extents, [4.5, 1.8, 1.5], atol=1e-9) and car.bounds[0, 2] == pytest.approx(0.0)


def test_terrain_of_the_blensor_benchmark():
    # BlenSor paper: a displaced acre of about 237,000 vertices; an acre square is 63.6 m.
    t = meshes.terrain([63.6, 63.6], 63.6 / 486, 0.5, seed=1)
    assert len(t.vertices) == 487 * 487 == 237_169
    assert np.max(np.abs(t.vertices[:, 2])) == pytest.approx(0.5)      # peak amplitude exactly
    same = meshes.terrain([63.6, 63.6], 63.6 / 486, 0.5, seed=1)
    other = meshes.terrain([63.6, 63.6], 63.6 / 486, 0.5, seed=2)
    assert np.array_equal(t.vertices, same.vertices) and not np.array_equal(t.vertices, other.vertices)


@pytest.mark.parametrize("suffix", [".obj", ".ply", ".stl", ".off", ".glb"])
def test_mesh_files_load_through_trimesh(tmp_path, suffix):
    box = trimesh.creation.box(extents=[2, 2, 2])
    box.export(tmp_path / f"box{suffix}")
    d = {"simulation": {"duration_s": 0.1},
         "objects": [{"name": "box", "mesh": f"box{suffix}", "position_m": [10, 0, 0]}],
         "sensors": [{"name": "cam", "model": "depthmap",
                      "params": {"resolution_x": 5, "resolution_y": 5, "fov_x_deg": 2.0}}]}
    ds = hifi.Simulation.from_dict(d, base_dir=tmp_path).run()["cam"]
    np.testing.assert_allclose(ds.depth.values, 9.0, rtol=2.0 ** -21)    # analytic: face at x = 9


def _two_part_glb(path):
    """A GLB of two boxes, one placed twice (three instances, two with non-identity transforms)."""
    scene = trimesh.Scene()
    scene.add_geometry(trimesh.creation.box(extents=[1, 2, 3]), node_name="a", geom_name="box",
                       transform=trimesh.transformations.rotation_matrix(0.3, [0, 0, 1], [1, 2, 3]))
    scene.add_geometry(trimesh.creation.box(extents=[1, 2, 3]), node_name="b", geom_name="box",
                       transform=trimesh.transformations.translation_matrix([5, 0, 0]))
    scene.add_geometry(trimesh.creation.icosphere(2), node_name="c", geom_name="ball")
    scene.export(path)


@pytest.mark.parametrize("suffix", [".obj", ".ply", ".stl", ".off", ".glb", "-scene.glb", "-ascii.ply"])
def test_mesh_file_loading_matches_trimesh_load(tmp_path, suffix):
    """load_mesh_file skips trimesh.load's copies but must give the same arrays, bit for bit.

    Expected values: an independent implementation, ``trimesh.load(path, force="mesh",
    process=False)`` (what load_mesh_file called before 2026-11-24), including scenes of several
    placed meshes and a terrain with -0.0 coordinates.
    """
    path = tmp_path / f"m{suffix}"
    if suffix == "-scene.glb":
        _two_part_glb(path)
    else:
        mesh = meshes.terrain([4.0, 3.0], 0.5, 0.2, seed=3)
        mesh.vertices[0] = [-0.0, 0.0, -0.0]
        if suffix == "-ascii.ply":
            path.write_bytes(trimesh.exchange.ply.export_ply(mesh, encoding="ascii"))
        else:
            mesh.export(path)
    expected = trimesh.load(str(path), force="mesh", process=False)
    got = meshes.load_mesh_file(path)
    assert got.vertices.dtype == np.float64 and got.faces.dtype == np.int64
    assert np.array_equal(np.asarray(got.vertices).view(np.uint64), np.asarray(expected.vertices).view(np.uint64))
    assert np.array_equal(got.faces, expected.faces)
    scaled = meshes.load_mesh_file(path, 0.001)
    assert np.array_equal(scaled.vertices, expected.apply_scale(0.001).vertices)


def test_mesh_file_is_read_once_per_scenario(tmp_path, monkeypatch):
    """Validation reads the file and hands the mesh to the scene (it used to be read twice)."""
    meshes.terrain([4.0, 4.0], 0.5, 0.2).export(tmp_path / "t.ply")
    reads = []
    real = meshes.load_mesh_file
    monkeypatch.setattr(meshes, "load_mesh_file", lambda *a, **k: reads.append(a) or real(*a, **k))
    sim = hifi.Simulation.from_dict({"simulation": {"duration_s": 0.1},
                                     "objects": [{"name": "t", "mesh": "t.ply"}]}, base_dir=tmp_path)
    assert len(reads) == 1
    assert len(sim.scene.objects[0].faces) == 2 * 8 * 8       # analytic: 8 x 8 cells, 2 triangles each


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 50_000])
def test_merge_vertices_matches_numpy_unique(n):
    """Expected values: an independent implementation, ``np.unique(v, axis=0, return_inverse=True)``
    (what the edge-tie topology used before 2026-11-24). Rows drawn from a small set of values,
    so many repeat and many differ in one column only; -0.0 and 0.0 both occur."""
    rng = np.random.default_rng(n)
    values = np.array([-1.5, -0.0, 0.0, 1e-300, 0.25, 3.0])
    v = values[rng.integers(0, len(values), size=(n, 3))]
    got = merge_vertices(v)
    _, expected = np.unique(v, axis=0, return_inverse=True)
    assert got.dtype == np.int32
    assert np.array_equal(got, expected.reshape(-1))


def test_edge_tie_topology_lists_the_faces_of_each_vertex():
    """The CSR table holds, for each position, exactly the faces having a corner there, in
    ascending order. Expected values: a brute-force loop over the faces (independent)."""
    mesh = meshes.terrain([2.0, 2.0], 0.5, 0.1, seed=4)
    faces = np.asarray(mesh.faces)
    vertices = np.vstack([mesh.vertices, mesh.vertices[faces[:5, 0]]])      # duplicated positions
    faces = faces.copy()
    faces[:5, 0] = len(mesh.vertices) + np.arange(5)                         # now used through the copies
    scene = Scene()
    scene.add_object("t", trimesh.Trimesh(vertices, faces, process=False))
    vid, indptr, vertex_face = _object_topology(scene, 0, {})
    for k in range(len(vertices)):
        around = [f for f in range(len(faces))
                  if any((vertices[faces[f, j]] == vertices[k]).all() for j in range(3))]
        assert vertex_face[indptr[vid[k]]:indptr[vid[k] + 1]].tolist() == around


def test_face_subset_keeps_only_its_vertices():
    """A face subset's Embree arrays: the vertices its faces use, ascending, and the faces
    renumbered into them. Expected values: an independent implementation,
    ``np.unique(faces, return_inverse=True)`` (what the backend used before 2026-11-24)."""
    mesh = meshes.terrain([3.0, 2.0], 0.25, 0.1, seed=5)
    scene = Scene()
    obj = scene.add_object("t", mesh)
    for step, first in ((2, 0), (3, 1), (7, 6)):
        backend = EmbreeBackend(scene, face_subset=lambda i, n, s=step, f=first: np.arange(f, n, s))
        verts, faces, sel = backend._triangles_of(obj, obj.vertices)
        used, inverse = np.unique(obj.faces[sel], return_inverse=True)
        assert np.array_equal(verts, obj.vertices[used])
        assert np.array_equal(faces, inverse.reshape(-1, 3))
        assert np.array_equal(verts[faces], obj.vertices[obj.faces[sel]])   # same triangles


def _ply(path, vertices, faces, *, order="<", vtype="f4", itype="i4", ctype="u1", vextra=(), fextra=()):
    """A binary PLY written with numpy (independent of hifi's reader): ``vextra`` / ``fextra``
    are extra scalar properties (name, type) after x, y, z and after the index list."""
    names = {"f4": "float", "f8": "double", "i4": "int", "u4": "uint", "u1": "uchar", "i1": "char",
             "u2": "ushort", "i2": "short"}
    fmt = "binary_little_endian" if order == "<" else "binary_big_endian"
    head = ["ply", f"format {fmt} 1.0", "comment written by tests/hifi/caster/test_caster.py",
            f"element vertex {len(vertices)}"]
    head += [f"property {names[vtype]} {c}" for c in "xyz"] + [f"property {names[t]} {n}" for n, t in vextra]
    head += [f"element face {len(faces)}", f"property list {names[ctype]} {names[itype]} vertex_indices"]
    head += [f"property {names[t]} {n}" for n, t in fextra] + ["end_header"]
    vd = np.dtype([(c, order + vtype) for c in "xyz"] + [(n, order + t) for n, t in vextra])
    v = np.zeros(len(vertices), dtype=vd)
    for j, c in enumerate("xyz"):
        v[c] = vertices[:, j]
    lengths = [len(f) for f in faces]
    with open(path, "wb") as fh:
        fh.write(("\n".join(head) + "\n").encode())
        fh.write(v.tobytes())
        for f in faces:
            fd = np.dtype([("n", order + ctype), ("i", order + itype, (len(f),))] + [(n, order + t) for n, t in fextra])
            rec = np.zeros(1, dtype=fd)
            rec["n"], rec["i"] = len(f), f
            fh.write(rec.tobytes())
    return lengths


@pytest.mark.parametrize("variant", ["plain", "big-endian", "double", "uint", "extras", "quad", "bad-index"])
def test_binary_ply_reader_matches_trimesh(tmp_path, variant):
    """meshes.read_binary_ply_triangles (the block reader of large binary PLY files) against
    trimesh's reader, bit for bit; the variants it does not take (a quad, an index past the
    vertices) go to trimesh (None here), and load_mesh_file still gives trimesh's arrays."""
    mesh = meshes.terrain([3.0, 2.0], 0.5, 0.2, seed=6)
    vertices, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces).tolist()
    kw = {"big-endian": {"order": ">"}, "double": {"vtype": "f8"}, "uint": {"itype": "u4", "ctype": "u1"},
          "extras": {"vextra": (("nx", "f4"), ("red", "u1")), "fextra": (("flags", "i2"),)}}.get(variant, {})
    if variant == "quad":                     # polygons: trimesh triangulates them
        vertices, faces = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]), [[0, 1, 2, 3]]
    if variant == "bad-index":
        faces[3] = [0, 1, len(vertices)]
    path = tmp_path / "m.ply"
    _ply(path, vertices, faces, **kw)
    fast = meshes.read_binary_ply_triangles(path)
    if variant in ("quad", "bad-index"):
        assert fast is None
        if variant == "quad":
            got = meshes.load_mesh_file(path)
            ref = trimesh.load(str(path), force="mesh", process=False)
            assert len(got.faces) == 2 and np.array_equal(got.faces, ref.faces)
        return
    ref = trimesh.load(str(path), force="mesh", process=False)
    assert fast[0].dtype == np.float64 and fast[1].dtype == np.int64
    assert fast[0].tobytes() == np.asarray(ref.vertices, dtype=np.float64).tobytes()
    assert np.array_equal(fast[1], ref.faces)
    got = meshes.load_mesh_file(path, 0.5)
    assert np.array_equal(got.vertices, np.asarray(ref.vertices) * 0.5) and np.array_equal(got.faces, ref.faces)


def test_object_bounds_are_trimesh_bounds():
    """SceneObject.bounds (the motion boxes, the mount check) against trimesh's
    ``Trimesh.bounds``, bit for bit (independent implementation): a terrain with -0.0
    coordinates, a car, and a mesh with a vertex no face uses (which does not count)."""
    terrain = meshes.terrain([3.0, 2.0], 0.5, 0.2, seed=2)
    terrain.vertices[0] = [-0.0, 0.0, -0.0]
    loose = trimesh.Trimesh(np.vstack([meshes.box([1, 2, 3]).vertices, [[50.0, 0, 0]]]),
                            meshes.box([1, 2, 3]).faces, process=False)
    for mesh in (terrain, meshes.car(), loose):
        scene = Scene()
        obj = scene.add_object("m", mesh)
        assert obj.bounds.tobytes() == trimesh.Trimesh(mesh.vertices, mesh.faces, process=False).bounds.tobytes()
    assert obj.bounds[1, 0] < 50.0


def test_keep_share_holds_one_ranks_faces():
    """``SceneObject.keep_share`` (a facet rank's share): the faces kept are the listed ones
    with the vertices they use, renumbered (the same triangles as the ``face_subset`` path,
    which keeps the whole mesh); ``face_rows`` maps whole-mesh face ids back to rows; the whole
    mesh's bounds and radius and a static object's world vertices and extent survive; the tie
    tables list only the kept faces and find any kept vertex by its position; a serial caster
    refuses the reduced scene; a share must list faces ascending, each once."""
    from hifi.caster import merged_ids_of

    mesh = meshes.terrain([3.0, 2.0], 0.25, 0.1, seed=5)
    whole = Scene()
    ref = whole.add_object("t", mesh.copy(), local=Pose.from_position_rpy([1, 2, 0], [0, 0, 20]))
    bounds, radius = ref.bounds.copy(), ref.radius_m
    world = static_world_vertices(whole, ref)
    n = len(ref.faces)
    for ids in (np.arange(n // 2), np.arange(n // 3, n, 2), np.array([5, 17, n - 1])):
        scene = Scene()
        obj = scene.add_object("t", mesh.copy(), local=Pose.from_position_rpy([1, 2, 0], [0, 0, 20]))
        obj.keep_share(ids, static_world_vertices(scene, obj))
        assert obj.mesh is None and obj.n_faces == n and np.array_equal(obj.share, ids)
        assert np.array_equal(obj.vertices[obj.faces], ref.vertices[ref.faces[ids]])
        assert len(obj.vertices) == len(np.unique(ref.faces[ids]))
        assert np.array_equal(obj.face_ids(), ids)
        assert np.array_equal(obj.face_rows(ids), np.arange(len(ids)))
        assert np.array_equal(obj.bounds, bounds) and obj.radius_m == radius
        assert np.array_equal(obj.world[obj.faces], world[ref.faces[ids]])
        assert np.array_equal(obj.world_bounds, [world.min(axis=0), world.max(axis=0)])
        got = EmbreeBackend(scene)._triangles_of(obj, obj.world)
        expected = EmbreeBackend(whole, face_subset=lambda i, m, k=ids: k)._triangles_of(ref, world)
        for a, b in zip(got, expected):
            assert np.array_equal(a, b)
        cache = {}
        vid, indptr, vertex_face = _object_topology(scene, 0, cache)
        assert len(vertex_face) == 3 * len(obj.faces)
        assert set(vertex_face.tolist()) == set(ids.tolist())
        assert np.array_equal(merged_ids_of(scene, 0, cache, obj.vertices), vid)
        assert np.all(merged_ids_of(scene, 0, cache, obj.vertices + [0.0, 0.0, 1.0]) == -1)
        with pytest.raises(ValueError, match="share"):
            RayCaster(scene)
        with pytest.raises(ValueError, match="already"):
            obj.keep_share(ids)
    with pytest.raises(ValueError, match="ascending, each once"):
        Scene().add_object("t", mesh.copy()).keep_share([3, 2])


def test_vertex_order_shares_deal_every_face_once():
    """mpi.caster.vertex_order_shares: over N ranks every face is dealt once, the shares differ
    by at most the faces around one vertex (analytic: a vertex of a terrain grid has at most 6
    faces), and on a terrain (vertices row by row) a rank's faces use about 1/N of the
    vertices, plus one row."""
    pytest.importorskip("mpi4py")
    from mpi.caster import vertex_order_shares

    scene = Scene()
    scene.add_object("t", meshes.terrain([20.0, 10.0], 0.25, 0.2, seed=1))
    scene.add_object("box", meshes.box([1, 1, 1]))
    scene.add_object("car", meshes.car())
    total = sum(len(o.faces) for o in scene.objects)
    for size in (1, 2, 3, 4):
        shares = [vertex_order_shares(scene, r, size) for r in range(size)]
        for i, o in enumerate(scene.objects):
            dealt = np.concatenate([s[i] for s in shares])
            assert np.array_equal(np.sort(dealt), np.arange(len(o.faces)))
        counts = [sum(len(x) for x in s) for s in shares]
        assert max(counts) - min(counts) <= 6 and sum(counts) == total
        t = scene.objects[0]
        row = 81                                  # vertices per grid row (20 m / 0.25 m + 1)
        for s in shares:
            if len(s[0]):
                assert len(np.unique(t.faces[s[0]])) <= len(t.vertices) / size + 2 * row


def test_static_world_vertices_share_the_mesh_only_where_exact():
    """An object at the origin without rotation shares its vertex array with the caster; the
    shared array must equal ``pose.apply(vertices)`` bit for bit (the independent computation
    used before 2026-11-24). Checked on a terrain, on random coordinates from 1e-310 (subnormal)
    to 1e300 of both signs, and the fallbacks: a -0.0 coordinate, an offset, a rotation."""
    rng = np.random.default_rng(8)
    wild = rng.choice([-1.0, 1.0], (500, 3)) * 10.0 ** rng.uniform(-310, 300, (500, 3))
    for vertices, position, rpy, shared in (
            (meshes.terrain([4.0, 4.0], 0.5, 0.3, seed=2).vertices, [0, 0, 0], [0, 0, 0], True),
            (wild, [0, 0, 0], [0, 0, 0], True),
            (np.vstack([wild, [[-0.0, 1.0, 2.0]]]), [0, 0, 0], [0, 0, 0], False),
            (wild, [0, 0, 1e-9], [0, 0, 0], False),
            (wild, [0, 0, 0], [0, 0, 1e-9], False)):
        scene = Scene()
        n = len(vertices)
        obj = scene.add_object("o", trimesh.Trimesh(vertices, np.arange(n - n % 3).reshape(-1, 3),
                                                    process=False),
                               local=Pose.from_position_rpy(position, rpy))
        world = static_world_vertices(scene, obj)
        assert (world is obj.vertices) == shared
        expected = scene.pose_at("o", 0.0).apply(obj.vertices)
        assert np.array_equal(world.view(np.uint64), expected.view(np.uint64))


def test_offset_size_terms_by_blocks_match_the_whole_mesh(monkeypatch):
    """The size term of the secondary-ray offsets, computed by blocks of faces, equals the
    whole-mesh formula (longest triangle edge for a static object, largest vertex distance for
    a moving one), computed here in one piece as an independent check."""
    import hifi.caster.embree as caster_mod          # the module whose _frame_tables reads it
    monkeypatch.setattr(caster_mod, "_FACE_BLOCK", 7)          # many blocks, a ragged last one
    scene = Scene()
    ground = scene.add_object("g", meshes.terrain([3.0, 2.0], 0.25, 0.4, seed=6))
    ball = scene.add_object("b", meshes.sphere(0.7, subdivisions=2),
                            local=Track([0.0, 1.0], [[0, 0, 1], [1, 0, 1]], [[0, 0, 0], [0, 0, 90]]))
    backend = EmbreeBackend(scene)
    backend._frame_tables()
    v, f = ground.vertices, ground.faces
    longest = max(np.linalg.norm(v[f[:, (j + 1) % 3]] - v[f[:, j]], axis=1).max() for j in range(3))
    reach = np.linalg.norm(ball.vertices[ball.faces.ravel()], axis=1).max()
    assert backend._size_m[ground.index] == longest and backend._static_object[ground.index]
    assert backend._size_m[ball.index] == reach and not backend._static_object[ball.index]


def test_track_interpolation_is_linear_and_slerp():
    tr = Track([0.0, 2.0], [[0, 0, 0], [10, -4, 2]], [[0, 0, 0], [0, 0, 90]])
    p = tr.at(np.array([-1.0, 0.5, 1.0, 3.0]))
    np.testing.assert_allclose(p.translation, [[0, 0, 0], [2.5, -1, 0.5], [5, -2, 1], [10, -4, 2]])
    # Slerp between yaw 0 and 90 deg at the midpoint is yaw 45 deg (analytic).
    np.testing.assert_allclose(p.rotation[2].as_euler("xyz", degrees=True), [0, 0, 45], atol=1e-9)
    np.testing.assert_allclose(p.rotation[0].as_euler("xyz", degrees=True), [0, 0, 0], atol=1e-9)


def test_poses_compose_down_the_parent_chain():
    scene = Scene()
    scene.add_object("car", meshes.box([1, 1, 1]), local=Pose.from_position_rpy([10, 0, 0], [0, 0, 90]))
    scene.add_body("lidar", "sensor", Pose.from_position_rpy([1, 0, 2], [0, 0, 0]), parent="car")
    p = scene.pose_at("lidar", 0.3)
    # Analytic: the car's yaw of 90 deg turns the mount offset (1, 0, 2) into (0, 1, 2).
    np.testing.assert_allclose(p.translation, [10, 1, 2], atol=1e-12)
    np.testing.assert_allclose(p.apply_vectors([1, 0, 0]), [0, 1, 0], atol=1e-12)
    # rpy convention: positive pitch tips the x axis down (REP 103).
    tipped = Pose.from_position_rpy([0, 0, 0], [0, 10, 0]).apply_vectors([1, 0, 0])
    assert tipped[2] < 0


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e4])
def test_caster_scale_sweep_with_mirror(scale):
    # The 45-degree mirror geometry of test_noise_mirror_motion scaled by `scale`: the folded
    # distance is 12 * scale (analytic) at every scale, float32 offsets scaling with the scene.
    scene = Scene()
    scene.add_material(Material("glass", 0.1, mirror=1.0))
    scene.add_material(Material("white", 0.8))
    scene.add_object("mirror", meshes.plane([4 * scale, 4 * scale]), "glass",
                     Pose.from_position_rpy([5 * scale, 0, 0], [0, 90, -45]))
    scene.add_object("target", meshes.plane([60 * scale, 60 * scale]), "white",
                     Pose.from_position_rpy([0, 7 * scale, 0], [90, 0, 0]))
    caster = RayCaster(scene)
    rng = np.random.default_rng(1)
    dirs = np.column_stack([np.ones(1000), rng.uniform(-0.05, 0.05, (1000, 2))])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    hits = caster.cast(np.zeros((1000, 3)), dirs)
    assert (hits.object_id == 1).all() and (hits.bounces == 1).all()
    np.testing.assert_allclose(hits.distance, 12 * scale / dirs[:, 0], rtol=1e-6)
    np.testing.assert_allclose(hits.point[:, 1], 7 * scale, rtol=1e-6)
    # The mirror maps a direction (dx, dy, dz) to (dy, dx, dz); the target's normal is -y, so the
    # cosine of incidence on the target is dx (analytic).
    np.testing.assert_allclose(hits.cos_incidence, dirs[:, 0], rtol=1e-5)


def test_caster_misses_range_and_empty_input():
    scene = Scene()
    scene.add_object("wall", meshes.plane([10, 10]), local=Pose.from_position_rpy([20, 0, 0], [0, -90, 0]))
    caster = RayCaster(scene)
    h = caster.cast([[0, 0, 0], [0, 0, 0], [0, 0, 0]], [[1, 0, 0], [-1, 0, 0], [1, 0, 0]],
                    max_range_m=[30.0, 30.0, 10.0])
    assert np.isfinite(h.distance[0]) and np.isnan(h.distance[1:]).all()
    assert list(h.object_id) == [0, -1, -1] and list(h.face_index[1:]) == [-1, -1]
    assert np.isnan(h.point[1:]).all() and np.isnan(h.cos_incidence[1:]).all()
    empty = caster.cast(np.zeros((0, 3)), np.zeros((0, 3)))
    assert empty.point.shape == (0, 3) and empty.distance.shape == (0,)


def test_mirror_bounces_are_bounded():
    # Two parallel mirrors facing each other and a ray bouncing between them at normal
    # incidence never reaches a diffuse surface: after max_bounces it reports no hit.
    scene = Scene()
    scene.add_material(Material("glass", 0.1, mirror=1.0))
    scene.add_object("m1", meshes.plane([4, 4]), "glass", Pose.from_position_rpy([5, 0, 0], [0, -90, 0]))
    scene.add_object("m2", meshes.plane([4, 4]), "glass", Pose.from_position_rpy([-5, 0, 0], [0, 90, 0]))
    h = RayCaster(scene, max_bounces=3).cast([[0, 0, 0]], [[1, 0, 0]])
    assert h.object_id[0] == -1 and np.isnan(h.distance[0])


def test_moving_object_bvh_is_not_rebuilt():
    scene = Scene()
    scene.add_object("box", meshes.box([1, 1, 1]), local=Track([0, 1], [[5, 0, 0], [15, 0, 0]], [[0, 0, 0]] * 2))
    caster = RayCaster(scene).build()
    groups = list(caster.backend._groups)
    for t in (0.0, 0.25, 0.5):
        h = caster.cast([[0, 0, 0]], [[1, 0, 0]], times=t)
        assert h.distance[0] == pytest.approx(4.5 + 10 * t, abs=1e-5)     # analytic
    assert [id(g.embree) for g in caster.backend._groups] == [id(g.embree) for g in groups]
    # A rotating object: normals come back in the scene frame.
    scene2 = Scene()
    scene2.add_object("box", meshes.box([1, 1, 1]),
                      local=Track([0, 1], [[5, 0, 0], [5, 0, 0]], [[0, 0, 0], [0, 0, 90]]))
    h = RayCaster(scene2).cast([[0, 0, 0]], [[1, 0, 0]], times=0.5)       # box turned by 45 deg
    assert h.distance[0] == pytest.approx(5 - np.sqrt(0.5), abs=1e-5)     # corner toward the ray


def test_swept_ball_culling_changes_nothing(monkeypatch):
    # Rays far from a moving object's swept bounding ball are not transformed or cast against
    # it. Casting with and without the cull must give identical bytes (regression property).
    scene = Scene()
    scene.add_object("ground", meshes.plane([200, 200]))
    scene.add_object("car", meshes.car(), local=Track([0.0, 0.05, 0.1], [[-10, 5, 0], [-9, 5, 0], [-8, 6, 0]],
                                                      [[0, 0, 0], [0, 0, 10], [0, 0, 30]]))
    rng = np.random.default_rng(3)
    n = 20_000
    dirs = rng.normal(size=(n, 3))
    dirs[:, 2] = -np.abs(dirs[:, 2]) * 0.3
    origins = np.tile([0.0, 0.0, 1.8], (n, 1))
    times = np.sort(rng.uniform(0, 0.1, n))
    culled = RayCaster(scene, n_threads=1).cast(origins, dirs, times, 100.0)
    assert (culled.object_id == 1).sum() > 50                 # the car is seen
    monkeypatch.setattr(EmbreeBackend, "_swept_ball", lambda self, g, a, b: None)
    full = RayCaster(scene, n_threads=1).cast(origins, dirs, times, 100.0)
    for field in ("distance", "point", "normal", "object_id", "face_index", "bounces"):
        assert getattr(culled, field).tobytes() == getattr(full, field).tobytes(), field


def test_swept_ball_of_objects_riding_at_fixed_poses_changes_nothing(monkeypatch):
    # The parts of a scene file ride at fixed poses on a body with a track (hifi.run.scene_parts):
    # their balls are the carrier's grown by the chain's offsets. With and without the cull the
    # bytes are identical (regression property), and both parts are seen.
    scene = Scene()
    scene.add_object("ground", meshes.plane([200, 200]))
    scene.add_body("carrier", "object", Track([0.0, 0.1], [[-10, 5, 0], [-8, 6, 0]], [[0, 0, 0], [0, 0, 30]]))
    scene.add_body("carrier/frame", "object", Pose.from_position_rpy([0.5, 0.0, 0.5], [0, 0, 20]), "carrier")
    scene.add_object("carrier/body", meshes.box([2.0, 1.0, 1.0]), local=Pose.from_position_rpy([0, 0, 0.5], [0, 0, 0]),
                     parent="carrier/frame")
    scene.add_object("carrier/mast", meshes.box([0.2, 0.2, 2.0]),
                     local=Pose.from_position_rpy([1.0, 0.5, 2.0], [20, 0, 0]), parent="carrier/frame")
    caster = RayCaster(scene, n_threads=1).build()
    assert all(caster.backend._swept_ball(g, 0.0, 0.1) is not None for g in caster.backend._groups[1:])
    rng = np.random.default_rng(4)
    n = 20_000
    dirs = rng.normal(size=(n, 3))
    dirs[:, 2] = np.abs(dirs[:, 2]) * 0.3 - 0.15
    origins = np.tile([0.0, 0.0, 1.8], (n, 1))
    times = np.sort(rng.uniform(0, 0.1, n))
    culled = caster.cast(origins, dirs, times, 100.0)
    assert (culled.object_id == 1).sum() > 20 and (culled.object_id == 2).sum() > 5     # both parts seen
    monkeypatch.setattr(EmbreeBackend, "_swept_ball", lambda self, g, a, b: None)
    full = RayCaster(scene, n_threads=1).cast(origins, dirs, times, 100.0)
    for field in ("distance", "point", "normal", "object_id", "face_index", "bounces"):
        assert getattr(culled, field).tobytes() == getattr(full, field).tobytes(), field


@pytest.mark.parametrize("subset", [False, True])
def test_compiled_cast_passes_have_the_numpy_bytes(subset):
    """hifi/_cast_kernel.py against its numpy oracles (tests/oracles; regression: same bytes).

    A static ground, house and 45-degree mirror, a moving car, rays in every direction at
    spread times (misses, edges, ties on static and moving objects, bounces); ``subset``: every
    other face of each object, so the static group goes through the face lookup as a facet
    rank's does.
    """
    from tests.oracles import numpy_kernels

    scene = Scene()
    scene.add_material(Material("glass", 0.1, mirror=1.0))
    scene.add_material(Material("white", 0.8))
    scene.add_object("ground", meshes.plane([200, 200]), "white")
    scene.add_object("house", meshes.box([10, 6, 8]), "white", Pose.from_position_rpy([20, -14, 4], [0, 0, 10]))
    scene.add_object("mirror", meshes.plane([4, 4]), "glass", Pose.from_position_rpy([-6, 0, 2], [0, 90, -45]))
    scene.add_object("car", meshes.car(), local=Track([0.0, 0.1], [[-10, 5, 0], [-8, 6, 0]],
                                                      [[0, 0, 0], [0, 0, 30]]))
    rng = np.random.default_rng(7)
    n = 30_000
    dirs = rng.normal(size=(n, 3)) * rng.uniform(0.5, 2.0, (n, 1))     # not of unit length
    dirs[:, 2] *= 0.3
    origins = np.tile([0.0, 0.0, 1.8], (n, 1)) + rng.normal(scale=0.01, size=(n, 3))
    times = np.sort(rng.uniform(0, 0.1, n))
    kw = {"face_subset": (lambda i, m: np.arange(0, m, 2))} if subset else {}
    fast = RayCaster(scene, n_threads=2, **kw).cast(origins, dirs, times, 100.0)
    with numpy_kernels():
        ref = RayCaster(scene, n_threads=2, **kw).cast(origins, dirs, times, 100.0)
    assert (fast.bounces > 0).sum() > 50 and (fast.object_id == 3).sum() > 50 and np.isnan(fast.distance).sum() > 50
    for field in fast.__dataclass_fields__:
        assert getattr(fast, field).tobytes() == getattr(ref, field).tobytes(), field


def test_one_shared_origin_has_the_bytes_of_its_rows():
    """A camera's rays share one origin (a read-only broadcast, hifi.api.model.Sensor.cast): the
    caster subtracts the scene centre once and the compiled finish reads the one row. Regression:
    the same bytes as the origin repeated in a real (n, 3) array, with the kernels and with their
    oracles, through a mirror and onto a moving car."""
    from contextlib import nullcontext

    from tests.oracles import numpy_kernels

    scene = Scene()
    scene.add_material(Material("glass", 0.1, mirror=1.0))
    scene.add_object("ground", meshes.plane([200, 200]))
    scene.add_object("house", meshes.box([10, 6, 8]), "default", Pose.from_position_rpy([20, -14, 4], [0, 0, 10]))
    scene.add_object("mirror", meshes.plane([4, 4]), "glass", Pose.from_position_rpy([-6, 0, 2], [0, 90, -45]))
    scene.add_object("car", meshes.car(), local=Track([0.0, 0.1], [[-10, 5, 0], [-8, 6, 0]], [[0, 0, 0], [0, 0, 30]]))
    rng = np.random.default_rng(8)
    n = 20_000
    dirs = rng.normal(size=(n, 3))
    dirs[:, 2] *= 0.3
    shared = np.broadcast_to(np.array([0.3, -0.2, 1.7]), (n, 3))
    for switch in (nullcontext, numpy_kernels):
        with switch():
            caster = RayCaster(scene, n_threads=2)
            one = caster.cast(shared, dirs, 0.05, 100.0)
            rows = caster.cast(shared.copy(), dirs, 0.05, 100.0)
        assert (one.bounces > 0).sum() > 50 and (one.object_id == 3).sum() > 20
        for field in one.__dataclass_fields__:
            assert getattr(one, field).tobytes() == getattr(rows, field).tobytes(), field


@pytest.mark.parametrize("rpy", [[0, 0, 0], [3, -2, 30]])
def test_compiled_tie_rule_has_the_numpy_bytes(rpy):
    """hifi._cast_kernel.settle_static against its oracle (the pairs, tie_keys' arithmetic and
    the lowest key in numpy; regression: same bytes), and the moving object's path (the pairs
    gathered by tie_candidates, the arithmetic in tie_keys) against the static one. Rays
    straight down onto a terrain's grid vertices and edge midpoints, in its body frame, so
    nearly every hit is on a shared edge or vertex: at the origin without rotation (the shared
    vertex array) and turned (its world vertices)."""
    from contextlib import nullcontext

    from tests.oracles import numpy_kernels

    scene = Scene()
    pose = Pose.from_position_rpy([1.0, -2.0, 0.5], rpy)
    scene.add_object("t", meshes.terrain([10.0, 8.0], 0.5, 0.3, seed=4), local=pose)
    grid = np.stack(np.meshgrid(np.arange(-4.5, 4.6, 0.25), np.arange(-3.5, 3.6, 0.25)), axis=-1).reshape(-1, 2)
    origins = pose.apply(np.column_stack([grid, np.full(len(grid), 5.0)]))
    dirs = np.broadcast_to(pose.apply_vectors(np.array([[0.0, 0.0, -1.0]])), origins.shape)
    raw = RayCaster(scene, n_threads=2).build().backend.nearest(origins, dirs, 0.0, 100.0)   # before the rule
    assert raw.edge.sum() > 0.9 * len(grid)                 # the rays meet edges and vertices
    hits = {}
    for on, switch in ((True, nullcontext), (False, numpy_kernels)):
        with switch():
            h = RayCaster(scene, n_threads=2).cast(origins, dirs, 0.0, 100.0)
        hits[on] = h
    assert np.any(hits[True].face_index != raw.face_index)  # the rule changed Embree's choice
    for field in hits[True].__dataclass_fields__:
        assert getattr(hits[True], field).tobytes() == getattr(hits[False], field).tobytes(), field


@pytest.mark.parametrize("density", [0.5, 1.5])
def test_tree_crown_gap_fraction_is_beer_lambert(density):
    """meshes.tree: rays through the crown pass with probability exp(-G u L), G = 1/2 for the
    spherical leaf-angle distribution, u the leaf area density, L the path length in the crown
    (Nilson 1971; analytic). Horizontal rays above the trunk's top through three trees (seeds
    3, 4, 5: with 4 cm leaves one tree's leaves in a band of rays fluctuate by a few %; 2 cm
    leaves, four times as many, halve that), 10,000 each. Chords of 1.5 to 3.2 m only: leaves
    reach up to 1.2 cm beyond the crown's surface, which lengthens a grazing chord of 1 m by
    about 5 %, one of 1.5 m by 2 %."""
    r, half, top = 1.6, 1.5, 6.0
    z_c = top - half
    rng = np.random.default_rng(5)
    n = 10_000
    got, want = {}, {}
    for seed in (3, 4, 5):
        scene = Scene()
        scene.add_object("tree", meshes.tree(height_m=top, crown_radius_m=r, crown_height_m=2 * half,
                                             leaf_size_m=0.02, leaf_area_density=density, seed=seed))
        y = rng.uniform(-r, r, n)
        z = z_c + rng.uniform(0.1, 1.0, n)                    # above the trunk, which ends at z_c
        rho = r * np.sqrt(1.0 - ((z - z_c) / half) ** 2)       # crown radius at that height
        chord = 2.0 * np.sqrt(np.clip(rho**2 - y**2, 0.0, None))
        hits = RayCaster(scene, n_threads=1).cast(np.column_stack([np.full(n, -10.0), y, z]),
                                                  np.tile([1.0, 0.0, 0.0], (n, 1)))
        expected = 1.0 - np.exp(-0.5 * density * chord)
        for lo, hi in ((1.5, 2.3), (2.3, 3.2)):
            sel = (chord >= lo) & (chord < hi)
            got.setdefault(lo, []).append(hits.hit[sel].mean())
            want.setdefault(lo, []).append(expected[sel].mean())
    for lo in got:
        assert np.mean(got[lo]) == pytest.approx(np.mean(want[lo]), abs=0.015), (lo, got[lo], want[lo])


def test_tree_mesh_size_and_crown_height_check():
    m = meshes.tree(height_m=6.0, crown_radius_m=1.0, crown_height_m=2.0, leaf_size_m=0.1, leaf_area_density=1.0)
    # leaves: round(1.0 x 4/3 pi 1 x 1 x 1 m^3 / (sqrt(3)/4 x 0.01 m^2)) = 967, plus the trunk's 16 x 4 faces
    assert len(m.faces) == 967 + 64
    assert m.bounds[0][2] == pytest.approx(0.0) and m.bounds[1][2] < 6.1
    with pytest.raises(hifi.ScenarioError, match=r"crown_height_m.*must be <= height_m"):
        hifi.Simulation.from_dict({"simulation": {"duration_s": 0.1},
                                   "objects": [{"name": "t", "mesh": "tree", "height_m": 3.0, "crown_height_m": 4.0}],
                                   "sensors": []})
