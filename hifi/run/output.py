"""netCDF output written frame by frame, and the dataset conventions (docs/datasets.md).

Each model's file has an unlimited ``frame`` dimension; a frame is written as soon as it is
computed, so a long run never holds all frames in memory. Every variable carries ``units`` and
``long_name``; global attributes carry ``sensor_name``, ``sensor_model``, ``hifi_version``,
``seed`` and ``scenario`` (the TOML text), so one file reproduces itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .._version import __version__
from .dataset import (
    OBJECT_ID_VARIABLES,
    TIME_VARIABLES,
    cf_time_attrs,
    encode,
    object_id_attrs,
)
# Frames are written in blocks of at most BUFFER_MAX_FRAMES frames or BUFFER_MAX_BYTES. The
# limits are defined beside the memory model that counts them (hifi.api.estimate.writer_bytes):
# hifi.api.estimate is below hifi.api.model, which this module imports, so it cannot import this one.
from ..api.estimate import BUFFER_MAX_BYTES, BUFFER_MAX_FRAMES
from ..api.model import Var

#: netCDF4 compression of every variable: zlib level 1 with byte shuffle (deterministic bytes);
#: frame variables are chunked one frame per chunk (README "Size" has the measurements).
_COMPRESSION = {"zlib": True, "complevel": 1, "shuffle": True}


def _nc_type(data: np.ndarray):
    if data.dtype == bool:
        return "i1"
    if data.dtype.kind == "U":
        return str
    return data.dtype


def stored_values(data: np.ndarray, encoding=None, name: str = "") -> np.ndarray:
    """``data`` as a file stores it: packed by its ``encoding`` (:func:`hifi.run.dataset.encode`),
    a boolean as int8 (xarray decodes it back with the ``dtype = "bool"`` attribute)."""
    if encoding:
        return encode(data, encoding, name)
    return data.astype(np.int8) if data.dtype == bool else data


def frame_variable_kwargs(v: Var) -> dict:
    """netCDF4's ``createVariable`` arguments of a frame variable: stored dtype, fill value,
    compression and chunks (``Var.encoding`` honoured); the Zarr writer takes the same dtype
    and fill value."""
    enc = v.encoding or {}
    kw = {"datatype": enc.get("dtype", _nc_type(v.data)), "fill_value": enc.get("_FillValue", False)}
    if v.data.size > 1:
        kw.update(_COMPRESSION, chunksizes=(1,) + tuple(v.data.shape))
    return kw


#: Attributes of the ``frame`` and ``frame_time`` variables of every dataset.
FRAME_ATTRS = {"units": "1", "long_name": "frame index"}
FRAME_TIME_ATTRS = {"units": "s", "long_name": "simulated time of the frame's event since simulation start"}


def variable_attrs(v: Var) -> dict:
    """The attributes a file stores for ``v``: its own, the CF packing of its encoding, and
    ``dtype = "bool"`` for a boolean (stored as int8; xarray decodes it back to bool)."""
    attrs = v.attrs()
    enc = v.encoding or {}
    for key in ("scale_factor", "add_offset", "comment"):
        if key in enc:
            attrs[key] = enc[key]
    if v.data.dtype == bool:
        attrs["dtype"] = "bool"
    return attrs


def frame_variable_attrs(name: str, v: Var, time_attrs: Mapping, coords: Mapping[str, Var]) -> dict:
    """:func:`variable_attrs` of a frame variable, with the CF time units of an instant, the
    object names of an object id and ``coordinates = "frame_time"``."""
    attrs = variable_attrs(v)
    if name in TIME_VARIABLES and v.units == "s":
        attrs.update(time_attrs)
    if name in OBJECT_ID_VARIABLES and "object_name" in coords:
        attrs.update(object_id_attrs(coords["object_name"].data))
    attrs["coordinates"] = "frame_time"
    return attrs


_NETCDF_THREAD = None


def _netcdf_thread():
    """The one thread that makes every netCDF call of the writers of this process.

    HDF5 (under netCDF-C) is not thread-safe: calls from two threads at once corrupt its state.
    Every :class:`FrameWriter` call into netCDF4 is therefore queued to this single thread, in
    the order the run makes them, so a block of frames compresses and writes while the models
    compute the next ones (netCDF4 releases the GIL in its C calls). The queue is first in,
    first out: each file receives the same calls in the same order as without the thread.
    """
    global _NETCDF_THREAD
    if _NETCDF_THREAD is None:
        from concurrent.futures import ThreadPoolExecutor
        _NETCDF_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hifi-netcdf")
    return _NETCDF_THREAD


def _forget_netcdf_thread() -> None:
    """In a forked child the parent's thread does not exist: start a new one when needed."""
    global _NETCDF_THREAD
    _NETCDF_THREAD = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_netcdf_thread)


