"""The API reference (docs/: Sphinx autodoc + recursive autosummary + numpydoc, myst-parser for
the Markdown pages) builds with warnings as errors, and covers every public module.

- :func:`test_docs_build_without_warnings`: ``sphinx-build -W --keep-going -b html docs`` into a
  temporary directory (autosummary regenerates its stubs in docs/_autosummary/, which git
  ignores), then a page for every public module not excluded in docs/conf.py. About 40 s on two
  cores. Skips, naming the extra, where Sphinx, numpydoc or myst-parser is not installed.
- :func:`test_packages_import_without_mpi`: importing the six packages, as autodoc does, loads
  neither mpi4py nor the ray caster's Embree module.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

ROOT = REPO_ROOT
DOCS = ROOT / "docs"
PACKAGES = ("hifi", "sensors", "gnss", "optics", "mpi", "autonomy")


def _excluded_modules() -> list[str]:
    """``API_EXCLUDED_MODULES`` of docs/conf.py, read without running the file."""
    tree = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "API_EXCLUDED_MODULES" for t in targets):
                return list(ast.literal_eval(node.value))
    raise AssertionError("docs/conf.py defines no API_EXCLUDED_MODULES")


def _public_modules() -> list[str]:
    """Every module of the six packages whose dotted name has no part starting with ``_``."""
    names = []
    for package in PACKAGES:
        names.append(package)
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return names


def test_docs_build_without_warnings(tmp_path):
    for module, what in (("sphinx", "Sphinx"), ("numpydoc", "numpydoc"), ("myst_parser", "myst-parser")):
        pytest.importorskip(module, reason=f"{what} (docs extra: pip install -e '.[docs]') builds the API reference")
    # In place, not on a copy: the Markdown pages link to files beside docs/ (../README.md).
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 0, f"sphinx-build -W failed:\n{proc.stderr[-6000:]}"

    excluded = _excluded_modules()
    missing = [name for name in _public_modules()
               if not any(name == e or name.startswith(e + ".") for e in excluded)
               and not (out / "_autosummary" / f"{name}.html").is_file()]
    assert not missing, f"public modules without a page in the API reference: {missing}"
    for page in ("index", "api", "scenario", "datasets"):
        assert (out / f"{page}.html").is_file(), page


def test_packages_import_without_mpi():
    code = (
        "import sys\n"
        f"for name in {PACKAGES!r}:\n"
        "    __import__(name)\n"
        "print(sorted(m for m in ('mpi4py', 'embreex') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
