"""``honest`` and ``bluffer`` in compiled code: ``scripted._ClaimStyleAgent``'s numpy decision, one row at a time.

The agent draws its three uniforms a row in numpy (the truth coin, the pick, the peek
coin), as the reference does; the kernels read the row (``table``), choose the claims of
the wanted truth, pick uniformly among them (``agent.pick_uniform``'s rank), and answer a
claim by its share of the unseen cards. Card counts are whole numbers, so every sum is
exact and the probabilities come out bit for bit.
"""

from __future__ import annotations

import numpy as np

from baselines.counting import OFFER, PASS, RESPOND, Rules
from baselines.kernels import inline, jit
from baselines.kernels.table import (
    CARDS,
    CLAIMS,
    NUM_ACTIONS,
    PASS_START,
    PLACE_START,
    RESPOND_START,
    SEATS,
    STATS,
    TableSpec,
    nb_read_row,
)


class ClaimStyleSpec:
    """A rule set and a claim style (truth rate, peek rate, belief threshold) as the kernels take them."""

    def __init__(self, rules: Rules, truth_rate: float, peek_rate: float, believe_share: float):
        self.table = TableSpec(rules)
        num_claims = int(self.table.ints[CLAIMS])
        self.style = np.array([truth_rate, peek_rate, believe_share / num_claims], np.float64)
        """The truth rate, the peek rate and the least share of the unseen cards a believed claim has."""
        ints = self.table.ints
        n, i_count = int(ints[SEATS]), int(ints[CARDS])
        self.scratch = (
            np.empty(i_count), np.empty((n, i_count)), np.empty(i_count), np.empty((n, rules.group.shape[1])),
            np.empty(n), np.empty((n, int(ints[STATS]))), np.empty(n, np.bool_),
            np.empty(int(ints[NUM_ACTIONS]), np.bool_),
        )  # fmt: skip
        """Per-row scratch arrays of the kernels."""

    def arrays(self) -> tuple:
        """The kernels' rule arguments, in order."""
        t = self.table
        return t.ints, t.truth, t.group, t.copies, self.style


@inline
def _nb_claim_truths(ints, truth, legal, b, card, wanted, preferred):
    """``preferred[a]``: action ``a`` is legal and its claim's truth is ``wanted`` (``claim_truth_of_actions``); returns
    how many are.
    """
    targets, c_count = ints[SEATS] - 1, ints[CLAIMS]
    count = 0
    for a in range(ints[NUM_ACTIONS]):  # responses and placements make no claim
        preferred[a] = False
    for i in range(ints[CARDS]):
        for t in range(targets):
            for c in range(c_count):
                a = (i * targets + t) * c_count + c
                preferred[a] = legal[b, a] and (truth[i, c] != 0) == wanted
                count += preferred[a]
    for t in range(targets):
        for c in range(c_count):
            a = ints[PASS_START] + t * c_count + c
            preferred[a] = legal[b, a] and (card >= 0 and truth[max(card, 0), c] != 0) == wanted
            count += preferred[a]
    if not wanted:
        for a in range(ints[RESPOND_START], ints[PASS_START]):
            preferred[a] = legal[b, a]
            count += preferred[a]
        for a in range(ints[PLACE_START], ints[NUM_ACTIONS]):
            preferred[a] = legal[b, a]
            count += preferred[a]
    return count


@inline
def _nb_believes(ints, truth, style, unseen, claim):
    """``claimed_share(...) >= believe_share / C``: the claim is common enough among the unseen cards."""
    fitting, total = 0.0, 0.0
    for i in range(ints[CARDS]):
        fitting += unseen[i] * truth[i, max(claim, 0)]
        total += unseen[i]
    share = fitting / max(total, 1e-9) if claim >= 0 else 0.0
    return share >= style[2]


@inline
def _nb_read(ints, group, copies, obs, b, scratch):
    return nb_read_row(
        ints, copies, group, obs, b, scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5], scratch[6]
    )


@jit
def nb_claim_style_act(ints, truth, group, copies, style, obs, legal, u, out, scratch):
    """``_ClaimStyleAgent.act_batch``: ``out[b]`` from the uniforms ``u[b]`` (truth coin, pick, peek coin)."""
    preferred = scratch[7]
    rs = ints[RESPOND_START]
    for b in range(obs.shape[0]):
        phase, claim, _, card, _, _ = _nb_read(ints, group, copies, obs, b, scratch)
        if phase == RESPOND:
            response = rs if _nb_believes(ints, truth, style, scratch[2], claim) else rs + 1
            if legal[b, rs + 2] and u[b, 2] < style[1]:
                response = rs + 2
            out[b] = response
            continue
        count = _nb_claim_truths(ints, truth, legal, b, card, u[b, 0] < style[0], preferred)
        if not ((phase == OFFER or phase == PASS) and count > 0):
            count = 0
            for a in range(ints[NUM_ACTIONS]):
                preferred[a] = legal[b, a]
                count += preferred[a]
        out[b] = -1
        if count > 0:
            k = min(np.int64(u[b, 1] * count), count - 1)
            for a in range(ints[NUM_ACTIONS]):
                if preferred[a]:
                    if k == 0:
                        out[b] = a
                        break
                    k -= 1


@jit
def nb_claim_style_probabilities(ints, truth, group, copies, style, obs, legal, out, scratch):
    """``_ClaimStyleAgent.action_probabilities_batch``: ``out[b]``, the odds of each action (``out`` zeroed)."""
    preferred = scratch[7]
    rs = ints[RESPOND_START]
    actions = ints[NUM_ACTIONS]
    for b in range(obs.shape[0]):
        phase, claim, _, card, _, _ = _nb_read(ints, group, copies, obs, b, scratch)
        if phase == RESPOND:
            peek = style[1] if legal[b, rs + 2] else 0.0
            out[b, rs if _nb_believes(ints, truth, style, scratch[2], claim) else rs + 1] = 1.0 - peek
            out[b, rs + 2] += peek
            continue
        claiming = phase == OFFER or phase == PASS
        for wanted, weight in ((True, style[0]), (False, 1.0 - style[0])):
            count = _nb_claim_truths(ints, truth, legal, b, card, wanted, preferred)
            if not (claiming and count > 0):
                count = 0
                for a in range(actions):
                    preferred[a] = legal[b, a]
                    count += preferred[a]
            share = 1.0 / max(np.float64(count), 1.0)
            for a in range(actions):
                term = weight * (share if preferred[a] else 0.0)
                out[b, a] = term if wanted else out[b, a] + term
