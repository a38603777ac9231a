"""RayCaster.cast's ``out`` (the caller's arrays, outputs it does not read left out) and
ChunkPool.map's chunks pulled by one task per thread."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hifi.api import meshes
from hifi.caster import ChunkPool, Hits, RayCaster
from hifi.caster.pool import CHUNK_RAYS
from hifi.world.motion import Pose, Track
from hifi.world.scene import Material, Scene

_DTYPES = {"object_id": np.int32, "face_index": np.int32, "bounces": np.int8}


def _scene(glass: bool, mirror: bool = True) -> Scene:
    """Ground, house, a 45-degree mirror (or, without ``mirror``, a diffuse plate there), a moving
    car; with ``glass`` a pane in front of the house."""
    scene = Scene()
    scene.add_material(Material("mirror", 0.1, mirror=1.0))
    scene.add_material(Material("white", 0.8))
    scene.add_object("ground", meshes.plane([200, 200]), "white")
    scene.add_object("house", meshes.box([10, 6, 8]), "white", Pose.from_position_rpy([20, -14, 4], [0, 0, 10]))
    scene.add_object("mirror", meshes.plane([4, 4]), "mirror" if mirror else "white",
                     Pose.from_position_rpy([-6, 0, 2], [0, 90, -45]))
    scene.add_object("car", meshes.car(), local=Track([0.0, 0.1], [[-10, 5, 0], [-8, 6, 0]],
                                                      [[0, 0, 0], [0, 0, 30]]))
    if glass:
        scene.add_material(Material("glass", 0.0, kind="glass", refractive_index=1.5, transmittance=0.9))
        scene.add_object("pane", meshes.plane([12, 12]), "glass", Pose.from_position_rpy([12, -9, 4], [0, 90, 10]))
    return scene


def _out(n: int, keep) -> Hits:
    """Arrays for the fields in ``keep`` (filled with garbage: the cast must overwrite them), None
    for the others."""
    arrays = {}
    for name in Hits.__dataclass_fields__:
        if name in keep:
            shape = (n, 3) if name in ("point", "normal", "direction") else (n,)
            arrays[name] = np.full(shape, 7, dtype=_DTYPES.get(name, np.float64))
        else:
            arrays[name] = None
    return Hits(**arrays)


@pytest.mark.parametrize("glass, mirror", [(False, True), (True, True), (False, False)])
@pytest.mark.parametrize("keep", [("distance", "point", "object_id"),
                                  ("normal", "direction", "face_index", "bounces")])
def test_cast_into_out_has_the_bytes_of_a_fresh_cast(glass, mirror, keep):
    """Regression: each output given in ``out`` holds the bytes of a cast into fresh arrays (rays
    through the mirror, onto the moving car and, with ``glass``, through the pane; without a
    mirror or a pane and without normals in ``out`` the static hits' normals are not computed);
    the fields left out stay None, and ``out`` is what the cast returns. Twice into the same
    arrays: the second cast overwrites the first (bounce counts reset)."""
    scene = _scene(glass, mirror)
    rng = np.random.default_rng(11)
    n = 20_000
    dirs = rng.normal(size=(n, 3))
    dirs[:, 2] *= 0.3
    origins = np.broadcast_to(np.array([0.3, -0.2, 1.7]), (n, 3))
    caster = RayCaster(scene, n_threads=2)
    ref = caster.cast(origins, dirs, 0.05, 100.0)
    assert (ref.bounces > 0).sum() > (50 if mirror else -1) and (ref.object_id == 3).sum() > 20
    assert np.isnan(ref.distance).sum() > 50 and (ref.object_id == 1).sum() > 50
    out = _out(n, keep)
    caster.cast(origins, -dirs, 0.05, 100.0, out=out)             # other rays first, then these
    got = caster.cast(origins, dirs, 0.05, 100.0, out=out)
    assert got is out
    for name in Hits.__dataclass_fields__:
        if name in keep:
            assert getattr(got, name).tobytes() == getattr(ref, name).tobytes(), name
        else:
            assert getattr(got, name) is None, name
    surf = caster.cast_surfaces(origins, dirs, 0.05, 100.0, out=_out(n, keep))
    full = caster.cast_surfaces(origins, dirs, 0.05, 100.0)
    for name in keep:
        assert getattr(surf.hits, name).tobytes() == getattr(full.hits, name).tobytes(), name
    assert surf.throughput.tobytes() == full.throughput.tobytes()
    if glass:
        assert (full.throughput < 1).sum() > 20


def test_cast_out_of_the_wrong_shape_raises():
    caster = RayCaster(_scene(False), n_threads=1)
    n = 10
    bad = Hits(np.empty(n + 1), None, None, None, None, None, None)
    with pytest.raises(ValueError, match=r"out\.distance: expected a writeable C-contiguous float64 array of shape \(10,\)"):
        caster.cast(np.zeros((n, 3)), np.tile([1.0, 0, 0], (n, 1)), out=bad)
    bad = Hits(None, None, None, None, np.empty(n, dtype=np.int64), None, None)
    with pytest.raises(ValueError, match=r"out\.object_id: expected .* int32 array"):
        caster.cast(np.zeros((n, 3)), np.tile([1.0, 0, 0], (n, 1)), out=bad)


@pytest.mark.parametrize("n", [0, 5000, 3 * CHUNK_RAYS + 17])
def test_chunk_pool_map_gives_every_chunk_once_in_order(n):
    """``map`` returns ``fn(a, b)`` of consecutive chunks covering ``range(n)``, in order, as many
    per thread, whichever thread pulled them (analytic: the bounds of np.linspace over the
    chunks); a second call with the same ``n`` cuts the same chunks."""
    pool = ChunkPool(2)
    seen = []
    lock = threading.Lock()

    def fn(a, b):
        with lock:
            seen.append(threading.get_ident())
        return (a, b)

    try:
        chunks = pool.map(fn, n)
        again = pool.map(lambda a, b: (a, b), n)
    finally:
        pool.close()
    tasks = min(2, max(1, n // 2048))
    n_chunks = tasks * max(1, -(-n // (tasks * CHUNK_RAYS)))
    expected = np.linspace(0, n, n_chunks + 1).astype(int)
    assert chunks == again == [(int(a), int(b)) for a, b in zip(expected[:-1], expected[1:])]
    assert all(b - a <= CHUNK_RAYS for a, b in chunks)


def test_chunk_pool_map_raises_a_chunks_error():
    pool = ChunkPool(2)

    def fn(a, b):
        if a > 0:
            raise ArithmeticError(f"chunk {a}")
        return a

    try:
        with pytest.raises(ArithmeticError, match="chunk"):
            pool.map(fn, 4 * CHUNK_RAYS)
    finally:
        pool.close()


def test_chunk_pool_map_raises_only_when_every_chunk_is_done():
    """A chunk's error leaves ``map`` only after the other chunks have finished: none is still
    writing into the caller's arrays when the caller handles it (whichever thread pulled the
    failing chunk: the calling thread pulls chunks itself)."""
    pool = ChunkPool(2)
    finished = []

    def fn(a, b):
        if a == 0:
            raise ArithmeticError("chunk 0")
        time.sleep(0.2)
        finished.append(a)
        return a

    try:
        with pytest.raises(ArithmeticError, match="chunk 0"):
            pool.map(fn, 5000)                # two chunks, one per thread
    finally:
        pool.close()
    assert finished == [2500]


def test_cast_out_with_no_array_raises():
    caster = RayCaster(_scene(False), n_threads=1)
    with pytest.raises(ValueError, match="every field is None"):
        caster.cast(np.zeros((3, 3)), np.tile([1.0, 0, 0], (3, 1)), out=Hits(*[None] * 7))


@pytest.mark.parametrize("with_normal", [True, False])
def test_static_hits_and_unit_rays32_have_the_oracles_bytes(with_normal):
    """hifi._cast_kernel.static_hits (with and without normals) and unit_rays32 against their
    numpy oracles (tests/oracles/cast_kernel.py) on made-up Embree arrays: misses, hits on an
    edge, a face lookup; rays of any length from one shared origin and from a row each
    (regression: same bytes)."""
    import hifi._cast_kernel as ck
    from tests.oracles import cast_kernel as oracle

    rng = np.random.default_rng(5)
    n = 5000
    tfar = rng.uniform(0.1, 80.0, n).astype(np.float32)
    geom_id = rng.integers(-1, 3, n).astype(np.int32)
    prim_id = rng.integers(0, 40, n).astype(np.int32)
    ng = rng.normal(size=(n, 3)).astype(np.float32)
    u = rng.uniform(0, 1, n).astype(np.float32)
    v = (rng.uniform(0, 1, n) * (1 - u)).astype(np.float32)
    u[::7] = 1e-7                                     # on an edge
    geom_object = np.array([4, 0, 2], dtype=np.int32)
    lookup = (rng.permutation(120).astype(np.int32), np.array([0, 40, 80], dtype=np.int64))
    bary = (np.float32(2.0**-16), np.float32(1 - 2.0**-16))
    outs = []
    for fn in (ck.static_hits, oracle.static_hits):
        out = (np.empty(n), np.empty(n, np.int32), np.empty(n, np.int32), np.empty((n, 3)), np.empty(n, bool))
        fn(tfar, geom_id, prim_id, ng, u, v, geom_object, *lookup, *bary, with_normal, *out)
        outs.append(out)
    for a, b in zip(*outs):
        assert a.tobytes() == b.tobytes()
    assert np.isnan(outs[0][3]).all() != with_normal and outs[0][4].any()

    d_in = rng.normal(size=(n, 3)) * rng.uniform(0.1, 10.0, (n, 1))
    offset = np.array([3.0, -2.0, 0.5])
    for o in (np.array([[0.3, 0.2, 1.7]]), rng.normal(size=(n, 3)) * 50):
        outs = []
        for fn in (ck.unit_rays32, oracle.unit_rays32):
            out = (np.empty((n, 3)), np.empty((n, 3), np.float32), np.empty((n, 3), np.float32))
            fn(o, offset, d_in, out[0], out[1], out[2])
            outs.append(out)
        for a, b in zip(*outs):
            assert a.tobytes() == b.tobytes()
