"""The ``tunetrack`` command line: ``ls``, ``show``, ``diff``, ``export``."""

from .main import cli, main

__all__ = ["cli", "main"]
