"""The vector envs over the batched engine (``cockroach_env.vector``): contract, seeding, refusals, no leak.

Every test drives the real engine and the real agents; the reference for a sub-environment's
trajectory is ``BatchedGames`` driven directly and the AEC env replaying the same deal and moves.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv

import baselines
from cockroach_env import GameConfig, IllegalActionError, raw_env
from cockroach_env.batched import BatchedGames
from cockroach_env.env import INFO_DEFAULTS
from cockroach_env.vector import INFO_KEYS, SelfPlayVectorEnv, agent_sources, resolve_agent

CONFIG = GameConfig(num_players=4)
SAME = AutoresetMode.SAME_STEP


class Recorder:
    """A batched agent that plays the lowest legal action and logs, in order, every action it returns."""

    name = "recorder"
    supports_batch = True

    def __init__(self, config: GameConfig, log: list[int]):
        self.config, self.log, self.calls = config, log, []

    def act(self, observation):
        return int(self.act_batch(observation["observation"][None], observation["action_mask"][None])[0])

    def act_batch(self, observations, masks):
        actions = np.asarray(masks).argmax(1).astype(np.int64)
        self.calls.append(len(actions))
        self.log.extend(actions.tolist())
        return actions


def _reset_options(deal, config: GameConfig, agents) -> dict:
    """AEC ``reset`` options that replay an ``engine.Deal`` exactly (cards not dealt are the removed ones)."""
    names = config.cards.identities

    def by_name(row):
        return {names[c]: int(k) for c, k in enumerate(row) if k}

    return {
        "starter": agents[deal.starter],
        "hands": {agent: by_name(row) for agent, row in zip(agents, deal.hands)},
        "collections": {agent: by_name(row) for agent, row in zip(agents, deal.collections)},
        "penalty_deck": [names[c] for c in deal.penalty_deck],
    }


def random_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A legal action per row; 0 where the mask allows none (a final observation: the action is ignored)."""
    return np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks], np.int64)


# ---------------------------------------------------------------------------- contract
@pytest.mark.parametrize("options", [{"num_players": 4}, {"num_players": 2}, {"preset": "royal", "num_players": 3}])
def test_spaces_dtypes_bounds_and_info_keys_hold_on_every_step(options):
    envs = SelfPlayVectorEnv(5, "random", seed=0, autoreset_mode=SAME, **options)
    assert isinstance(envs, VectorEnv) and envs.metadata["autoreset_mode"] == SAME
    single = raw_env(**options).observation_space("player_0")
    assert envs.single_observation_space == single and envs.single_action_space.n == single["action_mask"].shape[0]
    box = envs.single_observation_space["observation"]
    assert box.dtype == np.float32 and np.isfinite(box.high).all() and (box.low == 0).all()
    obs, info = envs.reset(seed=3)
    keys = set(info)
    assert keys == {k for key in INFO_KEYS for k in (key, "_" + key)} and set(INFO_DEFAULTS) < keys
    rng, ended = np.random.default_rng(0), 0
    for _ in range(150):
        assert envs.observation_space.contains(obs)
        assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
        assert obs["action_mask"].any(axis=1).all()
        obs, reward, terminated, truncated, info = envs.step(random_actions(obs["action_mask"], rng))
        assert set(info) == keys | {"final_obs", "_final_obs", "final_info", "_final_info"}
        assert reward.dtype == np.float32 and terminated.dtype == bool and truncated.dtype == bool
        done = terminated | truncated
        assert (info["_final_obs"] == done).all() and (info["_final_info"] == done).all()
        assert (reward[~done] == 0).all()
        final = info["final_info"]
        for i in np.flatnonzero(done):
            assert envs.single_observation_space.contains(info["final_obs"][i])
            lost = final["loser"][i] == final["learner_seat"][i]
            assert reward[i] == pytest.approx(-1.0 if lost else 1 / (envs.config.num_players - 1))
            ended += 1
        assert all(v is None for v in info["final_obs"][~done])
    assert ended > 5


