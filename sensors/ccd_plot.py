"""Quick look of a ``ccd_camera`` dataset for ``hifi plot`` (entry-point group ``hifi.plots``).

The camera image [DN] beside the ideal image [e-], both white balanced with the same channel
gains (:func:`hifi.viz.imaging.white_balance_gains`) and shown through the display gamma.
"""

from __future__ import annotations

import numpy as np

# The display helpers live in hifi (hifi view shows a camera frame the same way); they are
# named here too, where the camera's quick look has always offered them.
from hifi.viz.imaging import DISPLAY_GAMMA, WHITE_BALANCE_CHOICES, display, white_balance_gains  # noqa: F401
from hifi.viz.plot_common import pyplot, scenario_sensor_params, seconds, title

def daylight_white(ds, frame: int = 0) -> np.ndarray:
    """Channel signal of a white horizontal Lambertian surface under the run's sun and sky [1].

    Parameters
    ----------
    ds : xarray.Dataset
        A ``ccd_camera`` dataset with its global attributes (``start_utc``, ``origin_*``,
        ``qe_reference_wavelength_m``).
    frame : int
        Position of the frame; its ``frame_time`` sets the sun.

    Returns
    -------
    numpy.ndarray, shape (n_channels,)
        E_c = Phi_direct,c cos(zenith) + Phi_diffuse,c [photons s^-1 m^-2], per channel weighted
        by its relative response, which is what the camera's ideal image of a white
        horizontal surface is proportional to.

    Notes
    -----
    The same illumination the ``ccd_camera`` model uses (:func:`optics.illumination.sunlight`
    at the scene origin, the default RGB filters x silicon QE, the sensor's
    ``diffuse_fraction`` from the scenario text), so ``daylight`` white balance is the
    camera's "daylight" preset for exactly the simulated sun. A mono camera gives one channel.
    """
    from optics.illumination import SPECTRAL_GRID_M, sunlight
    from optics.spectral import channel_response_curves, relative_quantum_efficiency
    from sensors.ccd import CCDCamera

    ref_wl = float(ds.attrs["qe_reference_wavelength_m"])
    if ds.sizes.get("channel", 1) == 3:
        response = channel_response_curves(SPECTRAL_GRID_M, reference_wavelength_m=ref_wl)
    else:
        response = relative_quantum_efficiency(SPECTRAL_GRID_M, reference_wavelength_m=ref_wl)[None, :]
    diffuse = float(scenario_sensor_params(ds).get("diffuse_fraction",
                                                    CCDCamera.PARAMS["diffuse_fraction"].default))
    start = np.datetime64(str(ds.attrs["start_utc"]).rstrip("Z"), "ns")
    t = float(seconds(ds, "frame_time")[frame]) if "frame_time" in ds else 0.0
    when = start + np.timedelta64(round(t * 1e9), "ns")
    sun = sunlight(when, float(ds.attrs["origin_lat_deg"]), float(ds.attrs["origin_lon_deg"]),
                   float(ds.attrs["origin_height_m"]), response, diffuse_fraction=diffuse)
    return sun.direct_normal * max(np.cos(sun.zenith_rad), 0.0) + sun.diffuse_horizontal


def plot_camera(ds, frame: int = 0, white_balance: str = "gray-world"):
    """The camera image beside the ideal image of one frame (a matplotlib Figure).

    Parameters
    ----------
    ds : xarray.Dataset
        A ``ccd_camera`` dataset (``image`` [DN], ``ideal_image`` [e-] over row, col, channel).
    frame : int
        Position of the frame in the dataset.
    white_balance : {"gray-world", "daylight", "none"}
        Channel gains (:func:`white_balance_gains`), computed on the image [DN] and applied to
        both panels: ``gray-world`` (default) makes the image's channel means equal, a natural
        look for most scenes; ``daylight`` makes a white surface under the simulated sun and sky
        neutral (:func:`daylight_white`), so coloured light stays visible (blue shadows);
        ``none`` shows the raw channel balance of the sensor behind its filters.

    Notes
    -----
    Display scaling: the image from the black level to the largest DN, the ideal image from 0
    to the full well (both from the dataset's attributes when present), so both panels compare
    directly; the gains multiply the values before clipping, and a pixel saturated in any
    channel (>= max DN, >= full well) is shown white; then the display gamma x^(1/2.2).
    """
    if white_balance not in WHITE_BALANCE_CHOICES:
        raise ValueError(f"white_balance = {white_balance!r}: expected one of "
                         f"{', '.join(map(repr, WHITE_BALANCE_CHOICES))}")
    plt = pyplot()
    fr = ds.isel(frame=frame)
    image = np.asarray(fr["image"].transpose("row", "col", "channel").values, dtype=float)
    ideal = np.asarray(fr["ideal_image"].transpose("row", "col", "channel").values, dtype=float)
    black = float(ds.attrs.get("black_level_dn", 0.0))
    max_dn = float(ds.attrs.get("max_dn", np.nanmax(image)))
    full_well = float(ds.attrs.get("full_well_e", np.nanmax(ideal)))
    white = daylight_white(ds, frame) if white_balance == "daylight" else None
    gains = white_balance_gains(image, white_balance, black_level_dn=black, saturation_dn=max_dn,
                                white_reference=white)
    shown = display((image - black) * gains, max_dn - black, np.any(image >= max_dn, axis=-1))
    shown_ideal = display(ideal * gains, full_well, np.any(ideal >= full_well, axis=-1))
    grey = "gray" if shown.ndim == 2 else None
    rows, cols = image.shape[:2]
    fig, axes = plt.subplots(1, 2, figsize=(13, 13 * rows / cols / 2 + 1.0), layout="constrained")
    axes[0].imshow(shown, cmap=grey, vmin=0, vmax=1, interpolation="nearest")
    axes[0].set_title(f"image [DN], {black:g} .. {max_dn:g} DN")
    axes[1].imshow(shown_ideal, cmap=grey, vmin=0, vmax=1, interpolation="nearest")
    axes[1].set_title(f"ideal image [e-] before noise, 0 .. {full_well:.0f} e-")
    for ax in axes:
        ax.set_xlabel("col")
        ax.set_ylabel("row")
    channels = [str(c) for c in np.asarray(ds["channel"].values)] if "channel" in ds.coords else []
    if len(gains) > 1:
        g = ", ".join(f"{c} {v:.2f}" for c, v in zip(channels or range(len(gains)), gains))
        balance = f"white balance {white_balance} (gains {g})"
    else:
        balance = "mono"
    fig.suptitle(f"{title(ds, frame)}\n{balance}, display gamma 1/2.2, saturated pixels white",
                 fontsize="medium")
    return fig
