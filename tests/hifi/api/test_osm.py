"""Buildings and roads from OpenStreetMap (hifi.api.osm, mesh = "osm").

The map is written here as OSM XML: features laid out in metres of the scene frame, converted to
latitude and longitude with pyproj (geodetic <-> ECEF, EPSG:4979 / EPSG:4978) and an ENU
rotation written out below, rounded to the 7 decimals of OSM files. Expected footprints are the
written coordinates projected back the same independent way (hifi projects with pymap3d), and
compared with shapely; heights and widths come from the tags and the documented rules; lidar
distances are shapely intersections of the rays with those footprints.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

osmium = pytest.importorskip("osmium", reason="the osm extra (osmium) is not installed")
shapely = pytest.importorskip("shapely", reason="the osm extra (shapely) is not installed")
pytest.importorskip("mapbox_earcut", reason="the osm extra (mapbox-earcut) is not installed")
pyproj = pytest.importorskip("pyproj")
import trimesh  # noqa: E402
import xarray as xr  # noqa: E402
from shapely.geometry import LineString, Point, Polygon  # noqa: E402

import hifi  # noqa: E402
from hifi.api import meshes, osm  # noqa: E402
from hifi.cli import main  # noqa: E402
from hifi.errors import ScenarioError  # noqa: E402

LAT0, LON0, H0 = 48.137, 11.575, 520.0
ORIGIN = {"lat_deg": LAT0, "lon_deg": LON0, "height_m": H0}
_GEO_ECEF = pyproj.Transformer.from_crs("EPSG:4979", "EPSG:4978", always_xy=True)


def _enu_rotation(lat_deg, lon_deg):
    """Rows: east, north, up unit vectors in ECEF (Groves 2013, eq. 2.150, transposed)."""
    p, l = math.radians(lat_deg), math.radians(lon_deg)
    return np.array([[-math.sin(l), math.cos(l), 0.0],
                     [-math.sin(p) * math.cos(l), -math.sin(p) * math.sin(l), math.cos(p)],
                     [math.cos(p) * math.cos(l), math.cos(p) * math.sin(l), math.sin(p)]])


_R = _enu_rotation(LAT0, LON0)
_O = np.array(_GEO_ECEF.transform(LON0, LAT0, H0))


def to_lonlat(x, y):
    """(lon, lat) [deg] of the scene-frame point (x, y, 0) [m]."""
    lon, lat, _ = _GEO_ECEF.transform(*(_O + _R.T @ [x, y, 0.0]), direction="INVERSE")
    return lon, lat


def to_xy(lon, lat):
    """East, north [m] of (lon, lat) at the origin's height: the independent projection."""
    return (_R @ (np.array(_GEO_ECEF.transform(lon, lat, H0)) - _O))[:2]


# Buildings: name -> (outer ring, inner rings, tags), rings in scene metres.
BUILDINGS = {
    "A": ([(10, 5), (30, 5), (30, 25), (10, 25)], [], {"building": "yes", "height": "12"}),
    "B": ([(-30, 5), (-10, 5), (-10, 20), (-30, 20)], [], {"building": "residential", "building:levels": "4"}),
    "C": ([(-20, -50), (20, -50), (20, -22), (-20, -22)], [[(-10, -42), (10, -42), (10, -28), (-10, -28)]],
          {"type": "multipolygon", "building": "yes", "height": "40'"}),
    "E": ([(36, -36), (54, -36), (54, -26), (36, -26)], [], {"building": "yes", "min_height": "3", "height": "9 m"}),
    "F": ([(40, 20), (55, 20), (55, 35), (40, 35)], [],
          {"building": "yes", "building:levels": "5", "building:min_level": "2"}),
    "G": ([(140, -30), (160, -30), (160, -20), (140, -20)], [], {"building": "yes"}),
    "D": ([(300, 0), (320, 0), (320, 20), (300, 20)], [], {"building": "yes"}),
    "N": ([(-60, -10), (-50, -10), (-50, -5), (-60, -5)], [], {"building": "no"}),
}
#: Base and top [m] from the tags and the documented rules: height in metres or feet (1 ft =
#: 0.3048 m), building:levels x 3.1 m (STOREY_HEIGHT_M), untagged 5 m (DEFAULT_BUILDING_HEIGHT_M).
HEIGHTS = {"A": (0.0, 12.0), "B": (0.0, 4 * 3.1), "C": (0.0, 40 * 0.3048), "E": (3.0, 9.0),
           "F": (2 * 3.1, 5 * 3.1), "G": (0.0, 5.0)}
