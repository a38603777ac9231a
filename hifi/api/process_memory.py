"""This process's own memory: what it holds (:func:`process_rss_bytes`), its peak so far
(:func:`peak_rss_bytes`, as ``benchmarks/calibrate_memory.py`` measures it), and glibc's C heap:
:func:`trim_heap` gives its free pages back to the system, :func:`steady_heap` keeps the pages of
the frames' arrays between frames while models step. Where the C library is not glibc the heap
functions do nothing.

The run's cost and the memory the system can still give it are :mod:`hifi.api.estimate`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager


def process_rss_bytes() -> int:
    """Resident memory of this process now [B] (``/proc/self/statm``; else the peak so far)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def trim_heap() -> bool:
    """Give the C heap's free pages back to the operating system (glibc's ``malloc_trim(0)``).

    Returns
    -------
    bool
        True if glibc released memory, False if it had none to release or the C library is
        not glibc (then nothing is done).

    Notes
    -----
    glibc serves an allocation above its mmap threshold (128 kB at start) from its own
    mapping and unmaps it when freed, but raises the threshold to the size of such a block
    when it is freed (up to 32 MB). Loading a mesh frees several arrays of that size, so the
    later arrays of up to 32 MB come from the heap, and their pages stay resident after they
    are freed: about 25 B per triangle after loading a terrain and building its tie tables
    (``benchmarks/bench_memory.py``). Embree then allocates its BVH from fresh mappings, so
    those pages were counted in the peak while holding nothing. Called after a scene is
    loaded and after the caster's tie tables are built.
    """
    import ctypes
    lib = _libc()
    if lib is None:                            # not glibc (musl, macOS): nothing to do
        return False
    trim = lib.malloc_trim
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))


#: glibc ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD and M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Thresholds while models step (:func:`steady_heap`) [B]: arrays up to 64 MiB from the heap,
#: which keeps up to 512 MiB of free memory at its top.
STEADY_MMAP_THRESHOLD_BYTES = 64 * 2**20
STEADY_TRIM_THRESHOLD_BYTES = 512 * 2**20
#: Set afterwards: where glibc's dynamic thresholds settle once a block of 32 MiB or more has
#: been freed (the mmap threshold's ceiling on 64-bit systems, the trim threshold twice it),
#: which any run reaches; ``mallopt`` cannot give the dynamic adjustment back.
_AFTER_MMAP_THRESHOLD_BYTES = 32 * 2**20
_AFTER_TRIM_THRESHOLD_BYTES = 64 * 2**20


def _libc():
    import ctypes
    import ctypes.util
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
        lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.mallopt.restype = ctypes.c_int
        lib.malloc_trim  # noqa: B018 (glibc only: AttributeError elsewhere)
    except (OSError, AttributeError):          # not glibc (musl, macOS)
        return None
    return lib


@contextmanager
def steady_heap():
    """Context manager: the C heap keeps the pages of the frames' arrays between frames.

    A model step allocates and frees arrays of a few MB (an HDL-64E frame: about forty of
    1-3 MB). Under glibc's defaults such a block comes from a fresh ``mmap`` and is unmapped
    when freed, or, after the dynamic threshold has risen, from the heap, whose top is given
    back to the system (trimmed) as soon as 128 kB are free there; either way the next frame
    faults its working set in again, page by page. Measured on the HDL-64E pencil-beam step
    (``benchmarks/bench_sensors.py``): 73-80 ms in that regime, 44-46 ms with the heap kept,
    on a 2-core VM where a page fault costs about a microsecond. Inside, ``mallopt`` sets the
    mmap threshold to :data:`STEADY_MMAP_THRESHOLD_BYTES` and the trim threshold to
    :data:`STEADY_TRIM_THRESHOLD_BYTES`; after, the values glibc's dynamic thresholds reach
    in any run (32 and 64 MiB) and ``malloc_trim(0)`` (the pages go back). The peak resident memory is unchanged (the pages were in use at the
    peak either way). Used around :meth:`hifi.Simulation.run`'s event loop and by the
    benchmarks; does nothing where the C library is not glibc.
    """
    lib = _libc()
    if lib is not None:
        lib.mallopt(_M_MMAP_THRESHOLD, STEADY_MMAP_THRESHOLD_BYTES)
        lib.mallopt(_M_TRIM_THRESHOLD, STEADY_TRIM_THRESHOLD_BYTES)
    try:
        yield
    finally:
        if lib is not None:
            lib.mallopt(_M_MMAP_THRESHOLD, _AFTER_MMAP_THRESHOLD_BYTES)
            lib.mallopt(_M_TRIM_THRESHOLD, _AFTER_TRIM_THRESHOLD_BYTES)
            lib.malloc_trim(0)


def peak_rss_bytes() -> int:
    """Peak resident memory of this process so far [B], as the calibration measures it.

    ``VmHWM`` of ``/proc/self/status`` (the high-water mark of this address space), else
    ``resource.getrusage(RUSAGE_SELF).ru_maxrss``. On Linux ``ru_maxrss`` keeps the largest RSS
    across ``exec``, so a child started (vfork + exec) by a large process reports at least its
    parent's peak; ``VmHWM`` starts afresh at ``exec``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
