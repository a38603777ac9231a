"""Same bytes across commits: run the shipped examples on two commits and compare every output.

Each side runs with its own code and its own entry points: the commit is checked out in a
temporary git worktree (the working tree, the default ``--head``, is copied: its tracked and
untracked, not ignored, files), installed non-editable into a temporary virtual environment that
sees the current interpreter's site-packages for the dependencies, and run through that
environment's ``hifi`` command. The two sides run one after the other, never at once.

For every example (``examples/*.toml``; same seed, same duration on both sides) it compares:

- the set of files of the run directory (``.hifi-run`` included);
- for every netCDF file, group by group: dimensions, variable names, each variable's dimensions,
  dtype, shape, attributes and raw stored values (no masking, scaling or time decoding; NaN
  equals NaN only bit for bit), and the global attributes. ``hifi_version`` (see
  ``VERSION_ATTRS``) is reported apart and is not a difference;
- every other file (``scenario.toml``, the manifest) byte for byte.

With ``--validation`` it also runs the validation scripts (``validation/*.py`` that have a
``__main__`` block) on both sides with a timeout and compares their stdout line by line.

Usage::

    python benchmarks/same_bytes.py --base HEAD~1 --examples crossing --duration 0.3
    python benchmarks/same_bytes.py --base 4b73cfe~1 --head 4b73cfe --duration 0.5
    python benchmarks/same_bytes.py --base main --validation fog_hahner emva1288

Exit status: 0 when everything compared is identical, 1 when something differs or a run failed
on one side only, 2 for a bad argument (a name that is not a commit, an unknown example).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trees import (WORKTREE, Side, TreeError, base_site_packages,  # noqa: E402
                    clean_env, make_root, prepare_side, remove_root, resolve_commit)

#: Global attributes that differ between commits by design: reported apart, never a difference.
VERSION_ATTRS = frozenset({"hifi_version"})

#: ``--duration`` caps an example's duration, but an example whose slowest sensor runs at
#: ``SLOW_RATE_HZ`` or slower (the GNSS receivers, 1 Hz) keeps ``SLOW_MIN_EPOCHS`` of its epochs.
SLOW_RATE_HZ = 1.0
SLOW_MIN_EPOCHS = 3

#: How many differences a table row describes (it names every differing variable), and how
#: many the list under the table gives per file.
MAX_NAMED = 2
MAX_LISTED = 60


class SameBytesError(TreeError):
    """A bad argument or a side that cannot be prepared: one line, exit status 2 (the sides'
    own errors are ``_trees.TreeError``, its base class)."""


# --------------------------------------------------------------------------------------------
# Comparison of two output files / directories (no hifi import: the current interpreter's
# numpy and netCDF4 only)
# --------------------------------------------------------------------------------------------

@dataclass
class FileComparison:
    """The comparison of one file of two runs.

    ``differences`` holds one line per difference, ``differing`` the names of the variables (or
    ``@attribute``, ``/group``) that differ, ``notes`` the attributes that differ by design
    (``VERSION_ATTRS``, paths under each side's own root), ``n_variables`` how many variables were compared (0 for a file
    that is not netCDF).
    """

    name: str
    n_variables: int = 0
    differences: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    same_file_bytes: bool = False

    @property
    def identical(self) -> bool:
        return not self.differences

    def differ(self, what: str, line: str) -> None:
        if what not in self.differing:
            self.differing.append(what)
        self.differences.append(line)


def _values_equal(a, b) -> bool:
    """Raw equality: same dtype, shape and bytes (object arrays, e.g. strings, element-wise)."""
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return all(type(x) is type(y) and (x == y or (x is None and y is None))
                   for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def describe_difference(a, b, units: str = "") -> str:
    """How two arrays of the same dtype and shape differ: count, NaN pattern, max |difference|
    (in ``units``, the variable's own)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or a.dtype.kind in "SUV":
        differ = np.array([x != y for x, y in zip(a.ravel().tolist(), b.ravel().tolist())], dtype=bool)
        return f"{int(differ.sum())} of {a.size} values differ"
    if a.dtype.kind == "b":
        a, b = a.astype(np.int8), b.astype(np.int8)
    fa, fb = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    bits_differ = (np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
                   != np.ascontiguousarray(b).view(np.uint8).reshape(b.size, -1)).any(axis=1) \
        if a.size else np.zeros(0, dtype=bool)
    nan_a, nan_b = np.isnan(fa), np.isnan(fb)
    parts = [f"{int(bits_differ.sum())} of {a.size} values differ"]
    if (nan_a != nan_b).any():
        parts.append(f"NaN in one only at {int((nan_a != nan_b).sum())}")
    both = ~nan_a & ~nan_b
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(fa[both] - fb[both])
    diff = diff[~np.isnan(diff)]            # inf - inf
    if diff.size:
        parts.append(f"max |diff| {diff.max():.3g}" + (f" {units}" if units else ""))
    return ", ".join(parts)


def _read_raw(var) -> np.ndarray:
    """A netCDF4 variable's stored values: no mask, no scale, no char-to-string, no time decoding."""
    var.set_auto_maskandscale(False)
    if hasattr(var, "set_auto_chartostring"):
        var.set_auto_chartostring(False)
    if var.ndim == 0:
        return np.asarray(var.getValue())
    return np.asarray(var[...])


def _without_roots(value, roots: tuple[tuple[str, str], ...]):
    """A string with each side root replaced by its placeholder (longest root first)."""
    if not isinstance(value, str):
        return value
    for root, placeholder in sorted(roots, key=lambda r: -len(r[0])):
        value = value.replace(root, placeholder)
    return value


def _compare_attrs(result: FileComparison, where: str, a, b, *, global_attrs: bool,
                   roots: tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]) -> None:
    names_a, names_b = set(a.ncattrs()), set(b.ncattrs())
    for name in sorted(names_a ^ names_b):
        side = "base" if name in names_a else "head"
        result.differ(f"{where}@{name}", f"{where}@{name}: only in {side}")
    for name in sorted(names_a & names_b):
        va, vb = a.getncattr(name), b.getncattr(name)
        if _values_equal(va, vb):
            continue
        if global_attrs and name in VERSION_ATTRS:
            result.notes.append(f"{where}@{name}: {va!r} -> {vb!r}")
        elif _values_equal(_without_roots(va, roots[0]), _without_roots(vb, roots[1])):
            result.notes.append(f"{where}@{name}: same path under each side's own root")
        else:
            result.differ(f"{where}@{name}", f"{where}@{name}: {_short(va)} -> {_short(vb)}")


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _compare_group(result: FileComparison, ga, gb, path: str, roots) -> None:
    prefix = "" if path == "/" else path.lstrip("/") + "/"
    dims_a = {n: (len(d), d.isunlimited()) for n, d in ga.dimensions.items()}
    dims_b = {n: (len(d), d.isunlimited()) for n, d in gb.dimensions.items()}
    for name in sorted(set(dims_a) | set(dims_b)):
        if dims_a.get(name) != dims_b.get(name):
            result.differ(f"{prefix}dim {name}", f"dimension {prefix}{name}: {dims_a.get(name)} -> {dims_b.get(name)}"
                          " (size, unlimited)")
    _compare_attrs(result, path if path != "/" else "", ga, gb, global_attrs=(path == "/"), roots=roots)

    vars_a, vars_b = set(ga.variables), set(gb.variables)
    for name in sorted(vars_a ^ vars_b):
        side = "base" if name in vars_a else "head"
        result.differ(prefix + name, f"variable {prefix}{name}: only in {side}")
    for name in sorted(vars_a & vars_b):
        va, vb = ga.variables[name], gb.variables[name]
        full = prefix + name
        result.n_variables += 1
        if va.dimensions != vb.dimensions:
            result.differ(full, f"{full}: dimensions {va.dimensions} -> {vb.dimensions}")
            continue
        if va.dtype != vb.dtype:
            result.differ(full, f"{full}: dtype {va.dtype} -> {vb.dtype}")
            continue
        if va.shape != vb.shape:
            result.differ(full, f"{full}: shape {va.shape} -> {vb.shape}")
            continue
        _compare_attrs(result, full, va, vb, global_attrs=False, roots=roots)
        xa, xb = _read_raw(va), _read_raw(vb)
        if not _values_equal(xa, xb):
            units = va.getncattr("units") if "units" in va.ncattrs() else ""
            result.differ(full, f"{full}: {describe_difference(xa, xb, str(units))}")

    groups_a, groups_b = set(ga.groups), set(gb.groups)
    for name in sorted(groups_a ^ groups_b):
        side = "base" if name in groups_a else "head"
        result.differ(f"{prefix}{name}/", f"group {prefix}{name}: only in {side}")
    for name in sorted(groups_a & groups_b):
        _compare_group(result, ga.groups[name], gb.groups[name], f"/{prefix}{name}".replace("//", "/"), roots)


