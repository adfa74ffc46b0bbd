"""Distillation of a policy table over observations into the actor-critic network.

A solver over the exact game tree (``training.algorithms.cfr``) gives action probabilities for
every distinct (observation, mask) the env can show. ``distill`` fits an
``ActorCritic`` to them with full-batch Adam on a weighted cross-entropy (the KL from
the table to the network), so that the result is an ordinary agent checkpoint that
plays anywhere the product agents play. Rows are weighted by how much the policy there
matters to a best response against it: the chance of reaching the row times the acting
seat's own reach (what the average strategy is weighted by), plus a floor so that rows
reached only by the opponents' deviations are fitted too. The value head is fitted to
the expected reward of the acting seat at each row (weighted by the probability of the
row), so the network also warm-starts PPO sensibly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from training.core.model import ActorCritic

WEIGHT_FLOOR = 0.1
"""Share of the loss weight spread evenly over all rows (the rest follows the reach)."""


@dataclass
class DistillResult:
    """A distilled network and how closely it matches the table."""

    model: ActorCritic
    kl: float
    """Weighted mean KL(table || network) over the rows at the end (nats)."""
    max_error: float
    """Largest absolute difference between a table probability and the network's."""
    seconds: float


def row_weights(reach_weight: np.ndarray) -> np.ndarray:
    """Loss weights with mean 1: ``1 - WEIGHT_FLOOR`` of the mass by ``reach_weight``, the rest uniform."""
    total = float(reach_weight.sum())
    share = reach_weight / total if total > 0 else np.full(len(reach_weight), 1.0 / len(reach_weight))
    return len(reach_weight) * ((1 - WEIGHT_FLOOR) * share + WEIGHT_FLOOR / len(reach_weight))


def distill(
    model: ActorCritic,
    observations: np.ndarray,
    masks: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray,
    values: np.ndarray | None = None,
    value_weights: np.ndarray | None = None,
    steps: int = 3000,
    learning_rate: float = 3e-3,
) -> DistillResult:
    """Fit ``model`` (in place) to ``targets`` (U, A) at ``observations`` (U, O) / ``masks`` (U, A)."""
    import time

    started = time.perf_counter()
    obs = torch.as_tensor(observations, dtype=torch.float32)
    mask = torch.as_tensor(masks).bool()
    target = torch.as_tensor(targets, dtype=torch.float32)
    weight = torch.as_tensor(weights, dtype=torch.float32)
    log_target = torch.where(target > 0, target.clamp(min=1e-30).log(), torch.zeros_like(target))
    value_target = torch.as_tensor(values, dtype=torch.float32) if values is not None else None
    value_weight = torch.as_tensor(value_weights, dtype=torch.float32) if value_weights is not None else None
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(steps, 1))
    model.train()
    for _ in range(steps):
        logits, value = model(obs, mask)
        logp = torch.log_softmax(logits, dim=-1)
        kl = (target * (log_target - logp)).sum(-1)
        loss = (weight * kl).mean()
        if value_target is not None:
            loss = loss + 0.5 * (value_weight * (value - value_target) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()
    with torch.no_grad():
        logits, _ = model(obs, mask)
        logp = torch.log_softmax(logits, dim=-1)
        kl = float((weight * (target * (log_target - logp)).sum(-1)).mean())
        max_error = float((logp.exp() - target).abs().max())
    return DistillResult(model=model, kl=kl, max_error=max_error, seconds=time.perf_counter() - started)
