"""What a player can know from an observation, read for a whole batch at once.

``read_table(rules, observations)`` turns observations ``(B, O)`` into named arrays
(seat 0 is the observer, seat ``r`` the player ``r`` seats after them) using the
encoding's observation layout, and counts cards: the *unseen* pool is the deck minus
the observer's hand, every collection, the card in play when the observer saw it,
the face-up penalty card and the jokers/blanks publicly known to sit in another hand.
The card in play, when not seen, is drawn from that pool as far as the observer can
tell. ``claim_posterior`` combines the pool with a claimant's revealed honesty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import PHASES, encoding_for
from cockroach_env.engine import FALSE_CLAIMS, PEEKS, RIGHT_CALLS, TRUTHFUL_CLAIMS, WRONG_CALLS, Phase

OFFER, RESPOND, PASS, PLACE = (PHASES.index(p) for p in (Phase.OFFER, Phase.RESPOND, Phase.PASS, Phase.PLACE))


@dataclass(frozen=True)
class Rules:
    """The config's card facts as arrays (identities ``I``, claims ``C``, loss groups ``G``)."""

    config: GameConfig
    truth: np.ndarray
    """(I, C) bool: ``truth[i, c]`` is claim ``c`` true of a card of identity ``i``."""
    group: np.ndarray
    """(I, G) float: one-hot loss group of each identity (all zero for the joker and blank)."""
    copies: np.ndarray
    """(I,) cards of each identity in the full deck."""
    claim_truths: np.ndarray
    """(I,) number of claims that are true of each identity."""
    is_royal: np.ndarray
    is_special: np.ndarray
    animal_groups: int

    @property
    def num_players(self) -> int:
        return self.config.num_players

    @property
    def loss_count(self) -> int:
        return self.config.loss_count


@lru_cache(maxsize=64)
def rules_for(config: GameConfig) -> Rules:
    """The ``Rules`` arrays of ``config`` (cached: one per rule set)."""
    cards = config.cards
    group = np.zeros((len(cards.identities), len(cards.groups)))
    for card, g in enumerate(cards.group_of):
        if g >= 0:
            group[card, g] = 1.0
    truth = np.array(cards.truth, dtype=bool)
    return Rules(
        config=config,
        truth=truth,
        group=group,
        copies=np.array(cards.copies, dtype=np.float64),
        claim_truths=truth.sum(1).astype(np.float64),
        is_royal=np.array(cards.is_royal),
        is_special=np.array(cards.is_special),
        animal_groups=cards.animal_groups,
    )


@dataclass
class Table:
    """A batch of observations, read (every array has the batch first)."""

    hand: np.ndarray
    """(B, I) the observer's hand."""
    collections: np.ndarray
    """(B, N, I) face-up cards of every seat."""
    group_counts: np.ndarray
    """(B, N, G) collection cards per loss group."""
    hand_sizes: np.ndarray
    """(B, N)."""
    phase: np.ndarray
    """(B,) index into ``PHASES``; -1 once the game is over."""
    claim: np.ndarray
    """(B,) the latest claim of the card in play; -1 without one."""
    latest_passer: np.ndarray
    holder: np.ndarray
    seen: np.ndarray
    """(B, N) bool: seats that have seen the card in play."""
    card: np.ndarray
    """(B,) identity of the card in play when the observer has seen it, else -1."""
    history: np.ndarray
    """(B, N, 5) public counters (``engine.STAT_NAMES``)."""
    unseen: np.ndarray
    """(B, I) cards the observer cannot locate (other hands, removed, hidden penalty cards, the unseen card in play)."""
    penalty_top: np.ndarray
    """(B,) identity of the face-up penalty card (Royal), else -1."""
    place_claim: np.ndarray
    """(B,) claim a Royal replacement must fit, -1 when any card may be placed."""


def _one_hot_index(block: np.ndarray) -> np.ndarray:
    return np.where(block.any(-1), block.argmax(-1), -1)


