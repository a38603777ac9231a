"""ccd_camera against analytic radiometry and geometry, the depth map, and the dataset contract.

Expected values: the camera equation, cos^4 and Lambert's law are analytic; the sun's direction
and the channel photon irradiances come from the optics functions they are built on (tested
against published values in tests/optics/test_sun.py / test_radiometry.py), recomputed here
from their own inputs; distance / object_id are compared with the depthmap model (an independent
sensor casting the same pinhole rays: a regression against it).
"""

import tomllib

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import hifi
import optics
from optics.illumination import SPECTRAL_GRID_M
from optics.spectral import channel_photon_irradiance, channel_response_curves
from optics.sun import clear_sky_spectral_irradiance, solar_position, sun_direction_enu

from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"

#: ideal_image is stored as float32: 2**-23 relative rounding, plus float64 sums in different
#: orders. 1e-6 relative is a few float32 ulp.
F32_RTOL = 1e-6
#: Embree's float32 distances (see test_depthmap.py).
DIST_RTOL = 2.0 ** -21

START = "2024-05-01T08:00:00Z"            # 10:00 CEST at Salzburg: sun ~45 deg up, south-east
ORIGIN = {"lat_deg": 47.80, "lon_deg": 13.04, "height_m": 430.0}
PITCH_M = 5.86e-6
PRESET = "pointgrey_grasshopper3_imx174"
RHO = (0.8, 0.6, 0.4)                     # a colourful white: each channel its own reflectance


def _scenario(objects, sensor_params, *, parent=None, position=(0, 0, 10), rpy=(0, 90, 0),
              seed=0, start=START, extra_sensors=()):
    cam = {"name": "cam", "model": "ccd_camera", "position_m": list(position), "rpy_deg": list(rpy),
           "params": {"pixel_pitch_m": PITCH_M, "preset": PRESET, **sensor_params}}
    if parent is not None:
        cam["parent"] = parent
    return {"simulation": {"duration_s": 0.1, "seed": seed, "start_utc": start, "origin": ORIGIN},
            "materials": {"paint": {"reflectivity": 0.5, "color_rgb": list(RHO), "class": "thing"}},
            "objects": objects, "sensors": [cam, *extra_sensors]}


def _run(d):
    return hifi.Simulation.from_dict(d).run()


def _ground(size=400.0):
    return {"name": "ground", "mesh": "plane", "size_m": [size, size], "material": "paint"}


def _light(start=START):
    """Expected sun direction, per-channel direct-normal and diffuse-horizontal photon irradiance."""
    pos = solar_position(np.datetime64(start.rstrip("Z")), ORIGIN["lat_deg"], ORIGIN["lon_deg"])
    z = float(pos.apparent_zenith_rad)
    spec = clear_sky_spectral_irradiance(SPECTRAL_GRID_M, z, altitude_m=ORIGIN["height_m"])
    resp = channel_response_curves(SPECTRAL_GRID_M,
                                   reference_wavelength_m=optics.PRESETS[PRESET]["wavelength_m"])
    return (sun_direction_enu(z, float(pos.azimuth_rad)),
            channel_photon_irradiance(SPECTRAL_GRID_M, spec.direct_normal, resp),
            channel_photon_irradiance(SPECTRAL_GRID_M, spec.diffuse_horizontal, resp))


def _electrons_per_radiance(f_number=8.0, exposure_s=1e-3, transmittance=0.9):
    """Analytic camera equation on the axis: e- per unit photon radiance, eta pi T p^2 t / (4 N^2)."""
    eta = optics.PRESETS[PRESET]["quantum_efficiency"]
    return eta * np.pi * transmittance * PITCH_M ** 2 * exposure_s / (4.0 * f_number ** 2)


def _field_angles(nx, ny, focal_length_m):
    x = (np.arange(nx) + 0.5 - nx / 2.0) * PITCH_M
    y = (ny / 2.0 - np.arange(ny) - 0.5) * PITCH_M
    return np.arctan(np.hypot(*np.meshgrid(x, y)) / focal_length_m)


