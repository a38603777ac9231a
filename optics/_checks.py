"""Parameter checks shared by the optics package.

Each check raises ``ValueError`` naming the parameter, the value received (``!r``) and what is
allowed, so the user can fix the configuration. Checks are for configuration values, not for
data arrays: bad data points are masked or clipped by the kernels, never raised.
"""

from __future__ import annotations

import math


def positive(name: str, value) -> float:
    """Return ``float(value)`` if it is finite and > 0, else raise ``ValueError``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r}: must be a finite number > 0") from None
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name} = {value!r}: must be a finite number > 0")
    return v


def non_negative(name: str, value) -> float:
    """Return ``float(value)`` if it is finite and >= 0, else raise ``ValueError``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r}: must be a finite number >= 0") from None
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{name} = {value!r}: must be a finite number >= 0")
    return v


def finite(name: str, value) -> float:
    """Return ``float(value)`` if it is finite, else raise ``ValueError``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r}: must be a finite number") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} = {value!r}: must be a finite number")
    return v


def in_closed_range(name: str, value, low: float, high: float) -> float:
    """Return ``float(value)`` if ``low <= value <= high``, else raise ``ValueError``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r}: must be a number in [{low}, {high}]") from None
    if not (low <= v <= high):
        raise ValueError(f"{name} = {value!r}: must be a number in [{low}, {high}]")
    return v


def integer_in_range(name: str, value, low: int, high: int) -> int:
    """Return ``int(value)`` if it is an integer with ``low <= value <= high``."""
    message = f"{name} = {value!r}: must be an integer in [{low}, {high}]"
    if isinstance(value, bool):
        raise ValueError(message)
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if v != value or not (low <= v <= high):
        raise ValueError(message)
    return v