def test_the_learner_seat_is_fixed_or_drawn_per_game():
    envs = SelfPlayVectorEnv(64, "random", seed=0, learner_seat=2)
    assert (envs.reset()[1]["learner_seat"] == 2).all()
    seats = SelfPlayVectorEnv(64, "random", seed=0).reset()[1]["learner_seat"]
    assert set(seats.tolist()) == {0, 1, 2, 3}


# ---------------------------------------------------------------------------- seeding and the reference engines
def _trajectory(envs, steps: int, seed: int):
    rng = np.random.default_rng(seed)
    obs, _ = envs.reset(seed=seed)
    out = [obs["observation"].copy()]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = envs.step(random_actions(obs["action_mask"], rng))
        out += [obs["observation"].copy(), reward.copy(), terminated.copy()]
    return out


def test_the_same_seed_gives_the_same_games_and_another_seed_others():
    envs = SelfPlayVectorEnv(6, ["random", "heuristic"], seed=0)
    first, again = _trajectory(envs, 60, seed=5), _trajectory(envs, 60, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    other = _trajectory(SelfPlayVectorEnv(6, ["random", "heuristic"]), 60, seed=6)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


REFERENCE_TABLES = [
    {"num_players": 4},
    {"preset": "royal", "num_players": 4},
    {"num_players": 2},
    {"num_players": 4, "history": 8},
    {"preset": "royal", "num_players": 4, "history": 4},
    {"preset": "mini", "history": 16},
]
"""The tables whose sub-environments are replayed on the reference engines, with and without a history window."""


@pytest.mark.parametrize("options", REFERENCE_TABLES)
def test_a_sub_environment_plays_what_batched_games_and_the_aec_env_play(options):
    """One game at a time: the same deals as ``BatchedGames(config, 1, seed)``, the same moves give the same views
    (with ``history``, the same window of moves, the final observation's ending with the game's last decision).
    """
    config = GameConfig.from_options(**options)
    log: list[int] = []
    envs = SelfPlayVectorEnv(1, Recorder(config, log), seed=11, config=config, autoreset_mode=SAME)
    direct = BatchedGames(config, 1, seed=11)
    step = direct.reset()
    obs, info = envs.reset()
    deal = envs.games.last_deals[0]
    aec = raw_env(config=config)
    aec.reset(options=_reset_options(deal, config, aec.possible_agents))
    rng, games, position = np.random.default_rng(1), 0, 0

    def replay():
        """Play the logged moves (the learner's, then the opponents' replies) on both references until the game ends."""
        nonlocal step, position
        while position < len(log) and not aec.game.over:
            aec.step(log[position])
            step = direct.step(np.array([log[position]]))
            position += 1
            assert step.done[0] == aec.game.over

    replay()
    seat = int(info["learner_seat"][0])
    while games < 4:
        assert int(step.to_act[0]) == seat == aec.game.current
        assert np.array_equal(obs["observation"][0], step.observation[0])
        assert np.array_equal(obs["observation"][0], aec.observe(f"player_{seat}")["observation"])
        assert np.array_equal(obs["action_mask"][0], aec.observe(f"player_{seat}")["action_mask"])
        action = int(random_actions(obs["action_mask"], rng)[0])
        log.append(action)  # before the step: the opponents' replies are logged after it
        obs, reward, terminated, truncated, info = envs.step(np.array([action]))
        replay()
        if terminated[0] or truncated[0]:
            games += 1
            assert aec.game.over and step.done[0]
            final = info["final_obs"][0]["observation"]
            assert np.array_equal(final, aec.observe(f"player_{seat}")["observation"])
            assert reward[0] == pytest.approx(aec._cumulative_rewards[f"player_{seat}"])
            assert info["final_info"]["loser"][0] == aec.game.loser == step.loser[0]
            assert envs.games.last_deals[0] == direct.last_deals[0]
            aec = raw_env(config=config)
            aec.reset(options=_reset_options(direct.last_deals[0], config, aec.possible_agents))
            seat = int(info["learner_seat"][0])
            replay()
        assert position == len(log)


class LowestLegal:
    """A batched agent that plays the lowest legal action and keeps every observation it is handed (as bytes)."""

    name = "lowest-legal"
    supports_batch = True

    def __init__(self, config: GameConfig):
        self.config, self.seen = config, []

    def act(self, observation):
        return int(self.act_batch(observation["observation"][None], observation["action_mask"][None])[0])

    def act_batch(self, observations, masks):
        self.seen.extend(row.tobytes() for row in np.asarray(observations, np.float32))
        return np.asarray(masks).argmax(1).astype(np.int64)


@pytest.mark.parametrize(
    ("options", "as_callable"), [(table, False) for table in REFERENCE_TABLES[3:]] + [(REFERENCE_TABLES[3], True)]
)
def test_every_sub_environment_and_every_opponent_sees_the_window_the_aec_env_shows(options, as_callable):
    """Many games at once, each replayed on its own AEC env: the learner's observations, final observations and
    rewards, and the multiset of every observation handed to the opponents, are the AEC env's, window included
    (an opponent given as a callable on batches is handed the same observations as an agent).
    """
    config = GameConfig.from_options(**options)
    opponent = LowestLegal(config)
    table = opponent.act_batch if as_callable else opponent
    envs = SelfPlayVectorEnv(6, table, seed=5, config=config, autoreset_mode=SAME)
    expected_seen: list[bytes] = []

    def dealt(deal, seat: int | None):
        aec = raw_env(config=config)
        aec.reset(options=_reset_options(deal, config, aec.possible_agents))
        catch_up(aec, seat)
        return aec

    def catch_up(aec, seat: int | None) -> None:
        """The opponents' lowest legal moves until the learner (None: nobody) is to act, or the game is over."""
        while not aec.game.over and aec.game.current != seat:
            view = aec.observe(f"player_{aec.game.current}")
            expected_seen.append(view["observation"].tobytes())
            aec.step(int(np.argmax(view["action_mask"])))

    def deals_in_order() -> dict[int, list]:
        """Every deal of the latest reset or step per game, in order (a game may end before the learner decides)."""
        out: dict[int, list] = {}
        for games, slots, deals in envs.games._dealt:
            for g, k in zip(games, slots):
                out.setdefault(int(g), []).append(deals.deal(int(k)))
        return out

    def played(deals: list, seat: int):
        """The AEC env of the last of ``deals``; the games before it ended before the learner's first decision, so
        the opponents played them out.
        """
        for deal in deals[:-1]:
            assert dealt(deal, None).game.over
        return dealt(deals[-1], seat)

    obs, _ = envs.reset()
    seats = envs.games.learner
    deals = deals_in_order()
    aecs = [played(deals[g], int(seats[g])) for g in range(envs.num_envs)]
    rng, ended = np.random.default_rng(2), 0
    for _ in range(120):
        for g, aec in enumerate(aecs):
            view = aec.observe(f"player_{seats[g]}")
            assert aec.game.current == seats[g]
            assert np.array_equal(obs["observation"][g], view["observation"])
            assert np.array_equal(obs["action_mask"][g], view["action_mask"])
        actions = random_actions(obs["action_mask"], rng)
        obs, reward, terminated, truncated, info = envs.step(actions)
        deals = deals_in_order()
        for g, aec in enumerate(aecs):
            seat = int(seats[g])
            aec.step(int(actions[g]))
            catch_up(aec, seat)
            assert aec.game.over == (terminated[g] or truncated[g])
            if aec.game.over:
                ended += 1
                final = info["final_obs"][g]["observation"]
                assert np.array_equal(final, aec.observe(f"player_{seat}")["observation"])
                assert reward[g] == pytest.approx(aec._cumulative_rewards[f"player_{seat}"])
                aecs[g] = played(deals[g], int(envs.games.learner[g]))
        seats = envs.games.learner
    assert ended > 10
    assert sorted(opponent.seen) == sorted(expected_seen)


# ---------------------------------------------------------------------------- opponents
def test_opponents_move_in_batches_not_one_game_at_a_time():
    recorder = Recorder(CONFIG, [])
    envs = SelfPlayVectorEnv(256, recorder, seed=0)
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, *_ = envs.step(random_actions(obs["action_mask"], rng))
    assert sum(recorder.calls) >= 256 * 5 and max(recorder.calls) > 100
    assert len(recorder.calls) < sum(recorder.calls) / 10


def test_names_checkpoints_mixtures_and_lists_of_opponents_all_play():
    pytest.importorskip("torch")
    envs = SelfPlayVectorEnv(32, ["random", "classic-4p", "classic-4p-mixture", baselines.make("heuristic", CONFIG)])
    assert envs.games.opponents.names[0] == "'random'" and len(envs.games.opponents.pool) == 4
    obs, _ = envs.reset(seed=0)
    drawn = envs.games._entrant[envs.games._entrant >= 0]
    assert set(drawn.tolist()) == {0, 1, 2, 3}
    rng = np.random.default_rng(0)
    for _ in range(40):
        obs, *_ = envs.step(random_actions(obs["action_mask"], rng))


def _save_agent(path, config: GameConfig, event_embedding: int = 0):
    """A small untrained checkpoint for ``config`` (with ``event_embedding``, the history-aware network)."""
    from training.core.checkpoint import save_checkpoint
    from training.core.model import ActorCritic

    model = ActorCritic(config, [8], seed=0, event_embedding=event_embedding)
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    metadata = {"kind": "agent", "name": path.name, "game_config": config.to_dict(), "model": model.spec}
    return save_checkpoint(path, tensors, metadata)


def test_a_history_aware_opponent_plays_at_its_window_and_is_refused_elsewhere_naming_the_window(tmp_path):
    pytest.importorskip("torch")
    from training.core.checkpoint import load_agent

    plain = GameConfig.from_options("mini")
    window = GameConfig.from_options("mini", history=4)
    path = _save_agent(tmp_path / "windowed", window, event_embedding=4)
    envs = SelfPlayVectorEnv(8, [str(path), load_agent(path, seed=0, config=window)], seed=0, config=window)
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        assert envs.observation_space.contains(obs)
        obs, *_ = envs.step(random_actions(obs["action_mask"], rng))
    for opponent in (str(path), load_agent(path, seed=0, config=window)):
        for table, option in ((plain, ""), (GameConfig.from_options("mini", history=8), " \\(history=8\\)")):
            refusal = (
                rf"opponents\[0\] \(.*windowed.*\) was trained with history=4: it sees a window of the game's moves "
                rf"that these games do not have{option}; build the vector env with history=4"
            )
            with pytest.raises(ValueError, match=refusal):
                SelfPlayVectorEnv(2, opponent, config=table)


def test_agents_without_the_window_play_at_a_history_table_on_the_observation_prefix(tmp_path):
    """By name (a baseline, a checkpoint) or as an object built for the rules without the window: each reads the
    observation without the moves, and plays exactly as at the table without the window.
    """
    pytest.importorskip("torch")
    from training.core.checkpoint import load_agent

    plain = GameConfig(num_players=4)
    window = GameConfig(num_players=4, history=16)
    path = _save_agent(tmp_path / "plain", plain)
    size = SelfPlayVectorEnv(1, "random", config=plain).games.encoding.observation.size
    built = (  # one agent per env: each draws from its own generator
        lambda: "heuristic",
        lambda: str(path),
        lambda: load_agent(path, seed=0, config=plain),
        lambda: baselines.make("heuristic", plain),
    )
    for opponents in built:
        at_window = SelfPlayVectorEnv(8, opponents(), seed=3, config=window)
        at_plain = SelfPlayVectorEnv(8, opponents(), seed=3, config=plain)
        obs, _ = at_window.reset(seed=3)
        reference, _ = at_plain.reset(seed=3)
        rng = np.random.default_rng(0)
        for _ in range(40):
            assert obs["observation"].shape[1] > size
            assert np.array_equal(obs["observation"][:, :size], reference["observation"])
            actions = random_actions(obs["action_mask"], rng)
            obs, reward, *_ = at_window.step(actions)
            reference, expected, *_ = at_plain.step(actions)
            assert np.array_equal(reward, expected)


class ProbabilitiesOnly(baselines.agent.Agent):
    """An agent that only states its distribution (no act_batch): the env samples it in batches."""

    name = "probabilities-only"

    def action_probabilities_batch(self, observations, masks):
        masks = np.asarray(masks, np.float64)
        return masks / masks.sum(1, keepdims=True)


def test_an_agent_with_only_action_probabilities_batch_is_sampled_legally():
    envs = SelfPlayVectorEnv(16, ProbabilitiesOnly(CONFIG, seed=0), seed=0)
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    for _ in range(50):
        obs, *_ = envs.step(random_actions(obs["action_mask"], rng))


def test_agent_plugins_resolve_names_and_refuse_unknown_ones_listing_what_is_known():
    assert {"baselines", "checkpoints"} <= set(agent_sources())
    assert resolve_agent("heuristic", CONFIG, seed=0).name == "heuristic"
    known = r"'bluffer', 'counter', 'heuristic', 'honest', 'random'"
    with pytest.raises(ValueError, match=rf"opponent 'nobody'.*{known}.*classic-4p"):
        SelfPlayVectorEnv(2, "nobody")


# ---------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("num_envs", [0, -3, True, 2.0, "4"])
def test_num_envs_must_be_a_positive_integer(num_envs):
    with pytest.raises(ValueError, match=rf"num_envs={num_envs!r} is not allowed"):
        SelfPlayVectorEnv(num_envs, "random")


def test_an_opponent_for_other_rules_is_refused():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="classic-2p.*trained for 2-player classic, but the game here is 4-player"):
        SelfPlayVectorEnv(2, "classic-2p", num_players=4)
    with pytest.raises(ValueError, match=r"opponents\[0\].*was built for .*num_players=2"):
        SelfPlayVectorEnv(2, baselines.make("random", GameConfig(num_players=2)), num_players=4)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"learner_seat": 4}, "learner_seat=4 is not allowed"),
        ({"illegal_action": "ignore"}, "illegal_action='ignore' is not allowed"),
        ({"opponents": []}, r"opponents=\[\] is not allowed"),
        ({"opponents": baselines.agent.Agent}, "is a class, not an agent"),
        ({"recall": True}, "recall=True is not supported"),
    ],
)
def test_bad_arguments_are_named(arguments, message):
    arguments = {"opponents": "random", **arguments}
    with pytest.raises(ValueError, match=message):
        SelfPlayVectorEnv(2, arguments.pop("opponents"), **arguments)


