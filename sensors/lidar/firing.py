"""When and where the pulses fire: the rotating lidars' firing cycle (azimuth step, cycles per
rotation, each laser's instant in the cycle) and the line lidars' mirror scan directions.
"""

from __future__ import annotations

import numpy as np


#: Relative tolerance of an explicit ``azimuth_step_deg`` against the step implied by
#: ``rate_hz`` and the model's firing cycle (0.1 %: the data sheets' steps are rounded to
#: three or four digits, 0.1728 or 0.2 deg).
AZIMUTH_STEP_RTOL = 1e-3


def azimuth_step_deg(rate_hz, firing_cycle_s):
    """Rotor angle turned during one firing cycle [deg]: ``360 rate_hz T_c``.

    Parameters
    ----------
    rate_hz : float
        Rotation rate [Hz].
    firing_cycle_s : float
        Duration of the model's firing cycle, fixed by its electronics [s].
    """
    return 360.0 * float(rate_hz) * float(firing_cycle_s)


def cycles_per_rotation(rate_hz, firing_cycle_s) -> int:
    """Complete firing cycles in one rotation, ``floor(1 / (rate_hz T_c))``."""
    return int(np.floor(1.0 / (float(rate_hz) * float(firing_cycle_s)) + 1e-9))


#: ``firing`` values of the rotating lidars (:func:`firing_fractions`).
FIRING_MODES = ("staggered", "simultaneous")


def firing_fractions(n_lasers, firing, calibrated=None, model=None) -> np.ndarray:
    """Instant of each laser in the firing cycle, as a fraction of the cycle [1], shape (n_lasers,).

    Parameters
    ----------
    n_lasers : int
    firing : {"staggered", "simultaneous"}
        ``"simultaneous"``: every laser at 0 (all beams of a column fire at once, as an Ouster:
        Ouster software user manual, "Lidar Data Format": one measurement block per column,
        one timestamp for all its pixels). ``"staggered"``: ``calibrated`` if given, else
        ``model`` if it has one entry per laser, else ``i / n_lasers`` (evenly spread).
    calibrated : (n_lasers,) float, optional
        The calibration file's ``firing_fraction`` column.
    model : array_like, optional
        The model's data-sheet firing sequence (:attr:`RotatingLidar.fire_fraction`).
    """
    if firing not in FIRING_MODES:
        raise ValueError(f"firing: {firing!r} is not one of {', '.join(repr(f) for f in FIRING_MODES)}")
    if firing == "simultaneous":
        return np.zeros(n_lasers)
    if calibrated is not None:
        return np.asarray(calibrated, dtype=float)
    frac = np.asarray(model if model is not None else (), dtype=float)
    return frac if len(frac) == n_lasers else np.arange(n_lasers) / n_lasers


def mirror_scan_directions(mirror_yaw_rad, layer_pitch_rad):
    """Beam directions of fixed emitters reflected by a rotating mirror (BlenSor sec. 3.3).

    Parameters
    ----------
    mirror_yaw_rad : (n,) float
        Mirror (scan) angle [rad].
    layer_pitch_rad : (m,) float
        Emitted pitch of each layer [rad].

    Returns
    -------
    ndarray, shape (n, m, 3)
        Unit directions in the sensor frame:
        ``R_z(m) R_x(-m) (cos p, 0, sin p)``.

    Notes
    -----
    A mirror turning about the scan axis rotates the image of the fixed emitter array by the
    mirror angle: at mirror yaw 0 every ray keeps its emitted yaw (0) and pitch p; at 90 deg the
    pitch separation of the layers has turned fully into yaw separation (pitch 0, yaw 90 deg +
    p); in between, a layer at pitch p points at elevation asin(sin p cos m). This is the
    geometric model of the BlenSor paper's Fig. 3.
    """
    m = np.asarray(mirror_yaw_rad, dtype=float)[:, None]
    p = np.asarray(layer_pitch_rad, dtype=float)[None, :]
    # R_x(-m) applied to (cos p, 0, sin p), then R_z(m)
    x0, y0, z0 = np.cos(p), np.sin(p) * np.sin(m), np.sin(p) * np.cos(m)
    cm, sm = np.cos(m), np.sin(m)
    return np.stack([cm * x0 - sm * y0, sm * x0 + cm * y0, np.broadcast_to(z0, (m.shape[0], p.shape[1]))],
                    axis=-1)
