"""The language that picks and orders runs: ``tunetrack ls --where EXPR --sort KEY``, the dashboard's
filter box, and the field names ``compare --group-by`` takes. One module, so every place reads the
same expression the same way.

A field is one of

- ``config.PATH``: a config value, nested keys joined by ``.`` (``config.lora.r``);
- ``tags`` (or ``tag``): the run's tags; a comparison holds when one tag satisfies it
  (``tag = "best"``), and ``"best" in tags`` asks the same;
- ``state``, ``project``, ``name``, ``id``;
- anything else is a metric, ``KEY[:AGG]`` with AGG one of ``last`` (the default), ``min``, ``max``,
  ``best`` (``eval/loss:min``): keys may hold ``/``, ``.`` and ``-``; a key with other characters, or
  one named like a field above, is written in backticks (`` `name`:max ``).

Values are numbers (``1e-4``, ``-2``), strings in double or single quotes, ``true``, ``false``,
``null`` and lists (``[8, 16]``). Operators: ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``,
``not in``, ``~`` (a regular expression found anywhere in the text); ``and``, ``or``, ``not`` and
parentheses combine them. A field a run does not have is missing, and compares like a NaN in pandas:
every comparison is false except ``!=`` (and ``not in``), which is true. Numbers compare with numbers
and text with text; a bool equals only a bool.

The expression is parsed by a grammar (lark, LALR), never evaluated as Python: a bad one is a
``WhereError`` that names what was unexpected and its column (counted from 1).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from .. import aggregates
from ..config.names import ALIASES
from ..errors import AmbiguousName
from ..gc_pause import no_cyclic_gc
from ..metric_keys import minimized, spelled, spellings
from ..values import is_number, missing_last
from .names import CONFIGS_SUGGESTED, config_key, short_names, unknown

if TYPE_CHECKING:
    from .run import Run

#: fields of the run itself; any other name is a metric
RUN_FIELDS = ("state", "project", "name", "id")
TAGS = ("tags", "tag")

GRAMMAR = r"""
?start: disj
?disj: conj (_OR conj)*
?conj: neg (_AND neg)*
?neg: _NOT neg -> not_
    | "(" disj ")"
    | comparison
comparison: operand OP operand
          | operand _IN operand -> in_
          | operand _NOT _IN operand -> not_in
?operand: FIELD -> field
        | KEY -> field
        | value
?value: NUMBER -> number
      | STRING -> string
      | "true" -> true
      | "false" -> false
      | "null" -> null
      | "[" [value ("," value)*] "]" -> list_
_OR: "or"
_AND: "and"
_NOT: "not"
_IN: "in"
OP: /[<>=!~]+/
FIELD: /[A-Za-z_][A-Za-z0-9_.\/-]*(:[A-Za-z]+)?/
KEY: /`[^`]+`(:[A-Za-z]+)?/
NUMBER: /[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/
STRING: /"(\\.|[^"\\])*"/ | /'(\\.|[^'\\])*'/
%ignore /\s+/
"""

OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "~")


class WhereError(ValueError):
    """A bad expression or field: the message names what and where (``unexpected '>>' at column 11``)."""


class _Missing:
    def __repr__(self) -> str:
        return "missing"


#: a field the run does not have
MISSING: Any = _Missing()


@dataclass(frozen=True)
class Field:
    """What a name in an expression reads: ``kind`` is ``config``, ``tags``, one of ``RUN_FIELDS``,
    or ``metric`` (``key`` and ``agg``)."""

    kind: str
    key: str = ""
    agg: str = "last"
    #: a metric read under its own name only, not its other spellings
    exact: bool = False

    def __str__(self) -> str:
        if self.kind == "config":
            return f"config.{self.key}"
        if self.kind == "metric":
            return f"{self.key}:{self.agg}"
        return self.kind


def field(text: str, column: int = 1) -> Field:
    """The field a name means (``config.lora.r``, ``tags``, ``eval/loss:min``, a backticked key)."""
    quoted = text.startswith("`")
    if quoted:
        end = text.index("`", 1)
        name, rest = text[1:end], text[end + 1 :]
    else:
        name, rest = text, ""
    try:
        if quoted:
            named = aggregates.parse_spec(rest, f" at column {column}")[1] if rest else None
        else:
            name, named = aggregates.parse_spec(text, f" at column {column}")
    except ValueError as exc:
        raise WhereError(str(exc)) from None
    agg = named or "last"
    if not quoted and named is None:
        if name.startswith("config."):
            return Field("config", name[len("config.") :])
        if name in TAGS:
            return Field("tags")
        if name in RUN_FIELDS:
            return Field(name)
    if not name:
        raise WhereError(f"empty field at column {column}")
    return Field("metric", name, agg)


