"""NFSP (``algorithm: nfsp``, ``training.algorithms.nfsp``): the reservoir, the average policy's supervised learning,
and real runs that resume exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("yaml")

from cockroach_env import GameConfig  # noqa: E402
from tests.test_training import _metrics, _train, updates_trained  # noqa: E402, F401 (a fixture of these tests)
from training.algorithms.nfsp import AveragePolicy, Reservoir  # noqa: E402
from training.algorithms.nfsp_config import NFSPConfig  # noqa: E402
from training.cli import checkpoint as checkpoint_cli  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.config import ConfigError, load_config  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402

NFSP = [
    "algorithm=nfsp",
    "opponents.population=0.5",
    "nfsp.reservoir_size=300",
    "nfsp.sl_batch_size=64",
    "nfsp.sl_steps=2",
]


def _nfsp(tmp_path, name: str, updates: int, *extra: str) -> int:
    return _train(tmp_path, name, updates, *[a for s in NFSP for a in ("--set", s)], *extra)


# ---------------------------------------------------------------------------- the reservoir


def test_the_reservoir_keeps_a_uniform_sample_of_everything_added_in_batches():
    """Vitter's algorithm R a batch at a time: every decision ever added is held with probability capacity / added,
    whatever its position, also where two decisions of one batch draw the same slot.
    """
    capacity, total, trials = 40, 400, 3000
    held = np.zeros(total)
    rng = np.random.default_rng(0)
    for _ in range(trials):
        reservoir = Reservoir(capacity, 1, 3)
        for start in range(0, total, 57):  # uneven batches, the first one filling the free slots and more
            ids = np.arange(start, min(start + 57, total))
            reservoir.add(np.zeros((len(ids), 1), np.float32), np.ones((len(ids), 3), bool), ids % 3, rng)
            if start == 0:
                reservoir.action[: reservoir.size] = -1  # (marks: the ids come from the observations below)
        assert reservoir.size == capacity and reservoir.seen == total
    # the same again, with each decision's id in its observation (ids up to 399 do not fit a byte: stored as float32)
    held = np.zeros(total)
    for _ in range(trials):
        reservoir = Reservoir(capacity, 1, 3)
        for start in range(0, total, 57):
            ids = np.arange(start, min(start + 57, total))
            reservoir.add(ids[:, None].astype(np.float32), np.ones((len(ids), 3), bool), ids % 3, rng)
        assert reservoir.obs.dtype == np.float32
        kept = reservoir.obs[: reservoir.size, 0].astype(int)
        assert len(set(kept)) == capacity  # no decision twice
        held[kept] += 1
    p = capacity / total
    sd = np.sqrt(trials * p * (1 - p))
    assert np.abs(held - trials * p).max() < 5 * sd  # each decision (300 expected, sd 16)
    assert abs(held[:57].mean() - held[-57:].mean()) < 2 * sd  # the first batch and the last alike


def test_the_reservoir_stores_observations_as_bytes_masks_as_bits_and_gives_them_back_exactly():
    rng = np.random.default_rng(1)
    reservoir = Reservoir(100, 5, 11)
    obs = rng.integers(0, 256, (30, 5)).astype(np.float32)
    mask = rng.random((30, 11)) < 0.5
    action = rng.integers(0, 11, 30)
    reservoir.add(obs, mask, action, rng)
    assert reservoir.obs.dtype == np.uint8 and reservoir.mask.shape == (100, 2) and reservoir.size == 30
    got_obs, got_mask, got_action = reservoir.sample(np.arange(30))
    assert (
        np.array_equal(got_obs.numpy(), obs)
        and np.array_equal(got_mask.numpy(), mask)
        and np.array_equal(got_action.numpy(), action)
    )
    assert got_obs.dtype == torch.float32 and got_mask.dtype == torch.bool and got_action.dtype == torch.int64
    # an observation that is not a small count (a fraction, a negative number, 256) switches the storage to float32,
    # losing nothing
    odd = np.array([[0.5, -1, 256, 3, 0]], np.float32)
    reservoir.add(odd, mask[:1], action[:1], rng)
    assert reservoir.obs.dtype == np.float32
    assert np.array_equal(reservoir.sample(np.array([30]))[0].numpy(), odd) and np.array_equal(
        reservoir.sample(np.arange(30))[0].numpy(), obs
    )
    # a checkpoint's tensors restore the same reservoir
    again = Reservoir(100, 5, 11)
    again.restore(
        {k.split(".")[-1]: v for k, v in reservoir.tensors("r").items()}, reservoir.size, reservoir.seen, "here"
    )
    for name in ("obs", "mask", "action"):
        assert np.array_equal(getattr(again, name), getattr(reservoir, name)), name
    with pytest.raises(
        ckpt.CheckpointError,
        match=r"here: the average policy's reservoir does not fit nfsp.reservoir_size=20: obs: \(31, 5\), "
        r"expected \(31, 5\)|size 31",
    ):
        Reservoir(20, 5, 11).restore({k.split(".")[-1]: v for k, v in reservoir.tensors("r").items()}, 31, 31, "here")
    with pytest.raises(ckpt.CheckpointError, match=r"mask: \(31, 2\), expected \(31, 3\)"):
        Reservoir(100, 5, 17).restore({k.split(".")[-1]: v for k, v in reservoir.tensors("r").items()}, 31, 31, "here")


def test_the_average_policy_learns_the_policy_whose_decisions_fill_its_reservoir():
    """Supervised learning on the reservoir: fed a fixed rule's decisions, the average policy plays that rule."""
    game = GameConfig(num_players=4)
    rng = np.random.default_rng(2)
    model = ActorCritic(game, [32], seed=0)
    average = AveragePolicy(
        model,
        NFSPConfig(reservoir_size=5000, sl_steps=50, sl_batch_size=256, sl_learning_rate=1e-2),
        model.observation_size,
        model.num_actions,
        seed=0,
    )
    obs = np.zeros((5000, model.observation_size), np.float32)
    obs[:, 0] = rng.integers(0, 4, 5000)
    mask = rng.random((5000, model.num_actions)) < 0.1
    mask[:, :4] = True
    rule = obs[:, 0].astype(
        np.int64
    )  # the action numbered by the first entry of the observation, among other legal ones

    class Rollout:  # (what ``observe`` reads of a ``training.core.learner.Rollout``)
        pass

    rollout = Rollout()
    rollout.mask, rollout.action = mask, rule
    rollout.observations = lambda rows: obs[rows]  # the observations as the env gives them
    average.observe(rollout, np.arange(5000))
    for _ in range(20):
        stats = average.update()
    assert stats["reservoir"] == 5000 and stats["sl_loss"] < 0.1
    with torch.no_grad():
        chosen = average.model(torch.from_numpy(obs), torch.from_numpy(mask))[0].argmax(-1).numpy()
    assert (chosen == rule).mean() > 0.97


