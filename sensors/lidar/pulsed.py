"""The pulsed-lidar base :class:`PulsedLidar`: weather set-up, beam casting (pencil rays, edge
footprints, divergent beams) and the measurement of every pulse through
:func:`sensors.lidar.signal.lidar_signal_chain`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from typing import NamedTuple

from hifi.caster import Hits
from hifi.constants import SPEED_OF_LIGHT_M_S
from hifi.world.surfaces import RETROREFLECTOR
from hifi.run.dataset import ATMOSPHERE_ID, annotation_var, axis_coords, range_frame, sensor_pose_vars
from hifi.api.model import Sensor, Var
from hifi.api.rng import stream
from hifi.world.textures import HitTextures

from ..beam import beam_echoes, bundle_echoes, footprint_directions, subray_pattern
from ..radiometry import (extinction_from_visibility, lambertian_return, lidar_received_power,
                          oren_nayar_coefficients, overlap_factor)
from ..surfaces import front_reflectivity, retroreflector_reflectivity
from ..weather import Particles, fog_echo_table, particle_window, precipitation, sample_particles, weather_of
from .footprint import depth_edge_pulses, probe_leaves
from .impulse import receiver_echoes, sum_last_axis
from .signal import (FOG_BLIND_MIN_M, FRONT_ECHO, HALO_ECHO, ChainDraws, ChainParams, FocalCompensation, Halo,
                     SignalChain, chain_draws, lidar_signal_chain)


#: Position (beam radii) of the probe sub-ray that tests whether the footprint of a pulse
#: flagged across rings reaches the edge: the bottom (bit 1) or top (bit 2) of the spot.
_PROBE_UV = {1: np.array([[0.0, -0.9]]), 2: np.array([[0.0, 0.9]])}


@dataclass(frozen=True, eq=False)
class PulseBatch:
    """The pulses of one frame as the measurement chain sees them: where and when each was
    fired, along which axis, its laser's range bias, and the scan grid the pulses fill.

    What :meth:`PulsedLidar._measure_returns` hands to :meth:`PulsedLidar._measure` and on to
    :meth:`PulsedLidar._frame` unchanged for every return slot. A pulse's hit and echo are not
    here: they differ between the slots of a dual return.

    Attributes
    ----------
    origins : ndarray, shape (n, 3)
        Origin of each pulse's beam axis, scene frame [m].
    directions : ndarray, shape (n, 3)
        Unit direction of each pulse's beam axis, scene frame [1].
    bias : ndarray, shape (n,)
        Range bias of the laser that fired each pulse [m].
    dims : tuple of str, length 2
        Names of the scan grid's dimensions, laser (ring) last, e.g. ``("step", "laser")``.
    shape : tuple of int, length 2
        Shape of the scan grid, laser (ring) last; ``n = shape[0] * shape[1]``, pulses in
        row-major order.
    times : ndarray, shape (n,)
        Firing time of each pulse [s].
    yaw, pitch : ndarray, shape (n,)
        Nominal yaw and pitch of each pulse's direction, sensor frame [rad]
        (:func:`hifi.run.dataset.yaw_pitch`).
    """

    origins: np.ndarray
    directions: np.ndarray
    bias: np.ndarray
    dims: tuple
    shape: tuple
    times: np.ndarray
    yaw: np.ndarray
    pitch: np.ndarray


def take_hits(hits, rows):
    return Hits(*(getattr(hits, f)[rows] for f in Hits.__dataclass_fields__))


class FrontEcho(NamedTuple):
    """What a return slot of a frame knows of the glass and water on its pulses' paths (scenes
    with glass or water only; :meth:`hifi.caster.RayCaster.cast_surfaces`).

    Attributes
    ----------
    front : hifi.caster.Hits
        The first glass or water surface on each pulse's beam axis (NaN / -1 where none).
    throughput : ndarray, shape (n,)
        One-way share of the power reaching the slot's hit along its path [1] (1 where the path
        crosses no glass and reflects off no water).
    """

    front: Hits
    throughput: np.ndarray


def reorder_echo(echo, rows):
    """A return slot's echo (None, a :class:`FrontEcho`, or a divergent beam's ``(range,
    reflectivity, energy[, FrontEcho])``) with its pulses taken in the order ``rows``."""
    if echo is None:
        return None
    if isinstance(echo, FrontEcho):
        return FrontEcho(take_hits(echo.front, rows), np.asarray(echo.throughput)[rows])
    return tuple(reorder_echo(a, rows) if isinstance(a, FrontEcho) else np.asarray(a)[rows] for a in echo)


class PulsedLidar(Sensor):
    """Shared measurement chain (:func:`lidar_signal_chain`): received power, SNR, detection,
    SNR-dependent range noise, reported intensity; ghost points behind mirrors."""

    #: long_name of the ``intensity`` variable: what the sensor reports, in its own scale.
    intensity_long_name = "reported intensity, integer code 0..intensity_max (intensity_full_scale: white target)"
    #: Start of the range grid before each ray's origin [m] (:func:`lidar_signal_chain`
    #: ``range_offset_m``): 0, or an Ouster's beam-origin offset.
    range_offset_m = 0.0

    @classmethod
    def check_params(cls, p):
        if p["distance_upper_m"] <= p["distance_lower_m"]:
            raise ValueError(f"distance_upper_m: must be > distance_lower_m ({p['distance_lower_m']})")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        scene = ctx.scene
        # Each material's diffuse reflectance at this lidar's wavelength (hifi.materials spectra;
        # a material without one has its reflectivity at every wavelength).
        self._refl = scene.object_table("reflectivity", wavelength_m=self.params["wavelength_m"])
        self._textures = HitTextures(scene)      # textured scene-file parts: reflectance per hit
        self._mirror = scene.object_table("mirror")
        self._rough = scene.object_table("roughness_rad")
        # per object, gathered per hit (the bits of computing them per hit): Oren-Nayar's A and B,
        # and the reflectivity of the detection threshold rho (1 - mirror) of untextured parts
        self._oren_nayar = oren_nayar_coefficients(self._rough)
        self._rho_diffuse = self._refl * (1.0 - self._mirror)
        self._class = scene.object_table("class_id")
        self._class_names = list(scene.class_names)
        self._chain = ChainParams.from_params(self.params)
        self._setup_weather(ctx)
        # Glass, water and retroreflectors (hifi.world.surfaces, sensors.surfaces): the tables
        # only where the scene has them, so that other scenes run the chain as before.
        self._kind = scene.object_table("kind")
        self._has_retro = bool(np.any(self._kind == RETROREFLECTOR))
        self._has_surfaces = bool(getattr(ctx.caster, "has_surfaces", False))
        if self._has_retro:
            self._retro = scene.object_table("retroreflection_cd_lx_m2")
            self._retro30 = scene.object_table("retroreflection_30deg_cd_lx_m2")
        if self._has_surfaces:
            self._n_index = scene.object_table("refractive_index")
            self._tau = scene.object_table("transmittance")

    def _reflectance(self, hits, times):
        """Diffuse reflectance of each hit at this lidar's wavelength, (n,): its material's
        (``self._refl[object_id]``), or on a textured scene-file part the value at the hit
        (:meth:`hifi.world.textures.HitTextures.reflectance`; ``times``: each ray's emission
        time [s])."""
        return self._textures.reflectance(self._refl, hits, times)

    def _setup_weather(self, ctx):
        """Extinction and the fog echo of the run's ``[weather]`` (:mod:`sensors.weather`).

        Clear air (no ``[weather]``): the ``visibility_m`` parameter's extinction and no fog
        echo, exactly as without weather. Fog: the fog's extinction replaces the clear air's;
        its echo (:func:`sensors.weather.fog_echo_table`) uses the pulse of ``pulse_width_s``,
        the overlap of ``full_overlap_m`` and the blind zone ``min_range_m`` (0.1 m if that
        is 0: :data:`FOG_BLIND_MIN_M`).
        """
        p = self.params
        w = weather_of(ctx)
        self._weather = w
        self._extinction = None if w.clear else w.extinction(
            p["wavelength_m"], float(extinction_from_visibility(p["visibility_m"], p["wavelength_m"])))
        self._fog = None
        if w.fog_visibility_m is not None:
            lo = max(float(p["min_range_m"]), FOG_BLIND_MIN_M)
            scale = p["peak_power_w"] * p["optical_efficiency"] * np.pi * p["receiver_aperture_m"] ** 2 / 4.0
            table = fog_echo_table(
                extinction_per_m=self._extinction, backscatter_per_m_sr=w.fog_backscatter(p["wavelength_m"]),
                pulse_fwhm_s=p["pulse_width_s"], full_overlap_m=p["full_overlap_m"], blind_m=lo,
                max_range_m=min(float(p["max_range_m"]), lo + float(p["full_overlap_m"]) + 10.0),
                noise=p["noise_power_w"] / scale)
            self._fog = table._replace(height=scale * table.height)
        # Rain drops and snowflakes: the sizes and ranges whose echo can be detected (P_d >=
        # 1e-3 at SNR = snr_threshold - 3.09) for this lidar's beam, overlap and extinction.
        self._precip = []
        div_h, div_v = self._divergence()
        self._half_div = 0.25 * (div_h + div_v)
        area = np.pi * p["receiver_aperture_m"] ** 2 / 4.0
        alpha = self._extinction if self._extinction is not None else 0.0

        def power_per_rho(r):
            return lidar_received_power(p["peak_power_w"], 1.0, 1.0, r, receiver_area_m2=area,
                                        system_efficiency=p["optical_efficiency"], extinction_per_m=alpha,
                                        overlap=overlap_factor(r, p["full_overlap_m"]))
        for kind in precipitation(w):
            window = particle_window(kind, power_per_rho_fn=power_per_rho,
                                     min_power_w=p["noise_power_w"] * max(p["snr_threshold"] - 3.09, 0.1),
                                     aperture_radius_m=p["aperture_radius_m"], half_divergence_rad=self._half_div,
                                     r_min_m=max(float(p["min_range_m"]), FOG_BLIND_MIN_M),
                                     r_max_m=float(p["max_range_m"]))
            if window is not None:
                self._precip.append((kind, window))

    def _cast_axis(self, directions, times, max_range_m, origins_sensor=None):
        """:meth:`hifi.api.model.Sensor.cast`, through glass and water where the scene has them:
        ``(hits, origins, dirs, throughput, front)``, the last two None in a scene without."""
        if not self._has_surfaces:
            hits, origins, dirs = self.cast(directions, times, max_range_m, origins_sensor)
            return hits, origins, dirs, None, None
        sh, origins, dirs = self.cast_surfaces(directions, times, max_range_m, origins_sensor)
        return sh.hits, origins, dirs, sh.throughput, sh.front

    def _return_reflectivity(self, hits, throughput=None, refl=None):
        """Apparent reflectivity of each ray's hit, ``rho f(i) (1 - mirror)`` (Oren-Nayar
        ``f``, :func:`sensors.radiometry.lambertian_return` at 1 m) plus a retroreflector's
        return (:func:`sensors.surfaces.retroreflector_reflectivity`), times the path's two-way
        throughput (glass crossed, water reflected off); NaN where nothing is hit. ``refl``:
        each hit's reflectance (:meth:`_reflectance`; None: its material's)."""
        oid = hits.object_id
        measured = hits.distance
        out = lambertian_return(self._refl[oid] if refl is None else refl, hits.cos_incidence, measured, self._mirror[oid],
                                coefficients=self._coefficients(oid), reference_distance_m=1.0) * measured ** 2
        if self._has_retro:
            out = out + self._retro_term(oid, hits.cos_incidence)
        if throughput is not None:
            out = out * (throughput * throughput)
        return out

    def _coefficients(self, oid):
        """Oren-Nayar's ``(A, B)`` of the surfaces ``oid`` hit
        (:func:`sensors.radiometry.oren_nayar_coefficients`, from the per-object table)."""
        a, b = self._oren_nayar
        return a[oid], b[oid]

    def _retro_term(self, oid, cos_incidence):
        """A retroreflector's return as an apparent reflectivity, 0 for the other surfaces."""
        retro = self._kind[oid] == RETROREFLECTOR
        return np.where(retro, retroreflector_reflectivity(np.where(retro, self._retro[oid], 1.0), cos_incidence,
                                                           np.where(retro, self._retro30[oid], np.nan)), 0.0)

    def _return_energy(self, hits, throughput=None, refl=None):
        """Relative received power of each ray (:func:`sensors.radiometry.lambertian_return`,
        1 for a white Lambertian target at 1 m), with a retroreflector's return and the path's
        two-way throughput as :meth:`_return_reflectivity`; NaN where nothing is hit."""
        oid = hits.object_id
        out = lambertian_return(self._refl[oid] if refl is None else refl, hits.cos_incidence, hits.distance, self._mirror[oid],
                                coefficients=self._coefficients(oid))
        if self._has_retro:
            out = out + self._retro_term(oid, hits.cos_incidence) / hits.distance ** 2
        if throughput is not None:
            out = out * (throughput * throughput)
        return out

    def _threshold_reflectivity(self, oid, throughput=None, refl=None):
        """The reflectivity of BlenSor's detection threshold (Eq. 1): ``rho (1 - mirror)``, plus
        a retroreflector's return at normal incidence, times the two-way throughput."""
        rho = self._rho_diffuse[oid] if refl is None or not self._textures else refl * (1.0 - self._mirror[oid])
        if self._has_retro:
            rho = rho + self._retro_term(oid, 1.0)
        if throughput is not None:
            rho = rho * (throughput * throughput)
        return rho

    def _front_reflectivity(self, front):
        """Apparent reflectivity of the echo of each pulse's front surface (glass or water,
        :func:`sensors.surfaces.front_reflectivity`), NaN where none."""
        p = self.params
        oid = front.object_id
        return front_reflectivity(self._kind[oid], front.cos_incidence, front.distance,
                                  refractive_index=self._n_index[oid], transmittance=self._tau[oid],
                                  reflectivity=self._refl[oid], mirror=self._mirror[oid],
                                  roughness_rad=self._rough[oid], divergence_rad=2.0 * self._half_div,
                                  aperture_radius_m=p["aperture_radius_m"],
                                  receiver_aperture_m=p["receiver_aperture_m"])

    def _particles(self, k, n_pulses):
        """Rain drops and snowflakes in the beams of frame ``k`` (None without precipitation)."""
        if not self._precip:
            return None
        rng = stream(self.ctx.seed, self.name, k, "precipitation")
        parts = [sample_particles(rng, n_pulses, kind, window, aperture_radius_m=self.params["aperture_radius_m"],
                                  half_divergence_rad=self._half_div) for kind, window in self._precip]
        return Particles(*(np.concatenate([getattr(q, f) for q in parts]) for f in Particles._fields))

    def _laser_bias(self, n_lasers: int) -> np.ndarray:
        """Per-laser range bias [m], drawn once per run (stream keyed by sensor, not frame)."""
        rng = stream(self.ctx.seed, self.name, -1, "laser_bias")
        return self.params["bias_sigma_m"] * rng.standard_normal(n_lasers)

    def _subrays(self, directions, origins_sensor, uv):
        """Origins and directions (sensor frame, (pulses x sub-rays, 3)) of the divergent beams
        of ``directions`` (:func:`sensors.beam.footprint_directions`). Kept for the next frame
        when they are the model's own fixed beams (``self._dirs``, ``self._origins``): the
        same every frame (an HDL-64E with 4 sub-rays: 115 ms a frame saved, 26 MB held,
        counted in :meth:`setup_bytes`)."""
        p = self.params
        div_h, div_v = self._divergence()
        fixed = directions is getattr(self, "_dirs", None) and (
            origins_sensor is None or origins_sensor is getattr(self, "_origins", None))
        cache = getattr(self, "_subray_cache", None)
        if fixed and cache is not None and cache[0] is directions and cache[1] is origins_sensor:
            return cache[2], cache[3]
        off, d = footprint_directions(directions, uv, div_h, div_v, p["aperture_radius_m"])
        o = off if origins_sensor is None else off + np.asarray(origins_sensor)[:, None, :]
        out = o.reshape(-1, 3), d.reshape(-1, 3)
        if fixed:
            self._subray_cache = (directions, origins_sensor, *out)
        return out

    def _subray_bytes(self) -> int:
        """Bytes per pulse of the sub-rays :meth:`_subrays` keeps from frame to frame (origin and
        direction, float64, of each of ``n_subrays`` > 1)."""
        n = self.params.get("n_subrays", 1)
        return 48 * n if n > 1 else 0

    def uses_beam_kernel(self) -> bool:
        """``n_subrays`` > 1, or ``average`` mode with edge footprints: the waveform receiver
        (:func:`sensors.beam.beam_echoes`) runs."""
        p = self.params
        return p.get("n_subrays", 1) > 1 or (p.get("return_mode") == "average" and p.get("edge_subrays", 0) > 1)

    def _beam_mode(self):
        """:func:`sensors.beam.process_returns` mode of ``return_mode`` (dual: Velodyne's)."""
        mode = self.params["return_mode"]
        return "strongest_last" if mode == "dual" else mode

    def _divergence(self):
        p = self.params
        v = p.get("divergence_v_rad")
        return p["divergence_rad"], (p["divergence_rad"] if v is None else v)

    def _cast_beams(self, directions, times, origins_sensor=None, grid=None, ring_order=None, start_beside=None):
        """Cast every pulse: pencil rays with footprints at edges, or with ``n_subrays`` > 1 a
        divergent beam.

        Returns ``(hits, origins, dirs, echoes)``: per return slot (2 for ``return_mode =
        "dual"``, else 1) a :class:`hifi.caster.Hits` and an echo, and the origins and
        directions of the beam axes (scene frame).

        With ``n_subrays`` > 1, the divergent beam of every pulse: the VANE model of
        :mod:`sensors.beam`: sub-rays with Gaussian weights over the elliptical footprint
        (:func:`sensors.beam.footprint_directions`), Lambertian returns summed into a waveform,
        echoes chosen by ``return_mode``; the echo is ``(range_m, reflectivity, energy)`` of
        the echo the receiver reports and its reflectivity for the detection threshold (Eq. 1)
        is the spot-weighted reflectivity of the surfaces in it, ``sum_i w_i rho_i (1 -
        mirror_i)`` over its sub-rays, so a half-covered spot counts half. The hits are those
        of the beam axes.

        With ``n_subrays`` = 1 (default) the edge-aware footprint: every pulse casts its pencil
        ray; pulses at a depth edge (:func:`depth_edge_pulses` over the scan ``grid``, rings
        in ``ring_order``) cast ``edge_subrays`` - 1 more sub-rays of the same footprint (the
        pencil ray is sub-ray 0 of :func:`sensors.beam.subray_pattern`); their returns are
        grouped into echoes by the receiver's filtered waveform where ``receiver_tail_s`` > 0
        (:func:`sensors.lidar.impulse.receiver_echoes`: the pulse convolved with the receiver's
        impulse response, timed by ``edge_timing``; each sub-ray's share of the pulse at its
        lidar-equation power, :meth:`_edge_power`), else at the pulse's range resolution
        (:func:`sensors.beam.bundle_echoes`; ``average`` mode: the waveform receiver
        :func:`sensors.beam.beam_echoes`), and ``return_mode`` picks the echo. That pulse's hit
        becomes the hit of the echo's dominant sub-ray (surface, normal, object, point) with
        the echo's range as ``distance``, so the measurement chain sees a pencil hit and
        echoes are None: an edge pulse reports one of the two surfaces or, where the receiver
        merges their echoes, a range between them (a mixed pixel), never the pencil's choice by
        default.
        Its power is that of the dominant surface (the partial coverage of the spot is not
        applied). ``edge_subrays`` = 0 is the pencil beam everywhere.

        ``start_beside``: called where work for another thread (the frame's draws,
        :meth:`_start_draws`) best overlaps this one's: once the pulses' axes are cast when the
        depth edges are worked out next (on this thread alone), else before the cast.
        """
        p = self.params
        n = p["n_subrays"]
        m = 2 if p["return_mode"] == "dual" else 1
        edges = n == 1 and p["edge_subrays"] > 1 and grid is not None
        if start_beside is not None and not edges:
            start_beside()
        if n > 1:
            return self._cast_divergent(directions, times, origins_sensor, n, m)
        hits, origins, dirs, tp, front = self._cast_axis(directions, times, p["max_range_m"], origins_sensor)
        if start_beside is not None and edges:
            start_beside()
        axis_echo = None if front is None else FrontEcho(front, tp)
        if p["edge_subrays"] <= 1 or grid is None:
            return [hits] * m, origins, dirs, [axis_echo] * m
        edge = self._edge_pulses(hits, directions, times, origins_sensor, grid, ring_order)
        if edge.size == 0:
            return [hits] * m, origins, dirs, [axis_echo] * m
        slots, echoes = self._edge_footprints(hits, edge, directions, times, origins_sensor, m, axis_echo)
        return slots, origins, dirs, echoes

    def _edge_pulses(self, hits, directions, times, origins_sensor, grid, ring_order) -> np.ndarray:
        """The pulses at a depth edge (ascending): flagged along the scan by
        :func:`depth_edge_pulses`, or flagged only across rings and confirmed by a probe sub-ray
        that leaves the pencil's surface (:func:`probe_leaves`)."""
        p = self.params
        div_h, div_v = self._divergence()
        along, across = depth_edge_pulses(hits.point, hits.normal, hits.hit, grid, ring_order)
        # Rings are far apart compared with the footprint (HDL-64E: 7 mrad vs 2): a pulse
        # flagged only across rings casts a probe at the bottom and/or top of its spot,
        # toward the ring that left its surface, and gets the full bundle only if a probe
        # leaves its surface too.
        cands = [np.flatnonzero(((across & bit) > 0) & ~along) for bit in _PROBE_UV]
        cand = np.concatenate(cands)
        if cand.size:
            parts = [footprint_directions(np.asarray(directions)[c], uv, div_h, div_v, p["aperture_radius_m"])
                     for c, uv in zip(cands, _PROBE_UV.values())]
            off = np.concatenate([q[0] for q in parts])[:, 0]
            d = np.concatenate([q[1] for q in parts])[:, 0]
            o = off if origins_sensor is None else off + np.asarray(origins_sensor)[cand]
            probe, _, _ = self.cast(d, np.asarray(times)[cand], p["max_range_m"], o)   # one cast for all
            cand = cand[probe_leaves(hits, cand, probe)]
        return np.union1d(np.flatnonzero(along), cand)

    def _edge_footprints(self, hits, edge, directions, times, origins_sensor, m, axis_echo=None):
        """The return slots (``m``) of pencil ``hits`` whose ``edge`` pulses cast their whole
        footprint: each edge pulse takes the hit of its echo's dominant sub-ray, with the
        echo's range (see :meth:`_cast_beams`). Returns ``(slots, echoes)``: the echoes are
        None, or, with glass or water in the scene (``axis_echo``, the pencils'
        :class:`FrontEcho`), each slot's :class:`FrontEcho` with the dominant sub-ray's
        throughput."""
        p = self.params
        k = p["edge_subrays"]
        div_h, div_v = self._divergence()
        uv, w = subray_pattern(k)
        off, d = footprint_directions(np.asarray(directions)[edge], uv[1:], div_h, div_v, p["aperture_radius_m"])
        o = off if origins_sensor is None else off + np.asarray(origins_sensor)[edge][:, None, :]
        sub, _, _, sub_tp, _ = self._cast_axis(d.reshape(-1, 3), np.repeat(np.asarray(times)[edge], k - 1),
                                               p["max_range_m"], o.reshape(-1, 3))
        axis = take_hits(hits, edge)
        both = Hits(*(np.concatenate([getattr(axis, f)[:, None], getattr(sub, f).reshape(
            (edge.size, k - 1) + getattr(sub, f).shape[1:])], axis=1).reshape((-1,) + getattr(sub, f).shape[1:])
            for f in Hits.__dataclass_fields__))
        tp = None if axis_echo is None else axis_echo.throughput
        tp_both = None if tp is None else np.concatenate(
            [tp[edge][:, None], sub_tp.reshape(edge.size, k - 1)], axis=1).ravel()
        refl = self._reflectance(both, np.repeat(np.asarray(times)[edge], k))
        energy = np.where(both.hit, np.broadcast_to(w, (edge.size, k)).ravel() * self._return_energy(
            both, tp_both, refl), 0.0).reshape(edge.size, k)
        if p["return_mode"] == "average":
            report = beam_echoes(both.distance.reshape(edge.size, k), energy, bin_width_s=p["bin_width_s"],
                                 pulse_width_s=p["pulse_width_s"], mode="average", detection_threshold=0.0,
                                 cutoff_m=p["cutoff_m"]).report
        elif p.get("receiver_tail_s", 0.0) > 0.0:
            report = receiver_echoes(both.distance.reshape(edge.size, k), self._edge_power(both, energy),
                                     mode=self._beam_mode(), pulse_width_s=p["pulse_width_s"],
                                     tail_s=p["receiver_tail_s"], timing=p["edge_timing"],
                                     threshold_w=self._chain.snr_threshold * self._chain.noise_power_w,
                                     threads=self.threads)
        else:
            report = bundle_echoes(both.distance.reshape(edge.size, k), energy, mode=self._beam_mode(),
                                   resolution_m=SPEED_OF_LIGHT_M_S * p["pulse_width_s"] / 2.0)
        out, echoes = [], []
        for j in range(m):
            dom = report.dominant[:, j]
            ok = dom >= 0
            pick = np.flatnonzero(ok) * k + dom[ok]          # row of the dominant sub-ray in `both`
            # the pencil hits are this step's own: the last slot takes them over
            slot = hits if j == m - 1 else Hits(*(getattr(hits, f).copy() for f in Hits.__dataclass_fields__))
            chosen = take_hits(both, pick)
            for f in Hits.__dataclass_fields__:
                getattr(slot, f)[edge[ok]] = getattr(chosen, f)
            slot.distance[edge[ok]] = report.range_m[ok, j]
            out.append(slot)
            if axis_echo is None:
                echoes.append(None)
            else:
                tp_slot = tp.copy()                            # the dominant sub-ray's throughput
                tp_slot[edge[ok]] = tp_both[pick]
                echoes.append(FrontEcho(axis_echo.front, tp_slot))
        return out, echoes

    def _edge_power(self, both, energy):
        """Peak received power [W] of each edge sub-ray's share of its pulse, (edges, k): the
        lidar equation (:func:`sensors.radiometry.lidar_received_power`) of its apparent
        reflectivity ``energy R^2`` with the run's extinction and the overlap, as the signal
        chain computes a pencil's (:func:`sensors.lidar.signal.lidar_signal_chain` Note 1)."""
        c = self._chain
        d = both.distance.reshape(energy.shape)
        alpha = (extinction_from_visibility(c.visibility_m, c.wavelength_m) if self._extinction is None
                 else float(self._extinction))
        with np.errstate(invalid="ignore"):
            pw = lidar_received_power(c.peak_power_w, energy * d * d, 1.0, d,
                                      receiver_area_m2=np.pi * c.receiver_aperture_m ** 2 / 4.0,
                                      system_efficiency=c.optical_efficiency, extinction_per_m=alpha,
                                      overlap=overlap_factor(d, c.full_overlap_m))
        return np.where(np.isfinite(d) & (energy > 0), pw, 0.0)

    def _cast_divergent(self, directions, times, origins_sensor, n, m):
        """The divergent beam of every pulse, ``n`` sub-rays (see :meth:`_cast_beams`):
        ``(hits of the beam axes per slot, axis origins, axis directions, echoes per slot)``."""
        p = self.params
        count = directions.shape[0]
        uv, w = subray_pattern(n)
        o, d = self._subrays(directions, origins_sensor, uv)
        hits, origins, dirs, tp, front = self._cast_axis(d, np.repeat(times, n), p["max_range_m"], o)
        oid = hits.object_id
        refl = self._reflectance(hits, np.repeat(times, n))
        weight = np.broadcast_to(w, (count, n))
        energy = np.where(hits.hit, weight.ravel() * self._return_energy(hits, tp, refl), 0.0).reshape(count, n)
        rng_sub = hits.distance.reshape(count, n)
        echo = beam_echoes(rng_sub, energy, bin_width_s=p["bin_width_s"], pulse_width_s=p["pulse_width_s"],
                           mode=self._beam_mode(), detection_threshold=0.0, cutoff_m=p["cutoff_m"],
                           threads=self.threads).report
        rho_sub = self._threshold_reflectivity(oid, tp, refl).reshape(count, n)
        axis = slice(None, None, n)             # sub-ray 0 of every pulse: strided copies, no index array
        axis_hits = Hits(*(np.ascontiguousarray(getattr(hits, f)[axis]) for f in Hits.__dataclass_fields__))
        # the axis's front surface echoes as the pencil's does (the waveform holds the targets)
        front_axis = () if front is None else (FrontEcho(
            Hits(*(np.ascontiguousarray(getattr(front, f)[axis]) for f in Hits.__dataclass_fields__)),
            np.ascontiguousarray(tp[axis])),)
        w_rho = weight * np.nan_to_num(rho_sub)
        echoes = []
        for j in range(m):
            rho_echo = sum_last_axis(np.where(echo.members[:, j, :], w_rho, 0.0))
            echoes.append((echo.range_m[:, j], rho_echo, echo.energy[:, j]) + front_axis)
        return [axis_hits] * m, np.ascontiguousarray(origins[axis]), np.ascontiguousarray(dirs[axis]), echoes

    def _start_draws(self, k, n_pulses):
        """The signal chain's random numbers of frame ``k``'s ``n_pulses`` pulses
        (:func:`sensors.lidar.signal.chain_draws` of its noise, detection and intensity streams),
        drawn on another of the caster's threads while this one casts
        (:meth:`hifi.api.model.Sensor.beside`): a function that waits for them. The same
        numbers as drawn in :func:`lidar_signal_chain`."""
        seed, name = self.ctx.seed, self.name
        return self.beside(lambda: chain_draws(n_pulses, stream(seed, name, k, "noise"),
                                               stream(seed, name, k, "detection"),
                                               stream(seed, name, k, "intensity")))

    def _measure_returns(self, k, t, hits, batch: PulseBatch, echoes, draws=None):
        """:meth:`_measure` per return slot (``hits`` and ``echoes``: one per slot) of the pulses
        of ``batch``; two slots are stacked on a trailing ``return`` dim. ``draws``: what
        :meth:`_start_draws` returned for the frame (None: the chain draws its numbers)."""
        dims = batch.dims
        mode = self.params["return_mode"]
        modes = ("strongest", "last") if mode == "dual" else (mode if mode in ("first", "last") else "strongest",)
        particles = self._particles(k, int(np.prod(batch.shape)))        # the same drops for both slots
        chain = None if draws is None else draws()                      # the same numbers for both slots
        frames = [self._measure(k, t, h, batch, e, mode=m, particles=particles, draws=chain)
                  for h, e, m in zip(hits, echoes, modes)]
        if self.params["return_mode"] != "dual":
            return frames[0]
        out = {}
        for name, var in frames[0].items():
            if tuple(var.dims[:len(dims)]) == tuple(dims):
                data = np.stack([np.asarray(f[name].data) for f in frames], axis=len(dims))
                out[name] = Var(tuple(var.dims) + ("return",), data, var.units, var.long_name, var.extra,
                                var.encoding)
            else:
                out[name] = var
        return out

    def _laser_gain(self, n_lasers: int) -> np.ndarray:
        """Per-laser intensity gain, log-normal ``exp(laser_gain_sigma z)``, drawn once per run."""
        cache = getattr(self, "_gain_cache", None)
        if cache is None or cache.shape[0] != n_lasers:
            rng = stream(self.ctx.seed, self.name, -1, "laser_gain")
            cache = np.exp(self.params["laser_gain_sigma"] * rng.standard_normal(n_lasers))
            self._gain_cache = cache
        return cache

    def _focal_compensation(self, shape):
        """Per-ray intensity distance compensation (:class:`sensors.lidar.signal.FocalCompensation`) of a pulse grid
        of ``shape`` (laser last); None: the model reports no such compensation."""
        return None

    def _measure(self, k, t, hits, batch: PulseBatch, echo=None, mode="strongest", particles=None, draws=None):
        """The signal chain after the cast (:func:`lidar_signal_chain`) of the pulses of
        ``batch`` (:class:`PulseBatch`), then the dataset.

        In weather, pulses whose reported echo is the fog's or a particle's (``atmosphere``) get
        ``object_id`` -2, their true range and point at that echo on the emitted ray (no normal,
        no face, annotation 0). Both return slots of a dual return see the same fog and the
        same particles. ``draws``: the frame's :class:`sensors.lidar.signal.ChainDraws` (None:
        the chain draws them from the frame's streams).
        """
        origins, dirs, bias, shape = batch.origins, batch.directions, batch.bias, batch.shape
        oid = hits.object_id
        front_echo = None
        if isinstance(echo, FrontEcho):
            front_echo, echo = echo, None
        elif echo is not None and len(echo) == 4:
            front_echo, echo = echo[3], echo[:3]
        if front_echo is None and not (self._has_surfaces or self._has_retro) and self._fog is None \
                and particles is None:
            return self._measure_in_parts(k, t, hits, batch, echo, mode, draws)
        if echo is None:
            measured = hits.distance
            tp = None if front_echo is None else front_echo.throughput
            refl = self._reflectance(hits, batch.times)
            rho = self._threshold_reflectivity(oid, tp, refl)
            apparent = self._return_reflectivity(hits, tp, refl)
        else:
            measured, rho, energy = echo
            apparent = np.where(np.isfinite(measured), np.nan_to_num(energy) * measured ** 2, np.nan)
        front = None if front_echo is None else front_echo.front
        front_apparent = None if front is None else self._front_reflectivity(front)
        halo = None
        if self._has_surfaces or self._has_retro:
            p = self.params
            halo = Halo(dirs, p["halo_level_db"], p["halo_pitch_rad"], p["halo_slope"], self._half_div)
        gain = self._pulse_gain(shape)
        own = draws is None
        sig = lidar_signal_chain(measured, rho, apparent, self._chain, bias_m=bias, gain=gain, draws=draws,
                                 noise_rng=stream(self.ctx.seed, self.name, k, "noise") if own else None,
                                 detection_rng=stream(self.ctx.seed, self.name, k, "detection") if own else None,
                                 intensity_rng=stream(self.ctx.seed, self.name, k, "intensity") if own else None,
                                 range_offset_m=self.range_offset_m,
                                 extinction_per_m=self._extinction, fog=self._fog,
                                 fog_rng=None if self._fog is None else stream(self.ctx.seed, self.name, k, "fog"),
                                 particles=particles, mode=mode,
                                 front=None if front is None else (front.distance, front_apparent),
                                 halo=halo,
                                 surface_rng=None if halo is None else stream(self.ctx.seed, self.name, k, "surface"),
                                 focal=self._focal_compensation(shape))
        if sig.echo is not None and np.any(sig.echo != 0):
            brighter = None if front is None else np.nan_to_num(front_apparent) > np.nan_to_num(apparent)
            hits = self._surface_hits(hits, front, sig, origins, dirs, brighter)
            oid = hits.object_id
        if sig.atmosphere is not None and sig.atmosphere.any():
            a = sig.atmosphere
            hits = Hits(*(getattr(hits, f).copy() for f in Hits.__dataclass_fields__))
            hits.object_id[a] = ATMOSPHERE_ID
            hits.face_index[a] = -1
            hits.distance[a] = sig.atmosphere_range[a]
            hits.point[a] = origins[a] + dirs[a] * sig.atmosphere_range[a][:, None]
            hits.normal[a] = np.nan
            oid = hits.object_id
        reported = origins + dirs * sig.distance_noisy[:, None]          # on the emitted ray: mirror ghosts
        return self._frame(t, hits, batch, sig, reported)

    def _pulse_gain(self, shape):
        """Each pulse's laser gain (:meth:`_laser_gain`) over a pulse grid of ``shape`` (laser
        last), (n,); kept for the next frame (the same every frame)."""
        cache = getattr(self, "_pulse_gain_cache", None)
        if cache is None or cache[0] != tuple(shape):
            cache = (tuple(shape), np.tile(self._laser_gain(shape[-1]), int(np.prod(shape[:-1]))))
            self._pulse_gain_cache = cache
        return cache[1]

    def _measure_in_parts(self, k, t, hits, batch: PulseBatch, echo, mode, draws):
        """:meth:`_measure` where nothing couples the pulses (no glass, water, retroreflector,
        fog or precipitation in the run): the signal chain and the reported points over parts of
        the pulses at once on the caster's threads (:meth:`hifi.api.model.Sensor.run_chunks`;
        numpy releases the GIL inside its loops), then the dataset. Every quantity is the
        pulse's own, computed element by element as in one piece, and the random numbers are
        the frame's draws (:func:`sensors.lidar.signal.chain_draws`) sliced, so the bits are
        those of one piece whatever the parts."""
        shape = batch.shape
        n = int(np.prod(shape))
        if draws is None:
            seed, name = self.ctx.seed, self.name
            draws = chain_draws(n, stream(seed, name, k, "noise"), stream(seed, name, k, "detection"),
                                stream(seed, name, k, "intensity"))
        gain = self._pulse_gain(shape)
        focal = self._focal_compensation(shape)
        offset = self.range_offset_m
        # a textured part's reflectance is looked up for all hits at once (its texels by object)
        refl = self._reflectance(hits, batch.times) if echo is None and self._textures else None
        power, snr, apparent, d_noisy, intensity = (np.empty(n) for _ in range(5))
        det = np.empty(n, dtype=bool)
        reported = np.empty((3, n))              # x, y, z rows: the columns of the (n, 3) points

        def part(a, b):
            if echo is None:
                h = Hits(*(getattr(hits, f)[a:b] for f in Hits.__dataclass_fields__))
                r = self._reflectance(h, batch.times[a:b]) if refl is None else refl[a:b]
                measured = h.distance
                rho, app = self._threshold_reflectivity(h.object_id, None, r), self._return_reflectivity(h, None, r)
            else:
                measured, rho, energy = (np.asarray(x)[a:b] for x in echo)
                app = np.where(np.isfinite(measured), np.nan_to_num(energy) * measured ** 2, np.nan)
            sig = lidar_signal_chain(
                measured, rho, app, self._chain, bias_m=batch.bias[a:b], gain=gain[a:b],
                draws=ChainDraws(draws.noise[a:b], draws.detection[:, a:b], draws.intensity[a:b]),
                range_offset_m=offset[a:b] if np.ndim(offset) else offset, extinction_per_m=self._extinction,
                mode=mode, focal=None if focal is None else FocalCompensation(*(f[a:b] for f in focal)))
            power[a:b], snr[a:b], apparent[a:b], det[a:b], d_noisy[a:b], intensity[a:b] = sig[:6]
            for c in range(3):                   # on the emitted ray
                np.add(batch.origins[a:b, c], batch.directions[a:b, c] * sig.distance_noisy, out=reported[c, a:b])

        self.run_chunks(part, n)
        return self._frame(t, hits, batch, SignalChain(power, snr, apparent, det, d_noisy, intensity), reported.T)

    @staticmethod
    def _surface_hits(hits, front, sig, origins, dirs, front_brighter):
        """The hits of a frame where the chain reported a front surface's echo (the front's hit)
        or a halo (the object of the source's brighter return, target or front
        (``front_brighter``), on the pulse's own ray at the source's range, no normal, no face:
        a point in the air next to the retroreflector)."""
        out = Hits(*(getattr(hits, f).copy() for f in Hits.__dataclass_fields__))
        f = sig.echo == FRONT_ECHO
        if np.any(f):
            for name in Hits.__dataclass_fields__:
                getattr(out, name)[f] = getattr(front, name)[f]
        h = sig.echo == HALO_ECHO
        if np.any(h):
            q = sig.halo_source[h]
            src = hits.object_id[q]
            if front is not None:
                src = np.where(front_brighter[q], front.object_id[q], src)
            r = sig.halo_range[h]
            out.object_id[h] = src
            out.face_index[h] = -1
            out.distance[h] = r
            out.point[h] = origins[h] + dirs[h] * r[:, None]
            out.normal[h] = np.nan
            out.direction[h] = dirs[h]
            out.bounces[h] = 0
        return out

    def _frame(self, t, hits, batch: PulseBatch, sig, reported):
        """The dataset of a frame from the signal chain's results (:func:`range_frame`)."""
        p = self.params
        dims, shape = batch.dims, batch.shape
        oid = hits.object_id
        start = self.pose_at(t)
        extra = {
            # -2 (atmosphere) reads the "no hit" entry, -1, of the table: annotation 0
            "annotation": annotation_var(dims, self._class[np.maximum(oid, -1)].reshape(shape), self._class_names),
            **sensor_pose_vars(start),
        }
        return range_frame(dims, shape, timestamp=batch.times, yaw=batch.yaw, pitch=batch.pitch, hits=hits,
                           detected=sig.detected,
                           distance_noisy=sig.distance_noisy, points_noisy=reported, intensity=sig.intensity,
                           intensity_long_name=self.intensity_long_name, intensity_valid_max=p["intensity_max"],
                           received_power=sig.received_power,
                           snr=sig.snr, reflectivity=sig.reflectivity, extra=extra, threads=self.threads)

    def _axis_coords(self):
        return axis_coords()
