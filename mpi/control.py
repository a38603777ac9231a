"""Waiting on MPI without ever blocking in MPI: how a partitioned run stops on a signal.

A rank blocked in a blocking MPI call (``recv``, ``Allreduce``, ``Barrier``) never runs Python's
signal handlers, and waits forever for a rank that has stopped. So every wait of a partitioned
run is a non-blocking operation (``isend``, ``Iallreduce``, ``Ibarrier``, ``Iprobe``) tested
in a loop that sleeps a little between tests (:func:`wait`, :func:`wait_message`): a signal
raises :class:`hifi.runtime.interrupt.Interrupted` there, and a *stop message* from another rank
(:data:`STOP_TAG`, carrying the signal number) raises it too, so a signal that reaches one rank
stops them all.

On an interrupt (:func:`end_interrupted`): the rank tells the others to stop; its ``finally``
blocks have already run (rank 0's ``.DIR.partial-*`` is deleted; the other ranks write no
file). Rank 0 prints the one line of :func:`hifi.runtime.interrupt.message` and ends the job at once
with ``MPI_Abort(128 + signal)``, not ``MPI_Finalize`` (whose pending operations would hang or
complain); the launcher then stops the other ranks, which wait for it (at most
:data:`STOP_WAIT_S`) so that no rank ends the job before rank 0 has cleaned up.

Errors end a job the same way (:func:`end_job`): rank 0 prints the one line a serial run
prints (``hifi: error: ...``) and leaves with the same status (2 bad input, 1 a file that
cannot be written); a rank other than 0 that fails during the run sends its error to rank 0
(:func:`report_error`), which reports it as ``hifi: error: rank 1 of 2: ...``.

Start-up (measured with MPICH 5.0.2's Hydra): a process that exits before ``MPI_Init`` with a
non-zero status does *not* end the job; a rank still in ``MPI_Init`` waits for it forever (the
initialisation needs every rank). A process that exits after ``MPI_Init`` without
``MPI_Finalize`` does: Hydra kills every other rank and ``mpiexec`` exits with that process's
status. So a process of a launch that stops before its runner started MPI (a signal during
the imports, a bad ``--seed``) initialises MPI first (:func:`end_job`). Every ``MPI_Init`` of
hifi is bounded by :data:`INIT_WAIT_S` (:func:`import_mpi`) in case another rank died before it
got there, in Python's own start-up, where no hifi code can handle a signal.
"""

from __future__ import annotations

import os
import sys
import threading
import time

#: Tag of the point-to-point message telling a rank to stop (payload: the signal number).
STOP_TAG = 78

#: Longest sleep between two tests of a pending operation (wall clock) [s]; the first tests
#: come faster (exponential back-off from 10 us). Each wait costs at most this much latency
#: over a blocking call (a facet-partitioned run makes two reductions per cast step), and a
#: sleeping rank leaves its core to the others, where MPI's blocking calls spin.
POLL_MAX_S = 0.001

#: How long a rank other than 0 waits, after an interrupt, for rank 0 to end the job
#: (wall clock) [s]; then it leaves by itself.
STOP_WAIT_S = 30.0

#: How long a process waits in ``MPI_Init`` for the other ranks (wall clock) [s], unless the
#: environment variable ``HIFI_MPI_INIT_TIMEOUT_S`` says otherwise (:func:`import_mpi`). The
#: initialisation ends as soon as the slowest rank has imported mpi4py (well under a second on
#: one machine); the limit is for a rank that died before it could: then the others would wait
#: in ``MPI_Init`` forever (see the module notes).
INIT_WAIT_S = 30.0

#: How long rank 0 waits, its output closed, before ``MPI_Abort`` (wall clock) [s], so that
#: the launcher forwards the one line it printed (:func:`_leave`).
ABORT_DRAIN_S = 0.2

#: Environment variables giving this process's rank in an MPI launch (MPICH's Hydra and
#: Intel MPI, Open MPI), read before MPI is initialised.
RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK")

#: Requests of the stop messages sent (kept referenced until the process ends).
_sent: list = []


