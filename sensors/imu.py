"""Strapdown inertial measurement unit (IMU): gyroscopes and accelerometers on a scene body.

Physics (plain functions over arrays)
-------------------------------------
The scene frame is a local ENU frame fixed to the Earth at the scenario origin, so it turns with
the Earth at ``omega_ie``. A triad fixed to the sensor body senses, in its own axes,

- angular rate: the body's rotation rate relative to the scene plus the Earth's rate,
  ``omega_is = omega_es + omega_ie`` (:func:`earth_rate_enu`);
- specific force: the body's acceleration relative to the scene, plus the Coriolis term, minus
  normal gravity, ``f = a + 2 omega_ie x v - gamma`` (:func:`normal_gravity`, Somigliana with the
  free-air height correction; normal gravity already holds the centrifugal acceleration),

(:func:`ideal_imu`; e.g. Groves, Principles of GNSS, Inertial, and Multisensor Integrated
Navigation Systems, 2nd ed., 2013, eqs. 2.142 and 5.36 written in an Earth-fixed Cartesian
frame). The body's kinematics come from the scene's pose tree
(:meth:`hifi.world.scene.Scene.kinematics_at`), which needs twice-differentiable motion: keyframed
tracks with ``interpolation = "spline"``.

Errors
------
The error model (scale factors and misalignment, turn-on, Gauss-Markov and random-walk biases,
white noise, saturation and quantisation), its Allan-variance terms and the block partition of
its random processes (any frame's value is the same bytes whoever computes it) are
:mod:`sensors.imu_errors`, whose names are importable from here too; this module holds the
error-free outputs, the data-sheet presets (:data:`PRESETS`) and the model (:class:`IMU`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from hifi.constants import STANDARD_GRAVITY_M_S2, WGS84_OMEGA_RAD_S
from hifi.world.earth import earth_rate_enu, normal_gravity
from hifi.world.motion import Pose
from hifi.errors import ScenarioError
from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.api.rng import stream

from .imu_errors import (  # noqa: F401  (re-exported: importable from here as before the split)
    BLOCK_FRAMES, FLICKER_ALLAN_FLOOR, GAUSS_MARKOV_ALLAN_PEAK, GAUSS_MARKOV_ALLAN_PEAK_TAU, ImuErrorProcess,
    allan_deviation, apply_sensor_errors, avar_gauss_markov, avar_random_walk, avar_white, gauss_markov_sigma)

__all__ = [
    "normal_gravity", "earth_rate_enu", "ideal_imu", "ImuTruth",
    "gauss_markov_sigma", "allan_deviation", "avar_white", "avar_gauss_markov", "avar_random_walk",
    "ImuErrorProcess", "apply_sensor_errors", "PRESETS", "IMU",
]

_DEG = np.pi / 180.0
_G = STANDARD_GRAVITY_M_S2


# ------------------------------------------------------------------------------------------------
# Earth and gravity: :func:`normal_gravity` and :func:`earth_rate_enu` are defined in
# :mod:`hifi.world.earth`, where the ins model finds them too, and re-exported here (``__all__``).
# ------------------------------------------------------------------------------------------------
class ImuTruth(NamedTuple):
    """Error-free IMU outputs in the sensor axes."""

    angular_rate: np.ndarray    #: (n, 3) [rad/s], relative to inertial space
    specific_force: np.ndarray  #: (n, 3) [m/s^2]


def ideal_imu(rotation_sensor_to_scene: Rotation | Pose, velocity_scene, acceleration_scene,
              angular_rate_scene, *, latitude_rad: float, height_m: float = 0.0,
              omega_rad_s: float = WGS84_OMEGA_RAD_S) -> ImuTruth:
    """What a perfect strapdown triad senses, from its motion relative to the Earth-fixed scene.

    Parameters
    ----------
    rotation_sensor_to_scene : scipy.spatial.transform.Rotation or hifi.world.motion.Pose
        Sensor orientation, sensor -> scene (ENU), one or n (of a pose, its rotation: the
        same bits, without making a scipy ``Rotation``).
    velocity_scene, acceleration_scene : (n, 3) float
        Velocity [m/s] and acceleration [m/s^2] of the sensor origin relative to the scene.
    angular_rate_scene : (n, 3) float
        Angular velocity of the sensor relative to the scene, scene axes [rad/s].
    latitude_rad, height_m : float
        Geodetic latitude [rad] and ellipsoidal height [m] of the scene origin.
    omega_rad_s : float
        The Earth's rotation rate [rad/s] (WGS 84).

    Returns
    -------
    ImuTruth
        ``angular_rate = C (omega_es + omega_ie)`` and
        ``specific_force = C (a + 2 omega_ie x v - gamma)``, ``C`` scene -> sensor,
        ``gamma = (0, 0, -g(phi, h))``.

    Notes
    -----
    The scene is a local tangent frame fixed to the Earth at its origin, which turns with it
    at ``omega_ie`` (:func:`earth_rate_enu`, the same vector everywhere in the scene); the
    accelerometer equation is the Earth-frame navigation equation (Groves 2013, eq. 5.36;
    Titterton & Weston, Strapdown Inertial Navigation Technology, 2nd ed., 2004, eq. 3.27)
    with ``v``, ``a`` relative to the Earth. Deviations, deliberate simplifications whose size follows: gravity is the
    normal gravity at the *origin*, along the origin's ellipsoid normal (-z), for every point
    of the scene. A body at height z above the origin really feels about 3.1e-6 z m/s^2 less,
    and d metres away horizontally its plumb line tilts by about d / 6.4e6 rad (a 1 km scene:
    1.5e-3 m/s^2 horizontally); the centripetal term ``omega x (omega x r)`` of the offset r
    from the origin (4e-6 m/s^2 per km) is left out likewise.
    """
    w_ie = earth_rate_enu(latitude_rad, omega_rad_s=omega_rad_s)
    v = np.asarray(velocity_scene, dtype=float)
    a = np.asarray(acceleration_scene, dtype=float)
    w = np.asarray(angular_rate_scene, dtype=float)
    g = float(normal_gravity(latitude_rad, height_m))
    f_scene = a + 2.0 * np.cross(w_ie, v) + np.array([0.0, 0.0, g])
    rot = rotation_sensor_to_scene
    if isinstance(rot, Pose):
        return ImuTruth(rot.inverse_apply_vectors(w + w_ie), rot.inverse_apply_vectors(f_scene))
    return ImuTruth(rot.apply(w + w_ie, inverse=True), rot.apply(f_scene, inverse=True))


# ------------------------------------------------------------------------------------------------
# Presets from data sheets
# ------------------------------------------------------------------------------------------------
_ERROR_KEYS = (
    "gyro_noise_density_rad_s_rthz", "gyro_bias_instability_rad_s", "gyro_random_walk_rad_s2_rthz",
    "gyro_turn_on_bias_rad_s", "gyro_scale_factor_ppm", "gyro_misalignment_rad", "gyro_range_rad_s",
    "gyro_resolution_rad_s",
    "accel_noise_density_m_s2_rthz", "accel_bias_instability_m_s2", "accel_random_walk_m_s3_rthz",
    "accel_turn_on_bias_m_s2", "accel_scale_factor_ppm", "accel_misalignment_rad", "accel_range_m_s2",
    "accel_resolution_m_s2",
    "bias_correlation_time_s",
)

#: Correlation time of the Gauss-Markov bias in every preset [s]. NOT from the data sheets
#: (they publish the Allan minimum, not where it lies): a modelling choice placing the Allan
#: peak of the bias at 1.89 x 100 s = 190 s, where MEMS Allan curves typically bottom out.
PRESET_CORRELATION_TIME_S = 100.0

_IDEAL = {k: 0.0 for k in _ERROR_KEYS} | {"bias_correlation_time_s": PRESET_CORRELATION_TIME_S}

#: IMU presets: every error parameter (SI, the names of :attr:`IMU.PARAMS`), each value with its
#: source. "in-run bias stability" (the Allan minimum) becomes the IEEE 952 coefficient B by
#: dividing by :data:`FLICKER_ALLAN_FLOOR`; angle / velocity random walk in deg/sqrt(h) or
#: m/s/sqrt(h) become densities by dividing by 60 sqrt(s)/sqrt(h) (IEEE 952: N = ARW). A
#: data sheet's "typical +-x" initial offset is taken as the 1-sigma turn-on bias. Values a data
#: sheet does not give are 0 (and marked so), never guessed.
PRESETS: dict[str, dict[str, float]] = {
    # A perfect IMU: no errors, no saturation, no quantisation.
    "ideal": dict(_IDEAL),
    # Analog Devices ADIS16448 (tactical-grade MEMS, "Compact, Precision Ten Degrees of Freedom
    # Inertial Sensor"), data sheet Rev. H (2019), Table 1, typical values at 25 C.
    "adis16448": _IDEAL | dict(
        # Angular random walk 0.66 deg/sqrt(h) (1 sigma). (The data sheet's rate noise density,
        # 0.0135 deg/s/sqrt(Hz) at 25 Hz without filtering, is the same term measured another way.)
        gyro_noise_density_rad_s_rthz=0.66 * _DEG / 60.0,
        # In-run bias stability 14.5 deg/h (1 sigma).
        gyro_bias_instability_rad_s=14.5 * _DEG / 3600.0 / FLICKER_ALLAN_FLOOR,
        # Bias repeatability 0.5 deg/s (1 sigma, -40 to +85 C).
        gyro_turn_on_bias_rad_s=0.5 * _DEG,
        # Dynamic range +-1000 deg/s.
        gyro_range_rad_s=1000.0 * _DEG,
        # 0.04 deg/s per LSB (25 LSB per deg/s; also Linux drivers/iio/imu/adis16400.c).
        gyro_resolution_rad_s=0.04 * _DEG,
        # Velocity random walk 0.11 m/s/sqrt(h) (as quoted from the data sheet in
        # ethz-asl/kalibr issue #63; noise density 0.23 mg/sqrt(Hz) there too).
        accel_noise_density_m_s2_rthz=0.11 / 60.0,
        # In-run bias stability 0.25 mg (1 sigma). UNVERIFIED: recalled from Table 1, the table
        # itself could not be re-read when this preset was written.
        accel_bias_instability_m_s2=0.25e-3 * _G / FLICKER_ALLAN_FLOOR,
        # Dynamic range +-18 g. UNVERIFIED as above.
        accel_range_m_s2=18.0 * _G,
        # 0.833 mg per LSB (1200 LSB/g; also Linux drivers/iio/imu/adis16400.c).
        accel_resolution_m_s2=_G / 1200.0,
        # Not given or not taken: rate and acceleration random walk, accelerometer bias
        # repeatability, scale factors, misalignments (0).
    ),
    # Bosch Sensortec BMI160 (consumer MEMS), data sheet BST-BMI160-DS000-07, revision 0.8
    # (February 2015), Tables 1 (accelerometer) and 2 (gyroscope), typical values, with the
    # power-on default ranges (acc_range +-2 g, gyr_range +-2000 deg/s, 16-bit outputs).
    "bmi160": _IDEAL | dict(
        # Output noise density 0.007 deg/s/sqrt(Hz).
        gyro_noise_density_rad_s_rthz=0.007 * _DEG,
        # Zero-rate offset +-3 deg/s.
        gyro_turn_on_bias_rad_s=3.0 * _DEG,
        gyro_range_rad_s=2000.0 * _DEG,
        # Sensitivity 16.4 LSB per deg/s at +-2000 deg/s.
        gyro_resolution_rad_s=_DEG / 16.4,
        # Output noise density 180 ug/sqrt(Hz).
        accel_noise_density_m_s2_rthz=180e-6 * _G,
        # Zero-g offset +-40 mg.
        accel_turn_on_bias_m_s2=40e-3 * _G,
        accel_range_m_s2=2.0 * _G,
        # Sensitivity 16384 LSB/g at +-2 g.
        accel_resolution_m_s2=_G / 16384.0,
        # Not given by the data sheet: bias instability and random walk of either sensor (0);
        # not taken: sensitivity tolerances and cross-axis sensitivities (0).
    ),
    # Analog Devices ADIS16495-1 (tactical-grade MEMS, "Tactical Grade, Six Degrees of Freedom
    # Inertial Sensor"), data sheet Rev. C (2020), features on page 1.
    "adis16495": _IDEAL | dict(
        # Angular random walk 0.09 deg/sqrt(h).
        gyro_noise_density_rad_s_rthz=0.09 * _DEG / 60.0,
        # In-run bias stability 0.8 deg/h.
        gyro_bias_instability_rad_s=0.8 * _DEG / 3600.0 / FLICKER_ALLAN_FLOOR,
        # Axis-to-axis misalignment +-0.05 deg.
        gyro_misalignment_rad=0.05 * _DEG,
        # Range +-125 deg/s (the -1 model).
        gyro_range_rad_s=125.0 * _DEG,
        # 32-bit output, 20000 x 2^16 LSB at 125 deg/s (Linux drivers/iio/imu/adis16480.c).
        gyro_resolution_rad_s=125.0 * _DEG / (20000.0 * 65536.0),
        # In-run bias stability 3.2 ug.
        accel_bias_instability_m_s2=3.2e-6 * _G / FLICKER_ALLAN_FLOOR,
        # Range +-8 g.
        accel_range_m_s2=8.0 * _G,
        # 32-bit output, 32000 x 2^16 LSB at 8 g (Linux drivers/iio/imu/adis16480.c).
        accel_resolution_m_s2=8.0 * _G / (32000.0 * 65536.0),
        # NOT FOUND on page 1: the accelerometer noise density / velocity random walk, bias
        # repeatabilities, scale factors (0). Set accel_noise_density_m_s2_rthz yourself.
    ),
}

_PRESET_CHOICES = tuple(PRESETS)


def _per_axis(gyro: float, accel: float) -> np.ndarray:
    return np.array([gyro] * 3 + [accel] * 3, dtype=float)


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------
def _error_param(unit: str, what: str) -> Param:
    return Param("float", default=None, minimum=0.0, doc=f"{what} [{unit}]; default: the preset's")


class IMU(Sensor):
    """Strapdown IMU: gyroscope and accelerometer triads in the sensor frame at their own rate.

    Per frame (default 100 Hz): ``angular_rate`` [rad/s] (rotation of the sensor relative to
    inertial space: its rotation relative to the scene plus the Earth's rate at the scenario
    origin) and ``specific_force`` [m/s^2] (acceleration relative to the Earth-fixed scene plus
    the Coriolis term 2 omega_ie x v minus WGS 84 normal gravity at the origin's latitude and
    height), measured with the errors of a ``preset`` data sheet or of the given parameters,
    beside their true values (:func:`ideal_imu`, :func:`apply_sensor_errors`,
    :class:`ImuErrorProcess`).

    The sensor must ride on twice-differentiable motion: a body whose track (or an ancestor's)
    interpolates linearly is refused at load (set ``interpolation = "spline"`` on it). Without
    ``[simulation] origin`` the scenario's default origin applies (latitude 0, height 0: the
    equator at sea level, g = 9.7803 m/s^2, the Earth's rate pointing north).

    Per-run draws (stream frame -1): turn-on biases, scale factors and misalignments (each
    parameter is the 1-sigma of a zero-mean normal per axis or per off-diagonal element; the
    dataset stores the drawn matrix and biases). Per block of :data:`BLOCK_FRAMES` frames: the
    white noise and the bias processes (:mod:`sensors.imu_errors`).
    """

    model_name = "imu"
    default_rate_hz = 100.0
    PARAMS = {
        "preset": Param("str", default="adis16448", choices=_PRESET_CHOICES,
                        doc="data-sheet error set: 'adis16448' (ADI, Rev. H), 'bmi160' (Bosch, rev. 0.8), "
                            "'adis16495' (ADI ADIS16495-1, Rev. C) or 'ideal' (no errors); every error "
                            "parameter below overrides the preset's value (sensors.imu.PRESETS)"),
        "gyro_noise_density_rad_s_rthz": _error_param(
            "rad/s/sqrt(Hz)", "gyro white-noise density N (angle random walk; Allan deviation at 1 s)"),
        "gyro_bias_instability_rad_s": _error_param(
            "rad/s", "gyro bias-instability coefficient B (IEEE 952: the Allan floor is 0.664 B), "
                     "modelled as a Gauss-Markov bias of sigma 1.076 B"),
        "gyro_random_walk_rad_s2_rthz": _error_param("rad/s^2/sqrt(Hz)", "gyro bias random-walk density K"),
        "gyro_turn_on_bias_rad_s": _error_param("rad/s", "1-sigma gyro bias drawn once per run and axis"),
        "gyro_scale_factor_ppm": _error_param("ppm", "1-sigma gyro scale-factor error per axis"),
        "gyro_misalignment_rad": _error_param(
            "rad", "1-sigma of each off-diagonal gyro misalignment / cross-coupling term"),
        "gyro_range_rad_s": _error_param("rad/s", "gyro full scale (saturation); 0: none"),
        "gyro_resolution_rad_s": _error_param("rad/s", "gyro output LSB (quantisation); 0: none"),
        "accel_noise_density_m_s2_rthz": _error_param(
            "m/s^2/sqrt(Hz)", "accelerometer white-noise density (velocity random walk)"),
        "accel_bias_instability_m_s2": _error_param(
            "m/s^2", "accelerometer bias-instability coefficient B (as the gyro's)"),
        "accel_random_walk_m_s3_rthz": _error_param("m/s^3/sqrt(Hz)", "accelerometer bias random-walk density"),
        "accel_turn_on_bias_m_s2": _error_param(
            "m/s^2", "1-sigma accelerometer bias drawn once per run and axis"),
        "accel_scale_factor_ppm": _error_param("ppm", "1-sigma accelerometer scale-factor error per axis"),
        "accel_misalignment_rad": _error_param(
            "rad", "1-sigma of each off-diagonal accelerometer misalignment / cross-coupling term"),
        "accel_range_m_s2": _error_param("m/s^2", "accelerometer full scale (saturation); 0: none"),
        "accel_resolution_m_s2": _error_param("m/s^2", "accelerometer output LSB (quantisation); 0: none"),
        "bias_correlation_time_s": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                                         doc="correlation time T of the Gauss-Markov biases [s]; default: the "
                                             "preset's (100 s, a modelling choice)"),
    }

    # -- parameters -------------------------------------------------------------------------------
    @staticmethod
    def resolve(params) -> dict[str, Any]:
        """The preset's error values overridden by every parameter given (not None)."""
        preset = params.get("preset") or "adis16448"
        out = dict(PRESETS[preset])
        out.update({k: float(v) for k, v in params.items() if k in _ERROR_KEYS and v is not None})
        out["preset"] = preset
        return out

    @classmethod
    def check_params(cls, params):
        """Cross-parameter checks at scenario loading (a resolution must be finer than its range);
        returns the parameters with the preset's values filled in (what ``hifi info`` shows)."""
        p = cls.resolve(params)
        for sensor, unit in (("gyro", "rad_s"), ("accel", "m_s2")):
            rng_key, res_key = f"{sensor}_range_{unit}", f"{sensor}_resolution_{unit}"
            if p[rng_key] > 0 and p[res_key] >= p[rng_key]:
                name = res_key if params.get(res_key) is not None else rng_key
                raise ValueError(f"{name}: the resolution ({p[res_key]:g}) must be smaller than the range "
                                 f"({p[rng_key]:g}) of preset {p['preset']!r} or as given")
        return {**params, **{k: p[k] for k in _ERROR_KEYS}}      # the preset's values made explicit

    def check_scene(self, scene) -> None:
        """Refuse a mount whose motion is not twice differentiable (a linear keyframe track)."""
        rough = scene.first_rough_body(self.name)
        if rough is None:
            return
        index = scene.object_names.index(rough) if rough in scene.object_names else None
        key = f"objects[{index}].interpolation" if index is not None else None
        raise ScenarioError(f"sensor {self.name!r} (model imu) rides on {rough!r}, whose track is "
                            f"interpolated linearly: its acceleration is zero between keyframes and "
                            f"unbounded at them, so an IMU cannot sense it; set interpolation = \"spline\" "
                            f"on {rough!r} (a C2 spline through the same keyframes)", key=key, value="linear")

    # -- layout -------------------------------------------------------------------------------------
    def frame_layout(self):
        f8, b1 = np.dtype(np.float64), np.dtype(bool)
        layout = {"timestamp": ((), f8)}
        for q in ("angular_rate", "specific_force"):
            layout.update({q: ((3,), f8), f"{q}_true": ((3,), f8), f"{q}_bias": ((3,), f8),
                           f"{q}_saturated": ((3,), b1)})
        return layout

    def setup_bytes(self):
        return BLOCK_FRAMES * 8 * 3 * 17          # the cached block: 17 (B, 3) float64 arrays

    def setup(self, ctx):
        super().setup(ctx)
        p = self._p = self.resolve(self.params)
        o = ctx.origin
        self._latitude_rad = float(np.radians(o["lat_deg"]))
        self._height_m = float(o["height_m"])
        self._errors = ImuErrorProcess(
            ctx.seed, self.name, self.rate_hz,
            _per_axis(p["gyro_noise_density_rad_s_rthz"], p["accel_noise_density_m_s2_rthz"]),
            gauss_markov_sigma(_per_axis(p["gyro_bias_instability_rad_s"], p["accel_bias_instability_m_s2"])),
            p["bias_correlation_time_s"],
            _per_axis(p["gyro_random_walk_rad_s2_rthz"], p["accel_random_walk_m_s3_rthz"]))
        turn_on = stream(ctx.seed, self.name, -1, "imu_turn_on_bias").standard_normal(6)
        scale = stream(ctx.seed, self.name, -1, "imu_scale_factor").standard_normal(6)
        cross = stream(ctx.seed, self.name, -1, "imu_misalignment").standard_normal((2, 3, 3))
        self._turn_on = turn_on * _per_axis(p["gyro_turn_on_bias_rad_s"], p["accel_turn_on_bias_m_s2"])
        self._matrix = {}
        for i, (q, sensor) in enumerate((("angular_rate", "gyro"), ("specific_force", "accel"))):
            m = np.eye(3) + np.diag(scale[3 * i:3 * i + 3] * p[f"{sensor}_scale_factor_ppm"] * 1e-6)
            off = ~np.eye(3, dtype=bool)
            m[off] += cross[i][off] * p[f"{sensor}_misalignment_rad"]
            self._matrix[q] = m
        self._block: tuple[int, dict] | None = None

    def coords(self):
        axes = np.array(["x", "y", "z"])
        return {
            "axis": Var(("axis",), axes, "1", "sensor-frame axis (x forward, y left, z up)"),
            "axis_true": Var(("axis_true",), axes, "1", "sensor-frame axis of the true input"),
            "angular_rate_matrix": Var(("axis", "axis_true"), self._matrix["angular_rate"], "1",
                                       "gyro scale-factor and misalignment matrix M "
                                       "(measured = M true + bias + noise)"),
            "specific_force_matrix": Var(("axis", "axis_true"), self._matrix["specific_force"], "1",
                                         "accelerometer scale-factor and misalignment matrix M"),
            "angular_rate_turn_on_bias": Var(("axis",), self._turn_on[:3], "rad s-1",
                                             "gyro turn-on bias drawn for this run (part of angular_rate_bias)"),
            "specific_force_turn_on_bias": Var(("axis",), self._turn_on[3:], "m s-2",
                                               "accelerometer turn-on bias drawn for this run"),
        }

    def attrs(self):
        p = self._p
        out = {k: p[k] for k in _ERROR_KEYS}
        out["preset"] = p["preset"]
        out["gravity_m_s2"] = float(normal_gravity(self._latitude_rad, self._height_m))
        out["earth_rate_rad_s"] = WGS84_OMEGA_RAD_S
        out["imu_block_frames"] = BLOCK_FRAMES
        return out

    # -- stepping -----------------------------------------------------------------------------------
    def available_at(self, k, t, frame):
        """A sample is published at its own time (no latency modelled)."""
        return t

    def step(self, k, t):
        b = k // BLOCK_FRAMES
        i = k - b * BLOCK_FRAMES
        if self.ctx.scene.rides_on_driven_body(self.name):    # its future is made as the run goes
            data = self._compute_block(b, frames=np.array([k]))
            i = 0
        else:
            if self._block is None or self._block[0] != b:
                self._block = (b, self._compute_block(b))
            data = self._block[1]
        out = {"timestamp": Var((), np.float64(t), "s", "time of the measurement since simulation start")}
        for q, unit, what in (("angular_rate", "rad s-1", "angular rate relative to inertial space"),
                              ("specific_force", "m s-2", "specific force (non-gravitational acceleration)")):
            out[q] = Var(("axis",), data[q][i], unit, f"measured {what}, sensor axes")
            out[f"{q}_true"] = Var(("axis",), data[f"{q}_true"][i], unit, f"true {what}, sensor axes")
            out[f"{q}_bias"] = Var(("axis",), data[f"{q}_bias"][i], unit,
                                   "total additive bias (turn-on + Gauss-Markov + random walk)")
            out[f"{q}_saturated"] = Var(("axis",), data[f"{q}_saturated"][i], "1", "output clipped at the range")
        return out

    def _compute_block(self, b: int, frames=None) -> dict[str, np.ndarray]:
        """Every variable of the frames of block ``b`` (whole block, whatever the run's end), or
        of the ``frames`` of it given (their errors are the block's: the same bytes)."""
        ks = np.arange(b * BLOCK_FRAMES, (b + 1) * BLOCK_FRAMES) if frames is None else np.asarray(frames)
        times = ks / self.rate_hz                        # the event times k / rate_hz
        kin = self.ctx.scene.kinematics_at(self.name, times)
        truth = ideal_imu(kin.pose, kin.velocity, kin.acceleration, kin.angular_rate,
                          latitude_rad=self._latitude_rad, height_m=self._height_m)
        cache = getattr(self, "_error_block", None)
        if cache is None or cache[0] != b:
            cache = self._error_block = (b, self._errors.block(b))
        white, gm, rw = cache[1]
        if frames is not None:
            rows = ks - b * BLOCK_FRAMES
            white, gm, rw = white[rows], gm[rows], rw[rows]
        bias = gm + rw + self._turn_on
        p = self._p
        out = {}
        for j, (q, sensor, unit) in enumerate((("angular_rate", "gyro", "rad_s"),
                                              ("specific_force", "accel", "m_s2"))):
            cols = slice(3 * j, 3 * j + 3)
            true = truth[j]
            measured, saturated = apply_sensor_errors(
                true, self._matrix[q], bias[:, cols], white[:, cols],
                range_limit=p[f"{sensor}_range_{unit}"], resolution=p[f"{sensor}_resolution_{unit}"])
            out.update({q: measured, f"{q}_true": true, f"{q}_bias": bias[:, cols], f"{q}_saturated": saturated})
        return out
