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
