"""Accelerate through a ``GeneralTracker``: ``Accelerator(log_with=TunetrackTracker(project="p"))``.

The constructor only stores its arguments (accelerate users build it on every rank); ``start()``,
which ``init_trackers`` calls on the main process only, creates the run. On accelerate ≥ 1.15,
importing this module also registers the name, so ``Accelerator(log_with="tunetrack")`` works and
``init_trackers(project_name, init_kwargs={"tunetrack": {...}})`` passes the project and arguments
through. DDPO and AlignProp log through this class too: ``log_images`` stores their images, arrays
become summary statistics (``values.summarize_arrays``), and since they never call
``end_training()`` the run ends ``finished`` when the process exits (the core's atexit hook).

Each ``accelerator.save_state(...)`` is recorded as a checkpoint (``Tracker.log_checkpoint``): a
save-state pre-hook, registered when ``init_trackers`` starts the run, notes the folder and the
step; Accelerate calls it before it writes, so the checkpoint is recorded at the next ``log()``,
``finish()`` or the process's exit, once its files are complete, and hashed from there.

A run asked to stop (``tunetrack stop``) sets the accelerator's trigger at the next ``log()``:
Accelerate's own way to stop early, which a loop reads with ``accelerator.check_trigger()`` (true on
every rank at once). A loop that does not read it trains on; under ``tunetrack run`` the command is
then sent SIGTERM after its grace period.
"""

from __future__ import annotations

import atexit
import inspect
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from accelerate.tracking import GeneralTracker, on_main_process

from .._warnings import warn_once
from ..tracker import Tracker
from ..tracker.checkpoints import FILES, STATE, kind_of
from ..tracker.files import listing
from ..values import numbers, summarize_arrays

__all__ = ["TunetrackTracker", "TunetrackTrackerByName", "register"]

_TRACKER_PARAMS = inspect.signature(Tracker).parameters


