"""``tunetrack watch``: alerts for what a run cannot say itself.

A process killed with SIGKILL, by the OOM killer or with its machine never runs its own alert. The
watcher polls a store (a folder or an object store) and alerts when a run it has seen running turns
``crashed`` (its heartbeat stopped: the staleness rule every reader uses), and when a running run
logs no new step for ``stall`` seconds (a hung collective, a dead data loader). Each happens once
per run; a run that comes back to life and stalls again alerts again.

With rules (``monitoring.rules``) it checks each run from outside as its own process would: the
thresholds and z-scores over the points a running run logged since the last poll (a run is kept
between polls and ``refresh()``-ed, so only what it appended is read), the stalled rules on the
watcher's clock, the state rules when a run it saw running (or one born after the watcher started)
turns one of their states. A rule the run's own process fired (a ``rule`` event of that name) is
not alerted again; a rule that stops a run asks a running run to stop (``manage.stop_run``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._warnings import warn_once
from ..errors import TunetrackError
from ..manage import stop_run
from ..monitoring.alerts import Alert
from ..monitoring.rules import EVENT as RULE_EVENT
from ..monitoring.rules import Firing, Rule, RuleChecker
from ..reader import Run
from ..states import State

#: who a stop request the watcher makes is from
WATCHER = "tunetrack watch"


@dataclass
class Seen:
    state: str
    step: int | None
    #: when its step last changed (monotonic seconds)
    changed: float
    stalled: bool = False


class Watcher:
    """What the runs of a store were at the last poll; ``poll(runs)`` returns the alerts due (and asks
    the runs that a stopping rule fired on to stop, in the store ``dir``)."""

    def __init__(
        self,
        stall: float | None,
        clock: Callable[[], float] = time.monotonic,
        rules: Sequence[Rule] = (),
        dir: str | None = None,
    ) -> None:
        self.stall = stall or None
        self.clock = clock
        self.started = time.time()
        self.seen: dict[str, Seen] = {}
        self.rules = list(rules)
        self.dir = dir
        #: each run's rules as checked so far (which fired), for the runs that had something to check
        self.checkers: dict[str, RuleChecker] = {}
        #: the running runs, kept between polls: a refresh reads only what they appended
        self.runs: dict[str, Run] = {}
        #: each followed run's last step whose points the rules saw, per metric key
        self.checked: dict[str, dict[str, int]] = {}

    def poll(self, runs: Iterable[Run]) -> list[Alert]:
        now, alerts = self.clock(), []
        for listed in runs:
            run = self._current(listed)
            state, prev = run.state, self.seen.get(run.id)
            was_running = prev.state == State.RUNNING if prev else run.created >= self.started
            live = state in (State.RUNNING, State.CRASHED)
            step = run.latest().get("step") if live or (self.rules and was_running) else None
            if self.rules:
                alerts += self._rules(run, state, step, prev, was_running, now)
            if not live:
                self.seen[run.id] = Seen(state, None, now)
                continue
            fresh = prev is None or prev.state != state or prev.step != step
            seen = Seen(state, step, now) if fresh else prev
            assert seen is not None
            if state == State.CRASHED and was_running:
                since = time.strftime("%H:%M:%S", time.localtime(run.ended)) if run.ended else "?"
                alerts.append(
                    _alert(run, "run crashed", f"no heartbeat since {since}; last step {step}", "error")
                )
            elif (
                state == State.RUNNING
                and self.stall
                and not seen.stalled
                and now - seen.changed >= self.stall
            ):
                quiet = int(now - seen.changed)
                alerts.append(
                    _alert(run, "run stalled", f"no new step for {quiet} s (last step {step})", "warn")
                )
                seen.stalled = True
            self.seen[run.id] = seen
        return alerts

    def _current(self, listed: Run) -> Run:
        """The run as it is now: the one kept from the last poll, refreshed, else the one listed.
        Running runs are kept when there are rules to check (their points are read as they grow)."""
        kept = self.runs.pop(listed.id, None)
        if kept is not None:
            kept.refresh()
        run = kept or listed
        if self.rules and run.state == State.RUNNING:
            self.runs[run.id] = run
        return run

    def _rules(
        self, run: Run, state: str, step: int | None, prev: Seen | None, was_running: bool, now: float
    ) -> list[Alert]:
        """The rules that fire on ``run`` at this poll, as alerts; a stopping one asks it to stop.
        A run is followed while it runs, and once more as it ends (its last points); a run first
        seen ended was so before the watcher started, unless it was born since."""
        if state != State.RUNNING and not was_running:
            return []
        checker = self.checkers.setdefault(run.id, RuleChecker(self.rules))
        fired = checker.check(self._new_points(run, checker))
        if state == State.RUNNING and prev is not None and prev.state == State.RUNNING:
            fired += checker.stalled(now - prev.changed if prev.step == step else 0.0, step)
        if state != State.RUNNING:
            fired += checker.ended(state, step)
        if not fired:
            return []
        own = {e.get("name") for e in run.events() if e["kind"] == RULE_EVENT}  # fired by its process
        alerts = []
        for firing in fired:
            if firing.rule.name in own:
                continue
            alerts.append(
                Alert(firing.title, firing.text, firing.rule.level, run.id, run.name, run.project, state)
            )
            if firing.rule.stop and state == State.RUNNING:
                self._stop(run, firing)
        return alerts

    def _new_points(self, run: Run, checker: RuleChecker) -> dict[str, tuple[list[int], list[float]]]:
        """``key -> (steps, values)`` of the watched metrics' numeric points past the last step the
        rules saw of them."""
        logged = set(run.keys())
        checked = self.checked.setdefault(run.id, {})
        out = {}
        for key in checker.keys:
            if key not in logged:
                continue
            series = run.series(key, strict=False)
            steps, values, after = series.steps, series.values, checked.get(key)
            if after is not None:
                new = steps > after
                steps, values = steps[new], values[new]
            points = [
                (int(s), float(v))
                for s, v in zip(steps.tolist(), values.tolist(), strict=True)
                if _numeric(v)
            ]
            if points:
                checked[key] = points[-1][0]
                out[key] = ([s for s, _ in points], [v for _, v in points])
        return out

    def _stop(self, run: Run, firing: Firing) -> None:
        """Ask a running run to stop, as ``tunetrack stop`` does; a run that ended meanwhile, or a store
        that refuses, is warned about (the alert went out anyway)."""
        try:
            stop_run(run.id, firing.reason, dir=self.dir, by=WATCHER)
        except (TunetrackError, OSError) as exc:
            warn_once(f"watch-stop:{run.id}", f"could not ask run {run.id} to stop: {exc}")


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _alert(run: Run, title: str, text: str, level: str) -> Alert:
    return Alert(title, text, level, run.id, run.name, run.project, run.state)