# ---------------------------------------------------------------------------- illegal actions
def test_an_illegal_action_is_refused_naming_the_sub_environment_action_and_move_and_changes_nothing():
    envs = SelfPlayVectorEnv(3, "random", seed=4)
    obs, _ = envs.reset()
    actions = random_actions(obs["action_mask"], np.random.default_rng(0))
    bad = int(np.flatnonzero(obs["action_mask"][1] == 0)[0])
    actions[1] = bad
    move = envs.describe_action(1, bad)
    with pytest.raises(IllegalActionError, match=rf"sub-environment 1 .* illegal action {bad} \({re.escape(move)}\): "):
        envs.step(actions)
    for wrong, message in ([np.zeros(2, int), r"shape \(2,\)"], [np.full(3, 0.5), "dtype float64"]):
        with pytest.raises(ValueError, match=message):
            envs.step(wrong)
    reference = SelfPlayVectorEnv(3, "random", seed=4)
    again, _ = reference.reset()
    assert np.array_equal(envs.games.observation, again["observation"])
    actions[1] = int(np.flatnonzero(obs["action_mask"][1])[0])
    assert np.array_equal(envs.step(actions)[0]["observation"], reference.step(actions)[0]["observation"])


def test_penalize_ends_only_the_offending_game_with_minus_one():
    envs = SelfPlayVectorEnv(3, "random", seed=4, illegal_action="penalize", autoreset_mode=SAME)
    obs, info = envs.reset()
    actions = random_actions(obs["action_mask"], np.random.default_rng(0))
    actions[2] = int(np.flatnonzero(obs["action_mask"][2] == 0)[0])
    before = obs["observation"][2].copy()
    obs, reward, terminated, truncated, info = envs.step(actions)
    assert terminated[2] and reward[2] == -1.0 and info["final_info"]["illegal_move"][2]
    assert info["final_info"]["offender"][2] == info["final_info"]["learner_seat"][2]
    assert np.array_equal(info["final_obs"][2]["observation"], before)
    assert not info["final_info"]["illegal_move"][:2].any()


