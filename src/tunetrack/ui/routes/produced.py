"""What runs made and were made from: a run's checkpoints with the best one marked
(``reader.checkpoints``), its lineage walked both ways (``reader.lineage``), and the store's artifacts
(``reader.artifacts``): the run page's Checkpoints and Lineage tabs and the artifacts page.

Worded as ``tunetrack checkpoints``, ``lineage`` and ``artifacts`` word them (``reader.as_text``,
``reader.lineage.WORDS``), so the pages lay out texts and never decide what is best or what an edge
means. Read-only: an alias moves with ``tunetrack artifacts NAME:VERSION --alias``, not here.
"""

from __future__ import annotations

import os
import threading
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, HTTPException, Query, Request

from ...errors import TunetrackError, one_line
from ...metric_keys import EVAL_LOSS, minimized
from ...reader import Catalog
from ...reader import checkpoints as ckpt
from ...reader.artifacts import ArtifactVersion, latest_versions, open_artifacts
from ...reader.as_text import checkpoint_keys, human_bytes, number, when
from ...reader.find import all_runs
from ...reader.lineage import ARTIFACT, CHECKPOINT, RUN, WORDS, Graph, Node, build, detail_text
from .. import team
from .deps import CatalogDep, open_or_404
from .runs import best_ways

router = APIRouter()

#: the characters of a file's SHA-256 shown, as ``tunetrack artifacts NAME:VERSION`` prints them
SHORT_HASH = 12


def _root(request: Request) -> str | os.PathLike[str] | None:
    """The store's folder or URL the app was made for (None: ``$TUNETRACK_DIR`` or the default)."""
    return request.app.state.root


# -- checkpoints ----------------------------------------------------------------------------------
@router.get("/api/runs/{run_id}/checkpoints", summary="A run's checkpoints, the best one by a metric marked")
def checkpoints(run_id: str, catalog: CatalogDep, best: str | None = None) -> dict[str, Any]:
    """Every checkpoint the run saved (``tunetrack checkpoints RUN --json``'s fields), with ``size``,
    ``state`` and each metric's text as the CLI prints them; ``keys``: the metrics logged at their
    steps, the best's key first, then losses and rewards, evaluation first; ``best``: the key, its
    direction and the step of the best, by ``best=KEY[:min|max]`` or by default the evaluation loss
    (lower is better) where the checkpoints have one; ``metrics``: every key ``best`` may name (the
    evaluations attached after the fact, ``tunetrack.log_evaluation``, as ``<suite>/<key>``)."""
    found = open_or_404(catalog, run_id).checkpoints()
    logged = ckpt.metric_names(found)
    key, lower = _best_key(best, logged)
    chosen = ckpt.best(found, key, lower) if key is not None else None
    if best and chosen is None:
        raise HTTPException(422, f"no checkpoint has {key!r}; their metrics: {', '.join(logged) or 'none'}")
    marked = None
    if key is not None and chosen is not None:
        way = minimized(key) if lower is None else lower
        marked = {"key": key, "minimize": way, "step": chosen.step, "path": chosen.path}
    return {
        "best": marked,
        "keys": checkpoint_keys(logged, key),
        "metrics": logged,
        "checkpoints": [_checkpoint(c, c is chosen) for c in found],
    }


def _best_key(spec: str | None, logged: list[str]) -> tuple[str | None, bool | None]:
    """The key the best is picked by and its direction (None: ``metric_keys.minimized``'s): the one
    asked for, else an evaluation loss the checkpoints have (``eval_loss``, ``eval/loss``, then any
    ``eval`` key whose best is its lowest), else none."""
    if spec:
        key = spec.partition(":")[0]
        return key, best_ways([spec])[key] if ":" in spec else None
    default = next((k for k in EVAL_LOSS if k in logged), None) or next(
        (k for k in logged if k.startswith("eval") and minimized(k)), None
    )
    return default, None


