"""Material library: common surfaces with their reflectance in the camera's bands and at the
lidar wavelengths, every value cited.

A scenario names an entry as an object's ``material`` (``material = "asphalt_worn"``) without a
``[materials]`` table, or starts its own material from one (``[materials.my_road]`` with
``library = "asphalt_worn"`` and the keys it changes); a ``[materials.NAME]`` table without
``library`` is a material of its own, whatever its name. :func:`resolve` is the one place a
material name is looked up.

Each entry (:class:`LibraryMaterial`) holds:

- ``rgb``: diffuse reflectance at the centres of the camera's red, green and blue filters,
  :data:`CAMERA_BANDS_NM` = 600, 535, 460 nm (``optics.spectral.DEFAULT_RGB_FILTERS``, the
  colour filters the ``ccd_camera`` model uses), as the material's ``color_rgb``;
- ``lidar``: diffuse reflectance at :data:`LIDAR_WAVELENGTHS_NM` = 865 nm (Ouster OS0/OS2
  hardware manuals), 905 nm (Velodyne, Ibeo, SICK data sheets) and 1550 nm (fibre-laser lidars);
- the Oren-Nayar roughness [deg] (0: Lambertian) and the specular (mirror) fraction;
- the semantic class, the source of the values and their ``basis``: ``"measured"`` (a spectral
  library's sample, interpolated linearly to the wavelengths above), ``"derived"`` (a closed
  form or a stated operation on measured values), ``"standard"`` (a standard's specified
  value) or ``"estimate"`` (no measurement at hand: the source says from what).

The six values make the material's spectrum (:meth:`LibraryMaterial.spectrum_m`), which a
lidar reads at its own ``wavelength_m`` (linear between the tabulated wavelengths, held at the
ends: :meth:`hifi.world.scene.Material.reflectance_at`). Between 600 and 865 nm the spectrum is
a straight line, which misses the red edge of vegetation (near 700 nm) and the shape of
anything else there: a lidar between those wavelengths (an 850 nm ToF camera) gets a value
that is only as good as that line. ``reflectivity`` (what a model without a wavelength uses) is
the 905 nm value.

The values are diffuse reflectances (directional-hemispherical reflectance for the laboratory
samples of the libraries and for skin, which includes any specular part: for glossy samples it
overstates what a lidar receives away from the mirror direction; the ASD spectrometer spectra of
bark, sand and cotton are reflectance factors in their instrument's geometry, relative to a
calibrated white panel). Glass and water have no diffuse reflectance worth
the name: what they return is specular (Fresnel's equations at their ``refractive_index``;
``mirror`` holds the value at normal incidence) or comes from behind them; a retroreflector
returns far more than any diffuse surface, toward the source (``retroreflection_cd_lx_m2``,
ASTM D4956). Their ``kind`` (``"glass"``, ``"water"``, ``"retroreflector"``) makes the caster
and the lidars model that (:mod:`hifi.world.surfaces`, :mod:`sensors.surfaces`,
docs/surfaces.md).

``python -m hifi.materials > docs/materials.md`` writes the table with its sources (a test
checks that the shipped file is current). The table of the entries follows.

References
----------
S. K. Meerdink, S. J. Hook, D. A. Roberts, E. A. Abbott, "The ECOSTRESS spectral library
version 1.0", Remote Sensing of Environment 230, 111196 (2019); A. M. Baldridge, S. J. Hook,
C. I. Grove, G. Rivera, "The ASTER spectral library version 2.0", Remote Sensing of
Environment 113, 711-715 (2009). R. F. Kokaly, R. N. Clark, G. A. Swayze et al., "USGS spectral
library version 7", U.S. Geological Survey Data Series 1035 (2017), doi:10.3133/ds1035. C. C.
Cooksey, D. W. Allen, B. K. Tsai, "Reference data set of human skin reflectance", Journal of
Research of NIST 122, 26 (2017). E. W. Spisz et al., NASA TN D-5353 (1969). ASTM D4956,
Standard Specification for Retroreflective Sheeting for Traffic Control. M. Oren, S. K.
Nayar, "Generalization of Lambert's reflectance model", SIGGRAPH 1994. G. M. Hale, M. R.
Querry, "Optical constants of water in the 200-nm to 200-um wavelength region", Applied Optics
12(3), 555-563 (1973). M. Rubin, "Optical properties of soda lime silica glasses", Solar
Energy Materials 12, 275-288 (1985). M. Pomerantz, H. Akbari, J. T. Harvey, "Cooler reflective
pavements give benefits beyond energy savings: durability and illumination", LBNL-45370
(2000). M. E. Kashani, M. J. Olsen, C. E. Parrish, N. Wilson, "A review of LIDAR radiometric
processing: from ad hoc intensity correction to rigorous radiometric calibration", Sensors
15(11), 28099-28128 (2015).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .world.scene import DEFAULT_MATERIAL, Material
from .world.surfaces import GLASS_REFRACTIVE_INDEX, OPTICAL_KEYS, WATER_REFRACTIVE_INDEX

#: Centres of the camera's red, green and blue colour filters [nm], in ``color_rgb`` order:
#: ``optics.spectral.DEFAULT_RGB_FILTERS`` (Gaussian CFA curves at 600, 535 and 460 nm).
CAMERA_BANDS_NM = (600.0, 535.0, 460.0)
#: Lidar wavelengths of the table [nm]: 865 (Ouster OS0/OS2 hardware user manuals), 905
#: (Velodyne, Ibeo and SICK data sheets), 1550 (erbium fibre-laser lidars).
LIDAR_WAVELENGTHS_NM = (865.0, 905.0, 1550.0)
#: The ``basis`` values an entry may have (see the module docstring).
BASES = ("measured", "derived", "standard", "estimate")

_ECOSTRESS = "ECOSTRESS spectral library (Meerdink et al. 2019; ASTER library, Baldridge et al. 2009)"
_INTERP = ("its tabulated spectrum (2 nm steps to 800 nm, 20 nm beyond) interpolated linearly to "
           "460/535/600/865/905/1550 nm")
_USGS = "USGS spectral library version 7 (splib07a, Kokaly et al. 2017)"
_ASD = "its ASD spectrometer spectrum (1 nm steps, 350-2500 nm) read at 460/535/600/865/905/1550 nm"


@dataclass(frozen=True)
class LibraryMaterial:
    """One entry of the library (see the module docstring for the fields' meaning).

    Attributes
    ----------
    name : str
        The name a scenario uses.
    description : str
        What the entry is, in a few words.
    class_name : str
        Semantic class (the material's ``class``).
    rgb : tuple of 3 float
        Diffuse reflectance at :data:`CAMERA_BANDS_NM` (red 600, green 535, blue 460 nm), 0..1.
    lidar : tuple of 3 float
        Diffuse reflectance at :data:`LIDAR_WAVELENGTHS_NM` (865, 905, 1550 nm), 0..1.
    roughness_deg : float
        Oren-Nayar roughness (standard deviation of facet slopes) [deg], 0..60; 0: Lambertian.
    mirror : float
        Fraction reflected specularly, 0..1.
    basis : str
        One of :data:`BASES`.
    source : str
        Where every value comes from.
    retroreflection_cd_lx_m2 : float or None
        Coefficient of retroreflection R_A [cd lx^-1 m^-2] of a retroreflector (at 0.2 deg
        observation, -4 deg entrance), None for other surfaces.
    kind : str
        What the surface is to the rays (:data:`hifi.world.surfaces.KINDS`).
    refractive_index : float or None
        Glass and water: refractive index at 905 nm; None for the other kinds.
    transmittance : float or None
        Glass: internal transmittance of the pane, one pass at normal incidence; None otherwise.
    retroreflection_30deg_cd_lx_m2 : float or None
        Retroreflector: R_A at 0.2 deg observation, +30 deg entrance; None otherwise.
    """

    name: str
    description: str
    class_name: str
    rgb: tuple
    lidar: tuple
    roughness_deg: float
    mirror: float
    basis: str
    source: str
    retroreflection_cd_lx_m2: float | None = None
    kind: str = "opaque"
    refractive_index: float | None = None
    transmittance: float | None = None
    retroreflection_30deg_cd_lx_m2: float | None = None

    def optics(self) -> dict:
        """The entry's optical fields that are set (``kind``'s keys of
        :data:`hifi.world.surfaces.OPTICAL_KEYS`) and its ``mirror``, as the scenario keys."""
        out = {k: getattr(self, k) for k in OPTICAL_KEYS if getattr(self, k) is not None}
        return {**out, "mirror": self.mirror}

    @property
    def reflectivity(self) -> float:
        """Diffuse reflectance at 905 nm, the material's ``reflectivity`` (what a model without a
        wavelength uses)."""
        return self.lidar[1]

    def spectrum_m(self) -> tuple[tuple, tuple]:
        """``(wavelengths_m, reflectance)``: the six tabulated values by increasing wavelength
        [m] (460, 535, 600, 865, 905, 1550 nm)."""
        nm = (*CAMERA_BANDS_NM[::-1], *LIDAR_WAVELENGTHS_NM)
        refl = (*self.rgb[::-1], *self.lidar)
        return tuple(w / 1e9 for w in nm), tuple(float(r) for r in refl)   # = the literals 905e-9 ...

    def material(self, name: str | None = None) -> Material:
        """This entry as a scene :class:`~hifi.world.scene.Material` (named ``name``, by default
        the entry's), with its spectrum."""
        optics = {k: v for k, v in self.optics().items() if k != "mirror"}
        return Material(name or self.name, self.reflectivity, self.mirror, tuple(self.rgb), self.class_name,
                        roughness_rad=float(np.radians(self.roughness_deg)), spectrum=self.spectrum_m(),
                        kind=self.kind, **optics)


def _entry(name, description, class_name, rgb, lidar, basis, source, *, roughness_deg=0.0, mirror=0.0,
           retroreflection_cd_lx_m2=None, kind="opaque", refractive_index=None, transmittance=None,
           retroreflection_30deg_cd_lx_m2=None) -> LibraryMaterial:
    return LibraryMaterial(name, description, class_name, tuple(rgb), tuple(lidar), roughness_deg, mirror, basis,
                           source, retroreflection_cd_lx_m2, kind, refractive_index, transmittance,
                           retroreflection_30deg_cd_lx_m2)


#: The entries, by name. rgb = (R 600, G 535, B 460 nm); lidar = (865, 905, 1550 nm).
LIBRARY: dict[str, LibraryMaterial] = {m.name: m for m in (
    _entry("asphalt_new", "fresh black asphalt concrete", "road",
           rgb=(0.056, 0.048, 0.038), lidar=(0.077, 0.079, 0.104), basis="derived", roughness_deg=11.1,
           source=f"{_ECOSTRESS} sample 0095UUUASP (construction asphalt, gray and black, paving asphalts), "
                  f"{_INTERP}, scaled by 0.694 so that 550 nm gives 0.05, the solar reflectance of freshly "
                  "laid asphalt (Pomerantz, Akbari & Harvey 2000, LBNL-45370: new asphalt about 0.05, aged "
                  "0.10-0.18): the sample is weathered, new asphalt is its binder's black; roughness as "
                  "asphalt_worn"),
    _entry("asphalt_worn", "aged asphalt concrete, aggregate showing", "road",
           rgb=(0.201, 0.172, 0.140), lidar=(0.271, 0.278, 0.362), basis="measured", roughness_deg=11.1,
           source=f"{_ECOSTRESS} sample 0425UUUASP (asphaltic concrete, limestone and quartz aggregate "
                  f"showing, runway side strips), {_INTERP}; roughness 11.1 deg and 905 nm reflectance "
                  "0.27 are also what hifi.analysis.lidar_stats.fit_road_brdf fits to the nuScenes HDL-32E "
                  "road (validation/lidar_real.py)"),
    _entry("concrete", "cement concrete, light", "building",
           rgb=(0.352, 0.323, 0.269), lidar=(0.363, 0.359, 0.334), basis="measured",
           source=f"{_ECOSTRESS} sample 0432UUUCNC (construction concrete, light brown cement cinderblock), "
                  f"{_INTERP}; Lambertian (no roughness measurement)"),
    _entry("brick", "red fired-clay brick", "building",
           rgb=(0.194, 0.124, 0.106), lidar=(0.273, 0.279, 0.341), basis="measured",
           source=f"{_ECOSTRESS} sample 0097UUUBRK (red smooth-faced brick, general construction material), "
                  f"{_INTERP}; red building bricks of the USGS library are a little darker in the near infrared, "
                  "0.23 (GDS353, medium red) and 0.21 (GDS350, dark red) at 905 nm (Kokaly et al. 2017); "
                  "Lambertian (no roughness measurement)"),
    _entry("glass_clear", "clear soda-lime float glass (window)", "window",
           rgb=(0.0, 0.0, 0.0), lidar=(0.0, 0.0, 0.0), basis="derived", mirror=0.0805, kind="glass",
           refractive_index=GLASS_REFRACTIVE_INDEX, transmittance=1.0,
           source="closed form: clean glass scatters no light diffusely; its two faces reflect "
                  "2R/(1+R) = 0.0805 specularly at normal incidence, R = ((n-1)/(n+1))^2 = 0.0419 for "
                  "n = 1.515 (soda-lime glass at 905 nm, Rubin 1985's dispersion formula), and transmit "
                  "(1-R)/(1+R) = 0.920 (kind glass: Fresnel's equations at every incidence, "
                  "docs/surfaces.md); the bulk's absorption is neglected (transmittance 1: the iron of float "
                  "glass absorbs near 1000 nm, Vogt et al. 2016, IEEE J. Photovolt. 6, 111: give a measured "
                  "transmittance for a tinted or thick pane)"),
    _entry("car_paint", "white automotive paint with clear coat", "car",
           rgb=(0.80, 0.80, 0.75), lidar=(0.75, 0.75, 0.55), basis="estimate", mirror=0.04,
           source="estimate (no measured spectrum at hand): white is the commonest car colour (37 % of new "
                  "cars, The Economist 2018, 'The art of reflection'); titanium-dioxide white paint is bright "
                  "through the visible and near infrared, lower at 1550 nm where the binder absorbs; "
                  "carbon-black dark paints reflect a few per cent at 905 nm (Lim et al. 2022, Macromol. "
                  "Res. 30, 'Near-infrared reflective dark-tone bilayer system for LiDAR-based autonomous "
                  "vehicles'), so derive a dark car from this entry; mirror: the clear coat's Fresnel "
                  "reflectance at normal incidence, ((n-1)/(n+1))^2 = 0.04 for n = 1.5"),
    _entry("bare_metal", "weathered bare aluminium", "pole",
           rgb=(0.515, 0.492, 0.454), lidar=(0.550, 0.596, 0.813), basis="measured",
           source=f"{_ECOSTRESS} sample 0384UUUALM (bare aluminum metal, weathered and scratched), {_INTERP} "
                  "(directional-hemispherical, so specular included: the split is not measured, and mirror "
                  "0 keeps it all diffuse, an upper bound on a lidar's return away from the mirror "
                  "direction); polished stainless steel for comparison: 0.61 at 550 nm, 0.67 at 905 nm, "
                  "0.81 at 1550 nm (Spisz et al. 1969, NASA TN D-5353, Table II(a))"),
    _entry("vegetation", "green broadleaf foliage", "vegetation",
           rgb=(0.071, 0.105, 0.059), lidar=(0.552, 0.554, 0.253), basis="measured",
           source=f"{_ECOSTRESS} JHU sample 'decidous.doc' (deciduous trees, leaf piles), {_INTERP}; "
                  "Lambertian"),
    _entry("grass", "green grass", "terrain",
           rgb=(0.075, 0.101, 0.042), lidar=(0.501, 0.509, 0.243), basis="measured",
           source=f"{_ECOSTRESS} JHU sample 'grass.doc' (green rye grass sod), {_INTERP}; Lambertian"),
    _entry("bark", "tree bark", "trunk",
           rgb=(0.108, 0.089, 0.065), lidar=(0.240, 0.260, 0.395), basis="measured",
           source=f"{_ECOSTRESS} UCSB sample VH342 (Pinus coulteri bark, Santa Barbara 2015, bidirectional "
                  f"reflectance), {_ASD}: dark and rising through the visible, no chlorophyll red edge, brighter "
                  "at 1550 nm than at 905 nm (dry wood); Lambertian"),
    _entry("soil", "dark loam", "terrain",
           rgb=(0.067, 0.044, 0.027), lidar=(0.176, 0.185, 0.327), basis="measured",
           source=f"{_ECOSTRESS} soil sample 85P4663 (black loam, mollisol, cryoboroll), {_INTERP}; "
                  "Lambertian"),
    _entry("sand", "dry quartz sand", "terrain",
           rgb=(0.264, 0.234, 0.188), lidar=(0.306, 0.308, 0.416), basis="measured",
           source=f"{_USGS} record 13249, sample Sand_GrndIsle1_no_oil (beach sand of Grand Isle, Louisiana, "
                  f"without oil), {_ASD}: brighter than loam and rising slowly to the short-wave infrared; "
                  "Lambertian"),
    _entry("snow", "granular snow (82 um grains)", "terrain",
           rgb=(0.975, 0.982, 0.985), lidar=(0.874, 0.838, 0.023), basis="measured",
           source=f"{_ECOSTRESS} JHU sample MEDGRAN.SNW (medium granular snow, 82 um effective grain size; "
                  f"modelled below 2.08 um as the library states), {_INTERP}: ice absorbs strongly at "
                  "1550 nm; Lambertian"),
    _entry("road_paint_white", "white road marking paint", "lane_marking",
           rgb=(0.82, 0.82, 0.80), lidar=(0.75, 0.75, 0.60), basis="estimate",
           source="estimate (no measured spectrum at hand): titanium-dioxide white paint as car_paint; "
                  "road markings return several times the intensity of the asphalt around them (Kashani et "
                  "al. 2015); glass beads (retroreflection) not included; Lambertian"),
    _entry("road_paint_yellow", "yellow road marking paint", "lane_marking",
           rgb=(0.62, 0.45, 0.10), lidar=(0.70, 0.70, 0.55), basis="estimate",
           source="estimate (no measured spectrum at hand): a yellow pigment absorbs blue and reflects "
                  "green and red, and is near-infrared transparent over the white filler, so the near "
                  "infrared follows road_paint_white; glass beads not included; Lambertian"),
    _entry("retroreflective_sheeting", "white retroreflective sign sheeting (ASTM D4956 Type I)", "traffic_sign",
           rgb=(0.27, 0.27, 0.27), lidar=(0.27, 0.27, 0.27), basis="standard", retroreflection_cd_lx_m2=70.0,
           kind="retroreflector", retroreflection_30deg_cd_lx_m2=30.0,
           source="ASTM D4956: white sheeting's daytime luminance factor is at least 27 % (the value here, "
                  "taken as flat: an estimate in the near infrared); Type I white's coefficient of "
                  "retroreflection R_A is at least 70 cd/lx/m^2 at 0.2 deg observation, -4 deg entrance and 30 "
                  "at +30 deg entrance (a Lambertian white gives 1/pi = 0.32); taken as grey, the same at "
                  "905 nm (the beads and their metallised backing are not pigments: an estimate); Lambertian "
                  "diffuse part"),
    _entry("skin", "human skin, mean of 100 adults", "person",
           rgb=(0.447, 0.321, 0.282), lidar=(0.594, 0.564, 0.094), basis="derived",
           source="the mean of the 100 subjects of the NIST reference data set of human skin reflectance "
                  "(Cooksey, Allen & Tsai 2017, J. Res. NIST 122, 26, doi:10.18434/M38597: inner forearm, "
                  "directional-hemispherical reflectance factor, 3 nm steps from 250 to 2500 nm), each subject's "
                  "average spectrum interpolated linearly to 460/535/600/865/905/1550 nm; the subjects' 5th to "
                  "95th percentiles are 0.29-0.53 at 600 nm, 0.52-0.60 at 905 nm and 0.08-0.11 at 1550 nm: "
                  "melanin separates skin types in the visible, water absorption makes them alike beyond 1.2 um "
                  "(Jacquez et al. 1955, J. Appl. Physiol. 8, 297); Lambertian"),
    _entry("cotton", "white cotton fabric", "person",
           rgb=(0.610, 0.594, 0.617), lidar=(0.641, 0.640, 0.459), basis="measured",
           source=f"{_USGS} record 18587, sample Cotton_Fabric_GDS437_White (white cotton fabric), {_ASD}: "
                  "bright from the visible to the near infrared, lower at 1550 nm where cellulose and bound water "
                  "absorb (troughs near 1450 and 1940 nm); Lambertian"),
    _entry("water", "clear still water", "water",
           rgb=(0.01, 0.02, 0.03), lidar=(0.0, 0.0, 0.0), basis="derived", mirror=0.020, kind="water",
           refractive_index=WATER_REFRACTIVE_INDEX,
           source="mirror: Fresnel reflectance at normal incidence ((n-1)/(n+1))^2 = 0.020 for n = 1.333 "
                  "(Hale & Querry 1973; 1.327 at 905 nm, IAPWS R9-97, the refractive index of kind water); "
                  "diffuse: the light scattered back out of clear water, a few per cent in the blue-green "
                  "and falling to the red (estimate), none worth the name in the near infrared where water "
                  "absorbs within centimetres (absorption coefficient 0.07 /cm at 900 nm and about 10 /cm at "
                  "1550 nm, Hale & Querry 1973): pure water's volume backscatter at 905 nm, pi beta(180) / "
                  "(2 a) with beta(180) = 2.1e-5 /m/sr (Morel 1974) and a = 6.8 /m, is 5e-6 (0 here; give "
                  "a turbid water its own reflectivity)"),
)}


class UnknownMaterial(ValueError):
    """A material name that is neither a scenario's own nor in the library (nor ``default``)."""


def _suggestion(name: str, names) -> str:
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def library_entry(name: str) -> LibraryMaterial:
    """The library entry ``name``.

    Raises
    ------
    UnknownMaterial
        If there is none; the message points to docs/materials.md and suggests a close name.
    """
    if name in LIBRARY:
        return LIBRARY[name]
    raise UnknownMaterial(f"not a library material{_suggestion(name, LIBRARY)}; the library's names are listed "
                          "in docs/materials.md")


def resolve(name: str, scenario_materials: Mapping[str, Material]) -> Material:
    """The material a scenario means by ``name``: the one place a material name is looked up.

    Parameters
    ----------
    name : str
        An object's ``material`` (or any other reference to a material).
    scenario_materials : mapping of str to Material
        The scenario's own materials (its ``[materials.NAME]`` tables), by name.

    Returns
    -------
    hifi.world.scene.Material
        The scenario's own material of that name; else ``default``
        (:data:`hifi.world.scene.DEFAULT_MATERIAL`); else the library entry of that name
        (:meth:`LibraryMaterial.material`).

    Raises
    ------
    UnknownMaterial
        If the name is none of these; the message names the scenario's materials, says where
        the library's are listed and suggests a close name.
    """
    if name in scenario_materials:
        return scenario_materials[name]
    if name == DEFAULT_MATERIAL.name:
        return DEFAULT_MATERIAL
    if name in LIBRARY:
        return LIBRARY[name].material()
    own = ", ".join(repr(m) for m in [DEFAULT_MATERIAL.name, *scenario_materials])
    hint = _suggestion(name, [*scenario_materials, *LIBRARY])
    raise UnknownMaterial(f"unknown material{hint}; allowed: {own} or a library material (listed in "
                          "docs/materials.md)")


def derive(name: str, base: str, overrides: Mapping) -> Material:
    """A material ``name`` that starts from library entry ``base`` and replaces what
    ``overrides`` gives.

    Parameters
    ----------
    name : str
        The new material's name.
    base : str
        A library entry (:func:`library_entry`).
    overrides : mapping
        Any of ``reflectivity``, ``mirror``, ``color_rgb``, ``class``, ``roughness_deg``, ``kind``
        and the optical keys (:data:`hifi.world.surfaces.OPTICAL_KEYS`; the scenario keys, user
        units). A given ``reflectivity`` replaces the entry's spectrum: the lidars then see that
        value at every wavelength. The entry's optical values that the resulting ``kind`` has
        no use for are dropped (a glass entry made ``kind = "opaque"`` loses its refractive index).

    Returns
    -------
    hifi.world.scene.Material
    """
    entry = library_entry(base)
    unknown = set(overrides) - {"reflectivity", "mirror", "color_rgb", "class", "roughness_deg", "kind", *OPTICAL_KEYS}
    if unknown:
        raise ValueError(f"derive: unknown keys {sorted(unknown)}")
    given = dict(overrides)
    spectrum = None if "reflectivity" in given else entry.spectrum_m()
    kind = given.get("kind", entry.kind)
    # the entry's optical values, then the given ones, of the keys this kind has
    optics = {k: v for k, v in {**entry.optics(), **given}.items()
              if k in OPTICAL_KEYS and kind in OPTICAL_KEYS[k] and v is not None}
    return Material(name, float(given.get("reflectivity", entry.reflectivity)), float(given.get("mirror", entry.mirror)),
                    tuple(given.get("color_rgb", entry.rgb)), given.get("class", entry.class_name),
                    roughness_rad=float(np.radians(given.get("roughness_deg", entry.roughness_deg))),
                    spectrum=spectrum, kind=kind, **optics)


# -- the reference table -----------------------------------------------------------------------
_COLUMNS = ("name", "class", "R 600", "G 535", "B 460", "865 nm", "905 nm", "1550 nm", "roughness [deg]", "mirror",
            "kind", "basis")


def _kind(m: LibraryMaterial) -> str:
    """The ``kind`` column: the kind and its optical values."""
    if m.kind == "glass":
        return f"glass (n {m.refractive_index:g}, transmittance {m.transmittance:g})"
    if m.kind == "water":
        return f"water (n {m.refractive_index:g})"
    if m.kind == "retroreflector":
        return f"retroreflector (R_A {m.retroreflection_cd_lx_m2:g} / {m.retroreflection_30deg_cd_lx_m2:g})"
    return m.kind


def _row(m: LibraryMaterial) -> list[str]:
    return [m.name, m.class_name, *(f"{v:.3g}" for v in m.rgb), *(f"{v:.3g}" for v in m.lidar),
            f"{m.roughness_deg:g}", f"{m.mirror:g}", _kind(m), m.basis]


def _rst_table() -> str:
    rows = [list(_COLUMNS), *(_row(m) for m in LIBRARY.values())]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(c.ljust(w) for c, w in zip(rows[0], widths)).rstrip(), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows[1:]]
    return "\n".join([*lines, rule])


