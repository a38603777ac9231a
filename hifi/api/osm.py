"""Buildings and roads from OpenStreetMap: an ``.osm`` or ``.osm.pbf`` extract becomes meshes in
the scene frame.

The scene frame is the local east-north-up frame at the scenario's ``[simulation] origin``
(x east, y north, z up, metres). :func:`read_osm` reads a file once into an :class:`OsmMap`:
building footprints with their base and top heights, road centre lines with their widths, all
projected into that frame and cut to ``radius_m`` of the origin. :meth:`OsmMap.meshes` turns it
into one mesh per kind (:data:`FEATURES`: buildings, roads, lane markings), each with its
semantic class (:data:`CLASSES`); :meth:`OsmMap.faces` counts their triangles from the
polygons, before any mesh is built, for the memory check (:mod:`hifi.api.estimate`). The mesh
generator ``mesh = "osm"`` of a scenario (:mod:`hifi.api.meshes`) is :func:`osm_mesh`, the union
of the kinds an object asks for: a scenario gives buildings and roads to separate objects, each
with its own material and class. Later versions give one object per building (the scene-file
parts, ``OBJECT/PART``).

What is read
------------
- **Buildings**: closed ways and multipolygon relations tagged ``building=*`` (not ``no``),
  assembled into areas by libosmium (pyosmium's area manager: outer and inner rings, so a
  courtyard is a hole). The top is ``height`` (metres; units as in the OSM wiki's Key:height,
  :func:`parse_length`), else ``building:levels`` x ``storey_height_m``, else
  ``default_height_m``; the base is ``min_height``, else ``building:min_level`` x
  ``storey_height_m``, else 0 (the Simple 3D Buildings scheme). Roofs are flat at the top
  (``roof:*`` is not modelled) and ``building:part`` areas are not read. A building whose top is
  not above its base (contradictory tags) is left out.
- **Roads**: ways tagged ``highway=*`` with a value of :data:`ROAD_LANES` (carriageways: motorway
  to residential, links, service roads, tracks), not in a tunnel (``tunnel=*`` other than ``no``
  or ``building_passage``: they are underground), as flat strips: the centre line buffered by
  half the width with round joins and ends (so consecutive ways meet without a gap), all strips
  joined into one surface (no overlapping coplanar triangles at junctions). The width is
  ``width``, else ``lanes`` x ``lane_width_m``, else the road type's default lanes
  (:data:`ROAD_LANES`) x ``lane_width_m``. Footways, cycleways, paths and steps are not laid:
  mapped beside a road they are kerb-high sidewalks, and a strip at road level would cover the
  carriageway's edge. Bridges are laid at ground level (no elevation is modelled).
- **Lane markings**, where the data says there are lanes: ``lanes`` >= 2 tagged (unless
  ``lane_markings=no``), or ``lane_markings=yes`` (with the default lanes): a dashed line on every
  boundary between two lanes (none at the edges), 3 m dashes and 9 m gaps, 0.15 m wide (MUTCD
  broken line), each dash starting from the way's first node. The centre line of a two-way road
  is drawn dashed like the others (no solid or double lines: the tags do not say where
  overtaking is forbidden).

Heights and the ground
----------------------
Every base stands on the plane z = 0 of the scene frame: the ground is flat at the origin's
height over the whole radius (the Earth's surface falls d^2 / 2R below the tangent plane, 3 mm at
200 m and 7.8 cm at 1 km, which is ignored; horizontal positions are the east and north
coordinates of each node at the origin's height, pymap3d's geodetic-to-ENU). Terrain is not
draped: a scene whose ground is a DEM or a generated terrain gets its buildings at z = 0 all the
same. Roads lie :data:`ROAD_LIFT_M` above z = 0, markings :data:`MARKING_THICKNESS_M` above the
roads, so that neither is coplanar with a ground plane at z = 0 (a coplanar pair would tie).

Radius
------
A building any part of whose footprint lies within ``radius_m`` of the origin (horizontally) is
kept whole; road centre lines are cut at ``radius_m`` (a 256-gon inside the circle, 7.5e-5 x
radius short of it at most), their strips and markings follow the cut lines.

Data licence
------------
OpenStreetMap data is © OpenStreetMap contributors, available under the Open Database Licence
(ODbL 1.0): a scene, a dataset or an image made from it must say so.

References
----------
CTBUH (Council on Tall Buildings and Urban Habitat), *Height Calculator*, assumptions: typical
floor-to-floor height 3.1 m (residential / hotel), 3.9 m (office), 3.5 m (mixed use or unknown).

UNECE, *European Agreement on Main International Traffic Arteries (AGR)*, Geneva 1975,
consolidated ECE/TRANS/SC.1/384 (2008), annex II, III.3.1: traffic lanes at least 3.50 m wide on
straight sections.

FHWA, *Manual on Uniform Traffic Control Devices*, 2009 ed., section 3A.06: a normal line is 4
to 6 in (100-150 mm) wide; a broken line is 10 ft (3 m) segments and 30 ft (9 m) gaps.

FHWA, *Safety Evaluation of Profiled Thermoplastic Pavement Markings*, FHWA-HRT-17-075, 2018,
appendix A: extruded thermoplastic lines 100 mil (2.5 mm) above the surface.

OpenStreetMap wiki: Key:building, Key:height, Key:building:levels, Simple 3D Buildings, Key:lanes,
Key:width; pyosmium (``osmium``) user manual, "Working with areas".
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import trimesh

from ..constants import DEGENERATE_TRIANGLE_REL

__all__ = [
    "FEATURES", "CLASSES", "ROAD_LANES", "OsmError", "OsmMap", "Building", "Road", "parse_length",
    "read_osm", "osm_meshes", "osm_mesh", "osm_faces",
]

#: The kinds of geometry, in the order of :meth:`OsmMap.meshes`.
FEATURES = ("buildings", "roads", "markings")

#: Semantic class of each kind (the names of SemanticKITTI's labels: building, road,
#: lane-marking), for the materials of the objects that hold them.
CLASSES = {"buildings": "building", "roads": "road", "markings": "lane_marking"}

#: Floor-to-floor height of a storey [m]: CTBUH height calculator, residential / hotel (its
#: office value is 3.9 m, mixed use or unknown 3.5 m; OSM buildings with levels are mostly
#: houses and flats).
STOREY_HEIGHT_M = 3.1

#: Height of a building with neither ``height`` nor ``building:levels`` [m]. Assumed: about a
#: storey and a pitched roof; the OpenMapTiles building layer renders such buildings 5 m high too.
DEFAULT_BUILDING_HEIGHT_M = 5.0

#: Width of a traffic lane [m]: AGR annex II, III.3.1 (at least 3.50 m on straight sections).
LANE_WIDTH_M = 3.5

#: Lanes of a road way whose ``lanes`` is not tagged, by ``highway`` value. Assumed after the OSM
#: wiki's Key:lanes: a two-way road has one lane each way (2); a motorway or trunk carriageway
#: is mapped as one way per direction with at least two lanes (2); links, service roads and
#: tracks are one lane. A ``oneway=yes`` way of another type is one lane.
ROAD_LANES = {
    "motorway": 2, "trunk": 2, "primary": 2, "secondary": 2, "tertiary": 2, "unclassified": 2,
    "residential": 2, "living_street": 2, "road": 2, "busway": 1, "motorway_link": 1,
    "trunk_link": 1, "primary_link": 1, "secondary_link": 1, "tertiary_link": 1, "service": 1,
    "track": 1,
}

#: Road types that keep their default lanes on a ``oneway=yes`` way (dual carriageways).
_DIVIDED = frozenset({"motorway", "trunk"})

#: Height of the road surface above z = 0 [m]. 2 cm: 550 times the float32 resolution 300 m from
#: the origin (2**-23 x 300 m = 36 um, :data:`hifi.constants.MOUNT_ON_SURFACE_M`'s arithmetic), so
#: a ground plane at z = 0 never ties with a road, and about the range noise of a lidar
#: (HDL-64E S2 data sheet: 2 cm range sigma, as sensors.lidar uses), so the road is where the
#: ground would be.
ROAD_LIFT_M = 0.02

#: Height of a lane marking above the road surface [m]: extruded thermoplastic, 100 mil
#: (FHWA-HRT-17-075, appendix A).
MARKING_THICKNESS_M = 0.0025

#: Width of a lane line [m]: MUTCD section 3A.06, a normal line 4 to 6 in (the upper value).
MARKING_WIDTH_M = 0.15

#: Dash and gap of a broken lane line [m]: MUTCD section 3A.06 (10 ft segments, 30 ft gaps).
MARKING_DASH_M = 3.0
MARKING_GAP_M = 9.0

#: Sides of the polygon inside the ``radius_m`` circle that cuts the road centre lines.
_CIRCLE_SIDES = 256

#: Segments per quarter circle of a road's round joins and ends.
_ROUND_SEGMENTS = 4

#: Vertices closer than this to the outline without them are dropped [m] (:func:`_clean`):
#: OpenStreetMap stores coordinates in units of 1e-7 deg (the OSM wiki, "Node": 7 decimal
#: places; 1.1 cm of latitude), so nothing finer is in the data. Joining the road strips makes
#: vertices millimetres apart where two outlines cross at a shallow angle, and ear clipping
#: turns such a pair and a far vertex into a triangle too thin for the float32 caster.
_SIMPLIFY_M = 0.01

#: Passes of :func:`_unsliver` (one flip removes a sliver; a second catches a sliver whose
#: neighbour was itself flipped in the first).
_SLIVER_PASSES = 4

#: Reads kept by :func:`read_osm` (a scenario's validation, its memory check and its build read
#: the same file once).
_CACHE_SIZE = 4

#: Units of lengths in tags [m per unit]: OSM wiki, Key:height and Key:width ("units").
_UNITS = {"m": 1.0, "km": 1000.0, "cm": 0.01, "mm": 0.001, "ft": 0.3048, "feet": 0.3048,
          "in": 0.0254, "mi": 1609.344, "nmi": 1852.0}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-z]*)\s*$")
_FEET_INCHES = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*'\s*(?:([0-9]+(?:\.[0-9]*)?)\s*\")?\s*$")

_INSTALL = 'mesh = "osm" needs osmium, shapely and mapbox-earcut: pip install "hifi[osm]"'


class OsmError(ValueError):
    """An OpenStreetMap file that cannot give the meshes asked for.

    Parameters
    ----------
    path : str
        The file.
    param : str
        What is at fault: ``file``, ``features`` (the generator's parameters) or ``origin``
        (the scenario's ``[simulation] origin``), so a scenario reports it at that key.
    value : Any
        The value at fault.
    reason : str
        What is wrong and what is allowed.
    """

    def __init__(self, path, param: str, value, reason: str):
        self.path, self.param, self.value, self.reason = str(path), param, value, reason
        super().__init__(f"{path}: {param} = {value!r}: {reason}")


def _modules():
    """osmium, shapely and the earcut engine, imported when first used (the ``osm`` extra)."""
    try:
        import mapbox_earcut  # noqa: F401  (trimesh's triangulation engine, named explicitly)
        import osmium
        import shapely
    except ImportError as exc:
        raise ImportError(f"{_INSTALL} ({exc})") from None
    return osmium, shapely


def parse_length(text) -> float | None:
    """A length tag in metres, or None where it cannot be read or is not positive.

    A bare number is metres; a unit may follow (``"12 m"``, ``"40 ft"``, ``"3 km"``, the units of
    the OSM wiki's Key:height and Key:width), or feet and inches (``"40'"``, ``"12'6\\""``). A
    decimal comma, a range or a word gives None, and the caller falls back to the next rule.
    """
    if text is None:
        return None
    s = str(text).strip().lower()
    m = _FEET_INCHES.match(s)
    if m:
        value = float(m.group(1)) * 0.3048 + float(m.group(2) or 0.0) * 0.0254
    else:
        m = _NUMBER_UNIT.match(s)
        if not m or m.group(2) not in ("", *_UNITS):
            return None
        value = float(m.group(1)) * _UNITS.get(m.group(2) or "m", 1.0)
    return value if math.isfinite(value) and value > 0 else None


def _number(text) -> float | None:
    """A non-negative number of a count tag (``building:levels``, ``lanes``), or None."""
    try:
        value = float(str(text).strip())
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _origin(origin) -> tuple[float, float, float]:
    """(lat [deg], lon [deg], height [m]) of a scenario origin table or a 2- or 3-sequence."""
    if isinstance(origin, Mapping):
        return float(origin["lat_deg"]), float(origin["lon_deg"]), float(origin.get("height_m", 0.0))
    values = [float(v) for v in origin]
    return values[0], values[1], values[2] if len(values) > 2 else 0.0


@dataclass(frozen=True)
class Building:
    """One building: its footprint in the scene frame (a shapely Polygon, holes for courtyards)
    [m], its base and top above z = 0 [m], and its OSM element (``"w123"``, ``"r45"``)."""

    footprint: object
    base_m: float
    top_m: float
    osm_id: str


@dataclass(frozen=True)
class Road:
    """One road way: its centre line in the scene frame, cut at the radius (a shapely
    LineString or MultiLineString) [m], its width [m], its lanes, whether lane lines are drawn,
    and its OSM way (``"w123"``)."""

    centre: object
    width_m: float
    lanes: int
    marked: bool
    osm_id: str


def _ring_vertices(polygon) -> int:
    """Vertices of a polygon's rings (each ring's closing vertex counted once)."""
    return len(polygon.exterior.coords) - 1 + sum(len(r.coords) - 1 for r in polygon.interiors)


def _triangles(polygon) -> int:
    """Triangles earcut makes of a polygon: n + 2 h - 2 for n ring vertices and h holes (each
    hole is bridged to the outer ring by two extra vertices, then the simple polygon of
    n + 2 h vertices gives n + 2 h - 2)."""
    return _ring_vertices(polygon) + 2 * len(polygon.interiors) - 2


@dataclass(frozen=True)
class OsmMap:
    """What :func:`read_osm` read: buildings and roads within ``radius_m`` of the origin, in the
    scene frame.

    Attributes
    ----------
    path : str
        The file.
    origin : tuple
        (lat [deg], lon [deg], height [m]) of the scene frame's origin.
    radius_m : float
        Features farther from the origin were left out [m].
    bounds_deg : tuple
        (min lon, min lat, max lon, max lat) of the file [deg]: its header's box, else the
        extent of its buildings' and roads' nodes.
    buildings : tuple of Building
    roads : tuple of Road
    """

    path: str
    origin: tuple
    radius_m: float
    bounds_deg: tuple
    buildings: tuple
    roads: tuple
    _made: dict = field(default_factory=dict, repr=False, compare=False)

    def _get(self, kind: str):
        """The 2-D shapes of ``kind``, made once: building polygons, the joined road polygons,
        and the markings as (straight dashes (k, 4, 2), bent dash polygons)."""
        if kind not in self._made:
            _, shapely = _modules()
            if kind == "buildings":
                made = [p for b in self.buildings for p in _parts(b.footprint)]
            elif kind == "roads":
                strips = [r.centre.buffer(r.width_m / 2.0, quad_segs=_ROUND_SEGMENTS) for r in self.roads]
                made = _clean(shapely.unary_union(strips)) if strips else []
            elif kind == "markings":
                made = _dashes([r for r in self.roads if r.marked])
            else:
                raise ValueError(f"unknown kind {kind!r}; one of {', '.join(FEATURES)}")
            self._made[kind] = made
        return self._made[kind]

    def polygons(self, kind: str) -> list:
        """The flat shapely Polygons of ``kind`` in the scene frame [m]: the building footprints
        (one per polygon of each building), the road surface (every strip joined), the dashes
        of the lane lines."""
        if kind != "markings":
            return list(self._get(kind))
        _, shapely = _modules()
        quads, bent = self._get(kind)
        return list(shapely.polygons(quads)) + list(bent)

    def faces(self, features: Sequence[str] = FEATURES) -> int:
        """Triangles of the meshes of ``features``, from the 2-D shapes (no mesh is built).

        An extruded footprint of n ring vertices and h holes has two caps of n + 2 h - 2
        triangles (earcut) and two wall triangles per ring edge: 4 n + 4 h - 4; a flat road
        polygon has n + 2 h - 2, a straight dash 2. The count is exact where earcut keeps every
        vertex; the polygons have no repeated or collinear consecutive vertices (:func:`_clean`),
        the ones it would drop.
        """
        n = 0
        for kind in features:
            if kind == "buildings":
                n += sum(2 * _triangles(p) + 2 * _ring_vertices(p) for p in self._get(kind))
            elif kind == "roads":
                n += sum(_triangles(p) for p in self._get(kind))
            else:
                quads, bent = self._get(kind)
                n += 2 * len(quads) + sum(_triangles(p) for p in bent)
        return n

    def meshes(self, features: Sequence[str] = FEATURES) -> dict:
        """One mesh per kind of ``features`` (:data:`FEATURES` order), scene frame [m].

        Buildings are closed prisms of their footprints from base to top (walls around
        courtyards included, normals out); roads and markings are single-sided flat surfaces
        facing up, at :data:`ROAD_LIFT_M` and :data:`ROAD_LIFT_M` + :data:`MARKING_THICKNESS_M`.
        A kind with nothing in range gives an empty mesh.
        """
        out = {}
        for kind in (k for k in FEATURES if k in features):
            if kind == "buildings":
                heights = [(b.base_m, b.top_m) for b in self.buildings for _ in _parts(b.footprint)]
                out[kind] = _prisms(self._get(kind), heights)
            elif kind == "roads":
                out[kind] = _flats(self._get(kind), ROAD_LIFT_M)
            else:
                quads, bent = self._get(kind)
                z = ROAD_LIFT_M + MARKING_THICKNESS_M
                out[kind] = _join([_quads(quads, z), _flats(bent, z)])
        return out


def _parts(geometry) -> list:
    """The Polygons of a Polygon or MultiPolygon."""
    return list(getattr(geometry, "geoms", [geometry]))


def _clean(geometry) -> list:
    """Valid Polygons of ``geometry`` without repeated, collinear or nearly collinear
    consecutive vertices (a simplification of tolerance :data:`_SIMPLIFY_M`, topology kept),
    exterior counter-clockwise and holes clockwise: the footprints earcut triangulates vertex
    for vertex."""
    _, shapely = _modules()
    from shapely.geometry.polygon import orient

    geometry = shapely.make_valid(geometry)
    out = []
    for g in shapely.get_parts(geometry):
        if g.geom_type not in ("Polygon", "MultiPolygon"):
            continue
        for p in _parts(shapely.simplify(g, _SIMPLIFY_M)):
            if p.geom_type == "Polygon" and not p.is_empty and p.area > 0:
                out.append(orient(p, 1.0))
    return out


def _dashes(roads: list) -> tuple[np.ndarray, list]:
    """The dashes of the lane lines of ``roads``: on each boundary between two lanes, offset
    from the centre line, MARKING_DASH_M on and MARKING_GAP_M off from the line's start.

    Returns (quads, bent): a dash within one segment of its line is a rectangle, four corners
    counter-clockwise in ``quads`` (k, 4, 2) [m] (vectorised); a dash across a bend is the
    buffer of that stretch of line (shapely), cleaned, in ``bent``.
    """
    from shapely.ops import substring

    quads, bent = [], []
    half = MARKING_WIDTH_M / 2.0
    for road in roads:
        lane_w = road.width_m / road.lanes
        for k in range(1, road.lanes):
            offset = -road.width_m / 2.0 + k * lane_w
            for centre in _lines(road.centre):
                line = centre if offset == 0.0 else centre.offset_curve(offset, join_style="round")
                for part in _lines(line):
                    xy = np.asarray(part.coords)[:, :2]
                    seg = np.diff(xy, axis=0)
                    seg_len = np.hypot(seg[:, 0], seg[:, 1])
                    cum = np.concatenate([[0.0], np.cumsum(seg_len)])
                    start = np.arange(0.0, cum[-1], MARKING_DASH_M + MARKING_GAP_M)
                    end = np.minimum(start + MARKING_DASH_M, cum[-1])
                    keep = end - start > MARKING_WIDTH_M
                    start, end = start[keep], end[keep]
                    i0 = np.clip(np.searchsorted(cum, start, side="right") - 1, 0, len(seg) - 1)
                    i1 = np.clip(np.searchsorted(cum, end, side="left") - 1, 0, len(seg) - 1)
                    straight = (i0 == i1) & (seg_len[i0] > 0)
                    i, s0, s1 = i0[straight], start[straight], end[straight]
                    u = seg[i] / seg_len[i][:, None]
                    a = xy[i] + u * (s0 - cum[i])[:, None]
                    b = xy[i] + u * (s1 - cum[i])[:, None]
                    nrm = np.column_stack([-u[:, 1], u[:, 0]]) * half
                    quads.append(np.stack([a - nrm, b - nrm, b + nrm, a + nrm], axis=1))
                    for s, e in zip(start[~straight], end[~straight]):
                        bent.append(substring(part, float(s), float(e)).buffer(half, cap_style="flat",
                                                                                join_style="mitre"))
    quads = np.concatenate(quads) if quads else np.zeros((0, 4, 2))
    return quads, [p for g in bent for p in _clean(g)]


def _lines(geometry) -> list:
    """The non-empty LineStrings of a (Multi)LineString or collection."""
    return [g for g in getattr(geometry, "geoms", [geometry]) if g.geom_type == "LineString" and not g.is_empty]


def _earcut(polygon) -> tuple[np.ndarray, np.ndarray]:
    """Ring vertices (n, 2) [m] (exterior, then holes, no closing repeats) and earcut's
    triangles (t, 3), slivers flipped away (:func:`_unsliver`), each counter-clockwise (facing +z)."""
    from mapbox_earcut import triangulate_float64

    rings = [np.asarray(polygon.exterior.coords)[:-1, :2]]
    rings += [np.asarray(r.coords)[:-1, :2] for r in polygon.interiors]
    vertices = np.ascontiguousarray(np.concatenate(rings), dtype=np.float64)
    ends = np.cumsum([len(r) for r in rings]).astype(np.uint32)
    faces = _unsliver(vertices, triangulate_float64(vertices, ends).astype(np.int64).reshape(-1, 3))
    cw = _cross(vertices, faces) < 0
    faces[cw] = faces[cw][:, ::-1]
    return vertices, faces


def _cross(xy: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Twice the signed area of each triangle [m^2] (positive: counter-clockwise)."""
    a, b, c = (xy[faces[:, i]] for i in range(3))
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


def _unsliver(xy: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Triangles with the zero-area ones replaced: each sliver (p, m, q), m on the segment p-q,
    and its neighbour (p, q, d) across p-q become (p, m, d) and (m, q, d), the two halves of
    (p, q, d) split at m.

    Ear clipping makes such slivers where three ring vertices are collinear without being
    consecutive (a side road's edges meeting a main road's straight edge in the joined road
    surface). The flip keeps the vertices and the number of triangles (the count
    :meth:`OsmMap.faces` gives) and the shared edges (a closed prism stays closed). Zero area is
    :data:`hifi.constants.DEGENERATE_TRIANGLE_REL`'s: height <= that x the longest edge, what the
    scene check would warn about. At most :data:`_SLIVER_PASSES` passes; a sliver on the
    boundary (no neighbour) stays.
    """
    for _ in range(_SLIVER_PASSES):
        a, b, c = (xy[faces[:, i]] for i in range(3))
        opposite = np.stack([np.sum((c - b) ** 2, axis=1), np.sum((a - c) ** 2, axis=1),
                             np.sum((b - a) ** 2, axis=1)], axis=1)
        longest = opposite.max(axis=1)
        bad = np.flatnonzero(np.abs(_cross(xy, faces)) <= DEGENERATE_TRIANGLE_REL * longest)
        if not bad.size:
            break
        by_edge = {}
        for f, tri in enumerate(faces.tolist()):
            for i in range(3):
                by_edge.setdefault(frozenset((tri[i], tri[(i + 1) % 3])), []).append(f)
        touched = set()
        for f in bad.tolist():
            m = int(faces[f, int(np.argmax(opposite[f]))])
            p, q = (int(v) for v in faces[f] if v != m)
            g = [h for h in by_edge.get(frozenset((p, q)), []) if h != f]
            if len(g) != 1 or f in touched or g[0] in touched:
                continue
            d = next(int(v) for v in faces[g[0]] if v not in (p, q))
            faces[f], faces[g[0]] = (p, m, d), (m, q, d)
            touched.update((f, g[0]))
    return faces


def _prisms(polygons: list, heights: list) -> trimesh.Trimesh:
    """Closed prisms of ``polygons`` (exteriors counter-clockwise, holes clockwise: :func:`_clean`),
    each from its base to its top [m]; the caps and walls share vertices, normals point out.

    Vertices of a footprint of n ring vertices: its n bottom corners, then its n top corners.
    Caps are earcut's triangles (the bottom one reversed); each ring edge a -> b gives the
    walls (a, b, b') and (a, b', a'), whose normal is the edge direction x +z: outward, since
    the solid lies left of every ring so oriented.
    """
    vertices, faces, offset = [], [], 0
    for polygon, (base, top) in zip(polygons, heights):
        xy, cap = _earcut(polygon)
        n = len(xy)
        ring_lengths = [len(polygon.exterior.coords) - 1] + [len(r.coords) - 1 for r in polygon.interiors]
        first = np.repeat(np.cumsum([0] + ring_lengths[:-1]), ring_lengths)
        idx = np.arange(n)
        nxt = np.where(idx + 1 < first + np.repeat(ring_lengths, ring_lengths), idx + 1, first)
        walls = np.concatenate([np.column_stack([idx, nxt, nxt + n]), np.column_stack([idx, nxt + n, idx + n])])
        vertices += [np.column_stack([xy, np.full(n, base)]), np.column_stack([xy, np.full(n, top)])]
        faces.append(np.concatenate([cap[:, ::-1], cap + n, walls]) + offset)
        offset += 2 * n
    return _mesh(vertices, faces)


def _flats(polygons: list, z_m: float) -> trimesh.Trimesh:
    """``polygons`` triangulated (earcut) at height z_m [m], every triangle facing +z."""
    vertices, faces, offset = [], [], 0
    for polygon in polygons:
        xy, tri = _earcut(polygon)
        vertices.append(np.column_stack([xy, np.full(len(xy), z_m)]))
        faces.append(tri + offset)
        offset += len(xy)
    return _mesh(vertices, faces)


def _quads(quads: np.ndarray, z_m: float) -> trimesh.Trimesh:
    """Convex quadrilaterals (k, 4, 2), corners counter-clockwise, as two triangles each at
    height z_m [m], facing +z."""
    k = len(quads)
    vertices = np.column_stack([quads.reshape(-1, 2), np.full(4 * k, z_m)])
    corner = 4 * np.arange(k)[:, None]
    faces = np.concatenate([corner + [0, 1, 2], corner + [0, 2, 3]])
    return _mesh([vertices], [faces])


def _mesh(vertices: list, faces: list) -> trimesh.Trimesh:
    """A mesh of stacked vertex and face arrays (empty for none)."""
    v = np.concatenate(vertices) if vertices else np.zeros((0, 3))
    f = np.concatenate(faces) if faces else np.zeros((0, 3), dtype=np.int64)
    return trimesh.Trimesh(v, f.astype(np.int64), process=False)


def _join(meshes: list) -> trimesh.Trimesh:
    """One mesh of ``meshes`` (their vertices and faces stacked)."""
    offsets = np.cumsum([0] + [len(m.vertices) for m in meshes[:-1]])
    return _mesh([m.vertices for m in meshes], [m.faces + o for m, o in zip(meshes, offsets)])


def _building_heights(tags, storey_height_m: float, default_height_m: float) -> tuple[float, float]:
    """(base, top) of a building above z = 0 [m] from its tags (module docstring, Buildings)."""
    top = parse_length(tags.get("height"))
    if top is None:
        levels = _number(tags.get("building:levels"))
        top = levels * storey_height_m if levels else default_height_m
    base = parse_length(tags.get("min_height"))
    if base is None:
        min_level = _number(tags.get("building:min_level"))
        base = min_level * storey_height_m if min_level else 0.0
    return base, top


def _road_shape(tags, lane_width_m: float) -> tuple[float, int, bool] | None:
    """(width [m], lanes, marked) of a road way from its tags, or None where it is not a road
    (module docstring, Roads)."""
    kind = tags.get("highway")
    if kind not in ROAD_LANES or tags.get("tunnel", "no") not in ("no", "building_passage"):
        return None
    tagged = _number(tags.get("lanes"))
    lanes = int(round(tagged)) if tagged else 0
    if lanes < 1:
        oneway = tags.get("oneway") in ("yes", "1", "true", "-1")
        lanes = 1 if oneway and kind not in _DIVIDED else ROAD_LANES[kind]
    width = parse_length(tags.get("width")) or lanes * lane_width_m
    marking = tags.get("lane_markings")
    marked = lanes >= 2 and marking != "no" and (marking == "yes" or (tagged is not None and tagged >= 2))
    return width, lanes, marked


def _project(lon_lat: np.ndarray, origin) -> np.ndarray:
    """East and north [m] of (lon, lat) [deg] pairs at the origin's height (pymap3d)."""
    import pymap3d

    lat0, lon0, h0 = origin
    e, n, _ = pymap3d.geodetic2enu(lon_lat[:, 1], lon_lat[:, 0], np.full(len(lon_lat), h0), lat0, lon0, h0)
    return np.column_stack([e, n])


def _read_raw(path: str):
    """(box, buildings, roads) of an OSM file, in degrees: the header's box (or None), building
    areas as (id, tags, [(outer ring, [inner rings])]) and road ways as (id, tags, line)."""
    osmium, _ = _modules()
    from osmium.filter import KeyFilter

    processor = (osmium.FileProcessor(path).with_areas(KeyFilter("building"))
                 .with_filter(KeyFilter("building", "highway")))
    box = processor.header.box()
    box = ((box.bottom_left.lon, box.bottom_left.lat, box.top_right.lon, box.top_right.lat)
           if box.valid() else None)
    buildings, roads = [], []
    for obj in processor:
        if obj.is_area():
            tags = dict(obj.tags)
            if tags.get("building", "no") == "no":
                continue
            rings = []
            for outer in obj.outer_rings():
                inner = [np.array([(n.lon, n.lat) for n in r]) for r in obj.inner_rings(outer)]
                rings.append((np.array([(n.lon, n.lat) for n in outer]), inner))
            buildings.append((("w" if obj.from_way() else "r") + str(obj.orig_id()), tags, rings))
        elif obj.is_way() and "highway" in obj.tags:
            line = np.array([(n.location.lon, n.location.lat) for n in obj.nodes if n.location.valid()])
            if len(line) >= 2:
                roads.append(("w" + str(obj.id), dict(obj.tags), line))
    return box, buildings, roads


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _read_cached(path: str, stamp: tuple, origin: tuple, radius_m: float, storey_height_m: float,
                 default_height_m: float, lane_width_m: float) -> OsmMap:
    """:func:`read_osm` for one file version (``stamp``: its modification time and size)."""
    _, shapely = _modules()
    from shapely.geometry import LineString, Point, Polygon

    try:
        box, raw_buildings, raw_roads = _read_raw(path)
    except RuntimeError as exc:           # libosmium's errors: XML syntax, PBF blobs, format
        raise OsmError(path, "file", path, f"not an OpenStreetMap file (.osm XML or .osm.pbf): {exc}") from None
    if box is None:                       # no <bounds>: the extent of what the file maps
        nodes = [outer for _, _, rings in raw_buildings for outer, _ in rings] + [line for _, _, line in raw_roads]
        if nodes:
            nodes = np.concatenate(nodes)
            box = (*nodes.min(axis=0), *nodes.max(axis=0))
    lat0, lon0, _ = origin
    if box is None or not (box[0] <= lon0 <= box[2] and box[1] <= lat0 <= box[3]):
        inside = ("the file has neither bounds nor buildings and roads" if box is None else
                  f"the file covers lat {box[1]:.6f} .. {box[3]:.6f} deg, lon {box[0]:.6f} .. {box[2]:.6f} deg")
        raise OsmError(path, "origin", {"lat_deg": lat0, "lon_deg": lon0, "height_m": origin[2]},
                       f"the scene origin lies outside the OpenStreetMap file {path} ({inside}); set "
                       f"[simulation] origin inside it")

    disk = Point(0.0, 0.0).buffer(radius_m, quad_segs=_CIRCLE_SIDES // 4)
    buildings = []
    for osm_id, tags, rings in raw_buildings:
        xy_rings = [(_project(outer, origin), [_project(r, origin) for r in inner]) for outer, inner in rings]
        if min(np.hypot(*o.T).min() for o, _ in xy_rings) > radius_m + _extent(xy_rings):
            continue                      # no vertex near: cheap test before shapely
        polygons = _clean(shapely.MultiPolygon([Polygon(o, i) for o, i in xy_rings if len(o) >= 4]))
        if not polygons:
            continue
        footprint = polygons[0] if len(polygons) == 1 else shapely.MultiPolygon(polygons)
        if footprint.distance(Point(0.0, 0.0)) > radius_m:
            continue
        base, top = _building_heights(tags, storey_height_m, default_height_m)
        if top > base:
            buildings.append(Building(footprint, base, top, osm_id))
    roads = []
    for osm_id, tags, line in raw_roads:
        shape = _road_shape(tags, lane_width_m)
        if shape is None:
            continue
        centre = LineString(_project(line, origin)).intersection(disk)
        if centre.is_empty or centre.length == 0:
            continue
        roads.append(Road(centre, *shape, osm_id))
    return OsmMap(path, origin, radius_m, tuple(float(b) for b in box), tuple(buildings), tuple(roads))


def _extent(xy_rings) -> float:
    """Diagonal of the bounding box of a building's outer rings [m]: no point of the building is
    farther than this from any of its vertices."""
    return float(np.hypot(*np.ptp(np.concatenate([o for o, _ in xy_rings]), axis=0)))


def read_osm(path, origin, radius_m: float = 200.0, *, storey_height_m: float = STOREY_HEIGHT_M,
             default_height_m: float = DEFAULT_BUILDING_HEIGHT_M, lane_width_m: float = LANE_WIDTH_M) -> OsmMap:
    """Buildings and roads of an OpenStreetMap file within ``radius_m`` of the origin.

    Parameters
    ----------
    path : str or Path
        An ``.osm`` (XML) or ``.osm.pbf`` file (any name libosmium reads: ``.osm.bz2``,
        ``.osm.gz``, ``.o5m``, ``.opl`` too).
    origin : mapping or sequence
        The scene frame's origin: ``{lat_deg, lon_deg, height_m}`` (a scenario's ``[simulation]
        origin``) or ``(lat [deg], lon [deg], height [m])``.
    radius_m : float
        Keep what lies within this horizontal distance of the origin [m].
    storey_height_m : float
        Height of a storey for ``building:levels`` and ``building:min_level`` [m]; default
        :data:`STOREY_HEIGHT_M`.
    default_height_m : float
        Height of a building without ``height`` or ``building:levels`` [m]; default
        :data:`DEFAULT_BUILDING_HEIGHT_M`.
    lane_width_m : float
        Width of a lane for ``lanes`` and the default lanes [m]; default :data:`LANE_WIDTH_M`.

    Returns
    -------
    OsmMap

    Raises
    ------
    OsmError
        The file is missing or is not an OSM file (``param = "file"``), or the origin lies
        outside the file's bounds (``"origin"``).
    ImportError
        osmium, shapely or mapbox-earcut is missing (the ``osm`` extra).

    Notes
    -----
    The file is parsed once: the last reads are kept, keyed by the file's path, modification
    time and size and the arguments, so the scenario's validation, its memory check and the
    scene's build share one read. libosmium reads the file twice (relations first, to assemble
    multipolygons) and keeps every node's location in memory (its ``flex_mem`` index): extract
    the area of a large file first (``osmium extract -b LON1,LAT1,LON2,LAT2``).
    """
    path = str(Path(path))
    try:
        st = os.stat(path)
    except OSError:
        raise OsmError(path, "file", path, "file not found (an .osm or .osm.pbf file)") from None
    if not Path(path).is_file():
        raise OsmError(path, "file", path, "not a file (an .osm or .osm.pbf file)")
    return _read_cached(path, (st.st_mtime_ns, st.st_size), _origin(origin), float(radius_m), float(storey_height_m),
                        float(default_height_m), float(lane_width_m))


def _features(path, features) -> tuple:
    """``features`` checked: a non-empty list of distinct :data:`FEATURES`."""
    if isinstance(features, str) or not isinstance(features, (list, tuple)) or not features or \
            any(f not in FEATURES for f in features) or len(set(features)) != len(features):
        raise OsmError(path, "features", features,
                       f"expected a non-empty list of distinct kinds from {', '.join(repr(f) for f in FEATURES)}")
    return tuple(features)


def _checked(path, origin, radius_m, features, **kw) -> tuple[OsmMap, tuple]:
    """The map and the features, refusing a request with nothing in range."""
    features = _features(path, features)
    osm = read_osm(path, origin, radius_m, **kw)
    if osm.faces(features) == 0:
        kinds = " or ".join(features)
        lat, lon, _ = osm.origin
        raise OsmError(path, "file", str(path),
                       f"no {kinds} within radius_m = {osm.radius_m:g} m of the origin (lat {lat:g} deg, lon "
                       f"{lon:g} deg): an OSM file without {kinds} in range; check the origin, a larger radius_m "
                       f"or the file")
    return osm, features


def osm_meshes(path, origin, radius_m: float = 200.0, features: Sequence[str] = FEATURES, **kw) -> dict:
    """One mesh per kind of ``features`` from an OpenStreetMap file, scene frame [m].

    Parameters
    ----------
    path, origin, radius_m
        As :func:`read_osm`.
    features : sequence of str
        Kinds to build, of :data:`FEATURES` (``"buildings"``, ``"roads"``, ``"markings"``).
    **kw
        ``storey_height_m``, ``default_height_m``, ``lane_width_m`` of :func:`read_osm`.

    Returns
    -------
    dict of str to trimesh.Trimesh
        Kind -> mesh; :data:`CLASSES` gives each kind's semantic class.

    Raises
    ------
    OsmError
        As :func:`read_osm`; and ``features`` not a list of known kinds, or none of them within
        ``radius_m`` of the origin ("an OSM file without buildings in range").
    """
    osm, features = _checked(path, origin, radius_m, features, **kw)
    return osm.meshes(features)


def osm_mesh(file, radius_m: float = 200.0, features: Sequence[str] = FEATURES,
             storey_height_m: float = STOREY_HEIGHT_M,
             default_height_m: float = DEFAULT_BUILDING_HEIGHT_M, lane_width_m: float = LANE_WIDTH_M, *,
             origin) -> trimesh.Trimesh:
    """The mesh generator ``mesh = "osm"``: the union of :func:`osm_meshes` for ``features``.

    ``origin`` is the scenario's ``[simulation] origin`` (the scene loader passes it); the
    other parameters are the generator's (:data:`hifi.api.meshes.GENERATORS`).
    """
    meshes = osm_meshes(file, origin, radius_m, features, storey_height_m=storey_height_m,
                        default_height_m=default_height_m, lane_width_m=lane_width_m)
    return _join(list(meshes.values()))


def osm_faces(file, radius_m: float = 200.0, features: Sequence[str] = FEATURES,
              storey_height_m: float = STOREY_HEIGHT_M,
              default_height_m: float = DEFAULT_BUILDING_HEIGHT_M, lane_width_m: float = LANE_WIDTH_M, *,
              origin) -> int:
    """Triangles :func:`osm_mesh` makes with these parameters, counted before it builds
    anything (:meth:`OsmMap.faces`); raises as it does."""
    osm, features = _checked(file, origin, radius_m, features, storey_height_m=storey_height_m,
                             default_height_m=default_height_m, lane_width_m=lane_width_m)
    return osm.faces(features)
