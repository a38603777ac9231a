"""Generic spherical-grid scanner after the synthetic lidar scanner of Doria (2009)."""

from __future__ import annotations

import numpy as np

from hifi.api.model import Sensor, Var
from hifi.api.params import Param
from hifi.api.rng import stream
from hifi.world.textures import HitTextures

from hifi.run.dataset import (annotation_var, axis_coords, direction_from_yaw_pitch, range_frame, range_layout,
                          sensor_pose_vars)
from .noise import gaussian_range_noise, orthogonal_point_noise
from .radiometry import lambertian_return


class GenericGrid(Sensor):
    """Spherical-grid scanner: a uniform (theta, phi) grid acquired column by column.

    ``theta`` is the azimuth (the ray's yaw about the sensor z axis, from x toward y, so positive
    is left) and ``phi`` the elevation. Like the Leica HDS3000 that vtkLidarScanner models, the
    scanner acquires vertical strips: the first point is at the lower left of the grid, each
    column runs bottom to top and columns run left to right (``theta_max`` to ``theta_min``).
    One scan takes one frame period (``1 / rate_hz``) and points are evenly spaced in time in
    acquisition order, each leaving from where the sensor is at that instant.

    Noise: line-of-sight N(0, ``los_sigma_m``) along the ray and an orthogonal displacement,
    N(0, ``orthogonal_sigma_m``) on each of two axes perpendicular to the ray (Doria's
    "LOS" and "orthogonal" noise, expressed as displacements in metres).

    Dataset dims: (``frame``, ``theta``, ``phi``) with the range-sensor variables of :mod:`hifi.run.dataset`;
    ``theta`` and ``phi`` both increase along their dimensions (so ``ds.sel(theta=slice(a, b))``
    works), which stores the columns in the reverse of their acquisition order: the column at
    ``theta_max`` is acquired first, and ``timestamp`` tells each ray's instant. ``hifi export
    --format ptx`` writes the grid in acquisition order with a miss as a line of zeros.

    References
    ----------
    D. Doria, "A Synthetic LiDAR Scanner for VTK", The VTK Journal / Kitware Source, Jan. 2010.
    """

    model_name = "generic_grid"
    default_rate_hz = 1.0
    PARAMS = {
        "theta_min_deg": Param("float", default=-45.0, minimum=-180.0, maximum=180.0, doc="rightmost azimuth [deg]"),
        "theta_max_deg": Param("float", default=45.0, minimum=-180.0, maximum=180.0, doc="leftmost azimuth [deg]"),
        "n_theta": Param("int", default=100, minimum=1, doc="columns"),
        "phi_min_deg": Param("float", default=-30.0, minimum=-90.0, maximum=90.0, doc="lowest elevation [deg]"),
        "phi_max_deg": Param("float", default=30.0, minimum=-90.0, maximum=90.0, doc="highest elevation [deg]"),
        "n_phi": Param("int", default=60, minimum=1, doc="rows"),
        "los_sigma_m": Param("float", default=0.0, minimum=0.0, doc="line-of-sight noise sigma [m]"),
        "orthogonal_sigma_m": Param("float", default=0.0, minimum=0.0, doc="orthogonal noise sigma per axis [m]"),
        "max_range_m": Param("float", default=300.0, minimum=0.0, exclusive_minimum=True, doc="maximum range [m]"),
        "min_range_m": Param("float", default=0.0, minimum=0.0,
                             doc="a return needs a distance > this [m]: the scanner's housing (a surface through "
                                 "the sensor's origin, distance 0, is never a return)"),
    }

    SIZE_PARAMS = {"n_theta": "lower", "n_phi": "lower"}
    #: Calibrated (benchmarks/calibrate_memory.py, fitted 103 B).
    WORKING_BYTES_PER_RAY = 105.0

    def rays_per_frame(self):
        return self.params["n_theta"] * self.params["n_phi"]

    def frame_layout(self):
        return range_layout((self.params["n_theta"], self.params["n_phi"]), annotation=True)

    def setup_bytes(self):
        return 40 * self.rays_per_frame()          # directions (n, 3), yaw, pitch, float64

    @classmethod
    def check_params(cls, p):
        if p["theta_max_deg"] < p["theta_min_deg"]:
            raise ValueError(f"theta_max_deg: must be >= theta_min_deg ({p['theta_min_deg']})")
        if p["phi_max_deg"] < p["phi_min_deg"]:
            raise ValueError(f"phi_max_deg: must be >= phi_min_deg ({p['phi_min_deg']})")
        return p

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        self.theta = np.radians(np.linspace(p["theta_min_deg"], p["theta_max_deg"], p["n_theta"]))
        self.phi = np.radians(np.linspace(p["phi_min_deg"], p["phi_max_deg"], p["n_phi"]))
        tt, pp = np.meshgrid(self.theta, self.phi, indexing="ij")     # (theta, phi), both increasing
        self._yaw, self._pitch = tt.ravel(), pp.ravel()
        # Acquisition index of each stored ray: columns from theta_max to theta_min, each
        # bottom to top, so stored column i is acquired (n_theta - 1 - i)-th.
        it, ip = np.meshgrid(np.arange(p["n_theta"]), np.arange(p["n_phi"]), indexing="ij")
        self._acquisition = ((p["n_theta"] - 1 - it) * p["n_phi"] + ip).ravel()
        self._dirs = direction_from_yaw_pitch(self._yaw, self._pitch)
        # No wavelength (Doria's scanner has none): each material's reflectivity, which for a
        # hifi.materials library material is its 905 nm value.
        self._refl = ctx.scene.object_table("reflectivity")
        self._textures = HitTextures(ctx.scene)      # textured scene-file parts: reflectance per hit
        self._mirror = ctx.scene.object_table("mirror")
        self._rough = ctx.scene.object_table("roughness_rad")
        self._class = ctx.scene.object_table("class_id")

    def coords(self):
        return {"theta": Var(("theta",), self.theta, "rad",
                             "azimuth of the column (yaw, positive left), increasing; acquired from the last "
                             "column (theta_max) to the first"),
                "phi": Var(("phi",), self.phi, "rad", "elevation of the row, bottom to top"),
                **axis_coords()}

    def step(self, k, t):
        p = self.params
        n = self._dirs.shape[0]
        times = t + self._acquisition / (n * self.rate_hz)
        hits, origins, dirs = self.cast(self._dirs, times, p["max_range_m"])
        rng = stream(self.ctx.seed, self.name, k)
        d_noisy = gaussian_range_noise(hits.distance, p["los_sigma_m"], rng)
        ortho = orthogonal_point_noise(dirs, p["orthogonal_sigma_m"], rng)
        # A hit inside the housing (distance <= min_range_m; 0 for a sensor on a surface) is
        # not a return: masked, with no intensity.
        detected = hits.hit & (hits.distance > p["min_range_m"])
        ghost = origins + dirs * d_noisy[:, None] + ortho          # on the emitted ray (mirror ghosts)
        oid = hits.object_id
        intensity = lambertian_return(self._textures.reflectance(self._refl, hits, times), hits.cos_incidence,
                                      hits.distance, self._mirror[oid], roughness_rad=self._rough[oid])
        intensity = np.where(detected, intensity, np.nan)
        shape = (p["n_theta"], p["n_phi"])
        extra = {"annotation": annotation_var(("theta", "phi"), self._class[oid].reshape(shape),
                                              self.ctx.scene.class_names),
                 **sensor_pose_vars(self.pose_at(t))}
        return range_frame(("theta", "phi"), shape, timestamp=times, yaw=self._yaw, pitch=self._pitch,
                           hits=hits, detected=detected, distance_noisy=d_noisy, points_noisy=ghost,
                           intensity=intensity, extra=extra)
