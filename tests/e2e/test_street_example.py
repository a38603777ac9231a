"""The street example (examples/street.toml) against its own map, rebuilt independently.

The example's buildings come from the OpenStreetMap extract in examples/data through
``mesh = "osm"`` (osmium, pymap3d, shapely, earcut, Embree). Here the same file is read with
osmium and projected with pyproj (geodetic -> ECEF, EPSG:4979 -> EPSG:4978, and the ENU rotation
written out), the footprints are shapely polygons and the heights come from the tags by the
documented rule (``height``, else ``building:levels`` x 3.1 m, else the example's
``default_height_m``, 23 m). The first HDL-64E S2 frame's building returns must lie on those
walls, its lane-marking returns on the centre lines of the two-lane roads, and the GNSS
receiver's blocked satellites must be those whose line of sight enters one of those prisms
below its roof (shapely, ray by ray).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

osmium = pytest.importorskip("osmium", reason="the osm extra (osmium) is not installed")
shapely = pytest.importorskip("shapely", reason="the osm extra (shapely) is not installed")
pytest.importorskip("mapbox_earcut", reason="the osm extra (mapbox-earcut) is not installed")
pyproj = pytest.importorskip("pyproj")
import xarray as xr  # noqa: E402
from shapely.geometry import LineString, Point, Polygon  # noqa: E402

from hifi.cli import main  # noqa: E402

from conftest import REPO_ROOT  # noqa: E402

EXAMPLE = REPO_ROOT / "examples" / "street.toml"
MAP = REPO_ROOT / "examples" / "data" / "monaco_boulevard_des_moulins.osm.pbf"
LAT0, LON0, H0 = 43.7445745, 7.429068, 100.0        # the example's [simulation] origin
STOREY_M = 3.1                                      # docs/scenario_files.md, building:levels
DEFAULT_HEIGHT_M = 23.0                             # the example's default_height_m

#: How far a return may lie from the independently built surface [m]: the osm generator drops
#: ring vertices within 1 cm of the outline without them (OSM's coordinate unit is 1e-7 deg,
#: 1.1 cm), and the returns are stored to 0.1 mm.
ON_SURFACE_M = 0.02


def _enu_rotation(lat_deg, lon_deg):
    """Rows: east, north, up unit vectors in ECEF (Groves 2013, eq. 2.150, transposed)."""
    p, lam = math.radians(lat_deg), math.radians(lon_deg)
    return np.array([[-math.sin(lam), math.cos(lam), 0.0],
                     [-math.sin(p) * math.cos(lam), -math.sin(p) * math.sin(lam), math.cos(p)],
                     [math.cos(p) * math.cos(lam), math.cos(p) * math.sin(lam), math.sin(p)]])


_GEO_ECEF = pyproj.Transformer.from_crs("EPSG:4979", "EPSG:4978", always_xy=True)
_R = _enu_rotation(LAT0, LON0)
_O = np.array(_GEO_ECEF.transform(LON0, LAT0, H0))


def to_xy(lon_lat):
    """East, north [m] of (lon, lat) pairs [deg] at the origin's height (pyproj + rotation)."""
    lon_lat = np.asarray(lon_lat, dtype=float)
    ecef = np.array(_GEO_ECEF.transform(lon_lat[:, 0], lon_lat[:, 1], np.full(len(lon_lat), H0))).T
    return ((ecef - _O) @ _R.T)[:, :2]


@pytest.fixture(scope="module")
def street_map():
    """(footprints, tops [m], centre lines of the two-lane roads) of the example's map."""
    from osmium.filter import KeyFilter

    footprints, tops, centre_lines = [], [], []
    processor = (osmium.FileProcessor(str(MAP)).with_areas(KeyFilter("building"))
                 .with_filter(KeyFilter("building", "highway")))
    for obj in processor:
        tags = dict(obj.tags)
        if obj.is_area():
            if "height" in tags:
                top = float(tags["height"])          # every height in this cut is plain metres
            elif "building:levels" in tags:
                top = float(tags["building:levels"]) * STOREY_M
            else:
                top = DEFAULT_HEIGHT_M
            for outer in obj.outer_rings():
                footprints.append(Polygon(to_xy([(n.lon, n.lat) for n in outer])))
                tops.append(top)
        elif obj.is_way() and tags.get("lanes") == "2" and tags.get("tunnel", "no") == "no":
            centre_lines.append(LineString(to_xy([(n.location.lon, n.location.lat) for n in obj.nodes])))
    return footprints, np.array(tops), centre_lines


@pytest.fixture(scope="module")
def street_run(tmp_path_factory):
    """``hifi run examples/street.toml --duration 0.1``: the first lidar frame, camera frame and
    GNSS epoch."""
    out = tmp_path_factory.mktemp("street") / "run"
    assert main(["run", str(EXAMPLE), "--out", str(out), "--duration", "0.1", "--no-progress"]) == 0
    return out


def _returns(ds, class_name):
    """(n, 3) true hit points [m] of frame 0's detected returns of that class."""
    f0 = ds.isel(frame=0)
    classes = ds.annotation.attrs["flag_meanings"].split()
    hit = f0.detected.values.astype(bool) & (f0.annotation.values == classes.index(class_name))
    return np.column_stack([f0.x.values[hit], f0.y.values[hit], f0.z.values[hit]])


