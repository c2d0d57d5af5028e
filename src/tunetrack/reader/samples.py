"""Tables of samples read back (``Tracker.log_table``, ``log_text``), and the one way they are
filtered and sorted: the CLI's ``samples``, the dashboard's Samples view and the report all select
rows here, so ``--grep`` and the dashboard's filter cannot disagree.

A sample is one row of one table: ``{"key", "step", "time", "index", "row"}``, ``row`` holding the
table's own columns (TRL's tables have a ``step`` column of their own, so the row is kept apart from
where it was logged). Tables written before tables had a record of their own (``text`` events) read
the same way.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from ..store import codec
from ..values import is_chat, is_finite_number, is_number, missing_last
from .names import unknown

# -- column types, as readers show them --
NUMBER = "number"
BOOL = "bool"
TEXT = "text"
CHAT = "chat"
IMAGE = "image"
#: a list of numbers or of strings per row (a completion's tokens, a value per token)
SEQUENCE = "sequence"
MIXED = "mixed"

_TYPES = {
    codec.FLOAT: NUMBER,
    codec.INT: NUMBER,
    codec.BOOL: BOOL,
    codec.TEXT: TEXT,
    codec.CHAT: CHAT,
    codec.IMAGE: IMAGE,
    codec.SEQUENCE: SEQUENCE,
}
#: the columns that hold a row's prompt, in the order they are looked for
PROMPT_COLUMNS = ("prompt", "query", "question", "input", "instruction")
#: the columns that hold a row's completion (what two runs' samples are compared by), in order
COMPLETION_COLUMNS = ("completion", "response", "output", "generation", "answer", "text")
#: words of a text beyond which ``word_diff`` lets difflib skip very common words (its autojunk):
#: below it, every word is matched, so "the" and "a" line up too
EXACT_DIFF_WORDS = 5_000
#: fields of a sample besides its row, which ``sort`` also accepts
META = ("key", "step", "time", "index")
#: the kind of event a table of samples was stored as before tables had a record of their own
TEXT_EVENT = "text"


@dataclass(eq=False)
class SampleTable:
    """One table at one step; its rows are decoded when asked for."""

    key: str
    step: int
    time: float
    count: int
    record: codec.TableRecord | None = None
    #: the rows of a table stored as a ``text`` event (before tables had a record of their own)
    event_rows: list[Any] | None = None

    def rows(self) -> list[dict[str, Any]]:
        if self.record is not None:
            return self.record.rows()
        return [r if isinstance(r, dict) else {"text": r} for r in self.event_rows or []]

    def columns(self) -> dict[str, str]:
        """Each column's type: number, bool, text, chat, image, or mixed."""
        if self.record is not None:
            kinds = dict(self.record.columns)
            rows = None
            out = {}
            for name, kind in kinds.items():
                if kind in _TYPES:
                    out[name] = _TYPES[kind]
                else:
                    rows = rows if rows is not None else self.rows()
                    out[name] = value_type(r.get(name) for r in rows)
            return out
        names: dict[str, None] = {}
        rows = self.rows()
        for row in rows:
            names.update(dict.fromkeys(row))
        return {name: value_type(r.get(name) for r in rows) for name in names}

    def samples(self) -> list[dict[str, Any]]:
        return [
            {"key": self.key, "step": self.step, "time": self.time, "index": i, "row": row}
            for i, row in enumerate(self.rows())
        ]


def from_event(kind: str, step: int, time: float, data: dict[str, Any]) -> SampleTable | None:
    """The table of a ``text`` event, or None for any other event."""
    if kind != TEXT_EVENT:
        return None
    rows = data.get("rows") or []
    return SampleTable(str(data.get("key") or "text"), step, time, len(rows), event_rows=list(rows))


def value_type(values: Iterable[Any]) -> str:
    """The type of a column of plain values (None aside): number, bool, text, chat, or mixed."""
    types = {_type_of(v) for v in values if v is not None}
    if not types:
        return TEXT
    return types.pop() if len(types) == 1 else MIXED


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return NUMBER
    if is_chat(value):
        return CHAT
    if isinstance(value, list):
        return SEQUENCE
    return TEXT


