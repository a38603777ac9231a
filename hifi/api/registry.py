"""Model registry: the entry-point group ``hifi.models`` (name -> class).

``hifi`` never imports ``sensors``, ``gnss``, ``optics`` or ``mpi`` by name; it finds models
through the entry points declared in ``pyproject.toml``, so a third-party package can add a
model without touching hifi. :func:`register_model` adds one in-process (for notebooks and
tests).
"""

from __future__ import annotations

import functools
from importlib import metadata

GROUP = "hifi.models"
_extra: dict[str, type] = {}


@functools.cache
def _installed_entry_points():
    """Every installed distribution's entry points, read once per process."""
    return metadata.entry_points()


def entry_points(*, group: str):
    """The entry points of ``group`` (hifi's models, exporters, plots, partitions).

    ``importlib.metadata.entry_points(group=...)`` reads the metadata of every installed
    distribution on each call (about 10 ms with the test extras installed; a run of the
    crossing example made 18 such calls, 0.2-0.5 s of its start-up); here they are read once
    per process, so a distribution installed while a process runs is not seen by it.
    """
    return _installed_entry_points().select(group=group)


def register_model(name: str, cls: type) -> None:
    """Register ``cls`` under ``name`` for this process (overrides an entry point of that name)."""
    _extra[name] = cls


def available_models() -> list[str]:
    """Names of every registered model, sorted."""
    names = {ep.name for ep in entry_points(group=GROUP)} | set(_extra)
    return sorted(names)


def load_model(name: str) -> type:
    """The class registered as ``name``.

    Raises
    ------
    KeyError
        If no model of that name is registered.
    """
    if name in _extra:
        return _extra[name]
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            return ep.load()
    raise KeyError(name)
