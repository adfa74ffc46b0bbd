"""The masked actor-critic network and the agent that plays with it.

One network serves every seat: observations are ego-centric (the observer is seat 0)
and action targets are seat offsets, so the same weights play any position. Inputs
are scaled by fixed per-segment constants derived from the observation ``Layout``
(card counts by the number of copies, collections by ``loss_count``, hand sizes by
the largest hand, ...), so no running statistics need saving. Illegal actions get a
logit of ``MASKED_LOGIT``, which gives them probability exactly zero.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from baselines.agent import LogitsAgent
from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for
from cockroach_env.window import EMPTY, window_layout
from training.core import kernels

MASKED_LOGIT = -1e9
"""Logit of an illegal action: ``exp`` underflows to 0, and ``0 * MASKED_LOGIT`` stays finite in the entropy."""


def sample_logits(
    logits: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Actions and their log-probabilities, drawn from the masked softmax of unmasked ``logits`` (B, A): one uniform
    per row from ``generator`` (``ActorCritic.sample`` describes the draw). ``mask`` is boolean (True = legal), or
    its ``mask_bias``.
    """
    draw = torch.rand((len(logits), 1), generator=generator, device=logits.device)
    if mask.dtype == torch.bool and kernels.available(logits):
        # the same draw in one compiled pass per row
        return kernels.sample_masked(logits, mask, draw[:, 0])
    logits = logits + (mask_bias(mask) if mask.dtype == torch.bool else mask)
    log_policy = torch.log_softmax(logits, dim=-1)
    cumulative = torch.softmax(logits, dim=-1).cumsum_(dim=-1)
    action = torch.searchsorted(cumulative, draw * cumulative[:, -1:], right=True).squeeze(1)
    return action, log_policy.gather(1, action[:, None]).squeeze(1)


def mask_bias(mask: torch.Tensor) -> torch.Tensor:
    """The additive form of a legal-action mask: 0.0 where ``mask`` is True, ``MASKED_LOGIT`` elsewhere (float32).

    Logits plus this bias equal the masked logits. A PPO update computes it once for
    all its epochs: on the CPU, turning a boolean mask into floats costs about ten
    times a float addition of the same size, and ``masked_fill`` as much again in its
    backward pass.
    """
    return (~mask).to(torch.float32) * MASKED_LOGIT


def observation_scale(config: GameConfig) -> np.ndarray:
    """Per-entry input scale (observation ``* scale`` lies roughly in [0, 1]), segment by segment."""
    enc = encoding_for(config)
    cards = config.cards
    n = config.num_players
    dealt = cards.deck_size - config.discard - config.penalty_deck_size
    largest_hand = math.ceil(dealt / n) + 2  # Royal players may take specials back into hand
    copies = np.asarray(cards.copies, np.float32)
    divisor_by_segment = {
        "own_hand": copies,
        "dealt_hand": copies,
        "opening_collections": float(config.loss_count),
        "collections": float(config.loss_count),
        "hand_sizes": float(largest_hand),
        "history": float(largest_hand),
        "penalty_size": float(max(config.penalty_deck_size, 1)),
        "place_remaining": 2.0,
    }
    scale = np.ones(enc.observation.size, np.float32)
    for seg in enc.observation.segments.values():
        divisor = divisor_by_segment.get(seg.name)  # every other segment is one-hot or a 0/1 flag
        if divisor is not None:
            view = scale[seg.start : seg.stop].reshape(seg.shape)
            view[...] = 1.0 / np.broadcast_to(divisor, seg.shape)
    return scale


def _layer(inputs: int, outputs: int, std: float, generator: torch.Generator | None) -> nn.Linear:
    layer = nn.Linear(inputs, outputs)
    nn.init.orthogonal_(layer.weight, std, generator=generator)
    nn.init.zeros_(layer.bias)
    return layer