# ---------------------------------------------------------------------------- configs


@pytest.mark.parametrize(
    "override, message",
    [
        ("opponents.population=0", r"population=0.0 is not allowed; expected a weight > 0 with algorithm: nfsp"),
        ("nfsp.reservoir_size=0", r"nfsp: reservoir_size=0 is not allowed; expected an integer >= 1"),
        (
            "nfsp.sl_batch_size=500",
            r"nfsp: sl_batch_size=500 is not allowed; expected an integer <= reservoir_size \(300\)",
        ),
        ("nfsp.sl_steps=-1", r"nfsp: sl_steps=-1 is not allowed; expected an integer >= 0"),
        ("nfsp.sl_learning_rate=0", r"nfsp: sl_learning_rate=0.0 is not allowed; expected a number > 0"),
    ],
)
def test_the_nfsp_config_is_validated(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [*NFSP, override])


def test_cockroach_train_refuses_population_tables_without_a_population_before_writing_anything(tmp_path, capsys):
    """``opponents.population`` is PSRO's and cockroach-exploit's (they pass a population) or NFSP's average policy; a
    PPO run has none.
    """
    assert _train(tmp_path, "run", 2, "--set", "opponents.population=0.5") == 2
    assert "opponents.population=0.5 is not allowed with algorithm: ppo" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------- runs


