"""Lineage: what each run was made from and what it made, as one graph over a store. Nodes are runs,
artifact versions (``store/artifacts.py``: data sets, models, tokenizers, evaluation outputs) and
checkpoints; edges come from what the runs recorded, never from opening files:

- ``used``: an artifact (an input the adapters recorded, or ``use_artifact``) went into a run; a
  checkpoint went into a run that started from its folder (its base model is that checkpoint);
- ``logged``: a run made an artifact (``log_artifact``); ``saved``: a run saved a checkpoint;
- ``kept as``: a checkpoint whose files an artifact holds, byte for byte (a checkpoint promoted);
- ``forked``: a run forked from another's step (``fork_from``), from the checkpoint saved at that
  step where there is one, else from the run.

``lineage`` walks it both ways from one node: everything upstream (what it was made from) and
downstream (what was made from it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import settings
from ..errors import RunNotFound, TunetrackError
from ..store.artifacts import ArtifactStore, ArtifactVersion, FileEntry, digest_of
from .checkpoints import Checkpoint
from .find import all_runs, find_run, split_run_step, store_at
from .run import Run

RUN, ARTIFACT, CHECKPOINT = "run", "artifact", "checkpoint"
#: how an edge reads from each end: (going up from its target, going down from its source); the CLI's
#: ``tunetrack lineage`` and the dashboard's run page say the same words
WORDS = {
    "used": ("input:", "used by"),
    "saved": ("saved by", "saved"),
    "logged": ("logged by", "logged"),
    "kept as": ("kept from", "kept as"),
    "forked": ("forked from", "forked into"),
}


@dataclass(frozen=True)
class Node:
    id: str  # ``run:<id>``, ``artifact:<name>:v<N>``, ``checkpoint:<run id>@<step>``
    type: str
    label: str
    detail: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    relation: str  # used, logged, saved, kept as, forked


@dataclass
class Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: set[Edge] = field(default_factory=set)

    def add(self, node: Node) -> str:
        self.nodes.setdefault(node.id, node)
        return node.id

    def walk(self, start: str, downstream: bool) -> list[tuple[int, Edge]]:
        """The edges reached from ``start`` going down (or up), depth first, each with its depth;
        a node reached twice is walked once."""
        out: list[tuple[int, Edge]] = []
        seen = {start}

        def visit(node: str, depth: int) -> None:
            for e in sorted(self.edges, key=lambda e: (e.relation, e.target, e.source)):
                if (e.source if downstream else e.target) != node:
                    continue
                out.append((depth, e))
                nxt = e.target if downstream else e.source
                if nxt not in seen:
                    seen.add(nxt)
                    visit(nxt, depth + 1)

        visit(start, 0)
        return out

    def around(self, start: str) -> dict[str, Any]:
        """The part of the graph ``start`` reaches both ways, as JSON: the nodes, the edges."""
        edges = {e for _, e in self.walk(start, True)} | {e for _, e in self.walk(start, False)}
        ids = {start} | {e.source for e in edges} | {e.target for e in edges}
        return {
            "root": start,
            "nodes": [
                {"id": n.id, "type": n.type, "label": n.label, **n.detail}
                for i in sorted(ids)
                if (n := self.nodes[i])
            ],
            "edges": [
                {"source": e.source, "target": e.target, "relation": e.relation}
                for e in sorted(edges, key=str)
            ],
        }


def detail_text(detail: dict[str, Any]) -> str:
    """What a node's detail adds to its label: `` (adapter, deleted)``, `` (dataset)``, `` (finished)``."""
    bits = [detail[k] for k in ("kind", "state") if detail.get(k)]
    if detail.get("deleted"):
        bits.append("deleted")
    return f" ({', '.join(map(str, bits))})" if bits else ""


def run_node(run: Run) -> Node:
    return Node(
        f"{RUN}:{run.id}", RUN, run.name, {"run": run.id, "project": run.project, "state": str(run.state)}
    )


def artifact_node(v: ArtifactVersion) -> Node:
    return Node(
        f"{ARTIFACT}:{v.spec}",
        ARTIFACT,
        v.spec,
        {
            "kind": v.kind,
            "bytes": v.bytes,
            "reference": v.reference,
            "aliases": v.aliases,
            "digest": v.digest,
        },
    )


def checkpoint_node(c: Checkpoint, run_name: str) -> Node:
    return Node(
        f"{CHECKPOINT}:{c.run}@{c.step}",
        CHECKPOINT,
        f"{run_name}@{c.step}",
        {"run": c.run, "step": c.step, "path": c.path, "kind": c.kind, "deleted": c.deleted},
    )


