"""A run watched while it happens: the frames published to a Foxglove WebSocket server.

From the command line, ``hifi run examples/crossing.toml --out out/crossing --live 8765``; from
Python::

    with hifi.LiveServer("127.0.0.1:8765") as server:   # one server for any number of runs
        sim.run(out="run1", live=server)

It lives with the plots and the replay page (the camera image is shown as they show it,
:mod:`hifi.viz.imaging`); the run knows it only as the object it hands its frames to.

:class:`LiveServer` starts a Foxglove WebSocket server (the ``foxglove-sdk`` package, ``pip
install "hifi[live]"``) and turns each frame the time manager hands to the writers into
messages of Foxglove's well-known schemas, so Foxglove (app.foxglove.dev or the desktop app,
"Open connection", "Foxglove WebSocket", ``ws://127.0.0.1:8765``) shows the run live.
The server lives in the SDK's own threads; the run only converts and hands over a frame, and
only for topics a client has subscribed to, so a run with no client connected spends under 1 %
of its time on it (docs/live.md gives the measurement).

Topics (``NAME`` a model of the scenario; every stamp is the simulated instant from the
scenario's ``start_utc``, UTC nanoseconds since 1970, :class:`hifi.api.timebase.Epoch`):

======================= ================================ ===============================================================
topic                   schema                           from
======================= ================================ ===============================================================
``/NAME/points``        ``foxglove.PointCloud``          every frame with ``x_noisy``, ``y_noisy``, ``z_noisy`` and
                                                         ``detected`` (the reported returns), else ``x``, ``y``, ``z``
                                                         (the finite hits: a depth map); fields ``x y z`` (float32,
                                                         scene frame ``map``), ``intensity`` (float32, the sensor's own
                                                         scale, where the frame has it), ``object`` (int32, object id)
                                                         and ``class`` (uint8, semantic class id, from ``annotation``)
``/NAME/image``         ``foxglove.RawImage``            ``image`` (a camera's DN) as ``hifi plot`` shows it (gray-world
                                                         white balance, gamma 1/2.2), ``rgb8`` or ``mono8``, in the
                                                         frame ``NAME_optical``
``/NAME/depth``         ``foxglove.RawImage``            ``depth`` [m] as ``32FC1`` (NaN: no hit)
``/NAME/camera_info``   ``foxglove.CameraCalibration``   the same cameras' pinhole model (``plumb_bob`` from
                                                         ``focal_length_px``, ``principal_point_px``, ``distortion_k1``,
                                                         as the MCAP export's ``CameraInfo``)
``/NAME/pose``          ``foxglove.PoseInFrame``         ``position`` (3) with ``orientation`` (x, y, z, w) or ``yaw``
                                                         [rad]: a pose sensor, a vehicle, an INS
``/NAME/path``          ``foxglove.PosesInFrame``        the same poses so far, one per :data:`PATH_STEP_M` travelled,
                                                         sent at most once per :data:`PATH_PERIOD_S` of simulated time
                                                         and at the end of the run
``/NAME/VAR``           ``foxglove.Grid``                a variable over ``(y, x)`` cells whose centres the model's
                                                         coordinates ``x``, ``y`` give (the planner's go/no-go map), in
                                                         the plane z = 0
``/NAME/VAR``           ``foxglove.PosesInFrame``        a variable of ``(n, xy)`` points [m] (a planned path; NaN rows
                                                         dropped), at z = 0
``/tf``                 ``foxglove.FrameTransforms``     every body of ``motion.nc`` at each sample: ``map`` -> the
                                                         body; with each camera frame the fixed ``NAME`` ->
                                                         ``NAME_optical``
``/objects``            ``foxglove.SceneUpdate``         one cube per object, its oriented bounding box (``box_center``,
                                                         ``box_size``, ``box_yaw``), in its material's ``color_rgb``
``/motion/BODY/pose``,  ``foxglove.PoseInFrame``,        every moving object that rides on nothing (a vehicle, a car on
``/motion/BODY/path``   ``foxglove.PosesInFrame``        a track), from ``motion.nc``'s samples, as ``/NAME/pose`` and
                                                         ``/NAME/path``
======================= ================================ ===============================================================

Frames: ``map`` is the scene frame (x east, y north, z up; REP 105's world-fixed frame, as in
the MCAP export, :mod:`hifi.exporters.mcap`); a body's frame is its name (x forward, y left, z
up); a camera's image is in ``NAME_optical`` (z forward, x right, y down; REP 103 "Suffix
Frames"). Points are sent in ``map`` as the dataset holds them (each at its own firing
instant, so a moving sensor's sweep needs no deskewing here).

A message is built only when its topic has a subscriber, except the first of a topic that
appears during the run (at its model's first frame), which is kept and sent to a client that
subscribes later (as ROS's transient-local topics latch their last message); a topic
subscribed to after a skipped frame gets the next frame. The run never waits for a client: the SDK queues at most its backlog per client (1024
messages) and drops the oldest when a client reads too slowly.

References
----------
Foxglove WebSocket protocol, foxglove/ws-protocol ``docs/spec.md`` (advertise, subscribe,
binary message data); the SDK's server speaks it under the subprotocol name
``foxglove.sdk.v1``. Foxglove message schemas (docs.foxglove.dev, "Message schemas": PointCloud,
RawImage, PoseInFrame, PosesInFrame, Grid, FrameTransforms, SceneUpdate). REP 103, REP 105.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from ..errors import ScenarioError

#: Address the server listens on when ``--live`` names only a port: the loopback interface,
#: so a run is not visible to the network unless asked (``--live 0.0.0.0:8765``).
DEFAULT_HOST = "127.0.0.1"

#: Port of ``--live`` without a value: Foxglove's default WebSocket port (the SDK's
#: ``foxglove.start_server`` default and the port Foxglove's "Open connection" dialog proposes).
DEFAULT_PORT = 8765

#: Frame id of the scene frame.
MAP_FRAME = "map"

#: A path gets a new pose once the body has moved this far from the last one [m].
PATH_STEP_M = 0.05

#: A path is sent at most once per this much simulated time [s] (every pose of a 100 Hz pose
#: sensor would resend the whole path 100 times a second).
PATH_PERIOD_S = 0.5

#: Most poses a path keeps; beyond it every second pose is dropped (a path of 40 km at
#: :data:`PATH_STEP_M` would otherwise be a message of some 60 MB).
PATH_MAX_POSES = 20000

#: How often a run waiting for a client (``wait_s``) looks for one [s].
WAIT_POLL_S = 0.02

#: Opacity of the object boxes of ``/objects`` (0..1): the points inside stay visible.
BOX_ALPHA = 0.35

#: Rotation optical frame -> sensor frame as a quaternion (x, y, z, w): optical z (forward) =
#: sensor x, optical x (right) = -sensor y, optical y (down) = -sensor z (REP 103, "Suffix
#: Frames"); the matrix of :data:`hifi.exporters.mcap.OPTICAL_IN_SENSOR`.
OPTICAL_IN_SENSOR_XYZW = (-0.5, 0.5, -0.5, 0.5)


def parse_address(value, key: str = "live") -> tuple[str, int]:
    """``[HOST:]PORT`` (or a port as an int) as ``(host, port)``.

    Parameters
    ----------
    value : str or int
        ``"HOST:PORT"``, ``"PORT"`` or a port; a bare port listens on :data:`DEFAULT_HOST`. An
        IPv6 host is written in brackets, ``"[::1]:8765"``. Port 0 asks the system for any
        free port (:attr:`LiveServer.port` says which).
    key : str
        How the value is named in an error (``"--live"`` on the command line).

    Returns
    -------
    tuple of (str, int)

    Raises
    ------
    hifi.ScenarioError
        Naming ``key`` and the value: not ``[HOST:]PORT``, or a port outside 0..65535.
    """
    allowed = "expected [HOST:]PORT with PORT an integer 0..65535 (0: any free port), e.g. 8765 or 127.0.0.1:8765"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        host, port_text = DEFAULT_HOST, str(int(value))
    elif isinstance(value, str):
        text = value.strip()
        if text.startswith("["):                     # [IPv6]:PORT
            host, sep, port_text = text[1:].partition("]:")
            if not sep:
                raise ScenarioError(allowed, key=key, value=value)
        elif ":" in text:
            host, _, port_text = text.rpartition(":")
        else:
            host, port_text = DEFAULT_HOST, text
    else:
        raise ScenarioError(allowed, key=key, value=value)
    if not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ScenarioError(allowed, key=key, value=value)
    return host, int(port_text)


def _foxglove():
    """The ``foxglove`` package (foxglove-sdk), or an ImportError with the install command."""
    try:
        import foxglove
        import foxglove.channels  # noqa: F401
        import foxglove.messages  # noqa: F401
        import foxglove.websocket  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"--live needs the foxglove-sdk package ({exc}); install it with: "
                          f'pip install "foxglove-sdk>=0.30,<0.31" (or pip install ".[live]")') from None
    return foxglove


def _listener(fg):
    """The server's callbacks (run on the SDK's threads): they note the channels a client has
    just subscribed to, in ``subscribed`` under ``lock``; the others are the SDK's no-ops."""

    class Listener(fg.websocket.ServerListener):
        def __init__(self):
            self.lock = threading.Lock()
            self.subscribed: set[int] = set()

        def on_subscribe(self, client, channel) -> None:
            with self.lock:
                self.subscribed.add(int(channel.id))

    return Listener()


