"""The front-end files the package ships: the pages' own (``static/``) and uPlot, the charting library,
which the build puts into ``static/vendor/`` (``hatch_build.py``; it is never committed).

A build made without npm has no uPlot. The dashboard, the report and the notebook panel all go on
without it (their pages say so where the charts would be); this module is the one place that knows
where uPlot lies and says, once, that it is missing.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .._warnings import warn_once

STATIC = Path(__file__).parent / "static"
#: uPlot as the build put it into the package, with its licence
UPLOT_JS = STATIC / "vendor" / "uPlot.iife.min.js"
UPLOT_CSS = STATIC / "vendor" / "uPlot.min.css"
UPLOT_LICENSE = STATIC / "vendor" / "uPlot.LICENSE"
NOT_BUILT = "the charting library was not built in: rebuild with npm available"
#: a page script's import of another of the package's modules (one line, the form the page scripts use)
_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./([\w-]+\.js)";\n', re.MULTILINE)
#: an ``export`` of a module, and the name it exports
_EXPORT = re.compile(r"^export (?=(?:async )?(?:function|const|let|class)\b)", re.MULTILINE)
_EXPORTED = re.compile(r"^export (?:async )?(?:function\*?|const|let|class) (\w+)", re.MULTILINE)


def text(path: Path) -> str:
    """A file's text, or "" if the build did not make it."""
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def has_uplot() -> bool:
    """Whether the build put uPlot into the package."""
    return UPLOT_JS.is_file() and UPLOT_CSS.is_file()


def uplot_built(where: str, without: str) -> bool:
    """``has_uplot``, warning once per ``where`` if not (``without``: what then happens, "the
    dashboard shows no charts")."""
    if has_uplot():
        return True
    warn_once(f"{where}:no-uplot", f"{NOT_BUILT} ({without})")
    return False


def uplot_tag() -> str:
    """A digest of uPlot's files, for URLs that name their content (cached for good by a browser, new
    with a new build). Only where ``uplot_built``."""
    digest = hashlib.sha256()
    for path in (UPLOT_JS, UPLOT_CSS):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def inlined(name: str) -> str:
    """``static/<name>``, an ES module, with the modules it imports (``common.js``, and those of the
    run page it reuses: ``many.js``, ``dist.js``, ``sampletext.js``, and what they import) put in
    their place: for where a script cannot import another file (the report, one self-contained file;
    the notebook panel, one ES module). Each module runs once, in a function of its own that returns
    what it exports, so its private names cannot clash with another's; the page script's own imports
    become destructurings of what those functions returned."""
    source = text(STATIC / name)
    first = _IMPORT.search(source)
    if first is None:
        return source
    order: list[str] = []  # the imported modules, each after the ones it imports
    _visit(source, order, [name])
    bundles = "".join(f"const {_var(m)} = (() => {{\n{_wrapped(m)}\n}})();\n" for m in order)
    body = _IMPORT.sub(_destructure, source[first.start() :])
    return source[: first.start()] + bundles + body


def _visit(source: str, order: list[str], path: list[str]) -> None:
    """Add the modules ``source`` imports to ``order``, each after its own imports (depth first)."""
    for _, module in _IMPORT.findall(source):
        if module in path:
            raise ValueError(f"{' -> '.join([*path, module])}: a cycle of imports cannot be inlined")
        if module not in order:
            _visit(text(STATIC / module), order, [*path, module])
            order.append(module)


def _wrapped(module: str) -> str:
    """A module's text as a function's body: its imports as destructurings, its ``export`` words
    dropped, and a ``return`` of what it exported."""
    source = text(STATIC / module)
    body = _EXPORT.sub("", _IMPORT.sub(_destructure, source))
    return f"{body}\nreturn {{ {', '.join(_EXPORTED.findall(source))} }};"


def _destructure(found: re.Match[str]) -> str:
    """``import { a, b as c } from "./x.js";`` as ``const { a, b: c } = <x.js's exports>;``."""
    names = re.sub(r"\b(\w+)\s+as\s+(\w+)\b", r"\1: \2", found[1])
    return f"const {{{names}}} = {_var(found[2])};\n"


def _var(module: str) -> str:
    """The name an inlined module's exports go by (``many.js``: ``__tunetrack_many``)."""
    return "__tunetrack_" + re.sub(r"\W", "_", module.removesuffix(".js"))
