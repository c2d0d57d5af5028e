"""What config keys mean across the adapters: the short names people type for the keys each adapter
records (``lr`` for the Trainer's ``args.learning_rate``, torchtune's ``optimizer.lr``, LLaMA
Factory's ``finetuning_args``...), and the keys that only keep books (output folders, run names,
seeds), which never tell two configurations apart.

Every reader resolves a config name through ``patterns``: ``--where``, ``--sort``, ``compare
--group-by``, the dashboard's boxes and the agents' tools, so ``lr`` means the same everywhere.
``docs/names.md`` lists, per adapter, what it records and which of these names find it.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

#: a short name -> the flat keys (glob patterns) it finds, tried in order; the first that a run has
#: wins. ``*`` stands for any prefix (``*.learning_rate``: ``args.learning_rate``,
#: ``llamafactory.learning_rate``); PEFT keeps each adapter's config under its name
#: (``peft_config.default.r``).
ALIASES: dict[str, tuple[str, ...]] = {
    "lr": ("args.learning_rate", "optimizer.lr", "learning_rate", "*.learning_rate", "*.lr"),
    "learning_rate": ("args.learning_rate", "optimizer.lr", "lr", "*.learning_rate", "*.lr"),
    "lora.r": ("peft_config.default.r", "peft_config.*.r", "lora_rank", "lora_r", "*.lora_rank", "*.lora_r"),
    "lora.alpha": (
        "peft_config.default.lora_alpha",
        "peft_config.*.lora_alpha",
        "lora_alpha",
        "*.lora_alpha",
    ),
    "lora.dropout": (
        "peft_config.default.lora_dropout",
        "peft_config.*.lora_dropout",
        "lora_dropout",
        "*.lora_dropout",
    ),
    "seed": ("args.seed", "seed", "*.seed"),
    "batch_size": (
        "args.per_device_train_batch_size",
        "batch_size",
        "per_device_train_batch_size",
        "*.per_device_train_batch_size",
        "*.batch_size",
    ),
    "epochs": ("args.num_train_epochs", "epochs", "num_train_epochs", "*.num_train_epochs", "*.epochs"),
    "max_steps": ("args.max_steps", "max_steps", "*.max_steps"),
    "weight_decay": ("args.weight_decay", "optimizer.weight_decay", "weight_decay", "*.weight_decay"),
    "warmup_steps": ("args.warmup_steps", "lr_scheduler.num_warmup_steps", "warmup_steps", "*.warmup_steps"),
    "model": (
        "model_args.model_name_or_path",
        "model_name_or_path",
        "*.model_name_or_path",
        "model_config._name_or_path",
        "*model_args.model",
        "model",
    ),
    "beta": ("args.beta", "beta", "*.beta"),
    "num_generations": ("args.num_generations", "num_generations", "*.num_generations"),
}

#: where the adapters put a framework's own arguments (a Trainer's hundred-odd ``args``, a model's
#: config, LLaMA Factory's and ms-swift's argument groups): most of it defaults, which ``tunetrack
#: show`` leaves to ``--full`` and shows the keys below, the aliases' and the user's own instead
FRAMEWORK_GROUPS = (
    "args",
    "model_config",
    "peft_config",
    "model_args",
    "data_args",
    "training_args",
    "finetuning_args",
    "generating_args",
    "llamafactory",
    "swift",
    "args_json",
)
#: keys of those groups that say what was trained, shown with the aliases' keys
MODEL_KEYS = (
    "model_config.model_type",
    "model_config._name_or_path",
    "peft_config.*.peft_type",
    "peft_config.*.target_modules",
    "args.gradient_accumulation_steps",
    "args.lr_scheduler_type",
    "args.bf16",
    "args.reward_weights",
    "args.loss_type",
    "args.max_completion_length",
)

#: keys that only keep books: each run has its own value (where its files go, its name, its seed, its
#: trial's number), so ``compare --group-by all-but-seed`` leaves them out. Glob patterns over the
#: key's last part, or over the whole key where it holds a dot.
BOOKKEEPING = (
    "*seed*",
    "*_dir",
    "run_name",
    "hub_*",
    "push_to_hub_*",
    "*timestamp*",
    "resume_from_checkpoint",
    "local_rank",
    "trial.name",
    "trial.number",
    "trial.state",
    "trial.pruned",
    "trial.started",
    "trial.duration",
)


def patterns(name: str) -> tuple[str, ...]:
    """The flat keys (glob patterns) ``name`` finds, in the order tried: itself, then its aliases,
    then any key it ends (``learning_rate`` finds ``args.learning_rate``, the flat name W&B's
    Trainer integration records)."""
    return tuple(dict.fromkeys((name, *ALIASES.get(name, ()), f"*.{name}")))


def framework_key(key: str) -> bool:
    """Whether ``key`` is in one of the ``FRAMEWORK_GROUPS`` (else the user's own, or tunetrack's)."""
    return key.split(".", 1)[0] in FRAMEWORK_GROUPS


def bookkeeping(key: str) -> bool:
    """Whether the flat config key ``key`` only keeps books (``BOOKKEEPING``): ``args.output_dir``,
    ``args.run_name``, ``args.seed``, ``trial.number``."""
    last = key.rsplit(".", 1)[-1].lower()
    return any(fnmatchcase(key if "." in p else last, p) for p in BOOKKEEPING)
