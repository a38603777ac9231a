"""The stepping API (hifi.run.session): a controller written here drives the patrol robot.

The robot of examples/patrol.toml, without its go/no-go planner, is driven by a pure-pursuit
controller in this file that reads the robot's pose between steps and sends ``drive``
commands through the session. Expected values and where they come from:

- the goal is reached: the controller's own criterion (within 0.5 m of the goal point);
- the files written by the session equal, byte for byte, those of a batch run given the same
  commands at the same times (:class:`hifi.run.session.CommandScript`): the definition of the
  stepping API's promise, checked on every output file;
- the frames a step returns are the file's frames (``Observations.dataset`` against the file
  read by xarray), each frame once, and only frames published by the step's time.
"""

from __future__ import annotations

import filecmp
import math
import tomllib

import numpy as np
import pytest
import xarray as xr

import hifi
from hifi.run.session import CommandScript, SessionError
from conftest import REPO_ROOT

PATROL = REPO_ROOT / "examples" / "patrol.toml"
#: A goal 3.5 m ahead and 2 m to the left of the robot's start (the origin, heading +x), before
#: the kerb at x = 5.8 m: reached in about 3 s at 1.5 m/s.
GOAL = np.array([3.5, 2.0])
DURATION_S = 4.0
STEP_S = 0.2


def _scenario(duration_s=DURATION_S) -> dict:
    d = tomllib.loads(PATROL.read_text())
    d["models"] = [m for m in d["models"] if m["name"] != "planner"]
    d["simulation"]["duration_s"] = duration_s
    return d


def _sim():
    return hifi.Simulation.from_dict(_scenario(), base_dir=PATROL.parent)


def _pursuit(pose, goal, wheelbase_m=0.6):
    """Pure pursuit to a point (Coulter 1992): steering from the goal's bearing in the body frame."""
    rel = pose.rotation.inv().apply(np.r_[goal - pose.translation[:2], 0.0])
    dist = math.hypot(rel[0], rel[1])
    curvature = 2.0 * rel[1] / max(dist, 1e-6) ** 2
    speed = 0.0 if dist < 0.3 else min(1.5, dist)
    return dist, speed, math.degrees(math.atan(wheelbase_m * curvature))


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    """The session's run (files in ``session/``) and the batch run given its commands (``batch/``)."""
    tmp = tmp_path_factory.mktemp("session")
    seen = {"lms_front": [], "gps": []}
    stamps = []
    closest = np.inf
    with _sim().session(tmp / "session", observe=["lms_front", "gps"]) as s:
        while not s.finished:
            dist, speed, steer = _pursuit(s.pose("robot"), GOAL)
            closest = min(closest, dist)
            s.command("robot", speed_m_s=speed, steer_deg=steer)
            obs = s.step(STEP_S)
            for name in seen:
                seen[name] += [f.frame for f in obs[name]]
                stamps += [(f.available_s, obs.time_s) for f in obs[name]]
        last = obs
    batch = _sim()
    batch.add_model(CommandScript("session", s.commands))
    batch.run(tmp / "batch", progress=False)
    return tmp, s, seen, stamps, closest, last


def test_controller_reaches_the_goal(driven):
    _, s, _, _, closest, _ = driven
    assert s.finished and closest < 0.5
    assert len(s.commands) == round(DURATION_S / STEP_S)


def test_session_files_equal_the_batch_run_with_the_same_commands(driven):
    tmp, *_ = driven
    names = sorted(p.name for p in (tmp / "session").iterdir())
    assert names == sorted(p.name for p in (tmp / "batch").iterdir())
    assert {"lms_front.nc", "imu.nc", "ins.nc", "robot.nc", "motion.nc"} <= set(names)
    different = [n for n in names if not filecmp.cmp(tmp / "session" / n, tmp / "batch" / n, shallow=False)]
    assert different == []


def test_each_frame_returned_once_and_only_once_published(driven):
    tmp, _, seen, stamps, _, _ = driven
    with xr.open_dataset(tmp / "session" / "lms_front.nc") as ds:
        n_file = ds.sizes["frame"]
    # every frame of the file, in order, once (25 Hz x 4 s = 100 frames)
    assert seen["lms_front"] == list(range(n_file)) == list(range(100))
    assert seen["gps"] == [0, 1, 2, 3]
    assert all(avail <= t for avail, t in stamps)


def test_observed_frames_are_the_files_frames(driven):
    tmp, _, _, _, _, last = driven
    got = last.dataset("lms_front")
    with xr.open_dataset(tmp / "session" / "lms_front.nc") as ds:
        want = ds.sel(frame=got["frame"].values).load()
    xr.testing.assert_identical(got, want)


def test_misuse_is_refused_clearly(tmp_path):
    """A step backwards, a command for an unknown or non-vehicle body, a session used after it
    closed: each a clear exception; a closed session leaves no output directory (as an
    interrupted netCDF run)."""
    out = tmp_path / "run"
    s = _sim().session(out, observe=["gps"], duration_s=2.0)
    with s:
        s.step_until(0.5)
        with pytest.raises(SessionError, match="before the session's time"):
            s.step_until(0.2)
        with pytest.raises(ValueError, match="no model 'tractor'"):
            s.command("tractor", speed_m_s=1.0)
        with pytest.raises(ValueError, match="'gps' is not a vehicle"):
            s.command("gps", speed_m_s=1.0)
        with pytest.raises(ValueError, match="not speed"):
            s.command("robot", speed=1.0)
    with pytest.raises(SessionError, match="closed"):
        s.step(0.1)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_simulation_runs_again_from_its_start(driven, tmp_path):
    """The session's simulation, its session finished, runs again: a batch run with the
    session's commands writes the batch run's bytes (a fresh simulation's: the robot back at its
    start, not where the session left it), and a second session steps from t = 0."""
    tmp, s, *_ = driven
    sim = s.sim
    assert all(m.name != "session" for m in sim.extra_models)     # the session's controller is gone
    script = sim.add_model(CommandScript("session", s.commands))
    sim.run(tmp_path / "again", progress=False)
    sim.extra_models.remove(script)
    names = sorted(p.name for p in (tmp / "batch").iterdir())
    different = [n for n in names if not filecmp.cmp(tmp / "batch" / n, tmp_path / "again" / n, shallow=False)]
    assert different == []
    with sim.session(observe=["gps"], duration_s=1.0) as again:
        obs = again.step(1.0)
        assert again.finished and [f.frame for f in obs["gps"]] == [0]