ROADS = {
    "R1": ([(-60, 0), (60, 0)], {"highway": "residential", "lanes": "2"}),
    "R2": ([(0, 3), (0, 60)], {"highway": "service", "width": "6"}),
    "R3": ([(-60, -60), (60, -60)], {"highway": "primary", "tunnel": "yes"}),
    "R4": ([(-60, 40), (60, 40)], {"highway": "footway"}),
    "R5": ([(-300, 100), (300, 100)], {"highway": "tertiary"}),
}
RADIUS_M = 150.0


def _tags(tags):
    return "".join(f'<tag k="{k}" v="{v}"/>' for k, v in tags.items())


def write_osm(path, *, buildings=BUILDINGS, roads=ROADS, bounds_m=400.0):
    """The map as OSM XML; returns {name: [rings as (lon, lat) arrays, as written]}."""
    nodes, ways, relations, written = [], [], [], {}

    def ring(points):
        ids, lonlat = [], []
        for x, y in points:
            lon, lat = to_lonlat(x, y)
            lon, lat = round(lon, 7), round(lat, 7)
            nodes.append(f'<node id="{len(nodes) + 1}" version="1" lat="{lat:.7f}" lon="{lon:.7f}"/>')
            ids.append(len(nodes))
            lonlat.append((lon, lat))
        return ids, np.array(lonlat)

    for name, (outer, inners, tags) in buildings.items():
        rings = []
        for points in [outer, *inners]:
            ids, lonlat = ring(points)
            ways.append((len(ways) + 1, ids + ids[:1], {}))
            rings.append(lonlat)
        written[name] = rings
        if tags.get("type") == "multipolygon":
            members = [f'<member type="way" ref="{len(ways) - len(inners)}" role="outer"/>']
            members += [f'<member type="way" ref="{len(ways) - len(inners) + 1 + k}" role="inner"/>'
                        for k in range(len(inners))]
            relations.append(f'<relation id="{len(relations) + 1}" version="1">{"".join(members)}{_tags(tags)}'
                             '</relation>')
        else:
            ways[-1] = (ways[-1][0], ways[-1][1], tags)
    for name, (points, tags) in roads.items():
        ids, lonlat = ring(points)
        ways.append((len(ways) + 1, ids, tags))
        written[name] = [lonlat]
    (lon_min, lat_min), (lon_max, lat_max) = to_lonlat(-bounds_m, -bounds_m), to_lonlat(bounds_m, bounds_m)
    text = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6" generator="hifi tests">',
            f'<bounds minlat="{lat_min:.7f}" minlon="{lon_min:.7f}" maxlat="{lat_max:.7f}" maxlon="{lon_max:.7f}"/>',
            *nodes]
    for wid, ids, tags in ways:
        text.append(f'<way id="{wid}" version="1">' + "".join(f'<nd ref="{i}"/>' for i in ids) + _tags(tags) + "</way>")
    text += [*relations, "</osm>"]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return written


def expected_footprint(rings):
    """shapely Polygon of written (lon, lat) rings, projected independently."""
    xy = [np.array([to_xy(lon, lat) for lon, lat in r]) for r in rings]
    return Polygon(xy[0], xy[1:])


@pytest.fixture(scope="module")
def osm_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("osm") / "munich.osm"
    return path, write_osm(path)


@pytest.fixture(scope="module")
def osm_map(osm_file):
    return osm.read_osm(osm_file[0], ORIGIN, RADIUS_M)


def by_id(osm_map, written):
    """Building name -> hifi Building, matched by footprint centroid (within 1 m)."""
    out = {}
    for name in HEIGHTS:
        c = expected_footprint(written[name]).centroid
        match = [b for b in osm_map.buildings if b.footprint.centroid.distance(c) < 1.0]
        assert len(match) == 1, name
        out[name] = match[0]
    return out