#: what an expression asks of one run: the value of a field (``MISSING`` when it has none)
Lookup = Callable[[Field], Any]


class Where:
    """A parsed expression: ``where(lookup)`` says whether a run matches; ``fields`` are the fields it
    reads (a caller reads only those: the config only when the expression names it)."""

    def __init__(self, text: str, test: Callable[[Lookup], bool], fields: list[Field]) -> None:
        self.text = text
        self._test = test
        self.fields = fields

    def __call__(self, lookup: Lookup) -> bool:
        return self._test(lookup)


def parse(text: str) -> Where:
    """``text`` as a ``Where``; a ``WhereError`` pointing at the column of what is wrong."""
    from lark.exceptions import (
        UnexpectedCharacters,
        UnexpectedEOF,
        UnexpectedInput,
        UnexpectedToken,
        VisitError,
    )

    try:
        tree = _parser().parse(text)
    except UnexpectedEOF:
        raise WhereError(f"unexpected end at column {len(text) + 1}") from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise WhereError(f"unexpected end at column {len(text) + 1}") from None
        raise WhereError(f"unexpected {str(exc.token)!r} at column {exc.column}") from None
    except UnexpectedCharacters as exc:
        raise WhereError(f"unexpected {text[exc.pos_in_stream or 0]!r} at column {exc.column}") from None
    except UnexpectedInput as exc:  # pragma: no cover - every kind lark raises is one of the above
        raise WhereError(f"cannot parse at column {exc.column}") from None
    fields: list[Field] = []
    try:
        test = _compiler_class()(fields).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, WhereError):
            raise exc.orig_exc from None
        raise
    return Where(text, test, fields)


@cache
def _parser() -> Any:
    import lark

    return lark.Lark(
        GRAMMAR, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=False
    )


@cache
def _compiler_class() -> Any:
    import lark

    class Compiler(lark.Transformer):
        """The tree as closures: each comparison becomes a function of a run's ``Lookup``."""

        def __init__(self, fields: list[Field]) -> None:
            super().__init__()
            self.fields = fields

        # operands: (is_field, value-or-Field)
        def field(self, items: list[Any]) -> tuple[bool, Any]:
            token = items[0]
            f = field(str(token), token.column)
            self.fields.append(f)
            return True, f

        def number(self, items: list[Any]) -> tuple[bool, Any]:
            text = str(items[0])
            is_int = re.fullmatch(r"[+-]?\d+", text)
            return False, int(text) if is_int else float(text)

        def string(self, items: list[Any]) -> tuple[bool, Any]:
            text = str(items[0])
            return False, re.sub(r"\\(.)", r"\1", text[1:-1])

        def true(self, items: list[Any]) -> tuple[bool, Any]:
            return False, True

        def false(self, items: list[Any]) -> tuple[bool, Any]:
            return False, False

        def null(self, items: list[Any]) -> tuple[bool, Any]:
            return False, None

        def list_(self, items: list[Any]) -> tuple[bool, Any]:
            return False, [v for _, v in items]

        def comparison(self, items: list[Any]) -> Callable[[Lookup], bool]:
            left, op, right = items
            if str(op) not in OPERATORS:
                raise WhereError(f"unexpected {str(op)!r} at column {op.column}")
            pattern = None
            if str(op) == "~":
                if right[0] or not isinstance(right[1], str):
                    raise WhereError(f"~ takes a quoted regular expression, at column {op.column}")
                try:
                    pattern = re.compile(right[1])
                except re.error as exc:
                    raise WhereError(f"bad regular expression at column {op.column}: {exc}") from None
            return _comparison(left, str(op), right, pattern)

        def in_(self, items: list[Any]) -> Callable[[Lookup], bool]:
            return _comparison(items[0], "in", items[1], None)

        def not_in(self, items: list[Any]) -> Callable[[Lookup], bool]:
            test = _comparison(items[0], "in", items[1], None)
            return lambda lookup: not test(lookup)

        def not_(self, items: list[Any]) -> Callable[[Lookup], bool]:
            (inner,) = items
            return lambda lookup: not inner(lookup)

        def conj(self, items: list[Any]) -> Callable[[Lookup], bool]:
            return lambda lookup: all(test(lookup) for test in items)

        def disj(self, items: list[Any]) -> Callable[[Lookup], bool]:
            return lambda lookup: any(test(lookup) for test in items)

    return Compiler


