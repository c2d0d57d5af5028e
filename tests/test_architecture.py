"""The house rules, checked on the source: every import goes down the layers, never skips one, and no
two modules import each other (directly or round a loop).

    adapters (integrations/)  -> tracker -> writer -> store
                                           writer -> manage (a run's Parquet copy, at its end)
    cli/, ui/                 -> reader  -> store
    cli/                      -> manage  -> reader, store   (edit, delete and copy runs)
    cli/                      -> sql     -> reader          (SQL over a store, in DuckDB)
    cli/                      -> agents  -> sql, reader, manage  (the MCP server)

Beside the layers sit ``backends/`` (called by the writer, given to the tracker), ``system/``
(sampled for the tracker) and ``monitoring/`` (health checks on the writer thread, alerts). The core
is listed module by module (``CORE``): vocabulary and pure logic that any layer may use and that uses
no layer. A module that is in no layer and not in the core fails the check, so a new module at the
top of the package is a decision, not a default. Imports under ``if TYPE_CHECKING:`` count like any
other: a type that only an annotation names is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from support.helpers import SRC

PACKAGE = Path(SRC) / "tunetrack"

#: layer -> the layers it may import directly (itself and the core always)
ALLOWED: dict[str, set[str]] = {
    "integrations": {"tracker", "monitoring"},  # the stop-on-NaN test is the health monitor's
    "cli": {
        "reader",
        "manage",
        "ui",
        "bridges",
        "monitoring",
        "sql",
        "agents",
    },  # `tunetrack ui`: the dashboard
    "agents": {"reader", "manage", "sql"},  # the MCP server: read, SQL, and (when allowed) tag and note
    "sql": {"reader"},  # SQL over a store (DuckDB), its tables built from the read API
    "ui": {"reader"},
    "tracker": {"writer", "system", "backends", "monitoring"},
    # manage: the run's Parquet copy, written at the end by the code `tunetrack parquet` runs
    "writer": {"store", "backends", "monitoring", "manage"},
    "bridges": {"reader", "backends", "writer"},  # replay a run into a backend; import runs
    "reader": {"store"},
    "manage": {"reader", "store"},  # edits, deletes and copies runs: the one writer besides the writer
    "store": set(),
    "backends": set(),
    "system": set(),
    "monitoring": set(),
    "core": set(),
}
#: the core: vocabulary and pure logic, named one by one
CORE = {
    "tunetrack._warnings",
    "tunetrack.errors",
    "tunetrack.states",
    "tunetrack.metric_keys",
    "tunetrack.aggregates",
    "tunetrack.settings",
    "tunetrack.values",
    "tunetrack.edits",
    "tunetrack.redact",
    "tunetrack.failures",
    "tunetrack.jsonfile",
    "tunetrack.config",
    "tunetrack.config.capture",
    "tunetrack.config.tree",
    "tunetrack.config.names",
}
#: the package itself, ``python -m tunetrack`` and ``tunetrack.wandb`` (W&B's API for scripts written for
#: W&B): entry points for users, that may reach any layer
ENTRY_POINTS = {"tunetrack", "tunetrack.__main__", "tunetrack.wandb"}


def layer(module: str) -> str:
    """The module's layer: its folder under the package, ``core`` for the listed core modules, and
    ``unplaced`` for anything else (which the check reports)."""
    if module in CORE:
        return "core"
    part = module.split(".")[1] if module.count(".") else ""
    return part if part in ALLOWED and part != "core" else "unplaced"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (in functions, and under ``if TYPE_CHECKING:`` too)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``module`` imports."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in _imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
            ]
        for target in targets:
            while target and target not in known:  # `import tunetrack.store.codec as c` names a module
                target = target.rpartition(".")[0]
            if target.startswith("tunetrack") and target != module:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def wrong_way(edges: dict[str, set[str]]) -> list[str]:
    """Imports that go up a layer or skip one."""
    bad = []
    for source, targets in edges.items():
        if source in ENTRY_POINTS:
            continue
        if layer(source) == "unplaced":
            bad.append(f"{source} is in no layer and not in the core (place it, or list it in CORE)")
            continue
        for target in targets:
            if target in ENTRY_POINTS:
                bad.append(f"{source} -> {target} (the package facade is for users)")
                continue
            src, dst = layer(source), layer(target)
            if dst != src and dst != "core" and dst not in ALLOWED[src]:
                bad.append(f"{source} -> {target} ({src} may use {sorted(ALLOWED[src]) or 'only the core'})")
    return sorted(bad)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(out)


def test_the_checks_catch_what_they_are_for():
    """A made-up package with each fault: the checks must name them (or the real check proves nothing)."""
    edges = {
        "tunetrack.integrations.x": {"tunetrack.store.local", "tunetrack.tracker.tracker"},
        "tunetrack.cli.main": {"tunetrack.store.local", "tunetrack.reader.run"},
        "tunetrack.store.local": {"tunetrack.reader.run"},
        "tunetrack.reader.run": {"tunetrack.store.local", "tunetrack.states"},
        "tunetrack.states": {"tunetrack.tracker.tracker"},
        "tunetrack.tracker.tracker": {"tunetrack.states"},
        "tunetrack.helpers": {"tunetrack.states"},
    }
    assert wrong_way(edges) == [
        "tunetrack.cli.main -> tunetrack.store.local (cli may use ['agents', 'bridges', 'manage', 'monitoring', 'reader', 'sql', 'ui'])",
        "tunetrack.helpers is in no layer and not in the core (place it, or list it in CORE)",
        "tunetrack.integrations.x -> tunetrack.store.local (integrations may use ['monitoring', 'tracker'])",
        "tunetrack.states -> tunetrack.tracker.tracker (core may use only the core)",
        "tunetrack.store.local -> tunetrack.reader.run (store may use only the core)",
    ]
    assert cycles(edges) == [
        ["tunetrack.reader.run", "tunetrack.store.local"],
        ["tunetrack.states", "tunetrack.tracker.tracker"],
    ]


def test_the_graph_is_read_from_the_source(tmp_path):
    edges = graph()
    assert "tunetrack.store.codec" in edges["tunetrack.writer.writer"]
    assert "tunetrack.tracker" in edges["tunetrack.integrations.transformers"]
    assert {layer(m) for m in edges if m not in ENTRY_POINTS} == set(ALLOWED)
    assert set(edges) >= CORE  # every listed core module exists
    # imports inside functions and under TYPE_CHECKING are dependencies too
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tunetrack.tracker.tracker import Tracker\n"
        "def f():\n    from tunetrack.store import codec\n"
    )
    known = {"tunetrack.tracker.tracker", "tunetrack.store", "tunetrack.store.codec", "tunetrack.x.m"}
    assert imports_of("tunetrack.x.m", module, known) == {
        "tunetrack.tracker.tracker",
        "tunetrack.store.codec",
    }


def test_no_import_goes_the_wrong_way():
    assert wrong_way(graph()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_only_the_reader_and_manage_hand_out_a_store():
    """``reader.find.store_at`` returns the raw store: a layer that may not use the store must not get
    one through the reader either (the layer check cannot see a store passed as a value)."""
    users = {
        module
        for module, path in modules().items()
        if "store_at" in path.read_text() and layer(module) not in ("reader", "manage")
    }
    assert users == set()


def test_the_architecture_page_names_every_module():
    """docs/architecture.md says what each module is for: a module added to the package is added
    there too (by its file name, or its name in backticks for a core module)."""
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    unnamed = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in ("__init__.py", "__main__.py")
        and path.name not in page
        and f"`{path.stem}`" not in page
    ]
    assert unnamed == []


def test_the_architecture_page_lists_every_end_record_field():
    """The end record is typed once (``store.ends.EndRecord``); the run store's picture lists its fields."""
    from tunetrack.store.ends import FIELDS

    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    assert [f for f in FIELDS if f"`{f}`" not in page] == []