class BlockWriter:
    """Frames of one model buffered into blocks, each block written on a writer thread.

    The subclasses say where a block goes (:class:`FrameWriter`: a netCDF4 file;
    :class:`hifi.run.zarr_output.ZarrFrameWriter`: a Zarr store). A block closes at
    :data:`~hifi.api.estimate.BUFFER_MAX_FRAMES` frames or
    :data:`~hifi.api.estimate.BUFFER_MAX_BYTES` and is written while the models compute the
    next frames; an error writing it (disk full) is raised by the next call of this writer
    that waits for it.
    """

    path: Path

    def __init__(self):
        self._vars: dict[str, Any] = {}      # the file's frame variables, by name
        self._n = 0
        self._buffer: list = []
        self._buffered_bytes = 0
        self._writing = None                 # the block being written by the writer thread
        self._writing_frames = 0

    def _thread(self):
        """The executor that runs this writer's calls (one thread, first in, first out)."""
        return _netcdf_thread()

    def _call(self, fn, *args):
        """Run ``fn(*args)`` on the writer thread and return its result (its error raised here)."""
        return self._thread().submit(fn, *args).result()

    def write(self, k: int, t: float, frame: Mapping[str, Var]) -> None:
        """Add frame ``k`` at event time ``t`` [s] (buffered; see :data:`hifi.api.estimate.BUFFER_MAX_BYTES`)."""
        self._check_frame(k, frame)
        self._buffer.append((k, t, {name: stored_values(np.asarray(v.data), v.encoding, name)
                                    for name, v in frame.items()}))
        self._buffered_bytes += sum(v.data.nbytes for v in frame.values())
        if len(self._buffer) >= BUFFER_MAX_FRAMES or self._buffered_bytes >= BUFFER_MAX_BYTES:
            self._start_block()

    def _check_frame(self, k: int, frame: Mapping[str, Var]) -> None:
        """Define the variables from the first frame (:meth:`_define`, on the writer thread);
        refuse a frame with other variables."""
        if not self._vars:
            self._call(self._define, frame)
        if set(frame) != set(self._vars):
            raise ValueError(f"frame {k} has variables {sorted(frame)}, expected {sorted(self._vars)}")

    def _define(self, frame: Mapping[str, Var]) -> None:
        """Create the frame variables of the file from ``frame``, into ``self._vars``."""
        raise NotImplementedError

    def _write_block(self, i0: int, block: list) -> None:
        """Write ``block``, a list of ``(k, t, {name: stored values})``, the ``i0``-th frame
        of this writer first (on the writer thread)."""
        raise NotImplementedError

    def _wait(self) -> None:
        """Wait for the block being written; raise its error, if any."""
        if self._writing is not None:
            future, self._writing, self._writing_frames = self._writing, None, 0
            future.result()

    def _held_back(self) -> int:
        """Frames at the end of the buffer that a full block keeps for the next one (none: a
        netCDF file takes any frames; a Zarr store only whole chunks)."""
        return 0

    def _start_block(self, everything: bool = False) -> None:
        """Hand the buffered frames to the writer thread (after the previous block is written);
        ``everything`` False keeps back :meth:`_held_back` frames."""
        self._wait()
        keep = 0 if everything else self._held_back()
        if len(self._buffer) <= keep:
            return
        cut = len(self._buffer) - keep
        block, i0 = self._buffer[:cut], self._n
        self._n += len(block)
        self._buffer = self._buffer[cut:]
        self._buffered_bytes = sum(sum(v.nbytes for v in data.values()) for _, _, data in self._buffer)
        self._writing = self._thread().submit(self._write_block, i0, block)
        self._writing_frames = len(block)

    def flush(self) -> None:
        """Write the buffered frames and wait until they are written."""
        self._start_block(everything=True)
        self._wait()

    def close(self) -> None:
        """Write the buffered frames and release the file."""
        try:
            self.flush()
        finally:
            self._wait_quietly()
            self._release()

    def _release(self) -> None:
        """Close what this writer holds open (nothing by default)."""

    @property
    def pending_frames(self) -> int:
        """Frames not yet written: held in memory, or being written."""
        return len(self._buffer) + self._writing_frames

    def _wait_quietly(self) -> None:
        try:
            self._wait()
        except (OSError, RuntimeError):          # already raised to the caller, or the run failed
            pass

    def discard(self) -> None:
        """Drop the buffered frames and release the file: the run failed or was interrupted.
        Errors are not raised (the run's own error is the one to report)."""
        self._buffer.clear()
        self._buffered_bytes = 0
        self._wait_quietly()
        try:
            self._release()
        except (OSError, RuntimeError):      # disk full, HDF error: the run's error is reported
            pass


