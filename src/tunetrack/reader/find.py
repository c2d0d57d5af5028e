"""Finding runs in a store: all of them (filtered), or one by id, unique name or unique id prefix."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from .. import settings
from ..errors import AmbiguousRun, RunNotFound
from ..gc_pause import no_cyclic_gc
from ..store import Store, open_store
from . import listing_cache
from .names import closest
from .run import Run, load


def store_at(dir: str | os.PathLike[str] | None = None) -> Store:
    """The store readers look in: ``dir``, else ``$TUNETRACK_DIR``, else ``./tunetrack_runs``."""
    return open_store(settings.store_dir(dir))


def store_name(dir: str | os.PathLike[str] | None = None) -> str:
    """Where ``store_at(dir)`` looks, as a user reads it (a folder's path, a bucket's URL)."""
    return str(store_at(dir))


def run_exists(dir: str | os.PathLike[str] | None, run_id: str) -> bool:
    """Whether the store at ``dir`` holds the run ``run_id`` (an importer's "already imported")."""
    return store_at(dir).run(run_id) is not None


def split_run_step(spec: str) -> tuple[str, int | None]:
    """``RUN@STEP`` (a checkpoint, a branch point) as (run, step); ``RUN`` alone as (run, None). A
    run's name may hold ``@``, so the step is what follows the last one. ``ValueError`` (one line)
    for a step that is no integer of 0 or more."""
    ref, at, step = spec.rpartition("@")
    if not at:
        return spec, None
    try:
        number = int(step)
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(f"{spec!r}: the step after '@' must be an integer of 0 or more (RUN@STEP)")
    return ref, number


def all_runs(store: Store) -> list[Run]:
    """Every run of the store. What was read of ended runs is handed back to the store for the next
    listing (``listing_cache.entry``): a folder of 10,000 runs is then one file and one directory."""
    entries = store.entries()
    with no_cyclic_gc():
        runs = [run for run_id, stamp in entries if (run := load(store, run_id, stamp)) is not None]
    keep(store, runs, {run_id for run_id, _ in entries})
    return runs


def keep(store: Store, runs: Sequence[Run], present: set[str]) -> None:
    """Hand what was read of ``runs`` to the store's listing (``Store.keep_listed``)."""
    kept = {run.id: kept for run in runs if (kept := listing_cache.entry(run)) is not None}
    store.keep_listed(kept, present)


def list_runs(
    dir: str | os.PathLike[str] | None = None,
    project: str | None = None,
    state: str | None = None,
    tags: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[Run]:
    """Runs in the store, newest first, filtered by project, state and tags (all must match); with
    ``limit``, the newest that many only, which opens only the runs it returns where the store's
    index dates the others (``Store.created_times``: 20 of 100,000 runs)."""

    def wanted(r: Run) -> bool:
        return (
            (project is None or r.project == project)
            and (not tags or set(tags) <= set(r.tags))
            and (state is None or r.state == state)
        )

    store = store_at(dir)
    if limit is not None:
        return newest(store, wanted, limit)
    return sorted(filter(wanted, all_runs(store)), key=lambda r: r.created, reverse=True)


def newest(store: Store, wanted: Callable[[Run], bool], limit: int) -> list[Run]:
    """The ``limit`` newest runs of ``store`` that are ``wanted``: the runs the store cannot date
    unread are opened first, then the others newest first until enough are found."""
    entries = store.entries()
    created = store.created_times()
    with no_cyclic_gc():
        undated = [run for i, stamp in entries if i not in created and (run := load(store, i, stamp))]
    keep(store, undated, {run_id for run_id, _ in entries})
    order = sorted(
        [(created[i], i, stamp, None) for i, stamp in entries if i in created]
        + [(run.created, run.id, None, run) for run in undated],
        key=lambda each: each[0],
        reverse=True,
    )
    out: list[Run] = []
    for _, run_id, stamp, run in order:
        run = run or load(store, run_id, stamp)
        if run is not None and wanted(run):
            out.append(run)
            if len(out) == limit:
                break
    return out


def no_project(dir: str | os.PathLike[str] | None, project: str) -> str | None:
    """What a user is told when no run of the store is in ``project`` (None when one is): the
    projects there are, the closest first."""
    projects = sorted({r.project for r in all_runs(store_at(dir)) if r.project})
    if project in projects:
        return None
    close = closest(project, projects)
    hint = (
        f"; did you mean {' or '.join(close)}?" if close else f" (projects: {', '.join(projects) or 'none'})"
    )
    return f"no runs in project {project!r} in {store_name(dir)}{hint}"


def open_run(ref: str, dir: str | os.PathLike[str] | None = None) -> Run:
    """A run by id, unique name, or unique id prefix."""
    return find_run(store_at(dir), ref)


def find_run(store: Store, ref: str) -> Run:
    """A run of ``store`` by id, unique name, or unique id prefix (in that order)."""
    if not ref:
        raise RunNotFound("an empty string names no run")
    return only(store, ref, named(store, ref), lambda: [r.name for r in all_runs(store)])


def only(store: Store, ref: str, found: Sequence[Run], names: Callable[[], Sequence[str]]) -> Run:
    """The one run of ``found`` (the runs ``ref`` names), else the error that says why: the runs it
    matches, or the closest of ``names`` (the runs' names, only asked for then). A reader that sees
    only some runs (``visible``) passes only those, so no error names another."""
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        listed = ", ".join(f"{r.id} ({r.name})" for r in found[:10])
        raise AmbiguousRun(f"{ref!r} matches {len(found)} runs: {listed}")
    close = closest(ref, names())
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise RunNotFound(f"no run {ref!r} in {store}{hint}")


def named(store: Store, ref: str) -> list[Run]:
    """The runs ``ref`` names: the run of that id; else those of that name (the name as the run's
    edits left it); else those whose id starts with it. A name is typed whole and a prefix is a
    shortcut, so a run named ``a`` is found by ``a`` even when another run's id starts with ``a``."""
    exact = load(store, ref)
    if exact is not None:
        return [exact]
    runs = all_runs(store)
    return [r for r in runs if r.name == ref] or [r for r in runs if r.id.startswith(ref)]
