"""The notebook panel: a run's (or a project's) state and charts inline in Jupyter, JupyterLab, VS Code
and Colab, live while training runs in the same kernel.

``tunetrack.show(run_or_project)`` returns a ``Panel``; a ``Tracker`` shown as a cell's value is
displayed as one. The panel is an anywidget (``pip install 'tunetrack[notebook]'``): its front end is
one ES module (uPlot, the dashboard's charting library, and ``static/panel.js`` with the dashboard's
chart module, ``static/common.js``, inlined) that the notebook loads from the kernel, so no server is
started and nothing is fetched from the network. While a run is running, a daemon thread re-reads it
every ``interval`` seconds (only what was appended) and sends the new chart data over the widget's
comm; a finished run or a project is read once. Nothing is printed per step. A run of many keys shows
each family of keys (``moe/layer*/expert*/load``) as one card, the band of their percentiles and a
heatmap of key x step, and each key logged as ``tunetrack.Histogram`` as a heatmap of its
distributions: the run page's cards, drawn by its modules (``many.js``, ``dist.js``), from data fitted
to a card (read again at most every ``CARDS_EVERY`` seconds while a run runs). Below, each run's
latest samples (``Tracker.log_table``): its first table's last step, a few rows, long texts cut
(``reader.as_text.samples_text``, the report's wording).
"""

from __future__ import annotations

import functools
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from .. import metric_keys
from ..errors import AmbiguousRun, RunNotFound
from ..histograms import as_json as distribution_json
from ..reader import Run, Series, chart_points, list_runs, numeric_values, open_run, present
from ..reader.across import family_json
from ..reader.as_text import samples_text
from ..reader.families import families
from ..states import State
from . import assets
from .assets import STATIC

#: the widest a panel's chart is drawn (points per series are bounded by four per pixel)
WIDTH = 600
#: charts shown when no keys are given: loss-like keys first, then the others in logging order
MAX_CHARTS = 12
#: the latest samples a panel shows: rows, and characters a cell
SAMPLE_ROWS = 8
SAMPLE_CHARS = 400
#: a card's columns (a family's heatmap and band, a distribution's steps) and a family heatmap's rows
CARD_WIDTH, CARD_ROWS = 400, 40
#: the least seconds between two reads of a running run's cards (a family is every key's every step)
CARDS_EVERY = 10.0


def _front_end() -> tuple[str, str]:
    """The widget's ES module and CSS: uPlot, the build-time vendored copy the dashboard uses, then
    ``static/panel.js`` with the dashboard's modules inlined (``assets.inlined``), and the run page's
    cards' CSS (``cards.css``) before the panel's. A build
    without uPlot shows the state and a note where the charts would be."""
    esm, css = (
        assets.inlined("panel.js"),
        assets.text(STATIC / "cards.css") + assets.text(STATIC / "panel.css"),
    )
    if not assets.has_uplot():
        return esm, css
    return assets.text(assets.UPLOT_JS) + "\n" + esm, assets.text(assets.UPLOT_CSS) + "\n" + css


def _widget_base() -> Any:
    try:
        import anywidget
    except ImportError:
        raise ImportError("the notebook panel needs anywidget: pip install 'tunetrack[notebook]'") from None
    return anywidget.AnyWidget


@functools.cache
def _panel_class() -> type:
    import traitlets

    esm, css = _front_end()

    class Panel(_widget_base()):  # type: ignore[misc]
        """A live panel of runs: ``runs`` (id, name, project, state, step), ``series`` (per run, per
        key: steps and values, None for NaN), ``cards`` (``_cards``: families of keys, distributions)
        and ``samples`` (per run with any, its latest table of samples as ``samples_text`` words it),
        synced to the front end."""

        _esm = esm
        _css = css
        runs: Any = traitlets.List().tag(sync=True)
        series: Any = traitlets.Dict().tag(sync=True)
        samples: Any = traitlets.List().tag(sync=True)
        cards: Any = traitlets.List().tag(sync=True)

        def __init__(self, runs: list[Run], keys: list[str] | None, interval: float) -> None:
            super().__init__()
            self._runs, self._keys, self._interval = runs, keys, interval
            self._stop = threading.Event()
            self._samples: dict[str, tuple[Any, dict[str, Any] | None]] = {}  # run id: (index, table)
            self._cards_read: float | None = None  # time.monotonic() of the last read of the cards
            self.refresh()
            if any(r.state == State.RUNNING for r in runs):
                thread = threading.Thread(target=_follow, args=(weakref.ref(self),), daemon=True)
                thread.start()

        def refresh(self) -> None:
            """Read what the runs appended since the last read and send it to the front end."""
            for run in self._runs:
                run.refresh()
            groups = {} if self._keys else families(_all_keys(self._runs))
            keys = self._keys or _main_keys(self._runs, {k for members in groups.values() for k in members})
            self.series = {
                run.id: {key: _points(run.series(key)) for key in keys if key in run.keys()}
                for run in self._runs
            }
            self.runs = [
                {
                    "id": r.id,
                    "name": r.name,
                    "project": r.project,
                    "state": r.state,
                    "step": r.latest()["step"],
                }
                for r in self._runs
            ]
            if self._cards_read is None or time.monotonic() - self._cards_read >= CARDS_EVERY:
                self._cards_read = time.monotonic()
                cards = _cards(self._runs, groups)
                if cards != self.cards:
                    self.cards = cards
            latest = [(r, self._latest_samples(r)) for r in self._runs]
            shown = [{"run": r.id, "name": r.name, **table} for r, table in latest if table is not None]
            if shown != self.samples:
                self.samples = shown

        def _latest_samples(self, run: Run) -> dict[str, Any] | None:
            """The run's first table of samples at its last step; read again only when the run logged
            another table (a long GRPO run's panel decodes one step per new table, not every step)."""
            index = run.sample_index()
            known = self._samples.get(run.id)
            if known is None or known[0] != index:
                known = (index, samples_text(run, rows=SAMPLE_ROWS, chars=SAMPLE_CHARS))
                self._samples[run.id] = known
            return known[1]

        def stop(self) -> None:
            """Stop following the runs (a notebook's panel stops by itself when they end)."""
            self._stop.set()

    return Panel


