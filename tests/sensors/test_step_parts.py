"""The sensor steps' work around the cast in parts and on other threads gives the bits of the
work in one piece on one thread: the pulsed lidars' signal chain with its draws made beforehand
(sensors.lidar.signal.chain_draws), the edge receiver over parts of its pulses on a pool
(sensors.lidar.impulse.receiver_echoes), the dataset's masked columns in chunks
(hifi.run.dataset.range_frame), Oren-Nayar's coefficients per surface, the short sums over a
pulse's sub-rays, and Sensor.beside."""

import numpy as np
import pytest

from hifi.api.model import Sensor
from hifi.caster import ChunkPool, Hits
from hifi.run.dataset import range_frame
from sensors.lidar.impulse import _TABLE_STEP_S, _response_table, receiver_echoes, sum_last_axis
from sensors.lidar.signal import ChainParams, chain_draws, lidar_signal_chain
from sensors.lidar.rotating import HDL64E_S2
from sensors.radiometry import lambertian_return, oren_nayar_backscatter, oren_nayar_coefficients

SEED = 20261128


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def pool():
    p = ChunkPool(2)
    yield p
    p.close()


@pytest.mark.parametrize("n", [1, 2, 5, 7, 8, 9, 16])
def test_sum_last_axis_is_numpys_sum(n):
    """Against numpy's own np.sum(axis=-1), bit for bit, with signed zeros, NaN and magnitudes
    from 1e-8 to 1e8 (where the order of additions shows)."""
    rng = np.random.default_rng(SEED + n)
    x = rng.standard_normal((300, 11, n)) * 10.0 ** rng.uniform(-8, 8, (300, 11, n))
    x[x > 1.5] = -0.0
    x[x < -2.5] = np.nan
    assert _same_bits(sum_last_axis(x), np.sum(x, axis=-1))
    assert _same_bits(sum_last_axis(x[:, 0, :]), np.sum(x[:, 0, :], axis=1))


def test_tabulated_response_is_the_interpolation_formula():
    """Regression test: the in-place evaluation of the tabulated response gives the bits of the
    textbook ``where(inside, y[i] + f (y[i+1] - y[i]), 0)`` it replaced, inside, outside, at the
    ends and on NaN."""
    g = _response_table(5e-9, 20e-9)
    free = dict(zip(g.__code__.co_freevars, (c.cell_contents for c in g.__closure__)))
    t, y, last = free["t"], free["y"], free["last"]

    def textbook(x):
        u = (np.asarray(x, dtype=float) - t[0]) * (1.0 / _TABLE_STEP_S)
        inside = (u >= 0.0) & (u < last)
        u = np.where(inside, u, 0.0)
        i = u.astype(np.int64)
        return np.where(inside, y[i] + (u - i) * (y[i + 1] - y[i]), 0.0)

    x = np.random.default_rng(SEED).uniform(t[0] - 1e-8, t[-1] + 1e-8, (200, 9))
    x[0, :4] = [np.nan, t[0], t[-1], t[last - 1]]
    assert _same_bits(g(x), textbook(x))


def _edge_bundles(p=700, n=7):
    """Sub-ray ranges and powers of edge pulses: two surfaces 0 to 3 m apart, some misses."""
    rng = np.random.default_rng(SEED)
    near = rng.uniform(5.0, 60.0, (p, 1))
    far = near + rng.uniform(0.0, 3.0, (p, 1))
    r = np.where(rng.random((p, n)) < 0.5, near, far)
    r[rng.random((p, n)) < 0.1] = np.nan
    w = rng.uniform(1e-6, 1e-4, (p, n))
    return r, np.where(np.isfinite(r), w, 0.0)


@pytest.mark.parametrize("timing", ["centroid", "peak"])
@pytest.mark.parametrize("mode", ["strongest", "strongest_last"])
def test_receiver_echoes_in_parts_on_threads_are_the_whole(pool, timing, mode):
    """Regression test: the receiver over parts of its pulses on two threads gives the bits of
    the receiver over all of them at once."""
    r, w = _edge_bundles()
    kw = dict(mode=mode, pulse_width_s=5e-9, tail_s=20e-9, threshold_w=5e-6, timing=timing)
    whole = receiver_echoes(r, w, **kw)
    parts = receiver_echoes(r, w, threads=pool, **kw)
    assert all(_same_bits(a, b) for a, b in zip(whole, parts))


