"""The masked policy's log-probability and entropy in one compiled pass per row (CPU).

A PPO update needs, for each sample, the log-probability of the action taken and the
entropy of the masked softmax, and their gradients with respect to the logits. Written
as tensor operations over all ``num_actions`` columns (mask bias, ``log_softmax``,
``softmax``, ``gather``, the entropy's product and sum, and the backward of each), that is
about fifteen passes over a (minibatch, 219) tensor, and on a CPU those passes cost more
than the network's matrix products. Only about a quarter of the actions are legal on
average, so this module computes both in one pass per row that touches the legal
entries only, compiled with numba, and the gradient in a second pass (see
``docs/training.md``, *Throughput*).

    logprob, entropy = masked_logprob_entropy(logits, legal, action)

``logits`` are the policy head's raw outputs (B, A), ``legal`` the boolean mask (B, A),
``action`` the actions (B,). The result equals
``log_softmax(logits + mask_bias(legal)).gather(action)`` and that softmax's entropy,
and so do the gradients (``tests/test_masked_policy.py`` checks both against the tensor
path). ``available()`` says whether the compiled path can run (numba installed, CPU
float32 tensors); ``ActorCritic.evaluate`` falls back to the tensor path otherwise.
"""

from __future__ import annotations

import numpy as np
import torch

try:
    import numba
except ImportError:  # the tensor path serves instead
    numba = None


def available(logits: torch.Tensor) -> bool:
    """Whether the compiled path can compute over ``logits``: numba importable, a CPU float32 tensor."""
    return numba is not None and logits.device.type == "cpu" and logits.dtype == torch.float32


if numba is not None:

    @numba.njit(nogil=True, cache=True)
    def _forward(logits, legal, action, logprob, entropy, lse, policy):  # pragma: no cover - compiled
        rows, cols = logits.shape
        for b in range(rows):
            top = np.float32(-np.inf)
            for j in range(cols):
                if legal[b, j] and logits[b, j] > top:
                    top = logits[b, j]
            total = np.float32(0.0)
            weighted = np.float32(0.0)  # sum of exp(z - top) * (z - top)
            for j in range(cols):
                if legal[b, j]:
                    shifted = logits[b, j] - top
                    e = np.exp(shifted)
                    policy[b, j] = e
                    total += e
                    weighted += e * shifted
                else:
                    policy[b, j] = 0.0
            log_total = np.log(total)
            scale = np.float32(1.0) / total
            for j in range(cols):
                policy[b, j] *= scale
            lse[b] = top + log_total
            logprob[b] = logits[b, action[b]] - lse[b]
            entropy[b] = log_total - weighted * scale  # -sum p log p, with log p = shifted - log_total

    @numba.njit(nogil=True, cache=True)
    def _backward(logits, legal, action, lse, entropy, policy, grad_logprob, grad_entropy, out):  # pragma: no cover - compiled
        rows, cols = logits.shape
        for b in range(rows):
            g_lp = grad_logprob[b]
            g_h = grad_entropy[b]
            shift = entropy[b] - lse[b]
            for j in range(cols):
                # d logprob / dz = onehot(action) - p; d H / dz = -p (log p + H), with log p = z - lse; 0 where illegal (p = 0)
                out[b, j] = -policy[b, j] * (g_lp + g_h * (logits[b, j] + shift)) if legal[b, j] else 0.0
            out[b, action[b]] += g_lp


class _MaskedLogprobEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, legal: torch.Tensor, action: torch.Tensor):
        z = logits.detach().contiguous().numpy()
        mask = legal.contiguous().numpy()
        act = action.contiguous().numpy()
        rows = len(z)
        logprob, entropy, lse = np.empty(rows, np.float32), np.empty(rows, np.float32), np.empty(rows, np.float32)
        policy = np.empty_like(z)
        _forward(z, mask, act, logprob, entropy, lse, policy)
        ctx.arrays = (z, mask, act, lse, entropy, policy)
        ctx.set_materialize_grads(False)
        return torch.from_numpy(logprob), torch.from_numpy(entropy)

    @staticmethod
    def backward(ctx, grad_logprob: torch.Tensor | None, grad_entropy: torch.Tensor | None):
        z, mask, act, lse, entropy, policy = ctx.arrays
        zeros = np.zeros(len(z), np.float32)
        g_lp = zeros if grad_logprob is None else grad_logprob.contiguous().numpy().astype(np.float32, copy=False)
        g_h = zeros if grad_entropy is None else grad_entropy.contiguous().numpy().astype(np.float32, copy=False)
        out = np.empty_like(z)
        _backward(z, mask, act, lse, entropy, policy, g_lp, g_h, out)
        return torch.from_numpy(out), None, None


def masked_logprob_entropy(logits: torch.Tensor, legal: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log-probability of action, entropy)`` of the softmax over the legal logits, each (B,), differentiable in ``logits``.

    ``logits`` (B, A) float32 on the CPU (``available``), ``legal`` (B, A) bool with at
    least one legal action per row, ``action`` (B,) int64 legal actions.
    """
    if legal.dtype != torch.bool:
        raise TypeError(f"legal must be a boolean mask, got dtype {legal.dtype}")
    if logits.shape != legal.shape or action.shape != logits.shape[:1]:
        raise ValueError(f"shapes do not match: logits {tuple(logits.shape)}, legal {tuple(legal.shape)}, action {tuple(action.shape)}; expected (B, A), (B, A), (B,)")
    return _MaskedLogprobEntropy.apply(logits, legal, action.to(torch.int64))