def merge_columns(tables: Sequence[SampleTable]) -> dict[str, str]:
    """The columns of several tables, in first-seen order (a column typed differently is mixed)."""
    out: dict[str, str] = {}
    for table in tables:
        for name, kind in table.columns().items():
            out[name] = kind if out.get(name, kind) == kind else MIXED
    return out


def steps_of(index: dict[str, dict[int, int]], key: str | None = None) -> list[int]:
    """The steps with samples (of ``key``, or of any key) in a ``Run.sample_index()``, in order."""
    return sorted({step for k, steps in index.items() if key is None or k == key for step in steps})


def step_of(steps: list[int], step: int | str | None) -> int | None:
    """The step a reader asks for among ``steps`` (``steps_of``'s, not empty): ``"last"`` the last one,
    ``"all"`` or None every step (None), else a number (or its text) that ``steps`` holds; a
    ``ValueError`` of one line naming the steps there are for any other."""
    if step is None or step == "all":
        return None
    if step == "last":
        return steps[-1]
    try:
        chosen = int(step)
    except ValueError:
        raise ValueError(f"step: give a number, 'last' or 'all', not {step!r}") from None
    if chosen not in steps:
        raise ValueError(
            f"no samples at step {chosen} (steps {steps[0]} to {steps[-1]}, {len(steps)} in all)"
        )
    return chosen


def message_text(message: Mapping[str, Any]) -> str:
    """One turn of a conversation as a line: ``role: content``, the tools it calls (``→ calc(...)``)
    and its reward where the turn has one (an agent's trajectory: ``[reward 1.0]``)."""
    text = f"{message.get('role')}: {cell_text(message.get('content'))}"
    for call in message.get("tool_calls") or []:
        function = call.get("function", call) if isinstance(call, dict) else {}
        text += f" → {function.get('name')}({cell_text(function.get('arguments'))})"
    if is_number(message.get("reward")):
        text += f"  [reward {message['reward']}]"
    return text


# -- the text of a cell, for matching and for terminals ----------------------------------------------
def cell_text(value: Any) -> str:
    """A cell as text: a conversation as ``role: content`` lines, numbers as Python writes them."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if is_chat(value):
        return "\n".join(message_text(m) for m in value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def clip(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters, with a marker saying how much was left out (a text of
    many lines keeps its lines: ``short`` makes one line for a terminal's table instead)."""
    if len(text) <= chars:
        return text
    return f"{text[:chars]}… [{len(text) - chars:,} more characters]"


def prompt_column(columns: Iterable[str]) -> str | None:
    """The column holding the rows' prompt, if any."""
    names = list(columns)
    return next((c for c in PROMPT_COLUMNS if c in names), None)


def prompt_text(row: dict[str, Any]) -> str | None:
    """A row's prompt as text, or None when the row has no prompt column."""
    column = prompt_column(row)
    return None if column is None else cell_text(row[column])


def completion_column(columns: dict[str, str]) -> str | None:
    """The column holding the rows' completion: a column named like one, else the first text or chat
    column that is not the prompt."""
    named = next((c for c in COMPLETION_COLUMNS if c in columns), None)
    if named is not None:
        return named
    prompt = prompt_column(columns)
    return next((c for c, kind in columns.items() if kind in (TEXT, CHAT) and c != prompt), None)


# -- two texts compared --------------------------------------------------------------------------------
Segments = list[tuple[str, bool]]


def word_diff(a: str, b: str) -> tuple[Segments, Segments]:
    """Two texts word by word (difflib, over the words; the spaces stay with the word before them):
    each as ``(text, changed)`` segments that join back to it, ``changed`` marking the words the other
    text has not (deleted from ``a``, inserted in ``b``)."""
    words_a, words_b = _words(a), _words(b)
    matcher = difflib.SequenceMatcher(
        None,
        [w.rstrip() for w in words_a],
        [w.rstrip() for w in words_b],
        autojunk=max(len(words_a), len(words_b)) > EXACT_DIFF_WORDS,
    )
    out_a: Segments = []
    out_b: Segments = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        _add(out_a, "".join(words_a[i1:i2]), tag != "equal")
        _add(out_b, "".join(words_b[j1:j2]), tag != "equal")
    return out_a, out_b


