"""Built-in mesh generators and mesh-file loading.

Every generator returns a :class:`trimesh.Trimesh` centred on the object's origin in its own
frame (docs/scenario.md, "Built-in meshes"). Parameters are declared in :data:`GENERATORS` so the
scenario loader validates them like any other key.
"""

from __future__ import annotations

import gc
import json
import struct
import urllib.parse
from pathlib import Path

import numpy as np
import trimesh
from scipy import ndimage

from . import osm as _osm
from .params import Param

#: Mesh file suffixes read through trimesh (OBJ, PLY, STL, OFF, GLB/glTF).
MESH_FILE_SUFFIXES = (".obj", ".ply", ".stl", ".off", ".glb", ".gltf")


def plane(size_m) -> trimesh.Trimesh:
    """Rectangle of ``size_m = [sx, sy]`` [m] in the z = 0 plane, normal +z, two triangles."""
    sx, sy = (float(v) / 2.0 for v in size_m)
    vertices = np.array([[-sx, -sy, 0.0], [sx, -sy, 0.0], [sx, sy, 0.0], [-sx, sy, 0.0]])
    faces = np.array([[0, 1, 2], [0, 2, 3]])
    return trimesh.Trimesh(vertices, faces, process=False)


def box(size_m) -> trimesh.Trimesh:
    """Closed box of extents ``size_m = [sx, sy, sz]`` [m], centred on the origin."""
    return trimesh.creation.box(extents=np.asarray(size_m, dtype=float))


def sphere(radius_m, *, subdivisions=4) -> trimesh.Trimesh:
    """Icosphere of ``radius_m`` [m]; ``subdivisions`` 4 gives 5120 faces (max chord error 0.1 %)."""
    return trimesh.creation.icosphere(subdivisions=int(subdivisions), radius=float(radius_m))


def cylinder(radius_m, height_m, *, sections=64) -> trimesh.Trimesh:
    """Closed cylinder of ``radius_m`` and ``height_m`` [m], axis z, centred on the origin."""
    return trimesh.creation.cylinder(radius=float(radius_m), height=float(height_m),
                                     sections=int(sections))


def terrain(size_m, resolution_m, amplitude_m, seed=0, *, correlation_m=None) -> trimesh.Trimesh:
    """Regular grid of ``size_m`` [m] at ``resolution_m`` spacing displaced by a smooth random field.

    Parameters
    ----------
    size_m : (2,) float
        Extent in x and y [m].
    resolution_m : float
        Grid spacing [m]; the grid has ``round(sx / res) + 1`` by ``round(sy / res) + 1`` vertices.
    amplitude_m : float
        Peak displacement [m]: heights lie in ``[-amplitude_m, amplitude_m]`` and the largest
        magnitude equals it exactly.
    seed : int
        Seed of the white noise; the same seed gives the same terrain.
    correlation_m : float, optional
        Standard deviation of the Gaussian smoothing kernel [m]; default 10 grid cells.

    Notes
    -----
    White Gaussian noise on the vertex grid is low-pass filtered with a Gaussian kernel
    (``scipy.ndimage.gaussian_filter``, reflecting borders) and scaled to the peak amplitude.
    The BlenSor paper's benchmark scene is a displaced acre of about 237,000 vertices: an acre
    (4046.86 m^2) square of side 63.6 m at 0.1309 m spacing gives 487 x 487 = 237,169 vertices.
    """
    sx, sy = (float(v) for v in size_m)
    res = float(resolution_m)
    nx = max(int(round(sx / res)) + 1, 2)
    ny = max(int(round(sy / res)) + 1, 2)
    x = np.linspace(-sx / 2, sx / 2, nx)
    y = np.linspace(-sy / 2, sy / 2, ny)
    rng = np.random.default_rng(int(seed))
    field = rng.standard_normal((ny, nx))
    sigma_cells = (10.0 if correlation_m is None else float(correlation_m) / res)
    field = ndimage.gaussian_filter(field, sigma=sigma_cells, mode="reflect")
    peak = np.max(np.abs(field))
    z = field * (float(amplitude_m) / peak) if peak > 0 else field * 0.0
    xx, yy = np.meshgrid(x, y)
    vertices = np.column_stack([xx.ravel(), yy.ravel(), z.ravel()])
    idx = np.arange(nx * ny).reshape(ny, nx)
    a, b = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel()
    c, d = idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    faces = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    return trimesh.Trimesh(vertices, faces, process=False)


