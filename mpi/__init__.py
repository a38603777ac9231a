"""MPI facet-partitioned ray caster and time-partitioned batch runs.

    mpirun -n 4 hifi run scene.toml --out run1 --partition facets   # scene split over ranks
    mpirun -n 4 hifi run scene.toml --out run1 --partition time     # interval split over ranks

Both write, on rank 0 only, files whose every data variable is byte-identical to a serial
``hifi run`` of the same scenario and seed, whatever the number of ranks.

``hifi`` finds the runners through the entry-point group ``hifi.partitions``
(:func:`mpi.runner.run_facets`, :func:`mpi.runner.run_time`) and never imports this package by
name. Importing it is cheap and does not import ``mpi4py`` or initialise MPI: that happens when
a runner starts (:func:`mpi.runner.world`).
"""

from .caster import FacetBackend, FacetCaster, vertex_order_shares

__all__ = ["FacetBackend", "FacetCaster", "vertex_order_shares"]
