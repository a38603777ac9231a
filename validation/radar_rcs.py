"""Radar cross-sections of canonical targets at 77 GHz by the radar model's shooting-and-bouncing
rays (``sensors.radar.scattering``), beside their closed forms.

Targets (perfectly conducting, plane wave, monostatic): a square plate at normal incidence
and at 1, 2 and 4 deg off normal in one plane (physical optics: ``4 pi A^2 / lambda^2
sinc^2(k a sin theta)``, Knott, Shaeffer & Tuley, *Radar Cross Section*, 2nd ed., SciTech
2004, Table 6.1 and sec. 6.3); a sphere in the optical region (``pi a^2``); a dihedral corner
reflector on its symmetry axis (two a x b plates at 90 deg: ``8 pi a^2 b^2 / lambda^2``, Knott
Table 6.1) and a triangular trihedral on its axis (``4 pi a^4 / (3 lambda^2)``). The closed forms
stand in for the "real" column: they are what the physical-optics method must reproduce.

    python validation/radar_rcs.py [--markdown FILE]
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
from sensors.radar.materials import permittivity  # noqa: E402
from sensors.radar.scattering import plane_wave_rcs  # noqa: E402

F_HZ = 77e9
LAM = SPEED_OF_LIGHT_M_S / F_HZ
K = 2 * np.pi / LAM
EPS = np.array([permittivity("metal", F_HZ), 1.0])
H = np.zeros(2)


def _scene(mesh):
    sc = Scene()
    sc.add_material(Material("metal", class_name="car"))
    sc.add_object("target", mesh, "metal")
    return sc, RayCaster(sc, n_threads=1)


def _rcs(mesh, toward, center, half, spacing):
    sc, caster = _scene(mesh)
    return plane_wave_rcs(caster, sc, toward, center, half, spacing, wavelength_m=LAM, permittivity=EPS,
                          rms_height_m=H)


def rows():
    out = []
    a = 0.2
    plate = trimesh.Trimesh(vertices=[[0, -a / 2, -a / 2], [0, a / 2, -a / 2], [0, a / 2, a / 2], [0, -a / 2, a / 2]],
                            faces=[[0, 1, 2], [0, 2, 3]], process=False)
    for deg in (0.0, 1.0, 2.0, 4.0):
        th = np.radians(deg)
        x = K * a * np.sin(th)
        closed = 4 * np.pi * a ** 4 / LAM ** 2 * (np.sinc(x / np.pi) ** 2) * np.cos(th) ** 2
        out.append((f"plate 0.2 m, {deg:g} deg off normal", closed,
                    _rcs(plate, [np.cos(th), np.sin(th), 0.0], [0, 0, 0], 0.15, 0.002)))
    r = 0.1
    out.append(("sphere a = 0.1 m (ka = 161)", np.pi * r * r,
                _rcs(trimesh.creation.icosphere(subdivisions=5, radius=r), [1.0, 0.2, 0.1], [0, 0, 0], 0.105, 0.001)))
    a, b = 0.2, 0.1
    dihedral = trimesh.Trimesh(vertices=[[0, 0, -b / 2], [a, 0, -b / 2], [a, 0, b / 2], [0, 0, b / 2],
                                         [0, a, -b / 2], [0, a, b / 2]],
                               faces=[[0, 1, 2], [0, 2, 3], [0, 3, 5], [0, 5, 4]], process=False)
    out.append(("dihedral 0.2 x 0.1 m plates, on axis", 8 * np.pi * a * a * b * b / LAM ** 2,
                _rcs(dihedral, [1, 1, 0], [a / 2, a / 2, 0], 0.16, 0.001)))
    a = 0.2
    tri = trimesh.Trimesh(vertices=[[0, 0, 0], [a, 0, 0], [0, a, 0], [0, 0, a]], faces=[[0, 1, 2], [0, 2, 3], [0, 3, 1]],
                          process=False)
    out.append(("triangular trihedral a = 0.2 m, on axis", 4 * np.pi * a ** 4 / (3 * LAM ** 2),
                _rcs(tri, [1, 1, 1], [a / 3] * 3, 0.16, 0.001)))
    return out


def table(rs) -> str:
    lines = ["| target | closed form [dBsm] | simulated [dBsm] | ratio [dB] |", "|---|---:|---:|---:|"]
    for name, closed, sim in rs:
        lines.append(f"| {name} | {10 * np.log10(closed):.2f} | {10 * np.log10(sim):.2f} | "
                     f"{10 * np.log10(sim / closed):+.2f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args()
    text = ("# Radar cross-sections at 77 GHz: SBR against closed forms\n\n`python validation/radar_rcs.py "
            "--markdown validation/radar_rcs.md`\n\n" + table(rows()))
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
