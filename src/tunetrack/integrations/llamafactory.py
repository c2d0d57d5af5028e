"""LLaMA Factory: a drop-in for ``llamafactory-cli train`` that runs ``run_exp`` with the callback.

    python -m tunetrack.integrations.llamafactory train cfg.yaml [key=value ...] [tunetrack.project=p ...]
    torchrun --nproc-per-node 8 -m tunetrack.integrations.llamafactory train cfg.yaml   # multi-GPU

A callback alone sees only ``TrainingArguments``; this wrapper also records LLaMA Factory's own
argument groups (model, data, finetuning, generating) and the raw YAML/CLI arguments. Overrides that
start with ``tunetrack.`` (``project``, ``name``, ``dir``, ``tags``, ``backends``) configure the run and are removed
before LLaMA Factory sees the arguments. (``llamafactory-cli train`` on several GPUs re-executes
itself under torchrun without our callback, hence the ``torchrun -m`` form.)
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from typing import Any

from .._warnings import warn_once
from .support.options import split_options
from .transformers import TunetrackCallback

USAGE = "usage: python -m tunetrack.integrations.llamafactory train CONFIG.yaml [key=value ...] [tunetrack.KEY=VALUE ...]"


def argument_groups(args: Any) -> dict[str, Any]:
    """LLaMA Factory's parsed argument groups, for the run's config (best effort: parsing only)."""
    try:
        from llamafactory.hparams.parser import _parse_train_args

        model, data, _training, finetuning, generating = _parse_train_args(copy.deepcopy(args))
    except Exception as exc:  # an argument error surfaces in run_exp with LLaMA Factory's own message
        warn_once("llamafactory:groups", f"could not parse LLaMA Factory's argument groups: {exc!r}")
        return {}
    return {
        "model_args": model,
        "data_args": data,
        "finetuning_args": finetuning,
        "generating_args": generating,
    }


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "train":
        raise SystemExit(USAGE)
    rest, options = split_options(argv[1:])
    sys.argv = [sys.argv[0], *rest]  # read_args() reads sys.argv at call time
    from llamafactory.hparams.parser import read_args
    from llamafactory.train.tuner import run_exp

    args = read_args()
    config = {
        "llamafactory": args if isinstance(args, dict) else {"argv": list(args)},
        **argument_groups(args),
    }
    callback = TunetrackCallback(
        project=options.get("project", "llamafactory"),
        name=options.get("name"),
        dir=options.get("dir"),
        tags=options.get("tags"),
        backends=options.get("backends"),
        config=config,
    )
    run_exp(args=args, callbacks=[callback])  # a fresh list: run_exp appends its own callbacks to it
    callback.finish()


if __name__ == "__main__":
    main()
