"""Comments and docstrings of the product packages state reasons, not work-item numbers.

A reader of the code has the repository, not the tracker or the developers' notes: "issue 12",
"CONTRACTS" or "house style 6" tells them nothing. Citations of public sources stay allowed:
another project's tracker by repository and number (``ros-drivers/velodyne issue #60``) and a
document's edition (``Galileo OS SIS ICD, issue 2.0``) do not match.
"""

import re

from conftest import REPO_ROOT

ROOT = REPO_ROOT
PACKAGES = ("hifi", "sensors", "gnss", "optics", "mpi", "autonomy")
SUFFIXES = (".py", ".md", ".toml", ".txt")

#: What a reader outside the team cannot resolve: a work-item number ("issue 12", "issues 12
#: and 13", "issue-10"; not "issue #60" of a named repository, not a document's "issue 2.0"),
#: a reference to "the issue", and the developers' documents outside the repository.
FORBIDDEN = re.compile(
    r"\bissues?[ -]\d+(?![.\d])"
    r"|\b(?:the|this|that) issue\b"
    r"|\bhouse[ _]style\b"
    r"|(?-i:\bCONTRACTS\b)",
    re.IGNORECASE,
)


def offending_lines():
    found = []
    for package in PACKAGES:
        folder = ROOT / package
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or "__pycache__" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                if FORBIDDEN.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_pattern_catches_work_items_and_spares_public_citations():
    # expected: hand-written cases of each kind (regression cases for the pattern itself)
    for bad in ("(issue 12)", "Issue 11 (5):", "issues 12 and 13", "the issue-10 seam",
                "as the issue specifies", "CONTRACTS \"Datasets\"", "house style 6", "HOUSE_STYLE.md"):
        assert FORBIDDEN.search(bad), bad
    for good in ("ros-drivers/velodyne issue #60", "Galileo OS SIS ICD (issue 2.0, 2021)",
                 "issue of data, ephemeris", "the contracts identity"):
        assert not FORBIDDEN.search(good), good


def test_product_text_cites_no_work_items():
    found = offending_lines()
    assert not found, ("comments and docstrings must state the reason, not a work item or a document "
                       "outside the repository:\n" + "\n".join(found))