def test_an_nfsp_run_saves_the_average_policy_as_its_agent_and_the_best_response_beside_it(tmp_path):
    assert _nfsp(tmp_path, "run", 4, "--set", "schedule.keep_agent_every=2") == 0
    run = tmp_path / "run"
    state = ckpt.load_checkpoint(run / "checkpoint", kind="run")
    final = ckpt.load_checkpoint(run / "final")
    kept = ckpt.load_checkpoint(
        run / "agents" / "update_0000004", kind="agent"
    )  # the kept agents are the average policy too
    assert kept.tensors.keys() == final.tensors.keys() and all(
        torch.equal(kept.tensors[k], v) for k, v in final.tensors.items()
    )
    assert sorted(p.name for p in (run / "agents").glob("*.json")) == ["update_0000002.json", "update_0000004.json"]
    best = ckpt.load_checkpoint(run / "best_response")
    average, policy = state.group("average.model"), state.group("model")
    assert all(torch.equal(final.group("model")[k], v) for k, v in average.items())
    assert all(torch.equal(best.group("model")[k], v) for k, v in policy.items())
    assert any(not torch.equal(average[k], policy[k]) for k in policy)  # two networks, trained apart
    assert best.metadata["network"] == "best response" and best.metadata["evaluations"] == []
    assert final.metadata["evaluations"] and "network" not in final.metadata  # the evaluations are the average policy's
    reservoir = state.metadata["average"]["reservoir"]
    assert reservoir["capacity"] == 300 and reservoir["size"] == min(300, reservoir["seen"]) and reservoir["seen"] > 0
    assert (
        state.tensors["average.reservoir.obs"].shape[0] == reservoir["size"]
        and state.tensors["average.reservoir.obs"].dtype == torch.uint8
    )
    header = (run / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"sl_loss", "reservoir", "train_loss_rate_vs_population"} <= set(header)
    # the run checkpoint's agent is the average policy too: loaded, exported (or its best response, on request)
    assert all(torch.equal(ckpt.build_model(state).state_dict()[k], v) for k, v in average.items())
    exported = ckpt.load_checkpoint(ckpt.export_agent(run / "checkpoint", tmp_path / "pi"))
    assert exported.metadata["kind"] == "agent" and exported.metadata["network"] == "average"
    assert (
        all(torch.equal(exported.group("model")[k], v) for k, v in average.items())
        and exported.tensors.keys() == final.tensors.keys()
    )
    assert not {"average", "average.optimizer", "optimizer", "rng"} & set(exported.metadata)
    beta = ckpt.load_checkpoint(ckpt.export_agent(run / "checkpoint", tmp_path / "beta", member="best_response"))
    assert (
        all(torch.equal(beta.group("model")[k], v) for k, v in policy.items())
        and beta.metadata["network"] == "best response"
    )
    with pytest.raises(
        ckpt.CheckpointError,
        match=r"member='b' needs an NFSP run checkpoint's network, one of \['average', 'best_response'\]",
    ):
        ckpt.export_agent(run / "checkpoint", tmp_path / "nothing", member="b")
    with pytest.raises(
        ckpt.CheckpointError, match=r"average_from=0 averages the best response's snapshots of an NFSP run"
    ):
        ckpt.export_agent(run / "checkpoint", tmp_path / "nothing", average_from=0)
    assert not (tmp_path / "nothing.json").exists()
    from training import load_agent

    assert load_agent(run / "final").name and load_agent(run / "checkpoint").name