def compare_netcdf(path_a: Path, path_b: Path, name: str | None = None, *,
                   roots_a: dict[str, str] | None = None, roots_b: dict[str, str] | None = None) -> FileComparison:
    """Compare two netCDF files variable by variable on their raw stored values.

    Parameters
    ----------
    path_a, path_b : Path
        The base and the head file.
    name : str, optional
        The name the result carries (default: ``path_a``'s file name).
    roots_a, roots_b : dict, optional
        Each side's own folders (its checkout, its environment) by placeholder, e.g.
        ``{"<checkout>": "/tmp/x/base"}``: a string attribute that differs only by them (the
        absolute path of a data file the model read) is the same attribute.

    Returns
    -------
    FileComparison
        Identical when dimensions, variables (dimensions, dtype, shape, attributes, stored
        bytes), groups and global attributes agree; a global attribute named in
        ``VERSION_ATTRS`` that differs, and a path that differs by the side roots only, go to
        ``notes`` instead.
    """
    import netCDF4

    result = FileComparison(name or Path(path_a).name)
    result.same_file_bytes = Path(path_a).read_bytes() == Path(path_b).read_bytes()
    if result.same_file_bytes:
        with netCDF4.Dataset(path_a) as ds:
            result.n_variables = _count_variables(ds)
        return result
    with netCDF4.Dataset(path_a) as a, netCDF4.Dataset(path_b) as b:
        if a.data_model != b.data_model:
            result.differ("format", f"format {a.data_model} -> {b.data_model}")
        roots = (tuple((v, k) for k, v in (roots_a or {}).items()),
                 tuple((v, k) for k, v in (roots_b or {}).items()))
        _compare_group(result, a, b, "/", roots)
    return result


