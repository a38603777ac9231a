"""Camera images for display: white balance and the display gamma.

Shared by the camera's quick look (:func:`sensors.ccd_plot.plot_camera`, ``hifi plot``) and the
browser viewer (``hifi view``, :mod:`hifi.viz.view`), which show a ``ccd_camera`` frame the same way.
They live in the core because the viewer may not import the sensor packages above it.
"""

from __future__ import annotations

import numpy as np

#: Display transfer exponent (a plain power-law approximation of sRGB's 1/2.4 segment curve):
#: linear sensor values look far too dark on a monitor without it.
DISPLAY_GAMMA = 1.0 / 2.2

#: ``hifi plot --white-balance`` choices; the first is the default.
WHITE_BALANCE_CHOICES = ("gray-world", "daylight", "none")


def white_balance_gains(image, method: str = "gray-world", *, black_level_dn: float = 0.0,
                        saturation_dn: float = np.inf, white_reference=None) -> np.ndarray:
    """Per-channel gains that white balance ``image``, normalised to the green channel.

    Parameters
    ----------
    image : array_like, shape (rows, cols, n_channels)
        Linear camera values [DN] (or [e-] with ``black_level_dn = 0``).
    method : {"gray-world", "daylight", "none"}
        ``gray-world``: the scene averages to grey, so every channel's mean over the pixels
        below ``saturation_dn`` in all channels, above the black level, is brought to the green
        channel's. ``daylight``: ``white_reference`` (a white surface's channel signal under
        the scene's light) is made neutral. ``none``: gains of 1.
    black_level_dn : float
        Offset subtracted before balancing [DN].
    saturation_dn : float
        Pixels reaching it in any channel are left out of the gray-world means [DN].
    white_reference : array_like, shape (n_channels,), optional
        For ``daylight``: channel signal of a white surface, any common unit.

    Returns
    -------
    numpy.ndarray, shape (n_channels,)
        Gains g_c [1]; the balanced image is ``(image - black_level_dn) * g``. The reference
        channel ("G" of R, G, B, or the only one) has gain 1; a single channel always has 1.
    """
    if method not in WHITE_BALANCE_CHOICES:
        raise ValueError(f"white_balance = {method!r}: expected one of "
                         f"{', '.join(map(repr, WHITE_BALANCE_CHOICES))}")
    img = np.asarray(image, dtype=float)
    n = img.shape[-1]
    ref = 1 if n == 3 else 0
    if method == "none" or n == 1:
        return np.ones(n)
    if method == "daylight":
        if white_reference is None:
            raise ValueError("white_balance = 'daylight' needs the white_reference signal per channel")
        w = np.asarray(white_reference, dtype=float)
        if w.shape != (n,) or not np.all(w > 0):
            raise ValueError(f"white_reference = {w!r}: expected {n} positive channel signals")
        return w[ref] / w
    linear = img.reshape(-1, n) - black_level_dn
    ok = np.all(img.reshape(-1, n) < saturation_dn, axis=1) & np.all(np.isfinite(linear), axis=1)
    means = linear[ok].mean(axis=0) if ok.any() else np.full(n, np.nan)
    if not np.all(means > 0):
        return np.ones(n)                     # a black (or empty) frame has no colour to balance
    return means[ref] / means


def display(linear, white, saturated):
    """Scale linearly so ``white`` is 1, clip, then x^(1/2.2); saturated pixels white.

    A single channel stays 2-D (grey colour map).
    """
    x = np.clip(np.asarray(linear, dtype=float) / (white if white > 0 else 1.0), 0.0, 1.0)
    x[saturated] = 1.0
    x = x ** DISPLAY_GAMMA
    return x[..., 0] if x.shape[-1] == 1 else x
