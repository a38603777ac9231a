"""Replay page of a run: ``hifi view RUN_DIR --out replay.html``.

One self-contained HTML file (plotly's JavaScript inlined, no network needed) that replays a
run directory written by ``hifi run``:

- a time slider (and play / pause buttons) over the run's frames: one step per distinct frame
  instant of the sensors shown; at each step every panel shows its sensor's latest frame at or
  before that instant;
- the points of every range sensor (lidar, ToF, LADAR, scanner) in 3-D, in the scene frame,
  coloured by object, class, intensity or height (a dropdown), with the trajectory of every
  moving body of ``motion.nc`` and every body's position at the selected time;
- camera images and depth maps at the selected time;
- the GPS sky plot at the selected epoch and the fix error over the run.

The page stays small enough for a browser: at most ``max_points`` points stored in the page
(each sensor frame once; a uniform random subsample of every frame, the same share for every
sensor, drawn from the run's seed), at most ``max_frames`` slider steps (evenly spaced) and
images at most :data:`IMAGE_MAX_WIDTH_PX` wide. Whatever is cut is said in a note at the top of
the page.

Plotly (``pip install ".[viz]"``) draws the page. Each sensor frame is stored once in the page
(points as base64 float32 / uint8 arrays, images as PNG written by
:func:`~hifi.viz.replay_data.png_bytes`), and a small script (:data:`_PLAYER_JS`) draws the step
the slider selects with ``Plotly.react``, so a camera held over many steps, or the four colourings
of a point cloud, cost nothing extra. The figure itself shows the first step, so
:func:`build_replay`'s figure is usable on its own.

Reading the run and preparing its frames (the slider's instants, each frame's points and images
as the page stores them) is :mod:`hifi.viz.replay_data`; its names are importable from here too.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..run.dataset import ATMOSPHERE_ID
from .replay_data import (  # noqa: F401  (re-exported: importable from here as before the split)
    IMAGE_MAX_WIDTH_PX, MAX_FRAMES, TIME_MERGE_S, FramePoints, RunDatasets, camera_display, categories, colour_lut,
    data_uri, detected_count, discrete_scale, frame_points, frame_seconds, held_frames, levels, open_run, palette,
    percentiles, png_bytes, replay_times, shrink)

#: Default cap on the points stored in the page (each sensor frame once) [1].
MAX_POINTS = 250_000
#: Colourings of the points, in the dropdown's order; the first is shown on opening.
COLOR_MODES = ("object", "class", "intensity", "height")
#: Colour of the returns from the atmosphere (``object_id = -2``: fog, rain, snow).
ATMOSPHERE = "atmosphere"
#: Elementary point size of the 3-D scatter [px].
POINT_SIZE_PX = 1.6

_INSTALL = 'plotly is needed for hifi view; install it with pip install ".[viz]" (or pip install plotly)'

# The names these had while they were private to this module (the page's code below uses them).
_frame_seconds = frame_seconds
_data_uri = data_uri
_shrink = shrink
_camera_display = camera_display
_colour_lut = colour_lut
_detected_count = detected_count
_frame_points = frame_points
_categories = categories
_discrete_scale = discrete_scale
_palette = palette
_levels = levels
_percentiles = percentiles


# --------------------------------------------------------------------------------------------
# the page: a plotly figure (step 0) and a store of every step, played by a small script
# --------------------------------------------------------------------------------------------

class Replay(NamedTuple):
    """Result of :func:`build_replay`."""

    figure: object           #: the plotly Figure at the first step (what a screenshot shows)
    store: dict              #: every step's data (``steps``, ``points``, ``images``, ``colour``)
    times: np.ndarray        #: instant of each slider step [s]
    n_instants: int          #: distinct frame instants of the run (steps before thinning)
    points_fraction: float   #: share of the returns shown (1 when nothing was cut)
    n_points: int            #: points stored in the page (each sensor frame once)
    notes: list              #: the lines of the page's note


def _seed(datasets) -> int:
    for ds in datasets:
        try:
            return int(ds.attrs["seed"])
        except (KeyError, TypeError, ValueError):
            continue
    return 0


def _brightness_label(ds) -> str:
    """What the "intensity" colouring of a range sensor shows: its intensity, or a radar's RCS."""
    return "RCS [dBsm]" if "intensity" not in ds and "rcs" in ds else "intensity"


