"""netCDF output written frame by frame, and the dataset conventions of CONTRACTS.

Each model's file has an unlimited ``frame`` dimension; a frame is written as soon as it is
computed, so a long run never holds all frames in memory. Every variable carries ``units`` and
``long_name``; global attributes carry ``sensor_name``, ``sensor_model``, ``hifi_version``,
``seed`` and ``scenario`` (the TOML text), so one file reproduces itself (house style 11).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ._version import __version__
from .model import Var

#: netCDF4 compression of every variable: zlib level 1 with byte shuffle (deterministic bytes).
_COMPRESSION = {"zlib": True, "complevel": 1, "shuffle": True}


def _nc_type(data: np.ndarray):
    if data.dtype == bool:
        return "i1"
    if data.dtype.kind == "U":
        return str
    return data.dtype


def _prepare(data: np.ndarray) -> np.ndarray:
    return data.astype(np.int8) if data.dtype == bool else data


def _set_attrs(var, v: Var) -> None:
    attrs = v.attrs()
    if v.data.dtype == bool:
        attrs["dtype"] = "bool"      # xarray decodes int8 + dtype="bool" back to bool
    for key, value in attrs.items():
        var.setncattr(key, value)


class FrameWriter:
    """Append frames of one model to a netCDF4 file.

    Parameters
    ----------
    path : path-like
        Output file (created, overwritten).
    global_attrs : mapping
        Global attributes.
    coords : mapping of str to Var
        Static coordinates written once.
    """

    def __init__(self, path, global_attrs: Mapping[str, Any], coords: Mapping[str, Var]):
        import netCDF4
        self.path = Path(path)
        self._nc = netCDF4.Dataset(self.path, "w", format="NETCDF4")
        self._nc.set_fill_off()
        for key, value in global_attrs.items():
            self._nc.setncattr(key, value)
        self._nc.createDimension("frame", None)
        fr = self._nc.createVariable("frame", "i4", ("frame",), fill_value=False)
        fr.setncatts({"units": "1", "long_name": "frame index"})
        ft = self._nc.createVariable("frame_time", "f8", ("frame",), fill_value=False)
        ft.setncatts({"units": "s", "long_name": "simulated time of the frame's event since simulation start"})
        self._coords = dict(coords)
        for name, v in self._coords.items():
            self._ensure_dims(v.dims, v.data.shape, name)
            var = self._nc.createVariable(name, _nc_type(v.data), v.dims, fill_value=False)
            _set_attrs(var, v)
            var[...] = _prepare(v.data)
        self._vars: dict[str, Any] = {}
        self._n = 0

    def _ensure_dims(self, dims, shape, name):
        if len(dims) != len(shape):
            raise ValueError(f"variable {name!r}: dims {dims} do not match shape {shape}")
        for dim, size in zip(dims, shape):
            if dim in self._nc.dimensions:
                if len(self._nc.dimensions[dim]) != size:
                    raise ValueError(f"variable {name!r}: dimension {dim!r} is "
                                     f"{len(self._nc.dimensions[dim])} but the data has {size}")
            else:
                self._nc.createDimension(dim, size)

    def write(self, k: int, t: float, frame: Mapping[str, Var]) -> None:
        """Append frame ``k`` at event time ``t`` [s]."""
        i = self._n
        if not self._vars:
            for name, v in frame.items():
                self._ensure_dims(v.dims, v.data.shape, name)
                var = self._nc.createVariable(name, _nc_type(v.data), ("frame",) + tuple(v.dims),
                                              fill_value=False, **(_COMPRESSION if v.data.size > 1 else {}))
                _set_attrs(var, v)
                var.setncattr("coordinates", "frame_time")
                self._vars[name] = var
        if set(frame) != set(self._vars):
            raise ValueError(f"frame {k} has variables {sorted(frame)}, expected {sorted(self._vars)}")
        self._nc.variables["frame"][i] = k
        self._nc.variables["frame_time"][i] = t
        for name, v in frame.items():
            self._vars[name][i, ...] = _prepare(np.asarray(v.data))
        self._n += 1

    def close(self) -> None:
        if self._nc is not None:
            self._nc.close()
            self._nc = None


def base_attrs(sensor_name: str, sensor_model: str, seed: int, scenario_text: str, **extra) -> dict:
    """The global attributes CONTRACTS requires of every dataset."""
    attrs = {"sensor_name": sensor_name, "sensor_model": sensor_model,
             "hifi_version": __version__, "seed": int(seed), "scenario": scenario_text,
             "Conventions": "CF-1.10"}
    attrs.update({k: v for k, v in extra.items() if v is not None})
    return attrs
