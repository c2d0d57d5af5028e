"""Images logged with a run: stored as PNGs inside the run folder, pixel values as the user meant them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from tunetrack import Tracker
from tunetrack.reader import open_run


def _pixels(run_dir, rel):
    return np.asarray(Image.open(run_dir / rel))


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (torch.full((3, 2, 2), 200, dtype=torch.uint8), 200),  # uint8 tensor: 0-255, not "all white"
        (torch.full((3, 2, 2), 0.5), 128),  # float tensor, CHW: 0-1
        (torch.full((2, 2, 3), 0.25, dtype=torch.bfloat16), 64),  # no NumPy bfloat16: through float
        (np.full((2, 2, 3), 7, dtype=np.uint8), 7),
        (np.full((2, 2), 300, dtype=np.int64), 255),  # other integers: 0-255, clipped
        (np.ones((2, 2), dtype=bool), 255),
        (np.full((1, 2, 2), 2.0), 255),  # floats clipped to 1.0
    ],
)
def test_log_image_keeps_the_pixel_values(root, image, expected):
    t = Tracker(dir=root, system=False).start()
    rel = t.log_image("sample", image, step=3)
    t.finish()
    assert rel == "media/images/sample/3_0.png"
    pixels = _pixels(t.run_dir, rel)
    assert pixels.shape[:2] == (2, 2) and (pixels == expected).all()
    (event,) = [e for e in open_run(t.id, dir=root).events() if e["kind"] == "image"]
    assert (event["step"], event["key"], event["path"]) == (3, "sample", rel)


def test_an_image_key_cannot_leave_the_run_folder(root):
    t = Tracker(dir=root, system=False).start()
    rel = t.log_image("../../etc/passwd", np.zeros((2, 2), dtype=np.uint8))
    t.finish()
    assert (t.run_dir / rel).resolve().is_relative_to(t.run_dir.resolve())


def test_an_unreadable_image_warns_and_training_goes_on(root):
    t = Tracker(dir=root, system=False).start()
    with pytest.warns(UserWarning, match="could not store image"):
        assert t.log_image("bad", object()) is None
    t.log({"loss": 1.0})
    t.finish()
    assert open_run(t.id, dir=root).series("loss").values.tolist() == [1.0]
