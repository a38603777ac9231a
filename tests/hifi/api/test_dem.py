"""Terrain from a GeoTIFF DEM (hifi.api.dem, the ``dem`` mesh generator).

Every GeoTIFF is written here with tifffile and the GeoTIFF tags (ModelPixelScale 33550,
ModelTiepoint 33922, ModelTransformation 34264, GeoKeyDirectory 34735, GDAL_NODATA 42113,
GDAL_METADATA 42112), with heights known in closed form. Expected vertices come from an
independent route: pyproj straight from the DEM's CRS to ECEF (EPSG:4978), then the ECEF -> ENU
rotation written out here (Groves, Principles of GNSS, Inertial, and Multisensor Integrated
Navigation Systems, 2nd ed., 2013, eq. 2.150), where hifi goes CRS -> WGS 84 geodetic (pyproj)
-> ENU (pymap3d).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

tifffile = pytest.importorskip("tifffile")
pyproj = pytest.importorskip("pyproj")

import hifi  # noqa: E402
import hifi.api.estimate as est_mod  # noqa: E402
from hifi.api import dem, meshes  # noqa: E402
from hifi.cli import main  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402

#: The scene origin of the tests: Munich, in UTM zone 32N 2.3 deg east of its central meridian,
#: so the UTM grid turns by a meridian convergence of about 1.7 deg against the ENU axes.
ORIGIN = {"lat_deg": 48.137, "lon_deg": 11.575, "height_m": 520.0}
UTM = 32632
#: float64 rounding of coordinates of some hundred metres through two routes of a few
#: transformations each: far below a micrometre.
ATOL_M = 1e-6


def geokey_directory(keys) -> list:
    """GeoKeyDirectory shorts (GeoTIFF 1.0 section 2.4): version 1.1.0, then per key (id,
    location 0, count 1, value), sorted by id."""
    keys = sorted(keys)
    return [1, 1, 0, len(keys)] + [v for k, value in keys for v in (k, 0, 1, value)]


def write_geotiff(path, heights, *, epsg=UTM, tiepoint=None, scale=None, transformation=None, raster_type=1,
                  model_type=None, nodata=None, vertical_epsg=None, gdal_metadata=None, keys=None, **imwrite):
    """A one-band GeoTIFF of ``heights`` (rows north to south) with the given georeference."""
    if keys is None:
        if model_type is None:
            model_type = 2 if pyproj.CRS.from_epsg(epsg).is_geographic else 1
        keys = [(1024, model_type), (1025, raster_type), (2048 if model_type == 2 else 3072, epsg)]
        if vertical_epsg is not None:
            keys.append((4096, vertical_epsg))
    d = geokey_directory(keys)
    tags = [(34735, "H", len(d), d, True)]
    if transformation is not None:
        tags.append((34264, "d", 16, [float(v) for v in np.ravel(transformation)], True))
    if tiepoint is not None:
        tags.append((33922, "d", 6, [float(v) for v in tiepoint], True))
    if scale is not None:
        tags.append((33550, "d", 3, [float(scale[0]), float(scale[1]), 0.0], True))
    if nodata is not None:
        tags.append((42113, "s", 0, str(nodata), True))
    if gdal_metadata is not None:
        tags.append((42112, "s", 0, gdal_metadata, True))
    tifffile.imwrite(path, heights, extratags=tags, **imwrite)
    return path


def utm_of(lat, lon):
    """UTM 32N easting and northing of a WGS 84 point (pyproj)."""
    return pyproj.Transformer.from_crs("EPSG:4326", f"EPSG:{UTM}", always_xy=True).transform(lon, lat)


def scene_expected(crs, x, y, h, origin=ORIGIN) -> np.ndarray:
    """Scene-frame (ENU at ``origin``) positions of CRS points ``x, y`` at ellipsoidal height
    ``h``: pyproj CRS -> ECEF, and the ECEF -> ENU rotation at the origin."""
    to_ecef = pyproj.Transformer.from_crs(crs, "EPSG:4978", always_xy=True)
    p = np.stack(to_ecef.transform(np.ravel(x), np.ravel(y), np.ravel(h)), axis=-1)
    lat, lon = np.radians(origin["lat_deg"]), np.radians(origin["lon_deg"])
    p0 = np.array(pyproj.Transformer.from_crs("EPSG:4979", "EPSG:4978", always_xy=True)
                  .transform(origin["lon_deg"], origin["lat_deg"], origin["height_m"]))
    rot = np.array([[-np.sin(lon), np.cos(lon), 0.0],
                    [-np.sin(lat) * np.cos(lon), -np.sin(lat) * np.sin(lon), np.cos(lat)],
                    [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)]])
    return (p - p0) @ rot.T


def slope_and_bump(e, n, e0, n0):
    """Heights [m]: a plane rising 2 % east and falling 1 % north from 520 m at (e0, n0), and a
    Gaussian bump of 3 m and sigma 20 m 30 m east of it."""
    return 520.0 + 0.02 * (e - e0) - 0.01 * (n - n0) + 3.0 * np.exp(-((e - e0 - 30.0) ** 2 + (n - n0) ** 2) / 800.0)


def utm_dem(path, *, rows=40, cols=50, spacing=5.0, raster_type=1, **kw):
    """A UTM 32N DEM centred on the origin: (rows, cols) float32 samples of
    :func:`slope_and_bump`, PixelIsArea (or ``raster_type``). Returns its path, the samples'
    eastings and northings (closed form from the tie point and the pixel scale) and heights."""
    e0, n0 = utm_of(ORIGIN["lat_deg"], ORIGIN["lon_deg"])
    west, north = round(e0) - cols * spacing / 2, round(n0) + rows * spacing / 2
    r, c = np.mgrid[0:rows, 0:cols]
    half = 0.5 if raster_type == 1 else 0.0      # the sample's point in raster space
    e = west + (c + half) * spacing
    n = north - (r + half) * spacing
    h = slope_and_bump(e, n, e0, n0).astype(np.float32)
    write_geotiff(path, h, tiepoint=(0, 0, 0, west, north, 0), scale=(spacing, spacing), raster_type=raster_type,
                  **kw)
    return path, e, n, h.astype(float)


def build(path, origin=ORIGIN, **params):
    return meshes.build_generator("dem", {"file": str(path), "origin": origin, **params})


# -- geometry --------------------------------------------------------------------------------

def test_a_utm_dem_is_its_samples_in_the_scene_frame(tmp_path):
    path, e, n, h = utm_dem(tmp_path / "utm.tif")
    mesh = build(path)
    want = scene_expected(f"EPSG:{UTM}", e, n, h)          # raster order, row by row
    assert mesh.vertices.dtype == np.float64 and mesh.vertices.shape == want.shape
    np.testing.assert_allclose(mesh.vertices, want, rtol=0, atol=ATOL_M)
    # two triangles per cell (40 x 50 samples), all facing up
    assert len(mesh.faces) == 2 * 39 * 49 == meshes.generator_faces("dem", {"file": str(path), "origin": ORIGIN})
    assert np.all(mesh.face_normals[:, 2] > 0.99)
    # the surface under the origin is at the plane's 520 m there (closed form: the bump adds
    # 3 exp(-900/800) m), so 0.97 m above the origin's 520 m; the mesh interpolates it linearly
    # between posts 5 m apart (bump curvature at most 3/400 /m, cell diagonal 7.1 m: error
    # below 3/400 x 50 / 2 = 0.19 m)
    under = mesh.ray.intersects_location([[0.0, 0.0, 50.0]], [[0.0, 0.0, -1.0]])[0]
    assert abs(under[0, 2] - 3.0 * np.exp(-900.0 / 800.0)) < 0.19


def test_a_geographic_dem_in_epsg_4326(tmp_path):
    # 0.0001 deg posts (7.4 m east, 11.1 m north at 48 deg), PixelIsPoint: sample (i, j) at
    # the tie point plus i, j steps exactly
    lon0, lat0, step = 11.57, 48.1395, 1e-4
    r, c = np.mgrid[0:30, 0:40]
    lon, lat = lon0 + c * step, lat0 - r * step
    h = (515.0 + 200.0 * (lon - lon0) + 5.0 * np.sin(r / 5.0)).astype(np.float32)
    path = write_geotiff(tmp_path / "geo.tif", h, epsg=4326, tiepoint=(0, 0, 0, lon0, lat0, 0), scale=(step, step),
                         raster_type=2)
    mesh = build(path)
    np.testing.assert_allclose(mesh.vertices, scene_expected("EPSG:4326", lon, lat, h.astype(float)), rtol=0,
                               atol=ATOL_M)
    assert len(mesh.faces) == 2 * 29 * 39 and np.all(mesh.face_normals[:, 2] > 0.9)


def test_a_model_transformation_georeferences_like_tiepoint_and_scale(tmp_path):
    # ModelTransformation [[sx, 0, 0, x0], [0, -sy, 0, y0], [0, 0, 0, 0], [0, 0, 0, 1]] is the
    # tie point (0, 0) -> (x0, y0) with pixel scale (sx, sy) (GeoTIFF 1.0 section 2.6.1)
    path, e, n, h = utm_dem(tmp_path / "tie.tif")
    west, north = e[0, 0] - 2.5, n[0, 0] + 2.5
    m = [[5.0, 0, 0, west], [0, -5.0, 0, north], [0, 0, 0, 0], [0, 0, 0, 1]]
    other = write_geotiff(tmp_path / "matrix.tif", h.astype(np.float32), transformation=m)
    np.testing.assert_array_equal(build(other).vertices, build(path).vertices)


def test_pixel_is_point_is_half_a_pixel_from_pixel_is_area(tmp_path):
    # Same tie point: PixelIsArea puts sample (i, j) at raster (i + 1/2, j + 1/2), PixelIsPoint
    # at (i, j), so the area file's mesh lies half a pixel east and south of the point file's.
    area, e, n, h = utm_dem(tmp_path / "area.tif", raster_type=1)
    point, e_p, n_p, h_p = utm_dem(tmp_path / "point.tif", raster_type=2)
    np.testing.assert_allclose(e - e_p, 2.5) and np.testing.assert_allclose(n_p - n, 2.5)   # closed form
    np.testing.assert_allclose(build(area).vertices, scene_expected(f"EPSG:{UTM}", e, n, h), rtol=0, atol=ATOL_M)
    np.testing.assert_allclose(build(point).vertices, scene_expected(f"EPSG:{UTM}", e_p, n_p, h_p), rtol=0,
                               atol=ATOL_M)
    # a PixelIsPoint file whose tie point is moved half a pixel into the raster is the area file
    west, north = e[0, 0] - 2.5, n[0, 0] + 2.5
    moved = write_geotiff(tmp_path / "moved.tif", h.astype(np.float32), tiepoint=(0, 0, 0, west + 2.5, north - 2.5, 0),
                          scale=(5.0, 5.0), raster_type=2)
    np.testing.assert_allclose(build(moved).vertices, build(area).vertices, rtol=0, atol=ATOL_M)


@pytest.mark.parametrize("dtype, nodata", [(np.int16, -32768), (np.float32, "nan"), (np.float32, -9999.9)])
def test_no_data_samples_leave_holes(tmp_path, dtype, nodata):
    rows, cols = 12, 15
    r, c = np.mgrid[0:rows, 0:cols]
    h = (520 + c - r).astype(dtype)
    hole = np.zeros((rows, cols), dtype=bool)
    hole[3:6, 4:9] = True                      # a 3 x 5 block
    hole[10, 2] = True                         # one sample
    h[hole] = np.float32("nan") if nodata == "nan" else dtype(nodata)
    e0, n0 = utm_of(ORIGIN["lat_deg"], ORIGIN["lon_deg"])
    path = write_geotiff(tmp_path / "holes.tif", h, tiepoint=(0, 0, 0, round(e0) - 20, round(n0) + 15, 0),
                         scale=(2.0, 2.0), nodata=nodata)
    mesh = build(path)
    # closed form: a triangle is kept when its three corners hold heights
    ok = ~hole
    tri1 = ok[:-1, :-1] & ok[:-1, 1:] & ok[1:, 1:]
    tri2 = ok[:-1, :-1] & ok[1:, 1:] & ok[1:, :-1]
    assert len(mesh.faces) == tri1.sum() + tri2.sum() < 2 * (rows - 1) * (cols - 1)
    used = np.zeros((rows, cols), dtype=bool)
    for tri, keep in (((0, 1, 2), tri1), ((0, 2, 3), tri2)):
        for i in tri:
            corner = [(slice(0, -1), slice(0, -1)), (slice(0, -1), slice(1, None)), (slice(1, None), slice(1, None)),
                      (slice(1, None), slice(0, -1))][i]
            used[corner] |= keep
    e = round(e0) - 20 + (c + 0.5) * 2.0
    n = round(n0) + 15 - (r + 0.5) * 2.0
    want = scene_expected(f"EPSG:{UTM}", e[used], n[used], (520 + c - r)[used].astype(float))
    np.testing.assert_allclose(mesh.vertices, want, rtol=0, atol=ATOL_M)


def test_resolution_decimates_to_every_kth_sample_and_the_last(tmp_path):
    path, e, n, h = utm_dem(tmp_path / "utm.tif", rows=40, cols=50)
    mesh = build(path, resolution_m=15.0)          # 5 m posts: every 3rd (round(15 / 5.0003))
    rows = np.arange(0, 40, 3)                      # 0 .. 39: the last row is a 3rd one
    cols = np.r_[np.arange(0, 50, 3), 49]           # 0 .. 48, then the last column
    sub = np.ix_(rows, cols)
    np.testing.assert_allclose(mesh.vertices, scene_expected(f"EPSG:{UTM}", e[sub], n[sub], h[sub]), rtol=0,
                               atol=ATOL_M)
    assert len(mesh.faces) == 2 * (len(rows) - 1) * (len(cols) - 1)
    # finer than the raster: every sample
    assert len(build(path, resolution_m=0.5).vertices) == 40 * 50


def test_crop_keeps_the_terrain_around_the_scene(tmp_path):
    path, e, n, h = utm_dem(tmp_path / "utm.tif", rows=60, cols=60)
    crop = (-40.0, -25.0, 30.0, 45.0)
    mesh = build(path, crop_m=crop)
    full = build(path)
    assert 0 < len(mesh.faces) < len(full.faces) / 2
    # its vertices are samples of the DEM (raster order kept)
    want = scene_expected(f"EPSG:{UTM}", e, n, h)
    d = np.linalg.norm(mesh.vertices[:, None, :] - want[None, :, :], axis=2).min(axis=1)
    assert d.max() < ATOL_M
    # every triangle's box meets the rectangle, so nothing reaches more than a cell (5 m, 7.1 m
    # diagonal) beyond it
    lo, hi = mesh.vertices[:, :2].min(axis=0), mesh.vertices[:, :2].max(axis=0)
    assert np.all(lo >= np.array(crop[:2]) - 7.1) and np.all(hi <= np.array(crop[2:]) + 7.1)
    # and the rectangle is covered: vertical rays over a 1 m grid inside it all hit the mesh
    # (trimesh's ray test, independent of hifi's caster)
    gx, gy = np.meshgrid(np.arange(crop[0], crop[2] + 0.5, 1.0), np.arange(crop[1], crop[3] + 0.5, 1.0))
    origins = np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, 100.0)])
    hit = mesh.ray.intersects_any(origins, np.tile([0.0, 0.0, -1.0], (len(origins), 1)))
    assert hit.all()
    # a crop wider than the DEM keeps all of it
    assert len(build(path, crop_m=(-1e4, -1e4, 1e4, 1e4)).faces) == len(full.faces)


def test_gdal_scale_offset_and_compressed_tiles(tmp_path):
    pytest.importorskip("imagecodecs")       # LZW and the floating-point predictor
    path, e, n, h = utm_dem(tmp_path / "plain.tif", rows=37, cols=45)
    packed = np.round((h - 400.0) / 0.01).astype(np.int32)            # centimetres above 400 m
    meta = ('<GDALMetadata><Item name="OFFSET" sample="0" role="offset">400</Item>'
            '<Item name="SCALE" sample="0" role="scale">0.01</Item></GDALMetadata>')
    west, north = e[0, 0] - 2.5, n[0, 0] + 2.5
    lzw = write_geotiff(tmp_path / "lzw.tif", packed, tiepoint=(0, 0, 0, west, north, 0), scale=(5.0, 5.0),
                        gdal_metadata=meta, compression="lzw", predictor=True, tile=(16, 16))
    np.testing.assert_allclose(build(lzw).vertices, scene_expected(f"EPSG:{UTM}", e, n, packed * 0.01 + 400.0),
                               rtol=0, atol=ATOL_M)
    floats = write_geotiff(tmp_path / "float.tif", h.astype(np.float32), tiepoint=(0, 0, 0, west, north, 0),
                           scale=(5.0, 5.0), compression="zlib", predictor=3, rowsperstrip=5)
    np.testing.assert_array_equal(build(floats).vertices, build(path).vertices)


# -- heights: ellipsoidal or above a geoid ---------------------------------------------------

def _scenario(path, **obj):
    return {"simulation": {"duration_s": 0.1, "origin": dict(ORIGIN)},
            "objects": [{"name": "ground", "mesh": "dem", "file": str(path), **obj}]}


def test_undeclared_heights_are_ellipsoidal_with_a_warning(tmp_path):
    path, *_ = utm_dem(tmp_path / "utm.tif")
    with pytest.warns(hifi.ScenarioWarning, match=r"objects\[0\]\.file = .*no VerticalCSTypeGeoKey.*ellipsoidal"):
        hifi.Simulation.from_dict(_scenario(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", hifi.ScenarioWarning)
        hifi.Simulation.from_dict(_scenario(path, vertical_crs="ellipsoidal"))


def test_geoid_heights_without_the_grid_are_refused(tmp_path):
    from pyproj.transformer import TransformerGroup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if TransformerGroup("EPSG:32632+3855", "EPSG:4979").best_available:
            pytest.skip("this PROJ has the EGM2008 grid; the refusal needs it missing")
    path, *_ = utm_dem(tmp_path / "utm.tif")
    with pytest.raises(hifi.ScenarioError, match=r"objects\[0\]\.vertical_crs = 'EPSG:3855': the heights are in "
                                                 r"EPSG:3855 .* needs the geoid grid us_nga_egm08_25\.tif"):
        hifi.Simulation.from_dict(_scenario(path, vertical_crs="EPSG:3855"))
    # declared in the file (VerticalCSTypeGeoKey) alike, reported at the file
    declared, *_ = utm_dem(tmp_path / "declared.tif", vertical_epsg=3855)
    with pytest.raises(hifi.ScenarioError, match=r"objects\[0\]\.file = .*needs the geoid grid"):
        hifi.Simulation.from_dict(_scenario(declared))


_GEOID_CHILD = """
import json, sys, warnings
import numpy as np, pyproj
pyproj.datadir.append_data_dir(sys.argv[1])
from hifi.api import meshes
origin = json.loads(sys.argv[3])
mesh = meshes.build_generator("dem", {"file": sys.argv[2], "origin": origin, "vertical_crs": "EPSG:5773"})
print(json.dumps(mesh.vertices.tolist()))
"""


def test_geoid_heights_become_ellipsoidal_with_the_grid(tmp_path):
    # A stand-in for the EGM96 grid (us_nga_egm96_15.tif, the name PROJ looks for): a
    # geographic PixelIsPoint GeoTIFF of undulations N = 40 + 0.5 (lat - 45) + 0.2 (lon - 15) m,
    # linear so PROJ's bilinear interpolation is exact. EGM96 height H is h - N, so each vertex
    # must be at h = H + N (closed form). Run in a child: the PROJ search path is global.
    from pyproj.transformer import TransformerGroup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if TransformerGroup("EPSG:32632+5773", "EPSG:4979").best_available:
            pytest.skip("this PROJ has the real EGM96 grid, which it would use instead of the stand-in")
    grids = tmp_path / "grids"
    grids.mkdir()
    lon, lat = np.arange(0.0, 31.0), np.arange(60.0, 29.0, -1.0)
    undulation = 40.0 + 0.5 * (lat[:, None] - 45.0) + 0.2 * (lon[None, :] - 15.0)
    write_geotiff(grids / "us_nga_egm96_15.tif", undulation.astype(np.float32), epsg=4326,
                  tiepoint=(0, 0, 0, 0.0, 60.0, 0), scale=(1.0, 1.0), raster_type=2)
    path, e, n, h = utm_dem(tmp_path / "utm.tif", rows=10, cols=12)
    out = subprocess.run([sys.executable, "-c", _GEOID_CHILD, str(grids), str(path), json.dumps(ORIGIN)],
                         capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    got = np.array(json.loads(out.stdout))
    lon_s, lat_s = pyproj.Transformer.from_crs(f"EPSG:{UTM}", "EPSG:4326", always_xy=True).transform(e, n)
    n_s = 40.0 + 0.5 * (lat_s - 45.0) + 0.2 * (lon_s - 15.0)
    # the grid holds float32 undulations: 4 um of rounding at 43 m
    np.testing.assert_allclose(got, scene_expected(f"EPSG:{UTM}", e, n, h + n_s), rtol=0, atol=1e-5)


# -- a whole run -------------------------------------------------------------------------------

LIDAR_OVER_DEM = """\
[simulation]
duration_s = 0.1
origin = {{ lat_deg = {lat}, lon_deg = {lon}, height_m = {height} }}