class FrameWriter(BlockWriter):
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
        super().__init__()
        self.path = Path(path)
        self._nc = None
        self._coords = dict(coords)
        # CF time units (seconds since start_utc): xarray decodes the instants to datetime64.
        self._time_attrs = cf_time_attrs(global_attrs["start_utc"]) if global_attrs.get("start_utc") else {}
        self._call(self._create, dict(global_attrs))

    def _create(self, global_attrs) -> None:
        import netCDF4
        self._nc = netCDF4.Dataset(self.path, "w", format="NETCDF4")
        try:
            self._define_file(global_attrs)
        except BaseException:
            self._close()            # no open file left behind by a writer that was not made
            raise

    def _define_file(self, global_attrs) -> None:
        self._nc.set_fill_off()
        for key, value in global_attrs.items():
            self._nc.setncattr(key, value)
        self._nc.createDimension("frame", None)
        fr = self._nc.createVariable("frame", "i4", ("frame",), fill_value=False)
        fr.setncatts(FRAME_ATTRS)
        ft = self._nc.createVariable("frame_time", "f8", ("frame",), fill_value=False)
        ft.setncatts(FRAME_TIME_ATTRS)
        ft.setncatts(self._time_attrs)
        for name, v in self._coords.items():
            self._ensure_dims(v.dims, v.data.shape, name)
            var = self._nc.createVariable(name, _nc_type(v.data), v.dims, fill_value=False)
            for key, value in variable_attrs(v).items():
                var.setncattr(key, value)
            var[...] = stored_values(v.data)

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

    def _define(self, frame: Mapping[str, Var]) -> None:
        """Create the frame variables from the first frame (on the netCDF thread)."""
        for name, v in frame.items():
            self._ensure_dims(v.dims, v.data.shape, name)
            var = self._nc.createVariable(name, dimensions=("frame",) + tuple(v.dims), **frame_variable_kwargs(v))
            for key, value in frame_variable_attrs(name, v, self._time_attrs, self._coords).items():
                var.setncattr(key, value)
            if v.encoding and "scale_factor" in v.encoding:
                var.set_auto_maskandscale(False)       # written packed by stored_values
            self._vars[name] = var

    def _write_block(self, i0: int, block: list) -> None:
        """Write ``block`` at frame ``i0``, one call per variable, and flush it to the file
        (compression happens here, on the netCDF thread, not at close)."""
        n = len(block)
        self._nc.variables["frame"][i0:i0 + n] = [k for k, _, _ in block]
        self._nc.variables["frame_time"][i0:i0 + n] = [t for _, t, _ in block]
        for name, var in self._vars.items():
            var[i0:i0 + n, ...] = np.stack([data[name] for _, _, data in block])
        self._nc.sync()

    def _release(self) -> None:
        if self._nc is not None:
            self._call(self._close)

    def _close(self) -> None:
        nc, self._nc = self._nc, None
        nc.close()


