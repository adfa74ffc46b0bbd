"""One observation row read in compiled code: what ``counting.read_table`` reads, row by row.

``TableSpec(rules)`` packs the rule set's sizes, its observation layout offsets (the
segment starts of ``encoding_for(config).observation``, -1 where a segment is absent)
and the card facts of ``counting.Rules`` into arrays a kernel takes; ``nb_read_row``
fills per-row scratch arrays with the same counts as ``read_table`` (the card counts
are small whole numbers, exact in any order of addition).
"""

from __future__ import annotations

import numpy as np

from baselines.counting import Rules
from baselines.kernels import inline
from cockroach_env.encoding import encoding_for
from cockroach_env.engine import FALSE_CLAIMS, PEEKS, RIGHT_CALLS, STAT_NAMES, TRUTHFUL_CLAIMS, WRONG_CALLS

SEGMENTS = (
    "own_hand", "collections", "hand_sizes", "history", "phase", "chain_claim", "chain_latest_passer",
    "chain_holder", "chain_seen", "chain_card", "penalty_top", "special_holder", "place_claim",
)  # fmt: skip
"""The observation segments the kernels read (``cockroach_env.encoding``'s names)."""
FIELDS = (
    ("n", "i", "c", "g", "k", "phases", "animal_groups", "loss_count", "rainbow", "royal", "observation_size")
    + ("num_actions", "offer_size", "respond_start", "pass_start", "place_start")
    + ("truthful_claims", "false_claims", "right_calls", "wrong_calls", "peeks", "special_a", "special_b")
    + SEGMENTS
)
"""Positions in ``TableSpec.ints``."""
(
    SEATS, CARDS, CLAIMS, GROUPS, STATS, PHASES, ANIMAL_GROUPS, LOSS_COUNT, RAINBOW, ROYAL, OBSERVATION_SIZE,
    NUM_ACTIONS, OFFER_SIZE, RESPOND_START, PASS_START, PLACE_START,
    TRUTHFUL, FALSE, RIGHT, WRONG, PEEK, SPECIAL_A, SPECIAL_B,
    OWN_HAND, COLLECTIONS, HAND_SIZES, HISTORY, PHASE, CHAIN_CLAIM, CHAIN_LATEST_PASSER,
    CHAIN_HOLDER, CHAIN_SEEN, CHAIN_CARD, PENALTY_TOP, SPECIAL_HOLDER, PLACE_CLAIM,
) = range(len(FIELDS))  # fmt: skip


