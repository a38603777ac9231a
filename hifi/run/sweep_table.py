"""The ``[sweep]`` table: its parsing, the paths it names, the variants' scenario data and a
small TOML writer for their ``scenario.toml`` (running them: :mod:`hifi.run.sweep`, which the
scenario's validation cannot import without an import cycle)."""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..api.params import Param

#: Most variants of one sweep: beyond it a sweep is almost certainly a mistake (a grid of
#: lists too long), and its catalog and directory listing grow unwieldy.
MAX_VARIANTS = 100_000

MODES = ("grid", "zip")

#: The keys of ``[sweep]``, for the scenario reference (``"PATH"`` stands for every path).
SWEEP_PARAMS = {
    "mode": Param("str", default="grid", choices=MODES,
                  doc="'grid': every combination of the lists (their cartesian product, the last list varying "
                      "fastest); 'zip': the lists side by side (they must have one length)"),
    "seed": Param("any", default=None, doc="list of seeds (integers >= 0), e.g. [1, 2, 3]"),
    '"PATH"': Param("any", default=None,
                    doc="list of the values the scenario value at PATH takes, of one type (numbers, strings, "
                        "booleans or lists of numbers)"),
}

#: Top-level tables whose values a sweep path may name.
_ROOTS = ("simulation", "sensors", "objects", "models", "materials", "weather", "output")
_ARRAYS = ("sensors", "objects", "models")


@dataclass
class Sweep:
    """A parsed ``[sweep]`` table: its mode and, per path, the list of values."""

    mode: str
    #: path -> list of values, in the table's order (``seed`` normalised to ``simulation.seed``).
    lists: dict

    def __len__(self) -> int:
        sizes = [len(v) for v in self.lists.values()]
        return math.prod(sizes) if self.mode == "grid" else sizes[0]

    def values(self) -> list[dict]:
        """Per variant, path -> value (grid: the last path varies fastest)."""
        paths = list(self.lists)
        rows = (itertools.product(*self.lists.values()) if self.mode == "grid" else zip(*self.lists.values()))
        return [dict(zip(paths, row)) for row in rows]


@dataclass
class Variant:
    index: int
    values: dict
    data: dict
    text: str
    source: str

    @property
    def dir_name(self) -> str:
        return variant_dir_name(self.index)


def variant_dir_name(index: int) -> str:
    """``variant_0003``: four digits at least, so that names sort as the indices do."""
    return f"variant_{index:04d}"


def _key(path: str) -> str:
    return f'sweep."{path}"'


