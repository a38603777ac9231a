"""Apparent contrast of a black object against the horizon sky in fog: ``ccd_camera`` against Koschmieder.

Koschmieder's law: in a homogeneous, uniformly lit atmosphere of extinction beta the apparent
contrast of an object against the horizon sky, C = (L_sky - L_obj) / L_sky, is its inherent
contrast times exp(-beta d); for a black object (inherent contrast 1) C = exp(-beta d). The
meteorological visibility V is the distance at which C falls to 2 %, so beta = ln(50) / V =
3.912 / V at 550 nm. Per band, Kim et al. (2001) scale it by (lambda / 550 nm)^-q, with q = 0
(fog is grey) below V = 500 m and q = V[km] - 0.5 for 0.5 km < V <= 1 km.

The scene: black plates (``color_rgb`` 0, so the inherent contrast is exactly 1), each facing
the camera with its front face at 40, 80, 110 and 200 m and 0.01 rad wide (20 pixels), side by
side in a 5.6 x 1.1 deg field (the cos^4 fall-off across it is below 0.1 %), nothing else: every
other pixel sees the horizon sky. One frame of ``ccd_camera`` (RGB, no Bayer, noon on
2024-05-01 at 47.8 N) per visibility, V = 250 m and 1000 m. Simulated: C per band from the
``ideal_image`` (noise-free electrons), the plate's pixels against the sky pixels in the same
columns. Law: exp(-beta d) with beta at the band's mean wavelength
(:func:`optics.spectral.channel_mean_wavelength`); the law at 550 nm, exp(-3.912 d / V), is
printed beside it.

References: H. Koschmieder, "Theorie der horizontalen Sichtweite", Beitr. Phys. freien Atm. 12,
1924; W. E. K. Middleton, "Vision through the Atmosphere", University of Toronto Press, 1952
(ch. 4, the 2 % threshold); I. I. Kim, B. McArthur, E. Korevaar, "Comparison of laser beam
propagation at 785 nm and 1550 nm in fog and haze for optical wireless communications", Proc.
SPIE 4214, 2001, Eq. (3).

    python validation/camera_fog.py [--markdown FILE] [--figure FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

VISIBILITIES_M = (250.0, 1000.0)
DISTANCES_M = (40.0, 80.0, 110.0, 200.0)
#: Plate width over distance [rad] and azimuths of the plates [rad].
PLATE_ANGLE_RAD = 0.01
AZIMUTHS_RAD = (0.03, 0.01, -0.01, -0.03)
CAMERA = {"resolution_x": 200, "resolution_y": 40, "focal_length_m": 0.012, "bayer": False}


def scenario(visibility_m: float | None) -> dict:
    objects = []
    for i, (d, az) in enumerate(zip(DISTANCES_M, AZIMUTHS_RAD)):
        w, depth = PLATE_ANGLE_RAD * d, 0.1
        r = d + depth / 2.0                  # front face at d on the plate's centre ray
        objects.append({"name": f"plate_{int(d):03d}", "mesh": "box", "size_m": [depth, w, w],
                        "position_m": [r * np.cos(az), r * np.sin(az), 0.0],
                        "rpy_deg": [0.0, 0.0, float(np.degrees(az))], "material": "black"})
    d = {"simulation": {"duration_s": 0.1, "seed": 1, "start_utc": "2024-05-01T11:00:00Z",
                        "origin": {"lat_deg": 47.80, "lon_deg": 13.04, "height_m": 430.0}},
         "materials": {"black": {"reflectivity": 0.0, "color_rgb": [0.0, 0.0, 0.0], "class": "target"}},
         "objects": objects,
         "sensors": [{"name": "cam", "model": "ccd_camera", "position_m": [0.0, 0.0, 0.0], "params": CAMERA}]}
    if visibility_m is not None:
        d["weather"] = {"fog_visibility_m": visibility_m}
    return d


def measured_contrast(ds) -> np.ndarray:
    """C = (L_sky - L_obj) / L_sky per plate and channel, shape (n_plates, n_channels)."""
    fr = ds.isel(frame=0)
    img, oid = fr.ideal_image.values.astype(float), fr.object_id.values
    out = []
    for i in range(len(DISTANCES_M)):
        cols = np.unique(np.nonzero(oid == i)[1])
        sky = img[:, cols][oid[:, cols] == -1].mean(axis=0)
        obj = img[oid == i].mean(axis=0)
        out.append((sky - obj) / sky)
    return np.array(out)


def band_wavelengths_m() -> np.ndarray:
    """Mean wavelength of the camera's R, G, B responses (the default preset) [m]."""
    import optics
    from optics.illumination import SPECTRAL_GRID_M
    from optics.spectral import channel_mean_wavelength, channel_response_curves
    ref = optics.PRESETS["pointgrey_grasshopper3_imx174"]["wavelength_m"]
    response = channel_response_curves(SPECTRAL_GRID_M, reference_wavelength_m=ref)
    return channel_mean_wavelength(SPECTRAL_GRID_M, response)


