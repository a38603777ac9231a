"""Partitioned ``hifi run`` under MPI: the runners of the entry-point group ``hifi.partitions``.

``hifi run SCENARIO --out DIR --partition facets|time`` calls :func:`run_facets` or
:func:`run_time` on every rank. Rank 0 writes; the other ranks return None.

Failures read as in a serial run: one line ``hifi: error: ...`` from rank 0 and the serial
exit status (2 bad input, 1 a file that cannot be written). An error before the run (a bad
scenario, an existing output directory, a mesh that does not load on one rank) is agreed on by
every rank in one collective; rank 0 raises it (its own, else the first failing rank's as
``rank R of N: ...``) and the others wait to be ended. An error during the run on rank 0 (its
output cannot be written) leaves the runner on rank 0 as it would a serial run; on another rank
(a sensor's bug) it goes to rank 0 (:func:`mpi.control.report_error`), which raises it as
``rank R of N: ...``. Either way the command line ends the job from rank 0
(:func:`mpi.control.end_job`: no ``MPI_Abort``, no other rank left waiting) once rank 0's
``finally`` blocks have deleted its ``.DIR.partial-*``. Only a job killed outright (SIGKILL)
leaves that directory, holding an ``INCOMPLETE`` file, and never a ``DIR`` that looks finished.

Interrupts: ``mpiexec`` passes SIGINT and SIGTERM on to every rank. No rank ever waits in a
blocking MPI call (:mod:`mpi.control`), so every rank stops within moments, and a signal that
reaches one rank only stops the others too. Rank 0 deletes ``.DIR.partial-*``, prints ``hifi:
interrupted at t = ... s`` once, and the job exits with 128 + the signal number; the other
ranks write no file at all (not even a temporary directory).

Progress (``--partition time``): the ranks other than 0 send rank 0 their simulated progress
with non-blocking sends at most every :data:`PROGRESS_REPORT_S`, and their last report with the
number of frames they hold; rank 0 shows the whole job's simulated seconds, then the writing
of the other ranks' frames (:class:`hifi.runtime.progress.Progress`). Reports change nothing computed.
"""

from __future__ import annotations

import time

import numpy as np

from hifi.runtime.interrupt import check as check_interrupt
from hifi.runtime.interrupt import deferred, error_status

from .control import check_stop, end_interrupted, end_job, import_mpi, poll, report_error, wait, wait_message

#: Tag of the point-to-point messages carrying frames to rank 0 in time mode.
_FRAME_TAG = 77

#: Tag of the progress reports of the ranks other than 0 in time mode (78 is
#: :data:`mpi.control.STOP_TAG`).
_PROGRESS_TAG = 79

#: Ranks other than 0 report their simulated progress at most this often (wall clock) [s].
PROGRESS_REPORT_S = 0.5

INSTALL_HINT = 'pip install ".[mpi]"'


class PartitionError(ValueError):
    """A rank failed before the run started (reported once, by rank 0)."""


def world():
    """``MPI.COMM_WORLD``, importing mpi4py (and so initialising MPI) only now.

    Raises
    ------
    ImportError
        With the install command, if mpi4py or an MPI library is missing.
    """
    try:
        with deferred():              # a signal now is raised after MPI_Init, not inside mpi4py's import
            MPI = import_mpi()        # bounded: a rank that died before MPI_Init cannot hang the job
    except ImportError as exc:
        raise ImportError(f"--partition needs mpi4py and an MPI library ({exc}); install them with "
                          f"{INSTALL_HINT}") from None
    return MPI.COMM_WORLD


def _agree(comm, fn):
    """Run ``fn()`` on every rank; if any rank raised, every rank stops (one collective).

    Rank 0 raises the error (its own, else the first failing rank's as :class:`PartitionError`);
    the other ranks wait, silent, for the command line on rank 0 to end the job
    (:func:`mpi.control.end_job`), so the job reports it once.
    """
    from mpi4py import MPI
    try:
        value, error = fn(), None
    except Exception as exc:          # reported below, by rank 0, never swallowed
        check_interrupt()             # unless it is a stop signal's exception, wrapped
        value, error = None, exc
    check_interrupt()                 # a signal whose exception fn's code swallowed
    failed = np.array([error is not None], dtype=np.int32)
    any_failed = np.zeros(1, dtype=np.int32)
    wait(comm, comm.Iallreduce(failed, any_failed, op=MPI.MAX))   # a signal can stop the wait
    if not any_failed[0]:
        return value
    failures = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
    if comm.Get_rank() != 0:
        end_job(2, None, comm=comm)
    if error is not None:
        raise error
    first = next(r for r, f in enumerate(failures) if f)
    raise PartitionError(f"rank {first} of {comm.Get_size()}: {failures[first]}")