def test_parse_length_units():
    # expected: the unit definitions (1 ft = 0.3048 m, 1 in = 0.0254 m exactly, international
    # yard of 1959); malformed or non-positive values give None (the caller falls back)
    assert osm.parse_length("12") == 12.0
    assert osm.parse_length("12 m") == 12.0
    assert osm.parse_length("12.5m") == 12.5
    assert osm.parse_length("40'") == pytest.approx(12.192, abs=1e-12)
    assert osm.parse_length("40 ft") == pytest.approx(12.192, abs=1e-12)
    assert osm.parse_length("12'6\"") == pytest.approx(12 * 0.3048 + 6 * 0.0254, abs=1e-12)
    assert osm.parse_length("0.5 km") == 500.0
    for bad in ("12,5", "tall", "-3", "0", "", None, "10-12"):
        assert osm.parse_length(bad) is None, bad


def test_footprints_match_an_independent_projection(osm_map, osm_file):
    # expected: shapely area and centroid of the written coordinates projected with pyproj
    _, written = osm_file
    got = by_id(osm_map, written)
    for name, b in got.items():
        want = expected_footprint(written[name])
        assert b.footprint.area == pytest.approx(want.area, abs=1e-3), name          # 1e-3 m^2
        assert b.footprint.centroid.distance(want.centroid) < 1e-4, name              # 0.1 mm
    assert len(got["C"].footprint.interiors) == 1                                     # the courtyard
    # closed form of the layout; 1 m^2: the file's 1e-7 deg (about 1 cm) rounding along 136 m of rings
    assert got["C"].footprint.area == pytest.approx(40 * 28 - 20 * 14, abs=1.0)


def test_heights_from_tags(osm_map, osm_file):
    # expected: HEIGHTS (the tags and the documented rules)
    got = by_id(osm_map, osm_file[1])
    for name, (base, top) in HEIGHTS.items():
        assert (got[name].base_m, got[name].top_m) == pytest.approx((base, top), abs=1e-12), name


def test_buildings_are_closed_prisms(osm_map):
    # expected: each footprint's area x its height (prism volume, closed form), and face counts
    # of trimesh.creation.extrude_polygon (an independent extrusion) of the same polygons
    mesh = osm_map.meshes(["buildings"])["buildings"]
    assert mesh.is_watertight and mesh.is_winding_consistent
    want = sum(b.footprint.area * (b.top_m - b.base_m) for b in osm_map.buildings)
    assert mesh.volume == pytest.approx(want, rel=1e-9)
    ref = sum(len(trimesh.creation.extrude_polygon(p, 1.0, engine="earcut").faces)
              for p in osm_map.polygons("buildings"))
    assert len(mesh.faces) == ref == osm_map.faces(["buildings"])


def test_face_counts_before_building(osm_map):
    # regression: the count from the polygons equals the triangles built, per kind and together
    built = osm_map.meshes()
    for kind in osm.FEATURES:
        assert osm_map.faces([kind]) == len(built[kind].faces), kind
    assert meshes.generator_faces("osm", {"file": osm_map.path, "radius_m": RADIUS_M, "origin": ORIGIN}) == \
        sum(len(m.faces) for m in built.values())


def test_outline_detail_below_the_osm_coordinate_unit_is_dropped():
    # OSM stores 1e-7 deg (1.1 cm of latitude): a vertex 4 mm off the straight edge of a 10 m
    # square is below what the data holds and goes (4 corners left); one 5 cm off is kept (5).
    # 4 mm is about the gap of the road-surface vertex pair in examples/data's Monaco cut that
    # earcut turned into a triangle the caster cannot hit (heights analytic: the offsets).
    fine = Polygon([(0, 0), (5, -0.004), (10, 0), (10, 10), (0, 10)])
    coarse = Polygon([(0, 0), (5, -0.05), (10, 0), (10, 10), (0, 10)])
    assert [len(p.exterior.coords) - 1 for p in osm._clean(fine)] == [4]
    assert [len(p.exterior.coords) - 1 for p in osm._clean(coarse)] == [5]


