"""Sweeps: one scenario file, many variants of it, each run as a whole run (batch runs).

A ``[sweep]`` table declares value lists over the seed and over any scenario value named by
its path; the variants are their cartesian product (``mode = "grid"``, the default) or the
lists taken side by side (``mode = "zip"``)::

    [sweep]
    mode = "grid"
    seed = [1, 2, 3]
    "sensors.lidar.params.visibility_m" = [50.0, 200.0, 2000.0]

Paths (dotted; an array of tables is indexed by an entry's ``name`` or by its position, a
list value by its position):

- ``seed`` or ``simulation.seed``, any ``simulation.<key>``
- ``sensors.<name>.params.<key>``, ``sensors.<name>.position_m``, ``sensors.<name>.rate_hz``, ...
- ``objects.<name>.position_m`` (``objects.<name>.position_m.2``: its height alone), ...
- ``models.<name>.params.<key>``
- ``materials.<name>.<key>``
- ``weather.<key>``, ``output.<key>``

Each variant is the scenario with those values substituted, validated like any scenario
(:func:`hifi.run.scenario.validate`): a value out of range fails with the usual one-line
error, its file named as ``FILE (sweep variant 3: seed = 2, ...)``.

:func:`run_sweep` writes every variant into ``DIR/variant_0000`` ... (each an ordinary run
directory, written atomically by :meth:`hifi.Simulation.run_to_files`) and, last, the catalog
``DIR/sweep.json``; :func:`open_sweep` reads them back as one dataset per file with a
``variant`` dimension. Under a launcher of several MPI processes rank ``r`` of ``N`` runs the
variants ``r, r + N, ...``; the ranks share nothing but two barriers (every rank has checked
the whole sweep before any writes; every variant is written before rank 0 writes the catalog).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from ..api.params import Param
from ..errors import ScenarioError

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

#: The catalog of a finished sweep (written last).
CATALOG = "sweep.json"

#: Present in a sweep directory while variants are being written (removed with the catalog).
INCOMPLETE_MARKER = ".hifi-sweep-incomplete"

#: Top-level tables whose values a sweep path may name.
_ROOTS = ("simulation", "sensors", "objects", "models", "materials", "weather", "output")
_ARRAYS = ("sensors", "objects", "models")

_VARIANT_DIR = re.compile(r"variant_\d{4,}\Z")


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


# --- running


def _check_sweep_dir(out: Path, overwrite: bool) -> None:
    """Refuse an output directory the sweep must not write or replace: an existing one without
    ``overwrite``; with it, one that holds anything but a sweep's variants, catalog and marker."""
    from .output import check_output_dir
    try:
        check_output_dir(out, overwrite=False)        # also the protected paths (root, home, cwd)
    except FileExistsError:
        if not overwrite:
            raise FileExistsError(f"output directory {out} exists; use --overwrite to replace it") from None
        if out.is_symlink() or not out.is_dir():
            raise FileExistsError(f"--out {out} exists and is not a directory; --overwrite replaces only a "
                                  f"directory written by a hifi sweep") from None
        foreign = sorted(p.name for p in out.iterdir()
                         if not (p.name in (CATALOG, INCOMPLETE_MARKER) or (_VARIANT_DIR.match(p.name) and p.is_dir())))
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise FileExistsError(f"--overwrite: {out} holds files a hifi sweep did not write ({shown}); refusing "
                                  f"to delete them, move them or choose another --out") from None


def prepare(path, out, *, seed=None, duration_s=None, ignore_disk_space: bool = False,
            overwrite: bool = False):
    """Load the sweep file ``path``, validate every variant and check the disk and ``out``;
    return ``(scenario, sweep, variants)``. Writes nothing (every rank runs it)."""
    from . import scenario as _scenario
    from .simulation import Simulation
    sc = _scenario.load(path)
    if sc.sweep is None:
        raise ScenarioError("no [sweep] table: a sweep run needs one (hifi run runs a plain scenario)",
                            file=sc.source, key="sweep")
    if seed is not None and "simulation.seed" in sc.sweep.lists:
        raise ScenarioError("the sweep varies the seed; --seed would replace it in every variant: drop --seed",
                            file=sc.source, key="--seed", value=seed)
    found = variants(sc.raw, sc.sweep, sc.source)
    total = 0
    for v in found:
        vsc = _scenario.validate(copy.deepcopy(v.data), base_dir=sc.base_dir, source=v.source, text=v.text)
        total += Simulation(vsc).estimate(duration_s).output_bytes
    from ..api.estimate import check_disk
    # check_disk reads the estimate's output_bytes and names the scenario's file
    check_disk(SimpleNamespace(scenario=sc), SimpleNamespace(output_bytes=total), out, ignore=ignore_disk_space)
    _check_sweep_dir(Path(out), overwrite)
    return sc, sc.sweep, found


