"""Terrain from a digital elevation model (DEM): a GeoTIFF raster of heights as a mesh in the
scene frame (the ``dem`` mesh generator of :mod:`hifi.api.meshes`).

The scene frame is the local east-north-up (ENU) frame whose origin is the scenario's
``[simulation] origin`` (WGS 84 latitude, longitude and ellipsoidal height). A DEM sample at
raster column ``i`` and row ``j`` becomes a vertex in three steps, in float64:

1. raster -> coordinates of the file's CRS, by its georeference (a ModelTiepoint with a
   ModelPixelScale, or a ModelTransformation), at the point the sample stands for: raster
   coordinate ``(i + 1/2, j + 1/2)`` where the file says PixelIsArea (raster coordinate
   ``(0, 0)`` is the outer corner of the first pixel) and ``(i, j)`` where it says
   PixelIsPoint (``(0, 0)`` is the first sample itself) (``GTRasterTypeGeoKey``, GeoTIFF 1.0
   section 2.5.2.2; OGC GeoTIFF 1.1 requirements class 7.2.1). GDAL reads both the same way
   (it shifts a PixelIsPoint georeference by half a pixel to its corner convention);
2. CRS -> WGS 84 longitude, latitude, ellipsoidal height (pyproj, to EPSG:4979);
3. geodetic -> ECEF -> ENU at the origin (:func:`pymap3d.geodetic2enu`, the WGS 84 ellipsoid
   of :mod:`hifi.constants`).

Each raster cell whose four corners hold heights gives two triangles; a triangle is kept when
its three corners hold heights, so no-data samples (``GDAL_NODATA``, NaN) leave holes and
never raise. The object's own ``position_m`` / ``rpy_deg`` then apply as for any mesh: leave
them at zero, or the terrain leaves its place on the Earth.

Files. A GeoTIFF (classic or BigTIFF, stripped or tiled, one band of integers or floats)
read by tifffile, with its CRS given as EPSG codes in the GeoKeyDirectory: a projected CRS
(``ProjectedCSTypeGeoKey``, e.g. UTM, EPSG:326xx / 327xx, or ETRS89 / UTM, EPSG:258xx) or a
geographic one (``GeographicTypeGeoKey``, e.g. EPSG:4326). A user-defined CRS (code 32767,
written by GDAL for a CRS without an EPSG code) is refused: ``gdalwarp -t_srs EPSG:...``
re-projects the file. LZW, Deflate with the floating-point predictor and the other codecs
GDAL writes need the ``imagecodecs`` package (in the ``dem`` extra). Only the samples the mesh
uses are kept: the file is decoded one strip or tile at a time.

Heights. The value stored, times the ``GDAL_METADATA`` scale plus its offset where the file
has them (GDAL GeoTIFF driver), in the unit of ``VerticalUnitsGeoKey`` (metre where absent).
Which surface they are measured from decides where the terrain lies:

- ellipsoidal heights (above the WGS 84 ellipsoid, as the scenario origin's ``height_m``) are
  used as given;
- orthometric heights (above a geoid: EGM96 for SRTM, EGM2008 for Copernicus GLO-30, a
  national height system for most national lidar DTMs) differ from them by the geoid
  undulation, tens of metres and up to about a hundred. A file
  that declares its vertical CRS (``VerticalCSTypeGeoKey``), or an object that sets
  ``vertical_crs = "EPSG:5773"`` (EGM96 height) or ``"EPSG:3855"`` (EGM2008 height), has its
  heights turned into ellipsoidal heights by PROJ with the geoid model's grid. PROJ needs that
  grid file (``us_nga_egm96_15.tif``, ``us_nga_egm08_25.tif``, ...): without it, PROJ would
  fall back to a "ballpark" operation that leaves the heights unchanged, so loading is refused
  and the message names the grid and how to get it (``pyproj sync --file NAME``, or
  ``PROJ_NETWORK=ON``). Heights are never mixed silently: a file that declares no vertical
  CRS, with no ``vertical_crs`` on the object, has its heights taken as ellipsoidal, with a
  :class:`~hifi.errors.ScenarioWarning` saying so (``vertical_crs = "ellipsoidal"`` states
  it and silences the warning).

Horizontal datum shifts (ETRS89, NAD83 ... to WGS 84) are PROJ's best transformation among
those installed, as GDAL uses them.

References
----------
N. Ritter and M. Ruth, *GeoTIFF Format Specification*, revision 1.0, 1995 (sections 2.4, 2.5.2.2,
2.6.1, 6.2). OGC, *GeoTIFF Standard* 1.1, OGC 19-008r4, 2019. GDAL, "GTiff -- GeoTIFF File
Format" (the ``TIFFTAG_GDAL_NODATA`` and ``TIFFTAG_GDAL_METADATA`` tags). PROJ, "Geodetic TIFF
grids" and "Resource files" (the geoid grids and ``projsync`` / ``pyproj sync``).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ScenarioError

__all__ = ["DemHeader", "DemGrid", "read_header", "plan_grid", "build_mesh", "sample_crs_xy",
           "INSTALL"]

#: How to install what reading a DEM needs.
INSTALL = 'pip install "hifi[dem]" (tifffile, imagecodecs, pyproj)'

# TIFF tags (GeoTIFF 1.0 section 2.4 and 2.6.1; the GDAL GeoTIFF driver's private tags).
_TAG_PIXEL_SCALE = 33550
_TAG_TIEPOINT = 33922
_TAG_TRANSFORMATION = 34264
_TAG_GEOKEYS = 34735
_TAG_GEO_DOUBLES = 34736
_TAG_GEO_ASCII = 34737
_TAG_GDAL_METADATA = 42112
_TAG_GDAL_NODATA = 42113

# GeoKeys (GeoTIFF 1.0 section 6.2; the same ids in OGC GeoTIFF 1.1).
_KEY_MODEL_TYPE = 1024
_KEY_RASTER_TYPE = 1025
_KEY_GEOGRAPHIC = 2048
_KEY_PROJECTED = 3072
_KEY_VERTICAL = 4096
_KEY_VERTICAL_UNITS = 4099
_USER_DEFINED = 32767
_MODEL_PROJECTED, _MODEL_GEOGRAPHIC, _MODEL_GEOCENTRIC = 1, 2, 3
_PIXEL_IS_AREA, _PIXEL_IS_POINT = 1, 2

#: Linear units a ``VerticalUnitsGeoKey`` may name, EPSG unit code -> metres (EPSG dataset:
#: 9001 metre, 9002 international foot, 9003 US survey foot).
_VERTICAL_UNITS_M = {9001: 1.0, 9002: 0.3048, 9003: 1200.0 / 3937.0}

#: WGS 84 geographic 3D (longitude, latitude, ellipsoidal height): where every sample goes
#: before the ENU frame.
_WGS84_3D = "EPSG:4979"

#: Points along each edge of the raster (and of a crop) that place it in the scene frame: its
#: edges are curves there (a UTM grid turns by the meridian convergence, a geographic one
#: narrows to the pole), so its bounding box comes from a dense outline, not its four corners.
_OUTLINE_POINTS = 65

#: Samples transformed at once while a mesh is built: bounds the temporaries of pyproj and
#: pymap3d (about 20 float64 arrays of a block, 40 MiB) whatever the size of the DEM.
_BLOCK_SAMPLES = 1 << 18

#: Bytes the strip and tile reader asks tifffile to read from the file at once
#: (``TiffPage.segments(buffersize=...)``): bounds the file data held while decoding.
_READ_BUFFER_BYTES = 16 * 2**20


def _error(key: str, value, reason: str) -> ScenarioError:
    """A ScenarioError at the object's ``key`` (the loader adds ``objects[i].`` and the file)."""
    return ScenarioError(reason, key=key, value=value)