class LiveServer:
    """A Foxglove WebSocket server that publishes the frames of runs while they happen.

    Parameters
    ----------
    address : str or int
        ``[HOST:]PORT`` (:func:`parse_address`); default :data:`DEFAULT_PORT` on
        :data:`DEFAULT_HOST`.
    wait_s : float
        At the start of each run, hold the first event until a client has subscribed to a
        topic, at most this long [s] (0: do not wait). A short run is otherwise over before
        Foxglove has connected.
    name : str
        The server's name, shown by Foxglove.
    key : str
        How the address is named in an error (``"--live"`` on the command line).

    Attributes
    ----------
    host : str
    port : int
        The port listened on (the system's choice for port 0).

    Raises
    ------
    hifi.ScenarioError
        A bad address, or one the server cannot listen on (a port in use, an unknown host),
        naming ``key`` and the address.
    ImportError
        ``foxglove-sdk`` is not installed (the message gives the command).

    Notes
    -----
    One server serves any number of runs in turn (:meth:`begin` ... :meth:`end`): a stepping
    session keeps one open across its steps. :meth:`close` (or leaving a ``with`` block) stops
    it. The topics, schemas and frames are in the module docstring.
    """

    def __init__(self, address=DEFAULT_PORT, *, wait_s: float = 0.0, name: str = "hifi", key: str = "live"):
        host, port = parse_address(address, key)
        if not (isinstance(wait_s, (int, float)) and np.isfinite(wait_s) and wait_s >= 0):
            raise ScenarioError("expected a number of seconds >= 0", key=f"{key}-wait" if key.startswith("--")
                                else "wait_s", value=wait_s)
        fg = _foxglove()
        self._fg = fg
        self._listener = _listener(fg)
        self._context = fg.Context()
        try:
            self._server = fg.start_server(name=name, host=host, port=port, context=self._context,
                                           server_listener=self._listener)
        except RuntimeError as exc:                  # FoxgloveError: Failed to bind port: ...
            reason = str(exc).removeprefix("FoxgloveError: ")
            raise ScenarioError(f"cannot listen there ({reason}); choose another port (0: any free one) or host",
                                key=key, value=address) from None
        self.host = host
        self.port = int(self._server.port)
        self.wait_s = float(wait_s)
        self._channels: dict[str, Any] = {}
        self._latest: dict[str, tuple[Any, int]] = {}
        self._sent: set[str] = set()
        self._views: dict[int, list] = {}
        self._epoch_ns = 0
        self._scene = None
        self._closed = False

    @property
    def url(self) -> str:
        """``ws://HOST:PORT``, what Foxglove's "Open connection" dialog takes."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"

    def __enter__(self) -> "LiveServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server (clients are disconnected); a second call does nothing."""
        if not self._closed:
            self._closed = True
            self._server.stop()

    # -- a run ---------------------------------------------------------------------------
    def begin(self, scene, models, start_utc) -> None:
        """Start publishing a run: the scene (object names, classes, colours), its models, and
        the epoch of t = 0 (``start_utc``); then wait for a client (``wait_s``).

        Topics that only a frame's variables tell are advertised at the model's first frame;
        those of ``/tf``, ``/objects`` and of every model that declares its
        :meth:`~hifi.api.model.Model.frame_layout` now.
        """
        from ..api.timebase import Epoch
        self._epoch_ns = int(Epoch.from_utc(start_utc).utc.astype("datetime64[ns]").astype(np.int64))
        self._scene = scene
        self._views = {}
        self._latest.clear()
        self._sent.clear()
        for model in models:
            layout = model.frame_layout()
            if layout is not None:
                info = {n: (None, tuple(shape), np.dtype(dt)) for n, (shape, dt) in layout.items()}
                self._views[id(model)] = self._make_views(model, info)
        # Topics advertised before the run are built only for a subscriber; one advertised at a
        # model's first frame keeps that frame for a client that subscribes a moment later.
        self._sent.update(self._channels)
        self._wait_for_client()

    def _wait_for_client(self) -> None:
        if self.wait_s <= 0 or not self._channels:
            return
        from ..runtime.interrupt import check
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            # A stop signal raises in the sleep below, or, where its exception was swallowed on
            # the way (it arrived in a finaliser or a C callback: hifi.runtime.interrupt), it
            # waits in check(), which the time manager calls only between events: here, before
            # the first, the wait itself must ask.
            check()
            if any(ch.has_sinks() for ch in self._channels.values()):
                return
            time.sleep(WAIT_POLL_S)

    def frame(self, model, k: int, t: float, frame: dict) -> None:
        """Publish frame ``k`` of ``model`` at simulated time ``t`` [s]; ``frame`` maps a
        variable's name to its :class:`~hifi.api.model.Var` (read, never changed)."""
        self._resend_subscribed()
        views = self._views.get(id(model))
        if views is None:
            info = {n: (tuple(v.dims), np.shape(v.data), np.asarray(v.data).dtype) for n, v in frame.items()}
            views = self._views[id(model)] = self._make_views(model, info)
        if not views:
            return
        t_ns = self._epoch_ns + int(round(float(t) * 1e9))
        for view in views:
            view.publish(self, frame, float(t), t_ns)

    def end(self) -> None:
        """The run is over: each path is sent whole, and the latest messages of topics
        subscribed to since the last frame."""
        for views in self._views.values():
            for view in views:
                if hasattr(view, "finish"):
                    view.finish(self)
        self._resend_subscribed()

    # -- channels ------------------------------------------------------------------------
    def _channel(self, topic: str, kind: str):
        """The channel of ``topic`` for messages of the class ``kind`` (``"PointCloud"``, ...),
        made on first use."""
        ch = self._channels.get(topic)
        if ch is not None and ch.schema_name() == f"foxglove.{kind}":
            return ch
        if ch is not None:                           # another run put another schema there
            ch.close()
        ch = self._channels[topic] = getattr(self._fg.channels, f"{kind}Channel")(topic, context=self._context)
        self._latest.pop(topic, None)
        self._sent.discard(topic)
        return ch

    def _wanted(self, topic: str) -> bool:
        """Whether a message of ``topic`` should be built now: a client subscribes to it, or
        it appeared during this run and has had no message yet."""
        if topic not in self._sent or self._channels[topic].has_sinks():
            return True
        self._latest.pop(topic, None)                # this frame is skipped: nothing to resend
        return False

    def _send(self, topic: str, message, t_ns: int) -> None:
        self._channels[topic].log(message, log_time=int(t_ns))
        self._latest[topic] = (message, int(t_ns))
        self._sent.add(topic)

    def _resend_subscribed(self) -> None:
        with self._listener.lock:
            if not self._listener.subscribed:
                return
            ids, self._listener.subscribed = self._listener.subscribed, set()
        for topic, ch in self._channels.items():
            if ch.id() in ids and topic in self._latest:
                message, t_ns = self._latest[topic]
                ch.log(message, log_time=t_ns)

    # -- what a frame shows --------------------------------------------------------------
    def _make_views(self, model, info: dict) -> list:
        """The views of a model's frames, from its variables' ``(dims or None, shape, dtype)``."""
        name = model.name
        views = []
        if "box_center" in info or (info.get("position", (None, ()))[1][-1:] == (3,)
                                    and len(info["position"][1]) == 2):
            views.append(_MotionView(self, model))
            return views
        if _points_source(info) is not None:
            views.append(_PointsView(self, name, info))
        optical = False
        if "image" in info and len(info["image"][1]) in (2, 3) and info["image"][2].kind == "u":
            views.append(_ImageView(self, name, model))
            optical = True
        if "depth" in info and len(info["depth"][1]) == 2:
            views.append(_DepthView(self, name))
            optical = True
        if optical:
            views.append(_OpticalView(self, name))
            attrs = model.attrs()
            if "focal_length_px" in attrs and "principal_point_px" in attrs:
                image_var = "image" if "image" in info else "depth"
                views.append(_CalibrationView(self, name, attrs, info[image_var][1][:2]))
        if info.get("position", (None, ()))[1] == (3,) and (info.get("orientation", (None, ()))[1] == (4,)
                                                              or info.get("yaw", (None, None))[1] == ()):
            views.append(_PoseView(self, f"/{name}"))
        for var, (dims, shape, dtype) in info.items():
            if dims == ("y", "x") and dtype.kind in "iuf":
                grid = _grid_geometry(model)
                if grid is not None:
                    views.append(_GridView(self, name, var, dtype, grid))
            elif (dims is not None and len(dims) == 2 and dims[-1] == "xy" and shape[-1] == 2
                  and f"/{name}/{var}" not in {getattr(v, "path_topic", None) for v in views}):
                views.append(_XYPathView(self, name, var))     # unless a pose's path has that topic
        return views