def test_joined_roads_of_a_real_map_have_no_unhittable_triangles():
    # The Monaco cut shipped with examples/street.toml: where two road strips cross at a shallow
    # angle their joined outline had vertices millimetres apart; the scene check
    # (hifi.run.checks.degenerate_faces, height <= 1.19e-7 x longest edge) finds none now.
    from hifi.run.checks import degenerate_faces
    from conftest import REPO_ROOT
    path = REPO_ROOT / "examples" / "data" / "monaco_boulevard_des_moulins.osm.pbf"
    roads = osm.osm_meshes(path, (43.7445745, 7.429068, 100.0), 150.0, ["roads"])["roads"]
    assert len(roads.faces) > 100
    assert not degenerate_faces(roads.vertices, roads.faces).any()


def test_courtyard_is_open(osm_map, osm_file):
    # expected: a vertical ray through the courtyard misses the building (it reaches the ground);
    # one through the ring of rooms hits the roof at its height, 40 ft (trimesh's ray query over
    # Embree, not hifi's caster)
    mesh = osm_map.meshes(["buildings"])["buildings"]
    court = expected_footprint(osm_file[1]["C"][1:2]).representative_point()
    ring = Point(0.0, -25.0)
    origins = np.array([[court.x, court.y, 100.0], [ring.x, ring.y, 100.0]])
    from trimesh.ray.ray_pyembree import RayMeshIntersector
    caster = RayMeshIntersector(mesh)
    hits, rays, _ = caster.intersects_location(origins, np.tile([0.0, 0.0, -1.0], (2, 1)))
    assert 0 not in rays
    roof = hits[rays == 1][:, 2].max()
    assert roof == pytest.approx(40 * 0.3048, abs=1e-9)


def strip_width(mesh, origin, normal, axis, window):
    """Width [m] of a flat road mesh across a vertical plane (trimesh's section), along ``axis``
    (0: x, 1: y), counting only the section within ``window`` (lo, hi) on that axis."""
    v = mesh.section(plane_origin=origin, plane_normal=normal).vertices[:, axis]
    v = v[(v > window[0]) & (v < window[1])]
    return float(v.max() - v.min())


def test_road_widths_and_what_is_not_a_road(osm_map):
    # expected: lanes=2 x 3.5 m (AGR lane width) = 7 m; width=6 -> 6 m; the tunnel (y = -60) and
    # the footway (y = 40) are not laid; the tertiary road (y = 100) is cut at the radius:
    # 2 sqrt(150^2 - 100^2) m long
    roads = osm_map.roads
    assert len(roads) == 3
    assert sorted(r.width_m for r in roads) == [6.0, 7.0, 7.0]
    surface = osm_map.meshes(["roads"])["roads"]
    assert np.allclose(surface.vertices[:, 2], osm.ROAD_LIFT_M) and np.all(surface.face_normals[:, 2] > 0.999)
    assert strip_width(surface, [40, 0, 0], [1, 0, 0], 1, (-20, 20)) == pytest.approx(7.0, abs=1e-3)    # R1, 1 mm
    assert strip_width(surface, [0, 40, 0], [0, 1, 0], 0, (-20, 20)) == pytest.approx(6.0, abs=1e-3)    # R2, 1 mm
    assert strip_width(surface, [40, 0, 0], [1, 0, 0], 1, (80, 120)) == pytest.approx(7.0, abs=1e-3)    # R5, 1 mm
    across = strip_width(surface, [-40, 0, 0], [1, 0, 0], 1, (-100, 90))   # all of x = -40 below R5
    assert across == pytest.approx(7.0, abs=1e-3)                           # R1 alone: no tunnel, no footway
    cut = [r for r in roads if abs(r.centre.centroid.y - 100.0) < 1.0]
    # the cut is a 256-gon inside the circle: each end short by at most r (1 - cos(pi / 256)) over
    # the cosine of the angle between the road and the radius there
    exact = 2 * math.sqrt(150**2 - 100**2)
    short = 2 * 150 * (1 - math.cos(math.pi / 256)) / (exact / 2 / 150)
    assert len(cut) == 1 and exact - short - 0.01 <= cut[0].centre.length <= exact + 0.01   # 1 cm: the file's rounding