def test_lambertian_plane_follows_cos4_and_the_camera_equation():
    # A horizontal Lambertian plane under the sun has the same radiance everywhere (no shadows:
    # nothing else in the scene), so the ideal image is that radiance times the camera equation,
    # whose only field dependence is cos^4 (analytic).
    f = 2.0e-4                                        # 64 x 48 pixels of 5.86 um: 86 deg across
    ds = _run(_scenario([_ground()], {"resolution_x": 64, "resolution_y": 48, "focal_length_m": f}))
    ideal = ds["cam"].ideal_image.isel(frame=0).values.astype(float)
    theta = _field_angles(64, 48, f)
    s, e_dir, e_sky = _light()
    radiance = np.asarray(RHO) / np.pi * (e_dir * s[2] + e_sky)           # horizontal facet
    expected = _electrons_per_radiance() * radiance * np.cos(theta)[..., None] ** 4
    np.testing.assert_allclose(ideal, expected, rtol=F32_RTOL)
    # cos^4 alone, independent of the radiance: corner / centre-most pixel
    ratio = ideal[0, 0] / ideal[23, 31]
    np.testing.assert_allclose(ratio, (np.cos(theta[0, 0]) / np.cos(theta[23, 31])) ** 4, rtol=F32_RTOL)
    assert np.cos(theta[0, 0]) ** 4 < 0.4             # the test spans a strong fall-off


def _ray_hits_box(points, direction, lo, hi):
    """Slab test: does the ray from each point (n, 3) along ``direction`` (3,) cross the box?"""
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (np.asarray(lo) - points) / direction
        t2 = (np.asarray(hi) - points) / direction
    t_near = np.max(np.minimum(t1, t2), axis=1)
    t_far = np.min(np.maximum(t1, t2), axis=1)
    return (t_far >= np.maximum(t_near, 0.0))


def test_shadow_of_a_box_gets_only_the_sky_term():
    # A 4 x 4 x 6 m box on the ground, seen from 60 m straight above. The ground point of each
    # pixel is computed here from the pinhole geometry and the mount rotation; it is in the
    # box's shadow iff the ray from it towards the sun crosses the box (analytic).
    nx, ny, f, height = 120, 120, 1.0e-3, 60.0
    box = {"name": "box", "mesh": "box", "size_m": [4, 4, 6], "material": "paint",
           "position_m": [0, 0, 3]}
    ds = _run(_scenario([_ground(), box], {"resolution_x": nx, "resolution_y": ny, "focal_length_m": f},
                        position=(0, 0, height)))["cam"].isel(frame=0)
    ideal = ds.ideal_image.values.astype(float)
    oid = ds.object_id.values
    s, e_dir, e_sky = _light()
    assert s[2] > 0.3                                  # sun well up: a shadow of ~ 6 / tan(elev)

    x = (np.arange(nx) + 0.5 - nx / 2.0) * PITCH_M
    y = (ny / 2.0 - np.arange(ny) - 0.5) * PITCH_M
    xx, yy = np.meshgrid(x, y)
    d_sensor = np.stack([np.full_like(xx, f), -xx, yy], axis=-1).reshape(-1, 3)
    d = Rotation.from_euler("xyz", [0, 90, 0], degrees=True).apply(d_sensor)
    ground = np.array([0, 0, height]) + d * (height / -d[:, 2])[:, None]
    margin = 0.5                                       # > the 0.35 m pixel footprint
    deep = _ray_hits_box(ground, s, [-2 + margin, -2 + margin, margin], [2 - margin, 2 - margin, 6 - margin])
    clear = ~_ray_hits_box(ground, s, [-2 - margin, -2 - margin, -margin], [2 + margin, 2 + margin, 6 + margin])
    on_ground = oid.ravel() == 0
    deep &= on_ground
    clear &= on_ground
    assert deep.sum() > 50 and clear.sum() > 5000

    cos4 = (np.cos(_field_angles(nx, ny, f)) ** 4).reshape(-1, 1)
    k = _electrons_per_radiance()
    flat = ideal.reshape(-1, 3)
    sky_only = k * np.asarray(RHO) / np.pi * e_sky * cos4
    sunlit = k * np.asarray(RHO) / np.pi * (e_dir * s[2] + e_sky) * cos4
    np.testing.assert_allclose(flat[deep], sky_only[deep], rtol=F32_RTOL)
    np.testing.assert_allclose(flat[clear], sunlit[clear], rtol=F32_RTOL)
    # The shadow lies on the side away from the sun: its centroid is displaced along -s_xy.
    centroid = ground[deep, :2].mean(axis=0)
    assert centroid @ s[:2] < 0


