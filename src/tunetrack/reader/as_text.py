"""A run as people read it: the one wording that ``tunetrack show``, the dashboard's run page and the
report share. The overview's facts (where, when and how the run ran, what it could not keep, its
notes), the summary's numbers, a config value and an event are worded here, once; each front end only
lays the texts out (a terminal grid, an HTML list), so they cannot drift apart.

Times are local time where the text is made (the CLI's, the dashboard server's, the machine that
wrote a report).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .. import config, states
from .as_json import provenance
from .console import Line
from .run import Run

#: what a fact without a value reads
NONE = "—"
#: console lines shown for a run that did not finish
LAST_LINES = 20
#: states whose run shows its last console lines: the reason is usually there
ENDED_BADLY = (states.FAILED, states.KILLED, states.CRASHED)
#: ``Run.counters()`` names, worded (zero counts are left out)
NOT_KEPT = {
    "dropped_rows": "rows dropped (the writer could not keep up)",
    "dropped_values": "values dropped (of a type the store does not keep)",
    "lost_rows": "rows lost (the store could not write them)",
    "late_rows": "rows logged after finish()",
}


def when(ts: float | None) -> str:
    """A unix time as local time, ``—`` when unknown."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else NONE


def state(run: Run) -> str:
    """The run's state, and the known failure its console shows: ``crashed: CUDA out of memory on
    rank 3``."""
    return f"{run.state}: {run.failure}" if run.failure else run.state


def line_text(line: Line, ranks: bool = True) -> str:
    """A console line as ``tunetrack logs`` prints it: ``12:03:07   [rank 3] text`` (``!`` after the
    time marks stderr, ``#`` a note of tunetrack's; ``ranks=False`` leaves the rank out, for a run
    with one process)."""
    at = time.strftime("%H:%M:%S", time.localtime(line.time))
    mark = {"stderr": "!", "tunetrack": "#"}.get(line.stream, " ")
    return f"{at} {mark} {f'[rank {line.rank}] ' if ranks else ''}{line.text}"


def last_lines(run: Run, count: int = LAST_LINES) -> list[str]:
    """The last console lines of a run that failed, was killed or crashed (``line_text``); none for
    any other."""
    if run.state not in ENDED_BADLY:
        return []
    lines = run.console(tail=count)
    return [line_text(line, len({x.rank for x in lines}) > 1) for line in lines]


