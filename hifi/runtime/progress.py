"""Progress of a run on stderr: a bar on a terminal, a plain periodic line otherwise.

Two phases:

- **simulated**: simulated seconds done out of the run's duration (under ``mpirun`` with
  ``--partition time``, rank 0 adds up every rank's share as the ranks report it);
- **writing**: frames handed to the files once the simulation is over (the other ranks' frames
  under ``--partition time``, and the frames still buffered in memory when the simulation ends).

On a terminal each phase is a tqdm bar that appears once the run has taken
:data:`PROGRESS_DELAY_S` and stays, at 100 %, when its phase ends. When stderr is not a terminal
(a log file, a batch job), a line such as::

    hifi: simulated 1.20/5.00 s (24 %), 00:12 elapsed

is printed every :data:`PROGRESS_INTERVAL_S` (the environment variable
``HIFI_PROGRESS_INTERVAL_S`` overrides it), and a last line at 100 % ends each phase of a run
that lasted that long. Progress never changes what a run computes or writes.
"""

from __future__ import annotations

import math
import os
import sys
import time

#: Runs shorter than this show no bar on a terminal (wall clock) [s].
PROGRESS_DELAY_S = 2.0

#: Period of the plain progress line when stderr is not a terminal (wall clock) [s].
PROGRESS_INTERVAL_S = 10.0

#: Environment variable overriding :data:`PROGRESS_INTERVAL_S` [s].
PROGRESS_INTERVAL_ENV = "HIFI_PROGRESS_INTERVAL_S"


def _interval_s() -> float:
    text = os.environ.get(PROGRESS_INTERVAL_ENV, "").strip()
    if not text:
        return PROGRESS_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{PROGRESS_INTERVAL_ENV} = {text!r}: expected a number of seconds > 0")
    return value


def format_elapsed(seconds: float) -> str:
    """``MM:SS``, or ``H:MM:SS`` from one hour on."""
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """Reports a run's progress (see the module notes).

    Parameters
    ----------
    duration_s : float
        Simulated span of the run [s].
    enabled : bool or None
        False: silent. None: a bar on a terminal after :data:`PROGRESS_DELAY_S`, else plain
        lines. True: as None, but a bar shows at once.
    stream : file, optional
        Where to report (default ``sys.stderr``).
    tty : bool, optional
        Whether ``stream`` is a terminal (default: ``stream.isatty()``).
    interval_s : float, optional
        Period of the plain line [s] (default :data:`PROGRESS_INTERVAL_S` or the environment).
    """

    def __init__(self, duration_s: float, enabled: bool | None = None, *, stream=None,
                 tty: bool | None = None, interval_s: float | None = None):
        self.duration_s = float(duration_s)
        self.enabled = enabled is not False
        self.stream = sys.stderr if stream is None else stream
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if callable(isatty) else False
        self.tty = tty
        self.delay_s = 0.0 if enabled is True else PROGRESS_DELAY_S
        self.interval_s = _interval_s() if interval_s is None and self.enabled else (interval_s or 0.0)
        self.start = time.monotonic()
        self.phase = "simulated"
        self.done_s = 0.0
        self.write_total = 0
        self.written = 0
        self._last_line = self.start
        self._lines = 0
        self._bar = None
        if self.enabled and self.tty:
            self._bar = self._new_bar(self.duration_s, "simulated", "s",
                                      "{desc}: {n:.3f}/{total:.3f} s |{bar}| {percentage:3.0f} % "
                                      "[{elapsed}<{remaining}]")

    def _new_bar(self, total, desc, unit, fmt):
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, unit=unit, file=self.stream, delay=self.delay_s, leave=True,
                    bar_format=fmt)

    # -- updates ------------------------------------------------------------------------------

    def simulated(self, done_s: float) -> None:
        """Simulated seconds done so far [s] (of the whole job); never goes back."""
        if self.phase != "simulated":
            return
        done_s = min(float(done_s), self.duration_s)
        if done_s <= self.done_s:
            return
        if self._bar is not None:
            self._bar.update(done_s - self.done_s)
        self.done_s = done_s
        self._tick()

    def expect_writes(self, n: int) -> None:
        """``n`` more frames will be counted in the writing phase."""
        self.write_total += int(n)

    def start_writing(self, n: int = 0) -> None:
        """End the simulated phase (at 100 %) and start the writing phase; ``n`` as
        :meth:`expect_writes`. Calling it again only adds ``n``."""
        self.write_total += int(n)
        if self.phase != "simulated":
            return
        self.done_s = self.duration_s
        self._end_phase()
        self.phase = "writing"
        if self.enabled and self.tty and self.write_total > 0:
            self._bar = self._new_bar(self.write_total, "writing", "frame",
                                      "{desc}: {n}/{total} frames |{bar}| {percentage:3.0f} % [{elapsed}]")

    def wrote(self, n: int = 1) -> None:
        """``n`` frames written in the writing phase."""
        if n <= 0:
            return
        self.written += int(n)
        if self._bar is not None and self.phase == "writing":
            self._bar.update(n)
        self._tick()

    def close(self) -> None:
        """End the run's progress: every phase at 100 %."""
        if self.phase == "simulated":
            self.start_writing()
        if self.phase == "writing":
            self.written = self.write_total
            if self.write_total > 0:
                self._end_phase()
            self.phase = "closed"

    # -- output -------------------------------------------------------------------------------

    def line(self) -> str:
        """The plain progress line of the current phase."""
        elapsed = format_elapsed(time.monotonic() - self.start)
        if self.phase == "simulated":
            pct = 100.0 * self.done_s / self.duration_s if self.duration_s > 0 else 100.0
            return (f"hifi: simulated {self.done_s:.2f}/{self.duration_s:.2f} s ({pct:.0f} %), "
                    f"{elapsed} elapsed")
        pct = 100.0 * self.written / self.write_total if self.write_total else 100.0
        return f"hifi: writing {self.written}/{self.write_total} frames ({pct:.0f} %), {elapsed} elapsed"

    def _print(self) -> None:
        # one write with its newline: print() writes the text and the newline separately, and a
        # signal between the two left "hifi: interrupted ..." on the end of a progress line
        self.stream.write(self.line() + "\n")
        self.stream.flush()
        self._lines += 1

    def _tick(self) -> None:
        if not self.enabled or self.tty:
            return
        now = time.monotonic()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            self._print()

    def _end_phase(self) -> None:
        """Show the current phase complete: close its bar, or print its 100 % line if the run
        has lasted at least one period."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.n = self._bar.total
            self._bar.close()
            self._bar = None
        elif not self.tty and time.monotonic() - self.start >= self.interval_s:
            if self.phase == "writing":
                self.written = self.write_total
            self._print()
            self._last_line = time.monotonic()

    def abandon(self) -> None:
        """Stop reporting without completing (the run failed or was interrupted)."""
        if self._bar is not None:
            self._bar.leave = False
            self._bar.close()
            self._bar = None
        self.enabled = False
        self.phase = "closed"