#: File that marks a directory written by ``hifi run``: it lists, one per line, every file the
#: run wrote. ``--overwrite`` replaces only a directory holding this file and nothing else
#: than the files it lists.
RUN_MARKER = ".hifi-run"


def write_run_marker(directory: Path, names) -> None:
    """Write :data:`RUN_MARKER` into ``directory`` listing ``names`` (the files the run wrote)."""
    lines = ["# written by hifi run; hifi run --overwrite replaces this directory only while it holds",
             "# nothing but these files", *sorted(names)]
    (Path(directory) / RUN_MARKER).write_text("\n".join(lines) + "\n", encoding="utf-8")


def check_output_dir(out_dir, overwrite: bool) -> None:
    """Refuse an output directory that a run must not write or replace.

    Parameters
    ----------
    out_dir : path-like
        The ``--out`` directory.
    overwrite : bool
        Whether an existing directory may be replaced.

    Raises
    ------
    FileExistsError
        ``out_dir`` exists and ``overwrite`` is false, or it exists and is not a directory
        written by ``hifi run`` (no :data:`RUN_MARKER`, or it holds files the marker does not
        list); an empty directory may be replaced.
    ValueError
        ``out_dir`` is empty, ``.``, ``..``, the file-system root, the home directory, the
        working directory or one of its ancestors: never replaced, whatever ``overwrite``.
    """
    text = str(out_dir)
    if text.strip() == "":
        raise ValueError("--out = '': expected a directory path for the run's files")
    path = Path(out_dir)
    resolved = path.expanduser().resolve()
    cwd = Path.cwd().resolve()
    protected = {Path(resolved.anchor), Path.home().resolve(), cwd, *cwd.parents}
    if path.name in ("", ".", "..") or resolved in protected:
        raise ValueError(f"--out = {text!r}: refusing to write a run into {resolved} (the root, home or "
                         f"working directory or one of its parents); give a new directory such as out/run1")
    if not path.exists() and not path.is_symlink():
        return
    if not overwrite:
        raise FileExistsError(f"output directory {path} exists; use --overwrite to replace it")
    if path.is_symlink() or not path.is_dir():
        raise FileExistsError(f"--out {path} exists and is not a directory; --overwrite replaces only a "
                              f"directory written by hifi run")
    present = {p.name for p in path.iterdir()}
    if not present:
        return
    marker = path / RUN_MARKER
    if not marker.is_file():
        raise FileExistsError(f"--overwrite: {path} was not written by hifi run (no {RUN_MARKER} file); "
                              f"refusing to delete it, choose another --out")
    listed = {line.strip() for line in marker.read_text(encoding="utf-8", errors="replace").splitlines()
              if line.strip() and not line.startswith("#")}
    foreign = sorted(present - listed - {RUN_MARKER})
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise FileExistsError(f"--overwrite: {path} holds files hifi run did not write ({shown}); "
                              f"refusing to delete them, move them or choose another --out")


def base_attrs(sensor_name: str, sensor_model: str, seed: int, scenario_text: str, **extra) -> dict:
    """The global attributes every dataset carries, so that one file reproduces itself."""
    attrs = {"sensor_name": sensor_name, "sensor_model": sensor_model,
             "hifi_version": __version__, "seed": int(seed), "scenario": scenario_text,
             "Conventions": "CF-1.10"}
    attrs.update({k: v for k, v in extra.items() if v is not None})
    return attrs