def _count_variables(group) -> int:
    return len(group.variables) + sum(_count_variables(g) for g in group.groups.values())


def compare_files(path_a: Path, path_b: Path, name: str, **roots) -> FileComparison:
    """A netCDF file by its variables (``compare_netcdf``), any other file byte for byte."""
    if name.endswith(".nc"):
        return compare_netcdf(path_a, path_b, name, **roots)
    result = FileComparison(name)
    result.same_file_bytes = Path(path_a).read_bytes() == Path(path_b).read_bytes()
    if not result.same_file_bytes:
        la = Path(path_a).read_bytes().splitlines()
        lb = Path(path_b).read_bytes().splitlines()
        line = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        result.differ("bytes", f"bytes differ from line {line + 1}")
    return result


def compare_run_dirs(dir_a: Path, dir_b: Path, **roots) -> list[FileComparison]:
    """Every file of two run directories (hidden files and subfolders included), by name;
    ``roots`` as ``compare_netcdf`` takes them."""
    files_a = {p.relative_to(dir_a).as_posix() for p in Path(dir_a).rglob("*") if p.is_file()}
    files_b = {p.relative_to(dir_b).as_posix() for p in Path(dir_b).rglob("*") if p.is_file()}
    results = []
    for name in sorted(files_a | files_b):
        if name not in files_b or name not in files_a:
            result = FileComparison(name)
            result.differ("file", f"only in {'base' if name in files_a else 'head'}")
        else:
            result = compare_files(Path(dir_a) / name, Path(dir_b) / name, name, **roots)
        results.append(result)
    return results


# --------------------------------------------------------------------------------------------
# The two sides: a checkout and an environment each (benchmarks/_trees.py)
# --------------------------------------------------------------------------------------------