def dem(file, origin, resolution_m=None, crop_m=None, vertical_crs=None) -> trimesh.Trimesh:
    """Terrain from a GeoTIFF digital elevation model, in the scene frame (:mod:`hifi.api.dem`).

    Parameters
    ----------
    file : str
        The GeoTIFF (the scenario loader resolves it against the scenario's folder).
    origin : mapping
        ``{lat_deg, lon_deg, height_m}``, the scenario's ``[simulation] origin`` (the loader
        adds it): the scene frame is east-north-up there.
    resolution_m : float, optional
        Decimate to about this spacing [m] (every k-th sample); default the raster's own.
    crop_m : (4,) float, optional
        ``[x_min, y_min, x_max, y_max]`` in the scene frame [m]: only the part around the scene.
    vertical_crs : str, optional
        The heights' vertical CRS where the file does not say: ``"ellipsoidal"`` (WGS 84) or a
        vertical CRS such as ``"EPSG:5773"`` (EGM96 height), which PROJ turns into ellipsoidal.

    Notes
    -----
    Unlike the other generators the mesh is not centred on the object's origin: its vertices
    are already in the scene frame, so the object's ``position_m`` and ``rpy_deg`` should stay
    at zero (they move the terrain off its place on the Earth).
    """
    from . import dem as _dem
    grid = _dem.plan_grid(_dem.read_header(file), origin, resolution_m, crop_m, vertical_crs)
    return _dem.build_mesh(grid)


def _star_polygon_prism(profile_xz: np.ndarray, centre_xz, width: float) -> trimesh.Trimesh:
    """Closed prism of a polygon that is star-shaped about ``centre_xz``, extruded along y."""
    n = len(profile_xz)
    hw = width / 2.0
    ring = np.column_stack([profile_xz[:, 0], np.zeros(n), profile_xz[:, 1]])
    left = ring + [0.0, hw, 0.0]
    right = ring + [0.0, -hw, 0.0]
    cl = [centre_xz[0], hw, centre_xz[1]]
    cr = [centre_xz[0], -hw, centre_xz[1]]
    vertices = np.vstack([left, right, [cl], [cr]])
    i = np.arange(n)
    j = (i + 1) % n
    # Profile is counter-clockwise seen from +y looking toward -y... orient so normals face out;
    # trimesh.fix_normals below settles the winding whatever the profile order.
    side_l = np.column_stack([np.full(n, 2 * n), j, i])
    side_r = np.column_stack([np.full(n, 2 * n + 1), n + i, n + j])
    walls = np.concatenate([np.column_stack([i, j, n + j]), np.column_stack([i, n + j, n + i])])
    mesh = trimesh.Trimesh(vertices, np.concatenate([side_l, side_r, walls]), process=True)
    trimesh.repair.fix_normals(mesh)
    return mesh


def car(size_m=(4.5, 1.8, 1.5)) -> trimesh.Trimesh:
    """Closed car-shaped body with four wheels, wheels standing on z = 0.

    Parameters
    ----------
    size_m : (3,) float
        Overall length (x, forward), width (y) and height (z) [m]; default 4.5 x 1.8 x 1.5, a
        mid-size saloon.

    Notes
    -----
    The body is a side profile (bumper, bonnet, windscreen, roof, rear window, boot) extruded
    across 92 % of the width; each wheel is a closed cylinder of radius 0.21 x height. Every
    component is closed, so the whole mesh is watertight.
    """
    length, width, height = (float(v) for v in size_m)
    wheel_r = 0.21 * height
    # Side profile in units of (length, height), x forward from the centre, z up from the ground.
    profile = np.array([
        [-0.50, 0.20], [0.50, 0.20], [0.50, 0.48], [0.46, 0.58], [0.18, 0.63],
        [0.02, 0.98], [0.00, 1.00], [-0.30, 1.00], [-0.34, 0.98], [-0.46, 0.66], [-0.50, 0.60],
    ]) * [length, height]
    body = _star_polygon_prism(profile, (0.0, 0.5 * height), 0.92 * width)
    parts = [body]
    for fx in (-0.32, 0.32):
        for fy in (-1.0, 1.0):
            w = trimesh.creation.cylinder(radius=wheel_r, height=0.12 * width, sections=24)
            w.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
            w.apply_translation([fx * length, fy * 0.44 * width, wheel_r])   # tyre walls at +-width/2
            parts.append(w)
    return trimesh.util.concatenate(parts)


