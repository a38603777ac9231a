"""Output safety: the rules every command that writes files follows.

A command never writes over or inside its own input, never replaces an existing file without
``--overwrite``, and never leaves anything half-written. These helpers hold those rules in one
place, for ``hifi run``, ``hifi export`` (every format), ``hifi view`` and ``hifi plot``:

* :func:`check_not_input`: an output that is, contains or lies inside an input is refused
  (``hifi export X.nc --out X.nc --overwrite`` would otherwise replace the dataset it reads).
* :func:`check_new_file`: an existing file is replaced only with ``overwrite``; a directory is
  never replaced by a file.
* :func:`write_file`: a file is written under a temporary name beside its final place and
  renamed into place only once complete; a failure to write becomes one
  :class:`~hifi.errors.OutputError` naming the file as the user gave it.

Paths are compared after resolving symbolic links (``Path.resolve``) and, where both exist,
by file identity (``os.path.samefile``: a hard link to the input is the input).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable


def _resolved(path) -> Path:
    return Path(path).expanduser().resolve()


def _within(inner: Path, outer: Path) -> bool:
    """Whether resolved ``inner`` lies strictly inside resolved ``outer``."""
    return inner != outer and outer in inner.parents


def check_not_input(outputs, inputs: Iterable, *, option: str = "--out") -> None:
    """Refuse output paths that are, contain or lie inside one of the command's inputs.

    Parameters
    ----------
    outputs : path-like or iterable of path-like
        Every path the command is about to write (a file, a directory, the frame files of a
        per-frame export).
    inputs : iterable of path-like
        Every file or directory the command reads (a dataset, a run directory, a scenario).
    option : str
        The command-line option that named the output, for the message.

    Raises
    ------
    ValueError
        Naming the output, the input and how they overlap; checked before anything is
        written, whatever ``--overwrite`` says.
    """
    if isinstance(outputs, (str, os.PathLike)):
        outputs = [outputs]
    inputs = [Path(p) for p in inputs]
    for out in outputs:
        o = _resolved(out)
        for src in inputs:
            s = _resolved(src)
            same = o == s
            if not same and os.path.exists(o) and os.path.exists(s):
                try:
                    same = os.path.samefile(o, s)
                except OSError:
                    same = False
            if same:
                how = "is the input"
            elif _within(s, o):
                how = "contains the input"
            elif _within(o, s):
                how = "lies inside the input"
            else:
                continue
            raise ValueError(f"{option} {out} {how} {src}; refusing to write over or inside a command's own "
                             f"input, choose an output outside it")


def check_new_file(path, overwrite: bool) -> None:
    """Refuse to write the file ``path`` where a directory is, or over an existing file
    without ``overwrite``.

    Raises
    ------
    FileNotFoundError
        The directory of ``path`` does not exist.
    FileExistsError
        ``path`` is a directory, or it exists and ``overwrite`` is false.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path.parent}: no such directory for {path.name}")
    if path.is_dir() and not path.is_symlink():
        raise FileExistsError(f"{path} is a directory; give an output file name")
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise FileExistsError(f"{path} exists; use --overwrite to replace it")


def umask() -> int:
    """The process's file-creation mask (read without changing it for longer than a call)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_file(out, write: Callable[[Path], None], *, overwrite: bool) -> Path:
    """Write the file ``out`` through ``write(temporary_path)``, all or nothing.

    ``write`` writes a complete file at the path it is given: a hidden name beside ``out``
    with the same suffix (so writers that choose the format by suffix, such as matplotlib's
    ``savefig``, see the right one). Only when it returns is the file renamed onto ``out``
    (an atomic replacement on POSIX file systems); on any failure the temporary file is
    deleted and ``out`` is untouched.

    Parameters
    ----------
    out : path-like
        The file to write. Its directory must exist.
    write : callable
        ``write(path)`` writes the whole file at ``path``.
    overwrite : bool
        Whether an existing ``out`` may be replaced (:func:`check_new_file`).

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    FileNotFoundError, FileExistsError
        See :func:`check_new_file`; nothing is written.
    hifi.OutputError
        The file could not be written (no space, a read-only file system, no permission).
    """
    from ..errors import OutputError
    out = Path(out)
    check_new_file(out, overwrite)
    tmp = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=".tmp" + out.suffix, dir=out.parent)
        os.close(fd)
        tmp = Path(name)
        write(tmp)
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, out)
        tmp = None
    except OSError as exc:
        raise OutputError(out, exc) from exc
    finally:
        if tmp is not None:
            try:
                tmp.unlink()
            except OSError:
                pass
    return out
