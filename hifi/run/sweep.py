"""Sweeps: one scenario file, many variants of it, each run as a whole run (batch runs).

A ``[sweep]`` table declares value lists over the seed and over any scenario value named by
its path; the variants are their cartesian product (``mode = "grid"``, the default) or the
lists taken side by side (``mode = "zip"``)::

    [sweep]
    mode = "grid"
    seed = [1, 2, 3]
    "sensors.lidar.params.visibility_m" = [50.0, 200.0, 2000.0]

Paths (dotted; an array of tables is indexed by an entry's ``name`` or by its position, a
list value by its position):

- ``seed`` or ``simulation.seed``, any ``simulation.<key>``
- ``sensors.<name>.params.<key>``, ``sensors.<name>.position_m``, ``sensors.<name>.rate_hz``, ...
- ``objects.<name>.position_m`` (``objects.<name>.position_m.2``: its height alone), ...
- ``models.<name>.params.<key>``
- ``materials.<name>.<key>``
- ``weather.<key>``, ``output.<key>``

Each variant is the scenario with those values substituted, validated like any scenario
(:func:`hifi.run.scenario.validate`): a value out of range fails with the usual one-line
error, its file named as ``FILE (sweep variant 3: seed = 2, ...)``.

:func:`run_sweep` writes every variant into ``DIR/variant_0000`` ... (each an ordinary run
directory, written atomically by :meth:`hifi.Simulation.run_to_files`) and, last, the catalog
``DIR/sweep.json``; :func:`open_sweep` reads them back as one dataset per file with a
``variant`` dimension. Under a launcher of several MPI processes rank ``r`` of ``N`` runs the
variants ``r, r + N, ...``; the ranks share nothing but two barriers (every rank has checked
the whole sweep before any writes; every variant is written before rank 0 writes the catalog).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from ..errors import ScenarioError
from .resume import RESUME_FILE
from .reading import open_output, output_paths
from .sweep_table import MAX_VARIANTS, MODES, SWEEP_PARAMS, Sweep, Variant, locate, parse_sweep, to_toml, \
    variant_dir_name, variants

__all__ = ["CATALOG", "INCOMPLETE_MARKER", "MAX_VARIANTS", "MODES", "SWEEP_PARAMS", "Sweep", "Variant", "locate",
           "open_sweep", "parse_sweep", "prepare", "run_sweep", "to_toml", "variant_dir_name", "variants"]

#: The catalog of a finished sweep (written last).
CATALOG = "sweep.json"

#: Present in a sweep directory while variants are being written (removed with the catalog).
INCOMPLETE_MARKER = ".hifi-sweep-incomplete"

_VARIANT_DIR = re.compile(r"variant_\d{4,}\Z")

#: Frames per dask chunk of :func:`open_sweep`'s datasets.
SWEEP_CHUNK_FRAMES = 256

#: A variant's unfinished run directory (:func:`hifi.run.simulation.make_partial`).
_PARTIAL_DIR = re.compile(r"\.variant_\d{4,}\.partial-")


# --- running


def _check_sweep_dir(out: Path, overwrite: bool) -> None:
    """Refuse an output directory the sweep must not write or replace: an existing one without
    ``overwrite``; with it, one that holds anything but a sweep's variants, catalog and marker."""
    from .output import check_output_dir
    try:
        check_output_dir(out, overwrite=False)        # also the protected paths (root, home, cwd)
    except FileExistsError:
        if not overwrite:
            raise FileExistsError(f"output directory {out} exists; use --overwrite to replace it") from None
        if out.is_symlink() or not out.is_dir():
            raise FileExistsError(f"--out {out} exists and is not a directory; --overwrite replaces only a "
                                  f"directory written by a hifi sweep") from None
        foreign = sorted(p.name for p in out.iterdir()
                         if not (p.name in (CATALOG, INCOMPLETE_MARKER, RESUME_FILE)
                                 or (_VARIANT_DIR.match(p.name) and p.is_dir()) or _PARTIAL_DIR.match(p.name)))
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise FileExistsError(f"--overwrite: {out} holds files a hifi sweep did not write ({shown}); refusing "
                                  f"to delete them, move them or choose another --out") from None


