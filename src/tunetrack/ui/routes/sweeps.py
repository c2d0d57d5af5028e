"""A sweep as one experiment (``reader.sweeps``): the runs a ``--where`` expression and brushed axes
pick, the runs table folded by configuration, the hyperparameters against a metric, and a group's
curves as a mean with a band. A bad expression, brush, key or metric is a 422 whose ``detail`` is the
reader's one line (``unexpected '>>' at column 11``), which the page shows beside its filter box."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request

from ...config import setting
from ...errors import one_line
from ...reader import sweeps
from ...reader.groups import ALL_BUT_SEED
from .deps import CatalogDep
from .runs import best_ways

router = APIRouter()

Specs = Annotated[list[str] | None, Query()]


def _configs(request: Request) -> sweeps.Configs:
    return request.app.state.configs


@contextmanager
def _one_line() -> Iterator[None]:
    """A ``WhereError`` or ``ValueError`` (a bad expression, brush, group key or metric) as a 422."""
    try:
        yield
    except ValueError as exc:
        raise HTTPException(422, one_line(exc)) from None


def _selection(
    request: Request,
    catalog: Any,
    where: str | None,
    brush: list[str] | None,
    fields: list[str] | None,
    project: str | None,
    state: str | None,
    best: list[str] | None = None,
) -> sweeps.Selection:
    ways = best_ways(best)
    return sweeps.select(catalog, _configs(request), where, brush or [], fields or [], project, state, ways)


@router.get("/api/select", summary="The ids of the runs a --where expression and brushed axes pick")
def select(
    request: Request,
    catalog: CatalogDep,
    where: str | None = None,
    brush: Specs = None,
    project: str | None = None,
    state: str | None = None,
    best: Specs = None,
) -> dict[str, Any]:
    """``ids`` (newest first) of the runs ``where`` (``tunetrack ls --where``'s language) and every
    ``brush`` (``["config.lr", LOW, HIGH]`` or ``["config.model", [VALUES]]``, JSON) keep; ``best``:
    ``KEY:min|max`` where a key's best is not the usual, as ``/api/runs`` takes it."""
    with _one_line():
        chosen = _selection(request, catalog, where, brush, None, project, state, best)
    return {"ids": [r["id"] for r in chosen.rows]}


@router.get(
    "/api/groups", summary="The runs table folded by configuration: n, mean, std, min, max per column"
)
def groups(
    request: Request,
    catalog: CatalogDep,
    by: str,
    key: Specs = None,
    where: str | None = None,
    brush: Specs = None,
    project: str | None = None,
    state: str | None = None,
    best: Specs = None,
) -> dict[str, Any]:
    """``by``: config keys (``lr,lora.r``) or ``all-but-seed``; ``key``: the columns, ``KEY[:AGG]``."""
    columns = key or []
    with _one_line():
        chosen = _selection(request, catalog, where, brush, columns, project, state, best)
        table = sweeps.group_table(chosen, by, columns)
    for group in table["groups"]:
        group["label"] = sweeps.label(group["key"])
    return table


@router.get("/api/params", summary="Hyperparameters against a metric: parallel coordinates and importance")
def params(
    request: Request,
    catalog: CatalogDep,
    metric: str,
    where: str | None = None,
    project: str | None = None,
    state: str | None = None,
    best: Specs = None,
) -> dict[str, Any]:
    """The varying config keys as axes and ``metric`` (``KEY:AGG``) last, each run's values, and each
    numeric key's Spearman rank correlation with the metric (``reader.sweeps.parameters``). Brushes
    are not applied: the view shows what they leave out, greyed."""
    with _one_line():
        chosen = _selection(request, catalog, where, None, [metric], project, state, best)
        return sweeps.parameters(chosen, metric)


@router.get("/api/config-keys", summary="The config keys of the runs, those whose values differ first")
def config_keys(
    request: Request, catalog: CatalogDep, project: str | None = None, where: str | None = None
) -> dict[str, list[str]]:
    """``varying`` (what a sweep sweeps: the keys to group by) and ``keys`` (every flat config key),
    and ``all-but-seed`` among the choices."""
    with _one_line():
        chosen = _selection(request, catalog, where, None, None, project, None)
    flats = chosen.flats()
    every = sorted({k for f in flats for k in f})
    varying = [k for k in every if len({setting(f.get(k)) for f in flats}) > 1]
    return {"varying": varying, "keys": every, "special": [ALL_BUT_SEED]}


@router.get("/api/compare/groups", summary="One metric of runs, folded per group: a mean and a band by step")
def group_series(
    catalog: CatalogDep,
    id: Annotated[list[str], Query()],
    by: str,
    key: str,
    band: Annotated[str, Query(pattern="^(minmax|std)$")] = "minmax",
    width: int = 1500,
) -> dict[str, Any]:
    with _one_line():
        return _not_found(lambda: sweeps.group_curves(catalog, id, by, key, band, width))


def _not_found(compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A run that is not there is a 404; a name no run has (a group key, a metric) is the 422 of
    every other box, with the closest names."""
    from ...errors import AmbiguousName, TunetrackError, UnknownName

    try:
        return compute()
    except (UnknownName, AmbiguousName) as exc:
        raise HTTPException(422, one_line(exc)) from None
    except TunetrackError as exc:
        raise HTTPException(404, one_line(exc)) from None