def _failed(comm, exc: BaseException) -> None:
    """An error during the run (after :func:`hifi.runtime.interrupt.check`): rank 0 raises it again (the
    command line reports it as a serial run would and ends the job); another rank sends it to
    rank 0 and waits to be ended (:func:`mpi.control.report_error`)."""
    check_interrupt()                  # a stop signal's exception, wrapped: the stop
    if comm.Get_rank() == 0:
        raise exc
    status = error_status(exc)
    report_error(comm, exc, 1 if status is None else status)


def _prepare(comm, scenario, out, overwrite, duration_s=None, ignore_disk_space=False):
    """Load the scenario on every rank and check the output directory and its free space on
    rank 0 (agreed)."""
    import hifi
    from hifi.run.output import check_output_dir

    def load():
        sim = hifi.load(scenario)
        if comm.Get_rank() == 0:
            check_output_dir(out, overwrite)
            sim.check_disk(out, duration_s, ignore_disk_space=ignore_disk_space)
        return sim

    return _agree(comm, load)


def run_facets(scenario, *, out, seed=None, duration_s=None, overwrite=False, progress=None,
               ignore_disk_space=False):
    """``--partition facets``: every rank holds 1/N of the facets and runs every model.

    All ranks generate the same rays; :class:`mpi.caster.FacetCaster` finds each ray's global
    nearest hit with one reduction per cast step. Rank 0 writes the files.

    Parameters
    ----------
    scenario : path-like
        Scenario file.
    out : path-like
        Output directory (rank 0 writes it).
    seed, duration_s, overwrite, progress, ignore_disk_space
        As :meth:`hifi.Simulation.run` (``duration_s`` [s]); the progress bar shows on rank 0 only.

    Returns
    -------
    dict of str to xarray.Dataset or None
        Rank 0: the written datasets; other ranks: None.
    """
    from .caster import FacetCaster

    comm = world()
    try:
        sim = _prepare(comm, scenario, out, overwrite, duration_s, ignore_disk_space)
        caster = _agree(comm, lambda: FacetCaster(sim.scene, comm).build())
        root = comm.Get_rank() == 0
        try:
            results = sim.run(out=out if root else None, seed=seed, duration_s=duration_s,
                              overwrite=overwrite, progress=progress if root else False,
                              caster=caster, write=root, ignore_disk_space=True)   # checked in _prepare
        except Exception as exc:
            _failed(comm, exc)
        wait(comm, comm.Ibarrier())
    except KeyboardInterrupt as exc:           # SIGINT, SIGTERM, or another rank's stop message
        end_interrupted(comm, exc)
    return results if root else None


