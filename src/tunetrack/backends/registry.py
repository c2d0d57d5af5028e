"""Backends by name: ``Tracker(backends=["tensorboard"])``, ``TUNETRACK_BACKENDS=tensorboard``,
``metric_logger.backends=[tensorboard]`` on ``tune run``, ``tunetrack.backends=tensorboard`` for LLaMA
Factory.

Names come from the ``tunetrack.backends`` entry-point group, so a company's own tracker package
becomes usable everywhere, with no change in training scripts, by declaring::

    [project.entry-points."tunetrack.backends"]
    mycompany = "mycompany_tracker:MyCompanyBackend"

The built-in backends are declared the same way, in tunetrack's own ``pyproject.toml``. A name is
resolved when the run starts; the class is built with no arguments, so it takes its settings from its
own ecosystem's environment variables. Nothing is imported before a name is used.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable
from typing import Any

GROUP = "tunetrack.backends"


def available() -> dict[str, importlib.metadata.EntryPoint]:
    """Every backend name installed, with its entry point."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=GROUP)}


def resolve(spec: Any) -> Any:
    """A backend instance from a name, a class, or an instance (returned as it is).

    Raises ``ValueError`` naming the installed backends for an unknown name.
    """
    if not isinstance(spec, str):
        return spec() if isinstance(spec, type) else spec
    name = spec.strip().lower()
    found = available().get(name)
    if found is None:
        known = ", ".join(sorted(available())) or "none"
        raise ValueError(
            f"no tunetrack backend named {spec!r} (installed: {known}); a package adds one through the "
            f"{GROUP!r} entry-point group"
        )
    return found.load()()


def names(text: str | Iterable[str] | None) -> list[str]:
    """Backend names from ``a,b`` text (an environment variable, a command line) or a list."""
    if text is None:
        return []
    items = text.split(",") if isinstance(text, str) else [str(t) for t in text]
    return [item.strip() for item in items if item.strip()]