class TableSpec:
    """A rule set's sizes, observation offsets and card facts, as the kernels take them."""

    def __init__(self, rules: Rules):
        config = rules.config
        encoding = encoding_for(config)
        segments = encoding.observation.segments
        specials = np.flatnonzero(rules.is_special)
        values = {
            "n": config.num_players,
            "i": encoding.num_cards,
            "c": encoding.num_claims,
            "g": rules.group.shape[1],
            "k": len(STAT_NAMES),
            "phases": segments["phase"].size,
            "animal_groups": rules.animal_groups,
            "loss_count": config.loss_count,
            "rainbow": int(config.rainbow_loses),
            "royal": int(config.edition == "royal"),
            "observation_size": encoding.observation.size,
            "num_actions": encoding.num_actions,
            "offer_size": encoding.offer_size,
            "respond_start": encoding.respond_start,
            "pass_start": encoding.pass_start,
            "place_start": encoding.place_start,
            "truthful_claims": TRUTHFUL_CLAIMS,
            "false_claims": FALSE_CLAIMS,
            "right_calls": RIGHT_CALLS,
            "wrong_calls": WRONG_CALLS,
            "peeks": PEEKS,
            "special_a": int(specials[0]) if len(specials) else -1,
            "special_b": int(specials[1]) if len(specials) > 1 else -1,
            **{name: segments[name].start if name in segments else -1 for name in SEGMENTS},
        }
        self.ints = np.array([values[name] for name in FIELDS], np.int64)
        self.truth = np.ascontiguousarray(rules.truth, np.uint8)
        self.group = np.ascontiguousarray(rules.group, np.float64)
        self.copies = np.ascontiguousarray(rules.copies, np.float64)
        self.is_royal = np.ascontiguousarray(rules.is_royal, np.uint8)
        self.is_special = np.ascontiguousarray(rules.is_special, np.uint8)

    def check_batch(self, agent: str, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(B, O)`` float32 observations and ``(B, A)`` bool legal actions, C-contiguous; a clear ``ValueError`` for
        any other shape (the kernels read the rows without bounds checks).
        """
        observations = np.ascontiguousarray(observations, dtype=np.float32)
        masks = np.asarray(masks)
        legal = masks if masks.dtype == np.bool_ else masks > 0
        legal = np.ascontiguousarray(legal)
        size, actions = int(self.ints[OBSERVATION_SIZE]), int(self.ints[NUM_ACTIONS])
        if observations.ndim != 2 or observations.shape[1] != size:
            raise ValueError(
                f"{agent}: observations of shape {observations.shape} are not allowed; expected (B, {size}) for this "
                "rule set"
            )
        if legal.shape != (len(observations), actions):
            raise ValueError(
                f"{agent}: masks of shape {legal.shape} are not allowed; expected ({len(observations)}, {actions}), "
                "one row of legal actions per observation"
            )
        return observations, legal


@inline
def _nb_one_hot(obs, b, start, size):
    """The index of the first largest entry of a one-hot block (``read_table``'s reading), -1 if all are zero."""
    if start < 0:
        return -1
    best = 0
    for j in range(1, size):
        if obs[b, start + j] > obs[b, start + best]:
            best = j
    return best if obs[b, start + best] != 0 else -1


@inline
def nb_read_row(ints, copies, group, obs, b, hand, collections, unseen, counts, hand_sizes, history, seen):
    """Read row ``b`` of ``obs`` into the scratch arrays; returns (phase, claim, latest passer, card, penalty top, place
    claim), each -1 when absent.

    ``hand`` (I), ``collections`` (N, I), ``unseen`` (I), ``counts`` (N, G: collection cards per loss group),
    ``hand_sizes`` (N), ``history`` (N, K) and ``seen`` (N, bool) as in ``counting.Table``.
    """
    n, i_count, g_count, k_count = ints[SEATS], ints[CARDS], ints[GROUPS], ints[STATS]
    for i in range(i_count):
        hand[i] = obs[b, ints[OWN_HAND] + i]
        unseen[i] = copies[i] - hand[i]
    for s in range(n):
        hand_sizes[s] = obs[b, ints[HAND_SIZES] + s]
        seen[s] = obs[b, ints[CHAIN_SEEN] + s] > 0
        for k in range(k_count):
            history[s, k] = obs[b, ints[HISTORY] + s * k_count + k]
        for g in range(g_count):
            counts[s, g] = 0.0
        for i in range(i_count):
            value = np.float64(obs[b, ints[COLLECTIONS] + s * i_count + i])
            collections[s, i] = value
            unseen[i] -= value
            if value != 0.0:  # a card type not collected adds 0.0 to every count
                for g in range(g_count):
                    counts[s, g] += value * group[i, g]
    for i in range(i_count):
        unseen[i] -= obs[b, ints[CHAIN_CARD] + i]
    top = -1
    place_claim = -1
    if ints[ROYAL]:
        for i in range(i_count):
            unseen[i] -= obs[b, ints[PENALTY_TOP] + i]
        top = _nb_one_hot(obs, b, ints[PENALTY_TOP], i_count)
        place_claim = _nb_one_hot(obs, b, ints[PLACE_CLAIM], ints[CLAIMS])
        for row, special in enumerate((ints[SPECIAL_A], ints[SPECIAL_B])):
            for s in range(1, n):
                unseen[special] -= obs[b, ints[SPECIAL_HOLDER] + row * n + s]
    for i in range(i_count):
        unseen[i] = max(unseen[i], 0.0)
    return (
        _nb_one_hot(obs, b, ints[PHASE], ints[PHASES]),
        _nb_one_hot(obs, b, ints[CHAIN_CLAIM], ints[CLAIMS]),
        _nb_one_hot(obs, b, ints[CHAIN_LATEST_PASSER], n),
        _nb_one_hot(obs, b, ints[CHAIN_CARD], i_count),
        top,
        place_claim,
    )
