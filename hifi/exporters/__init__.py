"""Exporters: hifi datasets to the file formats the field's tools read.

Every format is a module with an :class:`Exporter` record, found through the entry-point group
``hifi.exporters`` (name -> ``Exporter``), like models, plots and partitions, so another
package can add a format without touching hifi; :func:`register_exporter` adds one in-process.
``hifi export SOURCE --format NAME`` calls :func:`export`. A format takes one sensor file
(``scope = "sensor"``: ``DIR/NAME.nc``, or the Zarr store ``DIR/NAME.zarr``, opened by
:func:`hifi.run.reading.open_output`) or a whole run directory (``scope = "run"``).

Layout decisions shared by the built-in formats
-----------------------------------------------
* Input is a range-sensor dataset (:mod:`hifi.run.dataset`, docs/datasets.md): a ``frame``
  dimension followed by the sensor's own dimensions, in the order of ``x_noisy``'s dimensions.
  A dataset without ``frame`` is treated as one frame. "Frame index" is the 0-based position
  along ``frame``.
* Point lists (PLY, LAS, EVD, KITTI) hold the *detected* returns only (``detected`` true), the
  reported (noisy) points, in frame order and within a frame in the C order of the sensor
  dimensions (acquisition order for the rotating lidars; ``generic_grid`` stores ``theta``
  increasing, so its columns come in the reverse of their acquisition order).
* Organised formats (PCD, PTX) lay a two-dimensional scan out with the beams sorted by
  elevation and the columns in acquisition order (:func:`._common.scan_grid_order`).
* Instants are read through :func:`hifi.run.dataset.seconds_since_start`, so a file opened with
  or without ``decode_times`` exports the same.
* Formats with one file per frame (PCD, KITTI): a one-frame dataset is written to ``out``
  itself; with more than one frame, ``<stem>_<frame:06d>.<ext>`` next to ``out`` (``out``
  itself is not written).
* :func:`export` writes into a temporary directory beside ``out`` and moves the files into
  place only when the writer has succeeded, so a failed export leaves nothing behind.
* A format whose ``suffix`` is empty writes a directory (SemanticKITTI's ``sequences/...``).
  :func:`export` puts :data:`EXPORT_MARKER` into it; ``overwrite`` replaces an existing
  directory only when it is empty or holds that marker, never another directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..api.registry import entry_points
from ..errors import OutputError
from ..run.reading import is_zarr_store
from ..runtime.safety import check_new_file, check_not_input
from ._common import Exporter, ExportError, ExportWarning

__all__ = ["EXPORT_MARKER", "ExportError", "ExportWarning", "Exporter", "available_exporters", "export",
           "load_exporter", "register_exporter"]

#: File that marks a directory written by a directory format (``suffix = ""``); ``overwrite``
#: replaces only a directory holding it (or an empty one).
EXPORT_MARKER = ".hifi-export"

GROUP = "hifi.exporters"
_extra: dict[str, Exporter] = {}


def register_exporter(exporter: Exporter) -> None:
    """Register ``exporter`` for this process (overrides an entry point of the same name)."""
    if not isinstance(exporter, Exporter):
        raise TypeError(f"expected a hifi.exporters.Exporter, got {type(exporter).__name__}")
    _extra[exporter.name] = exporter


def available_exporters() -> list[str]:
    """Names of every registered format, sorted."""
    return sorted({ep.name for ep in entry_points(group=GROUP)} | set(_extra))


def load_exporter(name: str) -> Exporter:
    """The :class:`Exporter` registered as ``name``.

    Raises
    ------
    ExportError
        No format of that name is registered (the message lists those that are).
    """
    if name in _extra:
        return _extra[name]
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            exporter = ep.load()
            if not isinstance(exporter, Exporter) or exporter.name != name:
                raise ExportError(f"entry point {ep.value!r} of group {GROUP!r} is not an Exporter named {name!r}")
            return exporter
    raise ExportError(f"format {name!r} is not supported; allowed: {', '.join(available_exporters())}")


def export(source, fmt: str, out, *, sensor: str | None = None, overwrite: bool = False) -> list[Path]:
    """Write ``source`` in format ``fmt`` to ``out``.

    Parameters
    ----------
    source : xarray.Dataset or path-like
        A sensor dataset for ``scope = "sensor"`` formats; a run directory for ``scope =
        "run"`` formats.
    fmt : str
        A name of :func:`available_exporters`.
    out : path-like
        Output file (or directory, for formats that write one). For the per-frame formats and
        a dataset with more than one frame, the files are ``<stem>_<frame:06d><suffix>`` beside
        ``out``.
    sensor : str, optional
        Sensor name, for run-level formats that export one sensor.
    overwrite : bool
        Replace an earlier export to the same ``out`` (as ``hifi run --overwrite``), as a
        whole: the files it wrote that the new export does not write again are deleted, so two
        exports never mix (:func:`earlier_export`). Without it, any file of an earlier export
        stops the export before anything is moved into place.

    Returns
    -------
    list of pathlib.Path
        Every file written, in frame order (one element for the single-file formats).

    Raises
    ------
    ExportError
        The format is unknown or the source lacks what the format needs (the message names
        the missing variables or attributes). Nothing is left written.
    ValueError
        An output is, contains or lies inside the source (the run directory, or the file a
        dataset was opened from): refused whatever ``overwrite`` says.
    FileNotFoundError
        The directory of ``out`` does not exist.
    FileExistsError
        An output file exists and ``overwrite`` is false, or an output path is a directory.
    hifi.OutputError
        A file could not be written (no space, a read-only file system): nothing is left.

    Notes
    -----
    The files are written into a temporary directory beside ``out`` and moved into place only
    when the writer has succeeded. An export that writes anything else than the one file
    ``out`` (frame files, a pcap's calibration beside it) lists its files in a manifest beside
    them, ``.<out name>.hifi-export`` (:func:`manifest_path`); a directory format puts
    :data:`EXPORT_MARKER` inside its directory.
    """
    exporter = load_exporter(fmt)
    out = Path(out)
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{out.parent}: no such directory for {out.name}")
    directory = exporter.suffix == ""
    if exporter.scope == "run":
        named = isinstance(source, (str, os.PathLike))
        if not named or not Path(source).is_dir() or is_zarr_store(source):
            got = source if named else type(source).__name__
            one = " (one model's Zarr store)" if named and is_zarr_store(source) else ""
            raise ExportError(f"format {fmt!r} takes a run directory (hifi run --out DIR), got {got}{one}")
        inputs = [Path(source)]
    elif isinstance(source, (str, os.PathLike)):
        raise ExportError(f"format {fmt!r} takes one sensor's dataset (opened from DIR/NAME.nc or DIR/NAME.zarr), "
                          f"got {source}")
    else:
        # The file or Zarr store (a directory: nothing may be written inside it either) the
        # dataset was opened from; xarray.open_dataset sets it for both engines.
        opened_from = getattr(source, "encoding", {}).get("source")
        inputs = [Path(opened_from)] if opened_from else []
    check_not_input(out, inputs)
    _check_targets([out], overwrite, directory)
    if not directory:
        _check_earlier(earlier_export(out, exporter, []), overwrite)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    except OSError as exc:
        raise OutputError(out, exc) from exc
    try:
        try:
            if exporter.scope == "run":
                written = exporter.write(Path(source), staging / out.name, sensor=sensor)
            else:
                written = exporter.write(source, staging / out.name)
        except OSError as exc:
            if _reading_error(exc, staging):
                raise
            raise OutputError(out, exc) from exc
        written = [written] if isinstance(written, Path) else list(written)
        final = [out.parent / p.name for p in written]
        check_not_input(final, inputs)
        _check_targets(final, overwrite, directory)
        stale = [] if directory else earlier_export(out, exporter, final)
        _check_earlier(stale, overwrite)
        try:
            for p in written:
                if p.is_dir():
                    (p / EXPORT_MARKER).write_text(f"written by hifi export --format {fmt}\n", encoding="utf-8")
            if not directory and final != [out]:
                _write_manifest(staging / manifest_path(out).name, fmt, final)
                written.append(staging / manifest_path(out).name)
                final.append(manifest_path(out))
            _move_into_place(written, final, stale, staging)
        except OSError as exc:
            raise OutputError(out, exc) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [p for p in final if p != manifest_path(out)]


def manifest_path(out) -> Path:
    """The manifest of an export to ``out`` that writes more than the one file ``out``:
    ``.<out name>.hifi-export`` beside it, listing every file the export wrote."""
    out = Path(out)
    return out.with_name(f".{out.name}{EXPORT_MARKER}")


def _write_manifest(path: Path, fmt: str, final) -> None:
    lines = [f"# written by hifi export --format {fmt}; --overwrite of the same --out replaces these files "
             f"as a whole", *sorted(p.name for p in final)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def earlier_export(out, exporter: Exporter, new) -> list[Path]:
    """Files of an earlier export to ``out`` that an export writing ``new`` would not replace.

    They are ``out`` itself, the per-frame files ``<stem>_<frame:06d><suffix>`` beside it (for
    a per-frame format) and what the manifest of the earlier export lists (:func:`manifest_path`,
    with the manifest itself), less ``new``: what would be left beside the new files and mix two
    exports in one place.
    """
    out = Path(out)
    new = {Path(p).name for p in new}
    found = []
    if out.exists() or out.is_symlink():
        found.append(out)
    if exporter.per_frame:
        found += sorted(out.parent.glob(glob_escape(out.stem) + "_" + "[0-9]" * 6 + glob_escape(exporter.suffix)))
    manifest = manifest_path(out)
    if manifest.is_file():
        found.append(manifest)
        for line in manifest.read_text(encoding="utf-8", errors="replace").splitlines():
            name = line.strip()
            if name and not name.startswith("#") and "/" not in name and name not in (".", ".."):
                p = out.parent / name
                if p.is_file() or p.is_symlink():
                    found.append(p)
    stale = {}
    for p in found:
        if p.name not in new and not (p.is_dir() and not p.is_symlink()):
            stale.setdefault(p.name, p)
    return list(stale.values())


def glob_escape(text: str) -> str:
    """``text`` with the glob pattern characters ``*?[`` matched literally."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _check_earlier(stale, overwrite: bool) -> None:
    if stale and not overwrite:
        shown = ", ".join(str(p) for p in stale[:3]) + (" ..." if len(stale) > 3 else "")
        raise FileExistsError(f"{shown} exist{'s' if len(stale) == 1 else ''} (an earlier export to this --out); "
                              f"use --overwrite to replace that export as a whole")


def _reading_error(exc: OSError, staging: Path) -> bool:
    """Whether ``exc`` came from reading the source (a file named outside the staging
    directory) rather than from writing the export."""
    name = getattr(exc, "filename", None)
    if not name:
        return False
    try:
        return staging.resolve() not in Path(name).resolve().parents
    except (OSError, ValueError):
        return False


def _move_into_place(written, final, stale, staging: Path) -> None:
    """Move the staged files onto their final names; an earlier export's directory (checked to
    be ours) and its files that the new one does not replace (``stale``) are moved into the
    staging directory first, which is deleted afterwards. If a move fails, what was moved
    aside is put back."""
    aside = []
    try:
        for i, p in enumerate(stale):
            old = staging / f".old-{i}-{p.name}"
            os.replace(p, old)
            aside.append((old, p))
        for src, dst in zip(written, final):
            if src.is_dir() and dst.is_dir():           # overwrite: checked above to be ours (or empty)
                old = staging / (".old-" + dst.name)
                os.replace(dst, old)
                aside.append((old, dst))
            os.replace(src, dst)
    except OSError:
        for old, p in reversed(aside):
            if not p.exists():
                try:
                    os.replace(old, p)
                except OSError:
                    pass
        raise


def _check_targets(paths, overwrite: bool, directory: bool = False) -> None:
    """Refuse to replace a directory (unless ``directory``: then one written by an export, or
    empty, with ``overwrite``), or an existing file unless ``overwrite``."""
    for p in paths:
        if not directory:
            check_new_file(p, overwrite)
            continue
        if p.is_dir() and not p.is_symlink():
            if not overwrite:
                raise FileExistsError(f"{p} exists; use --overwrite to replace it")
            if any(p.iterdir()) and not (p / EXPORT_MARKER).is_file():
                raise FileExistsError(f"--overwrite: {p} was not written by hifi export (no {EXPORT_MARKER}); "
                                      f"refusing to delete it, choose another --out")
        elif (p.exists() or p.is_symlink()) and not overwrite:
            raise FileExistsError(f"{p} exists; use --overwrite to replace it")
        elif p.exists() or p.is_symlink():
            raise FileExistsError(f"--overwrite: {p} is not a directory written by hifi export; refusing to "
                                  f"replace it with one, choose another --out")
