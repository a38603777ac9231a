"""Bayer colour filter array (RGGB): mosaicing and bilinear demosaicing.

Channel order everywhere is (R, G, B) on the last axis. The RGGB tile is::

    row 0:  R G R G ...
    row 1:  G B G B ...

so pixel (0, 0) is red and pixel (1, 1) is blue.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

__all__ = ["bayer_masks", "mosaic", "demosaic_bilinear"]

# Bilinear interpolation kernels (Malvar, He & Cutler 2004, section 2, "bilinear" baseline).
# Used in normalised form (convolution of the masked samples divided by the convolution of the
# mask), which makes them exact for a uniform field up to the image border.
_KERNEL_GREEN = np.array([[0.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 0.0]]) / 4.0
_KERNEL_RED_BLUE = np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 4.0


def bayer_masks(shape: tuple[int, int]) -> np.ndarray:
    """Boolean masks of the RGGB pattern.

    Parameters
    ----------
    shape : tuple of int
        ``(rows, cols)`` of the raw sensor.

    Returns
    -------
    numpy.ndarray of bool, shape (rows, cols, 3)
        ``masks[..., c]`` is True where the pixel carries channel ``c`` (0 R, 1 G, 2 B).
    """
    rows, cols = int(shape[0]), int(shape[1])
    r = np.arange(rows)[:, None] % 2
    c = np.arange(cols)[None, :] % 2
    red = (r == 0) & (c == 0)
    blue = (r == 1) & (c == 1)
    green = ~(red | blue)
    return np.stack([red, green, blue], axis=-1)


def mosaic(image_rgb) -> np.ndarray:
    """Sample an RGB image through an RGGB colour filter array.

    Parameters
    ----------
    image_rgb : array_like, shape (rows, cols, 3)
        Per-channel values (photons, electrons or DN).

    Returns
    -------
    numpy.ndarray, shape (rows, cols)
        The raw mosaic: each pixel keeps only its own channel.
    """
    image_rgb = np.asarray(image_rgb)
    if image_rgb.ndim != 3 or image_rgb.shape[-1] != 3:
        raise ValueError(f"image_rgb shape = {image_rgb.shape!r}: must be (rows, cols, 3)")
    masks = bayer_masks(image_rgb.shape[:2])
    return np.sum(np.where(masks, image_rgb, 0), axis=-1).astype(image_rgb.dtype, copy=False)


def demosaic_bilinear(raw) -> np.ndarray:
    """Bilinear demosaicing of an RGGB mosaic.

    Parameters
    ----------
    raw : array_like, shape (rows, cols)
        Raw mosaic values.

    Returns
    -------
    numpy.ndarray of float64, shape (rows, cols, 3)
        Interpolated (R, G, B). Measured samples are kept unchanged.

    Notes
    -----
    Each missing sample is the weighted mean of its nearest same-colour neighbours: green from
    the 4-neighbourhood, red and blue from the 2 or 4 nearest of that colour (Malvar et al. 2004,
    "bilinear interpolation" baseline). The weights are normalised by the mask (normalised
    convolution), so a uniform grey field is reproduced exactly, borders included.

    References
    ----------
    H. S. Malvar, L.-W. He, R. Cutler, "High-quality linear interpolation for demosaicing of
    Bayer-patterned color images", Proc. IEEE ICASSP 2004, vol. 3, pp. 485-488.
    """
    raw = np.asarray(raw, dtype=float)
    if raw.ndim != 2:
        raise ValueError(f"raw shape = {raw.shape!r}: must be (rows, cols)")
    masks = bayer_masks(raw.shape).astype(float)
    out = np.empty(raw.shape + (3,), dtype=float)
    for channel, kernel in enumerate((_KERNEL_RED_BLUE, _KERNEL_GREEN, _KERNEL_RED_BLUE)):
        m = masks[..., channel]
        num = ndimage.convolve(raw * m, kernel, mode="constant", cval=0.0)
        den = ndimage.convolve(m, kernel, mode="constant", cval=0.0)
        out[..., channel] = np.where(m > 0, raw, num / den)
    return out