def test_an_opponent_returning_an_illegal_action_is_named():
    class Stubborn(Recorder):
        name = "stubborn"

        def act_batch(self, observations, masks):
            return np.zeros(len(masks), np.int64)

    envs = SelfPlayVectorEnv(4, Stubborn(CONFIG, []), seed=0)
    with pytest.raises(ValueError, match=r"opponent 'stubborn' \(sub-environment \d, seat \d\) returned action 0"):
        envs.reset()
        rng = np.random.default_rng(0)
        for _ in range(20):
            envs.step(random_actions(envs.games.action_mask, rng))


# ---------------------------------------------------------------------------- hidden information
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, SAME])
def test_the_learner_sees_only_its_own_seats_observation(mode):
    """Each sub-environment's observation is its learner seat's observation gathered from the full state.

    ``Encoding.observation_index(seat, has_seen_card)`` is the env's one definition of what a
    seat sees (``tests/test_no_leak.py`` proves it holds nothing the seat may not know);
    here several games run at once, so a mixed-up row, seat or "seen" flag would show, and
    the full state differs from what the learner sees (so the test can fail). With
    ``NEXT_STEP`` a game that just ended shows its final observation, the one
    ``test_next_step_shows_the_final_observation_then_the_new_game`` proves equal to
    ``SAME_STEP``'s ``final_obs`` (and that test to the AEC env's view); every other row is
    checked here.
    """
    envs = SelfPlayVectorEnv(6, "random", seed=2, num_players=4, autoreset_mode=mode)
    obs, info = envs.reset()
    rng, enc, hidden = np.random.default_rng(0), envs.games.encoding, 0
    done = np.zeros(6, bool)
    for _ in range(40):
        state = np.append(envs.games.games.state(), np.zeros((6, 1), np.float32), axis=1)  # the always-zero slot
        seen = envs.games.games._state.seen
        for i, seat in enumerate(info["learner_seat"]):
            if done[i]:
                continue
            mine = state[i][enc.observation_index(int(seat), bool(seen[i, seat]))]
            assert np.array_equal(obs["observation"][i], mine)
            for other in range(4):
                if other != seat:
                    theirs = state[i][enc.observation_index(other, bool(seen[i, other]))]
                    hidden += not np.array_equal(theirs[: len(mine)], mine)
        obs, _, terminated, truncated, info = envs.step(random_actions(obs["action_mask"], rng))
        done = (terminated | truncated) if mode == AutoresetMode.NEXT_STEP else done
    assert hidden > 0