def tree(height_m=8.0, trunk_radius_m=0.15, crown_radius_m=2.5, crown_height_m=4.0, leaf_size_m=0.08,
         leaf_area_density=1.0, seed=0) -> trimesh.Trimesh:
    """Tree of a trunk and an ellipsoidal crown of randomly placed, randomly oriented leaves.

    Parameters
    ----------
    height_m : float
        Height of the crown's top above the trunk's foot [m]; the foot is at z = 0 (as the
        car's wheels, the object's position is where the tree stands).
    trunk_radius_m : float
        Trunk radius [m]; the trunk (a closed 16-sided cylinder) reaches the crown's centre.
    crown_radius_m, crown_height_m : float
        Horizontal radius and vertical extent of the crown, an ellipsoid of revolution [m].
    leaf_size_m : float
        Side of a leaf, an equilateral triangle [m] (area ``sqrt(3) / 4 s^2``).
    leaf_area_density : float
        One-sided leaf area per crown volume [m^2 / m^3]; the crown holds
        ``round(density x volume / leaf area)`` leaves.
    seed : int
        The same seed gives the same tree.

    Notes
    -----
    Leaf centres are uniform in the crown and leaf normals uniform on the sphere (the spherical
    leaf-angle distribution of canopy radiative transfer, Ross 1981, whose projection function
    is G = 1/2 in every direction). A ray that crosses a path length L of crown then passes
    with probability ``exp(-G u L)``, u the leaf area density (Beer-Lambert for a turbid medium
    of small leaves, Nilson 1971); ``tests/hifi/caster/test_caster.py`` checks the mesh against it.
    Street trees have u of about 0.5-2 m^2/m^3 and leaves of 5-10 cm. Leaves are single
    triangles; the caster hits either side and turns the normal toward the ray.

    References
    ----------
    J. Ross, *The Radiation Regime and Architecture of Plant Stands*, Junk, 1981.
    T. Nilson, "A theoretical analysis of the frequency of gaps in plant stands", Agric.
    Meteorol. 8, 1971, pp. 25-38.
    """
    rng = np.random.default_rng(int(seed))
    r, half = float(crown_radius_m), float(crown_height_m) / 2.0
    z_c = float(height_m) - half
    side = float(leaf_size_m)
    area = np.sqrt(3.0) / 4.0 * side**2
    n = int(round(float(leaf_area_density) * 4.0 / 3.0 * np.pi * r * r * half / area))
    # centres uniform in the unit ball (direction x radius^(1/3)), stretched to the ellipsoid
    u = rng.standard_normal((n, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    centre = u * rng.random((n, 1)) ** (1.0 / 3.0) * [r, r, half] + [0.0, 0.0, z_c]
    normal = rng.standard_normal((n, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    # a random direction in each leaf's plane (an isotropic vector minus its normal part:
    # uniform in angle) and the one 90 deg from it; the corners at 0, 120 and 240 deg from it,
    # circumradius s / sqrt(3)
    t1 = rng.standard_normal((n, 3))
    t1 -= np.sum(t1 * normal, axis=1, keepdims=True) * normal
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(normal, t1)
    phi = np.array([0.0, 2.0, 4.0]) * np.pi / 3.0
    rc = side / np.sqrt(3.0)
    corners = centre[:, None, :] + rc * (np.cos(phi)[None, :, None] * t1[:, None, :]
                                         + np.sin(phi)[None, :, None] * t2[:, None, :])
    leaves = trimesh.Trimesh(corners.reshape(-1, 3), np.arange(3 * n).reshape(n, 3), process=False)
    trunk = trimesh.creation.cylinder(radius=float(trunk_radius_m), height=z_c, sections=16)
    trunk.apply_translation([0.0, 0.0, z_c / 2.0])
    return trimesh.util.concatenate([trunk, leaves])


#: Generator name -> (function, parameter spec). Parameter names are part of the scenario
#: format: renaming one breaks scenarios.
GENERATORS = {
    "plane": (plane, {"size_m": Param("vec2", minimum=0.0, doc="extent in x and y [m]")}),
    "box": (box, {"size_m": Param("vec3", minimum=0.0, doc="extent in x, y, z [m]")}),
    "sphere": (sphere, {
        "radius_m": Param("float", minimum=0.0, exclusive_minimum=True, doc="radius [m]"),
        "subdivisions": Param("int", default=4, minimum=0, maximum=8, doc="icosphere subdivisions"),
    }),
    "cylinder": (cylinder, {
        "radius_m": Param("float", minimum=0.0, exclusive_minimum=True, doc="radius [m]"),
        "height_m": Param("float", minimum=0.0, exclusive_minimum=True, doc="height along z [m]"),
        "sections": Param("int", default=64, minimum=3, doc="facets around the axis"),
    }),
    "terrain": (terrain, {
        "size_m": Param("vec2", minimum=0.0, doc="extent in x and y [m]"),
        "resolution_m": Param("float", minimum=0.0, exclusive_minimum=True, doc="grid spacing [m]"),
        "amplitude_m": Param("float", minimum=0.0, doc="peak height displacement [m]"),
        "seed": Param("int", default=0, minimum=0, doc="seed of the displacement field"),
        "correlation_m": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                               doc="smoothing length [m], default 10 grid cells"),
    }),
    # The loader resolves `file` against the scenario's folder and adds `origin`, the scenario's
    # [simulation] origin, to the parameters it hands the generator (not a key of the object).
    "dem": (dem, {
        "file": Param("path", doc="GeoTIFF elevation model (one band of heights; EPSG projected or geographic CRS), "
                                  "relative to the scenario"),
        "resolution_m": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                              doc="decimate to about this spacing [m] (every k-th sample, never finer than the "
                                  "raster); default the raster's own"),
        "crop_m": Param("vec4", default=None,
                        doc="[x_min, y_min, x_max, y_max] in the scene frame [m]: only the DEM around the scene"),
        "vertical_crs": Param("str", default=None,
                              doc="the heights' vertical CRS where the file gives none: 'ellipsoidal' (WGS 84, "
                                  "as origin.height_m) or a geoid height such as 'EPSG:5773' (EGM96), 'EPSG:3855' "
                                  "(EGM2008), applied by PROJ with its geoid grid; default the file's, else "
                                  "ellipsoidal with a warning"),
    }),
    "car": (car, {"size_m": Param("vec3", default=(4.5, 1.8, 1.5), minimum=0.0,
                                  doc="length, width, height [m]")}),
    "tree": (tree, {
        "height_m": Param("float", default=8.0, minimum=0.0, exclusive_minimum=True,
                          doc="top of the crown above the foot of the trunk (z = 0) [m]"),
        "trunk_radius_m": Param("float", default=0.15, minimum=0.0, exclusive_minimum=True, doc="trunk radius [m]"),
        "crown_radius_m": Param("float", default=2.5, minimum=0.0, exclusive_minimum=True,
                                doc="horizontal radius of the ellipsoidal crown [m]"),
        "crown_height_m": Param("float", default=4.0, minimum=0.0, exclusive_minimum=True,
                                doc="vertical extent of the crown [m] (at most height_m)"),
        "leaf_size_m": Param("float", default=0.08, minimum=0.0, exclusive_minimum=True,
                             doc="side of a leaf, an equilateral triangle [m] (broadleaf street trees: 5-10 cm)"),
        "leaf_area_density": Param("float", default=1.0, minimum=0.0,
                                   doc="one-sided leaf area per crown volume [m2/m3] (street trees about "
                                       "0.5-2); leaves are uniform in the crown with a spherical leaf-angle "
                                       "distribution (Ross 1981)"),
        "seed": Param("int", default=0, minimum=0, doc="seed of the leaves' positions and orientations"),
    }),
    "osm": (_osm.osm_mesh, {
        "file": Param("path", doc="OpenStreetMap extract, .osm (XML) or .osm.pbf, relative to the scenario file; "
                                  "buildings and roads in the scene frame at [simulation] origin (hifi.api.osm; data "
                                  "(c) OpenStreetMap contributors, ODbL)"),
        "radius_m": Param("float", default=200.0, minimum=0.0, exclusive_minimum=True,
                          doc="keep buildings reaching within this distance of the origin, cut roads there [m]"),
        "features": Param("any", default=_osm.FEATURES,
                          doc="kinds this object holds, a list of 'buildings', 'roads', 'markings' (dashed lane "
                              "lines); give buildings and roads to separate objects for their own materials"),
        "storey_height_m": Param("float", default=_osm.STOREY_HEIGHT_M, minimum=0.0, exclusive_minimum=True,
                                 doc="height of a storey for building:levels [m] (CTBUH floor-to-floor: residential "
                                     "3.1, mixed 3.5, office 3.9)"),
        "default_height_m": Param("float", default=_osm.DEFAULT_BUILDING_HEIGHT_M, minimum=0.0, exclusive_minimum=True,
                                  doc="height of a building with neither height nor building:levels [m] (assumed)"),
        "lane_width_m": Param("float", default=_osm.LANE_WIDTH_M, minimum=0.0, exclusive_minimum=True,
                              doc="width of a lane where a road has no width tag [m] (AGR annex II: 3.5)"),
    }),
}

#: Generators that place their mesh on the Earth: besides their parameters they take the
#: scenario's ``[simulation] origin`` (a ``{lat_deg, lon_deg, height_m}`` table) as ``origin``,
#: which the scenario loader adds to their validated parameters (``dem`` too, by its own path).
PLACED_GENERATORS = ("osm",)

#: Parameters that set the size of a generated mesh, each with how to shrink it ("lower",
#: "raise" or "narrow"), in the order a refusal considers them
#: (:func:`hifi.api.estimate.check_scene_memory`).
SIZE_PARAMS = {
    "terrain": {"resolution_m": "raise", "size_m": "lower"},
    "dem": {"resolution_m": "raise", "crop_m": "narrow"},
    "tree": {"leaf_area_density": "lower", "leaf_size_m": "raise", "crown_radius_m": "lower",
             "crown_height_m": "lower"},
    "cylinder": {"sections": "lower"},
    "sphere": {"subdivisions": "lower"},
    "osm": {"radius_m": "lower"},
}

#: Peak resident memory while a generator builds its mesh and the scene takes its arrays, per
#: triangle [B]; measured with ``hifi.api.estimate.peak_rss_bytes`` around ``build_generator`` and
#: ``SceneObject`` (Linux x86-64, Python 3.11, numpy 2, trimesh 4; 2 M and 8 M terrain
#: triangles: 96 B; trees of 0.38 M and 1.5 M leaves: 460 and 441 B, the leaves' (n, 3)
#: float64 temporaries; a cylinder of 4 M triangles: 225 B; DEMs of 2 M and 8 M triangles, a
#: float32 GeoTIFF in UTM: 58 and 53 B, above a fixed 40 MiB of one block's transformation
#: temporaries, :data:`hifi.api.dem._BLOCK_SAMPLES`; ``osm`` on synthetic city grids of 0.4 M
#: and 1.9 M triangles, above the file's parsed polygons: buildings 129 to 139 B, lane markings
#: alone 301 B, everything 141 and 146 B). Rounded up; the default is for the generators of a
#: fixed, small size.
BUILD_BYTES_PER_FACE = {"terrain": 100, "tree": 480, "cylinder": 240, "sphere": 240, "dem": 60, "osm": 320}
DEFAULT_BUILD_BYTES_PER_FACE = 480

#: Triangles of the generators whose size does not depend on their parameters (the car: its
#: body prism and four 24-sided wheels, counted once from :func:`car`).
_FIXED_FACES = {"plane": 2, "box": 12}


def terrain_grid(size_m, resolution_m) -> tuple[int, int]:
    """Vertices of :func:`terrain`'s grid in x and y: ``round(s / resolution_m) + 1``, at least 2."""
    sx, sy = (float(v) for v in size_m)
    res = float(resolution_m)
    return max(int(round(sx / res)) + 1, 2), max(int(round(sy / res)) + 1, 2)


def tree_leaves(height_m=8.0, crown_radius_m=2.5, crown_height_m=4.0, leaf_size_m=0.08, leaf_area_density=1.0,
                **_) -> int:
    """Leaves :func:`tree` places: ``round(density x crown volume / leaf area)``."""
    r, half = float(crown_radius_m), float(crown_height_m) / 2.0
    area = np.sqrt(3.0) / 4.0 * float(leaf_size_m) ** 2
    return int(round(float(leaf_area_density) * 4.0 / 3.0 * np.pi * r * r * half / area))


def dem_grid(params: dict):
    """The :class:`hifi.api.dem.DemGrid` a ``dem`` object's validated ``params`` (with the
    loader's ``origin``) will be built from: its samples, chosen from the file's tags."""
    from . import dem as _dem
    return _dem.plan_grid(_dem.read_header(params["file"]), params["origin"], params.get("resolution_m"),
                          params.get("crop_m"), params.get("vertical_crs"))


def generator_faces(name: str, params: dict) -> int:
    """Triangles generator ``name`` makes from validated ``params``, known before it runs
    (the same arithmetic as the generator; None values take the defaults)."""
    kw = {k: v for k, v in params.items() if v is not None}
    spec = GENERATORS[name][1]
    p = {k: (kw[k] if k in kw else spec[k].default) for k in spec}
    if name == "terrain":
        nx, ny = terrain_grid(p["size_m"], p["resolution_m"])
        return 2 * (nx - 1) * (ny - 1)
    if name == "dem":
        return dem_grid(params).faces                     # from the file's tags, not its pixels
    if name == "tree":
        return tree_leaves(**p) + 4 * 16                  # leaves and the 16-sided closed trunk
    if name == "cylinder":
        return 4 * int(p["sections"])                     # side (2 per section) and two caps
    if name == "sphere":
        return 20 * 4 ** int(p["subdivisions"])           # icosahedron, each subdivision x 4
    if name == "osm":                                     # counted on the file's polygons
        return _osm.osm_faces(**p, origin=kw["origin"])
    if name not in _FIXED_FACES:
        _FIXED_FACES[name] = len(build_generator(name, p).faces)
    return _FIXED_FACES[name]


#: Keys allowed beside a mesh file name.
FILE_PARAMS = {"scale": Param("float", default=1.0, minimum=0.0, exclusive_minimum=True,
                              doc="factor applied to the file's coordinates (e.g. 0.001 for mm)"),
               "parts": Param("bool", default=None,
                              doc="true: load a glTF or OBJ file with its parts, one object OBJECT/NODE per "
                                  "node and material (hifi.run.scene_parts); false: one mesh; default: with "
                                  "parts when the scenario has [scene_files.STEM] for the file")}


def build_generator(name: str, params: dict) -> trimesh.Trimesh:
    """Run generator ``name`` with validated ``params`` (None values are left to defaults)."""
    func, _ = GENERATORS[name]
    kwargs = {k: v for k, v in params.items() if v is not None}
    return func(**kwargs)


#: PLY scalar types (Bourke, "PLY - Polygon File Format", and the names with sizes) -> numpy.
_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}

#: Face records converted at once by :func:`read_binary_ply_triangles` (13 MB of a typical file).
_PLY_FACE_BLOCK = 1 << 20


def read_binary_ply_triangles(path: Path):
    """Vertices (float64) and faces (int64) of a binary PLY file of triangles, read in blocks,
    or None where the file is anything else (trimesh reads those).

    Handles what large scans and exported meshes use: ``binary_little_endian`` or
    ``binary_big_endian`` 1.0, an element ``vertex`` of scalar properties with ``x``, ``y``,
    ``z``, then an element ``face`` whose first property is the list ``vertex_indices`` (or
    ``vertex_index``) followed by scalars, every face a triangle with indices of existing
    vertices. Other files (ASCII, other elements, polygons, list properties elsewhere) give
    None.

    trimesh's PLY reader holds the whole file's bytes beside the arrays it makes from them
    (582 MiB at its peak for a 10 M-triangle file whose arrays take 343 MiB); here the face
    records are read and converted :data:`_PLY_FACE_BLOCK` at a time, so the peak is the
    arrays and one block. The arrays are trimesh's (``tests/hifi/caster/test_caster.py`` checks them
    bit for bit).
    """
    with open(path, "rb") as f:
        if f.readline().strip() != b"ply":
            return None
        fmt, elements = None, []
        while True:
            line = f.readline()
            if not line:
                return None
            words = line.split()
            if not words or words[0] in (b"comment", b"obj_info"):
                continue
            if words[0] == b"end_header":
                break
            if words[0] == b"format":
                fmt = words[1:]
            elif words[0] == b"element" and len(words) == 3:
                elements.append((words[1], int(words[2]), []))
            elif words[0] == b"property" and elements:
                elements[-1][2].append(words[1:])
            else:
                return None
        if fmt not in ([b"binary_little_endian", b"1.0"], [b"binary_big_endian", b"1.0"]):
            return None
        order = "<" if fmt[0] == b"binary_little_endian" else ">"
        if [e[0] for e in elements] != [b"vertex", b"face"]:
            return None
        (_, n_vertices, vprops), (_, n_faces, fprops) = elements
        try:
            vdtype = np.dtype([(w[1].decode(), order + _PLY_TYPES[w[0].decode()]) for w in vprops
                               if len(w) == 2])
            first = fprops[0]
            if len(vdtype.names) != len(vprops) or first[0] != b"list" or first[3] not in (b"vertex_indices",
                                                                                            b"vertex_index"):
                return None
            fdtype = np.dtype([("n", order + _PLY_TYPES[first[1].decode()]),
                               ("i", order + _PLY_TYPES[first[2].decode()], (3,))]
                              + [(f"p{k}", order + _PLY_TYPES[w[0].decode()]) for k, w in enumerate(fprops[1:])
                                 if len(w) == 2])
        except (KeyError, IndexError, UnicodeDecodeError, TypeError):
            return None
        if not {"x", "y", "z"} <= set(vdtype.names) or len(fdtype.names) != len(fprops) + 1:
            return None
        if fdtype["i"].base.kind not in "iu":
            return None
        vertices = np.empty((n_vertices, 3))
        raw = np.fromfile(f, dtype=vdtype, count=n_vertices)
        if raw.shape[0] != n_vertices:
            return None
        for j, name in enumerate("xyz"):
            vertices[:, j] = raw[name]
        del raw
        faces = np.empty((n_faces, 3), dtype=np.int64)
        for a in range(0, n_faces, _PLY_FACE_BLOCK):
            block = np.fromfile(f, dtype=fdtype, count=min(_PLY_FACE_BLOCK, n_faces - a))
            if block.shape[0] != min(_PLY_FACE_BLOCK, n_faces - a) or np.any(block["n"] != 3):
                return None
            faces[a:a + block.shape[0]] = block["i"]
        if n_faces and (faces.min() < 0 or faces.max() >= n_vertices):
            return None
    return vertices, faces


def check_gltf_file(path) -> None:
    """Refuse a glTF file whose own bytes or buffers are missing or cut short, before trimesh
    reads it (trimesh fails there with a bare ``AssertionError``, or reads another file).

    ``.gltf``: it must be JSON, and each buffer whose ``uri`` names a file (not a ``data:``
    URI) must exist beside it with at least ``byteLength`` bytes. ``.glb``: the file must hold
    at least the length its 12-byte header gives (glTF 2.0, "GLB File Format Specification": the
    header is the magic ``glTF``, the version and the total length, each a little-endian uint32).
    Other suffixes pass.

    Raises
    ------
    ValueError
        Naming the buffer and the file it looked for, or the sizes.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".gltf":
        try:
            header = json.loads(path.read_bytes())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not glTF JSON ({exc})") from None
        buffers = header.get("buffers", []) if isinstance(header, dict) else []
        for i, buf in enumerate(buffers if isinstance(buffers, list) else []):
            uri = buf.get("uri") if isinstance(buf, dict) else None
            if not isinstance(uri, str) or uri.startswith("data:"):
                continue
            target = path.parent / urllib.parse.unquote(uri)
            if not target.is_file():
                raise ValueError(f"its buffer {i} is the file {uri!r}, which is missing (looked for {target})")
            need, size = buf.get("byteLength"), target.stat().st_size
            if isinstance(need, int) and size < need:
                raise ValueError(f"its buffer {i}, {target}, holds {size} bytes, fewer than its byteLength "
                                 f"{need}: the buffer is truncated")
    elif suffix == ".glb":
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(12)
        if len(head) < 12 or head[:4] != b"glTF":
            raise ValueError("not a binary glTF file (it does not start with the 12-byte 'glTF' header)")
        length = struct.unpack("<I", head[8:12])[0]
        if size < length:
            raise ValueError(f"holds {size} bytes, fewer than the {length} its header gives: the file is truncated")


def _read_with_trimesh(path: Path):
    """Vertices and faces of any mesh file trimesh reads, its placed meshes flattened into one
    (see :func:`load_mesh_file`); the loaded scene is collected before returning."""
    check_gltf_file(path)
    try:
        loaded = trimesh.load_scene(str(path), process=False)
    except Exception as exc:  # trimesh raises many types for corrupt files; re-raise as one
        raise ValueError(f"trimesh could not read it ({type(exc).__name__}: {exc})") from exc
    placed = [loaded.graph[node] for node in loaded.graph.nodes_geometry]
    placed = [(transform, loaded.geometry[name]) for transform, name in placed
              if isinstance(loaded.geometry[name], trimesh.Trimesh)]
    if len(placed) == 1:
        transform, mesh = placed[0]
        mesh.apply_transform(transform)      # what Scene.dump does to its copy
    elif placed:
        mesh = loaded.to_mesh()
    else:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
    vertices, faces = mesh.vertices, mesh.faces
    del loaded, placed, mesh
    gc.collect()                             # trimesh's scene graph and caches hold cycles
    return vertices, faces


def load_mesh_file(path: Path, scale: float = 1.0) -> trimesh.Trimesh:
    """Read a mesh file through trimesh, flattening a multi-mesh scene into one mesh.

    Raises
    ------
    ValueError
        If trimesh cannot read the file or it holds no triangles.

    Notes
    -----
    The same vertices and faces as ``trimesh.load(path, force="mesh", process=False)`` (checked
    by ``tests/hifi/caster/test_caster.py``), read with less memory and time: that call copies every
    mesh of the file's scene twice (``Scene.dump``, then ``util.concatenate``), hashes the
    arrays, and keeps the raw file data (PLY's ``_ply_raw``) in the mesh's metadata, about 150
    B per triangle more than the mesh itself, held in reference cycles until a garbage
    collection. Here a file of one mesh placed once keeps that mesh's arrays (its node's
    transform applied in place, which trimesh skips for the identity); only a file of several
    meshes or instances goes through ``Scene.to_mesh``. The result holds vertices (float64)
    and faces (int64) and no metadata; the loaded scene is collected before returning.
    """
    arrays = read_binary_ply_triangles(path) if Path(path).suffix.lower() == ".ply" else None
    vertices, faces = arrays if arrays is not None else _read_with_trimesh(path)
    del arrays
    out = trimesh.Trimesh(np.ascontiguousarray(vertices, dtype=np.float64),
                          np.ascontiguousarray(faces, dtype=np.int64), process=False, validate=False)
    del vertices, faces
    if len(out.faces) == 0:
        raise ValueError("the file holds no triangles")
    if scale != 1.0:
        out.apply_scale(scale)
    return out