class CardCounting(nn.Module):
    """Inputs a card counter computes, derived from the observation (no hidden information).

    Per claim, the chance that an unseen card makes it true (copies of the cards that
    fit it, less those visible in the own hand and in every collection, over the
    number of unseen cards); for the claim in play, that chance, the own cards that fit
    it and whether the card in play (when the observer has seen it) fits it; and per
    seat, the collected cards that fit the claim in play and the collected cards of the
    card in play's identity (how close each seat is to a loss if it takes the card).
    These are products of observation segments that an MLP would otherwise have to
    learn to multiply.
    """

    def __init__(self, config: GameConfig):
        super().__init__()
        enc = encoding_for(config)
        cards = config.cards
        truth = torch.tensor(cards.truth, dtype=torch.float32)  # (identities, claims)
        copies = torch.tensor(cards.copies, dtype=torch.float32)
        self.register_buffer("truth", truth, persistent=False)
        self.register_buffer("true_total", copies @ truth, persistent=False)
        seg = enc.observation.segments
        self.own = slice(seg["own_hand"].start, seg["own_hand"].stop)
        self.collections = slice(seg["collections"].start, seg["collections"].stop)
        self.claim = slice(seg["chain_claim"].start, seg["chain_claim"].stop)
        self.card = slice(seg["chain_card"].start, seg["chain_card"].stop)
        self.n, self.i, self.c = config.num_players, len(cards.identities), len(cards.claims)
        self.deck = float(cards.deck_size)
        self.loss_count = float(config.loss_count)
        self.max_copies = float(max(cards.copies))
        self.size = self.c + 3 + 2 * self.n

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, ``size``): on the CPU in one compiled pass (``training.core.kernels.card_counting``), else as tensor
        operations.
        """
        if kernels.available(obs) and not obs.requires_grad:
            return kernels.card_counting(obs, self)
        return self.tensor_forward(obs)

    def tensor_forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``forward`` as tensor operations (any device, differentiable in ``obs``)."""
        own = obs[:, self.own]
        collections = obs[:, self.collections].reshape(-1, self.n, self.i)
        claim = obs[:, self.claim]
        card = obs[:, self.card]
        visible = own + collections.sum(1)
        unseen = (self.deck - visible.sum(1, keepdim=True)).clamp(min=1.0)
        p_true = (self.true_total - visible @ self.truth) / unseen
        p_claim = (p_true * claim).sum(1, keepdim=True)
        own_fitting = ((own @ self.truth) * claim).sum(1, keepdim=True) / self.max_copies
        card_fits = ((card @ self.truth) * claim).sum(1, keepdim=True)
        collected_fitting = ((collections @ self.truth) * claim[:, None, :]).sum(2) / self.loss_count
        collected_card = (collections * card[:, None, :]).sum(2) / self.loss_count
        return torch.cat([p_true, p_claim, own_fitting, card_fits, collected_fitting, collected_card], dim=1)


class Evaluation(NamedTuple):
    """``ActorCritic.evaluate``'s result, (B,) or (B, A), with gradients."""

    logprob: torch.Tensor
    entropy: torch.Tensor
    value: torch.Tensor
    log_policy: torch.Tensor | None
    """(B, A); None unless ``evaluate(..., full_policy=True)`` or off the compiled path."""
    policy: torch.Tensor | None


MOVE_SEGMENTS = ("move_actor", "move_public", "move_revealed", "move_top")
"""The observation segments of one move slot (``GameConfig.history`` or ``recall``), each ``(slots, width)``."""


def move_slot_order(config: GameConfig) -> tuple[np.ndarray, int, int] | None:
    """The observation indices in the order ``ActorCritic`` with an event embedding reads them: every entry outside the
    move slots, then slot by slot the features of each move (its actor, move, revealed card and, Royal, the face-up
    penalty card); with the number of slots and of features per slot. None without move slots.
    """
    segments = encoding_for(config).observation.segments
    moves = [segments[name] for name in MOVE_SEGMENTS if name in segments]
    if not moves:
        return None
    slots = moves[0].shape[0]
    inside = np.zeros(encoding_for(config).observation.size, bool)
    per_slot = []
    for seg in moves:
        index = np.arange(seg.start, seg.stop).reshape(slots, -1)
        inside[seg.start : seg.stop] = True
        per_slot.append(index)
    slot_major = np.concatenate(per_slot, axis=1)  # (slots, features)
    return np.concatenate([np.flatnonzero(~inside), slot_major.ravel()]), slots, slot_major.shape[1]


def move_segment_widths(config: GameConfig) -> list[int]:
    """The width of each one-hot part of a move slot (actor, public move, revealed card and, Royal, the face-up penalty
    card), in ``move_slot_order``'s order of a slot's features.
    """
    segments = encoding_for(config).observation.segments
    return [segments[name].shape[1] for name in MOVE_SEGMENTS if name in segments]