@pytest.mark.parametrize("tilt_deg", [0.0, 30.0, 60.0, 85.0, 150.0])
def test_facet_radiance_scales_with_cos_incidence(tilt_deg):
    # A 2 x 2 m panel tilted about the east axis, the camera riding on it 3 m along its normal
    # and looking at it; radiance = rho / pi (E_dir max(cos i, 0) + E_sky (1 + n_z) / 2)
    # (Lambert + isotropic sky, analytic given the irradiances).
    rpy = [tilt_deg, 0.0, 20.0]
    panel = {"name": "panel", "mesh": "plane", "size_m": [2, 2], "material": "paint",
             "position_m": [0, 0, 5], "rpy_deg": rpy}
    f = 5.0e-3                                         # 8 x 8 pixels: 0.5 deg, all on the panel
    ds = _run(_scenario([panel], {"resolution_x": 8, "resolution_y": 8, "focal_length_m": f},
                        parent="panel", position=(0, 0, 3)))["cam"].isel(frame=0)
    assert (ds.object_id.values == 0).all()
    n = Rotation.from_euler("xyz", rpy, degrees=True).apply([0.0, 0.0, 1.0])
    s, e_dir, e_sky = _light()
    cos_i = float(n @ s)
    cos4 = np.cos(_field_angles(8, 8, f))[..., None] ** 4
    expected = (_electrons_per_radiance() * np.asarray(RHO) / np.pi
                * (e_dir * max(cos_i, 0.0) + e_sky * (1.0 + n[2]) / 2.0) * cos4)
    np.testing.assert_allclose(ds.ideal_image.values, expected, rtol=F32_RTOL)
    if tilt_deg == 150.0:
        assert cos_i < 0                               # facing away: sky term only


def test_distance_and_object_id_equal_the_depth_map_for_the_same_pose():
    nx, ny, f = 160, 120, 4.0e-3
    with open(EXAMPLES / "crossing.toml", "rb") as fh:
        d = tomllib.load(fh)                           # the example's geometry, our two sensors
    d["simulation"]["duration_s"] = 0.1
    mount = {"parent": "car_1", "position_m": [1.0, 0.0, 1.4], "rpy_deg": [0, 5, 10]}
    fov_x_deg = float(np.degrees(2.0 * np.arctan(nx * PITCH_M / 2.0 / f)))
    d["sensors"] = [
        {"name": "cam", "model": "ccd_camera", **mount,
         "params": {"resolution_x": nx, "resolution_y": ny, "pixel_pitch_m": PITCH_M,
                    "focal_length_m": f, "max_range_m": 150.0}},
        {"name": "depth", "model": "depthmap", **mount,
         "params": {"resolution_x": nx, "resolution_y": ny, "fov_x_deg": fov_x_deg, "max_range_m": 150.0}}]
    res = hifi.Simulation.from_dict(d, base_dir=EXAMPLES).run()
    cam, dm = res["cam"].isel(frame=0), res["depth"].isel(frame=0)
    # Regression against the depthmap model: the same pinhole rays (fx = f / p there from
    # fov_x_deg; equal to the last bit on this pose), so the same hits.
    np.testing.assert_array_equal(cam.object_id.values, dm.object_id.values)
    np.testing.assert_allclose(cam.distance.values, dm.distance.values, rtol=DIST_RTOL, equal_nan=True)
    assert len(np.unique(cam.object_id.values)) >= 4  # ground, sky, buildings, cars in view


def test_deterministic_for_a_seed():
    def image(seed):
        d = _scenario([_ground()], {"resolution_x": 32, "resolution_y": 24, "focal_length_m": 1e-3},
                      seed=seed)
        return _run(d)["cam"].isel(frame=0)
    a, b, c = image(3), image(3), image(4)
    assert a.image.values.tobytes() == b.image.values.tobytes()
    assert a.ideal_image.values.tobytes() == c.ideal_image.values.tobytes()   # noise-free part
    assert not np.array_equal(a.image.values, c.image.values)


