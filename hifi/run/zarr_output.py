"""Zarr output: one store per model that several processes write at once (docs/outputs.md).

A run partitioned over MPI ranks cannot funnel every frame through one process: at 16 ranks
the models finish in a second and the job then waits for one process to compress and write
(about 120 frames/s for the crossing example). Zarr stores every chunk of an array as its own
object, so processes that write different chunks never touch the same file and need no
lock: each rank writes the frames it computed, all at once. netCDF-4's own parallel writes
need an HDF5 built for MPI, which the wheels people install do not have, and compression
with them needs HDF5 1.10.3 or later with collective writes (every rank in every write call).

Layout (Zarr format 2, which every Zarr reader and netCDF-C's NCZarr read): ``DIR/NAME.zarr``
holds the variables of ``DIR/NAME.nc`` with the same attributes, the same stored dtypes and
the same compression (byte shuffle, then zlib level 1); a chunk holds one frame, as in the
netCDF file, or, for a model whose frames are small, up to :data:`MAX_CHUNK_FRAMES` frames
(:func:`chunk_frames`); ``_ARRAY_DIMENSIONS`` names the dimensions for xarray; the metadata is consolidated
(``.zmetadata``) once every rank has written. ``frame`` and ``frame_time`` are written whole
when the store is made: every event of a model writes a frame, so they are the model's
events before the end of the run.

Every chunk is written to a temporary name and renamed into place (zarr's ``LocalStore``), so a
process killed at any point leaves each chunk whole or absent; a frame is written when every
frame variable has its chunk (:func:`written_frames`; a process writes only whole chunks),
which is what ``hifi run --resume`` reads. The processes of a partitioned run share the
frames chunk by chunk (``mpi.runner.Partition``), so no chunk has two writers. Chunks equal to the fill value are written too, so that an absent chunk always means
a frame not yet written.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..api.model import Var
from .dataset import cf_time_attrs
from .output import (
    FRAME_ATTRS,
    FRAME_TIME_ATTRS,
    BlockWriter,
    frame_variable_attrs,
    frame_variable_kwargs,
    stored_values,
    variable_attrs,
)

#: zlib level of every compressed array (as the netCDF files: ``hifi.run.output._COMPRESSION``).
ZLIB_LEVEL = 1

#: Bytes of a model's frame (all its variables, before compression) up to which several frames
#: share a chunk: a chunk holds ``CHUNK_TARGET_BYTES // frame bytes`` frames, at most
#: :data:`MAX_CHUNK_FRAMES` [B]. Each chunk is a file, and zarr spends about 0.5 ms on each
#: whatever its size (measured: 800 chunks of three float64 in 0.43-0.57 ms each, a frame of
#: seven 64 x 2083 arrays as fast as netCDF); one chunk per frame gave the crossing example
#: at 8 s 14,100 files and a run 1.7x slower than its netCDF run on two cores.
CHUNK_TARGET_BYTES = 1 << 20

#: Most frames in one chunk.
MAX_CHUNK_FRAMES = 256

#: Fewest chunks a model's frames are cut into (unless it has fewer frames): the chunk is the
#: unit a partitioned run shares out, so a model's frames must spread over the ranks of a large
#: job (a GNSS receiver's 600 small epochs in 3 chunks of 256 would keep 13 of 16 ranks idle).
MIN_CHUNKS = 16


def chunk_frames(frame_bytes: int, n_frames: int) -> int:
    """Frames per chunk of a model whose frame holds ``frame_bytes`` [B] over a run of
    ``n_frames`` frames (both from :meth:`hifi.api.model.Model.estimate`, known before the run,
    so every process of a partitioned run, and a resumed run, finds the same): 1 for a frame of
    :data:`CHUNK_TARGET_BYTES` or more; never more than :data:`MAX_CHUNK_FRAMES`, nor so many
    that the frames make fewer than :data:`MIN_CHUNKS` chunks."""
    by_size = CHUNK_TARGET_BYTES // max(int(frame_bytes), 1)
    return int(max(1, min(MAX_CHUNK_FRAMES, by_size, int(n_frames) // MIN_CHUNKS)))


def model_chunk_frames(model, duration_s: float) -> int:
    """:func:`chunk_frames` of ``model`` over a run of ``duration_s`` [s]: what its store's
    writer and a partition's share of its frames both use (1 for a model that writes none)."""
    if not model.writes_dataset:
        return 1
    est = model.estimate(duration_s)
    return chunk_frames(est.frame_bytes, est.frames)