def _b64(a, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _plain(a, decimals: int = 4) -> list:
    """A JSON list of floats (NaN -> null), rounded to ``decimals``."""
    a = np.round(np.asarray(a, dtype=float), decimals)
    return [None if not math.isfinite(v) else v for v in a.ravel().tolist()]


def build_replay(run_dir, *, max_points: int = MAX_POINTS, max_frames: int = MAX_FRAMES) -> Replay:
    """Build the replay of a run directory (see the module docstring).

    Parameters
    ----------
    run_dir : path-like
        A directory written by ``hifi run``.
    max_points : int
        Most points stored in the page, each sensor frame counted once [1] (>= 1).
    max_frames : int
        Most slider steps [1] (>= 1).

    Returns
    -------
    Replay
    """
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise ImportError(_INSTALL) from None
    for key, value in (("--max-points", max_points), ("--max-frames", max_frames)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{key} = {value!r}: expected an integer >= 1")
    run_dir = Path(run_dir)
    run = open_run(run_dir)
    try:
        return _build(run, run_dir, int(max_points), int(max_frames), go, make_subplots)
    finally:
        for group in (run.range_sensors, run.cameras, run.depth_maps, run.gps):
            for ds in group.values():
                ds.close()
        if run.motion is not None:
            run.motion.close()


class _Page:
    """The figure under construction and the store of its dynamic traces."""

    def __init__(self, fig, n_steps: int):
        self.fig = fig
        self.steps = [{} for _ in range(n_steps)]     # per step: trace index (str) -> update
        self.points = {}                              # key -> encoded points
        self.images = {}                              # key -> PNG data URI
        self.colour = {}                              # trace index (str) -> mode -> marker attributes

    def add(self, trace, row, col, updates=None) -> int:
        """Add ``trace``; ``updates[k]`` is its update at step k (plain attributes, or
        ``{"points": key}`` / ``{"image": key}`` into the store)."""
        self.fig.add_trace(trace, row=row, col=col)
        i = len(self.fig.data) - 1
        if updates is not None:
            for k, u in enumerate(updates):
                self.steps[k][str(i)] = u
        return i


def _build(run: RunDatasets, run_dir: Path, max_points: int, max_frames: int, go, make_subplots) -> Replay:
    shown = {**run.range_sensors, **run.cameras, **run.depth_maps, **run.gps}
    frame_t = {name: _frame_seconds(ds) for name, ds in shown.items()}
    sources = list(frame_t.values()) or [_frame_seconds(run.motion)]       # motion only: its frames
    times, n_instants = replay_times(sources, max_frames)
    held = {name: held_frames(ft, times) for name, ft in frame_t.items()}
    notes = []
    if times.size < n_instants:
        notes.append(f"{times.size} of the run's {n_instants} frame instants on the slider (evenly spaced; "
                     f"at most {max_frames}, hifi view --max-frames)")

    # ---- points: one share of every sensor frame shown, so that the page stores <= max_points
    seed = _seed([*shown.values(), *([run.motion] if run.motion is not None else [])])
    counts = {name: {int(j): _detected_count(ds, int(j)) for j in np.unique(held[name]) if j >= 0}
              for name, ds in run.range_sensors.items()}
    total = sum(n for c in counts.values() for n in c.values())
    fraction = 1.0 if total <= max_points else max_points / total
    points = {name: {j: _frame_points(ds, j, fraction, np.random.default_rng(np.random.SeedSequence([seed, s, j])))
                     for j in counts[name]}
              for s, (name, ds) in enumerate(run.range_sensors.items())}
    n_points = sum(p.xyz.shape[0] for pts in points.values() for p in pts.values())
    if fraction < 1.0:
        notes.append(f"points subsampled: {100 * fraction:.3g} % of the returns shown, {n_points:,} in the page "
                     f"(uniform random, the same share of every frame; at most {max_points:,}, "
                     f"hifi view --max-points)")

    # ---- layout: the 3-D scene on top, then two panels a row
    depth_hi = {}
    for name, ds in run.depth_maps.items():
        d = np.asarray(ds["depth"].values, dtype=float)
        depth_hi[name] = float(np.nanpercentile(d, 99.0)) if np.isfinite(d).any() else 1.0
    wide = bool(run.range_sensors or run.motion is not None)
    halves = [("camera", name, f"{name}: camera image") for name in run.cameras]
    halves += [("depth", name, f"{name}: depth 0 (dark) .. {depth_hi[name]:.0f} m (yellow), white: no hit")
               for name in run.depth_maps]
    for name in run.gps:
        halves += [("sky", name, f"{name}: sky at the selected epoch"),
                   ("gps_error", name, f"{name}: fix minus truth [m]")]
    specs, titles, heights, positions = [], [], [], {}
    if wide:
        specs.append([{"type": "scene", "colspan": 2}, None])
        titles.append("points and trajectories, scene frame [m]")
        heights.append(2.2)
    for i, (kind, name, title) in enumerate(halves):
        col = 1 + i % 2
        spec = {"type": "polar" if kind == "sky" else "xy"}
        if col == 1:
            specs.append([spec, None])
            heights.append(1.0)
        else:
            specs[-1][1] = spec
        titles.append(title)
        positions[(kind, name)] = (len(specs), col)
    n_rows = len(specs)
    fig = make_subplots(rows=n_rows, cols=2, specs=specs, subplot_titles=titles, row_heights=heights,
                        vertical_spacing=0.06 if n_rows > 1 else 0.0, horizontal_spacing=0.08)
    for a in fig.layout.annotations:                   # the sky's "N" sits where its title would
        if a.text.endswith("sky at the selected epoch"):
            a.yshift = 16
    page = _Page(fig, times.size)
    range_traces = []
    if run.range_sensors:
        range_traces = _add_points(page, go, run, points, held, heights)
    if wide:
        _add_bodies(page, go, run.motion, times)
        fig.update_scenes(**_scene_box(points, run.motion))
    for (kind, name), (row, col) in positions.items():
        if kind == "camera":
            _add_images(page, go, run.cameras[name], name, held[name], row, col, _camera_display, notes)
        elif kind == "depth":
            lut, hi = _colour_lut("Viridis"), depth_hi[name]

            def depth_display(ds, j, lut=lut, hi=hi):
                d = np.asarray(ds["depth"].isel(frame=j).transpose("row", "col").values, dtype=float)
                rgb = lut[_levels(d, 0.0, hi)]
                rgb[~np.isfinite(d)] = 255                        # nothing within range: white
                return rgb.astype(float) / 255.0

            _add_images(page, go, run.depth_maps[name], name, held[name], row, col, depth_display, notes)
        elif kind == "sky":
            _add_sky(page, go, run.gps[name], held[name], row, col)
        elif kind == "gps_error":
            _add_gps_error(page, go, run.gps[name], times, row, col)

    # ---- slider and buttons (the page's script acts on them: method "skip")
    step_s = float(np.median(np.diff(times))) if times.size > 1 else 0.1
    play_ms = int(min(max(1000 * step_s, 60), 1000))
    menus = [dict(type="buttons", direction="left", x=0.0, y=0.0, yanchor="top", xanchor="left", pad=dict(t=48),
                  showactive=False, buttons=[dict(label="play", method="skip", args=["play"]),
                                             dict(label="pause", method="skip", args=["pause"])])]
    if range_traces:
        menus.append(dict(type="dropdown", x=0.0, y=1.0, xanchor="left", yanchor="bottom", showactive=True, active=0,
                          pad=dict(b=8), buttons=[dict(label=f"colour: {m}", method="skip", args=[m])
                                                  for m in COLOR_MODES]))
    if run.not_shown:
        notes.append("not shown: " + ", ".join(run.not_shown))
    title = (f"hifi replay of {run_dir.name}: {times.size} step{'s' if times.size != 1 else ''}, "
             f"t = {times[0]:.3f} .. {times[-1]:.3f} s")
    fig.update_layout(
        sliders=[dict(active=0, x=0.12, len=0.86, y=0.0, yanchor="top", pad=dict(t=40),
                      currentvalue=dict(prefix="t = ", suffix=" s", font=dict(size=14)),
                      steps=[dict(method="skip", label=f"{t:.3f}", value=str(k)) for k, t in enumerate(times)])],
        updatemenus=menus,
        title=dict(text=title + "".join(f"<br><sup>{n}</sup>" for n in notes), x=0.5, xanchor="center",
                   y=1.0, yanchor="top", pad=dict(t=12)),
        height=int(380 * sum(heights) + 200 + 20 * len(notes)), template="plotly_white",
        margin=dict(t=110 + 22 * len(notes), b=110, l=40, r=40),
        legend=dict(x=0.0, y=1.0, xanchor="left", yanchor="top", itemsizing="constant",
                    bgcolor="rgba(255,255,255,0.6)"))
    _apply_step(page, 0, COLOR_MODES[0])
    store = dict(steps=[dict(t=float(t), traces=page.steps[k]) for k, t in enumerate(times)], points=page.points,
                 images=page.images, colour=page.colour, modes=list(COLOR_MODES), play_ms=play_ms)
    return Replay(fig, store, times, n_instants, fraction, n_points, notes)


def _apply_step(page: _Page, k: int, mode: str) -> None:
    """Set the figure's traces to step ``k`` (what the page's script does in the browser)."""
    for key, u in page.steps[k].items():
        t = page.fig.data[int(key)]
        if "points" in u:
            p = page.points.get(u["points"]) if u["points"] is not None else None
            dec = {c: np.frombuffer(base64.b64decode(p[c]), "<f4") for c in "xyz"} if p else {}
            t.update(x=dec.get("x", []), y=dec.get("y", []), z=dec.get("z", []))
            t.marker.update(page.colour[key][mode])
            t.marker.color = np.frombuffer(base64.b64decode(p[mode]), np.uint8) if p else []
        elif "image" in u:
            t.source = page.images[u["image"]]
        else:
            t.update(u)


def _add_points(page: _Page, go, run: RunDatasets, points, held, heights) -> list:
    """One 3-D scatter per range sensor; every shown frame's points once in the store."""
    object_names, object_classes = _categories(run.range_sensors.values())
    obj_labels = object_names + [ATMOSPHERE]
    class_labels = list(dict.fromkeys(object_classes)) + [ATMOSPHERE]
    class_of = np.array([class_labels.index(c) for c in object_classes] + [len(class_labels) - 1], dtype=int)

    def object_codes(oid):
        return np.where(oid == ATMOSPHERE_ID, len(object_names), np.clip(oid, 0, max(len(object_names) - 1, 0)))

    z_lo, z_hi = _percentiles([p.xyz[:, 2] for pts in points.values() for p in pts.values()])
    colorbar = dict(len=0.92 * heights[0] / sum(heights), y=1.0, yanchor="top", x=1.0, xanchor="left")

    def categorical(labels, title):
        return dict(colorscale=_discrete_scale(_palette(len(labels))), cmin=-0.5, cmax=len(labels) - 0.5,
                    colorbar=dict(colorbar, title=dict(text=title), tickvals=list(range(len(labels))),
                                  ticktext=labels))

    z_ticks = (0, 64, 128, 191, 255)
    shared = {"object": categorical(obj_labels, "object"), "class": categorical(class_labels, "class"),
              "height": dict(colorscale="Viridis", cmin=0, cmax=255,
                             colorbar=dict(colorbar, title=dict(text="height z [m]"), tickvals=list(z_ticks),
                                           ticktext=[f"{z_lo + (z_hi - z_lo) * v / 255:.1f}" for v in z_ticks]))}
    traces = []
    for s, name in enumerate(run.range_sensors):
        lo, hi = _percentiles([p.intensity for p in points[name].values()])
        for j, p in points[name].items():
            if len(obj_labels) > 256:
                raise ValueError(f"{name}: {len(obj_labels) - 1} objects; hifi view colours at most 255")
            oc = object_codes(p.object_id)
            page.points[f"{name}/{j}"] = {
                "x": _b64(p.xyz[:, 0], "<f4"), "y": _b64(p.xyz[:, 1], "<f4"), "z": _b64(p.xyz[:, 2], "<f4"),
                "object": _b64(oc, np.uint8), "class": _b64(class_of[oc], np.uint8),
                "intensity": _b64(_levels(p.intensity, lo, hi), np.uint8),
                "height": _b64(_levels(p.xyz[:, 2], z_lo, z_hi), np.uint8)}
        own = dict(colorscale="Cividis", cmin=0, cmax=255,
                   colorbar=dict(colorbar, title=dict(text=f"{_brightness_label(run.range_sensors[name])} of {name}"
                                                            f"<br>(its 1-99 % range)"),
                                 tickvals=[0, 128, 255],
                                 ticktext=[f"{lo:.3g}", f"{(lo + hi) / 2:.3g}", f"{hi:.3g}"]))
        modes = {m: dict(shared.get(m, own), showscale=(s == 0)) for m in COLOR_MODES}
        for m in modes:
            if s > 0:
                modes[m].pop("colorbar")
        updates = [{"points": f"{name}/{int(j)}" if j >= 0 else None} for j in held[name]]
        i = page.add(go.Scatter3d(x=[], y=[], z=[], mode="markers", name=name, hoverinfo="x+y+z+name",
                                  marker=dict(size=POINT_SIZE_PX)), 1, 1, updates)
        page.colour[str(i)] = modes
        traces.append(i)
    return traces


def _scene_box(points, motion) -> dict:
    """Fixed axis ranges (so that the view does not jump from step to step) at equal scales."""
    chunks = [p.xyz for pts in points.values() for p in pts.values() if p.xyz.size]
    if motion is not None:
        chunks.append(np.asarray(motion["position"].values, dtype=float).reshape(-1, 3))
    xyz = np.concatenate(chunks) if chunks else np.zeros((0, 3))
    xyz = xyz[np.all(np.isfinite(xyz), axis=1)]
    if xyz.size == 0:
        return {}
    lo, hi = np.percentile(xyz, 0.5, axis=0), np.percentile(xyz, 99.5, axis=0)
    pad = 0.05 * (hi - lo) + 0.5
    lo, hi = lo - pad, hi + pad
    ratio = (hi - lo) / (hi - lo).max()
    return dict(xaxis=dict(range=[lo[0], hi[0]], title=dict(text="x east [m]")),
                yaxis=dict(range=[lo[1], hi[1]], title=dict(text="y north [m]")),
                zaxis=dict(range=[lo[2], hi[2]], title=dict(text="z up [m]")),
                aspectmode="manual", aspectratio=dict(x=ratio[0], y=ratio[1], z=max(ratio[2], 0.05)))


def _add_bodies(page: _Page, go, motion, times) -> None:
    """Trajectories of the moving bodies (one static line trace) and every body at each step."""
    if motion is None:
        return
    t = _frame_seconds(motion)
    pos = np.asarray(motion["position"].transpose("frame", "body", "xyz").values, dtype=float)
    bodies = [str(b) for b in np.asarray(motion["body"].values)]
    if pos.shape[0] == 0:
        return
    moving = np.nanmax(np.nanmax(pos, axis=0) - np.nanmin(pos, axis=0), axis=1) > 1e-6
    mv = np.flatnonzero(moving)
    if mv.size:
        line = np.concatenate([np.vstack([pos[:, b, :], np.full((1, 3), np.nan)]) for b in mv])
        names = [n for b in mv for n in [bodies[b]] * pos.shape[0] + [""]]
        page.add(go.Scatter3d(x=_plain(line[:, 0]), y=_plain(line[:, 1]), z=_plain(line[:, 2]), mode="lines",
                              name="trajectories", hovertext=names, hoverinfo="text",
                              line=dict(color="black", width=3)), 1, 1)
    idx = np.clip(np.searchsorted(t, times + 0.5 * TIME_MERGE_S, side="right") - 1, 0, t.size - 1)
    updates = [dict(x=_plain(pos[i, :, 0]), y=_plain(pos[i, :, 1]), z=_plain(pos[i, :, 2])) for i in idx]
    page.add(go.Scatter3d(x=[], y=[], z=[], mode="markers+text", name="bodies",
                          text=[b if m else "" for b, m in zip(bodies, moving)], hovertext=bodies, hoverinfo="text",
                          textposition="top center", marker=dict(size=4, color="black", symbol="diamond")),
             1, 1, updates)


def _add_images(page: _Page, go, ds, name, held, row, col, display, notes) -> None:
    """An image trace; every shown frame once in the store as a PNG."""
    factor = 1
    for j in np.unique(held):
        if j >= 0:
            img, factor = _shrink(display(ds, int(j)))
            page.images[f"{name}/{int(j)}"] = _data_uri(img)
    f = max(1, math.ceil(ds.sizes["col"] / IMAGE_MAX_WIDTH_PX))
    page.images[f"{name}/none"] = _data_uri(np.ones((max(1, ds.sizes["row"] // f), max(1, ds.sizes["col"] // f))))
    updates = [{"image": f"{name}/{int(j)}" if j >= 0 else f"{name}/none"} for j in held]
    page.add(go.Image(source=page.images[f"{name}/none"], name=name, hoverinfo="skip"), row, col, updates)
    if factor > 1:
        notes.append(f"{name}: {ds.sizes['col']} x {ds.sizes['row']} px shown {factor}x smaller "
                     f"(at most {IMAGE_MAX_WIDTH_PX} px wide)")
    page.fig.update_xaxes(showticklabels=False, showgrid=False, row=row, col=col)
    page.fig.update_yaxes(showticklabels=False, showgrid=False, row=row, col=col)


#: The sky plot's satellite states: label, colour, marker (those of ``hifi plot``).
_SKY_STATES = (("tracked, direct", "#2ca02c", "circle"), ("blocked, reflected", "#ff7f0e", "circle"),
               ("blocked, lost", "#d62728", "x"))


def _add_sky(page: _Page, go, ds, held, row, col) -> None:
    """Sky plot (azimuth clockwise from north, radius 90 deg - elevation) as ``hifi plot`` draws it."""
    el = np.degrees(np.asarray(ds["elevation"].transpose("frame", "sv").values, dtype=float))
    az = np.degrees(np.asarray(ds["azimuth"].transpose("frame", "sv").values, dtype=float))
    visible = np.asarray(ds["visible"].values, bool) if "visible" in ds else np.isfinite(el) & (el > 0)
    blocked = (np.asarray(ds["blocked"].values, bool) if "blocked" in ds else np.zeros_like(visible)) & visible
    reflected = (np.asarray(ds["reflected"].values, bool) if "reflected" in ds else np.zeros_like(visible)) & blocked
    svs = [str(s) for s in np.asarray(ds["sv"].values)]
    r = np.concatenate([np.append(np.where(visible[:, s], 90.0 - el[:, s], np.nan), np.nan) for s in range(len(svs))])
    th = np.concatenate([np.append(np.where(visible[:, s], az[:, s], np.nan), np.nan) for s in range(len(svs))])
    page.add(go.Scatterpolar(r=_plain(r, 2), theta=_plain(th, 2), mode="lines", line=dict(color="#bbbbbb", width=2),
                             name="satellite tracks", hoverinfo="skip", showlegend=False), row, col)
    for (label, colour, symbol), mask in zip(_SKY_STATES, (visible & ~blocked, reflected, blocked & ~reflected)):
        updates = []
        for j in held:
            m = mask[j] if j >= 0 else np.zeros(len(svs), bool)
            updates.append(dict(r=_plain(90.0 - el[j, m], 2) if j >= 0 else [],
                                theta=_plain(az[j, m], 2) if j >= 0 else [], text=[svs[i] for i in np.flatnonzero(m)]))
        page.add(go.Scatterpolar(r=[], theta=[], mode="markers+text", textposition="top right", name=label,
                                 marker=dict(color=colour, size=9, symbol=symbol)), row, col, updates)
    mask_deg = float(ds.attrs.get("elevation_mask_deg", 0.0))
    page.fig.get_subplot(row, col).update(
        angularaxis=dict(rotation=90, direction="clockwise", tickvals=[0, 90, 180, 270], ticktext=["N", "E", "S", "W"]),
        radialaxis=dict(range=[0, 90], tickvals=[0, 30, 60, 90 - mask_deg],
                        ticktext=["90", "60", "30", f"{mask_deg:g}"]))


def _add_gps_error(page: _Page, go, ds, times, row, col) -> None:
    """East, north, up and horizontal error of the fix over the run, and the selected instant."""
    t = _frame_seconds(ds)
    err = (np.asarray(ds["position_error_enu"].transpose("frame", ...).values, dtype=float)
           if "position_error_enu" in ds else np.full((t.size, 3), np.nan))
    for i, (label, colour) in enumerate((("east", "#1f77b4"), ("north", "#ff7f0e"), ("up", "#2ca02c"))):
        page.add(go.Scatter(x=_plain(t, 6), y=_plain(err[:, i]), mode="lines+markers", marker=dict(size=3),
                            name=label, line=dict(color=colour)), row, col)
    page.add(go.Scatter(x=_plain(t, 6), y=_plain(np.hypot(err[:, 0], err[:, 1])), mode="lines", name="horizontal",
                        line=dict(color="black")), row, col)
    finite = err[np.isfinite(err)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    updates = [dict(x=[float(tk), float(tk)], y=[lo, hi]) for tk in times]
    page.add(go.Scatter(x=[], y=[], mode="lines", name="selected time", showlegend=False,
                        line=dict(color="#888888", dash="dash"), hoverinfo="skip"), row, col, updates)
    page.fig.update_xaxes(title_text="time [s]", row=row, col=col)
    page.fig.update_yaxes(title_text="error [m]", row=row, col=col)


# --------------------------------------------------------------------------------------------
# the file
# --------------------------------------------------------------------------------------------

#: The page's player: reads the store, draws step k with the colour mode chosen, answers the
#: slider, the play / pause buttons and the colour dropdown (all plotly controls of method
#: "skip", whose events it handles). ``gd.hifiReplay`` exposes ``show(k)``, ``setMode(m)``,
#: ``play()``, ``pause()`` and ``state`` for scripting.
_PLAYER_JS = r"""
function hifiReplayStart(id) {
  "use strict";
  var gd = document.getElementById(id);
  var store = JSON.parse(document.getElementById("hifi-replay-data").textContent);
  var decoded = {};
  var state = {step: 0, mode: store.modes[0], timer: null};
  function bytes(b64) {
    var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    return a;
  }
  function points(key) {
    if (key === null) return null;
    if (!decoded[key]) {
      var p = store.points[key], d = {};
      ["x", "y", "z"].forEach(function (c) { d[c] = new Float32Array(bytes(p[c]).buffer); });
      store.modes.forEach(function (m) { d[m] = bytes(p[m]); });
      decoded[key] = d;
    }
    return decoded[key];
  }
  function show(k) {
    k = Math.max(0, Math.min(store.steps.length - 1, k | 0));
    state.step = k;
    var data = gd.data.map(function (t) { return Object.assign({}, t); });
    var traces = store.steps[k].traces;
    Object.keys(traces).forEach(function (key) {
      var u = traces[key], t = data[+key];
      if ("points" in u) {
        var p = points(u.points);
        t.x = p ? p.x : []; t.y = p ? p.y : []; t.z = p ? p.z : [];
        t.marker = Object.assign({}, t.marker, store.colour[key][state.mode], {color: p ? p[state.mode] : []});
      } else if ("image" in u) {
        t.source = store.images[u.image];
      } else {
        Object.assign(t, u);
      }
    });
    var layout = Object.assign({}, gd.layout);
    layout.sliders = gd.layout.sliders.map(function (s, j) { return j === 0 ? Object.assign({}, s, {active: k}) : s; });
    layout.datarevision = k + ":" + state.mode;
    return Plotly.react(gd, data, layout);
  }
  function pause() {
    if (state.timer !== null) { clearInterval(state.timer); state.timer = null; }
  }
  function play() {
    if (state.timer !== null) return;
    if (state.step >= store.steps.length - 1) show(0);
    state.timer = setInterval(function () {
      if (state.step >= store.steps.length - 1) { pause(); return; }
      show(state.step + 1);
    }, store.play_ms);
  }
  function setMode(m) {
    if (store.modes.indexOf(m) < 0) throw new Error("unknown colour mode " + m);
    state.mode = m;
    return show(state.step);
  }
  gd.on("plotly_sliderchange", function (e) {
    var k = parseInt(e.step.value, 10);
    if (k !== state.step) { pause(); show(k); }
  });
  gd.on("plotly_buttonclicked", function (e) {
    var a = (e.button.args || [])[0];
    if (a === "play") play();
    else if (a === "pause") pause();
    else if (store.modes.indexOf(a) >= 0) setMode(a);
  });
  gd.hifiReplay = {show: show, setMode: setMode, play: play, pause: pause, state: state, steps: store.steps.length};
  return show(0);
}
"""


def replay_html(replay: Replay) -> str:
    """The page of ``replay``: plotly's JavaScript, the figure, the store and the player, inline."""
    import json
    div = replay.figure.to_html(include_plotlyjs=True, full_html=False, auto_play=False, div_id="hifi-replay",
                                config=dict(displaylogo=False, responsive=True),
                                post_script="hifiReplayStart('{plot_id}');")
    store = json.dumps(replay.store, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    title = replay.figure.layout.title.text.split("<br>")[0]
    return ("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{_escape(title)}</title>\n</head>\n<body style=\"margin:0\">\n"
            f"<script type=\"application/json\" id=\"hifi-replay-data\">{store}</script>\n"
            f"<script type=\"text/javascript\">{_PLAYER_JS}</script>\n{div}\n</body>\n</html>\n")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_replay(run_dir, out, *, max_points: int = MAX_POINTS, max_frames: int = MAX_FRAMES,
                 overwrite: bool = False) -> Path:
    """Write the replay page of ``run_dir`` to ``out`` (one self-contained HTML file).

    Parameters
    ----------
    run_dir : path-like
        A directory written by ``hifi run``.
    out : path-like
        The HTML file. Its directory must exist; an existing file is replaced only with
        ``overwrite``. The page is written beside it and renamed into place, so a failure
        leaves nothing behind.
    max_points, max_frames : int
        See :func:`build_replay`.

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    FileNotFoundError, FileExistsError, ValueError, ImportError
        Bad input (a missing or unreadable run, an existing ``out``, a missing directory for
        it, an ``out`` that is or lies inside ``run_dir``, plotly missing): nothing is written.
    hifi.OutputError
        The file could not be written (disk full, no permission).
    """
    from ..runtime.safety import check_new_file, check_not_input, write_file
    out = Path(out)
    check_not_input(out, [run_dir])
    check_new_file(out, overwrite)
    html = replay_html(build_replay(run_dir, max_points=max_points, max_frames=max_frames))
    return write_file(out, lambda tmp: tmp.write_text(html, encoding="utf-8"), overwrite=overwrite)


