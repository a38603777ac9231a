"""Whether the compiled kernels (numba) run, or the numpy passes they replace.

The caster's passes around Embree (:mod:`hifi._cast_kernel`) and the lidar signal chain, edge
flags and edge footprints (:mod:`sensors._lidar_kernel`) have numpy references that give the same bytes
(``tests/test_scene_caster.py``, ``tests/test_lidar_kernel.py``), so which one runs is a
question of speed only. The kernels save about 0.3 us per ray (an HDL-64E frame of 133,312
pulses: 86 -> 45 ms) but cost a process about 1.4 s once: importing numba (0.5 s), setting up
its compiler (0.6 s) and loading the cached machine code (0.3 s). :meth:`hifi.Simulation.run`
therefore turns them on only for runs that cast at least :data:`MIN_RAYS` rays in all (from
its estimate); anything else (the API, the benchmarks, the tests) has them on by default. The
environment variable ``HIFI_KERNELS`` (``on``, ``off``, ``auto``: the default) overrides the
runs' choice, for every rank of an MPI job alike.
The divergent-beam receiver (:mod:`sensors._beam_kernel`) has no numpy twin of its speed
and always runs compiled.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

#: Rays a run casts in all from which the kernels pay for their start-up: 1.4 s / 0.3 us per
#: ray, about 5 million (the crossing example casts about 3 million in its second).
MIN_RAYS = 5_000_000

_enabled = True          # what the passes consult
_forced = None           # use(): True / False for everything inside, None: runs choose


def enabled() -> bool:
    """Whether the compiled kernels run now."""
    return _enabled


@contextmanager
def use(flag: bool):
    """Context manager: the compiled kernels on (True) or off (False) inside, also for the runs
    started inside (which would otherwise choose, :func:`for_run`); as before after."""
    global _enabled, _forced
    before = _enabled, _forced
    _enabled = _forced = bool(flag)
    try:
        yield
    finally:
        _enabled, _forced = before


#: Values of ``HIFI_KERNELS``.
ENV_CHOICES = {"on": True, "off": False, "auto": None}


def env_choice():
    """``HIFI_KERNELS``: True (``on``), False (``off``) or None (``auto`` or unset).

    Raises
    ------
    hifi.errors.ScenarioError
        For any other value (a run checks it before it writes anything).
    """
    raw = os.environ.get("HIFI_KERNELS", "auto")
    key = raw.strip().lower()
    if key not in ENV_CHOICES:
        from .errors import ScenarioError
        raise ScenarioError("unknown value of the environment variable; allowed: " + ", ".join(ENV_CHOICES),
                            key="HIFI_KERNELS", value=raw)
    return ENV_CHOICES[key]


@contextmanager
def for_run(n_rays: int):
    """Context manager around a run's event loop: the kernels on if the run casts at least
    :data:`MIN_RAYS` rays in all (``n_rays``), unless :func:`use` decided around it or
    ``HIFI_KERNELS`` says otherwise (:func:`env_choice`)."""
    global _enabled
    before = _enabled
    choice = _forced if _forced is not None else env_choice()
    _enabled = (n_rays >= MIN_RAYS) if choice is None else choice
    try:
        yield
    finally:
        _enabled = before
