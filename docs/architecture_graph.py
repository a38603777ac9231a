"""Generate the import diagrams of docs/architecture.md from the code.

The diagrams are Mermaid flowcharts (GitHub renders a ```mermaid block) computed with grimp, the
import-graph library under import-linter (``pip install -e ".[test]"``). grimp reads every import
statement, those inside functions and under ``TYPE_CHECKING`` included, so an arrow here is an
import somewhere in the source, not a guess.

- **Packages**: an arrow A --> B when a module of package A imports a module of package B
  (``hifi``, ``sensors``, ``gnss``, ``optics``, ``mpi``, ``autonomy``). The folders that use
  the packages without being imported (``tests``, ``validation``, ``benchmarks``,
  ``notebooks``) are read with :mod:`ast` (notebooks: their code cells) and drawn with dotted
  arrows to the packages they import.
- **The core**: hifi's top-level modules (a subpackage such as ``hifi.exporters`` counts as one,
  its submodules included) in the groups of :data:`CORE_GROUPS`, an arrow between two groups when
  a module of one imports a module of the other. A module missing from :data:`CORE_GROUPS` is
  drawn in a group of its own, ``ungrouped``, until it is placed here.

Usage, from the repository root::

    python docs/architecture_graph.py            # rewrite the block in docs/architecture.md
    python docs/architecture_graph.py --check    # exit 1 if the committed block is stale

``tests/e2e/test_architecture_doc.py`` runs the check.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- graph:begin -->"
END = "<!-- graph:end -->"

# The project's packages, from the top of the layers contract (pyproject.toml) down.
PACKAGES = ("autonomy", "mpi", "sensors", "gnss", "optics", "hifi")

# Folders that use the packages; nothing imports them.
USERS = ("tests", "validation", "benchmarks", "notebooks")

# hifi's rooms (subpackages) and top-level modules, from the top of the layers down (the order
# in hifi/__init__.py's docstring): (group id, title, modules). One group per room.
CORE_GROUPS = (
    ("cli", "command line", ("cli",)),
    ("gym", "hifi.gym: a scenario as a Gymnasium environment", ("gym",)),
    ("viz", "hifi.viz: plots and the replay page", ("viz",)),
    ("exporters", "hifi.exporters: file formats", ("exporters", "export")),
    ("analysis", "hifi.analysis: measures on outputs", ("analysis",)),
    ("run", "hifi.run: scenario, simulation, output", ("run",)),
    ("caster", "hifi.caster: ray casting", ("caster", "_cast_kernel")),
    ("runtime", "hifi.runtime: threads, interrupts, safety", ("runtime",)),
    ("world", "hifi.world, hifi.materials: the scene, its bodies, the material library", ("world", "materials")),
    ("api", "hifi.api: what a model author uses", ("api",)),
    ("base", "foundations", ("constants", "errors", "kernels", "_version", "_aliases")),
)


def build_graph():
    """The project's import graph (grimp), nothing cached on disk."""
    import grimp

    sys.path.insert(0, str(ROOT))
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def package_edges(graph) -> list[tuple[str, str]]:
    """(importer, imported) pairs of packages with at least one import between them."""
    return [(a, b) for a in PACKAGES for b in PACKAGES
            if a != b and graph.direct_import_exists(importer=a, imported=b, as_packages=True)]


def _imported_roots(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots & set(PACKAGES)


def user_edges() -> list[tuple[str, str]]:
    """(folder, package) pairs: a Python file or notebook code cell of the folder imports it."""
    edges = set()
    for folder in USERS:
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" not in path.parts:
                edges.update((folder, p) for p in _imported_roots(path.read_text(encoding="utf-8")))
        for path in sorted(base.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for cell in cells:
                if cell["cell_type"] == "code":
                    lines = "".join(cell["source"]).splitlines()
                    code = "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))
                    edges.update((folder, p) for p in _imported_roots(code))
    return sorted(edges, key=lambda e: (USERS.index(e[0]), PACKAGES.index(e[1])))


def core_groups(graph) -> list[tuple[str, str, tuple[str, ...]]]:
    """:data:`CORE_GROUPS` restricted to the modules that exist, plus ``ungrouped``."""
    present = sorted(m.split(".", 1)[1] for m in graph.find_children("hifi"))
    groups = [(gid, title, tuple(m for m in mods if m in present)) for gid, title, mods in CORE_GROUPS]
    placed = {m for _, _, mods in groups for m in mods}
    rest = tuple(m for m in present if m not in placed)
    if rest:
        groups.append(("ungrouped", "ungrouped (place them in docs/architecture_graph.py)", rest))
    return [g for g in groups if g[2]]


def core_edges(graph, groups) -> list[tuple[str, str]]:
    """(group, group) pairs: a module of the first imports a module of the second."""
    edges = []
    for a, _, mods_a in groups:
        for b, _, mods_b in groups:
            if a != b and any(graph.direct_import_exists(importer=f"hifi.{x}", imported=f"hifi.{y}",
                                                         as_packages=True)
                              for x in mods_a for y in mods_b):
                edges.append((a, b))
    return edges


def render(graph=None) -> str:
    """The Markdown between the markers: the two Mermaid diagrams."""
    graph = build_graph() if graph is None else graph
    out = ["<!-- Generated by docs/architecture_graph.py from the imports; do not edit by hand. -->",
           "",
           "**Packages** (an arrow: the left one imports the right one; dotted: folders that only use them)",
           "",
           "```mermaid",
           "flowchart TD"]
    out += [f"    {p}[{p}]" for p in PACKAGES]
    out += [f"    {u}([{u}/])" for u in USERS]
    out += [f"    {a} --> {b}" for a, b in package_edges(graph)]
    out += [f"    {a} -.-> {b}" for a, b in user_edges()]
    out += ["```",
            "",
            "**The core, `hifi`**, its rooms (subpackages, one idea each) and top-level modules, in "
            "the layer order of `hifi/__init__.py` (an arrow: a module of "
            "one group imports a module of the other)",
            "",
            "```mermaid",
            "flowchart LR"]
    groups = core_groups(graph)
    for gid, title, mods in groups:
        out.append(f'    subgraph {gid} ["{title}"]')
        out += [f'        {gid}__{m.lstrip("_")}["{m}"]' for m in mods]
        out.append("    end")
    out += [f"    {a} --> {b}" for a, b in core_edges(graph, groups)]
    out.append("```")
    return "\n".join(out) + "\n"


def splice(text: str, block: str) -> str:
    """``text`` with what lies between the markers replaced by ``block``."""
    head, sep, rest = text.partition(BEGIN)
    if not sep or END not in rest:
        raise ValueError(f"{DOC}: the markers {BEGIN!r} and {END!r} are missing")
    return head + BEGIN + "\n" + block + END + rest.split(END, 1)[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/architecture.md is stale")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = splice(text, render())
    if args.check:
        if new != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run python docs/architecture_graph.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
