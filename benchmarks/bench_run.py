"""A whole ``hifi run`` of a scenario, in phases: start-up, models, writing; two commits paired.

    python benchmarks/bench_run.py                          # the working tree, examples/crossing.toml, 5 rounds
    python benchmarks/bench_run.py --base HEAD~1            # the working tree against HEAD~1
    python benchmarks/bench_run.py --base 50f3cce --head HEAD --repeat 7
    python benchmarks/bench_run.py --base HEAD --base-env HIFI_KERNELS=off --head-env HIFI_KERNELS=on
    python benchmarks/bench_run.py --base HEAD~1 --env HIFI_KERNELS=on --scenario examples/crossing_fog.toml --json out.json

Each side runs its own code with its own entry points, as ``same_bytes.py`` runs them
(``benchmarks/_trees.py``): ``--base COMMIT`` and ``--head COMMIT`` (default ``WORKTREE``: the
working tree as it is now, uncommitted edits included, copied) are each checked out in a
temporary git worktree, installed non-editable into a temporary virtual environment of their own
that sees the running interpreter's site-packages for the dependencies (``--python-env PREFIX``
for another), and removed at the end. Without ``--base`` only the head side is timed.

Each round runs ``hifi run SCENARIO --out TMP --no-progress`` as the command line does, in a
fresh interpreter of each side's environment (cwd: the side's checkout), once per side, the
order alternating from round to round so that load changes on the machine hit both sides alike.
``--warmup`` rounds (default 1) run first and are not counted: the first run of a fresh install
compiles its bytecode and fills numba's cache. A scenario inside the repository is each side's
own copy (same relative path; a note is printed when the two differ); one outside it is the
same file for both. ``--env KEY=VALUE`` (repeatable) is set in both sides' runs,
``--base-env`` / ``--head-env`` in one side's only (after ``--env``): ``--base HEAD
--base-env HIFI_KERNELS=off --head-env HIFI_KERNELS=on`` times the compiled kernels against the
numpy passes on the same code.

The child times itself with ``time.perf_counter``; the phases are

- **start-up**: from the interpreter's start (the parent's clock, before ``exec``) to the
  first event of the time manager: imports, scenario and scene, the caster's BVH, the models'
  set-up, the output files created;
- **models**: the time manager's run (every event of every model, and the frames handed to
  the writers);
- **writing**: from the last event to the end of ``Simulation.run``: the frames still to be
  written, the files closed, the directory moved into place and the results opened;
- **total**: the parent's wall time of the whole process.

The table gives medians over the rounds and the ratio head / base of the paired times (the
median over the rounds of each round's head / base): below 1, the head is faster.

Exit status: 0 when every run succeeded, 1 when a run failed, 2 for a bad argument (a name that
is not a commit, a scenario missing on a side, an ``--env`` without ``=``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trees import (REPO, WORKTREE, Side, TreeError, base_site_packages,  # noqa: E402
                    clean_env, make_root, prepare_side, remove_root, resolve_commit)

PHASES = ("start-up", "models", "writing", "total")

#: The child: hifi's command line, with the time manager's run and Simulation.run timed. Run as
#: a script file in the temporary folder (not ``-c`` in the checkout, which would put the
#: checkout's sources first on ``sys.path`` instead of the side's install).
_CHILD = r"""
import json, sys, time
t_enter = time.perf_counter()
marks = {}
try:
    import hifi.run.timemanager as _tm
except ModuleNotFoundError as exc:          # before the subpackages (3f860c8): hifi.timemanager
    if exc.name not in ("hifi.run", "hifi.run.timemanager"):
        raise
    import hifi.timemanager as _tm
_tm_run = _tm.TimeManager.run
def _timed_run(self, *a, **k):
    marks["events_start"] = time.perf_counter()
    try:
        return _tm_run(self, *a, **k)
    finally:
        marks["events_end"] = time.perf_counter()
_tm.TimeManager.run = _timed_run
import hifi
from hifi.cli import main
status = main(sys.argv[1:])
marks["end"] = time.perf_counter()
print("BENCH " + json.dumps({"t_enter": t_enter, **marks, "status": status, "hifi": hifi.__file__}),
      file=sys.stderr)
