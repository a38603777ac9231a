"""Command line: ``hifi run | info | plot | export | view``.

Bad input exits with status 2 and one message naming the file, the key, the value and what is
allowed; nothing is written. A file that cannot be written (disk full, no permission, a file
where a directory must be, a netCDF error) exits with status 1 and one message naming it
(``hifi: error: cannot write out/run/velodyne.nc: No space left on device``); nothing is left
behind. Ctrl-C (SIGINT) or SIGTERM stops a command with one line on stderr (``hifi:
interrupted at t = 1.230 s``, the simulated time of the last event started) and exit status
128 + the signal number (130, 143), and nothing is left behind (:mod:`hifi.runtime.interrupt`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser(argv=None) -> argparse.ArgumentParser:
    """The command line. The export formats (each exporter's module loaded for its one-line
    summary, 0.3 s) are listed only when the command is ``export``: every ``hifi run`` would
    otherwise pay for them at start-up."""
    from ._version import __version__
    p = argparse.ArgumentParser(prog="hifi", description="High-fidelity sensor simulation.")
    p.add_argument("--version", action="version", version=f"hifi {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a scenario and write one dataset per sensor (netCDF; Zarr stores under mpirun or --format zarr)")
    r.add_argument("scenario", type=Path)
    r.add_argument("--out", type=Path, required=True, help="output directory (must not exist)")
    r.add_argument("--seed", default=None, metavar="N", help="override [simulation] seed (an integer >= 0)")
    r.add_argument("--duration", default=None, metavar="S",
                   help="override [simulation] duration_s [s] (a number > 0)")
    r.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar or progress lines (the summary on stdout stays)")
    r.add_argument("--ignore-disk-space", action="store_true",
                   help="run even when the estimated output (before compression) exceeds the free space "
                        "of the file system holding --out")
    r.add_argument("--partition", default=None, metavar="{time,facets,facets=K}",
                   help="MPI run (under mpirun): split the simulated time or the scene's facets over the "
                        "ranks, or both: facets=K, groups of K ranks share the scene, the groups the time "
                        "(default under mpirun with more than one rank: time)")
    r.add_argument("--format", default=None, choices=("netcdf", "zarr"), dest="output_format",
                   help="how the datasets are written: netCDF files (a serial run's default) or Zarr stores "
                        "(what a partitioned run writes, and what --resume continues)")
    r.add_argument("--resume", action="store_true",
                   help="continue the unfinished run of --out (killed, interrupted, failed), keeping the frames "
                        "it wrote; starts the run when there is none (writes Zarr)")
    r.add_argument("--live", nargs="?", const="", default=None, metavar="[HOST:]PORT",
                   help="publish the run while it goes on to a Foxglove WebSocket server (open ws://HOST:PORT in "
                        "Foxglove; docs/live.md); HOST defaults to 127.0.0.1, PORT to 8765 (0: any free port); "
                        "needs pip install foxglove-sdk")
    r.add_argument("--live-wait", default=None, metavar="S",
                   help="with --live: hold the start of the run until a client subscribes, at most S seconds")
    i = sub.add_parser("info", help="validate a scenario and summarise it")
    i.add_argument("scenario", type=Path)
    pl = sub.add_parser("plot", help="PNG quick look of a dataset")
    pl.add_argument("dataset", type=Path, help="DIR/NAME.nc, or the Zarr store DIR/NAME.zarr")
    pl.add_argument("--out", type=Path, default=None,
                    help="image file, its format from its suffix (default: NAME.png beside the dataset)")
    pl.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    pl.add_argument("--frame", type=int, default=0, help="position of the frame (default 0)")
    pl.add_argument("--color", choices=("object", "height", "intensity", "reflectivity", "distance"), default=None,
                    help="range sensors: what colours the bird's-eye view and the sensor-layout "
                         "image (default: object)")
    pl.add_argument("--white-balance", choices=("gray-world", "daylight", "none"), default=None,
                    help="ccd_camera: channel gains of both panels (default: gray-world)")
    v = sub.add_parser("view", help="self-contained HTML page replaying a run (plotly)",
                       description="Write one HTML file (plotly's JavaScript inlined, no network needed) that "
                                   "replays a run directory: a time slider over the frames, range sensors' "
                                   "points in 3-D coloured by object, class, intensity or height, the "
                                   "trajectories of motion.nc, camera images and depth maps, the GPS sky "
                                   "plot and fix error. Large runs are subsampled, with a note in the page.")
    v.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a directory written by hifi run")
    v.add_argument("--out", type=Path, default=None, help="HTML file (default: RUN_DIR.html beside the directory)")
    v.add_argument("--max-points", type=int, default=None, metavar="N",
                   help="most points stored in the page, each sensor frame once (default 250000)")
    v.add_argument("--max-frames", type=int, default=None, metavar="N",
                   help="most steps of the time slider (default 200)")
    v.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not str(a).startswith("-")]
    names, lines = _export_formats() if words[:1] == ["export"] else (None, [])
    e = sub.add_parser("export", help="convert a dataset (or a run directory) to another format",
                       description="Write a sensor's dataset DIR/NAME.nc (or Zarr store DIR/NAME.zarr), or a "
                                   "whole run directory DIR, in "
                                   "a format other tools read. Formats come from the entry-point group "
                                   "'hifi.exporters'.",
                       epilog="formats:\n" + "\n".join(lines), formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("dataset", type=Path, metavar="SOURCE",
                   help="DIR/NAME.nc or DIR/NAME.zarr (or DIR with --sensor NAME), or DIR for run-level formats")
    e.add_argument("--format", required=True, choices=names, metavar="FORMAT",
                   help="one of: " + ", ".join(names or []))
    e.add_argument("--out", type=Path, default=None, help="output file (default: beside the source)")
    e.add_argument("--sensor", default=None, help="sensor name, for run-level formats that export one sensor")
    e.add_argument("--overwrite", action="store_true", help="replace existing output files")
    return p


def _export_formats():
    """Names of the registered export formats and one help line per format."""
    from .exporters import available_exporters, load_exporter
    names, lines = available_exporters(), []
    for name in names:
        try:
            ex = load_exporter(name)
            lines.append(f"  {name:<14} {ex.summary} [{'run directory' if ex.scope == 'run' else 'sensor file'}]")
        except Exception as exc:          # a broken third-party plugin must not break the CLI's help
            lines.append(f"  {name:<14} (cannot be loaded: {type(exc).__name__}: {exc})")
    return names, lines


def _fail(message: str, status: int = 2) -> int:
    print(f"hifi: error: {message}", file=sys.stderr)
    return status


def _open(path: Path):
    """One dataset, ``DIR/NAME.nc`` or the Zarr store ``DIR/NAME.zarr`` (:func:`hifi.run.reading.open_output`)."""
    from .run.reading import open_output
    return open_output(path)


def _print_scenario_warnings() -> None:
    """Print :class:`~hifi.errors.ScenarioWarning` and :class:`~hifi.exporters.ExportWarning` as
    ``hifi: warning: MESSAGE`` on stderr.

    Python's default filter shows each distinct warning once; other warnings are shown as
    Python shows them.
    """
    import warnings
    from .errors import ScenarioWarning
    shown = warnings.showwarning
    if getattr(shown, "_hifi", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        from .exporters._common import ExportWarning      # imported when a warning is shown: cheap start-up
        if issubclass(category, (ScenarioWarning, ExportWarning)):
            print(f"hifi: warning: {message}", file=sys.stderr if file is None else file)
        else:
            shown(message, category, filename, lineno, file, line)

    show._hifi = True
    warnings.showwarning = show


def main(argv=None) -> int:
    """The ``hifi`` command; returns its exit status.

    Every way it ends, serial or on any rank of an MPI launch, is one of: 0; an error, one line
    ``hifi: error: ...`` and the status of its kind (:func:`hifi.runtime.interrupt.error_status`: 2 bad
    input, 1 a file that cannot be written); a stop signal, one line ``hifi: interrupted ...``
    and 128 + the signal. The signal handlers come first, before anything heavy is imported
    (:mod:`hifi.runtime.interrupt`). Under a launcher of several processes only rank 0 prints, and the
    job ends through :func:`mpi.control.end_job` (which never returns), so that no rank waits
    forever for one that has stopped.
    """
    try:                                  # Python's own SIGINT handler, until ours are in place
        # decimal (scipy.optimize imports it during a run) now: CPython's _decimal prints a
        # C-level warning ("mpd_setminalloc ... a second time") when its first import is
        # broken off by a stop signal and it is imported again, a second line on stderr.
        import decimal  # noqa: F401
        from .runtime.interrupt import signal_handlers
        with signal_handlers():           # SIGINT, SIGTERM -> hifi.runtime.interrupt.Interrupted
            try:
                return _ended(None, _main(argv))
            except KeyboardInterrupt as exc:        # every finally has run: nothing is left behind
                return _ended(exc)
            except Exception as exc:
                return _ended(exc)
            except BaseException as exc:
                if getattr(exc, "exit_status", None) is None:     # SystemExit and the like
                    raise
                return _ended(exc)                  # another MPI rank's error (mpi.control)
    except KeyboardInterrupt as exc:      # before the handlers, or while an error was reported
        return _ended(exc)


def _main(argv) -> int:
    from .runtime.interrupt import check
    _print_scenario_warnings()
    args = _parser(argv).parse_args(argv)
    status = _command(args)
    check()                               # a stop signal whose exception was swallowed
    return status


def _ended(exc: BaseException | None, status: int = 0) -> int:
    """Report how the command ended (``exc`` None: with ``status``) and give its exit status;
    under a launcher of several processes, end the job instead (does not return)."""
    from .runtime.interrupt import check, error_status, exit_status, message, signal_number
    line = None
    if exc is not None and not isinstance(exc, KeyboardInterrupt):
        check()                           # an error that is a stop signal's exception, wrapped
        status = error_status(exc)
        if isinstance(exc, MemoryError):  # numpy's message is the array asked for; often none
            line = (f"hifi: error: out of memory ({str(exc) or 'MemoryError'}): the scenario asks for more "
                    f"memory than this machine has; hifi info estimates what it needs")
        elif status is None:              # a bug: its traceback, as Python shows it
            if _launcher_size() <= 1:
                raise exc
            import traceback
            traceback.print_exc()
            status = 1
        else:
            line = f"hifi: error: {exc}"
    elif exc is not None:                 # KeyboardInterrupt: a stop signal
        line, status = message(exc), exit_status(exc)
    launched = _launcher_size() > 1
    if launched and exc is not None:
        end_job = _end_job()
        if end_job is not None:
            own_signal = isinstance(exc, KeyboardInterrupt) and not getattr(exc, "remote", False)
            end_job(status, line, signum=signal_number(exc) if own_signal else None)
    if line is not None and not (launched and _launch_rank() != 0):
        print(line, file=sys.stderr, flush=True)
    return status


def _end_job():
    """The function that ends a job of several MPI processes (``end_job`` of the entry-point
    group ``hifi.launch``, the ``mpi`` package's), or None where none is installed."""
    from .api.registry import entry_points
    for ep in entry_points(group="hifi.launch"):
        if ep.name == "end_job":
            try:
                return ep.load()
            except ImportError:           # mpi4py missing: no MPI job to end
                return None
    return None


def _launch_rank() -> int:
    """This process's rank in an MPI launch, from the launcher's environment (0 outside one)."""
    import os
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def _command(args) -> int:
    if args.command == "run":
        return _run(args)
    if args.command == "info":
        return _info(args)
    if args.command == "plot":
        return _plot(args)
    if args.command == "export":
        return _export(args)
    if args.command == "view":
        return _view(args)
    return 0


def _plot(args) -> int:
    """``hifi plot``: the figure is drawn, then written whole beside its final name and renamed
    into place (:func:`hifi.runtime.safety.write_file`); never over the dataset it shows."""
    from .runtime.safety import check_new_file, check_not_input, write_file
    out = args.out or args.dataset.with_suffix(".png")
    check_not_input(out, [args.dataset])
    if not out.suffix:
        raise ValueError(f"--out {out}: give the image format as the file's suffix (.png, .pdf, .svg)")
    from .viz.plot import plot_dataset
    ds = _open(args.dataset)
    try:
        _check_frame(ds, args.frame, args.dataset)
        check_new_file(out, args.overwrite)
        written = write_file(out, lambda tmp: plot_dataset(ds, tmp, frame=args.frame, color=args.color,
                                                           white_balance=args.white_balance),
                             overwrite=args.overwrite)
    finally:
        ds.close()
    print(written)
    return 0


def _view(args) -> int:
    from .viz import view
    run_dir = args.run_dir
    if args.out is None:                  # RUN_DIR.html beside the directory (also for "." or "run/")
        full = run_dir.resolve()
        out = full.with_name(full.name + ".html")
    else:
        out = args.out
    print(view.write_replay(run_dir, out, overwrite=args.overwrite,
                            max_points=view.MAX_POINTS if args.max_points is None else args.max_points,
                            max_frames=view.MAX_FRAMES if args.max_frames is None else args.max_frames))
    return 0


def _check_frame(ds, frame: int, path) -> None:
    """``--frame`` must index a frame of ``ds`` (``0 .. n - 1``)."""
    if "frame" not in ds.dims:
        return
    n = ds.sizes["frame"]
    if not 0 <= frame < n:
        valid = f"0..{n - 1}" if n else "none to plot"
        raise ValueError(f"{path}: --frame {frame}: the dataset has {n} frame{'' if n == 1 else 's'} ({valid})")


def _export(args) -> int:
    from .exporters import ExportError, export, load_exporter
    from .run.reading import find_output, is_zarr_store, output_paths
    try:
        exporter = load_exporter(args.format)
        if exporter.scope == "run":
            if not args.dataset.is_dir() or is_zarr_store(args.dataset):
                one = " (this is one model's Zarr store)" if is_zarr_store(args.dataset) else ""
                return _fail(f"{args.dataset}: format {args.format!r} takes a run directory (hifi run --out DIR){one}")
            default = args.dataset.name + (exporter.suffix or f"_{exporter.name}")    # "": a directory
            out = args.out or args.dataset.with_name(default)
            written = export(args.dataset, args.format, out, sensor=args.sensor, overwrite=args.overwrite)
        else:
            if args.dataset.is_dir() and not is_zarr_store(args.dataset):
                if args.sensor is None:
                    return _fail(f"{args.dataset} is a directory; format {args.format!r} takes one sensor's "
                                 f"dataset DIR/NAME.nc or DIR/NAME.zarr (or give --sensor NAME)")
                found = find_output(args.dataset, args.sensor)
                if found is None:
                    have = ", ".join(output_paths(args.dataset)) or "none"
                    return _fail(f"{args.dataset}: --sensor {args.sensor!r}: no {args.sensor}.nc or "
                                 f"{args.sensor}.zarr in it; its datasets: {have}")
                args.dataset = found
            ds = _open(args.dataset)
            try:
                out = args.out or args.dataset.with_suffix(exporter.suffix)
                written = export(ds, args.format, out, overwrite=args.overwrite)   # nothing left behind on failure
            finally:
                ds.close()      # not left to the garbage collector, which may close it inside another netCDF call
    except ExportError as exc:
        return _fail(f"{args.dataset}: {exc}")
    for path in written:
        print(path)
    return 0


#: Environment variables giving the number of processes of an MPI launch (MPICH's Hydra and
#: Intel MPI, Open MPI), read without importing MPI.
_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")

#: Partition of ``hifi run`` under a launcher with more than one process and no ``--partition``.
DEFAULT_MPI_PARTITION = "time"


def _launcher_size() -> int:
    """Processes of the MPI launch this process belongs to (1 when not under a launcher)."""
    import os
    for var in _LAUNCHER_SIZE_VARS:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 1


def _partition_runner(name: str):
    """The runner registered as ``name`` in the entry-point group ``hifi.partitions``."""
    from .api.registry import entry_points
    found = {ep.name: ep for ep in entry_points(group="hifi.partitions")}
    if name not in found:
        raise ImportError(f"--partition {name!r}: no runner registered in the entry-point group "
                          f"'hifi.partitions' (found: {sorted(found) or 'none'}); install the MPI "
                          f'extra with pip install ".[mpi]"')
    return found[name].load()


def _override(text, key: str, name: str):
    """``--seed`` / ``--duration`` validated as ``[simulation] seed`` / ``duration_s`` are in
    the file (same rule, same message: ``--seed = -1: expected an integer >= 0``)."""
    if text is None:
        return None
    from .errors import ScenarioError
    from .run.scenario import SIMULATION_PARAMS
    value = text
    for convert in (int, float):
        try:
            value = convert(text)
            break
        except ValueError:
            continue
    return SIMULATION_PARAMS[name].check(value, lambda reason: ScenarioError(reason, key=key, value=value))


def _parse_partition(text: str) -> tuple[str, dict]:
    """``--partition``: ``time``, ``facets`` or ``facets=K`` (K an integer >= 1) as the runner's
    name and keyword arguments."""
    name, _, value = text.partition("=")
    if name in ("time", "facets") and not value and "=" not in text:
        return name, {}
    if name == "facets" and value.isdigit() and int(value) >= 1:
        return name, {"group_size": int(value)}
    raise ValueError(f"--partition = {text!r}: expected time, facets or facets=K with K an integer >= 1 that "
                     f"divides the number of ranks")


def _run_partitioned(args, partition: str, seed, duration, start: float) -> int:
    name, options = _parse_partition(partition)
    runner = _partition_runner(name)
    results = runner(args.scenario, out=args.out, seed=seed, duration_s=duration,
                     overwrite=args.overwrite, progress=False if args.no_progress else None,
                     ignore_disk_space=args.ignore_disk_space, output_format=args.output_format,
                     resume=args.resume, **options)
    if results is not None:                        # None on ranks other than 0
        if duration is None:
            from .run.scenario import load
            duration = load(args.scenario).duration_s
        _summary(args.out, duration, start, results, threads=getattr(results, "threads", None),
                 ranks=getattr(results, "ranks", None))
    return 0


def _run(args) -> int:
    import time
    start = time.monotonic()
    seed = _override(args.seed, "--seed", "seed")
    duration = _override(args.duration, "--duration", "duration_s")
    partition = args.partition or (DEFAULT_MPI_PARTITION if _launcher_size() > 1 else None)
    from .runtime.safety import check_not_input
    check_not_input(args.out, [args.scenario])    # also under mpirun: every rank refuses alike
    live = _live_options(args, partition)
    if _is_sweep(args.scenario):
        if args.partition is not None:
            raise ValueError(f"--partition {args.partition}: {args.scenario} is a sweep ([sweep]), whose variants "
                             f"are shared over the MPI ranks whole (rank r runs variants r, r + N, ...); drop "
                             f"--partition")
        return _run_sweep(args, seed, duration, start)
    if partition is not None:
        return _run_partitioned(args, partition, seed, duration, start)
    if live is None:
        sim = _run_serial(args, seed, duration)
    else:                         # listening first: a port in use is reported before a long scene build
        from .viz.live import LiveServer
        with LiveServer(live[0], wait_s=live[1], key="--live") as server:
            print(f"hifi: live view on {server.url} (Foxglove: Open connection, Foxglove WebSocket)",
                  file=sys.stderr, flush=True)
            sim = _run_serial(args, seed, duration, server)
    _summary(args.out, sim.scenario.duration_s if duration is None else duration, start,
             threads=getattr(sim, "threads_used", None))
    return 0


def _run_serial(args, seed, duration, live=None):
    """``hifi run`` in this process alone (no MPI, no sweep); returns the simulation."""
    import hifi
    sim = hifi.load(args.scenario)
    if not args.resume:
        from .run.output import check_output_dir
        check_output_dir(args.out, args.overwrite)
    sim.run_to_files(args.out, seed=seed, duration_s=duration, overwrite=args.overwrite,
                     progress=False if args.no_progress else None, ignore_disk_space=args.ignore_disk_space,
                     output_format=args.output_format, resume=args.resume, live=live)
    return sim


def _live_options(args, partition) -> tuple | None:
    """``--live`` and ``--live-wait`` checked before anything is loaded: ``(address, wait_s)``,
    or None without ``--live`` (``--live`` alone: :data:`hifi.viz.live.DEFAULT_PORT`)."""
    if args.live is None:
        if args.live_wait is not None:
            raise ValueError(f"--live-wait {args.live_wait}: holds a live run; give --live [HOST:]PORT too")
        return None
    from .viz.live import DEFAULT_PORT, parse_address
    address = args.live or DEFAULT_PORT
    parse_address(address, "--live")
    if partition is not None:
        raise ValueError(f"--live {address}: a live view publishes the frames of one process; not with "
                         f"--partition or under mpirun")
    if _is_sweep(args.scenario):
        raise ValueError(f"--live {address}: {args.scenario} is a sweep ([sweep]); a live view shows one run")
    wait = 0.0
    if args.live_wait is not None:
        try:
            wait = float(args.live_wait)
        except ValueError:
            wait = -1.0
        if not (wait >= 0 and wait != float("inf")):
            raise ValueError(f"--live-wait {args.live_wait}: expected a number of seconds >= 0")
    return address, wait


def _is_sweep(path: Path) -> bool:
    """Whether the scenario file has a ``[sweep]`` table (False where it cannot be read: the
    usual load reports that)."""
    import tomllib
    try:
        return "sweep" in tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def _barrier():
    """Wait for every process of the MPI launch: ``barrier`` of the entry-point group
    ``hifi.launch`` (the ``mpi`` package's), or the ``barrier`` of the module that holds its
    ``end_job`` where the installed metadata predate that entry point."""
    import sys as _sys
    from .api.registry import entry_points
    found = {ep.name: ep for ep in entry_points(group="hifi.launch")}
    if "barrier" in found:
        return found["barrier"].load()
    end_job = _end_job()
    barrier = getattr(_sys.modules.get(getattr(end_job, "__module__", "")), "barrier", None)
    if barrier is None:
        raise ImportError("a sweep under mpirun needs the MPI extra (a 'barrier' in the entry-point group "
                          "'hifi.launch'); install it with pip install \".[mpi]\"")
    return barrier


def _run_sweep(args, seed, duration, start: float) -> int:
    """``hifi run SWEEP.toml``: every variant a whole run (:mod:`hifi.run.sweep`); under mpirun
    rank r of N runs the variants r, r + N, ..."""
    from .run.sweep import run_sweep
    size = _launcher_size()
    rank = _launch_rank() if size > 1 else 0
    catalog = run_sweep(args.scenario, args.out, seed=seed, duration_s=duration, overwrite=args.overwrite,
                        progress=False if args.no_progress else None, ignore_disk_space=args.ignore_disk_space,
                        rank=rank, size=size, barrier=_barrier() if size > 1 else None, resume=args.resume)
    if catalog is not None:
        import json
        import time
        n = len(json.loads(catalog.read_text(encoding="utf-8"))["variants"])
        total = sum(p.stat().st_size for p in Path(args.out).rglob("*") if p.is_file())
        print(f"{n} variant{'' if n == 1 else 's'} in {time.monotonic() - start:.1f} s wall time "
              f"({size} process{'' if size == 1 else 'es'})")
        print(f"{catalog}  {total:>12} bytes in all  {_human_bytes(total)}")
    return 0


def _human_bytes(n: int) -> str:
    """``983435`` -> ``960.4 KiB``."""
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"


def _summary(out_dir: Path, duration_s: float, start: float, datasets=None, threads=None, ranks=None) -> None:
    """What a finished run prints on stdout: the simulated span, the wall time and the threads
    (``threads``: the run's ``(count, where it came from)``, when known; under MPI each rank's,
    with ``ranks`` the job's ranks), then every file
    and Zarr store of ``out_dir`` with its size on disk (a store's: every file in it) and, for
    a dataset, its dimensions (a netCDF file's read with netCDF4, in the file's order; a
    store's from its metadata), and the total. ``datasets`` (an MPI run's opened results) are
    closed."""
    import time

    from .run.reading import is_zarr_store, open_output
    wall = time.monotonic() - start
    for ds in (datasets or {}).values():
        ds.close()
    out_dir = Path(out_dir)
    files = [p for p in out_dir.iterdir() if p.is_file()]
    stores = [p for p in out_dir.iterdir() if is_zarr_store(p)]
    entries = sorted(files + stores, key=lambda p: (p.name.startswith("."), p.name))
    dims = {}
    for path in entries:
        if path.suffix == ".nc" and path in files:
            import netCDF4
            with netCDF4.Dataset(path) as nc:
                dims[path] = ", ".join(f"{d}={len(v)}" for d, v in nc.dimensions.items())
        elif path in stores:
            with open_output(path) as ds:
                dims[path] = ", ".join(f"{d}={n}" for d, n in ds.sizes.items())
    sizes = [p.stat().st_size if p in files else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
             for p in entries]
    names = [str(p) for p in entries]
    width = max([len(n) for n in names] + [len("total")])
    on = "" if threads is None else f" on {threads[0]} thread{'' if threads[0] == 1 else 's'} ({threads[1]})"
    if threads is not None and ranks is not None:
        on = f" on {ranks} ranks x {threads[0]} thread{'' if threads[0] == 1 else 's'} each ({threads[1]})"
    print(f"simulated 0 to {duration_s:g} s in {wall:.1f} s wall time{on}")
    for name, size, path in zip(names, sizes, entries):
        extra = dims.get(path)
        print(f"{name:<{width}}  {size:>12} bytes" + (f"  {extra}" if extra else ""))
    total = sum(sizes)
    count = f"{len(files)} files" + (f" and {len(stores)} Zarr stores" if stores else "")
    print(f"{'total':<{width}}  {total:>12} bytes  {_human_bytes(total)} in {count}")


def _info(args) -> int:
    import hifi
    sim = hifi.load(args.scenario)
    sc, scene = sim.scenario, sim.scene
    print(f"scenario  {sc.source}")
    print(f"duration  {sc.duration_s} s from {sc.start_utc}, seed {sc.seed}")
    if sc.sweep is not None:              # what follows is the sweep's base scenario
        print(f"sweep     {len(sc.sweep)} variants, {sc.sweep.mode} of {', '.join(sc.sweep.lists)}; below the "
              f"scenario as written")
    print(f"origin    lat {sc.origin['lat_deg']} deg, lon {sc.origin['lon_deg']} deg, h {sc.origin['height_m']} m")
    print("classes   " + ", ".join(f"{i}={n}" for i, n in enumerate(scene.class_names)))
    print("objects")
    total = 0
    for obj in scene.objects:
        mat = scene.materials[obj.material_index]
        moving = "moving" if scene.is_moving(obj.name) else "static"
        total += len(obj.faces)
        print(f"  [{obj.index}] {obj.name:<16} {len(obj.vertices):>8} vertices {len(obj.faces):>8} faces  "
              f"{mat.name} ({obj.class_name or mat.class_name}, reflectivity {mat.reflectivity}, mirror {mat.mirror})"
              f"  {moving}")
    print(f"  total {total} faces")
    print("sensors")
    for spec, model in zip(sc.sensors, sim.models):
        params = ", ".join(f"{k}={v}" for k, v in spec.params.items())
        print(f"  {spec.name:<16} {spec.model:<14} {model.rate_hz:g} Hz on {spec.parent or 'scene'}: {params}")
    _print_estimate(sim)
    print("models    " + ", ".join(hifi.available_models()))
    return 0


def _print_estimate(sim) -> None:
    """The cost of a run (hifi.api.estimate): per model and in total, and whether hifi run would refuse it."""
    from .errors import ScenarioError
    from .api.estimate import check_memory, disk_line, format_bytes, memory_budget_bytes
    est = sim.estimate()
    print("estimate  per file: frames, rays per frame, memory it adds at the peak, output before compression")
    for m in est.models:
        if m.writes_dataset:
            print(f"  {m.name + '.nc':<19} {m.frames:>8,} frames {m.rays_per_frame:>13,} rays/frame  "
                  f"memory {format_bytes(m.memory_bytes):>10}  output {format_bytes(m.output_bytes):>10}")
    budget = memory_budget_bytes()
    avail = f"{format_bytes(budget)} available" if budget is not None else "available memory unknown"
    print(f"  total: peak memory about {format_bytes(est.peak_bytes)} (process {format_bytes(est.base_bytes)}, "
          f"compiled kernels {format_bytes(est.kernel_bytes)}, scene {format_bytes(est.scene_bytes)}, models), {avail}; output {format_bytes(est.output_bytes)} "
          f"before compression")
    print(f"  disk: {disk_line(est)}")
    try:
        check_memory(sim, est, budget)
    except ScenarioError as exc:
        print(f"  hifi run would refuse it: {exc}")


if __name__ == "__main__":
    sys.exit(main())
