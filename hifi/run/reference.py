"""The scenario and dataset references (``docs/``), rendered from the code and its outputs.

Every key the scenario loader accepts is a :class:`~hifi.api.params.Param` with its type, default,
bounds and a one-line doc (unit and source). :func:`scenario_reference` renders them, with each
registered model's parameters, as Markdown, so the document cannot drift from what is
validated: ``python -m hifi.run.reference > docs/scenario.md`` regenerates it and a test checks the
shipped file is current. ``python -m hifi.run.reference datasets > docs/datasets.md`` documents every
dataset layout from short runs of the shipped examples.
"""

from __future__ import annotations

from typing import Mapping

from ..api.params import Param

_HEADER = """\
# Scenario reference

Generated from the code by `python -m hifi.run.reference > docs/scenario.md` (a test checks that
this file is current). A scenario is a TOML file, version 1; see `examples/` for complete ones.
Every key is validated when the file is loaded: a typo, a wrong type, an out-of-range value or a
reference to something that does not exist stops the run with one message naming the file and
line, the key, the value and what is allowed (exit status 2). Units are in the key names
(`_m`, `_s`, `_deg`, `_hz`); degrees are converted once, at loading.

Frames: scene x east, y north, z up (a local ENU frame at `[simulation] origin`); sensor x
forward, y left, z up. `rpy_deg` are rotations about the parent's x, y, z axes applied in that
order (REP 103, scipy `Rotation.from_euler("xyz", rpy, degrees=True)`).
"""


def _default(p: Param) -> str:
    if p.required:
        return "required"
    if p.default is None:
        return "-"
    if isinstance(p.default, float):
        return f"`{p.default:g}`"
    if isinstance(p.default, (tuple, list)):
        return "`[" + ", ".join(f"{v:g}" if isinstance(v, float) else repr(v) for v in p.default) + "]`"
    return f"`{p.default!r}`" if isinstance(p.default, str) else f"`{p.default}`"


