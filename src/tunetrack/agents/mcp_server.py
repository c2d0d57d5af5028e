"""The store for AI agents: an MCP server (Model Context Protocol, the official ``mcp`` SDK) over stdio.

An agent's context is small, so every answer is compact JSON: series thinned to a few dozen points
(``reader.chart_points``: M4, spikes kept), long texts cut with a note of how to ask for all of it, SQL
results cut to a row limit. Each tool is a thin wrapper of the read API (``reader``), its wording
(``reader.as_text``), the config diff (``reader.differing``) and read-only SQL (``tunetrack.sql``); a
long-lived ``reader.Catalog`` keeps parsed runs between calls. ``tag_run``, ``note_run`` and
``stop_run`` (``tunetrack.manage``) exist only when the server was started with ``allow_edits``.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from typing import Any

from .. import aggregates, metric_keys
from ..edits import author
from ..errors import NotVisible, TunetrackError, one_line
from ..reader import Catalog, chart_points, differing, list_runs, present, sweeps
from ..reader.across import matching
from ..reader.as_text import last_lines, overview, samples_listed, short
from ..reader.families import SUMMARY_SHOWN, family_summary, fold
from ..reader.groups import is_pattern
from ..reader.names import unknown
from ..reader.samples import cell_text, select, step_of, steps_of, visible
from ..reader.where import MISSING, grep_error, ordered
from ..reader.where import sort as parse_sort
from ..sql.schema import json_safe

#: what the server tells an agent about itself
INSTRUCTIONS = (
    "tunetrack's store of fine-tuning runs. Start with list_projects or list_runs; get_run for one "
    "run (why it died, its last console lines, what samples it holds); get_metrics for (thinned) "
    "curves; get_logs for what it printed; get_samples for what the model wrote (GRPO completions and "
    "their rewards); compare_runs for config differences and final metrics; get_checkpoints for a "
    "run's checkpoints and the best by a metric; list_artifacts and get_lineage for the data sets, "
    "models and checkpoints runs used and made; query for read-only SQL "
    "(DuckDB) over the tables runs, params, params_wide, metrics, system, events, samples, console, "
    "summary ('DESCRIBE <table>' lists a table's columns). Names resolve as the CLI's do: lr, "
    "lora.r, eval/loss find what each framework records, and a name no run has is an error naming "
    "the closest."
)
#: console lines ``get_logs`` returns by default, and ``get_run`` of a run that died
LOG_LINES = 50
#: rows ``get_samples`` returns by default
SAMPLE_ROWS = 20
#: ``get_samples`` lists a table's steps when it has at most this many (else the first, last and count)
STEPS_LISTED = 50
INSTALL = "tunetrack mcp needs the MCP SDK: pip install 'tunetrack[mcp]'"
#: a text longer than this is cut (``full=True`` gives it whole)
TEXT_WIDTH = 200
#: what ``list_artifacts`` says of each artifact's latest version
ARTIFACT_FIELDS = ("spec", "kind", "aliases", "bytes", "reference", "run", "used_by", "digest")

Dir = str | os.PathLike[str] | None


def dumps(value: Any) -> str:
    """Compact JSON (no spaces: an agent pays for every character)."""
    return json.dumps(json_safe(value), separators=(",", ":"), default=str)


def _cut(text: str, full: bool) -> str:
    """A text as an answer holds it: its control characters written out (``\\x1b``, as ``tunetrack
    samples`` shows them: an agent that prints the answer sends nothing to a terminal), on one line and
    cut to ``TEXT_WIDTH`` unless ``full``."""
    text = visible(text)
    return text if full else short(text, TEXT_WIDTH)


def _cell(value: Any, full: bool) -> Any:
    """A cell of a table of samples: a number as it is, anything else as text (a conversation as
    ``role: content`` lines), ``_cut``."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _cut(cell_text(value), full)


