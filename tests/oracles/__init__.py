"""Numpy oracles of the compiled kernels, and a switch that runs the product on them.

The product has one implementation of each pass that runs per ray: a numba kernel
(:mod:`hifi.kernels`). The tests keep a numpy version of each, written for clarity with whole
arrays, with the kernel's signature and outputs (:mod:`tests.oracles.cast_kernel`,
:mod:`tests.oracles.lidar_kernel`; :mod:`tests.oracles.beam` for the divergent-beam
receiver's three functions). :func:`numpy_kernels` puts them in the kernels' places, so a test
can run a whole frame both ways and compare every variable's bytes: a change to a kernel that
is not also a deliberate change to its oracle fails there.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from . import beam, cast_kernel, lidar_kernel

#: (module, names): the kernels the oracles replace.
KERNELS = {
    "hifi._cast_kernel": ("rays32", "unit_rays32", "static_hits", "unit_rows", "finish_hits", "range_image", "depth_rows",
                          "settle_static", "tie_keys"),
    "sensors._lidar_kernel": ("edge_flags", "footprint", "probe_leaves"),
}
#: The divergent-beam receiver's functions the beam oracle replaces (module attribute lookups
#: at call time: beam_echoes calls them through the module).
BEAM_FUNCTIONS = ("echo_segments", "segment_report", "echo_report")


@contextmanager
def numpy_kernels():
    """Inside, every compiled kernel of :data:`KERNELS` and the beam receiver's functions are the
    numpy oracles (the callers import the kernels at call time, so they find the oracles)."""
    import importlib
    mp = pytest.MonkeyPatch()
    oracle = {"hifi._cast_kernel": cast_kernel, "sensors._lidar_kernel": lidar_kernel}
    try:
        for module, names in KERNELS.items():
            mod = importlib.import_module(module)
            for name in names:
                mp.setattr(mod, name, getattr(oracle[module], name))
        import sensors.beam
        for name in BEAM_FUNCTIONS:
            mp.setattr(sensors.beam, name, getattr(beam, name))
        yield
    finally:
        mp.undo()
