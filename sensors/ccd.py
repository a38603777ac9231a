"""CCD / CMOS camera under the sun (VANE, Durst et al., section 3): ray-cast ideal image, then optics and sensor.

The chain of one frame, each step a plain function or an :mod:`optics` kernel, each testable on its own:

1. **Rays.** A pinhole camera looking along sensor +x (image right = sensor -y, image up =
   sensor +z, as :mod:`sensors.depthmap`), ``samples_per_pixel`` deterministic rays per pixel
   (:func:`pixel_sample_offsets`, the first one through the pixel centre), all at the frame
   time (global shutter).
2. **Sunlight.** Solar position from the scenario's epoch + frame time and origin
   (:func:`optics.sun.solar_position`, PSA algorithm), clear-sky direct and diffuse spectral
   irradiance (:func:`optics.sun.clear_sky_spectral_irradiance`), integrated over each channel's
   spectral response (filter x silicon QE, :mod:`optics.spectral`) to photon irradiances
   (:func:`optics.illumination.sunlight`). The sun's direction in ENU is the scene frame
   (x east, y north, z up).
3. **Shading.** Each hit facet is Lambertian with its material's ``color_rgb`` as the band
   reflectance of each channel (on a textured scene-file part, the file's base colour at the
   hit, :meth:`hifi.world.textures.HitTextures.colour`); direct sun times cos(incidence) where a shadow ray towards the
   sun reaches the sky (cast for the facets of :func:`optics.illumination.sun_facing`), plus an
   isotropic diffuse sky weighted by the facet's sky view factor; pixels that see nothing get
   the sky radiance (:func:`optics.illumination.scene_photon_radiance`). The model casts the
   shadow rays; the illumination kernels take the result as a mask.
4. **Camera equation.** Image photon irradiance pi L T cos^4(theta) / (4 N^2)
   (:func:`optics.radiometry.image_irradiance`), times the optional mechanical vignetting
   (:func:`optics.radiometry.mechanical_vignetting`), times pixel area and exposure: mean
   photons per pixel mu_p (EMVA 1288 eq. (2) in photon form).
5. **Optics.** Field-dependent Seidel PSF and distortion remap
   (:func:`optics.aberrations.apply_field_psf`, :func:`optics.aberrations.apply_distortion`),
   when any coefficient is non-zero; steps 1-4 then render a margin around the image
   (:func:`optics_margin_px`) so that light from just outside the field blurs and distorts in,
   and the margin is cropped afterwards.
6. **Sensor.** :meth:`optics.SensorModel.expose` (EMVA 1288 linear model: shot noise, dark
   current, read noise, DSNU/PRNU, full well, gain, quantisation, bit depth, Bayer RGGB mosaic
   and bilinear demosaicing) with a per-frame generator from :func:`hifi.api.rng.stream`.

References
----------
S. Durst, C. Goodin, B. Q. Gates, et al., "The Virtual Autonomous Navigation Environment
(VANE)" / C. Goodin et al., "Sensor modeling for the Virtual Autonomous Navigation Environment",
IEEE Sensors 2009 (section 3: the CCD camera model as an ideal ray-cast image followed by
algebraic and convolution operations).
B. Y. H. Liu and R. C. Jordan, "The long-term average performance of flat-plate solar-energy
collectors", Solar Energy 7(2), 53-74, 1963 (isotropic sky, view factor (1 + cos tilt) / 2).
M. Roberts, "The unreasonable effectiveness of quasirandom sequences", 2018 (R2 sequence).
EMVA Standard 1288, Release 3.1, European Machine Vision Association, 2016.
"""

from __future__ import annotations

import numpy as np

import optics
from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.api.rng import stream
from optics.aberrations import (MAX_KERNEL_SIZE, SeidelCoefficients, apply_distortion,
                                apply_field_psf, pixel_positions)
from optics.illumination import (SPECTRAL_GRID_M, SunLight, koschmieder_airlight, scene_photon_radiance,
                                 sky_photon_radiance, sun_facing, sunlight)
