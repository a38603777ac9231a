"""docs/architecture.md's import diagrams are current: a regression check against the generator.

The expected value is the generator's own output on today's code (docs/architecture_graph.py,
grimp's import graph), so this is a regression check of the committed document, not of the
code: when an import between packages or between hifi's groups of modules appears or goes,
this fails until ``python docs/architecture_graph.py`` is run and its change committed.
"""

from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO_ROOT

ROOT = REPO_ROOT


def _generator():
    pytest.importorskip("grimp", reason="grimp (with import-linter, test extra: pip install -e '.[test]') "
                                        "builds the import graph")
    spec = importlib.util.spec_from_file_location("architecture_graph", ROOT / "docs" / "architecture_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_diagram_is_what_the_generator_writes_now():
    gen = _generator()
    text = gen.DOC.read_text(encoding="utf-8")
    committed = text.split(gen.BEGIN, 1)[1].split(gen.END, 1)[0]
    assert committed == "\n" + gen.render(), (
        "docs/architecture.md's diagram is stale: run python docs/architecture_graph.py and commit it")


def test_every_core_module_is_grouped():
    """A new top-level hifi module shows in the diagram as 'ungrouped' until it is placed."""
    gen = _generator()
    groups = gen.core_groups(gen.build_graph())
    assert "ungrouped" not in [g[0] for g in groups], groups[-1]


def test_generator_sees_a_known_arrow_and_no_reverse_one():
    """The arrows come from the imports: sensors imports gnss (sensors.gps), the core imports no
    package built on it (import-linter's 'core' contract)."""
    gen = _generator()
    edges = gen.package_edges(gen.build_graph())
    assert ("sensors", "gnss") in edges
    assert not [e for e in edges if e[0] == "hifi"], edges