[[objects]]
name = "ground"
mesh = "dem"
file = "ground.tif"
vertical_crs = "ellipsoidal"
crop_m = [-60, -60, 60, 60]

[[sensors]]
name = "lidar"
model = "vlp16"
position_m = [0, 0, 2.5]
[sensors.params]
noise_sigma_m = 0.0
"""


def test_a_lidar_run_over_a_dem_returns_points_on_its_surface(tmp_path):
    # 1 m posts of slope_and_bump over 200 m; the VLP-16 2.5 m above the origin. Each true hit
    # point, taken back to WGS 84 (pymap3d) and UTM (pyproj), must lie on the closed-form
    # surface within the linear interpolation error between posts: the bump's curvature is at
    # most 3 / 20^2 /m, so over a cell of diagonal sqrt(2) m the error is below
    # 3/400 x 2 / 2 = 7.5 mm; 1 mm more for Embree's float32.
    import pymap3d
    import xarray as xr
    path, *_ = utm_dem(tmp_path / "ground.tif", rows=200, cols=200, spacing=1.0)
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(LIDAR_OVER_DEM.format(lat=ORIGIN["lat_deg"], lon=ORIGIN["lon_deg"], height=ORIGIN["height_m"]))
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out)]) == 0
    ds = xr.open_dataset(out / "lidar.nc")
    hit = ds.detected.values & (ds.object_id.values == 0)
    x, y, z = (ds[v].values[hit] for v in ("x", "y", "z"))
    assert hit.sum() > 5000
    lat, lon, h = pymap3d.enu2geodetic(x, y, z, ORIGIN["lat_deg"], ORIGIN["lon_deg"], ORIGIN["height_m"])
    e, n = utm_of(lat, lon)
    e0, n0 = utm_of(ORIGIN["lat_deg"], ORIGIN["lon_deg"])
    assert np.abs(h - slope_and_bump(e, n, e0, n0)).max() < 3.0 / 400.0 + 0.001


# -- bad input ---------------------------------------------------------------------------------

def _bad_file(tmp_path, case):
    """A DEM file that is wrong in the way ``case`` names (the scenario's ``file``)."""
    p = tmp_path / "bad.tif"
    e0, n0 = utm_of(ORIGIN["lat_deg"], ORIGIN["lon_deg"])
    tie = (0, 0, 0, round(e0) - 50, round(n0) + 50, 0)
    h = np.full((20, 20), 520.0, dtype=np.float32)
    if case == "text":
        p.write_text("elevation,model\n1,2\n")
    elif case == "plain_tiff":
        tifffile.imwrite(p, h)
    elif case == "no_crs_key":
        write_geotiff(p, h, tiepoint=tie, scale=(5, 5), keys=[(1024, 1), (1025, 1)])
    elif case == "user_defined":
        write_geotiff(p, h, tiepoint=tie, scale=(5, 5), keys=[(1024, 1), (3072, 32767)])
    elif case == "unknown_epsg":
        write_geotiff(p, h, tiepoint=tie, scale=(5, 5), keys=[(1024, 1), (3072, 12345)])
    elif case == "vertical_as_projected":
        write_geotiff(p, h, tiepoint=tie, scale=(5, 5), keys=[(1024, 1), (3072, 5773)])
    elif case == "not_georeferenced":
        write_geotiff(p, h)
    elif case == "not_transformable":
        write_geotiff(p, h, tiepoint=(0, 0, 0, 1e9, 5e6, 0), scale=(5, 5))
    elif case == "latitude_beyond_90":
        write_geotiff(p, h, epsg=4326, tiepoint=(0, 0, 0, 11.5, 95.0, 0), scale=(1e-4, 1e-4), raster_type=2)
    elif case == "rgb":
        write_geotiff(p, np.zeros((20, 20, 3), dtype=np.uint8), tiepoint=tie, scale=(5, 5), photometric="rgb")
    elif case == "one_row":
        write_geotiff(p, h[:1], tiepoint=tie, scale=(5, 5))
    elif case == "far_away":
        e_far, n_far = utm_of(ORIGIN["lat_deg"] + 1.0, ORIGIN["lon_deg"])       # 111 km north
        write_geotiff(p, h, tiepoint=(0, 0, 0, e_far - 50, n_far + 50, 0), scale=(5, 5))
    return p


@pytest.mark.parametrize("case, key, message", [
    ("missing", "file", r"file not found \(looked for .*missing\.tif\)"),
    ("text", "file", r"cannot be read as a TIFF file"),
    ("plain_tiff", "file", r"a TIFF without a CRS: no GeoKeyDirectory tag \(34735\)"),
    ("no_crs_key", "file", r"a GeoTIFF without a CRS: its GeoKeyDirectory has no ProjectedCSTypeGeoKey \(3072\)"),
    ("user_defined", "file", r"ProjectedCSTypeGeoKey = 32767: a user-defined CRS"),
    ("unknown_epsg", "file", r"ProjectedCSTypeGeoKey = 12345: not an EPSG CRS code PROJ knows"),
    ("vertical_as_projected", "file", r"ProjectedCSTypeGeoKey = 5773 is 'EGM96 height' \(Vertical CRS\), not a "
                                      r"projected CRS"),
    ("not_georeferenced", "file", r"not georeferenced: no ModelTransformation tag"),
    ("not_transformable", "file", r"its CRS coordinates \(.*\) cannot be transformed to WGS 84"),
    ("latitude_beyond_90", "file", r"cannot be transformed to WGS 84 \(PROJ gives longitude .*, latitude 95"),
    ("rgb", "file", r"3 bands: expected one band of heights"),
    ("one_row", "file", r"20 x 1 samples; a terrain needs at least 2 x 2"),
    ("far_away", "file", r"the DEM lies 111,\d{3} m from the scene origin \(lat 48.137, lon 11.575 deg\), farther "
                         r"than its own extent \(9\d m"),
])
def test_a_bad_dem_file_is_one_line_and_exit_2(tmp_path, capsys, case, key, message):
    path = tmp_path / "missing.tif" if case == "missing" else _bad_file(tmp_path, case)
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f"""[simulation]
duration_s = 0.1
origin = {{ lat_deg = {ORIGIN['lat_deg']}, lon_deg = {ORIGIN['lon_deg']}, height_m = {ORIGIN['height_m']} }}

[[objects]]
name = "ground"
mesh = "dem"
file = "{path.name}"
vertical_crs = "ellipsoidal"
""")
    assert main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    head = f"hifi: error: {scenario}:8: objects[0].file = '{path.name}': "
    assert err.startswith(head), err
    import re
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("crop, message", [
    ([10, -5, -10, 5], r"expected \[x_min, y_min, x_max, y_max\] with x_min < x_max and y_min < y_max"),
    ([500, 500, 600, 600],
     r"lies outside the DEM, which covers x -12\d\.\d \.\. 12\d\.\d, y -10\d\.\d \.\. 10\d\.\d m"),
])
def test_a_bad_crop_is_named(tmp_path, crop, message):
    path, *_ = utm_dem(tmp_path / "utm.tif")         # 250 m x 200 m, turned 1.7 deg
    with pytest.raises(hifi.ScenarioError, match=r"objects\[0\]\.crop_m = \[.*\]: " + message):
        hifi.Simulation.from_dict(_scenario(path, crop_m=crop, vertical_crs="ellipsoidal"))


