"""SIGINT and SIGTERM at random instants of the start of ``hifi run``, serial and under
``mpirun -n 2``: how every run ended.

    python tests/signal_sample.py                 # 50 instants per signal and mode, in [0, 2) s
    python tests/signal_sample.py -n 10 --max-s 1 --modes serial

Each run is the ``hifi`` console script (beside ``sys.executable``) on a scenario far longer
than the sample window, with ``--out`` in an empty directory and a private ``TMPDIR``. The
signal goes to the process the user's shell would signal: ``hifi`` itself, or ``mpiexec``
(which passes it on to every rank). A run counts as clean when it exits with 128 + the signal
(130, 143), prints exactly one line on stderr (``hifi: interrupted`` or ``hifi: interrupted at
t = ... s``) and leaves nothing in the ``--out`` parent or in ``TMPDIR`` but, under ``mpirun``
(Zarr), the one ``.DIR.partial-*`` its line says it keeps for ``--resume``. A run still going
:data:`HANG_S` after the signal is a hang (killed with everything it started).

Not collected by pytest; ``tests/e2e/test_interrupt.py`` runs a few instants of it.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _procs import env, kill_tree, mpirun  # noqa: E402
from _scenes import depth_camera_toml  # noqa: E402

#: Wall time after the signal beyond which a run counts as hung [s].
HANG_S = 60.0

#: The one line a stopped run prints (hifi.runtime.interrupt.message); a partitioned run, which
#: writes Zarr, names where it keeps its frames for --resume once its directory is made.
LINE = re.compile(r"^hifi: interrupted( at t = \d+\.\d{3} s)?"
                  r"(; the frames written are kept in (?P<kept>\S+): the same command with --resume continues)?$")

#: A run far longer than the window (4000 frames of a depth camera): the signal always comes
#: before it could finish.
SCENARIO = depth_camera_toml(200.0, seed=1, rate_hz=20.0, mover_y_m=10.0)


@dataclass
class Outcome:
    at_s: float          # when the signal was sent, after the start [s]
    status: int | None   # exit status (negative: killed by that signal); None: hung
    lines: list          # stderr lines
    left: list           # names left in the --out parent and in TMPDIR

    @property
    def clean(self) -> bool:
        return (self.status is not None and self.status >= 128 and len(self.lines) == 1
                and bool(LINE.match(self.lines[0])) and self.left == kept_dirs(self.lines[0]))


def kept_dirs(line: str) -> list:
    """What a stopped run may leave: the one directory its line says it keeps (``runs/NAME``)."""
    match = LINE.match(line)
    kept = match and match.group("kept")
    return [f"runs/{Path(kept).name}"] if kept else []


def command(mode: str, scenario: Path, out: Path) -> list:
    hifi = str(Path(sys.executable).with_name("hifi"))
    run = [hifi, "run", str(scenario), "--out", str(out), "--no-progress"]
    return run if mode == "serial" else [mpirun(), "-n", "2", *run]


def one(mode: str, signum: int, at_s: float, root: Path) -> Outcome:
    """One run of ``mode`` ("serial" or "mpi"), signalled ``at_s`` [s] after its start."""
    for name in ("runs", "tmp"):
        shutil.rmtree(root / name, ignore_errors=True)
        (root / name).mkdir(parents=True)
    scenario = root / "long.toml"
    scenario.write_text(SCENARIO)
    with open(root / "stderr.txt", "w+") as err:
        proc = subprocess.Popen(command(mode, scenario, root / "runs" / "out"), cwd=root,
                                env=env(root / "tmp"), stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        time.sleep(at_s)
        proc.send_signal(signum)
        try:
            status = proc.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            status = None
    lines = (root / "stderr.txt").read_text().strip().splitlines()
    left = [f"runs/{p.name}" for p in (root / "runs").iterdir()] + \
           [f"tmp/{p.name}" for p in (root / "tmp").iterdir()]
    return Outcome(at_s, status, lines, left)


def sample(mode: str, signum: int, instants, root: Path) -> list[Outcome]:
    return [one(mode, signum, at, root) for at in instants]


def summary(outcomes: list[Outcome]) -> dict:
    statuses: dict = {}
    for o in outcomes:
        statuses[o.status] = statuses.get(o.status, 0) + 1
    return {
        "runs": len(outcomes),
        "clean": sum(o.clean for o in outcomes),
        "statuses": ", ".join(f"{'hang' if s is None else s}: {n}" for s, n in sorted(
            statuses.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))),
        "hangs": sum(o.status is None for o in outcomes),
        "not one line": sum(not (len(o.lines) == 1 and LINE.match(o.lines[0])) for o in outcomes),
        "leftovers": sum(bool(o.left) for o in outcomes),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=50, help="instants per signal and mode (default 50)")
    p.add_argument("--max-s", type=float, default=2.0, help="instants drawn in [0, MAX_S) s (default 2)")
    p.add_argument("--modes", nargs="+", default=["serial", "mpi"], choices=["serial", "mpi"])
    p.add_argument("--seed", type=int, default=0, help="seed of the instants (default 0)")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    rows, bad = [], []
    with tempfile.TemporaryDirectory(prefix="hifi-signal-sample-") as tmp:
        for mode in args.modes:
            for signum in (signal.SIGINT, signal.SIGTERM):
                instants = [rng.uniform(0.0, args.max_s) for _ in range(args.n)]
                outcomes = sample(mode, signum, instants, Path(tmp))
                rows.append((mode, signal.Signals(signum).name, summary(outcomes)))
                bad += [(mode, signal.Signals(signum).name, o) for o in outcomes if not o.clean]
                print(f"{mode} {signal.Signals(signum).name}: {rows[-1][2]}", file=sys.stderr, flush=True)
    keys = ["runs", "clean", "statuses", "hangs", "not one line", "leftovers"]
    print("| mode | signal | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 2))
    for mode, sig, s in rows:
        print(f"| {mode} | {sig} | " + " | ".join(str(s[k]) for k in keys) + " |")
    for mode, sig, o in bad:
        print(f"\n{mode} {sig} at {o.at_s:.3f} s: status {o.status}, left {o.left}\n  " +
              "\n  ".join(o.lines[-12:]))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
