"""The tracker: the object every adapter drives, and the process-wide hooks that end its run; an
evaluation of a checkpoint attached to it after the fact (``log_evaluation``)."""

from ..writer import EndFields, Role  # what a tracker of a special kind says of its process
from .evaluations import Evaluated, find_checkpoint, log_evaluation
from .tracker import Tracker

__all__ = ["EndFields", "Evaluated", "Role", "Tracker", "find_checkpoint", "log_evaluation"]
