"""Resuming a run that stopped before its end: ``hifi run --resume``.

A run that writes Zarr stores (every partitioned run, and a serial run with ``--format zarr``
or ``--resume``) keeps its temporary directory ``.DIR.partial-*`` when it stops early: a
signal (a scheduler's time limit sends SIGTERM), an error, or a kill that no code sees
(SIGKILL, a node lost). Each chunk is renamed into place whole, so every frame whose chunks
are all there is finished (:func:`hifi.run.zarr_output.written_frames`); ``--resume`` computes
the others and ends the run as if it had never stopped. A frame depends only on the scenario,
the seed, its index and its time (random streams keyed by seed, sensor and frame), so the
values are those of an uninterrupted run; a closed loop, whose every step depends on those
before, is computed again from the start and only its missing frames are written.

The directory records what it is a run of (:data:`RESUME_FILE`): the scenario's text, the
seed, the simulated span and hifi's version. A run resumed with any of them different would
mix two runs' frames, so it is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .._version import __version__
from ..errors import ScenarioError

#: The record of what a resumable directory is a run of (JSON), kept in the finished directory too.
RESUME_FILE = ".hifi-resume.json"

#: The output formats of a run: netCDF files, or Zarr stores (several processes can write them
#: at once, and a stopped run can be resumed).
FORMATS = ("netcdf", "zarr")


def identity(scenario_text: str, seed: int, duration_s: float) -> dict:
    """What a run directory is a run of: the values that must match to resume it."""
    return {"hifi_version": __version__,
            "scenario_sha256": hashlib.sha256(scenario_text.encode("utf-8")).hexdigest(),
            "seed": int(seed), "duration_s": float(duration_s), "format": "zarr"}


def write_identity(directory: Path, ident: dict) -> None:
    (Path(directory) / RESUME_FILE).write_text(json.dumps(ident, indent=1) + "\n", encoding="utf-8")


def read_identity(directory: Path) -> dict | None:
    """The record of ``directory``, or None when it has none (or it cannot be read)."""
    try:
        return json.loads((Path(directory) / RESUME_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


_WHAT = {"scenario_sha256": "scenario", "seed": "seed", "duration_s": "duration [s]",
         "hifi_version": "hifi version", "format": "format"}


def mismatch(found: dict | None, ident: dict) -> str | None:
    """Why a directory recorded as ``found`` cannot be resumed by the run ``ident`` (None: it can)."""
    if found is None:
        return "it records no resumable run (a netCDF run, which a killed process leaves unreadable)"
    for key, what in _WHAT.items():
        if found.get(key) != ident[key]:
            if key == "scenario_sha256":
                return "it is a run of another scenario text"
            return f"it is a run with {what} {found.get(key)!r}, this one has {ident[key]!r}"
    return None


def partials(out_dir: Path) -> list[Path]:
    """The unfinished runs of ``out_dir`` (``.NAME.partial-*`` beside it), newest first."""
    out_dir = Path(out_dir)
    found = [p for p in out_dir.parent.glob(f".{out_dir.name}.partial-*") if p.is_dir()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def plan(out_dir: Path, ident: dict, incomplete_marker: str) -> tuple[Path | None, bool]:
    """Where ``--resume`` continues a run of ``out_dir``.

    Returns
    -------
    (partial, complete) : (Path or None, bool)
        ``partial``: the unfinished directory to continue (None: start the run);
        ``complete``: ``out_dir`` is already the finished run, nothing to do.

    Raises
    ------
    hifi.ScenarioError
        ``out_dir`` or its unfinished directory is a run of another scenario, seed, span or
        version, or a netCDF run (key ``--resume``, exit status 2).
    """
    out_dir = Path(out_dir)
    if out_dir.exists():
        why = mismatch(read_identity(out_dir), ident)
        if why is not None:
            raise ScenarioError(f"cannot resume into {out_dir}: {why}; give another --out, or --overwrite "
                                f"without --resume to replace it", key="--resume")
        return None, True
    resumable = [p for p in partials(out_dir) if (p / incomplete_marker).is_file()]
    for partial in resumable:
        if mismatch(read_identity(partial), ident) is None:
            return partial, False
    if resumable:
        why = mismatch(read_identity(resumable[0]), ident)
        raise ScenarioError(f"cannot resume {out_dir} from {resumable[0]}: {why}; delete that directory to "
                            f"start again", key="--resume")
    return None, False