def test_lane_markings(osm_map):
    # expected: the lanes=2 road of 120 m gets one dashed line on its centre, dashes of 3 m from
    # its start every 12 m (MUTCD 3 m / 9 m): 10 dashes of 3 m x 0.15 m, 2.5 mm above the road
    marks = osm_map.meshes(["markings"])["markings"]
    assert len(marks.faces) == 20
    assert marks.area == pytest.approx(10 * 3.0 * 0.15, rel=1e-6)
    assert np.allclose(marks.vertices[:, 2], osm.ROAD_LIFT_M + osm.MARKING_THICKNESS_M)
    assert np.abs(marks.vertices[:, 1]).max() < 0.075 + 0.01     # on the centre line (OSM's 1e-7 deg: < 1 cm)


def test_radius_filter(osm_file):
    # expected from the layout: within 150 m, G (140 m away, reaching to 163 m) is kept whole
    # and D (300 m) is not; within 15 m only A and B (11.2 m) reach, C (22 m) does not
    path, written = osm_file
    wide = osm.read_osm(path, ORIGIN, RADIUS_M)
    assert len(wide.buildings) == 6                                     # A B C E F G; D beyond, N is building=no
    g = expected_footprint(written["G"])
    assert any(b.footprint.area == pytest.approx(g.area, abs=1e-3) for b in wide.buildings)
    near = osm.read_osm(path, ORIGIN, 15.0)
    want = {round(expected_footprint(written[n]).centroid.x) for n in ("A", "B")}
    assert {round(b.footprint.centroid.x) for b in near.buildings} == want


def test_pbf_reads_the_same(osm_file, tmp_path):
    # expected: the same map written by osmium's own writer as .osm.pbf reads back to the same
    # buildings and roads (PBF stores coordinates in 1e-7 deg, as the XML has them)
    path, _ = osm_file
    reader = osmium.io.Reader(str(path))
    header = osmium.io.Header()
    header.add_box(reader.header().box())
    reader.close()
    pbf = tmp_path / "munich.osm.pbf"
    with osmium.SimpleWriter(str(pbf), header=header) as writer:
        for obj in osmium.FileProcessor(str(path)):
            writer.add(obj)
    a, b = osm.read_osm(path, ORIGIN, RADIUS_M), osm.read_osm(pbf, ORIGIN, RADIUS_M)
    assert b.bounds_deg == pytest.approx(a.bounds_deg, abs=1e-7)
    key = sorted((round(x.footprint.area, 6), x.top_m) for x in a.buildings)
    assert sorted((round(x.footprint.area, 6), x.top_m) for x in b.buildings) == key
    assert sorted(r.width_m for r in b.roads) == sorted(r.width_m for r in a.roads)
    assert b.faces() == a.faces()


def test_osm_meshes_one_per_kind(osm_file):
    # regression: the kinds asked for, in FEATURES order, each with a class
    got = osm.osm_meshes(osm_file[0], ORIGIN, RADIUS_M, ["markings", "buildings"])
    assert list(got) == ["buildings", "markings"]
    assert {osm.CLASSES[k] for k in got} == {"building", "lane_marking"}


def test_errors_name_the_file_and_what_is_wrong(osm_file, tmp_path):
    path, _ = osm_file
    with pytest.raises(osm.OsmError, match="file not found") as e:
        osm.read_osm(tmp_path / "missing.osm", ORIGIN)
    assert e.value.param == "file"
    garbage = tmp_path / "garbage.osm"
    garbage.write_text("this is not XML", encoding="utf-8")
    with pytest.raises(osm.OsmError, match="not an OpenStreetMap file") as e:
        osm.read_osm(garbage, ORIGIN)
    assert e.value.param == "file"
    with pytest.raises(osm.OsmError, match="outside the OpenStreetMap file") as e:
        osm.read_osm(path, {"lat_deg": 47.0, "lon_deg": LON0})
    assert e.value.param == "origin"
    north = {"lat_deg": LAT0 + 0.0025, "lon_deg": LON0, "height_m": H0}      # 278 m north: nothing within 50 m
    with pytest.raises(osm.OsmError, match="an OSM file without buildings in range") as e:
        osm.osm_meshes(path, north, 50.0, ["buildings"])
    with pytest.raises(osm.OsmError, match="expected a non-empty list") as e:
        osm.osm_meshes(path, ORIGIN, 50.0, ["building"])
    assert e.value.param == "features"


