"""The source interface, and the per-field guard that keeps one unsupported field from costing
the others: a field that fails once is dropped for the rest of the run, with one debug line."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

log = logging.getLogger("tunetrack.system")


@runtime_checkable
class Source(Protocol):
    """A producer of system metrics. ``sample`` runs on the sampler thread, never on training's."""

    name: str

    def sample(self) -> dict[str, float | int | None]: ...

    def close(self) -> None: ...


class FieldReader:
    """Reads fields through callables; a field that raises is disabled after its first failure."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.disabled: set[str] = set()

    def read(
        self, out: dict[str, Any], key: str, fn: Callable[..., Any], *args: Any, field: str | None = None
    ) -> None:
        """Store ``fn(*args)`` under ``key`` unless ``field`` (default: ``key``) is disabled or fails."""
        field = field or key
        if field in self.disabled:
            return
        try:
            value = fn(*args)
        except Exception as exc:
            self.fail(field, exc)
            return
        if value is not None:
            out[key] = value

    def fail(self, field: str, exc: BaseException) -> None:
        """Drop ``field`` for the rest of the run, with one debug line."""
        self.disabled.add(field)
        log.debug("%s: %s is unavailable here (%s); dropped for this run", self.source, field, exc)
