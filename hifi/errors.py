"""Exceptions raised for bad input.

A bad scenario raises :class:`ScenarioError`, a ``ValueError`` whose message names the file
(and line where it can be found), the key path (``objects[2].material``), the value received
and what is allowed, so that the user can find and fix the mistake.
"""

from __future__ import annotations

from typing import Any


class ScenarioError(ValueError):
    """A scenario value is missing, mistyped, out of range or refers to something absent.

    Parameters
    ----------
    message : str
        What is wrong and what is allowed.
    file : str, optional
        Scenario file (or ``"<dict>"`` for scenarios built in code).
    key : str, optional
        Key path, e.g. ``"objects[2].material"``.
    value : Any, optional
        The offending value (shown with ``repr``).
    line : int, optional
        1-based line in ``file`` where the key was found.
    """

    _MISSING = object()

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None,
                 value: Any = _MISSING, line: int | None = None):
        self.file = file
        self.key = key
        self.value = None if value is self._MISSING else value
        self.line = line
        self.reason = message
        where = ""
        if file is not None:
            where = f"{file}:{line}: " if line is not None else f"{file}: "
        what = ""
        if key is not None:
            what = f"{key} = {value!r}: " if value is not self._MISSING else f"{key}: "
        super().__init__(f"{where}{what}{message}")


class ModelError(RuntimeError):
    """A model failed while running (raised with the model's name and simulated time)."""


class ScenarioWarning(UserWarning):
    """A scenario that runs but very likely does not do what its author meant.

    Issued at load, naming the file, the key and the objects involved: a sensor mounted inside a
    closed mesh (its rays start inside that body), triangles of zero area. The command line
    prints each one once as ``hifi: warning: ...``; ``warnings.simplefilter("error",
    hifi.ScenarioWarning)`` turns them into errors.
    """


class OutputError(OSError):
    """A file or directory of a run could not be written (disk full, no permission, a file
    in the way, a netCDF/HDF5 error).

    Parameters
    ----------
    path : path-like
        The file or directory as the user knows it (``out/run/velodyne.nc``, not the temporary
        directory it was being written in).
    reason : str or BaseException
        What went wrong; an ``OSError`` gives its ``strerror`` (``No space left on device``),
        any other exception its text (``NetCDF: HDF error``).
    """

    def __init__(self, path, reason):
        if isinstance(reason, OSError) and reason.strerror:
            reason = reason.strerror
        self.path = path
        self.reason = str(reason)
        super().__init__(f"cannot write {path}: {self.reason}")

    def __str__(self) -> str:
        return self.args[0]
