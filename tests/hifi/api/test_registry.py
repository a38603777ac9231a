"""The registries: entry points name the classes they load, and the vendored data is intact."""

from __future__ import annotations

import hashlib
from importlib.metadata import entry_points

import pytest

import hifi
from hifi.api.model import Model

from conftest import REPO_ROOT, TEST_DATA


@pytest.mark.parametrize("ep", sorted(entry_points(group="hifi.models"), key=lambda e: e.name),
                         ids=lambda e: e.name)
def test_model_entry_point_name_is_the_model_name(ep):
    # pyproject.toml [project.entry-points."hifi.models"]: the name a scenario uses (`model = ...`)
    # must be the class's own model_name, which goes into every dataset's `sensor_model`.
    cls = ep.load()
    assert issubclass(cls, Model)
    assert cls.model_name == ep.name
    assert hifi.load_model(ep.name) is cls


# sha256 of the files copied from ../shared/data/lidar (tests/data/lidar/README.md): the tests of
# later issues compare against these recordings, so they must stay byte for byte as published.
VENDORED = {
    "lidar/ouster_os1_128.json": "3df9e8ebbd62c79aaea34981b0c838d6ada847d9f9b5d0af95770a4036057e49",
    "lidar/ouster_os1_128.pcap": "cad3545a6246c2638ad02f3884f880143496127192eca3329b42aac92a06fba5",
    "lidar/sick_lms511_20210301.pcapng.json": "3fb2d5b7d3b766d595cc10d2f1b0b3c3b87395f8c65fea1afebee90bcd3b9744",
    "lidar/sick_tim781s_20210125.pcapng.json": "85e93e9c5c5944fc2399b5f52f2267f6880962898798e3b0b3e969af69c630f5",
}


@pytest.mark.parametrize("name", sorted(VENDORED))
def test_vendored_recordings_are_unmodified(name):
    path = TEST_DATA / name
    assert path.is_file(), f"vendored reference file missing: {path}"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == VENDORED[name]


def test_scenario_reference_is_current():
    # docs/scenario.md is rendered from the Param declarations the loader validates against;
    # regenerate with `python -m hifi.run.reference > docs/scenario.md` after changing a parameter.
    from hifi.run.reference import scenario_reference
    shipped = (REPO_ROOT / "docs" / "scenario.md").read_text(encoding="utf-8")
    assert shipped == scenario_reference(), "docs/scenario.md is stale: python -m hifi.run.reference > docs/scenario.md"


def test_dataset_reference_is_current():
    # docs/datasets.md lists every variable of every shipped model's file, from short runs of
    # the examples; regenerate with `python -m hifi.run.reference datasets > docs/datasets.md`.
    from hifi.run.reference import dataset_reference, example_datasets
    root = REPO_ROOT
    shipped = (root / "docs" / "datasets.md").read_text(encoding="utf-8")
    assert shipped == dataset_reference(example_datasets(root / "examples")), \
        "docs/datasets.md is stale: python -m hifi.run.reference datasets > docs/datasets.md"
