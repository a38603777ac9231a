"""GPS L1 C/A pseudorange receiver on a scene body: ray-cast blockage and planar multipath.

The numerical core is :mod:`gnss` (orbits, atmosphere, error terms, the pseudorange sum
:func:`gnss.receiver.pseudorange_sum`, solver, error budget :func:`gnss.solver.position_error_budget`,
ENU <-> ECEF :func:`gnss.geometry.enu_to_ecef`); this module holds the receiver's parameters and
adds what needs the scene: the antenna's trajectory (scene ENU -> WGS 84 ECEF at the scenario
origin), line-of-sight blockage by ray casting, and reflected paths found with the image method
on planar facets near the antenna.  The reflection search (plain functions over arrays) is
:mod:`sensors.gps_multipath`; its names are importable from this module too.

Dataset layout
--------------
hifi writes every model's frames along the unlimited ``frame`` dimension; for this receiver a
frame is one epoch.  The per-epoch variables therefore have dimensions ``(frame, sv)``,
``(frame, sv, xyz)``, ``(frame, xyz)`` ..., and the variable ``epoch (frame)`` holds the true
reception time (GPST, decoded by xarray as ``datetime64``).  :func:`epoch_view` turns a written
dataset into the solver's layout ``(epoch, sv)`` (``ds.set_coords(...).swap_dims(frame="epoch")``),
on which :func:`gnss.solve` runs directly.

Randomness and partitions
-------------------------
Every random number comes from :func:`hifi.api.rng.stream` keyed by (seed, sensor name, frame,
purpose): receiver noise per epoch (frame k, "noise"); the constant per-satellite ephemeris range
error (frame -1, "ephemeris"); and the receiver clock, a two-state random walk
(:func:`gnss.errors.receiver_clock_walk`) drawn once for every event of the run from the per-run
stream (frame -1, "receiver_clock") when the model is set up, so any epoch's clock is known
without having computed the epochs before it.  The deterministic terms and the ray casting are
computed in fixed blocks of :data:`BLOCK_EPOCHS` epochs (block = k // BLOCK_EPOCHS, vectorised
over the epochs and satellites of the block), and every epoch's result depends on that epoch
alone, so an MPI time partition gives the same bytes as a serial run.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import NamedTuple

import numpy as np

from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.api.rng import stream

from .gps_multipath import (PLANE_NORMAL_QUANTUM, PLANE_OFFSET_QUANTUM_M, REFLECTION_NORMAL_COS_TOL,
                            REFLECTION_POINT_TOL_M, Multipath, Reflection, fibonacci_directions, find_reflections,
                            image_reflection, unit_vectors)

__all__ = ["BLOCK_EPOCHS", "BUDGET_TERMS", "PLANE_NORMAL_QUANTUM", "PLANE_OFFSET_QUANTUM_M",
           "REFLECTION_NORMAL_COS_TOL", "REFLECTION_POINT_TOL_M", "GpsL1", "LoggedCode", "Multipath", "Reception",
           "Reflection", "epoch_view", "fibonacci_directions", "find_reflections", "image_reflection"]

#: Epochs computed together (vectorised) when the first of them is asked for.
BLOCK_EPOCHS = 128

#: Time of GPS week 0 (GPST) as integer nanoseconds units for the ``epoch`` variable.
_EPOCH_UNITS = "nanoseconds since 1980-01-06 00:00:00"

#: Error terms whose position error is reported one by one in ``error_budget_enu``.
BUDGET_TERMS = ("ephemeris", "ionosphere", "troposphere", "multipath", "noise")

_TERM_VARIABLES = {
    "geometric_range": "geometric range at the light-time solution, incl. Earth rotation (Sagnac)",
    "receiver_clock_bias": "receiver clock offset times c",
    "sv_clock_error": "satellite clock offset times c (broadcast polynomial + relativity - TGD)",
    "ephemeris_error": "satellite ephemeris (signal-in-space) range error",
    "iono_delay": "ionospheric group delay on L1",
    "tropo_delay_dry": "slant hydrostatic tropospheric delay",
    "tropo_delay_wet": "slant wet tropospheric delay",
    "multipath_error": "excess path of the reflected signal tracked instead of a blocked direct one",
    "noise": "receiver code noise",
}


def epoch_view(ds):
    """A written ``gps_l1`` dataset in the solver's layout: dimension ``epoch`` instead of ``frame``.

    ``epoch`` and ``time_tag`` become coordinates, so :func:`gnss.solve` can run on the result.
    """
    return ds.set_coords([c for c in ("epoch", "time_tag") if c in ds]).swap_dims(frame="epoch")


# --------------------------------------------------------------------------------------------
# The sensor model
# --------------------------------------------------------------------------------------------

def read_nav_checked(path, systems=("G",)):
    """:func:`gnss.read_nav`, its ValueError (file and line) reported as ``nav_file: reason``.

    The scenario checks read the file more than once (parameters, time span, the estimate);
    the last few files read are kept, keyed by path, size, modification time and systems.
    """
    import os

    st = os.stat(path)
    return _read_nav_cached(str(path), st.st_size, st.st_mtime_ns, tuple(systems))


@functools.lru_cache(maxsize=4)
def _read_nav_cached(path, size, mtime_ns, systems):
    import gnss

    try:
        return gnss.read_nav(path, systems=systems)
    except ValueError as exc:
        raise ValueError(f"nav_file: {exc}") from None


class LoggedCode(NamedTuple):
    """What a receiver logs and computes its fix from (:meth:`GpsL1._logged_code`).

    Attributes
    ----------
    noise_m : numpy.ndarray or None, shape (n_epoch, n_sv)
        Code noise of the fix's signal [m], the ``noise`` term; None: ``gps_l1``'s own.
    code_m : numpy.ndarray or None, shape (n_epoch, n_sv)
        Code pseudoranges of the fix's signals as logged [m] (NaN: not tracked); None: the fix
        uses ``pseudorange``.
    time_tag : numpy.ndarray of datetime64[ns] or None, shape (n_epoch,)
        Time tags of those observations as logged (GPST + receiver clock).
    variables : dict of str to hifi.api.model.Var
        Further output variables of the epochs.
    """

    noise_m: np.ndarray | None
    code_m: np.ndarray | None
    time_tag: np.ndarray | None
    variables: dict


@dataclasses.dataclass(frozen=True, eq=False)
class Reception:
    """What reaches the antenna at the epochs of one block: which satellites are tracked and by
    which path, and the pseudorange terms, before the receiver logs and solves.

    :meth:`GpsL1._compute` builds it and hands it to :meth:`GpsL1._logged_code`, from which a
    receiver that logs observations (:class:`sensors.gnss_receiver.GnssReceiver`) models them.

    Attributes
    ----------
    times_s : numpy.ndarray, shape (n_epoch,)
        Simulated times of the epochs [s].
    t_gps : numpy.ndarray of datetime64[ns], shape (n_epoch,)
        True reception times (GPST).
    time_tag : numpy.ndarray of datetime64[ns], shape (n_epoch,)
        Receiver clock readings at reception (GPST + receiver clock offset).
    antenna_scene : numpy.ndarray, shape (n_epoch, 3)
        True antenna positions, scene frame [m].
    rx_ecef : numpy.ndarray, shape (n_epoch, 3)
        True antenna positions, WGS 84 ECEF [m].
    receiver_clock_bias_m : numpy.ndarray, shape (n_epoch,)
        Receiver clock offset times c [m].
    elevation_rad : numpy.ndarray, shape (n_epoch, n_sv)
        Satellite elevations at the antenna [rad].
    tracked : numpy.ndarray of bool, shape (n_epoch, n_sv)
        A signal reaches the receiver: visible and not blocked, or reflected.
    reflected : numpy.ndarray of bool, shape (n_epoch, n_sv)
        Blocked, but tracked through a specular reflection (the reflected signal alone).
    terms : dict of str to numpy.ndarray, shape (n_epoch, n_sv)
        The pseudorange terms of :data:`gnss.receiver.PSEUDORANGE_TERMS` [m], as
        :func:`gnss.model_pseudoranges` gives them (``noise``: the code noise of
        ``noise_sigma_m``), with ``multipath_error`` the excess path of a reflected satellite
        (0 elsewhere).  Read only.
    """

    times_s: np.ndarray
    t_gps: np.ndarray
    time_tag: np.ndarray
    antenna_scene: np.ndarray
    rx_ecef: np.ndarray
    receiver_clock_bias_m: np.ndarray
    elevation_rad: np.ndarray
    tracked: np.ndarray
    reflected: np.ndarray
    terms: dict


class GpsL1(Sensor):
    """GPS L1 C/A code receiver: pseudoranges term by term, blockage and multipath, fixes.

    Per epoch (one frame at ``rate_hz``, default 1 Hz) and satellite of the nav file: the
    pseudorange terms of :func:`gnss.model_pseudoranges` at the antenna's true position and the
    true reception time ``start_utc + t`` (UTC -> GPST with :func:`gnss.utc_to_gpst`), a ray cast
    from the antenna toward each satellite above the mask (``blocked`` when any surface is hit),
    and for each blocked satellite the shortest valid reflection
    (:func:`~sensors.gps_multipath.find_reflections`), whose excess path is ``multipath_error``.
    A blocked satellite without a reflection has no pseudorange (NaN); the others have

        pseudorange = geometric_range + receiver_clock_bias - sv_clock_error + ephemeris_error
                      + iono_delay + tropo_delay_dry + tropo_delay_wet + multipath_error + noise

    summed in this order by :func:`gnss.receiver.pseudorange_sum` (the terms come from
    :func:`gnss.model_pseudoranges`, the code noise scaled there from this model's per-epoch
    draws; ``multipath_error`` is added here).  The fix is :func:`gnss.solve` on these
    pseudoranges (a subclass that logs observations solves from them instead:
    :meth:`_logged_code`; the keywords are the ``solver_settings`` attribute, JSON) (elevation weights, broadcast Klobuchar and Saastamoinen-Niell corrections as
    set by ``solver_iono_model`` / ``solver_tropo_model``, started at the scenario origin);
    epochs with fewer than four satellites are NaN.  ``error_budget_enu`` is each error term's
    share of the position error (:func:`gnss.solver.position_error_budget`, the residuals after
    :func:`gnss.solver.atmospheric_corrections` at the true position).  The antenna is isotropic and at the
    sensor's origin; its orientation does not matter.
    """

    model_name = "gps_l1"
    default_rate_hz = 1.0
    PARAMS = {
        "nav_file": Param("path", doc="RINEX 2 or 3 GPS navigation file, relative to the scenario"),
        "elevation_mask_deg": Param("float", default=10.0, minimum=-90.0, maximum=90.0,
                                    doc="satellites below this elevation are not tracked [deg]"),
        "iono_model": Param("str", default="klobuchar", choices=("klobuchar", "vane", "none"),
                            doc="simulated ionosphere: broadcast Klobuchar, VANE's mapped zenith delay, or off"),
        "iono_zenith_delay_m": Param("float", default=1.5, minimum=0.0,
                                     doc="vertical delay of iono_model 'vane' [m]"),
        "tropo_model": Param("str", default="saastamoinen_niell", choices=("saastamoinen_niell", "none"),
                             doc="simulated troposphere"),
        "relative_humidity": Param("float", default=0.5, minimum=0.0, maximum=1.0,
                                   doc="relative humidity of the standard atmosphere [1]"),
        "ephemeris_error_model": Param("str", default="sisre", choices=("sisre", "vane", "none"),
                                       doc="satellite range error: SISRE (Montenbruck 2015) or off; "
                                           "'vane' is refused (see gnss.errors)"),
        "sisre_rms_m": Param("float", default=0.7, minimum=0.0,
                             doc="RMS of the signal-in-space range error [m] (Montenbruck et al. 2015)"),
        "receiver_clock_model": Param("str", default="random_walk", choices=("random_walk", "none"),
                                      doc="TCXO two-state random walk (Brown & Hwang 2012) or a perfect clock"),
        "receiver_clock_initial_bias_s": Param("float", default=0.0,
                                               doc="receiver clock offset at t = 0 [s]"),
        "receiver_clock_initial_drift": Param("float", default=0.0, doc="receiver clock drift at t = 0 [s/s]"),
        "noise_sigma_m": Param("float", default=0.3, minimum=0.0,
                               doc="zenith code noise sigma [m], grows as 1/sin(el)"),
        "multipath_search_radius_m": Param("float", default=50.0, minimum=0.0,
                                           doc="reflectors farther from the antenna are ignored [m]; 0: no multipath"),
        "multipath_fan_rays": Param("int", default=2048, minimum=16,
                                    doc="rays of the fan that finds reflecting facets around the antenna"),
        "solver_iono_model": Param("str", default="klobuchar", choices=("klobuchar", "none"),
                                   doc="ionospheric correction the receiver applies"),
        "solver_tropo_model": Param("str", default="saastamoinen_niell", choices=("saastamoinen_niell", "none"),
                                    doc="tropospheric correction the receiver applies"),
        "raim": Param("bool", default=True,
                      doc="receiver autonomous integrity monitoring of the fix: a chi-square test of the "
                          "residuals, the worst satellite excluded while it fails, the fix withheld (NaN) "
                          "when no redundancy is left (gnss.solve)"),
    }

    @classmethod
    def check_params(cls, p):
        """Cross-parameter checks, and ``nav_file`` must be a readable GPS nav file with records.

        A nav file that :func:`gnss.read_nav` refuses (a record cut short, a malformed
        number: the message names the file and line) or that holds no GPS ephemeris record
        is reported as ``nav_file: reason``.
        """
        if p["ephemeris_error_model"] == "vane":
            from gnss.errors import VANE_EPHEMERIS_UNAVAILABLE
            raise ValueError(f"ephemeris_error_model: {VANE_EPHEMERIS_UNAVAILABLE}")
        nav = cls._checked_nav(p)
        if nav.sizes["record"] == 0:
            raise ValueError(f"nav_file: {p['nav_file']} holds no GPS ephemeris records; expected a RINEX 2 "
                             f"or 3 GPS navigation file with broadcast ephemerides for the run's time")
        return p

    @classmethod
    def check_run(cls, p, *, start_utc, duration_s, rate_hz):
        """``nav_file`` must cover the run: GPST ``start_utc`` to ``start_utc + duration_s``.

        Covered means that at every instant of that span at least
        :data:`gnss.orbit.MIN_SATELLITES_FOR_FIX` (4) healthy satellites have a record whose
        toe is within :data:`gnss.constants.EPHEMERIS_MAX_AGE_S` (2 h, half the 4 h fit
        interval of IS-GPS-200 20.3.4.4), the rule the orbit code uses to pick a record
        (:func:`gnss.orbit.ephemeris_coverage`). Otherwise every epoch would silently have no
        fix.
        """
        from gnss.orbit import MIN_SATELLITES_FOR_FIX, ephemeris_coverage
        from gnss.constants import EPHEMERIS_MAX_AGE_S
        from hifi.api.timebase import Epoch

        nav = cls._checked_nav(p)
        t0 = Epoch.from_utc(start_utc).gps
        t1 = t0 + np.timedelta64(int(round(duration_s * 1e9)), "ns")
        spans = ephemeris_coverage(nav)
        if any(a <= t0 and t1 <= b for a, b in spans):
            return
        fmt = lambda t: np.datetime_as_string(t, unit="s")  # noqa: E731
        shown = ", ".join(f"{fmt(a)} .. {fmt(b)}" for a, b in spans[:4]) + (
            f" and {len(spans) - 4} more" if len(spans) > 4 else "")
        rule = (f"at least {MIN_SATELLITES_FOR_FIX} healthy satellites within "
                f"{EPHEMERIS_MAX_AGE_S / 3600:g} h of their toe")
        have = f"cover GPST {shown}" if spans else "never cover any time"
        raise ValueError(f"nav_file: its ephemerides {have} ({rule}), not the run's GPST {fmt(t0)} .. {fmt(t1)} "
                         f"(simulation.start_utc = {start_utc!r}, duration_s = {duration_s:g}); give the "
                         f"nav file of the run's day or change start_utc")

    # -- cost, before setup ----------------------------------------------------------------------
    SIZE_PARAMS = {"multipath_fan_rays": "lower", "multipath_search_radius_m": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, urban canyon, fitted 319 B): per ray of a
    #: block of epochs (satellites plus the multipath fan).
    WORKING_BYTES_PER_RAY = 320.0

    def _n_sv(self) -> int:
        """Satellites of the nav file (the ``sv`` dimension)."""
        return int(np.unique(self._checked_nav(self.params)["sat"].values).size)

    @classmethod
    def _checked_nav(cls, p):
        """The nav file as the parameter checks read it (GPS records)."""
        return read_nav_checked(p["nav_file"])

    def rays_per_frame(self):
        """One ray per satellite (blockage) plus the multipath fan, an upper bound: the fan is
        cast only at epochs with a blocked satellite, and each candidate reflection adds two."""
        fan = self.params["multipath_fan_rays"] if self.params["multipath_search_radius_m"] > 0 else 0
        return self._n_sv() + fan

    def frame_layout(self):
        n = self._n_sv()
        f8, i8, i4, b = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.int32), np.dtype(bool)
        out = {"epoch": ((), i8), "time_tag": ((), i8), "timestamp": ((), f8), "pseudorange": ((n,), f8)}
        out.update({name: ((n,), f8) for name in _TERM_VARIABLES})
        out.update({"elevation": ((n,), f8), "azimuth": ((n,), f8), "visible": ((n,), b), "blocked": ((n,), b),
                    "reflected": ((n,), b), "tracked": ((n,), b), "reflector_object_id": ((n,), i4),
                    "reflection_point_scene": ((n, 3), f8), "sv_position_ecef": ((n, 3), f8),
                    "antenna_position_scene": ((3,), f8), "true_position_ecef": ((3,), f8),
                    "receiver_clock_drift": ((), f8), "position_ecef": ((3,), f8), "clock_bias": ((), f8),
                    "position_error_enu": ((3,), f8)})
        out.update({d: ((), f8) for d in ("gdop", "pdop", "hdop", "vdop", "tdop")})
        out.update({"n_sv_used": ((), i4), "used": ((n,), b), "residual": ((n,), f8),
                    "raim_statistic": ((), f8), "raim_status": ((), np.dtype(np.int8)), "raim_excluded": ((n,), b),
                    "error_budget_enu": ((len(BUDGET_TERMS), 3), f8)})
        return out

    def estimate(self, duration_s):
        """As :meth:`hifi.api.model.Model.estimate`, for epochs computed in blocks.

        A block of ``min(BLOCK_EPOCHS, frames)`` epochs is computed at once (its rays and
        working memory together) and its variables are held until the next block; the
        receiver clock of every epoch (two float64) is drawn at setup.
        """
        e = super().estimate(duration_s)
        block = min(BLOCK_EPOCHS, e.frames)
        return dataclasses.replace(e, setup_bytes=block * e.frame_bytes + 16 * e.frames,
                                   working_bytes=int(round(self.WORKING_BYTES_PER_RAY * block * e.rays_per_frame)))

    # -- setup ---------------------------------------------------------------------------------
    def setup(self, ctx):
        from gnss import errors

        super().setup(ctx)
        p = self.params
        self._nav = self._load_nav(p)
        self._prn = np.unique(self._nav["sat"].values).astype(np.int64)
        self._fix_tables = self._fix_signal_tables()
        o = ctx.origin
        self._origin = (float(o["lat_deg"]), float(o["lon_deg"]), float(o["height_m"]))
        self._origin_ecef = np.array(self._enu_to_ecef(np.zeros((1, 3)))[0])
        if p["iono_model"] == "klobuchar" or p["solver_iono_model"] == "klobuchar":
            if not (np.all(np.isfinite(self._nav["ion_alpha"].values))
                    and np.all(np.isfinite(self._nav["ion_beta"].values))):
                raise ValueError(f"nav_file {p['nav_file']!r} has no Klobuchar coefficients; set iono_model "
                                 "and solver_iono_model to 'vane' / 'none'")
        n_sv = self._prn.size
        eph_rng = stream(ctx.seed, self.name, -1, "ephemeris")
        self._eph = errors.sisre_range_error(n_sv, eph_rng, rms_m=p["sisre_rms_m"]) \
            if p["ephemeris_error_model"] == "sisre" else None
        # every event of the run, for the receiver clock drawn once
        times = []
        while True:
            t = self.event_time(len(times))
            if t is None or t >= ctx.duration_s:
                break
            times.append(t)
        self._times = np.asarray(times, dtype=float)
        if p["receiver_clock_model"] == "random_walk" and self._times.size:
            walk = errors.receiver_clock_walk(np.diff(self._times, prepend=self._times[0]),
                                              stream(ctx.seed, self.name, -1, "receiver_clock"),
                                              initial_bias_s=p["receiver_clock_initial_bias_s"],
                                              initial_drift=p["receiver_clock_initial_drift"])
            self._clock_bias_s, self._clock_drift = walk.bias_s, walk.drift
        else:
            self._clock_bias_s = p["receiver_clock_initial_bias_s"] + p["receiver_clock_initial_drift"] * self._times
            self._clock_drift = np.full(self._times.size, p["receiver_clock_initial_drift"])
        self._fan = fibonacci_directions(p["multipath_fan_rays"])
        self._block: tuple[int, dict] | None = None

    #: Systems the fix uses (one receiver clock each; :func:`gnss.solve`): GPS alone.
    #: :class:`sensors.gnss_receiver.GnssReceiver` gives its ``constellations`` instead.
    _solver_constellations = ("G",)

    @property
    def _pseudorange_long_name(self) -> str:
        if self._solver_constellations == ("G",):
            return "simulated L1 C/A pseudorange (NaN where not tracked)"
        return ("simulated code pseudorange of the fix: GPS L1 C/A, Galileo E1, BeiDou B1I, GLONASS L1 C/A "
                "(NaN where not tracked)")

    def solver_settings(self) -> dict:
        """Keyword arguments of :func:`gnss.solve` that give this receiver's fix.

        Recorded in the dataset as the JSON attribute ``solver_settings``, so that
        ``gnss.solve(obs, nav, **json.loads(ds.attrs["solver_settings"]))`` recomputes the fix
        from the observations (for ``gnss_receiver``: from its exported RINEX files).
        """
        p = self.params
        return {"constellations": list(self._solver_constellations),
                "elevation_mask_deg": float(p["elevation_mask_deg"]),
                "iono_model": p["solver_iono_model"], "tropo_model": p["solver_tropo_model"],
                "relative_humidity": float(p["relative_humidity"]), "weighting": "elevation",
                "raim": bool(p["raim"]),
                "initial_position_ecef": [float(v) for v in self._origin_ecef]}

    def _logged_code(self, ks, reception: Reception) -> LoggedCode:
        """Hook: the observations a receiver logs, which its fix is computed from.

        ``ks`` are the block's epochs (frame numbers) and ``reception`` what reaches the antenna
        at them.  ``gps_l1`` logs nothing beside ``pseudorange``: its fix uses ``pseudorange``
        (all fields None, no variables). :class:`sensors.gnss_receiver.GnssReceiver` returns its
        code observables.
        """
        return LoggedCode(None, None, None, {})

    def _fix_variables(self, sol) -> dict[str, Var]:
        """Hook: further variables of the fix, added after every other variable of the epochs.

        ``sol`` is :func:`gnss.solve`'s dataset of the block's epochs.  ``gps_l1`` adds none;
        :class:`sensors.gnss_receiver.GnssReceiver` adds each system's receiver clock.
        """
        return {}

    def _fix_signal_tables(self):
        """Per satellite: the factor (f_L1 / f)^2 taking the L1 ionospheric delay to the
        carrier of its code in the fix (:func:`gnss.solver.code_frequency_hz`), and its
        receiver clock in the fix (None: one clock, GPS alone). Computed once, at set-up."""
        from gnss.orbit import sat_label
        from gnss.solver import SYSTEM_FREQ_HZ, code_frequency_hz

        labels = np.array([sat_label(q) for q in self._prn])
        scale = (SYSTEM_FREQ_HZ["G"] / code_frequency_hz(self._nav, labels)) ** 2
        if len(self._solver_constellations) == 1:
            return scale, None
        clock = np.array([self._solver_constellations.index(x[:1]) for x in labels], dtype=np.int64)
        return scale, clock

    @staticmethod
    def _load_nav(p):
        import gnss
        return gnss.read_nav(p["nav_file"], systems=("G",))          # an L1 C/A receiver: GPS alone

    def _enu_to_ecef(self, enu):
        from gnss.geometry import enu_to_ecef
        return enu_to_ecef(enu, *self._origin)

    def _ecef_to_enu(self, ecef):
        from gnss.geometry import ecef_to_enu
        return ecef_to_enu(ecef, *self._origin)

    # -- dataset layout --------------------------------------------------------------------------
    def coords(self):
        from gnss.orbit import sat_label
        return {
            "sv": Var(("sv",), np.array([sat_label(q) for q in self._prn]), "1", "satellite identifier"),
            "prn": Var(("sv",), self._prn.astype(np.int32), "1",
                       "GPS PRN (other systems: Galileo 200 + PRN, BeiDou 300 + PRN)"),
            "xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1",
                       "axis: ECEF for *_ecef variables, scene frame for *_scene variables"),
            "enu": Var(("enu",), np.array(["e", "n", "u"]), "1", "local east, north, up at the true position"),
            "term": Var(("term",), np.array(BUDGET_TERMS), "1", "pseudorange error term"),
        }

    def attrs(self):
        p = self.params
        return {"nav_file": str(p["nav_file"]), "elevation_mask_deg": p["elevation_mask_deg"],
                "iono_model": p["iono_model"], "tropo_model": p["tropo_model"],
                "ephemeris_error_model": p["ephemeris_error_model"],
                "receiver_clock_model": p["receiver_clock_model"],
                "solver_iono_model": p["solver_iono_model"], "solver_tropo_model": p["solver_tropo_model"],
                "solver_settings": json.dumps(self.solver_settings()),
                "dimensions_note": "frame is the epoch; sensors.gps.epoch_view(ds) gives (epoch, sv)",
                "ion_alpha": self._nav["ion_alpha"].values.astype(float),
                "ion_beta": self._nav["ion_beta"].values.astype(float)}

    # -- stepping --------------------------------------------------------------------------------
    def step(self, k, t):
        b = k // BLOCK_EPOCHS
        if self.ctx.scene.rides_on_driven_body(self.name):   # a driven antenna: epoch by epoch
            data, i = self._compute(np.array([k])), 0
            return {name: Var(v.dims, v.data[i], v.units, v.long_name, v.extra) for name, v in data.items()}
        if self._block is None or self._block[0] != b:
            ks = np.arange(b * BLOCK_EPOCHS, min((b + 1) * BLOCK_EPOCHS, self._times.size))
            self._block = (b, self._compute(ks))
        data = self._block[1]
        i = k - b * BLOCK_EPOCHS
        return {name: Var(v.dims, v.data[i], v.units, v.long_name, v.extra) for name, v in data.items()}

    def _compute(self, ks) -> dict[str, Var]:
        """Every variable of epochs ``ks`` (one block), vectorised over epochs and satellites."""
        import xarray as xr

        import gnss
        from gnss import geometry, gpstime
        from gnss.constants import SPEED_OF_LIGHT
        from gnss.receiver import PSEUDORANGE_TERMS, pseudorange_sum
        from gnss.solver import atmospheric_corrections, position_error_budget

        p = self.params
        ts = self._times[ks]
        n_e, n_sv = ks.size, self._prn.size
        t_gps = self.ctx.epoch.gps_at(ts)
        antenna = np.broadcast_to(self.pose_at(ts).translation, (n_e, 3)).copy()
        rx_ecef = self._enu_to_ecef(antenna)
        clock_m = SPEED_OF_LIGHT * self._clock_bias_s[ks]     # drawn for the whole run at setup
        # receiver noise: one stream per epoch (frame), scaled by the kernel
        z = np.stack([stream(self.ctx.seed, self.name, int(k), "noise").standard_normal(n_sv) for k in ks]) \
            if n_e else np.zeros((0, n_sv))
        pred = gnss.model_pseudoranges(
            self._nav, rx_ecef, t_gps, self._prn, rng=None, elevation_mask_deg=p["elevation_mask_deg"],
            iono_model=p["iono_model"], tropo_model=p["tropo_model"],
            ephemeris_error_model=p["ephemeris_error_model"],
            receiver_clock_bias_m=clock_m, ephemeris_error_m=self._eph,
            noise_sigma_m=p["noise_sigma_m"], noise_draw=z,
            relative_humidity=p["relative_humidity"], iono_zenith_delay_m=p["iono_zenith_delay_m"])
        el = pred["elevation"].values
        az = pred["azimuth"].values
        visible = pred["visible"].values
        # blockage: one ray per visible satellite
        sv_ecef = pred["sv_position_ecef"].values
        sv_scene = self._ecef_to_enu(sv_ecef)
        los = unit_vectors(sv_scene - antenna[:, None, :])
        ve, vs = np.nonzero(visible)
        blocked = np.zeros((n_e, n_sv), dtype=bool)
        if ve.size:
            dist, _, _, _ = self.ctx.caster.nearest(antenna[ve], los[ve, vs], ts[ve], np.full(ve.size, np.inf))
            blocked[ve, vs] = np.isfinite(dist)
        mp = find_reflections(self.ctx.caster, antenna, ts, np.where(np.isfinite(sv_scene), sv_scene, 0.0),
                              blocked, search_radius_m=p["multipath_search_radius_m"], fan_directions=self._fan)
        reflected = blocked & np.isfinite(mp.excess_m)
        terms = {name: np.asarray(pred[name].values, dtype=float) for name in PSEUDORANGE_TERMS}
        terms["multipath_error"] = np.where(reflected, mp.excess_m, 0.0)
        tracked = visible & (~blocked | reflected)
        # what a receiver that logs observations models them from
        reception = Reception(times_s=ts, t_gps=t_gps, time_tag=pred["time_tag"].values, antenna_scene=antenna,
                              rx_ecef=rx_ecef, receiver_clock_bias_m=clock_m, elevation_rad=el, tracked=tracked,
                              reflected=reflected, terms=terms)
        logged = self._logged_code(ks, reception)
        if logged.noise_m is not None:
            terms = {**terms, "noise": logged.noise_m}
        # the fix's code of each system (GPS and Galileo L1/E1, BeiDou B1I): the L1 ionosphere
        # scaled to its frequency, as gnss.solve corrects it
        iono_scale, clock_index = self._fix_tables
        pr = pseudorange_sum(**{**terms, "iono_delay": terms["iono_delay"] * iono_scale}, valid=tracked)
        # the fix: from the code as logged (a receiver that logs observations solves from them)
        if logged.code_m is None:
            obs = pred[["pseudorange"]].assign(pseudorange=(("epoch", "sv"), pr))
        else:
            obs = xr.Dataset({"pseudorange": (("epoch", "sv"), logged.code_m)},
                             coords={"epoch": logged.time_tag, "sv": pred["sv"].values})
        sol = gnss.solve(obs, self._nav, true_position_ecef=rx_ecef, **self.solver_settings())
        used = sol["used"].values
        # error budget: residual of each term after the receiver's corrections (at the truth)
        geo = geometry.ecef_to_geodetic(rx_ecef)
        corr = atmospheric_corrections(
            geo.latitude_rad[:, None], geo.longitude_rad[:, None], geo.height_m[:, None], az, el,
            gpstime.from_datetime64(pred["time_tag"].values).sow[:, None], geometry.day_of_year(t_gps)[:, None],
            alpha=self._nav["ion_alpha"].values, beta=self._nav["ion_beta"].values,
            iono_model=p["solver_iono_model"], tropo_model=p["solver_tropo_model"],
            relative_humidity=p["relative_humidity"])
        residual_terms = np.stack([terms["ephemeris_error"],
                                   (terms["iono_delay"] - corr.iono_m) * iono_scale,
                                   terms["tropo_delay_dry"] + terms["tropo_delay_wet"] - corr.tropo_m,
                                   terms["multipath_error"], terms["noise"]])
        budget = position_error_budget(residual_terms, used, el, az, clock_index=clock_index).transpose(1, 0, 2)

        ns = gpstime.to_ns(t_gps)
        ns_tag = gpstime.to_ns(pred["time_tag"].values)
        es, ex, e3 = ("sv",), ("sv", "xyz"), ("xyz",)
        cal = {"calendar": "proleptic_gregorian", "time_scale": "GPST"}
        out = {
            "epoch": Var((), ns, _EPOCH_UNITS, "true reception time (GPST)", cal),
            "time_tag": Var((), ns_tag, _EPOCH_UNITS, "receiver clock reading at reception (GPST + receiver clock offset)", cal),
            "timestamp": Var((), ts, "s", "time of the measurement since simulation start"),
            "pseudorange": Var(es, pr, "m", self._pseudorange_long_name),
        }
        for name, long_name in _TERM_VARIABLES.items():
            out[name] = Var(es, terms[name], "m", long_name)
        out.update({
            "elevation": Var(es, el, "rad", "satellite elevation at the antenna"),
            "azimuth": Var(es, az, "rad", "satellite azimuth from north, clockwise"),
            "visible": Var(es, visible, "1", "healthy ephemeris and above the elevation mask"),
            "blocked": Var(es, blocked & visible, "1", "direct line of sight blocked by the scene (ray cast)"),
            "reflected": Var(es, reflected, "1", "blocked, but tracked through a specular reflection"),
            "tracked": Var(es, tracked, "1", "pseudorange available (visible and not blocked, or reflected)"),
            "reflector_object_id": Var(es, np.where(reflected, mp.object_id, -1).astype(np.int32), "1",
                                       "object of the reflecting facet, -1 none"),
            "reflection_point_scene": Var(ex, np.where(reflected[..., None], mp.point_scene, np.nan), "m",
                                          "specular reflection point, scene frame"),
            "sv_position_ecef": Var(ex, sv_ecef, "m", "satellite position at transmission in the ECEF frame of reception"),
            "antenna_position_scene": Var(e3, antenna, "m", "true antenna position, scene frame"),
            "true_position_ecef": Var(e3, rx_ecef, "m", "true antenna position, WGS 84 ECEF"),
            "receiver_clock_drift": Var((), self._clock_drift[ks], "s/s", "receiver clock drift"),
            "position_ecef": Var(e3, sol["position_ecef"].values, "m", "estimated position, WGS 84 ECEF (NaN: < 4 satellites)"),
            "clock_bias": Var((), sol["clock_bias"].values, "m", "estimated receiver clock offset times c"),
            "position_error_enu": Var(("enu",), sol["position_error_enu"].values, "m",
                                      "estimated minus true position, local ENU at the truth"),
        })
        for d in ("gdop", "pdop", "hdop", "vdop", "tdop"):
            out[d] = Var((), sol[d].values, "1", sol[d].attrs["long_name"] + " (unweighted, local ENU)")
        out.update({
            "n_sv_used": Var((), sol["n_sv_used"].values, "1", "satellites used in the fix"),
            "used": Var(es, used, "1", "satellite used in the fix"),
            "residual": Var(es, sol["residual"].values, "m", "post-fit pseudorange residual"),
            "raim_statistic": Var((), sol["raim_statistic"].values, "1", sol["raim_statistic"].attrs["long_name"]),
            "raim_status": Var((), sol["raim_status"].values, "1", sol["raim_status"].attrs["long_name"]),
            "raim_excluded": Var(es, sol["raim_excluded"].values, "1", "satellite excluded from the fix by RAIM"),
            "error_budget_enu": Var(("term", "enu"), budget, "m",
                                    "position error caused by each error term alone (linearised solver)"),
        })
        out.update(logged.variables)
        out.update(self._fix_variables(sol))
        return out