def _tifffile():
    try:
        import tifffile
    except ImportError:
        raise ScenarioError(f'mesh = "dem" reads GeoTIFF files with tifffile, which is not installed: {INSTALL}',
                            key="mesh", value="dem") from None
    return tifffile


def _pyproj():
    try:
        import pyproj
    except ImportError:
        raise ScenarioError(f'mesh = "dem" transforms the DEM\'s CRS with pyproj, which is not installed: {INSTALL}',
                            key="mesh", value="dem") from None
    return pyproj


@dataclass(frozen=True)
class DemHeader:
    """What a GeoTIFF DEM's tags say, read without its pixels (:func:`read_header`).

    Attributes
    ----------
    path : str
        The file.
    rows, cols : int
        Raster size.
    dtype : numpy.dtype
        Sample type.
    raster_to_crs : (2, 3) float ndarray
        Affine map of raster coordinates ``(I, J, 1)`` to the CRS's ``(x, y)`` (its units; x
        is easting or longitude).
    sample_offset : float
        Raster coordinate of a sample's point relative to its index: 0.5 for PixelIsArea,
        0 for PixelIsPoint.
    crs_epsg : int
        EPSG code of the horizontal CRS.
    crs_kind : str
        ``"projected"`` or ``"geographic"``.
    vertical_epsg : int or None
        EPSG code of the vertical CRS the file declares, if any.
    vertical_unit_m : float
        Metres per unit of the stored heights (``VerticalUnitsGeoKey``; 1 where absent).
    nodata : float or None
        The no-data value, as the sample type holds it.
    scale, offset : float
        ``height = value x scale + offset`` (``GDAL_METADATA``; 1 and 0 where absent).
    """

    path: str
    rows: int
    cols: int
    dtype: np.dtype
    raster_to_crs: np.ndarray
    sample_offset: float
    crs_epsg: int
    crs_kind: str
    vertical_epsg: int | None
    vertical_unit_m: float
    nodata: float | None
    scale: float
    offset: float