def duration(run: Run) -> str:
    """From the start to the end, or to now while running: ``3m07s``, ``2h05m``."""
    end = run.ended or (time.time() if run.state == states.RUNNING else None)
    if end is None or not run.created:
        return NONE
    seconds = int(max(end - run.created, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def short(value: Any, width: int | None = 60) -> str:
    """``str(value)`` on one line, cut to ``width`` characters with an ellipsis (None: not cut)."""
    text = str(value)
    if "\n" in text:
        text = " ".join(text.split())
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def number(value: Any) -> str:
    """A metric's value: four significant digits, ``—`` for none."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return NONE if value is None else short(value, 24)


def config_text(value: Any) -> str:
    """A config value: a string as it is, anything else as Python writes it, floats without the noise
    of their last bits (``config.text``)."""
    return config.text(value)


def config_texts(values: Sequence[Any]) -> list[str | None]:
    """The values of one config key in several runs (a row of a diff), None where a run lacks it
    (``config.MISSING``). Where the texts would hide a difference (``0.0003`` against
    ``0.00030000000000000003``, ``"1"`` against ``1``), the row shows each value exact (``repr``)."""
    given = [v for v in values if v is not config.MISSING]
    exact = len(set(map(config_text, given))) != len(set(map(repr, given)))
    return [None if v is config.MISSING else repr(v) if exact else config_text(v) for v in values]


def differing(flats: Sequence[dict[str, Any]]) -> list[tuple[str, list[str | None]]]:
    """(key, each run's value as ``config_texts``) for every flat config key whose values differ
    (``config.diff``: the comparison ``tunetrack diff`` makes)."""
    return [(key, config_texts(values)) for key, values in config.diff(list(flats))]


def git_text(git: dict[str, Any] | None) -> str:
    """The commit the run's code was at, its branch, and whether the work tree had changes:
    ``3f2a9c1d0b7e (main, dirty)``."""
    if not git:
        return NONE
    flags = ", ".join(x for x in (git.get("branch"), "dirty" if git.get("dirty") else None) if x)
    commit = str(git["commit"])[:12] if git.get("commit") else "no commit yet"
    return f"{commit} ({flags})" if flags else commit


def not_kept(run: Run) -> str:
    """What was logged but not stored (or not sent to a backend), or that nothing was."""
    parts = [
        f"{n} rows not sent to {name.removeprefix('backend_missed/')}"
        if name.startswith("backend_missed/")
        else f"{n} {NOT_KEPT.get(name, name)}"
        for name, n in run.counters().items()
    ]
    if parts:
        return "; ".join(parts)
    if run.state == states.RUNNING:
        return "nothing so far (counted as the run ends)"
    return "nothing: every row logged was stored"


def facts(run: Run) -> list[tuple[str, str]]:
    """(label, text) of what ``tunetrack show`` prints at the top: identity, state, times, where and
    how the run ran, what it could not keep, and, for an imported run, where it came from."""
    about = provenance(run)
    versions = {"python": about["python"], **about["versions"]}
    rows = [
        ("run", f"{run.name} ({run.id})"),
        ("project", run.project or NONE),
        ("state", state(run)),
        ("created", when(run.created)),
        ("ended", when(run.ended)),
        ("duration", duration(run)),
        ("hosts", ", ".join(run.hosts) or NONE),
        ("processes", str(about["processes"])),
        ("user", str(about["user"] or NONE)),
        ("tags", ", ".join(run.tags) or NONE),
        ("git", git_text(about["git"])),
        ("command", about["command"] or NONE),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items() if v) or NONE),
        ("path", str(run.path)),
        ("not kept", not_kept(run)),
    ]
    if about["imported"]:
        rows.append(("imported", about["imported"]))
    return rows


def notes(run: Run) -> list[tuple[str, str, str]]:
    """(when, by whom, text) of each note (``tunetrack note``), oldest first."""
    return [(when(n["time"]), str(n.get("by") or NONE), n["text"]) for n in run.notes]


def overview(run: Run) -> list[tuple[str, str]]:
    """``facts``, then one ``note`` row per note: ``text (by, when)``."""
    return facts(run) + [("note", f"{text} ({by}, {at})") for at, by, text in notes(run)]


def summary_rows(summary: dict[str, dict[str, Any]]) -> list[list[str]]:
    """``Run.summary()`` as text: key, last, min, max, the step of the last value, points."""
    return [
        [key, number(s["last"]), number(s["min"]), number(s["max"]), number(s["step"]), str(s["count"])]
        for key, s in summary.items()
    ]


def event_text(event: dict[str, Any], width: int | None = None) -> str:
    """An event's details (all but its kind, step and time): ``path=ckpt-20, value=nan``; each value
    cut to ``width`` characters if given."""
    return ", ".join(f"{k}={short(v, width)}" for k, v in event.items() if k not in ("kind", "step", "time"))


def event_rows(events: list[dict[str, Any]]) -> list[dict[str, str]]:
    """``Run.events()`` as text: step, kind, time and details of each."""
    return [
        {"step": number(e["step"]), "kind": str(e["kind"]), "time": when(e["time"]), "details": event_text(e)}
        for e in events
    ]


def run_text(run: Run) -> dict[str, Any]:
    """What a page shows of the run, worded (JSON-safe: strings only): ``facts``, the ``overview``'s
    (label, text) rows; ``summary`` rows; ``events``."""
    return {
        "facts": [list(row) for row in overview(run)],
        "summary": summary_rows(run.summary()),
        "events": event_rows(run.events()),
    }
