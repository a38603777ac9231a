"""Multi-constellation, multi-frequency GNSS receiver: raw observables per signal and the fix.

``gnss_receiver`` is :class:`sensors.gps.GpsL1` (``gps_l1`` stays its GPS L1 preset) with the
satellites of every system in ``constellations`` (GPS, GLONASS, Galileo, BeiDou, from a mixed
RINEX 3 navigation file; GLONASS L1 on each satellite's FDMA carrier), a fix with one receiver clock per system (:func:`gnss.solve`), and per
satellite and signal the raw observables of :func:`gnss.observables.model_observables`: code,
carrier phase (integer ambiguity per arc; a new arc, with the loss-of-lock bit, wherever the
satellite was not tracked at the previous epoch), Doppler and C/N0 (a reflected-only satellite
loses the reflection loss). The scene decides what is tracked exactly as for ``gps_l1``: the
ray cast toward each satellite and the specular reflections. The code observables carry the
same ephemeris error, troposphere, multipath excess path and (at L1) ionosphere as
``pseudorange`` (the ephemeris error and a reflected-only signal's excess path lengthen the
phase too; the ionosphere advances it), the ionosphere scaled by 1/f^2 to each signal; their
noise is the tracking loops' thermal jitter at the signal's C/N0
(:func:`gnss.observables.tracking_sigmas`); ``noise_sigma_m`` of ``gps_l1`` is not used.

The fix is computed from the observations the receiver logs, as a real receiver's: the code of
:data:`FIX_SIGNALS` (GPS L1 C/A, Galileo E1, BeiDou B1I, GLONASS L1 C/A; every constellation
must track its one) as the RINEX file holds it (1 mm, time tags to 0.1 us), with the solver
settings recorded in the ``solver_settings`` attribute, so :func:`gnss.solve` on the exported
files gives the same fix. ``pseudorange`` is that code before rounding: the pseudorange terms
with the code's tracking noise as ``noise``, so a BeiDou satellite's carries the L1 ionospheric
delay times (f_L1 / f_B1I)^2 = 1.0184 (a GLONASS satellite's, (f_L1 / f_k)^2 at its channel's
carrier), as :func:`gnss.solve` corrects it. ``error_budget_enu`` solves with one clock per system as the fix
does (:func:`gnss.solver.position_error_budget` with ``clock_index``): what is common to one
system's satellites moves no position, and the terms add up to the fix's error.
"""

from __future__ import annotations

import numpy as np

from hifi.api.model import Var
from hifi.api.params import Param
from hifi.api.rng import stream

from .gps import GpsL1, LoggedCode, Reception, read_nav_checked

#: Systems the receiver handles (RINEX letters) and the signals it can track.
SYSTEMS = ("G", "R", "E", "C")
#: The signal whose code the fix uses, per system: the single-frequency code :func:`gnss.solve`
#: takes first from a RINEX file (:data:`gnss.solver.SYSTEM_PSEUDORANGES`: C1C, C1C, C2I, C1C).
FIX_SIGNALS = {"G": "G1C", "E": "E1C", "C": "C2I", "R": "R1C"}


def _signal_keys():
    from gnss.observables import SIGNALS
    return tuple(SIGNALS)