def test_an_nfsp_runs_average_exports_averaged_with_its_kept_agents_and_bad_sources_are_refused(tmp_path, capsys):
    """``--average-with``: the run's average policy and its kept agents (``schedule.keep_agent_every``), one network
    averaged;
    a mixture, another network shape, a source named twice or the destination among the sources is refused, writing
    nothing.
    """
    assert _nfsp(tmp_path, "run", 6, "--set", "schedule.keep_agent_every=2") == 0
    run = tmp_path / "run"
    state = ckpt.load_checkpoint(run / "checkpoint", kind="run")
    kept = [ckpt.load_checkpoint(run / "agents" / f"update_{u:07d}") for u in (2, 4)]
    path = ckpt.export_agent(run / "checkpoint", tmp_path / "soup", average_with=[k.path for k in kept])
    soup = ckpt.load_checkpoint(path)
    average = state.group("average.model")
    for key, value in soup.group("model").items():
        expected = torch.stack([average[key].double(), *(k.group("model")[key].double() for k in kept)]).mean(0)
        assert torch.allclose(value.double(), expected, atol=1e-6), key
    assert not all(torch.equal(soup.group("model")[k], v) for k, v in average.items())  # three networks that differ
    assert soup.metadata["averaged"] == {"sources": [str(state.path), *(str(k.path) for k in kept)], "networks": 3}
    assert soup.metadata["kind"] == "agent" and soup.metadata["network"] == "average"
    # an agent averaged with a run checkpoint takes the run's average policy, as the export would
    pair = ckpt.load_checkpoint(ckpt.export_agent(kept[0].path, tmp_path / "pair", average_with=[run / "checkpoint"]))
    for key, value in pair.group("model").items():
        assert torch.allclose(
            value.double(), (kept[0].group("model")[key].double() + average[key].double()) / 2, atol=1e-6
        ), key
    from training import load_agent

    assert load_agent(path).name

    assert _train(tmp_path, "wide", 2, "--set", "model.hidden_sizes=[8]") == 0
    meta = {k: kept[0].metadata[k] for k in ("game_config", "model")}
    mixture = ckpt.save_mixture_checkpoint(
        tmp_path / "mix", [ckpt.build_model(k) for k in kept], [0.5, 0.5], ["two", "four"], meta
    )
    refusals = [
        ([run / "final", kept[0].path, run / "final"], "named twice among the checkpoints to average"),
        ([tmp_path / "wide" / "final"], r"the rules .* and network .* differ from"),
        ([tmp_path / "soup"], "the export destination is one of the checkpoints to average"),
        ([mixture], "this is a mixture of several; export one member first"),
    ]
    for others, message in refusals:
        with pytest.raises(ckpt.CheckpointError, match=message):
            ckpt.export_agent(run / "checkpoint", tmp_path / "soup", average_with=others, overwrite=True)
    with pytest.raises(ckpt.CheckpointError, match="average_from=0 and average_with are two kinds of average"):
        ckpt.export_agent(run / "checkpoint", tmp_path / "refused", average_from=0, average_with=[kept[0].path])
    with pytest.raises(ckpt.CheckpointError, match="expected a list of checkpoints"):
        ckpt.export_agent(run / "checkpoint", tmp_path / "refused", average_with=str(kept[0].path))
    assert (
        not list(tmp_path.glob("refused*")) and ckpt.load_checkpoint(tmp_path / "soup").metadata == soup.metadata
    )  # unchanged
    checkpoint_cli.main(
        [
            str(run / "checkpoint"),
            "--export",
            str(tmp_path / "cli"),
            "--average-with",
            str(kept[0].path),
            "--average-with",
            str(kept[1].path),
        ]
    )
    assert ckpt.read_metadata(tmp_path / "cli")["averaged"] == soup.metadata["averaged"]
    with pytest.raises(SystemExit):
        checkpoint_cli.main([str(run / "checkpoint"), "--average-with", str(kept[0].path)])  # without --export
    assert "go with --export" in capsys.readouterr().err


@pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlap"])
def test_an_interrupted_nfsp_run_resumes_exactly(tmp_path, overlap, monkeypatch, request):
    """The average policy's weights, Adam state, reservoir and generator are in the run checkpoint: a run stopped by
    SIGTERM inside a checkpoint segment (after update 3; checkpoints every 2) resumes from update 2, plays update 3
    again and equals the whole one.
    """
    import signal

    from training.algorithms import ppo

    trained = request.getfixturevalue("updates_trained")  # (test_training's, imported)
    extra = ["--set", f"ppo.overlap={str(overlap).lower()}"]
    assert _nfsp(tmp_path, "whole", 6, *extra) == 0
    rollout, calls = ppo.collect_rollout, []

    def sigterm_in_the_third_rollout(*args, **kwargs):  # (with overlap too: collected for update 2)
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGTERM)
        return rollout(*args, **kwargs)

    monkeypatch.setattr(ppo, "collect_rollout", sigterm_in_the_third_rollout)
    assert _nfsp(tmp_path, "split", 6, *extra) == 143
    monkeypatch.undo()
    assert ckpt.read_metadata(tmp_path / "split" / "checkpoint")["step"]["update"] == 2
    assert len((tmp_path / "split" / "metrics.csv").read_text().splitlines()) == 1 + 3  # stopped after update 3
    trained.clear()
    assert _nfsp(tmp_path, "split", 6, "--resume", *extra) == 0
    assert trained == [2, 3, 4, 5]
    whole = ckpt.load_checkpoint(tmp_path / "whole" / "checkpoint", kind="run")
    split = ckpt.load_checkpoint(tmp_path / "split" / "checkpoint", kind="run")
    assert whole.tensors.keys() == split.tensors.keys() and any(
        k.startswith("average.optimizer.") for k in whole.tensors
    )
    for key, value in whole.tensors.items():
        assert torch.equal(value, split.tensors[key]), key
    assert whole.metadata["average"] == split.metadata["average"]
    assert _metrics(tmp_path / "whole" / "metrics.csv") == _metrics(tmp_path / "split" / "metrics.csv")


