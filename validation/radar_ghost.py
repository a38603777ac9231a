"""Multipath of a metal sphere over the road at 77 GHz, plane wave 20 deg above the horizon:
the shooting-and-bouncing-ray echoes of each path against the image method, for several tube
spacings and icosphere facet sizes.

Geometry as in tests/sensors/test_radar.py: sphere a = 0.1 m, centre 0.3 m over a road of
ITU-R P.2040 concrete (smooth here, to keep the Fresnel coefficient alone). Image method (Knott,
Shaeffer & Tuley, *Radar Cross Section*, 2nd ed., sec. 7; the sphere's mono- and bistatic RCS
is pi a^2 in the optical region): direct ``pi a^2``; the two road-sphere paths (one length, in
phase) ``4 pi a^2 |Gamma|^2``; road-sphere-road ``pi a^2 |Gamma|^4`` (the image radar sees the
sphere monostatically), with the TE Fresnel coefficient at 70 deg incidence. The closed forms
stand in for the "real" column.

The road-sphere-road echo is the only one that needs the field after a curved surface, taken
from the tube's neighbours. With the facets' own normals it follows the image method where the
tubes are wider than the sphere's facets, and comes out several dB strong where they are
narrower: two tubes on one flat facet reflect as parallel rays, so the wave off the sphere is a
set of undiverged beams with gaps between them instead of one diverging wave. Reflecting off
the interpolated vertex normals (``sensors.radar.scattering.smooth_normals``, what the radar
model does for every mesh but car bodies) removes the dependence.

    python validation/radar_ghost.py [--markdown FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import trimesh

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hifi.caster import RayCaster  # noqa: E402
from hifi.constants import SPEED_OF_LIGHT_M_S  # noqa: E402
from hifi.world.scene import Material, Scene  # noqa: E402
from sensors.radar.materials import fresnel_te, permittivity  # noqa: E402
from sensors.radar.scattering import shoot, smooth_normals  # noqa: E402

F_HZ = 77e9
LAM = SPEED_OF_LIGHT_M_S / F_HZ
A_M, HC_M, PSI = 0.1, 0.3, np.radians(20.0)


def paths(spacing_m, subdivisions, smooth=False):
    """RCS [m^2] of the direct, road-sphere (both) and road-sphere-road echoes, and the three
    image-method values."""
    sc = Scene()
    sc.add_material(Material("road", class_name="road"))
    sc.add_material(Material("ball", class_name="pole"))
    sc.add_object("road", trimesh.Trimesh(vertices=[[-3, -3, 0], [3, -3, 0], [3, 3, 0], [-3, 3, 0]],
                                          faces=[[0, 1, 2], [0, 2, 3]], process=False), "road")
    sc.add_object("ball", trimesh.creation.icosphere(subdivisions=subdivisions, radius=A_M)
                  .apply_translation([0, 0, HC_M]), "ball")
    caster = RayCaster(sc, n_threads=1)
    eps_road = permittivity("concrete", F_HZ)
    eps = np.array([eps_road, permittivity("metal", F_HZ), 1.0])
    u = np.array([np.cos(PSI), 0.0, np.sin(PSI)])
    ax = np.cross(u, [0, 0, 1.0])
    ax /= np.linalg.norm(ax)
    bx = np.cross(u, ax)
    g1, g2 = np.arange(-0.11, 0.11, spacing_m), np.arange(-0.11, 0.68, spacing_m)
    ga, gb = np.meshgrid(g1, g2, indexing="ij")
    center = np.array([0.0, 0.0, HC_M])
    origins = center + 3 * u + ga.reshape(-1, 1) * ax + gb.reshape(-1, 1) * bx
    n = origins.shape[0]
    edges = np.stack([np.broadcast_to(ax * spacing_m, (n, 3)), np.broadcast_to(bx * spacing_m, (n, 3))])
    c = shoot(caster, sc, origins, np.broadcast_to(-u, (n, 3)).copy(), edges, np.zeros((2, n, 3)), 0.0,
              wavelength_m=LAM, permittivity=eps, rms_height_m=np.zeros(3), far_direction=u, diffuse=False,
              grid_shape=ga.shape,
              smooth={1: smooth_normals(sc.objects[1].vertices, sc.objects[1].faces)} if smooth else None)
    direct = -2 * center @ u - 2 * A_M
    gamma2 = abs(complex(fresnel_te(np.sin(PSI), eps_road))) ** 2
    sel = {
        "direct": (c.bounces == 1) & (np.abs(c.path_m - direct) < 0.09),
        "road-sphere": (c.bounces == 2) & (np.abs(c.path_m - direct - 2 * HC_M * np.sin(PSI)
                                                  - 2 * A_M * (1 - np.cos(PSI))) < 0.09),
        "road-sphere-road": (c.bounces == 3) & (np.abs(c.path_m - direct - 4 * HC_M * np.sin(PSI)) < 0.09),
    }
    closed = {"direct": np.pi * A_M ** 2, "road-sphere": 4 * np.pi * A_M ** 2 * gamma2,
              "road-sphere-road": np.pi * A_M ** 2 * gamma2 ** 2}
    return {k: (closed[k], float(abs(np.sum(c.amplitude[s])) ** 2)) for k, s in sel.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args()
    lines = ["| tube [mm] | icosphere (facet edge [mm]) | path | image method [dBsm] | facet normals [dBsm] | ratio [dB] "
             "| interpolated normals [dBsm] | ratio [dB] |", "|---:|---|---|---:|---:|---:|---:|---:|"]
    for sub in (6, 7, 8):
        edge_mm = 1e3 * A_M * 1.05 / 2 ** sub            # icosphere edge: 1.05 a / 2^s
        for sp in (0.002, 0.001):
            flat, smooth = paths(sp, sub), paths(sp, sub, smooth=True)
            for k, (closed, sim) in flat.items():
                sm = smooth[k][1]
                lines.append(f"| {sp * 1e3:g} | {sub} ({edge_mm:.1f}) | {k} | {10 * np.log10(closed):.2f} | "
                             f"{10 * np.log10(sim):.2f} | {10 * np.log10(sim / closed):+.2f} | "
                             f"{10 * np.log10(sm):.2f} | {10 * np.log10(sm / closed):+.2f} |")
    text = ("# Sphere over the road at 77 GHz: multipath echoes against the image method\n\n"
            "`python validation/radar_ghost.py --markdown validation/radar_ghost.md`\n\n" + "\n".join(lines) + "\n")
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
