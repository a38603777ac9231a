"""Reading a run directory back: every model's dataset, as a netCDF file or as a Zarr store.

A serial ``hifi run`` writes each model's dataset as one netCDF4 file, ``DIR/NAME.nc``; a run
partitioned over MPI ranks (and ``--format zarr``) writes a Zarr store instead, ``DIR/NAME.zarr``
(a directory: Zarr format 2 with consolidated metadata ``.zmetadata``), with the same variables,
attributes, CF time units and encodings. Every reader of run directories in hifi (the exporters,
``hifi plot``, the replay page, :func:`hifi.open_sweep`, the command line) opens them through
this module, so each takes both:

- :func:`open_output`: one dataset, ``DIR/NAME.nc`` or ``DIR/NAME.zarr``, the engine chosen by
  the path (a ``.zarr`` suffix or a directory holding Zarr metadata: Zarr; otherwise netCDF);
- :func:`output_paths` and :func:`find_output`: the datasets of a run directory by name;
- :func:`open_run` (``hifi.open_run``): all of them, opened lazily, ``name -> Dataset``.

Opening reads only the metadata: the values are read when used (xarray's lazily indexed
arrays, or dask arrays with ``chunks``), so the datasets stay open until closed.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["MOTION", "NETCDF_SUFFIX", "OUTPUT_SUFFIXES", "ZARR_SUFFIX", "find_output", "is_zarr_store",
           "open_output", "open_run", "output_paths"]

#: Suffix of a model's dataset written as one netCDF4 file (serial runs).
NETCDF_SUFFIX = ".nc"
#: Suffix of a model's dataset written as a Zarr store, a directory (partitioned runs,
#: ``--format zarr``).
ZARR_SUFFIX = ".zarr"
#: Suffixes of the datasets of a run directory, in the order they are named in messages.
OUTPUT_SUFFIXES = (NETCDF_SUFFIX, ZARR_SUFFIX)
#: Name of the ground-truth dataset every run writes (``motion.nc`` or ``motion.zarr``).
MOTION = "motion"

#: Files that make a directory a Zarr store: a group's metadata in format 2 (``.zgroup``, and
#: ``.zmetadata`` when consolidated) and in format 3 (``zarr.json``).
_ZARR_METADATA = (".zmetadata", ".zgroup", "zarr.json")


def is_zarr_store(path) -> bool:
    """Whether ``path`` is a Zarr store: a directory named ``*.zarr``, or a directory holding
    Zarr group metadata (``.zgroup``, ``.zmetadata`` or ``zarr.json``)."""
    path = Path(path)
    if not path.is_dir():
        return False
    return path.suffix == ZARR_SUFFIX or any((path / name).is_file() for name in _ZARR_METADATA)


def _consolidated(store: Path) -> bool:
    """Whether the store has consolidated metadata (format 2: ``.zmetadata``; format 3: a
    ``consolidated_metadata`` entry in the root ``zarr.json``).

    xarray's default (``consolidated=None``) tries the consolidated metadata and, where there is
    none, falls back to reading every array's own with a ``RuntimeWarning``; saying which one
    the store has opens both kinds without it.
    """
    if (store / ".zmetadata").is_file():
        return True
    root = store / "zarr.json"
    if root.is_file():
        try:
            return json.loads(root.read_text(encoding="utf-8")).get("consolidated_metadata") is not None
        except (OSError, UnicodeDecodeError, ValueError):
            return False          # unreadable metadata: opening the store reports it
    return False


def _expected(stem) -> str:
    return " or ".join(f"{stem}{s}" for s in OUTPUT_SUFFIXES)


def output_paths(run_dir) -> dict:
    """The datasets of a run directory: name -> ``DIR/NAME.nc`` file or ``DIR/NAME.zarr`` store.

    Parameters
    ----------
    run_dir : path-like
        A directory written by ``hifi run`` (or any directory holding such datasets).

    Returns
    -------
    dict of str to pathlib.Path
        Sorted by name; ``motion`` among them where the run wrote it. Empty where the directory
        holds no dataset. Names starting with ``.`` (temporary files, hidden entries) are not
        datasets: a model's name starts with a letter or digit.

    Raises
    ------
    FileNotFoundError
        ``run_dir`` does not exist.
    NotADirectoryError
        ``run_dir`` is a file.
    ValueError
        A name has both a ``.nc`` file and a ``.zarr`` store: which one holds the run's data is
        not known, so neither is chosen.
    """
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise FileNotFoundError(f"{run_dir}: no such run directory; expected a directory written by hifi run "
                                f"(--out DIR)")
    if not run_dir.is_dir():
        raise NotADirectoryError(f"{run_dir}: expected a run directory written by hifi run (--out DIR), got a file")
    found: dict = {}
    for path in sorted(run_dir.iterdir()):
        if path.name.startswith("."):
            continue
        if (path.suffix == NETCDF_SUFFIX and path.is_file()) or (path.suffix == ZARR_SUFFIX and path.is_dir()):
            if path.stem in found:
                raise ValueError(f"{run_dir}: dataset {path.stem!r} is there twice, as {found[path.stem].name} and "
                                 f"{path.name}; keep one of them (move the other out of the run directory)")
            found[path.stem] = path
    return dict(sorted(found.items()))


def find_output(run_dir, name: str):
    """The dataset ``name`` of a run directory, ``DIR/NAME.nc`` or ``DIR/NAME.zarr``; None where
    it has neither.

    Raises
    ------
    FileNotFoundError, NotADirectoryError, ValueError
        As :func:`output_paths`.
    """
    return output_paths(run_dir).get(name)


def open_output(path, *, chunks=None):
    """Open one dataset a run wrote, ``DIR/NAME.nc`` or ``DIR/NAME.zarr``, lazily.

    Parameters
    ----------
    path : path-like
        A netCDF file, or a Zarr store (a directory named ``*.zarr``, or one holding Zarr
        metadata). The engine follows the path: ``zarr`` for a store, ``netcdf4`` for a
        ``.nc`` file, xarray's own choice for another file.
    chunks : None, dict, int or "auto"
        None (default): the values are read on access, into numpy arrays, without dask. Anything
        else is passed to :func:`xarray.open_dataset` and gives dask arrays (``{}``: one dask
        chunk per stored chunk, for a Zarr store one frame); it needs dask.

    Returns
    -------
    xarray.Dataset
        Decoded as xarray decodes the file (CF times to ``datetime64``, packed values to
        float64); ``ds.encoding["source"]`` is the path opened. Close it when done.

    Raises
    ------
    FileNotFoundError
        No file or store at ``path``.
    ValueError
        ``path`` is a directory that is not a Zarr store, or it cannot be read as a dataset.
    ImportError
        ``chunks`` given and dask is not installed.
    """
    import xarray as xr
    path = Path(path)
    if chunks is not None:
        import importlib.util
        if importlib.util.find_spec("dask") is None:
            raise ImportError(f"{path}: chunks = {chunks!r} asks for dask arrays and dask is not installed; "
                              f"install it with pip install dask, or open with chunks=None")
    if not path.exists():
        other = {NETCDF_SUFFIX: ZARR_SUFFIX, ZARR_SUFFIX: NETCDF_SUFFIX}.get(path.suffix)
        there = other is not None and path.with_suffix(other).exists()
        raise FileNotFoundError(f"{path}: no such file or Zarr store"
                                + (f"; the run has {path.with_suffix(other).name}" if there else ""))
    if is_zarr_store(path) or path.suffix == ZARR_SUFFIX:
        try:
            return xr.open_dataset(path, engine="zarr", chunks=chunks, consolidated=_consolidated(path))
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{path}: not a readable Zarr store ({type(exc).__name__}: {exc})") from None
    if path.is_dir():
        raise ValueError(f"{path}: a directory, not a dataset; expected one model's dataset, "
                         f"{_expected('DIR/NAME')} (a Zarr store)")
    try:
        return xr.open_dataset(path, engine="netcdf4" if path.suffix == NETCDF_SUFFIX else None, chunks=chunks)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable netCDF dataset ({exc})") from None


def open_run(run_dir, *, chunks=None) -> dict:
    """Every dataset of a run directory, opened lazily: name -> :class:`xarray.Dataset`.

    ::

        run = hifi.open_run("out")        # {"cam": ..., "lidar": ..., "motion": ...}
        pts = run["lidar"].hifi.points()

    Parameters
    ----------
    run_dir : path-like
        A directory written by ``hifi run``: its ``NAME.nc`` files (a serial run) and
        ``NAME.zarr`` stores (a run partitioned over MPI ranks, ``--format zarr``), whichever
        it holds.
    chunks : None, dict, int or "auto"
        As :func:`open_output` (None: no dask).

    Returns
    -------
    dict of str to xarray.Dataset
        Sorted by name; the ground truth under ``"motion"``. Nothing is read but the metadata;
        close the datasets when done (``for ds in run.values(): ds.close()``).

    Raises
    ------
    FileNotFoundError
        ``run_dir`` does not exist.
    ValueError
        ``run_dir`` is a file, holds no dataset, has one name as both ``.nc`` and ``.zarr``,
        or a dataset cannot be read (those opened before it are closed).
    ImportError
        As :func:`open_output`.
    """
    try:
        paths = output_paths(run_dir)
    except NotADirectoryError as exc:
        raise ValueError(str(exc)) from None
    if not paths:
        raise ValueError(f"{run_dir}: no dataset in it ({_expected('NAME')}); expected a directory written by "
                         f"hifi run (--out DIR)")
    opened: dict = {}
    try:
        for name, path in paths.items():
            opened[name] = open_output(path, chunks=chunks)
    except BaseException:
        for ds in opened.values():
            ds.close()
        raise
    return opened