@dataclass
class RunOutcome:
    returncode: int | None          # None: timed out
    wall_s: float
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def why(self) -> str:
        if self.returncode is None:
            return f"timed out after {self.wall_s:.0f} s"
        last = (self.stderr.strip().splitlines() or self.stdout.strip().splitlines() or ["(no message)"])[-1]
        return f"exit {self.returncode}: {last.strip()[:120]}"


def _run(cmd: list[str], cwd: Path, timeout_s: float) -> RunOutcome:
    start = time.perf_counter()
    try:
        proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                              env=clean_env(), timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        def text(x):
            return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
        return RunOutcome(None, time.perf_counter() - start, text(exc.stdout), text(exc.stderr))
    return RunOutcome(proc.returncode, time.perf_counter() - start, proc.stdout, proc.stderr)


def example_names(side: Side) -> set[str]:
    return {p.stem for p in (side.checkout / "examples").glob("*.toml")}


def example_duration(scenario: Path, cap_s: float | None) -> float | None:
    """The duration both sides run [s]: None (the scenario's own) without ``--duration``."""
    if cap_s is None:
        return None
    config = tomllib.loads(scenario.read_text(encoding="utf-8"))
    own = float(config.get("simulation", {}).get("duration_s", cap_s))
    rates = [float(s["rate_hz"]) for s in config.get("sensors", []) if "rate_hz" in s]
    floor = 0.0
    if rates and min(rates) <= SLOW_RATE_HZ:
        floor = SLOW_MIN_EPOCHS / min(rates)
    return min(own, max(cap_s, floor))


@dataclass
class Row:
    example: str
    file: str
    n_variables: str
    result: str
    details: str