def test_saturation_clips_at_the_sensor_maximum():
    # 1 s exposure: ~ 20,000 x the default 1 ms full-well fraction, every pixel far above full well.
    base = {"resolution_x": 16, "resolution_y": 12, "focal_length_m": 1e-3, "exposure_s": 1.0}
    with_gain = _run(_scenario([_ground()], {**base, "gain_dn_per_e": 0.5}))["cam"].isel(frame=0)
    sm = optics.SensorModel.from_preset(PRESET)
    assert (with_gain.ideal_image.values > 10 * sm.full_well_e).all()
    # K x full well = 16,600 DN > 4095: the ADC clips at its maximum.
    assert (with_gain.image.values == 2 ** 12 - 1).all()
    # With the preset's gain the full well (K F + black = 4081.6 DN) comes first: every pixel sits
    # there within the read noise (6.83 e- x 0.1225 DN/e- = 0.84 DN, +-5 sigma), never above 4095.
    preset = _run(_scenario([_ground()], base))["cam"].isel(frame=0).image.values
    expected = sm.gain_dn_per_e * sm.full_well_e + sm.black_level_dn
    assert preset.max() <= 4095
    np.testing.assert_allclose(preset, expected, atol=5 * 0.84 + 0.5)


def test_dataset_conventions():
    d = _scenario([_ground()], {"resolution_x": 20, "resolution_y": 10, "focal_length_m": 1e-3})
    d["simulation"]["duration_s"] = 0.25
    d["sensors"][0]["rate_hz"] = 8.0
    d["sensors"].append({"name": "mono", "model": "ccd_camera", "position_m": [0, 0, 10],
                         "rpy_deg": [0, 90, 0], "rate_hz": 8.0,
                         "params": {"resolution_x": 20, "resolution_y": 10, "color": "mono",
                                    "preset": "generic", "focal_length_m": 1e-3}})
    res = _run(d)
    ds = res["cam"]
    assert ds.sizes == {"frame": 2, "row": 10, "col": 20, "channel": 3, "xyz": 3, "quat": 4, "object": 1}  # 8 Hz, 0.25 s
    np.testing.assert_allclose(ds.hifi.seconds("frame_time").values, [0.0, 0.125])
    np.testing.assert_allclose(ds.hifi.seconds("timestamp").values, [0.0, 0.125])   # exposure instants
    assert ds.sensor_position.dims == ("frame", "xyz") and ds.sensor_orientation.dims == ("frame", "quat")
    assert list(ds.channel.values) == ["R", "G", "B"]
    assert ds.image.dims == ("frame", "row", "col", "channel") and ds.image.dtype == np.uint16
    assert ds.ideal_image.dims == ds.image.dims and ds.ideal_image.dtype == np.float32
    assert ds.distance.dims == ("frame", "row", "col") and ds.object_id.dtype == np.int32
    assert ds.image.attrs["units"] == "DN" and ds.ideal_image.attrs["units"] == "e-"
    assert ds.distance.attrs["units"] == "m"
    for name in [*ds.data_vars, *ds.coords]:
        units = ds[name].attrs.get("units") or ds[name].encoding.get("units")   # decoded CF times: encoding
        assert units and ds[name].attrs.get("long_name"), name
    for key in ("sensor_name", "sensor_model", "hifi_version", "seed", "scenario"):
        assert key in ds.attrs
    assert ds.attrs["sensor_model"] == "ccd_camera"
    mono = res["mono"]
    assert mono.sizes["channel"] == 1 and list(mono.channel.values) == ["Y"]
    assert mono.attrs["bayer_pattern"] == "none" and ds.attrs["bayer_pattern"] == "RGGB"


def test_bad_parameter_names_key_and_value():
    d = _scenario([_ground()], {"preset": "no_such_camera"})
    with pytest.raises(ValueError, match="no_such_camera"):
        hifi.Simulation.from_dict(d)


