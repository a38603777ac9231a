"""hifi: high-fidelity sensor simulation over Embree ray casting.

    import hifi
    sim = hifi.load("scenario.toml")            # or hifi.Simulation.from_dict(d, base_dir=...)
    results = sim.run(out=None)                  # dict: sensor name -> xarray.Dataset
    pts = results["velodyne"].hifi.points(noisy=True)

Importing hifi builds nothing and starts nothing (no BVH, no MPI, no threads).
"""

from __future__ import annotations

from . import accessor as _accessor  # noqa: F401  (registers the ds.hifi accessor)
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