from optics.radiometry import field_angle, image_irradiance, mechanical_vignetting
from optics.spectral import channel_mean_wavelength, channel_response_curves, relative_quantum_efficiency

from hifi.run.dataset import axis_coords, image_coords, sensor_pose_vars
from hifi.world.textures import HitTextures

from .weather import weather_of

__all__ = [
    "pixel_sample_offsets",
    "camera_directions",
    "optics_margin_px",
    "CCDCamera",
    "GENERIC_SENSOR",
]

#: The sensor behind ``preset = "generic"``: the default camera
#: (``optics.SensorModel()``'s defaults: QE 0.5, 8 e- dark noise, 6000 e- full well,
#: 0.1 DN/e-, 12 bit) with its QE taken at 545 nm and SensorModel's default black level
#: (:func:`optics.sensor.default_black_level_dn`: 6 DN, 6 sigma of the dark noise, so the dark
#: noise is not clipped at 0 DN). A documented round-number sensor, not a particular camera.
GENERIC_SENSOR = dict(quantum_efficiency=0.5, dark_noise_e=8.0, full_well_e=6000.0,
                      gain_dn_per_e=0.1, bit_depth=12, wavelength_m=545e-9)

#: Channel names of the two colour modes.
CHANNELS = {"rgb": ("R", "G", "B"), "mono": ("Y",)}

#: Plastic number, the generator of Roberts' R2 sequence (real root of x^3 = x + 1).
_PLASTIC = 1.324717957244746


def pixel_sample_offsets(n: int) -> np.ndarray:
    """Deterministic sub-pixel sample positions, the first at the pixel centre.

    Parameters
    ----------
    n : int
        Samples per pixel, >= 1.

    Returns
    -------
    numpy.ndarray, shape (n, 2)
        (column, row) offsets inside the pixel, 0..1 [pixel]; sample 0 is (0.5, 0.5).

    Notes
    -----
    Roberts' R2 low-discrepancy sequence, s_k = frac(0.5 + k (1/g, 1/g^2)), g the plastic
    number: stratified over the pixel for any n without a random generator, so the ideal image
    is deterministic. Every pixel uses the same pattern (a box filter over the pixel area).
    """
    k = np.arange(int(n), dtype=float)[:, None]
    alpha = np.array([1.0 / _PLASTIC, 1.0 / _PLASTIC ** 2])
    return np.mod(0.5 + k * alpha, 1.0)


def camera_directions(resolution_x: int, resolution_y: int, pixel_pitch_m: float,
                      focal_length_m: float, offsets) -> np.ndarray:
    """Unit ray directions of a pinhole camera looking along sensor +x.

    Parameters
    ----------
    resolution_x, resolution_y : int
        Columns and rows [pixel].
    pixel_pitch_m, focal_length_m : float
        Pixel pitch and pinhole distance [m].
    offsets : array_like, shape (s, 2)
        Sub-pixel (column, row) sample positions, 0..1 (:func:`pixel_sample_offsets`).

    Returns
    -------
    numpy.ndarray, shape (s, rows, cols, 3)
        Unit vectors in the sensor frame (x forward, y left, z up). Row 0 is the top.

    Notes
    -----
    Image-plane point of sample (r, c, o): x = (c + o_c - W/2) p right, y = (H/2 - r - o_r) p
    up, which for o = (0.5, 0.5) is the pixel centre of :func:`optics.aberrations.pixel_positions`
    and of :func:`sensors.depthmap.pinhole_directions` with fx = f / p. The ray through it is
    (f, -x, y), normalised.
    """
    w, h = int(resolution_x), int(resolution_y)
    o = np.asarray(offsets, dtype=float).reshape(-1, 2)
    fx = focal_length_m / pixel_pitch_m                              # focal length [pixel]
    u = (np.arange(w)[None, :] + o[:, 0:1] - w / 2.0) / fx          # (s, cols), right
    v = (np.arange(h)[None, :] + o[:, 1:2] - h / 2.0) / fx          # (s, rows), down
    d = np.empty((o.shape[0], h, w, 3))
    d[..., 0] = 1.0
    d[..., 1] = -u[:, None, :]
    d[..., 2] = -v[:, :, None]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    return d


