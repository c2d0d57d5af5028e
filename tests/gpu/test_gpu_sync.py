"""``log()`` with 0-d CUDA tensors on a real GPU: it never synchronizes the device on the training
thread, and the value recorded is the one the tensor had at ``log()`` time.

``torch.cuda.set_sync_debug_mode`` is process-wide (PyTorch keeps one setting for all threads):
"error" makes every synchronizing CUDA call raise, on whichever thread makes it, and "warn" turns
each into a warning on the calling thread. The tests use both: "error" as a user who debugs their
training loop with it would (the whole run under it, ``finish()`` included), "warn" to see which
thread synchronizes.
"""

from __future__ import annotations

import threading
import warnings

import torch
from gpuwork import TrainStep, sync_warnings

from tunetrack import Tracker, open_run

STEPS = 200
BUMP = 1000.0  # added in place to the logged tensor right after log()


def _train_and_log(tracker: Tracker, work: TrainStep) -> list[torch.Tensor]:
    """``STEPS`` training steps, each logging its loss (a 0-d CUDA tensor, and a bf16 copy) and then
    changing that tensor in place. Returns the log-time values as CUDA tensors (never read here)."""
    expected = []
    for step in range(1, STEPS + 1):
        loss = work.step()
        half = loss.to(torch.bfloat16)
        tracker.log({"loss": loss, "loss_bf16": half}, step=step)
        expected.append(torch.stack([loss, half.float()]))  # a copy, queued before the change
        loss.add_(BUMP)  # in place, right after log(): the record must keep the log-time value
        half.add_(BUMP)
    return expected


def _recorded(tracker: Tracker, root, key: str) -> list[float]:
    return open_run(tracker.id, dir=root).series(key).values.tolist()


def test_logging_cuda_tensors_under_sync_debug_error(root):
    """The issue's proof: every step logs 0-d CUDA tensors under ``set_sync_debug_mode("error")``;
    nothing raises on the training thread (``strict=True``: ``log()`` raises instead of warning), and
    every recorded value is the log-time one. The mode stays on until ``finish()`` has returned, as
    in a run that is debugged this way from start to end."""
    work = TrainStep()
    work.step()  # warm-up outside the mode: cuBLAS handles, the optimizer's state
    torch.cuda.synchronize()
    tracker = Tracker(dir=root, system=False, strict=True).start()
    shown: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = sync_warnings(shown)  # tunetrack's own warnings, from any thread
        torch.cuda.set_sync_debug_mode("error")
        try:
            for _ in range(5):
                work.step()  # the control: the training step itself never synchronizes
            expected = _train_and_log(tracker, work)
            tracker.finish()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    values = torch.stack(expected).tolist()  # read only now, outside the mode
    loss, loss_bf16 = _recorded(tracker, root, "loss"), _recorded(tracker, root, "loss_bf16")
    assert len(loss) == len(loss_bf16) == STEPS, (
        f"{STEPS} steps logged, {len(loss)} loss and {len(loss_bf16)} loss_bf16 values recorded; "
        f"warnings (thread, message): {shown[:5]}"
    )
    assert loss == [v[0] for v in values]
    assert loss_bf16 == [v[1] for v in values]
    assert all(v < BUMP for v in loss)  # none of the in-place changes leaked into the record


def test_only_tunetrack_threads_synchronize_never_the_training_thread(root):
    """Under "warn", every synchronizing CUDA call shows a warning on the thread that made it: the
    training thread makes none while it logs every step (with system metrics on, every 0.1 s), and
    every value is still recorded as it was at ``log()`` time. A deliberate ``.item()`` on a helper
    thread first proves that the warnings are seen, whichever thread makes them."""
    work = TrainStep()
    work.step()
    torch.cuda.synchronize()
    me = threading.current_thread().name
    shown: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = sync_warnings(shown)
        torch.cuda.set_sync_debug_mode("warn")
        try:
            probe = threading.Thread(target=lambda: work.step().item(), name="probe")
            probe.start()
            probe.join()
            tracker = Tracker(dir=root, system_interval=0.1).start()
            shown_before_logging = len(shown)
            expected = _train_and_log(tracker, work)
            in_loop = [(thread, message) for thread, message in shown[shown_before_logging:] if thread == me]
            tracker.finish()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [(thread, message) for thread, message in shown if "synchroniz" in message]
    assert "probe" in {thread for thread, _ in syncs}, f"the instrument saw no synchronization: {shown}"
    assert not [m for t, m in in_loop if "synchroniz" in m], "the training thread synchronized while logging"
    assert not [t for t, _ in syncs if t.startswith("tunetrack-system")], "the system sampler synchronized"
    values = torch.stack(expected).tolist()
    assert _recorded(tracker, root, "loss") == [v[0] for v in values]
    assert _recorded(tracker, root, "loss_bf16") == [v[1] for v in values]
    threads = sorted({t for t, _ in syncs} - {"probe"})
    print(f"\nthreads that synchronized (sync debug mode 'warn'): {threads or 'none'}")


def test_log_keeps_the_log_time_value_of_a_cuda_tensor_changed_in_place(root):
    """tests/test_values.py's fake-CUDA test, on a real CUDA tensor and without any debug mode."""
    tracker = Tracker(dir=root, system=False).start()
    value = torch.tensor(3.0, device="cuda")
    tracker.log({"loss": value}, step=1)
    value.add_(10.0)
    tracker.log({"loss": value}, step=2)
    value.zero_()
    tracker.finish()
    assert _recorded(tracker, root, "loss") == [3.0, 13.0]
