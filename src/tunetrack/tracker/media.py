"""Samples and images logged with a run. Tables of samples (generations, GRPO completions) are handed
to the writer as they are: it reads, types and encodes them (``writer.samples``), so training pays for a
reference. A lone image (``log_image``: DDPO/AlignProp samples) is encoded as PNG on the caller's
thread (images are rare and large) and stored by the writer inside the run folder.

Paths are built from a sanitized key, so a key like ``../../etc`` can never leave the run folder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .._warnings import warn_once
from ..writer import MediaFile, Table
from ..writer.images import encode_png, image_path


class Media:
    """Text samples and images, as the Tracker records them (a part of ``Tracker``). ``recording``
    says whether this process records the run (starting it on the first call), ``send`` hands a
    message to its writer, ``step`` turns the caller's step (None: the current one) into the step
    recorded, ``record`` records an event, ``run`` gives the run's id and folder."""

    def __init__(
        self,
        strict: bool,
        recording: Callable[[], bool],
        send: Callable[[Table | MediaFile], None],
        step: Callable[[Any], int],
        record: Callable[..., None],
        run: Callable[[], tuple[str | None, Any]],
    ) -> None:
        self._strict = strict
        self._recording = recording
        self._send = send
        self._step = step
        self._record = record
        self._run = run  # the run's id and folder (None without a store)

    def table(self, key: str, rows: Any, step: int | None) -> None:
        """See ``Tracker.log_table``."""
        try:
            if isinstance(rows, list):
                rows = list(rows)
            if self._recording():
                self._send(Table(key, self._step(step), time.time(), rows))
        except Exception as exc:
            warn_once(
                f"table:{self._run()[0]}:{key}",
                f"log_table({key!r}) ignored a table it could not take: {exc!r}",
            )

    def image(self, key: str, image: Any, step: int | None, index: int) -> str | None:
        """See ``Tracker.log_image``."""
        if not self._recording():
            return None
        step = self._step(step)
        run_id, run_dir = self._run()
        if run_dir is None:
            return None
        rel = image_path(key, step, index)
        try:
            data = encode_png(image)
        except Exception as exc:
            if self._strict:
                raise
            warn_once(f"image:{run_id}:{key}", f"could not store image {key!r}: {exc!r}")
            return None
        self._send(MediaFile(rel, data))
        self._record("image", step=step, key=key, path=rel)
        return rel