def _geokeys(tags, path) -> dict:
    """The GeoKeyDirectory as ``{key id: value}`` (GeoTIFF 1.0 section 2.4: a header of four
    shorts, then per key its id, the tag holding its value (0: the value is the short itself),
    the count and the offset)."""
    d = [int(v) for v in np.atleast_1d(tags[_TAG_GEOKEYS].value)]
    if len(d) < 4 or len(d) < 4 + 4 * d[3]:
        raise _error("file", path, f"not a valid GeoTIFF: its GeoKeyDirectory tag ({_TAG_GEOKEYS}) holds "
                                   f"{len(d)} values, fewer than its header announces")
    doubles = tags.valueof(_TAG_GEO_DOUBLES)
    text = tags.valueof(_TAG_GEO_ASCII)
    keys = {}
    for k in range(d[3]):
        key_id, location, count, offset = d[4 + 4 * k: 8 + 4 * k]
        if location == 0:
            keys[key_id] = offset
        elif location == _TAG_GEO_DOUBLES and doubles is not None:
            keys[key_id] = tuple(np.atleast_1d(doubles)[offset:offset + count])
        elif location == _TAG_GEO_ASCII and text is not None:
            keys[key_id] = str(text)[offset:offset + count].rstrip("|")
    return keys


def _gdal_scale_offset(tags) -> tuple[float, float]:
    """``(scale, offset)`` of band 1 from the ``GDAL_METADATA`` XML tag (items with role
    ``scale`` / ``offset``), ``(1, 0)`` where absent."""
    text = tags.valueof(_TAG_GDAL_METADATA)
    scale, offset = 1.0, 0.0
    if not text:
        return scale, offset
    try:
        root = ElementTree.fromstring(str(text))
    except ElementTree.ParseError:
        return scale, offset                      # not GDAL's metadata: nothing to apply
    for item in root.iter("Item"):
        role, sample = item.get("role"), item.get("sample", "0")
        if sample != "0" or role not in ("scale", "offset"):
            continue
        try:
            value = float((item.text or "").strip())
        except ValueError:
            continue
        if role == "scale":
            scale = value
        else:
            offset = value
    return scale, offset


def _georeference(tags, path) -> np.ndarray:
    """The (2, 3) affine raster -> CRS map (GeoTIFF 1.0 section 2.6.1)."""
    matrix = tags.valueof(_TAG_TRANSFORMATION)
    tiepoints = tags.valueof(_TAG_TIEPOINT)
    scale = tags.valueof(_TAG_PIXEL_SCALE)
    if matrix is not None:
        m = np.asarray(matrix, dtype=float).reshape(4, 4)
        a = m[:2, [0, 1, 3]].copy()
    elif tiepoints is not None and scale is not None:
        tie = np.asarray(tiepoints, dtype=float).reshape(-1, 6)
        if len(tie) != 1:
            raise _error("file", path, f"georeferenced by {len(tie)} tie points (ground control points), which "
                                       f"need a warp; re-project it to a regular grid first (gdalwarp)")
        i, j, _, x, y, _ = tie[0]
        sx, sy = float(scale[0]), float(scale[1])
        # ModelPixelScale: y grows downward in raster space and upward in model space
        a = np.array([[sx, 0.0, x - i * sx], [0.0, -sy, y + j * sy]])
    else:
        raise _error("file", path, "not georeferenced: no ModelTransformation tag (34264) and no ModelTiepoint "
                                   "(33922) with ModelPixelScale (33550)")
    if not np.all(np.isfinite(a)) or abs(np.linalg.det(a[:, :2])) == 0.0:
        raise _error("file", path, f"its georeference maps the raster to no area (raster -> CRS {a.tolist()})")
    return a


