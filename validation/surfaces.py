"""Glass, water and retroreflectors on a lidar: the models of docs/surfaces.md drawn, and one
simulated scan across a retroreflective sign showing the halo.

Four panels: (a) a clear and a tinted pane's reflectance and transmittance and water's Fresnel
reflectance against incidence (hifi.world.surfaces); (b) the specular echo of a clear pane seen
by an HDL-64E (2 mrad, 5 cm receiver) at 5, 10 and 20 m against incidence, beside the apparent
reflectivity the detection threshold asks for at that range; (c) Type I white sheeting's
return (ASTM D4956: R_A 70 at -4 deg and 30 at +30 deg entrance) against the entrance angle,
with a white Lambertian target for scale; (d) a SICK LMS111 scanning across a 0.3 m sign 6 m
ahead: the reported reflectivity of every pulse, the sign's own pulses saturated and its halo
around them, beside the halo response through the Leddar Pixell user guide's two crosstalk
levels (-40 dB one segment away, -60 dB four away).

    python validation/surfaces.py [--out docs/img/surfaces.png]

It prints the numbers the figure shows: the pane's transmittance at 0/45/70 deg, the glint's
width at 10 m, the sign's apparent reflectivity and intensity, and the halo's extent.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import hifi
from hifi.world.surfaces import GLASS_REFRACTIVE_INDEX, WATER_REFRACTIVE_INDEX, fresnel_reflectance, pane_optics
from sensors.lidar import HDL64E_S2
from sensors.radiometry import extinction_from_visibility, lidar_received_power
from sensors.sick import SickLMS1xx
from sensors.surfaces import (HALO_PITCH_RAD, glint_reflectivity, halo_radius_rad, halo_response,
                              retroreflector_reflectivity)

OUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "surfaces.png"


def threshold_reflectivity(p, r_m):
    """Apparent reflectivity whose SNR is the detection threshold at range ``r_m`` (50 %
    detection) for the lidar of parameters ``p``."""
    one = lidar_received_power(p["peak_power_w"], 1.0, 1.0, r_m, receiver_area_m2=np.pi * p["receiver_aperture_m"] ** 2 / 4,
                               system_efficiency=p["optical_efficiency"],
                               extinction_per_m=extinction_from_visibility(p["visibility_m"], 905e-9))
    return p["snr_threshold"] * p["noise_power_w"] / one


def sign_scan():
    """A SICK LMS111 across a 0.3 m Type I white sign 6 m ahead, nothing behind: (yaw [rad],
    object_id, detected, reflectivity, received power [W]) of its first frame."""
    data = {"simulation": {"duration_s": 0.02, "seed": 0},
            "objects": [{"name": "sign", "mesh": "plane", "size_m": [0.3, 0.3], "material": "retroreflective_sheeting",
                         "position_m": [6.0, 0, 0], "rpy_deg": [0, -90, 0]}],
            "sensors": [{"name": "l", "model": "sick_lms1xx", "params": {"angular_step_deg": 0.25, "edge_subrays": 0}}]}
    ds = hifi.Simulation.from_dict(data).run()["l"].isel(frame=0)
    return (ds.yaw.values.ravel(), ds.object_id.values.ravel(), ds.detected.values.ravel(),
            ds.reflectivity.values.ravel(), ds.received_power.values.ravel())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="figure file (PNG)")
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    deg = np.linspace(0.0, 89.9, 900)
    c = np.cos(np.radians(deg))
    clear, tinted = pane_optics(c, GLASS_REFRACTIVE_INDEX, 1.0), pane_optics(c, GLASS_REFRACTIVE_INDEX, 0.5)
    for a in (0.0, 45.0, 70.0):
        t = pane_optics(np.cos(np.radians(a)), GLASS_REFRACTIVE_INDEX, 1.0)
        print(f"clear pane at {a:4.0f} deg: R {float(t.reflectance):.4f}  T {float(t.transmittance):.4f}")
    print(f"water at 0 deg: R {float(fresnel_reflectance(1.0, WATER_REFRACTIVE_INDEX)):.4f}")

    fig, ax = plt.subplots(2, 2, figsize=(11, 8.5))
    a = ax[0, 0]
    a.plot(deg, clear.transmittance, "C0", label="clear pane T (n 1.515)")
    a.plot(deg, clear.reflectance, "C0--", label="clear pane R")
    a.plot(deg, tinted.transmittance, "C1", label="tinted pane T (internal 0.5)")
    a.plot(deg, tinted.reflectance, "C1--", label="tinted pane R")
    a.plot(deg, fresnel_reflectance(c, WATER_REFRACTIVE_INDEX), "C2:", label="water R (n 1.327)")
    a.set(xlabel="incidence [deg]", ylabel="share of the power", title="(a) Fresnel: panes and water", ylim=(0, 1.02))
    a.legend(fontsize=8)

    a = ax[0, 1]
    p = {k: v.default for k, v in HDL64E_S2.PARAMS.items()}
    fine = np.linspace(0.0, 0.4, 400)
    rp = pane_optics(np.cos(np.radians(fine)), GLASS_REFRACTIVE_INDEX, 1.0).reflectance
    for k, r in enumerate((5.0, 10.0, 20.0)):
        g = glint_reflectivity(rp, np.cos(np.radians(fine)), r, divergence_rad=p["divergence_rad"],
                               aperture_radius_m=p["aperture_radius_m"], receiver_aperture_m=p["receiver_aperture_m"])
        a.semilogy(fine, g, f"C{k}", label=f"pane at {r:g} m")
        a.axhline(threshold_reflectivity(p, r), color=f"C{k}", ls=":", lw=1)
        width = fine[g >= threshold_reflectivity(p, r)].max()
        print(f"pane glint at {r:4.0f} m (HDL-64E): {float(g[0]):.3g} at normal incidence, detected out to "
              f"{width:.3f} deg")
    a.set(xlabel="incidence [deg]", ylabel="apparent reflectivity", ylim=(1e-4, 1e5),
          title="(b) a pane's own echo (HDL-64E), dotted: detection threshold")
    a.legend(fontsize=8)

    a = ax[1, 0]
    ent = np.linspace(0.0, 85.0, 500)
    ce = np.cos(np.radians(ent))
    a.semilogy(ent, retroreflector_reflectivity(70.0, ce, 30.0) + 0.27 * ce, "C3",
               label="Type I white sheeting (R_A 70 / 30) + diffuse 0.27")
    a.semilogy(ent, ce, "k--", label="white Lambertian, rho cos(i)")
    a.semilogy([4, 30], [np.pi * 70 / np.cos(np.radians(4)), np.pi * 30 / np.cos(np.radians(30))], "C3o",
               label="ASTM D4956 points, pi R_A / cos(i)")
    a.set(xlabel="entrance angle [deg]", ylabel="apparent reflectivity", ylim=(1e-2, 1e3),
          title="(c) retroreflector: R_A as a reflectivity")
    a.legend(fontsize=8)

    a = ax[1, 1]
    yaw, oid, det, refl, power = sign_scan()
    on = oid == 0
    on_sign = np.abs(yaw) < np.arctan(0.15 / 6.0)
    halo = det & ~on_sign
    lms = {k: v.default for k, v in SickLMS1xx.PARAMS.items()}
    p_sign = float(np.median(power[on_sign]))
    r_in = halo_radius_rad(lms["snr_threshold"] * lms["noise_power_w"] / p_sign)
    edge = np.abs(yaw[on_sign]).max()
    print(f"sign (Type I white, 6 m): apparent reflectivity {float(np.median(refl[on_sign])):.1f}, "
          f"{int(on_sign.sum())} pulses; halo: {int(halo.sum())} pulses, out to "
          f"{np.degrees(np.abs(yaw[halo]).max() - edge):.2f} deg beyond the sign's edge "
          f"(model: {np.degrees(r_in):.2f} deg where P g(angle) reaches the threshold)")
    y = np.degrees(yaw)
    a.semilogy(y[on & det & on_sign], refl[on & det & on_sign], "C3o", ms=4, label="the sign's pulses")
    a.semilogy(y[halo], refl[halo], "C0s", ms=4, label="halo: neighbouring pulses")
    ang = np.linspace(0.05, 10.0, 400)
    sign_refl = float(np.median(refl[on_sign]))
    for side in (-1, 1):
        a.semilogy(side * (np.degrees(edge) + ang), sign_refl * halo_response(np.radians(ang)), "C0:", lw=1,
                   label="sign x response" if side == 1 else None)
    pix = np.array([1.0, 4.0]) * np.degrees(HALO_PITCH_RAD)
    a.semilogy(np.degrees(edge) + pix, sign_refl * np.array([1e-4, 1e-6]), "kx", ms=8,
               label="Leddar Pixell: -40 dB, -60 dB")
    a.set(xlabel="yaw [deg]", ylabel="reported reflectivity", xlim=(-10.5, 10.5), ylim=(1e-5, 1e3),
          title="(d) LMS111 across a 0.3 m sign at 6 m: halo")
    a.legend(fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"figure: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
