"""Line lidars with a rotating mirror (:class:`LineLidar`) and their presets: Ibeo LUX, SICK LMS.
"""

from __future__ import annotations

import numpy as np

from hifi.run.dataset import range_layout, yaw_pitch
from hifi.api.model import Var
from hifi.api.params import Param

from .firing import mirror_scan_directions
from .footprint import footprint_params
from .pulsed import PulseBatch, PulsedLidar
from .signal import common_params


class LineLidar(PulsedLidar):
    """Line scanner: fixed emitters firing at a rotating mirror (Ibeo LUX, SICK LMS).

    The mirror turns once per frame (``rate_hz``); rays fire every ``angular_step_deg`` from
    ``fov_min_deg`` to ``fov_max_deg`` (increasing yaw), all layers of a step at once, each step
    at its own time ``t + (angle - fov_min) / (2 pi rate)``. Directions:
    :func:`mirror_scan_directions`. Noise, detection and intensity as :class:`RotatingLidar`.
    Dims: (``frame``, ``step``, ``layer``), plus a trailing ``return`` of 2 for
    ``return_mode = "dual"`` where a model offers it (:func:`footprint_params` with ``dual``).
    """

    layers_deg: tuple = (0.0,)
    SIZE_PARAMS = {"angular_step_deg": "raise", "n_subrays": "lower"}
    #: The rotating lidars' measurement chain (benchmarks/calibrate_memory.py: HDL-64E S2
    #: fitted 79 B; the Ibeo LUX's 49 B comes from runs too small to fit well): per cast ray.
    WORKING_BYTES_PER_RAY = 80.0

    def _n_steps(self) -> int:
        """Shots per sweep, ``floor((fov_max_deg - fov_min_deg) / angular_step_deg) + 1``."""
        p = self.params
        return int(np.floor((p["fov_max_deg"] - p["fov_min_deg"]) / p["angular_step_deg"] + 1e-9)) + 1

    def rays_per_frame(self):
        return self._n_steps() * len(self.layers_deg) * self.params["n_subrays"]

    def frame_layout(self):
        dual = (2,) if self.params["return_mode"] == "dual" else ()
        return range_layout((self._n_steps(), len(self.layers_deg)) + dual, annotation=True, signal=True)

    def setup_bytes(self):
        # per pulse: direction, yaw, pitch, time, bias, laser gain, and the sub-rays kept
        return (64 + self._subray_bytes()) * self._n_steps() * len(self.layers_deg)

    def attrs(self):
        return {"return_mode": self.params["return_mode"]}

    @classmethod
    def _params(cls, *, fov_min_deg, fov_max_deg, angular_step_deg, **kw):
        p = {"fov_min_deg": Param("float", default=fov_min_deg, minimum=-180.0, maximum=180.0,
                                  doc="first scan angle (yaw) [deg]"),
             "fov_max_deg": Param("float", default=fov_max_deg, minimum=-180.0, maximum=180.0,
                                  doc="last scan angle (yaw) [deg]"),
             "angular_step_deg": Param("float", default=angular_step_deg, minimum=0.0, exclusive_minimum=True,
                                       doc="angle between shots [deg]")}
        p.update(common_params(**kw))
        return p

    @classmethod
    def check_params(cls, p):
        p = super().check_params(p)
        if p["fov_max_deg"] < p["fov_min_deg"]:
            raise ValueError(f"fov_max_deg: must be >= fov_min_deg ({p['fov_min_deg']})")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        n = self._n_steps()
        self.mirror_yaw = np.radians(p["fov_min_deg"] + np.arange(n) * p["angular_step_deg"])
        self.layer_pitch = np.radians(np.asarray(self.layers_deg, dtype=float))
        d = mirror_scan_directions(self.mirror_yaw, self.layer_pitch)
        self._dirs = d.reshape(-1, 3)
        self._yaw, self._pitch = yaw_pitch(self._dirs)
        dt = (self.mirror_yaw - self.mirror_yaw[0]) / (2 * np.pi * self.rate_hz)
        self._dt = np.repeat(dt, len(self.layer_pitch))
        self._bias = np.tile(self._laser_bias(len(self.layer_pitch)), n)

    def coords(self):
        c = {"step": Var(("step",), self.mirror_yaw, "rad", "mirror (scan) angle of the shot"),
             "layer": Var(("layer",), self.layer_pitch, "rad", "emitted pitch of the layer")}
        if self.params["return_mode"] == "dual":
            c["return"] = Var(("return",), np.arange(2, dtype=np.int32), "1",
                              "return slot (dual: 0 strongest, 1 last, or second-strongest if the last is the "
                              "strongest)")
        c.update(self._axis_coords())
        return c

    def step(self, k, t):
        times = t + self._dt
        shape = (len(self.mirror_yaw), len(self.layer_pitch))
        hits, origins, dirs, echoes = self._cast_beams(self._dirs, times, grid=shape,
                                                       ring_order=np.argsort(self.layer_pitch))
        batch = PulseBatch(origins, dirs, self._bias, ("step", "layer"), shape, times, self._yaw, self._pitch)
        return self._measure_returns(k, t, hits, batch, echoes)


