"""The caster's thread pool: :class:`ChunkPool` runs a function over contiguous chunks of
the rays on a :class:`~concurrent.futures.ThreadPoolExecutor` (Embree and numpy release the
GIL), with the chunk size :data:`CHUNK_RAYS`. It knows nothing of rays or scenes; the facade
owns one, and the sensor models reuse it for their own array work, so it stands alone.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Rays per thread task below which threading costs more than it saves.
_MIN_RAYS_PER_TASK = 2048

#: Most rays in one chunk of work handed to a thread. Smaller chunks balance the threads
#: better but pay numpy's per-call overhead more often (16 k to 128 k measured within noise).
CHUNK_RAYS = 65536

#: Environment variable setting the caster's threads per process (an integer >= 1); without
#: it, every core this process may run on.
THREADS_ENV = "HIFI_THREADS"


def default_threads() -> int:
    """The caster's threads when none are given: :data:`THREADS_ENV`, else the cores this
    process may run on (its CPU affinity: what a scheduler such as SLURM gave it).

    Raises
    ------
    ValueError
        :data:`THREADS_ENV` is set to something other than an integer >= 1.
    """
    text = os.environ.get(THREADS_ENV, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{THREADS_ENV} = {text!r}: expected an integer >= 1 (threads per process)")
        return int(text)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class ChunkPool:
    """Runs ``fn(start, stop)`` over contiguous chunks of ``range(n)`` on a thread pool.

    Each thread gets the same number of chunks of at most ``CHUNK_RAYS`` rays; fewer than
    ``_MIN_RAYS_PER_TASK`` rays per thread run in the calling thread. Embree and numpy release
    the GIL, so the chunks run in parallel.

    Parameters
    ----------
    n_threads : int, optional
        Threads; default :func:`default_threads`.
    """

    def __init__(self, n_threads: int | None = None):
        self.n_threads = int(n_threads or default_threads())
        self._pool: ThreadPoolExecutor | None = None

    def map(self, fn, n: int) -> list:
        """``[fn(a, b) for each chunk a:b of range(n)]``, in order."""
        tasks = min(self.n_threads, max(1, n // _MIN_RAYS_PER_TASK))
        n_chunks = tasks * max(1, -(-n // (tasks * CHUNK_RAYS)))
        bounds = np.linspace(0, n, n_chunks + 1).astype(int)
        if tasks <= 1:
            return [fn(bounds[i], bounds[i + 1]) for i in range(n_chunks)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="hifi-cast")
        return list(self._pool.map(lambda i: fn(bounds[i], bounds[i + 1]), range(n_chunks)))

    def run(self, fns) -> list:
        """``[fn() for fn in fns]`` on the pool's threads at once (tasks that release the GIL:
        numpy's random fills, compiled kernels), results in order."""
        if self.n_threads <= 1 or len(fns) <= 1:
            return [fn() for fn in fns]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads, thread_name_prefix="hifi-cast")
        return [f.result() for f in [self._pool.submit(fn) for fn in fns]]

    def close(self) -> None:
        """Shut the thread pool down (a later :meth:`map` starts a new one)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