def read_table(rules: Rules, observations: np.ndarray) -> Table:
    """Read a batch of observations ``(B, O)`` of ``rules.config``."""
    layout = encoding_for(rules.config).observation
    obs = np.asarray(observations, dtype=np.float64)
    view = lambda name: layout.view(obs, name)  # noqa: E731
    hand, collections = view("own_hand"), view("collections")
    card_block = view("chain_card")
    unseen = rules.copies - hand - collections.sum(1) - card_block
    penalty_top = np.full(len(obs), -1)
    place_claim = np.full(len(obs), -1)
    if rules.config.edition == "royal":
        top = view("penalty_top")
        unseen = unseen - top
        penalty_top = _one_hot_index(top)
        place_claim = _one_hot_index(view("place_claim"))
        specials = np.flatnonzero(rules.is_special)
        held_elsewhere = view("special_holder")[:, :, 1:].sum(-1)  # (B, 2): known in another seat's hand
        unseen[:, specials] -= held_elsewhere
    return Table(
        hand=hand,
        collections=collections,
        group_counts=collections @ rules.group,
        hand_sizes=view("hand_sizes"),
        phase=_one_hot_index(view("phase")),
        claim=_one_hot_index(view("chain_claim")),
        latest_passer=_one_hot_index(view("chain_latest_passer")),
        holder=_one_hot_index(view("chain_holder")),
        seen=view("chain_seen") > 0,
        card=_one_hot_index(card_block),
        history=view("history"),
        unseen=np.maximum(unseen, 0.0),
        penalty_top=penalty_top,
        place_claim=place_claim,
    )


def honesty(history: np.ndarray, prior: float = 0.5, strength: float = 2.0) -> np.ndarray:
    """(B, N) estimated probability that each seat's claim is truthful, from its revealed claims."""
    truthful, false = history[..., TRUTHFUL_CLAIMS], history[..., FALSE_CLAIMS]
    return (truthful + prior * strength) / (truthful + false + strength)


def response_rates(
    history: np.ndarray, prior: tuple[float, float, float] = (0.4, 0.3, 0.3), strength: float = 3.0
) -> np.ndarray:
    """(B, N, 3) estimated probability that each seat, when handed a card, calls right, calls wrong, or peeks."""
    counts = history[..., [RIGHT_CALLS, WRONG_CALLS, PEEKS]] + np.asarray(prior) * strength
    return counts / counts.sum(-1, keepdims=True)


def claim_likelihoods(rules: Rules, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How likely a card from ``pool`` (B, I) is announced as each claim, truthfully or not.

    Returns ``(true_claim, false_claim)``, each (B, I, C): the joint probability that
    the card is identity ``i`` and a claimant picking uniformly among the true (resp.
    false) claims of that card says ``c``.
    """
    share = pool / np.maximum(pool.sum(-1, keepdims=True), 1e-9)
    truth = rules.truth.astype(np.float64)
    true_pick = truth / np.maximum(rules.claim_truths, 1.0)[:, None]
    false_pick = (1.0 - truth) / np.maximum(truth.shape[1] - rules.claim_truths, 1.0)[:, None]
    return share[:, :, None] * true_pick, share[:, :, None] * false_pick


def claim_posterior(rules: Rules, pool: np.ndarray, claim: np.ndarray, truthful_rate: np.ndarray):
    """Probability that ``claim`` (B,) is true, and the card's identity distribution if true / if false.

    Bayes over the claimant's intent: with probability ``truthful_rate`` (B,) they
    announce one of the card's true claims, otherwise one of its false claims; the
    card is drawn from ``pool``. Returns ``(p_true (B,), if_true (B, I), if_false (B, I))``.
    """
    rows = np.arange(len(pool))
    true_claim, false_claim = claim_likelihoods(rules, pool)
    a = true_claim[rows, :, claim] * truthful_rate[:, None]  # (B, I)
    b = false_claim[rows, :, claim] * (1.0 - truthful_rate[:, None])
    at, bt = a.sum(-1), b.sum(-1)
    p_true = at / np.maximum(at + bt, 1e-12)
    if_true = a / np.maximum(at, 1e-12)[:, None]
    if_false = b / np.maximum(bt, 1e-12)[:, None]
    return p_true, if_true, if_false