def check_stop(comm) -> None:
    """Raise :class:`hifi.runtime.interrupt.Interrupted` if another rank asked this one to stop."""
    from mpi4py import MPI

    from hifi.runtime.interrupt import Interrupted, mark_stopping
    from hifi.runtime.interrupt import check as check_interrupt
    status = MPI.Status()
    if comm.Iprobe(source=MPI.ANY_SOURCE, tag=STOP_TAG, status=status):
        source = status.Get_source()
        payload = comm.recv(source=source, tag=STOP_TAG)
        mark_stopping()              # this rank's own copy of the signal must not break the cleanup
        if isinstance(payload, tuple):                    # (exit status, message): report_error
            raise RankError(payload[1], payload[0], source, comm.Get_size())
        raise Interrupted(payload, remote=True)
    check_interrupt()                # a signal of this rank's whose exception was swallowed


class RankError(BaseException):
    """Another rank failed during the run; rank 0 reports it (:func:`report_error`).

    Like ``KeyboardInterrupt`` (what this rank receives is a request to stop) it is not an
    ``Exception``: it passes the handlers that wrap a model's errors (a ``ModelError`` of the
    model whose cast was waiting) and every ``finally`` runs on its way to the command line.

    Attributes
    ----------
    exit_status : int
        Status the job exits with: that of a serial run failing the same way.
    """

    def __init__(self, message: str, exit_status: int, rank: int, size: int):
        super().__init__(f"rank {rank} of {size}: {message}")
        self.exit_status = int(exit_status)


def poll(comm, test) -> None:
    """Return once ``test()`` is true; between tests check for a stop message and sleep."""
    delay = 0.0
    while not test():
        check_stop(comm)
        time.sleep(delay)
        delay = min(2.0 * delay + 1e-5, POLL_MAX_S)


def wait(comm, request) -> None:
    """Complete a non-blocking ``request`` of ``comm`` (see :func:`poll`)."""
    poll(comm, request.Test)


def wait_message(comm, source: int, tag: int) -> None:
    """Return once a message from ``source`` with ``tag`` can be received without blocking."""
    poll(comm, lambda: comm.Iprobe(source=source, tag=tag))


def announce_stop(comm, signum: int) -> None:
    """Ask every other rank of ``comm`` to stop (non-blocking sends)."""
    rank = comm.Get_rank()
    for other in range(comm.Get_size()):
        if other != rank:
            _sent.append(comm.isend(int(signum), dest=other, tag=STOP_TAG))


def end_interrupted(comm, exc: BaseException):
    """End this rank after an interrupt (``exc``); does not return (see the module notes)."""
    from hifi.runtime.interrupt import exit_status, message, signal_number
    end_job(exit_status(exc), message(exc), comm=comm,
            signum=None if getattr(exc, "remote", False) else signal_number(exc))


def report_error(comm, exc: BaseException, status: int) -> None:
    """A rank other than 0 failed with ``exc`` during the run: send rank 0 the message (it
    prints it and ends the job with ``status``) and wait to be ended; does not return."""
    from hifi.runtime.interrupt import ignore_signals
    ignore_signals()
    detail = f"{type(exc).__name__}: {exc}"
    _sent.append(comm.isend((int(status), detail), dest=0, tag=STOP_TAG))
    end_job(status, None, comm=comm)


