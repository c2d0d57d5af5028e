"""The front-end files the package ships: the pages' own (``static/``) and uPlot, the charting library,
which the build puts into ``static/vendor/`` (``hatch_build.py``; it is never committed).

A build made without npm has no uPlot. The dashboard, the report and the notebook panel all go on
without it (their pages say so where the charts would be); this module is the one place that knows
where uPlot lies and says, once, that it is missing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .._warnings import warn_once

STATIC = Path(__file__).parent / "static"
#: uPlot as the build put it into the package, with its licence
UPLOT_JS = STATIC / "vendor" / "uPlot.iife.min.js"
UPLOT_CSS = STATIC / "vendor" / "uPlot.min.css"
UPLOT_LICENSE = STATIC / "vendor" / "uPlot.LICENSE"
NOT_BUILT = "the charting library was not built in: rebuild with npm available"


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
