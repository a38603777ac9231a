"""Benchmark scene and rays of the caster benchmark: the BlenSor paper's displaced acre with four cars.

The BlenSor paper times one Velodyne HDL-64E scan of a displaced terrain of about 237,000
vertices. Here: ``hifi.api.meshes.terrain([63.6, 63.6], 63.6 / 486, 0.5, seed=1)`` (487 x 487 =
237,169 vertices, 472,392 triangles) plus four ``hifi.api.meshes.car()`` standing on it, and one
HDL-64E revolution of 64 lasers x 2083 azimuth steps = 133,312 rays from 1.8 m above the
terrain centre.

References
----------
M. Gschwandtner, R. Kwitt, A. Uhl, W. Pree, "BlenSor: Blender Sensor Simulation Toolbox",
ISVC 2011, LNCS 6939, pp. 199-208.
Velodyne HDL-64E: 64 lasers in two blocks of 32, about 1/3 deg apart in the upper block
(+2.0 to -8.33 deg) and 1/2 deg in the lower one; the lower block is spread here down to
-24.9 deg, the HDL-64E's data-sheet field of view (the real per-laser calibration differs).
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import RegularGridInterpolator

from hifi.api.meshes import car, terrain
from hifi.world.motion import Pose, Track
from hifi.world.scene import Material, Scene

#: Side of a square acre [m] (4046.86 m^2) and the grid spacing giving 487 x 487 vertices.
TERRAIN_SIDE_M = 63.6
TERRAIN_CELLS = 486
TERRAIN_AMPLITUDE_M = 0.5
TERRAIN_SEED = 1

#: Sensor height above the terrain at the scene centre [m] (roof of a car, as in BlenSor).
SENSOR_HEIGHT_M = 1.8

#: HDL-64E: 64 lasers, 2083 firings per revolution (0.1728 deg apart), 10 Hz rotation.
N_LASERS = 64
N_AZIMUTH = 2083
AZIMUTH_STEP_DEG = 0.1728
ROTATION_RATE_HZ = 10.0

#: Car poses on the terrain: x, y [m] and yaw [deg]; the first one drives in the moving case.
CAR_XY_YAW = [(9.0, 3.0, 0.0), (-7.0, -6.0, 90.0), (4.0, -13.0, 30.0), (-14.0, 11.0, -45.0)]

#: Speed of the moving car along its own x axis [m/s] (50 km/h).
MOVING_CAR_SPEED_M_S = 13.9


def hdl64e_pitches_deg() -> np.ndarray:
    """Elevation of the 64 lasers [deg]: two blocks of 32, evenly spread, +2.0 to -24.9 deg."""
    upper = np.linspace(2.0, -8.33, 32)
    lower = np.linspace(-8.83, -24.9, 32)
    return np.concatenate([upper, lower])


def _terrain_height(mesh, xy_m) -> np.ndarray:
    """Terrain height under the points ``xy_m`` (k, 2) [m], bilinear on the vertex grid."""
    n = TERRAIN_CELLS + 1
    axis = np.linspace(-TERRAIN_SIDE_M / 2, TERRAIN_SIDE_M / 2, n)
    z = np.asarray(mesh.vertices)[:, 2].reshape(n, n)          # [iy, ix]
    interp = RegularGridInterpolator((axis, axis), z)
    xy = np.atleast_2d(np.asarray(xy_m, dtype=float))
    return interp(xy[:, ::-1])


def build_scene(*, moving: bool = False):
    """The benchmark scene.

    Parameters
    ----------
    moving : bool
        Give the first car a :class:`hifi.world.motion.Track` (straight line at
        ``MOVING_CAR_SPEED_M_S`` over one revolution, 0 to 0.1 s) instead of a fixed pose.

    Returns
    -------
    scene : hifi.world.scene.Scene
    sensor_position : (3,) float
        Sensor origin, scene frame [m].
    """
    ground = terrain([TERRAIN_SIDE_M, TERRAIN_SIDE_M], TERRAIN_SIDE_M / TERRAIN_CELLS,
                     TERRAIN_AMPLITUDE_M, seed=TERRAIN_SEED)
    scene = Scene()
    scene.add_material(Material("ground", 0.3, class_name="ground"))
    scene.add_material(Material("paint", 0.6, class_name="car"))
    scene.add_object("terrain", ground, "ground")
    body = car()
    for k, (x, y, yaw) in enumerate(CAR_XY_YAW):
        # Stand the car on the highest terrain point under its centre and four corners.
        c, s = np.cos(np.radians(yaw)), np.sin(np.radians(yaw))
        corners = np.array([[2.25, 0.9], [2.25, -0.9], [-2.25, 0.9], [-2.25, -0.9], [0, 0]])
        xy = np.column_stack([x + c * corners[:, 0] - s * corners[:, 1],
                              y + s * corners[:, 0] + c * corners[:, 1]])
        z = float(np.max(_terrain_height(ground, xy)))
        if moving and k == 0:
            duration_s = 1.0 / ROTATION_RATE_HZ
            start = np.array([x, y, z])
            step = MOVING_CAR_SPEED_M_S * duration_s * np.array([c, s, 0.0])
            local = Track([0.0, duration_s], [start, start + step], [[0, 0, yaw]] * 2)
        else:
            local = Pose.from_position_rpy([x, y, z], [0.0, 0.0, yaw])
        scene.add_object(f"car{k}", body, "paint", local)
    z0 = float(_terrain_height(ground, [[0.0, 0.0]])[0])
    return scene, np.array([0.0, 0.0, z0 + SENSOR_HEIGHT_M])


def hdl64e_rays(sensor_position):
    """One HDL-64E revolution of rays, laser-fastest within each azimuth step.

    Returns
    -------
    origins : (133312, 3) float
        Scene frame [m].
    directions : (133312, 3) float
        Unit vectors, scene frame.
    times : (133312,) float
        Emission time of each ray [s] (azimuth step / 2083 of a 0.1 s revolution).
    """
    pitch = np.radians(hdl64e_pitches_deg())
    az = np.radians(AZIMUTH_STEP_DEG * np.arange(N_AZIMUTH))
    az_g, pitch_g = np.meshgrid(az, pitch, indexing="ij")          # (azimuth, laser)
    cp = np.cos(pitch_g)
    directions = np.stack([cp * np.cos(az_g), cp * np.sin(az_g), np.sin(pitch_g)], axis=-1)
    directions = directions.reshape(-1, 3)
    origins = np.broadcast_to(np.asarray(sensor_position, dtype=float), directions.shape).copy()
    times = np.repeat(np.arange(N_AZIMUTH) / (N_AZIMUTH * ROTATION_RATE_HZ), N_LASERS)
    return origins, directions, times
