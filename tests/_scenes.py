"""Small scenario builders shared by the tests (plain dicts in the TOML structure)."""

from __future__ import annotations


def wall_scenario(distance_m=10.0, sensors=(), duration_s=0.1, objects_extra=(), materials=None, seed=0):
    """A 40 x 40 m wall facing the sensor at x = distance_m (plane rotated to face -x)."""
    mats = {"white": {"reflectivity": 0.8, "class": "wall"}}
    mats.update(materials or {})
    return {
        "simulation": {"duration_s": duration_s, "seed": seed},
        "materials": mats,
        "objects": [{"name": "wall", "mesh": "plane", "size_m": [40, 40], "material": "white",
                     "position_m": [distance_m, 0, 0], "rpy_deg": [0, -90, 0]}, *objects_extra],
        "sensors": list(sensors),
    }


def depth_camera_toml(duration_s, *, seed, rate_hz, resolution=(64, 48), mover_y_m=None) -> str:
    """Scenario text: a wall at 10 m and a depth camera (``resolution`` x, y) at ``rate_hz``,
    and, with ``mover_y_m``, a 1 m box driving from (5, 0, 0) to (5, mover_y_m, 0) over the run.

    For the tests that run ``hifi`` in a subprocess (interrupts, progress, CLI messages).
    """
    mover = "" if mover_y_m is None else f"""
[[objects]]
name = "mover"
mesh = "box"
size_m = [1, 1, 1]
material = "white"
track = [ {{ t_s = 0.0, position_m = [5, 0, 0] }}, {{ t_s = {duration_s!r}, position_m = [5, {mover_y_m!r}, 0] }} ]
"""
    return f"""
[simulation]
duration_s = {duration_s!r}
seed = {seed}

[materials.white]
reflectivity = 0.8

[[objects]]
name = "wall"
mesh = "plane"
size_m = [40, 40]
material = "white"
position_m = [10, 0, 0]
rpy_deg = [0, -90, 0]
{mover}
[[sensors]]
name = "cam"
model = "depthmap"
rate_hz = {rate_hz!r}
[sensors.params]
resolution_x = {resolution[0]}
resolution_y = {resolution[1]}
"""


#: Start and origin of :func:`street_scenario`: the epoch and site of the GPS navigation file
#: examples/data/07590920.05n (as tests/sensors/test_gps.py uses them).
STREET_START_UTC = "2005-04-02T00:10:00Z"
STREET_ORIGIN = {"lat_deg": 35.1608750388, "lon_deg": 139.6138372528, "height_m": 70.153}


def street_scenario(*, duration_s=0.3, return_mode="strongest", weather=None, sensors_extra=(), seed=11):
    """A street for the run-level exports: a VLP-16 ``lidar`` on the roof of ``ego``, a car that
    drives 10 m/s along x while turning 20 deg/s, and objects of every kind a label map needs.

    Objects (index: name, class): 0 ground (road), 1 ego (car, moving), 2 parked (car),
    3 crossing (car, moving along +y at 10 m/s), 4 house (building), 5 lamp (pole, a
    cylinder), 6 mailbox ("Mail box": no SemanticKITTI class), 7 kerb (sidewalk).
    """
    d = {
        "simulation": {"duration_s": duration_s, "seed": seed, "start_utc": STREET_START_UTC,
                       "origin": dict(STREET_ORIGIN)},
        "output": {"motion_rate_hz": 50.0},
        "materials": {"asphalt": {"reflectivity": 0.3, "class": "road"},
                      "curb": {"reflectivity": 0.4, "class": "sidewalk"},
                      "paint": {"reflectivity": 0.6, "class": "car"},
                      "concrete": {"reflectivity": 0.35, "class": "building"},
                      "metal": {"reflectivity": 0.5, "class": "pole"},
                      "tin": {"reflectivity": 0.7, "class": "Mail box"}},
        "objects": [
            {"name": "ground", "mesh": "plane", "size_m": [120, 120], "material": "asphalt"},
            {"name": "ego", "mesh": "car", "material": "paint",
             "track": [{"t_s": 0.0, "position_m": [0, 0, 0], "rpy_deg": [0, 0, 0]},
                       {"t_s": 1.0, "position_m": [10, 0, 0], "rpy_deg": [0, 0, 20]}]},
            {"name": "parked", "mesh": "car", "material": "paint", "position_m": [12, 4, 0], "rpy_deg": [0, 0, 30]},
            {"name": "crossing", "mesh": "car", "material": "paint",
             "track": [{"t_s": 0.0, "position_m": [20, -10, 0], "rpy_deg": [0, 0, 90]},
                       {"t_s": 1.0, "position_m": [20, 0, 0], "rpy_deg": [0, 0, 90]}]},
            {"name": "house", "mesh": "box", "size_m": [10, 6, 8], "material": "concrete", "position_m": [20, -14, 4]},
            {"name": "lamp", "mesh": "cylinder", "radius_m": 0.15, "height_m": 5.0, "material": "metal",
             "position_m": [8, -3, 2.5]},
            {"name": "mailbox", "mesh": "box", "size_m": [0.5, 0.5, 1.0], "material": "tin",
             "position_m": [6, 3, 0.5]},
            {"name": "kerb", "mesh": "box", "size_m": [40, 2, 0.15], "material": "curb", "position_m": [10, -6, 0.075]},
        ],
        "sensors": [{"name": "lidar", "model": "vlp16", "rate_hz": 10.0, "parent": "ego", "position_m": [0, 0, 1.9],
                     "params": {"return_mode": return_mode}}, *sensors_extra],
    }
    if weather:
        d["weather"] = dict(weather)
    return d


