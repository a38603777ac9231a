"""hifi: high-fidelity sensor simulation over Embree ray casting.

    import hifi
    sim = hifi.load("scenario.toml")            # or hifi.Simulation.from_dict(d, base_dir=...)
    results = sim.run(out=None)                  # dict: sensor name -> xarray.Dataset
    pts = results["velodyne"].hifi.points(noisy=True)

Importing hifi builds nothing and starts nothing (no BVH, no MPI, no threads).
"""

from __future__ import annotations

import sys as _sys

from ._version import __version__
from .bus import Command, LogMessage, Message, MessageBus, PoseMessage, SensorData
from .caster import Hits, RayCaster
from .errors import ModelError, OutputError, ScenarioError, ScenarioWarning
from .model import Model, RunContext, Sensor, Var
from .motion import Pose, Track
from .params import Param
from .registry import available_models, load_model, register_model
from .scene import Material, Scene
from .simulation import Simulation
from .timemanager import TimeManager


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
            from . import accessor  # noqa: F401  (registers the accessor)

        spec.loader.exec_module = exec_module
        return spec


if "xarray" in _sys.modules:
    from . import accessor as _accessor  # noqa: F401  (registers the ds.hifi accessor)
elif _AccessorOnXarrayImport not in _sys.meta_path:
    _sys.meta_path.insert(0, _AccessorOnXarrayImport)


def load(path) -> Simulation:
    """Load and validate a scenario file; raises :class:`ScenarioError` on any bad value."""
    return Simulation.from_file(path)


__all__ = [
    "__version__", "load", "Simulation", "ScenarioError", "ScenarioWarning", "ModelError", "OutputError", "Scene",
    "Material", "Pose",
    "Track", "RayCaster", "Hits", "Model", "Sensor", "Var", "RunContext", "Param", "MessageBus",
    "Message", "SensorData", "PoseMessage", "LogMessage", "Command", "TimeManager",
    "available_models", "load_model", "register_model",
]