#: The writer thread of this process's Zarr stores: blocks are compressed and written while the
#: models compute (zlib releases the GIL); one thread keeps a model's blocks in order and
#: bounds the memory to one block per writer being written.
_ZARR_THREAD = None


def _zarr_thread():
    global _ZARR_THREAD
    if _ZARR_THREAD is None:
        _ZARR_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hifi-zarr")
    return _ZARR_THREAD


def _json(value):
    """An attribute value as JSON holds it (numpy scalars and arrays to Python numbers and lists)."""
    if isinstance(value, np.ndarray):       # one element: a number, as netCDF reads it back
        return value.item() if value.size == 1 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _json_attrs(attrs: Mapping[str, Any]) -> dict:
    return {key: _json(value) for key, value in attrs.items()}


def _codecs(dtype: np.dtype, compressed: bool) -> dict:
    """The filters and compressor of an array: byte shuffle and zlib, as the netCDF files."""
    import numcodecs
    if not compressed or dtype.kind in "US":
        return {"filters": None, "compressors": None}
    filters = [numcodecs.Shuffle(elementsize=dtype.itemsize)] if dtype.itemsize > 1 else None
    return {"filters": filters, "compressors": numcodecs.Zlib(level=ZLIB_LEVEL)}


def _create_array(group, name: str, dims, data_shape, dtype, *, chunks, fill_value, attrs, compressed):
    """Create array ``name`` of ``group`` (Zarr format 2) with xarray's dimension names."""
    dtype = np.dtype(dtype)
    attributes = {"_ARRAY_DIMENSIONS": list(dims), **_json_attrs(attrs)}
    return group.create_array(name, shape=tuple(data_shape), chunks=tuple(chunks), dtype=dtype,
                              fill_value=None if fill_value is False else _json(fill_value),
                              attributes=attributes, config={"write_empty_chunks": True},
                              **_codecs(dtype, compressed))


