"""Samples and images logged with a run. Tables of samples (generations, GRPO completions) are handed
to the writer as they are: it reads, types and encodes them (``writer.samples``), so training pays for a
reference. A lone image (``log_image``: DDPO/AlignProp samples) is encoded as PNG on the caller's
thread (images are rare and large) and stored by the writer inside the run folder.

Paths are built from a sanitized key, so a key like ``../../etc`` can never leave the run folder.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._warnings import warn_once
from ..writer import MediaFile, Table
from ..writer.images import encode_png, image_path


class Media:
    """Text samples and images, as the Tracker records them (a part of ``Tracker``)."""

    id: str | None
    strict: bool
    _step: int
    run_dir: Any

    if TYPE_CHECKING:  # the Tracker's own

        def event(self, kind: str, step: int | None = None, **data: Any) -> None: ...

        def _recording(self) -> bool: ...

        def _coerce_step(self, step: Any) -> int: ...

        def _send(self, message: Any) -> None: ...

    def log_table(self, key: str, rows: Any, step: int | None = None) -> None:
        """A table of samples (generations, GRPO completions with their rewards) at ``step`` (default:
        the current step): a list of dicts or a pandas DataFrame. Columns may hold text, numbers,
        bools, chat messages (lists of ``{"role", "content"}``) and images (PIL, arrays, tensors).

        The caller pays for a reference only: reading, typing and encoding the table happen on the
        writer thread, so do not change the rows after handing them over (a list is copied, its
        dicts are not). Odd input is stored as well as it can be and warned about once; this never
        raises (``strict`` included: the table is read after the call returned).
        """
        try:
            if not self._recording():
                return
            step = self._step if step is None else self._coerce_step(step)
            if isinstance(rows, list):
                rows = list(rows)
            self._send(Table(key, step, time.time(), rows))
        except Exception as exc:
            warn_once(
                f"table:{self.id}:{key}", f"log_table({key!r}) ignored a table it could not take: {exc!r}"
            )

    def log_text(
        self, key: str, rows: str | Mapping[str, Any] | Sequence[Mapping[str, Any]], step: int | None = None
    ) -> None:
        """Text samples at ``step``: a string (one row whose ``text`` is it), a dict (one row) or a list
        of dicts; the same as ``log_table``."""
        self.log_table(key, rows, step)

    def log_image(self, key: str, image: Any, step: int | None = None, index: int = 0) -> str | None:
        """Store an image (PIL, NumPy array or tensor) as a PNG with the run and record an ``image``
        event; returns its path inside the run. Encoding happens on the calling thread (images are
        rare and large), storing on the writer's."""
        if not self._recording():
            return None
        step = self._step if step is None else self._coerce_step(step)
        if self.run_dir is None:
            return None
        rel = image_path(key, step, index)
        try:
            data = encode_png(image)
        except Exception as exc:
            if self.strict:
                raise
            warn_once(f"image:{self.id}:{key}", f"could not store image {key!r}: {exc!r}")
            return None
        self._send(MediaFile(rel, data))
        self.event("image", step=step, key=key, path=rel)
        return rel
