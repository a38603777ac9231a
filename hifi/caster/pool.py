"""The caster's thread pool: :class:`ChunkPool` runs a function over contiguous chunks of
the rays on the threads of a :class:`~hifi.runtime.threads.ThreadBudget` (Embree and numpy
release the GIL), with the chunk size :data:`CHUNK_RAYS`. It knows nothing of rays or scenes;
the facade owns one, and the sensor models reuse it for their own array work, so it stands
alone. A run hands every caster one budget (:class:`hifi.Simulation`), shared with the time
manager's concurrent model steps, so the chunks of a step are not a second pool of threads.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..runtime.threads import CHUNK, THREADS_ENV, ThreadBudget, affinity_threads, threads_from_env

__all__ = ["CHUNK_RAYS", "THREADS_ENV", "ChunkPool", "default_threads"]

#: Rays per thread task below which threading costs more than it saves.
_MIN_RAYS_PER_TASK = 2048

#: Most rays in one chunk of work handed to a thread. Smaller chunks balance the threads
#: better but pay numpy's per-call overhead more often (16 k to 128 k measured within noise).
CHUNK_RAYS = 65536

#: Ray counts whose chunk bounds :meth:`ChunkPool.map` keeps (a sensor casts a few sizes per frame:
#: its primary rays, edge probes, footprints).
_BOUNDS_CACHED = 64


def default_threads() -> int:
    """The caster's threads when none are given: :data:`THREADS_ENV`, else the cores this
    process may run on (its CPU affinity: what a scheduler such as SLURM gave it).

    Raises
    ------
    ValueError
        :data:`THREADS_ENV` is set to something other than an integer >= 1.
    """
    env = threads_from_env()
    return env if env is not None else affinity_threads()


class ChunkPool:
    """Runs ``fn(start, stop)`` over contiguous chunks of ``range(n)`` on a thread budget.

    The rays are cut into chunks of at most ``CHUNK_RAYS`` rays, as many per thread; fewer
    than ``_MIN_RAYS_PER_TASK`` rays per thread run in the calling thread. Embree and numpy release
    the GIL, so the chunks run in parallel. The chunks depend on ``n_threads`` only, never on
    how many threads are idle, so the bits of a result do not depend on what else runs.

    Parameters
    ----------
    n_threads : int, optional
        Threads; default :func:`default_threads` (or the budget's).
    budget : hifi.runtime.threads.ThreadBudget, optional
        Threads shared with the rest of the run (the time manager's model steps); default a
        budget of this pool's own, started on first use.
    """

    def __init__(self, n_threads: int | None = None, *, budget: ThreadBudget | None = None):
        if budget is not None:
            n_threads = n_threads or budget.n_threads
        self.n_threads = int(n_threads or default_threads())
        self._budget = budget
        self._own = budget is None
        self._bounds_cache: dict = {}

    @property
    def budget(self) -> ThreadBudget:
        """The :class:`~hifi.runtime.threads.ThreadBudget` the chunks run on."""
        if self._budget is None:
            self._budget = ThreadBudget(self.n_threads)
        return self._budget

    def map(self, fn, n: int) -> list:
        """``[fn(a, b) for each chunk a:b of range(n)]``, in order.

        One task per thread, each pulling the next chunk until none is left, so a call hands
        work to a waiting thread once per thread rather than once per chunk (on loaded cores a
        hand-over costs 0.05 to several ms); which thread runs a chunk does not change it.
        """
        bounds = self._bounds(n)
        n_chunks = len(bounds) - 1
        tasks = min(self.n_threads, max(1, n // _MIN_RAYS_PER_TASK))
        if tasks <= 1 or self.n_threads <= 1:
            return [fn(bounds[i], bounds[i + 1]) for i in range(n_chunks)]
        results = [None] * n_chunks
        chunks = itertools.count()            # next() on it is atomic under the GIL

        def pull():
            for i in chunks:
                if i >= n_chunks:
                    return
                results[i] = fn(bounds[i], bounds[i + 1])

        # The calling thread pulls chunks at once instead of queueing a task of its own and
        # claiming it back (one task object, lock round and wake-up fewer per call).
        budget = self.budget
        queued = [budget.submit(pull, CHUNK) for _ in range(min(tasks, n_chunks) - 1)]
        try:
            pull()
        finally:                              # no chunk still writing when this returns or raises
            budget.wait(queued)
        for t in queued:
            budget.result(t)                  # a chunk's exception, raised here
        return results

    def _bounds(self, n: int) -> list:
        """The chunk bounds of ``range(n)`` (Python ints), cached per ``n``: ``tasks`` threads
        times ``ceil(n / (tasks * CHUNK_RAYS))`` chunks of nearly equal size, as
        ``np.linspace(0, n, n_chunks + 1)`` cuts them."""
        bounds = self._bounds_cache.get(n)
        if bounds is None:
            tasks = min(self.n_threads, max(1, n // _MIN_RAYS_PER_TASK))
            n_chunks = tasks * max(1, -(-n // (tasks * CHUNK_RAYS)))
            bounds = np.linspace(0, n, n_chunks + 1).astype(int).tolist()
            if len(self._bounds_cache) >= _BOUNDS_CACHED:
                self._bounds_cache.clear()        # one call, atomic: threads may map at once
            self._bounds_cache[n] = bounds
        return bounds

    def run(self, fns) -> list:
        """``[fn() for fn in fns]`` on the budget's threads at once (tasks that release the GIL:
        numpy's random fills, compiled kernels), results in order; the calling thread runs
        those no other thread has taken."""
        if self.n_threads <= 1 or len(fns) <= 1:
            return [fn() for fn in fns]
        budget = self.budget
        tasks = [budget.submit(fn, CHUNK) for fn in fns]
        budget.wait(tasks)
        return [budget.result(t) for t in tasks]

    def close(self) -> None:
        """Stop the threads of this pool's own budget (a later :meth:`map` starts a new one);
        a shared budget is its owner's to close."""
        if self._own and self._budget is not None:
            self._budget.close()
            self._budget = None
