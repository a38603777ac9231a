"""Ouster OS0 / OS1 / OS2 lidars, built from the sensor's own metadata JSON.

An Ouster describes itself in a metadata JSON (what the sensor's HTTP API returns and
``ouster-sdk`` writes beside every recording): per-beam altitude and azimuth angles, the offset
of the beam origins from the rotation axis, the transform from its lidar frame to its sensor
frame, the mode (columns per frame x frames per second) and the UDP packet layout. The model
:class:`Ouster` reads that file (``metadata_file``) or one of four shipped real files
(``preset``: ``os0_128``, ``os1_64``, ``os1_128``, ``os2_128``; ``sensors/data/README.md``),
fires every column of the frame from the beam geometry Ouster defines
(:func:`~sensors.ouster_metadata.ouster_beams`) and runs the lidar signal chain of
:mod:`sensors.lidar`, then adds what an Ouster reports besides range: ``signal`` (photons),
``near_ir`` (ambient photons) and the calibrated reflectivity byte.

The JSON is read with :mod:`json` (:func:`~sensors.ouster_metadata.read_metadata`), both the
legacy flat layout (firmware <= 2.x) and the nested one (``sensor_info``, ``beam_intrinsics``,
``lidar_intrinsics``, ``config_params``, ``lidar_data_format``, ...), with ouster-sdk's defaults
for what older files lack. ouster-sdk itself is not needed; the tests use it as the independent
implementation.

The metadata format (:func:`~sensors.ouster_metadata.read_metadata`,
:class:`~sensors.ouster_metadata.OusterMetadata`, the modes and profiles,
:func:`~sensors.ouster_metadata.ouster_beams`, :func:`~sensors.ouster_metadata.effective_metadata`)
is :mod:`sensors.ouster_metadata`; its names are importable from here too.

References
----------
Ouster, *Firmware user manual*, "Sensor Data: Coordinate Frames and XYZ Calculation" and
"Lidar Data Format" (static.ouster.dev/sensor-docs). ouster-lidar/ouster-sdk @ 46b7bcee
(BSD-3-Clause): ``ouster_core/src/xyzlut.cpp`` (``make_xyz_lut``), ``metadata.cpp`` and
``sensor_info.cpp`` (defaults), ``parsing.cpp`` (packet layouts).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hifi.run.dataset import axis_coords, range_layout, yaw_pitch
from hifi.api.model import Var
from hifi.api.params import Param
from hifi.api.rng import stream

from .lidar import (
    CLEAR_VISIBILITY_M,
    EDGE_TIMING,
    RECEIVER_TAIL_S,
    SNR_THRESHOLD,
    TAIL_SOURCE,
    TIMING_SOURCE,
    PulseBatch,
    PulsedLidar,
    common_params,
    fit_noise_power,
    footprint_params,
    reorder_echo,
    take_hits,
)
from .ouster_metadata import (  # noqa: F401  (re-exported: importable from here as before the split)
    DEFAULT_BEAM_ORIGIN_MM, DEFAULT_LIDAR_TO_SENSOR_MM, DEFAULT_UDP_PORT_LIDAR, GEN1_BEAM_ORIGIN_MM, LIDAR_MODES,
    NESTED_KEYS, SIMULATED_UDP_DEST, UDP_PROFILES, MetadataError, OusterBeams, OusterMetadata, destagger_shift,
    effective_metadata, ouster_beams, read_metadata)
from .radiometry import lidar_received_power

DATA_DIR = Path(__file__).parent / "data"

#: Built-in presets: real metadata files of one unit each (``sensors/data/README.md``).
PRESETS = {
    "os0_128": DATA_DIR / "ouster_os0_128.json",
    "os1_64": DATA_DIR / "ouster_os1_64.json",
    "os1_128": DATA_DIR / "ouster_os1_128.json",
    "os2_128": DATA_DIR / "ouster_os2_128.json",
}


# --------------------------------------------------------------------------------------------
# defaults
# --------------------------------------------------------------------------------------------

#: Laser wavelength [m]: the OS0 and OS2 hardware user manuals (Rev 06 / Rev C): "operate in the
#: 865nm band"; the first-generation OS1 data sheet says 850 nm.
OUSTER_WAVELENGTH_M = 865e-9
#: OS1 data sheet (first generation, "OS1 High Resolution Imaging LIDAR"): "0.8 m - 120 m @ 80 %
#: reflective lambertian target, 100 klx sunlight, false positive rate of 1/10,000; 0.8 m - 40 m @
#: 10 %". Taken, as the Velodyne figures, as the 50 % detection points.
OS1_DETECTION_POINTS = ((0.10, 40.0), (0.80, 120.0))
OS1_SOURCE = "OS1 data sheet (first generation): 0.8-120 m at 80 %, 0.8-40 m at 10 %, 100 klx sunlight"
#: Beam divergence, the same data sheet: 0.18 deg FWHM (128 beams), 0.13 deg (64 and 16 beams).
#: A Gaussian beam's full width at 1/e^2 is FWHM x 2 / sqrt(2 ln 2) = 1.699 FWHM.
FWHM_TO_E2 = 2.0 / np.sqrt(2.0 * np.log(2.0))
DIVERGENCE_FWHM_DEG = {128: 0.18, 64: 0.13}
#: Fitted to the OS1-32 capture of ouster-sdk (tests/pcaps/OS-1-32-G_v2.1.1_1024x10.pcap @
#: 46b7bcee, LEGACY profile with SIGNAL and calibrated REFLECTIVITY): signal x R^2 / (REFLECTIVITY /
#: 100) on Lambertian returns (REFLECTIVITY 5..100) is 10.7k, 57k, 112k and 143k photons at 3-6,
#: 6-10, 10-20 and 20-40 m: a near-range ramp that the overlap factor min(1, R / 15 m)^2 follows
#: (0.09, 0.28, 0.87, 1 of 143k at 4.5, 8, 14 and 30 m) and 1.43e5 photons for a white target at
#: 1 m beyond it.
SIGNAL_WHITE_1M_PHOTONS = 1.43e5
FULL_OVERLAP_M = 15.0
SIGNAL_SOURCE = "fit to ouster-sdk's OS1-32 capture tests/pcaps/OS-1-32-G_v2.1.1_1024x10.pcap (sensors/ouster.py)"
#: Ambient (near-infrared) photons per pixel, fitted to the vendored OS1-128 capture
#: (tests/data/lidar/ouster_os1_128.pcap, daylight, 1024x10): NEAR_IR median 650 on the road at
#: 4-30 m, whose reflectivity is taken as 0.10 (validation/lidar_real.py ASPHALT_REFLECTIVITY,
#: assumed), so 6500 for a white Lambertian surface; 470 (median of the no-return pixels) where
#: a beam sees the sky.
NEAR_IR_WHITE_PHOTONS = 6500.0
NEAR_IR_SKY_PHOTONS = 470.0
NEAR_IR_SOURCE = "fit to the vendored OS1-128 capture's daylight (tests/data/lidar/ouster_os1_128.pcap)"


def _ouster_params() -> dict:
    p = {
        "metadata_file": Param("path", default=None,
                               doc="Ouster sensor metadata JSON (legacy or nested layout, as the sensor and "
                                   "ouster-sdk write it), relative to the scenario; or give preset"),
        "preset": Param("str", default=None, choices=tuple(PRESETS),
                        doc="a real unit's metadata shipped with hifi (sensors/data/README.md): OS0-128 fw 3.0.1, "
                            "OS1-64 fw 2.1.2, OS1-128 fw 2.3.0, OS2-128 fw 2.3.0"),
        "lidar_mode": Param("str", default=None, choices=tuple(LIDAR_MODES),
                            doc="columns per frame x frames per second; default: the metadata's. Sets the rate "
                                "(rate_hz may be left out)"),
        "udp_profile_lidar": Param("str", default=None, choices=UDP_PROFILES,
                                   doc="lidar packet layout of hifi export --format pcap; default: the metadata's"),
        "column_stride": Param("int", default=1, minimum=1,
                               doc="simulate every n-th column only (sparse frames for previews)"),
    }
    common = common_params(
        max_range_m=120.0, source=OS1_SOURCE, distance_lower_m=40.0, distance_upper_m=120.0,
        min_range_m=0.8, min_range_source="OS1 data sheet: 0.8 m minimum range",
        receiver_aperture_m=0.02, aperture_source="assumed from the unit's receive lens, no data-sheet value",
        detection_points=OS1_DETECTION_POINTS, detection_source=OS1_SOURCE,
        range_noise_floor_m=0.009, range_noise_snr1_m=0.05,
        noise_source="fit to the vendored OS1-128 capture (validation/lidar_real.py): per-shot sigma 9.4 mm on "
                     "the road at 3-7 m without its 8 mm steps, 14 mm at 7-40 m (simulated: 11 mm with 5 cm at "
                     "SNR 1); per-beam bias 2.1 cm ring to ring. The first OS1 data sheet's 1.5 cm at SNR > 250 "
                     "and 10 cm at SNR 12 are on Ouster's own SNR scale",
        range_resolution_m=0.001,
        resolution_source="Ouster range field in mm (firmware user manual, Lidar Data Format; "
                          "measured from the lidar origin)",
        bias_sigma_m=0.02, dropout_probability=0.0005,
        dropout_source="fit to the vendored OS1-128 capture: 8 isolated misses in 16,594 road shots at 7-15 m "
                       "(0.05 %), where the road's SNR is far above threshold; farther out the SNR drop-outs "
                       "of the signal chain add to it (validation/lidar_real.py, isolated misses by range)",
        laser_gain_sigma=0.3,
        gain_source="fit to the vendored OS1-128 capture: per-beam reflectivity spread on the road 37 %",
        intensity_full_scale=100.0, intensity_max=255,
        intensity_source="Ouster firmware user manual, Calibrated Reflectivity: 0..100 Lambertian targets in "
                         "percent, 101..255 retroreflectors")
    p.update(common)
    noise_power = fit_noise_power(OS1_DETECTION_POINTS, peak_power_w=common["peak_power_w"].default,
                                  receiver_aperture_m=common["receiver_aperture_m"].default,
                                  optical_efficiency=common["optical_efficiency"].default,
                                  visibility_m=CLEAR_VISIBILITY_M, wavelength_m=OUSTER_WAVELENGTH_M,
                                  snr_threshold=SNR_THRESHOLD)
    p["noise_power_w"] = Param("float", default=noise_power, minimum=0.0, exclusive_minimum=True,
                               doc=f"RMS receiver noise as optical power [W] (fitted: 50 % detection at the "
                                   f"{OS1_SOURCE}, log-mean of the two)")
    p["wavelength_m"] = Param("float", default=OUSTER_WAVELENGTH_M, minimum=0.0, exclusive_minimum=True,
                              doc="laser wavelength [m] (865 nm: Ouster OS0 / OS2 hardware user manuals)")
    p["intensity_exponent"] = Param("float", default=1.0, minimum=0.0, exclusive_minimum=True,
                                    doc="response exponent of the reflectivity byte (1: Ouster calibrates it "
                                        "linear in reflectivity, firmware user manual)")
    p["full_overlap_m"] = Param("float", default=FULL_OVERLAP_M, minimum=0.0,
                                doc=f"range of full transmitter/receiver overlap [m] ({SIGNAL_SOURCE}: signal x "
                                    f"R^2 reaches its far value at about 15 m)")
    p["signal_white_1m_photons"] = Param("float", default=SIGNAL_WHITE_1M_PHOTONS, minimum=0.0,
                                         doc=f"mean signal photons of a white Lambertian target at normal "
                                             f"incidence, 1 m, full overlap ({SIGNAL_SOURCE})")
    p["near_ir_white_photons"] = Param("float", default=NEAR_IR_WHITE_PHOTONS, minimum=0.0,
                                       doc=f"mean ambient photons per pixel from a white Lambertian surface "
                                           f"({NEAR_IR_SOURCE}; scales with the daylight)")
    p["near_ir_sky_photons"] = Param("float", default=NEAR_IR_SKY_PHOTONS, minimum=0.0,
                                     doc=f"mean ambient photons per pixel where a beam hits nothing ({NEAR_IR_SOURCE})")
    p["peak_power_w"] = Param("float", default=common["peak_power_w"].default, minimum=0.0, exclusive_minimum=True,
                              doc="emitted peak power per pulse [W] (assumed, as the Velodynes: the data sheet gives "
                                  "only the laser class; with noise_power_w fitted, only the ratio matters)")
    p["pulse_width_s"] = Param("float", default=5e-9, minimum=0.0, exclusive_minimum=True,
                               doc="FWHM of the emitted pulse [s] (assumed 5 ns as the HDL-64E S2's: no Ouster figure "
                                   "found; it sets only how edge echoes are grouped, c tau / 2 = 0.75 m)")
    p["optical_efficiency"] = Param("float", default=common["optical_efficiency"].default, minimum=0.0,
                                    exclusive_minimum=True, maximum=1.0,
                                    doc="transmit x receive optical efficiency (assumed 0.5 as the Velodynes; with "
                                        "noise_power_w fitted, only the ratio matters)")
    footprint_params(p, divergence_rad=None, aperture_radius_m=0.005,
                      source="OS1 data sheet: 0.18 deg FWHM for 128 beams, 0.13 deg for 64 and 16, x 1.699 "
                             "for the 1/e^2 width; none: by the metadata's beam count",
                      receiver_tail_s=RECEIVER_TAIL_S, tail_source=TAIL_SOURCE,
        edge_timing=EDGE_TIMING, timing_source=TIMING_SOURCE)
    p["return_mode"] = Param("str", default="strongest", choices=("first", "last", "strongest", "average"),
                             doc="echo reported at edges and with n_subrays > 1 (Ouster single-return profiles: "
                                 "the strongest)")
    return p


class Ouster(PulsedLidar):
    """Ouster OS0 / OS1 / OS2 lidar from its metadata JSON (``metadata_file`` or ``preset``).

    Geometry (:func:`~sensors.ouster_metadata.ouster_beams`): the rotor turns clockwise seen from
    above; measurement id ``j`` of the ``w`` columns of ``lidar_mode`` fires at ``t + j / (w rate)``
    (the column timestamps of the vendored OS1-128 capture are 97.64 us apart, 1 / (1024 x 10 Hz)),
    every beam of the column at once, from its own origin on the beam circle, in the direction of
    the encoder angle plus its azimuth offset, in the sensor frame of the metadata
    (``lidar_to_sensor_transform``). The rate is the mode's: ``rate_hz`` may be left out and must
    equal it when given. ``column_stride`` n > 1 keeps every n-th column (previews).

    Measurement: :func:`sensors.lidar.lidar_signal_chain` (received power with the overlap
    ramp, SNR, detection, range noise, per-beam bias and gain, edge footprint). The range is
    quantised to 1 mm on Ouster's own grid, from the lidar origin: ``range = distance_noisy +
    n`` is a whole number of mm (``n``: lidar origin to beam origin). Besides the range-sensor
    variables the dataset (dims ``frame``, ``column``, ``beam``; ``column`` is the measurement
    id, ``beam`` the metadata's row, 0 the highest) has ``range``, ``signal`` (photons,
    Poisson: ``signal_white_1m_photons x P_r / P_r(white, 1 m)``), ``near_ir`` (ambient
    photons, Poisson: ``near_ir_white_photons x rho`` on a surface of diffuse reflectivity rho,
    ``near_ir_sky_photons`` where nothing is hit) and ``intensity``, the REFLECTIVITY byte
    (0..100: Lambertian reflectivity in percent). ``reflectivity`` is, as on every range
    dataset, the calibrated apparent reflectivity 0..1.

    Defaults: the first-generation OS1 data sheet (range, minimum range, divergence), the
    OS0/OS2 manuals (865 nm), fits to real Ouster captures (signal, near-IR, range noise,
    dropouts, per-beam gain); the parameter table names each. No OS0 or OS2 data sheet was at
    hand: their ranges keep the OS1 values (set ``max_range_m`` and ``noise_power_w`` from your
    unit's data sheet). Dual returns are not simulated (``*_DUAL`` profiles carry none in
    their second slot).
    """

    model_name = "ouster"
    #: The rate comes from ``lidar_mode`` (:meth:`__init__`); None tells the scenario loader
    #: that ``rate_hz`` was not given.
    default_rate_hz = None
    intensity_long_name = ("reported intensity: Ouster calibrated reflectivity byte (REFLECTIVITY channel), "
                           "0..100 Lambertian reflectivity in percent, 101..255 retroreflectors")
    PARAMS = _ouster_params()
    SIZE_PARAMS = {"column_stride": "raise", "n_subrays": "lower"}
    #: As the rotating lidars (the same measurement chain per cast ray; not separately calibrated).
    WORKING_BYTES_PER_RAY = 80.0

    def __init__(self, name, params=None, *, rate_hz=None):
        params = dict(params or {})
        if rate_hz is None:
            rate_hz = LIDAR_MODES[self.mode_of(params)][1]
        super().__init__(name, params, rate_hz=rate_hz)

    # -- metadata -----------------------------------------------------------------------------
    @classmethod
    def metadata_of(cls, params) -> OusterMetadata:
        """The metadata of ``metadata_file`` or ``preset`` (ValueError "param: reason" otherwise)."""
        path, preset = params.get("metadata_file"), params.get("preset")
        if path is not None and preset is not None:
            raise ValueError(f"preset: give either preset or metadata_file, not both (metadata_file = {path!r})")
        if path is None and preset is None:
            raise ValueError(f"metadata_file: an Ouster needs its metadata JSON; give metadata_file or preset "
                             f"(one of {', '.join(PRESETS)})")
        if preset is not None:
            if preset not in PRESETS:
                raise ValueError(f"preset: unknown Ouster preset; allowed: {', '.join(PRESETS)}")
            return _read_cached(str(PRESETS[preset]))
        try:
            return _read_cached(str(path))
        except MetadataError as exc:
            raise ValueError(f"metadata_file: {exc}") from None

    @classmethod
    def mode_of(cls, params) -> str:
        return params.get("lidar_mode") or cls.metadata_of(params).lidar_mode

    @classmethod
    def check_params(cls, p):
        p = super().check_params(p)
        cls.metadata_of(p)
        return p

    @classmethod
    def check_run(cls, p, *, start_utc, duration_s, rate_hz):
        """An explicit ``rate_hz`` must be the rate of the lidar mode."""
        mode = cls.mode_of(p)
        fps = LIDAR_MODES[mode][1]
        if rate_hz is not None and abs(float(rate_hz) - fps) > 1e-9 * fps:
            same = [m for m, (_, f) in LIDAR_MODES.items() if abs(f - float(rate_hz)) < 1e-9 * f]
            hint = f"or choose a {float(rate_hz):g} Hz mode ({', '.join(same)})" if same else \
                f"(Ouster modes run at {', '.join(sorted({f'{f:g}' for _, f in LIDAR_MODES.values()}))} Hz)"
            raise ValueError(f"lidar_mode: {mode!r} runs at {fps:g} Hz but the sensor's rate_hz is {float(rate_hz):g}; "
                             f"leave rate_hz out {hint}")

    @property
    def meta(self) -> OusterMetadata:
        return self.metadata_of(self.params)

    def _mode(self):
        return LIDAR_MODES[self.mode_of(self.params)]

    def _columns(self) -> np.ndarray:
        return np.arange(0, self._mode()[0], int(self.params.get("column_stride", 1)))

    def profile(self) -> str:
        return self.params.get("udp_profile_lidar") or self.meta.udp_profile_lidar

    # -- cost -----------------------------------------------------------------------------------
    def rays_per_frame(self):
        return len(self._columns()) * self.meta.pixels_per_column * self.params["n_subrays"]

    def frame_layout(self):
        shape = (len(self._columns()), self.meta.pixels_per_column)
        out = range_layout(shape, annotation=True, signal=True)
        for name in OUSTER_VARIABLES:
            out[name] = (shape, np.dtype(np.float64))
        return out

    def setup_bytes(self):
        return 96 * len(self._columns()) * self.meta.pixels_per_column   # directions, origins, order, yaw, pitch

    # -- run -------------------------------------------------------------------------------------
    def _divergence(self):
        p = self.params
        h = p["divergence_rad"]
        if h is None:
            fwhm = DIVERGENCE_FWHM_DEG[128 if self.meta.pixels_per_column > 64 else 64]
            h = np.radians(fwhm) * FWHM_TO_E2
        v = p.get("divergence_v_rad")
        return h, (h if v is None else v)

    def setup(self, ctx):
        super().setup(ctx)
        meta = self.meta
        self.lidar_mode = self.mode_of(self.params)
        w, fps = LIDAR_MODES[self.lidar_mode]
        cols = self._columns()
        h = meta.pixels_per_column
        beams = ouster_beams(meta.beam_altitude_deg, meta.beam_azimuth_deg, meta.beam_to_lidar_mm,
                             meta.lidar_to_sensor_mm, w, cols)
        self.columns = cols
        self.range_offset_m = beams.range_offset_m
        self.column_dt = cols / (w * float(fps))
        self._dirs = beams.direction_sensor.reshape(-1, 3)
        self._origins = beams.origin_sensor.reshape(-1, 3)
        self._yaw, self._pitch = yaw_pitch(self._dirs)
        self._dt = np.repeat(self.column_dt, h)
        self._bias = np.tile(self._laser_bias(h), len(cols))
        # Cast in destaggered order, so that the edge footprint's neighbours across beams are the
        # beams that point the same way (Ouster beams of one column are up to 8 deg apart in azimuth).
        n = len(cols)
        shift = np.rint(destagger_shift(meta.beam_azimuth_deg, w) / int(self.params["column_stride"])).astype(int)
        c = np.arange(n)[:, None]
        self._cast_order = (((c - shift[None, :]) % n) * h + np.arange(h)[None, :]).ravel()
        self._uncast_order = np.argsort(self._cast_order)
        self._ring_order = np.argsort(meta.beam_altitude_deg)
        self._p_white_1m = float(lidar_received_power(self.params["peak_power_w"], 1.0, 1.0, 1.0,
                                                      receiver_area_m2=np.pi * self.params["receiver_aperture_m"] ** 2
                                                      / 4.0, system_efficiency=self.params["optical_efficiency"]))

    def coords(self):
        meta = self.meta
        c = {"column": Var(("column",), self.columns.astype(np.int32), "1",
                           "measurement id (column of the frame in firing order; encoder angle 2 pi (1 - id / w))"),
             "beam": Var(("beam",), np.arange(meta.pixels_per_column, dtype=np.int32), "1",
                         "beam (pixel row of the metadata, 0 the highest)"),
             "beam_altitude": Var(("beam",), np.radians(meta.beam_altitude_deg), "rad",
                                  "beam altitude above the lidar xy plane (metadata beam_altitude_angles)"),
             "beam_azimuth": Var(("beam",), np.radians(meta.beam_azimuth_deg), "rad",
                                 "beam azimuth offset (metadata beam_azimuth_angles; the beam points at the "
                                 "encoder angle minus this)"),
             "column_time": Var(("column",), self.column_dt, "s", "firing time of the column after the frame's start")}
        c.update(axis_coords())
        return c

    def attrs(self):
        meta = self.meta
        return {"ouster_metadata": json.dumps(effective_metadata(meta, self.lidar_mode, self.profile())),
                "ouster_metadata_source": meta.source, "ouster_prod_line": meta.prod_line,
                "ouster_lidar_mode": self.lidar_mode, "ouster_udp_profile_lidar": self.profile(),
                "ouster_range_offset_m": self.range_offset_m, "column_stride": int(self.params["column_stride"])}

    def step(self, k, t):
        times = t + self._dt
        shape = (len(self.columns), self.meta.pixels_per_column)
        order, back = self._cast_order, self._uncast_order
        hits, origins, dirs, echoes = self._cast_beams(self._dirs[order], times[order], self._origins[order],
                                                       grid=shape, ring_order=self._ring_order)
        hits = [take_hits(hh, back) for hh in hits]
        echoes = [reorder_echo(e, back) for e in echoes]
        batch = PulseBatch(origins[back], dirs[back], self._bias, ("column", "beam"), shape, times, self._yaw,
                           self._pitch)
        return self._measure_returns(k, t, hits, batch, echoes)

    def _measure(self, k, t, hits, batch, echo=None, **kw):
        """The lidar signal chain (:meth:`PulsedLidar._measure`, its keywords passed on), then
        ``range``, ``signal`` and ``near_ir`` (:func:`ouster_channels`)."""
        frame = super()._measure(k, t, hits, batch, echo, **kw)
        dims, shape = batch.dims, batch.shape
        p = self.params
        oid = hits.object_id
        rho = np.where(hits.hit, self._reflectance(hits, batch.times) * (1.0 - self._mirror[oid]), np.nan)
        ch = ouster_channels(frame["distance_noisy"].data.ravel(), frame["received_power"].data.ravel(), rho,
                             range_offset_m=self.range_offset_m, p_white_1m_w=self._p_white_1m,
                             signal_white_1m_photons=p["signal_white_1m_photons"],
                             near_ir_white_photons=p["near_ir_white_photons"],
                             near_ir_sky_photons=p["near_ir_sky_photons"],
                             rng=stream(self.ctx.seed, self.name, k, "photons"))
        for name, values in ch.items():
            units, long_name = OUSTER_VARIABLES[name]
            frame[name] = Var(dims, values.reshape(shape), units, long_name, None, {"dtype": "f4"})
        return frame


#: The variables an Ouster dataset adds: name -> (units, long_name).
OUSTER_VARIABLES = {
    "range": ("m", ("range as the Ouster reports it: from the lidar origin, the beam-origin offset included "
                    "(distance_noisy + ouster_range_offset_m), a whole number of mm; NaN where not detected")),
    "signal": ("1", "signal photons of the return (Ouster SIGNAL channel, Poisson); NaN where not detected"),
    "near_ir": ("1", "ambient near-infrared photons of the pixel (Ouster NEAR_IR channel, Poisson)"),
}


def ouster_channels(distance_noisy_m, received_power_w, diffuse_reflectivity, *, range_offset_m, p_white_1m_w,
                    signal_white_1m_photons, near_ir_white_photons, near_ir_sky_photons, rng) -> dict:
    """Ouster's ``range``, ``signal`` and ``near_ir`` channels of one frame (flat arrays).

    Parameters
    ----------
    distance_noisy_m : (n,) float
        Reported distance from the beam origin [m], NaN where not detected.
    received_power_w : (n,) float
        Peak received power [W] (lidar equation with overlap), NaN where nothing was hit.
    diffuse_reflectivity : (n,) float
        ``rho (1 - mirror)`` of the surface hit, NaN where nothing was hit.
    range_offset_m : float
        ``n``, lidar origin to beam origin [m].
    p_white_1m_w : float
        Received power from a white Lambertian target at normal incidence at 1 m, without
        overlap or atmosphere [W].
    signal_white_1m_photons, near_ir_white_photons, near_ir_sky_photons : float
        Mean photon counts (the model's parameters).
    rng : numpy.random.Generator
        Poisson draws: signal first, then near-IR.

    Returns
    -------
    dict
        ``range`` [m] = ``distance_noisy + n`` (NaN where not detected); ``signal`` ~
        Poisson(``signal_white_1m_photons P_r / P_white(1 m)``), NaN where not detected;
        ``near_ir`` ~ Poisson(``near_ir_white_photons rho``) on a hit,
        Poisson(``near_ir_sky_photons``) on a miss. Counts are clipped to 65535 (16 bits).

    Notes
    -----
    Ouster's SIGNAL is the photon count of the return's peak and NEAR_IR the photons of the
    pixel's ambient measurement (firmware user manual, "Lidar Data Format"); both are counts,
    so their noise is Poisson. The signal scales as the received power (Lambertian, 1 / R^2,
    overlap ramp); the ambient light is reflected sky and sun light, the same from every
    direction for a Lambertian surface (radiance rho E / pi), so it scales with rho only.
    """
    det = np.isfinite(distance_noisy_m)
    mean_signal = np.where(det, signal_white_1m_photons * np.nan_to_num(received_power_w) / p_white_1m_w, 0.0)
    signal = np.minimum(rng.poisson(mean_signal), 65535).astype(float)
    hit = np.isfinite(diffuse_reflectivity)
    mean_nir = np.where(hit, near_ir_white_photons * np.nan_to_num(diffuse_reflectivity), near_ir_sky_photons)
    near_ir = np.minimum(rng.poisson(mean_nir), 65535).astype(float)
    return {"range": np.where(det, distance_noisy_m + range_offset_m, np.nan),
            "signal": np.where(det, signal, np.nan), "near_ir": near_ir}


_CACHE: dict = {}


def _read_cached(path: str) -> OusterMetadata:
    """:func:`read_metadata`, once per file and modification time (the loader and every
    model instance ask for the same file)."""
    p = Path(path)
    try:
        key = (str(p.resolve()), p.stat().st_mtime_ns)
    except OSError:
        return read_metadata(p)
    if key not in _CACHE:
        _CACHE[key] = read_metadata(p)
    return _CACHE[key]
