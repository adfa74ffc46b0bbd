"""Compiled CPU passes (numba) for fixed computations of the network, each tested against its tensor form.

On a CPU, tensor operations over small batches cost more in dispatch and in passes over
memory than in arithmetic. Three parts of ``training.core.model`` are fixed functions that a
loop of plain arithmetic does in one pass, and ``tests/test_kernels.py`` checks each
against the tensor operations it replaces (values, and gradients where there are any):

- ``masked_logprob_entropy(logits, legal, action)``: a PPO update needs, per sample,
  the log-probability of the action taken and the entropy of the masked softmax, and
  their gradients. As tensor operations over all ``num_actions`` columns (mask bias,
  ``log_softmax``, ``softmax``, ``gather``, the entropy's product and sum, and each
  one's backward) that is about fifteen passes over a (minibatch, 219) tensor, which
  cost more than the network's matrix products. Only about a quarter of the actions
  are legal on average; here one pass per row touches the legal entries only, and a
  second computes the gradient. The result equals
  ``log_softmax(logits + mask_bias(legal)).gather(action)`` and that softmax's entropy.
- ``card_counting(obs, counting)``: the ``CardCounting`` inputs, about thirty small
  tensor operations per call in the rollout, in one pass per row.
- ``lookup_sum(table, rows)``: the sum of the ``table`` rows each row of ``rows`` names
  (``embedding_bag`` in sum mode), with a gradient in one pass over ``rows``: the network's
  read of the move window (``ActorCritic.heads``). ``embedding_bag``'s own backward sorts
  every index first and costs about twenty times its forward pass.
- ``sample_masked(logits, legal, draws)``: the rollout's draw from the masked softmax
  (mask bias, ``log_softmax``, ``softmax``, ``cumsum``, ``searchsorted``, ``gather``), in
  one pass per row over the same uniform draws.

``available(tensor)`` says whether a compiled pass can run (numba installed, a CPU
float32 tensor); ``training.core.model`` uses the tensor operations otherwise (on a GPU, or
without numba). See ``docs/research.md``, *Throughput*.
"""

from __future__ import annotations

import numpy as np
import torch

try:
    import numba
except ImportError:  # the tensor path serves instead
    numba = None


def available(tensor: torch.Tensor) -> bool:
    """Whether a compiled pass can compute over ``tensor``: numba importable, a CPU float32 tensor."""
    return numba is not None and tensor.device.type == "cpu" and tensor.dtype == torch.float32


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
    def _backward(
        logits, legal, action, lse, entropy, policy, grad_logprob, grad_entropy, out
    ):  # pragma: no cover - compiled
        rows, cols = logits.shape
        for b in range(rows):
            g_lp = grad_logprob[b]
            g_h = grad_entropy[b]
            shift = entropy[b] - lse[b]
            for j in range(cols):
                # d logprob / dz = onehot(action) - p; d H / dz = -p (log p + H), with log p = z - lse; 0 where illegal
                # (p = 0)
                out[b, j] = -policy[b, j] * (g_lp + g_h * (logits[b, j] + shift)) if legal[b, j] else 0.0
            out[b, action[b]] += g_lp

    @numba.njit(nogil=True, cache=True)
    def _card_counting(
        obs, own, collections, claim, card, n, truth, true_total, deck, loss_count, max_copies, out
    ):  # pragma: no cover - compiled
        rows = obs.shape[0]
        identities, claims = truth.shape
        visible = np.empty(identities, np.float64)
        # does identity i fit the claim in play (weighted by the claim one-hot)
        claim_fit = np.empty(identities, np.float64)
        for b in range(rows):
            visible_total = 0.0
            own_fitting = 0.0
            card_fits = 0.0
            for i in range(identities):
                seen = obs[b, own + i]
                for s in range(n):
                    seen += obs[b, collections + s * identities + i]
                visible[i] = seen
                visible_total += seen
                fit = 0.0
                for c in range(claims):
                    fit += truth[i, c] * obs[b, claim + c]
                claim_fit[i] = fit
                own_fitting += obs[b, own + i] * fit
                card_fits += obs[b, card + i] * fit
            unseen = max(deck - visible_total, 1.0)
            p_claim = 0.0
            for c in range(claims):
                visible_true = 0.0
                for i in range(identities):
                    visible_true += visible[i] * truth[i, c]
                p_true = (true_total[c] - visible_true) / unseen
                out[b, c] = p_true
                p_claim += p_true * obs[b, claim + c]
            out[b, claims] = p_claim
            out[b, claims + 1] = own_fitting / max_copies
            out[b, claims + 2] = card_fits
            for s in range(n):
                fitting = 0.0
                same = 0.0
                for i in range(identities):
                    held = obs[b, collections + s * identities + i]
                    fitting += held * claim_fit[i]
                    same += held * obs[b, card + i]
                out[b, claims + 3 + s] = fitting / loss_count
                out[b, claims + 3 + n + s] = same / loss_count

    @numba.njit(nogil=True, cache=True)
    def _sample(logits, legal, draws, action, logprob):  # pragma: no cover - compiled
        rows, cols = logits.shape
        weights = np.empty(cols, np.float64)
        for b in range(rows):
            top = -np.inf
            for j in range(cols):
                if legal[b, j] and logits[b, j] > top:
                    top = logits[b, j]
            total = 0.0
            for j in range(cols):
                weights[j] = np.exp(logits[b, j] - top) if legal[b, j] else 0.0
                total += weights[j]
            target = draws[b] * total  # inverse CDF: the first action whose cumulative weight exceeds the draw
            cumulative = 0.0
            chosen = -1
            for j in range(cols):
                if weights[j] > 0.0:
                    cumulative += weights[j]
                    chosen = j  # (rounding can leave the draw above the last cumulative weight: the last positive one)
                    if cumulative > target:
                        break
            action[b] = chosen
            logprob[b] = logits[b, chosen] - top - np.log(total)

    @numba.njit(nogil=True, cache=True)
    def _scatter_rows(grad_out, rows, grad_table):  # pragma: no cover - compiled
        for b in range(rows.shape[0]):
            for j in range(rows.shape[1]):
                row = rows[b, j]
                for h in range(grad_out.shape[1]):
                    grad_table[row, h] += grad_out[b, h]


