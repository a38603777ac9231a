"""Time-of-Flight camera (BlenSor sec. 3.4): per-pixel noise and backfolding."""

from __future__ import annotations

import numpy as np

from hifi.constants import SPEED_OF_LIGHT_M_S
from hifi.api.model import Sensor
from hifi.api.params import Param
from hifi.api.rng import stream
from hifi.world.surfaces import RETROREFLECTOR
from hifi.world.textures import HitTextures

from hifi.run.dataset import (annotation_var, axis_coords, image_coords, range_frame, range_layout, sensor_pose_vars,
                          yaw_pitch)
from .depthmap import pinhole_directions
from .noise import noisy_range
from .radiometry import lambertian_return, oren_nayar_coefficients
from .surfaces import retroreflector_reflectivity
from .weather import weather_of


#: Wavelength of the SR4000's illumination [m]: 850 nm LEDs (MESA Imaging SR4000 data sheet).
SR4000_WAVELENGTH_M = 850e-9
#: Illumination power of the SR4000 [W] (assumed: about 1 W of 850 nm LED light, the order of the
#: SR4000's 24-LED array; the data sheet gives no figure).
SR4000_ILLUMINATION_W = 1.0
#: Receiver lens aperture diameter [m] (assumed: a 10 mm f/1.4 lens, the SR4000's standard optics).
SR4000_APERTURE_M = 10e-3 / 1.4
#: Optical efficiency (assumed 0.5, lens + 850 nm filter).
SR4000_EFFICIENCY = 0.5
#: Received power per pixel from a white Lambertian target at normal incidence at 1 m [W]: the
#: lidar equation (:func:`sensors.radiometry.lidar_received_power`) with each of the 176 x 144
#: pixels lit by its share of the illumination.
SR4000_REFERENCE_POWER_W = (SR4000_ILLUMINATION_W / (176 * 144) * SR4000_EFFICIENCY
                            * (np.pi * SR4000_APERTURE_M ** 2 / 4.0) / np.pi)
#: Noise power per pixel [W] (assumed: SNR 10 for a 10 % target at 5 m, the middle of the
#: SR4000's calibrated range, so the reported snr is a relative figure of merit).
SR4000_NOISE_POWER_W = SR4000_REFERENCE_POWER_W * 0.1 / 5.0 ** 2 / 10.0


def backfold(distance_m, max_range_m):
    """BlenSor Eq. (3): distances in the upper half of the range fold into the lower half.

    ``d' = d - R/2`` for ``R/2 < d <= R``, unchanged below ``R/2``, NaN beyond ``R``: a
    continuous-wave ToF camera whose unambiguous range is ``R/2`` reports a far surface as a
    near one.
    """
    d = np.asarray(distance_m, dtype=float)
    half = max_range_m / 2.0
    out = np.where(d > half, d - half, d)
    return np.where(d > max_range_m, np.nan, out)


def phase_wrap(distance_m, modulation_frequency_hz):
    """Physical phase wrap of an AMCW ToF camera: ``d mod c / (2 f_mod)`` [m].

    The phase of the returned modulation is 4 pi f d / c, known only modulo 2 pi, so ranges
    repeat every unambiguous range c / (2 f) (Lange & Seitz, IEEE J. Quantum Electron. 37(3),
    2001, Eq. 2). For the SR4000 at 30 MHz that is 4.997 m.
    """
    d = np.asarray(distance_m, dtype=float)
    return np.mod(d, SPEED_OF_LIGHT_M_S / (2.0 * modulation_frequency_hz))


