"""Scenario files (TOML, version 1): parsing and complete validation at load.

Every key is checked before anything runs: unknown keys are errors (a typo is never silently
ignored), types and ranges are checked, names referred to must exist, mesh files must be
readable and every sensor's parameters are validated by its model. Each problem raises one
:class:`~hifi.errors.ScenarioError` naming the file and line, the key path
(``objects[2].material``), the value received and what is allowed.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .. import materials as library
from ..api import meshes
from ..errors import ScenarioError
from ..api.params import Locator, Param, Validator, check_params, parse_key
from ..api.registry import available_models, load_model
from ..api.timebase import parse_utc
from ..world.scene import Material
from ..world.surfaces import OPTICAL_KEYS
from .scene_parts import SceneFiles

SUPPORTED_VERSIONS = (1,)

SIMULATION_PARAMS = {
    "duration_s": Param("float", minimum=0.0, exclusive_minimum=True, doc="simulated span [s]"),
    "start_utc": Param("any", default="2000-01-01T12:00:00Z",
                       doc="ISO 8601 UTC epoch of t = 0, e.g. \"2024-05-01T12:00:00Z\""),
    "seed": Param("int", default=0, minimum=0, doc="seed of every random stream"),
    "origin": Param("any", default=None, doc="{ lat_deg, lon_deg, height_m } of the scene frame origin"),
    "threads": Param("int", default=None, minimum=1,
                     doc="threads the run computes on (model steps at once and the casts inside them; results "
                         "do not depend on it); default the cores this process may run on (its CPU affinity); "
                         "HIFI_THREADS overrides it; more than the affinity allows warns (docs/performance.md)"),
}
ORIGIN_PARAMS = {
    "lat_deg": Param("float", minimum=-90.0, maximum=90.0, doc="geodetic latitude [deg]"),
    "lon_deg": Param("float", minimum=-180.0, maximum=180.0, doc="longitude [deg]"),
    "height_m": Param("float", default=0.0, doc="ellipsoidal height [m]"),
}
MATERIAL_PARAMS = {
    "library": Param("str", default=None,
                     doc="a library material (hifi.materials, listed in docs/materials.md) this one starts from: "
                         "the keys given here replace its values, the others are the library's (not the defaults "
                         "of this table); a reflectivity given here also replaces its spectrum, so every lidar "
                         "sees that value. Without it the table is a material of its own, even under a library "
                         "name"),
    "reflectivity": Param("float", default=0.5, minimum=0.0, maximum=1.0,
                          doc="diffuse reflectance at the lidar wavelength, 0..1 (every lidar wavelength: only a "
                              "library material has a spectrum)"),
    "mirror": Param("float", default=0.0, minimum=0.0, maximum=1.0,
                    doc="fraction reflected specularly, 0..1 (1: perfect mirror)"),
    "color_rgb": Param("color", default=(0.5, 0.5, 0.5), doc="diffuse reflectance in R, G, B, 0..1"),
    "class": Param("str", default="unlabelled", doc="semantic class name"),
    "roughness_deg": Param("float", default=0.0, minimum=0.0, maximum=60.0,
                           doc="Oren-Nayar roughness (std of facet slopes) [deg]; 0: Lambertian. Rough "
                               "surfaces return more light at grazing incidence (asphalt: about 11, fitted "
                               "to the nuScenes HDL-32E road, validation/lidar_real.py)"),
    "kind": Param("str", default="opaque", choices=("opaque", "glass", "water", "retroreflector"),
                  doc="what the surface is to the rays (docs/surfaces.md): 'opaque' (the diffuse and mirror "
                      "fractions); 'glass' a thin pane the rays pass, reflecting by Fresnel's equations on both "
                      "faces; 'water' a smooth water surface, Fresnel reflection, the rays follow the reflection; "
                      "'retroreflector' retroreflective sheeting, its return concentrated back to the sensor"),
    "refractive_index": Param("float", default=None, minimum=1.0, maximum=4.0,
                              doc="glass and water: refractive index at the lidar wavelength; default 1.515 for "
                                  "glass (soda-lime, Rubin 1985, at 905 nm) and 1.327 for water (IAPWS R9-97, "
                                  "905 nm, 20 C)"),
    "transmittance": Param("float", default=None, minimum=0.0, maximum=1.0,
                           doc="glass: internal transmittance of the pane's bulk, one pass at normal incidence, "
                               "its faces' reflections excluded, 0..1; default 1 (clear), lower for a tinted pane"),
    "retroreflection_cd_lx_m2": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                                      doc="retroreflector: coefficient of retroreflection R_A [cd/(lx m^2)] at 0.2 "
                                          "deg observation, -4 deg entrance (ASTM D4956; Type I white sheeting "
                                          "70)"),
    "retroreflection_30deg_cd_lx_m2": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                                            doc="retroreflector: R_A at 0.2 deg observation, +30 deg entrance (ASTM "
                                                "D4956; Type I white 30), how the return falls with the entrance "
                                                "angle; default 30/70 of retroreflection_cd_lx_m2"),
}
OBJECT_KEYS = {
    "name": Param("str", doc="unique name"),
    "mesh": Param("str", doc="generator (" + ", ".join(meshes.GENERATORS) + ") or mesh file"),
    "material": Param("str", default="default",
                      doc="a [materials.NAME] table, \"default\", or a library material (docs/materials.md)"),
    "position_m": Param("vec3", default=None, doc="position in the parent frame [m]"),
    "rpy_deg": Param("vec3", default=None, doc="roll, pitch, yaw about the parent's x, y, z [deg]"),
    "track": Param("any", default=None, doc="list of { t_s, position_m, rpy_deg } keyframes"),
    "interpolation": Param("str", default="linear", choices=("linear", "spline"),
                           doc="how `track` moves between keyframes: 'linear' (linear position, slerp "
                               "rotation) or 'spline' (C2 cubic spline, zero velocity at the first and "
                               "last keyframe, and a C2 rotation spline: twice differentiable, as an "
                               "`imu` needs; hifi.world.motion.Track)"),
    "parent": Param("str", default=None, doc="an earlier object this one rides on"),
    "vehicle": Param("any", default=None,
                     doc="{ wheelbase_m, max_steer_deg, max_speed_m_s, max_accel_m_s2, rate_hz, follow_ground }: a "
                         "body driven by drive commands (hifi.world.vehicle; {} is a car), instead of a track"),
}
KEYFRAME_PARAMS = {
    "t_s": Param("float", doc="keyframe time [s]"),
    "position_m": Param("vec3", doc="position [m]"),
    "rpy_deg": Param("vec3", default=(0.0, 0.0, 0.0), doc="roll, pitch, yaw [deg]"),
}
SENSOR_KEYS = {
    "name": Param("str", doc="unique name"),
    "model": Param("str", doc="a registered model"),
    "rate_hz": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                     doc="the model's own rate [Hz]"),
    "parent": Param("str", default=None, doc="the object the sensor rides on"),
    "position_m": Param("vec3", default=(0.0, 0.0, 0.0), doc="mount position [m]"),
    "rpy_deg": Param("vec3", default=(0.0, 0.0, 0.0), doc="mount roll, pitch, yaw [deg]"),
    "params": Param("any", default=None, doc="model parameters"),
}
OUTPUT_PARAMS = {
    "motion_rate_hz": Param("float", default=100.0, minimum=0.0, exclusive_minimum=True,
                            doc="rate of the ground-truth poses in motion.nc [Hz]"),
}
WEATHER_PARAMS = {
    "fog_visibility_m": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                              doc="fog: meteorological visibility V [m], alpha = 3.912 / V at 550 nm (Koschmieder, "
                                  "2 % contrast) with Kim et al.'s wavelength exponent; valid 20 m to 50 km; "
                                  "absent: clear air"),
    "rain_rate_mm_h": Param("float", default=0.0, minimum=0.0,
                            doc="rain rate [mm/h]: Marshall-Palmer drops, extinction 3.65e-4 R^0.63 /m; "
                                "valid 0.1-150 mm/h"),
    "snowfall_rate_mm_h": Param("float", default=0.0, minimum=0.0,
                                doc="snowfall rate, water equivalent [mm/h]: Gunn-Marshall flakes (melted "
                                    "diameters: a lower bound of the extinction); valid 0.1-10 mm/h"),
}
#: Where each weather model is valid (sensors.weather; a value outside warns): Kim et al.
#: (2001) cover haze to dense fog; Marshall-Palmer was fitted to 1-23 mm/h and is used to
#: cloudbursts; Gunn-Marshall to 0.1-2.5 mm/h of snow (water equivalent), used to 10.
WEATHER_VALID = {"fog_visibility_m": (20.0, 50_000.0), "rain_rate_mm_h": (0.1, 150.0),
                 "snowfall_rate_mm_h": (0.1, 10.0)}
MODEL_KEYS = {
    "name": Param("str", doc="unique name (objects, sensors and models share one namespace); its dataset is "
                             "DIR/<name>.nc"),
    "model": Param("str", doc="a registered model that is not a sensor (waypoint_driver, ...)"),
    "rate_hz": Param("float", default=None, minimum=0.0, exclusive_minimum=True, doc="the model's own rate [Hz]"),
    "params": Param("any", default=None, doc="model parameters"),
}
TOP_KEYS = ("version", "simulation", "materials", "objects", "sensors", "output", "weather", "models", "scene_files",
            "sweep")


@dataclass
class ObjectSpec:
    index: int
    name: str
    mesh: str
    mesh_params: dict
    material: str
    position_m: tuple
    rpy_deg: tuple
    track: list | None
    parent: str | None
    mesh_path: Path | None = None
    interpolation: str = "linear"
    vehicle: dict | None = None
    #: The mesh read from ``mesh_path`` while validating, handed to the scene (read once; the
    #: scene takes it, and this is None again).
    loaded_mesh: Any = field(default=None, repr=False, compare=False)
    #: A mesh file loaded with parts: its nodes (:class:`hifi.run.scene_parts.PartSpec`, parents
    #: first), each a body riding on this object's; None: one mesh, as ``loaded_mesh``.
    parts: list | None = field(default=None, repr=False, compare=False)

    @property
    def object_names(self) -> list[str]:
        """Names of the scene objects (meshes, object ids) this entry makes: its own, or its
        parts' that hold triangles, in object-id order."""
        if self.parts is None:
            return [self.name]
        return [p.name for p in self.parts if p.n_faces]


