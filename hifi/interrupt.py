"""A clean stop on Ctrl-C (SIGINT) and SIGTERM.

The command line installs :func:`signal_handlers` around a command. The first SIGINT or SIGTERM
raises :class:`Interrupted` in the main thread: a ``KeyboardInterrupt``, so ``except Exception``
never swallows it and every ``finally`` runs on the way out (a run's temporary directory is
deleted, its files closed). Later signals are ignored while hifi cleans up; SIGKILL still ends
the process at once (then a run leaves ``.DIR.partial-*`` holding its ``INCOMPLETE`` file).
The command line prints :func:`message` and exits with :func:`exit_status`, ``128 + signal``
(130 for SIGINT, 143 for SIGTERM), the shell's convention.

The time manager notes on the exception the simulated time of the last event it started
(:func:`note_time`), so the message says how far the run got. Nothing here is installed by
importing hifi or by :meth:`hifi.Simulation.run`: a library leaves signals to its caller.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

#: Signals that stop a command cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by the handler of SIGINT or SIGTERM.

    Parameters
    ----------
    signum : int
        The signal received.
    remote : bool
        True when another MPI rank received the signal and told this one to stop.

    Attributes
    ----------
    t_s : float or None
        Simulated time of the last event started when the run stopped [s] (None before the
        run started).
    """

    def __init__(self, signum: int, remote: bool = False):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = int(signum)
        self.remote = remote
        self.t_s: float | None = None


def signal_number(exc: BaseException) -> int:
    """Signal behind an interrupt (a plain ``KeyboardInterrupt`` is SIGINT)."""
    return int(getattr(exc, "signum", signal.SIGINT))


def exit_status(exc: BaseException) -> int:
    """Exit status of a process stopped by ``exc``: 128 + the signal number."""
    return 128 + signal_number(exc)


def note_time(exc: BaseException, t_s) -> None:
    """Record the simulated time ``t_s`` [s] on ``exc`` unless a deeper layer already did."""
    if t_s is not None and getattr(exc, "t_s", None) is None:
        exc.t_s = float(t_s)


def message(exc: BaseException) -> str:
    """The one line printed on stderr: ``hifi: interrupted at t = 1.230 s``."""
    t = getattr(exc, "t_s", None)
    return "hifi: interrupted" if t is None else f"hifi: interrupted at t = {t:.3f} s"


@contextmanager
def signal_handlers(signals=STOP_SIGNALS):
    """Within the block, the first of ``signals`` raises :class:`Interrupted`; later ones are
    ignored (the first is being handled). The previous handlers come back on exit.

    Outside the main thread (where Python delivers signals) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if _stopping[0]:             # already stopping: let the cleanup finish
            return
        _stopping[0] = True
        _pending[0] = signum         # for check(), should the exception below be swallowed
        raise Interrupted(signum)

    _stopping[0] = False
    _pending[0] = None
    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _stopping[0] = False
        _pending[0] = None


#: Whether this process is already stopping (the handlers of :func:`signal_handlers` then
#: ignore further signals).
_stopping = [False]

#: The signal a handler of :func:`signal_handlers` received, until :func:`check` raises it.
_pending = [None]


def check() -> None:
    """Raise :class:`Interrupted` if a stop signal arrived whose exception did not get through.

    The handler raises where the main thread happens to be; if that is inside code that
    swallows exceptions (a finaliser, a C callback), the run would go on. The time manager
    calls this between events, so the run stops at the next event at the latest. Error
    handlers call it first too: where Python wraps the exception in another (a class being
    created, ``Error calling __set_name__``: a ``RuntimeError``), the error is the stop.
    """
    if _pending[0] is not None:
        signum, _pending[0] = _pending[0], None
        raise Interrupted(signum)


def mark_stopping() -> None:
    """This process is stopping for another reason than a signal of its own (another MPI rank
    asked it to): from now on the handlers of :func:`signal_handlers` ignore signals, so one
    arriving now cannot break off the cleanup."""
    _stopping[0] = True


def ignore_signals(signals=STOP_SIGNALS) -> None:
    """Ignore ``signals`` from now on (a process that only waits to be ended)."""
    if threading.current_thread() is threading.main_thread():
        for s in signals:
            signal.signal(s, signal.SIG_IGN)
