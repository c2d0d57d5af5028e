"""The house rules, checked on the source: every import goes down the layers, never skips one, and no
two modules import each other (directly or round a loop).

    adapters (integrations/)  -> tracker -> writer -> store
    cli/, ui/                 -> reader  -> store

Beside the layers sit ``backends/`` (called by the writer, given to the tracker) and ``system/``
(sampled for the tracker); everything else at the top of the package is core vocabulary (states,
metric keys, settings, values, config, health, ...) that any layer may use and that uses no layer.
Imports under ``if TYPE_CHECKING:`` are annotations only and are not counted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from helpers import SRC

PACKAGE = Path(SRC) / "tunetrack"

#: layer -> the layers it may import directly (itself and the core always)
ALLOWED: dict[str, set[str]] = {
    "integrations": {"tracker"},
    "cli": {"reader", "ui", "bridges"},  # `tunetrack ui` starts the dashboard
    "ui": {"reader"},
    "tracker": {"writer", "system", "backends"},
    "writer": {"store", "backends"},
    "bridges": {"reader", "backends", "writer"},  # replay a run into a backend; import runs
    "reader": {"store"},
    "store": set(),
    "backends": set(),
    "system": set(),
    "core": set(),
}
#: the package itself and ``python -m tunetrack``: entry points that may reach any layer
ENTRY_POINTS = {"tunetrack", "tunetrack.__main__"}


def layer(module: str) -> str:
    part = module.split(".")[1] if module.count(".") else ""
    return part if part in ALLOWED else "core"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, except those inside ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in _runtime_imports(ast.Module([child], [])))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _runtime_imports(node)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``module`` imports at run time."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in _runtime_imports(ast.parse(path.read_text())):
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
    }
    assert wrong_way(edges) == [
        "tunetrack.cli.main -> tunetrack.store.local (cli may use ['bridges', 'reader', 'ui'])",
        "tunetrack.integrations.x -> tunetrack.store.local (integrations may use ['tracker'])",
        "tunetrack.states -> tunetrack.tracker.tracker (core may use only the core)",
        "tunetrack.store.local -> tunetrack.reader.run (store may use only the core)",
    ]
    assert cycles(edges) == [
        ["tunetrack.reader.run", "tunetrack.store.local"],
        ["tunetrack.states", "tunetrack.tracker.tracker"],
    ]


def test_the_graph_is_read_from_the_source():
    edges = graph()
    assert "tunetrack.store.codec" in edges["tunetrack.writer.writer"]
    assert "tunetrack.tracker" in edges["tunetrack.integrations.transformers"]
    assert "tunetrack.tracker.tracker" not in edges["tunetrack.tracker.exit_hooks"]  # TYPE_CHECKING only
    assert {layer(m) for m in edges} >= set(ALLOWED)


def test_no_import_goes_the_wrong_way():
    assert wrong_way(graph()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []
