"""What tunetrack does when a framework's module is first imported (``_tunetrack_hooks`` calls
``imported``), so that no line of the user's code has to change.

Everywhere tunetrack is installed:

- Transformers: ``report_to="tunetrack"`` (``--report_to tunetrack``) names the callback, which reads
  its options from ``TUNETRACK_*`` variables; a user's own ``TunetrackCallback`` wins over the one
  ``report_to`` adds (never two runs, never a row twice);
- Accelerate (≥ 1.15): ``log_with="tunetrack"``;
- ms-swift: ``--callbacks tunetrack`` without ``--external_plugins``.

In a process that ``tunetrack run`` started (``environment.under_command``), the adapter also attaches
itself where the user asked for nothing: a Trainer gets the callback (ms-swift's own when ms-swift
trains), ``Accelerator.init_trackers`` the tracker, torchtune's metric logger is teed into tunetrack's.
Whatever the user configured is kept (their ``report_to``, their ``log_with``, their logger), and an
adapter they added themselves is not added twice.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .._warnings import warn_once
from .environment import under_command


def imported(module: ModuleType) -> None:
    """``module`` was just imported: do what tunetrack does for it (``PATCHES``). Never raises."""
    patch = PATCHES.get(module.__name__)
    if patch is None:
        return
    try:
        patch(module)
    except Exception as exc:  # the framework works as it would without tunetrack
        warn_once(f"attach:{module.__name__}", f"tunetrack could not attach to {module.__name__}: {exc!r}")


# -- Transformers -----------------------------------------------------------------------------------
def _integrations(module: ModuleType) -> None:
    """``report_to="tunetrack"``: Transformers looks names up in ``INTEGRATION_TO_CALLBACK``."""
    from ..integrations.transformers import ReportedCallback

    module.INTEGRATION_TO_CALLBACK.setdefault("tunetrack", ReportedCallback)


def _trainer_callback(module: ModuleType) -> None:
    """Every Trainer's ``CallbackHandler``: one tunetrack callback at most (the user's own wins over
    one added for them), and under ``tunetrack run`` one in every Trainer."""
    handler = module.CallbackHandler
    init, add = handler.__init__, handler.add_callback

    @functools.wraps(init)
    def __init__(self: Any, callbacks: Any, *args: Any, **kwargs: Any) -> None:
        init(self, callbacks, *args, **kwargs)
        if under_command() and not _ours(self.callbacks):
            add(self, _automatic_callback())

    @functools.wraps(add)
    def add_callback(self: Any, callback: Any) -> None:
        add(self, callback)
        if len(_ours(self.callbacks)) > 1:  # the user's own, and one added for them
            self.callbacks = [
                c for c in self.callbacks if not getattr(c, "automatic", False)
            ] or self.callbacks

    handler.__init__, handler.add_callback = __init__, add_callback


def _ours(callbacks: list[Any]) -> list[Any]:
    from ..integrations.transformers import TunetrackCallback

    return [c for c in callbacks if isinstance(c, TunetrackCallback)]


def _automatic_callback() -> Any:
    """The callback ``tunetrack run`` adds to a Trainer: ms-swift's where ms-swift trains."""
    if "swift.callbacks" in sys.modules:
        from ..integrations.swift import SwiftCallback

        callback: Any = SwiftCallback()
        callback.automatic = True
        return callback
    from ..integrations.transformers import ReportedCallback

    return ReportedCallback()


# -- ms-swift ---------------------------------------------------------------------------------------
def _swift_callbacks(module: ModuleType) -> None:
    """``--callbacks tunetrack`` without the plugin file."""
    from ..integrations import swift

    swift.register()


# -- Accelerate -------------------------------------------------------------------------------------
def _accelerator(module: ModuleType) -> None:
    """``log_with="tunetrack"`` (accelerate ≥ 1.15); under ``tunetrack run``, the tracker added to
    every ``init_trackers`` whose trackers do not include it."""
    from ..integrations import accelerate as adapter

    if hasattr(sys.modules.get("accelerate.tracking"), "register_tracker_class"):
        adapter.register()
    cls = module.Accelerator
    init_trackers = cls.init_trackers

    @functools.wraps(init_trackers)
    def wrapped(self: Any, project_name: str, *args: Any, **kwargs: Any) -> Any:
        trackers = list(getattr(self, "log_with", None) or [])
        if under_command() and not any(_is_tunetrack(t) for t in trackers):
            self.log_with = [*trackers, adapter.TunetrackTracker(project=project_name)]
        return init_trackers(self, project_name, *args, **kwargs)

    cls.init_trackers = wrapped


def _is_tunetrack(tracker: Any) -> bool:
    from ..integrations.accelerate import TunetrackTracker

    return isinstance(tracker, TunetrackTracker) or str(getattr(tracker, "value", tracker)) == "tunetrack"


# -- torchtune --------------------------------------------------------------------------------------
def _instantiate(module: ModuleType) -> None:
    """Under ``tunetrack run``, the metric logger a recipe instantiates is teed into tunetrack's."""
    instantiate: Callable[..., Any] = module.instantiate

    @functools.wraps(instantiate)
    def wrapped(config: Any, *args: Any, **kwargs: Any) -> Any:
        made = instantiate(config, *args, **kwargs)
        if under_command() and _is_metric_logger(made):
            from ..integrations.torchtune import TunetrackLogger, teed

            if not isinstance(made, TunetrackLogger):
                return teed(made)
        return made

    setattr(module, "instantiate", wrapped)  # noqa: B010 - a module mypy knows nothing of


def _is_metric_logger(made: Any) -> bool:
    """A torchtune metric logger, by shape (the interface is a Protocol)."""
    return all(callable(getattr(made, name, None)) for name in ("log", "log_dict", "log_config", "close"))


#: module name -> what is done when it is imported (``_tunetrack_hooks.WATCHED`` lists the same names)
PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "transformers.integrations.integration_utils": _integrations,
    "transformers.trainer_callback": _trainer_callback,
    "accelerate.accelerator": _accelerator,
    "torchtune.config._instantiate": _instantiate,
    "swift.callbacks": _swift_callbacks,
}