class IbeoLux(LineLidar):
    """Ibeo LUX: 4 layers at -1.6, -0.8, +0.8, +1.6 deg, -50 to +35 deg in 0.25 deg steps, 12.5 Hz.

    Range about 200 m, 10 % reflectivity at 50 m (Ibeo LUX data sheet, as used by BlenSor
    sec. 3.3); the 80 % at 200 m upper threshold is chosen by analogy with the HDL-64E (the data
    sheet gives the range without a reflectivity). Range sigma 4 cm (data sheet: resolution
    4 cm).
    """

    model_name = "ibeo_lux"
    default_rate_hz = 12.5
    layers_deg = (-1.6, -0.8, 0.8, 1.6)
    intensity_long_name = "reported intensity, 8-bit code 0..255 (assumed scale; the LUX reports echo pulse width)"
    PARAMS = LineLidar._params(
        fov_min_deg=-50.0, fov_max_deg=35.0, angular_step_deg=0.25, max_range_m=200.0,
        distance_lower_m=50.0, distance_upper_m=200.0, source="Ibeo LUX data sheet",
        min_range_m=0.3, min_range_source="Ibeo LUX data sheet: 0.3 m", receiver_aperture_m=0.03,
        aperture_source="assumed", detection_points=((0.10, 50.0),), detection_source="Ibeo LUX data sheet",
        range_noise_floor_m=0.01, range_noise_snr1_m=0.05,
        noise_source="assumed; the data sheet's 4 cm is its resolution, modelled by range_resolution_m",
        range_resolution_m=0.04, resolution_source="Ibeo LUX data sheet: 4 cm",
        intensity_source="assumed 8-bit scale")
    PARAMS = footprint_params(PARAMS, divergence_rad=np.radians(0.08), divergence_v_rad=np.radians(0.8),
                               source="Ibeo LUX data sheet: 0.08 x 0.8 deg")


class SickLMS(LineLidar):
    """SICK LMS 2xx: one layer over 180 deg (-90 to +90), 1 deg steps at 75 Hz.

    80 m range, 10 % reflectivity at 30 m, 10 mm statistical range error (SICK LMS291 data
    sheet); the 80 % at 80 m upper threshold is chosen by analogy with the HDL-64E.
    """

    model_name = "sick_lms"
    default_rate_hz = 75.0
    layers_deg = (0.0,)
    intensity_long_name = "reported intensity, 8-bit remission code 0..255 (assumed scale)"
    PARAMS = LineLidar._params(
        fov_min_deg=-90.0, fov_max_deg=90.0, angular_step_deg=1.0, max_range_m=80.0,
        distance_lower_m=30.0, distance_upper_m=80.0, source="SICK LMS291 data sheet",
        receiver_aperture_m=0.03, aperture_source="assumed", detection_points=((0.10, 30.0),),
        detection_source="SICK LMS291 data sheet", range_noise_floor_m=0.008, range_noise_snr1_m=0.05,
        noise_source="LMS291 data sheet: 10 mm statistical error, floor chosen so a 10 % target at 30 m has "
                     "about that",
        range_resolution_m=0.01, resolution_source="LMS291 data sheet: 10 mm resolution (cm mode)",
        intensity_source="assumed 8-bit scale")
    PARAMS = footprint_params(PARAMS, divergence_rad=0.012, aperture_radius_m=0.004,
                               source="as sick_lms291: 12 mrad, about a 1 m spot at 80 m")