def test_the_compiled_and_numpy_row_copies_agree():
    from cockroach_env.batched.layout import _Rules
    from cockroach_env.batched.state import _State
    from cockroach_env.encoding import encoding_for
    from cockroach_env.vector import rows as copies

    rules = _Rules(CONFIG, encoding_for(CONFIG))
    source, rng = _State(rules, 50), np.random.default_rng(0)
    for array in source.arrays():
        array[...] = rng.integers(0, 3, array.shape).astype(array.dtype)
    rows = rng.permutation(50)[:17]
    results = []
    for gather, scatter in ((copies.gather, copies.scatter), (copies._gather_numpy, copies._scatter_numpy)):
        part, back = _State(rules, 50), _State(rules, 50)
        gather(rows, copies.byte_rows(source), copies.byte_rows(part))
        scatter(rows, copies.byte_rows(part), copies.byte_rows(back))
        for whole, piece, returned in zip(source.arrays(), part.arrays(), back.arrays()):
            assert np.array_equal(piece[:17], whole[rows]) and np.array_equal(returned[rows], whole[rows])
        results.append([a.copy() for a in back.arrays()])
    assert all(np.array_equal(a, b) for a, b in zip(*results))


def test_a_table_where_the_learner_never_decides_is_refused_by_name():
    envs = SelfPlayVectorEnv(2, "random", seed=0, learner_seat=3, max_steps=1, starter=0)
    with pytest.raises(ValueError, match=r"sub-environment 0: the learner had no decision in 100 games in a row"):
        envs.reset()
