"""Well-known metric keys, as the frameworks name them: the training loss, the evaluation loss, the
learning rate and the gradient norm.

Training-health checks watch the loss and gradient-norm keys; listings show the loss columns; the
terminal plot puts the losses on one axis and the learning rate on the other; the console backend
prints them first. All of them read these lists, so a framework's new spelling is added once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

#: The training loss: Transformers/TRL, the ``train/`` spelling of many loops, Lightning's step loss.
LOSS = ("loss", "train/loss", "train_loss_step")
#: The evaluation loss: Transformers' ``eval_loss`` and the ``eval/`` spelling.
EVAL_LOSS = ("eval_loss", "eval/loss")
#: The learning rate: Transformers' ``learning_rate``, the common ``lr``, and the ``train/`` spelling.
LEARNING_RATE = ("learning_rate", "lr", "train/learning_rate")
#: The gradient norm before clipping.
GRAD_NORM = ("grad_norm", "train/grad_norm", "gradient_norm")
#: Losses of either kind, training first: the columns a run listing shows.
LOSS_LIKE = (*LOSS, *EVAL_LOSS)


def main_loss(values: dict[str, object]) -> object:
    """The training loss among ``values`` (its first well-known spelling), or None."""
    return next((values[k] for k in LOSS if k in values), None)


def loss_columns(keys: Iterable[str]) -> list[str]:
    """The loss-like keys among ``keys``, training first: the metric columns a run listing shows
    unless told which."""
    present = set(keys)
    return [k for k in LOSS_LIKE if k in present]


#: the spellings of one quantity, each group the names frameworks record it under
SYNONYMS = (LOSS, EVAL_LOSS, LEARNING_RATE, GRAD_NORM)
#: W&B's Trainer integration writes Transformers' ``eval_X`` as ``eval/X``, ``test_X`` as ``test/X``
#: and every other key ``X`` as ``train/X``: what a W&B user types
SPLIT_PREFIXES = ("eval", "test")


def spellings(key: str) -> tuple[str, ...]:
    """``key`` and the other names the same metric is recorded under, in the order readers try them:
    ``eval/loss`` finds a Trainer run's ``eval_loss``, ``train/loss`` its ``loss``, ``lr`` its
    ``learning_rate``, and the other way round; so what a W&B or MLflow user types works on what the
    adapters record. A reader uses the first spelling a run has."""
    out = [key]
    for group in SYNONYMS:
        if key in group:
            out += group
    head, slash, rest = key.partition("/")
    prefix = next((p for p in SPLIT_PREFIXES if key.startswith(f"{p}_")), None)
    if slash and head in SPLIT_PREFIXES:
        out.append(f"{head}_{rest}")
    elif slash and head == "train":
        out.append(rest)
    elif prefix:
        out.append(f"{prefix}/{key[len(prefix) + 1 :]}")
    else:
        out.append(f"train/{key}")
    return tuple(dict.fromkeys(out))


def metric_key(has: Callable[[str], bool], name: str) -> str | None:
    """The first spelling of metric ``name`` (``spellings``) that ``has``, or None: how a reader finds
    a name in a run's keys, and a rule in the columns of a block the writer wrote."""
    return next((k for k in spellings(name) if has(k)), None)


def spelled(best: Mapping[str, bool] | None) -> dict[str, bool]:
    """A ``--best KEY:min|max`` choice per key (``{"eval/loss": True}``: lower is better) for each of
    the key's ``spellings`` too, so it holds whichever one a run recorded; a key given itself wins."""
    out: dict[str, bool] = {}
    for key, lower in (best or {}).items():
        out.update(dict.fromkeys(spellings(key), lower))
    return {**out, **(best or {})}


#: words in a key's last part that mean lower is better (a loss, a perplexity, an error rate)
LOWER_IS_BETTER = ("loss", "perplexity", "ppl", "error")


def minimized(key: str) -> bool:
    """Whether lower is better for ``key``: the well-known losses, and any key whose last part names a
    loss, a perplexity or an error (``eval/loss_dpo``, ``val_ppl``). What "best" means in summaries."""
    if key in LOSS_LIKE:
        return True
    last = key.rsplit("/", 1)[-1].lower()
    return any(word in last for word in LOWER_IS_BETTER)