def optics_margin_px(coefficients: SeidelCoefficients, *, wavelength_m: float, f_number: float,
                     pixel_pitch_m: float) -> int:
    """Pixels to render beyond each image edge so that the Seidel optics have input there.

    Parameters
    ----------
    coefficients : SeidelCoefficients
        [waves] at ``wavelength_m``.
    wavelength_m, f_number, pixel_pitch_m : float
        [m], [1], [m].

    Returns
    -------
    int
        Margin [pixel]; 0 without aberrations.

    Notes
    -----
    Light from just outside the field reaches the edge pixels through the PSF, and a barrel
    distortion remap samples the ideal image outside the array at the corners; rendering only
    the array would darken a rim. Bound, at H = 1.25 (the padded corner, for a margin below
    1/6 of the image half-diagonal): the
    largest transverse aberration ``2 N lambda (4 |W040| + 3 |W131| H + 2 (|W222| + |W220|) H^2)``
    (:func:`optics.aberrations.transverse_ray_aberration` at rho = 1) plus the distortion shift
    ``2 N lambda |W311| H^3``, in pixels, plus 2 pixels for the bilinear weights; capped at
    ``MAX_KERNEL_SIZE`` (the PSF kernel's own cap).
    """
    w = coefficients
    h = 1.25
    reach_m = 2.0 * f_number * wavelength_m * (
        4 * abs(w.W040) + 3 * abs(w.W131) * h + 2 * (abs(w.W222) + abs(w.W220)) * h ** 2
        + abs(w.W311) * h ** 3)
    if reach_m == 0.0:
        return 0
    return int(min(np.ceil(reach_m / pixel_pitch_m) + 2, MAX_KERNEL_SIZE))


_PRESET_CHOICES = tuple(sorted(optics.PRESETS)) + ("generic",)


