"""Zarr copies of run directories, for the tests of the readers (hifi.run.reading and its users).

A run partitioned over MPI ranks writes each model as a Zarr store ``DIR/NAME.zarr`` (format 2,
consolidated metadata) with the variables, attributes and CF time units of the serial run's
``DIR/NAME.nc``. :func:`zarr_copy` builds such a directory from a real serial run with xarray's
own Zarr writer, independently of hifi's, so the readers are tested on stores they did not write.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def zarr_copy(run_dir, dest) -> Path:
    """Copy the run directory ``run_dir`` to ``dest`` with every ``NAME.nc`` written as a Zarr
    store ``NAME.zarr`` instead (no ``.nc`` file is left in ``dest``); return ``dest``.

    The files are opened with ``decode_times=False``, so the times are stored as the float64
    seconds of the netCDF file, bit for bit, with their CF units (decoding and encoding them
    again could move them by up to a nanosecond).
    """
    import xarray as xr
    run_dir, dest = Path(run_dir), Path(dest)
    shutil.copytree(run_dir, dest, ignore=shutil.ignore_patterns("*.nc"))
    for path in sorted(run_dir.glob("*.nc")):
        with xr.open_dataset(path, decode_times=False) as ds:
            ds.to_zarr(dest / f"{path.stem}.zarr", zarr_format=2, consolidated=True)
    return dest
