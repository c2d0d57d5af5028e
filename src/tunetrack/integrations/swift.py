"""ms-swift (ModelScope's fine-tuning framework): its own callback name, and a drop-in for ``swift``.

    swift sft ... --external_plugins $(python -m tunetrack.integrations.swift --plugin-path) --callbacks tunetrack
    python -m tunetrack.integrations.swift sft ... [tunetrack.project=p tunetrack.name=n ...]   # the same

ms-swift builds callbacks from names (``--callbacks NAME`` looks ``NAME`` up in
``swift.callbacks.callbacks_map`` and calls it with the trainer's arguments and the trainer), and
imports plugin files by path before it does (``--external_plugins FILE``). The plugin file registers
``tunetrack`` there; the drop-in adds both options to the command line and runs ``swift``'s own CLI,
which starts the training in a child process (under torchrun with ``NPROC_PER_NODE``), so tunetrack's
options travel as ``TUNETRACK_*`` environment variables (``integrations.support.options``).

ms-swift's trainers are ``transformers.Trainer`` subclasses, so ``SwiftCallback`` is the Transformers
callback plus what only ms-swift has:

- it moves itself behind ms-swift's other callbacks when the trainer is built, so each row is what
  ms-swift writes to ``logging.jsonl``: ``MFU`` from ``--callbacks perf_log`` (whatever the order of
  ``--callbacks``), and the progress fields its console callback adds;
- values ms-swift formats as text are recorded as what they are (``translate``): numbers as numbers,
  durations (``elapsed_time``, ``remaining_time``: ``"1m 5s"``) as seconds, the progress string
  (``global_step/max_steps``: ``"3/12"``) as text;
- ms-swift's argument dataclasses, each group under ``swift`` in the config (``argument_groups``);
- GRPO completions from the one file ms-swift appends them to, ``completions.jsonl``.

Megatron-SWIFT's callbacks are another class (``MegatronCallback``, ``swift_megatron.py``), registered
in ``megatron_callbacks_map`` under the same name when the command is a Megatron one.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from .support.completions import CompletionLog
from .support.options import from_environment, split_options, to_environment
from .transformers import TunetrackCallback

#: the callback's name in ms-swift's tables (``--callbacks tunetrack``)
NAME = "tunetrack"
#: the file to pass to ``--external_plugins``. It sits alone in its folder because ms-swift puts the
#: file's folder on ``sys.path``: beside the other adapters, ``transformers.py`` and ``accelerate.py``
#: would shadow the real packages.
PLUGIN = Path(__file__).resolve().parent / "swift_plugin" / "tunetrack_swift.py"
#: the ``swift`` commands that train with a ``transformers.Trainer``
COMMANDS = ("sft", "pt", "rlhf")
DEFAULT_PROJECT = "swift"
USAGE = (
    "usage: python -m tunetrack.integrations.swift {sft,pt,rlhf} [swift arguments ...] [tunetrack.KEY=VALUE ...]\n"
    "       python -m tunetrack.integrations.swift --plugin-path"
)

# -- values --------------------------------------------------------------------------------------
#: ``swift.utils.format_time``: ``"5s"``, ``"2m 5s"``, ``"1h 2m 5s"``, ``"1d 1h 2m 5s"``
_DURATION = re.compile(r"(?:(\d+)d )?(?:(\d+)h )?(?:(\d+)m )?(\d+)s")


def translate(logs: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``logs`` with the values ms-swift formats as text turned back into what they are:
    a number as a number, a duration as seconds; other text (the ``"3/12"`` progress) stays text."""
    return {key: _value(value) if isinstance(value, str) else value for key, value in logs.items()}


