"""Reading a Comet offline archive (what comet_ml writes offline and ``comet upload`` sends: a zip with
``experiment.json`` and ``messages.json``, one JSON message a line) with comet_ml's own message
classes, which ``comet upload`` parses each line with: independent of tunetrack's reader."""

from __future__ import annotations

import json
import zipfile
from collections import defaultdict
from pathlib import Path


def _messages(archive: Path) -> list[dict]:
    from comet_ml.config import OFFLINE_EXPERIMENT_MESSAGES_JSON_FILE_NAME

    with zipfile.ZipFile(archive) as zipped:
        return [
            json.loads(line) for line in zipped.read(OFFLINE_EXPERIMENT_MESSAGES_JSON_FILE_NAME).splitlines()
        ]


def started(archive: Path) -> int:
    """When the archive's attempt started (ms), from its experiment file."""
    with zipfile.ZipFile(archive) as zipped:
        return json.loads(zipped.read("experiment.json"))["start_time"]


def comet_points(archive: Path, times: bool = False) -> dict[str, list[tuple]]:
    """Every metric point of an archive, ``{name: [(step, value), ...]}`` in logged order (with
    ``times``: ``(step, unix time, value)``), parsed by comet_ml's ``MetricMessage``."""
    from comet_ml.messages import MetricMessage

    out: dict[str, list[tuple]] = defaultdict(list)
    for message in _messages(archive):
        if message["type"] == MetricMessage.type:
            parsed = MetricMessage.from_message_dict(message["payload"])
            metric = parsed.metric
            when = (parsed.local_timestamp / 1000,) if times else ()
            out[metric["metricName"]].append((metric["step"], *when, metric["metricValue"]))
    return out


def comet_params(archive: Path) -> dict[str, object]:
    """The params of an archive as logged (the last value of each), parsed by comet_ml's
    ``ParameterMessage`` as ``comet upload`` parses them (``comet offline`` shows no list values)."""
    from comet_ml.messages import ParameterMessage

    out = {}
    for message in _messages(archive):
        if message["type"] == ParameterMessage.type:
            param = ParameterMessage.from_message_dict(message["payload"])
            found = param.param or param.params
            out[found["paramName"]] = found["paramValue"]
    return out


def comet_others(archive: Path) -> dict[str, object]:
    """The Others of an archive (``log_other``), parsed by comet_ml's ``LogOtherMessage`` as ``comet
    upload`` parses them (``comet offline`` reads only their older form)."""
    from comet_ml.messages import LogOtherMessage

    messages = _messages(archive)
    others = [
        LogOtherMessage.from_db_message_dict(m["payload"])
        for m in messages
        if m["type"] == LogOtherMessage.type
    ]
    return {o.key: o.value for o in others}


def comet_texts(archive: Path) -> list[dict]:
    """The text samples (``log_text``): each a file in the archive, named by its upload message."""
    messages = _messages(archive)
    with zipfile.ZipFile(archive) as zipped:
        return [
            {**m["payload"]["metadata"], "step": m["payload"]["additional_params"]["step"]}
            | {"text": zipped.read(m["payload"]["file_path"]).decode()}
            for m in messages
            if m["type"] == "file_upload" and m["payload"]["upload_type"] == "text-sample"
        ]


def comet_remote_models(archive: Path) -> dict[str, list[dict]]:
    """Each remote model of an archive (``log_remote_model``): ``{model name: [{url, metadata}]}``."""
    out: dict[str, list[dict]] = {}
    for m in _messages(archive):
        if m["type"] == "remote_model":
            out[m["payload"]["model_name"]] = [
                {"url": a["remoteUrl"], "metadata": json.loads(a["metadata"])}
                for a in m["payload"]["remote_assets"]
            ]
    return out
