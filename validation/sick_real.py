"""Real SICK LMS511 and TiM781S recordings against hifi's ``sick_lms5xx`` and ``sick_tim7xx``.

For each recording (``tests/data/lidar/sick_*.pcapng.json``, CoLa-B ``LMDscandata`` telegrams,
Apache-2.0, SICK AG via sick_scan_xd; decoded by :mod:`sick_cola`) and for a simulated
counterpart of it, measures

- the angular grid: start angle (SICK convention), angular step, points per scan;
- the scan rate: real from the scanner's own "time since start-up" of consecutive scans,
  simulated from the dataset's frame times;
- the per-beam temporal range noise on static walls: the standard deviation over scans of each
  beam that sees a static, smooth surface (:func:`static_wall_beams`), median over beams;

and prints quantity | real | simulated | ratio, for each preset's two noise figures
(``noise_source``): ``"measured"`` (the default, the per-beam sigma these recordings give) and
``"datasheet"`` (the data sheet's statistical error).

Simulated counterpart: the real scene is rebuilt from the recording itself, a vertical wall
2 m high along the per-beam median contour of the real scans (quads between neighbouring beams
on the same surface, :func:`contour_mesh`), scanned by the preset with its defaults
from the same place for as many scans as the recording holds. The walls' reflectivity is not
known: 0.5 is assumed (at 0.3-3 m every preset's SNR is far above threshold, where its range
noise is its floor, ``range_noise_floor_m``, whatever the reflectivity).

    python validation/sick_real.py [--markdown FILE] [--json]

The simulated column reflects the presets of the commit the script runs on.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import sick_cola

DATA = REPO / "tests" / "data" / "lidar"
RECORDINGS = {
    "sick_lms5xx": ("LMS511", DATA / "sick_lms511_20210301.pcapng.json"),
    "sick_tim7xx": ("TiM781S", DATA / "sick_tim781s_20210125.pcapng.json"),
}
#: A beam sees a smooth surface when its median range is within this of the mean of its two
#: neighbours' [m] (a plane at the recordings' ranges and incidences curves far less; an edge
#: or a mixed pixel jumps by decimetres).
SMOOTH_TOL_M = 0.02
#: A static-wall beam has a valid distance in at least this fraction of the scans.
MIN_VALID_FRACTION = 0.95
#: Height of the rebuilt walls [m], centred on the scan plane.
WALL_HEIGHT_M = 2.0
#: Reflectivity assumed for the rebuilt walls (not known for the recordings).
WALL_REFLECTIVITY = 0.5
#: Neighbouring beams whose median ranges differ by more than this are on different surfaces:
#: no wall is built between them [m].
SURFACE_JUMP_M = 0.15


def static_wall_beams(distance_m) -> np.ndarray:
    """Beams that see a static, smooth surface in every scan (bool per beam).

    Parameters
    ----------
    distance_m : (scans, beams) float
        Ranges [m], NaN where no measurement.

    Returns
    -------
    numpy.ndarray of bool, (beams,)
        Valid in at least :data:`MIN_VALID_FRACTION` of the scans, and the beam's median range
        within :data:`SMOOTH_TOL_M` of the mean of its neighbours' (no edge, no mixed pixel).
        The first and last beams have one neighbour and are excluded.
    """
    d = np.asarray(distance_m, dtype=float)
    valid = np.mean(np.isfinite(d), axis=0) >= MIN_VALID_FRACTION
    med = np.nanmedian(np.where(np.isfinite(d), d, np.nan), axis=0) if d.size else np.zeros(d.shape[1])
    ok = np.zeros(d.shape[1], dtype=bool)
    inner = np.abs(med[1:-1] - 0.5 * (med[:-2] + med[2:])) < SMOOTH_TOL_M
    ok[1:-1] = inner & valid[1:-1] & valid[:-2] & valid[2:]
    return ok


def temporal_noise(distance_m) -> dict:
    """Per-beam standard deviation over scans on static walls.

    Returns
    -------
    dict
        ``sigma_m`` the median over static-wall beams of each beam's standard deviation over
        the scans (ddof = 1) [m]; ``n_beams`` their number; ``range_m`` their median range [m].
    """
    d = np.asarray(distance_m, dtype=float)
    beams = static_wall_beams(d)
    if not beams.any():
        return {"sigma_m": np.nan, "n_beams": 0, "range_m": np.nan}
    sd = np.nanstd(d[:, beams], axis=0, ddof=1)
    return {"sigma_m": float(np.median(sd)), "n_beams": int(beams.sum()),
            "range_m": float(np.nanmedian(d[:, beams]))}


def real_stats(path) -> dict:
    """Grid, rate and noise of a recording (see the module docstring)."""
    _, scans = sick_cola.read_scans(path)
    ch = scans[0].channel("DIST1")
    t_us = np.array([s.time_since_startup_us for s in scans], dtype=float)
    d = np.array([s.distance_m(1) for s in scans])
    return {"start_angle_deg": ch.start_angle_deg, "step_deg": ch.step_deg, "points": int(ch.values.size),
            "rate_hz": 1e6 / float(np.median(np.diff(t_us))), "telegram_rate_hz": scans[0].scan_frequency_hz,
            "noise": temporal_noise(d), "n_scans": len(scans), "distance_m": d,
            "angles_deg": ch.angles_deg}


def contour_mesh(angles_sick_deg, range_m, *, z0_m, height_m=WALL_HEIGHT_M):
    """Vertical wall quads along a scan contour (scene frame, sensor on the z axis).

    Parameters
    ----------
    angles_sick_deg : (n,) float
        SICK scan angles of the beams [deg] (hifi yaw = angle - 90 deg).
    range_m : (n,) float
        Contour range per beam [m], NaN where none.
    z0_m : float
        Height of the wall's bottom edge [m].

    Returns
    -------
    trimesh.Trimesh
        Two triangles between every pair of neighbouring beams on the same surface (both
        finite, ranges within :data:`SURFACE_JUMP_M`).
    """
    import trimesh

    yaw = np.radians(np.asarray(angles_sick_deg, dtype=float) - 90.0)
    r = np.asarray(range_m, dtype=float)
    xy = np.stack([r * np.cos(yaw), r * np.sin(yaw)], axis=-1)
    pair = np.isfinite(r[:-1]) & np.isfinite(r[1:]) & (np.abs(np.diff(r)) < SURFACE_JUMP_M)
    i = np.flatnonzero(pair)
    n = len(r)
    lo = np.column_stack([np.nan_to_num(xy), np.full(n, z0_m)])
    hi = np.column_stack([np.nan_to_num(xy), np.full(n, z0_m + height_m)])
    vertices = np.concatenate([lo, hi])
    faces = np.concatenate([np.column_stack([i, i + 1, n + i + 1]), np.column_stack([i, n + i + 1, n + i])])
    return trimesh.Trimesh(vertices, faces, process=False)


def simulate(model: str, real: dict, *, seed: int = 1, noise_source: str = "measured"):
    """The preset ``model`` scanning the rebuilt scene of ``real`` for as many scans (a Dataset),
    with the range-noise figures of ``noise_source`` ("measured" or "datasheet")."""
    import hifi
    from hifi.api.registry import available_models, register_model

    if model not in available_models():                 # a checkout newer than its installed metadata
        from sensors import sick
        for cls in (sick.SickLMS1xx, sick.SickLMS5xx, sick.SickTiM7xx):
            register_model(cls.model_name, cls)
    sensor_z = 1.0
    contour = np.nanmedian(real["distance_m"], axis=0)
    mesh = contour_mesh(real["angles_deg"], contour, z0_m=sensor_z - WALL_HEIGHT_M / 2)
    from sensors.sick import SickLMS5xx, SickTiM7xx
    rate = {"sick_lms5xx": SickLMS5xx, "sick_tim7xx": SickTiM7xx}[model].default_rate_hz
    with tempfile.TemporaryDirectory() as tmp:
        mesh.export(Path(tmp) / "contour.ply")
        scenario = {
            "simulation": {"duration_s": real["n_scans"] / rate, "seed": seed},
            "materials": {"wall": {"reflectivity": WALL_REFLECTIVITY, "class": "wall"}},
            "objects": [{"name": "walls", "mesh": "contour.ply", "material": "wall"}],
            "sensors": [{"name": "scanner", "model": model, "position_m": [0.0, 0.0, sensor_z],
                         "params": {"noise_source": noise_source}}],
        }
        return hifi.Simulation.from_dict(scenario, base_dir=tmp).run()["scanner"]


def sim_stats(ds) -> dict:
    """The statistics of :func:`real_stats` from a simulated dataset."""
    yaw_deg = np.degrees(np.asarray(ds["step"].values, dtype=float))
    sel = {"layer": 0, **({"return": 0} if "return" in ds.dims else {})}     # one layer; first echo slot
    d = np.asarray(ds["distance_noisy"].isel(sel).transpose("frame", "step").values, dtype=float)
    d = np.where(ds["detected"].isel(sel).transpose("frame", "step").values, d, np.nan)
    t = ds.hifi.seconds("frame_time").values if "frame_time" in ds.variables else None
    rate = 1.0 / float(np.median(np.diff(t))) if t is not None and len(t) > 1 else float(ds.attrs["rate_hz"])
    return {"start_angle_deg": float(yaw_deg[0] + 90.0), "step_deg": float(np.median(np.diff(yaw_deg))),
            "points": int(yaw_deg.size), "rate_hz": rate, "noise": temporal_noise(d), "n_scans": d.shape[0]}


def table_rows(real: dict, sim: dict | None, sim_datasheet: dict | None = None) -> list[dict]:
    """Rows quantity | real | sim | ratio (sim / real) | sim_datasheet | ratio_datasheet.

    ``sim`` is the preset's default (``noise_source = "measured"``), ``sim_datasheet`` the same
    scene with ``noise_source = "datasheet"``.
    """
    def value(stats, key, scale, sub):
        if stats is None:
            return None
        return (stats[key][sub] if sub else stats[key]) * scale

    def row(name, unit, key, scale=1.0, sub=None):
        rv = value(real, key, scale, sub)
        out = {"quantity": name, "unit": unit, "real": rv}
        for col, stats in (("sim", sim), ("sim_datasheet", sim_datasheet)):
            sv = value(stats, key, scale, sub)
            out[col] = sv
            out["ratio" + col[3:]] = None if sv is None or rv == 0 or not np.isfinite(rv) else sv / rv
        return out
    return [row("start angle (SICK)", "deg", "start_angle_deg"), row("angular step", "deg", "step_deg"),
            row("points per scan", "", "points"), row("scan rate", "Hz", "rate_hz"),
            row("per-beam temporal noise, static walls", "mm", "noise", 1e3, "sigma_m"),
            row("static-wall beams", "", "noise", 1.0, "n_beams"),
            row("their median range", "m", "noise", 1.0, "range_m")]


def run(sim: bool = True) -> dict:
    out = {}
    for model, (label, path) in RECORDINGS.items():
        real = real_stats(path)
        s = sim_stats(simulate(model, real)) if sim else None
        sd = sim_stats(simulate(model, real, noise_source="datasheet")) if sim else None
        out[model] = {"label": label, "file": path.name, "real": real, "sim": s, "sim_datasheet": sd,
                      "rows": table_rows(real, s, sd)}
    return out


def _fmt(v, nd=6):
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.{nd}g}"


def markdown_table(res) -> str:
    lines = ["| recording | quantity | real | hifi sim (measured, default) | ratio sim/real | "
             "hifi sim (datasheet) | ratio sim/real |", "|---|---|---|---|---|---|---|"]
    for model, r in res.items():
        for row in r["rows"]:
            unit = f" [{row['unit']}]" if row["unit"] else ""
            lines.append(f"| {r['label']} vs `{model}` | {row['quantity']}{unit} | {_fmt(row['real'])} | "
                         f"{_fmt(row['sim'])} | {_fmt(row['ratio'], 3)} | {_fmt(row['sim_datasheet'])} | "
                         f"{_fmt(row['ratio_datasheet'], 3)} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    ap.add_argument("--no-sim", action="store_true", help="measure the recordings only")
    args = ap.parse_args(argv)
    res = run(sim=not args.no_sim)
    if args.json:
        print(json.dumps({m: r["rows"] for m, r in res.items()}, indent=1, default=float))
    else:
        print(f"{'recording':22s} {'quantity':42s} {'real':>10s} {'measured':>10s} {'ratio':>7s} "
              f"{'datasheet':>10s} {'ratio':>7s}")
        for model, r in res.items():
            for row in r["rows"]:
                q = row["quantity"] + (f" [{row['unit']}]" if row["unit"] else "")
                print(f"{r['label'] + ' / ' + model:22s} {q:42s} {_fmt(row['real']):>10s} {_fmt(row['sim']):>10s} "
                      f"{_fmt(row['ratio'], 3):>7s} {_fmt(row['sim_datasheet']):>10s} "
                      f"{_fmt(row['ratio_datasheet'], 3):>7s}")
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