def read_header(path) -> DemHeader:
    """Read a GeoTIFF DEM's tags (not its pixels).

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    DemHeader

    Raises
    ------
    hifi.ScenarioError
        At key ``file``: not found, not a TIFF, more than one band, a sample type that is no
        height, no georeference, no CRS (no GeoKeyDirectory, a user-defined or unknown EPSG
        code, a geocentric model), a codec that is not installed.
    """
    tifffile = _tifffile()
    pyproj = _pyproj()
    path = str(path)
    if not Path(path).is_file():
        raise _error("file", path, f"file not found (looked for {Path(path).resolve()})")
    try:
        tf = tifffile.TiffFile(path)
    except (tifffile.TiffFileError, OSError, ValueError, EOFError) as exc:
        raise _error("file", path, f"cannot be read as a TIFF file ({type(exc).__name__}: {exc})") from None
    with tf:
        if not len(tf.pages):
            raise _error("file", path, "a TIFF file without images")
        page = tf.pages.first
        tags = page.tags
        if _TAG_GEOKEYS not in tags:
            raise _error("file", path, f"a TIFF without a CRS: no GeoKeyDirectory tag ({_TAG_GEOKEYS}), so not a "
                                       f"GeoTIFF; assign one (gdal_translate -a_srs EPSG:...)")
        if page.samplesperpixel != 1:
            raise _error("file", path, f"{page.samplesperpixel} bands: expected one band of heights")
        dtype = np.dtype(page.dtype)
        if dtype.kind not in "iuf":
            raise _error("file", path, f"samples of type {dtype}: expected integer or floating-point heights")
        try:
            if page.compression != 1:
                tifffile.TIFF.DECOMPRESSORS[page.compression]
            if page.predictor != 1:
                tifffile.TIFF.UNPREDICTORS[page.predictor]
        except KeyError as exc:
            raise _error("file", path, f"cannot decode it: {exc.args[0]} ({INSTALL})") from None
        keys = _geokeys(tags, path)
        raster_to_crs = _georeference(tags, path)
        nodata_text = tags.valueof(_TAG_GDAL_NODATA)
        scale, offset = _gdal_scale_offset(tags)
        rows, cols = int(page.shape[0]), int(page.shape[1])

    model = keys.get(_KEY_MODEL_TYPE)
    if model == _MODEL_GEOCENTRIC or model not in (None, _MODEL_PROJECTED, _MODEL_GEOGRAPHIC):
        raise _error("file", path, f"GTModelTypeGeoKey = {model}: expected 1 (projected) or 2 (geographic); "
                                   f"a DEM needs a map grid")
    if model == _MODEL_PROJECTED or (model is None and _KEY_PROJECTED in keys):
        key_id, kind = _KEY_PROJECTED, "projected"
    else:
        key_id, kind = _KEY_GEOGRAPHIC, "geographic"
    code = keys.get(key_id)
    name = "ProjectedCSTypeGeoKey" if kind == "projected" else "GeographicTypeGeoKey"
    if code is None:
        raise _error("file", path, f"a GeoTIFF without a CRS: its GeoKeyDirectory has no {name} ({key_id}); "
                                   f"assign one (gdal_translate -a_srs EPSG:...)")
    if code == _USER_DEFINED:
        raise _error("file", path, f"{name} = 32767: a user-defined CRS, not an EPSG code; re-project the file to "
                                   f"an EPSG CRS (gdalwarp -t_srs EPSG:...)")
    try:
        crs = pyproj.CRS.from_epsg(int(code))
    except pyproj.exceptions.CRSError:
        raise _error("file", path, f"{name} = {code}: not an EPSG CRS code PROJ knows") from None
    if (kind == "projected" and not crs.is_projected) or (kind == "geographic" and not crs.is_geographic):
        raise _error("file", path, f"{name} = {code} is {crs.name!r} ({crs.type_name}), not a {kind} CRS")

    raster_type = keys.get(_KEY_RASTER_TYPE, _PIXEL_IS_AREA)
    if raster_type not in (_PIXEL_IS_AREA, _PIXEL_IS_POINT):
        raise _error("file", path, f"GTRasterTypeGeoKey = {raster_type}: expected 1 (PixelIsArea) or 2 "
                                   f"(PixelIsPoint)")
    vertical = keys.get(_KEY_VERTICAL)            # 32767 (user-defined) is refused unless the object says
    unit_code = keys.get(_KEY_VERTICAL_UNITS, 9001)
    if unit_code not in _VERTICAL_UNITS_M:
        raise _error("file", path, f"VerticalUnitsGeoKey = {unit_code}: expected 9001 (metre), 9002 (foot) or "
                                   f"9003 (US survey foot)")
    nodata = None
    if nodata_text is not None:
        try:
            nodata = float(str(nodata_text).strip().rstrip("\x00"))
        except ValueError:
            raise _error("file", path, f"its GDAL_NODATA tag holds {nodata_text!r}, not a number") from None
        if dtype.kind == "f":
            with np.errstate(over="ignore"):
                nodata = float(np.asarray(nodata).astype(dtype))   # compared as the band's type, as GDAL does
        elif not (np.isfinite(nodata) and np.iinfo(dtype).min <= nodata <= np.iinfo(dtype).max):
            nodata = None                         # no integer sample can hold it
    return DemHeader(path, rows, cols, dtype, raster_to_crs, 0.5 if raster_type == _PIXEL_IS_AREA else 0.0,
                     int(code), kind, None if vertical is None else int(vertical), _VERTICAL_UNITS_M[unit_code],
                     nodata, scale, offset)


def sample_crs_xy(header: DemHeader, cols, rows) -> tuple[np.ndarray, np.ndarray]:
    """CRS coordinates [CRS units] of the samples at raster ``cols``, ``rows`` (broadcast):
    the georeference at raster coordinate ``(col + o, row + o)``, ``o`` the header's
    :attr:`~DemHeader.sample_offset` (module docstring, step 1)."""
    i = np.asarray(cols, dtype=float) + header.sample_offset
    j = np.asarray(rows, dtype=float) + header.sample_offset
    a = header.raster_to_crs
    return a[0, 0] * i + a[0, 1] * j + a[0, 2], a[1, 0] * i + a[1, 1] * j + a[1, 2]


