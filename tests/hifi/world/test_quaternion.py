"""hifi.world.quaternion and the quaternion-backed Pose against scipy's Rotation, bit for bit.

The expected values are scipy's (``scipy.spatial.transform``, an independent implementation):
the module exists to give scipy's bytes without scipy's cost per call, so every comparison is
exact (``tobytes``), on random rotations, tiny angles (the Taylor branches), zero components
(signed zeros) and every broadcasting case scipy has.
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from hifi.world import quaternion as Q
from hifi.world.motion import Pose, Track, compose_kinematics, Kinematics

N = 4000


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), f"{np.sum(a != b)} of {a.size} values differ"


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "XYZ", "zxy"])
def test_from_euler_is_scipys(rng, seq):
    deg = rng.uniform(-200.0, 200.0, (N, 3))
    deg[:50] *= 1e-7                                  # tiny angles
    deg[50:100, :2] = 0.0                             # pure rotations about one axis
    _same(Q.from_euler(seq, np.deg2rad(deg)), Rotation.from_euler(seq, deg, degrees=True).as_quat())
    _same(Q.from_euler(seq, np.deg2rad(deg[0]))[0], Rotation.from_euler(seq, deg[0], degrees=True).as_quat())


def test_multiply_normalize_inverse_are_scipys(rng):
    a, b = Rotation.random(N, rng=rng), Rotation.random(N, rng=rng)
    qa, qb = a.as_quat(), b.as_quat()
    _same(Q.multiply(qa, qb), (a * b).as_quat())
    _same(Q.multiply(qa[:1], qb), (a[0] * b).as_quat())
    _same(Q.multiply(qa, qb[:1]), (a * b[0]).as_quat())
    _same(Q.multiply(qa[:1], qb[:1])[0], (a[0] * b[0]).as_quat())
    _same(Q.normalize(1.7 * qa), Rotation.from_quat(1.7 * qa).as_quat())
    _same(Q.inverse(qa), a.inv().as_quat())
    with pytest.raises(ValueError, match="zero norm"):
        Q.normalize(np.zeros((1, 4)))


def test_one_row_paths_are_scipys(rng):
    """One rotation goes through Python floats (no numpy call per term): the same bits."""
    a, b = Rotation.random(300, rng=rng), Rotation.random(300, rng=rng)
    qa, qb = a.as_quat(), b.as_quat()
    deg = rng.uniform(-200.0, 200.0, (300, 3))
    for i in range(300):
        _same(Q.multiply(qa[i:i + 1], qb[i:i + 1])[0], (a[i] * b[i]).as_quat())
        _same(Q.normalize(1.3 * qa[i:i + 1])[0], Rotation.from_quat(1.3 * qa[i]).as_quat())
        _same(Q.as_matrix(qa[i:i + 1])[0], a[i].as_matrix())
        _same(Q.from_euler("xyz", np.deg2rad(deg[i]))[0], Rotation.from_euler("xyz", deg[i], degrees=True).as_quat())
        _same(Q.from_euler("ZYX", deg[i:i + 1] / 57.0)[0], Rotation.from_euler("ZYX", deg[i] / 57.0).as_quat())


@pytest.mark.parametrize("inverse", [False, True])
def test_matrix_and_apply_are_scipys(rng, inverse):
    r = Rotation.random(N, rng=rng)
    q = r.as_quat()
    v = 40.0 * rng.normal(size=(N, 3))
    _same(Q.as_matrix(q), r.as_matrix())
    _same(Q.apply(q, v, inverse), r.apply(v, inverse=inverse))                 # a stack: einsum
    _same(Q.apply(q[:1], v, inverse), r[0].apply(v, inverse=inverse))          # one rotation: matmul
    _same(Q.apply(q[:1], v[0], inverse)[0], r[0].apply(v[0], inverse=inverse))
    _same(Q.apply(q, v[0], inverse), r.apply(v[0], inverse=inverse))
    with pytest.raises(ValueError, match="broadcast"):
        Q.apply(q[:3], v[:2])


def test_from_rotvec_and_slerp_are_scipys(rng):
    rv = rng.normal(size=(N, 3))
    rv[:200] *= 1e-4                                  # below 1 mrad: the Taylor series
    rv[200:210] = 0.0
    _same(Q.from_rotvec(rv), Rotation.from_rotvec(rv).as_quat())
    tk = np.array([0.0, 1.5, 4.0, 7.0])
    rk = Rotation.from_euler("xyz", rng.uniform(-180.0, 180.0, (4, 3)), degrees=True)
    t = np.concatenate([tk, rng.uniform(0.0, 7.0, N)])
    _same(Q.Slerp(tk, rk.as_quat())(t), Slerp(tk, rk)(t).as_quat())
    with pytest.raises(ValueError, match="within the range"):
        Q.Slerp(tk, rk.as_quat())(np.array([7.5]))


def test_pose_is_the_scipy_pose(rng):
    """A chain of poses composed, applied and broadcast through the quaternions gives the bits
    of the same chain composed with scipy Rotations (the arithmetic Pose did before)."""
    rpy = rng.uniform(-180.0, 180.0, (3, 3))
    pos = rng.normal(size=(3, 3))
    poses = [Pose.from_position_rpy(p, a) for p, a in zip(pos, rpy)]
    rots = [Rotation.from_euler("xyz", a, degrees=True) for a in rpy]
    chain = poses[0].compose(poses[1]).compose(poses[2])
    r01 = rots[0] * rots[1]
    t01 = pos[0] + rots[0].apply(pos[1])
    _same(chain.quat[0], (r01 * rots[2]).as_quat())
    _same(chain.translation, t01 + r01.apply(pos[2]))
    assert chain.single and chain.rotation.single
    _same(chain.rotation.as_quat(), (r01 * rots[2]).as_quat())
    _same(chain.matrix()[:3, :3], (r01 * rots[2]).as_matrix())
    pts = rng.normal(size=(50, 3))
    _same(chain.apply(pts), (r01 * rots[2]).apply(pts) + chain.translation)
    _same(chain.inverse_apply(pts), (r01 * rots[2]).apply(pts - chain.translation, inverse=True))
    stack = chain.broadcast(5)
    ref = Rotation.from_quat(np.broadcast_to(chain.rotation.as_quat(), (5, 4)))
    _same(stack.quat, ref.as_quat())
    assert not stack.single and len(stack) == 5
    # a stack composed with a fixed child, and a Pose made from a scipy Rotation
    child = Pose(Rotation.from_euler("xyz", [10.0, -20.0, 30.0], degrees=True), np.array([0.5, 0.0, 1.0]))
    both = stack.compose(child)
    _same(both.quat, (ref * child.rotation).as_quat())
    _same(both.translation, stack.translation + ref.apply(child.translation))


def test_track_and_kinematics_are_scipys(rng):
    """A linear track's poses and rates against scipy's Slerp and rotation vectors."""
    tk = np.array([0.0, 1.0, 2.5, 4.0])
    rpy = rng.uniform(-90.0, 90.0, (4, 3))
    track = Track(tk, rng.normal(size=(4, 3)), rpy)
    t = np.concatenate([[-1.0, 0.0, 1.0, 4.0, 5.0], rng.uniform(0.0, 4.0, 200)])
    rk = Rotation.from_euler("xyz", rpy, degrees=True)
    _same(track.at(t).quat, Slerp(tk, rk)(np.clip(t, 0.0, 4.0)).as_quat())
    _same(track.at(1.7).quat[0], Slerp(tk, rk)(1.7).as_quat())
    kin = track.kinematics(t)
    seg = np.clip(np.searchsorted(tk, t, side="right") - 1, 0, 2)
    body_rate = (rk[seg].inv() * rk[seg + 1]).as_rotvec() / np.diff(tk)[seg][:, None]
    inside = (t >= 0.0) & (t < 4.0)
    _same(kin.angular_rate[inside], Slerp(tk, rk)(t[inside]).apply(body_rate[inside]))
    parent = Kinematics.at_rest(Pose.from_position_rpy([1.0, 2.0, 0.0], [0.0, 0.0, 30.0]).broadcast(len(t)))
    up = compose_kinematics(parent, kin)
    _same(up.velocity, parent.velocity + parent.pose.rotation.apply(kin.velocity))


def test_cross_is_numpys(rng):
    """compose_kinematics' cross product: numpy.cross's bits, broadcast (n, 3) x (3,) too."""
    from hifi.world.motion import _cross
    a, b = 10.0 * rng.normal(size=(N, 3)), 10.0 * rng.normal(size=(N, 3))
    _same(_cross(a, b), np.cross(a, b))
    _same(_cross(a[0], b), np.cross(a[0], b))
    _same(_cross(a[0], b[0]), np.cross(a[0], b[0]))


def test_kept_poses_are_the_computed_ones():
    """Scene.pose_at keeps single poses; a kept one has the bytes of one computed afresh (a
    regression test of the cache: same body, same time, same motion), is read-only, and a
    fixed root body's own arrays are left writable."""
    from hifi.world.scene import Scene
    scene = Scene()
    root_pos = np.array([1.0, 2.0, 3.0])
    scene.add_body("base", "object", Pose.from_position_rpy(root_pos, [0.0, 0.0, 10.0]))
    scene.add_body("arm", "object", Track([0.0, 2.0], [[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [0, 0, 90]]), parent="base")
    scene.add_body("tip", "sensor", Pose.from_position_rpy([0.0, 0.5, 0.0], [5.0, 0.0, 0.0]), parent="arm")
    first = scene.pose_at("tip", 0.7)
    again = scene.pose_at("tip", 0.7)
    assert again is first and not first.translation.flags.writeable
    fresh = scene._pose_at("tip", np.asarray(0.7))
    _same(first.quat, fresh.quat)
    _same(first.translation, fresh.translation)
    scene.pose_at("base", 0.7)
    assert root_pos.flags.writeable


def test_vehicle_track_keeps_poses_per_version():
    """A driven track's kept pose at a time beyond its last node is not reused once the track
    has grown (regression test of VehicleTrack.at's cache against a fresh evaluation)."""
    from hifi.world.vehicle import VehicleTrack
    track = VehicleTrack([0.0, 0.0, 0.0], 0.0, wheelbase_m=2.5, reach_m=100.0)
    row = np.zeros(11)
    row[[0, 3, 6, 8]] = 1.0, 0.1, 2.0, 0.2          # x, yaw, forward speed, yaw rate
    coefs = np.zeros((1, 3, 6))
    coefs[0, :, 0] = 0.0, 0.0, 0.0
    coefs[0, 0, 1], coefs[0, 2, 1] = 1.0, 0.1
    before = track.at(1.5)
    assert track.at(1.5) is before
    track.append([1.0], row[None, :], coefs)
    after = track.at(1.5)
    assert after is not before
    p, _, _, zrp = track._eval(np.array([1.5]), derivatives=False)
    fresh = track._pose(p, zrp, scalar=True)
    _same(after.quat, fresh.quat)
    _same(after.translation, fresh.translation)
    stack = track.at(np.array([0.5, 1.5]))
    assert track.at(np.array([0.5, 1.5])) is stack
    _same(stack.quat[1], fresh.quat[0])
