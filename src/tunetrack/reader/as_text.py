"""A run as people read it: the one wording that ``tunetrack show``, the dashboard's run page and the
report share. The overview's facts (where, when and how the run ran, what it could not keep, its
notes), the summary's numbers, a config value and an event are worded here, once; each front end only
lays the texts out (a terminal grid, an HTML list), so they cannot drift apart.

Times are local time where the text is made (the CLI's, the dashboard server's, the machine that
wrote a report).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Any

from .. import config, failures, metric_keys
from ..config import flatten, names
from ..errors import AmbiguousName
from ..states import State
from ..values import is_number
from .as_json import provenance
from .console_log import Line
from .families import SUMMARY_SHOWN, family_summary, fold
from .names import config_key
from .run import Run
from .samples import IMAGE, cell_text, clip, merge_columns, select, steps_of, visible
from .tokens import rich_cells

#: what a fact without a value reads
NONE = "—"
#: console lines shown for a run that did not finish
LAST_LINES = 20
#: how far before its end a run's traceback may begin for ``last_lines`` to show what came before it
TRACEBACK_LINES = 200
#: config keys ``tunetrack show`` shows without ``--full``
KEY_CONFIG = 30
#: states whose run shows its last console lines: the reason is usually there
ENDED_BADLY = (State.FAILED, State.KILLED, State.CRASHED)
#: a table of samples in a report or the notebook panel: at most this many rows, this many characters
#: a cell (a step of GRPO, 64 completions of 1.5 kB and their prompts, is cut to about 30 kB)
SAMPLE_ROWS = 16
SAMPLE_CHARS = 1000
#: ``Run.counters()`` names, worded (zero counts are left out)
NOT_KEPT = {
    "dropped_rows": "rows dropped (the writer could not keep up)",
    "dropped_values": "values dropped (of a type the store does not keep)",
    "lost_rows": "rows lost (the store could not write them)",
    "late_rows": "rows logged after finish()",
}


#: event details worded as how many entries they hold (``event_text``)
COUNTED = ("files", "metrics", "config")


def when(ts: float | None) -> str:
    """A unix time as local time, ``—`` when unknown."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else NONE


def state(run: Run) -> str:
    """The run's state, and the known failure its console shows (``crashed: CUDA out of memory on
    rank 3``) or who stopped it and why (``stopped: by ana@gpu1, loss diverged``; a live run that was
    asked to: ``running: stop asked by ana@gpu1``)."""
    return state_words(run.state, run.failure, run.stop_request)


def state_words(state: str, failure: str | None, stop: dict[str, Any] | None) -> str:
    """``state`` as ``state(run)`` words it, from a run's JSON fields (``state``, ``failure``,
    ``stop``): what a reader of the runs table has without the run."""
    if failure:
        return f"{state}: {failure}"
    if stop is not None and state in (State.STOPPED, State.RUNNING):
        asked = "stop asked by" if state == State.RUNNING else "by"
        reason = f", {stop['reason']}" if stop.get("reason") else ""
        return f"{state}: {asked} {stop.get('by') or NONE}{reason}"
    return state


def exit_text(code: int) -> str:
    """A command's exit code as a shell shows it: ``1``; ``137 (SIGKILL)`` for one a signal ended."""
    name = failures.signal_name(code)
    return f"{128 - code} ({name})" if name else str(code)


def line_text(line: Line, ranks: bool = True) -> str:
    """A console line as ``tunetrack logs`` prints it: ``12:03:07   [rank 3] text`` (``!`` after the
    time marks stderr, ``#`` a note of tunetrack's; ``ranks=False`` leaves the rank out, for a run
    with one process)."""
    at = time.strftime("%H:%M:%S", time.localtime(line.time))
    mark = {"stderr": "!", "tunetrack": "#"}.get(line.stream, " ")
    return f"{at} {mark} {f'[rank {line.rank}] ' if ranks else ''}{visible(line.text)}"


