"""``EVENT`` (``"e"``): ``kind`` (checkpoint, rewind, health, text, image, ...), ``step``, ``t`` and
``data``, a JSON-safe dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .kinds import EVENT, KIND, TIMES

# -- fields of an event record (and ``k``, ``t``) --
EVENT_KIND = "kind"
EVENT_STEP = "step"
EVENT_DATA = "data"


def encode_event(kind: str, step: int, unix_time: float, data: dict[str, Any]) -> dict[str, Any]:
    """An ``EVENT`` record."""
    return {KIND: EVENT, EVENT_KIND: kind, EVENT_STEP: step, TIMES: unix_time, EVENT_DATA: data}


@dataclass
class EventRecord:
    kind: str
    step: int
    time: float
    data: dict[str, Any]


def decode(rec: dict[str, Any]) -> EventRecord:
    """The ``EventRecord`` of an unpacked event record."""
    return EventRecord(rec[EVENT_KIND], rec[EVENT_STEP], rec[TIMES], rec.get(EVENT_DATA) or {})
