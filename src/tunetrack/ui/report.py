"""A shareable report: one HTML file that holds one or more runs (overview, summary, charts, config
and its differences, events, a table of samples) and needs nothing else to open, neither a server nor the network.

It is made here, beside the dashboard whose page code it reuses (``common.js`` draws its charts with
the uPlot build the dashboard serves), and without FastAPI: ``tunetrack report`` works where the
``ui`` extra is not installed. Everything the page shows travels as JSON in a
``<script type="application/json">`` block, escaped so that no string can end the block, and the
page inserts every user string as text. A Content-Security-Policy lets only the report's own
scripts run and forbids every request.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
import string
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ..histograms import as_json as distribution_json
from ..reader import (
    Run,
    Series,
    chart_points,
    differing,
    numeric_values,
    present,
    provenance,
    run_json,
    run_text,
)
from ..reader.across import family_json
from ..reader.as_text import SAMPLE_CHARS, SAMPLE_ROWS, config_text, event_rows, samples_text
from ..reader.families import families, family_summary, fold
from . import assets
from .assets import STATIC

#: M4 buckets per line: about two per pixel of a wide chart, so a drag-zoom shows detail too, while a
#: line of any length embeds at most 4 * WIDTH points (a 1,000,000-point metric: a few hundred kB)
WIDTH = 2000
#: a family card's (and a distribution card's) columns, and a family heatmap's rows: the card's
#: matrix fitted to about its width on a wide screen, whatever the run's keys and steps (a run of
#: 10,000 keys x 200 steps: about 130 kB a family), as the run page's many.js and dist.js ask for it
CARD_WIDTH = 400
CARD_ROWS = 80
#: significant digits of a heatmap's cells (viridis has 256 colours; the readout says 4 digits)
CELL_DIGITS = 4
#: what the page needs escaped inside its JSON block: ``<`` ``>`` ``&`` (no ``</script>``, no
#: ``<!--``) and the two line separators that older JavaScript parsers take for line ends
_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def chart_count(runs: Sequence[Run]) -> int:
    """How many charts ``render`` will consider (for a progress bar's total): a family card or a
    distribution card counts as one."""
    keys, groups = _training_keys(runs), _families(runs)
    histograms = sum(len(r.histogram_keys()) for r in runs)
    return len(keys) + len(groups) * len(runs) + histograms + len(_system_keys(runs))


def render(
    runs: Sequence[Run],
    on_chart: Callable[[], object] | None = None,
    samples_key: str | None = None,
    samples_step: int | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> str:
    """The report of ``runs`` as one HTML document; ``on_chart()`` is called after each chart's data
    is read and downsampled (the slow part). Each run's table of samples is ``samples_key``'s (default:
    the first it logged) at ``samples_step`` (default: its last). ``hidden``: the runs (by id) its
    reader may not see (a team member's), of which a fork says nothing."""
    data = report_data(runs, on_chart, samples_key, samples_step, hidden)
    built = assets.uplot_built("report", "the report shows no charts")
    # uPlot (a classic script: its global is there when the page's module runs), then the page's
    # module with the shared one inlined (a file cannot import another)
    scripts = [
        ("<script>", assets.text(assets.UPLOT_JS) if built else ""),
        ('<script type="module">', assets.inlined("report.js")),
    ]
    scripts = [(tag, _inline(s, "script")) for tag, s in scripts if s]
    # Only these scripts may run (an injected one, had escaping failed, would not), and nothing loads.
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for _, s in scripts
    )
    return string.Template(assets.text(STATIC / "report.html")).substitute(
        csp=f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:",
        style=_inline(
            assets.text(assets.UPLOT_CSS)
            + assets.text(STATIC / "app.css")
            + assets.text(STATIC / "cards.css")
            + assets.text(STATIC / "report.css"),
            "style",
        ),
        data=json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).translate(
            _JSON_ESCAPES
        ),
        license=html.escape(assets.text(assets.UPLOT_LICENSE) or "(not built in)", quote=False),
        scripts="\n".join(f"{tag}{s}</script>" for tag, s in scripts),
    )


