"""The direction of the imports between the project's packages (CONTRACTS.md, "Dependencies point
one way"), held by import-linter's contracts in pyproject.toml ``[tool.importlinter]``, and the
one rule import-linter cannot express: no module imports another module's private ``_name``.

- :func:`test_contracts_hold`: ``lint-imports --config pyproject.toml`` passes on the repository.
- :func:`test_contract_bites`: the same contracts, copied verbatim, fail on a small package tree
  in a temporary directory that breaks exactly one of them (and pass on the same tree without
  the breach), so a contract that silently matches nothing cannot pass unnoticed.
- :func:`test_no_private_name_imported_from_another_module`: an ``ast`` walk of the product
  packages.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO_ROOT

ROOT = REPO_ROOT
PACKAGES = ("hifi", "sensors", "gnss", "optics", "mpi", "autonomy")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("importlinter", reason="import-linter (test extra: pip install -e '.[test]') checks the contracts")
    exe = Path(sys.executable).with_name("lint-imports")
    cmd = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or "lint-imports"]
    # --no-cache: nothing written beside the sources; the graph of this project takes < 1 s.
    return subprocess.run(cmd + ["--config", "pyproject.toml", "--no-cache"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_contracts_hold():
    r = _lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout, r.stdout


# A tree with the six root packages, each importing only what the contracts allow. Every case
# below adds one module that breaks a contract (the layers contract overlaps the others, so it
# may break too); that contract must be reported broken, and the offending import named.
_CLEAN = {
    "hifi/__init__.py": "",
    "hifi/constants.py": "",
    "hifi/api/__init__.py": "",
    "hifi/api/timebase.py": "",
    "hifi/scene.py": "from . import constants\n",
    "hifi/model.py": "from .scene import constants\n",
    "gnss/__init__.py": "",
    "gnss/orbit.py": "from hifi import constants\nfrom hifi.api import timebase\n",
    "optics/__init__.py": "",
    "optics/spectral.py": "from hifi import constants\n",
    "sensors/__init__.py": "",
    "sensors/lidar.py": "import hifi.model\nimport gnss.orbit\nimport optics.spectral\n",
    "mpi/__init__.py": "",
    "mpi/runner.py": "import hifi.scene\nimport sensors.lidar\n",
    "autonomy/__init__.py": "",
    "autonomy/drivers.py": "import hifi.model\nimport sensors.lidar\n",
}

_BREACHES = {
    # (a) the core imports a package above it, inside a function (grimp sees lazy imports)
    "core": ("hifi/view.py", "def f():\n    from sensors.lidar import x\n", "hifi.view -> sensors.lidar"),
    # (b) gnss imports a hifi module other than constants and timebase
    "gnss": ("gnss/solver.py", "from hifi.scene import constants\n", "gnss.solver -> hifi.scene"),
    # (b) optics imports gnss
    "optics": ("optics/sun.py", "import gnss.orbit\n", "optics.sun -> gnss.orbit"),
    # (c) a cycle between packages: sensors imports the MPI runner, which imports sensors
    "packages": ("sensors/gps.py", "def f():\n    import mpi.runner\n", "sensors.gps -> mpi.runner"),
    # (c) a cycle inside hifi closed by a function-level import: model -> scene -> model
    "acyclic": ("hifi/scene.py", "from . import constants\n\ndef f():\n    from .model import x\n", ".scene -> .model"),
}


def _contract_names() -> dict:
    import tomllib
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert sorted(cfg["root_packages"]) == sorted(PACKAGES)
    return {c["id"]: c["name"] for c in cfg["contracts"]}


def _tree(tmp_path: Path, extra: dict) -> Path:
    for rel, text in {**_CLEAN, **extra}.items():
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text))
    shutil.copyfile(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")   # the contracts, verbatim
    return tmp_path


def test_every_contract_has_a_breach_case():
    assert set(_contract_names()) == set(_BREACHES)


@pytest.mark.parametrize("contract", sorted(_BREACHES))
def test_contract_bites(tmp_path, contract):
    names = _contract_names()
    rel, text, edge = _BREACHES[contract]
    clean = _lint_imports(_tree(tmp_path / "clean", {}))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"Contracts: {len(names)} kept, 0 broken." in clean.stdout, clean.stdout
    broken = _lint_imports(_tree(tmp_path / "broken", {rel: text}))
    assert broken.returncode != 0, broken.stdout + broken.stderr
    assert f"{names[contract]} BROKEN" in broken.stdout, broken.stdout
    assert edge in broken.stdout, broken.stdout      # the temporary tree was linted, not the repository


# Private names imported from another module, allowed for now: none since every such name
# became public. Keys: (importing module, imported module, name); an entry no longer found fails.
KNOWN_PRIVATE_IMPORTS: set = set()


def _private_imports() -> dict:
    """(importer, module, name) -> 'path:line' of every ``from M import _name`` in the product
    packages. A private *module* (``from . import _checks``, ``from ._common import x``) is a
    package's internal file, not a private name of another module, and is not reported."""
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            parts = list(rel.with_suffix("").parts)
            importer = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            package = parts[:-1]                      # the package a relative import starts from
            for node in ast.walk(ast.parse(path.read_text(), filename=str(rel))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                base = package[:len(package) - node.level + 1] if node.level else []
                module = ".".join(base + (node.module.split(".") if node.module else []))
                for alias in node.names:
                    name = alias.name
                    if not name.startswith("_") or name.startswith("__"):
                        continue
                    target = ROOT.joinpath(*module.split("."), name)
                    if target.with_suffix(".py").is_file() or (target / "__init__.py").is_file():
                        continue                      # a private submodule
                    found[(importer, module, name)] = f"{rel}:{node.lineno}"
    return found


def test_no_private_name_imported_from_another_module():
    found = _private_imports()
    new = {k: v for k, v in found.items() if k not in KNOWN_PRIVATE_IMPORTS}
    assert not new, ("a module imports another module's private name (make it public, or move "
                     "it to the module that needs it): "
                     + "; ".join(f"{where}: from {m} import {n}" for (_, m, n), where in sorted(new.items())))
    gone = KNOWN_PRIVATE_IMPORTS - set(found)
    assert not gone, f"no longer imported, remove from KNOWN_PRIVATE_IMPORTS: {sorted(gone)}"


def test_private_import_check_sees_a_breach(tmp_path, monkeypatch):
    # The walk itself, on a module that imports a private name: reported, with its line.
    fake = tmp_path / "hifi"
    fake.mkdir()
    (fake / "a.py").write_text("x = 1\n")
    (fake / "b.py").write_text("import os\n\nfrom .a import _hidden, visible\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", ("hifi",))
    assert _private_imports() == {("hifi.b", "hifi.a", "_hidden"): "hifi/b.py:3"}
