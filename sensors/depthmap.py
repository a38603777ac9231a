"""Ground-truth depth map from a pinhole camera (BlenSor, Gschwandtner et al. 2011, sec. 3.6)."""

from __future__ import annotations

import numpy as np

from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.caster import Hits

from hifi.run.dataset import RANGE_VARIABLES, annotation_var, axis_coords, image_coords, sensor_pose_vars


def pinhole_directions(resolution_x: int, resolution_y: int, fov_x_rad: float, fov_y_rad: float | None = None):
    """Unit ray directions (rows, cols, 3) of a pinhole camera looking along sensor +x.

    Parameters
    ----------
    resolution_x, resolution_y : int
        Image width (columns) and height (rows) [pixel].
    fov_x_rad : float
        Full horizontal field of view [rad], < pi.
    fov_y_rad : float, optional
        Full vertical field of view [rad]; default: square pixels.

    Returns
    -------
    directions : ndarray, shape (rows, cols, 3)
        Unit vectors in the sensor frame (x forward, y left, z up). Row 0 is the top of the
        image, column 0 its left; rays pass through pixel centres.
    cos_axis : ndarray, shape (rows, cols)
        Cosine of each ray's angle to the optical axis (depth = distance * cos_axis).

    Notes
    -----
    The focal length in pixels is ``fx = (W / 2) / tan(fov_x / 2)``; with square pixels the
    vertical field of view follows as ``2 atan((H / 2) / fx)``, otherwise
    ``fy = (H / 2) / tan(fov_y / 2)``.
    """
    w, h = int(resolution_x), int(resolution_y)
    fx = (w / 2.0) / np.tan(fov_x_rad / 2.0)
    fy = fx if fov_y_rad is None else (h / 2.0) / np.tan(fov_y_rad / 2.0)
    u = (np.arange(w) + 0.5 - w / 2.0) / fx          # to the right, normalised image coordinate
    v = (np.arange(h) + 0.5 - h / 2.0) / fy          # downward
    uu, vv = np.meshgrid(u, v)
    d = np.stack([np.ones_like(uu), -uu, -vv], axis=-1)
    norm = np.linalg.norm(d, axis=-1)
    return d / norm[..., None], 1.0 / norm