def _words(text: str) -> list[str]:
    """Leading spaces, then each word with the spaces after it."""
    return re.findall(r"^\s+|\S+\s*", text)


def _add(segments: Segments, text: str, changed: bool) -> None:
    if not text:
        return
    if segments and segments[-1][1] == changed:
        segments[-1] = (segments[-1][0] + text, changed)
    else:
        segments.append((text, changed))


def pairs(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], column: str | None
) -> list[dict[str, Any]]:
    """Two runs' samples of one prompt at one step, paired in order (the i-th generation of each), the
    ``column`` of each pair compared by ``word_diff``: ``{"a", "b", "diff": {"a", "b"}}`` (a run with
    fewer rows: None in its place, and no diff)."""
    out = []
    for x, y in zip_longest(a, b):
        pair: dict[str, Any] = {"a": x, "b": y, "diff": None}
        if x is not None and y is not None and column is not None:
            left, right = word_diff(cell_text(x["row"].get(column)), cell_text(y["row"].get(column)))
            pair["diff"] = {"a": left, "b": right}
        out.append(pair)
    return out


# -- selecting ---------------------------------------------------------------------------------------
def column_means(tables: Iterable[SampleTable], column: str) -> tuple[list[int], list[float]]:
    """``(steps, means)``: the mean of a numeric ``column`` at each step of ``tables`` (a run's tables
    of one key) where it holds a finite number; the curve of a reward column the dashboard draws."""
    by_step: dict[int, list[float]] = {}
    for table in tables:
        if table.columns().get(column) != NUMBER:
            continue
        values = by_step.setdefault(table.step, [])
        values += [row[column] for row in table.rows() if is_finite_number(row.get(column))]
    steps = sorted(s for s, v in by_step.items() if v)
    return steps, [sum(by_step[s]) / len(by_step[s]) for s in steps]


def prompt_of(samples: Sequence[dict[str, Any]], index: int) -> str:
    """The prompt of the row ``index`` among ``samples``; a ``LookupError`` when there is no such row
    or it has no prompt."""
    row = next((s["row"] for s in samples if s["index"] == index), None)
    text = None if row is None else prompt_text(row)
    if text is None:
        raise LookupError("no such row, or it has no prompt")
    return text


@dataclass
class SideBySide:
    """Two runs' samples of one step matched by prompt (``side_by_side``)."""

    columns: dict[str, str]
    #: the prompts of the first run's rows that the second has too, in the first run's order
    prompts: list[str]
    #: the prompt shown (None for tables without prompts: the rows pair in order)
    prompt: str | None
    #: each run's rows of that prompt
    chosen: tuple[list[dict[str, Any]], list[dict[str, Any]]]

    @property
    def completion_column(self) -> str | None:
        return completion_column(self.columns)


def side_by_side(
    a: Sequence[SampleTable],
    b: Sequence[SampleTable],
    prompt: str | None = None,
    like_index: int | None = None,
) -> SideBySide:
    """Two runs' tables of one key at one step, matched by prompt: the prompt of the first run's row
    ``like_index``, else ``prompt`` if both runs have it, else the first both have; what the
    dashboard's comparison of two runs' samples shows (``pairs`` then sets the rows side by side)."""
    rows = [[s for t in a for s in t.samples()], [s for t in b for s in t.samples()]]
    in_b = {prompt_text(s["row"]) for s in rows[1]}
    shared = [t for t in dict.fromkeys(prompt_text(s["row"]) for s in rows[0]) if t is not None and t in in_b]
    if like_index is not None:
        prompt = prompt_of(rows[0], like_index)
    elif (prompt is None or prompt not in shared) and shared:
        prompt = shared[0]  # none asked for, or one the runs do not both have at this step
    first, second = (select(side, same_prompt=prompt) if prompt is not None else side for side in rows)
    return SideBySide(merge_columns([*a, *b]), shared, prompt, (first, second))