def test_signal_chain_with_draws_made_beforehand_is_the_chain(pool):
    """Regression test: the chain with its three streams' numbers drawn beforehand
    (chain_draws), whole or over parts of the pulses, gives the bits of the chain drawing them
    itself."""
    chain = ChainParams.from_params({k: v.default for k, v in HDL64E_S2.PARAMS.items()})
    rng = np.random.default_rng(SEED)
    n = 5000
    d = np.where(rng.random(n) < 0.2, np.nan, rng.uniform(0.5, 130.0, n))
    rho = rng.uniform(0.0, 1.0, n)
    app = rho * rng.uniform(0.0, 1.0, n)
    bias, gain = rng.normal(0.0, 0.03, n), rng.lognormal(0.0, 0.25, n)

    def streams():
        return [np.random.default_rng([SEED, i]) for i in range(3)]

    def run(a=0, b=n, draws=None):
        rngs = streams() if draws is None else [None] * 3
        return lidar_signal_chain(d[a:b], rho[a:b], app[a:b], chain, bias_m=bias[a:b], gain=gain[a:b],
                                  noise_rng=rngs[0], detection_rng=rngs[1], intensity_rng=rngs[2], draws=draws)

    ref = run()
    draws = chain_draws(n, *streams())
    assert all(_same_bits(a, b) for a, b in zip(ref[:6], run(draws=draws)[:6]))
    parts = [run(a, b, type(draws)(draws.noise[a:b], draws.detection[:, a:b], draws.intensity[a:b]))
             for a, b in ((0, 1234), (1234, n))]
    assert all(_same_bits(a, np.concatenate(b)) for a, b in zip(ref[:6], zip(*(q[:6] for q in parts))))


def test_range_frame_columns_in_chunks_are_the_columns(pool):
    """Regression test: range_frame's masked and copied columns built in chunks on a pool are
    those built at once."""
    rng = np.random.default_rng(SEED)
    n = 3 * 65536 + 17
    hit = rng.random(n) < 0.7
    dist = np.where(hit, rng.uniform(1.0, 100.0, n), np.nan)
    hits = Hits(dist, rng.standard_normal((n, 3)), rng.standard_normal((n, 3)), rng.standard_normal((n, 3)),
                np.where(hit, rng.integers(0, 9, n), -1).astype(np.int32), np.zeros(n, np.int32),
                np.zeros(n, np.int8))
    kw = dict(timestamp=0.25, yaw=np.zeros(n), pitch=np.zeros(n), hits=hits, detected=hit & (rng.random(n) < 0.9),
              distance_noisy=dist + 0.01, points_noisy=rng.standard_normal((n, 3)), intensity=rng.random(n))
    whole = range_frame(("ray",), (n,), **kw)
    chunks = range_frame(("ray",), (n,), threads=pool, **kw)
    assert whole.keys() == chunks.keys()
    assert all(_same_bits(whole[k].data, chunks[k].data) for k in whole)


def test_oren_nayar_coefficients_per_surface_are_the_per_hit_values():
    """Regression test: Oren-Nayar's A and B computed per surface and gathered per hit give the
    bits of computing them from each hit's roughness (backscatter and Lambertian return)."""
    rng = np.random.default_rng(SEED)
    table = np.r_[0.0, rng.uniform(0.0, 0.6, 7), np.nan]          # per object, -1 (a miss) last
    oid = rng.integers(-1, 8, 4000)
    cos_i = rng.uniform(-0.1, 1.0, 4000)
    a, b = oren_nayar_coefficients(table)
    assert _same_bits(oren_nayar_backscatter(cos_i, table[oid]),
                      oren_nayar_backscatter(cos_i, coefficients=(a[oid], b[oid])))
    r = rng.uniform(0.0, 50.0, 4000)
    assert _same_bits(lambertian_return(0.4, cos_i, r, 0.1, roughness_rad=table[oid]),
                      lambertian_return(0.4, cos_i, r, 0.1, coefficients=(a[oid], b[oid])))


class _Caster:
    def __init__(self, threads):
        self.threads = threads


class _Ctx:
    def __init__(self, threads):
        self.caster = _Caster(threads)


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_beside_returns_the_value_or_raises_the_error(threads):
    pool = None if threads is None else ChunkPool(threads)
    sensor = Sensor("s")
    sensor.ctx = _Ctx(pool)
    try:
        assert _same_bits(sensor.beside(lambda: np.random.default_rng(SEED).standard_normal(1000))(),
                          np.random.default_rng(SEED).standard_normal(1000))

        def fail():
            raise ValueError("inside")
        with pytest.raises(ValueError, match="inside"):
            sensor.beside(fail)()
    finally:
        if pool is not None:
            pool.close()
