"""``training.evaluation.edge``: a best response's edge split by decision (``cockroach-exploit --edge``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from cockroach_env import GameConfig, raw_env  # noqa: E402
from cockroach_env.encoding import encoding_for  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.mixture import MixtureAgent  # noqa: E402
from training.core.model import ActorCritic, PolicyAgent  # noqa: E402
from training.evaluation.edge import (  # noqa: E402
    PartialAgent,
    combine,
    edge_lines,
    edge_sources,
    partial_agent,
    partitions,
)

GAME = GameConfig(num_players=4)
SPEC = {"hidden_sizes": [16], "activation": "tanh", "card_counting": False}


def _model(seed: int, game: GameConfig = GAME, bias: dict[int, float] | None = None) -> ActorCritic:
    model = ActorCritic(game, SPEC["hidden_sizes"], SPEC["activation"], seed=seed)
    with torch.no_grad():
        for action, value in (bias or {}).items():
            model.policy_head.bias[action] = value
    return model


def _save(path, model: ActorCritic, game: GameConfig = GAME):
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    ckpt.save_checkpoint(path, tensors, {"kind": "agent", "game_config": game.to_dict(), "model": SPEC})
    return str(path)


def _observations(game: GameConfig, decisions: int = 400, seed: int = 0):
    """Observations and masks of random play, covering every decision kind."""
    env = raw_env(config=game)
    rng = np.random.default_rng(seed)
    obs, masks = [], []
    env.reset(seed=seed)
    while len(obs) < decisions:
        if env.game.over:
            env.reset(seed=int(rng.integers(2**31)))
        o = env.observe(env.agent_selection)
        obs.append(o["observation"])
        masks.append(o["action_mask"].astype(bool))
        env.step(int(rng.choice(np.flatnonzero(o["action_mask"]))))
    return np.asarray(obs, np.float32), np.asarray(masks)


@pytest.mark.parametrize(
    "game",
    [GAME, GameConfig(num_players=3, edition="royal"), GameConfig.from_options(preset="mini")],
    ids=["classic-4p", "royal-3p", "mini"],
)
def test_the_parts_split_each_kind_by_the_fields_of_its_decoded_actions(game):
    enc = encoding_for(game)
    parts = partitions(game)
    kinds = [k for k, s in enc.action_slices().items() if s.stop > s.start]
    assert [p for p in parts if "." not in p] == kinds
    for name, (s, groups, within) in parts.items():
        assert within == (name == "respond.call")
        assert s == enc.action_slices()[name.split(".")[0]] and len(groups) == s.stop - s.start
        decoded = [enc.decode_action(a) for a in range(s.start, s.stop)]
        field = {"offer.card": 1, "offer.target": 2, "offer.claim": 3, "pass.target": 1, "pass.claim": 2}.get(name)
        if "." not in name:
            assert list(groups) == list(range(len(groups)))  # the kind: every action its own group
        elif field is not None:  # two actions share a group exactly when they share the field
            for i in range(len(decoded)):
                for j in range(len(decoded)):
                    assert (groups[i] == groups[j]) == (decoded[i][field] == decoded[j][field])
    respond = [enc.decode_action(a) for a in range(parts["respond"][0].start, parts["respond"][0].stop)]
    assert {a: g for a, g in zip(respond, parts["respond.peek"][1])} == {
        ("call", True): 0,
        ("call", False): 0,
        ("peek",): 1,
    }
    assert list(parts["respond.call"].groups) == list(
        parts["respond.peek"].groups
    )  # the same split, the other side decides
    with pytest.raises(
        ValueError,
        match=r"parts \['offer', 'offer.claim'\] are not allowed together; expected at most one part of each "
        r"decision kind",
    ):
        PartialAgent(
            PolicyAgent(_model(0, game), game), PolicyAgent(_model(1, game), game), ("offer", "offer.claim"), game
        )
    with pytest.raises(ValueError, match=r"parts \['bluff'\] are not allowed; expected some of"):
        PartialAgent(PolicyAgent(_model(0, game), game), PolicyAgent(_model(1, game), game), ("bluff",), game)


def test_combine_takes_the_group_from_the_expert_and_the_action_within_it_from_the_base():
    rng = np.random.default_rng(3)
    groups = np.array([0, 0, 1, 1, 1, 2])
    masks = rng.random((50, 6)) < 0.7
    masks[:, 0] = True
    base, expert = (np.where(masks, rng.random((50, 6)), 0.0) for _ in range(2))
    base, expert = base / base.sum(1, keepdims=True), expert / expert.sum(1, keepdims=True)
    out = combine(base, expert, masks, groups)
    member = np.eye(3)[groups]
    assert np.allclose(out.sum(1), 1) and (out[~masks] == 0).all()
    assert np.allclose(out @ member, expert @ member)  # the expert's marginal over groups
    for g in range(3):  # the base's conditional within each group
        inside = groups == g
        mass_out, mass_base = out[:, inside].sum(1, keepdims=True), base[:, inside].sum(1, keepdims=True)
        ok = (mass_out[:, 0] > 0) & (mass_base[:, 0] > 0)
        assert np.allclose(out[ok][:, inside] / mass_out[ok], base[ok][:, inside] / mass_base[ok])
    assert np.allclose(
        combine(base, expert, masks, np.arange(6)), expert
    )  # every action its own group: the expert decides
    assert np.allclose(combine(base, expert, masks, np.zeros(6, np.int64)), base)  # one group: the base decides
    # a group the base gives no probability (underflow) is played uniformly over its legal actions
    base0 = np.array([[1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    expert0 = np.array([[0.0, 0.0, 0.5, 0.5, 0.0, 0.0]])
    legal = np.array([[True, False, True, True, False, False]])
    assert np.allclose(combine(base0, expert0, legal, groups), [[0, 0, 0.5, 0.5, 0, 0]])


def test_a_partial_agent_plays_the_expert_only_where_its_parts_are():
    obs, masks = _observations(GAME)
    enc = encoding_for(GAME)
    base = PolicyAgent(_model(0), GAME, name="base")
    expert = PolicyAgent(
        _model(1, bias={enc.respond_start + 1: 30.0}), GAME, name="expert"
    )  # calls false whenever it responds
    base_policy = torch.softmax(
        base.model(torch.from_numpy(obs), torch.from_numpy(masks))[0].detach().double(), -1
    ).numpy()
    respond = masks[:, enc.respond_start : enc.pass_start].any(1)
    assert respond.any() and (~respond).any()
    agent = PartialAgent(base, expert, ("respond",), GAME, seed=1)
    p = agent.policy(obs, masks)
    assert np.allclose(p[~respond], base_policy[~respond])  # offers and passes: the base's
    assert np.all(p[respond, enc.respond_start + 1] > 0.999)  # responses: the expert's
    call = PartialAgent(base, expert, ("respond.peek",), GAME, seed=1).policy(obs, masks)
    # the expert (never peeking) decides to call, and the base decides which call: its own odds of true against false
    b = base_policy[respond, enc.respond_start : enc.respond_start + 2]
    assert np.allclose(call[respond, enc.respond_start : enc.respond_start + 2], b / b.sum(1, keepdims=True), atol=1e-6)
    which = PartialAgent(base, expert, ("respond.call",), GAME, seed=1).policy(obs, masks)
    # the base decides whether to peek (its own odds), and the expert which call when calling (false)
    assert np.allclose(which[respond, enc.respond_start + 2], base_policy[respond, enc.respond_start + 2])
    assert np.allclose(
        which[respond, enc.respond_start + 1], 1 - base_policy[respond, enc.respond_start + 2], atol=1e-6
    )
    assert np.allclose(PartialAgent(base, expert, (), GAME).policy(obs, masks), base_policy)
    actions = agent.act_batch(obs, masks)
    assert masks[np.arange(len(actions)), actions].all() and (actions[respond] == enc.respond_start + 1).all()
    assert agent.act({"observation": obs[0], "action_mask": masks[0]}) in np.flatnonzero(masks[0])
    with pytest.raises(ValueError, match="has no logits"):
        PartialAgent("heuristic", expert, ("respond",), GAME)


def test_a_partial_agent_over_a_mixture_is_a_mixture_of_partial_agents_with_its_weights():
    members = [PolicyAgent(_model(k), GAME, name=f"m{k}") for k in range(3)]
    mixture = MixtureAgent(members, [0.5, 0.3, 0.2], GAME, seed=0)
    expert = PolicyAgent(_model(9), GAME)
    partial = partial_agent(mixture, expert, ("offer.claim",), GAME, seed=4, name="seat")
    assert isinstance(partial, MixtureAgent) and np.allclose(partial.weights, mixture.weights)
    assert [m.base for m in partial.members] == members and all(m.parts == ("offer.claim",) for m in partial.members)
    assert isinstance(partial_agent(members[0], expert, ("offer",), GAME, seed=4, name="seat"), PartialAgent)


def test_edge_sources_scores_each_part_against_the_checkpoints_copies(tmp_path):
    """The expert always calls false: the rows where it decides responses call false every time, the others never change
    the base's; the table has every part, and the points are the baseline's loss rate less the row's.
    """
    enc = encoding_for(GAME)
    target = _save(tmp_path / "target", _model(0))
    br = _save(tmp_path / "br", _model(1, bias={enc.respond_start + 1: 30.0}))
    edge = edge_sources(target, br, games=40, seed=2)
    assert [r["parts"] for r in edge["rows"]] == [[p] for p in partitions(GAME)]
    assert edge["parity"] == 0.25 and edge["games"] == 40 and edge["base"] == edge["checkpoint"] == target
    for entry in (edge["baseline"], edge["whole"], *edge["rows"]):
        assert (
            0 <= entry["loss_rate"] <= 1
            and entry["games"] == 40
            and entry["ci95"][0] <= entry["loss_rate"] <= entry["ci95"][1]
        )
        assert entry["points"] == pytest.approx(edge["baseline"]["loss_rate"] - entry["loss_rate"])
    assert edge["baseline"]["points"] == 0
    lines = edge_lines(edge)
    assert (
        "nothing (the checkpoint)" in lines[2]
        and "everything (the best response)" in lines[-1]
        and len(lines) == 3 + len(edge["rows"]) + 1
    )
    json.dumps(edge)  # plain data (cockroach-exploit --json)
    base = _save(tmp_path / "base", _model(5))
    other = edge_sources(target, br, games=8, seed=2, base=base, variants=[("offer", "respond.call")])
    assert [r["parts"] for r in other["rows"]] == [["offer", "respond.call"]] and "nothing (the base)" in edge_lines(
        other
    )[2]
    with pytest.raises(ValueError, match=r"parts \['offer.claim', 'offer'\] are not allowed together"):
        edge_sources(target, br, games=8, variants=[("offer.claim", "offer")])
    with pytest.raises(ValueError, match="games=0 is not allowed; expected at least 1"):
        edge_sources(target, br, games=0)
    with pytest.raises(
        ValueError,
        match=r"best response 'classic-4p-mixture' is a 'mixture' checkpoint; expected an agent or run "
        r"checkpoint of one network",
    ):
        edge_sources(target, "classic-4p-mixture", games=8)


def test_cockroach_exploit_edge_adds_the_table_to_its_report(tmp_path, capsys):
    from training.cli.exploit import main

    target = _save(tmp_path / "target", _model(0))
    report = tmp_path / "report.json"
    sets = ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "schedule.checkpoint_every=2"]
    argv = [
        target,
        "--decisions",
        "256",
        "--games",
        "20",
        "--output-dir",
        str(tmp_path),
        "--json",
        str(report),
        "--no-progress",
        "--edge",
        "12",
    ]
    assert main(argv + [a for s in sets for a in ("--set", s)]) == 0
    result = json.loads(report.read_text())
    edge = result["edge"]
    assert edge["games"] == 12 and edge["base"] == target and len(edge["rows"]) == len(partitions(GAME))
    assert edge["whole"]["games"] == 12
    out = capsys.readouterr().out
    assert "where the edge comes from (12 games per row" in out and "respond.call" in out
    assert main([target, "--exact", "--edge"]) == 2
    assert "--edge is not allowed with --exact" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main([target, "--edge", "0"])
    assert (
        stop.value.code == 2
        and "argument --edge: 0 is not allowed; expected an integer from 1 to 100,000,000" in capsys.readouterr().err
    )
