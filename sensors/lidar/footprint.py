"""Beam footprints at depth edges: which pulses may straddle one (:func:`depth_edge_pulses`), which
probe sub-rays leave the pencil's surface (:func:`probe_leaves`), and a model's beam-footprint
parameters (:func:`footprint_params`).
"""

from __future__ import annotations

import numpy as np

from hifi.api.params import Param


#: Depth discontinuity that marks a pulse as an edge pulse [m] (:func:`depth_edge_pulses`): a
#: neighbour's hit farther than this from the pulse's tangent plane (or a hit next to a miss).
#: Depth steps below it merge into one echo (the range resolution c tau / 2 is 0.75 m for 5 ns)
#: whose centroid moves by at most its energy share times the step, 2.5 cm at 5 cm: about the
#: range noise, so pulses beside smaller steps keep their pencil range.
EDGE_DEPTH_M = 0.05


def footprint_params(params, *, divergence_rad, divergence_v_rad=None, aperture_radius_m=0.005,
                      source="", dual=False, receiver_tail_s=0.0, tail_source="none", edge_timing="centroid",
                      timing_source="the divergent-beam receiver's estimator"):
    """A model's beam-footprint defaults (data sheet) and the edge-point parameters.

    Updates ``params`` (a PARAMS dict of :func:`common_params`) in place and returns it:
    ``divergence_rad`` (horizontal), ``divergence_v_rad`` (vertical, None: circular),
    ``aperture_radius_m``, ``edge_subrays``, ``receiver_tail_s`` and ``edge_timing`` (the
    receiver's impulse response and time estimator, :mod:`sensors.lidar.impulse`;
    ``tail_source`` and ``timing_source`` say where their defaults come from)
    and, for the rotating lidars, ``return_mode`` with ``"dual"``.
    """
    params["divergence_rad"] = Param("float", default=divergence_rad, minimum=0.0, maximum=0.5,
                                     doc=f"full beam divergence (horizontal) at the 1/e^2 points [rad] ({source})")
    params["divergence_v_rad"] = Param("float", default=divergence_v_rad, minimum=0.0, maximum=0.5,
                                       doc=f"full vertical beam divergence [rad] ({source}; none: as divergence_rad)")
    params["aperture_radius_m"] = Param("float", default=aperture_radius_m, minimum=0.0,
                                        doc="beam radius at the aperture [m]")
    params["edge_subrays"] = Param("int", default=7, minimum=0, maximum=100,
                                   doc="sub-rays of the beam footprint cast for pulses at depth edges "
                                       "(n_subrays = 1); 0: pencil beams everywhere")
    params["receiver_tail_s"] = Param(
        "float", default=receiver_tail_s, minimum=0.0, maximum=1e-6,
        doc=f"time constant of the exponential tail of the receiver's impulse response (APD + TIA) "
            f"[s]; edge footprints group their echoes by the filtered waveform (sensors.lidar.impulse); 0: echoes "
            f"merge within c * pulse_width_s / 2 ({tail_source})")
    params["edge_timing"] = Param(
        "str", default=edge_timing, choices=("centroid", "peak"),
        doc=f"receiver_tail_s > 0: time of an edge return, the centroid of its filtered signal or its maximum "
            f"({timing_source})")
    if dual:
        params["return_mode"] = Param(
            "str", default="strongest", choices=("first", "last", "strongest", "average", "dual"),
            doc="echo reported at edges and with n_subrays > 1 (Velodyne default: strongest); "
                "dual: strongest and last (second-strongest if they coincide), a 'return' dimension of 2")
    return params


def depth_edge_pulses(points, normals, hit, shape, ring_order=None, depth_m=EDGE_DEPTH_M):
    """Pulses whose footprint may straddle a depth edge: a neighbour off their surface (the
    compiled kernel :func:`sensors._lidar_kernel.edge_flags`).

    Parameters
    ----------
    points, normals : (n, 3) float
        Hit point [m] and unit surface normal of each pulse's pencil ray (NaN on a miss),
        n = prod(shape), in the order of ``shape``.
    hit : (n,) bool
    shape : (int, int)
        The scan grid: (steps along the scan, beams across it).
    ring_order : (shape[1],) int, optional
        Beam indices in elevation order, so that neighbours across the scan are adjacent rings.
    depth_m : float
        :data:`EDGE_DEPTH_M`.

    Returns
    -------
    along : ndarray of bool, shape (n,)
        Pulses with a neighbour along the scan that leaves their surface: both pulses of a pair
        whose hit points lie farther than ``depth_m`` from either one's tangent plane,
        ``max(|n_p . (x_q - x_p)|, |n_q . (x_q - x_p)|) > depth_m``, and the missing pulse of
        a pair of which one hits and the other does not (the hitting one's spot, partly in the
        void, still reports its own surface). A plane, however oblique (a ground ring at
        grazing incidence), flags nothing; a step in depth does.
    across : ndarray of uint8, shape (n,)
        The same across the scan between adjacent rings in elevation order: bit 1 set where
        the ring below leaves the pulse's surface, bit 2 where the ring above does.
    """
    from .._lidar_kernel import edge_flags

    n_s, n_b = shape
    order = np.arange(n_b) if ring_order is None else np.asarray(ring_order, dtype=np.int64)
    along = np.zeros((n_s, n_b), dtype=np.uint8)
    across = np.zeros((n_s, n_b), dtype=np.uint8)
    edge_flags(np.ascontiguousarray(points, dtype=float).reshape(n_s, n_b, 3),
               np.ascontiguousarray(normals, dtype=float).reshape(n_s, n_b, 3),
               np.ascontiguousarray(hit, dtype=bool).reshape(n_s, n_b), order, np.float32(depth_m), along, across)
    return along.ravel() > 0, across.ravel()


def probe_leaves(hits, cand, probe):
    """Which of the probes of pulses ``cand`` (their :class:`hifi.caster.Hits` ``probe``) leave
    the surface of the pulse's pencil hit: one hits and the other misses, or the probe's point
    lies more than :data:`EDGE_DEPTH_M` off the plane of the pencil's hit (the compiled kernel
    :func:`sensors._lidar_kernel.probe_leaves`, the plane distance summed left to right)."""
    from .._lidar_kernel import probe_leaves as probe_leaves_kernel
    out = np.empty(cand.size, dtype=bool)
    probe_leaves_kernel(cand, np.ascontiguousarray(hits.hit), np.ascontiguousarray(hits.normal),
                        np.ascontiguousarray(hits.point), np.ascontiguousarray(probe.hit),
                        np.ascontiguousarray(probe.point), EDGE_DEPTH_M, out)
    return out
