"""Simple reference players: ``random``, ``honest`` and ``bluffer`` (all vectorized).

Each decision draws a fixed number of uniforms per row, so ``act_batch`` on a batch
plays exactly like ``act`` on its rows one after another. ``honest`` and ``bluffer``
decide in compiled code by default (``baselines.kernels.claim_style``); their numpy
implementation here is the reference (``backend="numpy"``), and plays the same.
"""

from __future__ import annotations

import numpy as np

from baselines.agent import Agent, pick_uniform, uniform_over
from baselines.counting import OFFER, PASS, RESPOND, Rules, read_table, rules_for
from baselines.kernels import resolve_backend
from baselines.kernels.claim_style import ClaimStyleSpec, nb_claim_style_act, nb_claim_style_probabilities
from cockroach_env.config import GameConfig
from cockroach_env.encoding import Encoding


def claim_truth_of_actions(enc: Encoding, rules: Rules, card_in_play: np.ndarray) -> np.ndarray:
    """(B, A) bool: the offer or pass action makes a true claim (the pass card is ``card_in_play``, -1 if unknown)."""
    batch = len(card_in_play)
    out = np.zeros((batch, enc.num_actions), dtype=bool)
    offers = np.broadcast_to(rules.truth[:, None, :], (enc.num_cards, enc.num_targets, enc.num_claims))
    out[:, : enc.offer_size] = offers.reshape(-1)
    known = card_in_play >= 0
    passes = rules.truth[np.where(known, card_in_play, 0)][:, None, :] & known[:, None, None]
    out[:, enc.pass_start : enc.place_start] = np.broadcast_to(
        passes, (batch, enc.num_targets, enc.num_claims)
    ).reshape(batch, -1)
    return out


def claimed_share(rules: Rules, unseen: np.ndarray, claim: np.ndarray) -> np.ndarray:
    """(B,) share of the observer's unseen cards of which ``claim`` would be true."""
    fitting = (unseen * rules.truth[:, np.maximum(claim, 0)].T).sum(1)
    return np.where(claim >= 0, fitting / np.maximum(unseen.sum(1), 1e-9), 0.0)


class RandomAgent(Agent):
    """Uniform over the legal actions."""

    name = "random"
    supports_batch = True

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        u = self.rng.random(len(masks))
        return pick_uniform(np.asarray(masks) > 0, u).astype(np.int64)

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return uniform_over(np.asarray(masks) > 0)


class _ClaimStyleAgent(Agent):
    """Offers a random card to a random player; tells the truth with probability ``truth_rate``.

    The draw is uniform over the legal (card, target, claim) moves of the wanted truth: in
    classic that is a uniform card and target; in Royal a card that fits several claims
    (the joker, fitting every creature, when truthful; the blank, fitting none, when lying)
    is drawn as often as it has moves.
    """

    truth_rate = 1.0
    peek_rate = 0.0
    believe_share = 1.0
    """Believes a claim iff its share of the unseen cards is at least ``believe_share / C``."""
    supports_batch = True

    def __init__(self, config: GameConfig, seed: int | None = None, backend: str = "auto"):
        super().__init__(config, seed)
        self.rules = rules_for(config)
        self.backend = resolve_backend(backend, self.name)
        """``numba`` (compiled, ``baselines.kernels.claim_style``) or ``numpy`` (the reference): the same decisions."""
        self._spec: ClaimStyleSpec | None = None

    def _compiled(self) -> ClaimStyleSpec:
        """The kernels' arguments for this style."""
        if self._spec is None:
            self._spec = ClaimStyleSpec(self.rules, self.truth_rate, self.peek_rate, self.believe_share)
        return self._spec

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.backend == "numpy":
            return self._act_batch_numpy(observations, masks)
        spec = self._compiled()
        observations, legal = spec.table.check_batch(self.name, observations, masks)
        u = self.rng.random((len(legal), 3))
        out = np.empty(len(legal), np.int64)
        nb_claim_style_act(*spec.arrays(), observations, legal, u, out, spec.scratch)
        return out

    def _act_batch_numpy(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        enc, rules = self.encoding, self.rules
        legal = np.asarray(masks) > 0
        u = self.rng.random((len(legal), 3))
        table = read_table(rules, observations)
        true_claims = claim_truth_of_actions(enc, rules, table.card)
        # claims: truthful with probability truth_rate when a truthful (resp. false) option exists
        want_truth = u[:, 0] < self.truth_rate
        preferred = legal & np.where(want_truth[:, None], true_claims, ~true_claims)
        claiming = np.isin(table.phase, (OFFER, PASS))
        preferred = np.where((claiming & preferred.any(1))[:, None], preferred, legal)
        action = pick_uniform(preferred, u[:, 1])
        # responses: peek sometimes, otherwise believe the claim when it is plausible enough
        responding = table.phase == RESPOND
        can_peek = legal[:, enc.respond_start + 2]
        believe = claimed_share(rules, table.unseen, table.claim) >= self.believe_share / enc.num_claims
        response = np.where(believe, enc.respond_start, enc.respond_start + 1)
        response = np.where(can_peek & (u[:, 2] < self.peek_rate), enc.respond_start + 2, response)
        return np.where(responding, response, action).astype(np.int64)

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Exactly what ``act_batch`` draws: the truth coin, then a uniform pick; a call, or a peek at ``peek_rate``."""
        if self.backend == "numba":
            spec = self._compiled()
            observations, legal = spec.table.check_batch(self.name, observations, masks)
            probs = np.zeros(legal.shape)
            nb_claim_style_probabilities(*spec.arrays(), observations, legal, probs, spec.scratch)
            return probs
        enc, rules = self.encoding, self.rules
        legal = np.asarray(masks) > 0
        table = read_table(rules, observations)
        true_claims = claim_truth_of_actions(enc, rules, table.card)
        claiming = np.isin(table.phase, (OFFER, PASS))[:, None]

        def pick(preferred: np.ndarray) -> np.ndarray:
            preferred = legal & preferred
            return uniform_over(np.where(claiming & preferred.any(1, keepdims=True), preferred, legal))

        probs = self.truth_rate * pick(true_claims) + (1.0 - self.truth_rate) * pick(~true_claims)
        rows = np.flatnonzero(table.phase == RESPOND)
        believe = claimed_share(rules, table.unseen, table.claim)[rows] >= self.believe_share / enc.num_claims
        peek = np.where(legal[rows, enc.respond_start + 2], self.peek_rate, 0.0)
        probs[rows] = 0.0
        probs[rows, np.where(believe, enc.respond_start, enc.respond_start + 1)] = 1.0 - peek
        probs[rows, enc.respond_start + 2] += peek
        return probs


class HonestAgent(_ClaimStyleAgent):
    """Always claims a true type (uniform card and target); never peeks; believes claims of
    types at least as common as average among the cards it cannot see (card counting).
    """

    name = "honest"
    truth_rate = 1.0
    peek_rate = 0.0
    believe_share = 1.0


class BlufferAgent(_ClaimStyleAgent):
    """Lies 80% of the time; peeks and passes a quarter of the cards it may pass; doubts
    every claim unless its type is at least twice as common as average among unseen cards.
    """

    name = "bluffer"
    truth_rate = 0.2
    peek_rate = 0.25
    believe_share = 2.0