def build(runs: Iterable[Run], artifacts: ArtifactStore) -> Graph:
    """The store's lineage graph from its runs' events and its artifacts' manifests."""
    g = Graph()
    versions = {v.spec: v for name in artifacts.names() for v in artifacts.versions(name)}
    for v in versions.values():
        g.add(artifact_node(v))
    by_path: dict[str, str] = {}  # a local checkpoint's folder -> its node
    by_digest: dict[str, str] = {}  # a checkpoint's content -> its node
    used: list[tuple[str, str]] = []  # (run node, artifact spec)
    forked: list[tuple[str, str, int]] = []  # (run node, parent id, step)
    for run in runs:
        me = g.add(run_node(run))
        if (fork := run.fork) is not None:
            forked.append((me, fork["run"], fork["step"]))
        for e in run.events():
            spec = f"{e.get('name')}:v{e.get('version')}"
            if e.get("kind") == "artifact" and spec in versions:
                g.edges.add(Edge(me, f"{ARTIFACT}:{spec}", "logged"))
            elif e.get("kind") == "artifact_used" and spec in versions:
                used.append((me, spec))
        for c in run.checkpoints():
            node = g.add(checkpoint_node(c, run.name))
            g.edges.add(Edge(me, node, "saved"))
            by_path[os.path.normpath(c.path)] = node
            if c.files and all(f.get("sha256") for f in c.files):
                entries = [FileEntry(f["name"], int(f["size"]), f["sha256"]) for f in c.files]
                by_digest[digest_of(entries, None)] = node
    for me, spec in used:
        v = versions[spec]
        # an input that is a checkpoint's folder: the checkpoint went into the run, not just a path
        source = (
            by_path.get(os.path.normpath(v.reference)) if v.reference and "://" not in v.reference else None
        )
        g.edges.add(Edge(source or f"{ARTIFACT}:{spec}", me, "used"))
    for me, parent, step in forked:
        source = f"{CHECKPOINT}:{parent}@{step}"
        if f"{RUN}:{parent}" in g.nodes:  # a parent the store no longer holds: no edge
            g.edges.add(Edge(source if source in g.nodes else f"{RUN}:{parent}", me, "forked"))
    for v in versions.values():
        if (kept := by_digest.get(v.digest)) is not None:
            g.edges.add(Edge(kept, f"{ARTIFACT}:{v.spec}", "kept as"))
    return g


def lineage(ref: str, dir: str | os.PathLike[str] | None = None) -> tuple[Graph, str]:
    """The store's lineage graph and the node ``ref`` names in it (``find_node``)."""
    store = store_at(dir)
    graph = build(all_runs(store), ArtifactStore(settings.store_dir(dir)))
    return graph, find_node(graph, ref, lambda r: find_run(store, r))


def find_node(g: Graph, ref: str, run_of: Callable[[str], Run]) -> str:
    """The node ``ref`` names: ``name:v3`` or ``name:alias`` (an artifact), ``RUN@STEP`` (a
    checkpoint), or a run; an artifact's bare name is its latest version."""
    run_ref, step = split_run_step(ref)
    if step is not None:
        run = run_of(run_ref)
        node = f"{CHECKPOINT}:{run.id}@{step}"
        if node not in g.nodes:
            steps = [c.step for c in run.checkpoints()]
            raise TunetrackError(
                f"run {run.name} saved no checkpoint at step {step}; it saved at {steps or 'none'}"
            )
        return node
    if f"{ARTIFACT}:{ref}" in g.nodes:
        return f"{ARTIFACT}:{ref}"
    named = [n for n in g.nodes.values() if n.type == ARTIFACT and _artifact_matches(n, ref)]
    if named:
        return max(named, key=lambda n: int(n.label.rsplit(":v", 1)[1])).id
    try:
        return f"{RUN}:{run_of(ref).id}"
    except RunNotFound as exc:
        names = sorted({n.label.rsplit(":v", 1)[0] for n in g.nodes.values() if n.type == ARTIFACT})
        raise RunNotFound(f"{exc}; nor an artifact (artifacts: {', '.join(names[:20]) or 'none'})") from None


def _artifact_matches(node: Node, ref: str) -> bool:
    name, _, which = ref.rpartition(":") if ":" in ref else (ref, "", "latest")
    return node.label.rsplit(":v", 1)[0] == name and (
        which in node.detail.get("aliases", []) or node.label == ref
    )