"""


class RunFailed(Exception):
    """A run that failed (exit status 1)."""


def parse_env(items: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` strings to a dict; a TreeError for one without ``=`` or without a key."""
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TreeError(f"{option} {item!r}: expected KEY=VALUE")
        env[key] = value
    return env


def side_scenario(side: Side, scenario: Path) -> Path:
    """The scenario a side runs: its own copy of a file inside the repository (relative to its
    checkout, the run's cwd), else the file itself."""
    if not scenario.is_relative_to(REPO):
        return scenario
    rel = scenario.relative_to(REPO)
    if not (side.checkout / rel).is_file():
        raise TreeError(f"--scenario {rel}: not in {side.label} ({side.describe()}); "
                        "a file outside the repository runs the same on both sides")
    return rel


def run_once(side: Side, scenario: Path, child: Path, env: dict[str, str], tmp: Path) -> dict:
    """One ``hifi run`` of ``scenario`` on ``side`` with ``env``: phase times [s]."""
    with tempfile.TemporaryDirectory(dir=tmp, prefix=f"run-{side.label}-") as out_parent:
        out = Path(out_parent) / "out"
        cmd = [str(side.python), str(child), "run", str(scenario), "--out", str(out), "--no-progress"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=side.checkout)
        wall = time.perf_counter() - t0
    line = next((x for x in proc.stderr.splitlines() if x.startswith("BENCH ")), None)
    if proc.returncode != 0 or line is None:
        raise RunFailed(f"hifi run failed on {side.label} ({side.describe()}, exit {proc.returncode}):\n"
                        f"{proc.stderr[-2000:]}")
    m = json.loads(line[6:])
    if m.get("status") not in (0, None) or "events_start" not in m:
        raise RunFailed(f"hifi run on {side.label} returned {m.get('status')!r} "
                        f"(or never started its events):\n{proc.stderr[-2000:]}")
    if not m["hifi"].startswith(str(side.venv)):
        raise RunFailed(f"{side.label}: hifi imported from {m['hifi']}, not from {side.venv}")
    # The child's perf_counter is not the parent's: start-up is the wall time minus what the
    # child measured from its first statement to its end, plus that first part.
    child_span = m["end"] - m["t_enter"]
    before_child = wall - child_span                       # interpreter start, before t_enter
    return {"start-up": before_child + (m["events_start"] - m["t_enter"]),
            "models": m["events_end"] - m["events_start"],
            "writing": m["end"] - m["events_end"],
            "total": wall}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Exit status 0: every run succeeded; 1: a run failed; 2: a bad argument.")
    ap.add_argument("--base", default=None,
                    help="commit to compare against (hash, branch, tag, HEAD~N); without it only the head is timed")
    ap.add_argument("--head", default=WORKTREE,
                    help=f"commit of the new side (default {WORKTREE}: the working tree as it is now)")
    ap.add_argument("--scenario", type=Path, default=REPO / "examples" / "crossing.toml",
                    help="scenario file (default examples/crossing.toml; inside the repository: each side's own copy)")
    ap.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment variable for both sides' runs (repeatable)")
    ap.add_argument("--base-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment variable for the base side's runs only (repeatable; after --env)")
    ap.add_argument("--head-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment variable for the head side's runs only (repeatable; after --env)")
    ap.add_argument("--python-env", type=Path, default=None, metavar="PREFIX",
                    help="environment whose site-packages give the dependencies "
                         "(default: that of the interpreter running this script)")
    ap.add_argument("--json", type=Path, help="write every round's phase times here")
    ap.add_argument("--tree", action="append", default=[], help=argparse.SUPPRESS)   # gone: see main
    return ap


