"""The ``ds.hifi`` xarray accessor."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .dataset import seconds_since_start, utc_times
from ..world.motion import Pose, interpolate_poses


@xr.register_dataset_accessor("hifi")
class HifiAccessor:
    """Helpers on hifi datasets: ``ds.hifi.points(noisy=True)``, ``ds.hifi.seconds()``, ``ds.hifi.time()``;
    on ``motion.nc``, ``ds.hifi.pose(body, t_s)`` and ``ds.hifi.boxes(t_s)``."""

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def points(self, noisy: bool = True, frame: int | None = None) -> np.ndarray:
        """Detected returns as an (n, 3) float64 array in the scene frame [m].

        Parameters
        ----------
        noisy : bool
            Reported points (``x_noisy`` ...) if True, true hit points (``x`` ...) if False.
        frame : int, optional
            Position along ``frame`` to take; default every frame.

        Notes
        -----
        A return is included where ``detected`` is true (range sensors) or, for datasets without
        ``detected`` (depth maps), where the hit point is finite. Points come in the order of
        the dataset's dimensions, so the result has shape (0, 3) when nothing was detected.
        """
        ds = self._ds if frame is None else self._ds.isel(frame=frame)
        names = ("x_noisy", "y_noisy", "z_noisy") if noisy else ("x", "y", "z")
        if noisy and "x_noisy" not in ds:
            names = ("x", "y", "z")
        missing = [n for n in names if n not in ds]
        if missing:
            raise ValueError(f"dataset has no point variables {missing}; sensor_model = "
                             f"{ds.attrs.get('sensor_model')!r} does not produce points")
        xyz = np.stack([np.asarray(ds[n].values, dtype=np.float64).ravel() for n in names], axis=-1)
        if "detected" in ds:
            mask = np.asarray(ds["detected"].values, dtype=bool).ravel()
        else:
            mask = np.all(np.isfinite(xyz), axis=1)
        return xyz[mask]

    def seconds(self, name: str = "timestamp") -> xr.DataArray:
        """Variable ``name`` as float64 seconds since the run's start [s], however the file was opened.

        ``timestamp`` and ``frame_time`` carry CF units ``seconds since <start_utc>``, so
        ``xr.open_dataset`` decodes them to ``datetime64``; this gives the float seconds back
        (bit for bit when the file was opened with ``decode_times=False``, within 1 ns of the
        stored value when decoded; see :func:`hifi.run.dataset.seconds_since_start`).
        """
        var = self._ds[name]
        return xr.DataArray(seconds_since_start(self._ds, name), dims=var.dims, coords=var.coords,
                            attrs={"units": "s", "long_name": f"{name}: seconds since simulation start"})

    def time(self, name: str = "timestamp") -> xr.DataArray:
        """Variable ``name`` as absolute UTC instants (``datetime64[ns]``), however the file was opened."""
        var = self._ds[name]
        return xr.DataArray(utc_times(self._ds, name), dims=var.dims, coords=var.coords,
                            attrs={"long_name": f"{name}: UTC time"})

    # -- motion.nc ---------------------------------------------------------------------------
    def _motion_times(self, names) -> np.ndarray:
        missing = [n for n in names if n not in self._ds.variables]
        if missing:
            raise ValueError(f"dataset (sensor_model {self._ds.attrs.get('sensor_model')!r}) has no "
                             f"{', '.join(missing)}; expected a run's motion.nc")
        return np.asarray(self._ds["time"].values, dtype=float)

    def pose(self, body: str, t_s) -> Pose:
        """Pose body -> scene of ``body`` at any instant(s) ``t_s`` [s] within the recorded span.

        Interpolated between the samples of ``motion.nc``, linear in position and slerp in
        rotation (:func:`hifi.world.motion.interpolate_poses`, which states the error bound).

        Raises
        ------
        ValueError
            ``body`` is not in the dataset (the message lists those that are), or an instant lies
            outside the recorded span.
        """
        times = self._motion_times(("time", "position", "orientation"))
        names = [str(b) for b in self._ds["body"].values]
        if body not in names:
            raise ValueError(f"body {body!r} is not in motion.nc; bodies: {', '.join(names)}")
        i = names.index(body)
        pos = np.asarray(self._ds["position"].transpose("frame", "body", "xyz").values[:, i], dtype=float)
        quat = np.asarray(self._ds["orientation"].transpose("frame", "body", "quat").values[:, i], dtype=float)
        return interpolate_poses(times, pos, quat, t_s)

    def boxes(self, t_s) -> xr.Dataset:
        """Every object's oriented bounding box at instant(s) ``t_s`` [s] within the recorded span.

        Returns
        -------
        xarray.Dataset
            ``box_center`` (object, xyz) [m], ``box_size`` (object, lwh) [m] (length, width,
            height), ``box_yaw`` (object) [rad], with coordinates ``object_name`` and
            ``object_class`` (the semantic class); a leading ``time`` dimension when ``t_s``
            is an array.

        Notes
        -----
        Between the samples of ``motion.nc``, centre and size are interpolated linearly and the
        yaw along the shorter arc (as the body's slerp turns it); at a sample the recorded box
        is returned exactly.

        Raises
        ------
        ValueError
            The dataset has no boxes (no objects, or a run written before boxes existed), or an
            instant lies outside the recorded span.
        """
        times = self._motion_times(("time", "box_center", "box_size", "box_yaw"))
        t = np.asarray(t_s, dtype=float)
        t1 = np.atleast_1d(t).ravel()
        outside = (t1 < times[0]) | (t1 > times[-1]) | ~np.isfinite(t1)
        if np.any(outside):
            raise ValueError(f"t_s = {float(t1[outside][0])!r} s lies outside the recorded span "
                             f"[{float(times[0])!r}, {float(times[-1])!r}] s")
        ds = self._ds
        center = np.asarray(ds["box_center"].transpose("frame", "object", "xyz").values, dtype=float)
        size = np.asarray(ds["box_size"].transpose("frame", "object", "lwh").values, dtype=float)
        yaw = np.asarray(ds["box_yaw"].transpose("frame", "object").values, dtype=float)
        if len(times) == 1:
            k, u = np.zeros(len(t1), dtype=int), np.zeros(len(t1))
            k1 = k
        else:
            k = np.clip(np.searchsorted(times, t1, side="right") - 1, 0, len(times) - 2)
            k1 = k + 1
            u = (t1 - times[k]) / (times[k1] - times[k])
        turn = np.angle(np.exp(1j * (yaw[k1] - yaw[k])))              # shorter arc, (-pi, pi]
        out = xr.Dataset(
            {"box_center": (("time", "object", "xyz"), center[k] + u[:, None, None] * (center[k1] - center[k]),
                            {"units": "m", "long_name": "centre of the object's oriented bounding box, scene frame"}),
             "box_size": (("time", "object", "lwh"), size[k] + u[:, None, None] * (size[k1] - size[k]),
                          {"units": "m", "long_name": "length, width, height of the object's oriented bounding box"}),
             "box_yaw": (("time", "object"), np.angle(np.exp(1j * (yaw[k] + u[:, None] * turn))),
                         {"units": "rad", "long_name": "heading of the bounding box about the scene z axis"})},
            coords={"time": ("time", t1, {"units": "s", "long_name": "time since simulation start"}),
                    "xyz": ["x", "y", "z"], "lwh": ["length", "width", "height"]})
        for name in ("object_name", "object_class"):
            if name in ds.variables:
                out = out.assign_coords({name: ("object", np.asarray(ds[name].values))})
        return out.isel(time=0) if t.ndim == 0 else out