def _stamp(fg, t_ns: int):
    sec, nsec = divmod(int(t_ns), 1_000_000_000)
    return fg.messages.Timestamp(sec=sec, nsec=nsec)


def _pose(fg, position, quat_xyzw):
    m = fg.messages
    return m.Pose(position=m.Vector3(x=float(position[0]), y=float(position[1]), z=float(position[2])),
                  orientation=m.Quaternion(x=float(quat_xyzw[0]), y=float(quat_xyzw[1]), z=float(quat_xyzw[2]),
                                           w=float(quat_xyzw[3])))


def _yaw_quat(yaw: float) -> tuple:
    """Quaternion (x, y, z, w) of a rotation by ``yaw`` [rad] about z."""
    return (0.0, 0.0, float(np.sin(0.5 * yaw)), float(np.cos(0.5 * yaw)))


#: numpy dtype kind and size -> the name of Foxglove's PackedElementField numeric type.
_NUMERIC = {("f", 4): "Float32", ("f", 8): "Float64", ("i", 1): "Int8", ("u", 1): "Uint8", ("i", 2): "Int16",
            ("u", 2): "Uint16", ("i", 4): "Int32", ("u", 4): "Uint32"}


def _points_source(info: dict):
    """The variables of the points of a frame: ``(x, y, z, mask)``, mask None for finite ``x``."""
    noisy = ("x_noisy", "y_noisy", "z_noisy")
    if all(v in info for v in noisy) and "detected" in info:
        return (*noisy, "detected")
    if all(v in info for v in ("x", "y", "z")):
        return "x", "y", "z", None
    return None


