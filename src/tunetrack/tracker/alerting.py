"""Alerts about a run, as the Tracker sends them: ``tracker.alert()``, and the alert for how the run
ended (failed, killed; finished when asked), each also recorded as an event. Sending happens on the
alerter's own thread (``monitoring.alerts``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import failures
from .._warnings import warn_once
from ..errors import InvalidValue
from ..monitoring.alerts import LEVELS, Alert, Alerter
from ..states import State

#: console lines an end alert carries
ALERT_LINES = 10


class Alerting:
    """The Tracker's alerts (a part of ``Tracker``)."""

    id: str | None
    project: str | None
    strict: bool
    _step: int
    _alerter: Alerter | None
    _alert_finished: bool

    if TYPE_CHECKING:  # the Tracker's own

        @property
        def name(self) -> str | None: ...

        def event(self, kind: str, step: int | None = None, **data: Any) -> None: ...

    def _alert_end(
        self, alerter: Alerter, state: str, error: str | None, console: Sequence[str] = ()
    ) -> None:
        """The alert for how the run ended (failed, killed; finished if asked), then up to one
        request's timeout for the queued alerts to go out before the process may exit. A failed or
        killed run's alert names a known failure found in its last console lines (``failures``) and
        carries those lines: the reason is usually there, not in the exception's last line."""
        found = failures.find(console)
        title = f" ({found.name})" if found else ""
        tail = "\n".join(console[-ALERT_LINES:])
        shown = f"\n\nlast console lines:\n{tail}" if tail else ""
        if state == State.FAILED:
            lines = (error or "").strip().splitlines()
            self._queue_alert(f"run failed{title}", (lines[-1] if lines else "") + shown, "error", state)
        elif state == State.KILLED:
            self._queue_alert(f"run killed{title}", f"stopped at step {self._step}{shown}", "warn", state)
        elif self._alert_finished:
            self._queue_alert("run finished", f"{self._step} steps", "info", state)
        alerter.close()

    def alert(self, title: str, text: str = "", level: str = "info") -> None:
        """Send an alert about this run to the run's alert destinations (``alerts=``,
        ``$TUNETRACK_ALERT_URL``), and record it as an ``alert`` event. Returns at once: sending
        happens in the background; the same title is sent at most once per
        ``$TUNETRACK_ALERT_INTERVAL`` (300 s)."""
        if level not in LEVELS:
            if self.strict:
                raise InvalidValue(f"alert level must be one of {LEVELS}, not {level!r}")
            warn_once(
                f"alert-level:{level}", f"alert level {level!r} is not one of {LEVELS}; sent as 'error'"
            )
            level = "error"
        self.event("alert", title=str(title), text=str(text), level=level)
        self._queue_alert(str(title), str(text), level, State.RUNNING)

    def _queue_alert(self, title: str, text: str, level: str, state: str) -> None:
        if self._alerter is not None:
            self._alerter.send(Alert(title, text, level, self.id, self.name, self.project, state))
