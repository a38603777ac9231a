"""The radar sensor models: :class:`Radar` (``radar``, any preset) and its presets by device,
``radar_ars408`` and ``radar_awr1843``."""

from __future__ import annotations

import numpy as np

from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.api.rng import stream
from hifi.run.dataset import annotation_var, axis_coords, sensor_pose_vars

from .materials import object_materials, permittivity
from .presets import PRESETS
from .receiver import (angle_grid, antenna_gain, ca_cfar, cube_fast, cube_research, fold_velocity, group, local_peaks,
                       parabolic_offset, rain_specific_attenuation_db_km, received_power_w, snr_scale, steering)
from .scattering import MAX_RADAR_BOUNCES, shoot, tube_edges_spherical
from .waveform import ARRAYS, WINDOWS, RadarConfig, check, window_snr_loss
from ..weather import weather_of

#: Parameters a preset sets (every one may be overridden in the scenario).
PRESET_KEYS = tuple(PRESETS["awr1843"])

#: Rays per azimuth resolution cell (and per the same angle in elevation) when
#: ``ray_spacing_deg`` is not given: at least 4, so a target one resolution cell wide is hit by 4
#: tubes across; and no coarser than one range cell at the farthest range reported
#: (:meth:`Radar.ray_spacing_rad`).
RAYS_PER_RESOLUTION_CELL = 4

_DETECTION_VARS = {
    # name: (dtype, units, long_name)
    "range": (np.float64, "m", "range of the detection (interpolated range-FFT peak)"),
    "azimuth": (np.float64, "rad", "azimuth of the detection about the sensor z axis from x toward y (beamforming peak)"),
    "elevation": (np.float64, "rad", "elevation of the detection above the sensor xy plane; NaN where the sensor "
                                     "does not measure it"),
    "radial_velocity": (np.float64, "m s-1", "radial velocity, positive away, folded into the sensor's reported "
                                             "interval"),
    "rcs": (np.float64, "dBsm", "radar cross-section estimated from the SNR by the radar equation"),
    "snr": (np.float64, "dB", "signal-to-noise ratio of the detection cell (thermal noise of one cell = 0 dB)"),
    "object_id": (np.int32, "1", "object of the dominant scatterer in the detection cell (ground truth), -1 none"),
    "ghost": (np.bool_, "1", "the dominant scatterer's path touched more than one object (multipath ghost)"),
    "x": (np.float64, "m", "reported point x, scene frame"),
    "y": (np.float64, "m", "reported point y, scene frame"),
    "z": (np.float64, "m", "reported point z, scene frame (elevation 0 where the sensor does not measure it)"),
    "true_range": (np.float64, "m", "half the path length of the dominant scatterer (ground truth)"),
    "true_radial_velocity": (np.float64, "m s-1", "radial velocity of the dominant scatterer, unfolded (ground "
                                                  "truth)"),
}


def _opt(kind, doc, **kw):
    return Param(kind, default=None, doc=doc + "; default: the preset's", **kw)


