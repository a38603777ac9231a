"""Calibrate and check the memory estimate of ``hifi.api.estimate`` against measured peak RSS.

    python benchmarks/calibrate_memory.py            # every model at three sizes (several minutes)
    python benchmarks/calibrate_memory.py depthmap   # one model
    python benchmarks/calibrate_memory.py --writer   # FrameWriter alone, synthetic frames
    python benchmarks/calibrate_memory.py --scene    # per-triangle cost, terrains
    python benchmarks/calibrate_memory.py --examples # the shipped examples as they are

Each case runs in its own subprocess (a fresh interpreter, so its peak RSS is its own): a 40 x
40 m wall 10 m ahead, a 1 m box and a 100 x 100 m ground plane, one sensor, three frames
written to a temporary directory as ``hifi run`` does. The child reports its peak RSS after the
run (``hifi.api.estimate.peak_rss_bytes``: ``VmHWM``, which unlike ``ru_maxrss`` does not inherit
the parent's peak across exec) and the estimate
(``Simulation.estimate``). The model's working memory per ray is then fitted by least squares
through the origin: ``measured - (estimate without working) = factor x rays``, and the table
shows the estimate with the fitted factor against the measurement. ``--writer`` measures
:func:`hifi.api.estimate.writer_bytes` with synthetic frames, ``--scene`` the per-triangle cost.

The numbers in hifi/api/estimate.py and in the models' ``WORKING_BYTES_PER_RAY`` come from this
script (Linux x86-64, Python 3.11, numpy 2.4, netCDF-C 4.10, embreex 4.4); the table of the last
run is in benchmarks/README.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FRAMES = 3
RATE_HZ = 10.0

#: Model -> three parameter sets of growing size.
CASES = {
    "depthmap": [{"resolution_x": n, "resolution_y": n} for n in (400, 800, 1200)],
    "raw_lidar": [{"resolution_x": n, "resolution_y": n} for n in (200, 350, 500)],
    "tof_sr4000": [{"resolution_x": n, "resolution_y": n} for n in (300, 600, 900)],
    "generic_grid": [{"n_theta": n, "n_phi": n} for n in (300, 600, 900)],
    # the HDL-64E's 48 us firing cycle fixes the step at 360 x rate x 48 us: finer steps come
    # from slower rotation (0.1728, 0.05, 0.025 deg); "rate_hz" here is the sensor's rate
    "hdl64e_s2": [{"rate_hz": r} for r in (10.0, 10.0 * 0.05 / 0.1728, 10.0 * 0.025 / 0.1728)],
    "ibeo_lux": [{"angular_step_deg": s} for s in (0.02, 0.005, 0.0025)],
    "sick_lms291": [{"angular_step_deg": 0.5, "n_subrays": n} for n in (100, 400, 1000)],
    "ccd_camera": [{"resolution_x": n, "resolution_y": n} for n in (300, 600, 900)],
    # the receiver computes blocks of up to 128 epochs at once: the urban canyon for 10 to 128 s
    "gps_l1": [{"file": "examples/urban_canyon.toml", "duration_s": t} for t in (10.0, 60.0, 128.0)],
}


def scenario(model: str, params: dict, frames: int = FRAMES) -> dict:
    """The calibration scene with one sensor (plain dicts, the TOML structure)."""
    params = dict(params)
    rate_hz = params.pop("rate_hz", RATE_HZ)
    return {
        "simulation": {"duration_s": frames / rate_hz, "seed": 1},
        "materials": {"white": {"reflectivity": 0.8, "class": "wall"}},
        "objects": [
            {"name": "wall", "mesh": "plane", "size_m": [40, 40], "material": "white",
             "position_m": [10, 0, 0], "rpy_deg": [0, -90, 0]},
            {"name": "box", "mesh": "box", "size_m": [1, 1, 1], "position_m": [5, 1, 0]},
            {"name": "ground", "mesh": "plane", "size_m": [100, 100], "position_m": [0, 0, -1.5]},
        ],
        "sensors": [{"name": "s", "model": model, "rate_hz": rate_hz, "params": params}],
    }


def _child(case: dict) -> None:
    """Run one case in this process and print the measurement as JSON."""
    import hifi
    duration = case.get("duration_s")
    if case.get("file"):
        sim = hifi.load(case["file"])
    elif case.get("scenario"):
        sim = hifi.Simulation.from_dict(case["scenario"])
    else:
        sim = hifi.Simulation.from_dict(scenario(case["model"], case["params"], case.get("frames", FRAMES)))
    est = sim.estimate(duration)
    with tempfile.TemporaryDirectory() as tmp:
        for ds in sim.run(out=Path(tmp) / "o", duration_s=duration, progress=False).values():
            ds.close()
    from hifi.api.estimate import peak_rss_bytes
    peak = peak_rss_bytes()
    m = est.models[0]
    factor = type(sim.models[0]).WORKING_BYTES_PER_RAY
    # rays the working memory scales with (a block of epochs for gps_l1): working / factor
    print(json.dumps({"peak": peak, "estimate": est.peak_bytes, "working": m.working_bytes,
                      "rays": round(m.working_bytes / factor), "factor": factor}))


def measure(case: dict) -> dict:
    """Run ``case`` in a fresh interpreter; its peak RSS [B] and the estimate [B]."""
    out = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True,
                         text=True, check=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""})
    return json.loads(out.stdout.strip().splitlines()[-1])


def fit(model: str, cases: list) -> None:
    rows = [(p, measure(p if "file" in p else {"model": model, "params": p})) for p in cases]
    # measured - (estimate - working) = factor x rays, least squares through the origin
    x = [r["rays"] for _, r in rows]
    y = [r["peak"] - (r["estimate"] - r["working"]) for _, r in rows]
    factor = sum(a * b for a, b in zip(x, y)) / sum(a * a for a in x)
    print(f"\n{model}: fitted WORKING_BYTES_PER_RAY = {factor:.0f} B (set: {rows[0][1]['factor']:.0f})")
    print(f"  {'params':<44} {'rays':>10} {'measured':>10} {'estimate':>10} {'ratio':>6}")
    for p, r in rows:
        est = r["estimate"] - r["working"] + r["rays"] * r["factor"]
        print(f"  {json.dumps(p):<44} {r['rays']:>10,} {r['peak'] / 2**20:>8.0f} M {est / 2**20:>8.0f} M "
              f"{est / r['peak']:>6.2f}")


def _writer_child(nvar: int, side: int, frames: int) -> None:
    import numpy as np
    from hifi.api.estimate import writer_bytes
    from hifi.api.model import Var
    from hifi.run.output import FrameWriter
    base = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    from hifi.api.estimate import peak_rss_bytes
    before = peak_rss_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        w = FrameWriter(Path(tmp) / "a.nc", {}, {})
        for k in range(frames):
            w.write(k, 0.1 * k, {f"v{i}": Var(("r", "c"), base + k + i, "1", "x") for i in range(nvar)})
        w.close()
    extra = peak_rss_bytes() - before
    model = writer_bytes({f"v{i}": base.nbytes for i in range(nvar)}, frames)
    print(f"  {nvar:>4} x {side:>4}^2 float32 x {frames:>4} frames: measured {extra / 2**20:7.0f} M, "
          f"writer_bytes {model / 2**20:7.0f} M, ratio {model / extra:5.2f}")


def main(argv) -> None:
    if argv[:1] == ["--case"]:
        return _child(json.loads(argv[1]))
    if argv[:1] == ["--writer-case"]:
        return _writer_child(*(int(a) for a in argv[1:4]))
    if argv[:1] == ["--writer"]:
        print("FrameWriter: peak RSS growth while writing, against hifi.api.estimate.writer_bytes")
        for a in ("1 1000 1", "1 1000 6", "1 1000 20", "4 1000 6", "4 1000 20", "4 100 300",
                  "4 100 1000", "4 2000 4", "1 4000 3"):
            subprocess.run([sys.executable, __file__, "--writer-case", *a.split()], check=True, cwd=REPO,
                           env={"PYTHONPATH": str(REPO), "PATH": ""})
        return None
    if argv[:1] == ["--scene"]:
        print("scene: terrain of n triangles, a 10 x 10 depth map")
        for res in (2.0, 0.4, 0.2, 0.14):
            d = scenario("depthmap", {"resolution_x": 10, "resolution_y": 10}, 1)
            d["objects"].append({"name": "terrain", "mesh": "terrain", "size_m": [200, 200],
                                 "resolution_m": res, "amplitude_m": 1.0, "position_m": [0, 0, -2]})
            r = measure({"scenario": d})
            print(f"  resolution {res} m: measured {r['peak'] / 2**20:.0f} M, estimate {r['estimate'] / 2**20:.0f} M")
        return None
    if argv[:1] == ["--examples"]:
        print("whole examples: measured peak RSS against Simulation.estimate().peak_bytes")
        for name in ("crossing", "urban_canyon"):
            r = measure({"file": f"examples/{name}.toml"})
            print(f"  {name}: measured {r['peak'] / 2**20:.0f} M, estimate {r['estimate'] / 2**20:.0f} M, "
                  f"ratio {r['estimate'] / r['peak']:.2f}")
        return None
    for model in argv or list(CASES):
        fit(model, CASES[model])
    base = measure({"model": "pose", "params": {}, "frames": 1})
    print(f"\nbase: a pose sensor run peaks at {base['peak'] / 2**20:.0f} MiB "
          f"(BASE_PROCESS_BYTES + scene + writer: {base['estimate'] / 2**20:.0f} MiB)")
    return None


if __name__ == "__main__":
    main(sys.argv[1:])
