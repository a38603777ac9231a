"""A clean stop on Ctrl-C (SIGINT) and SIGTERM, and the exit status of every way a command ends.

The command line installs :func:`signal_handlers` in the first lines of
:func:`hifi.cli.main`, before anything heavy is imported (``import hifi`` itself imports
nothing heavy). A signal that comes earlier, while Python itself starts and imports the
``hifi`` script (some 20-30 ms, before any code of hifi's runs, nothing written yet), meets
Python's defaults: SIGTERM ends the process at once, silently (status 143 in a shell); SIGINT
ends it by the signal, or with a ``KeyboardInterrupt`` traceback and status 1 (inside ``site``),
and once in 50 tries at 2 ms it was lost inside the interpreter's start-up and the run went on.
Under ``mpirun`` a signal that reaches ``mpiexec`` before it has started the ranks ends it with
status 15 (SIGTERM) and no line.

From then on the first SIGINT or SIGTERM raises :class:`Interrupted` in the main thread: a ``KeyboardInterrupt``, so ``except Exception``
never swallows it and every ``finally`` runs on the way out (a run's temporary directory is
deleted, its files closed). Later signals are ignored while hifi cleans up; SIGKILL still ends
the process at once (then a run leaves ``.DIR.partial-*`` holding its ``INCOMPLETE`` file).
The command line prints :func:`message` and exits with :func:`exit_status`, ``128 + signal``
(130 for SIGINT, 143 for SIGTERM), the shell's convention. Where the exception is swallowed
(by code that catches everything, or a finaliser), the signal stays pending and :func:`check`
raises it: between two events of a run, in every wait of an MPI run, and when the command
returns, so a signal is never lost.

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
    """The one line printed on stderr: ``hifi: interrupted at t = 1.230 s`` (and, for a run that
    keeps its frames, where they are and how to continue)."""
    t = getattr(exc, "t_s", None)
    line = "hifi: interrupted" if t is None else f"hifi: interrupted at t = {t:.3f} s"
    kept = getattr(exc, "kept_in", None)            # a resumable run's frames (hifi.run.resume)
    if kept is not None:
        line += f"; the frames written are kept in {kept}: the same command with --resume continues"
    return line


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
        if _deferring[0] or _swallowed_in(frame):      # raised later, by check()
            return
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

#: Modules whose Python functions run as C callbacks, where Python prints an exception as
#: "Exception ignored on calling ctypes callback function" and drops it: llvmlite's object cache
#: notifications while numba compiles (seen under mpirun, a SIGTERM 0.83 s after the start).
_CALLBACK_MODULES = ("llvmlite.",)


#: Functions (qualified names, by module) that the interpreter calls as weak-reference
#: callbacks, where an exception is printed as "Exception ignored in ..." and dropped: the
#: import system's module-lock cleanup (seen in CI, a SIGTERM 0.1 s into an MPI run).
_CALLBACK_FUNCTIONS = {("importlib._bootstrap", "_get_module_lock.<locals>.cb")}


def _swallowed_in(frame) -> bool:
    """Whether an exception raised in ``frame`` would be printed and dropped by Python (a C
    callback, a weak-reference callback, a finaliser): then the handler only notes the signal
    for :func:`check`."""
    if frame is None:
        return False
    module = frame.f_globals.get("__name__", "")
    code = frame.f_code
    return (module.startswith(_CALLBACK_MODULES) or code.co_name == "__del__"
            or (module, getattr(code, "co_qualname", code.co_name)) in _CALLBACK_FUNCTIONS)


#: How many :func:`deferred` blocks the main thread is in.
_deferring = [0]


@contextmanager
def deferred():
    """Within the block a stop signal is only noted; it is raised when the block ends.

    For code that an exception must not break off half-way and that gives Python's handlers
    no chance to run anyway: importing mpi4py initialises MPI (``MPI_Init``, which waits for
    every rank); an exception raised inside that import leaves MPI initialised but the module
    half-imported.
    """
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1
    if not _deferring[0]:
        check()


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


def error_status(exc: BaseException) -> int | None:
    """Exit status of a command ended by the error ``exc``, serial or under MPI.

    1 for a file that cannot be written (:class:`hifi.errors.OutputError`); 2 for bad input (a
    bad scenario or argument, a missing or unreadable input file, an existing output directory,
    a missing optional package, a scenario that needs more memory than there is); an
    ``exit_status`` attribute where the exception carries one (an error another MPI rank
    reported); None for anything else (a bug: the command line shows the traceback, and Python
    exits with 1).
    """
    from ..errors import OutputError
    status = getattr(exc, "exit_status", None)
    if status is not None:
        return int(status)
    if isinstance(exc, OutputError):
        return 1
    if isinstance(exc, (OSError, ValueError, ImportError, MemoryError)):
        return 2        # an input that cannot be read, a missing file, more memory than there is
    return None


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