def last_lines(run: Run, count: int = LAST_LINES) -> list[str]:
    """The last console lines of a run that failed, was killed or crashed (``line_text``); none for
    any other. A run that failed with a traceback shows it whole already: its lines are those printed
    before the traceback began (the progress that says how far it got), not the traceback again."""
    if run.state not in ENDED_BADLY:
        return []
    lines = run.console(tail=count + TRACEBACK_LINES if run.error else count)
    if run.error:
        starts = [i for i, line in enumerate(lines) if line.text.startswith(failures.TRACEBACK)]
        lines = lines[: starts[0]] if starts else lines
    lines = lines[-count:]
    return [line_text(line, len({x.rank for x in lines}) > 1) for line in lines]


def key_config(run: Run) -> tuple[list[tuple[str, Any]], int]:
    """The config keys that matter, and how many others there are: the user's own keys, then what
    the short names find (``lr``: ``args.learning_rate``) and the keys that say what was trained
    (``config.names``); not the hundreds a framework records of its defaults (``tunetrack show``
    leaves them to ``--full``)."""
    flat = run.flat_config
    keys = [k for k in flat if not names.framework_key(k)]
    for name in names.ALIASES:
        with contextlib.suppress(AmbiguousName):
            found = config_key(flat, name)
            if found is not None:
                keys.append(found)
    keys += [k for pattern in names.MODEL_KEYS for k in flat if fnmatchcase(k, pattern)]
    shown = list(dict.fromkeys(keys))[:KEY_CONFIG]
    return [(k, flat[k]) for k in shown], len(flat) - len(shown)


def duration(run: Run) -> str:
    """From the start to the end, or to now while running: ``3m07s``, ``2h05m``."""
    end = run.ended or (time.time() if run.state == State.RUNNING else None)
    if end is None or not run.created:
        return NONE
    return elapsed(end - run.created)


def elapsed(seconds: float) -> str:
    """A span of time as ``duration`` words it: ``3m07s``, ``2h05m``."""
    seconds = int(max(seconds, 0))
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


def human_bytes(n: int) -> str:
    """A size as people read it: 512 B, 3.2 MB, 1.4 GB."""
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def checkpoint_keys(logged: Iterable[str], key: str | None = None) -> list[str]:
    """The metrics logged at checkpoints' steps in the order ``tunetrack checkpoints`` and the
    dashboard show them: ``key`` (the one the best is picked by, under any of its spellings) first,
    then losses and rewards, evaluation metrics before training ones in each part."""
    present = set(logged)
    first = set(metric_keys.spellings(key)) & present if key else set()
    return sorted(
        present,
        key=lambda k: (k not in first, "loss" not in k and "reward" not in k, not k.startswith("eval"), k),
    )


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
    if run.state == State.RUNNING:
        return "nothing so far (counted as the run ends)"
    if run.state == State.CRASHED:  # no end record: nobody counted, and what was queued is gone
        return "unknown: the process died without recording its end (rows still queued then are lost)"
    return "nothing: every row logged was stored"