def prepare(path, out, *, seed=None, duration_s=None, ignore_disk_space: bool = False,
            overwrite: bool = False, resume: bool = False):
    """Load the sweep file ``path``, validate every variant and check the disk and ``out``;
    return ``(scenario, sweep, variants)``. Writes nothing (every rank runs it)."""
    from . import scenario as _scenario
    from .simulation import Simulation
    sc = _scenario.load(path)
    if sc.sweep is None:
        raise ScenarioError("no [sweep] table: a sweep run needs one (hifi run runs a plain scenario)",
                            file=sc.source, key="sweep")
    if seed is not None and "simulation.seed" in sc.sweep.lists:
        raise ScenarioError("the sweep varies the seed; --seed would replace it in every variant: drop --seed",
                            file=sc.source, key="--seed", value=seed)
    found = variants(sc.raw, sc.sweep, sc.source)
    total = 0
    for v in found:
        vsc = _scenario.validate(copy.deepcopy(v.data), base_dir=sc.base_dir, source=v.source, text=v.text)
        total += Simulation(vsc).estimate(duration_s).output_bytes
    from ..api.estimate import check_disk
    # check_disk reads the estimate's output_bytes and names the scenario's file
    if resume and _resumable(Path(out), _identity(sc, seed, duration_s)):
        return sc, sc.sweep, found                # continued: its variants are checked one by one
    check_disk(SimpleNamespace(scenario=sc), SimpleNamespace(output_bytes=total), out, ignore=ignore_disk_space)
    _check_sweep_dir(Path(out), overwrite)
    return sc, sc.sweep, found


def _identity(sc, seed, duration_s) -> dict:
    """What a sweep directory is a sweep of (:func:`hifi.run.resume.identity`: the sweep file's
    text, the ``--seed`` and ``--duration`` overrides, hifi's version)."""
    from .resume import identity
    return identity(sc.text, -1 if seed is None else seed, sc.duration_s if duration_s is None else duration_s)


def _resumable(out: Path, ident: dict) -> bool:
    """Whether ``out`` is a sweep that ``--resume`` continues (False: it does not exist).

    Raises
    ------
    hifi.ScenarioError
        ``out`` exists and is not a sweep of the same file, overrides and version (key ``--resume``).
    """
    from .resume import mismatch, read_identity
    if not out.exists():
        return False
    why = mismatch(read_identity(out), ident)
    if why is not None:
        raise ScenarioError(f"cannot resume the sweep in {out}: {why}; give another --out, or --overwrite "
                            f"without --resume to replace it", key="--resume")
    return True


def run_sweep(path, out, *, seed: int | None = None, duration_s: float | None = None, overwrite: bool = False,
              progress: bool | None = None, ignore_disk_space: bool = False, rank: int = 0, size: int = 1,
              barrier: Callable[[], None] | None = None, resume: bool = False) -> Path | None:
    """Run every variant of the sweep file ``path`` into ``out/variant_NNNN`` and write the
    catalog ``out/sweep.json``.

    Parameters
    ----------
    path : path-like
        A scenario file with a ``[sweep]`` table.
    out : path-like
        The sweep's directory; must not exist unless ``overwrite`` (then it must be a sweep's).
    seed, duration_s : optional
        Override ``[simulation]`` in every variant (``seed`` not when the sweep varies it).
    progress, ignore_disk_space : optional
        As :meth:`hifi.Simulation.run`; the disk check counts the sum of every variant's output.
    rank, size : int
        This process's share: the variants ``rank, rank + size, ...`` (an MPI launch).
    barrier : callable, optional
        Waits for every process of the launch (needed when ``size > 1``).
    resume : bool
        Continue the sweep of ``out`` that stopped (killed, interrupted): the variants it
        finished are kept, the others run again from their start (a variant's unfinished
        directory is deleted). A sweep of another file, overrides or version is refused; with
        no sweep in ``out`` the sweep starts, and a finished one is left as it is.

    Returns
    -------
    pathlib.Path or None
        The catalog (on rank 0; None on the others).

    Raises
    ------
    hifi.ScenarioError
        Before anything is written: a bad ``[sweep]``, a variant that is not a valid scenario,
        an output estimate over the free disk space.
    FileExistsError
        ``out`` exists (without ``overwrite``, or it is not a sweep's directory).
    """
    from .simulation import Simulation
    from . import scenario as _scenario
    from ..runtime.safety import check_not_input, write_file
    out = Path(out)
    if size > 1 and barrier is None:
        raise ValueError(f"run_sweep: size = {size} needs a barrier")
    check_not_input(out, [path])
    sc, sweep, found = prepare(path, out, seed=seed, duration_s=duration_s, ignore_disk_space=ignore_disk_space,
                               overwrite=overwrite, resume=resume)
    ident = _identity(sc, seed, duration_s)
    resumed = resume and out.exists()          # prepare checked it is this sweep
    if resumed and (out / CATALOG).is_file() and not (out / INCOMPLETE_MARKER).exists():
        return out / CATALOG if rank == 0 else None          # finished: nothing to do
    if size > 1:
        barrier()                       # every rank has checked everything: now the writing starts
    if rank == 0 and not resumed:
        if out.exists():
            shutil.rmtree(out)          # --overwrite of a sweep's directory (_check_sweep_dir)
        out.mkdir(parents=True)
        (out / INCOMPLETE_MARKER).write_text("hifi sweep in progress or failed; not a finished sweep; hifi run "
                                             "... --resume continues it\n", encoding="utf-8")
        from .resume import write_identity
        write_identity(out, ident)
    if size > 1:
        barrier()                       # the directory exists
    for v in found[rank::size]:
        if resumed:
            if (out / v.dir_name).is_dir():
                continue                                   # written whole (atomically) before the stop
            for partial in out.glob(f".{v.dir_name}.partial-*"):
                shutil.rmtree(partial, ignore_errors=True)  # a variant stopped half-way runs again
        vsc = _scenario.validate(v.data, base_dir=sc.base_dir, source=v.source, text=v.text)
        Simulation(vsc).run_to_files(out / v.dir_name, seed=seed, duration_s=duration_s, progress=progress,
                                     ignore_disk_space=True)      # the sweep's disk check counted it
    if size > 1:
        barrier()                       # every variant is written
    if rank != 0:
        return None
    catalog = {"scenario": sc.source, "mode": sweep.mode, "paths": list(sweep.lists),
               "seed": seed, "duration_s": duration_s,
               "variants": [{"index": v.index, "dir": v.dir_name, "values": v.values} for v in found]}
    written = write_file(out / CATALOG, lambda tmp: Path(tmp).write_text(json.dumps(catalog, indent=1) + "\n",
                                                                         encoding="utf-8"), overwrite=False)
    (out / INCOMPLETE_MARKER).unlink()
    return written


