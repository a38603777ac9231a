"""Shared pytest fixtures.

Reference data lives in ``../shared/data`` beside the checkout (see its SOURCES.md). A test
that needs a file there asks for it with ``shared_file("gnss/07590920.05o")``; when the file is
absent the test is skipped and the skip reason names the file, so a missing file is visible in
``pytest -ra`` output, never a silent pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HIFI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def shared_path(relative: str) -> Path:
    """Path of a reference file in ../shared/data, skipping the calling test when absent."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"reference file missing: {path}")
    return path


@pytest.fixture
def shared_file():
    """Fixture form of :func:`shared_path`: ``shared_file("gnss/brdc1820.10n")``."""
    return shared_path