def run_sweep(path, out, *, seed: int | None = None, duration_s: float | None = None, overwrite: bool = False,
              progress: bool | None = None, ignore_disk_space: bool = False, rank: int = 0, size: int = 1,
              barrier: Callable[[], None] | None = None) -> Path | None:
    """Run every variant of the sweep file ``path`` into ``out/variant_NNNN`` and write the
    catalog ``out/sweep.json``.

    Parameters
    ----------
    path : path-like
        A scenario file with a ``[sweep]`` table.
    out : path-like
        The sweep's directory; must not exist unless ``overwrite`` (then it must be a sweep's).
    seed, duration_s : optional
        Override ``[simulation]`` in every variant (``seed`` not when the sweep varies it).
    progress, ignore_disk_space : optional
        As :meth:`hifi.Simulation.run`; the disk check counts the sum of every variant's output.
    rank, size : int
        This process's share: the variants ``rank, rank + size, ...`` (an MPI launch).
    barrier : callable, optional
        Waits for every process of the launch (needed when ``size > 1``).

    Returns
    -------
    pathlib.Path or None
        The catalog (on rank 0; None on the others).

    Raises
    ------
    hifi.ScenarioError
        Before anything is written: a bad ``[sweep]``, a variant that is not a valid scenario,
        an output estimate over the free disk space.
    FileExistsError
        ``out`` exists (without ``overwrite``, or it is not a sweep's directory).
    """
    from .simulation import Simulation
    from . import scenario as _scenario
    from ..runtime.safety import check_not_input, write_file
    out = Path(out)
    if size > 1 and barrier is None:
        raise ValueError(f"run_sweep: size = {size} needs a barrier")
    check_not_input(out, [path])
    sc, sweep, found = prepare(path, out, seed=seed, duration_s=duration_s, ignore_disk_space=ignore_disk_space,
                               overwrite=overwrite)
    if size > 1:
        barrier()                       # every rank has checked everything: now the writing starts
    if rank == 0:
        if out.exists():
            shutil.rmtree(out)          # --overwrite of a sweep's directory (_check_sweep_dir)
        out.mkdir(parents=True)
        (out / INCOMPLETE_MARKER).write_text("hifi sweep in progress or failed; not a finished sweep\n",
                                             encoding="utf-8")
    if size > 1:
        barrier()                       # the directory exists
    for v in found[rank::size]:
        vsc = _scenario.validate(v.data, base_dir=sc.base_dir, source=v.source, text=v.text)
        Simulation(vsc).run_to_files(out / v.dir_name, seed=seed, duration_s=duration_s, progress=progress,
                                     ignore_disk_space=True)      # the sweep's disk check counted it
    if size > 1:
        barrier()                       # every variant is written
    if rank != 0:
        return None
    catalog = {"scenario": sc.source, "mode": sweep.mode, "paths": list(sweep.lists),
               "seed": seed, "duration_s": duration_s,
               "variants": [{"index": v.index, "dir": v.dir_name, "values": v.values} for v in found]}
    written = write_file(out / CATALOG, lambda tmp: Path(tmp).write_text(json.dumps(catalog, indent=1) + "\n",
                                                                         encoding="utf-8"), overwrite=False)
    (out / INCOMPLETE_MARKER).unlink()
    return written


def open_sweep(directory) -> dict:
    """The datasets of a finished sweep, one per file name, each with a ``variant`` dimension.

    Every file ``NAME.nc`` of the variants (each sensor's, ``motion.nc``) is opened in every
    variant directory and concatenated along ``variant`` (:func:`xarray.concat`); the swept
    values are coordinates along ``variant`` named by their paths (``simulation.seed`` as
    ``seed``; a list value, such as a position, with a second dimension ``<path>_index``), so
    a Monte-Carlo study is a ``groupby``::

        ds = hifi.open_sweep("out")["gnss"]
        ds.groupby("sensors.lidar.params.visibility_m").mean()

    The files are opened with dask chunks when dask is installed (then nothing is read until
    used, and the files stay open); without dask the data are read into memory and the files
    closed.

    Raises
    ------
    FileNotFoundError
        No catalog ``sweep.json`` (not a sweep directory, or one that did not finish).
    """
    import importlib.util

    import numpy as np
    import xarray as xr
    directory = Path(directory)
    catalog_path = directory / CATALOG
    if not catalog_path.is_file():
        raise FileNotFoundError(f"{catalog_path}: no such file; open_sweep takes a directory written by a "
                                f"finished sweep (hifi run SWEEP.toml --out DIR)")
    catalog = json.loads(catalog_path.read_text(encoding="utf-8"))
    entries = catalog["variants"]
    names = sorted(p.stem for p in (directory / entries[0]["dir"]).glob("*.nc"))
    lazy = importlib.util.find_spec("dask") is not None
    coords: dict = {"variant": ("variant", np.array([e["index"] for e in entries]))}
    for path in catalog["paths"]:
        name = "seed" if path == "simulation.seed" else path
        values = np.array([e["values"][path] for e in entries])
        coords[name] = (("variant",) if values.ndim == 1 else ("variant", f"{name}_index"), values)
    result = {}
    for name in names:
        parts = [xr.open_dataset(directory / e["dir"] / f"{name}.nc", chunks={} if lazy else None) for e in entries]
        try:
            ds = xr.concat(parts, dim="variant", data_vars="all", coords="different", compat="equals",
                           join="outer", combine_attrs="drop_conflicts")
            if not lazy:
                ds = ds.load()
        finally:
            if not lazy:
                for p in parts:
                    p.close()
        result[name] = ds.assign_coords(coords)
    return result
