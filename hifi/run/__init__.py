"""A run from scenario file to datasets: loading and checking the scenario, the simulation and its
event-driven time manager, netCDF output and the datasets it writes, reading a run directory back
(netCDF files or Zarr stores, :mod:`hifi.run.reading`), the ``ds.hifi`` accessor, and the reference
pages of the models. Importing this package imports nothing.
"""
