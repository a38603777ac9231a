"""Electromagnetic properties of the scene's materials at the radar's frequency.

A hifi material carries optical values (reflectance, colour); a radar needs a complex relative
permittivity and a surface roughness. Each object's semantic class (its material's ``class``)
picks one of the materials of ITU-R P.2040 Table 3, whose permittivity is a fit over frequency:

    eps' = a f^b,   sigma = c f^d  [S/m],   eps'' = 17.98 sigma / f     (f in GHz)

(Recommendation ITU-R P.2040-1, "Effects of building materials and structures on radiowave
propagation above about 100 MHz", 2015, Table 3 and Eq. 9; the fits of concrete, glass, wood
and metal hold from 1 to 100 GHz). The table's values are as recalled from the recommendation
(it could not be re-read when this module was written) and should be checked against it.

Road surfaces have no entry: asphalt concrete is given P.2040's concrete (eps' 5.24), an
assumption (measured asphalt at W band is nearer eps' 3 to 4, which lowers its Fresnel
reflectance at normal incidence from 0.15 to about 0.1 in power). Vegetation is given P.2040's
wood, a crude stand-in for leaves (whose water content makes them lossier). A class not listed
in :data:`CLASS_MATERIAL` is concrete.

Roughness: the rms height h of each material (assumed values, in :data:`RADAR_MATERIALS`)
lowers the coherent (specular) reflection by the Rayleigh factor ``exp(-g / 2)`` in amplitude,
``g = (2 k h cos i)^2`` (Beckmann & Spizzichino, *The scattering of electromagnetic waves from
rough surfaces*, Pergamon 1963, ch. 5), and sends the rest, ``|Gamma|^2 (1 - exp(-g))``, into a
Lambertian diffuse term (:func:`diffuse_sigma0`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class RadarMaterial(NamedTuple):
    """One ITU-R P.2040 Table 3 entry and a roughness."""

    a: float
    b: float
    c: float
    d: float
    rms_height_m: float
    source: str


#: Material name -> P.2040 Table 3 coefficients (a, b, c, d) and the rms surface height [m].
RADAR_MATERIALS = {
    "metal": RadarMaterial(1.0, 0.0, 1e7, 0.0, 0.0, "ITU-R P.2040-1 Table 3, metal; smooth (assumed)"),
    "concrete": RadarMaterial(5.24, 0.0, 0.0462, 0.7822, 0.5e-3,
                              "ITU-R P.2040-1 Table 3, concrete; rms height 0.5 mm (assumed, a road's texture)"),
    "glass": RadarMaterial(6.31, 0.0, 0.0036, 1.3394, 0.0, "ITU-R P.2040-1 Table 3, glass; smooth"),
    "wood": RadarMaterial(1.99, 0.0, 0.0047, 1.0718, 1e-3, "ITU-R P.2040-1 Table 3, wood; rms height 1 mm (assumed)"),
}

#: Semantic class -> radar material (the classes of :mod:`hifi.materials` and common others).
CLASS_MATERIAL = {
    "car": "metal", "vehicle": "metal", "truck": "metal", "bus": "metal", "bicycle": "metal",
    "motorcycle": "metal", "pole": "metal", "traffic_sign": "metal", "sign": "metal", "guardrail": "metal",
    "road": "concrete", "sidewalk": "concrete", "lane_marking": "concrete", "building": "concrete",
    "wall": "concrete", "terrain": "concrete",
    "window": "glass", "glass": "glass",
    "vegetation": "wood", "trunk": "wood", "tree": "wood",
}

#: Material of a class not in :data:`CLASS_MATERIAL`.
DEFAULT_MATERIAL = "concrete"


def permittivity(material: str, frequency_hz: float) -> complex:
    """Complex relative permittivity ``eps' - j eps''`` at ``frequency_hz`` [Hz] (P.2040 Eq. 9)."""
    m = RADAR_MATERIALS[material]
    f = frequency_hz / 1e9
    sigma = m.c * f ** m.d
    return complex(m.a * f ** m.b, -17.98 * sigma / f)


def fresnel_te(cos_incidence, eps):
    """Fresnel reflection coefficient for the field perpendicular to the plane of incidence
    (TE, "s") of a half-space of relative permittivity ``eps`` [1], complex.

    ``(cos i - sqrt(eps - sin^2 i)) / (cos i + sqrt(eps - sin^2 i))`` (Balanis, *Advanced
    Engineering Electromagnetics*, 2nd ed., Wiley 2012, Eq. 5-24): -1 for a perfect conductor,
    -1 at grazing incidence for any material. The radar model is scalar and uses this one
    polarisation for every reflection (a horizontally polarised antenna over the road).
    """
    c = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    root = np.sqrt(eps - (1.0 - c * c) + 0j)
    return (c - root) / (c + root)


def rayleigh_roughness(cos_incidence, rms_height_m, wavenumber_rad_m):
    """``g = (2 k h cos i)^2`` [1] (Beckmann & Spizzichino 1963): the coherent reflection keeps
    ``exp(-g)`` of its power."""
    c = np.asarray(cos_incidence, dtype=float)
    return (2.0 * wavenumber_rad_m * rms_height_m * c) ** 2


def diffuse_sigma0(cos_incidence, gamma_abs2, g):
    """Backscatter coefficient of the diffuse part of a rough surface [m^2/m^2]:
    ``4 |Gamma|^2 (1 - exp(-g)) cos^2 i``, a Lambertian surface (``sigma0 = 4 rho cos i cos s``
    for albedo rho, here backscatter, i = s) whose albedo is the power the roughness takes from
    the specular reflection.
    """
    c = np.asarray(cos_incidence, dtype=float)
    return 4.0 * gamma_abs2 * (-np.expm1(-g)) * c * c


def object_materials(class_names_per_object) -> list:
    """Radar material name of each object from its class name."""
    return [CLASS_MATERIAL.get(str(c), DEFAULT_MATERIAL) for c in class_names_per_object]
