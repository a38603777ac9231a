"""Rotating multi-beam lidars (Velodyne) and line lidars with a rotating mirror (Ibeo, SICK).

Both follow the BlenSor paper (Gschwandtner et al. 2011, sec. 3.2-3.3): every ray is cast from
where the sensor is at its own firing time, the reported distance gets a per-laser bias fixed
for the run plus per-ray Gaussian noise (Eq. 2), and a return is reported only when the surface
is bright enough for its distance (Eq. 1, :mod:`sensors.detection`). Behind a mirror the
reported point is a ghost on the emitted ray at the folded distance (sec. 3.5).

The modules, each importing only those listed before it:

- :mod:`.signal`: the signal chain (:func:`lidar_signal_chain`), particle echoes, the shared
  parameters (:func:`common_params`);
- :mod:`.footprint`: edge footprints (:func:`depth_edge_pulses`, :func:`footprint_params`);
- :mod:`.impulse`: the receiver's impulse response and the echoes it merges at depth edges
  (:func:`receiver_echoes`, :data:`RECEIVER_TAIL_S`);
- :mod:`.pulsed`: the pulsed-lidar base :class:`PulsedLidar` and the pulses it measures
  (:class:`PulseBatch`);
- :mod:`.firing`: firing cycles and mirror scan directions;
- :mod:`.rotating`: :class:`RotatingLidar`, :class:`HDL64E_S2`, :class:`HDL32E`, :class:`VLP16`;
- :mod:`.line`: :class:`LineLidar`, :class:`IbeoLux`, :class:`SickLMS`.

Every name is importable from ``sensors.lidar`` (the ``hifi.models`` entry points name
``sensors.lidar:HDL64E_S2`` and the others).
"""

from .firing import (AZIMUTH_STEP_RTOL, FIRING_MODES, azimuth_step_deg, cycles_per_rotation, firing_fractions,
                     mirror_scan_directions)
from .footprint import EDGE_DEPTH_M, depth_edge_pulses, footprint_params, probe_leaves
from .impulse import (EDGE_TIMING, RECEIVER_TAIL_S, TAIL_SOURCE, TIMING_SOURCE, merge_limit_s, receiver_echoes,
                      receiver_peak, receiver_response)
from .line import IbeoLux, LineLidar, SickLMS
from .pulsed import FrontEcho, PulseBatch, PulsedLidar, reorder_echo, take_hits
from .rotating import HDL32E, HDL64E_S2, VLP16, RotatingLidar
from .signal import (CLEAR_VISIBILITY_M, FOG_BLIND_MIN_M, FRONT_ECHO, HALO_ECHO, SNR_THRESHOLD, TARGET_ECHO,
                     ChainParams, Halo, SignalChain, common_params, fit_noise_power, lidar_signal_chain)

# The names these had while they were private to one module, which sensors.ouster, sensors.sick
# and the tests import.
_PulsedLidar = PulsedLidar
_common_params = common_params
_footprint_params = footprint_params
_take_hits = take_hits
_probe_leaves = probe_leaves

__all__ = [
    "AZIMUTH_STEP_RTOL", "CLEAR_VISIBILITY_M", "ChainParams", "EDGE_DEPTH_M", "FIRING_MODES", "FOG_BLIND_MIN_M",
    "FRONT_ECHO", "FrontEcho", "HALO_ECHO", "HDL32E", "HDL64E_S2", "Halo", "SNR_THRESHOLD", "TARGET_ECHO", "VLP16",
    "IbeoLux", "LineLidar", "PulseBatch", "PulsedLidar", "RECEIVER_TAIL_S", "RotatingLidar", "TAIL_SOURCE",
    "TIMING_SOURCE", "EDGE_TIMING",
    "SickLMS", "SignalChain", "azimuth_step_deg", "common_params", "cycles_per_rotation", "depth_edge_pulses",
    "fit_noise_power", "firing_fractions", "footprint_params",
    "lidar_signal_chain", "merge_limit_s", "mirror_scan_directions", "probe_leaves", "receiver_echoes",
    "receiver_peak", "receiver_response", "reorder_echo", "take_hits",
]