@dataclass(frozen=True)
class DemGrid:
    """The samples a DEM object is made of, chosen before its pixels are read (:func:`plan_grid`).

    Attributes
    ----------
    header : DemHeader
    rows, cols : (n,) int ndarray
        Raster rows and columns used, increasing (every ``k``-th of the window and its last).
    origin : (3,) float
        Latitude [deg], longitude [deg], ellipsoidal height [m] of the scene origin.
    vertical : str
        ``"ellipsoidal"`` or the vertical CRS the heights are in (``"EPSG:5773"``).
    vertical_declared : bool
        Whether the file or the object said which (False: taken as ellipsoidal, with a warning).
    crop_m : (4,) float or None
        ``x_min, y_min, x_max, y_max`` in the scene frame [m].
    extent_m : (4,) float
        The whole DEM's bounding box in the scene frame, ``x_min, y_min, x_max, y_max`` [m].
    spacing_m : (2,) float
        The raster's sample spacing along its columns and rows near the window's centre [m].
    upward : bool
        Whether the raster's column direction turns to its row direction counter-clockwise in
        the scene frame (seen from above); then triangles (r, c), (r, c + 1), (r + 1, c + 1)
        face up.
    transformer : pyproj.Transformer
        From the file's CRS (with the vertical CRS, where one applies) to WGS 84 3D.
    """

    header: DemHeader
    rows: np.ndarray
    cols: np.ndarray
    origin: tuple
    vertical: str
    vertical_declared: bool
    crop_m: tuple | None
    extent_m: tuple
    spacing_m: tuple
    upward: bool
    transformer: object = field(repr=False, compare=False, default=None)

    @property
    def faces(self) -> int:
        """Triangles at most (two per cell; no-data and a crop remove some)."""
        return 2 * (len(self.rows) - 1) * (len(self.cols) - 1)


def _transformer(header: DemHeader, vertical_crs: str | None):
    """``(transformer, vertical, declared)``: a pyproj transformer from the file's CRS (with
    its vertical CRS, where one applies) to WGS 84 3D, always x = easting / longitude first."""
    pyproj = _pyproj()
    from pyproj.transformer import TransformerGroup
    horizontal = pyproj.CRS.from_epsg(header.crs_epsg)
    declared = vertical_crs is not None or header.vertical_epsg is not None
    if vertical_crs is not None:
        key, given = "vertical_crs", vertical_crs
    else:
        key, given = "file", header.vertical_epsg
        if given == _USER_DEFINED:
            raise _error("file", header.path, "VerticalCSTypeGeoKey = 32767: a user-defined vertical CRS; set the "
                                              "object's vertical_crs to its EPSG code, or to 'ellipsoidal'")
    vertical = "ellipsoidal"
    source = horizontal
    if given is not None and given != "ellipsoidal":
        try:
            vcrs = pyproj.CRS.from_user_input(f"EPSG:{given}" if isinstance(given, int) else given)
        except pyproj.exceptions.CRSError:
            raise _error(key, given if key == "vertical_crs" else header.path,
                         f"not a CRS PROJ knows; expected 'ellipsoidal' or a vertical CRS such as 'EPSG:5773' (EGM96 "
                         f"height) or 'EPSG:3855' (EGM2008 height)") from None
        if vcrs.is_geographic and len(vcrs.axis_info) == 3:
            given = "ellipsoidal"                  # a geographic 3D CRS: heights above its ellipsoid
        elif not vcrs.is_vertical:
            raise _error(key, given if key == "vertical_crs" else header.path,
                         f"{vcrs.name!r} is a {vcrs.type_name}, not a vertical CRS; expected 'ellipsoidal' or a "
                         f"vertical CRS such as 'EPSG:5773' (EGM96 height) or 'EPSG:3855' (EGM2008 height)")
        else:
            auth = vcrs.to_authority()
            vertical = f"{auth[0]}:{auth[1]}" if auth else vcrs.name
            source = pyproj.crs.CompoundCRS(f"{horizontal.name} + {vcrs.name}", [horizontal, vcrs])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # pyproj warns of a missing grid: reported below
        try:
            group = TransformerGroup(source, pyproj.CRS(_WGS84_3D), always_xy=True)
        except pyproj.exceptions.ProjError as exc:
            raise _error("file", header.path, f"EPSG:{header.crs_epsg} cannot be transformed to WGS 84 "
                                              f"({exc})") from None
    if not group.transformers:
        raise _error("file", header.path, f"PROJ has no transformation from EPSG:{header.crs_epsg} to WGS 84")
    if vertical != "ellipsoidal" and not group.best_available:
        missing = [g for op in group.unavailable_operations for g in op.grids if not g.available]
        # the grids PROJ's CDN serves (pyproj sync fetches those), else whatever PROJ names
        grids = sorted({g.short_name for g in missing if g.url}) or sorted({g.short_name for g in missing})
        raise _error(key, given if key == "vertical_crs" else header.path,
                     f"the heights are in {vertical} and turning them into WGS 84 ellipsoidal heights needs the geoid "
                     f"grid {' or '.join(grids) or '(unnamed)'}, which PROJ does not have (without it PROJ would leave "
                     f"them unchanged); install it with pyproj sync --file {grids[0] if grids else 'NAME'} (into "
                     f"{pyproj.datadir.get_user_data_dir()}) or set PROJ_NETWORK=ON, or set vertical_crs = "
                     f"'ellipsoidal' to take the heights as they are")
    return group.transformers[0], vertical, declared


