"""The tracker: the object every adapter drives, and the process-wide hooks that end its run; an
evaluation of a checkpoint attached to it after the fact (``log_evaluation``)."""

from .evaluations import Evaluated, find_checkpoint, log_evaluation
from .tracker import Tracker

__all__ = ["Evaluated", "Tracker", "find_checkpoint", "log_evaluation"]