class TunetrackTracker(GeneralTracker):
    """An accelerate tracker that records into tunetrack.

    ``run_name``, ``project``, ``dir`` and ``tags`` are the run's; any other keyword (``config``,
    ``backends``, ``resume``, ``strict``, ...) goes to :class:`tunetrack.Tracker` unchanged.
    """

    name = "tunetrack"
    requires_logging_directory = False
    main_process_only = True

    def __init__(
        self,
        run_name: str | None = None,
        project: str | None = None,
        dir: Any = None,
        tags: Any = None,
        **tracker_kwargs: Any,
    ) -> None:
        super().__init__()
        if "name" in tracker_kwargs:  # Tracker's own spelling, accepted too
            alias = tracker_kwargs.pop("name")
            if run_name is not None and alias != run_name:
                raise TypeError(f"TunetrackTracker got both run_name={run_name!r} and name={alias!r}")
            run_name = alias
        unknown = sorted(set(tracker_kwargs) - set(_TRACKER_PARAMS))
        if unknown:  # a setup mistake: fail now, on every rank, not silently at start()
            raise TypeError(f"TunetrackTracker got unexpected keyword argument(s) {unknown}")
        self.run_name, self.project, self.dir, self.tags = run_name, project, dir, tags
        self.tracker_kwargs = tracker_kwargs
        self._run: Tracker | None = None
        self._finished = False
        self._image_step: Any = None
        self._image_counts: dict[str, int] = {}
        #: the accelerator whose saves are recorded, and the saves begun but not recorded yet
        self._watched: Any = None
        self._saves: list[tuple[str, int, dict[str, Any]]] = []
        self._stop_set = False  # a stop request was handed to the accelerator's trigger
        #: the step last logged and the row logged at it: a save at that step carries its numbers
        self._logged: tuple[int, Mapping[str, Any]] = (-1, {})

    @property
    def tracker(self) -> Tracker | None:
        """The tunetrack ``Tracker`` (``None`` until ``start()``, and on other ranks)."""
        return self._run

    @on_main_process
    def start(self) -> None:
        if self._run is not None and not self._finished:
            return
        self._finished = False
        self._run = Tracker(
            project=self.project, name=self.run_name, dir=self.dir, tags=self.tags, **self.tracker_kwargs
        ).start()
        try:
            if (accelerator := _starting_accelerator(self)) is not None:
                self.record_saves(accelerator)
        except Exception as exc:  # checkpoints are a convenience: training goes on without them
            warn_once(f"accelerate-saves:{id(self)}", f"save_state() will not be recorded: {exc!r}")

    def record_saves(self, accelerator: Any) -> None:
        """Record each ``accelerator.save_state(...)`` as a checkpoint. ``init_trackers`` does this
        for the accelerator that starts the run; call it for a tracker used without ``init_trackers``."""
        if self._watched is accelerator:
            return
        self._watched = accelerator
        accelerator.register_save_state_pre_hook(self._save_begins)
        atexit.register(self._record_saves)  # before the core's own atexit hook ends the run (LIFO)

    def _save_begins(self, models: Any, weights: Any, output_dir: Any) -> None:
        """Accelerate's save-state pre-hook, called before any file is written: note the save."""
        try:
            run = self._run
            if run is None or not run.active:
                return
            self._record_saves()  # a save before this one has returned long ago
            step, row = self._logged
            metrics = numbers(row) if step == run.step else {}
            self._saves.append((os.fspath(output_dir), run.step, metrics))
        except Exception as exc:
            warn_once(f"accelerate-save:{id(self)}", f"save_state({output_dir!r}) was not recorded: {exc!r}")

    def _record_saves(self) -> None:
        """Record the saves that have returned since: their files are complete now."""
        while self._saves and self._run is not None:
            location, step, metrics = self._saves.pop(0)
            try:  # a full state when its files say nothing more precise (FSDP's shards)
                kind = kind_of([name for name, _ in listing(Path(location))])
                kind = STATE if kind == FILES else kind
            except OSError:
                kind = None
            self._run.log_checkpoint(location, step=step, kind=kind, metrics=metrics)

    def _tracker(self) -> Tracker:
        if self._run is None:  # used directly, without init_trackers(): start on first use
            self.start()
        assert self._run is not None
        return self._run

    @on_main_process
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        self._tracker().log_config(_without_trackers(values))

    @on_main_process
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        row: Mapping[str, Any] = values
        try:
            row = summarize_arrays(values)
        except Exception as exc:  # never into training: the core records what it can
            warn_once(f"accelerate-arrays:{id(self)}", f"could not summarize arrays in log(): {exc!r}")
        if self._saves:
            self._record_saves()
        run = self._tracker()
        run.log(row, step=step)
        self._logged = (run.step, row)
        if run.should_stop and not self._stop_set and self._watched is not None:
            self._stop_set = True
            self._watched.set_trigger()  # the loop's `accelerator.check_trigger()` agrees on every rank

    @on_main_process
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Store each image as ``media/images/<key>/<step>_<i>.png`` in the run folder, with an
        ``image`` event (key, step, path). PIL images, NumPy arrays and tensors (HW, HWC or CHW;
        NCHW/NHWC batches and lists are split); never raises."""
        try:
            run = self._tracker()
            step = run.step if step is None else step
            if step != self._image_step:  # numbering per (key, step), also across calls
                self._image_step, self._image_counts = step, {}
        except Exception as exc:
            warn_once(f"accelerate-images:{id(self)}", f"log_images() ignored a call: {exc!r}")
            return
        for key, images in values.items():
            try:
                for image in _split_images(images):
                    index = self._image_counts.get(key, 0)
                    self._image_counts[key] = index + 1
                    run.log_image(str(key), image, step=step, index=index)
            except Exception as exc:  # an odd image must not stop training
                warn_once(
                    f"accelerate-image:{id(self)}:{key}",
                    f"could not store image {key!r} at step {step}: {exc!r}",
                )

    @on_main_process
    def finish(self) -> None:
        if self._run is not None:
            self._record_saves()
            self._finished = True
            self._run.finish()


class TunetrackTrackerByName(TunetrackTracker):
    """What ``log_with="tunetrack"`` builds: accelerate passes ``init_trackers``'s ``project_name``
    first, and ``init_kwargs["tunetrack"]`` as keywords (``run_name``, ``dir``, ``tags``, ...)."""

    def __init__(self, project_name: str | None = None, /, **kwargs: Any) -> None:
        kwargs.setdefault("project", project_name)
        super().__init__(**kwargs)


def register() -> None:
    """Make ``Accelerator(log_with="tunetrack")`` work; needs accelerate ≥ 1.15. Idempotent."""
    import accelerate
    from accelerate import tracking

    if not hasattr(tracking, "register_tracker_class"):
        raise RuntimeError(
            f"accelerate {accelerate.__version__} cannot register trackers by name "
            '(register_tracker_class is new in accelerate 1.15), so log_with="tunetrack" does not work; '
            "pass an instance instead: Accelerator(log_with=TunetrackTracker(project=...))"
        )
    if tracking.LOGGER_TYPE_TO_CLASS.get(TunetrackTracker.name) is not TunetrackTrackerByName:
        tracking.register_tracker_class(TunetrackTrackerByName)


# -- checkpoints ----------------------------------------------------------------------------------
def _starting_accelerator(tracker: TunetrackTracker) -> Any:
    """The ``Accelerator`` whose ``init_trackers`` is starting ``tracker``, found among the callers'
    frames (Accelerate hands a tracker no reference to it); None when started another way."""
    from accelerate import Accelerator

    frame: Any = sys._getframe(1)
    for _ in range(8):  # init_trackers -> on_main_process's wrapper -> start
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if isinstance(owner, Accelerator) and any(t is tracker for t in getattr(owner, "trackers", ())):
            return owner
        frame = frame.f_back
    return None


# -- config ---------------------------------------------------------------------------------------
def _without_trackers(value: Any, _depth: int = 0) -> Any:
    """DDPO/AlignProp configs hold the tracker object itself (``log_with``): record its name."""
    if isinstance(value, GeneralTracker):
        return getattr(value, "name", type(value).__name__)
    if _depth > 20:
        return value
    if isinstance(value, Mapping):
        return {k: _without_trackers(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_trackers(v, _depth + 1) for v in value]
    return value


# -- images ---------------------------------------------------------------------------------------
def _split_images(images: Any) -> Iterator[Any]:
    """One image at a time from an image, a list of images, or an NCHW/NHWC batch."""
    if isinstance(images, (list, tuple)):
        for image in images:
            yield from _split_images(image)
    elif getattr(images, "ndim", 0) == 4:
        yield from images
    else:
        yield images


try:  # accelerate ≥ 1.15: log_with="tunetrack" works once this module is imported
    import accelerate.tracking as _tracking

    if hasattr(_tracking, "register_tracker_class"):
        register()
except Exception as _exc:  # never fail an import over a convenience; the instance path still works
    warn_once("accelerate-register", f'could not register log_with="tunetrack": {_exc!r}')