def _to_scene(transformer, x, y, z, origin, *, key, path) -> np.ndarray:
    """CRS ``(x, y, z)`` -> scene frame (ENU at ``origin``) [m], (n, 3) float64."""
    import pymap3d
    lon, lat, h = transformer.transform(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                                        np.asarray(z, dtype=float))
    lon, lat, h = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (lon, lat, h))
    bad = ~(np.isfinite(lon) & np.isfinite(lat) & np.isfinite(h) & (np.abs(lat) <= 90.0))
    if np.any(bad):
        k = int(np.argmax(bad))
        raise _error(key, path, f"its CRS coordinates ({float(np.atleast_1d(x)[k]):.10g}, "
                                f"{float(np.atleast_1d(y)[k]):.10g}) cannot be transformed to WGS 84 (PROJ gives "
                                f"longitude {float(lon[k]):.10g}, latitude {float(lat[k]):.10g}): the georeference "
                                f"does not fit the CRS")
    e, n, u = pymap3d.geodetic2enu(lat, lon, h, origin[0], origin[1], origin[2], deg=True)
    return np.column_stack([np.atleast_1d(e), np.atleast_1d(n), np.atleast_1d(u)])


def _outline(count_cols: int, count_rows: int, points: int = _OUTLINE_POINTS):
    """Column and row indices along the edge of a raster of ``count_cols`` x ``count_rows``
    samples, ``points`` per edge at most."""
    c = np.unique(np.linspace(0, count_cols - 1, min(points, count_cols)).round().astype(int))
    r = np.unique(np.linspace(0, count_rows - 1, min(points, count_rows)).round().astype(int))
    cols = np.concatenate([c, np.full(len(r), c[-1]), c[::-1], np.full(len(r), c[0])])
    rows = np.concatenate([np.full(len(c), r[0]), r, np.full(len(c), r[-1]), r[::-1]])
    return cols, rows


