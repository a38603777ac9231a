"""hifi.materials: the library's entries, the spectral reflectance a lidar reads at its
wavelength, scenarios that name or derive library materials, and their errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hifi
from hifi import materials
from hifi.errors import ScenarioError
from hifi.run import scenario
from hifi.world.scene import Material, Scene

DOCS = Path(__file__).resolve().parents[2] / "docs" / "materials.md"
SPECTRA = Path(__file__).resolve().parents[1] / "data" / "material_spectra"


def _wall(material, *, materials_table=None, sensors=(), distance_m=10.0):
    """A 40 x 40 m wall at x = distance_m facing the sensors at the origin (normal -x)."""
    data = {"simulation": {"duration_s": 0.02, "seed": 0},
            "objects": [{"name": "wall", "mesh": "plane", "size_m": [40, 40], "material": material,
                         "position_m": [distance_m, 0, 0], "rpy_deg": [0, -90, 0]}],
            "sensors": list(sensors)}
    if materials_table is not None:
        data["materials"] = materials_table
    return data


def _lidar(name, wavelength_m):
    # A SICK LMS111 line scanner (one scan line in the sensor's xy plane), 1 deg steps.
    return {"name": name, "model": "sick_lms1xx",
            "params": {"wavelength_m": wavelength_m, "angular_step_deg": 1.0}}


# -- the library ---------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", list(materials.LIBRARY.values()), ids=list(materials.LIBRARY))
def test_entry_values_in_range_and_cited(entry):
    # Bounds of the quantities (reflectances 0..1, MATERIAL_PARAMS' 0..60 deg roughness) and a
    # source for every entry: a library sample id where measured, "estimate" where estimated.
    assert len(entry.rgb) == 3 and len(entry.lidar) == 3
    assert all(0.0 <= v <= 1.0 for v in (*entry.rgb, *entry.lidar)), entry
    assert 0.0 <= entry.roughness_deg <= 60.0 and 0.0 <= entry.mirror <= 1.0
    assert entry.class_name and entry.description
    assert entry.basis in materials.BASES
    assert len(entry.source) > 80, entry.source
    if entry.basis == "measured":
        assert "sample" in entry.source and ("ECOSTRESS" in entry.source or "USGS" in entry.source)
    if entry.basis == "estimate":
        assert entry.source.startswith("estimate")
    assert entry.reflectivity == entry.lidar[1]                   # 905 nm, by definition
    m = entry.material()
    assert m.name == entry.name and m.color_rgb == entry.rgb and m.class_name == entry.class_name
    assert m.roughness_rad == pytest.approx(np.radians(entry.roughness_deg), abs=1e-15)


def test_library_covers_the_common_surfaces():
    # The surfaces the library is for (one entry each; names are what scenarios write).
    for name in ("asphalt_new", "asphalt_worn", "concrete", "brick", "glass_clear", "car_paint", "bare_metal",
                 "vegetation", "grass", "bark", "soil", "sand", "snow", "road_paint_white", "road_paint_yellow",
                 "retroreflective_sheeting", "skin", "cotton", "water"):
        assert name in materials.LIBRARY


def test_closed_form_entries():
    # Fresnel reflectance at normal incidence, ((n-1)/(n+1))^2: water n = 1.333 (Hale & Querry
    # 1973) 0.0204; glass at 905 nm, n = 1.5130 - 0.003169 x 0.905^2 + 0.003962 / 0.905^2 = 1.5152
    # (Rubin 1985's dispersion formula), 0.0419 per face, 2R/(1+R) = 0.0805 for both.
    assert materials.LIBRARY["water"].mirror == pytest.approx(((1.333 - 1) / 2.333) ** 2, abs=5e-4)
    n_glass = 1.5130 - 0.003169 * 0.905 ** 2 + 0.003962 / 0.905 ** 2
    assert materials.LIBRARY["glass_clear"].refractive_index == pytest.approx(n_glass, abs=5e-4)
    r = ((n_glass - 1) / (n_glass + 1)) ** 2
    assert materials.LIBRARY["glass_clear"].mirror == pytest.approx(2 * r / (1 + r), abs=5e-4)
    # Fresh asphalt: the weathered sample scaled to 0.05 at 550 nm (Pomerantz et al. 2000):
    # between the 535 and 600 nm values, linearly (15/65 of the way).
    new = materials.LIBRARY["asphalt_new"].material()
    assert new.reflectance_at(550e-9) == pytest.approx(0.05, abs=1e-3)
    # Ice absorbs at 1550 nm: snow is bright at 905 nm and dark at 1550 nm (the measured sample).
    snow = materials.LIBRARY["snow"]
    assert snow.lidar[1] > 0.8 and snow.lidar[2] < 0.05


def _rows(name):
    """A vendored excerpt of a published spectrum: wavelengths [nm] and the reflectance column(s)."""
    data = np.loadtxt(SPECTRA / name, delimiter=",", skiprows=1, ndmin=2)
    return data[:, 0], data[:, 1:]


_LIBRARY_NM = np.array((*materials.CAMERA_BANDS_NM, *materials.LIDAR_WAVELENGTHS_NM))   # R, G, B, 865, 905, 1550


@pytest.mark.parametrize("name, rows", [
    ("brick", "ecostress_0097uuubrk.csv"),         # ECOSTRESS 0097UUUBRK, 2 nm / 20 nm steps
    ("bark", "ecostress_vh342.csv"),               # ECOSTRESS VH342, ASD 1 nm steps
    ("sand", "usgs_13249_sand_grndisle1.csv"),     # USGS splib07a record 13249
    ("cotton", "usgs_18587_cotton_gds437.csv"),    # USGS splib07a record 18587
])
def test_measured_entries_are_their_samples(name, rows):
    # The published rows (tests/data/material_spectra/README.md) interpolated linearly to the
    # library's wavelengths give the entry's six values, rounded to 3 decimals (half a unit).
    nm, refl = _rows(rows)
    expected = np.interp(_LIBRARY_NM, nm, refl[:, 0])
    e = materials.LIBRARY[name]
    assert e.basis == "measured"
    np.testing.assert_allclose((*e.rgb, *e.lidar), expected, atol=5e-4)


def test_skin_is_the_mean_of_the_nist_subjects():
    # NIST's 100 subjects (Cooksey et al. 2017), each interpolated linearly to the library's
    # wavelengths, then averaged; the entry rounds to 3 decimals.
    nm, subjects = _rows("nist_skin_m38597.csv")
    assert subjects.shape == (9, 100)
    per_subject = np.stack([np.interp(_LIBRARY_NM, nm, subjects[:, i]) for i in range(100)])
    e = materials.LIBRARY["skin"]
    assert e.basis == "derived" and "doi:10.18434/M38597" in e.source
    np.testing.assert_allclose((*e.rgb, *e.lidar), per_subject.mean(axis=0), atol=5e-4)
    # Every subject is bright at 905 nm (NIST's minimum there 0.495) and dark at 1550 nm, where
    # water absorbs (NIST's maximum there 0.115): Jacquez et al. (1955).
    assert per_subject[:, 5].max() < 0.12 and per_subject[:, 4].min() > 0.45


def test_entries_still_estimated():
    # Regression test: the entries for which no measured spectrum was found (car paint, road
    # markings); their source says so.
    estimates = {n for n, e in materials.LIBRARY.items() if e.basis == "estimate"}
    assert estimates == {"car_paint", "road_paint_white", "road_paint_yellow"}


def test_docs_page_is_current():
    # Regenerate with: python -m hifi.materials > docs/materials.md
    assert DOCS.read_text(encoding="utf-8") == materials.reference_markdown()


def test_docstring_has_the_table():
    for name in materials.LIBRARY:
        assert f"\n{name} " in materials.__doc__


# -- spectra ---------------------------------------------------------------------------------------
def test_interpolation_closed_form():
    m = Material("m", reflectivity=0.9, spectrum=((800e-9, 900e-9, 1000e-9), (0.2, 0.4, 0.1)))
    assert m.reflectance_at(900e-9) == 0.4                           # at a tabulated wavelength
    assert m.reflectance_at(850e-9) == pytest.approx(0.3, abs=1e-15)  # midway: (0.2 + 0.4) / 2
    assert m.reflectance_at(975e-9) == pytest.approx(0.175, abs=1e-15)  # 3/4 of the way 0.4 -> 0.1
    assert m.reflectance_at(500e-9) == 0.2 and m.reflectance_at(2e-6) == 0.1   # held at the ends


def test_library_spectrum_at_and_between_its_wavelengths():
    e = materials.LIBRARY["asphalt_worn"]
    m = e.material()
    for nm, value in zip((865, 905, 1550), e.lidar):
        assert m.reflectance_at(nm / 1e9) == value
    for nm, value in zip((600, 535, 460), e.rgb):
        assert m.reflectance_at(nm / 1e9) == value
    # 885 nm is midway between 865 and 905 nm; 1227.5 nm midway between 905 and 1550 nm.
    assert m.reflectance_at(885e-9) == pytest.approx((e.lidar[0] + e.lidar[1]) / 2, abs=1e-15)
    assert m.reflectance_at(1227.5e-9) == pytest.approx((e.lidar[1] + e.lidar[2]) / 2, abs=1e-15)


def test_material_without_spectrum_keeps_its_reflectivity():
    m = Material("plain", reflectivity=0.37)
    assert m.reflectance_at(865e-9) == m.reflectance_at(1550e-9) == 0.37


def test_object_table_at_a_wavelength():
    scene = Scene()
    scene.add_material(Material("plain", reflectivity=0.37))
    scene.add_material(materials.LIBRARY["snow"].material())
    import trimesh
    for i, mat in enumerate(("plain", "snow")):
        scene.add_object(f"o{i}", trimesh.creation.box(), mat)
    plain = scene.object_table("reflectivity")
    at_1550 = scene.object_table("reflectivity", wavelength_m=1550e-9)
    # the plain material: bit for bit its reflectivity; snow: its 1550 nm value; no hit: NaN
    assert at_1550[0] == plain[0] == 0.37
    assert at_1550[1] == materials.LIBRARY["snow"].lidar[2] and plain[1] == materials.LIBRARY["snow"].lidar[1]
    assert np.isnan(at_1550[-1])
    with pytest.raises(ValueError, match="reflectivity"):
        scene.object_table("mirror", wavelength_m=905e-9)


@pytest.mark.parametrize("spectrum, match", [
    (((900e-9, 800e-9), (0.1, 0.2)), "increasing"),
    (((800e-9, 900e-9), (0.1, 1.2)), "0..1"),
    (((800e-9, 900e-9), (0.1,)), "one length"),
])
def test_bad_spectrum(spectrum, match):
    with pytest.raises(ValueError, match=match):
        Material("bad", spectrum=spectrum)


# -- scenarios ---------------------------------------------------------------------------------------
def test_scenario_names_a_library_material_without_a_table():
    sc = scenario.validate(_wall("asphalt_worn"), base_dir=".")
    m = sc.materials["asphalt_worn"]
    assert m == materials.LIBRARY["asphalt_worn"].material()
    assert m.spectrum is not None and m.class_name == "road"


def test_own_table_of_a_library_name_overrides_the_library():
    # Without `library`, [materials.NAME] is a material of its own: MATERIAL_PARAMS' defaults.
    sc = scenario.validate(_wall("concrete", materials_table={"concrete": {"reflectivity": 0.2}}), base_dir=".")
    m = sc.materials["concrete"]
    assert (m.reflectivity, m.spectrum, m.class_name, m.color_rgb) == (0.2, None, "unlabelled", (0.5, 0.5, 0.5))


def test_derived_material():
    base = materials.LIBRARY["asphalt_worn"]
    table = {"my_road": {"library": "asphalt_worn", "reflectivity": 0.12},
             "painted": {"library": "asphalt_worn", "color_rgb": [0.1, 0.2, 0.3], "class": "parking"}}
    sc = scenario.validate(_wall("my_road", materials_table=table), base_dir=".")
    road, painted = sc.materials["my_road"], sc.materials["painted"]
    # reflectivity given: every wavelength sees it (no spectrum); the rest from the library
    assert (road.reflectivity, road.spectrum) == (0.12, None)
    assert road.reflectance_at(1550e-9) == 0.12
    assert (road.color_rgb, road.class_name, road.mirror) == (base.rgb, base.class_name, base.mirror)
    assert road.roughness_rad == pytest.approx(np.radians(base.roughness_deg), abs=1e-15)
    # colour and class given: the spectrum stays the library's
    assert painted.color_rgb == (0.1, 0.2, 0.3) and painted.class_name == "parking"
    assert painted.spectrum == base.spectrum_m() and painted.reflectivity == base.reflectivity


def test_unknown_material_error():
    with pytest.raises(ScenarioError) as exc:
        scenario.validate(_wall("asphalt_wron", materials_table={"white": {"reflectivity": 0.8}}), base_dir=".")
    msg = str(exc.value)
    assert "objects[0].material" in msg and "'asphalt_wron'" in msg
    assert "'default', 'white'" in msg and "docs/materials.md" in msg
    assert "did you mean 'asphalt_worn'" in msg
    assert "\n" not in msg and "road_paint_yellow" not in msg        # one line, no list of the library


def test_unknown_library_error():
    with pytest.raises(ScenarioError) as exc:
        scenario.validate(_wall("mine", materials_table={"mine": {"library": "concret"}}), base_dir=".")
    msg = str(exc.value)
    assert "materials.mine.library" in msg and "'concret'" in msg and "docs/materials.md" in msg
    assert "did you mean 'concrete'" in msg


def test_unknown_key_in_a_derived_table():
    with pytest.raises(ScenarioError, match=r"materials\.mine\.colour"):
        scenario.validate(_wall("mine", materials_table={"mine": {"library": "concrete", "colour": 1}}), base_dir=".")


def test_resolve_is_the_lookup():
    own = {"asphalt_worn": Material("asphalt_worn", reflectivity=0.3)}
    assert materials.resolve("asphalt_worn", own) is own["asphalt_worn"]       # the scenario's wins
    assert materials.resolve("default", {}).name == "default"
    assert materials.resolve("sand", {}) == materials.LIBRARY["sand"].material()
    with pytest.raises(materials.UnknownMaterial, match="docs/materials.md"):
        materials.resolve("nothing", own)


# -- lidars read the spectrum at their wavelength ------------------------------------------------------
def _normal_incidence_reflectivity(ds):
    """The reported apparent reflectivity of the return nearest the wall normal, and that
    return's incidence angle [rad] (the wall's normal is -x: cos i = cos(pitch) cos(yaw))."""
    yaw = np.asarray(ds["yaw"].values, dtype=float)
    pitch = np.asarray(ds["pitch"].values, dtype=float) if "pitch" in ds else np.zeros_like(yaw)
    yaw, pitch = (a.reshape(-1) for a in np.broadcast_arrays(yaw, pitch))
    refl = np.asarray(ds["reflectivity"].isel(frame=0).values, dtype=float).reshape(-1)
    inc = np.arccos(np.clip(np.cos(pitch) * np.cos(yaw), -1.0, 1.0))
    k = int(np.nanargmin(np.where(np.isfinite(refl), inc, np.inf)))
    return refl[k], inc[k]


def test_lidars_see_the_library_reflectance_at_their_wavelength():
    # Two SICK LMS111 at 905 and 1550 nm before a wall of the library's worn asphalt, 10 m away.
    # The reported reflectivity is the apparent reflectivity rho (A cos i + B sin^2 i) (1 - mirror)
    # of the lidar equation (sensors.radiometry.oren_nayar_backscatter, Oren & Nayar 1994):
    # computed here in closed form from the library's rho at each wavelength and its roughness.
    e = materials.LIBRARY["asphalt_worn"]
    sim = hifi.Simulation.from_dict(_wall("asphalt_worn", sensors=[_lidar("l905", 905e-9), _lidar("l1550", 1550e-9)]))
    results = sim.run(out=None)
    s2 = np.radians(e.roughness_deg) ** 2
    a, b = 1 - 0.5 * s2 / (s2 + 0.33), 0.45 * s2 / (s2 + 0.09)
    for name, rho in (("l905", e.lidar[1]), ("l1550", e.lidar[2])):
        seen, inc = _normal_incidence_reflectivity(results[name])
        expected = rho * (a * np.cos(inc) + b * np.sin(inc) ** 2) * (1 - e.mirror)
        assert seen == pytest.approx(expected, rel=1e-5), name       # float32 storage


def test_lidar_sees_a_derived_reflectivity_at_every_wavelength():
    table = {"grey": {"library": "concrete", "reflectivity": 0.2}}
    sim = hifi.Simulation.from_dict(_wall("grey", materials_table=table,
                                          sensors=[_lidar("l905", 905e-9), _lidar("l1550", 1550e-9)]))
    results = sim.run(out=None)
    for name in ("l905", "l1550"):
        seen, inc = _normal_incidence_reflectivity(results[name])
        assert seen == pytest.approx(0.2 * np.cos(inc), rel=1e-5), name   # Lambertian: rho cos(i)


def test_tof_camera_reads_the_spectrum_at_850_nm():
    # The SR4000's 850 nm (data sheet) lies between the library's 600 and 865 nm values: the
    # linear interpolation 0.25/0.265 of the way from 600 to 865 nm. Foliage is Lambertian.
    e = materials.LIBRARY["vegetation"]
    rho_850 = e.rgb[0] + (e.lidar[0] - e.rgb[0]) * (850 - 600) / (865 - 600)
    sim = hifi.Simulation.from_dict(_wall("vegetation", distance_m=5.0, sensors=[
        {"name": "tof", "model": "tof_sr4000", "params": {"resolution_x": 9, "resolution_y": 7}}]))
    seen, inc = _normal_incidence_reflectivity(sim.run(out=None)["tof"])
    assert seen == pytest.approx(rho_850 * np.cos(inc), rel=1e-5)