class CCDCamera(Sensor):
    """Camera under the sun: ray-cast ideal image, spectral response, optics, EMVA 1288 sensor.

    A pinhole camera looking along the sensor's +x axis, imaged at its own rate with a global
    shutter at each frame time. The chain is described in the module docstring; every step's
    equation and source is in the docstring of the function that does it.

    Variables (``frame``, ``row``, ``col``, ``channel``; channel R, G, B or a single Y for
    ``color = "mono"``):

    * ``image`` (uint16, DN): the camera's output, demosaiced when ``bayer`` is on.
    * ``ideal_image`` (float32, e-): mean photo-electrons eta mu_p per pixel and channel after
      the optics (vignetting, Seidel blur and distortion), before any noise, fixed pattern or
      clipping (it can exceed the full well). For a Bayer camera it holds every channel at
      every pixel (before the mosaic).

    Over (``frame``, ``row``, ``col``), from the pixel-centre ray of the pinhole (undistorted
    geometry): ``distance`` (float32, m, radial, through mirrors; NaN where nothing is hit
    within ``max_range_m``), ``object_id`` (int32, -1 for none). Per frame: ``timestamp``
    (the start of the exposure, when the scene is rendered), the sensor pose
    ``sensor_position`` / ``sensor_orientation`` at that instant, ``sun_zenith``,
    ``sun_azimuth`` (rad) and the fraction of pixels lit by the sun.

    Parameters (``[sensors.params]``): see :attr:`PARAMS`; each states its unit and default.
    The default sensor is the Point Grey Grasshopper3 IMX174 preset with its 5.86 um pixels.
    """

    model_name = "ccd_camera"
    default_rate_hz = 10.0
    PARAMS = {
        "resolution_x": Param("int", default=640, minimum=1, doc="image width [pixel]"),
        "resolution_y": Param("int", default=480, minimum=1, doc="image height [pixel]"),
        "pixel_pitch_m": Param("float", default=5.86e-6, minimum=0.0, exclusive_minimum=True,
                               doc="pixel pitch [m] (default: Sony IMX174, 5.86 um)"),
        "focal_length_m": Param("float", default=4.0e-3, minimum=0.0, exclusive_minimum=True,
                                doc="focal length = pinhole distance [m] (default 4 mm: 50 deg "
                                    "across 640 pixels of 5.86 um)"),
        "f_number": Param("float", default=8.0, minimum=0.5, doc="f-number N = f / D [1]"),
        "exposure_s": Param("float", default=1.0e-3, minimum=0.0,
                            doc="exposure time [s] (default 1 ms: a white horizontal facet under a sun "
                                "34 deg from the zenith collects about 70 % of the IMX174 full well at f/8)"),
        "wavelength_m": Param("float", default=550e-9, minimum=0.0, exclusive_minimum=True,
                              doc="wavelength at which W040..W311 are given [m]"),
        "W040": Param("float", default=0.0, doc="spherical aberration at full field [waves]"),
        "W131": Param("float", default=0.0, doc="coma at full field [waves]"),
        "W222": Param("float", default=0.0,
                      doc="astigmatism at full field [waves] (H^2 rho^2 cos^2 theta)"),
        "W220": Param("float", default=0.0, doc="field curvature at full field [waves]"),
        "W311": Param("float", default=0.0, doc="distortion at full field [waves] (> 0: barrel)"),
        "preset": Param("str", default="pointgrey_grasshopper3_imx174", choices=_PRESET_CHOICES,
                        doc="EMVA 1288 sensor: an optics.PRESETS name or 'generic' "
                            "(sensors.ccd.GENERIC_SENSOR)"),
        "color": Param("str", default="rgb", choices=("rgb", "mono"),
                       doc="'rgb': default RGB filters x silicon QE; 'mono': silicon QE only"),
        "bayer": Param("bool", default=True,
                       doc="RGGB colour filter array with bilinear demosaicing (rgb only); "
                           "false: three full-resolution channels (3-chip camera)"),
        "samples_per_pixel": Param("int", default=1, minimum=1, maximum=256,
                                   doc="rays per pixel (R2 sequence, first at the centre) [1]"),
        "shadows": Param("bool", default=True, doc="cast shadow rays towards the sun"),
        "lens_transmittance": Param("float", default=0.9, minimum=0.0, maximum=1.0,
                                    doc="lens transmittance T [1] (0.9: a typical multi-element "
                                        "AR-coated lens; a modelling choice)"),
        "diffuse_fraction": Param("float", default=0.1, minimum=0.0, maximum=1.0,
                                  doc="diffuse sky as a fraction of the direct beam [1] "
                                      "(PVEducation's clear-day 10 %)"),
        "vignetting_aperture_radius_m": Param(
            "float", default=0.0, minimum=0.0,
            doc="radius of a barrel aperture for mechanical vignetting [m]; 0: none"),
        "vignetting_aperture_distance_m": Param(
            "float", default=0.0, minimum=0.0,
            doc="axial distance of that aperture in front of the entrance pupil [m]"),
        "psf_tiles": Param("int", default=8, minimum=1, maximum=64,
                           doc="field tiles per image axis for the field-dependent PSF [1]"),
        "gain_dn_per_e": Param("float", default=0.0, minimum=0.0,
                               doc="overall system gain K [DN/e-]; 0: the preset's"),
        "blooming": Param("bool", default=False, doc="spill charge above the full well along columns"),
        "max_range_m": Param("float", default=10_000.0, minimum=0.0, exclusive_minimum=True,
                             doc="farthest surface seen; beyond it the sky [m]"),
    }

    SIZE_PARAMS = {"resolution_x": "lower", "resolution_y": "lower", "samples_per_pixel": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, fitted 271 B): per primary ray, with its
    #: shadow ray, the radiance per channel and the optics and sensor images.
    WORKING_BYTES_PER_RAY = 270.0

    # -- cost, before setup -------------------------------------------------------------------
    def _render_shape(self) -> tuple[int, int]:
        """Rows and columns rendered: the image plus :func:`optics_margin_px` on every side."""
        p = self.params
        m = optics_margin_px(SeidelCoefficients.checked(**{k: p[k] for k in SeidelCoefficients._fields}),
                             wavelength_m=p["wavelength_m"], f_number=p["f_number"],
                             pixel_pitch_m=p["pixel_pitch_m"])
        return p["resolution_y"] + 2 * m, p["resolution_x"] + 2 * m

    def rays_per_frame(self):
        """Primary rays (``samples_per_pixel`` per rendered pixel); shadow rays, at most as many
        again, are in :attr:`WORKING_BYTES_PER_RAY`."""
        rows, cols = self._render_shape()
        return self.params["samples_per_pixel"] * rows * cols

    def frame_layout(self):
        p = self.params
        img = (p["resolution_y"], p["resolution_x"], len(CHANNELS[p["color"]]))
        f8 = np.dtype(np.float64)
        return {"image": (img, np.dtype(np.uint16)), "ideal_image": (img, np.dtype(np.float32)),
                "distance": (img[:2], np.dtype(np.float32)), "object_id": (img[:2], np.dtype(np.int32)),
                "sun_zenith": ((), f8), "sun_azimuth": ((), f8), "sunlit_fraction": ((), f8),
                "timestamp": ((), f8), "sensor_position": ((3,), f8), "sensor_orientation": ((4,), f8)}

    def setup_bytes(self):
        rows, cols = self._render_shape()
        return 24 * self.rays_per_frame() + 16 * rows * cols   # directions; field angle, vignetting

    # -- setup ------------------------------------------------------------------------------
    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        rows, cols = p["resolution_y"], p["resolution_x"]
        self._channels = CHANNELS[p["color"]]
        self._offsets = pixel_sample_offsets(p["samples_per_pixel"])
        self._seidel = SeidelCoefficients.checked(**{k: p[k] for k in SeidelCoefficients._fields})
        self._field_radius_m = 0.5 * p["pixel_pitch_m"] * np.hypot(rows, cols)
        m = self._margin = optics_margin_px(
            self._seidel, wavelength_m=p["wavelength_m"], f_number=p["f_number"],
            pixel_pitch_m=p["pixel_pitch_m"])
        # Rendered grid: the image plus the optics margin on every side (same principal point).
        self._grid = (rows + 2 * m, cols + 2 * m)
        self._dirs = camera_directions(cols + 2 * m, rows + 2 * m, p["pixel_pitch_m"],
                                       p["focal_length_m"], self._offsets).reshape(-1, 3)
        bayer = bool(p["bayer"]) and p["color"] == "rgb"
        overrides = dict(bayer=bayer, blooming=p["blooming"],
                         pattern_seed=int(stream(ctx.seed, self.name, -1, "fixed_pattern")
                                          .integers(0, 2 ** 62)))
        if p["gain_dn_per_e"] > 0.0:
            overrides["gain_dn_per_e"] = p["gain_dn_per_e"]
        if p["preset"] == "generic":
            g = {k: v for k, v in GENERIC_SENSOR.items() if k != "wavelength_m"}
            g.update(overrides)
            self.sensor_model = optics.SensorModel(**g)
            self.reference_wavelength_m = GENERIC_SENSOR["wavelength_m"]
        else:
            self.sensor_model = optics.SensorModel.from_preset(p["preset"], **overrides)
            self.reference_wavelength_m = optics.PRESETS[p["preset"]]["wavelength_m"]
        lam = SPECTRAL_GRID_M
        if p["color"] == "rgb":
            self._response = channel_response_curves(
                lam, reference_wavelength_m=self.reference_wavelength_m)
        else:
            self._response = relative_quantum_efficiency(
                lam, reference_wavelength_m=self.reference_wavelength_m)[None, :]
        # Weather (sensors.weather): each channel's extinction at its mean wavelength
        # (Koschmieder's 3.912 / V at 550 nm times Kim et al.'s (lambda / 550 nm)^-q: grey below
        # V = 500 m, q = 0), no clear-air term.
        w = weather_of(ctx)
        self._extinction = 0.0 if w.clear else np.array(
            [w.extinction(float(lam_c), 0.0) for lam_c in channel_mean_wavelength(lam, self._response)])
        # Reflectance per object (trailing NaN row for id -1); mono: mean of R, G, B.
        colour = ctx.scene.object_table("color_rgb")
        self._reflectance = colour if p["color"] == "rgb" else colour.mean(axis=1, keepdims=True)
        self._colour = colour
        self._textures = HitTextures(ctx.scene)      # textured scene-file parts: colour per hit
        # Per-pixel optics factors, fixed for the run.
        pos = pixel_positions(self._grid, p["pixel_pitch_m"])
        self._field_angle = field_angle(pos, p["focal_length_m"])
        self._vignetting = np.ones(self._grid)
        if p["vignetting_aperture_radius_m"] > 0.0:
            self._vignetting = mechanical_vignetting(
                self._field_angle, pupil_radius_m=p["focal_length_m"] / (2.0 * p["f_number"]),
                aperture_radius_m=p["vignetting_aperture_radius_m"],
                aperture_distance_m=p["vignetting_aperture_distance_m"])
        self._start = ctx.epoch.utc

    def coords(self):
        p = self.params
        return {
            **image_coords(p["resolution_x"], p["resolution_y"]),
            "channel": Var(("channel",), np.array(self._channels), "1",
                           "colour channel (R, G, B through the default filters; Y: no filter)"),
            **axis_coords(),
        }

    def attrs(self):
        """Global attributes: pinhole intrinsics, the W311 distortion as the radial coefficient
        ``distortion_k1`` of OpenCV's / ROS's ``plumb_bob`` model, and the sensor's EMVA figures.

        Notes
        -----
        :func:`optics.aberrations.apply_distortion` moves an image height h to
        h (1 + d (h / h_max)^2), d = -2 N lambda W311 / h_max, h_max the image's half-diagonal.
        In normalised coordinates r = h / f this is r (1 + k1 r^2) with
        k1 = d (f / h_max)^2 = -2 N lambda W311 f^2 / h_max^3 (exact: the remap is purely cubic).
        """
        p = self.params
        s = self.sensor_model
        h_max = 0.5 * p["pixel_pitch_m"] * np.hypot(p["resolution_x"], p["resolution_y"])
        k1 = -2.0 * p["f_number"] * p["wavelength_m"] * p["W311"] * p["focal_length_m"] ** 2 / h_max ** 3
        return {"focal_length_px": p["focal_length_m"] / p["pixel_pitch_m"],
                "distortion_k1": float(k1),
                "principal_point_px": np.array([p["resolution_x"] / 2.0, p["resolution_y"] / 2.0]),
                "quantum_efficiency": s.quantum_efficiency,
                "qe_reference_wavelength_m": self.reference_wavelength_m,
                "full_well_e": s.full_well_e, "gain_dn_per_e": s.gain_dn_per_e,
                "black_level_dn": s.black_level_dn, "bit_depth": s.bit_depth,
                "max_dn": s.max_dn, "bayer_pattern": "RGGB" if s.bayer else "none"}

    # -- one frame --------------------------------------------------------------------------
    def time_utc(self, t_s: float) -> np.datetime64:
        """UTC instant of simulated time ``t_s`` [s]."""
        return self._start + np.timedelta64(int(round(t_s * 1e9)), "ns")

    def sunlight_at(self, t_s: float) -> SunLight:
        """:func:`optics.illumination.sunlight` at the scene origin at simulated time ``t_s`` [s]."""
        o = self.ctx.origin
        return sunlight(self.time_utc(t_s), o["lat_deg"], o["lon_deg"], o["height_m"],
                        self._response, diffuse_fraction=self.params["diffuse_fraction"])

    def radiance(self, hits, sun: SunLight, t_s: float):
        """Photon radiance along each ray (n, n_channels) and the lit mask (n,).

        The illumination kernels named below are in :mod:`optics.illumination`
        (:func:`~optics.illumination.scene_photon_radiance` applies both); this method finds
        the facets that face the sun (:func:`~optics.illumination.sun_facing`) and casts their
        shadow rays.

        Hits: :func:`~optics.illumination.lambertian_photon_radiance` with a shadow ray per
        facet that faces the sun; misses: :func:`~optics.illumination.sky_photon_radiance`. A
        shadow ray leaves the hit point offset along the facet normal by the caster's local
        float32 offset (:meth:`hifi.caster.RayCaster.secondary_offset_m`: 2^-16 of the hit's
        coordinate bound in the BVH frame plus its triangle size) and is blocked by any diffuse
        surface. Limitation: a
        shadow ray that a perfect mirror turns towards the sky counts as unblocked (the caster
        follows mirrors and does not report a mirror on a path that ends in a miss).
        """
        hit = hits.object_id >= 0
        idx = np.nonzero(hit)[0]
        facing = sun_facing(hits.normal[idx], sun.direction_scene, sun.zenith_rad)
        lit = np.zeros(idx.size, dtype=bool)
        if np.any(facing):
            f = idx[facing]
            if self.params["shadows"]:
                offset_m = self.ctx.caster.secondary_offset_m(hits.point[f], hits.object_id[f])
                origins = hits.point[f] + offset_m[:, None] * hits.normal[f]
                dirs = np.broadcast_to(sun.direction_scene, origins.shape)
                shadow = self.ctx.caster.cast(origins, dirs, t_s, np.inf)
                lit[facing] = ~shadow.hit
            else:
                lit[facing] = True
        lit_all = np.zeros(hit.shape, dtype=bool)
        lit_all[idx] = lit
        if self._textures:
            reflectance = self._textures.colour(self._colour, hits, t_s)
            if self.params["color"] != "rgb":
                reflectance = reflectance.mean(axis=1, keepdims=True)
        else:
            reflectance = self._reflectance[hits.object_id]
        out = scene_photon_radiance(hit, reflectance, hits.normal, lit_all,
                                    sun.direction_scene, sun.direct_normal,
                                    sun.diffuse_horizontal)
        if np.any(self._extinction > 0.0):
            # Weather: Koschmieder's attenuation and airlight, per channel. The horizon radiance
            # of the airlight is the global horizontal irradiance over pi: a thick, non-absorbing
            # scattering layer sends all the light that reaches the ground back isotropically.
            # A ray that meets nothing gets exactly that horizon radiance (infinite path), so the
            # apparent contrast of an object against the sky is its inherent contrast times
            # exp(-alpha d) (validation/camera_fog.py). Clear sky as in fair weather (the sun's
            # beam is not dimmed on its way down).
            global_h = sun.direct_normal * max(np.cos(sun.zenith_rad), 0.0) + sun.diffuse_horizontal
            out = koschmieder_airlight(out, np.where(hit, hits.distance, np.inf), self._extinction,
                                       sky_photon_radiance(global_h))
        return out, lit_all

    def mean_photons(self, radiance_image) -> np.ndarray:
        """Mean photons per pixel (rows, cols, n_channels) from photon radiance, before Seidel.

        mu_p = pi L T cos^4(theta) / (4 N^2) V_mech p^2 t_exp: the camera equation for objects
        at infinity (:func:`optics.radiometry.image_irradiance`, magnification 0; at 10 m a
        4 mm lens images at m = 4e-4, a 0.08 % change), mechanical vignetting V_mech
        (:func:`optics.radiometry.mechanical_vignetting`, 1 when off), pixel area p^2 (fill
        factor folded into the QE, as EMVA 1288 does) and the exposure time.
        """
        p = self.params
        e = image_irradiance(radiance_image, p["f_number"],
                             field_angle_rad=self._field_angle[..., None],
                             transmittance=p["lens_transmittance"])
        return e * self._vignetting[..., None] * p["pixel_pitch_m"] ** 2 * p["exposure_s"]

    def apply_optics(self, photons) -> np.ndarray:
        """Seidel blur (field-dependent PSF) then the W311 distortion remap; identity if all 0.

        Runs on the rendered grid (image plus :func:`optics_margin_px` on each side) with
        H = 1 at the image's (not the grid's) half-diagonal; the caller crops the margin.

        :func:`optics.aberrations.apply_field_psf` (tiled, ``psf_tiles`` per axis) and
        :func:`optics.aberrations.apply_distortion`, at ``wavelength_m`` and ``f_number``
        (image-space f-number = object-space for objects at infinity).
        """
        p = self.params
        w = self._seidel
        kw = dict(pixel_pitch_m=p["pixel_pitch_m"], wavelength_m=p["wavelength_m"],
                  f_number=p["f_number"], field_radius_m=self._field_radius_m)
        if any(getattr(w, k) != 0.0 for k in ("W040", "W131", "W222", "W220")):
            photons = apply_field_psf(photons, w, tiles=(p["psf_tiles"], p["psf_tiles"]), **kw)
        if w.W311 != 0.0:
            photons = apply_distortion(photons, w.W311, **kw)
        return np.maximum(photons, 0.0)          # FFT round-off can leave -1e-12

    def step(self, k, t):
        p = self.params
        rows, cols, n_s = p["resolution_y"], p["resolution_x"], len(self._offsets)
        m, grid = self._margin, self._grid
        n_ch = len(self._channels)
        hits, _, _ = self.cast(self._dirs, t, p["max_range_m"])
        sun = self.sunlight_at(t)
        rad, lit = self.radiance(hits, sun, t)
        # Box filter over the pixel's samples (sample-major ray order).
        rad = rad.reshape(n_s, *grid, n_ch).mean(axis=0)
        photons = self.apply_optics(self.mean_photons(rad))[m:m + rows, m:m + cols]
        sm = self.sensor_model
        ideal = (sm.quantum_efficiency * photons).astype(np.float32)
        rng = stream(self.ctx.seed, self.name, k, "sensor_noise")
        if n_ch == 1:
            image = sm.expose(photons[..., 0], p["exposure_s"], rng)[..., None]
        else:
            image = sm.expose(photons, p["exposure_s"], rng)
        n_grid = grid[0] * grid[1]               # sample 0 is the pixel-centre ray
        dist = hits.distance[:n_grid].reshape(grid)[m:m + rows, m:m + cols].astype(np.float32)
        oid = hits.object_id[:n_grid].reshape(grid)[m:m + rows, m:m + cols]
        d3, d2 = ("row", "col", "channel"), ("row", "col")
        return {
            "timestamp": Var((), np.float64(t), "s",
                             "start of the exposure since simulation start (global shutter: the scene "
                             "is rendered at this instant for every pixel)"),
            **sensor_pose_vars(self.pose_at(t)),
            "image": Var(d3, image.astype(np.uint16), "DN",
                         "digital image (EMVA 1288 sensor output, demosaiced if Bayer)",
                         {"valid_max": np.uint16(sm.max_dn)}),
            "ideal_image": Var(d3, ideal, "e-",
                               "mean photo-electrons per pixel after the optics, before noise "
                               "and saturation"),
            "distance": Var(d2, dist, "m",
                            "radial distance from the camera centre to the surface seen by the "
                            "pixel-centre ray (through mirrors); NaN for sky"),
            "object_id": Var(d2, oid, "1", "index of the object seen by the pixel-centre ray, -1 for none"),
            "sun_zenith": Var((), np.float64(sun.zenith_rad), "rad", "apparent solar zenith angle"),
            "sun_azimuth": Var((), np.float64(sun.azimuth_rad), "rad",
                               "solar azimuth from north towards east"),
            "sunlit_fraction": Var((), np.float64(lit[:n_grid].reshape(grid)[m:m + rows, m:m + cols].mean()), "1",
                                   "fraction of pixel-centre rays ending on a sunlit facet"),
        }
