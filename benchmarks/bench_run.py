"""A whole ``hifi run`` of a scenario, in phases: start-up, models, writing.

    python benchmarks/bench_run.py                              # examples/crossing.toml, 5 rounds
    python benchmarks/bench_run.py --repeat 7 --tree /path/to/older/checkout
    python benchmarks/bench_run.py --scenario examples/crossing_fog.toml --json out.json

Each round runs ``hifi run SCENARIO --out TMP`` as the command line does, in a fresh
interpreter (one per tree given: this checkout first, then every ``--tree``, which is put first
on ``PYTHONPATH``), interleaved so that load changes on the machine hit every tree alike. The
child times itself with ``time.perf_counter``; the phases are

- **start-up**: from the interpreter's start (the parent's clock, before ``exec``) to the
  first event of the time manager: imports, scenario and scene, the caster's BVH, the models'
  set-up, the output files created;
- **models**: the time manager's run (every event of every model, and the frames handed to
  the writers);
- **writing**: from the last event to the end of ``Simulation.run``: the frames still to be
  written, the files closed, the directory moved into place and the results opened;
- **total**: the parent's wall time of the whole process.

The table gives medians over the rounds and, for every tree after the first, the ratio of the
paired medians (round by round) to the first tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The child: hifi's command line, with the time manager's run and Simulation.run timed.
_CHILD = r"""
import json, sys, time
t_enter = time.perf_counter()
marks = {}
import hifi.run.timemanager as _tm
_tm_run = _tm.TimeManager.run
def _timed_run(self, *a, **k):
    marks["events_start"] = time.perf_counter()
    try:
        return _tm_run(self, *a, **k)
    finally:
        marks["events_end"] = time.perf_counter()
_tm.TimeManager.run = _timed_run
from hifi.cli import main
status = main(sys.argv[1:])
marks["end"] = time.perf_counter()
print("BENCH " + json.dumps({"t_enter": t_enter, **marks, "status": status}), file=sys.stderr)
"""


def run_once(tree: Path, scenario: Path) -> dict:
    """One ``hifi run`` of ``scenario`` with the sources of ``tree``: phase times [s]."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-c", _CHILD, "run", str(scenario), "--out", str(out), "--no-progress"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
        wall = time.perf_counter() - t0
    line = next((x for x in proc.stderr.splitlines() if x.startswith("BENCH ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"hifi run failed in {tree} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    m = json.loads(line[6:])
    # The child's perf_counter is not the parent's: start-up is the wall time minus what the
    # child measured from its first statement to its end, plus that first part.
    child_span = m["end"] - m["t_enter"]
    before_child = wall - child_span                       # interpreter start, before t_enter
    return {"start-up": before_child + (m["events_start"] - m["t_enter"]),
            "models": m["events_end"] - m["events_start"],
            "writing": m["end"] - m["events_end"],
            "total": wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", type=Path, default=REPO / "examples" / "crossing.toml")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", type=Path, action="append", default=[],
                    help="another checkout to compare (its sources first on PYTHONPATH)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    trees = [REPO, *[t.resolve() for t in args.tree]]
    scenario = args.scenario.resolve()
    rounds = {str(t): [] for t in trees}
    for r in range(args.repeat):
        for t in trees:
            rounds[str(t)].append(run_once(t, scenario))
            print(f"round {r + 1}/{args.repeat} {t}: " +
                  ", ".join(f"{k} {v:.2f} s" for k, v in rounds[str(t)][-1].items()), file=sys.stderr)
    phases = ["start-up", "models", "writing", "total"]
    print(f"\n`{scenario.relative_to(REPO) if scenario.is_relative_to(REPO) else scenario}`, "
          f"{args.repeat} interleaved rounds, medians [s]:\n")
    print("| tree | " + " | ".join(phases) + " |")
    print("|---|" + "---:|" * len(phases))
    first = rounds[str(trees[0])]
    for t in trees:
        med = [statistics.median(x[p] for x in rounds[str(t)]) for p in phases]
        print(f"| {t} | " + " | ".join(f"{v:.2f}" for v in med) + " |")
    for t in trees[1:]:
        ratios = [statistics.median(a[p] / b[p] for a, b in zip(first, rounds[str(t)])) for p in phases]
        print(f"| {trees[0].name} / {t.name} (paired) | " + " | ".join(f"{v:.2f}" for v in ratios) + " |")
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
