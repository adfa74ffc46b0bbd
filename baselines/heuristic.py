"""``heuristic``: a strong scripted player that counts cards and weighs danger.

Every decision compares the expected *loss probability* of the observer after each
option, under a simple model of the table:

* **Danger.** Each seat gets a hazard from its collection (cards per loss group
  relative to ``loss_count``, only for groups with cards left to come; the rainbow
  rule; a nearly empty hand), and the observer's chance to be the one who loses is its
  share of ``exp(kappa * hazard)`` over the table. Taking a card that completes a set
  (or must be taken with an empty hand) is a certain loss for its taker. A royal card
  also brings the face-up penalty card; a joker or blank counts as a fraction of every
  animal (the replacement card is not known in advance).
* **Claims received.** The probability that a claim is true comes from card counting
  (the cards the observer cannot see, ``counting.read_table``) combined by Bayes with
  the claimant's revealed share of truthful claims (the public history counters), so
  habitual bluffers are doubted and honest players believed.
* **Claims made.** A recipient calls right, calls wrong or peeks at the rates its
  history shows (a claim that no card outside the collections fits is obviously
  false and is always called false). The player offers the card and targets the seat
  that minimise its loss probability (the most vulnerable opponent, a card that is
  safe to get back), and chooses between its best truthful and its best false claim
  at random, weighted by how close they are, with the claim type drawn among equals:
  about half its claims are lies, so its revealed history tells an opponent nothing.
  (Modelling recipients as reading the claim from public information made the claims
  predictable and lost to card-counting opponents; lying more or less than half the
  time is punished by them too.)
* **Peeking** is valued as the best pass of every card the card in play could be,
  so the player peeks when calling is too uncertain and a safe recipient exists.
* **Royal replacements** place the card that adds least danger.

The whole decision is computed for a batch at once; ``act`` is ``act_batch`` on one
row, so both play identically. By default it runs compiled, row by row
(``baselines.kernels.heuristic``); the numpy methods here are its reference
(``backend="numpy"``), and both decide the same. Each decision draws ``1 + A``
uniforms (the truth coin and a tie-breaking jitter); ``action_probabilities`` gives the
exact odds of that draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines.agent import Agent
from baselines.counting import (
    OFFER,
    PASS,
    PLACE,
    RESPOND,
    Rules,
    Table,
    claim_posterior,
    honesty,
    read_table,
    response_rates,
    rules_for,
)
from baselines.kernels import resolve_backend, stream
from baselines.kernels.heuristic import HeuristicSpec, nb_act, nb_losses
from cockroach_env.config import GameConfig


@dataclass(frozen=True)
class HeuristicParams:
    """Knobs of the heuristic's model (defaults tuned in 3-5 player classic tables against
    the other baselines and against variants of itself).
    """

    kappa: float = 3.0
    """Sharpness of the danger share: exp(kappa * hazard)."""
    set_power: float = 4.0
    """Hazard of a loss group with ``k`` cards is ``(k / (loss_count - 1)) ** set_power``."""
    hand_risk: tuple[float, ...] = (1.0, 0.6, 0.2, 0.05)
    """Hazard of holding 0, 1, 2, 3 cards (more cards: none)."""
    rainbow_weight: float = 1.0
    """Rainbow rule: hazard of holding ``k`` of the ``A`` animal types is ``rainbow_weight * (k / (A - 1)) ** 3``."""
    special_spread: float = 1.0
    """A joker or blank taken counts as this many cards spread over the animal groups."""
    honesty_prior: float = 0.5
    """Share of truthful claims assumed of a player before any of its claims is revealed ..."""
    honesty_strength: float = 2.0
    """... worth this many revealed claims."""
    response_prior: tuple[float, float, float] = (0.55, 0.3, 0.15)
    """Prior share of right calls, wrong calls and peeks of a player handed a card."""
    response_strength: float = 3.0
    """Weight of ``response_prior`` in revealed responses."""
    truth_temperature: float = 0.01
    """Softness of the choice between the best truthful and the best false claim."""
    peek_cost: float = 0.0
    """Added to the loss probability of peeking (positive values make the player call more)."""


class HeuristicAgent(Agent):
    """Card-counting, danger-weighing scripted player (see the module docstring)."""

    name = "heuristic"
    supports_batch = True

    def __init__(
        self,
        config: GameConfig,
        seed: int | None = None,
        params: HeuristicParams | None = None,
        backend: str = "auto",
    ):
        super().__init__(config, seed)
        self.rules: Rules = rules_for(config)
        self.params = params or HeuristicParams()
        self.backend = resolve_backend(backend, self.name)
        """``numba`` (compiled, ``baselines.kernels.heuristic``) or ``numpy`` (the reference): the same decisions."""
        self._spec: HeuristicSpec | None = None

    def _compiled(self) -> HeuristicSpec:
        """The kernels' arguments for ``self.params`` (rebuilt if the params were replaced)."""
        if self._spec is None or self._spec.params is not self.params:
            self._spec = HeuristicSpec(self.rules, self.params, TIE_JITTER)
        return self._spec

    # ------------------------------------------------------------------ decision
    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.backend == "numpy":
            return self._act_batch_numpy(observations, masks)
        spec = self._compiled()
        observations, legal = spec.table.check_batch(self.name, observations, masks)
        out = np.empty(len(legal), np.int64)
        width = 1 + self.encoding.num_actions
        if stream.readable(self.rng):  # the kernel reads the uniforms it needs from the generator's stream
            state, buffered = stream.read(self.rng)
            nb_act(*spec.arrays(), observations, legal, _NO_DRAWS, state, stream.jumps(width), out, spec.scratch)
            stream.move_on(self.rng, state, len(legal) * width, buffered)
        else:
            draws = self.rng.random((len(legal), width))
            nb_act(*spec.arrays(), observations, legal, draws, _NO_STATE, _NO_JUMPS, out, spec.scratch)
        return out

    def _act_batch_numpy(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        legal = np.asarray(masks) > 0
        draws = self.rng.random((len(legal), 1 + self.encoding.num_actions))
        coin, jitter = draws[:, 0], draws[:, 1:]
        loss, truthful, claiming, p_truth = self._losses(observations, legal)
        tell_truth = coin < p_truth
        keep = np.where(claiming[:, None], truthful == tell_truth[:, None], True)
        score = np.where(keep & legal, loss, np.inf) + TIE_JITTER * jitter
        score = np.where(np.isfinite(score), score, np.where(legal, 1e6 + jitter, np.inf))
        return score.argmin(1).astype(np.int64)

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Exactly what ``act_batch`` draws: the truth coin, then the least loss among the kept
        actions, ties (losses closer than the jitter) broken by the jitter's exact odds.
        """
        if self.backend == "numpy":
            legal = np.asarray(masks) > 0
            loss, truthful, claiming, p_truth = self._losses(observations, legal)
        else:
            spec = self._compiled()
            observations, legal = spec.table.check_batch(self.name, observations, masks)
            loss, truthful = np.empty(legal.shape), np.empty(legal.shape, bool)
            claiming, p_truth = np.empty(len(legal), bool), np.empty(len(legal))
            nb_losses(*spec.arrays(), observations, legal, loss, truthful, claiming, p_truth, spec.scratch)
        probs = np.zeros(legal.shape)
        for tell_truth, weight in ((True, p_truth), (False, 1.0 - p_truth)):
            keep = np.where(claiming[:, None], truthful == tell_truth, True) & legal
            kept_loss = np.where(keep, loss, np.inf)
            least = kept_loss.min(1, keepdims=True)
            near = kept_loss < least + TIE_JITTER
            # nothing kept: act_batch picks uniformly among the legal actions; exact ties: uniformly among them
            choice = np.where(np.isfinite(least), near, legal)
            probs += weight[:, None] * choice / choice.sum(1, keepdims=True)
            for row in np.flatnonzero(
                (weight > 0) & (near & (kept_loss > least)).any(1)
            ):  # near-ties: the jitter's odds
                probs[row] += weight[row] * (_least_with_jitter(kept_loss[row]) - choice[row] / choice[row].sum())
        return probs

    def _losses(self, observations: np.ndarray, legal: np.ndarray):
        """Loss probability of every action, which claims are truthful, which rows claim, and the odds of telling the
        truth (the numpy reference of ``baselines.kernels.heuristic``).
        """
        enc = self.encoding
        batch = len(legal)
        table = read_table(self.rules, observations)
        loss = np.full((batch, enc.num_actions), np.inf)
        truthful = np.zeros((batch, enc.num_actions), dtype=bool)

        offering = table.phase == OFFER
        if offering.any():
            rows = np.flatnonzero(offering)
            ev, truth = self._offer_losses(_rows(table, rows))
            loss[rows, : enc.offer_size] = ev.reshape(len(rows), -1)
            truthful[rows, : enc.offer_size] = truth.reshape(len(rows), -1)
        responding = table.phase == RESPOND
        if responding.any():
            rows = np.flatnonzero(responding)
            loss[rows, enc.respond_start : enc.pass_start] = self._respond_losses(_rows(table, rows))
        passing = table.phase == PASS
        if passing.any():
            rows = np.flatnonzero(passing)
            ev, truth = self._pass_losses(_rows(table, rows))
            loss[rows, enc.pass_start : enc.place_start] = ev.reshape(len(rows), -1)
            truthful[rows, enc.pass_start : enc.place_start] = truth.reshape(len(rows), -1)
        placing = table.phase == PLACE
        if placing.any():
            rows = np.flatnonzero(placing)
            loss[rows, enc.place_start :] = self._place_losses(_rows(table, rows))

        loss = np.where(legal, loss, np.inf)
        claiming = offering | passing
        best_true = np.where(truthful, loss, np.inf).min(1)
        best_false = np.where(~truthful, loss, np.inf).min(1)
        gap = np.clip((best_false - best_true) / self.params.truth_temperature, -50, 50)
        p_truth = np.where(
            np.isinf(best_false), 1.0, np.where(np.isinf(best_true), 0.0, 1.0 / (1.0 + np.exp(-np.nan_to_num(gap))))
        )
        return loss, truthful, claiming, p_truth

    # ------------------------------------------------------------------ danger model
    def _hazard(self, counts: np.ndarray, live: np.ndarray, hand_sizes: np.ndarray) -> np.ndarray:
        """Hazard of collections ``counts`` (..., G) with ``live`` (..., G) groups and hand sizes (...)."""
        p, rules = self.params, self.rules
        x = np.clip(counts / (rules.loss_count - 1), 0.0, 1.0)
        hazard = (_power(x, p.set_power) * live).sum(-1)
        if rules.config.rainbow_loses:
            animals = rules.animal_groups
            distinct = (counts[..., :animals] > 0).sum(-1)
            hazard = hazard + p.rainbow_weight * (distinct / (animals - 1)) ** 3
        risk = np.asarray(p.hand_risk + (0.0,))
        hazard = hazard + risk[np.clip(hand_sizes, 0, len(risk) - 1).astype(np.int64)]
        return hazard

    def _loss_if_taken(self, table: Table, my_hand: np.ndarray, empty_hand_loses: bool = True) -> np.ndarray:
        """(B, N, I): the observer's loss probability if seat ``s`` takes a card of identity ``i``."""
        rules, p = self.rules, self.params
        batch, n = table.hand_sizes.shape
        counts = table.group_counts  # (B, N, G)
        hand_sizes = table.hand_sizes.copy()
        hand_sizes[:, 0] = my_hand
        effect = np.broadcast_to(rules.group, (batch,) + rules.group.shape).copy()  # (B, I, G)
        if rules.config.edition == "royal":
            top = table.penalty_top
            top_group = rules.group[np.maximum(top, 0)] * (top >= 0)[:, None]
            effect += rules.is_royal[None, :, None] * top_group[:, None, :]
            effect[:, rules.is_special, : rules.animal_groups] += p.special_spread / rules.animal_groups
        group_copies = rules.copies @ rules.group
        live = ((group_copies - counts.sum(1)) > 0).astype(np.float64)  # (B, G)
        after = counts[:, :, None, :] + effect[:, None, :, :]  # (B, N, I, G)
        lost = (after >= rules.loss_count - 1e-9).any(-1)
        if rules.config.rainbow_loses:
            lost |= (after[..., : rules.animal_groups] > 0).all(-1)
        if empty_hand_loses:
            lost |= (hand_sizes <= 0)[:, :, None]
        weight = np.exp(p.kappa * self._hazard(counts, live[:, None, :], hand_sizes))  # (B, N)
        weight_after = np.exp(
            p.kappa * self._hazard(after, live[:, None, None, :], hand_sizes[:, :, None])
        )  # (B, N, I)
        total = weight.sum(1)[:, None, None] - weight[:, :, None] + weight_after
        mine = np.broadcast_to(weight[:, :1, None], total.shape).copy()
        mine[:, 0, :] = weight_after[:, 0, :]
        share = mine / total
        me = np.zeros((1, n, 1), dtype=bool)
        me[0, 0, 0] = True
        return np.where(lost, me, share)

    # ------------------------------------------------------------------ handing a card on
    def _handover_losses(self, table: Table, taken: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """(B, I, T, C): the observer's loss probability after handing a card of identity ``i`` to
        offset ``t`` with claim ``c``; ``taken`` is ``_loss_if_taken``; ``seen`` (B, N) marks the
        seats that have seen the card once it is handed over (the observer included).
        """
        rules = self.rules
        rates = response_rates(table.history, self.params.response_prior, self.params.response_strength)  # (B, N, 3)
        right, wrong = rates[..., 0], rates[..., 1]
        accuracy = (right / np.maximum(right + wrong, 1e-9))[:, 1:]  # (B, T)
        # after the handover, can the recipient pass it on?  unseen seats other than the recipient
        unseen_seats = (~seen).sum(1)[:, None] - (~seen[:, 1:])  # (B, T)
        calls = np.where(unseen_seats > 0, (right + wrong)[:, 1:], 1.0)[:, None, :, None]
        # a claim no card outside the collections fits is obviously false: it is called false
        outside = np.maximum(rules.copies - table.collections.sum(1), 0.0)
        possible = (outside @ rules.truth.astype(np.float64)) > 0  # (B, C)
        obvious = ~possible[:, None, None, :] & ~rules.truth[None, :, None, :]  # (B, I, 1, C)
        p_right = calls * np.where(obvious, 1.0, accuracy[:, None, :, None])
        p_wrong = calls - p_right
        p_on = 1.0 - calls
        mine = taken[:, 0, :][:, :, None, None]  # (B, I, 1, 1)
        theirs = np.swapaxes(taken[:, 1:, :], 1, 2)[:, :, :, None]  # (B, I, T, 1)
        others = taken[:, 1:, :].mean(1)[:, :, None, None]
        return p_right * mine + p_wrong * theirs + p_on * others

    def _offer_losses(self, table: Table):
        batch, n = table.hand_sizes.shape
        taken = self._loss_if_taken(table, table.hand_sizes[:, 0] - 1)
        seen = np.zeros((batch, n), dtype=bool)
        seen[:, 0] = True
        losses = self._handover_losses(table, taken, seen)
        truth = np.broadcast_to(self.rules.truth[None, :, None, :], losses.shape)
        return losses, truth

    def _pass_losses(self, table: Table):
        taken = self._loss_if_taken(table, table.hand_sizes[:, 0])
        seen = table.seen.copy()
        seen[:, 0] = True
        losses = self._handover_losses(table, taken, seen)  # (B, I, T, C)
        rows = np.arange(len(losses))
        card = np.maximum(table.card, 0)
        truth = np.broadcast_to(self.rules.truth[card][:, None, :], losses[:, 0].shape)
        return losses[rows, card], truth

    # ------------------------------------------------------------------ responding
    def _respond_losses(self, table: Table) -> np.ndarray:
        """(B, 3): loss probability of calling true, calling false and peeking."""
        rules, p = self.rules, self.params
        rows = np.arange(len(table.claim))
        passer = np.maximum(table.latest_passer, 0)
        claim = np.maximum(table.claim, 0)
        q = honesty(table.history, p.honesty_prior, p.honesty_strength)[rows, passer]
        p_true, if_true, if_false = claim_posterior(rules, table.unseen, claim, q)
        taken = self._loss_if_taken(table, table.hand_sizes[:, 0])
        mine, theirs = taken[:, 0, :], taken[rows, passer, :]
        true_mine, false_mine = (if_true * mine).sum(1), (if_false * mine).sum(1)
        true_theirs, false_theirs = (if_true * theirs).sum(1), (if_false * theirs).sum(1)
        call_true = p_true * true_theirs + (1.0 - p_true) * false_mine
        call_false = (1.0 - p_true) * false_theirs + p_true * true_mine
        # peek: the best pass of each identity the card could be, weighted by its probability
        seen = table.seen.copy()
        seen[:, 0] = True
        handover = self._handover_losses(table, taken, seen)  # (B, I, T, C)
        eligible = ~seen[:, 1:]  # (B, T)
        handover = np.where(eligible[:, None, :, None], handover, np.inf).min(axis=(2, 3))  # (B, I)
        card_dist = p_true[:, None] * if_true + (1.0 - p_true[:, None]) * if_false
        handover = np.where(np.isfinite(handover), handover, 1.0)
        peek = (card_dist * handover).sum(1) + p.peek_cost
        return np.stack([call_true, call_false, peek], axis=1)

    # ------------------------------------------------------------------ Royal replacement
    def _place_losses(self, table: Table) -> np.ndarray:
        """(B, I): loss probability of placing each identity from hand."""
        taken = self._loss_if_taken(table, table.hand_sizes[:, 0], empty_hand_loses=False)
        return taken[:, 0, :]


def _power(x: np.ndarray, exponent: float) -> np.ndarray:
    """``x ** exponent``; a small whole exponent by repeated multiplication (numpy's ``**`` calls ``pow`` per
    element for any exponent but 2, and ``_hazard``'s fourth powers were a fifth of the heuristic's time).
    """
    if exponent in (1.0, 2.0, 3.0, 4.0):
        square = x * x
        return {1.0: x, 2.0: square, 3.0: square * x, 4.0: square * square}[exponent]
    return x**exponent


_NO_DRAWS = np.zeros((0, 0))
_NO_STATE = np.zeros(4, np.uint64)
_NO_JUMPS = np.zeros((1, 4), np.uint64)
"""Placeholders of ``nb_act``'s arguments: the uniforms drawn in numpy, or the stream to read them from."""

TIE_JITTER = 1e-9
"""Scale of the uniform jitter added to the losses: it breaks ties (and near-ties) at random."""


def _least_with_jitter(loss: np.ndarray) -> np.ndarray:
    """Distribution of ``argmin(loss + TIE_JITTER * u)`` over i.i.d. uniform ``u`` (``inf`` never wins).

    Only actions within ``TIE_JITTER`` of the least loss can win. Action ``a`` wins when
    every other ``u_b`` exceeds ``u_a + d_a - d_b`` (``d`` the losses above the least, in
    jitter units): the integral over ``u_a`` of a product of clipped linear functions,
    a polynomial between breakpoints, integrated exactly by Gauss-Legendre.
    """
    probs = np.zeros(loss.shape)
    least = loss.min()
    near = np.flatnonzero(loss < least + TIE_JITTER)
    d = (loss[near] - least) / TIE_JITTER
    if len(near) == 1 or not d.any():
        probs[near] = 1.0 / len(near)
        return probs
    nodes, weights = np.polynomial.legendre.leggauss(len(near))
    for k, a in enumerate(near):
        shift = d[k] - np.delete(d, k)
        cuts = np.unique(np.clip(np.concatenate(([0.0, 1.0], -shift, 1.0 - shift)), 0.0, 1.0))
        total = 0.0
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            x = (hi - lo) / 2 * nodes + (hi + lo) / 2
            total += (
                (hi - lo) / 2 * (weights * np.prod(1.0 - np.clip(x[:, None] + shift[None, :], 0.0, 1.0), axis=1)).sum()
            )
        probs[a] = total
    return probs / probs.sum()


def _rows(table: Table, rows: np.ndarray) -> Table:
    """The sub-table of the given rows."""
    return Table(**{name: value[rows] for name, value in vars(table).items()})