def run() -> list:
    import hifi
    from sensors.radiometry import extinction_from_visibility
    lam = band_wavelengths_m()
    rows = []
    for v in VISIBILITIES_M:
        c = measured_contrast(hifi.Simulation.from_dict(scenario(v)).run()["cam"])
        for i, d in enumerate(DISTANCES_M):
            for b, band in enumerate("RGB"):
                beta = float(extinction_from_visibility(v, lam[b]))
                rows.append({"visibility_m": v, "distance_m": d, "band": band, "wavelength_nm": lam[b] * 1e9,
                             "law_550": np.exp(-3.912 * d / v), "law": np.exp(-beta * d), "simulated": c[i, b]})
    return rows


def markdown(rows) -> str:
    out = ["| V [m] | d [m] | band | mean wavelength [nm] | exp(-3.912 d / V) | law at the band (Kim q) | "
           "simulated C | simulated / law |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['visibility_m']:g} | {r['distance_m']:g} | {r['band']} | {r['wavelength_nm']:.0f} | "
                   f"{r['law_550']:.4f} | {r['law']:.4f} | {r['simulated']:.4f} | {r['simulated'] / r['law']:.4f} |")
    ratios = np.array([r["simulated"] / r["law"] for r in rows])
    out.append("")
    out.append(f"simulated / law over {ratios.size} entries: min {ratios.min():.4f}, max {ratios.max():.4f}.")
    return "\n".join(out)


def figure(path, rows=None) -> None:
    """Apparent contrast against distance per band: the law's curves and the simulated points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = run() if rows is None else rows
    lam = band_wavelengths_m()
    from sensors.radiometry import extinction_from_visibility
    fig, axes = plt.subplots(1, len(VISIBILITIES_M), figsize=(9.0, 3.8), sharey=True)
    d = np.linspace(0.0, 220.0, 200)
    colours = {"R": "tab:red", "G": "tab:green", "B": "tab:blue"}
    for ax, v in zip(axes, VISIBILITIES_M):
        for b, band in enumerate("RGB"):
            beta = float(extinction_from_visibility(v, lam[b]))
            ax.plot(d, np.exp(-beta * d), color=colours[band], lw=1, label=f"law, {band} ({lam[b] * 1e9:.0f} nm)")
            pts = [(r["distance_m"], r["simulated"]) for r in rows if r["visibility_m"] == v and r["band"] == band]
            ax.plot(*np.array(pts).T, "o", mfc="none", color=colours[band], label=f"ccd_camera, {band}")
        ax.set_title(f"fog, V = {v:g} m")
        ax.set_xlabel("distance of the black plate [m]")
        ax.set_yscale("log")
    axes[0].set_ylabel("apparent contrast against the horizon sky")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from weather import table_cli
    return table_cli(__doc__, run, markdown, argv, figure_fn=figure)


if __name__ == "__main__":
    sys.exit(main())
