"""Typed parameter specifications shared by the scenario loader, mesh generators and models.

A :class:`Param` states a parameter's type, default, bounds and unit; :func:`check_params`
validates a whole table against a dict of them and raises :class:`~hifi.errors.ScenarioError`
naming the key path, the value and what is allowed. :class:`Validator` makes those errors
name the scenario file and the line of the key (:class:`Locator`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..errors import ScenarioError

REQUIRED = object()

_KINDS = ("float", "int", "bool", "str", "vec2", "vec3", "vec4", "color", "path", "any")


@dataclass(frozen=True)
class Param:
    """Specification of one parameter.

    Parameters
    ----------
    kind : str
        One of ``float``, ``int``, ``bool``, ``str``, ``vec2``, ``vec3``, ``vec4`` (lists of floats),
        ``color`` (three floats in 0..1), ``path`` (a string resolved relative to the scenario
        file) or ``any``.
    default : Any
        Default value, or :data:`REQUIRED`.
    minimum, maximum : float, optional
        Inclusive bounds for numbers and for every element of vectors.
    exclusive_minimum : bool
        Make ``minimum`` exclusive (``> minimum``).
    choices : tuple, optional
        Allowed values for strings.
    doc : str
        One line for ``hifi info`` and error messages, with the unit and the source of the default.
    """

    kind: str
    default: Any = REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple | None = None
    doc: str = ""

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"Param kind {self.kind!r} is not one of {_KINDS}")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def allowed(self) -> str:
        """Human description of the allowed values."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        base = {
            "float": "a number", "int": "an integer", "bool": "true or false", "str": "a string",
            "vec2": "a list of 2 numbers", "vec3": "a list of 3 numbers", "vec4": "a list of 4 numbers",
            "color": "a list of 3 numbers in 0..1", "path": "a file path (string)", "any": "any value",
        }[self.kind]
        bounds = []
        if self.minimum is not None:
            bounds.append(f"{'>' if self.exclusive_minimum else '>='} {self.minimum:g}")
        if self.maximum is not None:
            bounds.append(f"<= {self.maximum:g}")
        return base + (" " + " and ".join(bounds) if bounds else "")

    def check(self, value: Any, fail: Callable[[str], ScenarioError]) -> Any:
        """Validate and convert ``value``; ``fail(reason)`` builds the error to raise."""
        kind = self.kind
        if kind == "any":
            return value
        if kind == "bool":
            if not isinstance(value, bool):
                raise fail(f"expected {self.allowed()}")
            return value
        if kind in ("str", "path"):
            if not isinstance(value, str):
                raise fail(f"expected {self.allowed()}")
            if self.choices is not None and value not in self.choices:
                raise fail(f"expected {self.allowed()}")
            return value
        if kind in ("float", "int"):
            v = self._number(value, kind == "int", fail)
            self._bounds(v, fail)
            return v
        n = {"vec2": 2, "vec3": 3, "vec4": 4, "color": 3}[kind]
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise fail(f"expected {self.allowed()}")
        out = tuple(self._number(v, False, fail) for v in value)
        lo, hi = (0.0, 1.0) if kind == "color" else (self.minimum, self.maximum)
        for v in out:
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise fail(f"expected {self.allowed()}")
        return out

    def _number(self, value, integer, fail):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(f"expected {self.allowed()}")
        if integer:
            if isinstance(value, float):
                if not value.is_integer():
                    raise fail(f"expected {self.allowed()}")
                value = int(value)
            return int(value)
        value = float(value)
        if not math.isfinite(value):
            raise fail(f"expected a finite number ({self.allowed()})")
        return value

    def _bounds(self, v, fail):
        if self.minimum is not None:
            if v < self.minimum or (self.exclusive_minimum and v == self.minimum):
                raise fail(f"expected {self.allowed()}")
        if self.maximum is not None and v > self.maximum:
            raise fail(f"expected {self.allowed()}")


