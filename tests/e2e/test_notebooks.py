"""The notebooks in notebooks/ are committed clean: no outputs, no execution counts.

They run (and are checked) by ``pytest --nbmake notebooks`` (the README's test command; nbmake
in the test extra). Here only their committed form: outputs make diffs unreadable, bloat the
repository and go stale as the code changes. Strip them with
``jupyter nbconvert --clear-output --inplace notebooks/*.ipynb`` before committing.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO_ROOT

REPO = REPO_ROOT
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_notebooks_are_there():
    names = [p.name for p in NOTEBOOKS]
    assert len(names) >= 6, names
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", n) for n in names), names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3"
    assert "widgets" not in nb["metadata"]                      # no saved widget state
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: cells {dirty} have outputs or execution counts; strip them with "
                       f"jupyter nbconvert --clear-output --inplace {path.relative_to(REPO)}")
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and "".join(first["source"]).startswith("# ")   # a title


def test_the_readme_lists_every_notebook():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in NOTEBOOKS if f"notebooks/{p.name}" not in readme]
    assert not missing, f"README.md does not mention {missing}"


def test_ci_runs_the_readme_test_command():
    """.ci/run runs exactly the README's second command (the test suite, then the notebooks)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    ci = [ln for ln in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if ln.strip() and not ln.lstrip().startswith("#")]
    assert ci[-1].strip() == block[1].strip()
    assert "pytest --nbmake notebooks" in block[1]