class ToFSR4000(Sensor):
    """MESA SwissRanger SR4000-type ToF camera: 176 x 144 pixels, 43.6 x 34.6 deg.

    Every pixel measures the radial distance along its ray at the frame time, plus
    N(0, ``noise_sigma_m``) (0.004 m, BlenSor's default for the SR4000). With ``backfolding``
    the distance is folded by BlenSor's Eq. (3) (:func:`backfold`); with
    ``modulation_frequency_hz`` > 0 the physical phase wrap :func:`phase_wrap` is applied
    instead. Beyond ``max_range_m`` nothing is reported. ``received_power`` is the per-pixel
    lidar equation with assumed SR4000 optics (:data:`SR4000_REFERENCE_POWER_W` times the
    relative Lambertian return), ``snr`` its ratio to :data:`SR4000_NOISE_POWER_W`,
    ``reflectivity`` the apparent reflectivity ``rho cos(i) (1 - mirror)``; ``intensity`` stays
    the relative Lambertian return (white target at normal incidence at 1 m = 1), the SR4000's
    amplitude image up to its unpublished scale. Dims (``frame``, ``row``, ``col``)
    with the range-sensor variables; the reported point lies on the pixel's ray at the reported
    distance.
    """

    model_name = "tof_sr4000"
    default_rate_hz = 30.0
    PARAMS = {
        "resolution_x": Param("int", default=176, minimum=1, doc="columns (SR4000 data sheet)"),
        "resolution_y": Param("int", default=144, minimum=1, doc="rows (SR4000 data sheet)"),
        "fov_x_deg": Param("float", default=43.6, minimum=0.0, exclusive_minimum=True, maximum=179.0,
                           doc="horizontal field of view [deg] (SR4000 data sheet)"),
        "fov_y_deg": Param("float", default=34.6, minimum=0.0, exclusive_minimum=True, maximum=179.0,
                           doc="vertical field of view [deg] (SR4000 data sheet)"),
        "noise_sigma_m": Param("float", default=0.004, minimum=0.0, doc="per-pixel range sigma [m] (BlenSor)"),
        "max_range_m": Param("float", default=10.0, minimum=0.0, exclusive_minimum=True,
                             doc="farthest distance measured [m] (BlenSor's ToF default)"),
        "backfolding": Param("bool", default=False, doc="fold the upper half of the range (BlenSor Eq. 3)"),
        "modulation_frequency_hz": Param("float", default=0.0, minimum=0.0,
                                         doc="if > 0, wrap distances at c / (2 f) [Hz] (SR4000: 30e6)"),
    }

    SIZE_PARAMS = {"resolution_x": "lower", "resolution_y": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, fitted 76 B).
    WORKING_BYTES_PER_RAY = 80.0

    def rays_per_frame(self):
        return self.params["resolution_x"] * self.params["resolution_y"]

    def frame_layout(self):
        return range_layout((self.params["resolution_y"], self.params["resolution_x"]), annotation=True, signal=True)

    def setup_bytes(self):
        return 40 * self.rays_per_frame()          # directions (n, 3), yaw, pitch, float64

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        d, _ = pinhole_directions(p["resolution_x"], p["resolution_y"], np.radians(p["fov_x_deg"]),
                                  np.radians(p["fov_y_deg"]))
        self._shape = d.shape[:2]
        self._dirs = d.reshape(-1, 3)
        self._yaw, self._pitch = yaw_pitch(self._dirs)
        self._refl = ctx.scene.object_table("reflectivity", wavelength_m=SR4000_WAVELENGTH_M)
        self._textures = HitTextures(ctx.scene)      # textured scene-file parts: reflectance per hit
        self._mirror = ctx.scene.object_table("mirror")
        self._rough = ctx.scene.object_table("roughness_rad")
        # Oren-Nayar's A and B per object, gathered per pixel: the bits of computing them per pixel
        self._oren_nayar = oren_nayar_coefficients(self._rough)
        self._class = ctx.scene.object_table("class_id")
        # Weather (sensors.weather): two-way extinction at the SR4000's 850 nm on the amplitude;
        # no clear-air term (indoor ranges), so clear weather is 0.
        w = weather_of(ctx)
        self._extinction = 0.0 if w.clear else w.extinction(SR4000_WAVELENGTH_M, 0.0)
        # Glass, water and retroreflectors (docs/surfaces.md): the amplitude through panes and
        # water reflections, and a retroreflector's return; nothing changes in other scenes.
        self._surfaces = bool(getattr(ctx.caster, "has_surfaces", False))
        kind = ctx.scene.object_table("kind")
        self._retro = None
        if np.any(kind == RETROREFLECTOR):
            self._retro = (kind == RETROREFLECTOR, ctx.scene.object_table("retroreflection_cd_lx_m2"),
                           ctx.scene.object_table("retroreflection_30deg_cd_lx_m2"))

    def coords(self):
        p = self.params
        return {**image_coords(p["resolution_x"], p["resolution_y"]),
                **axis_coords()}

    def step(self, k, t):
        p = self.params
        n = self._dirs.shape[0]
        throughput = None
        if self._surfaces:
            sh, origins, dirs = self.cast_surfaces(self._dirs, t, p["max_range_m"])
            hits, throughput = sh.hits, sh.throughput
        else:
            hits, origins, dirs = self.cast(self._dirs, t, p["max_range_m"])
        # The frame's noise deviates, one draw of n from its stream (the numbers of a draw here),
        # made on another of the caster's threads while this one works out the amplitude (while
        # both cast, it would hold one of them up).
        deviates = self.beside(lambda: stream(self.ctx.seed, self.name, k, "noise").standard_normal(n))
        oid = hits.object_id
        intensity = self._intensity(hits, self._textures.reflectance(self._refl, hits, t), throughput)
        power = SR4000_REFERENCE_POWER_W * intensity
        measured = self._measured(hits.distance, deviates())
        # a surface through the emitter (distance 0: a camera mounted on it) returns nothing
        det = hits.hit & np.isfinite(measured) & (hits.distance > 0.0)
        # the reported point on the pixel's ray, column by column (numpy's broadcast over an
        # inner axis of 3 is several times slower; the same values)
        reported = np.empty((3, n))
        for c in range(3):
            np.add(origins[:, c], dirs[:, c] * measured, out=reported[c])
        return range_frame(("row", "col"), self._shape, timestamp=t, yaw=self._yaw, pitch=self._pitch, hits=hits,
                           detected=det, distance_noisy=measured, points_noisy=reported.T, intensity=intensity,
                           intensity_long_name="amplitude relative to a white Lambertian target at normal "
                                               "incidence at 1 m",
                           received_power=power, snr=power / SR4000_NOISE_POWER_W,
                           reflectivity=intensity * hits.distance ** 2,
                           extra={"annotation": annotation_var(("row", "col"), self._class[oid].reshape(self._shape),
                                                               self.ctx.scene.class_names),
                                  **sensor_pose_vars(self.pose_at(t))})

    def _measured(self, distance_m, deviates):
        """The reported distance [m] of pixels at ``distance_m``: the noise of ``deviates`` (one
        standard normal deviate per pixel), then the phase wrap or BlenSor's backfolding."""
        p = self.params
        measured = noisy_range(distance_m, p["noise_sigma_m"], deviates)
        if p["modulation_frequency_hz"] > 0:
            return phase_wrap(measured, p["modulation_frequency_hz"])
        if p["backfolding"]:
            return backfold(measured, p["max_range_m"])
        return measured

    def _intensity(self, hits, reflectance, throughput):
        """The amplitude of pixels' ``hits`` relative to a white Lambertian target at normal
        incidence at 1 m: Oren-Nayar return, retroreflectors, glass and water (``throughput``,
        one way; None: none), weather; NaN where nothing is hit."""
        oid = hits.object_id
        a, b = self._oren_nayar
        intensity = lambertian_return(reflectance, hits.cos_incidence, hits.distance, self._mirror[oid],
                                      coefficients=(a[oid], b[oid]))
        if self._retro is not None:
            retro, r_a, r_a30 = self._retro
            on = retro[oid]
            retro_rho = np.where(on, retroreflector_reflectivity(np.where(on, r_a[oid], 1.0), hits.cos_incidence,
                                                                 np.where(on, r_a30[oid], np.nan)), 0.0)
            intensity = intensity + retro_rho / hits.distance ** 2
        if throughput is not None:
            intensity = intensity * (throughput * throughput)
        if self._extinction > 0.0:
            intensity = intensity * np.exp(-2.0 * self._extinction * hits.distance)
        return intensity