def print_table(scenario_label: str, repeat: int, sides: list[Side], rounds: dict[str, list[dict]],
                envs: dict[str, dict[str, str]]) -> dict[str, float]:
    """The Markdown table of medians (and paired ratios with two sides); returns the ratios."""
    print(f"\n`{scenario_label}`, {repeat} interleaved rounds, medians [s]:\n")
    print("| side | " + " | ".join(PHASES) + " |")
    print("|---|" + "---:|" * len(PHASES))
    for side in sides:
        med = [statistics.median(x[p] for x in rounds[side.label]) for p in PHASES]
        extra = "".join(f", {k}={v}" for k, v in envs[side.label].items())
        print(f"| {side.label}: {side.describe()}{extra} | " + " | ".join(f"{v:.2f}" for v in med) + " |")
    ratios = {}
    if len(sides) == 2:
        base, head = (rounds[s.label] for s in sides)
        ratios = {p: statistics.median(h[p] / b[p] for b, h in zip(base, head)) for p in PHASES}
        print("| head / base (paired) | " + " | ".join(f"{ratios[p]:.2f}" for p in PHASES) + " |")
    return ratios


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.tree:
        print("bench_run: error: --tree is gone (an older tree on PYTHONPATH mixes its sources with this "
              "checkout's installed entry points); use --base COMMIT [--head COMMIT]", file=sys.stderr)
        return 2
    if args.repeat < 1 or args.warmup < 0:
        print("bench_run: error: --repeat must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2
    scenario = args.scenario.resolve()
    if not scenario.is_file():
        print(f"bench_run: error: --scenario {args.scenario}: no such file", file=sys.stderr)
        return 2
    tmp = make_root("bench_run_")
    worktrees: list[Path] = []
    try:
        common = parse_env(args.env, "--env")
        own = {"base": parse_env(args.base_env, "--base-env"), "head": parse_env(args.head_env, "--head-env")}
        if args.base is None and own["base"]:
            raise TreeError("--base-env without --base: there is no base side")
        wanted = [("head", args.head)] if args.base is None else [("base", args.base), ("head", args.head)]
        commits = {label: None if ref == WORKTREE else resolve_commit(ref, f"--{label}") for label, ref in wanted}
        site_dirs = base_site_packages(args.python_env)
        print(f"preparing {' and '.join(f'{label} {ref}' for label, ref in wanted)} in {tmp}", file=sys.stderr)
        sides = [prepare_side(label, ref, commits[label], tmp, site_dirs, worktrees) for label, ref in wanted]
        scenarios = {s.label: side_scenario(s, scenario) for s in sides}
        if len(sides) == 2 and scenario.is_relative_to(REPO):
            a, b = ((s.checkout / scenarios[s.label]).read_bytes() for s in sides)
            if a != b:
                print(f"note: {scenarios['head']} differs between base and head; each side runs its own",
                      file=sys.stderr)
        envs = {s.label: {**common, **own[s.label]} for s in sides}
        run_env = {s.label: {**clean_env(), **envs[s.label]} for s in sides}
        child = tmp / "bench_child.py"
        child.write_text(_CHILD)

        rounds: dict[str, list[dict]] = {s.label: [] for s in sides}
        for r in range(args.warmup + args.repeat):
            timed = r >= args.warmup
            order = sides if r % 2 == 0 else sides[::-1]
            for side in order:
                t = run_once(side, scenarios[side.label], child, run_env[side.label], tmp)
                if timed:
                    rounds[side.label].append(t)
                what = f"round {r - args.warmup + 1}/{args.repeat}" if timed else f"warm-up {r + 1}/{args.warmup}"
                print(f"{what} {side.label}: " + ", ".join(f"{k} {v:.2f} s" for k, v in t.items()),
                      file=sys.stderr)

        label = str(scenario.relative_to(REPO)) if scenario.is_relative_to(REPO) else str(scenario)
        ratios = print_table(label, args.repeat, sides, rounds, envs)
        if args.json:
            args.json.write_text(json.dumps({
                "scenario": label, "repeat": args.repeat, "warmup": args.warmup,
                "sides": {s.label: {"ref": s.ref, "commit": s.commit, "env": envs[s.label],
                                    "rounds": rounds[s.label]} for s in sides},
                "paired_ratio_head_over_base": ratios}, indent=1))
        return 0
    except TreeError as exc:
        print(f"bench_run: error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"bench_run: {exc}", file=sys.stderr)
        return 1
    finally:
        remove_root(tmp, worktrees)


if __name__ == "__main__":
    sys.exit(main())
