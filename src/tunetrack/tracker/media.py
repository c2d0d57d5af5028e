"""Images logged with a run (DDPO/AlignProp samples, generations): encoded as PNG on the caller's
thread (images are rare and large), stored by the writer as files inside the run folder.

Paths are built from a sanitized key, so a key like ``../../etc`` can never leave the run folder.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._warnings import warn_once
from ..writer import MediaFile


def safe_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("._") or "image"


def to_pil(image: Any) -> Any:
    """A PIL image from a PIL image, a NumPy array or a tensor (HW, HWC, or CHW when the first axis
    alone looks like channels, as torchvision and TensorBoard lay them out).

    uint8 is read as 0-255 and floats as 0-1 (clipped); other integers as 0-255, booleans as black and
    white. A uint8 tensor keeps its dtype: converting it to float first would make it all white.
    """
    import numpy as np
    from PIL import Image

    if isinstance(image, Image.Image):
        return image
    if hasattr(image, "detach"):  # a tensor; NumPy has no bfloat16, so other dtypes go through float
        image = image.detach().cpu()
        image = image.numpy() if str(image.dtype) == "torch.uint8" else image.float().numpy()
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[0] in (1, 3, 4) and array.shape[-1] not in (1, 3, 4):
        array = np.moveaxis(array, 0, -1)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.dtype == np.bool_:
        array = array.astype(np.uint8) * 255
    elif array.dtype.kind in "iu" and array.dtype != np.uint8:
        array = np.clip(array, 0, 255).astype(np.uint8)
    elif array.dtype != np.uint8:
        array = (np.clip(array.astype(np.float64), 0.0, 1.0) * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def image_path(key: str, step: int, index: int = 0) -> str:
    """Where an image is kept, relative to the run folder."""
    return f"media/images/{safe_name(key)}/{step}_{index}.png"


def encode_png(image: Any) -> bytes:
    """The PNG file of a PIL image, a NumPy array or a tensor (see ``to_pil``)."""
    buffer = io.BytesIO()
    to_pil(image).save(buffer, format="PNG")
    return buffer.getvalue()


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

    def log_text(
        self, key: str, rows: str | Mapping[str, Any] | Sequence[Mapping[str, Any]], step: int | None = None
    ) -> None:
        """Text samples (generations, GRPO completions) at ``step``: a string, a dict, or a list of dicts."""
        if isinstance(rows, str):
            rows = [{"text": rows}]
        elif isinstance(rows, Mapping):
            rows = [rows]
        self.event("text", step=step, key=key, rows=list(rows))

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