class _PointsView:
    """``/NAME/points``: the frame's points in ``map`` with intensity, object and class."""

    def __init__(self, live: LiveServer, name: str, info: dict):
        self.topic = f"/{name}/points"
        self.source = _points_source(info)
        self.has_intensity = "intensity" in info
        self.has_class = "annotation" in info
        names, formats = ["x", "y", "z"], ["<f4"] * 3
        if self.has_intensity:
            names.append("intensity"), formats.append("<f4")
        if "object_id" in info:
            names.append("object"), formats.append("<i4")
        if self.has_class:
            names.append("class"), formats.append("u1")
        self.dtype = np.dtype({"names": names, "formats": formats})
        m = live._fg.messages
        self.fields = [m.PackedElementField(name=n, offset=self.dtype.fields[n][1],
                                            type=getattr(m.PackedElementFieldNumericType,
                                                         _NUMERIC[(self.dtype[n].kind, self.dtype[n].itemsize)]))
                       for n in names]
        live._channel(self.topic, "PointCloud")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if not live._wanted(self.topic):
            return
        xv, yv, zv, mv = self.source
        if any(v not in frame for v in (xv, yv, zv)):
            return
        x = np.asarray(frame[xv].data)
        keep = np.isfinite(x)
        if mv is not None and mv in frame and np.shape(frame[mv].data) == x.shape:
            keep &= np.asarray(frame[mv].data, dtype=bool)
        out = np.zeros(int(keep.sum()), dtype=self.dtype)
        out["x"], out["y"], out["z"] = x[keep], np.asarray(frame[yv].data)[keep], np.asarray(frame[zv].data)[keep]
        for field, var in (("intensity", "intensity"), ("object", "object_id"), ("class", "annotation")):
            if field in self.dtype.names and var in frame and np.shape(frame[var].data) == x.shape:
                values = np.asarray(frame[var].data)[keep]
                out[field] = np.nan_to_num(values) if values.dtype.kind == "f" else values
        fg = live._fg
        msg = fg.messages.PointCloud(timestamp=_stamp(fg, t_ns), frame_id=MAP_FRAME,
                                     pose=_pose(fg, (0, 0, 0), (0, 0, 0, 1)), point_stride=self.dtype.itemsize,
                                     fields=self.fields, data=out.tobytes())
        live._send(self.topic, msg, t_ns)