def test_lidar_reaches_every_kind_of_thing_on_the_street(street_run):
    # The example places each of these in the first frame's view (its comments give the
    # stations along the street): the map's buildings, road and lane lines, the sidewalk
    # (ground), the parked cars, the trees, the sign and its pole. Each is the surface hit
    # (annotation) of some laser's ray and returns light.
    with xr.open_dataset(street_run / "velodyne.nc") as ds:
        f0 = ds.isel(frame=0)
        classes = ds.annotation.attrs["flag_meanings"].split()
        for name in ("building", "road", "lane_marking", "sidewalk", "car", "vegetation", "traffic_sign", "pole"):
            assert (f0.annotation.values == classes.index(name)).any(), name
            assert len(_returns(ds, name)) > 0, name


def test_lidar_rays_pass_the_shop_window_to_the_wall(street_run):
    # The shop front is clear glass (glass_clear, docs/surfaces.md), 2 cm in front of the
    # building's wall: rays that meet it go on and hit the wall behind it (the annotation of
    # their hit is the building, their hit point 2-3 cm behind the pane's street face). In the
    # first frame the pane is 52-56 m down the street, seen at about 82 deg from its normal,
    # where Fresnel's transmittance is low, so those wall hits are not detected: the test
    # reads every ray's true hit (x y z are set whether or not the return is detected). The
    # pane's geometry is the example's shop_front object (centre, 8 m x 2.8 m, yaw 162.35 deg).
    centre, yaw = np.array([16.35, 29.92, 1.7]), np.radians(162.35)
    rot = np.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
    with xr.open_dataset(street_run / "velodyne.nc") as ds:
        f0 = ds.isel(frame=0)
        classes = ds.annotation.attrs["flag_meanings"].split()
        points = np.column_stack([f0[c].values.ravel() for c in ("x", "y", "z")])
        annotation = f0.annotation.values.ravel()
        glass_id = ds.object_name.values.tolist().index("shop_front")
        assert not (f0.object_id.values == glass_id).any()      # no ray ends on the pane
    local = (points - centre) @ rot
    behind = ((np.abs(local[:, 1]) < 4.0) & (np.abs(local[:, 2]) < 1.4) & (local[:, 0] < -0.01)
              & (local[:, 0] > -0.05))
    assert behind.sum() >= 3, behind.sum()                     # 6 rays in this frame
    assert (annotation[behind] == classes.index("building")).all()


def test_building_returns_lie_on_the_maps_walls(street_run, street_map):
    footprints, tops, _ = street_map
    with xr.open_dataset(street_run / "velodyne.nc") as ds:
        points = _returns(ds, "building")
    assert len(points) > 10_000                     # a canyon: most of the frame is facades
    tree = shapely.STRtree(footprints)
    near_point, near_building = tree.query(shapely.points(points[:, :2]), predicate="dwithin",
                                           distance=ON_SURFACE_M)
    z = points[near_point, 2]
    on_wall = (z >= -ON_SURFACE_M) & (z <= tops[near_building] + ON_SURFACE_M)
    inside_point, inside_building = tree.query(shapely.points(points[:, :2]), predicate="within")
    on_roof = np.abs(points[inside_point, 2] - tops[inside_building]) <= ON_SURFACE_M
    ok = np.zeros(len(points), dtype=bool)
    np.logical_or.at(ok, near_point, on_wall)
    np.logical_or.at(ok, inside_point, on_roof)
    assert ok.all(), points[~ok][:5]


def test_lane_marking_returns_lie_on_the_centre_lines(street_run, street_map):
    # Two-lane roads have one lane line, on the centre line; a dash is 0.15 m wide (MUTCD, the
    # generator's MARKING_WIDTH_M).
    _, _, centre_lines = street_map
    with xr.open_dataset(street_run / "velodyne.nc") as ds:
        points = _returns(ds, "lane_marking")
    distance = shapely.distance(shapely.MultiLineString(centre_lines), shapely.points(points[:, :2]))
    assert np.all(distance <= 0.15 / 2 + ON_SURFACE_M), distance.max()


def test_gnss_blocked_satellites_are_those_behind_the_maps_buildings(street_run, street_map):
    footprints, tops, _ = street_map
    with xr.open_dataset(street_run / "gnss.nc") as g:
        antenna = g.antenna_position_scene.values[0]
        visible = g.visible.values[0].astype(bool)
        blocked = g.blocked.values[0].astype(bool)[visible]
        azimuth = g.azimuth.values[0][visible]        # [rad] from north, clockwise
        elevation = g.elevation.values[0][visible]    # [rad]
    expected = []
    for az, el in zip(azimuth, elevation):
        # the line of sight over the ground; it enters a prism below the roof where its height
        # at the footprint's nearest crossing point is under the top (it only rises beyond)
        ray = LineString([antenna[:2], antenna[:2] + 5000.0 * np.array([math.sin(az), math.cos(az)])])
        hit = False
        for footprint, top in zip(footprints, tops):
            crossing = footprint.intersection(ray)
            if not crossing.is_empty and antenna[2] + Point(antenna[:2]).distance(crossing) * math.tan(el) < top:
                hit = True
                break
        expected.append(hit)
    np.testing.assert_array_equal(blocked, expected)
    assert 0 < sum(expected) < len(expected)        # a canyon: some satellites behind facades, some not