def launch_rank() -> int:
    """This process's rank in the MPI launch, read from the launcher's environment (0 when not
    launched); needs no MPI."""
    for var in RANK_VARS:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def end_job(status: int, line: str | None, *, comm=None, signum: int | None = None):
    """End this process of a job of several MPI processes; does not return.

    Rank 0 prints ``line`` (if any) on stderr and leaves at once with ``status``, without
    ``MPI_Finalize``: the launcher then kills the other ranks, which wait for that (at most
    :data:`STOP_WAIT_S`, then leave by themselves), so that none ends the job before rank 0 has
    cleaned up. Where MPI is not yet initialised (``comm`` None and mpi4py not imported: a stop
    during the imports), it is now, or the other ranks would wait in ``MPI_Init`` forever (see
    the module notes); at most :data:`INIT_WAIT_S` (:func:`import_mpi`).

    Parameters
    ----------
    status : int
        Exit status (128 + signal after an interrupt, 1 or 2 after an error).
    line : str or None
        The one line rank 0 prints.
    comm : mpi4py communicator, optional
        The job's communicator (default: ``MPI.COMM_WORLD``, initialising MPI if needed).
    signum : int, optional
        A signal this process received: the other ranks are told to stop
        (:func:`announce_stop`).
    """
    from hifi.runtime.interrupt import ignore_signals
    ignore_signals()                    # a repeated signal must not end a rank half-way
    rank = launch_rank() if comm is None else comm.Get_rank()
    if comm is None:
        try:
            comm = import_mpi().COMM_WORLD
        except ImportError:             # no MPI at all: nobody waits in MPI_Init
            comm = None
        rank = launch_rank() if comm is None else comm.Get_rank()
    if comm is not None and signum is not None:
        announce_stop(comm, signum)
    _leave(rank, status, line, STOP_WAIT_S, comm)


def barrier() -> None:
    """Wait until every rank of ``MPI.COMM_WORLD`` is here (``Ibarrier`` tested in a loop,
    :func:`wait`: a signal or another rank's stop still ends the wait). A sweep's ranks share
    nothing else (:mod:`hifi.run.sweep`)."""
    comm = import_mpi().COMM_WORLD
    wait(comm, comm.Ibarrier())


def import_mpi():
    """``from mpi4py import MPI`` (which runs ``MPI_Init``), bounded in time.

    ``MPI_Init`` waits for every rank of the job; a rank that died before it (a stop signal
    during Python's own start-up, before any hifi code could handle it) leaves the others
    waiting forever, and they cannot run Python meanwhile (not even a timer thread: mpi4py
    holds the interpreter during the call, measured). So the wait is bounded by the kernel:
    ``SIGALRM`` with its default action ends the process after :data:`INIT_WAIT_S` (or
    ``HIFI_MPI_INIT_TIMEOUT_S``) seconds, and the launcher then ends the job (``mpiexec``
    reports signal 14) instead of hanging. Outside the main thread, or where ``SIGALRM`` does
    not exist, the import is not bounded.
    """
    import signal
    try:
        limit = float(os.environ.get("HIFI_MPI_INIT_TIMEOUT_S", INIT_WAIT_S))
    except ValueError:
        limit = INIT_WAIT_S
    bounded = (hasattr(signal, "SIGALRM") and limit > 0
               and threading.current_thread() is threading.main_thread())
    if not bounded:
        from mpi4py import MPI
        return MPI
    previous = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, int(round(limit))))
    try:
        from mpi4py import MPI
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return MPI


def _leave(rank: int, status: int, line: str | None, wait_s: float, comm=None):
    """Rank 0: print ``line`` and end the job with ``status`` now; other ranks: wait ``wait_s``
    [s] for the launcher to end them, then exit with ``status``.

    Rank 0 ends the job with ``MPI_Abort(status)``, its standard output and error closed first
    (MPICH prints an ``Abort(...)`` line of its own). Hydra's ``mpiexec`` returns the bitwise OR
    of every process's wait status (``mpiexec.c``), so a plain exit of rank 0, after which
    the launcher kills the other ranks, gave 2 | SIGKILL, reported as 9, in 2 of 8 tries with
    three ranks; after ``MPI_Abort`` it returned ``status`` in 8 of 8 (measured with MPICH 5.0.2).
    """
    if rank == 0 and line:
        print(line, file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    if rank != 0:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            time.sleep(0.05)
    elif comm is not None:
        try:
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            # The launcher forwards this process's output through pipes that it reads on its
            # own time, and MPI_Abort reaches it on another channel: without a pause the line
            # printed above was lost in 2 of 48 error runs (the pipes closed first, measured).
            time.sleep(ABORT_DRAIN_S)
            comm.Abort(status)
        except Exception:               # noqa: BLE001  (whatever happened, the process ends below)
            pass
    os._exit(status)
