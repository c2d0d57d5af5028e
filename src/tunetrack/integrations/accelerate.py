"""Accelerate through a ``GeneralTracker``: ``Accelerator(log_with=TunetrackTracker(project="p"))``.

On accelerate ≥ 1.15, importing this module also registers the name, so ``log_with="tunetrack"``
works and ``init_trackers(project_name, init_kwargs={"tunetrack": {...}})`` passes arguments through.
The constructor only stores its arguments (it runs on every rank); ``start()``, which accelerate
calls on the main process only, creates the run. DDPO and AlignProp log through this class too:
``log_images`` stores their images, NumPy arrays become summary statistics, and since they never
call ``end_training()`` the run ends ``finished`` when the process exits.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import numpy as np
from accelerate.tracking import GeneralTracker, on_main_process

from ..tracker import Tracker

log = logging.getLogger("tunetrack")


def summarize_arrays(values: dict[str, Any]) -> dict[str, Any]:
    """Replace arrays and multi-element tensors by ``key/mean``, ``/std``, ``/min``, ``/max``, ``/count``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        array = _as_array(value)
        if array is None:
            out[key] = value
        elif array.size:
            flat = array.astype(np.float64).ravel()
            out.update(
                {
                    f"{key}/mean": float(flat.mean()),
                    f"{key}/std": float(flat.std()),
                    f"{key}/min": float(flat.min()),
                    f"{key}/max": float(flat.max()),
                    f"{key}/count": int(flat.size),
                }
            )
    return out


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray) and value.size != 1 and value.dtype.kind in "biuf":
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "numel") and value.numel() != 1:
        return value.detach().float().cpu().numpy()
    return None


class TunetrackTracker(GeneralTracker):
    """An accelerate tracker that records into tunetrack."""

    name = "tunetrack"
    requires_logging_directory = False
    main_process_only = True

    def __init__(
        self,
        project: str | None = None,
        run_name: str | None = None,
        dir: str | None = None,
        tags: list[str] | None = None,
        **tracker_kwargs: Any,
    ) -> None:
        super().__init__()
        self.project, self.run_name, self.dir, self.tags = project, run_name, dir, tags
        self.tracker_kwargs = tracker_kwargs
        self.run: Tracker | None = None

    @property
    def tracker(self) -> Tracker | None:
        return self.run

    @on_main_process
    def start(self) -> None:
        if self.run is None:
            self.run = Tracker(
                project=self.project, name=self.run_name, dir=self.dir, tags=self.tags, **self.tracker_kwargs
            ).start()

    def _tracker(self) -> Tracker:
        if self.run is None:  # used without init_trackers(): start on first use
            self.start()
        assert self.run is not None
        return self.run

    @on_main_process
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        self._tracker().log_config(values)

    @on_main_process
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self._tracker().log(summarize_arrays(values), step=step)

    @on_main_process
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Store each image as a PNG in the run folder and record an ``image`` event for it."""
        run = self._tracker()
        for key, images in values.items():
            for i, image in enumerate(images if isinstance(images, (list, tuple)) else [images]):
                try:
                    run.log_image(key, image, step=step, index=i)
                except Exception as exc:  # an odd image must not stop training
                    log.warning("tunetrack: could not store image %r at step %s: %s", key, step, exc)

    @on_main_process
    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()


def register() -> None:
    """Make ``log_with="tunetrack"`` work (accelerate ≥ 1.15 has ``register_tracker_class``)."""
    import accelerate
    from accelerate import tracking

    if not hasattr(tracking, "register_tracker_class"):
        raise RuntimeError(
            f"accelerate {accelerate.__version__} cannot register trackers by name (needs ≥ 1.15); "
            "pass an instance instead: Accelerator(log_with=TunetrackTracker(project=...))"
        )
    if tracking.LOGGER_TYPE_TO_CLASS.get("tunetrack") is not TunetrackTracker:
        tracking.register_tracker_class(TunetrackTracker)


with contextlib.suppress(RuntimeError):  # older accelerate: the instance path works without it
    register()