class _ImageView:
    """``/NAME/image``: a camera's image as ``hifi plot`` and ``hifi view`` show it
    (:mod:`hifi.viz.imaging`: black level off, gray-world white balance, ``max_dn`` white,
    display gamma 1/2.2), in 8 bits, ``rgb8`` or ``mono8``."""

    def __init__(self, live: LiveServer, name: str, model):
        self.topic = f"/{name}/image"
        self.frame_id = f"{name}_optical"
        attrs = model.attrs()
        self.black = float(attrs.get("black_level_dn", 0.0))
        self.max_dn = attrs.get("max_dn")                       # None: the frame's own maximum
        live._channel(self.topic, "RawImage")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if "image" not in frame or not live._wanted(self.topic):
            return
        from .imaging import display, white_balance_gains
        image = np.asarray(frame["image"].data, dtype=float)
        if image.ndim == 2:
            image = image[..., None]
        if image.shape[2] not in (1, 3):
            return
        max_dn = float(self.max_dn) if self.max_dn is not None else float(max(image.max(initial=0.0), 1.0))
        gains = white_balance_gains(image, "gray-world", black_level_dn=self.black, saturation_dn=max_dn)
        shown = display((image - self.black) * gains, max_dn - self.black, np.any(image >= max_dn, axis=-1))
        img8 = np.ascontiguousarray(np.round(255.0 * shown).astype(np.uint8))
        encoding = "rgb8" if img8.ndim == 3 else "mono8"
        h, w = img8.shape[:2]
        fg = live._fg
        msg = fg.messages.RawImage(timestamp=_stamp(fg, t_ns), frame_id=self.frame_id, width=w, height=h,
                                   encoding=encoding, step=img8.strides[0], data=img8.tobytes())
        live._send(self.topic, msg, t_ns)


