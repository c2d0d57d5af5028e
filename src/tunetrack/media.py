"""Images logged with a run (DDPO/AlignProp samples, generations): PNG files inside the run folder.

Paths are built from a sanitized key, so a key like ``../../etc`` can never leave the run folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def safe_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("._") or "image"


def to_pil(image: Any) -> Any:
    """A PIL image from a PIL image, a NumPy array (HW, HWC or CHW; uint8 or floats in [0, 1]) or a tensor."""
    import numpy as np
    from PIL import Image

    if isinstance(image, Image.Image):
        return image
    if hasattr(image, "detach"):
        image = image.detach().float().cpu().numpy()
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[0] in (1, 3, 4) and array.shape[-1] not in (1, 3, 4):
        array = np.moveaxis(array, 0, -1)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.dtype != np.uint8:
        array = (np.clip(array.astype(np.float64), 0.0, 1.0) * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def save_image(run_dir: Path, key: str, image: Any, step: int, index: int = 0) -> str:
    """Write the PNG and return its path relative to the run folder."""
    rel = Path("media") / "images" / safe_name(key) / f"{step}_{index}.png"
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    to_pil(image).save(path, format="PNG")
    return rel.as_posix()
