"""MPI facet-partitioned ray caster and time-partitioned batch runs (imports mpi4py lazily)."""
