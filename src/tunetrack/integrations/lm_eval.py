"""EleutherAI's lm-evaluation-harness on a run's checkpoints, its scores attached to them.

``evaluate_checkpoint("RUN@STEP", tasks=[...])`` finds where the checkpoint's weights are (as the
run recorded them), runs ``lm_eval.simple_evaluate`` with its ``hf`` model on that folder, and
records the scores with ``tunetrack.log_evaluation`` under the suite ``lm-eval``: on the checkpoint
(``tunetrack checkpoints RUN --suite lm-eval``) and at its step in the run's history
(``lm-eval/<task>/<metric>``). ``log_results`` attaches the results of an evaluation run some other
way (``lm_eval --output_path``'s JSON file, or ``simple_evaluate``'s dict).

lm-eval has no logger that a third party can register (its W&B and trackio loggers are built in), so
this module drives ``simple_evaluate`` itself and reads its results as those loggers do. lm_eval is
imported only when a function here runs, never when tunetrack is imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..tracker import Evaluated, find_checkpoint, log_evaluation

#: the suite lm-eval's scores are recorded under (``lm-eval/<task>/<metric>`` in the run's history)
SUITE = "lm-eval"
#: what of lm-eval's results is kept as how the evaluation ran (``Evaluation.config``)
_CONFIG_FIELDS = (
    "config",
    "versions",
    "n-shot",
    "n-samples",
    "higher_is_better",
    "lm_eval_version",
    "git_hash",
)


def evaluate_checkpoint(
    checkpoint: Any,
    tasks: Sequence[str | Mapping[str, Any]],
    dir: str | os.PathLike[str] | None = None,
    suite: str = SUITE,
    model_args: Mapping[str, Any] | None = None,
    include_path: str | os.PathLike[str] | None = None,
    **lm_eval_kwargs: Any,
) -> dict[str, Any]:
    """Evaluate ``checkpoint`` (``RUN@STEP``, ``RUN`` for its latest, its folder, or a ``Checkpoint``)
    on lm-eval ``tasks`` and attach the scores to it; returns lm-eval's results.

    The checkpoint must be a local folder that ``transformers`` can load (a full model saved with its
    tokenizer: a Trainer's ``checkpoint-N`` with ``processing_class=tokenizer``). ``model_args`` go to
    lm-eval's ``hf`` model beside ``pretrained`` (``dtype``, ``trust_remote_code``); ``include_path``
    is a folder of your own task YAMLs (``lm_eval.tasks.TaskManager(include_path=...)``); anything
    else goes to ``lm_eval.simple_evaluate`` (``num_fewshot``, ``limit``, ``batch_size``, ``device``).
    Samples are not kept unless ``log_samples=True`` is passed (lm-eval keeps them by default)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    target = find_checkpoint(checkpoint, dir)
    folder = Path(target.path)
    if "://" in target.path or not folder.is_dir():
        raise FileNotFoundError(
            f"checkpoint {target.run}@{target.step}: {target.path} is not a folder here; lm-eval's hf "
            "model loads a local folder (download it first, then pass its path)"
        )
    if "task_manager" not in lm_eval_kwargs and include_path is not None:
        lm_eval_kwargs["task_manager"] = TaskManager(include_path=os.fspath(include_path))
    lm_eval_kwargs.setdefault("log_samples", False)
    results = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": str(folder), **(model_args or {})},
        tasks=list(tasks),
        **lm_eval_kwargs,
    )
    if results is None:  # a rank other than 0 of a distributed evaluation: rank 0 records
        return {}
    log_results(target, results, suite=suite, dir=dir)
    return dict(results)


def log_results(
    checkpoint: Any,
    results: Mapping[str, Any] | str | os.PathLike[str],
    suite: str = SUITE,
    dir: str | os.PathLike[str] | None = None,
) -> Evaluated:
    """Attach lm-eval's ``results`` (``simple_evaluate``'s dict, or the ``results_*.json`` file that
    ``lm_eval --output_path`` wrote) to ``checkpoint``, as ``evaluate_checkpoint`` does."""
    found: Mapping[str, Any] = (
        results if isinstance(results, Mapping) else json.loads(Path(results).read_text())
    )
    config = {k: found[k] for k in _CONFIG_FIELDS if k in found}
    config["tasks"] = sorted(found.get("results") or {})
    return log_evaluation(checkpoint, scores(found), suite=suite, dir=dir, config=config)


def scores(results: Mapping[str, Any]) -> dict[str, float]:
    """lm-eval's per-task numbers as flat keys: ``acc,none`` of task ``arc_easy`` as
    ``arc_easy/acc``, ``exact_match,strict-match`` of ``gsm8k`` as ``gsm8k/exact_match/strict-match``
    (a filter other than ``none`` named after the metric); groups' aggregates as their tasks' are.
    Non-numbers (``alias``, a stderr of ``N/A``) are left out."""
    out: dict[str, float] = {}
    for section in ("results", "groups"):
        for task, metrics in (results.get(section) or {}).items():
            if not isinstance(metrics, Mapping):
                continue
            for name, value in metrics.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                metric, _, filtered = str(name).partition(",")
                key = metric if filtered in ("", "none") else f"{metric}/{filtered}"
                out[f"{task}/{key}"] = float(value)
    return out


__all__ = ["SUITE", "evaluate_checkpoint", "log_results", "scores"]
