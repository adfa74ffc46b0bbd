"""``heuristic``'s decision in compiled code: ``HeuristicAgent``'s numpy model, one row at a time.

Each function mirrors a method of ``baselines.heuristic.HeuristicAgent`` (named in its
docstring) with the same operations in the same order, so the losses come out bit for
bit: sums over a contiguous axis follow numpy's pairwise order (``_nb_sum``), and the
rainbow term, whose ``** 3`` numpy computes with ``pow``, is tabulated by numpy itself.
``act`` reads the truth coin of each row and the tie-breaking jitter of just the actions
within reach of the least loss (``stream``), where the numpy version draws all ``1 + A``.
The danger weights are ``exp`` of a few recurring hazards: a memo kept with the agent's
scratch arrays (``_nb_exp``) computes each once.
"""

from __future__ import annotations

import math

import numpy as np

from baselines.counting import OFFER, PASS, PLACE, RESPOND, Rules
from baselines.kernels import inline, jit, shared
from baselines.kernels.stream import nb_fill_increments, nb_skip_from, nb_uniform_from
from baselines.kernels.table import (
    ANIMAL_GROUPS,
    CARDS,
    CLAIMS,
    FALSE,
    GROUPS,
    LOSS_COUNT,
    NUM_ACTIONS,
    PASS_START,
    PEEK,
    PLACE_START,
    RAINBOW,
    RESPOND_START,
    RIGHT,
    ROYAL,
    SEATS,
    SPECIAL_A,
    SPECIAL_B,
    STATS,
    TRUTHFUL,
    WRONG,
    TableSpec,
    nb_read_row,
)

FLOATS = (
    "kappa", "set_power", "power_mode", "special_spread", "honesty_prior_weight", "honesty_strength",
    "truth_temperature", "peek_cost", "tie_jitter",
)  # fmt: skip
"""Positions in ``HeuristicSpec.floats``."""
KAPPA, SET_POWER, POWER_MODE, SPECIAL_SPREAD, HONESTY_PRIOR_WEIGHT, HONESTY_STRENGTH, TEMPERATURE, PEEK_COST, JITTER = (
    range(len(FLOATS))
)
_POWER_MODES = {1.0: 1.0, 2.0: 2.0, 3.0: 3.0, 4.0: 4.0, 0.5: 0.5}
"""``_power``'s exponents computed by multiplication (``sqrt`` for 0.5, as numpy's ``**`` does); ``pow`` otherwise."""


class HeuristicSpec:
    """A rule set and ``HeuristicParams`` as the kernels take them (numbers that numpy computes, computed by numpy)."""

    def __init__(self, rules: Rules, params, tie_jitter: float):
        self.params = params
        self.table = TableSpec(rules)
        animals = rules.animal_groups
        floats = {
            "kappa": params.kappa,
            "set_power": params.set_power,
            "power_mode": _POWER_MODES.get(float(params.set_power), 0.0),
            "special_spread": params.special_spread / animals,
            "honesty_prior_weight": params.honesty_prior * params.honesty_strength,
            "honesty_strength": params.honesty_strength,
            "truth_temperature": params.truth_temperature,
            "peek_cost": params.peek_cost,
            "tie_jitter": tie_jitter,
        }
        self.floats = np.array([floats[name] for name in FLOATS], np.float64)
        self.risk = np.asarray(params.hand_risk + (0.0,), np.float64)
        distinct = np.arange(animals + 1)
        self.rainbow = np.ascontiguousarray(params.rainbow_weight * (distinct / (animals - 1)) ** 3, np.float64)
        self.response = np.ascontiguousarray(np.asarray(params.response_prior) * params.response_strength, np.float64)
        truth = rules.truth.astype(np.float64)
        self.true_pick = np.ascontiguousarray(truth / np.maximum(rules.claim_truths, 1.0)[:, None])
        self.false_pick = np.ascontiguousarray(
            (1.0 - truth) / np.maximum(truth.shape[1] - rules.claim_truths, 1.0)[:, None]
        )
        self.group_copies = np.ascontiguousarray(rules.copies @ rules.group)
        self.scratch = scratch(self.table)
        """Per-row scratch arrays of the kernels (an agent decides one batch at a time, as its generator draws)."""

    def arrays(self) -> tuple:
        """The kernels' rule arguments, in order."""
        t = self.table
        return (
            t.ints, t.truth, t.group, t.copies, t.is_royal, self.floats, self.risk, self.rainbow, self.response,
            self.true_pick, self.false_pick, self.group_copies,
        )  # fmt: skip


