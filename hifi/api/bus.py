"""Typed message bus: how models talk to each other, in simulated time.

Models never call each other; they publish messages and subscribe to them (subscribe in
:meth:`~hifi.api.model.Model.setup`). Messages flow in two directions:

- **out of a model** (:class:`SensorData`, :class:`PoseMessage`, :class:`LogMessage`): to every
  subscriber of that type, optionally filtered by ``sender``;
- **into a model** (:class:`Command`): addressed to one ``target`` model; subscribe with
  ``target=`` your model's name to receive the commands meant for you.

Ordering (deterministic, whatever the machine):

1. The time manager publishes a model's frame as :class:`SensorData` when the frame is
   complete, at ``time_s`` = the model's :meth:`~hifi.api.model.Model.available_at` (for a lidar,
   the firing time of its last ray: a sweep is not seen before it ends). Deliveries at a time
   T happen before the model steps scheduled at T, in the order (time, priority, registration
   order of the sender, frame).
2. A message is delivered synchronously when it is published, to the matching subscribers in
   the order they subscribed (models subscribe in :meth:`setup`, which runs in registration
   order). A subscriber that publishes from its callback has its message delivered at once,
   depth first.
3. Messages are immutable: dataclasses are frozen and the arrays of :class:`SensorData` are
   read-only (``writeable = False``), so no subscriber can change another's view or what is
   written to disk. Copy an array (``np.array(a)``) to modify it.

A command published at simulated time t is a request; the target decides when it acts (a
vehicle applies the last command it has received at its next step).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np


@dataclass(frozen=True)
class Message:
    """Base of every message: who sent it and at what simulated time [s]."""

    sender: str
    time_s: float


def frozen_arrays(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only mapping of read-only array views of ``data`` (name -> array_like).

    The views share memory with the arrays given (no copy); their ``writeable`` flag is off
    and so is the owner's where this function can turn it off, so that neither the view nor a
    view of a view can be made writeable again.
    """
    out = {}
    for name, value in data.items():
        arr = np.asarray(value)
        owner = arr
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        owner.flags.writeable = False
        view = arr.view()
        view.flags.writeable = False
        out[name] = view
    return MappingProxyType(out)


@dataclass(frozen=True)
class SensorData(Message):
    """One frame of a model's output: variable name -> read-only array (the frame's data).

    ``time_s`` is when the frame is complete and published; ``frame_time_s`` the frame's
    event time (its start, the dataset's ``frame_time``).
    """

    frame: int = 0
    data: Mapping[str, Any] = field(default_factory=dict)
    frame_time_s: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "data", frozen_arrays(self.data))


@dataclass(frozen=True)
class PoseMessage(Message):
    """Ground-truth pose of a body: position [m] and quaternion (x, y, z, w), scene frame."""

    body: str = ""
    position_m: tuple = (0.0, 0.0, 0.0)
    quaternion_xyzw: tuple = (0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class LogMessage(Message):
    """Free text from a model."""

    text: str = ""
    level: str = "info"


@dataclass(frozen=True)
class Command(Message):
    """A request from one model to another, addressed to the model named ``target``.

    ``name`` says what is asked (e.g. ``"drive"``) and ``value`` carries its arguments (a
    mapping of plain values, each with its unit in its key, e.g. ``{"speed_m_s": 2.0}``).
    """

    target: str = ""
    name: str = ""
    value: Any = None

    def __post_init__(self):
        if not self.target:
            raise ValueError(f"Command from {self.sender!r}: target must name the model it is for")
        if isinstance(self.value, Mapping):
            object.__setattr__(self, "value", MappingProxyType(dict(self.value)))


class MessageBus:
    """Publish/subscribe by message type and, optionally, by sender or (for commands) target."""

    def __init__(self):
        self._subscribers: list[tuple[type, str | None, str | None, Callable[[Message], None]]] = []
        #: Messages published so far.
        self.published = 0
        self._local = threading.local()

    @property
    def callbacks(self) -> list:
        """The subscribed callbacks, in subscription order."""
        return [callback for *_, callback in self._subscribers]

    @property
    def subscriptions(self) -> int:
        """Subscriptions made so far (a model that added none in its ``setup`` reads nothing
        from the bus, so the time manager may step it ahead of the others)."""
        return len(self._subscribers)

    @contextmanager
    def deferring(self, outbox: list):
        """Inside, :meth:`publish` from this thread appends to ``outbox`` instead of delivering.

        The time manager steps a model that reads nothing from the bus ahead of time on a
        worker thread, and publishes what the step published (``outbox``, in order) when the
        step's turn comes in time order, so subscribers see the messages in the order, and
        with the state around them, of a serial run.
        """
        previous = getattr(self._local, "outbox", None)
        self._local.outbox = outbox
        try:
            yield outbox
        finally:
            self._local.outbox = previous

    def subscribe(self, callback: Callable[[Message], None], message_type: type = Message,
                  sender: str | None = None, target: str | None = None) -> None:
        """Call ``callback(message)`` for every message of ``message_type``.

        Parameters
        ----------
        callback : callable
            Called with each matching message, synchronously, in subscription order.
        message_type : type
            A :class:`Message` subclass (default: every message).
        sender : str, optional
            Only messages from this model.
        target : str, optional
            Only :class:`Command` messages addressed to this model (implies
            ``message_type=Command`` when ``message_type`` is left at its default).
        """
        if not (isinstance(message_type, type) and issubclass(message_type, Message)):
            raise TypeError(f"message_type must be a Message subclass, got {message_type!r}")
        if target is not None:
            if message_type is Message:
                message_type = Command
            elif not issubclass(message_type, Command):
                raise TypeError(f"target= filters commands; message_type {message_type.__name__} is not a Command")
        self._subscribers.append((message_type, sender, target, callback))

    def publish(self, message: Message) -> None:
        """Deliver ``message`` to every matching subscriber, in subscription order."""
        if not isinstance(message, Message):
            raise TypeError(f"only Message instances are published, got {type(message).__name__}")
        outbox = getattr(self._local, "outbox", None)
        if outbox is not None:
            outbox.append(message)
            return
        self.published += 1
        for message_type, sender, target, callback in list(self._subscribers):
            if not isinstance(message, message_type):
                continue
            if sender is not None and sender != message.sender:
                continue
            if target is not None and target != getattr(message, "target", None):
                continue
            callback(message)
