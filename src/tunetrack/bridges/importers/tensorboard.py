"""TensorBoard log dirs: ``tunetrack import tensorboard LOGDIR``.

A run is what TensorBoard calls one: a folder holding event files (the log dir itself, or any folder
below it), named by its path under the log dir. Read with TensorBoard's ``EventAccumulator``, so what is
imported is what TensorBoard draws (points superseded by a restart marker are left out, as there):
scalars (``SummaryWriter.add_scalar`` and TF2's tensor scalars) with their steps and wall times,
histograms (``add_histogram``) as ``tunetrack.Histogram``s, the hparams a run recorded as its config, and a tunetrack mirror's config and final state (the
``config`` and ``tunetrack/state`` texts the tensorboard backend writes). TensorBoard has no run
state: other runs are imported ``finished``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...backends.names import tensorboard as names
from ...histograms import HISTOGRAM, Histogram
from ...states import STATES, State
from .source import SourceError, SourceRun, rows_of


def runs(logdir: str) -> Iterator[SourceRun]:
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise ImportError("importing TensorBoard logs needs tensorboard: pip install tensorboard") from None
    root = Path(logdir)
    if not root.is_dir():
        raise SourceError(f"no such folder: {logdir}")
    folders = sorted({path.parent for path in root.rglob("*tfevents*") if path.is_file()})
    if not folders:
        raise SourceError(f"no TensorBoard event files under {logdir}")
    for folder in folders:
        accumulator = EventAccumulator(
            str(folder), size_guidance={"scalars": 0, "tensors": 0, "histograms": 0}
        )
        accumulator.Reload()
        yield _run(root, folder, accumulator)


def _run(root: Path, folder: Path, accumulator: Any) -> SourceRun:
    points = sorted(_points(accumulator), key=lambda p: (p[0], p[1]))  # by time, then step
    texts = _texts(accumulator)
    config = _hparams(accumulator)
    if texts.get("config", "").startswith("```"):  # a tunetrack mirror's config, as JSON in a code block
        with contextlib.suppress(ValueError):
            config = {**json.loads(texts["config"].strip("`\n")), **config}
    name = folder.relative_to(root).as_posix() if folder != root else root.resolve().name
    state = texts.get(names.STATE, State.FINISHED)
    try:
        created = accumulator.FirstEventTimestamp()
    except ValueError:  # files without any event
        created = points[0][0] if points else folder.stat().st_mtime
    files = sorted(path.name for path in folder.iterdir() if "tfevents" in path.name)
    return SourceRun(
        key="tensorboard:" + ",".join(files),  # the files' names hold their host, pid and start time
        name=name,
        created=created,
        rows=lambda: rows_of(points),
        events=lambda: _histograms(accumulator),
        config=config,
        state=state if state in STATES else State.FINISHED,
        ended=points[-1][0] if points else created,
        origin={"from": "tensorboard", "path": str(folder.resolve())},
    )


def _points(accumulator: Any) -> Iterator[tuple[float, int, str, float]]:
    """``(wall time, step, tag, value)`` of every scalar, written either way TensorBoard takes them."""
    tags = accumulator.Tags()
    for tag in tags.get("scalars", []):
        for event in accumulator.Scalars(tag):
            yield event.wall_time, event.step, tag, float(event.value)
    from tensorboard.util import tensor_util

    for tag in tags.get("tensors", []):
        if accumulator.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
            continue
        for event in accumulator.Tensors(tag):
            yield event.wall_time, event.step, tag, float(tensor_util.make_ndarray(event.tensor_proto).item())


def _histograms(accumulator: Any) -> Iterator[tuple[str, int, float, dict[str, Any]]]:
    """Every histogram as a ``tunetrack.Histogram``'s event: its buckets between the recorded min and
    max (TensorBoard's first bucket starts at the min; a last limit past the max, TensorFlow's
    ``DBL_MAX``, ends at the max)."""
    for tag in accumulator.Tags().get("histograms", []):
        for event in accumulator.Histograms(tag):
            h = event.histogram_value
            limits = [min(max(float(x), h.min), h.max) for x in h.bucket_limit[:-1]]
            edges = [float(h.min), *limits, float(h.max)]
            counts = [float(c) for c in h.bucket]
            yield HISTOGRAM, event.step, event.wall_time, Histogram(counts=counts, edges=edges).data(tag)


def _texts(accumulator: Any) -> dict[str, str]:
    """The last text of each text tag."""
    out = {}
    for tag in accumulator.Tags().get("tensors", []):
        if accumulator.SummaryMetadata(tag).plugin_data.plugin_name == "text":
            strings = accumulator.Tensors(tag)[-1].tensor_proto.string_val
            if strings:
                out[tag] = strings[0].decode("utf-8", "replace")
    return out


def _hparams(accumulator: Any) -> dict[str, Any]:
    """The hparams of the run's session-start record (``SummaryWriter.add_hparams``, the hparams API)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    config: dict[str, Any] = {}
    try:
        contents = accumulator.PluginTagToContent("hparams")
    except KeyError:  # no hparams in this run
        return config
    for content in contents.values():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.WhichOneof("data") != "session_start_info":
            continue
        for key, value in data.session_start_info.hparams.items():
            kind = value.WhichOneof("kind")
            config[key] = getattr(value, kind) if kind else None
    return config
