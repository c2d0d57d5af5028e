"""TRL 1.16 trainers take the same callback: SFT, DPO and GRPO (with completions) on CPU."""

from __future__ import annotations

import copy

import pytest
from _tiny import LINES, build_model, build_tokenizer
from datasets import Dataset
from real_runs import COMMON as TRAINING

from tunetrack.integrations.transformers import TunetrackCallback
from tunetrack.reader import open_run
from tunetrack.reader.tokens import tokens_of

COMMON = {**TRAINING, "learning_rate": 1e-3}


def test_sft(tmp_path, root):
    from trl import SFTConfig, SFTTrainer

    tok = build_tokenizer()
    cb = TunetrackCallback(dir=root, name="sft")
    SFTTrainer(
        model=build_model(tok),
        processing_class=tok,
        train_dataset=Dataset.from_dict({"text": LINES[:40]}),
        args=SFTConfig(output_dir=str(tmp_path), max_steps=6, max_length=32, **COMMON),
        callbacks=[cb],
    ).train()
    cb.finish()
    run = open_run("sft", dir=root)
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert {"mean_token_accuracy", "num_tokens", "entropy"} <= set(run.keys())
    assert len(run.series("perf/tokens_per_s")) >= 4  # derived from TRL's cumulative num_tokens
    assert run.config["args"]["max_length"] == 32


def test_dpo(tmp_path, root):
    from trl import DPOConfig, DPOTrainer

    tok = build_tokenizer()
    model = build_model(tok)
    data = Dataset.from_dict(
        {
            "prompt": ["what is two plus two?"] * 16,
            "chosen": [" four"] * 16,
            "rejected": [" the lazy dog"] * 16,
        }
    )
    cb = TunetrackCallback(dir=root, name="dpo")
    DPOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),
        processing_class=tok,
        train_dataset=data,
        args=DPOConfig(
            output_dir=str(tmp_path), max_steps=4, max_length=32, gradient_checkpointing=False, **COMMON
        ),
        callbacks=[cb],
    ).train()
    cb.finish()
    run = open_run("dpo", dir=root)
    assert run.series("loss").steps.tolist() == [1, 2, 3, 4]
    assert {
        "rewards/chosen",
        "rewards/rejected",
        "rewards/accuracies",
        "rewards/margins",
        "logps/chosen",
    } <= set(run.keys())


def test_grpo_with_completions(tmp_path, root):
    import json
    import math

    import pandas as pd
    from click.testing import CliRunner
    from trl import GRPOConfig, GRPOTrainer

    from tunetrack.cli import cli

    tok = build_tokenizer()

    def length_reward(completions, completion_ids, log_extra=None, **kw):
        if log_extra is not None:  # TRL's extra columns of the completions table
            log_extra("length", [len(c) for c in completions])
            # values per token, as a reward function that scores tokens sees them (TRL hands it the ids)
            tokens = [[tok.decode([i]) for i in ids] for ids in completion_ids]
            log_extra("tokens", tokens)
            log_extra("token_reward", [[-0.1 * len(t.strip()) for t in row] for row in tokens])
        return [-abs(len(c) - 10) / 10 for c in completions]

    def broken_reward(completions, **kw):
        return [None] * len(completions)  # all-None rewards: TRL logs None values

    cb = TunetrackCallback(dir=root, name="grpo")
    data = Dataset.from_dict(
        {"prompt": ["the quick brown", "what is two", "a tracker records", "fine-tuning a"] * 4}
    )
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=3,
        num_generations=4,
        max_completion_length=8,
        generation_batch_size=4,
        log_completions=True,
        **COMMON,
    )
    GRPOTrainer(
        model=build_model(tok),
        reward_funcs=[length_reward, broken_reward],
        processing_class=tok,
        train_dataset=data,
        args=args,
        callbacks=[cb],
    ).train()
    cb.finish()
    run = open_run("grpo", dir=root)
    assert run.series("reward").steps.tolist() == [1, 2, 3]
    assert {"reward_std", "completions/mean_length", "rewards/length_reward/mean"} <= set(run.keys())
    none_rewards = run.series("rewards/broken_reward/mean")
    assert len(none_rewards) == 3 and all(v is None for v in none_rewards.values.tolist())
    samples = run.texts("completions")
    assert [s["step"] for s in samples] == [1, 2, 3]
    assert all(
        len(s["rows"]) == 4 and "completion" in s["rows"][0] and "prompt" in s["rows"][0] for s in samples
    )
    # `tunetrack samples --json` holds exactly the rows TRL wrote, at their steps, rewards as numbers
    result = CliRunner().invoke(cli, ["samples", "grpo", "completions", "--json", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    written = [
        (int(path.stem.split("_")[-1]), pd.read_parquet(path).to_dict("records"))
        for path in sorted((tmp_path / "completions").glob("completions_*.parquet"))
    ]
    assert [(s["step"], s["index"]) for s in got] == [
        (step, i) for step, rows in written for i in range(len(rows))
    ]
    theirs = [row for _, rows in written for row in rows]
    assert list(theirs[0]) == [
        "step",
        "prompt",
        "completion",
        "length_reward",
        "broken_reward",
        "length",
        "token_reward",
        "tokens",
        "advantage",
    ]
    # TRL's rows, and the total reward beside the reward functions' columns (TRL's table has none)
    assert [list(s["row"]) for s in got] == [
        [
            *[
                "step",
                "prompt",
                "completion",
                "length_reward",
                "broken_reward",
                "reward",
                "length",
                "token_reward",
                "tokens",
                "advantage",
            ]
        ]
        for _ in theirs
    ]
    assert all(
        _same({k: v for k, v in s["row"].items() if k != "reward"}, row) for s, row in zip(got, theirs)
    )
    for step in (1, 2, 3):  # the trainer's own `reward` metric is the mean of the rows' totals
        totals = [s["row"]["reward"] for s in got if s["step"] == step]
        logged = run.series("reward")
        assert math.fsum(totals) / len(totals) == pytest.approx(logged.values[logged.steps == step][0])
    assert all(
        isinstance(s["row"]["length_reward"], float) and math.isnan(s["row"]["broken_reward"]) for s in got
    )
    assert run.sample_tables("completions")[0].columns() == {
        "step": "number",
        "prompt": "text",
        "completion": "text",
        "length_reward": "number",
        "broken_reward": "number",
        "reward": "number",
        "length": "number",
        "token_reward": "sequence",
        "tokens": "sequence",
        "advantage": "number",
    }
    # the values per token, aligned with the completion's tokens as the reward function saw them
    for s, row in zip(got, theirs):
        aligned = tokens_of(s["row"])
        assert aligned is not None and aligned.column == "tokens"
        assert aligned.tokens == list(row["tokens"]) and 1 <= len(aligned.tokens) <= 8  # cut at EOS
        assert aligned.values == {"token_reward": list(row["token_reward"])}


def _same(ours: dict, theirs: dict) -> bool:
    """Equal rows, NaN equal to NaN (TRL writes a reward function's None as NaN)."""
    import math

    def same(a, b):
        if hasattr(b, "tolist"):  # a list column, as pandas reads it back from TRL's Parquet
            b = b.tolist()
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b

    return ours.keys() == theirs.keys() and all(same(ours[k], theirs[k]) for k in ours)


def test_grpo_example_script(root):
    import os
    import subprocess
    import sys

    from support.helpers import EXAMPLES_DIR, SRC

    proc = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES_DIR, "trl_grpo.py"), "--dir", str(root)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = open_run("grpo-example", dir=root)
    assert run.series("reward").steps.tolist() == [1, 2, 3] and len(run.texts("completions")) == 3
