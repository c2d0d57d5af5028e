"""W&B's Python API over a tunetrack ``Tracker``: ``import tunetrack.wandb as wandb`` makes a script
written for W&B (a nanoGPT-style loop, an RL framework's logging path, a notebook) record a tunetrack
run, unmodified but for that line. W&B itself is never imported.

The translation keeps W&B's meaning where a script can see it: steps start at 0 and advance at each
committed ``log``; ``commit=False`` and an explicit ``step`` gather values into one row, written when
a later step or a commit closes it (a step lower than the current one is ignored, as W&B ignores it);
nested dicts become ``a.b`` keys as W&B names them. What tunetrack has no place for is warned about
once and ignored: nothing here raises into a training script.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from .._warnings import warn_once
from ..states import State
from ..tracker import Tracker


class AlertLevel:
    """W&B's alert levels, as strings ``Tracker.alert`` takes."""

    INFO = "info"
    WARN = "warn"
    ERROR = "error"


def _unsupported(what: str) -> None:
    warn_once(f"wandb-api:{what}", f"tunetrack.wandb: {what} is not supported by tunetrack and was ignored")


# -- media types -------------------------------------------------------------------------------------
class Table:
    """``wandb.Table``: rows of columns, recorded as a table of samples (``Tracker.log_table``: numbers
    stay numbers, images become PNGs) at the step it is logged."""

    def __init__(
        self,
        columns: Sequence[str] | None = None,
        data: Iterable[Sequence[Any]] | None = None,
        rows: Iterable[Sequence[Any]] | None = None,
        dataframe: Any = None,
        **_: Any,
    ) -> None:
        if dataframe is not None:
            self.columns = [str(c) for c in dataframe.columns]
            self.data = [list(row) for row in dataframe.itertuples(index=False)]
        else:
            self.data = [list(row) for row in (data if data is not None else rows or [])]
            width = max((len(row) for row in self.data), default=0)
            self.columns = list(columns) if columns is not None else [str(i) for i in range(width)]

    def add_data(self, *values: Any) -> None:
        self.data.append(list(values))

    def add_column(self, name: str, data: Sequence[Any]) -> None:
        self.columns.append(name)
        for row, value in zip(self.data, data):
            row.append(value)

    def rows(self) -> list[dict[str, Any]]:
        """The rows as dicts, an ``Image`` cell as its pixels (the writer stores it as a PNG)."""
        return [
            {c: v.pixels() if isinstance(v, Image) else v for c, v in zip(self.columns, row)}
            for row in self.data
        ]


class Image:
    """``wandb.Image``: an image (PIL, NumPy array, tensor, or a file path) and its caption."""

    def __init__(self, data_or_path: Any, mode: str | None = None, caption: str | None = None, **_: Any):
        self.image = data_or_path
        self.caption = caption

    def pixels(self) -> Any:
        if isinstance(self.image, str | os.PathLike):
            from PIL import Image as PILImage

            return PILImage.open(self.image)
        return self.image


class Histogram:
    """``wandb.Histogram``: recorded as a ``tunetrack.Histogram`` (its bins and counts, at the step),
    which the dashboard, the terminal view and the TensorBoard mirror draw as a distribution."""

    def __init__(
        self, sequence: Sequence[float] | None = None, np_histogram: Any = None, num_bins: int = 64
    ) -> None:
        from ..histograms import Histogram as Distribution

        if sequence is None and np_histogram is not None:
            counts, edges = np_histogram
            self.histogram = Distribution(counts=list(counts), edges=list(edges))
        else:
            self.histogram = Distribution(list(sequence or []), bins=num_bins)