def open_sweep(directory) -> dict:
    """The datasets of a finished sweep, one per file name, each with a ``variant`` dimension.

    Every dataset of the variants (each sensor's and ``motion``; a ``NAME.nc`` file or a
    ``NAME.zarr`` store, :func:`hifi.run.reading.open_output`) is opened in every variant
    directory and concatenated along ``variant`` (:func:`xarray.concat`); the swept
    values are coordinates along ``variant`` named by their paths (``simulation.seed`` as
    ``seed``; a list value, such as a position, with a second dimension ``<path>_index``), so
    a Monte-Carlo study is a ``groupby``::

        ds = hifi.open_sweep("out")["gnss"]
        ds.groupby("sensors.lidar.params.visibility_m").mean()

    The files are opened with dask chunks of :data:`SWEEP_CHUNK_FRAMES` frames when dask is
    installed (then nothing is read until used, and the files stay open; the files' own chunks,
    one per frame, made 2,000 tasks of one variable for 100 variants of 20 frames and took
    longer to open than reading the data); without dask the data are read into memory and the
    files closed.

    Raises
    ------
    FileNotFoundError
        No catalog ``sweep.json`` (not a sweep directory, or one that did not finish), or a
        variant directory lacks a dataset the first one has.
    """
    import importlib.util

    import numpy as np
    import xarray as xr
    directory = Path(directory)
    catalog_path = directory / CATALOG
    if not catalog_path.is_file():
        raise FileNotFoundError(f"{catalog_path}: no such file; open_sweep takes a directory written by a "
                                f"finished sweep (hifi run SWEEP.toml --out DIR)")
    catalog = json.loads(catalog_path.read_text(encoding="utf-8"))
    entries = catalog["variants"]
    found = [output_paths(directory / e["dir"]) for e in entries]        # name -> .nc file or .zarr store
    names = list(found[0])
    lazy = importlib.util.find_spec("dask") is not None
    coords: dict = {"variant": ("variant", np.array([e["index"] for e in entries]))}
    for path in catalog["paths"]:
        name = "seed" if path == "simulation.seed" else path
        values = np.array([e["values"][path] for e in entries])
        coords[name] = (("variant",) if values.ndim == 1 else ("variant", f"{name}_index"), values)
    result = {}
    for name in names:
        parts = []
        try:
            for e, paths in zip(entries, found):
                if name not in paths:
                    raise FileNotFoundError(f"{directory / e['dir']}: no {name}.nc or {name}.zarr, which "
                                            f"{entries[0]['dir']} has; every variant of a sweep writes the same "
                                            f"datasets")
                parts.append(open_output(paths[name], chunks={"frame": SWEEP_CHUNK_FRAMES} if lazy else None))
            ds = xr.concat(parts, dim="variant", data_vars="all", coords="different", compat="equals",
                           join="outer", combine_attrs="drop_conflicts")
            if not lazy:
                ds = ds.load()
        except BaseException:
            for p in parts:
                p.close()
            raise
        if not lazy:
            for p in parts:
                p.close()
        result[name] = ds.assign_coords(coords)
    return result