def plan_grid(header: DemHeader, origin, resolution_m=None, crop_m=None, vertical_crs=None) -> DemGrid:
    """Choose the samples of a DEM object, from its tags alone (the memory check counts the
    triangles before any pixel is read).

    Parameters
    ----------
    header : DemHeader
    origin : mapping or (3,) float
        The scene origin: ``{lat_deg, lon_deg, height_m}`` or the three values [deg, deg, m].
    resolution_m : float, optional
        Spacing to decimate to [m]: every ``k``-th sample along each raster axis, ``k =
        round(resolution_m / spacing)`` at least 1 (so never finer than the raster), plus the
        last one so the extent is kept. No filtering: the heights are the file's own.
        Default: every sample.
    crop_m : (4,) float, optional
        ``x_min, y_min, x_max, y_max`` in the scene frame [m]: only the samples around it are
        read, and the mesh keeps the triangles whose bounding box meets it (so it covers the
        rectangle where the DEM does, and reaches at most one cell beyond).
    vertical_crs : str, optional
        The heights' vertical CRS where the file does not say or says wrong: ``"ellipsoidal"``
        or a vertical CRS (``"EPSG:5773"``); module docstring, "Heights".

    Returns
    -------
    DemGrid

    Raises
    ------
    hifi.ScenarioError
        At ``file``: a CRS that cannot be transformed to WGS 84, a DEM farther from the scene
        origin than its own extent; at ``crop_m``: an empty rectangle, one outside the DEM or
        one that leaves fewer than 2 x 2 samples; at ``vertical_crs`` (or ``file``): not a
        vertical CRS, or a geoid grid PROJ does not have.
    """
    if isinstance(origin, dict):
        origin = (float(origin["lat_deg"]), float(origin["lon_deg"]), float(origin["height_m"]))
    origin = tuple(float(v) for v in origin)
    if header.cols < 2 or header.rows < 2:
        raise _error("file", header.path, f"{header.cols} x {header.rows} samples; a terrain needs at least 2 x 2")
    transformer, vertical, declared = _transformer(header, vertical_crs)

    # The DEM's place in the scene frame: its outline at the origin's height.
    oc, orow = _outline(header.cols, header.rows)
    ox, oy = sample_crs_xy(header, oc, orow)
    outline = _to_scene(transformer, ox, oy, np.zeros(len(ox)), origin, key="file", path=header.path)
    lo, hi = outline[:, :2].min(axis=0), outline[:, :2].max(axis=0)
    extent = (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))
    size = float(max(hi - lo))
    gap = np.maximum(np.maximum(lo, -hi), 0.0)          # per axis: how far outside the box the origin is
    distance = float(np.hypot(*gap))
    if distance > size:
        raise _error("file", header.path,
                     f"the DEM lies {distance:,.0f} m from the scene origin (lat {origin[0]:g}, lon {origin[1]:g} "
                     f"deg), "
                     f"farther than its own extent ({size:,.0f} m; it covers x {lo[0]:,.0f} .. {hi[0]:,.0f}, y "
                     f"{lo[1]:,.0f} .. {hi[1]:,.0f} m of the scene frame): set [simulation] origin on or near the DEM")

    c0, c1, r0, r1 = 0, header.cols - 1, 0, header.rows - 1
    if crop_m is not None:
        x_min, y_min, x_max, y_max = (float(v) for v in crop_m)
        if not (x_min < x_max and y_min < y_max):
            raise _error("crop_m", list(crop_m), "expected [x_min, y_min, x_max, y_max] with x_min < x_max and "
                                                 "y_min < y_max [m, scene frame]")
        if x_max < lo[0] or x_min > hi[0] or y_max < lo[1] or y_min > hi[1]:
            raise _error("crop_m", list(crop_m), f"lies outside the DEM, which covers x {lo[0]:,.1f} .. {hi[0]:,.1f}, "
                                                 f"y {lo[1]:,.1f} .. {hi[1]:,.1f} m of the scene frame")
        c0, c1, r0, r1 = _crop_window(header, transformer, origin, (x_min, y_min, x_max, y_max))
        if c1 - c0 < 1 or r1 - r0 < 1:
            raise _error("crop_m", list(crop_m), f"leaves {max(c1 - c0 + 1, 0)} x {max(r1 - r0 + 1, 0)} samples of "
                                                 f"the DEM; a terrain needs at least 2 x 2")
        crop_m = (x_min, y_min, x_max, y_max)

    # Sample spacing on the ground near the window's centre [m].
    ci, ri = (c0 + c1) // 2, (r0 + r1) // 2
    cn = ci + 1 if ci + 1 < header.cols else ci - 1
    rn = ri + 1 if ri + 1 < header.rows else ri - 1
    px, py = sample_crs_xy(header, np.array([ci, cn, ci]), np.array([ri, ri, rn]))
    p = _to_scene(transformer, px, py, np.zeros(3), origin, key="file", path=header.path)
    step_col, step_row = p[1, :2] - p[0, :2], p[2, :2] - p[0, :2]
    spacing = (float(np.hypot(*step_col)), float(np.hypot(*step_row)))
    # the neighbours may lie before the centre (at the raster's last row or column)
    upward = bool((step_col[0] * step_row[1] - step_col[1] * step_row[0]) * (cn - ci) * (rn - ri) > 0)

    def take(first, last, spacing_m):
        step = 1 if resolution_m is None or spacing_m <= 0 else max(1, int(round(float(resolution_m) / spacing_m)))
        idx = np.arange(first, last + 1, step)
        return idx if idx[-1] == last else np.append(idx, last)

    return DemGrid(header, take(r0, r1, spacing[1]), take(c0, c1, spacing[0]), origin, vertical, declared, crop_m,
                   extent, spacing, upward, transformer)


def _crop_window(header: DemHeader, transformer, origin, crop) -> tuple[int, int, int, int]:
    """Raster columns and rows ``(c0, c1, r0, r1)`` (inclusive, clamped to the raster) whose
    samples can fall in the scene-frame rectangle ``crop``: its dense outline taken to raster
    coordinates, with a margin of one sample."""
    import pymap3d
    x_min, y_min, x_max, y_max = crop
    t = np.linspace(0.0, 1.0, _OUTLINE_POINTS)
    ex = np.concatenate([x_min + (x_max - x_min) * t, np.full_like(t, x_max), x_max - (x_max - x_min) * t,
                         np.full_like(t, x_min)])
    ny = np.concatenate([np.full_like(t, y_min), y_min + (y_max - y_min) * t, np.full_like(t, y_max),
                         y_max - (y_max - y_min) * t])
    lat, lon, h = pymap3d.enu2geodetic(ex, ny, np.zeros_like(ex), origin[0], origin[1], origin[2], deg=True)
    x, y, _ = transformer.transform(lon, lat, h, direction="INVERSE")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if not np.any(ok):
        return 0, -1, 0, -1
    a = header.raster_to_crs
    inv = np.linalg.inv(a[:, :2])
    ij = (inv @ (np.stack([x[ok], y[ok]]) - a[:, 2:3])) - header.sample_offset
    c0 = max(int(np.floor(ij[0].min())) - 1, 0)
    c1 = min(int(np.ceil(ij[0].max())) + 1, header.cols - 1)
    r0 = max(int(np.floor(ij[1].min())) - 1, 0)
    r1 = min(int(np.ceil(ij[1].max())) + 1, header.rows - 1)
    return c0, c1, r0, r1