def _comparison(
    left: tuple[bool, Any], op: str, right: tuple[bool, Any], pattern: re.Pattern[str] | None
) -> Callable[[Lookup], bool]:
    def value(side: tuple[bool, Any], lookup: Lookup) -> Any:
        return lookup(side[1]) if side[0] else side[1]

    def test(lookup: Lookup) -> bool:
        a, b = value(left, lookup), value(right, lookup)
        if op == "in":
            return _in(a, b)
        if isinstance(a, list):  # tags: one of them
            return any(_compare(x, op, b, pattern) for x in a)
        return _compare(a, op, b, pattern)

    return test


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b) if type(a) is type(b) or (is_number(a) and is_number(b)) else False


def _compare(a: Any, op: str, b: Any, pattern: re.Pattern[str] | None) -> bool:
    if a is MISSING or b is MISSING:
        return op == "!="
    if op == "=":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op == "~":
        return isinstance(a, str) and pattern is not None and pattern.search(a) is not None
    if not ((is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        return False
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _in(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING or not isinstance(b, list):
        return False
    if isinstance(a, list):  # tags in a list: one of them
        return any(_equal(x, y) for x in a for y in b)
    return any(_equal(a, y) for y in b)


def grep_error(pattern: str | None, exc: re.error) -> str:
    """A filter's text that is no regular expression, worded once for every reader of a ``grep``
    (``logs``, ``samples``, the dashboard's boxes, the agents' tools): ``grep: '([' is not a regular
    expression (missing ), ...)``."""
    return f"grep: {pattern!r} is not a regular expression ({exc})"


# -- sorting ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sort:
    field: Field
    descending: bool = False


def sort(text: str) -> Sort:
    """``KEY[:last|min|max|best][:desc]`` (``:asc`` is the default): a field, as in expressions."""
    key, descending = text, False
    head, sep, tail = text.rpartition(":")
    if sep and tail in ("asc", "desc"):
        key, descending = head, tail == "desc"
    if not key:
        raise WhereError("--sort: give a field (config.lr, name, eval/loss:min, ...)")
    return Sort(field(key), descending)


def ordered(items: Sequence[Any], by: Sort, lookup: Callable[[Any], Lookup]) -> list[Any]:
    """``items`` ordered by one field; a missing value (or one of another type than the first) comes
    last either way (``values.missing_last``)."""

    def value(item: Any) -> Any:
        v = lookup(item)(by.field)
        return None if v is MISSING else v

    return missing_last(items, value, by.descending)


# -- what a run has -------------------------------------------------------------------------------
def lookup_from(
    flat_config: Callable[[], Mapping[str, Any]],
    run_field: Callable[[str], Any],
    tags: Callable[[], Sequence[str]],
    summary: Callable[[str], Mapping[str, Any] | None],
) -> Lookup:
    """A ``Lookup`` from what a reader holds of a run, each part asked only when a field names it
    (a run's config is in its data; its state and summary in its processes' small files): its flat
    config, a field of its own (``RUN_FIELDS``), its tags, and a key's summary (``aggregates.summary``)."""

    def get(f: Field) -> Any:
        if f.kind == "config":
            flat = flat_config()
            key = config_key(flat, f.key)
            return MISSING if key is None else flat[key]
        if f.kind == "tags":
            return list(tags())
        if f.kind in RUN_FIELDS:
            v = run_field(f.kind)
            return MISSING if v is None else v
        names = (f.key,) if f.exact else spellings(f.key)
        s = next((s for k in names if (s := summary(k)) is not None), None)
        v = None if s is None else s.get(f.agg)
        return MISSING if v is None else v

    return get


def require(
    fields: Iterable[Field],
    items: Sequence[Any],
    lookup: Callable[[Any], Lookup],
    known: Callable[[], Known],
) -> None:
    """Raise ``UnknownName`` for the first metric or config field that none of ``items`` (the runs a
    question is asked of) has: a typo, or a name no adapter records, is an error naming the closest
    names (``known()``: what the items do have), never an empty or unsorted answer. Cheap when every
    field is found: each is looked up until one item has it."""
    if not items:
        return
    for f in dict.fromkeys(f for f in fields if f.kind in ("metric", "config")):
        if any(lookup(item)(f) is not MISSING for item in items):
            if f.kind == "metric" and f.key in ALIASES:
                _not_both(f, items, lookup)
            continue
        names = known()
        if f.kind == "config":
            raise unknown("config key", str(f), [f"config.{k}" for k in names.config], names.metrics)
        shown = f.key if f.agg == "last" else str(f)
        raise unknown("metric", shown, names.metrics, [f"config.{k}" for k in names.config], names.tags)


def _not_both(f: Field, items: Sequence[Any], lookup: Callable[[Any], Lookup]) -> None:
    """An ``AmbiguousName`` for a bare name no run logged as a metric under that name, that reads
    another spelling of it (``lr``: a Trainer's ``learning_rate``) and also a config key (``lr``:
    its ``args.learning_rate``): ``lr < 1e-4`` would otherwise pick the metric in silence."""
    if any(lookup(item)(replace(f, exact=True)) is not MISSING for item in items):
        return
    if any(lookup(item)(Field("config", f.key)) is not MISSING for item in items):
        others = [k for k in spellings(f.key) if k != f.key]
        raise AmbiguousName(
            f"{f.key!r} is no metric's own name: write config.{f.key} for the config, or the metric's "
            f"name ({' or '.join(others)})"
        )


@dataclass
class Known:
    """The names some of a question's runs hold: their metric keys, flat config keys and tags."""

    metrics: list[str]
    config: list[str]
    tags: list[str]


def known_of(runs: Sequence[Run]) -> Known:
    """What ``runs`` hold, for an ``UnknownName``'s suggestions (their stored aggregates and configs:
    small files, read once a name is already known to be missing)."""
    metrics: dict[str, None] = {}
    config: dict[str, None] = {}
    tags: dict[str, None] = {}
    for run in runs:
        metrics.update(dict.fromkeys(run.aggregates()))
        config.update(dict.fromkeys(run.flat_config))
        tags.update(dict.fromkeys(run.tags))
    config = {**dict.fromkeys(short_names(r.flat_config for r in runs[:CONFIGS_SUGGESTED])), **config}
    return Known(list(metrics), list(config), list(tags))


def run_lookup(run: Run, best: Mapping[str, bool] | None = None) -> Lookup:
    """A ``Lookup`` over a ``Run``: what a field names is read when first asked, its summary once."""
    lower = spelled(best)
    cached: dict[str, Any] = {}

    def summary(key: str) -> Mapping[str, Any] | None:
        if "aggs" not in cached:
            cached["aggs"] = run.aggregates()
        agg = cached["aggs"].get(key)
        return None if agg is None else aggregates.summary(agg, lower.get(key, minimized(key)))

    def flat() -> Mapping[str, Any]:
        if "flat" not in cached:
            cached["flat"] = run.flat_config
        return cached["flat"]

    return lookup_from(flat, lambda name: getattr(run, name), lambda: run.tags, summary)


def select(
    runs: Sequence[Run],
    where: str | None = None,
    by: str | None = None,
    best: Mapping[str, bool] | None = None,
) -> list[Run]:
    """The runs ``where`` matches (all without one), ordered by ``by`` (``--sort``); else as given."""
    test = parse(where) if where else None
    order = sort(by) if by else None
    with no_cyclic_gc():
        lookups = {id(r): run_lookup(r, best) for r in runs} if (test or order) else {}
        named = [*(test.fields if test else []), *([order.field] if order else [])]
        require(named, runs, lambda r: lookups[id(r)], lambda: known_of(runs))
        out = [r for r in runs if test is None or test(lookups[id(r)])]
        return ordered(out, order, lambda r: lookups[id(r)]) if order is not None else list(out)
