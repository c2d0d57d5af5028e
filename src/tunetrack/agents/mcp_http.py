"""The MCP server over Streamable HTTP, for a team's dashboard (``tunetrack ui --team``, at ``/mcp``):
the same tools as ``tunetrack mcp``, each call answered as the person who sent it may see and change.

The dashboard decides who a request is before it reaches us (``ui.team``: a personal token, a trusted
proxy's header, a session) and hands its view of the store along with the request. A tool learns the
person from the HTTP request of its own call (the SDK's ``Context``: ``request_context.request``), not
from anything kept between calls, so two agents of two people on one server never see each other's
runs. ``MemberTools`` is ``mcp_server.Tools`` with the team's decisions put where the read API would
reach past them: lists hold only the runs of readable projects (``reader.visible.Visible``), a hidden
run named is refused in one line, SQL reads tables built from readable runs alone, an artifact a
hidden run made is not there, and an edit needs the edit role and is recorded with the person and
their address (``tunetrack audit``).

The server is stateless (each POST a whole exchange, JSON answers): nothing of a person outlives their
request, and nothing needs a session store or a sticky proxy.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..reader import list_runs, sweeps
from ..reader.artifacts import latest_versions, open_artifacts
from ..reader.find import all_runs
from ..reader.lineage import ARTIFACT, build, find_node
from ..reader.visible import Visible
from ..sql.engine import Tables
from .mcp_server import (
    ARTIFACT_FIELDS,
    INSTRUCTIONS,
    Dir,
    Tools,
    _answering,
    _tool_error,
    dumps,
)

INSTALL = "a team's dashboard serves MCP with the MCP SDK 2 or later: pip install 'tunetrack[mcp]' 'mcp>=2'"
#: what the server adds to ``mcp_server.INSTRUCTIONS`` on a team's dashboard
TEAM_NOTE = (
    " On this team's server you see the runs of the projects you may read, and tag_run, note_run and "
    "stop_run work on those you may edit (recorded as you, in the runs' history)."
)


class MemberTools(Tools):
    """The tools as one member of a team may use them: ``catalog`` is their view of the dashboard's
    (``Visible``), ``may_edit`` says whether they may edit a project's runs, ``by`` and ``origin``
    are who they are and where they are, for the audit trail."""

    def __init__(
        self,
        dir: Dir,
        catalog: Visible,
        configs: sweeps.Configs,
        may_edit: Callable[[str | None], bool],
        by: str,
        origin: str,
        allow_edits: bool = True,
    ) -> None:
        super().__init__(dir, allow_edits, catalog=catalog, configs=configs)  # type: ignore[arg-type]
        self.may_read = catalog.may_read
        self.may_edit = may_edit
        self.by = by
        self.origin = origin

    def _readable(self) -> set[str]:
        """The ids of the runs this person may read."""
        return {row["id"] for row in self.catalog.rows(keys=())}

    def _project_runs(self, project: str | None) -> list[Any]:
        return [r for r in list_runs(dir=self.dir, project=project) if self.may_read(r.project)]

    def _tables(self) -> Tables:
        """The SQL tables built from the readable runs only: a hidden run has no row in any table, and
        its Parquet files are not among those the query may read (``sql.engine.connect``)."""
        return Tables(self.dir, [r for r in list_runs(self.dir) if self.may_read(r.project)])

    def list_artifacts(self, kind: str | None = None) -> str:
        # as the dashboard's artifacts page: a version a hidden run made is left out, and the hidden
        # runs among those that used one
        readable = self._readable()
        out = []
        for v in latest_versions(self.dir, kind):
            if v.run is None or v.run in readable:
                entry = {k: v.as_dict()[k] for k in ARTIFACT_FIELDS}
                entry["used_by"] = [r for r in v.used_by if r in readable]
                out.append(entry)
        return dumps(out)

    def get_lineage(self, ref: str) -> str:
        # the graph of the readable runs (a hidden run, its checkpoints and forks are no nodes), less
        # the artifact versions hidden runs made; a hidden run named is refused (``Visible.open``)
        artifacts = open_artifacts(self.dir)
        graph = build([r for r in all_runs(self.catalog.store) if self.may_read(r.project)], artifacts)
        readable = self._readable()
        hidden = {
            f"{ARTIFACT}:{v.spec}"
            for name in artifacts.names()
            for v in artifacts.versions(name)
            if v.run is not None and v.run not in readable
        }
        graph.nodes = {k: n for k, n in graph.nodes.items() if k not in hidden}
        graph.edges = {e for e in graph.edges if e.source not in hidden and e.target not in hidden}
        return dumps(graph.around(find_node(graph, ref, self.catalog.open)))

    def _editable(self, ref: str) -> Any:
        """The run ``ref`` names, if this person may edit it (else a one-line refusal)."""
        run = self.catalog.open(ref)  # a hidden run: "you may not read this run"
        if not self.may_edit(run.project):
            project = run.project or "runs in no project"
            raise PermissionError(f"{self.by} may not edit the runs of {project!r} (the team file's roles)")
        return run

    def tag_run(self, run: str, add: list[str] | None = None, remove: list[str] | None = None) -> str:
        from ..manage.runs import edit_run

        r = self._editable(run)
        r = edit_run(r.id, self.dir, add=add or (), remove=remove or (), by=self.by, origin=self.origin)
        return dumps({"id": r.id, "name": r.name, "tags": r.tags})

    def note_run(self, run: str, text: str) -> str:
        from ..manage.runs import edit_run

        r = edit_run(self._editable(run).id, self.dir, note=text, by=self.by, origin=self.origin)
        return dumps({"id": r.id, "name": r.name, "notes": len(r.notes)})

    def stop_run(self, run: str, reason: str = "") -> str:
        from ..manage import stop_run

        r = stop_run(self._editable(run).id, reason, dir=self.dir, by=self.by, origin=self.origin)
        return dumps({"id": r.id, "name": r.name, "state": r.state, "stop": r.stop_request})


#: the tools of one call: the HTTP request it came in (a Starlette ``Request``) -> its person's tools
ToolsFor = Callable[[Any], Tools]


def _per_call(name: str, tools_for: ToolsFor, context: type, error: type[Exception]) -> Callable[..., str]:
    """The tool ``name`` as the SDK registers it: ``Tools.<name>``'s parameters (so the schema an agent
    reads is the stdio server's) and one more, ``ctx``, that the SDK fills with the call's context;
    the call is answered by the tools of the person its HTTP request came from."""
    method = getattr(Tools, name)
    signature = inspect.signature(method, eval_str=True)
    params = [p for p in signature.parameters.values() if p.name != "self"]
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=context))

    def tool(ctx: Any, **kwargs: Any) -> str:
        request = getattr(ctx.request_context, "request", None)
        if request is None:  # not over HTTP: no one to answer as
            raise error("this server answers over HTTP only, as the person who sent the request")
        return _answering(getattr(tools_for(request), name), error)(**kwargs)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = method.__doc__
    tool.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
    return tool


def http_server(tools_for: ToolsFor, names: list[str]) -> Any:
    """The MCP server with the tools ``names`` registered, each answered by ``tools_for`` its call's
    request (JSON text only, as ``mcp_server.server``). Needs mcp 2 (``MCPServer``): it is the SDK this
    was made against (the context of a call, a stateless server given its settings per app); with an
    older one ``ImportError`` says so."""
    try:
        from mcp.server.mcpserver import Context, MCPServer
    except ImportError:
        raise ImportError(INSTALL) from None
    app = MCPServer("tunetrack", instructions=INSTRUCTIONS + TEAM_NOTE, log_level="ERROR")
    context, error = Context, _tool_error()
    for name in names:
        app.add_tool(_per_call(name, tools_for, context, error), name=name, structured_output=False)
    return app


def asgi(server: Any) -> tuple[Any, Callable[[], contextlib.AbstractAsyncContextManager[None]]]:
    """``server`` over Streamable HTTP, stateless with JSON answers: the ASGI app to route one path to,
    and what must run around the serving app's life (the SDK's session manager: its task group).
    Host and Origin are checked by the dashboard that serves it (``ui.mcp_route``), so the SDK's own
    check, which knows only loopback names, is off."""
    from mcp.server.transport_security import TransportSecuritySettings

    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return manager.handle_request, running