def _read_samples(header: DemHeader, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The samples at ``rows`` x ``cols`` as float64, NaN where the file has no data (missing
    strips or tiles); the file is decoded one strip or tile at a time and only the samples
    used are kept."""
    tifffile = _tifffile()
    out = np.full((len(rows), len(cols)), np.nan)
    with tifffile.TiffFile(header.path) as tf:
        page = tf.pages.first
        for data, index, shape in page.segments(buffersize=_READ_BUFFER_BYTES):
            if data is None:
                continue
            top, left = int(index[2]), int(index[3])
            a, b = np.searchsorted(rows, [top, top + int(shape[1])])
            c, d = np.searchsorted(cols, [left, left + int(shape[2])])
            if a == b or c == d:
                continue
            out[a:b, c:d] = data[0, :, :, 0][np.ix_(rows[a:b] - top, cols[c:d] - left)]
    return out


def build_mesh(grid: DemGrid):
    """The terrain of a planned DEM in the scene frame (module docstring).

    Returns
    -------
    trimesh.Trimesh
        Vertices (float64, scene frame [m]) of the samples that hold heights and belong to a
        kept triangle, in raster order (row by row); two triangles per cell, corners (r, c),
        (r, c + 1), (r + 1, c + 1) and (r, c), (r + 1, c + 1), (r + 1, c) of the grid's rows and
        columns, wound so that their normals point up.

    Raises
    ------
    hifi.ScenarioError
        At ``crop_m`` (or ``file``) when no triangle is left: every cell there has a no-data
        corner.

    Notes
    -----
    Built in blocks of :data:`_BLOCK_SAMPLES` samples, so that the transformations'
    temporaries do not grow with the DEM: at its peak the build holds the samples, the
    vertices and the triangles (about 60 B per triangle) besides one block.
    """
    import trimesh
    header = grid.header
    rows, cols = grid.rows, grid.cols
    values = _read_samples(header, rows, cols)
    valid = np.isfinite(values)
    if header.nodata is not None and np.isfinite(header.nodata):
        valid &= values != header.nodata
    flat = np.flatnonzero(valid)
    points = np.empty((len(flat), 3))
    unit = header.vertical_unit_m if grid.vertical == "ellipsoidal" else 1.0   # PROJ converts a vertical CRS's unit
    for a in range(0, len(flat), _BLOCK_SAMPLES):
        k = flat[a:a + _BLOCK_SAMPLES]
        r, c = np.divmod(k, len(cols))
        x, y = sample_crs_xy(header, cols[c], rows[r])
        z = (values.ravel()[k] * header.scale + header.offset) * unit
        points[a:a + len(k)] = _to_scene(grid.transformer, x, y, z, grid.origin, key="file", path=header.path)
    del values, flat

    index = np.full(valid.shape, -1, dtype=np.int64)
    index[valid] = np.arange(len(points))
    # cell corners (r, c), (r, c + 1), (r + 1, c + 1), (r + 1, c)
    corners = (index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1])
    del index
    ok = [np.all([corners[i] >= 0 for i in tri], axis=0) for tri in ((0, 1, 2), (0, 2, 3))]
    # normals up: a north-up raster's rows run south, which reverses its handedness
    order = ((0, 1, 2), (0, 2, 3)) if grid.upward else ((0, 2, 1), (0, 3, 2))
    faces = np.empty((int(ok[0].sum() + ok[1].sum()), 3), dtype=np.int64)
    start = 0
    for tri, keep in zip(order, ok):
        n = int(keep.sum())
        for j, i in enumerate(tri):
            faces[start:start + n, j] = corners[i][keep]
        start += n
    del corners, ok
    if grid.crop_m is not None and len(faces):
        x_min, y_min, x_max, y_max = grid.crop_m
        keep = np.ones(len(faces), dtype=bool)
        for axis, lo, hi in ((0, x_min, x_max), (1, y_min, y_max)):   # the triangle's box meets the rectangle
            coord = points[:, axis][faces]
            keep &= (coord.max(axis=1) >= lo) & (coord.min(axis=1) <= hi)
        faces = faces[keep]
    if not len(faces):
        key, value = ("crop_m", list(grid.crop_m)) if grid.crop_m is not None else ("file", header.path)
        raise _error(key, value, f"no triangle: every cell of the DEM {'inside the crop ' if grid.crop_m else ''}has "
                                 f"a no-data corner")
    used = np.zeros(len(points), dtype=bool)
    used[faces.ravel()] = True
    if not used.all():                             # isolated samples, samples outside the crop
        remap = np.cumsum(used) - 1
        faces = remap[faces]
        points = points[used]
    return trimesh.Trimesh(points, faces, process=False)