def scenario_text(file_name, *, origin=ORIGIN, buildings_extra="", duration_s=0.1):
    o = "{ " + ", ".join(f"{k} = {v!r}" for k, v in origin.items()) + " }"
    return f"""
[simulation]
duration_s = {duration_s}
origin = {o}

[materials.ground]
reflectivity = 0.2
class = "terrain"

[materials.facade]
reflectivity = 0.5
class = "building"

[materials.asphalt]
reflectivity = 0.1
class = "road"

[materials.paint]
reflectivity = 0.7
class = "lane_marking"

[[objects]]
name = "ground"
mesh = "plane"
size_m = [400, 400]
material = "ground"

[[objects]]
name = "buildings"
mesh = "osm"
file = "{file_name}"
radius_m = {RADIUS_M}
features = ["buildings"]
material = "facade"
{buildings_extra}
[[objects]]
name = "roads"
mesh = "osm"
file = "{file_name}"
radius_m = {RADIUS_M}
features = ["roads"]
material = "asphalt"

[[objects]]
name = "markings"
mesh = "osm"
file = "{file_name}"
radius_m = {RADIUS_M}
features = ["markings"]
material = "paint"

[[sensors]]
name = "ring"
model = "generic_grid"
position_m = [0, 14, 1.5]
[sensors.params]
theta_min_deg = -180.0
theta_max_deg = 180.0
n_theta = 9
phi_min_deg = 0.0
phi_max_deg = 0.0
n_phi = 1

[[sensors]]
name = "court"
model = "depthmap"
position_m = [0, -35, 30]
rpy_deg = [0, 90, 0]
[sensors.params]
resolution_x = 1
resolution_y = 1
fov_x_deg = 1.0

[[sensors]]
name = "roof"
model = "depthmap"
position_m = [0, -25, 30]
rpy_deg = [0, 90, 0]
[sensors.params]
resolution_x = 1
resolution_y = 1
fov_x_deg = 1.0
"""


def expected_ring_distances(written, origin_xy=(0.0, 14.0), z_m=1.5, max_range_m=300.0):
    """Distance [m] along each of the 9 horizontal rays to the first wall whose base <= z <= top
    (shapely intersections with the independently projected footprints), NaN for none."""
    walls = [expected_footprint(written[n]).boundary for n, (b, t) in HEIGHTS.items() if b <= z_m <= t]
    out = []
    for theta in np.radians(np.linspace(-180.0, 180.0, 9)):
        ray = LineString([origin_xy, (origin_xy[0] + max_range_m * math.cos(theta),
                                      origin_xy[1] + max_range_m * math.sin(theta))])
        d = [Point(origin_xy).distance(g) for w in walls for g in getattr(ray.intersection(w), "geoms",
                                                                         [ray.intersection(w)]) if not g.is_empty]
        out.append(min(d) if d else np.nan)
    return np.array(out)


