"""The ``tunetrack`` command line: the group and the entry point are ``main``, whose docstring lists
each command under the module that defines it (a test holds that list to ``cli.commands``)."""

from .main import cli, main

__all__ = ["cli", "main"]
