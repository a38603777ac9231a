"""Threads of a run: BLAS kept on one thread while the caster's threads cast.

numpy hands every matrix product, even the (n, 3) x (3, 3) rotations of rays and poses
(``d @ rot.T``, :meth:`scipy.spatial.transform.Rotation.apply`), to its BLAS (OpenBLAS in the
numpy wheels). OpenBLAS wakes its own pool of threads for it, and they spin waiting for more
work after the product returns, taking a core from the caster's threads (:class:`hifi.caster.
ChunkPool`): an HDL-64E step took 148-196 ms instead of 43-53 ms on a busy 2-core machine
(measured 2026-11-23). A run therefore limits BLAS to one thread while its models step, with
threadpoolctl (the library scikit-learn and joblib use for this). The products keep their bits:
OpenBLAS splits a product over threads by rows and columns of the result, never along the
3-long inner sum, so one thread computes every element with the same kernel.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..errors import ScenarioWarning

_CONTROLLER = None


def _controller():
    """One :class:`threadpoolctl.ThreadpoolController` per process (finding the libraries
    costs about a millisecond; do it once)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@contextmanager
def single_threaded_blas():
    """Context manager: BLAS (OpenBLAS, MKL, BLIS) on one thread inside, as before after.

    Used around the time manager's loop (:meth:`hifi.Simulation.run`) and by the benchmarks
    around a model step, so both time what a run does.
    """
    with _controller().limit(limits=1, user_api="blas"):
        yield


# -- the threads of a run -----------------------------------------------------------------------

#: Environment variable setting the threads of a run (an integer >= 1); it overrides
#: ``[simulation] threads``.
THREADS_ENV = "HIFI_THREADS"


class ThreadsWarning(ScenarioWarning):
    """A run asked for more threads than the cores its process may run on (its CPU affinity):
    it runs with them all the same (a test of the thread count, a core shared on purpose), but
    the threads take turns on the cores. ``hifi run`` prints it as ``hifi: warning: ...``;
    ``warnings.simplefilter("error", ThreadsWarning)`` makes it an error."""


def affinity_threads() -> int:
    """The cores this process may run on: its CPU affinity (``os.sched_getaffinity(0)``, what a
    scheduler such as SLURM or ``taskset`` gave it), or ``os.cpu_count()`` where the platform
    has no affinity (macOS, Windows)."""
    import os
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def threads_from_env() -> int | None:
    """:data:`THREADS_ENV` as an integer, or None when unset or empty.

    Raises
    ------
    ValueError
        It is set to something other than an integer >= 1 (naming the variable, its value and
        what is allowed).
    """
    import os
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{THREADS_ENV} = {text!r}: expected an integer >= 1 (the threads of a run; at most "
                         f"the {affinity_threads()} cores this process may run on)")
    return int(text)


def resolve_threads(requested: int | None = None, scenario: int | None = None, *, where: str = "",
                    default: int | None = None) -> tuple[int, str]:
    """The threads a run uses and where that number came from.

    The first given of: ``requested`` (``Simulation.run(threads=...)``), :data:`THREADS_ENV`,
    ``scenario`` (``[simulation] threads``), ``default`` (an MPI rank's share of its node's
    cores), else :func:`affinity_threads`.

    Parameters
    ----------
    requested : int, optional
        Threads asked for in code.
    scenario : int, optional
        ``[simulation] threads`` (validated >= 1 by the scenario's parameters).
    where : str
        The scenario file, for the warning.
    default : int, optional
        Threads when nothing else says.

    Returns
    -------
    threads : int
        Threads, >= 1.
    source : str
        ``"threads="``, ``"HIFI_THREADS"``, ``"[simulation] threads"``, ``"MPI rank share"`` or
        ``"CPU affinity"``.

    Raises
    ------
    ValueError
        ``requested`` or :data:`THREADS_ENV` below 1 or not an integer.

    Warns
    -----
    ThreadsWarning
        More threads than :func:`affinity_threads` (one line naming the setting, the value and
        the cores allowed); the run goes on with them.
    """
    allowed = affinity_threads()
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ValueError(f"threads = {requested!r}: expected an integer >= 1 (at most the {allowed} cores "
                             f"this process may run on)")
        n, source, key = int(requested), "threads=", "threads"
    elif (env := threads_from_env()) is not None:
        n, source, key = env, THREADS_ENV, THREADS_ENV
    elif scenario is not None:
        n, source, key = int(scenario), "[simulation] threads", f"{where}: simulation.threads" if where else \
            "simulation.threads"
    elif default is not None:
        n, source, key = max(1, int(default)), "MPI rank share", ""
    else:
        return allowed, "CPU affinity"
    if n > allowed and key:
        import warnings
        warnings.warn(f"{key} = {n}: more threads than the {allowed} cores this process may run on (its CPU "
                      f"affinity); allowed: 1 to {allowed}; running with {n}, taking turns on the cores",
                      ThreadsWarning, stacklevel=2)
    return n, source


class _Task:
    """One function queued on a :class:`ThreadBudget`: its state, result or exception."""

    __slots__ = ("fn", "state", "result", "error", "kind")

    def __init__(self, fn, kind: int):
        self.fn = fn
        self.kind = kind
        self.state = _QUEUED
        self.result = None
        self.error: BaseException | None = None


