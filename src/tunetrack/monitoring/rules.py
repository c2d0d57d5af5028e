"""Rules: conditions on a run that alert, and may stop it.

A rule is a threshold on a metric (``above``/``below``), a z-score of a metric against its own recent
history, a stalled step (no new row for some time) or a state the run ended in (crashed, failed,
killed, stopped). Rules come from ``Tracker(rules=...)`` (``Rule`` objects, or a TOML file of
``[[rule]]`` tables: ``load_rules``; ``$TUNETRACK_RULES`` by default) and from ``tunetrack watch
--rules FILE``. The run's own writer thread checks them as it writes (``RuleChecker``: pure Python,
NumPy stays unimported, nothing on the training thread); the watcher checks the same rules from
outside, for the runs that died without a word. Each rule fires at most once per run: a ``rule``
event in the run, an alert titled ``rule <name>``, one warning, and where the rule says ``stop``, a
request that the run stop (``Tracker.request_stop``, ``manage.stop_run``).

A rule's metric is found the way readers find names (``metric_keys.metric_key``): ``eval/loss``
watches a Trainer run's ``eval_loss``, ``lr`` its ``learning_rate``.
"""

from __future__ import annotations

import math
import os
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from .. import settings
from .._warnings import warn_once
from ..metric_keys import metric_key, spellings
from ..states import State
from .alerts import LEVELS

#: the states a state rule may name: the ways a run ends other than finishing (a finished run alerts
#: with ``Tracker(alert_finished=True)``)
RULE_STATES: tuple[str, ...] = (State.CRASHED, State.FAILED, State.KILLED, State.STOPPED)
#: the kind of event a rule that fired records in the run
EVENT = "rule"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def seconds(value: Any) -> float:
    """A duration as seconds: a number, or a string such as ``"90s"``, ``"15m"``, ``"2h"`` (what a
    rules file says). ``ValueError`` for anything else, or for one that is not positive."""
    if isinstance(value, str) and (m := _DURATION.match(value)):
        value = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not _number(value) or value <= 0:
        raise ValueError(
            f"must be a positive duration in seconds or such as '90s', '15m', '2h', not {value!r}"
        )
    return float(value)


def _duration(value: float) -> str:
    """``15m``, ``2h``, ``90s``: a rule's stalled time as a person writes it."""
    for unit in ("d", "h", "m"):
        if value >= _UNITS[unit] and value % _UNITS[unit] == 0:
            return f"{value / _UNITS[unit]:g}{unit}"
    return f"{value:g}s"