def test_whole_run_lidar_between_the_buildings(osm_file, tmp_path):
    # expected: ring distances from expected_ring_distances (10 m to the walls of A and B east
    # and west, 36 m to C's north wall, a ray passing under E, whose base is 3 m); looking down
    # through the courtyard the ground at 30 m, onto C's ring of rooms its roof at 30 - 40 ft
    path, written = osm_file
    scenario = tmp_path / "city.toml"
    (tmp_path / "munich.osm").write_bytes(path.read_bytes())
    scenario.write_text(scenario_text("munich.osm"), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 0
    ring = xr.open_dataset(out / "ring.nc")
    got = ring.distance.isel(frame=0, phi=0).values
    want = expected_ring_distances(written)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.nanmax(np.abs(got - want)) < 1e-3                                      # 1 mm
    assert want[4] == pytest.approx(10.0, abs=0.01) and want[0] == pytest.approx(10.0, abs=0.01)
    under_e = LineString([(0.0, 14.0), (300.0 * math.cos(-math.pi / 4), 14.0 + 300.0 * math.sin(-math.pi / 4))])
    assert under_e.intersects(expected_footprint(written["E"])) and np.isnan(got[3])      # E stands on 3 m
    assert set(ring.object_id.isel(frame=0, phi=0).values[~np.isnan(got)]) == {1}   # the buildings object
    assert list(ring.object_class.values[:4]) == ["terrain", "building", "road", "lane_marking"]
    court = xr.open_dataset(out / "court.nc").isel(frame=0)
    assert float(court.distance.squeeze()) == pytest.approx(30.0, abs=1e-4)
    assert int(court.object_id.squeeze()) == 0                                      # the ground, not the roof
    roof = xr.open_dataset(out / "roof.nc").isel(frame=0)
    assert float(roof.distance.squeeze()) == pytest.approx(30.0 - 40 * 0.3048, abs=1e-4)
    assert int(roof.object_id.squeeze()) == 1


def test_scenario_errors_exit_2_and_write_nothing(osm_file, tmp_path, capsys):
    path, _ = osm_file
    (tmp_path / "munich.osm").write_bytes(path.read_bytes())
    (tmp_path / "garbage.osm").write_text("<html><body>no map</body></html>", encoding="utf-8")
    cases = [
        (scenario_text("nowhere.osm"), "objects[1].file = 'nowhere.osm': file not found"),
        (scenario_text("garbage.osm"), "objects[1].file = 'garbage.osm': not an OpenStreetMap file"),
        (scenario_text("munich.osm", origin={"lat_deg": 47.0, "lon_deg": LON0, "height_m": H0}),
         "simulation.origin = "),
        (scenario_text("munich.osm", origin={"lat_deg": LAT0 + 0.003, "lon_deg": LON0 + 0.004, "height_m": H0}),
         "an OSM file without buildings in range"),
        (scenario_text("munich.osm", buildings_extra='features = ["roofs"]\n').replace(
            'features = ["buildings"]\n', "", 1), "objects[1].features = ['roofs']"),
    ]
    for k, (text, message) in enumerate(cases):
        scenario = tmp_path / f"bad{k}.toml"
        scenario.write_text(text, encoding="utf-8")
        out = tmp_path / f"out{k}"
        assert main(["run", str(scenario), "--out", str(out), "--no-progress"]) == 2, message
        err = capsys.readouterr().err
        assert message in err and str(scenario) in err and err.count("\n") == 1, err
        assert not out.exists()
    with pytest.raises(ScenarioError, match="outside the OpenStreetMap file"):
        hifi.load(tmp_path / "bad2.toml")


def test_missing_extra_names_the_install_command(osm_file, tmp_path, monkeypatch):
    # a file not read before (the reads are kept), with osmium unimportable
    path, _ = osm_file
    (tmp_path / "fresh.osm").write_bytes(path.read_bytes())
    (tmp_path / "s.toml").write_text(scenario_text("fresh.osm"), encoding="utf-8")
    monkeypatch.setitem(__import__("sys").modules, "osmium", None)
    with pytest.raises(ScenarioError, match=r'pip install "hifi\[osm\]"'):
        hifi.load(tmp_path / "s.toml")


def test_memory_check_counts_before_building(osm_file, tmp_path, capsys, monkeypatch):
    # The triangles are counted from the parsed polygons and the scene refused before any mesh
    # is built: a budget of the base process plus 1 kB cannot hold the 92 building triangles (five
    # boxes of 12 and the courtyard block of 32: 4 n + 4 h - 4) x
    # (170 B held + 320 B to build); the file gives radius_m, so the refusal names it.
    from hifi.api import estimate
    path, _ = osm_file
    (tmp_path / "munich.osm").write_bytes(path.read_bytes())
    scenario = tmp_path / "s.toml"
    scenario.write_text(scenario_text("munich.osm"), encoding="utf-8")
    monkeypatch.setattr(estimate, "memory_budget_bytes", lambda: estimate.BASE_PROCESS_BYTES + 1000)
    monkeypatch.setitem(meshes.GENERATORS, "osm", (lambda *a, **k: pytest.fail("the OSM meshes were built"),
                                                   meshes.GENERATORS["osm"][1]))
    assert main(["run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    n = osm.read_osm(tmp_path / "munich.osm", ORIGIN, RADIUS_M).faces(["buildings"])
    assert f"objects[1].radius_m = 150.0: osm 'buildings' would have {n:,} triangles" in err, err
    assert "lower radius_m" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
