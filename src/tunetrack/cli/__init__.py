"""The ``tunetrack`` command line: ``ls``, ``show``, ``diff``, ``export``, ``tag``, ``rename``, ``note``,
``rm``, ``sync``, ``sync-backend``, ``ui``."""

from .main import cli, main

__all__ = ["cli", "main"]