def select(
    samples: Iterable[dict[str, Any]],
    prompt: str | None = None,
    same_prompt: str | None = None,
    grep: str | None = None,
    sort: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The samples whose prompt contains ``prompt``, whose prompt is exactly ``same_prompt`` (one
    prompt across training), and of which some text cell matches the regular expression ``grep`` (raises
    ``re.error`` for a bad one); sorted by ``sort`` (``COLUMN`` or ``COLUMN:desc``, a column of the
    row or one of ``META``; empty cells last), at most ``limit`` of them."""
    pattern = re.compile(grep) if grep else None
    if sort:
        samples = list(samples)  # looked at twice: for its columns, then row by row
    order = sort_spec(sort, samples) if sort else None
    out = []
    for sample in samples:
        row = sample["row"]
        if prompt is not None or same_prompt is not None:
            text = prompt_text(row)
            if text is None or (prompt is not None and prompt not in text):
                continue
            if same_prompt is not None and text != same_prompt:
                continue
        if pattern is not None and not _matches(pattern, row):
            continue
        out.append(sample)
    if order is not None:
        out = sort_samples(out, *order)
    return out[:limit] if limit is not None else out


def sort_spec(sort: str, samples: Iterable[dict[str, Any]]) -> tuple[list[str], bool]:
    """``COLUMN[:asc|desc]`` as (the columns, descending): a column of the rows, one of ``META``, or
    a sum of columns (``has_digit+short:desc``, what a GRPO run's reward functions add up to). A
    column none of ``samples`` has is an ``UnknownName`` naming the closest; an order other than
    asc or desc a ``ValueError``."""
    spec, colon, order = sort.rpartition(":") if ":" in sort else (sort, "", "asc")
    if colon and order.lower() not in ("asc", "desc"):
        raise ValueError(f"--sort: {order!r} is no order: give COLUMN:asc or COLUMN:desc")
    columns = [c.strip() for c in spec.split("+")]
    if not all(columns):
        raise ValueError(f"--sort: {sort!r}: give a column, or columns joined by +")
    known: dict[str, None] = dict.fromkeys(META)
    for sample in samples:
        known.update(dict.fromkeys(sample["row"]))
    for column in columns:
        if column not in known:
            raise unknown("column", column, [c for c in known if c not in META], holder="table of samples")
    return columns, order.lower() == "desc"


def _matches(pattern: re.Pattern[str], row: dict[str, Any]) -> bool:
    """Whether a text cell of ``row`` (text, a conversation, a list or dict) matches: numbers are not
    text, and not turning each into a string keeps a search of every step fast."""
    search = pattern.search
    for value in row.values():
        if type(value) is str:
            if search(value):
                return True
        elif isinstance(value, (list, dict)) and search(cell_text(value)):
            return True
    return False


def sort_samples(
    samples: list[dict[str, Any]], columns: str | Sequence[str], descending: bool = False
) -> list[dict[str, Any]]:
    """Sorted by one column, or by the sum of several (their numbers; empty when none has one):
    numbers by value, anything else by its text; empty cells (None, NaN) last in either order."""
    names = [columns] if isinstance(columns, str) else list(columns)

    def cell(sample: dict[str, Any], column: str) -> Any:
        row = sample["row"]
        return row.get(column) if column in row or column not in META else sample.get(column)

    def value(sample: dict[str, Any]) -> Any:
        if len(names) == 1:
            return cell(sample, names[0])
        numbers = [v for c in names if is_number(v := cell(sample, c)) and not _empty(v)]
        return math.fsum(numbers) if numbers else None

    numbers = all(isinstance(v, (int, float)) for s in samples if not _empty(v := value(s)))

    def key(sample: dict[str, Any]) -> Any:
        v = value(sample)
        return None if _empty(v) else float(v) if numbers else cell_text(v)

    return missing_last(samples, key, descending)


#: control characters (C0 but newline and tab, DEL, C1): a terminal would act on them
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with its control characters written out (``\\x1b``, ``\\r``): a model's output shown in a
    terminal can neither retitle the window, clear the screen nor overwrite a line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