class _DepthView:
    """``/NAME/depth``: depth along the optical axis [m] as ``32FC1``."""

    def __init__(self, live: LiveServer, name: str):
        self.topic = f"/{name}/depth"
        self.frame_id = f"{name}_optical"
        live._channel(self.topic, "RawImage")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if "depth" not in frame or not live._wanted(self.topic):
            return
        depth = np.ascontiguousarray(frame["depth"].data, dtype="<f4")
        h, w = depth.shape
        fg = live._fg
        msg = fg.messages.RawImage(timestamp=_stamp(fg, t_ns), frame_id=self.frame_id, width=w, height=h,
                                   encoding="32FC1", step=4 * w, data=depth.tobytes())
        live._send(self.topic, msg, t_ns)


class _OpticalView:
    """The fixed transform ``NAME`` -> ``NAME_optical`` on ``/tf`` with each camera frame."""

    def __init__(self, live: LiveServer, name: str):
        self.name = name
        live._channel("/tf", "FrameTransforms")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if not live._wanted("/tf"):
            return
        fg = live._fg
        m = fg.messages
        q = OPTICAL_IN_SENSOR_XYZW
        tf = m.FrameTransform(timestamp=_stamp(fg, t_ns), parent_frame_id=self.name,
                              child_frame_id=f"{self.name}_optical", translation=m.Vector3(x=0.0, y=0.0, z=0.0),
                              rotation=m.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))
        live._send("/tf", m.FrameTransforms(transforms=[tf]), t_ns)


class _CalibrationView:
    """``/NAME/camera_info``: the pinhole model of a camera, with each of its frames, so the 3D
    panel can place the image; the conventions of the MCAP export's ``CameraInfo``
    (:mod:`hifi.exporters.mcap`): ``plumb_bob`` with ``k1`` = ``distortion_k1`` (0 when
    absent), fx = fy = ``focal_length_px``, the principal point ``principal_point_px`` - 0.5
    (hifi counts pixel positions from a pixel's edge, ROS and Foxglove from its centre)."""

    def __init__(self, live: LiveServer, name: str, attrs: dict, shape):
        self.topic = f"/{name}/camera_info"
        self.frame_id = f"{name}_optical"
        self.height, self.width = (int(n) for n in shape)
        f = float(attrs["focal_length_px"])
        cx, cy = np.asarray(attrs["principal_point_px"], dtype=float).reshape(2) - 0.5
        self.D = [float(attrs.get("distortion_k1", 0.0)), 0.0, 0.0, 0.0, 0.0]
        self.K = [f, 0.0, cx, 0.0, f, cy, 0.0, 0.0, 1.0]
        self.P = [f, 0.0, cx, 0.0, 0.0, f, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
        live._channel(self.topic, "CameraCalibration")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if not live._wanted(self.topic):
            return
        fg = live._fg
        msg = fg.messages.CameraCalibration(timestamp=_stamp(fg, t_ns), frame_id=self.frame_id, width=self.width,
                                            height=self.height, distortion_model="plumb_bob", D=self.D, K=self.K,
                                            R=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], P=self.P)
        live._send(self.topic, msg, t_ns)