def _checkpoint(c: ckpt.Checkpoint, is_best: bool) -> dict[str, Any]:
    files = None
    if c.files is not None:
        files = [
            {
                **f,
                "size_text": human_bytes(int(f.get("size") or 0)),
                "hash": (f.get("sha256") or "")[:SHORT_HASH] or "…",  # not hashed before the run ended
            }
            for f in c.files
        ]
    return {
        **c.as_dict(),
        "files": files,
        "best": is_best,
        "state": "deleted" if c.deleted else "kept",
        "size": "…" if c.bytes is None else human_bytes(c.bytes),  # "…": still being hashed, or a URL
        # what was logged at its step, then each suite's latest evaluation of it (``lm-eval/...``)
        "texts": {k: number(v) for k, v in {**c.metrics, **c.results()}.items()},
    }


# -- lineage --------------------------------------------------------------------------------------
class Lineages:
    """The store's lineage graph, built once per version of the runs table (``Catalog.refresh``: any
    run's row changed, or a run came or went) and of the artifacts (versions, aliases, uses): building
    it reads every run's events, far more than answering one run's lineage. A live run's new
    checkpoints show once its row changes (the table rechecks live runs every few seconds). One per app
    (``app.state.lineages``)."""

    def __init__(self) -> None:
        self._kept: tuple[Any, Graph] | None = None
        self._lock = threading.Lock()

    def graph(self, catalog: Catalog, root: str | os.PathLike[str] | None) -> Graph:
        artifacts = open_artifacts(root)
        seen = tuple(
            (v.spec, v.digest, tuple(v.aliases), tuple(v.used_by))
            for name in artifacts.names()
            for v in artifacts.versions(name)
        )
        with self._lock:  # one build at a time; a caller that waited finds it built
            signature = (catalog.refresh(share=True), seen)
            if self._kept is None or self._kept[0] != signature:
                self._kept = (signature, build(all_runs(catalog.store), artifacts))
            return self._kept[1]


@router.get("/api/runs/{run_id}/lineage", summary="What a run was made from and what was made from it")
def lineage(run_id: str, request: Request, catalog: CatalogDep) -> dict[str, Any]:
    """``made_from`` (its inputs: data sets, base models, tokenizers, the checkpoint it started from,
    the run it forked from) and ``made_into`` (its checkpoints and artifacts, its forks, the runs that
    used its checkpoints, and on down), each a list of rows in ``tunetrack lineage``'s order: ``depth``
    (the indent), ``words`` (how the edge reads from this end: ``input:``, ``saved``, ``used by``),
    ``node`` (an id in ``nodes``) and ``parent``; ``nodes``: each node's type, label, ``note`` (its
    kind, state, whether deleted) and ``href`` (its page)."""
    run = open_or_404(catalog, run_id)
    graph = request.app.state.lineages.graph(catalog, _root(request))
    root = f"{RUN}:{run.id}"
    if root not in graph.nodes:  # a run created since the graph was built: the next look has it
        return {"root": root, "nodes": {}, "made_from": [], "made_into": []}
    sides: dict[str, list[dict[str, Any]]] = {}
    for side, down in (("made_from", False), ("made_into", True)):
        sides[side] = []
        for depth, e in graph.walk(root, down):
            parent, child = (e.source, e.target) if down else (e.target, e.source)
            words = WORDS[e.relation][down]
            sides[side].append({"depth": depth, "words": words, "node": child, "parent": parent})
    if team.person(request) is not None:
        names = _run_names(catalog)
        sides = {side: _readable(rows, graph, names) for side, rows in sides.items()}
    ids = {root} | {r["node"] for rows in sides.values() for r in rows}
    return {"root": root, "nodes": {i: _node(graph.nodes[i]) for i in sorted(ids)}, **sides}


def _readable(rows: list[dict[str, Any]], graph: Graph, names: dict[str, str]) -> list[dict[str, Any]]:
    """A walk without the runs (and their checkpoints) a team member may not read, nor anything
    reached through one."""
    out: list[dict[str, Any]] = []
    hidden_below: int | None = None  # the depth of the hidden row whose subtree is being skipped
    for row in rows:
        if hidden_below is not None and row["depth"] > hidden_below:
            continue
        hidden_below = None
        node = graph.nodes[row["node"]]
        if node.type in (RUN, CHECKPOINT) and node.detail.get("run") not in names:
            hidden_below = row["depth"]
            continue
        out.append(row)
    return out


def _node(n: Node) -> dict[str, Any]:
    return {
        "id": n.id,
        "type": n.type,
        "label": n.label,
        **n.detail,
        "note": detail_text(n.detail),
        "href": _href(n),
    }


def _href(n: Node) -> str:
    """A node's page: a run's, a checkpoint's run's Checkpoints tab, an artifact's versions."""
    if n.type == RUN:
        return f"/run/{quote(n.detail['run'], safe='')}"
    if n.type == CHECKPOINT:
        return f"/run/{quote(n.detail['run'], safe='')}?{urlencode({'step': n.detail['step']})}#checkpoints"
    assert n.type == ARTIFACT
    name, _, version = n.label.rpartition(":")
    return f"/artifacts?{urlencode({'name': name})}#{version}"


# -- artifacts ------------------------------------------------------------------------------------
@router.get("/api/artifacts", summary="Each artifact's latest version: kind, aliases, size, made by, used by")
def artifacts(request: Request, catalog: CatalogDep, kind: str | None = None) -> dict[str, Any]:
    """``tunetrack artifacts --json``'s latest versions, each with ``size`` (``reference`` for an
    artifact kept by reference), ``created`` as the CLI prints times, and the runs that made and used
    it as ``{id, name}`` (``name`` None: a run the store no longer holds)."""
    names = _run_names(catalog)
    found = latest_versions(_root(request), kind)
    hide = team.person(request) is not None
    return {"artifacts": [_version(v, names, names_only=hide) for v in found if _shown(v, names, request)]}


@router.get("/api/artifacts/versions", summary="Every version of one artifact, with its files")
def versions(
    request: Request, catalog: CatalogDep, name: Annotated[str, Query(min_length=1)]
) -> dict[str, Any]:
    """The versions of ``name``, oldest first, as ``/api/artifacts`` gives a version, with ``files``
    (name, size, short hash) and ``digest``; a name the store does not hold is a 404 that says which
    it holds."""
    store = open_artifacts(_root(request))
    hide = team.person(request) is not None
    names = _run_names(catalog)
    try:
        found = [v for v in store.versions(name) if _shown(v, names, request)]
        if not found and hide:  # a team member is not told which artifacts there are
            raise HTTPException(404, f"no artifact {name!r} that you may read")
        if not found:
            store.resolve(name)  # raises the error that says which artifacts there are
    except (TunetrackError, ValueError) as exc:
        raise HTTPException(404, one_line(exc)) from None
    return {"name": name, "versions": [_version(v, names, True, hide) for v in found]}


def _run_names(catalog: Catalog) -> dict[str, str]:
    """The names of the runs the request may read, by id."""
    return {row["id"]: row["name"] for row in catalog.rows(keys=())}


def _shown(v: ArtifactVersion, names: dict[str, str], request: Request) -> bool:
    """Whether a team member sees ``v``: made by a run they may read, or by none (a file logged
    outside any run). On a dashboard of one, every version."""
    return team.person(request) is None or v.run is None or v.run in names


def _version(
    v: ArtifactVersion, names: dict[str, str], files: bool = False, names_only: bool = False
) -> dict[str, Any]:
    """A version as the page shows it; ``names_only``: the runs that used it only where named (a team
    member sees no id of a run they may not read)."""
    body = v.as_dict()
    body.pop("files")
    out = {
        **body,
        "size": "reference" if v.reference else human_bytes(v.bytes),
        "files": len(v.files),
        "created": when(v.created),
        "run": None if v.run is None else {"id": v.run, "name": names.get(v.run)},
        "used_by": [{"id": r, "name": names.get(r)} for r in v.used_by if r in names or not names_only],
    }
    if files:
        out["file_list"] = [
            {"name": f.name, "size": human_bytes(f.size), "hash": f.sha256[:SHORT_HASH]} for f in v.files
        ]
    return out
