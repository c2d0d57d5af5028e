"""Alerts about a run, as the Tracker sends them: ``tracker.alert()``, and the alert for how the run
ended (failed, killed; finished when asked), each also recorded as an event. Sending happens on the
alerter's own thread (``monitoring.alerts``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import failures
from .._warnings import warn_once
from ..errors import InvalidValue
from ..monitoring.alerts import LEVELS, Alert, Alerter
from ..states import State

#: console lines an end alert carries
ALERT_LINES = 10


class Alerts:
    """The run's alerts (a part of ``Tracker``). ``about`` gives the run's id, name and project as they
    are when an alert is sent; ``record`` records an event in the run."""

    def __init__(
        self,
        strict: bool,
        alert_finished: bool,
        about: Callable[[], tuple[str | None, str | None, str | None]],
        record: Callable[..., None],
    ) -> None:
        #: where alerts go; None until ``start()`` found destinations (only the primary process sends)
        self.alerter: Alerter | None = None
        self._strict = strict
        self._alert_finished = alert_finished
        self._about = about
        self._record = record

    def alert(self, title: str, text: str, level: str) -> None:
        """See ``Tracker.alert``."""
        if level not in LEVELS:
            if self._strict:
                raise InvalidValue(f"alert level must be one of {LEVELS}, not {level!r}")
            warn_once(
                f"alert-level:{level}", f"alert level {level!r} is not one of {LEVELS}; sent as 'error'"
            )
            level = "error"
        self._record("alert", title=str(title), text=str(text), level=level)
        self._send(str(title), str(text), level, State.RUNNING)

    def end(self, state: str, error: str | None, step: int, console: Sequence[str] = ()) -> None:
        """The alert for how the run ended (failed, killed; finished if asked), then up to one
        request's timeout for the queued alerts to go out before the process may exit. A failed or
        killed run's alert names a known failure found in its last console lines (``failures``) and
        carries those lines: the reason is usually there, not in the exception's last line."""
        if self.alerter is None:
            return
        found = failures.find(console)
        title = f" ({found.name})" if found else ""
        tail = "\n".join(console[-ALERT_LINES:])
        shown = f"\n\nlast console lines:\n{tail}" if tail else ""
        if state == State.FAILED:
            lines = (error or "").strip().splitlines()
            self._send(f"run failed{title}", (lines[-1] if lines else "") + shown, "error", state)
        elif state == State.KILLED:
            self._send(f"run killed{title}", f"stopped at step {step}{shown}", "warn", state)
        elif self._alert_finished:
            self._send("run finished", f"{step} steps", "info", state)
        self.alerter.close()

    def _send(self, title: str, text: str, level: str, state: str) -> None:
        if self.alerter is not None:
            self.alerter.send(Alert(title, text, level, *self._about(), state))
