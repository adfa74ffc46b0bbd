"""The compiled scripted agents (``baselines.kernels``) play exactly as their numpy reference (``backend="numpy"``).

The differential test plays games of every rule set on the batched engine and asks both
implementations of ``heuristic``, ``honest`` and ``bluffer`` for the action of every row
from the same generator state, and for its ``action_probabilities``: over a million rows
of ``heuristic`` they agree bit for bit. The heuristic's weights go through ``exp``;
where numpy's ``exp`` is not the C library's (numpy's AVX-512 routines differ from it by
an ulp at times), a loss can differ by an ulp between the two, and the test allows what
that can change: actions that differ on at most one row in 100,000 and probabilities
within 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("numba")

from baselines import BlufferAgent, HeuristicAgent, HeuristicParams, HonestAgent, RandomAgent  # noqa: E402
from baselines.kernels import stream  # noqa: E402
from cockroach_env.batched import BatchedGames  # noqa: E402
from cockroach_env.config import PRESETS, GameConfig  # noqa: E402

RULE_SETS = (
    [GameConfig.from_options(preset=name) for name in PRESETS]
    + [GameConfig(num_players=n) for n in (3, 5, 6)]
    + [GameConfig(history=8), GameConfig(edition="royal", history=4)]
    + [GameConfig.from_options(preset="mini", recall=True)]
)
"""Every preset, the other classic player counts, and observations that carry a history window or perfect recall."""

_SAMPLE = np.linspace(-60.0, 60.0, 100_003)
EXACT_EXP = bool(np.array_equal(np.exp(_SAMPLE), [math.exp(x) for x in _SAMPLE]))
"""Whether numpy's ``exp`` is the C library's here (the compiled kernels call the latter)."""


def _states(config: GameConfig, batch: int, steps: int, seed: int):
    """``steps`` batches of (observations, masks) from games where a third of the moves are random, the rest
    ``heuristic``'s.
    """
    games = BatchedGames(config, batch_size=batch, seed=seed)
    step = games.reset()
    rng = np.random.default_rng(seed)
    mover, wanderer = HeuristicAgent(config, seed=seed), RandomAgent(config, seed=seed)
    for _ in range(steps):
        yield step.observation, step.action_mask
        moves = mover.act_batch(step.observation, step.action_mask)
        moves = np.where(rng.random(batch) < 1 / 3, wanderer.act_batch(step.observation, step.action_mask), moves)
        step = games.step(moves)


def _losses_once(reference: HeuristicAgent) -> HeuristicAgent:
    """The numpy reference computing its losses once per batch for ``act_batch`` and ``action_probabilities_batch``
    (they take the same losses, a pure function of the batch; the reference's own selection and odds still run).
    """
    computed: dict = {}
    losses = reference._losses

    def once(observations, legal):
        same = "batch" in computed and np.array_equal(computed["batch"], observations)
        if not same or not np.array_equal(computed["legal"], legal):  # (the engine may reuse its arrays: compare)
            computed.update(batch=np.array(observations), legal=np.array(legal), result=losses(observations, legal))
        return computed["result"]

    reference._losses = once
    return reference


def _compare(reference, compiled, observations, masks) -> tuple[int, float]:
    """(rows whose actions differ, largest probability difference), after checking that both generators moved alike."""
    actions = reference.act_batch(observations, masks), compiled.act_batch(observations, masks)
    assert reference.rng.bit_generator.random_raw() == compiled.rng.bit_generator.random_raw()  # same place
    probabilities = (
        reference.action_probabilities_batch(observations, masks),
        compiled.action_probabilities_batch(observations, masks),
    )
    return int((actions[0] != actions[1]).sum()), float(np.abs(probabilities[0] - probabilities[1]).max())


@pytest.mark.slow
def test_compiled_agents_play_as_the_numpy_reference_on_a_million_rows_of_every_rule_set():
    rows, differing, largest = 0, 0, 0.0
    for k, config in enumerate(RULE_SETS):
        agents = [
            (kind(config, seed=k, backend="numpy"), kind(config, seed=k))
            for kind in (HeuristicAgent, HonestAgent, BlufferAgent)
        ]
        _losses_once(agents[0][0])
        for observations, masks in _states(config, batch=2048, steps=33, seed=k):
            for number, (reference, compiled) in enumerate(agents):
                assert compiled.backend == "numba"
                actions, probabilities = _compare(reference, compiled, observations, masks)
                if number == 0:
                    rows += len(masks)
                    differing += actions
                    largest = max(largest, probabilities)
                else:  # honest and bluffer count whole cards: exact everywhere
                    assert (actions, probabilities) == (0, 0.0), config
    assert rows >= 1_000_000
    if EXACT_EXP:
        assert (differing, largest) == (0, 0.0)
    else:
        assert differing <= rows // 100_000 and largest <= 1e-6


@pytest.mark.parametrize(
    "config", [GameConfig(), GameConfig(edition="royal"), GameConfig(num_players=2)], ids=["classic", "royal", "duel"]
)
def test_compiled_heuristic_plays_as_the_numpy_reference(config):
    """A short run of the differential test above, for the quick suite; other params and a generator other than
    PCG64 (the uniforms then come from ``Generator.random``, as in numpy) included.
    """
    params = HeuristicParams(set_power=2.5, kappa=2.0, peek_cost=0.01)
    for make in (
        lambda backend: HeuristicAgent(config, seed=3, backend=backend),
        lambda backend: HeuristicAgent(config, seed=3, params=params, backend=backend),
    ):
        reference, compiled = make("numpy"), make("auto")
        if config.num_players == 2:
            reference.rng, compiled.rng = (np.random.Generator(np.random.Philox(5)) for _ in range(2))
        for observations, masks in _states(config, batch=256, steps=6, seed=1):
            actions, probabilities = _compare(reference, compiled, observations, masks)
            assert actions == 0 and (probabilities == 0.0 or not EXACT_EXP)


def test_act_on_each_row_plays_as_act_batch_on_the_batch():
    """The generator contract of ``baselines.agent``: a batch draws what its rows drawn one by one would."""
    config = GameConfig()
    observations, masks = next(iter(_states(config, batch=64, steps=3, seed=2)))
    for kind in (HeuristicAgent, HonestAgent, BlufferAgent):
        batch, single = kind(config, seed=9), kind(config, seed=9)
        expected = batch.act_batch(observations, masks)
        one_by_one = [single.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)]
        assert one_by_one == expected.tolist()
        assert batch.rng.bit_generator.state == single.rng.bit_generator.state


def test_the_stream_reads_the_uniforms_of_generator_random():
    rng = np.random.default_rng(11)
    state, table = stream.state_of(rng), stream.jumps(40)
    read = np.empty(40)
    stream._nb_uniforms(state, table, read)
    np.testing.assert_array_equal(read, rng.random(40))
    stream.nb_skip(state, table, 40)
    np.testing.assert_array_equal(state, stream.state_of(rng))


def test_the_compiled_heuristic_leaves_a_buffered_32_bit_draw_where_numpy_does():
    """The generator moves on by ``advance`` unless it holds half of a 64-bit output, which ``advance`` would drop."""
    config = GameConfig()
    observations, masks = next(iter(_states(config, batch=32, steps=2, seed=3)))
    reference, compiled = HeuristicAgent(config, seed=4, backend="numpy"), HeuristicAgent(config, seed=4)
    for agent in (reference, compiled):
        agent.rng.integers(0, 2**32, dtype=np.uint32)  # the other half of that output stays buffered
    assert reference.act_batch(observations, masks).tolist() == compiled.act_batch(observations, masks).tolist()
    assert reference.rng.bit_generator.state == compiled.rng.bit_generator.state
    assert compiled.rng.bit_generator.state["has_uint32"] == 1


@pytest.mark.parametrize("kind", [HeuristicAgent, HonestAgent, BlufferAgent])
def test_compiled_agents_refuse_misshapen_batches_by_name(kind):
    config = GameConfig()
    agent = kind(config, seed=0)
    observations, masks = next(iter(_states(config, batch=4, steps=1, seed=0)))
    with pytest.raises(ValueError, match=rf"{agent.name}: observations of shape \(4, 131\) .* expected \(B, 132\)"):
        agent.act_batch(observations[:, :-1], masks)
    with pytest.raises(ValueError, match=rf"{agent.name}: masks of shape \(3, 219\) .* expected \(4, 219\)"):
        agent.action_probabilities_batch(observations, masks[:3])
    with pytest.raises(ValueError, match=r"backend='jax' is not allowed; expected one of \['auto', 'numba', 'numpy'\]"):
        kind(config, backend="jax")
