"""Quick look of a ``ccd_camera`` dataset for ``hifi plot`` (entry-point group ``hifi.plots``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hifi.plot import _pyplot


#: Display transfer exponent (a plain power-law approximation of sRGB's 1/2.4 segment curve):
#: linear sensor values look far too dark on a monitor without it.
DISPLAY_GAMMA = 1.0 / 2.2


def _display(img, lo, hi):
    """Scale linearly to 0..1, then x^(1/2.2); a single channel stays 2-D (grey colour map)."""
    span = hi - lo if hi > lo else 1.0
    x = np.clip((np.asarray(img, dtype=float) - lo) / span, 0.0, 1.0) ** DISPLAY_GAMMA
    return x[..., 0] if x.shape[-1] == 1 else x


def plot_camera(ds, out, frame: int = 0) -> Path:
    """Write the camera image beside the ideal image of one frame and return the PNG path.

    Parameters
    ----------
    ds : xarray.Dataset
        A ``ccd_camera`` dataset (``image`` [DN], ``ideal_image`` [e-] over row, col, channel).
    out : path-like
        PNG file to write.
    frame : int
        Position of the frame in the dataset.

    Notes
    -----
    Display scaling: the image from the black level to the largest DN, the ideal image from 0
    to the full well (both from the dataset's attributes when present), so a saturated pixel is
    white in both and the two panels compare directly; then the display gamma x^(1/2.2).
    """
    plt = _pyplot()
    out = Path(out)
    fr = ds.isel(frame=frame)
    name = ds.attrs.get("sensor_name", "camera")
    black = float(ds.attrs.get("black_level_dn", 0.0))
    max_dn = float(ds.attrs.get("max_dn", np.nanmax(fr["image"].values)))
    full_well = float(ds.attrs.get("full_well_e", np.nanmax(fr["ideal_image"].values)))
    image = _display(fr["image"].values, black, max_dn)
    ideal = _display(fr["ideal_image"].values, 0.0, full_well)
    grey = "gray" if image.ndim == 2 else None
    rows, cols = image.shape[:2]
    fig, axes = plt.subplots(1, 2, figsize=(12, 12 * rows / cols / 2 + 0.8), constrained_layout=True)
    axes[0].imshow(image, cmap=grey, interpolation="nearest")
    axes[0].set_title(f"{name}: image [DN], frame {int(fr['frame'])} "
                      f"(black {black:g} .. {max_dn:g} DN, gamma 1/2.2)")
    axes[1].imshow(ideal, cmap=grey, interpolation="nearest")
    axes[1].set_title(f"ideal image [e-] before noise (0 .. {full_well:.0f} e-, gamma 1/2.2)")
    for ax in axes:
        ax.set_xlabel("col")
        ax.set_ylabel("row")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
