"""The writer: a background thread that turns what the tracker queued into records in the store
(and calls the backends), so that ``Tracker.log`` only has to append."""

# the artifacts the tracker stores: files go into the store on the tracker's own thread, not the writer's
from ..store.artifacts import ArtifactStore, ArtifactVersion, FileEntry, check_alias, check_name
from ..store.base import Store  # where a live run looks for requests to stop it (``tracker.control``)
from ..store.ends import EndFields  # what a tracker of a special kind adds to its end record
from ..store.evaluations import EVENT as EVALUATION_EVENT  # an evaluation of a checkpoint, and what it names
from ..store.evaluations import CheckpointRef
from ..store.forks import EVENT as FORK_EVENT  # a new fork's first event, which the tracker sends
from ..store.forks import ForkRef
from ..store.process_meta import ProcessMeta, Ranks, Role  # what a RunRequest carries, for whoever builds one
from .channel import Channel
from .counters import Counters
from .messages import ConfigUpdate, Event, Flush, MediaFile, Message, RunEdit, SystemSample, Table
from .opening import OpenedRun, RunRequest, resolve_checkpoint, resolve_fork
from .writer import Writer

__all__ = [
    "ArtifactStore",
    "ArtifactVersion",
    "Channel",
    "CheckpointRef",
    "ConfigUpdate",
    "Counters",
    "EVALUATION_EVENT",
    "EndFields",
    "FORK_EVENT",
    "FileEntry",
    "ForkRef",
    "Event",
    "Flush",
    "MediaFile",
    "Message",
    "OpenedRun",
    "ProcessMeta",
    "Ranks",
    "RunEdit",
    "Role",
    "RunRequest",
    "Store",
    "SystemSample",
    "resolve_checkpoint",
    "resolve_fork",
    "Table",
    "Writer",
    "check_alias",
    "check_name",
]