def check_params(table: Mapping[str, Any], spec: Mapping[str, Param],
                 error: Callable[..., ScenarioError], key_prefix: str) -> dict[str, Any]:
    """Validate ``table`` against ``spec``: unknown keys, missing required keys, types, bounds.

    Parameters
    ----------
    table : mapping
        The user's values.
    spec : mapping of str to Param
        Allowed parameters.
    error : callable
        ``error(reason, key=..., value=...)`` returns a ScenarioError with file and line.
    key_prefix : str
        Key path of ``table`` (``"sensors[0].params"``).

    Returns
    -------
    dict
        Every parameter of ``spec``, converted, with defaults filled in.
    """
    if not isinstance(table, Mapping):
        raise error(f"expected a table of parameters ({', '.join(sorted(spec)) or 'none allowed'})",
                    key=key_prefix, value=table)
    out: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{key_prefix}.{key}" if key_prefix else key
        if key not in spec:
            allowed = ", ".join(sorted(spec)) or "none"
            raise error(f"unknown key; allowed here: {allowed}", key=path, value=value)
        out[key] = spec[key].check(value, lambda reason, p=path, v=value: error(reason, key=p, value=v))
    for key, p in spec.items():
        if key not in out:
            if p.required:
                path = f"{key_prefix}.{key}" if key_prefix else key
                raise error(f"required key is missing ({p.allowed()}{'; ' + p.doc if p.doc else ''})",
                            key=path)
            out[key] = p.default
    return out


class Locator:
    """Best-effort line numbers for key paths in TOML text (tomllib gives none)."""

    _header = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")

    def __init__(self, text: str | None):
        self.lines = text.splitlines() if text else []

    def find(self, parts: list) -> int | None:
        if not self.lines:
            return None
        table: list = []
        counts: dict[str, int] = {}
        # A key the file does not give (a default) is placed at the header of the deepest table
        # that holds it (``[[sensors]]`` for ``sensors[0].params.azimuth_stride``), never at
        # the first line of the file.
        best, best_depth = None, 0
        # Which table path does the key live in, and which key names it?
        for lineno, line in enumerate(self.lines, start=1):
            m = self._header.match(line)
            if m:
                name = m.group(2).strip()
                if m.group(1) == "[[":
                    counts[name] = counts.get(name, -1) + 1
                    table = name.split(".")[:-1] + [name.split(".")[-1], counts[name]]
                else:
                    table = self._expand(name.split("."), counts)
                if table == parts[:len(table)] and len(table) > best_depth:
                    best, best_depth = lineno, len(table)
                continue
            km = re.match(r"^\s*([A-Za-z0-9_\-\"']+)\s*=", line)
            if km:
                key = km.group(1).strip("\"'")
                full = table + [key]
                if full == parts[:len(full)]:
                    return lineno
        return best

    @staticmethod
    def _expand(names, counts):
        out = []
        prefix = ""
        for n in names:
            prefix = f"{prefix}.{n}" if prefix else n
            out.append(n)
            if prefix in counts:
                out.append(counts[prefix])
        return out


def parse_key(key: str) -> list:
    """``"sensors[0].params.rate_hz"`` as ``["sensors", 0, "params", "rate_hz"]``."""
    parts: list = []
    for tok in re.finditer(r"([^.\[\]]+)|\[(\d+)\]", key):
        parts.append(int(tok.group(2)) if tok.group(2) is not None else tok.group(1))
    return parts


class Validator:
    """Makes the :class:`~hifi.errors.ScenarioError` of one scenario text: its file, and the
    line of the key at fault (:class:`Locator`). Used by the scenario loader and by the memory
    checks of :mod:`hifi.api.estimate`, which report against the same file."""

    def __init__(self, source: str, text: str | None):
        self.source = source
        self.locator = Locator(text)

    def error(self, reason: str, *, key: str | None = None, value: Any = ScenarioError._MISSING) -> ScenarioError:
        line = self.locator.find(parse_key(key)) if key else None
        return ScenarioError(reason, file=self.source, key=key, value=value, line=line)