def test_seidel_blur_in_the_chain_conserves_signal_and_distortion_moves_it():
    # A lit white square on a black ground, seen off-axis (field ~ 0.5): coma spreads it, the total signal
    # stays (the PSF sums to 1; nothing reaches the border), and barrel distortion (W311 > 0)
    # pulls its off-axis centroid towards the image centre.
    white = {"white": {"reflectivity": 0.5, "color_rgb": [0.9, 0.9, 0.9]}}
    black = {"black": {"reflectivity": 0.5, "color_rgb": [0.0, 0.0, 0.0]}}
    objs = [{**_ground(), "material": "black"},
            {"name": "tile", "mesh": "box", "size_m": [2, 2, 0.02], "material": "white",
             "position_m": [2.5, -2.0, 0.01]}]

    def ideal(**w):
        d = _scenario(objs, {"resolution_x": 96, "resolution_y": 96, "focal_length_m": 5e-4,
                             "psf_tiles": 4, **w})
        d["materials"] = {**white, **black}
        return _run(d)["cam"].isel(frame=0).ideal_image.values.astype(float).sum(axis=-1)

    sharp = ideal()
    assert sharp.max() > 0 and sharp[0, 0] == 0 and sharp[48, 48] == 0          # tile off-axis
    blurred = ideal(W131=3.0)
    np.testing.assert_allclose(blurred.sum(), sharp.sum(), rtol=1e-6)   # energy conserved
    assert np.count_nonzero(blurred > 1e-3 * sharp.max()) > np.count_nonzero(sharp > 1e-3 * sharp.max())
    distorted = ideal(W311=20.0)
    rows, cols = np.indices(sharp.shape)
    centre = (np.array(sharp.shape) - 1) / 2.0

    def radius(img):
        c = np.array([(img * rows).sum(), (img * cols).sum()]) / img.sum()
        return np.hypot(*(c - centre))
    assert radius(distorted) < radius(sharp) - 1.0                   # barrel: > 1 pixel inward


def test_hifi_plot_shows_image_beside_ideal_image(tmp_path):
    pytest.importorskip("matplotlib", reason="hifi plot needs matplotlib (the viz extra)")
    from hifi.viz.plot import plot_dataset
    d = _scenario([_ground()], {"resolution_x": 32, "resolution_y": 24, "focal_length_m": 1e-3})
    ds = _run(d)["cam"]
    out = plot_dataset(ds, tmp_path / "cam.png")
    assert out.is_file() and out.stat().st_size > 1000


def _fog_contrast(visibility_m, distances_m=(40.0, 110.0), azimuths_rad=(0.01, -0.01)):
    """Apparent contrast (L_sky - L_obj) / L_sky per black plate and channel in one frame."""
    objects = []
    for d, az in zip(distances_m, azimuths_rad):
        r = d + 0.05                                   # front face of the 0.1 m plate at d
        objects.append({"name": f"plate_{int(d)}", "mesh": "box", "size_m": [0.1, 0.008 * d, 0.008 * d],
                        "position_m": [r * np.cos(az), r * np.sin(az), 0.0],
                        "rpy_deg": [0.0, 0.0, float(np.degrees(az))], "material": "black"})
    d = _scenario(objects, {"resolution_x": 64, "resolution_y": 16, "focal_length_m": 0.012, "bayer": False},
                  position=(0, 0, 0), rpy=(0, 0, 0))
    d["materials"]["black"] = {"reflectivity": 0.0, "color_rgb": [0.0, 0.0, 0.0], "class": "thing"}
    d["weather"] = {"fog_visibility_m": visibility_m}
    fr = _run(d)["cam"].isel(frame=0)
    img, oid = fr.ideal_image.values.astype(float), fr.object_id.values
    sky = img[oid == -1].mean(axis=0)
    return np.array([1.0 - img[oid == i].mean(axis=0) / sky for i in range(len(distances_m))])


def test_fog_contrast_of_a_black_plate_follows_koschmieder():
    # Koschmieder (1924): a black object's apparent contrast against the horizon sky is
    # exp(-beta d), beta = 3.912 / V at 550 nm (V: 2 % contrast). Below V = 500 m fog is grey
    # (Kim et al. 2001, q = 0): the closed form holds in every band.
    d = np.array([40.0, 110.0])
    c = _fog_contrast(250.0)
    np.testing.assert_allclose(c, np.exp(-3.912 * d / 250.0)[:, None] * np.ones(3), rtol=0.01)
    # V = 1 km: Kim et al.'s q = V[km] - 0.5 = 0.5, beta = 3.912 / V (lambda / 550 nm)^-0.5 at
    # the filter centres 600 / 535 / 460 nm (optics.spectral.DEFAULT_RGB_FILTERS; the camera
    # uses the responses' mean wavelengths, 594 / 533 / 466 nm: within 0.3 % of these at 110 m).
    beta = 3.912 / 1000.0 * (np.array([600.0, 535.0, 460.0]) / 550.0) ** -0.5
    c = _fog_contrast(1000.0)
    np.testing.assert_allclose(c, np.exp(-beta[None, :] * d[:, None]), rtol=0.01)
    assert np.all(c[:, 0] > c[:, 1]) and np.all(c[:, 1] > c[:, 2])   # haze takes more blue