_QUEUED, _RUNNING, DONE = 0, 1, 2
#: Kinds of task: a chunk of one step's array work (short, run first) and a whole model step.
CHUNK, STEP = 0, 1


class ThreadBudget:
    """One budget of threads for a run: the time manager's concurrent model steps and the
    chunks of the casts and kernels inside them share it.

    ``n_threads - 1`` worker threads run queued tasks; a thread that waits for tasks
    (:meth:`wait`) runs them itself meanwhile, so ``n_threads`` threads compute at most and the
    pool is never oversubscribed by nesting (a step's chunks are not a second pool). Chunks are
    taken before whole steps, so a step under way finishes first.

    Waiting cannot deadlock: a waiter runs its own queued tasks first; a task it waits for is
    otherwise being run by another thread, and a task waits only for tasks it queued itself
    (a step for its chunks; chunks wait for nothing), so every wait ends. A thread waiting
    inside a task helps with chunks only, never a whole step (which would hold its own task's
    finish up for a step's length); the time manager's top-level wait helps with steps too.

    Parameters
    ----------
    n_threads : int
        Threads computing at most, >= 1 (1: no worker; every task runs in the thread that
        waits for it, in the order waited for).
    """

    def __init__(self, n_threads: int):
        import collections
        import threading
        self.n_threads = max(1, int(n_threads))
        self._queues = (collections.deque(), collections.deque())      # CHUNK, STEP
        self._cv = threading.Condition()
        self._workers: list = []
        self._closed = False
        self._running = 0
        #: Tasks finished so far (a waiter's ``until`` may watch it).
        self.completed = 0
        self._threading = threading

    def _start_workers(self) -> None:
        if self._workers or self.n_threads <= 1:
            return
        for i in range(self.n_threads - 1):
            w = self._threading.Thread(target=self._work, name=f"hifi-{i + 1}", daemon=True)
            w.start()
            self._workers.append(w)

    def submit(self, fn, kind: int = CHUNK) -> _Task:
        """Queue ``fn()`` (``kind``: :data:`CHUNK` or :data:`STEP`); returns its task for :meth:`wait`."""
        task = _Task(fn, kind)
        with self._cv:
            if self._closed:
                raise RuntimeError("ThreadBudget is closed")
            self._start_workers()
            self._queues[kind].append(task)
            self._cv.notify_all()
        return task

    def _claim(self, task: _Task) -> bool:
        """Take ``task`` from its queue (under the lock): whether it was still queued."""
        if task.state != _QUEUED:
            return False
        self._queues[task.kind].remove(task)
        task.state = _RUNNING
        self._running += 1
        return True

    def _next(self, steps: bool) -> _Task | None:
        """The next queued task (a chunk, else a step when ``steps``), claimed (under the lock)."""
        for kind in ((CHUNK, STEP) if steps else (CHUNK,)):
            q = self._queues[kind]
            if q:
                task = q.popleft()
                task.state = _RUNNING
                self._running += 1
                return task
        return None

    def _execute(self, task: _Task) -> None:
        stop = None
        try:
            task.result = task.fn()
        except BaseException as exc:            # handed to whoever waits for it
            task.error = exc
            if isinstance(exc, KeyboardInterrupt) and self._threading.current_thread() is \
                    self._threading.main_thread():
                stop = exc                      # a signal's exception also leaves the main thread at once
        with self._cv:
            task.state = DONE
            task.fn = None
            self._running -= 1
            self.completed += 1
            self._cv.notify_all()
        if stop is not None:
            raise stop

    def _work(self) -> None:
        while True:
            with self._cv:
                task = self._next(True)
                while task is None:
                    if self._closed:
                        return
                    self._cv.wait()
                    task = self._next(True)
            self._execute(task)

    def wait(self, tasks, *, help_steps: bool = False, until=None) -> None:
        """Return when every task of ``tasks`` is done (or, with ``until``, as soon as
        ``until()`` is true), running queued tasks meanwhile: these first, then chunks, then
        (``help_steps``) whole steps. Exceptions stay on the tasks (:meth:`result`)."""
        tasks = list(tasks)
        while True:
            with self._cv:
                pending = [t for t in tasks if t.state != DONE]
                if not pending or (until is not None and until()):
                    return
                task = next((t for t in pending if self._claim(t)), None)
                if task is None:
                    task = self._next(help_steps)
                if task is None:
                    self._cv.wait()
                    continue
            self._execute(task)

    @staticmethod
    def result(task: _Task):
        """The value of a done task, or raise its exception."""
        if task.error is not None:
            raise task.error
        return task.result

    def cancel_queued(self, kind: int | None = None) -> int:
        """Drop every task not started (of ``kind`` only, when given); their waiters must not
        wait for them. Returns how many."""
        with self._cv:
            n = 0
            for q in (self._queues if kind is None else (self._queues[kind],)):
                for task in q:
                    task.state = DONE
                    task.error = RuntimeError("cancelled")
                    task.fn = None
                    n += 1
                q.clear()
            self._cv.notify_all()
        return n

    def idle(self) -> None:
        """Wait until no task runs and none is queued (after :meth:`cancel_queued`, the steps
        under way on the workers finish)."""
        with self._cv:
            while any(self._queues) or self._running:
                self._cv.wait()

    def close(self) -> None:
        """Stop the workers once the queue is empty (a later :meth:`submit` is refused)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        for w in self._workers:
            w.join()
        self._workers = []
