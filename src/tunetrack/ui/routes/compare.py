"""Runs side by side: their metric keys and the config keys that differ, two runs' config diff, and
the runs as one report file to download."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from ...reader import differing
from ...reader.visible import Visible
from ..report import filename, render
from .deps import CatalogDep, open_or_404

router = APIRouter()


@router.get("/api/compare", summary="Runs side by side: their metric keys, and the config keys that differ")
def compare(id: Annotated[list[str], Query()], catalog: CatalogDep) -> dict[str, Any]:
    rs = [open_or_404(catalog, i) for i in id]
    flats = [r.flat_config for r in rs]
    return {
        "runs": [{"id": r.id, "name": r.name, "state": r.state, "keys": r.keys()} for r in rs],
        "rows": [{"key": k, "values": values} for k, values in differing(flats)],
    }


@router.get("/api/diff", summary="Config keys that differ between two runs")
def diff(a: str, b: str, catalog: CatalogDep) -> dict[str, Any]:
    ra, rb = open_or_404(catalog, a), open_or_404(catalog, b)
    rows = [{"key": k, "a": va, "b": vb} for k, (va, vb) in differing([ra.flat_config, rb.flat_config])]
    return {"a": ra.id, "b": rb.id, "rows": rows}


@router.get("/api/report", summary="The runs as one self-contained HTML file (tunetrack report), to download")
def report(run: Annotated[list[str], Query()], catalog: CatalogDep) -> HTMLResponse:
    rs = [open_or_404(catalog, i) for i in run]
    hidden = catalog.hides if isinstance(catalog, Visible) else None  # a team member's: forks of others
    return HTMLResponse(
        render(rs, hidden=hidden), headers={"Content-Disposition": f'attachment; filename="{filename(rs)}"'}
    )