def run_example(name: str, sides: tuple[Side, Side], tmp: Path, duration: float | None,
                seed: int | None, timeout_s: float) -> tuple[list[Row], bool, dict[str, float], list]:
    """Run one example on both sides (one after the other) and compare the run directories.

    Returns the table rows, whether everything is identical, the wall times [s] by side, and
    every difference line by file."""
    outcomes, dirs = {}, {}
    for side in sides:
        scenario = side.checkout / "examples" / f"{name}.toml"
        out = tmp / "runs" / side.label / name
        out.parent.mkdir(parents=True, exist_ok=True)
        dirs[side.label] = out
        if not scenario.is_file():
            outcomes[side.label] = RunOutcome(-1, 0.0, "", f"no examples/{name}.toml on {side.describe()}")
            continue
        cmd = [side.hifi, "run", Path("examples") / f"{name}.toml", "--out", out, "--no-progress"]
        if duration is not None:
            cmd += ["--duration", repr(duration)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        outcomes[side.label] = _run(cmd, side.checkout, timeout_s)
        print(f"  {name} on {side.label}: {outcomes[side.label].wall_s:.1f} s"
              + ("" if outcomes[side.label].ok else f" ({outcomes[side.label].why()})"), file=sys.stderr)
    times = {label: o.wall_s for label, o in outcomes.items()}
    base, head = (outcomes[s.label] for s in sides)
    if not (base.ok and head.ok):
        if not base.ok and not head.ok:
            why = f"failed on both: base {base.why()}; head {head.why()}"
        else:
            failed = "base" if not base.ok else "head"
            why = f"failed on {failed} only: {(base if not base.ok else head).why()}"
        return [Row(name, "(run)", "", "**failed**", why)], False, times, []
    rows, same, full = [], True, []
    for result in compare_run_dirs(dirs[sides[0].label], dirs[sides[1].label],
                                   roots_a=sides[0].roots(), roots_b=sides[1].roots()):
        if result.identical:
            notes = result.notes[:]
            details = "; ".join(notes) if notes else ("same file bytes" if result.same_file_bytes else "")
            rows.append(Row(name, result.name, str(result.n_variables or ""), "identical", details))
        else:
            same = False
            first = [d for d in result.differences if not d.startswith("@")][:MAX_NAMED] \
                or result.differences[:MAX_NAMED]
            details = (f"{len(result.differing)} differ ({', '.join(result.differing)}); "
                       + "; ".join(first))
            rows.append(Row(name, result.name, str(result.n_variables or ""), "**differs**", details))
            full.append((f"{name}: {result.name}", result.differences))
    return rows, same, times, full


def validation_scripts(side: Side) -> set[str]:
    """``validation/*.py`` with a ``__main__`` block (helpers such as sick_cola.py excluded)."""
    return {p.stem for p in (side.checkout / "validation").glob("*.py")
            if "__name__ == \"__main__\"" in p.read_text(encoding="utf-8")}


def run_validation(name: str, sides: tuple[Side, Side], timeout_s: float) -> tuple[Row, bool, dict[str, float]]:
    """Run one validation script on both sides and compare stdout line by line (each side's
    own folders replaced by ``<checkout>`` / ``<env>``)."""
    outcomes = {}
    for side in sides:
        script = side.checkout / "validation" / f"{name}.py"
        if not script.is_file():
            outcomes[side.label] = RunOutcome(-1, 0.0, "", f"no validation/{name}.py on {side.describe()}")
            continue
        outcomes[side.label] = _run([side.python, script], side.checkout, timeout_s)
        print(f"  validation/{name}.py on {side.label}: {outcomes[side.label].wall_s:.1f} s"
              + ("" if outcomes[side.label].ok else f" ({outcomes[side.label].why()})"), file=sys.stderr)
    times = {label: o.wall_s for label, o in outcomes.items()}
    base, head = (outcomes[s.label] for s in sides)
    # a path under a side's own checkout or environment (a figure written) is the same path
    lines_a, lines_b = ([_without_roots(line, tuple((v, k) for k, v in s.roots().items()))
                         for line in outcomes[s.label].stdout.splitlines()] for s in sides)
    label = f"validation/{name}.py"
    if base.returncode is None or head.returncode is None:
        return Row(label, "stdout", "", "**timeout**", f"base {base.why()}; head {head.why()}"), False, times
    if not base.ok and not head.ok and base.returncode == head.returncode and lines_a == lines_b \
            and base.why() == head.why():
        return Row(label, "stdout", "", "not compared", f"fails the same way on both: {base.why()}"), True, times
    if base.returncode != head.returncode:
        return Row(label, "stdout", "", "**differs**",
                   f"base {base.why() if not base.ok else 'exit 0'}; head {head.why() if not head.ok else 'exit 0'}"), False, times
    if lines_a == lines_b:
        return Row(label, "stdout", f"{len(lines_a)} lines", "identical", ""), True, times
    i = next((k for k, (x, y) in enumerate(zip(lines_a, lines_b)) if x != y), min(len(lines_a), len(lines_b)))
    n_diff = sum(x != y for x, y in zip(lines_a, lines_b)) + abs(len(lines_a) - len(lines_b))
    first_a = lines_a[i].strip() if i < len(lines_a) else "(end)"
    first_b = lines_b[i].strip() if i < len(lines_b) else "(end)"
    return Row(label, "stdout", f"{len(lines_a)} / {len(lines_b)} lines", "**differs**",
               f"{n_diff} lines differ; first, line {i + 1}: {first_a[:60]!r} -> {first_b[:60]!r}"), False, times


def print_table(rows: list[Row], times: dict[str, dict[str, float]]) -> None:
    print("| example | file | variables | result | details |")
    print("|---|---|---|---|---|")
    for row in rows:
        details = row.details.replace("|", "\\|")
        print(f"| {row.example} | {row.file} | {row.n_variables} | {row.result} | {details} |")
    if times:
        print()
        print("| run | base [s] | head [s] |")
        print("|---|---|---|")
        for name, t in times.items():
            print(f"| {name} | {t.get('base', float('nan')):.1f} | {t.get('head', float('nan')):.1f} |")


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Exit status 0: everything identical; 1: a difference or a "
                                        "run that failed on one side; 2: a bad argument.")
    ap.add_argument("--base", required=True, help="commit to compare against (hash, branch, tag, HEAD~N)")
    ap.add_argument("--head", default=WORKTREE,
                    help=f"commit of the new side (default {WORKTREE}: the working tree as it is now)")
    ap.add_argument("--examples", nargs="*", default=None, metavar="NAME",
                    help="example names (examples/NAME.toml; default: every example of either side; "
                         "the option with no name runs none)")
    ap.add_argument("--duration", type=float, default=None, metavar="S",
                    help="cap each example's duration [s] (both sides the same); an example whose slowest "
                         f"sensor runs at {SLOW_RATE_HZ:g} Hz or slower keeps {SLOW_MIN_EPOCHS} of its epochs "
                         "(default: the examples' own durations)")
    ap.add_argument("--seed", type=int, default=None, metavar="N", help="override the examples' seed (both sides)")
    ap.add_argument("--validation", nargs="*", default=None, metavar="NAME",
                    help="also run the validation scripts (validation/NAME.py; no name: every one) and "
                         "compare their stdout")
    ap.add_argument("--timeout", type=float, default=1800.0, metavar="S",
                    help="limit of one example run on one side [s] (default 1800)")
    ap.add_argument("--validation-timeout", type=float, default=900.0, metavar="S",
                    help="limit of one validation script on one side [s] (default 900)")
    ap.add_argument("--python-env", type=Path, default=None, metavar="PREFIX",
                    help="environment whose site-packages give the dependencies "
                         "(default: that of the interpreter running this script)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary checkouts, environments and runs")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.duration is not None and not args.duration > 0:
        print(f"same_bytes: error: --duration must be > 0 [s], got {args.duration!r}", file=sys.stderr)
        return 2
    tmp = make_root("same_bytes_")
    worktrees: list[Path] = []
    start = time.perf_counter()
    try:
        base_commit = resolve_commit(args.base, "--base")
        head_commit = None if args.head == WORKTREE else resolve_commit(args.head, "--head")
        site_dirs = base_site_packages(args.python_env)
        print(f"preparing base {args.base} and head {args.head} in {tmp}", file=sys.stderr)
        sides = (prepare_side("base", args.base, base_commit, tmp, site_dirs, worktrees),
                 prepare_side("head", args.head, head_commit, tmp, site_dirs, worktrees))

        available = example_names(sides[0]) | example_names(sides[1])
        names = sorted(available) if args.examples is None else list(args.examples)
        unknown = [n for n in names if n not in available]
        if unknown:
            raise SameBytesError(f"--examples {unknown!r}: no such example on either side "
                                 f"(known: {', '.join(sorted(available))})")
        scripts: list[str] = []
        if args.validation is not None:
            known = validation_scripts(sides[0]) | validation_scripts(sides[1])
            scripts = sorted(known) if not args.validation else [n.removesuffix(".py") for n in args.validation]
            unknown = [n for n in scripts if n not in known]
            if unknown:
                raise SameBytesError(f"--validation {unknown!r}: no such script on either side "
                                     f"(known: {', '.join(sorted(known))})")

        rows: list[Row] = []
        times: dict[str, dict[str, float]] = {}
        all_same = True
        every_difference: list[tuple[str, list[str]]] = []
        for name in names:
            scenario = next(s.checkout / "examples" / f"{name}.toml" for s in reversed(sides)
                            if (s.checkout / "examples" / f"{name}.toml").is_file())
            duration = example_duration(scenario, args.duration)
            label = name if duration is None else f"{name} ({duration:g} s)"
            r, same, t, full = run_example(name, sides, tmp, duration, args.seed, args.timeout)
            every_difference += full
            for row in r:
                row.example = label
            rows += r
            times[label] = t
            all_same &= same
        for name in scripts:
            row, same, t = run_validation(name, sides, args.validation_timeout)
            rows.append(row)
            times[row.example] = t
            all_same &= same

        print(f"base: {sides[0].describe()}; head: {sides[1].describe()}")
        print_table(rows, times)
        for what, lines in every_difference:
            print(f"\n{what}, every difference:")
            for line in lines[:MAX_LISTED]:
                print(f"  {line}")
            if len(lines) > MAX_LISTED:
                print(f"  ... and {len(lines) - MAX_LISTED} more")
        print(f"\n{'identical' if all_same else 'DIFFERENT'}: {len(rows)} rows, "
              f"{time.perf_counter() - start:.0f} s in all")
        return 0 if all_same else 1
    except TreeError as exc:
        print(f"same_bytes: error: {exc}", file=sys.stderr)
        return 2
    finally:
        remove_root(tmp, worktrees, keep=args.keep)


if __name__ == "__main__":
    sys.exit(main())
