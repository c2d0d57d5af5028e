"""The runs table, one run, and its metrics as charts draw them (downsampled, or live since a cursor)."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response
from pydantic import TypeAdapter

from ... import aggregates
from ...errors import TunetrackError, one_line
from ...gc_pause import no_cyclic_gc
from ...metric_keys import LOSS_LIKE, loss_columns, minimized
from ...reader import Catalog, Run, Series, numeric_values, present, run_json, run_text, thin
from ...reader.as_text import config_text
from ...reader.families import families, folded
from ...reader.visible import Visible
from ...reader.where import grep_error
from .deps import CatalogDep, open_or_404

router = APIRouter()

XAxis = Annotated[str, Query(pattern="^(step|time)$")]
#: the runs table to JSON as FastAPI writes a response (NaN and ±Inf as null), without validating it
ROWS = TypeAdapter(list[dict[str, Any]])
TABLE = TypeAdapter(dict[str, Any])
#: what the runs page shows of a run besides its metrics (``format=table``); ``failure``: the known
#: failure a run that did not finish ended in (``CUDA out of memory on rank 0``), beside its state
TABLE_FIELDS = ("id", "name", "project", "state", "failure", "tags", "hosts", "created", "ended", "last_step")
#: what a listed run's summary of each key holds (a fifth of the listing's bytes are not repeated:
#: its last value is the row's ``last``; the step of it and the count are on the run's own page)
LISTED_SUMMARY = ("min", "max", "best", "best_step")
#: the runs page's first screen: the newest runs, asked for before the whole table (runs.js NEWEST)
NEWEST = 100
#: seconds a first screen made for one version of the table is served again
FIRST_FOR = 5.0
#: a cursor is ``rewinds << CURSOR_BITS | points``: opaque to clients, who send back what they got
CURSOR_BITS = 32


class Listings:
    """The runs table as JSON, by query, with the table's version it shows: a poll finds it unchanged
    (a 304, or these bytes for another browser) without building and serializing 10,000 rows. One per
    app (``app.state.listings``)."""

    #: queries (column choices) kept
    KEPT = 8

    def __init__(self) -> None:
        self._bodies: OrderedDict[str, tuple[Hashable, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self.first = threading.Lock()  # one first screen made at a time (``first_screen``)
        self.boot = secrets.token_hex(
            4
        )  # in the ETag: another server's (or a restarted one's) versions differ

    def get(self, query: str, version: Hashable) -> bytes | None:
        """The body kept for ``query`` if it shows ``version``."""
        with self._lock:
            shown, body = self._bodies.get(query, (None, b""))
        return body if shown == version else None

    def keep(self, query: str, version: Hashable, body: bytes) -> None:
        with self._lock:
            self._bodies[query] = (version, body)
            self._bodies.move_to_end(query)
            while len(self._bodies) > self.KEPT:
                self._bodies.popitem(last=False)


@router.get(
    "/api/runs",
    summary="Runs, newest first, with the last value of each metric key asked for",
    description="With an ETag: a request whose If-None-Match holds it is answered 304 while no run changed.",
    response_model=list[dict[str, Any]],
)
def runs(
    request: Request,
    catalog: CatalogDep,
    project: str | None = None,
    state: str | None = None,
    key: Annotated[
        list[str] | None,
        Query(
            description="default: the loss-like keys; a column's spec KEY:AGG (eval/loss:min) names its KEY"
        ),
    ] = None,
    best: Annotated[
        list[str] | None,
        Query(description="KEY:min or KEY:max: what a key's best is, where not the usual (as --best)"),
    ] = None,
    format: Annotated[
        str, Query(pattern="^(rows|table)$", description="rows: a list of runs; table: the runs page's")
    ] = "rows",
    newest: Annotated[
        int | None,
        Query(ge=1, le=1000, description="only the newest N: a first screen that opens only those runs"),
    ] = None,
) -> Response:
    listings: Listings = request.app.state.listings
    shown_keys = LOSS_LIKE if key is None else list(dict.fromkeys(metric_key(k) for k in key))
    ways = best_ways(best)
    if newest is not None:  # a first screen: answered from the table as it stands, not waiting for it
        body = first_screen(listings, catalog, request.url.query, newest, project, state, shown_keys, ways)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})
    version = catalog.refresh()
    headers = {
        "ETag": f'"{listings.boot}-{version}"',
        "Cache-Control": "no-cache",
        "Vary": "Cookie, Authorization",
    }
    if request.headers.get("if-none-match") == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    # a team member's rows are kept under what they may read: one body serves everyone who sees the same
    scope = catalog.scope() if isinstance(catalog, Visible) else ""
    query = f"{scope}?{request.url.query}"
    body = listing(listings, catalog, version, query, project, state, shown_keys, ways, format == "table")
    return Response(body, media_type="application/json", headers=headers)


def listing(
    listings: Listings,
    catalog: Catalog,
    version: int,
    query: str,
    project: str | None,
    state: str | None,
    keys: Sequence[str],
    best: Mapping[str, bool] | None = None,
    table: bool = False,
) -> bytes:
    """The body of ``GET /api/runs?{query}`` for the table's ``version``: kept, or built and kept."""
    body = listings.get(query, version)
    if body is None:
        rows = catalog.rows(project=project, state=state, keys=keys, refresh=False, best=best)
        body = dumped(rows, keys, table)
        listings.keep(query, version, body)
    return body


