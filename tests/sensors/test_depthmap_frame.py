"""The depth map's frame made inside the cast (RayCaster.cast_frame): the same bytes as the
general cast, and the general cast wherever a ray could go on or a hit come from elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

import hifi
from hifi.caster import RayCaster
from tests.oracles import numpy_kernels

from _scenes import wall_scenario


def _scenario(extra=(), materials=None):
    """A wall at 20 m, two boxes and a sphere before it, a depth camera turned and tilted so that
    part of the frame misses; 320 x 240 pixels (above the bound where the rotation goes chunk by
    chunk)."""
    d = wall_scenario(20.0, objects_extra=[
        {"name": "left", "mesh": "box", "size_m": [1, 1, 1], "position_m": [10, 3, 0]},
        {"name": "ball", "mesh": "sphere", "radius_m": 1.5, "position_m": [14, -4, 1]}, *extra],
        materials=materials)
    d["sensors"] = [{"name": "cam", "model": "depthmap", "rate_hz": 10.0, "position_m": [0.3, -0.2, 1.2],
                     "rpy_deg": [2.0, -7.0, 25.0],
                     "params": {"resolution_x": 320, "resolution_y": 240, "fov_x_deg": 100.0, "max_range_m": 25.0}}]
    return d


def _run(d, monkeypatch, fused=True, oracle=False):
    """The camera's dataset and the results of each cast_frame call of the run."""
    taken = []
    frame = RayCaster.cast_frame

    def spy(self, *args):
        done = frame(self, *args) if fused else False
        taken.append(done)
        return done

    with monkeypatch.context() as mp:
        mp.setattr(RayCaster, "cast_frame", spy)
        if oracle:
            with numpy_kernels():
                ds = hifi.Simulation.from_dict(d).run()["cam"]
        else:
            ds = hifi.Simulation.from_dict(d).run()["cam"]
    return ds, taken


def test_fused_frame_has_the_bytes_of_the_general_cast_and_of_the_oracles(monkeypatch):
    """Regression: a static scene's frame made in the cast's chunks (compiled depth_rows, and its
    numpy oracle) holds every variable's bytes of the general cast (RayCaster.cast, then the
    images from its hits)."""
    d = _scenario()
    fused, taken = _run(d, monkeypatch)
    assert taken and all(taken)
    general, taken = _run(d, monkeypatch, fused=False)
    assert taken and not any(taken)
    oracle, _ = _run(d, monkeypatch, oracle=True)
    for name in general.data_vars:
        assert fused[name].values.tobytes() == general[name].values.tobytes(), name
        assert oracle[name].values.tobytes() == general[name].values.tobytes(), name
    ids = general.object_id.values
    assert (ids == -1).any() and {0, 1, 2} <= set(np.unique(ids))


@pytest.mark.parametrize("case", ["mirror", "glass", "moving"])
def test_general_cast_where_rays_go_on_or_objects_move(case, monkeypatch):
    """A mirror, a glass pane or a moving object: cast_frame declines (nothing cast) and the
    frame comes from the general cast, which follows the ray or casts the object's own BVH."""
    mats = {"mirror": {"reflectivity": 0.1, "mirror": 1.0},
            "glass": {"reflectivity": 0.0, "kind": "glass", "refractive_index": 1.5, "transmittance": 0.9}}
    extra = {"mirror": {"name": "m", "mesh": "plane", "size_m": [3, 3], "material": "mirror",
                        "position_m": [8, -2, 0], "rpy_deg": [0, -90, 30]},
             "glass": {"name": "g", "mesh": "plane", "size_m": [3, 3], "material": "glass",
                       "position_m": [8, -2, 0], "rpy_deg": [0, -90, 0]},
             "moving": {"name": "mover", "mesh": "box", "size_m": [1, 1, 1],
                        "track": [{"t_s": 0.0, "position_m": [6, -2, 0]}, {"t_s": 0.1, "position_m": [6, 2, 0]}]}}
    d = _scenario([extra[case]], materials={**mats})
    ds, taken = _run(d, monkeypatch)
    assert taken and not any(taken)
    seen = (ds.object_id.values == 3).any()
    # the moving box is seen; the rays go on past the mirror and the pane (a 3 x 3 m plate in
    # view: diffuse, it covers 4,288 pixels), so neither is the object of a pixel
    assert seen == (case == "moving")