class DepthMap(Sensor):
    """Ground-truth depth map: ``distance``, ``depth``, ``object_id``, ``annotation`` per pixel.

    A pinhole camera looking along the sensor's +x axis (image right is sensor -y, image up is
    sensor +z). Every pixel casts one ray through its centre at the frame time; no noise. Pixels
    that see nothing within ``max_range_m`` hold NaN, object id -1 and annotation 0.

    Variables (``frame``, ``row``, ``col``), float32 as a depth image: ``distance`` (radial, m),
    ``depth`` (along the optical axis, m), ``x``, ``y``, ``z`` (true hit point, scene frame, m);
    ``object_id`` (int32), ``annotation`` (uint8 semantic class id; the class names are in the
    variable's ``flag_values`` / ``flag_meanings``); per frame ``timestamp`` (the instant the
    image is taken, every pixel at once) and the sensor pose ``sensor_position`` /
    ``sensor_orientation`` at that instant.

    References
    ----------
    M. Gschwandtner, R. Kwitt, A. Uhl, W. Pree, "BlenSor: Blender Sensor Simulation Toolbox",
    ISVC 2011, LNCS 6939, sec. 3.6.
    """

    model_name = "depthmap"
    default_rate_hz = 10.0
    PARAMS = {
        "resolution_x": Param("int", default=640, minimum=1, doc="image width [pixel]"),
        "resolution_y": Param("int", default=480, minimum=1, doc="image height [pixel]"),
        "fov_x_deg": Param("float", default=90.0, minimum=0.0, exclusive_minimum=True, maximum=179.0,
                           doc="full horizontal field of view [deg]"),
        "max_range_m": Param("float", default=1000.0, minimum=0.0, exclusive_minimum=True,
                             doc="farthest distance reported [m]"),
    }

    SIZE_PARAMS = {"resolution_x": "lower", "resolution_y": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, fitted 73 B, 70 B again on 2026-11-28): the
    #: rays in the scene frame, the caster's hits and the float32 conversions of one frame, as
    #: the general cast makes them. A frame made inside the cast (:meth:`_fused_images`, a scene
    #: where only static surfaces end rays, as in the calibration scene) fits 1 B, but a model's
    #: estimate is made before it knows its scene, and a mirror, a pane, water or a moving
    #: object takes the general cast: the value stays that path's.
    WORKING_BYTES_PER_RAY = 75.0

    def rays_per_frame(self):
        return self.params["resolution_x"] * self.params["resolution_y"]

    def frame_layout(self):
        shape = (self.params["resolution_y"], self.params["resolution_x"])
        f4, i4, u1 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint8)
        return {"distance": (shape, f4), "depth": (shape, f4), "x": (shape, f4), "y": (shape, f4),
                "z": (shape, f4), "object_id": (shape, i4), "annotation": (shape, u1),
                "timestamp": ((), np.dtype(np.float64)), "sensor_position": ((3,), np.dtype(np.float64)),
                "sensor_orientation": ((4,), np.dtype(np.float64))}

    def setup_bytes(self):
        # directions (rows, cols, 3) and cos_axis, float64. The general cast's distance and
        # point, kept from frame to frame (_cast_out), are counted in WORKING_BYTES_PER_RAY,
        # calibrated when every frame allocated them afresh with normals and directions (48 B a
        # pixel more); a frame made inside the cast has none.
        return 32 * self.rays_per_frame()

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        self._dirs, self._cos = pinhole_directions(p["resolution_x"], p["resolution_y"],
                                                   np.radians(p["fov_x_deg"]))
        # the same arrays as rows, for the kernels
        self._dir_rows = np.ascontiguousarray(self._dirs.reshape(-1, 3))
        self._cos_rows = np.ascontiguousarray(self._cos, dtype=float).reshape(-1)
        self._class = ctx.scene.object_table("class_id")
        self._hit_rows = None
        self._frame_declined = False

    def _cast_out(self):
        """The cast's output arrays (:meth:`hifi.caster.RayCaster.cast`'s ``out``): distance and
        point kept from frame to frame (the images copy them to float32, so no frame hands them
        on, and a frame of 2000 x 2000 pixels does not fault in 128 MB afresh), the object ids
        fresh (the dataset keeps them); no normals, directions, faces or bounce counts, which
        the images do not use."""
        n = self.rays_per_frame()
        if self._hit_rows is None:
            self._hit_rows = (np.empty(n), np.empty((n, 3)))
        return Hits(*self._hit_rows, None, None, np.empty(n, dtype=np.int32), None, None)

    def _image_kernel(self, hits):
        """The images of :meth:`step` in the compiled kernel :func:`hifi._cast_kernel.range_image`
        (the same bytes as its numpy), chunks of pixels on the caster's threads."""
        from hifi._cast_kernel import range_image
        shape = self._dirs.shape[:2]
        n = hits.distance.shape[0]
        out = [np.empty(n, dtype=np.float32) for _ in range(5)] + [np.empty(n, dtype=self._class.dtype)]
        args = (hits.distance, hits.point, np.ascontiguousarray(hits.object_id, dtype=np.int32),
                self._cos_rows, self._class, *out)
        self.run_chunks(range_image, n, *args)
        return tuple(a.reshape(shape) for a in out)

    def coords(self):
        p = self.params
        return {**image_coords(p["resolution_x"], p["resolution_y"]), **axis_coords()}

    def attrs(self):
        w, h = self.params["resolution_x"], self.params["resolution_y"]
        f = (w / 2.0) / np.tan(np.radians(self.params["fov_x_deg"]) / 2.0)
        return {"focal_length_px": f, "principal_point_px": np.array([w / 2.0, h / 2.0])}

    def _fused_images(self, t):
        """The images of :meth:`step` made chunk by chunk inside the cast
        (:meth:`hifi.caster.RayCaster.cast_frame` with :func:`hifi._cast_kernel.depth_rows`):
        ``(distance, depth, x, y, z, object_id, class_ids)``, or None where the caster has no
        such path for this scene (a mirror, glass, water, a moving object, facet ranks: then
        :meth:`step` casts through :meth:`cast`). The same rays and the same operations as that
        cast and :meth:`_image_kernel`, so the same bytes, without the frame's directions,
        distance and points written out in float64 and read back."""
        cast_frame = getattr(self.ctx.caster, "cast_frame", None)
        if cast_frame is None or self._frame_declined:
            return None
        from hifi._cast_kernel import depth_rows
        n = self.rays_per_frame()
        out = [np.empty(n, dtype=np.float32) for _ in range(5)] + [np.empty(n, dtype=np.int32),
                                                                   np.empty(n, dtype=self._class.dtype)]
        cos_axis, table = self._cos_rows, self._class

        def finish(a, o, d, tfar, geom_id, geom_object):
            depth_rows(a, o, d, tfar, geom_id, geom_object, cos_axis, table, *out)

        # the pose as Sensor.cast takes it for rays of one time
        pose = self.pose_at(np.asarray(t, dtype=float))
        if not cast_frame(pose.translation, pose.rotation.as_matrix(), self._dir_rows, self.params["max_range_m"],
                          finish):
            # what decides it (the scene's mirrors, panes, water and moving objects, the
            # backend) holds for the run: the next frames go to the general cast at once
            self._frame_declined = True
            return None
        shape = self._dirs.shape[:2]
        return tuple(a.reshape(shape) for a in out)

    def step(self, k, t):
        shape = self._dirs.shape[:2]
        dims = ("row", "col")
        scene = self.ctx.scene
        images = self._fused_images(t)
        if images is None:
            hits, _, _ = self.cast(self._dirs.reshape(-1, 3), t, self.params["max_range_m"], out=self._cast_out())
            distance, depth, x, y, z, class_ids = self._image_kernel(hits)
            images = (distance, depth, x, y, z, hits.object_id.reshape(shape), class_ids)
        distance, depth, x, y, z, object_id, class_ids = images
        return {
            "timestamp": Var((), np.float64(t), RANGE_VARIABLES["timestamp"][0],
                             "time the image is taken (every pixel at once) since simulation start"),
            **sensor_pose_vars(self.pose_at(t)),
            "distance": Var(dims, distance, "m", "radial distance from the camera centre to the hit"),
            "depth": Var(dims, depth, "m", "distance along the optical axis (z-buffer depth)"),
            "x": Var(dims, x, "m", "hit point x, scene frame"),
            "y": Var(dims, y, "m", "hit point y, scene frame"),
            "z": Var(dims, z, "m", "hit point z, scene frame"),
            "object_id": Var(dims, object_id, "1", "index of the object hit, -1 for none"),
            "annotation": annotation_var(dims, class_ids, scene.class_names),
        }
