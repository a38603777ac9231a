"""Optics of the surfaces that are not walls: Fresnel reflection at a smooth dielectric surface
(water), a thin pane's reflectance and transmittance (glass), and what the caster does at each.

A material's ``kind`` (:data:`KINDS`) says which surface it is. The caster
(:mod:`hifi.caster.tracing`) follows a ray through a ``"glass"`` pane (straight on, weighted by
the pane's transmittance, :func:`pane_optics`) and along the reflection off ``"water"``
(weighted by :func:`fresnel_reflectance`), and keeps the first such surface on each path so
that a lidar can add the surface's own echo (:mod:`sensors.surfaces`). ``"retroreflector"``
and ``"opaque"`` stop the ray, as every surface did before.

These are plain functions over numpy arrays; every quantity is unpolarised (the average of the
s and p polarisations, as a lidar's laser diode after its optics is close to), at one
wavelength: the lidar's.

References
----------
- M. Born, E. Wolf, *Principles of Optics*, 7th ed., Cambridge University Press 1999, sec. 1.5
  (Fresnel's formulae) and sec. 7.6 (multiple reflections in a plane-parallel plate).
- M. Rubin, "Optical properties of soda lime silica glasses", Solar Energy Materials 12,
  275-288 (1985): n = 1.5130 - 0.003169 l^2 + 0.003962 l^-2 (l in um), 1.5152 at 905 nm (the
  formula of his grey soda-lime window glass as refractiveindex.info gives it).
- IAPWS R9-97, "Release on the refractive index of ordinary water substance as a function of
  wavelength, temperature and pressure" (1997): n = 1.3269 at 905 nm, 20 deg C, 998.2 kg/m^3.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: What a material is to the rays, its ``kind``: ``"opaque"`` (default: diffuse and mirror
#: fractions, the ray stops or, mirror = 1, reflects), ``"glass"`` (a thin pane the ray passes,
#: :func:`pane_optics`), ``"water"`` (a smooth water surface the ray reflects off,
#: :func:`fresnel_reflectance`; what enters is absorbed), ``"retroreflector"`` (the ray stops;
#: its return is concentrated back to the source, ``retroreflection_cd_lx_m2``).
KINDS = ("opaque", "glass", "water", "retroreflector")

#: Refractive index of soda-lime window glass at 905 nm: Rubin (1985)'s dispersion formula,
#: 1.5130 - 0.003169 x 0.905^2 + 0.003962 / 0.905^2 = 1.5152 (as refractiveindex.info tabulates
#: it for his grey window glass; a tint is absorbers added to the same glass, so the formula is
#: taken for clear glass too: an assumption).
GLASS_REFRACTIVE_INDEX = 1.515

#: Refractive index of liquid water at 905 nm, 20 deg C: IAPWS R9-97, 1.3269 (1.3334 at 589 nm).
WATER_REFRACTIVE_INDEX = 1.327

#: Default refractive index per kind (``None``: the kind has no Fresnel surface).
DEFAULT_REFRACTIVE_INDEX = {"glass": GLASS_REFRACTIVE_INDEX, "water": WATER_REFRACTIVE_INDEX}

#: The optical fields of a material and the kinds they apply to (a scenario giving one for
#: another kind is an error).
OPTICAL_KEYS = {"refractive_index": ("glass", "water"), "transmittance": ("glass",),
                "retroreflection_cd_lx_m2": ("retroreflector",), "retroreflection_30deg_cd_lx_m2": ("retroreflector",)}

#: Codes of :data:`KINDS` in the caster's per-object tables (int8), and of a perfect mirror
#: (an opaque material whose ``mirror`` reaches ``MIRROR_FOLLOW_THRESHOLD``).
OPAQUE, GLASS, WATER, RETROREFLECTOR, MIRROR = 0, 1, 2, 3, 4


class PaneOptics(NamedTuple):
    """Reflectance and transmittance of a thin pane, unpolarised, 0..1 each."""

    reflectance: np.ndarray     #: both faces and the light reflected between them [1]
    transmittance: np.ndarray   #: what leaves the far face, same direction [1]


def _cos_refracted(cos_incidence, refractive_index):
    """cos of the refraction angle inside a medium of index n > 1 entered from air (Snell)."""
    c = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    n = np.asarray(refractive_index, dtype=float)
    return c, n, np.sqrt(1.0 - (1.0 - c * c) / (n * n))


def fresnel_sp(cos_incidence, refractive_index):
    """Fresnel reflectances of the s and p polarisations at a smooth surface from air into a
    medium of index n.

    Parameters
    ----------
    cos_incidence : array_like
        Cosine of the angle of incidence, 0..1 (clipped).
    refractive_index : array_like
        Real refractive index n of the medium (>= 1; air is 1).

    Returns
    -------
    (r_s, r_p) : tuple of ndarray
        ``r_s = ((c - n c_t) / (c + n c_t))^2``, ``r_p = ((n c - c_t) / (n c + c_t))^2`` with
        ``c = cos(i)`` and ``c_t = sqrt(1 - (1 - c^2) / n^2)`` the cosine of the refraction angle
        (Born & Wolf, sec. 1.5.2). Both are 1 at grazing incidence (c = 0) and
        ``((n - 1) / (n + 1))^2`` at normal incidence.

    Notes
    -----
    The medium's absorption index k is neglected in the reflectance (k ~ 1e-7 for glass and
    water at 905 nm changes R by less than 1e-12).
    """
    c, n, ct = _cos_refracted(cos_incidence, refractive_index)
    with np.errstate(invalid="ignore", divide="ignore"):
        rs = ((c - n * ct) / (c + n * ct)) ** 2
        rp = ((n * c - ct) / (n * c + ct)) ** 2
    return rs, rp


def fresnel_reflectance(cos_incidence, refractive_index):
    """Unpolarised Fresnel reflectance of one smooth surface, ``(r_s + r_p) / 2``
    (:func:`fresnel_sp`), 0..1.

    Water at normal incidence, n = 1.327: ``(0.327 / 2.327)^2 = 0.0197``; glass, n = 1.515:
    0.0419 per face.
    """
    rs, rp = fresnel_sp(cos_incidence, refractive_index)
    return 0.5 * (rs + rp)


def pane_optics(cos_incidence, refractive_index, internal_transmittance=1.0) -> PaneOptics:
    """Reflectance and transmittance of a thin plane-parallel pane (both faces), unpolarised.

    Parameters
    ----------
    cos_incidence : array_like
        Cosine of the angle of incidence on the pane, 0..1.
    refractive_index : array_like
        Refractive index of the pane (glass: :data:`GLASS_REFRACTIVE_INDEX`).
    internal_transmittance : array_like
        Transmittance of the pane's bulk for one pass at normal incidence, 0..1, its faces'
        reflections excluded: 1 for a clear pane, lower for a tinted one. An oblique pass is
        longer by ``1 / cos(t)`` (t the refraction angle): ``tau = tau_0 ** (1 / cos t)``.

    Returns
    -------
    PaneOptics
        Per polarisation, with R the face reflectance (:func:`fresnel_sp`) and ``tau`` the
        internal transmittance of the oblique pass, the incoherent sum of the multiple
        reflections between the faces (Born & Wolf, sec. 7.6; the faces' phases average out
        over a pane thicker than the laser's coherence length):

        ``T = (1 - R)^2 tau / (1 - R^2 tau^2)``, ``R_pane = R + (1 - R)^2 R tau^2 / (1 - R^2 tau^2)``,

        then averaged over s and p. A clear pane (tau = 1) at normal incidence:
        ``T = (1 - R) / (1 + R)`` = 0.920 and ``R_pane = 2 R / (1 + R)`` = 0.080 for n = 1.515.

    Notes
    -----
    Thin: the pane's two faces are treated as one surface. The ray that leaves the far face
    is parallel to the incident one, shifted sideways by ``d sin(i - t) / cos(t)``, under 2 mm
    for a 4 mm pane below 50 deg incidence (3.4 mm at 70 deg): less than a lidar's footprint,
    so the caster continues the ray straight on without the shift. The echoes of the two
    faces are ``2 n d`` apart in path (12 mm for 4 mm), far inside one range bin, so the
    pane reflects as one surface of reflectance ``R_pane``.
    """
    rs, rp = fresnel_sp(cos_incidence, refractive_index)
    _, _, ct = _cos_refracted(cos_incidence, refractive_index)
    tau0 = np.asarray(internal_transmittance, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(tau0 > 0.0, tau0 ** (1.0 / ct), 0.0)
    refl = np.zeros(np.broadcast(rs, tau).shape)
    trans = np.zeros_like(refl)
    for r in (rs, rp):
        denom = 1.0 - (r * tau) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            # r = tau = 1 (grazing incidence on a clear pane): everything is reflected.
            t = np.where(denom > 0.0, (1.0 - r) ** 2 * tau / denom, 0.0)
            rr = np.where(denom > 0.0, r + (1.0 - r) ** 2 * r * tau * tau / denom, 1.0)
        trans = trans + 0.5 * t
        refl = refl + 0.5 * rr
    return PaneOptics(refl, trans)


def surface_throughput(kind, cos_incidence, refractive_index, internal_transmittance):
    """The share of a ray's power that goes on along the path the caster follows, one way.

    Parameters
    ----------
    kind : (n,) int
        Code of each surface (:data:`GLASS`, :data:`WATER`, any other: 1).
    cos_incidence, refractive_index, internal_transmittance : (n,) array_like
        As :func:`pane_optics`.

    Returns
    -------
    (n,) float64
        A pane's transmittance (:func:`pane_optics`) for glass, the Fresnel reflectance
        (:func:`fresnel_reflectance`) for water (the reflected ray is the one followed; what
        enters deep water is absorbed within centimetres at 905 nm, absorption coefficient
        6.8 /m: Hale & Querry 1973), 1 otherwise.
    """
    kind = np.asarray(kind)
    out = np.ones(kind.shape)
    glass = kind == GLASS
    if np.any(glass):
        out[glass] = pane_optics(np.asarray(cos_incidence)[glass], np.asarray(refractive_index)[glass],
                                 np.asarray(internal_transmittance)[glass]).transmittance
    water = kind == WATER
    if np.any(water):
        out[water] = fresnel_reflectance(np.asarray(cos_incidence)[water], np.asarray(refractive_index)[water])
    return out