class _PoseView:
    """``PREFIX/pose`` at every frame and ``PREFIX/path``, the poses so far (``PREFIX`` is
    ``/NAME`` for a model's own pose, ``/motion/BODY`` for a moving body of the ground truth)."""

    def __init__(self, live: LiveServer, prefix: str):
        self.topic, self.path_topic = f"{prefix}/pose", f"{prefix}/path"
        self.positions: list[np.ndarray] = []
        self.quats: list[tuple] = []
        self.path_sent_t, self.path_sent_n = -np.inf, 0
        self.last: tuple[float, int] | None = None          # (t [s], t [ns]) of the latest pose
        live._channel(self.topic, "PoseInFrame")
        live._channel(self.path_topic, "PosesInFrame")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if "position" not in frame:
            return
        position = np.asarray(frame["position"].data, dtype=float)
        if "orientation" in frame:
            quat = tuple(np.asarray(frame["orientation"].data, dtype=float))
        elif "yaw" in frame:
            quat = _yaw_quat(float(frame["yaw"].data))
        else:
            return
        self.update(live, position, quat, t, t_ns)

    def update(self, live: LiveServer, position: np.ndarray, quat: tuple, t: float, t_ns: int) -> None:
        """The pose ``position`` [m], ``quat`` (x, y, z, w) at ``t`` [s]: sent, and kept for the path."""
        if not (np.all(np.isfinite(position)) and np.all(np.isfinite(quat))):
            return
        if not self.positions or np.linalg.norm(position - self.positions[-1]) >= PATH_STEP_M:
            self.positions.append(position)
            self.quats.append(quat)
            if len(self.positions) > PATH_MAX_POSES:
                self.positions, self.quats = self.positions[::2], self.quats[::2]
        fg = live._fg
        if live._wanted(self.topic):
            live._send(self.topic, fg.messages.PoseInFrame(timestamp=_stamp(fg, t_ns), frame_id=MAP_FRAME,
                                                           pose=_pose(fg, position, quat)), t_ns)
        self.last = (t, t_ns)
        if t - self.path_sent_t >= PATH_PERIOD_S:
            self._send_path(live)

    def _send_path(self, live: LiveServer) -> None:
        t, t_ns = self.last
        if not live._wanted(self.path_topic):
            return
        fg = live._fg
        self.path_sent_t, self.path_sent_n = t, len(self.positions)
        poses = [_pose(fg, p, q) for p, q in zip(self.positions, self.quats)]
        live._send(self.path_topic, fg.messages.PosesInFrame(timestamp=_stamp(fg, t_ns), frame_id=MAP_FRAME,
                                                              poses=poses), t_ns)

    def finish(self, live: LiveServer) -> None:
        """The run is over: the whole path, if it grew since it was last sent."""
        if self.last is not None and len(self.positions) != self.path_sent_n:
            self._send_path(live)


def _grid_geometry(model):
    """``(x0, y0, cell)`` of a model whose coordinates ``x`` and ``y`` are the centres of square
    cells of equal size (the corner of cell (0, 0) [m] and the cell size [m]), else None."""
    coords = model.coords()              # after setup, as the writers call it
    if "x" not in coords or "y" not in coords:
        return None
    x = np.asarray(coords["x"].data, dtype=float)
    y = np.asarray(coords["y"].data, dtype=float)
    if x.ndim != 1 or y.ndim != 1 or len(x) < 2 or len(y) < 2:
        return None
    dx, dy = np.diff(x), np.diff(y)
    cell = float(dx[0])
    if not (cell > 0 and np.allclose(dx, cell, rtol=1e-9) and np.allclose(dy, cell, rtol=1e-9)):
        return None
    return float(x[0] - 0.5 * cell), float(y[0] - 0.5 * cell), cell


class _GridView:
    """``/NAME/VAR``: a map over the scene's (y, x) cells as a ``foxglove.Grid`` at z = 0."""

    def __init__(self, live: LiveServer, name: str, var: str, dtype, grid):
        self.topic = f"/{name}/{var}"
        self.var = var
        self.x0, self.y0, self.cell = grid
        m = live._fg.messages
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.fields = [m.PackedElementField(name=var, offset=0, type=getattr(
            m.PackedElementFieldNumericType, _NUMERIC[(self.dtype.kind, self.dtype.itemsize)]))]
        live._channel(self.topic, "Grid")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if self.var not in frame or not live._wanted(self.topic):
            return
        data = np.ascontiguousarray(frame[self.var].data, dtype=self.dtype)    # rows along +y, cells along +x
        n_rows, n_cols = data.shape
        fg = live._fg
        m = fg.messages
        msg = m.Grid(timestamp=_stamp(fg, t_ns), frame_id=MAP_FRAME, pose=_pose(fg, (self.x0, self.y0, 0.0),
                                                                                 (0, 0, 0, 1)),
                     column_count=n_cols, cell_size=m.Vector2(x=self.cell, y=self.cell),
                     row_stride=n_cols * self.dtype.itemsize, cell_stride=self.dtype.itemsize,
                     fields=self.fields, data=data.tobytes())
        live._send(self.topic, msg, t_ns)