@inline
def _nb_sum(values, count):
    """``values[:count].sum()`` in numpy's order for a contiguous axis (pairwise from 8 entries, from 0.0)."""
    if count < 8:
        total = 0.0
        for j in range(count):
            total += values[j]
        return total
    r0, r1, r2, r3 = values[0], values[1], values[2], values[3]
    r4, r5, r6, r7 = values[4], values[5], values[6], values[7]
    j = 8
    end = count - count % 8
    while j < end:
        r0 += values[j]
        r1 += values[j + 1]
        r2 += values[j + 2]
        r3 += values[j + 3]
        r4 += values[j + 4]
        r5 += values[j + 5]
        r6 += values[j + 6]
        r7 += values[j + 7]
        j += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while j < count:
        total += values[j]
        j += 1
    return total


@inline
def _nb_expected(distribution, values, count, terms):
    """``(distribution * values).sum()`` over ``count`` entries, in numpy's order (``terms``: scratch)."""
    for j in range(count):
        terms[j] = distribution[j] * values[j]
    return _nb_sum(terms, count)


@inline
def _nb_power(floats, scale, count):
    """``_power(clip(count / scale, 0, 1))``: a loss group's share of a set, raised to ``set_power``."""
    x = min(max(count / scale, 0.0), 1.0)
    mode = floats[POWER_MODE]
    if mode == 4.0:
        square = x * x
        x = square * square
    elif mode == 3.0:
        x = (x * x) * x
    elif mode == 2.0:
        x = x * x
    elif mode == 0.5:
        x = math.sqrt(x)
    elif mode == 0.0:
        x = math.pow(x, floats[SET_POWER])
    return x


@inline
def _nb_term(floats, scale, powers, count, live):
    """One loss group's term of ``HeuristicAgent._hazard``: ``_nb_power(count) * live``, looked up in ``powers``
    (``_nb_power`` of 0, 1, 2, ...) for a whole count.
    """
    whole = np.int64(count)
    if whole == count and 0 <= whole < powers.shape[0]:
        return powers[whole] * live
    return _nb_power(floats, scale, count) * live


@inline
def _nb_fill_powers(ints, floats, powers):
    """``powers[k] = _nb_power(k)``: the whole counts' powers, computed once per batch (a kernel's arguments stay
    within 30: Python passes more as ``*args``, which numba cannot inline).
    """
    scale = np.float64(ints[LOSS_COUNT] - 1)
    for k in range(powers.shape[0]):
        powers[k] = _nb_power(floats, scale, np.float64(k))


@inline
def _nb_hazard(ints, risk, rainbow, terms, distinct, hand_size):
    """``HeuristicAgent._hazard`` from a collection's group ``terms`` (G) and its count of ``distinct`` animals."""
    hazard = _nb_sum(terms, ints[GROUPS])
    if ints[RAINBOW]:
        hazard = hazard + rainbow[distinct]
    return hazard + risk[np.int64(min(max(hand_size, 0.0), np.float64(len(risk) - 1)))]


MEMO = 4096
"""Slots of the ``exp`` memo (``_nb_exp``): a power of two."""


