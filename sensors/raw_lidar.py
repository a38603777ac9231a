"""BeamNG-style "raw lidar": four depth cameras around the sensor."""

from __future__ import annotations

import numpy as np

from hifi.api.model import Sensor, Var
from hifi.world.motion import rotation_from_rpy_deg
from hifi.api.params import Param

from hifi.run.dataset import annotation_var, image_coords
from .depthmap import pinhole_directions


class RawLidar(Sensor):
    """Four depth cameras at yaw 0, 90, 180 and 270 deg, each ``90 + overlap_deg`` wide.

    BeamNG.tech's raw lidar renders the surroundings with four 90-degree cameras and reads
    their depth buffers; a lidar pattern is then sampled from them. Each camera here is a
    pinhole (:func:`sensors.depthmap.pinhole_directions`) of ``resolution_x`` x
    ``resolution_y`` pixels, horizontal field ``90 + overlap_deg`` and vertical field
    ``fov_y_deg``; depth (along the camera axis) outside ``[near_m, far_m]`` is NaN.

    Variables (``frame``, ``camera``, ``row``, ``col``): ``depth`` (float32, m), ``distance``
    (radial, float32, m), ``object_id`` (int32), ``annotation`` (uint8 semantic class).
    """

    model_name = "raw_lidar"
    default_rate_hz = 10.0
    CAMERA_YAWS_DEG = (0.0, 90.0, 180.0, 270.0)
    PARAMS = {
        "resolution_x": Param("int", default=512, minimum=1, doc="columns per camera"),
        "resolution_y": Param("int", default=128, minimum=1, doc="rows per camera"),
        "fov_y_deg": Param("float", default=30.0, minimum=0.0, exclusive_minimum=True, maximum=179.0,
                           doc="vertical field of view [deg]"),
        "near_m": Param("float", default=0.1, minimum=0.0, doc="nearest depth reported [m]"),
        "far_m": Param("float", default=120.0, minimum=0.0, exclusive_minimum=True, doc="farthest depth [m]"),
        "overlap_deg": Param("float", default=0.0, minimum=0.0, maximum=60.0,
                             doc="extra horizontal field per camera beyond 90 deg [deg]"),
    }

    SIZE_PARAMS = {"resolution_x": "lower", "resolution_y": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, fitted 109 B).
    WORKING_BYTES_PER_RAY = 110.0

    def rays_per_frame(self):
        return len(self.CAMERA_YAWS_DEG) * self.params["resolution_x"] * self.params["resolution_y"]

    def frame_layout(self):
        shape = (len(self.CAMERA_YAWS_DEG), self.params["resolution_y"], self.params["resolution_x"])
        return {"depth": (shape, np.dtype(np.float32)), "distance": (shape, np.dtype(np.float32)),
                "object_id": (shape, np.dtype(np.int32)), "annotation": (shape, np.dtype(np.uint8))}

    def setup_bytes(self):
        return 32 * self.rays_per_frame()          # directions (n, 3) and cos_axis, float64

    @classmethod
    def check_params(cls, p):
        if p["far_m"] <= p["near_m"]:
            raise ValueError(f"far_m: must be > near_m ({p['near_m']})")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        d, cos_axis = pinhole_directions(p["resolution_x"], p["resolution_y"],
                                         np.radians(90.0 + p["overlap_deg"]), np.radians(p["fov_y_deg"]))
        self._dirs = np.concatenate([rotation_from_rpy_deg([0, 0, y]).apply(d.reshape(-1, 3))
                                     for y in self.CAMERA_YAWS_DEG])
        self._cos = np.tile(cos_axis.ravel(), 4)
        self._shape = (4,) + d.shape[:2]
        self._class = ctx.scene.object_table("class_id")

    def coords(self):
        p = self.params
        return {"camera": Var(("camera",), np.radians(self.CAMERA_YAWS_DEG), "rad", "camera yaw about the sensor z axis"),
                **image_coords(p["resolution_x"], p["resolution_y"])}

    def step(self, k, t):
        p = self.params
        hits, _, _ = self.cast(self._dirs, t, p["far_m"] / self._cos.min())
        depth = hits.distance * self._cos
        inside = (depth >= p["near_m"]) & (depth <= p["far_m"])
        depth = np.where(inside, depth, np.nan)
        dist = np.where(inside, hits.distance, np.nan)
        oid = np.where(inside, hits.object_id, -1).astype(np.int32)
        dims = ("camera", "row", "col")
        return {
            "depth": Var(dims, depth.reshape(self._shape).astype(np.float32), "m", "depth along the camera axis"),
            "distance": Var(dims, dist.reshape(self._shape).astype(np.float32), "m", "radial distance to the hit"),
            "object_id": Var(dims, oid.reshape(self._shape), "1", "index of the object hit, -1 for none"),
            "annotation": annotation_var(dims, self._class[oid].reshape(self._shape),
                                         self.ctx.scene.class_names),
        }