@dataclass
class SensorSpec:
    index: int
    name: str
    model: str
    model_cls: type
    rate_hz: float | None
    parent: str | None
    position_m: tuple
    rpy_deg: tuple
    params: dict


@dataclass
class ModelSpec:
    index: int
    name: str
    model: str
    model_cls: type
    rate_hz: float | None
    params: dict


@dataclass
class Scenario:
    """A validated scenario."""

    source: str
    base_dir: Path
    text: str
    duration_s: float
    start_utc: str
    seed: int
    origin: dict
    #: name -> :class:`~hifi.world.scene.Material`: the scenario's own ``[materials.NAME]``
    #: tables in their order, then the library materials its objects name, in order of first use.
    materials: dict
    objects: list
    sensors: list
    motion_rate_hz: float
    raw: dict = field(repr=False, default_factory=dict)
    models: list = field(default_factory=list)
    weather: dict = field(default_factory=lambda: {"fog_visibility_m": None, "rain_rate_mm_h": 0.0,
                                                   "snowfall_rate_mm_h": 0.0})
    #: name -> :class:`~hifi.world.scene.Material` derived from scene files' own materials, for
    #: parts that ``[scene_files.STEM] materials`` does not map (hifi.run.scene_parts).
    part_materials: dict = field(default_factory=dict)
    #: One line each: what :func:`hifi.run.checks.warn_scene` warns about scene files.
    part_warnings: list = field(default_factory=list)
    #: The ``[sweep]`` table (:class:`hifi.run.sweep_table.Sweep`), or None: a plain scenario. The
    #: scenario itself is the sweep's base, its values as written.
    sweep: Any = None
    #: ``[simulation] threads``, or None (:func:`hifi.runtime.threads.resolve_threads`).
    threads: int | None = None


