"""The caller-side snapshot: what log() does with tensors on the training thread."""

from __future__ import annotations

import threading

import torch

from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.values import Unsupported, snapshot

item_threads: list[str] = []


class FakeCudaTensor(torch.Tensor):
    """A tensor that reports a CUDA device and records which thread synchronises it (``item``).

    It stands at the library boundary in place of a GPU: the snapshot decides by ``device.type``,
    and ``item()`` is the call that would block the caller on a real GPU.
    """

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", 0)

    def item(self):  # type: ignore[override]
        item_threads.append(threading.current_thread().name)
        return super().item()


def test_gpu_tensor_is_never_synchronised_on_the_caller_thread(root):
    item_threads.clear()
    t = Tracker(dir=root).start()
    value = torch.tensor(3.0).as_subclass(FakeCudaTensor)
    t.log({"loss": value}, step=1)
    value.add_(10.0)  # in place after log(): the record keeps 3.0
    t.finish()
    assert open_run(t.id, dir=root).series("loss").values.tolist() == [3.0]
    assert item_threads and all(name.startswith("tunetrack-writer") for name in item_threads)


def test_snapshot_flattens_and_marks():
    row = snapshot(
        {"a": {"b": torch.tensor([1.5]), "c": {"d": 2}}, "e": torch.ones(3), "f": [1]}, strict=False
    )
    assert row["a/b"] == 1.5 and row["a/c/d"] == 2
    assert isinstance(row["e"], Unsupported) and isinstance(row["f"], Unsupported)
    assert row["e"].typename == "torch.Tensor"