class Radar(Sensor):
    """Automotive FMCW radar: SBR scattering, radar equation, range-Doppler processing,
    CA-CFAR, angle estimation and a detection list (docs/radar.md).

    Each frame: ray tubes over the field of view (``ray_spacing_deg`` apart) are traced
    through specular bounces (:func:`sensors.radar.scattering.shoot`); each hit's
    physical-optics echo, with its path length, Doppler (from the sensor's and the hit body's
    motion) and direction of arrival, gets the radar equation's power
    (:func:`sensors.radar.receiver.received_power_w`) and is placed in the range x Doppler x
    virtual-channel cube with the window's spectrum (``mode = "fast"``) or as a synthesised
    beat signal through the FFTs (``"research"``), over thermal noise kTBF. CA-CFAR on the
    channel-averaged map finds the cells; local maxima become detections, with range and
    velocity interpolated between bins and azimuth (and elevation, where the array has a
    vertical extent) from a beamforming scan over the virtual array. The frame is computed at
    its event time (the chirps' ``N_c T_c`` span is not resolved: no range migration).

    Dataset (``frame``, ``detection``) with the contract's ``range``, ``azimuth``,
    ``elevation``, ``radial_velocity``, ``rcs``, ``snr``, ``object_id``, ``ghost`` plus
    ``annotation`` (class of the object), reported points ``x``, ``y``, ``z`` and the truth of
    the dominant scatterer; ``n_detections`` per frame; unused rows NaN / -1 / false. The
    waveform's resolutions and ambiguities are global attributes.
    """

    model_name = "radar"
    default_rate_hz = 13.0          # nuScenes' radars (Caesar et al., CVPR 2020, Table 1: 13 Hz)
    default_preset = "awr1843"
    PARAMS = {
        "preset": Param("str", default=None, choices=tuple(PRESETS),
                        doc="device whose values the other parameters default to (sensors.radar.presets)"),
        "carrier_hz": _opt("float", "carrier (sweep centre) frequency [Hz]", minimum=1e9),
        "bandwidth_hz": _opt("float", "bandwidth swept while the ADC samples [Hz]", minimum=0.0, exclusive_minimum=True),
        "chirp_duration_s": _opt("float", "chirp ramp duration [s]", minimum=0.0, exclusive_minimum=True),
        "chirp_interval_s": _opt("float", "interval between chirps of one transmitter (TDM included) [s]",
                                 minimum=0.0, exclusive_minimum=True),
        "chirps_per_frame": _opt("int", "chirps per transmitter per frame (Doppler FFT size)", minimum=2),
        "adc_sample_rate_hz": _opt("float", "complex ADC sample rate [Hz]", minimum=0.0, exclusive_minimum=True),
        "adc_samples": _opt("int", "ADC samples per chirp (range FFT size)", minimum=8),
        "tx_power_dbm": _opt("float", "transmit power per transmitter [dBm]", maximum=40.0),
        "tx_gain_dbi": _opt("float", "transmit antenna peak gain [dBi]"),
        "rx_gain_dbi": _opt("float", "receive antenna peak gain [dBi]"),
        "noise_figure_db": _opt("float", "receiver noise figure [dB]", minimum=0.0),
        "system_loss_db": _opt("float", "losses of radome, feeds and processing [dB]", minimum=0.0),
        "azimuth_beamwidth_deg": _opt("float", "element 3 dB beamwidth in azimuth [deg]", minimum=0.0,
                                      exclusive_minimum=True, maximum=360.0),
        "elevation_beamwidth_deg": _opt("float", "element 3 dB beamwidth in elevation [deg]", minimum=0.0,
                                        exclusive_minimum=True, maximum=180.0),
        "fov_azimuth_deg": _opt("float", "azimuth field of view, full width [deg]", minimum=0.0,
                                exclusive_minimum=True, maximum=180.0),
        "fov_elevation_deg": _opt("float", "elevation field of view, full width [deg]", minimum=0.0,
                                  exclusive_minimum=True, maximum=90.0),
        "n_tx": _opt("int", "transmitters (TDM-MIMO)", minimum=1, maximum=3),
        "n_rx": _opt("int", "receivers", minimum=1, maximum=64),
        "rx_spacing_lambda": _opt("float", "receiver spacing [wavelengths]", minimum=0.0, exclusive_minimum=True),
        "array": Param("str", default=None, choices=ARRAYS, doc="virtual array layout; default: the preset's"),
        "window": Param("str", default=None, choices=WINDOWS, doc="range and Doppler FFT window; default: the preset's"),
        "min_range_m": _opt("float", "nearest range reported [m]", minimum=0.0),
        "max_range_m": _opt("float", "farthest range reported [m]", minimum=0.0, exclusive_minimum=True),
        "velocity_min_m_s": _opt("float", "lower end of the reported radial velocity interval [m/s] (none: "
                                          "-lambda / (4 Tc))"),
        "velocity_max_m_s": _opt("float", "upper end of the reported radial velocity interval [m/s] (none: "
                                          "+lambda / (4 Tc))"),
        "reports_elevation": Param("bool", default=None, doc="whether detections carry an elevation; default: the "
                                                               "preset's"),
        "cfar_pfa": _opt("float", "CA-CFAR design probability of false alarm per cell", minimum=0.0,
                         exclusive_minimum=True, maximum=0.5),
        "cfar_mode": Param("str", default=None, choices=("ca", "caso"),
                           doc="CFAR noise estimate: 'ca' mean of both sides, 'caso' the smaller side's; default: "
                               "the preset's"),
        "cfar_training_cells": _opt("int", "CA-CFAR training cells on each side in range", minimum=1),
        "cfar_guard_cells": _opt("int", "CA-CFAR guard cells on each side in range", minimum=0),
        "max_detections": _opt("int", "detections kept per frame, strongest first", minimum=1, maximum=100000),
        "ray_spacing_deg": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                                 doc="angle between neighbouring ray tubes [deg]; default: azimuth resolution / 4 or "
                                     "range resolution / max_range_m, the smaller"),
        "max_bounces": Param("int", default=MAX_RADAR_BOUNCES, minimum=1, maximum=8,
                             doc="specular bounces followed per tube (3: trihedral, road-car-road ghost)"),
        "diffuse": Param("bool", default=True, doc="add rough surfaces' incoherent echo (sensors.radar.materials)"),
        "mode": Param("str", default="fast", choices=("fast", "research"),
                      doc="'fast': binned window spectra; 'research': FFTs of synthesised beat signals"),
        "store_map": Param("bool", default=False, doc="write the range-Doppler map (channel mean, dB) per frame"),
    }

    # -- parameters -------------------------------------------------------------------------------
    @classmethod
    def resolve(cls, params) -> dict:
        """The preset's values overridden by every parameter given (not None)."""
        preset = params.get("preset") or cls.default_preset
        out = dict(PRESETS[preset])
        out.update({k: v for k, v in params.items() if k in PRESET_KEYS and v is not None})
        out["preset"] = preset
        for k in ("ray_spacing_deg", "max_bounces", "diffuse", "mode", "store_map"):
            out[k] = params.get(k, cls.PARAMS[k].default)
        return out

    @classmethod
    def check_params(cls, params):
        """Resolve the preset and refuse what a radar cannot do (:func:`sensors.radar.waveform.check`):
        ``ValueError("param: reason")``."""
        p = cls.resolve(params)
        cfg = RadarConfig.from_params(p)
        check(cfg, params)
        return {**params, **{k: p[k] for k in PRESET_KEYS}, "preset": p["preset"]}

    @property
    def config(self) -> RadarConfig:
        return RadarConfig.from_params(self.resolve(self.params))

    @staticmethod
    def ray_spacing_rad(p, cfg) -> float:
        """Angle between neighbouring tubes [rad]: ``ray_spacing_deg``, or the smaller of the
        azimuth resolution / :data:`RAYS_PER_RESOLUTION_CELL` and the angle of one range cell at
        ``max_range_m`` (a tube's footprint there no wider than a range cell)."""
        if p["ray_spacing_deg"]:
            return float(np.radians(p["ray_spacing_deg"]))
        return float(min(cfg.azimuth_resolution_rad / RAYS_PER_RESOLUTION_CELL, cfg.range_resolution_m / cfg.max_range_m))

    def _ray_grid(self):
        p = self.resolve(self.params)
        cfg = RadarConfig.from_params(p)
        step = self.ray_spacing_rad(p, cfg)
        na = max(int(np.ceil(cfg.fov_azimuth_rad / step)), 1)
        ne = max(int(np.ceil(cfg.fov_elevation_rad / step)), 1)
        da, de = cfg.fov_azimuth_rad / na, cfg.fov_elevation_rad / ne
        az = -cfg.fov_azimuth_rad / 2 + da * (np.arange(na) + 0.5)
        el = -cfg.fov_elevation_rad / 2 + de * (np.arange(ne) + 0.5)
        return az, el, da, de

    # -- cost ---------------------------------------------------------------------------------------
    def rays_per_frame(self):
        az, el, _, _ = self._ray_grid()
        return az.size * el.size * (1 + int(self.params.get("max_bounces") or MAX_RADAR_BOUNCES))

    def frame_layout(self):
        n = int(self.resolve(self.params)["max_detections"])
        out = {k: ((n,), np.dtype(v[0])) for k, v in _DETECTION_VARS.items()}
        out.update(annotation=((n,), np.dtype(np.uint8)), timestamp=((), np.dtype(np.float64)),
                   n_detections=((), np.dtype(np.int32)), sensor_position=((3,), np.dtype(np.float64)),
                   sensor_orientation=((4,), np.dtype(np.float64)), sensor_velocity=((3,), np.dtype(np.float64)))
        if self.params.get("store_map"):
            cfg = self.config
            out["rd_map"] = ((cfg.adc_samples, cfg.chirps_per_frame), np.dtype(np.float32))
        return out

    def setup_bytes(self):
        return 48 * self.rays_per_frame()

    def working_bytes(self):
        cfg = self.config
        return int(super().working_bytes() + (2 if self.params.get("mode") == "research" else 1) * cfg.cube_bytes()
                   + 8 * cfg.adc_samples * cfg.chirps_per_frame * 4)

    # -- run --------------------------------------------------------------------------------------
    def setup(self, ctx):
        super().setup(ctx)
        p = self.resolve(self.params)
        self._p = p
        self.cfg = cfg = RadarConfig.from_params(p)
        az, el, da, de = self._ray_grid()
        self._grid_shape = (az.size, el.size)
        a, e = (g.ravel() for g in np.meshgrid(az, el, indexing="ij"))
        self._dirs = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=1)
        self._edges = tube_edges_spherical(a, e, da, de)
        scene = ctx.scene
        classes = [scene.class_names[c] for c in scene.object_table("class_id")[:-1]]
        mats = object_materials(classes)
        self._eps = np.array([permittivity(m, cfg.carrier_hz) for m in mats] + [1.0 + 0j])
        from .materials import RADAR_MATERIALS
        self._rms = np.array([RADAR_MATERIALS[m].rms_height_m for m in mats] + [0.0])
        self._class = scene.object_table("class_id")
        self._grid_dirs, self._grid_az, self._grid_el = angle_grid(cfg)
        self._grid_steer = np.conj(steering(cfg, self._grid_dirs))           # (m, nv)
        rain = weather_of(ctx).rain_rate_mm_h
        self._rain_db_per_m = rain_specific_attenuation_db_km(cfg.carrier_hz, rain) / 1000.0
        self._win_loss = window_snr_loss(cfg.window, cfg.adc_samples) * window_snr_loss(cfg.window, cfg.chirps_per_frame)

    def coords(self):
        out = dict(axis_coords())
        if self.params.get("store_map"):
            cfg = self.config
            out["range_bin"] = Var(("range_bin",), np.arange(cfg.adc_samples) * cfg.range_resolution_m, "m",
                                   "range of the range-FFT bin")
            out["doppler_bin"] = Var(("doppler_bin",), (np.arange(cfg.chirps_per_frame) - cfg.chirps_per_frame // 2)
                                     * cfg.velocity_resolution_m_s, "m s-1", "radial velocity of the Doppler-FFT bin")
        return out

    def attrs(self):
        out = self.config.attrs()
        out.update(preset=self.resolve(self.params)["preset"], mode=self.params.get("mode", "fast"),
                   cfar_pfa=float(self.resolve(self.params)["cfar_pfa"]),
                   rain_attenuation_db_per_km=float(getattr(self, "_rain_db_per_m", 0.0) * 1000.0))
        return out

    def scatter(self, t):
        """This frame's echo contributions (:class:`sensors.radar.scattering.Contributions`) and the
        sensor pose; the diffuse phases come from the frame's ``"diffuse"`` stream."""
        pose = self.pose_at(t)
        rot = pose.rotation.as_matrix()
        origin = np.asarray(pose.translation, dtype=float)
        n = self._dirs.shape[0]
        dirs = self._dirs @ rot.T
        edges = self._edges @ rot.T
        kin = self.ctx.scene.kinematics_at(self.name, float(t))
        self._v_sensor = np.asarray(kin.velocity, dtype=float)
        rng = stream(self.ctx.seed, self.name, self._k, "diffuse")
        c = shoot(self.ctx.caster, self.ctx.scene, np.broadcast_to(origin, (n, 3)), dirs, np.zeros_like(edges), edges,
                  t, wavelength_m=self.cfg.wavelength_m, permittivity=self._eps, rms_height_m=self._rms,
                  radar_position=origin, radar_velocity=np.asarray(kin.velocity, dtype=float),
                  max_path_m=2.0 * self.cfg.max_unambiguous_range_m, max_bounces=self._p["max_bounces"],
                  diffuse=self._p["diffuse"], rng=rng, grid_shape=self._grid_shape)
        return c, pose, rot

    def step(self, k, t):
        self._k = k
        cfg, p = self.cfg, self._p
        c, pose, rot = self.scatter(t)
        dep = c.departure_scene @ rot
        arr = c.arrival_scene @ rot
        rain = 10.0 ** (self._rain_db_per_m * c.path_m / 10.0) if self._rain_db_per_m > 0 else 1.0
        power = received_power_w(cfg, np.abs(c.amplitude) ** 2, antenna_gain(cfg, dep, transmit=True),
                                 antenna_gain(cfg, arr, transmit=False), c.out_m, c.back_m, rain)
        amp = np.sqrt(power * snr_scale(cfg)) * np.exp(1j * np.angle(c.amplitude))
        rng_m = 0.5 * c.path_m
        vr = 0.5 * c.path_rate_m_s
        keep = (rng_m < cfg.max_unambiguous_range_m) & (power > 0.0)   # the IF filter passes up to f_s
        sc = group(amp[keep], rng_m[keep] / cfg.range_resolution_m,
                   fold_velocity(vr[keep], -cfg.max_unambiguous_velocity_m_s, cfg.max_unambiguous_velocity_m_s)
                   / cfg.velocity_resolution_m_s, arr[keep], c.object_id[keep], c.ghost[keep], rng_m[keep], vr[keep],
                   cfg.azimuth_resolution_rad / 8.0)
        rng = stream(self.ctx.seed, self.name, k, "noise")
        cube = (cube_research if p["mode"] == "research" else cube_fast)(cfg, sc, rng)
        return self._detect(k, t, cube, sc, pose)

    def _detect(self, k, t, cube, sc, pose):
        cfg, p = self.cfg, self._p
        nv, nr, nd = cube.shape
        pmap = np.mean(np.abs(cube) ** 2, axis=0)
        det = ca_cfar(pmap, p["cfar_pfa"], p["cfar_training_cells"], p["cfar_guard_cells"], nv, p["cfar_mode"])
        det &= local_peaks(pmap)
        rbin = np.arange(nr) * cfg.range_resolution_m
        det &= ((rbin >= p["min_range_m"]) & (rbin <= p["max_range_m"]))[:, None]
        m, n = np.nonzero(det)
        order = np.argsort(-pmap[m, n], kind="stable")[:int(p["max_detections"])]
        m, n = m[order], n[order]
        db = 10.0 * np.log10(np.maximum(pmap, np.finfo(float).tiny))
        mm, mp = np.clip(m - 1, 0, nr - 1), np.clip(m + 1, 0, nr - 1)
        ro, rpk = parabolic_offset(db[mm, n], db[m, n], db[mp, n])
        do, dpk = parabolic_offset(db[m, (n - 1) % nd], db[m, n], db[m, (n + 1) % nd])
        snr_db = np.maximum(rpk, dpk)
        rng_m = (m + ro) * cfg.range_resolution_m
        v_fold = (n - nd // 2 + do) * cfg.velocity_resolution_m_s
        # angle: beamforming scan of the channel vector at the peak cell
        x = cube[:, m, n].T                                            # (det, nv)
        if x.shape[0]:
            beam = np.abs(x @ self._grid_steer.T) ** 2                 # (det, grid)
            best = np.argmax(beam, axis=1)
            az, el = self._grid_az[best], self._grid_el[best]
        else:
            az = el = np.zeros(0)
        # ground truth: the strongest grouped scatterer within one bin of the peak
        oid = np.full(m.size, -1, dtype=np.int32)
        ghost = np.zeros(m.size, dtype=bool)
        t_range = np.full(m.size, np.nan)
        t_vel = np.full(m.size, np.nan)
        if m.size and sc.amplitude.size:
            dr = np.abs(sc.range_bin[None, :] - m[:, None])
            dd = np.abs(np.mod(sc.doppler_bin[None, :] + nd / 2 - n[:, None] + nd / 2, nd) - nd / 2)
            near = (dr <= 1.5) & (dd <= 1.5)
            score = np.where(near, np.abs(sc.amplitude)[None, :], -1.0)
            j = np.argmax(score, axis=1)
            ok = score[np.arange(m.size), j] >= 0.0
            oid[ok] = sc.object_id[j[ok]]
            ghost[ok] = sc.ghost[j[ok]]
            t_range[ok] = sc.range_m[j[ok]]
            t_vel[ok] = sc.radial_velocity_m_s[j[ok]]
        # velocity as the sensor reports it: the FFT's fold, or (a sensor that resolves the Doppler
        # ambiguity over a wider interval) the alias nearest the truth, folded into that interval
        vmax = cfg.max_unambiguous_velocity_m_s
        lo, hi = cfg.velocity_min_m_s, cfg.velocity_max_m_s
        if np.isclose(lo, -vmax) and np.isclose(hi, vmax):
            v_rep = v_fold
        else:
            ref = np.where(np.isfinite(t_vel), t_vel, v_fold)
            v_rep = fold_velocity(v_fold + 2.0 * vmax * np.round((ref - v_fold) / (2.0 * vmax)), lo, hi)
        # RCS from the SNR by the radar equation at the reported range and direction
        u = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=1)
        gain = antenna_gain(cfg, u, transmit=True) * antenna_gain(cfg, u, transmit=False)
        per_m2 = received_power_w(cfg, 1.0, gain, 1.0, np.maximum(rng_m, 1e-3), np.maximum(rng_m, 1e-3)) \
            * snr_scale(cfg) * self._win_loss
        rcs_db = snr_db - 10.0 * np.log10(np.maximum(per_m2, np.finfo(float).tiny))
        el_rep = el if (cfg.reports_elevation and cfg.has_elevation) else np.full(m.size, np.nan)
        el_pt = el if (cfg.reports_elevation and cfg.has_elevation) else np.zeros(m.size)
        pts_sensor = rng_m[:, None] * np.stack([np.cos(el_pt) * np.cos(az), np.cos(el_pt) * np.sin(az),
                                                 np.sin(el_pt)], axis=1)
        pts = pose.apply(pts_sensor) if m.size else np.zeros((0, 3))
        nmax = int(p["max_detections"])
        values = {"range": rng_m, "azimuth": az, "elevation": el_rep, "radial_velocity": v_rep, "rcs": rcs_db,
                  "snr": snr_db, "object_id": oid, "ghost": ghost, "x": pts[:, 0], "y": pts[:, 1], "z": pts[:, 2],
                  "true_range": t_range, "true_radial_velocity": t_vel}
        out = {}
        for name, (dtype, units, long_name) in _DETECTION_VARS.items():
            fill = -1 if dtype is np.int32 else (False if dtype is np.bool_ else np.nan)
            a = np.full(nmax, fill, dtype=dtype)
            a[:m.size] = values[name]
            out[name] = Var(("detection",), a, units, long_name)
        cls_id = np.zeros(nmax, dtype=np.uint8)
        cls_id[:m.size] = np.where(oid >= 0, self._class[oid], 0)
        out["annotation"] = annotation_var(("detection",), cls_id, self.ctx.scene.class_names)
        out["timestamp"] = Var((), np.float64(t), "s", "time of the measurement since simulation start")
        out["n_detections"] = Var((), np.int32(m.size), "1", "detections in this frame (the first rows)")
        out.update(sensor_pose_vars(pose))
        out["sensor_velocity"] = Var(("xyz",), np.asarray(self._v_sensor, dtype=float), "m s-1",
                                     "velocity of the sensor origin at the frame time, scene frame")
        if p["store_map"]:
            out["rd_map"] = Var(("range_bin", "doppler_bin"), db.astype(np.float32), "dB",
                                "range-Doppler power averaged over the virtual channels, relative to one cell's "
                                "thermal noise")
        return out


class RadarARS408(Radar):
    """Continental ARS408-21 (the nuScenes radar): ``preset`` ``ars408_far`` (default) or
    ``ars408_near`` (sensors.radar.presets)."""

    model_name = "radar_ars408"
    default_preset = "ars408_far"
    PARAMS = {**Radar.PARAMS, "preset": Param("str", default=None, choices=("ars408_far", "ars408_near"),
                                              doc="scan: 'ars408_far' (default) or 'ars408_near'")}


class RadarAWR1843(Radar):
    """Texas Instruments AWR1843BOOST with the mmWave SDK's profile_2d chirp (sensors.radar.presets)."""

    model_name = "radar_awr1843"
    default_preset = "awr1843"
    default_rate_hz = 10.0          # frameCfg: 100 ms frames