def _value(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        pass
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return text
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


# -- config --------------------------------------------------------------------------------------
def argument_groups(args: Any, skip: Sequence[type] = ()) -> dict[str, dict[str, Any]]:
    """ms-swift's argument object split into its groups: each field under the dataclass that declares
    it (``SftArguments`` inherits ``ModelArguments``, ``DataArguments``, ``TemplateArguments``,
    ``TunerArguments``, ...), as ``model_args``, ``data_args``, ... Fields of the dataclasses in
    ``skip`` (the trainer's own ``TrainingArguments``, recorded as ``args``) are left out, also where
    ``SftArguments`` declares them again to change a default. Never raises."""
    if not dataclasses.is_dataclass(args) or isinstance(args, type):
        return {}
    try:
        skipped = {f.name for s in skip if dataclasses.is_dataclass(s) for f in dataclasses.fields(s)}
        owners = [c for c in type(args).__mro__ if "__annotations__" in c.__dict__]
        groups: dict[str, dict[str, Any]] = {}
        for f in dataclasses.fields(args):
            if f.name in skipped:
                continue
            owner = next((c for c in owners if f.name in c.__dict__["__annotations__"]), type(args))
            groups.setdefault(_group_name(owner), {})[f.name] = getattr(args, f.name, None)
    except Exception as exc:  # the groups are a nicety: training goes on without them
        warn_once("swift:groups", f"could not split ms-swift's arguments into groups: {exc!r}")
        return {}
    return groups


def _group_name(cls: type) -> str:
    """``ModelArguments`` -> ``model_args``, ``RLHFArguments`` -> ``rlhf_args``,
    ``GRPOArgumentsMixin`` -> ``grpo_args``."""
    name = re.sub(r"Arguments?$", "Args", cls.__name__.removesuffix("Mixin"))
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def pipeline_args() -> Any:
    """The argument object of the ms-swift pipeline running this training (``SftArguments``,
    ``RLHFArguments``, ...): the trainer sees only the ``TrainingArguments`` made from it, and a
    callback built from a name gets nothing else. The pipeline is the caller of ``trainer.train()``,
    so it is found on the stack; None when the trainer was not started by one."""
    try:
        from swift.pipelines.base import SwiftPipeline
    except Exception:
        return None
    frame = sys._getframe(1)
    try:
        while frame is not None:
            owner = frame.f_locals.get("self")
            if isinstance(owner, SwiftPipeline):
                return getattr(owner, "args", None)
            frame = frame.f_back  # type: ignore[assignment]
    finally:
        del frame
    return None


# -- the callback ----------------------------------------------------------------------------------
class SwiftCallback(TunetrackCallback):
    """The Transformers callback for ms-swift's trainers. ``--callbacks tunetrack`` builds it with
    ``from_swift``; options not given come from ``TUNETRACK_*`` variables, the project defaults to
    ``swift``. In Python: ``Trainer(..., callbacks=[SwiftCallback(project=...)])`` works too."""

    def __init__(self, trainer: Any = None, **options: Any) -> None:
        options = {"project": DEFAULT_PROJECT, **from_environment(), **options}
        super().__init__(**options)
        #: the trainer, given by ms-swift: its callback list is reordered at ``on_init_end``
        self.trainer = trainer
        self._swift_completions = CompletionLog()

    @classmethod
    def from_swift(cls, args: Any, trainer: Any) -> SwiftCallback:
        """What ms-swift calls for ``--callbacks tunetrack``: ``callbacks_map[name](args, trainer)``."""
        return cls(trainer=trainer)

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Go last: ms-swift's perf callback (MFU) may come after this one in ``--callbacks``, and its
        console callback, which adds the progress fields, is added by the Trainer after all of them.
        The list is replaced, not changed in place: the Trainer is iterating over it right now."""
        handler = getattr(self.trainer, "callback_handler", None)
        callbacks = getattr(handler, "callbacks", None)
        if isinstance(callbacks, list) and any(c is self for c in callbacks):
            handler.callbacks = [c for c in callbacks if c is not self] + [self]  # type: ignore[union-attr]

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        super().on_train_begin(args, state, control, model=model, **kwargs)
        if self._recording and state.is_world_process_zero:
            assert self.tracker is not None
            groups = _swift_config(args)
            if groups:
                self.tracker.log_config({"swift": groups})

    def _row(self, logs: dict[str, Any], state: Any) -> dict[str, Any]:
        row = translate(logs)
        if "train_runtime" in row and "total_flos" not in row:
            # ms-swift's console callback (with --disable_tqdm) pops it before this callback's turn
            row["total_flos"] = getattr(state, "total_flos", None)
        return row

    def _collect_completions(self, args: Any) -> None:
        self._swift_completions.collect(
            Path(args.output_dir) / "completions.jsonl", self.tracker, self._rewards, args
        )


def _swift_config(trainer_args: Any) -> dict[str, Any]:
    """ms-swift's argument groups, without those already recorded as the trainer's ``args``; from
    ``args.json`` in the output folder (all of them, flat) when no pipeline object is found."""
    args = pipeline_args()
    if args is not None:
        return argument_groups(args, skip=[type(trainer_args)])
    saved = Path(getattr(trainer_args, "output_dir", None) or ".") / "args.json"
    try:
        return {"args_json": json.loads(saved.read_text())}
    except (OSError, ValueError):
        warn_once("swift:args", "ms-swift's argument groups were not found; only the trainer's are recorded")
        return {}


# -- registration and the drop-in --------------------------------------------------------------------
def register() -> None:
    """Put ``tunetrack`` in ms-swift's table of Trainer callbacks (``--callbacks tunetrack``)."""
    from swift.callbacks import callbacks_map

    callbacks_map[NAME] = SwiftCallback.from_swift


def with_list_value(argv: Sequence[str], option: str, value: str) -> list[str]:
    """``argv`` with ``value`` added to the list option ``--option``. Every occurrence is merged into
    one at the end: ms-swift's parser keeps only the last occurrence of an option."""
    flag = f"--{option}"
    rest: list[str] = []
    values: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == flag:
            while i < len(argv) and not argv[i].startswith("--"):
                values.append(argv[i])
                i += 1
        elif arg.startswith(flag + "="):
            values.append(arg[len(flag) + 1 :])
        else:
            rest.append(arg)
    if value not in values:
        values.append(value)
    return [*rest, flag, *values]


def command_line(argv: Sequence[str]) -> list[str]:
    """The ``swift`` arguments that load tunetrack's plugin and use its callback."""
    argv = with_list_value(argv, "external_plugins", str(PLUGIN))
    return with_list_value(argv, "callbacks", NAME)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--plugin-path"]:
        print(PLUGIN)
        return
    if not argv or argv[0] not in COMMANDS:
        raise SystemExit(USAGE)
    command, (rest, options) = argv[0], split_options(argv[1:])
    to_environment(options)  # the training runs in a child process (or several, under torchrun)
    from swift.cli.main import cli_main, parse_yaml_args

    parse_yaml_args(rest)  # a config file's keys become arguments, so that its --callbacks are merged too
    sys.argv = ["swift", command, *command_line(rest)]
    cli_main()


if __name__ == "__main__":
    main()
