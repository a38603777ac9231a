"""Scanning LADAR with a divergent multi-ray beam: SICK LMS291 (VANE, Goodin et al. 2009, sec. 4)."""

from __future__ import annotations

import numpy as np

from hifi.caster import Hits
from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.api.rng import stream
from hifi.world.textures import HitTextures

from hifi.run.dataset import (annotation_var, axis_coords, direction_from_yaw_pitch, range_frame, range_layout,
                          sensor_pose_vars)
from .beam import beam_echoes, round_trip_s, subray_count, subray_directions, subray_pattern
from .radiometry import lambertian_return
from .weather import weather_of

RETURN_MODES = ("first", "last", "strongest", "average", "dual")

#: Laser wavelength of the LMS291 [m]: 905 nm infrared (SICK LMS291 data sheet).
LMS291_WAVELENGTH_M = 905e-9
#: Received power of a white Lambertian target at normal incidence at 1 m [W], ``P_t eta A_r / pi``
#: of the lidar equation (:func:`sensors.radiometry.lidar_received_power`) with the line lidars'
#: assumed optics (:class:`sensors.lidar.SickLMS`: 75 W peak, 30 mm receiver lens, efficiency 0.5).
LMS291_REFERENCE_POWER_W = 75.0 * 0.5 * (np.pi * 0.03 ** 2 / 4.0) / np.pi
#: SNR of a return exactly at ``detection_threshold``: the pulsed lidars' threshold-to-noise
#: ratio (:data:`sensors.lidar.SNR_THRESHOLD`), so noise power = threshold power / 4.75.
LMS291_THRESHOLD_SNR = 4.75


def _shared_value(table):
    """The value every object's entry of ``table`` (an object table, the entry of id -1 last)
    holds, bit for bit; None if they differ or there is no object."""
    objects = np.ascontiguousarray(table[:-1], dtype=np.float64)
    bits = objects.view(np.uint64)
    if objects.size and np.all(bits == bits[0]):
        return objects[0]
    return None