def _follow(ref: weakref.ref) -> None:
    """Refresh the panel while any of its runs is running; a panel nothing refers to any more (its
    cell output was cleared) lets the thread end."""
    while True:
        panel = ref()
        if panel is None or panel._stop.wait(panel._interval):
            return
        try:
            panel.refresh()
        except Exception:  # a run being written between two reads: the next tick reads it whole
            continue
        if not any(r["state"] == State.RUNNING for r in panel.runs):
            return
        del panel


def _points(s: Series) -> tuple[list[int], list[float | None]]:
    """A chart's points against the steps: a step logged as None is no point (``present``)."""
    s = present(s)
    return chart_points(s.steps, numeric_values(s), WIDTH)


def _all_keys(runs: list[Run]) -> list[str]:
    return list(dict.fromkeys(k for run in runs for k in run.keys()))


def _main_keys(runs: list[Run], folded: set[str]) -> list[str]:
    """The keys charted when none were asked for: loss-like keys first, a family's keys never (``folded``:
    its card shows them all, where a chart each would show 12 of one family)."""
    seen = [k for k in _all_keys(runs) if k not in folded]
    loss = [k for k in seen if k in metric_keys.LOSS_LIKE]
    return (loss + [k for k in seen if k not in loss])[:MAX_CHARTS]


def _cards(runs: list[Run], groups: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The run page's cards, fitted to ``CARD_WIDTH``: a family of keys (``groups``, its glob: a card per
    run that logged it, ``reader.across.family_json``) and each key logged as ``tunetrack.Histogram``
    (``histograms.as_json``), each with its run's ``run`` id and ``name`` and its ``kind``."""
    out: list[dict[str, Any]] = []
    for run in runs:
        for glob in groups:
            found = family_json(run, glob, CARD_WIDTH, CARD_ROWS)
            if found is None:  # this run has no key of the family
                continue
            out.append({"run": run.id, "name": run.name, "kind": "family", **found})
        for key in run.histogram_keys():
            found = distribution_json(run.distribution(key), CARD_WIDTH)
            out.append({"run": run.id, "name": run.name, "kind": "distribution", **found})
    return out


def show(
    what: Any = None,
    dir: str | os.PathLike[str] | None = None,
    keys: list[str] | None = None,
    interval: float = 1.0,
) -> Any:
    """A panel for ``what``: a ``Tracker``, a ``Run``, a run id (or unique prefix, or name), or a
    project's name (its runs overlaid); None: the store's newest run. Live while a run is running."""
    runs: list[Run]
    if what is None:
        found = list_runs(dir)
        if not found:
            raise RunNotFound("no runs to show yet")
        runs = found[:1]
    elif isinstance(what, Run):
        runs = [what]
    elif hasattr(what, "run_dir") and hasattr(what, "id"):  # a Tracker
        if what.id is None:
            raise RunNotFound("this tracker has not started its run yet: log something first")
        runs = [open_run(what.id, dir=_store_of(what))]
    else:
        runs = _named(str(what), dir)
    return _panel_class()(runs, keys, interval)


def _named(ref: str, dir: str | os.PathLike[str] | None) -> list[Run]:
    """The runs ``ref`` names: the run of that id or name; else the project of that name (a project
    ``p`` is not the run whose id happens to start with ``p``); else the run whose id starts so."""
    found: Run | None = None
    failed: Exception | None = None
    try:
        found = open_run(ref, dir=dir)
    except (RunNotFound, AmbiguousRun) as exc:
        failed = exc
    if found is not None and ref in (found.id, found.name):
        return [found]
    project = list_runs(dir, project=ref)
    if project:
        return project
    if found is not None:
        return [found]
    if isinstance(failed, AmbiguousRun):
        raise failed
    raise RunNotFound(f"no run or project {ref!r} in the store")


def _store_of(tracker: Any) -> str | os.PathLike[str] | None:
    """The store a tracker writes to: its run folder's parent (or URL prefix)."""
    run_dir = tracker.run_dir
    if run_dir is None:
        return None
    return run_dir.parent if isinstance(run_dir, Path) else str(run_dir).rsplit("/", 1)[0]
