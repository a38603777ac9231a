"""The ``ds.hifi`` xarray accessor."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .dataset import seconds_since_start, utc_times


@xr.register_dataset_accessor("hifi")
class HifiAccessor:
    """Helpers on hifi datasets: ``ds.hifi.points(noisy=True)``, ``ds.hifi.seconds()``, ``ds.hifi.time()``."""

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def points(self, noisy: bool = True, frame: int | None = None) -> np.ndarray:
        """Detected returns as an (n, 3) float64 array in the scene frame [m].

        Parameters
        ----------
        noisy : bool
            Reported points (``x_noisy`` ...) if True, true hit points (``x`` ...) if False.
        frame : int, optional
            Position along ``frame`` to take; default every frame.

        Notes
        -----
        A return is included where ``detected`` is true (range sensors) or, for datasets without
        ``detected`` (depth maps), where the hit point is finite. Points come in the order of
        the dataset's dimensions, so the result has shape (0, 3) when nothing was detected.
        """
        ds = self._ds if frame is None else self._ds.isel(frame=frame)
        names = ("x_noisy", "y_noisy", "z_noisy") if noisy else ("x", "y", "z")
        if noisy and "x_noisy" not in ds:
            names = ("x", "y", "z")
        missing = [n for n in names if n not in ds]
        if missing:
            raise ValueError(f"dataset has no point variables {missing}; sensor_model = "
                             f"{ds.attrs.get('sensor_model')!r} does not produce points")
        xyz = np.stack([np.asarray(ds[n].values, dtype=np.float64).ravel() for n in names], axis=-1)
        if "detected" in ds:
            mask = np.asarray(ds["detected"].values, dtype=bool).ravel()
        else:
            mask = np.all(np.isfinite(xyz), axis=1)
        return xyz[mask]

    def seconds(self, name: str = "timestamp") -> xr.DataArray:
        """Variable ``name`` as float64 seconds since the run's start [s], however the file was opened.

        ``timestamp`` and ``frame_time`` carry CF units ``seconds since <start_utc>``, so
        ``xr.open_dataset`` decodes them to ``datetime64``; this gives the float seconds back
        (bit for bit when the file was opened with ``decode_times=False``, within 1 ns of the
        stored value when decoded; see :func:`hifi.dataset.seconds_since_start`).
        """
        var = self._ds[name]
        return xr.DataArray(seconds_since_start(self._ds, name), dims=var.dims, coords=var.coords,
                            attrs={"units": "s", "long_name": f"{name}: seconds since simulation start"})

    def time(self, name: str = "timestamp") -> xr.DataArray:
        """Variable ``name`` as absolute UTC instants (``datetime64[ns]``), however the file was opened."""
        var = self._ds[name]
        return xr.DataArray(utc_times(self._ds, name), dims=var.dims, coords=var.coords,
                            attrs={"long_name": f"{name}: UTC time"})
