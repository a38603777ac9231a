"""Waiting on MPI without ever blocking in MPI: how a partitioned run stops on a signal.

A rank blocked in a blocking MPI call (``recv``, ``Allreduce``, ``Barrier``) never runs Python's
signal handlers, and waits forever for a rank that has stopped. So every wait of a partitioned
run is a non-blocking operation (``isend``, ``Iallreduce``, ``Ibarrier``, ``Iprobe``) tested
in a loop that sleeps a little between tests (:func:`wait`, :func:`wait_message`): a signal
raises :class:`hifi.interrupt.Interrupted` there, and a *stop message* from another rank
(:data:`STOP_TAG`, carrying the signal number) raises it too, so a signal that reaches one rank
stops them all.

On an interrupt (:func:`end_interrupted`): the rank tells the others to stop; its ``finally``
blocks have already run (rank 0's ``.DIR.partial-*`` is deleted; the other ranks write no
file). Rank 0 prints the one line of :func:`hifi.interrupt.message` and leaves at once with
``128 + signal``, without ``MPI_Finalize`` (whose pending operations would hang or complain);
the launcher then stops the other ranks, which wait for it (at most :data:`STOP_WAIT_S`) so
that no rank ends the job before rank 0 has cleaned up.
"""

from __future__ import annotations

import os
import sys
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

#: Requests of the stop messages sent (kept referenced until the process ends).
_sent: list = []


def check_stop(comm) -> None:
    """Raise :class:`hifi.interrupt.Interrupted` if another rank asked this one to stop."""
    from mpi4py import MPI

    from hifi.interrupt import Interrupted, mark_stopping
    status = MPI.Status()
    if comm.Iprobe(source=MPI.ANY_SOURCE, tag=STOP_TAG, status=status):
        signum = comm.recv(source=status.Get_source(), tag=STOP_TAG)
        mark_stopping()              # this rank's own copy of the signal must not break the cleanup
        raise Interrupted(signum, remote=True)


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
    from hifi.interrupt import exit_status, ignore_signals, message, signal_number
    ignore_signals()                    # a repeated signal must not end a rank half-way
    if not getattr(exc, "remote", False):
        announce_stop(comm, signal_number(exc))
    status = exit_status(exc)
    if comm.Get_rank() == 0:
        print(message(exc), file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(status)
    sys.stdout.flush()
    sys.stderr.flush()
    # MPICH's launcher kills (SIGKILL) the other ranks once rank 0 has left without finalizing.
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
    os._exit(status)
