"""Typed message bus between models.

Messages are delivered synchronously, in subscription order, at the moment they are
published, so delivery follows the time manager's deterministic event order. A model that
subscribes to another's :class:`SensorData` sees each frame at that frame's simulated time,
before any later event runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Message:
    """Base of every message: who sent it and at what simulated time [s]."""

    sender: str
    time_s: float


@dataclass(frozen=True)
class SensorData(Message):
    """One frame of a model's output: variable name -> array (the dataset's frame slice)."""

    frame: int = 0
    data: Mapping[str, Any] = field(default_factory=dict)


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
    """A request from one model to another (e.g. a controller to a vehicle)."""

    target: str = ""
    name: str = ""
    value: Any = None


class MessageBus:
    """Publish/subscribe by message type and, optionally, by sender."""

    def __init__(self):
        self._subscribers: list[tuple[type, str | None, Callable[[Message], None]]] = []
        self.published = 0

    def subscribe(self, callback: Callable[[Message], None], message_type: type = Message,
                  sender: str | None = None) -> None:
        """Call ``callback(message)`` for every message of ``message_type`` (and ``sender``)."""
        if not (isinstance(message_type, type) and issubclass(message_type, Message)):
            raise TypeError(f"message_type must be a Message subclass, got {message_type!r}")
        self._subscribers.append((message_type, sender, callback))

    def publish(self, message: Message) -> None:
        """Deliver ``message`` to every matching subscriber, in subscription order."""
        self.published += 1
        for message_type, sender, callback in list(self._subscribers):
            if isinstance(message, message_type) and (sender is None or sender == message.sender):
                callback(message)
