"""Model registry: the entry-point group ``hifi.models`` (name -> class).

``hifi`` never imports ``sensors``, ``gnss``, ``optics`` or ``mpi`` by name; it finds models
through the entry points declared in ``pyproject.toml``, so a third-party package can add a
model without touching hifi. :func:`register_model` adds one in-process (for notebooks and
tests).
"""

from __future__ import annotations

from importlib.metadata import entry_points

GROUP = "hifi.models"
_extra: dict[str, type] = {}


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
