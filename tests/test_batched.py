"""The batched engine plays exactly like the rules engine behind the AEC env.

The differential test is the contract that lets the two implementations coexist: for
every rule set and player count, the batched engine and one AEC env per game are
started from the same deals and fed the same random legal actions, and every step must
agree on the seat to act, the observation, the mask, the full state, the rewards, the
done flags, the loser and the loss reason, across automatic re-deals. Both backends
(numba and numpy) are held to it, and to each other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields, replace

import numpy as np
import pytest

from cockroach_env import raw_env
from cockroach_env.batched import BatchedGames, BatchStep, deal_orders, deals_from_orders, random_legal_actions
from cockroach_env.batched.deals import _random_deals
from cockroach_env.batched.numba_kernels import numba
from cockroach_env.config import GameConfig
from cockroach_env.engine import LOSS_REASONS, Deal, explicit_deal, random_deal

from .conftest import rule_sets

BACKENDS = ("numba", "numpy") if numba is not None else ("numpy",)  # without numba, the numpy backend alone

ROYAL_FLAGS = (
    pytest.param({}, id="default"),
    pytest.param({"blank_counts_as_royal": True}, id="blank_counts_as_royal"),
    pytest.param({"royal_counts_as_animal": False}, id="royal_separate"),
)


# ---------------------------------------------------------------------------- the reference
def reset_env(env, deal: Deal) -> None:
    """Start an AEC env from an ``engine.Deal`` through its public reset options."""
    names = env.config.cards.identities
    by_name = lambda row: {names[c]: int(k) for c, k in enumerate(row) if k}  # noqa: E731
    env.reset(
        options={
            "starter": f"player_{deal.starter}",
            "hands": {f"player_{s}": by_name(row) for s, row in enumerate(deal.hands)},
            "collections": {f"player_{s}": by_name(row) for s, row in enumerate(deal.collections)},
            "penalty_deck": [names[c] for c in deal.penalty_deck],
        }
    )


def note_paths(env, seen: Counter) -> None:
    """Count the Royal rule paths the reference game is in now (coverage of the sweep)."""
    game = env.game
    if game.replacement is not None:
        seen["replace_fitting" if game.replacement.claim is not None else "replace_any_two"] += 1


def note_events(events: list[dict], seen: Counter) -> None:
    specials = ("joker", "blank")
    for previous, event in zip([{}] + events, events):
        kind = event["type"]
        if kind == "penalty_to_hand":
            seen["special_drawn_to_hand"] += 1
        elif kind == "take_into_hand":
            seen["special_taken_into_hand"] += 1
        elif kind == "place" and event["source"] == "penalty":
            seen["penalty_draw"] += 1
            if previous.get("source") == "penalty":
                seen["chained_penalty_draw"] += 1
        elif kind == "place" and event["source"] == "call" and event["card"] in specials:
            seen["special_face_up"] += 1


def compare(step: BatchStep, states: np.ndarray, envs: list, b: int, context: str) -> None:
    env = envs[b]
    agent = env.agent_selection
    assert agent == f"player_{step.to_act[b]}", f"{context}: to_act {step.to_act[b]} vs env {agent}"
    observed = env.observe(agent)
    if not np.array_equal(step.observation[b], observed["observation"]):
        differ = np.flatnonzero(step.observation[b] != observed["observation"])
        raise AssertionError(
            f"{context}: observation differs at {differ.tolist()}: batched {step.observation[b][differ]} vs env "
            f"{observed['observation'][differ]}"
        )
    if not np.array_equal(step.action_mask[b], observed["action_mask"]):
        differ = np.flatnonzero(step.action_mask[b] != observed["action_mask"])
        raise AssertionError(f"{context}: action mask differs at {differ.tolist()}")
    if not np.array_equal(states[b], env.state()):
        differ = np.flatnonzero(states[b] != env.state())
        raise AssertionError(
            f"{context}: state differs at {differ.tolist()}: batched {states[b][differ]} vs env {env.state()[differ]}"
        )


def differential(
    config: GameConfig, backend: str, batch_size: int, finished_games: int, seed: int, deals=None
) -> Counter:
    """Play until ``finished_games`` games ended, comparing every step; returns what was covered."""
    games = BatchedGames(config, batch_size, seed=seed, backend=backend)
    step = games.reset(deals=deals)
    envs = [raw_env(config=config) for _ in range(batch_size)]
    for b, deal in games.last_deals.items():
        reset_env(envs[b], deal)
    rng = np.random.default_rng(seed + 1)
    seen: Counter = Counter()
    n = config.num_players
    while seen["games"] < finished_games:
        states = games.state()
        for b in range(batch_size):
            compare(step, states, envs, b, f"{config} {backend} game {b} decision {envs[b].game.steps}")
        actions = random_legal_actions(step.action_mask, rng)
        for b in range(batch_size):
            envs[b].step(int(actions[b]))
        step = games.step(actions)
        seen["steps"] += batch_size
        new_deals = games.last_deals
        assert sorted(new_deals) == np.flatnonzero(step.done).tolist()
        for b, env in enumerate(envs):
            game = env.game
            context = f"{config} {backend} game {b} after decision {game.steps}"
            note_paths(env, seen)
            ended = game.over or env.truncations["player_0"]
            assert bool(step.done[b]) == ended, f"{context}: done {step.done[b]} vs env {ended}"
            if not ended:
                assert step.loser[b] == -1 and step.loss_reason[b] == -1 and not step.rewards[b].any(), context
                continue
            expected = np.array([env.rewards[f"player_{s}"] for s in range(n)], np.float32)
            assert np.array_equal(step.rewards[b], expected), f"{context}: rewards {step.rewards[b]} vs env {expected}"
            assert step.loser[b] == (-1 if game.loser is None else game.loser), context
            assert step.loss_reason[b] == (-1 if game.loss_reason is None else LOSS_REASONS.index(game.loss_reason)), (
                context
            )
            assert bool(step.truncated[b]) == env.truncations["player_0"], context
            seen["games"] += 1
            seen["truncated" if step.truncated[b] else game.loss_reason] += 1
            note_events(game.events, seen)
            reset_env(env, new_deals[b])
    return seen


def config_id(config: GameConfig) -> str:
    """``royal-4p-blank_counts_as_royal``: edition, players and the options that differ from the defaults."""
    default = GameConfig(num_players=config.num_players, edition=config.edition)
    changed = [f"{k}={v}" for k, v in config.to_dict().items() if v != getattr(default, k)]
    return "-".join([config.edition, f"{config.num_players}p", *changed])


# ---------------------------------------------------------------------------- the differential test
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset,num_players", rule_sets())
def test_batched_plays_like_the_engine(preset, num_players, backend):
    config = GameConfig.from_options(preset=preset, num_players=num_players)
    seen = differential(config, backend, batch_size=8, finished_games=40, seed=num_players)
    assert seen["games"] >= 40
    assert seen["same_type"] > 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flags", ROYAL_FLAGS)
@pytest.mark.parametrize("num_players", range(2, 7))
def test_batched_plays_like_the_engine_royal(num_players, flags, backend):
    config = GameConfig(num_players=num_players, edition="royal", **flags)
    seen = differential(config, backend, batch_size=8, finished_games=40, seed=10 + num_players)
    assert seen["penalty_draw"] > 0 and seen["special_taken_into_hand"] > 0


def crafted_royal_deals(config: GameConfig, count: int, rng: np.random.Generator) -> list[Deal]:
    """Royal deals rigged for the rare paths: royals in hand, a penalty deck of royals and specials.

    Every hand holds few cards, so takers often have nothing but a special left (the
    face-up ruling), replacements often find no fitting card (any two), and placed
    royals draw royals (chains) and specials (drawn to hand).
    """
    names = config.cards.identities
    royals = [name for name in names if name.startswith("royal_")]
    animals = [name for name in names if not name.startswith("royal_") and name not in ("joker", "blank")]
    deals = []
    for _ in range(count):
        order = list(rng.permutation(royals))
        penalty = order[:4] + list(rng.permutation(["joker", order[4]]))
        hand_royals = order[5:]
        seats = config.num_players
        hands = {s: {} for s in range(seats)}
        for k, name in enumerate(hand_royals + ["blank"] + list(rng.choice(animals, size=2 * seats))):
            seat = k % seats
            hands[seat][name] = hands[seat].get(name, 0) + 1
        deals.append(explicit_deal(config, int(rng.integers(seats)), hands, penalty_deck=penalty))
    return deals


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_players", (2, 3, 5))
def test_rare_royal_paths_play_like_the_engine(num_players, backend):
    """Crafted deals (queued for the re-deals too) reach every Royal ruling many times."""
    config = GameConfig(num_players=num_players, edition="royal")
    deals = crafted_royal_deals(config, 400, np.random.default_rng(num_players))
    seen = differential(config, backend, batch_size=8, finished_games=120, seed=num_players, deals=deals)
    for path in (
        "chained_penalty_draw",
        "special_drawn_to_hand",
        "special_face_up",
        "replace_fitting",
        "replace_any_two",
    ):
        assert seen[path] > 0, f"{path} never happened: {dict(seen)}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncation_by_max_steps_plays_like_the_env(backend):
    config = GameConfig(num_players=4, max_steps=25)
    seen = differential(config, backend, batch_size=8, finished_games=30, seed=3)
    assert seen["truncated"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("config", [
    GameConfig(num_players=n, **options)
    for n in range(2, 7)
    for options in ({}, {"rainbow_loses": True, "discard": 4}, {"edition": "royal"},
                    {"edition": "royal", "blank_counts_as_royal": True, "royal_counts_as_animal": False})
], ids=config_id)  # fmt: skip
def test_batched_plays_like_the_engine_long(config, backend):
    """The bigger sweep: 400 games per rule set and backend (16,000 games, about 2 minutes)."""
    seen = differential(config, backend, batch_size=32, finished_games=400, seed=config.num_players + 100)
    assert seen["games"] >= 400


# ---------------------------------------------------------------------------- backends and deals
@pytest.mark.parametrize(
    "config",
    [
        GameConfig(num_players=4),
        GameConfig(num_players=6, rainbow_loses=True, opening_cards=1),
        GameConfig(num_players=2),
        GameConfig(num_players=4, edition="royal"),
        GameConfig(num_players=2, edition="royal", royal_counts_as_animal=False),
        GameConfig(num_players=4, edition="royal", recall=True),
        GameConfig.from_options("creature-to-start", num_players=5, recall=True),
    ],
    ids=config_id,
)
def test_backends_agree_step_by_step(config):
    if len(BACKENDS) < 2:
        pytest.skip("numba is not installed")
    batch = 24 if config.recall else 256  # recall observations are large
    runs = [BatchedGames(config, batch, seed=7, backend=backend) for backend in BACKENDS]
    steps = [games.reset() for games in runs]
    rng = np.random.default_rng(0)
    done = 0
    for _ in range(150):
        for field in fields(BatchStep):
            assert np.array_equal(getattr(steps[0], field.name), getattr(steps[1], field.name)), field.name
        assert np.array_equal(runs[0].state(), runs[1].state())
        actions = random_legal_actions(steps[0].action_mask, rng)
        steps = [games.step(actions) for games in runs]
        done += int(steps[0].done.sum())
    assert done > 0  # games were dealt again within a step


@pytest.mark.parametrize("config", [GameConfig(num_players=3, edition="royal")], ids=config_id)
def test_threaded_kernels_play_like_the_serial_ones(config):
    """``parallel=True`` spreads chunks of games over numba's threads: the very same steps.

    One rule set: the threaded kernels are the serial ones' source compiled with ``prange``, and Royal runs every
    branch that classic runs and its own (the penalty pile, the jokers, placing); each threaded compilation costs
    about 40 s of a CI run.
    """
    if "numba" not in BACKENDS:
        pytest.skip("numba is not installed")
    from cockroach_env.batched import PARALLEL_MIN_GAMES

    size = PARALLEL_MIN_GAMES + 77  # threaded, with a partial last chunk
    runs = [BatchedGames(config, size, seed=5, parallel=parallel) for parallel in (False, True)]
    steps = [games.reset() for games in runs]
    rng = np.random.default_rng(1)
    for _ in range(60):
        for field in fields(BatchStep):
            assert np.array_equal(getattr(steps[0], field.name), getattr(steps[1], field.name)), field.name
        actions = random_legal_actions(steps[0].action_mask, rng)
        steps = [games.step(actions) for games in runs]
    assert np.array_equal(runs[0].state(), runs[1].state())
    assert runs[0].last_deals == runs[1].last_deals


class StubRng:
    """Hands ``engine.random_deal`` a chosen starter and permutation."""

    def __init__(self, starter: int, permutation: np.ndarray):
        self.starter, self.order = starter, permutation

    def integers(self, high):
        return self.starter

    def permutation(self, size):
        assert size == len(self.order)
        return self.order


@pytest.mark.parametrize(
    "options",
    [
        {"preset": p, "num_players": n}
        for p in ("classic", "even-deal", "creature-to-start", "royal")
        for n in range(2, 7)
    ]
    + [{"num_players": 5, "starter": 3}, {"num_players": 6, "edition": "royal", "starter": 2}],
    ids=str,
)
def test_random_deals_follow_the_engine_rules(options):
    """The same shuffled deck dealt by the batch and by ``engine.random_deal`` gives the same deal."""
    config = GameConfig.from_options(**options)
    starters, orders = deal_orders(config, np.random.default_rng(0), 50)
    block = deals_from_orders(config, starters, orders)
    deck = np.repeat(np.arange(len(config.cards.identities)), config.cards.copies)
    for k in range(50):
        # orders[k] is a shuffled deck; any permutation taking the sorted deck to it will do.
        permutation = np.argsort(np.argsort(orders[k], kind="stable"), kind="stable")
        assert np.array_equal(deck[permutation], orders[k])
        expected = random_deal(config, StubRng(int(starters[k]), permutation))
        assert block.deal(k) == expected
        if config.starter is not None:
            assert expected.starter == config.starter


@pytest.mark.parametrize(
    "options",
    [
        {"preset": p, "num_players": n}
        for p in ("classic", "even-deal", "creature-to-start", "royal")
        for n in range(2, 7)
    ]
    + [
        {"num_players": 5, "starter": 3},
        {"num_players": 6, "edition": "royal", "starter": 2},
        {"preset": "classic", "num_players": 3, "discard": 5, "opening_cards": 1},
    ],
    ids=str,
)
def test_queued_random_deals_are_deals_from_orders(options):
    """The queue deals its random blocks with compiled code when numba is installed: the same deals."""
    config = GameConfig.from_options(**options)
    rules = BatchedGames(config, 1, seed=0).rules
    block = _random_deals(config, rules, np.random.default_rng(3), 300)
    expected = deals_from_orders(config, *deal_orders(config, np.random.default_rng(3), 300), rules.penalty_capacity)
    for field in fields(block):
        assert np.array_equal(getattr(block, field.name), getattr(expected, field.name)), field.name


def test_queued_deals_start_the_next_games_in_order():
    config = GameConfig(num_players=3, edition="royal")
    rng = np.random.default_rng(5)
    deals = [random_deal(config, rng) for _ in range(12)]
    games = BatchedGames(config, 4, seed=0)
    step = games.reset(deals=deals)
    assert games.last_deals == dict(enumerate(deals[:4]))
    used = []
    mover = np.random.default_rng(1)
    while len(used) < 8:
        step = games.step(random_legal_actions(step.action_mask, mover))
        used += [games.last_deals[b] for b in np.flatnonzero(step.done)]
    assert used[:8] == deals[4:]


def test_seeded_batches_repeat_and_reset_reseeds():
    config = GameConfig(num_players=5)
    first, second = BatchedGames(config, 16, seed=3), BatchedGames(config, 16, seed=99)
    a, b = first.reset(), second.reset(seed=3)
    assert np.array_equal(a.observation, b.observation) and first.last_deals == second.last_deals


# ---------------------------------------------------------------------------- API contract
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "config", [GameConfig(num_players=n, edition=e) for n in (2, 4, 6) for e in ("classic", "royal")], ids=config_id
)
def test_step_types_and_shapes(config, backend):
    games = BatchedGames(config, 5, seed=0, backend=backend)
    step = games.reset()
    enc = games.encoding
    expected = {
        "to_act": ((5,), np.int64),
        "observation": ((5, enc.observation.size), np.float32),
        "action_mask": ((5, enc.num_actions), np.int8),
        "rewards": ((5, config.num_players), np.float32),
        "done": ((5,), np.bool_),
        "loser": ((5,), np.int64),
        "loss_reason": ((5,), np.int64),
        "truncated": ((5,), np.bool_),
    }
    for name, (shape, dtype) in expected.items():
        value = getattr(step, name)
        assert value.shape == shape and value.dtype == dtype and value.flags.c_contiguous, name
    assert games.state().shape == (5, enc.state.size) and games.state().dtype == np.float32
    assert (step.action_mask.sum(1) > 0).all()
    assert games.bytes_per_game < 1024


def test_observations_hand_over_to_torch_without_copying():
    torch = pytest.importorskip("torch")
    games = BatchedGames(GameConfig(num_players=4), 32, seed=0)
    step = games.reset()
    tensor = torch.from_numpy(step.observation)
    mask = torch.from_numpy(step.action_mask)
    assert tensor.dtype == torch.float32 and tensor.shape == step.observation.shape
    assert tensor.data_ptr() == step.observation.ctypes.data and mask.data_ptr() == step.action_mask.ctypes.data
    step.observation[0, 0] = 42.0
    assert tensor[0, 0].item() == 42.0


def snapshot(games: BatchedGames) -> list[np.ndarray]:
    return [array.copy() for array in games._state.arrays()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_malformed_actions_are_refused_naming_the_problem(backend):
    games = BatchedGames(GameConfig(num_players=4), 6, seed=0, backend=backend)
    legal = random_legal_actions(games.reset().action_mask, np.random.default_rng(0))
    before = snapshot(games)
    with pytest.raises(ValueError, match=r"shape \(5,\).*expected \(6,\)"):
        games.step(np.zeros(5, np.int64))
    with pytest.raises(ValueError, match=r"shape \(6, 1\)"):
        games.step(np.zeros((6, 1), np.int64))
    with pytest.raises(ValueError, match=r"game 2: action 219 is out of range"):
        games.step(np.where(np.arange(6) == 2, 219, legal))
    with pytest.raises(ValueError, match=r"game 0: action -1 is out of range"):
        games.step(np.full(6, -1))
    with pytest.raises(ValueError, match=r"game 3: action 18446744073709551615 is out of range"):
        games.step(np.where(np.arange(6) == 3, np.uint64(2**64 - 1), legal.astype(np.uint64)))
    with pytest.raises(ValueError, match="dtype float64 .* expected integers"):
        games.step(legal.astype(float))
    with pytest.raises(ValueError, match="before reset"):
        BatchedGames(GameConfig(), 2).step(np.zeros(2, np.int64))
    assert all(np.array_equal(x, y) for x, y in zip(before, snapshot(games)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("edition", ("classic", "royal"))
def test_illegal_action_names_game_action_and_move_and_changes_nothing(backend, edition):
    config = GameConfig(num_players=4, edition=edition)
    games, twin = (BatchedGames(config, 16, seed=1, backend=backend) for _ in range(2))
    step, _ = games.reset(), twin.reset()
    rng = np.random.default_rng(2)
    for _ in range(40):  # somewhere mid-game, with games in several phases
        actions = random_legal_actions(step.action_mask, rng)
        step, _ = games.step(actions), twin.step(actions)
    actions = random_legal_actions(step.action_mask, rng)
    bad_game = 5
    illegal = np.flatnonzero(step.action_mask[bad_game] == 0)
    actions[bad_game] = illegal[len(illegal) // 2]
    before = snapshot(games)
    move = games.describe_action(bad_game, int(actions[bad_game]))
    with pytest.raises(ValueError, match=rf"game {bad_game}: action {actions[bad_game]} = ") as refusal:
        games.step(actions)
    assert move in str(refusal.value) and "is illegal" in str(refusal.value)
    assert all(np.array_equal(x, y) for x, y in zip(before, snapshot(games)))
    actions[bad_game] = random_legal_actions(step.action_mask[bad_game : bad_game + 1], rng)[0]
    after, twin_after = games.step(actions), twin.step(actions)
    for field in fields(BatchStep):
        assert np.array_equal(getattr(after, field.name), getattr(twin_after, field.name)), field.name


def test_every_legal_action_is_accepted_and_every_other_refused():
    """The legality check agrees with the mask entry by entry (both backends)."""
    for backend in BACKENDS:
        config = GameConfig(num_players=3, edition="royal")
        games = BatchedGames(config, 64, seed=4, backend=backend)
        step = games.reset(deals=crafted_royal_deals(config, 64, np.random.default_rng(0)))
        rng = np.random.default_rng(3)
        for _ in range(30):
            base = random_legal_actions(step.action_mask, rng)
            for action in range(games.num_actions):
                actions = np.where(step.action_mask[:, action] == 1, action, base)
                assert games._first_illegal(actions) == -1
                refused = np.flatnonzero(step.action_mask[:, action] == 0)
                if refused.size:
                    actions = base.copy()
                    actions[refused[0]] = action
                    assert games._first_illegal(actions) == refused[0]
            step = games.step(base)


def test_bad_deals_and_options_are_refused():
    config = GameConfig(num_players=3)
    with pytest.raises(ValueError, match="at least batch_size=4"):
        BatchedGames(config, 4).reset(deals=[random_deal(config, np.random.default_rng(0))])
    deal = random_deal(config, np.random.default_rng(0))
    removed = [
        r + h for r, h in zip(deal.removed, deal.hands[deal.starter])
    ]  # the starter's cards out of play: a whole deck still
    empty_starter = replace(
        deal, hands=[[0] * 8 if s == deal.starter else row for s, row in enumerate(deal.hands)], removed=removed
    )
    with pytest.raises(ValueError, match="empty hand"):
        BatchedGames(config, 1).reset(deals=[empty_starter])
    with pytest.raises(ValueError, match=r"deals\[0\] has hands"):
        BatchedGames(config, 1).reset(deals=[replace(deal, hands=deal.hands[:2])])
    with pytest.raises(ValueError, match="backend"):
        BatchedGames(config, 1, backend="cuda")
    with pytest.raises(ValueError, match="batch_size"):
        BatchedGames(config, 0)


def test_threaded_random_legal_actions_choose_the_same():
    from cockroach_env.batched import PARALLEL_MIN_GAMES

    games = BatchedGames(GameConfig(num_players=5, edition="royal"), PARALLEL_MIN_GAMES + 77, seed=2)
    mask = games.reset().action_mask
    serial = random_legal_actions(mask, np.random.default_rng(4))
    assert np.array_equal(random_legal_actions(mask, np.random.default_rng(4), parallel=True), serial)
    assert mask[np.arange(len(mask)), serial].all()


def test_random_legal_actions_are_legal_and_uniform():
    mask = np.zeros((2000, 10), np.int8)
    mask[:, [1, 4, 7]] = 1
    picks = random_legal_actions(mask, np.random.default_rng(0))
    assert set(np.unique(picks)) == {1, 4, 7}
    assert np.all(np.abs(np.bincount(picks, minlength=10)[[1, 4, 7]] / 2000 - 1 / 3) < 0.05)
