"""Ground-truth pose sensor: position, orientation and velocity of its mount at its own rate."""

from __future__ import annotations

import numpy as np

from hifi.api.model import Sensor, Var


class PoseSensor(Sensor):
    """Ground-truth pose of the sensor body in the scene frame, no noise.

    Variables per frame: ``position`` (xyz, m), ``orientation`` (quaternion x, y, z, w,
    sensor -> scene), ``velocity`` (xyz, m/s, central difference), ``timestamp`` (s). Useful
    as an odometry ground truth at any rate, and as the simplest model for the time manager.
    """

    model_name = "pose"
    default_rate_hz = 100.0
    PARAMS = {}

    def frame_layout(self):
        f8 = np.dtype(np.float64)
        return {"timestamp": ((), f8), "position": ((3,), f8), "orientation": ((4,), f8), "velocity": ((3,), f8)}

    def coords(self):
        return {"xyz": Var(("xyz",), np.array(["x", "y", "z"]), "1", "scene-frame axis"),
                "quat": Var(("quat",), np.array(["x", "y", "z", "w"]), "1", "quaternion component")}

    def step(self, k, t):
        pose = self.pose_at(t)
        vel = self.ctx.scene.velocity_at(self.name, t)
        return {
            "timestamp": Var((), np.float64(t), "s", "time of the measurement since simulation start"),
            "position": Var(("xyz",), np.asarray(pose.translation, dtype=float), "m", "sensor origin, scene frame"),
            "orientation": Var(("quat",), pose.rotation.as_quat(), "1", "orientation quaternion sensor -> scene"),
            "velocity": Var(("xyz",), np.asarray(vel, dtype=float), "m s-1", "velocity of the sensor origin, scene frame"),
        }
