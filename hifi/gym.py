"""A Gymnasium environment over a hifi scenario: a vehicle driven by the agent, sensors observed.

::

    from hifi.gym import HifiEnv
    env = HifiEnv("examples/yard.toml", vehicle="robot", goal_m=(8.0, 4.0),
                  observe={"lidar": ["distance_noisy"], "imu": ["specific_force", "angular_rate"]})
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Each episode is a :class:`hifi.run.session.Session` of a fresh :class:`hifi.Simulation` (a
vehicle integrates its path from its start, so a run is not rewound): ``reset(seed=s)`` runs
the scenario with seed ``s``, so two resets with one seed give the same observations, bit for
bit, and the same sensor noise.

Spaces
------
- **Action**: ``Box([-v_max, -steer_max], [v_max, steer_max])``, float32: the commanded speed
  [m/s] and front-wheel steering angle [deg] of a ``drive`` command, the limits the vehicle's
  own (``max_speed_m_s``, ``max_steer_deg``; reversing allowed). An action outside it raises
  ``ValueError``: the agent's bug is not clipped away silently.
- **Observation**: a ``Dict`` with one entry per observed ``"model/variable"``, its shape and
  dtype from the model's frame layout (:meth:`hifi.api.model.Model.frame_layout`): a lidar's
  range image ``(steps, layers)``, its points ``x_noisy``/``y_noisy``/``z_noisy`` on the same
  fixed grid, a camera's image, an IMU's 3-vectors, a GNSS receiver's fix. Floats are float32,
  with no return (NaN) as 0; booleans int8 0/1. The entry holds the newest frame published by the
  step's time (zeros before the first). ``"vehicle"`` adds the true ``[x, y, yaw, speed]`` of the
  driven body (scene frame, m and rad, m/s) unless ``observe_vehicle=False``.

Reward and end
--------------
By default the goal-reaching reward: the distance gained toward ``goal_m`` in the step [m],
``goal_bonus`` when within ``goal_radius_m`` (the episode then terminates). ``reward`` and
``terminated`` may be any callables of a :class:`Step`. The episode is truncated when the
scenario's ``duration_s`` is reached.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .run import scenario as _scenario
from .run.session import Observations
from .world.motion import oriented_boxes


@dataclass(frozen=True)
class Step:
    """What the reward and termination callables see after a step."""

    time_s: float                 #: simulated time [s]
    position_m: np.ndarray        #: the vehicle's true position, scene frame [m]
    yaw_rad: float                #: its heading [rad]
    speed_m_s: float              #: its speed along its heading [m/s]
    goal_distance_m: float        #: horizontal distance to the goal [m] (NaN without one)
    last_goal_distance_m: float   #: the same before the step [m]
    action: np.ndarray            #: the action of the step
    observations: Observations    #: every frame published in the step (hifi.run.session)


def _space(shape, dtype) -> spaces.Box:
    dtype = np.dtype(dtype)
    if dtype == bool:
        return spaces.Box(0, 1, shape, np.int8)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return spaces.Box(info.min, info.max, shape, dtype)
    return spaces.Box(-np.inf, np.inf, shape, np.float32)


class HifiEnv(gym.Env):
    """A hifi scenario as a Gymnasium environment (see the module's documentation).

    Parameters
    ----------
    scenario : path-like or dict
        A scenario file, or its dict (with ``base_dir``).
    vehicle : str
        The ``vehicle`` object the actions drive.
    observe : dict of str to list of str
        Model name -> the variables observed.
    goal_m : sequence of 2 floats, optional
        Goal of the default reward and termination (scene x, y [m]).
    dt_s : float
        Simulated time per step [s].
    goal_radius_m, goal_bonus : float
        The default termination radius [m] and its reward.
    reward, terminated : callable, optional
        ``f(step: Step) -> float`` / ``-> bool``, replacing the goal-reaching defaults.
    observe_vehicle : bool
        Add the ``"vehicle"`` entry (true pose and speed).
    render_mode : {"rgb_array", None}
        ``"rgb_array"``: :meth:`render` draws a bird's-eye view of the scene's objects, the
        vehicle, the goal and the newest points of the observed lidars.
    without : sequence of str
        Models of the scenario left out (for example a built-in driver that would also
        command the vehicle).
    base_dir : path-like
        Directory of a dict scenario's relative paths.
    live : hifi.LiveServer, optional
        Show every episode in Foxglove as it is played (``docs/live.md``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, scenario, vehicle: str, observe: dict, *, goal_m=None, dt_s: float = 0.1,
                 goal_radius_m: float = 0.5, goal_bonus: float = 10.0,
                 reward: Callable[[Step], float] | None = None,
                 terminated: Callable[[Step], bool] | None = None, observe_vehicle: bool = True,
                 render_mode: str | None = None, without=(), base_dir=".", live=None):
        if isinstance(scenario, dict):
            self._sc = _scenario.validate(scenario, base_dir=base_dir)
        else:
            self._sc = _scenario.load(scenario)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode = {render_mode!r}; allowed: 'rgb_array' or None")
        if not dt_s > 0:
            raise ValueError(f"dt_s = {dt_s}; allowed: > 0")
        self.render_mode = render_mode
        self.dt_s = float(dt_s)
        self.vehicle = vehicle
        self.goal_m = None if goal_m is None else np.asarray(goal_m, dtype=float)[:2]
        self.goal_radius_m = float(goal_radius_m)
        self.goal_bonus = float(goal_bonus)
        self._reward = reward
        self._terminated = terminated
        self._without = set(without)
        self._observe = {name: list(names) for name, names in observe.items()}
        self._observe_vehicle = bool(observe_vehicle)
        self._live = live
        sim = self._build()
        models = {m.name: m for m in sim.models}
        veh = models.get(vehicle)
        if veh is None or veh.model_name != "vehicle":
            allowed = sorted(m.name for m in sim.models if m.model_name == "vehicle")
            raise ValueError(f"vehicle = {vehicle!r} is not a vehicle of the scenario; allowed: {allowed}")
        entries = {}
        for name, names in self._observe.items():
            if name not in models:
                raise ValueError(f"observe: no model {name!r}; allowed: {', '.join(sorted(models))}")
            layout = models[name].frame_layout()
            if layout is None:
                raise ValueError(f"observe: model {name!r} does not declare its frame layout; "
                                 f"allowed: models whose frames have fixed shapes")
            for var in names:
                if var not in layout:
                    raise ValueError(f"observe: model {name!r} has no variable {var!r}; "
                                     f"allowed: {', '.join(layout)}")
                shape, dtype = layout[var]
                entries[f"{name}/{var}"] = _space(tuple(shape), dtype)
        if self._observe_vehicle:
            entries["vehicle"] = spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.observation_space = spaces.Dict(entries)
        v_max = float(veh.params["max_speed_m_s"])
        steer = float(veh.params["max_steer_deg"])
        self.action_space = spaces.Box(np.array([-v_max, -steer], np.float32),
                                       np.array([v_max, steer], np.float32), dtype=np.float32)
        self._lidars = [n for n in self._observe if {"x_noisy", "y_noisy"} <= set(models[n].frame_layout())]
        self._session = None
        self._obs = None
        self._points = {}
        self._last_distance = math.nan
        #: Wall-clock seconds spent in :meth:`step` and simulated seconds they covered.
        self.wall_s = 0.0
        self.simulated_s = 0.0

    def _build(self):
        from .run.simulation import Simulation
        sim = Simulation(self._sc)
        sim.models = [m for m in sim.models if m.name not in self._without]
        return sim

    # -- the episode ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode: a new session of the scenario run with ``seed`` (None: one drawn
        from the environment's generator). Returns ``(observation, info)``; ``options`` is
        not used."""
        super().reset(seed=seed)
        self.close()
        run_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        observe = list(self._observe)
        for name in self._lidars:
            if name not in observe:
                observe.append(name)
        self._session = self._build().session(None, observe=observe, seed=run_seed, live=self._live)
        self._session.__enter__()
        self._obs = {k: np.zeros(s.shape, s.dtype) for k, s in self.observation_space.spaces.items()}
        self._points = {}
        self._absorb(None)
        self._last_distance = self._goal_distance()
        return self._copy_obs(), {"time_s": 0.0, "seed": run_seed}

    def step(self, action):
        """Send ``action`` (speed [m/s], steering [deg]) as a drive command and run ``dt_s``.
        Returns ``(observation, reward, terminated, truncated, info)``."""
        if self._session is None:
            raise RuntimeError("HifiEnv.step before reset (or after close)")
        action = np.asarray(action, dtype=np.float32)
        if action.shape != self.action_space.shape or not self.action_space.contains(action):
            raise ValueError(f"action {action.tolist()} is outside the action space "
                             f"(speed_m_s in [{self.action_space.low[0]}, {self.action_space.high[0]}], "
                             f"steer_deg in [{self.action_space.low[1]}, {self.action_space.high[1]}])")
        s = self._session
        t0 = time.perf_counter()
        t_before = s.time_s
        s.command(self.vehicle, speed_m_s=float(action[0]), steer_deg=float(action[1]))
        obs = s.step(self.dt_s)
        self._absorb(obs)
        self.wall_s += time.perf_counter() - t0
        self.simulated_s += s.time_s - t_before
        pos, yaw, speed = self._vehicle_state()
        dist = self._goal_distance()
        step = Step(s.time_s, pos, yaw, speed, dist, self._last_distance, action, obs)
        self._last_distance = dist
        if self._reward is not None:
            reward = float(self._reward(step))
        elif self.goal_m is not None:
            reward = step.last_goal_distance_m - dist
        else:
            reward = 0.0
        if self._terminated is not None:
            done = bool(self._terminated(step))
        else:
            done = self.goal_m is not None and dist <= self.goal_radius_m
        if done and self._reward is None and self.goal_m is not None:
            reward += self.goal_bonus
        truncated = s.finished and not done
        return self._copy_obs(), float(reward), done, truncated, {"time_s": s.time_s}

    def close(self):
        """Close the episode's session (as an interrupted run; nothing is written)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    # -- observations -----------------------------------------------------------------------
    def _vehicle_state(self):
        s = self._session
        kin = s.sim.scene.kinematics_at(self.vehicle, s.time_s)
        yaw = float(kin.pose.rotation.as_euler("ZYX")[0])
        speed = float(np.dot(np.asarray(kin.velocity)[:2], [math.cos(yaw), math.sin(yaw)]))
        return np.asarray(kin.pose.translation, dtype=float), yaw, speed

    def _goal_distance(self) -> float:
        if self.goal_m is None:
            return math.nan
        pos, _, _ = self._vehicle_state()
        return float(math.hypot(*(pos[:2] - self.goal_m)))

    def _absorb(self, obs: Observations | None) -> None:
        if obs is not None:
            for name, names in self._observe.items():
                frame = obs.latest(name)
                if frame is None:
                    continue
                for var in names:
                    space = self.observation_space.spaces[f"{name}/{var}"]
                    data = np.asarray(frame[var])
                    if data.dtype.kind == "f":
                        data = np.nan_to_num(data, nan=0.0, posinf=0.0, neginf=0.0)
                    self._obs[f"{name}/{var}"] = data.astype(space.dtype)
            for name in self._lidars:
                frame = obs.latest(name)
                if frame is not None:
                    self._points[name] = np.stack([np.ravel(frame["x_noisy"]), np.ravel(frame["y_noisy"])], axis=1)
        if self._observe_vehicle:
            pos, yaw, speed = self._vehicle_state()
            self._obs["vehicle"] = np.array([pos[0], pos[1], yaw, speed], np.float32)

    def _copy_obs(self) -> dict:
        return {k: v.copy() for k, v in self._obs.items()}

    # -- render -----------------------------------------------------------------------------
    def render(self, size: int = 256):
        """A bird's-eye RGB image (``size`` x ``size`` x 3, uint8) around the vehicle: the
        scene's objects (their boxes at the session's time) grey, the newest lidar points
        white, the vehicle orange, the goal green. None unless ``render_mode="rgb_array"``."""
        if self.render_mode != "rgb_array" or self._session is None:
            return None
        img = np.zeros((size, size, 3), np.uint8)
        s = self._session
        pos, yaw, _ = self._vehicle_state()
        half = 12.0                                         # metres shown each side of the vehicle
        scale = size / (2 * half)

        def pix(xy):
            xy = np.atleast_2d(xy)
            col = ((xy[:, 0] - pos[0] + half) * scale).astype(int)
            row = ((half - (xy[:, 1] - pos[1])) * scale).astype(int)
            ok = (col >= 0) & (col < size) & (row >= 0) & (row < size)
            return row[ok], col[ok]

        scene = s.sim.scene
        objects = [o for o in scene.objects if o.n_faces and o.name != self.vehicle and o.name in scene.bodies]
        for o in objects:
            center, extent, box_yaw = oriented_boxes(np.asarray(o.bounds, float)[None], scene.pose_at(o.name, s.time_s))
            if extent[0, 2] < 0.05:                      # flat ground and paint: the background
                continue
            _fill_box(img, pix, center[0, :2], extent[0, :2], float(box_yaw[0]), (110, 110, 110), scale)
        for pts in self._points.values():
            r, c = pix(pts[np.all(np.isfinite(pts), axis=1)])
            img[r, c] = (255, 255, 255)
        if self.goal_m is not None:
            _fill_box(img, pix, self.goal_m, (2 * self.goal_radius_m,) * 2, 0.0, (40, 200, 60), scale)
        veh = scene.objects[scene.object_names.index(self.vehicle)]
        center, extent, box_yaw = oriented_boxes(np.asarray(veh.bounds, float)[None], scene.pose_at(self.vehicle, s.time_s))
        _fill_box(img, pix, center[0, :2], extent[0, :2], float(box_yaw[0]), (255, 140, 20), scale)
        return img


def _fill_box(img, pix, center, size, yaw: float, colour, scale: float) -> None:
    """Paint the rectangle ``size`` (length, width [m]) at ``center`` turned by ``yaw`` [rad]."""
    n_a = max(int(size[0] * scale) * 2 + 2, 2)
    n_b = max(int(size[1] * scale) * 2 + 2, 2)
    a, b = np.meshgrid(np.linspace(-size[0] / 2, size[0] / 2, n_a), np.linspace(-size[1] / 2, size[1] / 2, n_b))
    c, s = math.cos(yaw), math.sin(yaw)
    pts = np.asarray(center)[:2] + np.stack([a.ravel() * c - b.ravel() * s, a.ravel() * s + b.ravel() * c], axis=1)
    r, col = pix(pts)
    img[r, col] = colour
