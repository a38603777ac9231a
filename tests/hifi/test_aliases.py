"""The old flat module names of hifi (``hifi.scene``, ``hifi.plot`` ...) after the move into rooms.

An old name imports the very module object of its new one; the names the documentation promised
import silently, every other one warns with a DeprecationWarning naming the new path; and the
repository's own code uses the new names only (hifi/_aliases.py).
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import hifi
from hifi import _aliases

from conftest import REPO_ROOT

ROOT = REPO_ROOT
OLD = sorted(_aliases.MOVED)


def _fresh_import(old: str):
    """Import the alias ``hifi.<old>`` as if for the first time (the new module stays loaded)."""
    sys.modules.pop(f"hifi.{old}", None)
    hifi.__dict__.pop(old, None)
    return importlib.import_module(f"hifi.{old}")


def test_silent_names_are_moved_names():
    assert _aliases.SILENT <= set(_aliases.MOVED)


@pytest.mark.parametrize("old", OLD)
def test_old_name_is_the_new_module(old):
    new = importlib.import_module(f"hifi.{_aliases.MOVED[old]}")
    spec = new.__spec__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = _fresh_import(old)
    assert module is new
    assert module.__name__ == f"hifi.{_aliases.MOVED[old]}"
    assert module.__spec__ is spec                  # the alias leaves the module's own spec alone
    assert getattr(hifi, old) is new                # attribute access after a bare `import hifi`


@pytest.mark.parametrize("old", sorted(_aliases.SILENT))
def test_documented_names_import_silently(old):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fresh_import(old)


@pytest.mark.parametrize("old", sorted(set(OLD) - _aliases.SILENT))
def test_other_old_names_warn_with_the_new_path(old):
    new = f"hifi.{_aliases.MOVED[old]}"
    with pytest.warns(DeprecationWarning, match=rf"hifi\.{old} is deprecated: import {new} instead") as rec:
        _fresh_import(old)
    assert rec[0].filename == __file__              # points at the importing line, not importlib


def test_from_import_of_an_old_name():
    from hifi.scene import Scene  # noqa: F401  (a documented name: silent)
    from hifi.world.scene import Scene as NewScene
    assert Scene is NewScene


def test_python_m_old_name_runs_the_new_module():
    """``python -m hifi.reference`` (a documented command) still prints the scenario reference."""
    old = subprocess.run([sys.executable, "-m", "hifi.reference"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    new = subprocess.run([sys.executable, "-m", "hifi.run.reference"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert old == new and old


def _old_name(module: str | None) -> bool:
    if not module or not module.startswith("hifi."):
        return False
    return module.split(".")[1] in _aliases.MOVED


def _old_uses(source: str, package: str | None) -> list[str]:
    """Old names a Python source imports or names in a string (``mock.patch("hifi.output.X")``).
    ``package``: the package a relative import is relative to, for files inside hifi."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if _old_name(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level and package:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            if _old_name(module):
                found.append(module)
            elif module == "hifi":
                found += [f"hifi.{a.name}" for a in node.names if a.name in _aliases.MOVED]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for word in node.value.replace("`", " ").replace(":", " ").split():
                if _old_name(word.strip("'\"(),")) and word.strip("'\"(),").count(".") >= 1:
                    found.append(word.strip("'\"(),"))
    return found


def test_repository_code_uses_the_new_names():
    # bench_run.py times commits from before the subpackages too: its timing script falls back
    # to their hifi.timemanager on purpose
    skip = {ROOT / "hifi" / "_aliases.py", Path(__file__).resolve(), ROOT / "tests" / "e2e" / "test_architecture.py",
            ROOT / "benchmarks" / "bench_run.py"}
    uses = {}
    for folder in ("hifi", "sensors", "gnss", "optics", "mpi", "autonomy", "tests", "benchmarks", "validation",
                   "examples", "docs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in skip or "_build" in path.parts or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(ROOT)
            package = ".".join(rel.parts[:-1]) if folder == "hifi" else None
            found = _old_uses(path.read_text(encoding="utf-8"), package)
            if found:
                uses[str(rel)] = found
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                code = "\n".join(ln for ln in "".join(cell["source"]).splitlines()
                                 if not ln.lstrip().startswith(("%", "!")))
                found = _old_uses(code, None)
                if found:
                    uses.setdefault(str(path.relative_to(ROOT)), []).extend(found)
    assert uses == {}


def test_importing_the_packages_uses_no_deprecated_name():
    """Every module of the project imported with the aliases' warnings as errors."""
    code = textwrap.dedent("""
        import importlib, pkgutil, warnings
        warnings.filterwarnings("error", message=r"hifi\\..* is deprecated")
        for root in ("hifi", "sensors", "gnss", "optics", "mpi", "autonomy"):
            package = importlib.import_module(root)
            for info in pkgutil.walk_packages(package.__path__, root + "."):
                try:
                    importlib.import_module(info.name)
                except ImportError as exc:      # an optional dependency that is not installed
                    if "deprecated" in str(exc):
                        raise
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
