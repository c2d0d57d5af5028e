"""The writer: a background thread that turns what the tracker queued into records in the store
(and calls the backends), so that ``Tracker.log`` only has to append."""

from .channel import Channel
from .counters import Counters
from .messages import ConfigUpdate, Event, Flush, MediaFile, Message, RunEdit, SystemSample, Table
from .opening import OpenedRun, RunRequest
from .writer import Writer

__all__ = [
    "Channel",
    "ConfigUpdate",
    "Counters",
    "Event",
    "Flush",
    "MediaFile",
    "Message",
    "OpenedRun",
    "RunEdit",
    "RunRequest",
    "SystemSample",
    "Table",
    "Writer",
]
