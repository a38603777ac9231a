"""MPI facet-partitioned ray caster and time-partitioned batch runs.

    mpirun -n 4 hifi run scene.toml --out run1 --partition facets   # scene split over ranks
    mpirun -n 4 hifi run scene.toml --out run1 --partition time     # interval split over ranks

Both write, on rank 0 only, files whose every data variable is byte-identical to a serial
``hifi run`` of the same scenario and seed, whatever the number of ranks.

``hifi`` finds the runners through the entry-point group ``hifi.partitions``
(:func:`mpi.runner.run_facets`, :func:`mpi.runner.run_time`); by name it imports only
:mod:`mpi.control`, under a launcher of several processes, to end the job. Importing it is cheap and does not import ``mpi4py`` or initialise MPI: that happens
when a runner starts (:func:`mpi.runner.world`), or when a job ends before it did
(:func:`mpi.control.end_job`).
"""

__all__ = ["FacetBackend", "FacetCaster", "vertex_order_shares"]


def __getattr__(name: str):
    """The names of :mod:`mpi.caster`, imported on first use (PEP 562): importing
    :mod:`mpi.control` to end a job must not import numpy, whose own import the stop signal
    may have broken off half-way (importing it again then fails)."""
    if name in __all__:
        from . import caster
        return getattr(caster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
