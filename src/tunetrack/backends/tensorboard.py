"""TensorBoard event files, mirrored from a run: ``Tracker(backends=["tensorboard"])``, or
``TensorBoardBackend(log_dir=...)``.

Written the way TensorBoard's own users expect to read them (``tensorboard --logdir``,
``EventAccumulator``): every numeric metric as a scalar with its step and wall time, system metrics
as scalars under ``system/``, the config, text samples and the run's final state as text, images as
images, and histograms (``tunetrack.Histogram``) as histograms. A resume from a checkpoint (a rewind) writes
TensorBoard's own "session start" marker at the rewound step, so TensorBoard drops the superseded
points (those after the step resumed from) instead of drawing them twice.

By default the files go to a ``tensorboard/`` folder inside the run's folder (for a run in object
storage: ``./tensorboard/<run id>``). Needs the ``tensorboard`` package (``pip install
'tunetrack[tensorboard]'``), imported when the run starts; TensorFlow is not needed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..histograms import HISTOGRAM
from .base import Row, RunInfo
from .names import tensorboard as names


class TensorBoardBackend:
    name = "tensorboard"

    def __init__(self, log_dir: str | os.PathLike[str] | None = None) -> None:
        self.log_dir = log_dir
        self._writer: Any = None
        self._pb: Any = None
        self._run: RunInfo | None = None
        self._folder = Path()

    def start(self, run: RunInfo) -> None:
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError:
            raise ImportError("the tensorboard backend needs tensorboard: pip install tensorboard") from None
        self._pb = (event_pb2, summary_pb2)
        self._run = run
        if self.log_dir is not None:
            folder = Path(self.log_dir)
        elif isinstance(run.dir, Path):
            folder = run.dir / "tensorboard"
        else:
            folder = Path.cwd() / "tensorboard" / run.id
        # one file per writing process (a resume or another node adds its own), as TensorBoard does
        self._writer = EventFileWriter(str(folder), filename_suffix=f".{os.getpid()}")
        self._folder = folder

    def _event(self, step: int, when: float, **fields: Any) -> Any:
        event_pb2, _ = self._pb
        return event_pb2.Event(wall_time=when, step=int(step), **fields)

    def _scalars(self, rows: Sequence[Row], prefix: str) -> None:
        _, summary_pb2 = self._pb
        for step, when, values in rows:
            scalars = [
                summary_pb2.Summary.Value(tag=prefix + key, simple_value=float(value))
                for key, value in values.items()
                if isinstance(value, (int, float))  # bools as 0/1; strings and None are not scalars
            ]
            if scalars:
                self._writer.add_event(self._event(step, when, summary=summary_pb2.Summary(value=scalars)))

    def _text(self, tag: str, text: str, step: int, when: float) -> None:
        _, summary_pb2 = self._pb
        from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2

        tensor = tensor_pb2.TensorProto(
            dtype=7,  # DT_STRING
            string_val=[text.encode()],
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]
            ),
        )
        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text")
        )
        value = summary_pb2.Summary.Value(tag=tag, metadata=metadata, tensor=tensor)
        self._writer.add_event(self._event(step, when, summary=summary_pb2.Summary(value=[value])))

    def log_config(self, config: dict[str, Any]) -> None:
        text = "```\n" + json.dumps(config, indent=2, default=str, allow_nan=True) + "\n```"
        self._text("config", text, 0, time.time())

    def log(self, rows: Sequence[Row]) -> None:
        self._scalars(rows, "")

    def log_system(self, rows: Sequence[Row]) -> None:
        self._scalars(rows, "system/")

    def log_event(self, event: dict[str, Any]) -> None:
        kind, step, when = (
            event.get("kind"),
            int(event.get("step") or 0),
            float(event.get("time") or time.time()),
        )
        if kind == "rewind":  # TensorBoard drops what was written at this step and after
            event_pb2, _ = self._pb
            start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
            self._writer.add_event(self._event(step + 1, when, session_log=start))
        elif kind == "text":
            rows = event.get("rows") or []
            lines = [
                r.get("text", json.dumps(r, default=str)) if isinstance(r, dict) else str(r) for r in rows
            ]
            self._text(str(event.get("key") or "text"), "\n\n".join(lines), step, when)
        elif kind == HISTOGRAM:
            self._histogram(
                str(event.get("key")), event.get("edges") or [], event.get("counts") or [], step, when
            )
        elif kind == "image" and self._run is not None and isinstance(self._run.dir, Path):
            self._image(str(event.get("key") or "image"), self._run.dir / str(event.get("path")), step, when)

    def _histogram(
        self, tag: str, edges: Sequence[float], counts: Sequence[float], step: int, when: float
    ) -> None:
        """TensorBoard's histogram: each bucket's right edge and count, the first bucket's left edge as
        the min (its values summed as if at their bucket's middle)."""
        if not counts or len(edges) != len(counts) + 1:
            return
        _, summary_pb2 = self._pb
        middles = [(a + b) / 2 for a, b in zip(edges, edges[1:])]
        proto = summary_pb2.HistogramProto(
            min=float(edges[0]),
            max=float(edges[-1]),
            num=float(sum(counts)),
            sum=float(sum(c * m for c, m in zip(counts, middles))),
            sum_squares=float(sum(c * m * m for c, m in zip(counts, middles))),
            bucket_limit=[float(e) for e in edges[1:]],
            bucket=[float(c) for c in counts],
        )
        value = summary_pb2.Summary.Value(tag=tag, histo=proto)
        self._writer.add_event(self._event(step, when, summary=summary_pb2.Summary(value=[value])))

    def _image(self, tag: str, path: Path, step: int, when: float) -> None:
        _, summary_pb2 = self._pb
        try:
            data = path.read_bytes()
            from PIL import Image

            with Image.open(path) as img:
                width, height = img.size
                channels = len(img.getbands())
        except (OSError, ImportError):
            return
        image = summary_pb2.Summary.Image(
            height=height, width=width, colorspace=channels, encoded_image_string=data
        )
        value = summary_pb2.Summary.Value(tag=tag, image=image)
        self._writer.add_event(self._event(step, when, summary=summary_pb2.Summary(value=[value])))

    def held(self, keys: Collection[str], system: bool = False) -> Mapping[str, Collection[int]]:
        """For a replay: the steps the folder's event files already hold for each key, read with
        TensorBoard's own reader (a restart marker hides the points it superseded, as in TensorBoard)."""
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        self._writer.flush()
        accumulator = EventAccumulator(str(self._folder), size_guidance={"scalars": 0})
        accumulator.Reload()
        tags, prefix = set(accumulator.Tags()["scalars"]), "system/" if system else ""
        return {
            key: {e.step for e in accumulator.Scalars(prefix + key)} for key in keys if prefix + key in tags
        }

    def finish(self, state: str) -> None:
        if self._writer is None:
            return
        self._text(names.STATE, state, 0, time.time())
        self._writer.close()
