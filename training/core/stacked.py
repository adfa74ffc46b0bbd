"""Many frozen networks of one architecture, deciding in one batched forward pass.

The opponent pool holds up to ``opponents.max_snapshots`` frozen copies of the policy, and
at every step of a rollout each of them moves at its own few tables. Called one by one,
each costs a forward pass whose fixed cost (a dozen small operators) far exceeds its
arithmetic at a handful of rows: with 20 snapshots, about three quarters of a rollout's
time. ``PoolSampler`` stacks the snapshots' weights once (``torch.func.stack_module_state``)
and runs their heads together with ``torch.vmap``, each network on its own rows (padded to
the largest group), then draws every row's action from one set of uniforms.

The inputs (``ActorCritic.network_inputs``) depend only on the rule set and the network's
shape, never on its weights, so they are computed once for all rows. Snapshots of another
shape (an exploiter of another width, say) decide one by one, as before.
"""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import torch
from torch.func import functional_call, stack_module_state

from training.core.model import ActorCritic, sample_logits


class _Heads(torch.nn.Module):
    """``model.heads`` as a module's forward pass (what ``functional_call`` calls)."""

    def __init__(self, model: ActorCritic):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.model.heads(inputs)[0]


def architecture(model: ActorCritic) -> tuple:
    """What two networks must share to decide in one stacked pass: their class, rule set and constructor's arguments
    (which fix every parameter's shape and every buffer).
    """
    return type(model), model.game_config, json.dumps(model.spec, sort_keys=True)


class PoolSampler:
    """Samples the actions of several frozen ``ActorCritic`` networks, each at its own rows, in one batched pass.

    The stacked weights are kept while the same networks are asked for (a pool changes only when a snapshot joins).
    """

    stacked_pass: bool = True
    """False: each network decides alone, one forward pass each, from the same uniforms (what
    ``benchmarks/bench_pool.py`` compares the stacked pass with)."""

    def __init__(self):
        self._members: tuple[int, ...] = ()
        self._models: list[ActorCritic] = []
        self._stacked: tuple[dict, dict] | None = None
        self._heads: _Heads | None = None

    def _stack(self, models: list[ActorCritic]) -> bool:
        """Stack ``models``' weights unless they are the ones stacked last; whether they share one architecture
        (else nothing is stacked). Checked once per pool, not at every step.
        """
        members = tuple(id(m) for m in models)
        if members != self._members:
            self._members, self._models = members, list(models)
            self._stacked = self._heads = None
            if len({architecture(m) for m in models}) == 1:
                params, buffers = stack_module_state([_Heads(m) for m in models])
                self._stacked = ({k: v.detach() for k, v in params.items()}, buffers)
                self._heads = copy.deepcopy(_Heads(models[0])).to("meta")
        return self._stacked is not None

    @torch.no_grad()
    def sample(
        self,
        models: list[ActorCritic],
        rows: list[np.ndarray],
        obs: np.ndarray,
        masks: np.ndarray,
        window: np.ndarray | None,
        generator: torch.Generator | None,
        device: torch.device | str = "cpu",
    ) -> list[np.ndarray]:
        """The actions of ``models[k]`` at the rows ``rows[k]`` of ``obs``, ``masks`` (and ``window``, the move slots as
        indices), one array per network. The uniforms come from ``generator``, one per row, in the order of
        ``rows`` concatenated.
        """
        if len(models) != len(rows):
            raise ValueError(f"{len(models)} networks and {len(rows)} groups of rows; expected one group per network")
        order = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        sizes = [len(r) for r in rows]
        obs_t = torch.from_numpy(obs[order]).to(device)
        mask_t = torch.from_numpy(masks[order].astype(bool)).to(device)
        window_t = torch.from_numpy(window[order]).to(device) if window is not None else None
        if not self.stacked_pass or len(models) == 1 or not self._stack(models):
            logits = torch.cat(
                [
                    m.heads(m.network_inputs(o, w))[0]
                    for m, o, w in zip(models, obs_t.split(sizes), _split(window_t, sizes))
                ]
            )
        else:
            logits = self._stacked_logits(models[0].network_inputs(obs_t, window_t), sizes)
        action, _ = sample_logits(logits, mask_t, generator)
        return np.split(action.cpu().numpy(), np.cumsum(sizes)[:-1])

    def _stacked_logits(self, inputs: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        """Each network's logits at its own rows of ``inputs`` (grouped in order), from one vmapped pass over the
        weights ``_stack`` stacked.
        """
        width = max(sizes)
        padded = inputs.new_zeros((len(sizes), width, inputs.shape[1]))
        for k, part in enumerate(inputs.split(sizes)):
            padded[k, : len(part)] = part
        params, buffers = self._stacked
        heads = self._heads

        def one(p, b, x):
            return functional_call(heads, (p, b), (x,))

        with warnings.catch_warnings():  # (embedding_bag has no batching rule yet: vmap loops over it)
            warnings.filterwarnings("ignore", message=".*performance drop because we have not yet implemented")
            out = torch.vmap(one)(params, buffers, padded)
        return torch.cat([out[k, :size] for k, size in enumerate(sizes)])


def _split(window: torch.Tensor | None, sizes: list[int]) -> list[torch.Tensor | None]:
    return list(window.split(sizes)) if window is not None else [None] * len(sizes)
