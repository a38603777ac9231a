"""Partitioned ``hifi run`` under MPI: the runners of the entry-point group ``hifi.partitions``.

``hifi run SCENARIO --out DIR --partition time|facets|facets=K`` calls :func:`run_time` or
:func:`run_facets` on every rank (:func:`run_partitioned`: ``facets=K``, groups of K ranks
share the scene by facets, the groups share the simulated time). Every rank writes the frames
it computed into the Zarr stores of the temporary directory ``.DIR.partial-*`` that rank 0
made (:mod:`hifi.run.zarr_output`); rank 0 moves it into place once every rank has written.
Rank 0 returns the datasets, the other ranks None.

Failures read as in a serial run: one line ``hifi: error: ...`` from rank 0 and the serial
exit status (2 bad input, 1 a file that cannot be written). An error before the run (a bad
scenario, an existing output directory, a mesh that does not load on one rank, a group size
that does not divide the ranks) is agreed on by every rank in one collective, before any file
is written; rank 0 raises it (its own, else the first failing rank's as ``rank R of N: ...``)
and the others wait to be ended. An error during the run on rank 0 leaves the runner on rank 0
as it would a serial run; on another rank (a sensor's bug, a disk full) it goes to rank 0
(:func:`mpi.control.report_error`), which raises it as ``rank R of N: ...``. Either way the
command line ends the job from rank 0 (:func:`mpi.control.end_job`). The frames written stay
in ``.DIR.partial-*`` (marked ``INCOMPLETE``), never in a ``DIR`` that looks finished, and
``hifi run ... --resume`` continues from them (:mod:`hifi.run.resume`).

Interrupts: ``mpiexec`` passes SIGINT and SIGTERM on to every rank. No rank ever waits in a
blocking MPI call (:mod:`mpi.control`), so every rank stops within moments, and a signal that
reaches one rank only stops the others too. Rank 0 prints ``hifi: interrupted at t = ... s``
and where the frames written are kept, once, and the job exits with 128 + the signal number.

Progress: rank 0 shows the whole job's simulated seconds from the reports of the other
groups (:class:`Partition`), then its own writing (:class:`hifi.runtime.progress.Progress`).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from hifi.runtime.interrupt import check as check_interrupt
from hifi.runtime.interrupt import deferred, error_status

from .control import check_stop, end_interrupted, end_job, import_mpi, poll, report_error, wait

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


def _prepare(comm, scenario, out, overwrite, duration_s=None, ignore_disk_space=False, seed=None,
             output_format=None, resume=False, made_here=None):
    """Load the scenario on every rank; on rank 0 check the output directory and its free space
    and make the temporary directory every rank writes into (or find the one ``resume``
    continues); agreed by every rank, then its path sent to all.

    Returns
    -------
    (Simulation, Path or None, bool)
        The simulation, the shared directory (None: ``resume`` found the run finished) and
        whether the run resumes a stopped one.
    """
    import hifi
    from hifi.run.output import check_output_dir
    from hifi.run.resume import identity, plan
    from hifi.run.simulation import INCOMPLETE_MARKER, make_partial, output_format_of

    def load():
        sim = hifi.load(scenario)
        output_format_of(output_format, partitioned=True, resume=resume, out=out)
        if comm.Get_rank() != 0:
            return sim, None
        sc = sim.scenario
        duration = sc.duration_s if duration_s is None else float(duration_s)
        ident = identity(sc.text, sc.seed if seed is None else int(seed), duration)
        partial, complete = plan(Path(out), ident, INCOMPLETE_MARKER) if resume else (None, False)
        if complete:
            return sim, ""
        if partial is not None:
            if made_here is not None:
                made_here.append(partial)
            return sim, (str(partial), True)
        check_output_dir(out, overwrite)
        sim.check_disk(out, duration_s, ignore_disk_space=ignore_disk_space)
        partial = make_partial(Path(out), ident)
        if made_here is not None:
            made_here.append(partial)
        return sim, (str(partial), False)

    sim, made = _agree(comm, load)
    made = _broadcast(comm, made)
    if made == "":
        return sim, None, False
    return sim, Path(made[0]), made[1]


def _broadcast(comm, value):
    """Rank 0's ``value`` on every rank (a pickled object, sent with non-blocking calls)."""
    import pickle
    data = pickle.dumps(value) if comm.Get_rank() == 0 else b""
    size = np.array([len(data)], dtype=np.int64)
    wait(comm, comm.Ibcast(size, root=0))
    buf = np.frombuffer(data, dtype=np.uint8).copy() if comm.Get_rank() == 0 else np.empty(int(size[0]), np.uint8)
    wait(comm, comm.Ibcast(buf, root=0))
    return pickle.loads(buf.tobytes())


