"""The compiled kernels (numba): what they are and what they cost a process.

A few passes over every ray are written once, as numba kernels, and nowhere else in the
product: the caster's passes around Embree (:mod:`hifi._cast_kernel`: Embree's float32 rays, with the
first segment's directions normalised in the same pass, Embree's arrays into hits, the first segment's finish, the edge-tie rule, a depth camera's images), and the lidars' depth-edge
flags, beam-footprint directions and edge probes (:mod:`sensors._lidar_kernel`) and the
divergent-beam receiver (:mod:`sensors._beam_kernel`). They are geometry and bookkeeping, per
ray and branchy, where numpy needs many passes over temporaries; the physics (lidar equation,
detection, noise, intensity) stays in the vectorised functions of the sensor packages. The
tests hold each kernel, bit for bit, to a numpy oracle of the same signature
(``tests/oracles``).

A process pays numba once, at its first kernel call (the kernel modules import it): importing
it and loading its implementation registries (about 0.5 s, measured inside a run on two busy
cores), then each kernel's cached machine code (``cache=True``, in ``__pycache__``; about 15 ms
each; the first process after an install compiles them, a few seconds). A run whose models
cast no rays never imports numba. Preparing numba on a background thread while the scene is
set up was measured and rejected: both are pure Python under one GIL, and the run's start-up
grew by a fifth (``benchmarks/README.md``, start-up).
"""

from __future__ import annotations

import os
import warnings

#: The environment variable that once chose between the kernels and their numpy twins.
RETIRED_ENV = "HIFI_KERNELS"


def warn_retired_env() -> None:
    """A warning if ``HIFI_KERNELS`` is set: the kernels have no numpy twin to switch to."""
    if RETIRED_ENV in os.environ:
        warnings.warn(f"{RETIRED_ENV} has no effect since hifi 0.2: the compiled kernels are the only "
                      "implementation of their passes", FutureWarning, stacklevel=2)