def _kind(value) -> str | None:
    """The type class of one swept value: number, string, boolean, or a list of numbers."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list) and value and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                 for x in value):
        return "list of numbers"
    return None


def parse_sweep(table: Any, data: dict, error: Callable) -> Sweep:
    """Check a ``[sweep]`` table against the scenario ``data`` it belongs to.

    ``error(reason, key=..., value=...)`` builds the :class:`ScenarioError` (the scenario's
    validator). Every path must name a value of ``data``, every list be non-empty and of one
    type, zip lists of one length, and the variants at most :data:`MAX_VARIANTS`.
    """
    if not isinstance(table, dict):
        raise error("expected a table [sweep] of value lists", key="sweep", value=table)
    mode = table.get("mode", "grid")
    if mode not in MODES:
        raise error(f"unknown sweep mode; allowed: {', '.join(repr(m) for m in MODES)}", key="sweep.mode", value=mode)
    lists: dict = {}
    for path, values in table.items():
        if path == "mode":
            continue
        full = "simulation.seed" if path == "seed" else path
        if not isinstance(values, list) or not values:
            raise error("expected a non-empty list of the values to sweep, e.g. [1, 2, 3]", key=_key(path),
                        value=values)
        kinds = {_kind(x) for x in values}
        if None in kinds or len(kinds) > 1:
            raise error("expected values of one type (numbers, strings, booleans or lists of numbers)",
                        key=_key(path), value=values)
        if full in lists:
            raise error("swept twice ('seed' and 'simulation.seed' are one value)", key=_key(path), value=values)
        try:
            locate(copy.deepcopy(data), full)
        except LookupError as exc:
            raise error(f"names no scenario value: {exc}", key=_key(path), value=values) from None
        lists[full] = values
    if not lists:
        raise error("a sweep needs at least one value list (seed = [...] or \"PATH\" = [...])", key="sweep",
                    value=table)
    if mode == "zip":
        lengths = {p: len(v) for p, v in lists.items()}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{p} has {n}" for p, n in lengths.items())
            raise error(f"mode = 'zip' takes lists of one length ({shown}); or use mode = 'grid'", key="sweep",
                        value=table)
    sweep = Sweep(mode, lists)
    if len(sweep) > MAX_VARIANTS:
        raise error(f"the sweep makes {len(sweep):,} variants; allowed: at most {MAX_VARIANTS:,}", key="sweep",
                    value=f"{mode} of " + " x ".join(str(len(v)) for v in lists.values()))
    return sweep


def locate(data: dict, path: str):
    """The container and key of the value ``path`` names in ``data``; missing tables on the way
    are made (a model's ``params``, ``[weather]``), a missing last key is allowed (a default
    the variant sets; the scenario's validation checks the key). Raises LookupError with the
    reason when the path names nothing."""
    parts = path.split(".")
    if parts[0] not in _ROOTS:
        raise LookupError(f"it must start with one of {', '.join(_ROOTS)} (or be 'seed')")
    if len(parts) == 1 or (parts[0] in _ARRAYS + ("materials",) and len(parts) == 2):
        raise LookupError(f"{path} is a table, not a value")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        here = ".".join(parts[:i]) or "the scenario"
        if isinstance(node, list):
            if i == 1:                                   # [[sensors]] etc.: by name, else by index
                found = [e for e in node if isinstance(e, dict) and e.get("name") == part]
                if found:
                    node = found[0]
                    continue
            if not (part.isdigit() and int(part) < len(node)):
                raise LookupError(f"{here} has no entry {part!r} (a list of {len(node)}"
                                  + (f", names {[e.get('name') for e in node if isinstance(e, dict)]}" if i == 1
                                     else "") + ")")
            key: Any = int(part)
        elif isinstance(node, dict):
            key = part
            if part not in node:
                if i == 0 and part in _ARRAYS:
                    raise LookupError(f"the scenario has no [[{part}]]")
                if i == 1 and parts[0] == "materials":
                    raise LookupError(f"the scenario has no [materials.{part}]")
                if last:
                    return node, key                    # a key left at its default: validation checks it
                node[part] = {}                         # a table not written out ([weather], params)
        else:
            raise LookupError(f"{here} = {node!r} is a value, not a table")
        if last:
            value = node[key]
            if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(x, dict) for x in value)):
                raise LookupError(f"{path} is a table, not a value")
            return node, key
        node = node[key]
    raise LookupError("empty path")


def variants(data: dict, sweep: Sweep, source: str) -> list[Variant]:
    """Every variant's scenario data (``data`` without ``[sweep]``, the values substituted)."""
    base = {k: v for k, v in data.items() if k != "sweep"}
    out = []
    for i, values in enumerate(sweep.values()):
        d = copy.deepcopy(base)
        for path, value in values.items():
            container, key = locate(d, path)
            container[key] = copy.deepcopy(value)
        desc = ", ".join(f"{p} = {_toml_value(v)}" for p, v in values.items())
        text = f"# variant {i} of the sweep in {source}: {desc}\n" + to_toml(d)
        out.append(Variant(i, values, d, text, f"{source} (sweep variant {i}: {desc})"))
    return out


# --- a small TOML writer: the scenario of each variant is written as DIR/variant_N/scenario.toml

_BARE = re.compile(r"[A-Za-z0-9_-]+\Z")


def _toml_key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _toml_value(v) -> str:
    import datetime
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)      # a TOML basic string: JSON's escapes are TOML's
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} {v!r} as TOML")


def to_toml(data: dict) -> str:
    """``data`` (as :mod:`tomllib` parses a scenario) as TOML text that parses back to it:
    top-level values first, then each table ``[NAME]`` (``[materials.NAME]``) and array of
    tables ``[[NAME]]``, their own tables inline."""
    lines = []
    for k, v in data.items():
        if not isinstance(v, dict) and not (isinstance(v, list) and v and all(isinstance(e, dict) for e in v)):
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            plain = {a: b for a, b in v.items() if not isinstance(b, dict)}
            sub = {a: b for a, b in v.items() if isinstance(b, dict)}
            if plain or not sub:
                lines.append(f"\n[{_toml_key(k)}]")
                lines += [f"{_toml_key(a)} = {_toml_value(b)}" for a, b in plain.items()]
            for a, b in sub.items():
                lines.append(f"\n[{_toml_key(k)}.{_toml_key(a)}]")
                lines += [f"{_toml_key(c)} = {_toml_value(d)}" for c, d in b.items()]
        elif isinstance(v, list) and v and all(isinstance(e, dict) for e in v):
            for entry in v:
                lines.append(f"\n[[{_toml_key(k)}]]")
                lines += [f"{_toml_key(a)} = {_toml_value(b)}" for a, b in entry.items()]
    return "\n".join(lines) + "\n"