class _LookupSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, table: torch.Tensor, rows: torch.Tensor):
        ctx.save_for_backward(rows)
        ctx.table_rows = len(table)
        return torch.nn.functional.embedding_bag(rows, table, mode="sum")

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (rows,) = ctx.saved_tensors
        grad = np.zeros((ctx.table_rows, grad_out.shape[1]), np.float32)
        _scatter_rows(grad_out.contiguous().numpy(), rows.contiguous().numpy(), grad)
        return torch.from_numpy(grad), None


def lookup_sum(table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, D): the sum of the rows of ``table`` (R, D) float32 that each row of ``rows`` (B, K) int64 names,
    differentiable in ``table``; ``embedding_bag(rows, table, mode="sum")``.
    """
    return _LookupSum.apply(table, rows)


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


def masked_logprob_entropy(
    logits: torch.Tensor, legal: torch.Tensor, action: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log-probability of action, entropy)`` of the softmax over the legal logits, each (B,), differentiable in
    ``logits``.

    ``logits`` (B, A) float32 on the CPU (``available``), ``legal`` (B, A) bool with at
    least one legal action per row, ``action`` (B,) int64 legal actions.
    """
    if legal.dtype != torch.bool:
        raise TypeError(f"legal must be a boolean mask, got dtype {legal.dtype}")
    if logits.shape != legal.shape or action.shape != logits.shape[:1]:
        raise ValueError(
            f"shapes do not match: logits {tuple(logits.shape)}, legal {tuple(legal.shape)}, action "
            f"{tuple(action.shape)}; expected (B, A), (B, A), (B,)"
        )
    return _MaskedLogprobEntropy.apply(logits, legal, action.to(torch.int64))


def card_counting(obs: torch.Tensor, counting) -> torch.Tensor:
    """``counting(obs)`` (a ``training.core.model.CardCounting``) in one compiled pass per row: (B, ``counting.size``)
    float32.
    """
    x = obs.detach().contiguous().numpy()
    out = np.empty((len(x), counting.size), np.float32)
    _card_counting(
        x,
        counting.own.start,
        counting.collections.start,
        counting.claim.start,
        counting.card.start,
        counting.n,
        counting.truth.numpy(),
        counting.true_total.numpy(),
        counting.deck,
        counting.loss_count,
        counting.max_copies,
        out,
    )
    return torch.from_numpy(out)


def sample_masked(logits: torch.Tensor, legal: torch.Tensor, draws: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(actions, their log-probabilities)`` drawn from the softmax over the legal logits by inverse CDF, one uniform
    draw in [0, 1) per row.

    The same draw as ``ActorCritic.sample``'s tensor form: the first legal action whose
    cumulative probability exceeds the draw; an action of probability 0 is never drawn.
    """
    z = logits.detach().contiguous().numpy()
    action, logprob = np.empty(len(z), np.int64), np.empty(len(z), np.float32)
    _sample(z, legal.contiguous().numpy(), draws.contiguous().numpy(), action, logprob)
    return torch.from_numpy(action), torch.from_numpy(logprob)
