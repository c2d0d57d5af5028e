"""A run's stored images, as the run page shows them."""

from __future__ import annotations

import mimetypes

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from .deps import CatalogDep, open_or_404

router = APIRouter()


@router.get("/api/runs/{run_id}/media/{path:path}", summary="An image stored with the run")
def media(run_id: str, path: str, catalog: CatalogDep) -> Response:
    data = open_or_404(catalog, run_id).read_media(path)
    if data is None:
        raise HTTPException(404, "no such media file in this run")
    return Response(data, media_type=mimetypes.guess_type(path)[0] or "application/octet-stream")