def test_a_run_killed_between_its_two_agent_checkpoints_writes_both_on_resume(tmp_path, monkeypatch):
    """``final`` (Π) marks a finished run: killed after one of ``final`` and ``best_response`` was written and before
    the
    other, ``--resume`` must not take the run for finished without its best response.
    """
    import training.algorithms.ppo

    save = training.algorithms.ppo.save_agent_checkpoint
    written = []

    def killed_after_the_first_agent(path, *args, **kwargs):
        if written:
            raise KeyboardInterrupt("SIGKILL")
        written.append(path.name)
        return save(path, *args, **kwargs)

    import training.algorithms.nfsp

    for caller in (training.algorithms.ppo, training.algorithms.nfsp):  # best_response, then final
        monkeypatch.setattr(caller, "save_agent_checkpoint", killed_after_the_first_agent)
    assert _nfsp(tmp_path, "run", 2) == 130
    monkeypatch.undo()
    assert _nfsp(tmp_path, "run", 2, "--resume") == 0
    run = tmp_path / "run"
    beta = ckpt.load_checkpoint(run / "checkpoint").group("model")
    best_response = ckpt.load_checkpoint(run / "best_response").group("model")
    assert beta.keys() == best_response.keys() and all(torch.equal(beta[k], best_response[k]) for k in beta)
    average = ckpt.load_checkpoint(run / "checkpoint").group("average.model")
    final = ckpt.load_checkpoint(run / "final").group("model")
    assert all(torch.equal(average[k], final[k]) for k in average) and (run / "learning_curves.png").exists()


def test_a_resume_refuses_a_checkpoint_without_the_average_policy_or_with_another_reservoir(tmp_path, capsys):
    assert _nfsp(tmp_path, "run", 2) == 0
    meta_path = tmp_path / "run" / "checkpoint.json"
    original = meta_path.read_text()
    meta = json.loads(original)
    del meta["average"]
    meta_path.write_text(json.dumps(meta))
    assert _nfsp(tmp_path, "run", 4, "--resume") == 2
    assert "no average policy" in capsys.readouterr().err
    meta = json.loads(original)
    meta["average"]["reservoir"]["size"] += 1
    meta_path.write_text(json.dumps(meta))
    assert _nfsp(tmp_path, "run", 4, "--resume") == 2
    assert "the average policy's reservoir does not fit" in capsys.readouterr().err
    meta_path.write_text(original)  # (a refused resume changed nothing)
    assert _nfsp(tmp_path, "run", 4, "--resume") == 0
    assert ckpt.read_metadata(tmp_path / "run" / "checkpoint")["step"]["update"] == 4


def test_a_resume_may_change_the_average_policys_supervised_steps_but_not_its_reservoir(tmp_path, capsys):
    """``nfsp.sl_learning_rate``, ``sl_steps`` and ``sl_batch_size`` may change on resume (Π settles at a lower rate
    late in a run); the reservoir's size may not.
    """
    assert _nfsp(tmp_path, "run", 2) == 0
    before = ckpt.read_metadata(tmp_path / "run" / "checkpoint")
    weights = ckpt.load_checkpoint(tmp_path / "run" / "checkpoint").group("average.model")
    assert before["average.optimizer"]["param_groups"][0]["lr"] == pytest.approx(3e-4)
    assert _nfsp(tmp_path, "run", 4, "--resume", "--set", "nfsp.reservoir_size=400") == 2
    assert "changed: ['nfsp.reservoir_size']" in capsys.readouterr().err
    assert ckpt.read_metadata(tmp_path / "run" / "checkpoint") == before  # (a refused resume changed nothing)
    assert (
        _nfsp(
            tmp_path,
            "run",
            4,
            "--resume",
            "--set",
            "nfsp.sl_learning_rate=1e-4",
            "--set",
            "nfsp.sl_steps=3",
            "--set",
            "nfsp.sl_batch_size=32",
        )
        == 0
    )
    after = ckpt.read_metadata(tmp_path / "run" / "checkpoint")
    assert after["step"]["update"] == 4
    assert after["average.optimizer"]["param_groups"][0]["lr"] == pytest.approx(1e-4)
    assert {k: after["training_config"]["nfsp"][k] for k in ("sl_learning_rate", "sl_steps", "sl_batch_size")} == {
        "sl_learning_rate": 1e-4,
        "sl_steps": 3,
        "sl_batch_size": 32,
    }
    resumed = ckpt.load_checkpoint(tmp_path / "run" / "checkpoint").group("average.model")
    assert any(not torch.equal(weights[k], resumed[k]) for k in weights)  # (Π took its steps at the new settings)
