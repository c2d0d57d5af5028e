"""Images as PNG files kept with the run: pixel values as the user meant them, and paths that cannot
leave the run folder. ``Tracker.log_image`` encodes on the caller's thread (one image, asked for
explicitly); images inside a table of samples are encoded here on the writer's thread."""

from __future__ import annotations

import io
import re
from typing import Any


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
