"""A run's checkpoints read back: each ``checkpoint`` event joined by its location with what was
learned later (``checkpoint_files``: its files, sizes and hashes; ``checkpoint_deleted``: rotation
removed it), as ``tracker.checkpoints`` records them, and ``checkpoint_evaluation`` (an evaluation of
its weights, ``tunetrack.log_evaluation``: a process of its own that may have run long after the
save). Nothing here opens a checkpoint's files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import UnknownName
from ..metric_keys import minimized, spellings
from ..store.evaluations import EVENT as EVALUATION_EVENT
from ..values import is_number, missing_last

#: the events that record a checkpoint (its save, its files, its removal), which ``checkpoints`` reads
#: into one ``Checkpoint``: a reader listing both shows them there, not among the other events
RECORDS = ("checkpoint", "checkpoint_files", "checkpoint_deleted")


@dataclass
class Evaluation:
    """One evaluation of a checkpoint's weights by a suite (``lm-eval``, ``humaneval``, ...)."""

    suite: str
    #: the suite's numbers, flat (``mmlu/acc``); in the run's history as ``<suite>/<key>``
    results: dict[str, Any]
    #: when it was recorded
    time: float
    #: how it was run (tasks, shots, limits, the evaluator's version), as the caller gave it
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class Checkpoint:
    """One checkpoint of a run."""

    run: str
    step: int
    path: str
    #: ``adapter``, ``model``, ``state`` or ``files`` (``tracker.checkpoints.kind_of``); None if unknown
    kind: str | None
    time: float
    #: what was logged at its step (the evaluation that ran before the save included)
    metrics: dict[str, Any] = field(default_factory=dict)
    #: each file's ``name``, ``size`` and ``sha256`` (None: not hashed before the run ended); None
    #: while still being hashed, or for a checkpoint at a URL
    files: list[dict[str, Any]] | None = None
    bytes: int | None = None
    #: rotation (``save_total_limit``) or the user removed it after it was recorded
    deleted: bool = False
    #: evaluations of its weights made after the save, by suite, oldest first (the last is the one
    #: shown); an evaluation the training loop ran before the save is in ``metrics`` instead
    evaluations: dict[str, list[Evaluation]] = field(default_factory=dict)

    def results(self, suite: str | None = None) -> dict[str, Any]:
        """The latest evaluation's results of ``suite`` (``{"mmlu/acc": 0.41}``); without a suite,
        every suite's latest, keyed as the run's history has them (``lm-eval/mmlu/acc``)."""
        if suite is not None:
            done = self.evaluations.get(suite)
            return dict(done[-1].results) if done else {}
        return {f"{s}/{k}": v for s, done in self.evaluations.items() for k, v in done[-1].results.items()}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def checkpoints(run_id: str, events: Iterable[Mapping[str, Any]]) -> list[Checkpoint]:
    """The checkpoints in a run's events (``Run.events``), in the order they were saved."""
    found: dict[str, Checkpoint] = {}
    for e in events:
        kind, path = e.get("kind"), e.get("path")
        if not isinstance(path, str):
            continue
        if kind == "checkpoint":
            metrics = e.get("metrics")
            found[path] = Checkpoint(
                run_id,
                int(e.get("step") or 0),
                path,
                e["type"] if isinstance(e.get("type"), str) else None,  # ``kind`` names the event
                float(e.get("time") or 0.0),
                dict(metrics) if isinstance(metrics, dict) else {},
            )
        elif kind == "checkpoint_files" and path in found:
            files = e.get("files")
            found[path].files = list(files) if isinstance(files, list) else None
            if found[path].kind is None and isinstance(e.get("type"), str):
                found[path].kind = e["type"]  # what its files say, where the caller did not
            found[path].bytes = e.get("bytes") if isinstance(e.get("bytes"), int) else None
        elif kind == "checkpoint_deleted" and path in found:
            found[path].deleted = True
        elif kind == EVALUATION_EVENT and path in found and isinstance(e.get("suite"), str):
            results, config = e.get("results"), e.get("config")
            found[path].evaluations.setdefault(e["suite"], []).append(
                Evaluation(
                    e["suite"],
                    dict(results) if isinstance(results, dict) else {},
                    float(e.get("time") or 0.0),
                    dict(config) if isinstance(config, dict) else {},
                )
            )
    return list(found.values())


def score(checkpoint: Checkpoint, key: str) -> Any:
    """The checkpoint's value of ``key`` under whichever spelling it was logged (``eval/loss`` finds
    the Trainer's ``eval_loss``), or in its latest evaluations (``lm-eval/mmlu/acc``); None where it
    has none."""
    evaluated = checkpoint.results()
    for name in spellings(key):  # the key itself first
        if is_number(value := checkpoint.metrics.get(name)) or is_number(value := evaluated.get(name)):
            return value
    return None


def best(found: Sequence[Checkpoint], key: str, minimize: bool | None = None) -> Checkpoint | None:
    """The checkpoint with the lowest ``key`` (``minimize``; by default as ``metric_keys.minimized``
    says: losses lower) or the highest; deleted ones count (they were the best when saved); None
    where no checkpoint has the key."""
    scored = [c for c in found if score(c, key) is not None]
    if not scored:
        return None
    lower = minimized(key) if minimize is None else minimize
    return missing_last(scored, lambda c: score(c, key), descending=not lower)[0]


def metric_names(found: Iterable[Checkpoint]) -> list[str]:
    """Every metric some checkpoint has (its evaluations' too), for an error that says what
    ``--best`` could name."""
    return sorted({k for c in found for k in (*c.metrics, *c.results())})


def suites(found: Iterable[Checkpoint]) -> list[str]:
    """The evaluation suites some checkpoint was evaluated by."""
    return sorted({s for c in found for s in c.evaluations})


def suite_keys(found: Iterable[Checkpoint], suite: str) -> list[str]:
    """The keys of ``suite``'s latest results over the checkpoints, in the order first seen."""
    return list(dict.fromkeys(k for c in found for k in c.results(suite)))


def check_suite(found: Iterable[Checkpoint], suite: str) -> None:
    """Raise ``UnknownName`` (saying which suites there are) where no checkpoint was evaluated with
    ``suite``: a typo gets an answer instead of an empty table."""
    found = list(found)
    if suite not in suites(found):
        there = ", ".join(suites(found)) or "none"
        raise UnknownName(f"no checkpoint was evaluated with suite {suite!r}; suites: {there}")


def in_suite(found: Iterable[Checkpoint], key: str, suite: str | None) -> str:
    """``key`` as the run's history names it: a metric of ``suite`` may be named within the suite
    (``mmlu/acc`` for ``lm-eval/mmlu/acc``) when the suite is the one compared."""
    if suite is None or key.startswith(f"{suite}/") or not any(key in c.results(suite) for c in found):
        return key
    return f"{suite}/{key}"
