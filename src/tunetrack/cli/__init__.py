"""The ``tunetrack`` command line: ``ls``, ``show``, ``diff``, ``export``, ``report`` (``reading``),
``tag``, ``rename``, ``note``, ``rm`` (``managing``), ``sync``, ``sync-backend``, ``import``
(``moving``), ``ui``, ``watch`` (``serving``); the group and the entry point are ``main``."""

from .main import cli, main

__all__ = ["cli", "main"]
