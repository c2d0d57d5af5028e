"""The store for AI agents: an MCP server (Model Context Protocol, the official ``mcp`` SDK) over stdio.

An agent's context is small, so every answer is compact JSON: series thinned to a few dozen points
(``reader.chart_points``: M4, spikes kept), long texts cut with a note of how to ask for all of it, SQL
results cut to a row limit. Each tool is a thin wrapper of the read API (``reader``), its wording
(``reader.as_text``), the config diff (``reader.differing``) and read-only SQL (``tunetrack.sql``); a
long-lived ``reader.Catalog`` keeps parsed runs between calls. ``tag_run`` and ``note_run``
(``tunetrack.manage``) exist only when the server was started with ``allow_edits``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

from .. import metric_keys
from ..errors import TunetrackError
from ..reader import Catalog, chart_points, differing, present
from ..reader.as_text import overview, short
from ..sql.tables import json_safe

#: what the server tells an agent about itself
INSTRUCTIONS = (
    "tunetrack's store of fine-tuning runs. Start with list_projects or list_runs; get_run for one "
    "run; get_metrics for (thinned) curves; compare_runs for config differences and final metrics; "
    "query for read-only SQL (DuckDB) over the tables runs, params, params_wide, metrics, system, "
    "events, summary ('DESCRIBE <table>' lists a table's columns)."
)
INSTALL = "tunetrack mcp needs the MCP SDK: pip install 'tunetrack[mcp]'"
#: a text longer than this is cut (``full=True`` gives it whole)
TEXT_WIDTH = 200

Dir = str | os.PathLike[str] | None


def dumps(value: Any) -> str:
    """Compact JSON (no spaces: an agent pays for every character)."""
    return json.dumps(json_safe(value), separators=(",", ":"), default=str)


def _cut(text: str, full: bool) -> str:
    return text if full else short(text, TEXT_WIDTH)


class Tools:
    """The tools, as plain methods returning JSON text (tested without a server, served by ``serve``)."""

    def __init__(self, dir: Dir = None, allow_edits: bool = False) -> None:
        self.dir = dir
        self.allow_edits = allow_edits
        self.catalog = Catalog(dir)

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
        sort: str = "created",
        limit: int = 20,
    ) -> str:
        """Runs, newest first (``sort``: ``created``, ``name``, or a metric key such as ``loss``,
        lowest last value first), filtered by project, state and tag; at most ``limit``."""
        rows = self.catalog.rows(
            project=project, state=state, keys=() if sort in ("created", "name") else (sort,)
        )
        rows = [r for r in rows if tag is None or tag in r["tags"]]
        if sort == "name":
            rows.sort(key=lambda r: r["name"])
        elif sort != "created":
            numbers = [r for r in rows if isinstance(r["last"].get(sort), (int, float))]
            rows = sorted(numbers, key=lambda r: r["last"][sort]) + [r for r in rows if r not in numbers]
        out = [
            {
                "id": r["id"],
                "name": r["name"],
                "project": r["project"],
                "state": r["state"],
                "tags": r["tags"],
                "created": r["created"],
                "last_step": r["last_step"],
                "loss": r["loss"],
                **({sort: r["last"].get(sort)} if sort not in ("created", "name") else {}),
            }
            for r in rows[: max(limit, 0)]
        ]
        return dumps({"runs": out, "total": len(rows), "shown": len(out)})

    def get_run(self, run: str, full: bool = False) -> str:
        """One run: its overview (as ``tunetrack show`` words it), config, summary per metric, the
        failure cause, and its latest events. Long texts are cut unless ``full``."""
        r = self.catalog.open(run)
        events = r.events()
        shown = events if full else events[-10:]
        return dumps(
            {
                "overview": {label: _cut(text, full) for label, text in overview(r)},
                "error": r.cause,
                "traceback": (r.error if full else None) if r.error else None,
                "config": {
                    k: _cut(str(v), full) if isinstance(v, str) else v for k, v in r.flat_config.items()
                },
                "summary": {
                    k: {f: s[f] for f in ("last", "min", "max", "step", "count")}
                    for k, s in r.summary().items()
                },
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
        ``keys``: the losses (or the first few keys) and every key's name."""
        out = []
        width = max(int(points) // 4, 1)
        for ref in runs:
            r = self.catalog.open(ref)
            available = r.keys()
            wanted = keys or metric_keys.loss_columns(available) or available[:3]
            series: dict[str, Any] = {}
            for key in wanted:
                s = present(r.series(key))
                if not len(s) or s.values.dtype.kind not in "fiub":
                    series[key] = {"count": len(s)}
                    continue
                steps, values = chart_points(s.steps, s.values, width)
                series[key] = {"count": len(s), "steps": steps, "values": values}
            out.append({"run": r.id, "name": r.name, "keys": available, "series": series})
        return dumps(out)

    def compare_runs(self, runs: list[str], keys: list[str] | None = None) -> str:
        """Config differences between runs (only the keys whose values differ) and a metric table:
        each key's last, min and max per run (``keys``, or the losses every run shares)."""
        opened = [self.catalog.open(ref) for ref in runs]
        summaries = [r.summary() for r in opened]
        if keys is None:
            common = set.intersection(*(set(s) for s in summaries)) if summaries else set()
            keys = metric_keys.loss_columns(common) or sorted(common)[:10]
        return dumps(
            {
                "runs": [{"id": r.id, "name": r.name, "state": r.state} for r in opened],
                "config_diff": {key: values for key, values in differing([r.flat_config for r in opened])},
                "metrics": {
                    key: [{f: s.get(key, {}).get(f) for f in ("last", "min", "max")} for s in summaries]
                    for key in keys
                },
            }
        )

    def query(self, sql: str, limit: int = 50) -> str:
        """Read-only SQL (DuckDB) over the tables runs, params, params_wide, metrics, system, events,
        summary; at most ``limit`` rows come back (aggregate in SQL rather than raise it)."""
        from ..sql import run_sql

        table = run_sql(sql, self.dir)
        rows = table.slice(0, max(int(limit), 0)).to_pylist()
        return dumps(
            {"columns": table.column_names, "rows": rows, "row_count": table.num_rows, "shown": len(rows)}
        )

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

    def names(self) -> list[str]:
        """The tools served: the edits only when allowed."""
        read = ["list_projects", "list_runs", "get_run", "get_metrics", "compare_runs", "query"]
        return read + (["tag_run", "note_run"] if self.allow_edits else [])


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
        except (TunetrackError, ValueError, ImportError, OSError) as exc:
            text = str(exc).strip()
            raise error(text.splitlines()[0] if text else type(exc).__name__) from None

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