def first_screen(
    listings: Listings,
    catalog: Catalog,
    query: str,
    limit: int,
    project: str | None,
    state: str | None,
    keys: Sequence[str],
    best: Mapping[str, bool] | None = None,
) -> bytes:
    """The body of ``GET /api/runs?newest=...`` (``Catalog.newest``), made once per version of the
    table and ``FIRST_FOR`` seconds: the warm-up's (``warm``) serves a browser that asks meanwhile,
    which waits for it rather than open the same runs beside it, and a page opened on a dashboard
    nobody polled for a while does not get an old one."""
    scope = catalog.scope() if isinstance(catalog, Visible) else ""
    with listings.first:
        version = (catalog.version, int(time.monotonic() // FIRST_FOR))
        body = listings.get(f"first:{scope}?{query}", version)
        if body is None:
            rows = catalog.newest(limit, project, state, keys, best=best)
            body = dumped(rows, keys, table="format=table" in query)
            listings.keep(f"first:{scope}?{query}", version, body)
    return body


def dumped(rows: list[dict[str, Any]], keys: Sequence[str], table: bool) -> bytes:
    """Rows (``Catalog.rows``) as the listing's JSON: the runs page's ``table``, else the rows."""
    with no_cyclic_gc():  # 100,000 rows' lists and dicts: no cycle among them
        for row in rows:  # what the page reads of a summary: its last value is the row's `last`
            row["summary"] = {k: {f: s[f] for f in LISTED_SUMMARY} for k, s in row["summary"].items()}
        return TABLE.dump_json(as_table(rows, keys)) if table else ROWS.dump_json(rows)


def as_table(rows: list[dict[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """The runs page's listing (``format=table``): the same rows as arrays, ``TABLE_FIELDS`` then one
    cell per key that some run has, ``[last, min, max, best, best_step]`` (``[last]`` for a run that
    ended without stored aggregates), or null. Half the bytes of the rows, and arrays, which a
    browser parses in a fraction of the time of as many objects: at 10,000 runs, the parse was the
    largest part of the page's first screen."""
    shown = [k for k in keys if any(k in row["last"] or k in row["summary"] for row in rows)]

    def cell(row: dict[str, Any], key: str) -> list[Any] | None:
        s, last = row["summary"].get(key), row["last"].get(key)
        if s is None:
            return None if last is None else [last]
        return [last, *(s[f] for f in LISTED_SUMMARY)]

    return {
        "fields": TABLE_FIELDS,
        "keys": shown,
        "rows": [[*(row.get(f) for f in TABLE_FIELDS), *(cell(row, k) for k in shown)] for row in rows],
    }


def warm(catalog: Catalog, listings: Listings) -> None:
    """What a browser's first look at the dashboard asks for, made before it asks: the runs table
    brought up to date (at 10,000 runs, reading the rows the last dashboard kept and a look at every
    run folder), the body of the page's default listing (``GET /api/runs?format=table``, the
    loss-like keys) and the metric keys. ``tunetrack ui`` runs it on a thread as it starts; a request
    that comes first waits for the same refresh instead of doing its own. A store that cannot be read
    is said by the requests, not here."""
    try:
        first_screen(listings, catalog, f"format=table&newest={NEWEST}", NEWEST, None, None, LOSS_LIKE)
        version = catalog.refresh()
        listing(listings, catalog, version, "?format=table", None, None, LOSS_LIKE, table=True)
        catalog.keys()
    except Exception:  # noqa: BLE001 - the page's requests meet the same error and show it
        return


def best_ways(specs: list[str] | None) -> dict[str, bool]:
    """``best=KEY:min|max`` (repeated) as ``{key: lower}``; a bad one is a 422 of one line."""
    try:
        return aggregates.directions(specs or [])
    except ValueError as exc:
        raise HTTPException(422, one_line(exc)) from None


def metric_key(spec: str) -> str:
    """The metric key of a column's spec, ``KEY[:AGG]`` (the page's columns: ``eval/loss:min``); a
    key whose last ``:`` part is no aggregate is a key (``aggregates.parse_spec``)."""
    try:
        key = aggregates.parse_spec(spec)[0]
    except ValueError:
        return spec
    return key or spec


@router.get("/api/keys", summary="The metric keys the runs have last values of, and the loss-like ones")
def keys(catalog: CatalogDep) -> dict[str, list[str]]:
    """``keys``; ``default``: the runs table's columns (the loss-like keys); ``lower``: those whose
    best is their min unless the page says otherwise (``metric_keys.minimized``)."""
    every = catalog.keys()
    return {"keys": every, "default": loss_columns(every), "lower": [k for k in every if minimized(k)]}


@router.get("/api/runs/{run_id}", summary="One run: metadata, provenance, summary, config, keys, events")
def run(
    run_id: str,
    catalog: CatalogDep,
    fold: Annotated[
        bool,
        Query(
            description="the run page's: families of keys as their glob, count and summary, not each key "
            "(a run of 10,240 keys: a few kB, not 2.8 MB)"
        ),
    ] = False,
) -> dict[str, Any]:
    """The run as ``run_json`` gives it, with its metric and system keys, its nodes, and what the page
    prints: ``overview`` (``run_text``: facts, summary and events worded as ``tunetrack show`` words
    them), ``flat_config`` (each value's text), ``samples`` (its tables of samples: keys, rows and
    steps) and ``families`` (``{glob: keys}``: keys that differ only in their numbers, drawn as one
    card, ``reader.families``), ``histogram_keys`` (the keys logged as ``tunetrack.Histogram``: a card
    each, ``routes.distributions``). With ``fold``: ``keys`` and ``summary`` only of the keys in no
    family, and ``families`` as ``reader.families.folded`` gives them (``{glob: {keys, first, last,
    at, summary}}``); a family's keys are then asked for by its card (``/across``) and the search
    (``/families``)."""
    r = open_or_404(catalog, run_id)
    index = r.sample_index()
    hidden = catalog.hides if isinstance(catalog, Visible) else None  # a team member's: forks of others
    summary, keys, record = r.summary(), r.keys(), run_json(r, detail=True, hidden=hidden)
    if fold:
        keys, groups = folded(keys, summary)
        summary = {k: summary[k] for k in keys if k in summary}
        record["meta"] = lean(record["meta"])
    return {
        **record,
        "samples": {
            "keys": list(index),
            "rows": sum(n for steps in index.values() for n in steps.values()),
            "steps": len({step for steps in index.values() for step in steps}),
        },
        "summary": summary,
        "overview": run_text(r, hidden),
        "flat_config": {k: config_text(v) for k, v in r.flat_config.items()},
        "keys": keys,
        "families": groups if fold else families(keys),
        "histogram_keys": r.histogram_keys(),
        "system_keys": r.system_keys(),
        "nodes": r.nodes,
    }


#: what a process's end record holds per key, or again (the run's ``config``): not in a folded run's
#: ``meta`` (at 10,240 keys, 1.2 MB of its 1.2 MB)
PER_KEY_END = ("last", "aggregates", "config")


def lean(meta: dict[str, Any]) -> dict[str, Any]:
    """``Run.meta`` without what ``PER_KEY_END`` names in each process's end record."""
    processes = [
        {
            **p,
            "end": {k: v for k, v in p["end"].items() if k not in PER_KEY_END}
            if p.get("end")
            else p.get("end"),
        }
        for p in meta["processes"]
    ]
    return {**meta, "processes": processes}


@router.get("/api/runs/{run_id}/logs", summary="What the run's processes printed, in time order")
def logs(
    run_id: str,
    catalog: CatalogDep,
    tail: Annotated[int | None, Query(ge=0, le=100_000)] = 1000,
    grep: str | None = None,
    rank: Annotated[int | None, Query(ge=0)] = None,
    since: float | None = None,
) -> dict[str, Any]:
    """``lines`` (time, stream, text, host, rank) as ``tunetrack logs`` selects them: the last ``tail``
    of those of one ``rank``, printed at or after ``since`` (unix time), matching the regular expression
    ``grep``; ``ranks``, every rank that printed; ``failure``, the known failure the last lines show."""
    import re

    r = open_or_404(catalog, run_id)
    try:
        lines = r.console(rank, since, grep or None, tail)
    except re.error as exc:
        raise HTTPException(400, grep_error(grep, exc)) from None
    return {"lines": [line.as_json() for line in lines], "ranks": r.ranks, "failure": r.failure}


@router.get("/api/runs/{run_id}/series", summary="One metric, downsampled (M4) or new points since a cursor")
def series(
    run_id: str,
    key: str,
    catalog: CatalogDep,
    x: XAxis = "step",
    width: int = 1500,
    start: float | None = None,
    end: float | None = None,
    cursor: int | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    r = open_or_404(catalog, run_id)
    found = _find(r, key, node or None)
    if found is None:
        raise HTTPException(404, f"no system metric {key!r} on {node!r}")
    return {"key": key, **_points(found, x, width, start, end, cursor, r.rewinds)}


@router.get(
    "/api/series",
    summary="Many series in one request (every chart of a page): downsampled, or new points since each cursor",
    description="The lists ``key``, ``node`` and ``cursor`` are aligned (one entry per series; an empty "
    "``node`` is a training metric), and ``run`` has one id per series or one for all. Without ``key``: "
    "every training and system metric of the run(s). A run or node that cannot be read gives an entry "
    "with ``error`` instead of failing the whole request.",
)
def many(
    catalog: CatalogDep,
    run: Annotated[list[str], Query()],
    key: Annotated[list[str] | None, Query()] = None,
    node: Annotated[list[str] | None, Query()] = None,
    cursor: Annotated[list[int] | None, Query()] = None,
    x: XAxis = "step",
    width: int = 1500,
    start: float | None = None,
    end: float | None = None,
) -> dict[str, list[dict[str, Any]]]:
    if key is None:
        if node or cursor:
            raise HTTPException(422, "node and cursor need the keys they belong to")
        specs = [(run_id, k, n) for run_id in run for k, n in _all_keys(catalog, run_id)]
    else:
        if len(run) not in (1, len(key)) or len(node or key) != len(key) or len(cursor or key) != len(key):
            raise HTTPException(422, "run, node and cursor must have one entry per key (or run just one)")
        specs = list(zip(run * len(key) if len(run) == 1 else run, key, node or [""] * len(key)))
    out = []
    for i, (run_id, k, n) in enumerate(specs):
        entry: dict[str, Any] = {"run": run_id, "key": k, "node": n or None}
        try:
            r = catalog.open(run_id)
            found = _find(r, k, n or None)
        except TunetrackError as exc:
            found, entry["error"] = None, one_line(exc)
        if found is not None:
            entry |= _points(found, x, width, start, end, cursor[i] if cursor else None, r.rewinds)
        elif "error" not in entry:
            entry["error"] = f"no system metric {k!r} on {n!r}"
        out.append(entry)
    return {"series": out}


def _all_keys(catalog: Catalog, run_id: str) -> list[tuple[str, str]]:
    """(key, node) of every series of a run: its training metrics (node ""), then each node's system metrics."""
    try:
        r = catalog.open(run_id)
    except TunetrackError:
        return [("", "")]  # one entry, which then reports the run as missing
    return [(k, "") for k in r.keys()] + [(k, n) for n in r.nodes for k in r.system_keys()]


def _find(run: Run, key: str, node: str | None) -> Series | None:
    """A training metric (empty if never logged), or a system metric of one node (None if that node has none)."""
    return run.series(key, strict=False) if node is None else run.system_series(key).get(node)


def _points(
    s: Series, x: str, width: int, start: float | None, end: float | None, cursor: int | None, rewinds: int
) -> dict[str, Any]:
    """What a chart draws: at most four points per pixel bucket (M4), or, with ``cursor`` (as the
    last answer returned it), only the points after it. The cursor also holds how many rewinds the run
    had: after a rewind the client's points are stale (hidden points may have been logged again, even
    as many as were hidden), so the answer is ``reset`` and the client starts over. A step where the
    key was logged as None is no point (``present``): a metric measured now and then draws its points
    joined. (NaN and ±Inf leave as null, a gap in the line: FastAPI serializes through pydantic, which
    writes them so.)"""
    rows, points = len(s), present(s)  # the cursor counts rows, None or not: the client has a prefix
    total = len(points)
    new_cursor = rewinds << CURSOR_BITS | rows
    if cursor is not None:
        seen, had = cursor >> CURSOR_BITS, cursor & ((1 << CURSOR_BITS) - 1)
        if cursor and (seen != rewinds or had > rows):  # 0: from the start, whatever happened
            return {"reset": True, "cursor": 0, "total": total, "x": [], "y": []}
        new = present(Series(s.steps[had:], s.values[had:], s.times[had:]))
        return {
            "reset": False,
            "cursor": new_cursor,
            "total": total,
            "x": (new.steps if x == "step" else new.times).tolist(),
            "y": numeric_values(new).tolist(),
        }
    xs, values = thin(
        points.steps if x == "step" else points.times, numeric_values(points), width, start, end
    )
    return {
        "total": total,
        "cursor": new_cursor,
        "downsampled": len(xs) < total,
        "x": xs.tolist(),
        "y": values.tolist(),
    }
