"""The gradients' norms per parameter tensor, for the distributions adapters record on request
(``TunetrackCallback(grad_distributions=True)``): read in one fused operation where PyTorch has it,
and moved to the host once, as one small tensor."""

from __future__ import annotations

from typing import Any


def grad_norms(model: Any) -> Any:
    """The L2 norm of each parameter's gradient (a 1-D CPU tensor), or None when no parameter has one
    (a frozen model, a rank whose shard holds none)."""
    import torch

    grads = [p.grad.detach() for p in model.parameters() if p.grad is not None and p.grad.numel()]
    if not grads:
        return None
    with torch.no_grad():
        try:
            norms = torch._foreach_norm(grads)  # one kernel for them all (what clip_grad_norm_ uses)
        except (AttributeError, RuntimeError):  # an older PyTorch, or grads of mixed devices
            norms = [torch.linalg.vector_norm(g) for g in grads]
        return torch.stack([n.float().to(norms[0].device) for n in norms]).cpu()


def logs_at(state: Any, step: int) -> bool:
    """Whether a Trainer logs at ``step`` (its ``logging_steps``, as the Trainer resolved a ratio)."""
    every = int(getattr(state, "logging_steps", 0) or 1)
    return step % max(every, 1) == 0
