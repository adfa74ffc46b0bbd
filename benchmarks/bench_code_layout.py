"""How the code reads to a newcomer: module sizes, function lengths, and where a run's config travels.

Three figures, each measured on this tree in one run:

* **module sizes**: the project's Python modules over ``--max-module`` lines (800), tests left out;
* **function lengths**: the functions and methods over ``--max-function`` lines (80) and over 60, benchmarks
  included (``end_lineno - lineno + 1`` from the ``ast``);
* **following the config**: one update of PPO on a tiny budget, with a warm start, an evaluation and the final
  evaluation, is traced (``sys.setprofile``); every call of a
  project function that receives the run's ``TrainConfig`` itself as an argument (by identity, not a copy) is a
  step. Consecutive steps in one file are one *stay*; a stay in a file that an earlier stay already left is a
  *return*. Few stays and few returns mean a reader follows the config through few files, without coming back.
  Three counts are printed: the *reader's path* (each function at its first call only, as a reader who has read a
  function does not read it again when a later save calls it once more), every call in order, and every call but
  those of the config's own methods (``config.game_config()``).

    python benchmarks/bench_code_layout.py [--max-module 800] [--max-function 80] [--json layout.json]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PACKAGES = ("cockroach_env", "baselines", "training", "play", "benchmarks")


def project_modules() -> list[Path]:
    """Every Python file of the project's packages and benchmarks (tests and virtual environments left out)."""
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def module_sizes(limit: int) -> list[tuple[str, int]]:
    """``(path, lines)`` of each module over ``limit`` lines, largest first."""
    sizes = [(str(p.relative_to(ROOT)), len(p.read_text().splitlines())) for p in project_modules()]
    return sorted((s for s in sizes if s[1] > limit), key=lambda s: -s[1])


def function_lengths(limit: int) -> list[tuple[str, str, int]]:
    """``(path, qualified name, lines)`` of each function or method over ``limit`` lines, longest first."""
    found = []
    for path in project_modules():
        tree = ast.parse(path.read_text())
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        lines = child.end_lineno - child.lineno + 1
                        if lines > limit:
                            found.append((str(path.relative_to(ROOT)), name, lines))
                    stack.append((child, f"{name}."))
                else:
                    stack.append((child, prefix))
    return sorted(found, key=lambda f: -f[2])


def config_path() -> list[tuple[str, str, bool]]:
    """``(file, function, own)`` of each call that receives the run's ``TrainConfig`` object, in call order, over one
    PPO update of a tiny run; ``own``: a method of the config itself (the config is ``self``).
    """
    from training.algorithms import ppo
    from training.core.config import load_config

    config = load_config(
        None,
        [
            "ppo.num_envs=8",
            "ppo.num_steps=4",
            "ppo.num_minibatches=1",
            "ppo.update_epochs=1",
            "schedule.total_decisions=32",
            "evaluation.every=1",
            "evaluation.games=8",
            "evaluation.final_games=8",
            "warm_start.teacher=heuristic",
            "warm_start.decisions=64",
            "warm_start.num_envs=8",
            "warm_start.batch_size=32",
            "torch_threads=1",
        ],
    )
    steps: list[tuple[str, str, bool]] = []
    root = str(ROOT)

    def profile(frame, event, _arg):
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(root) or "/tests/" in code.co_filename:
            return
        arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        receiving = [a for a in arguments if frame.f_locals.get(a) is config]
        if receiving:
            steps.append((str(Path(code.co_filename).relative_to(ROOT)), code.co_qualname, receiving == ["self"]))

    with tempfile.TemporaryDirectory() as scratch:
        config = dataclasses.replace(config, output_dir=scratch, name="layout")
        sys.setprofile(profile)
        try:
            ppo.train(config, progress_bar=False)
        finally:
            sys.setprofile(None)
    return steps


def stays_and_returns(steps: list[tuple[str, str, bool]]) -> tuple[list[str], int]:
    """The files of consecutive runs of steps (stays), and how many stays come back to a file left before."""
    stays: list[str] = []
    for file, _, _ in steps:
        if not stays or stays[-1] != file:
            stays.append(file)
    returns = sum(1 for i, file in enumerate(stays) if file in stays[:i])
    return stays, returns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-module", type=int, default=800, help="module size limit in lines (default 800)")
    parser.add_argument("--max-function", type=int, default=80, help="function length limit in lines (default 80)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.max_module < 1 or args.max_function < 1:
        parser.error(f"--max-module={args.max_module}, --max-function={args.max_function}: expected positive limits")
    modules = module_sizes(args.max_module)
    functions = function_lengths(args.max_function)
    over_60 = function_lengths(60)
    steps = config_path()
    stays, returns = stays_and_returns(steps)
    passed = [step for step in steps if not step[2]]
    passed_stays, passed_returns = stays_and_returns(passed)
    reader = [step for i, step in enumerate(steps) if step[:2] not in {s[:2] for s in steps[:i]}]
    reader_stays, reader_returns = stays_and_returns(reader)
    print(f"modules over {args.max_module} lines: {len(modules)}")
    for path, lines in modules:
        print(f"  {path}: {lines}")
    print(f"functions over {args.max_function} lines: {len(functions)} (over 60: {len(over_60)})")
    for path, name, lines in functions:
        print(f"  {path} {name}: {lines}")
    files = sorted(set(stays))
    print(
        f"the config of one PPO update, the reader's path: {len(reader)} functions receive it, in {len(files)} files; "
        f"{len(reader_stays)} stays, {reader_returns} returns to a file already left"
    )
    print("  " + " -> ".join(Path(f).stem for f in reader_stays))
    print(f"  every call in order: {len(steps)} calls, {len(stays)} stays, {returns} returns")
    print("  " + " -> ".join(Path(f).stem for f in stays))
    print(
        f"  without the config's own methods: {len(passed)} calls, {len(passed_stays)} stays, {passed_returns} returns"
    )
    print("  " + " -> ".join(Path(f).stem for f in passed_stays))
    if args.json is not None:
        record = {
            "modules_over_limit": modules,
            "functions_over_limit": functions,
            "functions_over_60": len(over_60),
            "config_calls": len(steps),
            "config_files": files,
            "config_stays": stays,
            "config_returns": returns,
            "reader_stays": reader_stays,
            "reader_returns": reader_returns,
            "config_stays_without_own_methods": passed_stays,
            "config_returns_without_own_methods": passed_returns,
        }
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