class TimePartition:
    """Hooks of :meth:`hifi.Simulation.run` for a time-partitioned run.

    The simulated interval ``[0, duration_s)`` is cut into ``size`` contiguous sub-intervals of
    equal length; rank r computes the events with ``r D / N <= t < (r + 1) D / N`` (every model,
    every frame in that span). Rank 0 writes its own frames as it computes them; then, once
    every rank has finished computing, it receives the frames of ranks 1, 2, ... in turn and
    writes them, which is event order. The other ranks keep their frames in memory until rank 0
    takes them.

    Requires what every shipped model does: a frame depends only on the scenario, the seed and
    the frame's index and time (random streams are keyed by seed, sensor and frame,
    :mod:`hifi.api.rng`), not on the frames before it.
    """

    def __init__(self, comm, duration_s: float):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.lo = duration_s * self.rank / self.size
        self.hi = duration_s * (self.rank + 1) / self.size
        self.last = self.rank == self.size - 1
        self._held: list = []
        self.progress = None
        # Rank 0: simulated seconds done by each rank, whether its last report came, and how
        # many frames it holds.
        self._done = [0.0] * self.size
        self._final = [r == 0 for r in range(self.size)]
        self._counts = [0] * self.size
        self._last_report = -float("inf")
        self._reports: list = []

    def start(self, models, progress):
        self.progress = progress

        def keep(i, k):
            t = models[i].event_time(k)
            return self.lo <= t and (self.last or t < self.hi)
        return keep

    def event(self, t) -> None:
        """After every event of the time manager (``t`` [s]): progress and stop messages."""
        done = min(max(t - self.lo, 0.0), self.hi - self.lo)
        if self.rank == 0:
            self._done[0] = done
            self._receive_reports()
        else:
            now = time.monotonic()
            if now - self._last_report >= PROGRESS_REPORT_S:
                self._last_report = now
                self._report(done, None)
        check_stop(self.comm)

    def frame(self, i, k, t, frame) -> bool:
        if self.rank == 0:
            return True
        self._held.append((i, k, t, frame))
        return False

    def _report(self, done_s, n_frames) -> None:
        """Rank > 0: tell rank 0 the simulated seconds done; ``n_frames`` (the frames held)
        marks the last report."""
        self._reports.append(self.comm.isend((done_s, n_frames), dest=0, tag=_PROGRESS_TAG))

    def _receive_reports(self) -> bool:
        """Rank 0: take every progress report that has arrived; True once all last ones did."""
        from mpi4py import MPI
        status = MPI.Status()
        while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_PROGRESS_TAG, status=status):
            source = status.Get_source()
            done_s, n_frames = self.comm.recv(source=source, tag=_PROGRESS_TAG)
            self._done[source] = done_s
            if n_frames is not None:
                self._final[source] = True
                self._counts[source] = n_frames
        self.progress.simulated(sum(self._done))
        return all(self._final)

    def drain(self, write) -> None:
        comm = self.comm
        if self.rank != 0:
            self._report(self.hi - self.lo, len(self._held))
            for request in self._reports:
                wait(comm, request)
            self._reports.clear()
            for item in self._held:
                wait(comm, comm.isend(item, dest=0, tag=_FRAME_TAG))
            self._held.clear()
            return
        from hifi.runtime.interrupt import note_time
        self._done[0] = self.hi - self.lo
        poll(comm, self._receive_reports)              # every rank has finished computing
        self.progress.start_writing(sum(self._counts))
        t_written = None
        try:
            for source in range(1, self.size):
                for _ in range(self._counts[source]):
                    wait_message(comm, source, _FRAME_TAG)
                    item = comm.recv(source=source, tag=_FRAME_TAG)
                    t_written = item[2]
                    write(*item)
                    self.progress.wrote(1)
        except KeyboardInterrupt as exc:
            note_time(exc, t_written)
            raise


def _refuse_closed_loop(sim, scenario) -> None:
    """A closed loop (a vehicle, a driver) cannot be cut into independent time stretches: what
    a model does at t depends on everything before t."""
    loop = [m.name for m in sim.models if getattr(m, "closed_loop", False)]
    if loop:
        raise PartitionError(f"{scenario}: --partition time cannot run a closed loop ({', '.join(map(repr, loop))} "
                             f"depend on what happened before each step, so the run cannot be split into "
                             f"independent time stretches); use --partition facets, which splits the scene "
                             f"instead and gives the same bytes as a serial run")


def run_time(scenario, *, out, seed=None, duration_s=None, overwrite=False, progress=None,
             ignore_disk_space=False):
    """``--partition time``: every rank holds the whole scene and computes a contiguous
    sub-interval of the simulated time; rank 0 writes every frame in order.

    Parameters and return value as :func:`run_facets`.
    """
    comm = world()
    try:
        sim = _prepare(comm, scenario, out, overwrite, duration_s, ignore_disk_space)
        _agree(comm, lambda: _refuse_closed_loop(sim, scenario))
        root = comm.Get_rank() == 0
        duration = sim.scenario.duration_s if duration_s is None else float(duration_s)
        try:
            results = sim.run(out=out if root else None, seed=seed, duration_s=duration_s,
                              overwrite=overwrite, progress=progress if root else False,
                              partition=TimePartition(comm, duration), write=root,
                              ignore_disk_space=True)                                 # checked in _prepare
        except Exception as exc:
            _failed(comm, exc)
        wait(comm, comm.Ibarrier())
    except KeyboardInterrupt as exc:           # SIGINT, SIGTERM, or another rank's stop message
        end_interrupted(comm, exc)
    return results if root else None