def test_a_crop_of_no_data_is_one_line_and_exit_2(tmp_path, capsys):
    # the tags are fine, so loading passes; the samples are all no-data only the build sees
    e0, n0 = utm_of(ORIGIN["lat_deg"], ORIGIN["lon_deg"])
    h = np.full((20, 20), -9999, dtype=np.int16)
    path = write_geotiff(tmp_path / "empty.tif", h, tiepoint=(0, 0, 0, round(e0) - 50, round(n0) + 50, 0),
                         scale=(5, 5), nodata=-9999)
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f"""[simulation]
duration_s = 0.1
origin = {{ lat_deg = {ORIGIN['lat_deg']}, lon_deg = {ORIGIN['lon_deg']}, height_m = {ORIGIN['height_m']} }}

[[objects]]
name = "ground"
mesh = "dem"
file = "empty.tif"
vertical_crs = "ellipsoidal"
crop_m = [-20, -20, 20, 20]
""")
    assert main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hifi: error: {scenario}:10: objects[0].crop_m = [-20.0, -20.0, 20.0, 20.0]: no triangle: "
                          "every cell of the DEM inside the crop has a no-data corner"), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_vertical_crs_must_be_a_vertical_crs(tmp_path):
    path, *_ = utm_dem(tmp_path / "utm.tif")
    with pytest.raises(hifi.ScenarioError, match=r"objects\[0\]\.vertical_crs = 'EPSG:4326': 'WGS 84' is a "
                                                 r"Geographic 2D CRS, not a vertical CRS"):
        hifi.Simulation.from_dict(_scenario(path, vertical_crs="EPSG:4326"))
    with pytest.raises(hifi.ScenarioError, match=r"objects\[0\]\.vertical_crs = 'geoid': not a CRS PROJ knows"):
        hifi.Simulation.from_dict(_scenario(path, vertical_crs="geoid"))


