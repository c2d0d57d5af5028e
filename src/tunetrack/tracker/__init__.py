"""The tracker: the object every adapter drives, and the process-wide hooks that end its run."""

from .tracker import Tracker

__all__ = ["Tracker"]
