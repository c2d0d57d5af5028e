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

    def to(self, *args, **kwargs):  # type: ignore[override]
        return super().to(*args, **kwargs).clone()  # to the host: on a GPU, always a new tensor

    def item(self):  # type: ignore[override]
        item_threads.append(threading.current_thread().name)
        return super().item()


class FakeEvent:
    """``torch.cuda.Event`` without a GPU: recorded on the caller's thread, polled (``query``) by the
    writer until the copy it stands behind has "landed" (the third query)."""

    recorded: list[str] = []
    queried: list[str] = []

    def record(self, stream: object) -> None:
        self.recorded.append(threading.current_thread().name)

    def query(self) -> bool:
        self.queried.append(threading.current_thread().name)
        return len(self.queried) >= 3


def test_gpu_tensor_is_never_synchronised_on_the_caller_thread(root, monkeypatch):
    """The caller only queues the copy and records the event; the writer polls the event (never a
    synchronising wait) and reads the number. The real GPU proof is tests/gpu/test_gpu_sync.py."""
    item_threads.clear()
    FakeEvent.recorded.clear()
    FakeEvent.queried.clear()
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: None)
    t = Tracker(dir=root).start()
    value = torch.tensor(3.0).as_subclass(FakeCudaTensor)
    t.log({"loss": value}, step=1)
    value.add_(10.0)  # in place after log(): the record keeps 3.0
    t.finish()
    assert open_run(t.id, dir=root).series("loss").values.tolist() == [3.0]
    assert FakeEvent.recorded == [threading.main_thread().name]
    assert len(FakeEvent.queried) == 3
    assert all(name.startswith("tunetrack-writer") for name in FakeEvent.queried + item_threads)
    assert item_threads


def test_snapshot_flattens_and_marks():
    row = snapshot(
        {"a": {"b": torch.tensor([1.5]), "c": {"d": 2}}, "e": torch.ones(3), "f": [1]}, strict=False
    )
    assert row["a/b"] == 1.5 and row["a/c/d"] == 2
    assert isinstance(row["e"], Unsupported) and isinstance(row["f"], Unsupported)
    assert row["e"].typename == "torch.Tensor"