def reference_markdown() -> str:
    """docs/materials.md: the library as Markdown, with every entry's sources."""
    head = ["# Material library", "",
            "Generated from `hifi/materials.py` by `python -m hifi.materials > docs/materials.md` (a test checks "
            "that this file is current). A scenario uses an entry by name, `material = \"asphalt_worn\"` in "
            "`[[objects]]`, or derives its own from one:", "",
            "```toml", "[materials.my_road]", "library = \"asphalt_worn\"   # start from the library entry",
            "reflectivity = 0.12          # replace what differs: a reflectivity replaces the spectrum", "```", "",
            "A `[materials.NAME]` table without `library` is a material of its own, even when NAME is a library "
            "name. Diffuse reflectance, 0..1: R, G, B at the centres of the camera's colour filters "
            "(600, 535, 460 nm, `optics.spectral.DEFAULT_RGB_FILTERS`; the material's `color_rgb`), and at the "
            "lidar wavelengths 865 nm (Ouster), 905 nm (Velodyne, Ibeo, SICK; also the material's "
            "`reflectivity`, for models without a wavelength) and 1550 nm. A lidar reads the six values as a "
            "spectrum at its own `wavelength_m`, linearly between them and held at the ends (so between 600 "
            "and 865 nm, a straight line). `basis`: *measured* (a spectral library's sample), *derived* (a "
            "closed form or a stated operation on measured values), *standard* (a standard's specified "
            "value), *estimate* (no measurement at hand; the source says from what). `kind`: what the surface is "
            "to the rays: glass (a pane the rays pass, Fresnel reflection at its refractive index n), water "
            "(Fresnel reflection, the rays follow it) and retroreflectors (the return concentrated back to the "
            "sensor, R_A) are modelled as [surfaces.md](surfaces.md) describes; `mirror` of glass and water is "
            "their specular reflectance at normal incidence, for reference.", ""]
    table = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    table += ["| " + " | ".join(f"`{c}`" if i == 0 else c for i, c in enumerate(_row(m))) + " |"
              for m in LIBRARY.values()]
    sources = ["", "## Sources", ""]
    for m in LIBRARY.values():
        extra = (f" Coefficient of retroreflection R_A = {m.retroreflection_cd_lx_m2:g} cd/lx/m^2 at -4 deg "
                 f"entrance, {m.retroreflection_30deg_cd_lx_m2:g} at +30 deg (0.2 deg observation)."
                 if m.retroreflection_cd_lx_m2 is not None else "")
        sources.append(f"- `{m.name}` ({m.description}): {m.source}.{extra}")
    refs = ["", "## References", "",
            "- S. K. Meerdink, S. J. Hook, D. A. Roberts, E. A. Abbott, \"The ECOSTRESS spectral library version "
            "1.0\", Remote Sensing of Environment 230, 111196 (2019); A. M. Baldridge, S. J. Hook, C. I. Grove, "
            "G. Rivera, \"The ASTER spectral library version 2.0\", Remote Sensing of Environment 113, 711-715 "
            "(2009). Sample ids as in the library; the values are its directional-hemispherical reflectance "
            "(VH342's, an ASD spectrum: bidirectional reflectance). The sample files were read from copies "
            "redistributed with HELIOS++ (python/pyhelios/data/spectra: 0425UUUASP), with the R package "
            "photobiologyFilters (materials.mspct: 0095UUUASP, 0432UUUCNC, 0384UUUALM, 85P4663, 89P1763, the JHU "
            "grass, deciduous and snow spectra; metals.mspct: NASA TN D-5353), with Quantiloom "
            "(github.com/blitzcolo/Quantiloom-dev, assets/models/cornell_box/cornell_brick_reflectance.csv at "
            "commit 87763195: 0097UUUBRK, as reflectance = percent / 100) and with "
            "speclib (github.com/chrislyonsKY/speclib, tests/data/ecostress at commit 663a057f: the UCSB file of "
            "VH342).",
            "- R. F. Kokaly, R. N. Clark, G. A. Swayze, K. E. Livo, T. M. Hoefen, N. C. Pearson, R. A. Wise, W. M. "
            "Benzel, H. A. Lowers, R. L. Driscoll, A. J. Klein, \"USGS spectral library version 7\", U.S. Geological "
            "Survey Data Series 1035 (2017), doi:10.3133/ds1035 (public domain). Record numbers and sample names as "
            "in splib07a; the ASD spectra (1 nm steps) were read from their conversion in speclib "
            "(github.com/chrislyonsKY/speclib, docs/data/spectra at commit 663a057f) and agree within 0.001 with "
            "Astroray's independent reading of the USGS archive (github.com/HendrikGC02/Astroray, "
            "data/spectral_profiles/profiles.bin at commit cca800d8).",
            "- C. C. Cooksey, D. W. Allen, B. K. Tsai, \"Reference data set of human skin reflectance\", Journal of "
            "Research of the National Institute of Standards and Technology 122, 26 (2017); data set "
            "doi:10.18434/M38597, read from the copy in iadpython (github.com/scottprahl/iadpython, "
            "iadpython/data/M38597.csv at commit dc8c91c0).",
            "- E. W. Spisz, A. J. Weigand, R. L. Bowman, J. R. Jack, \"Solar absorptances and spectral reflectances "
            "of 12 metals for temperatures ranging from 300 to 500 K\", NASA TN D-5353 (1969).",
            "- ASTM D4956, Standard Specification for Retroreflective Sheeting for Traffic Control.",
            "- G. M. Hale, M. R. Querry, \"Optical constants of water in the 200-nm to 200-um wavelength region\", "
            "Applied Optics 12(3), 555-563 (1973).",
            "- M. Rubin, \"Optical properties of soda lime silica glasses\", Solar Energy Materials 12, 275-288 "
            "(1985).",
            "- IAPWS R9-97, \"Release on the refractive index of ordinary water substance as a function of "
            "wavelength, temperature and pressure\" (1997).",
            "- A. Morel, \"Optical properties of pure water and pure sea water\", in N. G. Jerlov, E. Steemann "
            "Nielsen (eds.), Optical Aspects of Oceanography, Academic Press 1974, pp. 1-24.",
            "- M. R. Vogt et al., \"Measurement of the optical constants of soda-lime glasses in dependence of iron "
            "content\", IEEE J. Photovoltaics 6(1), 111-118 (2016).",
            "- M. Pomerantz, H. Akbari, J. T. Harvey, \"Cooler reflective pavements give benefits beyond energy "
            "savings: durability and illumination\", LBNL-45370 (2000).",
            "- M. E. Kashani, M. J. Olsen, C. E. Parrish, N. Wilson, \"A review of LIDAR radiometric processing: "
            "from ad hoc intensity correction to rigorous radiometric calibration\", Sensors 15(11), 28099-28128 "
            "(2015).",
            "- M. Oren, S. K. Nayar, \"Generalization of Lambert's reflectance model\", SIGGRAPH 1994 (the "
            "roughness)."]
    return "\n".join(head + table + sources + refs) + "\n"


__doc__ = (__doc__ or "").replace("The table of the entries follows.", "The entries:\n\n" + _rst_table() + "\n")


if __name__ == "__main__":
    print(reference_markdown(), end="")
