"""Backends: where recorded data goes besides (or instead of) the local store.

``stdout`` (``ConsoleBackend``, the backend named ``console``) is imported eagerly: it is small and
standard-library only, so ``tunetrack.backends`` stays as cheap to import as ``tunetrack`` itself.
"""

from .base import Backend, Row, RunInfo
from .stdout import ConsoleBackend

__all__ = ["Backend", "ConsoleBackend", "Row", "RunInfo"]
