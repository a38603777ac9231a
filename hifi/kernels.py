"""The compiled kernels (numba): what they are, and their start-up taken off a run's critical path.

A few passes over every ray are written once, as numba kernels, and nowhere else in the
product: the caster's passes around Embree (:mod:`hifi._cast_kernel`: Embree's arrays into hits,
the first segment's finish, the edge-tie rule, a depth camera's images), and the lidars' depth-edge
flags, beam-footprint directions and edge probes (:mod:`sensors._lidar_kernel`) and the
divergent-beam receiver (:mod:`sensors._beam_kernel`). They are geometry and bookkeeping, per
ray and branchy, where numpy needs many passes over temporaries; the physics (lidar equation,
detection, noise, intensity) stays in the vectorised functions of the sensor packages. The
tests hold each kernel, bit for bit, to a numpy oracle of the same signature
(``tests/oracles``).

A process pays numba once: importing it (about 0.2 s), setting up its compiler's target (0.3 s)
and loading each kernel's cached machine code (``cache=True``, in ``__pycache__``; the first
process after an install compiles them, a few seconds). :func:`warm_up` does the first two on a
background thread, which a run starts before it reads its scene, so they overlap the scene's
set-up (numba's compiler calls release the GIL while LLVM works).
"""

from __future__ import annotations

import os
import threading
import warnings

_warm: threading.Thread | None = None


def _prepare() -> None:
    """Import numba and load its CPU target's registries (typing and implementation), as the first
    call of a kernel would."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target
        with global_compiler_lock:                     # what a kernel's first call holds for this
            cpu_target.target_context.refresh()        # loads numba's implementation registries
            cpu_target.typing_context.refresh()
    except Exception:                                  # the kernel's own first call reports it
        pass


def warm_up() -> threading.Thread:
    """Start (once per process) a daemon thread that prepares numba (:func:`_prepare`); returns it.

    Nothing waits for it: a kernel called before it ends waits on numba's own compiler lock."""
    global _warm
    if _warm is None:
        _warm = threading.Thread(target=_prepare, name="hifi-numba-warm-up", daemon=True)
        _warm.start()
    return _warm


#: The environment variable that once chose between the kernels and their numpy twins.
RETIRED_ENV = "HIFI_KERNELS"


def warn_retired_env() -> None:
    """A warning if ``HIFI_KERNELS`` is set: the kernels have no numpy twin to switch to."""
    if RETIRED_ENV in os.environ:
        warnings.warn(f"{RETIRED_ENV} has no effect since hifi 0.2: the compiled kernels are the only "
                      "implementation of their passes", FutureWarning, stacklevel=2)
