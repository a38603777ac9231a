"""The VANE path planner: a go/no-go grid from the range sensors' points, a shortest path over it,
pure pursuit along it (``gonogo_planner``, a ``[[models]]`` entry).

References
----------
C. Goodin, P. J. Durst, B. Gates, C. Cummins, J. Priddy, "High fidelity sensor simulations for the
Virtual Autonomous Navigation Environment", SIMPAR 2010 (the go/no-go planner of VANE's robot).
E. W. Dijkstra, "A note on two problems in connexion with graphs", Numer. Math. 1, 1959
(scipy.sparse.csgraph.dijkstra).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hifi.api.bus import Command, SensorData
from hifi.api.model import Model, Var
from hifi.api.params import Param

from .drivers import pure_pursuit_steer

#: Cell states of the map.
UNKNOWN, GO, NOGO = -1, 0, 1


def gonogo_grid(points_xyz, ground_z, *, origin_xy, cell_m, shape, step_m, clearance_m):
    """Go/no-go state of each cell from points [m] (n, 3), scene frame.

    A cell with a point higher than ``step_m`` above ``ground_z`` and lower than
    ``clearance_m`` (what the vehicle would hit) is no-go; a cell with points, none of them
    such, is go; a cell without points is unknown. Returns int8 (rows = y, cols = x).
    """
    p = np.asarray(points_xyz, dtype=float)
    p = p[np.all(np.isfinite(p), axis=1)]
    grid = np.full(shape, UNKNOWN, dtype=np.int8)
    if p.size == 0:
        return grid
    ix = np.floor((p[:, 0] - origin_xy[0]) / cell_m).astype(np.int64)
    iy = np.floor((p[:, 1] - origin_xy[1]) / cell_m).astype(np.int64)
    inside = (ix >= 0) & (ix < shape[1]) & (iy >= 0) & (iy < shape[0])
    ix, iy, h = ix[inside], iy[inside], p[inside, 2] - ground_z
    grid[iy, ix] = GO
    obstacle = (h > step_m) & (h < clearance_m)
    grid[iy[obstacle], ix[obstacle]] = NOGO
    return grid


def plan_path(grid, start_rc, goal_rc, *, inflate_cells: int = 1):
    """Shortest 8-connected path over the cells that are not no-go (unknown counts as go:
    optimistic), no-go cells grown by ``inflate_cells``; ``(rows, cols)`` of the path from start
    to goal, or None when the goal cannot be reached. Dijkstra on a sparse grid graph
    (scipy.sparse.csgraph), edge lengths 1 and sqrt(2) cells."""
    from scipy.ndimage import binary_dilation
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    blocked = grid == NOGO
    if inflate_cells > 0:
        blocked = binary_dilation(blocked, iterations=int(inflate_cells))
    n_r, n_c = grid.shape
    free = ~blocked
    free[start_rc] = True                       # the vehicle is where it is
    idx = np.arange(n_r * n_c).reshape(n_r, n_c)
    R, C = np.nonzero(free)
    rows, cols, w = [], [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):     # each undirected edge once
        r2, c2 = R + dr, C + dc
        ok = (r2 < n_r) & (c2 >= 0) & (c2 < n_c)
        ok[ok] = free[r2[ok], c2[ok]]
        rows.append(idx[R[ok], C[ok]])
        cols.append(idx[r2[ok], c2[ok]])
        w.append(np.full(int(ok.sum()), np.hypot(dr, dc)))
    r, c, wt = np.concatenate(rows), np.concatenate(cols), np.concatenate(w)
    graph = coo_matrix((np.concatenate([wt, wt]), (np.concatenate([r, c]), np.concatenate([c, r]))),
                       shape=(n_r * n_c, n_r * n_c)).tocsr()
    s, g = idx[start_rc], idx[goal_rc]
    dist, pred = dijkstra(graph, indices=s, return_predecessors=True)
    if not np.isfinite(dist[g]):
        return None
    path = [g]
    while path[-1] != s:
        path.append(pred[path[-1]])
    path = np.asarray(path[::-1])
    return np.column_stack(np.unravel_index(path, (n_r, n_c)))


class GoNoGoPlanner(Model):
    """VANE's go/no-go planner: map, plan, drive (Goodin et al. 2010).

    It keeps the points of the range sensors named in ``sensors`` (every detected reported
    point of each frame delivered on the bus, not older than ``memory_s``), and at each step
    builds a go/no-go grid of ``cell_m`` cells over ``extent_m`` around the start and the goal
    (:func:`gonogo_grid`: a point between ``step_m`` and ``clearance_m`` above the ground under
    the vehicle makes its cell no-go), plans the shortest path to ``goal_m`` over the cells not
    no-go, grown by the vehicle's half width (:func:`plan_path`; unknown cells count as go),
    and drives the ``body`` along it with pure pursuit (``lookahead_m``), stopping within
    ``tolerance_m`` of the goal or when no path exists. Navigation: the true pose. Dataset per
    step: the map (``gonogo``, dims ``y``, ``x``), the planned path (``path``, NaN-padded to
    ``max_path_points``), the command.
    """

    model_name: ClassVar[str] = "gonogo_planner"
    default_rate_hz: ClassVar[float] = 2.0
    closed_loop: ClassVar[bool] = True
    PARAMS: ClassVar[dict] = {
        "body": Param("str", doc="the vehicle object it drives"),
        "sensors": Param("any", doc="names of the range sensors whose points it maps"),
        "goal_m": Param("vec2", doc="goal [x, y] in the scene frame [m]"),
        "speed_m_s": Param("float", default=2.0, minimum=0.0, exclusive_minimum=True, doc="cruise speed [m/s]"),
        "cell_m": Param("float", default=0.5, minimum=0.0, exclusive_minimum=True, doc="map cell size [m]"),
        "extent_m": Param("float", default=None, minimum=0.0, exclusive_minimum=True,
                          doc="side of the square map [m], centred half-way between the vehicle's start and the "
                              "goal; default: their distance plus 20 m on every side"),
        "step_m": Param("float", default=0.3, minimum=0.0,
                        doc="a point this high above the ground is an obstacle [m] (a kerb the vehicle cannot "
                            "climb; hifi.world.vehicle climbs 0.15 m)"),
        "clearance_m": Param("float", default=2.5, minimum=0.0, exclusive_minimum=True,
                             doc="points higher than this above the ground pass over the vehicle [m]"),
        "half_width_m": Param("float", default=1.5, minimum=0.0,
                              doc="obstacles are grown by this [m] (a car's half width, 0.9 m, plus room for "
                                  "pure pursuit cutting corners and the cells' size)"),
        "lookahead_m": Param("float", default=3.0, minimum=0.0, exclusive_minimum=True,
                             doc="pure-pursuit look-ahead along the path [m]"),
        "tolerance_m": Param("float", default=1.5, minimum=0.0, exclusive_minimum=True,
                             doc="the goal counts as reached within this distance [m]"),
        "memory_s": Param("float", default=30.0, minimum=0.0, exclusive_minimum=True,
                          doc="points older than this are forgotten [s]"),
        "max_path_points": Param("int", default=400, minimum=2, doc="path points stored per frame"),
    }

    @classmethod
    def check_params(cls, p):
        s = p["sensors"]
        if isinstance(s, str):
            p["sensors"] = [s]
        elif not (isinstance(s, list) and s and all(isinstance(x, str) for x in s)):
            raise ValueError(f"sensors: expected a list of sensor names, got {s!r}")
        return p

    @classmethod
    def check_references(cls, p, *, names, vehicles):
        if p["body"] not in vehicles:
            raise ValueError(f"body: {p['body']!r} is not a vehicle object; vehicles: {', '.join(sorted(vehicles)) or 'none'}")
        for s in p["sensors"]:
            if names.get(s) != "sensors":
                raise ValueError(f"sensors: {s!r} is not a sensor of this scenario")

    def setup(self, ctx):
        super().setup(ctx)
        p = self.params
        start = np.asarray(ctx.scene.pose_at(p["body"], 0.0).translation[:2], dtype=float)
        goal = np.asarray(p["goal_m"], dtype=float)
        extent = p["extent_m"] if p["extent_m"] is not None else float(np.max(np.abs(goal - start))) + 40.0
        self._n = int(np.ceil(extent / p["cell_m"]))
        self._origin = 0.5 * (start + goal) - 0.5 * self._n * p["cell_m"]
        self._clouds: list[tuple[float, np.ndarray]] = []
        track = ctx.scene.bodies[p["body"]].local
        self._wheelbase = track.wheelbase_m
        self._accel = track.max_accel_m_s2
        for s in p["sensors"]:
            ctx.bus.subscribe(self._on_scan, SensorData, sender=s)

    def _on_scan(self, msg: SensorData) -> None:
        d = msg.data
        if not all(v in d for v in ("x_noisy", "y_noisy", "z_noisy", "detected")):
            return
        det = np.asarray(d["detected"], dtype=bool)
        pts = np.stack([np.asarray(d[v], dtype=float)[det] for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
        self._clouds.append((msg.time_s, pts))

    def attrs(self):
        return {"goal_m": [float(v) for v in self.params["goal_m"]]}

    def coords(self):
        p = self.params
        cx = self._origin[0] + (np.arange(self._n) + 0.5) * p["cell_m"]
        cy = self._origin[1] + (np.arange(self._n) + 0.5) * p["cell_m"]
        return {"x": Var(("x",), cx, "m", "cell centre, scene x"), "y": Var(("y",), cy, "m", "cell centre, scene y"),
                "xy": Var(("xy",), np.array(["x", "y"]), "1", "scene axis")}

    def _cell(self, xy):
        rc = np.floor((np.asarray(xy) - self._origin) / self.params["cell_m"]).astype(int)[::-1]
        return tuple(np.clip(rc, 0, self._n - 1))

    def step(self, k, t):
        p = self.params
        self._clouds = [(ts, c) for ts, c in self._clouds if ts >= t - p["memory_s"]]
        pose = self.ctx.scene.pose_at(p["body"], t)
        xy = np.asarray(pose.translation[:2], dtype=float)
        fwd = pose.rotation.apply([1.0, 0.0, 0.0])
        yaw = float(np.arctan2(fwd[1], fwd[0]))
        pts = np.concatenate([c for _, c in self._clouds]) if self._clouds else np.zeros((0, 3))
        grid = gonogo_grid(pts, float(pose.translation[2]), origin_xy=self._origin, cell_m=p["cell_m"],
                           shape=(self._n, self._n), step_m=p["step_m"], clearance_m=p["clearance_m"])
        goal = np.asarray(p["goal_m"], dtype=float)
        path_xy = np.full((p["max_path_points"], 2), np.nan)
        speed = steer = 0.0
        if np.hypot(*(goal - xy)) > p["tolerance_m"]:
            cells = plan_path(grid, self._cell(xy), self._cell(goal),
                              inflate_cells=int(np.ceil(p["half_width_m"] / p["cell_m"])))
            if cells is not None:
                pts_xy = self._origin + (cells[:, ::-1] + 0.5) * p["cell_m"]
                pts_xy[-1] = goal
                path_xy[:min(len(pts_xy), len(path_xy))] = pts_xy[:len(path_xy)]
                # the look-ahead point: the first path point at least lookahead_m away
                d = np.hypot(*(pts_xy - xy).T)
                far = np.flatnonzero(d >= p["lookahead_m"])
                target = pts_xy[far[0]] if far.size else pts_xy[-1]
                steer = pure_pursuit_steer(xy[0], xy[1], yaw, target, self._wheelbase)
                remaining = float(np.sum(np.hypot(*np.diff(pts_xy, axis=0).T))) + float(d[0])
                speed = float(min(p["speed_m_s"], np.sqrt(2.0 * self._accel * max(remaining - 0.5 * p["tolerance_m"],
                                                                                   0.0))))
        self.ctx.bus.publish(Command(self.name, t, target=p["body"], name="drive",
                                     value={"speed_m_s": speed, "steer_deg": float(np.degrees(steer))}))
        return {
            "gonogo": Var(("y", "x"), grid, "1", "go/no-go map: -1 unknown, 0 go, 1 no-go"),
            "path": Var(("path_point", "xy"), path_xy, "m", "planned path, scene frame (NaN-padded)"),
            "position_true": Var(("xy",), xy, "m", "vehicle position"),
            "speed_command": Var((), np.float64(speed), "m/s", "commanded speed"),
            "steer_command": Var((), np.float64(steer), "rad", "commanded steering angle"),
            "points_mapped": Var((), np.int64(len(pts)), "1", "points in the map's memory"),
        }


def plot_gonogo(ds, frame: int = -1):
    """``hifi plot`` of a ``gonogo_planner`` dataset: the go/no-go map of ``frame`` (default the
    last) with the path planned then, the vehicle's positions so far and the goal."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    n = ds.sizes["frame"]
    f = frame % n
    grid = ds["gonogo"].isel(frame=f).values
    x, y = ds["x"].values, ds["y"].values
    h = 0.5 * (x[1] - x[0]) if x.size > 1 else 0.5
    fig, ax = plt.subplots(figsize=(8.5, 7.5))
    cmap = ListedColormap(["0.85", "white", "0.15"])                 # unknown, go, no-go
    ax.imshow(grid + 1, cmap=cmap, vmin=-0.5, vmax=2.5, origin="lower", interpolation="nearest",
              extent=(x[0] - h, x[-1] + h, y[0] - h, y[-1] + h))
    path = ds["path"].isel(frame=f).values
    ax.plot(path[:, 0], path[:, 1], color="tab:blue", lw=1.5, label="planned path")
    pos = ds["position_true"].values[:f + 1]
    ax.plot(pos[:, 0], pos[:, 1], ".-", color="tab:orange", ms=3, lw=0.8, label="vehicle so far")
    goal = np.asarray(ds.attrs.get("goal_m", [np.nan, np.nan]), dtype=float)
    if np.all(np.isfinite(goal)):
        ax.plot(*goal, "*", color="tab:red", ms=14, label="goal")
    from matplotlib.patches import Patch
    handles, _ = ax.get_legend_handles_labels()
    handles += [Patch(color="0.15", label="no-go"), Patch(facecolor="white", edgecolor="0.5", label="go"),
                Patch(color="0.85", label="unknown")]
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    ax.set_xlabel("x (east) [m]")
    ax.set_ylabel("y (north) [m]")
    from hifi.run.dataset import seconds_since_start
    t = float(seconds_since_start(ds, "frame_time")[f])
    ax.set_title(f"{ds.attrs.get('sensor_name', 'planner')} (gonogo_planner): frame {f}, t = {t:g} s")
    fig.tight_layout()
    return fig
