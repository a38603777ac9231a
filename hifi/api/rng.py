"""Random streams derived from the scenario seed.

A stream is keyed by the seed, the model's name, the frame index and a purpose, through
``numpy.random.SeedSequence(seed, spawn_key=...)``, so a frame's random numbers do not depend
on which MPI rank computed it, on the number of ranks or on the order frames were computed.
"""

from __future__ import annotations

import zlib

import numpy as np


def _key(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def stream(seed: int, name: str, frame: int = -1, purpose: str = "noise") -> np.random.Generator:
    """Independent generator for (seed, model name, frame, purpose).

    Parameters
    ----------
    seed : int
        Scenario seed (>= 0).
    name : str
        Model (sensor) name.
    frame : int
        Frame index; -1 for per-run draws (e.g. a lidar's fixed per-laser bias).
    purpose : str
        Distinguishes independent draws of one frame ("noise", "bias", ...).
    """
    ss = np.random.SeedSequence(int(seed), spawn_key=(_key(name), int(frame) + 1, _key(purpose)))
    return np.random.Generator(np.random.PCG64(ss))
