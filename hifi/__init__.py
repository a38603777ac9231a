"""hifi: high-fidelity sensor simulation over Embree ray casting.

    import hifi
    sim = hifi.load("scenario.toml")            # or hifi.Simulation.from_dict(d, base_dir=...)
    results = sim.run(out=None)                  # dict: sensor name -> xarray.Dataset
    pts = results["velodyne"].hifi.points(noisy=True)
    run = hifi.open_run("out")                   # a run directory read back: name -> xarray.Dataset

Importing hifi builds nothing and starts nothing (no BVH, no MPI, no threads), and imports
nothing heavy: each public name loads its submodule when first used.

The modules live in rooms (subpackages), one idea each. From the top down, a room imports only
the rooms and modules below it (the ``acyclic`` contract of ``pyproject.toml`` checks that no
two import each other):

- ``hifi.cli`` (the command line), ``hifi.export`` (the exporters' functions under one name)
  and ``hifi.gym`` (a scenario as a Gymnasium environment, over :mod:`hifi.run.session`);
- ``hifi.viz`` (plots, the replay page), ``hifi.exporters`` (file formats) and
  ``hifi.analysis`` (measures on outputs);
- ``hifi.run``: scenario, simulation, time manager, output and datasets;
- ``hifi.caster`` (with ``hifi._cast_kernel``): ray casting against the scene;
- ``hifi.runtime``: threads, interrupts, progress reports, disk-space safety;
- ``hifi.world``: the scene, motion, vehicles, the Earth;
- ``hifi.api``: what a model author uses (model, params, registry, bus, rng, timebase), with
  the cost estimate (``Model.estimate`` returns its ``ModelEstimate``) and the mesh generators
  whose faces the estimate counts (in ``hifi.world`` they would close a cycle api -> world ->
  api, since ``hifi.world.vehicle`` is a model);
- the foundations: ``hifi.errors``, ``hifi.constants``, ``hifi.kernels``, ``hifi._version``.

The moved modules' old flat names (``scene``, ``plot`` ... directly under ``hifi``) still
import, as the same module objects (:mod:`hifi._aliases`); those the documentation names stay
silent, the others warn with a ``DeprecationWarning`` naming the new path.
"""

from __future__ import annotations

import sys as _sys

from . import _aliases
from ._version import __version__

_aliases.install()

#: Public names and the submodule each comes from. They are imported on first use (PEP 562
#: module ``__getattr__``): ``import hifi`` takes milliseconds, so ``hifi run`` has its signal
#: handlers in place before numpy, scipy and trimesh load (:mod:`hifi.runtime.interrupt`), and
#: ``hifi.Simulation`` costs the imports it needs when it is first named.
_LAZY = {
    "Command": "api.bus", "LogMessage": "api.bus", "Message": "api.bus", "MessageBus": "api.bus",
    "PoseMessage": "api.bus", "SensorData": "api.bus",
    "Hits": "caster", "RayCaster": "caster",
    "ModelError": "errors", "OutputError": "errors", "ScenarioError": "errors",
    "ScenarioWarning": "errors",
    "Model": "api.model", "RunContext": "api.model", "Sensor": "api.model", "Var": "api.model",
    "Pose": "world.motion", "Track": "world.motion",
    "Param": "api.params",
    "available_models": "api.registry", "load_model": "api.registry", "register_model": "api.registry",
    "Material": "world.scene", "Scene": "world.scene",
    "Simulation": "run.simulation", "LiveServer": "viz.live",
    "open_run": "run.reading", "open_sweep": "run.sweep", "run_sweep": "run.sweep",
    "TimeManager": "run.timemanager",
}


def __getattr__(name: str):
    """A public name of :data:`_LAZY`, or a submodule (``hifi.kernels`` after a bare ``import
    hifi``, which worked when this module imported everything), imported now."""
    from importlib import import_module
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value                     # the next lookup is a plain attribute
        return value
    if not name.startswith("__"):
        try:
            return import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":    # the submodule exists; something it needs does not
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY})


class _AccessorOnXarrayImport:
    """Meta path finder that registers the ``ds.hifi`` accessor right after xarray is imported.

    Importing xarray (and pandas with it) takes 0.5-0.7 s, more than the rest of ``import
    hifi``; ``hifi run`` needs it only for its results, at the end. The accessor is registered
    when xarray finishes loading, however it is imported (by the user before or after hifi, or
    by hifi), so ``xr.open_dataset(...).hifi`` works as if hifi had imported xarray itself.
    """

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "xarray":
            return None
        _sys.meta_path.remove(cls)                  # one shot: find xarray the usual way
        from importlib.util import find_spec
        spec = find_spec("xarray")
        if spec is None or spec.loader is None:
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            from .run import accessor  # noqa: F401  (registers the accessor)

        spec.loader.exec_module = exec_module
        return spec


if "xarray" in _sys.modules:
    from .run import accessor as _accessor  # noqa: F401  (registers the ds.hifi accessor)
elif _AccessorOnXarrayImport not in _sys.meta_path:
    _sys.meta_path.insert(0, _AccessorOnXarrayImport)


def load(path):
    """Load and validate a scenario file into a :class:`Simulation`; raises
    :class:`ScenarioError` on any bad value."""
    from .run.simulation import Simulation
    return Simulation.from_file(path)


__all__ = [
    "__version__", "load", "Simulation", "ScenarioError", "ScenarioWarning", "ModelError", "OutputError", "Scene",
    "Material", "Pose",
    "Track", "RayCaster", "Hits", "Model", "Sensor", "Var", "RunContext", "Param", "MessageBus",
    "Message", "SensorData", "PoseMessage", "LogMessage", "Command", "TimeManager",
    "available_models", "load_model", "register_model", "open_run", "open_sweep", "run_sweep",
]