class GnssReceiver(GpsL1):
    """GPS, GLONASS, Galileo and BeiDou receiver with code, carrier phase, Doppler and C/N0 per
    signal (module docstring)."""

    model_name = "gnss_receiver"
    PARAMS = {
        **GpsL1.PARAMS,
        "nav_file": Param("path", doc="RINEX 3 navigation file (mixed: every system of constellations), "
                                      "relative to the scenario"),
        "constellations": Param("any", default=["G"],
                                doc="systems tracked: a list of 'G' (GPS), 'R' (GLONASS), 'E' (Galileo), "
                                    "'C' (BeiDou)"),
        "signals": Param("any", default=["G1C"],
                         doc="signals tracked, system letter + RINEX 3 code: G1C, G5Q, R1C (FDMA), E1C, E5Q, "
                             "C2I"),
    }

    @classmethod
    def _checked_nav(cls, p):
        return read_nav_checked(p["nav_file"], tuple(p["constellations"]))

    @classmethod
    def check_params(cls, p):
        """``constellations`` and ``signals``: lists of known names, every signal of a listed
        system and every system with a signal; then the nav checks of ``gps_l1`` on the
        records of those systems."""
        c, s = p["constellations"], p["signals"]
        known = _signal_keys()
        if not isinstance(c, list) or not c or any(x not in SYSTEMS for x in c) or len(set(c)) != len(c):
            raise ValueError(f"constellations: got {c!r}; allowed: a list of distinct letters of {list(SYSTEMS)}")
        if not isinstance(s, list) or not s or any(x not in known for x in s) or len(set(s)) != len(s):
            raise ValueError(f"signals: got {s!r}; allowed: a list of distinct names of {list(known)}")
        orphan = [x for x in s if x[0] not in c]
        if orphan:
            raise ValueError(f"signals: {orphan} belong to systems not in constellations {c}; allowed: signals "
                             f"of {c}")
        silent = [x for x in c if not any(k[0] == x for k in s)]
        if silent:
            raise ValueError(f"constellations: {silent} have no signal in signals {s}; add one (e.g. "
                             f"{[k for k in known if k[0] in silent][0]})")
        no_fix = [FIX_SIGNALS[x] for x in c if FIX_SIGNALS[x] not in s]
        if no_fix:
            raise ValueError(f"signals: {s} lacks {no_fix}, the code the fix of each constellation uses "
                             f"(gnss.solve takes C1C, E1C, C2I, R1C from a RINEX file); allowed: signals that "
                             f"include {[FIX_SIGNALS[x] for x in c]}")
        p = super().check_params(p)
        have = set(str(x) for x in cls._checked_nav(p)["system"].values)
        missing = [x for x in c if x not in have]
        if missing:
            raise ValueError(f"nav_file: {p['nav_file']} holds no ephemeris of {missing}; expected a mixed RINEX 3 "
                             f"navigation file with records of every system in constellations {c}")
        return p

    @property
    def _solver_constellations(self) -> tuple[str, ...]:
        """Systems the fix uses, one receiver clock each: every one of ``constellations``."""
        return tuple(self.params["constellations"])

    def setup(self, ctx):
        super().setup(ctx)
        self._signals = list(self.params["signals"])
        n_sv = self._prn.size
        # per satellite: the signal whose code the fix uses (every constellation has it: check_params)
        self._fix_signal_index = np.array([self._signals.index(FIX_SIGNALS[str(x)[:1]]) for x in out_sv(self)],
                                          dtype=np.int64)
        self._prev_tracked = np.zeros(n_sv, dtype=bool)
        self._amb = np.zeros((n_sv, len(self._signals)))

    def _load_nav(self, p):
        import gnss
        return gnss.read_nav(p["nav_file"], systems=tuple(p["constellations"]))

    def coords(self):
        c = super().coords()
        c["signal"] = Var(("signal",), np.array(self._signals), "1", "signal: system letter + RINEX 3 code")
        c["system"] = Var(("system",), np.array(self._solver_constellations), "1",
                          "satellite system of each receiver clock")
        return c

    def attrs(self):
        a = super().attrs()
        a.update({"constellations": ",".join(self._solver_constellations), "signals": ",".join(self._signals)})
        return a

    def _logged_code(self, ks, reception: Reception) -> LoggedCode:
        """Code, phase, Doppler and C/N0 of every signal (the variables), and the code of the
        fix's signal of each satellite (:data:`FIX_SIGNALS`) as the RINEX file holds it: rounded
        to 1 mm, at time tags rounded to 0.1 us (:func:`gnss.rinex_out.round_observation`,
        :func:`gnss.rinex_out.round_time_tag`). Its tracking noise is the ``noise`` term.

        Modelled from ``reception`` (what reaches the antenna at epochs ``ks``); the carrier
        arcs continue from the block before (``self._prev_tracked``, ``self._amb``)."""
        from gnss.constants import SPEED_OF_LIGHT
        from gnss.observables import model_observables
        from gnss.rinex_out import round_observation, round_time_tag

        n_e, n_sv, n_sig = ks.size, self._prn.size, len(self._signals)
        ts = reception.times_s
        # antenna velocity (scene frame, central difference of the pose) turned into ECEF
        h = 0.05
        lo = np.maximum(ts - h, 0.0)
        ahead = np.broadcast_to(self.pose_at(ts + h).translation, (n_e, 3))
        behind = np.broadcast_to(self.pose_at(lo).translation, (n_e, 3))
        vel_scene = (ahead - behind) / (ts + h - lo)[:, None]
        antenna = reception.antenna_scene
        vel_ecef = self._enu_to_ecef(antenna + vel_scene) - self._enu_to_ecef(antenna)
        tracked = reception.tracked
        # arcs across blocks: the state of the epoch before, carried from block to block
        prev = np.vstack([self._prev_tracked[None, :], tracked[:-1]])
        new_arc = tracked & ~prev
        amb = np.empty((n_e, n_sv, n_sig))
        noise = np.empty((2, n_e, n_sv, n_sig))
        cur = self._amb.copy()
        for i, k in enumerate(ks):
            draw = stream(self.ctx.seed, self.name, int(k), "ambiguity").integers(-100000, 100001, size=(n_sv, n_sig))
            cur = np.where(new_arc[i][:, None], draw, cur)
            amb[i] = cur
            noise[:, i] = stream(self.ctx.seed, self.name, int(k), "tracking_noise").standard_normal((2, n_sv, n_sig))
        self._amb, self._prev_tracked = cur, tracked[-1].copy() if n_e else self._prev_tracked
        terms = reception.terms
        path_errors = terms["ephemeris_error"] + terms["multipath_error"]     # on code and phase alike
        obs = model_observables(
            self._nav, reception.rx_ecef, vel_ecef, reception.t_gps, [str(v) for v in out_sv(self)], self._signals,
            receiver_clock_bias_m=reception.receiver_clock_bias_m,
            receiver_clock_drift_m_s=SPEED_OF_LIGHT * self._clock_drift[ks],
            iono_l1_m=np.nan_to_num(terms["iono_delay"]),
            tropo_m=np.nan_to_num(terms["tropo_delay_dry"] + terms["tropo_delay_wet"]) + np.nan_to_num(path_errors),
            tracked=tracked, reflected_only=reception.reflected, elevation_rad=reception.elevation_rad,
            new_arc=new_arc, ambiguities=amb, noise_draws=noise)
        ess = ("sv", "signal")
        out = {}
        for name in ("code", "phase", "doppler", "cn0", "ambiguity", "iono_delay"):
            v = obs[name]
            out[name] = Var(ess, v.values, v.attrs["units"], v.attrs["long_name"])
        out["lli"] = Var(ess, obs["lli"].values.astype(np.int8), "1", "RINEX loss of lock indicator (bit 0)")
        # the fix's signal of each satellite: its system's entry of FIX_SIGNALS
        fix = self._fix_signal_index
        cols = np.arange(n_sv)
        code_fix = obs["code"].values[:, cols, fix]
        noise_fix = np.where(tracked, obs["code_noise"].values[:, cols, fix], np.nan)
        return LoggedCode(noise_fix, round_observation(code_fix), round_time_tag(reception.time_tag), out)

    def _fix_variables(self, sol):
        """Each system's receiver clock of the fix (one clock per system, :func:`gnss.solve`)."""
        return {"clock_bias_system": Var(("system",), sol["clock_bias_system"].values, "m",
                                         "estimated receiver clock offset times c, per system")}


def out_sv(model) -> list[str]:
    from gnss.orbit import sat_label
    return [sat_label(q) for q in model._prn]