class SickLMS291(Sensor):
    """SICK LMS291 line scanner whose every pulse is a diverging Gaussian beam of N sub-rays.

    Scan: ``fov_deg`` centred on the sensor's x axis, one pulse every ``angular_step_deg``,
    ``rate_hz`` sweeps per second, each pulse at its own time and from where the sensor is then.
    Beam: full divergence ``divergence_rad``, aperture radius ``aperture_radius_m``; the number
    of sub-rays is VANE's Eq. (1) (:func:`sensors.beam.subray_count`) for ``target_scale_m``
    unless ``n_subrays`` > 0 sets it. Each sub-ray carries its Gaussian-profile share of the
    pulse (:func:`sensors.beam.subray_pattern`) and returns
    ``weight * reflectivity * cos(incidence) / R^2`` (:func:`sensors.radiometry.lambertian_return`)
    at ``2 R / c``; mirrors are followed by the caster. The returns are summed into the waveform
    with the emitted pulse (``pulse_width_s``, sampled in ``bin_width_s`` bins) and processed
    per ``return_mode`` (:func:`sensors.beam.process_returns`): mixed pixels arise from that
    processing, never from a special case. Range noise N(0, ``noise_sigma_m``) is added to each
    reported range.

    Defaults and their sources: 180 deg, 0.5 deg, 75 Hz, 80 m, 10 mm range sigma (SICK LMS291
    data sheet); ``divergence_rad`` 0.012 rad, a spot close to a metre across at 80 m as the
    VANE paper describes for the LMS291 (SICK's LMS1xx manual gives 0.015 rad for its
    successor); ``aperture_radius_m`` 0.004 m (8 mm beam at the optics cover, LMS1xx manual);
    ``pulse_width_s`` 5 ns (assumed: the typical 905 nm pulsed diode, as the HDL-64E's 5 ns);
    ``detection_threshold`` 1.1e-4, the return of a 10 % Lambertian target at 30 m
    (0.1 / 30^2), the data sheet's range at 10 % reflectivity; ``cutoff_m`` 3 m.

    Dataset (``frame``, ``step``, ``return``): the range-sensor variables of :mod:`hifi.run.dataset` per
    return slot (1, or 2 for ``dual``). The true variables (``distance``, ``x y z``,
    ``object_id``) describe the beam axis, what a pencil-beam lidar would see, repeated over
    ``return``; the reported ones (``distance_noisy``, ``x_noisy ...``, ``detected``,
    ``intensity`` = return energy) come from the processing, the point on the beam axis at the
    reported range. ``return_object_id`` names the object carrying most of a return's energy.
    With ``store_waveform``: ``waveform`` (``frame``, ``step``, ``bin``).
    ``received_power`` = :data:`LMS291_REFERENCE_POWER_W` x return energy, ``snr`` its ratio to
    the noise power that puts ``detection_threshold`` at SNR 4.75, ``reflectivity`` the
    apparent reflectivity energy x R^2 (NaN where nothing is reported).
    """

    model_name = "sick_lms291"
    default_rate_hz = 75.0
    PARAMS = {
        "fov_deg": Param("float", default=180.0, minimum=0.0, exclusive_minimum=True, maximum=360.0,
                         doc="scan field of view, centred on x [deg] (LMS291 data sheet)"),
        "angular_step_deg": Param("float", default=0.5, minimum=0.0, exclusive_minimum=True,
                                  doc="angle between pulses [deg] (0.5 or 1, LMS291 data sheet)"),
        "max_range_m": Param("float", default=80.0, minimum=0.0, exclusive_minimum=True,
                             doc="maximum range [m] (LMS291 data sheet)"),
        "divergence_rad": Param("float", default=0.012, minimum=0.0, maximum=0.5,
                                doc="full beam divergence at the 1/e^2 points [rad]"),
        "aperture_radius_m": Param("float", default=0.004, minimum=0.0, doc="beam radius at the aperture [m]"),
        "target_scale_m": Param("float", default=0.1, minimum=0.0, exclusive_minimum=True,
                                doc="scale of spatial variation to resolve, x of VANE Eq. (1) [m]"),
        "n_subrays": Param("int", default=0, minimum=0, maximum=10_000,
                           doc="sub-rays per pulse; 0: VANE Eq. (1)"),
        "return_mode": Param("str", default="average", choices=RETURN_MODES, doc="signal processing"),
        "pulse_width_s": Param("float", default=5e-9, minimum=0.0, exclusive_minimum=True,
                               doc="FWHM of the emitted Gaussian pulse [s]"),
        "bin_width_s": Param("float", default=0.5e-9, minimum=0.0, exclusive_minimum=True,
                             doc="receiver sampling interval [s] (7.5 cm of range)"),
        "detection_threshold": Param("float", default=1.1e-4, minimum=0.0,
                                     doc="smallest return energy reported (relative to a white target at 1 m)"),
        "cutoff_m": Param("float", default=3.0, minimum=0.0, doc="average mode: window behind the first return [m]"),
        "store_waveform": Param("bool", default=False, doc="write the per-pulse waveform"),
        "noise_sigma_m": Param("float", default=0.01, minimum=0.0, doc="range noise sigma [m] (LMS291 data sheet)"),
    }

    SIZE_PARAMS = {"angular_step_deg": "raise", "n_subrays": "lower", "target_scale_m": "raise"}
    #: Calibrated (benchmarks/calibrate_memory.py, fitted 281 B): per sub-ray, with the
    #: waveform processing.
    WORKING_BYTES_PER_RAY = 280.0

    def _n_steps(self) -> int:
        """Pulses per sweep, ``floor(fov_deg / angular_step_deg) + 1``."""
        return int(np.floor(self.params["fov_deg"] / self.params["angular_step_deg"] + 1e-9)) + 1

    def _n_sub(self) -> int:
        """Sub-rays per pulse: ``n_subrays``, or VANE's Eq. (1) when it is 0."""
        p = self.params
        return p["n_subrays"] or subray_count(p["aperture_radius_m"], p["max_range_m"],
                                              p["divergence_rad"], p["target_scale_m"])

    def _n_bins(self) -> int:
        """Receiver bins of the full range gate (``store_waveform``)."""
        p = self.params
        return int(np.ceil(round_trip_s(p["max_range_m"]) / p["bin_width_s"])) + 1

    def rays_per_frame(self):
        return self._n_steps() * self._n_sub()

    def frame_layout(self):
        n, m = self._n_steps(), 2 if self.params["return_mode"] == "dual" else 1
        out = range_layout((n, m), annotation=True, signal=True)
        out["return_object_id"] = ((n, m), np.dtype(np.int32))
        if self.params["store_waveform"]:
            out["waveform"] = ((n, self._n_bins()), np.dtype(np.float64))
        return out

    def uses_beam_kernel(self) -> bool:
        return True

    def setup_bytes(self):
        # sub-ray offsets and directions (n, 3), float64. The hit arrays (89 B a sub-ray) and, for
        # a sensor on a fixed body, the scene-frame sub-rays (48 B), kept from frame to frame
        # (_cast_out, _scene_subrays), are counted in WORKING_BYTES_PER_RAY, calibrated when
        # every step made them afresh (the peak of a step is the same).
        return 48 * self.rays_per_frame()

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        n_steps = self._n_steps()
        self.scan = np.radians(-p["fov_deg"] / 2.0 + np.arange(n_steps) * p["angular_step_deg"])
        self.n_sub = self._n_sub()
        self.uv, self.weights = subray_pattern(self.n_sub)
        self._sub_weights = np.tile(self.weights, n_steps)          # the weight of every sub-ray of a sweep
        self._axis = direction_from_yaw_pitch(self.scan, np.zeros_like(self.scan))
        off, d = subray_directions(self._axis, self.uv, p["divergence_rad"], p["aperture_radius_m"])
        self._offsets = off.reshape(-1, 3)
        self._dirs = d.reshape(-1, 3)
        self._dt = (self.scan - self.scan[0]) / (2.0 * np.pi * self.rate_hz)
        self._hits = None                     # the cast's arrays (_cast_out), made by the first step
        self._rays, self._rays_key = None, None   # scene-frame sub-rays of a fixed pose (_scene_subrays)
        self.n_returns = 2 if p["return_mode"] == "dual" else 1
        # Receiver window: every return within the maximum range (twice, for mirror paths).
        self.n_bins = self._n_bins()
        self._refl = ctx.scene.object_table("reflectivity", wavelength_m=LMS291_WAVELENGTH_M)
        self._textures = HitTextures(ctx.scene)      # textured scene-file parts: reflectance per hit
        self._mirror = ctx.scene.object_table("mirror")
        self._rough = ctx.scene.object_table("roughness_rad")
        self._class = ctx.scene.object_table("class_id")
        # A mirror fraction or roughness that every object shares (a scene without mirrors, one
        # roughness) goes to lambertian_return as that one number instead of a gather per
        # sub-ray: the same operations on the same values, so the same bits. The entry of a
        # miss (-1, last) is left out: a miss's energy is set to 0 whatever it is.
        self._mirror_all = _shared_value(self._mirror)
        self._rough_all = _shared_value(self._rough)
        self._row0 = np.arange(n_steps)[:, None] * self.n_sub     # first sub-ray of each pulse
        # Weather (sensors.weather): two-way extinction of fog, rain and snow on every sub-ray
        # at 905 nm (LMS291 data sheet); this model has no clear-air term, so clear weather is 0.
        w = weather_of(ctx)
        self._extinction = 0.0 if w.clear else w.extinction(LMS291_WAVELENGTH_M, 0.0)

    def coords(self):
        c = {"step": Var(("step",), self.scan, "rad", "scan angle (yaw) of the pulse"),
             "return": Var(("return",), np.arange(self.n_returns, dtype=np.int32), "1",
                           "return slot (dual: 0 first, 1 last)"),
             **axis_coords()}
        if self.params["store_waveform"]:
            c["bin"] = Var(("bin",), np.arange(self.n_bins) * self.params["bin_width_s"], "s",
                           "centre of the receiver time bin after emission")
        return c

    def attrs(self):
        return {"n_subrays": self.n_sub, "return_mode": self.params["return_mode"]}

    def _cast_out(self) -> Hits:
        """This model's hit arrays, kept from frame to frame (``Sensor.cast``'s ``out``): the
        step reads every output of the sub-rays but hands on only copies of the beam axis's
        rows, so no frame keeps them, and the cast does not fault in fresh arrays each frame."""
        n = self.rays_per_frame()
        hits = self._hits
        if hits is None or len(hits.distance) != n:
            hits = self._hits = Hits(np.empty(n), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)),
                                     np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32),
                                     np.empty(n, dtype=np.int8))
        return hits

    def _scene_subrays(self, times):
        """The sub-rays in the scene frame, as :meth:`Sensor.cast` makes them:
        ``(origins, directions, times)``. On a body that does not move, every sub-ray of every
        frame leaves from one pose, so they are the same rows each frame: kept from the last
        frame while the pose's rotation matrix and translation have the same bits (the caster
        only reads them; the step hands on copies of the axis rows)."""
        if self.ctx.scene.is_moving(self.name):
            return self._scene_rays(self._dirs, times, self._offsets)
        pose = self.pose_at(times[0])
        key = (pose.rotation.as_matrix().tobytes(), np.asarray(pose.translation, dtype=float).tobytes())
        if key != self._rays_key:
            self._rays = self._scene_rays(self._dirs, times, self._offsets)[:2]
            self._rays_key = key
        return (*self._rays, times)

    def step(self, k, t):
        p = self.params
        n_steps, n_sub = len(self.scan), self.n_sub
        times = np.repeat(t + self._dt, n_sub)
        origins, dirs, times_b = self._scene_subrays(times)
        hits = self.ctx.caster.cast(origins, dirs, times_b, p["max_range_m"], out=self._cast_out())
        oid, dist = hits.object_id, hits.distance
        mirror = self._mirror[oid] if self._mirror_all is None else self._mirror_all
        rough = self._rough[oid] if self._rough_all is None else self._rough_all
        energy = lambertian_return(self._textures.reflectance(self._refl, hits, times), hits.cos_incidence, dist,
                                   mirror, roughness_rad=rough)
        energy *= self._sub_weights        # in place: the same product, one array fewer
        if self._extinction > 0.0:
            energy *= np.exp(-2.0 * self._extinction * np.nan_to_num(dist))
        # a sub-ray that meets a surface through the emitter (distance 0: a scanner mounted on
        # it) brings back no energy: no echo at range 0 (``dist > 0`` is False for NaN, a miss)
        energy[~((oid >= 0) & (dist > 0.0))] = 0.0
        energy = energy.reshape(n_steps, n_sub)
        rng_sub = dist.reshape(n_steps, n_sub)
        echoes = beam_echoes(rng_sub, energy, bin_width_s=p["bin_width_s"], pulse_width_s=p["pulse_width_s"],
                             mode=p["return_mode"], detection_threshold=p["detection_threshold"],
                             cutoff_m=p["cutoff_m"], gate_bins=self.n_bins if p["store_waveform"] else 0,
                             threads=self.threads)
        reported, ret_energy, dominant, _ = echoes.report
        rand = stream(self.ctx.seed, self.name, k, "noise")
        noisy = reported + p["noise_sigma_m"] * rand.standard_normal(reported.shape)
        detected = np.isfinite(reported)
        # Beam axis = sub-ray 0 of every pulse: the truth and the line the reported point is on.
        # Strided views copied (np.array copies even at one sub-ray, where the view is the
        # whole hit array this model reuses next frame).
        ax = slice(None, None, n_sub)
        m = self.n_returns
        if m == 1:
            rep = np.array
        else:
            rep = lambda a: np.repeat(a, m, axis=0)  # noqa: E731
        axis_hits = Hits(rep(dist[ax]), rep(hits.point[ax]), rep(hits.normal[ax]),
                         rep(hits.direction[ax]), rep(oid[ax]), rep(hits.face_index[ax]),
                         rep(hits.bounces[ax]))
        pts = rep(origins[ax]) + rep(dirs[ax]) * noisy.reshape(-1)[:, None]
        ret_obj = oid[self._row0 + np.maximum(dominant, 0)]      # int32, (n_steps, m)
        ret_obj[dominant < 0] = -1
        dims, shape = ("step", "return"), (n_steps, m)
        extra = {
            "return_object_id": Var(dims, ret_obj, "1",
                                    "object carrying most of the return's energy, -1 for none"),
            "annotation": annotation_var(dims, self._class[axis_hits.object_id].reshape(shape),
                                         self.ctx.scene.class_names),
            **sensor_pose_vars(self.pose_at(t)),
        }
        if p["store_waveform"]:
            extra["waveform"] = Var(("step", "bin"), echoes.waveform, "1",
                                    "received energy per time bin (relative to a white target at 1 m)")
        e = np.where(detected, ret_energy, np.nan).reshape(-1)
        power = LMS291_REFERENCE_POWER_W * e
        noise_w = LMS291_REFERENCE_POWER_W * max(p["detection_threshold"], 1e-300) / LMS291_THRESHOLD_SNR
        return range_frame(dims, shape, timestamp=np.repeat(t + self._dt, m), yaw=np.repeat(self.scan, m),
                           pitch=np.zeros(n_steps * m), hits=axis_hits, detected=detected.reshape(-1),
                           distance_noisy=noisy.reshape(-1), points_noisy=pts,
                           intensity=np.nan_to_num(ret_energy).reshape(-1),
                           intensity_long_name="return energy relative to a white Lambertian target at normal "
                                               "incidence at 1 m",
                           received_power=power, snr=power / noise_w,
                           reflectivity=e * reported.reshape(-1) ** 2, extra=extra)
