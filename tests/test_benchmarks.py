"""Every benchmark script behind a figure in the README runs end to end, at tiny settings.

A performance or strength claim is only as good as the script that measures it, and a
script that nothing runs breaks silently. Each test runs one script as a user does (a
child process, from another directory, every output file under ``tmp_path``) and checks
the shape of what it prints or writes; the figures themselves are not checked (timings
never are: these machines are shared). Covered elsewhere: ``bench_edge_by_decision`` and
``bench_readability`` (``tests/test_training.py``). Not run to the end here: ``bench_psro``
(only its refusal to replace a plot; its parts are ``tests/test_psro.py``'s, its smallest
run takes minutes) and ``soak.py`` (every rule set's kernels compiled: minutes).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str, cwd: Path, codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert done.returncode in codes, (
        f"{script} {' '.join(args)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    return done


def number(text: str) -> float:
    return float(text.replace(",", "").rstrip("%x"))


def test_bench_aec_measures_the_env_for_each_rule_set(tmp_path):
    out = bench("bench_aec.py", "--seconds", "0.3", "--rounds", "1", cwd=tmp_path).stdout
    for name in ("cockroach_poker classic 4p", "cockroach_poker royal 4p"):
        row = next(line for line in out.splitlines() if line.startswith(name))
        assert number(row[len(name) :].split()[0]) > 0  # steps per CPU second
    assert "leduc_holdem_v4" in out  # the peer's column, measured or marked unavailable


def test_bench_batched_measures_each_backend_beside_the_aec_env(tmp_path):
    out = bench(
        "bench_batched.py",
        "--seconds",
        "0.2",
        "--sizes",
        "64",
        "--variants",
        "numba",
        "numpy",
        "--rule-sets",
        "classic 4p",
        cwd=tmp_path,
    ).stdout
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+64\s+(numba|numpy)\s", line)]
    assert sorted(r[1] for r in rows) == ["numba", "numpy"]
    assert all(number(r[2]) > 0 and r[3].endswith("x") for r in rows)  # decisions/s and the ratio to the AEC env


def test_bench_baselines_exits_1_exactly_when_a_target_is_missed(tmp_path):
    done = bench("bench_baselines.py", "--games", "200", "--opponents", "random", "honest", cwd=tmp_path, codes=(0, 1))
    verdicts = [line for line in done.stdout.splitlines() if line.startswith("heuristic vs 3x ")]
    assert [v.split()[3] for v in verdicts] == ["random", "honest"]
    assert (done.returncode == 1) == any("MISSED" in v for v in verdicts)


def test_bench_baselines_plays_the_rule_set_asked_for(tmp_path):
    """``--preset duel`` is a duel (the default ``--players`` took it back to four seats), measured against no 4-player
    target.
    """
    out = bench("bench_baselines.py", "--games", "2", "--preset", "duel", "--opponents", "random", cwd=tmp_path).stdout
    assert out.startswith("2-player classic") and re.search(
        r"^heuristic vs 1x random .* 2 games, [\d.]+ s\s*$", out, re.M
    )
    out = bench("bench_baselines.py", "--games", "3", "--players", "3", "--opponents", "honest", cwd=tmp_path).stdout
    assert out.startswith("3-player classic") and re.search(r"^heuristic vs 2x honest ", out, re.M)
    # another hero (the unseen-style counter) is measured against no target
    out = bench("bench_baselines.py", "--games", "4", "--hero", "counter", "--opponents", "random", cwd=tmp_path).stdout
    assert re.search(r"^counter vs 3x random +loss rate .* 4 games, [\d.]+ s\s*$", out, re.M), out


def test_bench_scripted_measures_compiled_and_numpy_agents_side_by_side(tmp_path):
    out = bench(
        "bench_scripted.py", "--batch", "64", "--num-envs", "8", "--seconds", "0.05", "--rounds", "1", cwd=tmp_path
    ).stdout
    for name in ("heuristic", "honest", "bluffer"):
        for backend in ("numba", "numpy"):
            assert re.search(rf"^\| {name} {backend} \| [\d,]+ \| [\d,]+ \| [\d,.]+ \|$", out, re.M), out
        assert re.search(rf"^{name}: compiled / numpy = [\d.]+x decisions/s \(wall\)", out, re.M), out
    for table in ("3x random", "3x heuristic", "3x heuristic \\(numpy\\)"):
        assert re.search(rf"^\| {table} \| [\d,]+ \| [\d.]+ \| [\d,]+ \| [\d.]+ \|$", out, re.M), out
    for clock in ("wall", "CPU"):
        target = rf"^target: 3x heuristic >= 1/3 of 3x random's steps/s \({clock}\): [\d.]+ (met|missed)$"
        assert re.search(target, out, re.M), out


def test_bench_play_drives_the_server_like_a_browser(tmp_path):
    """Bounded by a count of moves, not by seconds: a busy machine measures as many moves as an idle one."""
    pytest.importorskip("fastapi")
    out = bench("bench_play.py", "--games", "2", "--seconds", "0.01", "--min-moves", "6", cwd=tmp_path).stdout
    assert re.search(r"[\d.]+ ms per human move", out)
    http, local = (re.search(rf"{name}.*?\s(\d+)$", out, re.M) for name in (r"HTTP move", r"in process"))
    assert int(http.group(1)) >= 6 and int(local.group(1)) >= 6, out


def test_bench_play_reports_an_empty_sample_instead_of_crashing(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_play

    assert bench_play.shown(bench_play.median([])) == "-" and bench_play.shown(bench_play.percentile([], 99)) == "-"
    assert bench_play.in_process("heuristic", 0.0) == [] and len(bench_play.in_process("heuristic", 0.0, 3)) >= 3


def test_bench_agents_writes_the_strength_table(tmp_path):
    report = tmp_path / "agents.json"
    out = bench(
        "bench_agents.py", "mini", "classic-2p", "--games", "8", "--no-exploit", "--json", str(report), cwd=tmp_path
    ).stdout
    rows = json.loads(report.read_text())
    assert [r["agent"] for r in rows] == ["mini", "classic-2p"]
    for row in rows:
        assert set(row["against"]) == {"random", "honest", "bluffer", "heuristic"}
        assert all(
            0 <= r["loss_rate"] <= 1 and r["ci95"][0] <= r["loss_rate"] <= r["ci95"][1] for r in row["against"].values()
        )
    assert "| `mini` | 50.0% |" in out and "| `classic-2p` | 50.0% |" in out


def _agent(path: Path, players: int, seed: int) -> Path:
    """A small untrained agent checkpoint of ``players``-player classic rules."""
    import torch

    from cockroach_env.config import GameConfig
    from training.core import checkpoint as ckpt
    from training.core.model import ActorCritic

    game = GameConfig(num_players=players)
    torch.manual_seed(seed)
    model = ActorCritic(game, [8], "tanh")
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    spec = {"hidden_sizes": [8], "activation": "tanh"}
    return ckpt.save_checkpoint(
        path, tensors, {"kind": "agent", "name": path.name, "game_config": game.to_dict(), "model": spec}
    ).with_suffix("")


def test_bench_agents_adds_a_best_response_start_from_another_network(tmp_path):
    """``--start-from``: one more best response, from another network of the agent's rules and shape; the worst is the
    row's.
    """
    agent, start, other = (
        _agent(tmp_path / "mine", 4, 1),
        _agent(tmp_path / "strong", 4, 2),
        _agent(tmp_path / "three", 3, 3),
    )
    report = tmp_path / "agents.json"
    out = bench(
        "bench_agents.py",
        str(agent),
        "--games",
        "8",
        "--decisions",
        "64",
        "--start-from",
        str(start),
        "--json",
        str(report),
        cwd=tmp_path,
    ).stdout
    (row,) = json.loads(report.read_text())
    starts = [s["start_member"] for s in row["exploit"]["starts"]]
    assert starts == [None, "strong (--start-from)"]  # its own weights, then the --start-from
    assert row["exploit"]["loss_rate"] == min(s["loss_rate"] for s in row["exploit"]["starts"])
    assert "worst of 2 starts: from " in out
    refused = bench(
        "bench_agents.py",
        str(agent),
        "--games",
        "8",
        "--start-from",
        str(other),
        "--json",
        str(tmp_path / "none.json"),
        cwd=tmp_path,
        codes=(2,),
    )
    assert f"--start-from '{other}' (3 players" in refused.stderr and "fits none of the agents" in refused.stderr
    assert refused.stdout == "" and not (tmp_path / "none.json").exists()  # refused before any game


def test_bench_exploit_seeds_summarises_every_start_and_seed(tmp_path):
    report = tmp_path / "seeds.json"
    out = bench(
        "bench_exploit_seeds.py",
        "classic-2p",
        "--seeds",
        "1",
        "2",
        "--decisions",
        "64",
        "--games",
        "8",
        "--workers",
        "2",
        "--json",
        str(report),
        cwd=tmp_path,
    ).stdout
    data = json.loads(report.read_text())
    runs, summary = data["runs"]["classic-2p"], data["summaries"]["classic-2p"]
    starts = {r["start"] for r in runs}
    assert len(runs) == 2 * len(starts) and {r["seed"] for r in runs} == {1, 2}  # one best response per start and seed
    means = {s: sum(r["points"] for r in runs if r["start"] == s) / 2 for s in starts}
    assert summary["mean_by_start"] == pytest.approx(means) and summary["worst_start_mean"] == pytest.approx(
        max(means.values())
    )
    assert summary["worst"] == max(r["points"] for r in runs) and summary["runs_meeting_target"] == sum(
        r["points"] <= 5 for r in runs
    )
    assert "| `classic-2p` |" in out and "worst start by mean" in out


def test_bench_exploit_seeds_history_measures_a_windowless_agent_with_a_windowed_best_response(tmp_path):
    """``--history K``: each job is ``cockroach-exploit --history K`` (from scratch, one start); a checkpoint reading
    another window is refused before any job.
    """
    report = tmp_path / "history.json"
    argv = ["mini", "--history", "4", "--seeds", "1", "--decisions", "64", "--games", "8", "--workers", "1"]
    bench("bench_exploit_seeds.py", *argv, "--keep-runs", str(tmp_path / "kept"), "--json", str(report), cwd=tmp_path)
    (run,) = json.loads(report.read_text())["runs"]["mini"]
    assert run["start"] == "scratch" and "-history-4" in run["best_response_checkpoint"]
    refused = bench("bench_exploit_seeds.py", "mini-recall", "--history", "4", cwd=tmp_path, codes=(2,))
    assert "--history 4: 'mini-recall' reads every move (recall=True)" in refused.stderr


def test_bench_exploit_seeds_starts_heaviest_trains_one_best_response_per_seed_from_the_heaviest_member(tmp_path):
    from training.core.checkpoint import load_checkpoint, mixture_weights

    names, weights = mixture_weights(load_checkpoint("classic-2p"))
    report = tmp_path / "heaviest.json"
    bench(
        "bench_exploit_seeds.py",
        "classic-2p",
        "--starts",
        "heaviest",
        "--seeds",
        "1",
        "2",
        "--decisions",
        "64",
        "--games",
        "8",
        "--workers",
        "2",
        "--json",
        str(report),
        cwd=tmp_path,
    )
    runs = json.loads(report.read_text())["runs"]["classic-2p"]
    assert len(runs) == 2 and {r["seed"] for r in runs} == {1, 2}
    assert {r["start"] for r in runs} == {names[int(weights.argmax())]}
    bench("bench_exploit_seeds.py", "classic-2p", "--starts", "some", cwd=tmp_path, codes=(2,))


def test_bench_exploit_seeds_start_from_adds_a_start_for_every_seed_and_refuses_a_bad_one_up_front(tmp_path):
    """``--start-from CKPT``: one more best response per checkpoint and seed, from CKPT's weights; a mixture or a
    network of
    other rules is refused before anything is trained.
    """
    import torch

    from training.core.checkpoint import build_model, load_checkpoint, save_checkpoint

    mini = load_checkpoint("mini")
    model = build_model(mini)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.01)
    save_checkpoint(
        tmp_path / "other",
        {f"model.{k}": v for k, v in model.state_dict().items()},
        {
            "kind": "agent",
            "name": "other",
            "game_config": mini.metadata["game_config"],
            "model": mini.metadata["model"],
        },
    )
    report = tmp_path / "from.json"
    bench(
        "bench_exploit_seeds.py",
        "mini",
        "--seeds",
        "1",
        "2",
        "--decisions",
        "64",
        "--games",
        "8",
        "--workers",
        "2",
        "--start-from",
        str(tmp_path / "other"),
        "--json",
        str(report),
        cwd=tmp_path,
    )
    runs = json.loads(report.read_text())["runs"]["mini"]
    assert sorted((r["seed"], r["start"]) for r in runs) == [
        (1, "other (--start-from)"),
        (1, "own weights"),
        (2, "other (--start-from)"),
        (2, "own weights"),
    ]
    for source, message in (
        ("classic-2p", "is a 'mixture' checkpoint; expected an agent or run checkpoint"),
        ("royal-2p", "was trained for other rules than 'mini'"),
        ("nowhere", "--start-from: nowhere: no checkpoint at"),
    ):
        done = bench(
            "bench_exploit_seeds.py", "mini", "--decisions", "64", "--start-from", source, cwd=tmp_path, codes=(2,)
        )
        assert message in done.stderr and done.stdout == ""


def test_bench_exploit_seeds_keeps_the_best_responses_where_told(tmp_path):
    """``--keep-runs DIR``: every best response stays under DIR, named in the JSON (loadable: the next exploiters of a
    double oracle); a DIR that holds anything, or is a file, is refused before any training.
    """
    from training.core.checkpoint import load_checkpoint

    keep, report = tmp_path / "kept", tmp_path / "kept.json"
    bench(
        "bench_exploit_seeds.py",
        "mini",
        "--seeds",
        "1",
        "2",
        "--decisions",
        "64",
        "--games",
        "8",
        "--workers",
        "2",
        "--keep-runs",
        str(keep),
        "--json",
        str(report),
        cwd=tmp_path,
    )
    runs = json.loads(report.read_text())["runs"]["mini"]
    assert len(runs) == 2 and len({r["best_response_checkpoint"] for r in runs}) == 2
    for run in runs:
        path = Path(run["best_response_checkpoint"])
        assert keep in path.parents and load_checkpoint(path).game_config.num_players == 2
    before = sorted(str(p) for p in keep.rglob("*"))
    done = bench(
        "bench_exploit_seeds.py",
        "mini",
        "--seeds",
        "3",
        "--decisions",
        "64",
        "--keep-runs",
        str(keep),
        cwd=tmp_path,
        codes=(2,),
    )
    assert (
        f"--keep-runs {str(keep)!r} already holds 0-mini; expected a new or empty directory (earlier files are kept)"
        in done.stderr
    )
    assert sorted(str(p) for p in keep.rglob("*")) == before and done.stdout == ""
    done = bench(
        "bench_exploit_seeds.py", "mini", "--decisions", "64", "--keep-runs", str(report), cwd=tmp_path, codes=(2,)
    )
    assert "is a file; expected a new or empty directory" in done.stderr
    done = bench(
        "bench_exploit_seeds.py",
        "mini",
        "--seeds",
        "1",
        "--decisions",
        "64",
        "--games",
        "8",
        "--json",
        str(tmp_path / "temp.json"),
        cwd=tmp_path,
    )
    assert (
        "best_response_checkpoint" not in json.loads((tmp_path / "temp.json").read_text())["runs"]["mini"][0]
    )  # deleted with its temporary directory


def test_bench_cfr_solves_mini_and_descends(tmp_path):
    out = bench("bench_cfr.py", "--iterations", "3", "--descent-steps", "2", "--skip-openspiel", cwd=tmp_path).stdout
    assert re.search(
        r"exploitability descent over observations from the uniform policy: 2 steps .* NashConv [\d.]+ -> [\d.]+", out
    )


def test_bench_exact_mmd_prints_one_row_per_setting_and_writes_its_curves(tmp_path):
    out = bench(
        "bench_exact_mmd.py", "--presets", "mini", "--iterations", "4", "--every", "2", "--eta", "0.1", "5",
        "--magnet-period", "0", "2", "--json", "mmd.json", cwd=tmp_path,
    ).stdout  # fmt: skip
    rows = re.findall(r"^\| mini \| 0.05 \| (0.1|5) \| (uniform|staged every 2) \| none \| ([\d.]+) \|", out, re.M)
    assert [r[:2] for r in rows] == [
        ("0.1", "uniform"), ("0.1", "staged every 2"), ("5", "uniform"), ("5", "staged every 2")
    ]  # fmt: skip
    runs = json.loads((tmp_path / "mmd.json").read_text())["runs"]
    assert [[i for i, _, _ in r["points"]] for r in runs] == [[0, 2, 4]] * 4
    assert runs[0]["points"][0][2] == pytest.approx(0.637, abs=1e-3)  # the uniform start
    refused = bench("bench_exact_mmd.py", "--presets", "mini", "--alpha", "-1", cwd=tmp_path, codes=(2,)).stderr
    assert "alpha=-1.0 is not allowed" in refused


def test_bench_mini_frontier_prints_one_row_per_weight(tmp_path):
    out = bench(
        "bench_mini_frontier.py", "--iterations", "3", "--steps", "2", "--weights", "0", "1", cwd=tmp_path
    ).stdout
    assert re.search(r"^\| 0 \| 2 \(", out, re.M) and re.search(r"^\| 1 \| 2 \(", out, re.M)


def test_bench_training_profiles_the_loop_and_checks_strength_targets(tmp_path):
    out = bench(
        "bench_training.py",
        "--updates",
        "2",
        "--set",
        "ppo.num_envs=32",
        "--set",
        "ppo.num_steps=8",
        "--profile",
        cwd=tmp_path,
    ).stdout
    shares = [float(m) for m in re.findall(r"^  .+?\s+[\d.]+ s\s+([\d.]+)%$", out, re.M)]
    assert any("update (PPO epochs)" in line for line in out.splitlines()) and sum(shares) == pytest.approx(
        100, abs=1.5
    )
    out = bench("bench_training.py", "--strength", "classic-4p", "--games", "8", cwd=tmp_path).stdout
    assert re.search(r"^  \[(met|NOT met)\] heuristic among 3 trained loses", out, re.M)


def test_bench_exact_writes_its_plot_and_figures_where_it_is_told(tmp_path):
    pytest.importorskip("pyspiel")
    pytest.importorskip("matplotlib")
    plot, report = tmp_path / "exact.png", tmp_path / "exact.json"
    bench(
        "bench_exact.py",
        "--cfr-seconds",
        "0.3",
        "--ppo-minutes",
        "0.01",
        "--skip-openspiel-python",
        "--plot",
        str(plot),
        "--json",
        str(report),
        cwd=tmp_path,
    )
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and json.loads(report.read_text())
    # a second run keeps both files unless told to replace them, and says so before any work
    before = plot.read_bytes(), report.read_text()
    done = bench("bench_exact.py", "--plot", str(plot), cwd=tmp_path, codes=(2,))
    assert f"--plot {plot} already exists; pass --overwrite" in done.stderr and "==" not in done.stdout
    done = bench(
        "bench_exact.py", "--plot", str(tmp_path / "other.png"), "--json", str(report), cwd=tmp_path, codes=(2,)
    )
    assert f"--json {report} already exists" in done.stderr and (plot.read_bytes(), report.read_text()) == before


def test_bench_psro_keeps_an_existing_plot_unless_told_to_replace_it(tmp_path):
    (tmp_path / "psro_nashconv.png").write_bytes(b"mine")
    done = bench("bench_psro.py", "--nashconv", cwd=tmp_path, codes=(2,))  # the default path, in the current directory
    assert "--out psro_nashconv.png already exists; pass --overwrite" in done.stderr
    assert (tmp_path / "psro_nashconv.png").read_bytes() == b"mine"


@pytest.mark.parametrize(
    "script, args",
    [
        ("bench_agents.py", ["mini", "--games", "8", "--no-exploit"]),
        ("bench_exploit_seeds.py", ["mini", "--seeds", "1", "--decisions", "64", "--games", "8", "--workers", "1"]),
        ("bench_readability.py", ["heuristic", "--games", "10"]),
    ],
)
def test_a_benchmark_keeps_an_existing_report_unless_told_to_replace_it(tmp_path, script, args):
    """Hours of measurement are a user's saved work: an existing ``--json`` file is refused before any work, a
    path that cannot be written too (not after the run), and ``--overwrite`` replaces the file.
    """
    report = tmp_path / "report.json"
    report.write_text("mine")
    done = bench(script, *args, "--json", str(report), cwd=tmp_path, codes=(2,))
    assert f"--json {report} already exists; pass --overwrite" in done.stderr and report.read_text() == "mine"
    assert done.stdout == ""  # refused before anything was measured
    missing = tmp_path / "no-such-directory" / "report.json"
    done = bench(script, *args, "--json", str(missing), cwd=tmp_path, codes=(2,))
    assert f"the directory {str(missing.parent)!r} does not exist" in done.stderr and not missing.parent.exists()
    bench(script, *args, "--json", str(report), "--overwrite", cwd=tmp_path)
    assert json.loads(report.read_text())  # replaced by the measurement
    assert [p.name for p in tmp_path.iterdir() if p.name != "report.json"] == []  # no temporary file left behind


def test_bench_integrations_names_the_extra_a_skipped_route_needs(tmp_path):
    done = bench(
        "bench_integrations.py",
        "--only",
        "throughput",
        "--seconds",
        "0.2",
        "--rounds",
        "1",
        "--libraries",
        "sb3",
        cwd=tmp_path,
    )
    skipped = re.search(r"^sb3: skipped \(No module named '(\w+)'\); pip install '\.\[(\w+)\]'$", done.stdout, re.M)
    if skipped:  # PettingZoo's Leduc needs rlcard and pygame (the bench extra); SB3 its own
        assert skipped[2] == ("bench" if skipped[1] in ("rlcard", "pygame") else "sb3")
    else:
        assert re.search(r"^\| sb3 \| .+ \| [\d.]+× \(min [\d.]+\) \|$", done.stdout, re.M)


def test_bench_exploit_seeds_measures_every_budget_given(tmp_path):
    report = tmp_path / "budgets.json"
    out = bench(
        "bench_exploit_seeds.py",
        "mini",
        "--seeds",
        "1",
        "--decisions",
        "64",
        "128",
        "--games",
        "8",
        "--workers",
        "2",
        "--json",
        str(report),
        cwd=tmp_path,
    ).stdout
    data = json.loads(report.read_text())
    assert list(data["runs"]) == ["mini @ 64", "mini @ 128"] and all(len(runs) == 1 for runs in data["runs"].values())
    assert "| `mini @ 64` | own weights |" in out and "| `mini @ 128` |" in out
    done = bench("bench_exploit_seeds.py", "mini", "--decisions", "64", "64", cwd=tmp_path, codes=(2,))
    assert "--decisions [64, 64] repeats a budget" in done.stderr


TINY_MAIN_JOB = [
    "ppo.num_envs=32",
    "ppo.num_steps=8",
    "schedule.total_decisions=512",
    "evaluation.every=0",
    "evaluation.final_games=0",
    "warm_start.decisions=300",
    "warm_start.num_envs=16",
]


def test_bench_warm_start_trains_each_seed_and_judges_the_main_job_targets(tmp_path):
    sets = [a for s in TINY_MAIN_JOB for a in ("--set", s)]
    out = bench(
        "bench_warm_start.py", "--train-seeds", "1", "2", "--games", "40", "--mixed-games", "40", *sets, cwd=tmp_path
    ).stdout
    assert len(re.findall(r"^seed \d: trained in \d+ s; vs 3 heuristic", out, re.M)) == 2
    for what in ("against three heuristic", "in the mixed table", "against three random"):
        assert re.search(rf"worst over seeds {what}: [\d.]+% \(target below \d+%\): (met|NOT met)", out), what
    assert json.loads(out.strip().splitlines()[-1])["rows"][1]["seed"] == 2


def test_bench_warm_start_curve_compares_decisions_with_and_without_the_warm_start(tmp_path):
    sets = [a for s in TINY_MAIN_JOB for a in ("--set", s)]
    out = bench(
        "bench_warm_start.py",
        "--curve",
        str(ROOT / "configs" / "quick.yaml"),
        "--decisions",
        "1024",
        "--every",
        "2",
        "--games",
        "40",
        "--threshold",
        "0.9",
        *sets,
        cwd=tmp_path,
    ).stdout
    assert "seed 1, without warm start" in out and "seed 1, with warm start" in out
    assert re.search(r"with warm start: ([\d.]+M|not reached)", out)


def test_bench_mmd_measures_each_setting_by_exact_nashconv_and_writes_its_curves(tmp_path):
    sets = ["--set", "ppo.num_envs=16", "--set", "ppo.num_steps=8", "--set", "model.hidden_sizes=[8]"]
    out = bench(
        "bench_mmd.py", "--settings", "ppo", "mmd-reward", "mmd-staged", "--presets", "mini", "--decisions", "512",
        "--every", "2", "--history", "9", "--event-embedding", "4", *sets, "--json", "mmd.json", "--plot", "mmd.png",
        cwd=tmp_path,
    ).stdout  # fmt: skip
    rows = re.findall(
        r"^  mini\s+(ppo|mmd-reward|mmd-staged)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\d+\s+(-|[\d.]+)  0.01 "
        r"\((met|not met)\)$",
        out,
        re.M,
    )
    assert [r[0] for r in rows] == ["ppo", "mmd-reward", "mmd-staged"]
    assert all(float(r[2]) <= float(r[1]) for r in rows)
    assert [r[4] == "-" for r in rows] == [True, True, False]  # the policy average of mmd-staged's kept agents
    runs = json.loads((tmp_path / "mmd.json").read_text())["runs"]
    assert [len(r["points"]) for r in runs] == [3, 3, 3] and (tmp_path / "mmd.png").stat().st_size > 0
    assert 0 < runs[2]["average"] < 10
    assert "game.history=9" in runs[0]["sets"] and "ppo.magnet_reward=true" in runs[1]["sets"]
    assert bench("bench_mmd.py", "--json", "mmd.json", cwd=tmp_path, codes=(2,)).stderr.count("--overwrite") == 1
    replot = bench("bench_mmd.py", "--replot", "mmd.json", "--plot", "again.png", cwd=tmp_path).stdout
    assert re.findall(r"^  mini\s+(ppo|mmd-reward|mmd-staged)\s", replot, re.M) == ["ppo", "mmd-reward", "mmd-staged"]
    assert (tmp_path / "again.png").stat().st_size > 0
    assert (
        "--replot reads files written by --json"
        in bench("bench_mmd.py", "--replot", "again.png", cwd=tmp_path, codes=(2,)).stderr
    )


def test_bench_training_history_compares_the_history_aware_network_with_the_mlp(tmp_path):
    sets = ["--set", "ppo.num_envs=32", "--set", "ppo.num_steps=8", "--set", "model.hidden_sizes=[16]"]
    out = bench(
        "bench_training.py", "--history", "8", "--event-embedding", "4", "--rounds", "1", "--updates", "3", *sets,
        cwd=tmp_path,
    ).stdout  # fmt: skip
    assert re.search(r"^  MLP\s+[\d,]+ decisions/s \(median\)$", out, re.M)
    assert re.search(r"^  history-aware \(history=8, event_embedding=4\)\s+[\d,]+ decisions/s", out, re.M)
    assert re.search(r"history-aware / MLP: [\d.]+ \(target at least 0.5\)", out)


def test_bench_training_windows_measures_each_history_window_side_by_side(tmp_path):
    sets = ["--set", "ppo.num_envs=32", "--set", "ppo.num_steps=8", "--set", "model.hidden_sizes=[16]"]
    out = bench(
        "bench_training.py", "--windows", "0", "4", "--event-embedding", "0", "--rounds", "1", "--updates", "3", *sets,
        cwd=tmp_path,
    ).stdout  # fmt: skip
    assert re.findall(r"^round 1: history=(\d+): [\d,]+ decisions/s, [\d,]+ per CPU-second$", out, re.M) == ["0", "4"]
    assert re.search(r"windows read by the MLP; cpu cores: \d+, load average before: [\d.]+", out)
    assert re.search(r"^  history=0\s+[\d,]+ decisions/s \(median\)$", out, re.M)
    assert re.search(r"^  history=4\s+[\d,]+ decisions/s \(median\)  [\d.]+ of history=0$", out, re.M)
    assert re.search(r"^  history=4\s+[\d,]+ decisions per CPU-second \(median\)  [\d.]+ of history=0$", out, re.M)


def test_bench_code_layout_measures_sizes_lengths_and_the_configs_path(tmp_path):
    done = bench("bench_code_layout.py", "--max-module", "500", "--json", str(tmp_path / "layout.json"), cwd=tmp_path)
    record = json.loads((tmp_path / "layout.json").read_text())
    assert all(lines > 500 for _, lines in record["modules_over_limit"])
    assert all(lines > 80 for _, _, lines in record["functions_over_limit"])
    # PPO's loop receives the config first, and every stay is one of the project's files
    assert record["config_stays"][0] == "training/algorithms/ppo.py" and record["config_calls"] > 0
    assert all((ROOT / path).is_file() for path in record["config_stays"])
    assert f"{len(record['config_stays'])} stays, {record['config_returns']} returns" in done.stdout
    refused = bench("bench_code_layout.py", "--max-function", "0", cwd=tmp_path, codes=(2,))
    assert "--max-function=0" in refused.stderr


def test_bench_mmd_step_compares_each_update_with_the_exact_step_and_finds_where_it_loses(tmp_path):
    sets = [
        "game.preset=mini", "game.history=9", "model.event_embedding=4", "model.hidden_sizes=[8]", "ppo.num_envs=16",
        "ppo.num_steps=8", "opponents.self_play=1.0", "opponents.snapshots=0", "opponents.baselines={}",
        "warm_start.teacher=null", "evaluation.every=0", "evaluation.final_games=0", "schedule.total_decisions=384",
        "schedule.keep_agent_every=1", f"output_dir={tmp_path}", "name=step",
    ]  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "training.cli.train", *[a for s in sets for a in ("--set", s)], "--no-progress"],
        cwd=ROOT, check=True, capture_output=True, timeout=900,
    )  # fmt: skip
    out = bench("bench_mmd_step.py", str(tmp_path / "step"), "--history", "9", "--span", "1", "2", cwd=tmp_path).stdout
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+([\d.]+)\s+nan", out, re.M)
    assert [(r[0], r[1]) for r in rows] == [("1", "1"), ("1", "2"), ("2", "1")]
    assert all(float(r[3]) > 0 and -1 <= float(r[4]) <= 1 for r in rows)  # the exact step moves; a cosine
    out = bench("bench_mmd_step.py", str(tmp_path / "step"), "--history", "9", "--substitute", "3", "--top", "10",
                cwd=tmp_path).stdout  # fmt: skip
    assert re.search(r"exact MMD \(2 iterations\) [\d.]+\n  top +10 keys \(\d+% of the reach\): exact with", out)
    (tmp_path / "empty").mkdir()
    refused = bench("bench_mmd_step.py", str(tmp_path / "empty"), cwd=tmp_path, codes=(2,)).stderr
    assert "holds no kept agent" in refused


def test_the_exact_step_compared_with_itself_is_one_step_along_it():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_mmd_step

    from cockroach_env import GameConfig
    from training.algorithms.mmd_solver import MMDSolver
    from training.evaluation.exact import game_tree

    solver = MMDSolver(game_tree(GameConfig.from_options(preset="mini", history=9)), keys="observation")
    step = bench_mmd_step.exact_steps(solver, solver.uniform, solver.uniform, 1)
    for weights in bench_mmd_step.WEIGHTS:
        row = bench_mmd_step.step_statistics(solver, solver.uniform, step, step, weights)
        assert row["cosine"] == pytest.approx(1.0) and row["along"] == pytest.approx(1.0)
        assert row["sampled_kl"] == row["exact_kl"] > 0
    assert bench_mmd_step.key_weights(solver, solver.uniform, "counterfactual").sum() == pytest.approx(1.0)


def test_bench_pool_times_the_stacked_and_the_one_by_one_pass_with_a_full_pool(tmp_path):
    tiny = ["ppo.num_envs=32", "ppo.num_steps=8", "model.hidden_sizes=[16]", "opponents.max_snapshots=3"]
    sets = [word for item in tiny for word in ("--set", item)]
    out = bench("bench_pool.py", "--updates", "5", "--last", "2", "--rounds", "1", *sets, cwd=tmp_path).stdout
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines() if line.startswith("| ")}
    assert int(rows["stacked"][2]) == int(rows["one by one"][2]) == 3 and int(rows["pool of one"][2]) == 1
    assert all(number(rows[kind][3]) > 0 for kind in ("stacked", "one by one", "pool of one"))
    assert "one by one / stacked:" in out
    refused = bench("bench_pool.py", "--updates", "3", "--last", "3", cwd=tmp_path, codes=(2,))
    assert "--last=3 is not allowed; expected fewer than --updates=3" in refused.stderr