class _XYPathView:
    """``/NAME/VAR``: a frame's ``(n, xy)`` points [m] (a planned path) as poses at z = 0."""

    def __init__(self, live: LiveServer, name: str, var: str):
        self.topic = f"/{name}/{var}"
        self.var = var
        live._channel(self.topic, "PosesInFrame")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        if self.var not in frame or not live._wanted(self.topic):
            return
        xy = np.asarray(frame[self.var].data, dtype=float)
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        fg = live._fg
        poses = [_pose(fg, (p[0], p[1], 0.0), (0, 0, 0, 1)) for p in xy]
        live._send(self.topic, fg.messages.PosesInFrame(timestamp=_stamp(fg, t_ns), frame_id=MAP_FRAME,
                                                        poses=poses), t_ns)


class _MotionView:
    """The ground truth (``motion.nc``'s frames): ``/tf`` and the boxes of ``/objects``."""

    def __init__(self, live: LiveServer, model):
        coords = model.coords()
        self.bodies = [str(b) for b in np.asarray(coords["body"].data)]
        scene = live._scene
        self.objects = list(scene.object_names) if scene is not None else []
        colors = scene.object_table("color_rgb")[:-1] if scene is not None else np.zeros((0, 3))
        self.colors = np.nan_to_num(np.asarray(colors, dtype=float).reshape(-1, 3), nan=0.5)
        live._channel("/tf", "FrameTransforms")
        live._channel("/objects", "SceneUpdate")
        # The pose and path of every moving object that rides on nothing (a vehicle, a car on a
        # track): the bodies riding on them move with them, and their sensors have the pose model.
        self.paths = {}
        if scene is not None:
            for b, body in enumerate(self.bodies):
                info = scene.bodies.get(body)
                if info is not None and info.kind == "object" and info.parent is None and scene.is_moving(body):
                    self.paths[b] = _PoseView(live, f"/{model.name}/{body}")

    def publish(self, live: LiveServer, frame: dict, t: float, t_ns: int) -> None:
        fg = live._fg
        m = fg.messages
        stamp = _stamp(fg, t_ns)
        if "position" in frame and "orientation" in frame:
            pos = np.asarray(frame["position"].data, dtype=float)
            quat = np.asarray(frame["orientation"].data, dtype=float)
            for b, view in self.paths.items():
                view.update(live, pos[b], tuple(quat[b]), t, t_ns)
        if "position" in frame and "orientation" in frame and live._wanted("/tf"):
            tfs = [m.FrameTransform(timestamp=stamp, parent_frame_id=MAP_FRAME, child_frame_id=body,
                                    translation=m.Vector3(x=p[0], y=p[1], z=p[2]),
                                    rotation=m.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))
                   for body, p, q in zip(self.bodies, pos.tolist(), quat.tolist())]
            live._send("/tf", m.FrameTransforms(transforms=tfs), t_ns)
        if all(v in frame for v in ("box_center", "box_size", "box_yaw")) and live._wanted("/objects"):
            center = np.asarray(frame["box_center"].data, dtype=float)
            size = np.asarray(frame["box_size"].data, dtype=float)
            yaw = np.asarray(frame["box_yaw"].data, dtype=float)
            entities = []
            for i, name in enumerate(self.objects[:len(center)]):
                if not (np.all(np.isfinite(center[i])) and np.all(np.isfinite(size[i])) and np.isfinite(yaw[i])):
                    continue                            # an object without faces has no box
                r, g, b = self.colors[i]
                cube = m.CubePrimitive(pose=_pose(fg, center[i], _yaw_quat(yaw[i])),
                                       size=m.Vector3(x=size[i, 0], y=size[i, 1], z=size[i, 2]),
                                       color=m.Color(r=float(r), g=float(g), b=float(b), a=BOX_ALPHA))
                entities.append(m.SceneEntity(timestamp=stamp, frame_id=MAP_FRAME, id=name, cubes=[cube]))
            live._send("/objects", m.SceneUpdate(entities=entities), t_ns)

    def finish(self, live: LiveServer) -> None:
        for view in self.paths.values():
            view.finish(live)