def facts(run: Run, hidden: Callable[[str], bool] | None = None) -> list[tuple[str, str]]:
    """(label, text) of what ``tunetrack show`` prints at the top: identity, state, times, where and
    how the run ran, what it could not keep, for an imported run where it came from, and the tables
    of samples it holds (``samples_listed``; for a GRPO run without any, why)."""
    about = provenance(run)
    versions = {"python": about["python"], **about["versions"]}
    rows = [
        ("run", f"{run.name} ({run.id})"),
        ("project", run.project or NONE),
        ("state", state(run)),
        ("created", when(run.created)),
        ("ended", when(run.ended)),
        ("duration", duration(run)),
        *([("exit code", exit_text(run.exit_code))] if run.exit_code is not None else []),
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
    rows += fork_facts(run, hidden)
    held = samples_listed(run)
    if held != "none":  # the tables it holds and how to read them, or why a GRPO run has none
        rows.append(("samples", held))
    return rows


def fork_facts(run: Run, hidden: Callable[[str], bool] | None = None) -> list[tuple[str, str]]:
    """A fork's ``forked from`` (``PARENT@STEP (name)``) and ``changed from parent`` (each config key
    the fork holds with another value than its parent had when the fork began: ``lr: 0.0003 ->
    0.0001``), and a parent's ``forks`` (``ID@STEP (name)``, ``; ``-separated): each begins with the
    run id the dashboard links. ``hidden``: the runs (by id) the reader may not see (a team member's):
    the forks made into them are not named (a fork's own parent is: its history is the fork's too)."""
    rows = []
    fork = run.fork
    if fork is not None:
        parent = run.parent()
        named = f" ({parent.name})" if parent is not None and parent.name != parent.id else ""
        gone = " (not in this store)" if parent is None and run.store is not None else ""
        rows.append(("forked from", f"{fork['run']}@{fork['step']}{named}{gone}"))
        before = run.fork_config()
        if before is not None:
            changes = [
                f"{key}: {old if old is not None else NONE} -> {new}"
                for key, (old, new) in differing([flatten(before), run.flat_config])
                if new is not None
            ]
            rows.append(("changed from parent", "; ".join(changes) or "nothing in the config"))
    children = [c for c in run.forks() if hidden is None or not hidden(c.id)]
    if children:
        texts = [
            f"{c.id}@{c.fork['step'] if c.fork else NONE}" + (f" ({c.name})" if c.name != c.id else "")
            for c in children
        ]
        rows.append(("forks", "; ".join(texts)))
    return rows


def notes(run: Run) -> list[tuple[str, str, str]]:
    """(when, by whom, text) of each note (``tunetrack note``), oldest first."""
    return [(when(n["time"]), str(n.get("by") or NONE), n["text"]) for n in run.notes]


def overview(run: Run, hidden: Callable[[str], bool] | None = None) -> list[tuple[str, str]]:
    """``facts``, then one ``note`` row per note: ``text (by, when)``. ``hidden``: as ``fork_facts``."""
    return facts(run, hidden) + [("note", f"{text} ({by}, {at})") for at, by, text in notes(run)]


def summary_rows(summary: dict[str, dict[str, Any]]) -> list[list[str]]:
    """``Run.summary()`` as text: key, last, min, max, the step of the last value, points."""
    return [
        [key, number(s["last"]), number(s["min"]), number(s["max"]), number(s["step"]), str(s["count"])]
        for key, s in summary.items()
    ]


def folded_summary(
    summary: dict[str, dict[str, Any]], most: int = SUMMARY_SHOWN
) -> list[tuple[list[str], bool]]:
    """``summary_rows``, past ``most`` keys with a row per family of keys (``families.fold``): its glob,
    the median of the last values, the least minimum, the most maximum, the last step, how many keys;
    each row and whether it is a family's."""
    rows = []
    for name, keys in fold(summary, most):
        if keys == [name]:
            rows.append((summary_rows({name: summary[name]})[0], False))
            continue
        s = family_summary([summary[k] for k in keys])
        median = number(s["median"]) if s["median"] is not None else NONE
        cells = [f"median {median}", number(s["min"]), number(s["max"]), number(s["step"])]
        rows.append(([name, *cells, f"{len(keys):,} keys"], True))
    return rows


def event_text(event: dict[str, Any], width: int | None = None) -> str:
    """An event's details (all but its kind, step and time): ``path=ckpt-20, value=nan``; each value
    cut to ``width`` characters if given; a checkpoint's files and metrics as how many (``tunetrack
    checkpoints`` lists them), as a fork's parent's config (``tunetrack show`` words its changes)."""
    return ", ".join(
        f"{k}={len(v) if k in COUNTED and isinstance(v, (list, dict)) else short(v, width)}"
        for k, v in event.items()
        if k not in ("kind", "step", "time")
    )


def event_rows(events: list[dict[str, Any]]) -> list[dict[str, str]]:
    """``Run.events()`` as text: step, kind, time and details of each."""
    return [
        {"step": number(e["step"]), "kind": str(e["kind"]), "time": when(e["time"]), "details": event_text(e)}
        for e in events
    ]


def run_text(run: Run, hidden: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """What a page shows of the run, worded (JSON-safe: strings only): ``facts``, the ``overview``'s
    (label, text) rows; ``summary`` rows (a family of keys folded into one past ``SUMMARY_SHOWN`` keys:
    ``folded_summary``); ``events``; ``last_lines``, the console's last lines of a
    run that failed, was killed or crashed (as ``tunetrack show`` prints them)."""
    return {
        "facts": [list(row) for row in overview(run, hidden)],
        "summary": [row for row, _ in folded_summary(run.summary())],
        "events": event_rows(run.events()),
        "last_lines": last_lines(run),
    }


# -- samples -----------------------------------------------------------------------------------------
#: how each trainer that writes tables of completions is told to (its option is off by default)
COMPLETIONS_OFF = (
    "TRL and ms-swift record GRPO completions only when asked: GRPOConfig(log_completions=True), "
    "or --log_completions true"
)


def samples_listed(run: Run) -> str:
    """What tables of samples ``run`` holds, and how to read them (``tunetrack show``, an agent):
    ``completions: 320 rows at 40 steps (tunetrack samples RUN completions --last)``; for a run with
    none, why, where a trainer's ``log_completions`` was left off."""
    index = run.sample_index()
    if not index:
        flat = run.flat_config
        key = config_key(flat, "log_completions")
        off = key is not None and flat[key] is False
        return f"none: {COMPLETIONS_OFF}" if off else "none"
    return (
        "; ".join(
            f"{key}: {sum(steps.values()):,} rows at {len(steps):,} step{'s' if len(steps) != 1 else ''}"
            for key, steps in index.items()
        )
        + f" (tunetrack samples {run.name if ' ' not in run.name else run.id} {next(iter(index))} --last)"
    )


def sample_cell(value: Any, kind: str, chars: int = SAMPLE_CHARS) -> str:
    """One cell of a table of samples as text: a number as ``number`` words it, a conversation as
    ``role: content`` lines, an image as its file's name in the run; text cut by ``clip``."""
    if kind == IMAGE and isinstance(value, str):
        return f"(image {value})"
    if is_number(value):
        return number(value)
    return clip(cell_text(value), chars)


def sample_columns(samples: Sequence[dict[str, Any]], columns: dict[str, str]) -> dict[str, str]:
    """The columns worth showing: all of them but a ``step`` column that only says the step again
    (TRL's tables have one)."""
    if samples and all(s["row"].get("step") == s["step"] for s in samples):
        return {c: kind for c, kind in columns.items() if c != "step"}
    return columns


def samples_text(
    run: Run,
    key: str | None = None,
    step: int | None = None,
    rows: int = SAMPLE_ROWS,
    chars: int = SAMPLE_CHARS,
) -> dict[str, Any] | None:
    """One step's table of samples, bounded for a page that holds it whole (a report, the notebook
    panel): ``key`` (default the first the run logged), ``step`` (default its last), ``steps`` (how many
    have samples), ``total`` rows, ``columns`` ([name, type]), and the first ``rows`` rows as
    ``{"index", "cells"}`` (texts, ``sample_cell``; with ``tokens`` and ``chats``, ``rich_cells``, where
    the row has some). None when the run has no such table."""
    index = run.sample_index()
    key = key if key is not None else next(iter(index), None)
    if key is None or key not in index:
        return None
    steps = steps_of(index, key)
    step = steps[-1] if step is None else step
    if step not in index[key]:
        return None
    tables = run.sample_tables(key, step)
    every = [s for t in tables for s in t.samples()]
    shown = select(every, limit=rows)  # the reader's one selection, as the CLI and dashboard make it
    columns = sample_columns(every, merge_columns(tables))
    return {
        "key": key,
        "step": step,
        "steps": len(steps),
        "total": len(every),
        "columns": [[c, kind] for c, kind in columns.items()],
        "rows": [
            {
                "index": s["index"],
                "cells": [sample_cell(s["row"].get(c), k, chars) for c, k in columns.items()],
                **rich_cells(s["row"], list(columns), chars),
            }
            for s in shown
        ],
    }
