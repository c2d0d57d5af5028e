"""Backends: where recorded data goes besides (or instead of) the local store."""

from .base import Backend, Row, RunInfo
from .console import ConsoleBackend

__all__ = ["Backend", "ConsoleBackend", "Row", "RunInfo"]
