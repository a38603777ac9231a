"""The Zarr writer: the chunk files it writes itself are the bytes zarr writes for the same
data (zarr-python is the independent implementation), whole chunks only, a last short chunk
included; what it reports as written."""

from __future__ import annotations

import asyncio

import numpy as np
import zarr

from hifi.api.model import Var
from hifi.run.zarr_output import ZarrFrameWriter, written_frames


def _frames(n):
    rng = np.random.default_rng(7)
    return [{"distance": Var(("ray",), rng.normal(size=5).astype(np.float32), "m", "distance"),
             "hit": Var(("ray",), rng.random(5) > 0.5, "1", "hit"),
             "points": Var(("ray", "xyz"), rng.normal(size=(5, 3)), "m", "points",
                           encoding={"dtype": "i4", "scale_factor": 1e-4, "add_offset": 0.0, "_FillValue": -2**31}),
             "count": Var((), np.int32(k), "1", "count")} for k in range(n)]


def test_chunks_are_zarrs_own_bytes_and_only_whole_chunks_are_written(tmp_path):
    n, chunk = 10, 4                                   # chunks 0 and 1 whole, chunk 2 of 2 frames
    store = tmp_path / "m.zarr"
    w = ZarrFrameWriter(store, {"start_utc": ""}, {}, np.arange(n) * 0.1, chunk=chunk)
    frames = _frames(n)
    for k in range(6):                                 # chunk 0 whole, chunk 1 half
        w.write(k, 0.1 * k, frames[k])
    w._start_block()                                   # a full buffer: the half chunk is held back
    w._wait()
    assert written_frames(store).tolist() == [0, 1, 2, 3]
    for k in range(6, n):
        w.write(k, 0.1 * k, frames[k])
    w.close()
    assert written_frames(store).tolist() == list(range(n))
    group = zarr.open_group(store, mode="r")
    for name in ("distance", "hit", "points", "count"):
        a = group[name]
        twin = zarr.create_array(store={}, shape=a.shape, chunks=a.chunks, dtype=a.dtype, fill_value=None,
                                 zarr_format=2, filters=a.metadata.filters, compressors=a.metadata.compressor)
        twin[...] = a[...]
        for c in range(3):
            key = ".".join([str(c)] + ["0"] * (a.ndim - 1))
            theirs = asyncio.run(twin.store.get(key, prototype=zarr.core.buffer.default_buffer_prototype()))
            assert (store / name / key).read_bytes() == theirs.to_bytes(), (name, key)
