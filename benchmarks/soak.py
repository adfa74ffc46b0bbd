"""Soak: millions of random legal decisions over every rule set, checking the game's
invariants at every step (the figure quoted in docs/reliability.md).

    python benchmarks/soak.py [--games 2000] [--batch 256] [--aec-games 20] [--seed 0]

For each rule set (every preset and player count the rules allow, and Royal with each
flag) it plays ``--games`` games on the batched engine, choosing uniformly random legal
actions, and at every step checks, for every game:

* card conservation: hands + collections + removed + the card in play + the penalty
  deck (face up and face down) hold exactly the deck, card by card;
* ``hand_sizes`` equals the hands, the seat to act is a real seat;
* a live game has a legal action, and every chosen legal action is accepted;
* a finished game has exactly one loser with a known loss reason and rewards of -1 for
  it and 1/(N-1) for the others (zero-sum), or is truncated with zero rewards.

Then it plays ``--aec-games`` games per rule set in the PettingZoo env (the wrapped env,
as users call it), checking the same conservation on ``state()``, that observations and
state stay in their spaces, the mask is the legal set, and the final rewards are zero-sum.
It prints, per rule set and in total: games, decisions, invariant failures, and the wall
time. The exit status is 1 if any invariant failed. Nothing here is a speed claim.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import cockroach_env
from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for
from cockroach_env.engine import LOSS_REASONS

PRESETS = (
    "classic",
    "even-deal",
    "rainbow",
    "three-of-a-kind",
    "creature-to-start",
    "rainbow+even-deal",
    "rainbow+creature-to-start+even-deal",
)


def rule_sets() -> dict[str, GameConfig]:
    """Every preset at every player count it allows, and Royal with each of its flags."""
    out = {}
    for preset in PRESETS:
        for n in range(2, 7):
            if "three-of-a-kind" in preset and n == 2:
                continue
            out[f"{preset} {n}p"] = GameConfig.from_options(preset=preset, num_players=n)
    for n in range(2, 7):
        out[f"royal {n}p"] = GameConfig(num_players=n, edition="royal")
        out[f"royal+blank-royal {n}p"] = GameConfig(num_players=n, edition="royal", blank_counts_as_royal=True)
    out["royal 4p no-royal-animal"] = GameConfig(num_players=4, edition="royal", royal_counts_as_animal=False)
    out["classic 4p max_steps=40"] = GameConfig(num_players=4, max_steps=40)
    return out


class Conservation:
    """Card counts per identity in a (B, S) state, from the state layout."""

    def __init__(self, config: GameConfig):
        enc = encoding_for(config)
        self.segments = enc.state.segments
        self.copies = np.asarray(config.cards.copies)
        self.n, self.i = config.num_players, len(config.cards.identities)

    def _seg(self, states: np.ndarray, name: str) -> np.ndarray | None:
        seg = self.segments.get(name)
        return None if seg is None else states[:, seg.start : seg.stop]

    def failures(self, states: np.ndarray) -> int:
        b, n, i = len(states), self.n, self.i
        hands = self._seg(states, "hands").reshape(b, n, i)
        total = (
            hands.sum(1)
            + self._seg(states, "collections").reshape(b, n, i).sum(1)
            + self._seg(states, "removed")
            + self._seg(states, "chain_card")
        )
        for name in ("penalty_top", "penalty_hidden"):
            extra = self._seg(states, name)
            if extra is not None:
                total = total + extra
        bad = (total != self.copies).any(1)
        bad |= (self._seg(states, "hand_sizes") != hands.sum(2)).any(1)
        return int(bad.sum())


def soak_batched(config: GameConfig, games: int, batch: int, seed: int) -> tuple[int, int, int]:
    """(games finished, decisions, invariant failures)."""
    rng = np.random.default_rng(seed)
    engine = BatchedGames(config, batch, seed=seed)
    check = Conservation(config)
    step = engine.reset()
    finished = decisions = failures = 0
    n = config.num_players
    while finished < games:
        live = step.action_mask.any(1)
        failures += int((~live).sum())
        failures += int(((step.to_act < 0) | (step.to_act >= n)).sum())
        failures += check.failures(engine.state())
        actions = random_legal_actions(step.action_mask, rng)
        try:
            step = engine.step(actions)
        except ValueError:
            return finished, decisions, failures + 1
        decisions += batch
        done = np.flatnonzero(step.done)
        for b in done:
            rewards = step.rewards[b]
            if step.truncated[b]:
                failures += int(step.loser[b] != -1 or rewards.any())
            else:
                loser = step.loser[b]
                expected = np.full(n, 1.0 / (n - 1), np.float32)
                if 0 <= loser < n:
                    expected[loser] = -1.0
                ok = (
                    0 <= loser < n
                    and 0 <= step.loss_reason[b] < len(LOSS_REASONS)
                    and np.allclose(rewards, expected)
                    and abs(float(rewards.sum())) < 1e-5
                )
                failures += int(not ok)
        finished += len(done)
    return finished, decisions, failures


def soak_aec(config: GameConfig, games: int, seed: int) -> tuple[int, int, int]:
    rng = np.random.default_rng(seed)
    env = cockroach_env.env(config=config)
    check = Conservation(config)
    decisions = failures = 0
    for g in range(games):
        env.reset(seed=seed + g)
        raw = env.unwrapped
        total = {a: 0.0 for a in env.possible_agents}
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, _ = env.last()
            total[agent] += reward
            if terminated or truncated:
                env.step(None)
                continue
            state = raw.state()
            failures += check.failures(state[None])
            failures += int(not raw.state_space.contains(state))
            failures += int(not env.observation_space(agent).contains(observation))
            legal = np.flatnonzero(observation["action_mask"])
            failures += int(sorted(raw.encode(m) for m in raw.legal_moves()) != legal.tolist())
            if not len(legal):
                failures += 1
                break
            env.step(int(rng.choice(legal)))
            decisions += 1
        if raw.game.over:
            failures += int(abs(sum(total.values())) > 1e-6)
    return games, decisions, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=2000, help="batched games per rule set (default 2000)")
    parser.add_argument("--batch", type=int, default=256, help="batch size of the batched engine (default 256)")
    parser.add_argument("--aec-games", type=int, default=20, help="PettingZoo env games per rule set (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sets = rule_sets()
    totals = np.zeros(6, np.int64)
    start = time.perf_counter()
    print(
        f"{'rule set':34s} {'batched games':>13s} {'decisions':>11s} {'failures':>8s}   {'AEC games':>9s} "
        f"{'decisions':>9s} {'failures':>8s}"
    )
    for k, (name, config) in enumerate(sets.items()):
        batched = soak_batched(config, args.games, args.batch, args.seed + k)
        aec = soak_aec(config, args.aec_games, args.seed + 1000 * k)
        totals += np.array(batched + aec)
        print(
            f"{name:34s} {batched[0]:13,d} {batched[1]:11,d} {batched[2]:8d}   {aec[0]:9,d} {aec[1]:9,d} {aec[2]:8d}",
            flush=True,
        )
    seconds = time.perf_counter() - start
    print(
        f"total over {len(sets)} rule sets: {totals[0] + totals[3]:,} games, {totals[1] + totals[4]:,} decisions, "
        f"{totals[2] + totals[5]} invariant failures ({totals[0]:,} batched games / {totals[1]:,} decisions, "
        f"{totals[3]:,} AEC games / {totals[4]:,} decisions) in {seconds:.0f} s"
    )
    return 1 if totals[2] + totals[5] else 0


if __name__ == "__main__":
    sys.exit(main())