#: The road texture of :func:`textured_road_scenario`: 8 x 8 texels, dark grey (sRGB code 64)
#: with a white (255) stripe in texel rows 3 and 4 from the top.
ROAD_TEXTURE_SHAPE = (8, 8)
ROAD_DARK_CODE, ROAD_STRIPE_CODE = 64, 255

#: Half the side of the textured road [m]; the texture spans 16 m and repeats, so white stripes
#: lie along x at y = 16 k +- 2 m: their texels are pure within 1 m of y = 16 k, the dark ones
#: from 3 m to 13 m off (between texel centres the sampling blends them).
ROAD_HALF_M = 24.0
ROAD_PERIOD_M = 16.0


def textured_road_scenario(directory, sensors, *, textured=True, reflectance_map=None, seed=3):
    """Write ``road.glb`` into ``directory`` (with trimesh's glTF writer): a 48 x 48 m plane in
    z = 0, material ``Road`` (baseColorFactor white), texture coordinates ``((x + 24) / 16,
    (y + 24) / 16)`` and, if ``textured``, the base-colour texture of :data:`ROAD_TEXTURE_SHAPE`;
    return the scenario (a dict) that maps ``Road`` to ``[materials.road]`` (reflectivity 0.2,
    color_rgb 0.5 grey) with ``sensors``, and, with ``reflectance_map`` (an image file name in
    ``directory``), ``reflectance_maps = { "Road" = ... }``."""
    import numpy as np
    import PIL.Image
    import trimesh
    from trimesh.visual import TextureVisuals
    from trimesh.visual.material import PBRMaterial

    texels = np.full((*ROAD_TEXTURE_SHAPE, 3), ROAD_DARK_CODE, np.uint8)
    texels[3:5] = ROAD_STRIPE_CODE
    h = ROAD_HALF_M
    v = np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]])
    uv = (v[:, :2] + h) / ROAD_PERIOD_M
    image = PIL.Image.fromarray(texels) if textured else None
    mat = PBRMaterial(name="Road", baseColorFactor=[1.0, 1.0, 1.0, 1.0], baseColorTexture=image)
    mesh = trimesh.Trimesh(v, [[0, 1, 2], [0, 2, 3]], visual=TextureVisuals(uv=uv, material=mat), process=False)
    s = trimesh.Scene()
    s.add_geometry(mesh, node_name="Road", geom_name="road")
    (directory / "road.glb").write_bytes(s.export(file_type="glb"))
    table = {"materials": {"Road": "road"}}
    if reflectance_map is not None:
        table["reflectance_maps"] = {"Road": reflectance_map}
    return {"simulation": {"duration_s": 0.1, "seed": seed, "start_utc": "2024-05-01T10:00:00Z",
                           "origin": {"lat_deg": 47.8, "lon_deg": 13.04, "height_m": 430.0}},
            "materials": {"road": {"reflectivity": 0.2, "color_rgb": [0.5, 0.5, 0.5], "class": "road"}},
            "scene_files": {"road": table},
            "objects": [{"name": "road", "mesh": "road.glb"}],
            "sensors": list(sensors)}
