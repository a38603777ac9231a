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
