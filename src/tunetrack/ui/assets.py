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
#: a page script's import of the shared module (one line, the form the page scripts use)
_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./common\.js";\n', re.MULTILINE)
#: an ``export`` of common.js, and the name it exports
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
    """``static/<name>``, an ES module, with the shared module it imports (``common.js``) put in its
    place: for where a script cannot import another file (the report, one self-contained file; the
    notebook panel, one ES module). common.js runs in a function of its own that returns what it
    exports, so its private names cannot clash with the page script's."""
    source = text(STATIC / name)
    found = _IMPORT.search(source)
    if found is None:
        return source
    common = text(STATIC / "common.js")
    body = _EXPORT.sub("", common)
    exported = ", ".join(_EXPORTED.findall(common))
    shared = f"const {{{found[1]}}} = (() => {{\n{body}\nreturn {{ {exported} }};\n}})();\n"
    return source[: found.start()] + shared + source[found.end() :]
