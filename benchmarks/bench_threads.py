"""Threads of one process: an example run pinned to one core against two, same bytes.

Each measured run is a fresh process started under ``taskset -c CORES`` (so its CPU affinity,
and with it the run's default threads, is the cores given: ``hifi.runtime.threads``). The
process times three phases with ``time.perf_counter`` from its first line: until the time
manager's first event (Python, hifi, the scenario, the scene, the models' setup), the models
phase (first event to last: :meth:`hifi.run.timemanager.TimeManager.run`), and what follows
(the writers closing). One unrecorded warm-up run comes first (the page cache, numba's cache
on disk); then the core sets alternate, ``--repeat`` times each, so a load that comes and goes
falls on both. Every run's files are compared, byte for byte, with the first run's.

Usage::

    python benchmarks/bench_threads.py                      # crossing (--duration 2) and patrol (8)
    python benchmarks/bench_threads.py --examples crossing --duration 4 --repeat 3
    python benchmarks/bench_threads.py --examples crossing --cores threads=1 threads=2

Prints one markdown table per example: median and spread (min to max) of each phase on each
core set, the CPU time of the models phase (every thread of the process: the writer's
compression included) and the time its threads were runnable but waited for a core (Linux
schedstat: what other processes took), the 1-minute load average at the end of each run (other processes on
the cores make every time longer: compare runs taken under the same load), and the speed-up of
the models phase and of the whole run (medians, first core set / each other).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()               # the child's clock starts before any import

import argparse  # noqa: E402
import filecmp  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {"crossing": ROOT / "examples" / "crossing.toml", "patrol": ROOT / "examples" / "patrol.toml"}
DEFAULT_DURATION = {"crossing": 2.0, "patrol": 8.0}


def _run_delay_s() -> float:
    """Time every thread of this process has spent runnable but waiting for a core [s]: the
    second field of Linux's ``/proc/self/task/*/schedstat`` (what other processes on the cores
    took from this one)."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):     # a thread that just ended; no schedstat
            continue
    return total * 1e-9


def child(scenario: str, duration: float, out: str) -> None:
    """One run; prints its phases as JSON on the last line of stdout."""
    import hifi
    from hifi.run import timemanager
    marks = {}
    original = timemanager.TimeManager.run

    def timed(self, *args, **kwargs):
        marks["first_event"] = time.perf_counter() - _T0
        cpu, delay = time.process_time(), _run_delay_s()
        try:
            return original(self, *args, **kwargs)
        finally:
            marks["last_event"] = time.perf_counter() - _T0
            marks["models_cpu"] = time.process_time() - cpu
            marks["models_delay"] = _run_delay_s() - delay

    timemanager.TimeManager.run = timed
    sim = hifi.load(scenario)
    sim.run_to_files(out, duration_s=duration, overwrite=True, progress=False)
    marks["end"] = time.perf_counter() - _T0
    marks["threads"] = sim.threads_used[0]
    marks["load"] = os.getloadavg()[0]
    print(json.dumps(marks))


def _run(setting: str, scenario: Path, duration: float, out: Path) -> dict:
    """One child run; ``setting`` is a taskset core list (``"0,1"``: the affinity sets the
    threads) or ``"threads=N"`` (every core, ``HIFI_THREADS=N``)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("HIFI_THREADS", None)
    if setting.startswith("threads="):
        env["HIFI_THREADS"] = setting.partition("=")[2]
        cores = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    else:
        cores = setting
    cmd = ["taskset", "-c", cores, sys.executable, __file__, "--child", str(scenario), str(duration), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"run on cores {cores} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _same(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in a.iterdir())
    if names != sorted(p.name for p in b.iterdir()):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def _fmt(values) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def bench(name: str, duration: float, repeat: int, core_sets) -> None:
    scenario = EXAMPLES[name]
    root = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    try:
        _run(core_sets[-1], scenario, duration, root / "warm")
        results = {c: [] for c in core_sets}
        reference = None
        for r in range(repeat):
            for cores in core_sets:
                out = root / f"run-{cores.replace(',', '_').replace('=', '')}-{r}"
                results[cores].append(_run(cores, scenario, duration, out))
                if reference is None:
                    reference = out
                elif not _same(reference, out):
                    raise SystemExit(f"{name}: the files of {out.name} differ from {reference.name}")
                elif out != reference:
                    shutil.rmtree(out)
        print(f"\n### {name} (`--duration {duration:g}`, {repeat} runs per core set after one warm-up; "
              f"every run's files identical)\n")
        print("| cores | threads | to first event [s] | models phase [s] | its CPU time [s] | "
              "its threads waiting for a core [s] | after last event [s] | total [s] | load avg (1 min) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        med = {}
        for cores, rs in results.items():
            first = [x["first_event"] for x in rs]
            models = [x["last_event"] - x["first_event"] for x in rs]
            after = [x["end"] - x["last_event"] for x in rs]
            total = [x["end"] for x in rs]
            med[cores] = (statistics.median(models), statistics.median(total))
            label = f"`HIFI_THREADS={cores[8:]}`, every core" if cores.startswith("threads=") else f"`taskset -c {cores}`"
            print(f"| {label} | {rs[0]['threads']} | {_fmt(first)} | {_fmt(models)} | "
                  f"{_fmt([x['models_cpu'] for x in rs])} | {_fmt([x['models_delay'] for x in rs])} | "
                  f"{_fmt(after)} | {_fmt(total)} | "
                  f"{_fmt([x['load'] for x in rs])} |")
        base = med[core_sets[0]]
        for cores in core_sets[1:]:
            print(f"\nspeed-up `{cores}` vs `{core_sets[0]}` (medians): models phase "
                  f"{base[0] / med[cores][0]:.2f}x, whole run {base[1] / med[cores][1]:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], float(sys.argv[3]), sys.argv[4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", nargs="+", choices=sorted(EXAMPLES), default=["crossing", "patrol"])
    ap.add_argument("--duration", type=float, default=None,
                    help="simulated span [s] of every example (default: crossing 2, patrol 8)")
    ap.add_argument("--repeat", type=int, default=3, help="measured runs per core set (default 3)")
    ap.add_argument("--cores", nargs="+", default=["0", "0,1"],
                    help="taskset core lists, the first the baseline; or threads=N: every core, HIFI_THREADS=N "
                         "(under load, 1 and 2 threads then compete alike with the other processes)")
    args = ap.parse_args(argv)
    if shutil.which("taskset") is None:
        print("bench_threads: taskset (util-linux) not found", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print(f"bench_threads: --repeat = {args.repeat}: expected an integer >= 1", file=sys.stderr)
        return 2
    for name in args.examples:
        bench(name, args.duration if args.duration is not None else DEFAULT_DURATION[name], args.repeat, args.cores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
