"""hifi.gym.HifiEnv on examples/yard.toml, checked by Gymnasium's own checker.

Expected values: ``check_env`` is Gymnasium's definition of a conforming environment; two
``reset(seed=1)`` must give bit-identical observations (the environment's promise, hifi's
random streams being keyed by seed); the spaces' shapes are the models' frame layouts (the
SICK LMS111 preset with 0.5 deg steps over 270 deg: 541 beams, one layer; the IMU's 3-vectors).
"""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from hifi.gym import HifiEnv  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402

YARD = REPO_ROOT / "examples" / "yard.toml"
OBSERVE = {"lidar": ["distance_noisy"], "imu": ["specific_force", "angular_rate"]}


def _env(**kw):
    kw.setdefault("render_mode", "rgb_array")
    return HifiEnv(YARD, vehicle="robot", goal_m=(8.0, 4.0), observe=OBSERVE, **kw)


def test_check_env_passes_and_spaces_follow_the_frame_layouts():
    env = _env()
    try:
        check_env(env, skip_render_check=False)
        sp = env.observation_space.spaces
        assert sp["lidar/distance_noisy"].shape == (541, 1)      # 270 deg / 0.5 deg + 1
        assert sp["imu/specific_force"].shape == (3,)
        assert sp["vehicle"].shape == (4,)
        np.testing.assert_array_equal(env.action_space.high, [2.0, 35.0])   # the yard robot's limits
        img = env.render()
        assert img.shape == (256, 256, 3) and img.dtype == np.uint8
    finally:
        env.close()


def test_reset_with_one_seed_gives_identical_observations():
    env = _env()
    try:
        runs = []
        for _ in range(2):
            obs, _ = env.reset(seed=1)
            steps = [env.step(np.array([1.0, 5.0], np.float32))[0] for _ in range(5)]
            runs.append([obs, *steps])
        for a, b in zip(*runs):
            assert all(np.array_equal(a[k], b[k]) for k in a)
        # the lidar sees the yard: returns in the observation after a sweep (10 Hz, 0.5 s run)
        assert np.count_nonzero(runs[0][-1]["lidar/distance_noisy"]) > 100
        other, _ = env.reset(seed=2)
        env.step(np.array([1.0, 5.0], np.float32))
        assert not np.array_equal(env.step(np.array([1.0, 5.0], np.float32))[0]["imu/specific_force"],
                                  runs[0][2]["imu/specific_force"])
    finally:
        env.close()


def test_scripted_controller_reaches_the_goal_and_is_rewarded():
    env = _env(dt_s=0.2)
    try:
        obs, _ = env.reset(seed=4)
        total, done = 0.0, False
        for _ in range(100):
            x, y, yaw, _ = obs["vehicle"]
            bearing = np.arctan2(4.0 - y, 8.0 - x) - yaw
            bearing = (bearing + np.pi) % (2 * np.pi) - np.pi
            steer = float(np.clip(np.degrees(bearing), -35, 35))
            obs, reward, done, truncated, _ = env.step(np.array([1.5, steer], np.float32))
            total += reward
            if done or truncated:
                break
        assert done
        # reward = distance gained (start 8.94 m from the goal, ends within 0.5 m) + the 10 bonus
        assert 10 + 8.94 - 0.5 - 1e-6 <= total <= 10 + 8.94 + 1e-6
    finally:
        env.close()


def test_action_outside_the_space_is_refused():
    env = _env()
    try:
        env.reset(seed=1)
        with pytest.raises(ValueError, match="outside the action space"):
            env.step(np.array([5.0, 0.0], np.float32))
    finally:
        env.close()


def test_bad_construction_is_refused():
    with pytest.raises(ValueError, match="not a vehicle of the scenario"):
        HifiEnv(YARD, vehicle="crate", observe=OBSERVE)
    with pytest.raises(ValueError, match="no variable 'range'"):
        HifiEnv(YARD, vehicle="robot", observe={"lidar": ["range"]})


def test_runs_under_a_vectorised_wrapper():
    envs = gym.vector.SyncVectorEnv([lambda: _env(render_mode=None) for _ in range(2)])
    try:
        obs, _ = envs.reset(seed=[1, 2])
        assert obs["lidar/distance_noisy"].shape == (2, 541, 1)
        for _ in range(3):
            obs, reward, term, trunc, _ = envs.step(envs.action_space.sample())
        assert reward.shape == (2,)
    finally:
        envs.close()
