"""End-to-end tests with ms-swift 4.6 in its own environment: real ``swift`` commands on CPU.

A tiny Qwen2 (two layers, hidden size 32) is built from a config and saved with a byte-level BPE
tokenizer trained on a few local sentences, next to three small JSON Lines datasets: chat turns
(SFT), preference pairs (DPO) and prompts (GRPO). Nothing comes from a hub.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from swift_run import LINES, WORDS, run_swift


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="session")
def assets(tmp_path_factory):
    """The tiny Qwen2 with its tokenizer, and the three datasets."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    base = tmp_path_factory.mktemp("swift")
    model_dir = base / "model"
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],  # the qwen template's
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(LINES, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.save_pretrained(model_dir)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
    )
    Qwen2ForCausalLM(config).save_pretrained(model_dir)

    def turn(w: str) -> list[dict]:
        return [{"role": "user", "content": f"say {w}"}, {"role": "assistant", "content": f"{w} {w}"}]

    return {
        "model": model_dir,
        "chat": _write_jsonl(base / "chat.jsonl", [{"messages": turn(w)} for w in WORDS] * 4),
        "pairs": _write_jsonl(
            base / "pairs.jsonl",
            [{"messages": turn(w), "rejected_response": "the lazy dog"} for w in WORDS] * 2,
        ),
        "prompts": _write_jsonl(base / "prompts.jsonl", [{"messages": turn(w)[:1]} for w in WORDS] * 2),
    }


@pytest.fixture(scope="session")
def plugin() -> str:
    """The plugin file, as users get its path: ``python -m tunetrack.integrations.swift --plugin-path``."""
    out = run_swift([sys.executable, "-m", "tunetrack.integrations.swift", "--plugin-path"])
    return out.strip().splitlines()[-1]
