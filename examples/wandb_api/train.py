"""A nanoGPT-style character model trained with a loop that speaks W&B's API, as countless scripts
do. Run it as it is with W&B, or record it with tunetrack by changing one line:

    import wandb                        ->   import tunetrack.wandb as wandb

Everything below is W&B's API: ``init`` with a config, ``wandb.config`` read back, ``define_metric``,
``log`` with and without ``commit``, an explicit ``step`` for evaluation, a nested dict, a table of
samples, a histogram, ``summary`` and ``finish``.
"""

import math
import sys

import torch
import wandb
from torch import nn

CONFIG = dict(lr=3e-3, batch_size=16, block_size=16, n_embd=32, max_iters=120, eval_interval=40, seed=0)
TEXT = (
    "the quick brown fox jumps over the lazy dog. a tiny model learns which character comes next, "
    "and its loss falls as it does. "
) * 20


class TinyLM(nn.Module):
    def __init__(self, vocab: int, n_embd: int, block: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, vocab))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1])
        return self.mlp(self.tok(idx) + self.pos(positions))


def main() -> None:
    wandb.init(project="nanogpt-tiny", name="char-lm", config=CONFIG, tags=["tiny", "cpu"])
    cfg = wandb.config
    torch.manual_seed(cfg.seed)
    chars = sorted(set(TEXT))
    data = torch.tensor([chars.index(c) for c in TEXT])
    split = int(0.9 * len(data))
    train, val = data[:split], data[split:]
    model = TinyLM(len(chars), cfg.n_embd, cfg.block_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    wandb.define_metric("val/loss", summary="min")

    def batch(source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        starts = torch.randint(len(source) - cfg.block_size - 1, (cfg.batch_size,))
        x = torch.stack([source[s : s + cfg.block_size] for s in starts])
        y = torch.stack([source[s + 1 : s + cfg.block_size + 1] for s in starts])
        return x, y

    def loss_of(source: torch.Tensor) -> torch.Tensor:
        x, y = batch(source)
        return nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())

    for it in range(cfg.max_iters):
        lr = cfg.lr * 0.5 * (1 + math.cos(math.pi * it / cfg.max_iters))
        for group in optimizer.param_groups:
            group["lr"] = lr
        if it % cfg.eval_interval == 0:
            with torch.no_grad():
                val_loss = loss_of(val).item()
            wandb.log({"val/loss": val_loss, "val/perplexity": math.exp(val_loss)}, step=it)
        loss = loss_of(train)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        optimizer.step()
        wandb.log({"train": {"loss": loss.item(), "grad_norm": grad_norm}}, commit=False)
        wandb.log({"lr": lr, "iter": it}, step=it)
        if it == cfg.max_iters - 1:
            weights = model.mlp[0].weight.detach().flatten().tolist()
            with torch.no_grad():
                idx = torch.zeros((1, 1), dtype=torch.long)
                for _ in range(cfg.block_size - 1):
                    idx = torch.cat([idx, model(idx)[:, -1].argmax(-1, keepdim=True)], dim=1)
            sample = "".join(chars[i] for i in idx[0].tolist())
            table = wandb.Table(columns=["iter", "sample"], data=[[it, sample]])
            wandb.log({"samples": table, "weights": wandb.Histogram(weights)}, step=it)
    wandb.summary["final_train_loss"] = loss.item()
    wandb.finish()
    print(wandb.run is None and "finished", file=sys.stderr)


if __name__ == "__main__":
    main()