@dataclass(frozen=True)
class Rule:
    """One rule: a name, exactly one condition, and what to do when it holds.

    The conditions: ``metric`` with ``above`` and/or ``below`` (a threshold: fires on a value
    greater than ``above`` or less than ``below``); ``metric`` with ``zscore`` (fires on a value more
    than ``zscore`` standard deviations from the mean of the metric's previous ``window`` finite
    values, once ``min_history`` of them were seen); ``stalled`` (seconds, or ``"15m"``: no new row
    for that long while the run's process is alive); ``state`` (one or more of crashed, failed,
    killed, stopped: how the run ended). ``stop`` asks the run to stop when the rule fires (not for
    a state rule: that run has already ended); ``level`` is the alert's (info, warn, error).
    A bad rule is a ``ValueError`` of one line that names it."""

    name: str
    metric: str | None = None
    above: float | None = None
    below: float | None = None
    zscore: float | None = None
    window: int = 100
    min_history: int = 20
    stalled: float | str | None = None
    state: Sequence[str] | str | None = None
    stop: bool = False
    level: str = "warn"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a rule needs a name (a non-empty string), not {self.name!r}")
        try:
            self._check()
        except ValueError as exc:
            raise ValueError(f"rule {self.name!r}: {exc}") from None

    def _check(self) -> None:
        given = [
            kind
            for kind, there in (
                ("above/below", self.above is not None or self.below is not None),
                ("zscore", self.zscore is not None),
                ("stalled", self.stalled is not None),
                ("state", self.state is not None),
            )
            if there
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one condition (metric with above and/or below, metric with zscore, "
                f"stalled, or state), not {' and '.join(given) or 'none'}"
            )
        metric_rule = given[0] in ("above/below", "zscore")
        if metric_rule and (not isinstance(self.metric, str) or not self.metric):
            raise ValueError(f'{given[0]} needs the metric it watches (metric = "eval/loss")')
        if not metric_rule and self.metric is not None:
            raise ValueError(f"metric is for above, below and zscore, not for a {given[0]} rule")
        for limit in ("above", "below", "zscore"):
            value = getattr(self, limit)
            if value is not None and not _number(value):
                raise ValueError(f"{limit} must be a finite number, not {value!r}")
        if self.above is not None and self.below is not None and self.above <= self.below:
            raise ValueError(
                f"above ({self.above:g}) must be greater than below ({self.below:g}): it fires outside them"
            )
        if self.zscore is not None and self.zscore <= 0:
            raise ValueError(f"zscore must be positive, not {self.zscore!r}")
        for count, least in (("window", 2), ("min_history", 2)):
            value = getattr(self, count)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{count} must be a whole number of at least {least}, not {value!r}")
        if self.min_history > self.window:
            raise ValueError(f"min_history ({self.min_history}) cannot exceed window ({self.window})")
        if self.stalled is not None:
            try:
                object.__setattr__(self, "stalled", seconds(self.stalled))
            except ValueError as exc:
                raise ValueError(f"stalled {exc}") from None
        if self.state is not None:
            states = (self.state,) if isinstance(self.state, str) else self.state
            if (
                not isinstance(states, (list, tuple))
                or not states
                or any(s not in RULE_STATES for s in states)
            ):
                raise ValueError(f"state must be one or more of {', '.join(RULE_STATES)}, not {self.state!r}")
            object.__setattr__(self, "state", tuple(str(s) for s in states))
            if self.stop:
                raise ValueError("stop is meaningless for a state rule: the run has already ended")
        if not isinstance(self.stop, bool):
            raise ValueError(f"stop must be true or false, not {self.stop!r}")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {self.level!r}")

    @property
    def condition(self) -> str:
        """The condition in words: ``eval/loss above 3``, ``loss z-score above 4 over its last 100 values``,
        ``no new step for 15m``, ``state crashed or failed``."""
        if self.zscore is not None:
            return f"{self.metric} z-score above {self.zscore:g} over its last {self.window} values"
        if self.stalled is not None:
            assert isinstance(self.stalled, float)
            return f"no new step for {_duration(self.stalled)}"
        if self.state is not None:
            return f"state {' or '.join(self.state)}"
        limits = [
            f"{word} {limit:g}"
            for word, limit in (("above", self.above), ("below", self.below))
            if limit is not None
        ]
        return f"{self.metric} {' or '.join(limits)}"


#: the keys a ``[[rule]]`` table may hold
KEYS = tuple(f.name for f in fields(Rule))


def parse_rules(tables: Any, source: str = "rules") -> list[Rule]:
    """Rules from what a TOML file's ``[[rule]]`` tables read as (a list of dicts); ``ValueError`` of
    one line for anything wrong: an unknown key (naming the known ones), a bad rule, two rules of
    one name."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ValueError(f"{source}: rules are [[rule]] tables")
    out: list[Rule] = []
    for i, table in enumerate(tables, 1):
        name = table.get("name", f"#{i}")
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise ValueError(
                f"{source}: rule {name!r}: unknown key{'s' * (len(unknown) > 1)} {', '.join(unknown)} "
                f"(known: {', '.join(KEYS)})"
            )
        if "name" not in table:
            raise ValueError(f"{source}: rule {name} has no name")
        try:
            out.append(Rule(**table))
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        except TypeError as exc:  # a name given as a number, say: Rule's own check says so
            raise ValueError(f"{source}: rule {name!r}: {exc}") from None
    names = [r.name for r in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(
            f"{source}: two rules are named {', '.join(map(repr, twice))}: each rule fires once, by name"
        )
    return out


def load_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """The rules of a TOML file of ``[[rule]]`` tables. ``ValueError`` of one line, naming the file,
    for a file that cannot be read or holds anything else."""
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ValueError(f"cannot read rules file {os.fspath(path)}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{os.fspath(path)}: not valid TOML ({exc})") from None
    extra = sorted(set(data) - {"rule"})
    if extra:
        raise ValueError(f"{os.fspath(path)}: unknown table {', '.join(extra)} (rules are [[rule]] tables)")
    return parse_rules(data.get("rule", []), os.fspath(path))


def tracker_rules(given: Sequence[Rule] | str | os.PathLike[str] | None, strict: bool) -> list[Rule]:
    """The rules a ``Tracker`` checks: ``given`` (rules, or a file), else ``$TUNETRACK_RULES``. A file
    that cannot be used is warned about once and no rule is checked (training goes on), except in
    ``strict`` mode, which raises."""
    chosen = settings.rules_file() if given is None else given
    try:
        if chosen is None:
            return []
        if isinstance(chosen, (str, os.PathLike)):
            return load_rules(chosen)
        rules = list(chosen)
        wrong = [r for r in rules if not isinstance(r, Rule)]
        if wrong:
            raise ValueError(f"rules= takes Rule objects or a rules file, not {wrong[0]!r}")
        return rules
    except ValueError as exc:
        if strict:
            raise
        warn_once(f"rules:{exc}", f"no rule is checked: {exc}")
        return []


@dataclass(frozen=True)
class Firing:
    """A rule that fired: where (``key``, ``step``) and on what ``value`` (a metric's value; the
    seconds without a new step; the state)."""

    rule: Rule
    key: str | None
    value: Any
    step: int | None

    @property
    def title(self) -> str:
        """The alert's title."""
        return f"rule {self.rule.name}"

    @property
    def text(self) -> str:
        """What happened, in one line: the alert's text, the warning's and the stop request's reason."""
        at = f" at step {self.step}" if self.step is not None else ""
        if self.key is not None:
            what = f"{self.key} = {self.value:.6g}{at}"
        elif self.rule.stalled is not None:
            what = f"last step {self.step}, {self.value:.0f} s ago" if at else f"no row in {self.value:.0f} s"
        else:
            what = f"the run ended {self.value}{at}"
        return f"{what} ({self.rule.condition})"

    def event(self) -> dict[str, Any]:
        """The data of the run's ``rule`` event (its step is the event's own)."""
        return {
            "name": self.rule.name,
            "condition": self.rule.condition,
            "key": self.key,
            "value": self.value,
        }

    def warning(self) -> str:
        """The line printed once when the rule fires in the run's own process."""
        then = "; the run is asked to stop" if self.rule.stop else ""
        return f"rule {self.rule.name}: {self.text}; recorded as a 'rule' event{then}"

    @property
    def reason(self) -> str:
        """Why the run is asked to stop, as its stop request records it (one line, as a request's
        reason must be, whatever a metric's name holds)."""
        return " ".join(f"rule {self.rule.name}: {self.text}".split())


class _Window:
    """The last ``size`` finite values of a metric, with their running sum and sum of squares
    (shifted by the first value, which keeps them exact enough; recomputed once per ``size`` values,
    which keeps rounding from building up): each value's z-score costs O(1)."""

    def __init__(self, size: int) -> None:
        self.values: deque[float] = deque(maxlen=size)
        self.shift: float | None = None
        self.sum = self.squares = 0.0
        self._added = 0

    def zscore(self, value: float) -> float:
        """How many (population) standard deviations ``value`` is from the window's mean; a value
        that differs from a window of identical values is infinitely far."""
        n, shift = len(self.values), self.shift or 0.0
        mean = self.sum / n
        std = math.sqrt(max(self.squares / n - mean * mean, 0.0))
        distance = abs(value - shift - mean)
        if std == 0.0:
            return math.inf if distance > 0.0 else 0.0
        return distance / std

    def add(self, value: float) -> None:
        if self.shift is None:
            self.shift = value
        values, shifted = self.values, value - self.shift
        if len(values) == values.maxlen:
            old = values[0] - self.shift
            self.sum -= old
            self.squares -= old * old
        values.append(value)
        self.sum += shifted
        self.squares += shifted * shifted
        self._added += 1
        if self._added % (values.maxlen or 1) == 0:
            self.sum = sum(v - self.shift for v in values)
            self.squares = sum((v - self.shift) ** 2 for v in values)


class RuleChecker:
    """One run's rules as they are checked: over each written block of rows (``check``), on a clock
    (``stalled``) and at the end (``ended``). Each rule fires at most once; ``fired`` names those
    that did (or that the run's own process fired, as a watcher learns from its events)."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.fired: set[str] = set()
        self._metric = [r for r in self.rules if r.metric is not None]
        self._stalled = [r for r in self.rules if r.stalled is not None]
        self._state = [r for r in self.rules if r.state is not None]
        #: the spelling each metric rule found its metric under (the first the run logged)
        self._key: dict[str, str] = {}
        self._windows = {r.name: _Window(r.window) for r in self._metric if r.zscore is not None}

    @property
    def keys(self) -> list[str]:
        """Every spelling of every watched metric: the columns the writer hands ``check``."""
        return list(dict.fromkeys(k for r in self._metric for k in spellings(str(r.metric))))

    @property
    def stalls(self) -> bool:
        """Whether a stalled rule is still to be checked on the clock."""
        return any(r.name not in self.fired for r in self._stalled)

    def check(self, columns: Mapping[str, tuple[Sequence[int], Sequence[float]]]) -> list[Firing]:
        """The rules that fire on new points: ``key -> (steps, values)``, in step order."""
        out = []
        for rule in self._metric:
            if rule.name in self.fired:
                continue
            key = self._key.get(rule.name) or metric_key(columns.__contains__, str(rule.metric))
            if key is None or key not in columns:
                continue
            self._key[rule.name] = key
            steps, values = columns[key]
            found = self._zscore(rule, values) if rule.zscore is not None else self._threshold(rule, values)
            if found is not None:
                self.fired.add(rule.name)
                out.append(Firing(rule, key, float(values[found]), int(steps[found])))
        return out

    @staticmethod
    def _threshold(rule: Rule, values: Sequence[float]) -> int | None:
        above = math.inf if rule.above is None else rule.above
        below = -math.inf if rule.below is None else rule.below
        return next((i for i, v in enumerate(values) if v > above or v < below), None)  # NaN is neither

    def _zscore(self, rule: Rule, values: Sequence[float]) -> int | None:
        window, limit, least = self._windows[rule.name], rule.zscore, rule.min_history
        assert limit is not None
        for i, value in enumerate(values):
            if not math.isfinite(value):
                continue
            if len(window.values) >= least and window.zscore(value) > limit:
                return i
            window.add(value)
        return None

    def stalled(self, quiet: float, step: int | None) -> list[Firing]:
        """The stalled rules that fire after ``quiet`` seconds without a new row (the last at ``step``)."""
        out = []
        for rule in self._stalled:
            assert isinstance(rule.stalled, float)
            if rule.name not in self.fired and quiet >= rule.stalled:
                self.fired.add(rule.name)
                out.append(Firing(rule, None, quiet, step))
        return out

    def ended(self, state: str, step: int | None) -> list[Firing]:
        """The state rules that fire on a run that ended ``state`` (at ``step``)."""
        out = []
        for rule in self._state:
            if rule.name not in self.fired and state in (rule.state or ()):
                self.fired.add(rule.name)
                out.append(Firing(rule, None, str(state), step))
        return out