def _path_str(parts) -> str:
    s = ""
    for p in parts:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else str(p))
    return s


def where(sc: Scenario, key: str) -> str:
    """``file:line: key`` of a key of a validated scenario (as errors name it), for warnings."""
    line = Locator(sc.text).find(parse_key(key))
    return f"{sc.source}:{line}: {key}" if line is not None else f"{sc.source}: {key}"


def located(sc: Scenario, exc: ScenarioError) -> ScenarioError:
    """``exc`` (raised without a file, e.g. by a model's scene check) with the scenario's file and
    the line of its key."""
    line = Locator(sc.text).find(parse_key(exc.key)) if exc.key else None
    return ScenarioError(exc.reason, file=sc.source, key=exc.key, value=exc.value, line=line)


def load(path) -> Scenario:
    """Read and validate a scenario file."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("file not found", file=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"cannot be read as UTF-8 text ({exc})", file=source) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"not valid TOML: {exc}", file=source) from None
    return validate(data, base_dir=path.parent, source=source, text=text)


def validate(data: dict, *, base_dir, source: str = "<dict>", text: str | None = None) -> Scenario:
    """Validate a scenario given as nested dicts (as parsed from TOML)."""
    v = Validator(source, text)
    base_dir = Path(base_dir)
    if not isinstance(data, dict):
        raise v.error("a scenario must be a table (dict)", value=data)
    for key in data:
        if key not in TOP_KEYS:
            raise v.error(f"unknown top-level key; allowed: {', '.join(TOP_KEYS)}", key=key, value=data[key])
    version = data.get("version", 1)
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise v.error(f"unsupported scenario version; supported: {SUPPORTED_VERSIONS}", key="version", value=version)

    sim_raw = data.get("simulation")
    if sim_raw is None:
        raise v.error("required table [simulation] is missing (it needs at least duration_s)", key="simulation")
    sim = check_params(sim_raw, SIMULATION_PARAMS, v.error, "simulation")
    try:
        start = parse_utc(sim["start_utc"])
    except (ValueError, TypeError):
        raise v.error("expected an ISO 8601 UTC time such as \"2024-05-01T12:00:00Z\"",
                      key="simulation.start_utc", value=sim["start_utc"]) from None
    start_utc = start.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    origin = {"lat_deg": 0.0, "lon_deg": 0.0, "height_m": 0.0}
    if sim["origin"] is not None:
        origin = check_params(sim["origin"], ORIGIN_PARAMS, v.error, "simulation.origin")

    mats_raw = data.get("materials", {})
    if not isinstance(mats_raw, dict):
        raise v.error("expected tables [materials.NAME]", key="materials", value=mats_raw)
    materials = {name: _material(v, name, table) for name, table in mats_raw.items()}

    scene_files = SceneFiles(v, data.get("scene_files", {}), materials, base_dir)
    objs_raw = data.get("objects", [])
    if not isinstance(objs_raw, list):
        raise v.error("expected an array of tables [[objects]]", key="objects", value=objs_raw)
    names: dict[str, str] = {}
    objects = []
    for i, raw in enumerate(objs_raw):
        objects.append(_object(v, i, raw, materials, names, base_dir, scene_files, origin))
    part_warnings = scene_files.finish(objects)

    sens_raw = data.get("sensors", [])
    if not isinstance(sens_raw, list):
        raise v.error("expected an array of tables [[sensors]]", key="sensors", value=sens_raw)
    sensors = []
    span = {"start_utc": start_utc, "duration_s": sim["duration_s"]}
    for i, raw in enumerate(sens_raw):
        sensors.append(_sensor(v, i, raw, names, base_dir, span))

    models_raw = data.get("models", [])
    if not isinstance(models_raw, list):
        raise v.error("expected an array of tables [[models]]", key="models", value=models_raw)
    models = [_model(v, i, raw, names, base_dir) for i, raw in enumerate(models_raw)]
    for spec in models:                  # references to objects, sensors and other models
        check = getattr(spec.model_cls, "check_references", None)
        if check is not None:
            kinds = {n: w.split("[")[0] for n, w in names.items()}
            vehicles = {o.name for o in objects if o.vehicle is not None}
            _model_check(v, f"models[{spec.index}]", spec.params,
                         lambda spec=spec: check(spec.params, names=kinds, vehicles=vehicles))
    out = check_params(data.get("output", {}), OUTPUT_PARAMS, v.error, "output")
    weather = check_params(data.get("weather", {}), WEATHER_PARAMS, v.error, "weather")
    sweep = None
    if "sweep" in data:
        from .sweep_table import parse_sweep
        sweep = parse_sweep(data["sweep"], data, v.error)
    if text is None:
        import json
        text = "# scenario built in code (JSON form)\n# " + json.dumps(data, default=str)
    return Scenario(source, base_dir, text, sim["duration_s"], start_utc, sim["seed"], origin,
                    materials, objects, sensors, out["motion_rate_hz"], raw=data, weather=weather, models=models,
                    part_materials=scene_files.derived, part_warnings=part_warnings, sweep=sweep,
                    threads=sim["threads"])


def _material(v: Validator, name: str, table: Any) -> Material:
    """One ``[materials.NAME]`` table: a material of its own (the defaults of
    :data:`MATERIAL_PARAMS` for what it does not give) or, with ``library``, derived from that
    library entry (:func:`hifi.materials.derive`)."""
    key = f"materials.{name}"
    params = check_params(table, MATERIAL_PARAMS, v.error, key)
    if params["library"] is None:
        kind = params["kind"]
        _check_optics(v, key, table, kind, params)
        optics = {k: params[k] for k in OPTICAL_KEYS if params[k] is not None}
        return Material(name, params["reflectivity"], params["mirror"], tuple(params["color_rgb"]), params["class"],
                        roughness_rad=float(np.radians(params["roughness_deg"])), kind=kind, **optics)
    try:
        entry = library.library_entry(params["library"])
    except library.UnknownMaterial as exc:
        raise v.error(str(exc), key=f"{key}.library", value=params["library"]) from None
    kind = table.get("kind", entry.kind)
    _check_optics(v, key, table, kind, {**entry.optics(), **{k: params[k] for k in table if k != "library"}})
    return library.derive(name, params["library"], {k: params[k] for k in table if k != "library"})


def _check_optics(v: Validator, key: str, table: Mapping, kind: str, params: Mapping) -> None:
    """The optical keys agree with the material's ``kind`` (:data:`OPTICAL_KEYS`); a glass or
    water surface is not a perfect mirror; a retroreflector has its R_A, and its R_A at 30 deg
    entrance is not above the one at -4 deg."""
    for k, kinds in OPTICAL_KEYS.items():
        if k in table and kind not in kinds:
            raise v.error(f"applies to kind = {' or '.join(repr(x) for x in kinds)} only (this material's kind is "
                          f"{kind!r})", key=f"{key}.{k}", value=table[k])
    if kind in ("glass", "water") and params.get("mirror", 0.0) >= 1.0:
        raise v.error(f"a {kind} surface reflects by Fresnel's equations; allowed: mirror < 1 (or kind = 'opaque' for "
                      "a perfect mirror)", key=f"{key}.mirror", value=params["mirror"])
    r_a = params.get("retroreflection_cd_lx_m2")
    if kind == "retroreflector" and r_a is None:
        raise v.error("a retroreflector needs its coefficient of retroreflection: retroreflection_cd_lx_m2 > 0 "
                      "[cd/(lx m^2)] (ASTM D4956)", key=f"{key}.kind", value=kind)
    r30 = params.get("retroreflection_30deg_cd_lx_m2")
    if kind == "retroreflector" and r30 is not None and r30 > r_a:
        raise v.error(f"must be <= retroreflection_cd_lx_m2 = {r_a!r} (the return falls with the entrance angle)",
                      key=f"{key}.retroreflection_30deg_cd_lx_m2", value=r30)


def _object(v: Validator, i: int, raw: Any, materials: dict, names: dict, base_dir: Path,
            scene_files: SceneFiles, origin: dict | None = None) -> ObjectSpec:
    key = f"objects[{i}]"
    if not isinstance(raw, dict):
        raise v.error("expected a table", key=key, value=raw)
    fixed = {k: raw[k] for k in raw if k in OBJECT_KEYS}
    extra = {k: raw[k] for k in raw if k not in OBJECT_KEYS}
    for req in ("name", "mesh"):
        if req not in raw:
            raise v.error(f"required key is missing ({OBJECT_KEYS[req].doc})", key=f"{key}.{req}")
    mesh = raw["mesh"]
    if not isinstance(mesh, str):
        raise v.error(f"expected a string: {OBJECT_KEYS['mesh'].doc}", key=f"{key}.mesh", value=mesh)
    mesh_path = None
    with_parts = False
    if mesh in meshes.GENERATORS:
        gen_spec = meshes.GENERATORS[mesh][1]
        for k in extra:
            if k not in gen_spec:
                allowed = ", ".join(sorted(set(OBJECT_KEYS) | set(gen_spec)))
                raise v.error(f"unknown key for mesh = {mesh!r}; allowed: {allowed}", key=f"{key}.{k}", value=raw[k])
        mesh_params = check_params(extra, gen_spec, v.error, key)
        if mesh == "tree" and mesh_params["crown_height_m"] > mesh_params["height_m"]:
            raise v.error(f"must be <= height_m ({mesh_params['height_m']!r}): the crown ends at the tree's top",
                          key=f"{key}.crown_height_m", value=mesh_params["crown_height_m"])
        if mesh == "dem":
            mesh_params = _dem_params(v, key, mesh_params, base_dir, origin)
        else:
            _resolve_files(v, mesh_params, gen_spec, base_dir, key)    # files beside the scenario
            if mesh in meshes.PLACED_GENERATORS:
                mesh_params["origin"] = dict(origin or {"lat_deg": 0.0, "lon_deg": 0.0, "height_m": 0.0})
                _placed_check(v, key, mesh, mesh_params, extra)
    else:
        suffix = Path(mesh).suffix.lower()
        if suffix not in meshes.MESH_FILE_SUFFIXES:
            raise v.error("unknown mesh: expected a generator (" + ", ".join(meshes.GENERATORS)
                          + ") or a mesh file ending in " + ", ".join(meshes.MESH_FILE_SUFFIXES),
                          key=f"{key}.mesh", value=mesh)
        for k in extra:
            if k not in meshes.FILE_PARAMS:
                allowed = ", ".join(sorted(set(OBJECT_KEYS) | set(meshes.FILE_PARAMS)))
                raise v.error(f"unknown key for a mesh file; allowed: {allowed}", key=f"{key}.{k}", value=raw[k])
        mesh_params = check_params(extra, meshes.FILE_PARAMS, v.error, key)
        mesh_path = (base_dir / mesh).resolve()
        if not mesh_path.is_file():
            raise v.error(f"mesh file not found (looked for {mesh_path})", key=f"{key}.mesh", value=mesh)
        with_parts = scene_files.wants_parts(mesh, mesh_params["parts"])
        if with_parts:
            from ..world.scene_files import PART_FILE_SUFFIXES
            why = "parts = true" if mesh_params["parts"] else f"[scene_files.{Path(mesh).stem}] names it"
            if suffix not in PART_FILE_SUFFIXES:
                raise v.error(f"only glTF and OBJ files ({', '.join(PART_FILE_SUFFIXES)}) have parts, and {why}; "
                              f"set parts = false to load it as one mesh", key=f"{key}.mesh", value=mesh)
            if "material" in raw:
                raise v.error(f"a file loaded with parts ({why}) takes its materials from [scene_files."
                              f"{Path(mesh).stem}] materials and from the file; map them there (\"*\" = "
                              f"{raw['material']!r} maps them all), or set parts = false",
                              key=f"{key}.material", value=raw["material"])
    spec = check_params(fixed, OBJECT_KEYS, v.error, key)
    name = _unique_name(v, key, spec["name"], names)
    try:
        resolved = library.resolve(spec["material"], materials)
    except library.UnknownMaterial as exc:
        raise v.error(str(exc), key=f"{key}.material", value=spec["material"]) from None
    if resolved.name not in materials and resolved.name != "default":
        materials[resolved.name] = resolved        # a library material: the scene adds it after the scenario's
    parent = spec["parent"]
    if parent is not None and (parent not in names or not names[parent].startswith("objects")):
        earlier = ", ".join(repr(n) for n, w in names.items() if w.startswith("objects")) or "none"
        raise v.error(f"parent must be an earlier object; allowed: {earlier}", key=f"{key}.parent", value=parent)
    track = None
    if spec["track"] is not None:
        if spec["position_m"] is not None or spec["rpy_deg"] is not None:
            raise v.error("give either track or position_m/rpy_deg, not both", key=f"{key}.track", value=spec["track"])
        track = _track(v, f"{key}.track", spec["track"])
    elif "interpolation" in fixed:
        raise v.error("interpolation applies to a track; this object has none", key=f"{key}.interpolation",
                      value=fixed["interpolation"])
    vehicle = None
    if spec["vehicle"] is not None:
        from ..world.vehicle import VEHICLE_PARAMS, resolve_vehicle
        if track is not None or parent is not None:
            raise v.error("a vehicle is driven by commands: give it no track and no parent", key=f"{key}.vehicle",
                          value=spec["vehicle"])
        if not SENSOR_NAME_PATTERN.fullmatch(name):
            raise v.error("a vehicle writes DIR/<name>.nc: expected letters, digits, '_' and '-'", key=f"{key}.name",
                          value=name)
        if not isinstance(spec["vehicle"], dict):
            raise v.error("expected a table { wheelbase_m, ... } ({} for the defaults)", key=f"{key}.vehicle",
                          value=spec["vehicle"])
        vehicle = resolve_vehicle(check_params(spec["vehicle"], VEHICLE_PARAMS, v.error, f"{key}.vehicle"),
                                  v.error, f"{key}.vehicle")
    names[name] = key
    loaded = parts = None
    if mesh_path is not None:
        try:
            if with_parts:
                from ..world.scene_files import read_scene_file
                parts = scene_files.parts(i, name, mesh, mesh_path, read_scene_file(mesh_path, mesh_params["scale"]),
                                          names)
            else:
                loaded = meshes.load_mesh_file(mesh_path, mesh_params["scale"])
        except ValueError as exc:
            raise v.error(f"cannot load mesh file {mesh_path}: {exc}", key=f"{key}.mesh", value=mesh) from None
        except MemoryError:
            raise v.error(f"out of memory while loading mesh file {mesh_path}; use a coarser mesh",
                          key=f"{key}.mesh", value=mesh) from None
    return ObjectSpec(i, name, mesh, mesh_params, spec["material"], spec["position_m"] or (0.0, 0.0, 0.0),
                      spec["rpy_deg"] or (0.0, 0.0, 0.0), track, parent, mesh_path, spec["interpolation"],
                      vehicle, loaded, parts)


def _dem_params(v: Validator, key: str, params: dict, base_dir: Path, origin: dict | None) -> dict:
    """A ``dem`` object's parameters for its generator: ``file`` resolved against the scenario's
    folder and the scenario's ``origin`` added; the file's tags are read and its samples chosen
    (:func:`hifi.api.meshes.dem_grid`), so a bad DEM stops loading, before any pixel is read.

    A DEM that does not say which heights it holds, on an object without ``vertical_crs``, is
    taken as ellipsoidal and gets a :class:`~hifi.errors.ScenarioWarning` (:mod:`hifi.api.dem`,
    "Heights")."""
    import warnings
    from ..errors import ScenarioWarning
    given = params["file"]
    origin = dict(origin or {"lat_deg": 0.0, "lon_deg": 0.0, "height_m": 0.0})
    params = {**params, "file": str((base_dir / given).resolve()), "origin": origin}
    try:
        grid = meshes.dem_grid(params)
    except ScenarioError as exc:
        value = given if exc.key == "file" else exc.value
        raise v.error(exc.reason, key=f"{key}.{exc.key}", value=value) from None
    if not grid.vertical_declared:
        warnings.warn(str(v.error(
            "the DEM does not say which heights it holds (no VerticalCSTypeGeoKey): they are taken as WGS 84 "
            "ellipsoidal heights, as [simulation] origin.height_m; if they are above a geoid (most DEMs: EGM96, "
            "EGM2008, a national height system), set vertical_crs to its EPSG code (e.g. 'EPSG:3855', EGM2008 "
            "height), else vertical_crs = 'ellipsoidal'", key=f"{key}.file", value=given)), ScenarioWarning,
            stacklevel=2)
    return params


def _placed_check(v: Validator, key: str, mesh: str, params: dict, given: dict) -> None:
    """Read the file of a generator placed on the Earth (``mesh = "osm"``) and count its
    triangles, so that a file that is no OSM file, an origin outside it or nothing in range is a
    scenario error at load (the read is kept for the memory check and the build)."""
    from ..api.osm import OsmError
    try:
        meshes.generator_faces(mesh, params)
    except ImportError as exc:
        raise v.error(str(exc), key=f"{key}.mesh", value=mesh) from None
    except OsmError as exc:
        if exc.param == "origin":
            raise v.error(exc.reason, key="simulation.origin", value=exc.value) from None
        raise v.error(exc.reason, key=f"{key}.{exc.param}", value=given.get(exc.param, exc.value)) from None


def _unique_name(v: Validator, key: str, name: str, names: dict) -> str:
    """A non-empty name not yet used by an object or a sensor (they share one namespace)."""
    if not name:
        raise v.error("expected a non-empty name", key=f"{key}.name", value=name)
    if name in names:
        raise v.error(f"name already used by {names[name]}; names of objects and sensors must be unique",
                      key=f"{key}.name", value=name)
    return name


def _track(v: Validator, key: str, raw: Any) -> list:
    if not isinstance(raw, list) or not raw:
        raise v.error("expected a non-empty list of { t_s, position_m, rpy_deg } keyframes", key=key, value=raw)
    frames = []
    for j, kf in enumerate(raw):
        frames.append(check_params(kf, KEYFRAME_PARAMS, v.error, f"{key}[{j}]"))
        if j and frames[j]["t_s"] <= frames[j - 1]["t_s"]:
            raise v.error(f"keyframe times must increase strictly (previous t_s = {frames[j - 1]['t_s']})",
                          key=f"{key}[{j}].t_s", value=frames[j]["t_s"])
    return frames


#: A sensor's name is its output file's stem (``DIR/<name>.nc``): letters, digits, ``_`` and
#: ``-``, starting with a letter or digit, so it can never leave the output directory.
SENSOR_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")

#: Names of the files every run writes besides the sensors' (``motion.nc``, ``scenario.toml``).
RESERVED_SENSOR_NAMES = ("motion", "scenario")


def _sensor(v: Validator, i: int, raw: Any, names: dict, base_dir: Path, span: dict) -> SensorSpec:
    """One ``[[sensors]]`` table; ``span`` holds the run's ``start_utc`` and ``duration_s``.

    After the model's parameters pass their :class:`~hifi.api.params.Param` checks, two optional
    class methods of the model see them: ``check_params(params)`` (cross-parameter checks, may
    return converted params) and ``check_run(params, *, start_utc, duration_s, rate_hz)``
    (whether the parameters can serve this run, e.g. a GNSS nav file covering its time span).
    Either raises ``ValueError("param_name: reason")``, reported under that parameter's key.
    """
    key = f"sensors[{i}]"
    if not isinstance(raw, dict):
        raise v.error("expected a table", key=key, value=raw)
    spec = check_params(raw, SENSOR_KEYS, v.error, key)
    if isinstance(spec["name"], str) and spec["name"]:
        if not SENSOR_NAME_PATTERN.fullmatch(spec["name"]):
            raise v.error("expected a sensor name of letters, digits, '_' and '-' starting with a letter "
                          "or digit (it names the output file DIR/<name>.nc)", key=f"{key}.name", value=spec["name"])
        if spec["name"].lower() in RESERVED_SENSOR_NAMES:
            raise v.error(f"this name is reserved for the run's own files; not one of "
                          f"{', '.join(RESERVED_SENSOR_NAMES)}", key=f"{key}.name", value=spec["name"])
    name = _unique_name(v, key, spec["name"], names)
    try:
        cls = load_model(spec["model"])
    except KeyError:
        raise v.error("unknown model; registered: " + ", ".join(available_models()),
                      key=f"{key}.model", value=spec["model"]) from None
    parent = spec["parent"]
    if parent is not None and (parent not in names or not names[parent].startswith("objects")):
        objs = ", ".join(repr(n) for n, w in names.items() if w.startswith("objects")) or "none"
        raise v.error(f"parent must be an object; allowed: {objs}", key=f"{key}.parent", value=parent)
    params = _model_params(v, key, cls, spec["params"], base_dir)
    check_run = getattr(cls, "check_run", None)
    if check_run is not None:
        rate_hz = spec["rate_hz"] if spec["rate_hz"] is not None else cls.default_rate_hz
        _model_check(v, key, params, lambda: check_run(params, start_utc=span["start_utc"],
                                                      duration_s=span["duration_s"], rate_hz=rate_hz))
    names[name] = key
    return SensorSpec(i, name, spec["model"], cls, spec["rate_hz"], parent, spec["position_m"],
                      spec["rpy_deg"], params)


def _model_params(v: Validator, key: str, cls: type, raw: Any, base_dir: Path) -> dict:
    """A model's ``params`` table (of a sensor or a ``[[models]]`` entry): each checked against
    ``cls.PARAMS``, files resolved against the scenario's folder, then the model's own
    ``check_params`` (cross-parameter checks, may return converted params)."""
    params = check_params(raw or {}, cls.PARAMS, v.error, f"{key}.params")
    _resolve_files(v, params, cls.PARAMS, base_dir, f"{key}.params")
    check = getattr(cls, "check_params", None)
    if check is not None:
        params = _model_check(v, key, params, lambda: check(params)) or params
    return params


def _model(v: Validator, i: int, raw: Any, names: dict, base_dir: Path) -> ModelSpec:
    """One ``[[models]]`` table: a model that is not a sensor (a driver, a planner, a filter)."""
    from ..api.model import Sensor
    key = f"models[{i}]"
    if not isinstance(raw, dict):
        raise v.error("expected a table", key=key, value=raw)
    spec = check_params(raw, MODEL_KEYS, v.error, key)
    if not SENSOR_NAME_PATTERN.fullmatch(spec["name"] or ""):
        raise v.error("expected a name of letters, digits, '_' and '-' starting with a letter or digit (it names "
                      "the output file DIR/<name>.nc)", key=f"{key}.name", value=spec["name"])
    if spec["name"].lower() in RESERVED_SENSOR_NAMES:
        raise v.error(f"this name is reserved for the run's own files; not one of {', '.join(RESERVED_SENSOR_NAMES)}",
                      key=f"{key}.name", value=spec["name"])
    name = _unique_name(v, key, spec["name"], names)
    try:
        cls = load_model(spec["model"])
    except KeyError:
        raise v.error("unknown model; registered: " + ", ".join(available_models()),
                      key=f"{key}.model", value=spec["model"]) from None
    if issubclass(cls, Sensor):
        raise v.error("a sensor rides on a body: put it in [[sensors]]", key=f"{key}.model", value=spec["model"])
    params = _model_params(v, key, cls, spec["params"], base_dir)
    names[name] = key
    return ModelSpec(i, name, spec["model"], cls, spec["rate_hz"], params)


def _model_check(v: Validator, key: str, params: dict, call):
    """Run a model's check; its ``ValueError("name: reason")`` becomes a ScenarioError at that key."""
    try:
        return call()
    except ValueError as exc:
        # A model's check names its own parameter first: "name: reason".
        pname, _, reason = str(exc).partition(": ")
        if pname in params:
            raise v.error(reason, key=f"{key}.params.{pname}", value=params[pname]) from None
        raise v.error(str(exc), key=f"{key}.params") from None


def _resolve_files(v: Validator, params: dict, spec: dict, base_dir: Path, key: str) -> None:
    """In place: every parameter of kind ``path`` in ``params`` (given, per ``spec``) resolved
    against the scenario's folder; a file that does not exist is a scenario error at
    ``key.NAME``."""
    for pname, p in spec.items():
        if p.kind == "path" and params[pname] is not None:
            resolved = (base_dir / params[pname]).resolve()
            if not resolved.is_file():
                raise v.error(f"file not found (looked for {resolved})", key=f"{key}.{pname}", value=params[pname])
            params[pname] = str(resolved)