# -- memory -----------------------------------------------------------------------------------

def test_a_dem_too_large_for_memory_is_refused_before_its_pixels_are_read(tmp_path, capsys, monkeypatch):
    # 400 x 400 samples: 2 x 399 x 399 = 318,402 triangles (closed form), at least
    # SCENE_BYTES_PER_FACE = 170 B each held: 51.6 MiB, against a budget of the process alone
    # plus 8 MiB. Neither the generator nor the pixel reader may run.
    path, *_ = utm_dem(tmp_path / "big.tif", rows=400, cols=400, spacing=1.0)
    monkeypatch.setattr(est_mod, "memory_budget_bytes", lambda: est_mod.BASE_PROCESS_BYTES + 8 * 2**20)
    monkeypatch.setitem(meshes.GENERATORS, "dem", (lambda *a, **k: pytest.fail("the DEM was built"),
                                                   meshes.GENERATORS["dem"][1]))
    monkeypatch.setattr(dem, "_read_samples", lambda *a, **k: pytest.fail("the pixels were read"))
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f"""[simulation]
duration_s = 0.1
origin = {{ lat_deg = {ORIGIN['lat_deg']}, lon_deg = {ORIGIN['lon_deg']}, height_m = {ORIGIN['height_m']} }}

[[objects]]
name = "ground"
mesh = "dem"
file = "big.tif"
vertical_crs = "ellipsoidal"
resolution_m = 1.0
""")
    assert main(["info", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hifi: error: {scenario}:10: objects[0].resolution_m = 1.0: dem 'ground' would have "
                          "318,402 triangles, about "), err
    assert err.rstrip().endswith("raise resolution_m; narrow crop_m"), err
    # the same scenario at 4 m (every 4th post: 101 x 101 samples, 20,000 triangles) fits and
    # the count is what the generator makes
    monkeypatch.undo()
    params = {"file": str(path), "origin": ORIGIN, "resolution_m": 4.0}
    assert meshes.generator_faces("dem", params) == 2 * 100 * 100 == len(meshes.build_generator("dem", params).faces)