def param_table(params: Mapping[str, Param]) -> str:
    """Markdown table of ``params``: key, allowed values, default, meaning."""
    rows = ["| key | allowed | default | meaning |", "|---|---|---|---|"]
    for name, p in params.items():
        doc = " ".join(p.doc.split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {p.allowed()} | {_default(p)} | {doc} |")
    return "\n".join(rows)


def scenario_reference() -> str:
    """The whole scenario reference as Markdown (see the module docstring)."""
    from ..api import meshes
    from . import scenario
    from .sweep_table import MAX_VARIANTS, SWEEP_PARAMS
    from ..api.registry import available_models, load_model

    parts = [_HEADER]
    parts.append("## Top level\n\n`version = 1` (optional), then the tables below: "
                 + ", ".join(f"`{k}`" for k in scenario.TOP_KEYS if k != "version") + ".\n")
    parts.append("## `[simulation]`\n\n" + param_table(scenario.SIMULATION_PARAMS) + "\n")
    parts.append("`origin` table:\n\n" + param_table(scenario.ORIGIN_PARAMS) + "\n")
    parts.append("## `[materials.NAME]`\n\n" + param_table(scenario.MATERIAL_PARAMS) + "\n")
    parts.append("## `[[objects]]`\n\nAn object is a mesh with a material, placed by `position_m` / "
                 "`rpy_deg` or moved by a `track` of keyframes (linear in position, slerp in rotation; or, "
                 "with `interpolation = \"spline\"`, a C2 spline through them, which an `imu` needs), "
                 "optionally riding on an earlier object (`parent`). Its index in `[[objects]]` is its "
                 "object id in every dataset; a mesh file loaded with parts (`[scene_files.STEM]` below) gives "
                 "one id per part with triangles, in its place, and shifts the ids of the objects after it "
                 "(`object_name` names every id).\n\n" + param_table(scenario.OBJECT_KEYS) + "\n")
    parts.append("Keyframes of `track`:\n\n" + param_table(scenario.KEYFRAME_PARAMS) + "\n")
    parts.append("### Built-in meshes (`mesh = NAME`, parameters beside `mesh`)\n")
    for name, (_, params) in meshes.GENERATORS.items():
        parts.append(f"`{name}`:\n\n" + param_table(params) + "\n")
    parts.append("A mesh file (OBJ, PLY, STL, OFF, glTF, GLB; `mesh = \"path\"` relative to the scenario) takes:\n\n"
                 + param_table(meshes.FILE_PARAMS) + "\n")
    from .scene_parts import SCENE_FILE_PARAMS
    parts.append("## `[scene_files.STEM]`\n\nOptional, one table per mesh file stem (the file name without its "
                 "extension): an object whose `mesh` is a glTF (`.gltf`, `.glb`) or OBJ file of that stem is loaded "
                 "with its parts (unless it says `parts = false`), each node of the file an object "
                 "`OBJECT/NODE` riding on the object (docs/scenario_files.md, \"Scene files with parts\"). A "
                 "table that matches no object's mesh file is an error.\n\n" + param_table(SCENE_FILE_PARAMS) + "\n")
    parts.append("## `[[sensors]]`\n\nA sensor's `name` names its output file `DIR/<name>.nc`: letters, "
                 "digits, `_` and `-`, not `motion` or `scenario`. Objects and sensors share one namespace.\n\n"
                 + param_table(scenario.SENSOR_KEYS) + "\n")
    parts.append("## `[[models]]`\n\nModels that are not sensors: drivers, planners, filters (the closed loop). "
                 "They share the namespace of objects and sensors and write `DIR/<name>.nc`; a run with any of "
                 "them (or a vehicle) cannot use `--partition time`.\n\n" + param_table(scenario.MODEL_KEYS) + "\n")
    from ..world.vehicle import VEHICLE_PARAMS
    parts.append("## `vehicle = { ... }` of an `[[objects]]` entry\n\nA body driven by `drive` commands "
                 "(`hifi.world.vehicle`): a kinematic or dynamic bicycle behind actuator limits (jerk, steering "
                 "rate), integrated at `rate_hz`; `vehicle = {}` is a car, `vehicle = { preset = \"robot\" }` a "
                 "small robot (see `docs/closed_loop.md`).\n\n"
                 + param_table(VEHICLE_PARAMS) + "\n")
    parts.append("## `[output]`\n\n" + param_table(scenario.OUTPUT_PARAMS) + "\n")
    parts.append("## `[weather]`\n\nOptional; absent: clear air. Extinction in every lidar's signal chain "
                 "(and the fog's own echo, `object_id` = -2); see the README section \"Weather\".\n\n"
                 + param_table(scenario.WEATHER_PARAMS) + "\n")
    parts.append("## `[sweep]`\n\nOptional: the file is a sweep, a batch of variants of the scenario (`hifi run` "
                 "writes each as a whole run into `DIR/variant_0000/` ... and the catalog `DIR/sweep.json`; "
                 "`hifi.open_sweep(DIR)` reads them back with a `variant` dimension; docs/scenario_files.md, "
                 "\"Sweeps\"). Every key but `mode` is a dotted path naming a scenario value, quoted, and the "
                 "list of its values: `seed` (or `simulation.seed`), `\"sensors.NAME.params.KEY\"`, "
                 "`\"sensors.NAME.position_m\"`, `\"objects.NAME.position_m.2\"` (one component), "
                 "`\"materials.NAME.KEY\"`, `\"weather.KEY\"`, `\"output.KEY\"`, `\"models.NAME.params.KEY\"` "
                 "(an entry of an array of tables by its `name` or position). Each variant is validated as a "
                 f"scenario; at most {MAX_VARIANTS:,} variants.\n\n"
                 + param_table(SWEEP_PARAMS) + "\n")
    parts.append("## Models and their `[sensors.params]`\n\nModels come from the entry-point group "
                 "`hifi.models`; this list is what is installed with hifi itself.\n")
    for name in available_models():
        cls = load_model(name)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        doc = " ".join(doc.split())
        rate = getattr(cls, "default_rate_hz", None)
        head = f"### `{name}`\n\n{doc}"
        if rate is not None:
            head += f" Default `rate_hz`: {rate:g}."
        params = getattr(cls, "PARAMS", {})
        parts.append(head + "\n\n" + (param_table(params) if params else "No parameters.") + "\n")
    return "\n".join(parts)


_DATASET_HEADER = """\
# Dataset reference

Generated from short runs of the shipped examples by `python -m hifi.run.reference datasets >
docs/datasets.md` (a test checks that this file is current). Every file `hifi run` writes is
netCDF4; every variable has `units` and `long_name`; every file carries the global attributes
`sensor_name`, `sensor_model`, `hifi_version`, `seed`, `scenario` (the TOML text), `start_utc`,
`origin_lat_deg`, `origin_lon_deg`, `origin_height_m` and `rate_hz`, and the coordinates
`object_name` / `object_class` (dimension `object`: `object_id` indexes it).

Times (`timestamp`, `frame_time`) are stored as float64 seconds since `start_utc` with CF units
(`seconds since ...`), so xarray decodes them to datetime64; `ds.hifi.seconds("timestamp")`
gives the float seconds whatever the decoding. Columns: the dimensions (after the leading
`frame`), the type xarray gives when it opens the file (packed variables decode to float64),
the stored type where it differs, units and meaning. Points `x y z` are scene-frame metres
stored as int32 with a 0.1 mm scale factor (exact to 0.05 mm within 214 km of the origin).
`hdl32e` and `vlp16` have the layout of `hdl64e_s2`, `sick_lms` that of `ibeo_lux`.
"""


def _dtype(da) -> str:
    stored = da.encoding.get("dtype")
    shown = str(da.dtype)
    if stored is not None and str(stored) != shown and not shown.startswith("datetime64"):
        return f"{shown} (stored {stored})"
    return shown


def dataset_table(ds) -> str:
    """Markdown table of the coordinates and variables of one dataset."""
    rows = ["| variable | dimensions | type | units | meaning |", "|---|---|---|---|---|"]
    for name in [*ds.coords, *ds.data_vars]:
        da = ds[name]
        dims = ", ".join(d for d in da.dims if d != "frame") or "-"
        if "frame" in da.dims and name not in ("frame", "frame_time"):
            dims = "frame, " + dims if dims != "-" else "frame"
        units = da.attrs.get("units", da.encoding.get("units", ""))
        meaning = " ".join(str(da.attrs.get("long_name", "")).split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {dims} | {_dtype(da)} | {units} | {meaning} |")
    return "\n".join(rows)


def dataset_reference(datasets) -> str:
    """Markdown of ``datasets`` (sensor name -> Dataset), one section per sensor model."""
    parts = [_DATASET_HEADER]
    seen = set()
    for name, ds in datasets.items():
        model = ds.attrs.get("sensor_model", name)
        if model in seen:
            continue
        seen.add(model)
        sizes = ", ".join(f"{d} = {n}" for d, n in ds.sizes.items())
        parts.append(f"## `{model}` (example sensor `{name}`: {sizes})\n\n" + dataset_table(ds) + "\n")
    return "\n".join(parts)


#: The runs documented by :func:`example_datasets`: (example, simulated span [s]).
EXAMPLE_RUNS = (("crossing.toml", 0.1), ("urban_canyon.toml", 2.0), ("ouster.toml", 0.1), ("multi_gnss_canyon.toml", 2.0))


def example_datasets(examples_dir) -> dict:
    """Datasets of short serial runs of the shipped examples (the documented layouts)."""
    import tempfile
    from pathlib import Path

    from .reading import find_output, open_output, output_paths
    from .simulation import Simulation

    out = {}
    with tempfile.TemporaryDirectory(prefix="hifi-reference-") as tmp:
        for example, span in EXAMPLE_RUNS:
            run_dir = Path(tmp) / example.split(".")[0]
            Simulation.from_file(Path(examples_dir) / example).run(out=run_dir, duration_s=span, progress=False)
            for name, path in output_paths(run_dir).items():
                with open_output(path) as ds:
                    out.setdefault(name, ds.load())
        # Models no example carries, in front of a wall: their own layouts.
        extra = {"simulation": {"duration_s": 0.01, "seed": 0},
                 "materials": {"white": {"reflectivity": 0.8, "class": "wall"}},
                 "objects": [{"name": "wall", "mesh": "plane", "size_m": [40, 40], "material": "white",
                              "position_m": [10, 0, 0], "rpy_deg": [0, -90, 0]}],
                 "sensors": [{"name": "raw", "model": "raw_lidar", "rate_hz": 100.0,
                              "params": {"resolution_x": 16, "resolution_y": 8}},
                             {"name": "lms291", "model": "sick_lms291", "rate_hz": 100.0,
                              "params": {"n_subrays": 7}},
                             {"name": "lms5xx", "model": "sick_lms5xx", "rate_hz": 100.0,
                              "params": {"return_mode": "dual"}},
                             {"name": "imu", "model": "imu"}]}
        run_dir = Path(tmp) / "extra"
        Simulation.from_dict(extra).run(out=run_dir, progress=False)
        for name in ("raw", "lms291", "lms5xx", "imu"):
            with open_output(find_output(run_dir, name)) as ds:
                out[name] = ds.load()
    return out


if __name__ == "__main__":
    import sys
    from pathlib import Path

    if sys.argv[1:] == ["datasets"]:
        examples = Path(__file__).resolve().parents[2] / "examples"        # hifi/run/ -> the repository
        print(dataset_reference(example_datasets(examples)), end="")
    else:
        print(scenario_reference(), end="")