@inline
def _nb_exp(x, memo):
    """``math.exp(x)``, remembered in ``memo`` ((2, MEMO): arguments, then values; a NaN argument is an empty slot).

    The danger weights are ``exp`` of a few recurring hazards (whole card counts), so most calls find their
    argument; ``exp`` is a pure function, so a remembered value is the value, bit for bit.
    """
    if not abs(x) < 1e12:
        return math.exp(x)
    slot = np.int64((np.uint64(np.int64(x * 1048576.0)) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(52))
    if memo[0, slot] == x:
        return memo[1, slot]
    value = math.exp(x)
    memo[0, slot] = x
    memo[1, slot] = value
    return value


@inline
def _nb_effects(ints, group, is_royal, floats, top, effect, touched):
    """``effect[i, g]``, the cards a card of identity ``i`` adds to loss group ``g`` of its taker (a royal card brings
    the face-up penalty card, a joker or blank a share of every animal), and ``touched[i, :k]`` the ``k`` groups it
    changes, ``k`` in ``touched[i, G]``.
    """
    i_count, g_count, animals = ints[CARDS], ints[GROUPS], ints[ANIMAL_GROUPS]
    for i in range(i_count):
        for g in range(g_count):
            effect[i, g] = group[i, g]
    if ints[ROYAL]:
        known = 1.0 if top >= 0 else 0.0
        for i in range(i_count):
            for g in range(g_count):
                effect[i, g] = effect[i, g] + is_royal[i] * (group[max(top, 0), g] * known)
        for special in (ints[SPECIAL_A], ints[SPECIAL_B]):
            for g in range(animals):
                effect[special, g] += floats[SPECIAL_SPREAD]
    for i in range(i_count):
        k = 0
        for g in range(g_count):
            if effect[i, g] != 0.0:
                touched[i, k] = g
                k += 1
        touched[i, g_count] = k


@inline
def _nb_loss_if_taken(
    ints, group, is_royal, floats, risk, rainbow, group_copies, counts, hand_sizes, my_hand, top, empty_hand_loses,
    needed, seats, taken, hands, effect, touched, live, weight, base_terms, base_distinct, base_lost, terms, powers,
    memo,
):  # fmt: skip
    """``HeuristicAgent._loss_if_taken``: ``taken[s, i]``, the observer's loss probability if seat ``s`` takes a card
    of identity ``i``, for the first ``seats`` seats and the identities ``needed`` (0.0 for the others).

    A card changes only the groups where its effect is nonzero (``touched``): the other terms
    of a seat's hazard are its own (``count + 0.0`` is ``count``), computed once per seat.
    """
    n, i_count, g_count, animals = ints[SEATS], ints[CARDS], ints[GROUPS], ints[ANIMAL_GROUPS]
    scale = np.float64(ints[LOSS_COUNT] - 1)
    limit = ints[LOSS_COUNT] - 1e-9
    kappa = floats[KAPPA]
    for s in range(n):
        hands[s] = hand_sizes[s]
    hands[0] = my_hand
    _nb_effects(ints, group, is_royal, floats, top, effect, touched)
    for g in range(g_count):
        total = 0.0
        for s in range(n):
            total += counts[s, g]
        live[g] = 1.0 if group_copies[g] - total > 0 else 0.0
    weights = 0.0
    for s in range(n):
        distinct = 0
        lost = False
        for g in range(g_count):
            base_terms[s, g] = _nb_term(floats, scale, powers, counts[s, g], live[g])
            lost = lost or counts[s, g] >= limit
        for g in range(animals):
            distinct += counts[s, g] > 0
        base_distinct[s] = distinct
        base_lost[s] = lost
        weight[s] = _nb_exp(kappa * _nb_hazard(ints, risk, rainbow, base_terms[s], distinct, hands[s]), memo)
        weights += weight[s]
    for s in range(seats):
        for g in range(g_count):
            terms[g] = base_terms[s, g]
        for i in range(i_count):
            if not needed[i]:
                taken[s, i] = 0.0
                continue
            lost = base_lost[s] or (empty_hand_loses and hands[s] <= 0)
            distinct = np.int64(base_distinct[s])
            for k in range(touched[i, g_count]):
                g = touched[i, k]
                after = counts[s, g] + effect[i, g]
                lost = lost or after >= limit
                terms[g] = _nb_term(floats, scale, powers, after, live[g])
                if g < animals:
                    distinct += (after > 0) - (counts[s, g] > 0)
            if ints[RAINBOW] and distinct == animals:
                lost = True
            if lost:
                taken[s, i] = 1.0 if s == 0 else 0.0
            else:
                hazard = kappa * _nb_hazard(ints, risk, rainbow, terms, distinct, hands[s])
                weight_after = _nb_exp(hazard, memo)
                total = (weights - weight[s]) + weight_after
                taken[s, i] = (weight_after if s == 0 else weight[0]) / total
            for k in range(touched[i, g_count]):  # the seat's own terms again for the next card
                terms[touched[i, k]] = base_terms[s, touched[i, k]]


@inline
def _nb_handover_losses(
    ints, truth, copies, response, taken, history, collections, seen, needed, out, right, wrong, others, possible,
):  # fmt: skip
    """``HeuristicAgent._handover_losses``: ``out[i, t, c]`` for the identities ``needed``."""
    n, i_count, c_count = ints[SEATS], ints[CARDS], ints[CLAIMS]
    targets = n - 1
    unseen_seats = 0
    for s in range(n):
        counts0 = history[s, ints[RIGHT]] + response[0]
        counts1 = history[s, ints[WRONG]] + response[1]
        counts2 = history[s, ints[PEEK]] + response[2]
        total = (counts0 + counts1) + counts2
        right[s] = counts0 / total
        wrong[s] = counts1 / total
        unseen_seats += not seen[s]
    for c in range(c_count):
        possible[c] = False
    for i in range(i_count):
        outside = copies[i]
        for s in range(n):
            outside -= collections[s, i]
        if max(outside, 0.0) > 0:
            for c in range(c_count):
                possible[c] = possible[c] or truth[i, c]
        total = 0.0
        for s in range(1, n):
            total += taken[s, i]
        others[i] = total / targets
    for t in range(targets):
        s = t + 1
        calls_right_or_wrong = right[s] + wrong[s]
        accuracy = right[s] / max(calls_right_or_wrong, 1e-9)
        calls = calls_right_or_wrong if unseen_seats - (not seen[s]) > 0 else 1.0
        p_on = 1.0 - calls
        for i in range(i_count):
            if not needed[i]:
                continue
            mine, theirs, rest = taken[0, i], taken[s, i], others[i]
            p_right = calls * accuracy  # a claim that may be true: called at the recipient's accuracy
            believable = ((p_right * mine) + ((calls - p_right) * theirs)) + (p_on * rest)
            p_right = calls * 1.0  # an obviously false claim is always called false
            obvious = ((p_right * mine) + ((calls - p_right) * theirs)) + (p_on * rest)
            for c in range(c_count):
                out[i, t, c] = obvious if not possible[c] and not truth[i, c] else believable


@inline
def _nb_phase_actions(ints, phase, card, legal, b, needed, targets):
    """The range ``(first, last)`` of the actions of ``phase`` and, for an offer, a pass or a placement, the card
    identities whose losses it needs (``needed``; a response's are those of its claim's odds).
    """
    i_count, c_count = ints[CARDS], ints[CLAIMS]
    if phase == OFFER:
        block = targets * c_count
        for i in range(i_count):
            needed[i] = False
            for action in range(i * block, (i + 1) * block):
                needed[i] = needed[i] or legal[b, action]
        return 0, ints[RESPOND_START]
    if phase == PASS:
        for i in range(i_count):
            needed[i] = i == max(card, 0)
        return ints[PASS_START], ints[PLACE_START]
    if phase == PLACE:
        for i in range(i_count):
            needed[i] = legal[b, ints[PLACE_START] + i]
        return ints[PLACE_START], ints[NUM_ACTIONS]
    if phase == RESPOND:
        return ints[RESPOND_START], ints[PASS_START]
    return 0, 0


@inline
def _nb_claim_odds(
    ints, floats, history, passer, claimed, unseen, true_pick, false_pick, needed, a, b_share, if_true, if_false
):  # fmt: skip
    """The odds that the claim received is true, and the card's identity if it is and if it is not
    (``claim_posterior``): fills ``if_true``, ``if_false`` and ``needed`` (the identities of any share).
    """
    i_count = ints[CARDS]
    told = history[passer, ints[TRUTHFUL]]
    q = (told + floats[HONESTY_PRIOR_WEIGHT]) / ((told + history[passer, ints[FALSE]]) + floats[HONESTY_STRENGTH])
    pool = 0.0
    for i in range(i_count):
        pool += unseen[i]
        needed[i] = unseen[i] > 0  # a card of no share weighs 0.0 in every sum below
    pool = max(pool, 1e-9)
    for i in range(i_count):
        share = unseen[i] / pool
        a[i] = (share * true_pick[i, claimed]) * q
        b_share[i] = (share * false_pick[i, claimed]) * (1.0 - q)
    a_total, b_total = _nb_sum(a, i_count), _nb_sum(b_share, i_count)
    for i in range(i_count):
        if_true[i] = a[i] / max(a_total, 1e-12)
        if_false[i] = b_share[i] / max(b_total, 1e-12)
    return a_total / max(a_total + b_total, 1e-12)


@inline
def _nb_offer_losses(truth, legal, b, needed, handover, i_count, targets, c_count, spans, loss, truthful):
    """The losses of the offers of row ``b``, only over the blocks of the cards with a legal offer (the spans), and
    the best truthful and best false loss; returns ``(span count, best true, best false)``.
    """
    best_true, best_false = np.inf, np.inf
    span_count = 0
    for i in range(i_count):
        if not needed[i]:
            continue
        start = i * targets * c_count
        if span_count > 0 and spans[span_count - 1, 1] == start:
            spans[span_count - 1, 1] = start + targets * c_count
        else:
            spans[span_count, 0], spans[span_count, 1] = start, start + targets * c_count
            span_count += 1
        for t in range(targets):
            for c in range(c_count):
                action = start + t * c_count + c
                truthful[action] = truth[i, c]
                if not legal[b, action]:
                    loss[action] = np.inf
                elif truth[i, c]:
                    loss[action] = handover[i, t, c]
                    best_true = min(best_true, loss[action])
                else:
                    loss[action] = handover[i, t, c]
                    best_false = min(best_false, loss[action])
    return span_count, best_true, best_false


@inline
def _nb_response_losses(
    floats, taken, passer, p_true, if_true, if_false, needed, seen, handover, i_count, targets, c_count, best, loss,
    first,
):  # fmt: skip
    """The losses of calling true, calling false and peeking at the claim received, at ``loss[first:first + 3]``."""
    true_mine = _nb_expected(if_true, taken[0], i_count, best)
    false_mine = _nb_expected(if_false, taken[0], i_count, best)
    true_theirs = _nb_expected(if_true, taken[passer], i_count, best)
    false_theirs = _nb_expected(if_false, taken[passer], i_count, best)
    loss[first] = p_true * true_theirs + (1.0 - p_true) * false_mine
    loss[first + 1] = (1.0 - p_true) * false_theirs + p_true * true_mine
    for i in range(i_count):  # peek: the best pass of each identity the card could be
        best[i] = 0.0
        if needed[i]:
            least = np.inf
            for t in range(targets):
                if not seen[t + 1]:
                    for c in range(c_count):
                        least = min(least, handover[i, t, c])
            if not np.isfinite(least):
                least = 1.0
            best[i] = (p_true * if_true[i] + (1.0 - p_true) * if_false[i]) * least
    loss[first + 2] = _nb_sum(best, i_count) + floats[PEEK_COST]


@inline
def _nb_truth_odds(best_true, best_false, temperature):
    """The odds of telling the truth: a logistic of the gap between the best false and the best truthful loss."""
    if np.isinf(best_false):
        return 1.0
    if np.isinf(best_true):
        return 0.0
    gap = min(max((best_false - best_true) / temperature, -50.0), 50.0)
    return 1.0 / (1.0 + math.exp(-gap))


@shared
def _nb_row_losses(
    ints, truth, group, copies, is_royal, floats, risk, rainbow, response, true_pick, false_pick, group_copies, obs,
    legal, b, loss, truthful, rows,
):  # fmt: skip
    """``HeuristicAgent._losses`` of row ``b`` over the actions of its phase: fills ``loss`` (inf where illegal) and
    ``truthful`` over the action ranges ``spans[:count]`` and returns (count, the phase, the least truthful and the
    least false loss); the other actions are illegal. Only the identities that can matter are computed: the
    cards with a legal offer or placement, the card passed on, the cards a claim received can be. ``rows`` is
    ``scratch(table)``.
    """
    n, i_count, c_count = ints[SEATS], ints[CARDS], ints[CLAIMS]
    targets = n - 1
    hand, unseen, others, a = rows[1][0], rows[1][1], rows[1][2], rows[1][3]
    b_share, if_true, if_false, best = rows[1][4], rows[1][5], rows[1][6], rows[1][7]
    hand_sizes, hands, weight, right, wrong = rows[0][0], rows[0][1], rows[0][2], rows[0][3], rows[0][4]
    base_distinct = rows[0][5]
    live, terms, powers, counts, base_terms = rows[2][0], rows[2][1], rows[2][2], rows[3][0], rows[3][1]
    collections, taken, effect, history, seen = rows[4][0], rows[4][1], rows[5], rows[6], rows[7]
    handover, possible, needed, base_lost, spans = rows[8], rows[9], rows[10], rows[11], rows[12]
    phase, claim, latest_passer, card, top, _ = nb_read_row(
        ints, copies, group, obs, b, hand, collections, unseen, counts, hand_sizes, history, seen
    )
    first, last = _nb_phase_actions(ints, phase, card, legal, b, needed, targets)
    passer = max(latest_passer, 0)
    p_true = 0.0
    if phase == RESPOND:  # the claim's odds and the card's identity if true and if false
        p_true = _nb_claim_odds(
            ints, floats, history, passer, max(claim, 0), unseen, true_pick, false_pick, needed, a, b_share, if_true,
            if_false,
        )  # fmt: skip
    if first < last:  # one call site of each part: they are inlined
        _nb_loss_if_taken(
            ints, group, is_royal, floats, risk, rainbow, group_copies, counts, hand_sizes,
            hand_sizes[0] - 1.0 if phase == OFFER else hand_sizes[0], top, phase != PLACE, needed,
            1 if phase == PLACE else n, taken, hands, effect, rows[15], live, weight, base_terms, base_distinct,
            base_lost, terms, powers, rows[16],
        )  # fmt: skip
        if phase != PLACE:  # the losses of handing the card on (after a peek, for a response)
            if phase == OFFER:
                for s in range(1, n):
                    seen[s] = False
            seen[0] = True
            _nb_handover_losses(
                ints, truth, copies, response, taken, history, collections, seen, needed, handover, right, wrong,
                others, possible,
            )  # fmt: skip
    best_true, best_false = np.inf, np.inf
    spans[0, 0], spans[0, 1] = first, last
    span_count = 1 if first < last else 0
    if phase == OFFER:  # only the blocks of the cards with a legal offer: the others are all illegal
        span_count, best_true, best_false = _nb_offer_losses(
            truth, legal, b, needed, handover, i_count, targets, c_count, spans, loss, truthful
        )
    else:
        for action in range(first, last):
            truthful[action] = False
    if phase == PASS:
        card = max(card, 0)
        for t in range(targets):
            for c in range(c_count):
                action = first + t * c_count + c
                loss[action] = handover[card, t, c]
                truthful[action] = truth[card, c]
    elif phase == PLACE:
        for i in range(i_count):
            loss[first + i] = taken[0, i]
    elif phase == RESPOND:
        _nb_response_losses(
            floats, taken, passer, p_true, if_true, if_false, needed, seen, handover, i_count, targets, c_count, best,
            loss, first,
        )  # fmt: skip
    if phase != OFFER:
        for action in range(first, last):
            if not legal[b, action]:
                loss[action] = np.inf
            elif truthful[action]:
                best_true = min(best_true, loss[action])
            else:
                best_false = min(best_false, loss[action])
    return span_count, phase, best_true, best_false


def scratch(table: TableSpec) -> tuple:
    """The scratch arrays of ``nb_losses`` and ``nb_act`` for the rule set of ``table``: per row, then the ``exp``
    memo (``_nb_exp``, kept from batch to batch) and the stream's additive parts (``stream.nb_fill_increments``).
    """
    ints = table.ints
    n, i_count, g_count, c_count = (int(ints[k]) for k in (SEATS, CARDS, GROUPS, CLAIMS))
    actions = int(ints[NUM_ACTIONS])
    return (
        np.empty((6, n)), np.zeros((8, i_count)), np.empty((3, max(g_count, 16))), np.empty((2, n, g_count)),
        np.empty((2, n, i_count)), np.empty((i_count, g_count)), np.empty((n, int(ints[STATS]))), np.empty(n, np.bool_),
        np.empty((i_count, n - 1, c_count)), np.empty(c_count, np.bool_), np.empty(i_count, np.bool_),
        np.empty(n, np.bool_), np.empty((i_count, 2), np.int64), np.empty(actions), np.empty(actions, np.bool_),
        np.empty((i_count, g_count + 1), np.int64), np.full((2, MEMO), np.nan), np.empty((actions + 2, 2), np.uint64),
    )  # fmt: skip


@jit
def nb_losses(
    ints, truth, group, copies, is_royal, floats, risk, rainbow, response, true_pick, false_pick, group_copies, obs,
    legal, loss, truthful, claiming, p_truth, scratch,
):  # fmt: skip
    """``HeuristicAgent._losses`` of every row: fills ``loss`` and ``truthful`` (B, A), ``claiming`` and ``p_truth``
    (B); ``scratch`` is ``scratch(table)``.
    """
    _nb_fill_powers(ints, floats, scratch[2][2])
    for b in range(obs.shape[0]):
        for action in range(loss.shape[1]):
            loss[b, action] = np.inf
            truthful[b, action] = False
        _, phase, best_true, best_false = _nb_row_losses(
            ints, truth, group, copies, is_royal, floats, risk, rainbow, response, true_pick, false_pick, group_copies,
            obs, legal, b, loss[b], truthful[b], scratch,
        )  # fmt: skip
        p_truth[b] = _nb_truth_odds(best_true, best_false, floats[TEMPERATURE])
        claiming[b] = phase == OFFER or phase == PASS
        if phase == OFFER:  # as numpy marks them: the truth of every offer's claim, legal or not
            for action in range(ints[RESPOND_START]):
                truthful[b, action] = truth[action // (ints[SEATS] - 1) // ints[CLAIMS], action % ints[CLAIMS]]


@inline
def _nb_draw(draws, state, jump_table, increments, b, position):
    """The uniform at ``position`` of row ``b``'s draws: from ``draws`` when it has rows, else from the stream."""
    if draws.shape[0] > 0:
        return draws[b, position]
    return nb_uniform_from(state, jump_table, increments, position)


@jit
def nb_act(
    ints, truth, group, copies, is_royal, floats, risk, rainbow, response, true_pick, false_pick, group_copies, obs,
    legal, draws, state, jump_table, out, scratch,
):  # fmt: skip
    """``HeuristicAgent.act_batch``: ``out[b]``, each row's action.

    Row ``b``'s uniforms are ``draws[b]`` (``1 + A``: the truth coin, then one jitter per
    action), or, when ``draws`` has no rows, those of the PCG64 ``state`` (moved on by
    ``1 + A`` draws a row). The least kept loss wins (the least truthful or the least false
    loss for a claim, as the coin says); only actions within twice the jitter's scale of it
    can win, so only their jitter is read, and the winner is the first least
    ``loss + jitter_scale * jitter`` as in numpy's ``argmin``. Without a kept action, the
    least ``1e6 + jitter`` of the legal ones; without a legal one, action 0.
    """
    actions = ints[NUM_ACTIONS]
    scale = floats[JITTER]
    spans, loss, truthful, increments = scratch[12], scratch[13], scratch[14], scratch[17]
    _nb_fill_powers(ints, floats, scratch[2][2])
    if draws.shape[0] == 0:
        nb_fill_increments(state, jump_table, increments)
    for b in range(obs.shape[0]):
        span_count, phase, best_true, best_false = _nb_row_losses(
            ints, truth, group, copies, is_royal, floats, risk, rainbow, response, true_pick, false_pick, group_copies,
            obs, legal, b, loss, truthful, scratch,
        )  # fmt: skip
        claiming = phase == OFFER or phase == PASS
        p_truth = _nb_truth_odds(best_true, best_false, floats[TEMPERATURE])
        tell_truth = _nb_draw(draws, state, jump_table, increments, b, 0) < p_truth
        least = (best_true if tell_truth else best_false) if claiming else min(best_true, best_false)
        choice = 0
        best = np.inf
        if np.isfinite(least):
            for span in range(span_count):
                for action in range(spans[span, 0], spans[span, 1]):
                    value = loss[action]
                    if value <= least + 2 * scale and (not claiming or truthful[action] == tell_truth):
                        score = value + scale * _nb_draw(draws, state, jump_table, increments, b, 1 + action)
                        if score < best:
                            best, choice = score, action
        else:
            for action in range(actions):
                if legal[b, action]:
                    score = 1e6 + _nb_draw(draws, state, jump_table, increments, b, 1 + action)
                    if score < best:
                        best, choice = score, action
        out[b] = choice
        if draws.shape[0] == 0:
            nb_skip_from(state, jump_table, increments, 1 + actions)