class ActorCritic(nn.Module):
    """MLP trunk shared by a masked policy head (``num_actions`` logits) and a value head (with ``separate_critic``,
    the value head has a trunk of its own).

    With ``event_embedding`` (a rule set with ``GameConfig.history`` or ``recall``), each move slot
    of the observation (one past decision: its actor, the public move, the card a call revealed)
    is an event token: one linear layer shared by every slot embeds it in ``event_embedding``
    features, and the trunk reads the embedded events beside the rest of the observation. The
    history then costs the trunk ``slots * event_embedding`` inputs instead of ``slots *
    features``, and every slot is read with the same weights.

    With ``event_pooling`` as well, each part of a move (its actor, its public move, the revealed
    card) is looked up in one embedding table, an empty part having an entry of its own, and the
    sum of the three is the event's embedding (a linear layer over the slot's one-hot entries,
    computed by lookup); the embedded events are then summed with a learned weight per slot and
    feature, so the trunk reads ``event_embedding`` inputs for the whole window, whatever its
    length.
    """

    def __init__(
        self,
        config: GameConfig,
        hidden_sizes: list[int] = (256, 256),
        activation: str = "tanh",
        card_counting: bool = False,
        seed: int | None = None,
        event_embedding: int = 0,
        event_pooling: bool = False,
        separate_critic: bool = False,
    ):
        """``card_counting`` adds the ``CardCounting`` inputs; ``seed`` makes the (orthogonal) initialization
        reproducible; ``event_embedding`` embeds each move slot (0: the slots enter the trunk as they are);
        ``event_pooling`` sums the embedded slots with learned weights; ``separate_critic`` gives the value head a trunk
        of its own (the same widths, over the same inputs), so the value loss no longer moves the policy's trunk.
        """
        super().__init__()
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        self.game_config = config
        if event_embedding and window_layout(config) is None:
            raise ValueError(
                f"event_embedding={event_embedding!r} needs move slots in the observation; expected a rule set with "
                "history > 0 or recall=True, or event_embedding=0"
            )
        # The constructor's network arguments, as a checkpoint's ``model`` entry records them.
        self.spec = {
            "hidden_sizes": [int(h) for h in hidden_sizes],
            "activation": activation,
            "card_counting": bool(card_counting),
            **({"event_embedding": int(event_embedding)} if event_embedding else {}),
            **({"event_pooling": True} if event_pooling else {}),
            **({"separate_critic": True} if separate_critic else {}),
        }
        if event_pooling and not event_embedding:
            raise ValueError("event_pooling=True needs an event_embedding > 0; expected event_pooling=False")
        self.card_counting = CardCounting(config) if card_counting else None
        enc = encoding_for(config)
        self.observation_size = enc.observation.size
        self.num_actions = enc.num_actions
        self.register_buffer("obs_scale", torch.from_numpy(observation_scale(config)), persistent=False)
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
        width = self.observation_size + (self.card_counting.size if card_counting else 0)
        self.events: nn.Sequential | None = None
        self.pooled = bool(event_pooling)
        self.window = window_layout(config)
        """Where the move slots lie in the observation (None without them): the network reads them as indices."""
        if self.window is not None:
            width = self._set_window_reader(event_embedding, generator, act)
        inputs_width = width
        layers: list[nn.Module] = []
        for hidden in hidden_sizes:
            layers += [_layer(width, hidden, math.sqrt(2), generator), act()]
            width = hidden
        self.trunk = nn.Sequential(*layers)
        self.policy_head = _layer(width, self.num_actions, 0.01, generator)
        self.value_head = _layer(width, 1, 1.0, generator)
        # drawn after the shared network's layers, so a seed gives the same policy with or without it
        self.critic_trunk: nn.Sequential | None = None
        if separate_critic:
            layers, width = [], inputs_width
            for hidden in hidden_sizes:
                layers += [_layer(width, hidden, math.sqrt(2), generator), act()]
                width = hidden
            self.critic_trunk = nn.Sequential(*layers)

    def _set_window_reader(self, event_embedding: int, generator: torch.Generator | None, act) -> int:
        """The layers that read the move slots (event embedding, pooled or not, or none: the trunk reads them) and
        their lookup tables; returns the trunk's input width.
        """
        self.base_width = self.window.prefix + (self.card_counting.size if self.card_counting is not None else 0)
        """Dense inputs before the window's rows in ``network_inputs``: the scaled observation up to the move slots,
        then the ``CardCounting`` inputs.
        """
        self.slots, self.slot_features = self.window.slots, sum(self.window.widths)
        if self.pooled:
            self.event_table = nn.Embedding(int(sum(w + 1 for w in self.window.widths)), event_embedding)
            nn.init.normal_(self.event_table.weight, 0.0, 1.0 / math.sqrt(len(self.window.widths)), generator=generator)
            self.event_bias = nn.Parameter(torch.zeros(event_embedding))
            self.slot_weights = nn.Parameter(torch.full((self.slots, event_embedding), 1.0 / math.sqrt(self.slots)))
            self.events = nn.Sequential(act())
            width = self.base_width + event_embedding
        elif event_embedding:
            self.events = nn.Sequential(_layer(self.slot_features, event_embedding, math.sqrt(2), generator), act())
            width = self.base_width + self.slots * event_embedding
        else:
            width = self.base_width + self.window.size - self.window.prefix
        self._register_window_indices()
        return width

    def _register_window_indices(self) -> None:
        """The tables that turn a window's values (``cockroach_env.window``) into the rows the network looks up.

        Field ``f`` of slot ``k`` with value ``v`` is row ``window_base[k, f] + v``, and an empty field row
        ``window_empty[k, f]``, of: the first trunk layer's move-slot columns (no event embedding: the observation's
        entry, counted from the first move slot), the event layer's columns (a slot's features, in field order), or
        the pooled event table (each field's rows, then its row for empty).
        """
        layout = self.window
        widths = torch.tensor(layout.widths, dtype=torch.int64)
        starts = torch.tensor(layout.starts, dtype=torch.int64) - layout.prefix
        slot = torch.arange(layout.slots)[:, None]
        if self.pooled:
            offsets = torch.cumsum(widths + 1, 0) - (widths + 1)
            base, empty = offsets.expand(layout.slots, -1), (offsets + widths).expand(layout.slots, -1)
        elif self.events is not None:
            offsets = torch.cumsum(widths, 0) - widths
            base, empty = offsets.expand(layout.slots, -1), torch.full(layout.shape, self.slot_features)
        else:
            base = starts[None, :] + slot * widths[None, :]
            empty = torch.full(layout.shape, layout.size - layout.prefix)
        self.register_buffer("window_base", base.contiguous(), persistent=False)
        self.register_buffer("window_empty", empty.contiguous(), persistent=False)

    def portable(self) -> dict:
        """Everything needed to rebuild this network elsewhere (another process, a Ray task): rules, shape and weights,
        as plain data and tensors; ``ActorCritic.from_portable`` is the inverse.
        """
        return {
            "game_config": self.game_config.to_dict(),
            "spec": dict(self.spec),
            "weights": {k: v.detach().cpu().clone() for k, v in self.state_dict().items()},
        }

    @classmethod
    def from_spec(cls, config: GameConfig, spec, seed: int | None = None) -> ActorCritic:
        """The network of a ``model`` entry: a checkpoint's metadata dict or a ``ModelConfig``."""
        get = spec.get if isinstance(spec, dict) else lambda key, default=None: getattr(spec, key, default)
        return cls(
            config,
            get("hidden_sizes"),
            get("activation"),
            bool(get("card_counting", False)),
            seed=seed,
            event_embedding=int(get("event_embedding", 0) or 0),
            event_pooling=bool(get("event_pooling", False)),
            separate_critic=bool(get("separate_critic", False)),
        )

    @classmethod
    def from_portable(cls, data: dict) -> ActorCritic:
        model = cls.from_spec(GameConfig(**data["game_config"]), data["spec"])
        model.load_state_dict(data["weights"])
        return model

    @torch.no_grad()
    def network_inputs(self, obs: torch.Tensor, window: torch.Tensor | None = None) -> torch.Tensor:
        """The first layer's inputs: the scaled observation, then the ``CardCounting`` inputs (with card counting).

        With move slots, the observation up to them (``obs`` may stop there), then the
        ``CardCounting`` inputs, then each slot's fields as the rows the network looks up
        (``window_base``): the window travels as ``cockroach_env.window`` indices ``window``
        (B, slots, fields), or is read from ``obs``'s one-hot slots when None. A fixed
        function of the observation, so a PPO update computes it once for all its epochs
        and minibatches (the same values as ``forward`` computes).
        """
        if self.window is None:
            inputs = obs * self.obs_scale
            if self.card_counting is not None:
                inputs = torch.cat([inputs, self.card_counting(obs)], dim=1)
            return inputs
        prefix = self.window.prefix
        if window is None:
            window = self._window_of(obs)
        obs = obs[:, :prefix]
        values = window.to(torch.int64)
        rows = torch.where(values == EMPTY, self.window_empty, self.window_base + values)
        extra = [self.card_counting(obs)] if self.card_counting is not None else []
        return torch.cat([obs * self.obs_scale[:prefix], *extra, rows.flatten(1).to(obs.dtype)], dim=1)

    def _window_of(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, slots, fields): the window of observations ``obs`` read from their one-hot move slots, on their device
        (``cockroach_env.window.window_from_observation`` in tensor operations).
        """
        layout, fields = self.window, []
        for start, width in zip(layout.starts, layout.widths):
            rows = obs[:, start : start + layout.slots * width].reshape(len(obs), layout.slots, width)
            top, hot = rows.max(dim=2)
            fields.append(torch.where(top > 0, hot, EMPTY))
        return torch.stack(fields, dim=2)

    def heads(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unmasked logits (B, A) and values (B,) of ``network_inputs(obs)``.

        A move slot's fields are one-hot rows in the observation, so every layer that reads
        them (the event layer, or the trunk's first layer) sums the weight columns of the
        entries that are 1: a lookup of the window's rows (``embedding_bag``), not a product
        with the mostly zero one-hot slots.
        """
        if self.window is None:
            return self._trunk_heads(inputs, inputs)
        base, rows = inputs[:, : self.base_width], inputs[:, self.base_width :].long()
        if self.pooled:
            parts = _sum_rows(self.event_table.weight, rows.reshape(len(inputs) * self.slots, -1))
            events = self.events(parts.reshape(len(inputs), self.slots, -1) + self.event_bias)  # (B, slots, E)
            inputs = torch.cat([base, (events * self.slot_weights).sum(1)], dim=1)
            return self._trunk_heads(inputs, inputs)
        if self.events is not None:
            layer = self.events[0]
            rows = rows.reshape(len(inputs) * self.slots, -1)
            events = self.events[1:](_lookup_sum(layer.weight, rows) + layer.bias)  # (B * slots, event_embedding)
            inputs = torch.cat([base, events.reshape(len(base), -1)], dim=1)
            return self._trunk_heads(inputs, inputs)
        actor = self._first_layer(self.trunk, base, rows)
        critic = actor if self.critic_trunk is None else self._first_layer(self.critic_trunk, base, rows)
        return self._trunk_heads(actor, critic, skip=1)

    def _first_layer(self, trunk: nn.Sequential, base: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """``trunk``'s first layer over the observation with its one-hot move slots (no event embedding): the dense
        columns times ``base``, plus the move-slot columns of the window's ``rows``.
        """
        layer, prefix, moves = trunk[0], self.window.prefix, self.window.size - self.window.prefix
        dense = torch.cat([layer.weight[:, :prefix], layer.weight[:, prefix + moves :]], dim=1)
        return F.linear(base, dense, layer.bias) + _lookup_sum(layer.weight[:, prefix : prefix + moves], rows)

    def _trunk_heads(
        self, actor: torch.Tensor, critic: torch.Tensor, skip: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy and value heads over the trunks, from the trunks' inputs, or from their first layers' outputs
        with ``skip=1``.
        """
        hidden = self.trunk[skip:](actor)
        if self.critic_trunk is not None:
            critic = self.critic_trunk[skip:](critic)
        else:
            critic = hidden
        return self.policy_head(hidden), self.value_head(critic).squeeze(-1)

    def forward(
        self, obs: torch.Tensor, mask: torch.Tensor, window: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (B, A) and values (B,); ``mask`` is boolean (True = legal), or its ``mask_bias`` (float) if
        already computed; ``window`` as in ``network_inputs``.
        """
        logits, value = self.heads(self.network_inputs(obs, window))
        return logits + (mask_bias(mask) if mask.dtype == torch.bool else mask), value

    @torch.no_grad()
    def sample(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor,
        generator: torch.Generator | None = None,
        window: torch.Tensor | None = None,
    ):
        """Sample actions from the masked softmax: actions, log-probabilities, values.

        Inverse-CDF sampling, one uniform draw per row (a Gumbel-max draw needs one per
        action and two logarithms of each). The draw is scaled by the row's total, so
        it falls below the last cumulative probability, and the first action whose
        cumulative probability exceeds it has a positive probability: an illegal
        action (probability exactly 0) is never drawn. On the CPU the draw is made in
        one compiled pass per row (``training.core.kernels.sample_masked``), from the same
        uniform numbers. ``window`` as in ``network_inputs``.
        """
        logits, value = self.heads(self.network_inputs(obs, window))
        action, logprob = sample_logits(logits, mask, generator)
        return action, logprob, value

    def evaluate(
        self, inputs: torch.Tensor, legal: torch.Tensor, action: torch.Tensor, full_policy: bool = False
    ) -> Evaluation:
        """Log-probabilities of ``action``, policy entropies and values of ``network_inputs`` rows, with gradients.

        ``legal`` is the boolean mask (or, with ``full_policy``, its ``mask_bias``,
        computed once per update). With ``full_policy`` (the magnet's KL needs it),
        the log-policy and the policy over all actions too, from tensor operations
        (``softmax``, not ``exp`` of the log-policy: on the CPU, ``exp`` of the
        underflowing illegal entries is many times slower than the softmax kernel).
        Without it, on the CPU, the log-probability and the entropy come from
        ``training.core.kernels`` in one compiled pass over the legal entries, and
        ``log_policy`` and ``policy`` are None.
        """
        logits, value = self.heads(inputs)
        if not full_policy and kernels.available(logits):
            logprob, entropy = kernels.masked_logprob_entropy(logits, legal, action)
            return Evaluation(logprob, entropy, value, None, None)
        logits = logits + (mask_bias(legal) if legal.dtype == torch.bool else legal)
        log_policy = torch.log_softmax(logits, dim=-1)
        policy = torch.softmax(logits, dim=-1)
        logprob = log_policy.gather(1, action[:, None]).squeeze(1)
        entropy = -(policy * log_policy).sum(-1)
        return Evaluation(logprob, entropy, value, log_policy, policy)


def _lookup_sum(columns: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, out): for each row of ``rows`` (B, k), the sum of the ``columns`` (out, entries) that it names, where an
    index of ``entries`` names a zero column: ``columns`` times the one-hot vectors of ``rows``, as a lookup.
    """
    return _sum_rows(torch.cat([columns.t(), columns.new_zeros(1, columns.shape[0])]), rows)


def _sum_rows(table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, D): for each row of ``rows`` (B, k), the sum of the rows of ``table`` (R, D) that it names."""
    if kernels.available(table) and table.requires_grad:  # (a compiled backward pass)
        return kernels.lookup_sum(table, rows)
    return F.embedding_bag(rows, table, mode="sum")


class PolicyAgent(LogitsAgent):
    """An agent of the ``baselines`` protocol that plays a trained ``ActorCritic``.

    Seat-independent (observations are ego-centric); samples from the policy with its
    own seeded ``numpy.random.Generator`` (``greedy=True`` plays the most likely move).
    """

    def __init__(
        self, model: ActorCritic, config: GameConfig, seed: int | None = None, name: str = "ppo", greedy: bool = False
    ):
        super().__init__(config, seed)
        self.model = model.eval()
        self.name = name
        self.greedy = greedy
        self.device = next(model.parameters()).device

    def logits(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self._check_inputs(observations, masks)
        with torch.inference_mode():
            obs = torch.as_tensor(observations, device=self.device)
            logits, _ = self.model(obs, torch.as_tensor(masks, device=self.device))
            return logits.cpu().numpy()

    def _check_inputs(self, observations: np.ndarray, masks: np.ndarray) -> None:
        """Refuse observations and masks that do not fit the network (another table's, a window it does not read) and
        observations that are not finite; the message names the shapes, never an entry's value.
        """
        size, actions = self.model.observation_size, self.model.num_actions
        shape = tuple(np.shape(observations))
        if len(shape) != 2 or shape[1] != size:
            window = self.config.history
            reads = (
                f"the {window}-move window (history={window}): play it at a table with history={window}"
                if window
                else "no move window (history=0): play it at its rules without history, or through load_agent(..., "
                "config=...)"
            )
            raise ValueError(
                f"{self.name}: observations of shape {shape} do not fit its network; expected shape (B, {size}), "
                f"the observation of {self.config.num_players}-player {self.config.edition} with {reads}"
            )
        if tuple(np.shape(masks)) != (shape[0], actions):
            raise ValueError(
                f"{self.name}: action masks of shape {tuple(np.shape(masks))} do not fit; expected shape "
                f"({shape[0]}, {actions})"
            )
        finite = np.isfinite(observations).all(axis=1)
        if not finite.all():
            raise ValueError(
                f"{self.name}: observation row {int(np.flatnonzero(~finite)[0])} holds NaN or infinite entries; "
                "expected the env's observation (finite numbers)"
            )

    def __repr__(self) -> str:
        return (
            f"PolicyAgent(name={self.name!r}, {self.config.num_players}p {self.config.edition}, greedy={self.greedy})"
        )