def _barrier(comm, also=None) -> None:
    """Wait until every rank of ``comm`` is here; ``also()`` runs between the tests and must
    be true too (rank 0 receiving the progress reports)."""
    request = comm.Ibarrier()
    poll(comm, lambda: bool(request.Test()) and (also is None or also()))


class Partition:
    """Hooks of :meth:`hifi.Simulation.run` for a run shared over MPI ranks.

    The ranks form ``groups`` groups of ``group_size`` consecutive ranks. The groups share the
    frames: each model's chunks of frames still to compute (a chunk: the frames one file of
    its Zarr store holds, :func:`hifi.run.zarr_output.chunk_frames`) are cut into ``groups``
    runs of consecutive chunks of equal length, group g computing the g-th (every model, so
    each group gets a stretch of the simulated time of every model). Within a group the ranks
    share the scene's facets (:class:`mpi.caster.FacetCaster`): each computes every frame of
    the group's chunks, and writes the chunks ``c`` with ``c % group_size`` equal to its rank
    in the group. So every chunk has one writer, which writes it whole; every rank writes into
    the Zarr stores of the shared directory (:mod:`hifi.run.zarr_output`) that rank 0 made,
    and rank 0 finishes the run once every rank has written.

    Requires what every shipped model does: a frame depends only on the scenario, the seed and
    the frame's index and time (random streams are keyed by seed, sensor and frame,
    :mod:`hifi.api.rng`), not on the frames before it, so any split gives the same values. A
    closed loop cannot be split (:func:`_refuse_closed_loop`).

    Progress: the first rank of every group but rank 0's sends rank 0 the number of events it
    has computed with non-blocking sends at most every :data:`PROGRESS_REPORT_S`, and a last
    report when it is done; rank 0 shows the job's share of events done as simulated seconds.
    Reports change nothing computed.
    """

    def __init__(self, comm, duration_s: float, directory: Path, group_size: int, resumed: bool = False):
        self.comm = comm
        self.directory = directory
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.owner = self.rank == 0
        self.group_size = int(group_size)
        self.groups = self.size // self.group_size
        self.group, self.group_rank = divmod(self.rank, self.group_size)
        self.leader = self.group_rank == 0
        self.duration_s = float(duration_s)
        self.resumed = resumed
        self.progress = None
        self._chunk: list[int] = []
        self._computed = 0
        self._mine = 0
        # Rank 0: events done and to do of each group, and whether its last report came.
        self._done = [0] * self.groups
        self._total = [0] * self.groups
        self._final = [g == 0 for g in range(self.groups)]
        self._last_report = -float("inf")
        self._reports: list = []

    def start(self, models, progress, written):
        """The ``keep`` filter of this rank (``written``: model index -> the frames a stopped
        run already wrote, empty when not resumed)."""
        from hifi.run.zarr_output import model_chunk_frames
        self.progress = progress
        mine = []
        for i, m in enumerate(models):
            n = m.frame_count(self.duration_s)
            chunk = model_chunk_frames(m, self.duration_s)
            self._chunk.append(chunk)
            chunks = np.arange(-(-n // chunk))
            if written.get(i):
                chunks = np.setdiff1d(chunks, np.unique(np.fromiter(written[i], dtype=np.int64) // chunk))
            share = np.array_split(chunks, self.groups)[self.group]
            mine.append(set(share.tolist()))
            self._mine += sum(min((c + 1) * chunk, n) - c * chunk for c in share.tolist())

        def keep(i, k):
            if k // self._chunk[i] in mine[i]:
                self._computed += 1
                return True
            return False
        return keep

    def ready(self) -> None:
        """Rank 0 has made the stores: the others may open them. Every rank learns each
        group's number of events (for the progress shown on rank 0)."""
        totals = np.zeros(self.groups, dtype=np.int64)
        if self.leader:
            totals[self.group] = self._mine
        every = np.zeros_like(totals)
        from mpi4py import MPI
        wait(self.comm, self.comm.Iallreduce(totals, every, op=MPI.SUM))
        self._total = every.tolist()

    def event(self, t) -> None:
        """After every event of the time manager (``t`` [s]): progress and stop messages."""
        if self.rank == 0:
            self._done[0] = self._computed
            self._receive_reports()
        elif self.leader:
            now = time.monotonic()
            if now - self._last_report >= PROGRESS_REPORT_S:
                self._last_report = now
                self._report(self._computed, False)
        check_stop(self.comm)

    def frame(self, i, k, t, frame) -> bool:
        return (k // self._chunk[i]) % self.group_size == self.group_rank

    def _report(self, done: int, final: bool) -> None:
        """A group's first rank (not rank 0): tell rank 0 the events it has computed."""
        self._reports.append(self.comm.isend((self.group, done, final), dest=0, tag=_PROGRESS_TAG))

    def _receive_reports(self) -> bool:
        """Rank 0: take every progress report that has arrived; True once all last ones did."""
        from mpi4py import MPI
        status = MPI.Status()
        while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_PROGRESS_TAG, status=status):
            group, done, final = self.comm.recv(source=status.Get_source(), tag=_PROGRESS_TAG)
            self._done[group] = done
            self._final[group] = self._final[group] or final
        total = sum(self._total)
        if self.progress is not None and total:
            self.progress.simulated(self.duration_s * min(sum(self._done) / total, 1.0))
        return all(self._final)

    def written(self) -> None:
        """This rank has written all its frames: wait for every rank (rank 0 then finishes the run)."""
        if self.rank == 0:
            self._done[0] = self._total[0]
            _barrier(self.comm, self._receive_reports)
            return
        if self.leader and self.groups > 1:
            self._report(self._total[self.group], True)
        for request in self._reports:
            wait(self.comm, request)
        self._reports.clear()
        _barrier(self.comm)


def _refuse_closed_loop(sim, scenario) -> None:
    """A closed loop (a vehicle, a driver) cannot be cut into independent time stretches: what
    a model does at t depends on everything before t."""
    loop = [m.name for m in sim.models if getattr(m, "closed_loop", False)]
    if loop:
        raise PartitionError(f"{scenario}: --partition time cannot run a closed loop ({', '.join(map(repr, loop))} "
                             f"depend on what happened before each step, so the run cannot be split into "
                             f"independent time stretches); use --partition facets, which splits the scene "
                             f"instead and gives the same values as a serial run")


def _check_group_size(group_size: int, size: int) -> None:
    if group_size < 1 or size % group_size:
        raise PartitionError(f"--partition facets={group_size}: the group size must divide the number of ranks "
                             f"({size}); allowed: " + ", ".join(f"facets={d}" for d in range(1, size + 1)
                                                                  if size % d == 0))


class PartitionResults(dict):
    """Rank 0's written datasets (name to :class:`xarray.Dataset`) and how the run was shared,
    for the run summary: ``ranks`` (the job's ranks) and ``threads`` (each rank's threads and
    where the number came from, as :func:`hifi.runtime.threads.resolve_threads` says)."""

    def __init__(self, datasets, *, ranks: int, threads: tuple[int, str]):
        super().__init__(datasets)
        self.ranks = ranks
        self.threads = threads


def _threads_per_rank(comm) -> int:
    """The threads of each rank when neither ``HIFI_THREADS`` nor ``[simulation] threads``
    says (:func:`hifi.runtime.threads.resolve_threads`): the machine's cores shared by the ranks
    on it, at most the cores the rank may run on (its CPU affinity). Sixteen ranks on sixteen
    cores each casting on sixteen threads would run 256 threads on 16 cores."""
    import os

    from mpi4py import MPI

    from hifi.runtime.threads import affinity_threads
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local = node.Get_size()
    node.Free()
    return max(1, min(affinity_threads(), (os.cpu_count() or 1) // local))


def run_partitioned(scenario, *, group_size: int | None, out, seed=None, duration_s=None, overwrite=False,
                    progress=None, ignore_disk_space=False, output_format=None, resume=False):
    """A run shared over the ranks of ``MPI.COMM_WORLD`` (:class:`Partition`).

    Parameters
    ----------
    scenario : path-like
        Scenario file.
    group_size : int or None
        Ranks that share the scene's facets (None: all of them; 1: a time partition).
    out : path-like
        Output directory (every rank writes into its temporary sibling; rank 0 moves it into place).
    seed, duration_s, overwrite, progress, ignore_disk_space, output_format, resume
        As :meth:`hifi.Simulation.run` (``duration_s`` [s]); the progress bar shows on rank 0 only.

    Returns
    -------
    PartitionResults or None
        Rank 0: the written datasets (a dict, with the ranks and each rank's threads); other
        ranks: None.
    """
    from .caster import FacetCaster

    comm = world()
    size = comm.Get_size()
    group_size = size if group_size is None else int(group_size)
    made: list = []                             # rank 0: the directory it made or continues
    try:
        _agree(comm, lambda: _check_group_size(group_size, size))
        sim, directory, resumed = _prepare(comm, scenario, out, overwrite, duration_s, ignore_disk_space,
                                           seed=seed, output_format=output_format, resume=resume, made_here=made)
        root = comm.Get_rank() == 0
        if directory is None:                    # resume: the run is finished
            return sim.run(out, seed=seed, duration_s=duration_s, resume=True, progress=False) if root else None
        if size // group_size > 1:
            _agree(comm, lambda: _refuse_closed_loop(sim, scenario))
        from hifi.runtime.threads import resolve_threads
        share = _threads_per_rank(comm)
        threads, source = _agree(comm, lambda: resolve_threads(None, sim.scenario.threads,
                                                               where=sim.scenario.source, default=share))
        if group_size > 1:
            group_comm = comm if group_size == size else comm.Split(comm.Get_rank() // group_size, comm.Get_rank())
            caster = _agree(comm, lambda: FacetCaster(sim.scene, group_comm, stop_comm=comm,
                                                      n_threads=threads).build())
        else:
            from hifi.caster import RayCaster
            caster = RayCaster(sim.scene, n_threads=threads)
        duration = sim.scenario.duration_s if duration_s is None else float(duration_s)
        partition = Partition(comm, duration, directory, group_size, resumed=resumed)
        try:
            results = sim.run(out=out, seed=seed, duration_s=duration_s, overwrite=overwrite,
                              progress=progress if root else False, caster=caster, partition=partition,
                              ignore_disk_space=True, output_format="zarr")          # checked in _prepare
        except Exception as exc:
            _failed(comm, exc)
        wait(comm, comm.Ibarrier())
    except KeyboardInterrupt as exc:           # SIGINT, SIGTERM, or another rank's stop message
        if made and made[0].exists() and getattr(exc, "kept_in", None) is None:
            exc.kept_in = made[0]              # stopped before the run: its directory is kept all the same
        end_interrupted(comm, exc)
    return PartitionResults(results, ranks=size, threads=(threads, source)) if root else None


def run_facets(scenario, **kwargs):
    """``--partition facets``: every rank holds 1/N of the facets and computes every frame;
    rank r writes the chunks of frames c with c % N = r (:func:`run_partitioned`)."""
    return run_partitioned(scenario, group_size=kwargs.pop("group_size", None), **kwargs)


def run_time(scenario, **kwargs):
    """``--partition time``: every rank holds the whole scene and computes a contiguous
    stretch of the simulated time, and writes its frames (:func:`run_partitioned`)."""
    return run_partitioned(scenario, group_size=1, **kwargs)