# -- config and summary ------------------------------------------------------------------------------
class Config(MutableMapping[str, Any]):
    """``wandb.config``: attribute and item access; every change is merged into the run's config."""

    def __init__(self) -> None:
        object.__setattr__(self, "_data", {})
        object.__setattr__(self, "_tracker", None)

    def _bind(self, tracker: Tracker | None) -> None:
        object.__setattr__(self, "_tracker", tracker)
        if tracker is not None and self._data:
            tracker.log_config(dict(self._data))

    def update(self, d: Any = None, allow_val_change: bool | None = None, **kwargs: Any) -> None:  # type: ignore[override]
        changes = {**_as_dict(d), **kwargs}
        self._data.update(changes)
        if self._tracker is not None and changes:
            self._tracker.log_config(changes)

    def setdefaults(self, d: Mapping[str, Any]) -> None:
        self.update({k: v for k, v in _as_dict(d).items() if k not in self._data})

    def as_dict(self) -> dict[str, Any]:
        return dict(self._data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self.update({key: value})


class Summary(MutableMapping[str, Any]):
    """``run.summary``: each key's last logged value, and the values a script sets itself (recorded
    as a ``summary`` event, since tunetrack computes a run's summary from its series)."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._set: dict[str, Any] = {}

    def update(self, d: Any = None, **kwargs: Any) -> None:  # type: ignore[override]
        changes = {**_as_dict(d), **kwargs}
        self._set.update(changes)
        self._run._event("summary", **changes)

    def __getitem__(self, key: str) -> Any:
        return self._set[key] if key in self._set else self._run._last[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        self._set.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter({**self._run._last, **self._set})

    def __len__(self) -> int:
        return len({**self._run._last, **self._set})


def _as_dict(d: Any) -> dict[str, Any]:
    if d is None:
        return {}
    if isinstance(d, Mapping):
        return dict(d)
    if hasattr(d, "__dict__"):  # an argparse Namespace, a dataclass instance
        return dict(vars(d))
    _unsupported(f"a config of type {type(d).__name__}")
    return {}


# -- the run -----------------------------------------------------------------------------------------
class Run:
    """What ``wandb.init`` returns: a tunetrack run under W&B's names."""

    def __init__(self, tracker: Tracker | None, config: Config, **fields: Any) -> None:
        self._tracker = tracker
        self.config = config
        self.summary = Summary(self)
        self.notes: str | None = fields.get("notes")
        self.group: str | None = fields.get("group")
        self.job_type: str | None = fields.get("job_type")
        self.mode: str = fields.get("mode") or "offline"
        self._step = 0  # the open row's step (W&B's starts at 0)
        self._row: dict[str, Any] = {}
        self._last: dict[str, Any] = {}
        self._lock = threading.Lock()

    # W&B's run attributes
    @property
    def id(self) -> str | None:
        return self._tracker.id if self._tracker is not None else None

    @property
    def name(self) -> str | None:
        return self._tracker.name if self._tracker is not None else None

    @name.setter
    def name(self, value: str) -> None:
        if self._tracker is not None:
            self._tracker.name = value

    @property
    def project(self) -> str | None:
        return self._tracker.project if self._tracker is not None else None

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(self._tracker.tags) if self._tracker is not None else ()

    @tags.setter
    def tags(self, value: Sequence[str]) -> None:
        if self._tracker is not None:
            old = set(self._tracker.tags)
            self._tracker.remove_tags(*(old - set(value)))
            self._tracker.add_tags(*(t for t in value if t not in old))

    @property
    def dir(self) -> str | None:
        return str(self._tracker.run_dir) if self._tracker is not None and self._tracker.run_dir else None

    @property
    def url(self) -> str | None:
        """The run in tunetrack's dashboard (``$TUNETRACK_DASHBOARD_URL``), else its folder or URL."""
        if self._tracker is None or self._tracker.id is None:
            return None
        base = os.environ.get("TUNETRACK_DASHBOARD_URL")
        return f"{base.rstrip('/')}/run/{self._tracker.id}" if base else self.dir

    @property
    def step(self) -> int:
        return self._step

    def log(self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
        """W&B's ``log``: see the module's docstring for how steps and commits are kept."""
        try:
            with self._lock:
                if step is not None:
                    step = int(step)
                    if step < self._step:
                        warn_once(
                            f"wandb-api:step-back:{self.id}",
                            f"tunetrack.wandb: step {step} is lower than the current step {self._step}; "
                            "its data is ignored (as W&B ignores it)",
                        )
                        return
                    if step > self._step:
                        self._commit()
                        self._step = step
                self._take(data)
                if (step is None and commit is None) or commit:
                    self._commit()
                    self._step += 1
        except Exception as exc:  # a script's logging call never fails
            warn_once(f"wandb-api:log:{type(exc).__name__}", f"tunetrack.wandb: log() ignored {exc!r}")

    def _take(self, data: Mapping[str, Any]) -> None:
        """Put ``data`` into the open row: media go to the tracker at once, at the open step."""
        for key, value in _flat(data):
            if isinstance(value, Table):
                if self._tracker is not None:
                    self._tracker.log_table(key, value.rows(), step=self._step)
            elif isinstance(value, Image) or (
                isinstance(value, list) and value and isinstance(value[0], Image)
            ):
                for i, image in enumerate(value if isinstance(value, list) else [value]):
                    if self._tracker is not None:
                        self._tracker.log_image(key, image.pixels(), step=self._step, index=i)
            elif isinstance(value, Histogram):
                self._row[key] = value.histogram
            elif type(value).__module__.startswith("wandb"):
                _unsupported(f"logging a {type(value).__name__}")
            else:
                self._row[key] = value

    def _commit(self) -> None:
        if self._row and self._tracker is not None:
            self._tracker.log(self._row, step=self._step)
        self._last.update(self._row)
        self._row = {}

    def define_metric(
        self,
        name: str,
        step_metric: str | None = None,
        step_sync: bool | None = None,
        hidden: bool | None = None,
        summary: str | None = None,
        goal: str | None = None,
        overwrite: bool | None = None,
    ) -> None:
        """Recorded as a ``define_metric`` event (tunetrack's x axis is the step; its summary keeps
        min, max and last of every key already)."""
        given = {"step_metric": step_metric, "summary": summary, "goal": goal, "hidden": hidden}
        self._event("define_metric", name=name, **{k: v for k, v in given.items() if v is not None})

    def alert(self, title: str, text: str, level: str | None = None, wait_duration: Any = None) -> None:
        if self._tracker is not None:
            self._tracker.alert(title, text, str(level or AlertLevel.INFO).lower())

    def watch(self, *args: Any, **kwargs: Any) -> None:
        warn_once(
            "wandb-api:watch",
            "tunetrack.wandb: watch() is a no-op (gradients and parameters are not recorded; log their "
            "norms to see them)",
        )

    def unwatch(self, *args: Any, **kwargs: Any) -> None: ...

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """End the run: ``failed`` for a non-zero ``exit_code``, else ``finished``."""
        with self._lock:
            self._commit()
        if self._tracker is not None:
            self._tracker.finish(State.FAILED if exit_code else None)
        _forget(self)

    def _event(self, kind: str, **data: Any) -> None:
        if self._tracker is not None:
            self._tracker.event(kind, step=self._step, **data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        _unsupported(f"run.{name}")
        return _nothing

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.finish(exit_code=1 if exc_type is not None else 0)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _flat(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested dicts as W&B names their keys: ``{"a": {"b": 1}}`` is ``a.b``."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flat(value, f"{name}.")
        else:
            yield name, value


# -- the module's functions --------------------------------------------------------------------------
#: the run ``init`` started last (W&B's ``wandb.run``)
run: Run | None = None
#: W&B's ``wandb.config`` (usable before ``init``: what was set is merged into the run's config)
config = Config()
summary: Summary | None = None
_atexit = False


def init(
    project: str | None = None,
    entity: str | None = None,
    config: Any = None,
    name: str | None = None,
    notes: str | None = None,
    tags: Sequence[str] | None = None,
    group: str | None = None,
    job_type: str | None = None,
    id: str | None = None,
    resume: bool | str | None = None,
    dir: str | None = None,
    mode: str | None = None,
    reinit: Any = None,
    config_exclude_keys: Sequence[str] | None = None,
    config_include_keys: Sequence[str] | None = None,
    **kwargs: Any,
) -> Run:
    """Start a tunetrack run as ``wandb.init`` starts a W&B run. The run goes to tunetrack's store
    (``$TUNETRACK_DIR`` or ``./tunetrack_runs``; W&B's ``dir`` is for W&B's own files and is not
    used). ``mode="disabled"`` records nothing. ``id`` with ``resume`` continues that run."""
    global run, summary, _atexit
    if run is not None:
        run.finish()
    for key in kwargs:
        _unsupported(f"init({key}=...)")
    mode = mode or os.environ.get("WANDB_MODE")
    values = _as_dict(config)
    if config_include_keys:
        values = {k: v for k, v in values.items() if k in config_include_keys}
    for key in config_exclude_keys or ():
        values.pop(key, None)
    tracker = None
    if mode != "disabled":
        run_id = id or os.environ.get("WANDB_RUN_ID")
        tracker = Tracker(
            project=project or os.environ.get("WANDB_PROJECT"),
            name=name or os.environ.get("WANDB_NAME"),
            tags=list(tags or []),
            id=run_id if resume in (None, False, "never") else None,
            resume=run_id if resume not in (None, False, "never") else None,
        )
        tracker.start()
        wandb_fields = {"entity": entity, "group": group, "job_type": job_type, "notes": notes}
        given = {k: v for k, v in wandb_fields.items() if v is not None}
        if given:
            tracker.log_config({"wandb": given})
        if notes:
            tracker.event("note", step=0, text=notes)
    config_object = globals()["config"]
    config_object.update(values)
    config_object._bind(tracker)
    run = Run(tracker, config_object, notes=notes, group=group, job_type=job_type, mode=mode)
    summary = run.summary
    if not _atexit:  # the open row is written before tunetrack's own exit hook ends the run
        atexit.register(_finish_at_exit)
        _atexit = True
    return run


def _forget(finished: Run) -> None:
    global run, summary, config
    if run is finished:
        run, summary, config = None, None, Config()


def _finish_at_exit() -> None:
    if run is not None:
        run.finish()


def log(data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    if run is None:
        warn_once("wandb-api:log-before-init", "tunetrack.wandb: log() before init() is ignored")
        return
    run.log(data, step=step, commit=commit)


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    if run is not None:
        run.finish(exit_code)


def define_metric(name: str, **kwargs: Any) -> None:
    if run is not None:
        run.define_metric(name, **kwargs)


def alert(title: str, text: str, level: str | None = None, wait_duration: Any = None) -> None:
    if run is not None:
        run.alert(title, text, level)


def watch(*args: Any, **kwargs: Any) -> None:
    if run is not None:
        run.watch()


def unwatch(*args: Any, **kwargs: Any) -> None: ...


def login(*args: Any, **kwargs: Any) -> bool:
    """Nothing to log in to: tunetrack's store needs no account."""
    return True


def __getattr__(name: str) -> Any:
    """Anything else of W&B's API: warned about once, then a no-op."""
    if name.startswith("__"):
        raise AttributeError(name)
    _unsupported(f"wandb.{name}")
    return _nothing
