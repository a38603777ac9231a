"""Threads of a run: BLAS kept on one thread while the caster's threads cast.

numpy hands every matrix product, even the (n, 3) x (3, 3) rotations of rays and poses
(``d @ rot.T``, :meth:`scipy.spatial.transform.Rotation.apply`), to its BLAS (OpenBLAS in the
numpy wheels). OpenBLAS wakes its own pool of threads for it, and they spin waiting for more
work after the product returns, taking a core from the caster's threads (:class:`hifi.caster.
ChunkPool`): an HDL-64E step took 148-196 ms instead of 43-53 ms on a busy 2-core machine
(measured 2026-11-23). A run therefore limits BLAS to one thread while its models step, with
threadpoolctl (the library scikit-learn and joblib use for this). The products keep their bits:
OpenBLAS splits a product over threads by rows and columns of the result, never along the
3-long inner sum, so one thread computes every element with the same kernel.
"""

from __future__ import annotations

from contextlib import contextmanager

_CONTROLLER = None


def _controller():
    """One :class:`threadpoolctl.ThreadpoolController` per process (finding the libraries
    costs about a millisecond; do it once)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@contextmanager
def single_threaded_blas():
    """Context manager: BLAS (OpenBLAS, MKL, BLIS) on one thread inside, as before after.

    Used around the time manager's loop (:meth:`hifi.Simulation.run`) and by the benchmarks
    around a model step, so both time what a run does.
    """
    with _controller().limit(limits=1, user_api="blas"):
        yield