class ZarrFrameWriter(BlockWriter):
    """Write the frames of one model into a Zarr store, possibly beside other processes.

    Parameters
    ----------
    path : path-like
        The store (a directory, ``DIR/NAME.zarr``).
    global_attrs : mapping
        Global attributes (as :class:`hifi.run.output.FrameWriter`).
    coords : mapping of str to Var
        Static coordinates.
    frame_times : sequence of float
        The model's event times [s], one per frame of the run: the store holds this many frames.
    chunk : int
        Frames per chunk (:func:`chunk_frames`). A process writes whole chunks only (it holds
        back the frames of a chunk until it has them all, or until it closes), so a chunk that
        exists holds all its frames: what :func:`written_frames` counts on.
    owner : bool
        Whether this process makes the store (the group, the coordinates, ``frame`` and
        ``frame_time``), or opens it once the owner has (``owner=False``: the other ranks of a
        partitioned run). An owner finding the store already there (a resumed run) opens it.

    Notes
    -----
    The frame variables are created from the first frame this process writes; a process that
    finds one already created by another opens it (two processes creating the same array
    write the same metadata, each file renamed into place whole).
    """

    def __init__(self, path, global_attrs: Mapping[str, Any], coords: Mapping[str, Var], frame_times, *,
                 chunk: int = 1, owner: bool = True):
        super().__init__()
        self.chunk = int(chunk)
        self.path = Path(path)
        self._coords = dict(coords)
        self._time_attrs = cf_time_attrs(global_attrs["start_utc"]) if global_attrs.get("start_utc") else {}
        self._frame_times = np.asarray(frame_times, dtype=np.float64)
        self._group = self._call(self._open, dict(global_attrs), owner)

    def _thread(self):
        return _zarr_thread()

    @property
    def n_frames(self) -> int:
        return int(self._frame_times.size)

    def _open(self, global_attrs, owner: bool):
        import zarr
        if not owner or (self.path / ".zgroup").is_file():
            return zarr.open_group(self.path, mode="r+", zarr_format=2)
        group = zarr.open_group(self.path, mode="w-", zarr_format=2, attributes=_json_attrs(global_attrs))
        n = self.n_frames
        frame = _create_array(group, "frame", ("frame",), (n,), "i4", chunks=(max(n, 1),), fill_value=False,
                              attrs=FRAME_ATTRS, compressed=True)
        frame[:] = np.arange(n, dtype=np.int32)
        times = _create_array(group, "frame_time", ("frame",), (n,), "f8", chunks=(max(n, 1),),
                              fill_value=False, attrs={**FRAME_TIME_ATTRS, **self._time_attrs}, compressed=True)
        times[:] = self._frame_times
        for name, v in self._coords.items():
            data = stored_values(v.data)
            array = _create_array(group, name, v.dims, data.shape, data.dtype, chunks=data.shape or (1,),
                                  fill_value=False, attrs=variable_attrs(v), compressed=True)
            array[...] = data
        return group

    def _check_frame(self, k, frame) -> None:
        if not 0 <= k < self.n_frames:
            raise ValueError(f"{self.path.name}: frame {k} is outside the run's {self.n_frames} frames")
        super()._check_frame(k, frame)

    def _define(self, frame: Mapping[str, Var]) -> None:
        """Create (or open, if another process has) the frame variables from a frame."""
        from zarr.errors import ContainsArrayError
        for name, v in frame.items():
            kw = frame_variable_kwargs(v)
            dtype = np.asarray(v.data).dtype if kw["datatype"] is str else np.dtype(kw["datatype"])
            shape = tuple(np.shape(v.data))
            try:
                array = _create_array(self._group, name, ("frame",) + tuple(v.dims), (self.n_frames,) + shape,
                                      dtype, chunks=(self.chunk,) + shape, fill_value=kw["fill_value"],
                                      attrs=frame_variable_attrs(name, v, self._time_attrs, self._coords),
                                      compressed=v.data.size > 1)
            except ContainsArrayError:
                array = self._group[name].with_config({"write_empty_chunks": True})
            self._vars[name] = array

    def _held_back(self) -> int:
        """The buffered frames of the last chunk this process has not completed."""
        if not self._buffer:
            return 0
        last = self._buffer[-1][0] // self.chunk
        end = min((last + 1) * self.chunk, self.n_frames)
        held = [k for k, _, _ in self._buffer if k // self.chunk == last]
        return 0 if len(held) == end - last * self.chunk else len(held)

    def _write_block(self, i0: int, block: list) -> None:
        """Write the chunks of the frames of ``block`` (frame ``k`` at index ``k``; whole
        chunks, :meth:`_held_back`), each variable's chunk by :func:`_put_chunk`."""
        ks = np.array([k for k, _, _ in block])
        starts = np.flatnonzero(np.r_[True, ks[1:] // self.chunk != ks[:-1] // self.chunk])
        for name, array in self._vars.items():
            data = np.stack([values[name] for _, _, values in block])
            for a, b in zip(starts, np.r_[starts[1:], ks.size]):
                _put_chunk(array, self.path / name, int(ks[a]) // self.chunk, data[a:b])


def _put_chunk(array, where: Path, c: int, frames: np.ndarray) -> None:
    """Write chunk ``c`` (along ``frame``) of the Zarr format 2 ``array`` stored in the directory
    ``where``: ``frames``, its frames, padded to the chunk's length at the end of the array.

    The bytes are what the Zarr format 2 specification says and zarr writes: the chunk's
    C-order bytes through the array's filters, then its compressor, in the file
    ``c.0.0...`` (``dimension_separator`` "."), written under a temporary name and renamed
    into place. zarr's own ``array[a:b] = frames`` spends about 0.5 ms a chunk in its
    asynchronous machinery, holding the interpreter from the models; this takes about 0.15
    ms (measured on three float64 values a chunk). Arrays of strings go through zarr.
    """
    import os
    import uuid
    meta = array.metadata
    if frames.dtype.kind in "OUS":
        size = array.chunks[0]
        array[c * size:c * size + len(frames)] = frames
        return
    size = meta.chunks[0]
    if len(frames) < size:                   # the last chunk: zarr stores it whole
        pad = np.zeros((size - len(frames),) + frames.shape[1:], dtype=frames.dtype)
        frames = np.concatenate([frames, pad])
    data = np.ascontiguousarray(frames, dtype=meta.dtype.to_native_dtype())
    for f in meta.filters or ():
        data = f.encode(data)
    if meta.compressor is not None:
        data = meta.compressor.encode(data)
    key = ".".join([str(c)] + ["0"] * (frames.ndim - 1))
    tmp = where / f".{key}.{uuid.uuid4().hex}.partial"
    with open(tmp, "wb") as f:
        f.write(memoryview(data))
    os.replace(tmp, where / key)


def written_frames(path, frame_variables=None) -> np.ndarray:
    """Frames of the store ``path`` whose chunk every frame variable has, sorted (a chunk is
    written whole: :class:`ZarrFrameWriter`).

    Parameters
    ----------
    path : path-like
        A model's store (``DIR/NAME.zarr``).
    frame_variables : iterable of str, optional
        The variables to look for (default: every array over ``frame`` but ``frame`` and
        ``frame_time``). An expected variable that is not in the store yet means no frame
        was written.

    Returns
    -------
    numpy.ndarray of int
        Frame indices (empty when the store or its frame variables do not exist yet).
    """
    path = Path(path)
    if not (path / ".zgroup").is_file():
        return np.zeros(0, dtype=np.int64)
    names = set(frame_variables) if frame_variables is not None else {
        p.name for p in path.iterdir()
        if p.is_dir() and p.name not in ("frame", "frame_time") and _dims(p)[:1] == ["frame"]}
    if not names:
        return np.zeros(0, dtype=np.int64)
    done, meta = None, None
    for name in names:
        if not (path / name / ".zarray").is_file():
            return np.zeros(0, dtype=np.int64)
        cs = {int(p.name.split(".", 1)[0]) for p in (path / name).iterdir()
              if not p.name.startswith(".") and p.name.split(".", 1)[0].isdigit()}
        done = cs if done is None else done & cs
        meta = meta or json.loads((path / name / ".zarray").read_text(encoding="utf-8"))
    n, size = int(meta["shape"][0]), int(meta["chunks"][0])
    frames = [np.arange(c * size, min((c + 1) * size, n)) for c in sorted(done)]
    return np.concatenate(frames).astype(np.int64) if frames else np.zeros(0, dtype=np.int64)


def _dims(array_dir: Path) -> list:
    try:
        return json.loads((array_dir / ".zattrs").read_text(encoding="utf-8")).get("_ARRAY_DIMENSIONS", [])
    except (OSError, ValueError):
        return []


def finish_store(path, n_frames: int) -> None:
    """Check that every frame of the store ``path`` is written and consolidate its metadata.

    Called once, by the process that finishes the run, after every process has written.

    Raises
    ------
    OSError
        A frame is missing (a process did not write all of its frames).
    """
    import zarr
    done = written_frames(path)
    if done.size != n_frames:
        missing = sorted(set(range(n_frames)) - set(done.tolist()))
        raise OSError(f"frames {missing[:5]}{' ...' if len(missing) > 5 else ''} of {n_frames} were not written")
    zarr.consolidate_metadata(str(path), zarr_format=2)