def _written_out(value: Any) -> Any:
    """``value`` (a SQL cell: text, a list, a struct) with the control characters of its texts written
    out."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, list):
        return [_written_out(v) for v in value]
    if isinstance(value, dict):
        return {k: _written_out(v) for k, v in value.items()}
    return value


def _regex(grep: str | None) -> None:
    """A ``ValueError`` of one line when ``grep`` is no regular expression."""
    if grep:
        try:
            re.compile(grep)
        except re.error as exc:
            raise ValueError(grep_error(grep, exc)) from None


class Tools:
    """The tools, as plain methods returning JSON text (tested without a server, served by ``serve``)."""

    def __init__(
        self,
        dir: Dir = None,
        allow_edits: bool = False,
        catalog: Catalog | None = None,
        configs: sweeps.Configs | None = None,
    ) -> None:
        """``catalog`` and ``configs``: a long-lived server's own (a team's dashboard hands each call
        its person's view of the dashboard's, ``mcp_http``); by default new ones over ``dir``."""
        self.dir = dir
        self.allow_edits = allow_edits
        self.catalog = catalog if catalog is not None else Catalog(dir)
        self.configs = configs if configs is not None else sweeps.Configs()  # each run's config, read once

    def list_projects(self) -> str:
        """The projects in the store: how many runs each has, by state, and when the latest started."""
        projects: dict[str, dict[str, Any]] = {}
        for row in self.catalog.rows():
            p = projects.setdefault(
                row["project"] or "", {"project": row["project"], "runs": 0, "states": {}}
            )
            p["runs"] += 1
            p["states"][row["state"]] = p["states"].get(row["state"], 0) + 1
            p.setdefault("latest", row["created"])
        return dumps(list(projects.values()))

    def list_runs(
        self,
        project: str | None = None,
        state: str | None = None,
        tag: str | None = None,
        where: str | None = None,
        sort: str = "created",
        limit: int = 20,
        best: list[str] | None = None,
    ) -> str:
        """Runs, newest first, filtered by project, state, tag and ``where`` (``tunetrack ls --where``'s
        language: ``config.lora.r >= 16 and eval/loss:min < 0.7``); ``sort``: ``created``, ``name``, or
        a field as ``ls --sort`` takes it (``eval_loss:min``, ``reward:best:desc``, ``config.lr``), runs
        without it last; at most ``limit``. ``best``: ``KEY:min|max`` where a key's best is not the
        default (the min for losses, else the max), as ``ls --best``. A name no run has is an error
        naming the closest."""
        order = None if sort in ("created", "name") else parse_sort(sort)
        fields = [str(order.field)] if order is not None and order.field.kind in ("metric", "config") else []
        chosen = sweeps.select(
            self.catalog, self.configs, where, (), fields, project, state, aggregates.directions(best)
        )
        rows = [r for r in chosen.rows if tag is None or tag in r["tags"]]
        if sort == "name":
            rows.sort(key=lambda r: r["name"])
        elif order is not None:
            rows = ordered(rows, order, chosen.lookup)
        out = []
        for r in rows[: max(limit, 0)]:
            entry = {k: r.get(k) for k in ("id", "name", "project", "state", "failure", "tags", "created")}
            entry.update(last_step=r["last_step"], loss=r["loss"])
            if order is not None:
                value = chosen.lookup(r)(order.field)
                entry[str(order.field)] = None if value is MISSING else value
            out.append(entry)
        return dumps({"runs": out, "total": len(rows), "shown": len(out)})

    def get_run(self, run: str, full: bool = False) -> str:
        """One run: its overview (as ``tunetrack show`` words it), why it died (``failure``, the known
        failure it ended in, and ``error``, the exception's own line), the last console lines of a run
        that failed, was killed or crashed (those before its traceback), the tables of samples it holds,
        config, summary per metric (past 40 keys, a family of keys that differ only in their numbers
        is one entry: ``moe/layer*/expert*/load`` with its key count, the median of their last values,
        the least min and the most max), and its latest events. Long texts are cut unless ``full``."""
        r = self.catalog.open(run)
        events = r.events()
        shown = events if full else events[-10:]
        return dumps(
            {
                "overview": {label: _cut(text, full) for label, text in overview(r, self._hidden())},
                "failure": r.failure,
                "error": r.cause,
                "traceback": visible(r.error) if full and r.error else None,
                "last_lines": [_cut(line, full) for line in last_lines(r)] or None,
                "samples": {
                    key: {"steps": len(steps), "rows": sum(steps.values())}
                    for key, steps in r.sample_index().items()
                }
                or samples_listed(r),
                "config": {
                    k: _cut(str(v), full) if isinstance(v, str) else v for k, v in r.flat_config.items()
                },
                "summary": _summary(r.summary(), full),
                "events": [
                    {k: _cut(str(v), full) if isinstance(v, str) else v for k, v in e.items()} for e in shown
                ],
                "events_total": len(events),
                "more": None
                if full
                else "call get_run with full=true for every event, the traceback and uncut texts",
            }
        )

    def get_metrics(self, runs: list[str], keys: list[str] | None = None, points: int = 60) -> str:
        """Metric series of one or more runs, each thinned to about ``points`` points (the first,
        last, lowest and highest of each stretch are kept, so a spike is never lost). Without
        ``keys``: the losses (or the first few keys) and every key's name (past 40 keys, the keys that
        differ only in their numbers as one glob, ``moe/layer*/expert*/load``). A key may be spelled
        as another framework spells it (``eval/loss`` finds ``eval_loss``), or be a glob: the band of
        its keys' values at each step (p5, p50, p95 and max across the keys). A key or glob that none
        of the runs has is an error naming the closest."""
        out = []
        width = max(int(points) // 4, 1)
        opened = [self.catalog.open(ref) for ref in runs]
        _require(keys or [], opened)
        for r in opened:
            available = r.keys()
            wanted = keys or metric_keys.loss_columns(available) or available[:3]
            series: dict[str, Any] = {}
            for key in wanted:
                if is_pattern(key):
                    series[key] = _band(r, key, max(int(points), 4))
                    continue
                s = present(r.series(key, strict=False))
                if not len(s) or s.values.dtype.kind not in "fiub":
                    series[key] = {"count": len(s)}
                    continue
                steps, values = chart_points(s.steps, s.values, width)
                series[key] = {"count": len(s), "steps": steps, "values": values}
            names = [name for name, _ in fold(dict.fromkeys(available))]
            out.append(
                {"run": r.id, "name": r.name, "keys": names, "key_count": len(available), "series": series}
            )
        return dumps(out)

    def get_logs(
        self,
        run: str,
        rank: int | None = None,
        tail: int = LOG_LINES,
        grep: str | None = None,
        full: bool = False,
    ) -> str:
        """What a run's processes printed (``tunetrack logs``): its last ``tail`` lines (of one global
        ``rank``, matching the regular expression ``grep``), in time order, each with its time,
        stream (stdout, stderr) and text (the rank too when several processes printed); long lines cut
        unless ``full``; control characters written out. The lines a process printed up to its death,
        also after a kill. No lines: a ``note`` says whether ``grep`` matched none or nothing was
        recorded."""
        r = self.catalog.open(run)
        if rank is not None and rank not in r.ranks:
            raise ValueError(f"run {r.id} has no rank {rank} (ranks: {', '.join(map(str, r.ranks))})")
        _regex(grep)
        tail = max(int(tail), 0)
        lines = r.console(rank, None, grep, tail)
        several = len(r.ranks) > 1
        note = None
        if not lines and tail:
            printed = len(r.console(rank)) if grep else 0
            note = (
                f"no line of {printed:,} matches grep {grep!r}"
                if printed
                else "no console lines recorded (the run printed nothing, or ran with its console off: "
                "TUNETRACK_CONSOLE=0)"
            )
        return dumps(
            {
                "run": r.id,
                "state": r.state,
                "failure": r.failure,
                "lines": [
                    {
                        "time": x.time,
                        "stream": x.stream,
                        **({"rank": x.rank} if several else {}),
                        "text": _cut(x.text, full),
                    }
                    for x in lines
                ],
                **({"note": note} if note else {}),
            }
        )

    def get_samples(
        self,
        run: str,
        key: str | None = None,
        step: int | str = "last",
        prompt: str | None = None,
        grep: str | None = None,
        sort: str | None = None,
        limit: int = SAMPLE_ROWS,
        full: bool = False,
    ) -> str:
        """What the model wrote: the rows of a run's table of samples (``tunetrack samples``: GRPO
        completions with their rewards, ``log_table``'s tables). ``key``: the table, needed only when
        the run has several; ``step``: an int, ``"last"`` (default) or ``"all"``; ``prompt``: only rows
        whose prompt contains this text; ``grep``: only rows with a text cell this regular expression
        matches; ``sort``: ``COLUMN[:desc]``, or a sum ``has_digit+short:desc`` (a GRPO table's
        ``reward`` is its total reward); at most ``limit`` rows; cells cut to one line of 200
        characters unless ``full``, control characters written out (``\\x1b``). Says how many rows
        matched and were shown, and the steps the table has."""
        r = self.catalog.open(run)
        index = r.sample_index()
        if not index:
            raise ValueError(f"run {r.id} has no samples: {samples_listed(r).removeprefix('none: ')}")
        if key is None and len(index) > 1:
            raise ValueError(f"run {r.id} has several tables of samples: give key ({', '.join(index)})")
        key = key if key is not None else next(iter(index))
        if key not in index:
            raise unknown("table of samples", key, list(index), holder="run")
        steps = steps_of(index, key)
        chosen_step = step_of(steps, step)
        _regex(grep)
        rows = select(r.samples(key, chosen_step), prompt=prompt, grep=grep, sort=sort)
        shown = rows[: max(int(limit), 0)]
        return dumps(
            {
                "run": r.id,
                "key": key,
                "step": chosen_step,
                "steps": {
                    "first": steps[0],
                    "last": steps[-1],
                    "count": len(steps),
                    **({"all": steps} if len(steps) <= STEPS_LISTED else {}),
                },
                "rows": [
                    {
                        "step": s["step"],
                        "index": s["index"],
                        **{c: _cell(v, full) for c, v in s["row"].items()},
                    }
                    for s in shown
                ],
                "matched": len(rows),
                "shown": len(shown),
            }
        )

    def compare_runs(
        self, runs: list[str], keys: list[str] | None = None, best: list[str] | None = None
    ) -> str:
        """Config differences between runs (only the keys whose values differ) and a metric table:
        each key's last, min, max and best (the min for losses, else the max; ``best``:
        ``KEY:min|max`` where that is wrong for a key, as ``tunetrack compare --best``) per run
        (``keys``, or the losses every run shares; a key may be spelled as another framework spells
        it, and one no run has is an error naming the closest)."""
        opened = [self.catalog.open(ref) for ref in runs]
        _require(keys or [], opened)
        ways = aggregates.directions(best)
        summaries = [r.summary(ways) for r in opened]
        if keys is None:
            common = set.intersection(*(set(s) for s in summaries)) if summaries else set()
            keys = metric_keys.loss_columns(common) or sorted(common)[:10]

        def stat(summary: dict[str, Any], key: str, f: str) -> Any:
            found = metric_keys.metric_key(summary.__contains__, key)
            return None if found is None else summary[found].get(f)

        return dumps(
            {
                "runs": [{"id": r.id, "name": r.name, "state": r.state} for r in opened],
                "config_diff": {key: values for key, values in differing([r.flat_config for r in opened])},
                "metrics": {
                    key: [{f: stat(s, key, f) for f in ("last", "min", "max", "best")} for s in summaries]
                    for key in keys
                },
            }
        )

    def get_checkpoints(
        self, run: str | None = None, project: str | None = None, best: str | None = None
    ) -> str:
        """The checkpoints a run saved (or every run of ``project``): step, kind, the metrics logged at
        that step (the evaluation before the save), size, whether rotation deleted it, and its path;
        ``best``: ``KEY[:min|max]`` names the best one (``tunetrack checkpoints --best``). No files."""
        from ..reader.checkpoints import best as best_of
        from ..reader.checkpoints import metric_names

        if (run is None) == (project is None):
            raise ValueError("name a run, or a project (not both)")
        runs = [self.catalog.open(run)] if run is not None else self._project_runs(project)
        found = [c for r in runs for c in r.checkpoints()]
        chosen = None
        if best is not None and found:
            key = best.partition(":")[0]
            chosen = best_of(found, key, aggregates.directions([best])[key] if ":" in best else None)
            if chosen is None:
                raise ValueError(
                    f"no checkpoint has {key!r}; their metrics: {', '.join(metric_names(found)) or 'none'}"
                )
        out = [
            {k: v for k, v in c.as_dict().items() if k != "files"}
            | {"files": len(c.files or []), "best": c is chosen}
            for c in found
        ]
        return dumps({"checkpoints": out, "best": None if chosen is None else f"{chosen.run}@{chosen.step}"})

    def _project_runs(self, project: str | None) -> list[Any]:
        """The runs of ``project`` whose checkpoints ``get_checkpoints`` lists."""
        return list_runs(dir=self.dir, project=project)

    def list_artifacts(self, kind: str | None = None) -> str:
        """The store's artifacts (data sets, base models, tokenizers the adapters recorded as inputs,
        and what runs logged): each one's latest version, kind, aliases, size, the run that made it and
        the runs that used it."""
        from ..reader.artifacts import latest_versions

        return dumps([{k: v.as_dict()[k] for k in ARTIFACT_FIELDS} for v in latest_versions(self.dir, kind)])

    def get_lineage(self, ref: str) -> str:
        """What a run, a checkpoint (``RUN@STEP``) or an artifact (``name``, ``name:v2``,
        ``name:best``) was made from and what was made from it, both ways: nodes (run, checkpoint,
        artifact) and edges (used, logged, saved, kept as, forked), as ``tunetrack lineage --json``."""
        from ..reader.lineage import lineage

        graph, root = lineage(ref, dir=self.dir)
        return dumps(graph.around(root))

    def query(self, sql: str, limit: int = 50) -> str:
        """Read-only SQL (DuckDB) over the tables runs, params, params_wide, metrics, system, events,
        samples, console, summary; at most ``limit`` rows come back (aggregate in SQL rather than raise
        it), texts with their control characters written out."""
        from ..sql import run_sql

        table = run_sql(sql, self.dir, tables=self._tables())
        rows = _written_out(table.slice(0, max(int(limit), 0)).to_pylist())
        return dumps(
            {"columns": table.column_names, "rows": rows, "row_count": table.num_rows, "shown": len(rows)}
        )

    def _tables(self) -> Any:
        """The tables ``query`` reads (None: every run's, ``sql.engine.Tables``)."""
        return None

    def tag_run(self, run: str, add: list[str] | None = None, remove: list[str] | None = None) -> str:
        """Add and remove tags of a run (an edit recorded beside the run; its data is never changed)."""
        from ..manage import tag_run

        r = tag_run(run, add or (), remove or (), dir=self.dir)
        return dumps({"id": r.id, "name": r.name, "tags": r.tags})

    def note_run(self, run: str, text: str) -> str:
        """Add a note to a run (what was learned from it, why it was stopped)."""
        from ..manage import note_run

        r = note_run(run, text, dir=self.dir)
        return dumps({"id": r.id, "name": r.name, "notes": len(r.notes)})

    def stop_run(self, run: str, reason: str = "") -> str:
        """Ask a live run to stop (``tunetrack stop``): its process finds the request within seconds,
        its adapter stops training cleanly (the Trainer saves and ends), and it ends ``stopped``.
        ``reason``: one line, shown with its state. A run that is not running is an error. Answers the
        run's state and the stop request (the first one counts: asking twice changes nothing)."""
        from ..manage import stop_run

        # who asked says it was an agent: a person reading the run's state knows whom to ask why
        r = stop_run(run, reason, dir=self.dir, by=f"{author()} (mcp)")
        return dumps({"id": r.id, "name": r.name, "state": r.state, "stop": r.stop_request})

    def _hidden(self) -> Callable[[str], bool] | None:
        """The runs (by id) a team member may not see, of which a fork says nothing (``reader.visible``)."""
        return getattr(self.catalog, "hides", None)

    def names(self) -> list[str]:
        """The tools served: the edits only when allowed."""
        read = [
            "list_projects",
            "list_runs",
            "get_run",
            "get_metrics",
            "get_logs",
            "get_samples",
            "compare_runs",
            "get_checkpoints",
            "list_artifacts",
            "get_lineage",
            "query",
        ]
        return read + (["tag_run", "note_run", "stop_run"] if self.allow_edits else [])


def _require(keys: list[str], runs: list[Any]) -> None:
    """An ``UnknownName`` for the first of ``keys`` none of ``runs`` logged under any spelling (a glob:
    that matches none of their keys, offering their families of keys first)."""
    for key in keys:
        if is_pattern(key):
            if not any(matching(r.keys(), key) for r in runs):
                known = [k for r in runs for k in r.keys()]
                raise unknown(
                    "metric pattern", key, [name for name, _ in fold(dict.fromkeys(known), 0)] + known
                )
        elif not any(metric_keys.metric_key(set(r.keys()).__contains__, key) for r in runs):
            raise unknown("metric", key, [k for r in runs for k in r.keys()])


def _summary(summary: dict[str, dict[str, Any]], full: bool) -> dict[str, dict[str, Any]]:
    """``get_run``'s summary: each key's last, min, max, step and count; past ``SUMMARY_SHOWN`` keys
    (unless ``full``) a family of keys as one entry, its key count and ``family_summary``."""
    out = {}
    for name, keys in fold(summary, len(summary) if full else SUMMARY_SHOWN):
        if keys == [name]:
            out[name] = {f: summary[name][f] for f in ("last", "min", "max", "step", "count")}
        else:
            out[name] = {"keys": len(keys), **family_summary([summary[k] for k in keys])}
    return out


def _band(run: Any, pattern: str, points: int) -> dict[str, Any]:
    """The band of the keys ``pattern`` names at each step (``reader.across.fit``: p5, p50, p95, max
    over the keys), at about ``points`` steps (the highest max and the lowest p5 kept)."""
    found = run.across_fitted(pattern, points, 1)
    return {
        "keys": len(found.keys),
        "steps": found.steps.tolist(),
        **{n: v.tolist() for n, v in found.band.items()},
    }


def _server_class() -> Callable[..., Any]:
    """The SDK's high-level server: ``MCPServer`` (mcp 2), ``FastMCP`` before it (mcp 1.2 on)."""
    try:
        from mcp.server.mcpserver import MCPServer

        cls: Callable[..., Any] = MCPServer
        return cls
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP

            cls = FastMCP
            return cls
        except ImportError:
            raise ImportError(INSTALL) from None


def _tool_error() -> type[Exception]:
    """The SDK's error whose message reaches the agent (any other exception is reported as a crash,
    without its message)."""
    try:
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        from mcp.server.fastmcp.exceptions import ToolError
    error: type[Exception] = ToolError
    return error


def _answering(fn: Callable[..., str], error: type[Exception]) -> Callable[..., str]:
    """``fn`` with what a user would be told in one line (no such run, a refused statement, a SQL
    error) told to the agent the same way."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> str:
        try:
            return fn(*args, **kwargs)
        except (TunetrackError, NotVisible, ValueError, ImportError, OSError) as exc:
            raise error(one_line(exc)) from None

    return tool


def server(dir: Dir = None, allow_edits: bool = False) -> Any:
    """The MCP server with the tools (``Tools.names``) registered, each answering JSON text only (no
    structured copy of it: the agent would read it twice)."""
    cls = _server_class()
    tools = Tools(dir, allow_edits)
    app = cls("tunetrack", instructions=INSTRUCTIONS, log_level="ERROR")
    error = _tool_error()
    for name in tools.names():
        fn = _answering(getattr(tools, name), error)
        try:
            app.add_tool(fn, name=name, structured_output=False)
        except TypeError:  # mcp before 1.10: text only anyway
            app.add_tool(fn, name=name)
    return app


def serve(dir: Dir = None, allow_edits: bool = False) -> None:
    """Serve over stdio until the client closes it (what agent clients start as a command)."""
    server(dir, allow_edits).run("stdio")