def filename(runs: Sequence[Run]) -> str:
    """A file name that says which runs a report holds."""
    ids = [re.sub(r"[^A-Za-z0-9_.-]", "_", r.id) for r in runs]
    named = "-".join(ids) if len(ids) <= 3 else f"{ids[0]}-and-{len(ids) - 1}-more"
    return f"tunetrack-report-{named}.html"


def report_data(
    runs: Sequence[Run],
    on_chart: Callable[[], object] | None = None,
    samples_key: str | None = None,
    samples_step: int | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """What the page shows, as JSON-safe values (no NaN or infinity: a value the charts cannot draw
    is null, one the tables print is its text, ``"nan"``, ``"inf"``). Raises ValueError when a key or
    step of samples was asked for and no run has it."""
    samples = _samples(runs, samples_key, samples_step)
    groups = _families(runs)
    folded = {key for members in groups.values() for key in members}
    charts = []
    for key in (k for k in _training_keys(runs) if k not in folded):
        lines = [
            _line(f"{r.name} ({r.id})", r.id, present(r.series(key, strict=False)), "step", 0.0) for r in runs
        ]
        charts.append({"group": "training", "key": key, "x": "step", "lines": [x for x in lines if x]})
        if on_chart:
            on_chart()
    for key in _system_keys(runs):
        lines = [
            _line(f"{r.name} ({r.id}) {node}", r.id, s, "time", r.created)
            for r in runs
            for node, s in sorted(r.system_series(key).items())
        ]
        charts.append({"group": "system", "key": key, "x": "relative", "lines": [x for x in lines if x]})
        if on_chart:
            on_chart()
    cards = _family_cards(runs, groups, on_chart)
    distributions = _distribution_cards(runs, on_chart)
    flats = [r.flat_config for r in runs]
    return {
        "generated": time.time(),
        "version": _version(),
        "width": WIDTH,
        "runs": [_overview(r, hidden) for r in runs],
        "charts": [c for c in charts if c["lines"]],
        "families": cards,
        "distributions": distributions,
        "diff": [
            {"key": key, "values": values} for key, values in (differing(flats) if len(runs) > 1 else [])
        ],
        "events": _events(runs),
        "samples": samples,
        "sample_limits": {"rows": SAMPLE_ROWS, "chars": SAMPLE_CHARS},
    }


def _families(runs: Sequence[Run]) -> dict[str, list[str]]:
    """The families of keys (``reader.families``: 4 keys or more that differ only in their numbers)
    among all the runs' keys: each one card per run that has them, never a chart per key."""
    return families(_training_keys(runs))


def _family_cards(
    runs: Sequence[Run], groups: dict[str, list[str]], on_chart: Callable[[], object] | None
) -> list[dict[str, Any]]:
    """Each family's card per run that logged it, as the run page's many.js draws it (``family_json``:
    the band of its keys' percentiles at each step, and the heatmap of key x step) fitted to
    ``CARD_WIDTH`` x ``CARD_ROWS``, its cells to ``CELL_DIGITS`` digits."""
    cards = []
    for glob in groups:
        for r in runs:
            found = family_json(r, glob, CARD_WIDTH, CARD_ROWS)
            if found is None:  # this run has no key of the family
                continue
            found["heat"]["values"] = [[_digits(v) for v in line] for line in found["heat"]["values"]]
            cards.append({"run": r.id, "label": f"{r.name} ({r.id})", **found})
            if on_chart:
                on_chart()
    return cards


def _distribution_cards(runs: Sequence[Run], on_chart: Callable[[], object] | None) -> list[dict[str, Any]]:
    """Each key logged as ``tunetrack.Histogram``, a card per run, as the run page's dist.js draws it
    (``distribution_json``: its histograms on common bins, at most ``CARD_WIDTH`` columns of steps)."""
    cards = []
    for r in runs:
        for key in r.histogram_keys():
            found = distribution_json(r.distribution(key), CARD_WIDTH)
            found["counts"] = [[_digits(v) for v in column] for column in found["counts"]]
            cards.append({"run": r.id, "label": f"{r.name} ({r.id})", **found})
            if on_chart:
                on_chart()
    return cards


def _digits(value: float | None) -> float | None:
    """A heatmap's cell to ``CELL_DIGITS`` significant digits: what its colour and readout show, in a
    third of the characters of a float's full digits."""
    return None if value is None else float(f"{value:.{CELL_DIGITS}g}")


def _samples(runs: Sequence[Run], key: str | None, step: int | None) -> list[dict[str, Any]]:
    """Each run's table of samples (``samples_text``: a step's first rows, long cells cut with a
    marker, so a report of a long GRPO run stays small); a run without one is left out, or, when a
    key or step was asked for, says so."""
    out = []
    for r in runs:
        table = samples_text(r, key, step)
        if table is not None:
            out.append({"run": r.id, "label": f"{r.name} ({r.id})", **table})
        elif key is not None or step is not None:
            wanted = " ".join(
                x
                for x in (
                    f"under {key!r}" if key is not None else "",
                    f"at step {step}" if step is not None else "",
                )
                if x
            )
            out.append({"run": r.id, "label": f"{r.name} ({r.id})", "note": f"no samples {wanted}"})
    if out and all("note" in t for t in out):
        raise ValueError(f"no run has samples {out[0]['note'].removeprefix('no samples ')}")
    return out


def _overview(run: Run, hidden: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The run as ``tunetrack show`` prints it: identity, state, times, where and how it ran, its
    error, each metric's summary, its config (flat, values as text) and its events; ``overview``
    holds what the page prints of them, worded as ``tunetrack show`` words them (``run_text``)."""
    return _plain(
        {
            **run_json(run, hidden=hidden),
            "provenance": provenance(run),
            "error": run.error,
            "summary": _summary(run),
            "config": {k: config_text(v) for k, v in run.flat_config.items()},
            "events": run.events(),
            "overview": run_text(run, hidden),
        }
    )


def _summary(run: Run) -> dict[str, Any]:
    """``Run.summary()`` as the report's overview words it (``reader.families.fold``): past
    ``SUMMARY_SHOWN`` keys, a family of keys is one entry under its glob (``family_summary``, with how
    many ``keys``), so a run of 10,000 keys does not carry 10,000 summaries (a megabyte)."""
    every = run.summary()
    return {
        name: every[name]
        if keys == [name]
        else {**family_summary([every[k] for k in keys]), "keys": len(keys)}
        for name, keys in fold(every)
    }


def _events(runs: Sequence[Run]) -> list[dict[str, str]]:
    """Every run's events as text (``event_rows``), in time order, each with its run's ``name (id)``."""
    timed = []
    for r in runs:
        events = r.events()
        timed += [
            (e["time"], {"run": f"{r.name} ({r.id})", **row}) for e, row in zip(events, event_rows(events))
        ]
    return [row for _, row in sorted(timed, key=lambda pair: pair[0])]


def _training_keys(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(k for r in runs for k in r.keys()))


def _system_keys(runs: Sequence[Run]) -> list[str]:
    return sorted({k for r in runs for k in r.system_keys()})


def _line(label: str, run_id: str, s: Series, x: str, origin: float) -> dict[str, Any] | None:
    """One line of a chart, thinned by M4 (every spike stays); None if it has no number to draw.
    ``x``: ``step``, or ``time`` as seconds since ``origin``."""
    import numpy as np

    values = numeric_values(s)
    if not np.isfinite(values).any():
        return None
    xs, ys = chart_points(s.steps if x == "step" else np.round(s.times - origin, 3), values, WIDTH)
    return {"label": label, "run": run_id, "x": xs, "y": ys}  # y: null for a gap


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it: non-finite floats as their text, NumPy scalars as numbers,
    anything else unknown as its ``str``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return _plain(value.item())
    return str(value)


def _inline(text: str, tag: str) -> str:
    """``text`` made safe inside ``<tag>...</tag>``: ``</tag`` would end the element early, and in a
    script ``<!--`` can keep it from ending. (``<\\/`` and ``<\\!`` mean ``</`` and ``<!`` in a
    JavaScript string, regular expression or comment; ``<\\/`` means ``</`` in CSS.)"""
    text = re.sub(f"</(?={tag})", r"<\\/", text, flags=re.IGNORECASE)
    return text.replace("<!--", "<\\!--") if tag == "script" else text


def _version() -> str:
    try:
        return version("tunetrack")
    except PackageNotFoundError:  # a source tree on PYTHONPATH, not installed
        return "unknown"
