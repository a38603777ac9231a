"""Shared pytest fixtures.

Two kinds of reference data:

- Vendored files in ``tests/data`` (licences and sources in each folder's README.md), part of
  the repository. A test asks for one with ``test_data("gnss/07590920.05o")``; a missing file
  FAILS the test, because a clone without it is broken, not merely incomplete.
- Files in ``../shared/data`` beside the checkout (see its SOURCES.md) that the project may not
  ship (non-commercial licences, large recordings). A test asks for one with
  ``shared_file("lidar/nuscenes_hdl32e_sweep.pcd.bin")``; when the file is absent the test is
  skipped and the skip reason names the file, so a missing file is visible in ``pytest -ra``
  output, never a silent pass. ``HIFI_SHARED_DATA`` overrides the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = REPO_ROOT / "tests" / "data"
SHARED_DATA = Path(os.environ.get("HIFI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def load_validation(name: str):
    """The validation script ``validation/<name>.py`` as a module (imported once; the folder goes
    on ``sys.path`` so the scripts' own imports of each other work)."""
    import importlib.util
    import sys
    folder = REPO_ROOT / "validation"
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_data_path(relative: str) -> Path:
    """Path of a vendored file in tests/data; fails the calling test when it is missing."""
    path = TEST_DATA / relative
    if not path.is_file():
        pytest.fail(f"vendored test file missing from the repository: {path} "
                    f"(see {path.parent / 'README.md'})", pytrace=False)
    return path


def shared_path(relative: str) -> Path:
    """Path of a reference file in ../shared/data, skipping the calling test when absent."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"reference file missing: {path}")
    return path


@pytest.fixture
def test_data():
    """Fixture form of :func:`test_data_path`: ``test_data("gnss/brdc1820.10n")``."""
    return test_data_path


@pytest.fixture
def shared_file():
    """Fixture form of :func:`shared_path`: ``shared_file("lidar/ouster_os1_128.pcap")``."""
    return shared_path
