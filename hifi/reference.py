"""The scenario reference (``docs/scenario.md``), rendered from the code's own declarations.

Every key the scenario loader accepts is a :class:`~hifi.params.Param` with its type, default,
bounds and a one-line doc (unit and source). :func:`scenario_reference` renders them, with each
registered model's parameters, as Markdown, so the document cannot drift from what is
validated: ``python -m hifi.reference > docs/scenario.md`` regenerates it and a test checks the
shipped file is current.
"""

from __future__ import annotations

from typing import Mapping

from .params import Param

_HEADER = """\
# Scenario reference

Generated from the code by `python -m hifi.reference > docs/scenario.md` (a test checks that
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
    from . import meshes, scenario
    from .registry import available_models, load_model

    parts = [_HEADER]
    parts.append("## Top level\n\n`version = 1` (optional), then the tables below: "
                 + ", ".join(f"`{k}`" for k in scenario.TOP_KEYS if k != "version") + ".\n")
    parts.append("## `[simulation]`\n\n" + param_table(scenario.SIMULATION_PARAMS) + "\n")
    parts.append("`origin` table:\n\n" + param_table(scenario.ORIGIN_PARAMS) + "\n")
    parts.append("## `[materials.NAME]`\n\n" + param_table(scenario.MATERIAL_PARAMS) + "\n")
    parts.append("## `[[objects]]`\n\nAn object is a mesh with a material, placed by `position_m` / "
                 "`rpy_deg` or moved by a `track` of keyframes (linear in position, slerp in rotation), "
                 "optionally riding on an earlier object (`parent`). Its index in `[[objects]]` is its "
                 "object id in every dataset.\n\n" + param_table(scenario.OBJECT_KEYS) + "\n")
    parts.append("Keyframes of `track`:\n\n" + param_table(scenario.KEYFRAME_PARAMS) + "\n")
    parts.append("### Built-in meshes (`mesh = NAME`, parameters beside `mesh`)\n")
    for name, (_, params) in meshes.GENERATORS.items():
        parts.append(f"`{name}`:\n\n" + param_table(params) + "\n")
    parts.append("A mesh file (OBJ, PLY, STL, OFF, GLB; `mesh = \"path\"` relative to the scenario) takes:\n\n"
                 + param_table(meshes.FILE_PARAMS) + "\n")
    parts.append("## `[[sensors]]`\n\nA sensor's `name` names its output file `DIR/<name>.nc`: letters, "
                 "digits, `_` and `-`, not `motion` or `scenario`. Objects and sensors share one namespace.\n\n"
                 + param_table(scenario.SENSOR_KEYS) + "\n")
    parts.append("## `[output]`\n\n" + param_table(scenario.OUTPUT_PARAMS) + "\n")
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


if __name__ == "__main__":
    print(scenario_reference(), end="")
